"""Counts: the Poisson, binomial and multinomial distributions.

Poisson and binomial variates come from :mod:`plugrad.count_draws`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .. import ops as _ops
from ..count_draws import draw_binomial, draw_poisson, working_dtype
from ..creation import arange, asarray, ones, zeros
from ..errors import ArgumentError, InvalidArgumentError
from ..grad_mode import no_grad
from ..nn.functional import logsigmoid, sigmoid
from ..pytorch_names import get_default_dtype, lgamma
from ..tensor import Tensor
from . import constraints
from .discrete import _BinaryParameters, _CategoricalBacked, _one_of
from .distribution import Distribution, _Elementwise
from .exp_family import ExponentialFamily
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["Binomial", "Multinomial", "NegativeBinomial", "Poisson"]


class Poisson(_Elementwise, ExponentialFamily):
    """The number of events of a Poisson process of ``rate`` in unit time.

    ``P(k) = rate**k exp(-rate) / k!`` for ``k = 0, 1, ...``; samples are floats
    of the rate's dtype, drawn exactly (see the module's notes).

    Parameters
    ----------
    rate : Tensor or float
        Non-negative; 0 is allowed (then every draw is 0). Its shape is the
        batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Poisson
    >>> d = Poisson(plugrad.tensor([0.0, 2.0]))
    >>> d.log_prob(plugrad.tensor([0.0, 3.0])), d.mode
    (tensor([ 0.0000, -1.7123]), tensor([0., 2.]))
    >>> draws = Poisson(1000.0).sample((4000,))
    >>> draws.shape, bool((draws.mean() - 1000).abs() < 3)  # 6 standard errors
    ((4000,), True)
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    rate: Tensor

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        self._set_parameters(validate_args, rate=rate)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (_ops.log(self.rate),)

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """``exp(theta)``: the rate."""
        return _ops.exp(natural_params[0])

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return _ops.floor(self.rate)

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            rate = _ops.broadcast_to(self.rate.detach(), shape)
            flat = _ops.astype(_ops.reshape(rate, (-1,)), working_dtype(rate))
            if not bool(_ops.all(_ops.isfinite(flat) & (flat >= 0))):
                raise InvalidArgumentError(
                    "Poisson.sample(): every rate must be finite and non-negative to draw from "
                    f"it; got {self.rate!s}"
                )
            return _ops.astype(_ops.reshape(draw_poisson(flat), shape), self.rate.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        # value * log(rate), as xlogy: 0 where value is 0, so rate 0 gives mass 1 to 0 (and
        # its gradient in rate is then -1, not PyTorch's 0 / 0).
        vanishing = rate == 0
        log_rate = _ops.log(_ops.where(vanishing, 1.0, rate))
        power = _ops.where(vanishing & (value != 0), -math.inf, value * log_rate)
        return power - rate - lgamma(value + 1)


def _set_count_and_odds(
    dist: Any, name: str, total_count: Any, probs: Any, logits: Any, validate_args: Any
) -> None:
    """Set ``total_count`` and ``probs`` (or ``logits``) broadcast together, in one dtype:
    a number takes ``total_count``'s floating dtype (the default one for integer counts)."""
    _one_of(name, probs, logits)
    parameter, given = ("probs", probs) if probs is not None else ("logits", logits)
    if not isinstance(given, Tensor) and isinstance(total_count, Tensor):
        floating = total_count.dtype.kind == "real floating"
        dtype = total_count.dtype if floating else get_default_dtype()
        given = asarray(given, dtype=dtype, device=total_count.device)
    param, count = broadcast_all(given, total_count)
    setattr(dist, parameter, param)
    dist._probs_given = parameter == "probs"
    dist.total_count = _ops.astype(count, param.dtype)
    Distribution.__init__(dist, param.shape, validate_args=validate_args)


class _CountAndOdds(_BinaryParameters):
    """``total_count`` trials and their ``probs`` or ``logits``.

    Made from ``probs``, its log-probabilities are computed from ``p`` itself:
    through the logits (``p`` clamped to the float's epsilon first) ``n log(1 - p)``
    of ``p = 0`` and a million trials was ``-0.12`` where it is 0.
    """

    _probs_given = False
    total_count: Tensor

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        super()._expand_into(new, batch_shape)
        new._probs_given = self._probs_given

    def _log_powers_of_probs(self, successes: Tensor, failures: Tensor) -> Tensor:
        """``successes log(p) + failures log(1 - p)``, from ``probs``: a term is 0 where its
        count is 0 (whatever ``p``: its gradient in ``p`` too, while its gradient in the
        count is the log), and -inf, without the backend's warning, where its count is
        positive and its probability 0."""
        p = self.probs
        never, surely = p == 0, p == 1
        # (only where the log is infinite: a count of 0 keeps d/dcount = log p)
        log_p = _ops.log(_ops.where(never, 1.0, p))
        log_not_p = _ops.log1p(-_ops.where(surely, 0.0, p))
        return _ops.where(never & (successes != 0), -math.inf, successes * log_p) + _ops.where(
            surely & (failures != 0), -math.inf, failures * log_not_p
        )


class Binomial(_CountAndOdds):
    """The number of successes in ``total_count`` independent trials that succeed with ``probs``.

    Parameters
    ----------
    total_count : Tensor or int
        The number of trials, a non-negative integer (held as a tensor of the
        dtype of ``probs`` or ``logits``); broadcasts with them.
    probs : Tensor or float, optional
        The probability of success of each trial, in ``[0, 1]``.
    logits : Tensor or float, optional
        Its log-odds. Give ``probs`` or ``logits``, not both.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Binomial
    >>> d = Binomial(10, probs=plugrad.tensor([0.2, 0.5]))
    >>> d.log_prob(plugrad.tensor([2.0, 5.0])), d.mean, d.mode
    (tensor([-1.1974, -1.4020]), tensor([2., 5.]), tensor([2., 5.]))
    >>> d.entropy()
    tensor([1.6219, 1.8760])
    >>> d.sample((3,)).shape
    (3, 2)
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True
    total_count: Tensor

    def __init__(
        self,
        total_count: Tensor | int = 1,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        _set_count_and_odds(self, "Binomial", total_count, probs, logits, validate_args)

    @property
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @property
    def param_shape(self) -> tuple[int, ...]:
        """The shape of ``probs`` (or ``logits``): the batch shape."""
        return tuple(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return _ops.minimum(_ops.floor((self.total_count + 1) * self.probs), self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            n, p = (_ops.broadcast_to(t.detach(), shape) for t in (self.total_count, self.probs))
            dtype = working_dtype(p)
            n, p = (_ops.astype(_ops.reshape(t, (-1,)), dtype) for t in (n, p))
            return _ops.astype(_ops.reshape(draw_binomial(n, p), shape), self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_binomial = lgamma(n + 1) - lgamma(value + 1) - lgamma(n - value + 1)
        if self._probs_given:
            return self._log_powers_of_probs(value, n - value) + log_binomial
        logits = self.logits
        # n log(1 + e**l), the log of the normalizer, without overflow for large logits:
        # n max(l, 0) + n log1p(e**-|l|) (and max(l, 0) as (l + |l|) / 2: gradient 1/2 at 0).
        log_normalizer = n * (logits + _ops.abs(logits)) / 2 + n * _ops.log1p(
            _ops.exp(-_ops.abs(logits))
        )
        return value * logits + log_binomial - log_normalizer

    def _homogeneous_count(self, method: str) -> int:
        with no_grad():
            largest, smallest = float(_ops.max(self.total_count)), float(_ops.min(self.total_count))
        if largest != smallest:
            raise NotImplementedError(
                f"Binomial.{method}() needs one total_count for the whole batch; got counts from "
                f"{smallest:g} to {largest:g} (use log_prob over a common range instead)"
            )
        return int(largest)

    def entropy(self) -> Tensor:
        """The entropy, summed over ``0, ..., total_count`` (one count for the whole batch)."""
        self._homogeneous_count("entropy")
        log_pmf = self.log_prob(self.enumerate_support(expand=False))
        # An impossible count (probs 0 or 1) adds 0, not 0 * -inf.
        finite_log_pmf = _ops.where(log_pmf == -math.inf, 0.0, log_pmf)
        return 0.0 - _ops.sum(_ops.exp(log_pmf) * finite_log_pmf, axis=0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """``0, ..., total_count`` along a new first axis (one count for the whole batch)."""
        count = self._homogeneous_count("enumerate_support")
        values = arange(count + 1, dtype=self._param.dtype, device=self._param.device)
        values = _ops.reshape(values, (-1,) + (1,) * len(self._batch_shape))
        return _ops.broadcast_to(values, (count + 1, *self._batch_shape)) if expand else values


class _CountsOfCategories(constraints.Constraint):
    """Non-negative counts over the last axis that add up to at most ``upper_bound``."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: int) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        nonnegative = _ops.all(value >= 0, axis=-1)
        return nonnegative & (_ops.sum(value, axis=-1) <= self.upper_bound)

    def __repr__(self) -> str:
        return f"Multinomial(upper_bound={self.upper_bound})"


class Multinomial(_CategoricalBacked):
    """The counts of each of ``K`` categories in ``total_count`` independent categorical draws.

    Parameters
    ----------
    total_count : int
        The number of draws, one for the whole batch. ``log_prob`` reads the
        count of each value from the value itself, so it may be left at 1 then.
    probs, logits : Tensor, optional
        As for :class:`Categorical`: the last axis holds the ``K`` categories,
        the axes before it are the batch shape. Give ``probs`` or ``logits``,
        not both.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Multinomial
    >>> d = Multinomial(4, probs=plugrad.tensor([0.5, 0.25, 0.25]))
    >>> d.log_prob(plugrad.tensor([2.0, 1.0, 1.0])), d.mean
    (tensor(-1.6740), tensor([2., 1., 1.]))
    >>> d.sample((5,)).sum(-1)
    tensor([4., 4., 4., 4., 4.])
    """

    total_count: int

    def __init__(
        self,
        total_count: int = 1,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if isinstance(total_count, bool) or not isinstance(total_count, int):
            if isinstance(total_count, Tensor):
                raise NotImplementedError(
                    "Multinomial: total_count must be a Python int, one count for the whole "
                    "batch (a tensor of counts, an inhomogeneous total_count, is not supported)"
                )
            raise ArgumentError(
                f"Multinomial: total_count must be an int, got {type(total_count).__name__} "
                f"{total_count!r}"
            )
        if total_count < 0:
            raise InvalidArgumentError(
                f"Multinomial: total_count must be non-negative, got {total_count}"
            )
        _one_of("Multinomial", probs, logits)
        self.total_count = total_count
        self._take_parameters(probs, logits, validate_args)

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        super()._expand_into(new, batch_shape)
        new.total_count = self.total_count

    @property
    def support(self) -> constraints.Constraint:
        return _CountsOfCategories(self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = self.probs
        with no_grad():
            counts = zeros(shape, dtype=probs.dtype, device=probs.device)
            if self.total_count == 0 or math.prod(shape) == 0:
                return counts
            sample_shape = shape[: len(shape) - len(self._batch_shape) - 1]
            drawn = self._categorical.sample((self.total_count, *sample_shape))
            drawn = _ops.moveaxis(drawn, 0, -1)  # the draws of each count along the last axis
            each = ones(drawn.shape, dtype=probs.dtype, device=probs.device)
            return _ops.scatter_add(counts, -1, drawn, each)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # NOTE: a category of probability 0 (logit -inf) counted 0 times contributes 0, not nan.
        logits = _ops.where((value == 0) & (logits == -math.inf), 0.0, logits)
        log_multinomial = lgamma(_ops.sum(value, axis=-1) + 1) - _ops.sum(
            lgamma(value + 1), axis=-1
        )
        return log_multinomial + _ops.sum(logits * value, axis=-1)

    def entropy(self) -> Tensor:
        # H = n H(categorical) - log n! + sum over categories of E[log x_k!], where x_k is
        # Binomial(n, p_k): the expectation summed over its support from 1.
        n = self.total_count
        probs = self.probs
        first = n * self._categorical.entropy() - math.lgamma(n + 1)
        marginals = Binomial(n, probs=probs, validate_args=False)
        counts = arange(1, n + 1, dtype=probs.dtype, device=probs.device)
        counts = _ops.reshape(counts, (-1,) + (1,) * probs.ndim)
        expected = _ops.exp(marginals.log_prob(counts)) * lgamma(counts + 1)
        return first + _ops.sum(_ops.sum(expected, axis=0), axis=-1)

    def __repr__(self) -> str:
        return repr(self._categorical).replace("Categorical", "Multinomial", 1)


class NegativeBinomial(_CountAndOdds):
    """The number of successes before ``total_count`` failures, in trials that succeed with
    ``probs``.

    ``P(k) = C(k + r - 1, k) p**k (1 - p)**r`` for ``r = total_count``; ``r`` may
    be any non-negative real (a gamma-Poisson mixture). Samples are floats, drawn
    as a Poisson count of a gamma rate.

    Parameters
    ----------
    total_count : Tensor or float
        Non-negative; broadcasts with the probabilities.
    probs : Tensor or float, optional
        The probability of success, in ``[0, 1)``.
    logits : Tensor or float, optional
        Its log-odds. Give ``probs`` or ``logits``, not both.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import NegativeBinomial
    >>> d = NegativeBinomial(3.0, probs=plugrad.tensor([0.25, 0.5]))
    >>> d.mean, d.log_prob(plugrad.tensor([1.0, 2.0]))
    (tensor([1., 3.]), tensor([-1.1507, -1.6740]))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer
    total_count: Tensor

    def __init__(
        self,
        total_count: Tensor | float,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        _set_count_and_odds(self, "NegativeBinomial", total_count, probs, logits, validate_args)

    @property
    def _odds(self) -> Tensor:
        """``p / (1 - p)``: from ``probs`` where given (``exp(logits)`` of a clamped ``p = 0``
        is the epsilon, not 0)."""
        if self._probs_given:
            return self.probs / (1 - self.probs)
        return _ops.exp(self.logits)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self._odds

    @property
    def mode(self) -> Tensor:
        return _ops.clip(_ops.floor((self.total_count - 1) * self._odds), min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / sigmoid(-self.logits)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """A Poisson draw whose rate is a gamma draw of shape ``total_count`` and scale
        ``probs / (1 - probs)``."""
        with no_grad():
            rate = Gamma(self.total_count, _ops.exp(-self.logits), validate_args=False).sample(
                sample_shape
            )
            return Poisson(rate, validate_args=False).sample()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        r = self.total_count
        if self._probs_given:
            unnormalized = self._log_powers_of_probs(value, r)
        else:
            logits = self.logits
            unnormalized = r * logsigmoid(-logits) + value * logsigmoid(logits)
        # r + value = 0 is the point mass of r = 0 at 0, probability 1 (lgamma(0) is inf).
        at_zero = r + value == 0
        safe_r = _ops.where(at_zero, 1.0, r)
        normalization = lgamma(1 + value) + lgamma(safe_r) - lgamma(safe_r + value)
        return unnormalized - _ops.where(at_zero, 0.0, normalization)
