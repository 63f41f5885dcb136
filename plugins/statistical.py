"""Statistical functions of the Array API: reductions and cumulative reductions with gradients.

One row per op (examples: the "Statistical" section of the API reference).
Conventions: ``max``/``min`` split the gradient evenly between tied extrema
(PyTorch's ``amax``); ``prod`` and ``cumulative_prod`` are exact where inputs
are zero (no division by zero); ``std``'s gradient is 0 where the standard
deviation is 0. A ``dtype=`` argument computes in that dtype; the gradient
comes back in the input's dtype.

The Tensor methods ``x.max(dim)``/``x.min(dim)`` and ``x.var()``/``x.std()``
are PyTorch's: with ``dim``, the named tuple ``(values, indices)`` whose
gradient goes to the index picked; the sample variance (``correction=1``) by
default, where the functions follow the standard (``correction=0``).
"""

from __future__ import annotations

import numbers
from typing import Any

from plugrad.errors import ArgumentError
from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, collect_ops, op
from plugrad.plugins._rules import (
    axis_slice,
    cast,
    conj,
    count,
    expand_reduced,
    normalize_axes,
    reverse_cumulative_sum,
    torch_axis,
    torch_cumulative,
    torch_reduction,
    values_indices,
)

# The rows are aligned by hand, one op per statement.
# fmt: off


def _spread_method(name: str) -> Any:
    def method(
        xp: Any, x: Any, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False,
        *, correction: float | None = None, axis: Any = None,
    ) -> Any:
        if isinstance(dim, bool):  # PyTorch's older x.std(unbiased)
            dim, unbiased = None, dim
        if unbiased is not None and correction is not None:
            raise ArgumentError(f"{name}() got both unbiased= and correction=; pass only one")
        if correction is None:
            correction = 0 if unbiased is False else 1
        function = xp.var if name == "var" else xp.std
        return function(x, axis=torch_axis(dim, axis), correction=correction, keepdims=keepdim)

    method.__doc__ = (
        f"PyTorch's ``x.{name}(dim=None, unbiased=True, keepdim=False, *, correction=1)``: "
        f"by default the sample {'variance' if name == 'var' else 'standard deviation'}."
    )
    return method


def _spread_and_mean(name: str) -> Any:
    spread = _spread_method(name)

    def spread_and_mean(
        xp: Any, x: Any, dim: Any = None, unbiased: bool | None = None, keepdim: bool = False,
        *, correction: float | None = None, axis: Any = None,
    ) -> Any:  # fmt: skip
        value = spread(xp, x, dim, unbiased, keepdim, correction=correction, axis=axis)
        if isinstance(dim, bool):
            dim = None
        return value, xp.mean(x, axis=torch_axis(dim, axis), keepdims=keepdim)

    spread_and_mean.__doc__ = (
        f"PyTorch's ``{name}_mean(x, dim=None, unbiased=True, keepdim=False, *, correction=1)``: "
        f"the pair ``({name}, mean)``."
    )
    return spread_and_mean


def _extremum_method(name: str) -> Any:
    def method(xp: Any, x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None) -> Any:
        if hasattr(dim, "shape") and not isinstance(dim, numbers.Integral):
            # PyTorch's x.max(other): element-wise (a NumPy integer has a shape too: a dim)
            return xp.maximum(x, dim) if name == "max" else xp.minimum(x, dim)
        axis = torch_axis(dim, axis)
        reduce = xp.max if name == "max" else xp.min
        if axis is None:
            return reduce(x)
        pick = xp.argmax if name == "max" else xp.argmin
        indices = pick(x, axis=axis, keepdims=True)
        values = xp.take_along_axis(x, indices, axis=axis)
        if not keepdim:
            values, indices = xp.squeeze(values, axis=axis), xp.squeeze(indices, axis=axis)
        return values_indices[name](values, indices)

    method.__doc__ = (
        f"PyTorch's ``x.{name}(dim=None, keepdim=False)``: the {name}imum of all elements, or "
        f"with ``dim`` the named tuple ``(values, indices)`` (the gradient goes to the index)."
    )
    return method


