"""Bad arguments to the convolution, pooling, normalization, resampling and padding
functions and layers raise plugrad's typed errors, saying what is accepted, and change nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import plugrad
import plugrad.nn.functional as F
from plugrad import nn
from plugrad.errors import ArgumentError, DtypeError, InvalidArgumentError, ShapeError


def ones(*shape: int) -> plugrad.Tensor:
    return plugrad.ones(shape, dtype=plugrad.float64)


CASES: dict[str, tuple[Callable[[], Any], type[Exception], str]] = {
    "conv1d weight rank": (
        lambda: F.conv1d(ones(1, 2, 5), ones(3, 2, 1, 1)),
        ShapeError,
        r"weight must be \(O, C / groups, k\)",
    ),
    "conv1d input rank": (
        lambda: F.conv1d(ones(1, 1, 2, 5), ones(3, 2, 1)),
        ShapeError,
        r"input must be \(N, C, L\) or \(C, L\)",
    ),
    "conv1d channels": (
        lambda: F.conv1d(ones(1, 3, 5), ones(4, 2, 1), groups=2),
        ShapeError,
        "the input has 3 channels but the weight",
    ),
    "conv1d groups": (
        lambda: F.conv1d(ones(1, 4, 5), ones(3, 2, 1), groups=2),
        InvalidArgumentError,
        "groups must be a positive int dividing the 3 output channels",
    ),
    "conv1d same strided": (
        lambda: F.conv1d(ones(1, 2, 5), ones(3, 2, 3), stride=2, padding="same"),
        InvalidArgumentError,
        "padding='same' needs stride 1",
    ),
    "conv1d padding word": (
        lambda: F.conv1d(ones(1, 2, 5), ones(3, 2, 3), padding="full"),
        InvalidArgumentError,
        "padding must be 'valid', 'same' or ints",
    ),
    "conv1d stride pair": (
        lambda: F.conv1d(ones(1, 2, 5), ones(3, 2, 3), stride=(1, 1)),
        InvalidArgumentError,
        r"stride must be an int or a 1-tuple of ints >= 1, got \(1, 1\)",
    ),
    "conv1d kernel too long": (
        lambda: F.conv1d(ones(1, 2, 2), ones(3, 2, 3)),
        ShapeError,
        "smaller than the dilated kernel",
    ),
    "conv_transpose2d weight rank": (
        lambda: F.conv_transpose2d(ones(1, 2, 3, 3), ones(2, 3, 3)),
        ShapeError,
        r"weight must be \(C_in, C_out / groups, kh, kw\)",
    ),
    "conv_transpose2d channels": (
        lambda: F.conv_transpose2d(ones(1, 3, 3, 3), ones(2, 3, 3, 3)),
        ShapeError,
        "the input has 3 channels but the weight",
    ),
    "conv_transpose1d output_padding": (
        lambda: F.conv_transpose1d(ones(1, 2, 3), ones(2, 3, 3), stride=2, output_padding=2),
        InvalidArgumentError,
        "output_padding .* must be smaller than the stride",
    ),
    "conv_transpose1d padding too large": (
        lambda: F.conv_transpose1d(ones(1, 2, 1), ones(2, 3, 2), padding=2),
        ShapeError,
        "the output would have size",
    ),
    "conv_transpose2d groups": (
        lambda: F.conv_transpose2d(ones(1, 3, 3, 3), ones(3, 1, 3, 3), groups=2),
        InvalidArgumentError,
        "groups must be a positive int dividing the 3 input channels",
    ),
    "max_pool1d input rank": (
        lambda: F.max_pool1d(ones(5), 2),
        ShapeError,
        r"input must be \(N, C, L\) or \(C, L\)",
    ),
    "max_pool1d padding": (
        lambda: F.max_pool1d(ones(1, 6), 2, padding=2),
        InvalidArgumentError,
        "at most half the",
    ),
    "avg_pool1d kernel": (
        lambda: F.avg_pool1d(ones(1, 6), 0),
        InvalidArgumentError,
        "kernel_size must be an int or a 1-tuple of ints >= 1",
    ),
    "avg_pool1d too short": (
        lambda: F.avg_pool1d(ones(1, 2), 3),
        ShapeError,
        "smaller than the kernel",
    ),
    "adaptive_max_pool2d size": (
        lambda: F.adaptive_max_pool2d(ones(1, 4, 4), (2, -1)),
        InvalidArgumentError,
        "output_size must be 2 non-negative int",
    ),
    # zip() stopped at the shorter: (1, 2, 3) for two axes pooled to (1, 2)
    "conv2d kernel of size 0": (  # gave an output larger than the input
        lambda: F.conv2d(ones(1, 2, 4, 4), ones(2, 2, 0, 3)),
        ShapeError,
        "kernel of size 0",
    ),
    "adaptive_max_pool2d three sizes": (
        lambda: F.adaptive_max_pool2d(ones(1, 3, 7), (1, 2, 3)),
        InvalidArgumentError,
        "output_size must be 2 non-negative int",
    ),
    "adaptive_avg_pool2d three sizes": (
        lambda: F.adaptive_avg_pool2d(ones(1, 3, 7), (1, 2, 3)),
        InvalidArgumentError,
        "output_size must be 2 non-negative int",
    ),
    "adaptive_avg_pool2d one size": (
        lambda: F.adaptive_avg_pool2d(ones(1, 3, 7), (2,)),
        InvalidArgumentError,
        "output_size must be 2 non-negative int",
    ),
    "layer_norm of integers": (  # computed in int64: truncated zeros
        lambda: F.layer_norm(plugrad.asarray([[1, 2, 3, 10]]), (4,)),
        DtypeError,
        "takes a (real )?floating-point input",
    ),
    "group_norm of integers": (
        lambda: F.group_norm(plugrad.asarray([[1, 2, 3, 10]]), 1),
        DtypeError,
        "takes a (real )?floating-point input",
    ),
    "instance_norm of integers": (
        lambda: F.instance_norm(plugrad.asarray([[[1, 2, 3, 10]]])),
        DtypeError,
        "takes a (real )?floating-point input",
    ),
    "dropout of integers": (  # became float64
        lambda: F.dropout(plugrad.asarray([1, 2, 3]), 0.5),
        DtypeError,
        "convert it first",
    ),
    "adaptive_avg_pool1d rank": (
        lambda: F.adaptive_avg_pool1d(ones(1, 1, 4, 4), 2),
        ShapeError,
        r"input must be \(N, C, L\) or \(C, L\)",
    ),
    "group_norm groups": (
        lambda: F.group_norm(ones(2, 6, 3), 4),
        InvalidArgumentError,
        "num_groups must be a positive int dividing the 6 channels",
    ),
    "group_norm weight": (
        lambda: F.group_norm(ones(2, 6, 3), 3, ones(3)),
        ShapeError,
        r"weight must have shape \(6,\)",
    ),
    "instance_norm rank": (
        lambda: F.instance_norm(ones(2, 3)),
        ShapeError,
        "at least one spatial axis",
    ),
    "instance_norm single element": (
        lambda: F.instance_norm(ones(2, 3, 1)),
        ShapeError,
        "more than one spatial element",
    ),
    "instance_norm no running statistics": (
        lambda: F.instance_norm(ones(2, 3, 4), use_input_stats=False),
        ArgumentError,
        "give both",
    ),
    "rms_norm shape": (
        lambda: F.rms_norm(ones(2, 3), (2,)),
        ShapeError,
        "must be the trailing axes",
    ),
    "local_response_norm size": (
        lambda: F.local_response_norm(ones(1, 3, 2), 0),
        InvalidArgumentError,
        "size must be a positive int",
    ),
    "pixel_shuffle channels": (
        lambda: F.pixel_shuffle(ones(1, 6, 2, 2), 2),
        ShapeError,
        "not divisible by upscale_factor",
    ),
    "pixel_unshuffle size": (
        lambda: F.pixel_unshuffle(ones(1, 1, 3, 4), 2),
        ShapeError,
        "divisible by downscale_factor",
    ),
    "interpolate mode": (
        lambda: F.interpolate(ones(1, 1, 4), size=3, mode="quadratic"),
        InvalidArgumentError,
        "mode must be one of",
    ),
    "interpolate rank": (
        lambda: F.interpolate(ones(1, 1, 4), size=3, mode="bilinear"),
        ShapeError,
        "mode='bilinear' takes 4-d input",
    ),
    "interpolate both sizes": (
        lambda: F.interpolate(ones(1, 1, 4), size=3, scale_factor=2),
        ArgumentError,
        "exactly one of size and scale_factor",
    ),
    "interpolate align_corners": (
        lambda: F.interpolate(ones(1, 1, 4), size=3, align_corners=True),
        InvalidArgumentError,
        "align_corners is for the modes",
    ),
    "interpolate empty": (
        lambda: F.interpolate(ones(1, 1, 4), scale_factor=0.1),
        ShapeError,
        "gives the empty size",
    ),
    "interpolate infinite factor": (  # (a bare OverflowError)
        lambda: F.interpolate(ones(1, 1, 4), scale_factor=float("inf")),
        InvalidArgumentError,
        "scale_factor must be a positive finite number",
    ),
    "interpolate nan factor": (
        lambda: F.interpolate(ones(1, 1, 4, 4), scale_factor=(2.0, float("nan"))),
        InvalidArgumentError,
        "scale_factor must be a positive finite number",
    ),
    "interpolate size count": (
        lambda: F.interpolate(ones(1, 1, 4, 4), size=(2, 2, 2)),
        InvalidArgumentError,
        "size must be an int or a pair of ints",
    ),
    "unfold too small": (
        lambda: F.unfold(ones(1, 1, 2, 2), 3),
        ShapeError,
        "smaller than the dilated kernel",
    ),
    "fold blocks": (
        lambda: F.fold(ones(1, 4, 5), (3, 3), 2),
        ShapeError,
        "has 4 blocks, but the input",
    ),
    "fold depth": (
        lambda: F.fold(ones(1, 5, 4), (3, 3), 2),
        ShapeError,
        "not divisible by the kernel",
    ),
    "Conv1d padding_mode": (
        lambda: nn.Conv1d(2, 3, 3, padding_mode="mirror"),
        InvalidArgumentError,
        "padding_mode must be one of",
    ),
    "Conv1d groups": (
        lambda: nn.Conv1d(3, 4, 3, groups=2),
        InvalidArgumentError,
        "groups=2 must divide in_channels=3",
    ),
    "ConvTranspose2d padding_mode": (
        lambda: nn.ConvTranspose2d(2, 3, 3, padding_mode="circular"),
        InvalidArgumentError,
        "only padding_mode='zeros'",
    ),
    "ConvTranspose1d padding word": (
        lambda: nn.ConvTranspose1d(2, 3, 3, padding="same"),
        InvalidArgumentError,
        "padding must be ints",
    ),
    "ConvTranspose2d output_size": (
        lambda: nn.ConvTranspose2d(2, 3, 3, stride=2)(ones(1, 2, 3, 3).float(), output_size=(4, 9)),
        ShapeError,
        "output_size .* is not reachable",
    ),
    "GroupNorm groups": (
        lambda: nn.GroupNorm(4, 6),
        InvalidArgumentError,
        "num_groups=4 must be a positive int dividing num_channels=6",
    ),
    "InstanceNorm2d rank": (
        lambda: nn.InstanceNorm2d(3)(ones(3, 4)),
        ShapeError,
        "expected a 3-d",
    ),
    "InstanceNorm1d affine channels": (
        lambda: nn.InstanceNorm1d(3, affine=True)(ones(2, 4, 5).float()),
        ShapeError,
        "expected 3 channels",
    ),
    "ReflectionPad2d padding": (
        lambda: nn.ReflectionPad2d((1, 2, 3)),
        InvalidArgumentError,
        "padding must be an int or 4 ints",
    ),
    "ReflectionPad1d too much": (
        lambda: nn.ReflectionPad1d(3)(ones(1, 3)),
        ArgumentError,
        "pads axis 1 of length 3 by at most 2",
    ),
    # It said "axis 2 of length 1", the length left after the crop, of an axis of 5.
    "circular pad of more than the cropped axis holds": (
        lambda: F.pad(ones(1, 1, 5), (3, -4), mode="circular"),
        ArgumentError,
        r"pads axis 2 of length 5 \(1 after cropping\) by at most 1",
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_bad_input_raises_a_typed_error(name: str) -> None:
    call, error, message = CASES[name]
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    "refused",
    [
        lambda mean, var: F.instance_norm(plugrad.ones(2, 3, 1), mean, var),
        # The weight's and bias's shapes were checked after the statistics moved.
        lambda mean, var: F.instance_norm(plugrad.randn(2, 3, 4), mean, var, plugrad.ones(2)),
        lambda mean, var: F.instance_norm(plugrad.randn(2, 3, 4), mean, var, bias=plugrad.ones(4)),
    ],
)
def test_a_refused_call_leaves_the_running_statistics_as_they_were(refused) -> None:
    mean, var = plugrad.zeros(3), plugrad.ones(3)
    with pytest.raises(ShapeError):
        refused(mean, var)
    np.testing.assert_array_equal(mean.numpy(), np.zeros(3))
    np.testing.assert_array_equal(var.numpy(), np.ones(3))


@pytest.mark.parametrize("function", ["batch_norm", "instance_norm"])
@pytest.mark.parametrize("integer", ["running_mean", "running_var"])
def test_integer_running_statistics_are_refused_not_truncated(function, integer) -> None:
    # An int64 running_var became [0, 1, 0] (PyTorch refuses it).
    stats = {"running_mean": plugrad.zeros(3), "running_var": plugrad.ones(3)}
    stats[integer] = plugrad.ones(3, dtype=plugrad.int64)
    before = {name: value.tolist() for name, value in stats.items()}
    x = plugrad.randn(4, 3, 2)
    with pytest.raises(plugrad.errors.DtypeError, match=f"{integer} must be a real floating"):
        if function == "batch_norm":
            F.batch_norm(x, stats["running_mean"], stats["running_var"], training=True)
        else:
            F.instance_norm(x, stats["running_mean"], stats["running_var"])
    assert {name: value.tolist() for name, value in stats.items()} == before


def test_the_errors_are_the_builtin_ones_pytorch_code_catches() -> None:
    with pytest.raises(ValueError):
        F.group_norm(ones(2, 6, 3), 4)
    with pytest.raises(ValueError):
        F.conv1d(ones(1, 3, 5), ones(4, 2, 1), groups=2)


@pytest.mark.parametrize("name", ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"])
def test_a_bias_of_the_wrong_length_is_named(name):
    # The error came from an internal reshape, naming neither the bias nor its length.
    nd = 1 if name.endswith("1d") else 2
    x = plugrad.ones((1, 2) + (5,) * nd)
    weight = (
        plugrad.ones((3, 2) + (2,) * nd)
        if "transpose" not in name
        else plugrad.ones((2, 3) + (2,) * nd)
    )
    with pytest.raises(ShapeError, match=rf"{name}\(\): the bias must be 1-D with one element"):
        getattr(F, name)(x, weight, bias=plugrad.ones(2 if "transpose" not in name else 4))


def test_module_get_name_and_parameter_dict_fromkeys_as_pytorch():
    assert plugrad.nn.Linear(2, 2)._get_name() == "Linear"
    keys = plugrad.nn.ParameterDict().fromkeys(["a", "b"])
    assert list(keys.items()) == [("a", None), ("b", None)] and list(keys.parameters()) == []


@pytest.mark.parametrize("factor", [np.float32(1.5), np.float64(1.5), np.int64(2)])
def test_interpolate_takes_a_numpy_scale_factor_as_pytorch(factor) -> None:
    # A NumPy float32 was iterated: a bare TypeError.
    torch = pytest.importorskip("torch")
    x = np.arange(8.0).reshape(1, 2, 4)
    for given in (factor, (factor,)):
        ours = F.interpolate(plugrad.tensor(x), scale_factor=given, mode="linear")
        theirs = torch.nn.functional.interpolate(torch.tensor(x), scale_factor=given, mode="linear")
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-12)


@pytest.mark.parametrize(
    "dropout", [F.dropout, F.dropout1d, F.dropout2d, F.alpha_dropout, F.feature_alpha_dropout]
)
@pytest.mark.parametrize("p", [np.float32(0.5), np.float64(1.0), np.int64(0)])
def test_dropouts_take_a_numpy_probability(dropout, p) -> None:
    # It was refused as "not a probability"; PyTorch takes it.
    x = plugrad.ones(2, 3, 4)
    _ = plugrad.manual_seed(0)
    out = dropout(x, p).numpy()
    _ = plugrad.manual_seed(0)
    np.testing.assert_array_equal(out, dropout(x, float(p)).numpy())
    with pytest.raises(InvalidArgumentError, match="probability between 0 and 1"):
        dropout(x, np.float32(1.5))
