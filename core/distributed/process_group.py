"""The process group: joining the job, who we are, and ending it cleanly or all at once."""

from __future__ import annotations

import datetime
import sys
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, cast

from ..errors import DistributedError, InvalidArgumentError
from .call_agreement import agree
from .communicator import Communicator, CommunicatorBackend

__all__ = [
    "barrier",
    "communicator_backends",
    "destroy_process_group",
    "get_backend",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_available",
    "is_initialized",
]


@dataclass
class _Group:
    backend: str
    communicator: Communicator
    check_collectives: bool
    previous_excepthook: Any


_group: _Group | None = None


def communicator_backends() -> dict[str, tuple[CommunicatorBackend, str]]:
    """Every registered communication library by name, with the plugin that provides it.

    Examples
    --------
    >>> import plugrad.distributed as dist
    >>> sorted(dist.communicator_backends())
    ['mpi', 'nccl']
    """
    from .. import registry

    manager = registry._state.manager
    assert manager is not None, "plugrad has not finished loading"
    found: dict[str, tuple[CommunicatorBackend, str]] = {}
    for impl in manager.hook.plugrad_communicators.get_hookimpls():
        # pluggy types what an implementation returns as object: the loop checks each item.
        for backend in cast("Iterable[object]", impl.function() or ()):
            if not isinstance(backend, CommunicatorBackend) or not backend.name:
                raise DistributedError(
                    f"plugin {impl.plugin_name!r}: plugrad_communicators() returned "
                    f"{backend!r}; return named instances of "
                    "plugrad.distributed.communicator.CommunicatorBackend"
                )
            if backend.name in found:
                raise DistributedError(
                    f"the communication library {backend.name!r} is provided by both "
                    f"{found[backend.name][1]!r} and {impl.plugin_name!r}; unregister one"
                )
            found[backend.name] = (backend, impl.plugin_name)
    return found


def is_available() -> bool:
    """Whether some communication library can be used here (e.g. mpi4py is installed)."""
    return any(b.unavailable_reason() is None for b, _ in communicator_backends().values())


def _seconds(timeout: float | datetime.timedelta | None) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise InvalidArgumentError(
            f"timeout must be a positive number of seconds or a timedelta, got {timeout!r}"
        )
    return float(timeout)


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: float | datetime.timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    *,
    check_collectives: bool = True,
    abort_on_exception: bool = True,
) -> None:
    """Join the job that ``mpiexec``, ``srun`` or another launcher started.

    The rank and the number of processes come from the launcher; there is no
    rendezvous address to give.

    Parameters
    ----------
    backend : str, optional
        The communication library: ``"mpi"`` (default; mpi4py) or ``"nccl"``
        (CuPy, one GPU per process), or one a plugin provides.
    init_method : None
        Not used: the launcher connects the processes. Anything else is refused.
    timeout : float or timedelta, optional
        Seconds every collective may take before it raises
        :class:`~plugrad.errors.DistributedTimeoutError` (default: no limit).
    world_size, rank : int, optional
        If given, checked against what the launcher says.
    check_collectives : bool
        Before each collective of this module, check that every rank calls the
        same one with the same shapes and dtypes, and raise naming them when not
        (one small extra message per collective). DistributedDataParallel checks
        once per backward pass, before its first all-reduce (a rank running one
        more backward pass than the others raises, as they do), and compares the
        models once, at construction.
    abort_on_exception : bool
        An uncaught exception on any rank prints the rank and the exception and
        aborts every process of the job, instead of leaving the others waiting
        forever in their next collective.

    Examples
    --------
    ::

        # mpiexec -n 2 python train.py
        import plugrad.distributed as dist
        dist.init_process_group("mpi")
        print(dist.get_rank(), "of", dist.get_world_size())
    """
    global _group
    if _group is not None:
        raise DistributedError(
            "the process group is already initialized; call destroy_process_group() first"
        )
    name = "mpi" if backend is None else str(backend).lower()
    if init_method is not None:
        raise InvalidArgumentError(
            f"init_method={init_method!r}: the launcher (mpiexec, srun) connects the processes "
            "and gives each its rank, so there is no init_method to use; leave it out"
        )
    seconds = _seconds(timeout)
    known = communicator_backends()
    if name not in known:
        raise InvalidArgumentError(
            f"no communication library named {name!r}; registered: {', '.join(sorted(known))}"
        )
    description = known[name][0]
    reason = description.unavailable_reason()
    if reason is not None:
        raise DistributedError(f"the {name!r} communication library cannot be used: {reason}")
    communicator = description.connect(seconds)
    communicator.timeout = seconds
    for given, actual, what in (
        (world_size, communicator.size, "world_size"),
        (rank, communicator.rank, "rank"),
    ):
        if given not in (-1, None) and given != actual:
            communicator.close()
            raise InvalidArgumentError(
                f"{what}={given} was given, but the launcher started this process as {what} "
                f"{actual}; leave {what} out or launch with matching settings"
            )
    previous = sys.excepthook
    _group = _Group(name, communicator, check_collectives, previous)
    if abort_on_exception and communicator.size > 1:
        sys.excepthook = _abort_job


