"""Statistical functions of the Array API: reductions and cumulative reductions with gradients.

Conventions (also in each docstring): ``max``/``min`` split the gradient
evenly between tied extrema (PyTorch's ``amax``); ``prod`` and
``cumulative_prod`` are exact where inputs are zero (no division by zero);
``std`` has an infinite gradient where the standard deviation is 0. A
``dtype=`` argument computes in that dtype; the gradient comes back in the
input's dtype.
"""

from __future__ import annotations

from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op
from plugrad.plugins._rules import (
    axis_slice,
    cast,
    conj,
    count,
    expand_reduced,
    normalize_axes,
    reverse_cumulative_sum,
)


def _sum_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, dtype: Any, keepdims: bool) -> Any:
    g = expand_reduced(xp, g, x.shape, axis, keepdims)
    return g if dtype is None else cast(xp, g, x.dtype)


sum = op(
    "sum",
    lambda xp, x, /, *, axis=None, dtype=None, keepdims=False: xp.sum(
        x, axis=axis, dtype=dtype, keepdims=keepdims
    ),
    saves=(),
    doc="""Sum of the elements over ``axis`` (all axes by default).

    Parameters
    ----------
    x : Tensor
    axis : int or tuple of int, optional
    dtype : DType, optional
        Accumulate and return in this dtype; the gradient keeps ``x``'s dtype.
    keepdims : bool
        Keep reduced axes as size-1 dimensions.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> plugrad.sum(x)
    tensor(10.)
    >>> plugrad.sum(x, axis=0)
    tensor([4., 6.])
    >>> plugrad.sum(x, dtype=plugrad.float64)
    tensor(10., dtype=plugrad.float64)
    """,
).vjp(_sum_grad)

mean = op(
    "mean",
    lambda xp, x, /, *, axis=None, keepdims=False: xp.mean(x, axis=axis, keepdims=keepdims),
    saves=(),
    doc="""Arithmetic mean over ``axis`` (all axes by default).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.mean(plugrad.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=1, keepdims=True)
    tensor([[1.5000],
            [3.5000]])
    """,
).vjp(
    lambda xp, g, ans, x, *, axis, keepdims: (
        expand_reduced(xp, g, x.shape, axis, keepdims) / count(x.shape, axis)
    ),
)


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


prod = op(
    "prod",
    lambda xp, x, /, *, axis=None, dtype=None, keepdims=False: xp.prod(
        x, axis=axis, dtype=dtype, keepdims=keepdims
    ),
    saves=("x",),
    doc="""Product of the elements over ``axis`` (all axes by default).

    The gradient is exact where elements are zero: with one zero, it is the
    product of the others there and 0 elsewhere; with two or more, 0. (Second
    derivatives are exact unless a reduced slice holds two or more zeros.)

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([2.0, 0.0, 3.0], requires_grad=True)
    >>> plugrad.prod(x).backward()
    >>> x.grad
    tensor([0., 6., 0.])
    """,
).vjp(_prod_grad)


def _var_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, correction: Any, keepdims: bool):
    # Scaled while still reduced: one pass over x's shape fewer than scaling afterwards.
    g = expand_reduced(xp, g * 2 / (count(x.shape, axis) - correction), x.shape, axis, keepdims)
    return g * (x - xp.mean(x, axis=axis, keepdims=True))


var = op(
    "var",
    lambda xp, x, /, *, axis=None, correction=0.0, keepdims=False: xp.var(
        x, axis=axis, correction=correction, keepdims=keepdims
    ),
    saves=("x",),
    doc="""Variance over ``axis``; ``correction=1`` gives the unbiased (sample) variance.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.var(plugrad.tensor([1.0, 2.0, 3.0, 4.0]))
    tensor(1.2500)
    >>> plugrad.var(plugrad.tensor([1.0, 2.0, 3.0, 4.0]), correction=1)
    tensor(1.6667)
    """,
).vjp(_var_grad)


