"""The Wishart distribution: the law of ``sum x_i x_i^T`` for ``df`` normal vectors ``x_i``.

Samples are drawn by the Bartlett decomposition: with ``L`` the Cholesky factor
of the scale matrix, ``W = (L A) (L A)^T`` for ``A`` lower triangular with
``sqrt(chi2(df - i))`` on its diagonal (row ``i`` from 0) and standard normal
entries below it. The chi-squared draws are gamma draws with their implicit
gradient, so ``rsample`` is differentiable in ``df`` as in the scale matrix.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from .. import linalg as _linalg
from .. import ops as _ops
from ..creation import arange, asarray
from ..dtype_functions import broadcast_shapes, finfo
from ..errors import ArgumentError, ConvergenceError, InvalidArgumentError, ShapeError
from ..grad_mode import no_grad
from ..plugins import _rules
from ..pytorch_names import diag_embed, digamma, lgamma
from ..random import randn
from ..tensor import Tensor
from . import constraints
from .exp_family import ExponentialFamily
from .gamma import standard_gamma
from .multivariate_normal import MatrixForms, the_matrix_given

__all__ = ["Wishart"]

#: Rounds of fresh draws for the samples that came out singular (PyTorch's default).
_MAX_CORRECTIONS = 10


def _multivariate_lgamma(x: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p``, element-wise:
    ``p (p - 1) / 4 log(pi) + sum over i < p of lgamma(x - i / 2)`` (no domain check)."""
    total = lgamma(x)
    for i in range(1, p):
        total = total + lgamma(x - i / 2)
    return total + p * (p - 1) / 4 * math.log(math.pi)


def _multivariate_digamma(x: Tensor, p: int) -> Tensor:
    """The derivative of :func:`_multivariate_lgamma` in ``x``: ``sum of digamma(x - i / 2)``."""
    total = digamma(x)
    for i in range(1, p):
        total = total + digamma(x - i / 2)
    return total


