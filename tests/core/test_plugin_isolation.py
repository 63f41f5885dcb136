"""Every way a plugin can fail: a clear error naming it (and its distribution), and the rest
of plugrad unchanged and working afterwards.

Installed plugins are exercised for real, through the ``plugrad`` entry-point group of
fake distributions in a fresh interpreter; run-time registration in this process, with a
snapshot of every registry table before and after.
"""

from __future__ import annotations

import json
import types
from pathlib import Path

import numpy as np
import pytest

import plugrad
from plugrad import registry
from plugrad.errors import PluginLoadWarning, PluginRegistrationError
from plugrad.hookspecs import hookimpl
from plugrad.kerneldef import kernel
from plugrad.opdef import op

# -- installed plugins (entry points), in a fresh interpreter -----------------------------

GOOD = """
from plugrad.hookspecs import hookimpl
from plugrad.kerneldef import kernel
from plugrad.opdef import op

halve = op("halve_ep", lambda xp, x, /: x / 2, saves=(), method=True)
halve = halve.vjp(lambda xp, g, ans, x: g / 2)

def sum_direct(xp, x, /, *, axis=None, dtype=None, keepdims=False):
    return xp.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)

@hookimpl
def plugrad_ops():
    return [halve]

@hookimpl
def plugrad_kernels():
    return [kernel("sum", backend="numpy", fn=sum_direct)]
"""

PLUGINS = {
    # name: (module source, the reason it fails, or None)
    "broken": ("raise ImportError('needs libfoo')", "ImportError: needs libfoo"),
    "raises": (
        "from plugrad.hookspecs import hookimpl\n"
        "@hookimpl\ndef plugrad_ops():\n    raise RuntimeError('kaboom')\n",
        "plugrad_ops() raised RuntimeError: kaboom",
    ),
    "arity": (
        "from plugrad.hookspecs import hookimpl\nfrom plugrad.opdef import op\n"
        "@hookimpl\ndef plugrad_ops():\n"
        "    return [op('pair_ep', lambda xp, x, y, /: x).vjp(lambda xp, g, ans, x, y: g)]\n",
        "op 'pair_ep': it has 2 array input(s) ('x', 'y') but 1 backward rule(s)",
    ),
    "builtin": (
        "from plugrad.hookspecs import hookimpl\nfrom plugrad.opdef import op\n"
        "@hookimpl\ndef plugrad_ops():\n"
        "    return [op('exp', lambda xp, x, /: x).vjp(lambda xp, g, ans, x: g)]\n",
        "'exp' is a built-in op of plugrad",
    ),
    "unknown": (
        "from plugrad.hookspecs import hookimpl\nfrom plugrad.kerneldef import kernel\n"
        "@hookimpl\ndef plugrad_kernels():\n"
        "    return [kernel('expp', backend='numpy', fn=lambda xp, x, /: x)]\n",
        "no op named 'expp' is registered; did you mean 'exp'",
    ),
    "misspelled": (
        "from plugrad.hookspecs import hookimpl\n@hookimpl\ndef plugrad_op():\n    return []\n",
        "implements plugrad_op(), which plugrad does not have",
    ),
}

