"""The ``mpi`` communication library of plugrad.distributed: MPI through mpi4py.

Every operation is one of MPI's non-blocking calls (``Iallreduce``, ``Ibcast``,
...) on the arrays' own memory: NumPy arrays are sent as they are (a
non-contiguous one through a contiguous copy), arrays of other backends
through a host copy. Nothing is pickled. Works with any MPI that mpi4py was
built for: the ``mpich`` wheel from PyPI, Open MPI, or a cluster's own MPI.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from plugrad.distributed.communicator import Communicator, CommunicatorBackend, ReduceOp, Work
from plugrad.errors import DtypeError, InvalidArgumentError, ShapeError
from plugrad.hookspecs import hookimpl

__all__ = ["MPIBackend", "MPICommunicator"]


#: Seconds between two pokes of MPI's progress engine while transfers are in flight, when
#: the machine has a core to spare; ``PLUGRAD_MPI_PROGRESS_INTERVAL`` overrides it, and
#: ``0`` turns the thread off (see docs/distributed.rst).
DEFAULT_PROGRESS_INTERVAL = 1e-3


class _ProgressThread:
    """Moves transfers along while the program computes outside MPI.

    MPI libraries such as MPICH advance a non-blocking collective only while
    the process is inside an MPI call; a long matrix product is not. While at
    least one transfer is in flight, this thread calls ``Iprobe`` on a private
    communicator (nothing is ever sent on it, so it matches nothing and only
    drives the progress engine) every ``interval`` seconds, sleeping in
    between; with nothing in flight it sleeps on a condition and costs nothing.
    It also asks, without completing them, whether the transfers' requests have
    finished (``MPI_Request_get_status``, under each transfer's lock), so that
    it stops as soon as they have, not when their owner next looks; their owner
    completes them.
    """

    def __init__(self, comm: Any, interval: float) -> None:
        self._comm = comm.Dup()
        self.interval = interval
        #: how many times it has poked MPI so far
        self.pokes = 0
        self._in_flight = 0
        self._transfers: list[weakref.ref[_MPIWork]] = []
        self._closed = False
        self._wake = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="plugrad-mpi-progress", daemon=True)
        self._thread.start()

    @property
    def in_flight(self) -> int:
        """The number of transfers started and not yet seen completed (nor dropped)."""
        return self._in_flight

    def started(self, work: _MPIWork) -> None:
        with self._wake:
            self._in_flight += 1
            self._transfers.append(weakref.ref(work))
            if self._in_flight == 1:
                self._wake.notify()

    def finished(self) -> None:
        with self._wake:
            self._in_flight -= 1

    def _run(self) -> None:
        probe, pause, wake = self._comm.Iprobe, time.sleep, self._wake
        while True:
            with wake:
                while not self._in_flight and not self._closed:
                    wake.wait()
                if self._closed:
                    return
                transfers = self._transfers
            probe()
            self.pokes += 1
            pending, work = [], None
            for ref in transfers:
                work = ref()
                if work is not None and not work._finished_in_background():
                    pending.append(ref)
            work = None  # no reference kept while sleeping
            with wake:  # keep the ones started meanwhile
                self._transfers = pending + self._transfers[len(transfers) :]
            pause(self.interval)

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()
        self._thread.join()
        self._comm.Free()


class _MPIWork(Work):
    def __init__(
        self,
        description: str,
        rank: int,
        timeout: float | None,
        requests: list[Any],
        finish: Callable[[list[Any]], Any] | None,
        progress: _ProgressThread | None = None,
    ) -> None:
        super().__init__(description, rank, timeout)
        from mpi4py import MPI

        self._mpi = MPI
        self._requests = requests
        self._statuses = [MPI.Status() for _ in requests]
        #: held while a thread uses the requests: MPI forbids two at once on one request
        self._lock = threading.Lock()
        # Runs once: when the progress thread sees it finished, when it completes, or
        # when it is dropped unfinished.
        self._stop_progress: weakref.finalize[[], Any] | None = None
        if progress is not None:
            stop = weakref.finalize(self, progress.finished)
            self._stop_progress = stop
            progress.started(self)

            def stop_progress() -> None:
                stop()

            self.add_done_callback(stop_progress)
        if finish is not None:
            self.add_done_callback(lambda: setattr(self, "output", finish(self._statuses)))

    def _finished_in_background(self) -> bool:
        """From the progress thread: whether every request has finished (none is completed)."""
        if not self._lock.acquire(blocking=False):
            return False  # its owner is testing or waiting for it right now
        try:
            finished = all(request.Get_status() for request in self._requests)
        finally:
            self._lock.release()
        if finished and self._stop_progress is not None:
            self._stop_progress()
        return finished

    def _poll(self) -> bool:
        with self._lock:
            return bool(self._mpi.Request.Testall(self._requests, self._statuses))

    def _block(self) -> None:
        with self._lock:
            self._mpi.Request.Waitall(self._requests, self._statuses)


class _ReceiveWork(_MPIWork):
    """A receive whose message may be larger than the tensor: refused with a clear error."""

    def __init__(self, *args: Any) -> None:
        *work_args, self._expected = args
        super().__init__(*work_args)

    def _poll(self) -> bool:
        try:
            return super()._poll()
        except self._mpi.Exception as error:
            self._refuse_truncated(error)

    def _block(self) -> None:
        try:
            super()._block()
        except self._mpi.Exception as error:
            self._refuse_truncated(error)

    def _refuse_truncated(self, error: Any) -> NoReturn:
        classes = (error.Get_error_class(), self._mpi.Get_error_class(self._statuses[0].error))
        if self._mpi.ERR_TRUNCATE not in classes:
            raise error
        message = "a larger message than that tensor holds"
        _refuse_message(self.rank, self._expected, self._statuses[0].Get_source(), message, error)


def _header(host: np.ndarray) -> np.ndarray:
    """What a point-to-point message says of its tensor before the data: dtype, ndim, shape."""
    code = int.from_bytes(host.dtype.str.encode().ljust(8, b"\0"), "little")
    return np.array([code, host.ndim, *host.shape], dtype=np.int64)


def _envelope(host: np.ndarray) -> np.ndarray:
    """One message: the header, then the data (a copy; point-to-point is not the hot path)."""
    header = _header(host)
    message = np.empty(header.nbytes + host.nbytes, dtype=np.uint8)
    message[: header.nbytes] = header.view(np.uint8)
    message[header.nbytes :] = host.reshape(-1).view(np.uint8)
    return message


def _described(message: np.ndarray) -> str:
    """The dtype and shape a received message's header names, or its size where it has none."""
    ints = message[: message.nbytes // 8 * 8].view(np.int64)
    if ints.size >= 2 and 0 <= ints[1] <= ints.size - 2:
        try:
            dtype = np.dtype(int(ints[0]).to_bytes(8, "little").rstrip(b"\0").decode())
        except (TypeError, ValueError, UnicodeDecodeError):
            pass
        else:
            return f"{dtype} {tuple(int(n) for n in ints[2 : 2 + ints[1]])}"
    return f"a message of {message.nbytes} bytes"


def _refuse_message(
    rank: int, expected: str, sender: int, received: str, cause: Exception | None = None
) -> NoReturn:
    error = DtypeError if expected.split()[1:] == received.split()[1:] else ShapeError
    raise error(
        f"rank {rank} expected {expected} from rank {sender} and received {received}: send "
        "and receive tensors of one dtype and shape (the receiving tensor is left as it was)"
    ) from cause


class MPICommunicator(Communicator):
    """MPI's communicator for the whole job (a duplicate of ``COMM_WORLD``)."""

    def __init__(
        self, comm: Any, timeout: float | None, progress_interval: float | None = None
    ) -> None:
        from mpi4py import MPI

        self._MPI = MPI
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = timeout
        threaded = MPI.Query_thread() == MPI.THREAD_MULTIPLE
        self._progress = (
            _ProgressThread(comm, progress_interval)
            if progress_interval and self.size > 1 and threaded
            else None
        )
        self._ops = {
            ReduceOp.SUM: MPI.SUM,
            ReduceOp.AVG: MPI.SUM,
            ReduceOp.MAX: MPI.MAX,
            ReduceOp.MIN: MPI.MIN,
            ReduceOp.PRODUCT: MPI.PROD,
        }
        self._bool_ops = {
            ReduceOp.SUM: MPI.LOR,
            ReduceOp.AVG: MPI.LOR,
            ReduceOp.MAX: MPI.LOR,
            ReduceOp.MIN: MPI.LAND,
            ReduceOp.PRODUCT: MPI.LAND,
        }

    # -- arrays in and out --------------------------------------------------------------------

    @staticmethod
    def _host(array: Any) -> tuple[np.ndarray, bool]:
        """A C-contiguous, writable NumPy array with the values; and whether it *is* ``array``."""
        if isinstance(array, np.ndarray):
            if array.flags.c_contiguous and array.flags.writeable:
                return array, True
            return np.ascontiguousarray(array).copy(), False
        if hasattr(array, "get"):  # CuPy: a host copy (no CUDA-aware MPI assumed)
            return np.ascontiguousarray(array.get()), False
        if not hasattr(array, "__dlpack__"):  # Dask: computed, through NumPy's protocol
            return np.array(array, copy=True, order="C"), False
        return np.array(np.from_dlpack(array), copy=True, order="C"), False

    @staticmethod
    def _like(host: np.ndarray, original: Any) -> Any:
        """``host`` as an array of ``original``'s backend (itself for NumPy)."""
        if isinstance(original, np.ndarray):
            return host
        if hasattr(original, "get"):
            import cupy

            return cupy.asarray(host)
        import array_api_compat

        namespace = array_api_compat.array_namespace(original)
        return namespace.asarray(host, device=array_api_compat.device(original))

    def _op(self, op: ReduceOp, host: np.ndarray) -> Any:
        return self._bool_ops[op] if host.dtype == np.bool_ else self._ops[op]

    def _work(
        self, what: str, requests: list[Any], finish: Callable[[list[Any]], Any] | None
    ) -> Work:
        return _MPIWork(what, self.rank, self.timeout, requests, finish, self._progress)

    def _in_place(self, host: np.ndarray, same: bool, original: Any) -> Callable[[Any], Any]:
        if same:
            return lambda statuses: original
        if isinstance(original, np.ndarray) and original.flags.writeable:

            def write_back(statuses: Any) -> Any:
                original[...] = host
                return original

            return write_back
        return lambda statuses: self._like(host, original)

    # -- operations ------------------------------------------------------------------------------

    def supports(self, array: Any) -> str | None:
        if isinstance(array, np.ndarray) or hasattr(array, "__dlpack__") or hasattr(array, "get"):
            return None
        if hasattr(array, "__array__"):  # computed into host memory first (Dask)
            return None
        return (
            f"{type(array).__name__} arrays speak neither DLPack nor NumPy's array protocol "
            "(__array__)"
        )

    def allreduce(self, array: Any, op: ReduceOp) -> Work:
        host, same = self._host(array)
        request = self.comm.Iallreduce(self._MPI.IN_PLACE, host, self._op(op, host))
        store = self._in_place(host, same, array)
        if op is ReduceOp.AVG:
            size = self.size

            def average(statuses: Any) -> Any:
                host[...] /= size
                return store(statuses)

            return self._work(f"all_reduce(AVG) of {host.dtype} {host.shape}", [request], average)
        return self._work(f"all_reduce({op.name}) of {host.dtype} {host.shape}", [request], store)

    def broadcast(self, array: Any, root: int) -> Work:
        host, same = self._host(array)
        request = self.comm.Ibcast(host, root=root)
        return self._work(
            f"broadcast from rank {root} of {host.dtype} {host.shape}",
            [request],
            self._in_place(host, same, array),
        )

    def allgather(self, array: Any) -> Work:
        host, _ = self._host(array)
        out = np.empty((self.size, *host.shape), dtype=host.dtype)
        request = self.comm.Iallgather(host, out)
        return self._work(
            f"all_gather of {host.dtype} {host.shape}",
            [request],
            lambda statuses: self._like(out, array),
        )

    def reduce_scatter(self, array: Any, op: ReduceOp) -> Work:
        host, _ = self._host(array)
        out = np.empty(host.shape[1:], dtype=host.dtype)
        request = self.comm.Ireduce_scatter_block(host, out, self._op(op, host))
        size = self.size

        def finish(statuses: Any) -> Any:
            if op is ReduceOp.AVG:
                out[...] /= size
            return self._like(out, array)

        return self._work(
            f"reduce_scatter({op.name}) of {out.dtype} {out.shape}", [request], finish
        )

    def gather(self, array: Any, root: int) -> Work:
        host, _ = self._host(array)
        out = np.empty((self.size, *host.shape), dtype=host.dtype) if self.rank == root else None
        request = self.comm.Igather(host, out, root=root)
        return self._work(
            f"gather to rank {root} of {host.dtype} {host.shape}",
            [request],
            lambda statuses: None if out is None else self._like(out, array),
        )

    def scatter(self, out: Any, rows: Any | None, root: int) -> Work:
        host, same = self._host(out)
        send = self._host(rows)[0] if rows is not None else None
        request = self.comm.Iscatter(send, host, root=root)
        return self._work(
            f"scatter from rank {root} of {host.dtype} {host.shape}",
            [request],
            self._in_place(host, same, out),
        )

    def send(self, array: Any, peer: int, tag: int) -> Work:
        host, _ = self._host(array)
        message = _envelope(host)
        request = self.comm.Isend(message, dest=peer, tag=tag)
        return self._work(f"send to rank {peer} of {host.dtype} {host.shape}", [request], None)

    def recv(self, out: Any, peer: int | None, tag: int) -> Work:
        # Into a message buffer, never into ``out``'s memory: a message of another dtype
        # or shape is refused before anything is written.
        host, same = self._host(out)
        header = _header(host)
        message = np.empty(header.nbytes + host.nbytes, dtype=np.uint8)
        source = self._MPI.ANY_SOURCE if peer is None else peer
        request = self.comm.Irecv(message, source=source, tag=tag)
        expected = f"{host.dtype} {host.shape}"

        def finish(statuses: Any) -> Any:
            status = statuses[0]
            sender = status.Get_source()
            received = message[: status.Get_count(self._MPI.BYTE)]
            if received.nbytes != message.nbytes or not np.array_equal(
                received[: header.nbytes].view(np.int64), header
            ):
                _refuse_message(self.rank, expected, sender, _described(received))
            host[...] = received[header.nbytes :].view(host.dtype).reshape(host.shape)
            return self._in_place(host, same, out)(statuses), sender

        sender = "any rank" if peer is None else f"rank {peer}"
        return _ReceiveWork(
            f"recv from {sender} of {expected}", self.rank, self.timeout, [request], finish,
            self._progress, expected,
        )  # fmt: skip

    def barrier(self) -> Work:
        return self._work("barrier", [self.comm.Ibarrier()], None)

    def allgather_ints(self, values: tuple[int, ...]) -> Work:
        mine = np.asarray(values, dtype=np.int64)
        out = np.empty((self.size, mine.size), dtype=np.int64)
        request = self.comm.Iallgather(mine, out)
        return self._work(
            "all_gather of call signatures",
            [request],
            lambda statuses: [tuple(int(v) for v in row) for row in out],
        )

    def abort(self, code: int) -> NoReturn:
        self.comm.Abort(code)
        raise SystemExit(code)  # not reached: MPI_Abort ends the process

    def close(self) -> None:
        if self._progress is not None:
            self._progress.close()
        self.comm.Free()


class MPIBackend(CommunicatorBackend):
    """MPI through mpi4py: ``init_process_group("mpi")``; launched by ``mpiexec`` or ``srun``."""

    name = "mpi"

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("mpi4py") is None:
            return (
                "mpi4py is not installed; from a plugrad checkout, pip install '.[distributed]' "
                "(mpi4py and the mpich wheel, which brings mpiexec), or build mpi4py against "
                "your cluster's MPI"
            )
        return None

    def connect(self, timeout: float | None) -> MPICommunicator:
        from mpi4py import MPI

        world = MPI.COMM_WORLD.Dup()
        node = world.Split_type(MPI.COMM_TYPE_SHARED)
        processes_on_node = node.Get_size()
        node.Free()
        return MPICommunicator(world, timeout, _progress_interval(processes_on_node))


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _progress_interval(processes_on_node: int) -> float | None:
    """The progress thread's interval, or ``None`` for no thread.

    Unset, the thread runs only when this machine has more cores than plugrad
    processes: where processes fill every core, the thread's wake-ups take
    time from computing and measured slower than none (docs/distributed.rst).
    """
    text = os.environ.get("PLUGRAD_MPI_PROGRESS_INTERVAL", "").strip()
    if not text:
        spare_core = _usable_cores() > processes_on_node
        return DEFAULT_PROGRESS_INTERVAL if spare_core else None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise InvalidArgumentError(
            f"PLUGRAD_MPI_PROGRESS_INTERVAL={text!r}: give the seconds between two progress "
            "pokes (a number >= 0; 0 turns the progress thread off)"
        )
    return value or None


@hookimpl
def plugrad_communicators() -> list[CommunicatorBackend]:
    return [MPIBackend()]
