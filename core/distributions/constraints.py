"""The sets a distribution's parameters and values must lie in: PyTorch's ``constraints``.

A :class:`Constraint` answers, element by element (or event by event), whether
a tensor lies in its set; distributions check their parameters against
``arg_constraints`` and the values given to ``log_prob`` against ``support``
when ``validate_args`` is on.

Examples
--------
>>> import plugrad
>>> from plugrad.distributions import constraints
>>> constraints.positive.check(plugrad.tensor([1.0, 0.0]))
tensor([ True, False])
>>> constraints.interval(0.0, 1.0)
Interval(lower_bound=0.0, upper_bound=1.0)
"""

from __future__ import annotations

from typing import Any

from .. import linalg as _linalg
from .. import ops as _ops
from ..grad_mode import no_grad
from ..pytorch_names import isclose
from ..tensor import Tensor

__all__ = [
    "Constraint",
    "boolean",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "less_than",
    "lower_cholesky",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_definite",
    "real",
    "real_vector",
    "simplex",
    "unit_interval",
]


def _bound(value: Any) -> str:
    return repr(value) if not isinstance(value, Tensor) or value.ndim else repr(value.item())


class Constraint:
    """A set of values; ``check(value)`` says, per event, whether ``value`` lies in it.

    Attributes
    ----------
    is_discrete : bool
        Whether the set is countable (integers, booleans, one-hot vectors).
    event_dim : int
        How many right-most axes make up one event: ``check`` reduces them.
    """

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        """A boolean tensor: whether each event of ``value`` lies in the set."""
        raise NotImplementedError(f"{type(self).__name__} does not implement check()")

    def __repr__(self) -> str:
        return f"{type(self).__name__.lstrip('_')}()"


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return value == value  # False only at nan


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        is_boolean = _ops.all((value == 0) | (value == 1), axis=-1)
        return is_boolean & (_ops.sum(value, axis=-1) == 1)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return value > self.lower_bound

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={_bound(self.lower_bound)})"


class _GreaterThanEq(_GreaterThan):
    def check(self, value: Tensor) -> Tensor:
        return value >= self.lower_bound

    def __repr__(self) -> str:
        return f"GreaterThanEq(lower_bound={_bound(self.lower_bound)})"


class _LessThan(Constraint):
    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={_bound(self.upper_bound)})"


class _Interval(Constraint):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        bounds = f"lower_bound={_bound(self.lower_bound)}, upper_bound={_bound(self.upper_bound)}"
        return f"{type(self).__name__.lstrip('_')}({bounds})"


class _HalfOpenInterval(_Interval):
    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value < self.upper_bound)


class _IntegerInterval(_Interval):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & super().check(value)


class _IntegerGreaterThanEq(_GreaterThanEq):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={_bound(self.lower_bound)})"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        nonnegative = _ops.all(value >= 0, axis=-1)
        return nonnegative & (_ops.abs(_ops.sum(value, axis=-1) - 1) < 1e-6)


class _Independent(Constraint):
    """``base`` with its ``reinterpreted_batch_ndims`` right-most axes read as one event."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value)
        for _ in range(self.reinterpreted_batch_ndims):
            result = _ops.all(result, axis=-1)
        return result

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _PositiveDefinite(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        square = value.ndim >= 2 and value.shape[-1] == value.shape[-2]
        if not square:
            return _ops.all(_ops.all(value != value, axis=-1), axis=-1)  # False per matrix
        with no_grad():
            close = isclose(value, _ops.matrix_transpose(value), atol=1e-6)
            symmetric = _ops.all(_ops.all(close, axis=-1), axis=-1)
            if not bool(_ops.all(symmetric)):
                return symmetric
            return _ops.all(_linalg.eigvalsh(value) > 0, axis=-1)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        lower = _ops.all(_ops.all(_ops.tril(value) == value, axis=-1), axis=-1)
        return lower & _ops.all(_linalg.diagonal(value) > 0, axis=-1)


real = _Real()
boolean = _Boolean()
one_hot = _OneHot()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
nonnegative_integer = _IntegerGreaterThanEq(0)
unit_interval = _Interval(0.0, 1.0)
real_vector = _Independent(real, 1)
simplex = _Simplex()
positive_definite = _PositiveDefinite()
lower_cholesky = _LowerCholesky()
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
interval = _Interval
half_open_interval = _HalfOpenInterval
integer_interval = _IntegerInterval
independent = _Independent
