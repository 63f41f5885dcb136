"""Attributes of the objects a compiled function reaches, guarded as it reads them.

Each test calls a function eagerly and compiled (enough calls that a plan is
replayed), changes something the function reads between calls, and compares
with the eager function: a replay must never use the value the capture saw.
"""

from __future__ import annotations

import collections
import enum

import numpy as np
import pytest

import plugrad
from plugrad import nn, optim


class _Config:
    def __init__(self, scale):
        self.scale = scale


class _Slotted:
    __slots__ = ("scale",)

    def __init__(self, scale):
        self.scale = scale


class _Scaler:
    """A callable object that is no module: ``__call__`` reads ``self.k``."""

    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return x * self.k

    def apply(self, x):
        return x * self.k


def _same(compiled, eager, *args, **kwargs):
    assert compiled(*args, **kwargs).tolist() == eager(*args, **kwargs).tolist()


# -- 1. attributes of objects passed as arguments ------------------------------------------


@pytest.mark.parametrize("make", [_Config, _Slotted], ids=["object", "slots"])
def test_an_argument_objects_attribute_is_guarded(make):
    def f(c, x):
        return x * c.scale

    compiled = plugrad.compile(f)
    cfg, x = make(1.0), plugrad.ones(2)
    for scale in (1.0, 1.0, 5.0, 5.0, 2):
        cfg.scale = scale
        _same(compiled, f, cfg, x)
    cfg.scale = plugrad.full((2,), 3.0)  # a tensor attribute, by identity
    _same(compiled, f, cfg, x)
    cfg.scale = plugrad.full((2,), 4.0)
    _same(compiled, f, cfg, x)
    assert compiled.captures == 5  # one per value: the same value replays


class _AllEqual:
    """Equal to every other of its kind, whatever it holds (as a config class may be)."""

    def __init__(self, scale):
        self.scale = scale

    def __eq__(self, other):
        return isinstance(other, _AllEqual)

    def __hash__(self):
        return 1


def test_an_equal_argument_object_that_holds_other_attributes_is_not_the_captured_one():
    # (an equal object found the first one's plan, whose guards read the first one)
    def f(c, x):
        return x * c.scale

    compiled = plugrad.compile(f)
    x = plugrad.ones(2)
    kept = _AllEqual(2.0)
    for scale in (2.0, 5.0, 2.0, 7.0):
        _same(compiled, f, _AllEqual(scale), x)
        _same(compiled, f, kept, x)  # the same object again replays
    assert compiled.captures == 5


def test_a_callable_objects_attribute_is_guarded():
    def f(fn, x):
        return fn(x)

    compiled = plugrad.compile(f)
    scaler, x = _Scaler(1.0), plugrad.ones(2)
    for k in (1.0, 1.0, 3.0, 3.0):
        scaler.k = k
        _same(compiled, f, scaler, x)
        _same(compiled, f, scaler.apply, x)  # a bound method passed


def test_a_keyword_a_default_and_a_list_argument_are_guarded():
    cfg = _Config(1.0)

    def by_default(x, c=cfg):
        return x * c.scale

    def by_keyword(x, *, c):
        return x * c.scale

    def in_a_list(cs, x):
        return x * cs[0].scale

    compiled = [plugrad.compile(f) for f in (by_default, by_keyword, in_a_list)]
    x = plugrad.ones(2)
    for scale in (1.0, 1.0, 4.0, 4.0):
        cfg.scale = scale
        _same(compiled[0], by_default, x)
        _same(compiled[1], by_keyword, x, c=cfg)
        _same(compiled[2], in_a_list, [cfg], x)


def test_a_distribution_argument_is_guarded():
    def f(d, x):
        return d.log_prob(x)

    compiled = plugrad.compile(f)
    d = plugrad.distributions.Normal(plugrad.zeros(2), plugrad.ones(2))
    x = plugrad.tensor([0.5, 1.0])
    _same(compiled, f, d, x)
    _same(compiled, f, d, x)
    d.loc = plugrad.full((2,), 3.0)
    _same(compiled, f, d, x)


