"""The Dask backend's Array API namespace: array-api-compat's, completed where Dask falls short.

- ``reshape``: Dask reshapes an array only where every axis of the result
  either merges whole axes of the input or splits one evenly along its chunks;
  a reshape that splits one axis and merges others at once (``(n, g * c, h, w)``
  to ``(n, g, c, h * w)``, as a grouped convolution does) raises
  ``NotImplementedError``. The standard's ``reshape`` has no such limit, so this
  one falls back to two steps Dask always supports: flatten, then split.
- ``take_along_axis``: neither Dask nor array-api-compat has it; here it is a
  gather from the flattened array at computed flat positions.
- ``searchsorted``: Dask refuses ``sorter`` and 0-d ``x2``; searching the sorted
  array (``x1[sorter]``) gives the same positions, and a 0-d ``x2`` is searched
  as one element.
- ``nonzero`` and the ``unique_*`` functions: how many elements they give
  depends on the values, so Dask leaves the size unknown (``nan``); plugrad's
  tensors have known shapes, so these compute it (the only ops that compute
  part of the graph when called, as a size that depends on the data must).

- ``repeat``: Dask's needs an axis and takes one integer count; without an axis
  this one repeats the flattened array, and with one count per element it takes
  each output position from the element it copies (the output's length is the
  sum of the counts, so the counts are computed, as ``nonzero``'s size is).
- ``take`` of a 1-D array without ``axis`` (the standard allows it; Dask needs one).
- ``eye``, ``tril``, ``triu``: Dask's ``eye`` loses part of its task graph
  with an offset (``k``), and its three drop the imaginary part of a complex
  dtype (their masks are made by an ``arange`` of the array's dtype); these
  compare row and column positions instead.
- ``linalg.cholesky``: array-api-compat's returns the upper factor where the lower
  is asked for on Dask (Dask's own ``cholesky`` defaults to upper); this one asks
  Dask for the factor wanted. ``linalg.inv`` keeps a float32 matrix float32.
- ``fft``: Dask transforms only along axes of one chunk; each function here first
  gathers the transformed axes into one chunk.

Every other name is array-api-compat's own.
"""

from __future__ import annotations

import builtins
import importlib
import types
from typing import Any

import dask
from array_api_compat.dask.array import *  # noqa: F403
from array_api_compat.dask.array import __array_api_version__, __array_namespace_info__  # noqa: F401

# Typed Any: the module's functions are made at run time, beyond a type checker's sight.
_compat: Any = importlib.import_module("array_api_compat.dask.array")


def __getattr__(name: str) -> Any:
    # Anything not star-exported (e.g. the linalg and fft extensions) is array-api-compat's.
    return getattr(_compat, name)


def __dir__() -> list[str]:
    return sorted(set(dir(_compat)) | {n for n in globals() if not n.startswith("_")})


def reshape(x: Any, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Any:
    # Dask arrays are immutable task graphs: no reshape shares or copies memory a caller
    # can see, so ``copy=False`` always holds (array-api-compat would set ``x.shape``).
    if copy is False:
        copy = None
    try:
        return _compat.reshape(x, shape, copy=copy)
    except NotImplementedError:
        # Flattening merges every axis and splitting one axis into many is always
        # supported; Dask rechunks as each step needs.
        return _compat.reshape(_compat.reshape(x, (-1,), copy=copy), shape, copy=copy)


def take_along_axis(x: Any, indices: Any, /, *, axis: int = -1) -> Any:
    axis = axis % x.ndim if x.ndim else 0
    # Both broadcast against each other in every axis but ``axis``.
    shape = [b if a == 1 else a for a, b in zip(x.shape, indices.shape)]
    x = _compat.broadcast_to(x, (*shape[:axis], x.shape[axis], *shape[axis + 1 :]))
    indices = _compat.broadcast_to(
        indices, (*shape[:axis], indices.shape[axis], *shape[axis + 1 :])
    )
    indices = _compat.where(indices < 0, indices + x.shape[axis], indices)  # from the end
    flat = _compat.zeros(indices.shape, dtype=indices.dtype)
    stride = 1
    for d in reversed(range(x.ndim)):
        if d == axis:
            position = indices
        else:
            grid = [1] * x.ndim
            grid[d] = indices.shape[d]
            position = _compat.reshape(_compat.arange(indices.shape[d], dtype=indices.dtype), grid)
        flat = flat + position * stride
        stride *= x.shape[d]
    gathered = _compat.reshape(x, (-1,))[_compat.reshape(flat, (-1,))]
    return _compat.reshape(gathered, indices.shape)


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any | None = None) -> Any:
    if sorter is not None:
        x1 = _compat.take(x1, sorter, axis=0)
    if x2.ndim == 0:
        found = _compat.searchsorted(x1, _compat.reshape(x2, (1,)), side=side)
        return _compat.reshape(found, ())
    return _compat.searchsorted(x1, x2, side=side)


