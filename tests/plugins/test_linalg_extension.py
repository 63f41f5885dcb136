"""The op table of plugins/linalg_extension.py (OpTests runs every check on each row).

Decompositions are checked through sign-invariant functions of their outputs
(singular vectors and eigenvectors are unique only up to sign), and symmetric
inputs are built inside the programs, so that finite differences see the same
function the gradient describes.
"""

from __future__ import annotations

import math
import types

import numpy as np
import pytest

import plugrad
from plugrad.testing import OpCase, OpTests

P = plugrad
L = plugrad.linalg
LOOSE = {"rtol": 1e-4, "atol": 1e-5, "rtol32": 1e-4}


def well_conditioned(*shapes):
    def make(seed):
        rng = np.random.default_rng(seed)
        out = []
        for shape in shapes:
            a = rng.uniform(-1, 1, size=shape)
            if len(shape) >= 2 and shape[-1] == shape[-2]:
                a = a + 3 * np.eye(shape[-1])
            out.append(a)
        return out

    return make


def rotation_like(seed):
    """A matrix with a complex-conjugate pair of eigenvalues and a real one."""
    rng = np.random.default_rng(seed)
    a = np.array([[0.5, -2.0, 0.1], [1.5, 0.3, 0.2], [0.0, 0.4, -1.0]])
    return [a + rng.uniform(-0.1, 0.1, size=(3, 3))]


def spd(p, a):
    """A symmetric positive-definite matrix built from ``a`` (with plugrad or numpy)."""
    if p is P:
        return a @ a.mT + 2.0 * P.eye(a.shape[-1], dtype=a.dtype)
    return a @ np.swapaxes(a, -1, -2) + 2.0 * np.eye(a.shape[-1], dtype=a.dtype)


def np_sym(a):
    return a + np.swapaxes(a, -1, -2)


def flat(p, *parts):
    if p is P:
        return P.concat([P.reshape(t, (-1,)) for t in parts])
    return np.concatenate([np.reshape(t, (-1,)) for t in parts])


# Q and R, compared whole (plugrad's qr fixes the signs as LAPACK does).
QR_PROGRAM = (lambda a: flat(P, *L.qr(a)), lambda a: flat(np, *np.linalg.qr(a)))


def svd_program(full_matrices):
    def program(a):
        u, s, vh = L.svd(a, full_matrices=full_matrices)
        k = s.shape[-1]
        return flat(P, s, (u * u)[..., :k], vh[..., :k, :] * vh[..., :k, :])

    def reference(a):
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
        k = s.shape[-1]
        return flat(np, s, (u * u)[..., :k], vh[..., :k, :] ** 2)

    return program, reference


# -- complex inputs, built from two real ones; outputs seen through real(y) + 2 imag(y).


def complex_from(a, b):
    return a + b * 1j


def real_view(p, y):
    return p.real(y) + 2.0 * p.imag(y)


def hermitian_pd(p, z):
    """A Hermitian positive-definite matrix built from the complex ``z``."""
    zh = p.conj(z).mT if p is P else np.conj(np.swapaxes(z, -1, -2))
    eye = P.eye(z.shape[-1], dtype=z.dtype) if p is P else np.eye(z.shape[-1], dtype=z.dtype)
    return z @ zh + 2.0 * eye


def complex_case(op, id, program, shapes, **kw):
    """A row whose program ``program(p, z)`` takes a complex input made of two real inputs."""
    return OpCase(
        op,
        id,
        lambda a, b: program(P, complex_from(a, b)),
        lambda a, b: program(np, complex_from(a, b)),
        (shapes, shapes),
        **kw,
    )


def _complex_cholesky(upper):
    def program(p, z):
        if p is P:
            return real_view(P, L.cholesky(hermitian_pd(P, z), upper=upper))
        factor = np.linalg.cholesky(hermitian_pd(np, z))
        return real_view(np, np.conj(np.swapaxes(factor, -1, -2)) if upper else factor)

    return program


def _complex_qr(p, z):
    q, r = L.qr(z) if p is P else np.linalg.qr(z)
    return flat(p, real_view(p, q), real_view(p, r))


def _complex_svd(full_matrices):
    # Phase-invariant: S, |U|^2, and U * conj(V) (each u_i, v_i pair shares one phase).
    def program(p, z):
        svd = L.svd if p is P else np.linalg.svd
        u, s, vh = svd(z, full_matrices=full_matrices)
        k = s.shape[-1]
        u, vh = u[..., :k], vh[..., :k, :]
        paired = u[..., :k, :] * vh.mT[..., :k, :] if p is P else u[:k] * vh.T[:k]
        return flat(p, s, p.abs(u) ** 2, real_view(p, paired))

    return program


def _complex_eigh(p, z):
    # Phase-invariant: eigenvalues, |V|^2 and V * conj(first row of V).
    if p is P:
        values, vectors = L.eigh(z + P.conj(z).mT)
        relative = vectors * P.conj(vectors[..., :1, :])
    else:
        values, vectors = np.linalg.eigh(z + np.conj(np.swapaxes(z, -1, -2)))
        relative = vectors * np.conj(vectors[..., :1, :])
    return flat(p, values, p.abs(vectors) ** 2, real_view(p, relative))


def _complex_slogdet(p, z):
    n = z.shape[-1]
    z = z + 3.0 * (P.eye(n, dtype=z.dtype) if p is P else np.eye(n, dtype=z.dtype))
    sign, logabsdet = L.slogdet(z) if p is P else np.linalg.slogdet(z)
    return real_view(p, sign) + logabsdet


COMPLEX_CASES = [
    complex_case("cholesky", "cholesky-complex", _complex_cholesky(False), (3, 3), **LOOSE),
    complex_case("cholesky", "cholesky-complex-upper", _complex_cholesky(True), (2, 2, 2), **LOOSE),
    complex_case("qr", "qr-complex-tall", _complex_qr, (4, 3), **LOOSE),
    complex_case("qr", "qr-complex-wide", _complex_qr, (2, 3), **LOOSE),
    complex_case("svd", "svd-complex", _complex_svd(False), (3, 3), **LOOSE),
    complex_case("svd", "svd-complex-wide-full", _complex_svd(True), (2, 3), **LOOSE),
    complex_case("svd", "svd-complex-tall", _complex_svd(False), (4, 2), **LOOSE),
    complex_case("eigh", "eigh-complex", _complex_eigh, (3, 3), **LOOSE),
    complex_case("slogdet", "slogdet-complex", _complex_slogdet, (3, 3), **LOOSE),
    *[
        complex_case(
            "matrix_norm",
            f"matrix_norm-complex-{order}",
            lambda p, z, order=order: (L.matrix_norm if p is P else np_matrix_norm)(z, ord=order),
            (3, 4),
            **LOOSE,
        )
        for order in ("fro", "nuc", 2, 1, np.inf)
    ],
    *[
        complex_case(
            "vector_norm",
            f"vector_norm-complex-{order}",
            lambda p, z, order=order: (L.vector_norm if p is P else np_vector_norm)(
                z, axis=1, ord=order
            ),
            (3, 4),
            **LOOSE,
        )
        for order in (2, 1, np.inf, 3, 0.5)
    ],
]


