"""Householder QR: ``geqrf``, ``linalg.householder_product`` (``orgqr``) and ``ormqr``,
against PyTorch's LAPACK.

``geqrf`` gives the same packed ``a`` and ``tau`` as PyTorch's (LAPACK's signs,
rank-deficient and zero columns too), real and complex, batched, tall and wide,
on every backend; it has no derivative, as PyTorch's. ``householder_product``
and ``ormqr`` agree in values and in gradients with respect to every input.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from torch_compare import numpy_of, random_matrix

import plugrad
from plugrad.errors import ArgumentError, BackwardError, DtypeError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(20)
matrix = functools.partial(random_matrix, RNG)
to_numpy = numpy_of


def assert_close(mine: Any, reference: Any, tolerance: float = 1e-12) -> None:
    mine, reference = to_numpy(mine), to_numpy(reference)
    assert mine.shape == reference.shape
    assert mine.dtype == reference.dtype
    np.testing.assert_allclose(mine, reference, rtol=tolerance, atol=tolerance)


def real_loss(lib: Any, value: Any, weights: np.ndarray) -> Any:
    """A real scalar of every element, with random weights (so gradients are not symmetric)."""
    product = value * lib.tensor(weights)
    if value.is_complex():
        return (product.real + 0.3 * product.imag).sum()
    return product.sum()


def gradients(function: Any, *arrays: np.ndarray) -> list[list[np.ndarray]]:
    """``function(lib, *leaves)``'s value and the leaves' gradients of a random loss of it,
    by ``autograd.grad``, with plugrad and torch (an input torch's graph does not use
    gets zeros: see test_no_reflection_gives_the_identitys_columns)."""
    results = []
    weights = None
    for lib in (plugrad, torch):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        value = function(lib, *leaves)
        if weights is None:
            weights = matrix(*value.shape, complex_=value.is_complex())
        grads = lib.autograd.grad(real_loss(lib, value, weights), leaves, allow_unused=True)
        grads = [lib.zeros_like(x) if g is None else g for x, g in zip(leaves, grads)]
        results.append([to_numpy(value)] + [to_numpy(g) for g in grads])
    return results


def assert_agree(results: list[list[np.ndarray]]) -> None:
    ours, theirs = results
    for i, (mine, reference) in enumerate(zip(ours, theirs, strict=True)):
        assert mine.shape == reference.shape, i
        np.testing.assert_allclose(mine, reference, rtol=1e-10, atol=1e-12, err_msg=str(i))


# -- geqrf ---------------------------------------------------------------------------------

GEQRF_SHAPES = [(4, 4), (5, 3), (3, 5), (1, 3), (3, 1), (2, 3, 4, 2), (2, 2, 5), (0, 3), (3, 0)]


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("shape", GEQRF_SHAPES, ids=str)
def test_geqrf_gives_torchs_a_and_tau(shape: tuple[int, ...], complex_: bool, backend: str):
    a = matrix(*shape, complex_=complex_)
    theirs = torch.geqrf(torch.tensor(a))
    with plugrad.use_backend(backend):
        ours = plugrad.geqrf(plugrad.tensor(a))
        method = plugrad.tensor(a).geqrf()
    assert type(ours) is plugrad.return_types.geqrf and ours._fields == ("a", "tau")
    for mine, via_method, reference in zip(ours, method, theirs, strict=True):
        assert_close(mine, reference)
        assert_close(via_method, reference)


# Columns and reflections that are exactly zero: where LAPACK takes no reflection (tau = 0)
# and keeps a negative diagonal, where a complex one it reflects to a real beta, and -0.0.
SPECIAL = [
    np.zeros((3, 2)),
    np.array([[-2.0, 1.0], [0.0, 3.0], [0.0, 0.0]]),
    np.array([[-2.0 + 1.0j, 1.0], [0.0, 3.0], [0.0, 0.0]]),
    np.array([[0.0j, 1.0], [0.0, 3.0], [0.0, 0.0]]),
    np.array([[-0.0, 1.0], [1.0, 3.0], [0.0, 0.0]]),
    np.array([[-0.0 + 1.0j, 1.0], [1.0, 3.0], [0.0, 0.0]]),
    np.array([[1.0, 0.0, 2.0], [2.0, 0.0, 4.0], [2.0, 0.0, 3.0], [0.0, 0.0, 1.0]]),  # zero column
    np.array([[3.0, 6.0, 1.0], [4.0, 8.0, 2.0], [0.0, 0.0, 5.0]]),  # rank 2: a column doubled
    np.array([[2.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),  # rank 1
    np.array([[[0.0, 0.0], [0.0, 1.0]], [[1j, 0.0], [0.0, -1.0]]]),
]


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("a", SPECIAL, ids=range(len(SPECIAL)))
def test_geqrf_signs_of_rank_deficient_and_zero_columns(a: np.ndarray, backend: str) -> None:
    theirs = torch.geqrf(torch.tensor(a))
    with plugrad.use_backend(backend):
        ours = plugrad.geqrf(plugrad.tensor(a))
    for mine, reference in zip(ours, theirs, strict=True):
        assert_close(mine, reference, 1e-14)


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
def test_geqrf_of_a_low_rank_matrix_reconstructs_it(complex_: bool) -> None:
    # Below its rank the reflections are of rounding noise, which no two LAPACKs compute
    # alike: the factorization, R's magnitudes and the determined columns agree.
    a = matrix(2, 6, 2, complex_=complex_) @ matrix(2, 2, 4, complex_=complex_)
    ours, theirs = plugrad.geqrf(plugrad.tensor(a)), torch.geqrf(torch.tensor(a))
    Q = plugrad.linalg.householder_product(ours.a, ours.tau)
    np.testing.assert_allclose(to_numpy(Q @ plugrad.triu(ours.a[..., :4, :])), a, atol=1e-12)
    diagonal = np.abs(np.diagonal(to_numpy(ours.a), axis1=-2, axis2=-1))
    their_diagonal = np.abs(np.diagonal(to_numpy(theirs.a), axis1=-2, axis2=-1))
    np.testing.assert_allclose(diagonal, their_diagonal, atol=1e-12)
    assert_close(ours.a[..., :, :2], theirs.a[..., :, :2])
    assert_close(ours.tau[..., :2], theirs.tau[..., :2])


def test_geqrf_has_no_derivative_as_torchs() -> None:
    a = matrix(4, 3)
    A = torch.tensor(a, requires_grad=True)
    result = torch.geqrf(A)
    assert result.a.requires_grad and result.tau.requires_grad
    with pytest.raises(NotImplementedError, match="derivative for 'geqrf' is not implemented"):
        result.a.sum().backward()

    A = plugrad.tensor(a, requires_grad=True)
    other = plugrad.tensor(a, requires_grad=True)
    result = plugrad.geqrf(A)
    assert result.a.requires_grad and result.tau.requires_grad
    for output in result:
        with pytest.raises(BackwardError, match=r"geqrf\(\) has no derivative.*linalg.qr"):
            (output.sum() + other.sum()).backward()
    assert A.grad is None and other.grad is None  # nothing was accumulated
    # Through householder_product too: it is differentiable, geqrf's result is not.
    Q = plugrad.linalg.householder_product(*result)
    with pytest.raises(BackwardError, match="geqrf"):
        plugrad.autograd.grad(Q.sum(), A)
    # A gradient that does not reach geqrf's result still flows.
    (grad,) = plugrad.autograd.grad((A * 2).sum() + result.a.detach().sum(), A)
    np.testing.assert_array_equal(to_numpy(grad), np.full((4, 3), 2.0))
    assert not plugrad.geqrf(A.detach()).a.requires_grad
    with plugrad.no_grad():
        assert not plugrad.geqrf(A).tau.requires_grad


# -- householder_product (orgqr) -------------------------------------------------------------

# (shape of A, number of reflections)
PRODUCT_SHAPES = [((4, 4), 4), ((5, 3), 3), ((5, 3), 2), ((2, 4, 3), 3), ((2, 1, 3, 3), 1)]


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize(("shape", "steps"), PRODUCT_SHAPES, ids=str)
def test_householder_product_of_geqrf_is_torchs_q(
    shape: tuple[int, ...], steps: int, complex_: bool, backend: str
) -> None:
    a = matrix(*shape, complex_=complex_)
    theirs = torch.geqrf(torch.tensor(a))
    packed, tau = to_numpy(theirs.a), to_numpy(theirs.tau)[..., :steps]
    expected = torch.linalg.householder_product(theirs.a, theirs.tau[..., :steps])
    with plugrad.use_backend(backend):
        A, T = plugrad.tensor(packed), plugrad.tensor(tau)
        for ours in (plugrad.linalg.householder_product(A, T), plugrad.orgqr(A, T), A.orgqr(T)):
            assert_close(ours, expected)
    if steps == shape[-1]:  # Q R is A
        Q = plugrad.linalg.householder_product(plugrad.tensor(packed), plugrad.tensor(tau))
        product = Q @ plugrad.triu(plugrad.tensor(packed)[..., : shape[-1], :])
        np.testing.assert_allclose(to_numpy(product), a, atol=1e-12)


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize(("shape", "steps"), PRODUCT_SHAPES, ids=str)
def test_householder_product_gradients_agree_with_torch(
    shape: tuple[int, ...], steps: int, complex_: bool
) -> None:
    # Random A (its diagonal and upper triangle unread: their gradient is 0) and tau.
    a = matrix(*shape, complex_=complex_)
    tau = matrix(*shape[:-2], steps, complex_=complex_)
    assert_agree(gradients(lambda lib, A, T: lib.linalg.householder_product(A, T), a, tau))
    assert_agree(gradients(lambda lib, A, T: lib.orgqr(A, T), a, tau))


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
def test_householder_product_passes_gradcheck(complex_: bool) -> None:
    A = plugrad.tensor(matrix(2, 4, 3, complex_=complex_), requires_grad=True)
    tau = plugrad.tensor(matrix(2, 2, complex_=complex_), requires_grad=True)
    assert plugrad.autograd.gradcheck(plugrad.linalg.householder_product, (A, tau))
    assert plugrad.autograd.gradgradcheck(plugrad.linalg.householder_product, (A, tau))


def test_no_reflection_gives_the_identitys_columns() -> None:
    # tau empty: PyTorch's result requires grad, and its graph uses neither input (its
    # gradients are None); plugrad's are zeros.
    a = matrix(3, 2)
    theirs = torch.linalg.householder_product(torch.tensor(a), torch.zeros(0, dtype=torch.float64))
    A = plugrad.tensor(a, requires_grad=True)
    tau = plugrad.zeros(0, dtype=plugrad.float64, requires_grad=True)
    ours = plugrad.linalg.householder_product(A, tau)
    assert_close(ours, theirs)
    assert ours.requires_grad
    ours.sum().backward()
    np.testing.assert_array_equal(to_numpy(A.grad), np.zeros((3, 2)))
    assert tau.grad is not None and tau.grad.shape == (0,)
    empty = plugrad.linalg.householder_product(plugrad.zeros(0, 0), plugrad.zeros(0))
    assert empty.shape == (0, 0)


# -- ormqr -----------------------------------------------------------------------------------

ORMQR_SHAPES = [(4, 4), (5, 3), (3, 5), (2, 4, 3), (0, 0)]


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("shape", ORMQR_SHAPES, ids=str)
def test_ormqr_agrees_with_torch(shape: tuple[int, ...], complex_: bool, backend: str) -> None:
    a = matrix(*shape, complex_=complex_)
    packed, tau = torch.geqrf(torch.tensor(a))
    rows = shape[-2]
    for left in (True, False):
        for transpose in (False, True):
            other = matrix(*shape[:-2], *((rows, 2) if left else (2, rows)), complex_=complex_)
            expected = torch.ormqr(packed, tau, torch.tensor(other), left, transpose)
            with plugrad.use_backend(backend):
                A, T = plugrad.tensor(to_numpy(packed)), plugrad.tensor(to_numpy(tau))
                C = plugrad.tensor(other)
                assert_close(plugrad.ormqr(A, T, C, left, transpose), expected)
                assert_close(A.ormqr(T, C, left=left, transpose=transpose), expected)


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("shape", ORMQR_SHAPES[:4], ids=str)
def test_ormqr_gradients_agree_with_torch(shape: tuple[int, ...], complex_: bool) -> None:
    a = matrix(*shape, complex_=complex_)
    rows = shape[-2]
    tau = matrix(*shape[:-2], min(shape[-2:]), complex_=complex_)
    for left in (True, False):
        for transpose in (False, True):
            other = matrix(*shape[:-2], *((rows, 3) if left else (3, rows)), complex_=complex_)

            def function(lib: Any, A: Any, T: Any, C: Any) -> Any:
                return lib.ormqr(A, T, C, left=left, transpose=transpose)  # noqa: B023

            assert_agree(gradients(function, a, tau, other))


def test_ormqr_passes_gradcheck() -> None:
    A = plugrad.tensor(matrix(2, 4, 3, complex_=True), requires_grad=True)
    tau = plugrad.tensor(matrix(2, 3, complex_=True), requires_grad=True)
    C = plugrad.tensor(matrix(2, 2, 4, complex_=True), requires_grad=True)
    for left, transpose in [(True, False), (False, True)]:
        other = C if not left else C.mT

        def function(A: Any, tau: Any, C: Any) -> Any:
            return plugrad.ormqr(A, tau, C, left=left, transpose=transpose)  # noqa: B023

        assert plugrad.autograd.gradcheck(function, (A, tau, other))


# -- errors ----------------------------------------------------------------------------------


# call(lib, A, tau, C) on A (4 x 3), tau (3) and C (4 x 2) of float64, and what plugrad raises
ERRORS = [
    (lambda lib, A, tau, C: lib.linalg.householder_product(A.mT, tau), ShapeError, "more col"),
    (
        lambda lib, A, tau, C: lib.linalg.householder_product(A, lib.ones(4, dtype=A.dtype)),
        ShapeError,
        "tau has 4 elements but A only 3 columns",
    ),
    (lambda lib, A, tau, C: lib.orgqr(A, tau.float()), DtypeError, r"tau \(float32\) must"),
    (
        lambda lib, A, tau, C: lib.orgqr(A.expand(2, 4, 3), tau),
        ShapeError,
        "tau must have 2 dimensions",
    ),
    (
        lambda lib, A, tau, C: lib.orgqr(A.expand(2, 4, 3), tau.expand(3, 3)),
        ShapeError,
        r"batch dimensions of tau \(3,\) must equal A's \(2,\)",
    ),
    (
        lambda lib, A, tau, C: lib.orgqr(A.expand(1, 4, 3), tau.expand(2, 3)),
        ShapeError,
        "do not broadcast",
    ),
    (lambda lib, A, tau, C: lib.orgqr(A[0], tau), ShapeError, "matrix or a batch"),
    (lambda lib, A, tau, C: lib.orgqr(A.long(), tau.long()), DtypeError, "floating-point"),
    (lambda lib, A, tau, C: lib.orgqr(A, [1.0, 2.0, 3.0]), ArgumentError, "Tensor"),
    (lambda lib, A, tau, C: lib.geqrf(A[0]), ShapeError, "matrix or a batch"),
    (lambda lib, A, tau, C: lib.geqrf(A.int()), DtypeError, "floating-point"),
    (
        lambda lib, A, tau, C: lib.ormqr(A, tau, lib.ones(5, 2, dtype=A.dtype)),
        ShapeError,
        r"other of shape \(5, 2\) has 5 rows, but Q, .* is 4x4",
    ),
    (lambda lib, A, tau, C: lib.ormqr(A, tau, C, left=False), ShapeError, "has 2 columns"),
    (
        lambda lib, A, tau, C: lib.ormqr(A, tau[:2], C),
        ShapeError,
        "tau has 2 elements, but A .* holds 3 Householder vectors",
    ),
    (lambda lib, A, tau, C: lib.ormqr(A, tau, C.float()), DtypeError, r"other \(float32\)"),
    (
        lambda lib, A, tau, C: lib.ormqr(A.expand(2, 4, 3), tau.expand(2, 3), C),
        ShapeError,
        "other must have 3 dimensions",
    ),
    (
        lambda lib, A, tau, C: lib.ormqr(A.expand(2, 4, 3), tau.expand(2, 3), C.expand(1, 4, 2)),
        ShapeError,
        "batch dimensions of other",
    ),
    (lambda lib, A, tau, C: lib.ormqr(A, tau, C[:, 0]), ShapeError, "other must be a matrix"),
    (lambda lib, A, tau, C: lib.ormqr(A, tau, C, left=1), ArgumentError, "left"),
    (lambda lib, A, tau, C: lib.ormqr(A, tau, C, True, None), ArgumentError, "transpose"),
]


@pytest.mark.parametrize(("call", "error", "match"), ERRORS, ids=[e[2] for e in ERRORS])
def test_bad_inputs_raise_typed_errors_where_torch_refuses(
    call: Any, error: type, match: str
) -> None:
    inputs = {lib: [lib.ones(*s, dtype=lib.float64) for s in ((4, 3), (3,), (4, 2))]
              for lib in (plugrad, torch)}  # fmt: skip
    # torch refuses each call too (with RuntimeError, TypeError or NotImplementedError)
    with pytest.raises((RuntimeError, TypeError, NotImplementedError)):
        call(torch, *inputs[torch])
    leaves = [x.requires_grad_() for x in inputs[plugrad]]
    with pytest.raises(error, match=match):
        call(plugrad, *leaves)
    assert all(x.grad is None for x in leaves)


def test_out_and_keywords_as_torchs() -> None:
    # (PyTorch's keywords are input, input2, input3, as plugrad's cholesky_solve takes them)
    a, c = matrix(4, 3), matrix(4, 2)
    results = []
    for lib in (plugrad, torch):
        packed, tau = lib.geqrf(input=lib.tensor(a))
        out = lib.zeros(4, 3, dtype=lib.float64)
        assert lib.orgqr(packed, input2=tau, out=out) is out
        other = lib.tensor(c)
        product = lib.ormqr(input=packed, input2=tau, input3=other, left=True, transpose=True)
        results.append([out, product, lib.linalg.householder_product(packed, tau)])
    for mine, reference in zip(*results, strict=True):
        assert_close(mine, reference)
