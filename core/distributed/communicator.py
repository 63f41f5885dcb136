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

import enum
import time
from collections.abc import Callable
from typing import Any, NoReturn

from ..errors import DistributedTimeoutError

__all__ = ["Communicator", "CommunicatorBackend", "ReduceOp", "Work"]


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

    A plugin subclasses it and implements :meth:`_poll` (has the transfer
    finished? never blocks) and :meth:`_block` (wait without limit); it may set
    :attr:`result` in a done-callback. Callbacks added with
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
        #: The output array(s) of the transfer, once completed (plugin-defined).
        self.result: Any = None
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

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the transfer has finished and its results are in place.

        Parameters
        ----------
        timeout : float, optional
            Seconds to allow (default: the process group's timeout, or none).

        Raises
        ------
        DistributedTimeoutError
            The transfer did not finish in time: another rank did not take part.
        """
        if self._done:
            return True
        limit = self.timeout if timeout is None else timeout
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

    def _complete(self) -> None:
        self._done = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def __repr__(self) -> str:
        state = "completed" if self._done else "in flight"
        return f"<{type(self).__name__} {self.description}: {state}>"


class CompletedWork(Work):
    """A transfer that finished when it was started (a group of one process, for example)."""

    def __init__(self, description: str, rank: int, result: Any = None) -> None:
        super().__init__(description, rank)
        self.result = result

    def _poll(self) -> bool:
        return True


class Communicator:
    """A connected group of processes that moves raw backend arrays.

    Every operation starts a non-blocking transfer and returns its
    :class:`Work`; the front end waits for it. Arrays are those of the backends
    the plugin supports (:meth:`supports`); an in-place operation either writes
    into the array it was given or sets ``work.result`` to a new array with the
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
        """``work.result``: shape ``(size, *array.shape)``, row ``r`` from rank ``r``."""
        raise NotImplementedError

    def reduce_scatter(self, array: Any, op: ReduceOp) -> Work:
        """``array`` is ``(size, *shape)``; ``work.result`` is row ``rank`` reduced across ranks."""
        raise NotImplementedError

    def gather(self, array: Any, root: int) -> Work:
        """On ``root``, ``work.result`` is ``(size, *array.shape)``; elsewhere ``None``."""
        raise NotImplementedError

    def scatter(self, out: Any, rows: Any | None, root: int) -> Work:
        """``out`` (in place) gets row ``rank`` of ``rows``, which only ``root`` gives."""
        raise NotImplementedError

    def send(self, array: Any, peer: int, tag: int) -> Work:
        """Send ``array`` to rank ``peer``."""
        raise NotImplementedError

    def recv(self, out: Any, peer: int | None, tag: int) -> Work:
        """Receive into ``out`` (in place) from ``peer`` (``None``: any rank).

        ``work.result`` is ``(out, sender)``.
        """
        raise NotImplementedError

    def barrier(self) -> Work:
        """Completes when every rank has reached it."""
        raise NotImplementedError

    def allgather_ints(self, values: tuple[int, ...]) -> Work:
        """``work.result``: every rank's ``values`` (equal lengths), as a list of tuples by rank."""
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
