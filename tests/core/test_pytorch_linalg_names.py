"""PyTorch's top-level linear-algebra names and small Tensor helpers, against ``torch``.

Each program runs in plugrad (on every backend under test) and in PyTorch on the
same float64 leaf; results agree in dtype, shape and values, and so do the
gradients of a weighted sum of the outputs. Linear algebra goes through LAPACK
on both sides, by different routes: values agree to 1e-10, not bit for bit.
"""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from torch_compare import as_tensor as _tensor
from torch_compare import assert_agrees

import plugrad
from plugrad.errors import ArgumentError, AxisError, DtypeError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.filterwarnings("ignore:torch.cholesky is deprecated:UserWarning"),
    # PyTorch's deprecated qr and triangular_solve warn in both libraries
    pytest.mark.filterwarnings("ignore:.*qr.*deprecated:UserWarning"),
    pytest.mark.filterwarnings("ignore:.*triangular_solve.*deprecated:UserWarning"),
    pytest.mark.filterwarnings("ignore:plugrad.(qr|triangular_solve) is PyTorch's deprecated"),
]

SQUARE = np.array([[2.0, 0.5, 0.1], [0.3, 1.5, -0.4], [0.2, -0.1, 3.0]])
SPD = SQUARE @ SQUARE.T + np.eye(3)
TALL = np.arange(1.0, 13.0).reshape(4, 3) / 5 + np.eye(4, 3)


def _sign_free_svd(lib: Any, x: Any, **options: Any) -> Any:
    """What an SVD determines whatever the signs of its vectors: S and U S V^H."""
    U, S, V = lib.svd(x, **options)
    k = S.shape[-1]
    return S, (U[..., :k] * S[..., None, :]) @ V[..., :k].mH


def _spd(lib: Any, x: Any) -> Any:
    """A symmetric positive-definite matrix made from ``x``."""
    return x @ x.mT + lib.eye(3, dtype=x.dtype)


