"""Indexing: ``x[key]``, ``take``, ``take_along_axis``, and the scatter-add behind their gradients.

Every indexing gradient is one :func:`scatter_add`: zeros of the input's shape
with the output gradient *added* at the indexed positions, so an element picked
several times (repeated integer indices) receives the sum of all its
contributions -- never only the last one, which is what a plain
``out[key] = g`` would give.

Keys are NumPy's on every backend. The standard's own indexing is narrower
(integer arrays only beside integers, no negative steps in PyTorch, ...), so
the generic kernels rewrite each key into standard steps (``_index_plan``);
NumPy and CuPy index natively. The scatter-add kernels are in ``_scatter``.
One row per op (examples: the "Indexing" section of the API reference). The
Tensor methods ``x.gather(dim, index)``, ``x.index_select(dim, index)``,
``x.scatter(dim, index, src)``, ``x.scatter_add(dim, index, src)``,
``x.narrow(dim, start, length)`` and ``x.masked_select(mask)`` are PyTorch's;
so is ``x.scatter_reduce(dim, index, src, reduce)``, the method of
``scatter_along_axis``, which combines values sent to one position by a
segment reduction (a sort, then ``ceil(log2(most repeats))`` combining steps).
"""

from __future__ import annotations

import functools
import math
import operator
from typing import Any

from plugrad.errors import (
    ArgumentError,
    BackwardError,
    DtypeError,
    IndexOutOfRangeError,
    ShapeError,
)
from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, as_int, collect_ops, op
from plugrad.plugins import _rules
from plugrad.plugins._index_plan import plan, put, segment_sum, sole_mask
from plugrad.plugins._rules import (
    along_axis_key,
    check_positions,
    checked_axis,
    device_of,
    index_dtype,
    is_half,
    refuse_value_it_cannot_hold,
    require_array,
    require_bool_mask,
    without_leading_ones,
)
from plugrad.plugins._scatter import scatter_add_generic, scatter_add_numpy

# The rows are aligned by hand, one op per statement.
# fmt: off


def _complete(key: Any) -> tuple[Any, ...]:
    """``key`` as a tuple; a basic key (no arrays) ends with ``...``, as the standard wants."""
    key = key if type(key) is tuple else (key,)
    if any(k is Ellipsis or hasattr(k, "shape") for k in key):
        return key
    return (*key, Ellipsis)


def _torch_scatter_add(xp: Any, x: Any, dim: int, index: Any, src: Any) -> Any:
    """PyTorch's ``torch.scatter_add(input, dim, index, src)``: ``input.scatter_add(...)``."""
    return x.scatter_add(dim, index, src)


scatter_add = op("scatter_add", scatter_add_generic, kernels={"numpy": scatter_add_numpy},
                 vjp=lambda xp, g, ans, values, *, key, shape: xp.getitem(g, key=key),
                 broadcasting=True, saves=(), array_params=("key",), standard=False,
                 torch_function=_torch_scatter_add,
                 doc="Zeros of ``shape`` with ``values`` added at ``[key]``; repeats add up.")


def _positive_basic(key: tuple[Any, ...]) -> bool:
    """Whether ``key`` has no arrays and no negative steps: every library indexes it alike."""
    for k in key:
        if k is True or k is False:
            return False  # a new axis (NumPy's 0-d mask), which Dask takes for the index 0 or 1
        if type(k) is slice:
            if k.step is not None and k.step < 0:
                return False
        elif hasattr(k, "shape"):
            return False
    return True


def _ints_in_bounds(key: tuple[Any, ...], shape: tuple[int, ...]) -> None:
    """Raise IndexError for an int of a basic ``key`` past the end of its axis.

    JAX clamps it (``x[4]`` of four elements read the last one) where NumPy,
    PyTorch and the standard's other libraries raise.
    """
    axis = 0
    for position, k in enumerate(key):
        if k is None:
            continue
        if k is Ellipsis:
            axis = len(shape) - sum(1 for rest in key[position + 1 :] if rest is not None)
            continue
        if type(k) is not slice and axis < len(shape):
            index, size = operator.index(k), shape[axis]
            if not -size <= index < size:
                raise IndexOutOfRangeError(
                    f"index {index} is out of bounds for axis {axis} with size {size}"
                )
        axis += 1


def _getitem_generic(xp: Any, x: Any, /, key: Any) -> Any:
    key = key if type(key) is tuple else (key,)
    if _positive_basic(key):
        _ints_in_bounds(key, tuple(x.shape))
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


