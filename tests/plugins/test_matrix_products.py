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


def _nan_matrix() -> np.ndarray:
    return np.array([[np.nan, 1.0], [1.0, 1.0]])


@pytest.mark.parametrize("name", ["addmm", "addmv", "addbmm", "baddbmm"])
def test_alpha_zero_reads_the_product_where_pytorch_does(name) -> None:
    # PyTorch's addmm, addmv and addbmm leave the product unread with alpha=0 (its NaN
    # too), as every beta=0 leaves the input; baddbmm multiplies it by 0.
    torch = pytest.importorskip("torch")
    m = _nan_matrix()
    arguments = {
        "addmm": (np.ones((2, 2)), m, np.ones((2, 2))),
        "addmv": (np.ones(2), m, np.ones(2)),
        "addbmm": (np.ones((2, 2)), m[None], np.ones((1, 2, 2))),
        "baddbmm": (np.ones((1, 2, 2)), m[None], np.ones((1, 2, 2))),
    }[name]
    ours = getattr(plugrad, name)(*map(plugrad.asarray, arguments), alpha=0)
    theirs = getattr(torch, name)(*map(torch.tensor, arguments), alpha=0)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_alpha_and_beta_keep_the_tensors_dtype() -> None:
    torch = pytest.importorskip("torch")
    i = np.ones((2, 2), dtype=np.int64)
    for options in ({"alpha": 2.0}, {"beta": 0}, {"alpha": 3, "beta": 2}):
        ours = plugrad.addmm(*(plugrad.asarray(i),) * 3, **options)
        theirs = torch.addmm(*(torch.tensor(i),) * 3, **options)
        assert ours.dtype == plugrad.int64
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # A fraction PyTorch would drop (alpha=1.5 computed with 1) is refused.
    with pytest.raises(plugrad.errors.DtypeError, match="not a whole number"):
        plugrad.addmm(*(plugrad.asarray(i),) * 3, alpha=1.5)
    with pytest.raises(plugrad.errors.DtypeError, match="complex"):
        plugrad.addmv(plugrad.ones(2), plugrad.ones((2, 2)), plugrad.ones(2), beta=1j)
    if plugrad.float16 in plugrad.default_device().dtypes:
        h = plugrad.ones((2, 2), dtype=plugrad.float16)
        assert plugrad.addmm(h, h, h, alpha=plugrad.tensor(2.0)).dtype == plugrad.float16


def test_addbmm_and_torch_names_of_the_products() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a, b, c = (
        rng.standard_normal((3, 2, 4)),
        rng.standard_normal((3, 4, 5)),
        rng.standard_normal((2, 5)),
    )
    ours = [plugrad.tensor(v, requires_grad=True) for v in (c, a, b)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (c, a, b)]
    plugrad.addbmm(*ours, beta=0.5, alpha=2.0).sum().backward()
    torch.addbmm(*theirs, beta=0.5, alpha=2.0).sum().backward()
    for x, t in zip(ours, theirs):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        ours[0].addbmm(ours[1], ours[2]).detach().numpy(),
        theirs[0].addbmm(theirs[1], theirs[2]).detach().numpy(),
    )
    x, y = plugrad.ones((2, 3)), plugrad.ones((3, 4))
    assert plugrad.mm(x, mat2=y).shape == x.mm(mat2=y).shape == (2, 4)
    assert plugrad.bmm(input=x[None], mat2=y[None]).shape == (1, 2, 4)
    assert plugrad.dot(plugrad.ones(3), tensor=plugrad.ones(3)).item() == 3.0


@pytest.mark.parametrize(
    "call",
    [
        lambda: plugrad.mm(plugrad.ones(3), plugrad.ones((3, 4))),
        lambda: plugrad.mm(plugrad.ones((5, 2, 3)), plugrad.ones((3, 4))),
        lambda: plugrad.bmm(plugrad.ones((2, 3)), plugrad.ones((3, 4))),
        # matmul broadcasts batches; bmm, as PyTorch's, takes batches of one length.
        lambda: plugrad.bmm(plugrad.ones((1, 2, 3)), plugrad.ones((5, 3, 4))),
        lambda: plugrad.baddbmm(plugrad.ones((5, 2, 4)), plugrad.ones((1, 2, 3)),
                                plugrad.ones((5, 3, 4))),
    ],
)  # fmt: skip
def test_mm_and_bmm_take_the_ranks_pytorch_takes(call) -> None:
    with pytest.raises(plugrad.errors.ShapeError):
        call()
