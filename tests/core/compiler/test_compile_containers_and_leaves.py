"""plugrad.compile with results and state in dict subclasses, and with leaves the call makes.

Each case runs eagerly and compiled from the same start and compares every call
exactly: a replay that cannot give what the eager call gives must capture again
or run eagerly with a CompileWarning, never hand back another number.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import warnings

import numpy as np
import pytest

import plugrad
from plugrad import nn, optim
from plugrad.errors import CompileWarning

# Machinery of plans, tested on NumPy (test_compile_backends covers the other backends;
# on a lazy one a result with a graph runs eagerly, by design).
pytestmark = pytest.mark.usefixtures("on_numpy")


class _Output(dict):
    """A model's output as libraries return it: a dict subclass."""


def _quietly(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        return fn(*args)


@pytest.mark.parametrize(
    "wrap",
    [
        collections.OrderedDict,
        lambda **items: collections.defaultdict(int, items),
        lambda **items: _Output(items),
        lambda **items: (1, collections.OrderedDict(items)),
    ],
    ids=["OrderedDict", "defaultdict", "dict subclass", "OrderedDict in a tuple"],
)
def test_a_result_in_a_dict_subclass_holds_this_call_s_tensors(wrap):
    def f(x):
        return wrap(y=x * 2)

    compiled = plugrad.compile(f)
    for i in range(4):
        x = plugrad.full((2,), float(i))
        got, expected = _quietly(compiled, x), f(x)
        if isinstance(expected, tuple):
            got, expected = got[1], expected[1]
        assert type(got) is type(expected)
        assert got["y"].tolist() == expected["y"].tolist() == [2.0 * i] * 2


def test_an_ordered_dict_result_is_replayed_not_run_eagerly():
    compiled = plugrad.compile(lambda x: collections.OrderedDict(y=x + 1), fullgraph=True)
    for i in range(3):
        assert compiled(plugrad.full((1,), float(i)))["y"].tolist() == [i + 1.0]
    assert compiled.captures == 1


def _momentum_run(compiled):
    p = nn.Parameter(plugrad.ones(3))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)

    def f(x):
        opt.zero_grad()
        (p * x).sum().backward()
        opt.step()
        return x.sum()

    fn = plugrad.compile(f) if compiled else f
    a = plugrad.full((3,), 2.0)
    _quietly(fn, a)
    _quietly(fn, opt.state[p]["momentum_buffer"])  # optimizer.state is a defaultdict
    _quietly(fn, a)
    return p.tolist(), opt.state[p]["momentum_buffer"].tolist(), a.tolist()


def test_optimizer_state_in_its_defaultdict_passed_as_an_argument():
    assert _momentum_run(True) == _momentum_run(False)


@pytest.mark.parametrize(
    "table",
    [
        lambda: collections.defaultdict(lambda: None),
        lambda: type("AttrDict", (dict,), {"__getattr__": dict.__getitem__})(),
    ],
    ids=["defaultdict", "AttrDict"],
)
def test_a_model_replaced_in_a_dict_subclass_is_the_one_that_runs(table):
    objects = table()
    objects["model"] = nn.Linear(2, 1)

    def f(x):
        return objects["model"](x)

    compiled = plugrad.compile(f)
    x = plugrad.ones(1, 2)
    compiled(x)
    compiled(x)
    objects["model"] = nn.Linear(2, 1)
    assert _quietly(compiled, x).tolist() == f(x).tolist()


def test_a_tensor_read_as_an_attrdict_attribute_follows_replacement_and_in_place_change():
    AttrDict = type("AttrDict", (dict,), {"__getattr__": dict.__getitem__})
    config = AttrDict(scale=plugrad.full((), 2.0))
    compiled = plugrad.compile(lambda x: x * config.scale)
    assert [compiled(plugrad.ones(1)).item() for _ in range(3)] == [2.0] * 3
    config["scale"] = plugrad.full((), 3.0)
    assert compiled(plugrad.ones(1)).item() == 3.0
    config.scale.mul_(2)
    assert compiled(plugrad.ones(1)).item() == 6.0


def test_retain_grad_inside_runs_eagerly_with_the_eager_gradient():
    lin = nn.Linear(3, 2)

    def f(x):
        h = lin(x)
        h.retain_grad()
        return h, h.tanh().sum()

    compiled = plugrad.compile(f)
    x = plugrad.randn(4, 3)
    h, loss = f(x)
    loss.backward()
    expected = h.grad.numpy().copy()
    for call in range(3):
        lin.zero_grad()
        if call == 0:
            with pytest.warns(CompileWarning, match="retain_grad"):
                h, loss = compiled(x)
        else:  # (run eagerly from then on, without a word)
            h, loss = compiled(x)
        loss.backward()
        np.testing.assert_array_equal(h.grad.numpy(), expected)


