"""The NumPy backend: plugrad's default, on the CPU."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from plugrad.backend import Backend
from plugrad.creation import dlpack_exportable
from plugrad.hookspecs import hookimpl

from . import numpy_namespace
from .numpy_floating_point import WarningsOff

__all__ = ["NumpyBackend", "NumpyRandom", "plugrad_backends"]


class NumpyRandom:
    """Random numbers from a NumPy ``Generator`` (PCG64)."""

    __slots__ = ("_rng",)

    def __init__(self, seed: int | None) -> None:
        self._rng = np.random.default_rng(seed)

    def normal(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        # NumPy samples float32/float64 natively; narrower floats are rounded from float32.
        if np.dtype(dtype).itemsize >= 4:
            return self._rng.standard_normal(shape, dtype=dtype)
        return self._rng.standard_normal(shape, dtype=np.float32).astype(dtype)

    def get_state(self) -> Any:
        """The bit generator's state: a dict of strings and Python ints (JSON can hold it)."""
        return copy.deepcopy(self._rng.bit_generator.state)

    def set_state(self, state: Any) -> None:
        self._rng.bit_generator.state = copy.deepcopy(state)

    def uniform(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        if np.dtype(dtype).itemsize >= 4:
            return self._rng.random(shape, dtype=dtype)
        # float16: the multiples of 2**-11 below 1, each as likely (PyTorch's). A float32
        # draw rounded to the nearest float16 gave its top value 1.5 times its share (and
        # 1.0 itself, clamped), and P(u < x) was x - 2**-12.
        sample = self._rng.random(shape, dtype=np.float32)
        return (np.floor(sample * 2048) / 2048).astype(dtype)


class NumpyBackend(Backend):
    """NumPy arrays on the CPU, through array-api-compat's NumPy namespace (made leaner).

    See ``plugrad.backends.numpy_namespace``.
    """

    name = "numpy"
    holds_host_data = True
    # NumPy's functions give a 0-d result as one of these (np.float64, ...), not an ndarray.
    scalar_types = tuple(
        {type(np.zeros((), dtype)[()]) for dtype in "?bhilqBHILQefdgFDG"}  # every number type
    )

    def namespace(self) -> Any:
        return numpy_namespace

    def array_types(self) -> tuple[type, ...]:
        return (np.ndarray, np.generic)

    def devices(self) -> tuple[str, ...]:
        return ("cpu",)

    def device_of(self, array: Any) -> str:
        return "cpu"

    def dlpack_device(self, device: Any) -> tuple[int, int]:
        return (1, 0)  # kDLCPU

    def from_dlpack(self, obj: Any, device: Any) -> Any:
        return numpy_namespace.from_dlpack(dlpack_exportable(obj))

    def may_share_memory(self, array: Any, other: Any) -> bool:
        # A view's base is the array or the array's own base (NumPy collapses chains).
        base = other.base
        if base is not None and (base is array or base is array.base):
            return True
        return bool(np.may_share_memory(array, other))

    def row_major(self, array: Any) -> bool:
        return bool(array.flags.c_contiguous)  # (NumPy's flag ignores axes of length 1)

    def to_numpy(self, array: Any) -> np.ndarray:
        view = np.asarray(array).view()
        # A read-only view: writing through it would bypass autograd.
        view.flags.writeable = False
        return view

    def share_with_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)  # the array itself: writes show on both sides

    def random_source(self, seed: int | None, device: Any) -> NumpyRandom:
        return NumpyRandom(seed)

    def floating_point_warnings_off(self) -> WarningsOff:
        return WarningsOff()


@hookimpl
def plugrad_backends() -> list[Backend]:
    return [NumpyBackend()]
