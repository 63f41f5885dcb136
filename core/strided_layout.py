"""The memory layout PyTorch would give a view, kept for backends whose arrays have none.

JAX's and Dask's arrays have no strides: plugrad makes their views copies and
brings them up to date (see :mod:`plugrad.versions`). Whether PyTorch's
``reshape``, ``contiguous()`` or ``view()`` gives a view of a tensor, or a copy,
depends on the tensor's layout, though: ``x.t().contiguous()`` is a copy, and a
change of it must not reach ``x``. So each view made there keeps the strides a
strided library would give it (``_layout``, in elements), derived from its
input's as PyTorch derives them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["follow", "reshapes_in_place", "row_major_strides", "strides_of"]

Layout = tuple[tuple[int, ...], tuple[int, ...]]  # (shape, strides)


def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides, in elements, of a new array of ``shape`` (row-major)."""
    steps, step = [], 1
    for n in reversed(shape):
        steps.append(step)
        step *= max(n, 1)
    return tuple(reversed(steps))


def strides_of(tensor: Any) -> tuple[int, ...]:
    """The strides of ``tensor`` on a backend without a layout: its view's, or row-major
    (a tensor that is no view is a new array)."""
    layout = getattr(tensor, "_layout", None)
    shape = tuple(tensor._array.shape)
    if layout is not None and len(layout) == len(shape) and 0 not in shape:
        return tuple(layout)
    return row_major_strides(shape)  # (an empty tensor lays out nothing: contiguous)


