"""Set functions of the Array API. None has a gradient (as in PyTorch's ``unique``)."""

from __future__ import annotations

import math
from typing import Any

from plugrad.errors import ArgumentError
from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, collect_ops, op
from plugrad.plugins._rules import checked_axis, device_of, index_dtype


def _unique_all(xp: Any, x: Any, /) -> tuple[Any, ...]:
    # From unique_inverse, which every backend has (PyTorch lacks unique_all): group the
    # flat positions by their value's index with a stable sort; each group's first
    # position is the value's first index, and the group's length its count.
    values, inverse = xp.unique_inverse(x)
    groups = xp.reshape(inverse, (-1,))
    order = xp.argsort(groups, stable=True)
    grouped = xp.take(groups, order)
    slots = xp.arange(values.shape[0], dtype=groups.dtype, device=device_of(x))
    start = xp.searchsorted(grouped, slots, side="left")
    stop = xp.searchsorted(grouped, slots, side="right")
    return values, xp.take(order, start), inverse, stop - start


def _isin(
    xp: Any, x1: Any, x2: Any, /, *, assume_unique: bool = False, invert: bool = False
) -> Any:
    # Compare every element with every test element: O(x1.size * x2.size) memory.
    # (assume_unique, PyTorch's hint that neither repeats an element, changes nothing here)
    x1, x2 = _in_one_dtype(xp, x1, x2)
    flat = xp.reshape(x2, (-1,))
    found = xp.any(xp.expand_dims(x1, axis=-1) == flat, axis=-1)
    return xp.logical_not(found) if invert else found


def _in_one_dtype(xp: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    """A Python number beside an array, as an array of the array's dtype (the op promoted
    the array where the number's kind is higher): 0.1 beside float32 is float32's 0.1."""
    if not hasattr(x2, "dtype"):
        return x1, xp.asarray(x2, dtype=x1.dtype, device=device_of(x1))
    if not hasattr(x1, "dtype"):
        return xp.asarray(x1, dtype=x2.dtype, device=device_of(x2)), x2
    return x1, x2


# NumPy has both functions itself (faster); the standard has neither.
def _unique_all_native(xp: Any, x: Any, /) -> tuple[Any, ...]:
    return tuple(xp.unique_all(x))


def _isin_native(
    xp: Any, x1: Any, x2: Any, /, *, assume_unique: bool = False, invert: bool = False
) -> Any:
    x1, x2 = _in_one_dtype(xp, x1, x2)
    return xp.isin(x1, x2, assume_unique=assume_unique, invert=invert)


def _unique(
    xp: Any, x: Any, sorted: bool = True, return_inverse: bool = False,
    return_counts: bool = False, dim: int | None = None,
) -> Any:  # fmt: skip
    """PyTorch's ``unique(x, sorted=True, return_inverse=False, return_counts=False)``.

    The sorted unique elements, with (as asked) each element's index among them
    (of ``x``'s shape) and how often each occurs. ``sorted=False`` gives the
    sorted order too, one of the orders PyTorch may give.
    """
    for name, flag in (("sorted", sorted), ("return_inverse", return_inverse),
                       ("return_counts", return_counts)):  # fmt: skip
        if type(flag) is not bool:  # unique(x, 1) meant dim=1: read as sorted=True
            raise ArgumentError(
                f"unique(): {name} must be True or False, got {flag!r} (the second argument "
                "is sorted; give the dim by keyword: unique(x, dim=1))"
            )
    if dim is not None:
        return _unique_slices(xp, x, dim, return_inverse, return_counts)
    values, _, inverse, counts = xp.unique_all(x)
    # NOTE: the standard leaves the order of unique_all's values open; sort them.
    order = xp.argsort(values)
    rank = xp.argsort(order)
    values, counts = xp.take(values, order), xp.take(counts, order)
    inverse = xp.reshape(xp.take(rank, xp.reshape(inverse, (-1,))), tuple(x.shape))
    asked = [values]
    if return_inverse:
        asked.append(xp.astype(inverse, index_dtype(xp, x)))
    if return_counts:
        asked.append(xp.astype(counts, index_dtype(xp, x)))
    return asked[0] if len(asked) == 1 else tuple(asked)


def _unique_slices(xp: Any, x: Any, dim: Any, return_inverse: bool, return_counts: bool) -> Any:
    """PyTorch's ``unique(x, dim=d)``: the distinct slices along ``d``, in lexicographic order."""
    dim = checked_axis("unique", dim, x.ndim)
    axes = (dim, *(a for a in range(x.ndim) if a != dim))
    moved = xp.permute_dims(x, axes)
    n = moved.shape[0]
    rows = xp.reshape(moved, (n, math.prod(moved.shape[1:])))
    # the standard sorts numbers only: bools as 0 and 1
    keys = xp.astype(rows, xp.uint8) if xp.isdtype(rows.dtype, "bool") else rows
    # Lexicographic: stable sorts by each column, the last first.
    order = xp.arange(n, device=device_of(x))
    for column in reversed(range(keys.shape[1])):
        order = xp.take(order, xp.argsort(xp.take(keys[:, column], order), stable=True))
    ranked = xp.take(rows, order, axis=0)
    differs = xp.any(ranked[1:, ...] != ranked[:-1, ...], axis=1)
    starts = xp.concat([xp.ones(min(n, 1), dtype=xp.bool, device=device_of(x)), differs])
    first = xp.nonzero(starts)[0]
    values = xp.take(moved, xp.take(order, first), axis=0)
    inverse_axes = tuple(axes.index(a) for a in range(x.ndim))
    asked = [xp.permute_dims(values, inverse_axes)]
    int_dtype = index_dtype(xp, x)
    if return_inverse:
        group = xp.cumulative_sum(xp.astype(starts, int_dtype)) - 1 if n else starts
        asked.append(xp.astype(xp.take(group, xp.argsort(order)), int_dtype))
    if return_counts:
        ends = xp.concat([first[1:], xp.asarray([n], dtype=first.dtype, device=device_of(x))])
        asked.append(xp.astype(ends - first, int_dtype))
    return asked[0] if len(asked) == 1 else tuple(asked)


# fmt: off
unique_all = op("unique_all", _unique_all, kernels={"numpy": _unique_all_native},
                methods={"unique": _unique}, aliases={"unique": _unique},
                output_names=("values", "indices", "inverse_indices", "counts"),
                differentiable=False, doc="Unique values, first and inverse indices, counts.")
unique_counts = op("unique_counts(x, /)", output_names=("values", "counts"), differentiable=False,
                   doc="The unique elements of ``x`` and how often each occurs.")
unique_inverse = op("unique_inverse(x, /)", output_names=("values", "inverse_indices"),
                    differentiable=False, doc="Unique values and each element's index among them.")
unique_values = op("unique_values(x, /)", differentiable=False,
                   doc="The unique elements of ``x``, sorted.")
isin = op("isin", _isin, kernels={"numpy": _isin_native}, differentiable=False, promotion="mixed",
          doc="Whether each element of ``x1`` occurs in ``x2`` (or not, with ``invert=True``).")
# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
