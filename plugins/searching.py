"""Searching functions of the Array API: ``where`` has gradients, index searches do not.

One row per op (examples: the "Searching" section of the API reference). The
Tensor methods ``x.where(condition, y)`` and ``x.masked_fill(mask, value)``
are PyTorch's: ``x`` is the value kept where the condition holds (``where``)
or does not (``masked_fill``).
"""

from __future__ import annotations

import math
from typing import Any

from plugrad.errors import (
    ArgumentError,
    DtypeError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    ScalarRangeError,
    ShapeError,
)
from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, collect_ops, op
from plugrad.plugins import _rules
from plugrad.plugins._rules import (
    axis_query,
    device_of,
    dtype_name,
    index_dtype,
    python_number,
    reduction_axis,
    refuse_value_it_cannot_hold,
    require_bool_mask,
)

# The rows are aligned by hand, one op per statement.
# fmt: off


def _where_method(xp: Any, x: Any, condition: Any, other: Any) -> Any:
    """PyTorch's ``x.where(condition, other)``: ``x`` where ``condition`` holds, else ``other``."""
    require_bool_mask(xp, "where", condition)
    return xp.where(condition, x, other)


def _masked_fill(xp: Any, x: Any, mask: Any, value: Any) -> Any:
    """PyTorch's ``x.masked_fill(mask, value)``: ``value`` where ``mask`` holds, else ``x``."""
    require_bool_mask(xp, "masked_fill", mask)
    value = python_number(value)
    if getattr(value, "ndim", 0):  # as PyTorch: values that broadcast are a where()
        raise ShapeError(
            f"masked_fill(): the value must be a number or a 0-d tensor, got shape "
            f"{tuple(value.shape)}; use x.where(~mask, values) to take values elementwise"
        )
    refuse_value_it_cannot_hold(xp, "masked_fill", x, value)
    # The value takes x's dtype before where(), as in PyTorch: where() would promote x to
    # the value's dtype (int64 to float64 for 2.5) and round the elements left unmasked.
    if hasattr(value, "dtype"):
        if value.dtype != x.dtype:
            _refuse_value_out_of_range(xp, "masked_fill", x, value)
        if value.dtype != x.dtype and value.device == x.device:  # (where() refuses another)
            value = xp.astype(value, x.dtype)  # a float into an integer dtype: truncated
    elif isinstance(value, float) and xp.isdtype(x.dtype, "integral"):
        value = int(value)  # truncated toward zero, as PyTorch converts it
    out = xp.where(mask, value, x)
    # NOTE: as in PyTorch the result keeps x's dtype, whatever the value's.
    return out if out.dtype == x.dtype else xp.astype(out, x.dtype)


def _refuse_value_out_of_range(xp: Any, function: str, x: Any, value: Any) -> None:
    """Refuse a tensor ``value`` that ``x``'s integer dtype cannot hold (300 for uint8),
    as PyTorch does: converted, it would wrap around."""
    if xp.isdtype(x.dtype, "integral"):
        info: Any = xp.iinfo(x.dtype)
        # Written so that NaN, which no comparison holds for, is refused too.
        flag = xp.any(xp.logical_not((value >= info.min) & (value <= info.max)))
    elif xp.isdtype(x.dtype, "real floating") and xp.isdtype(value.dtype, "real floating"):
        info = xp.finfo(x.dtype)  # a finite value beyond it would become an infinity
        flag = xp.any(xp.isfinite(value) & (xp.abs(value) > info.max))
    else:
        return
    name = dtype_name(x.dtype)
    what = f"{function}(): a value outside the range [{info.min}, {info.max}] of {name}"
    if _rules.any_true(flag, what, ScalarRangeError):
        nan = xp.isdtype(value.dtype, "real floating") and bool(xp.any(xp.isnan(value)))
        wider = "a floating dtype" if nan else "a wider dtype"
        raise ScalarRangeError(
            f"{function}(): the value {value.tolist()} does not fit {name} (it holds "
            f"{info.min} to {info.max}); convert the tensor to {wider} first"
        )


