"""Element-wise functions of the Array API: arithmetic, exponentials, comparisons.

One row per op: the generic kernel, the backward rule for each input, the docstring.
Rules are written with operators and ``xp.*`` only, so they also run on Tensors
(``create_graph=True``).
"""

from __future__ import annotations

import math
from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op

_SCALARS = (bool, int, float, complex)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, _SCALARS)


add = op(
    "add",
    lambda xp, x1, x2, /: xp.add(x1, x2),
    broadcasting=True,
    saves=(),
    doc="""Add ``x1 + x2`` element-wise, broadcasting.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.add(plugrad.tensor([1.0, 2.0]), 1.0)
    tensor([2., 3.])
    """,
).vjp(
    lambda xp, g, ans, x1, x2: g,
    lambda xp, g, ans, x1, x2: g,
)

subtract = op(
    "subtract",
    lambda xp, x1, x2, /: xp.subtract(x1, x2),
    broadcasting=True,
    saves=(),
    grad_fn_name="Sub",
    doc="""Subtract ``x1 - x2`` element-wise, broadcasting.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.subtract(10.0, plugrad.tensor([1.0, 2.0]))
    tensor([9., 8.])
    """,
).vjp(
    lambda xp, g, ans, x1, x2: g,
    lambda xp, g, ans, x1, x2: -g,
)

multiply = op(
    "multiply",
    lambda xp, x1, x2, /: xp.multiply(x1, x2),
    broadcasting=True,
    saves=("x1", "x2"),
    grad_fn_name="Mul",
    doc="""Multiply ``x1 * x2`` element-wise, broadcasting.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.multiply(plugrad.tensor([1.0, 2.0]), plugrad.tensor([3.0, 4.0]))
    tensor([3., 8.])
    """,
).vjp(
    lambda xp, g, ans, x1, x2: g * x2,
    lambda xp, g, ans, x1, x2: g * x1,
)

divide = op(
    "divide",
    lambda xp, x1, x2, /: xp.divide(x1, x2),
    broadcasting=True,
    saves=("x2", "ans"),
    grad_fn_name="Div",
    doc="""Divide ``x1 / x2`` element-wise (true division), broadcasting.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.divide(plugrad.tensor([1.0, 3.0]), 2.0)
    tensor([0.5, 1.5])
    """,
).vjp(
    lambda xp, g, ans, x1, x2: g / x2,
    # d(x1/x2)/dx2 = -x1/x2**2 = -ans/x2: reuses the output instead of saving x1.
    lambda xp, g, ans, x1, x2: -g * ans / x2,
)


def _pow_grad_base(xp: Any, g: Any, ans: Any, x1: Any, x2: Any) -> Any:
    if _is_scalar(x2):
        # NOTE: x**0 is constant; the general formula gives 0 * x**-1 = nan at x == 0.
        return g * 0 if x2 == 0 else g * x2 * x1 ** (x2 - 1)
    return xp.where(x2 == 0, 0.0, g * x2 * x1 ** (x2 - 1))


def _pow_grad_exponent(xp: Any, g: Any, ans: Any, x1: Any, x2: Any) -> Any:
    if _is_scalar(x1):
        # NOTE: 0**y is constant 0 for y > 0, so the gradient is 0, not 0 * log(0) = nan.
        return g * 0 if x1 == 0 else g * ans * math.log(x1)
    at_zero = xp.logical_and(x1 == 0, x2 >= 0)
    # NOTE: take the log of 1 where the result is masked: a log(0) there would make the
    # double backward 0 * inf = nan even though where() discards it.
    return xp.where(at_zero, 0.0, g * ans * xp.log(xp.where(at_zero, 1.0, x1)))


pow = op(
    "pow",
    lambda xp, x1, x2, /: xp.pow(x1, x2),
    broadcasting=True,
    saves=("x1", "x2", "ans"),
    doc="""Raise ``x1 ** x2`` element-wise, broadcasting.

    The gradient with respect to the exponent is taken as 0 where the base is
    0 (``0 ** y`` is constant for ``y >= 0``); it is ``nan`` for negative bases.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.pow(plugrad.tensor([2.0, 3.0]), 2)
    tensor([4., 9.])
    """,
).vjp(_pow_grad_base, _pow_grad_exponent)

negative = op(
    "negative",
    lambda xp, x, /: xp.negative(x),
    saves=(),
    grad_fn_name="Neg",
    doc="""Negate ``-x`` element-wise.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.negative(plugrad.tensor([1.0, -2.0]))
    tensor([-1.,  2.])
    """,
).vjp(lambda xp, g, ans, x: -g)

