"""Layers refuse an input of another dtype than their parameters; F takes dim= or axis=."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
import plugrad.nn as nn
import plugrad.nn.functional as F
from plugrad.errors import ArgumentError, DtypeError


@pytest.mark.parametrize(
    ("layer", "shape"),
    [
        (lambda: nn.Linear(3, 2), (4, 3)),
        (lambda: nn.Conv2d(1, 2, 3), (1, 1, 5, 5)),
        (lambda: nn.LayerNorm(3), (4, 3)),
    ],
)
def test_a_layer_refuses_an_input_of_another_float_dtype(layer, shape) -> None:
    module = layer()
    batch = plugrad.ones(shape, dtype=plugrad.float64)
    with pytest.raises(DtypeError, match="the input is float64 but the weight is float32"):
        module(batch)
    assert module.double()(batch).dtype is plugrad.float64
    assert module.float()(batch.float()).dtype is plugrad.float32
    if plugrad.float16 in plugrad.default_device().dtypes:  # array-api-strict has none
        assert module.half().weight.dtype is plugrad.float16


def test_functional_linear_refuses_mixed_dtypes_as_pytorch_does() -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.nn.functional.linear(torch.ones(2, 3, dtype=torch.float64), torch.ones(1, 3))
    with pytest.raises(DtypeError, match="bias is float64"):
        F.linear(plugrad.ones(2, 3), plugrad.ones(1, 3), plugrad.zeros(1, dtype=plugrad.float64))


@pytest.mark.parametrize("function", [F.softmax, F.log_softmax, F.logsumexp])
def test_functional_takes_dim_or_axis_but_not_both(function) -> None:
    x = plugrad.tensor(np.arange(6.0).reshape(2, 3))
    by_dim = function(x, dim=1)
    np.testing.assert_array_equal(function(x, axis=1).numpy(), by_dim.numpy())
    np.testing.assert_array_equal(function(x, 1).numpy(), by_dim.numpy())
    with pytest.raises(ArgumentError, match="both dim= and axis="):
        function(x, 1, axis=1)
    with pytest.raises(ArgumentError, match="needs dim="):
        function(x)
