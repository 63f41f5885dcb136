"""Datasets, samplers and the loader that batches them, with PyTorch's names.

Examples
--------
>>> import plugrad
>>> from plugrad.utils.data import DataLoader, TensorDataset
>>> data = TensorDataset(plugrad.arange(6.0), plugrad.arange(6))
>>> [tuple(x.shape) for x, y in DataLoader(data, batch_size=4)]
[(4,), (2,)]
"""

from __future__ import annotations

from .dataloader import DataLoader, WorkerInfo, default_collate, default_convert, get_worker_info
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .sampler import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