def _abort_job(
    kind: type[BaseException], error: BaseException, trace: TracebackType | None
) -> None:
    group = _group
    if group is None:  # the group was destroyed meanwhile; behave as Python does
        sys.__excepthook__(kind, error, trace)
        return
    communicator = group.communicator
    lines = traceback.format_exception(kind, error, trace)
    sys.stderr.write("".join(lines))
    sys.stderr.write(
        f"plugrad.distributed: rank {communicator.rank} of {communicator.size} failed with "
        f"{kind.__name__}: {error}\nplugrad.distributed: aborting all {communicator.size} "
        "processes of the job\n"
    )
    sys.stderr.flush()
    communicator.abort(1)


def _require() -> _Group:
    if _group is None:
        raise DistributedError(
            "the process group is not initialized; call "
            "plugrad.distributed.init_process_group() first (and launch with mpiexec or srun)"
        )
    return _group


def is_initialized() -> bool:
    """Whether :func:`init_process_group` has been called (and not undone)."""
    return _group is not None


def get_rank(group: Any = None) -> int:
    """This process's rank, ``0`` to ``get_world_size() - 1``."""
    _check_group(group)
    return _require().communicator.rank


def get_world_size(group: Any = None) -> int:
    """The number of processes in the job."""
    _check_group(group)
    return _require().communicator.size


def get_backend(group: Any = None) -> str:
    """The name of the communication library in use (``"mpi"``, ``"nccl"``, ...)."""
    _check_group(group)
    return _require().backend


def barrier(group: Any = None, async_op: bool = False) -> Any:
    """Wait until every rank has reached this call (or return its Work with ``async_op``)."""
    _check_group(group)
    state = _require()
    if state.check_collectives:
        agree(state.communicator, "barrier", None, None, 0)
    work = state.communicator.barrier()
    if async_op:
        return work
    work.wait()
    return None


def destroy_process_group(group: Any = None) -> None:
    """Leave the process group; :func:`init_process_group` may be called again."""
    global _group
    _check_group(group)
    current = _require()
    if current.check_collectives:
        # Every rank leaves together, or all raise: a rank that ran fewer backward passes
        # of DistributedDataParallel (its last ones paired with another rank's earlier
        # ones) left with wrong weights while the others waited forever.
        agree(current.communicator, "destroy_process_group", None, None, 0)
    _group = None
    if sys.excepthook is _abort_job:
        sys.excepthook = current.previous_excepthook
    current.communicator.close()


def _check_group(group: Any) -> None:
    if group is not None:
        raise InvalidArgumentError(
            "only the default group (every process) is supported; pass group=None"
        )
