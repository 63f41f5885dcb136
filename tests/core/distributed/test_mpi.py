"""plugrad.distributed over MPI: real jobs launched with mpiexec, every rank checked.

Each test runs ``mpi_worker.py SCENARIO`` under ``mpiexec -n N`` with a time
limit, so a hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# CI sets PLUGRAD_REQUIRE_MPI so that a broken MPI install fails instead of skipping.
if os.environ.get("PLUGRAD_REQUIRE_MPI"):
    import mpi4py  # noqa: F401
else:
    pytest.importorskip(
        "mpi4py", reason="plugrad.distributed's MPI tests need mpi4py (extra 'distributed')"
    )

WORKER = Path(__file__).with_name("mpi_worker.py")
MPIEXEC = shutil.which(
    "mpiexec", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
)
if MPIEXEC is None and os.environ.get("PLUGRAD_REQUIRE_MPI"):
    raise RuntimeError("PLUGRAD_REQUIRE_MPI is set but there is no mpiexec on PATH")
if MPIEXEC is None:
    pytest.skip("no mpiexec on PATH (pip install mpich, or load your MPI)", allow_module_level=True)


def launch(
    scenario: str, ranks: int, limit: float = 150, **environment: str
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        **environment,
    }
    try:
        return subprocess.run(
            [MPIEXEC, "-n", str(ranks), sys.executable, str(WORKER), scenario],
            capture_output=True,
            text=True,
            timeout=limit,
            env=env,
        )
    except subprocess.TimeoutExpired as expired:
        pytest.fail(
            f"mpiexec -n {ranks} {scenario} hung for {limit} s: {expired.stdout}{expired.stderr}"
        )


def assert_every_rank_passed(
    result: subprocess.CompletedProcess[str], scenario: str, ranks: int
) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # Ranks share one stdout, so their lines may interleave: find the marks anywhere.
    passed = re.findall(rf"PASS {scenario} rank (\d+)", result.stdout)
    assert sorted(map(int, passed)) == list(range(ranks)), output


@pytest.mark.parametrize("ranks", [2, 3])
def test_collectives_agree_with_numpy_on_every_rank(ranks):
    assert_every_rank_passed(launch("collectives", ranks), "collectives", ranks)


@pytest.mark.parametrize("ranks", [2, 3])
def test_reduce_and_python_objects_through_the_collectives(ranks):
    assert_every_rank_passed(launch("objects", ranks), "objects", ranks)


@pytest.mark.parametrize("ranks", [2, 3])
def test_ddp_equals_one_process_on_the_concatenated_batch(ranks):
    # SGD with momentum and Adam, several uneven buckets, and no_sync accumulation.
    assert_every_rank_passed(launch("ddp", ranks), "ddp", ranks)


@pytest.mark.parametrize("scenario", ["collectives", "ddp"])
@pytest.mark.parametrize("backend", ["torch", "jax", "dask"])
def test_collectives_and_ddp_on_other_backends(backend, scenario):
    # JAX's arrays cannot be written into and Dask's are lazy, without DLPack: DDP joins
    # each bucket's gradients instead of writing them into a buffer, and the MPI library
    # computes and copies to the host what it sends.
    import plugrad.backends

    if backend not in plugrad.backends.available():
        pytest.skip(f"the {backend} backend is not installed (extra '{backend}')")
    result = launch(scenario, 2, PLUGRAD_BACKEND=backend)
    assert_every_rank_passed(result, scenario, 2)


@pytest.mark.parametrize("ranks", [2, 3])
def test_sync_batchnorm_on_uneven_shares_equals_batchnorm_on_the_whole_batch(ranks):
    # Shares of 1 and 6 rows, or 5, 0 and 1: outputs, input gradients, summed weight
    # gradients and running statistics as one BatchNorm over all rows; and SGD steps of a
    # converted model inside DistributedDataParallel as one process on the whole batch.
    assert_every_rank_passed(launch("sync_batchnorm", ranks), "sync_batchnorm", ranks)


@pytest.mark.parametrize("backend", ["torch", "dask"])
def test_sync_batchnorm_on_other_backends(backend):
    # (JAX is left out: without 64-bit types it has no float64 to compare tightly in.)
    import plugrad.backends

    if backend not in plugrad.backends.available():
        pytest.skip(f"the {backend} backend is not installed (extra '{backend}')")
    result = launch("sync_batchnorm", 2, PLUGRAD_BACKEND=backend)
    assert_every_rank_passed(result, "sync_batchnorm", 2)


def test_mismatched_models_and_collectives_are_errors_naming_the_ranks():
    assert_every_rank_passed(launch("mismatches", 2), "mismatches", 2)


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_backward_failing_on_some_ranks_is_an_error_on_every_rank(ranks):
    assert_every_rank_passed(launch("failed_pass", ranks, limit=90), "failed_pass", ranks)


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_skipped_backward_does_not_make_a_later_no_sync_pass_average(ranks):
    # on every rank, with the skipped forward's graph dropped or kept, and on one rank only
    result = launch("abandoned_forward", ranks, limit=90)
    assert_every_rank_passed(result, "abandoned_forward", ranks)


def test_a_progress_thread_moves_transfers_along_while_the_program_computes():
    # Asked for explicitly: by default the thread runs only with a core to spare.
    result = launch("progress", 2, PLUGRAD_MPI_PROGRESS_INTERVAL="0.001")
    assert_every_rank_passed(result, "progress", 2)


def test_the_progress_thread_needs_a_spare_core_or_a_request(monkeypatch):
    from plugrad.backends import mpi_communicator

    monkeypatch.setattr(mpi_communicator, "_usable_cores", lambda: 4)
    monkeypatch.setenv("PLUGRAD_MPI_PROGRESS_INTERVAL", "0")
    assert mpi_communicator._progress_interval(2) is None
    monkeypatch.setenv("PLUGRAD_MPI_PROGRESS_INTERVAL", "0.002")
    assert mpi_communicator._progress_interval(4) == 0.002  # asked for: even without a spare core
    monkeypatch.delenv("PLUGRAD_MPI_PROGRESS_INTERVAL")
    default = mpi_communicator.DEFAULT_PROGRESS_INTERVAL
    assert mpi_communicator._progress_interval(3) == default  # a core to spare
    assert mpi_communicator._progress_interval(4) is None  # processes fill every core
    for bad in ("fast", "-1", "nan"):
        monkeypatch.setenv("PLUGRAD_MPI_PROGRESS_INTERVAL", bad)
        with pytest.raises(ValueError, match="PLUGRAD_MPI_PROGRESS_INTERVAL"):
            mpi_communicator._progress_interval(2)


def test_an_exception_on_one_rank_ends_the_whole_job():
    result = launch("fault", 2, limit=60)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert (
        "plugrad.distributed: rank 1 of 2 failed with ValueError: rank one fails on purpose"
        in output
    )
    assert "aborting all 2 processes" in output
    assert "PASS" not in result.stdout


def test_a_collective_that_a_rank_skips_times_out_and_ends_the_job():
    result = launch("timeout", 2, limit=60)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "DistributedTimeoutError: rank 0:" in output
    assert "all_reduce of float32 (2,) did not complete within 2 s" in output


@pytest.mark.parametrize("ranks", [2, 3])
def test_the_demo_trains_data_parallel_as_one_process_does(tmp_path, ranks):
    from plugrad.cli.demo import train

    command = [MPIEXEC, "-n", str(ranks), sys.executable, "-m", "plugrad", "demo", "--distributed"]
    options = ["--data", "generated", "--epochs", "3", "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    result = subprocess.run(
        [*command, *options, "--output-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=150,
        env=env,
        cwd=tmp_path,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    alone = train(data="generated", epochs=3, output_dir=None, progress=False, log=None)
    line = r"loss (\d\.\d+)  train accuracy +([\d.]+)%  test accuracy +([\d.]+)%"
    epochs = re.findall(line, output)
    assert len(epochs) == 3, output  # printed by rank 0 only
    for i, (loss, train_accuracy, test_accuracy) in enumerate(epochs):
        assert abs(float(loss) - alone.epoch_loss[i]) <= 1e-4, output
        assert train_accuracy == f"{alone.train_accuracy[i] * 100:.1f}", output
        assert test_accuracy == f"{alone.test_accuracy[i] * 100:.1f}", output
    assert f"every one of the {ranks} processes loaded the saved weights back" in output
    assert (tmp_path / "model.safetensors").is_file()


def test_the_overlap_options_benchmark_reports_every_variant():
    script = Path(__file__).parents[3] / "asv_bench" / "ddp_overlap_options.py"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    options = ["--batch", "64", "--steps", "1", "--warmup", "0", "--blocks", "1", "3"]
    result = subprocess.run(
        [MPIEXEC, "-n", "2", sys.executable, str(script), *options],
        capture_output=True,
        text=True,
        timeout=150,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ranks"] == 2
    assert report["all-reduce alone ms"] > 0
    assert report["row blocks, largest difference from one block, relative"] < 1e-5
    variants = ["row blocks 1", "row blocks 3", "update after", "update overlap"]
    for variant in variants:
        for progress in ("thread", "no thread"):
            assert report[f"{variant}, {progress}"]["ms"] > 0, report


def test_the_overlap_benchmark_times_ddp_with_and_without_overlap():
    script = Path(__file__).parents[3] / "asv_bench" / "ddp_overlap.py"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    options = ["--models", "mlp", "--batch", "64", "--steps", "1", "--warmup", "0"]
    result = subprocess.run(
        [MPIEXEC, "-n", "2", sys.executable, str(script), *options, "--intervals", "0.001"],
        capture_output=True,
        text=True,
        timeout=150,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (model,) = json.loads(result.stdout)["models"]
    assert model["bucket MB"] == [0.511, 1.533]
    assert model["ddp, all-reduces after backward, ms"] > 0
    for kind in ("ddp, poke every 1 ms", "ddp, no thread"):
        assert model[kind]["backward ms"] > 0, model
        assert len(model[kind]["bucket launch ms"]) == 2, model
        assert isinstance(model[kind]["saved share"], float), model
