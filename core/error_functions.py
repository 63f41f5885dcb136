"""The scaled complementary error function, and the normal distribution's log-cdf and quantile.

``erfcx(x) = exp(x**2) erfc(x)`` is that product itself up to 3 (with ``x**2``
split exactly in two, so that its rounding does not reach the exponential) and
Laplace's continued fraction of ``erfc`` beyond, which does not underflow.
``log_ndtr`` is ``log(erfcx(-x/sqrt 2) / 2) - x**2/2`` left of 0, accurate
however far out, and ``log1p(-erfcx(x/sqrt 2) exp(-x**2/2) / 2)`` right of it.
``ndtri`` is ``sqrt(2) erfinv(2 (p - 1/2))`` in the middle, and in the tails
Newton's method on ``log_ndtr(x) = log(p)`` from the first terms of its
asymptotic inverse, which converges in five steps down to the smallest float.
Each computes in float64 where the device has it, to about 1e-15 relative, and
is differentiable (gradients of every order).

Examples
--------
>>> import plugrad
>>> plugrad.special.erfcx(plugrad.tensor([0.0, 1.0, 30.0]))
tensor([1.0000, 0.4276, 0.0188])
>>> plugrad.special.ndtri(plugrad.tensor([0.5, 0.975]))
tensor([0.0000, 1.9600])
"""

from __future__ import annotations

import math
from typing import Any

from . import ops as _ops
from .creation import zeros_like
from .dtype_functions import finfo
from .function import Function, FunctionCtx
from .inplace import takes_out
from .pytorch_names import erfc, erfinv
from .special_arguments import floating_argument, narrowed, widened
from .tensor import Tensor

__all__ = ["erfcx", "log_ndtr", "ndtri"]

_SQRT_HALF = math.sqrt(0.5)
_SQRT_PI = math.sqrt(math.pi)
_SQRT_TWO_PI = math.sqrt(2 * math.pi)
#: From here on the continued fraction, with this many terms (1e-16 relative from 3 on).
_FRACTION_FROM = 3.0
_FRACTION_TERMS = 30


def _exp_of_square(x: Tensor, factor: float = 1.0) -> Tensor:
    """``exp(factor * x**2)`` (``factor`` a power of two, or minus one), with ``x**2 = high +
    low`` split exactly (Dekker's product): the rounding of ``x**2`` alone would cost
    ``x**2`` ulps (1.5e-13 at 26)."""
    # NOTE: a backend that rewrote (c - (c - x)) as x would lose the split.
    split = 2.0 ** math.ceil((1 - math.log2(finfo(x.dtype).eps)) / 2) + 1
    c = split * x
    head = c - (c - x)
    tail = x - head
    high = x * x
    low = ((head * head - high) + 2 * head * tail) + tail * tail
    return _ops.exp(factor * high) * (1 + factor * low)


def _erfcx_tail(x: Tensor) -> Tensor:
    """``t = (1/2) / (x + 1 / (x + (3/2) / (x + ...)))``: ``erfcx(x) = 1 / (sqrt(pi) (x + t))``."""
    tail = zeros_like(x)
    for k in range(_FRACTION_TERMS, 0, -1):
        tail = (0.5 * k) / (x + tail)
    return tail


def _erfcx_fraction(x: Tensor) -> Tensor:
    """``erfcx(x) = 1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))))``."""
    return (1 / _SQRT_PI) / (x + _erfcx_tail(x))


def _erfcx_slope(x: Tensor, y: Tensor) -> Tensor:
    """``erfcx'(x) = 2x erfcx(x) - 2/sqrt(pi)`` at ``x`` where ``erfcx`` is ``y`` (0 at inf).

    From :data:`_FRACTION_FROM` on it is ``-2 t / (sqrt(pi) (x + t))``, ``t`` the fraction's
    tail (about ``1/(2x)``), which cancels nothing: the difference is ``-1/(sqrt(pi) x**2)``
    of two terms near ``2/sqrt(pi)``, and lost ``2 x**2`` ulps of them (all of them at
    ``x = 1e4`` in float32, 1e-5 relative at ``1e5`` in float64).
    """
    infinite = x == math.inf
    far = (x >= _FRACTION_FROM) & ~infinite
    xf = _ops.where(far, x, _FRACTION_FROM)
    tail = _erfcx_tail(xf)
    slope = _ops.where(
        far,
        (-2 / _SQRT_PI) * tail / (xf + tail),
        2 * (_ops.where(far | infinite, 0.0, x) * y) - 2 / _SQRT_PI,
    )
    return _ops.where(infinite, 0.0, slope)


