"""The Kullback-Leibler divergence between two distributions, and how to add a pair."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

from .. import linalg as _linalg
from .. import ops as _ops
from ..creation import full_like
from ..dtype_functions import broadcast_shapes
from ..errors import ArgumentError, ShapeError
from ..nn.functional import softplus
from ..pytorch_names import diag_embed, digamma, erf, lgamma
from ..tensor import Size, Tensor
from .cauchy import Cauchy
from .continuous import Exponential, Laplace, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .counts import Binomial, Poisson
from .discrete import Bernoulli, Categorical, Geometric, OneHotCategorical
from .distribution import Distribution
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent
from .low_rank_multivariate_normal import (
    LowRankMultivariateNormal,
    _low_rank_log_det,
    _low_rank_mahalanobis,
    _sum_of_squares,
    _woodbury_factor,
)
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import LogNormal, Normal
from .transformed_distribution import TransformedDistribution
from .transformed_families import Gumbel, HalfNormal, Pareto
from .utils import sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

KLFunction = Callable[[Any, Any], Tensor]
F = TypeVar("F", bound=KLFunction)

_KL_REGISTRY: dict[tuple[type, type], KLFunction] = {}
_KL_CHOSEN: dict[tuple[type, type], KLFunction | None] = {}


def register_kl(type_p: type, type_q: type) -> Callable[[F], F]:
    """Register the decorated function as ``KL(p || q)`` for ``p`` a ``type_p``, ``q`` a ``type_q``.

    :func:`kl_divergence` takes the most specific registered pair that both
    distributions' classes derive from (the first class decides ties).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Normal, kl_divergence, register_kl
    >>> class Standard(Normal):
    ...     def __init__(self):
    ...         super().__init__(0.0, 1.0)
    >>> @register_kl(Standard, Standard)
    ... def _kl_standard(p, q):
    ...     return plugrad.zeros(())
    >>> kl_divergence(Standard(), Standard())
    tensor(0.)
    """
    for kind in (type_p, type_q):
        if not (isinstance(kind, type) and issubclass(kind, Distribution)):
            raise ArgumentError(f"register_kl() takes Distribution subclasses, got {kind!r}")

    def decorator(function: F) -> F:
        _KL_REGISTRY[type_p, type_q] = function
        _KL_CHOSEN.clear()
        return function

    return decorator


def _dispatch(type_p: type, type_q: type) -> KLFunction | None:
    key = (type_p, type_q)
    if key not in _KL_CHOSEN:
        matches = [
            (type_p.__mro__.index(p), type_q.__mro__.index(q), function)
            for (p, q), function in _KL_REGISTRY.items()
            if issubclass(type_p, p) and issubclass(type_q, q)
        ]
        _KL_CHOSEN[key] = min(matches, key=lambda m: m[:2])[2] if matches else None
    return _KL_CHOSEN[key]


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """``KL(p || q)``, the expected log-ratio of ``p``'s density to ``q``'s under ``p``.

    Differentiable in both distributions' parameters. Its shape is the batch
    shapes of ``p`` and ``q`` broadcast together; it is ``inf`` where ``p``
    puts mass where ``q`` puts none.

    Raises
    ------
    NotImplementedError
        When no formula is registered for the pair (see :func:`register_kl`).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Normal, kl_divergence
    >>> kl_divergence(Normal(0.0, 1.0), Normal(plugrad.tensor([0.0, 1.0]), 1.0))
    tensor([0.0000, 0.5000])
    """
    for name, value in (("p", p), ("q", q)):
        if not isinstance(value, Distribution):
            raise ArgumentError(
                f"kl_divergence(): {name} must be a Distribution, got {type(value).__name__}"
            )
    function = _dispatch(type(p), type(q))
    if function is None:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p a {type(p).__name__} and q a "
            f"{type(q).__name__}; add one with plugrad.distributions.register_kl"
        )
    return function(p, q)


def _infinite_where(condition: Tensor, value: Tensor) -> Tensor:
    return _ops.where(condition, math.inf, value)


def _require_alike(p: Any, q: Any, attribute: str, error: type[Exception], message: str) -> None:
    """Raise ``error(message)``, formatted with the two ``attribute`` values, where they differ."""
    first, second = getattr(p, attribute), getattr(q, attribute)
    if first != second:
        shown = (tuple(v) if isinstance(v, Size) else v for v in (first, second))
        raise error(message.format(*shown))


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - _ops.log(var_ratio))


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p: LogNormal, q: LogNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = _ops.where(p.probs == 0, 0.0, _infinite_where(q.probs == 0, t1))
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = _ops.where(p.probs == 1, 0.0, _infinite_where(q.probs == 1, t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = _ops.where(p.probs == 0, 0.0, _infinite_where(q.probs == 0, t))
    return _ops.sum(t, axis=-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = _ops.log((q.high - q.low) / (p.high - p.low))
    return _infinite_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = _ops.abs(p.loc - q.loc)
    t1 = -_ops.log(scale_ratio)
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * _ops.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return rate_ratio - 1 - _ops.log(rate_ratio)


def _infinite(p: Distribution, q: Distribution) -> Tensor:
    """inf everywhere: ``p`` has mass where ``q`` has none (a line, a half-line)."""
    shape = broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    return full_like(_ops.broadcast_to(p.mean.detach(), shape), math.inf)


def _register_infinite(*pairs: tuple[type, type]) -> None:
    """Register :func:`_infinite` as ``KL(p || q)`` for each pair of types."""
    for type_p, type_q in pairs:
        register_kl(type_p, type_q)(_infinite)


# p reaches beyond any bounded (or half-bounded) q: no formula, just inf, as PyTorch's.
_register_infinite(
    (Normal, Uniform), (Normal, Exponential), (Laplace, Uniform), (Laplace, Exponential),
    (Exponential, Uniform),
)  # fmt: skip


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    what = "KL-divergence between two MultivariateNormals of different event shapes"
    _require_alike(p, q, "event_shape", ShapeError, what + ": {} and {}")
    size = p.event_shape[0]
    p_tril, q_tril = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = q._half_log_det() - p._half_log_det()
    batch = broadcast_shapes(tuple(q_tril.shape[:-2]), tuple(p_tril.shape[:-2]))
    # Only the lower triangle of a scale_tril counts (its upper one gets no gradient).
    q_full = _ops.broadcast_to(_ops.tril(q_tril), (*batch, size, size))
    p_full = _ops.broadcast_to(p_tril, (*batch, size, size))
    # ||Lq^-1 Lp||_F^2 is the trace of Sq^-1 Sp.
    term2 = _ops.sum(_linalg.solve(q_full, p_full) ** 2, axis=(-2, -1))
    term3 = _batch_mahalanobis(q_tril, q.loc - p.loc)
    shape = broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    return _ops.broadcast_to(half_term1 + 0.5 * (term2 + term3 - size), shape)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    what = "KL between Independent distributions with different reinterpreted_batch_ndims"
    _require_alike(p, q, "reinterpreted_batch_ndims", NotImplementedError, what + " ({} and {})")
    result = kl_divergence(p.base_dist, q.base_dist)
    return sum_rightmost(result, p.reinterpreted_batch_ndims)


# -- the gamma family ------------------------------------------------------------------------

_EULER_GAMMA = 0.57721566490153286060


def _x_log_x(x: Tensor) -> Tensor:
    return _ops.xlogy(x, x)


def _beta_log_mean(p: Beta) -> Tensor:
    """``E[log x]`` under a beta distribution."""
    return digamma(p.concentration1) - digamma(p.concentration1 + p.concentration0)


def _normal_cross_entropy(q: Normal, mean: Tensor, second_moment: Tensor) -> Tensor:
    """``E[-log q(x)]`` for a normal ``q`` under any ``p`` with these first two moments."""
    variance = q.scale**2
    return 0.5 * _ops.log(2 * math.pi * variance) + (
        second_moment - 2 * q.loc * mean + q.loc**2
    ) / (2 * variance)


def _gamma_cross_entropy(q: Gamma, mean: Tensor, log_mean: Tensor) -> Tensor:
    """``E[-log q(x)]`` for a gamma ``q`` under any ``p`` with ``E[x]`` and ``E[log x]``."""
    a = q.concentration
    return lgamma(a) - a * _ops.log(q.rate) - (a - 1) * log_mean + q.rate * mean


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    a, b = p.concentration, p.rate
    return (
        (a - q.concentration) * digamma(a)
        - lgamma(a)
        + lgamma(q.concentration)
        + q.concentration * _ops.log(b / q.rate)
        + a * (q.rate - b) / b
    )


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    a, b = p.concentration1, p.concentration0
    total, q_total = a + b, q.concentration1 + q.concentration0
    return (
        lgamma(q.concentration1)
        + lgamma(q.concentration0)
        + lgamma(total)
        - lgamma(a)
        - lgamma(b)
        - lgamma(q_total)
        + (a - q.concentration1) * digamma(a)
        + (b - q.concentration0) * digamma(b)
        + (q_total - total) * digamma(total)
    )


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    c, d = p.concentration, q.concentration
    total = _ops.sum(c, axis=-1)
    log_normalizers = lgamma(total) - lgamma(_ops.sum(d, axis=-1))
    log_means = digamma(c) - _ops.expand_dims(digamma(total), axis=-1)
    return (
        log_normalizers
        - _ops.sum(lgamma(c) - lgamma(d), axis=-1)
        + _ops.sum((c - d) * log_means, axis=-1)
    )


@register_kl(Gamma, Exponential)
@register_kl(Beta, Exponential)
@register_kl(ContinuousBernoulli, Exponential)
def _kl_nonnegative_exponential(p: Any, q: Exponential) -> Tensor:
    """For any ``p`` on the non-negative numbers: ``-H(p) + E[-log q(x)]`` from its mean."""
    return -p.entropy() - _ops.log(q.rate) + q.rate * p.mean


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    # E[log x] = -(Euler's gamma) - log(rate) under the exponential distribution.
    log_mean = -_EULER_GAMMA - _ops.log(p.rate)
    return -p.entropy() + _gamma_cross_entropy(q, 1 / p.rate, log_mean)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Tensor:
    a, b = p.concentration, p.rate
    return -p.entropy() + _normal_cross_entropy(q, a / b, (a**2 + a) / b**2)


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    return -p.entropy() + _gamma_cross_entropy(q, p.mean, _beta_log_mean(p))


@register_kl(Beta, Normal)
@register_kl(ContinuousBernoulli, Normal)
def _kl_by_moments_normal(p: Any, q: Normal) -> Tensor:
    """For any ``p`` with a mean and a variance: ``-H(p) + E[-log q(x)]`` from them."""
    mean = p.mean
    return -p.entropy() + _normal_cross_entropy(q, mean, p.variance + mean**2)


@register_kl(Beta, Uniform)
@register_kl(ContinuousBernoulli, Uniform)
def _kl_unit_interval_uniform(p: Any, q: Uniform) -> Tensor:
    """For any ``p`` on ``[0, 1]``: inf only where ``[low, high)`` misses part of it."""
    # NOTE: PyTorch's continuous Bernoulli one is inf at low = 0 or high = 1 too, where the
    # divergence is finite.
    result = -p.entropy() + _ops.log(q.high - q.low)
    return _infinite_where((q.low > 0) | (q.high < 1), result)


def _uniform_log_mean(p: Uniform) -> Tensor:
    """``E[log x]`` under a uniform distribution on ``[low, high]``, ``0 <= low``."""
    width = p.high - p.low
    return (_x_log_x(p.high) - _x_log_x(p.low) - width) / width


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    width = p.high - p.low
    # E[log(1 - x)] is E[log y] for y = 1 - x, uniform on [1 - high, 1 - low].
    log_complement_mean = (_x_log_x(1 - p.low) - _x_log_x(1 - p.high) - width) / width
    log_beta = (
        lgamma(q.concentration1)
        + lgamma(q.concentration0)
        - lgamma(q.concentration1 + q.concentration0)
    )
    result = (
        -_ops.log(width)
        - (q.concentration1 - 1) * _uniform_log_mean(p)
        - (q.concentration0 - 1) * log_complement_mean
        + log_beta
    )
    return _infinite_where((p.high > 1) | (p.low < 0), result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    result = -_ops.log(p.high - p.low) + _gamma_cross_entropy(q, p.mean, _uniform_log_mean(p))
    return _infinite_where(p.low < 0, result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p: Uniform, q: Exponential) -> Tensor:
    result = q.rate * p.mean - _ops.log((p.high - p.low) * q.rate)
    return _infinite_where(p.low < 0, result)


# Supports that p covers and q does not: inf, as PyTorch's.
_register_infinite(
    (Gamma, Beta), (Gamma, Uniform), (Exponential, Beta), (Normal, Gamma), (Normal, Beta),
    (Laplace, Gamma), (Laplace, Beta),
)  # fmt: skip


# -- Cauchy, the continuous Bernoulli and the transformed families ---------------------------


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    if p.transforms != q.transforms:
        raise NotImplementedError(
            "KL between TransformedDistributions is that of their bases only for equal "
            f"transforms; got {p.transforms!r} and {q.transforms!r}"
        )
    what = "KL between TransformedDistributions of different event shapes"
    _require_alike(p, q, "event_shape", NotImplementedError, what + " ({} and {})")
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    spread = (p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2
    return _ops.log(spread) - _ops.log(4 * p.scale * q.scale)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    scale_ratio = p.scale / q.scale
    q_loc, p_loc = q.loc / q.scale, p.loc / q.scale
    t1 = -_ops.log(scale_ratio) - q_loc + p_loc
    t3 = _ops.exp(q_loc + lgamma(1 + scale_ratio) - p_loc)
    return t1 + scale_ratio * _EULER_GAMMA + t3 - (1 + _EULER_GAMMA)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * _ops.log(p.scale / q.scale) - _ops.log(alpha_ratio) + alpha_ratio - 1
    return _infinite_where(p.scale < q.scale, result)


def _continuous_bernoulli_log_mass(q: ContinuousBernoulli, mean: Tensor) -> Tensor:
    """``E[-log q(x)]`` for a continuous Bernoulli ``q`` under any ``p`` of that mean."""
    return -mean * q.logits - _ops.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + _ops.log1p(-p.probs)
    return t1 + t2 - q._cont_bern_log_norm() - _ops.log1p(-q.probs)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    # NOTE: finite for [low, high) within [0, 1], bounds included (PyTorch's is inf there).
    result = -p.entropy() + _continuous_bernoulli_log_mass(q, p.mean)
    return _infinite_where((p.high > 1) | (p.low < 0), result)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p: Beta, q: ContinuousBernoulli) -> Tensor:
    return -p.entropy() + _continuous_bernoulli_log_mass(q, p.mean)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    scale_rate = p.rate * q.scale
    loc_ratio = q.loc / q.scale
    t2 = _ops.exp(loc_ratio) * scale_rate / (scale_rate + 1)
    return _ops.log(scale_rate) - 1 - loc_ratio + t2 + 1 / scale_rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    a = p.concentration
    rate_scale = p.rate * q.scale
    loc_ratio = q.loc / q.scale
    t1 = (a - 1) * digamma(a) - lgamma(a) - a
    t2 = _ops.log(rate_scale) + a / rate_scale
    t3 = _ops.exp(loc_ratio) * (1 + 1 / rate_scale) ** (-a) - loc_ratio
    return t1 + t2 + t3


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    scale_ratio = p.scale / q.scale
    t1 = _ops.log(scale_ratio / math.sqrt(2 * math.pi))
    t2 = (math.pi * scale_ratio * 0.5) ** 2 / 3
    t3 = ((p.loc + p.scale * _EULER_GAMMA - q.loc) / q.scale) ** 2 * 0.5
    return -t1 + t2 + t3 - (_EULER_GAMMA + 1)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    mean_ratio = p.loc / q.scale
    variance_ratio = (p.scale / q.scale) ** 2
    loc_ratio = q.loc / q.scale
    t1 = _ops.log(variance_ratio) * 0.5
    t3 = _ops.exp(-mean_ratio + 0.5 * variance_ratio + loc_ratio)
    return -t1 + mean_ratio - loc_ratio + t3 - 0.5 * (1 + math.log(2 * math.pi))


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    ratio = q.scale / (p.high - p.low)
    high, low = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
    t1 = _ops.log(ratio) + 0.5 * (high + low)
    return t1 - ratio * (_ops.exp(-high) - _ops.exp(-low))


def _pareto_alpha_above(p: Pareto, least: float) -> tuple[Tensor, Tensor]:
    """Where ``alpha > least`` (the moment needed is finite), and ``alpha`` there (2 + least
    elsewhere, so that nothing divides by 0)."""
    finite = p.alpha > least
    return finite, _ops.where(finite, p.alpha, least + 2.0)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    finite, alpha = _pareto_alpha_above(p, 1.0)
    scale_rate = p.scale * q.rate
    result = _ops.log(alpha / scale_rate) - 1 / alpha + alpha * scale_rate / (alpha - 1) - 1
    return _infinite_where(~finite, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    finite, alpha = _pareto_alpha_above(p, 1.0)
    a = q.concentration
    common = _ops.log(p.scale) + 1 / alpha
    t1 = _ops.log(alpha) - common
    t2 = lgamma(a) - a * _ops.log(q.rate)
    t4 = q.rate * alpha * p.scale / (alpha - 1)
    return _infinite_where(~finite, t1 + t2 + (1 - a) * common + t4 - 1)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Tensor:
    finite, alpha = _pareto_alpha_above(p, 2.0)
    common = p.scale / (alpha - 1)
    t1 = _ops.log(math.sqrt(2 * math.pi) * q.scale * alpha / p.scale)
    t3 = alpha * common**2 / (alpha - 2)
    t4 = (alpha * common - q.loc) ** 2
    result = t1 - 1 / alpha + (t3 + t4) / (2 * q.scale**2) - 1
    return _infinite_where(~finite, result)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    outside = p.low < q.scale
    # (x log x of a negative bound would warn: the bounds where it is inf are replaced)
    low, high = _ops.where(outside, 1.0, p.low), _ops.where(outside, 2.0, p.high)
    width = high - low
    t1 = _ops.log(q.alpha * q.scale**q.alpha * width)
    t2 = (_x_log_x(high) - _x_log_x(low) - width) / width
    return _infinite_where(outside, t2 * (q.alpha + 1) - t1)


# Supports that p covers and q does not: inf, as PyTorch's.
_register_infinite(
    (ContinuousBernoulli, Pareto), (Exponential, ContinuousBernoulli), (Exponential, Pareto),
    (Gamma, ContinuousBernoulli), (Gamma, Pareto), (Gumbel, Beta), (Gumbel, ContinuousBernoulli),
    (Gumbel, Exponential), (Gumbel, Gamma), (Gumbel, Pareto), (Gumbel, Uniform),
    (Laplace, ContinuousBernoulli), (Laplace, Pareto), (Normal, ContinuousBernoulli),
    (Normal, Pareto), (Pareto, Beta), (Pareto, ContinuousBernoulli), (Pareto, Uniform),
    (Beta, Pareto),
)  # fmt: skip


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    # rate_p log(rate_p / rate_q) - rate_p + rate_q, with 0 log 0 = 0: a rate_p of 0 gives
    # rate_q (PyTorch's gives nan), and a rate_q of 0 under a positive rate_p gives inf.
    p_zero, q_zero = p.rate == 0, q.rate == 0
    p_rate, q_rate = _ops.where(p_zero, 1.0, p.rate), _ops.where(q_zero, 1.0, q.rate)
    log_ratio = _ops.log(p_rate) - _ops.log(q_rate)
    t = _ops.where(p_zero, 0.0, _infinite_where(q_zero, p.rate * log_ratio))
    return t - (p.rate - q.rate)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    # -H(p) - E_p[log q] with log q(k) = k log(rate) - rate for k in {0, 1}
    q_zero = q.rate == 0
    log_rate = _ops.log(_ops.where(q_zero, 1.0, q.rate))
    expected = _ops.where(p.probs == 0, 0.0, p.probs * log_rate)
    expected = _ops.where(q_zero & (p.probs > 0), -math.inf, expected)
    return -p.entropy() - (expected - q.rate)


def _kl_poisson_bounded(p: Poisson, q: Bernoulli | Binomial) -> Tensor:
    """inf (as PyTorch's), but for a rate of 0: all of p's mass at 0, ``-log q(0)``."""
    count = q.total_count if isinstance(q, Binomial) else 1.0
    at_zero = count * softplus(q.logits)  # -log (1 - probs) ** n
    shape = broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    return _ops.broadcast_to(_infinite_where(p.rate != 0, at_zero), shape)


register_kl(Poisson, Bernoulli)(_kl_poisson_bounded)
register_kl(Poisson, Binomial)(_kl_poisson_bounded)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    if bool(_ops.any(p.total_count < q.total_count)):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented"
        )
    per_trial = p.probs * (p.logits - q.logits) + _ops.log1p(-p.probs) - _ops.log1p(-q.probs)
    # p has mass at counts above q's total_count: inf there
    return _infinite_where(p.total_count > q.total_count, p.total_count * per_trial)


def _require_same_event(p: Any, q: Any) -> None:
    what = "KL-divergence between two (Low Rank) Multivariate Normals of different event shapes"
    _require_alike(p, q, "event_shape", ShapeError, what + ": {} and {}")


def _low_rank_terms(q: LowRankMultivariateNormal, loc_difference: Tensor) -> tuple[Tensor, ...]:
    """q's log-determinant, the Mahalanobis distance of the difference, and q's Woodbury
    factor ``A``: its precision is ``diag(d)^-1 - A^T A``."""
    factor, diagonal = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    tril = q._capacitance_tril
    return (
        _low_rank_log_det(factor, diagonal, tril),
        _low_rank_mahalanobis(factor, diagonal, loc_difference, tril),
        _woodbury_factor(factor, diagonal, tril),
    )


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p: LowRankMultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _require_same_event(p, q)
    q_log_det, distance, a = _low_rank_terms(q, q.loc - p.loc)
    p_factor, p_diagonal = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    q_diagonal = q._unbroadcasted_cov_diag
    # trace(Sq^-1 Sp) with Sq^-1 = diag(dq)^-1 - A^T A and Sp = Wp Wp^T + diag(dp)
    trace = (
        _ops.sum(p_diagonal / q_diagonal, axis=-1)
        + _sum_of_squares(p_factor / _ops.expand_dims(_ops.sqrt(q_diagonal), axis=-1))
        - _sum_of_squares(a * _ops.expand_dims(_ops.sqrt(p_diagonal), axis=-2))
        - _sum_of_squares(a @ p_factor)
    )
    log_det_ratio = q_log_det - p._log_det()
    shape = broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    return _ops.broadcast_to(0.5 * (log_det_ratio + trace + distance - p.event_shape[0]), shape)


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p: MultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _require_same_event(p, q)
    q_log_det, distance, a = _low_rank_terms(q, q.loc - p.loc)
    # (as PyTorch's, the covariance is p's scale_tril as given times its transpose)
    p_tril = p._unbroadcasted_scale_tril
    q_root = _ops.expand_dims(_ops.sqrt(q._unbroadcasted_cov_diag), axis=-1)
    trace = _sum_of_squares(p_tril / q_root) - _sum_of_squares(a @ p_tril)
    log_det_ratio = q_log_det - 2 * p._half_log_det()
    shape = broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    return _ops.broadcast_to(0.5 * (log_det_ratio + trace + distance - p.event_shape[0]), shape)


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p: LowRankMultivariateNormal, q: MultivariateNormal) -> Tensor:
    _require_same_event(p, q)
    size = p.event_shape[0]
    q_tril, p_factor = q._unbroadcasted_scale_tril, p._unbroadcasted_cov_factor
    p_root = diag_embed(_ops.sqrt(p._unbroadcasted_cov_diag))
    batch = broadcast_shapes(
        tuple(q_tril.shape[:-2]), tuple(p_factor.shape[:-2]), tuple(p_root.shape[:-2])
    )
    q_tril = _ops.broadcast_to(q_tril, (*batch, size, size))

    def whitened(matrix: Tensor) -> Tensor:  # Lq^-1 matrix, whose squares sum to a trace
        matrix = _ops.broadcast_to(matrix, (*batch, *matrix.shape[-2:]))
        return _linalg.solve_triangular(q_tril, matrix, upper=False)

    trace = _sum_of_squares(whitened(p_factor)) + _sum_of_squares(whitened(p_root))
    log_det_ratio = 2 * q._half_log_det() - p._log_det()
    distance = _batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    shape = broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    return _ops.broadcast_to(0.5 * (log_det_ratio + trace + distance - size), shape)


# -- the rest of PyTorch's pairs among the older families -----------------------------------


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    # E[k] = (1 - p) / p failures before the first success under p.
    return -p.entropy() - _ops.log1p(-q.probs) / p.probs - q.logits


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> Tensor:
    return -p.entropy() + _normal_cross_entropy(q, 1 / p.rate, 2 / p.rate**2)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p: Laplace, q: Normal) -> Tensor:
    return -p.entropy() + _normal_cross_entropy(q, p.loc, 2 * p.scale**2 + p.loc**2)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    mean = p.mean
    return -p.entropy() + _normal_cross_entropy(q, mean, (p.high - p.low) ** 2 / 12 + mean**2)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    # E|x - m| for x normal: s sqrt(2/pi) exp(-d**2 / 2s**2) + d erf(d / (s sqrt 2)), d = mu - m.
    offset, scale = p.loc - q.loc, p.scale
    mean_distance = scale * math.sqrt(2 / math.pi) * _ops.exp(
        -0.5 * (offset / scale) ** 2
    ) + offset * erf(offset / (scale * math.sqrt(2)))
    return -p.entropy() + _ops.log(2 * q.scale) + mean_distance / q.scale
