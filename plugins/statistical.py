"""Statistical functions of the Array API: reductions and cumulative reductions with gradients.

One row per op (examples: the "Statistical" section of the API reference).
Conventions: ``max``/``min`` split the gradient evenly between tied extrema
(PyTorch's ``amax``); ``prod`` and ``cumulative_prod`` are exact where inputs
are zero (no division by zero); ``std``'s gradient is 0 where the standard
deviation is 0. A ``dtype=`` argument computes in that dtype; the gradient
comes back in the input's dtype. ``float16`` ``var``, ``std`` and the cumulative
sums and products compute in ``float32``, rounded once, as PyTorch's do.

The Tensor methods ``x.max(dim)``/``x.min(dim)`` and ``x.var()``/``x.std()``
are PyTorch's: with ``dim``, the named tuple ``(values, indices)`` whose
gradient goes to the index picked; the sample variance (``correction=1``) by
default, where the functions follow the standard (``correction=0``).
"""

from __future__ import annotations

import collections
import functools
import math
import numbers
import types
from typing import Any

from plugrad.errors import ArgumentError, DtypeError, IndexOutOfRangeError, ShapeError
from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, as_int, collect_ops, dim_as_axis, op
from plugrad.plugins._rules import (
    axis_slice,
    cast,
    checked_axis,
    conj,
    count,
    device_of,
    dtype_name,
    expand_reduced,
    half_in_float32,
    half_rule_in_float32,
    index_dtype,
    is_complex,
    is_half,
    normalize_axes,
    one_int_axis,
    reduction_axis,
    reverse_cumulative_sum,
    torch_accumulated,
    torch_axis,
    torch_cumulative,
    torch_reduction,
    values_indices,
)

# The rows are aligned by hand, one op per statement.
# fmt: off


def _return_type(name: str, fields: str) -> Any:
    """PyTorch's named tuple ``torch.return_types.<name>``, found by pickle in ``_return_types``."""
    named = collections.namedtuple(name, fields, module=__name__)  # type: ignore[misc]
    named.__qualname__ = f"_return_types.{name}"
    return named


_return_types = types.SimpleNamespace(
    aminmax=_return_type("aminmax", "min max"),
    **{name: _return_type(name, "values indices")
       for name in ("cummax", "cummin", "median", "nanmedian", "kthvalue")},
)


def _is_floating(xp: Any, x: Any) -> bool:
    return xp.isdtype(x.dtype, ("real floating", "complex floating"))


