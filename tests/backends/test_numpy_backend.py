"""The numpy backend: registered through pluggy, the default, and complete."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad import registry
from plugrad.backend import Backend
from plugrad.backends import numpy_backend


def test_numpy_is_registered_by_its_plugin_and_is_the_default() -> None:
    backend = registry.get_backend("numpy")
    assert isinstance(backend, numpy_backend.NumpyBackend) and isinstance(backend, Backend)
    assert registry._state.backend_owners["numpy"] == "plugrad.backends.numpy_backend"
    assert registry.default_device().backend is backend
    assert plugrad.ones(1).device is registry.resolve_device("numpy")
    assert registry.resolve_device("numpy:0") is registry.resolve_device("numpy")
    assert registry.resolve_device(backend) is registry.resolve_device("numpy")


def test_dtype_maps_cover_the_numpy_dtypes() -> None:
    device = registry.resolve_device("numpy")
    # Every dtype but bfloat16, which NumPy has not (ml_dtypes' is not a NumPy dtype).
    assert set(plugrad.dtypes.all_dtypes) - set(device.dtypes) == {plugrad.bfloat16}
    for dtype in device.dtypes:
        native = device.native_dtype(dtype)
        assert np.dtype(native).name == dtype.name
        assert device.dtype_of(np.zeros(1, dtype=native)) is dtype


def test_namespace_is_the_lean_array_api_compat_numpy() -> None:
    import array_api_compat

    from plugrad.backends import numpy_namespace

    device = registry.resolve_device("numpy")
    assert device.xp is numpy_namespace
    compat = array_api_compat.array_namespace(np.ones(1))
    assert device.xp.exp is compat.exp, "names it does not redefine are array-api-compat's"
    assert device.xp.linalg is compat.linalg
    assert device.rule_xp.sum is device.xp.sum, "standard functions come from the backend"
    assert device.rule_xp.scatter_add is device.kernels["scatter_add"], (
        "non-standard names are plugrad's ops, bound to the plain namespace"
    )


def test_arrays_are_recognised_and_kept_on_numpy() -> None:
    assert registry.device_of_array(np.ones(2)) is registry.resolve_device("numpy")
    assert registry.device_of_array([1.0]) is None
    t = plugrad.asarray(np.arange(3))
    assert t.dtype == plugrad.int64


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_random_source_produces_the_requested_dtype(dtype) -> None:
    source = numpy_backend.NumpyRandom(seed=0)
    assert source.normal((3,), dtype).dtype == dtype
    uniform = source.uniform((1000,), dtype)
    assert uniform.dtype == dtype and uniform.max() < 1.0 and uniform.min() >= 0.0


def test_mixing_devices_is_a_clear_error() -> None:
    # A second device object stands in for another backend or GPU.
    device = registry.resolve_device("numpy")
    other = plugrad.backend.Device(
        device.backend, "cpu", "numpy-copy", device.xp,
        device._dtype_to_native, device._dtype_from_native,
    )  # fmt: skip
    other.kernels = device.kernels
    a = plugrad.ones(2)
    b = plugrad.ones(2)
    b._device = other
    with pytest.raises(
        plugrad.errors.DeviceMismatchError, match=r"'numpy' and x2 on 'numpy-copy'.*\.to\("
    ):
        a * b
    with pytest.raises(RuntimeError, match="different devices"):
        plugrad.where(a > 0, a, b)
