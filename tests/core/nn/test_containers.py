"""Identity, ModuleDict, ParameterList, ParameterDict and Unflatten, beside PyTorch's.

The containers register what they hold, so parameters(), named_parameters(),
state_dict(), load_state_dict(), to() and repr see it under PyTorch's names.
"""

from __future__ import annotations

import collections
from collections import OrderedDict

import numpy as np
import pytest

import plugrad
from plugrad import nn
from plugrad.errors import ShapeError

torch = pytest.importorskip("torch")


def _names(module) -> list[str]:
    return [name for name, _ in module.named_parameters()]


def test_identity_ignores_its_arguments_and_returns_its_input() -> None:
    x = plugrad.ones(3)
    layer = nn.Identity(54, unused_argument1=0.1, unused_argument2=False)
    assert layer(x) is x
    assert repr(layer) == repr(torch.nn.Identity(54)) == "Identity()"
    assert list(layer.parameters()) == []


def _heads(lib):
    return lib.nn.ModuleDict(
        OrderedDict(
            [("cls", lib.nn.Linear(4, 3)), ("act", lib.nn.ReLU()), ("box", lib.nn.Linear(4, 2))]
        )
    )


def test_module_dict_registers_its_modules_as_pytorch() -> None:
    ours, theirs = _heads(plugrad), _heads(torch)
    assert repr(ours) == repr(theirs)
    assert _names(ours) == _names(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert list(ours) == list(ours.keys()) == ["cls", "act", "box"]
    assert [type(m).__name__ for m in ours.values()] == ["Linear", "ReLU", "Linear"]
    assert [k for k, _ in ours.items()] == list(ours)
    assert "act" in ours and "nope" not in ours and len(ours) == 3
    assert ours["box"](plugrad.ones((5, 4))).shape == (5, 2)


def test_module_dict_edits_like_a_dict() -> None:
    heads = _heads(plugrad)
    heads["extra"] = nn.Tanh()
    del heads["act"]
    assert list(heads) == ["cls", "box", "extra"]
    assert isinstance(heads.pop("extra"), nn.Tanh) and "extra" not in heads
    heads.update([("z", nn.Linear(1, 1)), ("a", nn.ReLU())])  # pairs keep their order
    heads.update({"y": nn.ReLU(), "b": nn.ReLU()})  # so does a dict, as in PyTorch
    assert list(heads) == ["cls", "box", "z", "a", "y", "b"]
    heads["cls"] = nn.Linear(4, 1)  # replaced in place: its position is kept
    assert next(iter(heads)) == "cls" and heads["cls"].out_features == 1
    heads.clear()
    assert len(heads) == 0 and list(heads.parameters()) == []


def test_module_dict_state_moves_and_loads() -> None:
    ours, theirs = _heads(plugrad), _heads(torch)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.ones((2, 4), dtype=np.float32)
    np.testing.assert_allclose(
        ours["cls"](plugrad.asarray(x)).detach().numpy(),
        theirs["cls"](torch.tensor(x)).detach().numpy(),
        rtol=1e-6,
    )
    ours.to(plugrad.float64)
    assert {p.dtype for p in ours.parameters()} == {plugrad.float64}


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda d: d["nope"], KeyError, "ModuleDict has no key 'nope'; its keys are ['cls'"),
        (lambda d: d.__delitem__("nope"), KeyError, "no key 'nope'"),
        (lambda d: d.__setitem__("a.b", nn.ReLU()), KeyError, "cannot contain '.'"),
        (lambda d: d.__setitem__("x", 3), TypeError, "int is not a Module"),
        (lambda d: d.update(3), TypeError, "takes a mapping or an iterable"),
        (lambda d: d.update([("a", nn.ReLU(), 1)]), ValueError, "element #0 has length 3"),
        (lambda d: d.update(["ab"]), TypeError, "element #0 is a str"),
    ],
)
def test_module_dict_refuses_bad_keys_and_values_and_changes_nothing(call, error, message) -> None:
    heads = _heads(plugrad)
    with pytest.raises(error) as info:
        call(heads)
    assert message in str(info.value)
    assert list(heads) == ["cls", "act", "box"]


