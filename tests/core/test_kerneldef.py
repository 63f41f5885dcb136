"""Kernels for existing ops from other plugins: precedence, validation, and seeing who serves."""

from __future__ import annotations

import numpy as np
import pytest
from doubles import UnavailableBackend

import plugrad
from plugrad import registry
from plugrad.errors import BackendUnavailableError, PluginRegistrationError, UnknownOpError
from plugrad.kerneldef import KernelSource, kernel
from plugrad.opdef import op

# These tests are about plugin machinery; they pin the default device to numpy.
pytestmark = pytest.mark.usefixtures("on_numpy")


def tagged_matmul(tag: str, calls: list[str]):
    def matmul(xp, x1, x2, /):
        calls.append(tag)
        return xp.matmul(x1, x2)

    matmul.__qualname__ = f"matmul_{tag}"
    return matmul


def test_override_serves_a_builtin_op_and_keeps_its_gradients(plugin, registered) -> None:
    calls: list[str] = []
    fast = kernel("matmul", backend="numpy", fn=tagged_matmul("a", calls))
    registered(plugin(kernels=[fast]), "fast_a")
    a = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = plugrad.tensor([[0.5], [-1.0]], requires_grad=True)
    loss = (a @ b).sum()
    assert calls == ["a"]
    loss.backward()  # the built-in rules are unchanged
    np.testing.assert_allclose(a.grad.numpy(), [[0.5, -1.0], [0.5, -1.0]])
    np.testing.assert_allclose(b.grad.numpy(), [[4.0], [6.0]])
    source = plugrad.plugins.kernel_source("matmul", "numpy")
    assert (source.kind, source.plugin) == ("override", "fast_a")
    assert source.function.__qualname__ == "matmul_a"


def test_unregistering_the_override_restores_the_generic_kernel(plugin, registered) -> None:
    calls: list[str] = []
    fast = kernel("matmul", backend="numpy", fn=tagged_matmul("a", calls))
    registered(plugin(kernels=[fast]), "fast_a")
    plugrad.plugins.unregister("fast_a")
    plugrad.ones((2, 2)) @ plugrad.ones((2, 2))
    assert calls == []
    assert plugrad.plugins.kernel_source("matmul").kind == "generic"


@pytest.mark.parametrize(
    ("first", "second", "winner"),
    [
        ({}, {}, "second"),  # same mark: the plugin registered later wins
        ({"tryfirst": True}, {}, "first"),
        ({}, {"trylast": True}, "first"),
        ({"trylast": True}, {"trylast": True}, "second"),
        ({"tryfirst": True}, {"tryfirst": True}, "second"),
        ({"trylast": True}, {"tryfirst": True}, "second"),
    ],
)
def test_precedence_is_the_mark_then_registration_order(
    plugin, registered, first, second, winner
) -> None:
    calls: list[str] = []
    for name, marks in (("first", first), ("second", second)):
        declared = kernel("matmul", backend="numpy", fn=tagged_matmul(name, calls))
        registered(plugin(kernels=[declared], **marks), name)
    plugrad.ones((2, 2)) @ plugrad.ones((2, 2))
    assert calls == [winner]
    sources = plugrad.plugins.kernel_sources("matmul", "numpy")
    loser = "first" if winner == "second" else "second"
    assert [s.plugin for s in sources] == [winner, loser, "plugrad.plugins.matrix_products"]
    assert sources[0].mark == next(iter(first if winner == "first" else second), None)


def test_override_beats_the_ops_own_backend_kernel(plugin, registered) -> None:
    calls: list[str] = []

    def own(xp, x, /):
        calls.append("own")
        return x * 2

    scaled = op("scaled_kd", lambda xp, x, /: x * 2, kernels={"numpy": own})
    scaled = scaled.vjp(lambda xp, g, ans, x: g * 2)

    def faster(xp, x, /):
        calls.append("override")
        return x + x

    registered(plugin(ops=[scaled]), "scaled_owner")
    assert plugrad.plugins.kernel_source("scaled_kd").kind == "op"
    registered(plugin(kernels=[kernel(scaled, backend="numpy", fn=faster)]), "scaled_fast")
    assert plugrad.ops.scaled_kd(plugrad.ones(2)).tolist() == [2.0, 2.0]
    assert calls == ["override"]
    kinds = [s.kind for s in plugrad.plugins.kernel_sources("scaled_kd")]
    assert kinds == ["override", "op", "generic"]


def test_kernels_for_other_backends_are_accepted_and_unused(plugin, registered) -> None:
    calls: list[str] = []
    gpu = kernel("matmul", backend="cupy", fn=tagged_matmul("cupy", calls))
    registered(plugin(kernels=[gpu]), "gpu_only")
    plugrad.ones((2, 2)) @ plugrad.ones((2, 2))
    assert calls == []
    assert plugrad.plugins.kernel_source("matmul", "numpy").kind == "generic"
    (info,) = [p for p in plugrad.plugins.list_plugins() if p.name == "gpu_only"]
    assert [(k.op, k.backend) for k in info.kernels] == [("matmul", "cupy")]


def test_kernels_for_a_backend_installed_elsewhere_are_accepted(plugin, registered) -> None:
    elsewhere = kernel("matmul", backend="mlx", fn=lambda xp, x1, x2, /: xp.matmul(x1, x2))
    registered(plugin(kernels=[elsewhere]), "mlx_kernels")
    assert plugrad.plugins.kernel_source("matmul", "numpy").kind == "generic"


