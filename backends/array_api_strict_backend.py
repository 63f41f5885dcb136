"""The array-api-strict backend: the standard and nothing else.

Running plugrad's tests on it proves that the core and every op use only what
the Array API standard specifies. It is a CPU library with three devices
(``array_api_strict:0`` to ``:2``) that refuse to mix, which makes device
handling testable without a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from plugrad.backend import Backend, missing_library
from plugrad.backends.numpy_backend import NumpyRandom
from plugrad.backends.numpy_floating_point import WarningsOff
from plugrad.creation import dlpack_exportable
from plugrad.hookspecs import hookimpl

__all__ = ["ArrayApiStrictBackend", "plugrad_backends"]

# Its other devices ("no_float64", "no_x64") support fewer dtypes than the namespace.
_FULL_DEVICES = ("CPU_DEVICE", "device1", "device2")
_DLPACK_CPU = (1, 0)


class _StrictRandom:
    """NumPy's generator, with results placed on an array-api-strict device."""

    __slots__ = ("_backend", "_device", "_numpy")

    def __init__(self, backend: ArrayApiStrictBackend, seed: int | None, device: Any) -> None:
        self._backend = backend
        self._device = device
        self._numpy = NumpyRandom(seed)

    def normal(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self._backend.from_host(self._numpy.normal(shape, _numpy_dtype(dtype)), self._device)

    def uniform(self, shape: tuple[int, ...], dtype: Any) -> Any:
        sample = self._numpy.uniform(shape, _numpy_dtype(dtype))
        return self._backend.from_host(sample, self._device)

    def get_state(self) -> Any:
        return self._numpy.get_state()

    def set_state(self, state: Any) -> None:
        self._numpy.set_state(state)


def _numpy_dtype(dtype: Any) -> np.dtype:
    return np.dtype(str(dtype).rsplit(".", 1)[-1])


class ArrayApiStrictBackend(Backend):
    """array-api-strict arrays (a strict, minimal Array API library on the CPU)."""

    name = "array_api_strict"

    def unavailable_reason(self) -> str | None:
        return missing_library("array_api_strict", install="pip install array-api-strict")

    def namespace(self) -> Any:
        import array_api_strict

        return array_api_strict

    def array_types(self) -> tuple[type, ...]:
        return (type(self.namespace().asarray(0)),)

    def devices(self) -> tuple[Any, ...]:
        return tuple(self.namespace().Device(name) for name in _FULL_DEVICES)

    def may_share_memory(self, array: Any, other: Any) -> bool:
        import numpy as np

        # Its arrays wrap NumPy's (a private attribute, read only to tell views from copies).
        inner = getattr(array, "_array", None)
        other_inner = getattr(other, "_array", None)
        if inner is None or other_inner is None:
            return True
        return bool(np.may_share_memory(inner, other_inner))

    def strides(self, array: Any) -> tuple[int, ...]:
        # The layout of the NumPy array it wraps (as for may_share_memory): a transposed
        # array is not contiguous, and x.contiguous() must copy it.
        inner = getattr(array, "_array", None)
        return super().strides(array if inner is None else inner)

    def data_pointer(self, array: Any) -> int | None:
        # The address of the NumPy array it wraps (as for may_share_memory).
        inner = getattr(array, "_array", None)
        return super().data_pointer(array if inner is None else inner)

    def dlpack_device(self, device: Any) -> tuple[int, int] | None:
        # Only its real CPU device shares memory with other CPU libraries; the
        # others are labels that DLPack would silently drop.
        return _DLPACK_CPU if device == self.namespace().Device(_FULL_DEVICES[0]) else None

    def from_dlpack(self, obj: Any, device: Any) -> Any:
        return self.namespace().from_dlpack(dlpack_exportable(obj))

    def to_numpy(self, array: Any) -> np.ndarray:
        view = np.from_dlpack(array).view()
        view.flags.writeable = False
        return view

    def random_source(self, seed: int | None, device: Any) -> _StrictRandom:
        return _StrictRandom(self, seed, device)

    def floating_point_warnings_off(self) -> WarningsOff:
        return WarningsOff()  # it computes with NumPy


@hookimpl
def plugrad_backends() -> list[Backend]:
    return [ArrayApiStrictBackend()]
