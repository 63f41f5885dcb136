"""One rank of the jobs that test_mpi.py launches with mpiexec: ``python mpi_worker.py SCENARIO``.

Each scenario checks its own results on its rank and ends by printing
``PASS <scenario> rank <r>``; the test counts those lines.
"""

from __future__ import annotations

import copy
import datetime
import sys

import numpy as np

import plugrad
import plugrad.distributed as dist
from plugrad import nn, optim
from plugrad.errors import (
    CallOrderError,
    DeviceMismatchError,
    DistributedError,
    DtypeError,
    NotSupportedError,
    ShapeError,
)


def close(actual, expected, what, rtol=1e-6):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, err_msg=what)


def data_of(rank, shape=(3, 4), dtype=np.float64):
    return (np.arange(np.prod(shape)).reshape(shape) + 10 * rank + 1).astype(dtype)


def collectives(rank, size):
    everyone = [data_of(r) for r in range(size)]
    expected = {
        dist.ReduceOp.SUM: np.sum(everyone, axis=0),
        dist.ReduceOp.AVG: np.mean(everyone, axis=0),
        dist.ReduceOp.MAX: np.max(everyone, axis=0),
        dist.ReduceOp.MIN: np.min(everyone, axis=0),
        dist.ReduceOp.PRODUCT: np.prod(everyone, axis=0),
    }
    for op, want in expected.items():
        x = plugrad.asarray(data_of(rank))
        dist.all_reduce(x, op=op)
        close(x.numpy(), want, f"all_reduce {op}")
        y = plugrad.asarray(data_of(rank))
        work = dist.all_reduce(y, op=op, async_op=True)
        assert work is not None
        assert work.wait() is True and work.is_completed()
        close(y.numpy(), want, f"async all_reduce {op}")
    # integers, and a non-contiguous view
    ints = plugrad.asarray(data_of(rank, dtype=np.int64))
    dist.all_reduce(ints, op=dist.ReduceOp.MAX)
    assert ints.dtype == plugrad.int64
    close(ints.numpy(), expected[dist.ReduceOp.MAX], "int all_reduce")
    transposed = plugrad.asarray(data_of(rank)).T
    dist.all_reduce(transposed)
    close(transposed.numpy(), expected[dist.ReduceOp.SUM].T, "non-contiguous all_reduce")
    # tensors of another backend go through a host copy
    strict = plugrad.asarray(data_of(rank), backend="array_api_strict")
    dist.all_reduce(strict)
    assert strict.device.backend.name == "array_api_strict"
    close(plugrad.asarray(strict.numpy()).numpy(), expected[dist.ReduceOp.SUM], "strict backend")

    for src in range(size):
        b = plugrad.asarray(data_of(rank))
        dist.broadcast(b, src=src)
        close(b.numpy(), data_of(src), f"broadcast from {src}")

    gathered = [plugrad.zeros((3, 4), dtype=plugrad.float64) for _ in range(size)]
    dist.all_gather(gathered, plugrad.asarray(data_of(rank)))
    for r in range(size):
        close(gathered[r].numpy(), data_of(r), f"all_gather row {r}")
    flat = plugrad.zeros((3 * size, 4), dtype=plugrad.float64)
    dist.all_gather_into_tensor(flat, plugrad.asarray(data_of(rank)))
    close(flat.numpy(), np.concatenate(everyone), "all_gather_into_tensor")
    # PyTorch's stacked form too, and of 0-d inputs (read shape[0] of a 0-d input: IndexError)
    stacked = plugrad.zeros((size, 3, 4), dtype=plugrad.float64)
    dist.all_gather_into_tensor(stacked, plugrad.asarray(data_of(rank)))
    close(stacked.numpy(), np.stack(everyone), "all_gather_into_tensor, stacked")
    scalars = plugrad.zeros(size, dtype=plugrad.float64)
    dist.all_gather_into_tensor(scalars, plugrad.tensor(float(rank), dtype=plugrad.float64))
    close(scalars.numpy(), np.arange(size, dtype=np.float64), "all_gather_into_tensor, 0-d")
    refused(
        lambda: dist.all_gather_into_tensor(plugrad.zeros(size + 1), plugrad.tensor(1.0)),
        ShapeError, "concatenated or stacked",
    )  # fmt: skip
    # Outputs on another device than the input: refused before the transfer (a raw KeyError
    # came after it), as PyTorch's collectives take tensors of one device.
    with plugrad.use_backend("array_api_strict"):
        elsewhere = [plugrad.zeros(2) for _ in range(size)]
        flat_elsewhere = plugrad.zeros(2 * size)
    refused(lambda: dist.all_gather(elsewhere, plugrad.ones(2)), DeviceMismatchError,
            "tensor_list[0] is on array_api_strict")  # fmt: skip
    refused(lambda: dist.all_gather_into_tensor(flat_elsewhere, plugrad.ones(2)),
            DeviceMismatchError, "output_tensor")  # fmt: skip
    # An output of another dtype: the input was cast into it (floats truncated into int64,
    # overflowed into float16's inf); refused on every rank, as PyTorch's, nothing written.
    others = [d for d in (plugrad.int64, plugrad.float16) if d in plugrad.ones(1).device.dtypes]
    for dtype in others:  # (Dask has no float16)
        other = plugrad.full((2 * size,), 7, dtype=dtype)
        sent = plugrad.tensor([1.7, 7e4])
        refused(
            lambda other=other, sent=sent: dist.all_gather_into_tensor(other, sent),
            DtypeError,
            f"output_tensor is {dtype.name} but input_tensor is float32",
        )
        assert other.tolist() == [7] * (2 * size), other

    inputs = [plugrad.asarray(data_of(rank) * (j + 1)) for j in range(size)]
    out = plugrad.zeros((3, 4), dtype=plugrad.float64)
    dist.reduce_scatter(out, inputs, op=dist.ReduceOp.SUM)
    close(out.numpy(), np.sum(everyone, axis=0) * (rank + 1), "reduce_scatter")
    big = plugrad.asarray(np.concatenate([data_of(rank) * (j + 1) for j in range(size)]))
    out2 = plugrad.zeros((3, 4), dtype=plugrad.float64)
    dist.reduce_scatter_tensor(out2, big, op=dist.ReduceOp.AVG)
    close(out2.numpy(), np.mean(everyone, axis=0) * (rank + 1), "reduce_scatter_tensor AVG")

    # Outputs go into the tensor's memory, which other tensors may share: they were bound
    # to new arrays, so views (out[k]) and aliases (p.data) kept their old values.
    stacked = plugrad.zeros((size, 3, 4), dtype=plugrad.float64)
    dist.all_gather(list(stacked.unbind(0)), plugrad.asarray(data_of(rank)))
    close(stacked.numpy(), np.stack(everyone), "all_gather into views of one tensor")
    rows = plugrad.zeros((size + 1, 3, 4), dtype=plugrad.float64)
    dist.reduce_scatter(rows[1], [plugrad.asarray(data_of(rank))] * size)
    close(rows.numpy()[1], np.sum(everyone, axis=0), "reduce_scatter into a view")
    weight = plugrad.nn.Parameter(plugrad.asarray(data_of(rank)))
    dist.broadcast(weight.data, src=0)
    close(weight.detach().numpy(), data_of(0), "broadcast into parameter.data")
    dist.all_reduce(weight.detach())
    close(weight.detach().numpy(), data_of(0) * size, "all_reduce into parameter.detach()")

    root = size - 1
    targets = [plugrad.zeros((3, 4), dtype=plugrad.float64) for _ in range(size)]
    dist.gather(plugrad.asarray(data_of(rank)), targets if rank == root else None, dst=root)
    if rank == root:
        for r in range(size):
            close(targets[r].numpy(), data_of(r), f"gather row {r}")
    received = plugrad.zeros((3, 4), dtype=plugrad.float64)
    rows = [plugrad.asarray(data_of(r) * 2) for r in range(size)] if rank == 0 else None
    dist.scatter(received, rows, src=0)
    close(received.numpy(), data_of(rank) * 2, "scatter")

    # a ring of sends: each rank sends to the next and receives from the previous
    right, left = (rank + 1) % size, (rank - 1) % size
    inbox = plugrad.zeros((3, 4), dtype=plugrad.float64)
    pending = dist.irecv(inbox, src=left, tag=7)
    dist.send(plugrad.asarray(data_of(rank)), dst=right, tag=7)
    pending.wait()
    close(inbox.numpy(), data_of(left), "send/recv ring")
    if size == 2:
        anyone = plugrad.zeros((3, 4), dtype=plugrad.float64)
        if rank == 0:
            sender = dist.recv(anyone)
            assert sender == 1, sender
            close(anyone.numpy(), data_of(1), "recv from any rank")
        else:
            dist.send(plugrad.asarray(data_of(1)), dst=0)
    dist.barrier()
    assert dist.barrier(async_op=True).wait()
    _work_as_pytorch_has_it(rank, size)


