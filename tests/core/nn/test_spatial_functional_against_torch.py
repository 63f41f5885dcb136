"""Convolution, pooling, normalization, resampling and block functions against torch.nn.functional.

Each row is a program ``program(F, lib, *leaves)`` run with plugrad (on every
backend under test) and with PyTorch from the same float64 arrays: the outputs
(values, dtypes, shapes, integer indices) and the gradients of every leaf for a
weighted sum of the first output must agree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import plugrad
import plugrad.nn.functional as PF

torch = pytest.importorskip("torch")

# PyTorch warns that its own "same" padding of an even kernel copies the input.
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")

RNG = np.random.default_rng(0)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


def _run(F: Any, lib: Any, program: Callable[..., Any], arrays: tuple[np.ndarray, ...]) -> Any:
    if lib is plugrad:
        leaves = [plugrad.asarray(a, requires_grad=True) for a in arrays]
    else:
        leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = program(F, lib, *leaves)
    first = out[0] if isinstance(out, tuple) else out
    weights = np.linspace(0.5, 1.5, first.numel()).reshape(tuple(first.shape))
    weight = plugrad.asarray(weights) if lib is plugrad else torch.tensor(weights)
    (first * weight).sum().backward()
    outs = out if isinstance(out, tuple) else (out,)
    values = [np.asarray(o.detach().numpy()) for o in outs]
    grads = [None if x.grad is None else np.asarray(x.grad.numpy()) for x in leaves]
    return values, grads


def assert_agrees(
    program: Callable[..., Any], *arrays: np.ndarray, rtol: float = 1e-10, atol: float = 1e-12
) -> None:
    """``program`` gives PyTorch's values (and integer outputs) and gradients."""
    ours, our_grads = _run(PF, plugrad, program, arrays)
    theirs, their_grads = _run(torch.nn.functional, torch, program, arrays)
    assert len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs):
        assert mine.shape == reference.shape
        assert mine.dtype == reference.dtype
        np.testing.assert_allclose(mine, reference, rtol=rtol, atol=atol)
    for index, (mine, reference) in enumerate(zip(our_grads, their_grads)):
        assert (mine is None) == (reference is None), f"leaf {index}"
        if reference is not None:
            np.testing.assert_allclose(
                mine, reference, rtol=rtol, atol=atol, err_msg=f"leaf {index}"
            )


X1 = randn(2, 4, 9)
X2 = randn(2, 4, 5, 6)
X3 = randn(2, 4, 5, 4, 6)

