"""The array-api-strict backend: registered through its plugin, three separate devices."""

from __future__ import annotations

import pytest

import plugrad
from plugrad import registry

pytestmark = pytest.mark.skipif(
    "array_api_strict" not in plugrad.backends.available(), reason="array-api-strict not installed"
)


def test_registered_by_its_plugin_with_three_devices() -> None:
    import array_api_strict

    assert registry.backend_owner("array_api_strict") == (
        "plugrad.backends.array_api_strict_backend"
    )
    names = [d.name for d in registry.devices_of(registry.get_backend("array_api_strict"))]
    assert names == ["array_api_strict:0", "array_api_strict:1", "array_api_strict:2"]
    x = plugrad.ones(2, device="array_api_strict:1")
    assert isinstance(x.array, type(array_api_strict.asarray(0)))
    assert x.array.device == array_api_strict.Device("device1")


def test_dtypes_are_those_of_the_standard() -> None:
    device = plugrad.zeros(1, backend="array_api_strict").device
    assert plugrad.float16 not in device.dtypes
    assert {plugrad.float32, plugrad.float64, plugrad.complex64} <= set(device.dtypes)
    with pytest.raises(plugrad.errors.DtypeError, match="no dtype float16"):
        plugrad.zeros(1, backend="array_api_strict", dtype=plugrad.float16)


def test_repr_names_the_device() -> None:
    x = plugrad.tensor([1.0, 2.0], device="array_api_strict:2", requires_grad=True)
    assert repr(x) == "tensor([1., 2.], device='array_api_strict:2', requires_grad=True)"
