"""Manipulation functions of the Array API: shapes and axes."""

from __future__ import annotations

from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op


def _back_to_input_shape(xp: Any, g: Any, ans: Any, x: Any, *args: Any, **params: Any) -> Any:
    """Backward of ops that only change the shape, never the order of elements."""
    return xp.reshape(g, x.shape)


def _inverse_permutation(axes: tuple[int, ...]) -> tuple[int, ...]:
    ndim = len(axes)
    inverse = [0] * ndim
    for position, axis in enumerate(axes):
        inverse[axis % ndim] = position
    return tuple(inverse)


reshape = op(
    "reshape",
    lambda xp, x, /, shape, *, copy=None: xp.reshape(x, shape, copy=copy),
    saves=(),
    view=True,
    doc="""Give the elements of ``x`` a new ``shape`` (one entry may be -1).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.reshape(plugrad.arange(6), (2, 3))
    tensor([[0, 1, 2],
            [3, 4, 5]])
    """,
).vjp(_back_to_input_shape)

permute_dims = op(
    "permute_dims",
    lambda xp, x, /, axes: xp.permute_dims(x, axes),
    saves=(),
    view=True,
    grad_fn_name="Permute",
    doc="""Reorder the axes of ``x``: axis ``i`` of the result is axis ``axes[i]`` of ``x``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.permute_dims(plugrad.zeros((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
    """,
).vjp(lambda xp, g, ans, x, axes: xp.permute_dims(g, _inverse_permutation(axes)))

expand_dims = op(
    "expand_dims",
    lambda xp, x, /, *, axis=0: xp.expand_dims(x, axis=axis),
    saves=(),
    view=True,
    doc="""Insert a size-1 axis at position ``axis``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.expand_dims(plugrad.zeros((2, 3)), axis=1).shape
    (2, 1, 3)
    """,
).vjp(_back_to_input_shape)

squeeze = op(
    "squeeze",
    lambda xp, x, /, axis: xp.squeeze(x, axis=axis),
    saves=(),
    view=True,
    doc="""Remove the size-1 axes named by ``axis``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.squeeze(plugrad.zeros((2, 1, 3)), axis=1).shape
    (2, 3)
    """,
).vjp(_back_to_input_shape)

broadcast_to = op(
    "broadcast_to",
    lambda xp, x, /, shape: xp.broadcast_to(x, shape),
    broadcasting=True,
    saves=(),
    view=True,
    doc="""Broadcast ``x`` to ``shape``; the gradient is summed back over the broadcast axes.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.broadcast_to(plugrad.tensor([1.0, 2.0]), (2, 2))
    tensor([[1., 2.],
            [1., 2.]])
    """,
).vjp(lambda xp, g, ans, x, shape: g)


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [reshape, permute_dims, expand_dims, squeeze, broadcast_to]
