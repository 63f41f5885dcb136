"""The cupy backend; skipped where no GPU is visible (CI has none)."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad

pytestmark = pytest.mark.skipif(
    "cupy" not in plugrad.backends.available(),
    reason=f"cupy backend unavailable: {plugrad.registry.backend_status('cupy')}",
)


def test_cupy_tensors_live_on_the_gpu_and_backprop_there() -> None:
    import cupy

    x = plugrad.tensor([1.0, 2.0], backend="cupy", requires_grad=True)
    assert isinstance(x.array, cupy.ndarray) and x.device.name.startswith("cupy")
    loss = plugrad.sum(plugrad.exp(x) * x)
    loss.backward()
    assert isinstance(x.grad.array, cupy.ndarray)
    expected = np.exp([1.0, 2.0]) * (1 + np.array([1.0, 2.0]))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


def test_cupy_to_numpy_and_back_is_differentiable() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = x.to("cupy")
    (y * y).sum().backward()
    assert x.grad.device.name == "numpy" and x.grad.tolist() == [2.0, 4.0]


def test_cupy_mixing_with_numpy_is_a_clear_error() -> None:
    with pytest.raises(plugrad.errors.DeviceMismatchError, match=r"\.to\("):
        plugrad.ones(2, backend="cupy") + plugrad.ones(2)


def test_cupy_dlpack_with_torch_cuda_is_zero_copy() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    source = torch.arange(3, dtype=torch.float32, device="cuda")
    t = plugrad.from_dlpack(source)
    assert t.backend.name == "cupy"
    source[0] = 5.0
    assert t.tolist()[0] == 5.0