CONVOLUTIONS = {
    "conv1d": (
        lambda F, lib, x, w, b: F.conv1d(x, w, b, stride=2, padding=1, groups=2),
        (X1, randn(6, 2, 3), randn(6)),
    ),
    "conv1d same dilated": (
        lambda F, lib, x, w: F.conv1d(x, w, padding="same", dilation=2),
        (X1, randn(3, 4, 4)),
    ),
    "conv1d valid unbatched": (
        lambda F, lib, x, w: F.conv1d(x, w, padding="valid", stride=(3,)),
        (X1[0], randn(5, 4, 2)),
    ),
    "conv2d same, even kernel": (
        lambda F, lib, x, w: F.conv2d(x, w, padding="same"),
        (X2, randn(3, 4, 2, 4)),
    ),
    "conv2d one-element sequences": (
        lambda F, lib, x, w: F.conv2d(x, w, stride=(2,), padding=[1], dilation=(2,)),
        (X2, randn(3, 4, 2, 2)),
    ),
    "conv_transpose1d": (
        lambda F, lib, x, w, b: F.conv_transpose1d(x, w, b, 2, 1, 1),
        (X1, randn(4, 3, 3), randn(3)),
    ),
    "conv_transpose1d groups dilation unbatched": (
        lambda F, lib, x, w: F.conv_transpose1d(x, w, None, 3, 2, 2, 2, 2),
        (X1[0], randn(4, 2, 3)),
    ),
    "conv_transpose1d output_padding above padding": (
        lambda F, lib, x, w: F.conv_transpose1d(x, w, stride=3, padding=1, output_padding=2),
        (X1, randn(4, 2, 2)),
    ),
    "conv_transpose2d": (
        lambda F, lib, x, w, b: F.conv_transpose2d(x, w, b),
        (X2, randn(4, 3, 3, 2), randn(3)),
    ),
    "conv_transpose2d strided padded": (
        lambda F, lib, x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
        (X2, randn(4, 2, 3, 3)),
    ),
    # One value in a sequence stands for every axis, as PyTorch's convolutions take it.
    "conv_transpose2d one-element sequences": (
        lambda F, lib, x, w: F.conv_transpose2d(x, w, stride=(2,), padding=[1], dilation=(2,)),
        (X2, randn(4, 2, 3, 3)),
    ),
    "conv_transpose2d mixed": (
        lambda F, lib, x, w, b: F.conv_transpose2d(x, w, b, (2, 1), (1, 0), (0, 1), 2, (1, 2)),
        (X2, randn(4, 3, 3, 2), randn(6)),
    ),
    "conv_transpose2d output_padding from dilation": (
        lambda F, lib, x, w: F.conv_transpose2d(x, w, dilation=3, output_padding=2),
        (X2[0], randn(4, 2, 2, 2)),
    ),
    # (3-D convolutions were missing)
    "conv3d": (lambda F, lib, x, w, b: F.conv3d(x, w, b), (X3, randn(3, 4, 3, 2, 3), randn(3))),
    "conv3d strided padded dilated groups": (
        lambda F, lib, x, w: F.conv3d(x, w, None, (2, 1, 3), (1, 0, 2), (1, 2, 1), 2),
        (X3, randn(6, 2, 3, 2, 2)),
    ),
    "conv3d same, even kernel, unbatched": (
        lambda F, lib, x, w: F.conv3d(x, w, padding="same", dilation=(2, 1, 1)),
        (X3[0], randn(3, 4, 2, 3, 4)),
    ),
    "conv3d valid, kernel of the whole input": (
        lambda F, lib, x, w: F.conv3d(x, w, padding="valid"),
        (X3, randn(2, 4, 5, 4, 6)),
    ),
    "conv_transpose3d": (
        lambda F, lib, x, w, b: F.conv_transpose3d(x, w, b),
        (X3, randn(4, 3, 3, 2, 3), randn(3)),
    ),
    "conv_transpose3d strided padded": (
        lambda F, lib, x, w: F.conv_transpose3d(x, w, None, (2, 1, 3), (1, 0, 1), (1, 0, 2)),
        (X3, randn(4, 2, 3, 2, 3)),
    ),
    "conv_transpose3d groups dilation unbatched": (
        lambda F, lib, x, w, b: F.conv_transpose3d(x, w, b, 2, 0, (2, 1, 0), 2, (3, 1, 1)),
        (X3[0], randn(4, 1, 2, 2, 2), randn(2)),
    ),
    "conv_transpose3d output_padding above padding": (
        lambda F, lib, x, w: F.conv_transpose3d(
            x, w, stride=3, padding=(2, 0, 1), output_padding=2
        ),
        (X3, randn(4, 2, 3, 1, 2)),
    ),
}

TIES3 = np.round(randn(2, 2, 5, 5, 5))  # many equal maxima: the first is taken, as PyTorch's

