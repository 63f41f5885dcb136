"""From the reals to a constraint: PyTorch's ``biject_to`` and ``transform_to``.

Both look up, for a :class:`~plugrad.distributions.constraints.Constraint`, a
:class:`~plugrad.distributions.transforms.Transform` from unconstrained reals
onto it:

- ``biject_to(constraint)`` gives a bijection, with a log-Jacobian: for
  sampling in an unconstrained space (Hamiltonian Monte Carlo), where the
  density must be carried over;
- ``transform_to(constraint)`` gives any map onto it, perhaps with more
  inputs than degrees of freedom: for optimizing a constrained parameter
  through an unconstrained one (``SoftmaxTransform`` for the simplex, where
  ``biject_to`` gives a ``StickBreakingTransform``).

``register`` adds a constraint to either registry, or a new
:class:`ConstraintRegistry` can be made.

Examples
--------
>>> import plugrad
>>> from plugrad.distributions import Normal, transform_to
>>> unconstrained = plugrad.zeros(2, requires_grad=True)
>>> scale = transform_to(Normal.arg_constraints["scale"])(unconstrained)
>>> loss = -Normal(0.0, scale).log_prob(plugrad.tensor([0.5, -1.0])).sum()
>>> loss.backward()
>>> scale, unconstrained.grad
(tensor([1., 1.], grad_fn=<AddBackward>), tensor([0.7500, 0.0000]))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import ArgumentError
from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]

Factory = Callable[[Any], transforms.Transform]
F = TypeVar("F", bound=Factory)


class ConstraintRegistry:
    """Which transform reaches each kind of constraint: constraint classes to factories.

    A factory takes the constraint (so a parameterized one, such as
    ``interval(low, high)``, can read its bounds) and returns the transform.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import constraints
    >>> from plugrad.distributions.constraint_registry import ConstraintRegistry
    >>> from plugrad.distributions.transforms import SoftplusTransform
    >>> registry = ConstraintRegistry()
    >>> _ = registry.register(constraints.positive, lambda constraint: SoftplusTransform())
    >>> registry(constraints.positive)(plugrad.tensor([0.0]))
    tensor([0.6931])
    """

    def __init__(self) -> None:
        self._registry: dict[type, Factory] = {}

    def register(self, constraint: Any, factory: F | None = None) -> Any:
        """Make ``factory`` the one for constraints of ``constraint``'s class.

        ``constraint`` is a :class:`~plugrad.distributions.constraints.Constraint`
        subclass or an instance of one (its class is used). Without
        ``factory``, returns a decorator that registers the function it decorates.

        Examples
        --------
        >>> import plugrad
        >>> from plugrad.distributions import constraints
        >>> from plugrad.distributions.constraint_registry import ConstraintRegistry
        >>> from plugrad.distributions.transforms import AffineTransform
        >>> registry = ConstraintRegistry()
        >>> @registry.register(constraints.greater_than)
        ... def _shift(constraint):
        ...     return AffineTransform(constraint.lower_bound, 1.0)
        >>> registry(constraints.greater_than(2.0))(plugrad.tensor([1.0]))
        tensor([3.])
        """
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        kind = type(constraint) if isinstance(constraint, constraints.Constraint) else constraint
        if not (isinstance(kind, type) and issubclass(kind, constraints.Constraint)):
            raise ArgumentError(
                f"register() takes a Constraint subclass or instance, got {constraint!r}"
            )
        if not callable(factory):
            raise ArgumentError(
                f"register(): the factory must be callable (constraint -> Transform), got "
                f"{factory!r}"
            )
        self._registry[kind] = factory
        return factory

    def __call__(self, constraint: constraints.Constraint) -> transforms.Transform:
        """The transform from the reals to ``constraint``.

        Raises
        ------
        NotImplementedError
            When no factory is registered for the constraint's class.
        """
        if not isinstance(constraint, constraints.Constraint):
            raise ArgumentError(
                f"a constraint registry looks up Constraints, got {type(constraint).__name__}"
            )
        factory = self._registry.get(type(constraint))
        if factory is None:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__.lstrip('_')} constraints: no "
                "transform is registered for them; add one with register()"
            )
        return factory(constraint)


#: Bijections from the reals, with log-Jacobians.
biject_to = ConstraintRegistry()
#: Maps from the reals, not always bijective.
transform_to = ConstraintRegistry()


@biject_to.register(constraints.real)
@transform_to.register(constraints.real)
def _to_real(constraint: Any) -> transforms.Transform:
    return transforms.identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint: Any) -> transforms.Transform:
    base = biject_to(constraint.base_constraint)
    return transforms.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint: Any) -> transforms.Transform:
    base = transform_to(constraint.base_constraint)
    return transforms.IndependentTransform(base, constraint.reinterpreted_batch_ndims)


# positive and nonnegative are greater_than(0) and greater_than_eq(0): as PyTorch's, the
# shifted exponential of greater_than serves them (the shift adds 0).
@biject_to.register(constraints.greater_than)
@biject_to.register(constraints.greater_than_eq)
@transform_to.register(constraints.greater_than)
@transform_to.register(constraints.greater_than_eq)
def _to_greater_than(constraint: Any) -> transforms.Transform:
    return transforms.ComposeTransform(
        [transforms.ExpTransform(), transforms.AffineTransform(constraint.lower_bound, 1)]
    )


@biject_to.register(constraints.less_than)
@transform_to.register(constraints.less_than)
def _to_less_than(constraint: Any) -> transforms.Transform:
    return transforms.ComposeTransform(
        [transforms.ExpTransform(), transforms.AffineTransform(constraint.upper_bound, -1)]
    )


def _is(value: Any, number: float) -> bool:
    return isinstance(value, int | float) and value == number


@biject_to.register(constraints.interval)
@biject_to.register(constraints.half_open_interval)
@transform_to.register(constraints.interval)
@transform_to.register(constraints.half_open_interval)
def _to_interval(constraint: Any) -> transforms.Transform:
    low, high = constraint.lower_bound, constraint.upper_bound
    if _is(low, 0) and _is(high, 1):
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform(
        [transforms.SigmoidTransform(), transforms.AffineTransform(low, high - low)]
    )


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint: Any) -> transforms.Transform:
    return transforms.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint: Any) -> transforms.Transform:
    return transforms.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint: Any) -> transforms.Transform:
    return transforms.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint: Any) -> transforms.Transform:
    return transforms.PositiveDefiniteTransform()


@biject_to.register(constraints.corr_cholesky)
@transform_to.register(constraints.corr_cholesky)
def _to_corr_cholesky(constraint: Any) -> transforms.Transform:
    return transforms.CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_to_cat(constraint: Any) -> transforms.Transform:
    parts = [biject_to(c) for c in constraint.cseq]
    return transforms.CatTransform(parts, constraint.dim, constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_to_cat(constraint: Any) -> transforms.Transform:
    parts = [transform_to(c) for c in constraint.cseq]
    return transforms.CatTransform(parts, constraint.dim, constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_to_stack(constraint: Any) -> transforms.Transform:
    return transforms.StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_to_stack(constraint: Any) -> transforms.Transform:
    return transforms.StackTransform([transform_to(c) for c in constraint.cseq], constraint.dim)
