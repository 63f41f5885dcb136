"""``plugrad.amp.GradScaler`` against ``torch.amp.GradScaler``: the scale's trajectory, the
skipped steps and the parameters, with and without ``unscale_`` before clipping; and
``autocast`` disabled (enabled: tests/core/test_autocast.py)."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad

torch = pytest.importorskip("torch")

# NumPy warns of the overflows the scaler is there to catch.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _train(lib, *, clip: bool, steps: int = 8) -> tuple[list[float], list[list[float]], dict]:
    w = lib.nn.Parameter(lib.tensor([1.0, -2.0, 3.0]))
    opt = lib.optim.SGD([w], lr=0.01)
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0**120, growth_interval=3)
    scales, values = [], []
    for step in range(steps):
        opt.zero_grad()
        # Large at first (the scaled gradient overflows float32), small later (it grows).
        loss = (w * w).sum() * (1e8 if step < 3 else 1.0)
        scaler.scale(loss).backward()
        if clip:
            scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_([w], 1.0)
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        values.append(w.detach().numpy().tolist())
    return scales, values, scaler.state_dict()


@pytest.mark.parametrize("clip", [False, True])
def test_the_scale_and_the_steps_follow_pytorchs(clip: bool) -> None:
    ours, theirs = _train(plugrad, clip=clip), _train(torch, clip=clip)
    assert ours[0] == theirs[0]  # halved at each overflow, doubled after 3 clean steps
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    assert ours[2] == theirs[2]


def test_a_disabled_scaler_passes_through_and_state_round_trips() -> None:
    w = plugrad.nn.Parameter(plugrad.ones(2))
    opt = plugrad.optim.SGD([w], lr=0.5)
    off = plugrad.amp.GradScaler(enabled=False)
    loss = (w * w).sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    loss.backward()
    off.step(opt)
    off.update()
    assert w.tolist() == [0.0, 0.0]
    scaler = plugrad.amp.GradScaler(init_scale=8.0, growth_interval=5)
    twin = plugrad.amp.GradScaler()
    twin.load_state_dict(scaler.state_dict())
    assert twin.state_dict() == scaler.state_dict()
    assert plugrad.cuda.amp.GradScaler is plugrad.amp.GradScaler


def test_misuse_is_refused_as_pytorch_refuses_it() -> None:
    w = plugrad.nn.Parameter(plugrad.ones(2))
    opt = plugrad.optim.SGD([w], lr=0.5)
    scaler = plugrad.amp.GradScaler()
    scaler.scale((w * w).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.step(opt)
    # (It said "already been called": step() unscales, but the call to fix is this one.)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)"):
        scaler.unscale_(opt)
    scaler.update()
    with pytest.raises(ValueError, match="backoff_factor"):
        plugrad.amp.GradScaler(backoff_factor=1.5)
    # update() with no step since the last one had nothing to update from (PyTorch asserts).
    with pytest.raises(RuntimeError, match=r"call scaler.step\(optimizer\) before"):
        scaler.update()
    assert scaler.get_scale() == 2.0**16
    scaler.update(1024.0)
    assert scaler.get_scale() == 1024.0


def test_the_factors_and_interval_are_set_as_pytorchs_setters_set_them() -> None:
    scaler = plugrad.amp.GradScaler(init_scale=4.0, growth_interval=3)
    scaler.set_growth_factor(4.0)
    scaler.set_backoff_factor(0.25)
    scaler.set_growth_interval(1)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor()) == (4.0, 0.25)
    assert scaler.get_growth_interval() == 1
    w = plugrad.nn.Parameter(plugrad.ones(2))
    opt = plugrad.optim.SGD([w], lr=0.5)
    scaler.scale((w * w).sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 16.0  # grown by 4 after one step
    for setter, bad in [("set_growth_factor", 1.0), ("set_backoff_factor", 1.0),
                        ("set_growth_interval", 0), ("set_growth_interval", 2.5)]:  # fmt: skip
        with pytest.raises(ValueError, match=setter.removeprefix("set_")):
            getattr(scaler, setter)(bad)
    assert scaler.state_dict()["growth_factor"] == 4.0  # left as it was


def test_a_gradient_that_overflows_when_unscaled_skips_the_step() -> None:
    # With a scale below 1, 3e38 / 0.5 is inf: PyTorch checks before unscaling and steps
    # to -inf; plugrad counts it as an inf (documented).
    w = plugrad.nn.Parameter(plugrad.ones(1))
    opt = plugrad.optim.SGD([w], lr=1.0)
    scaler = plugrad.amp.GradScaler(init_scale=0.5)
    (w * plugrad.tensor([3e38])).sum().backward()
    scaler.step(opt)
    scaler.update()
    assert w.tolist() == [1.0] and scaler.get_scale() == 0.25


@pytest.mark.skipif(
    plugrad.float16 not in plugrad.default_device().dtypes,
    reason="the default backend has no float16",
)
def test_a_scaled_half_precision_loss_is_float32_as_pytorchs() -> None:
    # PyTorch's scale is a 0-d float32 tensor: 2.0 * 65536 is 131072, not float16's inf.
    for lib, scaler in ((plugrad, plugrad.amp.GradScaler()), (torch, torch.amp.GradScaler("cpu"))):
        loss = lib.tensor(2.0, dtype=lib.float16, requires_grad=True)
        scaled = scaler.scale(loss)
        assert str(scaled.dtype).endswith("float32") and scaled.item() == 131072.0
        assert str(scaler.scale(lib.ones(3, dtype=lib.float16)).dtype).endswith("float16")
        scaled.backward()
        assert str(loss.grad.dtype).endswith("float16") and loss.grad.item() == float("inf")


def test_a_disabled_autocast_changes_nothing() -> None:
    with plugrad.autocast("cpu", enabled=False) as region:
        assert (plugrad.ones(2) * 2).dtype is plugrad.float32
        assert region.device == "cpu" and not plugrad.is_autocast_enabled("cpu")
    assert not plugrad.is_autocast_enabled()
    assert plugrad.amp.autocast("cpu", enabled=False)(lambda: 3)() == 3


def test_the_scale_is_a_float32_that_grows_only_within_its_range() -> None:
    # PyTorch's scale is a float32 tensor: 2e38 doubled stays 2e38 (it became 4e38, inf).
    scales = []
    for lib in (plugrad, torch):
        w = lib.nn.Parameter(lib.ones(2))
        optimizer = lib.optim.SGD([w], lr=0.1)
        make = plugrad.amp.GradScaler if lib is plugrad else torch.amp.GradScaler
        scaler = make("cpu", init_scale=2e38, growth_interval=1)
        scaler.scale((w * 1e-30).sum()).backward()
        scaler.step(optimizer)
        scaler.update()
        scales.append(scaler.get_scale())
    assert scales[0] == scales[1] == np.float32(2e38)


def test_unscaling_multiplies_by_pytorchs_float32_reciprocal() -> None:
    # Divided by the exact 1/3, float64 gradients came out 1.0 where PyTorch's are
    # 1.0000000298023224: trajectories drifted apart by 1e-7 a step.
    grads = []
    for lib in (plugrad, torch):
        w = lib.nn.Parameter(lib.tensor([1.0, 2.0], dtype=lib.float64))
        opt = lib.optim.SGD([w], lr=0.1)
        scaler = lib.amp.GradScaler("cpu", init_scale=3.0)
        scaler.scale(w.sum()).backward()
        scaler.unscale_(opt)
        grads.append(w.grad.tolist())
    assert grads[0] == grads[1] and grads[0] != [1.0, 1.0]


def test_loading_a_partial_or_bad_state_dict_raises_and_changes_nothing() -> None:
    # The scale was set before the missing growth_factor raised a bare KeyError.
    scaler = plugrad.amp.GradScaler(init_scale=8.0)
    before = scaler.state_dict()
    with pytest.raises(plugrad.errors.MissingStateError, match=r"lacks \['growth_factor'"):
        scaler.load_state_dict({"scale": 4.0})
    for bad in ({"scale": -1.0}, {"growth_factor": 0.5}, {"backoff_factor": 2.0}):
        with pytest.raises(ValueError):
            scaler.load_state_dict({**before, **bad})
    assert scaler.state_dict() == before
    scaler.load_state_dict({**before, "scale": 4.0, "_growth_tracker": 3})
    assert scaler.get_scale() == 4.0 and scaler.state_dict()["_growth_tracker"] == 3
