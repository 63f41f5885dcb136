"""engine.watch_gradient_ready: a leaf's gradient announced while backward still runs."""

from __future__ import annotations

from typing import ClassVar

import pytest

import plugrad
from plugrad import engine
from plugrad.errors import BackwardError

# Capture and the engine's callbacks are machinery: tested on NumPy (the strict backend
# is covered by its own test where it matters).
pytestmark = pytest.mark.usefixtures("on_numpy")


class _Record(plugrad.Function):
    """Identity whose backward notes when it runs."""

    log: ClassVar[list[str]] = []

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        _Record.log.append("middle backward")
        return g


def test_announced_as_soon_as_final_and_before_grad_is_written():
    _Record.log = log = []
    w1 = plugrad.tensor([1.0, 2.0], requires_grad=True)
    w2 = plugrad.tensor([3.0, 4.0], requires_grad=True)
    seen = {}

    def ready(leaf, gradient):
        name = "w1" if leaf is w1 else "w2"
        log.append(f"{name} ready")
        seen[name] = (gradient.tolist(), leaf.grad)

    handles = [engine.watch_gradient_ready(w, ready) for w in (w1, w2)]
    try:
        hidden = _Record.apply(w1 * w1)
        # w2 is used twice: announced only after both contributions arrived
        loss = (hidden * w2).sum() + (w2 * 2.0).sum()
        loss.backward()
    finally:
        for h in handles:
            h.remove()
    assert log == ["w2 ready", "middle backward", "w1 ready"]
    assert seen["w2"] == ([3.0, 6.0], None)  # w1*w1 + 2; .grad not written yet
    assert seen["w1"] == ([6.0, 16.0], None)  # 2 * w1 * w2
    assert w2.grad.tolist() == [3.0, 6.0] and w1.grad.tolist() == [6.0, 16.0]


def test_removed_watchers_and_restricted_passes_are_silent():
    w = plugrad.tensor([1.0], requires_grad=True)
    calls = []
    handle = engine.watch_gradient_ready(w, lambda leaf, g: calls.append(g))
    (w * 3.0).sum().backward(inputs=[w])
    plugrad.autograd.grad((w * 3.0).sum(), [w])
    assert calls == []
    (w * 3.0).sum().backward()
    assert len(calls) == 1
    handle.remove()
    (w * 3.0).sum().backward()
    assert len(calls) == 1


def test_only_leaves_that_require_grad():
    with pytest.raises(BackwardError, match="leaves"):
        engine.watch_gradient_ready(plugrad.tensor([1.0]), lambda leaf, g: None)


def test_a_new_watcher_replaces_the_old_whose_handle_then_does_nothing():
    w = plugrad.tensor([1.0], requires_grad=True)
    calls = []
    old = engine.watch_gradient_ready(w, lambda leaf, g: calls.append("old"))
    new = engine.watch_gradient_ready(w, lambda leaf, g: calls.append("new"))
    old.remove()
    (w * 2.0).sum().backward()
    assert calls == ["new"]
    new.remove()
    (w * 2.0).sum().backward()
    assert calls == ["new"]


def test_the_watcher_goes_with_its_leaf():
    import gc

    w = plugrad.tensor([1.0], requires_grad=True)
    engine.watch_gradient_ready(w, lambda leaf, g: None)
    key = id(w)
    assert key in engine._ready_callbacks
    del w
    gc.collect()
    assert key not in engine._ready_callbacks
