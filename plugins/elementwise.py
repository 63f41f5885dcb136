"""Element-wise functions of the Array API: arithmetic, exponentials, comparisons, bits.

One row per op: the generic kernel, the backward rule for each input, the docstring.
Rules are written with operators and ``xp.*`` only, so they also run on Tensors
(``create_graph=True``). Complex inputs follow PyTorch's convention: the
gradient is the conjugate Wirtinger derivative, ``g * conj(f'(z))`` for a
holomorphic ``f`` (see :func:`plugrad.plugins._rules.conj`). Rounding, sign,
comparison, logical and bitwise functions have no gradient.
"""

from __future__ import annotations

import math
from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op
from plugrad.plugins._rules import cast, conj, is_scalar, safe_where_zero

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
    lambda xp, g, ans, x1, x2: g * conj(xp, x2),
    lambda xp, g, ans, x1, x2: g * conj(xp, x1),
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
    tensor([0.5000, 1.5000])
    """,
).vjp(
    lambda xp, g, ans, x1, x2: g / conj(xp, x2),
    # d(x1/x2)/dx2 = -x1/x2**2 = -ans/x2: reuses the output instead of saving x1.
    lambda xp, g, ans, x1, x2: -g * conj(xp, ans / x2),
)


def _pow_grad_base(xp: Any, g: Any, ans: Any, x1: Any, x2: Any) -> Any:
    if is_scalar(x2):
        # NOTE: x**0 is constant; the general formula gives 0 * x**-1 = nan at x == 0.
        return g * 0 if x2 == 0 else g * conj(xp, x2 * x1 ** (x2 - 1))
    return xp.where(x2 == 0, 0.0, g * conj(xp, x2 * x1 ** (x2 - 1)))


def _pow_grad_exponent(xp: Any, g: Any, ans: Any, x1: Any, x2: Any) -> Any:
    if is_scalar(x1):
        # NOTE: 0**y is constant 0 for y > 0, so the gradient is 0, not 0 * log(0) = nan.
        return g * 0 if x1 == 0 else g * conj(xp, ans * math.log(x1))
    at_zero = xp.logical_and(x1 == 0, x2 >= 0)
    # NOTE: take the log of 1 where the result is masked: a log(0) there would make the
    # double backward 0 * inf = nan even though where() discards it.
    return xp.where(at_zero, 0.0, g * conj(xp, ans * xp.log(xp.where(at_zero, 1.0, x1))))


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
    tensor([1.0000, 2.7183])
    """,
).vjp(lambda xp, g, ans, x: g * conj(xp, ans))

log = op(
    "log",
    lambda xp, x, /: xp.log(x),
    saves=("x",),
    doc="""Natural logarithm element-wise (``nan`` for negative inputs, ``-inf`` at 0).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.log(plugrad.tensor([1.0, 4.0]))
    tensor([0.0000, 1.3863])
    """,
).vjp(lambda xp, g, ans, x: g / conj(xp, x))


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


def _minimum_grad(xp: Any, g: Any, mine: Any, other: Any) -> Any:
    # NOTE: ties split the gradient evenly, as for maximum.
    return xp.where(mine < other, g, xp.where(mine == other, g / 2, 0.0))


minimum = op(
    "minimum",
    lambda xp, x1, x2, /: xp.minimum(x1, x2),
    broadcasting=True,
    saves=("x1", "x2"),
    doc="""Element-wise minimum of ``x1`` and ``x2``, broadcasting.

    Where the inputs are equal the gradient is split evenly between them.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.minimum(plugrad.tensor([-1.0, 2.0]), 0.0)
    tensor([-1.,  0.])
    """,
).vjp(
    lambda xp, g, ans, x1, x2: _minimum_grad(xp, g, x1, x2),
    lambda xp, g, ans, x1, x2: _minimum_grad(xp, g, x2, x1),
)


def _unary(
    name: str, kernel: Any, rule: Any, saves: tuple[str, ...], doc: str, grad_fn_name: str = ""
) -> OpDef:
    return op(name, kernel, saves=saves, doc=doc, grad_fn_name=grad_fn_name or None).vjp(rule)


positive = _unary(
    "positive",
    lambda xp, x, /: xp.positive(x),
    lambda xp, g, ans, x: g,
    (),
    """Return ``+x`` element-wise (a new tensor with the same values).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.positive(plugrad.tensor([-1.0, 2.0]))
    tensor([-1.,  2.])
    """,
)


