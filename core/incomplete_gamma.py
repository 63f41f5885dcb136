"""The regularized incomplete gamma functions, and their derivatives in the shape ``a``.

``P(a, x)``, the probability that a gamma variable of shape ``a`` (rate 1) is
below ``x``, and ``Q = 1 - P``, computed as the classic pair: the power series
of ``P`` where ``x < a + 1`` and Legendre's continued fraction of ``Q``
elsewhere, each summed until every element has converged. Both carry their
derivative in ``a`` along (forward mode, term by term), which gives the
derivative of ``P`` in ``a`` and the one a gamma sample needs for reparameterized
gradients: ``dz/da`` at a fixed probability, ``-(dP/da) / density(z)``.
Computed in float64 where the device has it. Everything here is computed under
``no_grad``; the callers define the gradients.

Examples
--------
>>> import plugrad
>>> from plugrad.incomplete_gamma import lower_regularized
>>> lower_regularized(plugrad.tensor([1.0, 2.0]), plugrad.tensor([1.0, 1.0]))
tensor([0.6321, 0.2642])
"""

from __future__ import annotations

import math

from . import dtypes as _dtypes
from . import ops as _ops
from .creation import ones_like, zeros_like
from .dtype_functions import broadcast_shapes, finfo, result_type
from .errors import ConvergenceError
from .grad_mode import no_grad
from .pytorch_names import digamma, lgamma
from .tensor import Tensor

__all__ = [
    "lower_regularized",
    "lower_regularized_derivative_in_a",
    "quantile_derivative_in_a",
    "upper_regularized",
]

#: Terms summed between two checks for convergence (each check reads a value).
_CHECK_EVERY = 8


def _widened(a: Tensor, x: Tensor) -> tuple[Tensor, Tensor, _dtypes.DType]:
    """``a`` and ``x`` broadcast, in float64 where the device has it; the result's dtype."""
    dtype = a.dtype if a.dtype == x.dtype else result_type(a, x)
    if dtype.kind != "real floating":
        dtype = _dtypes.default_float_dtype
    wide = _dtypes.float64 if _dtypes.float64 in a.device.dtypes else dtype
    shape = broadcast_shapes(a.shape, x.shape)
    return (
        _ops.broadcast_to(_ops.astype(a, wide), shape),
        _ops.broadcast_to(_ops.astype(x, wide), shape),
        dtype,
    )


def _limit(a: Tensor) -> int:
    """Terms allowed before giving up: both expansions need about ``sqrt(a)`` times a few."""
    largest = float(_ops.max(a)) if math.prod(a.shape) else 0.0
    return 200 + int(40 * math.sqrt(max(largest, 0.0)))


