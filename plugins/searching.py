"""Searching functions of the Array API: ``where`` has gradients, index searches do not."""

from __future__ import annotations

from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op
from plugrad.plugins._rules import device_of

where = op(
    "where",
    lambda xp, condition, x1, x2, /: xp.where(condition, x1, x2),
    broadcasting=True,
    saves=("condition",),
    doc="""Choose element-wise from ``x1`` where ``condition`` is true, else from ``x2``.

    The gradient flows to whichever input was chosen; ``condition`` has none.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([-1.0, 2.0])
    >>> plugrad.where(x > 0, x, 0.0)
    tensor([0., 2.])
    """,
).vjp(
    None,
    lambda xp, g, ans, condition, x1, x2: xp.where(condition, g, 0.0),
    lambda xp, g, ans, condition, x1, x2: xp.where(condition, 0.0, g),
)


argmax = op(
    "argmax",
    lambda xp, x, /, *, axis=None, keepdims=False: xp.argmax(x, axis=axis, keepdims=keepdims),
    methods="argmax",
    differentiable=False,
    doc="""Index of the (first) maximum along ``axis`` (of the flattened tensor by default).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.argmax(plugrad.tensor([[1.0, 5.0], [7.0, 2.0]]), axis=1)
    tensor([1, 0])
    """,
)

argmin = op(
    "argmin",
    lambda xp, x, /, *, axis=None, keepdims=False: xp.argmin(x, axis=axis, keepdims=keepdims),
    methods="argmin",
    differentiable=False,
    doc="""Index of the (first) minimum along ``axis`` (of the flattened tensor by default).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.argmin(plugrad.tensor([3.0, 1.0, 2.0]))
    tensor(1)
    """,
)

nonzero = op(
    "nonzero",
    lambda xp, x, /: tuple(xp.nonzero(x)),
    multiple_outputs=True,
    differentiable=False,
    doc="""Indices of the non-zero elements: a tuple with one index tensor per axis.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nonzero(plugrad.tensor([[0.0, 1.0], [2.0, 0.0]]))
    (tensor([0, 1]), tensor([1, 0]))
    """,
)

count_nonzero = op(
    "count_nonzero",
    lambda xp, x, /, *, axis=None, keepdims=False: xp.count_nonzero(
        x, axis=axis, keepdims=keepdims
    ),
    differentiable=False,
    doc="""Number of non-zero elements along ``axis`` (all axes by default).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.count_nonzero(plugrad.tensor([[0.0, 1.0], [2.0, 3.0]]), axis=1)
    tensor([1, 2])
    """,
)


def _searchsorted(xp: Any, x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Any:
    if not hasattr(x2, "shape"):
        x2 = xp.asarray(x2, dtype=x1.dtype, device=device_of(x1))
    return xp.searchsorted(x1, x2, side=side, sorter=sorter)


searchsorted = op(
    "searchsorted",
    _searchsorted,
    array_params=("sorter",),
    differentiable=False,
    doc="""Indices at which to insert ``x2`` into the sorted 1-D ``x1`` to keep it sorted.

    ``sorter`` (integer tensor) sorts ``x1`` if it is not sorted; ``x2`` may be a scalar.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.searchsorted(plugrad.tensor([1.0, 2.0, 3.0]), plugrad.tensor([2.5, 0.0]))
    tensor([2, 0])
    >>> plugrad.searchsorted(plugrad.tensor([1.0, 2.0, 3.0]), 2.0, side="right")
    tensor(2)
    """,
)


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [where, argmax, argmin, nonzero, count_nonzero, searchsorted]
