"""Datasets: map-style ones (a length and one sample per index) and iterable ones (a stream)."""

from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from ...errors import ArgumentError, IndexOutOfRangeError, InvalidArgumentError
from ...random import Generator
from ...tensor import Tensor
from .sampler import permutation

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]

T = TypeVar("T")


class Dataset(Generic[T]):
    """A map-style dataset: ``dataset[i]`` is the ``i``-th sample, ``len(dataset)`` their number.

    Subclasses implement ``__getitem__`` and ``__len__``. ``a + b`` concatenates two datasets.

    Examples
    --------
    >>> from plugrad.utils.data import Dataset
    >>> class Squares(Dataset):
    ...     def __len__(self):
    ...         return 4
    ...     def __getitem__(self, index):
    ...         return index * index
    >>> [Squares()[i] for i in range(len(Squares()))]
    [0, 1, 4, 9]
    """

    def __getitem__(self, index: int) -> T:
        raise NotImplementedError(
            f"{type(self).__name__} must implement __getitem__(index) to return one sample"
        )

    def __add__(self, other: Dataset[T]) -> ConcatDataset[T]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T]):
    """A dataset that is a stream of samples: ``iter(dataset)`` yields them in order.

    Subclasses implement ``__iter__`` (and ``__len__`` where the number is known).
    A :class:`DataLoader` batches the stream as it comes (no sampler, no
    shuffle); with ``num_workers > 0`` each worker iterates its own copy, so
    ``__iter__`` should give each worker its share, which
    :func:`get_worker_info` tells (``None`` in the main process), as in PyTorch.
    ``a + b`` chains two streams.

    Examples
    --------
    >>> from plugrad.utils.data import DataLoader, IterableDataset
    >>> class Count(IterableDataset):
    ...     def __iter__(self):
    ...         return iter(range(5))
    >>> [batch.tolist() for batch in DataLoader(Count(), batch_size=2)]
    [[0, 1], [2, 3], [4]]
    """

    def __iter__(self) -> Iterator[T]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__()")

    def __getitem__(self, index: int) -> T:
        raise ArgumentError(
            f"{type(self).__name__} is an iterable dataset: iterate over it (it has no "
            "sample per index)"
        )

    def __add__(self, other: Dataset[T]) -> ChainDataset[T]:  # type: ignore[override]
        return ChainDataset([self, other])


class ChainDataset(IterableDataset[T]):
    """The samples of several iterable datasets, one after the other.

    Examples
    --------
    >>> from plugrad.utils.data import ChainDataset, IterableDataset
    >>> class Upto(IterableDataset):
    ...     def __init__(self, n):
    ...         self.n = n
    ...     def __iter__(self):
    ...         return iter(range(self.n))
    >>> list(ChainDataset([Upto(2), Upto(3)]))
    [0, 1, 0, 1, 2]
    """

    def __init__(self, datasets: Iterable[Dataset[T]]) -> None:
        self.datasets: list[IterableDataset[T]] = list(datasets)  # type: ignore[arg-type]
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise ArgumentError(
                    f"ChainDataset chains iterable datasets, got a {type(dataset).__name__}"
                )

    def __iter__(self) -> Iterator[T]:
        for dataset in self.datasets:
            yield from dataset

    def __len__(self) -> int:
        return sum(len(dataset) for dataset in self.datasets)  # type: ignore[arg-type, misc]


