"""F.embedding_bag and nn.EmbeddingBag against PyTorch's: every mode, offsets, padding,
per-sample weights, values and gradients; the text classifier of PyTorch's tutorial."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad

torch = pytest.importorskip("torch")

TABLE = np.linspace(-1.0, 1.0, 24).reshape(8, 3)
FLAT = [1, 2, 4, 5, 4, 3, 2, 7]

CASES = {
    "mean": {"input": FLAT, "offsets": [0, 4]},
    "sum": {"input": FLAT, "offsets": [0, 4], "mode": "sum"},
    "max": {"input": FLAT, "offsets": [0, 4], "mode": "max"},
    "an empty bag": {"input": FLAT, "offsets": [0, 0, 3, 8]},
    "include_last_offset": {
        "input": FLAT, "offsets": [0, 2, 8], "include_last_offset": True, "mode": "sum",
    },
    "2-d, padding_idx, mean": {"input": [[1, 2, 0], [4, 0, 0]], "padding_idx": 0},
    "2-d, padding_idx, max, an empty bag": {
        "input": [[1, 2, 0], [0, 0, 0]], "mode": "max", "padding_idx": 0,
    },
    "2-d, per_sample_weights": {
        "input": [[1, 2, 0], [4, 6, 0]], "mode": "sum",
        "per_sample_weights": [[0.5, 2.0, 1.0], [1.0, -1.0, 3.0]],
    },
    "1-d, per_sample_weights": {
        "input": [1, 2, 4, 5], "offsets": [0, 1], "mode": "sum",
        "per_sample_weights": [0.5, 2.0, 1.0, 3.0],
    },
    # tied rows (say, the zero rows of unknown words): the first takes the whole gradient
    "max, tied rows": {
        "table": [[0, 0, 0], [1, 5, 0], [1, 2, 0], [0, 0, 0]],
        "input": [[1, 2, 3], [0, 3, 3]], "mode": "max",
    },
    "max, tied rows, 1-d with padding_idx": {
        "table": [[0, 0, 0], [1, 5, 0], [1, 2, 0], [0, 0, 0]],
        "input": [2, 1, 0, 3, 0, 3], "offsets": [0, 3, 5], "mode": "max", "padding_idx": 0,
    },
    "padding_idx in a 1-d input": {
        "input": [1, 2, 4, 5, 4, 3], "offsets": [0, 2], "padding_idx": 4,
    },
}  # fmt: skip


def _bags(lib, case: dict):
    options = dict(case)
    weight = lib.tensor(np.asarray(options.pop("table", TABLE), dtype=float), requires_grad=True)
    inputs = [weight]
    arguments = {"input": lib.tensor(options.pop("input"))}
    if "offsets" in options:
        arguments["offsets"] = lib.tensor(options.pop("offsets"))
    if "per_sample_weights" in options:
        scales = lib.tensor(np.array(options.pop("per_sample_weights")), requires_grad=True)
        arguments["per_sample_weights"] = scales
        inputs.append(scales)
    out = lib.nn.functional.embedding_bag(weight=weight, **arguments, **options)
    (out * lib.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    return [out.detach().numpy()] + [t.grad.numpy() for t in inputs]


@pytest.mark.parametrize("name", CASES)
def test_values_and_gradients_are_pytorchs(name: str) -> None:
    for ours, theirs in zip(_bags(plugrad, CASES[name]), _bags(torch, CASES[name]), strict=True):
        np.testing.assert_allclose(ours, theirs, atol=1e-12)


def _text_classifier(lib, steps: int = 4):
    # PyTorch's text classification tutorial: an EmbeddingBag and a Linear, SGD.
    bags = lib.nn.EmbeddingBag(20, 4, mode="mean")
    head = lib.nn.Linear(4, 3)
    with lib.no_grad():
        bags.weight.copy_(lib.tensor(np.linspace(-0.5, 0.5, 80).reshape(20, 4)))
        head.weight.copy_(lib.tensor(np.linspace(-0.5, 0.5, 12).reshape(3, 4)))
        head.bias.zero_()
    model = lib.nn.Sequential(bags, head).double()
    optimizer = lib.optim.SGD(model.parameters(), lr=4.0)
    text = lib.tensor([3, 7, 1, 12, 19, 2, 2, 5, 8])
    offsets, labels = lib.tensor([0, 3, 5]), lib.tensor([0, 2, 1])
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = lib.nn.functional.cross_entropy(head(bags(text, offsets)), labels)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        losses.append(loss.item())
    return losses, bags.weight.detach().numpy()


def test_the_text_classifier_of_pytorchs_tutorial_trains_the_same() -> None:
    (losses, table), (their_losses, their_table) = (
        _text_classifier(plugrad),
        _text_classifier(torch),
    )
    np.testing.assert_allclose(losses, their_losses, rtol=1e-10)
    np.testing.assert_allclose(table, their_table, rtol=1e-10, atol=1e-12)


def test_the_layer_prints_and_refuses_as_pytorchs() -> None:
    assert repr(plugrad.nn.EmbeddingBag(10, 3, mode="sum")) == repr(
        torch.nn.EmbeddingBag(10, 3, mode="sum")
    )
    table = plugrad.nn.EmbeddingBag.from_pretrained(plugrad.tensor(TABLE), mode="max")
    assert not table.weight.requires_grad
    assert table(plugrad.tensor([[1, 2]])).tolist() == [np.maximum(TABLE[1], TABLE[2]).tolist()]
    weight, flat = plugrad.tensor(TABLE), plugrad.tensor(FLAT)
    F = plugrad.nn.functional
    with pytest.raises(ValueError, match="mode"):
        F.embedding_bag(flat, weight, plugrad.tensor([0]), mode="median")
    with pytest.raises(ValueError, match="offsets"):
        F.embedding_bag(flat, weight)
    with pytest.raises(ValueError, match="offsets must start at 0"):
        F.embedding_bag(flat, weight, plugrad.tensor([1, 3]))
    # A last offset short of the input's length: the last bag ran on to the end (PyTorch's
    # forward stops it, its backward does not; its documentation rules the input out).
    with pytest.raises(ValueError, match="the last offset is the input's length, 8"):
        F.embedding_bag(flat, weight, plugrad.tensor([0, 2, 5]), include_last_offset=True)
    with pytest.raises(ValueError, match="offsets must be None"):
        F.embedding_bag(plugrad.tensor([[1, 2]]), weight, plugrad.tensor([0]))
    with pytest.raises(ValueError, match="scale_grad_by_freq"):
        F.embedding_bag(flat, weight, plugrad.tensor([0]), mode="max", scale_grad_by_freq=True)
    with pytest.raises(ValueError, match="mode='sum' only"):
        F.embedding_bag(flat, weight, plugrad.tensor([0]), per_sample_weights=plugrad.ones(8))
