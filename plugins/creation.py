"""Creation functions of the Array API that take tensors: ``tril``, ``triu``, ``meshgrid``.

The functions that make tensors from nothing (``zeros``, ``eye``, ``linspace``,
...) are not ops; they live in :mod:`plugrad.creation`.
"""

from __future__ import annotations

from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op

tril = op(
    "tril",
    lambda xp, x, /, *, k=0: xp.tril(x, k=k),
    methods="tril",
    saves=(),
    doc="""The lower triangle of the last two axes (on and below diagonal ``k``), zeros elsewhere.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.tril(plugrad.ones((2, 2)))
    tensor([[1., 0.],
            [1., 1.]])
    """,
).vjp(lambda xp, g, ans, x, *, k: xp.tril(g, k=k))

triu = op(
    "triu",
    lambda xp, x, /, *, k=0: xp.triu(x, k=k),
    methods="triu",
    saves=(),
    doc="""The upper triangle of the last two axes (on and above diagonal ``k``), zeros elsewhere.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.triu(plugrad.ones((2, 2)), k=1)
    tensor([[0., 1.],
            [0., 0.]])
    """,
).vjp(lambda xp, g, ans, x, *, k: xp.triu(g, k=k))


def _meshgrid_axis(i: int, count: int, indexing: str) -> int:
    if indexing == "xy" and count >= 2 and i < 2:
        return 1 - i
    return i


def _meshgrid_grad(xp: Any, g: Any, ans: Any, arrays: tuple[Any, ...], *, indexing: str):
    count = len(arrays)
    grads = []
    for i, gi in enumerate(g):
        keep = _meshgrid_axis(i, count, indexing)
        others = tuple(d for d in range(gi.ndim) if d != keep)
        grads.append(xp.sum(gi, axis=others) if others else gi)
    return grads


meshgrid = op(
    "meshgrid",
    lambda xp, *arrays, indexing="xy": tuple(xp.meshgrid(*arrays, indexing=indexing)),
    multiple_outputs=True,
    saves=(),
    doc="""Coordinate grids from 1-D tensors: ``indexing="xy"`` (Cartesian) or ``"ij"`` (matrix).

    Examples
    --------
    >>> import plugrad
    >>> X, Y = plugrad.meshgrid(plugrad.tensor([1.0, 2.0, 3.0]), plugrad.tensor([4.0, 5.0]))
    >>> X
    tensor([[1., 2., 3.],
            [1., 2., 3.]])
    >>> Y.shape
    (2, 3)
    """,
).vjp(_meshgrid_grad)


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [tril, triu, meshgrid]
