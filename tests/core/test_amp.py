"""plugrad.amp beside GradScaler and autocast (tests/core/test_autocast.py): PyTorch's
custom_fwd and custom_bwd decorators outside autocast and is_autocast_available."""

from __future__ import annotations

import pytest

import plugrad
from plugrad.errors import ArgumentError

torch = pytest.importorskip("torch")


def _double(lib, **forward_options):
    class Double(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", **forward_options)
        def forward(ctx, x, scale=2.0):
            ctx.scale = scale
            return x * scale

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            return grad * ctx.scale, None

    return Double


@pytest.mark.parametrize("cast_inputs", [None, "float16"])
def test_custom_fwd_and_custom_bwd_run_the_function_as_torch_outside_autocast(cast_inputs) -> None:
    # They were missing. Outside autocast PyTorch's run forward and backward unchanged,
    # cast_inputs or not.
    results = []
    for lib in (plugrad, torch):
        options = {} if cast_inputs is None else {"cast_inputs": getattr(lib, cast_inputs)}
        x = lib.tensor([1.0, -3.0], dtype=lib.float64, requires_grad=True)
        y = _double(lib, **options).apply(x, 3.0)
        y.sum().backward()
        results.append((y.tolist(), str(y.dtype).split(".")[-1], x.grad.tolist()))
    assert results[0] == results[1] == ([3.0, -9.0], "float64", [3.0, 3.0])
    bare = plugrad.amp.custom_bwd(lambda ctx, g: g, device_type="cpu")
    assert bare(None, 5) == 5


def test_custom_fwd_refuses_what_torch_refuses_with_typed_errors() -> None:
    with pytest.raises(TypeError):  # (device_type is keyword-only and required, as torch's)
        plugrad.amp.custom_fwd(lambda ctx, x: x)
    for bad in (
        lambda: plugrad.amp.custom_fwd(device_type=1),
        lambda: plugrad.amp.custom_bwd(device_type=None),
        lambda: plugrad.amp.custom_fwd(device_type="cpu", cast_inputs="half"),
        lambda: plugrad.amp.is_autocast_available(0),
    ):
        with pytest.raises(ArgumentError):
            bad()


def test_autocast_is_available_for_the_cpu_and_cuda() -> None:
    # plugrad's autocast covers "cpu" and "cuda"; other device types (PyTorch's "mps") are
    # refused, so code that enables autocast only where available runs without it there.
    for device_type, available in (("cpu", True), ("cuda", True), ("cuda:0", True), ("mps", False)):
        assert plugrad.amp.is_autocast_available(device_type) is available
    with plugrad.autocast("mps", enabled=plugrad.amp.is_autocast_available("mps")):
        assert not plugrad.is_autocast_enabled("mps")


def test_an_unknown_device_type_is_refused_as_pytorch_refuses_it() -> None:
    # 'bogus' was accepted without a word (PyTorch raises).
    for call in (
        lambda: plugrad.amp.is_autocast_available("bogus"),
        lambda: plugrad.amp.custom_fwd(device_type="cdua"),
        lambda: plugrad.amp.custom_bwd(device_type="gpu"),
    ):
        with pytest.raises(plugrad.errors.InvalidArgumentError, match="unknown device type"):
            call()
