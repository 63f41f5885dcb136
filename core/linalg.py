"""The Array API ``linalg`` extension: ``plugrad.linalg.det``, ``plugrad.linalg.svd``, ...

The functions of this module are generated from the built-in op plugin
:mod:`plugrad.plugins.linalg_extension` when plugrad loads its plugins, like every other
op function; the four functions the standard also places in the main namespace
(``matmul``, ``matrix_transpose``, ``tensordot``, ``vecdot``) are the same
objects as ``plugrad.matmul`` and so on.

Backward rules reach these functions as ``xp.linalg.<name>``, which means the
same thing with raw backend arrays and, under ``create_graph=True``, with Tensors.
"""

from __future__ import annotations

import math
import sys
import typing as _typing
from typing import Any

if _typing.TYPE_CHECKING:  # the functions plugin loading installs, as type checkers see them
    from ._api_linalg import *  # noqa: F403

_SHARED = ("matmul", "matrix_transpose", "tensordot", "vecdot")


def norm(
    A: Any,
    ord: Any = None,
    dim: int | tuple[int, ...] | list[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Any:
    """PyTorch's ``linalg.norm``: a vector or a matrix norm, as ``dim`` and ``ord`` say.

    A vector norm over one axis (``dim`` an int) or over every element (no
    ``dim`` and no ``ord``); a matrix norm over two axes (``dim`` a pair, or
    no ``dim`` and an ``ord`` for a 2-D ``A``). ``ord=None`` is the 2-norm of a
    vector and the Frobenius norm of a matrix. (The standard has
    :func:`vector_norm` and :func:`matrix_norm`; this combines them.)

    Examples
    --------
    >>> import plugrad
    >>> plugrad.linalg.norm(plugrad.tensor([3.0, 4.0]))
    tensor(5.)
    >>> plugrad.linalg.norm(plugrad.eye(2), ord="nuc")
    tensor(2.)
    """
    namespace = sys.modules["plugrad"]
    if dtype is not None:
        A = namespace.astype(A, dtype)
    axes = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    if axes is None and ord is not None:
        if A.ndim not in (1, 2):
            from .errors import ShapeError

            raise ShapeError(
                f"linalg.norm(ord={ord!r}) without dim takes a 1-D or 2-D tensor, got "
                f"{A.ndim}-D; give dim"
            )
        axes = (0, 1) if A.ndim == 2 else 0
    if isinstance(axes, tuple) and len(axes) == 2:
        matrix_axes = _matrix_axes(axes, A.ndim)
        moved = namespace.moveaxis(A, matrix_axes, (-2, -1))
        result = matrix_norm(moved, ord="fro" if ord is None else ord, keepdims=keepdim)  # noqa: F405
        return namespace.moveaxis(result, (-2, -1), matrix_axes) if keepdim else result
    return vector_norm(A, axis=axes, keepdims=keepdim, ord=2 if ord is None else ord)  # noqa: F405


def _matrix_axes(dim: tuple[Any, ...], ndim: int) -> tuple[int, int]:
    """The two axes of a matrix norm, each checked to be in range, and not the same one."""
    from .errors import ArgumentError, AxisError

    if any(isinstance(axis, bool) or not hasattr(axis, "__index__") for axis in dim):
        raise ArgumentError(f"linalg.norm(): dim takes ints, got {dim!r}")
    dim = tuple(axis.__index__() for axis in dim)
    for axis in dim:
        if not -ndim <= axis < ndim:
            raise AxisError(
                f"linalg.norm(): dim {axis} is out of range for a {ndim}-D tensor; give "
                f"dims in [{-ndim}, {ndim - 1}]"
            )
    first, second = dim[0] % ndim, dim[1] % ndim
    if first == second:
        raise AxisError(f"linalg.norm(): dim {dim!r} names one dimension twice; give two")
    return first, second


def multi_dot(tensors: Any) -> Any:
    """PyTorch's ``linalg.multi_dot``: the product of the matrices in order; a first 1-D
    tensor is a row and a last one a column, which the result then leaves out.

    Multiplied left to right (PyTorch picks the cheapest order: the same values up to
    rounding).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.linalg.multi_dot([plugrad.ones(2), plugrad.ones(2, 3), plugrad.ones(3)])
    tensor(6.)
    """
    namespace = sys.modules["plugrad"]
    if not isinstance(tensors, (list, tuple)) or len(tensors) < 2:
        raise ValueError("multi_dot() takes a list of two or more tensors")
    if any(t.ndim not in (1, 2) for t in tensors) or any(t.ndim != 2 for t in tensors[1:-1]):
        shapes = [tuple(t.shape) for t in tensors]
        raise namespace.errors.ShapeError(
            f"multi_dot(): the first and last tensors must be 1-D or 2-D and the others 2-D, "
            f"got {shapes}"
        )
    result = tensors[0]
    for tensor in tensors[1:]:
        result = namespace.matmul(result, tensor)
    return result


def cond(A: Any, p: Any = None) -> Any:
    """PyTorch's ``linalg.cond(A, p=None)``: the condition number of each matrix.

    ``p`` None or 2 is the ratio of the extreme singular values (-2 its inverse);
    ``'fro'``, ``'nuc'``, ``inf``, ``-inf``, 1 and -1 are ``norm(A) * norm(inv(A))``,
    which needs square, invertible matrices.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.linalg.cond(plugrad.tensor([[2.0, 0.0], [0.0, 0.5]]))
    tensor(4.)
    """
    namespace = sys.modules["plugrad"]
    norms_of_inverse = ("fro", "nuc", float("inf"), float("-inf"), 1, -1)
    if A.size == 0 and (
        p in (None, 2, -2) or (p in norms_of_inverse and A.shape[-1] == A.shape[-2])
    ):
        # no singular value to divide by: 0 for each matrix, as PyTorch's
        return namespace.zeros(A.shape[:-2], dtype=namespace.abs(A).dtype, device=A.device)
    if p is None or p in (2, -2):
        values = namespace.linalg.svdvals(A)
        largest, smallest = values[..., 0], values[..., -1]
        return largest / smallest if p != -2 else smallest / largest
    if p not in norms_of_inverse:
        raise namespace.errors.ArgumentError(
            f"cond(): p must be None, 2, -2, 'fro', 'nuc', inf, -inf, 1 or -1, got {p!r}"
        )
    try:
        return matrix_norm(A, ord=p) * matrix_norm(namespace.linalg.inv(A), ord=p)  # noqa: F405
    except namespace.errors.LinAlgError:
        if A.ndim == 2:  # singular: inf, as PyTorch's
            norm = matrix_norm(A, ord=p)  # noqa: F405
            return namespace.full((), math.inf, dtype=norm.dtype, device=norm.device)
        # a singular matrix in the batch: each matrix on its own
        rows = [cond(matrix, p) for matrix in A.reshape(-1, *A.shape[-2:])]
        return namespace.stack(rows).reshape(A.shape[:-2])


def lstsq(A: Any, B: Any, rcond: float | None = None, *, driver: str | None = None) -> Any:
    """PyTorch's ``linalg.lstsq(A, B)``: the ``X`` minimizing ``|A @ X - B|`` (its smallest
    norm where ``A`` is rank deficient), as a named tuple ``(solution, residuals, rank,
    singular_values)``.

    The solution comes from the pseudo-inverse (singular values below ``rcond`` times the
    largest count as 0; ``"gels"``, for full-rank ``A``, reads no ``rcond``). What else
    is given follows ``driver``, as in PyTorch (on the CPU): the default ``"gelsy"`` gives
    ``rank``; ``"gelsd"`` and ``"gelss"`` also the ``singular_values`` of ``A`` and, where
    ``A`` is tall and of full rank, the ``residuals`` (the squared norm of each column of
    ``A @ X - B``); ``"gels"`` the residuals only. What is not given is an empty tensor.
    ``B`` holds matrices, or vectors where it has ``A``'s shape without the last axis.

    Examples
    --------
    >>> import plugrad
    >>> A = plugrad.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> plugrad.linalg.lstsq(A, plugrad.tensor([[1.0], [2.0], [3.0]])).solution
    tensor([[1.],
            [2.]])
    """
    namespace = sys.modules["plugrad"]
    if driver not in (None, "gelsy", "gelsd", "gelss", "gels"):
        raise namespace.errors.ArgumentError(
            f"lstsq(): driver must be None, 'gelsy', 'gelsd', 'gelss' or 'gels', got {driver!r}"
        )
    if B.ndim == 0:
        raise namespace.errors.ShapeError("lstsq(): B must be a vector or matrices, got a 0-d B")
    # gels (QR, for full-rank A) has no cut-off: it takes no rcond, as in PyTorch.
    tolerance = {} if rcond is None or driver == "gels" else {"rtol": rcond}
    inverse = namespace.linalg.pinv(A, **tolerance)
    # B of A's shape without its last axis: vectors (one per matrix), as PyTorch reads it.
    vectors = tuple(B.shape) == tuple(A.shape[:-1])
    matrices = B[..., None] if vectors else B
    solved = namespace.matmul(inverse, matrices)
    solution = solved[..., 0] if vectors else solved
    rank = namespace.linalg.matrix_rank(A, **tolerance)
    # Real, also for complex A (PyTorch's residuals and singular values are real).
    real = namespace.finfo(solution.dtype).dtype
    empty = namespace.zeros((0,), dtype=real, device=solution.device)
    residuals = singular_values = empty
    rows, columns = A.shape[-2], A.shape[-1]
    if (
        driver in ("gelsd", "gelss", "gels")
        and rows > columns
        and bool(namespace.all(rank == columns))
    ):
        error = namespace.abs(namespace.matmul(A, solved) - matrices)
        residuals = namespace.sum(error * error, axis=-2)  # one column for vectors too
    if driver in ("gelsd", "gelss"):
        singular_values = namespace.linalg.svdvals(A)
    if driver == "gels":
        rank = namespace.zeros((0,), dtype=rank.dtype, device=rank.device)
    return namespace.return_types.linalg_lstsq(solution, residuals, rank, singular_values)


#: Higham's Pade approximant of degree 13 to exp: its coefficients, and the largest 1-norm
#: for which it is exact to double precision (larger matrices are scaled down by 2**s first
#: and the result squared s times).
_PADE_13 = (
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
    129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
    40840800.0, 960960.0, 16380.0, 182.0, 1.0,
)  # fmt: skip
_THETA_13 = 5.371920351148152


def matrix_exp(A: Any) -> Any:
    """PyTorch's ``linalg.matrix_exp``: the exponential of each square matrix, ``sum A**k / k!``.

    By scaling and squaring with a Pade approximant of degree 13 (Higham's), each
    matrix of a batch scaled as its own norm needs; differentiable, as its parts are.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.linalg.matrix_exp(plugrad.tensor([[0.0, 1.0], [0.0, 0.0]]))
    tensor([[1., 1.],
            [0., 1.]])
    """
    namespace = sys.modules["plugrad"]
    errors = namespace.errors
    if not isinstance(A, namespace.Tensor):
        raise TypeError(f"matrix_exp() takes a Tensor, got {type(A).__name__}")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise errors.ShapeError(f"matrix_exp() takes square matrices, got shape {A.shape}")
    if A.dtype.kind not in ("real floating", "complex floating"):
        raise errors.DtypeError(
            f"matrix_exp() takes floating matrices, got {A.dtype.name}; convert them first "
            "(A.double())"
        )
    n = A.shape[-1]
    if n == 0 or A.size == 0:
        return namespace.asarray(A, copy=True)
    if A.dtype.kind == "real floating" and A.dtype.itemsize < 4:
        # Computed in float32 (the approximant's coefficients overflow float16), as PyTorch
        return namespace.astype(matrix_exp(namespace.astype(A, namespace.float32)), A.dtype)
    norm = namespace.max(namespace.sum(namespace.abs(A), axis=-2), axis=-1)
    finite = namespace.isfinite(norm)
    if not bool(namespace.all(finite)):
        # A matrix holding inf or nan (or whose norm overflows) is nan, as PyTorch's: the
        # others are computed with it set to 0, which needs no squaring.
        finite = finite[..., None, None]
        computed = matrix_exp(namespace.where(finite, A, namespace.zeros_like(A)))
        return namespace.where(finite, computed, math.nan)
    positive = namespace.where(norm > 0, norm, 1.0)
    squarings = namespace.maximum(namespace.ceil(namespace.log2(positive / _THETA_13)), 0.0)
    rounds = int(namespace.max(squarings).item()) if squarings.size else 0
    real = namespace.finfo(A.dtype).dtype
    scale = namespace.astype(namespace.pow(2.0, -squarings), real)[..., None, None]
    X = A * namespace.astype(scale, A.dtype)
    identity = namespace.eye(n, dtype=A.dtype, device=A.device)
    b = _PADE_13
    X2 = namespace.matmul(X, X)
    X4 = namespace.matmul(X2, X2)
    X6 = namespace.matmul(X4, X2)
    odd = namespace.matmul(X6, b[13] * X6 + b[11] * X4 + b[9] * X2)
    U = namespace.matmul(X, odd + b[7] * X6 + b[5] * X4 + b[3] * X2 + b[1] * identity)
    even = namespace.matmul(X6, b[12] * X6 + b[10] * X4 + b[8] * X2)
    V = even + b[6] * X6 + b[4] * X4 + b[2] * X2 + b[0] * identity
    result = namespace.linalg.solve(V - U, V + U)
    for k in range(rounds):  # each matrix squared as many times as it was halved
        result = namespace.where(
            (squarings > k)[..., None, None], namespace.matmul(result, result), result
        )
    return result


def solve_triangular(
    A: Any, B: Any, *, upper: bool, left: bool = True, unitriangular: bool = False
) -> Any:
    """PyTorch's ``linalg.solve_triangular``: ``X`` with ``A @ X = B`` (``X @ A = B`` where
    ``left`` is false) for triangular ``A``.

    Only the triangle ``upper`` names is read (and with ``unitriangular`` not its
    diagonal either, taken as ones), so the gradient in ``A`` lies in that triangle too.
    A zero on the diagonal is a :class:`~plugrad.errors.LinAlgError` (PyTorch's answer
    is inf or nan). Batched as :func:`solve`; ``B`` is a matrix (or a batch of them).

    Examples
    --------
    >>> import plugrad
    >>> A = plugrad.tensor([[2.0, 1.0], [9.0, 4.0]])  # 9.0 lies outside the triangle
    >>> plugrad.linalg.solve_triangular(A, plugrad.tensor([[3.0], [8.0]]), upper=True)
    tensor([[0.5000],
            [2.0000]])
    """
    namespace = sys.modules["plugrad"]
    errors = namespace.errors
    for name, value in (("A", A), ("B", B)):
        if not isinstance(value, namespace.Tensor):
            raise TypeError(f"solve_triangular() takes Tensors, got {name} {type(value).__name__}")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise errors.ShapeError(f"solve_triangular(): A must be square matrices, got {A.shape}")
    if B.ndim < 2:
        raise errors.ShapeError(
            f"solve_triangular(): B must be a matrix or a batch of them, got shape {B.shape}; "
            "for a vector b, give b[:, None]"
        )
    for name, flag in (("upper", upper), ("left", left), ("unitriangular", unitriangular)):
        errors.checked_bool(f"solve_triangular(): {name}", flag)
    triangle = namespace.triu(A) if upper else namespace.tril(A)
    if unitriangular:
        diagonal = namespace.eye(A.shape[-1], dtype=namespace.bool, device=A.device)
        triangle = namespace.where(diagonal, namespace.ones_like(triangle), triangle)
    if left:
        return namespace.linalg.solve(triangle, B)
    transpose = namespace.matrix_transpose
    return transpose(namespace.linalg.solve(transpose(triangle), transpose(B)))


def __getattr__(name: str) -> Any:
    if name in _SHARED:
        return getattr(sys.modules["plugrad"], name)
    if name == "LinAlgError":  # PyTorch's torch.linalg.LinAlgError
        return sys.modules["plugrad"].errors.LinAlgError
    raise AttributeError(f"module 'plugrad.linalg' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SHARED, "LinAlgError"})
