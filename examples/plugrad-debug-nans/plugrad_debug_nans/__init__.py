"""A plugrad backend that stops at the first op whose result holds a NaN.

``numpy_debug_nans`` stores data exactly like plugrad's ``numpy`` backend, but
every op's kernel checks its floating-point result and raises
``FloatingPointError`` naming the op, the shapes of its inputs and where the
first NaN is. Run a program on it (``PLUGRAD_BACKEND=numpy_debug_nans``) to find
where NaNs are born, then switch back to ``numpy`` to run at full speed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from plugrad import registry
from plugrad.backends.numpy_backend import NumpyBackend
from plugrad.hookspecs import hookimpl

__all__ = ["DebugNansBackend", "plugrad_backends"]


def _first_nan(value: Any) -> tuple[int, ...] | None:
    """The index of the first NaN in ``value`` (a NumPy array or scalar), or ``None``."""
    array = np.asarray(value)
    if array.dtype.kind not in "fc":
        return None
    found = np.argwhere(np.isnan(array))
    return tuple(int(i) for i in found[0]) if len(found) else None


def checked(name: str, kernel: Callable[..., Any]) -> Callable[..., Any]:
    """``kernel`` (an op's kernel, ``kernel(xp, *arrays, **params)``) that refuses to return a NaN.

    Inputs that already hold NaNs are let through: the op that made them has
    been reported already, or they came from the user's data.
    """

    def kernel_without_new_nans(xp: Any, *arrays: Any, **params: Any) -> Any:
        out = kernel(xp, *arrays, **params)
        if any(_first_nan(a) is not None for a in arrays if isinstance(a, np.ndarray)):
            return out
        for position, result in enumerate(out if isinstance(out, tuple) else (out,)):
            where = _first_nan(result)
            if where is not None:
                shapes = ", ".join(str(np.shape(a)) for a in arrays)
                raise FloatingPointError(
                    f"{name}() produced a NaN at index {where} of result {position} "
                    f"from inputs of shapes {shapes}"
                )
        return out

    kernel_without_new_nans.__name__ = f"{name}_without_new_nans"
    return kernel_without_new_nans


class DebugNansBackend(NumpyBackend):
    """NumPy arrays on the CPU; every op's result is checked for NaNs."""

    name = "numpy_debug_nans"

    def kernels(self) -> Mapping[str, Callable[..., Any]]:
        # The numpy backend's own kernels where an op has one, else the generic kernel.
        table = {}
        for name in registry.op_names():
            op = registry.find_op(name)
            table[name] = checked(name, op.backend_kernels.get("numpy", op.kernel))
        return table


@hookimpl
def plugrad_backends() -> list[DebugNansBackend]:
    return [DebugNansBackend()]
