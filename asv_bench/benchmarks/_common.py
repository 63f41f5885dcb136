"""Helpers shared by the benchmarks: skipping unavailable backends, in-process timing."""

from __future__ import annotations

import itertools
import os
import statistics
import time
from collections.abc import Callable
from typing import Any, ClassVar

from plugrad.backend import Device
from plugrad.errors import BackendError
from plugrad.registry import backend_names, resolve_device

try:  # raised inside a timed benchmark, asv reports it as skipped rather than failed
    from asv_runner.benchmarks.mark import SkipNotImplemented as Skipped
except ImportError:  # compare.py without asv
    Skipped = NotImplementedError  # type: ignore[misc,assignment]


def benchmarked_backends() -> list[str]:
    """The backends benchmarks are parametrized over: every registered one, or a chosen few.

    ``PLUGRAD_BENCH_BACKENDS=numpy,torch`` limits a run to those (CI does, to stay
    bounded); a name that is not registered is an error rather than a silent omission.
    """
    chosen = os.environ.get("PLUGRAD_BENCH_BACKENDS", "").strip()
    if not chosen:
        return list(backend_names())
    names = [name.strip() for name in chosen.split(",") if name.strip()]
    unknown = sorted(set(names) - set(backend_names()))
    if unknown:
        raise ValueError(
            f"PLUGRAD_BENCH_BACKENDS names {unknown}, which are not registered backends; "
            f"registered: {', '.join(backend_names())}"
        )
    return names


def _rounds_from_environment(default: int = 11) -> int:
    """Rounds behind each ratio: ``PLUGRAD_BENCH_REPEAT`` (CI uses fewer), else ``default``."""
    chosen = os.environ.get("PLUGRAD_BENCH_REPEAT", "").strip()
    if not chosen:
        return default
    if not chosen.isdigit() or int(chosen) < 1:
        raise ValueError(f"PLUGRAD_BENCH_REPEAT must be a positive integer, got {chosen!r}")
    return int(chosen)


#: Rounds of timed runs behind each ratio (the median is taken).
REPEAT = _rounds_from_environment()


def device_or_skip(backend: str) -> Device:
    """The backend's device; ``NotImplementedError`` (asv's "skipped") if it cannot run here."""
    try:
        return resolve_device(backend)
    except BackendError as exc:
        raise NotImplementedError(str(exc)) from None


Clock = Callable[[], float]


def clock_for(device: Device) -> Clock:
    """The clock to time work on ``device`` with.

    On the CPU, the process's CPU time: time during which other programs hold
    the processor is not counted, which on a shared machine makes runs far more
    repeatable than wall time. On other devices (a GPU), wall time: it includes
    the device's work, which the host waits for without computing.
    """
    on_cpu = device.backend.dlpack_device(device.native) == (1, 0)
    return time.process_time if on_cpu else time.perf_counter


def seconds_per_call(
    fn: Callable[[], object], number: int, clock: Clock = time.perf_counter
) -> float:
    """Time of ``number`` calls of ``fn`` on ``clock``, divided by ``number``."""
    start = clock()
    for _ in range(number):
        fn()
    return (clock() - start) / number


def calls_for(fn: Callable[[], object], seconds: float, clock: Clock = time.perf_counter) -> int:
    """How many calls of ``fn`` take about ``seconds`` (at least one), after a warm-up call."""
    fn()  # warm up (first-use activation, caches)
    number = 1
    while True:
        taken = seconds_per_call(fn, number, clock) * number
        if taken >= seconds / 4 or number >= 1 << 20:
            return max(1, round(number * seconds / max(taken, 1e-9)))
        number *= 4


def interleaved_runs(
    fns: list[Callable[[], object]],
    repeat: int = REPEAT,
    seconds: float = 0.01,
    clock: Clock = time.perf_counter,
) -> list[list[float]]:
    """Seconds per call of each function in each of ``repeat`` rounds: ``runs[round][fn]``.

    In a round each function runs in turn for about ``seconds``. Interleaving
    (a, b, a, b, ...) rather than timing all of ``a`` then all of ``b`` lets a
    ratio be taken within a round, between runs a few milliseconds apart, so a
    change in the machine's load affects both sides alike. Every other round
    runs them in the reverse order (a, b, then b, a): a run starts with the
    caches as the run before it left them, and a fixed order would give each
    function the same predecessor in every round, a bias of a few percent.
    """
    numbers = [calls_for(fn, seconds, clock) for fn in fns]
    runs = []
    for index in range(repeat):
        order = range(len(fns)) if index % 2 == 0 else range(len(fns) - 1, -1, -1)
        times = {i: seconds_per_call(fns[i], numbers[i], clock) for i in order}
        runs.append([times[i] for i in range(len(fns))])
    return runs


