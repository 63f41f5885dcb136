"""Shared fixtures: gradient checks against central finite differences in float64."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pytest

import plugrad

Program = Callable[..., plugrad.Tensor]


def on_default(array: np.ndarray, **kwargs: object) -> plugrad.Tensor:
    """A tensor on the default device (``PLUGRAD_BACKEND`` / ``use_backend``) from NumPy data."""
    return plugrad.asarray(array, device=plugrad.default_device(), **kwargs)


@pytest.fixture
def on_numpy() -> Iterator[plugrad.backend.Device]:
    """Make numpy the default device, for tests about machinery rather than backends."""
    with plugrad.use_backend("numpy") as device:
        yield device


@pytest.fixture(params=plugrad.backends.available())
def backend(request: pytest.FixtureRequest) -> Iterator[plugrad.backend.Device]:
    """Run a test once per available backend, with it as the default device."""
    with plugrad.use_backend(request.param) as device:
        yield device


def finite_difference(
    scalar: Callable[..., float], inputs: Sequence[np.ndarray], index: int, eps: float = 1e-6
) -> np.ndarray:
    """Central differences of ``scalar(*inputs)`` with respect to ``inputs[index]``."""
    arrays = [np.array(a, dtype=np.float64) for a in inputs]
    grad = np.zeros_like(arrays[index])
    flat_grad = grad.reshape(-1)
    flat = arrays[index].reshape(-1)
    for i in range(flat.size):
        original = flat[i]
        flat[i] = original + eps
        plus = scalar(*arrays)
        flat[i] = original - eps
        minus = scalar(*arrays)
        flat[i] = original
        flat_grad[i] = (plus - minus) / (2 * eps)
    return grad


def _weights(shape: tuple[int, ...], seed: int) -> np.ndarray:
    # Fixed, distinct weights: every output element contributes differently.
    return np.random.default_rng(seed).uniform(0.5, 1.5, size=shape)


def weighted_output(f: Program, weights: np.ndarray) -> Callable[..., float]:
    return lambda *arrays: float(np.sum(f(*map(on_default, arrays)).numpy() * weights))


def first_gradients(f: Program, arrays: Sequence[np.ndarray], **backward: bool) -> list:
    """Leaves and their gradients of ``sum(f(*arrays) * weights)`` by plugrad's backward."""
    leaves = [on_default(np.array(a), requires_grad=True) for a in arrays]
    out = f(*leaves)
    out.backward(on_default(_weights(out.shape, 7)), **backward)
    return leaves


@pytest.fixture
def check_gradients() -> Callable[..., None]:
    """``check(f, *inputs)``: plugrad's gradients of ``f`` against finite differences."""

    def check(f: Program, *inputs: np.ndarray, rtol: float = 1e-5, atol: float = 1e-6) -> None:
        inputs = tuple(np.asarray(a, dtype=np.float64) for a in inputs)
        leaves = first_gradients(f, inputs)
        shape = f(*map(on_default, inputs)).shape
        scalar = weighted_output(f, _weights(shape, 7))
        for index, leaf in enumerate(leaves):
            expected = finite_difference(scalar, inputs, index)
            assert leaf.grad is not None, f"no gradient reached input {index}"
            assert leaf.grad.dtype == plugrad.float64
            np.testing.assert_allclose(
                leaf.grad.numpy(), expected, rtol=rtol, atol=atol, err_msg=f"input {index}"
            )

    return check


@pytest.fixture
def check_double_backward() -> Callable[..., None]:
    """``check(f, *inputs)``: gradients of gradients (``create_graph=True``) against
    finite differences of plugrad's first-order gradients."""

    def check(f: Program, *inputs: np.ndarray, rtol: float = 1e-4, atol: float = 1e-5) -> None:
        inputs = tuple(np.asarray(a, dtype=np.float64) for a in inputs)
        directions = [_weights(a.shape, 11 + i) for i, a in enumerate(inputs)]

        def gradient_dot_directions(*arrays: np.ndarray) -> float:
            leaves = first_gradients(f, arrays)
            return float(sum(
                np.sum(leaf.grad.numpy() * d) for leaf, d in zip(leaves, directions)
                if leaf.grad is not None
            ))  # fmt: skip

        leaves = first_gradients(f, inputs, create_graph=True)
        terms = [
            plugrad.sum(leaf.grad * on_default(d))
            for leaf, d in zip(leaves, directions)
            if leaf.grad is not None and leaf.grad.requires_grad
        ]
        for leaf in leaves:
            leaf.grad = None
        if terms:
            total = terms[0]
            for term in terms[1:]:
                total = total + term
            total.backward()
        for index, leaf in enumerate(leaves):
            expected = finite_difference(gradient_dot_directions, inputs, index, eps=1e-5)
            got = np.zeros_like(inputs[index]) if leaf.grad is None else leaf.grad.numpy()
            np.testing.assert_allclose(
                got, expected, rtol=rtol, atol=atol, err_msg=f"input {index}"
            )

    return check
