"""A compiled training step on the backends whose arrays are immutable (JAX) or lazy (Dask)."""

from __future__ import annotations

import numpy as np
import pytest
from sgd_regression import regression_params, sgd_step

import plugrad
from plugrad.errors import BackendError


def _backend(name: str) -> str:
    pytest.importorskip(name, reason=f"needs {name} (the {name} extra)")
    try:
        plugrad.registry.resolve_device(name)
    except BackendError as exc:
        pytest.skip(str(exc))
    return name


@pytest.mark.parametrize("name", ["jax", "dask"])
def test_compiled_training_step_equals_eager_bit_for_bit(name):
    with plugrad.use_backend(_backend(name)):
        params, eager_params = regression_params(0), regression_params(0)
        compiled = plugrad.compile(sgd_step(params), fullgraph=True)
        eager = sgd_step(eager_params)
        rng = np.random.default_rng(1)
        for _ in range(3):
            x = plugrad.tensor(rng.standard_normal((5, 3)))
            y = plugrad.tensor(rng.random((5, 4)))
            got, expected = compiled(x, y), eager(x, y)
            assert got.detach().numpy().tobytes() == expected.detach().numpy().tobytes()
            for p, e in zip(params, eager_params, strict=True):
                assert p.detach().numpy().tobytes() == e.detach().numpy().tobytes()
                assert p.grad.numpy().tobytes() == e.grad.numpy().tobytes()
        assert compiled.captures == 1
