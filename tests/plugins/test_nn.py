"""The op table of plugins/nn.py (OpTests runs every check on each row).

Integer inputs (class targets, embedding indices) and boolean masks are
constants of a row; constants that meet the float inputs take their dtype.
The references are plain NumPy (``math.erf`` for the error function).
"""

from __future__ import annotations

import math

import numpy as np

import plugrad
from plugrad.testing import OpCase, OpTests

P = plugrad
ops = plugrad.ops

TARGET = np.array([2, 0, 3, 3, 1])
TARGET_IGNORED = np.array([2, -100, 3, 0, -100])
TARGET_SPATIAL = np.array([[[0, 2], [1, 1], [2, 0]], [[1, 0], [0, 2], [2, 2]]])  # (N, d1, d2)
CLASS_WEIGHT = np.array([0.5, 1.0, 2.0, 1.5])
INDICES = np.array([[3, 0, 3], [1, 3, 4]])
KEEP = np.array([[True, False, True], [True, True, False]])


def const(array, like=None):
    """A constant of the current default backend; floats take the dtype of ``like``."""
    if like is not None and np.asarray(array).dtype.kind == "f":
        return P.asarray(array, dtype=like.dtype)
    return P.asarray(array)


def same_dtype(function):
    """A NumPy reference whose result keeps the dtype of its first input."""

    def reference(x, *rest, **kwargs):
        return np.asarray(function(x, *rest, **kwargs)).astype(x.dtype)

    return reference


_erf = np.vectorize(math.erf)
_erfc = np.vectorize(math.erfc)
_erf = np.vectorize(math.erf)


def np_gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def np_out_of_range(t, low, high, allowed=None):
    outside = (t.astype(np.int64) < low) | (t.astype(np.int64) >= high)
    if allowed is not None:
        outside &= t.astype(np.int64) != allowed
    return np.array(outside.any())


def np_counted_weight(x, target, weight, ignore_index):
    counted = target != ignore_index
    picked = np.ones(target.shape) if weight is None else weight[np.where(counted, target, 0)]
    total = np.sum(np.where(counted, picked, 0.0))
    return np.array(np.nan if total == 0 else total, dtype=x.dtype)


def np_log_softmax(x, axis):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def np_logsumexp(x, axis=None, keepdims=False):
    top = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


def np_cross_entropy(x, target, weight=None, ignore_index=-100, smoothing=0.0):
    axis = 0 if x.ndim == 1 else 1
    logp = np.moveaxis(np_log_softmax(x, axis), axis, -1)  # classes last
    classes = logp.shape[-1]
    w = np.ones(classes) if weight is None else weight
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    picked = np.take_along_axis(logp, safe[..., None], axis=-1)[..., 0]
    nll = -w[safe] * picked
    smooth = -np.sum(logp * w, axis=-1) / classes
    loss = (1 - smoothing) * nll + smoothing * smooth
    return np.where(valid, loss, 0.0).astype(x.dtype)


def np_bce(x, y, weight=None, pos_weight=None):
    log_sig = -np.logaddexp(0, -x)
    log_one_minus = -np.logaddexp(0, x)
    pw = 1.0 if pos_weight is None else pos_weight
    loss = -(pw * y * log_sig + (1 - y) * log_one_minus)
    return loss if weight is None else loss * weight


