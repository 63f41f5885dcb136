"""Linear-algebra functions of the Array API main namespace: ``matmul``, ``matrix_transpose``,
``tensordot`` and ``vecdot`` (also reachable as ``plugrad.linalg.<name>``).

Complex inputs get PyTorch's conjugate gradients (``g @ conj(x2).T``).
"""

from __future__ import annotations

from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op
from plugrad.plugins._rules import conj, negative_axis


# The engine sums batch dimensions that broadcasting added, so these rules may
# return gradients with the broadcast batch shape.
def _matmul_grad_x1(xp: Any, g: Any, ans: Any, x1: Any, x2: Any) -> Any:
    x2 = conj(xp, x2)
    if x1.ndim == 1 and x2.ndim == 1:  # inner product: g is 0-d
        return g * x2
    if x2.ndim == 1:  # (..., n, k) @ (k,) -> (..., n)
        return xp.expand_dims(g, axis=-1) * x2
    if x1.ndim == 1:  # (k,) @ (..., k, m) -> (..., m)
        return xp.squeeze(xp.matmul(x2, xp.expand_dims(g, axis=-1)), axis=-1)
    return xp.matmul(g, xp.matrix_transpose(x2))


def _matmul_grad_x2(xp: Any, g: Any, ans: Any, x1: Any, x2: Any) -> Any:
    x1 = conj(xp, x1)
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
    methods=("matmul", "mm", "bmm"),
    aliases=("mm", "bmm"),
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


def _tensordot_axes(axes: Any, ndim1: int, ndim2: int) -> tuple[list[int], list[int]]:
    if isinstance(axes, int):
        return list(range(ndim1 - axes, ndim1)), list(range(axes))
    first, second = axes
    first = [first] if isinstance(first, int) else list(first)
    second = [second] if isinstance(second, int) else list(second)
    return [a % ndim1 for a in first], [a % ndim2 for a in second]


def _tensordot_grad(which: int) -> Any:
    def rule(xp: Any, g: Any, ans: Any, x1: Any, x2: Any, *, axes: Any) -> Any:
        a1, a2 = _tensordot_axes(axes, x1.ndim, x2.ndim)
        free1 = [d for d in range(x1.ndim) if d not in a1]
        free2 = [d for d in range(x2.ndim) if d not in a2]
        g_free1 = list(range(len(free1)))
        g_free2 = list(range(len(free1), len(free1) + len(free2)))
        if which == 0:
            # Contract g with x2 over x2's free axes; the result has x1's free axes, then
            # x1's contracted axes in the order of x2's (ascending) contracted axes.
            grad = xp.tensordot(g, conj(xp, x2), axes=(g_free2, free2))
            source = free1 + [a1[a2.index(b)] for b in sorted(a2)]
        else:
            grad = xp.tensordot(conj(xp, x1), g, axes=(free1, g_free1))
            source = [a2[a1.index(b)] for b in sorted(a1)] + free2
        order = tuple(source.index(d) for d in range(len(source)))
        return grad if order == tuple(range(len(order))) else xp.permute_dims(grad, order)

    return rule


tensordot = op(
    "tensordot",
    lambda xp, x1, x2, /, *, axes=2: xp.tensordot(x1, x2, axes=axes),
    saves=("x1", "x2"),
    doc="""Sum products over axes: the last ``axes`` of ``x1`` with the first of ``x2``.

    ``axes`` may also be a pair of sequences naming the contracted axes of each.

    Examples
    --------
    >>> import plugrad
    >>> a = plugrad.reshape(plugrad.arange(6.0), (2, 3))
    >>> plugrad.tensordot(a, plugrad.ones((3, 2)), axes=1)
    tensor([[ 3.,  3.],
            [12., 12.]])
    >>> plugrad.tensordot(a, a, axes=([0, 1], [0, 1]))
    tensor(55.)
    """,
).vjp(_tensordot_grad(0), _tensordot_grad(1))


def _vecdot_grad(which: int) -> Any:
    def rule(xp: Any, g: Any, ans: Any, x1: Any, x2: Any, *, axis: int) -> Any:
        ndim = max(x1.ndim, x2.ndim)
        axis = axis - ndim if axis >= 0 else axis
        g = xp.expand_dims(g, axis=axis)
        # vecdot(x1, x2) = sum(conj(x1) * x2): x1 enters conjugated.
        return x2 * conj(xp, g) if which == 0 else g * x1

    return rule


vecdot = op(
    "vecdot",
    lambda xp, x1, x2, /, *, axis=-1: xp.vecdot(x1, x2, axis=negative_axis(axis, x1, x2)),
    broadcasting=True,
    saves=("x1", "x2"),
    doc="""Dot product along ``axis``, broadcasting the other axes (``x1`` is conjugated).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.vecdot(plugrad.tensor([[1.0, 2.0], [3.0, 4.0]]), plugrad.tensor([1.0, 1.0]))
    tensor([3., 7.])
    """,
).vjp(_vecdot_grad(0), _vecdot_grad(1))


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [matmul, matrix_transpose, tensordot, vecdot]
