"""The torch backend, found by plugrad through the entry point alone."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import plugrad
from plugrad import registry
from plugrad.backends import BUILTIN_BACKENDS


def test_registered_through_the_entry_point_only() -> None:
    assert "torch" in plugrad.backends.available()
    assert registry.backend_owner("torch") == "torch"  # the entry point's name
    assert not any("torch" in module for module in BUILTIN_BACKENDS)


def test_classic_graph_on_torch() -> None:
    with plugrad.use_backend("torch"):
        a, b, c, d = (plugrad.tensor(v, requires_grad=True) for v in (2.0, 3.0, 4.0, 5.0))
        e = a * b + plugrad.log(d) * c
        e.backward()
    assert isinstance(e.array, torch.Tensor) and repr(e.grad_fn) == "<AddBackward>"
    assert not e.array.requires_grad, "plugrad does the autograd, not torch"
    grads = [t.grad.item() for t in (a, b, c, d)]
    assert grads == pytest.approx([3.0, 2.0, math.log(5.0), 0.8])
    assert all(isinstance(t.grad.array, torch.Tensor) for t in (a, b, c, d))


def test_mlp_step_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    x, w1, w2 = rng.normal(size=(8, 5)), rng.normal(size=(5, 4)), rng.normal(size=(4,))

    def loss_and_grads(backend: str) -> list[np.ndarray]:
        p1, p2 = (plugrad.asarray(w, device=backend, requires_grad=True) for w in (w1, w2))
        hidden = plugrad.maximum(plugrad.asarray(x, device=backend) @ p1, 0.0)
        loss = plugrad.mean((hidden @ p2) ** 2)
        loss.backward()
        return [loss.detach().numpy(), p1.grad.numpy(), p2.grad.numpy()]

    for ours, reference in zip(loss_and_grads("torch"), loss_and_grads("numpy")):
        np.testing.assert_allclose(ours, reference, rtol=1e-12)


def test_transfers_with_numpy_share_memory_and_carry_gradients() -> None:
    source = np.arange(3.0)
    moved = plugrad.asarray(source).to("torch")
    source[0] = 7.0
    assert moved.tolist() == [7.0, 1.0, 2.0]
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    (x.to("torch") ** 2).sum().backward()
    assert x.grad.device.name == "numpy" and x.grad.tolist() == [2.0, 4.0]


def test_mixing_with_numpy_is_a_clear_error() -> None:
    with pytest.raises(plugrad.errors.DeviceMismatchError, match=r"'numpy'.*'torch'.*\.to\("):
        plugrad.ones(2) * plugrad.ones(2, backend="torch")


def test_seeded_random_numbers() -> None:
    a = plugrad.randn(4, generator=plugrad.Generator(seed=1, backend="torch"))
    b = plugrad.randn(4, generator=plugrad.Generator(seed=1, backend="torch"))
    assert a.device.name == "torch" and a.tolist() == b.tolist()


def test_reversed_numpy_views_are_copied_not_shared() -> None:
    source = np.arange(4.0)[::-1]  # negative strides: torch cannot view this memory
    moved = plugrad.asarray(source).to("torch")
    assert moved.tolist() == [3.0, 2.0, 1.0, 0.0]


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
