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
  ``nonzero`` takes NumPy's positions of the computed array (one chunk): Dask's,
  their chunk sizes computed, were wrong where a chunk held no nonzero element.
  Of floating-point values the ``unique_*`` functions are NumPy's on the
  computed array: Dask's merges every NaN into one value.

- ``repeat``: Dask's needs an axis and takes one integer count; without an axis
  this one repeats the flattened array, and with one count per element it takes
  each output position from the element it copies (the output's length is the
  sum of the counts, so the counts are computed, as ``nonzero``'s size is).
- ``take`` of a 1-D array without ``axis`` (the standard allows it; Dask needs one);
  its indices are computed first: Dask's ``take`` with a Dask array of indices
  reported the wrong shape for some (``[0]`` of a one-chunk array).
- ``eye``, ``tril``, ``triu``: Dask's ``eye`` loses part of its task graph
  with an offset (``k``), and its three drop the imaginary part of a complex
  dtype (their masks are made by an ``arange`` of the array's dtype); these
  compare row and column positions instead.
- ``linalg.cholesky``: array-api-compat's returns the upper factor where the lower
  is asked for on Dask (Dask's own ``cholesky`` defaults to upper); this one asks
  Dask for the factor wanted. ``linalg.inv`` keeps a float32 matrix float32.
- ``linalg`` functions Dask lacks (``det``, ``slogdet``, ``eigh``, ``eigvalsh``,
  ``eig``, ``eigvals``, ``pinv``, ``matrix_power``, and ``matrix_rank``, whose
  singular values array-api-compat asks of Dask's ``svd`` with a ``compute_uv``
  it lacks), those it has for one matrix
  only (``cholesky``, ``inv``, ``solve`` of a stack), and ``svd`` with
  ``full_matrices=True`` and ``svdvals``: NumPy's, one chunk of whole matrices at
  a time (``dask.array.apply_gufunc``; the matrix axes are gathered into one
  chunk, the stack axes stay chunked). ``cross``: from its components.
- ``fft``: Dask transforms only along axes of one chunk; each function here first
  gathers the transformed axes into one chunk.
- The reductions, ``flip`` and ``squeeze`` refuse an axis named twice (``axis=(0, 0)``):
  Dask's took it once, where NumPy and PyTorch refuse it.

Every other name is array-api-compat's own.
"""

from __future__ import annotations

import builtins
import importlib
import re
import types
import warnings
from typing import Any

import dask
import dask.array
import numpy as np
from array_api_compat.dask.array import *  # noqa: F403
from array_api_compat.dask.array import __array_api_version__, __array_namespace_info__  # noqa: F401

# Typed Any: the module's functions are made at run time, beyond a type checker's sight.
_compat: Any = importlib.import_module("array_api_compat.dask.array")


def __getattr__(name: str) -> Any:
    # Anything not star-exported (e.g. the linalg and fft extensions) is array-api-compat's.
    return getattr(_compat, name)


def __dir__() -> list[str]:
    return sorted(set(dir(_compat)) | {n for n in globals() if not n.startswith("_")})


def _distinct_axes(name: str) -> Any:
    """Dask's ``name``, refusing an axis named twice (Dask reduces or flips over it once
    where NumPy and PyTorch refuse it)."""
    function = getattr(_compat, name)

    def checked(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        axis = kwargs.get("axis", args[0] if args else None)
        if type(axis) is tuple and len(axis) > 1:
            n = builtins.max(x.ndim, 1)
            if len({a % n if -n <= a < n else a for a in axis}) != len(axis):
                raise ValueError(f"{name}(): repeated axis in {axis}")
        return function(x, *args, **kwargs)

    checked.__name__ = checked.__qualname__ = name
    checked.__doc__ = function.__doc__
    return checked


sum, prod, mean, var, std, max, min, any, all, count_nonzero, flip, squeeze = (
    _distinct_axes(name)
    for name in (
        "sum", "prod", "mean", "var", "std", "max", "min", "any", "all", "count_nonzero",
        "flip", "squeeze",
    )
)  # fmt: skip


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
    with warnings.catch_warnings():
        # Dask builds the metadata of an index into a complex array by casting the array's
        # to integers, which NumPy warns about; the values gathered are not affected.
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        gathered = _compat.reshape(x, (-1,))[_compat.reshape(flat, (-1,))]
    return _compat.reshape(gathered, indices.shape)


def linspace(
    start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Any = None,
    endpoint: bool = True,
) -> Any:  # fmt: skip
    if isinstance(start, complex) or isinstance(stop, complex):
        # Dask's linspace takes real endpoints only: the parts are spaced apart.
        start, stop = complex(start), complex(stop)
        real = np.finfo(dtype).dtype if dtype is not None else None
        parts = [
            linspace(a, b, num, dtype=real, device=device, endpoint=endpoint)
            for a, b in ((start.real, stop.real), (start.imag, stop.imag))
        ]
        values = parts[0] + 1j * parts[1]
        return values if dtype is None else _compat.astype(values, dtype)
    values = _compat.linspace(start, stop, num, dtype=dtype, device=device, endpoint=endpoint)
    if not endpoint or num < 2:
        return values
    # Dask computes each value as start + i * step: the last one misses stop by an ulp in
    # about two cases in five, where the standard (and NumPy, PyTorch) give stop itself.
    last = _compat.arange(num) == num - 1
    return _compat.where(last, _compat.asarray(stop, dtype=values.dtype), values)


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
    # NumPy's on the computed array, each index one chunk: Dask's positions, their chunk
    # sizes computed, came out wrong where a chunk held no True ((1, 0, 0) chunks of a
    # one-True mask computed to three positions), and x[mask] with them.
    computed = np.asarray(x.compute())
    return tuple(_compat.asarray(index) for index in np.nonzero(computed))


def _unique(name: str, x: Any) -> Any:
    """The standard's ``unique_*`` function ``name`` of ``x``, its sizes computed.

    Of floating-point values, NumPy's on the computed array: Dask's merges every
    NaN into one value (counted 0 times, or all of them), where the standard
    counts each NaN as a value of its own.
    """
    if x.dtype.kind in "fc":
        numpy_namespace = importlib.import_module("array_api_compat.numpy")
        result = getattr(numpy_namespace, name)(x.compute())
        if not isinstance(result, tuple):
            return _compat.asarray(result)
        return type(result)(*(_compat.asarray(part) for part in result))
    result = getattr(_compat, name)(x)
    if not isinstance(result, tuple):
        return _sized(result)
    return type(result)(*(_sized(part) for part in result))


def unique_values(x: Any, /) -> Any:
    return _unique("unique_values", x)


def unique_counts(x: Any, /) -> Any:
    return _unique("unique_counts", x)


def unique_inverse(x: Any, /) -> Any:
    return _unique("unique_inverse", x)


def unique_all(x: Any, /) -> Any:
    return _unique("unique_all", x)


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
    if isinstance(indices, dask.array.Array):
        # Dask's take with a Dask array of indices may report a wrong shape (the index [0]
        # of a one-chunk array kept the array's whole length, computing to one row): the
        # indices are computed, as nonzero's positions are.
        indices = np.asarray(indices.compute())
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


def _square_chunks(x: Any) -> Any:
    """A square matrix whose every chunk is square: Dask's blocked ``inv``, ``cholesky`` and
    ``solve`` take no other (a matrix joined by ``concat`` has others). Rows and columns
    chunked alike in equal blocks where the rows are, else one chunk."""
    rows = x.chunks[0]
    if builtins.all(n == rows[0] for n in rows):
        return x if x.chunks[1] == rows else x.rechunk((rows, rows))
    return x.rechunk((-1, -1))


def _cholesky(x: Any, /, *, upper: bool = False) -> Any:
    import dask.array

    if x.ndim != 2:  # Dask factors one matrix at a time
        return _cholesky_of_each(x, upper)
    lower = dask.array.linalg.cholesky(_square_chunks(x), lower=True)
    if not upper:
        return lower
    return _compat.conj(_compat.matrix_transpose(lower))


def _inv(x: Any, /) -> Any:
    if x.ndim != 2:
        return _per_matrix(np.linalg.inv, "(n,n)->(n,n)", x)
    inverse = _compat.linalg.inv(_square_chunks(x))
    return inverse if inverse.dtype == x.dtype else _compat.astype(inverse, x.dtype)


def _real(dtype: Any) -> Any:
    return np.empty(0, dtype).real.dtype


def _complex(dtype: Any) -> Any:
    return np.result_type(dtype, np.complex64)


def _per_matrix(
    function: Any, signature: str, *arrays: Any, dtypes: Any = None, sizes: Any = None
) -> Any:
    """``function`` (NumPy's, over stacks of matrices) applied to each chunk of whole matrices.

    ``signature`` is NumPy's generalized-ufunc signature; ``dtypes`` those of the
    outputs (the first input's by default), ``sizes`` the lengths of output axes
    no input has.
    """
    import dask.array

    inputs, outputs_part = signature.split("->")
    outputs = outputs_part.count("(")
    # NOTE: each input's matrix axes in one chunk, by hand: apply_gufunc's own rechunking
    # (allow_rechunk) built a graph that failed to compute for some chunkings.
    cores = [len(axes.split(",")) if axes else 0 for axes in re.findall(r"\((.*?)\)", inputs)]
    arrays = tuple(
        array.rechunk({axis: -1 for axis in range(array.ndim - core, array.ndim)})
        for array, core in zip(arrays, cores)
    )
    if dtypes is None:
        dtypes = (arrays[0].dtype,) * outputs if outputs > 1 else arrays[0].dtype
    with warnings.catch_warnings():
        # Dask casts an empty sample of the input to each output's dtype: a complex input's
        # to a real output's warns, with nothing to lose.
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        return dask.array.apply_gufunc(
            function, signature, *arrays, output_dtypes=dtypes, output_sizes=sizes
        )


def _det(x: Any, /) -> Any:
    return _per_matrix(np.linalg.det, "(n,n)->()", x)


def _slogdet(x: Any, /) -> Any:
    return _per_matrix(
        lambda a: tuple(np.linalg.slogdet(a)), "(n,n)->(),()", x, dtypes=(x.dtype, _real(x.dtype))
    )


def _eigh(x: Any, /) -> Any:
    return _per_matrix(
        lambda a: tuple(np.linalg.eigh(a)), "(n,n)->(n),(n,n)", x,
        dtypes=(_real(x.dtype), x.dtype),
    )  # fmt: skip


def _eigvalsh(x: Any, /) -> Any:
    return _per_matrix(np.linalg.eigvalsh, "(n,n)->(n)", x, dtypes=_real(x.dtype))


def _eig(x: Any, /) -> Any:
    complex_dtype = _complex(x.dtype)

    def eig(a: Any) -> tuple[Any, Any]:
        # NOTE: NumPy's eig answers real arrays where every eigenvalue of a chunk is real.
        values, vectors = np.linalg.eig(a)
        return values.astype(complex_dtype), vectors.astype(complex_dtype)

    return _per_matrix(eig, "(n,n)->(n),(n,n)", x, dtypes=(complex_dtype, complex_dtype))


def _eigvals(x: Any, /) -> Any:
    complex_dtype = _complex(x.dtype)
    return _per_matrix(
        lambda a: np.linalg.eigvals(a).astype(complex_dtype), "(n,n)->(n)", x,
        dtypes=complex_dtype,
    )  # fmt: skip


def _pinv(x: Any, /, *, rtol: Any = None) -> Any:
    return _per_matrix(lambda a: np.linalg.pinv(a, rtol=rtol), "(m,n)->(n,m)", x)


def _matrix_power(x: Any, n: int, /) -> Any:
    return _per_matrix(lambda a: np.linalg.matrix_power(a, n), "(m,m)->(m,m)", x)


def _cholesky_of_each(x: Any, upper: bool) -> Any:
    return _per_matrix(lambda a: np.linalg.cholesky(a, upper=upper), "(n,n)->(n,n)", x)


def _solve(x1: Any, x2: Any, /) -> Any:
    if x1.ndim == 2 and x2.ndim <= 2:
        x1 = _square_chunks(x1)
        return _compat.linalg.solve(x1, x2.rechunk({0: x1.chunks[0]}))
    # As the standard says: x2 is a vector only if it has one dimension.
    core = 1 if x2.ndim == 1 else 2
    stack = np.broadcast_shapes(x1.shape[:-2], x2.shape[:-core])
    x1 = _compat.broadcast_to(x1, (*stack, *x1.shape[-2:]))
    x2 = _compat.broadcast_to(x2, (*stack, *x2.shape[x2.ndim - core :]))
    x2 = x2.rechunk({axis: x1.chunks[axis] for axis in range(len(stack))})  # stacks alike
    signature = "(n,n),(n)->(n)" if core == 1 else "(n,n),(n,k)->(n,k)"
    return _per_matrix(np.linalg.solve, signature, x1, x2, dtypes=_compat.result_type(x1, x2))


def _one_chunk_across(x: Any) -> Any:
    """A matrix in one chunk along its shorter axis, as Dask's svd takes it (tall-and-skinny or
    short-and-fat; one chunked along both axes, as ``cat`` makes, was refused)."""
    rows, cols = x.shape
    return x.rechunk({1: -1} if rows >= cols else {0: -1})


def _svd(x: Any, /, *, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    if not compute_uv:  # NumPy's keyword, which array-api-compat's matrix_rank passes
        return _svdvals(x)
    if x.ndim == 2 and not full_matrices:
        return _compat.linalg.svd(_one_chunk_across(x), full_matrices=False)
    rows, cols = x.shape[-2:]
    signature = "(m,n)->(m,m),(k),(n,n)" if full_matrices else "(m,n)->(m,k),(k),(k,n)"
    return _per_matrix(
        lambda a: tuple(np.linalg.svd(a, full_matrices=full_matrices)), signature, x,
        dtypes=(x.dtype, _real(x.dtype), x.dtype), sizes={"k": builtins.min(rows, cols)},
    )  # fmt: skip


#: NumPy's qr, typed to take the mode as a string.
_numpy_qr: Any = np.linalg.qr


def _qr(x: Any, /, *, mode: str = "reduced") -> Any:
    # Dask factors one tall-and-skinny matrix, in mode "reduced" only: others, NumPy's.
    if x.ndim == 2 and mode == "reduced" and x.shape[0] >= x.shape[1]:
        return _compat.linalg.qr(x.rechunk({1: -1}))
    rows, cols = x.shape[-2:]
    k = builtins.min(rows, cols)
    q_cols, r_rows = (rows, rows) if mode == "complete" else (k, k)
    return _per_matrix(
        lambda a: tuple(_numpy_qr(a, mode=mode)), "(m,n)->(m,q),(r,n)", x,
        dtypes=(x.dtype, x.dtype), sizes={"q": q_cols, "r": r_rows},
    )  # fmt: skip


def _matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    # Dask's norms by singular values take one matrix: those of a stack from its svdvals.
    if ord not in (2, -2, "nuc"):
        return _compat.linalg.matrix_norm(x, keepdims=keepdims, ord=ord)
    if x.ndim == 2:
        return _compat.linalg.matrix_norm(_one_chunk_across(x), keepdims=keepdims, ord=ord)
    values = _svdvals(x)
    if ord == "nuc":
        norm = _compat.sum(values, axis=-1)
    else:
        norm = (_compat.max if ord == 2 else _compat.min)(values, axis=-1)
    return norm[..., None, None] if keepdims else norm


def _svdvals(x: Any, /) -> Any:
    return _per_matrix(
        lambda a: np.linalg.svd(a, compute_uv=False), "(m,n)->(k)", x,
        dtypes=_real(x.dtype), sizes={"k": builtins.min(x.shape[-2:])},
    )  # fmt: skip


def _matrix_rank(x: Any, /, *, rtol: Any = None) -> Any:
    # array-api-compat's takes the singular values from Dask's svd, which has no compute_uv.
    if x.ndim < 2:
        raise np.linalg.LinAlgError("matrix_rank() takes a matrix (or a stack), not a vector")
    values = _svdvals(x)
    largest = _compat.max(values, axis=-1, keepdims=True)
    if rtol is None:
        tolerance = largest * builtins.max(x.shape[-2:]) * _compat.finfo(values.dtype).eps
    else:
        tolerance = largest * _compat.asarray(rtol)[..., None]
    return _compat.count_nonzero(values > tolerance, axis=-1)


def _cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    x1, x2 = _compat.broadcast_arrays(x1, x2)
    if x1.shape[axis] != 3:
        raise ValueError(f"cross(): axis {axis} has length {x1.shape[axis]}, not 3")
    before = (slice(None),) * (axis % x1.ndim)
    keys = [(*before, slice(i, i + 1)) for i in range(3)]
    a, b = [x1[key] for key in keys], [x2[key] for key in keys]
    parts = [a[(i + 1) % 3] * b[(i + 2) % 3] - a[(i + 2) % 3] * b[(i + 1) % 3] for i in range(3)]
    return _compat.concat(parts, axis=axis)


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


linalg = _Extension(
    f"{__name__}.linalg",
    _compat.linalg,
    {
        "cholesky": _cholesky,
        "cross": _cross,
        "det": _det,
        "eig": _eig,
        "eigh": _eigh,
        "eigvals": _eigvals,
        "eigvalsh": _eigvalsh,
        "inv": _inv,
        "matrix_norm": _matrix_norm,
        "matrix_power": _matrix_power,
        "matrix_rank": _matrix_rank,
        "pinv": _pinv,
        "qr": _qr,
        "slogdet": _slogdet,
        "solve": _solve,
        "svd": _svd,
        "svdvals": _svdvals,
    },
)
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