def _work_as_pytorch_has_it(rank, size):
    """PyTorch's calls on the handle of an asynchronous collective: wait() took only
    seconds (a timedelta raised TypeError), result() was an array attribute (not callable),
    and there was no get_future()."""
    x = plugrad.full((2,), float(rank + 1))
    work = dist.all_reduce(x, async_op=True)
    assert work.wait(datetime.timedelta(seconds=30)) is True
    total = size * (size + 1) / 2
    (written,) = work.result()
    assert written is x and x.tolist() == [total] * 2
    gathered = [plugrad.zeros(2) for _ in range(size)]
    work = dist.all_gather(gathered, x, async_op=True)
    future = work.get_future()
    doubled = future.then(lambda done: [t * 2 for t in done.value()])
    seen = []
    future.add_done_callback(lambda done: seen.append(len(done.value())))
    values = future.wait()
    assert all(a is b for a, b in zip(values, gathered)) and len(values) == size
    assert future.done() and seen == [size]
    assert [t.tolist() for t in doubled.wait()] == [[2 * total] * 2] * size
    assert all(a is b for a, b in zip(work.result(), gathered))
    work = dist.barrier(async_op=True)
    assert work.wait(0) and work.result() == []
    # a future read before the transfer completed: refused rather than stale or empty
    if rank == 0:
        pending = dist.irecv(plugrad.zeros(2), src=1).get_future()
        refused(pending.value, CallOrderError, "call wait() first")
        dist.barrier()
        assert pending.wait()[0].tolist() == [5.0, 5.0]
    elif rank == 1:
        dist.barrier()
        dist.send(plugrad.full((2,), 5.0), dst=0)
    else:
        dist.barrier()


def make_model(seed, hidden=16):
    plugrad.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, hidden), nn.Tanh(), nn.Linear(hidden, 8), nn.ReLU(),
                         nn.Linear(8, 3))  # fmt: skip


class _Upto(nn.Sequential):
    """The layers up to ``upto`` (all when None): a forward that leaves some unused."""

    upto = None

    def forward(self, x):
        return super().forward(x) if self.upto is None else self[: self.upto](x)


class _Chained(nn.ModuleDict):
    """b(a(x)) on rank 0, a(b(x)) on the others: backward in another order on each rank."""

    def forward(self, x, rank):
        a, b = self["a"], self["b"]
        return (b(a(x)) if rank == 0 else a(b(x))).sum()


def batches(steps, per_rank, size):
    rng = np.random.default_rng(42)
    for _ in range(steps):
        x = rng.normal(size=(per_rank * size, 6))
        y = rng.integers(0, 3, size=per_rank * size)
        yield plugrad.asarray(x, dtype=plugrad.float64), plugrad.asarray(y)


