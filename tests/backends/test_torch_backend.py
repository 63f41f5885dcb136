"""The torch backend: plugrad's engine on PyTorch tensors, PyTorch's autograd off."""

from __future__ import annotations

import math

import numpy as np
import pytest

import plugrad

torch = pytest.importorskip("torch", reason="the torch backend needs torch (the torch extra)")


def test_devices_are_the_ones_torch_has() -> None:
    info = {b.name: b for b in plugrad.plugins.list_backends()}["torch"]
    names = info.devices
    assert names[0] == "torch:cpu"
    assert ("torch:cuda:0" in names) == torch.cuda.is_available()
    x = plugrad.ones(2, device="torch:cpu")
    assert x.device.name == "torch:cpu" and x.array.device == torch.device("cpu")


def test_classic_graph_on_torch_with_torch_autograd_off() -> None:
    with plugrad.use_backend("torch"):
        a, b, c, d = (plugrad.tensor(v, requires_grad=True) for v in (2.0, 3.0, 4.0, 5.0))
        e = a * b + plugrad.log(d) * c
        e.backward()
    assert isinstance(e.array, torch.Tensor) and repr(e.grad_fn) == "<AddBackward>"
    assert not e.array.requires_grad, "plugrad does the autograd, not torch"
    assert [t.grad.item() for t in (a, b, c, d)] == pytest.approx([3.0, 2.0, math.log(5.0), 0.8])
    assert all(isinstance(t.grad.array, torch.Tensor) for t in (a, b, c, d))


def test_mlp_step_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    x, w1, w2 = rng.normal(size=(8, 5)), rng.normal(size=(5, 4)), rng.normal(size=(4,))

    def loss_and_grads(backend: str) -> list[np.ndarray]:
        p1 = plugrad.asarray(w1, device=backend, requires_grad=True)
        p2 = plugrad.asarray(w2, device=backend, requires_grad=True)
        loss = plugrad.mean(plugrad.tanh(plugrad.asarray(x, device=backend) @ p1) @ p2)
        loss.backward()
        return [loss.detach().numpy(), p1.grad.numpy(), p2.grad.numpy()]

    for ours, reference in zip(loss_and_grads("torch"), loss_and_grads("numpy")):
        np.testing.assert_allclose(ours, reference, rtol=1e-12)


def test_dlpack_transfers_with_numpy_share_memory_and_carry_gradients() -> None:
    source = np.arange(3.0)
    moved = plugrad.asarray(source).to("torch")
    source[0] = 7.0
    assert moved.tolist() == [7.0, 1.0, 2.0], "the move shares NumPy's memory"
    back = moved.numpy()
    assert np.shares_memory(back, source) and not back.flags.writeable
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    (x.to("torch") ** 2).sum().backward()
    assert x.grad.device.name == "numpy" and x.grad.tolist() == [2.0, 4.0]


def test_reversed_numpy_views_are_copied_not_shared() -> None:
    source = np.arange(4.0)[::-1]  # negative strides: torch cannot view this memory
    assert plugrad.asarray(source).to("torch").tolist() == [3.0, 2.0, 1.0, 0.0]


def test_mixing_with_numpy_names_both_and_the_fix() -> None:
    with pytest.raises(plugrad.errors.DeviceMismatchError, match=r"numpy.*torch.*\.to\("):
        plugrad.ones(2) * plugrad.ones(2, backend="torch")


def test_seeded_random_numbers_repeat() -> None:
    a = plugrad.randn(4, generator=plugrad.Generator(seed=1, backend="torch"))
    b = plugrad.randn(4, generator=plugrad.Generator(seed=1, backend="torch"))
    assert a.device.name == "torch:cpu" and a.tolist() == b.tolist()


def test_scatter_add_uses_index_add_and_accumulates() -> None:
    assert plugrad.plugins.kernel_source("scatter_add", "torch").kind == "backend"
    rng = np.random.default_rng(0)
    index = rng.integers(0, 5, size=40)
    x = plugrad.asarray(rng.normal(size=(5, 3)), device="torch", requires_grad=True)
    weights = rng.normal(size=(40, 3))
    picked = plugrad.take(x, plugrad.tensor(index, device="torch"), axis=0)
    plugrad.sum(picked * plugrad.asarray(weights, device="torch")).backward()
    expected = np.zeros((5, 3))
    np.add.at(expected, index, weights)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)
    y = plugrad.asarray(rng.normal(size=(2, 4)), device="torch", requires_grad=True)
    y[:, ::-2].sum().backward()  # a negative step, which torch's own indexing lacks
    assert y.grad.tolist() == [[0.0, 1.0, 0.0, 1.0]] * 2


def test_in_place_updates_write_into_the_same_torch_memory() -> None:
    x = plugrad.zeros(3, backend="torch")
    memory = x.array.data_ptr()
    x += 1.0
    x[0] = 5.0
    assert x.tolist() == [5.0, 1.0, 1.0] and x.array.data_ptr() == memory
