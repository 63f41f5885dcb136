"""Plugins, validation at registration, frozen dispatch tables and the generated namespace."""

from __future__ import annotations

import inspect
import types
from importlib.metadata import EntryPoint

import numpy as np
import pytest

import plugrad
from plugrad import plugin_manager, plugin_validation, registry
from plugrad.errors import PluginLoadWarning, PluginRegistrationError
from plugrad.hookspecs import hookimpl
from plugrad.opdef import op


def plugin_with(*ops, name: str = "test_plugin") -> types.SimpleNamespace:
    @hookimpl
    def plugrad_ops():
        return list(ops)

    return types.SimpleNamespace(plugrad_ops=plugrad_ops, __name__=name)


@pytest.fixture
def registered():
    """Register plugins for one test and always unregister them afterwards."""
    names: list[str] = []

    def register(plugin, name: str) -> str:
        names.append(registry.register_plugin(plugin, name=name))
        return names[-1]

    yield register
    for name in names:
        registry.unregister_plugin(name)


def test_builtins_arrive_through_pluggy_hooks() -> None:
    manager = registry._state.manager
    backend_plugins = [i.plugin_name for i in manager.hook.plugrad_backends.get_hookimpls()]
    op_plugins = [i.plugin_name for i in manager.hook.plugrad_ops.get_hookimpls()]
    assert "plugrad.backends.numpy_backend" in backend_plugins
    assert {"plugrad.plugins.elementwise", "plugrad.plugins.matrix_products"} <= set(op_plugins)
    assert registry._state.op_owners["multiply"] == "plugrad.plugins.elementwise"
    builtin = ("numpy", "cupy", "torch", "jax", "dask", "array_api_strict")
    assert registry.backend_names()[: len(builtin)] == builtin


def test_per_op_path_never_calls_pluggy_or_namespace_discovery(monkeypatch) -> None:
    def forbidden(*args, **kwargs):
        raise AssertionError("called on the per-op path")

    # Any use of plugrad's plugin manager, its hooks or table building now fails.
    monkeypatch.setattr(registry._state, "manager", None)
    monkeypatch.setattr(plugin_validation, "_plugin_contributions", forbidden)
    monkeypatch.setattr(registry, "_rebuild", forbidden)
    import array_api_compat

    monkeypatch.setattr(array_api_compat, "array_namespace", forbidden)
    x = plugrad.tensor([[1.0, 2.0]], requires_grad=True)
    loss = plugrad.sum(plugrad.exp(x @ x.T) * 2 - x.mean())
    loss.backward(create_graph=True)
    assert x.grad.shape == (1, 2)


def test_kernel_tables_are_plain_dicts_of_every_op() -> None:
    device = plugrad.ones(1).device
    assert type(device.kernels) is dict
    assert set(device.kernels) == set(registry.op_names())


def test_generated_functions_have_the_kernel_signature() -> None:
    # PyTorch's dim and keepdim may come by position (torch.sum(x, 1)); the standard's
    # parameters keep their kinds.
    assert str(inspect.signature(plugrad.sum)) == (
        "(x, /, dim=<unset>, keepdim=<unset>, *, axis=None, dtype=None, keepdims=False, out=None)"
    )
    assert str(inspect.signature(plugrad.add)) == "(x1, x2, /, *, alpha=1, out=None)"
    assert str(inspect.signature(plugrad.reshape)) == "(x, /, shape, *, copy=None)"
    assert plugrad.ops.add is plugrad.add and plugrad.add.__module__ == "plugrad"
    assert plugrad.add.__doc__ == "Add ``x1 + x2`` element-wise, broadcasting."
    with pytest.raises(TypeError, match="axes"):
        plugrad.sum(plugrad.ones(2), axes=0)