def _nan_to_num(
    xp: Any, x: Any, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
) -> Any:
    """PyTorch's ``nan_to_num(x, nan=0.0, posinf=None, neginf=None)``: NaN and infinities replaced.

    Infinities become the dtype's largest (smallest) finite value by default. The gradient
    is 0 where ``x`` is not finite.
    """
    if xp.isdtype(x.dtype, "complex floating"):  # each part, as PyTorch's
        real = _nan_to_num(xp, xp.real(x), nan, posinf, neginf)
        return real + _nan_to_num(xp, xp.imag(x), nan, posinf, neginf) * 1j
    if not xp.isdtype(x.dtype, "real floating"):
        # Integers and bools have neither NaN nor infinities: a copy of their dtype.
        return xp.asarray(x, copy=True)
    largest = float(xp.finfo(x.dtype).max)

    def held(value: float) -> float:
        # Numbers beyond the dtype's range become infinities, as PyTorch converts them.
        return value if abs(value) <= largest else math.copysign(math.inf, value)

    out = xp.where(x == math.inf, largest if posinf is None else held(posinf), x)
    out = xp.where(x == -math.inf, -largest if neginf is None else held(neginf), out)
    return xp.where(xp.isnan(x), held(nan), out)


def _searchsorted(
    xp: Any, x1: Any, x2: Any, /, *, side: str | None = None, sorter: Any = None,
    right: bool = False, out_int32: bool = False,
) -> Any:  # fmt: skip
    # right= and out_int32= are PyTorch's (right=True is side="right"); side is "left" unless
    # given, and None by default (PyTorch's) so that side="left" with right=True is refused.
    if side is None:
        side = "right" if right else "left"
    elif side not in ("left", "right"):
        raise InvalidArgumentError(
            f"searchsorted(): side must be 'left' or 'right', got {side!r}"
        )
    elif right and side == "left":
        raise ArgumentError(
            "searchsorted(): side='left' and right=True ask for opposite sides; give one"
        )
    if x1.ndim == 0:
        raise ShapeError(
            "searchsorted(): the sorted sequence is 0-d; give it at least one dimension "
            "(x1.reshape(1) for a single value)"
        )
    if not hasattr(x2, "shape"):
        x2 = xp.asarray(x2, dtype=x1.dtype, device=device_of(x1))
    if sorter is not None and not xp.isdtype(sorter.dtype, "integral"):
        raise DtypeError(
            f"searchsorted(): sorter must hold integer positions (argsort's), got "
            f"{dtype_name(sorter.dtype)}; pass x1.argsort() or convert it with .long()"
        )
    if sorter is not None and sorter.shape[-1:] == x1.shape[-1:] and x1.shape[-1] > 0:
        # NumPy reads an index past the end without a word (an answer from no order)
        if bool(xp.any(sorter < 0)) or bool(xp.any(sorter >= x1.shape[-1])):
            raise IndexOutOfRangeError(
                f"searchsorted(): sorter holds an index outside 0..{x1.shape[-1] - 1}; it must "
                "be a permutation that sorts the sequence (argsort's)"
            )
    if x1.ndim > 1:
        found = _searchsorted_rows(xp, x1, x2, side, sorter)
    else:
        found = xp.searchsorted(x1, x2, side=side, sorter=sorter)
    return xp.astype(found, xp.int32) if out_int32 else found


def _searchsorted_rows(xp: Any, x1: Any, x2: Any, side: str, sorter: Any) -> Any:
    """PyTorch's N-d ``searchsorted``: each row of ``x1`` (its last axis) searched with the
    row of ``x2`` at the same leading position; the standard's takes a 1-D ``x1`` only."""
    if tuple(x2.shape[:-1]) != tuple(x1.shape[:-1]) or x2.ndim != x1.ndim:
        raise ShapeError(
            f"searchsorted(): an N-d sorted sequence of shape {tuple(x1.shape)} needs values "
            f"with the same leading dimensions, (..., k) with ... = {tuple(x1.shape[:-1])}; got "
            f"{tuple(x2.shape)}"
        )
    rows = math.prod(x1.shape[:-1])
    flat1 = xp.reshape(x1, (rows, x1.shape[-1]))
    flat2 = xp.reshape(x2, (rows, x2.shape[-1]))
    order = None if sorter is None else xp.reshape(sorter, (rows, x1.shape[-1]))
    found = [
        xp.searchsorted(
            flat1[i, :], flat2[i, :], side=side, sorter=None if order is None else order[i, :]
        )
        for i in range(rows)
    ]
    if not found:
        return xp.zeros(tuple(x2.shape), dtype=index_dtype(xp, x1), device=device_of(x1))
    return xp.reshape(xp.stack(found), tuple(x2.shape))


