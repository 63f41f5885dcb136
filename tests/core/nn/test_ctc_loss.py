"""F.ctc_loss and nn.CTCLoss against PyTorch's: padded and concatenated targets, unbatched
input, every reduction, zero_infinity, another blank, repeated labels, empty targets,
short inputs; values and gradients in float32 and float64, gradcheck, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.errors import (
    ArgumentError,
    BackwardError,
    DtypeError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    ShapeError,
)

torch = pytest.importorskip("torch")

F = plugrad.nn.functional


def _case(seed: int, steps: int, batch: int, classes: int, blank: int = 0) -> dict:
    """Random logits, targets without the blank, and lengths, reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    longest = max(1, steps // 3)
    target_lengths = rng.integers(0, longest + 1, batch)
    labels = [c for c in range(classes) if c != blank]
    targets = rng.choice(labels, (batch, longest))
    input_lengths = rng.integers(steps // 2, steps + 1, batch)
    input_lengths[0] = steps
    return {
        "logits": rng.normal(size=(steps, batch, classes)) * 2.0,
        "targets": targets,
        "input_lengths": input_lengths,
        "target_lengths": target_lengths,
        "blank": blank,
    }


def _concatenated(case: dict) -> np.ndarray:
    return np.concatenate(
        [row[:n] for row, n in zip(case["targets"], case["target_lengths"], strict=True)]
    ).astype(np.int64)


def _loss(
    lib, case: dict, dtype: str, *, layout: str = "padded", lengths: str = "tensor", **options
):
    """The loss and the gradient of the logits its log-probabilities are normalized from
    (PyTorch's gradient of the log-probabilities themselves adds exp(log_probs): the
    logits' are the same)."""
    logits = lib.tensor(case["logits"], dtype=getattr(lib, dtype), requires_grad=True)
    log_probs = logits.log_softmax(-1)
    targets = case["targets"] if layout == "padded" else _concatenated(case)
    input_lengths, target_lengths = case["input_lengths"], case["target_lengths"]
    if lengths == "tensor":
        input_lengths, target_lengths = lib.tensor(input_lengths), lib.tensor(target_lengths)
    else:
        input_lengths, target_lengths = (
            tuple(map(int, input_lengths)),
            list(map(int, target_lengths)),
        )
    loss = lib.nn.functional.ctc_loss(
        log_probs,
        lib.tensor(targets),
        input_lengths,
        target_lengths,
        blank=case["blank"],
        **options,
    )
    weights = lib.arange(1, loss.numel() + 1, dtype=loss.dtype).reshape(loss.shape)
    (loss * weights).sum().backward()
    return loss.detach().numpy(), logits.grad.numpy()


def _same(case: dict, dtype: str = "float64", **options) -> None:
    ours, theirs = _loss(plugrad, case, dtype, **options), _loss(torch, case, dtype, **options)
    tolerance = {"float64": {"rtol": 1e-10, "atol": 1e-12}, "float32": {"rtol": 2e-5, "atol": 2e-5}}
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine, reference, **tolerance[dtype])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("layout", ["padded", "concatenated"])
def test_values_and_gradients_are_pytorchs(dtype: str, reduction: str, layout: str) -> None:
    for seed in range(3):
        _same(_case(seed, steps=12, batch=4, classes=5), dtype, reduction=reduction, layout=layout)


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_lengths_as_tuples_and_lists(reduction: str) -> None:
    _same(_case(3, steps=9, batch=3, classes=4), lengths="sequence", reduction=reduction)


@pytest.mark.parametrize("blank", [2, 4])
def test_another_blank(blank: int) -> None:
    _same(_case(4, steps=10, batch=3, classes=5, blank=blank), reduction="none")


def test_repeated_labels_need_a_blank_between_them() -> None:
    case = _case(5, steps=7, batch=3, classes=3)
    case["targets"] = np.array([[1, 1, 1], [2, 2, 1], [1, 2, 1]])
    case["target_lengths"] = np.array([3, 3, 3])
    case["input_lengths"] = np.array([7, 5, 3])  # 5 frames for 1,1,1; 4 for 2,2,1; 3 for 1,2,1
    _same(case, reduction="none")
    losses, _ = _loss(plugrad, case, "float64", reduction="none")
    assert np.isfinite(losses).all()
    # One frame fewer and the repeats no longer fit.
    case["input_lengths"] = np.array([4, 3, 2])
    losses, _ = _loss(plugrad, case, "float64", reduction="none")
    assert np.isinf(losses).all()


def test_empty_targets_and_short_inputs() -> None:
    case = _case(6, steps=8, batch=4, classes=4)
    case["target_lengths"] = np.array([0, 2, 0, 1])
    case["input_lengths"] = np.array([8, 3, 0, 1])
    for reduction in ("none", "sum", "mean"):
        _same(case, reduction=reduction)
    # Frames past a sample's length get no gradient.
    _, grad = _loss(plugrad, case, "float64", reduction="none")
    assert not grad[3:, 1].any() and not grad[:, 2].any() and not grad[1:, 3].any()
    assert grad[:3, 1].any()


def test_every_target_empty() -> None:
    case = _case(7, steps=5, batch=2, classes=3)
    case["target_lengths"] = np.array([0, 0])
    case["targets"] = np.zeros((2, 0), dtype=np.int64)
    for layout in ("padded", "concatenated"):
        _same(case, reduction="mean", layout=layout)


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_impossible_alignments(zero_infinity: bool, reduction: str) -> None:
    case = _case(8, steps=6, batch=3, classes=4)
    case["targets"] = np.array([[1, 2, 3], [1, 1, 2], [3, 1, 2]])
    case["target_lengths"] = np.array([3, 3, 2])
    case["input_lengths"] = np.array([6, 3, 1])  # the last two cannot fit
    ours = _loss(plugrad, case, "float64", reduction=reduction, zero_infinity=zero_infinity)
    theirs = _loss(torch, case, "float64", reduction=reduction, zero_infinity=zero_infinity)
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine, reference, rtol=1e-10, atol=1e-12)  # inf, NaN alike
    if zero_infinity:
        assert np.isfinite(ours[0]).all() and not ours[1][:, 1:].any()


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_one_sample_without_a_batch(reduction: str) -> None:
    rng = np.random.default_rng(9)
    logits = rng.normal(size=(7, 4))

    def run(lib, lengths):
        leaf = lib.tensor(logits, requires_grad=True)
        loss = lib.nn.functional.ctc_loss(
            leaf.log_softmax(-1), lib.tensor([1, 3, 3, 2]), *lengths(lib), reduction=reduction
        )
        loss.backward()
        return loss.detach().numpy(), leaf.grad.numpy()

    theirs = run(torch, lambda lib: (lib.tensor(7), lib.tensor(4)))
    assert theirs[0].shape == ()
    for lengths in (
        lambda lib: (lib.tensor(7), lib.tensor(4)),
        lambda lib: ([7], [4]),
        lambda lib: (lib.tensor([7]), lib.tensor([4])),
    ):
        for mine, reference in zip(run(plugrad, lengths), theirs, strict=True):
            np.testing.assert_allclose(mine, reference, rtol=1e-10, atol=1e-12)
    # A single target may be padded too: labels past its length are not read.
    log_probs = plugrad.tensor(logits).log_softmax(-1)
    padded = F.ctc_loss(log_probs, plugrad.tensor([1, 3, 3, 2, -1]), 7, 4, reduction=reduction)
    np.testing.assert_allclose(padded.numpy(), theirs[0], rtol=1e-10)


