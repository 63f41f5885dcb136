"""Indexing: ``x[key]``, ``take``, ``take_along_axis``, and the scatter-add behind their gradients.

Every indexing gradient is one :func:`scatter_add`: zeros of the input's shape
with the output gradient *added* at the indexed positions, so an element picked
several times (repeated integer indices) receives the sum of all its
contributions -- never only the last one, which is what a plain
``out[key] = g`` would give.

Keys are NumPy's on every backend. The standard's own indexing is narrower
(integer arrays only beside integers, no negative steps in PyTorch, ...), so
the generic kernels rewrite each key into standard steps (``_index_plan``),
and the scatter-add becomes a sort and a segmented sum: O(n log n), with
repeated indices added up. NumPy and CuPy index natively, and NumPy adds with
``np.add.at``: for the keys of ``take`` and of indexing by one integer array,
through one flat position per element, which NumPy adds two to four times as
fast as an index array beside slices (4096 rows of 16: 130 against 520 µs),
made 65,536 at a time so that they never take more than 512 KB.
"""

from __future__ import annotations

import math
from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op
from plugrad.plugins._index_plan import plan, put, segment_sum, sole_mask
from plugrad.plugins._rules import device_of


def _complete(key: Any) -> tuple[Any, ...]:
    """``key`` as a tuple; a basic key (no arrays) ends with ``...``, as the standard wants."""
    key = key if type(key) is tuple else (key,)
    if any(k is Ellipsis or hasattr(k, "shape") for k in key):
        return key
    return (*key, Ellipsis)


def _scatter_add_generic(xp: Any, values: Any, /, *, key: Any, shape: tuple[int, ...]) -> Any:
    key = key if type(key) is tuple else (key,)
    mask = sole_mask(xp, key, len(shape))
    if mask is not None:
        # Every position is selected once: assignment is addition.
        return put(xp.zeros(shape, dtype=values.dtype, device=device_of(values)), (mask,), values)
    # NOTE: integer arrays may repeat positions, and `out[key] = values` would keep only
    # one of them: the plan adds them up with a segment sum.
    return plan(xp, tuple(shape), key, device_of(values)).scatter_add(xp, values, segment_sum)


#: From this many values on, a row scatter-add goes through flat positions (see below).
FLAT_SCATTER_MIN_SIZE = 1024
#: Flat positions are made this many at a time, so they never take much memory.
FLAT_SCATTER_BLOCK = 1 << 16


def _scatter_add_numpy(xp: Any, values: Any, /, *, key: Any, shape: tuple[int, ...]) -> Any:
    import numpy as np

    out = np.zeros(shape, dtype=values.dtype)
    rows = None
    if values.size >= FLAT_SCATTER_MIN_SIZE and values.flags.c_contiguous:
        rows = _picked_rows(np, key, shape, values.shape)
    if rows is None:
        np.add.at(out, key, values)
        return out
    # np.add.at is several times faster with one flat position per element than with
    # an index array beside slices; the sums are the same, added in the same order.
    return _add_rows(np, out, values, *rows)


def _add_rows(np: Any, out: Any, values: Any, outer: int, n: int, rows: Any, inner: int) -> Any:
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


