"""The Hurwitz zeta function ``zeta(x, q) = sum over k >= 0 of (q + k)**-x``, as PyTorch's.

Computed by Euler and Maclaurin's summation: the first ten terms, then the
integral of the rest and eight of its Bernoulli corrections, at ``w = q + 10``;
about 1e-15 relative. Where ``q**-x`` is beyond the square root of the largest
float the sum is that first term alone (the others are below its rounding). A
negative ``q`` (for an integer ``x``, the only one where the terms are real) is
brought into ``(0, 1)``: the terms left of it are the difference of two sums at
positive points, ``(-1)**x (zeta(x, 1 - f) - zeta(x, 1 - q))`` for ``f = q +
ceil(-q)``, so that the cost does not grow with ``-q``. The special values are
PyTorch's (``inf`` at ``x = 1`` and at ``q`` a non-positive integer, NaN for
``x < 1`` and for a negative ``q`` with a fractional ``x``), except where
PyTorch's are artefacts of its expansion: ``zeta(x, q)`` is 0 for ``q > 1`` at
``x = inf`` and for ``q = inf``, where PyTorch's is NaN. Differentiable in ``q``
(``-x zeta(x + 1, q)``), not in ``x``, as PyTorch's.

Examples
--------
>>> import plugrad
>>> plugrad.special.zeta(plugrad.tensor([2.0, 3.0]), plugrad.tensor([1.0, 2.0]))
tensor([1.6449, 0.2021])
"""

from __future__ import annotations

import math
from fractions import Fraction
from math import comb
from typing import Any

from . import ops as _ops
from .creation import zeros_like
from .dtype_functions import broadcast_shapes, finfo
from .errors import NotSupportedError
from .function import Function, FunctionCtx
from .inplace import takes_out
from .special_arguments import floating_arguments, narrowed, widened
from .tensor import Tensor

__all__ = ["zeta"]

_DIRECT_TERMS = 10
_CORRECTIONS = 8


def _bernoulli_numbers(count: int) -> list[Fraction]:
    """``B_0 .. B_count`` from ``sum over k <= n of C(n + 1, k) B_k = 0``."""
    numbers = [Fraction(1)]
    for n in range(1, count + 1):
        total = sum((comb(n + 1, k) * numbers[k] for k in range(n)), Fraction(0))
        numbers.append(-total / (n + 1))
    return numbers


#: B_2j / (2j)!, the coefficients of Euler and Maclaurin's corrections.
_EULER_MACLAURIN = [
    float(b / math.factorial(2 * j))
    for j, b in enumerate(_bernoulli_numbers(2 * _CORRECTIONS)[2::2], start=1)
]
#: Where x exceeds this multiple of w the corrections are below 1e-300 of the sum (and
#: their products would overflow).
_CORRECTIONS_UP_TO = 50.0


def _euler_maclaurin(x: Tensor, q: Tensor) -> Tensor:
    """``zeta(x, q)`` for ``x > 1`` and ``q > 0`` (where nothing overflows)."""
    total = zeros_like(x)
    for k in range(_DIRECT_TERMS):
        total = total + (q + k) ** -x
    w = q + _DIRECT_TERMS
    small = x <= _CORRECTIONS_UP_TO * w
    xs = _ops.where(small, x, 2.0)
    # w**-x times: w / (x - 1) (the integral), 1/2, and B_2j/(2j)! x (x+1) ... (x+2j-2) w**(1-2j)
    factor, corrections = xs / w, zeros_like(x)
    for j, c in enumerate(_EULER_MACLAURIN, start=1):
        corrections = corrections + c * factor
        factor = factor * ((xs + (2 * j - 1)) * (xs + 2 * j) / (w * w))
    tail = w / (x - 1) + 0.5 + _ops.where(small, corrections, 0.0)
    return total + w**-x * tail


def _positive_q(x: Tensor, q: Tensor) -> Tensor:
    """``zeta(x, q)`` for ``x > 1``, ``0 < q < inf``; infinite where it exceeds the dtype."""
    log_max = math.log(finfo(x.dtype).max)
    # Where q**-x is beyond sqrt(max), the other terms are below 1/sqrt(max) of it
    # (q / (q + k) <= q for k >= 1): the sum is its first term.
    exponent = -x * _ops.log(q)
    first_only = exponent > 0.5 * log_max
    overflows = exponent > log_max
    first = _ops.where(overflows, 1.0, q) ** -x
    value = _ops.where(first_only, first, _euler_maclaurin(x, _ops.where(first_only, 1.0, q)))
    return _ops.where(overflows, math.inf, value)


