"""Special functions: ``lgamma``, ``digamma``, ``polygamma`` and ``erfinv``.

None is a function of the standard; each is computed with the standard's
functions alone, so every backend has them, and each one's gradient is the
next (``lgamma`` -> ``digamma`` -> ``polygamma(1)`` -> ...), so gradients of
every order exist.

- ``lgamma``: Lanczos' approximation (g = 7, nine terms) above 1/2, the
  reflection formula below, and its Taylor series within 1/4 of its zeros at 1
  and 2; float64 to about 1e-15 relative.
- ``digamma`` and ``polygamma``: shifted up past a threshold by the recurrence
  ``psi(x + 1) = psi(x) + 1/x`` (differentiated for ``polygamma``), then the
  asymptotic series with seven Bernoulli terms; below 1/2 the reflection
  formula, whose derivatives of ``cot`` are polynomials in ``cot``.
- ``erfinv``: an approximation good to 2e-3, then three Halley steps on
  ``erf`` (``erfc`` in the tails, where ``1 - |y|`` is exact).

NOTE: float32 and float16 compute in float64 where the backend has it and
round once; the Lanczos sum cancels too much in float32 itself.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from plugrad.errors import ArgumentError
from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, collect_ops, op
from plugrad.plugins._error_function import erf_values, erfc_values, horner
from plugrad.plugins._rules import in_float64

# plugrad.ops.<name>, and xp.<name> in rules (as the nn ops).
special_op = functools.partial(op, standard=False, namespace="nn", promotion="float",
                               real_only=True)  # fmt: skip

_LANCZOS_G = 7.0
_LANCZOS = (
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
    -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
    1.5056327351493116e-7,
)  # fmt: skip
_HALF_LOG_TWO_PI = 0.5 * math.log(2.0 * math.pi)
# lgamma(2 + z) = sum over k >= 1 of c_k z**k: c_1 = 1 - Euler's gamma, c_k = (-1)**k
# (zeta(k) - 1) / k (highest degree first), to 1e-18 relative for |z| <= 1/4. Near its zeros
# at 1 and 2, lgamma is this series (the Lanczos sum's absolute error of 1e-16 was the whole
# value there: lgamma(1 + 1e-12) came out 1e-4 off, lgamma(2 - 1e-15) with the wrong sign).
_LGAMMA_NEAR_TWO = (
    -1.0043224823968099e-07, 2.1207184805554665e-07, -4.492469198764566e-07,
    9.55141213040742e-07, -2.039215753801366e-06, 4.374866789907488e-06,
    -9.439488275268397e-06, 2.050721277567069e-05, -4.492623673813314e-05,
    9.945751278180853e-05, -0.00022315475845357939, 0.0005096695247430425,
    -0.001192753911703261, 0.0028905103307415234, -0.007385551028673986,
    0.020580808427784546, -0.0673523010531981, 0.3224670334241132, 0.42278433509846713,
)  # fmt: skip
_NEAR_ZERO_OF_LGAMMA = 0.25
# B_2k / (2k) for k = 1..7 (B_2 = 1/6, B_4 = -1/30, ...): the asymptotic series of digamma.
_BERNOULLI = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
#: Below this, the recurrence shifts the argument up before the asymptotic series.
_ASYMPTOTIC_FROM = 10.0


def _distance_to_integer(xp: Any, x: Any) -> Any:
    """``x - round(x)``, in [-1/2, 1/2]: sin(pi x) and cot(pi x) from it lose no digits
    (0 for an infinite x, whose result is set apart: inf - inf would warn)."""
    finite = xp.where(xp.isfinite(x), x, 0.0)
    return finite - xp.round(finite)


# -- lgamma -------------------------------------------------------------------------------


def _lgamma_at_least_half(xp: Any, x: Any) -> Any:
    z = x - 1.0
    series = _LANCZOS[0]
    for k, c in enumerate(_LANCZOS[1:], start=1):
        series = series + c / (z + k)
    t = z + (_LANCZOS_G + 0.5)
    return _HALF_LOG_TWO_PI + (z + 0.5) * xp.log(t) - t + xp.log(series)


@in_float64
def _lgamma(xp: Any, x: Any, /) -> Any:
    small = x < 0.5
    # Reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x); inf at the poles.
    reflected = xp.where(small, 1.0 - x, x)
    value = _lgamma_at_least_half(xp, xp.where(xp.isfinite(reflected), reflected, 1.0))
    value = xp.where(xp.isinf(reflected), math.inf, value)
    sine = xp.abs(xp.sin(math.pi * _distance_to_integer(xp, x)))
    pole = sine == 0
    reflection = math.log(math.pi) - xp.log(xp.where(pole, 1.0, sine)) - value
    result = xp.where(small, xp.where(pole | xp.isinf(x), math.inf, reflection), value)
    near_one = xp.abs(x - 1.0) <= _NEAR_ZERO_OF_LGAMMA
    near_two = xp.abs(x - 2.0) <= _NEAR_ZERO_OF_LGAMMA
    z = xp.where(near_one, x - 1.0, xp.where(near_two, x - 2.0, 0.0))
    series = z * horner(_LGAMMA_NEAR_TWO, z)  # lgamma(2 + z); lgamma(1 + z) is it - log1p(z)
    result = xp.where(near_two, series, xp.where(near_one, series - xp.log1p(z), result))
    # -log|x| - euler_gamma * x + O(x**2), exact in float64 below 1e-100: there pi * x in
    # the reflection loses digits (a subnormal x gave log(pi / 3) too much).
    tiny = (xp.abs(x) < 1e-100) & (x != 0)
    result = xp.where(tiny, -xp.log(xp.where(tiny, xp.abs(x), 1.0)), result)
    return xp.where(xp.isnan(x), x, result)


lgamma = special_op(
    "lgamma",
    _lgamma,
    methods="lgamma",
    inplace=True,
    vjp=lambda xp, g, ans, x: g * xp.digamma(x),
    doc="The log of the absolute value of the gamma function.",
)

# -- digamma and polygamma ----------------------------------------------------------------


@functools.cache
def _cot_derivative(n: int) -> tuple[int, ...]:
    """The n-th derivative of cot(u) as a polynomial in c = cot(u), lowest power first.

    d/du cot = -(1 + c**2): each derivative is the last one's, differentiated in c,
    times -(1 + c**2).
    """
    poly = [0, 1]
    for _ in range(n):
        derived = [k * poly[k] for k in range(1, len(poly))] + [0, 0]
        poly = [-(derived[k] + (derived[k - 2] if k >= 2 else 0)) for k in range(len(derived))]
    return tuple(poly)


def _polygamma_series(xp: Any, n: int, y: Any) -> Any:
    """psi^(n)(y) for y at least the threshold, by the asymptotic series."""
    inverse = 1.0 / y
    if n == 0:
        total, power = xp.log(y) - 0.5 * inverse, inverse * inverse
        square = power
        for term in _BERNOULLI:
            total = total - term * power
            power = power * square
        return total
    # (-1)^(n+1) [(n-1)!/y^n + n!/(2 y^(n+1)) + sum B_2k (2k+n-1)!/((2k)! y^(2k+n))]
    power = inverse**n
    total = math.factorial(n - 1) * power + math.factorial(n) * 0.5 * power * inverse
    square = inverse * inverse
    power = power * square
    for k, term in enumerate(_BERNOULLI, start=1):
        coefficient = term * 2 * k * math.factorial(2 * k + n - 1) / math.factorial(2 * k)
        total = total + coefficient * power
        power = power * square
    return total if n % 2 else -total


#: From the second derivative on, arguments above this are shifted up rather than
#: reflected: the reflection cancels digits there (1e-6 relative at n = 10, x = -2.5).
_SHIFTED_FROM = -20.0


def _polygamma_values(xp: Any, n: int, x: Any) -> Any:
    small = x < (0.5 if n < 2 else _SHIFTED_FROM)
    y = xp.where(small, 1.0 - x, x)
    infinite = xp.isinf(y)
    y = xp.where(infinite, _ASYMPTOTIC_FROM, y)
    # Shift up: psi^(n)(y) = psi^(n)(y + 1) - (-1)^(n+1) n! / y^(n+1) (-1/y for digamma).
    threshold = _ASYMPTOTIC_FROM + n
    sign = 1.0 if n % 2 else -1.0
    factor = sign * math.factorial(n)
    shifts = 0.0
    for _ in range(int(threshold) + (0 if n < 2 else 1 - int(_SHIFTED_FROM))):
        below = y < threshold
        safe = xp.where(y == 0.0, 1.0, y)  # a pole, whose value is set apart (no warning)
        term = factor / safe ** (n + 1) if n else -1.0 / safe
        shifts = shifts + xp.where(below, term, 0.0)
        y = xp.where(below, y + 1.0, y)
    value = _polygamma_series(xp, n, y) + shifts
    if n == 0:
        value = xp.where(infinite, math.inf, value)
    else:
        value = xp.where(infinite, 0.0 if n % 2 else -0.0, value)
    # Reflection: psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) cot^(n)(pi x).
    fraction = _distance_to_integer(xp, x)
    pole = fraction == 0
    angle = math.pi * xp.where(pole, 0.25, fraction)
    cot = xp.cos(angle) / xp.sin(angle)
    poly = _cot_derivative(n)
    cot_derivative = poly[-1] * 1.0
    for coefficient in reversed(poly[:-1]):
        cot_derivative = cot_derivative * cot + coefficient
    reflected = (1.0 if n % 2 == 0 else -1.0) * value - math.pi ** (n + 1) * cot_derivative
    at_pole = _pole_value(n, x)
    return xp.where(pole & (x <= 0), at_pole, xp.where(small, reflected, value))


def _pole_value(n: int, x: Any) -> Any:
    """PyTorch's values at 0 and the negative integers (the limits from the right at 0)."""
    if n:
        return math.inf if n % 2 else -math.inf
    return -math.inf  # digamma: -inf at +0; NaN at -0 and below, set by the caller


