"""Listing what is loaded: plugins with distributions and contributions, and backends."""

from __future__ import annotations

import types

import pluggy
import pytest
from doubles import UnavailableBackend

import plugrad
from plugrad import registry
from plugrad.backend import Backend
from plugrad.errors import BackendUnavailableError
from plugrad.hookspecs import hookimpl
from plugrad.kerneldef import kernel
from plugrad.opdef import op

# These tests are about plugin machinery; they pin the default device to numpy.
pytestmark = pytest.mark.usefixtures("on_numpy")


class Broken(Backend):
    name = "broken_inv"

    def unavailable_reason(self):
        raise OSError("driver exploded")


class Listed(Backend):
    """A backend whose library imports: listing it reads its devices."""

    def namespace(self):
        return types.SimpleNamespace()


class NotYetUsed(Listed):
    name = "lazy_inv"

    def devices(self):
        return ("gpu0", "gpu1")

    def kernels(self):
        raise AssertionError("listing must not build a backend's kernel table")


class NoDevices(Listed):
    name = "nodevices_inv"

    def devices(self):
        raise RuntimeError("no device found")


class BrokenLibrary(Backend):
    name = "brokenlib_inv"
    library = "brokenlib"

    def namespace(self):
        raise ImportError("libbroken.so: cannot open shared object file")


class EmptyDevices(Listed):
    name = "nodevice_list_inv"
    library = "emptylib"

    def devices(self):
        return ()


def backends_plugin(*backends):
    return types.SimpleNamespace(plugrad_backends=hookimpl(lambda: list(backends)))


def test_builtin_plugins_are_listed_in_order_with_their_contributions() -> None:
    plugins = plugrad.plugins.list_plugins()
    builtin = registry.builtin_plugin_names()
    assert tuple(p.name for p in plugins[: len(builtin)]) == builtin
    listed = {p.name: p for p in plugins}
    numpy_backend = listed["plugrad.backends.numpy_backend"]
    assert numpy_backend.backends == ("numpy",) and numpy_backend.ops == ()
    assert {"add", "exp", "multiply"} <= set(listed["plugrad.plugins.elementwise"].ops)
    assert all(p.builtin and p.distribution == "plugrad" for p in plugins if p.builtin)
    assert all(p.version == plugrad.__version__ for p in plugins if p.builtin)
    assert sorted(op for p in plugins for op in p.ops) == sorted(registry.op_names())
    # Every method an op became, not one of them (it listed add_ for add, sub and sub_).
    methods = listed["plugrad.plugins.elementwise"].methods
    assert {"add", "add_", "sub", "subtract", "sub_", "exp", "exp_"} <= set(methods)


def test_a_runtime_plugin_from_an_installed_distribution_is_attributed_to_it(registered) -> None:
    module = types.ModuleType("pluggy.plugrad_inventory_test")  # pluggy is installed
    module.plugrad_ops = hookimpl(
        lambda: [op("dist_inv", lambda xp, x, /: x, saves=()).vjp(lambda xp, g, ans, x: g)]
    )
    assert registered(module, None) == "pluggy.plugrad_inventory_test"  # the module's name
    (info,) = [p for p in plugrad.plugins.list_plugins() if p.ops == ("dist_inv",)]
    assert (info.distribution, info.version) == ("pluggy", pluggy.__version__)
    assert not info.builtin and info.failure is None
    assert plugrad.plugins.kernel_source("dist_inv").distribution == "pluggy"


def test_a_plugin_of_no_distribution_has_none(plugin, registered) -> None:
    registered(plugin(ops=[op("local_inv", lambda xp, x, /: x).vjp(None)]), "local")
    (info,) = [p for p in plugrad.plugins.list_plugins() if p.name == "local"]
    assert (info.distribution, info.version) == (None, None)