def _reshaped(layout: Layout, new_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides of ``layout`` seen in ``new_shape`` without a copy, or None where that
    takes one (PyTorch's rule: each run of old axes lying one after the other in memory
    is split into new axes of the same number of elements)."""
    shape, strides = layout
    if math.prod(shape) != math.prod(new_shape) or any(n < 0 for n in new_shape):
        return None
    if not shape or math.prod(shape) == 0:
        return row_major_strides(new_shape)
    result = [0] * len(new_shape)
    view_axis = len(new_shape) - 1
    base = strides[-1]  # the step of the innermost axis of the current run
    run_size = view_size = 1
    for axis in reversed(range(len(shape))):
        run_size *= shape[axis]
        ends = axis == 0 or (shape[axis - 1] != 1 and strides[axis - 1] != run_size * base)
        if not ends:
            continue
        while view_axis >= 0 and (view_size < run_size or new_shape[view_axis] == 1):
            result[view_axis] = view_size * base
            view_size *= new_shape[view_axis]
            view_axis -= 1
        if view_size != run_size:
            return None
        if axis > 0:
            base = strides[axis - 1]
            run_size = view_size = 1
    return tuple(result) if view_axis == -1 else None


def reshapes_in_place(tensor: Any, shape: tuple[int, ...]) -> bool:
    """Whether a strided library would give ``tensor`` seen in ``shape`` as a view."""
    layout = (tuple(tensor._array.shape), strides_of(tensor))
    return _reshaped(layout, tuple(shape)) is not None


def _indexed(layout: Layout, key: tuple[Any, ...]) -> Layout | None:
    """The layout of ``x[key]`` for a basic index (ints, slices, None, Ellipsis)."""
    shape, strides = layout
    taken = sum(1 for k in key if k is not None and k is not Ellipsis)
    at = next((i for i, k in enumerate(key) if k is Ellipsis), len(key))
    key = key[:at] + (slice(None),) * (len(shape) - taken) + key[at + 1 :]
    new_shape: list[int] = []
    new_strides: list[int] = []
    axis = 0
    for k in key:
        if k is None:
            new_shape.append(1)
            new_strides.append(0)
        elif type(k) is slice:
            start, stop, step = k.indices(shape[axis])
            new_shape.append(len(range(start, stop, step)))
            new_strides.append(strides[axis] * step)
            axis += 1
        elif type(k) is int:
            axis += 1
        else:
            return None
    return tuple(new_shape), tuple(new_strides)


def _axes(axis: Any, ndim: int) -> list[int]:
    # (a 0-d tensor's axis 0 or -1, which squeeze takes, stays as given)
    return [a % ndim if ndim else a for a in (axis if isinstance(axis, Sequence) else (axis,))]


def _permuted(layout: Layout, axes: Sequence[int]) -> Layout:
    shape, strides = layout
    return tuple(shape[a] for a in axes), tuple(strides[a] for a in axes)


def _moved(layout: Layout, source: Any, destination: Any) -> Layout:
    ndim = len(layout[0])
    sources, targets = _axes(source, ndim), _axes(destination, ndim)
    order = [a for a in range(ndim) if a not in sources]
    for target, moved in sorted(zip(targets, sources)):
        order.insert(target, moved)
    return _permuted(layout, order)


def _expanded_dims(layout: Layout, axis: Any = 0) -> Layout:
    shape, strides = list(layout[0]), list(layout[1])
    count = len(axis) if isinstance(axis, Sequence) else 1
    for a in sorted(_axes(axis, len(shape) + count)):
        strides.insert(a, shape[a] * strides[a] if a < len(shape) else 1)
        shape.insert(a, 1)
    return tuple(shape), tuple(strides)


def _squeezed(layout: Layout, axis: Any) -> Layout:
    shape, strides = layout
    gone = set(_axes(axis, len(shape)))
    kept = [a for a in range(len(shape)) if a not in gone]
    return tuple(shape[a] for a in kept), tuple(strides[a] for a in kept)


def _broadcast(layout: Layout, shape: Sequence[int]) -> Layout:
    old_shape, old_strides = layout
    lead = len(shape) - len(old_shape)
    kept = [0 if n == 1 and m != 1 else s for n, s, m in zip(old_shape, old_strides, shape[lead:])]
    return tuple(shape), (0,) * lead + tuple(kept)


def _diagonal(layout: Layout, offset: int = 0) -> Layout:
    shape, strides = layout
    rows, cols = shape[-2:]
    length = min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols)
    return (*shape[:-2], max(length, 0)), (*strides[:-2], strides[-2] + strides[-1])


#: How each view op lays out its view, from its input's layout and the op's params.
_VIEWS: dict[str, Callable[..., Layout]] = {
    "permute_dims": _permuted,
    "matrix_transpose": lambda layout: _moved(layout, -1, -2),
    "moveaxis": _moved,
    "expand_dims": _expanded_dims,
    "squeeze": _squeezed,
    "broadcast_to": _broadcast,
    "diagonal": _diagonal,
}


def follow(tensor: Any, alias: Any, key: Any, view_of: Any, unstacked: Any) -> None:
    """Give ``alias``, a view of ``tensor`` made as ``key`` says (see
    :func:`plugrad.versions.add_alias`; not None), the layout a strided library would; one
    it cannot tell counts as a new array's (row-major)."""
    layout = (tuple(tensor._array.shape), strides_of(tensor))
    view: Layout | None = None
    if type(key) is tuple:
        view = _indexed(layout, key)
    elif type(key) is unstacked:
        view = _indexed(layout, key.index)
    elif type(key) is view_of:
        name, params = key.op.name, dict(key.params or {})
        if name in ("real", "imag"):  # complex -> real: two real elements in one
            view = layout[0], tuple(2 * s for s in layout[1])
        elif name == "reshape":
            new_shape = tuple(alias._array.shape)
            strides = _reshaped(layout, new_shape)
            view = None if strides is None else (new_shape, strides)
        elif name in _VIEWS:
            try:
                view = _VIEWS[name](layout, **params)
            except (TypeError, IndexError, ValueError):
                view = None
    else:  # detach(), an alias: the same memory, the same layout
        view = layout
    if view is not None and view[0] == tuple(alias._array.shape):
        alias._layout = view[1]