def ddp(rank, size):
    loss_fn = nn.CrossEntropyLoss()
    per_rank = 5
    for name, make_opt in [
        ("sgd", lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9)),
        ("adam", lambda ps: optim.Adam(ps, lr=0.05)),
    ]:
        # different initial values on every rank: DDP must start all from rank 0's
        local = make_model(100 + rank).to(plugrad.float64)
        model = nn.parallel.DistributedDataParallel(local, bucket_cap_mb=0.0002)
        assert len(model._buckets) >= 3, len(model._buckets)
        reference = make_model(100).to(plugrad.float64)
        opt, ref_opt = make_opt(model.parameters()), make_opt(reference.parameters())
        for x, y in batches(6, per_rank, size):
            mine = slice(rank * per_rank, (rank + 1) * per_rank)
            opt.zero_grad()
            loss_fn(model(x[mine]), y[mine]).backward()
            opt.step()
            ref_opt.zero_grad()
            loss_fn(reference(x), y).backward()
            ref_opt.step()
        for (n, p), q in zip(model.module.named_parameters(), reference.parameters()):
            close(p.detach().numpy(), q.detach().numpy(), f"{name} {n}", rtol=1e-9)
        assert next(iter(model.state_dict())).startswith("module.")

    # no_sync: two local micro-batches, then a synchronised one
    model = nn.parallel.DistributedDataParallel(make_model(7).to(plugrad.float64))
    reference = make_model(7).to(plugrad.float64)
    micro = list(batches(3, per_rank, size))
    mine = slice(rank * per_rank, (rank + 1) * per_rank)
    with model.no_sync():
        for x, y in micro[:2]:
            loss_fn(model(x[mine]), y[mine]).backward()
    local_grad = model.module[0].weight.grad.numpy().copy()
    everyone = np.empty((size, *local_grad.shape))
    dist.all_gather_into_tensor(
        plugrad.asarray(everyone.reshape(size * local_grad.shape[0], -1)),
        plugrad.asarray(local_grad),
    )
    x, y = micro[2]
    loss_fn(model(x[mine]), y[mine]).backward()
    for x, y in micro:
        loss_fn(reference(x), y).backward()
    for (n, p), q in zip(model.module.named_parameters(), reference.parameters()):
        close(p.grad.numpy(), q.grad.numpy(), f"no_sync grad {n}", rtol=1e-9)

    # As PyTorch's, the forward pass decides: a backward through model.module alone, or of
    # a forward run inside no_sync() (the backward outside it), is local. The hooks averaged
    # every backward: a diagnostic backward on one rank paired with another's next pass.
    x, y = micro[0]
    for local in ("module", "no_sync"):
        model.zero_grad()
        if local == "module":
            loss = loss_fn(model.module(x[mine]), y[mine])
        else:
            with model.no_sync():
                loss = loss_fn(model(x[mine]), y[mine])
        loss.backward()
        reference.zero_grad()
        loss_fn(reference(x[mine]), y[mine]).backward()
        for (n, p), q in zip(model.module.named_parameters(), reference.parameters()):
            close(p.grad.numpy(), q.grad.numpy(), f"{local}: local grad {n}", rtol=1e-9)

    # A forward under no_grad() or no_sync() between a forward and its backward (a metric, a
    # pseudo-label) switched that backward's averaging off: each rank kept its own gradient
    # and the replicas drifted apart. As PyTorch's, the earlier forward's backward averages,
    # the no_sync() forward's loss included.
    (x1, y1), (x2, y2) = micro[1], micro[2]
    for between in ("no_grad", "no_sync"):
        model.zero_grad()
        loss = loss_fn(model(x1[mine]), y1[mine])
        with plugrad.no_grad() if between == "no_grad" else model.no_sync():
            other = loss_fn(model(x2[mine]), y2[mine])
        (loss if between == "no_grad" else loss + other).backward()
        reference.zero_grad()
        expected = loss_fn(reference(x1), y1)
        (expected if between == "no_grad" else expected + loss_fn(reference(x2), y2)).backward()
        for (n, p), q in zip(model.module.named_parameters(), reference.parameters()):
            close(p.grad.numpy(), q.grad.numpy(), f"a {between} forward in between: {n}", 1e-9)

    # The averaged gradients share one buffer per bucket: the next pass must not write into
    # the gradients of this one that someone kept.
    kept = [(p.grad, p.grad.numpy().copy()) for p in model.parameters()]
    model.zero_grad()
    x, y = micro[0]
    loss_fn(model(x[mine]), y[mine]).backward()
    for grad, values in kept:
        close(grad.numpy(), values, "a gradient kept from the previous pass", rtol=0)
    assert not np.array_equal(model.module[0].weight.grad.numpy(), kept[0][1])

    # Backward in an order that depends on the data: rank 0 computes b(a(x)), the others
    # a(b(x)), so their one-parameter buckets fill in opposite orders. The all-reduces went
    # out as the buckets filled, pairing a's gradient on one rank with b's on another.
    pair = _Chained({"a": nn.Linear(6, 6, bias=False), "b": nn.Linear(6, 6, bias=False)})
    pair.to(plugrad.float64)
    model = nn.parallel.DistributedDataParallel(pair, bucket_cap_mb=1e-6)  # rank 0's weights
    reference = _Chained({"a": nn.Linear(6, 6, bias=False), "b": nn.Linear(6, 6, bias=False)})
    reference.to(plugrad.float64)
    reference.load_state_dict(pair.state_dict())
    inputs = [plugrad.asarray(np.arange(6.0) + 10 * r) for r in range(size)]
    model(inputs[rank], rank).backward()
    for r in range(size):
        (reference(inputs[r], r) / size).backward()
    for name in ("a", "b"):
        close(model.module[name].weight.grad.numpy(), reference[name].weight.grad.numpy(),
              f"gradient of {name} with backward in another order on each rank")  # fmt: skip

    # A deep copy (an EMA of the model) is a replica of its own: it raised "cannot pickle
    # 'module' object". Its gradients are averaged too; the original's are left alone.
    replica = copy.deepcopy(model)
    assert replica.module["a"].weight is not model.module["a"].weight
    before = model.module["a"].weight.grad.numpy().copy()
    replica(inputs[rank], rank).backward()
    for name in ("a", "b"):
        close(replica.module[name].weight.grad.numpy(), reference[name].weight.grad.numpy(),
              f"gradient of {name} in a deep copy")  # fmt: skip
    close(model.module["a"].weight.grad.numpy(), before, "the original's gradient", rtol=0)