def _sum_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, dtype: Any, keepdims: bool) -> Any:
    g = expand_reduced(xp, g, x.shape, axis, keepdims)
    return g if dtype is None else cast(xp, g, x.dtype)


sum = op("sum(x, /, *, axis=None, dtype=None, keepdims=False)", vjp=_sum_grad, saves=(),
         methods="sum", torch_function=torch_reduction("sum", with_dtype=True),
         doc="Sum of the elements over ``axis`` (all axes by default).")

mean = op("mean(x, /, *, axis=None, keepdims=False)", saves=(), methods="mean",
          torch_function=torch_reduction("mean"),
          vjp=lambda xp, g, ans, x, *, axis, keepdims: (
              expand_reduced(xp, g, x.shape, axis, keepdims) / count(x.shape, axis)),
          doc="Arithmetic mean over ``axis`` (all axes by default).")


def _prod_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, dtype: Any, keepdims: bool) -> Any:
    axes = normalize_axes(axis, x.ndim)
    g = expand_reduced(xp, g, x.shape, axis, keepdims)
    # NOTE: prod / x divides by zero. The product of the *other* elements is the
    # product of the non-zero ones when x is the only zero, and 0 when there are more.
    zero = x == 0
    safe = xp.where(zero, 1, x)
    zeros = xp.sum(xp.astype(zero, xp.int64), axis=axes, keepdims=True)
    others = xp.prod(safe, axis=axes, keepdims=True)
    # 1 without zeros, else 0, but with the right derivative with respect to a single
    # zero, so that second derivatives are exact too unless a slice has several zeros.
    zero_factor = xp.prod(xp.where(zero, x, 1), axis=axes, keepdims=True)
    partial = xp.where(zero, xp.where(zeros == 1, others, 0), others / safe * zero_factor)
    grad = g * conj(xp, partial)
    return grad if dtype is None else cast(xp, grad, x.dtype)


prod = op("prod(x, /, *, axis=None, dtype=None, keepdims=False)", vjp=_prod_grad, methods="prod",
          torch_function=torch_reduction("prod", with_dtype=True),
          doc="Product of the elements over ``axis``; the gradient is exact where elements are 0.")


def _var_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, correction: Any, keepdims: bool):
    # Scaled while still reduced: one pass over x's shape fewer than scaling afterwards.
    g = expand_reduced(xp, g * 2 / (count(x.shape, axis) - correction), x.shape, axis, keepdims)
    return g * (x - xp.mean(x, axis=axis, keepdims=True))


var = op("var(x, /, *, axis=None, correction=0.0, keepdims=False)", vjp=_var_grad,
         methods={"var": _spread_method("var")}, torch_function=_spread_method("var"),
         aliases={"var_mean": _spread_and_mean("var")},
         doc="Variance over ``axis``; ``correction=1`` gives the unbiased (sample) variance.")


def _std_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, correction: Any, keepdims: bool):
    g = expand_reduced(xp, g, x.shape, axis, keepdims)
    std = expand_reduced(xp, ans, x.shape, axis, keepdims)
    centered = x - xp.mean(x, axis=axis, keepdims=True)
    # NOTE: where the standard deviation is 0 the formula is 0/0; the gradient there is
    # 0, as in PyTorch (the subgradient of the minimum of a non-negative function).
    constant = std == 0
    scale = (count(x.shape, axis) - correction) * xp.where(constant, 1.0, std)
    return xp.where(constant, 0.0, g * centered / scale)


std = op("std(x, /, *, axis=None, correction=0.0, keepdims=False)", vjp=_std_grad,
         methods={"std": _spread_method("std")}, torch_function=_spread_method("std"),
         aliases={"std_mean": _spread_and_mean("std")},
         doc="Standard deviation over ``axis``; ``correction=1`` for the sample one.")


