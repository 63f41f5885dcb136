"""Continuous relaxations of the Bernoulli and categorical distributions (Concrete, Gumbel-softmax).

A relaxed draw is a point of the unit interval (of the simplex) that nears
0 or 1 (a corner) as the ``temperature`` falls to 0, and that is a
differentiable function of the parameters: ``rsample`` passes gradients
through what would be a discrete choice (Maddison et al., 2017; Jang et al.,
2017). The ``Logit`` and ``Exp`` forms are those draws before the final
sigmoid or exponential, where the densities are better behaved.
"""

from __future__ import annotations

from typing import Any

from .. import ops as _ops
from ..creation import asarray, full_like
from ..dtype_functions import broadcast_shapes
from ..errors import ArgumentError, ShapeError
from ..pytorch_names import get_default_dtype
from ..random import rand
from ..tensor import Size, Tensor
from . import constraints
from .discrete import _BinaryParameters, _CategoricalBacked
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform, SigmoidTransform, _is_number
from .utils import broadcast_all, clamp_probs

__all__ = [
    "ExpRelaxedCategorical",
    "LogitRelaxedBernoulli",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
]


def _as_temperature(name: str, temperature: Any, like: Any) -> Tensor:
    """``temperature`` as a tensor; a number takes the dtype and device of ``like``."""
    if isinstance(temperature, Tensor):
        return temperature
    if not _is_number(temperature):
        raise ArgumentError(
            f"{name}: temperature must be a Tensor or a positive number, got "
            f"{type(temperature).__name__}"
        )
    if isinstance(like, Tensor):
        return asarray(temperature, dtype=like.dtype, device=like.device)
    return asarray(temperature, dtype=get_default_dtype())


def _check_temperature(dist: Any, validate: bool) -> None:
    """The temperature must fit the batch shape, and be positive (when validating)."""
    shape, batch = tuple(dist.temperature.shape), tuple(dist.batch_shape)
    try:
        fits = tuple(broadcast_shapes(shape, batch)) == batch
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(
            f"{type(dist).__name__}: a temperature of shape {shape} does not broadcast to the "
            f"batch shape {batch}"
        )
    if validate:
        dist._check_parameter(
            "temperature", lambda t: t > 0, "not positive", "to be positive, but found"
        )


class _Relaxed(TransformedDistribution):
    """A relaxed distribution: its base's draws (logits, or log-probabilities) mapped onto the
    unit interval (or the simplex); the parameters are the base's."""

    base_dist: Any

    @property
    def temperature(self) -> Tensor:
        """The relaxation temperature."""
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        """The logits of the distribution relaxed."""
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        """The probabilities of the distribution relaxed."""
        return self.base_dist.probs


