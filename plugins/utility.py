"""Utility functions of the Array API: truth tests (no gradients)."""

from __future__ import annotations

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op

all = op(
    "all",
    lambda xp, x, /, *, axis=None, keepdims=False: xp.all(x, axis=axis, keepdims=keepdims),
    differentiable=False,
    doc="""Test whether all elements along ``axis`` are true (non-zero).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.all(plugrad.tensor([1.0, 2.0]) > 0)
    tensor(True)
    """,
)

any = op(
    "any",
    lambda xp, x, /, *, axis=None, keepdims=False: xp.any(x, axis=axis, keepdims=keepdims),
    differentiable=False,
    doc="""Test whether any element along ``axis`` is true (non-zero).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.any(plugrad.tensor([1.0, 2.0]) > 1.5)
    tensor(True)
    """,
)


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [all, any]
