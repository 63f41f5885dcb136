"""Checking mode: wrong kernel outputs and wrong gradients caught at the op boundary, naming
the plugin and the op; with checking off, the plain tables (nothing checked, nothing paid)."""

from __future__ import annotations

import types

import array_api_strict
import numpy as np
import pytest

import plugrad
from plugrad import registry
from plugrad.backend import Backend
from plugrad.errors import PluginOutputError
from plugrad.hookspecs import hookimpl
from plugrad.kerneldef import kernel
from plugrad.opdef import NamespaceKernel, op

# These tests are about plugin machinery; they pin the default device to numpy.
pytestmark = pytest.mark.usefixtures("on_numpy")


@pytest.fixture
def checks():
    plugrad.plugins.set_checks(True)
    yield
    plugrad.plugins.set_checks(False)


def unary(name: str, forward, rule=None, **options):
    """An op ``name`` whose generic kernel is ``forward(xp, x)`` and rule ``rule``."""
    definition = op(name, lambda xp, x, /: forward(xp, x), **options)
    return definition.vjp(rule or (lambda xp, g, ans, x: g))


def is_plain(device) -> bool:
    """Whether every kernel in the table is the plain one, with the namespace bound."""

    def plain(name: str) -> bool:
        function = plugrad.plugins.kernel_source(name).function
        bound = device.kernels[name]
        if isinstance(function, NamespaceKernel):
            return bound is function.bind(device.xp)
        return bound.func is function

    return all(plain(name) for name in registry.op_names())


def test_off_by_default_and_switching_back_restores_the_plain_tables() -> None:
    device = plugrad.ones(1).device
    rules = {name: registry.find_op(name).vjps for name in registry.op_names()}
    assert not plugrad.plugins.checks_enabled() and is_plain(device)
    with plugrad.plugins.checking():
        assert plugrad.plugins.checks_enabled() and not is_plain(device)
        assert registry.find_op("multiply").vjps != rules["multiply"]
        with plugrad.plugins.checking(False):
            assert is_plain(device)
        assert not is_plain(device)
    assert is_plain(device)
    assert {name: registry.find_op(name).vjps for name in registry.op_names()} == rules


def test_the_context_manager_restores_the_mode_after_an_error() -> None:
    with pytest.raises(ZeroDivisionError), plugrad.plugins.checking():
        1 / 0  # noqa: B018
    assert not plugrad.plugins.checks_enabled()
    with pytest.raises(TypeError, match="True or False"):
        plugrad.plugins.set_checks("yes")


def test_builtin_ops_pass_their_own_checks(checks) -> None:
    x = plugrad.tensor(
        [[0.5, 1.0, 2.0], [1.5, 0.25, 3.0]], dtype=plugrad.float64, requires_grad=True
    )
    w = plugrad.tensor([1.0, -2.0, 0.5], dtype=plugrad.float64, requires_grad=True)
    y = plugrad.sum(plugrad.log(x) * w / 2.0 - x**2) + plugrad.mean(x @ w) + (x.T @ x).sum()
    y = y + plugrad.maximum(x, 1.0).sum() + plugrad.where(x > 1, x, 0.0).sum()
    y.backward(create_graph=True)
    gx = x.grad
    x.grad = w.grad = None
    gx.sum().backward()
    assert x.grad is not None and x.grad.dtype == plugrad.float64


KERNELS = [
    ("a list", lambda xp, x: [1.0], "returned a list, not an array of backend 'numpy'"),
    ("object", lambda xp, x: np.array([None]), "dtype object, which plugrad does not know"),
    (
        "ints",
        lambda xp, x: xp.astype(x, xp.int64),
        "returned int64 for floating-point inputs, but the op is differentiable",
    ),
    ("override shape", None, r"returned shape \(1,\) and dtype float32, but the op's generic"),
    ("override dtype", None, r"dtype float64, but the op's generic kernel gives shape \(3,\)"),
    ("override values", None, "disagrees with the op's generic kernel: largest difference"),
]

OVERRIDES = {
    "override shape": lambda xp, x, /: x[:1] * 2,
    "override dtype": lambda xp, x, /: xp.astype(x * 2, xp.float64),
    "override values": lambda xp, x, /: x * 2 + 0.01,
}


@pytest.mark.parametrize(("case", "forward", "message"), KERNELS, ids=[k[0] for k in KERNELS])
def test_bad_kernel_output_names_plugin_and_op(
    monkeypatch, plugin, registered, checks, still_works, case, forward, message
) -> None:
    monkeypatch.setitem(registry._state.distributions, "culprit", ("plugrad-culprit", "0.3"))
    if case in OVERRIDES:
        registered(plugin(ops=[unary("double_chk", lambda xp, x: x * 2)]), "owner")
        fast = kernel("double_chk", backend="numpy", fn=OVERRIDES[case])
        registered(plugin(kernels=[fast]), "culprit")
    else:
        registered(plugin(ops=[unary("double_chk", forward)]), "culprit")
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(PluginOutputError, match=message) as info:
        plugrad.ops.double_chk(x)
    assert str(info.value).startswith("plugin 'culprit' (plugrad-culprit 0.3), op 'double_chk':")
    assert "numpy kernel" in str(info.value)
    still_works()