def test_runtime_plugin_adds_a_differentiable_op(registered) -> None:
    cube = op("cube_test", lambda xp, x, /: x * x * x, saves=("x",))
    cube = cube.vjp(lambda xp, g, ans, x: 3 * x * x * g)
    registered(plugin_with(cube), "cubes")
    assert not hasattr(plugrad, "cube_test"), "third-party ops stay out of the top namespace"
    x = plugrad.tensor([2.0], requires_grad=True)
    y = plugrad.ops.cube_test(x)
    assert repr(y.grad_fn) == "<CubeTestBackward>"
    y.backward(plugrad.ones_like(y))
    assert x.grad.tolist() == [12.0]


def test_rules_can_use_any_registered_op_in_both_modes(registered) -> None:
    # The standard has no "twice"; a rule may still call it, as xp.twice_test.
    twice = op("twice_test", lambda xp, x, /: x * 2, saves=()).vjp(lambda xp, g, ans, x: g * 2)
    cube = op("cube_via_twice", lambda xp, x, /: x * x * x, saves=("x",))
    cube = cube.vjp(lambda xp, g, ans, x: xp.twice_test(x * x * g) + x * x * g)
    registered(plugin_with(twice, cube), "rule_namespace_plugin")
    x = plugrad.tensor(2.0, dtype=plugrad.float64, requires_grad=True)
    plugrad.ops.cube_via_twice(x).backward(create_graph=True)
    assert x.grad.item() == 12.0
    first = x.grad
    x.grad = None
    first.backward()
    assert x.grad.item() == 12.0  # d/dx 3x^2 = 6x


def test_rebuilding_keeps_backend_objects(registered) -> None:
    before = plugrad.ones(1).backend
    registered(plugin_with(op("noop_test", lambda xp, x, /: x, saves=()).vjp(None)), "rebuild")
    assert registry.get_backend(before.name) is before is plugrad.ones(1).backend


def test_unregister_removes_the_op() -> None:
    square = op("square_test", lambda xp, x, /: x * x, saves=("x",))
    square = square.vjp(lambda xp, g, ans, x: 2 * x * g)
    registry.register_plugin(plugin_with(square), name="squares")
    function = plugrad.ops.square_test
    registry.unregister_plugin("squares")
    assert not hasattr(plugrad.ops, "square_test")
    with pytest.raises(LookupError, match="no longer registered"):
        function(plugrad.ones(1))
    with pytest.raises(PluginRegistrationError, match="no plugin named"):
        registry.unregister_plugin("squares")
    with pytest.raises(PluginRegistrationError, match="built into plugrad"):
        registry.unregister_plugin("plugrad.plugins.elementwise")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: op("bad", lambda xp, x, y, /: x).vjp(lambda xp, g, ans, x, y: g), "2 array input"),
        (lambda: op("bad", lambda xp, x, /: x).vjp(lambda g: g), "backward rule 0"),
        (lambda: op("bad", 42), "kernel must be callable"),
        (lambda: op("bad", lambda x: x), "takes no array inputs"),
        (lambda: op("bad", lambda xp, x, /, **kw: x), r"no \*\*kwargs"),
        (lambda: op("bad", lambda xp, x, /, *xs: x), r"no other positional"),
        (lambda: op("bad", lambda xp, x, y, /: x, sequence=True), "sequence input"),
        (lambda: op("bad", lambda xp, x, /, d=None: x, dtype_params=("e",)), "dtype_params"),
        (lambda: op("bad", lambda xp, x, /: x, nondifferentiable_outputs=(0,)), "multiple_outputs"),
        (lambda: op("bad", lambda xp, x, /: x, output_names=("a b",)), "identifiers"),
        (lambda: op("bad", lambda xp, *xs: xs[0]).vjp(None), "sequence input needs a rule"),
        (lambda: op("bad name", lambda xp, x, /: x).vjp(lambda xp, g, ans, x: g), "identifier"),
        (lambda: op("bad", lambda xp, x, /: x, saves=("y",)).vjp(lambda xp, g, ans, x: g), "saves"),
        (lambda: op("bad", lambda xp, x, /: x, differentiable=False).vjp(None), "=False"),
        (
            lambda: op("add", lambda xp, x, /: x).vjp(lambda xp, g, ans, x: g),
            r"'add' is a built-in op of plugrad \(from 'plugrad\.plugins\.elementwise'\)",
        ),
        (lambda: "not an op", "return ops made with"),
    ],
)  # fmt: skip
def test_malformed_ops_are_rejected_naming_plugin_and_op(make, message) -> None:
    before = (registry.op_names(), dict(plugrad.ones(1).device.kernels))
    with pytest.raises(PluginRegistrationError, match=message) as info:
        registry.register_plugin(plugin_with(make()), name="broken_plugin")
    assert "broken_plugin" in str(info.value)
    assert (registry.op_names(), dict(plugrad.ones(1).device.kernels)) == before
    assert not registry._state.manager.has_plugin("broken_plugin")


