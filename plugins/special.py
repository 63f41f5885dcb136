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
  asymptotic series with seven Bernoulli terms; below 1/2 (``polygamma``: below
  0) the reflection formula, whose derivatives of ``cot`` are polynomials in
  ``cot`` (taken from ``x - round(x)``). ``polygamma`` sums in the scale of
  ``n! / x**(n+1)``, so no factorial nor power overflows before the result does.
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


def _digamma_series(xp: Any, y: Any) -> Any:
    """psi(y) for y at least the threshold, by the asymptotic series."""
    inverse = 1.0 / y
    total, power = xp.log(y) - 0.5 * inverse, inverse * inverse
    square = power
    for term in _BERNOULLI:
        total = total - term * power
        power = power * square
    return total


def _cot_pi(xp: Any, r: Any) -> Any:
    """``cot(pi r)`` for ``0 < |r| <= 1/2``, exactly 0 at ``r = +-1/2``: beyond 1/4 as
    ``-tan(pi (r -+ 1/2))``, whose argument is exact (``cos(pi/2)`` is 6e-17, not 0, and the
    derivatives of ``cot`` multiply it by up to ``n!``)."""
    near_half = xp.abs(r) > 0.25
    tangent = xp.tan(math.pi * xp.where(near_half, r - 0.5 * xp.sign(r), r))
    # (the division only where it is taken: tan is 0 at r = +-1/2, a warning of NumPy's)
    return xp.where(near_half, -tangent, 1.0 / xp.where(near_half, 1.0, tangent))


def _digamma_values(xp: Any, x: Any) -> Any:
    small = x < 0.5
    y = xp.where(small, 1.0 - x, x)
    infinite = xp.isinf(y)
    y = xp.where(infinite, _ASYMPTOTIC_FROM, y)
    # Shift up: psi(y) = psi(y + 1) - 1/y.
    shifts = 0.0
    for _ in range(int(_ASYMPTOTIC_FROM)):
        below = y < _ASYMPTOTIC_FROM
        safe = xp.where(y == 0.0, 1.0, y)  # a pole, whose value is set apart (no warning)
        shifts = shifts + xp.where(below, -1.0 / safe, 0.0)
        y = xp.where(below, y + 1.0, y)
    value = xp.where(infinite, math.inf, _digamma_series(xp, y) + shifts)
    # Reflection: psi(x) = psi(1 - x) - pi cot(pi x).
    fraction = _distance_to_integer(xp, x)
    pole = fraction == 0
    reflected = value - math.pi * _cot_pi(xp, xp.where(pole, 0.25, fraction))
    return xp.where(pole & (x <= 0), _pole_value(0, x), xp.where(small, reflected, value))


#: The largest n whose n! is a finite float64.
_FACTORIAL_FITS = 170
_LOG_MAX = math.log(1.7976931348623157e308)


def _factorial_over_power(xp: Any, n: int, z: Any, s: Any) -> Any:
    """``n! / z**(n+1) * s`` for ``z > 0`` and ``s >= 0``: inf where it overflows, 0 where
    it underflows, with no overflow on the way (nor its warning). Each part as such where
    they fit (a few ulps), else by its logarithm (``|log|`` ulps, up to 700)."""
    log_z = xp.log(z)
    log_scale = math.lgamma(n + 1) - (n + 1) * log_z
    log_total = log_scale + xp.log(xp.where(s > 0, s, 1.0))
    big = log_total > _LOG_MAX
    value = xp.where(big, math.inf, xp.exp(xp.where(big, 0.0, log_total)))
    if n <= _FACTORIAL_FITS:
        factorial = float(math.factorial(n))
        above = z >= 1.0
        # z >= 1: n! (s / z) / z**n (s / z is at most 2); below: n! / z**(n+1), at most
        # the result, times s.
        fits = xp.where(
            above,
            n * log_z < 700.0,
            ((n + 1) * -log_z < 700.0) & (log_scale < 709.0) & (log_total < 709.0),
        )
        zf = xp.where(fits, z, 1.0)
        direct = xp.where(above, factorial * (s / zf) / zf**n, factorial / zf ** (n + 1) * s)
        value = xp.where(fits, direct, value)
    return xp.where(s > 0, value, 0.0)


@functools.cache
def _asymptotic_coefficients(n: int) -> tuple[float, ...]:
    """``B_2k (2k+n-1)! / ((2k)! n!)``, k = 1..7: psi^(n)(y) is ``(-1)**(n+1) n!/y**(n+1)``
    times ``y/n + 1/2 + sum of these / y**(2k-1)``."""
    return tuple(
        term * math.comb(n + 2 * k - 1, 2 * k - 1) for k, term in enumerate(_BERNOULLI, start=1)
    )