def _select(xp: Any, x: Any, dim: int, index: int) -> Any:
    """PyTorch's ``select(x, dim, index)``: the slice at ``index`` along ``dim``, that axis gone."""
    axis = checked_axis("select", dim, x.ndim)
    index, size = operator.index(index), x.shape[axis]
    if not -size <= index < size:
        raise IndexOutOfRangeError(
            f"select(): index {index} is out of range for dimension {dim} of length {size}"
        )
    return x[(slice(None),) * axis + (index,)]


getitem = op("getitem", _getitem_generic,
             kernels={"numpy": _getitem_numpy_style, "cupy": _getitem_numpy_style},
             vjp=lambda xp, g, ans, x, *, key: xp.scatter_add(g, key=key, shape=x.shape),
             saves=(), standard=False, methods={"select": _select}, aliases={"select": _select},
             doc="Index ``x[key]``; what ``Tensor.__getitem__`` calls (use ``x[key]`` instead).")


def _take_key(axis: int | None, ndim: int, indices: Any) -> tuple[Any, ...]:
    axis = 0 if axis is None else axis % ndim
    return (slice(None),) * axis + (indices,)


def _index_select(xp: Any, x: Any, dim: int, index: Any) -> Any:
    """PyTorch's ``x.index_select(dim, index)``: the slices at ``index`` (1-D) along ``dim``."""
    require_array("index_select", "index", index)
    if index.ndim > 1:
        raise ShapeError(
            f"index_select(): index must be 0-d or 1-d, got shape {tuple(index.shape)}; "
            "flatten it, or use take_along_dim/gather for an index per position"
        )
    if x.ndim == 0:  # as PyTorch: a 0-d tensor is its one element, selected by index 0
        checked_axis("index_select", dim, 1)
        if math.prod(index.shape) != 1:
            raise ShapeError(
                f"index_select(): a 0-d tensor takes one index, got {math.prod(index.shape)}"
            )
        flat = xp.reshape(index, (1,))
        if not bool(xp.all(flat == 0)):
            raise IndexOutOfRangeError("index_select(): a 0-d tensor has only index 0")
        return xp.reshape(xp.take(xp.reshape(x, (1,)), flat, axis=0), ())
    # A 0-d index selects one slice and keeps its dimension (length 1), as PyTorch's does.
    axis = checked_axis("index_select", dim, x.ndim)
    index = check_positions(xp, "index_select", index, x.shape[axis], dim=dim, wrap=False)
    return xp.take(x, xp.reshape(index, (1,)) if index.ndim == 0 else index, axis=axis)


def _take_grad(xp: Any, g: Any, ans: Any, x: Any, indices: Any, *, axis: int | None) -> Any:
    if axis is None and x.ndim != 1:  # positions in the flattened x (PyTorch's take)
        flat = xp.scatter_add(g, key=(indices,), shape=(math.prod(x.shape),))
        return xp.reshape(flat, x.shape)
    return xp.scatter_add(g, key=_take_key(axis, x.ndim, indices), shape=x.shape)


