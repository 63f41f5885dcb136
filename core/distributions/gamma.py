"""The gamma distribution and those made of gamma variables: Chi2, Beta, Dirichlet, StudentT,
InverseGamma and FisherSnedecor.

Gamma variables are drawn by Marsaglia and Tsang's method (a squeezed normal
proposal, accepted with probability above 0.95) from plugrad's normal and
uniform draws, on every backend. Their reparameterized gradient is the implicit
one: a sample ``z`` of shape ``a`` moves with ``a`` as its quantile does at a
fixed probability, ``dz/da = -(dP(a, z)/da) / density(z)``, computed to full
precision by :mod:`plugrad.incomplete_gamma` (PyTorch's is an approximation,
off by up to about 1e-3 relative). Beta and Dirichlet samples are normalized
gamma samples, StudentT's a normal one over the root of a Chi2 one, so their
``rsample`` is differentiable in every parameter too.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .. import ops as _ops
from ..creation import arange, full_like, zeros_like
from ..dtype_functions import finfo
from ..errors import ShapeError
from ..function import Function, FunctionCtx
from ..grad_mode import no_grad
from ..incomplete_gamma import quantile_derivative_in_a
from ..pytorch_names import digamma, lgamma
from ..random import rand, randn
from ..special import gammainc
from ..tensor import Tensor
from . import constraints
from .distribution import _Elementwise
from .exp_family import ExponentialFamily
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform
from .utils import _first_accepted, broadcast_all

__all__ = ["Beta", "Chi2", "Dirichlet", "FisherSnedecor", "Gamma", "InverseGamma", "StudentT"]


def _draw_standard_gamma(concentration: Tensor) -> Tensor:
    """Gamma variables of shape ``concentration`` (rate 1), one per element; no gradient.

    Marsaglia and Tsang's method for shape ``a >= 1``; below 1 a draw of shape
    ``a + 1`` times ``u ** (1 / a)``. Every element gets proposals until one is
    accepted; the rounds go on only while some element has none.
    """
    with no_grad():
        a = concentration
        dtype, device = a.dtype, a.device
        ordinary = (a > 0) & _ops.isfinite(a)
        shape_a = _ops.where(ordinary, a, 1.0)
        boosted = shape_a < 1
        d = _ops.where(boosted, shape_a + 1, shape_a) - 1 / 3
        c = 1 / _ops.sqrt(9 * d)

        def propose() -> tuple[Tensor, Tensor]:
            x = randn(a.shape, dtype=dtype, device=device)
            u = rand(a.shape, dtype=dtype, device=device)
            v = 1 + c * x
            positive = v > 0
            v = _ops.where(positive, v, 1.0) ** 3
            accepted = positive & (_ops.log(u) < 0.5 * x * x + d - d * v + d * _ops.log(v))
            return accepted, d * v

        value = _first_accepted("gamma", propose, zeros_like(a), ~ordinary)
        boost = rand(a.shape, dtype=dtype, device=device) ** (1 / shape_a)
        value = _ops.where(boosted, value * boost, value)
        # The smallest normal number where a tiny shape's draw underflows (PyTorch's clamp).
        value = _ops.maximum(value, finfo(dtype).tiny)
        # 0 for shape 0 (all mass at 0), inf for an infinite shape, NaN for an invalid one.
        special = _ops.where(a == math.inf, math.inf, _ops.where(a == 0, 0.0, math.nan))
        return _ops.where(ordinary, value, special)


class _StandardGamma(Function):
    """A drawn gamma sample in the graph of its shape, with the implicit gradient."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Tensor:
        drawn, concentration = args
        ctx.save_for_backward(concentration, drawn)
        return drawn

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Tensor) -> tuple[Any, ...]:
        (grad,), (concentration, drawn) = grad_outputs, ctx.saved_tensors
        assert concentration is not None and drawn is not None
        return None, grad * quantile_derivative_in_a(concentration, drawn)


