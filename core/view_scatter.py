"""A copy of a tensor with one of its views replaced: PyTorch's ``*_scatter`` functions.

:func:`select_scatter`, :func:`slice_scatter` and :func:`diagonal_scatter` (also
Tensor methods) are the out-of-place forms of writing into ``x.select(dim, i)``,
``x[..., start:end:step]`` and ``x.diagonal(...)``: the result is a new tensor,
``input`` is left as it was, and both ``input`` and ``src`` receive gradients
(``src`` the gradient of the part it fills, ``input`` the rest). ``src`` must have
the view's shape exactly (it is not broadcast) and is converted to ``input``'s
dtype as :meth:`Tensor.copy_` converts.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from . import creation as _creation
from . import ops as _ops
from .errors import ArgumentError, AxisError, InvalidArgumentError, ShapeError
from .tensor import Tensor, install_function_methods

__all__ = ["diagonal_scatter", "select_scatter", "slice_scatter"]


def _tensor(function: str, name: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise ArgumentError(f"{function}(): {name} must be a Tensor, got {type(value).__name__}")
    return value


def _integer(function: str, name: str, value: Any) -> int:
    if isinstance(value, bool):
        raise ArgumentError(f"{function}(): {name} must be an int, got bool")
    try:
        return operator.index(value)
    except TypeError:
        raise ArgumentError(
            f"{function}(): {name} must be an int, got {type(value).__name__}"
        ) from None


def _scattered(
    function: str, input: Any, src: Any, view: Callable[[Tensor], Tensor], what: str
) -> Tensor:
    """A copy of ``input`` whose ``view`` holds ``src``."""
    input = _tensor(function, "input", input)
    src = _tensor(function, "src", src)
    result = input.clone()
    region = view(result)  # (raises, naming the op, for an axis or index out of range)
    _check_shape(function, src, region, what)
    region.copy_(src)
    return result


def _check_shape(function: str, src: Tensor, region: Tensor, what: str) -> None:
    if tuple(region.shape) != tuple(src.shape):
        raise ShapeError(
            f"{function}(): src has shape {tuple(src.shape)}, but {what} of input it replaces "
            f"has shape {tuple(region.shape)}; src must have that shape exactly (it is not "
            "broadcast)"
        )


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """Return a copy of ``input`` whose ``select(dim, index)`` is ``src``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.select_scatter(plugrad.zeros(2, 3), plugrad.ones(3), 0, 1)
    tensor([[0., 0., 0.],
            [1., 1., 1.]])
    """
    dim = _integer("select_scatter", "dim", dim)
    index = _integer("select_scatter", "index", index)
    return _scattered(
        "select_scatter", input, src, lambda x: x.select(dim, index), f"select({dim}, {index})"
    )


def slice_scatter(
    input: Tensor,
    src: Tensor,
    dim: int = 0,
    start: int | None = None,
    end: int | None = None,
    step: int = 1,
) -> Tensor:
    """Return a copy of ``input`` whose slice ``start:end:step`` along ``dim`` is ``src``.

    ``start`` and ``end`` are read as Python's slices read them (negative from
    the end, clipped to the axis); ``step`` must be positive.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.slice_scatter(plugrad.zeros(2, 4), plugrad.ones(2, 2), 1, step=2)
    tensor([[1., 0., 1., 0.],
            [1., 0., 1., 0.]])
    """
    dim = _integer("slice_scatter", "dim", dim)
    start = None if start is None else _integer("slice_scatter", "start", start)
    end = None if end is None else _integer("slice_scatter", "end", end)
    step = _integer("slice_scatter", "step", step)
    if step <= 0:
        raise InvalidArgumentError(f"slice_scatter(): step must be positive, got {step}")
    ndim = _tensor("slice_scatter", "input", input).ndim
    if not -ndim <= dim < ndim:
        raise AxisError(
            f"slice_scatter(): dim {dim} is out of range for a tensor of {ndim} dimensions "
            f"(valid: {-ndim} to {ndim - 1})"
        )
    key = (slice(None),) * (dim % ndim) + (slice(start, end, step),)
    return _scattered(
        "slice_scatter",
        input,
        src,
        lambda x: x[key],
        f"the slice {start}:{end}:{step} of axis {dim}",
    )


def diagonal_scatter(
    input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
) -> Tensor:
    """Return a copy of ``input`` whose ``diagonal(offset, dim1, dim2)`` is ``src``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.diagonal_scatter(plugrad.zeros(2, 3), plugrad.ones(2), 1)
    tensor([[0., 1., 0.],
            [0., 0., 1.]])
    """
    function = "diagonal_scatter"
    input, src = _tensor(function, "input", input), _tensor(function, "src", src)
    offset = _integer(function, "offset", offset)
    dim1, dim2 = _integer(function, "dim1", dim1), _integer(function, "dim2", dim2)
    diagonal = input.diagonal(offset, dim1, dim2)  # (raises for axes out of range)
    _check_shape(function, src, diagonal, f"diagonal({offset}, {dim1}, {dim2})")
    if diagonal.shape[-1] == 0:
        return input.clone()
    # Not written through a diagonal view: some backends' diagonals are read-only. The
    # matrices' axes go last; each element of the diagonal is picked out by a mask.
    axes = (dim1 % input.ndim, dim2 % input.ndim)
    matrices = _ops.moveaxis(input, axes, (-2, -1))
    rows, columns = matrices.shape[-2:]
    row = _creation.arange(rows, device=input.device)[:, None]
    column = _creation.arange(columns, device=input.device)[None, :]
    on_diagonal = column - row == offset
    # Along each row, the element of src its diagonal element is (clipped off it).
    position = _ops.clip(row - max(-offset, 0), 0, diagonal.shape[-1] - 1) + column * 0
    values = _creation.empty_like(src, dtype=input.dtype).copy_(src)  # (copy_'s conversion)
    filled = _ops.where(on_diagonal, values[..., position], matrices)
    return _ops.moveaxis(filled, (-2, -1), axes)


install_function_methods(
    select_scatter=select_scatter, slice_scatter=slice_scatter, diagonal_scatter=diagonal_scatter
)
