"""MixtureSameFamily: a categorical choice among components of one family."""

from __future__ import annotations

from typing import Any, ClassVar

from .. import ops as _ops
from ..dtype_functions import broadcast_shapes
from ..errors import InvalidArgumentError, ShapeError
from ..grad_mode import no_grad
from ..nn.functional import log_softmax
from ..tensor import Tensor
from . import constraints
from .discrete import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class _MixtureSupport(constraints._OnBase):
    """The component family's support, checked for every component and then reduced over them.

    A value has the mixture's shape; it is checked against each component (a
    new axis before its event axes) and lies in the support where it lies in
    the support of all of them.
    """

    def check(self, value: Tensor) -> Tensor:
        event_dim = self.event_dim
        if value.ndim < event_dim:
            raise self._too_few_axes(value)
        result = self.base_constraint.check(_ops.expand_dims(value, axis=-1 - event_dim))
        kept = value.ndim - event_dim
        return _ops.all(_ops.reshape(result, (*result.shape[:kept], -1)), axis=-1)

    def __repr__(self) -> str:
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"


class MixtureSameFamily(Distribution):
    """A mixture of ``K`` distributions of one family, picked by a :class:`Categorical`.

    A draw picks a component with the mixing probabilities, then draws from it;
    the density is the probability-weighted sum of the components' densities.

    Parameters
    ----------
    mixture_distribution : Categorical
        The mixing weights over ``K`` components. Its batch shape is ``()`` or
        broadcasts with the components' batch shape less its last axis.
    component_distribution : Distribution
        The components: the last axis of its batch shape, of size ``K``,
        indexes them (wrap a batch of vectors in :class:`Independent` to mix
        multivariate components).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Categorical, MixtureSameFamily, Normal
    >>> mix = Categorical(probs=plugrad.tensor([0.25, 0.75]))
    >>> gmm = MixtureSameFamily(mix, Normal(plugrad.tensor([-2.0, 2.0]), 1.0))
    >>> gmm.log_prob(plugrad.tensor([0.0, 2.0])), gmm.mean, gmm.variance
    (tensor([-2.9189, -1.2065]), tensor(1.), tensor(4.))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {}

    def __init__(
        self,
        mixture_distribution: Categorical,
        component_distribution: Distribution,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise InvalidArgumentError(
                "MixtureSameFamily: mixture_distribution must be a "
                f"plugrad.distributions.Categorical, got {type(mixture_distribution).__name__}"
            )
        if not isinstance(component_distribution, Distribution):
            raise InvalidArgumentError(
                "MixtureSameFamily: component_distribution must be a "
                f"plugrad.distributions.Distribution, got {type(component_distribution).__name__}"
            )
        mixture_batch = tuple(mixture_distribution.batch_shape)
        component_batch = tuple(component_distribution.batch_shape)
        if not component_batch:
            raise ShapeError(
                "MixtureSameFamily: component_distribution must have a batch axis indexing the "
                "components (its batch shape is ()); give one component per entry of its last "
                "batch axis"
            )
        try:
            batch_shape = broadcast_shapes(mixture_batch, component_batch[:-1])
        except ValueError:
            raise ShapeError(
                f"MixtureSameFamily: mixture_distribution.batch_shape {mixture_batch} is not "
                f"compatible with component_distribution.batch_shape[:-1] {component_batch[:-1]}"
            ) from None
        count, components = mixture_distribution.param_shape[-1], component_batch[-1]
        if count != components:
            raise ShapeError(
                f"MixtureSameFamily: mixture_distribution has {count} components but "
                f"component_distribution.batch_shape[-1] is {components}; they must be equal"
            )
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = count
        self._event_ndims = len(component_distribution.event_shape)
        event_shape = tuple(component_distribution.event_shape)
        super().__init__(tuple(batch_shape), event_shape, validate_args=validate_args)

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        component_batch = (*batch_shape, self._num_component)
        new._component_distribution = self._component_distribution.expand(component_batch)
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims

    @property
    def mixture_distribution(self) -> Categorical:
        """The categorical distribution over the components."""
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        """The components, indexed by the last axis of their batch shape."""
        return self._component_distribution

    @property
    def support(self) -> constraints.Constraint:
        return _MixtureSupport(self._component_distribution.support)

    def _weights(self) -> Tensor:
        """The mixing probabilities, with axes of size 1 for the event axes after them."""
        probs = self._mixture_distribution.probs
        return _ops.reshape(probs, (*probs.shape, *(1,) * self._event_ndims))

    def _over_components(self, value: Tensor) -> Tensor:
        """``value`` with an axis of size 1 for the components before its event axes."""
        return _ops.expand_dims(value, axis=-1 - self._event_ndims)

    @property
    def mean(self) -> Tensor:
        means = self._component_distribution.mean
        return _ops.sum(self._weights() * means, axis=-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        # the law of total variance: the mean of the variances plus the variance of the means
        weights, axis = self._weights(), -1 - self._event_ndims
        component = self._component_distribution
        mean_of_variances = _ops.sum(weights * component.variance, axis=axis)
        spread = (component.mean - self._over_components(self.mean)) ** 2
        return mean_of_variances + _ops.sum(weights * spread, axis=axis)

    def cdf(self, value: Tensor) -> Tensor:
        cdfs = self._component_distribution.cdf(self._over_components(value))
        return _ops.sum(cdfs * self._mixture_distribution.probs, axis=-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_probs = self._component_distribution.log_prob(self._over_components(value))
        log_weights = log_softmax(self._mixture_distribution.logits, dim=-1)
        return _ops.logsumexp(log_probs + log_weights, axis=-1)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)  # checks sample_shape
        sample_shape = shape[: len(shape) - len(self._batch_shape) - self._event_ndims]
        batch = tuple(self._batch_shape)
        mixture: Distribution = self._mixture_distribution
        component = self._component_distribution
        # each is drawn over the whole batch, where its own batch shape is narrower
        if tuple(mixture.batch_shape) != batch:
            mixture = mixture.expand(batch)
        if tuple(component.batch_shape) != (*batch, self._num_component):
            component = component.expand((*batch, self._num_component))
        with no_grad():
            chosen = mixture.sample(sample_shape)
            drawn = component.sample(sample_shape)
            axis = len(sample_shape) + len(batch)
            index = _ops.reshape(chosen, (*chosen.shape, 1, *(1,) * self._event_ndims))
            index = _ops.broadcast_to(index, (*chosen.shape, 1, *self._event_shape))
            return _ops.squeeze(_ops.take_along_axis(drawn, index, axis=axis), axis=axis)

    def __repr__(self) -> str:
        return (
            f"MixtureSameFamily(\n  {self._mixture_distribution!r},\n"
            f"  {self._component_distribution!r})"
        )
