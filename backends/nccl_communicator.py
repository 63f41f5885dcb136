"""The ``nccl`` communication library of plugrad.distributed: NCCL through CuPy.

One process per GPU (each process uses its current CuPy device; pick it
before ``init_process_group``, e.g. from the local rank). The processes find
each other through MPI (mpi4py): rank 0 creates NCCL's unique id and
broadcasts it. Every operation is queued on a stream of its own and its work
handle waits on a CUDA event, so the host never blocks until ``wait()``.
Arrays must be CuPy arrays on the current device.
"""

from __future__ import annotations

import importlib.util
from typing import Any, NoReturn

from plugrad.distributed.communicator import Communicator, CommunicatorBackend, ReduceOp, Work
from plugrad.errors import InvalidArgumentError
from plugrad.hookspecs import hookimpl

__all__ = ["NCCLBackend", "NCCLCommunicator"]


class _EventWork(Work):
    def __init__(self, description: str, rank: int, timeout: float | None, event: Any) -> None:
        super().__init__(description, rank, timeout)
        self._event = event

    def _poll(self) -> bool:
        return bool(self._event.done)

    def _block(self) -> None:
        self._event.synchronize()


class NCCLCommunicator(Communicator):
    """NCCL's communicator over every rank, with MPI for start-up and for aborting."""

    def __init__(self, timeout: float | None) -> None:
        import cupy
        from cupy.cuda import nccl
        from mpi4py import MPI

        self._cupy = cupy
        self._nccl = nccl
        self._mpi = MPI.COMM_WORLD.Dup()
        self.rank = self._mpi.Get_rank()
        self.size = self._mpi.Get_size()
        self.timeout = timeout
        unique_id = nccl.get_unique_id() if self.rank == 0 else None
        unique_id = self._mpi.bcast(unique_id, root=0)
        self.comm = nccl.NcclCommunicator(self.size, unique_id, self.rank)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self._types = {
            "int8": nccl.NCCL_INT8,
            "uint8": nccl.NCCL_UINT8,
            "int32": nccl.NCCL_INT32,
            "uint32": nccl.NCCL_UINT32,
            "int64": nccl.NCCL_INT64,
            "uint64": nccl.NCCL_UINT64,
            "float16": nccl.NCCL_FLOAT16,
            "float32": nccl.NCCL_FLOAT32,
            "float64": nccl.NCCL_FLOAT64,
        }
        self._ops = {
            ReduceOp.SUM: nccl.NCCL_SUM,
            ReduceOp.AVG: getattr(nccl, "NCCL_AVG", nccl.NCCL_SUM),
            ReduceOp.MAX: nccl.NCCL_MAX,
            ReduceOp.MIN: nccl.NCCL_MIN,
            ReduceOp.PRODUCT: nccl.NCCL_PROD,
        }
        self._native_avg = hasattr(nccl, "NCCL_AVG")

    def supports(self, array: Any) -> str | None:
        if not isinstance(array, self._cupy.ndarray):
            return f"NCCL moves CuPy arrays (tensors on 'cupy'), not {type(array).__name__}"
        if array.dtype.name not in self._types:
            return f"NCCL has no {array.dtype.name} type; convert the tensor first"
        return None

    def _work(self, what: str) -> Work:
        event = self._cupy.cuda.Event(block=False, disable_timing=True)
        event.record(self.stream)
        return _EventWork(what, self.rank, self.timeout, event)

    def _prepare(self, array: Any) -> Any:
        # Queue after whatever the default stream still computes into the array.
        self.stream.wait_event(self._cupy.cuda.get_current_stream().record())
        return self._cupy.ascontiguousarray(array)

    def _store(self, work: Work, out: Any, original: Any) -> Work:
        if out is not original:
            work.output = out
        else:
            work.output = original
        return work

    def _divide_if_needed(self, out: Any, op: ReduceOp) -> None:
        if op is ReduceOp.AVG and not self._native_avg:
            with self.stream:
                out /= self.size

    def allreduce(self, array: Any, op: ReduceOp) -> Work:
        buf = self._prepare(array)
        self.comm.allReduce(buf.data.ptr, buf.data.ptr, buf.size, self._types[buf.dtype.name],
                            self._ops[op], self.stream.ptr)  # fmt: skip
        self._divide_if_needed(buf, op)
        return self._store(
            self._work(f"all_reduce({op.name}) of {buf.dtype} {buf.shape}"), buf, array
        )

    def broadcast(self, array: Any, root: int) -> Work:
        buf = self._prepare(array)
        self.comm.bcast(buf.data.ptr, buf.size, self._types[buf.dtype.name], root, self.stream.ptr)
        return self._store(self._work(f"broadcast from rank {root}"), buf, array)

    def allgather(self, array: Any) -> Work:
        buf = self._prepare(array)
        out = self._cupy.empty((self.size, *buf.shape), dtype=buf.dtype)
        self.comm.allGather(buf.data.ptr, out.data.ptr, buf.size, self._types[buf.dtype.name],
                            self.stream.ptr)  # fmt: skip
        return self._store(self._work(f"all_gather of {buf.dtype} {buf.shape}"), out, None)

    def reduce_scatter(self, array: Any, op: ReduceOp) -> Work:
        buf = self._prepare(array)
        out = self._cupy.empty(buf.shape[1:], dtype=buf.dtype)
        self.comm.reduceScatter(buf.data.ptr, out.data.ptr, out.size, self._types[buf.dtype.name],
                                self._ops[op], self.stream.ptr)  # fmt: skip
        self._divide_if_needed(out, op)
        return self._store(self._work(f"reduce_scatter({op.name})"), out, None)

    def _point_to_point(self, pairs: list[tuple[str, Any, int]]) -> None:
        nccl = self._nccl
        nccl.groupStart()
        for kind, buf, peer in pairs:
            call = self.comm.send if kind == "send" else self.comm.recv
            call(buf.data.ptr, buf.size, self._types[buf.dtype.name], peer, self.stream.ptr)
        nccl.groupEnd()

    def gather(self, array: Any, root: int) -> Work:
        buf = self._prepare(array)
        out = None
        if self.rank == root:
            out = self._cupy.empty((self.size, *buf.shape), dtype=buf.dtype)
            pairs = [("recv", out[r], r) for r in range(self.size) if r != root]
            with self.stream:
                out[root] = buf
            self._point_to_point(pairs)
        else:
            self._point_to_point([("send", buf, root)])
        return self._store(self._work(f"gather to rank {root}"), out, None)

    def scatter(self, out: Any, rows: Any | None, root: int) -> Work:
        buf = self._prepare(out)
        if self.rank == root:
            rows = self._cupy.ascontiguousarray(rows)
            with self.stream:
                buf[...] = rows[root]
            self._point_to_point([("send", rows[r], r) for r in range(self.size) if r != root])
        else:
            self._point_to_point([("recv", buf, root)])
        return self._store(self._work(f"scatter from rank {root}"), buf, out)

    def send(self, array: Any, peer: int, tag: int) -> Work:
        buf = self._prepare(array)
        self._point_to_point([("send", buf, peer)])
        return self._work(f"send to rank {peer}")

    def recv(self, out: Any, peer: int | None, tag: int) -> Work:
        if peer is None:
            raise InvalidArgumentError("NCCL receives from a named rank only; pass src=")
        buf = self._prepare(out)
        self._point_to_point([("recv", buf, peer)])
        work = self._work(f"recv from rank {peer}")
        work.output = (buf, peer)
        return work

    def barrier(self) -> Work:
        flag = self._cupy.zeros(1, dtype=self._cupy.int32)
        return self.allreduce(flag, ReduceOp.SUM)

    def allgather_ints(self, values: tuple[int, ...]) -> Work:
        mine = self._cupy.asarray(values, dtype=self._cupy.int64)
        work = self.allgather(mine)

        def to_host() -> None:
            work.output = [tuple(int(v) for v in row) for row in work.output.get()]

        work.add_done_callback(to_host)
        return work

    def abort(self, code: int) -> NoReturn:
        self.comm.abort()
        self._mpi.Abort(code)
        raise SystemExit(code)

    def close(self) -> None:
        self.stream.synchronize()
        self.comm.destroy()
        self._mpi.Free()


class NCCLBackend(CommunicatorBackend):
    """NCCL through CuPy: ``init_process_group("nccl")``; one process per GPU."""

    name = "nccl"

    def unavailable_reason(self) -> str | None:
        missing = [m for m in ("cupy", "mpi4py") if importlib.util.find_spec(m) is None]
        if missing:
            return (
                f"{' and '.join(missing)} not installed; NCCL needs CuPy and mpi4py to start up "
                "(from a plugrad checkout: pip install '.[cuda]' '.[distributed]')"
            )
        return None

    def connect(self, timeout: float | None) -> NCCLCommunicator:
        try:
            from cupy.cuda import nccl  # noqa: F401
        except ImportError as exc:
            raise RuntimeError(f"CuPy was built without NCCL: {exc}") from exc
        return NCCLCommunicator(timeout)


@hookimpl
def plugrad_communicators() -> list[CommunicatorBackend]:
    return [NCCLBackend()]
