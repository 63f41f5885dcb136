"""plugrad.nn.functional against torch.nn.functional: values and gradients, on every backend.

Each case runs the same function through both libraries on the same float64
data, and backpropagates the same random output gradient; PyTorch is the oracle.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pytest
from functional_compare import compare_with_torch

import plugrad
import plugrad.nn.functional as F
from plugrad.errors import IndexOutOfRangeError

torch = pytest.importorskip("torch")
TF = torch.nn.functional
compare = partial(compare_with_torch, rtol=1e-7, atol=1e-10)


RNG = np.random.default_rng(20)


def normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


# -- activations --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (F.relu, TF.relu),
        (F.sigmoid, torch.sigmoid),
        (F.tanh, torch.tanh),
        (F.gelu, TF.gelu),
        (lambda x: F.gelu(x, approximate="tanh"), lambda x: TF.gelu(x, approximate="tanh")),
        (lambda x: F.softmax(x, dim=1), lambda x: TF.softmax(x, dim=1)),
        (lambda x: F.softmax(x, -1), lambda x: TF.softmax(x, -1)),
        (lambda x: F.log_softmax(x, dim=0), lambda x: TF.log_softmax(x, dim=0)),
        (F.silu, TF.silu),
        (lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2)),
        (F.leaky_relu, TF.leaky_relu),
        (F.elu, TF.elu),
        (lambda x: F.elu(x, alpha=0.5), lambda x: TF.elu(x, alpha=0.5)),
        (lambda x: F.silu(x * 1.0, inplace=True), lambda x: TF.silu(x * 1.0, inplace=True)),
        (
            lambda x: F.leaky_relu(x * 1.0, 0.2, inplace=True),
            lambda x: TF.leaky_relu(x * 1.0, 0.2, inplace=True),
        ),
        (lambda x: F.elu(x * 1.0, 0.5, True), lambda x: TF.elu(x * 1.0, 0.5, True)),
        (lambda x: F.logsumexp(x, dim=1), lambda x: torch.logsumexp(x, dim=1)),
        (
            lambda x: F.logsumexp(x, dim=(0, 2), keepdim=True),
            lambda x: torch.logsumexp(x, dim=(0, 2), keepdim=True),
        ),
    ],
    ids=[
        "relu",
        "sigmoid",
        "tanh",
        "gelu",
        "gelu-tanh",
        "softmax",
        "softmax-last",
        "log_softmax",
        "silu",
        "leaky_relu-0.2",
        "leaky_relu",
        "elu",
        "elu-alpha",
        "silu-inplace",
        "leaky_relu-inplace",
        "elu-inplace",
        "logsumexp",
        "logsumexp-keepdim",
    ],
)
def test_activations(backend, ours, theirs) -> None:
    compare(ours, theirs, normal(3, 4, 5) * 3)


def test_activations_at_their_kinks_and_far_out(backend) -> None:
    x = np.array([-800.0, -30.0, -1.0, 0.0, 1.0, 30.0, 800.0])
    for ours, theirs in [(F.silu, TF.silu), (F.leaky_relu, TF.leaky_relu), (F.elu, TF.elu)]:
        compare(ours, theirs, x, atol=1e-15)


def test_rrelu_as_pytorchs(backend) -> None:
    x = np.array([-3.0, -1.0, 0.0, 0.5, 2.0])
    compare(lambda t: F.rrelu(t, 0.1, 0.3), lambda t: TF.rrelu(t, 0.1, 0.3), x, atol=1e-15)
    compare(F.rrelu, TF.rrelu, x, atol=1e-15)
    # In training each slope is drawn in [lower, upper], and the gradient is that slope.
    t = plugrad.asarray(-np.ones(200), requires_grad=True)
    y = F.rrelu(t, 0.1, 0.3, training=True)
    y.sum().backward()
    slopes = -y.detach().numpy()
    assert 0.1 <= slopes.min() and slopes.max() <= 0.3 and len(set(slopes.tolist())) > 100
    np.testing.assert_array_equal(t.grad.numpy(), slopes)
    layer = plugrad.nn.RReLU(0.1, 0.3)
    assert repr(layer) == "RReLU(lower=0.1, upper=0.3)"
    assert layer.eval()(plugrad.asarray(np.array([-1.0]))).tolist() == [-0.2]
    with pytest.raises(ValueError, match="lower must be at most upper"):
        F.rrelu(plugrad.asarray(x), 0.5, 0.1)
    with pytest.raises(plugrad.errors.DtypeError, match="floating"):
        F.rrelu(plugrad.tensor([1, -2]))


def test_gelu_far_into_both_tails(backend) -> None:
    x = np.array([-30.0, -8.0, -3.0, 3.0, 8.0, 30.0])
    compare(F.gelu, TF.gelu, x, atol=1e-15)


def test_softmax_casts_to_dtype(backend) -> None:
    x = plugrad.asarray(np.ones((2, 3), dtype=np.float32))
    assert F.softmax(x, dim=1, dtype=plugrad.float64).dtype == plugrad.float64
    assert F.log_softmax(x, 1).dtype == plugrad.float32


def test_linear(backend) -> None:
    compare(F.linear, TF.linear, normal(2, 3, 4), normal(5, 4), normal(5))
    compare(F.linear, TF.linear, normal(4), normal(2, 4))


# -- losses ------------------------------------------------------------------------------

REDUCTIONS = ["mean", "sum", "none"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignored", [True, False])  # without: the NumPy kernels' fast path
def test_cross_entropy_class_targets(backend, reduction, smoothing, weighted, ignored) -> None:
    target = np.array([2, 0, -100, 3, 1, -100] if ignored else [2, 0, 1, 3, 1, 3])
    weight = RNG.uniform(0.2, 2.0, size=4) if weighted else None
    kwargs = {"reduction": reduction, "label_smoothing": smoothing}

    def ours(x, w=None):
        return F.cross_entropy(x, plugrad.asarray(target), w, **kwargs)

    def theirs(x, w=None):
        return TF.cross_entropy(x, torch.tensor(target), w, **kwargs)

    if weighted:
        # PyTorch has no gradient for the class weights; compare the logits' only.
        compare(lambda x: ours(x, plugrad.asarray(weight)),
                lambda x: theirs(x, torch.tensor(weight)), normal(6, 4))  # fmt: skip
    else:
        compare(ours, theirs, normal(6, 4))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_spatial_and_single_sample(backend, reduction) -> None:
    target = RNG.integers(0, 3, size=(2, 4, 5))
    target[0, 1, 2] = 1  # ignore_index below
    compare(
        lambda x: F.cross_entropy(x, plugrad.asarray(target), ignore_index=1, reduction=reduction),
        lambda x: TF.cross_entropy(x, torch.tensor(target), ignore_index=1, reduction=reduction),
        normal(2, 3, 4, 5),
    )
    one = np.array(2)
    compare(
        lambda x: F.cross_entropy(x, plugrad.asarray(one), reduction=reduction),
        lambda x: TF.cross_entropy(x, torch.tensor(one), reduction=reduction),
        normal(5),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_class_probabilities(backend, reduction) -> None:
    probabilities = RNG.dirichlet(np.ones(4), size=3)
    weight = RNG.uniform(0.5, 1.5, size=4)
    compare(
        lambda x, p: F.cross_entropy(
            x, p, plugrad.asarray(weight), reduction=reduction, label_smoothing=0.2
        ),
        lambda x, p: TF.cross_entropy(
            x, p, torch.tensor(weight), reduction=reduction, label_smoothing=0.2
        ),
        normal(3, 4),
        probabilities,
    )


def test_cross_entropy_ignoring_everything_is_nan_like_pytorch(backend) -> None:
    x = plugrad.asarray(normal(2, 3))
    with np.errstate(invalid="ignore"):  # 0 / 0, which NumPy warns about
        loss = F.cross_entropy(x, plugrad.asarray(np.array([-100, -100])))
    expected = TF.cross_entropy(torch.tensor(normal(2, 3)), torch.tensor([-100, -100]))
    assert np.isnan(loss.numpy()) and torch.isnan(expected)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(backend, reduction) -> None:
    target = np.array([1, 0, 3, -100, 3])
    weight = RNG.uniform(0.5, 1.5, size=4)
    compare(
        lambda x: F.nll_loss(
            F.log_softmax(x, 1), plugrad.asarray(target), plugrad.asarray(weight),
            reduction=reduction,
        ),
        lambda x: TF.nll_loss(
            TF.log_softmax(x, 1), torch.tensor(target), torch.tensor(weight), reduction=reduction
        ),
        normal(5, 4),
    )  # fmt: skip


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(5, 4), (2, 4, 3)])
def test_nll_loss_gradient_of_its_class_weights(backend, reduction, shape) -> None:
    # PyTorch refuses a weight that requires grad; plugrad gives the gradient, which for the
    # mean left out its denominator's term (the summed weights of the counted targets).
    logp = F.log_softmax(plugrad.asarray(normal(*shape)), 1)
    target = plugrad.asarray(RNG.integers(0, 4, size=(shape[0], *shape[2:])))
    target[0] = -100

    def loss(weight):
        return F.nll_loss(logp, target, weight, reduction=reduction)

    weight = plugrad.asarray(RNG.uniform(0.5, 1.5, size=4), requires_grad=True)
    assert plugrad.autograd.gradcheck(loss, (weight,))


def test_cross_entropy_refuses_class_weights_that_require_grad(backend) -> None:
    # Its fused kernel gives them no gradient: .grad stayed None, silently.
    x, target = plugrad.asarray(normal(3, 4)), plugrad.asarray(np.array([0, 1, 3]))
    weight = plugrad.ones(4, dtype=plugrad.float64, requires_grad=True)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match=r"weight\.detach"):
        F.cross_entropy(x, target, weight)
    with plugrad.no_grad():
        F.cross_entropy(x, target, weight)
    F.cross_entropy(x, target, weight.detach())
    assert weight.grad is None


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(backend, reduction) -> None:
    target = RNG.uniform(0, 1, size=(4, 3))
    compare(
        lambda x, y: F.binary_cross_entropy_with_logits(x, y, reduction=reduction),
        lambda x, y: TF.binary_cross_entropy_with_logits(x, y, reduction=reduction),
        normal(4, 3) * 10,
        target,
    )
    # PyTorch has no gradients for weight and pos_weight (plugrad's are checked by gradcheck).
    weight, pos_weight = RNG.uniform(0.5, 1.5, size=(4, 1)), RNG.uniform(0.5, 3.0, size=3)
    compare(
        lambda x, y: F.binary_cross_entropy_with_logits(
            x, y, plugrad.asarray(weight), reduction=reduction,
            pos_weight=plugrad.asarray(pos_weight),
        ),
        lambda x, y: TF.binary_cross_entropy_with_logits(
            x, y, torch.tensor(weight), reduction=reduction, pos_weight=torch.tensor(pos_weight)
        ),
        normal(4, 3) * 10,
        target,
    )  # fmt: skip


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_loss(backend, reduction) -> None:
    compare(
        lambda x, y: F.mse_loss(x, y, reduction=reduction),
        lambda x, y: TF.mse_loss(x, y, reduction=reduction),
        normal(3, 5),
        normal(3, 5),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "loss",
    ["l1_loss", "smooth_l1_loss", "smooth_l1_loss-beta", "smooth_l1_loss-beta0", "bce", "bce-w"],
)
def test_more_losses(backend, loss, reduction) -> None:
    name, _, variant = loss.partition("-")
    options: dict[str, Any] = {"reduction": reduction}
    if variant:
        options["beta"] = {"beta": 0.5, "beta0": 0.0}[variant] if name != "bce" else None
    x, y = normal(3, 5), normal(3, 5)
    if name == "bce":
        x, y = RNG.uniform(0.05, 0.95, size=(3, 5)), RNG.uniform(0, 1, size=(3, 5))
        name = "binary_cross_entropy"
        if variant:
            weight = RNG.uniform(0.5, 1.5, size=(1, 5))
            del options["beta"]
            compare(
                lambda a, b: F.binary_cross_entropy(a, b, plugrad.asarray(weight), **options),
                lambda a, b: TF.binary_cross_entropy(a, b, torch.tensor(weight), **options),
                x,
                y,
            )
            return
    compare(
        lambda a, b: getattr(F, name)(a, b, **options),
        lambda a, b: getattr(TF, name)(a, b, **options),
        x,
        y,
    )


def test_binary_cross_entropy_clamps_its_logs_like_pytorch() -> None:
    x, y = np.array([0.0, 1.0, 0.5]), np.array([1.0, 0.0, 1.0])
    ours = F.binary_cross_entropy(plugrad.asarray(x), plugrad.asarray(y), reduction="none")
    theirs = TF.binary_cross_entropy(torch.tensor(x), torch.tensor(y), reduction="none")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(
    "amounts", [(1, 2), (0, 1, 2, 0), (-1, 2), (1, -2, 3, 1), (1, 1, 1, 1, 1, 1)]
)
def test_pad(backend, amounts) -> None:
    compare(
        lambda x: F.pad(x, amounts, value=1.5),
        lambda x: TF.pad(x, amounts, value=1.5),
        normal(2, 3, 4),
    )


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize(("shape", "amounts"), [((2, 3, 4), (1, 2)), ((2, 3, 4, 5), (2, 0, 1, 2))])
def test_pad_modes(backend, mode, shape, amounts) -> None:
    compare(
        lambda x: F.pad(x, amounts, mode=mode),
        lambda x: TF.pad(x, amounts, mode=mode),
        normal(*shape),
    )


def test_one_hot_is_pytorchs() -> None:
    indices = np.array([[0, 3], [2, 1]])
    for classes in (-1, 5):
        ours = F.one_hot(plugrad.asarray(indices), classes)
        theirs = TF.one_hot(torch.tensor(indices), classes)
        assert ours.dtype is plugrad.int64
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # PyTorch's keyword is input= (tensor= was plugrad's, which PyTorch refuses).
    keyword = F.one_hot(input=plugrad.asarray(indices), num_classes=4)
    np.testing.assert_array_equal(keyword.numpy(), TF.one_hot(input=torch.tensor(indices)).numpy())
    with pytest.raises(plugrad.errors.ShapeError, match="give num_classes"):  # gave (0, 0)
        F.one_hot(plugrad.zeros(0, dtype=plugrad.int64))
    assert F.one_hot(plugrad.zeros(0, dtype=plugrad.int64), 3).shape == (0, 3)
    # A float count was taken: 3.5 made four classes (PyTorch refuses floats).
    for classes in (3.0, 3.5, True):
        with pytest.raises(TypeError, match="num_classes must be an int"):
            F.one_hot(plugrad.asarray(indices), classes)
    assert F.one_hot(plugrad.asarray(indices), np.int64(4)).shape == (2, 2, 4)


def test_in_place_activations_change_their_input() -> None:
    for function in (F.silu, F.leaky_relu, F.elu):
        x = plugrad.tensor([-1.0, 2.0])
        expected = function(x)
        assert function(x, inplace=True) is x
        np.testing.assert_array_equal(x.numpy(), expected.numpy())
    with pytest.raises(plugrad.errors.BackwardError, match="leaf"):
        F.elu(plugrad.tensor([1.0], requires_grad=True), inplace=True)


def test_new_functions_refuse_bad_arguments() -> None:
    x = plugrad.ones(2, 3)
    with pytest.raises(plugrad.errors.ArgumentError, match="mode must be one of"):
        F.pad(x, (1, 1), mode="wrap")
    with pytest.raises(plugrad.errors.ArgumentError, match="at most 2"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(plugrad.errors.ArgumentError, match="crops"):  # all 3 columns
        F.pad(x, (-2, -1), mode="replicate")
    with pytest.raises(plugrad.errors.ArgumentError, match="even number"):
        F.pad(x, (1,))
    with pytest.raises(plugrad.errors.ArgumentError, match="leaves nothing"):
        F.pad(x, (-2, -2))
    with pytest.raises(IndexOutOfRangeError, match=r"\[3\]"):
        F.one_hot(plugrad.asarray([0, 3]), 3)
    with pytest.raises(plugrad.errors.DtypeError, match="integer"):
        F.one_hot(x, 3)
    with pytest.raises(plugrad.errors.ShapeError, match="must match"):
        F.l1_loss(x, plugrad.ones(3))
    with pytest.raises(ValueError, match="beta"):
        F.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(ValueError, match="input must lie in"):
        F.binary_cross_entropy(x * 2, x)
    with pytest.raises(ValueError, match="target must lie in"):
        F.binary_cross_entropy(x, -x)
    # NaN is not in [0, 1] either: a loss of 100 with no error hid it (PyTorch raises)
    nan = plugrad.tensor([float("nan")])
    with pytest.raises(ValueError, match=r"input must lie in.*NaN"):
        F.binary_cross_entropy(nan, plugrad.zeros(1))
    with pytest.raises(ValueError, match=r"target must lie in.*NaN"):
        plugrad.nn.BCELoss()(plugrad.full((1,), 0.5), nan)


# -- normalization, dropout, embedding -----------------------------------------------------


@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm(backend, affine) -> None:
    if affine:
        compare(
            lambda x, w, b: F.layer_norm(x, (3, 4), w, b, eps=1e-3),
            lambda x, w, b: TF.layer_norm(x, (3, 4), w, b, eps=1e-3),
            normal(2, 3, 4) * 2 + 1,
            normal(3, 4),
            normal(3, 4),
        )
    else:
        compare(lambda x: F.layer_norm(x, 5), lambda x: TF.layer_norm(x, (5,)), normal(4, 5))


def test_embedding(backend) -> None:
    indices = np.array([[0, 4, 4], [2, 4, 1]])
    for padding_idx in (None, 4, -1):
        compare(
            lambda w, p=padding_idx: F.embedding(plugrad.asarray(indices), w, padding_idx=p),
            lambda w, p=padding_idx: TF.embedding(torch.tensor(indices), w, padding_idx=p),
            normal(5, 3),
        )


def test_dropout_scales_kept_elements_and_reproduces_with_the_seed(backend) -> None:
    x = plugrad.ones((200, 50), dtype=plugrad.float64, requires_grad=True)
    plugrad.manual_seed(7)
    y = F.dropout(x, p=0.3)
    plugrad.manual_seed(7)
    again = F.dropout(x, p=0.3)
    values = y.detach().numpy()
    np.testing.assert_array_equal(values, again.detach().numpy())
    assert set(np.unique(values)) == {0.0, 1.0 / 0.7}
    assert abs((values == 0).mean() - 0.3) < 0.02
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), values)  # the same mask, the same scale
    assert F.dropout(x, p=0.3, training=False) is x
    assert F.dropout(x, p=0.0) is x
    assert float(F.dropout(x, p=1.0).sum()) == 0.0
    generator = plugrad.Generator(seed=1, device=x.device)
    other = plugrad.Generator(seed=1, device=x.device)
    np.testing.assert_array_equal(
        F.dropout(x, generator=generator).detach().numpy(),
        F.dropout(x, generator=other).detach().numpy(),
    )


def test_dropout_keeps_float32(backend) -> None:
    x = plugrad.ones(10, requires_grad=True)
    y = F.dropout(x, 0.5)
    y.sum().backward()
    assert y.dtype == x.grad.dtype == plugrad.float32


# -- convolution and pooling --------------------------------------------------------------

CONVS = [
    {},
    {"stride": 2, "padding": 1},
    {"stride": (2, 1), "padding": (0, 2), "dilation": (2, 1)},
    {"padding": "same", "dilation": 2},
    {"padding": "valid", "groups": 2},
]


@pytest.mark.parametrize("kwargs", CONVS, ids=lambda k: "-".join(map(str, k.items())) or "plain")
def test_conv2d(backend, kwargs) -> None:
    compare(
        lambda x, w, b: F.conv2d(x, w, b, **kwargs),
        lambda x, w, b: TF.conv2d(x, w, b, **kwargs),
        normal(2, 4, 7, 6),
        normal(6, 4 // kwargs.get("groups", 1), 3, 2),
        normal(6),
    )


def test_conv2d_same_padding_with_an_even_kernel(backend) -> None:
    def theirs(x, w):
        with warnings.catch_warnings():  # PyTorch warns that it copies the input
            warnings.simplefilter("ignore", UserWarning)
            return TF.conv2d(x, w, padding="same")

    compare(
        lambda x, w: F.conv2d(x, w, padding="same"),
        theirs,
        normal(1, 2, 5, 6),
        normal(3, 2, 4, 2),
    )


def test_conv2d_unbatched(backend) -> None:
    compare(
        lambda x, w: F.conv2d(x, w, padding=1),
        lambda x, w: TF.conv2d(x, w, padding=1),
        normal(2, 5, 5),
        normal(3, 2, 3, 3),
    )


POOLS = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1), "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
]


@pytest.mark.parametrize("kwargs", POOLS, ids=str)
def test_max_pool2d(backend, kwargs) -> None:
    compare(
        lambda x: F.max_pool2d(x, **kwargs),
        lambda x: TF.max_pool2d(x, **kwargs),
        normal(2, 3, 7, 6),
    )
    x = torch.tensor(normal(2, 3, 7, 6))
    mine = F.max_pool2d(plugrad.asarray(x.numpy()), **kwargs, return_indices=True)[1]
    np.testing.assert_array_equal(mine.numpy(), TF.max_pool2d(x, **kwargs, return_indices=True)[1])


def test_max_pool2d_dilation(backend) -> None:
    compare(
        lambda x: F.max_pool2d(x, 2, stride=1, padding=1, dilation=2),
        lambda x: TF.max_pool2d(x, 2, stride=1, padding=1, dilation=2),
        normal(1, 2, 6, 5),
    )


@pytest.mark.parametrize("kwargs", POOLS, ids=str)
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d(backend, kwargs, count_include_pad) -> None:
    compare(
        lambda x: F.avg_pool2d(x, **kwargs, count_include_pad=count_include_pad),
        lambda x: TF.avg_pool2d(x, **kwargs, count_include_pad=count_include_pad),
        normal(2, 3, 7, 6),
    )


def test_avg_pool2d_divisor_override_and_unbatched(backend) -> None:
    compare(
        lambda x: F.avg_pool2d(x, 2, stride=1, divisor_override=3),
        lambda x: TF.avg_pool2d(x, 2, stride=1, divisor_override=3),
        normal(3, 4, 5),
    )


# -- gradients of every order -------------------------------------------------------------


def check_orders(function: Callable[..., Any], *arrays: np.ndarray) -> None:
    leaves = [plugrad.asarray(a, requires_grad=True) for a in arrays]
    assert plugrad.autograd.gradcheck(function, leaves)
    assert plugrad.autograd.gradgradcheck(function, leaves)


def test_compositions_have_second_derivatives(backend) -> None:
    target = plugrad.asarray(np.array([1, 0, 2]))
    check_orders(lambda x, w, b: F.linear(x, w, b), normal(3, 2), normal(2, 2), normal(2))
    check_orders(lambda x, y: F.mse_loss(x, y), normal(3, 2), normal(3, 2))
    check_orders(lambda x: F.cross_entropy(x, target, label_smoothing=0.1), normal(3, 3))
    check_orders(lambda x: F.nll_loss(F.log_softmax(x, 1), target), normal(3, 3))
    check_orders(lambda x, p: F.cross_entropy(x, F.softmax(p, 1)), normal(2, 3), normal(2, 3))
    check_orders(
        lambda x, w: F.conv2d(x, w, padding="same"), normal(1, 1, 3, 3), normal(1, 1, 2, 2)
    )


# -- errors -------------------------------------------------------------------------------


def test_bad_arguments_raise_clear_errors() -> None:
    x = plugrad.asarray(normal(2, 3))
    with pytest.raises(ValueError, match="reduction must be"):
        F.cross_entropy(x, plugrad.asarray(np.array([0, 1])), reduction="avg")
    with pytest.raises(plugrad.errors.ShapeError, match="needs a target of shape"):
        F.cross_entropy(x, plugrad.asarray(np.array([0, 1, 2])))
    with pytest.raises(plugrad.errors.DtypeError, match="must be integers"):
        F.nll_loss(x, plugrad.asarray(np.array([True, False])))
    with pytest.raises(plugrad.errors.ShapeError, match="one per class"):
        F.cross_entropy(x, plugrad.asarray(np.array([0, 1])), weight=plugrad.ones(2))
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(x, plugrad.asarray(np.array([0, 1])), label_smoothing=1.5)
    with pytest.raises(ValueError, match="probability"):
        F.dropout(x, p=-0.1)
    with pytest.raises(plugrad.errors.ShapeError, match="trailing axes"):
        F.layer_norm(x, (2,))
    with pytest.raises(plugrad.errors.DtypeError, match="indices must be integers"):
        F.embedding(x, plugrad.ones((3, 2)))
    with pytest.raises(ValueError, match="padding_idx"):
        F.embedding(plugrad.asarray(np.array([0])), plugrad.ones((3, 2)), padding_idx=3)
    image = plugrad.ones((1, 2, 5, 5))
    with pytest.raises(plugrad.errors.ShapeError, match="expects 4"):
        F.conv2d(image, plugrad.ones((4, 2, 3, 3)), groups=2)
    with pytest.raises(ValueError, match="groups must"):
        F.conv2d(image, plugrad.ones((3, 1, 3, 3)), groups=2)
    with pytest.raises(ValueError, match="stride 1"):
        F.conv2d(image, plugrad.ones((3, 2, 3, 3)), stride=2, padding="same")
    with pytest.raises(plugrad.errors.ShapeError, match="smaller than the dilated kernel"):
        F.conv2d(image, plugrad.ones((3, 2, 6, 3)))
    with pytest.raises(ValueError, match="at most half"):
        F.max_pool2d(image, 2, padding=2)
    with pytest.raises(ValueError, match="kernel_size"):
        F.avg_pool2d(image, 0)
    with pytest.raises(TypeError, match="must be a Tensor"):
        F.mse_loss(normal(2), x)


# -- class targets and embedding indices out of range ----------------------------------------


@pytest.mark.parametrize("loss", [F.cross_entropy, F.nll_loss], ids=["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("bad", [10, -1, -2, 11])
def test_class_targets_out_of_range_are_refused(loss, bad) -> None:
    x = plugrad.zeros((2, 10), requires_grad=True)
    with pytest.raises(IndexOutOfRangeError, match=r"must lie in \[0, 10\).*e\.g\. " + str(bad)):
        loss(x, plugrad.tensor([bad, 0]))
    with pytest.raises(IndexError):  # what code written for PyTorch catches
        loss(x, plugrad.tensor([[0, bad]]).reshape(2))
    assert x.grad is None


@pytest.mark.parametrize("loss", [F.cross_entropy, F.nll_loss], ids=["cross_entropy", "nll_loss"])
def test_ignore_index_may_lie_outside_the_classes(loss) -> None:
    x = plugrad.zeros((3, 4), dtype=plugrad.float64, requires_grad=True)
    scores = x if loss is F.cross_entropy else F.log_softmax(x, 1)
    value = loss(scores, plugrad.tensor([-1, 2, -1]), ignore_index=-1)
    assert value.item() == pytest.approx(np.log(4.0))
    value.backward()
    assert x.grad[0].tolist() == [0.0] * 4 and x.grad[2].tolist() == [0.0] * 4


_IGNORE_INDEX_CASES = [
    ([0, -1, 2], {"ignore_index": -1}),
    ([2, 2, 2], {"ignore_index": 2}),  # every target ignored: NaN mean, zero gradient
    ([2, 1, 2], {"ignore_index": 2, "reduction": "sum"}),
    ([2, 1, 0], {"ignore_index": 2, "reduction": "none"}),
    ([2, 1, 0], {"ignore_index": 0, "weight": [0.5, 1.0, 2.0, 1.5]}),
    ([4, 1, 4], {"ignore_index": 4}),  # one past the last class
    ([255, 1, 0], {"ignore_index": 255, "reduction": "sum"}),  # far past it
    ([-100, 3, -100], {}),  # the default
    ([0, 3, 3], {}),  # the edges of the range
]


@pytest.mark.parametrize(
    ("loss", "target", "options"),
    [("nll_loss", *case) for case in _IGNORE_INDEX_CASES]
    + [("cross_entropy", *case) for case in _IGNORE_INDEX_CASES]
    + [("cross_entropy", [2, 1, 3], {"ignore_index": 3, "label_smoothing": 0.2})],
)
def test_ignore_index_matches_pytorch(loss, target, options) -> None:
    logits = np.random.default_rng(0).normal(size=(3, 4))
    ours_options = dict(options)
    theirs_options = dict(options)
    if "weight" in options:
        ours_options["weight"] = plugrad.tensor(options["weight"], dtype=plugrad.float64)
        theirs_options["weight"] = torch.tensor(options["weight"], dtype=torch.float64)
    x = plugrad.asarray(logits, requires_grad=True)
    t = torch.tensor(logits, requires_grad=True)
    ours = getattr(F, loss)(x if loss == "cross_entropy" else F.log_softmax(x, 1),
                            plugrad.tensor(target), **ours_options)  # fmt: skip
    tf = torch.nn.functional
    theirs = getattr(tf, loss)(t if loss == "cross_entropy" else tf.log_softmax(t, 1),
                               torch.tensor(target), **theirs_options)  # fmt: skip
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize(
    ("target", "ignore_index"),
    [([4, 0], 3), ([5, 4], 4), ([-2, -1], -1), ([-1, 0], 255), ([0, -100], -101)],
)
def test_targets_pytorch_refuses_are_refused(loss, target, ignore_index) -> None:
    logits = np.zeros((2, 4))
    tf = torch.nn.functional
    scores = (lambda x: x) if loss == "cross_entropy" else (lambda x: tf.log_softmax(x, 1))
    with pytest.raises((IndexError, RuntimeError)):
        getattr(tf, loss)(scores(torch.tensor(logits)), torch.tensor(target),
                          ignore_index=ignore_index)  # fmt: skip
    x = plugrad.asarray(logits)
    ours = (lambda x: x) if loss == "cross_entropy" else (lambda x: F.log_softmax(x, 1))
    with pytest.raises(IndexOutOfRangeError, match=r"must lie in \[0, 4\)"):
        getattr(F, loss)(ours(x), plugrad.tensor(target), ignore_index=ignore_index)


def _ops_run(function):
    """The ops whose kernels ``function()`` runs, in order."""
    device = plugrad.ones(1).device
    names = []

    class Counting(dict):
        def __getitem__(self, name):
            names.append(name)
            return super().__getitem__(name)

    kernels = device.kernels
    device.kernels = Counting(kernels)
    try:
        function()
    finally:
        device.kernels = kernels
    return names


def test_range_checks_cost_one_op_each() -> None:
    logits, target = plugrad.zeros((3, 4)), plugrad.tensor([0, 3, -100])
    assert _ops_run(lambda: F.cross_entropy(logits, target, reduction="none")) == [
        "out_of_range", "cross_entropy"
    ]  # fmt: skip
    weight = plugrad.ones((3, 2))
    assert _ops_run(lambda: F.embedding(plugrad.tensor([2, 0]), weight)) == [
        "out_of_range", "embedding"
    ]  # fmt: skip


@pytest.mark.parametrize("bad", [-1, 3, 100])
def test_embedding_indices_out_of_range_are_refused(bad) -> None:
    weight = plugrad.ones((3, 2), requires_grad=True)
    with pytest.raises(IndexOutOfRangeError, match=r"must lie in \[0, 3\)"):
        F.embedding(plugrad.tensor([[0, bad]]), weight)
    with pytest.raises(IndexError):
        plugrad.nn.Embedding(3, 2)(plugrad.tensor([bad]))
    assert F.embedding(plugrad.tensor([2, 0]), weight).shape == (2, 2)


def test_relu_and_dropout_in_place_are_pytorchs() -> None:
    x = np.array([-1.0, 2.0, 3.0, -0.5])
    compare(lambda a: F.relu(a * 1.0, inplace=True), lambda a: TF.relu(a * 1.0, inplace=True), x)
    compare(
        lambda a: F.dropout(a * 1.0, 0.0, inplace=True),
        lambda a: TF.dropout(a * 1.0, 0.0, inplace=True),
        x,
    )
    x = np.linspace(-1.0, 2.0, 16)
    w = plugrad.asarray(x, requires_grad=True)
    y = w * 2.0
    assert plugrad.nn.ReLU(inplace=True)(y) is y and y._version == 1
    plugrad.manual_seed(0)
    kept = plugrad.nn.Dropout(0.5, inplace=True)(y)
    assert kept is y and y._version == 2
    with pytest.raises(plugrad.errors.InPlaceModificationError, match="ReluBackward"):
        (y * y).sum().backward()  # relu's saved output was changed in place, as in PyTorch
    y = w * 2.0
    plugrad.nn.ReLU(inplace=True)(y)
    plugrad.manual_seed(0)
    y = plugrad.nn.Dropout(0.5)(y)
    (y * y).sum().backward()  # y = 2 * relu(2w) where kept: the gradient is 32w there
    nonzero = y.detach().numpy() != 0
    assert 0 < nonzero.sum() < (x > 0).sum()
    np.testing.assert_allclose(w.grad.numpy(), np.where(nonzero, 32.0 * x, 0.0))
    with pytest.raises(plugrad.errors.BackwardError, match="leaf"):
        F.relu(w, inplace=True)


def test_functional_takes_the_standards_axis_names_beside_pytorchs() -> None:
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    for ours, theirs in (
        (lambda a: F.softmax(a, axis=1), lambda a: TF.softmax(a, dim=1)),
        (lambda a: F.log_softmax(a, axis=0), lambda a: TF.log_softmax(a, dim=0)),
    ):
        compare(ours, theirs, x)
    with pytest.raises(plugrad.errors.ArgumentError, match="pass only one"):
        F.softmax(plugrad.asarray(x), dim=1, axis=1)


_READ_AS_NUMBERS = {
    "pad value": lambda x, s: F.pad(x, (1, 1), value=s),
    "layer_norm eps": lambda x, s: F.layer_norm(x, (3,), eps=s),
    "batch_norm eps": lambda x, s: F.batch_norm(x, None, None, training=True, eps=s),
    "batch_norm momentum": lambda x, s: F.batch_norm(x, None, None, training=True, momentum=s),
    "group_norm eps": lambda x, s: F.group_norm(x[None], 1, eps=s),
    "instance_norm eps": lambda x, s: F.instance_norm(x[None], eps=s),
    "rms_norm eps": lambda x, s: F.rms_norm(x, (3,), eps=s),
    "normalize p": lambda x, s: F.normalize(x, p=s),
    "normalize eps": lambda x, s: F.normalize(x, eps=s),
    "full": lambda x, s: plugrad.full((2, 3), s),
    "new_full": lambda x, s: x.new_full((2,), s),
    "arange": lambda x, s: plugrad.arange(s * 0, 3.0),
}


@pytest.mark.parametrize("name", list(_READ_AS_NUMBERS))
def test_a_tensor_that_requires_grad_read_as_a_number_is_refused(name) -> None:
    # Its value was used and its gradient silently left out (.grad stayed None).
    x = plugrad.asarray(normal(2, 3), requires_grad=True)
    setting = plugrad.tensor(0.5, dtype=plugrad.float64, requires_grad=True)
    with pytest.raises(plugrad.errors.ArgumentError, match=r"requires grad.*\.item\(\)"):
        _READ_AS_NUMBERS[name](x, setting)
    _READ_AS_NUMBERS[name](x, setting.detach())  # a constant, as before
    with plugrad.no_grad():
        _READ_AS_NUMBERS[name](x, setting)