def _abs_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    if xp.isdtype(x.dtype, "complex floating"):
        # d|z|: z / |z|, taken as 0 at z == 0 (a subgradient).
        return xp.where(ans == 0, 0.0, g * x / safe_where_zero(xp, ans))
    # NOTE: sign(0) == 0: the subgradient 0 at the kink, as in PyTorch.
    return g * xp.sign(x)


abs = _unary(
    "abs",
    lambda xp, x, /: xp.abs(x),
    _abs_grad,
    ("x", "ans"),
    """Absolute value ``|x|`` element-wise (the modulus for complex inputs).

    The gradient at 0 is 0.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.abs(plugrad.tensor([-1.5, 2.0]))
    tensor([1.5000, 2.0000])
    """,
)

square = _unary(
    "square",
    lambda xp, x, /: xp.square(x),
    lambda xp, g, ans, x: 2 * g * conj(xp, x),
    ("x",),
    """Square ``x * x`` element-wise.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.square(plugrad.tensor([-1.5, 2.0]))
    tensor([2.2500, 4.0000])
    """,
)

sqrt = _unary(
    "sqrt",
    lambda xp, x, /: xp.sqrt(x),
    lambda xp, g, ans, x: g / (2 * conj(xp, ans)),
    ("ans",),
    """Square root element-wise (``nan`` for negative real inputs; the gradient at 0 is inf).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.sqrt(plugrad.tensor([4.0, 2.25]))
    tensor([2.0000, 1.5000])
    """,
)

reciprocal = _unary(
    "reciprocal",
    lambda xp, x, /: xp.reciprocal(x),
    lambda xp, g, ans, x: -g * conj(xp, ans * ans),
    ("ans",),
    """Reciprocal ``1 / x`` element-wise.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.reciprocal(plugrad.tensor([4.0, -0.5]))
    tensor([ 0.2500, -2.0000])
    """,
)

expm1 = _unary(
    "expm1",
    lambda xp, x, /: xp.expm1(x),
    lambda xp, g, ans, x: g * conj(xp, ans + 1),
    ("ans",),
    """``exp(x) - 1`` element-wise, accurate for small ``x``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.expm1(plugrad.tensor([1e-10, 1.0], dtype=plugrad.float64))
    tensor([1.0000e-10, 1.7183e+00], dtype=plugrad.float64)
    """,
)

log1p = _unary(
    "log1p",
    lambda xp, x, /: xp.log1p(x),
    lambda xp, g, ans, x: g / conj(xp, 1 + x),
    ("x",),
    """``log(1 + x)`` element-wise, accurate for small ``x``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.log1p(plugrad.tensor([1e-10, 1.0], dtype=plugrad.float64))
    tensor([1.0000e-10, 6.9315e-01], dtype=plugrad.float64)
    """,
)

log2 = _unary(
    "log2",
    lambda xp, x, /: xp.log2(x),
    lambda xp, g, ans, x: g / (conj(xp, x) * math.log(2.0)),
    ("x",),
    """Base-2 logarithm element-wise.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.log2(plugrad.tensor([1.0, 8.0]))
    tensor([0., 3.])
    """,
)

log10 = _unary(
    "log10",
    lambda xp, x, /: xp.log10(x),
    lambda xp, g, ans, x: g / (conj(xp, x) * math.log(10.0)),
    ("x",),
    """Base-10 logarithm element-wise.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.log10(plugrad.tensor([1.0, 100.0]))
    tensor([0., 2.])
    """,
)

sin = _unary(
    "sin",
    lambda xp, x, /: xp.sin(x),
    lambda xp, g, ans, x: g * conj(xp, xp.cos(x)),
    ("x",),
    """Sine element-wise (radians).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.sin(plugrad.tensor([0.0, plugrad.pi / 2]))
    tensor([0., 1.])
    """,
)

cos = _unary(
    "cos",
    lambda xp, x, /: xp.cos(x),
    lambda xp, g, ans, x: -g * conj(xp, xp.sin(x)),
    ("x",),
    """Cosine element-wise (radians).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.cos(plugrad.tensor([0.0, plugrad.pi]))
    tensor([ 1., -1.])
    """,
)

