"""How much of DistributedDataParallel's all-reduce time backward hides, with a timeline.

Run it under MPI, one BLAS thread per process::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 mpiexec -n 2 python asv_bench/ddp_overlap.py

For each model (``--models``; float32, batch ``--batch`` per process,
buckets of ``--bucket-cap-mb``) it interleaves, step after step in
alternating order, these runs, each started after a barrier:

- ``local``: backward inside ``no_sync()``, no communication at all;
- ``ddp, poke every I ms`` (one per ``--intervals``): backward with
  DistributedDataParallel, the MPI plugin's progress thread poking MPI every
  ``I`` ms while all-reduces are in flight;
- ``ddp, no thread``: the same with the progress thread off, so the
  all-reduces advance only inside MPI calls (DDP's polls as gradients arrive);
- ``all-reduce alone``: DDP's buckets all-reduced with nothing to overlap;
  ``last bucket alone``: the last of them only;
- ``ddp, all-reduces after backward``: DistributedDataParallel without
  overlap, every bucket's all-reduce started only when backward's end waits
  for them (no thread).

The ranks share this machine's monotonic clock, so every figure is taken
from the last rank to get there (the slowest rank sets the pace): a pass
lasts from the last rank's start to the last rank's end. Printed, medians in
ms:

- ``hidden share``: ``1 - (ddp - local) / all-reduce alone``; everything DDP
  adds to backward (dividing and copying into the buckets, the progress
  thread's processor time, waiting) counts as not hidden;
- ``saved share``: ``(no overlap - ddp) / (no overlap - local)``, where ``no
  overlap`` is ``ddp, all-reduces after backward``: the share of what
  communicating adds to backward that the overlap saves, both measured after
  a backward pass (an all-reduce started right after a barrier, when both
  processes are running, can cost less than one started as backward ends);
- the timeline: when each bucket's all-reduce started (after the start of
  backward), when backward's own work ended (its last gradient bucketed and
  ``.grad`` updated: ``compute end``), the share of passes in which each
  bucket had completed by then, ``exposed``, the time from compute end to the
  end of backward, and ``hidden by timeline``, ``1 - exposed / all-reduce alone``;
- ``ceiling of the hidden share``, ``1 - last bucket alone / all-reduce alone``:
  the last bucket starts with backward's last gradient, so nothing is left
  to hide it behind.

The models: ``mlp``, 784-512-256-10, whose first layer holds three quarters
of the gradient bytes and is the last one backward reaches; ``wide-last``,
784-128-1024-512-10, whose largest layer is the third, so most bytes are
ready while backward still has two layers to go. It takes about half a
minute on a quiet machine with the defaults.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import plugrad
import plugrad.distributed as dist
from plugrad import nn
from plugrad.distributed import ReduceOp

MODELS = {"mlp": (784, 512, 256, 10), "wide-last": (784, 128, 1024, 512, 10)}


def make_model(widths: tuple[int, ...]) -> nn.Module:
    plugrad.manual_seed(0)
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(widths)):
        if i:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(fan_in, fan_out))
    return nn.Sequential(*layers)


class _Deferred:
    """An all-reduce that starts, with every other deferred one, when the first is waited for."""

    def __init__(self, recorder: _Recorder, array: Any, op: ReduceOp) -> None:
        self.recorder = recorder
        self.array = array
        self.op = op
        self.work: Any = None

    def is_completed(self) -> bool:
        return self.work is not None and self.work.is_completed()

    def wait(self) -> bool:
        for deferred in self.recorder.deferred:
            deferred.work = self.recorder.communicator.allreduce(deferred.array, deferred.op)
        self.recorder.deferred.clear()
        return self.work.wait()

    @property
    def output(self) -> Any:
        return self.work.output


class _Recorder:
    """Stands in for DDP's communicator: notes when each bucket's all-reduce starts.

    With ``defer``, the all-reduces start only when backward's end waits for
    them: DistributedDataParallel without any overlap.
    """

    def __init__(self, communicator: Any) -> None:
        self.communicator = communicator
        self.launches: list[float] = []
        self.defer = False
        self.deferred: list[_Deferred] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.communicator, name)

    def allreduce(self, array: Any, op: ReduceOp) -> Any:
        self.launches.append(time.perf_counter())
        if self.defer:
            self.deferred.append(_Deferred(self, array, op))
            return self.deferred[-1]
        return self.communicator.allreduce(array, op)


def run_interleaved(
    runs: dict[str, Callable[[], list[float]]], warmup: int, steps: int
) -> dict[str, list[list[float]]]:
    """Each run's rows (its timestamps), the runs taking turns, in alternating order."""
    rows: dict[str, list[list[float]]] = {kind: [] for kind in runs}
    kinds = list(runs)
    for step in range(warmup + steps):
        for kind in kinds if step % 2 else kinds[::-1]:
            row = runs[kind]()
            if step >= warmup:
                rows[kind].append(row)
    return rows


