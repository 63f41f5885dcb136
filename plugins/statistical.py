"""Statistical functions of the Array API: reductions with gradients."""

from __future__ import annotations

from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op


def _reduced_axes(axis: int | tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else axis
    return tuple(a % ndim if ndim else a for a in axes)


def _expand_to_input(xp: Any, g: Any, shape: tuple[int, ...], axis: Any, keepdims: bool) -> Any:
    """Broadcast the gradient of a reduction back over the axes it reduced."""
    if not keepdims:
        axes = _reduced_axes(axis, len(shape))
        g = xp.reshape(g, tuple(1 if i in axes else n for i, n in enumerate(shape)))
    return xp.broadcast_to(g, shape)


def _count(shape: tuple[int, ...], axis: Any) -> int:
    count = 1
    for a in _reduced_axes(axis, len(shape)):
        count *= shape[a]
    return count


sum = op(
    "sum",
    lambda xp, x, /, *, axis=None, keepdims=False: xp.sum(x, axis=axis, keepdims=keepdims),
    saves=(),
    doc="""Sum of the elements over ``axis`` (all axes by default).

    Parameters
    ----------
    x : Tensor
    axis : int or tuple of int, optional
    keepdims : bool
        Keep reduced axes as size-1 dimensions.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> plugrad.sum(x)
    tensor(10.)
    >>> plugrad.sum(x, axis=0)
    tensor([4., 6.])
    """,
).vjp(
    lambda xp, g, ans, x, *, axis, keepdims: _expand_to_input(xp, g, x.shape, axis, keepdims),
)

mean = op(
    "mean",
    lambda xp, x, /, *, axis=None, keepdims=False: xp.mean(x, axis=axis, keepdims=keepdims),
    saves=(),
    doc="""Arithmetic mean over ``axis`` (all axes by default).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.mean(plugrad.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=1, keepdims=True)
    tensor([[1.5],
            [3.5]])
    """,
).vjp(
    lambda xp, g, ans, x, *, axis, keepdims: (
        _expand_to_input(xp, g, x.shape, axis, keepdims) / _count(x.shape, axis)
    ),
)


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [sum, mean]
