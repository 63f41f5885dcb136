"""Choosing a backend: every route, and the errors for misuse."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import plugrad
from plugrad.errors import BackendUnavailableError, DeviceMismatchError, UnknownBackendError

strict = pytest.mark.skipif(
    "array_api_strict" not in plugrad.backends.available(), reason="array-api-strict not installed"
)


@pytest.fixture(autouse=True)
def restore_default():
    previous = plugrad.default_device()
    yield
    plugrad.set_backend(previous)


def test_listing_reports_every_backend_with_reasons() -> None:
    statuses = {s.name: s for s in plugrad.plugins.list_backends()}
    assert set(statuses) >= {"numpy", "cupy", "array_api_strict"}
    assert statuses["numpy"].available and statuses["numpy"].devices == ("numpy",)
    assert sum(s.default for s in statuses.values()) == 1
    assert statuses["numpy"].plugin == "plugrad.backends.numpy_backend"
    for status in statuses.values():
        assert status.available == (status.reason is None)
        assert status.available == (status.name in plugrad.backends.available())
        if not status.available:
            assert status.devices == () and status.reason
    if not statuses["cupy"].available:
        assert "cupy" in statuses["cupy"].reason


def test_unknown_and_unavailable_backends_are_clear_errors() -> None:
    with pytest.raises(UnknownBackendError, match=r"'nope'.*registered backends: .*numpy"):
        plugrad.set_backend("nope")
    if "cupy" not in plugrad.backends.available():
        with pytest.raises(BackendUnavailableError, match="cupy"):
            plugrad.zeros(2, backend="cupy")
    assert plugrad.default_device().name == "numpy"


@strict
def test_set_backend_changes_where_new_tensors_go() -> None:
    plugrad.set_backend("array_api_strict")
    x = plugrad.ones(2)
    assert x.backend.name == "array_api_strict"
    assert plugrad.tensor([1.0]).device is x.device
    plugrad.set_backend("numpy")
    assert plugrad.ones(2).backend.name == "numpy"


@strict
def test_use_backend_is_scoped_and_nests() -> None:
    with plugrad.use_backend("array_api_strict:1") as outer:
        assert outer.name == "array_api_strict:1"
        assert plugrad.zeros(1).device is outer
        # A bare backend name means its current device.
        assert plugrad.zeros(1, backend="array_api_strict").device is outer
        with plugrad.use_backend("numpy"):
            assert plugrad.zeros(1).device.name == "numpy"
        assert plugrad.default_device() is outer
    assert plugrad.default_device().name == "numpy"


@strict
def test_use_backend_is_per_thread() -> None:
    seen = {}

    def worker() -> None:
        seen["device"] = plugrad.zeros(1).device.name

    with plugrad.use_backend("array_api_strict"):
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        assert plugrad.zeros(1).device.name == "array_api_strict:0"
    assert seen["device"] == "numpy"


@strict
@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: plugrad.tensor([1.0, 2.0], **kw),
        lambda **kw: plugrad.asarray([1.0, 2.0], **kw),
        lambda **kw: plugrad.asarray(np.ones(2), **kw),
        lambda **kw: plugrad.zeros(2, **kw),
        lambda **kw: plugrad.ones(2, **kw),
        lambda **kw: plugrad.empty(2, **kw),
        lambda **kw: plugrad.full(2, 3.0, **kw),
        lambda **kw: plugrad.arange(2, **kw),
        lambda **kw: plugrad.zeros_like(plugrad.ones(2), **kw),
        lambda **kw: plugrad.ones_like(plugrad.ones(2), **kw),
        lambda **kw: plugrad.empty_like(plugrad.ones(2), **kw),
        lambda **kw: plugrad.full_like(plugrad.ones(2), 1.0, **kw),
        lambda **kw: plugrad.randn(2, **kw),
        lambda **kw: plugrad.rand(2, **kw),
        lambda **kw: plugrad.eye(2, **kw),
        lambda **kw: plugrad.linspace(0.0, 1.0, 3, **kw),
        lambda **kw: plugrad.fft.fftfreq(4, **kw),
        lambda **kw: plugrad.fft.rfftfreq(4, **kw),
    ],
)
def test_every_creation_function_takes_backend_and_device(make) -> None:
    assert make(backend="array_api_strict").device.name == "array_api_strict:0"
    assert make(device="array_api_strict:2").device.name == "array_api_strict:2"
    assert make(backend="array_api_strict", device="array_api_strict:1").device.name == (
        "array_api_strict:1"
    )
    with pytest.raises(ValueError, match="does not belong to backend"):
        make(backend="numpy", device="array_api_strict:1")
    assert make().device.name == "numpy"


def test_backend_argument_rejects_devices() -> None:
    with pytest.raises(TypeError, match="device="):
        plugrad.zeros(2, backend="numpy:0")


@strict
def test_generators_live_on_a_device() -> None:
    g = plugrad.Generator(seed=3, backend="array_api_strict")
    a = plugrad.randn(3, generator=g)
    assert a.device.name == "array_api_strict:0"
    b = plugrad.randn(3, generator=plugrad.Generator(seed=3, device="numpy"))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(ValueError, match="generator is on"):
        plugrad.randn(3, generator=g, device="numpy")


@strict
def test_ops_follow_their_inputs_not_the_default() -> None:
    x = plugrad.ones(2, backend="array_api_strict", requires_grad=True)
    with plugrad.use_backend("numpy"):
        y = (x * 2 + 1).sum()
        assert y.device is x.device
        y.backward()
    assert x.grad.device is x.device and x.grad.tolist() == [2.0, 2.0]


@strict
def test_mixing_backends_or_devices_names_both_and_the_fix() -> None:
    a = plugrad.ones(2, device="numpy")
    b = plugrad.ones(2, device="array_api_strict")
    c = plugrad.ones(2, device="array_api_strict:1")
    with pytest.raises(DeviceMismatchError, match=r"'numpy'.*'array_api_strict:0'.*\.to\("):
        a + b
    with pytest.raises(DeviceMismatchError, match=r"'array_api_strict:0'.*'array_api_strict:1'"):
        plugrad.maximum(b, c)
    assert (b + c.to(b.device)).device is b.device


def test_environment_variable_chooses_the_default_at_import() -> None:
    code = "import plugrad; print(plugrad.default_device().name)"
    env = dict(os.environ, PLUGRAD_BACKEND="array_api_strict:1")
    if "array_api_strict" in plugrad.backends.available():
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert out.stdout.strip() == "array_api_strict:1", out.stderr
    env["PLUGRAD_BACKEND"] = "nope"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0
    assert "PLUGRAD_BACKEND='nope' cannot be used" in out.stderr
    assert "Unset PLUGRAD_BACKEND" in out.stderr


def test_missing_library_names_the_first_module_not_found() -> None:
    from plugrad.backend import missing_library

    assert missing_library("numpy", "numpy.linalg", install="pip install numpy") is None
    reason = missing_library("numpy", "no_such_module_x", install="pip install x")
    assert reason == "no_such_module_x is not installed; pip install x"