def _take(xp: Any, x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
    if axis is None:  # positions in the flattened x, as PyTorch's take
        x, axis = xp.reshape(x, (-1,)), 0
    axis = checked_axis("take", axis, x.ndim)
    indices = check_positions(xp, "take", indices, x.shape[axis], dim=axis, wrap=True)
    if indices.ndim == 1:
        return xp.take(x, indices, axis=axis)
    # Indices of any shape, as PyTorch's take and NumPy's (the standard's are 1-D).
    taken = xp.take(x, xp.reshape(indices, (-1,)), axis=axis)
    return xp.reshape(taken, (*x.shape[:axis], *indices.shape, *x.shape[axis + 1 :]))


def _take_along_axis(xp: Any, x: Any, indices: Any, /, *, axis: int = -1) -> Any:
    size = x.shape[checked_axis("take_along_axis", axis, x.ndim)]
    indices = check_positions(xp, "take_along_axis", indices, size, dim=axis, wrap=True)
    return xp.take_along_axis(x, indices, axis=axis)


take = op("take", _take, saves=("indices",), vjp=(_take_grad, None),
          methods={"index_select": _index_select}, aliases={"index_select": _index_select},
          doc="Take elements of ``x`` along ``axis`` at integer ``indices``; repeats add up.")


def _along_dim(
    function: str, xp: Any, x: Any, dim: int, index: Any, *, empty_any_shape: bool = False
) -> int:
    """``dim`` as an axis of ``x``, once ``dim`` and ``index`` are found fit for PyTorch's
    ``gather``/``scatter`` family (a dim out of range was wrapped: dim 2 of a matrix
    gathered along dim 0). With ``empty_any_shape`` an empty ``index`` may have any number
    of dimensions (gather's)."""
    axis = checked_axis(function, dim, x.ndim, zero_d_as_one=True)
    if not hasattr(index, "dtype") or not xp.isdtype(index.dtype, "integral"):
        raise DtypeError(
            f"{function}(): index must be a tensor of integers (int64, as PyTorch's), got "
            f"{getattr(index, 'dtype', type(index).__name__)}"
        )
    if (
        index.ndim != x.ndim
        and min(index.ndim, x.ndim) > 0
        and not (empty_any_shape and 0 in index.shape)
    ):
        raise ShapeError(
            f"{function}(): index must have as many dimensions as the tensor ({x.ndim}), got "
            f"{index.ndim}"
        )
    return axis if x.ndim else 0


def _check_fits(function: str, x: Any, index: Any, src: Any, axis: int) -> None:
    """Refuse an ``index`` that does not fit, as PyTorch does: as many dimensions as ``src``
    (when it is an array), no larger than ``src`` in any dimension (src is not broadcast:
    only its leading part that index covers is read) and no larger than the tensor off
    ``axis``. An empty index fits anything."""
    if 0 in index.shape:
        return
    index_shape = tuple(index.shape)
    expand = "src.expand(index.shape)" + (", or a number" if function == "scatter" else "")
    if hasattr(src, "shape") and src.ndim != index.ndim:
        raise ShapeError(
            f"{function}(): src of shape {tuple(src.shape)} must have as many dimensions as "
            f"index {index_shape} ({index.ndim}); src is not broadcast: give a src of "
            f"index's shape ({expand})"
        )
    if any(n > k for d, (n, k) in enumerate(zip(index_shape, x.shape)) if d != axis):
        raise ShapeError(
            f"{function}(): index of shape {index_shape} must be no larger than the tensor "
            f"{tuple(x.shape)} off dim {axis}; cut it to that size"
        )
    if hasattr(src, "shape") and any(n > m for n, m in zip(index_shape, src.shape)):
        raise ShapeError(
            f"{function}(): index of shape {index_shape} must be no larger than src "
            f"{tuple(src.shape)} in any dimension: src is not broadcast, only its leading part "
            f"that index covers is read; give a src of index's shape ({expand})"
        )


def _as_rows(xp: Any, *arrays: Any) -> list[Any]:
    """Arrays (not numbers) made 1-d: PyTorch's scatter family takes a 0-d tensor as one of
    one element along dim 0 (or -1)."""
    return [xp.reshape(a, (-1,)) if hasattr(a, "shape") else a for a in arrays]


def _in_rows(x: Any, index: Any, src: Any = None) -> bool:
    """Whether a scatter of ``src`` into ``x`` at ``index`` has a 0-d operand among 1-d ones
    (or none): then each is one row, as in PyTorch (``zeros(3).scatter(0, tensor(2), 5.0)``)."""
    return x.ndim == 0 or (x.ndim == 1 and (index.ndim == 0 or getattr(src, "ndim", 1) == 0))


def _gather(xp: Any, x: Any, dim: int, index: Any, *, sparse_grad: bool = False) -> Any:
    """PyTorch's ``x.gather(dim, index)``: ``out[..., i, ...] = x[..., index[..., i, ...], ...]``.

    ``index`` has ``x``'s number of dimensions and, off ``dim``, sizes up to ``x``'s.
    ``sparse_grad`` is taken for PyTorch code: the gradient is dense either way (plugrad
    has no sparse tensors), with the same values.
    """
    if not isinstance(sparse_grad, bool):
        raise ArgumentError(f"gather(): sparse_grad must be a bool, got {sparse_grad!r}")
    dim = _along_dim("gather", xp, x, dim, index, empty_any_shape=True)
    if 0 in index.shape:  # as PyTorch: an empty result of index's shape, whatever its sizes
        return xp.reshape(xp.reshape(x, (-1,))[:0], tuple(index.shape))
    if index.ndim == 0 and x.ndim <= 1:  # one position: a 0-d result, as PyTorch's
        return xp.reshape(_gather(xp, xp.reshape(x, (-1,)), 0, xp.reshape(index, (1,))), ())
    if x.ndim == 0:  # one element to pick from, as many times as index says
        return _gather(xp, xp.reshape(x, (1,)), 0, index)
    _check_fits("gather", x, index, None, dim)
    index = check_positions(xp, "gather", index, x.shape[dim] if x.ndim else 1, dim=dim, wrap=False)
    if any(n != m for d, (n, m) in enumerate(zip(index.shape, x.shape)) if d != dim):
        # NOTE: take_along_axis broadcasts, where PyTorch reads the leading part of x.
        x = x[tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(index.shape))]
    return xp.take_along_axis(x, index, axis=dim)