def test_a_leaf_made_inside_gets_its_gradient_at_every_call():
    lin = nn.Linear(3, 2)

    def saliency(x):
        x_adv = x.detach().requires_grad_()
        (lin(x_adv) ** 2).sum().backward()
        return x_adv

    compiled = plugrad.compile(saliency)
    x = plugrad.randn(4, 3)
    expected = saliency(x).grad.numpy()
    for _ in range(3):
        got = _quietly(compiled, x).grad
        assert got is not None
        np.testing.assert_array_equal(got.numpy(), expected)
    with pytest.raises(plugrad.errors.GraphBreakError, match="made"):
        plugrad.compile(saliency, fullgraph=True)(x)


def test_a_result_whose_graph_reaches_only_a_leaf_made_inside_runs_eagerly():
    def f(x):
        return plugrad.ones(3, requires_grad=True) * x

    compiled = plugrad.compile(f)
    with pytest.warns(CompileWarning, match="made require grad"):
        compiled(plugrad.randn(3))
    x = plugrad.randn(3)
    y = compiled(x)
    assert y.requires_grad and y.grad_fn is not None
    assert y.tolist() == x.tolist()


class _Slotted:
    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t


@dataclasses.dataclass
class _Holder:
    t: object


@pytest.mark.parametrize(
    "make, read",
    [
        (lambda x: _Slotted(x * 2), lambda r: r.t),
        (lambda x: _Slotted(x), lambda r: r.t),  # the argument itself
        (lambda x: (x + 1, _Holder([[[[x * 2]]]])), lambda r: r[1].t[0][0][0][0]),
        (lambda x: (x * 2, collections.ChainMap({"a": [x * 2]})), lambda r: r[1]["a"][0]),
        (lambda x: {x * 2: "key"}, lambda r: next(iter(r))),
        (lambda x: collections.OrderedDict([(x * 2, 1)]), lambda r: next(iter(r))),
    ],
    ids=["slots", "slots holding the argument", "5 deep", "ChainMap", "dict key", "OD key"],
)
def test_a_result_holding_this_call_s_tensors_anywhere_is_never_the_capture_s(make, read):
    compiled = plugrad.compile(make)
    for i in range(4):
        x = plugrad.full((1,), float(i))
        assert read(_quietly(compiled, x)).tolist() == read(make(x)).tolist()


def test_a_result_holding_only_state_made_before_the_call_still_replays():
    model = nn.Linear(2, 2)
    holder = _Holder(model)

    def f(x):
        return model(x), holder

    compiled = plugrad.compile(f, fullgraph=True)
    for _ in range(3):
        y, held = compiled(plugrad.ones(1, 2))
        assert held is holder
        assert y.tolist() == model(plugrad.ones(1, 2)).tolist()
    assert compiled.captures == 1


_SETTINGS: dict = {"a": plugrad.full((), 2.0)}


def _reads_a_key_that_may_be_missing(x):
    return x * _SETTINGS.get("b", _SETTINGS["a"])


def _asks_whether_a_key_is_there(x):
    return x * 3 if "b" in _SETTINGS else x * 2


def _iterates_the_dict(x):
    y = x
    for value in _SETTINGS.values():
        y = y * value
    return y


class _Configured:
    def __init__(self):
        self.settings = {"a": plugrad.full((), 2.0)}

    def step(self, x):
        if "b" in self.settings:
            return x * self.settings["b"]
        return x * self.settings["a"]


@pytest.mark.parametrize(
    "program",
    [_reads_a_key_that_may_be_missing, _asks_whether_a_key_is_there, _iterates_the_dict],
    ids=["get with a default", "in", "iteration"],
)
@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.__setitem__("b", plugrad.full((), 5.0)),
        lambda d: d.pop("a"),
        lambda d: (d.__setitem__("b", d.pop("a")), d.__setitem__("a", plugrad.full((), 7.0))),
    ],
    ids=["key added", "key removed", "keys reordered"],
)
def test_a_key_added_to_or_removed_from_a_dict_the_code_reads_makes_the_plan_miss(program, change):
    _SETTINGS.clear()
    _SETTINGS["a"] = plugrad.full((), 2.0)
    compiled = plugrad.compile(program)
    x = plugrad.full((1,), 3.0)
    for _ in range(2):
        assert _quietly(compiled, x).tolist() == program(x).tolist()
    change(_SETTINGS)
    if program is not _reads_a_key_that_may_be_missing or "a" in _SETTINGS:
        for _ in range(2):
            assert _quietly(compiled, x).tolist() == program(x).tolist()


