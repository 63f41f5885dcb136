"""``max_pool3d_with_indices`` and ``adaptive_max_pool3d_with_indices`` against PyTorch's:
values, indices and gradients, whatever ``return_indices`` says."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import plugrad
import plugrad.nn.functional as F

torch = pytest.importorskip("torch")

CASES = [
    ("max_pool3d_with_indices", (2, 3, 4, 6, 5), (2,), {}),
    ("max_pool3d_with_indices", (3, 5, 6, 7), (3,), {"stride": 2, "padding": 1}),
    ("max_pool3d_with_indices", (1, 2, 7, 6, 5), ((2, 3, 2),), {"dilation": 2, "ceil_mode": True}),
    ("adaptive_max_pool3d_with_indices", (2, 3, 4, 6, 5), (3,), {}),
    ("adaptive_max_pool3d_with_indices", (3, 5, 6, 7), ((2, None, 4),), {}),
]  # fmt: skip


@pytest.mark.parametrize("return_indices", [True, False, None])
@pytest.mark.parametrize(("name", "shape", "args", "options"), CASES)
def test_values_indices_and_gradients_are_pytorchs(name, shape, args, options, return_indices):
    x = np.random.default_rng(4).standard_normal(shape)
    if return_indices is not None:
        options = {**options, "return_indices": return_indices}
    results = []
    for lib, functional in ((plugrad, F), (torch, torch.nn.functional)):
        leaf = lib.tensor(x, requires_grad=True)
        values, indices = getattr(functional, name)(leaf, *args, **options)
        weights = np.random.default_rng(5).uniform(0.5, 1.5, tuple(values.shape))
        (values * lib.tensor(weights)).sum().backward()
        results.append((values, indices, leaf.grad))
    for ours, theirs in zip(*results):
        assert tuple(ours.shape) == tuple(theirs.shape)
        # Exact but for the gradient's order of summation where windows overlap.
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-14)
    assert results[0][1].dtype == plugrad.int64


@pytest.mark.parametrize(
    ("name", "args"),
    [("max_pool3d_with_indices", (2,)), ("adaptive_max_pool3d_with_indices", (2,))],
)
def test_bad_input_raises_as_the_plain_pool(name: str, args: tuple[Any, ...]):
    plain = getattr(F, name.replace("_with_indices", ""))
    x = plugrad.ones(4, 4)  # a 3-d pool needs 4 or 5 axes
    with pytest.raises(plugrad.errors.PlugradError) as expected:
        plain(x, *args)
    with pytest.raises(type(expected.value), match=re.escape(str(expected.value))):
        getattr(F, name)(x, *args)
