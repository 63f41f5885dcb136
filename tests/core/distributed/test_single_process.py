"""plugrad.distributed without mpiexec: the API's checks, the plugin lookup, and a group of one."""

from __future__ import annotations

import datetime

import numpy as np
import pytest

import plugrad
import plugrad.distributed as dist
from plugrad import engine
from plugrad.distributed.communicator import CompletedWork, Work
from plugrad.errors import DistributedError, DistributedTimeoutError, NotSupportedError


def test_nothing_works_before_init():
    assert not dist.is_initialized()
    with pytest.raises(DistributedError, match="init_process_group"):
        dist.get_rank()
    with pytest.raises(DistributedError, match="init_process_group"):
        dist.all_reduce(plugrad.ones(2))


def test_builtin_communication_libraries_are_plugins():
    found = dist.communicator_backends()
    assert found["mpi"][1] == "plugrad.backends.mpi_communicator"
    assert found["nccl"][1] == "plugrad.backends.nccl_communicator"


def test_unknown_backend_and_init_method_are_refused():
    with pytest.raises(ValueError, match="registered: mpi, nccl"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="init_method"):
        dist.init_process_group("mpi", init_method="tcp://localhost:1234")
    with pytest.raises(ValueError, match="timeout"):
        dist.init_process_group("mpi", timeout=-1)
    assert not dist.is_initialized()


class _Never(Work):
    def _poll(self):
        return False


def test_work_timeout_names_the_rank_and_the_transfer():
    work = _Never("all_reduce of float32 (3,)", rank=4)
    with pytest.raises(DistributedTimeoutError, match=r"rank 4: all_reduce of float32 \(3,\)"):
        work.wait(timeout=0.01)
    assert not work.is_completed()
    done = CompletedWork("x", 0, output=5)
    seen = []
    done.add_done_callback(lambda: seen.append(1))
    assert done.wait() and done.is_completed() and seen == [1]


