"""plugrad.nn.utils.prune against torch.nn.utils.prune: masks (for rankings without ties),
iterative and global pruning, removal, state dicts, masked gradients, training, errors."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest

import plugrad
from plugrad.errors import (
    ArgumentError,
    AxisError,
    InvalidArgumentError,
    MissingAttributeError,
    PlugradError,
    ShapeError,
)
from plugrad.nn.utils import prune

torch = pytest.importorskip("torch")
tprune = pytest.importorskip("torch.nn.utils.prune")


def _distinct(shape, seed):
    """Values of distinct magnitudes (and distinct row and column norms), random signs."""
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    magnitudes = (rng.permutation(size) + 1.0) / size + rng.uniform(0, 0.3 / size, size)
    signs = rng.choice([-1.0, 1.0], size)
    return (magnitudes * signs).reshape(shape).astype(np.float32)


def _pair(kind="linear", seed=0):
    """The same layer in plugrad and in torch, with weights of distinct magnitudes."""
    layers = []
    for lib in (plugrad, torch):
        if kind == "linear":
            layer = lib.nn.Linear(5, 4)
        else:
            layer = lib.nn.Conv2d(3, 4, 2)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(_distinct(tuple(layer.weight.shape), seed)))
            layer.bias.copy_(lib.tensor(_distinct(tuple(layer.bias.shape), seed + 1)))
        layers.append(layer)
    return layers


def _np(tensor):
    return np.asarray(tensor.detach().numpy())


def _assert_same_pruning(ours, theirs, name="weight"):
    np.testing.assert_array_equal(
        _np(getattr(ours, name + "_mask")), _np(getattr(theirs, name + "_mask"))
    )
    np.testing.assert_array_equal(_np(getattr(ours, name)), _np(getattr(theirs, name)))
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())


@pytest.mark.parametrize("amount", [0, 3, 20, 0.3, 0.5, 0.25, 1.0, 0.0])
def test_l1_unstructured_prunes_as_pytorch(amount):
    ours, theirs = _pair()
    assert prune.l1_unstructured(ours, "weight", amount=amount) is ours
    tprune.l1_unstructured(theirs, "weight", amount=amount)
    _assert_same_pruning(ours, theirs)
    assert list(ours.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert isinstance(ours.weight_orig, plugrad.nn.Parameter)
    assert "weight" not in ours._parameters and "weight_mask" in ours._buffers


@pytest.mark.parametrize("n", [1, 2, 3, math.inf, -math.inf, "fro"])
@pytest.mark.parametrize(("kind", "dim", "amount"), [
    ("linear", 0, 1), ("linear", 1, 0.4), ("linear", -1, 2), ("conv", 0, 0.5), ("conv", 1, 2),
    ("conv", 3, 1), ("conv", -2, 0.5),
])  # fmt: skip
def test_ln_structured_prunes_as_pytorch(n, kind, dim, amount):
    if n == "fro" and kind == "conv":
        pytest.skip("PyTorch's 'fro' takes 2 dimensions at most (plugrad's: any, as n=2)")
    ours, theirs = _pair(kind)
    prune.ln_structured(ours, "weight", amount=amount, n=n, dim=dim)
    tprune.ln_structured(theirs, "weight", amount=amount, n=n, dim=dim)
    _assert_same_pruning(ours, theirs)


def test_custom_from_mask_and_identity_prune_as_pytorch():
    mask = (np.arange(20).reshape(4, 5) % 3 != 0).astype(np.float32)
    ours, theirs = _pair()
    prune.custom_from_mask(ours, "weight", plugrad.tensor(mask))
    tprune.custom_from_mask(theirs, "weight", torch.tensor(mask))
    _assert_same_pruning(ours, theirs)
    prune.identity(ours, "bias")
    tprune.identity(theirs, "bias")
    _assert_same_pruning(ours, theirs, "bias")
    assert list(ours.state_dict()) == ["weight_orig", "bias_orig", "weight_mask", "bias_mask"]


def test_importance_scores_rank_the_entries_as_pytorch():
    scores = _distinct((4, 5), 7)
    ours, theirs = _pair()
    prune.l1_unstructured(ours, "weight", 6, importance_scores=plugrad.tensor(scores))
    tprune.l1_unstructured(theirs, "weight", 6, importance_scores=torch.tensor(scores))
    _assert_same_pruning(ours, theirs)
    ours, theirs = _pair()
    prune.ln_structured(ours, "weight", 2, 1, 0, importance_scores=plugrad.tensor(scores))
    tprune.ln_structured(theirs, "weight", 2, 1, 0, importance_scores=torch.tensor(scores))
    _assert_same_pruning(ours, theirs)


def test_global_unstructured_prunes_as_pytorch():
    pairs = [_pair(seed=0), _pair("conv", seed=3)]
    scores = _distinct((4,), 11)
    for lib, module in ((plugrad, prune), (torch, tprune)):
        layers = [pair[lib is torch] for pair in pairs]
        module.l1_unstructured(layers[1], "weight", amount=5)  # pruned before: composes
        module.global_unstructured(
            [(layers[0], "weight"), (layers[0], "bias"), (layers[1], "weight")],
            pruning_method=module.L1Unstructured,
            importance_scores={(layers[0], "bias"): lib.tensor(scores)},
            amount=0.4,
        )
    for ours, theirs in pairs:
        _assert_same_pruning(ours, theirs)
        if "bias_mask" in theirs._buffers:
            _assert_same_pruning(ours, theirs, "bias")
    ours, theirs = pairs[1]
    container = next(iter(ours._module_hooks.forward_pre)).hook
    assert isinstance(container, prune.PruningContainer) and len(container) == 2
    prune.remove(ours, "weight")
    tprune.remove(theirs, "weight")
    np.testing.assert_array_equal(_np(ours.weight), _np(theirs.weight))
    assert list(ours.state_dict()) == list(theirs.state_dict()) and not prune.is_pruned(ours)


def test_iterative_pruning_prunes_what_is_left_as_pytorch():
    mask = (np.arange(48).reshape(4, 3, 2, 2) % 5 != 1).astype(np.float32)
    ours, theirs = _pair("conv", seed=5)
    steps = [
        ("l1_unstructured", dict(amount=0.3)),
        ("ln_structured", dict(amount=1, n=2, dim=0)),
        ("l1_unstructured", dict(amount=4)),
        ("ln_structured", dict(amount=0.5, n=1, dim=1)),
        ("custom_from_mask", dict(mask=mask)),
        ("l1_unstructured", dict(amount=0.5)),
    ]
    for step, (function, kwargs) in enumerate(steps):
        for layer, lib, module in ((ours, plugrad, prune), (theirs, torch, tprune)):
            args = {k: lib.tensor(v) if k == "mask" else v for k, v in kwargs.items()}
            hook = getattr(module, function)(layer, "weight", **args)
        _assert_same_pruning(ours, theirs)
        (entry,) = ours._module_hooks.forward_pre
        hook = entry.hook
        assert (type(hook).__name__, len(hook) if step else 1) == (
            "PruningContainer" if step else "L1Unstructured",
            step + 1,
        )
    assert int((ours.weight_mask == 0).sum()) == int((theirs.weight_mask == 0).sum()) > 0


def test_remove_makes_the_pruning_permanent_as_pytorch():
    ours, theirs = _pair()
    x = _distinct((3, 5), 9)
    for layer, module in ((ours, prune), (theirs, tprune)):
        module.l1_unstructured(layer, "weight", amount=0.5)
        module.random_unstructured(layer, "bias", amount=1)
    orig = ours.weight_orig
    assert prune.remove(ours, "weight") is ours
    tprune.remove(theirs, "weight")
    assert ours.weight is orig  # the same Parameter: optimizers holding it go on
    np.testing.assert_array_equal(_np(ours.weight), _np(theirs.weight))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert not hasattr(ours, "weight_orig") and not hasattr(ours, "weight_mask")
    assert prune.is_pruned(ours) and len(ours._module_hooks.forward_pre) == 1
    prune.remove(ours, "bias")
    assert not prune.is_pruned(ours) and not ours._module_hooks.forward_pre
    np.testing.assert_array_equal(
        _np(ours(plugrad.tensor(x))),
        _np(plugrad.tensor(x) @ ours.weight.mT + ours.bias),
    )


def test_is_pruned_looks_at_submodules():
    model = plugrad.nn.Sequential(
        plugrad.nn.Linear(2, 3), plugrad.nn.Sequential(plugrad.nn.Linear(3, 1))
    )
    assert not prune.is_pruned(model)
    prune.identity(model[1][0], "weight")
    assert prune.is_pruned(model) and prune.is_pruned(model[1]) and not prune.is_pruned(model[0])


def test_gradients_reach_orig_masked_and_a_sgd_step_trains_as_pytorch():
    ours, theirs = _pair("conv", seed=2)
    x = _distinct((2, 3, 4, 4), 4)
    results = []
    for layer, lib, module in ((ours, plugrad, prune), (theirs, torch, tprune)):
        module.l1_unstructured(layer, "weight", amount=0.4)
        module.ln_structured(layer, "weight", amount=1, n=2, dim=0)
        optimizer = lib.optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
        outputs = []
        for _ in range(3):
            optimizer.zero_grad()
            (layer(lib.tensor(x)) ** 2).sum().backward()
            outputs.append(_np(layer.weight_orig.grad).copy())
            optimizer.step()
        outputs.append(_np(layer(lib.tensor(x))))
        results.append((outputs, _np(layer.weight_orig), _np(layer.weight)))
    (ours_out, ours_orig, ours_w), (their_out, their_orig, their_w) = results
    for a, b in zip(ours_out, their_out, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_orig, their_orig, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_w, their_w, rtol=1e-4, atol=1e-5)
    pruned = _np(ours.weight_mask) == 0
    assert pruned.any() and (ours_out[0][pruned] == 0).all() and (ours_w[pruned] == 0).all()


def test_state_dict_of_a_pruned_layer_loads_as_pytorch():
    ours, theirs = _pair()
    prune.l1_unstructured(ours, "weight", amount=7)
    tprune.l1_unstructured(theirs, "weight", amount=7)
    fresh, their_fresh = plugrad.nn.Linear(5, 4), torch.nn.Linear(5, 4)
    prune.identity(fresh, "weight")
    tprune.identity(their_fresh, "weight")
    fresh.load_state_dict(ours.state_dict())
    their_fresh.load_state_dict(theirs.state_dict())
    x = _distinct((2, 5), 1)
    np.testing.assert_allclose(
        _np(fresh(plugrad.tensor(x))), _np(their_fresh(torch.tensor(x))), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_array_equal(_np(fresh.weight_mask), _np(their_fresh.weight_mask))


def test_random_methods_draw_from_plugrads_generator():
    def masks():
        plugrad.manual_seed(3)
        layer = prune.random_unstructured(plugrad.nn.Linear(5, 4), "weight", amount=0.35)
        prune.random_structured(layer, "weight", amount=1, dim=1)
        return _np(layer.weight_mask)

    first, second = masks(), masks()
    np.testing.assert_array_equal(first, second)
    assert (first[:, first.sum(axis=0) == 0] == 0).all()
    assert (first.sum(axis=0) == 0).sum() == 1  # one whole column
    assert (first == 0).sum() >= 7  # 7 entries, then a column among the rest
    conv = prune.random_structured(plugrad.nn.Conv2d(2, 6, 3), "weight", amount=0.5, dim=0)
    per_channel = _np(conv.weight_mask).reshape(6, -1)
    assert sorted(per_channel.min(axis=1) == per_channel.max(axis=1)) == [True] * 6
    assert int(per_channel[:, 0].sum()) == 3


def test_a_pruning_method_of_ones_own_and_prune_on_a_tensor():
    class Negatives(prune.BasePruningMethod):
        PRUNING_TYPE = "unstructured"

        def compute_mask(self, t, default_mask):
            return default_mask * (t >= 0)

    ours, _ = _pair()
    hook = Negatives.apply(ours, "weight")
    assert isinstance(hook, Negatives) and hook._tensor_name == "weight"
    w = _distinct((4, 5), 0)
    np.testing.assert_array_equal(_np(ours.weight), np.where(w >= 0, w, 0))
    t = plugrad.tensor(_distinct((3, 4), 5))
    np.testing.assert_array_equal(
        _np(prune.L1Unstructured(amount=5).prune(t)),
        _np(tprune.L1Unstructured(amount=5).prune(torch.tensor(t.numpy()))),
    )
    np.testing.assert_array_equal(
        _np(prune.LnStructured(1, n=2, dim=0).prune(t)),
        _np(tprune.LnStructured(1, n=2, dim=0).prune(torch.tensor(t.numpy()))),
    )
    container = prune.PruningContainer(hook)
    assert len(container) == 1 and container[0] is hook and list(container) == [hook]
    other = prune.Identity()
    other._tensor_name = "bias"
    with pytest.raises(InvalidArgumentError, match="prunes 'weight'"):
        container.add_pruning_method(other)
    with pytest.raises(ArgumentError, match="no pruning method"):
        container.add_pruning_method("l1")


def _bad_calls():
    return [
        (
            lambda m: prune.l1_unstructured(m, "weight", 1.5),
            InvalidArgumentError,
            ValueError,
            "fraction outside",
        ),
        (
            lambda m: prune.l1_unstructured(m, "weight", -1),
            InvalidArgumentError,
            ValueError,
            "negative",
        ),
        (
            lambda m: prune.l1_unstructured(m, "weight", "x"),
            ArgumentError,
            TypeError,
            "must be an int",
        ),
        (
            lambda m: prune.random_unstructured(m, "weight", 21),
            InvalidArgumentError,
            ValueError,
            "more than the 20",
        ),
        (
            lambda m: prune.l1_unstructured(m, "weights", 1),
            MissingAttributeError,
            AttributeError,
            "no parameter 'weights'",
        ),
        (lambda m: prune.ln_structured(m, "bias", 1, 2, 0), ShapeError, ValueError, "2 or more"),
        (lambda m: prune.ln_structured(m, "weight", 1, 2, 2), AxisError, IndexError, "dim=2"),
        (lambda m: prune.ln_structured(m, "weight", 1, 2, -3), AxisError, IndexError, "dim=-3"),
        (
            lambda m: prune.random_structured(m, "weight", 5, 0),
            InvalidArgumentError,
            ValueError,
            "more than the 4",
        ),
        (lambda m: prune.remove(m, "weight"), InvalidArgumentError, ValueError, "not pruned"),
        (
            lambda m: prune.custom_from_mask(m, "weight", plugrad.ones(5)),
            ShapeError,
            None,
            "mask has shape",
        ),
        (
            lambda m: prune.l1_unstructured(m, "weight", 1, importance_scores=plugrad.ones(5)),
            ShapeError,
            None,
            "importance_scores has shape",
        ),
        (
            lambda m: prune.global_unstructured([(m, "weight")], prune.LnStructured, amount=1, n=2),
            ArgumentError,
            TypeError,
            "unstructured ones",
        ),
        (
            lambda m: prune.global_unstructured(3, prune.L1Unstructured, amount=1),
            ArgumentError,
            TypeError,
            "iterable",
        ),
        (
            lambda m: prune.global_unstructured(
                [(m, "weight")], prune.L1Unstructured, importance_scores=[], amount=1
            ),
            ArgumentError,
            TypeError,
            "dict",
        ),
        (
            lambda m: prune.global_unstructured(
                [(m, "weight"), (plugrad.nn.Linear(5, 4), "weight")],
                prune.L1Unstructured,
                amount=41,
            ),
            InvalidArgumentError,
            ValueError,
            "more than the 40",
        ),
    ]


@pytest.mark.parametrize("index", range(len(_bad_calls())))
def test_bad_calls_raise_typed_errors_and_change_nothing(index):
    call, error, builtin, message = _bad_calls()[index]
    layer = plugrad.nn.Linear(5, 4)
    if index == 3:  # the pruning composes with an earlier one and fails there
        prune.identity(layer, "weight")
    before = {k: _np(v).copy() for k, v in layer.state_dict().items()}
    hooks_before = [] if layer._module_hooks is None else list(layer._module_hooks.forward_pre)
    with pytest.raises(error, match=message) as caught:
        call(layer)
    assert isinstance(caught.value, PlugradError)
    if builtin is not None:
        assert isinstance(caught.value, builtin)
    assert list(layer.state_dict()) == list(before)
    for key, value in layer.state_dict().items():
        np.testing.assert_array_equal(_np(value), before[key])
    hooks_after = [] if layer._module_hooks is None else list(layer._module_hooks.forward_pre)
    assert hooks_after == hooks_before


def test_a_buffer_is_refused_as_pytorch_refuses_it():
    bn = plugrad.nn.BatchNorm1d(3)
    with pytest.raises(ArgumentError, match="no parameter"):
        prune.l1_unstructured(bn, "running_mean", 1)
    with pytest.raises(TypeError):
        tprune.l1_unstructured(torch.nn.BatchNorm1d(3), "running_mean", 1)
    assert "running_mean" in bn._buffers and not prune.is_pruned(bn)


def test_the_names_are_pytorchs():
    for name in tprune.__dict__:
        if not name.startswith("_") and name not in (
            "ABC",
            "Iterable",
            "abstractmethod",
            "numbers",
            "torch",
        ):
            assert hasattr(prune, name), name
    import plugrad.nn.utils.prune as path

    assert path is plugrad.nn.utils.prune is prune


def test_a_pruned_layer_pickles_and_copies_and_stays_pruned():
    layer = prune.l1_unstructured(plugrad.nn.Linear(5, 4), "weight", amount=0.5)
    x = plugrad.tensor(_distinct((2, 5), 3))
    expected = _np(layer(x))
    for twin in (pickle.loads(pickle.dumps(layer)), copy.deepcopy(layer)):
        assert prune.is_pruned(twin) and list(twin.state_dict()) == list(layer.state_dict())
        np.testing.assert_array_equal(_np(twin(x)), expected)
        with plugrad.no_grad():
            twin.weight_orig.fill_(1.0)
        twin(x)  # the hook of the copy recomputes the copy's weight
        np.testing.assert_array_equal(_np(twin.weight), _np(twin.weight_mask))
    np.testing.assert_array_equal(_np(layer(x)), expected)