def _erfcx(x: Tensor) -> Tensor:
    # exp(x**2) overflows where erfc is 2: erfcx is infinite from there on (down).
    overflows = x < -math.sqrt(math.log(finfo(x.dtype).max / 2))
    near = (x < _FRACTION_FROM) & ~overflows
    xn = _ops.where(near, x, 0.0)
    value = _ops.where(
        near,
        _exp_of_square(xn) * erfc(xn),
        _erfcx_fraction(_ops.where(near | overflows, _FRACTION_FROM, x)),
    )
    return _ops.where(overflows, math.inf, value)


def _log_ndtr(x: Tensor) -> Tensor:
    # -x**2/2 overflows from here on down (and erfcx(inf) is 0, whose log would warn)
    minus_infinite = x < -math.sqrt(2) * math.sqrt(finfo(x.dtype).max)
    left = (x < 0) & ~minus_infinite
    xl = _ops.where(left, x, 0.0)
    # x > 0: 1 - ndtr(x) = ndtr(-x) = erfcx(x/sqrt 2) exp(-x**2/2) / 2 is small, log1p keeps
    # it (erfc(x/sqrt 2) would take the rounding of x/sqrt 2 to its square: 6e-14 at 30); it
    # underflows from 38.6 on.
    xr = _ops.where(left | minus_infinite | (x > 40), 40.0, x)
    right = _ops.log1p(-0.5 * _erfcx(_SQRT_HALF * xr) * _exp_of_square(xr, -0.5))
    t = -_SQRT_HALF * xl
    value = _ops.where(left, _ops.log(0.5 * _erfcx(t)) - t * t, right)
    return _ops.where(minus_infinite, -math.inf, value)


#: From here on cdf(x) rounds to 1 (1 - 9.5e-18 at 8.5): log_ndtr's slope pdf(x)/cdf(x) is
#: pdf(x), whose derivative stays finite where the quotient's does not (erfcx(-x/sqrt 2)
#: squared overflows from 26.6 on, erfcx itself from 37.6).
_PDF_ALONE_FROM = 8.5

#: Newton's steps on log_ndtr in the tails: 5 reach 1e-16 relative from the start below.
_NEWTON_STEPS = 5
_TAIL_BELOW = 0.05


def _left_quantile(p: Tensor) -> Tensor:
    """``ndtri(p)`` for ``0 < p <= 0.05`` (given as ``p`` there, and 0.05 elsewhere)."""
    log_p = _ops.log(p)
    t2 = -2 * log_p
    # log p = -x**2/2 - log(sqrt(2 pi) |x|) + ..., solved once for |x| from |x| = sqrt(t2)
    x = -_ops.sqrt(t2 - _ops.log((2 * math.pi) * t2))
    for _ in range(_NEWTON_STEPS):
        scaled = _erfcx(-_SQRT_HALF * x)
        log_cdf = _ops.log(0.5 * scaled) - 0.5 * x * x
        # d log_ndtr / dx = pdf / cdf = sqrt(2 / pi) / erfcx(-x / sqrt 2)
        x = x - (log_cdf - log_p) * (scaled * math.sqrt(math.pi / 2))
    return x


def _ndtri(p: Tensor) -> Tensor:
    q = 1 - p  # exact where it is used, p >= 1/2
    left = (p > 0) & (p <= _TAIL_BELOW)
    right = (q > 0) & (q <= _TAIL_BELOW)
    middle = (p > _TAIL_BELOW) & (q > _TAIL_BELOW)
    tail = _left_quantile(_ops.where(left, p, _ops.where(right, q, _TAIL_BELOW)))
    central = math.sqrt(2) * erfinv(2 * (_ops.where(middle, p, 0.5) - 0.5))
    value = _ops.where(middle, central, _ops.where(left, tail, -tail))
    value = _ops.where(p == 0, -math.inf, _ops.where(p == 1, math.inf, value))
    return _ops.where((p < 0) | (p > 1) | _ops.isnan(p), math.nan, value)