def test_a_key_added_to_a_dict_attribute_makes_a_method_s_plan_miss():
    holder = _Configured()
    compiled = plugrad.compile(holder.step)
    x = plugrad.full((1,), 3.0)
    assert [compiled(x).item() for _ in range(3)] == [6.0] * 3
    holder.settings["b"] = plugrad.full((), 5.0)
    assert compiled(x).item() == 15.0
    assert compiled.captures == 2


class _Scaled:
    mask = None  # a class default the object may shadow

    def __init__(self):
        self.shift = None

    def step(self, x):
        scale = getattr(self, "scale", None)
        if scale is not None:
            x = x * scale
        if hasattr(self, "offset"):
            x = x + self.offset
        if self.shift is not None:
            x = x - self.shift
        if self.mask is not None:
            x = x * self.mask
        return x


@pytest.mark.parametrize(
    "change",
    [
        lambda o: setattr(o, "scale", plugrad.full((), 5.0)),
        lambda o: setattr(o, "offset", plugrad.full((), 5.0)),
        lambda o: setattr(o, "shift", plugrad.full((), 5.0)),
        lambda o: setattr(o, "mask", plugrad.full((), 5.0)),
    ],
    ids=["getattr with a default", "hasattr", "None replaced", "class default shadowed"],
)
def test_an_attribute_missing_or_none_at_capture_and_set_later_makes_the_plan_miss(change):
    holder = _Scaled()
    compiled = plugrad.compile(holder.step)
    x = plugrad.full((1,), 3.0)
    assert [compiled(x).item() for _ in range(2)] == [3.0] * 2
    change(holder)
    assert compiled(x).tolist() == holder.step(x).tolist()
    assert compiled.captures == 2


class _MaybeBiased(nn.Module):
    def forward(self, x):
        if hasattr(self, "extra"):
            return x + self.extra
        return x * 2


def test_a_buffer_registered_after_capture_on_a_module_makes_the_plan_miss():
    model = _MaybeBiased()
    compiled = plugrad.compile(model)
    x = plugrad.full((1,), 3.0)
    assert [compiled(x).item() for _ in range(2)] == [6.0] * 2
    model.register_buffer("extra", plugrad.full((1,), 1.0))
    assert compiled(x).item() == 4.0


@pytest.mark.parametrize(
    "make",
    [
        lambda w, b: nn.Linear(2, 1).state_dict().__class__(weight=w, bias=b),
        lambda w, b: collections.defaultdict(list, weight=w, bias=b),
        lambda w, b: _Output(weight=w, bias=b),
    ],
    ids=["state_dict", "defaultdict", "dict subclass"],
)
def test_a_dict_subclass_argument_is_part_of_the_signature_by_its_items(make):
    def f(state, x):
        return x @ state["weight"].T + state["bias"]

    compiled = plugrad.compile(f, fullgraph=True)
    x = plugrad.ones(1, 2)
    for i in range(3):
        state = make(plugrad.full((1, 2), float(i)), plugrad.full((1,), 1.0))
        assert compiled(state, x).tolist() == f(state, x).tolist() == [[2.0 * i + 1]]
    assert compiled.captures == 1
    compiled(dict(make(plugrad.ones(1, 2), plugrad.ones(1))), x)  # a plain dict: its own plan
    assert compiled.captures == 2


_STATS = collections.OrderedDict(calls=0)


class _Logged:
    def __init__(self):
        self.history = [1.0]

    def step(self, x):
        return x * 2, self.history


@pytest.mark.parametrize(
    "make",
    [lambda: (lambda x: (x * 2, _STATS), _STATS), lambda: ((o := _Logged()).step, o.history)],
    ids=["global OrderedDict", "list attribute"],
)
def test_state_the_function_returns_is_that_same_object_at_every_replay(make):
    fn, state = make()
    compiled = plugrad.compile(fn, fullgraph=True)
    for _ in range(3):
        assert compiled(plugrad.ones(1))[1] is state
    assert compiled.captures == 1


