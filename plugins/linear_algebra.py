"""Linear-algebra functions of the Array API: ``matmul`` and ``matrix_transpose``."""

from __future__ import annotations

from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op


# The engine sums batch dimensions that broadcasting added, so these rules may
# return gradients with the broadcast batch shape.
def _matmul_grad_x1(xp: Any, g: Any, ans: Any, x1: Any, x2: Any) -> Any:
    if x1.ndim == 1 and x2.ndim == 1:  # inner product: g is 0-d
        return g * x2
    if x2.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        return xp.expand_dims(g, axis=-1) * x2
    if x1.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        return xp.squeeze(xp.matmul(x2, xp.expand_dims(g, axis=-1)), axis=-1)
    return xp.matmul(g, xp.matrix_transpose(x2))


def _matmul_grad_x2(xp: Any, g: Any, ans: Any, x1: Any, x2: Any) -> Any:
    if x1.ndim == 1 and x2.ndim == 1:
        return g * x1
    if x1.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        return xp.expand_dims(x1, axis=-1) * xp.expand_dims(g, axis=-2)
    if x2.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        return xp.squeeze(xp.matmul(xp.matrix_transpose(x1), xp.expand_dims(g, axis=-1)), axis=-1)
    return xp.matmul(xp.matrix_transpose(x1), g)


matmul = op(
    "matmul",
    lambda xp, x1, x2, /: xp.matmul(x1, x2),
    broadcasting=True,
    saves=("x1", "x2"),
    grad_fn_name="MatMul",
    doc="""Matrix product ``x1 @ x2``, with NumPy's rules for 1-D and batched inputs.

    Examples
    --------
    >>> import plugrad
    >>> a = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> plugrad.matmul(a, plugrad.tensor([1.0, 1.0]))
    tensor([3., 7.])
    """,
).vjp(_matmul_grad_x1, _matmul_grad_x2)

matrix_transpose = op(
    "matrix_transpose",
    lambda xp, x, /: xp.matrix_transpose(x),
    saves=(),
    view=True,
    doc="""Transpose the last two axes (a stack of matrices); ``x.mT``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.matrix_transpose(plugrad.tensor([[1.0, 2.0]]))
    tensor([[1.],
            [2.]])
    """,
).vjp(lambda xp, g, ans, x: xp.matrix_transpose(g))


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [matmul, matrix_transpose]
