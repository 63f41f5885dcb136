"""The op table of plugins/convolution.py (OpTests runs every check on each row).

The references follow the definitions window by window, in loops, independently
of the im2col used by the kernels. Pooling geometry follows PyTorch's formulas.
"""

from __future__ import annotations

import numpy as np

import plugrad
from plugrad.testing import OpCase, OpTests

ops = plugrad.ops


def _pairs(stride, dilation):
    return tuple(stride), tuple(dilation)


def _out(size, kernel, stride, dilation):
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def _window(i, j, kernel, stride, dilation):
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    return (
        slice(None),
        slice(None),
        slice(i * sh, i * sh + dh * (kh - 1) + 1, dh),
        slice(j * sw, j * sw + dw * (kw - 1) + 1, dw),
    )


def np_conv2d(x, w, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1):
    top, bottom, left, right = padding
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    o, cg, kh, kw = w.shape
    oh = _out(padded.shape[2], kh, stride[0], dilation[0])
    ow = _out(padded.shape[3], kw, stride[1], dilation[1])
    og = o // groups
    out = np.zeros((x.shape[0], o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = padded[_window(i, j, (kh, kw), stride, dilation)]
            for g in range(groups):
                out[:, g * og : (g + 1) * og, i, j] = np.einsum(
                    "nckl,ockl->no", patch[:, g * cg : (g + 1) * cg], w[g * og : (g + 1) * og]
                )
    return out.astype(x.dtype)


def np_conv2d_grads(
    x_shape, grad, w, x=None, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1
):
    """The input gradient and (given ``x``) the weight gradient, one window at a time."""
    top, bottom, left, right = padding
    n, c, h, wd = x_shape
    padded_x = None if x is None else np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    dx = np.zeros((n, c, h + top + bottom, wd + left + right))
    dw = np.zeros(w.shape)
    o, cg, kh, kw = w.shape
    og = o // groups
    for i in range(grad.shape[2]):
        for j in range(grad.shape[3]):
            key = _window(i, j, (kh, kw), stride, dilation)
            for g in range(groups):
                outs, ins = slice(g * og, (g + 1) * og), slice(g * cg, (g + 1) * cg)
                contribution = np.einsum("no,ockl->nckl", grad[:, outs, i, j], w[outs])
                view = dx[key]
                view[:, ins] += contribution
                if padded_x is not None:
                    dw[outs] += np.einsum(
                        "no,nckl->ockl", grad[:, outs, i, j], padded_x[key][:, ins]
                    )
    return dx[:, :, top : top + h, left : left + wd], dw


def pool_geometry(size, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's output size, and the padding after the input that it implies.

    Counted window by window, where the plugin has a closed form: a window starts every
    ``stride`` elements of the padded input and must end inside it, except that
    ``ceil_mode`` keeps one more that overhangs by less than a stride if it starts
    before the right padding.
    """
    span = dilation * (kernel - 1) + 1
    padded = size + 2 * padding
    starts = [
        start
        for start in range(0, padded, stride)
        if start + span <= padded
        or (ceil_mode and start + span < padded + stride and start < size + padding)
    ]
    return len(starts), max(padding, starts[-1] + span - size - padding)


def np_max_pool2d(x, kernel, stride, padding=(0, 0), dilation=(1, 1), ceil_mode=False):
    oh, bottom = pool_geometry(x.shape[2], kernel[0], stride[0], padding[0], dilation[0], ceil_mode)
    ow, right = pool_geometry(x.shape[3], kernel[1], stride[1], padding[1], dilation[1], ceil_mode)
    padded = np.pad(
        x, ((0, 0), (0, 0), (padding[0], bottom), (padding[1], right)), constant_values=-np.inf
    )
    values = np.zeros((*x.shape[:2], oh, ow), dtype=x.dtype)
    indices = np.zeros((*x.shape[:2], oh, ow), dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            window = padded[_window(i, j, kernel, stride, dilation)].reshape(*x.shape[:2], -1)
            values[..., i, j] = window.max(axis=-1)
            indices[..., i, j] = window.argmax(axis=-1)
    return values, indices


def np_max_pool2d_scatter(
    grad, indices, size, kernel, stride, padding=(0, 0), dilation=(1, 1), ceil_mode=False
):
    _, bottom = pool_geometry(size[0], kernel[0], stride[0], padding[0], dilation[0], ceil_mode)
    _, right = pool_geometry(size[1], kernel[1], stride[1], padding[1], dilation[1], ceil_mode)
    out = np.zeros((*grad.shape[:2], size[0] + padding[0] + bottom, size[1] + padding[1] + right))
    for n in range(grad.shape[0]):
        for c in range(grad.shape[1]):
            for i in range(grad.shape[2]):
                for j in range(grad.shape[3]):
                    di, dj = divmod(int(indices[n, c, i, j]), kernel[1])
                    row = i * stride[0] + di * dilation[0]
                    col = j * stride[1] + dj * dilation[1]
                    out[n, c, row, col] += grad[n, c, i, j]
    return out[:, :, padding[0] : padding[0] + size[0], padding[1] : padding[1] + size[1]].astype(
        grad.dtype
    )


def np_max_pool2d_gather(x, indices, kernel, stride, padding=(0, 0), dilation=(1, 1)):
    padded = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    out = np.zeros(indices.shape, dtype=x.dtype)
    for i in range(indices.shape[2]):
        for j in range(indices.shape[3]):
            window = padded[_window(i, j, kernel, stride, dilation)].reshape(*x.shape[:2], -1)
            out[..., i, j] = np.take_along_axis(window, indices[..., i, j, None], axis=-1)[..., 0]
    return out


def avg_divisors(size, kernel, stride, padding, ceil_mode, count_include_pad):
    """PyTorch's divisor of each window, from its start and end rows and columns."""
    sizes = [
        pool_geometry(size[a], kernel[a], stride[a], padding[a], 1, ceil_mode)[0] for a in (0, 1)
    ]
    divisors = np.zeros(sizes)
    for i in range(sizes[0]):
        for j in range(sizes[1]):
            spans = []
            for a, index in ((0, i), (1, j)):
                start = index * stride[a] - padding[a]
                end = min(start + kernel[a], size[a] + padding[a])
                spans.append((start, end))
            counted = np.prod([end - start for start, end in spans])
            clipped = np.prod(
                [min(end, size[a]) - max(start, 0) for a, (start, end) in enumerate(spans)]
            )
            divisors[i, j] = counted if count_include_pad else clipped
    return divisors


def np_avg_pool2d(
    x, kernel, stride, padding=(0, 0), ceil_mode=False, count_include_pad=True, divisor=None
):
    oh, bottom = pool_geometry(x.shape[2], kernel[0], stride[0], padding[0], 1, ceil_mode)
    ow, right = pool_geometry(x.shape[3], kernel[1], stride[1], padding[1], 1, ceil_mode)
    padded = np.pad(x, ((0, 0), (0, 0), (padding[0], bottom), (padding[1], right)))
    sums = np.zeros((*x.shape[:2], oh, ow))
    for i in range(oh):
        for j in range(ow):
            sums[..., i, j] = padded[_window(i, j, kernel, stride, (1, 1))].sum(axis=(-2, -1))
    if divisor is None:
        divisor = avg_divisors(x.shape[2:], kernel, stride, padding, ceil_mode, count_include_pad)
    return (sums / divisor).astype(x.dtype)


def np_avg_pool2d_backward(
    grad,
    size,
    kernel,
    stride,
    padding=(0, 0),
    ceil_mode=False,
    count_include_pad=True,
    divisor=None,
):
    _, bottom = pool_geometry(size[0], kernel[0], stride[0], padding[0], 1, ceil_mode)
    _, right = pool_geometry(size[1], kernel[1], stride[1], padding[1], 1, ceil_mode)
    if divisor is None:
        divisor = avg_divisors(size, kernel, stride, padding, ceil_mode, count_include_pad)
    share = grad / divisor
    out = np.zeros((*grad.shape[:2], size[0] + padding[0] + bottom, size[1] + padding[1] + right))
    for i in range(grad.shape[2]):
        for j in range(grad.shape[3]):
            view = out[_window(i, j, kernel, stride, (1, 1))]
            view += share[..., i, j, None, None]
    return out[:, :, padding[0] : padding[0] + size[0], padding[1] : padding[1] + size[1]].astype(
        grad.dtype
    )


def offsets(shape, kernel_positions, seed):
    return np.random.default_rng(seed).integers(0, kernel_positions, size=shape)


SCATTER_INDICES = offsets((2, 2, 3, 3), 4, 0)  # 2x2 windows, stride 1, input 4x4
GATHER_INDICES = offsets((1, 2, 3, 2), 6, 1)  # 2x3 windows, stride (2, 2), padding (1, 1), 5x4
CONV = {"stride": (2, 1), "padding": (1, 0, 2, 1), "dilation": (1, 2), "groups": 2}
MAX_POOL = {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1), "dilation": (1, 2)}


def ceil_pool(x_shape, kernel, stride, padding):
    return {"kernel_size": kernel, "stride": stride, "padding": padding, "ceil_mode": True}


CASES = [
    OpCase(
        "conv2d",
        "conv2d",
        lambda x, w: ops.conv2d(x, w),
        np_conv2d,
        ((2, 2, 4, 3), (2, 2, 3, 2)),
    ),
    OpCase(
        "conv2d",
        "conv2d-stride-padding-dilation-groups",
        lambda x, w: ops.conv2d(x, w, **CONV),
        lambda x, w: np_conv2d(x, w, **CONV),
        ((1, 4, 5, 4), (4, 2, 3, 2)),
    ),
    OpCase(
        "conv2d",
        "conv2d-1x1-depthwise",
        lambda x, w: ops.conv2d(x, w, padding=1, groups=3),
        lambda x, w: np_conv2d(x, w, padding=(1, 1, 1, 1), groups=3),
        ((2, 3, 2, 3), (3, 1, 1, 1)),
    ),
    OpCase(
        "conv2d_input_grad",
        "conv2d_input_grad",
        lambda g, w: ops.conv2d_input_grad(g, w, input_size=(6, 5), stride=2, padding=1),
        lambda g, w: np_conv2d_grads((1, 2, 6, 5), g, w, stride=(2, 2), padding=(1, 1, 1, 1))[
            0
        ].astype(g.dtype),
        ((1, 2, 3, 3), (2, 2, 3, 3)),
    ),
    OpCase(
        "conv2d_input_grad",
        "conv2d_input_grad-groups",
        lambda g, w: ops.conv2d_input_grad(g, w, input_size=(5, 4), **CONV),
        lambda g, w: np_conv2d_grads((1, 4, 5, 4), g, w, **CONV)[0].astype(g.dtype),
        ((1, 4, 2, 5), (4, 2, 3, 2)),
    ),
    OpCase(
        "conv2d_weight_grad",
        "conv2d_weight_grad",
        lambda x, g: ops.conv2d_weight_grad(x, g, kernel_size=(3, 3), stride=2, padding=1),
        lambda x, g: np_conv2d_grads(
            x.shape, g, np.zeros((2, 2, 3, 3)), x, stride=(2, 2), padding=(1, 1, 1, 1)
        )[1].astype(x.dtype),
        ((1, 2, 6, 5), (1, 2, 3, 3)),
    ),
    OpCase(
        "conv2d_weight_grad",
        "conv2d_weight_grad-groups",
        lambda x, g: ops.conv2d_weight_grad(x, g, kernel_size=(3, 2), **CONV),
        lambda x, g: np_conv2d_grads(x.shape, g, np.zeros((4, 2, 3, 2)), x, **CONV)[1].astype(
            x.dtype
        ),
        ((1, 4, 5, 4), (1, 4, 2, 5)),
    ),
    OpCase(
        "max_pool2d",
        "max_pool2d",
        lambda x: ops.max_pool2d(x, kernel_size=2).values,
        lambda x: np_max_pool2d(x, (2, 2), (2, 2))[0],
        ((2, 1, 4, 5),),
    ),
    OpCase(
        "max_pool2d",
        "max_pool2d-padding-dilation",
        lambda x: ops.max_pool2d(x, **MAX_POOL).values,
        lambda x: np_max_pool2d(x, (3, 2), (2, 1), (1, 1), (1, 2))[0],
        ((1, 2, 5, 4),),
    ),
    OpCase(
        "max_pool2d",
        "max_pool2d-ceil-overlapping",
        lambda x: ops.max_pool2d(x, kernel_size=3, stride=2, padding=1, ceil_mode=True).values,
        lambda x: np_max_pool2d(x, (3, 3), (2, 2), (1, 1), ceil_mode=True)[0],
        ((1, 1, 6, 5),),
    ),
    OpCase(
        "max_pool2d_scatter",
        "max_pool2d_scatter-overlapping",
        lambda g: ops.max_pool2d_scatter(
            g, plugrad.asarray(SCATTER_INDICES), input_size=(4, 4), kernel_size=2, stride=1
        ),
        lambda g: np_max_pool2d_scatter(g, SCATTER_INDICES, (4, 4), (2, 2), (1, 1)),
        ((2, 2, 3, 3),),
    ),
    OpCase(
        "max_pool2d_gather",
        "max_pool2d_gather",
        lambda x: ops.max_pool2d_gather(
            x, plugrad.asarray(GATHER_INDICES), kernel_size=(2, 3), stride=2, padding=1
        ),
        lambda x: np_max_pool2d_gather(x, GATHER_INDICES, (2, 3), (2, 2), (1, 1)),
        ((1, 2, 5, 4),),
    ),
    OpCase(
        "avg_pool2d",
        "avg_pool2d",
        lambda x: ops.avg_pool2d(x, kernel_size=2),
        lambda x: np_avg_pool2d(x, (2, 2), (2, 2)),
        ((2, 1, 4, 5),),
    ),
    OpCase(
        "avg_pool2d",
        "avg_pool2d-ceil-padding",
        lambda x: ops.avg_pool2d(x, kernel_size=3, stride=2, padding=1, ceil_mode=True),
        lambda x: np_avg_pool2d(x, (3, 3), (2, 2), (1, 1), ceil_mode=True),
        ((1, 1, 6, 5),),
    ),
    OpCase(
        "avg_pool2d",
        "avg_pool2d-exclude-padding",
        lambda x: ops.avg_pool2d(
            x, kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), count_include_pad=False
        ),
        lambda x: np_avg_pool2d(x, (3, 2), (2, 1), (1, 1), count_include_pad=False),
        ((1, 2, 5, 4),),
    ),
    OpCase(
        "avg_pool2d",
        "avg_pool2d-divisor",
        lambda x: ops.avg_pool2d(x, kernel_size=2, stride=1, divisor_override=3),
        lambda x: np_avg_pool2d(x, (2, 2), (1, 1), divisor=3),
        ((1, 2, 3, 3),),
    ),
    OpCase(
        "avg_pool2d_backward",
        "avg_pool2d_backward",
        lambda g: ops.avg_pool2d_backward(
            g, input_size=(6, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True
        ),
        lambda g: np_avg_pool2d_backward(g, (6, 5), (3, 3), (2, 2), (1, 1), ceil_mode=True),
        ((1, 1, 4, 3),),
    ),
    OpCase(
        "avg_pool2d_backward",
        "avg_pool2d_backward-exclude-padding",
        lambda g: ops.avg_pool2d_backward(
            g, input_size=(4, 4), kernel_size=2, stride=1, padding=1, count_include_pad=False
        ),
        lambda g: np_avg_pool2d_backward(
            g, (4, 4), (2, 2), (1, 1), (1, 1), count_include_pad=False
        ),
        ((1, 1, 5, 5),),
    ),
]


class TestConvolutionOps(OpTests):
    cases = CASES


def test_max_pool2d_indices_point_at_the_maxima(backend) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 7, 6))
    values, indices = ops.max_pool2d(
        plugrad.asarray(x), kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True
    )
    expected_values, expected_indices = np_max_pool2d(x, (3, 3), (2, 2), (1, 1), ceil_mode=True)
    np.testing.assert_array_equal(values.numpy(), expected_values)
    np.testing.assert_array_equal(indices.numpy(), expected_indices)
    assert not indices.requires_grad


def test_max_pool2d_gradient_goes_to_the_first_maximum_on_ties(backend) -> None:
    x = plugrad.ones((1, 1, 2, 2), dtype=plugrad.float64, requires_grad=True)
    ops.max_pool2d(x, kernel_size=2).values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[[[1.0, 0.0], [0.0, 0.0]]]])
