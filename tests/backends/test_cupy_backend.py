"""The cupy backend; skipped where no GPU is visible (CI has none)."""

from __future__ import annotations

import itertools

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


def test_cupy_floor_division_and_remainder_are_numpys() -> None:
    # CuPy's own remainder rounds: 1.2 % 0.4 came out 1.1e-16 (NumPy, PyTorch: 0.3999...).
    values = np.array([1.2, -1.2, 1.0, 1e17, 0.0, -0.0, 7.0, -np.inf, 2.5])
    x, on_host = plugrad.tensor(values, backend="cupy"), plugrad.tensor(values)
    with np.errstate(invalid="ignore"):
        for name, divisor in itertools.product(("remainder", "floor_divide", "fmod"), (0.4, -0.1)):
            ours = getattr(plugrad, name)(x, divisor).numpy()
            # (as on the NumPy backend, whose infinities floor-divide as the standard says)
            expected = getattr(plugrad, name)(on_host, divisor).numpy()
            np.testing.assert_array_equal(ours, expected, err_msg=name)
            np.testing.assert_array_equal(np.signbit(ours), np.signbit(expected), err_msg=name)
        np.testing.assert_array_equal((x % 0.4).numpy(), np.remainder(values, 0.4))
        np.testing.assert_array_equal((x[:-2] // 0.1).numpy(), np.floor_divide(values[:-2], 0.1))
    assert (plugrad.tensor([7, -7], backend="cupy") % 3).tolist() == [1, 2]


def test_cupy_refuses_a_singular_matrix_and_a_write_into_a_broadcast_view() -> None:
    # CuPy checks cuSOLVER's report only when asked: inv of a singular matrix gave infinities.
    singular = plugrad.tensor([[1.0, 2.0], [2.0, 4.0]], backend="cupy")
    with pytest.raises(plugrad.errors.LinAlgError):
        plugrad.linalg.inv(singular)
    regular = singular + plugrad.eye(2, backend="cupy")
    np.testing.assert_allclose(plugrad.linalg.inv(regular).numpy(), np.linalg.inv(regular.numpy()))
    # CuPy writes a stride-0 view without complaint; PyTorch refuses, as NumPy's is read-only.
    row = plugrad.zeros(1, 3, backend="cupy")
    for write in (lambda v: v.add_(1), lambda v: v.__iadd__(1), lambda v: v.fill_(2.0)):
        with pytest.raises(plugrad.errors.PlugradError, match="clone"):
            write(row.expand(2, 3))
    assert row.tolist() == [[0.0] * 3]
