"""The Array API ``linalg`` extension: ``plugrad.linalg.<name>``, with gradients.

Rules follow PyTorch's (``torch/csrc/autograd/FunctionsManual.cpp``) and are
written with ``xp.linalg.*`` so that double backward comes free. Degenerate
inputs, documented in each docstring:

- ``det``, ``inv``, ``solve``, ``slogdet`` need an invertible matrix; at a
  singular one their gradients are not finite. ``det`` of a matrix holding NaN
  is NaN and its ``slogdet`` ``(0, nan)``, as PyTorch's (NaN for a complex sign);
  their gradients are NaN, as PyTorch's.
- ``eigh``/``eig`` with repeated eigenvalues, and ``svd`` with repeated singular
  values (equal up to rounding): the eigenvectors (singular vectors) of a
  repeated value are not unique, and the terms of the gradient that pair them
  are 0 / 0. Where the loss reads only the values, or reads the vectors of a
  repeated value but not the value itself only through their span (a projector
  ``V @ V.mT``, a product ``U[:, :k] @ Vh[:k]``), the limit exists and plugrad
  gives the exact gradient -- where PyTorch returns ``nan``/``inf`` or numbers
  near 1e13. Where it reads both (a matrix function ``V @ diag(f(L)) @ V.mT``,
  a reconstruction ``U @ diag(S) @ Vh``) the limit depends on ``f'``, which
  backward cannot know, and where it reads one vector of a repeated value (not
  their span) there is no derivative: those entries are ``nan``.
- ``svd`` at an exactly zero singular value: ``U @ diag(S) @ Vh`` multiplies its
  vectors by 0, so a loss of the reconstruction hands backward the same numbers as a
  loss of ``S`` alone, yet their gradients differ in the terms that are 0 / 0 -- those
  pairing two zero values, and for complex or non-square input also a single zero
  value's own. Where the loss reads such a value or its vectors, the gradient is
  ``nan`` (as PyTorch's); where it reads neither (``U[:, :k] @ diag(S[:k]) @ Vh[:k]``
  of the nonzero values), it is exact. A real square matrix with one zero value keeps
  the exact gradient. For a function of the singular values alone there, use
  ``svdvals`` or ``matrix_norm``, whose gradient is ``U @ diag(g) @ Vh`` (PyTorch's
  subgradient, finite).
- ``svd(full_matrices=True)`` of a non-square matrix: the extra columns of
  ``U`` (rows of ``Vh``) are not determined by the input, so their gradients
  are ignored (as in PyTorch).
- ``pinv`` (and ``lstsq``) with a tolerance (``rtol``, PyTorch's ``atol``) that
  cuts singular values which are not 0: the result is the pseudo-inverse of the
  truncated matrix, and its gradient is the truncation's (exact; PyTorch's
  constant-rank formula is off by a term the size of the cut values). At the
  tolerance itself the result jumps and has no gradient. ``hermitian=True``
  reads the lower triangle, and gives the symmetric gradient, as ``eigh``.
- ``qr(mode="complete")`` of a tall matrix is not differentiable (an error).
- ``cholesky`` of a matrix not positive definite, or holding NaN in the triangle it
  reads, is a ``LinAlgError`` on every backend (as PyTorch's; JAX's kernel gives NaN).
- ``matrix_norm``/``vector_norm`` split the gradient evenly between tied
  maxima; at zero the 2-norm's gradient is 0.

Complex inputs have gradients too, in PyTorch's convention (the conjugate
Wirtinger derivative; see ``plugins/elementwise.py``). Where a factorization
leaves a phase free -- the eigenvectors of ``eig`` and ``eigh``, each pair of
singular vectors of ``svd`` -- a loss must not depend on it (``abs(v)``,
``u * conj(v)`` are fine); backward refuses one that does, as PyTorch's.
``qr`` fixes the phase the way LAPACK does: ``diag(R)`` real.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from plugrad.dtype_functions import broadcast_shapes
from plugrad.errors import (
    ArgumentError,
    AxisError,
    BackwardError,
    DtypeError,
    InvalidArgumentError,
    ShapeError,
)
from plugrad.hookspecs import hookimpl
from plugrad.linalg import _stack_of_vectors
from plugrad.opdef import OpDef, as_int, collect_ops, op
from plugrad.plugins import _rules
from plugrad.plugins._rules import (
    cast,
    checked_axis,
    conj,
    count,
    device_of,
    expand_reduced,
    half_in_float32,
    index_dtype,
    is_complex,
    is_half,
    negative_axis,
    normalize_axes,
    one_array,
    reduction_axis,
    safe_where_zero,
    torch_accumulated,
)


def _mH(xp: Any, a: Any) -> Any:
    return conj(xp, xp.matrix_transpose(a))


def _diag_embed(xp: Any, v: Any) -> Any:
    """(..., n) -> (..., n, n) with ``v`` on the diagonal."""
    return _masked_by_eye(xp, xp.expand_dims(v, axis=-1), v.shape[-1], v.shape[-1], 0)


def _masked_by_eye(xp: Any, values: Any, rows: int, cols: int, offset: int) -> Any:
    """``values`` on the ``offset`` diagonal of (..., rows, cols), zeros elsewhere.

    NOTE: where, not a product with eye: an inf or NaN value times 0 would put NaN
    off the diagonal.
    """
    device = device_of(values)
    on_diagonal = xp.eye(rows, cols, k=offset, dtype=xp.bool, device=device)
    return xp.where(on_diagonal, values, xp.zeros((), dtype=values.dtype, device=device))


def _embed_diagonal(xp: Any, g: Any, shape: tuple[int, ...], offset: int) -> Any:
    """Zeros of ``shape`` (..., rows, cols) with ``g`` (..., length) on the ``offset`` diagonal.

    The diagonal is spread along the axis it has one element per slot of (columns
    for ``offset >= 0``, rows below) and masked by ``eye``: no integer-array index.
    """
    rows, cols = shape[-2], shape[-1]
    length, before = g.shape[-1], abs(offset)
    after = (cols if offset >= 0 else rows) - before - length
    batch = tuple(g.shape[:-1])
    if length == 0:
        return xp.zeros((*batch, rows, cols), dtype=g.dtype, device=device_of(g))
    parts = [g]
    if before:
        parts.insert(0, xp.zeros((*batch, before), dtype=g.dtype, device=device_of(g)))
    if after:
        parts.append(xp.zeros((*batch, after), dtype=g.dtype, device=device_of(g)))
    spread = xp.concat(parts, axis=-1) if len(parts) > 1 else g
    spread = xp.expand_dims(spread, axis=-2 if offset >= 0 else -1)
    return _masked_by_eye(xp, spread, rows, cols, offset)


def _matrix_grad(xp: Any, g: Any) -> Any:
    """A scalar-per-matrix gradient (...,) as (..., 1, 1)."""
    return xp.expand_dims(xp.expand_dims(g, axis=-1), axis=-1)


# Rows are aligned by hand, one op per statement.
# fmt: off

# -- factorizations --------------------------------------------------------------------


def _cholesky_grad(xp: Any, g: Any, ans: Any, x: Any, *, upper: bool) -> Any:
    factor, grad = (_mH(xp, ans), _mH(xp, g)) if upper else (ans, g)
    # gA = L^-H Phi(L^H gL) L^-1, Phi = lower triangle with the diagonal halved; then
    # symmetrized, since only the symmetric part of A is read.
    phi = xp.tril(xp.matmul(_mH(xp, factor), grad))
    phi = phi - _diag_embed(xp, xp.linalg.diagonal(phi)) / 2
    inverse = xp.linalg.inv(factor)
    grad_a = xp.matmul(xp.matmul(_mH(xp, inverse), phi), inverse)
    return (grad_a + _mH(xp, grad_a)) / 2


def _cholesky(xp: Any, x: Any, /, *, upper: bool = False) -> Any:
    # The upper factor of the upper triangle, as PyTorch's (libraries' upper=True factor
    # the lower one and transpose): the same for symmetric x, which is all the standard reads.
    factor = xp.linalg.cholesky(_mH(xp, x) if upper else x)
    # NaN in the triangle read, or (JAX's) a matrix not positive definite, leaves NaN in the
    # factor where LAPACK, and so PyTorch, stops at a NaN pivot: an error on every backend.
    if _rules.any_true(xp.any(xp.isnan(factor)), "a matrix not positive definite (or holding "
                       "NaN) in cholesky", np.linalg.LinAlgError):  # fmt: skip
        raise np.linalg.LinAlgError("Matrix is not positive definite")
    return _mH(xp, factor) if upper else factor


cholesky = op("cholesky", _cholesky, vjp=_cholesky_grad, namespace="linalg", promotion="float",
              doc="Cholesky factor of a symmetric positive-definite matrix (lower, or upper).")

def _all_but_one(xp: Any, v: Any) -> Any:
    """The product of every entry of ``v`` along its last axis but the i-th, at i (no
    division: zeros are fine)."""
    if not v.shape[-1]:  # (the slices below reach past an empty axis: strict libraries refuse)
        return v
    ones = xp.ones_like(v[..., :1])
    before = xp.cumulative_prod(xp.concat([ones, v[..., :-1]], axis=-1), axis=-1)
    after = xp.flip(xp.cumulative_prod(xp.concat([ones, xp.flip(v, axis=-1)[..., :-1]], axis=-1),
                                       axis=-1), axis=-1)  # fmt: skip
    return before * after


def _adjugate(xp: Any, x: Any, /) -> Any:
    """``adj(x)``, ``det(x) inv(x)`` where x is invertible, from the SVD ``U S V^H`` at
    every x: ``det(U) det(V^H) V diag(prod of the other s) U^H``."""
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    others = xp.astype(_all_but_one(xp, s), u.dtype)
    adjugate = xp.matmul(_mH(xp, vh) * xp.expand_dims(others, axis=-2), _mH(xp, u))
    if not s.shape[-1]:
        return adjugate
    return _matrix_grad(xp, xp.linalg.det(u) * xp.linalg.det(vh)) * adjugate


def _adjugate_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    # NOTE: adj is a polynomial in x: its differential at x = U S V^H is
    # phase V M(U^H E V) U^H, with M_aa = sum over k != a of P_ak (U^H E V)_kk and
    # M_ab = -P_ab (U^H E V)_ab, P_ab the product of every singular value but s_a and s_b
    # (from det(x) (tr(x^-1 E) x^-1 - x^-1 E x^-1) where x is invertible). The SVD gives
    # the basis only, it is not differentiated: exact where singular values repeat or vanish.
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    n = s.shape[-1]
    if not n:
        return xp.zeros_like(x)
    off = ~xp.eye(n, dtype=xp.bool, device=device_of(s))
    pairs = xp.where(off, _all_but_one(xp, xp.where(off, xp.expand_dims(s, axis=-2), 1.0)), 0.0)
    pairs = xp.astype(pairs, u.dtype)
    phase = xp.linalg.det(u) * xp.linalg.det(vh)
    k = _matrix_grad(xp, conj(xp, phase)) * xp.matmul(xp.matmul(vh, g), u)
    diagonal = xp.matmul(pairs, xp.expand_dims(xp.linalg.diagonal(k), axis=-1))[..., 0]
    return xp.matmul(xp.matmul(u, _diag_embed(xp, diagonal) - pairs * k), vh)


# Not a function of the standard or of PyTorch: plugrad.ops.adjugate, and xp.adjugate in
# rules, where det's gradient of gradients goes through it at singular matrices.
adjugate = op("adjugate", _adjugate, vjp=_adjugate_grad, namespace="nn", standard=False,
              promotion="float", doc="The adjugate det(x) inv(x) of a square matrix, singular too.")


def _one_norm(xp: Any, a: Any) -> Any:
    """The largest column sum of ``|a|``, per matrix, with two axes of size 1 kept (0 for a
    matrix without columns)."""
    sums = xp.sum(xp.abs(a), axis=-2, keepdims=True)
    if not a.shape[-1]:  # (a maximum over no column has no value: the norm of nothing)
        return xp.zeros((*a.shape[:-2], 1, 1), dtype=sums.dtype, device=device_of(a))
    return xp.max(sums, axis=-1, keepdims=True)


def _det_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    # NOTE: adj(x) is det(x) inv(x) where x is well conditioned, from the SVD where det(x) is
    # 0 (the derivative there is the cofactor matrix, not zero or NaN) or x is nearly
    # singular: there det(x) inv(x) is right, but its own derivative (gradients of gradients)
    # subtracts two terms of size 1 / s_min and loses every digit (a Hessian of a rank-2
    # 3 x 3 product off by 2.4). Both are computed and one chosen per matrix, never by a
    # branch on values (a captured plan replays it). The SVD's own derivative is wrong where
    # singular values repeat (at the identity), so gradients of gradients take inv's where
    # they can, which is exact at every order, or adjugate's own, exact at second order.
    eye = xp.eye(x.shape[-1], dtype=x.dtype, device=device_of(x))
    # A matrix holding NaN has NaN as its gradient, as in PyTorch; the identity stands in for
    # it in inv and the SVD, which raise there (no convergence, or a zero pivot).
    unknown = _matrix_grad(xp, xp.any(xp.isnan(x), axis=(-2, -1)))
    known = xp.where(unknown, eye, x)
    zero = _matrix_grad(xp, ans == 0)
    inverse = xp.linalg.inv(xp.where(zero, eye, known))
    # The 1-norm condition number above 1 / sqrt(eps): inv's derivative keeps fewer than
    # half the digits.
    condition = _one_norm(xp, known) * _one_norm(xp, inverse)
    singular = zero | (condition > 1 / math.sqrt(xp.finfo(condition.dtype).eps))
    by_inverse = _matrix_grad(xp, ans) * inverse
    adjugate = xp.where(singular, xp.adjugate(known), by_inverse)
    grad = _matrix_grad(xp, g) * _mH(xp, adjugate)
    return xp.where(unknown, _NAN_COMPLEX if is_complex(xp, x) else math.nan, grad)


#: What a matrix holding NaN has as its determinant (PyTorch's: NaN in every part).
_NAN_COMPLEX = complex(math.nan, math.nan)


def _det(xp: Any, x: Any, /) -> Any:
    # A matrix holding NaN: NumPy's LU may find a zero pivot first and say 0.
    unknown = _NAN_COMPLEX if is_complex(xp, x) else math.nan
    return xp.where(xp.any(xp.isnan(x), axis=(-2, -1)), unknown, xp.linalg.det(x))


det = op("det", _det, namespace="linalg", promotion="float", vjp=_det_grad,
         doc="Determinant of a square matrix (or a stack); its gradient is the adjugate's.")


def _slogdet_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    grad_sign, grad_logabsdet = g
    # A singular matrix (sign 0 without NaN): NumPy's inv raises, JAX's and others' give inf
    # and NaN. The same error on every backend (backward names the node in it). The sign, not
    # logabsdet, is read: logabsdet may then be modified in place, as in PyTorch.
    unknown = xp.any(xp.isnan(x), axis=(-2, -1))
    singular = (ans[0] == 0) & ~unknown
    if _rules.any_true(xp.any(singular), "a singular matrix in slogdet's backward",
                       np.linalg.LinAlgError):  # fmt: skip
        raise np.linalg.LinAlgError("Singular matrix")
    # A matrix holding NaN has NaN as its gradient, as in PyTorch (inv gave numbers beside
    # NaN, or found a zero pivot and raised): the identity stands in for it in inv.
    unknown = _matrix_grad(xp, unknown)
    eye = xp.eye(x.shape[-1], dtype=x.dtype, device=device_of(x))
    inverse_h = _mH(xp, xp.linalg.inv(xp.where(unknown, eye, x)))
    if not is_complex(xp, x):
        # A real sign is piecewise constant: it contributes nothing.
        return xp.where(unknown, math.nan, _matrix_grad(xp, grad_logabsdet) * inverse_h)
    # d logabsdet = Re(t) and d sign = i sign Im(t), with t = tr(inv(x) dx).
    turn = xp.imag(conj(xp, grad_sign) * ans[0])
    weight = xp.astype(grad_logabsdet, x.dtype) - xp.astype(turn, x.dtype) * 1j
    return xp.where(unknown, _NAN_COMPLEX, _matrix_grad(xp, weight) * inverse_h)


def _slogdet(xp: Any, x: Any, /) -> Any:
    sign, logabsdet = xp.linalg.slogdet(x)
    # A matrix holding NaN: NumPy's LU may find a zero pivot first and say -inf (det 0).
    # (PyTorch's sign there: 0 for a real matrix, NaN for a complex one)
    unknown = xp.any(xp.isnan(x), axis=(-2, -1))
    unknown_sign = _NAN_COMPLEX if is_complex(xp, x) else 0.0
    return xp.where(unknown, unknown_sign, sign), xp.where(unknown, math.nan, logabsdet)


slogdet = op("slogdet", _slogdet, vjp=_slogdet_grad, namespace="linalg", promotion="float",
             output_names=("sign", "logabsdet"),
             doc="Sign and log of the absolute value of the determinant: ``(sign, logabsdet)``.")

inv = op("inv(x, /)", namespace="linalg", promotion="float",
         doc="Inverse of a square matrix (or a stack of them).",
         vjp=lambda xp, g, ans, x: -xp.matmul(xp.matmul(_mH(xp, ans), g), _mH(xp, ans)))


def _solve(xp: Any, x1: Any, x2: Any, /, *, left: bool = True) -> Any:
    """``xp.linalg.solve``, with the stacks of ``x1`` and of matrices ``x2`` broadcast first:
    not every library broadcasts them (CuPy takes equal stacks only). PyTorch's
    ``left=False`` solves ``X @ x1 = x2`` instead, as ``x1.mT @ X.mT = x2.mT``."""
    if not left:
        if x2.ndim < 2 or x2.shape[-1] != x1.shape[-1]:
            raise ShapeError(
                f"solve(left=False) solves X @ x1 = x2: x2 must be matrices (..., k, "
                f"{x1.shape[-1]}) for x1 of shape {tuple(x1.shape)}, got shape {tuple(x2.shape)}"
            )
        t = xp.matrix_transpose
        return t(_solve_matrices(xp, t(x1), t(x2)))
    if _stack_of_vectors(tuple(x1.shape), tuple(x2.shape)):
        return _solve(xp, x1, xp.expand_dims(x2, axis=-1))[..., 0]
    return _solve_matrices(xp, x1, x2)


def _solve_matrices(xp: Any, x1: Any, x2: Any) -> Any:
    """``xp.linalg.solve`` with ``x2`` read as the standard reads it, stacks broadcast."""
    if x2.ndim >= 2 and x1.shape[:-2] != x2.shape[:-2]:
        stack = broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
        x1 = xp.broadcast_to(x1, stack + x1.shape[-2:])
        x2 = xp.broadcast_to(x2, stack + x2.shape[-2:])
    return xp.linalg.solve(x1, x2)


def _solve_grad(which: int) -> Any:
    def rule(
        xp: Any, g: Any, ans: Any, x1: Any, x2: Any, *, left: bool, matrices: bool = False
    ) -> Any:
        if not left:  # the gradients of the transposed problem, transposed back
            t = xp.matrix_transpose
            # (x2 is not saved, only its shape: the rule reads whether it is a matrix.)
            return t(rule(xp, t(g), t(ans), t(x1), x2, left=True, matrices=True))
        vector = not matrices and (
            x2.ndim == 1 or _stack_of_vectors(tuple(x1.shape), tuple(x2.shape))
        )
        if vector:
            g = xp.expand_dims(g, axis=-1)
            ans = xp.expand_dims(ans, axis=-1)
        # X = A^-1 B: gB = A^-H g, gA = -gB X^H.
        grad_b = _solve_matrices(xp, _mH(xp, x1), g)
        if which == 1:
            return grad_b[..., 0] if vector else grad_b
        return -xp.matmul(grad_b, _mH(xp, ans))

    return rule


solve = op("solve", _solve, vjp=(_solve_grad(0), _solve_grad(1)), namespace="linalg",
           promotion="float", broadcasting=True, saves=("x1", "ans"),
           doc="Solve ``x1 @ X = x2`` for ``X`` (a vector if ``x2`` is 1-D, else matrices).")


def _qr_square_grad(xp: Any, grad_q: Any, grad_r: Any, q: Any, r: Any) -> Any:
    """The gradient of ``x = Q R`` for ``x`` with at least as many rows as columns."""
    m = xp.matmul(grad_r, _mH(xp, r)) - xp.matmul(_mH(xp, q), grad_q)
    # The upper triangle of m mirrored below, diagonal kept once; then times R^-H.
    upper = xp.triu(m)
    sym = upper + _mH(xp, upper)
    sym = sym - _diag_embed(xp, xp.linalg.diagonal(sym)) / 2
    grad_a = xp.matmul(q, sym) + grad_q
    return _mH(xp, xp.linalg.solve(r, _mH(xp, grad_a)))


def _qr(xp: Any, x: Any, /, mode: str = "reduced") -> Any:
    if mode not in ("reduced", "complete", "r"):
        raise ArgumentError(f"qr(): mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    if mode == "r":  # PyTorch's: R alone, Q an empty tensor (the libraries differ here)
        r = xp.linalg.qr(x, mode="reduced")[1]
        return xp.zeros((0,), dtype=x.dtype, device=device_of(x)), r
    return tuple(xp.linalg.qr(x, mode=mode))


def _qr_grad(xp: Any, g: Any, ans: Any, x: Any, *, mode: str) -> Any:
    grad_q, grad_r = g
    q, r = ans
    rows, cols = x.shape[-2], x.shape[-1]
    if mode == "r":
        raise BackwardError(
            "linalg.qr(mode='r') is not differentiable: the derivative depends on Q, which "
            "mode='r' does not compute; use mode='reduced'"
        )
    if mode != "reduced" and rows > cols:
        raise BackwardError(
            f"linalg.qr(mode={mode!r}) of a {rows}x{cols} matrix is not differentiable: the "
            "extra columns of Q are not determined by the input. Use mode='reduced'."
        )
    if rows >= cols:
        return _qr_square_grad(xp, grad_q, grad_r, q, r)
    # A wide x = [A1 | A2] is Q [X | Y]: A1 = Q X is a square QR, and Y = Q^H A2 reaches
    # Q too, adding A2 gY^H = Q Y gY^H to its gradient.
    square, rest = r[..., :, :rows], r[..., :, rows:]
    grad_square, grad_rest = grad_r[..., :, :rows], grad_r[..., :, rows:]
    grad_q = grad_q + xp.matmul(q, xp.matmul(rest, _mH(xp, grad_rest)))
    grad_first = _qr_square_grad(xp, grad_q, grad_square, q, square)
    return xp.concat([grad_first, xp.matmul(q, grad_rest)], axis=-1)


qr = op("qr", _qr, vjp=_qr_grad, namespace="linalg", promotion="float", output_names=("Q", "R"),
        saves=("ans",),
        doc="QR factorization ``x = Q @ R``: a named tuple ``(Q, R)``.")


def _refuse_phase_dependence(xp: Any, change: Any, scale: Any, function: str, vectors: str):
    """Refuse a loss that depends on the free phase of complex eigen- or singular vectors.

    ``change`` is the loss's derivative with respect to each vector's phase, 0 for a
    well-defined loss up to rounding (``scale`` sizes that, as PyTorch's check does with
    1e-2); otherwise the gradient would be of no function of the input, silently.
    """
    if not math.prod(change.shape):
        return
    bound = 1e-2 if scale is None else 1e-2 + 1e-2 * xp.abs(scale)
    depends = xp.any(xp.abs(change) > bound)
    if _rules.any_true(depends, f"a loss depending on the phase of {function}'s vectors",
                       BackwardError):  # fmt: skip
        raise BackwardError(
            f"{function}() backward: complex {vectors} are defined only up to a phase "
            "(v times e^(i phi) is as good), and the loss depends on that phase, so it has no "
            "gradient. Make it independent of the phase: use abs(v), v * conj(v), or "
            "U @ diag(S) @ Vh, not v.real or v alone."
        )


def _over_gaps(
    xp: Any,
    numerator: Any,
    gaps: Any,
    magnitude: Any,
    grad_values: Any,
    vectors_used: Any,
    scale: Any,
) -> Any:
    """``numerator / gaps``, where each gap is that between two eigen- (or singular) values.

    Values closer than rounding (``n * eps * max(magnitude)``) count as repeated. There
    the quotient is 0 / 0 where the loss reads the vectors of a repeated value only
    through their span (a projector), and its limit depends on how the loss reads the
    repeated values: 0 where it reads their vectors only that way or reads only the
    values, but ``f'(value)`` for a matrix function ``V f(L) V^H`` (a reconstruction
    ``U S Vh`` too), which the incoming gradients cannot tell. So a pair whose values and
    vectors both have a gradient gets nan (as PyTorch's every repeated pair), any other
    repeated pair 0. A loss that reads one vector of a repeated value (not only the
    span) makes the numerator of the pair more than rounding (``scale``: the size of
    its terms): the gradient does not exist, and the pair gets nan (PyTorch's, a
    quotient of rounding, is inf or a number near 1e13). ``vectors_used``: (..., n),
    whether each vector has a gradient.
    """
    n = gaps.shape[-1]
    if n == 0:
        return numerator  # no pair of values (max() of no magnitude has no identity)
    eps = xp.finfo(magnitude.dtype).eps
    tolerance = n * eps * xp.max(magnitude, axis=-1, keepdims=True)
    repeated = xp.abs(gaps) <= xp.expand_dims(tolerance, axis=-1)
    values_used = grad_values != 0
    both = xp.logical_and(
        xp.logical_or(xp.expand_dims(values_used, axis=-1), xp.expand_dims(values_used, axis=-2)),
        xp.logical_or(
            xp.expand_dims(vectors_used, axis=-1), xp.expand_dims(vectors_used, axis=-2)
        ),
    )
    # Rounding leaves a span-only loss's numerator below eps * scale (measured: 0.5).
    basis_read = xp.abs(numerator) > (64 * n * eps) * scale
    off_diagonal = xp.logical_not(xp.eye(n, dtype=xp.bool, device=device_of(gaps)))
    unknown = xp.logical_and(
        xp.logical_and(repeated, xp.logical_or(both, basis_read)), off_diagonal
    )
    # NOTE: divide by 1 in the masked branch, so that double backward has no nan there.
    quotient = numerator / xp.where(repeated, 1.0, gaps)
    return xp.where(repeated, xp.where(unknown, math.nan, xp.zeros_like(quotient)), quotient)


def _largest(xp: Any, x: Any) -> Any:
    """The largest magnitude in each matrix of ``x``, shaped to broadcast against it (0 for
    an empty matrix, where max() has no identity)."""
    magnitude = xp.abs(x)
    if 0 in x.shape[-2:]:
        return xp.zeros((*x.shape[:-2], 1, 1), dtype=magnitude.dtype, device=device_of(x))
    return xp.max(magnitude, axis=(-2, -1), keepdims=True)


def _svd_grad(xp: Any, g: Any, ans: Any, x: Any, *, full_matrices: bool) -> Any:
    grad_u, grad_s, grad_vh = g
    u, s, vh = ans
    rows, cols = x.shape[-2], x.shape[-1]
    k = s.shape[-1]
    if full_matrices and rows != cols:
        # The extra columns of U (rows of Vh) carry no information about x.
        u, grad_u = u[..., :, :k], grad_u[..., :, :k]
        vh, grad_vh = vh[..., :k, :], grad_vh[..., :k, :]
    phase_u = xp.matmul(_mH(xp, u), grad_u)
    uhgu = phase_u - _mH(xp, phase_u)
    phase_v = xp.matmul(vh, _mH(xp, grad_vh))
    vhgv = phase_v - _mH(xp, phase_v)
    # The pair (i, j) of uhgu and vhgv has (s[j] uhgu + s[i] vhgv) / (s[j]^2 - s[i]^2),
    # written as the sum of (uhgu + vhgv) / (2 (s[j] - s[i])) and (uhgu - vhgv) /
    # (2 (s[j] + s[i])): only the first is 0 / 0 at a repeated value, and the second
    # stays where a loss reads a repeated value's vectors only through their spans
    # (dropping the whole quotient there lost it: u[:, :2] @ vh[:2] had a wrong gradient).
    row, column = xp.expand_dims(s, axis=-1), xp.expand_dims(s, axis=-2)
    vectors_used = xp.logical_or(
        xp.any(grad_u != 0, axis=-2), xp.any(grad_vh != 0, axis=-1)
    )
    scale = _largest(xp, phase_u) + _largest(xp, phase_v)
    grad_a = _over_gaps(
        xp, (uhgu + vhgv) / 2, column - row, s, grad_s, vectors_used, scale
    )  # Repeated singular values (and the diagonal) make gaps 0 (see _over_gaps).
    sums = column + row
    # Two zero singular values: 0 / 0, which _nan_where_zero_values_hide_the_loss settles.
    # The diagonal's (a turn of the phases) comes below, for complex input.
    dropped = xp.logical_or(sums == 0, xp.eye(k, dtype=xp.bool, device=device_of(s)))
    grad_a = grad_a + xp.where(dropped, 0.0, (uhgu - vhgv) / (2 * safe_where_zero(xp, sums)))
    grad_a = grad_a + _diag_embed(xp, grad_s)
    grad_a = _nan_where_zero_values_hide_the_loss(
        xp, grad_a, s, grad_s, vectors_used, every_pair=is_complex(xp, u) or rows != cols
    )
    safe_s = safe_where_zero(xp, s)
    if is_complex(xp, u):
        # Turning the phases of u_i and v_i together leaves x: the loss must not change.
        along_u = xp.imag(xp.linalg.diagonal(phase_u))
        along_v = xp.imag(xp.linalg.diagonal(phase_v))
        _refuse_phase_dependence(xp, along_u + along_v, along_v, "svd", "singular vectors")
        # The phases of u_i and v_i are free together; only their difference is set
        # by x. Split it evenly: i (Im diag(U^H gU) - Im diag(V^H gV)) / (2 s).
        turn = xp.imag(xp.linalg.diagonal(phase_u) - xp.linalg.diagonal(phase_v)) / (2 * safe_s)
        grad_a = grad_a + _diag_embed(xp, xp.astype(turn, u.dtype) * 1j)
    if rows > cols:
        grad_a = xp.matmul(u, grad_a)
        scaled = grad_u / xp.expand_dims(safe_s, axis=-2)
        grad_a = grad_a + scaled - xp.matmul(u, xp.matmul(_mH(xp, u), scaled))
        return xp.matmul(grad_a, vh)
    if rows < cols:
        grad_a = xp.matmul(grad_a, vh)
        scaled = grad_vh / xp.expand_dims(safe_s, axis=-1)
        grad_a = grad_a + scaled - xp.matmul(xp.matmul(scaled, _mH(xp, vh)), vh)
        return xp.matmul(u, grad_a)
    return xp.matmul(xp.matmul(u, grad_a), vh)


def _nan_where_zero_values_hide_the_loss(
    xp: Any, grad_a: Any, s: Any, grad_s: Any, vectors_used: Any, *, every_pair: bool
) -> Any:
    """``grad_a`` (in the singular bases) with nan where an exact zero singular value makes
    the gradient 0 / 0 and the loss may reach it.

    ``U @ diag(S) @ Vh`` multiplies the vectors of a zero value by 0, so their incoming
    gradients are 0 whether or not the loss reads them: a loss of ``S`` alone and one of
    the reconstruction hand backward the same numbers, and their gradients differ (the
    reconstruction's reads the 0 / 0 terms). Those terms pair two zero values, and, for
    complex or non-square input, also sit on a zero value's own diagonal (its phase, and
    the directions outside the thin bases). Where the loss reads such a value or its
    vectors they are nan, as PyTorch's; where it reads neither, 0. Values that are only
    near 0 leave the vectors' gradients nonzero, and ``_over_gaps`` tells the losses apart.
    """
    zero = s == 0
    read = xp.logical_and(zero, xp.logical_or(grad_s != 0, vectors_used))
    unknown = xp.logical_or(
        xp.logical_and(xp.expand_dims(read, axis=-1), xp.expand_dims(zero, axis=-2)),
        xp.logical_and(xp.expand_dims(zero, axis=-1), xp.expand_dims(read, axis=-2)),
    )
    if not every_pair:  # a real square matrix: the diagonal's grad_s is exact at 0
        k = s.shape[-1]
        unknown = xp.logical_and(
            unknown, xp.logical_not(xp.eye(k, dtype=xp.bool, device=device_of(s)))
        )
    return xp.where(unknown, math.nan, grad_a)


def _check_svd_driver(function: str, driver: Any) -> None:
    """PyTorch's SVD drivers are cuSOLVER's: on other devices only ``None``, as its CPU takes."""
    if driver is not None:
        raise ArgumentError(
            f"{function}(): driver={driver!r} chooses a cuSOLVER routine; plugrad computes "
            "with the backend's own svd, so give driver=None"
        )


def _torch_svd(xp: Any, x: Any, full_matrices: bool = True, *, driver: Any = None) -> Any:
    """PyTorch's ``linalg.svd(A, full_matrices=True, *, driver=None)``."""
    _check_svd_driver("svd", driver)
    return xp.linalg.svd(x, full_matrices=full_matrices)


svd = op("svd(x, /, *, full_matrices=True)", vjp=_svd_grad, namespace="linalg", promotion="float",
         output_names=("U", "S", "Vh"), saves=("ans",), torch_function=_torch_svd,
         doc="Singular value decomposition ``x = U @ diag(S) @ Vh``: a named tuple ``(U, S, Vh)``.")


def _svdvals_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    u, _, vh = xp.linalg.svd(x, full_matrices=False)
    return xp.matmul(u * xp.expand_dims(g, axis=-2), vh)


@_rules.one_array
def _torch_svdvals(xp: Any, x: Any, *, driver: Any = None) -> Any:
    """PyTorch's ``linalg.svdvals(A, *, driver=None)``."""
    _check_svd_driver("svdvals", driver)
    return xp.linalg.svdvals(x)


svdvals = op("svdvals(x, /)", vjp=_svdvals_grad, namespace="linalg", promotion="float",
             torch_function=_torch_svdvals, doc="Singular values, in descending order.")


def _eigh_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    grad_values, grad_vectors = g
    values, vectors = ans
    vhgv = xp.matmul(_mH(xp, vectors), grad_vectors)
    if is_complex(xp, vhgv):
        along = xp.imag(xp.linalg.diagonal(vhgv))
        _refuse_phase_dependence(xp, along, None, "eigh", "eigenvectors")
    scale = _largest(xp, vhgv)
    vhgv = (vhgv - _mH(xp, vhgv)) / 2
    # E[i, j] = values[j] - values[i].
    gaps = xp.expand_dims(values, axis=-2) - xp.expand_dims(values, axis=-1)
    # Repeated eigenvalues (and the diagonal) make gaps 0 (see _over_gaps).
    vectors_used = xp.any(grad_vectors != 0, axis=-2)
    grad_a = _over_gaps(xp, vhgv, gaps, xp.abs(values), grad_values, vectors_used, scale)
    grad_a = grad_a + _diag_embed(xp, grad_values)
    return xp.matmul(xp.matmul(vectors, grad_a), _mH(xp, vectors))


def _torch_eigh(xp: Any, A: Any, UPLO: str = "L") -> Any:
    """PyTorch's ``linalg.eigh(A, UPLO='L')``: the Hermitian matrix of ``A``'s lower triangle,
    or with ``UPLO='U'`` of its upper one (that of the lower triangle of ``A.mH``)."""
    if UPLO not in ("L", "U", "l", "u"):  # (either case, as PyTorch)
        raise ArgumentError(f"eigh(): UPLO must be 'L' or 'U', got {UPLO!r}")
    return xp.linalg.eigh(A if UPLO in ("L", "l") else _mH(xp, A))


eigh = op("eigh(x, /)", vjp=_eigh_grad, namespace="linalg", promotion="float",
          torch_function=_torch_eigh,
          output_names=("eigenvalues", "eigenvectors"),
          doc="Eigenvalues (ascending) and eigenvectors of a symmetric (Hermitian) matrix.")


def _eigvalsh_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    _, vectors = xp.linalg.eigh(x)
    return xp.matmul(vectors * xp.expand_dims(g, axis=-2), _mH(xp, vectors))


def _torch_eigvalsh(xp: Any, A: Any, UPLO: str = "L") -> Any:
    """PyTorch's ``linalg.eigvalsh(A, UPLO='L')`` (see :func:`_torch_eigh`)."""
    return _torch_eigh(xp, A, UPLO).eigenvalues


eigvalsh = op("eigvalsh(x, /)", vjp=_eigvalsh_grad, namespace="linalg", promotion="float",
              torch_function=one_array(_torch_eigvalsh),
              doc="Eigenvalues of a symmetric (Hermitian) matrix, ascending.")


def _eig_grad_from(xp: Any, grad_values: Any, grad_vectors: Any, values: Any, vectors: Any):
    # PyTorch's linalg_eig_backward: eigenvectors normalized to unit length, so only
    # the part of V^H gV off the diagonal (and its imaginary diagonal) carries information.
    vh = _mH(xp, vectors)
    grad_a = _diag_embed(xp, grad_values)
    if grad_vectors is not None:
        vhgv = xp.matmul(vh, grad_vectors)
        scale = _largest(xp, vhgv)
        along = xp.imag(xp.linalg.diagonal(vhgv))
        _refuse_phase_dependence(xp, along, None, "eig", "eigenvectors")
        real_diagonal = xp.real(xp.linalg.diagonal(vhgv))
        vhgv = vhgv - xp.matmul(vh, vectors * xp.expand_dims(real_diagonal, axis=-2))
        conjugates = xp.conj(values)
        # E[i, j] = conj(values[j]) - conj(values[i]).
        gaps = xp.expand_dims(conjugates, axis=-2) - xp.expand_dims(conjugates, axis=-1)
        # Repeated eigenvalues (and the diagonal) make gaps 0 (see _over_gaps).
        vectors_used = xp.any(grad_vectors != 0, axis=-2)
        grad_a = grad_a + _over_gaps(
            xp, vhgv, gaps, xp.abs(values), grad_values, vectors_used, scale
        )
    return xp.linalg.solve(vh, xp.matmul(grad_a, vh))


def _eig_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    return cast(xp, _eig_grad_from(xp, *g, *ans), x.dtype)


eig = op("eig(x, /)", vjp=_eig_grad, namespace="linalg", promotion="float", saves=("ans",),
         output_names=("eigenvalues", "eigenvectors"),
         doc="Eigenvalues and unit eigenvectors of a general square matrix, as complex tensors.")


def _eigvals_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    values, vectors = xp.linalg.eig(x)
    return cast(xp, _eig_grad_from(xp, g, None, values, vectors), x.dtype)


eigvals = op("eigvals(x, /)", vjp=_eigvals_grad, namespace="linalg", promotion="float",
             doc="Eigenvalues of a general square matrix, as a complex tensor.")


def _pinv(xp: Any, x: Any, /, *, rtol: Any = None) -> Any:
    return xp.linalg.pinv(_stretched_to_tolerances(xp, x, rtol), rtol=rtol)


def _stretched_to_tolerances(xp: Any, x: Any, rtol: Any) -> Any:
    """``x`` broadcast to as many matrices as ``rtol`` has tolerances (PyTorch's ``pinv``
    of ``(2, 3, 3)`` with an ``atol`` of shape ``(2, 1)`` is ``(2, 2, 3, 3)``)."""
    if not getattr(rtol, "ndim", 0):
        return x
    batch = broadcast_shapes(tuple(x.shape[:-2]), tuple(rtol.shape))
    if batch == tuple(x.shape[:-2]):
        return x
    return xp.broadcast_to(x, (*batch, *x.shape[-2:]))


def _pinv_grad(xp: Any, g: Any, ans: Any, x: Any, *, rtol: Any) -> Any:
    if rtol is None:
        # The default tolerance cuts only singular values that are 0 up to rounding: the
        # rank is locally constant and ``x`` is its own truncation.
        return _constant_rank_pinv_grad(xp, g, ans, x)
    stretched = _stretched_to_tolerances(xp, x, rtol)
    grad = _truncated_pinv_grad(xp, g, ans, stretched, rtol)
    if stretched is x:
        return grad
    # Summed back over the matrices that broadcasting added or stretched.
    added = grad.ndim - x.ndim
    ones = [added + i for i, n in enumerate(x.shape[:-2]) if n != grad.shape[added + i]]
    grad = xp.sum(grad, axis=(*range(added), *ones), keepdims=True)
    return xp.reshape(grad, x.shape)


def _constant_rank_pinv_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    # PyTorch's pinv_backward (valid where the rank is locally constant).
    rows, cols = x.shape[-2], x.shape[-1]
    mm = xp.matmul
    p, ph, gh = ans, _mH(xp, ans), _mH(xp, g)
    if rows <= cols:
        k = mm(gh, p)
        kph = mm(k, ph)
        return -_mH(xp, mm(p, k)) + kph - mm(mm(x, p), kph) + mm(mm(ph, p), gh - mm(k, x))
    k = mm(p, gh)
    phk = mm(ph, k)
    return -_mH(xp, mm(k, p)) + mm(mm(gh - mm(x, k), p), ph) + phk - mm(mm(phk, p), x)


def _truncated_pinv_grad(xp: Any, g: Any, ans: Any, x: Any, rtol: Any) -> Any:
    """The gradient of ``pinv(x, rtol=rtol)`` where the tolerance cuts singular values
    that are not 0: the pseudo-inverse of ``x``'s truncation ``x_k``, which moves with
    the cut part of ``x`` too (the formula for a constant rank alone is off by a term of
    the size of the cut values).

    ``x_k`` is the best rank-k approximation; in the singular bases (``Ĝ = U^H G V``) the
    adjoint of its derivative keeps the kept-kept block of ``Ĝ``, drops the cut-cut block,
    and mixes each kept ``i`` / cut ``j`` pair as ``s_i (s_i Ĝ_ij + s_j conj(Ĝ_ji)) /
    (s_i^2 - s_j^2)``; directions outside the thin bases count as cut values of 0.
    """
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    kept = s > _tolerance(xp, x, s, None, rtol)  # as the forward's cut
    v = _mH(xp, vh)
    truncation = xp.matmul(u * xp.expand_dims(xp.where(kept, s, 0.0), axis=-2), vh)
    grad = _constant_rank_pinv_grad(xp, g, ans, truncation)
    ghat = xp.matmul(xp.matmul(_mH(xp, u), grad), v)
    row_kept, col_kept = xp.expand_dims(kept, axis=-1), xp.expand_dims(kept, axis=-2)
    row_s, col_s = xp.expand_dims(s, axis=-1), xp.expand_dims(s, axis=-2)
    kept_s = xp.where(row_kept, row_s, col_s)
    cut_s = xp.where(row_kept, col_s, row_s)
    mixed = xp.logical_xor(row_kept, col_kept)  # one kept, one cut
    gaps = xp.where(mixed, kept_s * kept_s - cut_s * cut_s, 1.0)
    swapped = conj(xp, xp.matrix_transpose(ghat))
    across = kept_s * (kept_s * ghat + cut_s * swapped) / gaps
    both = xp.logical_and(row_kept, col_kept)
    hhat = xp.where(both, ghat, xp.where(mixed, across, xp.zeros_like(ghat)))
    result = xp.matmul(xp.matmul(u, hhat), vh)
    kept_u = u * xp.expand_dims(xp.astype(kept, u.dtype), axis=-2)
    kept_v = v * xp.expand_dims(xp.astype(kept, v.dtype), axis=-2)
    rows, cols = x.shape[-2], x.shape[-1]
    if rows > cols:  # the complement of U's columns: values of 0, mixed with the kept
        outside = grad - xp.matmul(u, xp.matmul(_mH(xp, u), grad))
        result = result + xp.matmul(xp.matmul(outside, kept_v), _mH(xp, kept_v))
    if rows < cols:
        outside = grad - xp.matmul(xp.matmul(grad, v), vh)
        result = result + xp.matmul(kept_u, xp.matmul(_mH(xp, kept_u), outside))
    return result


def _tolerance(xp: Any, A: Any, magnitudes: Any, atol: Any, rtol: Any) -> Any:
    """PyTorch's cut for ``magnitudes`` (the last axis, per matrix), shaped to compare with
    them: ``max(atol, rtol * largest)``; ``rtol`` defaults to ``eps * max(m, n)``, or to 0
    where only a positive ``atol`` is given."""
    if rtol is None:
        default = xp.finfo(magnitudes.dtype).eps * max(A.shape[-2:])
        if atol is None:
            rtol = default
        elif isinstance(atol, (int, float)):
            rtol = 0.0 if atol > 0 else default
        else:  # each matrix's own: an atol of 0 keeps the default rtol (a tensor's too)
            rtol = xp.where(xp.asarray(atol) > 0, 0.0, default)
    if not isinstance(rtol, (int, float)):
        # An array (a 0-d one too) in xp's kind: under create_graph xp makes Tensors.
        rtol = xp.asarray(rtol)
        if rtol.ndim:
            rtol = xp.expand_dims(rtol, axis=-1)
    largest = xp.max(magnitudes, axis=-1, keepdims=True) if magnitudes.shape[-1] else 0.0
    tolerance = rtol * largest
    if atol is not None:
        tolerance = xp.maximum(tolerance, xp.expand_dims(xp.asarray(atol), axis=-1)
                               if getattr(atol, "ndim", 0) else atol)  # fmt: skip
    return tolerance


def _kept(xp: Any, A: Any, magnitudes: Any, atol: Any, rtol: Any) -> Any:
    """Which of ``magnitudes`` exceed PyTorch's tolerance (see :func:`_tolerance`)."""
    return magnitudes > _tolerance(xp, A, magnitudes, atol, rtol)


def _hermitian_read(xp: Any, A: Any) -> Any:
    """The Hermitian matrix PyTorch's ``hermitian=True`` functions read from ``A``'s lower
    triangle, with the gradient of a function of Hermitian matrices (symmetric, as
    ``eigh``'s): equal to ``A`` where ``A`` is Hermitian, as it must be."""
    lower = xp.tril(A, k=-1)
    diagonal = xp.tril(A) - lower
    read = lower + _mH(xp, lower) + (diagonal + _mH(xp, diagonal)) / 2
    symmetric = (A + _mH(xp, A)) / 2
    return symmetric + (read - symmetric).detach()


def _torch_pinv(
    xp: Any, A: Any, rcond: Any = None, hermitian: bool = False, *, atol: Any = None,
    rtol: Any = None,
) -> Any:  # fmt: skip
    """PyTorch's ``linalg.pinv(A, *, atol=None, rtol=None, hermitian=False)``: singular values
    (eigenvalues, for ``hermitian``) at or below ``max(atol, rtol * largest)`` count as 0.
    Its older ``pinv(A, rcond, hermitian)`` too: ``rcond`` is ``rtol``. Tolerances broadcast
    with the stack of matrices: ``A`` of shape ``(2, 3, 3)`` with an ``atol`` of shape
    ``(2, 1)`` gives ``(2, 2, 3, 3)``, and ``A``'s gradient sums over the copies.

    Computed by the standard's ``pinv`` with the cut as a tolerance relative to the
    largest singular value, so that its gradient is that of the truncation (exact where a
    cut value is not 0, and finite at repeated values)."""
    if rcond is not None:
        if rtol is not None:
            raise ArgumentError("pinv() got rcond and rtol, which are one tolerance; give rtol")
        rtol = rcond
    if hermitian:
        A = _hermitian_read(xp, A)  # its singular values: its eigenvalues' magnitudes
    if 0 in A.shape[-2:]:
        return xp.linalg.pinv(A)
    magnitudes = xp.linalg.svdvals(A.detach())
    tolerance = xp.squeeze(_tolerance(xp, A, magnitudes, atol, rtol), axis=-1)
    largest = xp.max(magnitudes, axis=-1)
    relative = xp.where(largest > 0, tolerance / xp.where(largest > 0, largest, 1.0), 0.0)
    return xp.linalg.pinv(A, rtol=relative)


pinv = op("pinv", _pinv, inputs=("x",), vjp=_pinv_grad, namespace="linalg", promotion="float",
          array_params=("rtol",), torch_function=one_array(_torch_pinv),
          doc="Moore-Penrose pseudo-inverse; singular values below ``rtol * largest`` count as 0.")


def _matrix_power_grad(xp: Any, g: Any, ans: Any, x: Any, *, n: int) -> Any:
    if n == 0:
        return xp.zeros_like(x)
    base = x if n > 0 else xp.linalg.inv(x)
    count = n if n > 0 else -n
    # d(B^k) = sum_i B^i dB B^(k-1-i): gB = sum_i (B^H)^i g (B^H)^(k-1-i).
    bh = _mH(xp, base)
    powers = [None]  # None is the identity
    for _ in range(count - 1):
        powers.append(bh if powers[-1] is None else xp.matmul(powers[-1], bh))
    total = None
    for i in range(count):
        term = g if powers[i] is None else xp.matmul(powers[i], g)
        last = powers[count - 1 - i]
        term = term if last is None else xp.matmul(term, last)
        total = term if total is None else total + term
    if n < 0:
        # Through the inverse: gA = -B^H gB B^H.
        total = -xp.matmul(xp.matmul(bh, total), bh)
    return total


def _matrix_power(xp: Any, x: Any, /, n: int) -> Any:
    # A kernel of its own: the standard's takes n positionally only, and NumPy's hands back x
    # itself for n == 1 (a later x.add_(1) would change the result).
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise ArgumentError(f"matrix_power(): n must be an int, got {type(n).__name__} {n!r}")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(
            f"matrix_power() takes a square matrix (or a stack of them), got shape "
            f"{tuple(x.shape)}"
        )
    if n < 0 and xp.isdtype(x.dtype, ("integral", "bool")):  # (NumPy's inverse: float64)
        raise DtypeError(
            f"matrix_power(): n={n} inverts the matrix, which an integer matrix of "
            f"{x.dtype} cannot hold; convert it first: matrix_power(x.float(), {n})"
        )
    power = xp.linalg.matrix_power(x, n)
    return xp.asarray(power, copy=True) if n == 1 else power


matrix_power = op("matrix_power", _matrix_power,
                  inputs=("x",), vjp=_matrix_power_grad, namespace="linalg",
                  doc="A square matrix to the integer power ``n`` (its inverse's for ``n < 0``).")

def _torch_matrix_rank(
    xp: Any, A: Any, tol: Any = None, hermitian: bool = False, *, atol: Any = None,
    rtol: Any = None,
) -> Any:  # fmt: skip
    """PyTorch's ``linalg.matrix_rank(A, *, atol=None, rtol=None, hermitian=False)``: the
    singular values (eigenvalues' magnitudes) above ``max(atol, rtol * largest)``; its older
    ``matrix_rank(A, tol, hermitian)`` too: ``tol`` is ``atol``."""
    if tol is not None:
        if atol is not None or rtol is not None:
            raise ArgumentError("matrix_rank() got tol with atol or rtol; give atol and rtol")
        atol, rtol = tol, 0.0
    if 0 in A.shape[-2:]:
        return xp.zeros(A.shape[:-2], dtype=index_dtype(xp, A), device=A.device)
    values = xp.abs(xp.linalg.eigvalsh(A)) if hermitian else xp.linalg.svdvals(A)
    return xp.sum(xp.astype(_kept(xp, A, values, atol, rtol), index_dtype(xp, A)), axis=-1)


def _matrix_rank(xp: Any, x: Any, /, *, rtol: Any = None) -> Any:
    if 0 in x.shape[-2:]:  # no singular values (NumPy's max() of none fails): rank 0
        return xp.zeros(x.shape[:-2], dtype=index_dtype(xp, x), device=device_of(x))
    return xp.linalg.matrix_rank(x, rtol=rtol)


matrix_rank = op("matrix_rank", _matrix_rank, differentiable=False, namespace="linalg",
                 torch_function=one_array(_torch_matrix_rank),
                 doc="Rank: the number of singular values above ``rtol * largest``.")


# -- norms -----------------------------------------------------------------------------


def _direction(xp: Any, x: Any) -> Any:
    """``sign(x)``; for complex ``x``, ``x / |x|`` (0 at 0), which has a derivative there."""
    if not is_complex(xp, x):
        return xp.sign(x)
    return x / safe_where_zero(xp, xp.abs(x))


def _split_ties(xp: Any, hit: Any, axis: int | tuple[int, ...]) -> Any:
    return hit / xp.sum(hit, axis=axis, keepdims=True)


def _matrix_norm_grad(xp: Any, g: Any, ans: Any, x: Any, *, keepdims: bool, ord: Any) -> Any:
    if not keepdims:
        g, ans = _matrix_grad(xp, g), _matrix_grad(xp, ans)
    if ord == "fro":
        return g * x / safe_where_zero(xp, ans)
    if ord in ("nuc", 2, -2):
        # float16 as the forward computed it (half_in_float32): backends have no float16 svd.
        half = is_half(xp, x.dtype)
        u, s, vh = xp.linalg.svd(xp.astype(x, xp.float32) if half else x, full_matrices=False)
        if half:
            u, vh = xp.astype(u, x.dtype), xp.astype(vh, x.dtype)
        if ord == "nuc":
            return g * xp.matmul(u, vh)
        if s.shape[-1] == 0:  # no singular value: nothing to pick (max() has no identity)
            return g * x
        # Tied extreme singular values share the gradient equally (PyTorch's, as amax's).
        extreme = (xp.max if ord == 2 else xp.min)(s, axis=-1, keepdims=True)
        share = xp.astype(_split_ties(xp, xp.astype(s == extreme, s.dtype), -1), u.dtype)
        return g * xp.matmul(u * share[..., None, :], vh)
    # 1 / -1: extreme column sum of |x|; inf / -inf: extreme row sum.
    across = -2 if ord in (1, -1) else -1
    if is_half(xp, x.dtype):  # summed as the forward summed them (half_in_float32)
        sums = xp.sum(xp.abs(xp.astype(x, xp.float32)), axis=across, keepdims=True)
        sums = xp.astype(sums, x.dtype)
    else:
        sums = xp.sum(xp.abs(x), axis=across, keepdims=True)
    # The extreme sum picked again from these sums: a backend's norm may add in another
    # order (PyTorch's: 3.216281242686625 for 3.2162812426866245), and then no sum equals
    # the forward's (the gradient was 0 / 0, nan, half the time on the torch backend).
    along = -1 if across == -2 else -2
    if sums.shape[along] == 0:  # no element: nothing to pick (max() has no identity)
        return g * _direction(xp, x)
    extreme = (xp.max if ord > 0 else xp.min)(sums, axis=along, keepdims=True)
    hit = _split_ties(xp, xp.astype(sums == extreme, g.dtype), along)
    return g * _direction(xp, x) * hit


def _check_order(function: str, ord: Any, matrix: bool) -> None:
    """Refuse an ``ord`` the norm has no meaning for (the library's error named no function)."""
    number = isinstance(ord, numbers.Real) and not isinstance(ord, bool)
    if matrix:
        if isinstance(ord, str):
            known = ord in ("fro", "nuc")
        else:
            known = number and ord in (1, -1, 2, -2, math.inf, -math.inf)
        if not known:
            raise InvalidArgumentError(
                f"{function}(): ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got {ord!r}"
            )
    elif not number:
        raise InvalidArgumentError(
            f"{function}(): ord must be a number (inf, -inf and 0 included), got {ord!r}; "
            "matrix norms ('fro', 'nuc') are linalg.matrix_norm's"
        )


@half_in_float32
def _matrix_norm(xp: Any, x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    _check_order("matrix_norm", ord, matrix=True)
    return xp.linalg.matrix_norm(x, keepdims=keepdims, ord=ord)


def _widened(function: str, xp: Any, x: Any, dtype: Any) -> Any:
    """``x`` as ``dtype`` for PyTorch's ``dtype=``, which may widen, never narrow."""
    if not xp.isdtype(dtype, ("real floating", "complex floating")):
        # (an integer one was not taken, without a word: the norm came out float32)
        raise DtypeError(
            f"{function}(): dtype= must be a floating or complex dtype (a norm is one), got "
            f"{dtype}"
        )
    if not xp.can_cast(x.dtype, dtype):
        raise DtypeError(
            f"{function}(): dtype={dtype} would narrow the input's {x.dtype}; give a dtype "
            "it converts to without loss, or convert the input first"
        )
    return xp.astype(x, dtype)


def _torch_matrix_norm(
    xp: Any, A: Any, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False, *,
    dtype: Any = None,
) -> Any:  # fmt: skip
    """PyTorch's ``linalg.matrix_norm(A, ord='fro', dim=(-2, -1), keepdim=False, *, dtype)``:
    the matrices may lie along any two axes; ``dtype`` converts ``A`` first."""
    if dtype is not None:
        A = _widened("matrix_norm", xp, A, dtype)
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise ShapeError(f"matrix_norm(): dim must be two axes, got {dim!r}")
    rows, cols = (checked_axis("matrix_norm", d, A.ndim) for d in dim)
    if rows == cols:
        raise ShapeError(f"matrix_norm(): dim must be two different axes, got {dim!r}")
    _check_order("matrix_norm", ord, matrix=True)
    moved = xp.moveaxis(A, (rows, cols), (-2, -1))
    out = xp.linalg.matrix_norm(moved, keepdims=keepdim, ord=ord)
    return xp.moveaxis(out, (-2, -1), (rows, cols)) if keepdim else out


matrix_norm = op("matrix_norm", _matrix_norm, vjp=_matrix_norm_grad,
                 torch_function=_torch_matrix_norm, namespace="linalg", promotion="float",
                 doc="Matrix norm of the last two axes (``ord``: ``'fro'``, ``'nuc'``, 1, -1, 2, "
                 "-2, inf or -inf).")


def _vector_norm_grad(
    xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, keepdims: bool, ord: Any
) -> Any:
    g = expand_reduced(xp, g, x.shape, axis, keepdims)
    norm = expand_reduced(xp, ans, x.shape, axis, keepdims)
    axes = normalize_axes(axis, x.ndim)
    if ord == 0:
        return xp.zeros_like(x)
    if ord == 1:
        return g * _direction(xp, x)
    if ord == 2:
        # NOTE: 0 at a zero vector (a subgradient), not 0 / 0; masked, not only divided by
        # a safe norm, so that its own derivative there is 0 too (x / 1 would give g * I).
        return xp.where(norm == 0, 0.0, g * x / safe_where_zero(xp, norm))
    if ord in (float("inf"), float("-inf")):
        # A NaN norm is that of the NaN elements: they take the gradient, as amax's NaN does
        # (no element equals NaN, and the ties' 0 / 0 made every element NaN).
        magnitude = xp.abs(x)
        reached = (magnitude == norm) | (xp.isnan(magnitude) & xp.isnan(norm))
        return g * _direction(xp, x) * _split_ties(xp, xp.astype(reached, g.dtype), axes)
    magnitude = xp.abs(x)
    if ord < 1:
        # |x|^(p-1) is infinite at 0; take it of a safe value and mask.
        powered = safe_where_zero(xp, magnitude) ** (ord - 1)
        scaled = xp.where(x == 0, 0.0, _direction(xp, x) * powered)
        return scaled * g * norm ** (1 - ord)
    scaled = _direction(xp, x) * magnitude ** (ord - 1)
    return xp.where(norm == 0, 0.0, scaled * g / safe_where_zero(xp, norm) ** (ord - 1))


@half_in_float32
def _vector_norm(
    xp: Any, x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2
) -> Any:
    _check_order("vector_norm", ord, matrix=False)
    if (ord == math.inf or ord < 0) and 0 in x.shape:
        if any(x.shape[a] == 0 for a in normalize_axes(axis, x.ndim)):
            # A maximum or minimum of nothing, as max() refuses (NumPy's norm answered 0),
            # or a negative power of an empty sum (NumPy's inf), as PyTorch
            raise ShapeError(
                f"vector_norm(): the {ord} norm of an empty axis is not defined (a maximum, "
                "a minimum or a negative power of no elements); the input has shape "
                f"{tuple(x.shape)}. Take it over axes that are not empty, or use a finite "
                "ord >= 0 (whose norm of nothing is 0)"
            )
    if ord != 0 and count(x.shape, axis) == 1:
        # One element: |x| for every ord but 0 (a count), as PyTorch's; the library's
        # sqrt(sum(x * x)) overflows at 3e38 in float32 (inf) and underflows at 1e-30 (0).
        return xp.sum(xp.abs(x), axis=axis, keepdims=keepdims)
    return xp.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)


def _torch_vector_norm(
    xp: Any, x: Any, ord: Any = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
) -> Any:
    """PyTorch's ``linalg.vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None)``:
    ``dtype`` converts ``x`` first."""
    if dtype is not None:
        x = _widened("vector_norm", xp, x, dtype)
    axis = reduction_axis("vector_norm", x, dim, None)
    _check_order("vector_norm", ord, matrix=False)
    return xp.linalg.vector_norm(x, axis=axis, keepdims=keepdim, ord=ord)


vector_norm = op("vector_norm", _vector_norm, vjp=_vector_norm_grad,
                 torch_function=_torch_vector_norm, namespace="linalg", promotion="float",
                 doc="Vector ``ord``-norm over ``axis`` (all axes by default).")


# -- products and parts of matrices ------------------------------------------------------


def _cross(xp: Any, x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    axis = negative_axis("cross", axis, x1, x2)
    lengths = [x.shape[axis] if x.ndim >= -axis else 1 for x in (x1, x2)]
    if lengths != [3, 3]:  # NumPy also takes 2-vectors, and drops the axis
        raise ShapeError(
            f"cross(): the inputs need length 3 along axis {axis}, got shapes {tuple(x1.shape)} "
            f"and {tuple(x2.shape)}; pass the axis of the 3-vectors (dim=)"
        )
    return xp.linalg.cross(x1, x2, axis=axis)


def _cross_grad_x1(xp: Any, g: Any, ans: Any, x1: Any, x2: Any, *, axis: int) -> Any:
    return xp.linalg.cross(conj(xp, x2), g, axis=negative_axis("cross", axis, x1, x2))


def _cross_grad_x2(xp: Any, g: Any, ans: Any, x1: Any, x2: Any, *, axis: int) -> Any:
    return xp.linalg.cross(g, conj(xp, x1), axis=negative_axis("cross", axis, x1, x2))


cross = op("cross", _cross, vjp=(_cross_grad_x1, _cross_grad_x2), namespace="linalg",
           broadcasting=True, promotion="mixed",
           doc="Cross product of 3-vectors along ``axis``, broadcasting.")

def _outer(xp: Any, x1: Any, x2: Any, /) -> Any:
    # NOTE: NumPy's outer flattens inputs of more dimensions; the standard and PyTorch
    # define it for vectors only, so anything else is refused rather than flattened.
    if x1.ndim != 1 or x2.ndim != 1:
        raise ShapeError(
            f"outer() takes two 1-D tensors, got {x1.ndim}-D and {x2.ndim}-D; flatten them "
            "first, or use plugrad.einsum or broadcasting (x1[..., None] * x2) for other shapes"
        )
    return xp.linalg.outer(x1, x2)


# PyTorch's torch.outer and x.outer(y) are this function (plugrad.outer is the same object).
outer = op("outer", _outer, namespace="linalg", methods="outer", promotion="mixed",
           doc="Outer product of two vectors: ``x1[i] * x2[j]``.",
           vjp=(lambda xp, g, ans, x1, x2: cast(xp, xp.matmul(g, conj(xp, x2)), x1.dtype),
                lambda xp, g, ans, x1, x2: cast(
                    xp, xp.matmul(xp.matrix_transpose(g), conj(xp, x1)), x2.dtype)))


def _trace_grad(xp: Any, g: Any, ans: Any, x: Any, *, offset: int, dtype: Any) -> Any:
    rows, cols = x.shape[-2], x.shape[-1]
    grad = _masked_by_eye(xp, _matrix_grad(xp, g), rows, cols, offset)
    grad = xp.broadcast_to(grad, tuple(x.shape))
    return grad if dtype is None else cast(xp, grad, x.dtype)


def _torch_trace(xp: Any, x: Any) -> Any:
    """PyTorch's ``x.trace()``: the main diagonal's sum, in ``int64`` for unsigned and bool
    matrices (the standard's function keeps an unsigned kind: ``uint64``). A matrix only,
    as PyTorch's (``plugrad.linalg.trace`` takes stacks of them)."""
    if x.ndim != 2:
        raise ShapeError(f"trace() takes a matrix, got shape {tuple(x.shape)}")
    x, dtype = torch_accumulated(xp, x, None)
    return xp.linalg.trace(x, dtype=dtype)


trace = op("trace(x, /, *, offset=0, dtype=None)", vjp=_trace_grad, namespace="linalg", saves=(),
           methods={"trace": _torch_trace},
           doc="Sum of the ``offset`` diagonal of the last two axes.")


def _torch_diagonal(xp: Any, x: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
    """PyTorch's ``x.diagonal(offset=0, dim1=0, dim2=1)``: a diagonal of two axes, as the last."""
    ndim = x.ndim
    # (NumPy integers and 0-d integer tensors as ints: the ops below record them)
    if type(dim1) is not int or type(dim2) is not int or type(offset) is not int:
        dim1, dim2 = _rules.one_int_axis("diagonal", dim1), _rules.one_int_axis("diagonal", dim2)
        offset = as_int(offset)
    if not (-ndim <= dim1 < ndim and -ndim <= dim2 < ndim) or dim1 % ndim == dim2 % ndim:
        raise AxisError(
            f"diagonal(): dim1={dim1} and dim2={dim2} must be two different axes of a tensor "
            f"of {ndim} dimensions (valid: {-ndim} to {ndim - 1})"
        )
    first, second = dim1 % ndim, dim2 % ndim
    rest = tuple(d for d in range(ndim) if d not in (first, second))
    return xp.linalg.diagonal(xp.permute_dims(x, (*rest, first, second)), offset=offset)


def _writable_diagonal(xp: Any, x: Any, /, *, offset: int = 0) -> Any:
    """NumPy's diagonal view made writable where ``x`` is, as PyTorch's is: writing into it
    (``x.diagonal().fill_(0)``) writes into ``x``; NumPy makes it read-only."""
    view = xp.linalg.diagonal(x, offset=offset)
    if x.flags.writeable and not view.flags.writeable:
        view.flags.writeable = True
    return view


def _torch_linalg_diagonal(
    xp: Any, x: Any, *, offset: int = 0, dim1: int = -2, dim2: int = -1
) -> Any:
    """PyTorch's ``linalg.diagonal(A, *, offset=0, dim1=-2, dim2=-1)``."""
    return _torch_diagonal(xp, x, offset, dim1, dim2)


diagonal = op("diagonal(x, /, *, offset=0)", namespace="linalg", view=True, saves=(),
              kernels={"numpy": _writable_diagonal}, methods={"diagonal": _torch_diagonal},
              torch_function=_torch_linalg_diagonal,
              doc="The ``offset`` diagonal of the last two axes.",
              vjp=lambda xp, g, ans, x, *, offset: _embed_diagonal(xp, g, tuple(x.shape), offset))


# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