def refused(call, error, *phrases):
    """``call()`` raises ``error`` whose message holds every phrase."""
    try:
        call()
    except error as raised:
        for phrase in phrases:
            assert phrase in str(raised), str(raised)
    else:
        raise AssertionError(f"not refused: {phrases}")


def _shares(size):
    """Rows of the global batch per rank: uneven, one rank with one row, one with none."""
    return {2: [1, 6], 3: [5, 0, 1]}.get(size, [2 + r for r in range(size)])


def sync_batchnorm(rank, size):
    """SyncBatchNorm on uneven shares of a batch equals BatchNorm on the whole batch."""
    shares = _shares(size)
    start = sum(shares[:rank])
    mine = slice(start, start + shares[rank])
    total = sum(shares)
    rng = np.random.default_rng(11)
    cases = [
        # (trailing shape, BatchNorm class, layer keywords, offset of the values)
        ((3,), nn.BatchNorm1d, {}, 0.0),
        ((3, 4), nn.BatchNorm1d, {"momentum": None}, 0.0),
        ((2, 3, 2), nn.BatchNorm2d, {"affine": False}, 0.0),
        ((2, 2, 2, 3), nn.BatchNorm3d, {"track_running_stats": False}, 0.0),
        ((3,), nn.BatchNorm1d, {"bias": False}, 0.0),
        # values far from 0 against their spread: a sum of squares minus the squared sum
        # would cancel every digit (both sides then agree to about 1e-8, float64's rounding
        # of values of 1e8)
        ((3, 2), nn.BatchNorm1d, {}, 1e8),
    ]
    for shape, norm, options, offset in cases:
        what = f"{norm.__name__}{shape} {options} offset {offset}"
        rtol = 1e-6 if offset else 1e-9
        synced = nn.SyncBatchNorm(shape[0], dtype=plugrad.float64, **options)
        reference = norm(shape[0], dtype=plugrad.float64, **options)
        if synced.weight is not None:
            values = rng.uniform(0.5, 1.5, shape[0])
            with plugrad.no_grad():
                synced.weight.copy_(plugrad.asarray(values))
                reference.weight.copy_(plugrad.asarray(values))
        for _ in range(3):
            batch = (
                rng.normal(size=(total, *shape))
                * (1 + np.arange(shape[0])).reshape((1, shape[0]) + (1,) * (len(shape) - 1))
                + offset
            )
            weights = rng.uniform(-1, 1, size=(total, *shape))
            x_all = plugrad.asarray(batch, requires_grad=True)
            x_mine = plugrad.asarray(batch[mine], requires_grad=True)
            out = synced(x_mine)
            expected = reference(x_all)
            close(out.detach().numpy(), expected.detach().numpy()[mine], f"{what} output", rtol)
            (out * plugrad.asarray(weights[mine])).sum().backward()
            (expected * plugrad.asarray(weights)).sum().backward()
            close(x_mine.grad.numpy(), x_all.grad.numpy()[mine], f"{what} input grad", rtol * 100)
            for name, p in synced.named_parameters():
                summed = p.grad.detach().clone()
                dist.all_reduce(summed)
                q = getattr(reference, name)
                close(summed.numpy(), q.grad.numpy(), f"{what} {name} grad summed", rtol)
                p.grad = None
                q.grad = None
            for name, buffer in reference.named_buffers():
                close(synced.get_buffer(name).numpy(), buffer.numpy(), f"{what} {name}", rtol)
        # evaluation mode: the running statistics normalize, with no communication
        synced.eval()
        reference.eval()
        x = plugrad.asarray(rng.normal(size=(2, *shape)) + offset)
        close(synced(x).detach().numpy(), reference(x).detach().numpy(), f"{what} eval", rtol)

    # an input that does not require grad: no all-reduce in backward, local affine grads
    synced = nn.SyncBatchNorm(3, dtype=plugrad.float64)
    reference = nn.BatchNorm1d(3, dtype=plugrad.float64)
    batch, weights = rng.normal(size=(total, 3)), rng.normal(size=(total, 3))
    (synced(plugrad.asarray(batch[mine])) * plugrad.asarray(weights[mine])).sum().backward()
    (reference(plugrad.asarray(batch)) * plugrad.asarray(weights)).sum().backward()
    summed = synced.weight.grad.detach().clone()
    dist.all_reduce(summed)
    close(summed.numpy(), reference.weight.grad.numpy(), "weight grad, input without grad")

    # float16 is normalized in float32 and rounded once, as BatchNorm does
    if plugrad.float16 in plugrad.ones(1).device.dtypes:  # (Dask has no float16)
        synced, reference = nn.SyncBatchNorm(3).half(), nn.BatchNorm1d(3).half()
        batch = rng.normal(size=(total, 3)).astype(np.float16)
        out = synced(plugrad.asarray(batch[mine]))
        assert out.dtype == plugrad.float16
        expected = reference(plugrad.asarray(batch)).detach().numpy()[mine].astype(np.float32)
        close(out.detach().numpy().astype(np.float32), expected, "float16", 1e-2)

    # one value per channel in the whole batch is refused on every rank
    one = plugrad.ones((1 if rank == 0 else 0, 2), dtype=plugrad.float64)
    refused(lambda: nn.SyncBatchNorm(2, dtype=plugrad.float64)(one), ShapeError,
            "more than one value per channel")  # fmt: skip
    # an empty global batch: an empty result, statistics left alone
    layer = nn.SyncBatchNorm(2, dtype=plugrad.float64)
    empty = plugrad.zeros((0, 2), dtype=plugrad.float64, requires_grad=True)
    out = layer(empty)
    out.sum().backward()
    assert out.shape == (0, 2) and empty.grad.shape == (0, 2)
    close(layer.running_var.numpy(), [1.0, 1.0], "running_var after an empty batch")

    # a rank evaluating while another trains: both raise, naming SyncBatchNorm
    layer = nn.SyncBatchNorm(2)
    if rank == 0:
        refused(lambda: layer(plugrad.ones((3, 2))), ShapeError,
                "rank 0: SyncBatchNorm's exchange of batch statistics (forward) of float32 (5,)",
                "rank 1: barrier")  # fmt: skip
    else:
        refused(dist.barrier, ShapeError, "rank 0: SyncBatchNorm's exchange of batch statistics")

    # inside DistributedDataParallel: SGD steps equal one process on the whole batch
    def make(seed):
        plugrad.manual_seed(seed)
        return nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 4),
                             nn.Unflatten(1, (2, 2, 1)), nn.BatchNorm2d(2, momentum=None),
                             nn.Flatten(), nn.Linear(4, 3)).to(plugrad.float64)  # fmt: skip

    local = nn.SyncBatchNorm.convert_sync_batchnorm(make(21 + rank))
    assert isinstance(local[1], nn.SyncBatchNorm) and isinstance(local[5], nn.SyncBatchNorm)
    model = nn.parallel.DistributedDataParallel(local)
    reference = make(21)
    loss_fn = nn.CrossEntropyLoss(reduction="sum")
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for _ in range(4):
        x = plugrad.asarray(rng.normal(size=(total, 5)))
        y = plugrad.asarray(rng.integers(0, 3, size=total))
        opt.zero_grad()
        # DDP averages over the ranks: the sum over this share, times size / total, averages
        # to the mean over the whole batch
        (loss_fn(model(x[mine]), y[mine]) * (size / total)).backward()
        opt.step()
        ref_opt.zero_grad()
        (loss_fn(reference(x), y) / total).backward()
        ref_opt.step()
    state, expected = model.module.state_dict(), reference.state_dict()
    assert set(state) == set(expected)
    for key, value in expected.items():
        close(state[key].numpy(), value.numpy(), f"DDP with SyncBatchNorm: {key}", 1e-9)