def np_matrix_norm(a, ord="fro", keepdims=False):
    return np.linalg.norm(a, ord=ord, axis=(-2, -1), keepdims=keepdims)


def np_vector_norm(a, ord=2, axis=None, keepdims=False):
    if axis is None:
        out = np.linalg.norm(a.ravel(), ord=ord)
        return np.reshape(out, (1,) * a.ndim) if keepdims else out
    return np.linalg.norm(a, ord=ord, axis=axis, keepdims=keepdims)


def np_trace_offset(a, offset):
    return np.trace(a, offset=offset, axis1=-2, axis2=-1)


CASES = [
    OpCase(
        "cholesky",
        "cholesky",
        lambda a: L.cholesky(spd(P, a)),
        lambda a: np.linalg.cholesky(spd(np, a)),
        ((3, 3),),
        **LOOSE,
    ),
    OpCase(
        "cholesky",
        "cholesky-upper-batch",
        lambda a: L.cholesky(spd(P, a), upper=True),
        lambda a: np.swapaxes(np.linalg.cholesky(spd(np, a)), -1, -2),
        ((2, 3, 3),),
        **LOOSE,
    ),
    OpCase("det", "det", L.det, np.linalg.det, inputs=well_conditioned((3, 3)), **LOOSE),
    OpCase("det", "det-batch", L.det, np.linalg.det, inputs=well_conditioned((2, 2, 2)), **LOOSE),
    OpCase(
        "adjugate",
        "adjugate-batch",
        P.ops.adjugate,
        lambda a: np.linalg.det(a)[..., None, None] * np.linalg.inv(a),
        inputs=well_conditioned((2, 3, 3)),
        **LOOSE,
    ),
    OpCase(
        "slogdet",
        "slogdet",
        lambda a: L.slogdet(a).logabsdet * L.slogdet(a).sign,
        lambda a: np.linalg.slogdet(a)[1] * np.linalg.slogdet(a)[0],
        inputs=well_conditioned((3, 3)),
        **LOOSE,
    ),
    OpCase("inv", "inv", L.inv, np.linalg.inv, inputs=well_conditioned((3, 3)), **LOOSE),
    OpCase(
        "solve",
        "solve-matrix",
        L.solve,
        np.linalg.solve,
        inputs=well_conditioned((3, 3), (3, 2)),
        **LOOSE,
    ),
    OpCase(
        "solve",
        "solve-vector",
        L.solve,
        lambda a, b: np.linalg.solve(a, b[:, None])[:, 0],
        inputs=well_conditioned((3, 3), (3,)),
        **LOOSE,
    ),
    OpCase(
        "solve",
        "solve-broadcast",
        L.solve,
        np.linalg.solve,
        inputs=well_conditioned((2, 3, 3), (3, 1)),
        **LOOSE,
    ),
    OpCase("qr", "qr-tall", *QR_PROGRAM, ((4, 3),), **LOOSE),
    OpCase("qr", "qr-wide", *QR_PROGRAM, ((2, 4),), **LOOSE),
    OpCase("svd", "svd-square", *svd_program(True), ((3, 3),), **LOOSE),
    OpCase("svd", "svd-tall", *svd_program(False), ((4, 3),), **LOOSE),
    OpCase("svd", "svd-wide-full", *svd_program(True), ((2, 4),), **LOOSE),
    OpCase(
        "svdvals",
        "svdvals",
        L.svdvals,
        lambda a: np.linalg.svd(a, compute_uv=False),
        ((3, 4),),
        **LOOSE,
    ),
    OpCase(
        "eigh",
        "eigh",
        lambda a: flat(P, L.eigh(a + a.mT).eigenvalues, L.eigh(a + a.mT).eigenvectors ** 2),
        lambda a: flat(np, np.linalg.eigh(np_sym(a))[0], np.linalg.eigh(np_sym(a))[1] ** 2),
        ((3, 3),),
        **LOOSE,
    ),
    OpCase(
        "eigvalsh",
        "eigvalsh",
        lambda a: L.eigvalsh(a + a.mT),
        lambda a: np.linalg.eigvalsh(np_sym(a)),
        ((2, 3, 3),),
        **LOOSE,
    ),
    OpCase(
        "eig",
        "eig",
        lambda a: flat(P, P.real(L.eig(a).eigenvalues), P.abs(L.eig(a).eigenvectors) ** 2),
        lambda a: flat(np, np.linalg.eig(a)[0].real, np.abs(np.linalg.eig(a)[1]) ** 2),
        inputs=well_conditioned((3, 3)),
        **LOOSE,
    ),
    OpCase(
        "eigvals",
        "eigvals-complex-pairs",
        lambda a: flat(P, P.real(L.eigvals(a)), P.imag(L.eigvals(a))),
        lambda a: flat(np, np.linalg.eigvals(a).real, np.linalg.eigvals(a).imag),
        inputs=rotation_like,
        **LOOSE,
    ),
    OpCase("pinv", "pinv-tall", L.pinv, np.linalg.pinv, ((4, 2),), **LOOSE),
    OpCase("pinv", "pinv-wide", L.pinv, np.linalg.pinv, ((2, 3),), **LOOSE),
    OpCase(
        "matrix_power",
        "matrix_power-3",
        lambda a: L.matrix_power(a, 3),
        lambda a: np.linalg.matrix_power(a, 3),
        ((3, 3),),
        ((-1.0, 1.0),),
    ),
    OpCase(
        "matrix_power",
        "matrix_power-negative",
        lambda a: L.matrix_power(a, -2),
        lambda a: np.linalg.matrix_power(a, -2),
        inputs=well_conditioned((3, 3)),
        **LOOSE,
    ),
    OpCase(
        "matrix_power",
        "matrix_power-0",
        lambda a: L.matrix_power(a, 0) * a,
        lambda a: np.linalg.matrix_power(a, 0) * a,
        ((2, 2),),
    ),
    OpCase("matrix_norm", "matrix_norm-fro", L.matrix_norm, np_matrix_norm, ((2, 3, 4),)),
    *[
        OpCase(
            "matrix_norm",
            f"matrix_norm-{order}",
            lambda a, order=order: L.matrix_norm(a, ord=order, keepdims=True),
            lambda a, order=order: np_matrix_norm(a, ord=order, keepdims=True),
            ((3, 4),),
            **LOOSE,
        )
        for order in ("nuc", 2, -2, 1, -1, np.inf, -np.inf)
    ],
    OpCase("vector_norm", "vector_norm", L.vector_norm, np_vector_norm, ((3, 4),)),
    *[
        OpCase(
            "vector_norm",
            f"vector_norm-{order}",
            lambda a, order=order: L.vector_norm(a, axis=1, ord=order),
            lambda a, order=order: np_vector_norm(a, ord=order, axis=1),
            ((3, 4),),
            **LOOSE,
        )
        for order in (1, np.inf, -np.inf, 3, 1.5, 0.5)
    ],
    OpCase(
        "vector_norm",
        "vector_norm-axes-keepdims",
        lambda a: L.vector_norm(a, axis=(0, 2), keepdims=True),
        lambda a: np.sqrt(np.sum(a * a, axis=(0, 2), keepdims=True)),
        ((2, 3, 2),),
    ),
    OpCase("cross", "cross", L.cross, np.cross, ((4, 3), (3,))),
    OpCase(
        "cross",
        "cross-axis0",
        lambda a, b: L.cross(a, b, axis=0),
        lambda a, b: np.cross(a, b, axis=0),
        ((3, 2), (3, 2)),
    ),
    OpCase(
        "cross",
        "cross-axis1-broadcast",
        lambda a, b: L.cross(a, b, axis=1),
        lambda a, b: np.cross(a, np.broadcast_to(b, a.shape), axis=1),
        ((2, 3, 2), (3, 2)),
    ),
    OpCase("outer", "outer", L.outer, np.outer, ((3,), (4,))),
    OpCase("trace", "trace", L.trace, lambda a: np_trace_offset(a, 0), ((2, 3, 3),)),
    OpCase(
        "trace",
        "trace-offset",
        lambda a: L.trace(a, offset=-1),
        lambda a: np_trace_offset(a, -1),
        ((3, 4),),
    ),
    *(
        OpCase(
            "diagonal",
            id,
            lambda a, offset=offset: L.diagonal(a, offset=offset),
            lambda a, offset=offset: np.diagonal(a, offset=offset, axis1=-2, axis2=-1),
            (shape,),
        )
        for id, offset, shape in [
            ("diagonal-offset", 1, (2, 3, 4)),
            ("diagonal-below", -2, (4, 3)),
            ("diagonal-past-the-corner", 4, (3, 4)),
        ]
    ),
]

