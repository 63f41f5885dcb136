"""The loader: samples fetched in a sampler's order and collated into batches."""

from __future__ import annotations

import collections
import collections.abc
import concurrent.futures
import contextlib
import copy
import multiprocessing
import numbers
import pickle
import queue
import random
import sys
import time
import traceback
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NoReturn

from ... import dtypes as _dtypes
from ... import registry
from ...errors import (
    ArgumentError,
    DataLoaderWorkerError,
    InvalidArgumentError,
    SerializationError,
)
from ...random import Generator, manual_seed, randint
from ...tensor import Tensor
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, checked_generator

__all__ = ["DataLoader", "WorkerInfo", "default_collate", "default_convert", "get_worker_info"]


def default_collate(batch: Sequence[Any]) -> Any:
    """Stack a list of samples into one batch, keeping the samples' structure.

    Tensors are stacked along a new first dimension; Python numbers become a
    tensor in the dtype the whole batch infers (Python floats in ``float64``, as
    PyTorch's, or ``float32`` on a backend without it: JAX without x64); arrays
    of other libraries (NumPy's, PyTorch's, JAX's...) are converted and stacked,
    those of any number of dimensions alike; tuples,
    lists, named tuples and dicts are collated field by field (tuples and lists
    into a list, as PyTorch's); strings stay a list (a tuple where they are a
    field of the samples, as PyTorch's).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.utils.data import default_collate
    >>> batch = default_collate([{"x": plugrad.zeros(2), "y": 1}, {"x": plugrad.ones(2), "y": 0}])
    >>> batch["x"].shape, batch["y"]
    ((2, 2), tensor([1, 0]))
    """
    from ... import creation, ops, placement

    if len(batch) == 0:
        raise InvalidArgumentError("default_collate got an empty batch")
    first = batch[0]
    if isinstance(first, Tensor):
        for position, sample in enumerate(batch):
            if not isinstance(sample, Tensor):
                raise ArgumentError(
                    f"default_collate: sample 0 is a Tensor but sample {position} is a "
                    f"{type(sample).__name__}; every sample of a batch must have one structure"
                )
        shapes = {tuple(sample.shape) for sample in batch}
        if len(shapes) != 1:
            raise InvalidArgumentError(
                f"cannot stack samples of different shapes {sorted(shapes)} into one batch; "
                "pad them to one shape in the dataset or pass a collate_fn"
            )
        return ops.stack(list(batch))
    if isinstance(first, (str, bytes)):
        return batch if isinstance(batch, tuple) else list(batch)  # a column stays a tuple
    if isinstance(first, float):
        # Python floats are double precision; the batch keeps them so (PyTorch's rule),
        # where the backend has float64 (JAX without x64 makes them float32, as it does).
        device = placement.default_device()
        wide = _dtypes.float64 if _dtypes.float64 in device.dtypes else _dtypes.float32
        return creation.asarray(list(batch), dtype=wide, device=device)
    if _is_array(first):
        # Converted one by one, each keeping its dtype (a 0-d float64 array was made
        # float32), then stacked as tensors: of any number of dimensions, from any library.
        return default_collate([creation.asarray(sample) for sample in batch])
    if isinstance(first, numbers.Number):
        # The dtype of the whole batch, as torch.tensor() infers it ([1, 2.5] is float32,
        # [True, 2] int64, NumPy float32 scalars float32): not the first sample's type.
        return creation.asarray(list(batch))
    if isinstance(first, Mapping):
        return _same_mapping(
            first, {key: default_collate([sample[key] for sample in batch]) for key in first}
        )
    if isinstance(first, tuple) and hasattr(first, "_fields"):  # a named tuple
        return type(first)(*(default_collate(column) for column in zip(*batch)))
    if isinstance(first, collections.abc.Sequence):
        lengths = {len(sample) for sample in batch}
        if len(lengths) != 1:
            raise InvalidArgumentError(
                "every sample in a batch must have the same number of fields, got "
                f"{sorted(lengths)}"
            )
        # A list of tuples, as PyTorch's (the batch is a new sequence, not a sample); each
        # column a tuple, as zip makes it (a column of strings stays one).
        columns = [default_collate(column) for column in zip(*batch)]
        if isinstance(first, tuple):
            return columns
        try:  # other sequences keep their type (and a list subclass its attributes), as PyTorch's
            if isinstance(first, collections.abc.MutableSequence):
                batched = copy.copy(first)
                for index, column in enumerate(columns):
                    batched[index] = column
                return batched
            return type(first)(columns)  # type: ignore[call-arg]
        except TypeError:  # a type made otherwise (range): a list
            return columns
    raise ArgumentError(
        f"default_collate cannot batch samples of type {type(first).__name__}; it handles "
        "tensors, arrays, numbers, strings, and tuples, lists and dicts of them "
        "(pass collate_fn= for anything else)"
    )


