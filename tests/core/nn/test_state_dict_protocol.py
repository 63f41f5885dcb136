"""The state dict protocol of modules, as PyTorch's: extra state, ``_load_from_state_dict``
overrides that read older checkpoints, the four state dict hooks, ``assign=True``,
prefixes and metadata -- and loads that fail leave the module unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad import nn
from plugrad.errors import StateDictError

torch = pytest.importorskip("torch")


def _counter_class(lib):
    class Counter(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = lib.nn.Linear(2, 2)
            self.seen = 1

        def get_extra_state(self):
            return {"seen": self.seen}

        def set_extra_state(self, state):
            self.seen = state["seen"]

    return Counter


@pytest.mark.parametrize("lib", [plugrad, torch], ids=["plugrad", "torch"])
def test_extra_state_is_saved_and_restored(lib):
    # It was left out of state_dict() and never restored: the loaded module kept seen=1.
    counter = _counter_class(lib)
    source = counter()
    source.seen = 5
    saved = source.state_dict()
    assert list(saved) == ["_extra_state", "linear.weight", "linear.bias"]
    target = counter()
    target.load_state_dict(saved)
    assert target.seen == 5
    with pytest.raises((StateDictError, RuntimeError), match="_extra_state"):
        counter().load_state_dict({k: v for k, v in saved.items() if k != "_extra_state"})
    wrapper = lib.nn.Sequential(counter())
    wrapper.load_state_dict({f"0.{k}": v for k, v in saved.items()})
    assert wrapper[0].seen == 5


def test_a_failed_load_leaves_the_extra_state_and_the_tensors_unchanged():
    counter = _counter_class(plugrad)
    source, target = counter(), counter()
    source.seen = 5
    saved = dict(source.state_dict(), **{"linear.bias": plugrad.zeros(3)})
    weight = target.linear.weight.detach().clone()
    with pytest.raises(StateDictError, match=r"'linear\.bias': shape"):
        target.load_state_dict(saved)
    assert target.seen == 1
    np.testing.assert_array_equal(target.linear.weight.detach().numpy(), weight.numpy())


def _renaming_class(lib):
    class Renamed(lib.nn.Module):
        """Version 2 calls ``old`` what version 1 called ``layer``."""

        _version = 2

        def __init__(self):
            super().__init__()
            self.layer = lib.nn.Linear(2, 3)

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, *rest):
            if local_metadata.get("version", 1) < 2:
                for name in ("weight", "bias"):
                    old = f"{prefix}old.{name}"
                    if old in state_dict:
                        state_dict[f"{prefix}layer.{name}"] = state_dict.pop(old)
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, *rest)

    return Renamed


@pytest.mark.parametrize("lib", [plugrad, torch], ids=["plugrad", "torch"])
def test_load_from_state_dict_overrides_read_older_checkpoints(lib):
    # The override was never called: the old keys were reported missing and unexpected.
    weight = lib.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    old = {"old.weight": weight, "old.bias": lib.zeros(3)}
    model = _renaming_class(lib)()
    result = model.load_state_dict(old)
    assert list(result.missing_keys) == list(result.unexpected_keys) == []
    assert model.layer.weight.tolist() == weight.tolist()
    saved = model.state_dict()
    assert saved._metadata[""]["version"] == 2 and saved._metadata["layer"]["version"] == 1


def _drop(state_dict, key):
    del state_dict[key]


@pytest.mark.parametrize("lib", [plugrad, torch], ids=["plugrad", "torch"])
def test_state_dict_hooks_run_as_in_pytorch(lib):
    calls = []
    model = lib.nn.Sequential(lib.nn.Linear(2, 2))
    layer = model[0]
    handles = [
        layer.register_state_dict_pre_hook(lambda m, prefix, keep: calls.append(("pre", prefix))),
        layer.register_state_dict_post_hook(lambda m, sd, prefix, meta: _drop(sd, prefix + "bias")),
        layer.register_load_state_dict_pre_hook(
            lambda m, sd, prefix, *rest: calls.append(("load pre", prefix, sorted(sd)))
        ),
        model.register_load_state_dict_post_hook(
            lambda m, keys: keys.missing_keys.remove("0.bias")
        ),
    ]
    saved = model.state_dict()
    assert list(saved) == ["0.weight"] and calls == [("pre", "0.")]
    result = model.load_state_dict(saved)  # the post hook accepts the missing bias
    assert list(result.missing_keys) == [] and calls[-1] == ("load pre", "0.", ["0.weight"])
    for handle in handles:
        handle.remove()
    assert list(model.state_dict()) == ["0.weight", "0.bias"]


@pytest.mark.parametrize("lib", [plugrad, torch], ids=["plugrad", "torch"])
def test_assign_makes_the_state_dicts_tensors_the_modules(lib):
    layer = lib.nn.Linear(2, 2)
    layer.bias.requires_grad_(False)
    weights = {"weight": lib.ones(2, 2, dtype=lib.float64), "bias": lib.zeros(2)}
    layer.load_state_dict(weights, assign=True)
    assert layer.weight.dtype == lib.float64  # the state dict's dtype, not the module's
    assert isinstance(layer.weight, lib.nn.Parameter) and layer.weight.requires_grad
    assert not layer.bias.requires_grad
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]


@pytest.mark.parametrize("lib", [plugrad, torch], ids=["plugrad", "torch"])
def test_state_dict_prefix_and_destination(lib):
    layer = lib.nn.Linear(2, 2)
    destination = {"kept": 1}
    out = layer.state_dict(destination=destination, prefix="encoder.")
    assert out is destination and list(out) == ["kept", "encoder.weight", "encoder.bias"]


def test_a_module_without_set_extra_state_refuses_extra_state_in_a_strict_load():
    layer = nn.Linear(2, 2)
    saved = dict(layer.state_dict(), _extra_state={"x": 1})
    with pytest.raises(StateDictError, match="unexpected key '_extra_state'"):
        layer.load_state_dict(saved)
    assert layer.load_state_dict(saved, strict=False).unexpected_keys == ["_extra_state"]


@pytest.mark.parametrize("lib", [plugrad, torch], ids=["plugrad", "torch"])
def test_batch_norm_misses_its_count_only_in_a_checkpoint_of_its_own_version(lib):
    # It was never missing: a version 2 state dict without it loaded strictly, unlike PyTorch.
    entries = lib.nn.BatchNorm1d(2).state_dict()
    del entries["num_batches_tracked"]
    assert entries._metadata[""]["version"] == 2
    result = lib.nn.BatchNorm1d(2).load_state_dict(entries, strict=False)
    assert result.missing_keys == ["num_batches_tracked"]
    with pytest.raises(StateDictError if lib is plugrad else RuntimeError):
        lib.nn.BatchNorm1d(2).load_state_dict(entries)
    entries._metadata[""]["version"] = 1  # saved before the count existed: it keeps its value
    lib.nn.BatchNorm1d(2).load_state_dict(entries)
    del entries._metadata  # no version said: the same
    lib.nn.BatchNorm1d(2).load_state_dict(entries)


def _deriving_class(lib):
    class Scaled(lib.nn.Module):
        """Derives state from what it loaded, after the base method, as PyTorch code does."""

        def __init__(self):
            super().__init__()
            self.weight = lib.nn.Parameter(lib.zeros(1, 2))
            self.layer = lib.nn.Linear(2, 1)

        def _load_from_state_dict(self, *args):
            super()._load_from_state_dict(*args)
            self.cached = self.weight.detach().clone()

    return Scaled


def _state(lib):
    return {
        "weight": lib.tensor([[7.0, 8.0]]),
        "layer.weight": lib.tensor([[1.0, 2.0]]),
        "layer.bias": lib.tensor([1.0]),
    }


@pytest.mark.parametrize("lib", [plugrad, torch], ids=["plugrad", "torch"])
def test_code_after_the_base_load_and_the_post_hooks_see_the_loaded_values(lib):
    # The values were copied only once the whole tree was read: an override caching its
    # weight cached the old one, and a post-hook's in-place change was overwritten.
    model = _deriving_class(lib)()
    seen = []

    def double(module, keys):
        seen.append(module.weight.tolist())
        module.weight.detach().mul_(2)

    model.layer.register_load_state_dict_post_hook(double)
    model.load_state_dict(_state(lib))
    assert model.cached.tolist() == [[7.0, 8.0]]
    assert seen == [[[1.0, 2.0]]] and model.layer.weight.tolist() == [[2.0, 4.0]]


@pytest.mark.parametrize("assign", [False, True])
@pytest.mark.parametrize("failure", ["missing key", "a hook raises"])
def test_a_failed_load_puts_back_every_value_it_copied(failure, assign):
    model = _deriving_class(plugrad)()
    parameters = {name: p for name, p in model.named_parameters()}
    values = {name: p.detach().clone() for name, p in parameters.items()}
    versions = {name: p._version for name, p in parameters.items()}
    # A graph made before the load: its saved parameters were bumped twice, and its
    # backward refused to run after a load that changed nothing.
    loss = sum((p * p).sum() for p in parameters.values())

    def double(module, keys):
        module.weight.detach().mul_(2)

    model.layer.register_load_state_dict_post_hook(double)
    state = _state(plugrad)
    if failure == "missing key":
        del state["layer.bias"]
        expected = StateDictError
    else:

        def refuse(module, keys):
            raise KeyError("not this checkpoint")

        model.register_load_state_dict_post_hook(refuse)
        expected = KeyError
    with pytest.raises(expected):
        model.load_state_dict(state, assign=assign)
    for name, p in model.named_parameters():
        assert p is parameters[name]
        np.testing.assert_array_equal(p.detach().numpy(), values[name].numpy())
        assert p._version == versions[name]
    loss.backward()
    for name, p in model.named_parameters():
        np.testing.assert_array_equal(p.grad.numpy(), 2 * values[name].numpy())


def test_a_failed_load_puts_back_every_value_when_set_extra_state_refuses():
    # set_extra_state raised, the undo of the extra state raised again (it was noted before
    # it was set), and the values copied before it were never put back.
    class Refusing(nn.Module):
        def get_extra_state(self):
            return 0

        def set_extra_state(self, state):
            raise ValueError("not this checkpoint's extra state")

    model = nn.Sequential(nn.Linear(2, 2), Refusing())
    weight = model[0].weight.detach().clone()
    state = dict(model.state_dict())
    state["0.weight"] = plugrad.full((2, 2), 7.0)
    with pytest.raises(ValueError, match="extra state"):
        model.load_state_dict(state)
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), weight.numpy())


def test_a_load_that_matches_every_key_says_so_as_pytorch():
    layer = nn.Linear(2, 2)
    assert repr(layer.load_state_dict(layer.state_dict())) == "<All keys matched successfully>"
    keys = nn.Linear(2, 2).load_state_dict({"weight": plugrad.zeros((2, 2))}, strict=False)
    assert repr(keys) == "IncompatibleKeys(missing_keys=['bias'], unexpected_keys=[])"


def test_a_submodules_load_pre_hook_sees_its_own_entries_as_its_parents_hook_left_them():
    # Each hook got the whole state dict (other modules' keys and unexpected ones too).
    def seen_by_hooks(lib):
        model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.Linear(2, 1)))
        seen = []

        def renaming(module, state_dict, prefix, *rest):
            seen.append(("root", sorted(state_dict)))
            state_dict["1.0.bias"] = state_dict.pop("1.0.old_bias")  # an older checkpoint

        def noting(module, state_dict, prefix, *rest):
            seen.append((prefix, sorted(state_dict)))

        model.register_load_state_dict_pre_hook(renaming)
        for child in (model[0], model[1], model[1][0]):
            child.register_load_state_dict_pre_hook(noting)
        entries = dict(model.state_dict())
        entries["1.0.old_bias"] = entries.pop("1.0.bias")
        result = model.load_state_dict({**entries, "other.x": lib.zeros(1)}, strict=False)
        return seen, sorted(result.missing_keys), sorted(result.unexpected_keys)

    ours, theirs = seen_by_hooks(plugrad), seen_by_hooks(torch)
    assert ours == theirs
    assert ours[1:] == ([], ["other.x"]) and ours[0][2] == ("1.", ["1.0.bias", "1.0.weight"])