def test_a_plugin_may_override_an_op_of_another_third_party_plugin(plugin, registered) -> None:
    twice = op("twice_kd", lambda xp, x, /: x * 2, saves=()).vjp(lambda xp, g, ans, x: g * 2)
    registered(plugin(ops=[twice]), "twice_owner")
    faster = kernel("twice_kd", backend="numpy", fn=lambda xp, x, /: x + x)
    registered(plugin(kernels=[faster]), "twice_fast")
    x = plugrad.tensor([1.5], requires_grad=True)
    plugrad.ops.twice_kd(x).backward(plugrad.ones(1))
    assert x.grad.tolist() == [2.0]
    assert plugrad.plugins.kernel_source("twice_kd").plugin == "twice_fast"


def test_rules_see_the_backends_own_function_not_the_override(plugin, registered) -> None:
    # An override may call xp.matmul itself without recursing into itself.
    direct = kernel("matmul", backend="numpy", fn=lambda xp, x1, x2, /: xp.matmul(x1, x2))
    registered(plugin(kernels=[direct]), "recursive")
    assert (plugrad.ones((2, 2)) @ plugrad.ones((2, 2))).tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_a_kernel_gets_the_backends_plain_namespace_and_a_rule_the_extended_one(
    plugin, registered
) -> None:
    # As the plugrad_kernels docstring says: ops that plugins register are not in a
    # kernel's xp (a kernel never finds itself), while rules may call them as xp.NAME.
    seen: dict[str, object] = {}

    def twice_kernel(xp, x, /):
        seen["kernel"] = xp
        return xp.multiply(x, 2)

    def twice_rule(xp, g, ans, x):
        seen["rule"] = xp
        return g * 2

    twice = op("twice_ns", lambda xp, x, /: x * 2, saves=()).vjp(twice_rule)
    registered(plugin(ops=[twice]), "twice_ns_owner")
    registered(
        plugin(kernels=[kernel("twice_ns", backend="numpy", fn=twice_kernel)]), "twice_ns_fast"
    )
    x = plugrad.tensor([1.5], requires_grad=True)
    plugrad.ops.twice_ns(x).sum().backward()
    assert x.grad.tolist() == [2.0]
    backend = registry._state.backends["numpy"]
    assert seen["kernel"] is backend.namespace()
    assert not hasattr(seen["kernel"], "twice_ns") and not hasattr(seen["kernel"], "scatter_add")
    assert hasattr(seen["rule"], "twice_ns") and hasattr(seen["rule"], "scatter_add")
    assert seen["rule"].multiply is seen["kernel"].multiply


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        (
            kernel("matmull", backend="numpy", fn=lambda xp, x1, x2, /: x1),
            r"op 'matmull' .*no op named 'matmull' is registered; did you mean 'matmul'",
        ),
        (
            kernel("matmul", backend="numpy", fn=lambda xp, x, /: x),
            r"op 'matmul' .*fn has inputs \('x',\).*\(xp, x1, x2, /\)",
        ),
        (
            kernel("sum", backend="numpy", fn=lambda xp, x, /, *, axis=None: x),
            r"params \('axis',\).*'keepdims'",
        ),
        (kernel("matmul", backend="numpy", fn=42), "fn must be callable"),
        (
            kernel("matmul", backend="no such", fn=lambda xp, x1, x2, /: x1),
            "backend must be a backend name",
        ),
        (
            kernel("matmul", backend="numpy:0", fn=lambda xp, x1, x2, /: x1),
            r"backend must be a backend name such as 'numpy'; did you mean 'numpy'\?",
        ),
        (
            kernel("matmul", backend="nmupy", fn=lambda xp, x1, x2, /: x1),
            r"backend 'nmupy': no backend named 'nmupy' is registered; did you mean 'numpy'\?",
        ),
        (op("not_a_kernel", lambda xp, x, /: x), "return plugrad.kerneldef.kernel"),
    ],
)
def test_malformed_kernels_are_rejected_naming_plugin_and_op(
    plugin, snapshot, still_works, declared, message
) -> None:
    before = snapshot()
    with pytest.raises(PluginRegistrationError, match=message) as info:
        plugrad.plugins.register(plugin(kernels=[declared]), name="bad_kernels")
    assert str(info.value).startswith("plugin 'bad_kernels'")
    assert snapshot() == before
    still_works()


def test_two_kernels_for_one_op_and_backend_from_one_plugin_are_rejected(plugin, snapshot) -> None:
    before = snapshot()
    twice = [kernel("matmul", backend="numpy", fn=lambda xp, x1, x2, /: x1)] * 2
    with pytest.raises(PluginRegistrationError, match="two kernels for op 'matmul' on backend"):
        plugrad.plugins.register(plugin(kernels=twice), name="doubled")
    assert snapshot() == before


def test_kernel_source_errors() -> None:
    with pytest.raises(UnknownOpError, match="no op named 'nope'"):
        plugrad.plugins.kernel_source("nope")
    with pytest.raises(plugrad.errors.UnknownBackendError, match="no backend named 'tpu'"):
        plugrad.plugins.kernel_source("add", "tpu")


def test_kernel_source_accepts_functions_and_devices() -> None:
    device = plugrad.ones(1).device
    by_function = plugrad.plugins.kernel_source(plugrad.add, device)
    assert by_function == plugrad.plugins.kernel_source("add", "numpy")
    assert by_function.function is registry.find_op("add").kernel
    assert isinstance(by_function, KernelSource)
    assert "generic kernel xp.add from plugin 'plugrad.plugins.elementwise'" in str(by_function)
    assert "(plugrad " in str(by_function)


def test_kernel_source_on_an_unavailable_backend_says_why(monkeypatch) -> None:
    monkeypatch.setitem(
        registry._state.backends, "missing_kd", UnavailableBackend("missing_kd", "missing")
    )
    monkeypatch.setitem(registry._state.backend_owners, "missing_kd", "somewhere")
    with pytest.raises(BackendUnavailableError, match="pip install missing"):
        plugrad.plugins.kernel_source("add", "missing_kd")
