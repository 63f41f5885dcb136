"""The kernels of ``scatter_add``: shared by the indexing ops' gradients and ``embedding``.

The generic kernel rewrites each key into standard steps (``_index_plan``) and
adds repeated positions with a sort and a segmented sum: O(n log n). NumPy adds
with ``np.add.at``: for the keys of ``take`` and of indexing by one integer
array, through one flat position per element, which NumPy adds two to four
times as fast as an index array beside slices (4096 rows of 16: 130 against
520 µs), made 65,536 at a time so that they never take more than 512 KB.
"""

from __future__ import annotations

import math
from typing import Any

from plugrad.plugins._index_plan import plan, put, segment_sum, sole_mask
from plugrad.plugins._rules import device_of, is_half


def scatter_add_generic(xp: Any, values: Any, /, *, key: Any, shape: tuple[int, ...]) -> Any:
    if is_half(xp, values.dtype):  # summed in float32 (see scatter_add_numpy)
        wide = scatter_add_generic(xp, xp.astype(values, xp.float32), key=key, shape=shape)
        return xp.astype(wide, values.dtype)
    key = key if type(key) is tuple else (key,)
    mask = sole_mask(xp, key, len(shape))
    if mask is not None:
        # Every position is selected once: assignment is addition.
        return put(xp.zeros(shape, dtype=values.dtype, device=device_of(values)), (mask,), values)
    # NOTE: integer arrays may repeat positions, and `out[key] = values` would keep only
    # one of them: the plan adds them up with a segment sum.
    return plan(xp, tuple(shape), key, device_of(values)).scatter_add(xp, values, segment_sum)


def _is_basic(key: Any) -> bool:
    """Whether ``key`` is made of slices, ints, ``...`` and ``None`` only (no arrays, no bools)."""
    parts = key if type(key) is tuple else (key,)
    return all(type(k) is slice or type(k) is int or k is Ellipsis or k is None for k in parts)


#: From this many values on, a row scatter-add goes through flat positions (see below).
FLAT_SCATTER_MIN_SIZE = 1024
#: Flat positions are made this many at a time, so they never take much memory.
FLAT_SCATTER_BLOCK = 1 << 16


def scatter_add_numpy(xp: Any, values: Any, /, *, key: Any, shape: tuple[int, ...]) -> Any:
    import numpy as np

    # float16 is summed in float32 and rounded once, as PyTorch's: the gradient of a running
    # maximum reached 3,000 times, added in float16, came out 4008 for 3301 (+1.1 rounds to
    # +2 from 2048 on).
    if values.dtype == np.float16:
        wide = scatter_add_numpy(xp, values.astype(np.float32), key=key, shape=shape)
        return wide.astype(np.float16)
    out = np.zeros(shape, dtype=values.dtype)
    if _is_basic(key):
        # Slices and ints pick each position once: assignment is addition (and several
        # times faster than np.add.at).
        out[key] = values
        return out
    rows = None
    if values.size >= FLAT_SCATTER_MIN_SIZE and values.flags.c_contiguous:
        rows = picked_rows(np, key, shape, values.shape)
    if rows is None:
        np.add.at(out, key, values)
        return out
    # np.add.at is several times faster with one flat position per element than with
    # an index array beside slices; the sums are the same, added in the same order.
    return add_rows(np, out, values, *rows)


def add_rows(np: Any, out: Any, values: Any, outer: int, n: int, rows: Any, inner: int) -> Any:
    """Add ``values``, an ``(outer, len(rows), inner)`` array, at ``rows`` of ``out``.

    ``out`` is seen as ``(outer, n, inner)``. The flat positions are made a
    block of rows at a time, in order, so each element's sum is added up in
    the order ``np.add.at(out, key, values)`` would use.
    """
    flat_out = out.reshape(-1)
    flat_values = values.reshape(-1)
    within = np.arange(inner, dtype=np.intp)
    picked = outer * rows.size
    step = max(1, FLAT_SCATTER_BLOCK // inner)
    for first in range(0, picked, step):
        last = min(first + step, picked)
        if outer == 1:
            starts = rows[first:last] * inner
        else:
            block, row = np.divmod(np.arange(first, last, dtype=np.intp), rows.size)
            starts = (block * n + rows[row]) * inner
        positions = (starts[:, None] + within).reshape(-1)
        np.add.at(flat_out, positions, flat_values[first * inner : last * inner])
    return out


def picked_rows(
    np: Any, key: Any, shape: tuple[int, ...], values_shape: tuple[int, ...]
) -> tuple[int, int, Any, int] | None:
    """``(outer, n, rows, inner)`` if ``[key]`` picks whole rows of ``shape`` along one axis.

    That is the key of ``take`` or of indexing by one integer array: full
    slices, one integer array, then full slices or ``...``; ``rows`` are its
    indices made non-negative, ``n`` the axis's length, ``outer`` and ``inner``
    the sizes before and after it. ``None`` for any other key, for values that broadcast and
    for indices out of bounds (NumPy then raises its own error).
    """
    key = key if type(key) is tuple else (key,)
    full = slice(None)
    axis = 0
    while axis < len(key) and type(key[axis]) is slice and key[axis] == full:
        axis += 1
    if axis >= len(shape) or axis >= len(key):
        return None
    indices = key[axis]
    if type(indices) is not np.ndarray or indices.dtype.kind not in "iu":
        return None
    rest = key[axis + 1 :]
    if rest and rest[-1] is Ellipsis:
        rest = rest[:-1]
    if any(type(k) is not slice or k != full for k in rest) or axis + 1 + len(rest) > len(shape):
        return None
    if values_shape != (*shape[:axis], *indices.shape, *shape[axis + 1 :]):
        return None  # values that broadcast: NumPy's add.at handles them
    n = shape[axis]
    rows = indices.reshape(-1).astype(np.intp, copy=False)
    if rows.size:
        low, high = int(rows.min()), int(rows.max())
        if low < -n or high >= n:
            return None
        if low < 0:
            rows = np.where(rows < 0, rows + n, rows)
    return math.prod(shape[:axis]), n, rows, math.prod(shape[axis + 1 :])
