"""Matrix and vector products of the Array API main namespace: ``matmul``, ``tensordot`` and
``vecdot``, with ``matrix_transpose`` (all four also reachable as ``plugrad.linalg.<name>``).

One row per op (examples: the "Linear algebra" section of the API reference).
Complex inputs get PyTorch's conjugate gradients (``g @ conj(x2).T``). The
Tensor methods ``x.dot(y)``, ``x.norm(p, dim, keepdim)``, ``x.dist(y, p)``,
``x.addmm(m1, m2)``, ``x.addmv(m, v)`` and ``x.baddbmm(b1, b2)`` (with
``beta=``/``alpha=``), and the functions of those names and ``cdist``, are
PyTorch's (``dot`` of 1-D tensors only, as there; ``x.outer(y)`` is
``linalg.outer``'s).
"""

from __future__ import annotations

from typing import Any

from plugrad.errors import ArgumentError, AxisError, DtypeError, ShapeError
from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, as_int, collect_ops, op
from plugrad.plugins._rules import (
    cast,
    checked_axis,
    conj,
    negative_axis,
    python_number,
    reduction_axis,
)

# The rows are aligned by hand, one op per statement.
# fmt: off


def _vectors(name: str, x1: Any, x2: Any) -> None:
    if x1.ndim != 1 or x2.ndim != 1:
        raise ShapeError(
            f"{name}() takes two 1-D tensors, got {x1.ndim}-D and {x2.ndim}-D; use "
            "plugrad.matmul, plugrad.vecdot or plugrad.linalg.outer for other shapes"
        )


def _dot(xp: Any, input: Any, tensor: Any) -> Any:
    """PyTorch's ``dot(input, tensor)``: the inner product of two 1-D tensors (no conjugation)."""
    _vectors("dot", input, tensor)
    if input.shape[0] != tensor.shape[0]:  # (else matmul's words: "core dimension 0")
        raise ShapeError(
            f"dot() takes two tensors of one length, got lengths {input.shape[0]} and "
            f"{tensor.shape[0]}"
        )
    return xp.matmul(input, tensor)


def _mm(xp: Any, input: Any, mat2: Any) -> Any:
    """PyTorch's ``mm(input, mat2)``: the product of two matrices (``matmul`` broadcasts)."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise ShapeError(
            f"mm() takes two matrices, got {input.ndim}-D and {mat2.ndim}-D; use "
            "plugrad.matmul for vectors and batches"
        )
    return xp.matmul(input, mat2)


def _bmm(xp: Any, input: Any, mat2: Any) -> Any:
    """PyTorch's ``bmm(input, mat2)``: products of two batches of matrices of one length."""
    if input.ndim != 3 or mat2.ndim != 3 or input.shape[0] != mat2.shape[0]:
        raise ShapeError(
            f"bmm() takes two 3-D batches of one length, got shapes {tuple(input.shape)} and "
            f"{tuple(mat2.shape)}; use plugrad.matmul to broadcast batches"
        )
    return xp.matmul(input, mat2)


def _coefficient(xp: Any, name: str, value: Any, dtype: Any) -> Any:
    """``alpha`` or ``beta`` as PyTorch takes it: a number that keeps ``dtype``."""
    value = python_number(value)
    if hasattr(value, "dtype"):  # a 0-d tensor: its dtype does not promote the result's
        return value if value.dtype == dtype else xp.astype(value, dtype)
    if xp.isdtype(dtype, "bool"):
        return bool(value)
    if isinstance(value, complex) and not xp.isdtype(dtype, "complex floating"):
        raise DtypeError(f"{name}={value!r} is complex, and the tensors are {dtype}")
    if xp.isdtype(dtype, "integral"):
        if isinstance(value, float) and not value.is_integer():
            raise DtypeError(
                f"{name}={value!r} is not a whole number, and the tensors are {dtype} "
                "(PyTorch would drop its fraction); convert the tensors to a float dtype"
            )
        return int(value)
    return value