POOLING = {
    # (3-D pooling was missing)
    "max_pool3d": (lambda F, lib, x: F.max_pool3d(x, 2), (X3,)),
    "max_pool3d indices ceil dilation": (
        lambda F, lib, x: F.max_pool3d(
            x, (3, 2, 2), (2, 2, 3), (1, 1, 0), (2, 1, 1), ceil_mode=True, return_indices=True
        ),
        (X3,),
    ),
    "max_pool3d ties unbatched": (
        lambda F, lib, x: F.max_pool3d(x, 3, 2, 1, return_indices=True),
        (TIES3[0],),
    ),
    "avg_pool3d": (lambda F, lib, x: F.avg_pool3d(x, 3, 2, 1), (X3,)),
    "avg_pool3d ceil, padding left out": (
        lambda F, lib, x: F.avg_pool3d(x, (2, 3, 2), (3, 2, 2), (1, 1, 0), True, False),
        (X3,),
    ),
    "avg_pool3d divisor": (lambda F, lib, x: F.avg_pool3d(x, 2, divisor_override=3), (X3[0],)),
    "adaptive_avg_pool3d": (lambda F, lib, x: F.adaptive_avg_pool3d(x, (3, None, 4)), (X3,)),
    "adaptive_max_pool3d": (
        lambda F, lib, x: F.adaptive_max_pool3d(x, (3, 3, 4), return_indices=True),
        (X3,),
    ),
    "adaptive_max_pool3d ties": (
        lambda F, lib, x: F.adaptive_max_pool3d(x, 2, return_indices=True),
        (TIES3,),
    ),
    "max_pool1d": (lambda F, lib, x: F.max_pool1d(x, 3), (X1,)),
    "max_pool1d indices": (
        lambda F, lib, x: F.max_pool1d(x, 3, 2, 1, 2, ceil_mode=True, return_indices=True),
        (X1,),
    ),
    "max_pool1d unbatched": (
        lambda F, lib, x: F.max_pool1d(x, (2,), (1,), return_indices=True),
        (X1[0],),
    ),
    "avg_pool1d": (lambda F, lib, x: F.avg_pool1d(x, 3, 2, 1), (X1,)),
    "avg_pool1d ceil, padding left out": (
        lambda F, lib, x: F.avg_pool1d(x, 4, 3, 2, ceil_mode=True, count_include_pad=False),
        (X1[0],),
    ),
    "adaptive_avg_pool1d": (lambda F, lib, x: F.adaptive_avg_pool1d(x, 4), (X1,)),
    "adaptive_avg_pool1d larger": (lambda F, lib, x: F.adaptive_avg_pool1d(x, 12), (X1,)),
    "adaptive_max_pool1d": (
        lambda F, lib, x: F.adaptive_max_pool1d(x, 4, return_indices=True),
        (X1,),
    ),
    "adaptive_max_pool1d even": (lambda F, lib, x: F.adaptive_max_pool1d(x, 3), (X1[0],)),
    "adaptive_max_pool2d": (
        lambda F, lib, x: F.adaptive_max_pool2d(x, (2, 4), return_indices=True),
        (X2,),
    ),
    "adaptive_max_pool2d None, larger": (
        lambda F, lib, x: F.adaptive_max_pool2d(x, (None, 7), return_indices=True),
        (X2[0],),
    ),
    "adaptive_max_pool2d one": (lambda F, lib, x: F.adaptive_max_pool2d(x, 1), (X2,)),
}


def _instance_norm_with_running_stats(F: Any, lib: Any, x: Any) -> Any:
    mean, var = lib.tensor(np.linspace(-1, 1, 4)), lib.tensor(np.linspace(0.5, 2, 4))
    out = F.instance_norm(x, mean, var, momentum=0.3)
    return out, mean, var


NORMALIZATION = {
    "group_norm": (
        lambda F, lib, x, w, b: F.group_norm(x, 2, w, b, eps=1e-3),
        (X2, randn(4), randn(4)),
    ),
    "group_norm one group, 3-d": (lambda F, lib, x: F.group_norm(x, 1), (X1,)),
    "group_norm 2-d": (lambda F, lib, x: F.group_norm(x, 4), (randn(3, 8),)),
    "instance_norm": (
        lambda F, lib, x, w, b: F.instance_norm(x, weight=w, bias=b),
        (X2, randn(4), randn(4)),
    ),
    "instance_norm running statistics": (_instance_norm_with_running_stats, (X1,)),
    "instance_norm from running statistics": (
        lambda F, lib, x: F.instance_norm(
            x,
            lib.tensor(np.array([0.5, -1, 0, 2])),
            lib.tensor(np.array([1, 2, 0.5, 3])),
            use_input_stats=False,
        ),
        (X1,),
    ),
    "rms_norm": (lambda F, lib, x, w: F.rms_norm(x, (5, 6), w), (X2, randn(5, 6))),
    "rms_norm eps": (lambda F, lib, x: F.rms_norm(x, [9], eps=0.5), (X1,)),
    "rms_norm default eps": (lambda F, lib, x: F.rms_norm(x * 1e-5, (9,)), (X1,)),
    "local_response_norm": (
        lambda F, lib, x: F.local_response_norm(x, 3, 0.1, 0.6, 2.0),
        (X2,),
    ),
    "local_response_norm even size, 3-d": (lambda F, lib, x: F.local_response_norm(x, 2), (X1,)),
    "local_response_norm 5-d": (
        lambda F, lib, x: F.local_response_norm(x, 5, alpha=1.0),
        (randn(2, 6, 2, 3, 2),),
    ),
}