def medians(runs: list[list[float]]) -> list[float]:
    """The median seconds per call of each function over the rounds."""
    return [statistics.median(column) for column in zip(*runs)]


def median_ratio(runs: list[list[float]], numerator: int, denominator: int) -> float:
    """The median over the rounds of one function's time over another's."""
    return statistics.median(run[numerator] / run[denominator] for run in runs)


def ratio(
    plugrad_fn: Callable[[], object],
    floor_fn: Callable[[], object],
    clock: Clock,
    repeat: int = REPEAT,
    seconds: float = 0.01,
) -> float:
    """plugrad time / floor time: the median of the ratios of interleaved runs."""
    runs = interleaved_runs([plugrad_fn, floor_fn], repeat=repeat, seconds=seconds, clock=clock)
    return median_ratio(runs, 0, 1)


def synchronised(fn: Callable[[], object], sync: Callable[[], object]) -> Callable[[], None]:
    """``fn()``, then ``sync()``: a call timed to the end of the work it queued on a device."""

    def run() -> None:
        fn()
        sync()

    return run


def timed(method: str) -> Callable[..., None]:
    """An asv ``time_*`` benchmark: the workload's ``method``, synchronised."""

    def time_method(self: Any, *params: object) -> None:
        work = self.work
        getattr(work, method)()
        work.sync()

    time_method.__doc__ = f"``{method}`` of the workload, synchronised."
    return time_method


def tracked_ratio(method: str, floor: str, doc: str = "") -> Callable[..., float]:
    """An asv ``track_*`` benchmark: the workload's ``method`` time / its ``floor`` time.

    Both are synchronised and timed by :func:`ratio` in one process, with the
    class's ``ratio_repeat`` and ``ratio_seconds`` where it sets them.
    """

    def track(self: Any, *params: object) -> float:
        work = self.work
        return ratio(
            synchronised(getattr(work, method), work.sync),
            synchronised(getattr(work, floor), work.sync),
            work.clock,
            repeat=getattr(self, "ratio_repeat", REPEAT),
            seconds=getattr(self, "ratio_seconds", 0.01),
        )

    track.__doc__ = doc or f"``{method}`` time / ``{floor}`` time, measured in one process."
    track.unit = "ratio"  # type: ignore[attr-defined]
    return track


def check_each(make: Callable[..., Any], params: list[Any]) -> int:
    """Check the workload ``make(*combination)`` of every combination of asv ``params`` once.

    As a class's ``setup_cache``: asv runs it once per class, where a check in
    ``setup`` would run before each of its benchmarks (in ``--quick`` runs, most
    of their time). A backend that cannot run here is left out, as its
    benchmarks are (skipped in ``setup``). Returns how many were checked (asv
    passes it to ``setup``, which has no use for it).
    """
    combinations = itertools.product(*params) if isinstance(params[0], list) else params
    checked = 0
    for combination in combinations:
        arguments = combination if isinstance(combination, tuple) else (combination,)
        try:
            work = make(*arguments)
        except NotImplementedError:
            continue
        work.check()
        checked += 1
    return checked


class _ForwardBackward:
    """A workload's forward + backward, timed beside its floor, over every backend.

    Subclasses name the workload (``_workload``); ``ratio_repeat`` and
    ``ratio_seconds`` set how :func:`ratio` times it. The leading underscore
    keeps asv from collecting this base class itself.
    """

    params: ClassVar[list[str]] = benchmarked_backends()
    param_names: ClassVar[list[str]] = ["backend"]
    ratio_repeat: ClassVar[int] = REPEAT
    ratio_seconds: ClassVar[float] = 0.01

    def _workload(self, backend: str) -> Any:
        raise NotImplementedError

    def setup(self, backend: str) -> None:
        self.work = self._workload(backend)
        self.work.check()

    time_plugrad_forward_backward = timed("plugrad_forward_backward")
    time_floor_forward_backward = timed("floor_forward_backward")
    track_ratio_forward_backward = tracked_ratio(
        "plugrad_forward_backward", "floor_forward_backward"
    )
