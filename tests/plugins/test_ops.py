"""Every built-in op, from one table: forward against NumPy in float32 and float64,
backward against finite differences, and double backward (``create_graph=True``).

Adding an op means adding a row here; ``test_every_op_has_a_row`` fails until it does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest

import plugrad
from plugrad import registry

P = plugrad


@dataclass(frozen=True)
class Case:
    op: str
    id: str
    program: Callable[..., plugrad.Tensor]  # over plugrad Tensors
    reference: Callable[..., np.ndarray]  # the same over NumPy arrays
    shapes: tuple[tuple[int, ...], ...]
    domains: tuple[tuple[float, float], ...] = field(default=((-2.0, 2.0),))
    differentiable: bool = True

    def inputs(self, dtype: type = np.float64) -> list[np.ndarray]:
        rng = np.random.default_rng(abs(hash(self.id)) % 2**32)
        domains = self.domains * len(self.shapes) if len(self.domains) == 1 else self.domains
        return [
            rng.uniform(lo, hi, size=s).astype(dtype) for s, (lo, hi) in zip(self.shapes, domains)
        ]


POSITIVE = (0.5, 2.0)
MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, True]])

CASES = [
    Case("add", "add-broadcast", lambda a, b: a + b, np.add, ((3, 4), (4,))),
    Case("add", "add-outer", lambda a, b: P.add(a, b), np.add, ((2, 1, 3), (4, 1))),
    Case("add", "add-0d", lambda a, b: a + b, np.add, ((), (3,))),
    Case("add", "add-scalar", lambda a: 2.5 + a, lambda a: 2.5 + a, ((3,),)),
    Case("subtract", "sub", lambda a, b: a - b, np.subtract, ((3, 4), (3, 1))),
    Case("subtract", "rsub-scalar", lambda a: 1.5 - a, lambda a: 1.5 - a, ((2, 3),)),
    Case("multiply", "mul-broadcast", lambda a, b: a * b, np.multiply, ((3, 4), (4,))),
    Case("multiply", "mul-0d", lambda a, b: a * b, np.multiply, ((), (2, 3))),
    Case("multiply", "mul-self", lambda a: a * a, lambda a: a * a, ((5,),)),
    Case("divide", "div", lambda a, b: a / b, np.divide, ((3, 4), (4,)), ((-2, 2), POSITIVE)),
    Case("divide", "rdiv-scalar", lambda a: 2.0 / a, lambda a: 2.0 / a, ((4,),), (POSITIVE,)),
    Case("pow", "pow-int", lambda a: a**3, lambda a: a**3, ((2, 3),)),
    Case("pow", "pow-tensor", lambda a, b: a**b, np.power, ((3, 4), (4,)), (POSITIVE, (-1, 2))),
    Case("pow", "rpow-scalar", lambda a: 2.0**a, lambda a: 2.0**a, ((3,),)),
    Case("pow", "pow-sqrt", lambda a: P.pow(a, 0.5), np.sqrt, ((4,),), (POSITIVE,)),
    Case("negative", "neg", lambda a: -a, np.negative, ((2, 3),)),
    Case("exp", "exp", P.exp, np.exp, ((2, 3),)),
    Case("log", "log", P.log, np.log, ((2, 3),), (POSITIVE,)),
    Case("maximum", "maximum", P.maximum, np.maximum, ((3, 4), (4,))),
    Case("maximum", "relu", lambda a: P.maximum(a, 0.0), lambda a: np.maximum(a, 0.0), ((6,),)),
    Case("sum", "sum-all", P.sum, np.sum, ((3, 4),)),
    Case("sum", "sum-axis", lambda a: P.sum(a, axis=1), lambda a: np.sum(a, axis=1), ((3, 4),)),
    Case(
        "sum",
        "sum-axes-keepdims",
        lambda a: a.sum(axis=(0, -1), keepdims=True),
        lambda a: np.sum(a, axis=(0, -1), keepdims=True),
        ((2, 3, 4),),
    ),
    Case("sum", "sum-0d", P.sum, np.sum, ((),)),
    Case("mean", "mean-all", P.mean, np.mean, ((3, 4),)),
    Case(
        "mean",
        "mean-axis-keepdims",
        lambda a: a.mean(axis=-1, keepdims=True),
        lambda a: np.mean(a, axis=-1, keepdims=True),
        ((2, 3, 4),),
    ),
    Case("matmul", "matmul-2d", lambda a, b: a @ b, np.matmul, ((3, 4), (4, 5))),
    Case("matmul", "matmul-vec-mat", P.matmul, np.matmul, ((4,), (4, 5))),
    Case("matmul", "matmul-mat-vec", P.matmul, np.matmul, ((3, 4), (4,))),
    Case("matmul", "matmul-dot", P.matmul, np.matmul, ((4,), (4,))),
    Case("matmul", "matmul-batch", P.matmul, np.matmul, ((2, 3, 4), (4, 5))),
    Case("matmul", "matmul-broadcast", P.matmul, np.matmul, ((2, 1, 3, 4), (5, 4, 2))),
    Case("matmul", "matmul-vec-batch", P.matmul, np.matmul, ((4,), (2, 4, 3))),
    Case("matmul", "matmul-batch-vec", P.matmul, np.matmul, ((2, 3, 4), (4,))),
    Case("matrix_transpose", "mT", lambda a: a.mT, lambda a: np.swapaxes(a, -1, -2), ((2, 3, 4),)),
    Case(
        "reshape",
        "reshape",
        lambda a: a.reshape(6, -1),
        lambda a: a.reshape(6, -1),
        ((2, 3, 4),),
    ),
    Case(
        "permute_dims",
        "permute",
        lambda a: P.permute_dims(a, (2, 0, 1)),
        lambda a: np.transpose(a, (2, 0, 1)),
        ((2, 3, 4),),
    ),
    Case("permute_dims", "T", lambda a: a.T, lambda a: a.T, ((3, 4),)),
    Case(
        "expand_dims",
        "expand_dims",
        lambda a: P.expand_dims(a, axis=-1),
        lambda a: np.expand_dims(a, -1),
        ((2, 3),),
    ),
    Case(
        "squeeze",
        "squeeze",
        lambda a: P.squeeze(a, axis=1),
        lambda a: np.squeeze(a, axis=1),
        ((2, 1, 3),),
    ),
    Case(
        "broadcast_to",
        "broadcast_to",
        lambda a: P.broadcast_to(a, (2, 3, 4)),
        lambda a: np.broadcast_to(a, (2, 3, 4)),
        ((3, 1),),
    ),
    Case(
        "where",
        "where",
        lambda a, b: P.where(P.asarray(MASK, device=a.device), a, b),
        lambda a, b: np.where(MASK, a, b),
        ((3, 4), (4,)),
    ),
    Case(
        "where",
        "where-scalar",
        lambda a: P.where(a > 0, a, 0.0),
        lambda a: np.where(a > 0, a, 0.0),
        ((3, 4),),
    ),
    # A composite program: gradients through several ops at once.
    Case(
        "exp",
        "composite-mlp",
        lambda x, w, b: P.sum(P.maximum(x @ w + b, 0.0) ** 2, axis=1),
        lambda x, w, b: np.sum(np.maximum(x @ w + b, 0.0) ** 2, axis=1),
        ((5, 3), (3, 4), (4,)),
    ),
]

COMPARISONS = [
    ("equal", np.equal),
    ("not_equal", np.not_equal),
    ("less", np.less),
    ("less_equal", np.less_equal),
    ("greater", np.greater),
    ("greater_equal", np.greater_equal),
]
LOGICAL = [
    ("logical_and", np.logical_and),
    ("logical_or", np.logical_or),
]
NON_DIFFERENTIABLE = {name for name, _ in COMPARISONS + LOGICAL} | {"logical_not", "all", "any"}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_forward_matches_numpy(case: Case, dtype: type, backend) -> None:
    arrays = case.inputs(dtype)
    result = case.program(*(plugrad.asarray(a, device=backend) for a in arrays))
    assert result.device is backend
    expected = case.reference(*arrays)
    assert result.shape == np.shape(expected)
    assert result.numpy().dtype == dtype, "the op changed the dtype"
    tolerance = 1e-6 if dtype is np.float32 else 1e-12
    np.testing.assert_allclose(result.numpy(), expected, rtol=tolerance * 10, atol=tolerance)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_backward_matches_finite_differences(case: Case, check_gradients, backend) -> None:
    check_gradients(case.program, *case.inputs())


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_double_backward_matches_finite_differences(
    case: Case, check_double_backward, backend
) -> None:
    check_double_backward(case.program, *case.inputs())


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_float32_gradients_stay_float32(case: Case, backend) -> None:
    leaves = [
        plugrad.asarray(a, device=backend, requires_grad=True) for a in case.inputs(np.float32)
    ]
    out = case.program(*leaves)
    out.backward(plugrad.ones_like(out))
    reference = [
        plugrad.asarray(a, device=backend, requires_grad=True) for a in case.inputs(np.float64)
    ]
    out64 = case.program(*reference)
    out64.backward(plugrad.ones_like(out64))
    for leaf, ref in zip(leaves, reference):
        assert leaf.grad.dtype == plugrad.float32
        np.testing.assert_allclose(leaf.grad.numpy(), ref.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("name", "reference"), COMPARISONS)
def test_comparisons_have_no_gradient(name: str, reference) -> None:
    a = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = plugrad.tensor([3.0, 2.0, 1.0], requires_grad=True)
    result = getattr(plugrad, name)(a, b)
    assert result.dtype == plugrad.bool
    assert not result.requires_grad and result.grad_fn is None
    np.testing.assert_array_equal(result.numpy(), reference(a.numpy(), b.numpy()))


@pytest.mark.parametrize(("name", "reference"), LOGICAL)
def test_logical_ops_have_no_gradient(name: str, reference) -> None:
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a, b = x > 1.5, x < 2.5
    result = getattr(plugrad, name)(a, b)
    assert not result.requires_grad
    np.testing.assert_array_equal(result.numpy(), reference(a.numpy(), b.numpy()))
    np.testing.assert_array_equal(plugrad.logical_not(a).numpy(), ~a.numpy())


def test_all_and_any() -> None:
    x = plugrad.tensor([[1.0, 0.0], [2.0, 3.0]], requires_grad=True)
    assert plugrad.all(x).item() is False
    assert plugrad.any(x).item() is True
    np.testing.assert_array_equal(plugrad.all(x, axis=1).numpy(), [False, True])
    assert not plugrad.any(x, axis=0, keepdims=True).requires_grad


def test_every_op_has_a_row() -> None:
    covered = {case.op for case in CASES} | NON_DIFFERENTIABLE
    missing = set(registry.op_names()) - covered
    assert not missing, f"ops without a row in the op table: {sorted(missing)}"


def test_maximum_splits_gradient_at_ties() -> None:
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = plugrad.tensor([1.0, 1.0, 5.0], requires_grad=True)
    plugrad.maximum(x, y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.5, 1.0, 0.0])
    np.testing.assert_array_equal(y.grad.numpy(), [0.5, 0.0, 1.0])


def test_pow_gradients_at_zero_are_finite() -> None:
    x = plugrad.tensor([0.0, 2.0], requires_grad=True)
    (x**0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
    e = plugrad.tensor([2.0, 3.0], requires_grad=True)
    plugrad.pow(plugrad.tensor([0.0, 0.0]), e).sum().backward()
    np.testing.assert_array_equal(e.grad.numpy(), [0.0, 0.0])
