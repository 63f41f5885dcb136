"""The multivariate normal distribution."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .. import linalg as _linalg
from .. import ops as _ops
from ..creation import eye
from ..dtype_functions import broadcast_shapes
from ..errors import ArgumentError, InvalidArgumentError, ShapeError
from ..random import randn
from ..tensor import Tensor
from . import constraints
from .distribution import _CentredAtLoc
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mahalanobis(scale_tril: Tensor, x: Tensor) -> Tensor:
    """``x^T (L L^T)^-1 x`` over the last axis of ``x``, batches broadcast; ``L``'s lower
    triangle only is read, as by a triangular solve. An infinite ``x`` (without NaN) is
    infinitely far, as forward substitution finds (a general solve would give NaN)."""
    size = x.shape[-1]
    batch = broadcast_shapes(tuple(scale_tril.shape[:-2]), tuple(x.shape[:-1]))
    matrix = _ops.broadcast_to(_ops.tril(scale_tril), (*batch, size, size))
    finite = _ops.isfinite(x)
    column = _ops.expand_dims(_ops.where(finite, x, 0.0), axis=-1)
    solved = _linalg.solve(matrix, _ops.broadcast_to(column, (*batch, size, 1)))
    distance = _ops.sum(solved[..., 0] ** 2, axis=-1)
    far = _ops.logical_and(
        _ops.any(_ops.isinf(x), axis=-1), _ops.logical_not(_ops.any(_ops.isnan(x), axis=-1))
    )
    near = _ops.logical_or(_ops.all(finite, axis=-1), far)
    return _ops.where(far, math.inf, _ops.where(near, distance, math.nan))


def the_matrix_given(
    family: str,
    covariance_matrix: Tensor | None,
    precision_matrix: Tensor | None,
    scale_tril: Tensor | None,
) -> tuple[str, Tensor]:
    """The name and value of the one matrix form given to ``family``'s constructor,
    checked to be a Tensor of square matrices."""
    given = {
        name: value
        for name, value in (
            ("covariance_matrix", covariance_matrix),
            ("precision_matrix", precision_matrix),
            ("scale_tril", scale_tril),
        )
        if value is not None
    }
    if len(given) != 1:
        raise InvalidArgumentError(
            f"{family}: give exactly one of covariance_matrix, precision_matrix or "
            f"scale_tril, got {sorted(given) or 'none'}"
        )
    ((name, matrix),) = given.items()
    if not isinstance(matrix, Tensor):
        raise ArgumentError(f"{family}: {name} must be a Tensor, got {type(matrix).__name__}")
    if matrix.ndim < 2 or matrix.shape[-1] != matrix.shape[-2]:
        raise ShapeError(
            f"{family}: {name} must be at least two-dimensional, with square trailing "
            f"matrices, got shape {tuple(matrix.shape)}"
        )
    return name, matrix


def precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The lower Cholesky factor of ``precision``'s inverse, without inverting ``precision``."""
    # With P flipped in both axes as F P F = L' L'^T, P^-1 = (F L'^-T F)(F L'^-T F)^T, and
    # F L'^-T F is lower triangular with a positive diagonal.
    flipped = _linalg.cholesky(_ops.flip(precision, axis=(-2, -1)))
    inverse_transposed = _ops.matrix_transpose(_ops.flip(flipped, axis=(-2, -1)))
    identity = eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    shape = tuple(precision.shape)
    return _linalg.solve(inverse_transposed, _ops.broadcast_to(identity, shape))


class MatrixForms:
    """The three forms of the matrix (covariance, or Wishart's scale) of a family that keeps
    its lower Cholesky factor ``_unbroadcasted_scale_tril``; ``_full`` broadcasts each to
    the family's batch."""

    _unbroadcasted_scale_tril: Tensor

    def _keep_scale_tril(
        self,
        covariance_matrix: Tensor | None,
        precision_matrix: Tensor | None,
        scale_tril: Tensor | None,
    ) -> None:
        """Keep the lower Cholesky factor of the one form given."""
        # NOTE: a given scale_tril is used as it is, as PyTorch's (its covariance, samples
        # and variance read every entry, its solves the lower triangle only).
        if scale_tril is not None:
            tril = scale_tril
        elif covariance_matrix is not None:
            tril = _linalg.cholesky(covariance_matrix)
        else:
            assert precision_matrix is not None
            tril = precision_to_scale_tril(precision_matrix)
        self._unbroadcasted_scale_tril = tril

    def _full(self, matrix: Tensor) -> Tensor:
        raise NotImplementedError

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor ``L`` of the matrix, ``L @ L.mT``."""
        return self._full(self._unbroadcasted_scale_tril)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """The matrix: the covariance (Wishart: the scale matrix)."""
        tril = self._unbroadcasted_scale_tril
        return self._full(tril @ _ops.matrix_transpose(tril))

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The inverse of the matrix."""
        tril_inverse = _linalg.inv(_ops.tril(self._unbroadcasted_scale_tril))
        return self._full(_ops.matrix_transpose(tril_inverse) @ tril_inverse)


