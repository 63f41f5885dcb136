"""Ready-made parametrizations (PyTorch's ``torch.nn.utils.parametrizations``)."""

from __future__ import annotations

from typing import Any

from ... import ops as _ops
from ...errors import AxisError, InvalidArgumentError
from ...grad_mode import no_grad
from ...random import randn
from ...tensor import Tensor
from .. import functional as F
from ..conv import _ConvTransposeNd
from ..module import Module
from .parametrize import register_parametrization

__all__ = ["spectral_norm", "weight_norm"]


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