class LogitRelaxedBernoulli(_BinaryParameters):
    """The logit of a :class:`RelaxedBernoulli` draw: ``(logit(U) + logits) / temperature``.

    Parameters
    ----------
    temperature : Tensor or float
        Positive; it broadcasts to the batch shape (it is not part of it).
    probs : Tensor or float, optional
        The probability of nearing 1, in ``[0, 1]``.
    logits : Tensor or float, optional
        Its log-odds. Give ``probs`` or ``logits``, not both.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import LogitRelaxedBernoulli
    >>> d = LogitRelaxedBernoulli(0.5, probs=plugrad.tensor([0.25, 0.5]))
    >>> d.log_prob(plugrad.tensor([0.0, 1.0])), d.rsample((3,)).shape
    (tensor([-2.3671, -2.1413]), (3, 2))
    """

    support = constraints.real
    has_rsample = True
    temperature: Tensor

    def __init__(
        self,
        temperature: Tensor | float,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        given = probs if probs is not None else logits
        self.temperature = _as_temperature(type(self).__name__, temperature, given)
        super().__init__(probs, logits, validate_args)
        _check_temperature(self, validate=False)  # (its values are checked with the others)

    def _validate_parameters(self) -> None:
        super()._validate_parameters()
        _check_temperature(self, validate=True)

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        super()._expand_into(new, batch_shape)
        new.temperature = self.temperature

    @property
    def param_shape(self) -> Size:
        """The shape of ``probs`` (or ``logits``)."""
        return Size(self._param.shape)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``(logit(u) + logit(p)) / temperature`` for ``u`` uniform: differentiable in both."""
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(_ops.broadcast_to(self.probs, shape))
        u = clamp_probs(rand(shape, dtype=probs.dtype, device=probs.device))
        logistic = _ops.log(u) - _ops.log1p(-u) + _ops.log(probs) - _ops.log1p(-probs)
        return logistic / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        # 2 log(1 + e**d), without overflow for large d.
        log1p_exp = _ops.maximum(diff, 0.0) + _ops.log1p(_ops.exp(-_ops.abs(diff)))
        return _ops.log(self.temperature) + diff - 2 * log1p_exp


class RelaxedBernoulli(_Relaxed):
    """A Bernoulli variable relaxed onto ``(0, 1)``: a :class:`LogitRelaxedBernoulli`'s sigmoid.

    Parameters
    ----------
    temperature : Tensor or float
        Positive: near 0 the draws near 0 or 1; they broadcast to the batch shape.
    probs, logits : Tensor or float, optional
        As for :class:`Bernoulli`. Give ``probs`` or ``logits``, not both.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import RelaxedBernoulli
    >>> logits = plugrad.zeros(3, requires_grad=True)
    >>> d = RelaxedBernoulli(0.1, logits=logits)
    >>> x = d.rsample()
    >>> bool(((x > 0) & (x < 1)).all()), x.requires_grad
    (True, True)
    >>> d.log_prob(plugrad.tensor([0.5, 0.5, 0.5]))
    tensor([-2.3026, -2.3026, -2.3026], grad_fn=<AddBackward>)
    """

    arg_constraints = LogitRelaxedBernoulli.arg_constraints
    support = constraints.unit_interval
    base_dist: LogitRelaxedBernoulli

    def __init__(
        self,
        temperature: Tensor | float,
        probs: Tensor | float | None = None,
        logits: Tensor | float | None = None,
        validate_args: bool | None = None,
    ) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        self._parameters_checked = True  # by the base
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)


class ExpRelaxedCategorical(_CategoricalBacked):
    """The log of a :class:`RelaxedOneHotCategorical` draw: log-softmax of Gumbel-noised logits.

    Parameters
    ----------
    temperature : Tensor or float
        Positive; it broadcasts to the batch shape.
    probs, logits : Tensor, optional
        As for :class:`Categorical`: the last axis holds the ``K`` categories.
        Give ``probs`` or ``logits``, not both.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import ExpRelaxedCategorical
    >>> d = ExpRelaxedCategorical(0.5, logits=plugrad.zeros(3))
    >>> d.event_shape, d.rsample((2,)).shape
    (plugrad.Size([3]), (2, 3))
    >>> d.log_prob(plugrad.log(plugrad.tensor([0.25, 0.25, 0.5])))
    tensor(-4.0274)
    """

    support = constraints.real_vector  # the draws lie on a surface within it
    has_rsample = True
    temperature: Tensor

    def __init__(
        self,
        temperature: Tensor | float,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._take_parameters(probs, logits, validate_args)
        name = type(self).__name__
        self.temperature = _as_temperature(name, temperature, self._categorical._param)
        _check_temperature(self, validate=self._validate_args)

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        super()._expand_into(new, batch_shape)
        new.temperature = self.temperature

    def _event_temperature(self) -> Tensor:
        """The temperature with an axis for the categories."""
        return _ops.expand_dims(self.temperature, axis=-1)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``log_softmax((logits + g) / temperature)`` for ``g`` standard Gumbel noise."""
        shape = self._extended_shape(sample_shape)
        logits = self.logits
        u = clamp_probs(rand(shape, dtype=logits.dtype, device=logits.device))
        gumbels = -_ops.log(-_ops.log(u))
        scores = (logits + gumbels) / self._event_temperature()
        return scores - _ops.logsumexp(scores, axis=-1, keepdims=True)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        count = self._categorical._num_events
        logits, value = broadcast_all(self.logits, value)
        temperature = self.temperature
        log_scale = _ops.lgamma(full_like(temperature, float(count)))
        log_scale = log_scale + (count - 1) * _ops.log(temperature)
        score = logits - value * self._event_temperature()
        score = _ops.sum(score - _ops.logsumexp(score, axis=-1, keepdims=True), axis=-1)
        return score + log_scale


class RelaxedOneHotCategorical(_Relaxed):
    """A one-hot categorical draw relaxed onto the simplex: the Gumbel-softmax (Concrete).

    ``softmax((logits + g) / temperature)`` for ``g`` standard Gumbel noise:
    near a corner of the simplex as the ``temperature`` falls to 0.

    Parameters
    ----------
    temperature : Tensor or float
        Positive; it broadcasts to the batch shape.
    probs, logits : Tensor, optional
        As for :class:`OneHotCategorical`. Give ``probs`` or ``logits``, not both.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import RelaxedOneHotCategorical
    >>> d = RelaxedOneHotCategorical(0.5, probs=plugrad.tensor([0.2, 0.3, 0.5]))
    >>> x = d.rsample((4,))
    >>> x.shape, bool(plugrad.allclose(x.sum(-1), plugrad.ones(4)))
    ((4, 3), True)
    >>> d.log_prob(plugrad.tensor([0.25, 0.25, 0.5]))
    tensor(-0.6055)
    """

    arg_constraints = ExpRelaxedCategorical.arg_constraints
    support = constraints.simplex
    base_dist: ExpRelaxedCategorical

    def __init__(
        self,
        temperature: Tensor | float,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        self._parameters_checked = True  # by the base
        super().__init__(base, ExpTransform(), validate_args=validate_args)