tan = _unary(
    "tan",
    lambda xp, x, /: xp.tan(x),
    lambda xp, g, ans, x: g * conj(xp, 1 + ans * ans),
    ("ans",),
    """Tangent element-wise (radians).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.tan(plugrad.tensor([0.0, plugrad.pi / 4]))
    tensor([0., 1.])
    """,
)

sinh = _unary(
    "sinh",
    lambda xp, x, /: xp.sinh(x),
    lambda xp, g, ans, x: g * conj(xp, xp.cosh(x)),
    ("x",),
    """Hyperbolic sine element-wise.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.sinh(plugrad.tensor([0.0, 1.0]))
    tensor([0.0000, 1.1752])
    """,
)

cosh = _unary(
    "cosh",
    lambda xp, x, /: xp.cosh(x),
    lambda xp, g, ans, x: g * conj(xp, xp.sinh(x)),
    ("x",),
    """Hyperbolic cosine element-wise.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.cosh(plugrad.tensor([0.0, 1.0]))
    tensor([1.0000, 1.5431])
    """,
)

tanh = _unary(
    "tanh",
    lambda xp, x, /: xp.tanh(x),
    lambda xp, g, ans, x: g * conj(xp, 1 - ans * ans),
    ("ans",),
    """Hyperbolic tangent element-wise.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.tanh(plugrad.tensor([0.0, 1.0]))
    tensor([0.0000, 0.7616])
    """,
)

asin = _unary(
    "asin",
    lambda xp, x, /: xp.asin(x),
    lambda xp, g, ans, x: g / conj(xp, xp.sqrt(1 - x * x)),
    ("x",),
    """Inverse sine element-wise; the gradient is infinite at ``x = ±1``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.asin(plugrad.tensor([0.0, 1.0]))
    tensor([0.0000, 1.5708])
    """,
)

acos = _unary(
    "acos",
    lambda xp, x, /: xp.acos(x),
    lambda xp, g, ans, x: -g / conj(xp, xp.sqrt(1 - x * x)),
    ("x",),
    """Inverse cosine element-wise; the gradient is infinite at ``x = ±1``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.acos(plugrad.tensor([1.0, 0.0]))
    tensor([0.0000, 1.5708])
    """,
)

atan = _unary(
    "atan",
    lambda xp, x, /: xp.atan(x),
    lambda xp, g, ans, x: g / conj(xp, 1 + x * x),
    ("x",),
    """Inverse tangent element-wise.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.atan(plugrad.tensor([0.0, 1.0]))
    tensor([0.0000, 0.7854])
    """,
)

asinh = _unary(
    "asinh",
    lambda xp, x, /: xp.asinh(x),
    lambda xp, g, ans, x: g / conj(xp, xp.sqrt(x * x + 1)),
    ("x",),
    """Inverse hyperbolic sine element-wise.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.asinh(plugrad.tensor([0.0, 1.0]))
    tensor([0.0000, 0.8814])
    """,
)

acosh = _unary(
    "acosh",
    lambda xp, x, /: xp.acosh(x),
    lambda xp, g, ans, x: g / conj(xp, xp.sqrt(x * x - 1)),
    ("x",),
    """Inverse hyperbolic cosine element-wise (``x >= 1``; the gradient is infinite at 1).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.acosh(plugrad.tensor([1.0, 2.0]))
    tensor([0.0000, 1.3170])
    """,
)

atanh = _unary(
    "atanh",
    lambda xp, x, /: xp.atanh(x),
    lambda xp, g, ans, x: g / conj(xp, 1 - x * x),
    ("x",),
    """Inverse hyperbolic tangent element-wise (``-1 < x < 1``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.atanh(plugrad.tensor([0.0, 0.5]))
    tensor([0.0000, 0.5493])
    """,
)

conj_ = _unary(
    "conj",
    lambda xp, x, /: xp.conj(x),
    lambda xp, g, ans, x: xp.conj(g),
    (),
    """Complex conjugate element-wise (real inputs are returned unchanged).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.conj(plugrad.tensor([1 + 2j]))
    tensor([1.-2.j])
    """,
)

real = _unary(
    "real",
    lambda xp, x, /: xp.real(x),
    lambda xp, g, ans, x: cast(xp, g, x.dtype),
    (),
    """Real part element-wise.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.real(plugrad.tensor([1 + 2j]))
    tensor([1.])
    """,
)

