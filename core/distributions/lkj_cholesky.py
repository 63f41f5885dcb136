"""The LKJ distribution over lower Cholesky factors of correlation matrices.

A correlation matrix ``M = L @ L.mT`` of the LKJ distribution (Lewandowski,
Kurowicka and Joe, 2009) has density proportional to ``det(M) ** (eta - 1)``;
this is the distribution of its factor ``L``, whose density also carries the
Jacobian of ``L -> M``. Draws are made by the onion method: row ``k`` of ``L``
(from 0) is ``sqrt(y) u`` with ``u`` uniform on the unit sphere of its first
``k`` entries and ``y ~ Beta(k / 2, eta + (dim - 1 - k) / 2)``, then the
diagonal entry that gives the row unit length.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from .. import linalg as _linalg
from .. import ops as _ops
from ..creation import arange, zeros_like
from ..dtype_functions import finfo
from ..errors import ArgumentError, InvalidArgumentError
from ..grad_mode import no_grad
from ..pytorch_names import diag_embed, lgamma
from ..random import randn
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .gamma import Beta
from .utils import broadcast_all
from .wishart import _multivariate_lgamma

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution of lower Cholesky factors ``L`` of ``dim x dim`` correlation
    matrices, with ``concentration`` ``eta``.

    The correlation matrix ``L @ L.mT`` has density proportional to
    ``det(L @ L.mT) ** (eta - 1)``: uniform over correlation matrices at
    ``eta = 1``, concentrated about the identity as ``eta`` grows. Samples are
    drawn by the onion method (no ``rsample``, as PyTorch's).

    Parameters
    ----------
    dim : int
        The size of the matrices, at least 2.
    concentration : Tensor or float, optional
        ``eta``, positive (default 1); its shape is the batch shape.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.distributions import LKJCholesky
    >>> d = LKJCholesky(3, plugrad.tensor([0.5, 2.0]))
    >>> d.batch_shape, d.event_shape
    (plugrad.Size([2]), plugrad.Size([3, 3]))
    >>> d.log_prob(plugrad.eye(3))
    tensor([-2.5310, -0.6155])
    >>> L = d.sample()
    >>> bool(plugrad.allclose((L @ L.mT).diagonal(dim1=-2, dim2=-1), plugrad.ones(2, 3)))
    True
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration": constraints.positive
    }
    support = constraints.corr_cholesky
    concentration: Tensor

    def __init__(
        self, dim: int, concentration: Tensor | float = 1.0, validate_args: bool | None = None
    ) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise ArgumentError(f"LKJCholesky: dim must be an int, got {type(dim).__name__}")
        if dim < 2:
            raise InvalidArgumentError(
                f"LKJCholesky: dim must be an integer greater than or equal to 2, got {dim}"
            )
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        shape = tuple(self.concentration.shape)
        super().__init__(shape, (dim, dim), validate_args=validate_args)

    def _expand_into(self, new: Any, batch_shape: tuple[int, ...]) -> None:
        new.dim = self.dim
        new.concentration = _ops.broadcast_to(self.concentration, batch_shape)

    def sample(self, sample_shape: tuple[int, ...] = ()) -> Tensor:
        """Factors drawn by the onion method, row by row as in the module's description."""
        shape = self._extended_shape(sample_shape)
        dim, eta = self.dim, self.concentration
        with no_grad():
            eta = eta.detach()
            # The squared length of the off-diagonal part of rows 1 .. dim - 1.
            k = arange(1, dim, dtype=eta.dtype, device=eta.device)
            sample_shape = shape[: len(shape) - len(self._batch_shape) - 2]
            concentration0 = _ops.expand_dims(eta, axis=-1) + (dim - 1 - k) / 2
            beta = Beta(k / 2, concentration0, validate_args=False)
            radius2 = beta.sample(sample_shape)
            first_row = zeros_like(radius2[..., :1])
            radius2 = _ops.concat([first_row, radius2], axis=-1)
            # A direction uniform on the sphere of the k entries left of the diagonal of row k.
            normal = _ops.tril(randn(shape, dtype=eta.dtype, device=eta.device), k=-1)
            length = _ops.sqrt(_ops.sum(normal**2, axis=-1, keepdims=True))
            direction = normal / _ops.where(length > 0, length, 1.0)
            below = _ops.sqrt(_ops.expand_dims(radius2, axis=-1)) * direction
            left = _ops.clip(1 - _ops.sum(below**2, axis=-1), min=finfo(eta.dtype).tiny)
            return below + diag_embed(_ops.sqrt(left))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        dim, eta = self.dim, self.concentration
        # det(L L^T)^(eta - 1) and the Jacobian of L -> L L^T: prod over rows k >= 1 of
        # L_kk ** (2 (eta - 1) + dim - 1 - k).
        k = arange(1, dim, dtype=eta.dtype, device=eta.device)
        power = 2 * (_ops.expand_dims(eta, axis=-1) - 1) + (dim - 1) - k
        diagonal = _linalg.diagonal(value)[..., 1:]
        unnormalized = _ops.sum(power * _ops.log(diagonal), axis=-1)
        # The normalizing constant: pi^((dim-1)/2) Gamma_{dim-1}(a - 1/2) / Gamma(a)^(dim-1),
        # a = eta + (dim - 1) / 2, with Gamma_p the multivariate gamma function.
        rows = dim - 1
        alpha = eta + rows / 2
        log_multigamma = _multivariate_lgamma(alpha - 0.5, rows)
        log_normalizer = rows / 2 * math.log(math.pi) + log_multigamma - rows * lgamma(alpha)
        return unnormalized - log_normalizer
