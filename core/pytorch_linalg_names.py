"""PyTorch's top-level names for linear algebra: ``plugrad.det``, ``plugrad.svd``, ...

PyTorch code calls ``torch.det(a)`` as often as ``torch.linalg.det(a)``. These
functions compute what :mod:`plugrad.linalg` (the Array API's ``linalg``
extension) computes, under PyTorch's names and with PyTorch's conventions where
they differ: :func:`svd` returns ``V`` (not its conjugate transpose) and takes
``some``; :func:`cross` without ``dim`` uses the first axis of size 3. Each is
also a Tensor method (``a.det()``, ``a.svd()``...), and each is differentiable
to every order, being made of differentiable ops.
"""

from __future__ import annotations

import warnings
from typing import Any

from . import autocast_mode as _autocast
from . import creation as _creation
from . import linalg as _linalg
from . import ops as _ops
from . import return_types as _return_types
from .dtype_functions import broadcast_shapes
from .errors import DtypeError, ShapeError, checked_bool
from .function import _refusing
from .grad_mode import is_grad_enabled
from .inplace import takes_out
from .pytorch_tensor_methods import _tensor
from .tensor import Tensor, install_function_methods, install_methods
from .versions import mark_copy_of_view

__all__ = [
    "adjoint",
    "cholesky",
    "cholesky_inverse",
    "cholesky_solve",
    "cross",
    "det",
    "geqrf",
    "ger",
    "inner",
    "inverse",
    "kron",
    "logdet",
    "lu",
    "lu_solve",
    "lu_unpack",
    "matrix_exp",
    "matrix_power",
    "mv",
    "orgqr",
    "ormqr",
    "pinverse",
    "qr",
    "slogdet",
    "svd",
    "trace",
    "triangular_solve",
    "vdot",
]


def _tensors(function: str, **values: Any) -> None:
    """Refuse the first of ``values`` (by parameter name) that is not a Tensor."""
    for what, value in values.items():
        _tensor(function, value, what)


def det(input: Tensor) -> Tensor:
    """The determinant of a square matrix (or of each in a batch); ``linalg.det``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.det(plugrad.tensor([[2.0, 1.0], [1.0, 3.0]]))
    tensor(5.)
    """
    return _linalg.det(_tensor("det", input))


@_autocast.listed("trace")
def trace(input: Tensor) -> Tensor:
    """PyTorch's ``torch.trace``: the sum of a matrix's main diagonal, in ``int64`` for
    unsigned and bool matrices (``linalg.trace``, the standard's, keeps ``uint64`` and
    takes stacks of matrices).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.trace(plugrad.ones((2, 2), dtype=plugrad.uint8))
    tensor(2)
    """
    return _tensor("trace", input).trace()


