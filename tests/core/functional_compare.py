"""A ``plugrad.nn.functional`` function against its ``torch.nn.functional`` twin: the same
float64 data through both, values and the gradients of a random output gradient compared."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import plugrad

torch = pytest.importorskip("torch")  # the modules that import this one skip without it


def compare_with_torch(
    ours: Callable[..., Any],
    theirs: Callable[..., Any],
    *arrays: Any,
    grads: Sequence[bool] | None = None,
    rtol: float,
    atol: float,
) -> None:
    """Values and the gradients of the float inputs (those ``grads`` marks) agree."""
    arrays = tuple(np.asarray(a) for a in arrays)
    if grads is None:
        grads = [a.dtype.kind == "f" for a in arrays]
    mine = [plugrad.asarray(a, requires_grad=g) for a, g in zip(arrays, grads)]
    reference = [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
    out, expected = ours(*mine), theirs(*reference)
    assert out.shape == tuple(expected.shape)
    np.testing.assert_allclose(
        out.detach().numpy(), expected.detach().numpy(), rtol=rtol, atol=atol
    )
    weights = np.random.default_rng(0).uniform(0.5, 1.5, size=tuple(expected.shape))
    out.backward(plugrad.asarray(weights))
    expected.backward(torch.tensor(weights))
    for index, (m, r, g) in enumerate(zip(mine, reference, grads)):
        if g and r.grad is None:  # used only in comparisons: no gradient either
            assert m.grad is None, f"a gradient for input {index}, PyTorch has none"
        elif g:
            assert m.grad is not None, f"no gradient for input {index}"
            np.testing.assert_allclose(
                m.grad.numpy(), r.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"input {index}"
            )
