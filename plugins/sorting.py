"""Sorting functions of the Array API: ``sort`` has gradients, ``argsort`` does not."""

from __future__ import annotations

from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op
from plugrad.plugins.indexing import along_axis_key


def _sort_grad(
    xp: Any, g: Any, ans: Any, x: Any, *, axis: int, descending: bool, stable: bool
) -> Any:
    # Send each sorted position's gradient back to where its element came from.
    # NOTE: equal elements may be ordered either way; any order gives the same
    # values, and each tied element gets the gradient of one of the tied positions.
    order = xp.argsort(x, axis=axis, descending=descending, stable=True)
    key = along_axis_key(xp, order, axis, tuple(x.shape), tuple(x.shape))
    return xp.scatter_add(g, key=key, shape=x.shape)


sort = op(
    "sort",
    lambda xp, x, /, *, axis=-1, descending=False, stable=True: xp.sort(
        x, axis=axis, descending=descending, stable=stable
    ),
    saves=("x",),
    doc="""Sort along ``axis``, ascending unless ``descending=True``.

    The gradient of each sorted position flows back to the element that landed there.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([3.0, 1.0, 2.0], requires_grad=True)
    >>> y = plugrad.sort(x)
    >>> y
    tensor([1., 2., 3.], grad_fn=<SortBackward>)
    >>> (y * plugrad.tensor([1.0, 10.0, 100.0])).sum().backward()
    >>> x.grad
    tensor([100.,   1.,  10.])
    """,
).vjp(_sort_grad)

argsort = op(
    "argsort",
    lambda xp, x, /, *, axis=-1, descending=False, stable=True: xp.argsort(
        x, axis=axis, descending=descending, stable=stable
    ),
    methods="argsort",
    differentiable=False,
    doc="""Indices that sort ``x`` along ``axis`` (stable by default). No gradient.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.argsort(plugrad.tensor([3.0, 1.0, 2.0]), descending=True)
    tensor([0, 2, 1])
    """,
)


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [sort, argsort]