def _nansum(xp: Any, x: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    """PyTorch's ``nansum(x, dim=None, keepdim=False, *, dtype=None)``: the sum, NaN taken as 0."""
    if _is_floating(xp, x):
        x = xp.where(xp.isnan(x), 0.0, x)
    x, dtype = torch_accumulated(xp, x, dtype)
    return xp.sum(x, axis=reduction_axis("nansum", x, dim, None), keepdims=keepdim, dtype=dtype)


def _nanmean(xp: Any, x: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    """PyTorch's ``nanmean(x, dim=None, keepdim=False, *, dtype=None)``: the mean of the non-NaN."""
    if not _is_floating(xp, x):
        raise DtypeError(
            f"nanmean() takes a floating tensor, got {x.dtype}; convert it first (x.double())"
        )
    if dtype is not None:
        _refuse_whole_mean("nanmean", xp, dtype)
    kept = xp.astype(xp.logical_not(xp.isnan(x)), index_dtype(xp, x))
    kept = xp.sum(kept, axis=reduction_axis("nanmean", x, dim, None), keepdims=keepdim)
    total = _nansum(xp, x, dim, keepdim, dtype=dtype)
    if is_half(xp, total.dtype):  # a count above 65504 is inf in float16: divide in float32
        return xp.astype(xp.astype(total, xp.float32) / xp.astype(kept, xp.float32), total.dtype)
    mean = total / kept
    return mean if mean.dtype == total.dtype else xp.astype(mean, total.dtype)




def _running(xp: Any, x: Any, axis: int, combine: Any, fill: Any) -> Any:
    """``combine`` accumulated along ``axis`` (a running maximum, ...), in log2(n) steps."""
    n, shift = x.shape[axis], 1
    if n < 2:  # nothing to combine: new memory all the same, never the input itself
        return xp.asarray(x, copy=True)
    while shift < n:
        padding = xp.full_like(x[axis_slice(x.ndim, axis, 0, shift)], fill)
        x = combine(x, xp.concat([padding, x[axis_slice(x.ndim, axis, 0, n - shift)]], axis=axis))
        shift *= 2
    return x


def _log_add_exp(xp: Any) -> Any:
    """``log(exp(a) + exp(b))`` of real arrays (the standard's ``logaddexp``) or of complex
    ones: shifted by the one of larger real part, so that the log is the principal one."""

    def complex_log_add_exp(a: Any, b: Any) -> Any:
        larger = xp.real(a) >= xp.real(b)
        top, other = xp.where(larger, a, b), xp.where(larger, b, a)
        # An infinite top is the sum (other - top would be inf - inf): shifted by 0 there.
        infinite = xp.isinf(xp.real(top))
        shift = xp.where(infinite, xp.zeros_like(top), top)
        return xp.where(infinite, top, top + xp.log1p(xp.exp(other - shift)))

    return complex_log_add_exp


def _logcumsumexp_kernel(xp: Any, x: Any, /, *, axis: int | None = None) -> Any:
    if axis is None:
        raise ArgumentError("logcumsumexp() takes the dimension to accumulate along: dim=")
    axis = checked_axis("logcumsumexp", axis, x.ndim, zero_d_as_one=True)
    if x.ndim == 0:
        return xp.asarray(x, copy=True)
    combine = _log_add_exp(xp) if is_complex(xp, x) else xp.logaddexp
    return _running(xp, x, axis, combine, -math.inf)


def _reverse_logcumsumexp(xp: Any, x: Any, axis: int) -> Any:
    """``out[i] = log(sum(exp(x[i:])))`` along ``axis`` (the op itself: differentiable)."""
    return xp.flip(xp.cumulative_logsumexp(xp.flip(x, axis=axis), axis=axis), axis=axis)


def _logcumsumexp_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: int) -> Any:
    # x[i]'s gradient: sum over j >= i of g[j] * exp(x[i] - ans[j]), each term in log
    # space (an ans[j] of +inf makes its terms 0, not inf - inf); real gradients by sign.
    # Terms without weight get a log far below any other but finite, not -inf, so that
    # the gradient of this rule (a second derivative) never meets -inf - -inf; a quarter
    # of the lowest float, so that negating it and adding to it does not overflow.
    if x.ndim == 0:
        return g
    axis = checked_axis("logcumsumexp", axis, x.ndim)
    lowest = xp.finfo(x.dtype).min / 4
    zero = g == 0
    safe = xp.where(zero, xp.ones_like(g), g)
    if is_complex(xp, x):
        log_g = xp.where(zero, xp.full_like(g, lowest), xp.log(safe))
        return xp.exp(_reverse_logcumsumexp(xp, log_g - conj(xp, ans), axis) + conj(xp, x))
    log_g, nothing = xp.log(xp.abs(safe)), xp.full_like(g, lowest)
    parts = [
        xp.exp(_reverse_logcumsumexp(xp, xp.where(sign, log_g, nothing) - ans, axis) + x)
        for sign in (g > 0, g < 0)
    ]
    return parts[0] - parts[1]


def _torch_logcumsumexp(xp: Any, x: Any, dim: int) -> Any:
    """PyTorch's ``logcumsumexp(x, dim)``."""
    return xp.cumulative_logsumexp(x, axis=dim_as_axis(dim))


cumulative_logsumexp = op(
    "cumulative_logsumexp", _logcumsumexp_kernel, vjp=_logcumsumexp_grad, standard=False,
    methods={"logcumsumexp": _torch_logcumsumexp}, aliases={"logcumsumexp": _torch_logcumsumexp},
    promotion="float",
    doc="``log(cumulative_sum(exp(x)))`` along ``axis``, without overflow (PyTorch's "
        "``logcumsumexp``).",
)  # fmt: skip


def _cumulative_extremum(name: str) -> Any:
    def method(xp: Any, x: Any, dim: int) -> Any:
        if x.dtype == xp.bool:  # as 0 and 1 (the standard orders numbers only), then bools
            values, indices = method(xp, xp.astype(x, xp.int8), dim)
            return getattr(_return_types, name)(xp.astype(values, xp.bool), indices)
        _refuse_complex(xp, name, x)
        y = xp.reshape(x, (1,)) if x.ndim == 0 else x
        axis = checked_axis(name, dim, y.ndim, zero_d_as_one=True)
        largest = name == "cummax"
        if _is_floating(xp, y):
            fill = -math.inf if largest else math.inf
        else:
            fill = xp.iinfo(y.dtype).min if largest else xp.iinfo(y.dtype).max
        running = _running(xp, y, axis, xp.maximum if largest else xp.minimum, fill)
        # NOTE: as in PyTorch, a tie (or a NaN, which wins from its position on) takes the
        # latest index: the running maximum of the positions where the extremum is reached.
        shape = tuple(y.shape[axis] if d == axis else 1 for d in range(y.ndim))
        positions = xp.reshape(xp.arange(y.shape[axis], device=device_of(y)), shape)
        reached = xp.logical_or(y == running, xp.isnan(y))
        indices = _running(xp, xp.where(reached, positions, -1), axis, xp.maximum, -1)
        values = xp.take_along_axis(y, indices, axis=axis)  # the gradient goes to the index
        if x.ndim == 0:
            values, indices = xp.reshape(values, ()), xp.reshape(indices, ())
        return getattr(_return_types, name)(values, indices)

    method.__doc__ = (
        f"PyTorch's ``{name}(x, dim)``: the running {name[3:]}imum along ``dim`` and the index "
        f"of each, a named tuple ``(values, indices)``."
    )
    return method


def _select(xp: Any, x: Any, dim: Any, keepdim: bool, position: Any, name: str) -> Any:
    """The element at sorted ``position`` along ``dim``: the named tuple ``(values, indices)``."""
    _refuse_complex(xp, name, x)
    y = xp.reshape(x, (1,)) if x.ndim == 0 else x
    axis = checked_axis(name, dim, y.ndim, zero_d_as_one=True)
    order = xp.argsort(y, axis=axis, stable=True)  # NaN sort last
    indices = xp.take_along_axis(order, position(y, axis), axis=axis)
    values = xp.take_along_axis(y, indices, axis=axis)  # the gradient goes to the index
    if x.ndim == 0:
        values, indices = xp.reshape(values, ()), xp.reshape(indices, ())
    elif not keepdim:
        values, indices = xp.squeeze(values, axis=axis), xp.squeeze(indices, axis=axis)
    return getattr(_return_types, name)(values, indices)


def _refuse_complex(xp: Any, function: str, x: Any) -> None:
    """Refuse complex values where ``function`` orders them, naming it (the error named the
    op it is made of: argsort, maximum)."""
    if is_complex(xp, x):
        raise DtypeError(
            f"{function}(): complex inputs are not supported ({dtype_name(x.dtype)}): complex "
            f"numbers have no order (PyTorch refuses them too); apply {function}() to x.real, "
            "x.imag or abs(x) instead"
        )


def _median(name: str) -> Any:
    def position(xp: Any, y: Any, axis: int) -> Any:
        valid = xp.sum(
            xp.astype(xp.logical_not(xp.isnan(y)), index_dtype(xp, y)), axis=axis, keepdims=True
        )
        if name == "nanmedian":  # the lower median of the non-NaN (the first NaN if all are)
            return xp.where(valid == 0, 0, (valid - 1) // 2)
        # NaN sort last: the first NaN (in order) where there is one, as in PyTorch.
        return xp.where(valid < y.shape[axis], valid, (y.shape[axis] - 1) // 2)

    def method(xp: Any, x: Any, dim: Any = None, keepdim: bool = False) -> Any:
        if dim is not None:
            return _select(xp, x, dim, keepdim, lambda y, axis: position(xp, y, axis), name)
        median = of_all(xp, x)
        return xp.reshape(median, (1,) * x.ndim) if keepdim else median  # every axis kept

    def of_all(xp: Any, x: Any) -> Any:
        flat = xp.reshape(x, (-1,))
        if flat.shape[0] == 0:
            if not _is_floating(xp, x):
                raise ShapeError(
                    f"{name}() of an empty {x.dtype} tensor has no value (NaN, its value for "
                    "floating tensors, is not an integer); check for x.numel() == 0 first"
                )
            return xp.sum(flat) * math.nan  # NaN, in x's graph (as PyTorch's)
        median = _select(xp, flat, 0, False, lambda y, axis: position(xp, y, axis), name).values
        if not _is_floating(xp, x):
            return median
        # NOTE: the gradient of the median of all elements is shared by the elements equal
        # to it (PyTorch's): the maximum of those, or their mean if the median is NaN.
        tied = flat == median if not bool(xp.isnan(median)) else xp.isnan(flat)
        return xp.mean(flat[tied]) if bool(xp.isnan(median)) else xp.max(flat[tied])

    method.__doc__ = (
        f"PyTorch's ``{name}(x, dim=None, keepdim=False)``: the lower median"
        f"{' ignoring NaN' if name == 'nanmedian' else ''} of all elements, or with ``dim`` "
        f"the named tuple ``(values, indices)``."
    )
    return method


def _kthvalue(xp: Any, x: Any, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """PyTorch's ``kthvalue(x, k, dim=-1, keepdim=False)``: the ``k``-th smallest along ``dim``.

    A named tuple ``(values, indices)``; among equal elements the index may differ from PyTorch's.
    """
    k = as_int(k)  # (a NumPy integer, a 0-d integer tensor)
    if isinstance(k, bool) or not isinstance(k, int):
        # A float k picked the element below it (1.5 gave the first smallest).
        raise ArgumentError(f"kthvalue(): argument 'k' must be int, not {type(k).__name__}")
    if type(dim) is not int:
        dim = one_int_axis("kthvalue", dim)
    length = x.shape[checked_axis("kthvalue", dim, x.ndim, zero_d_as_one=True)] if x.ndim else 1
    if not 1 <= k <= length:
        raise IndexOutOfRangeError(
            f"kthvalue(): k={k} is out of range for dimension {dim} of length {length}; "
            f"k counts from 1 to {length}"
        )

    def position(y: Any, axis: int) -> Any:
        shape = tuple(1 if d == axis else n for d, n in enumerate(y.shape))
        return xp.full(shape, k - 1, dtype=index_dtype(xp, y), device=device_of(y))

    return _select(xp, x, dim, keepdim, position, "kthvalue")


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
        elif type(correction) is not int:  # (a NumPy integer, a 0-d integer tensor: an int)
            correction = as_int(correction)
        function = xp.var if name == "var" else xp.std
        axis = reduction_axis(name, x, dim, axis)
        return function(x, axis=axis, correction=correction, keepdims=keepdim)

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
        return value, xp.mean(x, axis=reduction_axis(name, x, dim, axis), keepdims=keepdim)

    spread_and_mean.__doc__ = (
        f"PyTorch's ``{name}_mean(x, dim=None, unbiased=True, keepdim=False, *, correction=1)``: "
        f"the pair ``({name}, mean)``."
    )
    return spread_and_mean


def _extremum_method(name: str) -> Any:
    def method(
        xp: Any, x: Any, dim: Any = None, keepdim: bool = False, *, axis: Any = None,
        other: Any = None,
    ) -> Any:  # fmt: skip
        if other is not None:  # PyTorch's x.max(other=y)
            if dim is not None or keepdim is not False or axis is not None:
                raise ArgumentError(f"{name}(x, other=) takes no dim, keepdim or axis")
            dim = other
        if hasattr(dim, "shape") and not isinstance(dim, numbers.Integral):
            # PyTorch's x.max(other): element-wise (a NumPy integer has a shape too: a dim)
            if keepdim is not False or axis is not None:  # (max(a, b, c) ignored c)
                raise ArgumentError(
                    f"{name}(x, other) takes no more arguments, got a "
                    f"{type(keepdim if axis is None else axis).__name__} after other"
                )
            return xp.maximum(x, dim) if name == "max" else xp.minimum(x, dim)
        axis = torch_axis(dim, axis)
        reduce = xp.max if name == "max" else xp.min
        if axis is None:
            return reduce(x, keepdims=keepdim)  # keepdim: every axis kept, with length 1
        # As PyTorch: one int dim, which a 0-d tensor takes as a 1-element 1-d one.
        axis = checked_axis(name, axis, x.ndim, zero_d_as_one=True)
        y = xp.reshape(x, (1,)) if x.ndim == 0 else x
        pick = xp.argmax if name == "max" else xp.argmin
        # (the standard's argmax takes numbers only: bools are picked as 0 and 1)
        ranked = xp.astype(y, xp.uint8) if xp.isdtype(y.dtype, "bool") else y
        indices = pick(ranked, axis=axis, keepdims=True)
        values = xp.take_along_axis(y, indices, axis=axis)  # the gradient goes to the index
        if x.ndim == 0:
            values, indices = xp.reshape(values, ()), xp.reshape(indices, ())
        elif not keepdim:
            values, indices = xp.squeeze(values, axis=axis), xp.squeeze(indices, axis=axis)
        return values_indices[name](values, indices)

    method.__doc__ = (
        f"PyTorch's ``x.{name}(dim=None, keepdim=False)``: the {name}imum of all elements, or "
        f"with ``dim`` the named tuple ``(values, indices)`` (the gradient goes to the index); "
        f"``x.{name}(other)`` is element-wise."
    )
    return method


def _sum_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, dtype: Any, keepdims: bool) -> Any:
    g = expand_reduced(xp, g, x.shape, axis, keepdims)
    return g if dtype is None else cast(xp, g, x.dtype)


sum = op("sum(x, /, *, axis=None, dtype=None, keepdims=False)", vjp=_sum_grad, saves=(),
         methods={"sum": None, "nansum": _nansum}, aliases={"nansum": _nansum},
         torch_function=torch_reduction("sum", with_dtype=True),
         doc="Sum of the elements over ``axis`` (all axes by default).")


def _mean(
    xp: Any, x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False
) -> Any:
    if dtype is None:
        return xp.mean(x, axis=axis, keepdims=keepdims)
    _refuse_whole_mean("mean", xp, dtype)
    return xp.mean(xp.astype(x, dtype), axis=axis, keepdims=keepdims)


def _refuse_whole_mean(function: str, xp: Any, dtype: Any) -> None:
    # A mean in an integer dtype was a float anyway (the dtype asked for ignored) or, for
    # nanmean, truncated; PyTorch refuses both.
    if not xp.isdtype(dtype, ("real floating", "complex floating")):
        name = getattr(dtype, "__name__", None) or str(dtype).rsplit(".", 1)[-1]
        raise DtypeError(
            f"{function}(): dtype {name} is not a floating-point or complex dtype; a mean is "
            "a fraction (give dtype=plugrad.float64, or round the result)"
        )


@half_rule_in_float32
def _mean_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, dtype: Any, keepdims: bool) -> Any:
    g = expand_reduced(xp, g, x.shape, axis, keepdims) / count(x.shape, axis)
    return g if dtype is None else cast(xp, g, x.dtype)


mean = op("mean", _mean, vjp=_mean_grad, saves=(), promotion="float",
          methods={"mean": None, "nanmean": _nanmean}, aliases={"nanmean": _nanmean},
          torch_function=torch_reduction("mean", with_dtype=True, accumulates=False),
          doc="Arithmetic mean over ``axis`` (all axes by default); ``dtype`` (PyTorch's) "
              "casts the input first.")


@half_rule_in_float32  # NumPy's float16 cumulative products drift (17% at 2,000 factors)
def _prod_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, dtype: Any, keepdims: bool) -> Any:
    if dtype is not None:  # the product of x in dtype: differentiated there, cast back
        return cast(xp, _prod_grad(xp, g, ans, cast(xp, x, dtype), axis=axis, dtype=None,
                                   keepdims=keepdims), x.dtype)  # fmt: skip
    axes = normalize_axes(axis, x.ndim)
    g = expand_reduced(xp, g, x.shape, axis, keepdims)
    # NOTE: prod / x divides by zero. The product of the *other* elements is the product
    # of those before each one times that of those after it: no division, and as many
    # exact derivatives as the cumulative products have (second ones at any zeros).
    kept = [d for d in range(x.ndim) if d not in axes]
    order = (*kept, *axes)
    moved = x if order == tuple(range(x.ndim)) else xp.permute_dims(x, order)
    flat = moved
    if len(axes) != 1:  # the reduced axes as one, the last
        flat = xp.reshape(moved, (*moved.shape[: len(kept)], math.prod(moved.shape[len(kept) :])))
    before = xp.cumulative_prod(flat, axis=-1, include_initial=True)[..., :-1]
    reversed_after = xp.cumulative_prod(xp.flip(flat, axis=-1), axis=-1, include_initial=True)
    partial = before * xp.flip(reversed_after[..., :-1], axis=-1)
    if flat is not moved:
        partial = xp.reshape(partial, moved.shape)
    if moved is not x:
        partial = xp.permute_dims(partial, tuple(sorted(range(x.ndim), key=order.__getitem__)))
    return g * conj(xp, partial)


prod = op("prod(x, /, *, axis=None, dtype=None, keepdims=False)", vjp=_prod_grad, methods="prod",
          torch_function=torch_reduction("prod", with_dtype=True),
          doc="Product of the elements over ``axis``; the gradient is exact where elements are 0.")


def _degrees_of_freedom(x: Any, axis: Any, correction: Any) -> Any:
    # At least 0, as the kernels' (a correction past the count gives inf, not a negative);
    # (this module's `max` is the op).
    degrees = count(x.shape, axis) - correction
    return degrees if degrees > 0 else 0


@half_rule_in_float32
def _var_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, correction: Any, keepdims: bool):
    # Scaled while still reduced: one pass over x's shape fewer than scaling afterwards.
    scaled = g * 2 / _degrees_of_freedom(x, axis, correction)
    g = expand_reduced(xp, scaled, x.shape, axis, keepdims)
    return g * (x - xp.mean(x, axis=axis, keepdims=True))