def test_an_override_within_rounding_of_the_generic_kernel_passes(plugin, registered, checks):
    registered(plugin(ops=[unary("double_chk", lambda xp, x: x * 2)]), "owner")
    # x + x and x * 2 agree exactly; x * (2 + eps) differs within rounding.
    nudged = kernel("double_chk", backend="numpy", fn=lambda xp, x, /: x * np.float32(2.0000002))
    registered(plugin(kernels=[nudged]), "nudged")
    x = plugrad.tensor([1e-30, 1.0, 3e30, float("inf"), float("nan")])
    y = plugrad.ops.double_chk(x)
    assert y.shape == (5,)


def test_an_override_whose_generic_kernel_cannot_run_is_not_compared(plugin, registered, checks):
    def generic(xp, x):
        raise NotImplementedError("needs a function this backend lacks")

    registered(plugin(ops=[unary("special_chk", generic)]), "owner")
    registered(
        plugin(kernels=[kernel("special_chk", backend="numpy", fn=lambda xp, x, /: x + 1)]), "fast"
    )
    assert plugrad.ops.special_chk(plugrad.ones(2)).tolist() == [2.0, 2.0]


@pytest.fixture
def checks_off():
    """Checking mode off, also in CI's checking-mode pass: these checks hold without it."""
    with plugrad.plugins.checking(False):
        yield


WRONG_KERNELS = [
    # A third-party kernel for a built-in op: compared with the op's generic kernel.
    ("exp", lambda xp, x, /: xp.sum(xp.exp(x)), (3,), r"shape \(\) and dtype float32"),
    ("exp", lambda xp, x, /: xp.exp(x)[None], (3,), r"shape \(1, 3\) and dtype float32"),
    ("exp", lambda xp, x, /: xp.astype(xp.exp(x), xp.float64), (3,), "dtype float64"),
    ("sum", lambda xp, x, /, *, axis=None, dtype=None, keepdims=False: x, (2, 3), r"\(2, 3\)"),
    ("multiply", lambda xp, x1, x2, /: x1, (1, 3), r"shape \(1, 3\)"),
]


@pytest.mark.parametrize(
    ("name", "fn", "shape", "message"), WRONG_KERNELS, ids=lambda v: getattr(v, "__name__", v)
)
def test_a_third_party_kernel_of_the_wrong_shape_is_refused_outside_checking_mode(
    monkeypatch, plugin, registered, checks_off, name, fn, shape, message
) -> None:
    monkeypatch.setitem(registry._state.distributions, "culprit", ("plugrad-culprit", "0.3"))
    registered(plugin(kernels=[kernel(name, backend="numpy", fn=fn)]), "culprit")
    x = plugrad.ones(shape)
    args = (x, plugrad.ones(2, 3)) if name == "multiply" else (x,)
    with pytest.raises(PluginOutputError, match=message) as info:
        getattr(plugrad, name)(*args)
    text = str(info.value)
    assert text.startswith(f"plugin 'culprit' (plugrad-culprit 0.3), op {name!r}: its override")
    assert "but the op's generic kernel gives shape" in text


def test_a_third_party_kernel_with_the_right_shape_passes_and_keeps_value_dependent_sizes(
    plugin, registered, checks_off
) -> None:
    fast = kernel("exp", backend="numpy", fn=lambda xp, x, /: xp.exp(x))
    registered(plugin(kernels=[fast]), "fast")
    nonzero = kernel("nonzero", backend="numpy", fn=lambda xp, x, /: xp.nonzero(x))
    registered(plugin(kernels=[nonzero]), "fast_nonzero")
    for _ in range(2):  # the second call takes the remembered contract
        assert plugrad.exp(plugrad.zeros(3)).tolist() == [1.0, 1.0, 1.0]
    # A size that depends on the values is compared with the reference on those inputs.
    assert plugrad.nonzero(plugrad.asarray([0.0, 1.0, 2.0]))[0].tolist() == [1, 2]
    assert plugrad.nonzero(plugrad.asarray([1.0, 0.0, 0.0]))[0].tolist() == [0]


def test_a_third_party_ops_own_kernels_are_held_to_its_generic_kernel(
    plugin, registered, checks_off
) -> None:
    times = op(
        "times_chk",
        lambda xp, x1, x2, /: x1 * x2,
        broadcasting=True,
        kernels={"numpy": lambda xp, x1, x2, /: x1},  # forgets to broadcast
    ).vjp(None, None)
    registered(plugin(ops=[times]), "culprit")
    assert plugrad.ops.times_chk(plugrad.ones(3), plugrad.ones(3)).shape == (3,)
    with pytest.raises(PluginOutputError, match=r"op 'times_chk': its op kernel .* \(3,\)"):
        plugrad.ops.times_chk(plugrad.ones(3), plugrad.ones(2, 3))