take_along_axis = op("take_along_axis", _take_along_axis,
                     saves=("indices",),
                     vjp=(lambda xp, g, ans, x, indices, *, axis: xp.scatter_add(
                              g, key=along_axis_key(xp, indices, axis, tuple(g.shape),
                                                    tuple(x.shape)), shape=x.shape), None),
                     methods={"gather": _gather}, aliases={"gather": _gather},
                     doc="Pick from ``x`` along ``axis`` with ``indices`` of as many dimensions.")


def _setitem_generic(xp: Any, x: Any, value: Any, /, key: Any) -> Any:
    refuse_value_it_cannot_hold(xp, "setitem", x, value)
    if isinstance(value, float) and xp.isdtype(x.dtype, "integral"):
        value = int(value)  # truncated, as PyTorch writes it (array-api-strict refuses a float)
    value = without_leading_ones(xp, value)
    key = key if type(key) is tuple else (key,)
    mask = sole_mask(xp, key, x.ndim)
    if mask is not None:
        return put(xp.asarray(x, copy=True), (mask,), value)
    return plan(xp, tuple(x.shape), key, device_of(x)).assign(xp, x, value)


def _setitem_numpy_style(xp: Any, x: Any, value: Any, /, key: Any) -> Any:
    refuse_value_it_cannot_hold(xp, "setitem", x, value)
    value = without_leading_ones(xp, value)
    out = xp.asarray(x, copy=True)
    out[_complete(key)] = value
    return out


def _scattered(xp: Any, dim: int, index: Any, src: Any) -> tuple[tuple[Any, ...], Any]:
    """The key of PyTorch's ``scatter`` along ``dim`` at ``index``, and the values it writes."""
    key = along_axis_key(xp, index, dim, tuple(index.shape), tuple(index.shape))
    if hasattr(src, "shape") and src.ndim:
        if 0 in index.shape:  # nothing written, whatever src's shape
            return key, xp.reshape(xp.reshape(src, (-1,))[:0], tuple(index.shape))
        # As in PyTorch, only the leading part of src that index covers is written.
        src = src[tuple(slice(0, n) for n in index.shape)]
    return key, src


#: PyTorch's ``scatter(..., reduce=)`` names for two of ``scatter_reduce``'s reductions.
_SCATTER_REDUCE = {"add": "sum", "multiply": "prod"}


def _same_dtype(function: str, x: Any, src: Any) -> None:
    """Refuse a ``src`` array of another dtype than ``x``'s, as PyTorch does."""
    if hasattr(src, "dtype") and hasattr(src, "shape") and src.dtype != x.dtype:
        raise DtypeError(
            f"{function}(): the tensor's dtype is {x.dtype} but src's is {src.dtype}; they must "
            "be the same (convert src with .to(x.dtype))"
        )


def _scatter(
    xp: Any, x: Any, dim: int, index: Any, src: Any = None, *, value: Any = None,
    reduce: str | None = None,
) -> Any:  # fmt: skip
    """PyTorch's ``x.scatter(dim, index, src)``: ``out[..., index[i], ...] = src[i]`` along ``dim``.

    ``src`` is a tensor (its leading part of ``index``'s shape is written: ``index``
    has its number of dimensions and is no larger in any, as in PyTorch, which does
    not broadcast it) or a number (also given as ``value=``). Off ``dim``, ``index``
    is no larger than the tensor. Where ``index`` repeats a position, one
    of the values written there is kept. ``reduce="add"`` or ``"multiply"``
    combines the values with the tensor's instead (``scatter_reduce`` with
    ``"sum"`` or ``"prod"``).
    """
    if (src is None) == (value is None):
        raise ArgumentError("scatter() takes src (a tensor or a number) or value=, exactly one")
    dim = _along_dim("scatter", xp, x, dim, index)
    if _in_rows(x, index, src):
        rows = _scatter(xp, *_as_rows(xp, x, 0, index, src), value=value, reduce=reduce)
        return xp.reshape(rows, tuple(x.shape))
    refuse_value_it_cannot_hold(xp, "scatter", x, value if src is None else src)
    _same_dtype("scatter", x, src)
    _check_fits("scatter", x, index, src, dim)
    if reduce is not None:
        if reduce not in _SCATTER_REDUCE:
            raise ArgumentError(
                f"scatter(): reduce={reduce!r} is not one of 'add', 'multiply'; "
                "x.scatter_reduce(dim, index, src, reduce) also takes 'mean', 'amax' and 'amin'"
            )
        if src is None or not hasattr(src, "shape"):
            src = xp.full(tuple(index.shape), value if src is None else src, dtype=x.dtype,
                          device=x.device)  # fmt: skip
        return xp.scatter_along_axis(x, index, src, axis=dim, reduce=_SCATTER_REDUCE[reduce])
    index = _check_scatter_positions(xp, "scatter", x, dim, index)
    key, values = _scattered(xp, dim, index, value if src is None else src)
    return xp.setitem(x, values, key=key)


