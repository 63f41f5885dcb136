"""plugrad.utils.data against torch.utils.data where their behaviour is defined to match."""

from __future__ import annotations

import collections
import multiprocessing
import os
import re
import subprocess
import sys
import time
import warnings
from collections import namedtuple

import numpy as np
import pytest

import plugrad
from plugrad.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    random_split,
)

torch = pytest.importorskip("torch", reason="torch (CPU) is the test oracle for the loader")
torch_data = pytest.importorskip("torch.utils.data")


def _as_numpy(batch):
    if isinstance(batch, (plugrad.Tensor, torch.Tensor)):
        return np.asarray(batch.numpy() if hasattr(batch, "numpy") else batch)
    if isinstance(batch, dict):
        return {k: _as_numpy(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [_as_numpy(v) for v in batch]
    return batch


def _assert_same(ours, theirs):
    ours, theirs = _as_numpy(ours), _as_numpy(theirs)
    if isinstance(theirs, dict):
        assert ours.keys() == theirs.keys()
        for key in theirs:
            _assert_same(ours[key], theirs[key])
    elif isinstance(theirs, list):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_same(a, b)
    else:
        np.testing.assert_array_equal(ours, theirs)
        assert ours.shape == theirs.shape


@pytest.mark.parametrize("batch_size", [1, 3, 4, 10, 11])
@pytest.mark.parametrize("drop_last", [False, True])
def test_sequential_batches_match_torch(batch_size, drop_last):
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    ours = DataLoader(
        TensorDataset(plugrad.asarray(x), plugrad.asarray(y)),
        batch_size=batch_size,
        drop_last=drop_last,
    )
    theirs = torch_data.DataLoader(
        torch_data.TensorDataset(torch.tensor(x), torch.tensor(y)),
        batch_size=batch_size,
        drop_last=drop_last,
    )
    assert len(ours) == len(theirs)
    ours_batches, theirs_batches = list(ours), list(theirs)
    assert len(ours_batches) == len(theirs_batches) == len(ours)
    for a, b in zip(ours_batches, theirs_batches):
        _assert_same(a, b)


class _Samples(Dataset):
    """Samples of mixed structure, the same for both libraries."""

    def __init__(self, make_tensor):
        self.make = make_tensor

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {
            "image": self.make(np.full((2, 3), i, dtype=np.float32)),
            "label": i,
            "pair": (float(i) / 2, self.make(np.array([i, -i]))),
            "name": f"s{i}",
        }


def test_collate_of_dicts_tuples_numbers_and_strings_matches_torch():
    ours = list(DataLoader(_Samples(plugrad.asarray), batch_size=2))
    theirs = list(torch_data.DataLoader(_Samples(torch.tensor), batch_size=2))
    for a, b in zip(ours, theirs):
        assert a["name"] == b["name"]
        _assert_same(a["image"], b["image"])
        _assert_same(a["label"], b["label"])
        _assert_same(list(a["pair"]), list(b["pair"]))
        assert a["label"].dtype == plugrad.int64
        assert a["pair"][0].dtype == plugrad.float64  # Python floats, like torch


def test_collate_keeps_named_tuples_and_lists():
    Point = namedtuple("Point", "x y")
    batch = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(batch, Point)
    assert batch.x.tolist() == [1, 3]
    batch = default_collate([[1, 2], [3, 4]])
    assert isinstance(batch, list) and [c.tolist() for c in batch] == [[1, 3], [2, 4]]


def test_collate_refuses_ragged_tensors_and_unknown_types():
    with pytest.raises(ValueError, match="different shapes"):
        default_collate([plugrad.zeros(2), plugrad.zeros(3)])
    with pytest.raises(TypeError, match="collate_fn"):
        default_collate([object(), object()])


def test_shuffle_is_a_permutation_reproducible_from_the_generator():
    data = TensorDataset(plugrad.arange(50))

    def order(seed):
        loader = DataLoader(data, batch_size=7, shuffle=True, generator=plugrad.Generator(seed))
        return [int(v) for (b,) in loader for v in b.tolist()]

    first = order(3)
    assert sorted(first) == list(range(50))
    assert first != list(range(50))
    assert order(3) == first
    assert order(4) != first


def test_the_order_of_the_data_does_not_depend_on_the_workers():
    # The workers' seed was drawn only where workers started: with num_workers=2 the sampler
    # drew one step later, and the same seed gave another order (PyTorch's: the same).
    data = TensorDataset(plugrad.arange(12))

    def epochs(**options):
        loader = DataLoader(data, batch_size=3, shuffle=True, generator=plugrad.Generator(5),
                            multiprocessing_context="spawn", **options)  # fmt: skip
        return [[b.tolist() for (b,) in loader] for _ in range(2)]

    alone = epochs()
    assert alone[0] != alone[1]
    assert epochs(num_workers=2) == alone
    assert epochs(num_workers=2, persistent_workers=True) == alone


def test_a_new_order_every_pass():
    loader = DataLoader(range(30), batch_size=30, shuffle=True, generator=plugrad.Generator(1))
    assert next(iter(loader)).tolist() != next(iter(loader)).tolist()


def test_batch_size_none_yields_samples_uncollated():
    assert list(DataLoader([10, 20], batch_size=None)) == [10, 20]


def test_custom_collate_and_batch_sampler():
    loader = DataLoader(range(6), batch_sampler=[[0, 5], [1]], collate_fn=list)
    assert list(loader) == [[0, 5], [1]]
    assert len(loader) == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_workers": -1}, "num_workers"),
        ({"num_workers": 1.5}, "num_workers"),
        ({"num_workers": 2, "prefetch_factor": 0}, "prefetch_factor"),
        ({"prefetch_factor": 2}, "num_workers > 0"),
        ({"persistent_workers": True}, "num_workers > 0"),
        ({"num_workers": 2, "timeout": -1}, "timeout"),
        ({"batch_size": 0}, "batch_size"),
        ({"shuffle": True, "sampler": [0]}, "exclude"),
        ({"batch_sampler": [[0]], "batch_size": 4}, "batch_sampler"),
        ({"batch_size": None, "drop_last": True}, "drop_last"),
    ],
)
def test_bad_loader_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DataLoader(range(4), **kwargs)