def every_rank(rows: dict[str, list[list[float]]]) -> dict[str, np.ndarray]:
    """Every rank's rows, per run: an array indexed by rank, pass and field.

    The ranks share one machine's monotonic clock, so "the last rank's" moments
    can be compared across ranks.
    """
    every: dict[str, np.ndarray] = {}
    for kind, table in rows.items():
        mine = plugrad.asarray(np.array(table, dtype=np.float64))
        gathered = [plugrad.zeros_like(mine) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, mine)
        every[kind] = np.stack([np.asarray(g.tolist()) for g in gathered])
    return every


def measure(name: str, args: argparse.Namespace) -> dict[str, Any]:
    rank = dist.get_rank()
    widths = MODELS[name]
    rng = np.random.default_rng(rank)
    x = plugrad.asarray(rng.normal(size=(args.batch, widths[0])).astype(np.float32))
    y = plugrad.asarray(rng.integers(0, widths[-1], size=args.batch))
    loss_fn = nn.CrossEntropyLoss()
    model = nn.parallel.DistributedDataParallel(
        make_model(widths), bucket_cap_mb=args.bucket_cap_mb
    )
    n_buckets = len(model._buckets)
    communicator = model._communicator
    progress = communicator._progress  # the MPI plugin's progress thread, or None
    recorder = _Recorder(communicator)
    object.__setattr__(model, "_communicator", recorder)
    finish_backward = model._finish_backward
    marks: dict[str, Any] = {}

    def timed_finish() -> None:
        marks["compute end"] = time.perf_counter()
        marks["done"] = [float(b.work.is_completed()) for b in model._buckets]
        finish_backward()

    object.__setattr__(model, "_finish_backward", timed_finish)

    def local_backward() -> list[float]:
        model.zero_grad()
        with model.no_sync():
            loss = loss_fn(model(x), y)
            dist.barrier()
            start = time.perf_counter()
            loss.backward()
            return [start, time.perf_counter()]

    def ddp_backward(interval: float | None, overlap: bool = True) -> list[float]:
        model.zero_grad()
        if interval is not None:
            assert progress is not None, "PLUGRAD_MPI_PROGRESS_INTERVAL=0 turned the thread off"
            progress.interval = interval
        communicator._progress = None if interval is None else progress
        recorder.defer = not overlap
        try:
            loss = loss_fn(model(x), y)
            recorder.launches.clear()
            dist.barrier()
            start = time.perf_counter()
            loss.backward()
            end = time.perf_counter()
        finally:
            communicator._progress = progress
            recorder.defer = False
        return [start, end, marks["compute end"], *recorder.launches, *marks["done"]]

    # As DDP sends them: gradients divided by the number of ranks, then summed.
    alone_buffers = [np.zeros(b.size, b.members[0].detach().numpy().dtype) for b in model._buckets]

    def all_reduce_alone(buffers: list[Any]) -> list[float]:
        dist.barrier()
        start = time.perf_counter()
        works = [communicator.allreduce(b, ReduceOp.SUM) for b in buffers]
        for work in works:
            work.wait()
        return [start, time.perf_counter()]

    def ddp_kind(interval: float | None) -> str:
        return "ddp, no thread" if interval is None else f"ddp, poke every {interval * 1e3:g} ms"

    runs: dict[str, Any] = {
        "local": local_backward,
        "all-reduce alone": lambda: all_reduce_alone(alone_buffers),
        "last bucket alone": lambda: all_reduce_alone(alone_buffers[-1:]),
        "ddp, all-reduces after backward": lambda: ddp_backward(None, overlap=False),
        **{ddp_kind(i): (lambda i=i: ddp_backward(i)) for i in (*args.intervals, None)},
    }
    every = every_rank(run_interleaved(runs, args.warmup, args.steps))

    def slowest(kind: str) -> np.ndarray:
        """Per pass: from the last rank's start to the last rank's end, in ms."""
        t = every[kind]
        return (t[:, :, 1].max(axis=0) - t[:, :, 0].max(axis=0)) * 1e3

    alone = float(np.median(slowest("all-reduce alone")))
    serial = float(np.median(slowest("ddp, all-reduces after backward")))
    last = float(np.median(slowest("last bucket alone")))
    local = float(np.median(slowest("local")))
    summary: dict[str, Any] = {
        "model": "-".join(map(str, widths)),
        "bucket MB": [round(b.nbytes / 2**20, 3) for b in model._buckets],
        "local backward ms": round(local, 2),
        "all-reduce alone ms": round(alone, 2),
        "last bucket alone ms": round(last, 2),
        # Backward's last gradient starts the last bucket: nothing is left to hide it behind.
        "ceiling of the hidden share": round(1 - last / alone, 3),
        "ddp, all-reduces after backward, ms": round(serial, 2),
    }
    for interval in (*args.intervals, None):
        kind = ddp_kind(interval)
        t = every[kind]
        start = t[:, :, 0].max(axis=0)
        end = t[:, :, 1].max(axis=0)
        compute_end = t[:, :, 2].max(axis=0)
        launches = t[:, :, 3 : 3 + n_buckets].max(axis=0)
        done = t[:, :, 3 + n_buckets :].min(axis=0)  # done on every rank
        backward = float(np.median((end - start) * 1e3))
        exposed = float(np.median((end - compute_end) * 1e3))
        summary[kind] = {
            "backward ms": round(backward, 2),
            "hidden share": round(1 - (backward - local) / alone, 3),
            "saved share": round((serial - backward) / (serial - local), 3)
            if serial != local
            else float("nan"),
            "bucket launch ms": [
                round(float(v), 2) for v in np.median((launches - start[:, None]) * 1e3, axis=0)
            ],
            "compute end ms": round(float(np.median((compute_end - start) * 1e3)), 2),
            "share of passes each bucket was done at compute end": [
                round(float(v), 2) for v in done.mean(axis=0)
            ],
            "exposed ms": round(exposed, 2),
            "hidden by timeline": round(1 - exposed / alone, 3),
        }
    model._remove_hooks()
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=sorted(MODELS))
    parser.add_argument("--batch", type=int, default=1024, help="samples per process")
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--bucket-cap-mb", type=float, default=0.25)
    parser.add_argument(
        "--intervals",
        type=float,
        nargs="*",
        default=[1e-3],
        help="progress thread intervals (seconds) to compare; ddp without thread always runs",
    )
    args = parser.parse_args()
    if args.intervals:  # the thread must exist to compare intervals, spare core or not
        os.environ.setdefault("PLUGRAD_MPI_PROGRESS_INTERVAL", str(args.intervals[0]))
    dist.init_process_group("mpi")
    results = [measure(name, args) for name in args.models]

    if dist.get_rank() == 0:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        report = {"ranks": dist.get_world_size(), "load": round(load, 1), "models": results}
        print(json.dumps(report, indent=1))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
