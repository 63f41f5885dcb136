"""Module mechanics: registration, traversal, modes, moving, saving and loading, printing."""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import nn
from plugrad.errors import StateDictError


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(plugrad.ones(3))
        self.inner = nn.Linear(3, 2)
        self.register_buffer("steps", plugrad.zeros(()))
        self.register_buffer("cache", plugrad.zeros(2), persistent=False)
        self.note = "not registered"

    def forward(self, x):
        return self.inner(x * self.scale)


def arrays(module: nn.Module) -> dict[str, np.ndarray]:
    return {name: value.numpy().copy() for name, value in module.state_dict().items()}


# -- Parameter ----------------------------------------------------------------------------


def test_parameter_is_a_leaf_tensor_that_requires_grad() -> None:
    data = plugrad.tensor([1.0, 2.0])
    p = nn.Parameter(data)
    assert isinstance(p, plugrad.Tensor) and isinstance(p, nn.Parameter)
    assert p.is_leaf and p.requires_grad and p.grad is None
    assert repr(p) == "Parameter containing:\n" + plugrad.Tensor.__repr__(p)
    assert repr(p).endswith("requires_grad=True)")
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    assert type(p * 2) is plugrad.Tensor
    assert type(p.detach()) is plugrad.Tensor
    assert nn.Parameter().shape == (0,)
    data.array[0] = 5.0  # shares memory, like torch.nn.Parameter
    assert p.tolist() == [5.0, 2.0]


def test_parameter_rejects_what_cannot_be_one() -> None:
    with pytest.raises(TypeError, match="takes a Tensor"):
        nn.Parameter([1.0, 2.0])
    with pytest.raises(plugrad.errors.DtypeError, match="floating-point"):
        nn.Parameter(plugrad.tensor([1, 2]))


# -- registration -------------------------------------------------------------------------


def test_attributes_register_parameters_submodules_and_buffers() -> None:
    block = Block()
    assert list(block._parameters) == ["scale"]
    assert list(block._modules) == ["inner"]
    assert list(block._buffers) == ["steps", "cache"]
    assert block.note == "not registered"
    assert [name for name, _ in block.named_parameters()] == [
        "scale",
        "inner.weight",
        "inner.bias",
    ]
    assert [name for name, _ in block.named_parameters(recurse=False)] == ["scale"]
    assert [name for name, _ in block.named_buffers()] == ["steps", "cache"]
    assert list(block.state_dict()) == ["scale", "steps", "inner.weight", "inner.bias"]
    assert "scale" in dir(block) and "inner" in dir(block)


def test_reassigning_and_deleting_keep_the_registries_consistent() -> None:
    block = Block()
    block.scale = nn.Parameter(plugrad.zeros(3))
    assert float(block.scale.sum()) == 0.0
    block.scale = None
    assert block.scale is None and list(block.parameters(recurse=False)) == []
    block.inner = nn.ReLU()  # a module replaces a module
    assert [name for name, _ in block.named_parameters()] == []
    block.steps = plugrad.ones(())
    assert float(block.state_dict()["steps"]) == 1.0
    del block.inner
    assert "inner" not in block._modules
    with pytest.raises(AttributeError, match="no attribute 'inner'"):
        block.inner  # noqa: B018
    block.inner = nn.Parameter(plugrad.ones(1))  # a name can change kind
    assert "inner" in block._parameters and "inner" not in block._modules


def test_assigning_the_wrong_kind_is_a_type_error() -> None:
    block = Block()
    with pytest.raises(TypeError, match=r"plugrad\.nn\.Parameter"):
        block.scale = plugrad.ones(3)
    with pytest.raises(TypeError, match="Module"):
        block.inner = "linear"
    with pytest.raises(TypeError, match="Tensor"):
        block.steps = 3
    with pytest.raises(TypeError, match="wrap it"):
        block.register_parameter("w", plugrad.ones(1))
    with pytest.raises(KeyError, match="already exists"):
        block.register_buffer("note", plugrad.ones(1))
    with pytest.raises(KeyError, match="cannot contain"):
        block.register_buffer("a.b", plugrad.ones(1))
    with pytest.raises(TypeError, match="not a Module"):
        block.add_module("child", plugrad.ones(1))