RESAMPLING = {
    "pixel_shuffle": (lambda F, lib, x: F.pixel_shuffle(x, 2), (randn(2, 3, 8, 2, 3),)),
    "pixel_shuffle 3-d": (lambda F, lib, x: F.pixel_shuffle(x, 3), (randn(9, 2, 1),)),
    "pixel_unshuffle": (lambda F, lib, x: F.pixel_unshuffle(x, 2), (randn(3, 4, 6),)),
    "nearest scale": (lambda F, lib, x: F.interpolate(x, scale_factor=2), (X1,)),
    "nearest size": (lambda F, lib, x: F.interpolate(x, size=7), (X1,)),
    # bicubic: PyTorch's cubic convolution (a = -0.75), neighbours clamped at the edges
    "bicubic up": (lambda F, lib, x: F.interpolate(x, size=(9, 4), mode="bicubic"), (X2,)),
    "bicubic by factors": (
        lambda F, lib, x: F.interpolate(x, scale_factor=(0.5, 1.7), mode="bicubic"),
        (X2,),
    ),
    "bicubic align_corners": (
        lambda F, lib, x: F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=True),
        (X2,),
    ),
    "nearest down": (lambda F, lib, x: F.interpolate(x, scale_factor=0.6), (X1,)),
    "nearest 2-d": (lambda F, lib, x: F.interpolate(x, scale_factor=(1.5, 0.7)), (X2,)),
    "nearest 3-d": (lambda F, lib, x: F.interpolate(x, size=(4, 2, 7)), (randn(1, 2, 3, 4, 5),)),
    "nearest-exact": (
        lambda F, lib, x: F.interpolate(x, scale_factor=2.3, mode="nearest-exact"),
        (X1,),
    ),
    "linear": (lambda F, lib, x: F.interpolate(x, size=7, mode="linear"), (X1,)),
    "linear corners": (
        lambda F, lib, x: F.interpolate(x, size=20, mode="linear", align_corners=True),
        (X1,),
    ),
    "linear scale": (lambda F, lib, x: F.interpolate(x, scale_factor=1.5, mode="linear"), (X1,)),
    "linear recomputed": (
        lambda F, lib, x: F.interpolate(
            x, scale_factor=2.5, mode="linear", recompute_scale_factor=True
        ),
        (X1,),
    ),
    "linear to one": (
        lambda F, lib, x: F.interpolate(x, size=1, mode="linear", align_corners=True),
        (X1,),
    ),
    "bilinear": (lambda F, lib, x: F.interpolate(x, size=(9, 11), mode="bilinear"), (X2,)),
    "bilinear corners": (
        lambda F, lib, x: F.interpolate(x, size=(9, 4), mode="bilinear", align_corners=True),
        (X2,),
    ),
    "bilinear scale": (lambda F, lib, x: F.interpolate(x, scale_factor=3, mode="bilinear"), (X2,)),
    # antialias: the filter stretched by the shrinking factor (it raised InvalidArgumentError)
    "bilinear antialias down": (
        lambda F, lib, x: F.interpolate(x, size=(2, 3), mode="bilinear", antialias=True),
        (X2,),
    ),
    "bilinear antialias by factors": (
        lambda F, lib, x: F.interpolate(
            x, scale_factor=(0.3, 1.7), mode="bilinear", antialias=True
        ),
        (randn(1, 2, 13, 6),),
    ),
    "bicubic antialias down": (
        lambda F, lib, x: F.interpolate(x, scale_factor=0.45, mode="bicubic", antialias=True),
        (randn(2, 1, 11, 16),),
    ),
    "bicubic antialias up": (
        lambda F, lib, x: F.interpolate(x, size=(9, 7), mode="bicubic", antialias=True),
        (X2,),
    ),
    "bicubic antialias corners": (
        lambda F, lib, x: F.interpolate(
            x, size=(4, 9), mode="bicubic", antialias=True, align_corners=True
        ),
        (randn(1, 2, 10, 5),),
    ),
    "bilinear antialias recomputed": (
        lambda F, lib, x: F.interpolate(
            x, scale_factor=0.3, mode="bilinear", antialias=True, recompute_scale_factor=True
        ),
        (randn(1, 1, 10, 7),),
    ),
    "trilinear": (
        lambda F, lib, x: F.interpolate(x, size=(4, 5, 7), mode="trilinear"),
        (randn(1, 2, 3, 4, 5),),
    ),
    "area": (lambda F, lib, x: F.interpolate(x, size=(3, 4), mode="area"), (X2,)),
    "area 1-d": (lambda F, lib, x: F.interpolate(x, scale_factor=0.5, mode="area"), (X1,)),
    "area 3-d": (lambda F, lib, x: F.interpolate(x, size=(3, 2, 4), mode="area"), (X3,)),
    "area 3-d up": (
        lambda F, lib, x: F.interpolate(x, scale_factor=(1.5, 2, 0.5), mode="area"),
        (X3,),
    ),
    "unfold": (lambda F, lib, x: F.unfold(x, (2, 3)), (X2,)),
    "unfold strided, padded, dilated": (lambda F, lib, x: F.unfold(x, 2, 2, 1, 2), (X2,)),
    "unfold unbatched": (
        lambda F, lib, x: F.unfold(x, (3, 1), padding=(1, 0), stride=(2, 1)),
        (X2[0],),
    ),
    "fold": (lambda F, lib, x: F.fold(x, (5, 6), (2, 3)), (randn(2, 24, 16),)),
    "fold strided, padded, dilated": (
        lambda F, lib, x: F.fold(x, (5, 6), 2, 2, 1, 2),
        (randn(2, 12, 9),),
    ),
    "fold unbatched": (lambda F, lib, x: F.fold(x, (4, 6), 2, stride=2), (randn(8, 6),)),
}

