"""plugrad.svd_lowrank and plugrad.pca_lowrank: exact on low-rank matrices, as PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError, DtypeError, InvalidArgumentError, ShapeError


def _low_rank(
    shape: tuple[int, ...], rank: int, seed: int = 0, complex_: bool = False
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    *batch, m, n = shape
    left = rng.standard_normal((*batch, m, rank))
    right = rng.standard_normal((*batch, rank, n))
    if complex_:
        left = left + 1j * rng.standard_normal(left.shape)
        right = right + 1j * rng.standard_normal(right.shape)
    return left @ right


def _rebuilt(U: plugrad.Tensor, S: plugrad.Tensor, V: plugrad.Tensor) -> np.ndarray:
    u, s, v = (t.numpy() for t in (U, S, V))
    return (u * s[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))


@pytest.mark.parametrize(
    ("shape", "rank", "q"),
    [((8, 6), 3, 4), ((6, 8), 3, 3), ((2, 3, 7, 5), 2, 4), ((5, 5), 5, 6), ((9, 4), 1, 1)],
)
def test_svd_lowrank_is_exact_on_a_matrix_of_rank_at_most_q(backend, shape, rank, q):
    plugrad.manual_seed(1)
    a = _low_rank(shape, rank)
    U, S, V = plugrad.svd_lowrank(plugrad.tensor(a), q=q)
    k = min(q, *shape[-2:])
    assert U.shape == (*shape[:-1], k)
    assert S.shape == (*shape[:-2], k)
    assert V.shape == (*shape[:-2], shape[-1], k)
    np.testing.assert_allclose(_rebuilt(U, S, V), a, atol=1e-9)
    exact = np.linalg.svd(a, compute_uv=False)[..., :k]
    np.testing.assert_allclose(S.numpy(), exact, atol=1e-9)
    # orthonormal columns
    u = U.numpy()
    identities = np.broadcast_to(np.eye(k), (*shape[:-2], k, k))
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, identities, atol=1e-9)


def test_svd_lowrank_of_a_complex_matrix_and_with_a_mean():
    plugrad.manual_seed(2)
    a = _low_rank((7, 5), 2, complex_=True)
    U, S, V = plugrad.svd_lowrank(plugrad.tensor(a), q=3)
    assert U.dtype == plugrad.complex128 and S.dtype == plugrad.float64
    np.testing.assert_allclose(_rebuilt(U, S, V), a, atol=1e-9)
    shifted = plugrad.tensor(_low_rank((7, 5), 2) + 3.0)
    U, S, V = plugrad.svd_lowrank(shifted, q=2, M=plugrad.full((1, 5), 3.0, dtype=plugrad.float64))
    np.testing.assert_allclose(_rebuilt(U, S, V), _low_rank((7, 5), 2), atol=1e-9)


def test_svd_lowrank_is_repeatable_under_manual_seed_and_differentiable():
    a = plugrad.tensor(_low_rank((6, 4), 4), requires_grad=True)
    plugrad.manual_seed(3)
    first = plugrad.svd_lowrank(a, q=4)[1]
    plugrad.manual_seed(3)
    second = plugrad.svd_lowrank(a, q=4)[1]
    assert np.array_equal(first.detach().numpy(), second.detach().numpy())
    first.sum().backward()
    # The sum of singular values of a full-rank matrix has the gradient U V^T.
    u, _, vh = np.linalg.svd(a.detach().numpy(), full_matrices=False)
    np.testing.assert_allclose(a.grad.numpy(), u @ vh, atol=1e-8)


def test_pca_lowrank_centers_the_columns_and_finds_the_principal_directions():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    data = rng.standard_normal((200, 3)) @ np.diag([3.0, 1.0, 0.2]) + [5.0, -2.0, 1.0]
    plugrad.manual_seed(4)
    _, S, V = plugrad.pca_lowrank(plugrad.tensor(data), q=2)
    reference = torch.linalg.svdvals(torch.tensor(data - data.mean(0)))[:2].numpy()
    np.testing.assert_allclose(S.numpy(), reference, rtol=1e-3)
    first = V.numpy()[:, 0]
    assert abs(abs(first[0]) - 1) < 1e-2  # the widest axis of the cloud
    _, S_uncentered, _ = plugrad.pca_lowrank(plugrad.tensor(data), q=2, center=False)
    assert S_uncentered.numpy()[0] > S.numpy()[0] * 1.5  # the mean dominates uncentered
    assert plugrad.pca_lowrank(plugrad.tensor(data))[1].shape == (3,)  # q = min(6, m, n)


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: plugrad.svd_lowrank([[1.0]]), ArgumentError, "takes a Tensor as A"),
        (lambda: plugrad.svd_lowrank(plugrad.ones(3)), ShapeError, "(*, m, n)"),
        (lambda: plugrad.svd_lowrank(plugrad.ones((3, 3), dtype=plugrad.int64)), DtypeError,
         "floating or complex"),
        (lambda: plugrad.svd_lowrank(plugrad.ones((4, 5)), q=-1), InvalidArgumentError,
         "q must be non-negative"),
        (lambda: plugrad.svd_lowrank(plugrad.ones((4, 5)), q=2.0), ArgumentError,
         "q must be an int"),
        (lambda: plugrad.svd_lowrank(plugrad.ones((4, 5)), niter=-1), InvalidArgumentError,
         "niter must be non-negative"),
        (lambda: plugrad.svd_lowrank(plugrad.ones((4, 5)), M=plugrad.ones(3)), ShapeError,
         "does not broadcast"),
        (lambda: plugrad.svd_lowrank(plugrad.ones((4, 5)), M=1.0), ArgumentError, "as M"),
        (lambda: plugrad.pca_lowrank(plugrad.ones((20, 5)), q=7), InvalidArgumentError,
         "at most min(m, n) = 5"),
    ],
)  # fmt: skip
def test_bad_arguments_get_typed_errors(call, error, words):
    with pytest.raises(error) as raised:
        call()
    assert words in str(raised.value)
