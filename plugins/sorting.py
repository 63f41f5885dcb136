"""Sorting functions of the Array API: ``sort`` has gradients, ``argsort`` does not.

One row per op (examples: the "Sorting" section of the API reference). The
Tensor methods ``x.sort()`` and ``x.topk(k)`` are PyTorch's: they return a
named tuple ``(values, indices)``, where ``plugrad.sort`` returns the values.
"""

from __future__ import annotations

from typing import Any

from plugrad.errors import ArgumentError, AxisError, DtypeError, ShapeError, type_name
from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, as_int, collect_ops, op
from plugrad.plugins._rules import (
    along_axis_key,
    axis_slice,
    checked_axis,
    device_of,
    dtype_name,
    index_dtype,
    is_complex,
    torch_axis,
    values_indices,
)

# The rows are aligned by hand, one op per statement.
# fmt: off


def _sort_grad(
    xp: Any, g: Any, ans: Any, x: Any, *, axis: int, descending: bool, stable: bool
) -> Any:
    # Send each sorted position's gradient back to where its element came from.
    # NOTE: equal elements may be ordered either way; any order gives the same
    # values, and each tied element gets the gradient of one of the tied positions.
    if x.ndim == 0:
        return g
    order = xp.argsort(x, axis=axis, descending=descending, stable=True)
    key = along_axis_key(xp, order, axis, tuple(x.shape), tuple(x.shape))
    return xp.scatter_add(g, key=key, shape=x.shape)


def _sort_method(
    xp: Any, x: Any, dim: int | None = None, descending: bool = False, *,
    stable: bool = False, axis: int | None = None,
) -> tuple[Any, Any]:
    """PyTorch's ``x.sort(dim=-1, descending=False)``: the named tuple ``(values, indices)``."""
    axis = torch_axis(dim, axis, -1)
    if x.ndim == 0:
        checked_axis("sort", axis, 0, zero_d_as_one=True)  # (dim=7 was taken)
        index = xp.zeros((), dtype=index_dtype(xp, x), device=device_of(x))
        return values_indices["sort"](xp.asarray(x, copy=True), index)
    # NOTE: always stable: PyTorch's unstable order is one of the stable ones.
    indices = xp.argsort(x, axis=axis, descending=descending, stable=True)
    return values_indices["sort"](xp.take_along_axis(x, indices, axis=axis), indices)


def _topk(
    xp: Any, x: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
) -> tuple[Any, Any]:
    """PyTorch's ``x.topk(k, dim=-1, largest=True)``: the ``k`` largest (or smallest) elements.

    A named tuple ``(values, indices)``, in sorted order (also for ``sorted=False``).
    """
    if is_complex(xp, x):
        raise DtypeError(
            f"topk(): complex inputs are not supported ({dtype_name(x.dtype)}): complex "
            "numbers have no order (PyTorch refuses them too); apply topk() to x.real, x.imag "
            "or abs(x) instead"
        )
    if type(k) is not int:
        k = _count_k(k)
    if type(dim) is not int:  # (a NumPy integer, a 0-d integer tensor: as an int)
        dim = as_int(dim)
    if x.ndim == 0:  # PyTorch's: the element itself for k 0 or 1, along dim 0 or -1
        if not isinstance(dim, int) or dim not in (0, -1):
            raise AxisError(f"topk(): dim must be 0 or -1 for a 0-d tensor, got {dim!r}")
        if k not in (0, 1):
            raise ShapeError(f"topk(): k={k} is out of range for a 0-d tensor (0 or 1)")
        values, indices = _sort_method(xp, x)
        return values_indices["topk"](values, indices)
    if not isinstance(dim, int):
        raise AxisError(f"topk(): dim must be an int, got {dim!r}")
    order = xp.argsort(x, axis=dim, descending=largest, stable=True)
    indices = order[axis_slice(x.ndim, dim, 0, k)]
    if indices.shape[dim % x.ndim] != k:
        raise ShapeError(
            f"topk(): k={k} is out of range for dimension {dim} of length {x.shape[dim]}"
        )
    return values_indices["topk"](xp.take_along_axis(x, indices, axis=dim), indices)


def _count_k(k: Any) -> int:
    """topk()'s ``k`` as an int (a NumPy integer or a 0-d integer tensor too), or an
    ArgumentError naming it: a float was refused by slicing, as "slice indices must be
    integers"."""
    k = as_int(k)
    if type(k) is int:
        return k
    raise ArgumentError(
        f"topk(): argument 'k' must be int, not {type_name(k)} (got {k!r}); k counts the "
        "elements to take"
    )


def _torch_argsort(
    xp: Any, x: Any, dim: int = -1, descending: bool = False, stable: bool = True
) -> Any:
    """PyTorch's ``torch.argsort(x, dim=-1, descending=False)``: the axis may come by position."""
    return xp.argsort(x, axis=dim, descending=descending, stable=stable)


def _argsort(
    xp: Any, x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True
) -> Any:
    if x.ndim == 0:  # PyTorch's 0-d argsort is 0-d (NumPy's is 1-d): the one element's 0
        flat = xp.argsort(xp.reshape(x, (1,)), axis=axis, descending=descending, stable=stable)
        return xp.reshape(flat, ())
    return xp.argsort(x, axis=axis, descending=descending, stable=stable)


def _msort(xp: Any, x: Any) -> Any:
    """PyTorch's ``msort(x)``: ``x`` sorted along its first axis (the values only)."""
    return xp.asarray(x, copy=True) if x.ndim == 0 else xp.sort(x, axis=0)


def _sort(xp: Any, x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True):
    if x.ndim == 0:  # PyTorch's: the one element, along axis 0 or -1
        checked_axis("sort", axis, 0, zero_d_as_one=True)
        return xp.asarray(x, copy=True)
    if descending and stable:
        # Ties in their order in x, as argsort(descending=True) has them (-0.0 and 0.0 are
        # ties): array-api-compat flips an ascending sort, which reverses them.
        ascending = xp.sort(xp.flip(x, axis=axis), axis=axis, stable=True)
        return xp.flip(ascending, axis=axis)
    return xp.sort(x, axis=axis, descending=descending, stable=stable)


sort = op("sort", _sort, vjp=_sort_grad, saves=("x",),
          methods={"sort": _sort_method, "topk": _topk, "msort": _msort},
          torch_function=_sort_method, aliases={"topk": _topk, "msort": _msort}, real_only=True,
          doc="Sort along ``axis``; each sorted position's gradient goes back to its element.")
argsort = op("argsort", _argsort, differentiable=False, methods={"argsort": _torch_argsort},
             torch_function=_torch_argsort,
             real_only=True, doc="Indices that sort ``x`` along ``axis`` (stable by default).")

# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