def test_the_layer_is_the_function() -> None:
    case = _case(10, steps=8, batch=3, classes=5, blank=4)
    log_probs = plugrad.tensor(case["logits"]).log_softmax(-1)
    arguments = (
        log_probs,
        plugrad.tensor(case["targets"]),
        plugrad.tensor(case["input_lengths"]),
        plugrad.tensor(case["target_lengths"]),
    )
    layer = plugrad.nn.CTCLoss(blank=4, reduction="sum", zero_infinity=True)
    assert repr(layer) == repr(torch.nn.CTCLoss(blank=4, reduction="sum", zero_infinity=True))
    expected = F.ctc_loss(*arguments, blank=4, reduction="sum", zero_infinity=True)
    np.testing.assert_array_equal(layer(*arguments).numpy(), expected.numpy())
    with pytest.raises(ValueError, match="reduction"):
        plugrad.nn.CTCLoss(reduction="average")


def test_the_gradient_of_the_log_probabilities_is_the_derivative() -> None:
    # Not PyTorch's (which adds exp(log_probs)): checked against finite differences, with
    # log-probabilities that are not normalized too, and as minus the posterior.
    case = _case(13, steps=5, batch=2, classes=3)
    targets = plugrad.tensor(case["targets"])
    lengths = plugrad.tensor(case["input_lengths"]), plugrad.tensor(case["target_lengths"])
    for shift in (0.0, -0.7):
        log_probs = plugrad.tensor(case["logits"]).log_softmax(-1) + shift
        log_probs.requires_grad_()
        assert plugrad.autograd.gradcheck(
            lambda x: F.ctc_loss(x, targets, *lengths, reduction="none"), (log_probs,)
        )
    log_probs = plugrad.zeros(4, 1, 3).log_softmax(2).requires_grad_()
    F.ctc_loss(log_probs, plugrad.tensor([[1, 2]]), [4], [2], reduction="sum").backward()
    # Every frame's posteriors sum to 1; the last frame must emit 2 or the blank after it.
    np.testing.assert_allclose(log_probs.grad.sum(-1).numpy(), -np.ones((4, 1)), rtol=1e-6)
    assert log_probs.grad[-1, 0, 1].item() == 0.0