def mismatches(rank, size):
    refused(
        lambda: nn.parallel.DistributedDataParallel(make_model(0, hidden=16 + (rank == 1))),
        DistributedError,
        "rank 1 differs from rank 0",
        "parameter 0.weight: float32 (16, 6)",
        "parameter 0.weight: float32 (17, 6)",
    )
    # The same tensors in another order: the message named no difference (it compared sets).
    names = ("first", "second") if rank == 0 else ("second", "first")
    refused(
        lambda: nn.parallel.DistributedDataParallel(
            nn.ModuleDict({name: nn.Linear(4, 4) for name in names})
        ),
        DistributedError,
        "rank 1 registers the same tensors in another order than rank 0",
        "parameter second.weight, parameter second.bias, parameter first.weight",
    )
    refused(
        lambda: dist.all_reduce(plugrad.zeros(3 + rank)),
        ShapeError,
        "rank 0: all_reduce of float32 (3,)",
        "rank 1: all_reduce of float32 (4,)",
    )
    refused(
        lambda: (
            dist.broadcast(plugrad.zeros(2), src=0)
            if rank == 0
            else dist.all_reduce(plugrad.zeros(2))
        ),
        ShapeError,
        "broadcast of float32 (2,) root=0",
    )
    # a barrier takes part in the check: it paired with the other rank's all_reduce
    refused(
        lambda: dist.barrier() if rank == 0 else dist.all_reduce(plugrad.zeros(2)),
        ShapeError,
        "rank 0: barrier; rank 1: all_reduce of float32 (2,)",
    )
    # a point-to-point message of another dtype or shape never lands in the tensor
    sent = [
        plugrad.ones((2, 3), dtype=plugrad.int32),  # same bytes, other dtype
        plugrad.ones((3, 2)),  # same bytes, other shape
        plugrad.ones((4, 3)),  # larger
        plugrad.ones((1, 3)),  # smaller
    ]
    expected = [
        (DtypeError, "received int32 (2, 3)"),
        (ShapeError, "received float32 (3, 2)"),
        (ShapeError, "received a larger message"),
        (ShapeError, "received float32 (1, 3)"),
    ]
    for message, (error, phrase) in zip(sent, expected):
        if rank == 0:
            dist.send(message, dst=1)
        elif rank == 1:
            inbox = plugrad.full((2, 3), 7.0)
            wanted = "rank 1 expected float32 (2, 3) from rank 0"
            refused(lambda inbox=inbox: dist.recv(inbox, src=0), error, wanted, phrase,
                    "left as it was")  # fmt: skip
            close(inbox.numpy(), np.full((2, 3), 7.0), "refused recv leaves the tensor")
    if rank == 0:
        dist.send(plugrad.ones((2, 3)), dst=1)
    elif rank == 1:
        inbox = plugrad.zeros((2, 3))
        assert dist.recv(inbox) == 0
        close(inbox.numpy(), np.ones((2, 3)), "recv after refused ones")
    x = plugrad.ones(2)
    dist.all_reduce(x)  # the group still works after the errors
    close(x.numpy(), [size, size], "all_reduce after errors")
    # One more backward pass on rank 0 (an extra batch) than on the others: its gradient
    # all-reduces paired with their next collective, and both went on with wrong numbers.
    model = nn.parallel.DistributedDataParallel(make_model(3))
    batch = plugrad.ones((2, 6))
    model(batch).sum().backward()
    model.zero_grad()
    averaging = "DistributedDataParallel's averaging of gradients"
    if rank == 0:
        refused(lambda: model(batch).sum().backward(), ShapeError, averaging, "rank 1: all_reduce")
    else:
        refused(lambda: dist.all_reduce(plugrad.ones(1)), ShapeError, f"rank 0: {averaging}")
    x = plugrad.ones(2)
    dist.all_reduce(x)
    close(x.numpy(), [size, size], "all_reduce after the extra backward")
    # A rank leaving while another still computes: it left with wrong weights (its last
    # passes paired with the other's earlier ones) while the other waited forever.
    if rank == 0:
        refused(lambda: dist.all_reduce(plugrad.ones(1)), ShapeError, "destroy_process_group")
    else:
        refused(dist.destroy_process_group, ShapeError, "rank 0: all_reduce")
    assert dist.is_initialized()
    # A forward of a model with buffers (broadcast from rank 0 first) on one rank while
    # another is in a collective (an evaluation on rank 0 alone): both waited forever.
    plugrad.manual_seed(5)
    normed = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4)))
    broadcast = "DistributedDataParallel's broadcast of 3 buffers from rank 0"
    if rank == 0:
        refused(lambda: normed(plugrad.ones((2, 6))), ShapeError, broadcast, "rank 1: barrier")
    else:
        refused(dist.barrier, ShapeError, f"rank 0: {broadcast}")
    normed(plugrad.ones((2, 6))).sum().backward()  # in step again: it works
    # A parameter unused on one rank only: that rank kept its own gradient and went on,
    # while the others waited forever for its buckets. Now every rank raises, in backward.
    for cap in (25, 1e-6):  # one bucket, or one per parameter
        layers = _Upto(*make_model(4))
        model = nn.parallel.DistributedDataParallel(layers, bucket_cap_mb=cap)
        batch = plugrad.ones((2, 6))
        model(batch).sum().backward()  # a full pass first: .grad holds its averages
        before = [p.grad.numpy().copy() for p in model.parameters()]

        def partial_pass(model=model, batch=batch, layers=layers):
            layers.upto = None if rank == 0 else 3  # (the last layer unused on rank 1)
            try:
                model(batch).sum().backward()
            finally:
                layers.upto = None

        if rank == 1:
            refused(partial_pass, DistributedError, "rank 1: in this backward pass",
                    "4.bias, 4.weight got no gradient on this rank", "left as it was")  # fmt: skip
        else:
            refused(partial_pass, DistributedError, f"rank {rank}: in this backward pass",
                    "2 parameter(s) got no gradient on another rank")  # fmt: skip
        for p, old in zip(model.parameters(), before):
            close(p.grad.numpy(), old, f"a refused pass leaves .grad (cap {cap})")
        model(batch).sum().backward()  # the next full pass averages again
        for p, old in zip(model.parameters(), before):
            close(p.grad.numpy(), 2 * old, f"the pass after a refused one (cap {cap})")
    x = plugrad.ones(2)
    dist.all_reduce(x)
    close(x.numpy(), [size, size], "all_reduce after the partial backward")