def _sized(x: Any) -> Any:
    """``x`` with its unknown (``nan``) chunk sizes computed."""
    return x.compute_chunk_sizes() if builtins.any(n != n for n in x.shape) else x


def nonzero(x: Any, /) -> tuple[Any, ...]:
    return tuple(_sized(index) for index in _compat.nonzero(x))


def unique_values(x: Any, /) -> Any:
    return _sized(_compat.unique_values(x))


def unique_counts(x: Any, /) -> Any:
    result = _compat.unique_counts(x)
    return type(result)(*(_sized(part) for part in result))


def unique_inverse(x: Any, /) -> Any:
    result = _compat.unique_inverse(x)
    return type(result)(*(_sized(part) for part in result))


def unique_all(x: Any, /) -> Any:
    result = _compat.unique_all(x)
    return type(result)(*(_sized(part) for part in result))


def repeat(x: Any, repeats: Any, /, *, axis: int | None = None) -> Any:
    if axis is None:
        x, axis = _compat.reshape(x, (-1,)), 0
    if not hasattr(repeats, "shape"):
        return _compat.repeat(x, repeats, axis=axis)
    length = x.shape[axis]
    if repeats.shape not in ((), (1,), (length,)):
        raise ValueError(
            f"repeat(): {repeats.shape[0]} counts for an axis of length {length}; give one "
            "count, or one per element"
        )
    counts = _compat.broadcast_to(_compat.astype(repeats, _compat.int64), (length,))
    ends = _compat.cumulative_sum(counts)
    total, negative = dask.compute(ends[-1] if length else 0, _compat.any(counts < 0))
    if negative:
        raise ValueError("repeat(): the counts may not be negative")
    # Output position i copies the element whose run of copies ends after i.
    source = _compat.searchsorted(
        ends, _compat.arange(int(total), dtype=_compat.int64), side="right"
    )
    return _compat.take(x, source, axis=axis)


def eye(
    n_rows: int,
    n_cols: int | None = None,
    /,
    *,
    k: int = 0,
    dtype: Any = None,
    device: Any = None,
) -> Any:
    on_diagonal = _offsets(n_rows, n_rows if n_cols is None else n_cols) == k
    return _compat.astype(on_diagonal, _compat.float64 if dtype is None else dtype)


def _offsets(n_rows: int, n_cols: int) -> Any:
    """``column - row`` at each position of an ``n_rows`` x ``n_cols`` matrix."""
    return _compat.arange(n_cols)[None, :] - _compat.arange(n_rows)[:, None]


def tril(x: Any, /, *, k: int = 0) -> Any:
    return _compat.where(_offsets(*x.shape[-2:]) <= k, x, _compat.zeros_like(x))


def triu(x: Any, /, *, k: int = 0) -> Any:
    return _compat.where(_offsets(*x.shape[-2:]) >= k, x, _compat.zeros_like(x))


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
    if axis is None and x.ndim == 1:
        axis = 0
    return _compat.take(x, indices, axis=axis)


class _Extension(types.ModuleType):
    """An extension (``linalg``, ``fft``): a few functions of its own, the rest the base's."""

    def __init__(self, name: str, base: Any, functions: dict[str, Any]) -> None:
        super().__init__(name)
        self._base = base
        self.__dict__.update(functions)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._base)) | set(self.__dict__))


def _cholesky(x: Any, /, *, upper: bool = False) -> Any:
    import dask.array

    if x.ndim != 2:  # Dask factors one matrix at a time
        return _compat.linalg.cholesky(x, upper=upper)
    lower = dask.array.linalg.cholesky(x, lower=True)
    if not upper:
        return lower
    return _compat.conj(_compat.matrix_transpose(lower))


def _inv(x: Any, /) -> Any:
    inverse = _compat.linalg.inv(x)
    return inverse if inverse.dtype == x.dtype else _compat.astype(inverse, x.dtype)


def _one_chunk_along(function: Any, *, several: bool) -> Any:
    def transform(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        if several:
            axes = kwargs.get("axes")
            axes = range(x.ndim) if axes is None else axes
        else:
            axes = (kwargs.get("axis", -1),)
        x = x.rechunk({axis % x.ndim: -1 for axis in axes})
        return function(x, *args, **kwargs)

    transform.__name__ = transform.__qualname__ = function.__name__
    return transform


linalg = _Extension(f"{__name__}.linalg", _compat.linalg, {"cholesky": _cholesky, "inv": _inv})
_FFT_FUNCTIONS = (
    "fft",
    "ifft",
    "rfft",
    "irfft",
    "hfft",
    "ihfft",
    "fftn",
    "ifftn",
    "rfftn",
    "irfftn",
)
fft = _Extension(
    f"{__name__}.fft",
    _compat.fft,
    {
        name: _one_chunk_along(getattr(_compat.fft, name), several=name.endswith("n"))
        for name in _FFT_FUNCTIONS
    },
)
