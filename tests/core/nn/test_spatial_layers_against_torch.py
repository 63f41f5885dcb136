"""The convolution, pooling, normalization, resampling and padding layers against torch.nn.

Each layer gets PyTorch's parameters and buffers through ``load_state_dict``
(the keys are the same); the outputs, the gradients of the parameters and of
the input, and the buffers after the call must agree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import nn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)


def batch(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def same_as_pytorch(
    build: Callable[[Any], Any],
    input: np.ndarray,
    *,
    train: bool = True,
    call: Callable[[Any, Any], Any] = lambda layer, x: layer(x),
) -> None:
    ours, theirs = build(nn), build(torch.nn)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    ours.train(train)
    theirs.train(train)
    x, y = plugrad.asarray(input, requires_grad=True), torch.tensor(input, requires_grad=True)
    out, expected = call(ours, x), call(theirs, y)
    if isinstance(expected, tuple):  # (values, indices)
        np.testing.assert_array_equal(out[1].numpy(), expected[1].numpy())
        out, expected = out[0], expected[0]
    np.testing.assert_allclose(
        out.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-5
    )
    weights = RNG.uniform(0.5, 1.5, tuple(expected.shape)).astype(np.float32)
    out.backward(plugrad.asarray(weights))
    expected.backward(torch.tensor(weights))
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        np.testing.assert_allclose(
            p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=name
        )
    for (name, b), (_, c) in zip(ours.named_buffers(), theirs.named_buffers(), strict=True):
        np.testing.assert_allclose(b.numpy(), c.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


LAYERS = {
    "Conv1d": (lambda m: m.Conv1d(3, 4, 3, padding=1), batch(2, 3, 8)),
    "Conv1d strided groups unbatched": (
        lambda m: m.Conv1d(4, 6, 2, stride=2, groups=2, bias=False),
        batch(4, 9),
    ),
    "Conv1d same circular": (
        lambda m: m.Conv1d(2, 3, 4, padding="same", padding_mode="circular"),
        batch(2, 2, 7),
    ),
    "Conv1d reflect": (
        lambda m: m.Conv1d(2, 3, 3, padding=2, dilation=2, padding_mode="reflect"),
        batch(1, 2, 7),
    ),
    "Conv2d replicate": (
        lambda m: m.Conv2d(2, 3, (3, 2), padding=(1, 2), padding_mode="replicate"),
        batch(2, 2, 5, 4),
    ),
    "Conv2d same reflect": (
        lambda m: m.Conv2d(2, 3, 3, padding="same", dilation=(1, 2), padding_mode="reflect"),
        batch(2, 6, 7)[None, :2],
    ),
    "ConvTranspose1d": (
        lambda m: m.ConvTranspose1d(3, 2, 3, stride=2, padding=1, output_padding=1),
        batch(2, 3, 5),
    ),
    "ConvTranspose2d": (
        lambda m: m.ConvTranspose2d(4, 6, (3, 2), stride=(2, 1), groups=2, dilation=(1, 2)),
        batch(2, 4, 3, 4),
    ),
    "ConvTranspose2d unbatched": (lambda m: m.ConvTranspose2d(2, 3, 2, stride=2), batch(2, 3, 3)),
    "Conv3d": (lambda m: m.Conv3d(2, 4, (3, 2, 3), padding=1, groups=2), batch(2, 2, 4, 5, 3)),
    "Conv3d same circular unbatched": (
        lambda m: m.Conv3d(2, 3, (2, 3, 3), padding="same", padding_mode="circular"),
        batch(2, 3, 4, 5),
    ),
    "Conv3d reflect strided": (
        lambda m: m.Conv3d(2, 3, 3, stride=2, padding=(1, 2, 0), padding_mode="reflect"),
        batch(1, 2, 5, 5, 4),
    ),
    "ConvTranspose3d": (
        lambda m: m.ConvTranspose3d(
            4, 2, (2, 3, 2), stride=(2, 1, 3), groups=2, dilation=(1, 2, 1)
        ),
        batch(1, 4, 3, 2, 3),
    ),
    "MaxPool1d": (lambda m: m.MaxPool1d(3, 2, padding=1), batch(2, 3, 8)),
    "MaxPool3d": (
        lambda m: m.MaxPool3d(3, 2, padding=1, return_indices=True),
        batch(1, 2, 5, 4, 6),
    ),
    "AvgPool3d": (lambda m: m.AvgPool3d(2, 1, 1, count_include_pad=False), batch(2, 3, 4, 4)),
    "AdaptiveAvgPool3d": (lambda m: m.AdaptiveAvgPool3d((2, 3, None)), batch(1, 2, 5, 4, 6)),
    "AdaptiveMaxPool3d": (
        lambda m: m.AdaptiveMaxPool3d(2, return_indices=True),
        batch(1, 2, 5, 4, 6),
    ),
    "MaxPool1d indices": (
        lambda m: m.MaxPool1d(2, return_indices=True, ceil_mode=True),
        batch(2, 3, 7),
    ),
    "AvgPool1d": (lambda m: m.AvgPool1d(3, 2, 1, count_include_pad=False), batch(3, 8)),
    "AdaptiveAvgPool1d": (lambda m: m.AdaptiveAvgPool1d(3), batch(2, 3, 8)),
    "AdaptiveMaxPool1d": (lambda m: m.AdaptiveMaxPool1d(3, return_indices=True), batch(2, 3, 8)),
    "AdaptiveMaxPool2d": (lambda m: m.AdaptiveMaxPool2d((3, None)), batch(2, 3, 7, 5)),
    "GroupNorm": (lambda m: m.GroupNorm(2, 4), batch(3, 4, 5)),
    "GroupNorm without affine": (lambda m: m.GroupNorm(3, 6, eps=1e-3, affine=False), batch(2, 6)),
    "InstanceNorm1d": (lambda m: m.InstanceNorm1d(3), batch(2, 3, 6)),
    "InstanceNorm1d unbatched, affine": (lambda m: m.InstanceNorm1d(3, affine=True), batch(3, 6)),
    "InstanceNorm2d running statistics": (
        lambda m: m.InstanceNorm2d(3, momentum=0.2, track_running_stats=True),
        batch(2, 3, 4, 4),
    ),
    "RMSNorm": (lambda m: m.RMSNorm(6), batch(2, 3, 6)),
    "RMSNorm 2-d, eps": (lambda m: m.RMSNorm((3, 6), eps=1e-2), batch(2, 3, 6)),
    "RMSNorm without affine": (lambda m: m.RMSNorm([6], elementwise_affine=False), batch(4, 6)),
    "LocalResponseNorm": (lambda m: m.LocalResponseNorm(3, alpha=0.5), batch(2, 5, 4)),
    "PixelShuffle": (lambda m: m.PixelShuffle(2), batch(2, 8, 3, 3)),
    "PixelUnshuffle": (lambda m: m.PixelUnshuffle(3), batch(1, 2, 6, 3)),
    "Upsample": (lambda m: m.Upsample(scale_factor=2), batch(2, 3, 4)),
    "Upsample bilinear": (
        lambda m: m.Upsample(size=(7, 5), mode="bilinear", align_corners=False),
        batch(1, 2, 3, 4),
    ),
    "Upsample area 3-d": (lambda m: m.Upsample(size=(2, 3, 2), mode="area"), batch(2, 3, 5, 4, 3)),
    "UpsamplingNearest2d": (lambda m: m.UpsamplingNearest2d(size=(5, 7)), batch(1, 2, 3, 4)),
    "UpsamplingBilinear2d": (lambda m: m.UpsamplingBilinear2d(scale_factor=2), batch(1, 2, 3, 4)),
    "Unfold": (lambda m: m.Unfold((2, 3), padding=1, stride=2), batch(2, 3, 5, 6)),
    "Fold": (lambda m: m.Fold((4, 5), 2), batch(2, 8, 12)),
    "ZeroPad1d": (lambda m: m.ZeroPad1d((1, 2)), batch(2, 3)),
    "ZeroPad2d": (lambda m: m.ZeroPad2d((1, 2, 0, 3)), batch(1, 2, 3, 4)),
    "ZeroPad3d": (lambda m: m.ZeroPad3d(1), batch(1, 2, 3, 4)),
    "ConstantPad1d": (lambda m: m.ConstantPad1d(2, 3.5), batch(2, 3, 4)),
    "ConstantPad2d": (lambda m: m.ConstantPad2d((0, 1, 2, 0), -1.0), batch(2, 3, 4)),
    "ConstantPad3d": (lambda m: m.ConstantPad3d((1, 0, 0, 1, 2, 0), 0.5), batch(1, 2, 3, 4)),
    "ReflectionPad1d": (lambda m: m.ReflectionPad1d((3, 1)), batch(2, 3, 4)),
    "ReflectionPad2d": (lambda m: m.ReflectionPad2d((1, 2, 2, 0)), batch(2, 3, 4)),
    "ReflectionPad3d": (lambda m: m.ReflectionPad3d(1), batch(1, 2, 3, 4, 3)),
    "ReplicationPad1d": (lambda m: m.ReplicationPad1d((3, 1)), batch(2, 3, 4)),
    "ReplicationPad2d": (lambda m: m.ReplicationPad2d(2), batch(1, 2, 3, 4)),
    "ReplicationPad3d": (lambda m: m.ReplicationPad3d((1, 0, 2, 1, 0, 1)), batch(2, 3, 4, 2)),
    "CircularPad1d": (lambda m: m.CircularPad1d((3, 1)), batch(2, 3, 4)),
    "CircularPad2d": (lambda m: m.CircularPad2d((1, 2, 3, 0)), batch(1, 2, 3, 4)),
    "CircularPad3d": (lambda m: m.CircularPad3d(1), batch(1, 2, 3, 4, 3)),
}


@pytest.mark.parametrize("name", LAYERS)
def test_a_layer_agrees_with_pytorch(name: str) -> None:
    build, input = LAYERS[name]
    same_as_pytorch(build, input)


@pytest.mark.parametrize("train", [True, False])
def test_instance_norm_running_statistics_in_training_and_evaluation(train: bool) -> None:
    def build(m: Any) -> Any:
        layer = m.InstanceNorm1d(3, affine=True, track_running_stats=True, momentum=None)
        with (plugrad if m is nn else torch).no_grad():
            layer.running_mean.fill_(0.5)
            layer.running_var.fill_(2.0)
        return layer

    same_as_pytorch(build, batch(2, 3, 5), train=train)


@pytest.mark.parametrize("output_size", [(7,), (8,), [1, 2, 9]])
def test_conv_transpose1d_output_size(output_size: Any) -> None:
    same_as_pytorch(
        lambda m: m.ConvTranspose1d(2, 2, 3, stride=3, padding=1),
        batch(1, 2, 3),
        call=lambda layer, x: layer(x, output_size=output_size),
    )


def test_conv_transpose2d_output_size() -> None:
    same_as_pytorch(
        lambda m: m.ConvTranspose2d(2, 3, 3, stride=2, padding=1),
        batch(1, 2, 4, 4),
        call=lambda layer, x: layer(x, output_size=(8, 7)),
    )


def test_conv_transpose3d_output_size() -> None:
    same_as_pytorch(
        lambda m: m.ConvTranspose3d(2, 3, 3, stride=2, padding=1),
        batch(1, 2, 3, 4, 2),
        call=lambda layer, x: layer(x, output_size=(6, 8, 4)),
    )


def test_new_convolutions_initialize_like_pytorch() -> None:
    """The same bounds: every value inside PyTorch's, and spread to near them."""
    plugrad.manual_seed(0)
    for ours, fan_in in (
        (nn.Conv1d(4, 64, 5, groups=2), 2 * 5),
        (nn.ConvTranspose1d(4, 64, 5, groups=2), 32 * 5),
        (nn.ConvTranspose2d(8, 32, 3), 32 * 9),
        (nn.Conv3d(4, 64, 3), 4 * 27),
        (nn.ConvTranspose3d(4, 32, 2), 32 * 8),
    ):
        bound = 1 / np.sqrt(fan_in)
        for values in (ours.weight.detach().numpy(), ours.bias.detach().numpy()):
            assert np.abs(values).max() <= bound
            assert np.abs(values).max() > 0.7 * bound
