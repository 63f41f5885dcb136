"""examples/dask_logistic_regression.py runs on a LocalCluster, small, and converges."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dask.array", reason="the example needs the dask extra")
pytest.importorskip("dask.distributed", reason="the example needs dask.distributed")

EXAMPLE = Path(__file__).parents[2] / "examples" / "dask_logistic_regression.py"


def test_small_run_checks_its_gradient_and_reports_its_figures() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--small"],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    out = result.stdout
    assert "40,000 x 16 features" in out and "in 4 chunks of 10,000 rows; 2 workers" in out
    assert "first gradient matches its closed form" in out
    losses = [float(v) for v in re.findall(r"loss (\d+\.\d+)", out)]
    assert len(losses) == 5 and losses[0] == pytest.approx(0.693147, abs=1e-5)
    assert all(later < earlier for earlier, later in itertools.pairwise(losses)), losses
    assert re.search(r"time per iteration \(median after the first\): \d+\.\d+ s", out)
    accuracy = float(re.search(r"accuracy on the 40,000 rows: (\d\.\d+)", out).group(1))
    assert accuracy > 0.8
    peaks = re.search(r"peak worker memory \(resident\): (\d+) MB, (\d+) MB$", out.strip())
    assert peaks and all(int(p) > 0 for p in peaks.groups())
