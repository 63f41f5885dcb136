"""The generalized Pareto distribution: the limit law of the excesses over a high threshold.

Its survival function is ``(1 + c z) ** (-1 / c)`` with ``z = (x - loc) / scale``
and ``c`` the ``concentration`` (``exp(-z)`` at ``c = 0``). With ``c >= 0`` the
support is ``[loc, inf)``; with ``c < 0`` it is bounded above, at
``loc - scale / c``. Exponential (``loc = 0, c = 0``), Pareto (``c > 0``,
``loc = scale / c``) and uniform (``c = -1``) distributions are special cases.
"""

from __future__ import annotations

import math
from typing import ClassVar

from .. import ops as _ops
from ..random import rand
from ..tensor import Tensor
from . import constraints
from .distribution import _Elementwise

__all__ = ["GeneralizedPareto"]

#: A concentration this close to 0 is taken as 0 (the exponential tail), as PyTorch does.
_ZERO_TOLERANCE = 1e-8


class GeneralizedPareto(_Elementwise):
    """The generalized Pareto distribution with ``loc``, ``scale`` and ``concentration``.

    The density is ``(1 + c z) ** (-1 / c - 1) / scale`` at ``z = (x - loc) / scale``
    (``exp(-z) / scale`` for ``c = 0``), on ``[loc, inf)`` when ``c >= 0`` and on
    ``[loc, loc - scale / c]`` when ``c < 0``. A concentration within ``1e-8`` of 0
    is taken as 0, as PyTorch does. Samples are the quantiles of uniform draws, so
    ``rsample`` is differentiable in every parameter.

    Parameters
    ----------
    loc : Tensor or float
        The lower end of the support.
    scale : Tensor or float
        Positive.
    concentration : Tensor or float
        The shape ``c``: any real number; the tail is heavier as it grows. The
        three broadcast together into the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import GeneralizedPareto
    >>> d = GeneralizedPareto(0.0, 2.0, plugrad.tensor([0.0, 0.25, -0.5]))
    >>> d.log_prob(plugrad.tensor([1.0, 1.0, 1.0]))
    tensor([-1.1931, -1.2821, -0.9808])
    >>> d.cdf(plugrad.tensor([1.0, 1.0, 1.0])), d.mean
    (tensor([0.3935, 0.3757, 0.4375]), tensor([2.0000, 2.6667, 1.3333]))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "concentration": constraints.real,
    }
    has_rsample = True
    loc: Tensor
    scale: Tensor
    concentration: Tensor

    def __init__(
        self,
        loc: Tensor | float,
        scale: Tensor | float,
        concentration: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        self._set_parameters(validate_args, loc=loc, scale=scale, concentration=concentration)

    @property
    def support(self) -> constraints.Constraint:
        """``[loc, inf)``, or ``[loc, loc - scale / concentration]`` where the concentration
        is negative."""
        c = self.concentration
        negative = c < 0
        upper = _ops.where(
            negative, self.loc - self.scale / _ops.where(negative, c, -1.0), math.inf
        )
        return constraints.interval(self.loc, upper)

    def _zero_and_safe(self) -> tuple[Tensor, Tensor]:
        """Where the concentration is taken as 0, and the concentration with 1 there (so that
        the branch of nonzero concentration, computed everywhere, stays finite)."""
        c = self.concentration
        zero = _ops.abs(c) <= _ZERO_TOLERANCE
        return zero, _ops.where(zero, 1.0, c)

    @property
    def mean(self) -> Tensor:
        """``loc + scale / (1 - c)``; NaN where ``c >= 1`` (no finite mean), as PyTorch's."""
        c = self.concentration
        finite = c < 1
        safe = _ops.where(finite, c, 0.0)
        return _ops.where(finite, self.loc + self.scale / (1 - safe), math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        """``scale**2 / ((1 - c)**2 (1 - 2 c))``; NaN where ``c >= 1/2``, as PyTorch's."""
        c = self.concentration
        finite = c < 0.5
        safe = _ops.where(finite, c, 0.0)
        return _ops.where(finite, self.scale**2 / ((1 - safe) ** 2 * (1 - 2 * safe)), math.nan)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """The quantile of a uniform draw on ``[0, 1)``: differentiable in the parameters."""
        shape = self._extended_shape(sample_shape)
        u = rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self._quantile(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, c = self._zero_and_safe()
        power = 1 / c + 1  # 0 at c = -1 (uniform), where log1p(c z) reaches -inf at the top
        tail = _ops.where(power == 0, 0.0, power * _ops.log1p(c * z))
        # (At c = 0, -z plus the first term of the series in c, which is 0 there but carries
        # the gradient in c: it was 0, where z - z**2 / 2 is right.)
        c0 = self.concentration
        return -_ops.log(self.scale) - _ops.where(zero, z + c0 * (z - z * z / 2), tail)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """The log of ``1 - cdf(value)``: ``-log1p(c z) / c`` (``-z`` at ``c = 0``)."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, c = self._zero_and_safe()
        c0 = self.concentration  # (the series' first term: see log_prob)
        return _ops.where(zero, -z + c0 * (z * z / 2), -_ops.log1p(c * z) / c)

    def log_cdf(self, value: Tensor) -> Tensor:
        """The log of the cumulative distribution function."""
        return _ops.log(self.cdf(value))

    def cdf(self, value: Tensor) -> Tensor:
        # -expm1 keeps full precision near loc (PyTorch's 1 - exp loses it there).
        return -_ops.expm1(self.log_survival_function(value))

    def icdf(self, value: Tensor) -> Tensor:
        self._validate_probability(value)
        return self._quantile(value)

    def _quantile(self, value: Tensor) -> Tensor:
        log_survival = _ops.log1p(-value)
        zero, c = self._zero_and_safe()
        nonzero = self.loc + self.scale / c * _ops.expm1(-c * log_survival)
        c0 = self.concentration  # (the series' first term: see log_prob)
        series = -log_survival + c0 * (log_survival * log_survival / 2)
        return _ops.where(zero, self.loc + self.scale * series, nonzero)

    def entropy(self) -> Tensor:
        entropy = _ops.log(self.scale) + self.concentration + 1
        return _ops.broadcast_to(entropy, tuple(self._batch_shape))