def _keep(
    converged: Tensor, done: Tensor, value: Tensor, value_da: Tensor, kept: Tensor, kept_da: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """Keep each element's value from the check where it first converged.

    An element that has converged is not summed on while others finish: its terms
    would go on jittering an ulp or two, and could reach an overflow.
    """
    first = converged & ~done
    return _ops.where(first, value, kept), _ops.where(first, value_da, kept_da), done | converged


def _series(a: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    """``s`` and ``ds/da`` with ``P = exp(a log x - x - lgamma(a + 1)) * s``, for ``x < a + 1``.

    ``s = sum of c_n``, ``c_0 = 1``, ``c_n = c_(n-1) * x / (a + n)``.
    """
    eps = finfo(a.dtype).eps
    term, term_da = ones_like(a), zeros_like(a)
    total, total_da = term, term_da
    kept, kept_da, done = total, total_da, zeros_like(a, dtype=_dtypes.bool)
    limit = _limit(a)
    for n in range(1, limit + 1):
        shifted = a + n
        ratio = x / shifted
        term_da = ratio * (term_da - term / shifted)
        term = term * ratio
        total, total_da = total + term, total_da + term_da
        if n % _CHECK_EVERY == 0:
            small_da = _ops.abs(term_da) <= eps * (_ops.abs(total_da) + total)
            small = (term <= eps * total) & small_da
            kept, kept_da, done = _keep(small, done, total, total_da, kept, kept_da)
            if bool(_ops.all(done)):
                return kept, kept_da
    raise ConvergenceError(
        f"the series of the incomplete gamma function did not converge in {limit} terms"
    )


def _fraction(a: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    """``f`` and ``df/da`` with ``Q = exp(a log x - x - lgamma(a)) / f``, for ``x >= a + 1``.

    Legendre's continued fraction ``f = b_0 + a_1 / (b_1 + a_2 / (b_2 + ...))`` with
    ``b_k = x + 2k + 1 - a`` and ``a_k = k (a - k)``, summed by its convergents
    ``A_n / B_n`` (rescaled at every step, which leaves their ratio and its derivative).
    """
    # The convergents jitter by an ulp or two once converged.
    eps = 4 * finfo(a.dtype).eps
    one, zero = ones_like(a), zeros_like(a)
    # The convergents before the current (A_(n-2), A_(n-1)), and their derivatives in a.
    a2, a1, b2, b1 = one, x + 1 - a, zero, one
    da2, da1, db2, db1 = zero, -one, zero, zero
    value, value_da = a1, da1
    kept, kept_da, done = value, value_da, zeros_like(a, dtype=_dtypes.bool)
    limit = _limit(a)
    for k in range(1, limit + 1):
        numerator, denominator = k * (a - k), x + (2 * k + 1) - a
        a0 = denominator * a1 + numerator * a2
        b0 = denominator * b1 + numerator * b2
        da0 = denominator * da1 - a1 + numerator * da2 + k * a2
        db0 = denominator * db1 - b1 + numerator * db2 + k * b2
        scale = 1 / b0
        a2, a1, b2, b1 = a1 * scale, a0 * scale, b1 * scale, one
        da2, da1, db2, db1 = da1 * scale, da0 * scale, db1 * scale, db0 * scale
        previous, previous_da = value, value_da
        value, value_da = a1, da1 - a1 * db1
        if k % _CHECK_EVERY == 0:
            change = _ops.abs(value - previous) <= eps * _ops.abs(value)
            change_da = _ops.abs(value_da - previous_da) <= eps * (
                _ops.abs(value_da) + _ops.abs(value)
            )
            kept, kept_da, done = _keep(change & change_da, done, value, value_da, kept, kept_da)
            if bool(_ops.all(done)):
                return kept, kept_da
    raise ConvergenceError(
        f"the continued fraction of the incomplete gamma function did not converge in {limit} terms"
    )


def _regions(a: Tensor, x: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Where each expansion applies, and ``a``, ``x`` made harmless where it does not.

    Returns ``(by_series, a_safe, x_series, x_fraction)``: values off the domain
    (NaN, ``a <= 0``, ``x <= 0``, infinities) are replaced by ones that converge
    at once; the callers put the special values back.
    """
    ordinary = (a > 0) & (x > 0) & _ops.isfinite(a) & _ops.isfinite(x)
    a_safe = _ops.where(ordinary, a, 1.0)
    by_series = ordinary & (x < a + 1)
    # Off its own region each expansion sees a point where it converges fast.
    x_series = _ops.where(by_series, x, 0.5 * a_safe)
    x_fraction = _ops.where(ordinary & ~by_series, x, 2 * a_safe + 2)
    return by_series, a_safe, x_series, x_fraction


def _special_values(a: Tensor, x: Tensor, lower: bool) -> tuple[Tensor, Tensor]:
    """Where ``P`` (``lower``) or ``Q`` has a special value, and that value (PyTorch's)."""
    invalid = (a < 0) | (x < 0) | _ops.isnan(a) | _ops.isnan(x) | ((a == 0) & (x == 0))
    # P is 1 at x = inf or a = 0 (x > 0), and 0 at x = 0 or a = inf (x finite).
    one_for_p = (x == math.inf) | (a == 0)
    zero_for_p = (x == 0) | (a == math.inf)
    special = invalid | one_for_p | zero_for_p
    p = _ops.where(one_for_p, 1.0, 0.0)
    value = p if lower else 1 - p
    return special, _ops.where(invalid, math.nan, value)


#: From this shape on, the prefactor is written around ``x = a`` (see ``_log_prefactor``).
_LARGE_SHAPE = 15.0
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _log_prefactor(a: Tensor, x: Tensor, shift: int) -> Tensor:
    """``a log x - x - lgamma(a + shift)``.

    For a large shape ``a log x``, ``x`` and ``lgamma(a)`` are huge and nearly cancel
    (P was 1e-5 off at ``a = x = 1e10``): there it is ``a (log1p(t) - t) + log(a / 2 pi) / 2
    - stirling(a)`` with ``t = (x - a) / a``, Stirling's series of ``lgamma`` made exact by
    its correction ``1/(12a) - 1/(360a^3) + ...``, which cancels nothing.
    """
    direct = a * _ops.log(x) - x - lgamma(a + shift)
    large = a >= _LARGE_SHAPE
    shape = _ops.where(large, a, _LARGE_SHAPE)  # (the other elements take the direct form)
    t = (x - shape) / shape
    inverse, inverse_square = 1 / shape, 1 / (shape * shape)
    # lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2), to 1e-17 from a = 15 on
    series = 1 / 1260 - inverse_square * (1 / 1680 - inverse_square / 1188)
    correction = inverse * (1 / 12 - inverse_square * (1 / 360 - inverse_square * series))
    # log(x / a): by log1p(t) near a (where it cancels nothing), else as a difference
    # (t would round to -1 for x far below a, and x / a could underflow).
    near = x >= 0.5 * shape
    log_ratio = _ops.where(
        near, _ops.log1p(_ops.where(near, t, 0.0)), _ops.log(x) - _ops.log(shape)
    )
    around = shape * (log_ratio - t) + 0.5 * _ops.log(shape) - _HALF_LOG_2PI - correction
    if shift:
        around = around - _ops.log(shape)
    return _ops.where(large, around, direct)


def _regularized(a: Tensor, x: Tensor, lower: bool) -> Tensor:
    with no_grad():
        a, x, dtype = _widened(a, x)
        by_series, a_safe, x_series, x_fraction = _regions(a, x)
        total, _ = _series(a_safe, x_series)
        fraction, _ = _fraction(a_safe, x_fraction)
        p = _ops.exp(_log_prefactor(a_safe, x_series, 1)) * total
        q = _ops.exp(_log_prefactor(a_safe, x_fraction, 0)) / fraction
        # Each is computed where it is small, and the other one from it.
        value = _ops.where(by_series, p, 1 - q) if lower else _ops.where(by_series, 1 - p, q)
        special, special_value = _special_values(a, x, lower)
        return _ops.astype(_ops.where(special, special_value, value), dtype)


def lower_regularized(a: Tensor, x: Tensor) -> Tensor:
    """``P(a, x)``: the regularized lower incomplete gamma function (no gradient)."""
    return _regularized(a, x, lower=True)


def upper_regularized(a: Tensor, x: Tensor) -> Tensor:
    """``Q(a, x) = 1 - P(a, x)``, computed without cancellation where it is small."""
    return _regularized(a, x, lower=False)


def lower_regularized_derivative_in_a(a: Tensor, x: Tensor) -> Tensor:
    """``dP(a, x)/da`` (no gradient); NaN where ``P`` is undefined, 0 at its limits."""
    with no_grad():
        a, x, dtype = _widened(a, x)
        by_series, a_safe, x_series, x_fraction = _regions(a, x)
        total, total_da = _series(a_safe, x_series)
        fraction, fraction_da = _fraction(a_safe, x_fraction)
        from_series = _ops.exp(_log_prefactor(a_safe, x_series, 1)) * (
            total_da + total * (_ops.log(x_series) - digamma(a_safe + 1))
        )
        q = _ops.exp(_log_prefactor(a_safe, x_fraction, 0)) / fraction
        from_fraction = -q * (_ops.log(x_fraction) - digamma(a_safe) - fraction_da / fraction)
        value = _ops.where(by_series, from_series, from_fraction)
        special, special_value = _special_values(a, x, lower=True)
        limit = _ops.where(_ops.isnan(special_value), math.nan, 0.0)
        return _ops.astype(_ops.where(special, limit, value), dtype)


def _wilson_hilferty_derivative(a: Tensor, z: Tensor) -> Tensor:
    """``dz/da`` of Wilson and Hilferty's normal approximation of a gamma quantile.

    ``z = a (1 - 1/(9a) + t / (3 sqrt(a)))**3`` for a fixed normal quantile
    ``t``: relative error about ``0.25 a**-1.5`` five deviations out (3e-11 at
    ``a = 1e7``), where the expansions would need thousands of terms.
    """
    root = _ops.sqrt(a)
    t = 3 * root * ((z / a) ** (1 / 3) - 1 + 1 / (9 * a))
    g = 1 - 1 / (9 * a) + t / (3 * root)
    return g**3 + 3 * a * g**2 * (1 / (9 * a * a) - t / (6 * a * root))


def quantile_derivative_in_a(a: Tensor, z: Tensor) -> Tensor:
    """``dz/da`` at a fixed ``P(a, z)``: how a gamma sample ``z`` of shape ``a`` moves with ``a``.

    ``-(dP/da) / density(z)``, where the exponential factors of both cancel, so
    it stays finite where they underflow. 0 at ``z = 0`` (a sample clamped there).
    From shape ``1e7`` on (``1e5`` in float32) Wilson and Hilferty's approximation,
    as accurate as the dtype there, stands for the expansions.
    """
    with no_grad():
        a, z, dtype = _widened(a, z)
        ordinary = (a > 0) & (z > 0) & _ops.isfinite(a) & _ops.isfinite(z)
        large = ordinary & (a >= (1e7 if a.dtype == _dtypes.float64 else 1e5))
        a_small, z_small = _ops.where(large, 1.0, a), _ops.where(large, 1.0, z)
        by_series, a_safe, z_series, z_fraction = _regions(a_small, z_small)
        total, total_da = _series(a_safe, z_series)
        fraction, fraction_da = _fraction(a_safe, z_fraction)
        # density(z) = exp(a log z - z - lgamma(a + 1)) * a / z = exp(a log z - z - lgamma(a)) / z
        from_series = (
            -(z_series / a_safe)
            * (total_da / total + _ops.log(z_series) - digamma(a_safe + 1))
            * total
        )
        from_fraction = (z_fraction / fraction) * (
            _ops.log(z_fraction) - digamma(a_safe) - fraction_da / fraction
        )
        value = _ops.where(by_series, from_series, from_fraction)
        a_large, z_large = _ops.where(large, a, 1.0), _ops.where(large, z, 1.0)
        value = _ops.where(large, _wilson_hilferty_derivative(a_large, z_large), value)
        undefined = _ops.isnan(a) | _ops.isnan(z) | (a <= 0) | (z < 0)
        value = _ops.where(ordinary, value, _ops.where(undefined, math.nan, 0.0))
        return _ops.astype(value, dtype)
