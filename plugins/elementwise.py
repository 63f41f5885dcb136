"""Element-wise functions of the Array API: arithmetic, exponentials, comparisons, bits.

One row per op: its signature (the kernel is the backend's function of the
same name), its backward rule for each input, its Tensor methods and
PyTorch's names for it, and one line of docs (examples: the "Element-wise
functions" page of the docs). Rules are written with operators and ``xp.*``
only, so they also run on Tensors (``create_graph=True``). Complex inputs
follow PyTorch's convention: the gradient is the conjugate Wirtinger
derivative, ``g * conj(f'(z))`` for a holomorphic ``f`` (see
:func:`plugrad.plugins._rules.conj`). Rounding and sign have a zero gradient,
as in PyTorch; comparison, logical and bitwise functions have none.
"""

from __future__ import annotations

import cmath
import math
import operator
from typing import Any

from plugrad.errors import (
    ArgumentError,
    DivisionByZeroError,
    DtypeError,
    InvalidArgumentError,
    PlugradError,
    name_the_call,
)
from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, collect_ops, op
from plugrad.plugins._rules import (
    cast,
    conj,
    device_of,
    half_in_float32,
    in_float32_if_half,
    index_dtype,
    is_complex,
    is_half,
    is_scalar,
    logistic,
    python_number,
    safe_where_zero,
    scalar_number,
)

# The rows are aligned by hand, one op per statement.
# fmt: off


