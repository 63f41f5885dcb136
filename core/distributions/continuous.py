"""The uniform, Laplace and exponential distributions."""

from __future__ import annotations

import math
from typing import ClassVar

from .. import ops as _ops
from ..creation import zeros_like
from ..dtype_functions import finfo
from ..random import rand
from ..tensor import Tensor
from . import constraints
from .distribution import _Elementwise, _LocScale
from .exp_family import ExponentialFamily

__all__ = ["Exponential", "Laplace", "Uniform"]


def _uniform(like: Tensor, shape: tuple[int, ...]) -> Tensor:
    return rand(shape, dtype=like.dtype, device=like.device)


class Uniform(_Elementwise):
    """The uniform distribution on the half-open interval ``[low, high)``.

    Parameters
    ----------
    low, high : Tensor or float
        The bounds, ``low < high``; they broadcast together into the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Uniform
    >>> d = Uniform(0.0, 4.0, validate_args=False)  # 5.0 is outside: no error, -inf
    >>> d.log_prob(plugrad.tensor([1.0, 5.0])), d.variance
    (tensor([-1.3863,    -inf]), tensor(1.3333))
    """

    has_rsample = True
    low: Tensor
    high: Tensor

    def __init__(
        self, low: Tensor | float, high: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self._set_parameters(validate_args, low=low, high=high)

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @property
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return math.nan * self.high

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``low + u * (high - low)`` for ``u`` uniform on ``[0, 1)``."""
        u = _uniform(self.low, self._extended_shape(sample_shape))
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = (self.low <= value) & (self.high > value)
        # In the parameters' dtype, as PyTorch's (the Python numbers alone would be float32).
        mass = _ops.astype(_ops.where(inside, 0.0, -math.inf), self.low.dtype)
        return mass - _ops.log(self.high - self.low)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return _ops.clip((value - self.low) / (self.high - self.low), 0.0, 1.0)

    def icdf(self, value: Tensor) -> Tensor:
        self._validate_probability(value)
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return _ops.log(self.high - self.low)


class Laplace(_LocScale):
    """The Laplace (double exponential) distribution with location ``loc`` and ``scale``.

    Parameters
    ----------
    loc : Tensor or float
    scale : Tensor or float
        Positive. ``loc`` and ``scale`` broadcast together into the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Laplace
    >>> d = Laplace(0.0, 1.0)
    >>> d.log_prob(plugrad.tensor(1.0)), d.cdf(plugrad.tensor(0.0)), d.variance
    (tensor(-1.6931), tensor(0.5000), tensor(2.))
    """

    support = constraints.real

    @property
    def stddev(self) -> Tensor:
        return math.sqrt(2) * self.scale

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale**2

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``loc - scale * sign(u) * log1p(-|u|)`` for ``u`` uniform on ``(-1, 1)``."""
        eps = finfo(self.loc.dtype).eps
        u = _uniform(self.loc, self._extended_shape(sample_shape)) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * _ops.sign(u) * _ops.log1p(-_ops.abs(u))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -_ops.log(2 * self.scale) - _ops.abs(value - self.loc) / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        centred = value - self.loc
        return 0.5 - 0.5 * _ops.sign(centred) * _ops.expm1(-_ops.abs(centred) / self.scale)

    def icdf(self, value: Tensor) -> Tensor:
        self._validate_probability(value)
        term = value - 0.5
        return self.loc - self.scale * _ops.sign(term) * _ops.log1p(-2 * _ops.abs(term))

    def entropy(self) -> Tensor:
        return 1 + _ops.log(2 * self.scale)


class Exponential(_Elementwise, ExponentialFamily):
    """The exponential distribution with ``rate`` (the inverse of its mean).

    Parameters
    ----------
    rate : Tensor or float
        Positive; its shape is the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Exponential
    >>> d = Exponential(plugrad.tensor([0.5, 2.0]))
    >>> d.mean, d.log_prob(plugrad.tensor([1.0, 1.0]))
    (tensor([2.0000, 0.5000]), tensor([-1.1931, -1.3069]))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0
    rate: Tensor

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        self._set_parameters(validate_args, rate=rate)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (-self.rate,)

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """``-log(-theta)``: ``-log(rate)``."""
        return -_ops.log(-natural_params[0])

    @property
    def mean(self) -> Tensor:
        return 1 / self.rate

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return 1 / self.rate

    @property
    def variance(self) -> Tensor:
        return self.rate**-2

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``-log1p(-u) / rate`` for ``u`` uniform on ``[0, 1)``."""
        u = _uniform(self.rate, self._extended_shape(sample_shape))
        return -_ops.log1p(-u) / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return _ops.log(self.rate) - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - _ops.exp(-self.rate * value)

    def icdf(self, value: Tensor) -> Tensor:
        self._validate_probability(value)
        return -_ops.log1p(-value) / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - _ops.log(self.rate)