class MultivariateNormal(MatrixForms, _CentredAtLoc):
    """The normal distribution of vectors with mean ``loc`` and a covariance matrix.

    The covariance is given by exactly one of ``covariance_matrix``,
    ``precision_matrix`` (its inverse) or ``scale_tril`` (its lower-triangular
    Cholesky factor ``L``, with ``L @ L.mT`` the covariance; the cheapest, as
    the other two are factored with :func:`plugrad.linalg.cholesky`).

    Parameters
    ----------
    loc : Tensor
        The mean, of shape ``batch_shape + (D,)``.
    covariance_matrix, precision_matrix : Tensor, optional
        Symmetric positive-definite, of shape ``(..., D, D)``.
    scale_tril : Tensor, optional
        Lower triangular with a positive diagonal, of shape ``(..., D, D)``.
        The batch axes of the matrix and of ``loc`` broadcast together.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import MultivariateNormal
    >>> d = MultivariateNormal(plugrad.zeros(2), covariance_matrix=plugrad.eye(2) * 4)
    >>> d.log_prob(plugrad.tensor([2.0, 0.0])), d.scale_tril
    (tensor(-3.7242), tensor([[2., 0.],
            [0., 2.]]))
    >>> d.rsample((3,)).shape
    (3, 2)
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Tensor,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        name, matrix = the_matrix_given(
            "MultivariateNormal", covariance_matrix, precision_matrix, scale_tril
        )
        if not isinstance(loc, Tensor):
            raise ArgumentError(
                f"MultivariateNormal: loc must be a Tensor, got {type(loc).__name__}"
            )
        if loc.ndim < 1:
            raise ShapeError("MultivariateNormal: loc must be at least one-dimensional")
        if matrix.shape[-1] != loc.shape[-1]:
            raise ShapeError(
                f"MultivariateNormal: loc of shape {tuple(loc.shape)} has {loc.shape[-1]} "
                f"dimensions but {name} of shape {tuple(matrix.shape)} is for {matrix.shape[-1]}"
            )
        try:
            batch_shape = broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        except ValueError:
            raise ShapeError(
                f"MultivariateNormal: the batch shapes of loc {tuple(loc.shape)} and {name} "
                f"{tuple(matrix.shape)} do not broadcast"
            ) from None
        size = loc.shape[-1]
        setattr(self, name, _ops.broadcast_to(matrix, (*batch_shape, size, size)))
        self.loc = _ops.broadcast_to(loc, (*batch_shape, size))
        super().__init__(batch_shape, (size,), validate_args=validate_args)
        self._keep_scale_tril(covariance_matrix, precision_matrix, scale_tril)

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        size = self._event_shape[0]
        new.loc = _ops.broadcast_to(self.loc, (*batch_shape, size))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "precision_matrix", "scale_tril"):
            if name in self.__dict__:
                matrix = _ops.broadcast_to(self.__dict__[name], (*batch_shape, size, size))
                setattr(new, name, matrix)

    def _full(self, matrix: Tensor) -> Tensor:
        return _ops.broadcast_to(matrix, (*self._batch_shape, *self._event_shape * 2))

    @property
    def variance(self) -> Tensor:
        diagonal = _ops.sum(self._unbroadcasted_scale_tril**2, axis=-1)
        return _ops.broadcast_to(diagonal, (*self._batch_shape, *self._event_shape))

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``loc + L @ eps`` for standard normal ``eps``: differentiable in the parameters."""
        shape = self._extended_shape(sample_shape)
        eps = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        product = self._unbroadcasted_scale_tril @ _ops.expand_dims(eps, axis=-1)
        return self.loc + product[..., 0]

    def _half_log_det(self) -> Tensor:
        diagonal = _linalg.diagonal(self._unbroadcasted_scale_tril)
        return _ops.sum(_ops.log(diagonal), axis=-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        distance = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        size = self._event_shape[0]
        return -0.5 * (size * math.log(2 * math.pi) + distance) - self._half_log_det()

    def entropy(self) -> Tensor:
        size = self._event_shape[0]
        entropy = 0.5 * size * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return _ops.broadcast_to(entropy, tuple(self._batch_shape))
