"""Families defined as a simpler distribution pushed through transforms.

Half-normal and half-Cauchy (``|X|``), Gumbel (``-log(-log U)``), Weibull
and Pareto (powers and exponentials of an exponential variable),
Kumaraswamy (powers of a uniform one) and logistic-normal (a normal vector
broken into a simplex). Each is a :class:`TransformedDistribution`, so its
samples are the base's, transformed, and reparameterized; closed forms
replace the generic ``log_prob``, ``cdf`` and ``icdf`` where they are more
accurate.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .. import ops as _ops
from ..creation import full, full_like, ones_like, zeros_like
from ..dtype_functions import finfo
from ..tensor import Tensor
from . import constraints
from .cauchy import Cauchy
from .continuous import Exponential, Uniform
from .distribution import _LocScale
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import (
    AbsTransform,
    AffineTransform,
    ExpTransform,
    PowerTransform,
    StickBreakingTransform,
)

__all__ = [
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Kumaraswamy",
    "LogisticNormal",
    "Pareto",
    "Weibull",
]

#: The Euler-Mascheroni constant.
EULER_GAMMA = 0.57721566490153286060
_LOG_2 = math.log(2.0)


class _Folded(TransformedDistribution):
    """``|X|`` for ``X`` of a distribution symmetric about 0: twice its density on ``x >= 0``.

    ``X`` is of ``_symmetric_family``, with location 0 and the ``scale`` given.
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"scale": constraints.positive}
    support = constraints.nonnegative
    base_dist: Any
    _symmetric_family: ClassVar[type[_LocScale]]

    def __init__(self, scale: Tensor | float, validate_args: bool | None = None) -> None:
        base = self._symmetric_family(0.0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self) -> Tensor:
        """The scale of the distribution folded."""
        return self.base_dist.scale

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.scale)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._folded_log_prob(value)

    def _folded_log_prob(self, value: Tensor) -> Tensor:
        log_prob = self.base_dist.log_prob(value) + _LOG_2
        return _ops.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, value: Tensor) -> Tensor:
        self._validate_probability(value)
        return self.base_dist.icdf((value + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - _LOG_2


class HalfNormal(_Folded):
    """``|X|`` for ``X`` normal with mean 0 and standard deviation ``scale``.

    Parameters
    ----------
    scale : Tensor or float
        Positive; its shape is the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import HalfNormal
    >>> d = HalfNormal(2.0)
    >>> d.log_prob(plugrad.tensor([0.0, 2.0])), d.mean
    (tensor([-0.9189, -1.4189]), tensor(1.5958))
    >>> d.cdf(d.icdf(plugrad.tensor(0.25)))
    tensor(0.2500)
    """

    base_dist: Normal
    _symmetric_family = Normal

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        return self.scale**2 * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    """``|X|`` for ``X`` Cauchy with median 0 and half-width ``scale``.

    Parameters
    ----------
    scale : Tensor or float
        Positive; its shape is the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import HalfCauchy
    >>> d = HalfCauchy(1.0)
    >>> d.log_prob(plugrad.tensor([0.0, 1.0])), d.cdf(plugrad.tensor(1.0)), d.mean
    (tensor([-0.4516, -1.1447]), tensor(0.5000), tensor(inf))
    """

    base_dist: Cauchy
    _symmetric_family = Cauchy

    @property
    def mean(self) -> Tensor:
        shape, scale = self._extended_shape(), self.scale
        return full(shape, math.inf, dtype=scale.dtype, device=scale.device)

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        # As PyTorch's: the value is read in the scale's dtype.
        return self._folded_log_prob(_ops.astype(value, self.scale.dtype))


class Gumbel(TransformedDistribution):
    """The Gumbel (type I extreme value) distribution with location ``loc`` and ``scale``.

    ``loc - scale * log(-log U)`` for ``U`` uniform: the law of the maximum of
    many light-tailed variables.

    Parameters
    ----------
    loc : Tensor or float
        The mode.
    scale : Tensor or float
        Positive. ``loc`` and ``scale`` broadcast together into the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Gumbel
    >>> d = Gumbel(1.0, 2.0)
    >>> d.log_prob(plugrad.tensor([1.0, 3.0])), d.cdf(plugrad.tensor(1.0))
    (tensor([-1.6931, -2.0610]), tensor(0.3679))
    >>> d.mean, d.variance
    (tensor(2.1544), tensor(6.5797))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    loc: Tensor
    scale: Tensor

    def __init__(
        self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self._take_parameters(validate_args, loc=loc, scale=scale)
        info = finfo(self.loc.dtype)
        # Uniform on [tiny, 1 - eps]: log(-log u) stays finite.
        base = Uniform(
            full_like(self.loc, info.smallest_normal),
            full_like(self.loc, 1 - info.eps),
            validate_args=False,
        )
        transforms = [
            ExpTransform().inv,
            AffineTransform(0.0, -ones_like(self.scale)),
            ExpTransform().inv,
            AffineTransform(self.loc, -self.scale),
        ]
        super().__init__(base, transforms, validate_args=validate_args)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (self.loc - value) / self.scale
        return (z - _ops.exp(z)) - _ops.log(self.scale)

    def cdf(self, value: Tensor) -> Tensor:
        # Written out: through the transforms, a value far in a tail lands outside the base
        # uniform's [tiny, 1 - eps], which PyTorch's then refuses.
        if self._validate_args:
            self._validate_sample(value)
        return _ops.exp(-_ops.exp((self.loc - value) / self.scale))

    def icdf(self, value: Tensor) -> Tensor:
        self._validate_probability(value)
        return self.loc - self.scale * _ops.log(-_ops.log(value))

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev**2

    def entropy(self) -> Tensor:
        return _ops.log(self.scale) + (1 + EULER_GAMMA)


class Weibull(TransformedDistribution):
    """The Weibull distribution with ``scale`` (lambda) and ``concentration`` (k).

    ``scale * E ** (1 / concentration)`` for ``E`` standard exponential.

    Parameters
    ----------
    scale, concentration : Tensor or float
        Positive; they broadcast together into the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Weibull
    >>> d = Weibull(1.0, 2.0)
    >>> d.log_prob(plugrad.tensor([0.5, 1.0])), d.cdf(plugrad.tensor(1.0))
    (tensor([-0.2500, -0.3069]), tensor(0.6321))
    >>> d.mean, d.mode
    (tensor(0.8862), tensor(0.7071))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "scale": constraints.positive,
        "concentration": constraints.positive,
    }
    support = constraints.positive
    scale: Tensor
    concentration: Tensor

    def __init__(
        self,
        scale: Tensor | float,
        concentration: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        self._take_parameters(validate_args, scale=scale, concentration=concentration)
        base = Exponential(ones_like(self.scale), validate_args=False)
        super().__init__(base, self._build_transforms(), validate_args=validate_args)

    def _build_transforms(self) -> list[Any]:
        """The transforms of the parameters set; sets ``concentration_reciprocal`` too."""
        self.concentration_reciprocal = 1 / self.concentration
        return [
            PowerTransform(self.concentration_reciprocal),
            AffineTransform(0.0, self.scale),
        ]

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        super()._expand_into(new, batch_shape)
        new.transforms = new._build_transforms()

    @property
    def mean(self) -> Tensor:
        return self.scale * _ops.exp(_ops.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self) -> Tensor:
        # NOTE: for k <= 1 the density falls from 0 on: the mode is 0 (PyTorch's formula
        # gives nan, or a power of a negative number).
        k = self.concentration
        peaked = k > 1
        safe = _ops.where(peaked, k, 2.0)
        return _ops.where(peaked, self.scale * ((safe - 1) / safe) ** (1 / safe), 0.0)

    @property
    def variance(self) -> Tensor:
        inverse = self.concentration_reciprocal
        second = _ops.exp(_ops.lgamma(1 + 2 * inverse))
        return self.scale**2 * (second - _ops.exp(2 * _ops.lgamma(1 + inverse)))

    def entropy(self) -> Tensor:
        inverse = self.concentration_reciprocal
        return EULER_GAMMA * (1 - inverse) + _ops.log(self.scale * inverse) + 1


class Pareto(TransformedDistribution):
    """The Pareto (type I) distribution with ``scale`` (the minimum) and shape ``alpha``.

    ``scale * exp(E)`` for ``E`` exponential with rate ``alpha``.

    Parameters
    ----------
    scale, alpha : Tensor or float
        Positive; they broadcast together into the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Pareto
    >>> d = Pareto(1.0, 3.0)
    >>> d.log_prob(plugrad.tensor([1.0, 2.0])), d.cdf(plugrad.tensor(2.0))
    (tensor([ 1.0986, -1.6740]), tensor(0.8750))
    >>> d.mean, d.variance, d.support
    (tensor(1.5000), tensor(0.7500), GreaterThanEq(lower_bound=1.0))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "alpha": constraints.positive,
        "scale": constraints.positive,
    }
    scale: Tensor
    alpha: Tensor

    def __init__(
        self, scale: Tensor | float, alpha: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self._take_parameters(validate_args, scale=scale, alpha=alpha)
        base = Exponential(self.alpha, validate_args=False)
        transforms = [ExpTransform(), AffineTransform(0.0, self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    @property
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)

    def _moment_ratio(self, least: float) -> Tensor:
        """``alpha`` where above ``least``, where the moment exists; ``least + 1`` elsewhere."""
        alpha = _ops.clip(self.alpha, least, None)
        return _ops.where(alpha > least, alpha, least + 1.0)

    @property
    def mean(self) -> Tensor:
        a = self._moment_ratio(1.0)
        return _ops.where(self.alpha > 1, a * self.scale / (a - 1), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = self._moment_ratio(2.0)
        finite = self.scale**2 * a / ((a - 1) ** 2 * (a - 2))
        return _ops.where(self.alpha > 2, finite, math.inf)

    def entropy(self) -> Tensor:
        return _ops.log(self.scale / self.alpha) + (1 + 1 / self.alpha)


def _kumaraswamy_moment(a: Tensor, b: Tensor, n: int) -> Tensor:
    """``E[X**n] = b B(1 + n / a, b)``."""
    first = 1 + n / a
    log_beta = _ops.lgamma(first) + _ops.lgamma(b) - _ops.lgamma(first + b)
    return b * _ops.exp(log_beta)


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on ``[0, 1]``: density ``a b x**(a-1) (1 - x**a)**(b-1)``.

    Like a beta distribution, with a CDF in closed form:
    ``(1 - (1 - U) ** (1 / b)) ** (1 / a)`` for ``U`` uniform.

    Parameters
    ----------
    concentration1, concentration0 : Tensor or float
        ``a`` and ``b``, positive; they broadcast together into the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Kumaraswamy
    >>> d = Kumaraswamy(2.0, 3.0)
    >>> d.log_prob(plugrad.tensor([0.25, 0.5])), d.cdf(plugrad.tensor(0.5))
    (tensor([0.2764, 0.5232]), tensor(0.5781))
    >>> d.mean, d.mode
    (tensor(0.4571), tensor(0.4472))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    concentration1: Tensor
    concentration0: Tensor

    def __init__(
        self,
        concentration1: Tensor | float,
        concentration0: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        self._take_parameters(
            validate_args, concentration1=concentration1, concentration0=concentration0
        )
        c1, c0 = self.concentration1, self.concentration0
        base = Uniform(full_like(c0, 0.0), full_like(c0, 1.0), validate_args=False)
        transforms = [PowerTransform(1 / c0), AffineTransform(1.0, -1.0), PowerTransform(1 / c1)]
        super().__init__(base, transforms, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        # ((a - 1) / (a b - 1)) ** (1 / a) where a, b >= 1 (not both 1); nan elsewhere, where
        # the density is unbounded or flat. NOTE: PyTorch's formula is nan wherever b > 1.
        a, b = self.concentration1, self.concentration0
        peaked = (a >= 1) & (b >= 1) & ((a > 1) | (b > 1))
        a, b = _ops.where(peaked, a, 2.0), _ops.where(peaked, b, 2.0)
        return _ops.where(peaked, ((a - 1) / (a * b - 1)) ** (1 / a), math.nan)

    @property
    def variance(self) -> Tensor:
        second = _kumaraswamy_moment(self.concentration1, self.concentration0, 2)
        return second - self.mean**2

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        harmonic = _ops.digamma(b + 1) + EULER_GAMMA
        return (1 - 1 / b) + (1 - 1 / a) * harmonic - _ops.log(a) - _ops.log(b)


class LogisticNormal(TransformedDistribution):
    """A normal vector of ``K`` entries broken into a simplex of ``K + 1`` by a stick.

    ``StickBreakingTransform()(X)`` for ``X`` normal with ``loc`` and
    ``scale``, entry by entry: each draw is a vector of ``K + 1``
    probabilities.

    Parameters
    ----------
    loc, scale : Tensor or float
        Of the normal vector, which takes their last axis (broadcast
        together; ``K = 1`` when both are numbers); ``scale`` positive.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import LogisticNormal
    >>> d = LogisticNormal(plugrad.zeros(2), 1.0)
    >>> d.batch_shape, d.event_shape, d.sample((4,)).shape
    (plugrad.Size([]), plugrad.Size([3]), (4, 3))
    >>> d.log_prob(plugrad.tensor([0.25, 0.25, 0.5]))
    tensor(1.3054)
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.simplex
    base_dist: Any

    def __init__(
        self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None
    ) -> None:
        base: Any = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand((1,))
        self._parameters_checked = True  # by the normal
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    @property
    def loc(self) -> Tensor:
        """The mean of the normal vector."""
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        """The standard deviation of each entry of the normal vector."""
        return self.base_dist.base_dist.scale