def _check_scatter_positions(xp: Any, function: str, x: Any, dim: int, index: Any) -> Any:
    size = x.shape[dim % x.ndim] if x.ndim else 1
    return check_positions(xp, function, index, size, dim=dim, wrap=False)


def _scatter_add(xp: Any, x: Any, dim: int, index: Any, src: Any) -> Any:
    """PyTorch's ``x.scatter_add(dim, index, src)``: ``src`` added at ``index`` along ``dim``.

    Values sent to one position add up. ``src`` is read as :func:`scatter` reads it.
    """
    _same_dtype("scatter_add", x, src)
    if is_half(xp, x.dtype):
        # x and every value sent to a position added in float32 and rounded once, as
        # PyTorch's: the sum of src, rounded, then added to x, rounded twice.
        wide = _scatter_add(xp, xp.astype(x, xp.float32), dim, index, xp.astype(src, xp.float32))
        return xp.astype(wide, x.dtype)
    dim = _along_dim("scatter_add", xp, x, dim, index)
    if _in_rows(x, index, src):
        return xp.reshape(_scatter_add(xp, *_as_rows(xp, x, 0, index, src)), tuple(x.shape))
    _check_fits("scatter_add", x, index, src, dim)
    index = _check_scatter_positions(xp, "scatter_add", x, dim, index)
    key, values = _scattered(xp, dim, index, src)
    return x + xp.scatter_add(values, key=key, shape=tuple(x.shape))


# -- scatter_reduce ------------------------------------------------------------------------
# Each reduction is a segment reduction over the positions the indices name
# (segment_sum with another combine); a position no index names keeps x.

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
#: Names PyTorch's scatter_reduce takes too.
_REDUCTION_ALIASES = {"max": "amax", "min": "amin"}


def _combine(xp: Any, reduce: str) -> Any:
    """The associative operation of ``reduce``: ``combine(a, b)`` of two arrays."""
    if reduce in ("sum", "mean"):
        return operator.add
    if reduce == "prod":
        return operator.mul
    return xp.maximum if reduce == "amax" else xp.minimum


def _reduced(xp: Any, values: Any, key: Any, shape: tuple[int, ...], combine: Any) -> Any:
    """``values`` combined at ``[key]`` into an array of ``shape`` (0 where no index points)."""
    reduce_segments = functools.partial(segment_sum, combine=combine)
    return plan(xp, shape, key, device_of(values)).scatter_add(xp, values, reduce_segments)


def _spread(
    xp: Any, x: Any, indices: Any, src: Any, axis: int
) -> tuple[tuple[Any, ...], Any, Any]:
    """The key along ``axis``, the values of ``src`` it sends, and how many reach each position.

    The counts are integers: complex ones have no ``count > 0`` on some backends (torch),
    and a small integer dtype would wrap (256 values into one uint8 position count 0).
    """
    key, values = _scattered(xp, axis, indices, src)
    ones = xp.ones(tuple(values.shape), dtype=index_dtype(xp, values), device=device_of(values))
    count = _reduced(xp, ones, key, tuple(x.shape), operator.add)
    return key, values, count