def test_tensor_dataset_checks_lengths():
    with pytest.raises(ValueError, match=r"\[3, 2\]"):
        TensorDataset(plugrad.zeros(3), plugrad.zeros(2))
    with pytest.raises(TypeError, match="asarray"):
        TensorDataset([1, 2])


def test_subset_and_concat_match_torch():
    ours = ConcatDataset([list("abc"), Subset(list("defg"), [3, 1])])
    theirs = torch_data.ConcatDataset([list("abc"), torch_data.Subset(list("defg"), [3, 1])])
    assert len(ours) == len(theirs) == 5
    assert [ours[i] for i in range(-5, 5)] == [theirs[i] for i in range(-5, 5)]
    with pytest.raises(IndexError):
        ours[5]


def test_concat_of_a_stream_is_a_type_error_naming_chain_dataset():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter([1, 2])

    with pytest.raises(TypeError, match="ChainDataset"):  # it was len() of a stream
        ConcatDataset([[0], Stream()])


@pytest.mark.parametrize(
    "lengths", [[3, 7], [0.3, 0.7], [0.33, 0.33, 0.34], [0.5, 0.5], [1, 0], [0.5, 0.5, 0]]
)
def test_random_split_sizes_match_torch(lengths):
    for n in (10, 11):
        if all(isinstance(x, int) for x in lengths) and sum(lengths) not in (1, n):
            continue
        ours = random_split(range(n), lengths, generator=plugrad.Generator(0))
        with warnings.catch_warnings():  # PyTorch warns of an empty part
            warnings.simplefilter("ignore")
            theirs = torch_data.random_split(range(n), lengths, generator=torch.Generator())
        assert [len(s) for s in ours] == [len(s) for s in theirs]
        assert sorted(i for s in ours for i in s) == list(range(n))


def test_random_split_refuses_bad_lengths():
    with pytest.raises(ValueError, match="add up to 9"):
        random_split(range(10), [4, 5])
    with pytest.raises(ValueError, match="floats adding up to 1"):
        random_split(range(10), [0.5, 0.2])


def test_samplers_match_torch_where_deterministic():
    assert list(SequentialSampler(range(4))) == list(torch_data.SequentialSampler(range(4)))
    for drop_last in (False, True):
        ours = BatchSampler(range(7), 3, drop_last)
        theirs = torch_data.BatchSampler(range(7), 3, drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    with_replacement = list(
        RandomSampler(range(5), replacement=True, num_samples=40, generator=plugrad.Generator(2))
    )
    assert len(with_replacement) == 40 and set(with_replacement) <= set(range(5))


def test_weighted_sampler_draws_indices_in_proportion_to_their_weights():
    weights = [1.0, 0.0, 3.0, 6.0]
    ours = WeightedRandomSampler(weights, 20000, generator=plugrad.Generator(4))
    theirs = torch_data.WeightedRandomSampler(weights, 20000)
    assert len(ours) == len(theirs) == 20000
    drawn = list(ours)
    assert all(type(i) is int for i in drawn)
    np.testing.assert_allclose(
        np.bincount(drawn, minlength=4) / 20000, [0.1, 0, 0.3, 0.6], atol=0.02
    )
    assert list(ours) != drawn  # a new draw each pass
    assert list(WeightedRandomSampler(weights, 6, generator=plugrad.Generator(1))) == list(
        WeightedRandomSampler(plugrad.tensor(weights), 6, generator=plugrad.Generator(1))
    )
    # Integer weights are read as numbers, as PyTorch reads them.
    assert set(WeightedRandomSampler([0, 2, 0], 5)) == {1}
    unique = list(WeightedRandomSampler(weights, 3, replacement=False))
    assert sorted(unique) == [0, 2, 3]
    loader = DataLoader(
        range(100, 104), batch_size=4, sampler=WeightedRandomSampler([0, 0, 0, 1], 8)
    )
    assert [batch.tolist() for batch in loader] == [[103] * 4, [103] * 4]


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([1.0, -1.0], 2), "finite and non-negative"),
        (([1.0, float("nan")], 2), "finite and non-negative"),
        (([0.0, 0.0], 2), "every weight is 0"),
        (([[1.0, 2.0]], 2), "one weight per index"),
        (([1.0, 2.0], 0), "num_samples"),
        (([1.0, 2.0], 2, "yes"), "replacement must be a bool"),
    ],
)
def test_weighted_sampler_refuses_weights_it_cannot_draw_from(args, match):
    with pytest.raises(ValueError, match=match):
        WeightedRandomSampler(*args)


