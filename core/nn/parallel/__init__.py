"""Data-parallel training: :class:`DistributedDataParallel` over :mod:`plugrad.distributed`,
and PyTorch's single-process :class:`DataParallel` (on one device)."""

from __future__ import annotations

from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
