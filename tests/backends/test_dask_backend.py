"""The dask backend: lazy tensors; ops and backward build task graphs."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import plugrad

da = pytest.importorskip("dask.array", reason="the dask backend needs dask[array] (the dask extra)")


def test_ops_and_backward_build_a_graph_without_computing() -> None:
    x = plugrad.asarray(da.ones((6, 4), chunks=(2, 4)), requires_grad=True)
    assert x.device.name == "dask"
    loss = plugrad.sum(plugrad.exp(x) * x)
    loss.backward()
    assert isinstance(loss.array, da.Array) and isinstance(x.grad.array, da.Array)
    assert x.grad.array.chunks == ((2, 2, 2), (4,)), "gradients keep the data's chunks"
    loss, grad = plugrad.compute(loss, x.grad)
    assert loss.item() == pytest.approx(24 * np.e)
    np.testing.assert_allclose(grad.numpy(), np.full((6, 4), 2 * np.e))


def test_compute_runs_shared_work_once() -> None:
    calls = []

    def counted(block: np.ndarray) -> np.ndarray:
        calls.append(block.shape)
        return block * 2.0

    data = da.ones((4,), chunks=2).map_blocks(counted, meta=np.empty((0,)))
    x = plugrad.asarray(data, requires_grad=True)
    a, b = plugrad.sum(x), plugrad.mean(x)
    plugrad.compute(a, b)
    assert len(calls) == 2, "one call per chunk, shared by both results"
    assert (a.item(), b.item()) == (8.0, 2.0)
    assert len(calls) == 2, "computed tensors are not computed again"


def test_mlp_gradients_match_numpy() -> None:
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(8, 5)), rng.normal(size=(5, 4))

    def grads(backend: str) -> np.ndarray:
        p = plugrad.asarray(w, device=backend, requires_grad=True)
        plugrad.mean(plugrad.tanh(plugrad.asarray(x, device=backend) @ p) ** 2).backward()
        return p.grad.numpy()

    np.testing.assert_allclose(grads("dask"), grads("numpy"), rtol=1e-12)


def test_transfers_and_mixing() -> None:
    plugrad.testing.check_transfers("dask")


def test_in_place_updates_and_printing() -> None:
    x = plugrad.zeros(3, backend="dask")
    x += 1.0
    x[0] = 5.0
    assert x.tolist() == [5.0, 1.0, 1.0]
    assert "5." in repr(x)


def test_a_dask_array_stays_lazy_on_dask_before_the_backend_was_first_used() -> None:
    # A fresh process: nothing has touched the dask backend when asarray meets the array.
    program = (
        "import dask.array as da, plugrad\n"
        "x = plugrad.asarray(da.ones((4, 2), chunks=(2, 2)))\n"
        "print(x.device.name, type(x.array).__module__.split('.')[0], x.array.chunks)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.split("\n")[0] == "dask dask ((2, 2), (2,))"


def test_bool_computes_the_graph_each_time_it_is_asked() -> None:
    # The backends page says so: an `if` on a lazy tensor runs its whole graph.
    calls = []

    def counted(block: np.ndarray) -> np.ndarray:
        calls.append(block.shape)
        return block

    data = da.ones((4,), chunks=2).map_blocks(counted, meta=np.empty((0,)))
    positive = plugrad.sum(plugrad.asarray(data)) > 0
    assert calls == [] and isinstance(positive.array, da.Array)
    assert bool(positive) and len(calls) == 2
    if positive:
        assert len(calls) == 4, "each bool() computes the graph again"
    (computed,) = plugrad.compute(positive)
    bool(computed)
    assert len(calls) == 6, "compute() ran it once more; its result is kept"
    assert bool(computed) and len(calls) == 6