# name -> (program(lib, x), leaf)
PROGRAMS: dict[str, tuple[Callable[[Any, Any], Any], np.ndarray]] = {
    "det": (lambda lib, x: lib.det(x), SQUARE),
    "cholesky_solve": (lambda lib, x: lib.cholesky_solve(x[:, :2], lib.cholesky(_spd(lib, x))),
                       SQUARE),
    "x.cholesky_solve upper": (
        lambda lib, x: x.mT.cholesky_solve(lib.cholesky(_spd(lib, x), upper=True), upper=True),
        SQUARE),
    "cholesky_inverse": (lambda lib, x: lib.cholesky_inverse(lib.cholesky(_spd(lib, x))), SQUARE),
    "x.cholesky_inverse upper": (
        lambda lib, x: lib.cholesky(_spd(lib, x), upper=True).cholesky_inverse(upper=True), SQUARE),
    "qr": (lambda lib, x: tuple(lib.qr(x)), TALL),
    "x.qr complete": (lambda lib, x: tuple(x.mT.qr(some=False)), TALL),
    "triangular_solve": (lambda lib, x: tuple(lib.triangular_solve(x[:, :2], x)), SQUARE),
    "x.triangular_solve lower transpose unitriangular": (
        lambda lib, x: tuple(x.triangular_solve(x.mT, upper=False, transpose=True,
                                                unitriangular=True)), SQUARE),
    "linalg.diagonal(dim1=, dim2=)": (
        lambda lib, x: lib.linalg.diagonal(x.reshape(2, 2, 3), offset=-1, dim1=2, dim2=0), TALL),
    "linalg.svd(A, False, driver=None)": (
        lambda lib, x: lib.linalg.svd(x, False, driver=None).S, TALL),
    "linalg.svdvals(A, driver=None)": (lambda lib, x: lib.linalg.svdvals(x, driver=None), TALL),
    "x.det batch": (lambda lib, x: lib.stack([x, 2 * x]).det(), SQUARE),
    "inverse": (lambda lib, x: lib.inverse(x), SQUARE),
    "x.inverse": (lambda lib, x: x.inverse(), SQUARE),
    "slogdet": (lambda lib, x: tuple(lib.slogdet(-x)), SQUARE),
    "x.slogdet": (lambda lib, x: tuple(x.slogdet()), SQUARE),
    "logdet": (lambda lib, x: lib.logdet(x), SQUARE),
    "logdet negative": (lambda lib, x: lib.logdet(x * _tensor(lib, [[-1.0], [1], [1]])), SQUARE),
    "x.logdet batch": (lambda lib, x: lib.stack([x, x.mT]).logdet(), SQUARE),
    "cholesky": (lambda lib, x: lib.cholesky(_spd(lib, x)), SQUARE),
    "cholesky upper": (lambda lib, x: lib.cholesky(_spd(lib, x), upper=True), SQUARE),
    "x.cholesky": (lambda lib, x: x.cholesky(), SPD),
    "pinverse": (lambda lib, x: lib.pinverse(x), TALL),
    "x.pinverse rcond": (lambda lib, x: x.pinverse(rcond=1e-3), TALL),
    "matrix_power": (lambda lib, x: lib.matrix_power(x, 3), SQUARE),
    "x.matrix_power negative": (lambda lib, x: x.matrix_power(-2), SQUARE),
    "x.matrix_power 0": (lambda lib, x: x.matrix_power(0), SQUARE),
    "mv": (lambda lib, x: lib.mv(x, x[0]), SQUARE),
    "x.mv": (lambda lib, x: x.mT.mv(x[:, 1]), TALL),
    "ger": (lambda lib, x: lib.ger(x[0], x[1]), TALL),
    "x.ger": (lambda lib, x: x[:, 0].ger(x[0]), TALL),
    "inner vectors": (lambda lib, x: lib.inner(x[0], x[1]), TALL),
    "inner matrices": (lambda lib, x: lib.inner(x, x[:2]), TALL),
    "inner 0-d": (lambda lib, x: lib.inner(x[0, 0], x), TALL),
    "x.inner 3-d": (lambda lib, x: x.reshape(2, 2, 3).inner(x), TALL),
    "vdot": (lambda lib, x: lib.vdot(x[0], x[2]), TALL),
    "x.vdot": (lambda lib, x: x[:, 1].vdot(x[:, 2]), TALL),
    "kron": (lambda lib, x: lib.kron(x, x[:2, :2]), SQUARE),
    "kron vector matrix": (lambda lib, x: lib.kron(x[0], x), TALL),
    "x.kron 3-d": (lambda lib, x: x.reshape(2, 2, 3).kron(x[:2]), TALL),
    "kron 0-d": (lambda lib, x: lib.kron(x[0, 0], x), TALL),
    "cross dim": (lambda lib, x: lib.cross(x, x.flip(0), dim=1), TALL),
    "x.cross dim 0": (lambda lib, x: x.cross(x * x, dim=0), SQUARE),
    "x.cross dim -1": (lambda lib, x: x.cross(x.flip(1), dim=-1), TALL),
    "svd": (lambda lib, x: _sign_free_svd(lib, x), TALL),
    "svd wide": (lambda lib, x: _sign_free_svd(lib, x.mT), TALL),
    "svd not some": (lambda lib, x: _sign_free_svd(lib, x, some=False), TALL),
    "x.svd values": (lambda lib, x: x.svd(compute_uv=False), TALL),
    "adjoint": (lambda lib, x: lib.adjoint(x), TALL),
    "x.mH": (lambda lib, x: x.mH, TALL),
    "x.H": (lambda lib, x: x.H, TALL),
    "clone": (lambda lib, x: lib.clone(x) * 2, TALL),
    "diagonal": (lambda lib, x: lib.diagonal(x), TALL),
    "diagonal dims": (lambda lib, x: lib.diagonal(x.reshape(2, 2, 3), 1, 2, 0), TALL),
    "diagonal negative offset": (lambda lib, x: lib.diagonal(x, -1), TALL),
    "masked_fill": (lambda lib, x: lib.masked_fill(x, x > 1.0, -1.0), TALL),
    "scatter": (
        lambda lib, x: lib.scatter(x, 1, _tensor(lib, [[2], [0], [1], [2]]), x[:, :1] * 3),
        TALL,
    ),
    "take_along_dim": (lambda lib, x: lib.take_along_dim(x, x.argmax(1, keepdim=True), 1), TALL),
    "take_along_dim broadcast": (
        lambda lib, x: lib.take_along_dim(x, _tensor(lib, [[0, 2]]), dim=1),
        TALL,
    ),
    "take_along_dim flat": (lambda lib, x: lib.take_along_dim(x, _tensor(lib, [11, 0, 4])), TALL),
    "x.take_along_dim": (lambda lib, x: x.take_along_dim(x.argsort(dim=0), dim=0), TALL),
    # (linalg.vander, tensorinv, tensorsolve and cholesky_ex were missing)
    "linalg.vander": (lambda lib, x: lib.linalg.vander(x), TALL),
    "linalg.vander N": (lambda lib, x: lib.linalg.vander(x[0], N=5), TALL),
    "linalg.tensorinv": (lambda lib, x: lib.linalg.tensorinv((x @ x.mT).reshape(3, 3), ind=1),
                         SQUARE),
    "linalg.tensorinv ind=2": (
        lambda lib, x: lib.linalg.tensorinv(lib.kron(x, x[:2, :2]).reshape(3, 2, 6), ind=2),
        SQUARE),
    "linalg.tensorsolve": (
        lambda lib, x: lib.linalg.tensorsolve(lib.kron(x, x[:2, :2]).reshape(3, 2, 6), x[:, :2]),
        SQUARE),
    "linalg.tensorsolve dims": (
        lambda lib, x: lib.linalg.tensorsolve(
            lib.kron(x, x[:2, :2]).reshape(3, 2, 3, 2), x[:, :2], dims=(2,)),
        SQUARE),
    "linalg.cholesky_ex": (lambda lib, x: tuple(lib.linalg.cholesky_ex(_spd(lib, x))), SQUARE),
    "linalg.cholesky_ex upper": (
        lambda lib, x: tuple(lib.linalg.cholesky_ex(_spd(lib, x), upper=True)), SQUARE),
}  # fmt: skip