NO_GRAD = [
    OpCase(
        "matrix_rank",
        "matrix_rank",
        L.matrix_rank,
        np.linalg.matrix_rank,
        inputs=[np.array([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]])],
    ),
]


class TestLinalgOps(OpTests):
    cases = (*CASES, *COMPLEX_CASES, *NO_GRAD)


def test_linalg_functions_live_in_the_linalg_namespace() -> None:
    assert L.det.__module__ == "plugrad.linalg"
    assert plugrad.ops.det is L.det
    # plugrad.det is PyTorch's name for it, a function of its own over the op.
    assert plugrad.det is not L.det and plugrad.det.__module__ == "plugrad.pytorch_linalg_names"
    assert L.matmul is plugrad.matmul and L.vecdot is plugrad.vecdot
    assert "tensordot" in dir(L)


def test_eigh_with_repeated_eigenvalues_gives_exact_eigenvalue_gradients() -> None:
    # Two equal eigenvalues: eigenvectors are not unique, but a loss of the
    # eigenvalues (or of the eigenspaces) still has an exact, finite gradient.
    a = plugrad.tensor(np.diag([1.0, 1.0, 3.0]), dtype=plugrad.float64, requires_grad=True)
    values, _ = L.eigh(a)
    (values * plugrad.tensor([1.0, 2.0, 3.0], dtype=plugrad.float64)).sum().backward()
    assert np.all(np.isfinite(a.grad.numpy()))
    np.testing.assert_allclose(np.trace(a.grad.numpy()), 6.0)


def _finite_difference(f, x: np.ndarray, step: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        bump = np.zeros_like(x)
        bump[index] = step
        grad[index] = (f(x + bump) - f(x - bump)) / (2 * step)
    return grad


REPEATED = np.diag([1.0, 1.0, 2.0, 3.0])
ROTATED = (lambda q: q @ REPEATED @ q.T)(
    np.linalg.qr(np.random.default_rng(3).normal(size=(4, 4)))[0]
)
WEIGHTS = np.random.default_rng(4).normal(size=(4, 4))


@pytest.mark.parametrize("matrix", [REPEATED, ROTATED], ids=["exactly", "up to rounding"])
def test_a_projector_onto_a_repeated_eigenspace_has_the_exact_gradient(matrix) -> None:
    # Its vectors read only through their span: the 0 / 0 terms tend to 0. Rotated, the two
    # values differ by rounding only and divided noise by 2e-16 (an error of 0.45).
    def projector_loss(a: np.ndarray) -> float:
        vectors = np.linalg.eigh((a + a.T) / 2)[1][:, :2]
        return float(np.sum(vectors @ vectors.T * WEIGHTS))

    x = plugrad.tensor(matrix, requires_grad=True)
    vectors = L.eigh((x + x.mT) / 2).eigenvectors[:, :2]
    (vectors @ vectors.mT * plugrad.tensor(WEIGHTS)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _finite_difference(projector_loss, matrix),
                               atol=1e-6)  # fmt: skip


@pytest.mark.parametrize("matrix", [REPEATED, ROTATED, np.eye(4)], ids=["diag", "rotated", "eye"])
def test_a_matrix_function_of_repeated_eigenvalues_gets_nan_not_a_wrong_gradient(matrix):
    # V f(L) V^T and U S Vh read the values and the vectors of a repeated value: the limit of
    # the 0 / 0 terms is f'(value), which backward cannot know. They were dropped: a finite
    # gradient 0.47 off (1.3 for the reconstruction of the identity); PyTorch's is nan too.
    x = plugrad.tensor(matrix, requires_grad=True)
    values, vectors = L.eigh(x)
    (vectors * plugrad.sin(values) @ vectors.mT * plugrad.tensor(WEIGHTS)).sum().backward()
    assert np.isnan(x.grad.numpy()).any()
    x = plugrad.tensor(matrix, requires_grad=True)
    u, s, vh = L.svd(x)
    (u * s @ vh * plugrad.tensor(WEIGHTS)).sum().backward()
    assert np.isnan(x.grad.numpy()).any()
    # Distinct values keep an exact gradient (the reconstruction's is the weights themselves).
    x = plugrad.tensor(np.diag([1.0, 2.0, 3.0, 4.0]) + 0.1, requires_grad=True)
    u, s, vh = L.svd(x)
    (u * s @ vh * plugrad.tensor(WEIGHTS)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), WEIGHTS, atol=1e-10)


