"""What a communication library plugin implements: a backend description, a
connected communicator that moves raw arrays, and the work handle of a transfer.

A plugin (see :func:`plugrad.hookspecs.plugrad_communicators`) subclasses
:class:`CommunicatorBackend` and :class:`Communicator`, and returns
:class:`Work` handles from every operation. Operations are non-blocking: they
start the transfer and return at once. Each takes and returns raw arrays of
the backends it supports; :mod:`plugrad.distributed` does everything about
tensors (checks, agreement across ranks, putting results back).
"""

from __future__ import annotations

import datetime
import enum
import time
from collections.abc import Callable
from typing import Any, NoReturn

from ..errors import (
    ArgumentError,
    CallOrderError,
    DistributedTimeoutError,
    InvalidArgumentError,
    PluginOutputError,
)

__all__ = ["Communicator", "CommunicatorBackend", "Future", "ReduceOp", "Work"]


class ReduceOp(enum.Enum):
    """How :func:`~plugrad.distributed.all_reduce` and friends combine the ranks' values.

    Examples
    --------
    >>> from plugrad.distributed import ReduceOp
    >>> ReduceOp.SUM, ReduceOp.AVG.name
    (<ReduceOp.SUM: 'sum'>, 'AVG')
    """

    SUM = "sum"
    AVG = "avg"
    MAX = "max"
    MIN = "min"
    PRODUCT = "product"


class Work:
    """The handle of a transfer in flight: ``wait()`` for it, or ask ``is_completed()``.

    As PyTorch's: ``result()`` gives the tensors the transfer wrote, and
    ``get_future()`` a :class:`Future` of them.

    A plugin subclasses it and implements :meth:`_poll` (has the transfer
    finished? never blocks) and :meth:`_block` (wait without limit); it may set
    :attr:`output` in a done-callback. Callbacks added with
    :meth:`add_done_callback` run once, in order, when completion is first seen.

    Parameters
    ----------
    description : str
        What the transfer is (``"all_reduce of float32 (1024,)"``), for error messages.
    rank : int
        The rank of this process, for error messages.
    timeout : float, optional
        Seconds :meth:`wait` allows by default (``None``: no limit).
    """

    def __init__(self, description: str, rank: int, timeout: float | None = None) -> None:
        self.description = description
        self.rank = rank
        self.timeout = timeout
        #: The raw output array(s) of the transfer, once completed (plugin-defined).
        self.output: Any = None
        #: The tensors the transfer writes, which result() gives (set by plugrad.distributed).
        self._tensors: list[Any] = []
        self._callbacks: list[Callable[[], None]] = []
        self._done = False

    # -- what a plugin implements -----------------------------------------------------------

    def _poll(self) -> bool:
        """Return whether the transfer has finished, without blocking."""
        raise NotImplementedError

    def _block(self) -> None:
        """Wait until the transfer has finished."""
        while not self._poll():
            time.sleep(1e-4)

    # -- the public face ---------------------------------------------------------------------

    def add_done_callback(self, callback: Callable[[], None]) -> None:
        """Run ``callback()`` when the transfer completes (at once if it already has)."""
        if self._done:
            callback()
        else:
            self._callbacks.append(callback)

    def is_completed(self) -> bool:
        """Whether the transfer has finished (never blocks); the results are in place if so."""
        if not self._done and self._poll():
            self._complete()
        return self._done

    def wait(self, timeout: float | datetime.timedelta | None = None) -> bool:
        """Block until the transfer has finished and its results are in place; return ``True``.

        Parameters
        ----------
        timeout : float or datetime.timedelta, optional
            Seconds (or a ``timedelta``, as PyTorch's) to allow. ``None``, or zero
            (PyTorch's default ``timedelta(0)``): the process group's timeout, or none.

        Raises
        ------
        DistributedTimeoutError
            The transfer did not finish in time: another rank did not take part.
        """
        seconds = _seconds(timeout)
        if self._done:
            return True
        limit = self.timeout if not seconds else seconds
        if limit is None:
            self._block()
        else:
            deadline = time.monotonic() + limit
            pause = 1e-5
            while not self._poll():
                if time.monotonic() > deadline:
                    raise DistributedTimeoutError(
                        f"rank {self.rank}: {self.description} did not complete within "
                        f"{limit:g} s; another rank did not take part in it (it failed, hangs, "
                        "or called a different collective). Raise the timeout with "
                        "init_process_group(timeout=...) if the job is merely slow"
                    )
                time.sleep(pause)
                pause = min(pause * 2, 1e-3)
        self._complete()
        return True

    def result(self) -> list[Any]:
        """The tensors the transfer wrote (PyTorch's): ``[tensor]`` of an ``all_reduce``, the
        output list of an ``all_gather``, ``[]`` of a ``barrier``. Waits for the transfer
        first, so that they hold its results."""
        self.wait()
        return list(self._tensors)

    def get_future(self) -> Future:
        """A :class:`Future` whose value is :meth:`result`, once the transfer completes."""
        return Future(self, lambda: list(self._tensors))

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "result":
            # A plugin written when the raw output was called ``result`` would shadow the
            # method, and the front end, reading ``output``, would leave the tensors as they were.
            raise PluginOutputError(
                f"{type(self).__name__}: a communicator sets the transfer's raw output as "
                "work.output; work.result() is PyTorch's method giving the tensors written"
            )
        object.__setattr__(self, name, value)

    def _complete(self) -> None:
        self._done = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def __repr__(self) -> str:
        state = "completed" if self._done else "in flight"
        return f"<{type(self).__name__} {self.description}: {state}>"


