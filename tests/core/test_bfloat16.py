"""bfloat16, PyTorch's 16-bit float of float32's range: stored by the torch and JAX backends.

Values, gradients and promotion against PyTorch's own bfloat16; the backends that do not
store it (NumPy's has no bfloat16) refuse it with a DtypeError that names the ones that do.
"""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.errors import DtypeError

torch = pytest.importorskip("torch")

#: The backends that store bfloat16, where their library is installed.
STORING = [
    pytest.param(name, marks=pytest.mark.skipif(
        name not in plugrad.backends.available(), reason=f"{name} is not installed"))
    for name in ("torch", "jax")
]  # fmt: skip

PROGRAMS = {
    "arithmetic": lambda lib, x, w: ((x * 2 + 1) * w - x / 3).sum(),
    "exp and log": lambda lib, x, w: (lib.exp(x / 4) + lib.log(w * w + 1)).sum(),
    "matmul": lambda lib, x, w: (x.reshape(2, 3) @ w.reshape(3, 2)).pow(2).sum(),
    "softmax": lambda lib, x, w: (lib.nn.functional.softmax(x, 0) * w).sum(),
    "gelu and tanh": lambda lib, x, w: (lib.nn.functional.gelu(x) + lib.tanh(w)).mean(),
    "reductions": lambda lib, x, w: x.max() + x.mean() + (w * w).sum().sqrt(),
    "where and abs": lambda lib, x, w: lib.where(x > 0, x * w, w.abs()).sum(),
    # (accumulated in float32 and rounded once, as PyTorch's)
    "norms": lambda lib, x, w: (
        (lib.nn.functional.layer_norm(x.reshape(2, 3) * 300, (3,)) * w.reshape(2, 3)).sum()
        + lib.nn.functional.batch_norm(x.reshape(3, 2), None, None, training=True).pow(2).sum()
        + lib.nn.functional.softplus(w * 20).sum()
        + (x / 1e5).sum() * 1e4
    ),
}


def _run(lib, name: str) -> list[np.ndarray]:
    data = np.array([1.5, 2.25, -3.0, 0.125, -0.75, 4.0])
    x = lib.tensor(data, dtype=lib.bfloat16, requires_grad=True)
    w = lib.tensor(data[::-1].copy() / 2, dtype=lib.bfloat16, requires_grad=True)
    out = PROGRAMS[name](lib, x, w)
    assert out.dtype == lib.bfloat16
    out.backward()
    assert x.grad.dtype == lib.bfloat16 and w.grad.dtype == lib.bfloat16
    return [np.asarray(t.detach().float().tolist()) for t in (out, x.grad, w.grad)]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("backend", STORING)
def test_bfloat16_values_and_gradients_are_pytorchs(backend, name) -> None:
    expected = _run(torch, name)
    with plugrad.use_backend(backend):
        ours = _run(plugrad, name)
    for a, b in zip(ours, expected):
        # (each library rounds its intermediate results to bfloat16 its own way: 2**-8 apart)
        np.testing.assert_allclose(a, b, rtol=2**-6, atol=2**-6)


OTHERS = ["bool", "uint8", "int8", "int32", "float16", "float32", "complex64"]


@pytest.mark.parametrize("other", OTHERS)
@pytest.mark.parametrize("backend", STORING)
def test_bfloat16_promotes_as_in_pytorch(backend, other) -> None:
    expected = torch.ones(2, dtype=torch.bfloat16) + torch.ones(2, dtype=getattr(torch, other))
    with plugrad.use_backend(backend):
        a = plugrad.ones(2, dtype=plugrad.bfloat16)
        b = plugrad.ones(2, dtype=getattr(plugrad, other))
        assert (a + b).dtype.name == (b + a).dtype.name == str(expected.dtype).split(".")[1]
        for scalar in (2, 2.5, True):
            theirs = torch.ones(2, dtype=torch.bfloat16) + scalar
            assert (a + scalar).dtype.name == str(theirs.dtype).split(".")[1]


def test_bfloat16_with_float16_is_float32_without_a_backend() -> None:
    # (the promotion of two floating dtypes by size alone took bfloat16 for float16)
    from plugrad.dtypes import floating_result

    assert floating_result(plugrad.bfloat16, plugrad.float16) is plugrad.float32
    assert floating_result(plugrad.float16, plugrad.bfloat16) is plugrad.float32
    assert floating_result(plugrad.bfloat16, plugrad.float64) is plugrad.float64
    assert floating_result(plugrad.bfloat16, plugrad.complex64) is plugrad.complex64
    assert floating_result(plugrad.bfloat16, plugrad.bfloat16) is plugrad.bfloat16