def test_cholesky_ex_says_which_matrices_fail_and_where() -> None:
    stack = np.stack([2 * np.eye(3), [[1.0, 2, 3], [2, 1, 0], [3, 0, 1]], np.diag([1.0, 1, -1])])
    factor, info = plugrad.linalg.cholesky_ex(plugrad.asarray(stack))
    their_factor, their_info = torch.linalg.cholesky_ex(torch.tensor(stack))
    assert info.dtype == plugrad.int32 and info.tolist() == their_info.tolist() == [0, 2, 3]
    np.testing.assert_allclose(factor[0].numpy(), their_factor[0].numpy())
    assert np.isnan(factor[1:].numpy()).all()  # (PyTorch's holds what its factorization left)
    with pytest.raises(plugrad.errors.LinAlgError, match=r"batch element 1.*order 2"):
        plugrad.linalg.cholesky_ex(plugrad.asarray(stack), check_errors=True)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: plugrad.linalg.vander(plugrad.ones(3), N=1), ValueError, "greater than 1"),
        (lambda: plugrad.linalg.vander(plugrad.tensor(2.0)), ShapeError, "at least one"),
        (lambda: plugrad.linalg.tensorinv(plugrad.ones(2, 3, 4), ind=1), ShapeError, r"\(2\)"),
        (lambda: plugrad.linalg.tensorinv(plugrad.ones(2, 2), ind=0), ValueError, "ind"),
        (lambda: plugrad.linalg.tensorsolve(plugrad.ones(2, 3, 6), plugrad.ones(3, 2)),
         ShapeError, "B's shape"),
        (lambda: plugrad.linalg.cholesky_ex(plugrad.ones(2, 3)), ShapeError, "square"),
    ],
)  # fmt: skip
def test_new_linalg_functions_refuse_bad_arguments(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_agrees_with_torch(name: str, backend: str) -> None:
    program, leaf = PROGRAMS[name]
    # Gradients within 1e-8: both go through LAPACK, by different routes.
    assert_agrees(program, leaf, backend, tolerance=1e-10, grad_tolerance=1e-8)


def test_svd_returns_u_s_and_v_not_its_adjoint() -> None:
    a = plugrad.asarray(TALL)
    U, S, V = plugrad.svd(a)
    assert (U.shape, S.shape, V.shape) == ((4, 3), (3,), (3, 3))
    np.testing.assert_allclose((U @ plugrad.diag(S) @ V.mT).numpy(), TALL, atol=1e-12)
    full = a.svd(some=False)
    assert full.U.shape == (4, 4) and full.V.shape == (3, 3)
    empty = plugrad.svd(a, compute_uv=False)
    assert empty.U.shape == (4, 4) and empty.V.shape == (3, 3)
    assert not np.any(empty.U.numpy()) and not np.any(empty.V.numpy())
    assert pickle.loads(pickle.dumps(full)).S.shape == (3,)


def test_complex_logdet_and_adjoint() -> None:
    z = SQUARE + 1j * SQUARE.T
    ours = plugrad.logdet(plugrad.asarray(z))
    theirs = torch.logdet(torch.from_numpy(z))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)
    np.testing.assert_array_equal(plugrad.asarray(z).mH.numpy(), z.conj().T)