class _FailingLayer(nn.Module):
    """The identity, whose gradient raises while ``failing`` (a hook of its output)."""

    failing = False

    def forward(self, x):
        y = x * 1.0
        y.register_hook(self._check)
        return y

    @staticmethod
    def _check(grad):
        if _FailingLayer.failing:
            raise RuntimeError("backward fails on purpose")


def failed_pass(rank, size):
    """Backward raising part-way on some ranks, which catch the error and go on.

    The ranks that did not fail waited forever for the buckets the failing rank never
    sent, or paired them with its next pass's (wrong numbers, or a raw error where the
    sizes differed). Now every rank raises, with .grad as it was, and goes on.
    """
    batch = plugrad.full((2, 6), rank + 1.0)
    for cap, failing in [
        (25, {size - 1}),
        (1e-6, {size - 1}),
        (1e-6, {0}),
        (1e-6, set(range(size))),
    ]:
        # the failure comes after the last layers' gradients (and buckets, with a tiny cap)
        layers = make_model(5)
        layers.insert(3, _FailingLayer())
        model = nn.parallel.DistributedDataParallel(layers, bucket_cap_mb=cap)
        model(batch).sum().backward()  # a full pass first: .grad holds its averages
        before = [p.grad.numpy().copy() for p in model.parameters()]
        _FailingLayer.failing = rank in failing

        def step(model=model):
            model(batch).sum().backward()

        try:
            if rank in failing:
                refused(step, RuntimeError, "on purpose")
            else:
                refused(step, DistributedError,
                        f"rank {rank}: in this backward pass another rank raised an error",
                        "left as it was")  # fmt: skip
        finally:
            _FailingLayer.failing = False
        for p, old in zip(model.parameters(), before):
            close(p.grad.numpy(), old, f"a failed pass leaves .grad ({cap}, {failing})", rtol=0)
        model(batch).sum().backward()  # the next pass averages again
        for p, old in zip(model.parameters(), before):
            close(p.grad.numpy(), 2 * old, f"the pass after a failed one ({cap}, {failing})")
    _failing_before_the_model(rank, size, batch)
    _skipped_backward(rank, size, batch)
    _higher_order(rank, size)
    x = plugrad.ones(2)
    dist.all_reduce(x)
    close(x.numpy(), [size, size], "all_reduce after the failed passes")


def _backward_failing_at_the_loss(loss):
    """Run ``loss.backward()`` with a hook on ``loss`` that raises: before the model."""
    loss.register_hook(lambda grad: _FailingLayer._check(grad))
    _FailingLayer.failing = True
    try:
        refused(loss.backward, RuntimeError, "on purpose")
    finally:
        _FailingLayer.failing = False