def _std_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, correction: Any, keepdims: bool):
    g = expand_reduced(xp, g, x.shape, axis, keepdims)
    std = expand_reduced(xp, ans, x.shape, axis, keepdims)
    centered = x - xp.mean(x, axis=axis, keepdims=True)
    # NOTE: infinite (nan) where the standard deviation is 0, as in PyTorch.
    return g * centered / ((count(x.shape, axis) - correction) * std)


std = op(
    "std",
    lambda xp, x, /, *, axis=None, correction=0.0, keepdims=False: xp.std(
        x, axis=axis, correction=correction, keepdims=keepdims
    ),
    saves=("x", "ans"),
    doc="""Standard deviation over ``axis``; ``correction=1`` for the sample standard deviation.

    The gradient is not finite where the standard deviation is 0.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.std(plugrad.tensor([1.0, 3.0]))
    tensor(1.)
    """,
).vjp(_std_grad)


def _extremum_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, keepdims: bool) -> Any:
    axes = normalize_axes(axis, x.ndim)
    g = expand_reduced(xp, g, x.shape, axis, keepdims)
    # NOTE: every tied extremum gets an equal share of the gradient (PyTorch's amax/amin),
    # not only the first one.
    hit = xp.astype(x == expand_reduced(xp, ans, x.shape, axis, keepdims), g.dtype)
    return g * hit / xp.sum(hit, axis=axes, keepdims=True)


max = op(
    "max",
    lambda xp, x, /, *, axis=None, keepdims=False: xp.max(x, axis=axis, keepdims=keepdims),
    saves=("x", "ans"),
    doc="""Maximum over ``axis`` (all axes by default).

    Tied maxima share the gradient equally.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 3.0, 3.0], requires_grad=True)
    >>> plugrad.max(x).backward()
    >>> x.grad
    tensor([0.0000, 0.5000, 0.5000])
    """,
).vjp(_extremum_grad)

min = op(
    "min",
    lambda xp, x, /, *, axis=None, keepdims=False: xp.min(x, axis=axis, keepdims=keepdims),
    saves=("x", "ans"),
    doc="""Minimum over ``axis`` (all axes by default).

    Tied minima share the gradient equally.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.min(plugrad.tensor([[1.0, -3.0], [0.5, 2.0]]), axis=0)
    tensor([ 0.5000, -3.0000])
    """,
).vjp(_extremum_grad)


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


cumulative_sum = op(
    "cumulative_sum",
    lambda xp, x, /, *, axis=None, dtype=None, include_initial=False: xp.cumulative_sum(
        x, axis=axis, dtype=dtype, include_initial=include_initial
    ),
    saves=(),
    doc="""Cumulative sum along ``axis`` (optional for 1-D); ``include_initial`` prepends a 0.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.cumulative_sum(plugrad.tensor([1.0, 2.0, 3.0]))
    tensor([1., 3., 6.])
    >>> plugrad.cumulative_sum(plugrad.tensor([1.0, 2.0, 3.0]), include_initial=True)
    tensor([0., 1., 3., 6.])
    """,
).vjp(_cumulative_sum_grad)


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


cumulative_prod = op(
    "cumulative_prod",
    lambda xp, x, /, *, axis=None, dtype=None, include_initial=False: xp.cumulative_prod(
        x, axis=axis, dtype=dtype, include_initial=include_initial
    ),
    saves=("x",),
    doc="""Cumulative product along ``axis`` (optional for 1-D); ``include_initial`` prepends a 1.

    The gradient is exact where elements are zero (its derivative, the second
    derivative, is not where the input has zeros).

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([2.0, 0.0, 3.0], requires_grad=True)
    >>> y = plugrad.cumulative_prod(x)
    >>> y
    tensor([2., 0., 0.], grad_fn=<CumulativeProdBackward>)
    >>> y.sum().backward()
    >>> x.grad
    tensor([1., 8., 0.])
    """,
).vjp(_cumulative_prod_grad)


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [sum, mean, prod, var, std, max, min, cumulative_sum, cumulative_prod]
