"""The Array API namespace of the NumPy backend: array-api-compat's, with leaner hot functions.

NumPy's module-level functions such as ``np.sum`` and ``np.expand_dims`` are
Python code that normalises their arguments before reaching the C method that
does the work; on small arrays that costs more than the work itself, and
plugrad calls them in every reduction, every broadcasting backward rule and
every bias gradient. The functions defined here reach the ufunc or array
method directly, with the standard's signatures and the same results as
array-api-compat's NumPy namespace (``tests/backends/test_numpy_namespace.py``
compares them); every other name is array-api-compat's own. ``where`` is
here for another reason: NumPy's branches on every element (see its comment),
and ``astype`` for a third: a cast that overflows (``1e308`` to float32) gives
``inf`` without a warning, as PyTorch's does.
"""

from __future__ import annotations

import builtins as _builtins
from typing import Any, Protocol, cast

import array_api_compat.numpy as _compat
import numpy as _np
from array_api_compat.numpy import *  # noqa: F403
from array_api_compat.numpy import __array_api_version__, __array_namespace_info__  # noqa: F401

from .numpy_floating_point import WarningsOff


class _Reduction(Protocol):
    """A ufunc's ``reduce`` as this module calls it."""

    def __call__(
        self, array: Any, /, *, axis: Any = ..., dtype: Any = ..., keepdims: bool = ...
    ) -> Any: ...


def _reduction(ufunc: _np.ufunc) -> _Reduction:
    # NumPy's overloads of ``reduce`` take ``keepdims`` as a literal True or False
    # (their result types differ); here it is a bool known only at run time.
    return cast(_Reduction, ufunc.reduce)


# array-api-compat's NumPy namespace re-exports these in a way type checkers cannot
# follow; its public namespace is used, not the private module that defines them.
_compat_reshape = cast(Any, _compat).reshape
_compat_cumulative_sum = cast(Any, _compat).cumulative_sum
_compat_cumulative_prod = cast(Any, _compat).cumulative_prod
_compat_concat = cast(Any, _compat).concat
_compat_stack = cast(Any, _compat).stack
_compat_roll = cast(Any, _compat).roll
_compat_tril = cast(Any, _compat).tril
_compat_triu = cast(Any, _compat).triu
_compat_ones_like = cast(Any, _compat).ones_like
_compat_zeros_like = cast(Any, _compat).zeros_like
_compat_astype = cast(Any, _compat).astype
_ndarray = _np.ndarray
_add_reduce = _reduction(_np.add)
_multiply_reduce = _reduction(_np.multiply)
_maximum_reduce = _reduction(_np.maximum)
_minimum_reduce = _reduction(_np.minimum)
_logical_or_reduce = _reduction(_np.logical_or)
_logical_and_reduce = _reduction(_np.logical_and)
_bool = _np.dtype(_np.bool_)
_float16, _float32, _float64 = (
    _np.dtype(_np.float16),
    _np.dtype(_np.float32),
    _np.dtype(_np.float64),
)
# The star import shadows ``bool`` and friends with NumPy's dtypes.
_python_scalars = (_builtins.bool, _builtins.int, _builtins.float, _builtins.complex)
_unsigned_of_size = {1: _np.uint8, 2: _np.uint16, 4: _np.uint32, 8: _np.uint64}
#: From this many elements of ``condition`` on, ``where`` selects bits instead of branching.
WHERE_BITWISE_MIN_SIZE = 256


def __getattr__(name: str) -> Any:
    # Anything not star-exported (e.g. the linalg and fft extensions) is array-api-compat's.
    return getattr(_compat, name)


def __dir__() -> list[str]:
    return sorted(set(dir(_compat)) | {n for n in globals() if not n.startswith("_")})


# ``np.sum`` and friends end in these ufunc reductions, after a Python-level dispatch.
def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    if x.dtype is _float16 and dtype is None:
        # As PyTorch, in float32 and rounded once: NumPy adds float16 along any axis but
        # the last one by one, in float16 (4000 normal values summed 2 % off).
        total = _add_reduce(x, axis=axis, dtype=_float32, keepdims=keepdims)
        return total.astype(_float16)
    return _add_reduce(x, axis=axis, dtype=dtype, keepdims=keepdims)


def _running(compat_function: Any) -> Any:
    """The standard's running sum or product, of float32 in float64 and rounded once, as
    PyTorch's on the CPU: in float32 it drifts (a million 0.1s summed to 100958; 100,000
    factors of 1 + 2**-20 came to 1.09948, not 1.10006)."""

    def running(
        x: Any, /, *, axis: Any = None, dtype: Any = None, include_initial: bool = False
    ) -> Any:
        if x.dtype is _float32 and dtype is None:
            wide = compat_function(x, axis=axis, dtype=_float64, include_initial=include_initial)
            return _row_major(wide.astype(_float32))
        return _row_major(
            compat_function(x, axis=axis, dtype=dtype, include_initial=include_initial)
        )

    running.__name__ = running.__qualname__ = compat_function.__name__
    return running


cumulative_sum = _running(_compat_cumulative_sum)
cumulative_prod = _running(_compat_cumulative_prod)


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    try:
        return _compat_astype(x, dtype, copy=copy, device=device)
    except RuntimeWarning:  # "overflow encountered in cast", made an error by a filter
        with WarningsOff():
            return _compat_astype(x, dtype, copy=copy, device=device)