def test_gradcheck_through_log_softmax() -> None:
    case = _case(11, steps=6, batch=3, classes=4)
    case["targets"][1, :2] = 2  # a repeated label
    case["target_lengths"][1] = 2
    logits = plugrad.tensor(case["logits"], requires_grad=True)
    targets = plugrad.tensor(case["targets"])
    lengths = plugrad.tensor(case["input_lengths"]), plugrad.tensor(case["target_lengths"])

    def loss(x):
        return F.ctc_loss(x.log_softmax(-1), targets, *lengths, reduction="none")

    assert plugrad.autograd.gradcheck(loss, (logits,))


def test_it_is_differentiable_once() -> None:
    case = _case(12, steps=5, batch=2, classes=3)
    logits = plugrad.tensor(case["logits"], requires_grad=True)
    loss = F.ctc_loss(
        logits.log_softmax(-1),
        plugrad.tensor(case["targets"]),
        plugrad.tensor(case["input_lengths"]),
        plugrad.tensor(case["target_lengths"]),
    )
    (grad,) = plugrad.autograd.grad(loss, logits, create_graph=True)
    with pytest.raises(BackwardError, match="differentiable once"):
        grad.sum().backward()


def _arguments(**changes):
    arguments = {
        "log_probs": plugrad.zeros(5, 2, 4).log_softmax(-1),
        "targets": plugrad.tensor([[1, 2], [3, 3]]),
        "input_lengths": [5, 4],
        "target_lengths": [2, 1],
    }
    arguments.update(changes)
    return arguments


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        (
            lambda: {"input_lengths": [6, 4]},
            InvalidArgumentError,
            r"input_lengths\[0\] is 6.*only 5",
        ),
        (lambda: {"input_lengths": [-1, 4]}, InvalidArgumentError, "input_lengths must not be neg"),
        (lambda: {"target_lengths": [3, 1]}, ShapeError, r"target_lengths\[0\] is 3, longer"),
        (
            lambda: {"target_lengths": [2, -1]},
            InvalidArgumentError,
            "target_lengths must not be neg",
        ),
        (lambda: {"input_lengths": [5, 4, 4]}, ShapeError, r"one length per sample \(2\), got 3"),
        (lambda: {"target_lengths": plugrad.tensor([2.0, 1.0])}, DtypeError, "must hold integers"),
        (lambda: {"input_lengths": [5.0, 4]}, ArgumentError, "must hold ints"),
        (lambda: {"input_lengths": 5}, ArgumentError, "tensor of integers or a list"),
        (lambda: {"targets": plugrad.tensor([[0, 2], [3, 3]])}, InvalidArgumentError, "the blank"),
        (
            lambda: {"targets": plugrad.tensor([[1, 4], [3, 3]])},
            IndexOutOfRangeError,
            r"\[0, 4\).*4",
        ),
        (lambda: {"targets": plugrad.tensor([[1, -2], [3, 3]])}, IndexOutOfRangeError, "got -2"),
        (
            lambda: {"targets": plugrad.tensor([[1.0, 2.0], [3.0, 3.0]])},
            DtypeError,
            "targets.long()",
        ),
        (
            lambda: {"targets": plugrad.tensor([1, 2, 3, 3])},
            ShapeError,
            r"sum\(target_lengths\) = 3",
        ),
        (
            lambda: {"targets": plugrad.ones(2, 2, 1, dtype=plugrad.int64)},
            ShapeError,
            "padded or 1-d",
        ),
        (lambda: {"log_probs": plugrad.zeros(5, 2, 4, 1)}, ShapeError, r"\(T, N, C\)"),
        (lambda: {"log_probs": plugrad.zeros(5, 0, 4)}, ShapeError, "must not be empty"),
        (lambda: {"log_probs": plugrad.zeros(5, 2, 4, dtype=plugrad.int64)}, DtypeError, "float32"),
        (
            lambda: {"log_probs": plugrad.zeros(5, 2, 4, dtype=plugrad.float16)},
            DtypeError,
            "float()",
        ),
        (lambda: {"blank": 4}, InvalidArgumentError, r"blank must be a class index in \[0, 4\)"),
        (lambda: {"blank": -1}, InvalidArgumentError, "blank must be"),
        (lambda: {"reduction": "average"}, ValueError, "reduction must be"),
    ],
)
def test_bad_input_is_refused(changes, error: type, message: str) -> None:
    try:
        changed = changes()
    except DtypeError:
        pytest.skip("the backend has no float16")
    with pytest.raises(error, match=message):
        F.ctc_loss(**_arguments(**changed))


def test_padding_past_the_lengths_is_not_read() -> None:
    # Padding with -1 (or any value) past a target's length is allowed, as in PyTorch.
    arguments = _arguments(targets=plugrad.tensor([[1, 2], [3, -1]]))
    padded = F.ctc_loss(**arguments, reduction="none")
    expected = F.ctc_loss(**_arguments(), reduction="none")
    np.testing.assert_array_equal(padded.numpy(), expected.numpy())