imag = _unary(
    "imag",
    lambda xp, x, /: xp.imag(x),
    lambda xp, g, ans, x: cast(xp, g, x.dtype) * 1j,
    (),
    """Imaginary part element-wise (of a complex tensor).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.imag(plugrad.tensor([1 + 2j]))
    tensor([2.])
    """,
)


def _atan2_grad(xp: Any, g: Any, numerator: Any, denominator: Any, sign: float) -> Any:
    return sign * g * denominator / (numerator * numerator + denominator * denominator)


atan2 = op(
    "atan2",
    lambda xp, x1, x2, /: xp.atan2(x1, x2),
    broadcasting=True,
    saves=("x1", "x2"),
    doc="""Angle of the point ``(x2, x1)`` in radians, element-wise (``atan(x1 / x2)`` by quadrant).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.atan2(plugrad.tensor([1.0, 1.0]), plugrad.tensor([1.0, -1.0]))
    tensor([0.7854, 2.3562])
    """,
).vjp(
    lambda xp, g, ans, x1, x2: _atan2_grad(xp, g, x1, x2, 1.0),
    lambda xp, g, ans, x1, x2: _atan2_grad(xp, g, x2, x1, -1.0),
)

hypot = op(
    "hypot",
    lambda xp, x1, x2, /: xp.hypot(x1, x2),
    broadcasting=True,
    saves=("x1", "x2", "ans"),
    doc="""``sqrt(x1**2 + x2**2)`` element-wise, without overflow; the gradient at (0, 0) is 0.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.hypot(plugrad.tensor([3.0]), 4.0)
    tensor([5.])
    """,
).vjp(
    lambda xp, g, ans, x1, x2: g * x1 / safe_where_zero(xp, ans),
    lambda xp, g, ans, x1, x2: g * x2 / safe_where_zero(xp, ans),
)

logaddexp = op(
    "logaddexp",
    lambda xp, x1, x2, /: xp.logaddexp(x1, x2),
    broadcasting=True,
    saves=("x1", "x2", "ans"),
    doc="""``log(exp(x1) + exp(x2))`` element-wise, without overflow.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.logaddexp(plugrad.tensor([0.0, 1000.0]), 0.0)
    tensor([6.9315e-01, 1.0000e+03])
    """,
).vjp(
    lambda xp, g, ans, x1, x2: g * xp.exp(x1 - ans),
    lambda xp, g, ans, x1, x2: g * xp.exp(x2 - ans),
)

copysign = op(
    "copysign",
    lambda xp, x1, x2, /: xp.copysign(x1, x2),
    broadcasting=True,
    saves=("x1", "x2"),
    doc="""The magnitude of ``x1`` with the sign of ``x2``, element-wise.

    The gradient with respect to ``x1`` is ``±1`` (0 where ``x1 == 0``); with
    respect to ``x2`` it is 0.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.copysign(plugrad.tensor([1.0, -2.0]), -1.0)
    tensor([-1., -2.])
    """,
).vjp(
    lambda xp, g, ans, x1, x2: xp.where(
        x1 == 0, 0.0, xp.where(xp.signbit(x1) == xp.signbit(x2), g, -g)
    ),
    lambda xp, g, ans, x1, x2: xp.zeros_like(g),
)

remainder = op(
    "remainder",
    lambda xp, x1, x2, /: xp.remainder(x1, x2),
    broadcasting=True,
    saves=("x1", "x2"),
    doc="""Remainder of ``x1 / x2`` with the sign of ``x2`` (Python's ``%``), element-wise.

    ``x1 - floor(x1 / x2) * x2``: the gradient is ``1`` for ``x1`` and
    ``-floor(x1 / x2)`` for ``x2``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.remainder(plugrad.tensor([5.0, -5.0]), 3.0)
    tensor([2., 1.])
    """,
).vjp(
    lambda xp, g, ans, x1, x2: g,
    lambda xp, g, ans, x1, x2: -g * xp.floor_divide(x1, x2),
)


def _clip_grad_x(xp: Any, g: Any, ans: Any, x: Any, min: Any, max: Any) -> Any:
    # NOTE: at x == min (or max) the gradient goes to x, as in PyTorch's clamp.
    inside = None
    if min is not None:
        inside = x >= min
    if max is not None:
        inside = x <= max if inside is None else xp.logical_and(inside, x <= max)
    return g if inside is None else xp.where(inside, g, 0.0)