def _extremum_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, keepdims: bool) -> Any:
    axes = normalize_axes(axis, x.ndim)
    g = expand_reduced(xp, g, x.shape, axis, keepdims)
    # NOTE: every tied extremum gets an equal share of the gradient (PyTorch's amax/amin),
    # not only the first one.
    hit = xp.astype(x == expand_reduced(xp, ans, x.shape, axis, keepdims), g.dtype)
    return g * hit / xp.sum(hit, axis=axes, keepdims=True)


max = op("max(x, /, *, axis=None, keepdims=False)", vjp=_extremum_grad,
         methods={"amax": None, "max": _extremum_method("max")},
         torch_function=_extremum_method("max"),
         doc="Maximum over ``axis`` (all axes by default); tied maxima share the gradient.")

min = op("min(x, /, *, axis=None, keepdims=False)", vjp=_extremum_grad,
         methods={"amin": None, "min": _extremum_method("min")},
         torch_function=_extremum_method("min"),
         doc="Minimum over ``axis`` (all axes by default); tied minima share the gradient.")


def _cumulative_axis(x: Any, axis: int | None) -> int:
    return 0 if axis is None else axis % x.ndim


def _cumulative_sum_grad(
    xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, dtype: Any, include_initial: bool
) -> Any:
    axis = _cumulative_axis(x, axis)
    grad = reverse_cumulative_sum(xp, g, axis)
    if include_initial:
        # out[k] = sum(x[:k]): x[i] reaches out[i + 1:], one position later.
        grad = grad[axis_slice(x.ndim, axis, 1, None)]
    return grad if dtype is None else cast(xp, grad, x.dtype)


cumulative_sum = op("cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False)",
                    vjp=_cumulative_sum_grad, saves=(), methods=("cumulative_sum", "cumsum"),
                    inplace=("cumsum",), aliases={"cumsum": torch_cumulative("cumulative_sum")},
                    doc="Cumulative sum along ``axis``; ``include_initial`` prepends a 0.")


def _cumulative_prod_grad(
    xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, dtype: Any, include_initial: bool
) -> Any:
    axis = _cumulative_axis(x, axis)
    if include_initial:
        # out = [1, cumprod(x)]: the leading 1 depends on nothing.
        g = g[axis_slice(x.ndim, axis, 1, None)]
    # NOTE: the textbook sum_k g[k] * out[k] / x[i] divides by zero. Instead, with P the
    # cumulative product of x with its zeros replaced by 1 and z the running count of
    # zeros, d out[k] / d x[i] is P[k] / x[i] while z[k] == 0 for a non-zero x[i], and
    # P[k] while z[k] == 1 for the first zero x[i] (and 0 otherwise): two masked
    # reverse cumulative sums give every gradient exactly.
    zero = x == 0
    safe = xp.where(zero, 1, x)
    running = xp.cumulative_prod(safe, axis=axis)
    zeros = xp.cumulative_sum(xp.astype(zero, xp.int64), axis=axis)
    weighted = g * conj(xp, running)
    before_zero = reverse_cumulative_sum(xp, xp.where(zeros == 0, weighted, 0), axis)
    at_first_zero = reverse_cumulative_sum(xp, xp.where(zeros == 1, weighted, 0), axis)
    grad = xp.where(zero, at_first_zero, before_zero / conj(xp, safe))
    return grad if dtype is None else cast(xp, grad, x.dtype)


cumulative_prod = op("cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False)",
                     vjp=_cumulative_prod_grad, methods=("cumulative_prod", "cumprod"),
                     inplace=("cumprod",),
                     aliases={"cumprod": torch_cumulative("cumulative_prod")},
                     doc="Cumulative product along ``axis``; ``include_initial`` prepends a 1.")

# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
