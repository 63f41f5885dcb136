"""``plugrad.special``: PyTorch's ``torch.special`` functions that plugrad's ops compute.

Each is made of plugrad's ops, so it runs on every backend, and is
differentiable with gradients of every order, except where PyTorch's is not:
``zeta`` in its first argument, and the orthogonal polynomials. The Bessel
functions are in :mod:`plugrad.bessel`, ``erfcx``, ``log_ndtr`` and ``ndtri``
in :mod:`plugrad.error_functions`, ``zeta`` in :mod:`plugrad.hurwitz_zeta` and
the polynomials in :mod:`plugrad.orthogonal_polynomials`; every function of
``torch.special`` is here.

Examples
--------
>>> import plugrad
>>> plugrad.special.expit(plugrad.tensor([0.0]))
tensor([0.5000])
>>> plugrad.special.ndtr(plugrad.tensor([0.0, 1.0]))
tensor([0.5000, 0.8413])
"""

from __future__ import annotations

import math
from typing import Any

from . import bessel as _bessel
from . import dtypes as _dtypes
from . import error_functions as _error_functions
from . import hurwitz_zeta as _hurwitz_zeta
from . import incomplete_gamma as _incomplete_gamma
from . import ops as _ops
from . import orthogonal_polynomials as _orthogonal_polynomials
from .bessel import *  # noqa: F403  (these modules' functions are ours: see __all__)
from .creation import asarray
from .dtype_functions import result_type
from .error_functions import *  # noqa: F403
from .errors import ArgumentError
from .function import Function, FunctionCtx, _refusing
from .grad_mode import is_grad_enabled
from .hurwitz_zeta import *  # noqa: F403
from .inplace import apply_inplace, takes_out
from .nn.functional import log_softmax, logsumexp, sigmoid, softmax
from .orthogonal_polynomials import *  # noqa: F403
from .pytorch_names import digamma, erf, erfc, erfinv, polygamma
from .pytorch_names import lgamma as gammaln
from .pytorch_names import mvlgamma as _mvlgamma
from .tensor import Tensor, install_function_methods, install_methods

__all__ = [
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfinv",
    "gammainc",
    "gammaincc",
    "gammaln",
    "multigammaln",
    "polygamma",
    "psi",
    "expit",
    "log_softmax",
    "logsumexp",
    "ndtr",
    "softmax",
    "xlog1py",
]
__all__ += _bessel.__all__ + _error_functions.__all__ + _hurwitz_zeta.__all__
__all__ += _orthogonal_polynomials.__all__

expit = sigmoid
psi = digamma


