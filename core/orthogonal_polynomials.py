"""The classical orthogonal polynomials of ``torch.special``: Chebyshev's four kinds (also
shifted to ``[0, 1]``), Hermite's two, Laguerre's and Legendre's.

Each is ``p_n(x)`` for tensors (or one number) ``x`` and ``n``, by its three-term
recurrence, in float64 where the device has it, with PyTorch's conventions:
``n`` is truncated to an integer, and the polynomial is 0 where ``n`` is
negative (or NaN or infinite); at ``x = +-1`` the Chebyshev and Legendre
polynomials have their exact values. The Chebyshev polynomials of degree above
6 are their trigonometric forms for ``|x| < 1`` (``T_n(cos t) = cos(nt)``, ...),
as PyTorch's, and above 64 their hyperbolic ones for ``|x| > 1``, so that their
cost does not grow with ``n``; the others take ``max(n)`` steps of array
arithmetic, up to degree 100000 (a higher one where the recurrence would run
is a :class:`~plugrad.errors.NotSupportedError`). The running values are
rescaled by powers of two as they grow, so that a value beyond the dtype's
range is infinite with its sign (so at ``x = +-inf`` too), where PyTorch's
recurrence gives NaN.

Not differentiable, as PyTorch's: the result does not require grad.

Examples
--------
>>> import plugrad
>>> plugrad.special.chebyshev_polynomial_t(plugrad.tensor([0.5, 2.0]), 3)
tensor([-1., 26.])
>>> plugrad.special.legendre_polynomial_p(plugrad.tensor([0.5]), plugrad.tensor([0, 1, 2]))
tensor([ 1.0000,  0.5000, -0.1250])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import dtypes as _dtypes
from . import ops as _ops
from .creation import zeros_like
from .dtype_functions import broadcast_shapes, finfo
from .errors import NotSupportedError
from .grad_mode import no_grad
from .inplace import takes_out
from .lazy import settle
from .pytorch_names import lgamma
from .pytorch_tensor_methods import ldexp
from .special_arguments import as_tensor_like, common_float_dtype, narrowed, widened
from .tensor import Tensor, _wrap

__all__ = [
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
]

_LN2 = math.log(2)
#: Chebyshev polynomials of degree above these are in closed form, within and beyond [-1, 1].
_TRIGONOMETRIC_FROM = 6
_HYPERBOLIC_FROM = 64
#: The highest degree the others' recurrence runs to: a step is a dozen array operations from
#: Python, some microseconds each, so that this many take a second or two (NumPy, 100 elements).
_MAX_DEGREE = 100_000


@dataclass(frozen=True)
class _Family:
    """A family: ``p_0 = 1``, ``p_1 = first(x)``, ``p_(k+1) = step(k, x, p_k, p_(k-1))`` (on
    the backend's arrays, with their operators alone);
    its leading coefficient ``c_n`` as ``log |c_n|`` and sign; and, for Chebyshev's,
    ``closed(x, n)``: ``(where, value)`` for the elements whose value is in closed form."""

    first: Callable[[Tensor], Tensor]
    step: Callable[[int, Any, Any, Any], Any]
    log_leading: Callable[[Tensor], Tensor]
    leading_sign: Callable[[Tensor], Tensor | float] = lambda n: 1.0
    closed: Callable[[Tensor, Tensor], tuple[Tensor, Tensor]] | None = None


def _parity(n: Tensor) -> Tensor:
    """``(-1)**n``."""
    return _ops.where(_ops.remainder(n, 2) == 1, -1.0, 1.0)


def _max_exponent(dtype: _dtypes.DType) -> int:
    """The power of two where ``dtype`` overflows (1024 for float64)."""
    return math.frexp(finfo(dtype).max)[1]


def _recurrence(function: str, family: _Family, x: Tensor, n: Tensor) -> Tensor:
    """``p_n(x)`` for each element at its own ``n >= 0`` (``|x|`` at most ``2**(m/4)``, the
    dtype overflowing at ``2**m``).

    The two running values are divided by ``2**(m/2)`` whenever they pass it (exactly),
    and the divisions counted, so that nothing overflows on the way and a value beyond
    the dtype comes out infinite. The loop runs on the backend's arrays: ``max(n)`` steps
    of Tensor operations would cost their dispatch each.
    """
    bits = _max_exponent(x.dtype) // 2
    scale = 2.0**bits
    steps = int(float(_ops.max(n))) if math.prod(n.shape) else 0
    if steps > _MAX_DEGREE:
        raise NotSupportedError(
            f"special.{function}: degree {steps} is above {_MAX_DEGREE}, the highest its "
            "recurrence runs to (a step per degree, each a dozen array operations); use "
            f"degrees of at most {_MAX_DEGREE}, and evaluate the elements of higher degree "
            "apart, another way (an asymptotic expansion)"
        )
    first = family.first(x)
    result = _ops.where(n == 0, 1.0, _ops.where(n == 1, first, 0.0))
    device = x._device
    xp, backend = device.xp, device.backend
    xa, na, result_a = x._array, n._array, result._array
    one = xp.ones_like(xa)
    zero, shrink = xp.zeros_like(xa), one / scale
    times = result_times = zero
    previous, current = one, first._array
    # the steps before the lowest degree above 1 have no element to give their value to
    lowest = int(float(_ops.min(_ops.where(n > 1, n, math.inf)))) if steps > 1 else steps
    for k in range(1, steps):
        previous, current = current, family.step(k, xa, current, previous)
        large = xp.abs(current) > scale
        factor = xp.where(large, shrink, one)
        previous, current = previous * factor, current * factor
        times = times + xp.where(large, one, zero)
        if k + 1 >= lowest:
            reached = na == k + 1
            result_a = xp.where(reached, current, result_a)
            result_times = xp.where(reached, times, result_times)
        if backend.lazy:  # as plugrad's kernels do: a graph that only grows costs ever more
            settle(backend, (previous, current, times, result_a, result_times))
    result = _wrap(result_a, device, False, None)
    exponent = bits * _wrap(result_times, device, False, None)
    log2_size = _ops.log2(_ops.where(result == 0, 1.0, _ops.abs(result))) + exponent
    overflows = (log2_size >= _max_exponent(x.dtype)) & (result != 0)
    infinite = _ops.where(result > 0, math.inf, -math.inf)
    return _ops.where(overflows, infinite, ldexp(result, _ops.where(overflows, 0.0, exponent)))


def _leading_term(family: _Family, x: Tensor, n: Tensor) -> Tensor:
    """``c_n x**n``: the polynomial where ``|x|`` is so large that its other terms are below
    the rounding of this one (relatively ``n**2 / x`` at most), and at ``x = +-inf``."""
    ax = _ops.abs(x)
    log_coefficient = family.log_leading(n)
    log_value = log_coefficient + n * _ops.log(_ops.where(n == 0, 1.0, ax))
    overflows = log_value > math.log(finfo(x.dtype).max)
    power = _ops.where(overflows, 1.0, ax) ** _ops.where(overflows, 0.0, n)
    coefficient = _ops.exp(_ops.where(overflows, 0.0, log_coefficient))
    value = _ops.where(n == 0, 1.0, _ops.where(overflows, math.inf, power * coefficient))
    return family.leading_sign(n) * _ops.where(x < 0, _parity(n), 1.0) * value


def _evaluate(function: str, family: _Family, x: Any, n: Any, shifted: bool = False) -> Tensor:
    """``p_n(x)`` of ``family`` (at ``2x - 1`` where ``shifted``), by PyTorch's conventions."""
    dtype = common_float_dtype(function, x, n, ("x", "n"))
    with no_grad():
        xw = widened(as_tensor_like(x, dtype, n).detach())
        nw = as_tensor_like(n, xw.dtype, x).detach()  # from n itself: an int64 n stays exact
        shape = broadcast_shapes(xw.shape, nw.shape)
        xw, nw = _ops.broadcast_to(xw, shape), _ops.broadcast_to(nw, shape)
        # truncated first: a degree in (-1, 0) is 0
        truncated = _ops.trunc(_ops.where(_ops.abs(nw) < math.inf, nw, -1.0))
        valid = truncated >= 0
        n = _ops.where(valid, truncated, 0.0)
        if shifted:
            beyond = _ops.abs(xw) >= 0.25 * finfo(xw.dtype).max  # where 2x - 1 would overflow
            doubled = 2 * _ops.where(beyond, 0.0, xw) - 1
            xw = _ops.where(beyond, _ops.where(xw > 0, math.inf, -math.inf), doubled)
        nan = _ops.isnan(xw)
        # beyond this the other terms are below the rounding of the leading one
        huge = _ops.abs(xw) > 2.0 ** (_max_exponent(xw.dtype) // 4)
        xs = _ops.where(huge | nan, 0.0, xw)
        if family.closed is None:
            known, known_value = zeros_like(xs) != 0, zeros_like(xs)
        else:
            known, known_value = family.closed(xs, n)
        recurring = valid & ~huge & ~nan & ~known
        value = _recurrence(function, family, xs, _ops.where(recurring, n, 0.0))
        value = _ops.where(known, known_value, value)
        far = _leading_term(family, _ops.where(huge, xw, 2.0 ** (_max_exponent(xw.dtype) // 4)), n)
        value = _ops.where(huge, far, value)
        value = _ops.where(nan & (n > 0), math.nan, value)
        return narrowed(_ops.where(valid, value, 0.0), dtype)


# -- Chebyshev ---------------------------------------------------------------------------


def _chebyshev_edges(kind: str, x: Tensor, n: Tensor) -> Tensor:
    """The values at ``x = 1`` and ``x = -1``."""
    at_one, sign = x == 1, _parity(n)
    if kind == "t":
        return _ops.where(at_one, 1.0, sign)
    if kind == "u":
        return (n + 1) * _ops.where(at_one, 1.0, sign)
    if kind == "v":
        return _ops.where(at_one, 1.0, sign * (2 * n + 1))
    return _ops.where(at_one, 2 * n + 1, sign)


def _chebyshev_trigonometric(kind: str, x: Tensor, n: Tensor) -> Tensor:
    """For ``|x| < 1``, ``x = cos t``: ``T_n = cos(nt)``, ``U_n = sin((n+1)t) / sin t``,
    ``V_n = cos((n+1/2)t) / cos(t/2)``, ``W_n = sin((n+1/2)t) / sin(t/2)``."""
    t = _ops.acos(x)
    if kind == "t":
        return _ops.cos(n * t)
    if kind == "u":
        return _ops.sin((n + 1) * t) / _ops.sin(t)
    if kind == "v":
        return _ops.cos((n + 0.5) * t) / _ops.cos(0.5 * t)
    return _ops.sin((n + 0.5) * t) / _ops.sin(0.5 * t)


def _chebyshev_hyperbolic(kind: str, x: Tensor, n: Tensor) -> Tensor:
    """For ``|x| = cosh a > 1``: ``T_n = cosh(na)``, ``U_n = sinh((n+1)a) / sinh a`` (times
    ``(-1)**n`` for ``x < 0``), and for ``x > 1`` ``V_n = cosh((n+1/2)a) / cosh(a/2)``,
    ``W_n = sinh((n+1/2)a) / sinh(a/2)`` (``V_n(x) = (-1)**n W_n(-x)`` and the reverse).

    Each is ``exp(na)`` times a factor of order 1, taken in one exponential so that it
    overflows only where the value does.
    """
    a = _ops.acosh(_ops.abs(x))
    negative = x < 0
    if kind == "t":
        log_factor = _ops.log1p(_ops.exp(-2 * n * a)) - _LN2
    elif kind == "u":
        log_factor = _ops.log(_ops.expm1(-2 * (n + 1) * a) / _ops.expm1(-2 * a))
    else:
        cosh_form = _ops.log1p(_ops.exp(-(2 * n + 1) * a)) - _ops.log1p(_ops.exp(-a))
        sinh_form = _ops.log(_ops.expm1(-(2 * n + 1) * a) / _ops.expm1(-a))
        log_factor = _ops.where(negative if kind == "w" else ~negative, cosh_form, sinh_form)
    log_value = n * a + log_factor
    overflows = log_value > math.log(finfo(x.dtype).max)
    value = _ops.where(overflows, math.inf, _ops.exp(_ops.where(overflows, 0.0, log_value)))
    return _ops.where(negative, _parity(n), 1.0) * value


def _chebyshev_closed(kind: str) -> Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]:
    def closed(x: Tensor, n: Tensor) -> tuple[Tensor, Tensor]:
        edge = (x == 1) | (x == -1)
        inside = (_ops.abs(x) < 1) & (n > _TRIGONOMETRIC_FROM)
        outside = (_ops.abs(x) > 1) & (n > _HYPERBOLIC_FROM)
        value = _ops.where(
            inside,
            _chebyshev_trigonometric(kind, _ops.where(inside, x, 0.0), n),
            _ops.where(
                outside,
                _chebyshev_hyperbolic(kind, _ops.where(outside, x, 2.0), n),
                _chebyshev_edges(kind, x, n),
            ),
        )
        return edge | inside | outside, value

    return closed


def _chebyshev_step(k: int, x: Any, p: Any, q: Any) -> Any:
    return 2 * x * p - q


def _chebyshev(kind: str, first: Callable[[Tensor], Tensor]) -> _Family:
    """The family of ``kind``: leading coefficient ``2**(n-1)`` for ``T``, ``2**n`` else."""
    shift = 1 if kind == "t" else 0
    return _Family(
        first, _chebyshev_step, lambda n: _LN2 * (n - shift), closed=_chebyshev_closed(kind)
    )


_CHEBYSHEV = {
    "t": _chebyshev("t", lambda x: x),
    "u": _chebyshev("u", lambda x: 2 * x),
    "v": _chebyshev("v", lambda x: 2 * x - 1),
    "w": _chebyshev("w", lambda x: 2 * x + 1),
}
_HERMITE = _Family(lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - (2 * k) * q, lambda n: _LN2 * n)
_HERMITE_E = _Family(lambda x: x, lambda k, x, p, q: x * p - k * q, lambda n: 0 * n)
_LAGUERRE = _Family(
    lambda x: 1 - x,
    lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1),
    lambda n: -lgamma(n + 1),
    _parity,
)
_LEGENDRE = _Family(
    lambda x: x,
    lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1),
    lambda n: lgamma(2 * n + 1) - _LN2 * n - 2 * lgamma(n + 1),
    closed=lambda x, n: ((x == 1) | (x == -1), _ops.where(x == 1, 1.0, _parity(n))),
)


def _polynomial(
    function: str,
    family: _Family,
    description: str,
    example: tuple[str, int, str],
    shifted: bool = False,
) -> Callable[..., Tensor]:
    """The function ``p_n(x)`` of ``family`` (``p_n(2x - 1)`` where ``shifted``), documented by
    ``description`` and an example: the value at the points ``example[0]`` of degree
    ``example[1]`` is ``example[2]``."""

    def polynomial(x: Tensor | float, n: Tensor | float) -> Tensor:
        return _evaluate(function, family, x, n, shifted)

    points, degree, value = example
    polynomial.__name__ = polynomial.__qualname__ = function
    polynomial.__doc__ = f"""{description}

    Examples
    --------
    >>> import plugrad
    >>> plugrad.special.{function}(plugrad.tensor({points}), {degree})
    {value}
    """
    return takes_out(polynomial)


def _shifted_chebyshev(kind: str, ordinal: str, value: str) -> Callable[..., Tensor]:
    """The Chebyshev polynomial of ``kind`` at ``2x - 1``."""
    return _polynomial(
        f"shifted_chebyshev_polynomial_{kind}",
        _CHEBYSHEV[kind],
        f"``{kind.upper()}_n(2x - 1)``: the Chebyshev polynomial of the {ordinal} kind shifted "
        "to ``[0, 1]``.",
        ("[0.0, 0.25, 1.0]", 3, value),
        shifted=True,
    )


chebyshev_polynomial_t = _polynomial(
    "chebyshev_polynomial_t",
    _CHEBYSHEV["t"],
    """The Chebyshev polynomial of the first kind ``T_n(x)``: ``T_n(cos t) = cos(nt)``.

    ``T_0 = 1``, ``T_1 = x``, ``T_(k+1) = 2x T_k - T_(k-1)``; 0 for ``n < 0``. See
    the module's notes; not differentiable, as PyTorch's.""",
    ("[0.5, 1.0, 2.0]", 4, "tensor([-0.5000,  1.0000, 97.0000])"),
)
chebyshev_polynomial_u = _polynomial(
    "chebyshev_polynomial_u",
    _CHEBYSHEV["u"],
    """The Chebyshev polynomial of the second kind ``U_n(x)``: ``U_n(cos t) sin t = sin((n+1)t)``.

    ``U_0 = 1``, ``U_1 = 2x``, then as ``T``; 0 for ``n < 0``.""",
    ("[0.5, 1.0, 2.0]", 4, "tensor([ -1.,   5., 209.])"),
)
chebyshev_polynomial_v = _polynomial(
    "chebyshev_polynomial_v",
    _CHEBYSHEV["v"],
    """The Chebyshev polynomial of the third kind ``V_n(x)``:
    ``V_n(cos t) cos(t/2) = cos((n+1/2)t)``.

    ``V_0 = 1``, ``V_1 = 2x - 1``, then as ``T``; 0 for ``n < 0``.""",
    ("[0.5, -1.0, 2.0]", 3, "tensor([-1., -7., 41.])"),
)
chebyshev_polynomial_w = _polynomial(
    "chebyshev_polynomial_w",
    _CHEBYSHEV["w"],
    """The Chebyshev polynomial of the fourth kind ``W_n(x)``:
    ``W_n(cos t) sin(t/2) = sin((n+1/2)t)``.

    ``W_0 = 1``, ``W_1 = 2x + 1``, then as ``T``; 0 for ``n < 0``.""",
    ("[0.5, 1.0, 2.0]", 3, "tensor([-1.,  7., 71.])"),
)
shifted_chebyshev_polynomial_t = _shifted_chebyshev("t", "first", "tensor([-1.,  1.,  1.])")
shifted_chebyshev_polynomial_u = _shifted_chebyshev("u", "second", "tensor([-4.,  1.,  4.])")
shifted_chebyshev_polynomial_v = _shifted_chebyshev("v", "third", "tensor([-7.,  1.,  1.])")
shifted_chebyshev_polynomial_w = _shifted_chebyshev("w", "fourth", "tensor([-1.,  1.,  7.])")
hermite_polynomial_h = _polynomial(
    "hermite_polynomial_h",
    _HERMITE,
    """The physicists' Hermite polynomial ``H_n(x)``, orthogonal for the weight ``exp(-x**2)``.

    ``H_0 = 1``, ``H_1 = 2x``, ``H_(k+1) = 2x H_k - 2k H_(k-1)``; 0 for ``n < 0``.""",
    ("[-1.0, 0.5, 2.0]", 3, "tensor([ 4., -5., 40.])"),
)
hermite_polynomial_he = _polynomial(
    "hermite_polynomial_he",
    _HERMITE_E,
    """The probabilists' Hermite polynomial ``He_n(x)``, orthogonal for the weight
    ``exp(-x**2 / 2)``.

    ``He_0 = 1``, ``He_1 = x``, ``He_(k+1) = x He_k - k He_(k-1)``; 0 for ``n < 0``.""",
    ("[-1.0, 0.5, 2.0]", 3, "tensor([ 2.0000, -1.3750,  2.0000])"),
)
laguerre_polynomial_l = _polynomial(
    "laguerre_polynomial_l",
    _LAGUERRE,
    """The Laguerre polynomial ``L_n(x)``, orthogonal on ``[0, inf)`` for the weight ``exp(-x)``.

    ``L_0 = 1``, ``L_1 = 1 - x``, ``(k+1) L_(k+1) = (2k + 1 - x) L_k - k L_(k-1)``; 0 for
    ``n < 0``.""",
    ("[0.0, 0.5, 2.0]", 2, "tensor([ 1.0000,  0.1250, -1.0000])"),
)
legendre_polynomial_p = _polynomial(
    "legendre_polynomial_p",
    _LEGENDRE,
    """The Legendre polynomial ``P_n(x)``, orthogonal on ``[-1, 1]``.

    ``P_0 = 1``, ``P_1 = x``, ``(k+1) P_(k+1) = (2k+1) x P_k - k P_(k-1)``; 0 for ``n < 0``.""",
    ("[2.0, 0.5, -1.0]", 3, "tensor([17.0000, -0.4375, -1.0000])"),
)
