"""Helpers shared by the benchmarks: skipping unavailable backends, in-process timing."""

from __future__ import annotations

import statistics
import timeit
from collections.abc import Callable

from plugrad.backend import Device
from plugrad.errors import BackendError
from plugrad.registry import resolve_device

REPEAT = 7


def device_or_skip(backend: str) -> Device:
    """The backend's device; ``NotImplementedError`` (asv's "skipped") if it cannot run here."""
    try:
        return resolve_device(backend)
    except BackendError as exc:
        raise NotImplementedError(f"backend {backend!r} is not available: {exc}") from None


def median_seconds_per_call(fn: Callable[[], object], number: int) -> float:
    """Median over ``REPEAT`` runs of ``number`` calls, after one warm-up call."""
    fn()  # warm up (first-use activation, caches)
    runs = timeit.Timer(fn).repeat(repeat=REPEAT, number=number)
    return statistics.median(runs) / number
