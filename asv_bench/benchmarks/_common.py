"""Helpers shared by the benchmarks: skipping unavailable backends, in-process timing."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from plugrad.backend import Device
from plugrad.errors import BackendError
from plugrad.registry import resolve_device

#: Timed runs per side in a ratio; the median of each side is taken.
REPEAT = 7


def device_or_skip(backend: str) -> Device:
    """The backend's device; ``NotImplementedError`` (asv's "skipped") if it cannot run here."""
    try:
        return resolve_device(backend)
    except BackendError as exc:
        raise NotImplementedError(str(exc)) from None


def seconds_per_call(fn: Callable[[], object], number: int) -> float:
    """Wall time of ``number`` calls of ``fn``, divided by ``number``."""
    clock = time.perf_counter
    start = clock()
    for _ in range(number):
        fn()
    return (clock() - start) / number


def calls_for(fn: Callable[[], object], seconds: float) -> int:
    """How many calls of ``fn`` take about ``seconds`` (at least one), after a warm-up call."""
    fn()  # warm up (first-use activation, caches)
    number = 1
    while True:
        taken = seconds_per_call(fn, number) * number
        if taken >= seconds / 4 or number >= 1 << 20:
            return max(1, round(number * seconds / max(taken, 1e-9)))
        number *= 4


def interleaved_medians(
    fns: list[Callable[[], object]], repeat: int = REPEAT, seconds: float = 0.02
) -> list[float]:
    """Median seconds per call of each function, timed in turn ``repeat`` times.

    Interleaving (a, b, a, b, ...) rather than timing all of ``a`` then all of
    ``b`` makes a ratio of the results robust to the machine's load changing.
    """
    numbers = [calls_for(fn, seconds) for fn in fns]
    runs: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, number, times in zip(fns, numbers, runs):
            times.append(seconds_per_call(fn, number))
    return [statistics.median(times) for times in runs]


def ratio(plugrad_fn: Callable[[], object], floor_fn: Callable[[], object]) -> float:
    """plugrad time / floor time, from interleaved runs in this process."""
    plugrad_s, floor_s = interleaved_medians([plugrad_fn, floor_fn])
    return plugrad_s / floor_s
