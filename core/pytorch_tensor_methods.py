"""PyTorch's Tensor methods made of plugrad's ops, each also a function where PyTorch has one.

Indexing along a dim (``index_add``, ``index_copy``, ``index_fill`` and their
in-place forms, ``unfold``, ``fill_diagonal_``), statistics
(``quantile``, ``nanquantile``, ``cov``, ``corrcoef``, ``histc``), shapes
(``sum_to_size``, ``split_with_sizes``, ``hsplit``, ``vsplit``, ``dsplit``) and
small element-wise ones (``logaddexp2``, ``ldexp``, ``angle``, ``isposinf``,
``isneginf``, ``isreal``) and facts (``is_signed``, ``itemsize``, ``nbytes``).
Being made of differentiable ops, each has gradients where PyTorch's has them,
and runs on every backend. Also ``apply_`` and ``map_``, which run a Python
callable over the elements (no gradients, as PyTorch's).
"""

from __future__ import annotations

import contextlib
import fractions
import math
import numbers
import operator
import struct
from collections.abc import Callable
from typing import Any

from . import autocast_mode as _autocast
from . import creation as _creation
from . import dtypes as _dtypes
from . import ops as _ops
from . import return_types
from .dispatch import alpha_times
from .dtype_functions import broadcast_shapes, iinfo
from .dtype_functions import result_type as _result_type
from .errors import (
    ArgumentError,
    AxisError,
    BackwardError,
    DtypeError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    PlugradError,
    ScalarRangeError,
    ShapeError,
    checked_bool,
    name_the_call,
)
from .grad_mode import no_grad as _no_grad
from .inplace import apply_inplace, filled_with, takes_out
from .memory_formats import strided as _strided
from .opdef import as_int
from .plugins import _rules
from .tensor import Tensor, install_function_methods, install_methods
from .tensor_indexing import refuse_uint8_index
from .versions import mark_copy_of_view

__all__ = [
    "addr",
    "angle",
    "argwhere",
    "corrcoef",
    "cov",
    "dsplit",
    "frexp",
    "histc",
    "histogram",
    "histogramdd",
    "hsplit",
    "index_add",
    "index_copy",
    "index_fill",
    "index_put",
    "index_reduce",
    "isneginf",
    "isposinf",
    "is_same_size",
    "isreal",
    "ldexp",
    "logaddexp2",
    "masked_scatter",
    "mode",
    "nanquantile",
    "put",
    "quantile",
    "renorm",
    "unique_consecutive",
    "vsplit",
]

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _tensor(function: str, value: Any, what: str = "input") -> Tensor:
    """``value``, which must be a Tensor (``what``: its parameter's name, for the error)."""
    if not isinstance(value, Tensor):
        raise ArgumentError(f"{function}() takes a Tensor as {what}, got {type(value).__name__}")
    return value


def _dim(function: str, dim: Any, ndim: int) -> int:
    n = max(ndim, 1)
    if type(dim) is not int:  # (a NumPy integer, a 0-d integer tensor: as an int)
        dim = _rules.one_int_axis(function, dim)
    if not -n <= dim < n:
        raise AxisError(
            f"{function}(): dim {dim!r} is out of range for a {ndim}-d tensor; give one in "
            f"[{-n}, {n - 1}]"
        )
    return dim % n


# -- indexing along a dim -------------------------------------------------------------


def _spread_index(
    function: str, x: Tensor, dim: int, index: Tensor, like: tuple[int, ...]
) -> Tensor:
    """``index`` (1-d, along ``dim``) broadcast to the shape ``like``, for scatter."""
    _tensor(function, index, "index")
    if index.dtype.kind not in ("signed integer", "unsigned integer"):
        fix = (
            "for a mask, pass its positions, mask.nonzero(as_tuple=True)[0]"
            if index.dtype.kind == "bool"
            else "convert it with index.long()"
        )
        raise DtypeError(
            f"{function}(): index must be a tensor of integers (positions along dim {dim}), "
            f"got {index.dtype}; {fix}"
        )
    if index.ndim > 1:
        raise ShapeError(f"{function}(): index must be a 1-d tensor, got shape {index.shape}")
    wide = _ops.astype(index, x.device.default_int_dtype)  # int32 on JAX without x64
    if x.ndim == 0:  # one element, at dim 0 (or -1) as PyTorch takes a 0-d tensor's
        if index.numel() != 1:
            raise ShapeError(
                f"{function}(): a 0-d tensor has one position along dim {dim}; index must "
                f"name it once, got shape {index.shape}"
            )
        return _ops.reshape(wide, ())
    shape = [1] * x.ndim
    shape[dim] = -1
    return _ops.broadcast_to(_ops.reshape(wide, tuple(shape)), like)


def _same_dtype(function: str, x: Tensor, source: Tensor) -> None:
    """Refuse a source of another dtype, as PyTorch does (writing it would convert it, or
    the result would take another dtype)."""
    if source.dtype is not x.dtype:
        raise DtypeError(
            f"{function}(): the tensor is {x.dtype.name} but the source is {source.dtype.name}; "
            f"they must have the same dtype (convert the source with .to(plugrad.{x.dtype.name}))"
        )