def test_assigning_before_init_says_to_call_super_init() -> None:
    class Forgetful(nn.Module):
        def __init__(self) -> None:
            self.w = nn.Parameter(plugrad.ones(1))

    with pytest.raises(AttributeError, match=r"super\(\).__init__\(\)"):
        Forgetful()


def test_shared_parameters_and_modules_are_listed_once() -> None:
    shared = nn.Linear(2, 2)
    net = nn.Sequential(shared, nn.ReLU(), shared)
    assert len(list(net.parameters())) == 2
    assert [name for name, _ in net.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(net.named_parameters(remove_duplicate=False))) == 4
    assert [name for name, _ in net.named_modules()] == ["", "0", "1"]
    assert [name for name, _ in net.named_children()] == ["0", "1"]
    assert len(list(net.modules())) == 3
    assert list(net.children()) == [shared, net[1]]
    assert [name for name, _ in net.named_parameters(prefix="model")] == [
        "model.0.weight",
        "model.0.bias",
    ]


def test_calling_a_module_calls_forward() -> None:
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(plugrad.ones(1))
    block = Block()
    assert block(plugrad.ones((4, 3))).shape == (4, 2)


def test_apply_visits_children_first() -> None:
    net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Tanh()))
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Linear", "ReLU", "Tanh", "Sequential", "Sequential"]


# -- modes and gradients ------------------------------------------------------------------


def test_train_and_eval_reach_every_module_and_switch_dropout() -> None:
    net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    assert net.training and net[1].training
    assert net.eval() is net
    assert not net.training and not net[1].training
    x = plugrad.ones((8, 4))
    np.testing.assert_array_equal(net(x).detach().numpy(), net[0](x).detach().numpy())
    net.train()
    plugrad.manual_seed(0)
    assert np.any(net[1](x).numpy() == 0.0)
    with pytest.raises(TypeError, match="bool"):
        net.train("yes")


def test_zero_grad_and_requires_grad() -> None:
    layer = nn.Linear(3, 2)
    layer(plugrad.ones((1, 3))).sum().backward()
    assert all(p.grad is not None for p in layer.parameters())
    layer.zero_grad(set_to_none=False)
    assert all(float(plugrad.sum(plugrad.abs(p.grad))) == 0.0 for p in layer.parameters())
    layer.zero_grad()
    assert all(p.grad is None for p in layer.parameters())
    assert layer.requires_grad_(False) is layer
    assert not any(p.requires_grad for p in layer.parameters())


# -- moving -------------------------------------------------------------------------------


def test_to_moves_in_place_and_keeps_parameter_identity() -> None:
    block = Block()
    params = list(block.parameters())
    block(plugrad.ones((1, 3))).sum().backward()
    values = arrays(block)
    assert block.to("array_api_strict") is block
    assert list(block.parameters()) == params
    for p in block.parameters():
        assert p.device.backend.name == "array_api_strict"
        assert p.grad.device is p.device
    assert block.steps.device.backend.name == "array_api_strict"
    assert block.cache.device.backend.name == "array_api_strict"
    for name, value in arrays(block).items():
        np.testing.assert_array_equal(value, values[name])
    out = block(plugrad.ones((1, 3), backend="array_api_strict"))
    out.sum().backward()  # the graph runs on the new backend
    block.to("numpy")
    assert block.inner.weight is params[1] and block.inner.weight.device.name == "numpy"


def test_to_casts_floating_tensors_only() -> None:
    block = Block()
    block.register_buffer("count", plugrad.tensor(3))
    block.to(plugrad.float64)
    assert {p.dtype for p in block.parameters()} == {plugrad.float64}
    assert block.steps.dtype == plugrad.float64
    assert block.count.dtype == plugrad.int64
    block.to("numpy", plugrad.float32)
    assert block.scale.dtype == plugrad.float32
    block.to(plugrad.zeros(1, dtype=plugrad.float64))  # PyTorch's to(other)
    assert block.scale.dtype == plugrad.float64 and block.count.dtype == plugrad.int64
    with pytest.raises(plugrad.errors.DtypeError, match="floating-point"):
        block.to(plugrad.zeros(1, dtype=plugrad.int64))
    with pytest.raises(plugrad.errors.DtypeError, match="floating-point"):
        block.to(plugrad.int32)


