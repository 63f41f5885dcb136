"""Manipulation functions of the Array API: shapes and axes.

One row per op (examples: the "Manipulation" section of the API reference).
Rules that only reshape the gradient keep nothing but the input's shape.
Tensor methods follow PyTorch where PyTorch's meaning differs from the
function's: ``x.repeat(*sizes)`` tiles (``plugrad.repeat`` is PyTorch's
``repeat_interleave``), ``x.squeeze(dim)`` leaves axes that are not of size 1,
``x.view(*shape)`` never copies, ``x.expand(*sizes)`` takes ``-1`` for "keep".
"""

from __future__ import annotations

import builtins
import itertools
import math
import operator
from typing import Any

from plugrad.dtypes import DType
from plugrad.errors import ArgumentError, DtypeError, InvalidArgumentError, PlugradError, ShapeError
from plugrad.hookspecs import hookimpl
from plugrad.memory_formats import (
    channels_last,
    channels_last_3d,
    check_memory_format,
    memory_format,
    preserve_format,
    row_major_layout,
)
from plugrad.opdef import OpDef, as_int, collect_ops, dim_as_axis, op
from plugrad.plugins import _rules
from plugrad.plugins._rules import (
    axis_slice,
    below_minus_one,
    checked_axis,
    device_of,
    one_int_axis,
    sizes,
    torch_axis,
    torch_join,
)

# The rows are aligned by hand, one op per statement.
# fmt: off


def _back_to_input_shape(xp: Any, g: Any, ans: Any, x: Any, *args: Any, **params: Any) -> Any:
    """Backward of ops that only change the shape, never the order of elements."""
    return xp.reshape(g, x.shape)


def _inverse_permutation(axes: tuple[int, ...]) -> tuple[int, ...]:
    ndim = len(axes)
    inverse = [0] * ndim
    for position, axis in enumerate(axes):
        inverse[axis % ndim] = position
    return tuple(inverse)




# -- PyTorch's Tensor methods of these ops ---------------------------------------------


def _view(xp: Any, x: Any, *shape: int, size: Any = None) -> Any:
    """PyTorch's ``x.view(*shape)``: ``reshape`` that raises where it would have to copy."""
    shape = sizes(shape, size, "size")
    if len(shape) == 1 and isinstance(shape[0], DType):
        if shape[0] == x.dtype:  # the same bytes as the same dtype: a view of x, as PyTorch's
            return xp.reshape(x, tuple(x.shape), copy=False)
        raise DtypeError(
            f"view({shape[0]}) reinterprets a tensor's bytes as another dtype, which the Array "
            f"API has no way to do; x.to(plugrad.{shape[0].name}) converts the values instead, "
            "and x.numpy().view(...) reinterprets a NumPy copy"
        )
    shape = sizes(shape)
    if below_minus_one(shape):  # (NumPy read -3 as -1)
        raise ShapeError(f"view{shape}: a size is at least 0, or -1 for the one inferred")
    try:
        return xp.reshape(x, shape, copy=False)
    except PlugradError:
        raise
    except Exception as exc:  # each library refuses in its own words, with its own type
        raise ShapeError(
            f"view{shape}: a tensor of shape {tuple(x.shape)} cannot be seen in that shape "
            f"without a copy ({type(exc).__name__}: {exc}); use x.reshape(...), which copies "
            "when it must"
        ) from None


def _is_contiguous(xp: Any, x: Any, memory_format: memory_format | None = None) -> bool:
    """PyTorch's ``x.is_contiguous()``: whether the elements lie in row-major order in memory,
    one after the other.

    Read from the strides (those of a dimension of size 1 do not matter); a
    backend whose arrays have no layout to ask about (JAX, Dask) has row-major
    strides, so its tensors are contiguous. Channels-last layouts are not
    tracked, so asking about one is refused rather than answered from the
    row-major order.
    """
    check_memory_format("is_contiguous", memory_format, x.ndim)
    if memory_format is channels_last or memory_format is channels_last_3d:
        raise InvalidArgumentError(
            f"is_contiguous(memory_format={memory_format!r}): plugrad does not track "
            "channels-last layouts (arrays are in their backend's order); ask "
            "x.is_contiguous() for the row-major order"
        )
    # NOTE: not "can it be seen flat without a copy": x[:, ::2] can (every other element),
    # and contiguous() then returned it, so writing into the "copy" wrote into x.
    return row_major_layout(tuple(x.shape), tuple(x.stride()))


def _contiguous(xp: Any, x: Any, memory_format: memory_format | None = None) -> Any:
    """PyTorch's ``x.contiguous()``: ``x`` itself if it is contiguous, else a row-major copy.

    After it, ``view`` can give any shape of the same size, as in PyTorch. A
    ``memory_format`` is accepted as a hint: the result is row-major whatever it names.
    """
    check_memory_format("contiguous", memory_format, x.ndim)
    if _is_contiguous(xp, x):
        return x
    if memory_format is preserve_format:  # as PyTorch: the layout to keep is not one
        raise InvalidArgumentError(
            "contiguous(memory_format=plugrad.preserve_format) of a tensor that is not "
            "contiguous: there is no layout to preserve; leave memory_format out"
        )
    # A flat copy is made in row-major order; seen in x's shape again, it is contiguous.
    return xp.reshape(xp.reshape(x, (-1,), copy=True), tuple(x.shape))