def _scaled_sum(
    xp: Any, input: Any, product: Any, beta: Any, alpha: Any, unread_at_zero: bool = False
) -> Any:
    """``beta * input + alpha * product``; with ``beta == 0`` the input (and its nans) is unread,
    and its gradient 0 (PyTorch's: zeros, not None); so is the product with ``alpha == 0``
    where ``unread_at_zero`` (PyTorch's addmm, addmv and addbmm, not baddbmm)."""
    dtype = xp.result_type(input, product)
    alpha = _coefficient(xp, "alpha", alpha, dtype)
    beta = _coefficient(xp, "beta", beta, dtype)
    unread = xp.zeros_like(product, dtype=xp.bool)
    if unread_at_zero and alpha == 0:
        product = xp.where(unread, product, xp.zeros_like(product))
    elif alpha != 1:
        product = alpha * product
    if beta == 0:
        return xp.where(unread, input, product)
    return (input if beta == 1 else beta * input) + product


def _addmm(xp: Any, input: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    """PyTorch's ``addmm(input, mat1, mat2, *, beta=1, alpha=1)``.

    ``beta * input + alpha * mat1 @ mat2`` of two matrices; ``input`` broadcasts
    to their product.
    """
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise ShapeError(f"addmm() takes two matrices, got {mat1.ndim}-D and {mat2.ndim}-D")
    return _scaled_sum(xp, input, xp.matmul(mat1, mat2), beta, alpha, unread_at_zero=True)


def _addmv(xp: Any, input: Any, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    """PyTorch's ``addmv(input, mat, vec, *, beta=1, alpha=1)``.

    ``beta * input + alpha * mat @ vec`` of a matrix and a vector.
    """
    if mat.ndim != 2 or vec.ndim != 1:
        raise ShapeError(
            f"addmv() takes a matrix and a vector, got {mat.ndim}-D and {vec.ndim}-D"
        )
    return _scaled_sum(xp, input, xp.matmul(mat, vec), beta, alpha, unread_at_zero=True)


def _batches(name: str, batch1: Any, batch2: Any) -> None:
    if batch1.ndim != 3 or batch2.ndim != 3 or batch1.shape[0] != batch2.shape[0]:
        raise ShapeError(
            f"{name}() takes two 3-D batches of matrices of one length, got shapes "
            f"{tuple(batch1.shape)} and {tuple(batch2.shape)}"
        )


def _baddbmm(
    xp: Any, input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1
) -> Any:
    """PyTorch's ``baddbmm(input, batch1, batch2, *, beta=1, alpha=1)``: batched ``addmm``."""
    _batches("baddbmm", batch1, batch2)
    return _scaled_sum(xp, input, xp.matmul(batch1, batch2), beta, alpha)


def _addbmm(
    xp: Any, input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1
) -> Any:
    """PyTorch's ``addbmm(input, batch1, batch2, *, beta=1, alpha=1)``: ``addmm`` of the sum of
    the batch's products."""
    _batches("addbmm", batch1, batch2)
    product = xp.sum(xp.matmul(batch1, batch2), axis=0, dtype=xp.result_type(batch1, batch2))
    return _scaled_sum(xp, input, product, beta, alpha, unread_at_zero=True)


def _dist(xp: Any, x: Any, other: Any, p: Any = 2) -> Any:
    """PyTorch's ``dist(x, other, p=2)``: the ``p``-norm of ``x - other`` (broadcast), 0-d."""
    return xp.linalg.vector_norm(x - other, ord=p)


#: PyTorch's choices of how cdist computes p = 2 distances, all taken.
_CDIST_COMPUTE_MODES = (
    None,
    "use_mm_for_euclid_dist_if_necessary",
    "use_mm_for_euclid_dist",
    "donot_use_mm_for_euclid_dist",
)


def _cdist(xp: Any, x1: Any, x2: Any, p: Any = 2.0, compute_mode: Any = None) -> Any:
    """PyTorch's ``cdist(x1, x2, p=2)``: the ``p``-norm distance of every row pair.

    ``x1`` is ``(..., P, M)`` and ``x2`` ``(..., R, M)``; the result is
    ``(..., P, R)``. Computed from the differences of every pair (``P * R * M``
    values), so the gradient is exact also where two rows coincide (zero there,
    as in PyTorch).
    """
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(
            f"cdist() takes (..., P, M) and (..., R, M) tensors, got shapes {tuple(x1.shape)} "
            f"and {tuple(x2.shape)}"
        )
    if p < 0:
        raise ArgumentError(f"cdist() takes p >= 0, got {p}")
    if compute_mode not in _CDIST_COMPUTE_MODES:  # (each computes as above: none is faster)
        raise ArgumentError(
            f"cdist(): compute_mode={compute_mode!r} is not one of "
            f"{', '.join(map(repr, _CDIST_COMPUTE_MODES))}"
        )
    differences = xp.expand_dims(x1, axis=-2) - xp.expand_dims(x2, axis=-3)
    return xp.linalg.vector_norm(differences, ord=p, axis=-1)


def _norm(
    xp: Any, x: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False, *,
    axis: Any = None, dtype: Any = None,
) -> Any:  # fmt: skip
    """PyTorch's ``x.norm(p="fro", dim=None, keepdim=False, dtype=None)``: a vector norm, or
    ``"nuc"``; with ``dtype``, of ``x`` converted to it first."""
    if dtype is not None:
        if xp.result_type(x.dtype, dtype) != dtype:
            raise DtypeError(
                f"norm(): dtype={dtype} would narrow the {x.dtype} input (PyTorch's refuses it "
                "too); give a dtype at least as wide, or convert the input first"
            )
        x = xp.astype(x, dtype)
    axes = reduction_axis("norm", x, dim, axis)
    axes = tuple(axes) if isinstance(axes, list) else axes
    if p == "nuc":
        if axes is None:
            if x.ndim != 2:
                raise ShapeError(
                    f"norm(p='nuc') of a {x.ndim}-D tensor needs dim=, the two axes of its "
                    "matrices"
                )
            axes = (0, 1)
        if not isinstance(axes, tuple) or len(axes) != 2:
            raise ShapeError(f"norm(p='nuc') needs dim= of two axes, got {dim!r}")
        rows, cols = (a % x.ndim for a in axes)
        norm = xp.linalg.matrix_norm(xp.moveaxis(x, (rows, cols), (-2, -1)), ord="nuc")
        # The kept axes where they were, as PyTorch's (not last, where the norm was taken).
        return xp.expand_dims(norm, axis=tuple(sorted((rows, cols)))) if keepdim else norm
    # NOTE: the Frobenius norm over any axes is the 2-norm of their elements.
    order = 2 if p in ("fro", None) else p
    return xp.linalg.vector_norm(x, axis=axes, keepdims=keepdim, ord=order)



# The engine sums batch dimensions that broadcasting added, so these rules may
# return gradients with the broadcast batch shape. Each reads only the other operand
# (its ndim and g's tell the cases apart), so a node keeps x1 only where x2 gets a
# gradient, and x2 only where x1 does (as multiply's and PyTorch's).
def _matmul_grad_x1(xp: Any, g: Any, ans: Any, x1: Any, x2: Any) -> Any:
    x2 = conj(xp, x2)
    if x2.ndim == 1:
        if g.ndim == 0:  # inner product (k,) @ (k,)
            return g * x2
        return xp.expand_dims(g, axis=-1) * x2  # (..., n, k) @ (k,) -> (..., n)
    if g.ndim == x2.ndim - 1:  # (k,) @ (..., k, m) -> (..., m)
        return xp.squeeze(xp.matmul(x2, xp.expand_dims(g, axis=-1)), axis=-1)
    return xp.matmul(g, xp.matrix_transpose(x2))


def _matmul_grad_x2(xp: Any, g: Any, ans: Any, x1: Any, x2: Any) -> Any:
    x1 = conj(xp, x1)
    if x1.ndim == 1:
        if g.ndim == 0:  # inner product
            return g * x1
        return xp.expand_dims(x1, axis=-1) * xp.expand_dims(g, axis=-2)  # (k,) @ (..., k, m)
    if g.ndim == x1.ndim - 1:  # (..., n, k) @ (k,) -> (..., n)
        return xp.squeeze(xp.matmul(xp.matrix_transpose(x1), xp.expand_dims(g, axis=-1)), axis=-1)
    return xp.matmul(xp.matrix_transpose(x1), g)


matmul = op("matmul(x1, x2, /)", vjp=(_matmul_grad_x1, _matmul_grad_x2), broadcasting=True,
            grad_fn_name="MatMul", promotion="mixed",
            aliases={"mm": _mm, "bmm": _bmm, "dot": _dot, "addmm": _addmm, "addmv": _addmv,
                     "baddbmm": _baddbmm, "addbmm": _addbmm},
            methods={"matmul": None, "mm": _mm, "bmm": _bmm, "dot": _dot, "addmm": _addmm,
                     "addmv": _addmv, "baddbmm": _baddbmm, "addbmm": _addbmm},
            inplace=("addmm", "addmv", "baddbmm", "addbmm"),
            doc="Matrix product ``x1 @ x2``, with NumPy's rules for 1-D and batched inputs.")
matrix_transpose = op("matrix_transpose(x, /)", vjp=lambda xp, g, ans, x: xp.matrix_transpose(g),
                      saves=(), view=True, doc="Transpose the last two axes (``x.mT``).")


def _plain_axes(axes: Any) -> Any:
    """tensordot's ``axes`` (PyTorch's ``dims``) in Python ints: an int, or a pair whose sides
    are ints or lists of ints. The kernel and the backward rules both read the value as given:
    a NumPy integer or an integer tensor (PyTorch's dims may be one: a number or two rows)
    is read as the ints it holds."""
    if type(axes) is int:
        return axes
    if hasattr(axes, "ndim") and hasattr(axes, "tolist"):  # (a NumPy integer has them too)
        if axes.ndim not in (0, 2) or "int" not in str(axes.dtype):
            raise ArgumentError(
                f"tensordot(): a tensor of axes must hold integers, as one number or two "
                f"rows, got shape {tuple(axes.shape)} of {axes.dtype}"
            )
        return axes.tolist()
    if isinstance(axes, (tuple, list)) and len(axes) == 2:
        return tuple(_plain_side(side) for side in axes)
    return axes  # (refused by _check_tensordot_axes)


def _plain_side(side: Any) -> Any:
    """One side of tensordot's pair of axes: an int, or a list of ints (see _plain_axes)."""
    side = as_int(side)
    if hasattr(side, "tolist"):  # a tensor of several axes
        side = side.tolist()
    return [as_int(a) for a in side] if isinstance(side, (tuple, list)) else side


def _tensordot_axes(axes: Any, ndim1: int, ndim2: int) -> tuple[list[int], list[int]]:
    axes = _plain_axes(axes)
    if isinstance(axes, int):
        return list(range(ndim1 - axes, ndim1)), list(range(axes))
    first, second = axes
    first = [first] if isinstance(first, int) else list(first)
    second = [second] if isinstance(second, int) else list(second)
    return [a % ndim1 for a in first], [a % ndim2 for a in second]


def _tensordot_grad(which: int) -> Any:
    def rule(xp: Any, g: Any, ans: Any, x1: Any, x2: Any, *, axes: Any, dims: Any) -> Any:
        a1, a2 = _tensordot_axes(axes if dims is None else dims, x1.ndim, x2.ndim)
        free1 = [d for d in range(x1.ndim) if d not in a1]
        free2 = [d for d in range(x2.ndim) if d not in a2]
        g_free1 = list(range(len(free1)))
        g_free2 = list(range(len(free1), len(free1) + len(free2)))
        if which == 0:
            # Contract g with x2 over x2's free axes; the result has x1's free axes, then
            # x1's contracted axes in the order of x2's (ascending) contracted axes.
            # (axes as tuples: CuPy refuses a 0-d g with axes=([], []), not with ((), ()))
            grad = xp.tensordot(g, conj(xp, x2), axes=(tuple(g_free2), tuple(free2)))
            source = free1 + [a1[a2.index(b)] for b in sorted(a2)]
        else:
            grad = xp.tensordot(conj(xp, x1), g, axes=(tuple(free1), tuple(g_free1)))
            source = [a2[a1.index(b)] for b in sorted(a1)] + free2
        order = tuple(source.index(d) for d in range(len(source)))
        if order != tuple(range(len(order))):
            grad = xp.permute_dims(grad, order)
        return cast(xp, grad, (x2 if which else x1).dtype)  # a real input's is real

    return rule


def _tensordot(xp: Any, x1: Any, x2: Any, /, dims: Any = None, *, axes: Any = 2) -> Any:
    # dims (by position or name) is PyTorch's name for axes.
    if dims is not None:
        if axes != 2:
            raise ArgumentError("tensordot() got both axes= and PyTorch's dims=; pass only one")
        axes = dims
    if type(axes) is not int:
        axes = _plain_axes(axes)
    _check_tensordot_axes(axes, x1, x2)
    if not isinstance(axes, int):
        # Two lists, as the standard wants them (NumPy also reads a pair of ints, PyTorch's
        # tensordot refuses one): one reading on every backend.
        first, second = _tensordot_axes(axes, x1.ndim, x2.ndim)
        axes = (tuple(first), tuple(second))
    return _in_result_type(xp, xp.tensordot(x1, x2, axes=axes), x1, x2)


def _check_tensordot_axes(axes: Any, x1: Any, x2: Any) -> None:
    """Refuse what NumPy would read otherwise (-1 as an outer product) or fail on unclearly."""
    if isinstance(axes, int) and not isinstance(axes, bool):
        if not 0 <= axes <= min(x1.ndim, x2.ndim):
            raise AxisError(
                f"tensordot(): axes={axes} must be from 0 to the smaller number of dimensions, "
                f"{min(x1.ndim, x2.ndim)}, for shapes {tuple(x1.shape)} and {tuple(x2.shape)}"
            )
        pairs = list(zip(range(x1.ndim - axes, x1.ndim), range(axes), strict=True))
    else:
        if not (isinstance(axes, (tuple, list)) and len(axes) == 2):
            raise ArgumentError(
                f"tensordot(): axes={axes!r} must be an int or two lists of axes of one length"
            )
        first, second = ([a] if isinstance(a, int) else list(a) for a in axes)
        if len(first) != len(second):
            raise ArgumentError(
                f"tensordot(): axes={axes!r} must be an int or two lists of axes of one length"
            )
        pairs = [
            (checked_axis("tensordot", a, x1.ndim), checked_axis("tensordot", b, x2.ndim))
            for a, b in zip(first, second, strict=True)
        ]
    for a, b in pairs:
        if x1.shape[a] != x2.shape[b]:
            # PyTorch's kernel broadcasts a length 1 here (undocumented; the standard and
            # NumPy refuse): a mismatch is more often a bug than a wish, so say how instead.
            hint = (
                "; to broadcast a length 1 as PyTorch's tensordot does, sum the other tensor "
                "over its axis first (keepdim=True), or use plugrad.einsum"
                if 1 in (x1.shape[a], x2.shape[b])
                else ""
            )
            raise ShapeError(
                f"tensordot(): axis {a} of shape {tuple(x1.shape)} and axis {b} of shape "
                f"{tuple(x2.shape)} are summed together, and their lengths differ{hint}"
            )



def _in_result_type(xp: Any, out: Any, x1: Any, x2: Any) -> Any:
    """``out`` in its inputs' dtype: Dask sums the blocks' products of ``int8`` in ``int64``
    (and of bools in ``int8``) where NumPy and PyTorch keep the inputs' dtype."""
    if out.dtype == x1.dtype == x2.dtype:  # (promotion made them one dtype, mostly)
        return out
    dtype = x1.dtype if x1.dtype == x2.dtype else xp.result_type(x1, x2)
    if out.dtype == dtype:
        return out
    return out != 0 if xp.isdtype(dtype, "bool") else xp.astype(out, dtype)


tensordot = op("tensordot", _tensordot, vjp=(_tensordot_grad(0), _tensordot_grad(1)),
               promotion="mixed",
               doc="Sum products over axes: the last ``axes`` of ``x1`` with the first of ``x2``.")


def _vecdot_grad(which: int) -> Any:
    def rule(xp: Any, g: Any, ans: Any, x1: Any, x2: Any, *, axis: int) -> Any:
        ndim = max(x1.ndim, x2.ndim)
        axis = axis - ndim if axis >= 0 else axis
        g = xp.expand_dims(g, axis=axis)
        # vecdot(x1, x2) = sum(conj(x1) * x2): x1 enters conjugated.
        return x2 * conj(xp, g) if which == 0 else g * x1

    return rule


# NOTE: x.norm() is a vector norm, so it rides on the main namespace's vector product.
vecdot = op("vecdot", lambda xp, x1, x2, /, *, axis=-1: _in_result_type(
                xp, xp.vecdot(x1, x2, axis=negative_axis("vecdot", axis, x1, x2)), x1, x2),
            vjp=(_vecdot_grad(0), _vecdot_grad(1)), broadcasting=True, promotion="mixed",
            methods={"norm": _norm, "dist": _dist}, aliases={"norm": _norm, "dist": _dist,
                                                             "cdist": _cdist},
            doc="Dot product along ``axis``, broadcasting the other axes (``x1`` is conjugated).")

# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
