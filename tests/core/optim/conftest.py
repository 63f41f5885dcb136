"""Fixtures of the optimizer tests: one training step of plugrad and of PyTorch side by side."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest


def _step_both(opt: Any, ours: dict, loss: Any, reference: Any, reference_loss: Any) -> None:
    """Step ``opt`` down ``loss`` of the parameters ``ours`` and PyTorch's ``reference`` down
    ``reference_loss``, checking that our step leaves the gradients alone."""
    opt.zero_grad()
    loss.backward()
    grads = {key: p.grad.numpy().copy() for key, p in ours.items() if p.grad is not None}
    opt.step()
    for key, grad in grads.items():
        np.testing.assert_array_equal(ours[key].grad.numpy(), grad, err_msg=key)
    reference.zero_grad()
    reference_loss.backward()
    reference.step()


@pytest.fixture
def step_both() -> Callable[..., None]:
    return _step_both