def test_cross_without_dim_takes_the_first_axis_of_size_3_with_a_warning() -> None:
    a, b = np.arange(12.0).reshape(3, 4), np.arange(12.0)[::-1].reshape(3, 4).copy()
    with pytest.warns(UserWarning, match="first axis of size 3"):
        ours = plugrad.cross(plugrad.asarray(a), plugrad.asarray(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.cross(torch.from_numpy(a), torch.from_numpy(b))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(ShapeError, match=r"have none; pass dim"):
        plugrad.cross(plugrad.ones(2, 4), plugrad.ones(2, 4))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: plugrad.mv(plugrad.ones(2, 2), plugrad.ones(2, 1)), ShapeError, "by a vector"),
        (lambda: plugrad.ger(plugrad.ones(2, 2), plugrad.ones(2)), ShapeError, "two vectors"),
        (lambda: plugrad.inner(plugrad.ones(2, 3), plugrad.ones(3, 2)), ShapeError, "last axis"),
        (lambda: plugrad.vdot(plugrad.ones(2), plugrad.ones(3)), ShapeError, "one length"),
        (
            lambda: plugrad.vdot(plugrad.ones(2), plugrad.ones(2, dtype=plugrad.float64)),
            DtypeError,
            "one dtype",
        ),
        (lambda: plugrad.svd(plugrad.ones(3)), ShapeError, "a matrix"),
        (lambda: plugrad.ones(2, 2, 2).H, ShapeError, "x.mH"),
        (lambda: plugrad.ones(3).H, ShapeError, "of a matrix"),
        (lambda: plugrad.tensor(1j).H, ShapeError, r"x\.conj\(\) for a 0-d"),
        (lambda: plugrad.adjoint(plugrad.ones(3)), ShapeError, "a matrix"),
        (lambda: plugrad.det([[1.0]]), TypeError, "takes a Tensor"),
        (lambda: plugrad.is_nonzero(plugrad.ones(2)), ShapeError, "ambiguous"),
        (lambda: plugrad.take_along_dim([1.0], plugrad.ones(1)), TypeError, "takes a Tensor"),
        # A matrix norm's dims out of range were taken modulo ndim (a plausible wrong number).
        (lambda: plugrad.linalg.norm(plugrad.ones(2, 3), dim=(0, 5)), AxisError, "out of range"),
        (lambda: plugrad.linalg.norm(plugrad.ones(2, 3), ord=2, dim=(1, 2)), AxisError, "dim 2"),
        (lambda: plugrad.linalg.norm(plugrad.ones(2, 3), dim=(0, -2)), AxisError, "twice"),
        (lambda: plugrad.linalg.norm(plugrad.ones(2, 3), dim=(0, 1.0)), TypeError, "ints"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_clearly(call: Callable[[], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_small_tensor_helpers() -> None:
    x = plugrad.ones(2, 3, dtype=plugrad.float64)
    assert x.ndimension() == 2 and x.element_size() == 8
    assert plugrad.ones(1, dtype=plugrad.int16).element_size() == 2
    made = x.new_empty(4, 1)
    assert made.shape == (4, 1) and made.dtype == plugrad.float64 and not made.requires_grad
    assert x.new_empty((2,), dtype=plugrad.int32).dtype == plugrad.int32
    assert plugrad.is_floating_point(x) and not plugrad.is_complex(x)
    assert plugrad.is_complex(plugrad.ones(1, dtype=plugrad.complex64))
    assert plugrad.is_nonzero(plugrad.tensor([3])) and not plugrad.tensor(0.0).is_nonzero()
    for name in ("det", "inverse", "svd", "kron", "cross", "take_along_dim"):
        assert getattr(plugrad.Tensor, name).__qualname__ == f"Tensor.{name}"
        assert getattr(plugrad, name).__qualname__ == name  # the function keeps its name


def test_solve_with_the_unknown_on_the_left() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.random((2, 3, 3)) + 3 * np.eye(3), rng.random((2, 4, 3))
    ours = [plugrad.asarray(v, requires_grad=True) for v in (a, b)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (a, b)]
    x, tx = plugrad.linalg.solve(*ours, left=False), torch.linalg.solve(*theirs, left=False)
    np.testing.assert_allclose(x.detach().numpy(), tx.detach().numpy(), rtol=1e-10)
    weights = np.linspace(0.5, 1.5, x.numel()).reshape(x.shape)
    (x * plugrad.asarray(weights)).sum().backward()
    (tx * torch.tensor(weights)).sum().backward()
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-8)
    with pytest.raises(ShapeError, match="left=False"):
        plugrad.linalg.solve(plugrad.asarray(a[0]), plugrad.asarray(b[0, 0]), left=False)


@pytest.mark.parametrize("uplo", ["L", "U", "l", "u"])
def test_eigh_reads_the_triangle_it_is_told(uplo: str) -> None:
    m = np.random.default_rng(1).random((3, 3))  # not symmetric: the triangle matters
    ours, theirs = plugrad.asarray(m, requires_grad=True), torch.tensor(m, requires_grad=True)
    values = plugrad.linalg.eigh(ours, UPLO=uplo).eigenvalues
    reference = torch.linalg.eigh(theirs, UPLO=uplo).eigenvalues
    np.testing.assert_allclose(values.detach().numpy(), reference.detach().numpy(), rtol=1e-10)
    (values * plugrad.asarray([1.0, 2.0, 3.0])).sum().backward()
    (reference * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-8, atol=1e-12)
    with pytest.raises(ArgumentError, match="UPLO"):
        plugrad.linalg.eigh(ours, UPLO="X")


def test_norms_in_pytorchs_forms() -> None:
    a = np.random.default_rng(0).random((2, 3, 4)).astype(np.float32)
    ours, theirs = plugrad.asarray(a), torch.tensor(a)
    for dim, keepdim in (((0, 2), False), ((-1, 0), True), ((1, 2), False)):
        mine = plugrad.linalg.matrix_norm(ours, dim=dim, keepdim=keepdim)
        reference = torch.linalg.matrix_norm(theirs, dim=dim, keepdim=keepdim)
        assert mine.shape == tuple(reference.shape)
        np.testing.assert_allclose(mine.numpy(), reference.numpy(), rtol=1e-6)
    mine = plugrad.linalg.vector_norm(ours, ord=1, dim=(0, 2), keepdim=True, dtype=plugrad.float64)
    reference = torch.linalg.vector_norm(theirs, 1, (0, 2), True, dtype=torch.float64)
    assert mine.dtype == plugrad.float64
    np.testing.assert_allclose(mine.numpy(), reference.numpy(), rtol=1e-12)
    with pytest.raises(DtypeError, match="narrow"):
        plugrad.linalg.vector_norm(ours.double(), dtype=plugrad.float32)
    # PyTorch's positional order: ord, then dim and keepdim (the standard's are keywords).
    mine = plugrad.linalg.vector_norm(ours, 1, (0, 2), True)
    np.testing.assert_allclose(mine.numpy(), reference.numpy(), rtol=1e-6)


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", float("inf"), float("-inf"), 1, -1])
def test_cond(p) -> None:
    m = np.array([[1.0, 2.0], [3.0, 4.0]])
    ours, theirs = plugrad.asarray(m, requires_grad=True), torch.tensor(m, requires_grad=True)
    value, reference = plugrad.linalg.cond(ours, p), torch.linalg.cond(theirs, p)
    np.testing.assert_allclose(value.detach().numpy(), reference.detach().numpy(), rtol=1e-10)
    if p in (None, 2, -2):  # torch 2.13's backward through its inv-based ones fails
        value.backward()
        reference.backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-8)


def test_lstsq() -> None:
    rng = np.random.default_rng(3)
    for a, b in (
        (rng.random((5, 2)), rng.random((5, 3))),
        (rng.random((2, 3, 3)), rng.random((2, 3, 2))),
    ):
        ours = plugrad.linalg.lstsq(plugrad.asarray(a), plugrad.asarray(b))
        theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b))
        np.testing.assert_allclose(ours.solution.numpy(), theirs.solution.numpy(), rtol=1e-8)
        assert ours.rank.tolist() == theirs.rank.tolist()
        assert ours.residuals.shape == tuple(theirs.residuals.shape) == (0,)
    # A vector B (A's shape without its last axis), as PyTorch reads it.
    vector = plugrad.linalg.lstsq(plugrad.eye(2), plugrad.ones(2)).solution
    assert vector.shape == (2,) and vector.tolist() == [1.0, 1.0]
    with pytest.raises(ShapeError, match="B must be"):
        plugrad.linalg.lstsq(plugrad.eye(2), plugrad.tensor(1.0))


