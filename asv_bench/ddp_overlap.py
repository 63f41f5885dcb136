"""How much of DistributedDataParallel's all-reduce time backward hides, with a timeline.

Run it under MPI, one BLAS thread per process::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 mpiexec -n 2 python asv_bench/ddp_overlap.py

For each model (``--models``; float32, batch ``--batch`` per process,
buckets of ``--bucket-cap-mb``) it interleaves, step after step, four
backward passes after the same forward, each started after a barrier:

- ``local``: inside ``no_sync()``, no communication at all;
- ``ddp``: DistributedDataParallel as it runs, with the MPI plugin's progress
  thread moving the all-reduces along while backward computes;
- ``ddp, no thread``: the same with the progress thread switched off, so the
  all-reduces advance only inside MPI calls (DDP's own polls);
- ``all-reduce alone``: the same buckets all-reduced with nothing to overlap.

and prints medians (wall clock) and two measures of the share of the
all-reduce time that backward hides:

- ``hidden share``: ``1 - (ddp - local) / all-reduce alone``, everything
  DDP adds to backward (copies into and out of the buckets, the progress
  thread's processor time, the waits) counted as not hidden;
- ``timeline``: for each bucket, when its all-reduce started (ms after the
  start of backward) and whether it had completed when backward's last
  gradient was ready; ``exposed`` is the time from that moment to the end of
  backward, and ``hidden by timeline`` is ``1 - exposed / all-reduce alone``.

The models: ``mlp``, 784-512-256-10, whose first layer holds three quarters
of the gradient bytes and is the last one backward reaches; ``wide-last``,
784-128-1024-512-10, whose largest layer is the third, so most bytes are
ready while backward still has two layers to go. Every figure is one
process's; rank 0 prints every rank's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
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
    for i, (fan_in, fan_out) in enumerate(zip(widths, widths[1:])):
        if i:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(fan_in, fan_out))
    return nn.Sequential(*layers)


class _Recorder:
    """Stands in for DDP's communicator: notes when each bucket's all-reduce starts."""

    def __init__(self, communicator: Any) -> None:
        self.communicator = communicator
        self.launches: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.communicator, name)

    def allreduce(self, array: Any, op: ReduceOp) -> Any:
        self.launches.append(time.perf_counter())
        return self.communicator.allreduce(array, op)


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
    communicator = model._communicator
    progress = communicator._progress  # the MPI plugin's progress thread, or None
    recorder = _Recorder(communicator)
    object.__setattr__(model, "_communicator", recorder)
    finish_backward = model._finish_backward
    marks: dict[str, Any] = {}

    def timed_finish() -> None:
        marks["compute end"] = time.perf_counter()
        marks["done at end"] = [b.work.is_completed() for b in model._buckets]
        finish_backward()

    object.__setattr__(model, "_finish_backward", timed_finish)

    def ddp_kind(interval: float | None) -> str:
        return "ddp, no thread" if interval is None else f"ddp, poke every {interval * 1e3:g} ms"

    def backward(interval: float | None | str) -> float:
        model.zero_grad()
        if interval == "local":
            with model.no_sync():
                loss = loss_fn(model(x), y)
                dist.barrier()
                start = time.perf_counter()
                loss.backward()
                return time.perf_counter() - start
        assert not isinstance(interval, str)
        if interval is not None:
            assert progress is not None, "the progress thread is off (PLUGRAD_MPI_PROGRESS_INTERVAL)"
            progress.interval = interval
        communicator._progress = None if interval is None else progress
        try:
            loss = loss_fn(model(x), y)
            recorder.launches.clear()
            dist.barrier()
            start = time.perf_counter()
            loss.backward()
            end = time.perf_counter()
        finally:
            communicator._progress = progress
        timelines[ddp_kind(interval)].append(
            {
                "launch ms": [(t - start) * 1e3 for t in recorder.launches],
                "compute end ms": (marks["compute end"] - start) * 1e3,
                "done at compute end": marks["done at end"],
                "exposed ms": (end - marks["compute end"]) * 1e3,
            }
        )
        return end - start

    def all_reduce_alone() -> float:
        dist.barrier()
        start = time.perf_counter()
        works = [communicator.allreduce(b.buffer, ReduceOp.AVG) for b in model._buckets]
        for work in works:
            work.wait()
        return time.perf_counter() - start

    settings: list[Any] = ["local", *args.intervals, None, "alone"]
    kinds = {
        "local": "local",
        "alone": "all-reduce alone",
        **{i: ddp_kind(i) for i in (*args.intervals, None)},
    }
    times: dict[str, list[float]] = {kinds[s]: [] for s in settings}
    timelines: dict[str, list[dict[str, Any]]] = {kinds[s]: [] for s in (*args.intervals, None)}
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            for timeline in timelines.values():
                timeline.clear()
        order = settings if step % 2 else settings[::-1]  # interleaved, alternating order
        for setting in order:
            t = all_reduce_alone() if setting == "alone" else backward(setting)
            if step >= args.warmup:
                times[kinds[setting]].append(t)
    medians = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    alone = medians["all-reduce alone"]
    summary: dict[str, Any] = {
        "model": "-".join(map(str, widths)),
        "bucket MB": [round(b.buffer.nbytes / 2**20, 3) for b in model._buckets],
        "backward ms": {k: round(v, 2) for k, v in medians.items()},
    }
    for kind, timeline in timelines.items():
        exposed = statistics.median(t["exposed ms"] for t in timeline)
        summary[kind] = {
            "hidden share": round(1 - (medians[kind] - medians["local"]) / alone, 3),
            "bucket launch ms": [
                round(statistics.median(t["launch ms"][i] for t in timeline), 2)
                for i in range(len(model._buckets))
            ],
            "compute end ms": round(statistics.median(t["compute end ms"] for t in timeline), 2),
            "share of passes each bucket was done at compute end": [
                round(statistics.mean(t["done at compute end"][i] for t in timeline), 2)
                for i in range(len(model._buckets))
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
    dist.init_process_group("mpi")
    results = [measure(name, args) for name in args.models]


    if dist.get_rank() == 0:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(json.dumps({"ranks": dist.get_world_size(), "load": load, "rank 0": results},
                         indent=1))  # fmt: skip
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