def np_layer_norm(x, weight=None, bias=None, ndim=1, eps=1e-5):
    axes = tuple(range(x.ndim - ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    out = (x - mean) / np.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def np_embedding_backward(g, indices, rows, padding_idx=None):
    out = np.zeros((rows, g.shape[-1]), dtype=g.dtype)
    np.add.at(out, indices.reshape(-1), g.reshape(-1, g.shape[-1]))
    if padding_idx is not None:
        out[padding_idx] = 0
    return out


# Two samples, 4 frames, 3 classes (blank 0): a repeated label needs a blank between.
CTC_TARGETS = np.array([[1, 1], [2, 0]])
CTC_INPUT_LENGTHS = np.array([4, 3])
CTC_TARGET_LENGTHS = np.array([2, 1])


def np_ctc_path_sums(log_probs):
    """By every path of labels (C ** T of them): each sample's probability of its target
    and, per frame and class, that of the paths through it. Independent of the recursions."""
    _, batch, classes = log_probs.shape
    total = np.zeros(batch)
    through = np.zeros(log_probs.shape)
    for n in range(batch):
        frames = CTC_INPUT_LENGTHS[n]
        target = list(CTC_TARGETS[n, : CTC_TARGET_LENGTHS[n]])
        for path in np.ndindex(*(classes,) * frames):
            collapsed = [c for t, c in enumerate(path) if c != 0 and (t == 0 or c != path[t - 1])]
            if collapsed == target:
                chance = np.exp(sum(log_probs[t, n, c] for t, c in enumerate(path)))
                total[n] += chance
                for t, c in enumerate(path):
                    through[t, n, c] += chance
    return total, through


def np_ctc_loss(log_probs):
    return -np.log(np_ctc_path_sums(log_probs)[0]).astype(log_probs.dtype)


def np_ctc_loss_backward(g, log_probs):
    total, through = np_ctc_path_sums(log_probs)
    return (-through / total[None, :, None] * g[None, :, None]).astype(g.dtype)


def ctc_constants():
    return const(CTC_TARGETS), const(CTC_INPUT_LENGTHS), const(CTC_TARGET_LENGTHS)


CTC_LOG_PROBS = np.log(np.random.default_rng(7).dirichlet(np.ones(3), (4, 2)))


def ctc_gradient(g, log_probs):
    log_alpha = ops.ctc_loss(log_probs, *ctc_constants())[1]
    return ops.ctc_loss_backward(g, log_probs, *ctc_constants(), log_alpha)


def np_affine_grid(theta, size, align_corners):
    """Each output point's coordinates (x first), mapped by theta point by point."""
    spatial = size[2:]
    axes = []
    for n in reversed(spatial):
        steps = np.arange(n, dtype=np.float64)
        if align_corners:
            axes.append(steps * (2.0 / (n - 1)) - 1.0 if n > 1 else steps * 0.0)
        else:
            axes.append((2 * steps + 1) / n - 1)
    grid = np.zeros((size[0], *spatial, len(spatial)), dtype=theta.dtype)
    for point in np.ndindex(*spatial):
        coordinates = [axes[i][point[len(spatial) - 1 - i]] for i in range(len(spatial))] + [1]
        grid[(slice(None), *point)] = theta @ np.array(coordinates)
    return grid


def uniform(seed, *shapes_and_domains):
    rng = np.random.default_rng(seed)
    return [rng.uniform(low, high, size=shape) for shape, (low, high) in shapes_and_domains]


def away_from_zero(rng, shape):
    return rng.uniform(0.1, 2, shape) * rng.choice([-1, 1], shape)


def logits_and_probabilities(shape):
    return lambda seed: uniform(seed, (shape, (-2, 2)), (shape, (0.05, 0.95)))


CASES = [
    OpCase("erfc", "erfc", ops.erfc, same_dtype(_erfc), ((3, 4),), domains=((-4.0, 4.0),)),
    OpCase("erf", "erf", ops.erf, same_dtype(_erf), ((3, 4),), domains=((-3.0, 3.0),)),
    OpCase(
        "erfc",
        "erfc-tails",
        ops.erfc,
        same_dtype(_erfc),
        inputs=[np.array([-6.0, -3.0, -0.9, -0.2, 0.3, 1.2, 2.5, 5.0])],
    ),
    OpCase("linear", "linear", ops.linear, lambda x, w: x @ w.T, ((4, 3), (2, 3))),
    OpCase("linear", "linear-batched", ops.linear, lambda x, w: x @ w.T, ((2, 4, 3), (5, 3))),
    # few rows, many outputs: the kernel multiplies the weight by the transposed rows
    OpCase("linear", "linear-few-rows", ops.linear, lambda x, w: x @ w.T, ((2, 3), (5, 3))),
    OpCase("linear", "linear-vector", ops.linear, lambda x, w: x @ w.T, ((3,), (2, 3))),
    OpCase(
        "relu",
        "relu",
        ops.relu,
        lambda x: np.maximum(x, 0),
        inputs=lambda seed: [away_from_zero(np.random.default_rng(seed), (3, 4))],
    ),
    OpCase(
        "sigmoid",
        "sigmoid",
        ops.sigmoid,
        lambda x: 1 / (1 + np.exp(-x)),
        ((3, 4),),
        domains=((-6.0, 6.0),),
    ),
    OpCase("gelu", "gelu", ops.gelu, same_dtype(np_gelu), ((3, 4),), domains=((-4.0, 4.0),)),
    OpCase(
        "gelu",
        "gelu-tanh",
        lambda x: ops.gelu(x, approximate="tanh"),
        lambda x: np_gelu(x, "tanh"),
        ((3, 4),),
        domains=((-4.0, 4.0),),
    ),
    OpCase(
        "softmax",
        "softmax",
        lambda x: ops.softmax(x, axis=-1),
        lambda x: np.exp(np_log_softmax(x, -1)),
        ((3, 4),),
    ),
    OpCase(
        "softmax",
        "softmax-axis0",
        lambda x: ops.softmax(x, axis=0),
        lambda x: np.exp(np_log_softmax(x, 0)),
        ((3, 2, 2),),
    ),
    OpCase(
        "log_softmax",
        "log_softmax",
        lambda x: ops.log_softmax(x, axis=1),
        lambda x: np_log_softmax(x, 1),
        ((2, 4, 2),),
    ),
    OpCase("logsumexp", "logsumexp-all", ops.logsumexp, np_logsumexp, ((3, 4),)),
    OpCase(
        "logsumexp",
        "logsumexp-axes-keepdims",
        lambda x: ops.logsumexp(x, axis=(0, 2), keepdims=True),
        lambda x: np_logsumexp(x, axis=(0, 2), keepdims=True),
        ((2, 3, 2),),
    ),
    OpCase(
        "logsumexp",
        "logsumexp-axis",
        lambda x: ops.logsumexp(x, axis=-1),
        lambda x: np_logsumexp(x, axis=-1),
        ((3, 4),),
    ),
    OpCase(
        "cross_entropy",
        "cross_entropy",
        lambda x: ops.cross_entropy(x, const(TARGET), None),
        lambda x: np_cross_entropy(x, TARGET),
        ((5, 4),),
    ),
    OpCase(
        "cross_entropy",
        "cross_entropy-weight-ignore-smoothing",
        lambda x: ops.cross_entropy(
            x,
            const(TARGET_IGNORED),
            const(CLASS_WEIGHT, x),
            ignore_index=-100,
            label_smoothing=0.2,
        ),
        lambda x: np_cross_entropy(x, TARGET_IGNORED, CLASS_WEIGHT, -100, 0.2),
        ((5, 4),),
    ),
    OpCase(
        "cross_entropy",
        "cross_entropy-spatial-smoothing",
        lambda x: ops.cross_entropy(x, const(TARGET_SPATIAL), None, label_smoothing=0.1),
        lambda x: np_cross_entropy(x, TARGET_SPATIAL, smoothing=0.1),
        ((2, 3, 3, 2),),
    ),
    OpCase(
        "cross_entropy",
        "cross_entropy-single-sample",
        lambda x: ops.cross_entropy(x, const(np.array(1)), None, ignore_index=0),
        lambda x: np_cross_entropy(x, np.array(1), ignore_index=0),
        ((4,),),
    ),
    *(
        OpCase(
            "counted_weight",
            f"counted_weight-{id}",
            lambda x, target=target, weight=weight, ignore=ignore: ops.counted_weight(
                x,
                const(target),
                None if weight is None else const(weight, x),
                ignore_index=ignore,
            ),
            lambda x, target=target, weight=weight, ignore=ignore: np_counted_weight(
                x, target, weight, ignore
            ),
            ((len(target), 4),),
            differentiable=False,
        )
        for id, target, weight, ignore in [
            ("none-ignored", TARGET, None, -100),  # NumPy: the count without a mask
            ("ignored", TARGET_IGNORED, None, -100),
            ("ignore-inside", TARGET, None, 3),
            ("ignore-above", np.array([0, 4, 2]), None, 4),
            ("all-ignored", np.array([-100, -100]), None, -100),
            ("weight", TARGET, CLASS_WEIGHT, -100),
            ("weight-ignored", TARGET_IGNORED, CLASS_WEIGHT, -100),
        ]
    ),
    OpCase(
        "binary_cross_entropy_with_logits",
        "bce_with_logits",
        lambda x, y: ops.binary_cross_entropy_with_logits(x, y),
        np_bce,
        inputs=logits_and_probabilities((3, 4)),
    ),
    OpCase(
        "binary_cross_entropy_with_logits",
        "bce_with_logits-weights",
        lambda x, y, w, pw: ops.binary_cross_entropy_with_logits(x, y, w, pw),
        np_bce,
        inputs=lambda seed: uniform(
            seed,
            ((3, 4), (-3, 3)),
            ((3, 4), (0.05, 0.95)),
            ((3, 1), (0.5, 1.5)),
            ((4,), (0.5, 3.0)),
        ),
    ),
    OpCase(
        "binary_cross_entropy",
        "bce-probabilities",
        lambda p, y: ops.binary_cross_entropy(p, y),
        lambda p, y: -(y * np.log(p) + (1 - y) * np.log1p(-p)),
        inputs=lambda seed: uniform(seed, ((3, 4), (0.05, 0.95)), ((3, 4), (0.0, 1.0))),
    ),
    OpCase(
        "binary_cross_entropy_backward",
        "bce-probabilities-backward",
        lambda g, p, y: ops.binary_cross_entropy_backward(g, p, y),
        lambda g, p, y: g * (p - y) / (p * (1 - p)),
        inputs=lambda seed: uniform(
            seed, ((3, 4), (-2.0, 2.0)), ((3, 4), (0.05, 0.95)), ((3, 4), (0.0, 1.0))
        ),
    ),
    OpCase(
        "ctc_loss",
        "ctc_loss",
        lambda lp: ops.ctc_loss(lp, *ctc_constants())[0],
        np_ctc_loss,
        ((4, 2, 3),),
        domains=((-2.0, 0.0),),
        no_double="differentiable once, as PyTorch's",
    ),
    OpCase(
        "ctc_loss_backward",
        "ctc_loss_backward",
        # By its incoming gradient only: by the log-probabilities it raises (ctc_loss is
        # differentiable once, see tests/core/nn/test_ctc_loss.py).
        lambda g: ctc_gradient(g, const(CTC_LOG_PROBS, g)),
        lambda g: np_ctc_loss_backward(g, CTC_LOG_PROBS),
        ((2,),),
    ),
    *(
        OpCase(
            "affine_grid",
            f"affine_grid-{len(size)}d-{align_corners}",
            lambda theta, size=size, align_corners=align_corners: ops.affine_grid(
                theta, size=size, align_corners=align_corners
            ),
            lambda theta, size=size, align_corners=align_corners: np_affine_grid(
                theta, size, align_corners
            ),
            ((size[0], len(size) - 2, len(size) - 1),),
        )
        for size in ((2, 1, 3, 4), (1, 2, 2, 3, 2))
        for align_corners in (False, True)
    ),
    OpCase(
        "layer_norm",
        "layer_norm",
        lambda x, w, b: ops.layer_norm(x, w, b, ndim=1),
        lambda x, w, b: np_layer_norm(x, w, b, 1),
        ((3, 5), (5,), (5,)),
    ),
    OpCase(
        "layer_norm",
        "layer_norm-2d-no-affine",
        lambda x: ops.layer_norm(x, None, None, ndim=2, eps=1e-3),
        lambda x: np_layer_norm(x, ndim=2, eps=1e-3),
        ((2, 3, 4),),
    ),
    OpCase(
        "layer_norm",
        "layer_norm-weight-only",
        lambda x, w: ops.layer_norm(x, w, None, ndim=1),
        lambda x, w: np_layer_norm(x, w, None, 1),
        ((2, 2, 3), (3,)),
    ),
    OpCase(
        "dropout",
        "dropout",
        lambda x: ops.dropout(x, const(KEEP), scale=1.5),
        lambda x: np.where(KEEP, x * 1.5, 0.0).astype(x.dtype),
        ((2, 3),),
    ),
    *(
        OpCase(
            "embedding",
            id,
            lambda w, padding_idx=padding_idx: ops.embedding(
                w, const(INDICES), padding_idx=padding_idx
            ),
            lambda w: w[INDICES],
            ((5, 3),),
        )
        # The padding row (2) is not among the indices: a used one has no gradient by
        # design, which finite differences cannot confirm (see the test below).
        for id, padding_idx in [("embedding", None), ("embedding-padding", 2)]
    ),
    *(
        OpCase(
            "out_of_range",
            f"out_of_range-{id}",
            lambda t, options=options: ops.out_of_range(t, **options),
            lambda t, options=options: np_out_of_range(t, **options),
            inputs=[values],
        )
        for id, values, options in [
            ("inside", TARGET, {"low": 0, "high": 4}),
            ("past-the-end", TARGET, {"low": 0, "high": 3}),
            ("allowed-far", TARGET_IGNORED, {"low": 0, "high": 4, "allowed": -100}),
            ("allowed-below", np.array([-1, 0, 3]), {"low": 0, "high": 4, "allowed": -1}),
            ("allowed-above", np.array([4, 0, 3]), {"low": 0, "high": 4, "allowed": 4}),
            ("allowed-inside", np.array([-1, 0]), {"low": 0, "high": 4, "allowed": 2}),
            ("uint8-wide", np.array([0, 255], np.uint8), {"low": 0, "high": 300, "allowed": -1}),
            ("uint8-top", np.array([0, 255], np.uint8), {"low": 0, "high": 255}),
            ("empty", np.zeros(0, np.int64), {"low": 0, "high": 1}),
        ]
    ),
    OpCase(
        "embedding_backward",
        "embedding_backward",
        lambda g: ops.embedding_backward(g, const(INDICES), num_embeddings=6),
        lambda g: np_embedding_backward(g, INDICES, 6),
        ((2, 3, 2),),
    ),
    OpCase(
        "embedding_backward",
        "embedding_backward-padding",
        lambda g: ops.embedding_backward(g, const(INDICES), num_embeddings=5, padding_idx=3),
        lambda g: np_embedding_backward(g, INDICES, 5, padding_idx=3),
        ((2, 3, 2),),
    ),
]


class TestNnOps(OpTests):
    cases = CASES


def test_embedding_padding_row_gets_no_gradient(backend) -> None:
    weight = P.ones((5, 3), dtype=P.float64, requires_grad=True)
    ops.embedding(weight, P.asarray(INDICES), padding_idx=3).sum().backward()
    expected = np_embedding_backward(np.ones((2, 3, 3)), INDICES, 5, padding_idx=3)
    np.testing.assert_array_equal(weight.grad.numpy(), expected)


def test_generic_embedding_backward_matches_the_numpy_kernel(backend) -> None:
    # NumPy's kernel replaces the generic segment sum there; both must accumulate
    # repeated indices (2-d indices, several repeats) and skip the padding row.
    from plugrad.plugins import nn as nn_ops

    rng = np.random.default_rng(0)
    g = rng.standard_normal((3, 7, 4))
    indices = rng.integers(0, 11, size=(3, 7))
    xp = plugrad.default_device().xp
    array = P.asarray(g).array
    got = nn_ops._embedding_backward_kernel(
        xp, array, P.asarray(indices).array, num_embeddings=11, padding_idx=2
    )
    expected = np_embedding_backward(g, indices, 11, padding_idx=2)
    np.testing.assert_allclose(P.asarray(got).numpy(), expected, rtol=1e-12)


def test_stable_for_extreme_logits(backend) -> None:
    x = P.asarray(np.array([[-1e4, 0.0, 1e4], [100.0, -100.0, 0.0]], dtype=np.float32))
    for value in (
        ops.softmax(x, axis=1),
        ops.log_softmax(x[:1], axis=1),
        ops.logsumexp(x, axis=1),
        ops.sigmoid(x),
        ops.cross_entropy(x[:1], P.asarray(np.array([0])), None),
        ops.binary_cross_entropy_with_logits(x[:1], P.zeros((1, 3))),
    ):
        assert not np.any(np.isnan(value.numpy()))
    np.testing.assert_allclose(ops.logsumexp(x[:1], axis=1).numpy(), [1e4])
    np.testing.assert_allclose(
        ops.cross_entropy(x[:1], P.asarray(np.array([0])), None).numpy(), [2e4]
    )
    all_minus_inf = P.asarray(np.full((1, 3), -np.inf, dtype=np.float32))
    with np.errstate(divide="ignore"):  # log(0) is -inf, as it should be; NumPy warns
        assert ops.logsumexp(all_minus_inf).numpy() == -np.inf


def test_erfc_is_accurate_in_float64() -> None:
    x = np.concatenate([np.linspace(-7, 26, 4001), np.logspace(-12, 0, 50)])
    got = ops.erfc(P.asarray(x)).numpy()
    np.testing.assert_allclose(got, _erfc(x), rtol=1e-13, atol=0)


def test_numpy_embedding_backward_of_many_rows_adds_as_np_add_at() -> None:
    # Large enough for NumPy's scatter-add to go through flat positions.
    from plugrad.plugins import nn as nn_ops

    rng = np.random.default_rng(7)
    indices = rng.integers(0, 100, size=(32, 64))
    g = rng.normal(size=(32, 64, 24)).astype(np.float32)
    for padding_idx in (None, 5):
        got = nn_ops._embedding_backward_numpy(
            np, g, indices, num_embeddings=100, padding_idx=padding_idx
        )
        expected = np_embedding_backward(g, indices, 100, padding_idx)
        np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32))
