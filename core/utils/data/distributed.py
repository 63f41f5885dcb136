"""``plugrad.utils.data.distributed``: PyTorch's import path of :class:`DistributedSampler`
(``from torch.utils.data.distributed import DistributedSampler``)."""

from __future__ import annotations

from .sampler import DistributedSampler

__all__ = ["DistributedSampler"]