class Wishart(MatrixForms, ExponentialFamily):
    """The Wishart distribution of ``p x p`` positive-definite matrices, with ``df`` degrees
    of freedom and a scale matrix ``Sigma``.

    A draw is distributed as ``sum of x_i x_i^T`` over ``df`` independent
    ``N(0, Sigma)`` vectors (for real ``df > p - 1`` too); its mean is
    ``df * Sigma``. ``Sigma`` is given by exactly one of ``covariance_matrix``,
    ``precision_matrix`` (its inverse) or ``scale_tril`` (its lower Cholesky
    factor, the cheapest). Samples are drawn by the Bartlett decomposition; a
    sample that comes out singular (possible in floating point when ``df`` is
    below ``p``) is drawn again, up to 10 times.

    Parameters
    ----------
    df : Tensor or float
        Greater than ``p - 1``, always checked (as PyTorch's); a ``df`` below ``p``
        warns that singular samples are likely.
    covariance_matrix, precision_matrix : Tensor, optional
        Symmetric positive-definite, of shape ``(..., p, p)``.
    scale_tril : Tensor, optional
        Lower triangular with a positive diagonal, of shape ``(..., p, p)``. The
        batch axes of the matrix and the shape of ``df`` broadcast together.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import Wishart
    >>> d = Wishart(plugrad.tensor([3.0, 5.0]), covariance_matrix=plugrad.eye(2))
    >>> d.batch_shape, d.event_shape
    (plugrad.Size([2]), plugrad.Size([2, 2]))
    >>> d.log_prob(plugrad.eye(2) * 2), d.entropy()
    (tensor([-4.5310, -4.9365]), tensor([5.5310, 6.8105]))
    >>> d.mean[1]
    tensor([[5., 0.],
            [0., 5.]])
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0
    df: Tensor

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self._event_shape[-1] - 1),
        }

    def __init__(
        self,
        df: Tensor | float,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        name, matrix = the_matrix_given("Wishart", covariance_matrix, precision_matrix, scale_tril)
        size = matrix.shape[-1]
        if isinstance(df, Tensor):
            try:
                batch_shape = broadcast_shapes(tuple(matrix.shape[:-2]), tuple(df.shape))
            except ValueError:
                raise ShapeError(
                    f"Wishart: the shape of df {tuple(df.shape)} and the batch shape "
                    f"{tuple(matrix.shape[:-2])} of {name} (of shape {tuple(matrix.shape)}) do "
                    "not broadcast"
                ) from None
            self.df = _ops.broadcast_to(df, batch_shape)
        elif isinstance(df, int | float) and not isinstance(df, bool):
            batch_shape = tuple(matrix.shape[:-2])
            self.df = asarray(df, dtype=matrix.dtype, device=matrix.device)
        else:
            raise ArgumentError(
                f"Wishart: df must be a Tensor or a real number, got {type(df).__name__}"
            )
        # Checked whatever validate_args says, as PyTorch does: no distribution exists there.
        below = _ops.any(self.df <= size - 1)
        if _rules.any_true(below, "Wishart: df <= p - 1", InvalidArgumentError):
            raise InvalidArgumentError(
                f"Wishart: df must be greater than the dimension less one, {size - 1}, got "
                f"{self.df!s}"
            )
        if bool(_ops.any(self.df < size)):
            warnings.warn(
                f"Wishart: df below the dimension {size}: singular samples are highly likely",
                UserWarning,
                stacklevel=2,
            )
        setattr(self, name, _ops.broadcast_to(matrix, (*batch_shape, size, size)))
        super().__init__(batch_shape, (size, size), validate_args=validate_args)
        self._keep_scale_tril(covariance_matrix, precision_matrix, scale_tril)

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        event = tuple(self._event_shape)
        new.df = _ops.broadcast_to(self.df, batch_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "precision_matrix", "scale_tril"):
            if name in self.__dict__:
                setattr(new, name, _ops.broadcast_to(self.__dict__[name], batch_shape + event))

    def _full(self, matrix: Tensor) -> Tensor:
        return _ops.broadcast_to(matrix, (*self._batch_shape, *self._event_shape))

    def _df_matrix(self) -> Tensor:
        """``df`` with two axes of size 1 after the batch, to scale matrices."""
        df = _ops.broadcast_to(self.df, tuple(self._batch_shape))
        return _ops.expand_dims(_ops.expand_dims(df, axis=-1), axis=-1)

    @property
    def mean(self) -> Tensor:
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        """``(df - p - 1) Sigma``; NaN where ``df <= p + 1`` (no interior mode), as PyTorch's."""
        factor = self._df_matrix() - self._event_shape[-1] - 1
        return _ops.where(factor > 0, factor, math.nan) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        """The variance of each entry: ``df (Sigma_ij ** 2 + Sigma_ii Sigma_jj)``."""
        sigma = self.covariance_matrix
        diagonal = _linalg.diagonal(sigma)
        outer = _ops.expand_dims(diagonal, axis=-1) * _ops.expand_dims(diagonal, axis=-2)
        return self._df_matrix() * (sigma**2 + outer)

    def _bartlett(self, sample_shape: tuple[int, ...]) -> Tensor:
        """Draws by the Bartlett decomposition, of shape ``sample_shape + batch + event``."""
        size = self._event_shape[-1]
        tril = self._unbroadcasted_scale_tril
        batch = (*sample_shape, *self._batch_shape)
        offsets = arange(size, dtype=tril.dtype, device=tril.device)
        half_df = (_ops.expand_dims(self.df, axis=-1) - offsets) / 2
        chi2 = 2 * standard_gamma(_ops.broadcast_to(half_df, (*batch, size)))
        diagonal = _ops.clip(_ops.sqrt(chi2), min=finfo(chi2.dtype).eps)
        below = _ops.tril(randn((*batch, size, size), dtype=tril.dtype, device=tril.device), k=-1)
        factor = tril @ (diag_embed(diagonal) + below)
        return factor @ _ops.matrix_transpose(factor)

    def rsample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Bartlett draws, differentiable in ``df`` and the scale matrix; those singular in
        floating point are drawn again (up to 10 times, then
        :class:`~plugrad.errors.ConvergenceError`)."""
        shape = self._extended_shape(sample_shape)
        sample_shape = shape[: len(shape) - len(self._batch_shape) - 2]
        value = self._bartlett(sample_shape)
        for _ in range(_MAX_CORRECTIONS + 1):
            with no_grad():
                singular = _ops.logical_not(self.support.check(value.detach()))
                if not bool(_ops.any(singular)):
                    return value
            redraw = _ops.expand_dims(_ops.expand_dims(singular, axis=-1), axis=-1)
            value = _ops.where(redraw, self._bartlett(sample_shape), value)
        raise ConvergenceError(
            f"Wishart: samples stayed singular after {_MAX_CORRECTIONS} fresh draws; "
            "df is too close to p - 1 for the precision of the dtype"
        )

    def _half_log_det_scale(self) -> Tensor:
        """``log det(L)``, half the log-determinant of the scale matrix."""
        return _ops.sum(_ops.log(_linalg.diagonal(self._unbroadcasted_scale_tril)), axis=-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        df, size = self.df, self._event_shape[-1]
        tril = self._unbroadcasted_scale_tril
        batch = broadcast_shapes(tuple(tril.shape[:-2]), tuple(value.shape[:-2]))
        tril = _ops.broadcast_to(tril, (*batch, size, size))
        # trace(Sigma^-1 X) through two triangular solves (the lower triangle of L only).
        matrix = _ops.broadcast_to(value, (*batch, size, size))
        half = _linalg.solve_triangular(tril, matrix, upper=False)
        whole = _linalg.solve_triangular(_ops.matrix_transpose(tril), half, upper=True)
        trace = _ops.sum(_linalg.diagonal(whole), axis=-1)
        log_det = _linalg.slogdet(value).logabsdet
        return (
            -df * (size * math.log(2) / 2 + self._half_log_det_scale())
            - _multivariate_lgamma(df / 2, size)
            + (df - size - 1) / 2 * log_det
            - trace / 2
        )

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        size = self._event_shape[-1]
        return (-self.precision_matrix / 2, (self.df - size - 1) / 2)

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """``(theta2 + (p + 1) / 2) (p log 2 - log det(-2 theta1))`` plus the log of the
        multivariate gamma function of ``theta2 + (p + 1) / 2``."""
        x, y = natural_params
        size = self._event_shape[-1]
        half_df = y + (size + 1) / 2
        log_det = _linalg.slogdet(-2 * x).logabsdet
        return half_df * (size * math.log(2) - log_det) + _multivariate_lgamma(half_df, size)

    def entropy(self) -> Tensor:
        df, size = self.df, self._event_shape[-1]
        entropy = (
            (size + 1) * (size * math.log(2) / 2 + self._half_log_det_scale())
            + _multivariate_lgamma(df / 2, size)
            - (df - size - 1) / 2 * _multivariate_digamma(df / 2, size)
            + df * size / 2
        )
        return _ops.broadcast_to(entropy, tuple(self._batch_shape))