def test_weighted_sampler_without_replacement_needs_enough_non_zero_weights():
    sampler = WeightedRandomSampler([1.0, 0.0, 2.0], 3, replacement=False)
    with pytest.raises(ValueError, match="without replacement"):
        list(sampler)


def test_subset_random_sampler_visits_its_indices_in_a_new_order_each_pass():
    indices = [3, 8, 9, 20, 21, 40]
    sampler = SubsetRandomSampler(indices, generator=plugrad.Generator(3))
    passes = [list(sampler) for _ in range(20)]
    assert all(sorted(p) == indices for p in passes) and len({tuple(p) for p in passes}) > 1
    assert len(sampler) == len(torch_data.SubsetRandomSampler(indices)) == 6
    assert list(SubsetRandomSampler([])) == []


@pytest.mark.parametrize("n", [10, 11, 3])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_shards_like_torch_without_shuffle(n, replicas, drop_last):
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = torch_data.DistributedSampler(
            range(n), replicas, rank, shuffle=False, drop_last=drop_last
        )
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)


def test_distributed_sampler_shards_cover_the_data_and_reshuffle_per_epoch():
    n, replicas = 23, 3
    samplers = [DistributedSampler(range(n), replicas, r, seed=5) for r in range(replicas)]
    epoch0 = [list(s) for s in samplers]
    assert len({len(s) for s in epoch0}) == 1
    assert set().union(*map(set, epoch0)) == set(range(n))
    for s in samplers:
        s.set_epoch(1)
    epoch1 = [list(s) for s in samplers]
    assert epoch1 != epoch0
    assert set().union(*map(set, epoch1)) == set(range(n))
    again = DistributedSampler(range(n), replicas, 0, seed=5)
    again.set_epoch(1)
    assert list(again) == epoch1[0]


def test_distributed_sampler_needs_a_group_or_explicit_ranks():
    with pytest.raises(plugrad.errors.DistributedError, match="init_process_group"):
        DistributedSampler(range(4))
    with pytest.raises(ValueError, match="rank"):
        DistributedSampler(range(4), num_replicas=2, rank=2)


def _worker_module(tmp_path, monkeypatch, name: str, source: str) -> None:
    """Write the module ``name`` for worker processes to import (a spawned worker imports a
    dataset's class by its module's name) and put it on both paths."""
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))


WORKER_MODULE = """
import collections
import multiprocessing
import os
import time

import plugrad


class Squares:
    def __len__(self):
        return 7

    def __getitem__(self, index):
        if index == 99:
            raise KeyError("no sample 99")
        return plugrad.tensor(float(index * index)), int(os.environ["LOADER_WORKER"])


def note_worker(worker_id):
    os.environ["LOADER_WORKER"] = str(worker_id)


class Stream(plugrad.utils.data.IterableDataset):
    # 0..n-1 as float tensors, each worker its contiguous share; n == 99 fails in worker 1.

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __iter__(self):
        info = plugrad.utils.data.get_worker_info()
        if info is None:
            low, high = 0, self.n
        else:
            share = -(-self.n // info.num_workers)
            low, high = info.id * share, min(self.n, (info.id + 1) * share)
            if self.n == 99 and info.id == 1:
                raise KeyError("stream 99 fails in worker 1")
        return iter(plugrad.tensor(float(i)) for i in range(low, high))


class TwoArgumentError(Exception):
    def __init__(self, a, b):
        super().__init__(f"{a}-{b}")


class Failing:
    def __len__(self):
        return 2

    def __getitem__(self, index):
        raise TwoArgumentError("x", "y")


def failing_init(worker_id):
    raise ValueError(f"no setup in worker {worker_id}")


class Pids:
    def __len__(self):
        return 4

    def __getitem__(self, index):
        if index == 3:
            time.sleep(2)  # longer than the timeout a test gives
        return os.getpid()


class Stuck:
    def __len__(self):
        return 2

    def __getitem__(self, index):
        time.sleep(60 if index else 0)  # a worker that hangs
        return index
"""


def test_worker_processes_load_batches_in_order_and_pass_on_errors(tmp_path, monkeypatch):
    # A spawned worker imports the dataset's class by module name: give it a module.
    _worker_module(tmp_path, monkeypatch, "plugrad_loader_worker", WORKER_MODULE)
    from plugrad_loader_worker import Squares, note_worker

    loader = DataLoader(
        Squares(),
        batch_size=3,
        sampler=[0, 1, 2, 3, 4, 5, 6, 99],
        num_workers=2,
        worker_init_fn=note_worker,
        multiprocessing_context="spawn",
    )
    batches = iter(loader)
    first, second = next(batches), next(batches)
    assert first[0].tolist() == [0.0, 1.0, 4.0] and second[0].tolist() == [9.0, 16.0, 25.0]
    assert first[0].dtype is plugrad.float32 and first[1].dtype is plugrad.int64
    assert {int(i) for i in (*first[1].tolist(), *second[1].tolist())} <= {0, 1}
    with pytest.raises(KeyError, match="no sample 99"):
        next(batches)