def test_to_replaces_buffers_and_leaves_the_registered_tensor_as_it_was() -> None:
    # The registered tensor itself was cast: a caller's tensor changed dtype (PyTorch
    # puts a converted copy in the module and leaves the caller's tensor alone).
    block = Block()
    steps, count = block.steps, plugrad.tensor(3)
    block.register_buffer("count", count)
    shared = plugrad.zeros(2)
    block.register_buffer("shared", shared)
    block.inner.register_buffer("shared", shared)
    block.double()
    assert steps.dtype == plugrad.float32 and block.steps is not steps
    assert block.steps.dtype == plugrad.float64
    assert block.count is count  # nothing to convert: the same tensor stays
    assert block.shared is block.inner.shared and shared.dtype == plugrad.float32
    state = block.state_dict()
    assert state["steps"].dtype == state["inner.shared"].dtype == plugrad.float64


def test_to_a_complex_dtype_makes_a_complex_module_as_pytorch() -> None:
    # It was refused ("cannot cast real float32 values to complex64"); PyTorch converts.
    layer = plugrad.nn.Linear(2, 2).to(plugrad.complex64)
    assert {p.dtype for p in layer.parameters()} == {plugrad.complex64}
    out = layer(plugrad.tensor([[1 + 1j, 2 - 1j]], dtype=plugrad.complex64))
    out.abs().sum().backward()
    assert layer.weight.grad.dtype == plugrad.complex64
    before = [p.tolist() for p in layer.parameters()]
    with pytest.raises(plugrad.errors.DtypeError, match="imaginary parts"):
        layer.to(plugrad.float32)  # would drop them: refused, nothing changed
    assert [p.tolist() for p in layer.parameters()] == before


def test_a_failed_move_changes_nothing() -> None:
    block = Block()
    before = arrays(block)
    device = block.scale.device
    with pytest.raises(plugrad.errors.UnknownBackendError):
        block.to("no-such-backend")
    with pytest.raises(plugrad.errors.DtypeError):
        block.to(dtype=plugrad.bool)
    assert all(p.device is device for p in block.parameters())
    for name, value in arrays(block).items():
        np.testing.assert_array_equal(value, before[name])


def test_a_backward_through_values_replaced_by_to_raises() -> None:
    layer = nn.Linear(2, 2)
    loss = (layer(plugrad.ones((1, 2), requires_grad=True)) ** 2).sum()
    layer.to(plugrad.float64)
    with pytest.raises(plugrad.errors.InPlaceModificationError):
        loss.backward()


# -- saving and loading -------------------------------------------------------------------


def test_state_dict_round_trip() -> None:
    plugrad.manual_seed(1)
    source = nn.Sequential(Block(), nn.Linear(2, 2))
    target = nn.Sequential(Block(), nn.Linear(2, 2))
    params = list(target.parameters())
    state = source.state_dict()
    assert list(state) == [
        "0.scale",
        "0.steps",
        "0.inner.weight",
        "0.inner.bias",
        "1.weight",
        "1.bias",
    ]
    assert all(not v.requires_grad and v.grad_fn is None for v in state.values())
    assert target.load_state_dict(state) == ([], [])
    assert list(target.parameters()) == params
    for name, value in arrays(target).items():
        np.testing.assert_array_equal(value, state[name].numpy())
    # The values were copied: changing the source later leaves the target alone.
    with plugrad.no_grad():
        source[1].weight.fill_(9.0)
    assert float(plugrad.max(target[1].weight)) != 9.0


def test_load_state_dict_accepts_arrays_and_moves_them() -> None:
    block = Block().to("array_api_strict")
    state = {name: value.numpy() + 1 for name, value in Block().state_dict().items()}
    block.load_state_dict(state)
    assert block.scale.device.backend.name == "array_api_strict"
    np.testing.assert_array_equal(block.scale.detach().numpy(), state["scale"])