def _picked_rows(
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


scatter_add = op(
    "scatter_add",
    _scatter_add_generic,
    kernels={"numpy": _scatter_add_numpy},
    broadcasting=True,
    saves=(),
    array_params=("key",),
    standard=False,
    doc="""Return zeros of ``shape`` with ``values`` added at ``[key]``, accumulating repeats.

    ``scatter_add(v, key=k, shape=s)[k]`` sums every value sent to the same
    element: positions repeated in integer index arrays add up. This is the
    gradient of indexing (``x[key]``, :func:`take`, :func:`take_along_axis`,
    ...); it is differentiable itself, so those ops have double backward.
    ``key`` is anything ``x[key]`` accepts (ints, slices, ``None``, ``...``,
    integer and boolean tensors); ``values`` broadcasts to the shape of ``x[key]``.
    Not part of the Array API standard.

    Examples
    --------
    >>> import plugrad
    >>> values = plugrad.tensor([1.0, 2.0, 3.0])
    >>> plugrad.scatter_add(values, key=plugrad.tensor([0, 2, 0]), shape=(3,))
    tensor([4., 0., 2.])
    """,
).vjp(lambda xp, g, ans, values, *, key, shape: xp.getitem(g, key=key))


def _positive_basic(key: tuple[Any, ...]) -> bool:
    """Whether ``key`` has no arrays and no negative steps: every library indexes it alike."""
    for k in key:
        if type(k) is slice:
            if k.step is not None and k.step < 0:
                return False
        elif hasattr(k, "shape"):
            return False
    return True


def _getitem_generic(xp: Any, x: Any, /, key: Any) -> Any:
    key = key if type(key) is tuple else (key,)
    if _positive_basic(key):
        try:
            return x[_complete(key)]
        except IndexError:
            pass  # e.g. slice bounds past the end, which array-api-strict refuses; plan() clips
    mask = sole_mask(xp, key, x.ndim)
    if mask is not None:
        return x[(mask,)]
    return plan(xp, tuple(x.shape), key, device_of(x)).gather(xp, x)


def _getitem_numpy_style(xp: Any, x: Any, /, key: Any) -> Any:
    # NumPy and CuPy index with every key the generic kernel rewrites, and faster.
    return x[_complete(key)]


getitem = op(
    "getitem",
    _getitem_generic,
    kernels={"numpy": _getitem_numpy_style, "cupy": _getitem_numpy_style},
    saves=(),
    standard=False,
    doc="""Index ``x[key]``; what ``Tensor.__getitem__`` calls (use ``x[key]`` instead).

    ``key`` is a tuple of ints, slices, ``None``, ``...`` and raw integer or
    boolean arrays of the backend. The gradient is a :func:`scatter_add`, so
    repeated integer indices accumulate.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> x[1, ::-1]
    tensor([4., 3.])
    >>> x[x > 2.5]
    tensor([3., 4.])
    """,
).vjp(lambda xp, g, ans, x, *, key: xp.scatter_add(g, key=key, shape=x.shape))


def _take_key(axis: int | None, ndim: int, indices: Any) -> tuple[Any, ...]:
    axis = 0 if axis is None else axis % ndim
    return (slice(None),) * axis + (indices,)


take = op(
    "take",
    lambda xp, x, indices, /, *, axis=None: xp.take(x, indices, axis=axis),
    saves=("indices",),
    doc="""Take elements of ``x`` along ``axis`` at integer ``indices`` (``axis`` optional for 1-D).

    Repeated indices accumulate their gradients.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    >>> y = plugrad.take(x, plugrad.tensor([2, 2, 0]), axis=1)
    >>> y
    tensor([[3., 3., 1.],
            [6., 6., 4.]], grad_fn=<TakeBackward>)
    >>> y.sum().backward()
    >>> x.grad
    tensor([[1., 0., 2.],
            [1., 0., 2.]])
    """,
).vjp(
    lambda xp, g, ans, x, indices, *, axis: xp.scatter_add(
        g, key=_take_key(axis, x.ndim, indices), shape=x.shape
    ),
    None,
)


def along_axis_key(
    xp: Any, indices: Any, axis: int, out_shape: tuple[int, ...], in_shape: tuple[int, ...]
) -> tuple[Any, ...]:
    """The key that indexes like ``take_along_axis(x, indices, axis)`` (for a scatter).

    Axes of ``x`` of length 1 that the indices broadcast over map to index 0.
    """
    ndim = len(out_shape)
    axis = axis % ndim
    key: list[Any] = []
    for d in range(ndim):
        if d == axis:
            key.append(indices)
            continue
        shape = [1] * ndim
        shape[d] = out_shape[d]
        positions = xp.arange(out_shape[d], device=device_of(indices))
        if in_shape[d] != out_shape[d]:
            positions = positions * 0
        key.append(xp.reshape(positions, tuple(shape)))
    return tuple(key)


take_along_axis = op(
    "take_along_axis",
    lambda xp, x, indices, /, *, axis=-1: xp.take_along_axis(x, indices, axis=axis),
    saves=("indices",),
    doc="""Pick from ``x`` along ``axis`` with ``indices`` of the same number of dimensions.

    ``take_along_axis(x, argsort(x, axis=a), axis=a)`` sorts ``x``; repeated
    indices accumulate their gradients.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([[3.0, 1.0], [2.0, 5.0]])
    >>> plugrad.take_along_axis(x, plugrad.argmax(x, axis=1, keepdims=True), axis=1)
    tensor([[3.],
            [5.]])
    """,
).vjp(
    lambda xp, g, ans, x, indices, *, axis: xp.scatter_add(
        g, key=along_axis_key(xp, indices, axis, tuple(g.shape), tuple(x.shape)), shape=x.shape
    ),
    None,
)


def _setitem_generic(xp: Any, x: Any, value: Any, /, key: Any) -> Any:
    key = key if type(key) is tuple else (key,)
    mask = sole_mask(xp, key, x.ndim)
    if mask is not None:
        return put(xp.asarray(x, copy=True), (mask,), value)
    return plan(xp, tuple(x.shape), key, device_of(x)).assign(xp, x, value)


def _setitem_numpy_style(xp: Any, x: Any, value: Any, /, key: Any) -> Any:
    out = xp.asarray(x, copy=True)
    out[_complete(key)] = value
    return out


setitem = op(
    "setitem",
    _setitem_generic,
    kernels={"numpy": _setitem_numpy_style, "cupy": _setitem_numpy_style},
    broadcasting=True,
    saves=(),
    array_params=("key",),
    standard=False,
    doc="""Return a copy of ``x`` with ``x[key] = value``; what ``x[key] = value`` records.

    ``value`` broadcasts to the shape of ``x[key]``. The gradient with respect
    to ``x`` is zero where it was overwritten; with respect to ``value`` it is
    the output gradient at ``key`` (summed over broadcasting). With repeated
    integer indices the last write wins, as in NumPy, and each occurrence
    passes its gradient to ``value``. Not part of the Array API standard: use
    ``x[key] = value``, which also updates ``x`` (see :doc:`autograd_mechanics`).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.setitem(plugrad.zeros(3), 5.0, key=1)
    tensor([0., 5., 0.])
    """,
).vjp(
    lambda xp, g, ans, x, value, *, key: xp.setitem(g, 0.0, key=key),
    lambda xp, g, ans, x, value, *, key: xp.getitem(g, key=key),
)


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [scatter_add, getitem, setitem, take, take_along_axis]
