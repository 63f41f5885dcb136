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

from collections.abc import Sequence
from typing import Any, ClassVar

from .. import linalg as _linalg
from .. import ops as _ops
from ..creation import full
from ..dtype_functions import finfo
from ..dtypes import bool as _bool
from ..errors import ArgumentError, InvalidArgumentError, ShapeError
from ..grad_mode import no_grad
from ..pytorch_names import isclose
from ..tensor import Tensor
from .utils import _block_lengths

__all__ = [
    "Constraint",
    "boolean",
    "cat",
    "corr_cholesky",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "less_than",
    "lower_cholesky",
    "lower_triangular",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_definite",
    "positive_integer",
    "positive_semidefinite",
    "real",
    "real_vector",
    "simplex",
    "square",
    "stack",
    "symmetric",
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


class _OnBase(Constraint):
    """A constraint checked through ``base_constraint``: discrete where it is, with its events
    (a subclass may read more axes into them)."""

    def __init__(self, base_constraint: Constraint) -> None:
        self.base_constraint = base_constraint

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim

    def _too_few_axes(self, value: Tensor) -> ShapeError:
        """The error for a ``value`` with fewer axes than an event of this constraint."""
        return ShapeError(
            f"{self!r}.check(): the value must have at least {self.event_dim} axes, got "
            f"shape {tuple(value.shape)}"
        )


class _Independent(_OnBase):
    """``base`` with its ``reinterpreted_batch_ndims`` right-most axes read as one event."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        if not isinstance(base_constraint, Constraint):
            raise ArgumentError(
                f"independent(): base_constraint must be a Constraint, got "
                f"{type(base_constraint).__name__}"
            )
        ndims = reinterpreted_batch_ndims
        if not isinstance(ndims, int) or isinstance(ndims, bool) or ndims < 0:
            raise InvalidArgumentError(
                "independent(): reinterpreted_batch_ndims must be a non-negative int, got "
                f"{ndims!r}"
            )
        super().__init__(base_constraint)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value)
        if result.ndim < self.reinterpreted_batch_ndims:
            raise self._too_few_axes(value)
        for _ in range(self.reinterpreted_batch_ndims):
            result = _ops.all(result, axis=-1)
        return result

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


def _is_square(value: Tensor) -> bool:
    return value.ndim >= 2 and value.shape[-1] == value.shape[-2]


class _Square(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return full(tuple(value.shape[:-2]), _is_square(value), dtype=_bool, device=value.device)


class _Symmetric(_Square):
    def check(self, value: Tensor) -> Tensor:
        if not _is_square(value):
            return super().check(value)  # False for every matrix
        with no_grad():
            close = isclose(value, _ops.matrix_transpose(value), atol=1e-6)
            return _ops.all(_ops.all(close, axis=-1), axis=-1)


class _NonnegativeEigenvalues(_Symmetric):
    """Symmetric matrices with no negative eigenvalue (nor, where ``_strict``, a zero one)."""

    _strict: ClassVar[bool]

    def check(self, value: Tensor) -> Tensor:
        symmetric = super().check(value)
        if not bool(_ops.all(symmetric)):
            return symmetric
        with no_grad():
            eigenvalues = _linalg.eigvalsh(value)
            return _ops.all(eigenvalues > 0 if self._strict else eigenvalues >= 0, axis=-1)


class _PositiveSemidefinite(_NonnegativeEigenvalues):
    _strict = False


class _PositiveDefinite(_NonnegativeEigenvalues):
    _strict = True


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return _ops.all(_ops.all(_ops.tril(value) == value, axis=-1), axis=-1)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        lower = _ops.all(_ops.all(_ops.tril(value) == value, axis=-1), axis=-1)
        return lower & _ops.all(_linalg.diagonal(value) > 0, axis=-1)


class _CorrCholesky(_LowerCholesky):
    """Lower Cholesky factors of correlation matrices: rows of unit length."""

    def check(self, value: Tensor) -> Tensor:
        # As PyTorch's: a row's norm may miss 1 by ten epsilons per column.
        tolerance = finfo(value.dtype).eps * value.shape[-1] * 10
        with no_grad():
            row_norm = _ops.sqrt(_ops.sum(value.detach() ** 2, axis=-1))
            unit_rows = _ops.all(_ops.abs(row_norm - 1.0) <= tolerance, axis=-1)
        return super().check(value) & unit_rows


def _constraints(what: str, cseq: Sequence[Constraint]) -> list[Constraint]:
    cseq = list(cseq)
    for c in cseq:
        if not isinstance(c, Constraint):
            raise ArgumentError(f"{what}: cseq must hold Constraints, got {type(c).__name__}")
    if not cseq:
        raise InvalidArgumentError(f"{what}: cseq must hold at least one constraint")
    return cseq


def _axis_of_length(what: str, dim: int, value: Tensor, length: int, expected: str) -> None:
    """Check that ``dim`` is an axis of ``value`` with ``length`` entries (``expected`` says
    why, in the error)."""
    if not -value.ndim <= dim < value.ndim:
        raise ShapeError(
            f"{what}: dim {dim} is out of range for a value of shape {tuple(value.shape)}"
        )
    if value.shape[dim] != length:
        raise ShapeError(
            f"{what}: axis {dim} of the value has {value.shape[dim]} entries, {expected}"
        )


class _Joined(Constraint):
    """``cseq[i]`` on the ``i``-th part of axis ``dim`` of a value."""

    cseq: list[Constraint]
    dim: int

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)


class _Cat(_Joined):
    """``cseq[i]`` on the ``i``-th block (of ``lengths[i]``) of axis ``dim``, as ``concat``."""

    def __init__(
        self, cseq: Sequence[Constraint], dim: int = 0, lengths: Sequence[int] | None = None
    ) -> None:
        self.cseq = _constraints("cat()", cseq)
        self.lengths = _block_lengths("cat()", lengths, len(self.cseq), "constraint")
        self.dim = dim

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Tensor) -> Tensor:
        total = sum(self.lengths)
        why = f"but the lengths {self.lengths} add up to {total}"
        _axis_of_length("cat constraint", self.dim, value, total, why)
        checks, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            checks.append(constraint.check(_ops.narrow(value, self.dim, start, length)))
            start += length
        return _ops.concat(checks, axis=self.dim)


class _Stack(_Joined):
    """``cseq[i]`` on the ``i``-th slice of axis ``dim``, as ``stack``."""

    def __init__(self, cseq: Sequence[Constraint], dim: int = 0) -> None:
        self.cseq = _constraints("stack()", cseq)
        self.dim = dim

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        dim = max(c.event_dim for c in self.cseq)
        # A negative dim inside the event makes the stacked axis an event axis too.
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value: Tensor) -> Tensor:
        count = len(self.cseq)
        why = f"one per constraint ({count}) expected"
        _axis_of_length("stack constraint", self.dim, value, count, why)
        slices = [_ops.select(value, self.dim, i) for i in range(len(self.cseq))]
        return _ops.stack([c.check(v) for c, v in zip(self.cseq, slices)], axis=self.dim)


real = _Real()
boolean = _Boolean()
one_hot = _OneHot()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
nonnegative_integer = _IntegerGreaterThanEq(0)
positive_integer = _IntegerGreaterThanEq(1)
unit_interval = _Interval(0.0, 1.0)
real_vector = _Independent(real, 1)
simplex = _Simplex()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
interval = _Interval
half_open_interval = _HalfOpenInterval
integer_interval = _IntegerInterval
independent = _Independent
cat = _Cat
stack = _Stack