def test_loading_casts_values_a_cast_keeps_as_pytorch_and_refuses_the_rest() -> None:
    # PyTorch copies any dtype in: integer weights into a float layer, a count saved as 5.0
    # into an int64 buffer (plugrad refused both); a cast that would change values is refused.
    layer = plugrad.nn.Linear(2, 2)
    layer.load_state_dict({**layer.state_dict(), "weight": plugrad.tensor([[1, 2], [3, 4]])})
    assert layer.weight.dtype == plugrad.float32
    assert layer.weight.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    norm = plugrad.nn.BatchNorm1d(2)
    norm.load_state_dict({**norm.state_dict(), "num_batches_tracked": plugrad.tensor(5.0)})
    assert norm.num_batches_tracked.dtype == plugrad.int64 and norm.num_batches_tracked.item() == 5
    for changed in (plugrad.tensor(5.5), plugrad.tensor(2.0**70)):
        with pytest.raises(StateDictError, match="would change its values"):
            norm.load_state_dict({**norm.state_dict(), "num_batches_tracked": changed})
    assert norm.num_batches_tracked.item() == 5


def test_loading_floats_and_complexes_into_a_complex_buffer_casts_as_pytorch() -> None:
    # A float NaN into a complex buffer was refused (NaN != NaN in the exactness check), and
    # complex128 into complex64 was refused where float64 into float32 loads.
    torch = pytest.importorskip("torch")
    cases = [
        ("complex128", [math.nan], "float64"),
        ("complex128", [1.5], "float32"),
        ("complex64", [0.1 + 0.1j], "complex128"),
        ("complex128", [1 + 2j], "complex64"),
    ]
    for into, values, given in cases:
        loaded = []
        for lib in (plugrad, torch):
            module = lib.nn.Module()
            module.register_buffer("b", lib.zeros(1, dtype=getattr(lib, into)))
            module.load_state_dict({"b": lib.tensor(values, dtype=getattr(lib, given))})
            assert str(module.b.dtype).split(".")[-1] == into
            loaded.append(np.asarray(module.b.tolist()))
        np.testing.assert_array_equal(loaded[0], loaded[1])
    module = plugrad.nn.Module()
    module.register_buffer("b", plugrad.zeros(1))
    with pytest.raises(StateDictError, match="complex64 in the state dict, float32"):
        module.load_state_dict({"b": plugrad.tensor([1 + 1j])})  # never into a real tensor


def test_strict_loading_reports_every_problem_and_changes_nothing() -> None:
    block = Block()
    before = arrays(block)
    state = block.state_dict()
    bad = dict(state)
    del bad["steps"]
    bad["extra"] = plugrad.ones(1)
    bad["inner.weight"] = plugrad.ones((3, 3))
    bad["inner.bias"] = plugrad.asarray([1.0, 1.5], dtype=plugrad.complex64)  # no cast keeps it
    bad["scale"] = plugrad.zeros(3)  # fine on its own, but must not be loaded either
    with pytest.raises(StateDictError) as error:
        block.load_state_dict(bad)
    message = str(error.value)
    assert "missing key 'steps'" in message
    assert "unexpected key 'extra'" in message
    assert "'inner.weight': shape (3, 3) in the state dict, (2, 3) in the module" in message
    assert "'inner.bias': dtype complex64 in the state dict, float32 in the module" in message
    assert isinstance(error.value, RuntimeError)  # what PyTorch raises
    for name, value in arrays(block).items():
        np.testing.assert_array_equal(value, before[name])
    with pytest.raises(StateDictError, match="cannot be read as an array"):
        block.load_state_dict({**state, "scale": object()})
    with pytest.raises(TypeError, match="mapping"):
        block.load_state_dict([("scale", plugrad.ones(3))])


def test_non_strict_loading_returns_the_unmatched_keys() -> None:
    block = Block()
    result = block.load_state_dict({"scale": plugrad.zeros(3), "other": plugrad.ones(1)}, False)
    assert result.missing_keys == ["steps", "inner.weight", "inner.bias"]
    assert result.unexpected_keys == ["other"]
    assert float(block.scale.sum()) == 0.0
    with pytest.raises(StateDictError, match="shape"):
        block.load_state_dict({"scale": plugrad.zeros(4)}, strict=False)


def test_keys_deeper_than_a_tensor_or_naming_a_submodule_are_unexpected() -> None:
    # A key whose first part named a parameter or a submodule was never reported.
    def deep_keys(lib):
        net = lib.nn.Sequential(
            lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2), lib.nn.Linear(2, 1, bias=False)
        )
        before = [t.tolist() for t in net.state_dict().values()]
        state = {k: v.clone() for k, v in net.state_dict().items()}
        for key in ("0.weight.foo", "0", "1.running_mean.x", "2.bias"):
            state[key] = lib.zeros(1)
        result = net.load_state_dict(state, strict=False)
        with pytest.raises(RuntimeError, match="nexpected"):
            net.load_state_dict(state)
        assert [t.tolist() for t in net.state_dict().values()] == before
        return result.missing_keys, sorted(result.unexpected_keys)

    torch = pytest.importorskip("torch")
    assert deep_keys(plugrad) == deep_keys(torch)
    assert deep_keys(plugrad)[1] == ["0", "0.weight.foo", "1.running_mean.x", "2.bias"]


