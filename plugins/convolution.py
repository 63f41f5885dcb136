"""2-D convolution and pooling over ``(N, C, H, W)`` arrays, with gradients of every order.

Everything is built from two moves on the last two axes: :func:`_windows`
gathers every window of the (padded) input into a new axis (im2col, a stack of
strided slices), and :func:`_fold` is its adjoint, adding such an axis back
into place (col2im). A convolution is then a matrix product with the
flattened kernel.

Each op's gradient is another op of this module, and the ops close under
differentiation, so double backward needs nothing more:

- ``conv2d`` is bilinear in input and weight; its gradients are
  ``conv2d_input_grad`` (the transposed convolution) and
  ``conv2d_weight_grad``, whose gradients are ``conv2d`` and each other;
- ``max_pool2d`` returns the values and the position of each maximum inside its
  window; its gradient scatters into those positions
  (``max_pool2d_scatter``), whose adjoint gathers from them
  (``max_pool2d_gather``);
- ``avg_pool2d`` and ``avg_pool2d_backward`` are each other's adjoint.

Padding for ``conv2d`` is ``(top, bottom, left, right)`` (an int or a pair
means the same on both sides), so PyTorch's ``padding="same"`` with an even
kernel is expressible. Pooling takes PyTorch's symmetric padding and
``ceil_mode``. Like every op of :mod:`plugrad.plugins.nn`, these live at
``plugrad.ops.<name>``; :mod:`plugrad.nn.functional` wraps them.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, collect_ops, op
from plugrad.plugins._index_plan import put, put_added
from plugrad.plugins._rules import conj, device_of, is_half

Pair = tuple[int, int]
Quad = tuple[int, int, int, int]


def _pair(value: int | tuple[int, ...]) -> Pair:
    if isinstance(value, int):
        return (value, value)
    first, second = value
    return (first, second)


def _quad(value: int | tuple[int, ...]) -> Quad:
    """``(top, bottom, left, right)`` from an int, an ``(h, w)`` pair or four ints."""
    if isinstance(value, int):
        return (value, value, value, value)
    if len(value) == 2:
        return (value[0], value[0], value[1], value[1])
    top, bottom, left, right = value
    return (top, bottom, left, right)


def _padded(xp: Any, x: Any, padding: Quad, fill: float) -> Any:
    top, bottom, left, right = padding
    if not (top or bottom or left or right):
        return x
    *lead, height, width = x.shape
    out = xp.full(
        (*lead, height + top + bottom, width + left + right),
        fill,
        dtype=x.dtype,
        device=device_of(x),
    )
    return put(out, (..., slice(top, top + height), slice(left, left + width)), x)


def _window_slices(
    kernel_size: Pair, stride: Pair, dilation: Pair, out_size: Pair
) -> list[tuple[Any, ...]]:
    """For each kernel offset (row-major), the key of the padded input it sees in every window."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel_size, stride, dilation, out_size
    return [
        (
            Ellipsis,
            slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
            slice(j * dw, j * dw + sw * (ow - 1) + 1, sw),
        )
        for i in range(kh)
        for j in range(kw)
    ]


def _out_size(padded: int, kernel: int, stride: int, dilation: int) -> int:
    return (padded - dilation * (kernel - 1) - 1) // stride + 1


def _windows(
    xp: Any, x: Any, kernel_size: Pair, stride: Pair, padding: Quad, dilation: Pair, fill: float
) -> Any:
    """``(..., H, W) -> (..., kh * kw, OH, OW)``: every window of the padded input (im2col)."""
    padded = _padded(xp, x, padding, fill)
    out_size = (
        _out_size(padded.shape[-2], kernel_size[0], stride[0], dilation[0]),
        _out_size(padded.shape[-1], kernel_size[1], stride[1], dilation[1]),
    )
    keys = _window_slices(kernel_size, stride, dilation, out_size)
    return xp.stack([padded[key] for key in keys], axis=-3)


