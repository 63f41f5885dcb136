"""The multivariate normal distribution with a low-rank-plus-diagonal covariance.

With ``W`` the ``D x m`` factor and ``d`` the diagonal, the covariance is
``W W^T + diag(d)``. Its inverse and determinant come from the ``m x m``
capacitance matrix ``C = I + W^T diag(d)^-1 W`` (Woodbury's identity and the
matrix determinant lemma), so ``log_prob`` costs ``O(D m^2)``, not ``O(D^3)``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .. import linalg as _linalg
from .. import ops as _ops
from ..creation import eye
from ..dtype_functions import broadcast_shapes
from ..errors import ArgumentError, ShapeError
from ..pytorch_names import diag_embed
from ..random import randn
from ..tensor import Tensor
from . import constraints
from .distribution import _CentredAtLoc
from .multivariate_normal import _batch_mahalanobis
from .utils import lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _capacitance_tril(factor: Tensor, diagonal: Tensor) -> Tensor:
    """The lower Cholesky factor of ``I + W^T diag(d)^-1 W``."""
    scaled = _ops.matrix_transpose(factor) / _ops.expand_dims(diagonal, axis=-2)
    rank = factor.shape[-1]
    identity = eye(rank, dtype=factor.dtype, device=factor.device)
    return _linalg.cholesky(scaled @ factor + identity)


def _low_rank_log_det(factor: Tensor, diagonal: Tensor, capacitance_tril: Tensor) -> Tensor:
    """``log det(W W^T + diag(d)) = log det C + sum(log d)``: the matrix determinant lemma."""
    log_det_capacitance = 2 * _ops.sum(_ops.log(_linalg.diagonal(capacitance_tril)), axis=-1)
    return log_det_capacitance + _ops.sum(_ops.log(diagonal), axis=-1)


def _low_rank_mahalanobis(
    factor: Tensor, diagonal: Tensor, x: Tensor, capacitance_tril: Tensor
) -> Tensor:
    """``x^T (W W^T + diag(d))^-1 x`` by Woodbury's identity:
    ``x^T diag(d)^-1 x - |L^-1 W^T diag(d)^-1 x|^2`` for ``L`` the capacitance's factor."""
    scaled = _ops.matrix_transpose(factor) / _ops.expand_dims(diagonal, axis=-2)
    projected = (scaled @ _ops.expand_dims(x, axis=-1))[..., 0]
    return _ops.sum(x**2 / diagonal, axis=-1) - _batch_mahalanobis(capacitance_tril, projected)


def _woodbury_factor(factor: Tensor, diagonal: Tensor, capacitance_tril: Tensor) -> Tensor:
    """``A = L^-1 W^T diag(d)^-1``, with ``(W W^T + diag(d))^-1 = diag(d)^-1 - A^T A``."""
    scaled = _ops.matrix_transpose(factor) / _ops.expand_dims(diagonal, axis=-2)
    return _linalg.solve_triangular(capacitance_tril, scaled, upper=False)


def _sum_of_squares(matrix: Tensor) -> Tensor:
    """``trace(X X^T)``: the sum of the squares of each matrix of a batch."""
    return _ops.sum(matrix**2, axis=(-2, -1))


