"""The base class of every distribution: shapes, sampling, validation."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cached_property
from typing import Any, ClassVar

from .. import ops as _ops
from ..dtype_functions import broadcast_shapes
from ..errors import ArgumentError, InvalidArgumentError, ShapeError
from ..grad_mode import no_grad
from ..plugins import _rules
from ..tensor import Size, Tensor
from . import constraints
from .utils import _as_tuple, broadcast_all

__all__ = ["Distribution"]


class Distribution:
    """A probability distribution over tensors, batched: PyTorch's ``Distribution``.

    A distribution has a ``batch_shape`` (independent, not necessarily identical
    distributions side by side) and an ``event_shape`` (the shape of one draw of
    one of them). ``sample(sample_shape)`` returns a tensor of shape
    ``sample_shape + batch_shape + event_shape``; ``log_prob(value)`` reduces
    the event axes and broadcasts the rest.

    Every distribution takes ``validate_args``, its last argument, as described
    below; each family lists only its own parameters.

    Parameters
    ----------
    batch_shape, event_shape : tuple of int
    validate_args : bool, optional
        Whether to check the parameters now, and each value given to
        ``log_prob``, ``cdf`` and ``icdf``, raising
        :class:`plugrad.errors.InvalidArgumentError` (a ``ValueError``) for
        one outside its constraint. ``None`` takes the default, on unless
        :meth:`set_default_validate_args` turned it off.

    Examples
    --------
    >>> import plugrad
    >>> d = plugrad.distributions.Normal(plugrad.zeros(3), 1.0)
    >>> d.batch_shape, d.event_shape, d.sample((2,)).shape
    (plugrad.Size([3]), plugrad.Size([]), (2, 3))
    """

    has_rsample: ClassVar[bool] = False
    has_enumerate_support: ClassVar[bool] = False
    _validate_default: ClassVar[bool] = True
    #: The constraint of each parameter, by name.
    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {}
    #: The set the values lie in.
    support: Any = None

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions made from now on.

        Examples
        --------
        >>> import plugrad
        >>> plugrad.distributions.Distribution.set_default_validate_args(True)
        """
        if value not in (True, False):
            raise InvalidArgumentError(f"set_default_validate_args() takes a bool, got {value!r}")
        Distribution._validate_default = value

    def __init__(
        self,
        batch_shape: tuple[int, ...] = (),
        event_shape: tuple[int, ...] = (),
        validate_args: bool | None = None,
    ) -> None:
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        self._validate_args = self._validate_default if validate_args is None else validate_args
        if self._validate_args:
            self._validate_parameters()

    def _validate_parameters(self) -> None:
        for name, constraint in self.arg_constraints.items():
            lazy = isinstance(getattr(type(self), name, None), cached_property)
            if lazy and name not in self.__dict__:
                continue  # derived from the parameter given, which is checked
            self._check_parameter(
                name,
                constraint.check,
                f"outside {constraint!r}",
                f"to satisfy the constraint {constraint!r}, but found",
            )

    def _check_parameter(
        self, name: str, check: Callable[[Tensor], Tensor], fault: str, expected: str
    ) -> None:
        """Raise :class:`InvalidArgumentError` where ``check`` is false at an element of the
        parameter ``name``.

        ``fault`` says what is wrong (``"not positive"``) in the check's name, which a
        compiled replay repeats; ``expected`` is the message's words between this
        distribution and "invalid values" (``"to be positive, but found"``).
        """
        value = getattr(self, name)
        with no_grad():
            invalid = _ops.logical_not(_ops.all(check(value)))
        # (a check a compiled replay repeats, not a read of values that ends a capture)
        what = f"parameter {name} of {type(self).__name__} {fault}"
        if _rules.any_true(invalid, what, InvalidArgumentError):
            raise InvalidArgumentError(
                f"Expected parameter {name} (Tensor of shape {tuple(value.shape)}) of "
                f"distribution {self!r} {expected} invalid values:\n{value!s}"
            )

    @property
    def batch_shape(self) -> Size:
        """The shape of the batch of distributions."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of one draw of one distribution of the batch."""
        return self._event_shape

    def expand(self, batch_shape: tuple[int, ...]) -> Distribution:
        """The distribution with its parameters broadcast to ``batch_shape`` (no copies).

        Examples
        --------
        >>> import plugrad
        >>> plugrad.distributions.Normal(0.0, 1.0).expand((2, 3)).batch_shape
        plugrad.Size([2, 3])
        """
        batch_shape = _as_tuple(batch_shape, "expand(): batch_shape")
        try:
            fits = tuple(broadcast_shapes(tuple(self._batch_shape), batch_shape)) == batch_shape
        except ValueError:
            fits = False
        if not fits:
            raise ShapeError(
                f"{type(self).__name__}.expand(): batch shape {tuple(self._batch_shape)} cannot "
                f"be broadcast to {batch_shape}"
            )
        new = type(self).__new__(type(self))
        self._expand_into(new, batch_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        """Set ``new``'s parameters: this distribution's, broadcast to ``batch_shape``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement expand()")

    @property
    def mean(self) -> Tensor:
        """The mean of each distribution of the batch."""
        raise NotImplementedError(f"{type(self).__name__} has no mean")

    @property
    def mode(self) -> Tensor:
        """The most likely value of each distribution of the batch."""
        raise NotImplementedError(f"{type(self).__name__} has no mode")

    @property
    def variance(self) -> Tensor:
        """The variance of each distribution of the batch."""
        raise NotImplementedError(f"{type(self).__name__} has no variance")

    @property
    def stddev(self) -> Tensor:
        """The standard deviation: the square root of the variance."""
        return _ops.sqrt(self.variance)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Draw samples of shape ``sample_shape + batch_shape + event_shape``, without gradients.

        The numbers come from plugrad's generator of the parameters' device, so
        :func:`plugrad.manual_seed` makes them reproducible.
        """
        if not self.has_rsample:
            raise NotImplementedError(f"{type(self).__name__} does not implement sample()")
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Draw reparameterized samples: differentiable with respect to the parameters."""
        raise NotImplementedError(
            f"{type(self).__name__} has no rsample(): its samples are not a differentiable "
            "function of its parameters; use sample(), or log_prob() for score-function gradients"
        )

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob()")

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf()")

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse of the cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf()")

    def entropy(self) -> Tensor:
        """The entropy of each distribution of the batch, in nats."""
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy()")

    def perplexity(self) -> Tensor:
        """``exp(entropy())``."""
        return _ops.exp(self.entropy())

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete support, along a new first axis."""
        raise NotImplementedError(f"{type(self).__name__} does not implement enumerate_support()")

    def _extended_shape(self, sample_shape: tuple[int, ...] = ()) -> tuple[int, ...]:
        sample_shape = _as_tuple(sample_shape, f"{type(self).__name__}: sample_shape")
        return sample_shape + tuple(self._batch_shape) + tuple(self._event_shape)

    def _validate_sample(self, value: Any) -> None:
        name = type(self).__name__
        if not isinstance(value, Tensor):
            raise InvalidArgumentError(
                f"{name}: the value argument to log_prob must be a Tensor, got "
                f"{type(value).__name__}; wrap it in plugrad.tensor(...)"
            )
        event = tuple(self._event_shape)
        shape = tuple(value.shape)
        if len(shape) < len(event) or shape[len(shape) - len(event) :] != event:
            raise ShapeError(
                f"{name}: the right-most size of value must match event_shape: {shape} vs {event}"
            )
        expected = tuple(self._batch_shape) + event
        for i, j in zip(reversed(shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ShapeError(
                    f"{name}: value of shape {shape} is not broadcastable with "
                    f"batch_shape + event_shape {expected}"
                )
        support = self.support
        with no_grad():
            invalid = _ops.logical_not(_ops.all(support.check(value)))
        what = f"a value outside the support ({support!r}) of {type(self).__name__}"
        if _rules.any_true(invalid, what, InvalidArgumentError):
            raise InvalidArgumentError(
                f"Expected value argument (Tensor of shape {shape}) to be within the support "
                f"({support!r}) of the distribution {self!r}, but found invalid values:\n{value!s}"
            )

    def _validate_probability(self, value: Any) -> None:
        """With ``validate_args``: raise for a value of ``icdf`` that is not a probability."""
        if not self._validate_args:
            return
        name = type(self).__name__
        if not isinstance(value, Tensor):
            raise InvalidArgumentError(
                f"{name}: the value argument to icdf must be a Tensor, got "
                f"{type(value).__name__}; wrap it in plugrad.tensor(...)"
            )
        with no_grad():
            invalid = _ops.logical_not(_ops.all(constraints.unit_interval.check(value)))
        what = f"a value of {name}.icdf outside [0, 1]"
        if _rules.any_true(invalid, what, InvalidArgumentError):
            raise InvalidArgumentError(
                f"{name}.icdf() takes probabilities, in [0, 1]; found others:\n{value!s}"
            )

    def __repr__(self) -> str:
        shown = []
        for name in self.arg_constraints:
            value = self.__dict__.get(name)
            if isinstance(value, Tensor):
                shown.append(
                    f"{name}: {value if math.prod(value.shape) == 1 else Size(value.shape)}"
                )
        return f"{type(self).__name__}({', '.join(shown)})"


def _require_distribution(what: str, value: Any) -> None:
    """Raise :class:`ArgumentError` unless ``value`` (``what``, in the message) is a
    :class:`Distribution`."""
    if not isinstance(value, Distribution):
        raise ArgumentError(f"{what} must be a Distribution, got {type(value).__name__}")


class _Elementwise(Distribution):
    """A distribution with one value of each parameter per element of the batch.

    The parameters given are broadcast together (``broadcast_all``) into the
    batch shape; ``expand`` broadcasts those of ``arg_constraints`` that are
    set (a derived one, such as ``logits`` from ``probs``, is derived again).
    """

    def _set_parameters(self, validate_args: bool | None, **given: Tensor | float) -> None:
        values = broadcast_all(*given.values())
        for name, value in zip(given, values):
            setattr(self, name, value)
        super().__init__(values[0].shape, validate_args=validate_args)

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        _broadcast_parameters_into(self, new, batch_shape)


def _broadcast_parameters_into(dist: Distribution, new: Any, batch_shape: tuple[int, ...]) -> None:
    """Set on ``new`` the parameters of ``dist``'s ``arg_constraints`` that ``dist`` has set
    (not derived ones), broadcast to ``batch_shape``."""
    for name in dist.arg_constraints:
        if name in dist.__dict__:
            setattr(new, name, _ops.broadcast_to(dist.__dict__[name], batch_shape))


class _CentredAtLoc(Distribution):
    """A distribution symmetric and unimodal about ``loc``: its mean and its mode."""

    loc: Tensor

    @property
    def mean(self) -> Tensor:
        return self.loc

    mode = mean


class _LocScale(_Elementwise, _CentredAtLoc):
    """A location-scale family: ``loc`` real and ``scale`` positive, broadcast together."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    has_rsample = True
    scale: Tensor

    def __init__(
        self, loc: Tensor | float, scale: Tensor | float, validate_args: bool | None = None
    ) -> None:
        self._set_parameters(validate_args, loc=loc, scale=scale)