@pytest.mark.parametrize("matrix", [REPEATED, ROTATED], ids=["exactly", "up to rounding"])
def test_a_loss_of_one_vector_of_a_repeated_value_has_no_gradient_nan_not_a_number(matrix):
    # Which vectors span a repeated value's space is arbitrary: a loss of one of them (not of
    # their span) has no derivative. Its 0 / 0 terms were dropped: finite, made-up numbers.
    form = plugrad.tensor(WEIGHTS + WEIGHTS.T)

    def loss(v: plugrad.Tensor) -> plugrad.Tensor:
        return v @ form @ v  # of one vector, whatever its sign

    x = plugrad.tensor(matrix, requires_grad=True)
    loss(L.eigh(x).eigenvectors[:, 0]).backward()
    assert np.isnan(x.grad.numpy()).any()
    x = plugrad.tensor(matrix, requires_grad=True)
    loss(L.svd(x).U[:, 2]).backward()  # the singular values 1, 1 come last
    assert np.isnan(x.grad.numpy()).any()
    # A vector of a value not repeated keeps its gradient.
    x = plugrad.tensor(matrix, requires_grad=True)
    loss(L.eigh(x).eigenvectors[:, 3]).backward()
    assert np.isfinite(x.grad.numpy()).all()


@pytest.mark.parametrize("matrix", [REPEATED, ROTATED], ids=["exactly", "up to rounding"])
def test_a_loss_of_one_eigenvector_of_eig_of_a_repeated_value_has_no_gradient(matrix):
    x = plugrad.tensor(matrix, requires_grad=True)
    values, vectors = L.eig(x)
    # a vector of the value 1 (twice): LAPACK builds order the values differently
    vector = vectors[:, int(np.argmin(np.abs(values.detach().numpy() - 1.0)))]
    form = plugrad.astype(plugrad.tensor(WEIGHTS + WEIGHTS.T), vector.dtype)
    plugrad.real(plugrad.conj(vector) @ form @ vector).backward()
    assert np.isnan(x.grad.numpy()).any()


@pytest.mark.parametrize("matrix", [REPEATED, ROTATED], ids=["exactly", "up to rounding"])
def test_svd_vectors_of_repeated_values_read_through_their_spans_have_the_exact_gradient(matrix):
    # U_k Vh_k of the singular values 2 and 3 ... and of 1, 1: the pair's quotient was dropped
    # whole at a repeated value, where only half of it is 0 / 0 (0.397 for 0.628).
    def loss(a: np.ndarray) -> float:
        u, _, vh = np.linalg.svd(a)
        return float(np.sum(u[:, 2:] @ vh[2:] * WEIGHTS))

    x = plugrad.tensor(matrix, requires_grad=True)
    u, _, vh = L.svd(x)
    (u[:, 2:] @ vh[2:] * plugrad.tensor(WEIGHTS)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _finite_difference(loss, matrix), atol=1e-6)


def test_svd_of_a_rank_deficient_matrix_has_finite_singular_value_gradients() -> None:
    a = plugrad.tensor([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]], dtype=plugrad.float64)
    a.requires_grad_()
    L.svd(a, full_matrices=False).S.sum().backward()
    # The nuclear norm has a kink here; like PyTorch, plugrad returns the subgradient U @ Vh.
    u, s, vh = np.linalg.svd(a.detach().numpy(), full_matrices=False)
    assert s[-1] < 1e-12
    np.testing.assert_allclose(a.grad.numpy(), u @ vh, atol=1e-12)


ZERO_SINGULAR_VALUES = {
    "zero": np.zeros((3, 3)),
    "diag(1, 0, 0)": np.diag([1.0, 0.0, 0.0]),
    "rank 1, 4x3": np.outer([1.0, 0.0, 2.0, 0.0], [0.0, 3.0, 0.0]),
    "tall, one zero": np.eye(4, 3) @ np.diag([2.0, 1.0, 0.0]),
    "wide, one zero": np.diag([2.0, 1.0, 0.0]) @ np.eye(3, 4),
    "complex, one zero": np.diag([2.0, 1.0, 0.0]) * (1 + 1j),
    "complex zero": np.zeros((3, 3), dtype=complex),
}


@pytest.mark.parametrize("matrix", ZERO_SINGULAR_VALUES.values(), ids=ZERO_SINGULAR_VALUES.keys())
def test_svd_reconstruction_at_exactly_zero_singular_values_is_nan_not_a_wrong_gradient(matrix):
    # U S Vh is the input, so its true gradient is the weights; S = 0 multiplies the vectors
    # away, and the 0 / 0 terms were dropped: the zero matrix's gradient was diag(weights),
    # diag(1, 0, 0)'s lost entries (1, 2) and (2, 1). PyTorch's is nan too.
    weights = np.random.default_rng(5).normal(size=matrix.shape).astype(matrix.dtype)
    x = plugrad.tensor(matrix, requires_grad=True)
    u, s, vh = L.svd(x, full_matrices=False)
    reconstruction = (u * plugrad.astype(s, u.dtype)) @ vh
    plugrad.real(reconstruction * plugrad.tensor(weights)).sum().backward()
    assert np.isnan(x.grad.numpy()).all()


