"""Layers refuse an input of another dtype than their parameters; F takes dim= or axis=."""

from __future__ import annotations

from functools import partial

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


@pytest.mark.parametrize("labels", [[1, 0], [True, False]])
def test_binary_cross_entropy_of_integer_labels_keeps_the_inputs_dtype(labels) -> None:
    # 0/1 labels of an integer or bool dtype (PyTorch refuses them) made the loss float64.
    logits = plugrad.tensor([0.3, -0.6], requires_grad=True)
    target = plugrad.tensor(labels)
    with_logits = F.binary_cross_entropy_with_logits(logits, target)
    on_probabilities = F.binary_cross_entropy(logits.sigmoid(), target)
    as_floats = F.binary_cross_entropy_with_logits(logits, target.to(plugrad.float32))
    assert with_logits.dtype is on_probabilities.dtype is plugrad.float32
    np.testing.assert_allclose(with_logits.item(), as_floats.item(), rtol=1e-6)
    np.testing.assert_allclose(on_probabilities.item(), as_floats.item(), rtol=1e-5)


@pytest.mark.parametrize(
    "dropout", ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]
)
def test_every_dropout_refuses_an_integer_input_in_training(dropout) -> None:
    # dropout1d/2d of an int64 input gave float64, the alpha ones float32 (PyTorch refuses).
    x = plugrad.ones((2, 3, 2, 2, 2) if dropout == "dropout3d" else (2, 3, 4), dtype=plugrad.int64)
    with pytest.raises(DtypeError, match=f"{dropout}\\(\\): gives floating values"):
        getattr(F, dropout)(x, 0.5, training=True)
    assert getattr(F, dropout)(x, 0.5, training=False) is x


def test_a_norms_dtype_must_be_floating() -> None:
    # dtype=int64 was not taken, without a word: the norm came out float32
    x = plugrad.tensor([3, 4])
    with pytest.raises(DtypeError, match="dtype= must be a floating or complex dtype"):
        plugrad.linalg.vector_norm(x, dtype=plugrad.int64)
    with pytest.raises(DtypeError, match="dtype= must be a floating or complex dtype"):
        plugrad.linalg.matrix_norm(plugrad.eye(2), dtype=plugrad.int64)
    floats = plugrad.tensor([3.0, 4.0])
    assert plugrad.linalg.vector_norm(floats, dtype=plugrad.float64).dtype is plugrad.float64


#: Whose value and gradient a float16 input computes in float32.
FLOAT16_IN_FLOAT32 = {
    "gelu": F.gelu,
    "gelu tanh": partial(F.gelu, approximate="tanh"),
    "silu": F.silu,
    "mish": F.mish,
    "hardswish": F.hardswish,
}


@pytest.mark.parametrize("name", [*FLOAT16_IN_FLOAT32, "sigmoid", "erf"])
def test_float16_activations_compute_in_float32_and_round_once(name: str) -> None:
    # As PyTorch's: in float16 arithmetic gelu(-3.6, approximate="tanh") was 0 (1 + tanh
    # cancelled), not -4.3e-4, with a gradient of 0; silu's gradient was up to 590 ulp off.
    if plugrad.float16 not in plugrad.default_device().dtypes:
        pytest.skip("the default backend has no float16")
    # sigmoid's and erf's gradients are computed in float16 from float16 values, as PyTorch's.
    function = FLOAT16_IN_FLOAT32.get(name) or getattr(plugrad, name)
    values = np.linspace(-9, 9, 1001).astype(np.float16)
    upstream = np.random.default_rng(0).uniform(0.5, 1.5, values.size).astype(np.float16)
    results = {}
    for dtype in (plugrad.float16, plugrad.float32):
        x = plugrad.tensor(values, dtype=dtype, requires_grad=True)
        y = function(x)
        (y * plugrad.tensor(upstream, dtype=dtype)).sum().backward()
        results[dtype] = y.detach().numpy(), x.grad.numpy()
    checked = 2 if name in FLOAT16_IN_FLOAT32 else 1
    for half, wide in zip(results[plugrad.float16][:checked], results[plugrad.float32]):
        assert half.dtype == np.float16
        np.testing.assert_array_equal(half, wide.astype(np.float16))
    if name == "gelu tanh":
        near = (values > -4) & (values < -3.3)
        assert np.all(results[plugrad.float16][0][near] < 0)  # it was -0.0


@pytest.mark.parametrize(
    "call",
    [
        lambda x: F.gelu(x),  # x * Phi(|x|): 0.40+0.56j for 0.19+0.65j
        lambda x: F.gelu(x, approximate="tanh"),
        lambda x: F.mse_loss(x, x * 2),  # mean((x - y) ** 2): a complex "loss"
        lambda x: F.smooth_l1_loss(x, x * 2),
        lambda x: F.huber_loss(x, x * 2),
    ],
    ids=["gelu", "gelu tanh", "mse_loss", "smooth_l1_loss", "huber_loss"],
)
def test_real_formulas_refuse_complex_inputs_as_pytorch(call) -> None:
    if plugrad.complex128 not in plugrad.default_device().dtypes:
        pytest.skip("the default backend has no complex128")
    with pytest.raises(DtypeError, match=r"complex|real"):
        call(plugrad.tensor([0.5 + 0.7j], dtype=plugrad.complex128))


@pytest.mark.parametrize(
    "call",
    [
        lambda F, x: F.layer_norm(x, (4,)),
        lambda F, x: F.group_norm(x.reshape(1, 2, 4), 2),
        lambda F, x: F.instance_norm(x.reshape(1, 2, 4)),
        lambda F, x: F.batch_norm(x, None, None, training=True),
        lambda F, x: F.cosine_similarity(x, x.flip(0), dim=1),
        lambda F, x: F.rrelu(x),
        lambda F, x: x[0].new_zeros(2).scatter_reduce(0, x[0].real.long() % 2, x[0], "amax"),
    ],
    ids=["layer_norm", "group_norm", "instance_norm", "batch_norm", "cosine_similarity",
         "rrelu", "scatter_reduce"],
)  # fmt: skip
def test_complex_inputs_are_refused_where_pytorch_refuses_them(call):
    # layer_norm divided by the complex mean of (x - mean) ** 2, not a size; cosine_similarity
    # multiplied without a conjugate; scatter_reduce('amax') ordered complex numbers.
    torch = pytest.importorskip("torch")
    values = np.arange(8.0).reshape(2, 4) + 1j * np.arange(8.0)[::-1].reshape(2, 4)
    with pytest.raises((RuntimeError, NotImplementedError)):
        call(torch.nn.functional, torch.tensor(values))
    with pytest.raises(plugrad.errors.DtypeError):
        call(plugrad.nn.functional, plugrad.tensor(values))
    # rms_norm squares without a conjugate in PyTorch too, and takes complex inputs there.
    np.testing.assert_allclose(
        plugrad.nn.functional.rms_norm(plugrad.tensor(values), (4,)).numpy(),
        torch.nn.functional.rms_norm(torch.tensor(values), (4,)).numpy(),
    )
