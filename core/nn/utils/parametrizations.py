"""Ready-made parametrizations (PyTorch's ``torch.nn.utils.parametrizations``)."""

from __future__ import annotations

from typing import Any

from ... import linalg as _linalg
from ... import ops as _ops
from ...creation import arange, eye, ones_like, zeros, zeros_like
from ...dtype_functions import finfo
from ...errors import (
    AxisError,
    InvalidArgumentError,
    NotSupportedError,
    ShapeError,
    checked_bool,
)
from ...grad_mode import no_grad
from ...pytorch_names import allclose
from ...random import randn
from ...tensor import Tensor
from .. import functional as F
from ..conv import _ConvTransposeNd
from ..module import Module
from .parametrize import register_parametrization

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every axis but ``dim``, kept as axes of length 1 (over all of
    them, a 0-d tensor, where ``dim`` is -1), as PyTorch's ``norm_except_dim``."""
    if dim == -1:
        return _ops.sqrt(_ops.sum(v * v))
    if not -v.ndim <= dim < v.ndim:  # (dim % ndim took dim=2 of a matrix as dim 0)
        raise AxisError(
            f"weight_norm: dim={dim} is out of range for a weight of {v.ndim} dimensions; give "
            f"one in [{-v.ndim}, {v.ndim - 1}], or None for the norm over all of them"
        )
    axes = tuple(axis for axis in range(v.ndim) if axis != dim % v.ndim)
    return _ops.sqrt(_ops.sum(v * v, axis=axes, keepdims=True))


class _WeightNorm(Module):
    """``weight = g * v / ||v||``, the norm over every axis but ``dim``."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Make ``module.<name>`` the product of a magnitude and a direction, as PyTorch's.

    ``module.parametrizations.<name>.original0`` is the magnitude ``g`` (the
    2-norm of the weight over every axis but ``dim``; over all of them where
    ``dim`` is None), ``original1`` the direction ``v``; the weight is
    ``g * v / ||v||``, computed at each read.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils.parametrizations import weight_norm
    >>> layer = weight_norm(plugrad.nn.Linear(3, 2))
    >>> layer.parametrizations.weight.original0.shape
    (2, 1)
    >>> sorted(layer.state_dict())
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
    """
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def older_keys(layer: Module, state_dict: Any, prefix: str, *_: Any) -> None:
        # A checkpoint of the older weight_norm (name_g, name_v) loads, as in PyTorch.
        g, v = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g in state_dict and v in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v)

    module.register_load_state_dict_pre_hook(older_keys)
    return module


