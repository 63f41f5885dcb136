"""Every row of the op table under plugrad.compile: replayed values and gradients equal eager ones.

On NumPy a replay calls the same kernels and rules in the same order as eager
execution, so the comparison is exact.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

import plugrad

_MODULES = sorted(
    p.stem
    for p in Path(__file__).parent.glob("test_*.py")
    if p.stem not in ("test_ops_compiled", "test_op_coverage", "test_ops_against_torch")
)


def _rows(attribute: str) -> list:
    rows = []
    for name in _MODULES:
        module = importlib.import_module(name)
        rows.extend(getattr(module, attribute, ()))
    return rows


CASES = _rows("CASES")
NO_GRAD = _rows("NO_GRAD")


def _flatten(result):
    if isinstance(result, (tuple, list)):
        return [leaf for item in result for leaf in _flatten(item)]
    return [result]


def _same(a: plugrad.Tensor, b: plugrad.Tensor) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_compiled_values_and_gradients_equal_eager(case) -> None:
    arrays = case.inputs(np.float64)
    eager_leaves = [plugrad.asarray(a, requires_grad=True) for a in arrays]
    leaves = [plugrad.asarray(a, requires_grad=True) for a in arrays]

    def step(*inputs):
        for leaf in inputs:
            leaf.grad = None
        out = case.program(*inputs)
        out.backward(plugrad.ones_like(out))
        return out

    expected = step(*eager_leaves)
    compiled = plugrad.compile(step, fullgraph=True)
    for _ in range(2):  # capture, then replay
        _same(compiled(*leaves), expected)
        for leaf, reference in zip(leaves, eager_leaves):
            _same(leaf.grad, reference.grad)
    assert compiled.captures == 1


@pytest.mark.parametrize("row", NO_GRAD, ids=lambda r: r.id)
def test_compiled_ops_without_gradient_equal_eager(row) -> None:
    tensors = row.tensors()
    expected = _flatten(row.program(*tensors))
    compiled = plugrad.compile(row.program, fullgraph=True)
    for _ in range(2):
        results = _flatten(compiled(*tensors))
        assert len(results) == len(expected)
        for r, e in zip(results, expected):
            _same(r, e)