def _past_the_count(xp: Any, spread: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """A variance or deviation whose correction is at least the count: PyTorch's sum of
    squares divided by 0, inf (NaN where the elements are all equal or one is NaN).

    The backends disagree there: JAX gives NaN, Dask divides by a negative count.
    """
    biased = spread(x, axis=axis, correction=0, keepdims=keepdims)
    return xp.where(biased > 0, xp.asarray(math.inf, dtype=biased.dtype), math.nan)


def _at_or_past_the_count(x: Any, axis: Any, correction: Any) -> bool:
    try:
        return bool(correction) and not _degrees_of_freedom(x, axis, correction)
    except IndexError:  # an axis out of range: the kernel's own error tells
        return False


def _complex_var(xp: Any, x: Any, /, **params: Any) -> Any:
    """The variance of a complex ``x`` (the mean of ``|x - mean|**2``) from its parts' own:
    the standard's ``var`` and ``std`` take real floats only (array-api-strict refuses)."""
    return xp.var(xp.real(x), **params) + xp.var(xp.imag(x), **params)


def _complex_std(xp: Any, x: Any, /, **params: Any) -> Any:
    return xp.sqrt(_complex_var(xp, x, **params))


def _std_from_var(xp: Any, x: Any, /, **params: Any) -> Any:
    return xp.sqrt(xp.var(x, **params))


@half_in_float32
def _var(xp: Any, x: Any, /, *, axis: Any = None, correction: Any = 0.0, keepdims: bool = False):
    spread = xp.var
    if xp.isdtype(x.dtype, "complex floating"):
        spread = functools.partial(_complex_var, xp)
    if _at_or_past_the_count(x, axis, correction):
        return _past_the_count(xp, spread, x, axis, keepdims)
    return spread(x, axis=axis, correction=correction, keepdims=keepdims)


@half_in_float32
def _std(xp: Any, x: Any, /, *, axis: Any = None, correction: Any = 0.0, keepdims: bool = False):
    spread = xp.std
    if xp.isdtype(x.dtype, "complex floating"):
        spread = functools.partial(_complex_std, xp)
    elif isinstance(correction, float) and not correction.is_integer():  # (PyTorch: std refuses)
        spread = functools.partial(_std_from_var, xp)
    if _at_or_past_the_count(x, axis, correction):
        return _past_the_count(xp, spread, x, axis, keepdims)
    return spread(x, axis=axis, correction=correction, keepdims=keepdims)


var = op("var", _var, vjp=_var_grad, promotion="float",
         methods={"var": _spread_method("var")}, torch_function=_spread_method("var"),
         aliases={"var_mean": _spread_and_mean("var")},
         doc="Variance over ``axis``; ``correction=1`` gives the unbiased (sample) variance.")


@half_rule_in_float32
def _std_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, correction: Any, keepdims: bool):
    g = expand_reduced(xp, g, x.shape, axis, keepdims)
    std = expand_reduced(xp, ans, x.shape, axis, keepdims)
    centered = x - xp.mean(x, axis=axis, keepdims=True)
    # NOTE: where the standard deviation is 0 the formula is 0/0; the gradient there is
    # 0, as in PyTorch (the subgradient of the minimum of a non-negative function).
    constant = std == 0
    scale = _degrees_of_freedom(x, axis, correction) * xp.where(constant, 1.0, std)
    return xp.where(constant, 0.0, g * centered / scale)