@in_float64
def _digamma(xp: Any, x: Any, /) -> Any:
    value = _polygamma_values(xp, 0, x)
    # PyTorch's: +inf at -0.0, NaN at the negative integers and at -inf.
    negative_zero = xp.logical_and(x == 0, xp.signbit(x))
    at_negative_integer = xp.logical_and(x < 0, _distance_to_integer(xp, x) == 0)
    value = xp.where(negative_zero, math.inf, value)
    return xp.where(xp.logical_or(at_negative_integer, x == -math.inf), math.nan, value)


digamma = special_op(
    "digamma",
    _digamma,
    methods="digamma",
    inplace=True,
    vjp=lambda xp, g, ans, x: g * xp.polygamma(x, n=1),
    doc="The digamma function, the derivative of ``lgamma``.",
)


@in_float64
def _polygamma(xp: Any, x: Any, /, *, n: int) -> Any:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ArgumentError(f"polygamma(): n must be a non-negative int, got {n!r}")
    if n == 0:
        return _digamma(xp, x)
    value = _polygamma_values(xp, n, x)
    return xp.where(x == -math.inf, math.nan, value)


polygamma = special_op(
    "polygamma",
    _polygamma,
    vjp=lambda xp, g, ans, x, *, n: g * xp.polygamma(x, n=n + 1),
    doc="The ``n``-th derivative of ``digamma``.",
)