def _clip_grad_min(xp: Any, g: Any, ans: Any, x: Any, min: Any, max: Any) -> Any:
    below = x < min
    if max is not None:
        below = xp.logical_and(below, min <= max)
    return xp.where(below, g, 0.0)


def _clip_grad_max(xp: Any, g: Any, ans: Any, x: Any, min: Any, max: Any) -> Any:
    above = x > max
    if min is not None:
        # Where min > max the result is max everywhere.
        above = xp.logical_or(above, min > max)
    return xp.where(above, g, 0.0)


clip = op(
    "clip",
    lambda xp, x, /, min=None, max=None: xp.clip(x, min, max),
    inputs=("x", "min", "max"),
    broadcasting=True,
    saves=("x", "min", "max"),
    doc="""Clamp ``x`` to ``[min, max]`` element-wise; ``min``/``max`` are scalars, tensors or None.

    The gradient goes to ``x`` where ``min <= x <= max``, and to the bound
    that was applied elsewhere (tensor bounds have gradients too).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.clip(plugrad.tensor([-2.0, 0.5, 3.0]), -1.0, 1.0)
    tensor([-1.0000,  0.5000,  1.0000])
    """,
).vjp(_clip_grad_x, _clip_grad_min, _clip_grad_max)


def _no_grad(name: str, kernel: Any, doc: str) -> OpDef:
    return op(name, kernel, differentiable=False, doc=doc)


sign = _no_grad(
    "sign",
    lambda xp, x, /: xp.sign(x),
    """Sign of ``x`` element-wise: -1, 0 or 1 (``x / |x|`` for complex). No gradient.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.sign(plugrad.tensor([-2.0, 0.0, 3.0]))
    tensor([-1.,  0.,  1.])
    """,
)

signbit = _no_grad(
    "signbit",
    lambda xp, x, /: xp.signbit(x),
    """Whether the sign bit is set, element-wise (true for ``-0.0``). No gradient.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.signbit(plugrad.tensor([-0.0, 0.0, -1.0]))
    tensor([ True, False,  True])
    """,
)

floor = _no_grad(
    "floor",
    lambda xp, x, /: xp.floor(x),
    """Round down element-wise. No gradient (it is 0 almost everywhere).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.floor(plugrad.tensor([-1.5, 1.5]))
    tensor([-2.,  1.])
    """,
)

ceil = _no_grad(
    "ceil",
    lambda xp, x, /: xp.ceil(x),
    """Round up element-wise. No gradient.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.ceil(plugrad.tensor([-1.5, 1.5]))
    tensor([-1.,  2.])
    """,
)

round = _no_grad(
    "round",
    lambda xp, x, /: xp.round(x),
    """Round to the nearest integer element-wise, halves to even. No gradient.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.round(plugrad.tensor([0.5, 1.5, -2.7]))
    tensor([ 0.,  2., -3.])
    """,
)

trunc = _no_grad(
    "trunc",
    lambda xp, x, /: xp.trunc(x),
    """Round towards zero element-wise. No gradient.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.trunc(plugrad.tensor([-1.5, 1.5]))
    tensor([-1.,  1.])
    """,
)


def _floor_divide(xp: Any, x1: Any, x2: Any, /) -> Any:
    out = xp.floor_divide(x1, x2)
    if not xp.isdtype(out.dtype, "real floating"):
        return out
    # NOTE: NumPy gives nan for inf // finite and -1.0 for -1.0 // inf, where the
    # standard asks for floor(x1 / x2): +-inf and -0.0.
    a = x1 if hasattr(x1, "shape") else xp.asarray(x1, dtype=out.dtype, device=out.device)
    b = x2 if hasattr(x2, "shape") else xp.asarray(x2, dtype=out.dtype, device=out.device)
    infinite = xp.logical_or(xp.isinf(a), xp.isinf(b))
    return xp.where(infinite, xp.floor(a / b), out)


floor_divide = _no_grad(
    "floor_divide",
    _floor_divide,
    """``floor(x1 / x2)`` element-wise, broadcasting (Python's ``//``). No gradient.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.floor_divide(plugrad.tensor([7.0, -7.0]), 2.0)
    tensor([ 3., -4.])
    """,
)