std = op("std", _std, vjp=_std_grad, promotion="float",
         methods={"std": _spread_method("std")}, torch_function=_spread_method("std"),
         aliases={"std_mean": _spread_and_mean("std")},
         doc="Standard deviation over ``axis``; ``correction=1`` for the sample one.")


def _extremum_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, keepdims: bool) -> Any:
    axes = normalize_axes(axis, x.ndim)
    g = expand_reduced(xp, g, x.shape, axis, keepdims)
    # NOTE: every tied extremum gets an equal share of the gradient (PyTorch's amax/amin),
    # not only the first one.
    # A NaN extremum is shared by the NaN elements (PyTorch's), which == does not find.
    ans = expand_reduced(xp, ans, x.shape, axis, keepdims)
    hit = xp.astype(xp.logical_or(x == ans, xp.logical_and(x != x, ans != ans)), g.dtype)
    return g * hit / xp.sum(hit, axis=axes, keepdims=True)


def _aminmax(xp: Any, x: Any, *, dim: Any = None, keepdim: bool = False) -> Any:
    """PyTorch's ``aminmax(x, *, dim=None, keepdim=False)``: the named tuple ``(min, max)``."""
    axis = reduction_axis("aminmax", x, dim, None, "refuse")
    return _return_types.aminmax(xp.min(x, axis=axis, keepdims=keepdim),
                                 xp.max(x, axis=axis, keepdims=keepdim))


_order_statistics = {"aminmax": _aminmax, "median": _median("median"),
                     "nanmedian": _median("nanmedian"), "kthvalue": _kthvalue}
def _torch_extremum(name: str) -> Any:
    def extremum(xp: Any, x: Any, dim: Any = (), keepdim: bool = False) -> Any:
        # PyTorch's amax/amin: dim=() (the default) reduces every axis.
        axis = reduction_axis(f"a{name}", x, dim, None)
        return getattr(xp, name)(x, axis=axis, keepdims=keepdim)

    extremum.__doc__ = f"PyTorch's ``a{name}(x, dim=(), keepdim=False)``: all axes by default."
    return extremum


max = op("max(x, /, *, axis=None, keepdims=False)", vjp=_extremum_grad,
         methods={"amax": None, "max": _extremum_method("max"), **_order_statistics},
         aliases={"amax": _torch_extremum("max"), **_order_statistics},
         torch_function=_extremum_method("max"), real_only=True,
         doc="Maximum over ``axis`` (all axes by default); tied maxima (NaNs) share the gradient.")

min = op("min(x, /, *, axis=None, keepdims=False)", vjp=_extremum_grad,
         methods={"amin": None, "min": _extremum_method("min")},
         aliases={"amin": _torch_extremum("min")}, torch_function=_extremum_method("min"),
         real_only=True,
         doc="Minimum over ``axis`` (all axes by default); tied minima (NaNs) share the gradient.")