REPORT = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import plugrad
from plugrad.cli import info_report
x = plugrad.tensor([1.0, 2.0], requires_grad=True)
plugrad.sum(plugrad.exp(x) * x).backward()
print(json.dumps({
    "report": info_report(ops=True),
    "warnings": [str(w.message) for w in caught if w.category.__name__ == "PluginLoadWarning"],
    "grad": x.grad.tolist(),
    "ops": sorted(n for n in vars(plugrad.ops) if not n.startswith("_")),
}))
"""


@pytest.fixture
def installed(fake_distribution):
    """A site directory with one working plugin and one broken plugin per failure mode,
    each in its own distribution, and a later one whose op clashes with the working one."""
    site = fake_distribution("plugrad-good", "1.0", {"good": "goodplug"}, {"goodplug.py": GOOD})
    for name, (source, _) in PLUGINS.items():
        module = f"{name}plug"
        fake_distribution(f"plugrad-{name}", "0.1", {name: module}, {f"{module}.py": source})
    clash = GOOD.replace("plugrad_kernels", "_unused")
    later = fake_distribution(
        "plugrad-clash", "2.0", {"clash": "clashplug"}, {"clashplug.py": clash}, root="later"
    )
    return site, later


def run_report(python, *paths, **env) -> dict:
    result = python(REPORT, *paths, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_installed_plugins_each_fail_alone_and_the_rest_works(python, installed) -> None:
    out = run_report(python, *installed)
    report = out["report"]
    failed = {f["name"]: f for f in report["failed"]}
    assert set(failed) == {*PLUGINS, "clash"}
    for name, (_, reason) in PLUGINS.items():
        assert reason in failed[name]["reason"], name
        assert (failed[name]["distribution"], failed[name]["version"]) == (f"plugrad-{name}", "0.1")
        (warning,) = [w for w in out["warnings"] if f"'{name}'" in w]
        assert f"plugrad-{name} 0.1" in warning and reason in warning
    # A clash names both plugins and both distributions.
    assert (
        "plugin 'clash' (plugrad-clash 2.0), op 'halve_ep': the name is already registered by "
        "plugin 'good' (plugrad-good 1.0)"
    ) in failed["clash"]["reason"]
    # The working plugin, and plugrad itself, are unaffected.
    (good,) = [p for p in report["plugins"] if p["name"] == "good"]
    assert (good["distribution"], good["version"], good["builtin"]) == (
        "plugrad-good",
        "1.0",
        False,
    )
    assert good["ops"] == ["halve_ep"] and good["methods"] == ["halve_ep"]
    assert [(k["op"], k["backend"]) for k in good["kernels"]] == [("sum", "numpy")]
    assert report["ops"]["sum"]["numpy"]["kind"] == "override"
    assert report["ops"]["sum"]["numpy"]["distribution"] == "plugrad-good"
    assert report["ops"]["exp"]["numpy"]["kind"] == "generic"
    assert out["ops"] == sorted([*registry.op_names(), *registry._state.aliases, "halve_ep"])
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(out["grad"], np.exp(x) * (x + 1), rtol=1e-6)


def test_disabled_plugins_are_not_even_imported(python, installed) -> None:
    names = ",".join(PLUGINS) + ",clash"
    out = run_report(python, *installed, PLUGRAD_DISABLED_PLUGINS=names)
    assert out["report"]["failed"] == [] and out["warnings"] == []
    assert "halve_ep" in out["ops"]
    out = run_report(python, *installed, PLUGRAD_DISABLE_PLUGIN_AUTOLOAD="1")
    assert out["report"]["failed"] == [] and "halve_ep" not in out["ops"]
    assert all(p["builtin"] for p in out["report"]["plugins"])


def test_two_distributions_claiming_one_plugin_name(python, fake_distribution) -> None:
    first = fake_distribution("plugrad-one", "1.0", {"same": "oneplug"}, {"oneplug.py": GOOD})
    second = fake_distribution(
        "plugrad-two", "1.0", {"same": "twoplug"}, {"twoplug.py": "raise SystemExit"}, root="b"
    )
    out = run_report(python, first, second)
    (failed,) = out["report"]["failed"]
    assert failed["name"] == "same (plugrad-two 1.0)"
    assert "'same' is already taken by plugrad-one 1.0" in failed["reason"]
    assert "halve_ep" in out["ops"]


BACKEND = """
from plugrad.backend import Backend
from plugrad.hookspecs import hookimpl

class Twin(Backend):
    name = "twin"

    def unavailable_reason(self):
        return "twinlib is not installed"

@hookimpl
def plugrad_backends():
    return [Twin()]