def _source_index(function: str, x: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """``index`` spread for scatter after checking that ``source`` has ``x``'s shape with
    ``len(index)`` along ``dim``."""
    _tensor(function, source, "source")
    _same_dtype(function, x, source)
    expected = list(x.shape)
    if expected:
        expected[dim] = index.shape[0] if isinstance(index, Tensor) and index.ndim else 1
    if tuple(source.shape) != tuple(expected):
        raise ShapeError(
            f"{function}(): source must have shape {tuple(expected)} (the input's, with "
            f"len(index) along dim {dim}), got {source.shape}"
        )
    return _spread_index(function, x, dim, index, tuple(source.shape))


def _fill_index(function: str, x: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """``index`` spread for scatter, as index_fill writes ``value`` (a number or a 0-d tensor)."""
    _tensor(function, index, "index")
    like = list(x.shape)
    if like:
        like[dim] = index.shape[0] if isinstance(index, Tensor) and index.ndim else 1
    if index.dtype.kind == "signed integer":
        # index_fill counts negative indices from the end, as PyTorch's (scatter does not);
        # a 0-d tensor has one element along its dim.
        index = _ops.where(index < 0, index + (x.shape[dim] if x.ndim else 1), index)
    spread = _spread_index(function, x, dim, index, tuple(like))
    if isinstance(value, Tensor) and value.ndim:
        raise ShapeError(f"{function}(): value must be a number or a 0-d tensor, got {value.shape}")
    return spread


def _filled_mask(x: Tensor, dim: int, spread: Tensor) -> Tensor:
    """Where index_fill writes: a tensor value goes through masked_fill, whose gradient
    counts each element once however often the index repeats it (scatter's would not)."""
    return _creation.zeros_like(x, dtype=_dtypes.bool).scatter(dim, spread, value=True)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """Return ``input`` with ``alpha * source`` added at ``index`` along ``dim`` (repeats add up).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.zeros(3, 2).index_add(0, plugrad.tensor([0, 2, 0]), plugrad.ones(3, 2))
    tensor([[2., 2.],
            [0., 0.],
            [1., 1.]])
    """
    return _index_add("index_add", _tensor("index_add", input), dim, index, source, alpha)


@_autocast.listed("index_copy")
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """Return ``input`` with the rows of ``source`` written at ``index`` along ``dim``."""
    return _index_copy("index_copy", _tensor("index_copy", input), dim, index, source)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """Return ``input`` with ``value`` at ``index`` along ``dim`` (a number or a 0-d tensor)."""
    return _index_fill("index_fill", _tensor("index_fill", input), dim, index, value)


def _index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """In-place :func:`index_add`."""
    return _index_add("index_add_", self, dim, index, source, alpha)


def _index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """In-place :func:`index_copy`."""
    return _index_copy("index_copy_", self, dim, index, source)


def _index_fill_(self: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """In-place :func:`index_fill`."""
    return _index_fill("index_fill_", self, dim, index, value)


# index_add, index_copy and index_fill, and (``function`` ending in ``_``) their in-place
# methods: scatter under the name the user called.


def _index_add(
    function: str, x: Tensor, dim: int, index: Tensor, source: Tensor, alpha: Any
) -> Tensor:
    dim = _dim(function, dim, x.ndim)
    spread = _source_index(function, x, dim, index, source)
    scatter_add = x.scatter_add_ if function.endswith("_") else x.scatter_add
    try:
        return scatter_add(
            dim, spread, source if alpha == 1 else alpha_times(function, x, source, alpha)
        )
    except PlugradError as error:
        name_the_call(error, function)  # (it named scatter_add)
        raise


def _index_copy(function: str, x: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    dim = _dim(function, dim, x.ndim)
    scatter = x.scatter_ if function.endswith("_") else x.scatter
    try:
        return scatter(dim, _source_index(function, x, dim, index, source), source)
    except PlugradError as error:
        name_the_call(error, function)  # (it named scatter)
        raise


def _index_fill(function: str, x: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    dim = _dim(function, dim, x.ndim)
    spread = _fill_index(function, x, dim, index, value)
    in_place = function.endswith("_")
    try:
        if isinstance(value, Tensor):
            masked_fill = x.masked_fill_ if in_place else x.masked_fill
            return masked_fill(_filled_mask(x, dim, spread), value)
        return (x.scatter_ if in_place else x.scatter)(dim, spread, value=value)
    except PlugradError as error:
        name_the_call(error, function)  # (it named scatter)
        raise


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _index_reduce_arguments(function: str, x: Tensor, dim: int, index: Tensor, source: Tensor,
                            reduce: Any, include_self: Any) -> tuple[int, Tensor]:  # fmt: skip
    dim = _dim(function, dim, x.ndim)
    if reduce not in _INDEX_REDUCTIONS:
        raise ArgumentError(
            f"{function}(): reduce must be one of {', '.join(map(repr, _INDEX_REDUCTIONS))}, "
            f"got {reduce!r}"
        )
    checked_bool(f"{function}(): include_self", include_self)
    return dim, _source_index(function, x, dim, index, source)


def _index_reducer(function: str, doc: str) -> Any:
    """``index_reduce``, or (``function`` ending in ``_``) the method writing it into ``input``."""

    def index_reduce(
        input: Tensor,
        dim: int,
        index: Tensor,
        source: Tensor,
        reduce: str,
        *,
        include_self: bool = True,
    ) -> Tensor:
        x = _tensor(function, input)
        dim, spread = _index_reduce_arguments(function, x, dim, index, source, reduce, include_self)
        scatter = x.scatter_reduce_ if function.endswith("_") else x.scatter_reduce
        return scatter(dim, spread, source, reduce, include_self=include_self)

    index_reduce.__name__ = index_reduce.__qualname__ = function
    index_reduce.__doc__ = doc
    return index_reduce


index_reduce = _index_reducer(
    "index_reduce",
    """Return ``input`` with the rows of ``source`` folded in at ``index`` along ``dim`` by
    ``reduce`` (``"prod"``, ``"mean"``, ``"amax"`` or ``"amin"``); rows ``index`` names
    several times all take part. ``include_self=False`` leaves ``input``'s own values out
    where a row is written. Differentiable as the scatter reductions it is made of.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.tensor([1.0, 2.0]).index_reduce(0, plugrad.tensor([0, 0, 1]),
    ...                                         plugrad.tensor([2.0, 3.0, 4.0]), "prod")
    tensor([6., 8.])
    """,
)
_index_reduce_ = _index_reducer("index_reduce_", "In-place :func:`index_reduce`.")


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether the two tensors have the same shape.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.ones(2, 3).is_same_size(plugrad.zeros(2, 3))
    True
    """
    return tuple(_tensor("is_same_size", input).shape) == tuple(
        _tensor("is_same_size", other, "other").shape
    )


# -- writing at indices: index_put, masked_scatter, put_ --------------------------------------


def _index_tuple(function: str, indices: Any) -> tuple[Tensor, ...]:
    if not isinstance(indices, (tuple, list)) or not all(isinstance(i, Tensor) for i in indices):
        raise ArgumentError(f"{function}() takes indices as a tuple of Tensors, got {indices!r}")
    for index in indices:  # (accumulate=True reads them as positions, not through x[key])
        refuse_uint8_index(index, function)
    return tuple(indices)


@_autocast.listed("index_put")
def index_put(
    input: Tensor, indices: tuple[Tensor, ...], values: Any, accumulate: bool = False
) -> Tensor:
    """Return ``input`` with ``values`` at ``input[indices]``; repeated indices add up with
    ``accumulate=True`` (else one of them wins, as in PyTorch). Differentiable in both.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.zeros(3).index_put((plugrad.tensor([0, 0, 2]),), plugrad.tensor(1.0), True)
    tensor([2., 0., 1.])
    """
    key = _index_tuple("index_put", indices)
    _tensor("index_put", input)
    if isinstance(values, Tensor):
        _same_dtype("index_put", input, values)
    if not accumulate:
        out = input.clone()
        out[key] = values
        return out
    # Accumulated at flat positions: index_add adds repeated rows, setitem would not.
    # A bool mask stands for the integer indices of its True elements, one per axis it covers.
    key = tuple(
        part
        for index in key
        for part in (index.nonzero(as_tuple=True) if index.dtype is _dtypes.bool else (index,))
    )
    shape = tuple(input.shape)
    positions = _flat_positions("index_put", shape, key)
    added = _ops.broadcast_to(_as_values(input, values), tuple(positions.shape))
    flat = _ops.reshape(input, (-1,))
    summed = index_add(flat, 0, _ops.reshape(positions, (-1,)), _ops.reshape(added, (-1,)))
    return _ops.reshape(summed, shape)


def _index_put_(
    self: Tensor, indices: tuple[Tensor, ...], values: Any, accumulate: bool = False
) -> Tensor:
    """In-place :func:`index_put`."""
    key = _index_tuple("index_put_", indices)
    if isinstance(values, Tensor):  # as index_put: x[key] = values would cast them
        _same_dtype("index_put_", self, values)
    if not accumulate:
        self[key] = values
        return self
    return self.copy_(index_put(self, key, values, accumulate=True))


def _flat_positions(function: str, shape: tuple[int, ...], key: tuple[Tensor, ...]) -> Tensor:
    """The flat positions of ``x[key]`` for a tuple of integer index tensors (one per leading
    axis), broadcast together; negative indices count from the end, as in indexing."""
    if not all(i.dtype.kind in ("signed integer", "unsigned integer") for i in key):
        raise DtypeError(
            f"{function}(): indices must be integer tensors (positions), got "
            f"{[i.dtype.name for i in key]}; for a mask, pass its positions, "
            "mask.nonzero(as_tuple=True)"
        )
    if len(key) > len(shape):
        raise ShapeError(
            f"{function}(): indices must be at most {len(shape)} integer tensors, one per "
            f"leading axis of the input {shape}, got {[(i.dtype.name, i.shape) for i in key]}"
        )
    broadcast = broadcast_shapes(*(tuple(i.shape) for i in key))
    rest = shape[len(key) :]
    position: Tensor | None = None
    for index, size in zip(key, shape):
        outside = _ops.any((index >= size) | (index < -size))
        # (a check a compiled replay repeats, not a read of values that would end a capture)
        if _rules.any_true(outside, f"{function}(): an index out of range", IndexOutOfRangeError):
            raise IndexOutOfRangeError(
                f"{function}(): an index is out of range for an axis of length {size}"
            )
        wrapped = _ops.astype(index, index.device.default_int_dtype)
        if size:  # (an axis of length 0 passed the check above with an empty index only)
            wrapped = _ops.remainder(wrapped, size)
        wrapped = _ops.broadcast_to(wrapped, broadcast)
        position = wrapped if position is None else position * size + wrapped
    assert position is not None
    if rest:  # whole trailing axes: each position spreads over their elements
        within = math.prod(rest)
        offsets = _creation.arange(within, device=position.device)
        position = _ops.expand_dims(position * within, axis=-1) + offsets
        position = _ops.reshape(position, broadcast + rest)
    return position


def _as_values(input: Tensor, values: Any) -> Tensor:
    if isinstance(values, Tensor):
        return values if values.dtype is input.dtype else _ops.astype(values, input.dtype)
    return _creation.asarray(values, dtype=input.dtype, device=input.device)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """Return ``input`` with the first elements of ``source`` (in order) where ``mask``
    (broadcast to ``input``'s shape) is true. Differentiable in ``input`` and ``source``.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.zeros(2, 3)
    >>> x.masked_scatter(plugrad.tensor([True, False, True]), plugrad.arange(1.0, 7.0))
    tensor([[1., 0., 2.],
            [3., 0., 4.]])
    """
    _tensor("masked_scatter", input)
    _tensor("masked_scatter", mask, "mask")
    _tensor("masked_scatter", source, "source")
    if mask.dtype is not _dtypes.bool:
        raise DtypeError(f"masked_scatter(): mask must be a bool tensor, got {mask.dtype}")
    _same_dtype("masked_scatter", input, source)
    shape = broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    if shape != tuple(input.shape):  # a mask of more dimensions: the result takes its shape
        input = _ops.broadcast_to(input, shape)
    full_mask = _ops.broadcast_to(mask, shape)
    count = int(_ops.sum(_ops.astype(full_mask, full_mask.device.default_int_dtype)))
    if count > source.numel():
        raise ShapeError(
            f"masked_scatter(): the mask selects {count} elements but source has only "
            f"{source.numel()}"
        )
    out = input.clone()
    out[full_mask] = _as_values(input, _ops.reshape(source, (-1,))[:count])
    return out


def _masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In-place :func:`masked_scatter`: the mask broadcasts to the tensor's shape."""
    _tensor("masked_scatter_", mask, "mask")
    if broadcast_shapes(tuple(self.shape), tuple(mask.shape)) != self.shape:
        raise ShapeError(
            f"masked_scatter_(): the mask of shape {mask.shape} does not broadcast to the "
            f"tensor's shape {self.shape}"
        )
    return self.copy_(masked_scatter(self, mask, source))


def _put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """PyTorch's ``x.put_(index, source, accumulate=False)``: ``source`` at the positions
    ``index`` of the flattened ``x`` (negative ones from the end), in place."""
    _tensor("put_", index, "index")
    if isinstance(source, Tensor):  # (converted, an int64 source was written into floats)
        _same_dtype("put_", self, source)
    flat_shape = (self.numel(),)
    position = _flat_positions("put_", flat_shape, (_ops.reshape(index, (-1,)),))
    values = _ops.reshape(_as_values(self, source), (-1,))
    if values.shape != position.shape:
        raise ShapeError(
            f"put_(): source has {values.shape[0]} elements for {position.shape[0]} indices"
        )
    flat = index_put(_ops.reshape(self, flat_shape), (position,), values, accumulate)
    return self.copy_(_ops.reshape(flat, tuple(self.shape)))


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """Return ``input`` with ``source`` at the positions ``index`` of its flattened form
    (negative ones from the end); repeated positions add up with ``accumulate=True``.
    Out-of-place ``x.put_``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.put(plugrad.zeros(3), plugrad.tensor([-1]), plugrad.tensor([5.0]))
    tensor([0., 0., 5.])
    """
    return _put_(_tensor("put", input).clone(), index, source, accumulate)


def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: Any = None
) -> Any:
    """The elements of the flattened ``input`` (with ``dim``, its slices along ``dim``) with
    each run of equal neighbours kept once; with ``return_inverse`` also where each element
    went, with ``return_counts`` each run's length (a tuple then, as PyTorch's). NaNs are
    never equal, so each is kept.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.unique_consecutive(plugrad.tensor([1, 1, 2, 2, 3, 1, 1]), return_counts=True)
    (tensor([1, 2, 3, 1]), tensor([2, 2, 1, 2]))
    """
    _tensor("unique_consecutive", input)
    if dim is None:
        flat = _ops.reshape(input, (-1,))
        differs = flat[1:] != flat[:-1]
    else:  # runs of equal slices along dim
        if input.ndim == 0:
            raise AxisError(f"unique_consecutive(): a 0-d tensor has no dim {dim!r}; give dim=None")
        dim = _dim("unique_consecutive", dim, input.ndim)  # (an int from here on)
        flat = _ops.moveaxis(input, dim, 0)
        rows = _ops.reshape(flat, (flat.shape[0], math.prod(flat.shape[1:])))
        differs = _ops.any(rows[1:] != rows[:-1], axis=1)
    n = flat.shape[0]
    starts = _ops.concat(
        [_creation.ones(min(n, 1), dtype=_dtypes.bool, device=input.device), differs]
    )
    values = flat[starts] if dim is None else _ops.moveaxis(flat[starts], 0, dim)
    if not (return_inverse or return_counts):
        return values
    result: list[Tensor] = [values]
    if return_inverse:
        runs = _ops.cumulative_sum(_ops.astype(starts, starts.device.default_int_dtype)) - 1
        result.append(_ops.reshape(runs, tuple(input.shape)) if dim is None else runs)
    if return_counts:
        positions = _ops.nonzero(starts)[0]
        ends = _ops.concat([positions[1:], _creation.asarray([n], device=input.device)])
        result.append(ends - positions)
    return tuple(result)


# -- products ---------------------------------------------------------------------------------


@_autocast.listed("addr")
@takes_out
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``; ``input`` is ignored where ``beta == 0``
    (its NaN too), as in PyTorch. Of bool tensors it is logical, as PyTorch's:
    ``(beta and input) or (alpha and vec1[i] and vec2[j])``, any ``beta`` and ``alpha``
    counting as true or false.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.addr(plugrad.zeros(2, 2), plugrad.tensor([1.0, 2.0]), plugrad.tensor([3.0, 4.0]))
    tensor([[3., 4.],
            [6., 8.]])
    """
    _tensor("addr", input)
    product = _ops.outer(_tensor("addr", vec1, "vec1"), _tensor("addr", vec2, "vec2"))
    _check_addr_factors(input, product, beta=beta, alpha=alpha)
    if input.dtype is _dtypes.bool and product.dtype is _dtypes.bool:
        # (bool * 3 would promote to int64 and count, where PyTorch's result stays bool)
        beta, alpha = bool(beta), bool(alpha)
        if not alpha:
            product = product & False
    elif alpha != 1:
        product = product * alpha
    if beta == 0:  # input unread, its gradient 0 (PyTorch's: zeros, not None)
        return _ops.where(_creation.zeros_like(product, dtype=_dtypes.bool), input, product)
    return (input if beta == 1 else input * beta) + product


def _check_addr_factors(input: Tensor, product: Tensor, **factors: Any) -> None:
    """Refuse what PyTorch's addr refuses: a float ``beta``/``alpha`` for integer or bool
    tensors (its fraction would be dropped), a bool one for a result that is not bool."""
    integral = all(t.dtype.kind in _INTEGRAL_KINDS for t in (input, product))
    logical = input.dtype is _dtypes.bool and product.dtype is _dtypes.bool
    for name, value in factors.items():
        if integral and isinstance(value, (float, complex)):
            raise DtypeError(
                f"addr(): {name}={value!r} is a float, and the tensors are "
                f"{input.dtype.name} and {product.dtype.name}; give an integer {name}, or "
                "convert the tensors to a floating dtype first (x.float())"
            )
        if isinstance(value, bool) and not logical:
            raise ArgumentError(
                f"addr(): {name}={value!r} is a bool, which only a bool result takes; give "
                f"a number ({int(value)})"
            )


_INTEGRAL_KINDS = ("bool", "signed integer", "unsigned integer")


def _addr_(self: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """In-place :func:`addr`."""
    result = addr(self, vec1, vec2, beta=beta, alpha=alpha)
    if result.dtype != self.dtype:  # as PyTorch: copy_ would cast floats into an int tensor
        raise DtypeError(
            f"addr_() would give {result.dtype.name} values, which a {self.dtype.name} tensor "
            "cannot hold; convert one operand first, or write x = x.addr(...)"
        )
    return self.copy_(result)


def _float_power_(self: Tensor, exponent: Any) -> Tensor:
    """In-place :func:`float_power`: of a float64 or complex128 tensor only, as PyTorch's (the
    float64 power of a float32 tensor written back would be rounded without a word)."""
    if self.dtype not in (_dtypes.float64, _dtypes.complex128):
        raise DtypeError(
            f"float_power_() computes in float64 (complex128), which the {self.dtype.name} "
            "tensor it would write does not hold; use x.double().float_power_(...) or "
            "x = x.float_power(...)"
        )
    return apply_inplace(self, _ops.float_power, exponent, name="float_power_")


def _unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Return the windows of ``size`` elements every ``step`` along ``dimension``, as a new
    last axis (a copy, where PyTorch's is a view).

    Changing the result in place, or ``self`` while the result lives, raises
    :class:`~plugrad.errors.ViewCopyError` rather than leaving one without the change.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.arange(5.0).unfold(0, 2, 2)
    tensor([[0., 1.],
            [2., 3.]])
    """
    dim = _dim("unfold", dimension, self.ndim)
    length = self.shape[dim] if self.ndim else 1
    size, step = as_int(size), as_int(step)
    for name, value in (("size", size), ("step", step)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentError(f"unfold(): {name} must be an int, got {value!r}")
    if step <= 0 or size < 0 or size > length:
        raise ShapeError(
            f"unfold(): needs 0 <= size <= {length} (the size of dim {dim}) and step > 0, got "
            f"size={size}, step={step}"
        )
    x = self if self.ndim else _ops.reshape(self, (1,))
    count = (length - size) // step + 1
    starts = _creation.arange(0, count * step, step, device=self.device)
    windows = _ops.reshape(starts, (-1, 1)) + _creation.arange(size, device=self.device)
    picked = _ops.take(x, _ops.reshape(windows, (-1,)), axis=dim)
    if not self.ndim:  # as PyTorch: the one window of a 0-d tensor, (size,)
        return mark_copy_of_view(_ops.reshape(picked, (size,)), "unfold()", self)
    shape = (*x.shape[:dim], count, size, *x.shape[dim + 1 :])
    windows = _ops.moveaxis(_ops.reshape(picked, shape), dim + 1, -1)
    return mark_copy_of_view(windows, "unfold()", self)


def _fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Fill the main diagonal with ``fill_value`` in place (all sizes equal past 2-d).

    With ``wrap``, a tall matrix's diagonal starts again every ``columns + 1`` rows.
    """
    if self.ndim < 2 or (self.ndim > 2 and len(set(self.shape)) != 1):
        raise ShapeError(
            f"fill_diagonal_() takes a matrix, or a tensor whose sizes are all equal; got "
            f"shape {self.shape}"
        )
    rows, columns = self.shape[0], self.shape[1]
    count = min(self.shape)
    if self.ndim == 2 and wrap and rows > columns:
        index = _creation.arange(0, rows * columns, columns + 1, device=self.device)
        row, column = index // columns, index % columns
        self[row, column] = fill_value
        return self
    along = _creation.arange(count, device=self.device)
    self[(along,) * self.ndim] = fill_value
    return self


# -- statistics -----------------------------------------------------------------------


def _quantile(
    function: str,
    input: Tensor,
    q: Any,
    dim: Any,
    keepdim: bool,
    interpolation: str,
    ignore_nan: bool,
) -> Tensor:
    _tensor(function, input)
    if input.dtype.kind != "real floating":
        raise DtypeError(f"{function}() takes a real floating tensor, got {input.dtype}")
    if interpolation not in _INTERPOLATIONS:
        raise ArgumentError(
            f"{function}(): interpolation must be one of {_INTERPOLATIONS}, got {interpolation!r}"
        )
    scalar_q = not isinstance(q, Tensor)
    qs = _creation.asarray(q, dtype=input.dtype, device=input.device) if scalar_q else q
    if qs.ndim > 1:
        raise ShapeError(f"{function}(): q must be a number or a 1-d tensor, got shape {qs.shape}")
    if qs.dtype != input.dtype:
        raise DtypeError(
            f"{function}(): q must have the input's dtype {input.dtype}, got {qs.dtype}"
        )
    values = qs.detach().tolist()
    if any(not 0 <= v <= 1 for v in (values if isinstance(values, list) else [values])):
        raise ArgumentError(f"{function}(): q must be in [0, 1], got {q!r}")
    if dim is None:
        x, axis = _ops.reshape(input, (-1,)), 0
    else:
        axis = _dim(function, dim, input.ndim)
        x = input if input.ndim else _ops.reshape(input, (1,))
    n = x.shape[axis]
    if n == 0:
        raise ShapeError(f"{function}(): the input has no elements along the reduced dim")
    ordered = _ops.moveaxis(_ops.sort(x, axis=axis), axis, -1)  # NaN sorts last
    if ignore_nan:
        present = _ops.astype(
            _ops.logical_not(_ops.isnan(ordered)), ordered.device.default_int_dtype
        )
        count = _ops.sum(present, axis=-1, keepdims=True)
    else:
        count = _creation.full_like(ordered[..., :1], n, dtype=ordered.device.default_int_dtype)
    last = _ops.astype(_ops.maximum(count - 1, 0), ordered.dtype)
    q_row = _ops.reshape(qs, (-1,))
    position = last * q_row  # (..., len(q)); linear interpolation is differentiable in q
    if not ignore_nan:
        # A slice with a NaN: its quantiles are the last NaN (sorted last), which takes the
        # gradient, as PyTorch's; a where() giving NaN instead gave no element any gradient.
        has_nan = _ops.any(_ops.isnan(ordered), axis=-1, keepdims=True)
        position = _ops.where(has_nan, float(n - 1), position)
    below = _ops.floor(position)
    above = _ops.ceil(position)
    if interpolation == "lower":
        above = below
    elif interpolation == "higher":
        below = above
    elif interpolation == "nearest":
        below = above = _ops.round(position)  # half to even, as PyTorch's
    low = _ops.take_along_axis(ordered, _ops.astype(below, below.device.default_int_dtype), axis=-1)
    high = _ops.take_along_axis(
        ordered, _ops.astype(above, above.device.default_int_dtype), axis=-1
    )
    # lerp's two-sided form, as PyTorch's: an infinite neighbour gives inf, not inf - inf.
    if interpolation == "midpoint":
        result = _ops.lerp(low, high, 0.5)
    elif interpolation == "linear":
        result = _ops.lerp(low, high, position - below)
    else:
        result = low
    # (a slice of NaNs for nanquantile: position 0, a NaN, with the gradient, as PyTorch's)
    # result: (..., len(q)), the kept axes first; PyTorch puts q's axis first.
    result = _ops.moveaxis(result, -1, 0)
    if keepdim:
        if dim is None:
            result = _ops.reshape(result, (result.shape[0],) + (1,) * input.ndim)
        elif input.ndim:
            result = _ops.expand_dims(result, axis=axis + 1)
    return result[0] if scalar_q or qs.ndim == 0 else result


@takes_out
def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> return_types.mode:
    """The most frequent value along ``dim`` (the smallest, where several are as frequent)
    and the last index where it stands, as PyTorch's ``mode``; the gradient goes to that
    index. Each NaN counts as a value seen once (a slice of NaNs has the mode NaN, at its
    last index); PyTorch's answer with NaNs depends on where they stand (``[nan, nan, 1]``
    gives nan, ``[1, nan, nan]`` gives 1), plugrad's does not (1 for both).

    Each slice is compared with itself element by element: memory grows with the square
    of ``dim``'s length.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.tensor([[3.0, 1.0, 1.0, 3.0], [2.0, 2.0, 5.0, 7.0]]).mode(1)
    mode(values=tensor([1., 2.]), indices=tensor([2, 1]))
    """
    _tensor("mode", input)
    if input.dtype.kind == "complex floating":  # (iinfo() refused it, naming itself)
        raise DtypeError(
            f"mode(): complex inputs are not supported ({input.dtype.name}): the mode is the "
            "smallest of the most frequent values, and complex numbers have no order (PyTorch "
            "refuses them too); take the mode of x.real, x.imag or abs(x) instead"
        )
    axis = _dim("mode", dim, input.ndim)
    if input.ndim == 0:
        index = _creation.zeros((), dtype=input.device.default_int_dtype, device=input.device)
        return return_types.mode(input.clone(), index)
    x = _ops.moveaxis(input, axis, -1)
    length = x.shape[-1]
    if length == 0:
        raise AxisError(  # an IndexError too, as PyTorch's
            f"mode(): expected reduction dim {dim} to have non-zero size, but the input has "
            f"shape {tuple(input.shape)}: there is no element to take the mode of; check "
            f"x.size({dim}) > 0 first"
        )
    with _no_grad():
        values = x.detach()

        floating = input.dtype.kind == "real floating"

        def same(a: Tensor, b: Tensor) -> Tensor:  # a NaN mode stands where a NaN is
            return ((a == b) | (_ops.isnan(a) & _ops.isnan(b))) if floating else a == b

        counts = _ops.sum(_ops.astype(values[..., :, None] == values[..., None, :],
                                      input.device.default_int_dtype), axis=-1)  # fmt: skip
        if floating:  # as PyTorch, each NaN is a value seen once
            counts = counts + _ops.astype(_ops.isnan(values), counts.dtype)
        most = _ops.max(counts, axis=-1, keepdims=True)
        if input.dtype.kind == "real floating":
            above = math.inf
        elif input.dtype.kind == "bool":
            values = _ops.astype(values, _dtypes.int8)
            above = 2
        else:
            above = iinfo(input.dtype).max
        candidates = counts == most
        if floating:  # the smallest number among the most frequent; NaN where only NaNs are
            numbers = candidates & ~_ops.isnan(values)
            smallest = _ops.min(_ops.where(numbers, values, above), axis=-1, keepdims=True)
            smallest = _ops.where(_ops.any(numbers, axis=-1, keepdims=True), smallest, math.nan)
        else:
            smallest = _ops.min(_ops.where(candidates, values, above), axis=-1, keepdims=True)
        positions = _creation.arange(length, dtype=input.device.default_int_dtype,
                                     device=input.device)  # fmt: skip
        index = _ops.max(_ops.where(same(values, smallest), positions, -1), axis=-1, keepdims=True)
    chosen = _ops.take_along_axis(x, index, axis=-1)
    if keepdim:
        chosen, index = _ops.moveaxis(chosen, -1, axis), _ops.moveaxis(index, -1, axis)
    else:
        chosen, index = chosen[..., 0], index[..., 0]
    return return_types.mode(chosen, index)


@_autocast.listed("renorm")
@takes_out
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm``, scaled to that norm.

    As PyTorch's: a slice is the tensor at one index of ``dim`` (a row for
    ``dim=0``), scaled by ``maxnorm / (norm + 1e-7)``; the others are unchanged.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.tensor([[3.0, 4.0], [0.3, 0.4]]).renorm(2, 0, 1.0)
    tensor([[0.6000, 0.8000],
            [0.3000, 0.4000]])
    """
    _tensor("renorm", input)
    if input.ndim < 2:
        raise ShapeError(
            f"renorm() takes a tensor of 2 or more dimensions (slices along dim), got shape "
            f"{input.shape}"
        )
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not p > 0:
        raise ArgumentError(f"renorm(): p must be a positive number, got {p!r}")
    if isinstance(maxnorm, bool) or not isinstance(maxnorm, (int, float)) or not maxnorm >= 0:
        raise ArgumentError(f"renorm(): maxnorm must be a number >= 0, got {maxnorm!r}")
    axis = _dim("renorm", dim, input.ndim)
    others = tuple(d for d in range(input.ndim) if d != axis)
    exceeds = _ops.vector_norm(input.detach(), axis=others, keepdims=True, ord=p) > maxnorm
    # The norm differentiated is of the slices scaled only: a slice left as it is (a NaN
    # one among them) sends no gradient through a norm, where 0 * its NaN slope was NaN.
    norm = _ops.vector_norm(_ops.where(exceeds, input, 0.0), axis=others, keepdims=True, ord=p)
    return input * _ops.where(exceeds, maxnorm / (norm + 1e-7), 1.0)


def _quantile_function(function: str, ignore_nan: bool, doc: str) -> Any:
    def quantile(
        input: Tensor,
        q: Any,
        dim: int | None = None,
        keepdim: bool = False,
        *,
        interpolation: str = "linear",
    ) -> Tensor:
        return _quantile(function, input, q, dim, keepdim, interpolation, ignore_nan)

    quantile.__name__ = quantile.__qualname__ = function
    quantile.__doc__ = doc
    return _autocast.listed(function)(takes_out(quantile))


quantile = _quantile_function(
    "quantile",
    False,
    """Return the ``q``-th quantiles of ``input`` (over every element, or along ``dim``).

    ``q`` is a number or a 1-d tensor in ``[0, 1]`` (then the quantiles lead the
    result); ``interpolation`` is ``"linear"``, ``"lower"``, ``"higher"``,
    ``"midpoint"`` or ``"nearest"``. A slice holding NaN gives NaN (see
    :func:`nanquantile`). Differentiable in ``input``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.quantile(plugrad.tensor([1.0, 2.0, 3.0, 4.0]), 0.5)
    tensor(2.5000)
    """,
)
nanquantile = _quantile_function(
    "nanquantile",
    True,
    ":func:`quantile` leaving NaN out (NaN only where a slice holds nothing else).",
)


def cov(
    input: Tensor,
    *,
    correction: int = 1,
    fweights: Tensor | None = None,
    aweights: Tensor | None = None,
) -> Tensor:
    """Return the covariance matrix of the variables in the rows of ``input``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.cov(plugrad.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    _tensor("cov", input)
    if input.ndim > 2:
        raise ShapeError(f"cov() takes a 1-d or 2-d tensor, got shape {input.shape}")
    if isinstance(correction, bool) or not isinstance(correction, numbers.Integral):
        raise ArgumentError(
            f"cov(): correction must be an int (1: the unbiased estimate), got "
            f"{type(correction).__name__} {correction!r}"
        )
    x = _ops.reshape(input, (1, -1)) if input.ndim < 2 else input
    if x.dtype.kind not in ("real floating", "complex floating"):
        x = _ops.astype(x, _dtypes.default_float_dtype)
    n = x.shape[1]
    weights = None
    for name, given in (("fweights", fweights), ("aweights", aweights)):
        if given is None:
            continue
        _tensor("cov", given, name)
        if given.ndim != 1 or given.shape[0] != n:
            raise ShapeError(f"cov(): {name} must be 1-d with {n} entries, got shape {given.shape}")
        if name == "fweights" and given.dtype.kind not in ("signed integer", "unsigned integer"):
            raise DtypeError(
                f"cov(): fweights are counts of repeated observations, of an integer dtype; got "
                f"{given.dtype.name} (give aweights for weights that are not counts)"
            )
        if _rules.any_true(_ops.any(given < 0), f"cov(): negative {name}", ArgumentError):
            raise ArgumentError(f"cov(): {name} cannot be negative")
        weights = given if weights is None else weights * given
    # The dtypes are PyTorch's: the weights take part in promotion (float32 data with
    # float64 aweights gives float64, float16 data with float32 aweights float32), their
    # 0-d sums do not (complex64 data with float weights stays complex64).
    scale: Tensor | int
    if weights is None:
        centered = x - _ops.mean(x, axis=1, keepdims=True)
        weighted = centered
        scale = n - correction
    else:
        total = _ops.sum(weights)
        weighted = x * weights
        centered = x - _ops.sum(weighted, axis=1, keepdims=True) / _of_precision(total, weighted)
        weighted = centered * weights
        if aweights is None:
            scale = total - correction
        else:
            scale = total - correction * _ops.sum(weights * aweights) / total
    product = _ops.matmul(
        centered,
        _ops.conj(weighted).mT if weighted.dtype.kind == "complex floating" else weighted.mT,
    )
    if isinstance(scale, Tensor):
        result = product / _of_precision(_ops.maximum(scale, 0), product)
    else:
        result = product / max(scale, 0)
    # One variable gives a 0-d result, as PyTorch's (a (1, 3) input too, not (1, 1)).
    return result[0, 0] if x.shape[0] == 1 else result


def _of_precision(scalar: Tensor, like: Tensor) -> Tensor:
    """A 0-d floating ``scalar`` in ``like``'s floating precision: PyTorch's 0-d tensors do
    not promote an operation with a tensor of the same kind (an integer one promotes no
    floating dtype: it is left as it is)."""
    if scalar.dtype.kind != "real floating" or not _dtypes.is_differentiable(like.dtype):
        return scalar
    target = like.dtype.to_real()
    return scalar if scalar.dtype == target else _ops.astype(scalar, target)


def corrcoef(input: Tensor) -> Tensor:
    """Return the Pearson correlation coefficients of the variables in the rows of ``input``."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = _ops.sqrt(
        _ops.diagonal(c) if c.dtype.kind != "complex floating" else _ops.real(_ops.diagonal(c))
    )
    result = c / std[:, None] / std[None, :]
    if result.dtype.kind == "real floating":
        result = _ops.clip(result, -1.0, 1.0)
    return result


def _check_finite_range(function: str, low: float, high: float, remedy: str) -> None:
    """Refuse a binning range with an infinity or a NaN (given, or the data's own)."""
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ArgumentError(
            f"{function}(): the range [{low}, {high}] is not finite; give {remedy} (the "
            "data's own range has an infinity or a NaN)"
        )


@takes_out
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """Count the elements in ``bins`` equal bins between ``min`` and ``max`` (the data's range
    if they are equal, as in PyTorch); elements outside are left out. Not differentiable.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.histc(plugrad.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3)
    tensor([0., 2., 1., 0.])
    """
    _tensor("histc", input)
    if input.dtype.kind != "real floating":
        raise DtypeError(f"histc() takes a real floating tensor, got {input.dtype}")
    if isinstance(bins, bool) or not isinstance(bins, numbers.Integral) or bins <= 0:
        raise ArgumentError(f"histc(): bins must be an int > 0, got {bins!r}")
    bins = int(bins)
    x = _ops.reshape(input.detach(), (-1,))
    low, high = float(min), float(max)
    if low == high and x.shape[0]:
        low, high = float(_ops.min(x)), float(_ops.max(x))
    _check_finite_range("histc", low, high, "finite min and max")
    if low > high:
        raise ArgumentError(f"histc(): min must not exceed max, got {min} and {max}")
    if low == high:
        low, high = low - 1, high + 1
    # PyTorch's bin of x: floor((x - min) * bins / (max - min)), in this order and in the
    # input's dtype (the last bin closed). An element on an edge then falls where PyTorch
    # counts it; bins / (max - min) first, in float64, moved one in three edges.
    lowest = _creation.full((), low, dtype=input.dtype, device=input.device)
    highest = _creation.full((), high, dtype=input.dtype, device=input.device)
    inside = _ops.logical_and(x >= lowest, x <= highest)  # NaN is in no bin
    if low == high or bool(highest == lowest):
        # +-1 was lost to rounding (1e20 - 1 == 1e20): each value is the middle of the range
        position = _creation.full(x.shape, bins // 2, dtype=input.dtype, device=input.device)
    else:
        position = _ops.floor((_ops.where(inside, x, lowest) - lowest) * bins / (highest - lowest))
    index = _ops.astype(_ops.clip(position, 0, bins - 1), input.device.default_int_dtype)
    counts = _creation.zeros((bins,), dtype=input.dtype, device=input.device)
    return counts.scatter_add(0, index, _ops.astype(inside, input.dtype))


def _bin_edges(function: str, bins: Any, column: Tensor, span: Any) -> Tensor:
    """The edges of one dimension: given as a tensor, or ``bins`` equal ones over ``span``
    (the data's range by default; a range of one value widened by 0.5 each way)."""
    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.shape[0] < 2:
            raise ShapeError(f"{function}(): bin edges must be a 1-D tensor of at least 2 values")
        with _no_grad():
            increasing = bool(_ops.all(bins[1:] >= bins[:-1]))
        if not increasing:
            raise ArgumentError(f"{function}(): bin edges must be increasing")
        return _ops.astype(bins.detach(), column.dtype)
    if isinstance(bins, bool) or not isinstance(bins, numbers.Integral) or bins <= 0:
        raise ArgumentError(
            f"{function}(): bins must be an int > 0 or a tensor of edges, got {bins!r}"
        )
    if span is not None:
        low, high = (float(v) for v in span)
    elif column.shape[0]:
        low, high = float(_ops.min(column)), float(_ops.max(column))
    else:
        low, high = 0.0, 1.0
    _check_finite_range(function, low, high, "a finite range")
    if low > high:
        raise ArgumentError(f"{function}(): the range's minimum {low} exceeds its maximum {high}")
    if low == high:
        low, high = low - 0.5, high + 0.5
    edges = _equal_edges(low, high, int(bins), column.dtype)
    return _creation.asarray(edges, dtype=column.dtype, device=column.device)


_ROUNDING_FORMATS = {"float16": "e", "float32": "f"}


def _equal_edges(low: float, high: float, bins: int, dtype: _dtypes.DType) -> list[float]:
    """``bins + 1`` equal-width edges, each exactly as PyTorch's ``linspace`` computes it: in
    ``dtype``, from the nearer end, ``start + i * step`` rounded once (a fused multiply-add),
    so that an element on an edge falls in the bin PyTorch puts it in."""
    code = _ROUNDING_FORMATS.get(dtype.name)

    def rounded(value: float) -> float:
        return value if code is None else struct.unpack(code, struct.pack(code, value))[0]

    low, high = rounded(low), rounded(high)
    step = fractions.Fraction(rounded(rounded(high - low) / bins))
    half = (bins + 1) // 2
    from_low = [fractions.Fraction(low) + step * i for i in range(half)]
    from_high = [fractions.Fraction(high) - step * (bins - i) for i in range(half, bins + 1)]
    return [rounded(float(value)) for value in from_low + from_high]


def _histogram(
    function: str, points: Tensor, bins: Any, span: Any, weight: Any, density: bool
) -> tuple[Tensor, list[Tensor]]:
    """Counts of the rows of ``points`` (N, D) in the D-dimensional grid of bins."""
    if points.dtype.kind != "real floating":
        raise DtypeError(f"{function}() takes a real floating tensor, got {points.dtype}")
    checked_bool(f"{function}(): density", density)
    count, dims = points.shape
    per_dim = list(bins) if isinstance(bins, (list, tuple)) else [bins] * dims
    if len(per_dim) != dims:
        raise ArgumentError(f"{function}(): {len(per_dim)} bins given for {dims} dimensions")
    spans: list[Any] = [None] * dims
    if span is not None:
        values = [float(v) for v in span]
        if len(values) != 2 * dims:
            raise ArgumentError(
                f"{function}(): range takes a minimum and a maximum per dimension ({2 * dims} "
                f"numbers), got {len(values)}"
            )
        spans = [values[2 * d : 2 * d + 2] for d in range(dims)]
    x = points.detach()
    edges = [_bin_edges(function, per_dim[d], x[:, d], spans[d]) for d in range(dims)]
    inside = _creation.ones((count,), dtype=_dtypes.bool, device=x.device)
    flat = _creation.zeros((count,), dtype=x.device.default_int_dtype, device=x.device)
    sizes = [int(e.shape[0]) - 1 for e in edges]
    for d in range(dims):
        column, edge = x[:, d], edges[d]
        inside = inside & (column >= edge[0]) & (column <= edge[-1])  # NaN is in no bin
        position = _ops.searchsorted(edge, _ops.where(inside, column, edge[0]), side="right") - 1
        position = _ops.clip(position, 0, sizes[d] - 1)  # the last bin holds its right edge
        flat = flat * sizes[d] + _ops.astype(position, flat.dtype)
    if weight is None:
        amounts = _ops.astype(inside, x.dtype)
    else:
        if not isinstance(weight, Tensor) or tuple(weight.shape) != (count,):
            raise ShapeError(
                f"{function}(): weight must be a tensor of one value per point ({count}), got "
                f"{getattr(weight, 'shape', type(weight).__name__)}"
            )
        amounts = _ops.where(inside, _ops.astype(weight.detach(), x.dtype), 0.0)
    total = math.prod(sizes)
    counts = _creation.zeros((total,), dtype=x.dtype, device=x.device).scatter_add(0, flat, amounts)
    counts = _ops.reshape(counts, tuple(sizes))
    if density:
        volume = None
        for d, edge in enumerate(edges):
            width = _ops.reshape(
                edge[1:] - edge[:-1], tuple(-1 if k == d else 1 for k in range(dims))
            )
            volume = width if volume is None else volume * width
        counts = counts / (_ops.sum(counts) * volume)
    return counts, edges


def histogram(
    input: Tensor,
    bins: int | Tensor = 100,
    *,
    range: tuple[float, float] | None = None,
    weight: Tensor | None = None,
    density: bool = False,
) -> return_types.histogram:
    """Count the elements of ``input`` in bins: ``bins`` equal ones over ``range`` (the
    data's by default) or between the edges of a 1-D tensor ``bins``.

    Each bin holds its left edge, the last also its right one; elements outside
    (and NaN) are left out. ``weight`` counts each element by its weight;
    ``density`` divides by the total and the bin widths (an integral of 1).
    Not differentiable, as PyTorch's.

    Examples
    --------
    >>> import plugrad
    >>> hist, edges = plugrad.histogram(plugrad.tensor([1.0, 2.0, 1.0, 4.0]), bins=4, range=(0, 3))
    >>> hist, edges
    (tensor([0., 2., 1., 0.]), tensor([0.0000, 0.7500, 1.5000, 2.2500, 3.0000]))
    """
    x = _tensor("histogram", input)
    span = None if range is None else tuple(range)
    if weight is not None and isinstance(weight, Tensor) and weight.shape != x.shape:
        raise ShapeError(
            f"histogram(): weight must have the input's shape {tuple(x.shape)}, got "
            f"{tuple(weight.shape)}"
        )
    flat_weight = None if weight is None else _ops.reshape(weight, (-1,))
    counts, edges = _histogram(
        "histogram", _ops.reshape(x, (-1, 1)), [bins], span, flat_weight, density
    )
    return return_types.histogram(counts, edges[0])


def histogramdd(
    input: Tensor,
    bins: int | list[int] | list[Tensor] = 10,
    *,
    range: list[float] | None = None,
    weight: Tensor | None = None,
    density: bool = False,
) -> return_types.histogramdd:
    """Count the points of ``input`` (its last axis their coordinates) in a grid of bins.

    ``bins``: one count for every dimension, one per dimension, or one tensor of
    edges per dimension; ``range``: a minimum and a maximum per dimension, flat
    (``[x0, x1, y0, y1]``). Otherwise as :func:`histogram`.

    Examples
    --------
    >>> import plugrad
    >>> points = plugrad.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 0.5]])
    >>> plugrad.histogramdd(points, bins=[2, 2]).hist
    tensor([[1., 0.],
            [0., 2.]])
    """
    x = _tensor("histogramdd", input)
    if x.ndim < 1:
        raise ShapeError("histogramdd() takes points along the last axis; got a 0-d tensor")
    dims = x.shape[-1]
    flat_weight = None
    if weight is not None:
        if not isinstance(weight, Tensor) or tuple(weight.shape) != tuple(x.shape[:-1]):
            raise ShapeError(
                f"histogramdd(): weight must have one value per point, shape "
                f"{tuple(x.shape[:-1])}, got {getattr(weight, 'shape', type(weight).__name__)}"
            )
        flat_weight = _ops.reshape(weight, (-1,))
    counts, edges = _histogram(
        "histogramdd", _ops.reshape(x, (-1, dims)), bins, range, flat_weight, density
    )
    return return_types.histogramdd(counts, tuple(edges))


# -- shapes ---------------------------------------------------------------------------


def _sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """Sum this tensor down to ``size``, which it must broadcast to (as its gradient would be)."""
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    try:
        shape = tuple(map(operator.index, shape))  # a bool is 1, as PyTorch reads it
        broadcast_shapes(tuple(shape), tuple(self.shape))
        fits = len(shape) <= self.ndim and broadcast_shapes(
            tuple(shape), tuple(self.shape)
        ) == tuple(self.shape)
    except Exception:
        fits = False
    if not fits:
        raise ShapeError(
            f"sum_to_size(): size {tuple(shape)} is not expandable to the tensor's {self.shape}"
        )
    lead = self.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and self.shape[lead + i] != 1
    )
    # The method's sum, PyTorch's (uint8 sums to int64; the standard's function keeps uint64).
    result = self.sum(dim=axes, keepdim=True) if axes else self
    return _ops.reshape(result, tuple(shape))


def _split_hvd(function: str, dim: int, least: int) -> Any:
    def split(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
        _tensor(function, input)
        if input.ndim < least:
            raise ShapeError(
                f"{function}() takes a tensor of at least {least} dims, got shape {input.shape}"
            )
        axis = 0 if input.ndim == 1 and function == "hsplit" else dim
        sections = as_int(indices_or_sections)  # (a NumPy integer, a 0-d tensor: a count)
        if type(sections) is int:
            if sections <= 0:  # (0 was a ZeroDivisionError from the test below)
                raise InvalidArgumentError(
                    f"{function}(): the number of sections must be positive, got {sections}; "
                    "give a count that divides the dim, or a list of indices to split at"
                )
            if input.shape[axis] % sections:
                raise ShapeError(
                    f"{function}(): dim {axis} of size {input.shape[axis]} does not divide into "
                    f"{sections} equal parts"
                )
        try:
            return tuple(input.tensor_split(sections, axis))
        except PlugradError as error:
            name_the_call(error, function)  # (it named tensor_split)
            raise

    split.__name__ = split.__qualname__ = function
    split.__doc__ = f"Split along dim {dim} (:meth:`Tensor.tensor_split`); sections must divide it."
    return split


hsplit = _split_hvd("hsplit", 1, 1)
vsplit = _split_hvd("vsplit", 0, 2)
dsplit = _split_hvd("dsplit", 2, 3)


# -- element-wise ---------------------------------------------------------------------

_LN2 = math.log(2.0)


def _floating_operands(
    function: str, input: Tensor, other: Any
) -> tuple[Tensor, Tensor, _dtypes.DType]:
    """``input`` and ``other`` in the dtype they compute in, and the result's dtype.

    The result's is their promoted dtype, or the default float one for integers;
    ``float16`` results are computed in ``float32`` (as PyTorch computes them),
    whose products and logarithms keep their digits.
    """
    _tensor(function, input)
    if not isinstance(other, Tensor):
        other = _creation.asarray(other, device=input.device)
    result = _result_type(input, other)
    if result.kind not in ("real floating", "complex floating"):
        result = _dtypes.default_float_dtype
    inner = _dtypes.float32 if result is _dtypes.float16 else result
    return _ops.astype(input, inner), _ops.astype(other, inner), result


@takes_out
def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2**input + 2**other)`` element-wise, without overflow."""
    x, y, result = _floating_operands("logaddexp2", input, other)
    return _ops.astype(_ops.logaddexp(x * _LN2, y * _LN2) / _LN2, result)


@takes_out
def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2**other`` element-wise (a floating result)."""
    complex_exponent = isinstance(other, Tensor) and other.dtype.kind == "complex floating"
    x, exponent, result = _floating_operands("ldexp", input, other)
    if complex_exponent or isinstance(other, complex):
        return _ops.astype(x * _ops.pow(2.0, exponent), result)
    if exponent.dtype.kind == "complex floating":  # a real exponent of a complex input
        exponent = _ops.real(exponent)
    # 2**exponent in three factors: one power of 2 overflows (2**150 in float32, 2**1024 in
    # float64) or underflows where x times it is finite (ldexp(1e-30, 150) is 1.4e15).
    # Beyond three times the largest power (2**127 in float32) every finite x saturates: an
    # infinite exponent is cut there, not left to give inf - inf = nan between the factors.
    limit = 381.0 if exponent.dtype == _dtypes.float32 else 3069.0
    exponent = _ops.clip(exponent, -limit, limit)
    first = _ops.floor(exponent / 3.0)
    second = _ops.floor((exponent - first) / 2.0)
    third = exponent - first - second
    for part in (first, second, third):
        x = x * _ops.pow(2.0, part)
    return _ops.astype(x, result)


def frexp(input: Tensor) -> return_types.frexp:
    """Each element as ``mantissa * 2**exponent``, ``0.5 <= |mantissa| < 1`` (int32 exponents).

    Zeros, infinities and NaN are their own mantissa with exponent 0, as
    PyTorch's. Differentiable in the mantissa (``2**-exponent``).

    Examples
    --------
    >>> import plugrad
    >>> mantissa, exponent = plugrad.frexp(plugrad.tensor([3.0, -5.5, 0.0]))
    >>> mantissa, exponent
    (tensor([ 0.7500, -0.6875,  0.0000]), tensor([2, 3, 0], dtype=plugrad.int32))
    """
    x = _tensor("frexp", input)
    if x.dtype.kind != "real floating":
        raise DtypeError(f"frexp() takes a real floating tensor, got {x.dtype}")
    with _no_grad():
        value = x.detach()
        ordinary = _ops.isfinite(value) & (value != 0)
        magnitude = _ops.where(ordinary, _ops.abs(value), 1.0)
        exponent = _ops.floor(_ops.log2(magnitude)) + 1
        # log2 may round across a power of two: one step fixes the exponent.
        scaled = _ops.abs(ldexp(magnitude, -exponent))
        exponent = _ops.where(scaled >= 1, exponent + 1, exponent)
        exponent = _ops.where(scaled < 0.5, exponent - 1, exponent)
        exponent = _ops.where(ordinary, exponent, 0.0)
    mantissa = _ops.where(ordinary, ldexp(x, -exponent), x)
    return return_types.frexp(mantissa, _ops.astype(exponent, _dtypes.int32))


@takes_out
def angle(input: Tensor) -> Tensor:
    """The argument of each complex element; for real ones pi where negative, else 0 (NaN stays)."""
    _tensor("angle", input)
    if input.dtype.kind == "complex floating":
        return _ops.atan2(_ops.imag(input), _ops.real(input))
    x = (
        input
        if input.dtype.kind == "real floating"
        else _ops.astype(input, _dtypes.default_float_dtype)
    )
    pi = _creation.full_like(x, math.pi)  # in x's dtype: where() of two numbers is float32
    # x * 0 is NaN where x is: the NaN stays, with a gradient of 0 as everywhere else.
    return _ops.where(_ops.isnan(x), x * 0, _ops.where(x < 0, pi, 0.0))


@takes_out
def isposinf(input: Tensor) -> Tensor:
    """Where ``input`` is ``+inf`` (a bool tensor)."""
    return _ops.logical_and(_ops.isinf(_tensor("isposinf", input)), input > 0)


@takes_out
def isneginf(input: Tensor) -> Tensor:
    """Where ``input`` is ``-inf`` (a bool tensor)."""
    return _ops.logical_and(_ops.isinf(_tensor("isneginf", input)), input < 0)


def isreal(input: Tensor) -> Tensor:
    """Where ``input`` is real: its imaginary part is 0 (everywhere for a real dtype)."""
    _tensor("isreal", input)
    if input.dtype.kind == "complex floating":
        return _ops.equal(_ops.imag(input), 0)
    return _creation.ones_like(input, dtype=_dtypes.bool)


def argwhere(input: Tensor) -> Tensor:
    """The indices of the non-zero elements, one row each: ``(count, input.ndim)`` (``int64``).

    PyTorch's ``argwhere``, the same as ``input.nonzero()``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.argwhere(plugrad.tensor([[0, 1], [2, 0]]))
    tensor([[0, 1],
            [1, 0]])
    """
    return _tensor("argwhere", input).nonzero()


def _take(self: Tensor, index: Tensor) -> Tensor:
    """PyTorch's ``x.take(index)``: the elements of the flattened tensor at ``index``, in its shape.

    Differentiable in ``x``; the standard's ``plugrad.take(x, indices, axis=)`` takes along an axis.
    """
    _tensor("take", index, "index")
    flat = _ops.take(_ops.reshape(self, (-1,)), _ops.reshape(index, (-1,)), axis=0)
    return _ops.reshape(flat, tuple(index.shape))


def _positive(self: Tensor) -> Tensor:
    """PyTorch's ``x.positive()``: ``x`` itself (``plugrad.positive``, the standard's, copies).

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, -2.0])
    >>> x.positive() is x
    True
    """
    if self.dtype.kind == "bool":
        raise DtypeError("positive() takes no bool tensor (as PyTorch's); use the tensor itself")
    return self


def _conj(self: Tensor) -> Tensor:
    """PyTorch's ``x.conj()``: the complex conjugate, and a real tensor itself. For a complex
    tensor it is a copy where PyTorch's is a view, so in-place changes of it are refused.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.tensor([1 + 2j]).conj()
    tensor([1.-2.j])
    >>> x = plugrad.tensor([1.0])
    >>> x.conj() is x
    True
    """
    if self.dtype.kind == "complex floating":
        return mark_copy_of_view(_ops.conj(self), "x.conj()", self)
    return self


# -- Python callables over the elements -----------------------------------------------

#: DLPack's device types of host memory: plain and page-locked.
_HOST_MEMORY = (1, 3)


def _refuse_for_callable(method: str, function: Any, tensors: tuple[Tensor, ...]) -> None:
    """PyTorch's refusals of ``apply_``/``map_``: a tensor that requires grad (the callable's
    results have no gradient), one in accelerator memory; and a callable that is none."""
    if not callable(function):
        raise ArgumentError(
            f"{method}() takes a callable (a function of the elements), got "
            f"{type(function).__name__}"
        )
    for tensor in tensors:
        if tensor.requires_grad:
            raise BackwardError(
                f"{method}() on a tensor that requires grad (shape {tensor.shape}): the "
                "callable's results cannot be differentiated, as in PyTorch. Call it on "
                "x.detach() (it shares the memory), or make a new tensor. Nothing was changed."
            )
        device = tensor._device
        where = device.backend.dlpack_device(device.native)
        if where is not None and where[0] not in _HOST_MEMORY:
            raise ArgumentError(
                f"{method}() runs a Python callable over the elements of tensors in host "
                f"memory only, as PyTorch's (CPU tensors); this one is on {device}. Move it "
                "with x.cpu(), or use the tensor's own ops. Nothing was changed."
            )


def _has_method(value: Any, *names: str) -> bool:
    return any(hasattr(type(value), name) for name in names)


_REAL = ("__float__", "__index__")  # what Python's float() reads, strings aside
_COMPLEX = ("__complex__", *_REAL)


def _element_of(method: str, value: Any, dtype: _dtypes.DType) -> Any:
    """A result of the callable as a Python element of ``dtype``, converted as PyTorch's
    ``apply_`` converts: a float into an integer truncated, an integer through
    ``__index__`` (NumPy's float32, a Fraction refused), a real through ``__float__``."""
    kind = dtype.kind
    number: Any = None
    try:
        if kind == "bool":
            if isinstance(value, float | complex) or _is_numpy_bool(value):
                return bool(value)
            return operator.index(value) != 0
        if kind in ("signed integer", "unsigned integer"):
            number = value if isinstance(value, float) else operator.index(value)
        elif kind == "real floating" and _has_method(value, *_REAL):
            return float(value)  # (beyond the dtype: inf, as PyTorch's)
        elif kind == "complex floating" and _has_method(value, *_COMPLEX):
            return complex(value)
    except OverflowError:  # an int beyond every float
        raise _out_of_range(method, value, dtype) from None
    except TypeError:  # no __index__ (NumPy's float32, a Fraction, a string)
        pass
    if number is None:
        raise DtypeError(
            f"{method}(): the callable returned {value!r:.60} ({type(value).__name__}), which "
            f"is no element of a {dtype.name} tensor; return a number of its kind (a bool or "
            "an int for bool and integer tensors, a real for floating ones, a complex for "
            "complex ones)"
        )
    if isinstance(number, float):
        if not math.isfinite(number):
            raise _out_of_range(method, value, dtype)
        number = int(number)  # toward zero, as C's conversion
    info = iinfo(dtype)
    if not info.min <= number <= info.max:
        raise _out_of_range(method, value, dtype)
    return number


def _is_numpy_bool(value: Any) -> bool:
    """Whether ``value`` is NumPy's bool scalar (no ``__index__``; PyTorch takes it for bool)."""
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")


def _out_of_range(method: str, value: Any, dtype: _dtypes.DType) -> ScalarRangeError:
    # (PyTorch wraps -255..-1 around into uint8; plugrad refuses them, as everywhere)
    return ScalarRangeError(
        f"{method}(): the callable returned {value!r:.60}, beyond the range of {dtype.name}; "
        "return values in it, or convert the tensor to a wider dtype first. Nothing was "
        "changed."
    )


def _write_elements(self: Tensor, method: str, values: list[Any]) -> Tensor:
    """Write ``values`` (the callable's results for the flattened elements) into ``self`` in
    place, each converted to its dtype first: a refused one leaves ``self`` as it was."""
    dtype, device = self.dtype, self._device
    converted = [_element_of(method, value, dtype) for value in values]
    quiet = device.backend.floating_point_warnings_off()  # (a float beyond float16: inf)
    with quiet if quiet is not None else contextlib.nullcontext():
        new = _creation.tensor(converted, dtype=dtype, device=device)
    return apply_inplace(self, filled_with, _ops.reshape(new, self.shape), name=f"{method}()")


def _apply_(self: Tensor, function: Callable[[Any], Any], /) -> Tensor:
    """Replace each element ``e`` with ``function(e)``, in place; return ``self``.

    PyTorch's ``apply_``: ``function`` gets each element as a Python number (a
    bool, an int, a float or a complex, by the dtype) and returns one, stored as
    PyTorch stores it (a float truncated into an integer tensor, an integer
    beyond the dtype refused). Slow, one Python call per element: for code
    ported from PyTorch, not a way to compute.

    Parameters
    ----------
    function : callable
        Takes one number and returns one.

    Returns
    -------
    Tensor
        ``self``, changed.

    Raises
    ------
    BackwardError
        If ``self`` requires grad (as in PyTorch, also under ``no_grad``): call it on
        ``x.detach()``.
    ArgumentError
        If ``function`` is not callable, or ``self`` is in accelerator memory.
    DtypeError
        If a result is no number of the tensor's kind; :class:`ScalarRangeError` if
        it is beyond an integer dtype's range.

    Notes
    -----
    All results are computed before anything is written, so a callable that
    raises (its own exception, unchanged) or a refused result leaves ``self``
    as it was, where PyTorch has written the elements before it. The version
    counter goes up, so a backward pass that saved the old values raises
    :class:`~plugrad.errors.InPlaceModificationError` (PyTorch's stays put).
    Works on every backend whose memory is the host's.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1, 2, 3])
    >>> x.apply_(lambda e: e * 2.7)
    tensor([2, 5, 8])
    """
    _refuse_for_callable("apply_", function, (self,))
    values = [function(element) for element in _ops.reshape(self, (-1,)).tolist()]
    return _write_elements(self, "apply_", values)


def _map_(self: Tensor, other: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:
    """Replace each element ``e`` with ``callable(e, o)``, ``o`` the element of ``other``
    at its place, in place; return ``self``.

    PyTorch's ``map_``: ``other`` has ``self``'s dtype and broadcasts to its shape
    (not the other way: ``self`` keeps its shape). The elements are passed and
    the results stored as by :meth:`apply_`, whose notes hold here too.

    Parameters
    ----------
    other : Tensor
        Of ``self``'s dtype, broadcastable to its shape.
    callable : callable
        Takes two numbers and returns one.

    Returns
    -------
    Tensor
        ``self``, changed.

    Raises
    ------
    ArgumentError
        If ``other`` is not a Tensor, ``callable`` is not callable, or a tensor is in
        accelerator memory.
    BackwardError
        If ``self`` or ``other`` requires grad.
    DtypeError
        If ``other``'s dtype differs from ``self``'s, or a result is no number of it.
    ShapeError
        If ``other`` does not broadcast to ``self``'s shape.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> x.map_(plugrad.tensor([10.0, 20.0]), lambda a, b: a + b)
    tensor([[11., 22.],
            [13., 24.]])
    """
    _tensor("map_", other, "other")
    _refuse_for_callable("map_", callable, (self, other))
    if other.dtype != self.dtype:
        raise DtypeError(
            f"map_(): other is {other.dtype.name} but the tensor is {self.dtype.name}, as "
            f"PyTorch requires them to be the same; pass other.to({self.dtype.name})"
        )
    shape, given = self.shape, other.shape
    if len(given) > len(shape) or any(
        n not in (1, m) for n, m in zip(given[::-1], shape[::-1], strict=False)
    ):
        raise ShapeError(
            f"map_(): other of shape {given} does not broadcast to the tensor's shape {shape} "
            "(the tensor keeps its shape)"
        )
    elements = _ops.reshape(self, (-1,)).tolist()
    others = _ops.reshape(_ops.broadcast_to(other, shape), (-1,)).tolist()
    values = [callable(a, b) for a, b in zip(elements, others, strict=True)]
    return _write_elements(self, "map_", values)


# (PyTorch has no x.histogramdd(): a function only)
install_function_methods(**{name: globals()[name] for name in __all__ if name != "histogramdd"})
install_methods(
    addr_=_addr_,
    apply_=_apply_,
    map_=_map_,
    float_power_=_float_power_,
    ldexp_=lambda self, other: apply_inplace(self, ldexp, other, name="ldexp_"),
    index_put_=_index_put_,
    masked_scatter_=_masked_scatter_,
    # (of a clone: renorm saves its input, which copy_ then changes, and backward refused)
    renorm_=lambda self, p, dim, maxnorm: self.copy_(renorm(self.clone(), p, dim, maxnorm)),
    take=_take,
    put_=_put_,
    index_add_=_index_add_,
    index_copy_=_index_copy_,
    index_fill_=_index_fill_,
    index_reduce_=_index_reduce_,
    unfold=_unfold,
    positive=_positive,
    conj=_conj,
    fill_diagonal_=_fill_diagonal_,
    sum_to_size=_sum_to_size,
    split_with_sizes=lambda self, split_sizes, dim=0: tuple(self.split(list(split_sizes), dim)),
    is_signed=lambda self: (
        self.dtype.kind in ("signed integer", "real floating", "complex floating")
    ),
    itemsize=property(lambda self: self.dtype.itemsize, doc="Bytes per element."),
    nbytes=property(lambda self: self.dtype.itemsize * self.numel(), doc="Bytes of all elements."),
    is_cuda=property(lambda self: self.device.type == "cuda", doc="Whether on a CUDA GPU (CuPy)."),
    is_cpu=property(lambda self: self.device.type == "cpu", doc="Whether on the CPU (NumPy)."),
    get_device=lambda self: self.device.index if self.device.type == "cuda" else -1,
    # No backend of plugrad's pins host memory (page-locked memory speeds copies to a CUDA
    # device): pin_memory() gives a copy in ordinary memory, so code written for it runs.
    is_pinned=lambda self, device=None: False,
    pin_memory=lambda self, device=None: self.clone(),
    layout=property(lambda self: _strided, doc="``plugrad.strided``: every tensor is dense."),
    # PyTorch's kinds of tensor that plugrad has none of: checks written for them pass by
    **{
        flag: property(lambda self: False, doc=f"False: plugrad has no {kind} tensors.")
        for flag, kind in (
            ("is_sparse", "sparse"),
            ("is_quantized", "quantized"),
            ("is_meta", "meta"),
            ("is_mkldnn", "MKL-DNN"),
            ("is_nested", "nested"),
            ("is_mps", "MPS (Apple GPU)"),
        )
    },
)