def _plist(lib):
    return lib.nn.ParameterList(
        [lib.nn.Parameter(lib.ones((2, 3))), lib.zeros(4), lib.nn.Parameter(lib.ones(()))]
    )


def test_parameter_list_makes_parameters_and_prints_as_pytorch() -> None:
    ours, theirs = _plist(plugrad), _plist(torch)
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in ours)
    assert _names(ours) == _names(theirs) == ["0", "1", "2"]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs).replace("torch.", "plugrad.")
    assert repr(nn.ParameterList()) == repr(torch.nn.ParameterList()) == "ParameterList()"


def test_parameter_list_indexes_and_grows_like_a_list() -> None:
    params = _plist(plugrad)
    first = params[0]
    assert params[-3] is first and len(params) == 3
    tail = params[1:]
    assert isinstance(tail, nn.ParameterList) and len(tail) == 2 and tail[0] is params[1]
    params[1] = plugrad.ones(5)
    assert isinstance(params[1], nn.Parameter) and params[1].shape == (5,)
    params += [plugrad.ones(1)]
    params.append(nn.Parameter(plugrad.ones(2))).extend([plugrad.zeros(3)])
    assert len(params) == 6 and _names(params) == [str(i) for i in range(6)]
    assert [p.shape for p in params][-3:] == [(1,), (2,), (3,)]


def test_parameter_list_trains_and_moves() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scales = nn.ParameterList([plugrad.ones(2) * 2.0, plugrad.ones(2) * 3.0])

        def forward(self, x):
            for scale in self.scales:
                x = x * scale
            return x

    net = Net()
    net(plugrad.ones(2)).sum().backward()
    assert [p.grad.tolist() for p in net.scales] == [[3.0, 3.0], [2.0, 2.0]]
    assert _names(net) == ["scales.0", "scales.1"]
    net.to(plugrad.float64)
    assert net.scales[0].dtype is plugrad.float64
    net.load_state_dict({"scales.0": np.zeros(2), "scales.1": np.ones(2)})
    assert net.scales[0].tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda p: p[3], IndexError, "index 3 is out of range for a ParameterList of length 3"),
        (lambda p: p["0"], TypeError, "indices must be ints or slices, not str"),
        (lambda p: p.append(1.0), TypeError, "ParameterList holds tensors"),
        (lambda p: p.extend(plugrad.ones(2)), TypeError, "iterable of tensors, got Tensor"),
        (lambda p: p.__setitem__(5, plugrad.ones(1)), IndexError, "out of range"),
    ],
)
def test_parameter_list_refuses_bad_input(call, error, message) -> None:
    params = _plist(plugrad)
    with pytest.raises(error) as info:
        call(params)
    assert message in str(info.value)
    assert len(params) == 3


def _pdict(lib, mapping=dict):
    return lib.nn.ParameterDict(
        mapping(
            [("w", lib.nn.Parameter(lib.ones((2, 3)))), ("b", lib.zeros(4)), ("a", lib.ones(1))]
        )
    )