@takes_out
def multigammaln(input: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p`` (``plugrad.mvlgamma``)."""
    return _mvlgamma(input, p)


#: plugrad's own functions of these names, made when plugins are loaded.
_OPS = frozenset({"logit", "xlogy", "log1p", "expm1", "exp2", "sinc", "round"})
__all__ += sorted(_OPS)


def __getattr__(name: str) -> Any:
    if name in _OPS:
        return getattr(_ops, name)
    raise AttributeError(f"module 'plugrad.special' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_OPS})


_SQRT_HALF = math.sqrt(0.5)


def _tensor(function: str, value: object) -> Tensor:
    if not isinstance(value, Tensor):
        raise ArgumentError(f"special.{function}() takes a Tensor, got {type(value).__name__}")
    return value


@takes_out
def ndtr(input: Tensor) -> Tensor:
    """The standard normal distribution function: the area under its density left of ``x``.

    Computed as ``erfc(-x / sqrt(2)) / 2``, accurate in both tails: in float64 for
    narrower floats, where the scaled argument's rounding grows with x**2 in the tail.
    """
    x = _tensor("ndtr", input)
    if x.dtype in (_dtypes.float32, _dtypes.float16) and _dtypes.float64 in x.device.dtypes:
        return _ops.astype(0.5 * erfc(_ops.astype(x, _dtypes.float64) * -_SQRT_HALF), x.dtype)
    return 0.5 * erfc(x * -_SQRT_HALF)


@takes_out
def xlog1py(input: Tensor, other: Tensor | float) -> Tensor:
    """``input * log1p(other)``, 0 where ``input`` is 0 unless ``other`` is NaN (PyTorch's).

    The gradient for ``input`` is ``log1p(other)`` also where ``input`` is 0
    (0 there where ``other <= -1``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.special.xlog1py(plugrad.tensor([0.0, 2.0]), plugrad.tensor([-1.0, 0.0]))
    tensor([0., 0.])
    """
    if not isinstance(other, Tensor):  # (a number for one of the two, as PyTorch's)
        _tensor("xlog1py", input)
    return _ops.xlog1py(input, other)


class _Entropy(Function):
    """``-x * log(x)`` with PyTorch's gradient ``-(log(x) + 1)``: ``inf`` at 0, ``nan`` below."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Tensor:
        (x,) = args
        ctx.save_for_backward(x)
        positive = _ops.greater(x, 0)
        safe = _ops.where(positive, x, 1.0)
        below = _ops.where(_ops.less(x, 0), -math.inf, x)  # x itself where it is 0 or nan
        return _ops.where(positive, -safe * _ops.log(safe), below)

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Tensor) -> Tensor:
        (grad,), (x,) = grad_outputs, ctx.saved_tensors
        assert x is not None
        # log itself, not a guarded one: its own derivative 1/x gives the second derivative
        # -1/x, -inf at 0 as PyTorch's (a guard's where() gave 0 there).
        return grad * -(_ops.log(x) + 1)


@takes_out
def entr(input: Tensor) -> Tensor:
    """The entropy term ``-x * log(x)`` element-wise: 0 at 0, ``-inf`` below 0.

    Its gradient is PyTorch's, ``-(log(x) + 1)``: ``inf`` at 0 and ``nan`` below.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.special.entr(plugrad.tensor([0.0, 0.5, -1.0]))
    tensor([0.0000, 0.3466,   -inf])
    """
    return _Entropy.apply(_tensor("entr", input))


def _gamma_arguments(function: str, input: Any, other: Any) -> tuple[Tensor, Tensor]:
    """``a`` and ``x`` as tensors of one floating dtype (a number takes the tensor's)."""
    a = _tensor(function, input)
    x = other if isinstance(other, Tensor) else asarray(other, dtype=a.dtype, device=a.device)
    dtype = result_type(a, x)
    if dtype.kind != "real floating":
        if dtype.kind not in ("signed integer", "unsigned integer", "bool"):
            raise ArgumentError(f"special.{function}() takes real tensors, got {dtype.name}")
        dtype = _dtypes.default_float_dtype
    return _ops.astype(a, dtype), _ops.astype(x, dtype)


class _RegularizedGamma(Function):
    """``P(a, x)`` (``lower``) or ``Q(a, x)``, with gradients in both arguments.

    In ``x`` the gamma density ``x**(a-1) exp(-x) / gamma(a)`` (with the sign of
    ``Q``'s); in ``a`` the derivative the series or continued fraction carries along.
    """

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Tensor:
        a, x, lower = args
        ctx.save_for_backward(a, x)
        ctx.lower = lower
        if lower:
            return _incomplete_gamma.lower_regularized(a, x)
        return _incomplete_gamma.upper_regularized(a, x)

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Tensor) -> tuple[Any, ...]:
        (grad,), (a, x) = grad_outputs, ctx.saved_tensors
        assert a is not None and x is not None
        sign = 1 if ctx.lower else -1
        grad_a = grad_x = None
        if ctx.needs_input_grad[0]:
            in_a = _incomplete_gamma.lower_regularized_derivative_in_a(a, x)
            sources = [t for t in (a, x) if t.requires_grad]
            if sources and is_grad_enabled():
                # Computed outside the graph (it has no formula of its own to differentiate):
                # a second derivative reaching it refuses, where it would be taken for 0.
                in_a = _refusing(
                    in_a,
                    tuple(t._edge or t for t in sources),
                    f"special.{'gammainc' if ctx.lower else 'gammaincc'}(a, x): the "
                    "derivative in a can be taken once only; a second derivative through it "
                    "(in a or in x) is not implemented (PyTorch has none in a at all). "
                    "Second derivatives in x alone are: differentiate in x only, or detach a "
                    "(a.detach()) where its second derivative is not needed",
                )
            grad_a = grad * (sign * in_a)
        if ctx.needs_input_grad[1]:
            positive = x > 0
            safe = _ops.where(positive, x, 1.0)
            density = _ops.exp(_incomplete_gamma.log_density(a, safe))
            # At x = 0 the density is 0 for a > 1, 1 for a = 1 and inf below (PyTorch's).
            at_zero = _ops.where(a > 1, 0.0, _ops.where(a == 1, 1.0, math.inf))
            # Below 0 the value is nan, and so is its derivative (it was at_zero's).
            beside = _ops.where(x == 0, at_zero, math.nan)
            grad_x = grad * (sign * _ops.where(positive, density, beside))
        return grad_a, grad_x, None


@takes_out
def gammainc(input: Tensor, other: Tensor | float) -> Tensor:
    """The regularized lower incomplete gamma function ``P(a, x)`` element-wise.

    ``input`` is the shape ``a``, ``other`` the point ``x``: the probability that a
    gamma variable of shape ``a`` and rate 1 is below ``x``. Special values are
    PyTorch's (NaN for a negative argument or ``a = x = 0``; 1 where ``x`` is
    infinite or ``a = 0``). Differentiable in ``x`` and, unlike PyTorch's, in
    ``a`` too. Computed in float64 where the device has it: below shape 1000 by its
    power series or Legendre's continued fraction (about ``sqrt(a)`` terms), from there
    on by Temme's uniform asymptotic expansion (a fixed number of terms, however large
    ``a``). Against mpmath the smaller of ``P`` and ``Q`` is within 1e-14 relative from
    ``a = 1e3`` to ``1e15`` (``|x - a|`` up to ``50 sqrt(a)``, down to 1e-307; further
    out it is 0) and within 1e-13 below ``a = 1e3``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.special.gammainc(plugrad.tensor([1.0, 2.0, 0.5]), plugrad.tensor([1.0, 1.0, 2.0]))
    tensor([0.6321, 0.2642, 0.9545])
    """
    a, x = _gamma_arguments("gammainc", input, other)
    return _RegularizedGamma.apply(a, x, True)


@takes_out
def gammaincc(input: Tensor, other: Tensor | float) -> Tensor:
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)`` element-wise.

    Computed directly where it is small (no cancellation in ``1 - P``); as
    :func:`gammainc` otherwise.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.special.gammaincc(plugrad.tensor([1.0, 3.0]), plugrad.tensor([30.0, 1.0]))
    tensor([9.3576e-14, 9.1970e-01])
    """
    a, x = _gamma_arguments("gammaincc", input, other)
    return _RegularizedGamma.apply(a, x, False)


@takes_out
def igamma(input: Tensor, other: Tensor | float) -> Tensor:
    """PyTorch's ``torch.igamma``: :func:`gammainc` (also ``x.igamma(other)``, ``x.igamma_``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.igamma(plugrad.tensor([1.0]), plugrad.tensor([1.0]))
    tensor([0.6321])
    """
    return gammainc(input, other)


@takes_out
def igammac(input: Tensor, other: Tensor | float) -> Tensor:
    """PyTorch's ``torch.igammac``: :func:`gammaincc` (also ``x.igammac(other)``, ``x.igammac_``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.tensor([1.0]).igammac(plugrad.tensor([1.0]))
    tensor([0.3679])
    """
    return gammaincc(input, other)


install_function_methods(igamma=igamma, igammac=igammac)
install_methods(
    igamma_=lambda self, other: apply_inplace(self, igamma, other, name="igamma_()"),
    igammac_=lambda self, other: apply_inplace(self, igammac, other, name="igammac_()"),
)