class _Erfcx(Function):
    """``erfcx`` with its gradient ``2x erfcx(x) - 2/sqrt(pi)`` (0 at infinity)."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Tensor:
        (x,) = args
        y = narrowed(_erfcx(widened(x)), x.dtype)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Tensor) -> Tensor:
        (grad,), (x, y) = grad_outputs, ctx.saved_tensors
        assert x is not None and y is not None
        wide = widened(x)
        if wide.dtype == x.dtype:
            return grad * _erfcx_slope(x, y)
        # In float64, rounded once (y's own rounding remains below 3, up to 20 ulps there).
        return grad * narrowed(_erfcx_slope(wide, widened(y)), x.dtype)


class _LogNdtr(Function):
    """``log_ndtr`` with its gradient ``pdf(x) / cdf(x) = sqrt(2/pi) / erfcx(-x/sqrt 2)``."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Tensor:
        (x,) = args
        ctx.save_for_backward(x)
        return narrowed(_log_ndtr(widened(x)), x.dtype)

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Tensor) -> Tensor:
        (grad,), (x,) = grad_outputs, ctx.saved_tensors
        assert x is not None
        far = x == -math.inf  # where the slope is -x
        # Right of _PDF_ALONE_FROM the slope is pdf(x) (cdf(x) is 1): so written, its own
        # derivative is -x pdf(x), not 0 or inf/inf.
        right = x > _PDF_ALONE_FROM
        xl = _ops.where(far | right, 0.0, x)
        xr = _ops.where(right & (x < 40.0), x, 40.0)  # pdf(40) is 0 already (and of inf)
        slope = _ops.where(
            right,
            _exp_of_square(xr, -0.5) / _SQRT_TWO_PI,
            math.sqrt(2 / math.pi) / erfcx(xl * -_SQRT_HALF),
        )
        return grad * _ops.where(far, math.inf, slope)


class _Ndtri(Function):
    """``ndtri`` with its gradient ``sqrt(2 pi) exp(ndtri(p)**2 / 2)``."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Tensor:
        (p,) = args
        x = narrowed(_ndtri(widened(p)), p.dtype)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Tensor) -> Tensor:
        (grad,), (x,) = grad_outputs, ctx.saved_tensors
        assert x is not None
        # 1 / pdf(x): infinite where it would overflow (p below 1e-308 or so)
        overflows = _ops.abs(x) > math.sqrt(2 * math.log(finfo(x.dtype).max / _SQRT_TWO_PI))
        xs = _ops.where(overflows, 0.0, x)
        return grad * _ops.where(overflows, math.inf, _SQRT_TWO_PI * _ops.exp(0.5 * xs * xs))


@takes_out
def erfcx(input: Tensor) -> Tensor:
    """The scaled complementary error function ``exp(x**2) erfc(x)``, element-wise.

    Finite where ``erfc`` underflows (about ``1 / (x sqrt(pi))`` for large
    ``x``); infinite from ``x = -26.6`` down. Its gradient is
    ``2x erfcx(x) - 2/sqrt(pi)``, as PyTorch's (0 at infinity, where PyTorch's is NaN).

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([-1.0, 0.0, 1e4], requires_grad=True)
    >>> plugrad.special.erfcx(x)
    tensor([5.0090e+00, 1.0000e+00, 5.6419e-05], grad_fn=<_ErfcxBackward>)
    """
    return _Erfcx.apply(floating_argument("erfcx", input))


@takes_out
def log_ndtr(input: Tensor) -> Tensor:
    """The logarithm of the standard normal distribution function, element-wise.

    Accurate far into the left tail, where :func:`ndtr` underflows (``-x**2/2``
    for large negative ``x``), and in the right one, where it rounds to 1. Its
    gradient is ``pdf(x) / ndtr(x)`` (about ``-x`` far left).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.special.log_ndtr(plugrad.tensor([-40.0, 0.0, 10.0]))
    tensor([-8.0461e+02, -6.9315e-01, -7.6199e-24])
    """
    return _LogNdtr.apply(floating_argument("log_ndtr", input))


@takes_out
def ndtri(input: Tensor) -> Tensor:
    """The quantile function of the standard normal distribution: the inverse of :func:`ndtr`.

    ``-inf`` at 0, ``inf`` at 1, NaN outside ``[0, 1]``; accurate in both tails,
    down to the smallest ``p`` (``ndtri(5e-324) = -38.47``). Its gradient is
    ``sqrt(2 pi) exp(ndtri(p)**2 / 2)``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.special.ndtri(plugrad.tensor([0.0, 1e-10, 0.5, 0.8]))
    tensor([   -inf, -6.3613,  0.0000,  0.8416])
    """
    return _Ndtri.apply(floating_argument("ndtri", input))
