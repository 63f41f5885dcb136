"""PyTorch's implementation switches of the optimizers, and Adam's decoupled weight decay.

``foreach``, ``fused``, ``capturable`` and ``differentiable`` are accepted where
PyTorch's constructors take them (each optimizer computes the same update
whichever way PyTorch would run it), and ``param_groups`` hold the same keys.
"""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.errors import InvalidArgumentError

torch = pytest.importorskip("torch")

SWITCHES = {
    "SGD": {"foreach": True, "differentiable": False, "fused": False},
    "Adam": {"foreach": False, "capturable": False, "differentiable": False, "fused": None},
    "AdamW": {"foreach": True, "capturable": False, "differentiable": False, "fused": False},
    "Adagrad": {"foreach": True, "differentiable": False, "fused": None},
    "RMSprop": {"foreach": False, "capturable": False, "differentiable": False},
}


def _trajectory(lib, name: str, **options) -> tuple[list[float], list[str]]:
    w = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64, requires_grad=True)
    opt = getattr(lib.optim, name)([w], lr=0.05, weight_decay=0.1, **options)
    for _ in range(5):
        opt.zero_grad()
        (w * w * w + w).sum().backward()
        opt.step()
    return w.tolist(), sorted(opt.param_groups[0])


@pytest.mark.parametrize("name", SWITCHES)
def test_pytorchs_switches_are_taken_and_change_nothing(name: str):
    ours, our_keys = _trajectory(plugrad, name, **SWITCHES[name])
    theirs, their_keys = _trajectory(torch, name, **SWITCHES[name])
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert ours == _trajectory(plugrad, name)[0]
    assert our_keys == their_keys


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop"])
def test_capturable_is_taken_and_changes_nothing(name: str):
    # (PyTorch's CPU build refuses capturable=True: it is for CUDA graphs.)
    assert _trajectory(plugrad, name, capturable=True) == _trajectory(plugrad, name)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_with_decoupled_weight_decay_is_adamw(amsgrad: bool):
    ours, _ = _trajectory(plugrad, "Adam", decoupled_weight_decay=True, amsgrad=amsgrad)
    theirs, _ = _trajectory(torch, "Adam", decoupled_weight_decay=True, amsgrad=amsgrad)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert ours == _trajectory(plugrad, "AdamW", amsgrad=amsgrad)[0]


@pytest.mark.parametrize("name", SWITCHES)
def test_switches_plugrad_cannot_honour_are_refused(name: str):
    w = plugrad.zeros(2, requires_grad=True)
    with pytest.raises(InvalidArgumentError, match="differentiable=True"):
        getattr(plugrad.optim, name)([w], differentiable=True)
    with pytest.raises(TypeError, match="foreach must be None, True or False"):
        getattr(plugrad.optim, name)([w], foreach="yes")


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_foreach_and_fused_together_are_refused_as_pytorch(name: str):
    with pytest.raises(InvalidArgumentError, match="foreach=True and fused=True"):
        getattr(plugrad.optim, name)(
            [plugrad.zeros(2, requires_grad=True)], foreach=True, fused=True
        )
    with pytest.raises(RuntimeError, match="fused"):
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], foreach=True, fused=True)