def _check_scatter(xp: Any, x: Any, indices: Any, src: Any, axis: int, reduce: str) -> None:
    if reduce not in _REDUCTIONS:
        raise ArgumentError(
            f"scatter_reduce(): reduce={reduce!r} is not one of 'sum', 'prod', 'mean', 'amax', "
            "'amin'"
        )
    if reduce == "mean" and xp.isdtype(x.dtype, "bool"):
        raise DtypeError(
            "scatter_reduce(): reduce='mean' of bools has no bool result (PyTorch refuses it "
            "too); convert the tensor and src first (x.float())"
        )
    if reduce in ("amax", "amin") and xp.isdtype(x.dtype, "complex floating"):
        raise DtypeError(
            f"scatter_reduce(): reduce={reduce!r} needs ordered values, and complex numbers "
            "have no order (PyTorch refuses them too); reduce abs(x) or x.real instead"
        )
    if src.dtype != x.dtype:
        raise DtypeError(
            f"scatter_reduce(): src has dtype {src.dtype} and the tensor {x.dtype}; they must "
            "be the same (convert src with src.to(x.dtype))"
        )
    if indices.ndim != x.ndim:
        raise ShapeError(
            f"scatter_reduce(): index must have as many dimensions as the tensor ({x.ndim}), "
            f"got {indices.ndim}"
        )
    _check_fits("scatter_reduce", x, indices, src, axis % max(x.ndim, 1))