def test_declared_kernels_are_listed_with_their_marks(plugin, registered) -> None:
    direct = kernel("matmul", backend="numpy", fn=lambda xp, x1, x2, /: xp.matmul(x1, x2))
    registered(plugin(kernels=[direct], trylast=True), "modest")
    (info,) = [p for p in plugrad.plugins.list_plugins() if p.name == "modest"]
    ((source),) = info.kernels
    assert (source.op, source.backend, source.kind, source.mark) == (
        "matmul",
        "numpy",
        "override",
        "trylast",
    )


def test_failed_plugins_are_listed_last_with_the_reason(monkeypatch) -> None:
    monkeypatch.setitem(registry._state.failures, "gone_inv", "ImportError: no module named x")
    monkeypatch.setitem(registry._state.distributions, "gone_inv", ("plugrad-gone", "9.9"))
    info = plugrad.plugins.list_plugins()[-1]
    assert (info.name, info.distribution, info.version) == ("gone_inv", "plugrad-gone", "9.9")
    assert info.failure == "ImportError: no module named x" and info.ops == ()


def test_backends_available_or_why_not_without_activating_any(registered) -> None:
    registered(
        backends_plugin(
            UnavailableBackend("absent_inv", "absentlib"), Broken(), NotYetUsed(), NoDevices()
        ),
        "backends_inv",
    )
    listed = {b.name: b for b in plugrad.plugins.list_backends()}
    numpy = listed["numpy"]
    assert (numpy.available, numpy.default, numpy.devices) == (True, True, ("numpy",))
    absent = listed["absent_inv"]
    assert not absent.available and absent.devices == ()
    assert absent.reason == "absentlib is not installed; pip install absentlib"
    assert absent.plugin == "backends_inv"
    assert listed["broken_inv"].reason == "unavailable_reason() raised OSError: driver exploded"
    assert not listed["nodevices_inv"].available
    assert listed["nodevices_inv"].reason == "devices() raised RuntimeError: no device found"
    lazy = listed["lazy_inv"]
    assert lazy.available and lazy.devices == ("lazy_inv:0", "lazy_inv:1")
    assert "lazy_inv" not in registry._state.devices


def test_a_library_that_fails_to_import_or_has_no_device_is_not_available(registered) -> None:
    registered(backends_plugin(BrokenLibrary(), EmptyDevices()), "broken_library_inv")
    listed = {b.name: b for b in plugrad.plugins.list_backends()}
    broken = listed["brokenlib_inv"]
    assert not broken.available and broken.devices == ()
    assert (
        broken.reason
        == "namespace() raised ImportError: libbroken.so: cannot open shared object file"
    )
    assert not listed["nodevice_list_inv"].available
    assert "no device" in listed["nodevice_list_inv"].reason
    assert "brokenlib_inv" not in plugrad.backends.available()
    assert "nodevice_list_inv" not in plugrad.backends.available()
    with pytest.raises(BackendUnavailableError) as info:
        plugrad.zeros(2, backend="brokenlib_inv")
    message = str(info.value)
    assert "'brokenlib_inv'" in message and "'brokenlib'" in message and "libbroken.so" in message
    with pytest.raises(
        BackendUnavailableError, match=r"'nodevice_list_inv'.*'emptylib'.*no device"
    ):
        plugrad.set_backend("nodevice_list_inv")
    assert plugrad.default_device().name == "numpy"


def test_the_base_class_never_invents_a_device() -> None:
    class NoInspection(Backend):
        name = "noinspection_inv"

        def namespace(self):
            return types.SimpleNamespace()

    with pytest.raises(NotImplementedError, match=r"'noinspection_inv'.*devices\(\)"):
        NoInspection().devices()
    # A namespace with the standard's inspection API answers for itself, default first.
    import array_api_strict

    class Strict(Backend):
        name = "strict_inv"

        def namespace(self):
            return array_api_strict

    info = array_api_strict.__array_namespace_info__()
    found = Strict().devices()
    assert found[0] == info.default_device() and set(found) == set(info.devices())


@pytest.mark.parametrize("spec", ["numpy", "numpy:0", None])
def test_kernel_source_backend_spellings(spec) -> None:
    assert plugrad.plugins.kernel_source("exp", spec).backend == "numpy"