@pytest.mark.parametrize("p", ["fro", "nuc", float("inf"), 1, -1])
def test_cond_gradients_where_torch_has_none(p) -> None:
    m = plugrad.tensor([[1.0, 2.0], [3.0, 4.5]], dtype=plugrad.float64, requires_grad=True)
    assert plugrad.autograd.gradcheck(lambda a: plugrad.linalg.cond(a, p), (m,))


@pytest.mark.parametrize("b_shape", [(3, 2), (4, 2), (2, 5, 2)])
def test_solve_with_the_unknown_on_the_left_refuses_other_columns(b_shape) -> None:
    # x2 of shape (3, 2) for x1 (2, 3, 3) was read as a stack of vectors: a (3, 2) result.
    a = plugrad.ones(2, 3, 3) + plugrad.eye(3)
    with pytest.raises(ShapeError, match=r"x2 must be matrices \(\.\.\., k, 3\)"):
        plugrad.linalg.solve(a, plugrad.ones(*b_shape), left=False)
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        torch.linalg.solve(torch.ones(2, 3, 3) + torch.eye(3), torch.ones(*b_shape), left=False)


def test_solve_with_the_unknown_on_the_left_and_broadcast_stacks() -> None:
    rng = np.random.default_rng(4)
    a, b = rng.random((2, 3, 3)) + 3 * np.eye(3), rng.random((4, 3))
    ours = [plugrad.asarray(v, requires_grad=True) for v in (a, b)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (a, b)]
    x, tx = plugrad.linalg.solve(*ours, left=False), torch.linalg.solve(*theirs, left=False)
    np.testing.assert_allclose(x.detach().numpy(), tx.detach().numpy(), rtol=1e-10)
    (x * x).sum().backward()
    (tx * tx).sum().backward()
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-8)


