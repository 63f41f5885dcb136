"""Ready-made parametrizations (PyTorch's ``torch.nn.utils.parametrizations``)."""

from __future__ import annotations

from ... import ops as _ops
from ...tensor import Tensor
from ..module import Module
from .parametrize import register_parametrization

__all__ = ["weight_norm"]


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every axis but ``dim``, kept as axes of length 1 (over all of
    them, a 0-d tensor, where ``dim`` is -1), as PyTorch's ``norm_except_dim``."""
    if dim == -1:
        return _ops.sqrt(_ops.sum(v * v))
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
    return module
