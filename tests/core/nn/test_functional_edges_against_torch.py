"""nn.functional where plugrad once differed from ``torch``: nearest resampling of images,
NaN through thresholds, integer inputs to hardtanh, empty batches, ceil-mode pools
shorter than their kernel, and negative padding in every mode."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import plugrad
import plugrad.nn.functional as F
from plugrad.errors import ArgumentError, DtypeError, ShapeError

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _both(name: str, x: np.ndarray, *args, grad: bool = True, **kwargs):
    """``name`` in plugrad and in torch on ``x``: (ours, theirs, our grad, their grad)."""
    ours_x = plugrad.asarray(x.copy(), requires_grad=grad)
    theirs_x = torch.tensor(x.copy(), requires_grad=grad)
    ours = getattr(F, name)(ours_x, *args, **kwargs)
    theirs = getattr(TF, name)(theirs_x, *args, **kwargs)
    if not grad:
        return ours.numpy(), theirs.numpy(), None, None
    weights = np.linspace(0.5, 1.5, int(np.prod(ours.shape))).reshape(ours.shape)
    (ours * plugrad.asarray(weights)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    return (
        ours.detach().numpy(),
        theirs.detach().numpy(),
        ours_x.grad.numpy(),
        theirs_x.grad.numpy(),
    )


@pytest.mark.parametrize("scale", [1.2, 1.5, 2.0, 2.05, 0.7, (1.5, 1.1), (2.1, 1.0)])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_resampling_of_images(scale, mode: str):
    # PyTorch copies an image axis whose size stays and halves indices for one that doubles.
    x = np.arange(24.0).reshape(1, 2, 3, 4)
    ours, theirs, our_grad, their_grad = _both("interpolate", x, scale_factor=scale, mode=mode)
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_allclose(our_grad, their_grad)


@pytest.mark.parametrize("scale", [1.2, 2.05])
def test_nearest_resampling_of_sequences_and_volumes_uses_the_scale(scale: float):
    for shape in ((1, 1, 10), (1, 1, 2, 3, 4)):
        x = np.arange(float(np.prod(shape))).reshape(shape)
        ours, theirs, _, _ = _both("interpolate", x, scale_factor=scale, grad=False)
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    ("length", "size", "scale", "mode", "dims"),
    [
        (126, 388, None, "nearest", 1),
        (126, 388, None, "nearest", 2),
        (126, 388, None, "nearest", 3),
        (24, 249, None, "nearest-exact", 1),
        (295, None, 1.71, "nearest", 1),
        (295, None, 1.71, "nearest-exact", 1),
    ],
)
def test_nearest_resampling_picks_pytorchs_elements_in_either_precision(
    length, size, scale, mode, dims, dtype
):
    # Indices were computed in single precision for float64 data too: where a position is a
    # whole number, the pick was one element low (element 194 of 126 -> 388 was 62, not 63).
    x = np.arange(length, dtype=dtype).reshape((1, 1, length) + (1,) * (dims - 1))
    extra = (1,) * (dims - 1)
    options = {"size": (size, *extra)} if size else {"scale_factor": (scale, *(1.0,) * (dims - 1))}
    ours = F.interpolate(plugrad.tensor(x), mode=mode, **options).numpy()
    theirs = torch.nn.functional.interpolate(torch.tensor(x), mode=mode, **options).numpy()
    np.testing.assert_array_equal(ours, theirs)


THRESHOLDS = {
    "threshold": (0.5, -1.0),
    "softshrink": (),
    "hardshrink": (),
    "hardtanh": (),
    "relu6": (),
}


@pytest.mark.parametrize("name", list(THRESHOLDS))
def test_nan_passes_through_thresholds_with_its_gradient(name: str):
    x = np.array([math.nan, 0.2, 1.0, -3.0, 0.5, -0.5, 7.0])
    ours, theirs, our_grad, their_grad = _both(name, x, *THRESHOLDS[name])
    np.testing.assert_allclose(ours, theirs, equal_nan=True)
    np.testing.assert_allclose(our_grad, their_grad, equal_nan=True)


INTEGER_CASES = [("relu6", ()), ("hardtanh", (-2.5, 3.5)), ("hardtanh", (-2, 3)),
                 ("threshold", (1, 5))]  # fmt: skip


@pytest.mark.parametrize(("name", "args"), INTEGER_CASES)
def test_integer_inputs_keep_their_dtype(name: str, args: tuple):
    x = np.array([-3, 0, 2, 9])
    ours = getattr(F, name)(plugrad.asarray(x), *args)
    theirs = getattr(TF, name)(torch.tensor(x), *args)
    assert ours.dtype == plugrad.int64 and ours.tolist() == theirs.tolist()


@pytest.mark.parametrize(
    ("name", "shape", "args"),
    [
        ("group_norm", (0, 4, 3), (2,)),
        ("instance_norm", (0, 3, 4), ()),
        ("unfold", (0, 2, 4, 4), (2,)),
    ],
)
def test_an_empty_batch(name: str, shape: tuple[int, ...], args: tuple):
    ours, theirs, _, _ = _both(name, np.zeros(shape), *args, grad=False)
    assert ours.shape == theirs.shape


@pytest.mark.parametrize("name", ["max_pool1d", "avg_pool1d"])
@pytest.mark.parametrize("length", [2, 3, 5])
@pytest.mark.parametrize(
    ("kernel", "stride", "padding"), [(4, 2, 0), (3, 2, 1), (5, 3, 2), (2, 1, 0)]
)
def test_ceil_mode_pools_a_clipped_window_of_an_input_shorter_than_the_kernel(
    name: str, length: int, kernel: int, stride: int, padding: int
):
    x = np.random.default_rng(length).random((1, 2, length))
    try:
        theirs = getattr(TF, name)(torch.tensor(x), kernel, stride, padding, ceil_mode=True)
    except RuntimeError:
        with pytest.raises(ValueError, match="smaller than the kernel"):  # a ShapeError
            getattr(F, name)(plugrad.asarray(x), kernel, stride, padding, ceil_mode=True)
        return
    ours = getattr(F, name)(plugrad.asarray(x), kernel, stride, padding, ceil_mode=True)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())


def test_ceil_mode_pools_of_images_shorter_than_the_kernel():
    x = np.random.default_rng(0).random((1, 1, 3, 3))
    for name in ("max_pool2d", "avg_pool2d"):
        ours, theirs, our_grad, their_grad = _both(name, x, 4, 2, ceil_mode=True)
        np.testing.assert_allclose(ours, theirs)
        np.testing.assert_allclose(our_grad, their_grad)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("amounts", [(-1, 2), (2, -1), (-2, -1), (-1, 3), (-3, 0), (-1, 2, 1, -1)])
def test_negative_padding_crops_in_every_mode(mode: str, amounts: tuple[int, ...]):
    x = np.arange(12.0).reshape(1, 3, 4)
    ours, theirs, our_grad, their_grad = _both("pad", x, amounts, mode=mode)
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_allclose(our_grad, their_grad)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_padding_that_crops_everything_is_refused(mode: str):
    x = plugrad.arange(4.0).reshape(1, 1, 4)
    with pytest.raises(ArgumentError, match="crops"):
        F.pad(x, (-4, 0), mode=mode)


def test_attention_takes_a_float32_mask_for_a_float64_query():
    rng = np.random.default_rng(0)
    q, mask = rng.random((1, 2, 3)), rng.random((2, 2)).astype(np.float32)
    ours = F.scaled_dot_product_attention(
        *(plugrad.asarray(q),) * 3, attn_mask=plugrad.asarray(mask)
    )
    theirs = TF.scaled_dot_product_attention(*(torch.tensor(q),) * 3, attn_mask=torch.tensor(mask))
    assert ours.dtype == plugrad.float64
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    q32 = plugrad.asarray(q.astype(np.float32))
    with pytest.raises(plugrad.errors.DtypeError, match="float32 or of the query's dtype"):
        F.scaled_dot_product_attention(q32, q32, q32, attn_mask=plugrad.asarray(mask).double())


def test_linear_with_a_vector_of_weights():
    rng = np.random.default_rng(0)
    x, w = rng.random((4, 5)), rng.random(5)
    mine = F.linear(plugrad.asarray(x), plugrad.asarray(w))
    reference = TF.linear(torch.tensor(x), torch.tensor(w))
    assert mine.shape == tuple(reference.shape) == (4,)
    np.testing.assert_allclose(mine.numpy(), reference.numpy(), rtol=1e-12)
    # 5 features against 3 weights: NumPy's ShapeError, or the torch backend's own error
    with pytest.raises((ValueError, RuntimeError)):
        F.linear(plugrad.ones(4, 5), plugrad.ones(3))


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(9, 13), (3, 4)])
def test_bilinear_resampling_of_integer_images_blends_as_pytorch(size, align_corners):
    # The blend weights were cast to uint8 (0 or 1): mostly zeros came out.
    image = np.random.default_rng(0).integers(0, 256, (1, 2, 5, 7)).astype(np.uint8)
    ours = F.interpolate(plugrad.asarray(image), size=size, mode="bilinear",
                         align_corners=align_corners)  # fmt: skip
    theirs = TF.interpolate(torch.tensor(image), size=size, mode="bilinear",
                            align_corners=align_corners)  # fmt: skip
    assert ours.dtype == plugrad.uint8
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # Other integers (PyTorch refuses them) are blended in float32 and rounded.
    wide = F.interpolate(plugrad.asarray(image.astype(np.int16)), size=size, mode="bilinear",
                         align_corners=align_corners)  # fmt: skip
    blended = F.interpolate(plugrad.asarray(image.astype(np.float32)), size=size,
                            mode="bilinear", align_corners=align_corners)  # fmt: skip
    assert wide.dtype == plugrad.int16
    np.testing.assert_array_equal(wide.numpy(), np.round(blended.numpy()))
    with pytest.raises(plugrad.errors.DtypeError, match="booleans"):
        F.interpolate(plugrad.asarray(image > 100), size=size, mode="bilinear")


def test_uint8_images_resample_as_pytorchs_fixed_point_kernels_bit_for_bit():
    # Rounded once from the exact blend, they were one off on 10-28% of the pixels
    # (bilinear; 1-2% bicubic, 7% antialiased): 4.5 gave 4 where PyTorch gives 5.
    x = np.array([[[[0, 1, 2, 3], [4, 5, 6, 0]]]], dtype=np.uint8)
    row = F.interpolate(plugrad.asarray(x), size=(2, 8), mode="bilinear")[0, 0, 1]
    assert row.tolist() == [4, 4, 5, 5, 6, 5, 2, 0]
    rng = np.random.default_rng(7)
    for _ in range(150):
        mode = ["bilinear", "bicubic"][rng.integers(2)]
        options = {"mode": mode, "antialias": bool(rng.integers(2)),
                   "align_corners": bool(rng.integers(2))}  # fmt: skip
        channels, height, width = (int(v) for v in rng.integers(1, 4, 1).tolist()
                                   + rng.integers(1, 30, 2).tolist())  # fmt: skip
        image = rng.integers(0, 256, (1, channels, height, width)).astype(np.uint8)
        if rng.integers(3):
            options["size"] = tuple(int(v) for v in rng.integers(1, 45, 2))
        else:
            options["scale_factor"] = tuple(round(float(v), 2) for v in rng.uniform(0.2, 3, 2))
            if min(int(height * options["scale_factor"][0]),
                   int(width * options["scale_factor"][1])) < 1:  # fmt: skip
                continue
        theirs = TF.interpolate(torch.tensor(image), **options).numpy()
        ours = F.interpolate(plugrad.asarray(image), **options)
        assert ours.dtype == plugrad.uint8
        np.testing.assert_array_equal(ours.numpy(), theirs, err_msg=f"{image.shape} {options}")
    # (PyTorch refuses uint8 sequences and volumes: they follow the images' rule)
    line = rng.integers(0, 256, (2, 3, 17)).astype(np.uint8)
    along = F.interpolate(plugrad.asarray(line), size=29, mode="linear")
    image = TF.interpolate(torch.tensor(line[:, :, None]), size=(1, 29), mode="bilinear")
    np.testing.assert_array_equal(along.numpy(), image.numpy()[:, :, 0])
    # Where PyTorch's width-1 output is its kernel's fault (more than 4 channels), the
    # column is the one a wider output holds.
    column = rng.integers(0, 256, (1, 5, 7, 1)).astype(np.uint8)
    wide = TF.interpolate(torch.tensor(column).expand(1, 5, 7, 3), size=(12, 3), mode="bilinear")
    narrow = F.interpolate(plugrad.asarray(column), size=(12, 1), mode="bilinear")
    np.testing.assert_array_equal(narrow.numpy(), wide.numpy()[..., :1])


def test_binary_cross_entropy_gradient_at_saturated_probabilities_is_pytorchs():
    # Was 0 where the clamped log takes over: a confidently wrong prediction never learned.
    p = np.array([0.0, 1.0, 1e-13, 0.3, 1.0 - 1e-15])
    y = np.array([1.0, 0.0, 0.0, 1.0, 1.0])
    for reduction in ("sum", "mean", "none"):
        ours, theirs, our_grad, their_grad = _bce_both(p, y, reduction)
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
        np.testing.assert_allclose(our_grad, their_grad, rtol=1e-12)


#: Probabilities at and beside 0 and 1, inside and outside the bound 1e-12 of the slope.
_BCE_GRID = np.array([0.0, 1e-300, 1e-13, 5e-13, 9.999999960041972e-13, 1e-12, 2e-12, 1e-6,
                      0.3, 0.5, 1 - 1e-6, 1 - 2e-12, 1 - 1e-13, 1 - 2**-53, 1.0])  # fmt: skip


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("label", [0.0, 1.0, 0.3])
def test_binary_cross_entropy_second_derivative_is_pytorchs(label, reduction, weighted, dtype):
    # Was 1 / 1e-12 where p is within 1e-12 of its label 0 or 1 (the bounded slope's
    # derivative); PyTorch's is 0 at p equal to the label and finite everywhere.
    p = _BCE_GRID.astype(dtype)
    y = np.full(len(p), label, dtype=dtype)
    weight = np.linspace(0.5, 2.5, len(p)).astype(dtype) if weighted else None
    ours, our_target = _bce_curvatures(plugrad, F, p, y, reduction, weight)
    theirs, their_target = _bce_curvatures(torch, TF, p, y, reduction, weight)
    if label == 1.0:
        # PyTorch's numerator p**2 - 2 p + 1 cancels below p = 1 (0 there in float32 up to
        # p = 0.9999): there, the mirror image of the loss (1 - p against the label 0).
        mirrored, _ = _bce_curvatures(torch, TF, 1 - p, 1 - y, reduction, weight)
        theirs = np.where((p > 0.5) & (p < 1), mirrored, theirs)
    rtol = 1e-10 if dtype == "float64" else 2e-6
    np.testing.assert_allclose(ours, theirs, rtol=rtol)
    np.testing.assert_allclose(our_target, their_target, rtol=rtol)
    assert label == 0.3 or (ours[p == label] == 0).all()


def _bce_curvatures(lib, functional, p, y, reduction, weight):
    """The derivatives of ``sum(d loss / d p * outer)`` with respect to ``p`` and ``y``."""
    x = lib.tensor(p.copy(), requires_grad=True)
    target = lib.tensor(y.copy(), requires_grad=True)
    options = {} if weight is None else {"weight": lib.tensor(weight.copy())}
    loss = functional.binary_cross_entropy(x, target, reduction=reduction, **options)
    (slope,) = lib.autograd.grad(loss, x, create_graph=True)
    outer = lib.tensor(np.linspace(1.0, 2.0, len(p)).astype(p.dtype))
    curvature, target_curvature = lib.autograd.grad((slope * outer).sum(), [x, target])
    return curvature.numpy(), target_curvature.numpy()


def _bce_both(p: np.ndarray, y: np.ndarray, reduction: str):
    results = []
    for lib, functional in ((plugrad, F), (torch, TF)):
        x = lib.tensor(p.copy(), requires_grad=True)
        target = lib.tensor(y.copy(), requires_grad=True)
        loss = functional.binary_cross_entropy(x, target, reduction=reduction)
        loss.sum().backward()
        results.append((loss.detach().numpy(), x.grad.numpy(), target.grad.numpy()))
    (ours, our_grad, our_target_grad), (theirs, their_grad, their_target_grad) = results
    np.testing.assert_allclose(our_target_grad, their_target_grad, rtol=1e-12)
    return ours, theirs, our_grad, their_grad


def test_multilabel_margin_loss_at_an_exact_margin_gives_no_gradient_as_pytorch():
    x = np.array([[1.0, 0.0, 2.0, 1.0]])
    results = []
    for lib, functional in ((plugrad, F), (torch, TF)):
        scores = lib.tensor(x.copy(), requires_grad=True)
        functional.multilabel_margin_loss(scores, lib.tensor([[0, -1, 1, 2]])).backward()
        results.append(scores.grad.numpy())
    np.testing.assert_allclose(results[0], results[1])  # was [-0.75, 0.25, ...]


@pytest.mark.parametrize("shape", [(0, 4), (2, 0)])
def test_linear_with_an_empty_feature_axis_differentiates(shape):
    rows, features = (3, shape[1]), shape
    x = plugrad.zeros(rows, requires_grad=True)
    weight = plugrad.zeros(features, requires_grad=True)
    F.linear(x, weight).sum().backward()  # reshape(-1, 0) failed
    assert x.grad.shape == rows and weight.grad.shape == features


def test_numpy_integers_size_the_pools():
    x = np.random.default_rng(0).normal(size=(1, 2, 6, 6))
    calls = {
        "max_pool2d": lambda lib, f, t: f.max_pool2d(t, np.int64(2)),
        "avg_pool2d": lambda lib, f, t: f.avg_pool2d(t, (np.int64(2), 3), stride=np.int32(1)),
        "adaptive_avg_pool1d": lambda lib, f, t: f.adaptive_avg_pool1d(t[0], np.int64(3)),
        "lp_pool2d": lambda lib, f, t: f.lp_pool2d(t, 2, np.int64(2)),
        "conv2d": lambda lib, f, t: f.conv2d(t, lib.ones(1, 2, 3, 3, dtype=lib.float64),
                                             stride=np.int64(2), padding=np.int64(1)),
    }  # fmt: skip
    for name, call in calls.items():
        ours, theirs = call(plugrad, F, plugrad.asarray(x)), call(torch, TF, torch.tensor(x))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), err_msg=name)


@pytest.mark.parametrize("name", ["softplus", "mish"])
def test_float16_softplus_does_not_overflow_below_its_threshold(name: str):
    # exp(x) overflows float16 from 11.1 on: softplus(12) was inf, its gradient NaN.
    if plugrad.float16 not in plugrad.default_device().dtypes:
        pytest.skip("the default backend has no float16")
    x = np.array([-20.0, -3.0, 0.0, 5.0, 12.0, 15.0, 19.0, 25.0], dtype=np.float16)
    ours, theirs, ours_grad, theirs_grad = _both(name, x)
    assert ours.dtype == np.float16
    np.testing.assert_allclose(ours, theirs, rtol=2e-3, atol=1e-6)
    np.testing.assert_allclose(ours_grad, theirs_grad, rtol=2e-3, atol=1e-6)


def test_pad_takes_value_none_and_numpy_integers_as_pytorch():
    x = np.array([[1.0, 2.0]])
    for amounts, value in [((1, 1), None), ((np.int64(1), 2), 3.0)]:
        ours, theirs, *_ = _both("pad", x, amounts, value=value, grad=False)
        np.testing.assert_array_equal(ours, theirs)  # None filled NaN
    ints = F.pad(plugrad.tensor([[1, 2]]), (1, 0), value=None)
    assert ints.tolist() == [[0, 1, 2]] and ints.dtype == plugrad.int64
    with pytest.raises(ArgumentError, match="takes no fill value"):
        F.pad(plugrad.ones((1, 1, 3)), (1, 1), mode="replicate", value=5.0)
    assert F.pad(plugrad.ones((1, 1, 3)), (1, 1), mode="reflect", value=0.0).shape == (1, 1, 5)


@pytest.mark.parametrize(
    ("name", "args", "kwargs"),
    [
        ("avg_pool1d", (2,), {}),
        ("avg_pool1d", (3, 2, 1), {}),
        ("avg_pool1d", (2,), {"ceil_mode": True}),
        ("avg_pool2d", ((1, 3),), {"divisor_override": 2}),
        ("avg_pool2d", ((1, 2), 1, (0, 1)), {"count_include_pad": False}),
    ],
)
def test_average_pools_of_integers_truncate_as_pytorch(name: str, args: tuple, kwargs: dict):
    # They gave float64 means: [-2.5, 5.5, 1.5] where PyTorch gives int64 [-2, 5, 1].
    x = np.array([[[-3, -2, 5, 6, 1, 2, 7]]])
    if name == "avg_pool2d":
        x = x[None]
    ours = getattr(F, name)(plugrad.asarray(x), *args, **kwargs)
    theirs = getattr(TF, name)(torch.tensor(x), *args, **kwargs)
    assert ours.dtype == plugrad.int64 and ours.tolist() == theirs.tolist()


def test_threshold_of_integers_keeps_their_dtype_as_pytorch():
    # It gave float32 [-3., -3., 3.] where PyTorch keeps int64.
    for value in (-3.0, -3.7):
        ours = F.threshold(plugrad.tensor([-2, 0, 3]), 0.5, value)
        theirs = TF.threshold(torch.tensor([-2, 0, 3]), 0.5, value)
        assert ours.dtype == plugrad.int64 and ours.tolist() == theirs.tolist()


def test_bincount_of_float16_weights_sums_in_float64_as_pytorch():
    if plugrad.float16 not in plugrad.default_device().dtypes:
        pytest.skip("the default backend has no float16")
    halves = plugrad.ones(3, dtype=plugrad.float16)
    ours = plugrad.bincount(plugrad.tensor([0, 1, 1]), weights=halves)
    theirs = torch.bincount(torch.tensor([0, 1, 1]), weights=torch.ones(3, dtype=torch.float16))
    assert ours.dtype == plugrad.float64 and ours.tolist() == theirs.tolist()
    assert str(theirs.dtype) == "torch.float64"


@pytest.mark.parametrize(
    "name", ["binary_cross_entropy_with_logits", "huber_loss", "soft_margin_loss"]
)
def test_losses_of_two_float_widths_have_pytorchs_dtype(name: str):
    # They promoted to the wider dtype; PyTorch's kernels compute in one argument's dtype.
    for first, second in ((torch.float64, torch.float32), (torch.float32, torch.float64)):
        a, b = np.array([0.3, -1.0]), np.array([1.0, -1.0])
        ours = getattr(F, name)(
            plugrad.asarray(a, dtype=getattr(plugrad, str(first)[6:])),
            plugrad.asarray(b, dtype=getattr(plugrad, str(second)[6:])),
        )
        theirs = getattr(TF, name)(torch.tensor(a, dtype=first), torch.tensor(b, dtype=second))
        assert str(ours.dtype)[8:] == str(theirs.dtype)[6:]
        assert ours.item() == pytest.approx(theirs.item(), rel=1e-6)


# -- PyTorch's other names and argument forms ----------------------------------------------------


@pytest.mark.filterwarnings("ignore:nn.functional.upsample:UserWarning")
@pytest.mark.filterwarnings("ignore:.*upsample.*deprecated:UserWarning")
@pytest.mark.parametrize(
    ("name", "args"),
    [("channel_shuffle", (3,)), ("native_channel_shuffle", (2,)), ("selu_", ()),
     ("celu_", (0.5,)), ("upsample", (None, 2)), ("upsample_nearest", (None, 2)),
     ("upsample_bilinear", (None, 2))],
)  # fmt: skip
def test_functions_under_pytorchs_other_names(name: str, args: tuple):
    x = np.random.default_rng(0).standard_normal((2, 6, 3, 4)).astype(np.float32)
    # In place on a leaf is refused in both; PyTorch's native_ form has no derivative.
    grad = not name.endswith("_") and not name.startswith("native")
    ours, theirs, our_grad, their_grad = _both(name, x, *args, grad=grad)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
    if grad:
        np.testing.assert_allclose(our_grad, their_grad, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("name", "shape", "args"),
    [("max_pool1d_with_indices", (2, 3, 12), (3,)), ("max_pool2d_with_indices", (2, 3, 4, 6), (2,)),
     ("adaptive_max_pool1d_with_indices", (2, 3, 12), (5,)),
     ("adaptive_max_pool2d_with_indices", (2, 3, 4, 6), (3,))],
)  # fmt: skip
def test_max_pools_with_indices_give_both_whatever_return_indices_says(name, shape, args):
    x = np.random.default_rng(1).standard_normal(shape)
    ours = getattr(F, name)(plugrad.asarray(x), *args, return_indices=False)
    theirs = getattr(TF, name)(torch.tensor(x), *args, return_indices=False)
    assert len(ours) == len(theirs) == 2
    for mine, its in zip(ours, theirs):
        np.testing.assert_array_equal(mine.numpy(), its.numpy())


@pytest.mark.parametrize(
    "call",
    [lambda f, x: f.max_pool2d(x, 2, stride=[]), lambda f, x: f.max_pool2d(x, (2,), padding=(1,)),
     lambda f, x: f.avg_pool2d(x, (3,), stride=[], padding=1),
     lambda f, x: f.max_pool1d(x[0], 2, stride=[]),
     lambda f, x: f.pixel_shuffle(x.reshape(1, 4, 3, 4), np.int64(2))],
)  # fmt: skip
def test_pool_and_shuffle_arguments_in_pytorchs_forms(call):
    x = np.arange(48.0).reshape(1, 4, 12)[None].reshape(1, 4, 3, 4)
    ours, theirs = call(F, plugrad.asarray(x)), call(TF, torch.tensor(x))
    # The same arguments give the same windows; an average's last bit depends on the
    # backend's order of summation.
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-15, atol=0)


@pytest.mark.parametrize(("kernel", "padding", "dilation"), [(3, 2, 3), (4, 3, 2), (2, 2, 2)])
def test_pool_padding_is_bounded_by_half_the_undilated_kernel(kernel, padding, dilation):
    # PyTorch bounds the padding by the kernel without its dilation; a wider bound pooled
    # windows made of padding alone.
    for call in (
        lambda x: F.max_pool1d(x, kernel, padding=padding, dilation=dilation),
        lambda x: F.max_pool2d(x[None], kernel, padding=padding, dilation=dilation),
    ):
        with pytest.raises((ValueError, ArgumentError), match="at most half the kernel size"):
            call(plugrad.ones(1, 1, 12))
    with pytest.raises(RuntimeError):
        TF.max_pool1d(torch.ones(1, 1, 12), kernel, padding=padding, dilation=dilation)


def test_max_pools_refuse_complex_inputs_which_have_no_order():
    z = plugrad.asarray([[[1 + 5j, 2 + 0j]]])
    for call in (lambda: F.max_pool1d(z, 2), lambda: F.adaptive_max_pool1d(z, 1)):
        with pytest.raises(DtypeError, match="real numbers only"):
            call()


@pytest.mark.parametrize(
    "call",
    [lambda f, m, x: f.one_hot(m.tensor([0, 2]), m.tensor(4)),
     lambda f, m, x: f.normalize(x, p=m.tensor(3.0)),
     lambda f, m, x: f.layer_norm(x, (4,), eps=m.tensor(0.5)),
     lambda f, m, x: f.group_norm(x[None], 3, eps=m.tensor(0.5)),
     lambda f, m, x: f.instance_norm(x[None], eps=m.tensor(0.5)),
     lambda f, m, x: f.rms_norm(x, (4,), eps=m.tensor(0.5))],
)  # fmt: skip
def test_settings_given_as_0d_tensors_are_read_as_numbers(call):
    x = np.arange(12.0).reshape(3, 4) / 7
    ours = call(F, plugrad, plugrad.asarray(x))
    theirs = call(TF, torch, torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    with pytest.raises(ShapeError, match="0-d tensor"):
        F.layer_norm(plugrad.asarray(x), (4,), eps=plugrad.asarray([0.5]))


def test_channel_shuffle_module_and_pytorchs_old_names():
    assert repr(plugrad.nn.ChannelShuffle(2)) == repr(torch.nn.ChannelShuffle(2))
    with pytest.warns(FutureWarning, match="renamed to min_val"):
        with pytest.warns(FutureWarning, match="renamed to max_val"):
            layer = plugrad.nn.Hardtanh(min_value=-2.0, max_value=3.0)
    assert (layer.min_val, layer.max_val) == (-2.0, 3.0)
    assert list(inspect.signature(plugrad.nn.RMSNorm.forward).parameters) == ["self", "x"]
    with pytest.raises(ShapeError, match="divisible by groups"):
        F.channel_shuffle(plugrad.ones(1, 5, 2), 2)


@pytest.mark.parametrize(
    ("beta", "threshold"), [(1.0, 20.0), (1.0, 100.0), (0.5, 60.0), (3.0, 1000.0)]
)
def test_softplus_derivatives_stay_exact_for_large_inputs(beta, threshold):
    # Through log1p(exp(s)), the two terms of the second derivative cancelled: -0.017 and
    # 1.0 at 50 and 60 with threshold=100, where it is 0; the first derivative was 1 - 6e-8.
    points = [-100.0, -5.0, 0.0, 3.0, 19.0, 25.0, 50.0, 60.0, 88.0]
    x = plugrad.tensor(points, requires_grad=True)
    (first,) = plugrad.autograd.grad(F.softplus(x, beta, threshold).sum(), x, create_graph=True)
    (second,) = plugrad.autograd.grad(first.sum(), x)
    s = beta * np.array(points)
    sigmoid = np.exp(-np.logaddexp(0.0, -s))
    smooth = s <= threshold
    np.testing.assert_allclose(
        first.detach().numpy(), np.where(smooth, sigmoid, 1.0), rtol=0, atol=1e-7
    )
    exact = np.where(smooth, beta * sigmoid * (1 - sigmoid), 0.0)
    np.testing.assert_allclose(second.numpy(), exact, rtol=0, atol=1e-7)
    # PyTorch computes exp(s) in float32 and gives inf from 88.7 / beta on (below a
    # large threshold); softplus(s) is s there.
    values = F.softplus(x, beta, threshold).detach().numpy()
    np.testing.assert_allclose(values, np.logaddexp(0.0, s) / beta, rtol=1e-6, atol=1e-30)


@pytest.mark.parametrize(
    ("name", "options", "kink"),
    [
        ("elu", {}, 0.0),
        ("elu", {"alpha": 0.5}, 0.0),
        ("elu", {"alpha": 2.0}, 0.0),
        ("celu", {}, 0.0),
        ("celu", {"alpha": 2.0}, 0.0),
        ("selu", {}, 0.0),
        ("huber_loss", {"delta": 0.5}, 0.5),
        ("smooth_l1_loss", {"beta": 2.0}, 2.0),
    ],
)
def test_derivatives_at_a_kink_take_pytorchs_sides(name, options, kink):
    # elu, celu and selu at 0: the slope is the negative side's, the second derivative the
    # positive side's (0); it was the negative side's too (alpha).
    points = np.array([-kink - 1e-9, -kink, 0.0, kink, kink + 1e-9, kink - 1e-9, -0.0])
    results = []
    for lib, functional in ((plugrad, F), (torch, TF)):
        x = lib.tensor(points.copy(), requires_grad=True)
        if name.endswith("loss"):
            y = getattr(functional, name)(x, lib.zeros(len(points), dtype=lib.float64),
                                          reduction="none", **options)  # fmt: skip
        else:
            y = getattr(functional, name)(x, **options)
        (first,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (second,) = lib.autograd.grad(first.sum(), x)
        results.append((first.detach().numpy(), second.numpy()))
    (first, second), (their_first, their_second) = results
    np.testing.assert_allclose(first, their_first, rtol=1e-12)
    np.testing.assert_allclose(second, their_second, rtol=1e-12)


HINGE_LOSSES = {
    "margin_ranking_loss": lambda F, lib, a, b: F.margin_ranking_loss(
        a, b, lib.tensor([1.0, -1.0, 1.0]), reduction="none"
    ),
    "hinge_embedding_loss": lambda F, lib, a, b: F.hinge_embedding_loss(
        a, lib.tensor([-1.0, -1.0, 1.0]), reduction="none"
    ),
    "cosine_embedding_loss": lambda F, lib, a, b: F.cosine_embedding_loss(
        a[None], b[None], lib.tensor([-1.0]), reduction="none"
    ),
    "triplet_margin_loss": lambda F, lib, a, b: F.triplet_margin_loss(
        a[None], b[None], b[None] * 2, reduction="none"
    ),
    "triplet_margin_with_distance_loss": lambda F, lib, a, b: F.triplet_margin_with_distance_loss(
        a[None], b[None], b[None] * 2, reduction="none"
    ),
}


@pytest.mark.parametrize("name", sorted(HINGE_LOSSES))
def test_hinge_losses_keep_a_nan_input_nan_as_pytorchs(name):
    # max(value, 0) was where(value >= 0, value, 0): a NaN input gave a loss of 0.
    results = []
    for lib in (plugrad, torch):
        a = lib.tensor([float("nan"), 1.0, -0.5], requires_grad=True)
        b = lib.tensor([0.5, 0.5, 0.2], requires_grad=True)
        out = HINGE_LOSSES[name](lib.nn.functional, lib, a, b)
        results.append(np.asarray(out.detach().numpy(), dtype=np.float64))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, equal_nan=True)
    assert np.isnan(results[0]).any()


def test_margin_ranking_loss_gives_pytorchs_gradient_beside_a_nan():
    grads = []
    for lib in (plugrad, torch):
        a = lib.tensor([float("nan"), 1.0, -0.5], requires_grad=True)
        b = lib.tensor([0.5, 0.5, 0.2], requires_grad=True)
        loss = lib.nn.functional.margin_ranking_loss(
            a, b, lib.tensor([1.0, -1.0, 1.0]), reduction="none"
        )
        loss[1:].sum().backward()
        grads.append([a.grad.numpy(), b.grad.numpy()])
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, equal_nan=True)


_SPREAD_THIN = {"padding": 2, "dilation": 2, "groups": 3}


@pytest.mark.parametrize(
    ("name", "input_shape", "weight_shape", "options"),
    [
        ("conv_transpose1d", (2, 2, 1), (2, 3, 2), {"padding": 1}),
        ("conv_transpose2d", (2, 3, 4, 5), (3, 2, 1, 1), _SPREAD_THIN),
        ("conv_transpose2d", (2, 3, 4, 5), (3, 2, 3, 3), {"padding": (3, 1)}),
        ("conv_transpose3d", (2, 3, 4, 4, 5), (3, 2, 1, 1, 1), _SPREAD_THIN),
        ("conv_transpose3d", (2, 3, 4, 4, 5), (3, 2, 1, 1, 1), {"padding": (2, 1, 1)}),
    ],
)
def test_transposed_convolutions_padded_to_an_empty_output_give_it(
    name, input_shape, weight_shape, options
):
    # Refused ("the output would have size (0, 1)") where PyTorch returns the empty result.
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(input_shape), rng.standard_normal(weight_shape)
    b = rng.standard_normal(weight_shape[1] * options.get("groups", 1))
    ours = [plugrad.asarray(a, requires_grad=True) for a in (x, w, b)]
    # (PyTorch's float32 kernels; its float64 ones and a batch of one refuse an empty output)
    theirs = getattr(TF, name)(*(torch.tensor(a, dtype=torch.float32) for a in (x, w, b)),
                               **options)  # fmt: skip
    out = getattr(F, name)(*ours, **options)
    assert out.shape == tuple(theirs.shape) and 0 in out.shape
    (out * 2.0).sum().backward()
    for tensor in ours:
        assert tensor.grad.shape == tensor.shape and not tensor.grad.numpy().any()
    with pytest.raises(ShapeError, match="the output would have size"):
        getattr(F, name)(ours[0], ours[1], padding=5)


@pytest.mark.parametrize(
    ("name", "shape", "size"),
    [
        ("adaptive_avg_pool1d", (2, 3, 4), 0),
        ("adaptive_max_pool1d", (3, 4), 0),
        ("adaptive_avg_pool2d", (2, 3, 4, 5), (0, 2)),
        ("adaptive_avg_pool2d", (3, 4, 5), (None, 0)),
        ("adaptive_max_pool2d", (2, 3, 4, 5), (0, 7)),
        ("adaptive_avg_pool3d", (2, 3, 4, 4, 5), (1, 0, 2)),
        ("adaptive_max_pool3d", (3, 4, 4, 5), (0, 0, 0)),
    ],
)
def test_adaptive_pools_to_an_output_size_of_zero_give_an_empty_result(name, shape, size):
    # Refused ("output_size must be 2 positive int(s)") where PyTorch returns the empty result.
    x = plugrad.asarray(np.random.default_rng(0).standard_normal(shape), requires_grad=True)
    theirs = getattr(TF, name)(torch.zeros(shape), size)
    out = getattr(F, name)(x, size)
    assert out.shape == tuple(theirs.shape) and out.dtype == x.dtype
    (out * 2.0).sum().backward()  # (PyTorch's backward refuses the empty gradient)
    assert x.grad.shape == x.shape and not x.grad.numpy().any()
    if "max" in name:
        values, indices = getattr(F, name)(x, size, return_indices=True)
        their_indices = getattr(TF, name)(torch.zeros(shape), size, return_indices=True)[1]
        assert indices.shape == tuple(their_indices.shape) == values.shape
        assert indices.dtype == plugrad.int64