def standard_gamma(concentration: Tensor) -> Tensor:
    """Draw one gamma variable of shape ``concentration`` (rate 1) per element.

    Differentiable in ``concentration`` (the implicit reparameterization).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions.gamma import standard_gamma
    >>> _ = plugrad.manual_seed(0)
    >>> a = plugrad.full((10000,), 3.0, requires_grad=True)
    >>> z = standard_gamma(a)
    >>> round(float(z.mean()), 1)
    3.0
    >>> z.sum().backward()
    >>> round(float(a.grad.mean()), 1)  # E[dz/da] = d E[z] / da = 1
    1.0
    """
    return _StandardGamma.apply(_draw_standard_gamma(concentration.detach()), concentration)


class Gamma(_Elementwise, ExponentialFamily):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate``.

    Parameters
    ----------
    concentration, rate : Tensor or float
        Positive; they broadcast together into the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Gamma
    >>> d = Gamma(plugrad.tensor([1.0, 2.0]), 2.0)
    >>> d.mean, d.variance, d.log_prob(plugrad.tensor([0.5, 0.5]))
    (tensor([0.5000, 1.0000]), tensor([0.2500, 0.5000]), tensor([-0.3069, -0.3069]))
    >>> d.cdf(plugrad.tensor([0.5, 0.5]))
    tensor([0.6321, 0.2642])
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration": constraints.positive,
        "rate": constraints.positive,
    }
    support = constraints.nonnegative
    has_rsample = True
    concentration: Tensor
    rate: Tensor

    def __init__(
        self,
        concentration: Tensor | float,
        rate: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        self._set_parameters(validate_args, concentration=concentration, rate=rate)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """``lgamma(theta1 + 1) - (theta1 + 1) log(-theta2)``."""
        x, y = natural_params
        return lgamma(x + 1) - (x + 1) * _ops.log(-y)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return _ops.clip((self.concentration - 1) / self.rate, min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate**2

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """A standard gamma draw of shape ``concentration`` over ``rate``: both differentiable."""
        shape = self._extended_shape(sample_shape)
        return standard_gamma(_ops.broadcast_to(self.concentration, shape)) / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, rate = self.concentration, self.rate
        return _ops.xlogy(a, rate) + _ops.xlogy(a - 1, value) - rate * value - lgamma(a)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - _ops.log(self.rate) + lgamma(a) + (1 - a) * digamma(a)


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``.

    Parameters
    ----------
    df : Tensor or float
        Positive; its shape is the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Chi2
    >>> d = Chi2(plugrad.tensor([1.0, 4.0]))
    >>> d.mean, d.variance, d.df
    (tensor([1., 4.]), tensor([2., 8.]), tensor([1., 4.]))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"df": constraints.positive}

    def __init__(self, df: Tensor | float, validate_args: bool | None = None) -> None:
        (df_tensor,) = broadcast_all(df)
        super().__init__(0.5 * df_tensor, full_like(df_tensor, 0.5), validate_args=validate_args)

    @property
    def df(self) -> Tensor:
        """The degrees of freedom: twice the concentration."""
        return self.concentration * 2

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        new.concentration = _ops.broadcast_to(self.concentration, batch_shape)
        new.rate = _ops.broadcast_to(self.rate, batch_shape)


def _dirichlet_mode(concentration: Tensor) -> Tensor:
    """PyTorch's mode of a Dirichlet: ``(c - 1)+`` normalized; the first vertex where every
    ``c < 1`` (the density is unbounded at every vertex; PyTorch picks the first)."""
    above = _ops.clip(concentration - 1, min=0.0)
    mode = above / _ops.sum(above, axis=-1, keepdims=True)
    size = concentration.shape[-1]
    first = _ops.astype(arange(size, device=concentration.device) == 0, mode.dtype)
    all_below = _ops.all(concentration < 1, axis=-1, keepdims=True)
    return _ops.where(all_below, first, mode)


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the probability simplex, with ``concentration``.

    Parameters
    ----------
    concentration : Tensor
        Positive, at least 1-d: its last axis is the event (the number of
        categories), the rest the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Dirichlet
    >>> d = Dirichlet(plugrad.tensor([1.0, 2.0, 3.0]))
    >>> d.mean, d.event_shape
    (tensor([0.1667, 0.3333, 0.5000]), plugrad.Size([3]))
    >>> d.log_prob(plugrad.tensor([0.2, 0.3, 0.5]))
    tensor(1.5041)
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration": constraints.independent(constraints.positive, 1)
    }
    support = constraints.simplex
    has_rsample = True
    concentration: Tensor

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if not isinstance(concentration, Tensor) or concentration.ndim < 1:
            raise ShapeError(
                "Dirichlet: concentration must be a tensor of at least 1 dimension (its last "
                f"axis the categories), got {concentration!r}"
            )
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.concentration,)

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """``sum(lgamma(theta)) - lgamma(sum(theta))`` over the categories."""
        (x,) = natural_params
        return _ops.sum(lgamma(x), axis=-1) - lgamma(_ops.sum(x, axis=-1))

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        event = tuple(self.event_shape)
        new.concentration = _ops.broadcast_to(self.concentration, batch_shape + event)

    @property
    def mean(self) -> Tensor:
        c = self.concentration
        return c / _ops.sum(c, axis=-1, keepdims=True)

    @property
    def mode(self) -> Tensor:
        return _dirichlet_mode(self.concentration)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        total = _ops.sum(c, axis=-1, keepdims=True)
        return c * (total - c) / (total**2 * (total + 1))

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Gamma draws of shapes ``concentration``, normalized to sum to 1."""
        shape = self._extended_shape(sample_shape)
        draws = standard_gamma(_ops.broadcast_to(self.concentration, shape))
        total = _ops.sum(draws, axis=-1, keepdims=True)
        tiny = finfo(draws.dtype).tiny
        return _ops.clip(draws / total, tiny, 1 - finfo(draws.dtype).eps)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (
            _ops.sum(_ops.xlogy(c - 1, value), axis=-1)
            + lgamma(_ops.sum(c, axis=-1))
            - _ops.sum(lgamma(c), axis=-1)
        )

    def entropy(self) -> Tensor:
        c = self.concentration
        size = c.shape[-1]
        total = _ops.sum(c, axis=-1)
        log_beta = _ops.sum(lgamma(c), axis=-1) - lgamma(total)
        return log_beta + (total - size) * digamma(total) - _ops.sum((c - 1) * digamma(c), axis=-1)


class Beta(_Elementwise, ExponentialFamily):
    """The beta distribution on ``[0, 1]``, with ``concentration1`` (alpha) and
    ``concentration0`` (beta).

    Parameters
    ----------
    concentration1, concentration0 : Tensor or float
        Positive; they broadcast together into the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Beta
    >>> d = Beta(plugrad.tensor([2.0, 0.5]), 2.0)
    >>> d.mean, d.log_prob(plugrad.tensor([0.5, 0.5]))
    (tensor([0.5000, 0.2000]), tensor([ 0.4055, -0.6343]))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True
    concentration1: Tensor
    concentration0: Tensor

    def __init__(
        self,
        concentration1: Tensor | float,
        concentration0: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        self._set_parameters(
            validate_args, concentration1=concentration1, concentration0=concentration0
        )

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """``log B(theta1, theta2)``."""
        x, y = natural_params
        return lgamma(x) + lgamma(y) - lgamma(x + y)

    @property
    def _total(self) -> Tensor:
        return self.concentration1 + self.concentration0

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / self._total

    @property
    def mode(self) -> Tensor:
        pair = _ops.stack([self.concentration1, self.concentration0], axis=-1)
        return _dirichlet_mode(pair)[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self._total
        return self.concentration1 * self.concentration0 / (total**2 * (total + 1))

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``x / (x + y)`` for gamma draws ``x``, ``y`` of shapes ``concentration1``, ``0``."""
        shape = self._extended_shape(sample_shape)
        x = standard_gamma(_ops.broadcast_to(self.concentration1, shape))
        y = standard_gamma(_ops.broadcast_to(self.concentration0, shape))
        eps, tiny = finfo(x.dtype).eps, finfo(x.dtype).tiny
        return _ops.clip(x / (x + y), tiny, 1 - eps)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return (
            _ops.xlogy(a - 1, value)
            + _ops.xlogy(b - 1, 1 - value)
            + lgamma(a + b)
            - lgamma(a)
            - lgamma(b)
        )

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        total = a + b
        log_beta = lgamma(a) + lgamma(b) - lgamma(total)
        return log_beta - (a - 1) * digamma(a) - (b - 1) * digamma(b) + (total - 2) * digamma(total)


class StudentT(_Elementwise):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc`` and ``scale``.

    Parameters
    ----------
    df : Tensor or float
        Positive.
    loc : Tensor or float, optional
        Default 0.
    scale : Tensor or float, optional
        Positive, default 1. The three broadcast together into the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import StudentT
    >>> d = StudentT(plugrad.tensor([1.0, 1.5, 3.0]))
    >>> d.log_prob(plugrad.tensor([0.0, 0.0, 0.0])), d.variance
    (tensor([-1.1447, -1.0767, -1.0009]), tensor([nan, inf, 3.]))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True
    df: Tensor
    loc: Tensor
    scale: Tensor

    def __init__(
        self,
        df: Tensor | float,
        loc: Tensor | float = 0.0,
        scale: Tensor | float = 1.0,
        validate_args: bool | None = None,
    ) -> None:
        self._set_parameters(validate_args, df=df, loc=loc, scale=scale)

    @property
    def mean(self) -> Tensor:
        return _ops.where(self.df > 1, self.loc, math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        finite = self.scale**2 * df / _ops.where(df > 2, df - 2, 1.0)
        infinite = _ops.where(df > 1, math.inf, math.nan)
        return _ops.where(df > 2, finite, _ops.astype(infinite, finite.dtype))

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``loc + scale * x / sqrt(v / df)`` for ``x`` standard normal, ``v`` Chi2(df)."""
        shape = self._extended_shape(sample_shape)
        x = randn(shape, dtype=self.df.dtype, device=self.df.device)
        chi2 = 2 * standard_gamma(_ops.broadcast_to(0.5 * self.df, shape))
        return self.loc + self.scale * x / _ops.sqrt(chi2 / self.df)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        df = self.df
        y = (value - self.loc) / self.scale
        normalizer = (
            _ops.log(self.scale)
            + 0.5 * _ops.log(df)
            + 0.5 * math.log(math.pi)
            + lgamma(0.5 * df)
            - lgamma(0.5 * (df + 1))
        )
        return -0.5 * (df + 1) * _ops.log1p(y**2 / df) - normalizer

    def entropy(self) -> Tensor:
        df = self.df
        log_beta = lgamma(0.5 * df) + 0.5 * math.log(math.pi) - lgamma(0.5 * (df + 1))
        return (
            _ops.log(self.scale)
            + 0.5 * (df + 1) * (digamma(0.5 * (df + 1)) - digamma(0.5 * df))
            + 0.5 * _ops.log(df)
            + log_beta
        )


class InverseGamma(TransformedDistribution):
    """The distribution of ``1 / X`` for ``X`` gamma with ``concentration`` and ``rate``.

    Parameters
    ----------
    concentration, rate : Tensor or float
        Positive; they broadcast together into the batch shape (``rate`` is the
        scale of the inverse variable).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import InverseGamma
    >>> d = InverseGamma(plugrad.tensor([3.0, 1.5]), 2.0)
    >>> d.mean, d.variance
    (tensor([1., 4.]), tensor([1., inf]))
    >>> d.log_prob(plugrad.tensor([1.0, 1.0]))
    tensor([-0.6137, -0.8395])
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration": constraints.positive,
        "rate": constraints.positive,
    }
    support = constraints.positive
    base_dist: Gamma

    def __init__(
        self,
        concentration: Tensor | float,
        rate: Tensor | float,
        validate_args: bool | None = None,
    ) -> None:
        base = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base, PowerTransform(-1.0), validate_args=validate_args)

    @property
    def concentration(self) -> Tensor:
        """The shape of the gamma variable inverted."""
        return self.base_dist.concentration

    @property
    def rate(self) -> Tensor:
        """The rate of the gamma variable inverted (the scale of this one)."""
        return self.base_dist.rate

    @property
    def mean(self) -> Tensor:
        a = self.concentration
        return _ops.where(a > 1, self.rate / _ops.where(a > 1, a - 1, 1.0), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        a = self.concentration
        safe = _ops.where(a > 2, a, 3.0)
        return _ops.where(a > 2, self.rate**2 / ((safe - 1) ** 2 * (safe - 2)), math.inf)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a + _ops.log(self.rate) + lgamma(a) - (1 + a) * digamma(a)


class FisherSnedecor(_Elementwise):
    """Fisher's F distribution with ``df1`` and ``df2`` degrees of freedom.

    The ratio of two independent chi-squared variables, each over its degrees
    of freedom; its ``rsample`` is differentiable in both.

    Parameters
    ----------
    df1, df2 : Tensor or float
        Positive; they broadcast together into the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import FisherSnedecor
    >>> d = FisherSnedecor(plugrad.tensor([4.0, 10.0]), 6.0)
    >>> d.mean, d.log_prob(plugrad.tensor([1.0, 1.0]))
    (tensor([1.5000, 1.5000]), tensor([-0.8802, -0.6385]))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "df1": constraints.positive,
        "df2": constraints.positive,
    }
    support = constraints.positive
    has_rsample = True
    df1: Tensor
    df2: Tensor

    def __init__(
        self, df1: Tensor | float, df2: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self._set_parameters(validate_args, df1=df1, df2=df2)

    @property
    def mean(self) -> Tensor:
        df2 = self.df2
        return _ops.where(df2 > 2, df2 / _ops.where(df2 > 2, df2 - 2, 1.0), math.nan)

    @property
    def mode(self) -> Tensor:
        df1, df2 = self.df1, self.df2
        return _ops.where(df1 > 2, (df1 - 2) / df1 * df2 / (df2 + 2), math.nan)

    @property
    def variance(self) -> Tensor:
        df1, df2 = self.df1, self.df2
        safe = _ops.where(df2 > 4, df2, 5.0)
        value = 2 * safe**2 * (df1 + safe - 2) / (df1 * (safe - 2) ** 2 * (safe - 4))
        return _ops.where(df2 > 4, value, math.nan)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``(x1 / df1) / (x2 / df2)`` for chi-squared draws ``x1``, ``x2``."""
        shape = self._extended_shape(sample_shape)
        half1, half2 = 0.5 * self.df1, 0.5 * self.df2
        x1 = standard_gamma(_ops.broadcast_to(half1, shape)) / half1
        x2 = standard_gamma(_ops.broadcast_to(half2, shape)) / half2
        tiny = finfo(x1.dtype).tiny
        return _ops.clip(x1 / _ops.clip(x2, min=tiny), min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        half1, half2 = 0.5 * self.df1, 0.5 * self.df2
        ratio = self.df1 / self.df2
        log_beta = lgamma(half1) + lgamma(half2) - lgamma(half1 + half2)
        return (
            half1 * _ops.log(ratio)
            + _ops.xlogy(half1 - 1, value)
            - (half1 + half2) * _ops.log1p(ratio * value)
            - log_beta
        )
