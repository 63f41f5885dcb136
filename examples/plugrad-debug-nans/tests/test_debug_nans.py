"""The numpy_debug_nans backend, found by plugrad through the entry point alone."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad import registry
from plugrad.backends import BUILTIN_BACKENDS


def test_registered_through_the_entry_point_only() -> None:
    assert "numpy_debug_nans" in plugrad.backends.available()
    assert registry.backend_owner("numpy_debug_nans") == "numpy_debug_nans"  # the entry point
    assert not any("debug_nans" in module for module in BUILTIN_BACKENDS)
    info = {b.name: b for b in plugrad.plugins.list_backends()}["numpy_debug_nans"]
    assert info.available and info.devices == ("numpy_debug_nans",)


def test_the_op_that_makes_a_nan_is_named() -> None:
    x = plugrad.tensor([1.0, -1.0, 4.0], device="numpy_debug_nans", requires_grad=True)
    with pytest.raises(FloatingPointError, match=r"sqrt\(\) produced a NaN at index \(1,\)"):
        plugrad.sqrt(x)
    with pytest.raises(FloatingPointError, match=r"log\(\)"):
        plugrad.log(x - 1.0)


def test_without_nans_it_computes_what_numpy_computes() -> None:
    rng = np.random.default_rng(0)
    x, w1, w2 = rng.normal(size=(8, 5)), rng.normal(size=(5, 4)), rng.normal(size=(4,))

    def loss_and_grads(backend: str) -> list[np.ndarray]:
        p1, p2 = (plugrad.asarray(w, device=backend, requires_grad=True) for w in (w1, w2))
        hidden = plugrad.maximum(plugrad.asarray(x, device=backend) @ p1, 0.0)
        loss = plugrad.mean((hidden @ p2) ** 2)
        loss.backward()
        return [loss.detach().numpy(), p1.grad.numpy(), p2.grad.numpy()]

    for ours, reference in zip(loss_and_grads("numpy_debug_nans"), loss_and_grads("numpy")):
        np.testing.assert_array_equal(ours, reference)


def test_nans_already_in_the_data_are_not_blamed_on_the_next_op() -> None:
    x = plugrad.tensor([np.nan, 1.0], device="numpy_debug_nans")
    assert np.isnan((x * 2.0).numpy()[0])


def test_transfers_and_mixing() -> None:
    plugrad.testing.check_transfers("numpy_debug_nans")
