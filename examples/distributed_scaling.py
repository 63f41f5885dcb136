"""Weak scaling of data-parallel training, and how much communication backward hides.

Run it once per process count, one BLAS thread per process::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 mpiexec -n 1 python examples/distributed_scaling.py
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 mpiexec -n 2 python examples/distributed_scaling.py

It trains the MLP 784-512-256-10 (float32, SGD) on random data, ``--batch``
samples per process, and prints, as medians over ``--steps`` steps after a
warm-up:

- ``step``: one training step with DistributedDataParallel (forward,
  backward with the bucketed all-reduces, optimizer step); ``local step``: the
  same without any communication (plain model) -- weak-scaling efficiency is
  local step on 1 process / step on N processes;
- ``backward`` with DDP, ``backward local`` (inside ``no_sync()``), and
  ``all-reduce alone`` (the same buckets all-reduced after backward, nothing
  to overlap with): the share of communication hidden behind backward is
  ``1 - (backward - backward local) / all-reduce alone``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import plugrad
import plugrad.distributed as dist
from plugrad import nn, optim
from plugrad.distributed import ReduceOp


def make_model() -> nn.Module:
    plugrad.manual_seed(0)
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10))  # fmt: skip


#: the clock of every measurement, chosen by --clock
clock = time.perf_counter


def timed(fn) -> float:
    dist.barrier()
    start = clock()
    fn()
    return clock() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1024, help="samples per process")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--bucket-cap-mb", type=float, default=0.25)
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall time, or the process's CPU time (on a shared machine: leaves out the time "
        "other programs hold the processor; MPI's waits spin, so they still count)",
    )
    args = parser.parse_args()
    global clock
    clock = time.perf_counter if args.clock == "wall" else time.process_time

    dist.init_process_group("mpi")
    rank, size = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(rank)
    x = plugrad.asarray(rng.normal(size=(args.batch, 784)).astype(np.float32))
    y = plugrad.asarray(rng.integers(0, 10, size=args.batch))
    loss_fn = nn.CrossEntropyLoss()

    local = make_model()
    local_opt = optim.SGD(local.parameters(), lr=0.01)
    model = nn.parallel.DistributedDataParallel(make_model(), bucket_cap_mb=args.bucket_cap_mb)
    opt = optim.SGD(model.parameters(), lr=0.01)
    communicator = dist.process_group._require().communicator

    def local_step() -> None:
        local_opt.zero_grad()
        loss_fn(local(x), y).backward()
        local_opt.step()

    def ddp_step() -> None:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    # As DDP sends them: gradients divided by the number of processes, then summed.
    buffers = [np.zeros(b.size, b.members[0].detach().numpy().dtype) for b in model._buckets]

    def comm_alone() -> None:
        works = [communicator.allreduce(b, ReduceOp.SUM) for b in buffers]
        for work in works:
            work.wait()

    times: dict[str, list[float]] = {k: [] for k in
                                     ("step", "local step", "backward", "backward local",
                                      "all-reduce alone")}  # fmt: skip
    for i in range(args.warmup + args.steps):
        record = i >= args.warmup
        t_local = timed(local_step)
        t_step = timed(ddp_step)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        t_backward = timed(loss.backward)
        opt.zero_grad()
        with model.no_sync():
            loss = loss_fn(model(x), y)
            t_backward_local = timed(loss.backward)
        t_comm = timed(comm_alone)
        if record:
            for key, value in zip(times, (t_step, t_local, t_backward, t_backward_local, t_comm)):
                times[key].append(value)
    medians = {k: statistics.median(v) for k, v in times.items()}
    exposed = medians["backward"] - medians["backward local"]
    summary = {
        "ranks": size,
        "clock": args.clock,
        "buckets": len(model._buckets),
        "gradient MB": sum(b.nbytes for b in model._buckets) / 2**20,
        **{f"{k} ms": round(v * 1e3, 2) for k, v in medians.items()},
    }
    if size > 1:  # with one process there is nothing to hide
        summary["hidden share"] = round(1 - exposed / medians["all-reduce alone"], 3)
    all_summaries = [None] * size
    # rank 0 prints every rank's figures
    rows = plugrad.asarray(np.array(list(medians.values()), dtype=np.float64))
    gathered = [plugrad.zeros(len(medians), dtype=plugrad.float64) for _ in range(size)]
    dist.all_gather(gathered, rows)
    if rank == 0:
        for r, row in enumerate(gathered):
            all_summaries[r] = dict(zip(medians, (round(v * 1e3, 2) for v in row.tolist())))
        print(json.dumps({"summary rank 0": summary, "per rank ms": all_summaries}, indent=1))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
