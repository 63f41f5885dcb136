"""Ways to hide more of the MLP's all-reduce behind backward, measured on their own.

Run it under MPI, one BLAS thread per process::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 mpiexec -n 2 python asv_bench/ddp_overlap_options.py

The MLP 784-512-256-10 (float32, ``--batch`` samples per process) sends two
buckets: 0.51 MB (the last two layers), ready early in backward, and 1.53 MB
(the first layer), whose weight gradient ``g1.T @ x`` is the last thing
backward computes, so its all-reduce has nothing left to hide behind. This
script replays the tail of that backward pass with NumPy arrays and the
``mpi`` plugin's own transfers (its progress thread included), from the
moment the first bucket is sent: the second layer's input gradient, the ReLU
mask, the first layer's weight gradient; then the SGD update of both buckets.
Each variant runs after a barrier, interleaved with the others step after
step in alternating order:

- ``row blocks K``: the first layer's weight gradient computed in ``K`` row
  blocks straight into its bucket, each block's all-reduce started as soon as
  it is computed, every transfer in flight polled between blocks (``K = 1``
  is what DistributedDataParallel does);
- ``update overlap``: ``K = 1``, then the first bucket's SGD update while the
  last bucket's all-reduce is in flight (an optimizer step per bucket as each
  all-reduce completes), instead of waiting for both before updating;
- each with the progress thread poking MPI every millisecond, and without it.

Printed, medians over the last rank to get there (the ranks share this
machine's monotonic clock), in ms: ``compute alone`` (the same work without
communication), ``all-reduce alone`` (both buckets, nothing to overlap) and,
per variant, the time of the tail with communication and the share hidden,
``1 - (tail - compute alone) / all-reduce alone``. The update variants are
compared with the compute and the update without communication. It also
prints the largest difference between the summed weight gradient computed in
row blocks and in one product, relative to its largest entry.
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
from ddp_overlap import every_rank, run_interleaved  # the script's folder is on sys.path

import plugrad.distributed as dist
from plugrad.distributed import ReduceOp

#: gradients of the first bucket (the last two layers: 512x256 + 256 + 256x10 + 10)
FIRST_BUCKET = 512 * 256 + 256 + 256 * 10 + 10
LEARNING_RATE = 0.01


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1024, help="samples per process")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--blocks", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()
    os.environ.setdefault("PLUGRAD_MPI_PROGRESS_INTERVAL", "1e-3")  # the thread must exist
    dist.init_process_group("mpi")
    communicator = dist.process_group._require().communicator
    progress = communicator._progress
    size = dist.get_world_size()

    rng = np.random.default_rng(dist.get_rank())
    x = rng.normal(size=(args.batch, 784)).astype(np.float32)
    hidden = rng.normal(size=(args.batch, 512)).astype(np.float32)  # first layer's output
    g2 = rng.normal(size=(args.batch, 256)).astype(np.float32)  # gradient into layer 2
    w2 = rng.normal(size=(256, 512)).astype(np.float32)
    w1 = rng.normal(size=(512, 784)).astype(np.float32)
    first = np.zeros(FIRST_BUCKET, dtype=np.float32)
    first_params = np.zeros(FIRST_BUCKET, dtype=np.float32)
    last = np.zeros(w1.size, dtype=np.float32)

    def sgd(params: np.ndarray, grads: np.ndarray) -> None:
        params -= LEARNING_RATE * grads

    def tail(blocks: int, send: bool, update: str | None) -> list[float]:
        """Backward from the first bucket's send on; ``update``: None, "after" or "overlap"."""
        dist.barrier()
        start = time.perf_counter()
        works = [communicator.allreduce(first, ReduceOp.SUM)] if send else []
        g1 = np.matmul(g2, w2)  # the second layer's input gradient
        g1 = np.where(hidden > 0, g1, 0.0).astype(np.float32, copy=False)
        bucket = last.reshape(w1.shape)
        bounds = np.linspace(0, w1.shape[0], blocks + 1).astype(int)
        for lo, hi in itertools.pairwise(bounds):
            np.matmul(g1[:, lo:hi].T, x, out=bucket[lo:hi])
            bucket[lo:hi] *= 1 / size  # divided while filling, as DistributedDataParallel does
            if send:
                works.append(communicator.allreduce(bucket[lo:hi], ReduceOp.SUM))
                for work in works:
                    work.is_completed()
        if update == "overlap":
            if works:
                works[0].wait()
            sgd(first_params, first)
            for work in works[1:]:
                work.wait()
            sgd(w1, bucket)
        else:
            for work in works:
                work.wait()
            if update == "after":
                sgd(first_params, first)
                sgd(w1, bucket)
        return [start, time.perf_counter()]

    def all_reduce_alone() -> list[float]:
        dist.barrier()
        start = time.perf_counter()
        works = [communicator.allreduce(b, ReduceOp.SUM) for b in (first, last)]
        for work in works:
            work.wait()
        return [start, time.perf_counter()]

    def with_thread(run: Callable[[], list[float]], on: bool) -> Callable[[], list[float]]:
        def wrapped() -> list[float]:
            communicator._progress = progress if on else None
            try:
                return run()
            finally:
                communicator._progress = progress

        return wrapped

    runs: dict[str, Callable[[], list[float]]] = {
        "compute alone": lambda: tail(1, False, None),
        "compute and update alone": lambda: tail(1, False, "after"),
        "all-reduce alone": all_reduce_alone,
    }
    threads = (False, True) if progress is not None else (False,)
    for on in threads:
        suffix = ", thread" if on else ", no thread"
        for k in args.blocks:
            runs[f"row blocks {k}{suffix}"] = with_thread(lambda k=k: tail(k, True, None), on)
        runs[f"update after{suffix}"] = with_thread(lambda: tail(1, True, "after"), on)
        runs[f"update overlap{suffix}"] = with_thread(lambda: tail(1, True, "overlap"), on)

    medians: dict[str, float] = {}
    for kind, every in every_rank(run_interleaved(runs, args.warmup, args.steps)).items():
        # every: rank, pass, (start, end)
        medians[kind] = float(np.median(every[:, :, 1].max(axis=0) - every[:, :, 0].max(axis=0)))

    # Row blocks give the gradient of one product, summed across ranks, up to rounding.
    gradients = {}
    for k in sorted({1, *args.blocks}):
        tail(k, True, None)
        gradients[k] = last.copy()
    largest = max(float(np.max(np.abs(g - gradients[1]))) for g in gradients.values())
    scale = float(np.max(np.abs(gradients[1])))

    alone = medians["all-reduce alone"]
    report: dict[str, Any] = {
        "ranks": size,
        "load": round(os.getloadavg()[0], 1) if hasattr(os, "getloadavg") else None,
        **{f"{k} ms": round(medians[k] * 1e3, 2) for k in list(runs)[:3]},
        "row blocks, largest difference from one block, relative": largest / scale,
    }
    for kind in list(runs)[3:]:
        reference = medians["compute and update alone" if "update" in kind else "compute alone"]
        report[kind] = {
            "ms": round(medians[kind] * 1e3, 2),
            "hidden share": round(1 - (medians[kind] - reference) / alone, 3),
        }
    if dist.get_rank() == 0:
        print(json.dumps(report, indent=1))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
