"""Data-parallel training: :class:`DistributedDataParallel` over :mod:`plugrad.distributed`."""

from __future__ import annotations

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