def _failing_before_the_model(rank, size, batch):
    """A backward raising before it reaches the model (a hook on the loss) sent nothing:
    the other ranks' pass paired with its next one, averaging two batches' gradients."""
    model = nn.parallel.DistributedDataParallel(make_model(5))
    model(batch).sum().backward()
    before = [p.grad.numpy().copy() for p in model.parameters()]
    loss = model(batch).sum()
    if rank == size - 1:
        _backward_failing_at_the_loss(loss)
    else:
        refused(loss.backward, DistributedError, "another rank raised an error", "left as it was")
    for p, old in zip(model.parameters(), before):
        close(p.grad.numpy(), old, "a pass failed before the model leaves .grad", rtol=0)
    model(batch).sum().backward()  # the next pass averages again, this batch's gradients
    for p, old in zip(model.parameters(), before):
        close(p.grad.numpy(), 2 * old, "the pass after one failed before the model")


def _skipped_backward(rank, size, batch):
    """A rank that skips the backward of a forward (a bad batch it leaves out alone) is
    found out when the ranks compare their forward passes, rather than its next pass
    pairing with the others' this one."""
    model = nn.parallel.DistributedDataParallel(make_model(5))
    model(batch).sum().backward()
    before = [p.grad.numpy().copy() for p in model.parameters()]
    if rank == 0:
        model(batch)  # a forward with gradients whose backward never runs
    refused(
        lambda: model(batch).sum().backward(), DistributedError,
        "different numbers of forward passes", "plugrad.no_grad()",
    )  # fmt: skip
    for p, old in zip(model.parameters(), before):
        close(p.grad.numpy(), old, "a refused pass leaves .grad", rtol=0)
    model(batch).sum().backward()
    for p, old in zip(model.parameters(), before):
        close(p.grad.numpy(), 2 * old, "the pass after a skipped backward was found")


def abandoned_forward(rank, size):
    """A forward with gradients whose backward is skipped (``if not loss.isfinite():
    continue``) left the model armed: the next backward of a no_sync() forward averaged,
    on the ranks that skipped only, whose all-reduces paired with the others' next
    collective. A backward averages only where it goes through an armed forward's output."""
    loss_fn = nn.CrossEntropyLoss()
    per_rank = 5
    mine = slice(rank * per_rank, (rank + 1) * per_rank)
    model = nn.parallel.DistributedDataParallel(
        make_model(7).to(plugrad.float64), bucket_cap_mb=0.0002
    )
    reference = make_model(7).to(plugrad.float64)
    (x1, y1), (x2, y2), (x3, y3) = batches(3, per_rank, size)

    def expect(what, *batches, share=mine):
        reference.zero_grad()
        for x, y in batches:
            loss_fn(reference(x[share]), y[share]).backward()
        for (n, p), q in zip(model.module.named_parameters(), reference.parameters()):
            close(p.grad.numpy(), q.grad.numpy(), f"{what}: {n}", rtol=1e-9)

    for skipping, kept in [(set(range(size)), False), (set(range(size)), True), ({0}, False)]:
        model.zero_grad()
        skipped = None
        if rank in skipping:
            skipped = loss_fn(model(x1[mine]), y1[mine])  # not finite, say: no backward
            if not kept:
                skipped = None  # (the loop's next loss replaces it)
        with model.no_sync():
            loss_fn(model(x2[mine]), y2[mine]).backward()
        expect(f"a no_sync() pass after a skipped backward ({skipping}, kept {kept})", (x2, y2))
        if rank in skipping and kept:
            # the skipped forward's backward, run late, still averages: no_sync() pass too
            skipped.backward()
            expect("the late backward of the skipped forward", (x2, y2), (x1, y1),
                   share=slice(None))  # fmt: skip
            continue
        step = lambda: loss_fn(model(x3[mine]), y3[mine]).backward()
        if len(skipping) < size:
            # the ranks ran different numbers of forwards: every rank says so, .grad as it was
            before = [p.grad.numpy().copy() for p in model.parameters()]
            refused(step, DistributedError, "different numbers of forward passes")
            for p, old in zip(model.parameters(), before):
                close(p.grad.numpy(), old, "a refused pass leaves the local gradients", 0)
        step()  # averages what every rank accumulated
        expect(f"the pass after ({skipping})", (x2, y2), (x3, y3), share=slice(None))

    # After a skipped backward, a no_sync() backward that raises before it reaches the model
    # on one rank (a hook on the loss) is left by that rank alone as the local pass it is:
    # it sent nothing, and the next pass pairs rightly.
    model.zero_grad()
    loss_fn(model(x1[mine]), y1[mine])  # skipped on every rank, its graph gone
    with model.no_sync():
        loss = loss_fn(model(x2[mine]), y2[mine])
    if rank == size - 1:
        _backward_failing_at_the_loss(loss)
        assert all(p.grad is None for p in model.parameters())
    else:
        loss.backward()
    model.zero_grad()
    loss_fn(model(x3[mine]), y3[mine]).backward()
    expect("the pass after a failed local one", (x3, y3), share=slice(None))
    x = plugrad.ones(2)
    dist.all_reduce(x)
    close(x.numpy(), [size, size], "all_reduce after the skipped backward passes")