def _seconds(timeout: Any) -> float | None:
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise ArgumentError(
            f"timeout must be seconds or a datetime.timedelta, got {type(timeout).__name__}"
        )
    if not timeout >= 0:
        raise InvalidArgumentError(f"timeout must be >= 0 seconds, got {timeout!r}")
    return float(timeout)


class Future:
    """PyTorch's ``torch.futures.Future`` of a :class:`Work` (``work.get_future()``): its
    value, once the transfer completes, is the list of tensors it wrote; ``then()``
    chains a function of it."""

    def __init__(self, work: Work, compute: Callable[[], Any]) -> None:
        self._work = work
        self._compute = compute
        self._value: Any = None
        self._error: BaseException | None = None
        self._set = False
        work.add_done_callback(self._settle)

    def _settle(self) -> None:
        try:
            self._value = self._compute()
        except Exception as error:  # kept for value(), as PyTorch's future keeps it
            self._error = error
        self._set = True

    def done(self) -> bool:
        """Whether the transfer has completed (never blocks)."""
        return self._work.is_completed() and self._set

    def wait(self) -> Any:
        """Block until the transfer has completed; return :meth:`value`."""
        self._work.wait()
        return self.value()

    def value(self) -> Any:
        """The value of a completed future (the error of its ``then()`` function, raised)."""
        if not self._set:
            raise CallOrderError(
                f"the future of {self._work.description} has no value yet: call wait() first, "
                "or read value() in a function given to then()"
            )
        if self._error is not None:
            raise self._error
        return self._value

    def then(self, callback: Callable[[Future], Any]) -> Future:
        """A future whose value is ``callback(self)``, called when this one completes."""
        return Future(self._work, lambda: callback(self))

    def add_done_callback(self, callback: Callable[[Future], None]) -> None:
        """Call ``callback(self)`` when the transfer completes (at once if it has)."""
        self._work.add_done_callback(lambda: callback(self))

    def __repr__(self) -> str:
        state = "done" if self._set else "pending"
        return f"<Future of {self._work.description}: {state}>"


class CompletedWork(Work):
    """A transfer that finished when it was started (a group of one process, for example)."""

    def __init__(self, description: str, rank: int, output: Any = None) -> None:
        super().__init__(description, rank)
        self.output = output

    def _poll(self) -> bool:
        return True


class Communicator:
    """A connected group of processes that moves raw backend arrays.

    Every operation starts a non-blocking transfer and returns its
    :class:`Work`; the front end waits for it. Arrays are those of the backends
    the plugin supports (:meth:`supports`); an in-place operation either writes
    into the array it was given or sets ``work.output`` to a new array with the
    same shape and dtype that the front end stores into the tensor.
    ``timeout`` is passed on to every handle.

    Attributes
    ----------
    rank, size : int
        This process's rank and the number of processes.
    """

    rank: int
    size: int
    timeout: float | None = None

    def supports(self, array: Any) -> str | None:
        """Return ``None`` if arrays like this one can be sent, else the reason they cannot."""
        return None

    def allreduce(self, array: Any, op: ReduceOp) -> Work:
        """Combine ``array`` across ranks with ``op``; every rank gets the result (in place)."""
        raise NotImplementedError

    def broadcast(self, array: Any, root: int) -> Work:
        """Every rank's ``array`` gets the values of rank ``root``'s (in place)."""
        raise NotImplementedError

    def allgather(self, array: Any) -> Work:
        """``work.output``: shape ``(size, *array.shape)``, row ``r`` from rank ``r``."""
        raise NotImplementedError

    def reduce_scatter(self, array: Any, op: ReduceOp) -> Work:
        """``array`` is ``(size, *shape)``; ``work.output`` is row ``rank`` reduced across ranks."""
        raise NotImplementedError

    def gather(self, array: Any, root: int) -> Work:
        """On ``root``, ``work.output`` is ``(size, *array.shape)``; elsewhere ``None``."""
        raise NotImplementedError

    def scatter(self, out: Any, rows: Any | None, root: int) -> Work:
        """``out`` (in place) gets row ``rank`` of ``rows``, which only ``root`` gives."""
        raise NotImplementedError

    def send(self, array: Any, peer: int, tag: int) -> Work:
        """Send ``array`` to rank ``peer``."""
        raise NotImplementedError

    def recv(self, out: Any, peer: int | None, tag: int) -> Work:
        """Receive into ``out`` (in place) from ``peer`` (``None``: any rank).

        ``work.output`` is ``(out, sender)``.
        """
        raise NotImplementedError

    def barrier(self) -> Work:
        """Completes when every rank has reached it."""
        raise NotImplementedError

    def allgather_ints(self, values: tuple[int, ...]) -> Work:
        """``work.output``: every rank's ``values`` (equal lengths), as a list of tuples by rank."""
        raise NotImplementedError

    def abort(self, code: int) -> NoReturn:
        """End every process of the job at once with exit status ``code``."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the communicator (the processes stay alive)."""


class CommunicatorBackend:
    """The description of a communication library, as a plugin returns it.

    Attributes
    ----------
    name : str
        What ``init_process_group(backend=...)`` calls it.
    """

    name: str = ""

    def unavailable_reason(self) -> str | None:
        """``None`` when it can be used here, else what is missing and how to get it.

        Must be cheap: it is asked for every registered library when one is looked up.
        """
        return None

    def connect(self, timeout: float | None) -> Communicator:
        """Join the job the launcher started and return the world communicator."""
        raise NotImplementedError
