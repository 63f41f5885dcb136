"""``plugrad.special``: PyTorch's ``torch.special`` functions that plugrad's ops compute.

Each is differentiable, made of plugrad's ops (so it runs on every backend and
has gradients of every order). The functions PyTorch has here that need a
kernel plugrad does not have yet (the Bessel functions, ``zeta``, ...) are
absent, so calling one is an ``AttributeError`` rather than an approximation.

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

from . import dtypes as _dtypes
from . import ops as _ops
from .function import Function, FunctionCtx
from .inplace import takes_out
from .nn.functional import log_softmax, logsumexp, sigmoid, softmax
from .pytorch_names import digamma, erf, erfc, erfinv, polygamma
from .pytorch_names import lgamma as gammaln
from .pytorch_names import mvlgamma as _mvlgamma
from .tensor import Tensor

__all__ = [
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfinv",
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
        raise TypeError(f"special.{function}() takes a Tensor, got {type(value).__name__}")
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
    return _ops.xlog1py(_tensor("xlog1py", input), other)


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
        positive = _ops.greater(x, 0)
        elsewhere = _ops.where(_ops.equal(x, 0), math.inf, math.nan)
        return grad * _ops.where(positive, -(_ops.log(_ops.where(positive, x, 1.0)) + 1), elsewhere)


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