def test_a_workers_error_reaches_the_loader_with_its_message(tmp_path, monkeypatch):
    # worker_init_fn's error broke the pool ("a process ... terminated abruptly") and one
    # that does not unpickle (an __init__ of two arguments) too: the cause was lost.
    _worker_module(tmp_path, monkeypatch, "plugrad_loader_worker", WORKER_MODULE)
    from plugrad_loader_worker import Failing, Squares, failing_init

    options = dict(batch_size=2, num_workers=1, multiprocessing_context="spawn")
    with pytest.raises(ValueError, match="no setup in worker 0") as raised:
        list(DataLoader(Squares(), worker_init_fn=failing_init, **options))
    assert "raised in DataLoader worker 0" in str(raised.value.__cause__)
    with pytest.raises(RuntimeError, match="TwoArgumentError: x-y"):
        list(DataLoader(Failing(), **options))


def test_persistent_workers_serve_every_pass_and_a_slow_batch_times_out(tmp_path, monkeypatch):
    _worker_module(tmp_path, monkeypatch, "plugrad_loader_worker", WORKER_MODULE)
    from plugrad_loader_worker import Pids

    def options(**extra):
        return dict(
            batch_size=None,
            num_workers=2,
            pin_memory=True,
            multiprocessing_context="spawn",
            **extra,
        )

    loader = DataLoader(Pids(), sampler=[0, 1, 2], **options(persistent_workers=True))
    # Which worker takes which batch is up to the pool; over three passes, new processes per
    # pass would show at least three pids.
    served = set(loader) | set(loader) | set(loader)
    assert len(served) <= 2 and os.getpid() not in served
    fresh = DataLoader(Pids(), sampler=[0, 1, 2], **options())
    assert set(fresh).isdisjoint(set(fresh))  # without persistent_workers, new processes
    slow = DataLoader(Pids(), sampler=[0, 3], **options(timeout=0.5))
    with pytest.raises(RuntimeError, match=r"timed out after 0\.5 seconds"):
        list(slow)


def test_a_timeout_stops_a_stuck_worker_instead_of_waiting_for_it(tmp_path, monkeypatch):
    # The pool's shutdown waited for the stuck job: timeout=0.5 raised after 60 seconds.
    _worker_module(tmp_path, monkeypatch, "plugrad_loader_worker", WORKER_MODULE)
    from plugrad_loader_worker import Stuck

    for persistent in (False, True):
        loader = DataLoader(
            Stuck(), batch_size=None, num_workers=2, timeout=0.5, persistent_workers=persistent,
            multiprocessing_context="spawn",
        )  # fmt: skip
        started = time.monotonic()
        with pytest.raises(plugrad.errors.DataLoaderWorkerError, match="timed out"):
            list(loader)
        assert time.monotonic() - started < 30