def _zero(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    # Piecewise-constant ops: zero almost everywhere, and defined as zero at the steps.
    return xp.zeros_like(g)


def _sign_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    if not is_complex(xp, x):
        return xp.zeros_like(g)
    # z / |z| moves only across the circle: g less its radial part, over |z| (0 at 0).
    modulus = xp.abs(x)
    safe = safe_where_zero(xp, modulus)
    unit = x / safe
    return xp.where(modulus == 0, 0.0, (g - xp.real(g * xp.conj(unit)) * unit) / safe)


def _arrays(xp: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    """``x1`` and ``x2`` with a Python scalar among them made an array like the other."""
    like = x2 if is_scalar(x1) else x1

    def as_array(value: Any) -> Any:
        if not is_scalar(value):
            return value
        return xp.asarray(value, dtype=like.dtype, device=device_of(like))

    return as_array(x1), as_array(x2)


# -- arithmetic -----------------------------------------------------------------------

add = op(
    "add(x1, x2)", vjp=(lambda xp, g, ans, x1, x2: g, lambda xp, g, ans, x1, x2: g),
    promotion="mixed",
    broadcasting=True, methods="add", alpha=True,
    inplace=operator.iadd, doc="Add ``x1 + x2`` element-wise, broadcasting.",
)
subtract = op(
    "subtract(x1, x2)", vjp=(lambda xp, g, ans, x1, x2: g, lambda xp, g, ans, x1, x2: -g),
    promotion="mixed",
    broadcasting=True, grad_fn_name="Sub", methods=("sub", "subtract"), alpha=True,
    inplace=operator.isub, aliases="sub",
    doc="Subtract ``x1 - x2`` element-wise, broadcasting.",
)
multiply = op(
    "multiply(x1, x2)", promotion="mixed",
    vjp=(lambda xp, g, ans, x1, x2: g * conj(xp, x2), lambda xp, g, ans, x1, x2: g * conj(xp, x1)),
    broadcasting=True, grad_fn_name="Mul", methods=("mul", "multiply"),
    inplace=operator.imul, aliases="mul",
    doc="Multiply ``x1 * x2`` element-wise, broadcasting.",
)
def _is_integer(xp: Any, value: Any) -> bool:
    dtype = getattr(value, "dtype", None)
    return isinstance(value, int) if dtype is None else xp.isdtype(dtype, ("integral", "bool"))


def _div(xp: Any, x1: Any, other: Any, *, rounding_mode: str | None = None) -> Any:
    """PyTorch's ``div(x1, other, rounding_mode=None)``: true division, or rounded.

    ``"trunc"`` rounds toward zero, ``"floor"`` toward minus infinity; integer
    inputs then give an integer result. A rounded quotient has a zero gradient.
    """
    x2 = other  # (PyTorch's keyword for the divisor: x.div(other=y))
    if rounding_mode is None:
        return xp.divide(x1, x2)
    x1, x2 = python_number(x1), python_number(x2)  # (a NumPy scalar has a NumPy dtype)
    if rounding_mode not in ("trunc", "floor"):
        raise InvalidArgumentError(
            f"div(): rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}"
        )
    if not (_is_integer(xp, x1) and _is_integer(xp, x2)):
        return xp.rounded_divide(x1, x2, rounding_mode=rounding_mode)
    _refuse_booleans(xp, "div", x1, x2)
    _refuse_integer_division_by_zero(xp, "div", x2)
    try:
        quotient = xp.floor_divide(x1, x2)
    except PlugradError as error:
        name_the_call(error, "div")  # (it named floor_divide, which the user did not call)
        raise
    if rounding_mode == "floor":
        return quotient
    # Floor and truncation differ by one where the division is inexact and the signs differ.
    inexact = xp.logical_and(quotient * x2 != x1, (x1 < 0) != (x2 < 0))
    return xp.where(inexact, quotient + 1, quotient)


def _refuse_integer_division_by_zero(xp: Any, function: str, divisor: Any) -> None:
    """Raise where an integer division has a zero divisor (NumPy would give 0), as PyTorch."""
    zero = divisor == 0 if is_scalar(divisor) else bool(xp.any(divisor == 0))
    if zero:
        raise DivisionByZeroError(
            f"{function}(): integer division by zero; divide floating-point numbers to get inf "
            "or nan there"
        )


#: (dtype type, dtype) -> whether it is an integer (or bool) dtype, learned per dtype.
_INTEGRAL: dict[tuple[type, Any], bool] = {}


def _refuse_booleans(xp: Any, function: str, x1: Any, x2: Any) -> None:
    """Refuse two booleans, as PyTorch and the standard do (NumPy's answer is an int8)."""
    if _is_boolean(xp, x1) and _is_boolean(xp, x2):
        raise DtypeError(
            f"{function}() of two booleans is not defined; convert them to integers first "
            "(x.int())"
        )


def _is_boolean(xp: Any, value: Any) -> bool:
    """Whether ``value`` is a Python bool or an array of booleans."""
    if type(value) is bool:
        return True
    dtype = getattr(value, "dtype", None)
    return dtype is not None and bool(xp.isdtype(dtype, "bool"))


def _both_integral(xp: Any, x1: Any, x2: Any) -> bool:
    """Whether both operands are integers (Python ints, or arrays of integer dtypes)."""
    for value in (x1, x2):
        dtype = getattr(value, "dtype", None)
        if dtype is None:
            if type(value) is not int and type(value) is not bool:
                return False
            continue
        key = (type(dtype), dtype)
        integral = _INTEGRAL.get(key)
        if integral is None:
            integral = _INTEGRAL[key] = bool(xp.isdtype(dtype, ("integral", "bool")))
        if not integral:
            return False
    return True


def _remainder(xp: Any, x1: Any, x2: Any, /) -> Any:
    if _both_integral(xp, x1, x2):
        _refuse_booleans(xp, "remainder", x1, x2)
        _refuse_integer_division_by_zero(xp, "remainder", x2)
    return xp.remainder(x1, x2)


def _rounded_divide(xp: Any, x1: Any, x2: Any, /, *, rounding_mode: str) -> Any:
    if rounding_mode == "floor":
        # PyTorch's is Python's //, the backends' own floor_divide: floor(x1 / x2) would round
        # the quotient first (1 / 0.1 is 10.0, 1 // 0.1 is 9.0), and -1 // inf is -1.0.
        return xp.floor_divide(x1, x2)
    return xp.trunc(xp.divide(x1, x2))


def _no_gradient(xp: Any, g: Any, ans: Any, x1: Any, x2: Any, *, rounding_mode: str) -> Any:
    return xp.zeros_like(g)  # piecewise constant, and 0 where x2 is 0 (PyTorch's)


# ``div(x1, x2, rounding_mode=...)`` of floating-point numbers, out of the array namespace.
rounded_divide = op(
    "rounded_divide", _rounded_divide, standard=False, namespace="nn", promotion="float",
    broadcasting=True, vjp=(_no_gradient, _no_gradient), grad_fn_name="Div", real_only=True,
    doc="``x1 / x2`` rounded by ``rounding_mode`` ('trunc' or 'floor'); its gradient is 0.",
)
divide = op(
    "divide(x1, x2)", promotion="float",
    # d(x1/x2)/dx2 = -x1/x2**2, from x1 as PyTorch's (not from the output, which the program
    # may change in place before backward: z = a / b; z.relu_()); divided twice, as x2**2
    # would overflow first.
    vjp=(lambda xp, g, ans, x1, x2: g / conj(xp, x2),
         lambda xp, g, ans, x1, x2: -g * conj(xp, x1 / x2 / x2)),
    broadcasting=True, grad_fn_name="Div",
    methods={"div": _div, "divide": _div, "true_divide": None}, inplace=operator.itruediv,
    aliases={"div": _div, "true_divide": None},
    doc="Divide ``x1 / x2`` element-wise (true division).",
)


def _pow_grad_base(xp: Any, g: Any, ans: Any, x1: Any, x2: Any) -> Any:
    if is_scalar(x2):
        # NOTE: x**0 is constant; the general formula gives 0 * x**-1 = nan at x == 0.
        return g * 0 if x2 == 0 else g * conj(xp, x2 * x1 ** (x2 - 1))
    # The masked branch computed of 1 ** 0 there, not 0 * 0 ** -1: its own derivative (a
    # second derivative, a jvp) met 0 * inf = nan even where the where() drops it.
    constant = x2 == 0
    base, exponent = xp.where(constant, 1.0, x1), xp.where(constant, 1.0, x2)
    return xp.where(constant, 0.0, g * conj(xp, exponent * base ** (exponent - 1)))


def _constant_at_zero(xp: Any, x2: Any) -> Any:
    """Where ``0 ** x2`` is constant in ``x2`` (0 or 1): a real exponent >= 0. A complex one
    off the real axis has no limit there (0 ** 0.5j is nan), so its gradient is nan, as
    PyTorch's."""
    if is_complex(xp, x2):
        return xp.logical_and(xp.imag(x2) == 0, xp.real(x2) >= 0)
    return x2 >= 0


def _pow_grad_exponent(xp: Any, g: Any, ans: Any, x1: Any, x2: Any) -> Any:
    complex_result = is_complex(xp, ans)
    if is_scalar(x1):
        # NOTE: 0**y is constant 0 for y > 0, so the gradient is 0, not 0 * log(0) = nan;
        # below 0 it is inf * log(0) = -inf (PyTorch's).
        if x1 == 0:
            return xp.where(_constant_at_zero(xp, x2), 0.0, g * conj(xp, ans * -math.inf))
        if complex_result or isinstance(x1, complex):
            log = cmath.log(x1)  # a negative base's log, where the result is complex
        else:
            log = math.log(x1) if x1 > 0 else math.nan  # as the real result there is
        return g * conj(xp, ans * log)
    if complex_result and not is_complex(xp, x1):
        x1 = xp.astype(x1, ans.dtype)  # a negative base has a complex log
    at_zero = xp.logical_and(x1 == 0, _constant_at_zero(xp, x2))
    # NOTE: take the log of 1 where the result is masked: a log(0) there would make the
    # double backward 0 * inf = nan even though where() discards it.
    return xp.where(at_zero, 0.0, g * conj(xp, ans * xp.log(xp.where(at_zero, 1.0, x1))))


def _pow(xp: Any, x1: Any, x2: Any, /) -> Any:
    if _both_integral(xp, x1, x2):
        _refuse_booleans(xp, "pow", x1, x2)
        # NumPy refuses; PyTorch and JAX gave 2 ** -1 as 0 without a word.
        negative = x2 < 0 if is_scalar(x2) else bool(xp.any(x2 < 0))
        if negative:
            raise DtypeError(
                "pow(): an integer to a negative integer power is not an integer; convert the "
                "base to a floating dtype first, e.g. x.float() ** -1"
            )
    return xp.pow(x1, x2)


def _numpy_pow(xp: Any, x1: Any, x2: Any, /) -> Any:
    """NumPy's pow, which refuses negative integer powers itself (the check above cost a fifth
    of a small ``x ** 2``); two booleans it raises as int8, which only a 1-byte result can be."""
    result = xp.pow(x1, x2)
    if result.dtype.itemsize == 1:
        _refuse_booleans(xp, "pow", x1, x2)
    return result


pow = op(
    "pow", _pow, kernels={"numpy": _numpy_pow}, vjp=(_pow_grad_base, _pow_grad_exponent),
    broadcasting=True, methods="pow",
    inplace=operator.ipow,
    promotion="mixed",
    doc="Raise ``x1 ** x2`` element-wise (the exponent's gradient is 0 where the base is 0).",
)
negative = op(
    "negative(x)", vjp=lambda xp, g, ans, x: -g, grad_fn_name="Neg",
    methods=("neg", "negative"), inplace=True, aliases="neg", doc="Negate ``-x`` element-wise.",
)
# (Tensor.positive(), PyTorch's, is the tensor itself: plugrad.pytorch_tensor_methods)
positive = op("positive(x)", vjp=lambda xp, g, ans, x: g,
              doc="Return ``+x`` element-wise (a new tensor with the same values).")
def _square(xp: Any, x: Any, /) -> Any:
    if xp.isdtype(x.dtype, "bool"):  # in PyTorch's default integer dtype (NumPy's is int8)
        x = xp.astype(x, index_dtype(xp, x))
    return xp.square(x)


def _bools_as_they_are(name: str) -> Any:
    """The backend's ``name``, giving a copy of a bool ``x`` as PyTorch's ``conj`` and ``sign``
    do (NumPy's conjugate of a bool is int8, its sign refuses one)."""

    def kernel(xp: Any, x: Any, /) -> Any:
        if xp.isdtype(x.dtype, "bool"):
            return xp.asarray(x, copy=True)
        return getattr(xp, name)(x)

    return kernel


square = op("square", _square, vjp=lambda xp, g, ans, x: 2 * g * conj(xp, x), methods="square",
            inplace=True,
            doc="Square ``x * x`` element-wise.")
sqrt = op("sqrt(x)", vjp=lambda xp, g, ans, x: g / (2 * conj(xp, ans)), methods="sqrt",
          promotion="float", inplace=True,
          doc="Square root element-wise (``nan`` below 0 for real inputs; infinite gradient at 0).")
reciprocal = op("reciprocal(x)", vjp=lambda xp, g, ans, x: -g * conj(xp, ans * ans),
                promotion="float",
                methods="reciprocal", inplace=True, doc="Reciprocal ``1 / x`` element-wise.")
rsqrt = op("rsqrt", lambda xp, x, /: 1.0 / xp.sqrt(x), standard=False, promotion="float",
           vjp=lambda xp, g, ans, x: -0.5 * g * conj(xp, ans * ans * ans), methods="rsqrt",
           inplace=True, doc="Reciprocal square root ``1 / sqrt(x)`` element-wise (PyTorch's).")


def _abs_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    if xp.isdtype(x.dtype, "complex floating"):
        # d|z|: z / |z|, taken as 0 at z == 0 (a subgradient). |z| is computed again rather
        # than read from ans, so that the output is not saved: real inputs never need it.
        modulus = xp.abs(x)
        return xp.where(modulus == 0, 0.0, g * x / safe_where_zero(xp, modulus))
    # NOTE: sign(0) == 0: the subgradient 0 at the kink, as in PyTorch.
    return g * xp.sign(x)


abs = op("abs(x)", vjp=_abs_grad, methods=("abs", "absolute"), inplace=True, aliases="absolute",
         doc="Absolute value ``|x|`` element-wise (complex: the modulus); gradient 0 at 0.")

# -- exponentials and logarithms ------------------------------------------------------

exp = op("exp(x)", vjp=lambda xp, g, ans, x: g * conj(xp, ans), methods="exp", inplace=True,
         promotion="float", doc="Exponential ``e ** x`` element-wise.")
expm1 = op("expm1(x)", vjp=lambda xp, g, ans, x: g * conj(xp, xp.exp(x)), methods="expm1",
           promotion="float", inplace=True,
           doc="``exp(x) - 1`` element-wise, accurate for small ``x``.")
exp2 = op("exp2", lambda xp, x, /: xp.pow(xp.asarray(2.0, dtype=x.dtype, device=device_of(x)), x),
          standard=False, promotion="float",
          vjp=lambda xp, g, ans, x: g * conj(xp, ans) * math.log(2.0), methods="exp2",
          inplace=True, doc="``2 ** x`` element-wise (PyTorch's).")
def _logit(xp: Any, x: Any, /, eps: float | None = None) -> Any:
    if eps is not None:
        if eps > 0.5:  # bounds crossed: PyTorch's clamp tests the lower first (NumPy's clip,
            x = xp.where(x < eps, eps, xp.where(x > 1.0 - eps, 1.0 - eps, x))  # the upper)
        else:
            x = xp.clip(x, eps, 1.0 - eps)
    return xp.log(x / (1 - x))


def _logit_grad(xp: Any, g: Any, ans: Any, x: Any, *, eps: float | None) -> Any:
    # PyTorch's: 1 / (x (1 - x)), infinite at 0 and 1; NaN outside [0, 1], where the logit
    # is NaN (a quotient rule through log(x / (1 - x)) gives numbers there); with eps, 0
    # where the clamp holds x.
    # Of |x|: g * inf at -0.0 as at 0.0 (PyTorch's), where x (1 - x) is -0.0.
    if eps is None:
        return xp.where((x < 0) | (x > 1), math.nan, g / (xp.abs(x) * (1 - x)))
    # Where the clamp holds x the slope is of 1/2, not of x (g / 0 at x = 0), so that its
    # own derivative (a second derivative, a jvp) is 0 there too, not 0 * inf = nan.
    clamped = (x < eps) | (x > 1 - eps)
    inside = xp.where(clamped, 0.5, x)
    grad = xp.where(clamped, 0.0, g / (xp.abs(inside) * (1 - inside)))
    if eps < 0:  # a clamp wider than [0, 1]: the logit is NaN outside [0, 1], held or not
        grad = xp.where((x < 0) | (x > 1), math.nan, grad)
    return grad


logit = op("logit", _logit, vjp=_logit_grad, standard=False, promotion="float",
           real_only=True, methods="logit", inplace=True,
           doc="``log(x / (1 - x))`` element-wise, ``x`` first clamped to ``[eps, 1 - eps]`` "
               "when ``eps`` is given (PyTorch's).")


log = op("log(x)", vjp=lambda xp, g, ans, x: g / conj(xp, x),
         methods="log", inplace=True, promotion="float",
         doc="Natural logarithm element-wise (``nan`` for negative inputs, ``-inf`` at 0).")
log1p = op("log1p(x)", vjp=lambda xp, g, ans, x: g / conj(xp, 1 + x), methods="log1p", inplace=True,
           promotion="float", doc="``log(1 + x)`` element-wise, accurate for small ``x``.")
log2 = op("log2(x)", vjp=lambda xp, g, ans, x: g / (conj(xp, x) * math.log(2.0)), methods="log2",
          promotion="float", inplace=True,
          doc="Base-2 logarithm element-wise.")
log10 = op("log10(x)", vjp=lambda xp, g, ans, x: g / (conj(xp, x) * math.log(10.0)),
           promotion="float", methods="log10", inplace=True, doc="Base-10 logarithm element-wise.")
logaddexp = op(
    "logaddexp(x1, x2)", promotion="float",
    # g * sigmoid(this - other), not g * exp(this - ans): an infinite input gets g, not
    # g * exp(inf - inf), and the other input 0.
    vjp=(lambda xp, g, ans, x1, x2: g * logistic(xp, x1 - x2),
         lambda xp, g, ans, x1, x2: g * logistic(xp, x2 - x1)),
    broadcasting=True, methods="logaddexp",
    real_only=True, doc="``log(exp(x1) + exp(x2))`` element-wise, without overflow.",
)

# -- trigonometric and hyperbolic -----------------------------------------------------

sin = op("sin(x)", vjp=lambda xp, g, ans, x: g * conj(xp, xp.cos(x)), methods="sin", inplace=True,
         promotion="float", doc="Sine element-wise (radians).")
cos = op("cos(x)", vjp=lambda xp, g, ans, x: -g * conj(xp, xp.sin(x)), methods="cos", inplace=True,
         promotion="float", doc="Cosine element-wise (radians).")
tan = op("tan(x)", vjp=lambda xp, g, ans, x: g * conj(xp, 1 + ans * ans), methods="tan",
         promotion="float", inplace=True,
         doc="Tangent element-wise (radians).")
sinh = op("sinh(x)", vjp=lambda xp, g, ans, x: g * conj(xp, xp.cosh(x)), methods="sinh",
          promotion="float", inplace=True,
          doc="Hyperbolic sine element-wise.")
cosh = op("cosh(x)", vjp=lambda xp, g, ans, x: g * conj(xp, xp.sinh(x)), methods="cosh",
          promotion="float", inplace=True,
          doc="Hyperbolic cosine element-wise.")
tanh = op("tanh(x)", vjp=lambda xp, g, ans, x: g * conj(xp, 1 - ans * ans), methods="tanh",
          promotion="float", inplace=True,
          doc="Hyperbolic tangent element-wise.")
asin = op("asin(x)", vjp=lambda xp, g, ans, x: g / conj(xp, xp.sqrt(1 - x * x)),
          promotion="float", methods=("asin", "arcsin"), inplace=True, aliases="arcsin",
          doc="Inverse sine element-wise; the gradient is infinite at ``x = ±1``.")
acos = op("acos(x)", vjp=lambda xp, g, ans, x: -g / conj(xp, xp.sqrt(1 - x * x)),
          promotion="float", methods=("acos", "arccos"), inplace=True, aliases="arccos",
          doc="Inverse cosine element-wise; the gradient is infinite at ``x = ±1``.")
atan = op("atan(x)", vjp=lambda xp, g, ans, x: g / conj(xp, 1 + x * x),
          promotion="float", methods=("atan", "arctan"),
          inplace=True, aliases="arctan", doc="Inverse tangent element-wise.")
asinh = op("asinh(x)", vjp=lambda xp, g, ans, x: g / conj(xp, xp.sqrt(x * x + 1)),
           promotion="float", methods=("asinh", "arcsinh"), inplace=True, aliases="arcsinh",
           doc="Inverse hyperbolic sine element-wise.")
def _acosh_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    if is_complex(xp, x):
        # (sqrt(x - 1) * sqrt(x + 1), not sqrt(x * x - 1): they differ in sign off the real line)
        return g / conj(xp, xp.sqrt(x - 1) * xp.sqrt(x + 1))
    # PyTorch's 1 / sqrt(x * x - 1): finite below -1 too (where acosh is NaN); of |x|, which
    # keeps the digits of x - 1 near 1 that x * x - 1 loses.
    magnitude = xp.abs(x)
    return g / (xp.sqrt(magnitude - 1) * xp.sqrt(magnitude + 1))


acosh = op("acosh(x)", vjp=_acosh_grad,
           promotion="float", methods=("acosh", "arccosh"), inplace=True, aliases="arccosh",
           doc="Inverse hyperbolic cosine element-wise (``x >= 1``; gradient infinite at 1).")
atanh = op("atanh(x)", vjp=lambda xp, g, ans, x: g / conj(xp, 1 - x * x),
           promotion="float", methods=("atanh", "arctanh"), inplace=True, aliases="arctanh",
           doc="Inverse hyperbolic tangent element-wise (``-1 < x < 1``).")


def _atan2_grad(xp: Any, g: Any, numerator: Any, denominator: Any, sign: float) -> Any:
    # d / (n**2 + d**2) with both divided by s = max(|n|, |d|) first: the squares underflow
    # to 0 below 1e-154 in float64 (the angle of 1e-170+1e-170j had gradient 0, not 5e169).
    # Where s is 0, inf or NaN it is 1: the plain formula, 0/0 at the origin, where the
    # gradient is 0, as in PyTorch.
    scale = xp.maximum(xp.abs(numerator), xp.abs(denominator))
    scaled = xp.isfinite(scale) & (scale != 0)
    scale = xp.where(scaled, scale, 1.0)
    n, d = numerator / scale, denominator / scale
    radius = n * n + d * d
    origin = radius == 0
    return xp.where(origin, 0.0, sign * g * d / (xp.where(origin, 1.0, radius) * scale))


atan2 = op(
    "atan2(x1, x2)", promotion="float",
    vjp=(lambda xp, g, ans, x1, x2: _atan2_grad(xp, g, x1, x2, 1.0),
         lambda xp, g, ans, x1, x2: _atan2_grad(xp, g, x2, x1, -1.0)),
    broadcasting=True, methods=("atan2", "arctan2"), inplace=True, aliases="arctan2",
    real_only=True,
    doc="Angle of the point ``(x2, x1)`` in radians, element-wise (``atan(x1 / x2)`` by quadrant).",
)
hypot = op(
    "hypot(x1, x2)", promotion="float",
    vjp=(lambda xp, g, ans, x1, x2: g * x1 / safe_where_zero(xp, ans),
         lambda xp, g, ans, x1, x2: g * x2 / safe_where_zero(xp, ans)),
    broadcasting=True, methods="hypot", inplace=True, real_only=True,
    doc="``sqrt(x1**2 + x2**2)`` element-wise, without overflow; the gradient at (0, 0) is 0.",
)

# -- complex numbers ------------------------------------------------------------------

# (Tensor.conj(), PyTorch's, is the tensor itself where it is real: plugrad.pytorch_tensor_methods)
conj_ = op("conj", _bools_as_they_are("conj"), vjp=lambda xp, g, ans, x: xp.conj(g),
           doc="Complex conjugate element-wise (real inputs are returned unchanged).")
# The rules read only x.dtype: x itself need not be kept.
# NOTE: the backend may return a view of x (NumPy does), so the result shares x's counter.
real = op("real(x)", vjp=lambda xp, g, ans, x: cast(xp, g, x.dtype), saves=(), view=True,
          doc="Real part element-wise.")
def _imag(xp: Any, x: Any, /) -> Any:
    if not is_complex(xp, x):  # NumPy would give zeros, whose gradient has no complex input
        raise DtypeError(
            f"imag() takes a complex tensor, got {x.dtype}: a real tensor has no imaginary part "
            "(use zeros_like(x) for its zeros)"
        )
    return xp.imag(x)


imag = op("imag", _imag, vjp=lambda xp, g, ans, x: cast(xp, g, x.dtype) * 1j, saves=(), view=True,
          doc="Imaginary part element-wise (of a complex tensor).")

# -- piecewise ------------------------------------------------------------------------


def _extremum_rules(loses: Any) -> tuple[Any, Any]:
    """The rules of maximum and minimum: the gradient goes to each input that does not lose."""

    def grad(xp: Any, g: Any, mine: Any, other: Any) -> Any:
        # NOTE: at ties the gradient is split evenly between the inputs (PyTorch's
        # convention), so maximum(x, x) has gradient 1 with respect to x, not 2. Where
        # either is NaN neither loses: both get the whole gradient, as in PyTorch.
        return xp.where(loses(mine, other), 0.0, xp.where(mine == other, g / 2, g))

    return (lambda xp, g, ans, x1, x2: grad(xp, g, x1, x2),
            lambda xp, g, ans, x1, x2: grad(xp, g, x2, x1))


maximum = op("maximum(x1, x2)", vjp=_extremum_rules(lambda a, b: a < b), broadcasting=True,
             promotion="mixed", methods="maximum",
             real_only=True, doc="Element-wise maximum, broadcasting; ties split the gradient.")
minimum = op("minimum(x1, x2)", vjp=_extremum_rules(lambda a, b: a > b), broadcasting=True,
             promotion="mixed", methods="minimum",
             real_only=True, doc="Element-wise minimum, broadcasting; ties split the gradient.")
def _copysign_grad(xp: Any, g: Any, ans: Any, x1: Any, x2: Any) -> Any:
    x1, x2 = _arrays(xp, x1, x2)  # a Python number's sign bit, which the standard's takes not
    return xp.where(x1 == 0, 0.0, xp.where(xp.signbit(x1) == xp.signbit(x2), g, -g))


copysign = op(
    "copysign(x1, x2)", promotion="float",
    vjp=(_copysign_grad, lambda xp, g, ans, x1, x2: xp.zeros_like(g)),
    broadcasting=True, methods="copysign", inplace=True, real_only=True,
    doc="The magnitude of ``x1`` with the sign of ``x2``, element-wise (no gradient for ``x2``).",
)
remainder = op(
    "remainder", _remainder, promotion="mixed",
    vjp=(lambda xp, g, ans, x1, x2: g, lambda xp, g, ans, x1, x2: -g * xp.floor_divide(x1, x2)),
    broadcasting=True, methods="remainder", inplace=True, real_only=True,
    doc="Remainder of ``x1 / x2`` with the sign of ``x2`` (Python's ``%``), element-wise.",
)


def _fmod(xp: Any, x1: Any, x2: Any, /) -> Any:
    x1, x2 = _arrays(xp, x1, x2)
    if xp.isdtype(xp.result_type(x1, x2), "real floating"):
        # NOTE: remainder of the magnitudes is exact; remainder(x1, x2) - x2 would round.
        return xp.copysign(xp.remainder(xp.abs(x1), xp.abs(x2)), x1)
    _refuse_integer_division_by_zero(xp, "fmod", x2)
    rest = xp.remainder(x1, x2)
    return xp.where(xp.logical_and(rest != 0, (rest < 0) != (x1 < 0)), rest - x2, rest)


fmod = op(
    "fmod", _fmod, standard=False, promotion="mixed", broadcasting=True,
    vjp=(lambda xp, g, ans, x1, x2: g, lambda xp, g, ans, x1, x2: -g * xp.trunc(x1 / x2)),
    methods="fmod", inplace=True, real_only=True,
    doc="Remainder of ``x1 / x2`` with the sign of ``x1`` (C's ``fmod``) element-wise (PyTorch's).",
)


def _nan_ignoring(keeps_x1: Any) -> Any:
    """The kernel and rules of fmax/fmin: ``x1`` where ``keeps_x1(x1, x2)`` or ``x2`` is NaN."""

    def first(xp: Any, x1: Any, x2: Any) -> Any:
        return xp.logical_or(keeps_x1(x1, x2), xp.isnan(x2))

    def kernel(xp: Any, x1: Any, x2: Any, /) -> Any:
        x1, x2 = _arrays(xp, x1, x2)
        return xp.where(first(xp, x1, x2), x1, x2)

    # NOTE: at ties the whole gradient goes to x1, as in PyTorch (maximum splits it).
    return kernel, (lambda xp, g, ans, x1, x2: xp.where(first(xp, *_arrays(xp, x1, x2)), g, 0.0),
                    lambda xp, g, ans, x1, x2: xp.where(first(xp, *_arrays(xp, x1, x2)), 0.0, g))


_fmax, _fmax_rules = _nan_ignoring(lambda x1, x2: x1 >= x2)
_fmin, _fmin_rules = _nan_ignoring(lambda x1, x2: x1 <= x2)
fmax = op("fmax", _fmax, vjp=_fmax_rules, standard=False, promotion="mixed", broadcasting=True,
          real_only=True,
          methods="fmax", doc="Element-wise maximum ignoring NaN (NaN only where both are).")
fmin = op("fmin", _fmin, vjp=_fmin_rules, standard=False, promotion="mixed", broadcasting=True,
          real_only=True,
          methods="fmin", doc="Element-wise minimum ignoring NaN (NaN only where both are).")


def _x_times_log(log: str, pole: float) -> tuple[Any, Any]:
    """The kernel and x's rule of ``x * log(y)`` (``log1p``: ``x * log1p(y)``), as PyTorch's.

    0 where ``x == 0`` unless ``y`` is NaN. The gradient for ``x`` is ``g * log(y)``
    also where ``x == 0``, but 0 there where ``y`` is at or beyond the pole of the
    logarithm (``y <= 0``, for ``log1p`` ``y <= -1``).
    """

    def kernel(xp: Any, x: Any, y: Any, /) -> Any:
        x, y = _arrays(xp, x, y)
        zero = x == 0
        out = xp.where(zero, 0.0, x * getattr(xp, log)(xp.where(zero, pole + 1.0, y)))
        return xp.where(xp.isnan(y), y, out)

    def grad_x(xp: Any, g: Any, ans: Any, x: Any, y: Any) -> Any:
        x, y = _arrays(xp, x, y)
        beyond = xp.logical_and(x == 0, y <= pole)
        logarithm = getattr(xp, log)(xp.where(beyond, pole + 1.0, y))
        logarithm = xp.where(beyond, 0.0, logarithm)
        # kernel(g, y), written so that its derivative in g is log(y) also at g == 0
        # (forward mode differentiates this rule there): g * log(y) where the log is
        # finite; where it is not, kernel's value (0 for g == 0 unless y is NaN).
        finite = xp.isfinite(logarithm)
        linear = g * xp.where(finite, logarithm, 0.0)
        kept = xp.logical_or(finite, xp.logical_and(g == 0, xp.logical_not(xp.isnan(logarithm))))
        return linear + xp.where(kept, 0.0, g * logarithm)

    return kernel, grad_x


_xlogy, _xlogy_grad_x = _x_times_log("log", 0.0)
_xlog1py, _xlog1py_grad_x = _x_times_log("log1p", -1.0)
xlogy = op(
    "xlogy", _xlogy, standard=False, promotion="float", broadcasting=True,
    vjp=(_xlogy_grad_x, lambda xp, g, ans, x, y: g * x / y),
    methods="xlogy", inplace=True, real_only=True,
    doc="``x * log(y)`` element-wise, 0 where ``x == 0`` unless ``y`` is NaN (PyTorch's).",
)
xlog1py = op(
    "xlog1py", _xlog1py, standard=False, promotion="float", broadcasting=True, namespace="nn",
    vjp=(_xlog1py_grad_x, lambda xp, g, ans, x, y: g * x / (y + 1.0)), real_only=True,
    doc="``x * log1p(y)`` element-wise, 0 where ``x == 0`` unless ``y`` is NaN (PyTorch's).",
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


def _clamp_min(xp: Any, x: Any, min: Any) -> Any:
    """PyTorch's ``clamp_min(x, min)``: ``clamp(x, min=min)``."""
    return xp.clip(x, min=min)


def _clamp_max(xp: Any, x: Any, max: Any) -> Any:
    """PyTorch's ``clamp_max(x, max)``: ``clamp(x, max=max)``."""
    return xp.clip(x, max=max)


def _clip(xp: Any, x: Any, /, min: Any = None, max: Any = None) -> Any:
    if xp.isdtype(x.dtype, "integral") and (hasattr(min, "shape") or hasattr(max, "shape")):
        # array-api-compat's clip of integers writes into array bounds in place (which fails
        # for a broadcast view, x.clamp(min=lo.expand(3))); integers have no NaN to mind.
        bounded = x if min is None else xp.maximum(x, min)
        return bounded if max is None else xp.minimum(bounded, max)
    try:
        return xp.clip(x, min, max)
    except ValueError as error:
        # array-api-strict refuses min > max ("min must be less than or equal to max"),
        # where PyTorch's max wins; another ValueError (shapes) is the kernel's to tell.
        if "less than or equal to max" not in str(error):
            raise
        return xp.minimum(xp.maximum(x, min), max)


def _clamp(xp: Any, x: Any, /, min: Any = None, max: Any = None) -> Any:
    """PyTorch's ``clamp``, which needs a bound (the standard's ``clip(x)`` copies ``x``)."""
    if min is None and max is None:
        raise ArgumentError("clamp(): give min, max or both; clip(x) without bounds copies x")
    return _clip(xp, x, min, max)


clip = op(
    "clip", _clip, inputs=("x", "min", "max"),
    vjp=(_clip_grad_x, _clip_grad_min, _clip_grad_max), broadcasting=True,
    methods={"clip": None, "clamp": _clamp, "clamp_min": _clamp_min, "clamp_max": _clamp_max},
    inplace=True, aliases={"clamp": _clamp, "clamp_min": _clamp_min, "clamp_max": _clamp_max},
    promotion="mixed", real_only=True,
    doc="Clamp ``x`` to ``[min, max]`` element-wise; ``min``/``max`` are scalars, tensors or None.",
)

# -- rounding: a zero gradient, as in PyTorch -----------------------------------------

floor = op("floor(x)", vjp=_zero, methods="floor", inplace=True, real_only=True,
           doc="Round down element-wise.")
ceil = op("ceil(x)", vjp=_zero, methods="ceil", inplace=True, real_only=True,
          doc="Round up element-wise.")


def _torch_round(xp: Any, x: Any, *, decimals: int = 0) -> Any:
    """PyTorch's ``round(x, decimals=0)``: to ``decimals`` decimal places, halves to even."""
    if isinstance(decimals, bool) or not isinstance(decimals, int):
        raise ArgumentError(f"round(): decimals must be an int, got {decimals!r}")
    if decimals == 0:
        return xp.round(x)
    if not xp.isdtype(x.dtype, ("real floating", "complex floating")):
        raise DtypeError(
            f"round(decimals={decimals}) takes a floating-point tensor, got {x.dtype}; PyTorch "
            "refuses integers too (convert with .float() first)"
        )
    return xp.round_decimals(x, decimals=decimals)


def _round_decimals(xp: Any, x: Any, /, *, decimals: int) -> Any:
    if is_half(xp, x.dtype):  # 100.1 * 1000 overflows float16: scaled in float32
        wide = _round_decimals(xp, xp.astype(x, xp.float32), decimals=decimals)
        return xp.astype(wide, x.dtype)
    places = decimals if decimals > 0 else -decimals  # (abs is the op here)
    finfo = xp.finfo(x.dtype)
    if places > 308 or 10.0**places > finfo.max:
        # A scale past the dtype's range (PyTorch's result: NaN): each finite x is its own
        # rounding to that many places, and rounds to 0 (of its sign) at that many tens.
        if decimals > 0:
            return xp.asarray(x, copy=True)
        finite = xp.isfinite(x)
        return xp.where(finite, xp.where(finite, x, 0) * 0, x)
    # (a complex number's parts are rounded apart, here and below)
    # Of x's shape: XLA turns a division by a scalar into a product with its reciprocal,
    # a unit in the last place off (JAX's -96.7 came out -96.700005, 1 in 4 of float32's).
    real = x.dtype
    if is_complex(xp, x):  # (finfo's dtype is a string on the torch backend)
        real = xp.float64 if x.dtype == xp.complex128 else xp.float32
    scale = xp.full(x.shape, 10.0**places, dtype=real, device=device_of(x))
    if decimals < 0:
        return xp.round(x / scale) * scale
    # Where x * scale would overflow, x is a whole number of 10**-decimals already
    # (PyTorch's result there: inf).
    whole = xp.abs(x) > finfo.max / 10.0**places
    return xp.where(whole, x, xp.round(xp.where(whole, 0, x) * scale) / scale)


def _round_decimals_grad(xp: Any, g: Any, ans: Any, x: Any, *, decimals: int) -> Any:
    return xp.zeros_like(g)


# round(x, decimals=n) with n != 0, one op with a zero gradient: built from where and
# asarray it passed the gradient 1 where x is kept (too large to round, or n past the range).
round_decimals = op(
    "round_decimals", _round_decimals, standard=False, namespace="nn", grad_fn_name="Round",
    vjp=_round_decimals_grad, saves=(),
    doc="``x`` rounded to ``decimals`` decimal places, halves to even; its gradient is 0.",
)


round = op("round", _bools_as_they_are("round"), vjp=_zero, methods={"round": _torch_round},
           inplace=True,
           torch_function=_torch_round,
           doc="Round to the nearest integer element-wise, halves to even (PyTorch's "
               "``decimals=``: to that many decimal places).")
trunc = op("trunc(x)", vjp=_zero, methods=("trunc", "fix"), aliases="fix",
           inplace=True, real_only=True, doc="Round towards zero element-wise.")
sign = op("sign", _bools_as_they_are("sign"), vjp=_sign_grad, methods=("sign", "sgn"),
          aliases="sgn", inplace=True,
          doc="Sign of ``x`` element-wise: -1, 0 or 1 (``x / |x|`` for complex).")

frac = op("frac", lambda xp, x, /: x - xp.trunc(x), standard=False,
          vjp=lambda xp, g, ans, x: g, methods="frac", inplace=True, real_only=True,
          doc="The fractional part ``x - trunc(x)`` element-wise, signed like ``x`` (PyTorch's).")
deg2rad = op("deg2rad", lambda xp, x, /: x * (math.pi / 180.0), standard=False, promotion="float",
             vjp=lambda xp, g, ans, x: g * (math.pi / 180.0), methods="deg2rad", inplace=True,
             real_only=True, doc="Degrees to radians element-wise (PyTorch's).")
rad2deg = op("rad2deg", lambda xp, x, /: x * (180.0 / math.pi), standard=False, promotion="float",
             vjp=lambda xp, g, ans, x: g * (180.0 / math.pi), methods="rad2deg", inplace=True,
             real_only=True, doc="Radians to degrees element-wise (PyTorch's).")


# NOTE: float16 computes in float32 (as PyTorch): pi * 1000 rounded to float16 is 3142, and
# the sine of that is 2e-4, not 0.
@half_in_float32
def _sinc(xp: Any, x: Any, /) -> Any:
    zero = x == 0
    return xp.where(zero, 1.0, xp.sin(math.pi * x) / xp.where(zero, 1.0, math.pi * x))


def _sinc_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    if is_half(xp, x.dtype):
        wide = _sinc_grad(xp, xp.astype(g, xp.float32), None, xp.astype(x, xp.float32))
        return xp.astype(wide, x.dtype)
    # Near 0 the closed form cancels (36 % off at 1e-8, 0 below 1e-10): its Taylor series,
    # -pi**2 x / 3 (1 - u/10 + u**2/280 - u**3/15120 + u**4/1330560) with u = (pi x)**2,
    # exact to rounding for |x| < 0.05, which also gives sinc's second derivative at 0.
    near = xp.abs(x) < 0.05
    safe = xp.where(near, 1.0, x)
    # Divided by x twice rather than by x * x, which underflows to 0 for a tiny x (0/0).
    slope = (math.pi * safe * xp.cos(math.pi * safe) - xp.sin(math.pi * safe)) / safe / (
        math.pi * safe
    )
    u = (math.pi * x) * (math.pi * x)
    series = x * (1.0 - u * (1 / 10 - u * (1 / 280 - u * (1 / 15120 - u / 1330560))))
    at_small = 0.0 - g * conj(xp, series) * (math.pi**2 / 3)  # 0 - (+0.0): +0.0, PyTorch's
    return xp.where(near, at_small, g * conj(xp, slope))


sinc = op("sinc", _sinc, vjp=_sinc_grad, standard=False, promotion="float", methods="sinc",
          inplace=True, doc="``sin(pi x) / (pi x)`` element-wise, 1 at 0 (PyTorch's).")


def _lerp(xp: Any, x: Any, end: Any, weight: Any, /) -> Any:
    if is_half(xp, x.dtype):  # end - x overflows float16 (60000 - -60000): in float32
        wide = xp.float32
        weight = weight if is_scalar(weight) else xp.astype(weight, wide)
        return xp.astype(_lerp(xp, xp.astype(x, wide), xp.astype(end, wide), weight), x.dtype)
    # NOTE: PyTorch's two-sided form: exact at weight 0 (x) and at weight 1 (end), chosen
    # by |weight| (a complex weight has no order; a negative one takes the form from end).
    low = x + weight * (end - x)
    high = end - (end - x) * (1 - weight)
    if is_scalar(weight):
        return low if operator.abs(weight) < 0.5 else high  # (abs is the op here)
    return xp.where(xp.abs(weight) < 0.5, low, high)


lerp = op(
    "lerp", _lerp, standard=False, promotion="mixed", broadcasting=True,
    vjp=(lambda xp, g, ans, x, end, weight: g * conj(xp, 1 - weight),
         lambda xp, g, ans, x, end, weight: g * conj(xp, weight),
         lambda xp, g, ans, x, end, weight: g * conj(xp, end - x)),
    methods="lerp", inplace=True,
    doc="``x + weight * (end - x)`` element-wise, broadcasting (PyTorch's).",
)
def _refuse_integers(xp: Any, function: str, value: Any, *arrays: Any) -> None:
    """As PyTorch: a float ``value`` with integer tensors (the sum would become float64, or
    be truncated in place), a complex ``value`` with real tensors (the sum would silently
    become complex), and ``addcdiv`` of integers (a true division)."""
    if isinstance(value, complex) and not any(
        xp.isdtype(a.dtype, "complex floating") for a in arrays if hasattr(a, "dtype")
    ):
        raise DtypeError(
            f"{function}(): value={value!r} is complex, but the tensors are real; convert them "
            "to a complex dtype first (x.to(plugrad.complex64))"
        )
    if not all(xp.isdtype(a.dtype, ("integral", "bool")) for a in arrays if hasattr(a, "dtype")):
        return
    if function == "addcdiv":
        raise DtypeError(
            "addcdiv() of integer tensors divides them truly; convert them to a floating "
            "dtype first (x.float()), or use addcmul with a floor division"
        )
    if isinstance(value, float):
        raise DtypeError(
            f"{function}(): value={value!r} is a float, but the tensors are integers; give an "
            "integer value, or convert the tensors first (x.to(plugrad.float32))"
        )


def _add_product(xp: Any, x: Any, tensor1: Any, tensor2: Any, *, value: Any) -> Any:
    return x + value * tensor1 * tensor2


def _add_quotient(xp: Any, x: Any, tensor1: Any, tensor2: Any, *, value: Any) -> Any:
    return x + value * (tensor1 / tensor2)


# float16 computes in float32 and rounds once, as PyTorch's fused kernels (addcdiv's quotient
# overflowed float16: inf for 101; addcmul's product rounded before a cancelling sum).
def _addcmul(xp: Any, x: Any, tensor1: Any, tensor2: Any, /, *, value: Any = 1) -> Any:
    value = scalar_number("addcmul", "value", value)  # (np.float64 would outrank float32)
    _refuse_integers(xp, "addcmul", value, x, tensor1, tensor2)
    return in_float32_if_half(xp, _add_product, x, tensor1, tensor2, value=value)


def _addcdiv(xp: Any, x: Any, tensor1: Any, tensor2: Any, /, *, value: Any = 1) -> Any:
    value = scalar_number("addcdiv", "value", value)  # (np.float64 would outrank float32)
    _refuse_integers(xp, "addcdiv", value, x, tensor1, tensor2)
    return in_float32_if_half(xp, _add_quotient, x, tensor1, tensor2, value=value)


def _value(value: Any) -> Any:
    return scalar_number("addcmul or addcdiv", "value", value)  # (checked in the forward)


# value may be a 0-d tensor (PyTorch's Scalar): an array param, copied when recorded
addcmul = op(
    "addcmul", _addcmul,
    vjp=(lambda xp, g, ans, x, tensor1, tensor2, *, value: g,
         lambda xp, g, ans, x, tensor1, tensor2, *, value: g * conj(xp, _value(value) * tensor2),
         lambda xp, g, ans, x, tensor1, tensor2, *, value: g * conj(xp, _value(value) * tensor1)),
    standard=False, promotion="mixed", broadcasting=True, methods="addcmul", inplace=True,
    array_params=("value",),
    doc="``x + value * tensor1 * tensor2`` element-wise, broadcasting (PyTorch's).",
)


addcdiv = op(
    "addcdiv", _addcdiv,
    vjp=(lambda xp, g, ans, x, tensor1, tensor2, *, value: g,
         lambda xp, g, ans, x, tensor1, tensor2, *, value: g * conj(xp, _value(value) / tensor2),
         lambda xp, g, ans, x, tensor1, tensor2, *, value: (
             -g * conj(xp, _value(value) * tensor1 / (tensor2 * tensor2)))),
    standard=False, promotion="mixed", broadcasting=True, methods="addcdiv", inplace=True,
    array_params=("value",),
    doc="``x + value * tensor1 / tensor2`` element-wise, broadcasting (PyTorch's).",
)


def _in_double(xp: Any, value: Any) -> Any:
    """``value`` in float64 (complex128 if complex); Python scalars as they are."""
    if is_scalar(value):
        return value
    return xp.astype(value, xp.complex128 if is_complex(xp, value) else xp.float64)


def _float_power_grad(base_rule: bool) -> Any:
    def rule(xp: Any, g: Any, ans: Any, x1: Any, x2: Any) -> Any:
        pow_rule = _pow_grad_base if base_rule else _pow_grad_exponent
        grad = pow_rule(xp, g, ans, _in_double(xp, x1), _in_double(xp, x2))
        return cast(xp, grad, (x1 if base_rule else x2).dtype)

    return rule


float_power = op(
    "float_power", lambda xp, x1, x2, /: xp.pow(_in_double(xp, x1), _in_double(xp, x2)),
    vjp=(_float_power_grad(True), _float_power_grad(False)), standard=False, broadcasting=True,
    methods="float_power",  # (float_power_: plugrad.pytorch_tensor_methods)
    doc="``x1 ** x2`` computed in float64 (complex128 for complex inputs) (PyTorch's).",
)


def _heaviside(xp: Any, x: Any, values: Any, /) -> Any:
    if not hasattr(x, "dtype"):
        raise ArgumentError(f"heaviside(): x must be a Tensor, got {type(x).__name__} {x!r}")
    if hasattr(values, "dtype") and values.dtype != x.dtype:
        raise DtypeError(
            f"heaviside(): x is {x.dtype} but values is {values.dtype}; give both one dtype, "
            "as PyTorch requires (e.g. values.to(x.dtype))"
        )
    return xp.where(x == 0, values, xp.astype(x > 0, x.dtype))


# No gradient for x (a step: 0 almost everywhere); values' where x is 0 (it had none: a
# values tensor that required grad got no .grad, silently).
heaviside = op("heaviside", _heaviside, standard=False, broadcasting=True,
               vjp=(lambda xp, g, ans, x, values: xp.zeros_like(g),
                    lambda xp, g, ans, x, values: xp.where(x == 0, g, xp.zeros_like(g))),
               methods="heaviside", inplace=True, real_only=True,
               doc="Step function element-wise: 0 below 0, ``values`` at 0, 1 above (PyTorch's).")


def _floor_divide(xp: Any, x1: Any, x2: Any, /) -> Any:
    if _both_integral(xp, x1, x2):
        _refuse_booleans(xp, "floor_divide", x1, x2)
        _refuse_integer_division_by_zero(xp, "floor_divide", x2)
    out = xp.floor_divide(x1, x2)
    if not xp.isdtype(out.dtype, "real floating"):
        return out
    # NOTE: NumPy gives nan for inf // finite and -1.0 for -1.0 // inf, where the
    # standard asks for floor(x1 / x2): +-inf and -0.0.
    a = x1 if hasattr(x1, "shape") else xp.asarray(x1, dtype=out.dtype, device=device_of(out))
    b = x2 if hasattr(x2, "shape") else xp.asarray(x2, dtype=out.dtype, device=device_of(out))
    infinite = xp.logical_or(xp.isinf(a), xp.isinf(b))
    return xp.where(infinite, xp.floor(a / b), out)


floor_divide = op("floor_divide", _floor_divide, differentiable=False, methods="floor_divide",
                  inplace=True,
                  promotion="mixed", real_only=True,
                  doc="``floor(x1 / x2)`` element-wise, broadcasting (Python's ``//``).")

def _shift(name: str) -> Any:
    """The backend's shift ``name``, refusing booleans as the standard and PyTorch do (NumPy
    shifted them as int8: ``True << True`` was 2)."""

    def kernel(xp: Any, x1: Any, x2: Any, /) -> Any:
        if _is_boolean(xp, x1) or _is_boolean(xp, x2):
            raise DtypeError(
                f"{name}() shifts integers, not booleans; convert them first (x.int())"
            )
        return getattr(xp, name)(x1, x2)

    kernel.__name__ = name
    return kernel


# -- no gradient ----------------------------------------------------------------------


def _integer_operands(xp: Any, function: str, x1: Any, x2: Any) -> tuple[Any, Any]:
    """Both operands as arrays of one integer dtype; anything else is refused, as PyTorch's."""
    array = x1 if hasattr(x1, "dtype") else x2
    if not xp.isdtype(array.dtype, "integral") or any(
        type(x) is not int for x in (x1, x2) if not hasattr(x, "dtype")
    ):
        kinds = ", ".join(getattr(x, "dtype", type(x).__name__).__str__() for x in (x1, x2))
        raise DtypeError(f"{function}() takes integer tensors, got {kinds}")
    return tuple(
        x if hasattr(x, "dtype") else xp.asarray(x, dtype=array.dtype, device=device_of(array))
        for x in (x1, x2)
    )


_PHI = (1 + math.sqrt(5)) / 2


def _gcd(xp: Any, x1: Any, x2: Any, /) -> Any:
    x1, x2 = _integer_operands(xp, "gcd", x1, x2)
    native = getattr(xp, "gcd", None)
    if native is not None:
        return native(x1, x2)
    # Euclid's algorithm on every pair at once, for as many rounds as the dtype's largest
    # numbers can need (Lame: log_phi of them), so that no value is read (lazy and traced
    # arrays stay so).
    a, b = xp.broadcast_arrays(xp.abs(x1), xp.abs(x2))
    for _ in range(math.ceil(xp.iinfo(a.dtype).bits * math.log(2) / math.log(_PHI)) + 2):
        nonzero = b != 0
        rest = xp.remainder(a, xp.where(nonzero, b, 1))
        a, b = xp.where(nonzero, b, a), xp.where(nonzero, rest, 0)
    return a


def _lcm(xp: Any, x1: Any, x2: Any, /) -> Any:
    x1, x2 = _integer_operands(xp, "lcm", x1, x2)
    native = getattr(xp, "lcm", None)
    if native is not None:
        return native(x1, x2)
    divisor = _gcd(xp, x1, x2)
    return xp.abs(xp.multiply(xp.floor_divide(x1, xp.where(divisor == 0, 1, divisor)), x2))


gcd = op("gcd", _gcd, standard=False, differentiable=False, promotion="mixed", methods="gcd",
         inplace=True, doc="Greatest common divisor of integer tensors element-wise (0 for 0, 0).")
lcm = op("lcm", _lcm, standard=False, differentiable=False, promotion="mixed", methods="lcm",
         inplace=True, doc="Least common multiple of integer tensors element-wise (0 with a 0).")

signbit = op("signbit(x)", differentiable=False, methods="signbit",
             real_only=True, doc="Whether the sign bit is set, element-wise (true for ``-0.0``).")
# The step is one ulp: the gradient is x1's (not none, which summed it as 0 into a .grad).
nextafter = op("nextafter(x1, x2)", promotion="mixed", broadcasting=True, methods="nextafter",
               vjp=(lambda xp, g, ans, x1, x2: g, lambda xp, g, ans, x1, x2: xp.zeros_like(g)),
               inplace=True, real_only=True,
               doc="The next representable value after ``x1`` towards ``x2``, element-wise.")
isnan = op("isnan(x)", differentiable=False, methods="isnan", doc="Whether each element is NaN.")
isinf = op("isinf(x)", differentiable=False, methods="isinf",
           doc="Whether each element is infinite.")
isfinite = op("isfinite(x)", differentiable=False, methods="isfinite",
              doc="Whether each element is finite (neither infinite nor NaN).")
equal = op("equal(x1, x2)", promotion="mixed", differentiable=False, methods="eq", aliases="eq",
           inplace=True,
           doc="Compare ``x1 == x2`` element-wise, broadcasting; a bool tensor.")
not_equal = op("not_equal(x1, x2)", differentiable=False, methods=("ne", "not_equal"), inplace=True,
               promotion="mixed",
               aliases="ne", doc="Compare ``x1 != x2`` element-wise, broadcasting; a bool tensor.")
less = op("less(x1, x2)", differentiable=False, methods=("lt", "less"), aliases="lt", inplace=True,
          real_only=True,
          promotion="mixed", doc="Compare ``x1 < x2`` element-wise, broadcasting; a bool tensor.")
less_equal = op("less_equal(x1, x2)", differentiable=False, methods=("le", "less_equal"),
                inplace=True,
                promotion="mixed", real_only=True,
                aliases="le", doc="Compare ``x1 <= x2`` element-wise, broadcasting; a bool tensor.")
greater = op("greater(x1, x2)", differentiable=False, methods=("gt", "greater"), aliases="gt",
             inplace=True,
             promotion="mixed",
             real_only=True, doc="Compare ``x1 > x2`` element-wise, broadcasting; a bool tensor.")
greater_equal = op("greater_equal(x1, x2)", promotion="mixed", differentiable=False,
                   methods=("ge", "greater_equal"), aliases="ge", inplace=True, real_only=True,
                   doc="Compare ``x1 >= x2`` element-wise, broadcasting; a bool tensor.")
logical_and = op("logical_and(x1, x2)", differentiable=False, methods="logical_and", inplace=True,
                 promotion="mixed", doc="Logical AND element-wise, broadcasting; a bool tensor.")
logical_or = op("logical_or(x1, x2)", promotion="mixed", differentiable=False, methods="logical_or",
                inplace=True,
                doc="Logical OR element-wise, broadcasting; a bool tensor.")
logical_xor = op("logical_xor(x1, x2)", differentiable=False, methods="logical_xor", inplace=True,
                 promotion="mixed", doc="Logical XOR element-wise, broadcasting; a bool tensor.")
logical_not = op("logical_not(x)", differentiable=False, methods="logical_not", inplace=True,
                 doc="Logical NOT element-wise; a bool tensor.")
bitwise_and = op("bitwise_and(x1, x2)", differentiable=False, methods="bitwise_and", inplace=True,
                 promotion="mixed",
                 doc="Bitwise AND of integer or bool tensors, broadcasting (``x1 & x2``).")
bitwise_or = op("bitwise_or(x1, x2)", promotion="mixed", differentiable=False, methods="bitwise_or",
                inplace=True,
                doc="Bitwise OR of integer or bool tensors, broadcasting (``x1 | x2``).")
bitwise_xor = op("bitwise_xor(x1, x2)", differentiable=False, methods="bitwise_xor", inplace=True,
                 promotion="mixed",
                 doc="Bitwise XOR of integer or bool tensors, broadcasting (``x1 ^ x2``).")
bitwise_invert = op("bitwise_invert(x)", differentiable=False,
                    methods=("bitwise_invert", "bitwise_not"), aliases="bitwise_not",
                    inplace=("bitwise_not",),
                    doc="Bitwise NOT of an integer or bool tensor (``~x``).")
bitwise_left_shift = op("bitwise_left_shift", _shift("bitwise_left_shift"), promotion="mixed",
                        differentiable=False, methods="bitwise_left_shift", inplace=True,
                        doc="Shift the bits of ``x1`` left by ``x2`` (``x1 << x2``).")
bitwise_right_shift = op("bitwise_right_shift", _shift("bitwise_right_shift"), promotion="mixed",
                         differentiable=False, methods="bitwise_right_shift", inplace=True,
                         doc="Shift the bits of ``x1`` right by ``x2`` (``x1 >> x2``).")

# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
