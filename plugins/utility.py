"""Utility functions of the Array API: truth tests (no gradients) and ``diff``.

One row per op (examples: the "Utility" section of the API reference). ``diff``'s
``prepend`` and ``append`` tensors receive gradients too.
"""

from __future__ import annotations

import operator
from typing import Any

from plugrad.errors import ArgumentError, InvalidArgumentError, ShapeError
from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, collect_ops, op
from plugrad.plugins._rules import axis_query, axis_slice, device_of, one_array, torch_reduction


def _truth_method(name: str) -> Any:
    """PyTorch's ``x.all()``/``x.any()`` and ``all(x, dim)``: a bool tensor, but 0 or 1 in
    ``uint8`` for a ``uint8`` tensor (the standard's form gives bools for every dtype)."""
    reduce = torch_reduction(name, empty_dim="none")

    def method(
        xp: Any, x: Any, dim: Any = None, keepdim: Any = None, *,
        axis: Any = None, keepdims: Any = None,
    ) -> Any:  # fmt: skip
        result = reduce(xp, x, dim, keepdim, axis=axis, keepdims=keepdims)
        return xp.astype(result, xp.uint8) if x.dtype == xp.uint8 else result

    method.empty_dim = "none"  # type: ignore[attr-defined]
    return one_array(method)


# The rows are aligned by hand, one op per statement.
# fmt: off

# PyTorch's all(dim=())/any(dim=()) reduce nothing (where its sum(dim=()) reduces every dim).
all = axis_query("all", "Test whether all elements along ``axis`` are true (non-zero).",
                 empty_dim="none", method=_truth_method("all"))
any = axis_query("any", "Test whether any element along ``axis`` is true (non-zero).",
                 empty_dim="none", method=_truth_method("any"))


def _diff_adjoint(xp: Any, g: Any, axis: int, n: int) -> Any:
    """The gradient of ``n`` differences along ``axis``, for the concatenated input."""
    for _ in range(n):
        # out[k] = y[k + 1] - y[k], so grad_y[i] = g[i - 1] - g[i] (zero beyond the ends).
        pad = xp.zeros_like(g[axis_slice(g.ndim, axis, 0, 1)])
        g = -xp.diff(g, axis=axis, prepend=pad, append=pad)
    return g


def _diff_grad(which: str) -> Any:
    def rule(
        xp: Any, g: Any, ans: Any, x: Any, prepend: Any, append: Any, *, axis: int, n: int
    ) -> Any:
        axis = axis % x.ndim
        if g.shape[axis] == 0:
            # n reached the joined length: the output is empty and every input gets zeros
            # (the adjoint below would give n elements, not the joined length).
            total = sum(p.shape[axis] for p in (prepend, x, append) if p is not None)
            shape = tuple(total if i == axis else d for i, d in enumerate(g.shape))
            grad = xp.zeros(shape, dtype=g.dtype, device=device_of(g))
        else:
            grad = _diff_adjoint(xp, g, axis, n)
        start = 0
        for name, piece in (("prepend", prepend), ("x", x), ("append", append)):
            if piece is None:
                continue
            stop = start + piece.shape[axis]
            if name == which:
                return grad[axis_slice(x.ndim, axis, start, stop)]
            start = stop
        raise AssertionError(f"diff: the rule for {which} runs only when it was given")

    return rule


# NOTE: n, axis and the ends may come by position, in PyTorch's order (diff(x, 1, 0, p));
# the standard has them keyword-only.
def _diff(xp: Any, x: Any, /, n: int = 1, axis: int = -1, prepend=None, append=None) -> Any:
    if isinstance(n, bool) or not hasattr(type(n), "__index__"):
        raise ArgumentError(f"diff(): n must be an int (how many times to difference), got {n!r}")
    n = operator.index(n)
    if n < 0:  # (NumPy's bare ValueError named neither diff nor n)
        raise InvalidArgumentError(f"diff(): n must be non-negative (how many times), got {n}")
    if x.ndim == 0:
        raise ShapeError("diff() takes a tensor of at least one dimension, got a 0-d tensor")
    # Leave out absent ends: some libraries (numpy) would join a None.
    if n == 0:  # x, as new memory (NumPy's hands back x itself, ends left out as PyTorch's)
        return xp.asarray(x, copy=True)
    ends = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    for name, end in ends.items():
        # The standard's and PyTorch's rule (NumPy would broadcast a 0-d end along the axis)
        if getattr(end, "ndim", 0) != x.ndim:
            raise ShapeError(
                f"diff(): {name} must be a tensor of the input's {x.ndim} dimensions (the "
                f"input's shape but along the axis), got shape {tuple(getattr(end, 'shape', ()))}"
            )
    if xp.isdtype(x.dtype, "bool"):
        # Neighbours that differ, as NumPy's and PyTorch's (Dask's subtracts, which bools
        # do not).
        x = xp.concat([e for e in (prepend, x, append) if e is not None], axis=axis)
        for _ in range(n):
            x = xp.not_equal(x[axis_slice(x.ndim, axis, 1, None)],
                             x[axis_slice(x.ndim, axis, 0, -1)])  # fmt: skip
        return x
    return xp.diff(x, axis=axis, n=n, **ends)


diff = op("diff", _diff, inputs=("x", "prepend", "append"), saves=(), methods="diff",
          promotion="mixed",  # the ends joined as cat joins them (PyTorch's)
          vjp=(_diff_grad("x"), _diff_grad("prepend"), _diff_grad("append")),
          doc="The ``n``-th difference ``x[i + 1] - x[i]`` along ``axis``, after joining the ends.")

# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