def test_workers_forked_after_a_dask_compute_load_their_batches():
    # A forked worker had Dask's thread pool but not its threads: its first compute waited
    # for ever, and the loader with it.
    pytest.importorskip("dask")
    script = """
import plugrad
from plugrad.utils.data import DataLoader, Dataset

class Rows(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return plugrad.full((2,), float(i))

with plugrad.use_backend("dask"):
    before = [b.tolist() for b in DataLoader(Rows(), batch_size=2)]  # computes here
    forked = DataLoader(Rows(), batch_size=2, num_workers=2, multiprocessing_context="fork")
    assert [b.tolist() for b in forked] == before
print("loaded")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "loaded" in done.stdout, done.stderr


def test_default_collate_keeps_numpy_dtypes_and_tuple_columns_as_pytorch() -> None:
    torch_collate = torch_data.default_collate

    batches = {
        "0-d float64 arrays": [np.array(0.1), np.array(0.2)],  # were float32
        "0-d int arrays": [np.array(3), np.array(4)],
        "float32 scalars": [np.float32(0.5), np.float32(1.5)],
        "mixed scalars": [np.float32(1.0), np.float64(2.0)],
    }
    for name, batch in batches.items():
        ours, theirs = default_collate(batch), torch_collate(batch)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], name
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    ours = default_collate([("a", 1), ("b", 2)])
    theirs = torch_collate([("a", 1), ("b", 2)])
    assert type(ours) is type(theirs) is list
    assert ours[0] == theirs[0] == ("a", "b")  # the column of strings stays a tuple


def test_a_subset_takes_a_list_of_positions_as_pytorchs() -> None:
    ours = Subset(TensorDataset(plugrad.arange(10.0)), [5, 0, 2])[[0, 2]]
    theirs = torch_data.Subset(torch_data.TensorDataset(torch.arange(10.0)), [5, 0, 2])[[0, 2]]
    assert [t.tolist() for t in ours] == [t.tolist() for t in theirs] == [[5.0, 2.0]]


class _Count(plugrad.utils.data.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


@pytest.mark.parametrize(("batch_size", "drop_last"), [(3, False), (3, True), (None, False)])
def test_an_iterable_dataset_is_batched_as_it_streams_as_pytorchs(batch_size, drop_last):
    # IterableDataset did not exist; a stream could not be loaded at all.
    from plugrad.utils.data import IterableDataset

    class TorchCount(torch_data.IterableDataset):
        def __iter__(self):
            return iter(range(10))

        def __len__(self):
            return 10

    assert isinstance(_Count(1), IterableDataset)
    ours = DataLoader(_Count(10), batch_size=batch_size, drop_last=drop_last)
    theirs = torch_data.DataLoader(TorchCount(), batch_size=batch_size, drop_last=drop_last)
    assert [np.asarray(_as_numpy(b)).tolist() for b in ours] == [
        np.asarray(_as_numpy(b)).tolist() for b in theirs
    ]
    assert len(ours) == len(theirs)
    assert list(_Count(2) + _Count(3)) == [0, 1, 0, 1, 2]
    assert plugrad.utils.data.get_worker_info() is None
    for bad in ({"shuffle": True}, {"sampler": [0, 1]}, {"batch_sampler": [[0]]}):
        with pytest.raises(ValueError, match="IterableDataset takes no"):
            DataLoader(_Count(3), **bad)
    with pytest.raises(TypeError, match="iterable dataset"):
        _Count(3)[0]


def test_workers_of_an_iterable_dataset_each_stream_their_share_in_turn(tmp_path, monkeypatch):
    _worker_module(tmp_path, monkeypatch, "plugrad_loader_worker", WORKER_MODULE)
    from plugrad_loader_worker import Stream

    def batches(n, **options):
        loader = DataLoader(
            Stream(n), batch_size=3, num_workers=2, multiprocessing_context="spawn", **options
        )
        return [b.tolist() for b in loader]

    # Worker 0 streams 0..4, worker 1 5..9; their batches alternate, as PyTorch's.
    assert batches(10) == [[0.0, 1.0, 2.0], [5.0, 6.0, 7.0], [3.0, 4.0], [8.0, 9.0]]
    assert batches(10, drop_last=True) == [[0.0, 1.0, 2.0], [5.0, 6.0, 7.0]]
    # The worker's own exception, as PyTorch re-raises it (a RuntimeError of its text before)
    with pytest.raises(KeyError, match="stream 99 fails in worker 1") as raised:
        batches(99)
    assert "raised in DataLoader worker 1" in str(raised.value.__cause__)


def test_a_streaming_worker_that_dies_is_an_error_not_a_hang(tmp_path, monkeypatch):
    # Nothing came from a worker ended by os._exit (or killed): the loader waited forever.
    _worker_module(
        tmp_path,
        monkeypatch,
        "plugrad_loader_dying",
        "import os\n"
        "import plugrad\n"
        "class Dying(plugrad.utils.data.IterableDataset):\n"
        "    def __iter__(self):\n"
        "        yield 1\n"
        "        os._exit(3)\n",
    )
    from plugrad_loader_dying import Dying

    loader = DataLoader(Dying(), num_workers=1, multiprocessing_context="spawn")
    with pytest.raises(RuntimeError, match="exited unexpectedly with exit code 3"):
        list(loader)


def _as_torch_prints(value) -> str:
    """``repr(value)`` as PyTorch prints it for the CPU: plugrad's names, no device."""
    return re.sub(r", device='[^']*'", "", repr(value)).replace("plugrad", "torch")


def test_without_batching_each_sample_goes_through_collate_fn_as_in_pytorch() -> None:
    # batch_size=None skipped collate_fn, and left NumPy arrays and tuples as they were.
    torch_data = pytest.importorskip("torch.utils.data")
    ours = list(DataLoader([1, 2, 3], batch_size=None, collate_fn=lambda x: x * 10))
    assert ours == [10, 20, 30]
    samples = [np.zeros(2), (np.float64(1.5), "s"), {"k": np.int32(3)}]
    ours = list(DataLoader(samples, batch_size=None))
    theirs = list(torch_data.DataLoader(samples, batch_size=None))
    assert _as_torch_prints(ours) == repr(theirs)


def test_default_collate_keeps_a_defaultdict_and_default_convert_is_pytorchs() -> None:
    torch_data = pytest.importorskip("torch.utils.data")
    batch = default_collate([collections.defaultdict(int, a=1), collections.defaultdict(int, a=2)])
    assert isinstance(batch, collections.defaultdict) and batch["a"].tolist() == [1, 2]
    sample = {"x": np.zeros(2), "y": (np.float64(1.5), "a"), "z": np.array(["s"])}
    ours, theirs = default_convert(sample), torch_data.default_convert(sample)
    assert _as_torch_prints(ours) == repr(theirs)


DRAWS_MODULE = """
import plugrad
from plugrad.utils.data import Dataset


class Draws(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        return plugrad.rand(()).item()


def times_ten(sample):
    return sample * 10
"""


def test_workers_draw_as_they_did_from_run_to_run_and_convert_each_sample(
    tmp_path, monkeypatch
) -> None:
    # Batches went to whichever worker was free: after the same seed, other numbers. And
    # without batching, the workers skipped collate_fn.
    _worker_module(tmp_path, monkeypatch, "plugrad_loader_draws", DRAWS_MODULE)
    from plugrad_loader_draws import Draws, times_ten

    runs = []
    for _ in range(2):
        plugrad.manual_seed(0)
        loader = DataLoader(Draws(), batch_size=2, num_workers=2, multiprocessing_context="spawn")
        runs.append([batch.tolist() for batch in loader])
    assert runs[0] == runs[1]
    assert len({tuple(batch) for batch in runs[0]}) == 4  # the workers draw different numbers
    loader = DataLoader(
        [1, 2, 3], batch_size=None, collate_fn=times_ten, num_workers=2,
        multiprocessing_context="spawn",
    )  # fmt: skip
    assert list(loader) == [10, 20, 30]


