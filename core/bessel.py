"""Bessel functions of orders 0 and 1: ordinary (``J``, ``Y``), modified (``I``, ``K``) and
spherical (``j0``), and Airy's ``Ai``, as PyTorch's ``torch.special`` has them, with gradients.

Each is computed in float64 where the device has it, to about 1e-15 relative
(next to the zeros of ``J``, ``Y`` and ``Ai``, relative to their envelope),
from expansions derived here, not from tables of fitted coefficients:

- ``I``: its power series (every term positive) up to 20, beyond it the
  asymptotic expansion of ``exp(-x) I(x)``.
- ``K``: its series with the logarithm up to 1; beyond it the trapezoidal rule
  on ``exp(x) K_nu(x) = int_0^inf exp(-2x sinh(t/2)**2) cosh(nu t) dt``, which
  converges geometrically for this integrand (analytic in a strip, and decaying
  doubly exponentially), with the nodes spread over where it is not negligible.
- ``J`` and ``Y``: their series up to 4; up to 20, ``J_n`` by Miller's
  backward recurrence, normalized by ``J_0 + 2 (J_2 + J_4 + ...) = 1``, and ``Y``
  by Neumann's series in the ``J_2k``; beyond, Hankel's asymptotic expansion,
  whose phase ``x - pi/4`` is taken as ``cos x`` and ``sin x`` so that the
  backend's exact reduction of large arguments is kept (SciPy's and PyTorch's
  lose digits there: 1e-12 at 1e5).
- ``Ai``: its Maclaurin series on ``[-3, 1]``; right of it ``K_(1/3)`` as above,
  left of it ``J_(+-1/3)`` by Miller's recurrence (normalized by Gegenbauer's
  sum) and then its asymptotic expansion, with ``(2/3) |x|**1.5`` carried in
  two floats.

The gradients are made of these functions (``d/dx I0 = I1``, ...), so
gradients of every order exist. Where PyTorch's functions of the same values
give none (``bessel_j0``, ``modified_bessel_k0``, ``airy_ai``, ... whose results
PyTorch does not connect to the graph), these give the derivative.

Examples
--------
>>> import plugrad
>>> plugrad.special.i0(plugrad.tensor([0.0, 1.0, 2.0]))
tensor([1.0000, 1.2661, 2.2796])
>>> plugrad.special.bessel_j0(plugrad.tensor([0.0, 2.5]))
tensor([ 1.0000, -0.0484])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from . import ops as _ops
from .creation import full_like, ones_like, zeros_like
from .dtype_functions import finfo
from .function import Function, FunctionCtx
from .inplace import apply_inplace, takes_out
from .special_arguments import floating_argument, narrowed, widened
from .tensor import Tensor, install_function_methods, install_methods

__all__ = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "spherical_bessel_j0",
]

_EULER_GAMMA = 0.57721566490153286061
_TWO_OVER_PI = 2 / math.pi
_LN2 = math.log(2)


def _polynomial(u: Tensor, coefficients: Sequence[float]) -> Tensor:
    """``sum of c_k u**k`` by Horner's rule (lowest degree first)."""
    total = u * coefficients[-1] + coefficients[-2]
    for c in reversed(coefficients[:-2]):
        total = total * u + c
    return total


def _harmonic(n: int) -> Fraction:
    return sum((Fraction(1, k) for k in range(1, n + 1)), Fraction(0))


def _power_series(
    order: int, terms: int, weight: Callable[[int], Any] = lambda k: 1
) -> list[float]:
    """``weight(k) / (k! (k + order)!)``: the coefficients in ``(x/2)**2`` of the series of
    ``I_order`` (weighted), which those of ``J``, ``Y`` and ``K`` are made of."""
    return [
        float(Fraction(weight(k)) / (math.factorial(k) * math.factorial(k + order)))
        for k in range(terms)
    ]


def _alternating(coefficients: list[float]) -> list[float]:
    return [c if k % 2 == 0 else -c for k, c in enumerate(coefficients)]


def _max_exponent(dtype: Any) -> int:
    """The power of two where ``dtype`` overflows (1024 for float64)."""
    return math.frexp(finfo(dtype).max)[1]


def _asymptotic_series(order: float, terms: int) -> list[float]:
    """``a_k = prod over j <= k of (4 order**2 - (2j - 1)**2) / (8j)``: the coefficients in
    ``1/x`` of Hankel's expansions (``exp(x) K ~ sqrt(pi / 2x) sum a_k x**-k``; those of
    ``I``, ``P`` and ``Q`` take signs)."""
    mu = 4 * order * order
    coefficients, a = [], 1.0
    for k in range(terms):
        coefficients.append(a)
        a *= (mu - (2 * k + 1) ** 2) / (8 * (k + 1))
    return coefficients


# -- I -----------------------------------------------------------------------------------

_I_SERIES_UP_TO = 20.0
_I_SERIES_TERMS = 50
#: exp(-x) I(x) ~ sum (-1)**k a_k x**-k / sqrt(2 pi x); 30 terms are 1e-16 from x = 18 on.
_I_ASYMPTOTIC = {order: _alternating(_asymptotic_series(order, 30)) for order in (0, 1)}


@functools.cache
def _i_overflows_from(order: int, largest: float) -> float:
    """The ``x`` beyond which ``I_order(x)`` exceeds ``largest``: bisected on its logarithm."""
    coefficients = _I_ASYMPTOTIC[order]
    low, high = 20.0, 2 * math.log(largest) + 20

    def log_i(x: float) -> float:
        series = sum(c * x**-k for k, c in enumerate(coefficients[:8]))
        return x - 0.5 * math.log(2 * math.pi * x) + math.log(series)

    for _ in range(100):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if log_i(middle) < math.log(largest) else (low, middle)
    return low