def test_an_optimizer_replaced_on_a_state_object_argument():
    class State:
        pass

    def step(s, x):
        s.opt.zero_grad()
        loss = (s.model(x) ** 2).sum()
        loss.backward()
        s.opt.step()
        return loss

    weights = []
    for run in (step, plugrad.compile(step)):
        plugrad.manual_seed(0)
        s = State()
        s.model = nn.Linear(3, 1)
        s.opt = optim.SGD(s.model.parameters(), lr=0.1)
        x = plugrad.ones((4, 3))
        for _ in range(3):
            run(s, x)
        s.opt = optim.SGD(s.model.parameters(), lr=0.0)  # training frozen
        before = s.model.weight.tolist()
        run(s, x)
        assert s.model.weight.tolist() == before
        weights.append(before)
    assert weights[0] == weights[1]


# -- 2. attributes of submodules (not settings) --------------------------------------------


class _Mode(enum.Enum):
    SCALE = 1
    NEGATE = 2


class _Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.lin = nn.Linear(2, 2)
        self.mask = plugrad.ones(2)
        self.table = {"a": 1.0}
        self.mode = _Mode.SCALE
        self.pair = (plugrad.ones(2), 1.0)
        self.array = np.ones(2, dtype=np.float32)
        self.post = _Scaler(1.0)
        self._offset = _Config(0.0)

    def forward(self, x):
        y = self.lin(x) * self.cfg.scale * self.mask * self.table["a"] * self.pair[0]
        y = self.post(y) + self._offset.scale
        y = y * plugrad.tensor(self.array)
        return -y if self.mode is _Mode.NEGATE else y