def _higher_order(rank, size):
    """backward(create_graph=True) through DDP left in .grad the averaged values with this
    rank's own graph: a gradient penalty on .grad differed on every rank (and from one
    process's). Refused on the ranks that ask for it, the others raise as for any rank
    leaving the pass, .grad is left as it was; a penalty from autograd.grad is averaged."""
    batches = [plugrad.asarray(np.random.default_rng(r).normal(size=(2, 6))) for r in range(size)]
    model = nn.parallel.DistributedDataParallel(
        make_model(5).to(plugrad.float64), bucket_cap_mb=1e-6
    )
    reference = make_model(5).to(plugrad.float64)
    model(batches[rank]).sum().backward()
    before = [p.grad.numpy().copy() for p in model.parameters()]
    for asking in (set(range(size)), {0}):
        loss = (model(batches[rank]) ** 2).sum()
        if rank in asking:
            refused(lambda loss=loss: loss.backward(create_graph=True), NotSupportedError,
                    f"rank {rank}: backward(create_graph=True) through DistributedDataParallel",
                    "does not synchronise higher-order gradients", "plugrad.autograd.grad",
                    "left as it was")  # fmt: skip
        else:
            refused(loss.backward, DistributedError, "another rank raised an error",
                    "left as it was")  # fmt: skip
        for p, old in zip(model.parameters(), before):
            close(p.grad.numpy(), old, f"a refused create_graph pass leaves .grad ({asking})", 0)
            assert p.grad.grad_fn is None
    # a pass restricted with inputs= added this rank's own gradient to .grad before it was
    # refused: it is refused where it reaches the model's output, before any .grad changes
    loss = (model(batches[rank]) ** 2).sum()
    refused(lambda: loss.backward(create_graph=True, inputs=list(model.parameters())),
            NotSupportedError, "does not synchronise", "left as it was")  # fmt: skip
    for p, old in zip(model.parameters(), before):
        close(p.grad.numpy(), old, "a refused create_graph pass with inputs= leaves .grad", 0)
        assert p.grad.grad_fn is None
    # what the error advises: a penalty on autograd.grad's gradients, one averaged backward
    model.zero_grad()
    parameters = list(model.parameters())
    loss = (model(batches[rank]) ** 2).sum()
    grads = plugrad.autograd.grad(loss, parameters, create_graph=True)
    (loss + sum((g**2).sum() for g in grads)).backward()
    for r in range(size):
        mine = (reference(batches[r]) ** 2).sum()
        grads = plugrad.autograd.grad(mine, list(reference.parameters()), create_graph=True)
        ((mine + sum((g**2).sum() for g in grads)) / size).backward()
    for p, q in zip(parameters, reference.parameters()):
        close(p.grad.numpy(), q.grad.numpy(), "a penalty from autograd.grad, averaged", 1e-9)


def progress(rank, size):
    import gc
    import time

    progress = dist.process_group._require().communicator._progress
    assert progress is not None, "no progress thread in a job of several processes"
    big = plugrad.ones(1 << 20)  # 4 MB: several rounds of MPI's protocol
    pokes = progress.pokes
    work = dist.all_reduce(big, async_op=True)
    time.sleep(1.0)  # no MPI call on this thread: only the progress thread moves it along
    assert progress.pokes > pokes, (pokes, progress.pokes)
    # it saw the transfer finish without completing it, and stopped poking
    assert progress.in_flight == 0, progress.in_flight
    pokes = progress.pokes
    time.sleep(0.05)
    assert progress.pokes <= pokes + 1, "the thread kept poking with nothing in flight"
    assert not work._done and work._requests[0].Get_status()
    assert work.wait()
    close(big.numpy()[:3], [size] * 3, "all_reduce moved by the progress thread")
    assert progress.in_flight == 0, progress.in_flight
    dropped = dist.all_reduce(plugrad.ones(3), async_op=True)
    del dropped  # never waited for: the thread still stops once the transfer is over
    gc.collect()
    time.sleep(0.2)
    assert progress.in_flight == 0, progress.in_flight


def fault(rank, size):
    if rank == 1:
        raise ValueError("rank one fails on purpose")
    dist.all_reduce(plugrad.ones(2))  # would wait forever for rank 1


def timeout(rank, size):
    if rank == 0:
        dist.all_reduce(plugrad.ones(2))  # rank 1 never joins: times out after 2 s
    else:
        import time

        time.sleep(60)  # never joins


def objects(rank, size):
    """reduce, and Python objects through the collectives (PyTorch's *_object functions)."""
    for dst in range(size):
        x = plugrad.full((2,), float(rank + 1))
        dist.reduce(x, dst=dst)
        expected = size * (size + 1) / 2 if rank == dst else rank + 1  # others left as they were
        close(x.numpy(), [expected] * 2, f"reduce to {dst}")
    top = plugrad.tensor([rank], dtype=plugrad.int64)
    dist.reduce(top, dst=0, op=dist.ReduceOp.MAX)
    assert top.tolist() == ([size - 1] if rank == 0 else [rank])
    # objects of different sizes on each rank, an empty one, and None
    mine = {"rank": rank, "payload": "x" * (10 * rank), "array": np.arange(rank)}
    gathered = [None] * size
    dist.all_gather_object(gathered, mine)
    for r, got in enumerate(gathered):
        assert got["rank"] == r and got["payload"] == "x" * (10 * r)
        close(got["array"], np.arange(r), "all_gather_object")
    shared = [{"lr": 0.1, "seed": 1234}, None, "", (1, 2.5)] if rank == 1 else [None] * 4
    dist.broadcast_object_list(shared, src=1)
    assert shared == [{"lr": 0.1, "seed": 1234}, None, "", (1, 2.5)]
    collected = [None] * size if rank == 0 else None
    dist.gather_object(rank * 10, collected, dst=0)
    assert collected == ([r * 10 for r in range(size)] if rank == 0 else None)
    refused(lambda: dist.all_gather_object([None] * (size + 1), 1), ValueError,
            f"one place per rank ({size})")  # fmt: skip


SCENARIOS = {
    "sync_batchnorm": sync_batchnorm,
    "collectives": collectives,
    "objects": objects,
    "ddp": ddp,
    "mismatches": mismatches,
    "failed_pass": failed_pass,
    "abandoned_forward": abandoned_forward,
    "progress": progress,
    "fault": fault,
    "timeout": timeout,
}

if __name__ == "__main__":
    scenario = sys.argv[1]
    dist.init_process_group("mpi", timeout=2 if scenario == "timeout" else 60)
    rank, size = dist.get_rank(), dist.get_world_size()
    SCENARIOS[scenario](rank, size)
    dist.barrier()
    print(f"PASS {scenario} rank {rank}", flush=True)
    dist.destroy_process_group()