def test_a_set_the_call_makes_is_a_new_set_at_every_replay():
    compiled = plugrad.compile(lambda x: (x * 2, {1, 2}), fullgraph=True)
    first = compiled(plugrad.ones(1))[1]
    first.add(3)
    for _ in range(2):
        assert compiled(plugrad.ones(1))[1] == {1, 2}


@pytest.mark.parametrize(
    "make",
    [lambda x: nn.Parameter(x * 2), lambda x: (x + 1, [nn.Parameter(x * 2)])],
    ids=["Parameter", "Parameter in a list"],
)
def test_a_tensor_subclass_the_call_makes_and_returns_keeps_its_class(make):
    compiled = plugrad.compile(make)
    for i in range(3):
        x = plugrad.full((2,), float(i))
        got, expected = _quietly(compiled, x), make(x)
        if isinstance(expected, tuple):
            got, expected = got[1][0], expected[1][0]
        assert type(got) is nn.Parameter and got.is_leaf and got.requires_grad
        assert got.tolist() == expected.tolist()
    with pytest.raises(plugrad.errors.GraphBreakError, match="Parameter it made"):
        plugrad.compile(make, fullgraph=True)(plugrad.ones(2))


def test_a_parameter_passed_in_and_returned_replays_as_itself():
    compiled = plugrad.compile(lambda p: (p, p * 2), fullgraph=True)
    p = nn.Parameter(plugrad.ones(2))
    for _ in range(3):
        q, y = compiled(p)
        assert q is p and y.tolist() == [2.0, 2.0]


_LR = 0.1
_CLIP = True
_CALLS = 0


def _hand_written_sgd(w, x):
    loss = (w * x).sum()
    (grad,) = plugrad.autograd.grad(loss, [w])
    with plugrad.no_grad():
        w.sub_(_LR * grad)
        if _CLIP:
            w.clamp_(-1.0, 1.0)
    return loss


def test_a_python_number_read_from_a_global_is_guarded_by_its_value():
    global _LR, _CLIP
    try:
        ws = [plugrad.zeros(2, requires_grad=True) for _ in range(2)]
        compiled = plugrad.compile(_hand_written_sgd)
        x = plugrad.tensor([3.0, -4.0])
        for step in range(6):
            _LR = 0.1 * (step + 1)  # a schedule written by hand
            _CLIP = step < 3
            compiled(ws[0], x)
            _hand_written_sgd(ws[1], x)
            assert ws[0].tolist() == ws[1].tolist()
        _LR = 0.1 * 6  # the same number in a new object: the plan still holds
        compiled(ws[0], x)
        assert compiled.captures == 6
    finally:
        _LR, _CLIP = 0.1, True


class _Scaler:
    def __init__(self):
        self.factor = 2.0

    def __call__(self, x):
        return x / self.factor


@pytest.mark.parametrize(
    "change, expected",
    [(3.0, [1.0]), (-0.0, [-math.inf]), (2, [1.5])],
    ids=["new value", "zero's sign", "int for float"],
)
def test_a_python_number_read_from_an_attribute_is_guarded_by_type_and_value(change, expected):
    scaler = _Scaler()
    compiled = plugrad.compile(scaler, fullgraph=True)
    x = plugrad.tensor([3.0])
    assert compiled(x).tolist() == [1.5]
    scaler.factor = 0.0
    assert compiled(x).tolist() == [math.inf]
    scaler.factor = change
    assert compiled(x).tolist() == expected


def _counting(x):
    global _CALLS
    _CALLS += 1
    return x * _CALLS


def test_a_function_that_changes_a_number_it_reads_captures_at_every_call():
    global _CALLS
    _CALLS = 0
    compiled = plugrad.compile(_counting)
    results = [compiled(plugrad.ones(1)).item() for _ in range(4)]
    assert results == [1.0, 2.0, 3.0, 4.0] and _CALLS == 4


class _Affine:
    def __init__(self):
        self.weight = plugrad.full((1,), 2.0)

    def __call__(self, x):
        return x * self.weight


def test_a_callable_object_s_attributes_are_guarded_as_a_method_s():
    affine = _Affine()
    compiled = plugrad.compile(affine, fullgraph=True)
    assert [compiled(plugrad.ones(1)).item() for _ in range(2)] == [2.0, 2.0]
    affine.weight = plugrad.full((1,), 5.0)
    assert compiled(plugrad.ones(1)).item() == 5.0