def _scatter_along_axis(
    xp: Any, x: Any, indices: Any, src: Any, /, *, axis: int, reduce: str,
    include_self: bool = True,
) -> Any:  # fmt: skip
    _check_scatter(xp, x, indices, src, axis, reduce)
    indices = _check_scatter_positions(xp, "scatter_reduce", x, axis, indices)
    key, values, count = _spread(xp, x, indices, src, axis)
    touched = count > 0
    if reduce == "mean":
        total = _reduced(xp, values, key, tuple(x.shape), operator.add)
        if include_self:
            total, count = x + total, count + 1
        count = xp.astype(xp.where(touched, count, xp.ones_like(count)), x.dtype)
        if xp.isdtype(x.dtype, ("real floating", "complex floating")):
            return xp.where(touched, total / count, x)
        return xp.where(touched, total // count, x)
    combine = _combine(xp, reduce)
    result = _reduced(xp, values, key, tuple(x.shape), combine)
    return xp.where(touched, combine(x, result) if include_self else result, x)


def _nonzero_product(xp: Any, values: Any, key: Any, x: Any, touched: Any, with_x: bool) -> Any:
    """At each position, the product of the non-zero values sent there (and x's if ``with_x``)."""
    one = xp.ones_like(values)
    product = _reduced(xp, xp.where(values == 0, one, values), key, tuple(x.shape), operator.mul)
    product = xp.where(touched, product, xp.ones_like(product))
    return product * xp.where(x == 0, xp.ones_like(x), x) if with_x else product


def _zeros_at(xp: Any, values: Any, key: Any, x: Any, with_x: bool) -> Any:
    zeros = _reduced(xp, xp.astype(values == 0, x.dtype), key, tuple(x.shape), operator.add)
    return zeros + xp.astype(x == 0, x.dtype) if with_x else zeros


def _refuse_differentiating_zero_products(xp: Any, x: Any, src: Any, zeros: Any) -> None:
    """Refuse to record the prod rule where two zeros meet: its gradient there is 0 whichever
    way it is written from the non-zero values, but its derivative is not (the other zero's
    cofactor), and would come out 0. PyTorch refuses the same."""
    differentiated = getattr(x, "requires_grad", False) or getattr(src, "requires_grad", False)
    if differentiated and math.prod(zeros.shape) and _rules.any_true(
        xp.max(zeros) > 1, "two zeros combined at one position", BackwardError
    ):
        raise BackwardError(
            "scatter_reduce(reduce='prod') cannot be differentiated twice where two or more "
            "zeros (of src, or of self with include_self=True) are combined at one position: "
            "the gradient there is 0 but its derivative is not. Differentiate once "
            "(create_graph=False), or keep the zeros apart (e.g. add a tiny offset)."
        )


def _gathered(xp: Any, key: Any, values: Any, x: Any) -> Any:
    """``at(a)``: ``a[key]`` for arrays ``a`` of ``x``'s shape, as standard steps.

    NOTE: ``a[key]`` with one integer array per axis is NumPy's indexing, which
    Dask lacks (it takes one integer array at a time); the plan takes from the
    flattened axes with one index, on every backend and in every order.
    """
    return functools.partial(plan(xp, tuple(x.shape), key, device_of(values)).gather, xp)


def _is_result(a: Any, result: Any) -> Any:
    """Where ``a`` is the amax or amin ``result``: equal, or both NaN (a NaN wins, and takes
    the gradient, as in :func:`plugrad.amax`)."""
    return (a == result) | ((a != a) & (result != result))


def _ties(xp: Any, values: Any, key: Any, x: Any, ans: Any, with_x: bool) -> Any:
    """How many of the values at each position are the result there (amax and amin)."""
    at = _gathered(xp, key, values, x)
    picked = xp.astype(_is_result(values, at(ans)), x.dtype)
    ties = _reduced(xp, picked, key, tuple(x.shape), operator.add)
    return ties + xp.astype(_is_result(x, ans), x.dtype) if with_x else ties


def _scatter_grad_x(
    xp: Any, g: Any, ans: Any, x: Any, indices: Any, src: Any, *, axis: int, reduce: str,
    include_self: bool,
) -> Any:  # fmt: skip
    key, values, count = _spread(xp, x, indices, src, axis)
    touched = count > 0
    zero = xp.zeros_like(g)
    if not include_self:
        return xp.where(touched, zero, g)
    if reduce == "sum":
        return g
    if reduce == "mean":
        return g / xp.astype(count + 1, g.dtype)
    if reduce == "prod":
        # NOTE: ans / x is the product of the others only where x is not 0; where it is,
        # the others' product is that of the non-zero values, if x is the only zero.
        # (Conjugated for complex values, as every holomorphic rule here.)
        zeros = _zeros_at(xp, values, key, x, True)
        _refuse_differentiating_zero_products(xp, x, src, zeros)
        lone_zero = zeros == 1
        others = g * _rules.conj(xp, _nonzero_product(xp, values, key, x, touched, True))
        return xp.where(x == 0, xp.where(lone_zero, others, zero), g * _rules.conj(
            xp, ans / xp.where(x == 0, xp.ones_like(x), x)))  # fmt: skip
    # amax, amin: the gradient is shared evenly by every value equal to the result.
    picked = _is_result(x, ans)
    ties = _ties(xp, values, key, x, ans, True)
    return xp.where(picked, g / xp.where(picked, ties, xp.ones_like(ties)), zero)


def _scatter_grad_src(
    xp: Any, g: Any, ans: Any, x: Any, indices: Any, src: Any, *, axis: int, reduce: str,
    include_self: bool,
) -> Any:  # fmt: skip
    key, values, count = _spread(xp, x, indices, src, axis)
    at = _gathered(xp, key, values, x)
    g_at = at(g)
    if reduce == "sum":
        grad = g_at
    elif reduce == "mean":
        grad = g_at / xp.astype(at(count + 1 if include_self else count), g_at.dtype)
    elif reduce == "prod":
        touched = count > 0
        zeros = _zeros_at(xp, values, key, x, include_self)
        _refuse_differentiating_zero_products(xp, x, src, zeros)
        lone_zero = at(zeros == 1)
        others = at(g * _rules.conj(xp, _nonzero_product(xp, values, key, x, touched,
                                                          include_self)))  # fmt: skip
        safe = xp.where(values == 0, xp.ones_like(values), values)
        grad = xp.where(values == 0, xp.where(lone_zero, others, xp.zeros_like(others)),
                        g_at * _rules.conj(xp, at(ans) / safe))  # fmt: skip
    else:
        picked = _is_result(values, at(ans))
        ties = at(_ties(xp, values, key, x, ans, include_self))
        grad = xp.where(picked, g_at / xp.where(picked, ties, xp.ones_like(ties)),
                        xp.zeros_like(g_at))  # fmt: skip
    if tuple(grad.shape) == tuple(src.shape):
        return grad
    # Only the leading part of src that the indices cover was read.
    part = tuple(slice(0, n) for n in grad.shape)
    return xp.scatter_add(grad, key=part, shape=tuple(src.shape))


def _scatter_reduce(
    xp: Any, x: Any, dim: int, index: Any, src: Any, reduce: str, *, include_self: bool = True
) -> Any:
    """PyTorch's ``scatter_reduce(dim, index, src, reduce, *, include_self=True)``.

    Each value of ``src`` goes to position ``index[i]`` along ``dim`` and is
    combined there by ``reduce`` (``"sum"``, ``"prod"``, ``"mean"``,
    ``"amax"``, ``"amin"``) with the others sent there and, with
    ``include_self``, with the tensor's own value. Positions no index names
    keep their value.
    """
    _same_dtype("scatter_reduce", x, src)
    reduce = _REDUCTION_ALIASES.get(reduce, reduce)
    if is_half(xp, x.dtype) and reduce in ("sum", "prod", "mean"):  # rounded once (scatter_add)
        wide_x, wide_src = xp.astype(x, xp.float32), xp.astype(src, xp.float32)
        wide = _scatter_reduce(xp, wide_x, dim, index, wide_src, reduce, include_self=include_self)
        return xp.astype(wide, x.dtype)
    dim = _along_dim("scatter_reduce", xp, x, dim, index)
    if _in_rows(x, index, src):
        shape = tuple(x.shape)
        x, index, src = _as_rows(xp, x, index, src)
        rows = xp.scatter_along_axis(x, index, src, axis=0, reduce=reduce,
                                     include_self=include_self)  # fmt: skip
        return xp.reshape(rows, shape)
    return xp.scatter_along_axis(x, index, src, axis=dim, reduce=reduce,
                                 include_self=include_self)  # fmt: skip


scatter_along_axis = op(
    "scatter_along_axis", _scatter_along_axis, vjp=(_scatter_grad_x, None, _scatter_grad_src),
    standard=False, methods={"scatter_reduce": _scatter_reduce},
    aliases={"scatter_reduce": _scatter_reduce}, inplace=("scatter_reduce",),
    doc="Combine ``src`` into ``x`` at ``indices`` along ``axis`` by ``reduce`` (sum, prod, "
        "mean, amax, amin); the reverse of ``take_along_axis``.")  # fmt: skip


def _narrow(xp: Any, x: Any, dim: int, start: Any, length: int) -> Any:
    """PyTorch's ``x.narrow(dim, start, length)``: ``length`` elements along ``dim``."""
    axis = checked_axis("narrow", dim, x.ndim)
    size = x.shape[axis]
    # (NumPy integers and 0-d integer tensors as ints; a NumPy integer has a dtype too)
    if type(start) is not int or type(length) is not int:
        start, length = as_int(start), as_int(length)
    if hasattr(start, "dtype"):  # a tensor that is no integer (start 1.7 was 1)
        raise DtypeError(
            f"narrow(): start must be one integer, got a tensor of {start.dtype} and shape "
            f"{tuple(start.shape)}"
        )
    for name, value in (("start", start), ("length", length)):
        if not isinstance(value, int):
            raise ArgumentError(f"narrow(): {name} must be an int, got {value!r}")
    first = start + size if start < 0 else start
    if not 0 <= first <= size or length < 0 or first + length > size:
        raise IndexOutOfRangeError(
            f"narrow(): start {start} and length {length} do not fit in dimension {dim} "
            f"of length {size}"
        )
    return x[(slice(None),) * axis + (slice(first, first + length),)]


def _narrow_copy(xp: Any, x: Any, dim: int, start: Any, length: int) -> Any:
    """PyTorch's ``x.narrow_copy(dim, start, length)``: :func:`narrow`'s elements, copied."""
    return xp.astype(_narrow(xp, x, dim, start, length), x.dtype, copy=True)


def _masked_select(xp: Any, x: Any, mask: Any) -> Any:
    """PyTorch's ``x.masked_select(mask)``: the 1-D tensor of the elements where ``mask`` holds.

    ``x`` and ``mask`` broadcast against each other.
    """
    # (x[integer mask] would gather at those positions, x[[1, 0, 1]], not select)
    require_bool_mask(xp, "masked_select", mask)
    x, mask = xp.broadcast_arrays(x, mask)
    return x[mask]


def _setitem_grad_value(xp: Any, g: Any, ans: Any, x: Any, value: Any, *, key: Any) -> Any:
    grad = xp.getitem(g, key=key)
    missing = value.ndim - grad.ndim
    if missing > 0:  # a value with leading axes of size 1 (x[0] = v of shape (1, n))
        grad = xp.reshape(grad, (1,) * missing + tuple(grad.shape))
    return grad  # summed over the axes the value was broadcast along, as any input's


setitem = op("setitem", _setitem_generic,
             kernels={"numpy": _setitem_numpy_style, "cupy": _setitem_numpy_style},
             vjp=(lambda xp, g, ans, x, value, *, key: xp.setitem(g, 0.0, key=key),
                  _setitem_grad_value),
             broadcasting=True, saves=(), array_params=("key",), standard=False,
             methods={"scatter": _scatter, "scatter_add": _scatter_add, "narrow": _narrow,
                      "narrow_copy": _narrow_copy, "masked_select": _masked_select},
             aliases={"narrow": _narrow, "narrow_copy": _narrow_copy,
                      "masked_select": _masked_select},
             inplace=("scatter", "scatter_add"),
             doc="A copy of ``x`` with ``x[key] = value``; what ``x[key] = value`` records.")


# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