def _modified_i(x: Tensor, order: int, scaled: bool) -> Tensor:
    """``I_order(x)``, times ``exp(-|x|)`` where ``scaled``."""
    ax = _ops.abs(x)
    small = ax <= _I_SERIES_UP_TO
    xs = _ops.where(small, ax, 0.0)
    # term by term (the coefficients 1/(k! (k+1)!) of Horner's rule underflow in float32)
    y = 0.25 * xs * xs
    term = 0.5 * xs if order == 1 else ones_like(xs)
    series = term
    for k in range(1, _I_SERIES_TERMS):
        term = term * y * (1 / (k * (k + order)))
        series = series + term
    # (infinities and NaN are left in: there each term is 0, inf or NaN without a warning)
    xl = _ops.where(small, 2 * _I_SERIES_UP_TO, ax)
    large = _polynomial(1 / xl, _I_ASYMPTOTIC[order]) / _ops.sqrt((2 * math.pi) * xl)
    if scaled:
        value = _ops.where(small, series * _ops.exp(-xs), large)
    else:
        overflows = xl > _i_overflows_from(order, finfo(x.dtype).max)
        half = _ops.exp(0.5 * _ops.where(overflows, 2 * _I_SERIES_UP_TO, xl))
        large = _ops.where(overflows, math.inf, half * (half * _ops.where(overflows, 0.0, large)))
        value = _ops.where(small, series, large)
    return _ops.where(x < 0, -value, value) if order == 1 else value


# -- K -----------------------------------------------------------------------------------

_K_SERIES_UP_TO = 1.0
_K_SERIES_TERMS = 14
#: Those of I0, I1 and of the other sums of K0, K1 (with psi(k+1) = H_k - gamma)
_K_I0_SERIES = _power_series(0, _K_SERIES_TERMS)
_K_I1_SERIES = _power_series(1, _K_SERIES_TERMS)
_K0_SERIES = _power_series(0, _K_SERIES_TERMS, _harmonic)
_K1_SERIES = _power_series(
    1, _K_SERIES_TERMS, lambda k: _harmonic(k) + _harmonic(k + 1) - 2 * Fraction(_EULER_GAMMA)
)
#: Nodes of the trapezoidal rule, and how far out they reach: to where the integrand is
#: exp(-_K_REACH) of its value at 0.
_K_NODES = 24
_K_REACH = 42.0


def _k_integral(x: Tensor, order: float) -> Tensor:
    """``exp(x) K_order(x)`` by the trapezoidal rule (for ``x`` from about 0.2 on)."""
    z = _K_REACH / x
    h = _ops.log1p(z + _ops.sqrt(z * (z + 2))) / _K_NODES  # acosh(1 + z), accurate for small z
    total = 0.5 * ones_like(x)
    for j in range(1, _K_NODES + 1):
        s = _ops.sinh((0.5 * j) * h)
        term = _ops.exp(-2 * x * s * s)
        if order == 1:
            term = term * (1 + 2 * s * s)  # cosh t
        elif order:
            term = term * _ops.cosh((order * j) * h)
        total = total + term
    return h * total


def _modified_k(x: Tensor, order: int, scaled: bool) -> Tensor:
    """``K_order(x)``, times ``exp(x)`` where ``scaled``: inf at 0, NaN below."""
    # K1 ~ 1/x, which overflows below 1/max
    infinite = (x == 0) | ((x > 0) & (x < 1 / finfo(x.dtype).max)) if order == 1 else x == 0
    small = (x > 0) & (x <= _K_SERIES_UP_TO) & ~infinite
    xs = _ops.where(small, x, 0.5)
    y, log_half = 0.25 * xs * xs, (_ops.log(xs) - _LN2)
    if order == 0:
        near = -(log_half + _EULER_GAMMA) * _polynomial(y, _K_I0_SERIES)
        near = near + _polynomial(y, _K0_SERIES)
    else:
        i1 = (0.5 * xs) * _polynomial(y, _K_I1_SERIES)
        near = 1 / xs + log_half * i1 - (0.25 * xs) * _polynomial(y, _K1_SERIES)
    if scaled:
        near = near * _ops.exp(xs)
    large = (x > _K_SERIES_UP_TO) & _ops.isfinite(x)
    xl = _ops.where(large, x, 2 * _K_SERIES_UP_TO)
    far = _k_integral(xl, order)
    if not scaled:
        far = far * _ops.exp(-xl)
    value = _ops.where(small, near, far)
    special = _ops.where(infinite, math.inf, _ops.where(x == math.inf, 0.0, math.nan))
    return _ops.where(small | large, value, special)


# -- J and Y -----------------------------------------------------------------------------

