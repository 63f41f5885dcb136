"""The LU factorization: ``linalg.lu_factor(_ex)``, ``lu``, ``lu_solve``, ``inv_ex``,
``solve_ex`` and PyTorch's older ``lu``, ``lu_solve``, ``lu_unpack``, against PyTorch's.

Factors, pivots, ``info`` and gradients (which flow through the elimination's
own ops) agree with PyTorch's LAPACK on every backend, real and complex,
square and rectangular, batched.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from typing import Any

import numpy as np
import pytest
from torch_compare import numpy_of, random_matrix

import plugrad
from plugrad.errors import DtypeError, InvalidArgumentError, LinAlgError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(8)
matrix = functools.partial(random_matrix, RNG)
to_numpy = numpy_of


def real_sum(lib: Any, value: Any) -> Any:
    """A real scalar of every element (weighted, so that gradients are not symmetric)."""
    weights = lib.asarray(np.linspace(0.5, 1.5, int(np.prod(value.shape))).reshape(value.shape))
    product = value * weights
    if value.dtype in (lib.complex64, lib.complex128):
        return (product.real + 0.3 * product.imag).sum()
    return product.sum()


def both(backend: str, function: Any, *arrays: np.ndarray) -> list[list[np.ndarray]]:
    """``function(lib, *leaves)``'s results and the leaves' gradients, with plugrad and torch."""
    results = []
    for lib in (plugrad, torch):
        context = plugrad.use_backend(backend) if lib is plugrad else contextlib.nullcontext()
        with context:
            leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
            outputs = function(lib, *leaves)
            floating = [o for o in outputs if o.is_floating_point() or o.is_complex()]
            sum(real_sum(lib, o) for o in floating).backward()
            results.append([to_numpy(o) for o in outputs] + [to_numpy(t.grad) for t in leaves])
    return results


def assert_agree(results: list[list[np.ndarray]]) -> None:
    ours, theirs = results
    for i, (mine, reference) in enumerate(zip(ours, theirs, strict=True)):
        assert mine.shape == reference.shape, i
        if reference.dtype.kind == "i":
            np.testing.assert_array_equal(mine, reference, err_msg=str(i))
        else:
            np.testing.assert_allclose(mine, reference, rtol=1e-10, atol=1e-12, err_msg=str(i))


SHAPES = [(4, 4), (3, 5), (5, 3), (2, 3, 3), (0, 0), (2, 1, 1)]


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_lu_factor_and_lu_agree_with_torch(shape: tuple[int, ...], complex_: bool, backend: str):
    a = matrix(*shape, complex_=complex_)
    assert_agree(both(backend, lambda lib, A: tuple(lib.linalg.lu_factor_ex(A)), a))
    assert_agree(both(backend, lambda lib, A: tuple(lib.linalg.lu(A)), a))


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
@pytest.mark.parametrize("left", [True, False], ids=["left", "right"])
@pytest.mark.parametrize("adjoint", [False, True], ids=["plain", "adjoint"])
def test_lu_solve_agrees_with_torch(adjoint: bool, left: bool, complex_: bool, backend: str):
    a = matrix(2, 3, 3, complex_=complex_)
    b = matrix(3, 2, complex_=complex_)  # broadcast against A's batch
    b = b if left else b.T.copy()

    def solve(lib: Any, A: Any, B: Any) -> tuple[Any, ...]:
        LU, pivots = lib.linalg.lu_factor(A)
        return (lib.linalg.lu_solve(LU, pivots, B, left=left, adjoint=adjoint),)

    assert_agree(both(backend, solve, a, b))


@pytest.mark.parametrize("backend", backends_under_test())
def test_inv_ex_and_solve_ex_agree_with_torch(backend: str) -> None:
    a, b = matrix(2, 3, 3), matrix(2, 3)
    assert_agree(both(backend, lambda lib, A: tuple(lib.linalg.inv_ex(A)), a))
    assert_agree(both(backend, lambda lib, A, B: tuple(lib.linalg.solve_ex(A, B)), a, b))
    right = matrix(4, 3)
    solved = both(backend, lambda lib, A, B: tuple(lib.linalg.solve_ex(A, B, left=False)), a, right)
    assert_agree(solved)


def test_singular_matrices_give_torchs_info_and_values_without_an_error() -> None:
    a = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 4.0]]])
    b = np.ones((2, 2, 3))
    for name, call in [
        ("lu_factor_ex", lambda lib, A: lib.linalg.lu_factor_ex(A)),
        ("inv_ex", lambda lib, A: lib.linalg.inv_ex(A)),
        ("solve_ex", lambda lib, A: lib.linalg.solve_ex(A, lib.tensor(b, dtype=lib.float64))),
        ("lu", lambda lib, A: lib.linalg.lu(A)),
    ]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's division by zero
            ours = call(plugrad, plugrad.tensor(a))
        theirs = call(torch, torch.tensor(a))
        for mine, reference in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(to_numpy(mine), to_numpy(reference), err_msg=name)
    info = plugrad.linalg.lu_factor_ex(plugrad.tensor(a)).info
    assert info.dtype == plugrad.int32 and info.tolist() == [2, 0]


def test_solve_ex_reads_b_alike_whether_or_not_a_matrix_is_singular() -> None:
    # B of shape A.shape[:-1] that also fits as one matrix is read as solve reads it (the
    # standard's matrix): a singular batch element made it a stack of vectors (PyTorch's).
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 3, 3)), rng.standard_normal((3, 3))
    regular = plugrad.linalg.solve_ex(plugrad.tensor(a), plugrad.tensor(b))
    a[1] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's division by zero
        singular = plugrad.linalg.solve_ex(plugrad.tensor(a), plugrad.tensor(b))
    expected = plugrad.linalg.solve(plugrad.tensor(a[[0, 2]]), plugrad.tensor(b))
    assert regular.result.shape == singular.result.shape == (3, 3, 3)
    assert singular.info.tolist() == [0, 1, 0]
    np.testing.assert_allclose(singular.result.numpy()[[0, 2]], expected.numpy(), rtol=1e-12)
    # Where only PyTorch's reading fits, both paths take it.
    a, b = rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 4))
    a[0] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert plugrad.linalg.solve_ex(plugrad.tensor(a), plugrad.tensor(b)).result.shape == (2, 4)


def test_check_errors_and_lu_factor_raise_for_a_singular_matrix() -> None:
    a = plugrad.tensor([[[2.0, 0.0], [0.0, 4.0]], [[1.0, 2.0], [2.0, 4.0]]])
    with pytest.raises(LinAlgError, match=r"batch element 1\): the factorization's U\[1, 1\]"):
        plugrad.linalg.lu_factor(a)
    for call in (
        lambda: plugrad.linalg.lu_factor_ex(a, check_errors=True),
        lambda: plugrad.linalg.inv_ex(a, check_errors=True),
        lambda: plugrad.linalg.solve_ex(a, plugrad.ones(2, 2), check_errors=True),
        lambda: plugrad.lu(a),
    ):
        with pytest.raises(LinAlgError, match="singular"):
            call()
    infos = plugrad.lu(a, get_infos=True)[2]
    assert infos.tolist() == [0, 2]


def test_without_pivoting_the_factors_multiply_back() -> None:
    # PyTorch factors without pivoting only on CUDA; here on every device.
    a = plugrad.tensor(matrix(2, 4, 4) + 4 * np.eye(4), requires_grad=True)
    P, L, U = plugrad.linalg.lu(a, pivot=False)
    assert (
        P.tolist()
        == plugrad.broadcast_to(plugrad.eye(4, dtype=plugrad.float64), (2, 4, 4)).tolist()
    )
    np.testing.assert_allclose((L @ U).detach().numpy(), a.detach().numpy(), atol=1e-12)
    LU, pivots = plugrad.linalg.lu_factor(a, pivot=False)
    assert pivots.tolist() == [[1, 2, 3, 4]] * 2
    x = plugrad.linalg.lu_solve(LU, pivots, plugrad.ones(2, 4, 1, dtype=plugrad.float64))
    np.testing.assert_allclose((a @ x).detach().numpy(), np.ones((2, 4, 1)), atol=1e-12)
    assert plugrad.autograd.gradcheck(
        lambda m: plugrad.linalg.lu(m, pivot=False).U, (a.detach()[0].requires_grad_(),)
    )


def test_gradients_pass_gradcheck() -> None:
    a = plugrad.tensor(matrix(3, 3), requires_grad=True)
    b = plugrad.tensor(matrix(3, 2), requires_grad=True)
    assert plugrad.autograd.gradcheck(lambda m: plugrad.linalg.lu_factor(m).LU, (a,))

    def solve(m: Any, rhs: Any) -> Any:
        LU, pivots = plugrad.linalg.lu_factor(m)
        return plugrad.linalg.lu_solve(LU, pivots, rhs, adjoint=True)

    assert plugrad.autograd.gradcheck(solve, (a, b))
    assert plugrad.autograd.gradgradcheck(lambda m: plugrad.linalg.inv_ex(m).inverse, (a,))


def test_pytorchs_older_names_and_methods() -> None:
    a, b = matrix(3, 3), matrix(3, 2)
    for lib in (plugrad, torch):
        A, B = lib.tensor(a), lib.tensor(b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # PyTorch's deprecation of these names
            LU, pivots = lib.lu(A)
            via_function = lib.lu_solve(B, LU, pivots)
            via_method = B.lu_solve(*A.lu())
        P, L, U = lib.lu_unpack(LU, pivots)
        data = [via_function, via_method, P @ L @ U]
        if lib is plugrad:
            ours = [to_numpy(x) for x in data]
        else:
            theirs = [to_numpy(x) for x in data]
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine, reference, rtol=1e-12)
    np.testing.assert_allclose(ours[2], a, atol=1e-14)
    LU, pivots = plugrad.linalg.lu_factor(plugrad.tensor(a))
    P, L, U = plugrad.lu_unpack(LU, pivots, unpack_data=False)
    assert L.shape == U.shape == (0,) and P.shape == (3, 3)
    assert plugrad.lu_unpack(LU, pivots, unpack_pivots=False).P.shape == (0,)


EYE, ONES = plugrad.eye(2), plugrad.ones(2, 1)
PIVOTS = plugrad.tensor([1, 2], dtype=plugrad.int32)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: plugrad.linalg.lu_factor(plugrad.ones(3)), ShapeError, "matrix or a batch"),
        (
            lambda: plugrad.linalg.lu_factor(plugrad.ones(2, 2, dtype=plugrad.int64)),
            DtypeError,
            "floating-point or complex",
        ),
        (lambda: plugrad.linalg.lu_factor([[1.0]]), TypeError, "takes a Tensor"),
        (lambda: plugrad.linalg.lu_factor(EYE, pivot=1), TypeError, "pivot"),
        (lambda: plugrad.linalg.lu_solve(EYE, PIVOTS, plugrad.ones(3, 1)), ShapeError, "3 rows"),
        (lambda: plugrad.linalg.lu_solve(EYE, PIVOTS, plugrad.ones(2)), ShapeError, "b\\[:, None"),
        (
            lambda: plugrad.linalg.lu_solve(EYE, plugrad.tensor([1.0, 2.0]), ONES),
            DtypeError,
            "integer tensor",
        ),
        (lambda: plugrad.linalg.lu_solve(EYE, PIVOTS[:1], ONES), ShapeError, "do not go with LU"),
        (lambda: plugrad.linalg.lu_solve(EYE, PIVOTS - 1, ONES), InvalidArgumentError, "1-based"),
        (lambda: plugrad.linalg.lu_solve(plugrad.ones(2, 3), PIVOTS, ONES), ShapeError, "square"),
        (
            lambda: plugrad.linalg.lu_solve(EYE, PIVOTS, plugrad.ones(2, 1, dtype=plugrad.float64)),
            DtypeError,
            "one dtype",
        ),
        (lambda: plugrad.linalg.inv_ex(plugrad.ones(2, 3)), ShapeError, "square"),
        (
            lambda: plugrad.linalg.solve_ex(plugrad.ones(2, 3), plugrad.ones(2)),
            ShapeError,
            "square",
        ),
    ],
)
def test_bad_input_is_refused_clearly(call: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()