def _torch_where(xp: Any, condition: Any, x1: Any = None, x2: Any = None) -> Any:
    """PyTorch's ``where(condition)``: the indices where it holds, one tensor per axis."""
    if x1 is not None or x2 is not None:
        raise ArgumentError(
            "where() takes a condition and two values (where(condition, x1, x2)), or only "
            "the condition (PyTorch's where(condition), the same as nonzero(condition))"
        )
    return _nonzero_method(xp, condition, as_tuple=True)  # (0-d conditions too)


# NOTE: x1 and x2 default to None only so that where(condition) reaches _torch_where.
where = op("where(condition, x1=None, x2=None, /)", broadcasting=True, saves=("condition",),
           torch_function=_torch_where,
           vjp=(None, lambda xp, g, ans, condition, x1, x2: xp.where(condition, g, 0.0),
                lambda xp, g, ans, condition, x1, x2: xp.where(condition, 0.0, g)),
           methods={"where": _where_method, "masked_fill": _masked_fill, "nan_to_num": _nan_to_num},
           aliases={"nan_to_num": _nan_to_num},
           inplace=("masked_fill", "nan_to_num"), promotion="mixed",
           doc="Choose ``x1`` where ``condition`` is true, else ``x2``, element-wise.")
argmax = axis_query(
    "argmax", "Index of the (first) maximum along ``axis`` (of the flattened tensor by default).",
    real_only=True)
argmin = axis_query(
    "argmin", "Index of the (first) minimum along ``axis`` (of the flattened tensor by default).",
    real_only=True)
def _nonzero_method(xp: Any, x: Any, *, as_tuple: bool = False) -> Any:
    """PyTorch's ``x.nonzero()``: one row of indices per non-zero element (``(n, x.ndim)``).

    With ``as_tuple=True``, the standard's form: one index tensor per axis.
    """
    if x.ndim == 0:  # as PyTorch treats a 0-d tensor: like a 1-element 1-d one, then squeezed
        rows = xp.nonzero(xp.reshape(x, (1,)))[0]
        return (rows,) if as_tuple else xp.expand_dims(rows, axis=1)[:, :0]
    indices = xp.nonzero(x)
    return indices if as_tuple else xp.stack(indices, axis=1)


nonzero = op("nonzero", lambda xp, x, /: tuple(xp.nonzero(x)), multiple_outputs=True,
             differentiable=False, methods={"nonzero": _nonzero_method},
             torch_function=_nonzero_method,
             doc="Indices of the non-zero elements: a tuple with one index tensor per axis.")
def _count_nonzero(xp: Any, x: Any, dim: Any = None) -> Any:
    """PyTorch's ``count_nonzero(x, dim=None)``: the number of non-zero elements over ``dim``."""
    return xp.count_nonzero(x, axis=reduction_axis("count_nonzero", x, dim, None))


count_nonzero = op("count_nonzero(x, /, *, axis=None, keepdims=False)", differentiable=False,
                   methods={"count_nonzero": _count_nonzero}, torch_function=_count_nonzero,
                   doc="Number of non-zero elements along ``axis`` (all axes by default).")
searchsorted = op("searchsorted", _searchsorted, array_params=("sorter",), differentiable=False,
                  promotion="mixed",
                  real_only=True,
                  doc="Where to insert ``x2`` into the sorted 1-D ``x1`` to keep it sorted.")

# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