def test_svd_reconstruction_at_a_zero_singular_value_is_nan_only_in_its_own_matrix() -> None:
    weights = np.random.default_rng(6).normal(size=(2, 3, 3))
    x = plugrad.tensor(np.stack([np.diag([1.0, 0.0, 0.0]), np.diag([3.0, 2.0, 1.0])]))
    x.requires_grad_()
    u, s, vh = L.svd(x)
    ((u * s[..., None, :]) @ vh * plugrad.tensor(weights)).sum().backward()
    assert np.isnan(x.grad.numpy()[0]).all()
    np.testing.assert_allclose(x.grad.numpy()[1], weights[1], atol=1e-12)


@pytest.mark.parametrize(
    "matrix",
    [np.diag([1.0, 0.0, 0.0]), np.outer([1.0, 0.0, 2.0, 0.0], [0.0, 3.0, 0.0])],
    ids=["diag(1, 0, 0)", "rank 1, 4x3"],
)
def test_svd_losses_away_from_zero_singular_values_keep_their_exact_gradient(matrix) -> None:
    # The best rank-1 approximation and the largest singular value read no zero value: the
    # pairs of zero values have nothing to divide, and the gradient is exact there.
    def best_rank_one(a: np.ndarray) -> float:
        u, s, vh = np.linalg.svd(a)
        return float(np.sum(s[0] * np.outer(u[:, 0], vh[0]) * weights))

    weights = np.random.default_rng(7).normal(size=matrix.shape)
    x = plugrad.tensor(matrix, requires_grad=True)
    u, s, vh = L.svd(x, full_matrices=False)
    ((u[:, :1] * s[:1]) @ vh[:1] * plugrad.tensor(weights)).sum().backward()
    expected = _finite_difference(best_rank_one, matrix)
    np.testing.assert_allclose(x.grad.numpy(), expected, atol=1e-6)
    x = plugrad.tensor(matrix, requires_grad=True)
    L.svd(x).S[0].backward()
    largest = _finite_difference(lambda a: float(np.linalg.svd(a)[1][0]), matrix)
    np.testing.assert_allclose(x.grad.numpy(), largest, atol=1e-6)


def test_svd_reconstruction_at_one_zero_singular_value_of_a_real_square_matrix_is_exact():
    weights = np.random.default_rng(8).normal(size=(3, 3))
    x = plugrad.tensor(np.diag([2.0, 1.0, 0.0]), requires_grad=True)
    u, s, vh = L.svd(x)
    ((u * s) @ vh * plugrad.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), weights, atol=1e-12)


def test_functions_of_singular_values_alone_stay_finite_at_the_zero_matrix() -> None:
    # svdvals and the nuclear norm: PyTorch's subgradient U @ diag(g) @ Vh.
    x = plugrad.tensor(np.zeros((3, 3)), requires_grad=True)
    (L.svdvals(x).sum() + L.matrix_norm(x, ord="nuc") + L.matrix_norm(x, ord=2)).backward()
    assert np.isfinite(x.grad.numpy()).all()
    x = plugrad.tensor(np.diag([1.0, 0.0, 0.0]), requires_grad=True)
    L.pinv(x).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


def test_qr_complete_of_a_tall_matrix_is_not_differentiable() -> None:
    a = plugrad.tensor(np.ones((3, 2)) + np.eye(3, 2), requires_grad=True)
    q, r = L.qr(a, mode="complete")
    with pytest.raises(plugrad.errors.BackwardError, match="mode='reduced'"):
        (q.sum() + r.sum()).backward()


LINALG_VS_TORCH = ["det", "inv", "slogdet", "qr", "svd", "eigh", "eig", "pinv", "cholesky"]


@pytest.mark.parametrize("name", LINALG_VS_TORCH)
def test_linalg_gradients_agree_with_pytorch(name: str) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    a = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    w = rng.normal(size=(3, 3))

    def loss(lib, linalg, x, weights):
        if name == "slogdet":
            return linalg.slogdet(x)[1] * 2.0
        if name == "qr":
            q, r = linalg.qr(x)
            return (q * weights).sum() + (r * weights).sum()
        if name == "svd":
            u, s, vh = linalg.svd(x)
            return (s * weights[0]).sum() + ((u * u) * weights).sum() + ((vh * vh) * weights).sum()
        if name == "eigh":
            values, vectors = linalg.eigh(x + x.mT)
            return (values * weights[0]).sum() + ((vectors * vectors) * weights).sum()
        if name == "eig":
            values, vectors = linalg.eig(x)
            return (lib.imag(values) * weights[0]).sum() + (lib.abs(vectors) ** 2 * weights).sum()
        if name == "cholesky":
            return (linalg.cholesky(x @ x.mT) * weights).sum()
        out = getattr(linalg, name)(x)
        return (out * (weights if out.ndim else 1.0)).sum()

    x = plugrad.asarray(a, requires_grad=True)
    loss(plugrad, L, x, plugrad.asarray(w)).backward()
    t = torch.tensor(a, requires_grad=True)
    loss(torch, torch.linalg, t, torch.tensor(w)).backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-10)


def _complex_losses(lib, linalg, w):
    """Real losses of complex matrices; phase-invariant where the outputs have a free phase."""
    re, eye = lib.real, (P.eye if lib is P else lambda n, dtype: torch_eye(n, dtype))

    def hermitian(x):
        return x @ lib.conj(x).mT + 2.0 * eye(x.shape[-1], dtype=x.dtype)

    def svd(full_matrices):
        def loss(x):
            u, s, vh = linalg.svd(x, full_matrices=full_matrices)
            k = s.shape[-1]
            u, vh = u[..., :k], vh[..., :k, :]
            paired = re(u[:k] * vh.mT[:k] * w[:k, :k]).sum()
            return (s * s).sum() + paired + (lib.abs(u) ** 2 * re(w[:, :k])).sum()

        return loss

    def eigh(x):
        values, vectors = linalg.eigh(x + lib.conj(x).mT)
        relative = vectors * lib.conj(vectors[:1, :])
        return (values * re(w[0])).sum() + re(relative * w).sum() + lib.imag(relative).sum()

    def qr(x):
        q, r = linalg.qr(x)
        return re(q * w[:, : q.shape[1]]).sum() + lib.imag(r * w[: r.shape[0]]).sum()

    def slogdet(x):
        sign, logabsdet = linalg.slogdet(x)
        return 2.0 * logabsdet + 3.0 * re(sign) - 5.0 * lib.imag(sign)

    return {
        "cholesky": lambda x: re(linalg.cholesky(hermitian(x)) * w).sum(),
        "cholesky-upper": lambda x: lib.imag(linalg.cholesky(hermitian(x), upper=True) * w).sum(),
        "qr": qr,
        "svd": svd(False),
        "svd-full": svd(True),
        "eigh": eigh,
        "eigvalsh": lambda x: (linalg.eigvalsh(x + lib.conj(x).mT) * re(w[0])).sum(),
        "svdvals": lambda x: (linalg.svdvals(x) * re(w[0, : min(x.shape)])).sum(),
        "slogdet": slogdet,
        "det": lambda x: re(linalg.det(x) * w[0, 0]),
        "matrix_norm-nuc": lambda x: linalg.matrix_norm(x, ord="nuc"),
        "matrix_norm-2": lambda x: linalg.matrix_norm(x, ord=2),
        "matrix_norm-1": lambda x: linalg.matrix_norm(x, ord=1),
        "matrix_norm-fro": lambda x: linalg.matrix_norm(x),
        "vector_norm-2": lambda x: (linalg.vector_norm(x, axis=-1) * re(w[:, 0])).sum(),
        "vector_norm-inf": lambda x: linalg.vector_norm(x, ord=float("inf")),
        "vector_norm-3": lambda x: linalg.vector_norm(x, ord=3),
    }