class LowRankMultivariateNormal(_CentredAtLoc):
    """The normal distribution of vectors with covariance ``cov_factor @ cov_factor.mT +
    diag(cov_diag)``.

    Parameters
    ----------
    loc : Tensor
        The mean, of shape ``batch_shape + (D,)``.
    cov_factor : Tensor
        The low-rank factor ``W``, of shape ``(..., D, m)``; ``m`` (the rank)
        may be anything, the cheaper the smaller.
    cov_diag : Tensor
        The diagonal part, positive, of shape ``(..., D)``. The batch axes of
        the three parameters broadcast together.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import LowRankMultivariateNormal
    >>> d = LowRankMultivariateNormal(
    ...     plugrad.zeros(2), plugrad.tensor([[1.0], [1.0]]), plugrad.ones(2)
    ... )
    >>> d.covariance_matrix
    tensor([[2., 1.],
            [1., 2.]])
    >>> d.log_prob(plugrad.tensor([1.0, -1.0])), d.entropy()
    (tensor(-3.3872), tensor(3.3872))
    >>> d.rsample((4,)).shape
    (4, 2)
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Tensor,
        cov_factor: Tensor,
        cov_diag: Tensor,
        validate_args: bool | None = None,
    ) -> None:
        given = (("loc", loc), ("cov_factor", cov_factor), ("cov_diag", cov_diag))
        for name, value in given:
            if not isinstance(value, Tensor):
                raise ArgumentError(
                    f"LowRankMultivariateNormal: {name} must be a Tensor, got "
                    f"{type(value).__name__}"
                )
        if loc.ndim < 1:
            raise ShapeError("LowRankMultivariateNormal: loc must be at least one-dimensional")
        size = loc.shape[-1]
        if cov_factor.ndim < 2:
            raise ShapeError(
                "LowRankMultivariateNormal: cov_factor must be at least two-dimensional, with "
                f"optional leading batch dimensions; got shape {tuple(cov_factor.shape)}"
            )
        if cov_factor.shape[-2] != size:
            raise ShapeError(
                f"LowRankMultivariateNormal: cov_factor must be a batch of matrices with shape "
                f"{size} x m (loc has {size} dimensions), got shape {tuple(cov_factor.shape)}"
            )
        if cov_diag.ndim < 1 or cov_diag.shape[-1] != size:
            raise ShapeError(
                f"LowRankMultivariateNormal: cov_diag must be a batch of vectors with shape "
                f"({size},) (loc has {size} dimensions), got shape {tuple(cov_diag.shape)}"
            )
        try:
            batch_shape = broadcast_shapes(
                tuple(loc.shape[:-1]), tuple(cov_factor.shape[:-2]), tuple(cov_diag.shape[:-1])
            )
        except ValueError:
            raise ShapeError(
                f"LowRankMultivariateNormal: incompatible batch shapes: loc "
                f"{tuple(loc.shape)}, cov_factor {tuple(cov_factor.shape)}, cov_diag "
                f"{tuple(cov_diag.shape)}"
            ) from None
        rank = cov_factor.shape[-1]
        self.loc = _ops.broadcast_to(loc, (*batch_shape, size))
        self.cov_factor = _ops.broadcast_to(cov_factor, (*batch_shape, size, rank))
        self.cov_diag = _ops.broadcast_to(cov_diag, (*batch_shape, size))
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        # (validated first: a negative cov_diag is an invalid parameter, not a failed Cholesky)
        super().__init__(tuple(batch_shape), (size,), validate_args=validate_args)
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        size, rank = self._event_shape[0], self.cov_factor.shape[-1]
        new.loc = _ops.broadcast_to(self.loc, (*batch_shape, size))
        new.cov_diag = _ops.broadcast_to(self.cov_diag, (*batch_shape, size))
        new.cov_factor = _ops.broadcast_to(self.cov_factor, (*batch_shape, size, rank))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril

    def _full(self, matrix: Tensor) -> Tensor:
        size = self._event_shape[0]
        return _ops.broadcast_to(matrix, (*self._batch_shape, size, size))

    @property
    def variance(self) -> Tensor:
        diagonal = _ops.sum(self._unbroadcasted_cov_factor**2, axis=-1)
        diagonal = diagonal + self._unbroadcasted_cov_diag
        return _ops.broadcast_to(diagonal, (*self._batch_shape, *self._event_shape))

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor ``L`` of the covariance, ``L @ L.mT``."""
        # W W^T + D = D^1/2 (I + D^-1/2 W W^T D^-1/2) D^1/2, whose middle factor has every
        # eigenvalue at least 1: well conditioned, unlike the covariance itself.
        root = _ops.expand_dims(_ops.sqrt(self._unbroadcasted_cov_diag), axis=-1)
        whitened = self._unbroadcasted_cov_factor / root
        identity = eye(self._event_shape[0], dtype=root.dtype, device=root.device)
        inner = whitened @ _ops.matrix_transpose(whitened) + identity
        return self._full(root * _linalg.cholesky(inner))

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """The covariance matrix, ``cov_factor @ cov_factor.mT + diag(cov_diag)``."""
        factor = self._unbroadcasted_cov_factor
        covariance = factor @ _ops.matrix_transpose(factor)
        return self._full(covariance + diag_embed(self._unbroadcasted_cov_diag))

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The inverse of the covariance matrix, by Woodbury's identity."""
        a = _woodbury_factor(
            self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, self._capacitance_tril
        )
        inverse_diagonal = diag_embed(1 / self._unbroadcasted_cov_diag)
        return self._full(inverse_diagonal - _ops.matrix_transpose(a) @ a)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """``loc + W @ e1 + sqrt(d) * e2`` for standard normal ``e1`` (of the rank) and ``e2``."""
        shape = self._extended_shape(sample_shape)
        rank = self.cov_factor.shape[-1]
        dtype, device = self.loc.dtype, self.loc.device
        eps_factor = randn((*shape[:-1], rank), dtype=dtype, device=device)
        eps_diagonal = randn(shape, dtype=dtype, device=device)
        along_factor = (self._unbroadcasted_cov_factor @ _ops.expand_dims(eps_factor, axis=-1))[
            ..., 0
        ]
        along_diagonal = _ops.sqrt(self._unbroadcasted_cov_diag) * eps_diagonal
        return self.loc + along_factor + along_diagonal

    def _log_det(self) -> Tensor:
        return _low_rank_log_det(
            self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag, self._capacitance_tril
        )

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        distance = _low_rank_mahalanobis(
            self._unbroadcasted_cov_factor,
            self._unbroadcasted_cov_diag,
            value - self.loc,
            self._capacitance_tril,
        )
        size = self._event_shape[0]
        return -0.5 * (size * math.log(2 * math.pi) + self._log_det() + distance)

    def entropy(self) -> Tensor:
        size = self._event_shape[0]
        entropy = 0.5 * (size * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return _ops.broadcast_to(entropy, tuple(self._batch_shape))