def _zeta(x: Tensor, q: Tensor) -> Tensor:
    shape = broadcast_shapes(x.shape, q.shape)
    x, q = _ops.broadcast_to(x, shape), _ops.broadcast_to(q, shape)
    integer_x = x == _ops.floor(x)
    pole = (q <= 0) & (q == _ops.floor(q))  # a term is 1/0 (q = -inf counted in)
    ordinary = (x > 1) & (x < math.inf) & (q > 0) & (q < math.inf)
    negative = (x > 1) & (x < math.inf) & (q < 0) & ~pole & integer_x
    xo = _ops.where(ordinary | negative, x, 2.0)
    value = _positive_q(xo, _ops.where(ordinary, q, 1.0))
    # q < 0: zeta(x, f) + (-1)**x (zeta(x, 1 - f) - zeta(x, 1 - q)), f = q + ceil(-q) in (0, 1)
    qn = _ops.where(negative, q, -0.5)
    n = _ops.ceil(-qn)
    # f and 1 - f = -q - (n - 1) are exact so (Sterbenz), but for f itself when n = 1
    f, one_minus_f = qn + n, -qn - (n - 1)
    sign = _ops.where(_ops.remainder(xo, 2) == 0, 1.0, -1.0)
    shifted = _positive_q(xo, f) + sign * (_positive_q(xo, one_minus_f) - _positive_q(xo, 1 - qn))
    value = _ops.where(negative, shifted, value)
    # x = inf: the terms (q + k)**-x are 0 beyond 1, 1 at 1 and infinite within it
    at_infinity = _ops.where(q > 1, 0.0, _ops.where(q == 1, 1.0, math.inf))
    special = _ops.where(
        (x == 1) | ((x > 1) & pole), math.inf, _ops.where((x > 1) & (q == math.inf), 0.0, math.nan)
    )
    special = _ops.where((x == math.inf) & ~_ops.isnan(q) & ~pole, at_infinity, special)
    special = _ops.where((x > 1) & (q < 0) & ~pole & ~integer_x, math.nan, special)
    return _ops.where(ordinary | negative, value, special)


class _Zeta(Function):
    """``zeta(x, q)``: its gradient in ``q`` is ``-x zeta(x + 1, q)``; in ``x`` it is not
    implemented (nor is PyTorch's)."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Tensor:
        x, q = args
        ctx.save_for_backward(x, q)
        return narrowed(_zeta(widened(x), widened(q)), x.dtype)

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Tensor) -> tuple[Tensor | None, ...]:
        (grad,), (x, q) = grad_outputs, ctx.saved_tensors
        assert x is not None and q is not None
        if ctx.needs_input_grad[0]:
            raise NotSupportedError(
                "the derivative of special.zeta(x, q) in x is not implemented (nor is "
                "PyTorch's); detach x (zeta(x.detach(), q)) to differentiate in q alone"
            )
        return None, grad * (-x * zeta(x + 1, q))


@takes_out
def zeta(input: Tensor | float, other: Tensor | float) -> Tensor:
    """The Hurwitz zeta function ``sum over k >= 0 of (q + k)**-x`` element-wise, with
    ``x = input`` and ``q = other`` (one of them may be a number).

    ``q = 1`` gives Riemann's zeta. ``inf`` at ``x = 1`` and where ``q`` is 0
    or a negative integer; NaN for ``x < 1``, and for a negative ``q`` unless
    ``x`` is an integer. Differentiable in ``q`` (``-x zeta(x + 1, q)``); the
    derivative in ``x`` raises :class:`~plugrad.errors.NotSupportedError` (a
    ``NotImplementedError``), as PyTorch's raises.

    Examples
    --------
    >>> import plugrad
    >>> q = plugrad.tensor([1.0, 0.5, -1.5], requires_grad=True)
    >>> plugrad.special.zeta(plugrad.tensor([2.0, 2.0, 2.0]), q)
    tensor([1.6449, 4.9348, 9.3792], grad_fn=<_ZetaBackward>)
    """
    x, q = floating_arguments("zeta", input, other)
    return _Zeta.apply(x, q)
