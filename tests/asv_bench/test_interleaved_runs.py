"""asv_bench's interleaved timing: each round times every function, in alternating order."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parents[2] / "asv_bench"


@pytest.fixture(scope="module")
def common():
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("benchmarks._common")
    finally:
        sys.path.remove(str(BENCH))
        for name in [n for n in sys.modules if n == "benchmarks" or n.startswith("benchmarks.")]:
            del sys.modules[name]


def test_rounds_alternate_their_order_and_keep_each_function_s_column(common, monkeypatch) -> None:
    now = [0.0]

    def costing(seconds: float):
        def run() -> None:
            now[0] += seconds

        return run

    fns = [costing(1.0), costing(2.0), costing(4.0)]
    timed: list[int] = []
    seconds_per_call = common.seconds_per_call

    def recorded(fn, number, clock):
        timed.append(fns.index(fn))
        return seconds_per_call(fn, number, clock)

    monkeypatch.setattr(common, "seconds_per_call", recorded)
    runs = common.interleaved_runs(fns, repeat=4, seconds=3.0, clock=lambda: now[0])
    assert runs == [[1.0, 2.0, 4.0]] * 4  # each column its own function's, whatever the order
    assert timed[-12:] == [0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0]  # after the calibration