# -- printing -----------------------------------------------------------------------------


def test_repr_nests_like_pytorch() -> None:
    net = nn.Sequential(nn.Linear(2, 3, bias=False), nn.Sequential(nn.GELU(), nn.Dropout(0.1)))
    assert repr(net) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=3, bias=False)\n"
        "  (1): Sequential(\n"
        "    (0): GELU(approximate='none')\n"
        "    (1): Dropout(p=0.1, inplace=False)\n"
        "  )\n"
        ")"
    )
    assert repr(nn.Module()) == "Module()"


# -- containers ---------------------------------------------------------------------------


def test_sequential_indexing_length_iteration() -> None:
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    net = nn.Sequential(a, b, c)
    assert len(net) == 3 and list(net) == [a, b, c]
    assert net[0] is a and net[-1] is c
    head = net[:2]
    assert isinstance(head, nn.Sequential) and list(head) == [a, b]
    assert head(plugrad.ones((4, 2))).shape == (4, 3)
    with pytest.raises(IndexError, match="out of range"):
        net[3]
    with pytest.raises(TypeError, match="ints or slices"):
        net["0"]
    net[1] = nn.Tanh()
    assert isinstance(net[1], nn.Tanh) and list(net._modules) == ["0", "1", "2"]
    net.append(nn.Sigmoid())
    assert len(net) == 4
    del net[0]
    assert list(net._modules) == ["0", "1", "2"] and isinstance(net[0], nn.Tanh)
    named = nn.Sequential({"encode": nn.Linear(2, 2), "act": nn.ReLU()})
    assert [name for name, _ in named.named_children()] == ["encode", "act"]
    assert isinstance(named[1], nn.ReLU)


def test_module_list_holds_modules() -> None:
    layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
    layers.append(nn.ReLU()).extend([nn.Tanh()])
    assert len(layers) == 4
    assert [name for name, _ in layers.named_parameters()] == [
        "0.weight",
        "0.bias",
        "1.weight",
        "1.bias",
    ]
    assert isinstance(layers[1:], nn.ModuleList) and len(layers[1:]) == 3
    with pytest.raises(NotImplementedError):
        layers(plugrad.ones(2))


# -- Tensor.data --------------------------------------------------------------------------


def test_tensor_data_replaces_a_leafs_values_in_place() -> None:
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    detached = w.data
    assert not detached.requires_grad and detached.array is w.array
    version = w._version
    w.data = plugrad.tensor([3.0, 4.0, 5.0], dtype=plugrad.float64)
    assert w.shape == (3,) and w.dtype == plugrad.float64 and w.requires_grad
    assert w._version == version + 1
    with pytest.raises(TypeError, match="must be a Tensor"):
        w.data = [1.0]
    with pytest.raises(plugrad.errors.DtypeError, match="floating-point"):
        w.data = plugrad.tensor([1, 2])
    with pytest.raises(plugrad.errors.BackwardError, match="leaf"):
        (w * 2).data = plugrad.ones(3)


def test_deepcopy_of_a_model_is_independent() -> None:
    import copy

    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    clone = copy.deepcopy(model)
    assert isinstance(clone[0].weight, nn.Parameter)
    assert [n for n, _ in clone.named_parameters()] == [n for n, _ in model.named_parameters()]
    with plugrad.no_grad():
        clone[0].weight.fill_(0.0)
    assert not bool(plugrad.all(model[0].weight == 0.0))
    x = plugrad.ones((4, 3))
    clone(x).sum().backward()
    assert model[0].weight.grad is None and clone[2].weight.grad is not None


def _shared_block(library):
    model = library.nn.Module()
    block = library.nn.Linear(3, 3)
    model.a = block
    model.b = block
    return model


