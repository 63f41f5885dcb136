"""Samplers: the order in which a loader visits a dataset's indices."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

from ... import dtypes as _dtypes
from ...creation import asarray, target_device
from ...errors import ArgumentError, DistributedError, InvalidArgumentError
from ...random import Generator, _sampling_device, multinomial, rand, randint
from ...tensor import Tensor

__all__ = [
    "BatchSampler",
    "DistributedSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "permutation",
]


def permutation(n: int, generator: Generator | None = None) -> list[int]:
    """A random order of ``range(n)`` drawn from ``generator`` (default: the default generator)."""
    device, generator = _sampling_device(None, None, generator)
    if n == 0:
        return []
    from ... import ops

    if _dtypes.float64 in device.dtypes:
        keys = rand(n, dtype=_dtypes.float64, generator=generator, device=device)
        return [int(i) for i in ops.argsort(keys).tolist()]
    # Without float64 (JAX by default): two 24-bit keys (what float32 draws exactly), sorted
    # by the second then, stably, by the first, so that ties (which would keep the earlier
    # index first) are rare: about n**2 / 2**49.
    first, second = (randint(0, 2**24, (n,), generator=generator, device=device) for _ in range(2))
    order = ops.argsort(second, stable=True)
    order = ops.take(order, ops.argsort(ops.take(first, order), stable=True))
    return [int(i) for i in order.tolist()]


def random_indices(n: int, count: int, generator: Generator | None = None) -> list[int]:
    """``count`` indices of ``range(n)`` drawn independently and uniformly."""
    device, generator = _sampling_device(None, None, generator)
    return [int(i) for i in randint(0, n, (count,), generator=generator, device=device).tolist()]


def checked_generator(generator: Generator | None) -> Generator | None:
    """``generator`` if it is None or a :class:`~plugrad.Generator`, else the
    :class:`~plugrad.errors.ArgumentError` of every draw: raised where a sampler or loader
    is given it, not at its first pass (a ``torch.Generator``, or a seed, is not one).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.utils.data.sampler import checked_generator
    >>> checked_generator(None) is None
    True
    >>> checked_generator(42)
    Traceback (most recent call last):
        ...
    plugrad.errors.ArgumentError: generator= takes a plugrad.Generator, got int; ...
    """
    if generator is not None:
        _sampling_device(None, None, generator)  # (the check of plugrad.random's draws)
    return generator


def _check_count(name: str, value: Any, *, at_least: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < at_least:
        raise InvalidArgumentError(f"{name} must be an int of at least {at_least}, got {value!r}")
    return value


def _as_int(value: Any) -> Any:
    """A NumPy integer as the int it holds (as PyTorch takes them); anything else as it is."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return value


def _check_int(name: str, value: Any) -> int:
    value = _as_int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be an int, got {value!r}")
    return value


_Index = TypeVar("_Index", covariant=True)