"""

WARNINGS = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import plugrad
from plugrad.cli import info_report
print(json.dumps({
    "warnings": [
        [str(w.message), w.filename, w.lineno]
        for w in caught if w.category.__name__ == "PluginLoadWarning"
    ],
    "failed": info_report()["failed"],
}))
"""


def test_load_warnings_point_at_the_line_to_fix(python, fake_distribution) -> None:
    modules = {
        "broken": "import os\nraise ImportError('needs libfoo')\n",
        "raises": PLUGINS["raises"][0],
        "arity": PLUGINS["arity"][0],
    }
    site = None
    for name, source in modules.items():
        site = fake_distribution(
            f"plugrad-{name}", "0.1", {name: f"{name}plug"}, {f"{name}plug.py": source}
        )
    result = python(WARNINGS, site, PLUGRAD_DISABLED_PLUGINS="typo")
    assert result.returncode == 0, result.stderr
    places = {
        next(n for n in (*modules, "typo") if f"'{n}'" in message): (Path(file).name, line)
        for message, file, line in json.loads(result.stdout)["warnings"]
    }
    assert places == {
        "broken": ("brokenplug.py", 2),  # the line that raised
        "raises": ("raisesplug.py", 4),  # the line in the hook that raised
        "arity": ("arityplug.py", 3),  # the hook that returned the malformed op
        "typo": ("<string>", 5),  # the program's `import plugrad`
    }


def test_two_distributions_registering_one_backend_name(python, fake_distribution) -> None:
    first = fake_distribution("plugrad-twin", "1.0", {"twin": "twinplug"}, {"twinplug.py": BACKEND})
    second = fake_distribution(
        "plugrad-other", "2.0", {"other": "otherplug"}, {"otherplug.py": BACKEND}, root="b"
    )
    result = python(WARNINGS, first, second)
    assert result.returncode == 0, result.stderr
    (failed,) = json.loads(result.stdout)["failed"]
    assert failed["reason"] == (
        "plugin 'other' (plugrad-other 2.0): backend 'twin' is already registered by "
        "plugin 'twin' (plugrad-twin 1.0); choose another name (or uninstall one of the two)"
    )


# -- run-time registration, in this process -----------------------------------------------


def ops_plugin(*ops):
    return types.SimpleNamespace(plugrad_ops=hookimpl(lambda: list(ops)))


def good_op(name: str = "fine_iso"):
    return op(name, lambda xp, x, /: x * 3, saves=()).vjp(lambda xp, g, ans, x: g * 3)


def raising(hook: str):
    def fail():
        raise RuntimeError("kaboom")

    return types.SimpleNamespace(**{hook: hookimpl(fail)})


def with_extra_argument():
    def plugrad_ops(extra):
        return []

    return types.SimpleNamespace(plugrad_ops=hookimpl(plugrad_ops))


def good_op_bad_kernel():
    plugin = ops_plugin(good_op("half_good_iso"))
    plugin.plugrad_kernels = hookimpl(
        lambda: [kernel("nope_iso", backend="numpy", fn=lambda xp, x, /: x)]
    )
    return plugin