def weight_as_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as a matrix whose rows run along ``dim`` (the rest flattened), as the
    spectral norm sees it."""
    if dim != 0:
        weight = _ops.permute_dims(weight, (dim, *(d for d in range(weight.ndim) if d != dim)))
    return _ops.reshape(weight, (weight.shape[0], -1))


def random_singular_vectors(matrix: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """Unit vectors of ``matrix``'s height and width drawn at random: the power method's start."""
    dtype, device = matrix.dtype, matrix.device
    with no_grad():
        u = F.normalize(randn(matrix.shape[0], dtype=dtype, device=device), dim=0, eps=eps)
        v = F.normalize(randn(matrix.shape[1], dtype=dtype, device=device), dim=0, eps=eps)
    return u, v


def _check_power_iterations(n_power_iterations: Any) -> None:
    """Refuse a count of power-method steps that is not a positive int."""
    if not isinstance(n_power_iterations, int) or n_power_iterations <= 0:
        raise InvalidArgumentError(
            "spectral_norm(): n_power_iterations must be a positive int, got "
            f"{n_power_iterations!r}"
        )


def _output_axis(module: Module) -> int:
    """The default ``dim`` of a spectral norm: 1 for the transposed convolutions, else 0."""
    return 1 if isinstance(module, _ConvTransposeNd) else 0


class _SpectralNorm(Module):
    """``weight / sigma``, ``sigma`` the largest singular value of the weight as a matrix,
    estimated by power iteration; its vectors ``_u`` and ``_v`` are buffers, and each
    evaluation in training takes ``n_power_iterations`` steps more."""

    _u: Tensor
    _v: Tensor

    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < max(ndim, 1):
            raise InvalidArgumentError(
                f"spectral_norm(): dim={dim} is out of range for {ndim} dimensions"
            )
        _check_power_iterations(n_power_iterations)
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            matrix = weight_as_matrix(weight.detach(), self.dim)
            u, v = random_singular_vectors(matrix, eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(matrix, 15)

    def _power_method(self, matrix: Tensor, iterations: int) -> None:
        # Written into the buffers, as PyTorch's (out=): a state dict taken before sees the steps.
        with no_grad():
            for _ in range(iterations):
                self._u.copy_(F.normalize(_ops.matmul(matrix, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_ops.matmul(matrix.mH, self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        matrix = weight_as_matrix(weight, self.dim)
        if self.training:
            self._power_method(matrix.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = _ops.vecdot(u, _ops.matmul(matrix, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration, as
    PyTorch's.

    ``dim`` is the axis of the output features (default: 1 for the transposed
    convolutions, else 0). In training each read of the weight takes
    ``n_power_iterations`` steps of the power method, whose vectors are the
    buffers ``parametrizations.<name>.0._u`` and ``._v``.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils.parametrizations import spectral_norm
    >>> _ = plugrad.manual_seed(0)  # (power iteration from random vectors: a few steps)
    >>> layer = spectral_norm(plugrad.nn.Linear(4, 3))
    >>> for key in sorted(layer.state_dict()):
    ...     print(key)
    bias
    parametrizations.weight.0._u
    parametrizations.weight.0._v
    parametrizations.weight.original
    >>> _ = layer.eval()
    >>> round(float(plugrad.linalg.matrix_norm(layer.weight, ord=2)), 2)
    1.0
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise InvalidArgumentError(
            f"spectral_norm(): {type(module).__name__} has no parameter {name!r}"
        )
    if dim is None:
        dim = _output_axis(module)
    register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# -- orthogonal ---------------------------------------------------------------------------

_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(q: Tensor) -> bool:
    """Whether the columns of each matrix of ``q`` are orthonormal, within PyTorch's
    tolerance (``10 n eps`` absolute)."""
    n, k = q.shape[-2], q.shape[-1]
    tolerance = 10.0 * n * finfo(q.dtype).eps
    identity = eye(k, dtype=q.dtype, device=q.device)
    return allclose(_ops.matmul(q.mH, q), identity, atol=tolerance)


def _sign_of(values: Tensor) -> Tensor:
    """``values / |values|`` (``sgn``), 0 at 0: the phase of complex numbers too."""
    size = _ops.abs(values)
    return _ops.where(size == 0, 0.0, values / _ops.where(size == 0, 1.0, size))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of ``a``'s QR decomposition whose R has a positive diagonal (unique where
    ``a`` has full rank): the orthonormal columns nearest to Gram-Schmidt's of ``a``."""
    q, r = _linalg.qr(a)
    return q * _ops.expand_dims(_sign_of(_linalg.diagonal(r)), axis=-2)


def _householder_product(vectors: Tensor, tau: Tensor) -> Tensor:
    """The first ``k`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^T``, where
    ``v_i`` is column ``i`` of ``vectors`` (zero above row ``i``) with a 1 added at row
    ``i`` (LAPACK's ``orgqr`` convention, PyTorch's ``linalg.householder_product``)."""
    n, k = vectors.shape[-2], vectors.shape[-1]
    result = eye(n, k, dtype=vectors.dtype, device=vectors.device)
    result = _ops.broadcast_to(result, vectors.shape)
    unit = eye(n, dtype=vectors.dtype, device=vectors.device)
    for i in reversed(range(k)):
        v = vectors[..., :, i] + unit[i]  # (..., n)
        # H_i M = M - tau_i v (v^T M): applied to the product of those after it
        projected = _ops.matmul(_ops.expand_dims(v, axis=-2), result)  # (..., 1, k)
        scaled = _ops.expand_dims(tau[..., i], axis=-1) * v
        result = result - _ops.expand_dims(scaled, axis=-1) * projected
    return result