def test_clash_between_two_plugins_names_both(registered) -> None:
    first = op("twin_test", lambda xp, x, /: x).vjp(lambda xp, g, ans, x: g)
    second = op("twin_test", lambda xp, x, /: x).vjp(lambda xp, g, ans, x: g)
    registered(plugin_with(first), "first_plugin")
    with pytest.raises(PluginRegistrationError, match=r"second_plugin.*first_plugin"):
        registry.register_plugin(plugin_with(second), name="second_plugin")


def test_a_plugin_op_or_alias_named_like_a_builtin_alias_is_the_plugins_fault() -> None:
    # plugrad.dot is another name of the built-in matmul: a plugin op named "dot" was
    # blamed on plugrad's own plugin, which stopped plugrad loading when installed.
    named_dot = op("dot", lambda xp, x, /: xp.abs(x)).vjp(lambda xp, g, ans, x: g * xp.sign(x))
    aliased = op("my_clamp_test", lambda xp, x, /: x, aliases=("clamp",)).vjp(
        lambda xp, g, ans, x: g
    )
    before = registry.op_names()
    for plugin, message in (
        (named_dot, "plugin 'mine', op 'dot': 'dot' is plugrad's own name"),
        (
            aliased,
            "plugin 'mine', op 'my_clamp_test': it declares the alias 'clamp', but op 'clip'",
        ),
    ):
        with pytest.raises(PluginRegistrationError, match=message):
            registry.register_plugin(plugin_with(plugin), name="mine")
        assert registry.op_names() == before and not registry._state.manager.has_plugin("mine")
    # Whichever comes first in the table, the plugin's alias is the one refused.
    ops = {"my_clamp_test": plugin_validation._registered(aliased, "mine"),
           "clip": registry._state.ops["clip"]}  # fmt: skip
    owners = {"my_clamp_test": "mine", "clip": registry._state.op_owners["clip"]}
    ours = set(plugin_manager.builtin_plugin_names())
    try:
        with pytest.warns(PluginLoadWarning, match="op 'my_clamp_test', alias 'clamp': .*own name"):
            assert plugin_validation.collect_aliases(ops, owners, ours)["clamp"] == "clip"
    finally:
        registry._state.failures.pop("mine", None)
    # Found at load time (an installed plugin): it is skipped, and plugrad keeps working.
    registry._state.manager.register(plugin_with(named_dot), name="dot_loaded")
    try:
        with pytest.warns(PluginLoadWarning, match="dot_loaded.*own name.*plugin skipped"):
            registry._rebuild()
        assert not registry._state.manager.has_plugin("dot_loaded")
        assert plugrad.dot(plugrad.ones(2), plugrad.ones(2)).item() == 2.0
    finally:
        registry._state.failures.pop("dot_loaded", None)


def test_failing_hook_in_a_runtime_plugin_raises_and_changes_nothing() -> None:
    @hookimpl
    def plugrad_ops():
        raise RuntimeError("boom")

    before = registry.op_names()
    with pytest.raises(
        PluginRegistrationError, match=r"plugin 'boom': plugrad_ops\(\) raised RuntimeError: boom"
    ) as info:
        registry.register_plugin(types.SimpleNamespace(plugrad_ops=plugrad_ops), name="boom")
    assert isinstance(info.value.__cause__, RuntimeError)
    assert registry.op_names() == before
    assert not registry._state.manager.has_plugin("boom")