class Sampler(Generic[_Index]):
    """Base class: an iterable of dataset indices (subclasses implement ``__iter__``)."""

    def __iter__(self) -> Iterator[_Index]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``.

    Examples
    --------
    >>> from plugrad.utils.data import SequentialSampler
    >>> list(SequentialSampler("abc"))
    [0, 1, 2]
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """The indices in a random order (a new one each pass), or drawn with replacement.

    Parameters
    ----------
    data_source : sized
        The dataset.
    replacement : bool
        Draw ``num_samples`` indices independently instead of permuting.
    num_samples : int, optional
        How many indices per pass (default: the dataset's length).
    generator : Generator, optional
        The random stream (default: the default generator).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.utils.data import RandomSampler
    >>> sorted(RandomSampler(range(5), generator=plugrad.Generator(seed=1)))
    [0, 1, 2, 3, 4]
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self.generator = checked_generator(generator)
        if not isinstance(replacement, bool):
            raise ArgumentError(f"replacement must be a bool, got {replacement!r}")
        if num_samples is not None:
            _check_count("num_samples", num_samples, at_least=1)
        elif len(data_source) == 0:
            # as PyTorch's: a loader over it would end every epoch at once, without a word
            raise InvalidArgumentError(
                "RandomSampler got an empty dataset: there is nothing to shuffle; check that "
                "the dataset holds samples"
            )
        self._num_samples = num_samples

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        if n == 0:
            if self.num_samples:
                raise InvalidArgumentError("RandomSampler cannot draw from an empty dataset")
            return iter(())
        if self.replacement:
            return iter(random_indices(n, self.num_samples, self.generator))
        # Whole permutations, then part of one, as PyTorch's (num_samples need not be n).
        full, rest = divmod(self.num_samples, n)
        order = [i for _ in range(full) for i in permutation(n, self.generator)]
        return iter(order + permutation(n, self.generator)[:rest])

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a random order, a new one each pass.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.utils.data import SubsetRandomSampler
    >>> sorted(SubsetRandomSampler([4, 7, 9], generator=plugrad.Generator(seed=1)))
    [4, 7, 9]
    """

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = checked_generator(generator)

    def __iter__(self) -> Iterator[int]:
        indices = self.indices
        return iter([indices[i] for i in permutation(len(indices), self.generator)])

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices of ``range(len(weights))``, index ``i`` drawn in proportion to
    ``weights[i]`` (the weights need not sum to 1).

    The usual cure for an imbalanced dataset: give each sample the inverse of its
    class's frequency as its weight.

    Parameters
    ----------
    weights : sequence of float or Tensor
        One non-negative weight per index, finite, not all zero.
    num_samples : int
        How many indices per pass.
    replacement : bool
        Draw independently (default); without replacement an index comes at most
        once, so ``num_samples`` may not exceed the number of non-zero weights.
    generator : Generator, optional
        The random stream (default: the default generator).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.utils.data import WeightedRandomSampler
    >>> sampler = WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 6, generator=plugrad.Generator(0))
    >>> sorted(set(sampler)), len(sampler)
    ([1, 3], 6)
    """

    def __init__(
        self,
        weights: Sequence[float] | Tensor,
        num_samples: int,
        replacement: bool = True,
        generator: Generator | None = None,
    ) -> None:
        _check_count("num_samples", num_samples, at_least=1)
        checked_generator(generator)
        if not isinstance(replacement, bool):
            raise InvalidArgumentError(f"replacement must be a bool, got {replacement!r}")
        if not isinstance(weights, Tensor):
            # float64, as PyTorch's: 1e300 is a weight, and so is 1e-50 beside 1e-60
            wide = _dtypes.float64 in target_device(None, None).dtypes
            weights = asarray(weights, dtype=_dtypes.float64 if wide else None)
        if weights.dtype.kind != "real floating":
            weights = weights.to(_dtypes.default_float_dtype)
        weights = weights.detach()
        if weights.ndim != 1:
            raise InvalidArgumentError(
                f"WeightedRandomSampler takes one weight per index (a 1-D sequence), got shape "
                f"{tuple(weights.shape)}"
            )
        values = weights._array
        xp = weights._device.xp
        if not bool(xp.all(xp.isfinite(values))) or bool(xp.any(values < 0)):
            raise InvalidArgumentError(
                "WeightedRandomSampler: the weights must be finite and non-negative"
            )
        if not bool(xp.any(values > 0)):
            raise InvalidArgumentError(
                "WeightedRandomSampler: every weight is 0; give some index a weight"
            )
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        drawn = multinomial(
            self.weights, self.num_samples, self.replacement, generator=self.generator
        )
        return iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Groups the indices of ``sampler`` into lists of ``batch_size``.

    Examples
    --------
    >>> from plugrad.utils.data import BatchSampler, SequentialSampler
    >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        self.sampler = sampler
        self.batch_size = _check_count("batch_size", batch_size, at_least=1)
        if not isinstance(drop_last, bool):  # (drop_last=2 read as true, unlike PyTorch's)
            raise InvalidArgumentError(f"drop_last must be True or False, got {drop_last!r}")
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class DistributedSampler(Sampler[int]):
    """Each process of a distributed job reads its own share of the dataset.

    Every pass the indices are shuffled the same way on every rank (seeded by
    ``seed + epoch``: call :meth:`set_epoch` before each epoch to reshuffle), made
    divisible by the number of processes (repeating the first indices, or dropping
    the tail with ``drop_last=True``), and rank ``r`` takes every
    ``num_replicas``-th index starting at ``r``.

    Parameters
    ----------
    dataset : sized
        The dataset.
    num_replicas, rank : int, optional
        The number of processes and this one's rank (default: from the initialized
        process group of :mod:`plugrad.distributed`).
    shuffle : bool
        Shuffle every epoch (default) or keep the dataset's order.
    seed : int
        The seed shared by all ranks.
    drop_last : bool
        Drop the tail instead of padding.

    Examples
    --------
    >>> from plugrad.utils.data import DistributedSampler
    >>> list(DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False))
    [1, 3, 0]
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None or rank is None:
            from ... import distributed

            if not distributed.is_initialized():
                raise DistributedError(
                    "DistributedSampler needs num_replicas= and rank=, or an initialized "
                    "process group (plugrad.distributed.init_process_group())"
                )
            num_replicas = distributed.get_world_size() if num_replicas is None else num_replicas
            rank = distributed.get_rank() if rank is None else rank
        num_replicas = _check_count("num_replicas", _as_int(num_replicas), at_least=1)
        if not isinstance(_as_int(rank), int) or not 0 <= rank < num_replicas:
            raise InvalidArgumentError(f"rank must be in [0, {num_replicas - 1}], got {rank!r}")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = int(rank)
        self.shuffle = shuffle
        self.seed = _check_int("seed", seed)
        self.drop_last = drop_last
        self.epoch = 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch`` in the shuffle's seed, so each epoch visits the data in a new order."""
        self.epoch = _check_int("epoch", epoch)

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            # Any int, negative too (as PyTorch's seeds), in the generator's 64-bit range.
            indices = permutation(n, Generator(seed=(self.seed + self.epoch) % 2**64))
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[: self.total_size]
        elif indices:
            padding = self.total_size - len(indices)
            indices += (indices * math.ceil(padding / len(indices)))[:padding]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples
