"""asv_bench/plot_backends.py reads asv's results files and plots each backend."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).parents[2] / "asv_bench" / "plot_backends.py"


@pytest.fixture(scope="module")
def script() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("plot_backends", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def _results_file(directory: Path) -> Path:
    """A results file in asv 0.6's format: one value per parameter combination, null if skipped."""
    columns = ["result", "params", "version", "started_at", "duration"]
    backends = ["'numpy'", "'dask'"]
    chain = "bench_overhead.ElementwiseChainOverhead.time_{}_forward_backward"
    mlp = "bench_training.MLPTrainingStep.time_{}_step"
    data = {
        "commit_hash": "0123456789abcdef",
        "env_name": "existing-py",
        "date": 1_764_000_000_000,
        "params": {"machine": "box", "cpu": "some CPU", "num_cpu": "2"},
        "python": "3.11",
        "result_columns": columns,
        "results": {
            chain.format("plugrad"): [[5e-5, 2e-2], [backends], "h"],
            chain.format("floor"): [[5e-6, 1e-2], [backends], "h"],
            mlp.format("plugrad"): [[1e-3, 2e-3, None, 4e-3], [backends, ["8", "1024"]], "h"],
            mlp.format("floor"): [[1e-3, 1e-3, None, 3e-3], [backends, ["8", "1024"]], "h"],
        },
        "durations": {},
        "version": 2,
    }
    path = directory / "box" / "0123abcd-existing-py.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    return path


def test_reads_each_backend_and_parameter_and_says_where_from(script, tmp_path) -> None:
    results = script.load(_results_file(tmp_path))
    assert results.backends() == ["numpy", "dask"]
    assert results.time(script.CHAIN.format("plugrad"), "dask") == 2e-2
    assert results.time(script.MLP.format("floor"), "numpy", "1024") == 1e-3
    assert math.isnan(results.time(script.MLP.format("plugrad"), "dask", "8"))  # skipped
    assert script.batches(results) == ["8", "1024"]
    assert "commit 01234567" in results.source() and "'box'" in results.source()
    text = script.table(results)
    assert text.splitlines()[1].startswith("numpy | 10 µs | 1 µs | 1 ms")
    assert "dask | 4e+03 µs | 2e+03 µs | nan ms" in text


def test_draws_the_figure(script, tmp_path) -> None:
    pytest.importorskip("matplotlib", reason="the plot needs matplotlib (extra bench)")
    path = _results_file(tmp_path / "results")
    output = tmp_path / "figure.svg"
    assert script.main(["--results", str(path), "-o", str(output)]) == 0
    svg = output.read_text()
    assert svg.startswith("<?xml") and "<svg" in svg
    again = tmp_path / "again.svg"
    script.main(["--results", str(path), "-o", str(again)])
    assert again.read_text() == svg  # deterministic: no date, fixed hash salt


def test_no_results_says_how_to_make_them(script, tmp_path) -> None:
    with pytest.raises(SystemExit, match="--set-commit-hash"):
        script.newest_results(tmp_path)