def test_backend_specific_kernel_takes_precedence(registered) -> None:
    calls = []

    def numpy_kernel(xp, x, /):
        calls.append("numpy")
        return x * 2

    scaled = op("scaled_test", lambda xp, x, /: x * 2, kernels={"numpy": numpy_kernel})
    scaled = scaled.vjp(lambda xp, g, ans, x: g * 2)
    registered(plugin_with(scaled), "scaled_plugin")
    assert plugrad.ops.scaled_test(plugrad.ones(2, device="numpy")).tolist() == [2.0, 2.0]
    assert calls == ["numpy"]
    if "array_api_strict" in plugrad.backends.available():
        x = plugrad.ones(2, device="array_api_strict")
        assert plugrad.ops.scaled_test(x).tolist() == [2.0, 2.0]
        assert calls == ["numpy"], "other backends keep the generic kernel"


@pytest.mark.parametrize(
    ("key", "meant"),
    [("nmupy", "numpy"), ("NumPy", "numpy"), ("np", "numpy"), ("torhc", "torch"),
     ("jaxx", "jax"), ("cupy:0", "cupy"), ("array-api-strict", "array_api_strict")],
)  # fmt: skip
def test_a_misspelled_backend_in_kernels_is_refused_naming_the_one_meant(
    snapshot, key, meant
) -> None:
    # The op quietly ran its generic kernel on numpy: the backend-specific one was never used.
    scaled = op("scaled_typo", lambda xp, x, /: x * 2, kernels={key: lambda xp, x, /: x + x})
    before = snapshot()
    with pytest.raises(PluginRegistrationError, match=f"did you mean '{meant}'") as info:
        registry.register_plugin(plugin_with(scaled.vjp(lambda xp, g, ans, x: g * 2)), "typo")
    assert str(info.value).startswith("plugin 'typo', op 'scaled_typo': ")
    assert repr(key) in str(info.value)
    assert snapshot() == before


def test_kernels_for_backends_not_registered_here_are_accepted(registered) -> None:
    # A plugin may ship kernels for a backend installed elsewhere (a third-party one).
    kernels = {"mlx": lambda xp, x, /: x + x, "max": lambda xp, x, /: x + x}
    scaled = op("scaled_elsewhere", lambda xp, x, /: x * 2, kernels=kernels)
    registered(plugin_with(scaled.vjp(lambda xp, g, ans, x: g * 2)), "elsewhere")
    assert plugrad.ops.scaled_elsewhere(plugrad.ones(2)).tolist() == [2.0, 2.0]


@pytest.mark.parametrize(
    ("name", "meant"),
    [("numpy", None), ("mlx", None), ("max", None), ("numba", None), ("cupy_rocm", None),
     ("nupmy", "numpy"), ("numpyy", "numpy"), ("nmpy", "numpy"), ("Torch", "torch"),
     ("cp", "cupy"), ("jnp", "jax"), ("pytorch", "torch"), ("ArrayAPIStrict", "array_api_strict")],
)  # fmt: skip
def test_misspelled_backend_takes_only_near_misses_for_typos(name, meant) -> None:
    from plugrad.kerneldef import misspelled_backend

    names = ["numpy", "cupy", "torch", "jax", "dask", "array_api_strict"]
    assert misspelled_backend(name, names) == meant


def test_broken_entry_point_is_reported_and_skipped(monkeypatch) -> None:
    broken = EntryPoint("broken_ep", "plugrad_no_such_module:plugin", "plugrad")
    monkeypatch.setattr(plugin_manager, "entry_points", lambda group: [broken])
    failures: dict[str, str] = {}
    with pytest.warns(PluginLoadWarning, match="broken_ep.*failed to load"):
        manager = plugin_manager.create_plugin_manager(failures)
    assert "ModuleNotFoundError" in failures["broken_ep"]
    assert manager.has_plugin("plugrad.plugins.elementwise")


