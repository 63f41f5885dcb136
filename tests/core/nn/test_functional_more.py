"""The activations, distances and losses added after the first set, against PyTorch.

Values and the gradients of every differentiable input agree with
``torch.nn.functional`` on the same float64 data, for several shapes and every
reduction, on every backend; the layers give what their functions give; bad
input raises a typed error that says what is wrong.
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any

import numpy as np
import pytest
from functional_compare import compare_with_torch

import plugrad
import plugrad.nn.functional as F
from plugrad import nn
from plugrad.errors import ArgumentError, AxisError, DtypeError, IndexOutOfRangeError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")
TF = torch.nn.functional
compare = partial(compare_with_torch, rtol=1e-9, atol=1e-12)

REDUCTIONS = ["mean", "sum", "none"]
RNG = np.random.default_rng(7)


def normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


# -- activations --------------------------------------------------------------------------

ACTIVATIONS = {
    "softmin": (lambda x: F.softmin(x, dim=1), lambda x: TF.softmin(x, dim=1)),
    "softmin-first": (lambda x: F.softmin(x, 0), lambda x: TF.softmin(x, 0)),
    "softsign": (F.softsign, TF.softsign),
    "logsigmoid": (F.logsigmoid, TF.logsigmoid),
    "softshrink": (F.softshrink, TF.softshrink),
    "softshrink-1": (lambda x: F.softshrink(x, 1.0), lambda x: TF.softshrink(x, 1.0)),
    "hardshrink": (F.hardshrink, TF.hardshrink),
    "hardshrink-1": (lambda x: F.hardshrink(x, 1.0), lambda x: TF.hardshrink(x, 1.0)),
    "tanhshrink": (F.tanhshrink, TF.tanhshrink),
    "glu": (F.glu, TF.glu),
    "glu-dim1": (lambda x: F.glu(x, 1), lambda x: TF.glu(x, 1)),
}


@pytest.mark.parametrize("shape", [(3, 4, 6), (2, 4), (4,)], ids=str)
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activations(backend, name, shape) -> None:
    if name in ("softmin", "glu-dim1") and len(shape) < 2:
        pytest.skip("needs dim 1")
    ours, theirs = ACTIVATIONS[name]
    compare(ours, theirs, normal(*shape) * 3)


def test_activations_on_their_kinks_and_far_out(backend) -> None:
    x = np.array([-800.0, -30.0, -1.0, -0.5, 0.0, 0.5, 1.0, 30.0, 800.0])
    for name in ("softsign", "logsigmoid", "softshrink", "hardshrink", "softshrink-1"):
        ours, theirs = ACTIVATIONS[name]
        compare(ours, theirs, x)
    assert not np.signbit(F.logsigmoid(plugrad.tensor([800.0])).numpy()).any()


@pytest.mark.parametrize(
    ("input_shape", "weight"),
    [((3, 4, 5), (4,)), ((3, 4, 5), (1,)), ((3, 4, 5), ()), ((2, 3), (3,)), ((5,), (1,)), ((), ())],
    ids=str,
)
def test_prelu_with_the_gradient_of_its_weight(backend, input_shape, weight) -> None:
    slopes = RNG.uniform(0.05, 0.5, size=weight)
    x = normal(*input_shape) * 2
    compare(F.prelu, TF.prelu, x, slopes)


def test_prelu_at_zero_takes_the_slope_as_pytorch(backend) -> None:
    compare(F.prelu, TF.prelu, np.array([[0.0, -1.0], [1.0, 0.0]]), np.array([0.3, 0.7]))


# -- distances ----------------------------------------------------------------------------


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, float("inf")])
@pytest.mark.parametrize("dim", [1, -1, 0, (1, 2)], ids=str)
def test_normalize(backend, p, dim) -> None:
    x = normal(3, 4, 5)
    x[0, :, :] = 0.0  # a zero vector along every dim but 0: divided by eps
    x[1, 2, :] = 1e-14  # below eps for dim=-1
    compare(lambda t: F.normalize(t, p=p, dim=dim), lambda t: TF.normalize(t, p=p, dim=dim), x)


def test_normalize_defaults(backend) -> None:
    compare(F.normalize, TF.normalize, normal(4, 3))
    compare(lambda t: F.normalize(t, dim=0), lambda t: TF.normalize(t, dim=0), normal(5))


@pytest.mark.parametrize(
    ("shape1", "shape2", "dim"),
    [((4, 5), (4, 5), 1), ((4, 5), (1, 5), 1), ((2, 3, 4), (2, 3, 4), -1), ((3, 4), (4,), 0)],
    ids=str,
)
def test_cosine_similarity(backend, shape1, shape2, dim) -> None:
    compare(
        lambda a, b: F.cosine_similarity(a, b, dim=dim),
        lambda a, b: TF.cosine_similarity(a, b, dim=dim),
        normal(*shape1),
        normal(*shape2),
    )


def test_cosine_similarity_of_tiny_and_zero_vectors_clamps_as_pytorch(backend) -> None:
    x1, x2 = normal(4, 3), normal(4, 3)
    x1[0] *= 1e-10  # norm below eps: the value divides by eps, the gradient is the norm's
    x1[1] = 0.0
    x2[2] *= 1e-12
    for eps in (1e-8, 1e-3):
        compare(
            lambda a, b, eps=eps: F.cosine_similarity(a, b, eps=eps),
            lambda a, b, eps=eps: TF.cosine_similarity(a, b, eps=eps),
            x1,
            x2,
        )
    compare(F.cosine_similarity, TF.cosine_similarity, normal(2, 3), normal(2, 3))


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize(
    ("shape1", "shape2"), [((4, 5), (4, 5)), ((4, 5), (5,)), ((2, 3, 4), (3, 4)), ((5,), (5,))]
)
def test_pairwise_distance(backend, p, keepdim, shape1, shape2) -> None:
    compare(
        lambda a, b: F.pairwise_distance(a, b, p=p, keepdim=keepdim),
        lambda a, b: TF.pairwise_distance(a, b, p=p, keepdim=keepdim),
        normal(*shape1),
        normal(*shape2),
    )


def test_pairwise_distance_of_scalars_and_eps(backend) -> None:
    compare(F.pairwise_distance, TF.pairwise_distance, np.array(1.5), np.array(-0.5))
    compare(
        lambda a, b: F.pairwise_distance(a, b, eps=0.1),
        lambda a, b: TF.pairwise_distance(a, b, eps=0.1),
        normal(3, 2),
        normal(3, 2),
    )


def test_distance_layers(backend) -> None:
    a, b = normal(3, 4), normal(3, 4)
    for ours, theirs in [
        (nn.CosineSimilarity(dim=0, eps=1e-6), torch.nn.CosineSimilarity(dim=0, eps=1e-6)),
        (nn.PairwiseDistance(1.0, keepdim=True), torch.nn.PairwiseDistance(1.0, keepdim=True)),
    ]:
        compare(ours, theirs, a, b)


# -- losses -------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("delta", [1.0, 0.5, 2.0])
def test_huber_loss(backend, reduction, delta) -> None:
    input, target = normal(4, 5) * 2, normal(4, 5)
    input[0, :3] = target[0, :3] + np.array([delta, -delta, 0.0])  # on the kinks
    compare(
        lambda x, t: F.huber_loss(x, t, reduction, delta),
        lambda x, t: TF.huber_loss(x, t, reduction, delta),
        input,
        target,
    )
    weight = RNG.uniform(0.5, 2.0, size=(4, 5))
    compare(
        lambda x, t, w: F.huber_loss(x, t, reduction=reduction, delta=delta, weight=w),
        lambda x, t, w: TF.huber_loss(x, t, reduction=reduction, delta=delta, weight=w),
        input,
        target,
        weight,
    )
    compare(nn.HuberLoss(reduction, delta), torch.nn.HuberLoss(reduction, delta), input, target)


@pytest.mark.parametrize("reduction", [*REDUCTIONS, "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
@pytest.mark.parametrize("shape", [(4, 5), (3, 2, 4), (6,)], ids=str)
def test_kl_div(backend, reduction, log_target, shape) -> None:
    log_input = np.log(RNG.dirichlet(np.ones(shape[-1]), size=shape[:-1]))
    target = RNG.dirichlet(np.ones(shape[-1]), size=shape[:-1])
    if log_target:
        target = np.log(target)
    kwargs = {"reduction": reduction, "log_target": log_target}
    with pytest.warns(UserWarning) if reduction == "mean" else _no_warning():  # PyTorch's
        compare(
            lambda x, t: F.kl_div(x, t, **kwargs),
            lambda x, t: TF.kl_div(x, t, **kwargs),
            log_input,
            target,
        )
    with pytest.warns(UserWarning) if reduction == "mean" else _no_warning():
        compare(nn.KLDivLoss(**kwargs), torch.nn.KLDivLoss(**kwargs), log_input, target)


def test_kl_div_with_zero_targets(backend) -> None:
    target = RNG.dirichlet(np.ones(4), size=3)
    target[0, 1] = target[2, 3] = 0.0  # they count 0; PyTorch's target gradient there is nan
    compare(
        lambda x, t: F.kl_div(x, t, reduction="batchmean"),
        lambda x, t: TF.kl_div(x, t, reduction="batchmean"),
        normal(3, 4),
        target,
        grads=[True, False],
    )


class _no_warning:
    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        pass


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.5])
def test_margin_ranking_loss(backend, reduction, margin) -> None:
    x1, x2 = normal(6), normal(6)
    x2[0] = x1[0]  # a tie: 0 before the clamp when margin is 0
    target = np.array([1.0, -1.0, 1.0, -1.0, 1.0, 1.0])
    compare(
        lambda a, b, t: F.margin_ranking_loss(a, b, t, margin, reduction=reduction),
        lambda a, b, t: TF.margin_ranking_loss(a, b, t, margin, reduction=reduction),
        x1,
        x2,
        target,
    )
    compare(
        nn.MarginRankingLoss(margin, reduction=reduction),
        torch.nn.MarginRankingLoss(margin, reduction=reduction),
        normal(3, 4),
        normal(1, 4),
        np.sign(normal(3, 1)),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [1.0, 0.3])
def test_hinge_embedding_loss(backend, reduction, margin) -> None:
    distance = np.abs(normal(3, 5))
    distance[0, 0] = margin  # on the kink
    target = np.sign(normal(3, 5))
    target[1, 1] = 0.0  # neither 1 nor -1: both terms, as in PyTorch
    compare(
        lambda x, t: F.hinge_embedding_loss(x, t, margin, reduction=reduction),
        lambda x, t: TF.hinge_embedding_loss(x, t, margin, reduction=reduction),
        distance,
        target,
    )
    compare(
        nn.HingeEmbeddingLoss(margin, reduction=reduction),
        torch.nn.HingeEmbeddingLoss(margin, reduction=reduction),
        distance,
        target,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(4, 5), (7,)], ids=str)
def test_soft_margin_loss(backend, reduction, shape) -> None:
    compare(
        lambda x, t: F.soft_margin_loss(x, t, reduction=reduction),
        lambda x, t: TF.soft_margin_loss(x, t, reduction=reduction),
        normal(*shape) * 3,
        np.sign(normal(*shape)),
        grads=[True, False],  # PyTorch refuses a target that requires grad
    )
    compare(
        nn.SoftMarginLoss(reduction=reduction),
        torch.nn.SoftMarginLoss(reduction=reduction),
        normal(*shape),
        np.sign(normal(*shape)),
        grads=[True, False],
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_cosine_embedding_loss(backend, reduction, margin) -> None:
    target = np.array([1.0, -1.0, -1.0, 1.0, -1.0])
    compare(
        lambda a, b, t: F.cosine_embedding_loss(a, b, t, margin, reduction=reduction),
        lambda a, b, t: TF.cosine_embedding_loss(a, b, t, margin, reduction=reduction),
        normal(5, 3),
        normal(5, 3),
        target,
    )
    compare(
        nn.CosineEmbeddingLoss(margin, reduction=reduction),
        torch.nn.CosineEmbeddingLoss(margin, reduction=reduction),
        normal(4),
        normal(4),
        np.array(-1.0),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1.0, 2.0])
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("shape", [(5, 3), (4,)], ids=str)
def test_triplet_margin_loss(backend, reduction, p, swap, shape) -> None:
    kwargs = {"margin": 0.7, "p": p, "swap": swap, "reduction": reduction}
    arrays = normal(*shape), normal(*shape), normal(*shape)
    compare(
        lambda a, b, c: F.triplet_margin_loss(a, b, c, **kwargs),
        lambda a, b, c: TF.triplet_margin_loss(a, b, c, **kwargs),
        *arrays,
    )
    compare(nn.TripletMarginLoss(**kwargs), torch.nn.TripletMarginLoss(**kwargs), *arrays)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("full", [False, True])
def test_poisson_nll_loss(backend, reduction, log_input, full) -> None:
    input = normal(3, 4) if log_input else RNG.uniform(0.1, 3.0, size=(3, 4))
    target = RNG.uniform(0.2, 5.0, size=(3, 4))
    target[0, :3] = [0.5, 1.0, 1.5]  # around the Stirling term's cut at 1
    kwargs = {"log_input": log_input, "full": full, "reduction": reduction}
    compare(
        lambda x, t: F.poisson_nll_loss(x, t, **kwargs),
        lambda x, t: TF.poisson_nll_loss(x, t, **kwargs),
        input,
        target,
    )
    counts = RNG.poisson(2.0, size=(3, 4)).astype(float)
    counts[0, 0] = 0.0  # PyTorch's target gradient is nan there with full: compare the input's
    compare(
        nn.PoissonNLLLoss(**kwargs),
        torch.nn.PoissonNLLLoss(**kwargs),
        input,
        counts,
        grads=[True, False],
    )


def test_poisson_nll_loss_eps(backend) -> None:
    compare(
        lambda x, t: F.poisson_nll_loss(x, t, log_input=False, eps=0.5),
        lambda x, t: TF.poisson_nll_loss(x, t, log_input=False, eps=0.5),
        np.array([0.0, 1.0, 2.0]),
        np.array([1.0, 2.0, 0.0]),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("var_shape", [(4, 3), (4,), (4, 1), (1, 3)], ids=lambda s: f"var{s}")
def test_gaussian_nll_loss(backend, reduction, full, var_shape) -> None:
    var = RNG.uniform(0.1, 2.0, size=var_shape)
    var.flat[0] = 1e-9  # below eps: clamped in value, the gradient passes
    var.flat[-1] = 0.0
    kwargs = {"full": full, "reduction": reduction}
    compare(
        lambda x, t, v: F.gaussian_nll_loss(x, t, v, **kwargs),
        lambda x, t, v: TF.gaussian_nll_loss(x, t, v, **kwargs),
        normal(4, 3),
        normal(4, 3),
        var,
    )
    compare(
        lambda x, t, v: nn.GaussianNLLLoss(eps=1e-3, **kwargs)(x, t, v),
        lambda x, t, v: torch.nn.GaussianNLLLoss(eps=1e-3, **kwargs)(x, t, v),
        normal(4, 3),
        normal(4, 3),
        var,
    )


def test_gaussian_nll_loss_with_one_variance(backend) -> None:
    compare(
        lambda x, t: F.gaussian_nll_loss(x, t, 0.5, reduction="none"),
        lambda x, t: TF.gaussian_nll_loss(x, t, 0.5, reduction="none"),
        normal(2, 3),
        normal(2, 3),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(4, 5), (5,)], ids=str)
def test_multilabel_soft_margin_loss(backend, reduction, weighted, shape) -> None:
    target = (RNG.uniform(size=shape) > 0.5).astype(float)
    arrays = [normal(*shape) * 3, target] + ([RNG.uniform(0.5, 2, size=5)] if weighted else [])
    compare(
        lambda x, t, *w: F.multilabel_soft_margin_loss(x, t, *w, reduction=reduction),
        lambda x, t, *w: TF.multilabel_soft_margin_loss(x, t, *w, reduction=reduction),
        *arrays,
        grads=[True, True, False][: len(arrays)],
    )
    weight = torch.tensor(arrays[2]) if weighted else None
    ours = nn.MultiLabelSoftMarginLoss(
        plugrad.asarray(arrays[2]) if weighted else None, reduction=reduction
    )
    compare(ours, torch.nn.MultiLabelSoftMarginLoss(weight, reduction=reduction), *arrays[:2])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin_loss(backend, reduction, p, weighted) -> None:
    scores = normal(5, 4)
    target = np.array([0, 3, 1, 1, 2])
    scores[1, 0] = scores[1, 3] - 0.7  # margin - x[y] + x[i] == 0: no gradient, as in PyTorch
    weight = RNG.uniform(0.5, 2.0, size=4) if weighted else None
    kwargs = {"p": p, "margin": 0.7, "reduction": reduction}

    def ours(x):
        w = None if weight is None else plugrad.asarray(weight)
        return F.multi_margin_loss(x, plugrad.asarray(target), weight=w, **kwargs)

    def theirs(x):
        w = None if weight is None else torch.tensor(weight)
        return TF.multi_margin_loss(x, torch.tensor(target), weight=w, **kwargs)

    compare(ours, theirs, scores)
    layer = nn.MultiMarginLoss(p, 1.0, None, reduction=reduction)
    compare(
        lambda x: layer(x, plugrad.tensor(2)),
        lambda x: torch.nn.MultiMarginLoss(p, 1.0, None, reduction=reduction)(x, torch.tensor(2)),
        normal(4),
    )


@pytest.mark.parametrize(
    ("loss", "args"),
    [
        (nn.HuberLoss, ()),
        (nn.KLDivLoss, ()),
        (nn.SoftMarginLoss, ()),
        (nn.MultiLabelSoftMarginLoss, ()),
        (nn.MultiMarginLoss, ()),
        (nn.PoissonNLLLoss, ()),
        (nn.MarginRankingLoss, ()),
        (nn.HingeEmbeddingLoss, ()),
        (nn.CosineEmbeddingLoss, ()),
        (nn.TripletMarginLoss, ()),
    ],
)
def test_loss_layers_keep_torchs_attributes_and_state(loss, args) -> None:
    ours, theirs = loss(*args), getattr(torch.nn, loss.__name__)(*args)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for name in ("reduction", "margin", "delta", "log_target", "p", "eps", "swap", "full"):
        assert getattr(ours, name, None) == getattr(theirs, name, None), name


# -- bad input ----------------------------------------------------------------------------


def _t(*shape: int) -> plugrad.Tensor:
    return plugrad.ones(shape) if shape else plugrad.tensor(1.0)


BAD = {
    "glu of an odd dim": (lambda: F.glu(_t(2, 3)), ShapeError, "must have an even size"),
    "glu of a 0-d tensor": (lambda: F.glu(_t()), ShapeError, "0-d tensor has no dim"),
    "glu out of range": (lambda: F.glu(_t(2, 4), dim=2), AxisError, "dim 2 is out of range"),
    "softmin without dim": (lambda: F.softmin(_t(2)), ArgumentError, "needs dim="),
    "softshrink negative": (lambda: F.softshrink(_t(2), -1.0), ValueError, "lambd must be >= 0"),
    "softmax2d of 2-d": (lambda: nn.Softmax2d()(_t(2, 3)), ShapeError, "(N, C, H, W)"),
    "prelu channels": (
        lambda: F.prelu(_t(2, 3), plugrad.ones(2)),
        ShapeError,
        "has 2 slopes but the input (2, 3) has 3 channel(s)",
    ),
    "prelu 2-d weight": (lambda: F.prelu(_t(2, 3), _t(1, 3)), ShapeError, "0-d or 1-d"),
    "prelu dtype": (
        lambda: F.prelu(_t(2, 3), plugrad.ones(3, dtype=plugrad.float64)),
        DtypeError,
        "expected the same dtype",
    ),
    "PReLU zero parameters": (lambda: nn.PReLU(0), ValueError, "positive int"),
    "normalize dim": (lambda: F.normalize(_t(3)), AxisError, "normalize(): dim 1"),
    "cosine_similarity shapes": (
        lambda: F.cosine_similarity(_t(2, 3), _t(2, 4)),
        ShapeError,
        "(2, 3), (2, 4) do not broadcast",
    ),
    "cosine_similarity dim": (
        lambda: F.cosine_similarity(_t(3), _t(3)),
        AxisError,
        "cosine_similarity(): dim 1 is out of range",
    ),
    "cosine_similarity non-tensor": (
        lambda: F.cosine_similarity([1.0], _t(1)),
        TypeError,
        "x1 must be a Tensor",
    ),
    "pairwise_distance shapes": (
        lambda: F.pairwise_distance(_t(2, 3), _t(3, 3)),
        ShapeError,
        "do not broadcast",
    ),
    "huber reduction": (
        lambda: F.huber_loss(_t(2), _t(2), reduction="avg"),
        ValueError,
        "reduction must be 'mean', 'sum' or 'none', got 'avg'",
    ),
    "huber shapes": (lambda: F.huber_loss(_t(2), _t(3)), ShapeError, "must match"),
    "huber delta": (lambda: F.huber_loss(_t(2), _t(2), delta=0.0), ValueError, "delta must be"),
    "huber weight": (
        lambda: F.huber_loss(_t(2), _t(2), weight=_t(3)),
        ShapeError,
        "weight has shape (3,)",
    ),
    "kl_div reduction": (
        lambda: F.kl_div(_t(2), _t(2), reduction="batch"),
        ValueError,
        "'batchmean', got 'batch'",
    ),
    "KLDivLoss reduction": (
        lambda: nn.KLDivLoss(reduction="avg"),
        ValueError,
        "reduction must be 'mean', 'sum', 'none' or 'batchmean', got 'avg'",
    ),
    "HuberLoss reduction": (
        lambda: nn.HuberLoss(reduction="batchmean"),
        ValueError,
        "reduction must be 'mean', 'sum' or 'none', got 'batchmean'",
    ),
    "margin_ranking dims": (
        lambda: F.margin_ranking_loss(_t(2), _t(2), _t(1, 2)),
        ShapeError,
        "same number of dims",
    ),
    "soft_margin shapes": (
        lambda: F.soft_margin_loss(_t(2, 1), _t(2)),
        ShapeError,
        "must match",
    ),
    "cosine_embedding target": (
        lambda: F.cosine_embedding_loss(_t(2, 3), _t(2, 3), _t(2, 1)),
        ShapeError,
        "(N, D) inputs with an (N,) target",
    ),
    "triplet margin": (
        lambda: F.triplet_margin_loss(_t(2), _t(2), _t(2), margin=0.0),
        ValueError,
        "margin must be > 0",
    ),
    "triplet dims": (
        lambda: F.triplet_margin_loss(_t(2, 3), _t(3), _t(2, 3)),
        ShapeError,
        "same number of dims",
    ),
    "gaussian var shape": (
        lambda: F.gaussian_nll_loss(_t(4, 3), _t(4, 3), _t(2, 3)),
        ShapeError,
        "var has shape (2, 3)",
    ),
    "gaussian negative var": (
        lambda: F.gaussian_nll_loss(_t(2), _t(2), plugrad.tensor([1.0, -1.0])),
        ValueError,
        "negative entries",
    ),
    "gaussian negative float var": (
        lambda: F.gaussian_nll_loss(_t(2), _t(2), -1.0),
        ValueError,
        "var must be >= 0",
    ),
    "multi_margin p": (
        lambda: F.multi_margin_loss(_t(2, 3), plugrad.tensor([0, 1]), p=3),
        ValueError,
        "p must be 1 or 2",
    ),
    "multi_margin targets": (
        lambda: F.multi_margin_loss(_t(2, 3), plugrad.tensor([0, 1, 2])),
        ShapeError,
        "needs 2 class target(s)",
    ),
    "multi_margin target range": (
        lambda: F.multi_margin_loss(_t(2, 3), plugrad.tensor([0, 3])),
        IndexOutOfRangeError,
        "class targets must lie in [0, 3)",
    ),
    "multi_margin negative target": (
        # -1 is not a class (this loss has no ignore_index): it never reads the last one.
        lambda: F.multi_margin_loss(_t(2, 3), plugrad.tensor([0, -1])),
        IndexOutOfRangeError,
        "class targets must lie in [0, 3) (there are 3 classes), but 1 of them do not, e.g. -1",
    ),
    "bce weight larger than the input": (
        lambda: F.binary_cross_entropy(_t(2).sigmoid(), _t(2).sigmoid(), weight=_t(3, 2)),
        ShapeError,
        "weight of shape (3, 2) does not broadcast to the input's shape (2,)",
    ),
    "bce with logits pos_weight larger than the input": (
        lambda: F.binary_cross_entropy_with_logits(_t(2), _t(2).sigmoid(), pos_weight=_t(3, 2)),
        ShapeError,
        "pos_weight of shape (3, 2) does not broadcast",
    ),
    "bce with logits weight of another length": (
        lambda: nn.BCEWithLogitsLoss(weight=_t(3))(_t(2), _t(2).sigmoid()),
        ShapeError,
        "weight of shape (3,) does not broadcast",
    ),
    "multi_margin float target": (
        lambda: F.multi_margin_loss(_t(2, 3), _t(2)),
        DtypeError,
        "integer class indices",
    ),
    "multi_margin weight": (
        lambda: F.multi_margin_loss(_t(2, 3), plugrad.tensor([0, 1]), weight=_t(2)),
        ShapeError,
        "weight has 2 entries but there are 3 classes",
    ),
    "MultiMarginLoss p": (lambda: nn.MultiMarginLoss(p=3), ValueError, "p must be 1 or 2"),
    "multilabel 0-d": (
        lambda: F.multilabel_soft_margin_loss(_t(), _t()),
        ShapeError,
        "class dim",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_raises_a_typed_error_that_says_what_is_wrong(case) -> None:
    call, error, message = BAD[case]
    with pytest.raises(error) as info:
        call()
    assert message in str(info.value)


def test_a_refused_call_changes_nothing() -> None:
    layer = nn.PReLU(3)
    before = layer.weight.detach().numpy().copy()
    with pytest.raises(ShapeError):
        layer(plugrad.ones((2, 4)))
    np.testing.assert_array_equal(layer.weight.detach().numpy(), before)
    assert layer.weight.grad is None


# -- pdist, gumbel_softmax -------------------------------------------------------------------


@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, 3.0, 0.5, float("inf")])
def test_pdist(backend, p) -> None:
    rows = normal(5, 3)
    rows[3] = rows[1]  # a zero distance: its gradient is zero, as PyTorch's
    compare(lambda x: F.pdist(x, p), lambda x: TF.pdist(x, p), rows)
    assert F.pdist(plugrad.ones((1, 3))).shape == (0,)
    with pytest.raises(ShapeError, match="2-d"):
        F.pdist(plugrad.ones(3))


@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_draws_differentiable_samples(backend, dim, hard) -> None:
    logits = plugrad.asarray(normal(4, 5, 3), requires_grad=True)
    sample = F.gumbel_softmax(logits, tau=0.7, hard=hard, dim=dim)
    np.testing.assert_allclose(sample.sum(dim).detach().numpy(), 1.0, rtol=1e-12)
    if hard:
        assert set(np.unique(sample.detach().numpy())) <= {0.0, 1.0}
    (sample * plugrad.asarray(normal(4, 5, 3))).sum().backward()
    assert np.isfinite(logits.grad.numpy()).all() and np.abs(logits.grad.numpy()).sum() > 0


def test_gumbel_softmax_samples_the_categorical_distribution_of_its_logits() -> None:
    logits = plugrad.tensor([[0.0, 1.0, 2.0]] * 20000, dtype=plugrad.float64)
    drawn = F.gumbel_softmax(logits, hard=True, generator=plugrad.Generator(1)).mean(0)
    expected = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    np.testing.assert_allclose(drawn.numpy(), expected, atol=0.015)
    again = F.gumbel_softmax(logits[:3], generator=plugrad.Generator(5))
    assert again.tolist() == F.gumbel_softmax(logits[:3], generator=plugrad.Generator(5)).tolist()
    with pytest.raises(ValueError, match="tau"):
        F.gumbel_softmax(logits, tau=0.0)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_element_weights_of_regression_losses(backend, name, reduction) -> None:
    # PyTorch's weighted mean divides by the sum of the weights for mse and l1, by the
    # number of elements for huber.
    weight = np.abs(normal(3, 4))
    compare(
        lambda x, t, w: getattr(F, name)(x, t, reduction=reduction, weight=w),
        lambda x, t, w: getattr(TF, name)(x, t, reduction=reduction, weight=w),
        normal(3, 4), normal(3, 4), weight,
        grads=[True, False, False],
    )  # fmt: skip
    with pytest.raises(ShapeError, match="weight has shape"):
        getattr(F, name)(plugrad.ones(3, 4), plugrad.ones(3, 4), weight=plugrad.ones(4))


def test_calculate_gain_of_transposed_convolutions_is_pytorchs() -> None:
    for name in ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        assert nn.init.calculate_gain(name) == torch.nn.init.calculate_gain(name) == 1.0


MULTILABEL_TARGETS = np.array(
    [[3, 0, -1, 1, 2], [1, 1, 2, -1, -1], [-1, 2, 3, 4, 0], [0, 1, 2, 3, 4]]
)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(backend, reduction) -> None:
    # Classes before the first -1 are targets (a repeated one counts twice, as in PyTorch).
    compare(
        lambda x, t: F.multilabel_margin_loss(x, t, reduction=reduction),
        lambda x, t: TF.multilabel_margin_loss(x, t, reduction=reduction),
        normal(4, 5), MULTILABEL_TARGETS,
    )  # fmt: skip
    ours, theirs = (
        nn.MultiLabelMarginLoss(reduction=reduction),
        torch.nn.MultiLabelMarginLoss(reduction=reduction),
    )
    compare(ours, theirs, normal(5), MULTILABEL_TARGETS[0])
    with pytest.raises(IndexOutOfRangeError, match=r"classes in \[0, 5\) or -1"):
        F.multilabel_margin_loss(plugrad.ones(5), plugrad.tensor([0, 5, -1, 0, 0]))
    with pytest.raises(ShapeError, match="target of its shape"):
        F.multilabel_margin_loss(plugrad.ones(2, 5), plugrad.tensor([0, 1, -1, 0, 0]))


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("distance", ["default", "cosine"])
def test_triplet_margin_with_distance_loss(backend, swap, distance) -> None:
    def loss(module, functional):
        distance_function = None
        if distance == "cosine":

            def distance_function(x, y):
                return 1.0 - functional.cosine_similarity(x, y)

        return module.TripletMarginWithDistanceLoss(
            distance_function=distance_function, margin=1.5, swap=swap
        )

    ours, theirs = loss(nn, F), loss(torch.nn, TF)
    assert repr(ours) == repr(theirs)
    compare(ours, theirs, normal(3, 4), normal(3, 4), normal(3, 4))
    with pytest.raises(TypeError, match="callable"):
        nn.TripletMarginWithDistanceLoss(distance_function=3)


def test_nll_loss_says_when_the_weight_is_not_one_per_class() -> None:
    # The error came from inside: "reshape(): cannot reshape array of size 3 into shape (1,4)".
    input = plugrad.zeros(3, 4)
    target = plugrad.tensor([0, 1, 2])
    for weight in (plugrad.ones(3), plugrad.ones(4, 1)):
        with pytest.raises(ShapeError, match=r"weight must be a tensor of shape \(4,\)"):
            F.nll_loss(input, target, weight=weight)


def test_the_deprecated_size_average_and_reduce_are_read_as_pytorch_reads_them() -> None:
    # F.mse_loss(x, y, size_average=False) and nn.CrossEntropyLoss(reduce=False) raised TypeError.
    torch = pytest.importorskip("torch")
    results = []
    for lib in (plugrad, torch):
        functions = lib.nn.functional
        a, y = lib.tensor([[1.0, 2.0], [3.0, 5.0]]), lib.tensor([0, 1])
        with pytest.warns(UserWarning, match="size_average and reduce"):
            values = [
                functions.mse_loss(a, a * 0, size_average=False),
                functions.mse_loss(a, a * 0, reduce=False),
                functions.cross_entropy(a, y, size_average=False),
                functions.nll_loss(a, y, size_average=True, reduce=False),
                lib.nn.L1Loss(size_average=False)(a, a * 0),
                lib.nn.CrossEntropyLoss(reduce=False)(a, y),
                # the pair sets the reduction, and "batchmean" divides it by the batch too
                functions.kl_div(a, a.abs() * 0.1, reduce=False, reduction="batchmean"),
                functions.kl_div(a, a.abs() * 0.1, size_average=True, reduction="batchmean"),
                lib.nn.KLDivLoss(reduce=False, reduction="batchmean")(a, a.abs() * 0.1),
            ]
        results.append([np.asarray(v.tolist()) for v in values])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    with pytest.raises(TypeError, match="size_average must be a bool"):
        F.mse_loss(plugrad.ones(2), plugrad.ones(2), size_average="sum")


_LEGACY_POSITIONAL_CALLS = [
    ("cross_entropy", (None, True)),  # the 4th was read as ignore_index=True: class 1 dropped
    ("cross_entropy", (None, None, 1, False)),
    ("nll_loss", (None, False)),
    ("nll_loss", (None, None, 2, None, "sum")),
    ("poisson_nll_loss", (True, False, False)),  # the 5th was read as eps
    ("mse_loss", (None, False)),
    ("kl_div", (True,)),
    ("binary_cross_entropy_with_logits", (None, None, False)),
    ("multi_margin_loss", (1, 1.0, None, None, False)),
    ("triplet_margin_loss", (1.0, 2, 1e-6, False, None, False)),
]


@pytest.mark.parametrize(("name", "extra"), _LEGACY_POSITIONAL_CALLS)
def test_losses_take_positional_arguments_in_pytorchs_order(name, extra) -> None:
    values = []
    for lib in (plugrad, torch):
        x = lib.tensor([[0.5, -1.0, 2.0], [1.0, 0.0, -2.0], [0.3, 0.2, 0.1]], dtype=lib.float64)
        inputs = {
            "cross_entropy": (x, lib.tensor([0, 1, 2])),
            "nll_loss": (x, lib.tensor([0, 1, 2])),
            "multi_margin_loss": (x, lib.tensor([0, 1, 2])),
            "triplet_margin_loss": (x, x * 2, x * 3),
            "binary_cross_entropy_with_logits": (x, x.abs() / 2),
        }.get(name, (x, x.abs()))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            values.append(np.asarray(getattr(lib.nn.functional, name)(*inputs, *extra).tolist()))
    np.testing.assert_allclose(*values, rtol=1e-12)


def test_loss_layers_take_positional_arguments_in_pytorchs_order() -> None:
    values = []
    for lib in (plugrad, torch):
        x = lib.tensor([[0.5, -1.0, 2.0], [1.0, 0.0, -2.0]], dtype=lib.float64)
        t = lib.tensor([0, 1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            values.append(
                [
                    lib.nn.NLLLoss(None, False)(x, t),
                    lib.nn.CrossEntropyLoss(None, None, 1, False)(x, t),
                    lib.nn.MSELoss(False)(x, x * 2),
                    lib.nn.PoissonNLLLoss(True, False, None, 1e-8, False)(x, x.abs()),
                    lib.nn.MarginRankingLoss(0.5, None, False)(x[0], x[1], lib.ones(3)),
                ]
            )
    for ours, theirs in zip(*values):
        np.testing.assert_allclose(ours.tolist(), theirs.tolist(), rtol=1e-12)
    with pytest.raises(TypeError, match="multiple values for argument 'ignore_index'"):
        F.nll_loss(plugrad.ones((1, 2)), plugrad.tensor([0]), None, None, 1, ignore_index=2)


def test_softmax_takes_pytorchs_stacklevel_and_refuses_an_integer_dtype() -> None:
    x = plugrad.tensor([[1.0, 2.0]])
    assert F.softmax(x, 1, 3).tolist() == F.softmax(x, 1).tolist()  # 3: _stacklevel
    assert F.log_softmax(x, 1, 3, plugrad.float64).dtype == plugrad.float64
    for call in (
        lambda: F.softmax(x, 1, dtype=plugrad.int64),  # was float32 values
        lambda: F.softmin(x, 1, dtype=plugrad.int32),
        lambda: x.log_softmax(1, dtype=plugrad.int64),
    ):
        with pytest.raises(DtypeError, match="not a floating dtype"):
            call()


def test_a_dtype_hint_never_offers_a_conversion_module_to_refuses() -> None:
    # The hint offered module.to(plugrad.int64), which Module.to refuses.
    with pytest.raises(DtypeError) as integers:
        nn.BatchNorm1d(2)(plugrad.tensor([[1, 2], [3, 4]]))
    assert str(integers.value).endswith("Convert the input (x.to(plugrad.float32))")
    with pytest.raises(DtypeError, match=r"or the module \(module.to\(plugrad.float64\)\)"):
        nn.BatchNorm1d(2)(plugrad.ones(2, 2, dtype=plugrad.float64))


def test_a_float64_weight_keeps_the_binary_cross_entropy_in_the_inputs_dtype() -> None:
    # The float64 weight promoted the float32 loss to float64 (PyTorch's stays float32).
    torch = pytest.importorskip("torch")
    found = []
    for lib in (plugrad, torch):
        functions = lib.nn.functional
        p, y = lib.tensor([0.3, 0.6]), lib.tensor([0.0, 1.0])
        wide = lib.tensor([1.0, 2.0], dtype=lib.float64)
        losses = [
            functions.binary_cross_entropy(p, y, weight=wide),
            functions.binary_cross_entropy_with_logits(p, y, weight=wide),
            functions.binary_cross_entropy_with_logits(p, y, pos_weight=wide),
        ]
        found.append([(str(loss.dtype).split(".")[-1], loss.item()) for loss in losses])
    assert [dtype for dtype, _ in found[0]] == [dtype for dtype, _ in found[1]]
    np.testing.assert_allclose([v for _, v in found[0]], [v for _, v in found[1]], rtol=1e-6)


def test_multilabel_soft_margin_loss_refuses_a_target_or_weight_larger_than_the_input() -> None:
    # A (C,) input with an (N, C) target broadcast to one loss per sample (PyTorch's then
    # sums along the wrong axis); neither is a loss of the given input.
    single = plugrad.tensor([0.5, -1.0, 2.0])
    labels = plugrad.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    with pytest.raises(ShapeError, match="target has shape"):
        F.multilabel_soft_margin_loss(single, labels)
    with pytest.raises(ShapeError, match="weight of shape"):
        F.multilabel_soft_margin_loss(single, labels[0], weight=plugrad.ones((2, 3)))
    batch = plugrad.stack([single, single])
    assert F.multilabel_soft_margin_loss(batch, labels, weight=plugrad.ones(3)).shape == ()


def test_batch_norm_of_an_empty_batch_in_training_is_empty_as_pytorchs() -> None:
    # A batch of no samples was refused as "one value per channel"; PyTorch normalizes it to
    # an empty result and leaves the running statistics alone.
    layer = plugrad.nn.BatchNorm1d(3)
    x = plugrad.zeros((0, 3), requires_grad=True)
    out = layer(x)
    out.sum().backward()
    assert out.shape == (0, 3) and x.grad.shape == (0, 3)
    assert layer.running_mean.tolist() == [0.0] * 3 and layer.running_var.tolist() == [1.0] * 3
    assert layer.weight.grad.tolist() == [0.0] * 3
    with pytest.raises(ShapeError, match="more than one value per channel"):
        layer(plugrad.zeros((1, 3)))


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_of_one_logit_is_one_as_pytorch(hard) -> None:
    # hard=True raised Python's IndexError for a 0-d tensor.
    logit = plugrad.tensor(1.0, requires_grad=True)
    sample = F.gumbel_softmax(logit, hard=hard)
    assert sample.shape == () and sample.item() == 1.0
    sample.backward()
    assert logit.grad.item() == 0.0


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_of_a_0d_tensor_on_every_backend_as_pytorch(backend: str, name: str) -> None:
    # Dask's max and sum take no axis of a 0-d array: dim -1 of it was an AxisError there.
    t = torch.tensor(0.7, requires_grad=True)
    expected = getattr(torch.nn.functional, name)(t, dim=-1)
    (expected * 3).backward()
    with plugrad.use_backend(backend):
        x = plugrad.tensor(0.7, requires_grad=True)
        y = getattr(F, name)(x, dim=-1)
        (y * 3).backward()
        assert y.shape == () and abs(y.item() - expected.item()) < 1e-7
        assert abs(x.grad.item() - t.grad.item()) < 1e-7