@pytest.mark.parametrize("mapping", [dict, OrderedDict, list], ids=lambda m: m.__name__)
def test_parameter_dict_orders_and_names_as_pytorch(mapping) -> None:
    ours, theirs = _pdict(plugrad, mapping), _pdict(torch, mapping)
    assert list(ours) == list(theirs)  # a plain dict's keys sorted, as PyTorch does
    assert _names(ours) == _names(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert all(isinstance(p, nn.Parameter) for p in ours.values())
    first = next(iter(ours))
    assert repr(ours).splitlines()[1] == (
        f"    ({first}): Parameter containing: "
        f"[plugrad.float32 of size {'x'.join(map(str, ours[first].shape))}]"
    )


def test_parameter_dict_has_the_dict_methods() -> None:
    params = _pdict(plugrad, OrderedDict)
    assert list(params.keys()) == ["w", "b", "a"] and list(reversed(params)) == ["a", "b", "w"]
    assert params.get("nope") is None and params.get("w") is params["w"]
    assert params.setdefault("w", plugrad.zeros(1)) is params["w"]
    assert params.setdefault("c", plugrad.zeros(2)).shape == (2,)
    key, value = params.popitem()
    assert key == "c" and value.shape == (2,) and "c" not in params
    assert params.pop("a").shape == (1,) and list(params) == ["w", "b"]
    del params["b"]
    params["z"] = plugrad.ones(3)
    assert list(params) == ["w", "z"] and len(params) == 2
    copied = params.copy()
    assert list(copied) == ["w", "z"] and copied["w"] is params["w"]
    merged = params | nn.ParameterDict({"q": plugrad.ones(1)})
    assert list(merged) == ["w", "z", "q"] and list(params) == ["w", "z"]
    params |= nn.ParameterDict({"r": plugrad.ones(1)})
    assert list(params) == ["w", "z", "r"]
    fresh = params.fromkeys(["x", "y"], plugrad.ones(2))
    assert list(fresh) == ["x", "y"] and fresh["x"] is not fresh["y"]
    assert _names(fresh) == ["x", "y"]  # a Parameter per key for a plain tensor, as PyTorch's
    shared = params.fromkeys(["x", "y"], nn.Parameter(plugrad.ones(2)))
    assert shared["x"] is shared["y"] and _names(shared) == ["x"]  # one Parameter, listed once
    params.clear()
    assert len(params) == 0 and params.state_dict() == {}


def test_parameter_dict_in_a_model_trains_moves_and_loads() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.affine = nn.ParameterDict({"scale": plugrad.ones(2), "shift": plugrad.zeros(2)})

        def forward(self, x):
            return x * self.affine["scale"] + self.affine["shift"]

    net = Net()
    (net(plugrad.tensor([1.0, 2.0])) ** 2).sum().backward()
    assert net.affine["scale"].grad.tolist() == [2.0, 8.0]
    assert list(net.state_dict()) == ["affine.scale", "affine.shift"]
    net.load_state_dict(
        {"affine.scale": np.full(2, 3.0, np.float32), "affine.shift": np.ones(2, np.float32)}
    )
    assert net(plugrad.ones(2)).tolist() == [4.0, 4.0]
    net.to(plugrad.float64)
    assert net.affine.scale.dtype is plugrad.float64  # also an attribute, as in PyTorch


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda p: p["nope"], KeyError, "ParameterDict has no key 'nope'"),
        (lambda p: p[0], TypeError, "keys are strings, got int"),
        (lambda p: p.__setitem__(1, plugrad.ones(1)), TypeError, "name must be a str"),
        (lambda p: p.__setitem__("a.b", plugrad.ones(1)), KeyError, "cannot contain '.'"),
        (lambda p: p.__setitem__("c", [1.0]), TypeError, "ParameterDict holds tensors"),
        (lambda p: p.__delitem__("nope"), KeyError, "no key 'nope'"),
        (lambda p: p.update(1), TypeError, "takes a mapping or an iterable"),
    ],
)
def test_parameter_dict_refuses_bad_input(call, error, message) -> None:
    params = _pdict(plugrad, OrderedDict)
    with pytest.raises(error) as info:
        call(params)
    assert message in str(info.value)
    assert list(params) == ["w", "b", "a"]


@pytest.mark.parametrize(
    ("dim", "sizes", "shape"),
    [
        (1, (2, 5), (3, 10)),
        (-1, [2, -1], (3, 10)),
        (0, (3, 1), (3, 4)),
        (-2, (2, 2), (3, 4, 5)),
        # (a named tuple raised TypeError: it was rebuilt from one sequence)
        (1, collections.namedtuple("Sizes", "height width")(2, 5), (3, 10)),
    ],
    ids=str,
)
def test_unflatten_as_pytorch_with_gradients(dim, sizes, shape) -> None:
    ours, theirs = nn.Unflatten(dim, sizes), torch.nn.Unflatten(dim, sizes)
    assert repr(ours) == repr(theirs)
    data = np.arange(float(np.prod(shape))).reshape(shape)
    x = plugrad.asarray(data, requires_grad=True)
    out = ours(x)
    assert out.shape == tuple(theirs(torch.tensor(data)).shape)
    np.testing.assert_array_equal(out.detach().numpy(), theirs(torch.tensor(data)).numpy())
    (out * 2.0).sum().backward()
    assert x.grad.tolist() == np.full(shape, 2.0).tolist()