def test_a_module_registered_twice_has_its_entries_under_both_names_as_in_torch() -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = _shared_block(plugrad), _shared_block(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    np.testing.assert_array_equal(ours.a.weight.detach().numpy(), theirs.a.weight.detach().numpy())
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    assert [name for name, _ in ours.named_parameters()] == ["a.weight", "a.bias"]


def test_a_batch_norm_checkpoint_without_its_batch_count_loads_as_in_torch() -> None:
    torch = pytest.importorskip("torch")
    old = {
        k: v.numpy() for k, v in torch.nn.BatchNorm1d(3).state_dict().items()
        if k != "num_batches_tracked"
    }  # fmt: skip
    norm = nn.BatchNorm1d(3)
    norm(plugrad.randn(4, 3))
    assert norm.load_state_dict(old) == ([], [])
    assert int(norm.num_batches_tracked) == 1  # kept, as PyTorch keeps it
    net = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    state = {k: v for k, v in net.state_dict().items() if k != "1.running_mean"}
    with pytest.raises(StateDictError, match=r"missing key '1\.running_mean'"):
        net.load_state_dict(state)


def test_get_submodule_parameter_and_buffer_follow_dotted_paths() -> None:
    net = nn.Sequential(nn.Sequential(nn.Linear(2, 2)), nn.BatchNorm1d(2))
    assert net.get_submodule("") is net and net.get_submodule("0.0") is net[0][0]
    assert net.get_parameter("0.0.bias") is net[0][0].bias
    assert net.get_buffer("1.running_var") is net[1].running_var
    for call, message in (
        (lambda: net.get_submodule("0.1"), "Sequential.0 has no submodule '1'"),
        (lambda: net.get_parameter("0.0.nope"), "has no parameter 'nope'"),
        (lambda: net.get_buffer("1.weight"), "has no buffer 'weight'"),
        (lambda: net.get_parameter("x.y"), "has no submodule 'x'"),
    ):
        with pytest.raises(AttributeError, match=message):
            call()
    layer = nn.Linear(2, 2, bias=False)
    layer.register_buffer("scale", None)
    assert layer.get_buffer("scale") is None  # as PyTorch's (it raised)
    with pytest.raises(AttributeError, match="registered but holds None"):
        layer.get_parameter("bias")  # the message said it had none while listing it


def test_batch_norm_of_another_channel_count_is_refused_before_any_statistic_moves() -> None:
    norm = nn.BatchNorm1d(3)
    for x in (plugrad.randn(4, 5), plugrad.randn(4, 1)):
        with pytest.raises(plugrad.errors.ShapeError, match="expected 3 channels on axis 1"):
            norm(x)
    assert norm.running_mean.tolist() == [0.0] * 3 and int(norm.num_batches_tracked) == 0
    with pytest.raises(plugrad.errors.ShapeError, match="running_mean holds 3 values"):
        nn.functional.batch_norm(plugrad.randn(4, 1), norm.running_mean, norm.running_var,
                                 training=True)  # fmt: skip
    assert norm.running_mean.tolist() == [0.0] * 3


def _with_frozen_batch_norm(lib: Any) -> Any:
    """A model whose second block keeps its batch norm in eval mode by overriding train()."""

    class Frozen(lib.nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self):
            super().__init__()
            self.bn = lib.nn.BatchNorm1d(2)

        def train(self, mode=True):
            super().train(mode)
            self.bn.eval()  # its statistics stay frozen
            return self

    return lib.nn.Sequential(lib.nn.Linear(2, 2), Frozen())


def test_module_mechanics_that_once_differed_from_pytorch() -> None:
    torch = pytest.importorskip("torch")
    for lib in (plugrad, torch):
        lib_nn = lib.nn
        net = _with_frozen_batch_norm(lib)
        net.train()
        assert net[1].bn.training is False, lib.__name__  # a parent's train() calls the child's

        layer = lib_nn.Linear(2, 2)
        saved, row = layer.state_dict(), layer.weight[0]
        layer.load_state_dict({"weight": lib.zeros(2, 2), "bias": lib.ones(2)})
        assert float(saved["weight"].abs().sum()) == 0.0  # loaded into the same memory
        assert float(row.detach().abs().sum()) == 0.0
        layer.load_state_dict({"weight": lib.ones(2, 2, dtype=lib.float64), "bias": lib.ones(2)})
        assert layer.weight.dtype == lib.float32 and float(layer.weight.detach().sum()) == 4.0

        layer(lib.ones(1, 2)).sum().backward()
        twin = copy.deepcopy(layer)
        assert twin.bias.grad is None  # a copied Parameter starts without a gradient

        out = layer(lib.ones(1, 2)).sum()
        (grad,) = lib.autograd.grad(out, layer.weight, create_graph=True)
        layer.weight.grad = grad
        layer.zero_grad(set_to_none=False)
        assert layer.weight.grad.requires_grad is False

        with pytest.raises(KeyError, match="already exists"):
            layer.register_buffer("weight", lib.zeros(2))
        with pytest.raises(KeyError, match="already exists"):
            layer.add_module("weight", lib_nn.ReLU())
        with pytest.raises(TypeError, match="parameter 'weight'"):
            layer.weight = lib_nn.ReLU()
        with pytest.raises(KeyError, match="already exists"):
            layer.forward = lib_nn.Parameter(lib.ones(1))


def test_reprs_of_named_sequentials_and_multi_line_extra_reprs_are_pytorchs() -> None:
    torch = pytest.importorskip("torch")
    from collections import OrderedDict

    texts = []
    for lib in (plugrad, torch):

        class Noted(lib.nn.Module):  # type: ignore[misc, name-defined]
            def __init__(self, act):
                super().__init__()
                self.act = act

            def extra_repr(self):
                return "line1\nline2"

        named = lib.nn.Sequential(OrderedDict(conv=lib.nn.Linear(1, 1), act=lib.nn.ReLU()))
        texts.append([repr(named), repr(lib.nn.Sequential(lib.nn.ReLU(), lib.nn.ReLU())),
                      repr(Noted(lib.nn.ReLU()))])  # fmt: skip
    assert texts[0] == texts[1]


def test_half_float_and_double_keep_complex_tensors_as_pytorchs() -> None:
    # They went through to(dtype), which refuses to drop imaginary parts: a DtypeError.
    module = nn.Module()
    module.w = nn.Parameter(plugrad.tensor([1 + 2j]))
    module.v = nn.Parameter(plugrad.tensor([1.0]))
    module.register_buffer("count", plugrad.tensor([1]))
    if plugrad.float16 in plugrad.default_device().dtypes:  # (array-api-strict has none)
        assert module.half().w.dtype == plugrad.complex64 and module.v.dtype == plugrad.float16
    assert module.double().w.tolist() == [1 + 2j] and module.v.dtype == plugrad.float64
    assert module.float().w.dtype == plugrad.complex64 and module.v.dtype == plugrad.float32
    assert module.count.dtype == plugrad.int64
    assert nn.Linear(1, 1).to(float).weight.dtype == plugrad.float64  # Python's type, as torch


def test_sequential_pop_insert_and_add_as_pytorchs() -> None:
    layers = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid())
    popped = layers.pop(slice(0, 2))  # was refused
    assert isinstance(popped, nn.Sequential) and len(popped) == 2 and len(layers) == 1
    for index in (5, -3):  # clamped to an end, as list.insert does
        with pytest.raises(IndexError, match="out of range"):
            layers.insert(index, nn.ReLU())
    with pytest.raises(ValueError, match="takes a Sequential"):
        layers.__add__([nn.ReLU()])
    with pytest.raises(ValueError, match="takes a Sequential"):
        layers += [nn.ReLU()]
    assert len(layers) == 1 and len(layers + nn.Sequential(nn.ReLU())) == 2
    listed = nn.ModuleList([nn.ReLU(), nn.Tanh()])
    assert isinstance(listed.pop(slice(0, 1)), nn.ModuleList) and len(listed) == 1


def test_a_one_element_value_loads_into_a_0d_parameter_as_pytorchs() -> None:
    module = nn.Module()
    module.scale = nn.Parameter(plugrad.tensor(1.0))
    module.load_state_dict({"scale": plugrad.tensor([5.0])})
    assert module.scale.shape == () and module.scale.item() == 5.0


def test_dir_leaves_out_numbered_submodules_as_pytorchs() -> None:
    layers = nn.Sequential(nn.ReLU(), nn.Linear(1, 1))
    names = dir(layers)
    assert "0" not in names and "1" not in names and "forward" in names
    assert "weight" in dir(layers[1])
