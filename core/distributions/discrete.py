"""The Bernoulli, geometric, categorical and one-hot categorical distributions.

Each takes either ``probs`` or ``logits`` (not both) and derives the other
when first asked for it.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .. import ops as _ops
from ..creation import arange, full, zeros_like
from ..dtype_functions import broadcast_shapes, finfo
from ..errors import ArgumentError, IndexOutOfRangeError, InvalidArgumentError, ShapeError
from ..grad_mode import no_grad
from ..nn.functional import any_outside, one_hot, softplus
from ..random import bernoulli, multinomial, rand
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution, _Elementwise
from .exp_family import ExponentialFamily
from .utils import (
    broadcast_all,
    lazy_property,
    logits_to_probs,
    normalized_logits,
    probs_to_logits,
)

__all__ = [
    "Bernoulli",
    "Categorical",
    "Geometric",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
]


def _one_of(name: str, probs: Any, logits: Any) -> None:
    if (probs is None) == (logits is None):
        raise InvalidArgumentError(
            f"{name}: give either probs or logits, not both and not neither "
            f"(got probs={'None' if probs is None else '...'}, "
            f"logits={'None' if logits is None else '...'})"
        )


class _BinaryParameters(_Elementwise):
    """``probs`` or ``logits`` of one binary outcome per element, broadcast into the batch."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }

    def __init__(
        self,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        _one_of(type(self).__name__, probs, logits)
        if probs is not None:
            self._set_parameters(validate_args, probs=probs)
        else:
            assert logits is not None
            self._set_parameters(validate_args, logits=logits)

    @property
    def _param(self) -> Tensor:
        """``probs``, or ``logits`` while only they are set: for the dtype and device."""
        return self.__dict__["probs" if "probs" in self.__dict__ else "logits"]

    @lazy_property
    def probs(self) -> Tensor:
        """The probability of success (1), element-wise."""
        return logits_to_probs(self.logits, is_binary=True)

    @lazy_property
    def logits(self) -> Tensor:
        """The log-odds of success, ``log(p) - log1p(-p)``."""
        return probs_to_logits(self.probs, is_binary=True)


class Bernoulli(_BinaryParameters, ExponentialFamily):
    """1 with probability ``probs`` (``sigmoid(logits)``), else 0.

    Parameters
    ----------
    probs : Tensor or float, optional
        The probability of 1, in ``[0, 1]``.
    logits : Tensor or float, optional
        The log-odds of 1. Give ``probs`` or ``logits``, not both.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Bernoulli
    >>> d = Bernoulli(probs=plugrad.tensor([0.25, 0.5]))
    >>> d.log_prob(plugrad.tensor([1.0, 0.0])), d.entropy()
    (tensor([-1.3863, -0.6931]), tensor([0.5623, 0.6931]))
    """

    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.logits,)

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """``log(1 + exp(logits))``."""
        return _ops.logaddexp(natural_params[0], 0.0)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = _ops.astype(self.probs >= 0.5, self.probs.dtype)
        return _ops.where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return bernoulli(_ops.broadcast_to(self.probs, shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # As PyTorch: a floating value's dtype is the result's (its loss kernel computes in
        # the target's dtype: float64 for a float64 value, float32 for a float32 one).
        floating = value.dtype.kind == "real floating"
        dtype = value.dtype if floating else logits.dtype
        logits, value = _ops.astype(logits, dtype), _ops.astype(value, dtype)
        return -_ops.binary_cross_entropy_with_logits(logits, value, None, None)

    def entropy(self) -> Tensor:
        return _ops.binary_cross_entropy_with_logits(self.logits, self.probs, None, None)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """``[0, 1]`` along a new first axis (broadcast to the batch shape when ``expand``)."""
        values = arange(2, dtype=self._param.dtype, device=self._param.device)
        values = _ops.reshape(values, (-1,) + (1,) * len(self._batch_shape))
        return _ops.broadcast_to(values, (2, *self._batch_shape)) if expand else values


class Geometric(_BinaryParameters):
    """The number of failures before the first success of trials that succeed with ``probs``.

    Parameters
    ----------
    probs : Tensor or float, optional
        The probability of success of each trial, in ``(0, 1]``.
    logits : Tensor or float, optional
        Its log-odds. Give ``probs`` or ``logits``, not both.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Geometric
    >>> d = Geometric(probs=plugrad.tensor(0.25))
    >>> d.mean, d.log_prob(plugrad.tensor(2.0))
    (tensor(3.), tensor(-1.9617))
    """

    support = constraints.nonnegative_integer

    def _validate_parameters(self) -> None:
        super()._validate_parameters()
        if "probs" in self.__dict__:  # given, not derived from logits
            self._check_parameter(
                "probs", lambda probs: probs > 0, "not positive", "to be positive but found"
            )

    @property
    def mean(self) -> Tensor:
        return 1 / self.probs - 1

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1 / self.probs - 1) / self.probs

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            tiny = finfo(self.probs.dtype).smallest_normal
            u = _ops.maximum(rand(shape, dtype=self.probs.dtype, device=self.probs.device), tiny)
            return _ops.floor(_ops.log(u) / _ops.log1p(-self.probs))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # NOTE: 0 * log1p(-1) is nan; a sure success has log-probability 0 at value 0.
        probs = _ops.where((probs == 1) & (value == 0), 0.0, probs)
        return value * _ops.log1p(-probs) + _ops.log(self.probs)

    def entropy(self) -> Tensor:
        if "probs" in self.__dict__:  # given: its logits are of probs clipped to [eps, 1 - eps]
            probs = self.probs
            sure = probs == 1
            p = _ops.where(sure, 0.5, probs)  # (no 0 * log(0) in the gradient where p is 1)
            return _ops.where(sure, 0.0, -_ops.log(p) - (1 - p) / p * _ops.log1p(-p))
        # H = -log p - (1 - p) log(1 - p) / p = softplus(-l) + softplus(l) exp(-l): the
        # quotient of PyTorch's form is 0 / 0 where p underflows (logits -100 in float32).
        logits = self.logits
        tail = _ops.exp(_ops.clip(logits, -50.0, 0.0))  # log1p(u) / u is 1 below e**-50
        below = _ops.log1p(tail) / tail
        positive = _ops.clip(logits, 0.0, 1e4)
        above = softplus(positive) * _ops.exp(-positive)
        return softplus(-logits) + _ops.where(logits > 0, above, below)


def _event_parameter(name: str, what: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise ArgumentError(f"{name}: {what} must be a Tensor, got {type(value).__name__}")
    if value.ndim < 1:
        raise ShapeError(
            f"{name}: {what} must have at least one axis (the categories), got a 0-d tensor"
        )
    return value


class _CategoricalParameters(Distribution):
    """``probs`` or ``logits`` over the last axis (the ``K`` categories), which
    ``_take_parameters`` checks and stores."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.simplex,
        "logits": constraints.real_vector,
    }
    has_enumerate_support = True

    def __init__(
        self,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._take_parameters(probs, logits, validate_args)

    def _take_parameters(
        self, probs: Tensor | None, logits: Tensor | None, validate_args: bool | None
    ) -> None:
        raise NotImplementedError


class Categorical(_CategoricalParameters):
    """A category index in ``0, ..., K - 1``, drawn with weights ``probs`` or ``logits``.

    Parameters
    ----------
    probs : Tensor, optional
        Non-negative weights over the last axis (the ``K`` categories),
        normalized to sum to 1; the axes before it are the batch shape.
    logits : Tensor, optional
        Unnormalized log-probabilities over the last axis. Give ``probs`` or
        ``logits``, not both.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Categorical
    >>> d = Categorical(probs=plugrad.tensor([1.0, 1.0, 2.0]))
    >>> d.probs, d.log_prob(plugrad.tensor(2))
    (tensor([0.2500, 0.2500, 0.5000]), tensor(-0.6931))
    >>> d.sample((4,)).shape
    (4,)
    """

    def _take_parameters(
        self, probs: Tensor | None, logits: Tensor | None, validate_args: bool | None
    ) -> None:
        name = type(self).__name__
        _one_of(name, probs, logits)
        if probs is not None:
            probs = _event_parameter(name, "probs", probs)
            self.probs = probs / _ops.sum(probs, axis=-1, keepdims=True)
            self._param = self.probs
        else:
            logits = _event_parameter(name, "logits", logits)
            self.logits = normalized_logits(logits)
            self._param = self.logits
        self._num_events = self._param.shape[-1]
        Distribution.__init__(self, self._param.shape[:-1], validate_args=validate_args)

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        for name in ("probs", "logits"):
            if name in self.__dict__:
                shape = (*batch_shape, self._num_events)
                setattr(new, name, _ops.broadcast_to(self.__dict__[name], shape))
                new._param = new.__dict__[name]
        new._num_events = self._num_events

    @lazy_property
    def probs(self) -> Tensor:
        """The probability of each category, over the last axis."""
        return logits_to_probs(self.logits)

    @lazy_property
    def logits(self) -> Tensor:
        """The normalized log-probability of each category, over the last axis."""
        return probs_to_logits(self.probs)

    @property
    def param_shape(self) -> tuple[int, ...]:
        """The shape of ``probs`` (or ``logits``): the batch shape and the categories."""
        return tuple(self._param.shape)

    @property
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self) -> Tensor:
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self._device)

    @property
    def mode(self) -> Tensor:
        return _ops.argmax(self.probs, axis=-1)

    @property
    def variance(self) -> Tensor:
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self._device)

    @property
    def _device(self) -> Any:
        return self._param.device

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        count = math.prod(shape[: len(shape) - len(self._batch_shape)])
        with no_grad():
            rows = _ops.reshape(self.probs, (-1, self._num_events))
            # (no rows -- an empty batch -- draws nothing: the samples are empty)
            drawn = multinomial(rows, count, True) if count and rows.shape[0] else None
        if drawn is None:
            return full(shape, 0, dtype=self._device.default_int_dtype, device=self._device)
        return _ops.reshape(_ops.matrix_transpose(drawn), shape)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        index = _ops.astype(value, value.device.default_int_dtype)
        # Unvalidated values are still indices: -1 would read the last category.
        found = _ops.out_of_range(index, low=0, high=self._num_events)
        if any_outside(found, "Categorical.log_prob(): values outside the categories"):
            raise IndexOutOfRangeError(
                f"Categorical.log_prob(): the values must be categories 0 to "
                f"{self._num_events - 1}; some lie outside (negative values never count from "
                "the end)"
            )
        shape = broadcast_shapes(tuple(index.shape), tuple(self.logits.shape[:-1]))
        index = _ops.broadcast_to(_ops.expand_dims(index, axis=-1), (*shape, 1))
        log_pmf = _ops.broadcast_to(self.logits, (*shape, self._num_events))
        return _ops.squeeze(_ops.take_along_axis(log_pmf, index, axis=-1), axis=-1)

    def entropy(self) -> Tensor:
        logits = _ops.clip(self.logits, finfo(self.logits.dtype).min, None)
        return -_ops.sum(logits * self.probs, axis=-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """``0, ..., K - 1`` along a new first axis (broadcast to the batch shape if ``expand``)."""
        values = arange(self._num_events, dtype=self._device.default_int_dtype, device=self._device)
        values = _ops.reshape(values, (-1,) + (1,) * len(self._batch_shape))
        return (
            _ops.broadcast_to(values, (self._num_events, *self._batch_shape)) if expand else values
        )


class _CategoricalBacked(Distribution):
    """A distribution backed by a :class:`Categorical` of the ``probs`` or ``logits`` given,
    which checks and holds them; the categories are its event axis."""

    arg_constraints = Categorical.arg_constraints
    _categorical: Categorical

    def _take_parameters(
        self, probs: Tensor | None, logits: Tensor | None, validate_args: bool | None
    ) -> None:
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        Distribution.__init__(self, batch_shape, event_shape, validate_args=False)
        self._validate_args = self._categorical._validate_args

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        new._categorical = self._categorical.expand(batch_shape)

    @property
    def probs(self) -> Tensor:
        """The probability of each category, over the last axis."""
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        """The normalized log-probability of each category, over the last axis."""
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple[int, ...]:
        """The shape of ``probs`` (or ``logits``)."""
        return self._categorical.param_shape


class OneHotCategorical(_CategoricalBacked, _CategoricalParameters):
    """A one-hot vector of length ``K``: a :class:`Categorical` draw, spelled out.

    Parameters
    ----------
    probs, logits : Tensor, optional
        As for :class:`Categorical`; the last axis is the event shape ``(K,)``.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import OneHotCategorical
    >>> d = OneHotCategorical(logits=plugrad.zeros(2, 3))
    >>> d.batch_shape, d.event_shape, d.sample().shape
    (plugrad.Size([2]), plugrad.Size([3]), (2, 3))
    >>> d.log_prob(plugrad.tensor([0.0, 1.0, 0.0]))
    tensor([-1.0986, -1.0986])
    """

    support = constraints.one_hot

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        index = _ops.argmax(self.probs, axis=-1)
        return _ops.astype(one_hot(index, self._categorical._num_events), self.probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        index = self._categorical.sample(sample_shape)
        return _ops.astype(one_hot(index, self._categorical._num_events), self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(_ops.argmax(value, axis=-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The ``K`` one-hot vectors along a new first axis."""
        k = self._categorical._num_events
        values = _ops.astype(one_hot(arange(k, device=self.probs.device), k), self.probs.dtype)
        values = _ops.reshape(values, (k,) + (1,) * len(self._batch_shape) + (k,))
        return _ops.broadcast_to(values, (k, *self._batch_shape, k)) if expand else values

    def __repr__(self) -> str:
        return repr(self._categorical).replace("Categorical", type(self).__name__, 1)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """A :class:`OneHotCategorical` with ``rsample``: the straight-through estimator
    (Bengio et al., 2013).

    ``rsample`` returns the one-hot draw, with the gradient of ``probs``: in
    the backward pass the draw counts as ``probs`` itself, a biased but
    low-variance stand-in for the gradient of the discrete choice.

    Parameters
    ----------
    probs, logits : Tensor, optional
        As for :class:`OneHotCategorical`.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import OneHotCategoricalStraightThrough
    >>> logits = plugrad.tensor([0.0, 1.0, 2.0], requires_grad=True)
    >>> x = OneHotCategoricalStraightThrough(logits=logits).rsample()
    >>> bool(x.sum() == 1), x.requires_grad
    (True, True)
    """

    has_rsample = True

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``sample(sample_shape) + probs - probs.detach()``: the draw's values, ``probs``'s
        gradient."""
        probs = self.probs
        return self.sample(sample_shape) + (probs - probs.detach())