def concat(arrays: Any, /, *, axis: Any = 0) -> Any:
    return _row_major(_compat_concat(arrays, axis=axis))


def stack(arrays: Any, /, *, axis: int = 0) -> Any:
    return _row_major(_compat_stack(arrays, axis=axis))


def roll(x: Any, /, shift: Any, *, axis: Any = None) -> Any:
    return _row_major(_compat_roll(x, shift, axis=axis))


def tril(x: Any, /, *, k: int = 0) -> Any:
    return _row_major(_compat_tril(x, k=k))


def triu(x: Any, /, *, k: int = 0) -> Any:
    return _row_major(_compat_triu(x, k=k))


def _row_major(array: Any) -> Any:
    """``array`` laid out row-major, as PyTorch's cat, stack, cumsum, roll and tril give them:
    NumPy keeps its inputs' order (transposed matrices joined are column-major), and
    ``view(-1)`` of such a result raised where PyTorch's works."""
    return array if array.flags.c_contiguous else _np.ascontiguousarray(array)


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    return _multiply_reduce(x, axis=axis, dtype=dtype, keepdims=keepdims)


def max(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    return _maximum_reduce(x, axis=axis, keepdims=keepdims)


def min(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    return _minimum_reduce(x, axis=axis, keepdims=keepdims)


def any(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    return _logical_or_reduce(x, axis=axis, dtype=_bool, keepdims=keepdims)


def all(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    return _logical_and_reduce(x, axis=axis, dtype=_bool, keepdims=keepdims)


def reshape(x: Any, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Any:
    if copy is None:
        return x.reshape(shape)
    return _compat_reshape(x, shape, copy=copy)


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


def broadcast_arrays(*arrays: Any) -> tuple[Any, ...]:
    # NumPy's are writable (with a FutureWarning at the write): one that shows an element
    # in several places is made read-only, as broadcast_to's, so a write into it is refused
    # (PyTorch refuses it) instead of landing once in the input.
    out = _np.broadcast_arrays(*arrays)
    for view in out:
        if _builtins.any(step == 0 and n > 1 for step, n in zip(view.strides, view.shape)):
            view.flags.writeable = False
    return out


def where(condition: Any, x1: Any, x2: Any, /) -> Any:
    # NumPy's where branches on every element; on a mask without pattern (a ReLU's) the
    # mispredictions cost ~4 ns per element, ten times the work. Selecting bits with a
    # mask of all-ones / all-zeros words gives the same result without branching.
    if (
        type(condition) is _ndarray
        and condition.dtype == _bool
        and condition.size >= WHERE_BITWISE_MIN_SIZE
    ):
        selected = _select_bits(condition, x1, x2)
        if selected is not None:
            return selected
    return _np.where(condition, x1, x2)


def _select_bits(condition: Any, x1: Any, x2: Any) -> Any:
    """``where`` for same-width numeric operands by bitwise selection; ``None`` if not that case."""
    for x in (x1, x2):
        if type(x) is not _ndarray and type(x) not in _python_scalars:
            return None
    try:
        dtype = _np.result_type(x1, x2)
        unsigned = _unsigned_of_size.get(dtype.itemsize)
        if unsigned is None or dtype.kind not in "biufc" or not dtype.isnative:
            return None
        bits1 = _np.asarray(x1, dtype=dtype).view(unsigned)
        bits2 = _np.asarray(x2, dtype=dtype).view(unsigned)
    except Exception:  # a scalar out of range, ...: NumPy's where decides what happens
        return None
    mask = condition.astype(unsigned)  # 1 where x1 is taken
    if bits2.ndim == 0 and not bits2:  # where(c, x, 0): x's bits under an all-ones mask
        _np.negative(mask, out=mask)
        selected = _np.bitwise_and(bits1, mask, out=mask if bits1.shape == mask.shape else None)
    elif bits1.ndim == 0 and not bits1:  # where(c, 0, x)
        _np.subtract(mask, 1, out=mask)  # all ones where x2 is taken
        selected = _np.bitwise_and(bits2, mask, out=mask if bits2.shape == mask.shape else None)
    else:  # x2 ^ ((x1 ^ x2) & mask) is x1 under the mask's ones, x2 under its zeros
        _np.negative(mask, out=mask)
        selected = _np.bitwise_xor(bits1, bits2)
        if selected.shape == _np.broadcast_shapes(selected.shape, mask.shape):
            _np.bitwise_and(selected, mask, out=selected)  # no third array of the result's size
        else:
            selected = _np.bitwise_and(selected, mask)
        _np.bitwise_xor(selected, bits2, out=selected)
    return selected.view(dtype)


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    if device is not None:
        return _compat_ones_like(x, dtype=dtype, device=device)  # checks the device
    return _np.ones(x.shape, dtype=x.dtype if dtype is None else dtype)


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    if device is not None:
        return _compat_zeros_like(x, dtype=dtype, device=device)
    return _np.zeros(x.shape, dtype=x.dtype if dtype is None else dtype)


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """The arrays along ``axis``, each a view (array-api-compat's gives 1-d arrays' elements
    as NumPy scalars, which share no memory with ``x``)."""
    axis = axis % x.ndim if x.ndim else axis
    keys = [(slice(None),) * axis + (i, Ellipsis) for i in range(x.shape[axis])]
    return tuple([x[key] for key in keys])
