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
from ..pytorch_names import digamma, lgamma
from ..tensor import Size, Tensor
from .continuous import Exponential, Laplace, Uniform
from .discrete import Bernoulli, Categorical, OneHotCategorical
from .distribution import Distribution
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import LogNormal, Normal
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


# p reaches beyond any bounded (or half-bounded) q: no formula, just inf, as PyTorch's.
for _p_type, _q_type in [
    (Normal, Uniform), (Normal, Exponential), (Laplace, Uniform), (Laplace, Exponential),
    (Exponential, Uniform),
]:  # fmt: skip
    register_kl(_p_type, _q_type)(_infinite)


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
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
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


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> Tensor:
    return -p.entropy() - _ops.log(q.rate) + q.rate * p.mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    return -p.entropy() + _gamma_cross_entropy(q, p.mean, _beta_log_mean(p))


@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Tensor:
    mean = p.mean
    return -p.entropy() + _normal_cross_entropy(q, mean, p.variance + mean**2)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
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
for _p_type, _q_type in [
    (Gamma, Beta), (Gamma, Uniform), (Exponential, Beta), (Normal, Gamma), (Normal, Beta),
    (Laplace, Gamma), (Laplace, Beta),
]:  # fmt: skip
    register_kl(_p_type, _q_type)(_infinite)
