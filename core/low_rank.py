"""Randomized low-rank decompositions: PyTorch's ``svd_lowrank`` and ``pca_lowrank``.

Both find an orthonormal basis ``Q`` of the range of ``A`` from ``A`` applied to a
random Gaussian matrix, sharpened by a few subspace (power) iterations, then take
the exact SVD of the small matrix ``Q^H A`` (Halko, Martinsson and Tropp, 2009,
algorithms 4.4 and 5.1). Made of differentiable ops, so the results are
differentiable in ``A`` where the SVD's gradient is defined. The random matrix is
drawn from the default generator of ``A``'s device: :func:`plugrad.manual_seed`
makes the results repeatable.
"""

from __future__ import annotations

import operator
from typing import Any

from . import linalg as _linalg
from . import ops as _ops
from . import random as _random
from .errors import ArgumentError, DtypeError, InvalidArgumentError, ShapeError
from .tensor import Tensor

__all__ = ["pca_lowrank", "svd_lowrank"]


def _whole(function: str, name: str, value: Any) -> int:
    """``value`` as a non-negative int, or a typed error naming the parameter."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):  # (NumPy ints too)
        raise ArgumentError(f"{function}(): {name} must be an int, got {type(value).__name__}")
    value = operator.index(value)
    if value < 0:
        raise InvalidArgumentError(f"{function}(): {name} must be non-negative, got {value}")
    return value


def _matrices(function: str, A: Any) -> Tensor:
    if not isinstance(A, Tensor):
        raise ArgumentError(f"{function}() takes a Tensor as A, got {type(A).__name__}")
    if A.ndim < 2:
        raise ShapeError(
            f"{function}(): A must be a matrix or a batch of them, (*, m, n), got shape {A.shape}"
        )
    if A.dtype.kind not in ("real floating", "complex floating"):
        raise DtypeError(
            f"{function}(): A must have a floating or complex dtype, got {A.dtype}; "
            "convert it first, e.g. A.float()"
        )
    return A


def _range_basis(A: Tensor, q: int, niter: int) -> Tensor:
    """Orthonormal columns (at most ``q``) whose span holds most of ``A``'s range."""
    sketch = _random.randn((A.shape[-1], q), dtype=A.dtype, device=A.device)
    basis = _linalg.qr(_ops.matmul(A, sketch)).Q
    adjoint = A.mH
    for _ in range(niter):
        # Re-orthonormalizing after each product keeps the small singular directions from
        # being lost to rounding (Halko et al., algorithm 4.4).
        basis = _linalg.qr(_ops.matmul(adjoint, basis)).Q
        basis = _linalg.qr(_ops.matmul(A, basis)).Q
    return basis


def _low_rank_svd(A: Tensor, q: int, niter: int) -> tuple[Tensor, Tensor, Tensor]:
    wide = A.shape[-2] < A.shape[-1]
    if wide:
        A = A.mH  # the basis is found in the longer dimension, as a tall matrix's
    basis = _range_basis(A, q, niter)
    U, S, Vh = _linalg.svd(_ops.matmul(basis.mH, A), full_matrices=False)
    U = _ops.matmul(basis, U)
    V = Vh.mH
    return (V, S, U) if wide else (U, S, V)


def svd_lowrank(
    A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """Approximate SVD ``A ≈ U diag(S) V^H`` of rank ``q``, by a randomized method.

    Parameters
    ----------
    A : Tensor
        Shape ``(*, m, n)``, floating or complex.
    q : int, default 6
        The rank sought, a little above the rank of ``A``; the results have
        ``k = min(q, m, n)`` columns.
    niter : int, default 2
        Subspace iterations; more sharpen the result where the singular values
        decay slowly.
    M : Tensor, optional
        Subtracted from ``A`` first (broadcast to its shape): the SVD of ``A - M``.

    Returns
    -------
    tuple of Tensor
        ``U`` ``(*, m, k)``, ``S`` ``(*, k)`` (real, descending) and ``V`` ``(*, n, k)``.

    Notes
    -----
    Exact (up to rounding) for a matrix of rank at most ``q``. For a dense matrix
    of full rank, :func:`plugrad.linalg.svd` is exact and usually as fast.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> A = plugrad.outer(plugrad.tensor([1.0, 2.0, 2.0]), plugrad.tensor([3.0, 4.0]))
    >>> U, S, V = plugrad.svd_lowrank(A, q=1)
    >>> S, plugrad.allclose(U @ plugrad.diag(S) @ V.mT, A, atol=1e-5)
    (tensor([15.]), True)
    """
    A = _matrices("svd_lowrank", A)
    q = 6 if q is None else _whole("svd_lowrank", "q", q)
    niter = 2 if niter is None else _whole("svd_lowrank", "niter", niter)
    if M is not None:
        if not isinstance(M, Tensor):
            raise ArgumentError(
                f"svd_lowrank() takes a Tensor or None as M, got {type(M).__name__}"
            )
        try:
            M = _ops.broadcast_to(M, A.shape)
        except ShapeError as error:
            raise ShapeError(
                f"svd_lowrank(): M of shape {M.shape} does not broadcast to A's shape {A.shape}"
            ) from error
        A = A - M
    return _low_rank_svd(A, q, niter)


def pca_lowrank(
    A: Tensor, q: int | None = None, center: bool = True, niter: int = 2
) -> tuple[Tensor, Tensor, Tensor]:
    """Principal components of the data matrix ``A`` (rows are samples), by
    :func:`svd_lowrank` of ``A`` with its column means subtracted.

    Parameters
    ----------
    A : Tensor
        Shape ``(*, m, n)``: ``m`` samples of ``n`` features, floating or complex.
    q : int, optional
        How many components, at most ``min(m, n)``; ``min(6, m, n)`` by default.
    center : bool, default True
        Subtract each column's mean first; pass False for data already centered.
    niter : int, default 2
        Subspace iterations, as in :func:`svd_lowrank`.

    Returns
    -------
    tuple of Tensor
        ``U`` ``(*, m, q)``, ``S`` ``(*, q)`` and ``V`` ``(*, n, q)``: the columns of
        ``V`` are the principal directions, ``S ** 2 / (m - 1)`` the variances along
        them, and ``A @ V`` the data in those coordinates.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> points = plugrad.tensor([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    >>> U, S, V = plugrad.pca_lowrank(points, q=1)
    >>> (V * V[0].sign()).flatten(), S ** 2 / 2
    (tensor([0.4472, 0.8944]), tensor([5.]))
    """
    A = _matrices("pca_lowrank", A)
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    else:
        q = _whole("pca_lowrank", "q", q)
        if q > min(m, n):
            raise InvalidArgumentError(
                f"pca_lowrank(): q must be at most min(m, n) = {min(m, n)} for A of shape "
                f"{A.shape}, got {q}"
            )
    niter = _whole("pca_lowrank", "niter", niter)
    if center:
        A = A - _ops.mean(A, axis=-2, keepdims=True)
    return _low_rank_svd(A, q, niter)