def _flatten(xp: Any, x: Any, start_dim: int = 0, end_dim: int = -1) -> Any:
    """PyTorch's ``x.flatten(start_dim=0, end_dim=-1)``: join the axes ``start_dim..end_dim``."""
    shape = tuple(x.shape)
    if not shape:
        for dim in (start_dim, end_dim):  # a 0-d tensor has dim 0 (and -1), as in PyTorch
            checked_axis("flatten", dim, 0, zero_d_as_one=True)
        return xp.reshape(x, (1,))
    # (they were wrapped: flatten(2) of a matrix joined its axis 0)
    start, end = (checked_axis("flatten", dim, len(shape)) for dim in (start_dim, end_dim))
    if start > end:
        raise ShapeError(
            f"flatten(start_dim={start_dim}, end_dim={end_dim}): start_dim comes after end_dim "
            f"for a tensor of {len(shape)} dimensions"
        )
    joined = math.prod(shape[start : end + 1])
    return xp.reshape(x, (*shape[:start], joined, *shape[end + 1 :]))


def _ravel(xp: Any, x: Any) -> Any:
    """PyTorch's ``x.ravel()``: the elements in row-major order, as a contiguous 1-d tensor
    (a view of a contiguous tensor, else a copy; ``x[:, ::2].ravel()`` is a copy)."""
    return xp.reshape(_contiguous(xp, x), (-1,))


