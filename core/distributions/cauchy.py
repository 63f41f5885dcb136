"""The Cauchy distribution."""

from __future__ import annotations

import math

from .. import ops as _ops
from ..creation import full
from ..random import rand
from ..tensor import Tensor
from . import constraints
from .distribution import _LocScale

__all__ = ["Cauchy"]


class Cauchy(_LocScale):
    """The Cauchy (Lorentz) distribution with median ``loc`` and half-width ``scale``.

    The ratio of two independent centred normal variables. Its tails are so
    heavy that it has no mean (``nan``) and no variance (``inf``).

    Parameters
    ----------
    loc : Tensor or float
        The median and mode.
    scale : Tensor or float
        The half width at half maximum, positive. ``loc`` and ``scale``
        broadcast together into the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Cauchy
    >>> d = Cauchy(0.0, 2.0)
    >>> d.log_prob(plugrad.tensor([0.0, 2.0])), d.cdf(plugrad.tensor(2.0))
    (tensor([-1.8379, -2.5310]), tensor(0.7500))
    >>> d.mean, d.variance, d.icdf(plugrad.tensor(0.75))
    (tensor(nan), tensor(inf), tensor(2.))
    """

    support = constraints.real

    @property
    def mean(self) -> Tensor:
        return full(self._extended_shape(), math.nan, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def variance(self) -> Tensor:
        return full(self._extended_shape(), math.inf, dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``loc + scale * tan(pi * (u - 1/2))`` for ``u`` uniform on ``[0, 1)``."""
        u = rand(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _ops.tan(math.pi * (u - 0.5)) * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - _ops.log(self.scale) - _ops.log1p(z**2)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return _ops.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        self._validate_probability(value)
        # tan of the rounded +-pi/2 has the wrong sign in float32 (icdf(0) was +2.3e7): the
        # ends are infinite.
        quantile = _ops.tan(math.pi * (value - 0.5))
        quantile = _ops.where(value == 0, -math.inf, _ops.where(value == 1, math.inf, quantile))
        return quantile * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + _ops.log(self.scale)