def _cofactors(a: np.ndarray) -> np.ndarray:
    """The cofactor matrix of a square ``a``: the gradient of its determinant, singular too."""
    n = a.shape[-1]
    out = np.zeros_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, -2), j, -1)
            out[..., i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


@pytest.mark.parametrize(
    "matrix",
    [
        [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],  # rank 2
        [[1.0, 2.0], [2.0, 4.0]],
        [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 2.0]],
        [[[1.0, 2.0], [2.0, 4.0]], [[0.5, -1.0], [2.0, 3.0]]],  # one singular in a stack
        np.zeros((3, 3)),  # rank 1 or less: all cofactors 0
    ],
)
def test_the_gradient_of_a_singular_determinant_is_its_cofactor_matrix(matrix) -> None:
    # NumPy's LinAlgError came out of backward; PyTorch 2.13 gives zeros, which is not the
    # derivative where the rank is n - 1.
    a = np.asarray(matrix)
    x = plugrad.asarray(a, requires_grad=True)
    plugrad.linalg.det(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _cofactors(a), atol=1e-12)


@pytest.mark.parametrize(
    "matrix",
    [
        [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]],  # rank 1
        np.zeros((3, 3)),
        np.diag([2.0, 3.0, 0.0, 0.0]),  # rank n - 2: the second derivative is not 0
        np.diag([1.0, 0.0, 0.0, 0.0]),
        [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],  # rank n - 1
        [[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]], [[0.5, -1.0], [2.0, 3.0]]],
    ],
)
def test_the_determinants_second_derivative_at_a_singular_matrix_is_the_cofactors_derivative(
    matrix,
) -> None:
    # The adjugate of a singular matrix came from the SVD, and its derivative through the
    # SVD's was NaN where two singular values are 0 (rank n - 2 or less; PyTorch's too).
    a = np.asarray(matrix, dtype=float)
    rng = np.random.default_rng(0)
    weights = rng.standard_normal(a.shape)
    x = plugrad.asarray(a, requires_grad=True)
    (cofactors,) = plugrad.autograd.grad(plugrad.linalg.det(x).sum(), x, create_graph=True)
    (hessian_w,) = plugrad.autograd.grad((cofactors * plugrad.asarray(weights)).sum(), x)
    for _ in range(3):
        e = rng.standard_normal(a.shape)
        # The cofactors are polynomials of degree n - 1 <= 3: this stencil is exact for them.
        change = (
            _cofactors(a - 2 * e) - 8 * _cofactors(a - e) + 8 * _cofactors(a + e)
            - _cofactors(a + 2 * e)
        ) / 12  # fmt: skip
        np.testing.assert_allclose(
            (hessian_w.numpy() * e).sum(), (weights * change).sum(), rtol=1e-10, atol=1e-10
        )


def _product_of_rank(n: int, rank: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, rank)) @ rng.standard_normal((rank, n))


@pytest.mark.parametrize(("n", "rank"), [(3, 2), (4, 3), (5, 4), (4, 2)])
def test_the_determinants_second_derivative_at_a_numerically_singular_product(n, rank) -> None:
    # A product of rank n - 1 has a determinant of about 1e-17, not 0: the gradient went
    # through det(x) inv(x), whose own derivative lost every digit (a 3 x 3 Hessian entry of
    # -0.375 for -0.302). The Hessian is the matrix of signed minors of order n - 2.
    a = _product_of_rank(n, rank, seed=n + rank)
    assert np.linalg.det(a) != 0  # the case the test is for
    rng = np.random.default_rng(1)
    weights = rng.standard_normal(a.shape)
    x = plugrad.asarray(a, requires_grad=True)
    (cofactors,) = plugrad.autograd.grad(plugrad.linalg.det(x), x, create_graph=True)
    (hessian_w,) = plugrad.autograd.grad((cofactors * plugrad.asarray(weights)).sum(), x)
    expected = np.zeros_like(a)
    for i, j, k, m in np.ndindex(n, n, n, n):
        if i != k and j != m:
            minor = np.delete(np.delete(a, [i, k], 0), [j, m], 1)
            sign = (-1) ** (i + j + k + m) * (1 if (i < k) == (j < m) else -1)
            expected[k, m] += weights[i, j] * sign * (np.linalg.det(minor) if minor.size else 1)
    np.testing.assert_allclose(hessian_w.numpy(), expected, rtol=1e-9, atol=1e-9)


