"""The Array API namespace of the CuPy backend: array-api-compat's, corrected where CuPy's
functions would give another answer than NumPy's and PyTorch's without a word.

- ``linalg``: CuPy checks what cuSOLVER reports (a singular or indefinite matrix)
  only inside ``cupyx.errstate(linalg="raise")``; outside it, ``inv`` of a singular
  matrix is a matrix of infinities and ``cholesky`` of an indefinite one garbage.
  Here every ``linalg`` function runs with the check on (it waits for the GPU, as
  PyTorch's checked functions do).
- ``remainder`` and ``floor_divide`` of floating-point arrays: exact, from ``fmod``
  (see :mod:`plugrad.backends.exact_division`).

Every other name is array-api-compat's own. Imported when the backend is first used.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import array_api_compat.cupy as _compat_module
import cupy as _cupy
import cupyx as _cupyx
from array_api_compat.cupy import *  # noqa: F403
from array_api_compat.cupy import __array_api_version__, __array_namespace_info__  # noqa: F401

from . import exact_division as _exact

# (its names come from a star import that type checkers cannot follow)
_compat: Any = _compat_module


def __getattr__(name: str) -> Any:
    # Anything not star-exported (e.g. the fft extension) is array-api-compat's.
    return getattr(_compat, name)


def _floating(x1: Any, x2: Any) -> tuple[Any, Any] | None:
    """``x1`` and ``x2`` as arrays if one is a floating-point array (a Python number takes
    its dtype, as plugrad passes one), else None."""
    for array, other in ((x1, x2), (x2, x1)):
        if getattr(getattr(array, "dtype", None), "kind", None) == "f":
            if not hasattr(other, "dtype"):
                other = _cupy.asarray(other, dtype=array.dtype)
            return (array, other) if array is x1 else (other, array)
    return None


def remainder(x1: Any, x2: Any, /) -> Any:
    arrays = _floating(x1, x2)
    return _compat.remainder(x1, x2) if arrays is None else _exact.remainder(_cupy, *arrays)


def floor_divide(x1: Any, x2: Any, /) -> Any:
    arrays = _floating(x1, x2)
    return _compat.floor_divide(x1, x2) if arrays is None else _exact.floor_divide(_cupy, *arrays)


def _checked(function: Any) -> Any:
    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        with _cupyx.errstate(linalg="raise"):
            return function(*args, **kwargs)

    return checked


class _CheckedLinalg(types.ModuleType):
    """array-api-compat's ``linalg`` extension, each function run with CuPy's checks on
    (a module, as the extension is: ``plugrad.compile`` records the calls of modules')."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(_compat.linalg, name)
        if callable(value):
            value = _checked(value)
        setattr(self, name, value)  # looked up once
        return value

    def __dir__(self) -> list[str]:
        return dir(_compat.linalg)


linalg = _CheckedLinalg(f"{__name__}.linalg")