def torch_eye(n, dtype):
    import torch

    return torch.eye(n, dtype=dtype)


def _torch_linalg_module():
    import torch

    linalg = types.SimpleNamespace(**vars(torch.linalg))
    # torch spells the standard's `axis` as `dim`.
    linalg.vector_norm = lambda x, axis=None, ord=2: torch.linalg.vector_norm(x, ord=ord, dim=axis)
    return linalg


COMPLEX_VS_TORCH = list(_complex_losses(P, L, None))


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)], ids=["square", "tall", "wide"])
@pytest.mark.parametrize("name", COMPLEX_VS_TORCH)
def test_complex_linalg_gradients_follow_pytorch(name: str, shape) -> None:
    # PyTorch's convention: the gradient with respect to z is the conjugate Wirtinger
    # derivative (d/dRe + i d/dIm of the real loss).
    torch = pytest.importorskip("torch")
    square_only = ("cholesky", "eigh", "eigvalsh", "slogdet", "det")
    if shape[0] != shape[1] and name.startswith(square_only):
        pytest.skip(f"{name} takes square matrices")
    rng = np.random.default_rng(11)
    z = rng.normal(size=shape) + 1j * rng.normal(size=shape) + 2.0 * np.eye(*shape)
    w = rng.normal(size=shape) + 1j * rng.normal(size=shape)
    x = plugrad.asarray(z, requires_grad=True)
    _complex_losses(P, L, plugrad.asarray(w))[name](x).backward()
    t = torch.tensor(z, requires_grad=True)
    _complex_losses(torch, _torch_linalg_module(), torch.tensor(w))[name](t).backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize(
    ("function", "loss"),
    [("eig", lambda a: L.eig(a).eigenvectors[:, 0].real.sum()),
     ("eigh", lambda a: L.eigh(a + a.mH).eigenvectors[:, 0].real.sum()),
     ("svd", lambda a: L.svd(a).U[:, 0].real.sum()),
     ("svd", lambda a: L.svd(a).Vh[0].imag.sum())],
)  # fmt: skip
def test_a_loss_of_the_free_phase_of_complex_vectors_is_refused(function, loss) -> None:
    # Such a loss has no gradient (v * e^(i phi) is as good a vector); the rule returned a
    # number that finite differences did not confirm, silently. PyTorch refuses it too.
    rng = np.random.default_rng(3)
    a = P.tensor(rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3)), requires_grad=True)
    out = loss(a)
    with pytest.raises(plugrad.errors.BackwardError, match=rf"{function}\(\) backward.*phase"):
        out.backward()
    assert a.grad is None
    # A loss independent of the phase gets its gradient, as before.
    P.sum(P.abs(L.svd(a).U) ** 2 * P.arange(3.0)).backward()
    assert a.grad is not None and bool(P.all(P.isfinite(a.grad)))


def test_singular_matrices_give_an_infinite_condition_and_a_named_backward_error() -> None:
    # cond() raised from inv() (PyTorch's is inf); slogdet's backward raised NumPy's own
    # LinAlgError naming no op.
    singular = [[1.0, 2.0], [2.0, 4.0]]
    for p in ("fro", 1, float("inf")):
        assert L.cond(P.tensor(singular, dtype=P.float64), p).item() == float("inf")
        assert L.cond(P.tensor([singular, [[1.0, 0.0], [0.0, 2.0]]]), p).tolist()[0] == float("inf")
    x = P.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], requires_grad=True)
    with pytest.raises(plugrad.errors.LinAlgError, match="SlogdetBackward"):
        L.slogdet(x)[1].backward()