def _cumulative_axis(x: Any, axis: int | None) -> int:
    return 0 if axis is None else axis % x.ndim


def _cumulative(name: str) -> Any:
    # NOTE: the standard leaves a 0-d x open (NumPy gives shape (1,)); PyTorch gives x's own
    # 0-d shape (a 0-d tensor has dim 0 and -1), and so does plugrad, on every backend.
    def kernel(
        xp: Any, x: Any, /, *, axis: Any = None, dtype: Any = None,
        include_initial: bool = False,
    ) -> Any:  # fmt: skip
        function = getattr(xp, name)
        if x.ndim != 0:
            return function(x, axis=axis, dtype=dtype, include_initial=include_initial)
        if axis is not None:
            checked_axis(name, axis, 0, zero_d_as_one=True)
        if include_initial:
            raise ShapeError(
                f"{name}(): include_initial=True prepends along an axis, and a 0-d tensor has "
                f"none; make it 1-d first (x.reshape(1))"
            )
        return xp.reshape(function(xp.reshape(x, (1,)), axis=0, dtype=dtype), ())

    kernel.__name__ = kernel.__qualname__ = f"_{name}"
    return half_in_float32(kernel)


# float16 sums (its forward's too) in float32, rounded once: the gradient of cumsum of 20,000
# values stopped at 2048.
@half_rule_in_float32
def _cumulative_sum_grad(
    xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, dtype: Any, include_initial: bool
) -> Any:
    if x.ndim == 0:  # the identity (see _cumulative)
        return g if dtype is None else cast(xp, g, x.dtype)
    axis = _cumulative_axis(x, axis)
    grad = reverse_cumulative_sum(xp, g, axis)
    if include_initial:
        # out[k] = sum(x[:k]): x[i] reaches out[i + 1:], one position later.
        grad = grad[axis_slice(x.ndim, axis, 1, None)]
    return grad if dtype is None else cast(xp, grad, x.dtype)