def _positive_sum(xp: Any, n: int, y0: Any) -> Any:
    """``S`` with ``psi^(n)(y0) = (-1)**(n+1) n!/y0**(n+1) S`` (``n >= 1``, ``y0 > 0``).

    ``S = sum of (y0 / (y0 + k))**(n+1)`` until ``y0 + k`` reaches the threshold, then
    the asymptotic series there, in the same scale: no factorial nor power of ``y0``
    is formed (n! overflowed from n = 171, its ratios to (2k)! from n = 158).
    """
    threshold = _ASYMPTOTIC_FROM + n
    y, total = y0, 0.0
    for _ in range(int(threshold) + 1):
        below = y < threshold
        total = total + xp.where(below, (y0 / y) ** (n + 1), 0.0)
        y = xp.where(below, y + 1.0, y)
    square, series = 1.0 / (y * y), 0.0
    for coefficient in reversed(_asymptotic_coefficients(n)):
        series = (series + coefficient) * square
    return total + (y0 / y) ** (n + 1) * (y / n + 0.5 + series * y)


@functools.cache
def _cot_derivative_scaled(n: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The magnitudes of the coefficients of :func:`_cot_derivative` over n!, as
    polynomials in ``cot**2`` (from the lowest power of ``cot``, which is ``(n+1) % 2``)
    and in ``cot**-2`` (from the highest, ``n+1``), each highest degree first."""
    poly = _cot_derivative(n)
    factorial = math.factorial(n)
    low = [abs(c) / factorial for c in poly[(n + 1) % 2 :: 2]]
    return tuple(reversed(low)), tuple(low)


def _reflection_term(xp: Any, n: int, r: Any) -> Any:
    """``pi**(n+1) cot^(n)(pi r)`` for ``0 < |r| <= 1/2`` (``n >= 1``), as
    ``(-1)**n sign(r)**(n+1) n!/|r|**(n+1) B`` with ``B`` near 1 where the pole dominates.

    The coefficients of ``cot^(n)`` as a polynomial in ``c = cot`` all have the sign
    ``(-1)**n`` and its powers one parity: summed in ``c**2`` (``|c| <= 1``) or ``c**-2``
    they cancel nothing, and ``B`` keeps its digits where ``c`` is tiny (half-integers).
    """
    magnitude = xp.abs(r)
    odd_powers = n % 2 == 0
    c = _cot_pi(xp, r)
    if n > _FACTORIAL_FITS:
        # n!/|r|**(n+1) overflows for |r| <= 1/2: only the zero at a half-integer is left.
        scaled = xp.where((c == 0) & odd_powers, 0.0, 1.0)
    else:
        in_square, in_inverse = _cot_derivative_scaled(n)
        near_half = magnitude > 0.25
        ch = xp.where(near_half, c, 1.0)
        low = horner(in_square, ch * ch) if len(in_square) > 1 else in_square[0]
        low = (math.pi * magnitude) ** (n + 1) * low * (xp.abs(ch) if odd_powers else 1.0)
        cp = xp.where(near_half, 1.0, c)
        high = horner(in_inverse, 1.0 / (cp * cp)) if len(in_inverse) > 1 else in_inverse[0]
        high = xp.abs(math.pi * magnitude * cp) ** (n + 1) * high
        scaled = xp.where(near_half, low, high)
    sign = 1.0 if n % 2 == 0 else -1.0
    value = _factorial_over_power(xp, n, magnitude, scaled)
    return sign * (xp.where(r < 0, -value, value) if n % 2 == 0 else value)


def _polygamma_values(xp: Any, n: int, x: Any) -> Any:
    """``psi^(n)(x)`` for ``n >= 1``: by :func:`_positive_sum` from 0 on, by the reflection
    ``psi^(n)(x) = (-1)**n psi^(n)(1 - x) - pi**(n+1) cot^(n)(pi x)`` below, its ``cot`` taken
    from ``x - round(x)`` (exactly 0 at the half-integers: at -50.5 the last digit of
    ``cot(pi x)``, times ``n!``-sized coefficients, was the whole result)."""
    reflect = x < 0
    y0 = xp.where(reflect, 1.0 - x, x)
    ordinary = xp.isfinite(y0) & (y0 > 0)
    y0 = xp.where(ordinary, y0, 1.0)
    # psi^(n)(y0) = (-1)**(n+1) m; in the reflection (-1)**n psi^(n)(1 - x) = -m.
    m = _factorial_over_power(xp, n, y0, _positive_sum(xp, n, y0))
    value = xp.where(ordinary, m if n % 2 else -m, 0.0 if n % 2 else -0.0)
    fraction = _distance_to_integer(xp, x)
    pole = fraction == 0
    term = _reflection_term(xp, n, xp.where(pole | ~reflect, 0.25, fraction))
    # (where the term is infinite it is the result: inf - inf would be NaN)
    reflected = xp.where(xp.isinf(term), -term, -m - xp.where(xp.isinf(term), 0.0, term))
    value = xp.where(pole & (x <= 0), _pole_value(n, x), xp.where(reflect, reflected, value))
    return xp.where(xp.isnan(x), x, value)


def _pole_value(n: int, x: Any) -> Any:
    """PyTorch's values at 0 and the negative integers (the limits from the right at 0)."""
    if n:
        return math.inf if n % 2 else -math.inf
    return -math.inf  # digamma: -inf at +0; NaN at -0 and below, set by the caller


@in_float64
def _digamma(xp: Any, x: Any, /) -> Any:
    value = _digamma_values(xp, x)
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