nextafter = _no_grad(
    "nextafter",
    lambda xp, x1, x2, /: xp.nextafter(x1, x2),
    """The next representable value after ``x1`` towards ``x2``, element-wise. No gradient.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nextafter(plugrad.tensor([1.0]), 2.0) > 1.0
    tensor([True])
    """,
)

isnan = _no_grad(
    "isnan",
    lambda xp, x, /: xp.isnan(x),
    """Whether each element is NaN. No gradient.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.isnan(plugrad.tensor([1.0, plugrad.nan]))
    tensor([False,  True])
    """,
)

isinf = _no_grad(
    "isinf",
    lambda xp, x, /: xp.isinf(x),
    """Whether each element is infinite. No gradient.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.isinf(plugrad.tensor([1.0, -plugrad.inf]))
    tensor([False,  True])
    """,
)

isfinite = _no_grad(
    "isfinite",
    lambda xp, x, /: xp.isfinite(x),
    """Whether each element is finite (neither infinite nor NaN). No gradient.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.isfinite(plugrad.tensor([1.0, plugrad.inf, plugrad.nan]))
    tensor([ True, False, False])
    """,
)

logical_xor = _no_grad(
    "logical_xor",
    lambda xp, x1, x2, /: xp.logical_xor(x1, x2),
    """Logical XOR element-wise, broadcasting; returns a bool tensor.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0, 3.0])
    >>> plugrad.logical_xor(x > 1.0, x > 2.0)
    tensor([False,  True, False])
    """,
)

bitwise_and = _no_grad(
    "bitwise_and",
    lambda xp, x1, x2, /: xp.bitwise_and(x1, x2),
    """Bitwise AND of integer or bool tensors, broadcasting (``x1 & x2``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.bitwise_and(plugrad.tensor([12, 10]), 6)
    tensor([4, 2])
    """,
)

bitwise_or = _no_grad(
    "bitwise_or",
    lambda xp, x1, x2, /: xp.bitwise_or(x1, x2),
    """Bitwise OR of integer or bool tensors, broadcasting (``x1 | x2``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.bitwise_or(plugrad.tensor([12, 10]), 6)
    tensor([14, 14])
    """,
)

bitwise_xor = _no_grad(
    "bitwise_xor",
    lambda xp, x1, x2, /: xp.bitwise_xor(x1, x2),
    """Bitwise XOR of integer or bool tensors, broadcasting (``x1 ^ x2``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.bitwise_xor(plugrad.tensor([12, 10]), 6)
    tensor([10, 12])
    """,
)

bitwise_invert = _no_grad(
    "bitwise_invert",
    lambda xp, x, /: xp.bitwise_invert(x),
    """Bitwise NOT of an integer or bool tensor (``~x``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.bitwise_invert(plugrad.tensor([0, 5]))
    tensor([-1, -6])
    """,
)

bitwise_left_shift = _no_grad(
    "bitwise_left_shift",
    lambda xp, x1, x2, /: xp.bitwise_left_shift(x1, x2),
    """Shift the bits of ``x1`` left by ``x2``, broadcasting (``x1 << x2``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.bitwise_left_shift(plugrad.tensor([1, 3]), 2)
    tensor([ 4, 12])
    """,
)

bitwise_right_shift = _no_grad(
    "bitwise_right_shift",
    lambda xp, x1, x2, /: xp.bitwise_right_shift(x1, x2),
    """Shift the bits of ``x1`` right by ``x2``, broadcasting (``x1 >> x2``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.bitwise_right_shift(plugrad.tensor([8, 13]), 2)
    tensor([2, 3])
    """,
)


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [
        add, subtract, multiply, divide, pow, negative, positive, exp, expm1, log, log1p,
        log2, log10, sqrt, square, reciprocal, abs, sin, cos, tan, sinh, cosh, tanh,
        asin, acos, atan, asinh, acosh, atanh, atan2, hypot, logaddexp, copysign,
        remainder, clip, maximum, minimum, conj_, real, imag,
        sign, signbit, floor, ceil, round, trunc, floor_divide, nextafter,
        isnan, isinf, isfinite,
        equal, not_equal, less, less_equal, greater, greater_equal,
        logical_and, logical_or, logical_not, logical_xor,
        bitwise_and, bitwise_or, bitwise_xor, bitwise_invert,
        bitwise_left_shift, bitwise_right_shift,
    ]  # fmt: skip
