"""Differential tests: random programs run through plugrad and PyTorch must agree on
values, gradients and second-order gradients.

PyTorch is a test oracle only (CPU build, ``pip install torch``); without it these
tests are skipped.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import plugrad

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (4,), (3, 1), ()]

PLUGRAD = types.SimpleNamespace(
    exp=plugrad.exp,
    log=plugrad.log,
    maximum=lambda a, value: plugrad.maximum(a, value),
    sum=lambda a, axis, keepdims: plugrad.sum(a, axis=axis, keepdims=keepdims),
    mean=plugrad.mean,
    asarray=lambda array: plugrad.asarray(array, requires_grad=True),
    to_numpy=lambda t: t.detach().numpy(),
)
TORCH = types.SimpleNamespace(
    exp=torch.exp,
    log=torch.log,
    maximum=lambda a, value: torch.maximum(a, torch.tensor(value, dtype=a.dtype)),
    sum=lambda a, axis, keepdims: a.sum(dim=axis, keepdim=keepdims),
    mean=torch.mean,
    asarray=lambda array: torch.tensor(array, requires_grad=True),
    to_numpy=lambda t: t.detach().numpy(),
)

# Each op is written once over a library adapter ``L``; inputs stay in a bounded range.
UNARY = {
    "neg": lambda L, a: -a,
    "square": lambda L, a: a**2,
    "gauss": lambda L, a: L.exp(-(a * a)),
    "log1p_square": lambda L, a: L.log(a * a + 1.0),
    "shifted_relu": lambda L, a: L.maximum(a, 0.3),
    "row_sum": lambda L, a: L.sum(a, axis=-1, keepdims=True) if a.ndim else a,
    "mean": lambda L, a: L.mean(a),
    "scale": lambda L, a: 0.5 * a - 1.0,
}
BINARY = {
    "add": lambda L, a, b: a + b,
    "sub": lambda L, a, b: a - b,
    "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / (b * b + 1.0),
    "pow": lambda L, a, b: (a * a + 0.5) ** (0.5 * b),
}

step = st.one_of(
    st.tuples(st.sampled_from(sorted(UNARY)), st.integers(0, 99)),
    st.tuples(st.sampled_from(sorted(BINARY)), st.integers(0, 99), st.integers(0, 99)),
)
program_strategy = st.tuples(
    st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3),
    st.lists(step, min_size=1, max_size=12),
    st.integers(0, 2**31 - 1),
)


def run(L, leaves, steps):
    """Run ``steps`` over ``leaves``; every intermediate value feeds the final scalar."""
    values = list(leaves)
    for name, *operands in steps:
        args = [values[i % len(values)] for i in operands]
        op = UNARY.get(name) or BINARY[name]
        values.append(op(L, *args))
    total = L.sum(values[0], axis=None, keepdims=False)
    for v in values[1:]:
        total = total + L.sum(v, axis=None, keepdims=False)
    return total


# PyTorch warns that .grad built with create_graph references its own graph; the test
# resets .grad right after, as that warning advises.
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True:UserWarning")
@settings(max_examples=120, deadline=None, derandomize=True)
@given(program_strategy)
def test_random_programs_agree_with_pytorch(program) -> None:
    shapes, steps, seed = program
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(-1.5, 1.5, size=s) for s in shapes]

    results = {}
    for name, L in (("plugrad", PLUGRAD), ("torch", TORCH)):
        leaves = [L.asarray(a) for a in arrays]
        out = run(L, leaves, steps)
        out.backward(create_graph=True)
        grads = [leaf.grad for leaf in leaves]
        first = [L.to_numpy(g) for g in grads]
        # Second order: d/dleaves of sum(grad * grad).
        for leaf in leaves:
            leaf.grad = None
        differentiable = [g for g in grads if g.requires_grad]
        if differentiable:
            second_out = L.sum(differentiable[0] * differentiable[0], axis=None, keepdims=False)
            for g in differentiable[1:]:
                second_out = second_out + L.sum(g * g, axis=None, keepdims=False)
            second_out.backward()
        second = [
            np.zeros(np.shape(a)) if leaf.grad is None else L.to_numpy(leaf.grad)
            for leaf, a in zip(leaves, arrays)
        ]
        results[name] = (L.to_numpy(out), first, second)

    value, first, second = results["plugrad"]
    t_value, t_first, t_second = results["torch"]
    np.testing.assert_allclose(value, t_value, rtol=1e-10, atol=1e-12)
    for ours, theirs in zip(first, t_first):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    for ours, theirs in zip(second, t_second):
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-10)


def test_matmul_shapes_agree_with_pytorch() -> None:
    rng = np.random.default_rng(0)
    shapes = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)), ((2, 1, 3, 4), (5, 4, 2))]
    for shape_a, shape_b in shapes:
        a, b = rng.normal(size=shape_a), rng.normal(size=shape_b)
        pa, pb = plugrad.asarray(a, requires_grad=True), plugrad.asarray(b, requires_grad=True)
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        plugrad.sum(plugrad.exp(pa @ pb)).backward()
        torch.exp(ta @ tb).sum().backward()
        np.testing.assert_allclose(pa.grad.numpy(), ta.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(pb.grad.numpy(), tb.grad.numpy(), rtol=1e-10)