RANDOM_DRAWS_MODULE = """
import random

import numpy as np


class NumpyAndRandomDraws:
    def __len__(self):
        return 4

    def __getitem__(self, index):
        return float(np.random.randint(10**6) * 10**6 + random.randint(0, 10**6 - 1))
"""


def test_workers_seed_numpy_and_random_as_pytorchs(tmp_path, monkeypatch) -> None:
    # Only plugrad's generator was seeded: forked workers all repeated the parent's NumPy and
    # random draws (the same "augmentation" in every worker and pass), spawned ones drew
    # other numbers in every run.
    _worker_module(tmp_path, monkeypatch, "plugrad_loader_numpy_draws", RANDOM_DRAWS_MODULE)
    from plugrad_loader_numpy_draws import NumpyAndRandomDraws

    runs = []
    for _ in range(2):
        plugrad.manual_seed(0)
        loader = DataLoader(NumpyAndRandomDraws(), batch_size=2, num_workers=2,
                            multiprocessing_context="spawn")  # fmt: skip
        runs.append([v for _ in range(2) for batch in loader for v in batch.tolist()])
    assert runs[0] == runs[1]  # reproducible from plugrad's seed
    assert len(set(runs[0])) == 8  # different in every worker and every pass


class _Batched:
    def __len__(self):
        return 3

    def __getitems__(self, indices):
        return [i * 10 for i in indices]

    def __getitem__(self, index):
        raise AssertionError("read one by one")


def test_a_dataset_with_getitems_is_read_a_batch_at_a_time_as_pytorchs() -> None:
    assert [b.tolist() for b in DataLoader(_Batched(), batch_size=2)] == [[0, 10], [20]]
    part = Subset(_Batched(), [2, 0, 1])
    assert part.__getitems__([0, 1]) == [20, 0]
    assert [b.tolist() for b in DataLoader(part, batch_size=2)] == [[20, 0], [10]]
    assert torch_data.Subset([1, 2, 3], [2, 0]).__getitems__([0, 1]) == Subset(
        [1, 2, 3], [2, 0]
    ).__getitems__([0, 1])


def test_random_sampler_takes_any_number_of_samples_without_replacement_as_pytorchs() -> None:
    draws = list(RandomSampler(range(3), num_samples=7, generator=plugrad.Generator(seed=1)))
    assert len(draws) == 7 and sorted(draws[:3]) == sorted(draws[3:6]) == [0, 1, 2]
    assert len(set(draws[6:])) == 1
    assert (
        sorted(RandomSampler(range(5), num_samples=2)) != []
        and len(list(RandomSampler(range(5), num_samples=2))) == 2
    )
    with pytest.raises(ValueError, match="empty dataset"):
        list(RandomSampler([], replacement=True, num_samples=3))
    for replacement in (False, True):  # a loader over it ended every epoch at once
        with pytest.raises(ValueError, match="empty dataset"):
            RandomSampler([], replacement=replacement)
        with pytest.raises(ValueError, match="num_samples"):
            torch_data.RandomSampler([], replacement=replacement)
    with pytest.raises(TypeError, match="replacement must be a bool"):
        RandomSampler(range(3), replacement="yes")


