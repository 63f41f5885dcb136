"""Independent: batch axes of a distribution read as event axes."""

from __future__ import annotations

from typing import Any, ClassVar

from ..errors import InvalidArgumentError
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution, _require_distribution
from .utils import sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    """A distribution whose right-most ``reinterpreted_batch_ndims`` batch axes become event axes.

    ``log_prob`` and ``entropy`` sum over those axes, so a batch of independent
    normals becomes one diagonal multivariate normal.

    Parameters
    ----------
    base_distribution : Distribution
    reinterpreted_batch_ndims : int
        How many of its right-most batch axes to read as event axes.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Independent, Normal
    >>> d = Independent(Normal(plugrad.zeros(4, 3), 1.0), 1)
    >>> d.batch_shape, d.event_shape, d.log_prob(plugrad.zeros(4, 3)).shape
    (plugrad.Size([4]), plugrad.Size([3]), (4,))
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {}

    def __init__(
        self,
        base_distribution: Distribution,
        reinterpreted_batch_ndims: int,
        validate_args: bool | None = None,
    ) -> None:
        _require_distribution("Independent: base_distribution", base_distribution)
        ndims = reinterpreted_batch_ndims
        batch = tuple(base_distribution.batch_shape)
        if not isinstance(ndims, int) or isinstance(ndims, bool) or not 0 <= ndims <= len(batch):
            raise InvalidArgumentError(
                f"Independent: reinterpreted_batch_ndims must be an int in [0, {len(batch)}] "
                f"(the base distribution's batch shape is {batch}), got {ndims!r}"
            )
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = ndims
        split = len(batch) - ndims
        event = batch[split:] + tuple(base_distribution.event_shape)
        super().__init__(batch[:split], event, validate_args=validate_args)

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        kept = tuple(self.base_dist.batch_shape)[len(self._batch_shape) :]
        new.base_dist = self.base_dist.expand(batch_shape + kept)
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:  # type: ignore[override]
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    @property
    def support(self) -> constraints.Constraint:
        support = self.base_dist.support
        if self.reinterpreted_batch_ndims == 0:
            return support
        return constraints.independent(support, self.reinterpreted_batch_ndims)

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Independent: enumerate_support over several axes")
        return self.base_dist.enumerate_support(expand)

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
