"""NumPy-style indexing computed with only what the Array API standard guarantees.

``x[key]`` in NumPy takes keys the standard leaves out: integer arrays mixed
with slices or ``...``, keys shorter than ``x.ndim``, boolean masks beside other
indices, slices with negative steps (PyTorch has none) or bounds past the end.
:func:`plan` rewrites such a key, once per call, into steps every Array API
library has:

1. ``flip`` the axes that negative-step slices walk backwards;
2. one basic index (positive-step slices, ints, ``None``) on every axis;
3. the integer arrays (masks become their ``nonzero`` arrays) gathered as one
   flat index along one axis: their axes are made adjacent (moved to the front
   when NumPy puts the result there), merged by ``reshape``, and ``take`` picks
   along the merged axis.

:meth:`IndexPlan.gather` runs the steps forward (``x[key]``);
:meth:`IndexPlan.scatter_add` runs their adjoints backwards (the gradient of
``x[key]``), where the ``take`` becomes a segment sum: :func:`segment_sum`,
which adds repeated indices up.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from plugrad.errors import IndexOutOfRangeError, InvalidIndexError
from plugrad.plugins._rules import axis_slice, device_of, index_dtype

#: ``segment_sum(xp, values, index, size, axis)``; see :func:`segment_sum`.
SegmentSum = Callable[[Any, Any, Any, int, int], Any]


def put(out: Any, key: Any, value: Any) -> Any:
    """``out`` with ``out[key] = value``, for a fresh array ``out`` that nothing else holds.

    Writable arrays are written in place; immutable ones (JAX's) have no item
    assignment but an ``.at[key].set(value)`` that returns the updated copy.
    """
    if 0 in getattr(value, "shape", ()):
        return out  # nothing to write (Dask refuses a value without elements)
    at = getattr(out, "at", None)
    if at is not None:
        return at[key].set(value)
    out[key] = value
    return out


def put_added(out: Any, key: Any, value: Any) -> Any:
    """``out`` with ``out[key] += value`` for a basic ``key``, like :func:`put`."""
    at = getattr(out, "at", None)
    if at is not None:
        return at[key].add(value)
    out[key] += value
    return out


def _is_array(k: Any) -> bool:
    return hasattr(k, "shape") and hasattr(k, "dtype")


def _is_bool_array(xp: Any, k: Any) -> bool:
    return xp.isdtype(k.dtype, "bool")


def sole_mask(xp: Any, key: tuple[Any, ...], ndim: int) -> Any:
    """The boolean array if ``key`` is a mask on the leading axes and nothing else, else None.

    The standard indexes with such a mask directly (``x[mask]``), and assigns through it.
    """
    mask, consumed = None, 0
    for k in key:
        if _is_array(k):
            if mask is not None or not _is_bool_array(xp, k) or k.ndim == 0:
                return None
            mask, consumed = k, consumed + k.ndim
        elif type(k) is slice and k == slice(None):
            if mask is None:
                return None  # a slice before the mask: the mask is not on the leading axes
            consumed += 1
        elif k is Ellipsis:
            if mask is None:
                return None  # (x[..., mask] masks the trailing axes)
        else:
            return None
    return mask if consumed <= ndim else None


class IndexPlan:
    """The standard steps that compute ``x[key]`` for one key and one shape of ``x``."""

    __slots__ = (
        "basic",
        "flat",
        "flips",
        "indexed_shape",
        "out_shape",
        "permutation",
        "shape",
        "sizes",
        "start",
        "target",
    )

    def __init__(self) -> None:
        self.shape: tuple[int, ...] = ()
        #: Axes of ``x`` flipped first, for negative-step slices.
        self.flips: tuple[int, ...] = ()
        #: The basic key of step 2, or None when it selects everything.
        self.basic: tuple[Any, ...] | None = None
        #: ``basic`` without its ``None`` entries: what an assignment may hold.
        self.target: tuple[Any, ...] = ()
        #: The shape after step 2 (and the permutation, if any).
        self.indexed_shape: tuple[int, ...] = ()
        #: Step 3 moves the indexed axes to the front with this permutation, or keeps them.
        self.permutation: tuple[int, ...] | None = None
        #: Where the indexed axes start (after the permutation), and their sizes.
        self.start = 0
        self.sizes: tuple[int, ...] = ()
        #: The flat index into the merged axes, as a 1-D array (None: no integer arrays).
        self.flat: Any = None
        self.out_shape: tuple[int, ...] = ()

    def gather(self, xp: Any, x: Any) -> Any:
        """``x[key]``."""
        if self.flips:
            x = xp.flip(x, axis=self.flips)
        if self.basic is not None:
            x = x[self.basic]
        if self.flat is None:
            return x
        if self.permutation is not None:
            x = xp.permute_dims(x, self.permutation)
        shape, start, end = self.indexed_shape, self.start, self.start + len(self.sizes)
        merged = xp.reshape(x, (*shape[:start], math.prod(self.sizes), *shape[end:]))
        return xp.reshape(xp.take(merged, self.flat, axis=start), self.out_shape)

    def scatter_add(self, xp: Any, values: Any, segment_sum: SegmentSum) -> Any:
        """Zeros of ``x``'s shape with ``values`` added at ``[key]`` (the adjoint of gather)."""
        g = xp.broadcast_to(values, self.out_shape)
        if self.flat is not None:
            shape, start, end = self.indexed_shape, self.start, self.start + len(self.sizes)
            g = xp.reshape(g, (*shape[:start], self.flat.shape[0], *shape[end:]))
            g = segment_sum(xp, g, self.flat, math.prod(self.sizes), start)
            g = xp.reshape(g, shape)
            if self.permutation is not None:
                inverse = sorted(range(len(self.permutation)), key=self.permutation.__getitem__)
                g = xp.permute_dims(g, tuple(inverse))
        if self.basic is not None:
            out = xp.zeros(self.shape, dtype=values.dtype, device=device_of(values))
            # An assignment key may not hold None: drop the size-1 axes None made.
            g = put(out, self.target, xp.reshape(g, out[self.target].shape))
        if self.flips:
            g = xp.flip(g, axis=self.flips)
        return g

    def assign(self, xp: Any, x: Any, value: Any) -> Any:
        """A copy of ``x`` with ``x[key] = value``; of repeated indices the last write wins."""
        if not _is_array(value):
            value = xp.asarray(value, dtype=x.dtype, device=device_of(x))
        elif value.dtype != x.dtype:
            value = xp.astype(value, x.dtype)
        out = xp.asarray(xp.flip(x, axis=self.flips) if self.flips else x, copy=True)
        v = xp.broadcast_to(value, self.out_shape)
        if self.flat is not None:
            shape, start, end = self.indexed_shape, self.start, self.start + len(self.sizes)
            region = out if self.basic is None else out[self.basic]
            if self.permutation is not None:
                region = xp.permute_dims(region, self.permutation)
            merged = xp.reshape(region, (*shape[:start], math.prod(self.sizes), *shape[end:]))
            v = xp.reshape(v, (*shape[:start], self.flat.shape[0], *shape[end:]))
            v = xp.reshape(_last_writes(xp, merged, v, self.flat, start), shape)
            if self.permutation is not None:
                inverse = sorted(range(len(self.permutation)), key=self.permutation.__getitem__)
                v = xp.permute_dims(v, tuple(inverse))
        target = self.target if self.basic is not None else (Ellipsis,)
        out = put(out, target, xp.reshape(v, out[target].shape))
        return xp.flip(out, axis=self.flips) if self.flips else out


class _NewAxis:
    """A new axis of length 1, indexed by ``positions`` (zeros): what a 0-d mask does."""

    __slots__ = ("positions",)

    def __init__(self, positions: Any) -> None:
        self.positions = positions


#: Where a ``...`` of no axes stood: it indexes nothing, but to NumPy it parts the index
#: arrays on its two sides (their axes go first), as a slice between them would.
_PARTING = object()


def _last_writes(xp: Any, current: Any, values: Any, index: Any, axis: int) -> Any:
    """``current`` with slot ``index[i]`` along ``axis`` set to ``values[i]``; the last i wins."""
    if index.shape[0] == 0:
        return current
    order = xp.argsort(index, stable=True)  # stable: equal indices keep their order
    grouped = xp.take(index, order)
    slots = xp.arange(current.shape[axis], dtype=index.dtype, device=device_of(index))
    last = xp.clip(xp.searchsorted(grouped, slots, side="right") - 1, min=0)
    along = (1,) * axis + (-1,) + (1,) * (current.ndim - axis - 1)
    present = xp.reshape(xp.take(grouped, last) == slots, along)
    return xp.where(present, xp.take(values, xp.take(order, last), axis=axis), current)


def _expand(xp: Any, key: tuple[Any, ...], shape: tuple[int, ...], device: Any) -> list[Any]:
    """One entry per axis of ``x`` (None entries between): ``...`` spelled out, masks as arrays.

    A 0-d boolean entry becomes a new axis indexed by the positions where it is
    true (NumPy's rule); an n-d mask becomes its ``nonzero`` arrays, once its
    shape is checked against the axes it indexes.
    """
    ndim = len(shape)
    consumed, ellipses = 0, 0
    for k in key:
        if k is Ellipsis:
            ellipses += 1
        elif k is not None and not isinstance(k, bool):
            consumed += k.ndim if _is_array(k) and _is_bool_array(xp, k) else 1
    if ellipses > 1:
        raise InvalidIndexError("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        raise InvalidIndexError(
            f"too many indices: the array has {ndim} dimension(s) but {consumed} were indexed"
        )
    entries: list[Any] = []
    axis = 0  # the axis of x the next entry indexes
    for k in key:
        if k is Ellipsis:
            entries.extend([slice(None)] * (ndim - consumed) or [_PARTING])
            axis += ndim - consumed
        elif isinstance(k, bool) or (_is_array(k) and _is_bool_array(xp, k) and k.ndim == 0):
            flag = xp.reshape(xp.asarray(k, device=device), (1,))
            entries.append(_NewAxis(xp.nonzero(flag)[0]))
        elif _is_array(k) and _is_bool_array(xp, k):
            # NOTE: nonzero of a mask shorter than its axes would pick valid positions.
            indexed = tuple(shape[axis : axis + k.ndim])
            if tuple(k.shape) != indexed:
                axes = f"axis {axis}" if k.ndim == 1 else f"axes {axis} to {axis + k.ndim - 1}"
                raise InvalidIndexError(
                    f"a boolean index of shape {tuple(k.shape)} does not match {axes} of "
                    f"shape {indexed}; a mask must have the shape of the axes it indexes"
                )
            entries.extend(xp.nonzero(k))
            axis += k.ndim
        else:
            entries.append(k)
            axis += k is not None
    if not ellipses:
        entries.extend([slice(None)] * (ndim - consumed))
    return entries


def _checked_index(xp: Any, index: Any, size: int, axis: int) -> Any:
    """``index`` (an int or an integer array) made non-negative; out of bounds is an IndexError.

    NOTE: merged axes would turn an index past the end of one axis into a valid
    position of the next, so bounds are checked here, not left to ``take``.
    """
    if not _is_array(index):
        position = operator.index(index)
        if not -size <= position < size:
            raise IndexOutOfRangeError(
                f"index {position} is out of bounds for axis {axis} with size {size}"
            )
        return position % size if size else position
    if not xp.isdtype(index.dtype, "integral"):
        raise InvalidIndexError(
            f"arrays used as indices must have an integer or bool dtype, not {index.dtype}"
        )
    wide = index_dtype(xp, index)
    if index.dtype != wide:  # int8's -size and size may wrap; uint8 - size would (no int64 on
        index = xp.astype(index, wide, copy=False)  # JAX without 64-bit types)
    if bool(xp.any((index < -size) | (index >= size))):
        raise IndexOutOfRangeError(f"an index is out of bounds for axis {axis} with size {size}")
    return xp.where(index < 0, index + size, index)


def plan(xp: Any, shape: tuple[int, ...], key: Any, device: Any) -> IndexPlan:
    """The standard steps computing ``x[key]`` for ``x`` of ``shape`` (a NumPy-style key)."""
    key = key if type(key) is tuple else (key,)
    entries = _expand(xp, key, tuple(shape), device)
    advanced = any(_is_array(e) or type(e) is _NewAxis for e in entries)
    result = IndexPlan()
    result.shape = tuple(shape)
    flips: list[int] = []
    basic: list[Any] = []
    indexed: list[int] = []  # the shape after the basic index
    picks: list[tuple[int, Any, int, int]] = []  # (axis after basic, index, size, axis of x)
    parted_at: list[int] = []  # axes after basic where a `...` of no axes stood before
    axis = 0
    for e in entries:
        if e is _PARTING:
            parted_at.append(len(indexed))
            continue
        if e is None:
            basic.append(None)
            indexed.append(1)
            continue
        if type(e) is _NewAxis:
            picks.append((len(indexed), e.positions, 1, axis))
            basic.append(None)
            indexed.append(1)
            continue
        size = shape[axis]
        if type(e) is slice:
            start, stop, step = e.indices(size)
            if step < 0:
                flips.append(axis)
                start, stop, step = size - 1 - start, size - 1 - stop, -step
            chosen = range(start, stop, step)
            basic.append(slice(None) if len(chosen) == size else slice(start, stop, step))
            indexed.append(len(chosen))
        elif advanced:
            picks.append((len(indexed), _checked_index(xp, e, size, axis), size, axis))
            basic.append(slice(None))
            indexed.append(size)
        else:
            position = operator.index(e)
            if not -size <= position < size:
                raise IndexOutOfRangeError(
                    f"index {position} is out of bounds for axis {axis} with size {size}"
                )
            basic.append(position)
        axis += 1
    result.flips = tuple(flips)
    if any(k is None or k != slice(None) for k in basic):
        result.basic = tuple(basic)
        result.target = tuple(k for k in basic if k is not None)
    if not picks:
        result.indexed_shape = result.out_shape = tuple(indexed)
        return result

    axes = [p[0] for p in picks]
    start = axes[0]
    if axes != list(range(start, start + len(axes))) or any(
        start < at <= axes[-1] for at in parted_at
    ):
        # NumPy puts the result of separated integer arrays first.
        rest = [a for a in range(len(indexed)) if a not in axes]
        result.permutation = (*axes, *rest)
        indexed = [indexed[a] for a in result.permutation]
        start = 0
    flat: Any = 0
    stride = 1
    for _, index, size, _ in reversed(picks):
        flat = index * stride + flat if stride != 1 else index + flat
        stride *= size
    result.start = start
    result.sizes = tuple(p[2] for p in picks)
    end = start + len(picks)
    result.indexed_shape = tuple(indexed)
    result.out_shape = (*indexed[:start], *flat.shape, *indexed[end:])
    result.flat = xp.reshape(flat, (-1,))
    return result


def segment_sum(
    xp: Any, values: Any, index: Any, size: int, axis: int, combine: Any = operator.add
) -> Any:
    """Sum the slices of ``values`` along ``axis`` into ``size`` slots by a 1-D ``index``.

    ``out[..., j, ...]`` is the sum of every ``values[..., i, ...]`` with
    ``index[i] == j`` (zero where no ``i`` has). Sorting brings equal indices
    together; a segmented prefix sum by doubling (each step adds the partial
    sum ``step`` places back when it belongs to the same index) then leaves each
    index's total on its last element, in ``ceil(log2(most repeats))`` steps; a
    binary search finds that element for each slot. O(n log n), and each total
    is summed only from its own terms (no cancellation, unlike differences of
    one cumulative sum). ``combine`` (an associative ``combine(a, b)`` of two
    arrays: ``xp.multiply``, ``xp.maximum``, ...) reduces with another
    operation than the sum.
    """
    n, ndim = index.shape[0], values.ndim
    out_shape = (*values.shape[:axis], size, *values.shape[axis + 1 :])
    if n == 0 or size == 0:
        return xp.zeros(out_shape, dtype=values.dtype, device=device_of(values))
    order = xp.argsort(index, stable=True)
    index = xp.take(index, order)
    values = xp.take(values, order, axis=axis)
    along = (1,) * axis + (-1,) + (1,) * (ndim - axis - 1)
    step = 1
    while step < n:
        same = index[step:] == index[:-step]
        if not bool(xp.any(same)):
            break  # sorted: no repeat `step` apart means none further apart either
        tail = values[axis_slice(ndim, axis, step, None)]
        back = values[axis_slice(ndim, axis, None, n - step)]
        summed = xp.where(xp.reshape(same, along), combine(tail, back), tail)
        values = xp.concat([values[axis_slice(ndim, axis, None, step)], summed], axis=axis)
        step *= 2
    slots = xp.arange(size, dtype=index.dtype, device=device_of(values))
    last = xp.clip(xp.searchsorted(index, slots, side="right") - 1, min=0)
    present = xp.reshape(xp.take(index, last) == slots, along)
    totals = xp.take(values, last, axis=axis)
    return xp.where(present, totals, xp.zeros_like(totals))
