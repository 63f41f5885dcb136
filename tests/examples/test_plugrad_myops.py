"""The example plugin package (examples/plugrad-myops), registered at run time from its
source tree, so that a change to plugrad that breaks it fails here too. CI also installs it
in an environment of its own and runs its own tests there (see .ci/run)."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

import plugrad

SOURCE = Path(__file__).parents[2] / "examples" / "plugrad-myops" / "src"


@pytest.fixture
def myops(monkeypatch):
    monkeypatch.syspath_prepend(str(SOURCE))
    plugin = importlib.import_module("plugrad_myops.plugin")
    name = plugrad.plugins.register(plugin, name="myops_from_source")
    yield plugin
    plugrad.plugins.unregister(name)
    assert not hasattr(plugrad.ops, "softplus") and not hasattr(plugrad.Tensor, "softplus")
    assert plugrad.plugins.kernel_source("matmul", "numpy").kind == "generic"


def test_ops_and_their_gradients(myops, check_gradients, check_double_backward) -> None:
    x = np.linspace(-3.0, 3.0, 7)
    check_gradients(plugrad.ops.softplus, x)
    check_double_backward(plugrad.ops.softplus, x)
    check_gradients(plugrad.ops.logaddexp, x, x[::-1].copy())
    check_double_backward(plugrad.ops.logaddexp, x.reshape(7, 1), x)
    np.testing.assert_allclose(
        plugrad.asarray(x).softplus().numpy(), np.logaddexp(x, 0), rtol=1e-12
    )


def test_matmul_override_is_served_and_removed_with_the_plugin(myops, check_gradients) -> None:
    source = plugrad.plugins.kernel_source("matmul", "numpy")
    assert (source.kind, source.plugin) == ("override", "myops_from_source")
    assert source.function.__module__ == "plugrad_myops.kernels"
    check_gradients(plugrad.matmul, np.arange(6.0).reshape(2, 3), np.ones((3, 2)))
    with plugrad.plugins.checking():
        plugrad.ones((2, 3)) @ plugrad.ones((3, 4))