def test_work_takes_pytorch_calls():
    # A timedelta as PyTorch's wait() takes (TypeError: float + timedelta); zero, PyTorch's
    # default, is the group's timeout rather than none at all.
    work = _Never("all_reduce of float32 (3,)", rank=0, timeout=0.01)
    with pytest.raises(DistributedTimeoutError, match=r"within 0\.02 s"):
        work.wait(datetime.timedelta(milliseconds=20))
    with pytest.raises(DistributedTimeoutError, match=r"within 0\.01 s"):
        work.wait(datetime.timedelta(0))
    with pytest.raises(TypeError, match=r"seconds or a datetime\.timedelta"):
        work.wait("5")
    with pytest.raises(ValueError, match=">= 0"):
        work.wait(-1)
    # result() is PyTorch's method (the raw output was an attribute of that name: not
    # callable), and get_future() a future of it
    x = plugrad.ones(2)
    done = CompletedWork("all_reduce", 0)
    done._tensors = [x]
    (written,) = done.result()
    assert written is x
    future = done.get_future()
    assert future.done() and future.value()[0] is x and future.wait()[0] is x
    assert future.then(lambda f: f.value()[0].sum().item()).wait() == 2.0
    failing = future.then(lambda f: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.wait()
    # a communicator plugin that sets the raw output under its old name is told, rather
    # than the tensors silently keeping their values
    with pytest.raises(plugrad.errors.PluginOutputError, match=r"work\.output"):
        done.result = np.ones(2)
    pending = _Never("recv of float32 (2,)", rank=0).get_future()
    assert not pending.done()
    with pytest.raises(plugrad.errors.CallOrderError, match="call wait"):
        pending.value()


def test_a_group_of_one_process():
    pytest.importorskip("mpi4py", reason="the mpi communication library needs mpi4py")
    dist.init_process_group("mpi", world_size=1, rank=0)
    try:
        assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
        assert dist.get_backend() == "mpi"
        x = plugrad.tensor([1.0, 2.0])
        dist.all_reduce(x, op=dist.ReduceOp.AVG)
        assert x.tolist() == [1.0, 2.0]
        with pytest.raises(DistributedError, match="already initialized"):
            dist.init_process_group("mpi")
        with pytest.raises(plugrad.errors.DtypeError, match="AVG"):
            dist.all_reduce(plugrad.tensor([1, 2]), op=dist.ReduceOp.AVG)
        for op in (dist.ReduceOp.MAX, dist.ReduceOp.MIN):  # MPI's own error came through raw
            with pytest.raises(plugrad.errors.DtypeError, match="not ordered"):
                dist.all_reduce(plugrad.tensor([1 + 1j]), op=op)
        with pytest.raises(TypeError, match="ReduceOp"):
            dist.all_reduce(x, op="sum")
        with pytest.raises(ValueError, match="src"):
            dist.broadcast(x, src=1)
        with pytest.raises(ValueError, match="group=None"):
            dist.all_reduce(x, group="subgroup")
        model = plugrad.nn.Linear(3, 2)
        ddp = plugrad.nn.parallel.DistributedDataParallel(model)
        ddp(plugrad.ones((4, 3))).sum().backward()
        assert model.weight.grad.shape == (2, 3)
        with pytest.raises(ValueError, match="find_unused_parameters"):
            plugrad.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
        # A parameter that got no gradient is refused at the end of the pass (its bucket was
        # never averaged), naming it, with .grad put back as it was; the next pass works.
        unused = plugrad.nn.Linear(2, 2)

        class FirstOnly(plugrad.nn.Sequential):
            def forward(self, x):
                return self[0](x) if self.first_only else super().forward(x)

        sequence = FirstOnly(model, unused)
        pair = plugrad.nn.parallel.DistributedDataParallel(sequence)
        previous = model.weight.grad.numpy().copy()
        sequence.first_only = True
        with pytest.raises(DistributedError, match=r"1\.bias, 1\.weight got no gradient"):
            pair(plugrad.ones((4, 3))).sum().backward()
        np.testing.assert_array_equal(model.weight.grad.numpy(), previous)
        assert unused.weight.grad is None
        sequence.first_only = False
        expected = plugrad.autograd.grad(pair.module(plugrad.ones((4, 3))).sum(), model.weight)
        pair(plugrad.ones((4, 3))).sum().backward()
        np.testing.assert_allclose(model.weight.grad.numpy(), previous + expected[0].numpy())
        assert unused.weight.grad is not None
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()


class _FailInBackward(plugrad.Function):
    fail = False

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        if _FailInBackward.fail:
            raise RuntimeError("backward fails on purpose")
        return g


def test_ddp_in_a_group_of_one_buckets_during_backward_and_recovers_from_a_failed_pass():
    pytest.importorskip("mpi4py", reason="the mpi communication library needs mpi4py")
    import gc
    import weakref

    nn = plugrad.nn
    dist.init_process_group("mpi", world_size=1, rank=0)
    try:
        plugrad.manual_seed(0)
        first, second = nn.Linear(3, 4), nn.Linear(4, 2)
        reference = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
        reference.load_state_dict(nn.Sequential(first, second).state_dict())

        class Model(nn.Module):
            def __init__(self, first, second):
                super().__init__()
                self.first, self.second = first, second

            def forward(self, x):
                return self.second(_FailInBackward.apply(self.first(x)))

        # a tiny cap: one bucket per parameter, each sent as soon as its gradient is final
        ddp = nn.parallel.DistributedDataParallel(Model(first, second), bucket_cap_mb=1e-6)
        assert len(ddp._buckets) == 4
        launched = []
        probe = [first.weight]
        original = ddp._communicator.allreduce

        def allreduce(buffer, op):
            launched.append(probe[0].grad is None)
            return original(buffer, op)

        ddp._communicator.allreduce = allreduce
        x = plugrad.asarray(np.arange(15.0, dtype=np.float32).reshape(5, 3) / 10)
        (ddp(x) ** 2).sum().backward()
        (reference(x) ** 2).sum().backward()
        # all four sent while .grad was still unwritten, i.e. during the pass
        assert launched == [True] * 4
        for p, q in zip(ddp.module.parameters(), reference.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)

        _FailInBackward.fail = True
        ddp.zero_grad()
        with pytest.raises(RuntimeError, match="on purpose"):
            ddp(x).sum().backward()
        _FailInBackward.fail = False
        # the failed pass sent its buckets (another rank would wait for them) and left
        # every .grad as it was, the second layer's too, which it had reached
        assert all(p.grad is None for p in ddp.parameters())
        assert not any(b.pieces or b.work is not None for b in ddp._buckets)
        (ddp(x) ** 2).sum().backward()  # the next pass works again
        for p, q in zip(ddp.module.parameters(), reference.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)
        watched = [id(p) for p in ddp.parameters()]
        assert all(key in engine._ready_callbacks for key in watched)
        collected = weakref.ref(ddp)
        probe.clear()
        del ddp, first, second, p, q
        gc.collect()
        # the engine's callbacks do not keep the model alive, and go with it
        assert collected() is None
        assert not any(key in engine._ready_callbacks for key in watched)
    finally:
        _FailInBackward.fail = False
        dist.destroy_process_group()


def _shapes_sent(ddp):
    """The shapes of the buffers ``ddp`` all-reduces from now on, as a list that grows."""
    sent = []
    original = ddp._communicator.allreduce

    def allreduce(buffer, op):
        sent.append(buffer.shape)
        return original(buffer, op)

    ddp._communicator.allreduce = allreduce
    return sent


def test_ddp_in_a_group_of_one_averages_only_backward_passes_through_its_armed_forwards():
    pytest.importorskip("mpi4py", reason="the mpi communication library needs mpi4py")
    nn = plugrad.nn
    dist.init_process_group("mpi", world_size=1, rank=0)
    try:
        plugrad.manual_seed(0)
        ddp = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)))
        sent = _shapes_sent(ddp)
        x = plugrad.ones((5, 3))
        # A forward whose backward is skipped (its loss not finite) left the model armed:
        # the next no_sync() pass averaged, kept graph or not.
        for kept in (False, True):
            skipped = ddp(x).sum()
            if not kept:
                del skipped
            ddp.zero_grad()
            with ddp.no_sync():
                ddp(x).sum().backward()
            assert sent == [], kept
        # the kept forward's backward, run late, averages; a second one through its retained
        # graph does not (PyTorch's), nor one of a forward from before the last averaging
        skipped.backward(retain_graph=True)
        assert len(sent) == 1
        skipped.backward(retain_graph=True)
        assert len(sent) == 1
        loss = ddp(x).sum()
        loss.backward()
        assert len(sent) == 2
        skipped.backward()
        assert len(sent) == 2
        # A gradient penalty's autograd.grad through an armed forward averages nothing and
        # leaves the backward to come averaging.
        loss = ddp(x).sum()
        grads = plugrad.autograd.grad(loss, list(ddp.parameters()), create_graph=True)
        assert len(sent) == 2
        (loss + sum((g**2).sum() for g in grads)).backward()
        assert len(sent) == 3
        # backward(create_graph=True, inputs=...) is refused before any .grad changes: it
        # added this rank's own gradient first
        before = [p.grad.numpy().copy() for p in ddp.parameters()]
        loss = ddp(x).sum()
        with pytest.raises(NotSupportedError, match="left as it was"):
            loss.backward(create_graph=True, inputs=list(ddp.parameters()))
        for p, old in zip(ddp.parameters(), before):
            np.testing.assert_array_equal(p.grad.numpy(), old)
            assert p.grad.grad_fn is None
        ddp.zero_grad()
        with pytest.raises(NotSupportedError, match="left as it was"):
            ddp(x).sum().backward(create_graph=True, inputs=[ddp.module[0].weight])
        assert all(p.grad is None for p in ddp.parameters())
        sent.clear()  # (each refusal sent what ranks that average would wait for)
        ddp(x).sum().backward()  # the next pass averages
        assert len(sent) == 1
    finally:
        dist.destroy_process_group()