TABLE = {**CONVOLUTIONS, **POOLING, **NORMALIZATION, **RESAMPLING}


@pytest.mark.parametrize("name", TABLE)
def test_agrees_with_pytorch(name: str, backend: Any) -> None:
    program, arrays = TABLE[name]
    assert_agrees(program, *arrays)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "linear"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_interpolate_picks_pytorchs_elements_for_every_size(mode: str, dtype: Any) -> None:
    """The source positions, computed as PyTorch does, for many sizes and factors."""
    for size in range(1, 13):
        x = np.arange(1, size + 1, dtype=dtype)[None, None] ** 2
        calls = [{"size": out} for out in range(1, 30)] + [
            {"scale_factor": f} for f in (0.3, 0.7, 1.1, 1.5, 2.0, 2.7, 3.0, 1 / 3) if size * f >= 1
        ]
        for call in calls:
            ours = PF.interpolate(plugrad.asarray(x), mode=mode, **call).numpy()
            theirs = torch.nn.functional.interpolate(torch.tensor(x), mode=mode, **call).numpy()
            # PyTorch's float32 kernel rounds its weights its own way: a few ulps apart.
            np.testing.assert_allclose(
                ours, theirs, rtol=1e-6 if dtype == np.float32 else 1e-13, err_msg=str(call)
            )


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8])
def test_antialiased_interpolation_is_pytorchs_for_many_sizes(mode: str, dtype: Any) -> None:
    image = (RNG.random((1, 2, 12, 9)) * 255).astype(dtype)
    calls = [{"size": (h, w)} for h in (1, 3, 5, 12, 17) for w in (2, 4, 9, 20)] + [
        {"scale_factor": f} for f in ((0.2, 0.25), 0.35, 0.5, 0.9, 1.4)
    ]  # (no output width 1: see the test below)
    for call in calls:
        for corners in (False, True) if "size" in call else (False,):
            options = {"mode": mode, "antialias": True, "align_corners": corners, **call}
            ours = PF.interpolate(plugrad.asarray(image), **options).numpy()
            theirs = torch.nn.functional.interpolate(torch.tensor(image), **options).numpy()
            assert ours.dtype == theirs.dtype
            if dtype == np.uint8:  # (its fixed-point weights: a value may be one apart)
                assert np.abs(ours.astype(int) - theirs.astype(int)).max() <= 1, options
            else:
                # (PyTorch's float32 kernel computes its weights in single precision)
                tolerance = 2e-5 if dtype == np.float32 else 1e-12
                np.testing.assert_allclose(
                    ours, theirs, rtol=tolerance, atol=tolerance, err_msg=str(options)
                )


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialiasing_to_one_column_resamples_the_rows_as_pytorch_to_one_row(mode: str) -> None:
    # PyTorch 2.13's CPU kernel gives every row the first's value when the output is one
    # column wide; resizing the transposed image (one row) it gets them right.
    image = RNG.standard_normal((1, 2, 12, 9))
    ours = PF.interpolate(plugrad.asarray(image), size=(3, 1), mode=mode, antialias=True)
    theirs = torch.nn.functional.interpolate(
        torch.tensor(image).transpose(2, 3), size=(1, 3), mode=mode, antialias=True
    )
    np.testing.assert_allclose(ours.numpy(), theirs.transpose(2, 3).numpy(), atol=1e-12)
    assert len(set(ours.numpy()[0, 0, :, 0])) == 3


