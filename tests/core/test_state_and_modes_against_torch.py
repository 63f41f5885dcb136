"""Optimizer state dicts, grad modes, retained gradients and Functions against ``torch``.

Each case once differed from PyTorch: a state dict kept while stepping on held the
live buffers beside an old step count (loading it restarted Adam's bias
correction), ``inference_mode(False)`` left gradients off inside ``no_grad``,
``retain_grad()`` was not filled by ``autograd.grad`` or ``backward(inputs=...)``,
and a Function written with ``setup_context`` failed.
"""

from __future__ import annotations

import numpy as np
import pytest

import plugrad

torch = pytest.importorskip("torch")


def _trajectory(lib, name: str) -> list[float]:
    w = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
    opt = getattr(lib.optim, name)([w], lr=0.1)

    def step():
        opt.zero_grad()
        (w * w * w).sum().backward()
        opt.step()

    step()
    saved = opt.state_dict()
    step()  # the saved dict is live, as PyTorch's: it now holds the state after two steps
    opt = getattr(lib.optim, name)([w], lr=0.1)
    opt.load_state_dict(saved)
    step()
    return w.tolist()


@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adamax", "NAdam", "RAdam", "ASGD", "SGD"])
def test_a_state_dict_kept_while_stepping_on_stays_whole(name: str):
    # (PyTorch's loaded optimizer shares the dict's step tensor and counts on in it;
    # plugrad's load copies, as its docs say: the trajectories are what must agree. PyTorch
    # keeps NAdam's mu_product and ASGD's eta and mu in float32: agreement to 1e-7 there.)
    rtol = 1e-7 if name in ("NAdam", "ASGD") else 1e-12
    np.testing.assert_allclose(_trajectory(plugrad, name), _trajectory(torch, name), rtol=rtol)


@pytest.mark.parametrize("outer", ["no_grad", "inference_mode"])
def test_inference_mode_false_turns_gradients_on(outer: str):
    for lib in (plugrad, torch):
        x = lib.ones(2, requires_grad=True)
        with getattr(lib, outer)():
            with lib.inference_mode(False):
                assert (x * 2).requires_grad
            assert not (x * 2).requires_grad

        @lib.inference_mode(False)
        def double(t):
            return t * 2

        with lib.no_grad():
            assert double(x).requires_grad


def test_tensors_answer_is_inference():
    # AttributeError before. plugrad has no inference tensors: inference_mode is no_grad.
    with plugrad.inference_mode():
        made = plugrad.ones(2)
    assert made.is_inference() is False and plugrad.ones(1).is_inference() is False
    assert torch.ones(1).is_inference() is False


def _retained(lib, how: str) -> list[list[float] | None]:
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    z = y * 2
    z.retain_grad()
    loss = (z * z).sum()
    if how == "grad of x":
        lib.autograd.grad(loss, x)
    elif how == "grad of y":
        lib.autograd.grad(loss, y)
    elif how == "backward, inputs x":
        loss.backward(inputs=[x])
    else:
        loss.backward(inputs=[y])
    return [None if t.grad is None else t.grad.tolist() for t in (x, y, z)]


@pytest.mark.parametrize(
    "how", ["grad of x", "grad of y", "backward, inputs x", "backward, inputs y"]
)
def test_retained_gradients_are_filled_in_passes_with_targets(how: str):
    assert _retained(plugrad, how) == _retained(torch, how)


def _cube_with_setup_context(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x**3 * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, k = inputs
            ctx.save_for_backward(x)
            ctx.k = k

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g * ctx.k, None

    x = lib.tensor([2.0, -1.0], dtype=lib.float64, requires_grad=True)
    y = Cube.apply(x, 2.0)
    (gx,) = lib.autograd.grad(y.sum(), x, create_graph=True)
    gx.sum().backward()
    return y.tolist(), gx.tolist(), x.grad.tolist(), type(y.grad_fn).__name__


def test_a_function_in_the_setup_context_style_works_as_in_pytorch():
    assert _cube_with_setup_context(plugrad) == _cube_with_setup_context(torch)