def test_compiled_ddp_averages_at_every_call():
    # A replay skips forward's Python, which arms the averaging: the compiled model averaged
    # its first backward only, each process then training on its own gradients. Its hook
    # on the output's grad_fn makes it run eagerly.
    pytest.importorskip("mpi4py", reason="the mpi communication library needs mpi4py")
    nn = plugrad.nn
    dist.init_process_group("mpi", world_size=1, rank=0)
    try:
        ddp = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)))
        sent = _shapes_sent(ddp)
        compiled = plugrad.compile(ddp)
        x = plugrad.ones((5, 3))
        with pytest.warns(plugrad.errors.CompileWarning, match="grad_fn hook"):
            compiled(x).sum().backward()
        for step in range(2, 4):
            compiled(x).sum().backward()
            assert len(sent) == step
    finally:
        dist.destroy_process_group()


def test_sync_batch_norm_in_a_group_of_one_is_batch_norm_without_communication():
    pytest.importorskip("mpi4py", reason="the mpi communication library needs mpi4py")
    nn = plugrad.nn
    dist.init_process_group("mpi", world_size=1, rank=0)
    try:
        communicator = dist.process_group._require().communicator

        def refused(*args):
            raise AssertionError("a group of one process has no one to send to")

        communicator.allgather = communicator.allreduce = refused
        synced, reference = nn.SyncBatchNorm(3), nn.BatchNorm2d(3)
        batch = np.random.default_rng(0).normal(size=(4, 3, 2, 2)).astype(np.float32)
        results = []
        for norm in (synced, reference):
            x = plugrad.asarray(batch, requires_grad=True)
            out = norm(x)
            (out * out).sum().backward()
            results.append((out.detach().numpy(), x.grad.numpy()))
        for ours, expected in zip(*results):
            np.testing.assert_array_equal(ours, expected)
        np.testing.assert_array_equal(synced.running_var.numpy(), reference.running_var.numpy())
    finally:
        dist.destroy_process_group()


def test_ddp_needs_a_group():
    with pytest.raises(DistributedError, match="init_process_group"):
        plugrad.nn.parallel.DistributedDataParallel(plugrad.nn.Linear(2, 2))


@pytest.mark.skipif(
    plugrad.backends.registry.backend_status("cupy") is not None,
    reason="the nccl communication library needs CuPy and a GPU; without one only the "
    "MPI library is exercised",
)
def test_nccl_group_of_one_on_a_gpu():
    pytest.importorskip("mpi4py", reason="nccl starts up through MPI")
    dist.init_process_group("nccl")
    try:
        x = plugrad.tensor([1.0, 2.0], backend="cupy")
        dist.all_reduce(x)
        assert x.tolist() == [1.0, 2.0]
        gathered = [plugrad.zeros(2, backend="cupy")]
        dist.all_gather(gathered, x)
        assert gathered[0].tolist() == [1.0, 2.0]
    finally:
        dist.destroy_process_group()
