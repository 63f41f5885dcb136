"""The Array API namespace of the NumPy backend: array-api-compat's, with leaner hot functions.

NumPy's module-level functions such as ``np.sum`` and ``np.expand_dims`` are
Python code that normalises their arguments before reaching the C method that
does the work; on small arrays that costs more than the work itself, and
plugrad calls them in every reduction, every broadcasting backward rule and
every bias gradient. The functions defined here reach the ufunc or array
method directly, with the standard's signatures and the same results as
array-api-compat's NumPy namespace (``tests/backends/test_numpy_namespace.py``
compares them); every other name is array-api-compat's own.
"""

from __future__ import annotations

from typing import Any

import array_api_compat.numpy as _compat
import numpy as _np
from array_api_compat.numpy import *  # noqa: F403
from array_api_compat.numpy import __array_api_version__, __array_namespace_info__  # noqa: F401

_ndarray = _np.ndarray
_add_reduce = _np.add.reduce
_multiply_reduce = _np.multiply.reduce
_maximum_reduce = _np.maximum.reduce
_minimum_reduce = _np.minimum.reduce


def __getattr__(name: str) -> Any:
    # Anything not star-exported (e.g. the linalg and fft extensions) is array-api-compat's.
    return getattr(_compat, name)


def __dir__() -> list[str]:
    return sorted(set(dir(_compat)) | {n for n in globals() if not n.startswith("_")})


# ``np.sum`` and friends end in these ufunc reductions, after a Python-level dispatch.
def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    return _add_reduce(x, axis=axis, dtype=dtype, keepdims=keepdims)


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    return _multiply_reduce(x, axis=axis, dtype=dtype, keepdims=keepdims)


def max(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    return _maximum_reduce(x, axis=axis, keepdims=keepdims)


def min(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    return _minimum_reduce(x, axis=axis, keepdims=keepdims)


def reshape(x: Any, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Any:
    if copy is None:
        return x.reshape(shape)
    return _compat.reshape(x, shape, copy=copy)


def expand_dims(x: Any, /, *, axis: int = 0) -> Any:
    if type(axis) is int:
        ndim = x.ndim + 1
        if -ndim <= axis < ndim:
            if axis < 0:
                axis += ndim
            shape = x.shape
            return x.reshape((*shape[:axis], 1, *shape[axis:]))
    return _np.expand_dims(x, axis)  # raises NumPy's error for a bad axis


def matrix_transpose(x: Any, /) -> Any:
    if x.ndim < 2:
        return _compat.matrix_transpose(x)  # raises the error for fewer than two dimensions
    return x.mT


# array-api-compat's matmul only forwards to NumPy's.
matmul = _np.matmul


def broadcast_to(x: Any, /, shape: tuple[int, ...]) -> Any:
    # A read-only view with zero strides over the broadcast axes, as NumPy's, built
    # directly for the contiguous arrays that gradients of reductions are.
    if type(x) is _ndarray and x.flags.c_contiguous and type(shape) is tuple:
        lead = len(shape) - x.ndim
        if lead >= 0:
            strides = [0] * lead
            for have, want, stride in zip(x.shape, shape[lead:], x.strides):
                if have == want:
                    strides.append(stride)
                elif have == 1 and type(want) is int and want >= 0:
                    strides.append(0)
                else:
                    break
            else:
                view = _ndarray(shape, x.dtype, x, 0, tuple(strides))
                view.flags.writeable = False
                return view
    return _np.broadcast_to(x, shape)  # everything else, and NumPy's errors


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    if device is not None:
        return _compat.ones_like(x, dtype=dtype, device=device)  # checks the device
    return _np.ones(x.shape, dtype=x.dtype if dtype is None else dtype)


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    if device is not None:
        return _compat.zeros_like(x, dtype=dtype, device=device)
    return _np.zeros(x.shape, dtype=x.dtype if dtype is None else dtype)
