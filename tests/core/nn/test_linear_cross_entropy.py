"""``nn.functional.linear_cross_entropy`` and ``nn.LinearCrossEntropyLoss`` against PyTorch:
values and gradients (float64) of class-index and probability targets, ``ignore_index``,
``label_smoothing``, each reduction and K-dimensional ``out_features``; the layer's
``state_dict`` and repr; and the typed errors of bad input."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
import plugrad.nn.functional as F
from plugrad import nn
from plugrad.errors import (
    ArgumentError,
    InvalidArgumentError,
    NotSupportedError,
    PlugradError,
    ShapeError,
)

torch = pytest.importorskip("torch")
TF = torch.nn.functional

IN, C, N = 4, 5, 6


def _data(seed: int, batched: bool, extra: tuple[int, ...], probabilities: bool):
    """input, linear_weight, linear_bias, class weight and target, as NumPy arrays."""
    rng = np.random.default_rng(seed)
    batch = (N,) if batched else ()
    x = rng.standard_normal((*batch, IN))
    w = rng.standard_normal((C, *extra, IN))
    b = rng.standard_normal((C, *extra))
    cw = rng.uniform(0.5, 2.0, C)
    if probabilities:
        t = rng.uniform(0.1, 1.0, (*batch, C, *extra))
        t = t / t.sum(axis=len(batch), keepdims=True)
    else:
        t = rng.integers(0, C, (*batch, *extra))
    return x, w, b, cw, t


def _operands(tensor, x, w, b, cw, cw_grad: bool) -> dict:
    """The loss's operands by name, made by ``tensor`` (``plugrad.asarray`` or
    ``torch.tensor``); ``b``/``cw`` of None stay None."""
    return {
        "input": tensor(x, requires_grad=True),
        "linear_weight": tensor(w, requires_grad=True),
        "linear_bias": None if b is None else tensor(b, requires_grad=True),
        "weight": None if cw is None else tensor(cw, requires_grad=cw_grad),
    }


def _compare(x, w, b, cw, t, **kwargs) -> None:
    """Loss and gradients of (input, linear_weight, linear_bias, weight) equal PyTorch's;
    ``b``/``cw`` of None are left out, and ``cw`` gets a gradient with probability targets."""
    cw_grad = t.dtype.kind == "f"
    ours = _operands(plugrad.asarray, x, w, b, cw, cw_grad)
    theirs = _operands(torch.tensor, x, w, b, cw, cw_grad)
    our_loss = F.linear_cross_entropy(target=plugrad.asarray(t), **ours, **kwargs)
    their_loss = TF.linear_cross_entropy(target=torch.tensor(t), **theirs, **kwargs)
    assert our_loss.shape == tuple(their_loss.shape)
    np.testing.assert_allclose(our_loss.detach().numpy(), their_loss.detach().numpy(), rtol=1e-12)
    # A weighted sum, so that reduction="none" checks each element's gradient.
    scale = np.linspace(0.5, 1.5, int(np.prod(our_loss.shape))).reshape(our_loss.shape)
    (our_loss * plugrad.asarray(scale)).sum().backward()
    (their_loss * torch.tensor(scale)).sum().backward()
    for name, tensor in theirs.items():
        if tensor is None or not tensor.requires_grad:
            continue
        np.testing.assert_allclose(
            ours[name].grad.numpy(), tensor.grad.numpy(), rtol=1e-10, atol=1e-13, err_msg=name
        )


SHAPES = [(False, ()), (True, ()), (True, (3,)), (True, (2, 3))]


@pytest.mark.parametrize(("batched", "extra"), SHAPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("bias", [False, True])
def test_class_indices_against_torch(batched, extra, reduction, label_smoothing, bias):
    x, w, b, cw, t = _data(1, batched, extra, probabilities=False)
    for weight in (None, cw):
        _compare(
            x,
            w,
            b if bias else None,
            weight,
            t,
            reduction=reduction,
            label_smoothing=label_smoothing,
        )


@pytest.mark.parametrize(("batched", "extra"), SHAPES[1:])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [None, 2, -1])
def test_ignore_index_against_torch(batched, extra, reduction, ignore_index):
    # None skips -100 (PyTorch's default for class indices); an explicit index skips its own.
    x, w, b, cw, t = _data(2, batched, extra, probabilities=False)
    t = t.copy()
    t.reshape(-1)[::3] = -100 if ignore_index is None else ignore_index
    if ignore_index == -1:
        t.reshape(-1)[1] = 2  # a class 2 is counted when another index is skipped
    for weight in (None, cw):
        for smoothing in (0.0, 0.3):
            _compare(
                x,
                w,
                b,
                weight,
                t,
                reduction=reduction,
                ignore_index=ignore_index,
                label_smoothing=smoothing,
            )


@pytest.mark.parametrize(("batched", "extra"), SHAPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.25])
def test_class_probabilities_against_torch(batched, extra, reduction, label_smoothing):
    # Here the class weight gets a gradient too.
    x, w, b, cw, t = _data(3, batched, extra, probabilities=True)
    for bias, weight in ((None, None), (b, cw)):
        _compare(x, w, bias, weight, t, reduction=reduction, label_smoothing=label_smoothing)


def test_all_targets_ignored_gives_nan_as_torch():
    x, w, _, _, t = _data(4, True, (), probabilities=False)
    t = np.full_like(t, -100)
    ours = F.linear_cross_entropy(plugrad.asarray(x), plugrad.asarray(w), plugrad.asarray(t))
    theirs = TF.linear_cross_entropy(torch.tensor(x), torch.tensor(w), torch.tensor(t))
    assert np.isnan(float(ours.item())) and torch.isnan(theirs)


CONFIGS = [
    {},
    {"bias": True},
    {"out_features": (3,), "bias": True},
    {"out_features": (2, 3), "reduction": "sum", "label_smoothing": 0.1},
    {"ignore_index": 1, "reduction": "none"},
    {"weight": "class", "bias": True, "out_features": (2,)},
]


def _layers(config: dict):
    """The same configuration of ``LinearCrossEntropyLoss`` in plugrad and in PyTorch."""
    kwargs = dict(config)
    weight = np.linspace(0.5, 2.0, C)
    if kwargs.pop("weight", None):
        return (
            nn.LinearCrossEntropyLoss(
                IN, C, weight=plugrad.asarray(weight), dtype=plugrad.float64, **kwargs
            ),
            torch.nn.LinearCrossEntropyLoss(
                IN, C, weight=torch.tensor(weight), dtype=torch.float64, **kwargs
            ),
        )
    return (
        nn.LinearCrossEntropyLoss(IN, C, dtype=plugrad.float64, **kwargs),
        torch.nn.LinearCrossEntropyLoss(IN, C, dtype=torch.float64, **kwargs),
    )


@pytest.mark.parametrize("config", CONFIGS)
def test_layer_state_dict_and_repr_are_torchs(config):
    ours, theirs = _layers(config)
    assert repr(ours) == repr(theirs)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in theirs.state_dict().items()
    ]
    assert [name for name, _ in ours.named_parameters()] == [
        name for name, _ in theirs.named_parameters()
    ]


@pytest.mark.parametrize("config", CONFIGS)
def test_layer_with_torchs_state_dict_gives_torchs_loss_and_gradients(config):
    ours, theirs = _layers(config)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    extra = config.get("out_features", ())
    x, _, _, _, t = _data(5, True, extra, probabilities=False)
    if "ignore_index" in config:
        t = t.copy()
        t.reshape(-1)[::2] = config["ignore_index"]
    our_x, their_x = plugrad.asarray(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    our_loss, their_loss = ours(our_x, plugrad.asarray(t)), theirs(their_x, torch.tensor(t))
    np.testing.assert_allclose(our_loss.detach().numpy(), their_loss.detach().numpy(), rtol=1e-12)
    our_loss.sum().backward()
    their_loss.sum().backward()
    np.testing.assert_allclose(our_x.grad.numpy(), their_x.grad.numpy(), rtol=1e-10)
    for (name, ours_p), (_, theirs_p) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(
            ours_p.grad.numpy(), theirs_p.grad.numpy(), rtol=1e-10, atol=1e-13, err_msg=name
        )


def test_layer_initializes_as_linear():
    # The flat weight is a Linear's: drawn from U(-1/sqrt(in), 1/sqrt(in)), as the bias.
    layer = nn.LinearCrossEntropyLoss(16, 3, out_features=(2, 2), bias=True)
    assert layer.linear.weight.shape == (12, 16) and layer.linear.bias.shape == (12,)
    for p in (layer.linear.weight, layer.linear.bias):
        values = p.detach().numpy()
        assert np.abs(values).max() <= 0.25 and values.std() > 0.05


def _good():
    x, w, b, _, t = _data(6, True, (), probabilities=False)
    return plugrad.asarray(x), plugrad.asarray(w), plugrad.asarray(t), plugrad.asarray(b)


@pytest.mark.parametrize(
    ("change", "error", "words"),
    [
        (lambda x, w, t, b: ((x[None],), w, t, {}), ShapeError, "input must be"),
        (lambda x, w, t, b: ((x,), w[0], t, {}), ShapeError, "at least 2-d"),
        (lambda x, w, t, b: ((x,), w[:, :3], t, {}), ShapeError, "in_features"),
        (lambda x, w, t, b: ((x,), w, t, {"linear_bias": b[:3]}), ShapeError, "linear_bias"),
        (
            lambda x, w, t, b: ((x[0],), plugrad.stack([w, w], axis=1), t[0], {}),
            ShapeError,
            "needs a batch",
        ),
        (
            lambda x, w, t, b: ((x,), w, plugrad.ones((N, C)) / C, {"ignore_index": 0}),
            ArgumentError,
            "ignore_index",
        ),
        (lambda x, w, t, b: ((x,), w, t, {"reduction": "avg"}), InvalidArgumentError, "avg"),
        (lambda x, w, t, b: ((x,), w, t, {"label_smoothing": 1.5}), InvalidArgumentError, "1.5"),
        (lambda x, w, t, b: ((x.numpy(),), w, t, {}), ArgumentError, "Tensor"),
        (lambda x, w, t, b: ((x,), w, t, {"linear_bias": b.numpy()}), ArgumentError, "Tensor"),
        (
            lambda x, w, t, b: ((x,), w, t, {"options": torch.nn.LinearCrossEntropyOptions()}),
            NotSupportedError,
            "unchunked",
        ),
    ],
)
def test_bad_input_gets_typed_errors(change, error, words):
    x, w, t, b = _good()
    (x,), w, t, kwargs = change(x, w, t, b)
    with pytest.raises(error, match=words):
        F.linear_cross_entropy(x, w, t, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"weight": plugrad.ones(C + 1)}, ShapeError, "weight must"),
        ({"label_smoothing": -0.1}, InvalidArgumentError, "label_smoothing"),
        ({"reduction": "avg"}, InvalidArgumentError, "reduction"),
        ({"out_features": 3}, ArgumentError, "tuple"),
        ({"out_features": (2, -1)}, InvalidArgumentError, "out_features"),
        ({"ignore_index": 1.5}, ArgumentError, "ignore_index"),
        ({"options": object()}, NotSupportedError, "unchunked"),
    ],
)
def test_layer_bad_arguments_get_typed_errors(kwargs, error, words):
    with pytest.raises(error, match=words) as caught:
        nn.LinearCrossEntropyLoss(IN, C, **kwargs)
    assert isinstance(caught.value, PlugradError)


def test_bad_input_leaves_grads_unchanged():
    x, w, t, b = _good()
    w.requires_grad_(True)
    F.linear_cross_entropy(x, w, t).backward()
    before = w.grad.numpy().copy()
    with pytest.raises(ShapeError):
        F.linear_cross_entropy(x, w, t, linear_bias=b[:2])
    np.testing.assert_array_equal(w.grad.numpy(), before)