class StackDataset(Dataset[Any]):
    """Datasets of one length side by side: sample ``i`` is the tuple of their ``i``-th
    samples (datasets given by position) or the dict of them (given by name).

    Examples
    --------
    >>> from plugrad.utils.data import StackDataset
    >>> StackDataset([1, 2], ["a", "b"])[1], StackDataset(x=[1, 2], y="ab")[0]
    ((2, 'b'), {'x': 1, 'y': 'a'})
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if bool(args) == bool(kwargs):
            raise InvalidArgumentError(
                "StackDataset takes datasets by position or by name: one of the two, not both"
                + ("" if args else " (and at least one)")
            )
        self.datasets: tuple[Any, ...] | dict[str, Any] = args or kwargs
        parts = args or tuple(kwargs.values())
        lengths = {len(part) for part in parts}
        if len(lengths) != 1:
            raise InvalidArgumentError(
                f"StackDataset takes datasets of one length, got lengths {lengths}"
            )
        self._length = lengths.pop()

    def __getitem__(self, index: int) -> Any:
        if isinstance(self.datasets, dict):
            return {name: part[index] for name, part in self.datasets.items()}
        return tuple(part[index] for part in self.datasets)

    def __getitems__(self, indices: list[int]) -> list[Any]:
        """The samples at ``indices``, each dataset read as a batch where it reads batches."""
        datasets = self.datasets
        parts = tuple(datasets.values()) if isinstance(datasets, dict) else datasets
        columns = []
        for part in parts:
            many = getattr(part, "__getitems__", None)
            columns.append(many(indices) if many is not None else [part[i] for i in indices])
        if isinstance(datasets, dict):
            return [dict(zip(datasets, row)) for row in zip(*columns)]
        return list(zip(*columns))

    def __len__(self) -> int:
        return self._length


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Samples are the rows of tensors that share their first dimension.

    Parameters
    ----------
    *tensors : Tensor
        One or more tensors, all with the same length along dimension 0.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.utils.data import TensorDataset
    >>> data = TensorDataset(plugrad.zeros((3, 2)), plugrad.arange(3))
    >>> len(data), data[1][1]
    (3, tensor(1))
    """

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise InvalidArgumentError("TensorDataset needs at least one tensor")
        for position, tensor in enumerate(tensors):
            if not isinstance(tensor, Tensor):
                raise ArgumentError(
                    f"TensorDataset takes Tensors; argument {position} is a "
                    f"{type(tensor).__name__} (wrap it with plugrad.asarray(...))"
                )
            if tensor.ndim == 0:
                raise InvalidArgumentError(
                    f"TensorDataset indexes dimension 0, but argument {position} is a 0-d tensor"
                )
        lengths = [t.shape[0] for t in tensors]
        if len(set(lengths)) != 1:
            raise InvalidArgumentError(
                f"every tensor of a TensorDataset needs the same size in dimension 0, got {lengths}"
            )
        self.tensors = tensors

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset[T]):
    """The samples of ``dataset`` at ``indices``, in that order.

    Examples
    --------
    >>> from plugrad.utils.data import Subset
    >>> part = Subset(["a", "b", "c", "d"], [3, 0])
    >>> len(part), part[0]
    (2, 'd')
    """

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = list(indices)

    def __getitem__(self, index: int | list[int]) -> T:
        if isinstance(index, list):  # PyTorch's: a list of positions, asked of the dataset
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices: list[int]) -> list[T]:
        """The samples at ``indices``, read as a batch where the dataset reads batches."""
        positions = [self.indices[i] for i in indices]
        many = getattr(self.dataset, "__getitems__", None)
        return many(positions) if many is not None else [self.dataset[p] for p in positions]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset[T]):
    """Several datasets one after another.

    Examples
    --------
    >>> from plugrad.utils.data import ConcatDataset
    >>> both = ConcatDataset([[1, 2], [3]])
    >>> len(both), both[2], both[-1]
    (3, 3, 3)
    """

    def __init__(self, datasets: Sequence[Any]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise InvalidArgumentError("ConcatDataset needs at least one dataset")
        for dataset in self.datasets:
            if isinstance(dataset, IterableDataset):
                raise ArgumentError(
                    "ConcatDataset takes map-style datasets (indexed by position), got an "
                    f"IterableDataset ({type(dataset).__name__}); chain streams with ChainDataset"
                )
        self.cumulative_sizes: list[int] = self.cumsum(self.datasets)

    @staticmethod
    def cumsum(sequence: Sequence[Any]) -> list[int]:
        """The running totals of the lengths of ``sequence``'s datasets (PyTorch's)."""
        totals, total = [], 0
        for dataset in sequence:
            total += len(dataset)
            totals.append(total)
        return totals

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> T:
        length = len(self)
        if not -length <= index < length:
            raise IndexOutOfRangeError(
                f"index {index} is out of range for a dataset of length {length}"
            )
        if index < 0:
            index += length
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


def _as_number(length: Any) -> Any:
    if isinstance(length, numbers.Integral) and not isinstance(length, bool):
        return int(length)
    if isinstance(length, numbers.Real) and not isinstance(length, bool):
        return float(length)
    if isinstance(length, Tensor) and length.ndim == 0:
        return length.item()
    return length


def random_split(
    dataset: Any, lengths: Sequence[int | float], generator: Generator | None = None
) -> list[Subset[Any]]:
    """Split ``dataset`` at random into non-overlapping subsets of the given lengths.

    Parameters
    ----------
    dataset : Dataset
        Anything with ``__len__`` and ``__getitem__``.
    lengths : sequence of int or float
        Sizes that add up to ``len(dataset)``, or fractions that add up to 1, ints
        among them as in PyTorch (each ``floor(fraction * len)``, the remainder handed
        out one by one from the first).
    generator : Generator, optional
        The random stream (default: the default generator, seeded by ``manual_seed``).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.utils.data import random_split
    >>> train, test = random_split(range(10), [0.8, 0.2], generator=plugrad.Generator(seed=0))
    >>> len(train), len(test), sorted(list(train) + list(test)) == list(range(10))
    (8, 2, True)
    """
    n = len(dataset)
    # NumPy numbers and 0-d tensors count as the Python numbers they hold, as in PyTorch.
    lengths = [_as_number(x) for x in lengths]
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in lengths)
    # PyTorch's rule: lengths adding up to 1 are fractions, ints among them too ([1, 0]).
    if lengths and numbers and math.isclose(sum(lengths), 1.0) and sum(lengths) <= 1:
        if any(x < 0 for x in lengths):
            raise InvalidArgumentError(f"fractions must not be negative, got {lengths}")
        sizes = [math.floor(n * fraction) for fraction in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
    elif all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in lengths):
        sizes = [int(x) for x in lengths]
        if sum(sizes) != n:
            raise InvalidArgumentError(
                f"the lengths {sizes} add up to {sum(sizes)}, but the dataset has {n} samples; "
                "give sizes that add up to its length, or fractions that add up to 1"
            )
    else:
        raise InvalidArgumentError(
            f"lengths must be non-negative ints adding up to {n} or floats adding up to 1, "
            f"got {lengths}"
        )
    order = permutation(n, generator)
    subsets: list[Subset[Any]] = []
    start = 0
    for size in sizes:
        subsets.append(Subset(dataset, order[start : start + size]))
        start += size
    return subsets