class _Net(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.block = _Block(cfg)

    def forward(self, x):
        return self.block(x)


_CHANGES = [
    ("config", lambda net: setattr(net.block.cfg, "scale", 3.0)),
    ("tensor", lambda net: setattr(net.block, "mask", plugrad.zeros(2))),
    ("dict", lambda net: net.block.table.__setitem__("a", 2.0)),
    ("enum", lambda net: setattr(net.block, "mode", _Mode.NEGATE)),
    ("tuple", lambda net: setattr(net.block, "pair", (plugrad.full((2,), 2.0), 1.0))),
    ("numpy", lambda net: setattr(net.block, "array", np.full(2, 5.0, dtype=np.float32))),
    ("callable", lambda net: setattr(net.block.post, "k", 2.0)),
    ("private", lambda net: setattr(net.block._offset, "scale", 1.0)),
]


@pytest.mark.parametrize("how", ["Module.compile", "compile(net)", "a function calling net"])
@pytest.mark.parametrize("change", [c for _, c in _CHANGES], ids=[n for n, _ in _CHANGES])
def test_a_childs_attribute_is_guarded(how, change):
    plugrad.manual_seed(0)
    net = _Net(_Config(1.0))
    eager = lambda x: _Net.forward(net, x)
    if how == "Module.compile":
        net.compile()
        compiled = net
    elif how == "compile(net)":
        compiled = plugrad.compile(net)
    else:
        compiled = plugrad.compile(lambda x: net(x) + 0)
    x = plugrad.tensor([[1.0, -2.0]])
    # (without a graph: on a lazy backend a returned graph runs eagerly, as documented)
    with plugrad.no_grad():
        _same(compiled, eager, x)
        _same(compiled, eager, x)
        change(net)
        _same(compiled, eager, x)
        _same(compiled, eager, x)


# -- 3. a child's setting changed by the function after the child read it ------------------


def test_a_childs_setting_changed_after_use_is_guarded_as_read():
    class Mul(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = 1.0

        def forward(self, x):
            return x * self.k

    results = []
    for compiling in (False, True):
        model = nn.Sequential(Mul())

        def f(x, model=model):
            y = model(x)
            model[0].k = 5.0
            return y

        run = plugrad.compile(f) if compiling else f
        results.append([run(plugrad.ones(2)).tolist() for _ in range(3)])
    assert results[0] == results[1] == [[1.0, 1.0], [5.0, 5.0], [5.0, 5.0]]


def test_a_norms_momentum_changed_after_use():
    means = []
    for compiling in (False, True):
        model = nn.Sequential(nn.BatchNorm1d(3))

        def step(x, model=model):
            y = model(x)
            model[0].momentum = 0.5
            return y.detach()  # (on a lazy backend a returned graph runs eagerly)

        run = plugrad.compile(step) if compiling else step
        for i in range(3):
            run(plugrad.arange(12.0).reshape(4, 3) * (i + 1))
        means.append(model[0].running_mean.tolist())
    assert means[0] == pytest.approx(means[1])


# -- 4. a method's own attributes, reached from inside a compiled function -----------------


def test_a_methods_attributes_reached_from_a_compiled_function():
    scaler = _Scaler(1.0)
    inner = plugrad.compile(scaler.apply)
    outer = plugrad.compile(lambda x: inner(x) + 1)
    through_a_global = plugrad.compile(lambda x: scaler.apply(x) + 1)

    class Holder:
        def __init__(self):
            self.sub = scaler

        def run(self, x):
            return self.sub.apply(x) + 1

    holder = Holder()
    method = plugrad.compile(holder.run)
    x = plugrad.ones(2)
    for k in (1.0, 1.0, 2.0, 2.0):
        scaler.k = k
        expected = [k + 1] * 2
        assert inner(x).tolist() == [k] * 2
        assert outer(x).tolist() == expected
        assert through_a_global(x).tolist() == expected
        assert method(x).tolist() == expected


# -- 5. one tensor as the .grad of two parameters ------------------------------------------


def test_one_tensor_as_two_parameters_grads():
    grads = []
    for compiling in (False, True):
        a, b = nn.Parameter(plugrad.ones(3)), nn.Parameter(plugrad.ones(3))

        def step(x, a=a, b=b):
            ((a * x).sum() + (b * x * x).sum()).backward()

        run = plugrad.compile(step) if compiling else step
        for _ in range(3):
            run(plugrad.ones(3))
        shared = plugrad.zeros(3)
        a.grad = b.grad = shared
        run(plugrad.full((3,), 3.0))
        assert a.grad is b.grad is shared
        grads.append(shared.tolist())
    assert grads[0] == grads[1] == [12.0] * 3


_FUNCTION_SCALE = 1.0
_FUNCTION_SETTINGS = {"shift": 0.0}


class _ScaleByGlobal(plugrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * _FUNCTION_SCALE + _FUNCTION_SETTINGS["shift"]

    @staticmethod
    def backward(ctx, g):
        return g * _FUNCTION_SCALE


def test_the_globals_a_custom_functions_forward_and_backward_read_are_guarded():
    # (Fn.apply's forward and backward were no part of what the plan guarded: the
    # capture's values replayed)
    global _FUNCTION_SCALE

    def step(x):
        out = _ScaleByGlobal.apply(x).sum()
        out.backward()
        return out.detach()  # (no graph: a lazy backend runs a returned one eagerly)

    compiled = plugrad.compile(step)
    try:
        for scale, shift in ((1.0, 0.0), (1.0, 0.0), (7.0, 0.0), (7.0, 0.0), (7.0, 2.0)):
            _FUNCTION_SCALE = scale
            _FUNCTION_SETTINGS["shift"] = shift
            grads = []
            for function in (compiled, step):
                x = plugrad.tensor([1.0, 2.0], requires_grad=True)
                out = function(x)
                grads.append((out.item(), x.grad.tolist()))
            assert grads[0] == grads[1], (scale, shift)
    finally:
        _FUNCTION_SCALE = 1.0
        _FUNCTION_SETTINGS["shift"] = 0.0


# -- 4. class attributes of the program's classes -------------------------------------------


class _Settings:
    """A class used as a namespace of settings (never instantiated)."""

    SCALE = 2.0


class _ClassScaled(nn.Module):
    k = 2.0  # a class-level default the instances do not shadow

    def forward(self, x):
        return x * self.k


class _ClassDefaults:
    k = 2.0


class _ScaleByClassAttribute(plugrad.autograd.Function):
    k = 2.0

    @staticmethod
    def forward(ctx, x):
        return x * _ScaleByClassAttribute.k

    @staticmethod
    def backward(ctx, g):
        return g * _ScaleByClassAttribute.k


def _gradient_through_class_attribute(x):
    x = x.detach().requires_grad_(True)
    _ScaleByClassAttribute.apply(x).sum().backward()
    return x.grad


_module_reading_class_attribute = _ClassScaled()
_object_reading_class_attribute = _ClassDefaults()
_sequential_of_class_scaled = nn.Sequential(_ClassScaled(), nn.Identity())


@pytest.mark.parametrize(
    ("function", "cls", "name", "new"),
    [
        (lambda x: x * _Settings.SCALE, _Settings, "SCALE", 3.0),
        (lambda x: _module_reading_class_attribute(x), _ClassScaled, "k", 3.0),
        (lambda x: _module_reading_class_attribute(x), _ClassScaled, "forward",
         lambda self, x: x - 100),
        (lambda x: x * _object_reading_class_attribute.k, _ClassDefaults, "k", 3.0),
        (_sequential_of_class_scaled, _ClassScaled, "k", 3.0),
        (_sequential_of_class_scaled, _ClassScaled, "forward", lambda self, x: x - 100),
        (_gradient_through_class_attribute, _ScaleByClassAttribute, "k", 3.0),
    ],
    ids=["global-class", "module-instance", "module-forward", "object-instance",
         "child-of-compiled-sequential", "child-forward", "custom-function"],
)  # fmt: skip
def test_a_class_attribute_of_the_programs_class_changed_captures_anew(function, cls, name, new):
    # Only the compiled object's own class was looked up: the replays computed with the
    # class attribute (or forward) the capture read.
    compiled = plugrad.compile(function)
    x = plugrad.ones(2)
    before = function(x).tolist()
    assert compiled(x).tolist() == compiled(x).tolist() == before
    saved = cls.__dict__[name]
    try:
        setattr(cls, name, new)
        after = function(x).tolist()
        assert after != before
        assert compiled(x).tolist() == compiled(x).tolist() == after
        assert compiled.captures == 2
    finally:
        setattr(cls, name, saved)


def test_a_class_attribute_shadowed_on_an_object_or_read_by_a_class_method():
    class Defaults:
        k = 2.0

        @classmethod
        def scaled(cls, x):
            return x * cls.k

    config = Defaults()

    def f(x):
        return x * config.k + Defaults.scaled(x)

    compiled = plugrad.compile(f)
    x = plugrad.ones(2)
    for change in (
        lambda: setattr(config, "k", 5.0),  # shadows the class's on the object
        lambda: setattr(Defaults, "k", 7.0),  # read by the class method only
    ):
        assert compiled(x).tolist() == compiled(x).tolist() == f(x).tolist()
        change()
        assert compiled(x).tolist() == f(x).tolist()
    assert f(x).tolist() == [12.0, 12.0]


# -- 5. containers changed in place ------------------------------------------------------


def test_a_set_changed_in_place_captures_anew():
    # A set's items were not guarded ("double" in flags read the capture's answer).
    flags = set()

    def f(x):
        return x * 2 if "double" in flags else x

    compiled = plugrad.compile(f)
    x = plugrad.ones(2)
    assert compiled(x).tolist() == compiled(x).tolist() == [1.0, 1.0]
    flags.add("double")
    assert compiled(x).tolist() == compiled(x).tolist() == [2.0, 2.0]
    flags.discard("double")
    assert compiled(x).tolist() == [1.0, 1.0]


# -- 6. module settings ------------------------------------------------------------------


_Shape = collections.namedtuple("_Shape", "rows cols")


@pytest.mark.parametrize(
    "sizes",
    [(plugrad.Size([2, 4]), plugrad.Size([4, 2])), (_Shape(2, 4), _Shape(4, 2))],
    ids=["Size", "namedtuple"],
)
def test_a_setting_held_as_a_tuple_subclass_is_guarded(sizes):
    # Settings were plain tuples only: an Unflatten's Size changed replayed the old shape.
    model = nn.Sequential(nn.Linear(3, 8), nn.Unflatten(1, (1, 8)))
    model[1].unflattened_size = sizes[0]
    compiled = plugrad.compile(lambda x: model(x))
    x = plugrad.ones(1, 3)
    assert compiled(x).shape == compiled(x).shape == (1, 2, 4)
    model[1].unflattened_size = sizes[1]
    assert compiled(x).shape == model(x).shape == (1, 4, 2)