FAILURES = [
    (
        "hook raising",
        lambda: raising("plugrad_ops"),
        r"plugrad_ops\(\) raised RuntimeError: kaboom",
    ),
    ("kernel hook raising", lambda: raising("plugrad_kernels"), r"plugrad_kernels\(\) raised"),
    ("malformed op", lambda: ops_plugin(op("bad_iso", "not callable")), "kernel must be callable"),
    (
        "arity mismatch",
        lambda: ops_plugin(op("bad_iso", lambda xp, x, /: x).vjp(lambda xp, g, x: g)),
        r"op 'bad_iso': backward rule 0 \(for input 'x'\) has signature",
    ),
    (
        "clash with a built-in op",
        lambda: ops_plugin(op("matmul", lambda xp, x1, x2, /: x1).vjp(None, None)),
        r"'matmul' is a built-in op of plugrad.*plugrad_kernels\(\)",
    ),
    (
        "name of a plugrad function",
        lambda: ops_plugin(op("zeros_like", lambda xp, x, /: x).vjp(None)),
        r"op 'zeros_like': the name is taken by plugrad.zeros_like, which backward rules reach",
    ),
    (
        "duplicate op in one plugin",
        lambda: ops_plugin(good_op("dup_iso"), good_op("dup_iso")),
        r"op 'dup_iso': the name is already registered by plugin 'failing'",
    ),
    (
        "override of an unknown op",
        lambda: types.SimpleNamespace(
            plugrad_kernels=hookimpl(lambda: [kernel("nope_iso", backend="numpy", fn=abs)])
        ),
        "no op named 'nope_iso' is registered",
    ),
    ("rejected whole", good_op_bad_kernel, "no op named 'nope_iso'"),
    (
        "method clash with Tensor",
        lambda: ops_plugin(op("m_iso", lambda xp, x, /: x, method="backward").vjp(None)),
        r"Tensor method 'backward', but Tensor already has an attribute 'backward'",
    ),
    (
        "private method name",
        lambda: ops_plugin(op("m_iso", lambda xp, x, /: x, method="_hidden").vjp(None)),
        "method='_hidden'",
    ),
    (
        "dunder op name",  # was set on plugrad.ops (its __class__, __name__, ...)
        lambda: ops_plugin(op("__name__", lambda xp, x, /: x).vjp(None)),
        "op '__name__': the op name must be public",
    ),
    (
        "keyword op name",
        lambda: ops_plugin(op("lambda", lambda xp, x, /: x).vjp(None)),
        "op 'lambda': the op name must be a valid Python identifier, not a keyword",
    ),
    (
        "misspelled hook",
        lambda: types.SimpleNamespace(plugrad_op=hookimpl(lambda: [])),
        r"implements plugrad_op\(\), which plugrad does not have",
    ),
    ("no hooks", lambda: types.SimpleNamespace(plugrad_ops=lambda: []), "no function marked"),
    (
        "hook arguments",
        with_extra_argument,
        r"plugrad_ops\(extra\).*can not be found in the hookspec; plugrad's hooks take no",
    ),
]


@pytest.mark.parametrize(("case", "make", "message"), FAILURES, ids=[f[0] for f in FAILURES])
def test_a_rejected_runtime_plugin_changes_nothing(
    case, make, message, snapshot, still_works
) -> None:
    before = snapshot()
    with pytest.raises(PluginRegistrationError, match=message) as info:
        plugrad.plugins.register(make(), name="failing")
    assert "plugin 'failing'" in str(info.value)
    assert snapshot() == before
    assert not hasattr(plugrad.ops, "half_good_iso")
    still_works()
    # ... and the same name registers fine once the plugin is fixed.
    plugrad.plugins.register(ops_plugin(good_op()), name="failing")
    try:
        assert plugrad.ops.fine_iso(plugrad.ones(1)).tolist() == [3.0]
    finally:
        plugrad.plugins.unregister("failing")
    assert snapshot() == before


def test_a_failure_after_the_tables_were_swapped_in_leaves_nothing_behind(
    monkeypatch, snapshot, still_works
) -> None:
    # Installing the public functions failed after the new op table was in place: the
    # plugin was unregistered but its op stayed in the table.
    before = snapshot()
    install_methods = registry.install_methods

    def failing_once(*args, **kwargs):
        monkeypatch.setattr(registry, "install_methods", install_methods)
        raise RuntimeError("install failed")

    monkeypatch.setattr(registry, "install_methods", failing_once)
    with pytest.raises(RuntimeError, match="install failed"):
        plugrad.plugins.register(ops_plugin(good_op()), name="failing")
    assert registry.find_op("fine_iso") is None and not hasattr(plugrad.ops, "fine_iso")
    assert snapshot() == before
    still_works()


def test_clash_names_both_plugins_and_distributions(monkeypatch, registered, snapshot) -> None:
    monkeypatch.setitem(registry._state.distributions, "first_iso", ("dist-one", "1.0"))
    monkeypatch.setitem(registry._state.distributions, "second_iso", ("dist-two", "2.5"))
    registered(ops_plugin(good_op("twin_iso")), "first_iso")
    before = snapshot()
    with pytest.raises(PluginRegistrationError) as info:
        plugrad.plugins.register(ops_plugin(good_op("twin_iso")), name="second_iso")
    assert str(info.value) == (
        "plugin 'second_iso' (dist-two 2.5), op 'twin_iso': the name is already registered by "
        "plugin 'first_iso' (dist-one 1.0); choose another name (or uninstall one of the two)"
    )
    assert snapshot() == before


def test_registering_a_name_or_object_twice(registered, snapshot) -> None:
    plugin = ops_plugin(good_op("once_iso"))
    registered(plugin, "once")
    before = snapshot()
    with pytest.raises(
        PluginRegistrationError, match="a plugin named 'once' is already registered"
    ):
        plugrad.plugins.register(ops_plugin(good_op("other_iso")), name="once")
    with pytest.raises(PluginRegistrationError, match="already registered, as 'once'"):
        plugrad.plugins.register(plugin, name="again")
    assert snapshot() == before


def test_none_is_refused_as_no_plugin(snapshot) -> None:
    # It was refused as "plugin 'x' is blocked" (pluggy's meaning of None).
    before = snapshot()
    with pytest.raises(PluginRegistrationError, match=r"^None is not a plugin: register a module"):
        plugrad.plugins.register(None, name="x")
    with pytest.raises(PluginRegistrationError, match=r"^None is not a plugin"):
        plugrad.plugins.register(None)
    assert snapshot() == before


def test_builtin_plugins_cannot_be_unregistered(snapshot) -> None:
    before = snapshot()
    with pytest.raises(PluginRegistrationError, match="built into plugrad"):
        plugrad.plugins.unregister("plugrad.plugins.elementwise")
    assert snapshot() == before


def test_a_load_time_failure_is_reported_once_and_can_be_fixed(snapshot, still_works) -> None:
    before = snapshot()
    manager = registry._state.manager
    manager.register(raising("plugrad_ops"), name="late_iso")
    try:
        with pytest.warns(PluginLoadWarning, match=r"plugin 'late_iso'.*kaboom.*skipped"):
            registry._rebuild()
        assert "kaboom" in registry._state.failures["late_iso"]
        (info,) = [p for p in plugrad.plugins.list_plugins() if p.name == "late_iso"]
        assert "kaboom" in info.failure
        still_works()
        # Later rebuilds neither ask nor warn again (warnings are errors in this suite).
        plugrad.plugins.register(ops_plugin(good_op()), name="unrelated_iso")
        plugrad.plugins.unregister("unrelated_iso")
        with pytest.raises(PluginRegistrationError, match=r"it failed to load: .*kaboom"):
            plugrad.plugins.unregister("late_iso")
        # Registering a fixed plugin under the name clears the failure.
        plugrad.plugins.register(ops_plugin(good_op()), name="late_iso")
        assert "late_iso" not in registry._state.failures
        plugrad.plugins.unregister("late_iso")
    finally:
        registry._state.failures.pop("late_iso", None)
        if manager.has_plugin("late_iso"):
            manager.unregister(name="late_iso")
    assert snapshot() == before


def test_plugins_are_described_with_their_distribution_where_known() -> None:
    assert plugrad.kerneldef.describe_plugin("x", "dist", "1.0") == "plugin 'x' (dist 1.0)"
    assert plugrad.kerneldef.describe_plugin("x", None, None) == "plugin 'x'"
