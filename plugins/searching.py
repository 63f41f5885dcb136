"""Searching functions of the Array API."""

from __future__ import annotations

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op

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


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [where]