_running_reductions = {"cummax": _cumulative_extremum("cummax"),
                       "cummin": _cumulative_extremum("cummin")}
cumulative_sum = op("cumulative_sum", _cumulative("cumulative_sum"),
                    vjp=_cumulative_sum_grad, saves=(),
                    methods={"cumulative_sum": None, "cumsum": None, **_running_reductions},
                    inplace=("cumsum",),
                    aliases={"cumsum": torch_cumulative("cumulative_sum"), **_running_reductions},
                    doc="Cumulative sum along ``axis``; ``include_initial`` prepends a 0.")


@half_rule_in_float32  # as its forward (2 % off over 2,000 values in float16)
def _cumulative_prod_grad(
    xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, dtype: Any, include_initial: bool
) -> Any:
    if dtype is not None:  # the products of x in dtype: differentiated there, cast back
        return cast(xp, _cumulative_prod_grad(xp, g, ans, cast(xp, x, dtype), axis=axis,
                                              dtype=None, include_initial=include_initial),
                    x.dtype)  # fmt: skip
    if x.ndim == 0:  # the identity (see _cumulative)
        return g
    wider = _float64_for_float32(xp, x)
    if wider is not None:  # as the forward (and PyTorch on the CPU): float32 drifts
        return cast(xp, _cumulative_prod_grad(xp, cast(xp, g, wider), ans, cast(xp, x, wider),
                                              axis=axis, dtype=None,
                                              include_initial=include_initial),
                    x.dtype)  # fmt: skip
    axis = _cumulative_axis(x, axis)
    if include_initial:
        # out = [1, cumprod(x)]: the leading 1 depends on nothing.
        g = g[axis_slice(x.ndim, axis, 1, None)]
    # NOTE: d out[k] / d x[i] is the product of x[:k + 1] without x[i]: before[i] (the
    # product of x[:i]) times the product of x[i + 1:k + 1]. No division (the textbook
    # out[k] / x[i] divides by zeros) and no mask of where the zeros are (a mask is a
    # constant to the next derivative, which must see a zero move): multiplications and
    # sums only, so every derivative of the gradient is exact, with any number of zeros.
    x = conj(xp, x)
    n = x.shape[axis]
    ones = xp.ones_like(x[axis_slice(x.ndim, axis, 0, 1)])
    before = xp.cumulative_prod(
        xp.concat([ones, x[axis_slice(x.ndim, axis, 0, n - 1)]], axis=axis), axis=axis
    )
    return before * _reverse_weighted_sums(xp, g, x, axis)


