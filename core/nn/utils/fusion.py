"""Folding an evaluation-mode batch norm into the convolution or linear layer before it.

In evaluation mode a batch norm is an affine map per channel, ``y = (x - mean)
/ sqrt(var + eps) * gamma + beta``; after a convolution or a linear layer it
can be folded into that layer's weight and bias, so inference computes one
layer instead of two, as PyTorch's ``torch.nn.utils.fusion``.

Examples
--------
>>> import plugrad
>>> from plugrad.nn.utils import fuse_conv_bn_eval
>>> conv, bn = plugrad.nn.Conv2d(2, 3, 3).eval(), plugrad.nn.BatchNorm2d(3).eval()
>>> with plugrad.no_grad():
...     _ = bn.running_mean.uniform_(), bn.running_var.uniform_(1.0, 2.0)
>>> fused = fuse_conv_bn_eval(conv, bn)
>>> x = plugrad.randn(1, 2, 5, 5)
>>> bool(plugrad.allclose(fused(x), bn(conv(x)), atol=1e-6))
True
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

from ... import ops as _ops
from ...creation import ones_like, zeros_like
from ...errors import ArgumentError, InvalidArgumentError, ShapeError
from ...tensor import Tensor
from ..conv import _ConvNd
from ..linear import Linear
from ..normalization import _BatchNorm
from ..parameter import Parameter

__all__ = [
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
]

ConvT = TypeVar("ConvT", bound=_ConvNd)
LinearT = TypeVar("LinearT", bound=Linear)


def _check_eval(function: str, layer: Any, bn: Any, kind: type[Any], name: str) -> None:
    if not isinstance(layer, kind):
        raise ArgumentError(f"{function}() takes a {name} layer first, got {type(layer).__name__}")
    if not isinstance(bn, _BatchNorm):
        raise ArgumentError(f"{function}() takes a BatchNorm layer second, got {type(bn).__name__}")
    if layer.training or bn.training:
        raise InvalidArgumentError(
            f"{function}() folds layers in evaluation mode only (a training batch norm uses "
            "each batch's statistics); call .eval() on both first"
        )
    if bn.running_mean is None or bn.running_var is None:
        raise InvalidArgumentError(
            f"{function}(): the batch norm has no running statistics "
            "(track_running_stats=False), so there is nothing to fold"
        )


def _filled(bias: Tensor | None, like: Tensor, value: float) -> Tensor:
    if bias is not None:
        return bias
    return zeros_like(like) if value == 0 else ones_like(like)


def fuse_conv_bn_weights(
    conv_w: Tensor,
    conv_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor | None,
    bn_b: Tensor | None,
    transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    """The weight and bias of a convolution followed by an evaluation-mode batch norm.

    ``transpose`` for a transposed convolution, whose output channels are the
    weight's second axis. Missing biases and affine parameters count as zeros
    (ones for the batch norm's weight). The results keep the convolution's
    dtypes and ``requires_grad``.
    """
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    conv_b = _filled(conv_b, bn_rm, 0)
    bn_w, bn_b = _filled(bn_w, bn_rm, 1), _filled(bn_b, bn_rm, 0)
    scale = bn_w / _ops.sqrt(bn_rv + bn_eps)
    channels = conv_w.shape[1 if transpose else 0]
    if scale.shape != (channels,):
        raise ShapeError(
            f"fuse_conv_bn_weights(): the batch norm has {scale.shape[0]} features but the "
            f"convolution {channels} output channels (transpose={transpose})"
        )
    shape = [1, -1] if transpose else [-1, 1]
    shape += [1] * (conv_w.ndim - 2)
    fused_w = _ops.astype(conv_w * _ops.reshape(scale, tuple(shape)), weight_dtype)
    fused_b = _ops.astype((conv_b - bn_rm) * scale + bn_b, bias_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_conv_bn_eval(conv: ConvT, bn: _BatchNorm, transpose: bool = False) -> ConvT:
    """A new convolution computing ``bn(conv(x))`` for the two layers in evaluation mode.

    ``conv`` and ``bn`` are left as they are (the result is a copy of ``conv``).
    ``transpose`` for a transposed convolution.
    """
    _check_eval("fuse_conv_bn_eval", conv, bn, _ConvNd, "convolution")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose,
    )  # fmt: skip
    return fused


def fuse_linear_bn_weights(
    linear_w: Tensor,
    linear_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor,
    bn_b: Tensor,
) -> tuple[Parameter, Parameter]:
    """The weight and bias of a linear layer followed by an evaluation-mode batch norm."""
    weight_dtype = linear_w.dtype
    bias_dtype = linear_b.dtype if linear_b is not None else weight_dtype
    linear_b = _filled(linear_b, bn_rm, 0)
    scale = bn_w / _ops.sqrt(bn_rv + bn_eps)
    fused_w = linear_w * _ops.astype(_ops.expand_dims(scale, axis=-1), weight_dtype)
    fused_b = _ops.astype((linear_b - bn_rm) * scale + bn_b, bias_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)


def fuse_linear_bn_eval(linear: LinearT, bn: _BatchNorm) -> LinearT:
    """A new linear layer computing ``bn(linear(x))`` for the two layers in evaluation mode.

    The batch norm's features must be the linear layer's outputs (or one feature).
    """
    _check_eval("fuse_linear_bn_eval", linear, bn, Linear, "Linear")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise ShapeError(
            f"fuse_linear_bn_eval(): the batch norm has {bn.num_features} features but the "
            f"linear layer {linear.out_features} outputs; they must be equal (or the batch "
            "norm have one feature)"
        )
    fused = copy.deepcopy(linear)
    weight = bn.weight if bn.weight is not None else ones_like(bn.running_mean)
    bias = bn.bias if bn.bias is not None else zeros_like(bn.running_mean)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, weight, bias
    )
    return fused