_ROTATION = [[0.6, -0.8], [0.8, 0.6]]
_DET_AT = {
    "identity": np.eye(3),
    "2 I": 2 * np.eye(3),
    "diag(2, 2, 3)": np.diag([2.0, 2.0, 3.0]),
    "rotation": np.array(_ROTATION),
    "stack of I, a reflection and a rotation": np.array(
        [np.eye(2), [[0.0, 1.0], [1.0, 0.0]], _ROTATION]
    ),
    "general": np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, 4.0]]),
}


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("at", list(_DET_AT))
def test_gradients_of_the_determinants_gradient_agree_with_pytorch(at: str, order: int) -> None:
    # The adjugate came from the SVD, whose derivative is wrong where singular values
    # repeat: d cofactor / dx at the identity was 0 (PyTorch: -1), and third derivatives of
    # a general matrix were off by ~5 %.
    a = _DET_AT[at]
    weights = np.arange(a.size, dtype=float).reshape(a.shape) + 1.0
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor(a, dtype=lib.float64, requires_grad=True)
        out = lib.linalg.det(x).sum()
        for _ in range(order):
            (out,) = lib.autograd.grad(out, x, create_graph=True)
            out = (out * lib.tensor(weights, dtype=lib.float64)).sum()
        results.append(lib.autograd.grad(out, x)[0].numpy() if order == 2 else out.item())
    np.testing.assert_allclose(*results, atol=1e-9)


_LSTSQ_SYSTEMS = {
    "tall": ((3, 2), (3, 1)),
    "batched": ((2, 4, 3), (2, 4, 2)),
    "vector": ((4, 3), (4,)),
    "wide": ((2, 3), (2, 1)),
}


@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gelss", "gels"])
@pytest.mark.parametrize("system", list(_LSTSQ_SYSTEMS))
def test_lstsq_gives_what_pytorchs_driver_gives(system, driver):
    # driver= changed nothing: gelsd gave no residuals nor singular values.
    if driver == "gels" and system == "wide":
        pytest.skip("gels takes full-rank tall or square matrices")
    rng = np.random.default_rng(3)
    a_shape, b_shape = _LSTSQ_SYSTEMS[system]
    A, B = rng.normal(size=a_shape), rng.normal(size=b_shape)
    ours = plugrad.linalg.lstsq(plugrad.asarray(A), plugrad.asarray(B), driver=driver)
    theirs = torch.linalg.lstsq(torch.tensor(A), torch.tensor(B), driver=driver)
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.shape == tuple(reference.shape)
        np.testing.assert_allclose(np.asarray(mine.tolist()), reference.numpy(), rtol=1e-10)
    with pytest.raises(plugrad.errors.ArgumentError, match="driver"):
        plugrad.linalg.lstsq(plugrad.asarray(A), plugrad.asarray(B), driver="gelsx")


@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gelss", "gels"])
def test_lstsq_reads_rcond_where_pytorchs_driver_does(driver):
    # gels has no cut-off: rcond=0.5 dropped the 0.1 singular value (solution [1, 0]).
    A = np.array([[1.0, 0.0], [0.0, 0.1], [0.0, 0.0]])
    B = np.ones((3, 1))
    ours = plugrad.linalg.lstsq(plugrad.asarray(A), plugrad.asarray(B), rcond=0.5, driver=driver)
    theirs = torch.linalg.lstsq(torch.tensor(A), torch.tensor(B), rcond=0.5, driver=driver)
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.shape == tuple(reference.shape)
        np.testing.assert_allclose(np.asarray(mine.tolist()), reference.numpy(), rtol=1e-10)


SINGULAR = {
    "inv of a singular matrix": lambda lib: lib.linalg.inv(lib.tensor([[1.0, 2.0], [2.0, 4.0]])),
    "solve with a singular matrix": lambda lib: lib.linalg.solve(
        lib.tensor([[1.0, 2.0], [2.0, 4.0]]), lib.ones(2)
    ),
    "cholesky of an indefinite matrix": lambda lib: lib.linalg.cholesky(
        lib.tensor([[1.0, 2.0], [2.0, 1.0]])
    ),
}


@pytest.mark.parametrize("backend", [b for b in backends_under_test() if b != "jax"])
@pytest.mark.parametrize("name", list(SINGULAR))
def test_a_singular_matrix_is_a_linalg_error_on_every_backend(name: str, backend: str) -> None:
    # NumPy's LinAlgError is a ValueError and PyTorch's a RuntimeError: `except` caught one
    # on one backend only. (JAX raises none: it answers inf or NaN, as jax.numpy does.)
    with plugrad.use_backend(backend), pytest.raises(plugrad.errors.LinAlgError):
        SINGULAR[name](plugrad).tolist()  # (Dask computes lazily: the values raise)
    with pytest.raises(RuntimeError):
        SINGULAR[name](torch)
    # A matrix that is not square is a shape error, as before.
    with plugrad.use_backend(backend), pytest.raises(ShapeError):
        plugrad.linalg.inv(plugrad.ones(2, 3))