def _householder_qr(q: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK's ``geqrf`` of a real tall ``q`` (PyTorch's ``torch.geqrf``): R on and above
    the diagonal, the Householder vectors (their leading 1 implied) below it, and ``tau``."""
    k = q.shape[-1]
    packed = q.clone()
    taus = []
    for j in range(k):
        alpha = packed[..., j, j]
        below = packed[..., j + 1 :, j]
        norm_below = _ops.sqrt(_ops.sum(below * below, axis=-1))
        reflects = norm_below != 0
        # dlarfg: beta = -sign(alpha) |(alpha, below)|, tau = (beta - alpha) / beta and
        # v = below / (alpha - beta); no reflection (tau = 0) where below is already 0.
        beta = -_ops.where(alpha >= 0, 1.0, -1.0) * _ops.sqrt(alpha * alpha + norm_below**2)
        tau = _ops.where(reflects, (beta - alpha) / _ops.where(reflects, beta, 1.0), 0.0)
        scale = _ops.where(reflects, 1.0 / _ops.where(reflects, alpha - beta, 1.0), 0.0)
        tail = below * _ops.expand_dims(scale, axis=-1)
        v = _ops.concat([ones_like(alpha)[..., None], tail], axis=-1)  # (..., n - j)
        rest = packed[..., j:, j + 1 :]
        if k > j + 1:
            projected = _ops.matmul(_ops.expand_dims(v, axis=-2), rest)
            packed[..., j:, j + 1 :] = rest - (
                _ops.expand_dims(_ops.expand_dims(tau, axis=-1) * v, axis=-1) * projected
            )
        packed[..., j, j] = _ops.where(reflects, beta, alpha)
        packed[..., j + 1 :, j] = tail
        taus.append(tau)
    return packed, _ops.stack(taus, axis=-1)


class _Orthogonal(Module):
    """A matrix (or batch of them) with orthonormal columns (rows, if wide) made from an
    unconstrained one by ``matrix_exp``, ``cayley`` or ``householder``; with the
    trivialization, the result multiplies the buffer ``base`` (the weight last assigned)."""

    base: Tensor

    def __init__(self, weight: Tensor, orthogonal_map: str, *, use_trivialization: bool = True):
        super().__init__()
        if weight.dtype.kind == "complex floating" and orthogonal_map == "householder":
            raise InvalidArgumentError(
                "orthogonal(): the householder map takes real weights, got a "
                f"{weight.dtype.name} one; use orthogonal_map='matrix_exp' or 'cayley'"
            )
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            # The lower triangle, as the first k columns of an n x n matrix, gives the
            # skew-symmetric (skew-Hermitian) A: n k - k (k - 1) / 2 free numbers.
            X = _ops.tril(X)
            if n != k:
                padding = zeros((*X.shape[:-1], n - k), dtype=X.dtype, device=X.device)
                X = _ops.concat([X, padding], axis=-1)
            A = X - X.mH
            if self.orthogonal_map == "matrix_exp":
                Q = _linalg.matrix_exp(A)
            else:  # (I + A/2)(I - A/2)^-1, the same as (I - A/2)^-1 (I + A/2)
                identity = eye(n, dtype=A.dtype, device=A.device)
                Q = _linalg.solve(identity - A / 2, identity + A / 2)
            if n != k:
                Q = Q[..., :k]
        else:
            vectors = _ops.tril(X, k=-1)
            tau = 2.0 / (1.0 + _ops.sum(vectors * vectors, axis=-2))
            Q = _householder_product(vectors, tau)
            # The diagonal's signs (+-1, as right_inverse leaves them) flip columns; held
            # constant, as PyTorch's (cast to int: truncated, here in X's dtype, which every
            # backend has where int64 is not JAX's), neither differentiated nor moved.
            signs = _ops.trunc(_linalg.diagonal(X).detach())
            Q = Q * _ops.expand_dims(signs, axis=-2)
        if getattr(self, "base", None) is not None:
            Q = _ops.matmul(self.base, Q)
        return Q.mT if transposed else Q

    @no_grad()
    def right_inverse(self, Q: Tensor) -> Tensor:
        if Q.shape != self.shape:
            raise ShapeError(
                f"orthogonal(): the weight has shape {self.shape}; it cannot be set to a "
                f"tensor of shape {Q.shape}"
            )
        given = Q
        n, k = Q.shape[-2], Q.shape[-1]
        transposed = n < k
        if transposed:
            Q = Q.mT
            n, k = k, n
        if "base" not in self._buffers:
            if self.orthogonal_map != "householder":
                raise NotSupportedError(
                    f"orthogonal(): a weight parametrized by {self.orthogonal_map} without "
                    "the trivialization cannot be assigned (the map has no inverse to set "
                    "its original from); register it with use_trivialization=True, or "
                    "assign to parametrizations.<name>.original"
                )
            # The original whose Householder reflections give Q: its QR's vectors, and on
            # the diagonal R's signs (flipped where no reflection was taken, tau = 0).
            A, tau = _householder_qr(Q)
            signs = _ops.where(_linalg.diagonal(A) < 0, -1.0, 1.0)
            signs = _ops.where(tau == 0, -signs, signs)
            rows = arange(k, device=A.device)
            A[..., rows, rows] = signs
            return A.mT if transposed else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:  # completed to an n x n orthogonal matrix by random columns, as PyTorch's
            extra = randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(_ops.concat([Q, extra], axis=-1))
        self.base = Q
        # The original is -I: every map gives I (householder from its -1 diagonal), so the
        # weight is the base, the assigned one made orthogonal.
        # (made by broadcasting, not by writing into zeros: Dask's item assignment of a
        # complex array raised a ComplexWarning)
        n_rows, n_columns = given.shape[-2:]
        return zeros_like(given) - eye(n_rows, n_columns, dtype=given.dtype, device=given.device)


def orthogonal(
    module: Module,
    name: str = "weight",
    orthogonal_map: str | None = None,
    *,
    use_trivialization: bool = True,
) -> Module:
    """Keep ``module.<name>`` (a matrix, or a batch of them) orthogonal, or unitary for a
    complex one, as PyTorch's ``torch.nn.utils.parametrizations.orthogonal``.

    The weight is computed from an unconstrained original by ``orthogonal_map``:
    ``"matrix_exp"`` (the exponential of a skew-symmetric matrix), ``"cayley"``
    (``(I + A/2)(I - A/2)^-1``) or ``"householder"`` (a product of reflections,
    real weights only). The default is ``"matrix_exp"`` for a square or complex
    weight and ``"householder"`` otherwise. A wide weight has orthonormal rows, a
    tall one orthonormal columns. With ``use_trivialization`` (the default) the
    map's result multiplies the buffer ``parametrizations.<name>.0.base``: at
    registration, and when the weight is assigned, the base is that weight made
    orthogonal (its QR's Q, completed by random columns when it is not square)
    and the original is set to give the identity, so the weight is the base.
    Without it the original is the weight itself, and only a ``"householder"``
    weight can be assigned.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils.parametrizations import orthogonal
    >>> layer = orthogonal(plugrad.nn.Linear(3, 3))
    >>> w = layer.weight
    >>> bool(plugrad.allclose(w @ w.T, plugrad.eye(3), atol=1e-5))
    True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise InvalidArgumentError(
            f"orthogonal(): {type(module).__name__} has no parameter or buffer named {name!r}"
        )
    if weight.ndim < 2:
        raise ShapeError(
            f"orthogonal(): {name!r} has {weight.ndim} dimension(s); it takes a matrix or a "
            "batch of matrices"
        )
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        complex_weight = weight.dtype.kind == "complex floating"
        orthogonal_map = "matrix_exp" if square or complex_weight else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise InvalidArgumentError(
            "orthogonal(): orthogonal_map must be 'matrix_exp', 'cayley' or 'householder', "
            f"got {orthogonal_map!r}"
        )
    trivialized = checked_bool("use_trivialization", use_trivialization)
    parametrization = _Orthogonal(weight, orthogonal_map, use_trivialization=trivialized)
    register_parametrization(module, name, parametrization, unsafe=True)
    return module