def _with_singular_values(rows: int, cols: int, values: list[float], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    left = np.linalg.qr(rng.standard_normal((rows, rows)))[0][:, : len(values)]
    right = np.linalg.qr(rng.standard_normal((cols, cols)))[0][:, : len(values)]
    return left @ np.diag(values) @ right.T


PINV_CUTS = {
    # a tolerance that cuts a singular value which is not 0: the gradient is the truncation's
    "rtol cuts 0.2 (tall)": ((4, 3), lambda x: plugrad.linalg.pinv(x, rtol=0.5)),
    "rtol cuts 0.2 (wide)": ((3, 4), lambda x: plugrad.linalg.pinv(x, rtol=0.5)),
    "PyTorch's atol cuts 0.2": ((3, 3), lambda x: plugrad.linalg.pinv(x, atol=0.3)),
    "lstsq rcond cuts 0.2": (
        (4, 3),
        lambda x: (
            plugrad.linalg.lstsq(x, plugrad.ones((4, 2), dtype=plugrad.float64), rcond=0.5).solution
        ),
    ),
}


@pytest.mark.parametrize("name", PINV_CUTS)
def test_pinv_gradient_through_a_cut_singular_value_is_the_truncations(name: str) -> None:
    # The constant-rank formula (PyTorch's) is off by a term the size of the cut value.
    shape, function = PINV_CUTS[name]
    x = plugrad.tensor(_with_singular_values(*shape, [3.0, 1.0, 0.2], seed=3), requires_grad=True)
    assert plugrad.autograd.gradcheck(function, (x,), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs", [{"atol": 0.1}, {"rtol": 1e-3}, {"hermitian": True}, {"hermitian": True, "atol": 0.1}]
)
def test_pinv_with_a_tolerance_differentiates_twice(kwargs: dict) -> None:
    # Its gradient under create_graph multiplied a NumPy tolerance by a Tensor (TypeError).
    x = plugrad.tensor(_with_singular_values(3, 3, [3.0, 1.0, 0.5], seed=4), requires_grad=True)

    def function(x):
        # hermitian=True reads a Hermitian matrix: differences in symmetric directions only.
        return plugrad.linalg.pinv(x + x.mT if kwargs.get("hermitian") else x, **kwargs)

    assert plugrad.autograd.gradgradcheck(function, (x,), atol=1e-6, rtol=1e-5)


PINV_WIDER_TOLERANCES = [
    # (A's shape, the tolerance's shape, its keyword, the result's shape, PyTorch's)
    ((2, 3, 3), (2, 1), "atol", (2, 2, 3, 3)),
    ((4, 4), (1,), "atol", (1, 4, 4)),
    ((2, 1, 3, 3), (3,), "rtol", (2, 3, 3, 3)),
    ((3, 4), (5,), "rtol", (5, 4, 3)),
]


@pytest.mark.parametrize(("shape", "tolerance_shape", "keyword", "result"), PINV_WIDER_TOLERANCES)
def test_pinv_broadcasts_a_matrix_against_more_tolerances(shape, tolerance_shape, keyword, result):
    # As PyTorch's: one pseudo-inverse per tolerance, the gradient summed back to A's shape.
    # NumPy refused it in forward (ShapeError); torch computed it, and its backward blamed
    # the op ("a gradient of shape (1, 4, 4), but the input has shape (4, 4)").
    rng = np.random.default_rng(9)
    a = rng.standard_normal(shape)
    tolerances = plugrad.tensor(np.abs(rng.standard_normal(tolerance_shape)) * 0.5)

    def function(x):
        return plugrad.linalg.pinv(x, **{keyword: tolerances})

    x = plugrad.tensor(a, requires_grad=True)
    assert tuple(function(x).shape) == result
    stretched = plugrad.broadcast_to(plugrad.tensor(a), (*result[:-2], *shape[-2:]))
    np.testing.assert_allclose(function(x).detach().numpy(), function(stretched).numpy())
    assert plugrad.autograd.gradcheck(function, (x,), atol=1e-6, rtol=1e-5)
    assert plugrad.autograd.gradgradcheck(function, (x,), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs", [{"atol": 0.1}, {"rtol": 0.1}, {"hermitian": True}, {"hermitian": True, "atol": 0.1}]
)
def test_pinv_gradient_is_finite_at_repeated_singular_values(kwargs: dict) -> None:
    # pinv is smooth at the identity, d(pinv) = -dA; the eigenvectors' 0/0 must not show.
    x = plugrad.eye(3, dtype=plugrad.float64, requires_grad=True)
    weights = plugrad.reshape(plugrad.arange(9.0, dtype=plugrad.float64), (3, 3))
    (plugrad.linalg.pinv(x, **kwargs) * weights).sum().backward()
    # A Hermitian input's gradient is symmetric, as eigh's.
    expected = -(weights + weights.mT) / 2 if kwargs.get("hermitian") else -weights
    np.testing.assert_allclose(x.grad.numpy(), expected.numpy(), atol=1e-12)


@pytest.mark.parametrize(
    ("diagonal", "order", "expected"),
    [
        ([1.0, 1.0, 1.0], 2, [1 / 3] * 3),
        ([2.0, 2.0, 1.0], 2, [0.5, 0.5, 0.0]),
        ([3.0, 1.0, 1.0], -2, [0.0, 0.5, 0.5]),
    ],
)
def test_the_spectral_norm_splits_its_gradient_between_tied_singular_values(
    diagonal, order, expected
) -> None:
    # One singular pair got all of it ([1, 0, 0] at the identity); PyTorch's splits it.
    a = plugrad.asarray(np.diag(diagonal), requires_grad=True)
    plugrad.linalg.matrix_norm(a, ord=order).backward()
    np.testing.assert_allclose(a.grad.numpy(), np.diag(expected), atol=1e-12)
    b = plugrad.asarray(np.diag(diagonal), requires_grad=True)
    plugrad.linalg.norm(b, ord=order).backward()
    np.testing.assert_allclose(b.grad.numpy(), np.diag(expected), atol=1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda: plugrad.linalg.matrix_norm(plugrad.ones(3, 3), ord=3),
        lambda: plugrad.linalg.matrix_norm(plugrad.ones(3, 3), 3, (0, 1)),  # PyTorch's form
        lambda: plugrad.linalg.matrix_norm(plugrad.ones(3, 3), ord="bad"),
        lambda: plugrad.linalg.vector_norm(plugrad.ones(3), ord="fro"),
        lambda: plugrad.linalg.vector_norm(plugrad.ones(3), "fro", 0),
    ],
)
def test_an_order_a_norm_has_no_meaning_for_is_refused_naming_the_norm(call) -> None:
    # The library's bare ValueError ("Invalid norm order for matrices.") named no function.
    with pytest.raises(plugrad.errors.InvalidArgumentError, match=r"_norm\(\): ord must be"):
        call()


def test_matrix_exp_of_float16_is_computed_in_float32() -> None:
    # The approximant's coefficients overflowed float16 (a warning, then NumPy's TypeError).
    if plugrad.float16 not in plugrad.default_device().dtypes:
        pytest.skip("the default backend has no float16")
    a = [[0.0, 1.0], [-1.0, 0.5]]
    half = plugrad.linalg.matrix_exp(plugrad.tensor(a, dtype=plugrad.float16))
    assert half.dtype == plugrad.float16
    expected = plugrad.linalg.matrix_exp(plugrad.tensor(a)).numpy()
    np.testing.assert_allclose(half.numpy().astype(np.float32), expected, rtol=2e-3)