def test_shuffling_works_on_a_backend_without_float64() -> None:
    # JAX without 64-bit types: permutations drew float64 keys and workers' seeds int64
    # numbers, and DataLoader(shuffle=True), random_split and the samplers raised. (The test
    # session turns JAX's 64-bit types on: a process of its own without them.)
    pytest.importorskip("jax")
    program = """
import plugrad
from plugrad.utils.data import DataLoader, RandomSampler, random_split
assert plugrad.float64 not in plugrad.default_device().dtypes
loader = DataLoader(list(range(6)), shuffle=True, generator=plugrad.Generator(seed=2))
assert sorted(x.item() for x in loader) == list(range(6))
assert [len(s) for s in random_split(range(10), [0.3, 0.7])] == [3, 7]
draws = list(RandomSampler(range(5), replacement=True, num_samples=50))
assert set(draws) <= set(range(5)) and len(set(draws)) > 1
orders = {tuple(plugrad.utils.data.sampler.permutation(3)) for _ in range(60)}
assert len(orders) == 6, orders
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env["PLUGRAD_BACKEND"] = "jax"
    run = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert run.stdout.strip() == "ok", run.stderr[-2000:]


def test_lengths_seeds_ranks_and_weights_of_numpy_and_extreme_kinds_are_taken_as_pytorchs():
    # random_split refused NumPy numbers and tensors as lengths; DistributedSampler a
    # negative seed or epoch and a NumPy rank; WeightedRandomSampler made weights float32,
    # where 1e300 is inf ("not finite") and 1e-50 beside 1e-60 rounds to zeros.
    for lengths in ([np.int64(7), np.int64(3)], [np.float32(0.5), np.float32(0.5)],
                    plugrad.asarray([7, 3])):  # fmt: skip
        ours = [len(s) for s in random_split(range(10), lengths)]
        theirs = [len(s) for s in torch_data.random_split(range(10), list(np.asarray(lengths)))]
        assert ours == theirs
    ranks = [DistributedSampler(range(8), num_replicas=2, rank=np.int64(r), seed=-1)
             for r in (0, 1)]  # fmt: skip
    for sampler in ranks:
        sampler.set_epoch(-3)
    shards = [list(sampler) for sampler in ranks]
    assert sorted(shards[0] + shards[1]) == list(range(8)) and shards[0] != [0, 2, 4, 6]
    assert set(WeightedRandomSampler([1e300, 1e300], 40)) == {0, 1}
    assert set(WeightedRandomSampler([1e-50, 1e-60], 5)) == {0}


def test_stack_dataset_pass_length_in_order_and_fixed_options_as_pytorchs() -> None:
    # StackDataset and in_order= were missing, len(iter(loader)) raised TypeError, and a
    # batch_size set after the loader was made was silently not used.
    results = []
    for data in (plugrad.utils.data, torch_data):
        lib = plugrad if data is plugrad.utils.data else torch
        by_position = data.StackDataset(lib.arange(4), lib.arange(4) * 10)
        by_name = data.StackDataset(x=lib.arange(3), y=[5, 6, 7])
        results.append((
            by_position[1][1].item(), len(by_position),
            [[t.tolist() for t in batch] for batch in data.DataLoader(by_position, batch_size=3)],
            [{k: v.tolist() for k, v in b.items()} for b in data.DataLoader(by_name, batch_size=2)],
            len(iter(data.DataLoader(list(range(6)), batch_size=2, in_order=False))),
        ))  # fmt: skip
        loader = data.DataLoader(list(range(6)), batch_size=2)
        for name, value in (("batch_size", 3), ("drop_last", True), ("dataset", [1])):
            with pytest.raises(ValueError, match=f"{name} attribute should not be set"):
                setattr(loader, name, value)
    assert results[0] == results[1]
    with pytest.raises(ValueError, match="one length"):
        plugrad.utils.data.StackDataset([1, 2], [3])


def test_drop_last_must_be_a_bool_as_pytorchs():
    # drop_last=2 was read as true.
    for make in (
        lambda: DataLoader(range(7), batch_size=2, drop_last=2),
        lambda: BatchSampler(range(7), 2, "x"),
    ):
        with pytest.raises(ValueError, match="drop_last must be True or False"):
            make()


def test_default_collate_checks_every_sample_and_keeps_sequence_types() -> None:
    # A non-tensor among tensors gave AttributeError ('int' object has no attribute 'shape');
    # a list subclass came back a plain list (PyTorch keeps its type and attributes).
    with pytest.raises(TypeError, match="sample 1 is a int"):
        default_collate([plugrad.zeros(2), 1])

    class Tagged(list):
        def __init__(self, items=(), tag=""):
            super().__init__(items)
            self.tag = tag

    batch = default_collate([Tagged([1, 2.0], tag="a"), Tagged([3, 4.0], tag="a")])
    assert type(batch) is Tagged and batch.tag == "a"
    assert [column.tolist() for column in batch] == [[1, 3], [2.0, 4.0]]
    assert type(default_collate([(1, 2), (3, 4)])) is list  # tuples: a list, as PyTorch's


def test_concat_dataset_names_the_index_it_was_given() -> None:
    data = ConcatDataset([TensorDataset(plugrad.arange(2)), TensorDataset(plugrad.arange(1))])
    assert data[-3][0].item() == 0
    with pytest.raises(IndexError, match="index -4 is out of range for a dataset of length 3"):
        data[-4]


def test_prefetch_factor_and_concat_cumsum_are_pytorchs() -> None:
    # prefetch_factor read 2 without workers (PyTorch's None); ConcatDataset.cumsum was missing.
    reference = torch.utils.data
    assert DataLoader([1, 2, 3]).prefetch_factor is reference.DataLoader([1, 2, 3]).prefetch_factor
    assert DataLoader([1, 2, 3], num_workers=1).prefetch_factor == 2
    assert ConcatDataset.cumsum([[1, 2], [3], []]) == reference.ConcatDataset.cumsum(
        [[1, 2], [3], []]
    )
    assert ConcatDataset([[1, 2], [3]]).cumulative_sizes == [2, 3]


@pytest.mark.parametrize(
    "make",
    [
        lambda g: random_split(range(10), [8, 2], generator=g),
        lambda g: random_split([], [0], generator=g),
        lambda g: RandomSampler(range(4), generator=g),
        lambda g: RandomSampler(range(4), replacement=True, generator=g),
        lambda g: SubsetRandomSampler([1, 3], generator=g),
        lambda g: WeightedRandomSampler([1.0, 2.0], 3, generator=g),
        lambda g: DataLoader(range(4), generator=g),
        lambda g: DataLoader(range(4), shuffle=True, generator=g),
    ],
    ids=["random_split", "random_split-empty", "RandomSampler", "RandomSampler-replacement",
         "SubsetRandomSampler", "WeightedRandomSampler", "DataLoader", "DataLoader-shuffle"],
)  # fmt: skip
@pytest.mark.parametrize("generator", ["torch", 42], ids=["torch.Generator", "seed"])
def test_a_generator_that_is_not_plugrads_is_refused_where_it_is_given(make, generator) -> None:
    # random_split and the samplers read generator.device first: an AttributeError ('int'
    # object has no attribute 'device'), and DataLoader and WeightedRandomSampler refused it
    # only at their first pass.
    given = torch.Generator().manual_seed(42) if generator == "torch" else generator
    with pytest.raises(TypeError, match=r"generator= takes a plugrad.Generator, got "):
        make(given)
    assert len(list(make(plugrad.Generator(seed=42))))  # plugrad's is taken


def test_default_collate_stacks_torch_tensors_of_any_ndim_as_plugrad_tensors() -> None:
    # 0-d torch tensors were stacked, 1-d ones refused ("cannot batch samples of type
    # Tensor"): a torch tensor has neither __array_namespace__ nor __array_interface__.
    cases = {
        "0-d": [torch.tensor(1.0), torch.tensor(2.0)],
        "1-d": [torch.ones(2), torch.zeros(2)],
        "2-d int": [torch.ones(2, 3, dtype=torch.int32), torch.zeros(2, 3, dtype=torch.int32)],
        "in dicts": [{"x": torch.ones(2)}, {"x": torch.zeros(2)}],
    }
    for name, batch in cases.items():
        ours, theirs = default_collate(batch), torch_data.default_collate(batch)
        if name == "in dicts":
            ours, theirs = ours["x"], theirs["x"]
        assert isinstance(ours, plugrad.Tensor), name
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], name
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(ValueError, match="different shapes"):
        default_collate([torch.ones(2), torch.ones(3)])


def test_workers_start_with_spawn_where_jax_runs_and_fork_would_hang():
    # Forked after JAX had computed, a worker hung for ever on JAX's locks (JAX warned
    # "os.fork() ... will likely lead to a deadlock"); the loader waited with it.
    pytest.importorskip("jax")
    if multiprocessing.get_context().get_start_method() != "fork":
        pytest.skip("the platform's default start method does not fork")
    script = """