# -- erfinv -------------------------------------------------------------------------------

_WINITZKI_A = 0.147
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@in_float64
def _erfinv(xp: Any, y: Any, /) -> Any:
    a = xp.abs(y)
    inside = a < 1.0
    safe = xp.where(inside, a, 0.5)
    # Winitzki's closed form, good to 2e-3, then Halley's steps on erf (erfc in the tails).
    log_term = xp.log1p(-safe * safe)
    first = 2.0 / (math.pi * _WINITZKI_A) + 0.5 * log_term
    x = xp.sqrt(xp.sqrt(first * first - log_term / _WINITZKI_A) - first)
    tail = safe > 0.5
    complement = 1.0 - safe  # exact for safe >= 1/2
    for _ in range(3):
        slope = _TWO_OVER_SQRT_PI * xp.exp(-(x * x))
        residual = xp.where(tail, complement - erfc_values(xp, x), erf_values(xp, x) - safe)
        step = residual / slope
        x = x - step / (1.0 + x * step)
    beyond = xp.where(a == 1.0, xp.full_like(a, math.inf), xp.full_like(a, math.nan))
    x = xp.where(inside, x, beyond)
    return xp.where(y < 0, -x, xp.where(y == 0, y, x))


erfinv = special_op(
    "erfinv",
    _erfinv,
    methods="erfinv",
    inplace=True,
    # erfinv(y) computed again, as PyTorch's rule does, rather than saved: the output may
    # then change in place (erfinv(y).mul_(2)) before backward.
    vjp=lambda xp, g, ans, y: g * (0.5 * math.sqrt(math.pi)) * xp.exp(xp.square(xp.erfinv(y))),
    doc="The inverse of the error function, on (-1, 1).",
)


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