@_autocast.listed("inverse")
@takes_out
def inverse(input: Tensor) -> Tensor:
    """The inverse of a square matrix (or of each in a batch); ``linalg.inv``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.inverse(plugrad.tensor([[2.0, 0.0], [0.0, 4.0]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    return _linalg.inv(_tensor("inverse", input))


def slogdet(input: Tensor) -> Any:
    """The sign and the log of the absolute value of the determinant; ``linalg.slogdet``.

    Returns a named tuple ``(sign, logabsdet)``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.slogdet(plugrad.tensor([[-2.0, 0.0], [0.0, 1.0]]))
    slogdet_result(sign=tensor(-1.), logabsdet=tensor(0.6931))
    """
    return _linalg.slogdet(_tensor("slogdet", input))


def logdet(input: Tensor) -> Tensor:
    """The log of the determinant: ``nan`` where it is negative, ``-inf`` where it is 0.

    For complex matrices, the complex logarithm of the determinant.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.logdet(plugrad.tensor([[2.0, 0.0], [0.0, 3.0]]))
    tensor(1.7918)
    >>> plugrad.logdet(plugrad.tensor([[-1.0, 0.0], [0.0, 1.0]]))
    tensor(nan)
    """
    sign, logabsdet = _linalg.slogdet(_tensor("logdet", input))
    if input.dtype.kind == "complex floating":
        return _ops.add(_ops.log(sign), logabsdet)
    return _ops.where(_ops.less(sign.detach(), 0), float("nan"), logabsdet)


@_autocast.listed("svd")
@takes_out
def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> _return_types.svd:
    """The singular value decomposition ``input = U @ diag(S) @ V.mH``, as PyTorch's ``svd``.

    Unlike :func:`plugrad.linalg.svd`, the third result is ``V`` itself (not
    its conjugate transpose), ``some=True`` (the default) gives the reduced
    decomposition, and ``compute_uv=False`` gives ``U`` and ``V`` filled with
    zeros (shapes ``(..., m, m)`` and ``(..., n, n)``) beside the singular values.

    Examples
    --------
    >>> import plugrad
    >>> a = plugrad.tensor([[3.0, 0.0], [0.0, -2.0], [0.0, 0.0]])
    >>> U, S, V = plugrad.svd(a)
    >>> U.shape, S, V.shape
    ((3, 2), tensor([3., 2.]), (2, 2))
    >>> plugrad.allclose(U @ plugrad.diag(S) @ V.mH, a)
    True
    """
    _tensor("svd", input)
    if input.ndim < 2:
        raise ShapeError(f"svd() takes a matrix (or a batch of them), got shape {input.shape}")
    if not compute_uv:
        *batch, m, n = input.shape
        zeros = _creation.zeros
        return _return_types.svd(
            zeros((*batch, m, m), dtype=input.dtype, device=input.device),
            _linalg.svdvals(input),
            zeros((*batch, n, n), dtype=input.dtype, device=input.device),
        )
    U, S, Vh = _linalg.svd(input, full_matrices=not some)
    return _return_types.svd(U, S, _conjugate_transposed(Vh))


@_autocast.listed("cholesky")
@takes_out
def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """The Cholesky factor of a Hermitian positive-definite matrix: lower, or upper if asked.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.cholesky(plugrad.tensor([[4.0, 2.0], [2.0, 5.0]]))
    tensor([[2., 0.],
            [1., 2.]])
    """
    return _linalg.cholesky(_tensor("cholesky", input), upper=bool(upper))


@_autocast.listed("cholesky_solve")
@takes_out
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """``X`` with ``A @ X = input``, where ``A = L @ L.mH`` and ``input2`` is ``L`` (lower
    Cholesky factor; with ``upper``, ``U`` with ``A = U.mH @ U``), as PyTorch's.

    Examples
    --------
    >>> import plugrad
    >>> L = plugrad.cholesky(plugrad.tensor([[4.0, 2.0], [2.0, 5.0]]))
    >>> plugrad.cholesky_solve(plugrad.tensor([[6.0], [7.0]]), L)
    tensor([[1.],
            [1.]])
    """
    B = _tensor("cholesky_solve", input)
    factor = _tensor("cholesky_solve", input2, "input2")
    lower = (
        _conjugate_transposed(factor) if checked_bool("cholesky_solve(): upper", upper) else factor
    )
    Y = _linalg.solve_triangular(lower, B, upper=False)
    return _linalg.solve_triangular(_conjugate_transposed(lower), Y, upper=True)


@_autocast.listed("cholesky_inverse")
@takes_out
def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """The inverse of ``A = L @ L.mH`` from its Cholesky factor ``input`` (``upper``:
    ``A = U.mH @ U``), as PyTorch's.

    Examples
    --------
    >>> import plugrad
    >>> L = plugrad.cholesky(plugrad.tensor([[4.0, 2.0], [2.0, 5.0]]))
    >>> plugrad.cholesky_inverse(L) @ plugrad.tensor([[4.0, 2.0], [2.0, 5.0]])
    tensor([[1., 0.],
            [0., 1.]])
    """
    factor = _tensor("cholesky_inverse", input)
    if factor.ndim < 2 or factor.shape[-1] != factor.shape[-2]:
        raise ShapeError(f"cholesky_inverse() takes square matrices, got shape {factor.shape}")
    identity = _creation.eye(factor.shape[-1], dtype=factor.dtype, device=factor.device)
    return cholesky_solve(identity, factor, upper)


@_autocast.listed("qr")
def qr(input: Tensor, some: bool = True) -> Any:
    """PyTorch's deprecated ``qr(input, some=True)``: :func:`plugrad.linalg.qr` with
    ``mode='reduced'`` (``'complete'`` where ``some`` is false), as a named tuple ``(Q, R)``.

    Examples
    --------
    >>> import plugrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     Q, R = plugrad.qr(plugrad.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> R
    tensor([[-5.0000, -2.2000],
            [ 0.0000,  0.4000]])
    """
    warnings.warn(
        "plugrad.qr is PyTorch's deprecated form: use plugrad.linalg.qr(A, 'reduced' if some "
        "else 'complete')",
        UserWarning,
        stacklevel=2,
    )
    mode = "reduced" if checked_bool("qr(): some", some) else "complete"
    Q, R = _linalg.qr(_tensor("qr", input), mode=mode)
    return _return_types.qr(Q, R)


@_autocast.listed("triangular_solve")
def triangular_solve(
    input: Tensor,
    A: Tensor,
    upper: bool = True,
    transpose: bool = False,
    unitriangular: bool = False,
) -> Any:
    """PyTorch's deprecated ``triangular_solve(b, A)``: ``X`` with ``A @ X = b`` (``A.mT @ X
    = b`` with ``transpose``) for triangular ``A``, and a copy of ``A``, as a named tuple
    ``(solution, cloned_coefficient)``. See :func:`plugrad.linalg.solve_triangular`.

    Examples
    --------
    >>> import plugrad, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     X, _ = plugrad.triangular_solve(plugrad.tensor([[4.0], [6.0]]),
    ...                                     plugrad.tensor([[2.0, 0.0], [0.0, 3.0]]))
    >>> X
    tensor([[2.],
            [2.]])
    """
    warnings.warn(
        "plugrad.triangular_solve is PyTorch's deprecated form: use "
        "plugrad.linalg.solve_triangular(A, b, upper=...)",
        UserWarning,
        stacklevel=2,
    )
    b = _tensor("triangular_solve", input)
    A = _tensor("triangular_solve", A, "A")
    upper = checked_bool("triangular_solve(): upper", upper)
    unitriangular = checked_bool("triangular_solve(): unitriangular", unitriangular)
    transpose = checked_bool("triangular_solve(): transpose", transpose)
    # A.mT's triangle is the other one
    matrix = _ops.matrix_transpose(A) if transpose else A
    is_upper = upper != transpose
    solution = _linalg.solve_triangular(matrix, b, upper=is_upper, unitriangular=unitriangular)
    return _return_types.triangular_solve(solution, A.clone())


@_autocast.listed("pinverse")
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """The pseudo-inverse; singular values below ``rcond`` times the largest count as 0.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.pinverse(plugrad.tensor([[2.0], [0.0]]))
    tensor([[0.5000, 0.0000]])
    """
    return _linalg.pinv(_tensor("pinverse", input), rtol=rcond)


@_autocast.listed("matrix_exp")
def matrix_exp(input: Tensor) -> Tensor:
    """The exponential of a square matrix (or of each in a batch); ``linalg.matrix_exp``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.matrix_exp(plugrad.zeros(2, 2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    return _linalg.matrix_exp(_tensor("matrix_exp", input))


@_autocast.listed("matrix_power")
@takes_out
def matrix_power(input: Tensor, n: int) -> Tensor:
    """A square matrix raised to the integer power ``n`` (negative: of its inverse).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.matrix_power(plugrad.tensor([[1.0, 1.0], [0.0, 1.0]]), 3)
    tensor([[1., 3.],
            [0., 1.]])
    """
    return _linalg.matrix_power(_tensor("matrix_power", input), n)


@_autocast.listed("mv")
@takes_out
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """The product of a matrix and a vector.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.mv(plugrad.tensor([[1.0, 2.0], [3.0, 4.0]]), plugrad.tensor([1.0, -1.0]))
    tensor([-1., -1.])
    """
    _tensors("mv", input=input, vec=vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise ShapeError(
            f"mv() multiplies a matrix by a vector, got shapes {input.shape} and {vec.shape}"
        )
    return _ops.matmul(input, vec)


@takes_out
def ger(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product of two vectors (PyTorch's older name for :func:`plugrad.outer`).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.ger(plugrad.tensor([1.0, 2.0]), plugrad.tensor([3.0, 4.0]))
    tensor([[3., 4.],
            [6., 8.]])
    """
    _tensors("ger", input=input, vec2=vec2)
    if input.ndim != 1 or vec2.ndim != 1:
        raise ShapeError(f"ger() takes two vectors, got shapes {input.shape} and {vec2.shape}")
    return _ops.outer(input, vec2)


@_autocast.listed("inner")
@takes_out
def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sums of products over the last axis of both (a product where either is 0-d).

    The result has ``input``'s other axes, then ``other``'s.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.inner(plugrad.tensor([1.0, 2.0]), plugrad.tensor([3.0, 4.0]))
    tensor(11.)
    >>> plugrad.inner(plugrad.ones(2, 3), plugrad.ones(4, 3)).shape
    (2, 4)
    """
    _tensors("inner", input=input, other=other)
    if input.ndim == 0 or other.ndim == 0:
        return _ops.multiply(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise ShapeError(
            f"inner() sums over the last axis of both, which must have one size; got "
            f"shapes {input.shape} and {other.shape}"
        )
    return _ops.tensordot(input, other, axes=((input.ndim - 1,), (other.ndim - 1,)))


@_autocast.listed("vdot")
@takes_out
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two vectors of one dtype, the first conjugated.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.vdot(plugrad.tensor([1.0, 2.0]), plugrad.tensor([3.0, 4.0]))
    tensor(11.)
    """
    _tensors("vdot", input=input, other=other)
    if input.ndim != 1 or other.ndim != 1 or input.shape != other.shape:
        raise ShapeError(
            f"vdot() takes two vectors of one length, got shapes {input.shape} and {other.shape}"
        )
    if input.dtype != other.dtype:
        raise DtypeError(
            f"vdot() takes two vectors of one dtype, got {input.dtype} and {other.dtype}; "
            "convert one with .to(dtype)"
        )
    return _ops.vecdot(input, other)


@takes_out
def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: each element of ``input`` times the whole of ``other``.

    The one with fewer axes gains leading axes of size 1; the result's size
    along each axis is the product of theirs.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.kron(plugrad.eye(2), plugrad.tensor([[1.0, 2.0]]))
    tensor([[1., 2., 0., 0.],
            [0., 0., 1., 2.]])
    """
    _tensors("kron", input=input, other=other)
    ndim = max(input.ndim, other.ndim)
    a_shape = (1,) * (ndim - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (ndim - other.ndim) + tuple(other.shape)
    # Axis k of a and of b side by side (a's first): their product, merged, is the result's.
    a = _ops.reshape(input, tuple(s for size in a_shape for s in (size, 1)))
    b = _ops.reshape(other, tuple(s for size in b_shape for s in (1, size)))
    merged = tuple(x * y for x, y in zip(a_shape, b_shape, strict=True))
    return _ops.reshape(_ops.multiply(a, b), merged)


@_autocast.listed("cross")
@takes_out
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (``linalg.cross``).

    Without ``dim``, PyTorch's rule: the first axis of size 3 (of the shape the
    two broadcast to), with a warning, as PyTorch deprecates it; pass ``dim``
    (or use :func:`plugrad.linalg.cross`, whose default is the last axis).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.cross(plugrad.tensor([1.0, 0.0, 0.0]), plugrad.tensor([0.0, 1.0, 0.0]), dim=0)
    tensor([0., 0., 1.])
    """
    _tensors("cross", input=input, other=other)
    if dim is None:
        shape = broadcast_shapes(input.shape, other.shape)
        if 3 not in shape:
            raise ShapeError(
                f"cross() without dim uses the first axis of size 3, and shapes {input.shape} "
                f"and {other.shape} have none; pass dim"
            )
        dim = shape.index(3)
        warnings.warn(
            "cross() without dim uses the first axis of size 3 (here axis "
            f"{dim}), as PyTorch does; PyTorch will change this default to the last "
            "axis: pass dim, or use plugrad.linalg.cross",
            UserWarning,
            stacklevel=2,
        )
    return _linalg.cross(input, other, axis=dim)


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of a matrix (of each in a batch): ``x.mH``, ``x.adjoint()``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.adjoint(plugrad.tensor([[1 + 2j, 3j]]))
    tensor([[1.-2.j],
            [0.-3.j]])
    """
    _tensor("adjoint", input)
    if input.ndim < 2:
        raise ShapeError(f"adjoint() takes a matrix (or a batch of them), got shape {input.shape}")
    if input.dtype.kind == "complex floating":
        # PyTorch's is a view of input (a lazy conjugate); a write into this copy is refused
        return mark_copy_of_view(_conjugate_transposed(input), "adjoint() (x.mH, x.H)", input)
    return _ops.matrix_transpose(input)  # a view of input, as PyTorch's


def _conjugate_transposed(input: Tensor) -> Tensor:
    if input.dtype.kind == "complex floating":
        input = _ops.conj(input)
    return _ops.matrix_transpose(input)


def _conjugate_transpose(self: Tensor) -> Tensor:
    """``x.H``: the conjugate transpose of a matrix."""
    if self.ndim != 2:
        raise ShapeError(
            f"x.H is the conjugate transpose of a matrix, got shape {self.shape}; use x.mH "
            "for a batch of matrices, x.conj() for a 0-d tensor"
        )
    return adjoint(self)


@_autocast.listed("lu")
def lu(A: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple[Tensor, ...]:
    """PyTorch's older ``lu``: ``(LU, pivots)``, with ``infos`` where ``get_infos``.

    :func:`plugrad.linalg.lu_factor` (``lu_factor_ex`` with ``get_infos``): a
    singular matrix raises :class:`~plugrad.errors.LinAlgError` unless ``get_infos``.

    Examples
    --------
    >>> import plugrad
    >>> LU, pivots = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]]).lu()
    >>> pivots
    tensor([2, 2], dtype=plugrad.int32)
    """
    checked_bool("lu(): get_infos", get_infos)
    if get_infos:
        return tuple(_linalg.lu_factor_ex(_tensor("lu", A), pivot=pivot))
    return tuple(_linalg.lu_factor(_tensor("lu", A), pivot=pivot))


@_autocast.listed("lu_solve")
def lu_solve(input: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """PyTorch's older ``lu_solve(b, LU, pivots)``: :func:`plugrad.linalg.lu_solve` with
    the right-hand side first.

    Examples
    --------
    >>> import plugrad
    >>> A = plugrad.tensor([[2.0, 0.0], [0.0, 4.0]])
    >>> plugrad.tensor([[2.0], [2.0]]).lu_solve(*plugrad.linalg.lu_factor(A))
    tensor([[1.0000],
            [0.5000]])
    """
    return _linalg.lu_solve(LU_data, LU_pivots, _tensor("lu_solve", input))


@_autocast.listed("geqrf")
@takes_out
def geqrf(input: Tensor) -> Any:
    """PyTorch's ``geqrf``: the QR factorization of each matrix in LAPACK's format, as a
    named tuple ``(a, tau)``.

    ``a`` holds ``R`` on and above its diagonal and, below it, the Householder
    vectors whose reflections ``H_i = I - tau_i v_i v_i^H`` make
    ``Q = H_1 ... H_k`` (``k = min(m, n)``; ``v_i`` has an implied 1 at row ``i``):
    :func:`plugrad.linalg.householder_product` forms ``Q`` from them,
    :func:`ormqr` multiplies by it. The signs are LAPACK's (the same ``a`` and
    ``tau`` as PyTorch's, on every backend). Real or complex, batched, any ``m``
    and ``n``. Not differentiable, as PyTorch's: a gradient reaching ``a`` or ``tau``
    raises :class:`~plugrad.errors.BackwardError`; differentiate
    :func:`plugrad.linalg.qr` instead.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.geqrf(plugrad.tensor([[3.0, 1.0], [4.0, 2.0]]))
    geqrf(a=tensor([[-5.0000, -2.2000],
            [ 0.5000,  0.4000]]), tau=tensor([1.6000, 0.0000]))
    """
    a, tau = _linalg._geqrf(_tensor("geqrf", input))
    if input.requires_grad and is_grad_enabled():
        # As PyTorch's: results that require grad, and a backward pass that refuses.
        edges = (input._edge or input,)
        reason = (
            "geqrf() has no derivative (PyTorch's neither): a gradient reached its result. "
            "Differentiate through plugrad.linalg.qr(A) instead, or detach A before geqrf"
        )
        a, tau = _refusing(a, edges, reason), _refusing(tau, edges, reason)
    return _return_types.geqrf(a, tau)


@_autocast.listed("orgqr")
@takes_out
def orgqr(input: Tensor, input2: Tensor) -> Tensor:
    """PyTorch's ``orgqr(A, tau)``: :func:`plugrad.linalg.householder_product`, the first
    ``n`` columns of the ``Q`` that :func:`geqrf`'s ``(a, tau)`` stand for.

    Examples
    --------
    >>> import plugrad
    >>> a, tau = plugrad.geqrf(plugrad.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> a.orgqr(tau)
    tensor([[-0.6000, -0.8000],
            [-0.8000,  0.6000]])
    """
    return _linalg._householder_product("orgqr", input, input2)


@_autocast.listed("ormqr")
@takes_out
def ormqr(
    input: Tensor, input2: Tensor, input3: Tensor, left: bool = True, transpose: bool = False
) -> Tensor:
    """PyTorch's ``ormqr(A, tau, other)``: ``Q @ other`` for the ``m x m`` ``Q`` of
    :func:`geqrf`'s ``(a, tau)``, without forming ``Q``.

    ``left=False`` gives ``other @ Q``; ``transpose=True`` uses ``Q``'s conjugate
    transpose. ``tau`` has ``min(m, n)`` elements; the batch dimensions of all three
    are equal (they do not broadcast). Differentiable in all three.

    Examples
    --------
    >>> import plugrad
    >>> a, tau = plugrad.geqrf(plugrad.tensor([[3.0, 1.0], [4.0, 2.0]]))
    >>> plugrad.ormqr(a, tau, plugrad.tensor([[1.0], [0.0]]), transpose=True)
    tensor([[-0.6000],
            [-0.8000]])
    """
    return _linalg._ormqr(input, input2, input3, left, transpose)


lu_unpack = _linalg.lu_unpack

# (x.trace() is the op's own method, which this function calls; PyTorch has no x.lu_unpack())
install_function_methods(
    **{name: globals()[name] for name in __all__ if name not in ("trace", "lu_unpack")}
)
install_methods(mH=property(adjoint, doc=adjoint.__doc__), H=property(_conjugate_transpose))