def _fold(
    xp: Any,
    cols: Any,
    input_size: Pair,
    kernel_size: Pair,
    stride: Pair,
    padding: Quad,
    dilation: Pair,
) -> Any:
    """``(..., kh * kw, OH, OW) -> (..., H, W)``, adding overlaps (col2im, the adjoint)."""
    top, bottom, left, right = padding
    height, width = input_size
    *lead, _, oh, ow = cols.shape
    out = xp.zeros(
        (*lead, height + top + bottom, width + left + right),
        dtype=cols.dtype,
        device=device_of(cols),
    )
    for index, key in enumerate(_window_slices(kernel_size, stride, dilation, (oh, ow))):
        out = put_added(out, key, cols[..., index, :, :])
    if top or bottom or left or right:
        return out[..., top : top + height, left : left + width]
    return out


# Not functions of the standard: plugrad.ops.<name>, and xp.<name> in rules through plugrad's
# own kernel table.
nn_op = functools.partial(op, standard=False, namespace="nn")

# Rows are aligned by hand, one op per statement.
# fmt: off

# -- convolution --------------------------------------------------------------------------


def _conv2d(xp: Any, x: Any, weight: Any, /, *, stride: int | Pair = 1,
            padding: int | tuple[int, ...] = 0, dilation: int | Pair = 1, groups: int = 1) -> Any:
    n = x.shape[0]
    out_channels, group_channels, kh, kw = weight.shape
    cols = _windows(xp, x, (kh, kw), _pair(stride), _quad(padding), _pair(dilation), 0.0)
    oh, ow = cols.shape[-2:]
    cols = xp.reshape(cols, (n, groups, group_channels * kh * kw, oh * ow))
    kernels = xp.reshape(weight, (groups, out_channels // groups, group_channels * kh * kw))
    return xp.reshape(xp.matmul(kernels, cols), (n, out_channels, oh, ow))


def _conv2d_input_grad(xp: Any, grad: Any, weight: Any, /, *, input_size: Pair,
                       stride: int | Pair = 1, padding: int | tuple[int, ...] = 0,
                       dilation: int | Pair = 1, groups: int = 1) -> Any:
    n, out_channels, oh, ow = grad.shape
    _, group_channels, kh, kw = weight.shape
    grad = xp.reshape(grad, (n, groups, out_channels // groups, oh * ow))
    kernels = xp.reshape(weight, (groups, out_channels // groups, group_channels * kh * kw))
    cols = xp.matmul(xp.matrix_transpose(kernels), grad)
    cols = xp.reshape(cols, (n, groups * group_channels, kh * kw, oh, ow))
    return _fold(
        xp, cols, _pair(input_size), (kh, kw), _pair(stride), _quad(padding), _pair(dilation)
    )


def _conv2d_weight_grad(xp: Any, x: Any, grad: Any, /, *, kernel_size: Pair, stride: int | Pair = 1,
                        padding: int | tuple[int, ...] = 0, dilation: int | Pair = 1,
                        groups: int = 1) -> Any:
    n, channels = x.shape[:2]
    _, out_channels, oh, ow = grad.shape
    kh, kw = _pair(kernel_size)
    group_channels = channels // groups
    cols = _windows(xp, x, (kh, kw), _pair(stride), _quad(padding), _pair(dilation), 0.0)
    cols = xp.reshape(cols, (n, groups, group_channels * kh * kw, oh * ow))
    grad = xp.reshape(grad, (n, groups, out_channels // groups, oh * ow))
    per_sample = xp.matmul(grad, xp.matrix_transpose(cols))
    return xp.reshape(xp.sum(per_sample, axis=0), (out_channels, group_channels, kh, kw))


# -- NumPy kernels: the same computations as one BLAS product per group ----------------
#
# NumPy's matmul over a batch of strided (e.g. broadcast) operands takes a slow
# loop; tensordot copies the windows into one matrix and makes a single product.


def _numpy_windows(x: Any, kernel: Pair, stride: Pair, padding: Quad, dilation: Pair) -> Any:
    """``(N, C, H, W) -> (N, C, OH, OW, kh, kw)``: a strided view, nothing copied."""
    import numpy as np

    top, bottom, left, right = padding
    if top or bottom or left or right:
        x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    span = (dilation[0] * (kernel[0] - 1) + 1, dilation[1] * (kernel[1] - 1) + 1)
    view = np.lib.stride_tricks.sliding_window_view(x, span, axis=(2, 3))
    return view[:, :, :: stride[0], :: stride[1], :: dilation[0], :: dilation[1]]


def _conv2d_numpy(xp: Any, x: Any, weight: Any, /, *, stride: int | Pair = 1,
                  padding: int | tuple[int, ...] = 0, dilation: int | Pair = 1,
                  groups: int = 1) -> Any:
    import numpy as np

    out_channels, group_channels, kh, kw = weight.shape
    cols = _numpy_windows(x, (kh, kw), _pair(stride), _quad(padding), _pair(dilation))
    per_group = out_channels // groups
    outs = [
        np.tensordot(
            weight[g * per_group : (g + 1) * per_group],
            cols[:, g * group_channels : (g + 1) * group_channels],
            axes=([1, 2, 3], [1, 4, 5]),
        )
        for g in range(groups)
    ]
    out = outs[0] if groups == 1 else np.concatenate(outs, axis=0)
    return np.ascontiguousarray(np.moveaxis(out, 0, 1))


def _conv2d_input_grad_numpy(xp: Any, grad: Any, weight: Any, /, *, input_size: Pair,
                             stride: int | Pair = 1, padding: int | tuple[int, ...] = 0,
                             dilation: int | Pair = 1, groups: int = 1) -> Any:
    import numpy as np

    n, out_channels, oh, ow = grad.shape
    kh, kw = weight.shape[-2:]
    per_group = out_channels // groups
    # (C, kh, kw, N, OH, OW) per group, stacked along C.
    parts = [
        np.tensordot(
            weight[g * per_group : (g + 1) * per_group],
            grad[:, g * per_group : (g + 1) * per_group],
            axes=([0], [1]),
        )
        for g in range(groups)
    ]
    cols = parts[0] if groups == 1 else np.concatenate(parts, axis=0)
    top, bottom, left, right = _quad(padding)
    height, width = _pair(input_size)
    out = np.zeros((n, cols.shape[0], height + top + bottom, width + left + right), grad.dtype)
    keys = _window_slices((kh, kw), _pair(stride), _pair(dilation), (oh, ow))
    for index, key in enumerate(keys):
        out[key] += np.moveaxis(cols[:, index // kw, index % kw], 0, 1)
    return np.ascontiguousarray(out[..., top : top + height, left : left + width])


def _conv2d_weight_grad_numpy(xp: Any, x: Any, grad: Any, /, *, kernel_size: Pair,
                              stride: int | Pair = 1, padding: int | tuple[int, ...] = 0,
                              dilation: int | Pair = 1, groups: int = 1) -> Any:
    import numpy as np

    kernel = _pair(kernel_size)
    cols = _numpy_windows(x, kernel, _pair(stride), _quad(padding), _pair(dilation))
    out_channels = grad.shape[1]
    per_group, group_channels = out_channels // groups, x.shape[1] // groups
    parts = [
        np.tensordot(
            grad[:, g * per_group : (g + 1) * per_group],
            cols[:, g * group_channels : (g + 1) * group_channels],
            axes=([0, 2, 3], [0, 2, 3]),
        )
        for g in range(groups)
    ]
    return parts[0] if groups == 1 else np.concatenate(parts, axis=0)


# Each rule of these bilinear ops conjugates the other operand (complex inputs get PyTorch's
# conjugate Wirtinger gradients; conj returns a real array as it is).
def _conv2d_grad_x(xp: Any, g: Any, ans: Any, x: Any, weight: Any, **params: Any) -> Any:
    return xp.conv2d_input_grad(g, conj(xp, weight), input_size=tuple(x.shape[-2:]), **params)


def _conv2d_grad_weight(xp: Any, g: Any, ans: Any, x: Any, weight: Any, **params: Any) -> Any:
    return xp.conv2d_weight_grad(conj(xp, x), g, kernel_size=tuple(weight.shape[-2:]), **params)


conv2d = nn_op("conv2d", _conv2d, kernels={"numpy": _conv2d_numpy}, saves=("x", "weight"),
               vjp=(_conv2d_grad_x, _conv2d_grad_weight),
               doc="2-D cross-correlation of ``x`` (N, C, H, W) with ``weight`` (O, C/g, kh, kw).")


def _conv2d_input_grad_grad_output(xp: Any, g: Any, ans: Any, grad: Any, weight: Any, *,
                                   input_size: Pair, **params: Any) -> Any:
    return xp.conv2d(g, conj(xp, weight), **params)


def _conv2d_input_grad_grad_weight(xp: Any, g: Any, ans: Any, grad: Any, weight: Any, *,
                                   input_size: Pair, **params: Any) -> Any:
    return xp.conv2d_weight_grad(g, conj(xp, grad), kernel_size=tuple(weight.shape[-2:]), **params)


conv2d_input_grad = nn_op(
    "conv2d_input_grad", _conv2d_input_grad, kernels={"numpy": _conv2d_input_grad_numpy},
    vjp=(_conv2d_input_grad_grad_output, _conv2d_input_grad_grad_weight), saves=("grad", "weight"),
    doc="The gradient of :func:`conv2d` for its input: the transposed convolution.")


def _conv2d_weight_grad_grad_x(xp: Any, g: Any, ans: Any, x: Any, grad: Any, *, kernel_size: Pair,
                               **params: Any) -> Any:
    return xp.conv2d_input_grad(conj(xp, grad), g, input_size=tuple(x.shape[-2:]), **params)


def _conv2d_weight_grad_grad_output(xp: Any, g: Any, ans: Any, x: Any, grad: Any, *,
                                    kernel_size: Pair, **params: Any) -> Any:
    return xp.conv2d(conj(xp, x), g, **params)


conv2d_weight_grad = nn_op(
    "conv2d_weight_grad", _conv2d_weight_grad, kernels={"numpy": _conv2d_weight_grad_numpy},
    vjp=(_conv2d_weight_grad_grad_x, _conv2d_weight_grad_grad_output), saves=("x", "grad"),
    doc="The gradient of :func:`conv2d` for its weight (``kernel_size`` wide).")

# -- pooling ------------------------------------------------------------------------------


def _pool_padding(input_size: Pair, kernel_size: Pair, stride: Pair, padding: Pair, dilation: Pair,
                  ceil_mode: bool) -> Quad:
    """PyTorch's pooling geometry as explicit padding: ``ceil_mode`` pads the bottom and right.

    In ceil mode the last window may hang over the padded input, but it must
    start inside the input or its left padding, as in PyTorch.
    """
    extra = []
    for size, kernel, step, pad, dil in zip(input_size, kernel_size, stride, padding, dilation):
        span = dil * (kernel - 1) + 1
        if ceil_mode:
            out = -(-(size + 2 * pad - span) // step) + 1
            if (out - 1) * step >= size + pad:
                out -= 1
        else:
            out = (size + 2 * pad - span) // step + 1
        extra.append(max(0, (out - 1) * step + span - (size + 2 * pad)))
    (ph, pw), (eh, ew) = padding, extra
    return (ph, ph + eh, pw, pw + ew)


def _pool_args(input_size: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
               ceil_mode: bool) -> tuple[Pair, Pair, Quad, Pair]:
    kernel = _pair(kernel_size)
    step = kernel if stride is None else _pair(stride)
    dil = _pair(dilation)
    quad = _pool_padding(_pair(tuple(input_size)), kernel, step, _pair(padding), dil, ceil_mode)
    return kernel, step, quad, dil


def _max_pool2d(xp: Any, x: Any, /, *, kernel_size: int | Pair, stride: int | Pair | None = None,
                padding: int | Pair = 0, dilation: int | Pair = 1,
                ceil_mode: bool = False) -> tuple[Any, Any]:
    if x.dtype == xp.bool:  # as 0 and 1 (PyTorch's argmax refuses bool)
        values, offsets = _max_pool2d(
            xp, xp.astype(x, xp.int8), kernel_size=kernel_size, stride=stride, padding=padding,
            dilation=dilation, ceil_mode=ceil_mode,
        )  # fmt: skip
        return xp.astype(values, xp.bool), offsets
    kernel, step, quad, dil = _pool_args(
        x.shape[-2:], kernel_size, stride, padding, dilation, ceil_mode
    )
    # Padding is the dtype's lowest value: -inf does not fit in an integer (PyTorch's full()
    # refuses it, NumPy's cast warns or, into int16, gives 0).
    lowest = xp.iinfo(x.dtype).min if xp.isdtype(x.dtype, "integral") else -math.inf
    cols = _windows(xp, x, kernel, step, quad, dil, lowest)
    values, offsets = xp.max(cols, axis=-3), xp.argmax(cols, axis=-3)
    if any(quad):
        # Where a window's input cells all hold the lowest value, argmax may name a padding
        # cell before them; PyTorch names the window's first input cell (and its gradient
        # goes there).
        inside = _windows(xp, xp.ones(x.shape[-2:], device=device_of(x)), kernel, step, quad,
                          dil, 0.0)
        offsets = xp.where(values == lowest, xp.argmax(inside, axis=-3), offsets)
    return values, offsets


def _max_pool2d_scatter(xp: Any, grad: Any, indices: Any, /, *, input_size: Pair,
                        kernel_size: int | Pair, stride: int | Pair | None = None,
                        padding: int | Pair = 0, dilation: int | Pair = 1,
                        ceil_mode: bool = False) -> Any:
    kernel, step, quad, dil = _pool_args(
        input_size, kernel_size, stride, padding, dilation, ceil_mode
    )
    offsets = kernel[0] * kernel[1]
    labels = xp.reshape(xp.arange(offsets, device=device_of(indices)), (offsets, 1, 1))
    hit = xp.expand_dims(indices, axis=-3) == labels
    cols = xp.where(hit, xp.expand_dims(grad, axis=-3), 0.0)
    return _fold(xp, cols, _pair(tuple(input_size)), kernel, step, quad, dil)


def _max_pool2d_gather(xp: Any, x: Any, indices: Any, /, *, kernel_size: int | Pair,
                       stride: int | Pair | None = None, padding: int | Pair = 0,
                       dilation: int | Pair = 1, ceil_mode: bool = False) -> Any:
    kernel, step, quad, dil = _pool_args(
        x.shape[-2:], kernel_size, stride, padding, dilation, ceil_mode
    )
    cols = _windows(xp, x, kernel, step, quad, dil, 0.0)
    picked = xp.take_along_axis(cols, xp.expand_dims(indices, axis=-3), axis=-3)
    return xp.squeeze(picked, axis=-3)


def _max_pool2d_grad(xp: Any, g: Any, ans: Any, x: Any, **params: Any) -> Any:
    return xp.max_pool2d_scatter(g[0], ans[1], input_size=tuple(x.shape[-2:]), **params)


max_pool2d = nn_op("max_pool2d", _max_pool2d, vjp=_max_pool2d_grad, saves=("ans",),
                   output_names=("values", "indices"), nondifferentiable_outputs=(1,),
                   real_only=True,
                   doc="Maximum of each window of the last two axes, and its position in it.")


def _max_pool2d_scatter_grad(xp: Any, g: Any, ans: Any, grad: Any, indices: Any, *,
                             input_size: Pair, **params: Any) -> Any:
    return xp.max_pool2d_gather(g, indices, **params)


max_pool2d_scatter = nn_op("max_pool2d_scatter", _max_pool2d_scatter, saves=("indices",),
                           vjp=(_max_pool2d_scatter_grad, None),
                           doc="The gradient of :func:`max_pool2d`: ``grad`` sent to each maximum.")


def _max_pool2d_gather_grad(xp: Any, g: Any, ans: Any, x: Any, indices: Any, **params: Any) -> Any:
    return xp.max_pool2d_scatter(g, indices, input_size=tuple(x.shape[-2:]), **params)


max_pool2d_gather = nn_op("max_pool2d_gather", _max_pool2d_gather, saves=("indices",),
                          vjp=(_max_pool2d_gather_grad, None),
                          doc="The element at a given position of each window (scatter's adjoint).")


def _avg_divisor(xp: Any, like: Any, input_size: Pair, kernel: Pair, step: Pair, padding: Pair,
                 quad: Quad, count_include_pad: bool, divisor_override: int | None) -> Any:
    """How many elements each window averages, ``(OH, OW)`` (or the override).

    In ``float32`` for ``float16`` ``like``: a count above 65504 is inf in float16.
    """
    if divisor_override is not None:
        return float(divisor_override)
    height, width = input_size
    ph, pw = padding
    dtype = xp.float32 if is_half(xp, like.dtype) else like.dtype
    if count_include_pad:
        # The declared padding counts; what ceil_mode adds beyond it does not.
        counted = xp.ones((height + 2 * ph, width + 2 * pw), dtype=dtype, device=device_of(like))
        extra = (0, quad[1] - ph, 0, quad[3] - pw)
    else:
        counted = xp.ones((height, width), dtype=dtype, device=device_of(like))
        extra = quad
    return xp.sum(_windows(xp, counted, kernel, step, extra, (1, 1), 0.0), axis=-3)


def _avg_pool2d(xp: Any, x: Any, /, *, kernel_size: int | Pair, stride: int | Pair | None = None,
                padding: int | Pair = 0, ceil_mode: bool = False, count_include_pad: bool = True,
                divisor_override: int | None = None) -> Any:
    size = _pair(tuple(x.shape[-2:]))
    kernel, step, quad, _ = _pool_args(size, kernel_size, stride, padding, 1, ceil_mode)
    cols = _windows(xp, x, kernel, step, quad, (1, 1), 0.0)
    divisor = _avg_divisor(
        xp, x, size, kernel, step, _pair(padding), quad, count_include_pad, divisor_override
    )
    if is_half(xp, x.dtype):  # summed in float32, as PyTorch does
        return xp.astype(xp.sum(cols, axis=-3, dtype=xp.float32) / divisor, x.dtype)
    return xp.sum(cols, axis=-3) / divisor


def _avg_pool2d_backward(xp: Any, grad: Any, /, *, input_size: Pair, kernel_size: int | Pair,
                         stride: int | Pair | None = None, padding: int | Pair = 0,
                         ceil_mode: bool = False, count_include_pad: bool = True,
                         divisor_override: int | None = None) -> Any:
    size = _pair(tuple(input_size))
    kernel, step, quad, _ = _pool_args(size, kernel_size, stride, padding, 1, ceil_mode)
    divisor = _avg_divisor(
        xp, grad, size, kernel, step, _pair(padding), quad, count_include_pad, divisor_override
    )
    if is_half(xp, grad.dtype):  # divided in float32 (the divisor's), rounded once
        share = xp.astype(xp.astype(grad, xp.float32) / divisor, grad.dtype)
    else:
        share = grad / divisor
    share = xp.expand_dims(share, axis=-3)
    cols = xp.broadcast_to(share, (*share.shape[:-3], kernel[0] * kernel[1], *share.shape[-2:]))
    return _fold(xp, cols, size, kernel, step, quad, (1, 1))


def _avg_pool2d_grad(xp: Any, g: Any, ans: Any, x: Any, **params: Any) -> Any:
    return xp.avg_pool2d_backward(g, input_size=tuple(x.shape[-2:]), **params)


avg_pool2d = nn_op("avg_pool2d", _avg_pool2d, vjp=_avg_pool2d_grad, saves=(),
                   doc="Mean over each window of the last two axes, with PyTorch's padding rules.")

avg_pool2d_backward = nn_op(
    "avg_pool2d_backward", _avg_pool2d_backward, saves=(),
    vjp=lambda xp, g, ans, grad, *, input_size, **params: xp.avg_pool2d(g, **params),
    doc="The gradient of :func:`avg_pool2d`: each window's gradient shared among its elements.")


# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