@pytest.mark.parametrize("backend", STORING)
def test_a_bfloat16_model_trains_as_pytorchs(backend) -> None:
    def train(lib) -> list[float]:
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1))
        with lib.no_grad():
            for index, p in enumerate(model.parameters()):
                values = np.linspace(-0.5, 0.5, p.numel()) * (index + 1)
                p.copy_(lib.tensor(values.reshape(tuple(p.shape)), dtype=lib.float32))
        model = model.bfloat16()
        assert all(p.dtype == lib.bfloat16 for p in model.parameters())
        optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
        x = lib.tensor([[1.0, -2.0, 0.5], [0.25, 1.5, -1.0]]).bfloat16()
        losses = []
        for _ in range(3):  # (later steps: bfloat16's rounding of small losses drifts apart)
            loss = model(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses

    expected = train(torch)
    with plugrad.use_backend(backend):
        ours = train(plugrad)
    np.testing.assert_allclose(ours, expected, rtol=2**-5)


def test_bfloat16_reads_out_and_round_trips_a_file_on_the_torch_backend(tmp_path) -> None:
    pytest.importorskip("ml_dtypes")
    values = [1.5, -2.0, 3.0e38, 1.0e-30]
    expected = torch.tensor(values, dtype=torch.bfloat16)
    with plugrad.use_backend("torch"):
        x = plugrad.tensor(values, dtype=plugrad.bfloat16)
        assert x.tolist() == expected.tolist() and x[0].item() == 1.5
        assert x.numpy().dtype.name == "bfloat16"  # (ml_dtypes': PyTorch's own x.numpy() refuses)
        assert x.numpy().astype(np.float32).tolist() == expected.float().tolist()
        assert "dtype=plugrad.bfloat16" in repr(x)
        assert plugrad.finfo(plugrad.bfloat16).eps == torch.finfo(torch.bfloat16).eps
        plugrad.save({"x": x}, tmp_path / "x.st")
        loaded = plugrad.load(tmp_path / "x.st")["x"]
    assert loaded.dtype is plugrad.bfloat16 and loaded.tolist() == expected.tolist()


def _widened(lib, x):
    return x.float() if lib is torch else x


# Ops that ask the limits of their tensor's dtype (plugrad.finfo(x.dtype)).
ASKING_LIMITS = {
    "masked_fill(mask, -inf)": lambda lib, x: x.masked_fill(x > 0, float("-inf")),
    "masked_fill(mask, 0-d tensor)": lambda lib, x: x.masked_fill(
        x > 0, lib.tensor(2.5, device=x.device)),
    "index_fill": lambda lib, x: x.index_fill(0, lib.tensor([0], device=x.device), 2.5),
    "scatter(dim, index, 2.7)": lambda lib, x: x.scatter(0, lib.tensor([0], device=x.device), 2.7),
    "nan_to_num": lambda lib, x: (x / 0).nan_to_num(),
    # (PyTorch has no bfloat16 kernels of these three: its float32 result, rounded)
    "special.erfcx": lambda lib, x: lib.special.erfcx(_widened(lib, x)),
    "special.log_ndtr": lambda lib, x: lib.special.log_ndtr(_widened(lib, x)),
    "special.ndtri": lambda lib, x: lib.special.ndtri(_widened(lib, x).abs() / 8),
    "special.i1": lambda lib, x: lib.special.i1(x),
    "Bernoulli(probs).logits": lambda lib, x: lib.distributions.Bernoulli(
        probs=x.abs() / 8).logits,
}  # fmt: skip


@pytest.mark.parametrize("name", ASKING_LIMITS)
@pytest.mark.parametrize("backend", STORING)
def test_bfloat16_tensors_off_the_default_backend_know_their_limits(backend, name) -> None:
    # The default backend (NumPy's) has no bfloat16: finfo(bfloat16) raised a DtypeError.
    assert plugrad.default_device().backend.name == "numpy"
    data = [1.5, -2.25, 0.5]
    x = plugrad.tensor(data, dtype=plugrad.bfloat16, device=backend)
    ours = ASKING_LIMITS[name](plugrad, x)
    theirs = ASKING_LIMITS[name](torch, torch.tensor(data, dtype=torch.bfloat16))
    assert ours.dtype is plugrad.bfloat16 and ours.device.backend.name == backend
    theirs = theirs.to(torch.bfloat16).float()
    np.testing.assert_allclose(ours.float().tolist(), theirs.tolist(), rtol=2.0**-7, atol=0)


def test_backends_without_bfloat16_refuse_it_naming_those_that_store_it() -> None:
    model = plugrad.nn.Linear(2, 2, device="numpy")
    before = model.weight.detach().clone()
    with pytest.raises(DtypeError, match="the torch and jax backends store bfloat16"):
        model.bfloat16()
    assert model.weight.dtype is plugrad.float32 and bool((model.weight == before).all())
    with pytest.raises(DtypeError, match="the torch and jax backends store bfloat16"):
        plugrad.ones(2, dtype=plugrad.bfloat16, device="numpy")
    with pytest.raises(DtypeError, match="torch and jax backends only"):
        plugrad.tensor(torch.ones(2, dtype=torch.bfloat16), device="numpy")
    converted = plugrad.tensor(torch.ones(2, dtype=torch.bfloat16), dtype=plugrad.float32,
                               device="numpy")  # fmt: skip
    assert converted.dtype is plugrad.float32
