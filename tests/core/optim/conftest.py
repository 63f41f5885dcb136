"""Fixtures of the optimizer tests: one training step of plugrad and of PyTorch side by side."""

from __future__ import annotations

import copy
import re
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


def _refuses_each(
    opt: Any, saved: dict, cases: list[tuple[Callable[[dict], Any], Any, str]]
) -> None:
    """Load into ``opt`` each copy of ``saved`` that ``change`` breaks: ``error`` is raised,
    matching ``message``, and the optimizer keeps its groups and state as they were."""

    def now() -> tuple[str, dict]:
        return repr(opt.param_groups), {i: dict(e) for i, e in opt.state_dict()["state"].items()}

    before = now()
    for change, error, message in cases:
        broken = copy.deepcopy(saved)
        change(broken)
        with pytest.raises(error, match=re.escape(message)):
            opt.load_state_dict(broken)
        assert now() == before


@pytest.fixture
def refuses_each() -> Callable[..., None]:
    return _refuses_each
