"""The normal and log-normal distributions."""

from __future__ import annotations

import math
from typing import Any

from .. import ops as _ops
from ..pytorch_names import erf, erfinv
from ..random import randn
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution, _LocScale
from .exp_family import ExponentialFamily

__all__ = ["LogNormal", "Normal"]

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


class Normal(_LocScale, ExponentialFamily):
    """The normal (Gaussian) distribution with mean ``loc`` and standard deviation ``scale``.

    Parameters
    ----------
    loc : Tensor or float
        The mean.
    scale : Tensor or float
        The standard deviation, positive. ``loc`` and ``scale`` broadcast
        together into the batch shape.

    Notes
    -----
    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Normal
    >>> loc = plugrad.tensor([0.0, 1.0], requires_grad=True)
    >>> d = Normal(loc, 2.0)
    >>> d.log_prob(plugrad.tensor([0.0, 0.0]))
    tensor([-1.6121, -1.7371], grad_fn=<SubBackward>)
    >>> d.rsample((5,)).shape
    (5, 2)
    """

    support = constraints.real
    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        precision = self.scale**-2
        return (self.loc * precision, -0.5 * precision)

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """``-theta1**2 / (4 theta2) + log(-pi / theta2) / 2``."""
        x, y = natural_params
        return -0.25 * x**2 / y + 0.5 * _ops.log(-math.pi / y)

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale**2

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``loc + scale * eps`` for standard normal ``eps``: differentiable in both."""
        shape = self._extended_shape(sample_shape)
        eps = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        variance = self.scale**2
        return -((value - self.loc) ** 2) / (2 * variance) - _ops.log(self.scale) - _LOG_SQRT_2PI

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + erf((value - self.loc) / self.scale / math.sqrt(2)))

    def icdf(self, value: Tensor) -> Tensor:
        self._validate_probability(value)
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + _ops.log(self.scale)


class LogNormal(Distribution):
    """The distribution of ``exp(X)`` for ``X`` normal with ``loc`` and ``scale``.

    Parameters
    ----------
    loc, scale : Tensor or float
        The mean and standard deviation (positive) of the log of the variable.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import LogNormal
    >>> d = LogNormal(0.0, 1.0)
    >>> d.log_prob(plugrad.tensor(1.0)), d.mean
    (tensor(-0.9189), tensor(1.6487))
    """

    arg_constraints = Normal.arg_constraints
    support = constraints.positive
    has_rsample = True

    def __init__(
        self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self.base_dist = Normal(loc, scale, validate_args=validate_args)
        self.loc, self.scale = self.base_dist.loc, self.base_dist.scale
        super().__init__(self.loc.shape, validate_args=validate_args)

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        new.base_dist = self.base_dist.expand(batch_shape)
        new.loc, new.scale = new.base_dist.loc, new.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return _ops.exp(self.loc + self.scale**2 / 2)

    @property
    def mode(self) -> Tensor:
        return _ops.exp(self.loc - self.scale**2)

    @property
    def variance(self) -> Tensor:
        scale_sq = self.scale**2
        return _ops.expm1(scale_sq) * _ops.exp(2 * self.loc + scale_sq)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``exp`` of a reparameterized normal sample: differentiable in ``loc`` and ``scale``."""
        return _ops.exp(self.base_dist.rsample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_value = _ops.log(value)
        return self.base_dist.log_prob(log_value) - log_value

    def cdf(self, value: Tensor) -> Tensor:
        # As PyTorch: log(value) is checked against the normal's support, so cdf(0) is 0.
        return self.base_dist.cdf(_ops.log(value))

    def icdf(self, value: Tensor) -> Tensor:
        self._validate_probability(value)
        return _ops.exp(self.base_dist.icdf(value))

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc
