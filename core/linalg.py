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

from .errors import ArgumentError, InvalidArgumentError

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
        raise InvalidArgumentError("multi_dot() takes a list of two or more tensors")
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
    largest count as 0; ``"gels"``, for full-rank ``A``, reads no ``rcond``), for every
    driver: it is the answer of ``"gelsd"``. Where ``rcond`` cuts a singular value that is
    not 0, PyTorch's default ``"gelsy"``, which cuts by a rank-revealing QR instead, may
    give another solution. What else
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
    if A.ndim < 2:
        raise namespace.errors.ShapeError(
            f"lstsq(): A must be a matrix or a batch of them, got shape {tuple(A.shape)}"
        )
    # (B of A's shape without its last axis holds vectors, one per matrix; see below)
    rows = B.shape[-1] if tuple(B.shape) == tuple(A.shape[:-1]) or B.ndim == 1 else B.shape[-2]
    if rows != A.shape[-2]:
        raise namespace.errors.ShapeError(
            f"lstsq(): A of shape {tuple(A.shape)} has {A.shape[-2]} rows, but B of shape "
            f"{tuple(B.shape)} has {rows}"
        )
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
        raise ArgumentError(f"matrix_exp() takes a Tensor, got {type(A).__name__}")
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
            raise ArgumentError(
                f"solve_triangular() takes Tensors, got {name} {type(value).__name__}"
            )
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise errors.ShapeError(f"solve_triangular(): A must be square matrices, got {A.shape}")
    if B.ndim < 2:
        raise errors.ShapeError(
            f"solve_triangular(): B must be a matrix or a batch of them, got shape {B.shape}; "
            "for a vector b, give b[:, None]"
        )
    for name, flag in (("upper", upper), ("left", left), ("unitriangular", unitriangular)):
        errors.checked_bool(f"solve_triangular(): {name}", flag)
    axis, side = (-2, "rows") if left else (-1, "columns")
    if B.shape[axis] != A.shape[-1]:
        raise errors.ShapeError(
            f"solve_triangular(): B of shape {tuple(B.shape)} has {B.shape[axis]} {side}, but A "
            f"of shape {tuple(A.shape)} needs {A.shape[-1]} (left={left})"
        )
    triangle = namespace.triu(A) if upper else namespace.tril(A)
    if unitriangular:
        diagonal = namespace.eye(A.shape[-1], dtype=namespace.bool, device=A.device)
        triangle = namespace.where(diagonal, namespace.ones_like(triangle), triangle)
    if left:
        return namespace.linalg.solve(triangle, B)
    transpose = namespace.matrix_transpose
    return transpose(namespace.linalg.solve(transpose(triangle), transpose(B)))


def vander(x: Any, *, N: int | None = None) -> Any:
    """PyTorch's ``linalg.vander``: the powers ``x**0, x**1, ..., x**(N - 1)`` of each
    element along a new last axis (``N`` defaults to ``x``'s last axis's length).

    Each power is the one before times ``x``, so integers stay exact.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.linalg.vander(plugrad.tensor([1, 2, 3]))
    tensor([[1, 1, 1],
            [1, 2, 4],
            [1, 3, 9]])
    """
    namespace = sys.modules["plugrad"]
    if not isinstance(x, namespace.Tensor) or x.ndim == 0:
        raise namespace.errors.ShapeError(
            "linalg.vander(): x must be a tensor of at least one dimension"
        )
    count = x.shape[-1] if N is None else N
    if isinstance(count, bool) or not isinstance(count, int) or count < 2:
        raise namespace.errors.InvalidArgumentError(
            f"linalg.vander(): N must be an int greater than 1, got {count!r}"
        )
    columns = [namespace.ones_like(x)]
    for _ in range(count - 1):
        columns.append(columns[-1] * x)
    return namespace.stack(columns, axis=-1)


def _leading_size(function: str, shape: tuple[int, ...], front: int) -> tuple[int, int]:
    namespace = sys.modules["plugrad"]
    rows, columns = math.prod(shape[:front]), math.prod(shape[front:])
    if rows != columns:
        raise namespace.errors.ShapeError(
            f"{function}(): the product of the first axes' sizes {shape[:front]} ({rows}) must "
            f"equal that of the others {shape[front:]} ({columns})"
        )
    return rows, columns


def tensorinv(A: Any, ind: int = 2) -> Any:
    """PyTorch's ``linalg.tensorinv``: the inverse of ``A`` read as a matrix whose rows are
    its first ``ind`` axes, with the shape ``A.shape[ind:] + A.shape[:ind]``.

    Examples
    --------
    >>> import plugrad
    >>> A = plugrad.eye(4).reshape(4, 2, 2) * 2
    >>> plugrad.linalg.tensorinv(A, ind=1).shape
    (2, 2, 4)
    """
    namespace = sys.modules["plugrad"]
    if isinstance(ind, bool) or not isinstance(ind, int) or ind < 1:
        raise namespace.errors.InvalidArgumentError(
            f"linalg.tensorinv(): ind must be a positive int, got {ind!r}"
        )
    shape = tuple(A.shape)
    rows, columns = _leading_size("linalg.tensorinv", shape, ind)
    inverse = namespace.linalg.inv(namespace.reshape(A, (rows, columns)))
    return namespace.reshape(inverse, shape[ind:] + shape[:ind])


def tensorsolve(A: Any, B: Any, dims: tuple[int, ...] | list[int] | None = None) -> Any:
    """PyTorch's ``linalg.tensorsolve``: the ``X`` for which ``tensordot(A, X, X.ndim)`` is
    ``B`` (``A``'s axes ``dims`` moved to its end first), of shape ``A.shape[B.ndim:]``.

    Examples
    --------
    >>> import plugrad
    >>> A = plugrad.eye(6).reshape(2, 3, 6)
    >>> plugrad.linalg.tensorsolve(A, plugrad.ones(2, 3)).shape
    (6,)
    """
    namespace = sys.modules["plugrad"]
    if dims is not None:
        axes = [axis % A.ndim for axis in dims]
        A = namespace.moveaxis(A, axes, list(range(A.ndim - len(axes), A.ndim)))
    shape = tuple(A.shape)
    if shape[: B.ndim] != tuple(B.shape):
        raise namespace.errors.ShapeError(
            f"linalg.tensorsolve(): A's first axes {shape[: B.ndim]} must be B's shape "
            f"{tuple(B.shape)}"
        )
    rows, columns = _leading_size("linalg.tensorsolve", shape, B.ndim)
    solution = namespace.linalg.solve(
        namespace.reshape(A, (rows, columns)), namespace.reshape(B, (rows, 1))
    )
    return namespace.reshape(solution, shape[B.ndim :])


def cholesky_ex(A: Any, *, upper: bool = False, check_errors: bool = False) -> Any:
    """PyTorch's ``linalg.cholesky_ex``: the factor of each matrix and an ``info`` (int32)
    saying which are not positive definite, instead of an error.

    ``info`` is 0 for a matrix factored, else the order of its first leading minor
    that is not positive definite (or, as in PyTorch, holds NaN in the triangle read);
    that matrix's factor is NaN (PyTorch's holds what the factorization left). With
    ``check_errors`` such a matrix raises :class:`~plugrad.errors.LinAlgError`, as
    :func:`cholesky` does.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.linalg.cholesky_ex(plugrad.tensor([[4.0, 2.0], [2.0, 1.0]])).info
    tensor(2, dtype=plugrad.int32)
    """
    namespace = sys.modules["plugrad"]
    errors = namespace.errors
    if not isinstance(A, namespace.Tensor) or A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise errors.ShapeError(
            "linalg.cholesky_ex(): A must be a square matrix or a batch of them, got "
            f"{getattr(A, 'shape', type(A).__name__)}"
        )
    batch, size = tuple(A.shape[:-2]), A.shape[-1]
    factor = _factor(namespace, A, upper)
    if factor is not None and _factored(namespace, A, factor):
        info = namespace.zeros(batch, dtype=namespace.int32, device=A.device)
        return namespace.return_types.linalg_cholesky_ex(factor, info)
    # Matrix by matrix: which fail, and where (the first leading minor that fails).
    factors, infos = [], []
    for index, matrix in enumerate(namespace.reshape(A, (-1, size, size))):
        one = _factor(namespace, matrix, upper)
        if one is not None and _factored(namespace, matrix, one):
            factors.append(one)
            infos.append(0)
            continue
        order = next(
            (k for k in range(1, size + 1) if not _factors(namespace, matrix[:k, :k], upper)),
            size,
        )
        if check_errors:
            where = f" (batch element {index})" if batch else ""
            raise errors.LinAlgError(
                f"linalg.cholesky_ex(){where}: the matrix is not positive definite (its leading "
                f"minor of order {order} is not)"
            )
        factors.append(namespace.full((size, size), math.nan, dtype=A.dtype, device=A.device))
        infos.append(order)
    factor = namespace.reshape(namespace.stack(factors), tuple(A.shape))
    info = namespace.reshape(
        namespace.asarray(infos, dtype=namespace.int32, device=A.device), batch
    )
    return namespace.return_types.linalg_cholesky_ex(factor, info)


def _factor(namespace: Any, A: Any, upper: bool = False) -> Any:
    """The Cholesky factor of ``A``, or None where the backend raises."""
    try:
        return namespace.linalg.cholesky(A, upper=upper)
    except namespace.errors.LinAlgError:
        return None


def _factored(namespace: Any, A: Any, factor: Any) -> bool:
    """Whether every matrix of ``A`` was factored: JAX's kernel gives NaN for a matrix that
    is not positive definite (one without NaN), Dask's raises when computed."""
    with namespace.no_grad():
        axes = (-2, -1)
        made_nan = namespace.any(namespace.isnan(factor), axis=axes)
        failed = namespace.logical_and(made_nan, ~namespace.any(namespace.isnan(A), axis=axes))
        try:
            return not bool(namespace.any(failed))
        except namespace.errors.LinAlgError:
            return False


def _factors(namespace: Any, matrix: Any, upper: bool = False) -> bool:
    """Whether the Cholesky factorization of ``matrix`` (of the triangle ``upper`` names)
    succeeds."""
    factor = _factor(namespace, matrix, upper)
    return factor is not None and _factored(namespace, matrix, factor)


# -- LU factorization ------------------------------------------------------------------------


def _lu_input(function: str, A: Any) -> Any:
    """``A`` checked to be a floating (or complex) matrix or a batch of them."""
    namespace = sys.modules["plugrad"]
    if not isinstance(A, namespace.Tensor):
        raise ArgumentError(f"{function}() takes a Tensor, got {type(A).__name__}")
    if A.ndim < 2:
        raise namespace.errors.ShapeError(
            f"{function}(): A must be a matrix or a batch of them, got shape {tuple(A.shape)}"
        )
    if A.dtype.kind not in ("real floating", "complex floating"):
        raise namespace.errors.DtypeError(
            f"{function}(): A must be a floating-point or complex tensor, got {A.dtype.name}; "
            "convert it with A.double() (as PyTorch, integer matrices are refused)"
        )
    return A


def _pivot_magnitude(namespace: Any, column: Any) -> Any:
    """What partial pivoting maximizes: ``|x|``, and ``|re| + |im|`` for complex (LAPACK's)."""
    if column.dtype.kind == "complex floating":
        return namespace.abs(namespace.real(column)) + namespace.abs(namespace.imag(column))
    return namespace.abs(column)


def _lu_factor(A: Any, pivot: bool) -> tuple[Any, Any, Any]:
    """The packed factors, the 1-based row interchanges and LAPACK's ``info`` of each matrix.

    Gaussian elimination with partial pivoting (the first largest element of each
    column below the diagonal, as LAPACK's), one column at a time, on whole arrays
    of plugrad's ops: it runs on every backend and is differentiable through the
    ops themselves (the pivots, being indices, are constants). A zero pivot leaves
    its column as it is and is counted in ``info``, as LAPACK's ``getrf`` does.
    """
    namespace = sys.modules["plugrad"]
    rows, columns = A.shape[-2], A.shape[-1]
    batch = tuple(A.shape[:-2])
    steps = min(rows, columns)
    device = A.device
    row_index = namespace.arange(rows, device=device)
    column_index = namespace.arange(columns, device=device)
    below = namespace.expand_dims(row_index, axis=-1)  # (rows, 1)
    pivots = []
    zero_pivot = namespace.zeros(batch, dtype=namespace.int32, device=device)
    LU = A
    for j in range(steps):
        if pivot:
            with namespace.no_grad():
                candidates = _pivot_magnitude(namespace, LU[..., j:, j])
                chosen = namespace.argmax(candidates, axis=-1) + j  # (batch)
            chosen = namespace.expand_dims(namespace.astype(chosen, row_index.dtype), axis=-1)
            order = namespace.where(
                row_index == j, chosen, namespace.where(row_index == chosen, j, row_index)
            )
            order = namespace.broadcast_to(namespace.expand_dims(order, axis=-1), LU.shape)
            LU = namespace.take_along_axis(LU, order, axis=-2)
            pivots.append(chosen[..., 0] + 1)
        else:
            pivots.append(namespace.full(batch, j + 1, dtype=row_index.dtype, device=device))
        diagonal = LU[..., j, j]
        is_zero = diagonal == 0
        with namespace.no_grad():
            first_zero = (zero_pivot == 0) & is_zero
            zero_pivot = namespace.where(first_zero, j + 1, zero_pivot)
        safe = namespace.where(is_zero, namespace.ones_like(diagonal), diagonal)
        scale = namespace.where(is_zero, namespace.zeros_like(diagonal), 1 / safe)
        column = LU[..., :, j] * namespace.expand_dims(scale, axis=-1)
        multipliers = namespace.where(row_index > j, column, namespace.zeros_like(column))
        pivot_row = LU[..., j, :]
        pivot_row = namespace.where(column_index > j, pivot_row, namespace.zeros_like(pivot_row))
        update = namespace.expand_dims(multipliers, axis=-1) * namespace.expand_dims(
            pivot_row, axis=-2
        )
        LU = LU - update
        in_column = (below > j) & (column_index == j)
        LU = namespace.where(in_column, namespace.expand_dims(multipliers, axis=-1), LU)
    if pivots:
        pivot_array = namespace.astype(namespace.stack(pivots, axis=-1), namespace.int32)
    else:
        pivot_array = namespace.zeros((*batch, 0), dtype=namespace.int32, device=device)
    return LU, pivot_array, zero_pivot


def lu_factor_ex(A: Any, *, pivot: bool = True, check_errors: bool = False) -> Any:
    """PyTorch's ``linalg.lu_factor_ex``: :func:`lu_factor` with LAPACK's ``info`` (int32).

    ``info`` is 0 for each matrix whose ``U`` has no zero on its diagonal, else
    the (1-based) position of the first zero: the factorization is complete, but
    ``U`` is singular, so solving with it gives inf or NaN. With ``check_errors``
    such a matrix raises :class:`~plugrad.errors.LinAlgError`.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.linalg.lu_factor_ex(plugrad.tensor([[1.0, 2.0], [2.0, 4.0]])).info
    tensor(2, dtype=plugrad.int32)
    """
    namespace = sys.modules["plugrad"]
    A = _lu_input("linalg.lu_factor_ex", A)
    namespace.errors.checked_bool("linalg.lu_factor_ex(): pivot", pivot)
    namespace.errors.checked_bool("linalg.lu_factor_ex(): check_errors", check_errors)
    LU, pivots, info = _lu_factor(A, pivot)
    if check_errors:
        _raise_for_info(namespace, "linalg.lu_factor_ex", info, "U")
    return namespace.return_types.linalg_lu_factor_ex(LU, pivots, info)


def _raise_for_info(namespace: Any, function: str, info: Any, what: str) -> None:
    with namespace.no_grad():
        flat = [int(value) for value in namespace.reshape(info, (-1,)).tolist()]
    for index, position in enumerate(flat):
        if position:
            where = f" (batch element {index})" if info.ndim else ""
            raise namespace.errors.LinAlgError(
                f"{function}(){where}: the factorization's {what}[{position - 1}, "
                f"{position - 1}] is exactly zero: the matrix is singular"
            )


def lu_factor(A: Any, *, pivot: bool = True) -> Any:
    """PyTorch's ``linalg.lu_factor``: the LU factorization of each matrix, packed.

    Returns ``(LU, pivots)``: ``LU`` holds ``U`` on and above its diagonal and
    the multipliers of the unit lower-triangular ``L`` below it; ``pivots``
    (int32, 1-based, LAPACK's convention) says that row ``i`` was interchanged
    with row ``pivots[i]``, in order. Matrices may be rectangular and batched.
    ``pivot=False`` factors without row interchanges (PyTorch offers that on CUDA
    only). Differentiable in ``A``. A singular matrix raises
    :class:`~plugrad.errors.LinAlgError`, as PyTorch's does; :func:`lu_factor_ex`
    reports it instead.

    Computed by elimination on whole arrays, one column at a time, on every
    backend: fine for the sizes one differentiates through (tens to hundreds);
    large matrices take a Python step per column.

    Examples
    --------
    >>> import plugrad
    >>> A = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> LU, pivots = plugrad.linalg.lu_factor(A)
    >>> LU, pivots
    (tensor([[3.0000, 4.0000],
            [0.3333, 0.6667]]), tensor([2, 2], dtype=plugrad.int32))
    >>> plugrad.linalg.lu_solve(LU, pivots, plugrad.tensor([[5.0], [6.0]]))
    tensor([[-4.0000],
            [ 4.5000]])
    """
    namespace = sys.modules["plugrad"]
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    _raise_for_info(namespace, "linalg.lu_factor", info, "U")
    return namespace.return_types.linalg_lu_factor(LU, pivots)


def _permutation(namespace: Any, pivots: Any, rows: int) -> Any:
    """The row order the interchanges ``pivots`` (1-based) make: ``P^T A`` is ``A[order]``."""
    row_index = namespace.arange(rows, device=pivots.device)
    order = namespace.broadcast_to(row_index, (*pivots.shape[:-1], rows))
    for j in range(pivots.shape[-1]):
        other = namespace.expand_dims(namespace.astype(pivots[..., j], row_index.dtype) - 1, -1)
        at_j = order[..., j : j + 1]
        at_other = namespace.take_along_axis(order, other, axis=-1)
        order = namespace.where(
            row_index == j, at_other, namespace.where(row_index == other, at_j, order)
        )
    return order


def _check_pivots(function: str, LU: Any, pivots: Any) -> None:
    namespace = sys.modules["plugrad"]
    if not isinstance(pivots, namespace.Tensor) or pivots.dtype.kind != "signed integer":
        raise namespace.errors.DtypeError(
            f"{function}(): pivots must be an integer tensor (from lu_factor), got "
            f"{getattr(pivots, 'dtype', type(pivots).__name__)}"
        )
    steps = min(LU.shape[-2], LU.shape[-1])
    if tuple(pivots.shape) != (*LU.shape[:-2], steps):
        raise namespace.errors.ShapeError(
            f"{function}(): pivots of shape {tuple(pivots.shape)} do not go with LU of shape "
            f"{tuple(LU.shape)}; lu_factor gives shape {(*LU.shape[:-2], steps)}"
        )
    with namespace.no_grad():
        inside = bool(namespace.all((pivots >= 1) & (pivots <= LU.shape[-2])))
    if not inside:
        raise namespace.errors.InvalidArgumentError(
            f"{function}(): pivots must lie in [1, {LU.shape[-2]}] (1-based row numbers)"
        )


def lu_solve(LU: Any, pivots: Any, B: Any, *, left: bool = True, adjoint: bool = False) -> Any:
    """PyTorch's ``linalg.lu_solve``: ``X`` with ``A @ X = B`` from :func:`lu_factor`'s result.

    ``left=False`` solves ``X @ A = B``; ``adjoint=True`` uses ``A``'s conjugate
    transpose. Batched (the batch dimensions broadcast) and differentiable in
    ``LU`` and ``B``.
    """
    namespace = sys.modules["plugrad"]
    errors = namespace.errors
    LU = _lu_input("linalg.lu_solve", LU)
    if LU.shape[-1] != LU.shape[-2]:
        raise errors.ShapeError(
            f"linalg.lu_solve(): LU must come from square matrices, got shape {tuple(LU.shape)}"
        )
    _check_pivots("linalg.lu_solve", LU, pivots)
    if not isinstance(B, namespace.Tensor) or B.ndim < 2:
        raise errors.ShapeError(
            "linalg.lu_solve(): B must be a matrix or a batch of them, got "
            f"{getattr(B, 'shape', type(B).__name__)}; for a vector b, give b[:, None]"
        )
    errors.checked_bool("linalg.lu_solve(): left", left)
    errors.checked_bool("linalg.lu_solve(): adjoint", adjoint)
    size = LU.shape[-1]
    axis, side = (-2, "rows") if left else (-1, "columns")
    if B.shape[axis] != size:
        raise errors.ShapeError(
            f"linalg.lu_solve(): B of shape {tuple(B.shape)} has {B.shape[axis]} {side}, but "
            f"LU of shape {tuple(LU.shape)} needs {size} (left={left})"
        )
    if B.dtype != LU.dtype:
        raise errors.DtypeError(
            f"linalg.lu_solve(): B ({B.dtype.name}) and LU ({LU.dtype.name}) must have one dtype"
        )
    transpose = namespace.matrix_transpose
    P = _permutation_matrix(namespace, pivots, size, LU.dtype)
    L = namespace.tril(LU, k=-1) + namespace.eye(size, dtype=LU.dtype, device=LU.device)
    U = namespace.triu(LU)
    # A = P L U.
    if left and not adjoint:  # X = U^-1 L^-1 P^T B
        Y = namespace.matmul(transpose(P), B)
        Y = solve_triangular(L, Y, upper=False, unitriangular=True)
        return solve_triangular(U, Y, upper=True)
    if left:  # A^H X = B: U^H L^H P^T X = B, so X = P L^-H U^-H B
        Y = solve_triangular(_adjoint(namespace, U), B, upper=False)
        Y = solve_triangular(_adjoint(namespace, L), Y, upper=True, unitriangular=True)
        return namespace.matmul(P, Y)
    if not adjoint:  # X P L U = B: X = B U^-1 L^-1 P^T
        Y = solve_triangular(U, B, upper=True, left=False)
        Y = solve_triangular(L, Y, upper=False, left=False, unitriangular=True)
        return namespace.matmul(Y, transpose(P))
    # X A^H = B: X U^H L^H P^T = B, so X = B P L^-H U^-H
    Y = namespace.matmul(B, P)
    Y = solve_triangular(_adjoint(namespace, L), Y, upper=True, left=False, unitriangular=True)
    return solve_triangular(_adjoint(namespace, U), Y, upper=False, left=False)


def _adjoint(namespace: Any, A: Any) -> Any:
    transposed = namespace.matrix_transpose(A)
    return namespace.conj(transposed) if A.dtype.kind == "complex floating" else transposed


def _permutation_matrix(namespace: Any, pivots: Any, rows: int, dtype: Any) -> Any:
    """``P`` with ``A = P L U``: column ``i`` of ``P`` is the unit vector of row ``order[i]``."""
    order = _permutation(namespace, pivots, rows)
    row_index = namespace.arange(rows, device=pivots.device)
    chosen = namespace.expand_dims(row_index, axis=-1) == namespace.expand_dims(order, axis=-2)
    return namespace.astype(chosen, dtype)


def lu(A: Any, *, pivot: bool = True) -> Any:
    """PyTorch's ``linalg.lu``: ``P``, ``L``, ``U`` with ``A = P @ L @ U``.

    ``L`` is unit lower-triangular (``m x k``), ``U`` upper-triangular
    (``k x n``), ``k = min(m, n)``, ``P`` a permutation matrix (the identity with
    ``pivot=False``). Differentiable in ``A``; a singular matrix is factored too
    (``U`` then has a zero on its diagonal), as PyTorch's.

    Examples
    --------
    >>> import plugrad
    >>> P, L, U = plugrad.linalg.lu(plugrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> P
    tensor([[0., 1.],
            [1., 0.]])
    >>> L @ U
    tensor([[3., 4.],
            [1., 2.]])
    """
    namespace = sys.modules["plugrad"]
    A = _lu_input("linalg.lu", A)
    namespace.errors.checked_bool("linalg.lu(): pivot", pivot)
    LU, pivots, _ = _lu_factor(A, pivot)
    return namespace.return_types.linalg_lu(*_unpacked(namespace, LU, pivots, True, True))


def _unpacked(namespace: Any, LU: Any, pivots: Any, data: bool, order: bool) -> tuple[Any, ...]:
    rows, columns = LU.shape[-2], LU.shape[-1]
    steps = min(rows, columns)
    empty = namespace.zeros((0,), dtype=LU.dtype, device=LU.device)
    if data:
        L = namespace.tril(LU[..., :, :steps], k=-1) + namespace.eye(
            rows, steps, dtype=LU.dtype, device=LU.device
        )
        U = namespace.triu(LU[..., :steps, :])
    else:
        L = U = empty
    P = _permutation_matrix(namespace, pivots, rows, LU.dtype) if order else empty
    return P, L, U


def lu_unpack(
    LU_data: Any, LU_pivots: Any, unpack_data: bool = True, unpack_pivots: bool = True
) -> Any:
    """PyTorch's ``lu_unpack``: ``P``, ``L``, ``U`` from :func:`lu_factor`'s packed result.

    Where ``unpack_data`` (``unpack_pivots``) is false, ``L`` and ``U`` (``P``) are
    empty tensors, as PyTorch's.

    Examples
    --------
    >>> import plugrad
    >>> LU, pivots = plugrad.linalg.lu_factor(plugrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> P, L, U = plugrad.lu_unpack(LU, pivots)
    >>> P @ L @ U
    tensor([[1., 2.],
            [3., 4.]])
    """
    namespace = sys.modules["plugrad"]
    LU_data = _lu_input("lu_unpack", LU_data)
    _check_pivots("lu_unpack", LU_data, LU_pivots)
    namespace.errors.checked_bool("lu_unpack(): unpack_data", unpack_data)
    namespace.errors.checked_bool("lu_unpack(): unpack_pivots", unpack_pivots)
    parts = _unpacked(namespace, LU_data, LU_pivots, unpack_data, unpack_pivots)
    return namespace.return_types.lu_unpack(*parts)


def _square_lu_ex(
    function: str, A: Any, check_errors: bool, **flags: bool
) -> tuple[Any, Any, Any, Any]:
    """What the ``_ex`` functions of square matrices start with: ``A`` checked (and
    ``check_errors`` and the other ``flags`` to be bools), then its pivoted LU factors,
    pivots and ``info``; a singular matrix raises only with ``check_errors``."""
    namespace = sys.modules["plugrad"]
    A = _lu_input(function, A)
    for name, flag in {"check_errors": check_errors, **flags}.items():
        namespace.errors.checked_bool(f"{function}(): {name}", flag)
    if A.shape[-1] != A.shape[-2]:
        raise namespace.errors.ShapeError(
            f"{function}(): A must be square matrices, got shape {tuple(A.shape)}"
        )
    LU, pivots, info = _lu_factor(A, True)
    if check_errors:
        _raise_for_info(namespace, function, info, "U")
    return A, LU, pivots, info


def inv_ex(A: Any, *, check_errors: bool = False) -> Any:
    """PyTorch's ``linalg.inv_ex``: the inverse of each matrix and LAPACK's ``info`` (int32).

    ``info`` is 0 for each invertible matrix, else the (1-based) position of the
    first zero on the diagonal of its ``U`` (:func:`lu_factor_ex`): that
    matrix's inverse holds inf or NaN, without an error unless ``check_errors``.

    Examples
    --------
    >>> import plugrad
    >>> result = plugrad.linalg.inv_ex(plugrad.tensor([[2.0, 0.0], [0.0, 4.0]]))
    >>> result.inverse, result.info
    (tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]]), tensor(0, dtype=plugrad.int32))
    """
    namespace = sys.modules["plugrad"]
    A, LU, pivots, info = _square_lu_ex("linalg.inv_ex", A, check_errors)
    identity = namespace.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    identity = namespace.broadcast_to(identity, tuple(A.shape))
    inverse = _solve_unchecked(namespace, LU, pivots, identity)
    return namespace.return_types.linalg_inv_ex(inverse, info)


def _solve_unchecked(namespace: Any, LU: Any, pivots: Any, B: Any) -> Any:
    """``A^-1 B`` from the factors, a zero pivot giving inf or NaN rather than an error."""
    size = LU.shape[-1]
    P = _permutation_matrix(namespace, pivots, size, LU.dtype)
    Y = namespace.matmul(namespace.matrix_transpose(P), B)
    forward: list[Any] = []
    for i in range(size):  # L y = P^T B, L with ones on its diagonal
        row = Y[..., i, :]
        if forward:
            done = namespace.stack(forward, axis=-2)
            row = row - namespace.matmul(LU[..., i : i + 1, :i], done)[..., 0, :]
        forward.append(row)
    backward: list[Any] = []
    for i in reversed(range(size)):  # U x = y
        row = forward[i]
        if backward:
            done = namespace.stack(backward[::-1], axis=-2)
            row = row - namespace.matmul(LU[..., i : i + 1, i + 1 :], done)[..., 0, :]
        backward.append(row / LU[..., i : i + 1, i])
    if not backward:  # empty: computed from the factors, so that it depends on A (its graph)
        return namespace.matmul(LU, B)
    return namespace.stack(backward[::-1], axis=-2)


def solve_ex(A: Any, B: Any, *, left: bool = True, check_errors: bool = False) -> Any:
    """PyTorch's ``linalg.solve_ex``: :func:`solve`'s ``result`` and LAPACK's ``info`` (int32).

    As :func:`inv_ex`: a singular matrix gives inf or NaN and its ``info``, an
    error only with ``check_errors``. ``B`` is a matrix or a batch of them, or a
    vector (or batch of vectors) as :func:`solve` takes it.

    Examples
    --------
    >>> import plugrad
    >>> A = plugrad.tensor([[2.0, 0.0], [0.0, 4.0]])
    >>> plugrad.linalg.solve_ex(A, plugrad.tensor([2.0, 2.0])).result
    tensor([1.0000, 0.5000])
    """
    namespace = sys.modules["plugrad"]
    A, LU, pivots, info = _square_lu_ex("linalg.solve_ex", A, check_errors, left=left)
    if not bool(namespace.any(info != 0)):
        return namespace.return_types.linalg_solve_ex(namespace.linalg.solve(A, B, left=left), info)
    # A singular matrix: substitution through the zero pivot gives inf or NaN, as LAPACK's.
    transpose = namespace.matrix_transpose
    if not left:  # X A = B is A^T X^T = B^T
        LU, pivots, _ = _lu_factor(transpose(A), True)
        result = transpose(_solve_unchecked(namespace, LU, pivots, transpose(B)))
        return namespace.return_types.linalg_solve_ex(result, info)
    if B.ndim == 1 or _stack_of_vectors(tuple(A.shape), tuple(B.shape)):
        result = _solve_unchecked(namespace, LU, pivots, namespace.expand_dims(B, axis=-1))
        return namespace.return_types.linalg_solve_ex(result[..., 0], info)
    return namespace.return_types.linalg_solve_ex(_solve_unchecked(namespace, LU, pivots, B), info)


def _stack_of_vectors(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> bool:
    """Whether ``solve(A, B)`` reads ``B`` as a stack of vectors, as PyTorch does (shaped
    ``A.shape[:-1]``), and not as a stack of matrices, as the standard does where both fit
    (the standard's reading holds there: see Coming from PyTorch)."""
    if len(b_shape) < 2 or b_shape != a_shape[:-1]:
        return False
    if b_shape[-2] != a_shape[-1]:
        return True
    stacks = zip(reversed(a_shape[:-2]), reversed(b_shape[:-2]))
    return not all(a == b or a == 1 or b == 1 for a, b in stacks)  # they do not broadcast


# -- Householder QR: LAPACK's geqrf, orgqr and ormqr -----------------------------------------


def _householder_operand(function: str, what: str, value: Any, A: Any, ndim: int) -> Any:
    """``value`` checked to be a Tensor of ``ndim`` axes and of ``A``'s dtype."""
    namespace = sys.modules["plugrad"]
    if not isinstance(value, namespace.Tensor):
        raise ArgumentError(f"{function}() takes a Tensor as {what}, got {type(value).__name__}")
    if value.ndim != ndim:
        raise namespace.errors.ShapeError(
            f"{function}(): {what} must have {ndim} dimensions (A has {A.ndim}), got shape "
            f"{tuple(value.shape)}"
        )
    if value.dtype != A.dtype:
        raise namespace.errors.DtypeError(
            f"{function}(): {what} ({value.dtype.name}) must have A's dtype ({A.dtype.name}); "
            f"convert it with .to(A.dtype)"
        )
    return value


def _same_batch(function: str, what: str, value: Any, A: Any) -> None:
    """Refuse ``value`` whose batch dimensions are not ``A``'s (PyTorch broadcasts none)."""
    if tuple(value.shape[: A.ndim - 2]) != tuple(A.shape[:-2]):
        raise sys.modules["plugrad"].errors.ShapeError(
            f"{function}(): the batch dimensions of {what} {tuple(value.shape[: A.ndim - 2])} "
            f"must equal A's {tuple(A.shape[:-2])} (they do not broadcast)"
        )


def _conj(namespace: Any, x: Any) -> Any:
    return namespace.conj(x) if x.dtype.kind == "complex floating" else x


def _reflector(namespace: Any, A: Any, j: int) -> Any:
    """Householder vector ``j`` of the packed ``A``, as LAPACK stores it: 0 above row ``j``,
    1 at it, and ``A``'s column ``j`` below."""
    rows = namespace.arange(A.shape[-2], device=A.device)
    unit = namespace.astype(rows == j, A.dtype)
    return namespace.where(rows > j, A[..., :, j], unit)


def _apply_householder(A: Any, tau: Any, C: Any, left: bool, adjoint: bool) -> Any:
    """``Q C`` (``C Q`` where not ``left``; ``Q^H`` where ``adjoint``) for ``Q = H_1 ... H_k``,
    ``H_j = I - tau_j v_j v_j^H``, one reflection at a time: ``Q`` is never formed, and
    gradients reach ``A`` (below its diagonal), ``tau`` and ``C`` through the ops."""
    namespace = sys.modules["plugrad"]
    steps = tau.shape[-1]
    # Q C applies H_k first; Q^H C = H_k^H ... H_1^H C applies H_1^H first (C Q: the reverse).
    order = range(steps) if left == adjoint else reversed(range(steps))
    for j in order:
        v = _reflector(namespace, A, j)  # (..., m)
        t = tau[..., j]
        t = _conj(namespace, t) if adjoint else t
        t = namespace.expand_dims(namespace.expand_dims(t, axis=-1), axis=-1)
        if left:  # H C = C - tau v (v^H C)
            projected = namespace.matmul(namespace.expand_dims(_conj(namespace, v), axis=-2), C)
            C = C - t * namespace.expand_dims(v, axis=-1) * projected
        else:  # C H = C - (C v) tau v^H
            projected = namespace.matmul(C, namespace.expand_dims(v, axis=-1))
            C = C - t * projected * namespace.expand_dims(_conj(namespace, v), axis=-2)
    return C


def _householder_product(function: str, A: Any, tau: Any) -> Any:
    """:func:`householder_product` under the name ``function`` (``orgqr``) for its errors."""
    namespace = sys.modules["plugrad"]
    errors = namespace.errors
    A = _lu_input(function, A)
    tau = _householder_operand(function, "tau", tau, A, A.ndim - 1)
    rows, columns, steps = A.shape[-2], A.shape[-1], tau.shape[-1]
    if rows < columns:
        raise errors.ShapeError(
            f"{function}(): A of shape {tuple(A.shape)} has more columns than rows; it must "
            "be tall or square (A.shape[-2] >= A.shape[-1]), as geqrf's result of one is"
        )
    if columns < steps:
        raise errors.ShapeError(
            f"{function}(): tau has {steps} elements but A only {columns} columns of "
            "Householder vectors (tau.shape[-1] <= A.shape[-1])"
        )
    _same_batch(function, "tau", tau, A)
    identity = namespace.eye(rows, columns, dtype=A.dtype, device=A.device)
    identity = namespace.broadcast_to(identity, tuple(A.shape))
    if steps == 0:  # no reflection: still a function of A and tau (gradients 0), as PyTorch's
        never = namespace.zeros(tuple(A.shape), dtype=namespace.bool, device=A.device)
        empty_sum = namespace.expand_dims(namespace.sum(tau, axis=-1), axis=(-2, -1))
        return namespace.where(never, A, identity) + empty_sum
    return _apply_householder(A, tau, identity, True, False)


def householder_product(A: Any, tau: Any) -> Any:
    """PyTorch's ``linalg.householder_product`` (``orgqr``): the first ``n`` columns of
    ``H_1 H_2 ... H_k``, ``H_i = I - tau_i v_i v_i^H``.

    ``A`` (``m x n``, ``m >= n``) holds the Householder vectors below its diagonal,
    as :func:`plugrad.geqrf` leaves them: ``v_i`` is column ``i`` with zeros above
    row ``i`` and an implied 1 at it (what lies on and above the diagonal is not
    read). ``tau`` (``k <= n`` scalars) has ``A``'s batch dimensions, which do not
    broadcast. Real or complex, batched, and differentiable in ``A`` and ``tau``
    (to every order, being made of plugrad's ops; PyTorch's once).

    Examples
    --------
    >>> import plugrad
    >>> a, tau = plugrad.geqrf(plugrad.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> Q = plugrad.linalg.householder_product(a, tau)
    >>> Q
    tensor([[-0.6000, -0.8000],
            [-0.8000,  0.6000]])
    >>> Q @ plugrad.triu(a)
    tensor([[3.0000, 1.0000],
            [4.0000, 2.0000]])
    """
    return _householder_product("linalg.householder_product", A, tau)


def _ormqr(A: Any, tau: Any, other: Any, left: bool, transpose: bool) -> Any:
    """PyTorch's ``ormqr``: ``other`` multiplied by the ``Q`` of :func:`_geqrf`'s result."""
    namespace = sys.modules["plugrad"]
    errors = namespace.errors
    A = _lu_input("ormqr", A)
    if not isinstance(other, namespace.Tensor) or other.ndim < 2:
        raise errors.ShapeError(
            "ormqr(): other must be a matrix or a batch of them, got "
            f"{getattr(other, 'shape', type(other).__name__)}"
        )
    tau = _householder_operand("ormqr", "tau", tau, A, A.ndim - 1)
    other = _householder_operand("ormqr", "other", other, A, A.ndim)
    left = errors.checked_bool("ormqr(): left", left)
    transpose = errors.checked_bool("ormqr(): transpose", transpose)
    rows = A.shape[-2]
    axis, side = (-2, "rows") if left else (-1, "columns")
    if other.shape[axis] != rows:
        raise errors.ShapeError(
            f"ormqr(): other of shape {tuple(other.shape)} has {other.shape[axis]} {side}, but "
            f"Q, from A of shape {tuple(A.shape)}, is {rows}x{rows} (left={left})"
        )
    steps = min(rows, A.shape[-1])
    if tau.shape[-1] != steps:
        raise errors.ShapeError(
            f"ormqr(): tau has {tau.shape[-1]} elements, but A of shape {tuple(A.shape)} holds "
            f"{steps} Householder vectors (min(A.shape[-2], A.shape[-1])): pass geqrf's tau"
        )
    _same_batch("ormqr", "tau", tau, A)
    _same_batch("ormqr", "other", other, A)
    return _apply_householder(A, tau, other, left, transpose)


def _householder_qr(A: Any) -> tuple[Any, Any]:
    """LAPACK's ``geqrf`` of each matrix: ``R`` on and above the diagonal, Householder
    vectors below it, and their ``tau``, with LAPACK's signs (its ``larfg``).

    Column ``j``'s reflection maps ``(alpha, x)`` to ``(beta, 0)`` with ``beta = -sign(Re
    alpha) |(alpha, x)|`` (a zero's sign taken as +), ``tau = (beta - alpha) / beta`` and
    ``v = x / (alpha - beta)``; where ``x`` is 0 (and ``alpha`` real) there is no
    reflection: ``tau = 0``. Computed without gradients (PyTorch's has none either).
    """
    namespace = sys.modules["plugrad"]
    rows, columns = A.shape[-2], A.shape[-1]
    batch = tuple(A.shape[:-2])
    complex_ = A.dtype.kind == "complex floating"
    row_index = namespace.arange(rows, device=A.device)
    column_index = namespace.arange(columns, device=A.device)
    R = namespace.asarray(A, copy=True)
    taus = []
    for j in range(min(rows, columns)):
        column = R[..., :, j]
        alpha = column[..., j]
        below = namespace.where(row_index > j, column, namespace.zeros_like(column))
        size_below = namespace.linalg.vector_norm(below, axis=-1)
        reflects = size_below != 0
        if complex_:
            reflects = reflects | (namespace.imag(alpha) != 0)
        size = namespace.hypot(namespace.abs(alpha), size_below)
        beta = namespace.astype(
            namespace.where(namespace.real(alpha) >= 0, -size, size), A.dtype
        )  # (a -0.0 counts as positive, as LAPACK's sign takes it)
        one = namespace.ones_like(beta)
        tau = namespace.where(reflects, (beta - alpha) / namespace.where(reflects, beta, one), 0)
        scale = namespace.where(reflects, 1 / namespace.where(reflects, alpha - beta, one), 1)
        v = namespace.where(
            row_index == j,
            namespace.ones_like(column),
            below * namespace.expand_dims(scale, axis=-1),
        )
        # H^H = I - conj(tau) v v^H on the columns after j
        projected = namespace.matmul(namespace.expand_dims(_conj(namespace, v), axis=-2), R)
        factor = namespace.expand_dims(_conj(namespace, tau), axis=-1)
        update = namespace.expand_dims(factor * v, axis=-1) * projected
        R = namespace.where(column_index > j, R - update, R)
        # Column j: R above, beta on the diagonal, v's tail below.
        diagonal = namespace.where(reflects, beta, alpha)
        packed = namespace.where(
            row_index == j,
            namespace.expand_dims(diagonal, axis=-1),
            namespace.where(row_index > j, v, column),
        )
        R = namespace.where(column_index == j, namespace.expand_dims(packed, axis=-1), R)
        taus.append(tau)
    if taus:
        return R, namespace.stack(taus, axis=-1)
    return R, namespace.zeros((*batch, 0), dtype=A.dtype, device=A.device)


def _geqrf(A: Any) -> tuple[Any, Any]:
    """:func:`plugrad.geqrf`'s ``(a, tau)`` of the checked ``A``, computed without a graph
    (the caller marks them as having no derivative)."""
    namespace = sys.modules["plugrad"]
    A = _lu_input("geqrf", A)
    with namespace.no_grad():
        return _householder_qr(A)


def __getattr__(name: str) -> Any:
    if name in _SHARED:
        return getattr(sys.modules["plugrad"], name)
    if name == "LinAlgError":  # PyTorch's torch.linalg.LinAlgError
        return sys.modules["plugrad"].errors.LinAlgError
    raise AttributeError(f"module 'plugrad.linalg' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SHARED, "LinAlgError"})