import plugrad
from plugrad.utils.data import DataLoader, TensorDataset

rows = plugrad.arange(8.0, backend="jax").reshape(4, 2) + 1  # JAX's runtime is running
loader = DataLoader(TensorDataset(rows), batch_size=2, num_workers=2)
batches = [batch for (batch,) in loader]
assert all(batch.device == rows.device for batch in batches)
assert [batch.tolist() for batch in batches] == [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]
print("loaded")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "loaded" in done.stdout, done.stderr
    assert "os.fork()" not in done.stderr


@pytest.fixture
def numpy_would_hang_in_a_fork(monkeypatch):
    """The numpy backend declaring, as JAX's does once it runs, that a fork would hang."""
    if multiprocessing.get_context().get_start_method() != "fork":
        pytest.skip("the platform's default start method does not fork")
    numpy_backend = plugrad.registry.get_backend("numpy")
    monkeypatch.setattr(numpy_backend, "survives_fork", lambda: False)


def test_a_backend_that_cannot_survive_a_fork_makes_workers_spawn(numpy_would_hang_in_a_fork):
    context, hanging = DataLoader([1, 2], num_workers=1)._worker_context()
    # (JAX's backend is there too once an earlier test has started JAX)
    assert context.get_start_method() == "spawn" and "numpy" in hanging
    given = multiprocessing.get_context("fork")
    assert DataLoader([1, 2], num_workers=1, multiprocessing_context=given)._worker_context() == (
        given,
        [],
    )


@pytest.mark.parametrize("iterable", [False, True])
def test_a_dataset_that_spawned_workers_cannot_receive_is_refused_saying_why(
    numpy_would_hang_in_a_fork, iterable
):
    class Local(IterableDataset if iterable else Dataset):  # pickles by name: cannot
        def __len__(self):
            return 2

        def __getitem__(self, index):
            return index

        def __iter__(self):
            return iter(range(2))

    loader = DataLoader(Local(), num_workers=1, persistent_workers=not iterable)
    expected = r"'spawn' here.*numpy.*cannot be pickled.*Local.*multiprocessing_context='fork'"
    for _ in range(2):  # (a persistent loader tries anew)
        with pytest.raises(plugrad.errors.SerializationError, match=expected):
            list(loader)
    with pytest.raises(plugrad.errors.SerializationError, match=r"started with 'spawn' rec"):
        list(DataLoader(Local(), num_workers=1, multiprocessing_context="spawn"))


def test_a_map_style_worker_that_ends_abruptly_is_a_worker_error(tmp_path, monkeypatch):
    _worker_module(
        tmp_path,
        monkeypatch,
        "plugrad_loader_exiting",
        "import os\nclass Exiting:\n    def __len__(self):\n        return 2\n"
        "    def __getitem__(self, index):\n        os._exit(3)\n",
    )
    from plugrad_loader_exiting import Exiting

    loader = DataLoader(Exiting(), num_workers=1, multiprocessing_context="spawn")
    with pytest.raises(plugrad.errors.DataLoaderWorkerError, match=r"ended abruptly.*__main__"):
        list(loader)


def test_bfloat16_batches_come_back_from_workers():
    pytest.importorskip("torch")
    rows = plugrad.arange(8.0, backend="torch").reshape(4, 2).to(plugrad.bfloat16)
    batches = [b for (b,) in DataLoader(TensorDataset(rows), batch_size=2, num_workers=1)]
    assert all(b.dtype is plugrad.bfloat16 and b.device == rows.device for b in batches)
    assert [b.tolist() for b in batches] == [rows[:2].tolist(), rows[2:].tolist()]