def test_antialias_is_for_bilinear_and_bicubic_only() -> None:
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="antialias=True is for"):
        PF.interpolate(plugrad.ones(1, 1, 4, 4), size=2, mode="nearest", antialias=True)


DOUBLE_BACKWARD = {
    "conv1d": (lambda x, w: PF.conv1d(x, w, stride=2, padding=1), (X1[:1, :2, :5], randn(2, 2, 3))),
    "conv_transpose2d": (
        lambda x, w: PF.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
        (X2[:1, :2, :3, :3], randn(2, 2, 3, 3)),
    ),
    "conv3d": (
        lambda x, w: PF.conv3d(x, w, stride=(2, 1, 1), padding=1),
        (X3[:1, :2, :3, :3, :3], randn(2, 2, 2, 2, 2)),
    ),
    "conv_transpose3d": (
        lambda x, w: PF.conv_transpose3d(x, w, stride=2, padding=(1, 0, 0), output_padding=1),
        (X3[:1, :2, :2, :2, :3], randn(2, 2, 2, 2, 2)),
    ),
    "group_norm": (lambda x: PF.group_norm(x, 2), (X1[:1, :, :3],)),
    "bilinear": (
        lambda x: PF.interpolate(x * x, size=(4, 5), mode="bilinear"),
        (X2[:1, :1, :3, :3],),
    ),
    "fold": (lambda x: PF.fold(x * x, (3, 3), 2), (randn(1, 4, 4),)),
}


@pytest.mark.parametrize("name", DOUBLE_BACKWARD)
def test_double_backward(name: str, check_double_backward: Callable[..., None]) -> None:
    program, arrays = DOUBLE_BACKWARD[name]
    check_double_backward(program, *arrays)


def test_bicubic_interpolation_of_an_image_keeps_uint8_in_range() -> None:
    # Its weights overshoot (a dark pixel beside a bright one): clamped, not wrapped round.
    image = np.array([[[[0, 255, 0], [255, 0, 255], [0, 255, 0]]]], dtype=np.uint8)
    ours = PF.interpolate(plugrad.asarray(image), scale_factor=2, mode="bicubic").numpy()
    theirs = torch.nn.functional.interpolate(torch.tensor(image), scale_factor=2, mode="bicubic")
    assert ours.dtype == np.uint8
    assert np.abs(ours.astype(int) - theirs.numpy().astype(int)).max() <= 1  # (rounding)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_fold_keeps_a_non_finite_value_at_its_own_place(bad: float) -> None:
    # (A transposed convolution with a one-hot kernel spread inf * 0 = NaN to the
    # places beside it.)
    cols = randn(2, 12, 9)
    cols[0, 0, 0] = cols[1, 7, 4] = bad
    args = ((5, 5), (2, 3)), {"dilation": (1, 2), "padding": (1, 1), "stride": (2, 1)}
    for value in (cols, cols[0]):
        ours = PF.fold(plugrad.asarray(value), *args[0], **args[1]).numpy()
        theirs = torch.nn.functional.fold(torch.tensor(value), *args[0], **args[1]).numpy()
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("scale", [1.1, (0.5, 1.02), (2.0, 1.1)])
def test_antialiasing_leaves_an_axis_that_keeps_its_length(mode: str, scale: Any) -> None:
    # floor(5 * 1.1) = 5: PyTorch leaves the axis as it is; plugrad resampled it by 1 / 1.1.
    x = randn(1, 2, 6, 5)
    ours = PF.interpolate(plugrad.asarray(x), scale_factor=scale, mode=mode, antialias=True)
    theirs = torch.nn.functional.interpolate(
        torch.tensor(x), scale_factor=scale, mode=mode, antialias=True
    )
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-10)