def default_convert(data: Any) -> Any:
    """Convert one sample as a DataLoader without batching does (``batch_size=None``).

    NumPy arrays (not of strings) and NumPy numbers become tensors sharing
    their memory; mappings, named tuples and lists are converted item by item,
    tuples into lists (as PyTorch's); anything else stays as it is.

    Examples
    --------
    >>> import numpy as np
    >>> from plugrad.utils.data import default_convert
    >>> default_convert({"x": (np.zeros(2), "a")})
    {'x': [tensor([0., 0.], dtype=plugrad.float64), 'a']}
    """
    from ... import creation

    kind = type(data)
    if kind.__module__ == "numpy" and kind.__name__ not in ("str_", "bytes_"):
        if kind.__name__ == "ndarray" and data.dtype.kind in "OSUV":
            return data  # strings or objects: no tensor holds them
        return creation.asarray(data)
    if isinstance(data, Mapping):
        return _same_mapping(data, {key: default_convert(value) for key, value in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a named tuple
        return kind(*(default_convert(item) for item in data))
    if isinstance(data, tuple):
        return [default_convert(item) for item in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        converted = [default_convert(item) for item in data]
        try:
            return kind(converted)
        except TypeError:
            return converted
    return data


def _same_mapping(original: Mapping[Any, Any], values: dict[Any, Any]) -> Any:
    """``values`` in a mapping of ``original``'s type (a defaultdict keeps its factory)."""
    try:
        clone = copy.copy(original)
        clone.update(values)  # type: ignore[attr-defined]
        return clone
    except (AttributeError, TypeError):
        return dict(values)


def _is_array(value: Any) -> bool:
    """Whether ``value`` is another library's array or a NumPy-like scalar, not a tensor:
    it has a shape and a dtype (a PyTorch tensor, which has neither of the protocols
    below), or speaks the Array API or NumPy's array interface."""
    return not isinstance(value, Tensor) and (
        (hasattr(value, "shape") and hasattr(value, "dtype"))
        or hasattr(value, "__array_namespace__")
        or hasattr(value, "__array_interface__")
    )


class DataLoader:
    """Iterate over a dataset in batches.

    Parameters
    ----------
    dataset : Dataset
        Anything with ``__len__`` and ``__getitem__``, or an
        :class:`IterableDataset`, whose stream is batched as it comes (it takes no
        ``sampler``, ``batch_sampler`` or ``shuffle``; each worker iterates its
        own copy, which :func:`get_worker_info` lets it shard, and their batches
        arrive in turn, worker 0 first).
    batch_size : int or None
        Samples per batch (``None``: samples one by one, not collated).
    shuffle : bool
        A new random order every pass (drawn from ``generator``).
    sampler : iterable of int, optional
        The order of indices (excludes ``shuffle``).
    batch_sampler : iterable of list of int, optional
        Yields whole batches of indices (excludes ``batch_size``, ``shuffle``,
        ``sampler`` and ``drop_last``).
    num_workers : int
        ``0``: samples are loaded in this process. More: that many worker
        processes load and collate whole batches, which arrive in order
        (tensors travel through plugrad's pickling). The dataset, ``collate_fn``
        and ``worker_init_fn`` are sent to each worker, so they must be
        picklable (defined at a module's top level); with the ``"spawn"`` start
        method the main script needs an ``if __name__ == "__main__":`` guard.
    collate_fn : callable, optional
        Turns a list of samples into a batch (default: :func:`default_collate`).
    drop_last : bool
        Drop the last batch when it is smaller than ``batch_size``.
    generator : Generator, optional
        The random stream for ``shuffle``, and for the workers' seeds.
    worker_init_fn : callable, optional
        Called as ``worker_init_fn(worker_id)`` in each worker process when it
        starts, after plugrad's default generator and Python's :mod:`random`
        there are seeded with ``base_seed + worker_id`` and NumPy's global
        generator from both (a new ``base_seed`` every pass, drawn from
        ``generator``), as in PyTorch: draws in a dataset differ between workers
        and passes, and repeat from run to run after :func:`plugrad.manual_seed`.
    multiprocessing_context : str or context, optional
        How workers start (``"spawn"``, ``"fork"``, ``"forkserver"``, or a
        :mod:`multiprocessing` context); default: the platform's, except that
        where it is ``fork`` and a library that a forked process would hang on
        runs in this one (JAX, once it has computed anything: see
        :meth:`plugrad.backend.Backend.survives_fork`), workers start with
        ``"spawn"``, as PyTorch's do on macOS. Spawned workers receive the
        dataset, ``collate_fn`` and ``worker_init_fn`` pickled, and a
        :class:`~plugrad.errors.SerializationError` says which cannot be;
        ``multiprocessing_context="fork"`` forks all the same (at your own risk).
    prefetch_factor : int, optional
        Batches each worker has in hand ahead of the one being used (default
        2); only with ``num_workers > 0``, as in PyTorch.
    persistent_workers : bool
        Keep the worker processes (and the datasets they hold) from one pass
        over the data to the next instead of starting them anew every pass;
        only with ``num_workers > 0``. They are seeded once, when they start,
        and stop when the loader is garbage-collected.
    pin_memory : bool
        Accepted for PyTorch code and does nothing: page-locked host memory
        speeds copies to a CUDA device, and plugrad's CPU backends have no such
        memory (move a batch with ``batch.to("cuda")`` when it is needed there).
    timeout : float
        With ``num_workers > 0``, how many seconds to wait for a batch before
        raising ``RuntimeError`` (``0``: wait as long as it takes).
    pin_memory_device : str
        Accepted with ``pin_memory`` for PyTorch code; does nothing either.
    in_order : bool
        Accepted for PyTorch code: batches always come in the sampler's order
        (``False`` lets PyTorch's hand out a faster worker's batch first).

    The options that make the batches (``dataset``, ``batch_size``, ``sampler``,
    ``batch_sampler``, ``drop_last``, ``persistent_workers``) cannot be changed
    afterwards (``ValueError``, as in PyTorch): make a new loader. ``iter(loader)``
    has the loader's ``len()``.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.utils.data import DataLoader, TensorDataset
    >>> data = TensorDataset(plugrad.arange(10.0).reshape(5, 2), plugrad.arange(5))
    >>> loader = DataLoader(data, batch_size=2, shuffle=True, generator=plugrad.Generator(seed=0))
    >>> len(loader), sorted(int(i) for _, y in loader for i in y.tolist())
    (3, [0, 1, 2, 3, 4])
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool = False,
        sampler: Iterable[int] | None = None,
        batch_sampler: Iterable[list[int]] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        drop_last: bool = False,
        generator: Generator | None = None,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: str | Any = None,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory: bool = False,
        timeout: float = 0,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
            raise InvalidArgumentError(
                f"num_workers must be an int of at least 0, got {num_workers!r}"
            )
        if num_workers == 0 and (prefetch_factor is not None or persistent_workers):
            option = "prefetch_factor" if prefetch_factor is not None else "persistent_workers"
            raise InvalidArgumentError(
                f"{option} applies to worker processes only, and num_workers is 0; give "
                f"num_workers > 0, or leave {option} out"
            )
        if prefetch_factor is None and num_workers > 0:
            prefetch_factor = 2  # (PyTorch's: None without workers)
        if num_workers > 0 and (
            not isinstance(prefetch_factor, int)
            or isinstance(prefetch_factor, bool)
            or prefetch_factor < 1
        ):
            raise InvalidArgumentError(
                f"prefetch_factor must be an int of at least 1, got {prefetch_factor!r}"
            )
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
            raise InvalidArgumentError(
                f"timeout must be a non-negative number of seconds, got {timeout!r}"
            )
        if isinstance(multiprocessing_context, str):
            multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            given = [name for name, value in (("shuffle", shuffle), ("sampler", sampler),
                     ("batch_sampler", batch_sampler)) if value]  # fmt: skip
            if given:
                raise InvalidArgumentError(
                    f"DataLoader of an IterableDataset takes no {given[0]}: the stream's own "
                    "order is the order (shuffle inside the dataset's __iter__)"
                )
            if persistent_workers:
                raise InvalidArgumentError(
                    "persistent_workers=True is not supported with an IterableDataset; leave "
                    "it out (the workers start anew every pass)"
                )
        if sampler is not None and shuffle:
            raise InvalidArgumentError(
                "shuffle=True and sampler= exclude each other; shuffle in the sampler"
            )
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise InvalidArgumentError(
                    "batch_sampler= excludes batch_size, shuffle, sampler and drop_last"
                )
            batch_size = None
        elif batch_size is not None:
            if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
                raise InvalidArgumentError(
                    f"batch_size must be a positive int or None, got {batch_size!r}"
                )
        elif drop_last:
            raise InvalidArgumentError("drop_last=True needs a batch_size")
        if sampler is None and not iterable:
            sampler = (
                RandomSampler(dataset, generator=generator)
                if shuffle
                else SequentialSampler(dataset)
            )
        if batch_sampler is None and batch_size is not None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)  # type: ignore[arg-type]
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler: Iterable[int] | Sampler | None = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.generator = checked_generator(generator)
        batched = batch_size is not None or batch_sampler is not None
        # As PyTorch: without batching, collate_fn (by default default_convert) takes each
        # sample on its own.
        self.collate_fn = collate_fn or (default_collate if batched else default_convert)
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        # Batches always come in the sampler's order: in_order=False (which lets PyTorch's
        # hand out a batch of a faster worker first) is taken and changes nothing.
        self.in_order = in_order
        self._pool: list[concurrent.futures.ProcessPoolExecutor] | None = None
        self._initialized = True

    #: What the batches were made from: set once, as PyTorch's (a new value would be read by
    #: part of the loader only).
    _FIXED = frozenset({"batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                        "persistent_workers"})  # fmt: skip

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._FIXED and self.__dict__.get("_initialized"):
            raise InvalidArgumentError(
                f"{name} attribute should not be set after DataLoader is initialized; make a "
                "new DataLoader with it"
            )
        super().__setattr__(name, value)

    def __iter__(self) -> Iterator[Any]:
        # The workers' seed is drawn at every pass, with workers or without, before the
        # sampler draws (PyTorch's order): the data's order does not depend on num_workers.
        base_seed = _base_seed(self.generator)
        if isinstance(self.dataset, IterableDataset):
            if self.num_workers:
                batches = self._stream_from_workers(base_seed)
            else:
                batches = _batched(iter(self.dataset), self.batch_size, self.drop_last,
                                   self.collate_fn)  # fmt: skip
        elif self.num_workers:
            batches = self._from_workers(base_seed)
        else:
            batches = self._here()
        return _Batches(batches, self)

    def _stream_from_workers(self, base_seed: int) -> Iterator[Any]:
        """Batches of an iterable dataset from one process per worker, taken in turn."""
        context, hanging = self._worker_context()
        batching = (self.batch_size, self.drop_last, self.collate_fn)
        ahead = self.prefetch_factor or 2  # (never None with workers)
        channels = [context.Queue(maxsize=ahead) for _ in range(self.num_workers)]
        workers = [
            context.Process(
                target=_stream_worker,
                args=(
                    self.dataset,
                    batching,
                    self.worker_init_fn,
                    base_seed,
                    worker_id,
                    self.num_workers,
                    channel,
                ),
                daemon=True,
            )
            for worker_id, channel in enumerate(channels)
        ]
        try:
            for worker in workers:
                with _sending_to_workers(context, hanging):
                    worker.start()
            active = list(range(self.num_workers))
            while active:
                for worker_id in list(active):
                    kind, item = self._receive(channels[worker_id], workers[worker_id], worker_id)
                    if kind == "done":
                        active.remove(worker_id)
                    elif kind == "error":
                        error, text = item
                        _raise_from_worker(error, text, worker_id)
                    else:
                        yield item
        finally:
            for worker in workers:
                if worker.pid is None:  # never started
                    continue
                if worker.is_alive():
                    worker.terminate()
                worker.join()

    def _receive(self, channel: Any, worker: Any, worker_id: int) -> tuple[str, Any]:
        """The next message of a streaming worker; an error if it died or ``timeout`` passed
        (a worker killed, or ended by ``os._exit``, sends nothing: waiting would hang)."""
        deadline = time.monotonic() + self.timeout if self.timeout else None
        while True:
            wait = 0.1 if deadline is None else max(0.0, min(0.1, deadline - time.monotonic()))
            try:
                return channel.get(timeout=wait)
            except queue.Empty:
                pass
            if not worker.is_alive():
                try:  # what it sent just before it ended may still be on its way
                    return channel.get(timeout=0.5)
                except queue.Empty:
                    raise DataLoaderWorkerError(
                        f"DataLoader worker {worker_id} (pid {worker.pid}) exited unexpectedly "
                        f"with exit code {worker.exitcode}"
                    ) from None
            if deadline is not None and time.monotonic() >= deadline:
                raise self._timed_out()

    def _here(self) -> Iterator[Any]:
        dataset = self.dataset
        if self.batch_sampler is None:
            assert self.sampler is not None  # a map-style dataset always has one
            convert = self.collate_fn
            for index in self.sampler:
                yield convert(dataset[index])
            return
        for indices in self.batch_sampler:
            yield self.collate_fn(_fetch(dataset, indices))

    def _worker_context(self) -> tuple[Any, list[str]]:
        """The multiprocessing context workers start with, and the backends that made it
        ``spawn`` in place of the platform's ``fork`` (none where it was given)."""
        if self.multiprocessing_context is not None:
            return self.multiprocessing_context, []
        context = multiprocessing.get_context()
        if context.get_start_method() != "fork":
            return context, []
        hanging = [
            name
            for name in registry.backend_names()
            if not registry.get_backend(name).survives_fork()
        ]
        return (multiprocessing.get_context("spawn") if hanging else context), hanging

    def _start_pool(
        self, base_seed: int, context: Any
    ) -> list[concurrent.futures.ProcessPoolExecutor]:
        """``num_workers`` processes, each seeded and holding the dataset: one executor each,
        so that batch ``i`` is always loaded by worker ``i % num_workers``, as PyTorch's
        (random draws in the dataset then repeat from run to run)."""
        batched = self.batch_sampler is not None
        return [
            concurrent.futures.ProcessPoolExecutor(
                1,
                mp_context=context,
                initializer=_start_worker,
                initargs=(
                    self.dataset,
                    (self.collate_fn, batched),
                    self.worker_init_fn,
                    base_seed,
                    worker_id,
                    self.num_workers,
                ),
            )
            for worker_id in range(self.num_workers)
        ]

    def _from_workers(self, base_seed: int) -> Iterator[Any]:
        """Batches loaded by ``num_workers`` processes in turn, in the sampler's order."""
        pools = self._pool
        context, hanging = self._worker_context()
        if pools is None:
            pools = self._start_pool(base_seed, context)
            if self.persistent_workers:
                self._pool = pools
                for pool in pools:
                    weakref.finalize(self, pool.shutdown, wait=True, cancel_futures=True)
        batched = self.batch_sampler is not None
        jobs = iter(self.batch_sampler if batched else self.sampler)  # type: ignore[arg-type]
        pending: collections.deque[concurrent.futures.Future[Any]] = collections.deque()
        try:
            for number, job in enumerate(jobs):
                try:
                    with _sending_to_workers(context, hanging):  # (a pool starts its worker
                        future = pools[number % len(pools)].submit(_load, job)  # with a job)
                except SerializationError:
                    if self._pool is pools:  # no worker started: the next pass tries anew
                        self._pool = None
                    raise
                pending.append(future)
                if len(pending) >= self.num_workers * (self.prefetch_factor or 2):
                    yield self._next_result(pending, context)
            while pending:
                yield self._next_result(pending, context)
        except DataLoaderWorkerError:
            # A worker timed out: the others' jobs are not waited for (shutting
            # down waited for a stuck worker's job, so timeout= raised only when it ended).
            for pool in pools:
                _stop_workers(pool)
            if self._pool is pools:
                self._pool = None
            raise
        finally:
            if self.persistent_workers:
                for future in pending:  # a pass left early: the next one starts afresh
                    future.cancel()
            else:
                for pool in pools:
                    pool.shutdown(wait=True, cancel_futures=True)

    def _next_result(
        self, pending: collections.deque[concurrent.futures.Future[Any]], context: Any
    ) -> Any:
        try:
            return pending.popleft().result(timeout=self.timeout or None)
        except concurrent.futures.TimeoutError:
            raise self._timed_out() from None
        except concurrent.futures.process.BrokenProcessPool as error:
            raise _worker_ended(context.get_start_method()) from error
        except _WorkerFailure as failure:
            _raise_from_worker(*failure.args)

    def _timed_out(self) -> DataLoaderWorkerError:
        return DataLoaderWorkerError(
            f"DataLoader timed out after {self.timeout} seconds waiting for a batch from its "
            "workers; raise timeout= (or give 0 to wait as long as it takes)"
        )

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            # The dataset's own length, in batches, as PyTorch's (a guess: the stream decides).
            samples = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is None:
                return samples
            full, rest = divmod(samples, self.batch_size)
            return full + (1 if rest and not self.drop_last else 0)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)  # type: ignore[arg-type]
        return len(self.sampler)  # type: ignore[arg-type]


class _Batches:
    """One pass over a loader: its batches, and ``len()`` as the loader's, as PyTorch's."""

    __slots__ = ("_batches", "_loader")

    def __init__(self, batches: Iterator[Any], loader: DataLoader) -> None:
        self._batches, self._loader = batches, loader

    def __iter__(self) -> _Batches:
        return self

    def __next__(self) -> Any:
        return next(self._batches)

    def __len__(self) -> int:
        return len(self._loader)

    def close(self) -> None:
        """Stop the pass early (its workers are shut down)."""
        close = getattr(self._batches, "close", None)
        if close is not None:
            close()


def _batched(
    samples: Iterator[Any],
    batch_size: int | None,
    drop_last: bool,
    collate_fn: Callable[[list[Any]], Any],
) -> Iterator[Any]:
    """The batches of a stream of samples (the samples themselves without a batch size)."""
    if batch_size is None:  # each sample on its own (collate_fn is default_convert's place)
        for sample in samples:
            yield collate_fn(sample)
        return
    batch: list[Any] = []
    for sample in samples:
        batch.append(sample)
        if len(batch) == batch_size:
            yield collate_fn(batch)
            batch = []
    if batch and not drop_last:
        yield collate_fn(batch)


class WorkerInfo:
    """What a worker process knows of itself (:func:`get_worker_info`): ``id``,
    ``num_workers``, ``seed`` (its default generator's) and its copy of the ``dataset``."""

    __slots__ = ("dataset", "id", "num_workers", "seed")

    def __init__(self, id: int, num_workers: int, seed: int, dataset: Any) -> None:
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker process, its :class:`WorkerInfo`; ``None`` in the main process.

    An :class:`IterableDataset` reads it in ``__iter__`` to give each worker its
    share of the stream, as in PyTorch.

    Examples
    --------
    >>> from plugrad.utils.data import get_worker_info
    >>> get_worker_info() is None  # not in a worker
    True
    """
    return _worker.get("info")


def _base_seed(generator: Generator | None) -> int:
    """A new 48-bit seed for a pass's workers, in two 24-bit draws: each exact in float32,
    which is what backends without 64-bit types (JAX by default) draw integers from."""
    high, low = (int(randint(0, 2**24, (), generator=generator)) for _ in range(2))
    return high << 24 | low


# -- in a worker process --------------------------------------------------------------------

_worker: dict[str, Any] = {}


def _seed_worker(base_seed: int, worker_id: int) -> None:
    """Seed the worker's random streams, as PyTorch's: plugrad's default generator and
    Python's ``random`` with ``base_seed + worker_id``, NumPy's global one from both (forked
    workers would otherwise all repeat the parent's NumPy and ``random`` draws)."""
    seed = base_seed + worker_id
    manual_seed(seed)
    random.seed(seed)
    # NumPy where the program has it (the core imports no array library itself); one it
    # imports later has not drawn yet, and draws from a fresh seed of its own.
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(numpy.random.SeedSequence([worker_id, base_seed]).generate_state(4))


def _start_worker(
    dataset: Any,
    collate_fn: tuple[Callable[[Any], Any], bool],
    worker_init_fn: Callable[[int], None] | None,
    base_seed: int,
    worker_id: int,
    num_workers: int = 0,
) -> None:
    _worker["failed"] = None
    try:
        _seed_worker(base_seed, worker_id)
        info = WorkerInfo(worker_id, num_workers, base_seed + worker_id, dataset)
        _worker.update(dataset=dataset, collate_fn=collate_fn, info=info)
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
    except Exception as error:
        # Raised here it would break the pool ("terminated abruptly"), its cause lost: kept,
        # and raised in the loader by the worker's first job.
        _worker["failed"] = (_portable(error), traceback.format_exc(), worker_id)


class _WorkerFailure(Exception):
    """What a map-style worker raises for an error of the dataset, the collate function or
    ``worker_init_fn``: ``(error, traceback text, worker id)``, for the loader to raise."""


def _stop_workers(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """End ``pool``'s worker processes now, without waiting for the jobs they run."""
    terminate = getattr(pool, "terminate_workers", None)  # (Python 3.14 has it)
    if terminate is not None:
        terminate()
        return
    # Before 3.14 the executor does not say which processes it runs but in this attribute.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join()


@contextlib.contextmanager
def _sending_to_workers(context: Any, hanging: list[str]) -> Iterator[None]:
    """Starting worker processes of ``context``: a SerializationError saying what to do
    where what they receive cannot be pickled (``hanging``: see DataLoader._worker_context)."""
    method = context.get_start_method()
    try:
        yield
    except (pickle.PicklingError, AttributeError, TypeError) as error:
        if method == "fork":  # (nothing is pickled to start a forked worker)
            raise
        raise _unpicklable(error, method, hanging) from error


def _unpicklable(error: BaseException, method: str, hanging: list[str]) -> SerializationError:
    if hanging:
        why = (
            f"DataLoader workers start with 'spawn' here, not the platform's 'fork', because "
            f"{' and '.join(hanging)} runs threads in this process that a forked worker "
            "would hang on; a spawned worker"
        )
        otherwise = (
            "pass multiprocessing_context='fork' to fork the workers at your own risk (they "
            "may hang)"
        )
    else:
        why = f"a DataLoader worker started with {method!r}"
        otherwise = "where the platform forks, pass multiprocessing_context='fork'"
    return SerializationError(
        f"{why} receives the dataset, collate_fn and worker_init_fn pickled, and one of them "
        f"cannot be pickled ({type(error).__name__}: {error}); define their classes and "
        f"functions at a module's top level (a worker imports them by name), or {otherwise}"
    )


def _worker_ended(method: str) -> DataLoaderWorkerError:
    reason = "it was killed (out of memory, say) or ended the process itself"
    if method != "fork":
        # A worker that is not forked runs the main script's module first: a loader started
        # there outside a __main__ guard ran again in it, and multiprocessing refused.
        reason += (
            f"; a worker started with {method!r} first imports the main script, whose code "
            'outside an `if __name__ == "__main__":` block runs again there (its error is '
            "printed above): put the code that iterates the loader in such a block"
        )
    return DataLoaderWorkerError(
        f"a DataLoader worker process ended abruptly before sending its batch: {reason}"
    )


def _raise_from_worker(error: BaseException, text: str, worker_id: int) -> NoReturn:
    """Raise a worker's own exception, with where it was raised in the worker."""
    raise error from RuntimeError(f"raised in DataLoader worker {worker_id}:\n{text}")


def _portable(error: BaseException) -> BaseException:
    """``error``, or a RuntimeError naming it where it does not survive pickling (an
    exception whose ``__init__`` takes other arguments than it passes on)."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")
    return error


def _stream_worker(
    dataset: Any,
    batching: tuple[int | None, bool, Callable[[list[Any]], Any]],
    worker_init_fn: Callable[[int], None] | None,
    base_seed: int,
    worker_id: int,
    num_workers: int,
    channel: Any,
) -> None:
    """A worker of an iterable dataset: its batches, then ``("done", None)``, into ``channel``."""
    try:
        _seed_worker(base_seed, worker_id)
        _worker["info"] = WorkerInfo(worker_id, num_workers, base_seed + worker_id, dataset)
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        for batch in _batched(iter(dataset), *batching):
            channel.put(("batch", batch))
    except BaseException as error:
        channel.put(("error", (_portable(error), traceback.format_exc())))
    else:
        channel.put(("done", None))


def _load(job: Any) -> Any:
    """One batch (a list of indices, collated) or one sample (an index)."""
    failed = _worker.get("failed")
    if failed is not None:
        raise _WorkerFailure(*failed)
    try:
        dataset, (collate_fn, batched) = _worker["dataset"], _worker["collate_fn"]
        if not batched:
            return collate_fn(dataset[job])
        return collate_fn(_fetch(dataset, job))
    except Exception as error:
        raise _WorkerFailure(_portable(error), traceback.format_exc(), _worker["info"].id) from None


def _fetch(dataset: Any, indices: Sequence[int]) -> list[Any]:
    """The samples at ``indices``: by the dataset's ``__getitems__`` where it has one (a batch
    read at once, as PyTorch's loader asks for it), else one by one."""
    many = getattr(dataset, "__getitems__", None)
    if many is not None:
        return many(list(indices))
    return [dataset[i] for i in indices]
