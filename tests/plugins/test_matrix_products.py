"""The op table of plugins/matrix_products.py (OpTests runs every check on each row)."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.testing import OpCase, OpTests

P = plugrad


def np_vecdot(a, b, axis=-1):
    return np.sum(np.conj(a) * b, axis=axis)


CASES = [
    OpCase("matmul", "matmul-2d", lambda a, b: a @ b, np.matmul, ((3, 4), (4, 5))),
    OpCase("matmul", "matmul-vec-mat", P.matmul, np.matmul, ((4,), (4, 5))),
    OpCase("matmul", "matmul-mat-vec", P.matmul, np.matmul, ((3, 4), (4,))),
    OpCase("matmul", "matmul-dot", P.matmul, np.matmul, ((4,), (4,))),
    OpCase("matmul", "matmul-batch", P.matmul, np.matmul, ((2, 3, 4), (4, 5))),
    OpCase("matmul", "matmul-broadcast", P.matmul, np.matmul, ((2, 1, 3, 4), (5, 4, 2))),
    OpCase("matmul", "matmul-vec-batch", P.matmul, np.matmul, ((4,), (2, 4, 3))),
    OpCase("matmul", "matmul-batch-vec", P.matmul, np.matmul, ((2, 3, 4), (4,))),
    OpCase(
        "matrix_transpose", "mT", lambda a: a.mT, lambda a: np.swapaxes(a, -1, -2), ((2, 3, 4),)
    ),
    OpCase(
        "tensordot",
        "tensordot-int",
        lambda a, b: P.tensordot(a, b, axes=2),
        lambda a, b: np.tensordot(a, b, axes=2),
        ((2, 3, 4), (3, 4, 5)),
    ),
    OpCase(
        "tensordot",
        "tensordot-pairs",
        lambda a, b: P.tensordot(a, b, axes=([2, 0], [0, 2])),
        lambda a, b: np.tensordot(a, b, axes=([2, 0], [0, 2])),
        ((2, 3, 4), (4, 5, 2)),
    ),
    OpCase(
        "tensordot",
        "tensordot-outer",
        lambda a, b: P.tensordot(a, b, axes=0),
        lambda a, b: np.tensordot(a, b, axes=0),
        ((2,), (3,)),
    ),
    OpCase("vecdot", "vecdot", P.vecdot, np_vecdot, ((3, 4), (4,))),
    OpCase(
        "vecdot",
        "vecdot-axis",
        lambda a, b: P.vecdot(a, b, axis=0),
        lambda a, b: np_vecdot(a, b, axis=0),
        ((3, 2), (3, 1)),
    ),
]


class TestLinearAlgebraOps(OpTests):
    cases = CASES


def test_matmul_and_vecdot_complex_gradients_follow_pytorch() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, 2)) + 1j * rng.normal(size=(3, 2))
    b = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    pa, pb = plugrad.asarray(a, requires_grad=True), plugrad.asarray(b, requires_grad=True)
    out = plugrad.vecdot(pa, pb.mT) * plugrad.sum(pa @ pb)
    plugrad.real(out * plugrad.conj(out)).sum().backward()
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    t_out = torch.linalg.vecdot(ta, tb.mT) * torch.sum(ta @ tb)
    (t_out * t_out.conj()).real.sum().backward()
    np.testing.assert_allclose(pa.grad.numpy(), ta.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(pb.grad.numpy(), tb.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        # NumPy wraps an axis of a gufunc around: dim=2 of a 2-d pair summed axis 0.
        (lambda: plugrad.linalg.vecdot(plugrad.ones((3, 4)), plugrad.ones((3, 4)), dim=2),
         plugrad.errors.AxisError, "out of range"),
        (lambda: plugrad.linalg.vecdot(plugrad.ones((3, 4)), plugrad.ones((3, 4)), axis=-3),
         plugrad.errors.AxisError, "out of range"),
        (lambda: plugrad.linalg.cross(plugrad.ones((3, 3)), plugrad.ones((3, 3)), dim=2),
         plugrad.errors.AxisError, "out of range"),
        # NumPy's cross also takes 2-vectors, and drops their axis.
        (lambda: plugrad.linalg.cross(plugrad.ones((4, 2)), plugrad.ones((4, 2))),
         plugrad.errors.ShapeError, "length 3"),
        (lambda: plugrad.cross(plugrad.ones((2, 3, 3)), plugrad.ones((2, 3, 3)), dim=0),
         plugrad.errors.ShapeError, "length 3"),
    ],
)  # fmt: skip
def test_vecdot_and_cross_refuse_axes_numpy_would_reinterpret(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


def test_vecdot_and_cross_take_every_axis_in_range() -> None:
    x = np.arange(24.0).reshape(2, 3, 4)
    for dim in (-3, -2, -1, 0, 1, 2):
        ours = plugrad.linalg.vecdot(plugrad.asarray(x), plugrad.asarray(x + 1), dim=dim)
        np.testing.assert_allclose(ours.numpy(), (x * (x + 1)).sum(axis=dim))
    y = np.arange(18.0).reshape(3, 2, 3)
    for dim in (0, -3, 2, -1):
        ours = plugrad.linalg.cross(plugrad.asarray(y), plugrad.asarray(y[::-1] * 2), dim=dim)
        np.testing.assert_allclose(ours.numpy(), np.cross(y, y[::-1] * 2, axis=dim))