_JY_SERIES_UP_TO = 4.0
_JY_ASYMPTOTIC_FROM = 20.0
_JY_SERIES_TERMS = 24
_J_SERIES = {order: _alternating(_power_series(order, _JY_SERIES_TERMS)) for order in (0, 1)}
# Y0 = (2/pi) [(log(x/2) + gamma) J0 + sum (-1)**(k+1) H_k (x/2)**2k / k!**2]
_Y0_SERIES = [-c for c in _alternating(_power_series(0, _JY_SERIES_TERMS, _harmonic))]
# Y1 = (2/pi) [(log(x/2) + gamma) J1 - 1/x] - (x / 2pi) sum (-1)**k (H_k + H_k+1) (x/2)**2k
#      / (k! (k+1)!)
_Y1_SERIES = _alternating(
    _power_series(1, _JY_SERIES_TERMS, lambda k: _harmonic(k) + _harmonic(k + 1))
)
#: Where Miller's recurrence starts (even): J_50 is below 1e-16 of J_0 and J_1 up to x = 20.
_MILLER_START = 50
#: Neumann's series: Y0 = (2/pi) [(log(x/2) + gamma) J0 - 2 sum_k>=1 (-1)**k J_2k / k] and,
#: its derivative, Y1 = -(2/pi) [J0/x - (log(x/2) + gamma) J1 - sum over odd m of c_m J_m].
_NEUMANN_EVEN = {2 * k: (-1) ** k / k for k in range(1, _MILLER_START // 2 + 1)}
_NEUMANN_ODD = {
    2 * j + 1: (-1) ** (j + 1) * (1 / (j + 1) + (1 / j if j else 0.0))
    for j in range(_MILLER_START // 2)
}
#: P and Q of Hankel's expansion, as polynomials in 1/x**2: P = sum (-1)**i a_2i x**-2i,
#: Q = sum (-1)**i a_(2i+1) x**-(2i+1). 30 terms are 1e-16 from x = 18 on.
_HANKEL = {
    order: (
        _alternating(_asymptotic_series(order, 30)[0::2]),
        _alternating(_asymptotic_series(order, 30)[1::2]),
    )
    for order in (0, 1)
}


def _jy_series(x: Tensor, order: int, second: bool) -> Tensor:
    y = 0.25 * x * x
    j = _polynomial(y, _J_SERIES[order]) * (0.5 * x if order == 1 else 1.0)
    if not second:
        return j
    log_term = _ops.log(x) + (_EULER_GAMMA - _LN2)
    if order == 0:
        return _TWO_OVER_PI * (log_term * j + y * _polynomial(y, _Y0_SERIES[1:]))
    return _TWO_OVER_PI * (log_term * j - 1 / x) - (x / (2 * math.pi)) * _polynomial(y, _Y1_SERIES)


def _jy_miller(x: Tensor, order: int, second: bool) -> Tensor:
    """By Miller's recurrence ``J_(m-1) = (2m/x) J_m - J_(m+1)`` from ``J_51 = 0, J_50 = 1``."""
    two_over_x = 2 / x
    after, current = zeros_like(x), ones_like(x)
    norm, even_sum, odd_sum = zeros_like(x), zeros_like(x), zeros_like(x)
    shrink = current * 2.0**-32  # (a tensor: a Python number alone would be float32 in where)
    j1 = current
    for m in range(_MILLER_START, 0, -1):
        if m % 2 == 0:
            norm = norm + 2 * current
            even_sum = even_sum + _NEUMANN_EVEN[m] * current
        else:
            odd_sum = odd_sum + _NEUMANN_ODD[m] * current
        after, current = current, (m * two_over_x) * current - after
        if m == 2:
            j1 = current
        if m % 10 == 0:  # rescaled before the values could overflow (float32 ends at 2**128)
            scale = _ops.where(_ops.abs(current) > 2.0**32, shrink, 1.0)
            after, current = after * scale, current * scale
            norm, even_sum, odd_sum = norm * scale, even_sum * scale, odd_sum * scale
    norm = norm + current
    j0, j1 = current / norm, j1 / norm
    if not second:
        return j0 if order == 0 else j1
    log_term = _ops.log(x) + (_EULER_GAMMA - _LN2)
    if order == 0:
        return _TWO_OVER_PI * (log_term * j0 - 2 * even_sum / norm)
    return -_TWO_OVER_PI * (j0 / x - log_term * j1 - odd_sum / norm)


def _jy_asymptotic(x: Tensor, order: int, second: bool) -> Tensor:
    u = 1 / x
    w = u * u
    p_series, q_series = _HANKEL[order]
    p, q = _polynomial(w, p_series), u * _polynomial(w, q_series)
    c, s = _ops.cos(x), _ops.sin(x)
    # cos and sin of the phase x - pi/4 (order 0) or x - 3pi/4 (order 1), times sqrt(2)
    cos_phase, sin_phase = (c + s, s - c) if order == 0 else (s - c, -(s + c))
    scale = _ops.sqrt(1 / (math.pi * x))  # sqrt(2 / (pi x)) / sqrt(2)
    if second:
        return scale * (p * sin_phase + q * cos_phase)
    return scale * (p * cos_phase - q * sin_phase)


def _bessel_jy(x: Tensor, order: int, second: bool) -> Tensor:
    """``J_order(x)`` or (``second``) ``Y_order(x)``."""
    ax = _ops.abs(x)
    # Y1 ~ -2/(pi x) overflows there
    tiny = 1 / finfo(x.dtype).max if second and order == 1 else 0.0
    small = (ax <= _JY_SERIES_UP_TO) & ((ax > tiny) if second else ~_ops.isnan(ax))
    middle = (ax > _JY_SERIES_UP_TO) & (ax < _JY_ASYMPTOTIC_FROM)
    large = (ax >= _JY_ASYMPTOTIC_FROM) & (ax < math.inf)
    value = _ops.where(
        small,
        _jy_series(_ops.where(small, ax, 1.0), order, second),
        _ops.where(
            middle,
            _jy_miller(_ops.where(middle, ax, 10.0), order, second),
            _jy_asymptotic(_ops.where(large, ax, 30.0), order, second),
        ),
    )
    value = _ops.where(ax == math.inf, 0.0, _ops.where(_ops.isnan(x), math.nan, value))
    if second:
        return _ops.where(x > tiny, value, _ops.where(x >= 0, -math.inf, math.nan))
    return _ops.where(x < 0, -value, value) if order == 1 else value


# -- spherical j0 ------------------------------------------------------------------------

_SPHERICAL_SERIES_UP_TO = 0.5
_SPHERICAL_SERIES = _alternating([1 / math.factorial(2 * k + 1) for k in range(9)])
# d/dx sin(x)/x = sum_k>=1 (-1)**k 2k x**(2k-1) / (2k+1)!, in x**2 after a factor x
_SPHERICAL_SLOPE = _alternating([(2 * k + 2) / math.factorial(2 * k + 3) for k in range(9)])


def _spherical_j0(x: Tensor) -> Tensor:
    small = _ops.abs(x) < _SPHERICAL_SERIES_UP_TO
    xs = _ops.where(small, x, 0.0)
    xl = _ops.where(small | _ops.isinf(x), 1.0, x)
    value = _ops.where(small, _polynomial(xs * xs, _SPHERICAL_SERIES), _ops.sin(xl) / xl)
    return _ops.where(_ops.isinf(x), 0.0, value)


def _spherical_j0_slope(x: Tensor) -> Tensor:
    """``(x cos x - sin x) / x**2``, by its series next to 0 (differentiable)."""
    small = _ops.abs(x) < _SPHERICAL_SERIES_UP_TO
    xs = _ops.where(small, x, 0.0)
    xl = _ops.where(small | _ops.isinf(x), 1.0, x)
    value = _ops.where(
        small,
        -xs * _polynomial(xs * xs, _SPHERICAL_SLOPE),
        (_ops.cos(xl) - _ops.sin(xl) / xl) / xl,
    )
    return _ops.where(_ops.isinf(x), 0.0, value)


# -- Airy's Ai ---------------------------------------------------------------------------

#: Ai(0) and -Ai'(0).
_AI0 = 3 ** (-2 / 3) / math.gamma(2 / 3)
_AI0_SLOPE = 3 ** (-1 / 3) / math.gamma(1 / 3)
_AIRY_SERIES_TERMS = 20
# Ai = Ai(0) f(x) - (-Ai'(0)) g(x), f = sum x**3k / prod_j<=k (3j-1) 3j, g = sum x**(3k+1) /
# prod_j<=k 3j (3j+1): the coefficients in x**3, and those of f'/x**2 and g'
_AIRY_F = [
    1 / math.prod((3 * j - 1) * 3 * j for j in range(1, k + 1)) for k in range(_AIRY_SERIES_TERMS)
]
_AIRY_G = [
    1 / math.prod(3 * j * (3 * j + 1) for j in range(1, k + 1)) for k in range(_AIRY_SERIES_TERMS)
]
_AIRY_F_SLOPE = [3 * k * c for k, c in enumerate(_AIRY_F)][1:]
_AIRY_G_SLOPE = [(3 * k + 1) * c for k, c in enumerate(_AIRY_G)]
#: The series within these; beyond them K_(1/3) (right), J_(+-1/3) (left, up to the last),
#: and Ai's asymptotic expansion (where zeta = (2/3) |x|**1.5 is 20).
_AIRY_SERIES_RIGHT, _AIRY_SERIES_LEFT, _AIRY_ASYMPTOTIC_LEFT = 1.0, 3.0, 30 ** (2 / 3)
#: Beyond this Ai underflows (zeta above 1800).
_AIRY_ZERO_FROM = 200.0
#: Gegenbauer's (z/2)**nu = sum_k (nu + 2k) Gamma(nu + k) / k! J_(nu+2k)(z): the weights.
_GEGENBAUER = {
    nu: [
        (nu + 2 * k) * math.gamma(nu + k) / math.factorial(k) for k in range(_MILLER_START // 2 + 1)
    ]
    for nu in (1 / 3, 2 / 3)
}
#: Hankel's P and Q for the orders +-1/3 (Ai) and +-2/3 (Ai'), as for J.
_AIRY_HANKEL = {
    nu: (
        _alternating(_asymptotic_series(nu, 30)[0::2]),
        _alternating(_asymptotic_series(nu, 30)[1::2]),
    )
    for nu in (1 / 3, 2 / 3)
}
_TWO_THIRDS_HIGH = 2 / 3
_TWO_THIRDS_LOW = float(Fraction(2, 3) - Fraction(_TWO_THIRDS_HIGH))


def _airy_phase_known_to(dtype: Any) -> float:
    """Left of minus this, ``zeta`` as ``high + low`` (about ``eps**2 zeta / 16`` off) does
    not give the phase of Ai to the dtype's precision (5e12 in float64)."""
    return (1.5 * finfo(dtype).eps ** -1.2) ** (2 / 3)


def _product_error(a: Tensor, b: Tensor, product: Tensor) -> Tensor:
    """``a * b - product`` exactly, for ``product = fl(a * b)`` (Dekker's splitting)."""
    split = 2.0 ** math.ceil((1 - math.log2(finfo(a.dtype).eps)) / 2) + 1

    def halves(v: Tensor) -> tuple[Tensor, Tensor]:
        c = split * v
        high = c - (c - v)
        return high, v - high

    a_high, a_low = halves(a)
    b_high, b_low = halves(b)
    return ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low


def _two_thirds_power(y: Tensor) -> tuple[Tensor, Tensor]:
    """``zeta = (2/3) y**1.5`` as ``high + low``: ``zeta`` alone would be ``zeta`` ulps off
    (3 roundings), and Ai takes ``exp(-zeta)`` or ``cos(zeta)`` of it."""
    root = _ops.sqrt(y)
    square = root * root
    root_low = ((y - square) - _product_error(root, root, square)) / (2 * root)
    product = y * root
    product_low = _product_error(y, root, product) + y * root_low
    high = _TWO_THIRDS_HIGH * product
    low = (
        _product_error(full_like(product, _TWO_THIRDS_HIGH), product, high)
        + _TWO_THIRDS_HIGH * product_low
        + _TWO_THIRDS_LOW * product
    )
    return high, low


def _fractional_miller(z: Tensor, nu: float) -> tuple[Tensor, Tensor]:
    """``J_nu(z)`` and ``J_(nu+1)(z)`` by Miller's recurrence, normalized by Gegenbauer's sum."""
    two_over_z = 2 / z
    after, current = zeros_like(z), ones_like(z)
    shrink = current * 2.0**-32
    norm = zeros_like(z)
    weights = _GEGENBAUER[nu]
    for m in range(_MILLER_START, 0, -1):
        if m % 2 == 0:
            norm = norm + weights[m // 2] * current
        after, current = current, ((nu + m) * two_over_z) * current - after
        if m % 10 == 0:
            scale = _ops.where(_ops.abs(current) > 2.0**32, shrink, 1.0)
            after, current, norm = after * scale, current * scale, norm * scale
    factor = (0.5 * z) ** nu / (norm + weights[0] * current)
    return current * factor, after * factor


def _airy(x: Tensor, slope: bool) -> Tensor:
    """``Ai(x)``, or (``slope``) ``Ai'(x)``."""
    right = (x > _AIRY_SERIES_RIGHT) & (x < _AIRY_ZERO_FROM)
    left = x < -_AIRY_SERIES_LEFT
    middle = left & (x > -_AIRY_ASYMPTOTIC_LEFT)
    far = (x <= -_AIRY_ASYMPTOTIC_LEFT) & (x >= -_airy_phase_known_to(x.dtype))
    near = (x >= -_AIRY_SERIES_LEFT) & (x <= _AIRY_SERIES_RIGHT)
    # near 0: the Maclaurin series
    xs = _ops.where(near, x, 0.0)
    cube = xs * xs * xs
    if slope:
        series = _AI0 * (xs * xs) * _polynomial(cube, _AIRY_F_SLOPE) - _AI0_SLOPE * _polynomial(
            cube, _AIRY_G_SLOPE
        )
    else:
        series = _AI0 * _polynomial(cube, _AIRY_F) - _AI0_SLOPE * xs * _polynomial(cube, _AIRY_G)
    # x > 1: Ai = sqrt(x/3) K_(1/3)(zeta) / pi, Ai' = -x K_(2/3)(zeta) / (pi sqrt 3)
    xr = _ops.where(right, x, 2.0)
    high, low = _two_thirds_power(xr)
    decay = _ops.exp(-high) * (1 - low)
    if slope:
        on_right = -xr / (math.pi * math.sqrt(3)) * decay * _k_integral(high, 2 / 3)
    else:
        on_right = _ops.sqrt(xr / 3) / math.pi * decay * _k_integral(high, 1 / 3)
    # x < -3: Ai(-y) = sqrt(y)/3 (J_(1/3) + J_(-1/3))(zeta), Ai'(-y) = y/3 (J_(2/3) - J_(-2/3))
    ym = _ops.where(middle, -x, 5.0)
    zeta = (2 / 3) * ym * _ops.sqrt(ym)
    j_third, j_four_thirds = _fractional_miller(zeta, 1 / 3)
    j_two_thirds, j_five_thirds = _fractional_miller(zeta, 2 / 3)
    if slope:
        j_minus = (2 / 3) / zeta * j_third - j_four_thirds  # J_(-2/3), one step down
        on_middle = ym / 3 * (j_two_thirds - j_minus)
    else:
        j_minus = (4 / 3) / zeta * j_two_thirds - j_five_thirds  # J_(-1/3)
        on_middle = _ops.sqrt(ym) / 3 * (j_third + j_minus)
    # far left: Ai(-y) ~ y**-1/4 / sqrt(pi) (P cos a - Q sin a), Ai'(-y) ~ y**1/4 / sqrt(pi)
    # (P sin a + Q cos a), a = zeta - pi/4, with Hankel's P and Q of orders 1/3 and 2/3
    yf = _ops.where(far, -x, 2 * _AIRY_ASYMPTOTIC_LEFT)
    high, low = _two_thirds_power(yf)
    u = 1 / high
    p_series, q_series = _AIRY_HANKEL[2 / 3 if slope else 1 / 3]
    p, q = _polynomial(u * u, p_series), u * _polynomial(u * u, q_series)
    c, s = _ops.cos(high), _ops.sin(high)
    c_low, s_low = _ops.cos(low), _ops.sin(low)
    c, s = c * c_low - s * s_low, s * c_low + c * s_low  # of zeta = high + low
    cos_a, sin_a = (c + s) * math.sqrt(0.5), (s - c) * math.sqrt(0.5)
    quarter = _ops.sqrt(_ops.sqrt(yf))
    if slope:
        on_far = quarter / math.sqrt(math.pi) * (p * sin_a + q * cos_a)
    else:
        on_far = (p * cos_a - q * sin_a) / (quarter * math.sqrt(math.pi))
    value = _ops.where(
        near, series, _ops.where(right, on_right, _ops.where(middle, on_middle, on_far))
    )
    # beyond: Ai and Ai' are 0 right; left Ai is 0 at -inf (Ai' has no limit), and NaN
    # where its phase is not known
    beyond = _ops.where(x > 0, 0.0, _ops.where((x == -math.inf) & (not slope), 0.0, math.nan))
    value = _ops.where(near | right | middle | far, value, beyond)
    return _ops.where(_ops.isnan(x), math.nan, value)


# -- the differentiable functions --------------------------------------------------------


def _finite_at_zero(x: Tensor, limit: float, value: Callable[[Tensor], Tensor]) -> Tensor:
    """``value(x)`` (which divides by ``x``), ``limit`` at 0: differentiable on both sides."""
    zero = x == 0
    return _ops.where(zero, limit, value(_ops.where(zero, 1.0, x)))


def _elementwise(
    name: str, kernel: Callable[[Tensor], Tensor], slope: Callable[[Tensor, Tensor | None], Tensor]
) -> type[Function]:
    """A Function computing ``kernel`` in float64 (where there is one), with derivative
    ``slope(x, y)`` at ``x`` where it took the value ``y`` (made of differentiable ops;
    ``y`` is None where ``x`` was narrower: the slope is then computed at ``x`` in float64)."""

    def forward(ctx: FunctionCtx, *args: Any) -> Tensor:
        (x,) = args
        y = narrowed(kernel(widened(x)), x.dtype)
        ctx.save_for_backward(x, y)
        return y

    def backward(ctx: FunctionCtx, *grad_outputs: Tensor) -> Tensor:
        (grad,), (x, y) = grad_outputs, ctx.saved_tensors
        assert x is not None and y is not None
        wide = widened(x)
        if wide.dtype == x.dtype:
            return grad * slope(x, y)
        # A narrower x: the slope in float64, rounded once (in float32 I1's I0 - I1/x was
        # inf - inf = NaN at 100). Without y: its rounding was all of K0e's y - K1e, 2e-4
        # of the slope at 1e4.
        return grad * narrowed(slope(wide, None), x.dtype)

    return type(name, (Function,), {
        "forward": staticmethod(forward), "backward": staticmethod(backward),
        "__doc__": f"``{name}`` with its gradient.",
    })  # fmt: skip


_I0 = _elementwise("I0", lambda x: _modified_i(x, 0, False), lambda x, y: i1(x))
_I0E = _elementwise(
    "I0e",
    lambda x: _modified_i(x, 0, True),
    lambda x, y: i1e(x) - _ops.sign(x) * (i0e(x) if y is None else y),
)
#: Below this |x|, I1's slope ``I0(x) - I1(x)/x`` comes from its series: the difference
#: loses its x**2 term to rounding near 0, and with it the second derivative (3x/8 there):
#: 1e-12 relative at 0.01, 1e-15 at 0.5, where nine terms of the series reach 1e-17.
_I1_SERIES_BELOW = 0.5
#: In (x/2)**2: I1'(x) = sum of (2k+1) / ((2k+2) k!**2) (x/2)**2k, I1(x)/x = sum of
#: (x/2)**2k / (2 k! (k+1)!).
_I1_SLOPE = _power_series(0, 9, lambda k: Fraction(2 * k + 1, 2 * k + 2))
_I1_OVER_X = _power_series(1, 9, lambda k: Fraction(1, 2))


def _i1_slope(x: Tensor, scaled: bool) -> Tensor:
    """``I1'(x) = I0(x) - I1(x)/x``, or with ``scaled`` ``I1e'(x) = exp(-|x|) (I1'(x) -
    |x| I1(x)/x)``: from their series near 0, exact at every order there."""
    small = _ops.abs(x) < _I1_SERIES_BELOW
    xs = _ops.where(small, x, 0.0)
    q = 0.25 * xs * xs
    series = _polynomial(q, _I1_SLOPE)
    xf = _ops.where(small, 1.0, x)
    if scaled:
        series = _ops.exp(-_ops.abs(xs)) * (series - _ops.abs(xs) * _polynomial(q, _I1_OVER_X))
        far = _finite_at_zero(xf, 0.5, lambda s: i0e(s) - i1e(s) * (_ops.sign(s) + 1 / s))
    else:
        far = _finite_at_zero(xf, 0.5, lambda s: i0(s) - i1(s) / s)
    return _ops.where(small, series, far)


_I1 = _elementwise("I1", lambda x: _modified_i(x, 1, False), lambda x, y: _i1_slope(x, False))
_I1E = _elementwise("I1e", lambda x: _modified_i(x, 1, True), lambda x, y: _i1_slope(x, True))
_K0 = _elementwise("K0", lambda x: _modified_k(x, 0, False), lambda x, y: -modified_bessel_k1(x))
_K1 = _elementwise(
    "K1",
    lambda x: _modified_k(x, 1, False),
    lambda x, y: _finite_at_zero(
        x, -math.inf, lambda s: -modified_bessel_k0(s) - modified_bessel_k1(s) / s
    ),
)
_K0E = _elementwise(
    "K0e",
    lambda x: _modified_k(x, 0, True),
    lambda x, y: (scaled_modified_bessel_k0(x) if y is None else y) - scaled_modified_bessel_k1(x),
)
_K1E = _elementwise(
    "K1e",
    lambda x: _modified_k(x, 1, True),
    lambda x, y: _finite_at_zero(
        x,
        -math.inf,
        lambda s: scaled_modified_bessel_k1(s) * (1 - 1 / s) - scaled_modified_bessel_k0(s),
    ),
)
_J0 = _elementwise("J0", lambda x: _bessel_jy(x, 0, False), lambda x, y: -bessel_j1(x))
_J1 = _elementwise(
    "J1",
    lambda x: _bessel_jy(x, 1, False),
    lambda x, y: _finite_at_zero(x, 0.5, lambda s: bessel_j0(s) - bessel_j1(s) / s),
)
_Y0 = _elementwise("Y0", lambda x: _bessel_jy(x, 0, True), lambda x, y: -bessel_y1(x))
_Y1 = _elementwise(
    "Y1",
    lambda x: _bessel_jy(x, 1, True),
    lambda x, y: _finite_at_zero(x, math.inf, lambda s: bessel_y0(s) - bessel_y1(s) / s),
)
_AIRY_AI: type[Function] = _elementwise(
    "AiryAi", lambda x: _airy(x, False), lambda x, y: _AIRY_AI_SLOPE.apply(x)
)
# Ai'' = x Ai
_AIRY_AI_SLOPE: type[Function] = _elementwise(
    "AiryAiSlope", lambda x: _airy(x, True), lambda x, y: x * _AIRY_AI.apply(x)
)
_SPHERICAL_J0 = _elementwise(
    "SphericalJ0", _spherical_j0, lambda x, y: _spherical_j0_slope(x)
)  # fmt: skip


def _special(
    function: str, op: type[Function], description: str, examples: str, argument: str = "input"
) -> Callable[..., Tensor]:
    """PyTorch's ``torch.special.<function>``: ``op`` of a floating tensor, taking ``out=``.

    Documented by ``description`` and the doctest lines ``examples`` (they follow
    ``import plugrad``); its one parameter is named ``argument``, as PyTorch names it.
    """

    def of_input(input: Tensor) -> Tensor:
        return op.apply(floating_argument(function, input))

    def of_x(x: Tensor) -> Tensor:
        return op.apply(floating_argument(function, x))

    special = of_input if argument == "input" else of_x
    special.__name__ = special.__qualname__ = function
    special.__doc__ = f"""{description}

    Examples
    --------
    >>> import plugrad
    {examples}
    """
    return takes_out(special)


# Typed here: the gradients above call these before they are defined.
i0: Callable[..., Tensor] = _special(
    "i0",
    _I0,
    """The modified Bessel function of the first kind of order 0, ``I0``, element-wise.

    ``sum over k of (x/2)**2k / k!**2``: even, 1 at 0, growing as
    ``exp(|x|) / sqrt(2 pi |x|)`` (infinite from ``|x| = 713.99`` in float64).
    Its gradient is :func:`i1`. Integers give float32, as PyTorch's.""",
    """>>> x = plugrad.tensor([0.0, 1.0, -3.0], requires_grad=True)
    >>> plugrad.special.i0(x)
    tensor([1.0000, 1.2661, 4.8808], grad_fn=<I0Backward>)
    >>> plugrad.special.i0(x).sum().backward()
    >>> x.grad
    tensor([ 0.0000,  0.5652, -3.9534])""",
)
i0e: Callable[..., Tensor] = _special(
    "i0e",
    _I0E,
    "``exp(-|x|) I0(x)``, the exponentially scaled :func:`i0`, element-wise (finite everywhere).",
    """>>> plugrad.special.i0e(plugrad.tensor([0.0, 1.0, 1000.0]))
    tensor([1.0000, 0.4658, 0.0126])""",
)
i1: Callable[..., Tensor] = _special(
    "i1",
    _I1,
    """The modified Bessel function of the first kind of order 1, ``I1``, element-wise.

    ``sum over k of (x/2)**(2k+1) / (k! (k+1)!)``: odd. Its gradient is
    ``I0(x) - I1(x)/x``, 1/2 at 0.""",
    """>>> plugrad.special.i1(plugrad.tensor([0.0, 1.0, -3.0]))
    tensor([ 0.0000,  0.5652, -3.9534])""",
)
i1e: Callable[..., Tensor] = _special(
    "i1e",
    _I1E,
    "``exp(-|x|) I1(x)``, the exponentially scaled :func:`i1`, element-wise.",
    """>>> plugrad.special.i1e(plugrad.tensor([0.0, 1.0, -1000.0]))
    tensor([ 0.0000,  0.2079, -0.0126])""",
)
modified_bessel_i0: Callable[..., Tensor] = _special(
    "modified_bessel_i0",
    _I0,
    "``I0``, as :func:`i0` (PyTorch's second name for it), differentiable (PyTorch's is not).",
    """>>> plugrad.special.modified_bessel_i0(plugrad.tensor([1.0]))
    tensor([1.2661])""",
)
modified_bessel_i1: Callable[..., Tensor] = _special(
    "modified_bessel_i1",
    _I1,
    "``I1``, as :func:`i1` (PyTorch's second name for it), differentiable (PyTorch's is not).",
    """>>> plugrad.special.modified_bessel_i1(plugrad.tensor([1.0]))
    tensor([0.5652])""",
)
modified_bessel_k0: Callable[..., Tensor] = _special(
    "modified_bessel_k0",
    _K0,
    """The modified Bessel function of the second kind of order 0, ``K0``, element-wise.

    Infinite at 0, NaN below (PyTorch's). Differentiable (PyTorch's is not): its
    gradient is ``-K1(x)``.""",
    """>>> plugrad.special.modified_bessel_k0(plugrad.tensor([0.0, 1.0, 3.0]))
    tensor([   inf, 0.4210, 0.0347])""",
)
modified_bessel_k1: Callable[..., Tensor] = _special(
    "modified_bessel_k1",
    _K1,
    """The modified Bessel function of the second kind of order 1, ``K1``, element-wise.

    Infinite at 0, NaN below. Differentiable: its gradient is ``-K0(x) - K1(x)/x``.""",
    """>>> plugrad.special.modified_bessel_k1(plugrad.tensor([1.0, 2.0]))
    tensor([0.6019, 0.1399])""",
)
scaled_modified_bessel_k0: Callable[..., Tensor] = _special(
    "scaled_modified_bessel_k0",
    _K0E,
    """``exp(x) K0(x)``, element-wise: finite for large ``x``, where ``K0`` underflows.

    Differentiable: its gradient is ``exp(x) (K0(x) - K1(x))``.""",
    """>>> plugrad.special.scaled_modified_bessel_k0(plugrad.tensor([1.0, 1000.0]))
    tensor([1.1445, 0.0396])""",
    argument="x",
)
scaled_modified_bessel_k1: Callable[..., Tensor] = _special(
    "scaled_modified_bessel_k1",
    _K1E,
    """``exp(x) K1(x)``, element-wise.

    Differentiable: its gradient is ``exp(x) (K1(x) (1 - 1/x) - K0(x))``.""",
    """>>> plugrad.special.scaled_modified_bessel_k1(plugrad.tensor([1.0, 1000.0]))
    tensor([1.6362, 0.0396])""",
    argument="x",
)
bessel_j0: Callable[..., Tensor] = _special(
    "bessel_j0",
    _J0,
    """The Bessel function of the first kind of order 0, ``J0``, element-wise.

    Even; 0 at infinity (where PyTorch's is NaN). Differentiable (PyTorch's is
    not): its gradient is ``-J1(x)``. Accurate to about 1e-15 relative to its
    envelope ``min(1, sqrt(2 / (pi x)))``, so next to its zeros absolutely.""",
    """>>> plugrad.special.bessel_j0(plugrad.tensor([0.0, 1.0, -10.0]))
    tensor([ 1.0000,  0.7652, -0.2459])""",
)
bessel_j1: Callable[..., Tensor] = _special(
    "bessel_j1",
    _J1,
    """The Bessel function of the first kind of order 1, ``J1``, element-wise.

    Odd. Differentiable: its gradient is ``J0(x) - J1(x)/x``, 1/2 at 0.""",
    """>>> plugrad.special.bessel_j1(plugrad.tensor([0.0, 1.0, -10.0]))
    tensor([ 0.0000,  0.4401, -0.0435])""",
)
bessel_y0: Callable[..., Tensor] = _special(
    "bessel_y0",
    _Y0,
    """The Bessel function of the second kind of order 0, ``Y0``, element-wise.

    ``-inf`` at 0 and NaN below (PyTorch's). Differentiable: its gradient is ``-Y1(x)``.""",
    """>>> plugrad.special.bessel_y0(plugrad.tensor([0.0, 1.0, 10.0]))
    tensor([  -inf, 0.0883, 0.0557])""",
)
bessel_y1: Callable[..., Tensor] = _special(
    "bessel_y1",
    _Y1,
    """The Bessel function of the second kind of order 1, ``Y1``, element-wise.

    ``-inf`` at 0 and NaN below. Differentiable: its gradient is ``Y0(x) - Y1(x)/x``.""",
    """>>> plugrad.special.bessel_y1(plugrad.tensor([1.0, 10.0]))
    tensor([-0.7812,  0.2490])""",
)
spherical_bessel_j0: Callable[..., Tensor] = _special(
    "spherical_bessel_j0",
    _SPHERICAL_J0,
    """The spherical Bessel function of the first kind of order 0, ``sin(x) / x``, element-wise.

    1 at 0, 0 at infinity. Differentiable (PyTorch's is not): its gradient is
    ``(x cos x - sin x) / x**2``, by its series next to 0.""",
    """>>> plugrad.special.spherical_bessel_j0(plugrad.tensor([0.0, 1.0, 3.141592653589793]))
    tensor([ 1.0000e+00,  8.4147e-01, -2.7828e-08])""",
    argument="x",
)
airy_ai: Callable[..., Tensor] = _special(
    "airy_ai",
    _AIRY_AI,
    """Airy's function ``Ai``, element-wise: the solution of ``y'' = x y`` that decays right.

    Decaying as ``exp(-(2/3) x**1.5)`` right of 0 (0 from 200 on, in any dtype),
    oscillating left of it within ``|x|**-1/4 / sqrt(pi)``; 0 at both infinities
    (where PyTorch's is NaN). Computed from its series near 0, ``K_(1/3)`` right,
    ``J_(+-1/3)`` and then its asymptotic expansion left, with the phase
    ``(2/3) |x|**1.5`` carried in two floats; to about 1e-15 relative (next to
    its zeros, to its envelope). Left of -4e12 (float64) even so the phase is
    not known to the dtype's precision: there Ai is NaN (PyTorch's and SciPy's
    are a few digits off from -1e4 on). Differentiable (PyTorch's is not): its
    gradient is ``Ai'``, computed the same way, whose own is ``x Ai(x)``.""",
    """>>> x = plugrad.tensor([-2.0, 0.0, 2.0], requires_grad=True)
    >>> plugrad.special.airy_ai(x)
    tensor([0.2274, 0.3550, 0.0349], grad_fn=<AiryAiBackward>)
    >>> plugrad.special.airy_ai(x).sum().backward()
    >>> x.grad
    tensor([ 0.6183, -0.2588, -0.0531])""",
    argument="x",
)


def _i0_(self: Tensor) -> Tensor:
    """In-place :func:`i0`: ``x.i0_()`` makes ``x`` hold it (a floating ``x``)."""
    return apply_inplace(self, i0, name="i0_()")


install_function_methods(i0=i0)
install_methods(i0_=_i0_)