exp = op(
    "exp",
    lambda xp, x, /: xp.exp(x),
    saves=("ans",),
    doc="""Exponential ``e ** x`` element-wise.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.exp(plugrad.tensor([0.0, 1.0]))  # doctest: +ELLIPSIS
    tensor([1. ..., 2.71828...])
    """,
).vjp(lambda xp, g, ans, x: g * ans)

log = op(
    "log",
    lambda xp, x, /: xp.log(x),
    saves=("x",),
    doc="""Natural logarithm element-wise (``nan`` for negative inputs, ``-inf`` at 0).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.log(plugrad.tensor([1.0, 4.0]))
    tensor([0.       , 1.3862944])
    """,
).vjp(lambda xp, g, ans, x: g / x)


def _maximum_grad(xp: Any, g: Any, mine: Any, other: Any) -> Any:
    # NOTE: at ties the gradient is split evenly between the inputs (PyTorch's
    # convention), so maximum(x, x) has gradient 1 with respect to x, not 2.
    return xp.where(mine > other, g, xp.where(mine == other, g / 2, 0.0))


maximum = op(
    "maximum",
    lambda xp, x1, x2, /: xp.maximum(x1, x2),
    broadcasting=True,
    saves=("x1", "x2"),
    doc="""Element-wise maximum of ``x1`` and ``x2``, broadcasting.

    Where the inputs are equal the gradient is split evenly between them.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.maximum(plugrad.tensor([-1.0, 2.0]), 0.0)
    tensor([0., 2.])
    """,
).vjp(
    lambda xp, g, ans, x1, x2: _maximum_grad(xp, g, x1, x2),
    lambda xp, g, ans, x1, x2: _maximum_grad(xp, g, x2, x1),
)


def _comparison(name: str, symbol: str, kernel: Any, example: str) -> OpDef:
    return op(
        name,
        kernel,
        differentiable=False,
        doc=f"""Compare ``x1 {symbol} x2`` element-wise, broadcasting; returns a bool tensor.

    Comparisons have no gradient.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.{name}(plugrad.tensor([1.0, 2.0, 3.0]), 2.0)
    tensor({example})
    """,
    )


equal = _comparison("equal", "==", lambda xp, x1, x2, /: xp.equal(x1, x2), "[False,  True, False]")
not_equal = _comparison(
    "not_equal", "!=", lambda xp, x1, x2, /: xp.not_equal(x1, x2), "[ True, False,  True]"
)
less = _comparison("less", "<", lambda xp, x1, x2, /: xp.less(x1, x2), "[ True, False, False]")
less_equal = _comparison(
    "less_equal", "<=", lambda xp, x1, x2, /: xp.less_equal(x1, x2), "[ True,  True, False]"
)
greater = _comparison(
    "greater", ">", lambda xp, x1, x2, /: xp.greater(x1, x2), "[False, False,  True]"
)
greater_equal = _comparison(
    "greater_equal", ">=", lambda xp, x1, x2, /: xp.greater_equal(x1, x2), "[False,  True,  True]"
)


logical_and = op(
    "logical_and",
    lambda xp, x1, x2, /: xp.logical_and(x1, x2),
    differentiable=False,
    doc="""Logical AND element-wise, broadcasting; returns a bool tensor.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0, 3.0])
    >>> plugrad.logical_and(x > 1.0, x < 3.0)
    tensor([False,  True, False])
    """,
)

logical_or = op(
    "logical_or",
    lambda xp, x1, x2, /: xp.logical_or(x1, x2),
    differentiable=False,
    doc="""Logical OR element-wise, broadcasting; returns a bool tensor.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0, 3.0])
    >>> plugrad.logical_or(x < 2.0, x > 2.0)
    tensor([ True, False,  True])
    """,
)

logical_not = op(
    "logical_not",
    lambda xp, x, /: xp.logical_not(x),
    differentiable=False,
    doc="""Logical NOT element-wise; returns a bool tensor.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.logical_not(plugrad.tensor([1.0, 2.0]) > 1.5)
    tensor([ True, False])
    """,
)


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [
        add, subtract, multiply, divide, pow, negative, exp, log, maximum,
        equal, not_equal, less, less_equal, greater, greater_equal,
        logical_and, logical_or, logical_not,
    ]  # fmt: skip