def test_an_svd_driver_is_refused_with_the_reason():
    # PyTorch's drivers are cuSOLVER's; its CPU refuses them too
    with pytest.raises(ArgumentError, match="driver=None"):
        plugrad.linalg.svd(plugrad.asarray(TALL), driver="gesvd")
    with pytest.raises(RuntimeError):
        torch.linalg.svd(torch.from_numpy(TALL), driver="gesvd")


def test_the_deprecated_forms_say_what_replaces_them():
    x = plugrad.asarray(SQUARE)
    with pytest.warns(UserWarning, match=r"linalg\.qr"):
        plugrad.qr(x)
    with pytest.warns(UserWarning, match=r"linalg\.solve_triangular"):
        x.triangular_solve(x)
    with pytest.raises(TypeError, match="some must be True or False"):
        plugrad.qr(x, some="yes")


@pytest.mark.parametrize("name", ["matrix_rank", "pinv"])
def test_a_tensor_atol_of_zero_keeps_the_default_rtol_as_pytorchs(name: str) -> None:
    # A tensor atol of 0 set rtol to 0: rounding noise counted as rank (3 for 2), and pinv
    # inverted it (values of 1e15).
    rank_two = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    stack = np.stack([rank_two, rank_two])
    for atol in ([0.0, 0.0], [0.0, 5.0], [0.25, 0.0]):
        ours = getattr(plugrad.linalg, name)(plugrad.asarray(stack), atol=plugrad.asarray(atol))
        theirs = getattr(torch.linalg, name)(torch.tensor(stack), atol=torch.tensor(atol))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


def test_qr_takes_mode_by_position_and_matrix_power_n_by_keyword_as_pytorchs() -> None:
    # (both raised TypeError: the standard's forms only)
    ours, theirs = plugrad.asarray(TALL), torch.tensor(TALL)
    for mode in ("reduced", "complete", "r"):
        for mine, reference in zip(plugrad.linalg.qr(ours, mode), torch.linalg.qr(theirs, mode)):
            assert mine.shape == tuple(reference.shape)
    square = plugrad.asarray(SQUARE)
    np.testing.assert_allclose(
        plugrad.linalg.matrix_power(square, n=-2).numpy(),
        torch.linalg.matrix_power(torch.tensor(SQUARE), n=-2).numpy(),
        rtol=1e-12,
    )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: plugrad.linalg.lstsq(plugrad.ones(3, 2), plugrad.ones(4, 1)), r"lstsq\(\).*4"),
        (lambda: plugrad.linalg.lstsq(plugrad.ones(3, 2), plugrad.ones(4)), r"lstsq\(\).*4"),
        (
            lambda: plugrad.linalg.solve_triangular(plugrad.eye(3), plugrad.ones(4, 2), upper=True),
            r"solve_triangular\(\).*4 rows",
        ),
        (
            lambda: plugrad.linalg.solve_triangular(
                plugrad.eye(3), plugrad.ones(3, 2), upper=True, left=False
            ),
            r"solve_triangular\(\).*2 columns",
        ),
    ],
)
def test_mismatched_shapes_are_named_by_the_function_called(call, match) -> None:
    # (they were matmul()'s and solve()'s errors, with NumPy's words)
    with pytest.raises(ShapeError, match=match):
        call()


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("name", ["slogdet", "det"])
def test_determinant_of_a_matrix_holding_nan_is_nan_as_pytorchs(name: str, dtype: str) -> None:
    # [[nan, 1], [1, 1]] had determinant 0 (slogdet: (0, -inf)), without a word.
    nan = float("nan")
    stack = np.array([[[nan, 1.0], [1.0, 1.0]], [[1.0, nan], [0.0, 1.0]], [[1.0, 2.0], [3.0, 4.0]]])
    ours = getattr(plugrad.linalg, name)(plugrad.asarray(stack.astype(dtype)))
    theirs = getattr(torch.linalg, name)(torch.tensor(stack.astype(dtype)))
    if name == "det":
        ours, theirs = (ours,), (theirs,)
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.numpy(), reference.numpy(), equal_nan=True)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("name", ["inv", "solve"])
def test_a_matrix_holding_nan_is_not_called_singular(name: str) -> None:
    # NumPy's kernels call it singular; the error said to check for a singular matrix.
    # (JAX's and PyTorch's kernels give NaN, see Backends; Dask's raises when computed.)
    with plugrad.use_backend("numpy"):
        matrix = plugrad.asarray([[float("nan"), 1.0], [1.0, 1.0]])
        arguments = (matrix,) if name == "inv" else (matrix, plugrad.ones(2, dtype=matrix.dtype))
        with pytest.raises(plugrad.errors.LinAlgError, match="holds NaN"):
            getattr(plugrad.linalg, name)(*arguments)
        with pytest.raises(plugrad.errors.LinAlgError, match="singular"):
            plugrad.linalg.inv(plugrad.asarray([[1.0, 2.0], [2.0, 4.0]]))
