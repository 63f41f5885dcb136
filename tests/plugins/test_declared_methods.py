"""Tensor methods and PyTorch names declared by the built-in op rows; ``dim=``/``keepdim=``."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError

X = np.arange(1.0, 7.0).reshape(2, 3)


@pytest.fixture
def x() -> plugrad.Tensor:
    return plugrad.tensor(X, requires_grad=True)


@pytest.mark.parametrize(
    ("method", "args", "kwargs", "reference"),
    [
        ("abs", (), {}, np.abs(X)),
        ("neg", (), {}, -X),
        ("sqrt", (), {}, np.sqrt(X)),
        ("clamp", (), {"min": 2.0, "max": 5.0}, np.clip(X, 2.0, 5.0)),
        ("mul", (2.0,), {}, X * 2.0),
        ("sub", (1.0,), {}, X - 1.0),
        ("div", (2.0,), {}, X / 2.0),
        ("sum", (1,), {}, X.sum(axis=1)),
        ("sum", (1, True), {}, X.sum(axis=1, keepdims=True)),
        ("sum", (), {"dim": 0, "keepdim": True}, X.sum(axis=0, keepdims=True)),
        ("mean", (), {"dim": 1}, X.mean(axis=1)),
        ("prod", (0,), {}, X.prod(axis=0)),
        ("amax", (), {"dim": 1}, X.max(axis=1)),
        ("amin", (0,), {}, X.min(axis=0)),
        ("cumsum", (1,), {}, np.cumsum(X, axis=1)),
        ("cumprod", (), {"dim": 0}, np.cumprod(X, axis=0)),
        ("argmax", (1,), {}, X.argmax(axis=1)),
        ("argmin", (), {"dim": 0, "keepdim": True}, X.argmin(axis=0)[None]),
        ("unsqueeze", (-1,), {}, X[..., None]),
        ("unsqueeze", (), {"dim": 0}, X[None]),
        ("flip", (1,), {}, X[:, ::-1]),
        ("roll", (1, 1), {}, np.roll(X, 1, axis=1)),
        ("movedim", (0, 1), {}, X.T),
        ("mm", (X.T,), {}, X @ X.T),
        ("tril", (), {}, np.tril(X)),
        ("logsumexp", (1,), {}, np.log(np.exp(X).sum(axis=1))),
        ("softmax", (1,), {}, np.exp(X) / np.exp(X).sum(axis=1, keepdims=True)),
        ("relu", (), {}, X),
        ("eq", (2.0,), {}, X == 2.0),
        ("gt", (2.0,), {}, X > 2.0),
    ],
)
def test_methods_compute_what_pytorch_computes(x, method, args, kwargs, reference) -> None:
    args = tuple(plugrad.tensor(a) if isinstance(a, np.ndarray) else a for a in args)
    out = getattr(x, method)(*args, **kwargs)
    np.testing.assert_allclose(out.detach().numpy(), reference, rtol=1e-12)


def test_methods_record_the_graph_like_the_functions(x) -> None:
    x.unsqueeze(0).sum(dim=2).mul(3.0).clamp(min=20.0).sum().backward()
    np.testing.assert_array_equal(x.grad.detach().numpy(), [[0.0, 0.0, 0.0], [3.0, 3.0, 3.0]])


def test_pytorch_names_are_the_same_functions() -> None:
    # (clamp is PyTorch's own: it needs a bound, where the standard's clip(x) copies x)
    assert plugrad.clamp is not plugrad.clip and plugrad.clamp.__op__ is plugrad.clip.__op__
    assert plugrad.mul is plugrad.multiply and plugrad.sub is plugrad.subtract
    assert plugrad.cat is plugrad.concat
    # (mm is PyTorch's own: matrices only, where matmul broadcasts)
    assert plugrad.mm is not plugrad.matmul and plugrad.mm.__op__ is plugrad.matmul.__op__
    assert plugrad.arctan2 is plugrad.atan2 and plugrad.unbind is plugrad.unstack


def test_dim_and_keepdim_are_accepted_by_the_functions(x) -> None:
    np.testing.assert_array_equal(plugrad.sum(x, dim=1).detach().numpy(), X.sum(axis=1))
    np.testing.assert_array_equal(
        plugrad.mean(x, dim=0, keepdim=True).detach().numpy(), X.mean(axis=0, keepdims=True)
    )
    np.testing.assert_array_equal(
        plugrad.cat([x, x], dim=1).detach().numpy(), np.concatenate([X, X], 1)
    )
    np.testing.assert_allclose(
        plugrad.ops.softmax(x, dim=0).detach().numpy(),
        plugrad.ops.softmax(x, axis=0).detach().numpy(),
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda x: plugrad.sum(x, axis=0, dim=1),
        lambda x: x.sum(1, axis=0),
        lambda x: x.mean(keepdims=True, keepdim=False),
        lambda x: plugrad.ops.softmax(x, axis=0, dim=0),
    ],
)
def test_giving_both_names_is_an_error(x, call) -> None:
    with pytest.raises(ArgumentError, match="pass only one"):
        call(x)
    assert x.grad is None


def test_giving_the_standard_names_to_a_method_still_works(x) -> None:
    np.testing.assert_array_equal(
        x.sum(axis=1, keepdims=True).detach().numpy(), X.sum(1, keepdims=True)
    )
