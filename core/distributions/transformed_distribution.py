"""TransformedDistribution: a base distribution pushed through transforms."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..errors import ArgumentError, ShapeError
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution, _broadcast_parameters_into, _require_distribution
from .independent import Independent
from .transforms import ComposeTransform, Transform, _sum_rightmost
from .utils import broadcast_all

__all__ = ["TransformedDistribution"]


class TransformedDistribution(Distribution):
    """The distribution of ``f(X)`` for ``X`` drawn from ``base_distribution``.

    ``f`` is the composition of ``transforms``, applied first to last. The
    density follows from the change of variables,
    ``log p(y) = log p_X(x) - log |det dy/dx|`` with ``x = f^-1(y)``.
    Samples are the base distribution's, transformed (reparameterized when
    its are). The event shape is the widest of the base's and the
    transforms': a transform of vectors makes each vector one event.

    Parameters
    ----------
    base_distribution : Distribution
    transforms : Transform or list of Transform

    Examples
    --------
    A logistic distribution, the logit of a uniform variable, scaled:

    >>> import plugrad
    >>> from plugrad.distributions import TransformedDistribution, Uniform
    >>> from plugrad.distributions.transforms import AffineTransform, SigmoidTransform
    >>> logistic = TransformedDistribution(
    ...     Uniform(0.0, 1.0), [SigmoidTransform().inv, AffineTransform(1.0, 2.0)])
    >>> logistic.log_prob(plugrad.tensor([1.0, 3.0]))
    tensor([-2.0794, -2.3197])
    >>> logistic.cdf(plugrad.tensor(1.0)), logistic.icdf(plugrad.tensor(0.5))
    (tensor(0.5000), tensor(1.))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {}
    #: Set by a family that checked its own parameters before building its transforms.
    _parameters_checked = False

    def __init__(
        self,
        base_distribution: Distribution,
        transforms: Transform | Sequence[Transform],
        validate_args: bool | None = None,
    ) -> None:
        _require_distribution(f"{type(self).__name__}: base_distribution", base_distribution)
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, list | tuple) and all(
            isinstance(t, Transform) for t in transforms
        ):
            self.transforms = list(transforms)
        else:
            raise ArgumentError(
                f"{type(self).__name__}: transforms must be a Transform or a list of "
                f"Transforms, got {transforms!r}"
            )
        transform = ComposeTransform(self.transforms)
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        domain_event_dim = transform.domain.event_dim
        if len(base_shape) < domain_event_dim:
            raise ShapeError(
                f"{type(self).__name__}: the transforms take events of {domain_event_dim} "
                f"axes, but the base distribution's samples have shape {base_shape}"
            )
        forward_shape = transform.forward_shape(base_shape)
        # Parameters of the transforms may widen the batch: the base is expanded to match.
        expanded_shape = transform.inverse_shape(forward_shape)
        if expanded_shape != base_shape:
            cut = len(expanded_shape) - base_event_dim
            base_distribution = base_distribution.expand(expanded_shape[:cut])
        if domain_event_dim > base_event_dim:
            base_distribution = Independent(base_distribution, domain_event_dim - base_event_dim)
        self.base_dist = base_distribution
        codomain_event_dim = transform.codomain.event_dim
        event_dim = max(codomain_event_dim, base_event_dim + codomain_event_dim - domain_event_dim)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    def _validate_parameters(self) -> None:
        if not self._parameters_checked:
            super()._validate_parameters()

    def _take_parameters(self, validate_args: bool | None, **given: Tensor | float) -> None:
        """Broadcast a family's parameters together, set them, and check them now, before
        transforms are built from them (a reciprocal of 0 would warn first). ``expand``
        broadcasts them too."""
        for name, value in zip(given, broadcast_all(*given.values())):
            setattr(self, name, value)
        if self._validate_default if validate_args is None else validate_args:
            Distribution._validate_parameters(self)
        self._parameters_checked = True

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        shape = batch_shape + tuple(self._event_shape)
        for transform in reversed(self.transforms):
            shape = transform.inverse_shape(shape)
        base_batch_shape = shape[: len(shape) - len(self.base_dist.event_shape)]
        new.base_dist = self.base_dist.expand(base_batch_shape)
        new.transforms = self.transforms
        _broadcast_parameters_into(self, new, batch_shape)

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    @property
    def support(self) -> Any:
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self._event_shape) > support.event_dim:
            support = constraints.independent(support, len(self._event_shape) - support.event_dim)
        return support

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """The base distribution's samples, transformed, without gradients."""
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
            return x

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """The base distribution's reparameterized samples, transformed."""
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def log_prob(self, value: Tensor) -> Tensor:
        """The base's log-density at the inverse image, less each transform's log-Jacobian."""
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self._event_shape)
        log_prob: Tensor | float = 0.0
        y = value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain.event_dim - transform.codomain.event_dim
            log_det = transform.log_abs_det_jacobian(x, y)
            log_prob = log_prob - _sum_rightmost(log_det, event_dim - transform.domain.event_dim)
            y = x
        base = self.base_dist.log_prob(y)
        return log_prob + _sum_rightmost(base, event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        """``value``, or ``1 - value`` where the transforms together decrease."""
        sign: Any = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Tensor) -> Tensor:
        """The base's CDF at the inverse image (for monotone transforms of numbers)."""
        for transform in reversed(self.transforms):
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        """The base's inverse CDF, transformed (for monotone transforms of numbers)."""
        self._validate_probability(value)
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for transform in self.transforms:
            value = transform(value)
        return value