def test_unflatten_refuses_bad_input() -> None:
    with pytest.raises(TypeError, match="tuple or list of ints"):
        nn.Unflatten(1, 4)
    with pytest.raises(TypeError, match="tuple or list of ints"):
        nn.Unflatten(1, (2.0, 2))
    with pytest.raises(ShapeError, match="multiply up to 6"):
        nn.Unflatten(1, (4, -1))(plugrad.ones((2, 6)))
    with pytest.raises(ShapeError, match="dim 3 is out of range"):  # named in the layer
        nn.Unflatten(3, (2, 3))(plugrad.ones((2, 6)))


def test_module_lists_and_sequentials_insert_pop_and_add_as_pytorchs() -> None:
    torch = pytest.importorskip("torch")
    import numpy as np

    seen = []
    for lib in (plugrad, torch):
        lib_nn = lib.nn
        listed = lib_nn.ModuleList([lib_nn.ReLU(), lib_nn.Tanh()])
        listed.insert(1, lib_nn.Sigmoid())
        listed += [lib_nn.Identity()]
        popped = listed.pop(0)
        joined = listed + lib_nn.ModuleList([lib_nn.ReLU()])
        chain = lib_nn.Sequential(lib_nn.ReLU(), lib_nn.Tanh())
        chain.insert(0, lib_nn.Sigmoid())
        chain.pop(1)
        longer = chain + lib_nn.Sequential(lib_nn.Identity())
        seen.append((
            [type(m).__name__ for m in listed], type(popped).__name__, len(joined),
            type(listed[np.int64(0)]).__name__, list(listed._modules),
            [type(m).__name__ for m in chain], type(longer).__name__, len(longer),
        ))  # fmt: skip
    assert seen[0] == seen[1]


def test_a_sequential_repeated_shares_its_modules_as_pytorchs() -> None:
    # nn.Sequential(...) * 2 raised a TypeError.
    torch = pytest.importorskip("torch")
    seen = []
    for lib in (plugrad, torch):
        chain = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Tanh())
        twice, also = chain * 2, 3 * chain
        chain *= 2
        seen.append((len(twice), twice[0] is twice[2], len(also), len(chain), chain[2] is chain[0]))
        for bad, error in ((0, ValueError), (1.5, TypeError)):
            with pytest.raises(error):
                chain * bad
    assert seen[0] == seen[1]


def test_sequential_insert_returns_itself_and_module_list_insert_none() -> None:
    net = plugrad.nn.Sequential(plugrad.nn.ReLU())
    assert net.insert(0, plugrad.nn.Tanh()) is net  # PyTorch's; it was None
    assert [type(m).__name__ for m in net] == ["Tanh", "ReLU"]
    assert plugrad.nn.ModuleList([plugrad.nn.ReLU()]).insert(0, plugrad.nn.Tanh()) is None


def test_named_modules_leaves_out_the_modules_in_memo() -> None:
    net = plugrad.nn.Sequential(plugrad.nn.ReLU(), plugrad.nn.Tanh())
    memo = {net[0]}
    assert [name for name, _ in net.named_modules(memo=memo)] == ["", "1"]  # it ignored memo
    assert memo == {net, net[0], net[1]}


def test_set_submodule_replaces_or_adds_at_a_dotted_path() -> None:
    net = plugrad.nn.Sequential(plugrad.nn.Sequential(plugrad.nn.Linear(2, 2)), plugrad.nn.ReLU())
    net.set_submodule("0.0", plugrad.nn.Tanh())
    assert isinstance(net[0][0], plugrad.nn.Tanh)
    net.set_submodule("0.extra", plugrad.nn.ReLU())
    assert isinstance(net[0].extra, plugrad.nn.ReLU)
    with pytest.raises(AttributeError, match="strict"):
        net.set_submodule("0.missing", plugrad.nn.ReLU(), strict=True)
    with pytest.raises(AttributeError, match="no submodule"):
        net.set_submodule("5.x", plugrad.nn.ReLU())
    with pytest.raises(TypeError):
        net.set_submodule("1", "relu")
    assert isinstance(net[1], plugrad.nn.ReLU)


