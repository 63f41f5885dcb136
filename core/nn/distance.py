"""Distance layers: ``CosineSimilarity`` and ``PairwiseDistance``."""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """Apply :func:`plugrad.nn.functional.cosine_similarity` along ``dim``.

    Examples
    --------
    >>> import plugrad
    >>> cos = plugrad.nn.CosineSimilarity(dim=1)
    >>> cos(plugrad.tensor([[1.0, 0.0]]), plugrad.tensor([[1.0, 1.0]]))
    tensor([0.7071])
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """Apply :func:`plugrad.nn.functional.pairwise_distance`: the ``p``-norm of ``x1 - x2 + eps``.

    Examples
    --------
    >>> import plugrad
    >>> dist = plugrad.nn.PairwiseDistance(p=1.0)
    >>> dist(plugrad.tensor([[0.0, 0.0]]), plugrad.tensor([[3.0, 4.0]]))
    tensor([7.0000])
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