def _unflatten(xp: Any, x: Any, dim: int, sizes: Any) -> Any:
    """PyTorch's ``unflatten(x, dim, sizes)``: split axis ``dim`` into axes of ``sizes``."""
    shape = tuple(x.shape)
    axis, sizes = checked_axis("unflatten", dim, len(shape)), tuple(map(as_int, sizes))
    known = math.prod(n for n in sizes if n != -1)
    length = shape[axis]
    if -1 in sizes and sizes.count(-1) == 1 and known and length % known == 0:
        sizes = tuple(length // known if n == -1 else n for n in sizes)
    if not sizes or math.prod(sizes) != length or any(n < 0 for n in sizes):
        raise ShapeError(
            f"unflatten({dim}, {sizes}): the sizes must be non-empty, at most one -1, and "
            f"multiply up to {length}, the length of dimension {dim} of shape {shape}"
        )
    return xp.reshape(x, (*shape[:axis], *sizes, *shape[axis + 1 :]))


def _view_as(xp: Any, x: Any, other: Any) -> Any:
    """PyTorch's ``x.view_as(other)``: ``x.view(other.shape)``."""
    return _view(xp, x, *other.shape)


def _reshape_as(xp: Any, x: Any, other: Any) -> Any:
    """PyTorch's ``x.reshape_as(other)``: ``x.reshape(other.shape)``."""
    return xp.reshape(x, tuple(other.shape))


def _at_least(xp: Any, ndim: int, x: Any) -> Any:
    """``x`` with size-1 axes added, as PyTorch's ``atleast_{ndim}d`` places them."""
    shape = tuple(x.shape)
    if len(shape) >= ndim:
        return x
    if ndim == 3:  # (n,) -> (1, n, 1) and (m, n) -> (m, n, 1), as NumPy's atleast_3d
        shape = (*shape, 1) if len(shape) == 2 else (1, *(shape or (1,)), 1)
    return xp.reshape(x, (1,) * (ndim - len(shape)) + shape)


def _atleast(ndim: int) -> Any:
    def atleast(xp: Any, *tensors: Any) -> Any:
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            return tuple(_at_least(xp, ndim, t) for t in tensors[0])
        if len(tensors) == 1:
            return _at_least(xp, ndim, tensors[0])
        return tuple(_at_least(xp, ndim, t) for t in tensors)

    atleast.__doc__ = (
        f"PyTorch's ``atleast_{ndim}d(*tensors)``: each tensor with at least {ndim} dimensions "
        "(a tuple for several or for a list)."
    )
    return atleast


def _permute(xp: Any, x: Any, dims: Any) -> Any:
    """PyTorch's ``permute(x, dims)``: ``permute_dims(x, dims)``, ``dims`` a tuple or list."""
    if not isinstance(dims, (tuple, list)):
        raise InvalidArgumentError(f"permute(): dims must be a tuple or list of ints, got {dims!r}")
    axes = tuple(checked_axis("permute", d, x.ndim) for d in dims)
    if sorted(axes) != list(range(x.ndim)):
        raise ShapeError(
            f"permute(): dims must name each of the {x.ndim} axes once, got {tuple(dims)}"
        )
    return xp.permute_dims(x, axes)


def _t(xp: Any, x: Any) -> Any:
    """PyTorch's ``x.t()``: transpose a matrix; 0-D and 1-D tensors are returned as they are."""
    if x.ndim > 2:
        raise ShapeError(
            f"t() takes a tensor of at most 2 dimensions, got {x.ndim}; use x.mT to transpose "
            "the last two axes or x.transpose(a, b) for any two"
        )
    return xp.permute_dims(x, tuple(reversed(range(x.ndim))))


def _transpose(xp: Any, x: Any, dim0: int, dim1: int) -> Any:
    """PyTorch's ``x.transpose(dim0, dim1)``: swap two axes (also ``swapaxes``, ``swapdims``)."""
    ndim = max(x.ndim, 1)  # a 0-D tensor takes the axes 0 and -1, as in PyTorch
    dim0, dim1 = one_int_axis("transpose", dim0), one_int_axis("transpose", dim1)
    for dim in (dim0, dim1):
        if not -ndim <= dim < ndim:
            raise ShapeError(
                f"transpose({dim0}, {dim1}): axis {dim} is out of range for a tensor of "
                f"{x.ndim} dimensions (valid: {-ndim} to {ndim - 1})"
            )
    axes = list(range(x.ndim))
    if axes:
        axes[dim0], axes[dim1] = axes[dim1], axes[dim0]
    return xp.permute_dims(x, tuple(axes))


def _squeeze(xp: Any, x: Any, dim: Any = None, *, axis: Any = None) -> Any:
    """PyTorch's ``x.squeeze(dim=None)``: drop size-1 axes (all, or those of ``dim`` of size 1)."""
    chosen = torch_axis(dim, axis)
    shape = tuple(x.shape)
    if chosen is None:
        axes = tuple(i for i, n in enumerate(shape) if n == 1)
    else:
        chosen = (chosen,) if isinstance(chosen, int) else tuple(chosen)
        ndim = max(len(shape), 1)  # a 0-D tensor takes the axes 0 and -1, as in PyTorch
        for a in chosen:
            one_int_axis("squeeze", a)
            if not -ndim <= a < ndim:
                raise ShapeError(
                    f"squeeze({dim if dim is not None else axis}): axis {a} is out of range for "
                    f"a tensor of {len(shape)} dimensions (valid: {-ndim} to {ndim - 1})"
                )
        if len({a % ndim for a in chosen}) != len(chosen):
            raise ShapeError(f"squeeze(): dim {dim if dim is not None else axis} names a dim twice")
        axes = tuple(a % len(shape) for a in chosen if shape and shape[a] == 1)
    return xp.squeeze(x, axis=axes)


def _squeeze_axes(xp: Any, x: Any, /, axis: Any) -> Any:
    """The standard's ``squeeze(x, axis)`` alike on every backend: a 0-d ``x`` takes the
    axes 0 and -1 (removing nothing), as PyTorch's ``squeeze``; axes out of range and
    repeated ones are refused here (JAX refused 0 of a 0-d array, PyTorch's and Dask's
    kernels raised "tuple index out of range")."""
    if type(axis) is int and -x.ndim <= axis < x.ndim:  # (the common call: one test)
        return xp.squeeze(x, axis=axis)
    many = type(axis) is tuple or type(axis) is list  # (a list: PyTorch's dims)
    axes = [checked_axis("squeeze", a, x.ndim, zero_d_as_one=True) for a in
            (axis if many else (axis,))]
    if many and len(set(axes)) != len(axes):
        raise ShapeError(f"squeeze(): axis {tuple(axis)} names an axis twice")
    if x.ndim == 0:
        axes = []
    return xp.squeeze(x, axis=tuple(axes) if many or not axes else axes[0])


def _expand(xp: Any, x: Any, *sizes_: int, size: Any = None) -> Any:
    """PyTorch's ``x.expand(*sizes)``: broadcast to ``sizes``, where -1 keeps that axis."""
    target = sizes(sizes_, size, "size")
    new = len(target) - x.ndim
    if new < 0:
        raise ShapeError(
            f"expand{target}: {len(target)} sizes for a tensor of {x.ndim} dimensions; "
            "give at least one size per dimension"
        )
    if -1 in target[:new]:
        raise ShapeError(f"expand{target}: -1 cannot be the size of a new leading dimension")
    shape = tuple(x.shape[i - new] if n == -1 else n for i, n in enumerate(target))
    return _broadcast_view(xp, x, shape)


def _expand_as(xp: Any, x: Any, other: Any) -> Any:
    """PyTorch's ``x.expand_as(other)``: broadcast ``x`` to ``other``'s shape."""
    return _broadcast_view(xp, x, tuple(other.shape))


def _broadcast_view(xp: Any, x: Any, shape: tuple[int, ...]) -> Any:
    # Where no element repeats (its own shape, or new axes of length 1), PyTorch's expand
    # is a plain view, which in-place ops may write (NumPy's broadcast_to is read-only
    # whatever the shape).
    own = tuple(x.shape)
    if own == shape:
        return x[...]
    if len(shape) > len(own) and shape[len(shape) - len(own) :] == own:
        if all(n == 1 for n in shape[: len(shape) - len(own)]):
            return xp.reshape(x, shape)
    return xp.broadcast_to(x, shape)


def _broadcast_to(xp: Any, x: Any, /, shape: Any) -> Any:
    shape = tuple(shape)
    if -1 in shape:  # PyTorch's broadcast_to is expand: -1 keeps that axis (the standard's
        return _expand(xp, x, size=shape)  # sizes are never negative)
    return _broadcast_view(xp, x, shape)


def _whole_counts(function: str, counts: tuple[Any, ...]) -> tuple[int, ...]:
    """``counts`` as ints (a bool is one, as PyTorch reads it), or ArgumentError: the kernel
    took ``True`` where the gradient's reshape refused it."""
    try:
        return tuple(map(operator.index, counts))
    except TypeError:
        raise ArgumentError(
            f"{function}(): the counts must be whole numbers, got {counts!r}; give ints "
            f"(x.{function}(2, 1)), one per dimension"
        ) from None


def _tile_method(xp: Any, x: Any, *counts_: int, repeats: Any = None) -> Any:
    """PyTorch's ``x.repeat(*sizes)``: tile the whole tensor ``sizes[i]`` times along axis ``i``."""
    counts = _whole_counts("repeat", sizes(counts_, repeats, "repeats"))
    if len(counts) < x.ndim:
        raise ShapeError(
            f"repeat{counts}: {len(counts)} counts for a tensor of {x.ndim} dimensions; give "
            "one count per dimension (plugrad.repeat is PyTorch's repeat_interleave)"
        )
    return xp.tile(x, counts)


def _torch_tile(xp: Any, x: Any, *counts: int, dims: Any = None) -> Any:
    """PyTorch's ``x.tile(*dims)``: the counts as varargs or one sequence (fewer than the
    axes count from the last)."""
    return xp.tile(x, _whole_counts("tile", sizes(counts, dims, "dims")))


def _split(xp: Any, x: Any, split_size_or_sections: Any, dim: int = 0) -> tuple[Any, ...]:
    """PyTorch's ``x.split(size_or_sizes, dim=0)``: pieces of one size, or of the sizes listed."""
    axis = checked_axis("split", dim, x.ndim)
    length = x.shape[axis]
    if hasattr(type(split_size_or_sections), "__index__"):  # an int, NumPy's, a 0-d tensor
        split_size_or_sections = operator.index(split_size_or_sections)
        step = split_size_or_sections
        if step <= 0:
            raise ShapeError(f"split(): the piece size must be positive, got {step}")
        lengths = [min(step, length - start) for start in range(0, length, step)] or [0]
    else:
        lengths = [n if type(n) is int else as_int(n) for n in split_size_or_sections]
        if any(n < 0 for n in lengths):  # [4, -1] adds up to 3 too
            raise ShapeError(f"split(): the sizes must not be negative, got {lengths}")
        if sum(lengths) != length:
            raise ShapeError(
                f"split(): the sizes {lengths} add up to {sum(lengths)}, but dimension {dim} "
                f"has length {length}"
            )
    pieces, start = [], 0
    for n in lengths:
        pieces.append(x[axis_slice(x.ndim, axis, start, start + n)])
        start += n
    return tuple(pieces)


def _split_method(xp: Any, x: Any, split_size: Any, dim: int = 0) -> tuple[Any, ...]:
    """PyTorch's ``x.split(split_size, dim=0)``: :func:`split`, its size named as the method's."""
    return _split(xp, x, split_size, dim)


def _split_with_sizes(xp: Any, x: Any, split_sizes: Any, dim: int = 0) -> tuple[Any, ...]:
    """PyTorch's ``split_with_sizes(x, split_sizes, dim=0)``: :func:`split` by a list of sizes."""
    if not isinstance(split_sizes, (list, tuple)):
        raise ArgumentError(
            f"split_with_sizes(): split_sizes takes a list of ints, got {split_sizes!r}; "
            "for pieces of one size, call split(x, size, dim)"
        )
    return _split(xp, x, split_sizes, dim)


def _chunk(xp: Any, x: Any, chunks: int, dim: int = 0) -> tuple[Any, ...]:
    """PyTorch's ``x.chunk(chunks, dim=0)``: at most ``chunks`` pieces of ``ceil(n / chunks)``."""
    chunks = operator.index(chunks)  # (a NumPy int, a 0-d tensor)
    if chunks <= 0:
        raise ShapeError(f"chunk(): the number of chunks must be positive, got {chunks}")
    dim = checked_axis("chunk", dim, x.ndim)
    length = x.shape[dim]
    if length == 0:  # as PyTorch: that many empty pieces
        return _split(xp, x, [0] * chunks, dim)
    return _split(xp, x, -(-length // chunks), dim)


def _tensor_split(
    xp: Any, x: Any, indices_or_sections: Any = None, dim: int = 0, *, sections: Any = None,
    indices: Any = None,
) -> tuple[Any, ...]:
    """PyTorch's ``tensor_split(x, sections, dim=0)``: near-equal pieces, or cut at indices.

    An int (or 0-D tensor) gives that many pieces, the first ``length % sections``
    one longer; a list (or 1-D tensor) of indices cuts before each, as slices do.
    PyTorch's keywords ``sections=`` and ``indices=`` name the one or the other.
    """
    given = [v for v in (indices_or_sections, sections, indices) if v is not None]
    if len(given) != 1:
        raise ArgumentError(
            "tensor_split() takes one of indices_or_sections (by position), sections= or "
            f"indices=, got {len(given)}"
        )
    if sections is not None and not isinstance(as_int(sections), int):
        raise ArgumentError(f"tensor_split(): sections= takes an int, got {sections!r}")
    if indices is not None and not isinstance(indices, (list, tuple)):
        raise ArgumentError(f"tensor_split(): indices= takes a list of ints, got {indices!r}")
    axis = checked_axis("tensor_split", dim, x.ndim)
    cuts = as_int(given[0])  # (a NumPy integer, a 0-d integer tensor: a count)
    if hasattr(cuts, "shape"):
        cuts = xp.asarray(cuts)  # (a NumPy array of indices as a tensor; a tensor as it is)
        if not xp.isdtype(cuts.dtype, "integral"):  # ([1.9, 3.2] was cut at [1, 3])
            raise DtypeError(
                f"tensor_split(): indices or sections must be integers, got {cuts.dtype}"
            )
        if cuts.ndim > 1:  # (was a TypeError of int() of a row)
            raise ShapeError(
                f"tensor_split(): a tensor of indices must be 1-d (or 0-d, a count), got shape "
                f"{tuple(cuts.shape)}"
            )
        cuts = int(cuts) if cuts.ndim == 0 else [int(i) for i in cuts.tolist()]
    if isinstance(cuts, int):
        if cuts <= 0:
            raise InvalidArgumentError(
                f"tensor_split(): the number of sections must be positive, got {cuts}"
            )
        piece, longer = divmod(x.shape[axis], cuts)
        cuts = [i * piece + min(i, longer) for i in range(1, cuts)]
    elif hasattr(type(cuts), "__iter__") and not isinstance(cuts, str):
        cuts = [c if type(c) is int else as_int(c) for c in cuts]  # (NumPy's, 0-d tensors)
        if not all(type(c) is int for c in cuts):  # (1.5 and "a" were a TypeError of slicing)
            raise ArgumentError(
                f"tensor_split(): indices_or_sections takes an int or a list of ints, got "
                f"{given[0]!r}"
            )
    else:  # (2.5 was an untyped TypeError from unpacking it)
        raise ArgumentError(
            f"tensor_split(): indices_or_sections takes an int or a list of ints, got {cuts!r}"
        )
    edges = [None, *cuts, None]
    return tuple(x[axis_slice(x.ndim, axis, a, b)] for a, b in itertools.pairwise(edges))


def _roll_grad(xp: Any, g: Any, ans: Any, x: Any, *, shift: Any, axis: Any) -> Any:
    shift, axis = _axes(shift), _axes(axis)
    back = tuple(-s for s in shift) if isinstance(shift, tuple) else -shift
    if axis is None and isinstance(back, tuple):  # one shift in a list, as the forward takes it
        back = back[0]
    return xp.roll(g, shift=back, axis=axis)


def _skipped(a: Any, ans: Any) -> bool:
    """Whether ``a`` is a 1-d empty array that PyTorch's ``cat`` joins to any shape as nothing
    (the ``torch.tensor([])`` that collecting loops start from)."""
    return a.ndim == 1 and a.shape[0] == 0 and ans.ndim != 1


def _concat(xp: Any, arrays: Any, /, *, axis: int | None = 0) -> Any:
    if axis is not None and builtins.any(a.ndim == 1 and a.shape[0] == 0 for a in arrays):
        kept = [a for a in arrays if not (a.ndim == 1 and a.shape[0] == 0)]
        if kept and builtins.all(a.ndim != 1 for a in kept):
            return xp.concat(kept, axis=axis)
    return xp.concat(arrays, axis=axis)


def _concat_grad(xp: Any, g: Any, ans: Any, arrays: tuple[Any, ...], *, axis: int | None):
    grads = []
    start = 0
    for a in arrays:
        if axis is not None and _skipped(a, g):
            grads.append(xp.zeros((0,), dtype=g.dtype, device=device_of(g)))
        elif axis is None:
            size = math.prod(a.shape)
            grads.append(xp.reshape(g[start : start + size], a.shape))
            start += size
        else:
            stop = start + a.shape[axis]
            grads.append(g[axis_slice(g.ndim, axis, start, stop)])
            start = stop
    return grads


def _repeat_grad(xp: Any, g: Any, ans: Any, x: Any, *, repeats: Any, axis: int | None) -> Any:
    shape = tuple(x.shape)
    if axis is None or not shape:  # (a 0-d x repeats as its one element)
        size = math.prod(shape)
        length, axis, target = size, 0, (size,)
    else:
        axis = axis % len(shape)
        length, target = shape[axis], shape
    # Which input position each output position along the axis copies; the copies'
    # gradients add up there.
    source = xp.repeat(xp.arange(length, device=device_of(g)), repeats)
    key = (slice(None),) * axis + (source,)
    return xp.reshape(xp.scatter_add(g, key=key, shape=target), shape)


def _tile_grad(xp: Any, g: Any, ans: Any, x: Any, *, repetitions: tuple[int, ...]) -> Any:
    shape = tuple(x.shape)
    ndim = max(len(shape), len(repetitions))
    padded = (1,) * (ndim - len(shape)) + shape
    reps = (1,) * (ndim - len(repetitions)) + tuple(repetitions)
    # The output is reps[i] copies of the input along each axis i: view it as
    # (reps[0], padded[0], reps[1], padded[1], ...) and sum over the copies.
    split = tuple(n for pair in zip(reps, padded) for n in pair)
    summed = xp.sum(xp.reshape(g, split), axis=tuple(range(0, 2 * ndim, 2)))
    return xp.reshape(summed, shape)


reshape = op("reshape(x, /, shape, *, copy=None)", vjp=_back_to_input_shape, saves=(), view=True,
             methods={"view": _view, "flatten": _flatten, "ravel": _ravel,
                      "contiguous": _contiguous, "is_contiguous": _is_contiguous,
                      "unflatten": _unflatten, "view_as": _view_as, "reshape_as": _reshape_as},
             aliases={"flatten": _flatten, "ravel": _ravel, "unflatten": _unflatten,
                      "atleast_1d": _atleast(1), "atleast_2d": _atleast(2),
                      "atleast_3d": _atleast(3)},
             doc="Give the elements of ``x`` a new ``shape`` (one entry may be -1).")
def _permute_dims_nonnegative(xp: Any, x: Any, /, axes: tuple[int, ...]) -> Any:
    # jax.numpy refuses negative axes, which NumPy, PyTorch and plugrad accept.
    return xp.permute_dims(x, tuple(axis % x.ndim for axis in axes) if x.ndim else axes)


permute_dims = op("permute_dims(x, /, axes)", saves=(), view=True, grad_fn_name="Permute",
                  kernels={"jax": _permute_dims_nonnegative},
                  vjp=lambda xp, g, ans, x, axes: xp.permute_dims(g, _inverse_permutation(axes)),
                  methods={"t": _t, "transpose": _transpose, "swapaxes": _transpose,
                           "swapdims": _transpose},
                  aliases={"t": _t, "transpose": _transpose, "swapaxes": _transpose,
                           "swapdims": _transpose, "permute": _permute},
                  inplace=("t", "transpose", "swapaxes", "swapdims"),
                  doc="Reorder the axes of ``x``: axis ``i`` of the result is axis ``axes[i]``.")
expand_dims = op("expand_dims(x, /, axis=0)", vjp=_back_to_input_shape, saves=(), view=True,
                 methods=("expand_dims", "unsqueeze"), aliases="unsqueeze", inplace=("unsqueeze",),
                 doc="Insert a size-1 axis at position ``axis`` (an int, or a tuple of them).")
squeeze = op("squeeze", _squeeze_axes, vjp=_back_to_input_shape, saves=(), view=True,
             methods={"squeeze": _squeeze}, torch_function=_squeeze, inplace=("squeeze",),
             doc="Remove the size-1 axes named by ``axis``.")
broadcast_to = op("broadcast_to", _broadcast_to,
                  vjp=lambda xp, g, ans, x, shape: g,
                  broadcasting=True, saves=(), view=True,
                  methods={"broadcast_to": None, "expand": _expand, "expand_as": _expand_as},
                  doc="Broadcast ``x`` to ``shape``; the gradient is summed back over new axes.")
def _axes(value: Any) -> Any:
    """PyTorch's lists as the standard's tuples, integers of other kinds as ints (the kernels
    and rules of roll and moveaxis read the value as given: a NumPy integer, a 0-d tensor)."""
    return value if type(value) is int or value is None else dim_as_axis(value)


def _zero_d_axes(name: str, axes: Any) -> None:
    """Check the axes given for a 0-d tensor: 0 and -1, as PyTorch takes them, or none."""
    for axis in axes if isinstance(axes, (tuple, list)) else () if axes is None else (axes,):
        checked_axis(name, axis, 0, zero_d_as_one=True)


def _flip(xp: Any, x: Any, /, axis: Any = None) -> Any:
    if x.ndim == 0:
        _zero_d_axes("flip", axis)
        return xp.asarray(x, copy=True)
    # A copy, as PyTorch's: NumPy's flip is a view, which a later in-place change would reach.
    return xp.asarray(xp.flip(x, axis=axis), copy=True)


def _torch_flip(xp: Any, x: Any, dims: Any) -> Any:
    """PyTorch's ``flip(x, dims=...)``."""
    return _flip(xp, x, axis=dim_as_axis(dims))


def _flip_method(xp: Any, x: Any, *dim: Any, dims: Any = None, axis: Any = None) -> Any:
    """PyTorch's ``x.flip(0, 1)``, ``x.flip((0, 1))`` or ``x.flip(dims=...)``; or ``axis=``."""
    given = [v for v in (dim or None, dims, axis) if v is not None]
    if len(given) > 1:
        raise ArgumentError("flip() takes the axes once: by position, as dims= or as axis=")
    if dim:
        return _flip(xp, x, axis=dim_as_axis(dim[0] if len(dim) == 1 else dim))
    return _flip(xp, x, axis=dim_as_axis(given[0]) if given else None)


def _torch_roll(xp: Any, x: Any, shifts: Any = None, dims: Any = None, *, shift: Any = None) -> Any:
    """PyTorch's ``roll(x, shifts, dims)`` and ``x.roll(shifts, dims)``.

    ``shift`` is the standard's name of the second argument: ``roll(x, 1, dims=1)``
    gives it by position and PyTorch's ``dims`` by name.
    """
    if shifts is None and shift is None:
        raise ArgumentError("roll() missing its shifts: roll(x, shifts, dims)")
    if shifts is not None and shift is not None:
        raise ArgumentError(
            "roll() got both shift= and shifts=, which name the same argument; pass only one"
        )
    shifts = shift if shifts is None else shifts
    dims = dim_as_axis(dims)  # (NumPy integers, 0-d integer tensors: as ints)
    if dims == ():  # PyTorch's: no dims rolls the flattened tensor (NumPy's rolls none)
        dims = None
    return xp.roll(x, dim_as_axis(shifts), axis=dims)


def _roll(xp: Any, x: Any, /, shift: Any, axis: Any = None) -> Any:
    shift, axis = _axes(shift), _axes(axis)  # PyTorch's lists; the standard's tuples
    for step in shift if isinstance(shift, tuple) else (shift,):
        _integer("roll", "shift", step)  # (NumPy truncated 1.5 to 1)
    if isinstance(shift, tuple):
        # NumPy adds up several shifts along one axis; the standard and PyTorch pair each
        # shift with an axis.
        named = len(axis) if isinstance(axis, tuple) else 1
        if len(shift) != named:
            raise ShapeError(
                f"roll(): {len(shift)} shifts for {named} axes; give one shift per axis "
                f"(shift={tuple(shift)}, axis={axis})"
            )
        if axis is None:
            shift = shift[0]
    return xp.roll(x, shift, axis=axis)


def _fliplr(xp: Any, x: Any) -> Any:
    """PyTorch's ``fliplr(x)``: reverse the order along axis 1 (of 2 or more dimensions)."""
    if x.ndim < 2:
        raise ShapeError(f"fliplr() takes a tensor of 2 or more dimensions, got {tuple(x.shape)}")
    return xp.flip(x, axis=1)


def _flipud(xp: Any, x: Any) -> Any:
    """PyTorch's ``flipud(x)``: reverse the order along axis 0 (of 1 or more dimensions)."""
    if x.ndim < 1:
        raise ShapeError("flipud() takes a tensor of 1 or more dimensions, got a 0-D tensor")
    return xp.flip(x, axis=0)


def _rot90(xp: Any, x: Any, k: int = 1, dims: Any = (0, 1)) -> Any:
    """PyTorch's ``rot90(x, k=1, dims=(0, 1))``: ``k`` quarter turns in the plane of ``dims``."""
    k = _integer("rot90", "k", k)
    dims = tuple(dims)
    if len(dims) != 2 or x.ndim < 2:
        raise ShapeError(
            f"rot90(): dims must name two axes of a tensor of 2 or more dimensions, got "
            f"dims={dims} for shape {tuple(x.shape)}"
        )
    first, second = (checked_axis("rot90", d, x.ndim) for d in dims)
    if first == second:
        raise ShapeError(f"rot90(): dims must be two different axes, got dims={dims}")
    swapped = list(range(x.ndim))
    swapped[first], swapped[second] = second, first
    turns = k % 4
    if turns == 1:
        return xp.permute_dims(xp.flip(x, axis=second), tuple(swapped))
    if turns == 2:
        return xp.flip(x, axis=(first, second))
    if turns == 3:
        return xp.permute_dims(xp.flip(x, axis=first), tuple(swapped))
    if xp.isdtype(x.dtype, "bool"):  # (positive() takes numbers only)
        return xp.logical_and(x, x)
    return xp.positive(x)  # a copy, as PyTorch's


def _joined(name: str, tensors: Any) -> list[Any]:
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise InvalidArgumentError(f"{name}() takes a non-empty list or tuple of tensors")
    return list(tensors)


def _hstack(xp: Any, tensors: Any) -> Any:
    """PyTorch's ``hstack(tensors)``: join along axis 1 (axis 0 for 1-D tensors)."""
    joined = [_at_least(xp, 1, t) for t in _joined("hstack", tensors)]
    return xp.concat(joined, axis=0 if joined[0].ndim == 1 else 1)


def _vstack(xp: Any, tensors: Any) -> Any:
    """PyTorch's ``vstack(tensors)``: join along axis 0, 0-D and 1-D tensors as rows."""
    return xp.concat([_at_least(xp, 2, t) for t in _joined("vstack", tensors)], axis=0)


def _dstack(xp: Any, tensors: Any) -> Any:
    """PyTorch's ``dstack(tensors)``: join along axis 2, after ``atleast_3d``."""
    return xp.concat([_at_least(xp, 3, t) for t in _joined("dstack", tensors)], axis=2)


def _column_stack(xp: Any, tensors: Any) -> Any:
    """PyTorch's ``column_stack(tensors)``: join along axis 1, 0-D and 1-D tensors as columns."""
    columns = [
        xp.reshape(t, (math.prod(t.shape), 1)) if t.ndim <= 1 else t
        for t in _joined("column_stack", tensors)
    ]
    return xp.concat(columns, axis=1)


# NOTE: axis may come by position here (the standard has it keyword-only), as PyTorch's
# flip(x, dims) and roll(x, shifts, dims) give it.
flip = op("flip", _flip, vjp=lambda xp, g, ans, x, *, axis: _flip(xp, g, axis=axis),
          saves=(), torch_function=_torch_flip,
          methods={"flip": _flip_method, "fliplr": _fliplr, "flipud": _flipud, "rot90": _rot90},
          aliases={"fliplr": _fliplr, "flipud": _flipud, "rot90": _rot90},
          doc="Reverse the order of elements along ``axis`` (all axes by default).")
roll = op("roll", _roll, vjp=_roll_grad, saves=(), methods={"roll": _torch_roll},
          torch_function=_torch_roll,
          doc="Shift elements cyclically by ``shift`` along ``axis`` (flattened by default).")
concat = op("concat", _concat, vjp=_concat_grad, sequence=True, saves=(),
            promotion="mixed",
            torch_function=torch_join("concat"),
            aliases={"cat": None, "concatenate": None, "hstack": _hstack, "vstack": _vstack,
                     "row_stack": _vstack, "dstack": _dstack, "column_stack": _column_stack},
            doc="Join tensors along an existing ``axis`` (flattened first if ``axis=None``).")
stack = op("stack(arrays, /, *, axis=0)", sequence=True, saves=(), promotion="mixed",
           torch_function=torch_join("stack"),
           vjp=lambda xp, g, ans, arrays, *, axis: xp.unstack(g, axis=axis),
           doc="Join tensors of one shape along a new ``axis``.")
def _unstack(xp: Any, x: Any, /, *, axis: int = 0) -> Any:
    # (NumPy's array-api-compat wrapped an axis out of range: unbind(2) of a matrix took axis 0)
    return tuple(xp.unstack(x, axis=checked_axis("unstack", axis, x.ndim)))


unstack = op("unstack", _unstack,
             vjp=lambda xp, g, ans, x, *, axis: xp.stack(g, axis=axis),
             multiple_outputs=True, view=True, saves=(),
             methods={"unstack": None, "unbind": None, "split": _split_method, "chunk": _chunk,
                      "tensor_split": _tensor_split,
                      # (PyTorch's unsafe_ forms only skip its view checks: the same here)
                      "unsafe_split": _split_method, "unsafe_chunk": _chunk,
                      "unsafe_split_with_sizes": _split_with_sizes},
             aliases={"unbind": None, "split": _split, "chunk": _chunk,
                      "tensor_split": _tensor_split, "split_with_sizes": _split_with_sizes,
                      "unsafe_split": _split, "unsafe_chunk": _chunk,
                      "unsafe_split_with_sizes": _split_with_sizes},
             torch_function=lambda xp, x, dim=0: tuple(xp.unstack(x, axis=dim_as_axis(dim))),
             doc="Split ``x`` along ``axis`` into a tuple of tensors without that axis.")
def _moveaxis(xp: Any, x: Any, source: Any, destination: Any, /) -> Any:
    if type(source) is not int or type(destination) is not int:
        # (the kernel and the rule read the axes as given: NumPy integers, 0-d tensors as ints)
        source, destination = _axes(source), _axes(destination)
    if len(source if isinstance(source, tuple) else (source,)) != len(
        destination if isinstance(destination, tuple) else (destination,)
    ):
        raise ShapeError(
            f"moveaxis(): source {source} and destination {destination} must name as many "
            "axes each"
        )
    if x.ndim == 0:
        _zero_d_axes("moveaxis", source)
        _zero_d_axes("moveaxis", destination)
        return x
    return xp.moveaxis(x, source, destination)


moveaxis = op("moveaxis", _moveaxis,
              vjp=lambda xp, g, ans, x, source, destination: _moveaxis(xp, g, destination, source),
              inputs=("x",), view=True, saves=(), methods=("moveaxis", "movedim"),
              aliases="movedim", doc="Move the axes ``source`` to positions ``destination``.")
def _repeat_interleave(
    xp: Any, x: Any, repeats: Any = None, dim: Any = None, *, output_size: Any = None,
    axis: Any = None,
) -> Any:  # fmt: skip
    """PyTorch's ``repeat_interleave(x, repeats, dim=None, *, output_size=None)`` (``axis=``
    for ``dim=`` too); given only a 1-D tensor of counts, each index repeated that often."""
    if repeats is None:  # repeat_interleave(counts)
        result = xp.repeat(xp.arange(x.shape[0], device=x.device), x)
        axis = 0
    else:
        if dim is not None and axis is not None:
            raise ArgumentError("repeat_interleave() got both dim= and axis=; give one of them")
        axis = dim_as_axis(axis if dim is None else dim)  # (a NumPy integer, a 0-d tensor)
        result = xp.repeat(x, as_int(repeats), axis=axis)
    # PyTorch's output_size is a promise (it spares a device sync): one not kept is refused.
    made = result.shape[0 if axis is None else axis]  # (axis=None repeats the flattened x)
    if output_size is not None and made != output_size:
        raise ShapeError(
            f"repeat_interleave(): output_size={output_size!r}, but the repeats make {made} "
            "elements along the axis; pass their sum"
        )
    return result


def _repeat(xp: Any, x: Any, /, repeats: Any, *, axis: Any = None) -> Any:
    # A kernel of its own: the standard takes `repeats` by position only. A negative count
    # is refused on every backend (JAX's repeat dropped such elements without a word).
    if hasattr(repeats, "shape"):
        if not xp.isdtype(repeats.dtype, "integral"):
            raise DtypeError(f"repeat_interleave(): repeats are counts, got {repeats.dtype}")
        negative = math.prod(repeats.shape) and _rules.any_true(
            xp.any(repeats < 0), "a negative count in repeats", InvalidArgumentError
        )
    else:
        _integer("repeat_interleave", "repeats", repeats)  # (NumPy truncated 2.5 to 2)
        negative = repeats < 0
    counts = math.prod(getattr(repeats, "shape", ()))
    known = axis is None or (type(axis) is int and -x.ndim <= axis < x.ndim)  # (else AxisError)
    length = math.prod(x.shape) if axis is None else x.shape[axis] if known else counts
    if getattr(repeats, "ndim", 0) > 1 or counts not in (1, length):
        # (NumPy's words: "operands could not be broadcast together")
        raise ShapeError(
            f"repeat_interleave(): repeats holds {counts} counts of shape "
            f"{tuple(repeats.shape)}, but the input has {length} elements "
            f"{'in all' if axis is None else f'along dim {axis}'}; give one count per element, "
            "or one for all"
        )
    if negative:
        raise InvalidArgumentError(
            "repeat_interleave(): repeats must not be negative; each is how many copies of an "
            "element to keep (0 drops it)"
        )
    return xp.repeat(x, repeats, axis=axis)


repeat = op("repeat", _repeat,
            vjp=_repeat_grad, array_params=("repeats",), saves=(),
            methods={"repeat_interleave": _repeat_interleave},
            aliases={"repeat_interleave": _repeat_interleave},
            doc="Repeat each element ``repeats`` times (an int, or one count per element).")
# NOTE: a kernel of its own: NumPy names the parameter `reps`, the standard `repetitions`.
tile = op("tile", lambda xp, x, /, repetitions: xp.tile(x, repetitions), vjp=_tile_grad,
          saves=(), methods={"tile": _torch_tile, "repeat": _tile_method},  # type: ignore[dict-item]
          doc="Repeat the whole tensor ``repetitions[i]`` times along each axis ``i``.")
broadcast_arrays = op("broadcast_arrays", lambda xp, *arrays: tuple(xp.broadcast_arrays(*arrays)),
                      vjp=lambda xp, g, ans, arrays: g, multiple_outputs=True, paired_outputs=True,
                      view=True,
                      broadcasting=True, saves=(), aliases="broadcast_tensors",
                      doc="Broadcast tensors against each other; a tuple of tensors.")

# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())


def _integer(function: str, name: str, value: Any) -> int:
    """``value`` as an int (a NumPy integer or a 0-d integer tensor too), or a ``TypeError``
    (a bool is none)."""
    if type(value) is not int:
        value = as_int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentError(f"{function}(): {name} must be an int, got {value!r}")
    return value