@pytest.mark.parametrize("name", ["det", "inv", "svd", "cholesky"])
def test_float16_linear_algebra_the_backend_lacks_is_a_dtype_error(name) -> None:
    # NumPy's TypeError ("array type float16 is unsupported in linalg") named no op.
    if plugrad.float16 not in plugrad.default_device().dtypes:
        pytest.skip("the default backend has no float16")
    half = plugrad.eye(3, dtype=plugrad.float16)
    try:
        getattr(plugrad.linalg, name)(half)
    except plugrad.errors.DtypeError as error:
        assert "float16" in str(error) and "plugrad.float32" in str(error)
    # (a backend with float16 kernels computes it: nothing to refuse)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_solve_triangular_agrees_with_pytorch(upper, left, unitriangular) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((2, 3, 4) if left else (2, 4, 3))
    results = []
    for lib in (plugrad, torch):
        A = lib.tensor(a, requires_grad=True)
        B = lib.tensor(b, requires_grad=True)
        X = lib.linalg.solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)
        (X * X).sum().backward()
        results.append([t.detach().numpy() for t in (X, A.grad, B.grad)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_solve_triangular_refuses_what_it_cannot_solve() -> None:
    with pytest.raises(plugrad.errors.ShapeError, match="give b\\[:, None\\]"):
        plugrad.linalg.solve_triangular(plugrad.eye(2), plugrad.ones(2), upper=True)
    with pytest.raises(plugrad.errors.ShapeError, match="square"):
        plugrad.linalg.solve_triangular(plugrad.ones(2, 3), plugrad.ones(2, 1), upper=True)
    with pytest.raises(TypeError, match="upper must be True or False"):
        plugrad.linalg.solve_triangular(plugrad.eye(2), plugrad.ones(2, 1), upper=None)
    with pytest.raises(plugrad.linalg.LinAlgError):
        plugrad.linalg.solve_triangular(plugrad.zeros(2, 2), plugrad.ones(2, 1), upper=True)


@pytest.mark.parametrize("order", [math.inf, -math.inf, -1, -0.5])
def test_a_norm_without_a_value_for_no_elements_refuses_an_empty_axis(order):
    # As PyTorch: a maximum, a minimum or a negative power of no elements has no value
    # (ord=-1 gave inf).
    empty = plugrad.zeros((0, 3), dtype=plugrad.float64)
    with pytest.raises(plugrad.errors.ShapeError, match="empty axis"):
        plugrad.linalg.vector_norm(empty, ord=order)
    with pytest.raises(plugrad.errors.ShapeError, match="empty axis"):
        plugrad.linalg.vector_norm(empty, ord=order, axis=0)
    # Over the axes that are not empty: one value each (none here).
    assert plugrad.linalg.vector_norm(empty, ord=order, axis=1).shape == (0,)


@pytest.mark.parametrize("order", [0, 1, 2, 3.5])
def test_a_norm_with_a_value_for_no_elements_is_zero_over_an_empty_axis(order):
    empty = plugrad.zeros((0, 3), dtype=plugrad.float64)
    assert plugrad.linalg.vector_norm(empty, ord=order, axis=0).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("order", [2, "nuc", "fro", 1, math.inf])
@pytest.mark.parametrize("shape", [(0, 3), (2, 0, 3)])
def test_the_matrix_norm_of_an_empty_matrix_has_an_empty_gradient(order, shape):
    # ord=2's backward took the max of no singular values (NumPy's ValueError came through);
    # PyTorch's gradient is empty (where its result records one at all).
    x = plugrad.zeros(shape, dtype=plugrad.float64, requires_grad=True)
    norm = plugrad.linalg.matrix_norm(x, ord=order)
    assert norm.tolist() == ([0.0, 0.0] if len(shape) == 3 else 0.0)
    norm.sum().backward()
    assert x.grad.shape == shape


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (the library's overflowing norm)
@pytest.mark.parametrize("order", [2, 1, 3, 0.5, -1, math.inf, -math.inf, 0])
def test_the_norm_of_one_element_is_its_magnitude_as_pytorchs(order, backend) -> None:
    # sqrt(sum(x * x)) gave inf for 3e38 in float32 (gradient 0) and 0 for 1e-30, where
    # PyTorch gives |x|; over two elements or more PyTorch's overflows as well.
    torch = pytest.importorskip("torch")
    cases = [
        ([3e38], {}),
        ([-1e-30], {}),
        ([0.0], {}),
        ([[3e38, -1e-30, 0.0, -2.0]], {"dim": 0}),
        ([[[-3e38]], [[1e-30]]], {"dim": (1, 2), "keepdim": True}),
    ]
    for values, dims in cases:
        results = []
        for lib in (plugrad, torch):
            x = lib.tensor(values, requires_grad=True)
            norm = lib.linalg.vector_norm(x, ord=order, **dims)
            norm.sum().backward()
            grad = np.zeros(np.shape(values)) if x.grad is None else np.array(x.grad.tolist())
            results.append((np.array(norm.tolist()), grad))
        for ours, theirs in zip(results[0], results[1], strict=True):
            np.testing.assert_allclose(ours, theirs, rtol=1e-6, err_msg=f"{values} {dims}")
    pairs = [
        plugrad.nn.functional.pairwise_distance(plugrad.tensor([[3e38]]), plugrad.tensor([[0.0]])),
        torch.nn.functional.pairwise_distance(torch.tensor([[3e38]]), torch.tensor([[0.0]])),
    ]
    np.testing.assert_allclose(pairs[0].tolist(), pairs[1].tolist(), rtol=1e-6)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy's det of NaN)
@pytest.mark.parametrize(
    ("name", "dtype"),
    [("det", "float32"), ("det", "complex64"), ("slogdet", "float32"),
     ("slogdet", "complex64"), ("logdet", "float32")],
)  # fmt: skip
def test_a_matrix_holding_nan_has_nan_gradients_as_pytorchs(name, dtype, backend) -> None:
    # det's backward raised a LinAlgError from the SVD ("did not converge") or from inv's
    # zero pivot; slogdet's gave numbers beside NaN, or raised for a zero pivot.
    torch = pytest.importorskip("torch")
    nan = math.nan
    stack = [[[nan, 1.0], [2.0, 3.0]], [[0.0, nan], [0.0, 1.0]], [[2.0, 1.0], [1.0, 3.0]]]
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor(stack, dtype=getattr(lib, dtype), requires_grad=True)
        if name == "det":
            value = lib.linalg.det(x).abs()
        elif name == "slogdet":
            value = lib.linalg.slogdet(x).logabsdet
        else:
            value = lib.logdet(x)
        value.sum().backward()
        results.append(np.array(x.grad.tolist()))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5)
    assert np.isnan(results[0][:2]).all() and np.isfinite(results[0][2]).all()