def _float64_for_float32(xp: Any, x: Any) -> Any:
    """float64 for a float32 ``x`` where the backend has it (as ``in_float64``), else None:
    the doubling steps below multiply powers of ``x`` (a float32 gradient of 100,000
    factors near 1 was 2e-5 off)."""
    wide = getattr(xp, "float64", None) if x.dtype == xp.float32 else None
    if wide is None:
        return None
    device = device_of(x)
    known = getattr(device, "dtypes", None)  # a Tensor's device (a rule under create_graph)
    if known is not None:
        return wide if wide in known else None
    info = getattr(xp, "__array_namespace_info__", None)  # (JAX names float64, may lack it)
    if info is not None and "float64" not in info().dtypes(device=device, kind="real floating"):
        return None
    return wide


def _reverse_weighted_sums(xp: Any, g: Any, x: Any, axis: int) -> Any:
    """``s[i] = sum over k >= i of g[k] * prod(x[i + 1:k + 1])`` along ``axis``.

    The recurrence ``s[i] = g[i] + x[i + 1] * s[i + 1]`` solved in log2(n) doubling steps:
    after each, ``s[i] = b[i] + a[i] * s[i + step]`` (zero past the end).
    """
    n = x.shape[axis]

    def ahead(values: Any, step: int) -> Any:
        """``values[i + step]``, zero past the end."""
        zeros = xp.zeros_like(values[axis_slice(values.ndim, axis, 0, step)])
        return xp.concat([values[axis_slice(values.ndim, axis, step, None)], zeros], axis=axis)

    a, b, step = ahead(x, 1), g, 1
    while step < n:
        b = b + a * ahead(b, step)
        a = a * ahead(a, step)
        step *= 2
    return b


cumulative_prod = op("cumulative_prod", _cumulative("cumulative_prod"),
                     vjp=_cumulative_prod_grad, methods=("cumulative_prod", "cumprod"),
                     inplace=("cumprod",),
                     aliases={"cumprod": torch_cumulative("cumulative_prod")},
                     doc="Cumulative product along ``axis``; ``include_initial`` prepends a 1.")

# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
