"""Gradient checks by central finite differences, in float64.

``gradcheck(f, *inputs)`` compares plugrad's gradient of ``sum(f(*inputs) * w)`` (fixed
random weights ``w``, so every output element counts differently) with finite differences
of the same scalar; ``gradgradcheck`` does the same for the gradient of the gradient
(``backward(create_graph=True)``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import plugrad
import pytest


def numerical_gradient(scalar: Callable[..., float], inputs: Sequence[np.ndarray], index: int,
                       eps: float = 1e-6) -> np.ndarray:  # fmt: skip
    arrays = [np.array(a, dtype=np.float64) for a in inputs]
    flat = arrays[index].reshape(-1)
    grad = np.zeros(flat.size)
    for i in range(flat.size):
        original = flat[i]
        flat[i] = original + eps
        plus = scalar(*arrays)
        flat[i] = original - eps
        minus = scalar(*arrays)
        flat[i] = original
        grad[i] = (plus - minus) / (2 * eps)
    return grad.reshape(arrays[index].shape)


def _weights(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.5, 1.5, size=shape)


def _gradients(f, arrays, create_graph: bool = False) -> list[plugrad.Tensor]:
    leaves = [plugrad.asarray(np.array(a), requires_grad=True) for a in arrays]
    out = f(*leaves)
    out.backward(plugrad.asarray(_weights(out.shape, 0)), create_graph=create_graph)
    return leaves


@pytest.fixture
def gradcheck() -> Callable[..., None]:
    def check(f, *inputs: np.ndarray, rtol: float = 1e-5, atol: float = 1e-7) -> None:
        inputs = tuple(np.asarray(a, dtype=np.float64) for a in inputs)
        weights = _weights(f(*map(plugrad.asarray, inputs)).shape, 0)

        def scalar(*arrays: np.ndarray) -> float:
            return float(np.sum(f(*map(plugrad.asarray, arrays)).numpy() * weights))

        for index, leaf in enumerate(_gradients(f, inputs)):
            expected = numerical_gradient(scalar, inputs, index)
            np.testing.assert_allclose(leaf.grad.numpy(), expected, rtol=rtol, atol=atol,
                                       err_msg=f"gradient of input {index}")  # fmt: skip

    return check


@pytest.fixture
def gradgradcheck() -> Callable[..., None]:
    def check(f, *inputs: np.ndarray, rtol: float = 1e-4, atol: float = 1e-6) -> None:
        inputs = tuple(np.asarray(a, dtype=np.float64) for a in inputs)
        directions = [_weights(a.shape, 1 + i) for i, a in enumerate(inputs)]

        def gradient_dot_directions(*arrays: np.ndarray) -> float:
            leaves = _gradients(f, arrays)
            return float(sum(np.sum(x.grad.numpy() * d) for x, d in zip(leaves, directions)))

        leaves = _gradients(f, inputs, create_graph=True)
        total = sum(plugrad.sum(x.grad * plugrad.asarray(d)) for x, d in zip(leaves, directions))
        for leaf in leaves:
            leaf.grad = None
        total.backward()
        for index, leaf in enumerate(leaves):
            expected = numerical_gradient(gradient_dot_directions, inputs, index, eps=1e-5)
            np.testing.assert_allclose(leaf.grad.numpy(), expected, rtol=rtol, atol=atol,
                                       err_msg=f"second derivative, input {index}")  # fmt: skip

    return check