def test_entry_point_loading_can_be_disabled(monkeypatch) -> None:
    loaded = []

    class Recorder(EntryPoint):
        def load(self):
            loaded.append(self.name)
            return types.ModuleType(self.name)  # distinct objects, as pluggy needs

    monkeypatch.setattr(
        plugin_manager,
        "entry_points",
        lambda group: [Recorder("a", "m:a", "plugrad"), Recorder("b", "m:b", "plugrad")],
    )
    monkeypatch.setenv("PLUGRAD_DISABLED_PLUGINS", "a")
    plugin_manager.create_plugin_manager({})
    assert loaded == ["b"]
    monkeypatch.setenv("PLUGRAD_DISABLED_PLUGINS", "a, typo")
    loaded.clear()
    with pytest.warns(PluginLoadWarning, match=r"names 'typo', which no installed plugin"):
        plugin_manager.create_plugin_manager({})
    assert loaded == ["b"]
    monkeypatch.delenv("PLUGRAD_DISABLED_PLUGINS")
    for value in ("1", "true", "YES", "on"):
        monkeypatch.setenv("PLUGRAD_DISABLE_PLUGIN_AUTOLOAD", value)
        loaded.clear()
        plugin_manager.create_plugin_manager({})
        assert loaded == [], value
    for value in ("", "0", "false", "No", "off"):
        monkeypatch.setenv("PLUGRAD_DISABLE_PLUGIN_AUTOLOAD", value)
        loaded.clear()
        plugin_manager.create_plugin_manager({})
        assert loaded == ["a", "b"], value
    monkeypatch.setenv("PLUGRAD_DISABLE_PLUGIN_AUTOLOAD", "maybe")
    loaded.clear()
    with pytest.warns(PluginLoadWarning, match="'maybe' is not understood"):
        plugin_manager.create_plugin_manager({})
    assert loaded == []


def test_broken_third_party_plugin_at_load_time_is_skipped(monkeypatch) -> None:
    bad = op("bad_arity", lambda xp, x, y, /: x).vjp(lambda xp, g, ans, x, y: g)
    good = op("good_op_test", lambda xp, x, /: x * 1, saves=()).vjp(lambda xp, g, ans, x: g)
    registry._state.manager.register(plugin_with(bad), name="bad_loaded")
    registry._state.manager.register(plugin_with(good), name="good_loaded")
    try:
        with pytest.warns(PluginLoadWarning, match="bad_loaded.*bad_arity"):
            registry._rebuild()
        assert "bad_loaded" in registry._state.failures
        # Rejected whole and for good: no later rebuild asks it (or warns about it) again.
        assert not registry._state.manager.has_plugin("bad_loaded")
        assert plugrad.ops.good_op_test(plugrad.ones(1)).tolist() == [1.0]
        assert not hasattr(plugrad.ops, "bad_arity")
    finally:
        registry._state.failures.pop("bad_loaded", None)
        registry.unregister_plugin("good_loaded")
    np.testing.assert_array_equal((plugrad.ones(2) + 1).numpy(), [2.0, 2.0])


def test_the_namespace_lists_each_public_name_once() -> None:
    assert len(plugrad.__all__) == len(set(plugrad.__all__))
    assert all(hasattr(plugrad, name) for name in plugrad.__all__)


def test_every_public_module_has_each_name_its_all_lists() -> None:
    # ``from plugrad.<module> import *`` fails on a name listed but missing (a comment
    # that became a string once).
    import importlib
    import pkgutil

    checked = 0
    for info in pkgutil.walk_packages(plugrad.__path__, "plugrad."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an extra that is not installed (mpi4py, graphviz, ...)
            continue
        missing = [name for name in getattr(module, "__all__", ()) if not hasattr(module, name)]
        assert not missing, f"{info.name}.__all__ lists names it lacks: {missing}"
        checked += 1
    assert checked > 20