def test_cpu_and_cuda_move_modules_as_pytorchs() -> None:
    layer = plugrad.nn.Linear(2, 1)
    weight = layer.weight
    assert layer.cpu() is layer and layer.weight is weight
    assert layer.weight.device.type == "cpu"
    if not plugrad.cuda.is_available():
        before = layer.weight.tolist()
        with pytest.raises(plugrad.errors.BackendUnavailableError):
            layer.cuda()
        assert layer.weight.device.type == "cpu" and layer.weight.tolist() == before


@pytest.mark.parametrize("lib", [plugrad, torch], ids=["plugrad", "torch"])
def test_list_containers_refuse_slice_assignment_as_pytorchs(lib) -> None:
    for made in (
        lib.nn.ModuleList([lib.nn.ReLU(), lib.nn.Tanh()]),
        lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh()),
    ):
        with pytest.raises(TypeError) as caught:
            made[0:1] = [lib.nn.Sigmoid()]
        assert [type(m).__name__ for m in made] == ["ReLU", "Tanh"]
        if lib is plugrad:  # (PyTorch's says a slice is no int)
            message = str(caught.value)
            assert "cannot assign to a slice" in message and "ints or slices" not in message
            assert isinstance(caught.value, plugrad.errors.ArgumentError)


@pytest.mark.parametrize("lib", [plugrad, torch], ids=["plugrad", "torch"])
def test_module_list_extend_takes_an_iterable_as_pytorchs(lib) -> None:
    with pytest.raises(TypeError, match="iterable"):
        lib.nn.ModuleList().extend(lib.nn.ReLU())
    with pytest.raises(TypeError, match="iterable"):
        lib.nn.ModuleList(lib.nn.ReLU())
    if lib is plugrad:
        with pytest.raises(plugrad.errors.ArgumentError, match="append"):
            lib.nn.ModuleList().extend(lib.nn.ReLU())
    grown = lib.nn.ModuleList([lib.nn.ReLU()]).extend(lib.nn.ModuleList([lib.nn.Tanh()]))
    assert [type(m).__name__ for m in grown] == ["ReLU", "Tanh"]


@pytest.mark.parametrize(
    "change",
    [
        lambda modules: modules.__setitem__(1, 3),
        lambda modules: modules.__setitem__(-1, "relu"),
        lambda modules: modules.insert(1, 3),
        lambda modules: modules.insert(-1, None.__class__),
    ],
)
@pytest.mark.parametrize("kind", ["ModuleList", "Sequential"])
def test_a_refused_assignment_or_insert_leaves_the_container_as_it_was(kind, change) -> None:
    modules = (
        getattr(nn, kind)(nn.ReLU(), nn.Tanh(), nn.ELU())
        if kind == "Sequential"
        else (nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.ELU()]))
    )
    before = list(modules._modules.items())
    with pytest.raises(plugrad.errors.ArgumentError, match="Module"):
        change(modules)
    assert list(modules._modules.items()) == before


def test_the_refusal_names_the_position_assigned_or_inserted() -> None:
    modules = nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.ELU()])
    with pytest.raises(plugrad.errors.ArgumentError, match="cannot add it as '2'"):
        modules[-1] = 3
    with pytest.raises(plugrad.errors.ArgumentError, match="cannot add it as '1'"):
        modules.insert(-2, 3)
    with pytest.raises(plugrad.errors.ArgumentError, match="cannot add it as '3'"):
        modules.insert(10, 3)


def test_registration_hooks_see_only_the_module_assigned_or_inserted() -> None:
    seen: list[tuple[str, str]] = []

    def hook(module, name, value):
        seen.append((name, type(value).__name__))

    handle = nn.modules.module.register_module_module_registration_hook(hook)
    try:
        modules = nn.ModuleList([nn.ReLU(), nn.Tanh()])
        seen.clear()
        modules[1] = nn.ELU()
        modules.insert(0, nn.Sigmoid())
        del modules[0]
    finally:
        handle.remove()
    assert seen == [("1", "ELU"), ("0", "Sigmoid")]
    assert [type(m).__name__ for m in modules] == ["ReLU", "ELU"]