def test_an_ops_generic_kernel_defines_it_and_is_not_wrapped(
    plugin, registered, checks_off
) -> None:
    registered(plugin(ops=[unary("double_chk", lambda xp, x: x * 2)]), "owner")
    function = plugrad.plugins.kernel_source("double_chk").function
    assert plugrad.ones(1).device.kernels["double_chk"].func is function


def test_builtin_kernels_are_not_wrapped(checks_off) -> None:
    device = plugrad.ones(1).device
    assert is_plain(device)


RULES = [
    ("shape", lambda xp, g, ans, x: g[:1], r"shape \(1,\), but input 'x' has shape \(3,\)"),
    ("dtype", lambda xp, g, ans, x: xp.astype(g, xp.float64), "float64, but input 'x' has dtype"),
    ("none", lambda xp, g, ans, x: None, "returned None; a rule must return a gradient"),
    ("list", lambda xp, g, ans, x: [0.0], "returned a list, not an array of backend 'numpy'"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "rule", "message"), RULES, ids=[r[0] for r in RULES])
def test_bad_gradient_names_plugin_op_and_input(
    plugin, registered, checks, still_works, case, rule, message
) -> None:
    registered(plugin(ops=[unary("ident_chk", lambda xp, x: x * 1, rule)]), "culprit")
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = plugrad.ops.ident_chk(x)
    with pytest.raises(PluginOutputError, match=message) as info:
        y.backward(plugrad.ones_like(y))
    assert str(info.value).startswith(
        "plugin 'culprit', op 'ident_chk': backward rule 0 (for input 'x') returned"
    )
    assert x.grad is None  # a failed backward accumulates nothing
    still_works()


def test_a_raw_array_from_a_rule_under_create_graph_is_caught(plugin, registered, checks) -> None:
    registered(
        plugin(ops=[unary("raw_chk", lambda xp, x: x * 1, lambda xp, g, ans, x: np.ones(3))]), "raw"
    )
    x = plugrad.tensor([1.0, 2.0, 3.0], dtype=plugrad.float64, requires_grad=True)
    y = plugrad.ops.raw_chk(x)
    with pytest.raises(PluginOutputError, match="under create_graph=True, where it must return"):
        y.backward(plugrad.ones_like(y), create_graph=True)
    # Without create_graph the same rule is fine: raw arrays are what it gets and returns.
    plugrad.ops.raw_chk(x).backward(plugrad.ones_like(y))
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


def test_broadcast_shaped_gradients_are_accepted_for_broadcasting_ops(
    plugin, registered, checks
) -> None:
    scale = op("scale_chk", lambda xp, x, s, /: x * s, broadcasting=True)
    scale = scale.vjp(lambda xp, g, ans, x, s: g * s, lambda xp, g, ans, x, s: g * x)
    registered(plugin(ops=[scale]), "broadcasting")
    x = plugrad.ones((2, 3), requires_grad=True)
    s = plugrad.tensor([2.0], requires_grad=True)
    plugrad.ops.scale_chk(x, s).sum().backward()
    assert s.grad.tolist() == [6.0]


class StrictBackend(Backend):
    """array-api-strict arrays as a second backend, to hand the wrong backend's arrays back."""

    name = "strict_chk"

    def namespace(self):
        return array_api_strict

    def array_types(self):
        return (type(array_api_strict.asarray(0.0)),)

    def devices(self):
        return (array_api_strict.Device("CPU_DEVICE"),)

    def device_of(self, array):
        return array.device

    def to_numpy(self, array):
        return np.asarray(array)


def test_an_array_of_another_backend_is_caught(plugin, registered, checks) -> None:
    backend_plugin = types.SimpleNamespace(plugrad_backends=hookimpl(lambda: [StrictBackend()]))
    registered(backend_plugin, "strict_backend")
    other = plugrad.asarray(np.ones(3, dtype=np.float32), device="strict_chk")
    registered(plugin(ops=[unary("elsewhere_chk", lambda xp, x: other.array)]), "culprit")
    with pytest.raises(
        PluginOutputError, match=r"returned an array on '[^']+', but its inputs are on 'numpy'"
    ):
        plugrad.ops.elsewhere_chk(plugrad.ones(3))


def test_a_plugin_registered_during_checking_is_checked_and_restored(plugin, checks) -> None:
    doubled = unary("late_chk", lambda xp, x: [0.0])
    declared = doubled.vjps
    plugrad.plugins.register(plugin(ops=[doubled]), name="late")
    try:
        with pytest.raises(PluginOutputError, match="plugin 'late', op 'late_chk'"):
            plugrad.ops.late_chk(plugrad.ones(1))
        assert registry.find_op("late_chk").vjps != declared
    finally:
        plugrad.plugins.unregister("late")
    assert doubled.vjps == declared  # the declaration itself never changes


def test_the_environment_variable_turns_checking_on_at_import(python) -> None:
    code = (
        "import plugrad\n"
        "print(plugrad.plugins.checks_enabled(), "
        "plugrad.ones(1).device.kernels['exp'] is plugrad.ones(1).device.xp.exp)"
    )
    assert python(code, PLUGRAD_CHECK_PLUGINS="1").stdout.split() == ["True", "False"]
    assert python(code).stdout.split() == ["False", "True"]
