"""Neural-network functions with PyTorch's signatures: ``plugrad.nn.functional`` (``F``).

Each function takes and returns :class:`~plugrad.Tensor` objects on any
backend and is differentiable to any order. The heavy ones are single ops with
fused backward rules (:mod:`plugrad.plugins.nn`, :mod:`plugrad.plugins.convolution`),
reachable as ``plugrad.ops.<name>`` too; the rest (``linear``, ``mse_loss``,
``nll_loss``) are compositions of plugrad's ops.

The arguments are PyTorch's, in PyTorch's order and with its defaults, so code
written for ``torch.nn.functional`` reads the same. In particular an axis is
``dim=`` here, as in PyTorch (``axis=``, the Array API's name, is accepted
too; giving both is an error): ``F.softmax(x, dim=1)`` is
``plugrad.ops.softmax(x, axis=1)``. What PyTorch
deprecated (``size_average``, ``reduce``, an implicit softmax ``dim``) or does
in place (``inplace=True``) is left out.

Examples
--------
>>> import plugrad
>>> import plugrad.nn.functional as F
>>> logits = plugrad.tensor([[2.0, 0.5, -1.0]], requires_grad=True)
>>> loss = F.cross_entropy(logits, plugrad.tensor([0]))
>>> loss.backward()
>>> logits.grad
tensor([[-0.2144,  0.1753,  0.0391]])
"""

from __future__ import annotations

import math
import numbers
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any, cast

from .. import autocast_mode as _autocast
from .. import dtypes as _dtypes
from .. import ops as _ops
from ..creation import arange, asarray, full, ones, refuse_a_tensor_read_as_a_number, zeros
from ..dtype_functions import broadcast_shapes, finfo, iinfo, result_type
from ..errors import (
    ArgumentError,
    AxisError,
    DtypeError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    NotSupportedError,
    ShapeError,
    checked_bool,
)
from ..function import Function
from ..grad_mode import _state as _grad_state
from ..grad_mode import no_grad
from ..inplace import apply_inplace, takes_out
from ..opdef import as_int, dim_as_axis
from ..plugins import _rules
from ..random import Generator, rand
from ..tensor import Tensor, install_methods
from .legacy_reduction import accepts_legacy_reduction, legacy_reduction

__all__ = [
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "avg_pool2d",
    "avg_pool3d",
    "celu",
    "elu_",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "leaky_relu_",
    "mish",
    "relu6",
    "relu_",
    "selu",
    "softplus",
    "threshold",
    "threshold_",
    "batch_norm",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "conv2d",
    "conv3d",
    "cross_entropy",
    "dropout",
    "elu",
    "embedding",
    "embedding_bag",
    "affine_grid",
    "grid_sample",
    "gelu",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "rrelu",
    "rrelu_",
    "linear",
    "linear_cross_entropy",
    "log_softmax",
    "logsumexp",
    "max_pool2d",
    "max_pool3d",
    "mse_loss",
    "nll_loss",
    "one_hot",
    "pad",
    "relu",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "softmax",
    "tanh",
    "softmin",
    "softsign",
    "logsigmoid",
    "softshrink",
    "hardshrink",
    "tanhshrink",
    "prelu",
    "glu",
    "normalize",
    "cosine_similarity",
    "pairwise_distance",
    "huber_loss",
    "kl_div",
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "soft_margin_loss",
    "cosine_embedding_loss",
    "triplet_margin_loss",
    "poisson_nll_loss",
    "gaussian_nll_loss",
    "multilabel_soft_margin_loss",
    "multi_margin_loss",
    "ctc_loss",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "alpha_dropout",
    "feature_alpha_dropout",
    "conv1d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "max_pool1d",
    "avg_pool1d",
    "adaptive_avg_pool1d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "group_norm",
    "instance_norm",
    "rms_norm",
    "local_response_norm",
    "pixel_shuffle",
    "pixel_unshuffle",
    "interpolate",
    "unfold",
    "fold",
    "scaled_dot_product_attention",
    "multi_head_attention_forward",
    "bilinear",
    "pdist",
    "gumbel_softmax",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "triplet_margin_with_distance_loss",
    "multilabel_margin_loss",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "selu_",
    "celu_",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices",
    "fractional_max_pool2d",
    "fractional_max_pool3d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices",
    "channel_shuffle",
    "native_channel_shuffle",
    "upsample",
    "upsample_nearest",
    "upsample_bilinear",
]

_REDUCTIONS = ("mean", "sum", "none")
IntPair = int | tuple[int, int]


def _check_tensor(name: str, function: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise ArgumentError(
            f"{function}(): {name} must be a Tensor, got {type(value).__name__}; "
            "convert it with plugrad.asarray(...)"
        )
    return value


def _check_same_dtype(
    function: str, input: Tensor, weight: Tensor | None, bias: Tensor | None
) -> None:
    """Refuse an input whose dtype is not the parameters', as PyTorch does.

    ``float64`` data into a ``float32`` layer would otherwise widen the whole
    computation silently (the Array API's promotion), or, cast, lose precision:
    the caller chooses.
    """
    for name, parameter in (("weight", weight), ("bias", bias)):
        if isinstance(parameter, Tensor) and input.dtype is not parameter.dtype:
            raise DtypeError(
                f"{function}(): the input is {input.dtype.name} but the {name} is "
                f"{parameter.dtype.name}; expected the same dtype. "
                + _how_to_match(input.dtype, parameter.dtype)
            )


def _check_norm_dtypes(
    function: str, input: Tensor, weight: Tensor | None, bias: Tensor | None
) -> None:
    """:func:`_check_same_dtype` for a normalization, which also takes a float16 or bfloat16
    input with float32 parameters (it computes in float32 and gives the input's dtype), as
    PyTorch's "mixed dtype" normalizations: a lowered activation (autocast) into a float32
    LayerNorm or BatchNorm."""
    if input.dtype in _dtypes.half_floats and all(
        p is None or p.dtype is _dtypes.float32 for p in (weight, bias)
    ):
        return
    _check_same_dtype(function, input, weight, bias)


def _refuse_complex(function: str, *tensors: Tensor) -> None:
    """Refuse complex inputs where the formula is one of real numbers (PyTorch refuses them
    too): mse_loss of complex values gave mean((x - y) ** 2), itself complex."""
    for tensor in tensors:
        if isinstance(tensor, Tensor) and tensor.dtype.kind == "complex floating":
            raise DtypeError(
                f"{function}(): takes real inputs, got {tensor.dtype.name}; for complex values "
                "apply it to their parts (x.real, x.imag) or to their sizes (abs(x)) yourself"
            )


def _check_floating(function: str, input: Tensor, complex_too: bool = False) -> None:
    """Refuse integers and bools where a normalization needs fractions (as PyTorch does):
    computed in the input's dtype, layer_norm of int64 gave truncated zeros. Complex inputs
    too, unless ``complex_too``: PyTorch refuses them, and the variance layer_norm divided
    by was the complex mean of (x - mean) ** 2, not a size."""
    kinds = ("real floating", "complex floating") if complex_too else ("real floating",)
    if input.dtype.kind not in kinds:
        wanted = "floating-point" if complex_too else "real floating-point"
        fix = "x.real or abs(x)" if input.dtype.kind == "complex floating" else "x.float()"
        raise DtypeError(
            f"{function}(): takes a {wanted} input, got {input.dtype.name}; convert it "
            f"first ({fix})"
        )


def _how_to_match(input_dtype: _dtypes.DType, parameter_dtype: _dtypes.DType) -> str:
    """How to give an input and a layer's parameters one dtype: the module is converted only
    to a floating dtype (Module.to refuses an integer one)."""
    convert_input = f"Convert the input (x.to(plugrad.{parameter_dtype.name}))"
    if not _dtypes.is_differentiable(input_dtype):
        return convert_input
    return f"{convert_input} or the module (module.to(plugrad.{input_dtype.name}))"


def _check_reduction(function: str, reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise InvalidArgumentError(
            f"{function}(): reduction must be 'mean', 'sum' or 'none', got {reduction!r}"
        )


def _check_loss(function: str, reduction: str, **tensors: Any) -> None:
    """Check a loss's ``reduction``, then that each of ``tensors`` (by name) is a Tensor."""
    _check_reduction(function, reduction)
    for name, value in tensors.items():
        _check_tensor(name, function, value)


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return _ops.mean(loss)
    if reduction == "sum":
        return _ops.sum(loss)
    return loss


def _number(function: str, name: str, value: Any) -> Any:
    """A setting given as a 0-d tensor (PyTorch reads those as numbers) as its number."""
    if isinstance(value, Tensor):
        refuse_a_tensor_read_as_a_number(function, name, value)
        if value.ndim != 0:
            raise ShapeError(
                f"{function}(): {name} must be a number or a 0-d tensor, got a tensor of shape "
                f"{value.shape}"
            )
        return value.item()
    return value


def _int_or_itself(value: Any) -> Any:
    """A NumPy integer (or any integral number but a bool) as an int; anything else as it is."""
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, int)):
        return int(value)
    return value


def _pool_pair(function: str, name: str, value: Any, minimum: int) -> tuple[int, int]:
    """:func:`_pair`, where one value in a sequence counts for both axes, as PyTorch's pools
    read it (``kernel_size=(2,)``)."""
    if isinstance(value, tuple | list) and len(value) == 1:
        value = (value[0], value[0])
    return _pair(function, name, value, minimum)


def _pair(function: str, name: str, value: Any, minimum: int) -> tuple[int, int]:
    return cast("tuple[int, int]", _ntuple(function, name, value, 2, minimum))


# -- linear and activations ---------------------------------------------------------------


@_autocast.listed("nn.functional.bilinear")
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = input1 @ weight[o] @ input2 + bias[o]``.

    Parameters
    ----------
    input1 : Tensor
        ``(..., in1_features)``.
    input2 : Tensor
        ``(..., in2_features)``, the same leading shape.
    weight : Tensor
        ``(out_features, in1_features, in2_features)``.
    bias : Tensor, optional
        ``(out_features,)``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.bilinear(plugrad.ones((1, 2)), plugrad.ones((1, 3)), plugrad.ones((4, 2, 3)))
    tensor([[6., 6., 6., 6.]])
    """
    for name, value in (("input1", input1), ("input2", input2), ("weight", weight)):
        _check_tensor(name, "bilinear", value)
    _check_same_dtype("bilinear", input1, weight, bias)
    _check_same_dtype("bilinear", input2, weight, None)
    if (
        weight.ndim != 3
        or input1.ndim < 1
        or input1.shape[:-1] != input2.shape[:-1]
        or (input1.shape[-1], input2.shape[-1]) != weight.shape[1:]
        or (bias is not None and bias.shape != weight.shape[:1])
    ):
        raise ShapeError(
            f"bilinear(): expected input1 (..., I1), input2 (..., I2) with the same leading "
            f"shape, weight (O, I1, I2) and bias (O,); got {input1.shape}, {input2.shape}, "
            f"{weight.shape}, {None if bias is None else bias.shape}"
        )
    # (..., 1, 1, I1) @ (O, I1, I2) -> (..., O, 1, I2), then summed against input2.
    left = _ops.matmul(_ops.expand_dims(_ops.expand_dims(input1, axis=-2), axis=-2), weight)
    out = _ops.sum(left[..., 0, :] * _ops.expand_dims(input2, axis=-2), axis=-1)
    return out if bias is None else out + bias


@_autocast.listed("nn.functional.linear")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Apply ``input @ weight.T + bias``.

    Parameters
    ----------
    input : Tensor
        ``(..., in_features)``.
    weight : Tensor
        ``(out_features, in_features)``.
    bias : Tensor, optional
        ``(out_features,)``.

    Returns
    -------
    Tensor
        ``(..., out_features)``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.linear(plugrad.ones((2, 3)), plugrad.ones((4, 3)), plugrad.zeros(4))
    tensor([[3., 3., 3., 3.],
            [3., 3., 3., 3.]])
    """
    _check_same_dtype("linear", input, weight, bias)
    try:
        out = _ops.linear(input, weight)
    except Exception:
        _check_features(input, weight)  # each library refuses in its own words (JAX: TypeError)
        if not isinstance(weight, Tensor) or weight.ndim != 1:
            raise
        out = _ops.matmul(input, weight)  # PyTorch's 1-d weight: one output feature, dropped
    return out if bias is None else out + bias


def _check_features(input: Any, weight: Any) -> None:
    """Refuse, in plugrad's words, an input whose last axis is not the weight's."""
    if (
        isinstance(input, Tensor)
        and isinstance(weight, Tensor)
        and weight.ndim in (1, 2)
        and input.ndim
        and input.shape[-1] != weight.shape[-1]
    ):
        raise ShapeError(
            f"linear(): the input of shape {input.shape} has {input.shape[-1]} features, but "
            f"the weight of shape {weight.shape} takes {weight.shape[-1]}"
        ) from None


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """Rectified linear unit ``max(input, 0)``; backward keeps only the output.

    With ``inplace=True`` the input holds the result (``input.relu_()``).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.relu(plugrad.tensor([-1.0, 2.0]))
    tensor([0., 2.])
    """
    if inplace:
        _check_tensor("input", "relu", input)
        return input.relu_()
    return _ops.relu(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit: exact (``"none"``) or its ``"tanh"`` approximation.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.gelu(plugrad.tensor([1.0]))
    tensor([0.8413])
    """
    if approximate not in ("none", "tanh"):
        raise InvalidArgumentError(
            f"gelu(): approximate must be 'none' or 'tanh', got {approximate!r}"
        )
    return _ops.gelu(input, approximate=approximate)


def _rounded_once(function: Callable[[Tensor], Tensor], input: Tensor) -> Tensor:
    """``function`` of a float16 ``input`` computed in float32 and rounded once, as PyTorch's
    fused kernels: the product of two rounded float16 factors was 2 ulp off, and the
    gradient through them up to 590 ulp (silu's)."""
    return _ops.astype(function(_ops.astype(input, _dtypes.float32)), input.dtype)


def _activation(
    function: Callable[..., Tensor],
    input: Tensor,
    inplace: bool,
    formula: Callable[[Tensor], Tensor],
    *settings: Any,
) -> Tensor:
    """``formula(input)``, the value of ``function(input, *settings)``: ``input`` holds it with
    ``inplace``, and a float16 ``input`` has it computed in float32 and rounded once."""
    name = function.__name__
    _check_tensor("input", name, input)
    if inplace:
        return apply_inplace(input, function, *settings, name=f"{name}(inplace=True)")
    if input.dtype in _dtypes.half_floats:
        return _rounded_once(formula, input)
    return formula(input)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """Sigmoid linear unit ``input * sigmoid(input)`` (also called swish).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.silu(plugrad.tensor([0.0, 1.0]))
    tensor([0.0000, 0.7311])
    """
    return _activation(silu, input, inplace, lambda x: x * _ops.sigmoid(x))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``input`` where it is positive, else ``negative_slope * input``.

    As in PyTorch, the gradient at 0 is ``negative_slope``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.leaky_relu(plugrad.tensor([-2.0, 3.0]), 0.1)
    tensor([-0.2000,  3.0000])
    """
    _check_tensor("input", "leaky_relu", input)
    if inplace:
        return apply_inplace(input, leaky_relu, negative_slope, name="leaky_relu(inplace=True)")
    return _ops.where(input > 0, input, input * negative_slope)


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Randomized leaky ReLU: ``input`` where positive, else ``a * input``.

    In training ``a`` is drawn for each element, uniformly in ``[lower, upper]``
    (from the default generator); otherwise it is ``(lower + upper) / 2``, as in
    PyTorch. The gradient is ``a`` where ``input`` is not positive.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.rrelu(plugrad.tensor([-2.0, 3.0]), 0.1, 0.3)
    tensor([-0.4000,  3.0000])
    """
    _check_tensor("input", "rrelu", input)
    _check_floating("rrelu", input)
    if not isinstance(lower, (int, float)) or not isinstance(upper, (int, float)):
        raise ArgumentError(
            f"rrelu(): lower and upper must be numbers, got {lower!r} and {upper!r}"
        )
    if not lower <= upper:
        raise InvalidArgumentError(f"rrelu(): lower must be at most upper, got {lower} > {upper}")
    if inplace:
        return apply_inplace(input, rrelu, lower, upper, training, name="rrelu(inplace=True)")
    if not training:
        return _ops.where(input > 0, input, input * ((lower + upper) / 2))
    with no_grad():
        slopes = rand(*input.shape, dtype=input.dtype, device=input.device)
        slopes = slopes * (upper - lower) + lower
    return _ops.where(input > 0, input, input * slopes)


def rrelu_(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False
) -> Tensor:
    """:func:`rrelu` in place: ``input`` holds the result."""
    return rrelu(input, lower, upper, training, inplace=True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Exponential linear unit: ``input`` where positive, else ``alpha * (exp(input) - 1)``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.elu(plugrad.tensor([-1.0, 2.0]))
    tensor([-0.6321,  2.0000])
    """

    return _activation(elu, input, inplace, lambda x: _exponential_below_zero(x, alpha, 1.0),
                       alpha)  # fmt: skip


def _exponential_below_zero(x: Tensor, alpha: float, width: float) -> Tensor:
    """``x`` where positive, else ``alpha * expm1(x / width)``: :func:`elu` and :func:`celu`."""
    # NOTE: expm1 of the non-positive part only: a large positive input would overflow
    # exp in the branch where() discards, and its gradient would be 0 * inf = nan. Not
    # minimum(x, 0), whose gradient at the tie 0 is halved.
    positive = x > 0
    negative = _ops.where(positive, 0.0, x)
    curve = alpha * _ops.expm1(negative / width if width != 1.0 else negative)
    # At 0 itself the line of the curve's slope: the same value and first derivative (the
    # negative side's), and a second derivative of 0 (the positive side's), as PyTorch's.
    line = x * (alpha / width)
    return _ops.where(positive, x, _ops.where(x == 0, line, curve))


def relu_(input: Tensor) -> Tensor:
    """:func:`relu` in place: ``input`` holds the result (``F.relu(input, inplace=True)``).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x = plugrad.tensor([-1.0, 2.0])
    >>> F.relu_(x) is x, x
    (True, tensor([0., 2.]))
    """
    return relu(input, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """:func:`leaky_relu` in place: ``input`` holds the result."""
    return leaky_relu(input, negative_slope, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """:func:`elu` in place: ``input`` holds the result."""
    return elu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """:func:`selu` in place: ``input`` holds the result."""
    return selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """:func:`celu` in place: ``input`` holds the result."""
    return celu(input, alpha, inplace=True)


def hardtanh(
    input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    """``input`` clamped to ``[min_val, max_val]``; the gradient is 1 strictly inside, else 0.

    With ``inplace=True`` the input holds the result.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.hardtanh(plugrad.tensor([-2.0, 0.5, 3.0]))
    tensor([-1.0000,  0.5000,  1.0000])
    """
    _check_tensor("input", "hardtanh", input)
    if min_val > max_val:
        raise InvalidArgumentError(
            f"hardtanh(): min_val ({min_val}) must not exceed max_val ({max_val})"
        )
    if inplace:
        return apply_inplace(input, hardtanh, min_val, max_val, name="hardtanh(inplace=True)")
    if not input.dtype.kind.endswith("floating"):  # bounds in the input's kind, as PyTorch's
        min_val, max_val = int(min_val), int(max_val)
    # NOTE: where(), not clip(): as in PyTorch, no gradient reaches an input on a bound, and
    # NaN (on neither side of a bound) counts as inside: its gradient passes.
    outside = _ops.logical_or(input <= min_val, input >= max_val)
    return _ops.where(outside, _ops.clip(input.detach(), min_val, max_val), input)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """:func:`hardtanh` in place: ``input`` holds the result."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(input, 0), 6)``: :func:`hardtanh` between 0 and 6.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.relu6(plugrad.tensor([-1.0, 3.0, 8.0]))
    tensor([0., 3., 6.])
    """
    return hardtanh(input, 0.0, 6.0, inplace)


#: The ``dtype.kind`` of integer tensors.
_INTEGER_KINDS = ("signed integer", "unsigned integer")


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``input`` where it is greater than ``threshold``, else ``value``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.threshold(plugrad.tensor([0.5, 2.0]), 1.0, -1.0)
    tensor([-1.,  2.])
    """
    _check_tensor("input", "threshold", input)
    if input.dtype.kind in _INTEGER_KINDS and isinstance(value, float) and math.isfinite(value):
        value = int(value)  # as PyTorch converts it: toward zero, the input's dtype kept
    if inplace:
        return apply_inplace(
            input, globals()["threshold"], threshold, value, name="threshold(inplace=True)"
        )
    # As PyTorch's ``x <= threshold ? value : x``: NaN is kept.
    return _ops.where(input <= threshold, value, input)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """:func:`threshold` in place: ``input`` holds the result."""
    return globals()["threshold"](input, threshold, value, inplace=True)


@_autocast.listed("nn.functional.softplus")
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * input)) / beta``; ``input`` itself where ``beta * input > threshold``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.softplus(plugrad.tensor([0.0, 30.0]))
    tensor([ 0.6931, 30.0000])
    """
    _check_tensor("input", "softplus", input)
    if input.dtype in _dtypes.half_floats:
        # In float32 and rounded once, as PyTorch does: exp(beta * x) overflows float16
        # from 11.1 on, below the threshold (the result and its gradient were inf, nan).
        wide = softplus(_ops.astype(input, _dtypes.float32), beta, threshold)
        return _ops.astype(wide, input.dtype)
    scaled = input * beta
    # NOTE: logaddexp(0, s), not log1p(exp(s)): its gradient exp(s - result) is 1 for a
    # large s, and the second derivative stays 0 there; through exp, the two terms of the
    # second derivative cancelled (-0.017 and 1.0 at 50 and 60 with threshold=100).
    smooth = _ops.logaddexp(0.0, scaled) / beta
    return _ops.where(scaled > threshold, input, smooth)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(input + 3) / 6``: 0 below -3, 1 above 3, linear between.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.hardsigmoid(plugrad.tensor([-4.0, 0.0, 4.0]))
    tensor([0.0000, 0.5000, 1.0000])
    """
    _check_tensor("input", "hardsigmoid", input)
    if inplace:
        return apply_inplace(input, hardsigmoid, name="hardsigmoid(inplace=True)")
    return relu6(input + 3.0) / 6.0


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * hardsigmoid(input)``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.hardswish(plugrad.tensor([-4.0, 1.0, 4.0]))
    tensor([-0.0000, 0.6667, 4.0000])
    """
    return _activation(hardswish, input, inplace, lambda x: x * hardsigmoid(x))


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * tanh(softplus(input))``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.mish(plugrad.tensor([0.0, 1.0]))
    tensor([0.0000, 0.8651])
    """
    return _activation(mish, input, inplace, lambda x: x * _ops.tanh(softplus(x)))


#: The constants of SELU (self-normalizing networks): ``scale * elu(x, alpha)``.
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """Scaled exponential linear unit: ``SELU_SCALE * elu(input, SELU_ALPHA)``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.selu(plugrad.tensor([-1.0, 1.0]))
    tensor([-1.1113,  1.0507])
    """
    return _activation(selu, input, inplace, lambda x: elu(x, SELU_ALPHA) * SELU_SCALE)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``input`` where positive, else ``alpha * (exp(input / alpha) - 1)``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.celu(plugrad.tensor([-1.0, 2.0]), alpha=2.0)
    tensor([-0.7869,  2.0000])
    """
    _check_tensor("input", "celu", input)
    if alpha == 0:
        raise InvalidArgumentError("celu(): alpha must not be 0 (it divides the input)")

    return _activation(celu, input, inplace, lambda x: _exponential_below_zero(x, alpha, alpha),
                       alpha)  # fmt: skip


@takes_out
def sigmoid(input: Tensor) -> Tensor:
    """Logistic sigmoid ``1 / (1 + exp(-input))``, stable for any input.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.sigmoid(plugrad.tensor([0.0]))
    tensor([0.5000])
    """
    return _ops.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent (:func:`plugrad.tanh`).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.tanh(plugrad.tensor([0.0]))
    tensor([0.])
    """
    return _ops.tanh(input)


def _cast(input: Tensor, dtype: _dtypes.DType | None) -> Tensor:
    return input if dtype is None or input.dtype is dtype else _ops.astype(input, dtype)


def _floating(input: Tensor, dtype: _dtypes.DType | None, function: str) -> Tensor:
    """``input`` cast to ``dtype`` (given), which must be a floating dtype."""
    if dtype is not None and dtype.kind not in ("real floating", "complex floating"):
        raise DtypeError(
            f"{function}(): dtype={dtype} is not a floating dtype; its values are fractions: "
            "pass a floating dtype such as plugrad.float64, or none"
        )
    return _cast(input, dtype)


def _dim(function: str, dim: Any, axis: Any) -> Any:
    """``dim``, or the Array API's ``axis`` given in its place; both is an error. Integers of
    other kinds come back as ints, lists as tuples (see :func:`plugrad.opdef.dim_as_axis`)."""
    if axis is None:
        if dim is None:
            raise ArgumentError(f"{function}() needs dim= (the axis to reduce over)")
        return dim if type(dim) is int else dim_as_axis(dim)
    if dim is not None:
        raise ArgumentError(
            f"{function}() got both dim= and axis=, which name the same argument (axis is "
            "the Array API's name for dim); pass only one"
        )
    return dim_as_axis(axis)


@_autocast.listed("nn.functional.softmax")
def softmax(
    input: Tensor,
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype: _dtypes.DType | None = None,
    *,
    axis: int | None = None,
) -> Tensor:
    """Softmax along ``dim``, computed stably; backward keeps only the output.

    Parameters
    ----------
    input : Tensor
    dim : int
        The axis to normalize (``axis=`` is accepted too, the Array API's name).
        Unlike PyTorch, there is no implicit default.
    dtype : plugrad dtype, optional
        Cast the input to it first.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.softmax(plugrad.tensor([[0.0, 0.0, 0.0, 0.0]]), dim=1)
    tensor([[0.2500, 0.2500, 0.2500, 0.2500]])
    """
    dtype = _dtype_or_stacklevel("softmax", _stacklevel, dtype)
    return _ops.softmax(_floating(input, dtype, "softmax"), axis=_dim("softmax", dim, axis))


@_autocast.listed("nn.functional.log_softmax")
def log_softmax(
    input: Tensor,
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype: _dtypes.DType | None = None,
    *,
    axis: int | None = None,
) -> Tensor:
    """Logarithm of the softmax along ``dim``, computed stably (``x - logsumexp(x)``).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.log_softmax(plugrad.tensor([0.0, 0.0]), dim=0)
    tensor([-0.6931, -0.6931])
    """
    dim = _dim("log_softmax", dim, axis)
    dtype = _dtype_or_stacklevel("log_softmax", _stacklevel, dtype)
    return _ops.log_softmax(_floating(input, dtype, "log_softmax"), axis=dim)


def _dtype_or_stacklevel(
    function: str, stacklevel: Any, dtype: _dtypes.DType | None
) -> _dtypes.DType | None:
    """``dtype``, or the third argument where it is one: ``torch.softmax(x, dim, dtype)``
    (the top-level form, which ``plugrad.softmax`` is too) takes it there, where
    ``nn.functional``'s form has its unused ``_stacklevel``: a dtype there was ignored."""
    if isinstance(stacklevel, _dtypes.DType):
        if dtype is not None:
            raise ArgumentError(
                f"{function}() got a dtype by position ({stacklevel.name}) and dtype= "
                f"({dtype.name}); give one"
            )
        return stacklevel
    if not isinstance(stacklevel, int) or isinstance(stacklevel, bool):
        raise ArgumentError(
            f"{function}(): the third argument is a dtype (torch.{function}(x, dim, dtype)) "
            f"or nn.functional's unused _stacklevel (an int), got {stacklevel!r}"
        )
    return dtype


def gumbel_softmax(
    logits: Tensor,
    tau: float = 1.0,
    hard: bool = False,
    eps: float = 1e-10,
    dim: int = -1,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """A differentiable sample of the categorical distribution of ``logits`` along ``dim``.

    ``softmax((logits + g) / tau)`` with ``g`` drawn from the standard Gumbel
    distribution (plugrad's generators; ``generator=`` is a plugrad extension).
    With ``hard`` the result is the one-hot vector of its largest entry, whose
    gradient is the soft sample's (the straight-through estimator). ``eps`` is
    accepted as PyTorch's (unused there too).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> sample = F.gumbel_softmax(plugrad.tensor([[1.0, 2.0, 3.0]]), tau=0.5, hard=True)
    >>> sample.sum().item(), sorted(set(sample.tolist()[0]))
    (1.0, [0.0, 1.0])
    """
    _check_tensor("logits", "gumbel_softmax", logits)
    if logits.dtype.kind != "real floating":
        raise DtypeError(f"gumbel_softmax(): logits must be real floating, got {logits.dtype}")
    if not isinstance(tau, (int, float)) or not tau > 0:
        raise InvalidArgumentError(f"gumbel_softmax(): tau must be a positive number, got {tau!r}")
    # float16 noise is drawn in float32 and rounded once: drawn in float16, an unlikely class
    # ([0, -12]: 1 in 160,000) was never picked.
    noise_dtype = _dtypes.float32 if logits.dtype in _dtypes.half_floats else logits.dtype
    uniform = rand(logits.shape, dtype=noise_dtype, device=logits.device, generator=generator)
    # -log(E) for E ~ Exponential(1) = -log(1 - U); E = 0 (U = 0) is taken as the tiniest E.
    exponential = _ops.maximum(-_ops.log1p(-uniform), finfo(noise_dtype).smallest_normal)
    gumbel = _ops.astype(-_ops.log(exponential), logits.dtype)
    soft = _ops.softmax((logits + gumbel) / tau, axis=dim)
    if not hard:
        return soft
    if logits.ndim == 0:  # one class: the softmax is 1, and so is its one-hot sample
        return ones((), dtype=soft.dtype, device=soft.device) - soft.detach() + soft
    index = _ops.argmax(soft, axis=dim, keepdims=True)
    classes = _ops.reshape(
        arange(logits.shape[dim], device=logits.device),
        (-1,) + (1,) * (-(dim % logits.ndim) + logits.ndim - 1),
    )
    one_hot_sample = _ops.astype(index == classes, logits.dtype)
    return one_hot_sample - soft.detach() + soft


@_autocast.listed("logsumexp")
@takes_out
def logsumexp(
    input: Tensor,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    axis: int | Sequence[int] | None = None,
) -> Tensor:
    """``log(sum(exp(input)))`` over ``dim`` without overflow (``torch.logsumexp``).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.logsumexp(plugrad.tensor([[1000.0, 1000.0]]), dim=1)
    tensor([1000.6932])
    """
    dim = _dim("logsumexp", dim, axis)
    if dim is not None and not isinstance(dim, int) and len(dim) == 0:
        dim = None  # PyTorch 2 reads dim=() as every dim, as x.logsumexp(()) does
    return _ops.logsumexp(
        input, axis=dim if dim is None or isinstance(dim, int) else tuple(dim), keepdims=keepdim
    )


def dropout(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    The mask comes from plugrad's random generators, so :func:`plugrad.manual_seed`
    (or ``generator=``, a plugrad extension) makes it reproducible. Without
    ``training``, or with ``p == 0``, the input is returned as it is. Backward
    keeps only a boolean mask. With ``inplace=True`` the input holds the
    result, with the checks of the in-place methods.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> _ = plugrad.manual_seed(0)
    >>> F.dropout(plugrad.ones(6), p=0.5)
    tensor([2., 2., 2., 0., 0., 0.])
    >>> F.dropout(plugrad.ones(2), p=0.5, training=False)
    tensor([1., 1.])
    """
    _check_tensor("input", "dropout", input)
    # (A bool stays a number here, as it was and is to PyTorch; the channel dropouts refuse it.)
    p = _check_probability("dropout", p, bool_too=True)
    if not training or p == 0:
        return input
    return _drop("dropout", input, p, inplace, generator, per=input.ndim)


# -- losses ------------------------------------------------------------------------------


def _check_element_weight(function: str, weight: Tensor | None, input: Tensor) -> None:
    """Refuse a per-element loss weight that is not of the input's shape, as PyTorch does."""
    if weight is not None and _check_tensor("weight", function, weight).shape != input.shape:
        raise ShapeError(
            f"{function}(): weight has shape {weight.shape} but input has shape {input.shape}; "
            "they must match"
        )


@_autocast.listed("nn.functional.mse_loss")
@accepts_legacy_reduction(after="target")
def mse_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", weight: Tensor | None = None
) -> Tensor:
    """Mean squared error ``(input - target) ** 2``, reduced by ``reduction``.

    Parameters
    ----------
    input, target : Tensor
        Of the same shape.
    reduction : {"mean", "sum", "none"}
    weight : Tensor, optional
        Of the input's shape: multiplies the loss of each element; the mean is
        then the weighted mean (divided by the sum of the weights), as PyTorch's.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.mse_loss(plugrad.tensor([1.0, 2.0]), plugrad.tensor([1.0, 4.0]))
    tensor(2.)
    """
    _check_reduction("mse_loss", reduction)
    _refuse_complex("mse_loss", input, target)
    if _check_tensor("input", "mse_loss", input).shape != target.shape:
        raise ShapeError(
            f"mse_loss(): input has shape {input.shape} but target has shape {target.shape}; "
            "they must match (PyTorch would broadcast with a warning)"
        )
    _check_element_weight("mse_loss", weight, input)
    diff = input - target
    return _reduce_weighted(diff * diff, weight, reduction)


def _reduce_weighted(loss: Tensor, weight: Tensor | None, reduction: str) -> Tensor:
    """``loss * weight`` reduced; its mean divides by the sum of the weights (PyTorch's
    mse_loss and l1_loss; its huber_loss divides by the number of elements)."""
    if weight is None:
        return _reduce(loss, reduction)
    if reduction == "mean":
        return _ops.sum(loss * weight) / _ops.sum(weight)
    return _reduce(loss * weight, reduction)


def _same_shape(function: str, input: Tensor, target: Tensor) -> None:
    if (
        _check_tensor("input", function, input).shape
        != _check_tensor("target", function, target).shape
    ):
        raise ShapeError(
            f"{function}(): input has shape {input.shape} but target has shape "
            f"{target.shape}; they must match"
        )


@_autocast.listed("nn.functional.l1_loss")
@accepts_legacy_reduction(after="target")
def l1_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", weight: Tensor | None = None
) -> Tensor:
    """Mean absolute error ``|input - target|``, reduced by ``reduction``.

    ``weight``, of the input's shape, multiplies the loss of each element; the
    mean is then the weighted mean (divided by the sum of the weights), as PyTorch's.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.l1_loss(plugrad.tensor([1.0, 2.0]), plugrad.tensor([1.5, 4.0]))
    tensor(1.2500)
    """
    _check_reduction("l1_loss", reduction)
    _same_shape("l1_loss", input, target)
    _check_element_weight("l1_loss", weight, input)
    return _reduce_weighted(_ops.abs(input - target), weight, reduction)


@_autocast.listed("nn.functional.smooth_l1_loss")
@accepts_legacy_reduction(after="target")
def smooth_l1_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0
) -> Tensor:
    """Huber-like loss: ``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta``.

    ``d = input - target``; ``beta=0`` gives :func:`l1_loss`.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.smooth_l1_loss(plugrad.tensor([0.5, 3.0]), plugrad.tensor([0.0, 0.0]), reduction="none")
    tensor([0.1250, 2.5000])
    """
    _check_reduction("smooth_l1_loss", reduction)
    _refuse_complex("smooth_l1_loss", input, target)
    _same_shape("smooth_l1_loss", input, target)
    if beta < 0:
        raise InvalidArgumentError(f"smooth_l1_loss(): beta must be >= 0, got {beta!r}")
    distance = _ops.abs(input - target)
    if beta == 0:
        return _reduce(distance, reduction)
    # NOTE: the square is of the masked difference, so its gradient is 0 where |d| >= beta;
    # of the difference, not of |d|, whose second derivative at d = 0 would be 0, not 1 / beta.
    near = _ops.where(distance < beta, input - target, 0.0)
    loss = _ops.where(distance < beta, (0.5 / beta) * (near * near), distance - 0.5 * beta)
    return _reduce(loss, reduction)


@_autocast.listed("nn.functional.binary_cross_entropy")
@accepts_legacy_reduction(after="weight")
def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross-entropy of probabilities ``input`` against ``target``.

    ``-(target * log(input) + (1 - target) * log(1 - input))``, each log
    clamped at -100 as in PyTorch. Prefer :func:`binary_cross_entropy_with_logits`
    on logits: it is stable where the probabilities round to 0 or 1.

    The gradient is PyTorch's, ``(input - target) / max(input * (1 - input),
    1e-12)``: it ignores the clamp, so a confidently wrong input (0 for a
    target of 1) gets a gradient (up to ``1e12``) rather than none.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.binary_cross_entropy(plugrad.tensor([0.5, 0.9]), plugrad.tensor([0.0, 1.0]))
    tensor(0.3993)
    """
    _check_reduction("binary_cross_entropy", reduction)
    _same_shape("binary_cross_entropy", input, target)
    for name, value in (("input", input), ("target", target)):
        # Written so that NaN fails it too, as in PyTorch (NaN < 0 and NaN > 1 are false);
        # a check a compiled replay repeats, not a read of values that would end a capture.
        outside = _ops.logical_not(_ops.all(_ops.logical_and(value >= 0, value <= 1)))
        what = f"binary_cross_entropy(): an element of the {name} outside [0, 1] (or NaN)"
        if _rules.any_true(outside, what, InvalidArgumentError):
            raise InvalidArgumentError(
                f"binary_cross_entropy(): every element of the {name} must lie in [0, 1] "
                "(NaN does not)"
                + (" (for logits, use binary_cross_entropy_with_logits)" if name == "input" else "")
            )
    loss = _ops.binary_cross_entropy(input, _floating_target(target, input))
    if weight is not None:
        # in the loss's dtype, as PyTorch's (a float64 weight made a float32 loss float64)
        loss = loss * _as_input_dtype(
            _weight_within("binary_cross_entropy", "weight", weight, input), loss
        )
    return _reduce(loss, reduction)


def _weight_within(function: str, name: str, weight: Tensor, input: Tensor) -> Tensor:
    """``weight``, once checked to broadcast to ``input``'s shape without enlarging it.

    A larger weight would make a larger loss, whose mean then counts elements
    that are not the input's.
    """
    _check_tensor(name, function, weight)
    try:
        fits = broadcast_shapes(tuple(weight.shape), tuple(input.shape)) == tuple(input.shape)
    except ShapeError:
        fits = False
    if not fits:
        raise ShapeError(
            f"{function}(): {name} of shape {weight.shape} does not broadcast to the input's "
            f"shape {input.shape}; give one weight per element, or a shape that broadcasts "
            "to it (for instance one per class on the last axis)"
        )
    return weight


def _class_target_shape(function: str, input: Tensor, target: Tensor) -> None:
    expected = () if input.ndim == 1 else (input.shape[0], *input.shape[2:])
    if input.ndim == 0:
        raise ShapeError(f"{function}(): input must have a class axis, got a 0-d tensor")
    if target.shape != expected:
        raise ShapeError(
            f"{function}(): input of shape {input.shape} (classes on axis "
            f"{0 if input.ndim == 1 else 1}) needs a target of shape {expected}, got "
            f"{target.shape}"
        )
    if target.dtype.kind not in _INTEGER_KINDS:
        raise DtypeError(
            f"{function}(): class targets must be integers, not {target.dtype.name}; "
            "pass class indices (e.g. plugrad.astype(target, plugrad.int64)), or class "
            "probabilities of the input's shape and floating dtype to cross_entropy()"
        )


def any_outside(found: Tensor, what: str) -> bool:
    """Whether ``found``, the 0-d result of ``plugrad.ops.out_of_range``, is true.

    Under :func:`plugrad.compile` the check is part of the plan: every replay
    makes it again and raises :class:`~plugrad.errors.IndexOutOfRangeError`
    saying ``what`` was found.
    """
    return bool(found._array)


def _check_class_range(
    function: str, target: Tensor, classes: int, ignore_index: int | None
) -> None:
    """Refuse class targets outside ``[0, classes)`` other than ``ignore_index`` (one reduction)."""
    found = _ops.out_of_range(target, low=0, high=classes, allowed=ignore_index)
    if not any_outside(found, f"{function}(): class targets outside [0, {classes})"):
        return
    bad = _values_outside(target, classes, allowed=ignore_index)
    if ignore_index is None:
        raise IndexOutOfRangeError(
            f"{function}(): class targets must lie in [0, {classes}) (there are {classes} "
            f"classes), but {len(bad)} of them do not, e.g. {bad[0]}; fix the labels"
        )
    raise IndexOutOfRangeError(
        f"{function}(): class targets must lie in [0, {classes}) (there are {classes} classes) "
        f"or equal ignore_index={ignore_index}, but {len(bad)} of them do not, e.g. "
        f"{bad[0]}; fix the labels, or pass the value that marks samples to skip as "
        "ignore_index"
    )


def _values_outside(indices: Tensor, high: int, allowed: int | None = None) -> list[int]:
    """The values of ``indices`` outside ``[0, high)`` other than ``allowed``, for a message.

    Read on the host: a boolean mask would give a lazy backend (Dask) a result of
    unknown size.
    """
    flat = _ops.reshape(indices, (-1,)).tolist()
    return [v for v in flat if (v < 0 or v >= high) and v != allowed]


def _reduce_over_classes(
    loss: Tensor,
    reduction: str,
    input: Tensor,
    target: Tensor,
    weight: Tensor | None,
    ignore_index: int,
) -> Tensor:
    """``reduction`` of a per-sample loss over class targets; its "mean" divides by
    the summed weights of the counted targets, as PyTorch's does."""
    if reduction == "none":
        return loss
    if reduction == "sum":
        return _ops.sum(loss)
    if weight is not None and weight.requires_grad and _grad_state.enabled:
        # counted_weight gives no gradient: the mean's gradient for the weights has a term
        # from its denominator, written out here (as the common case need not be).
        counted = target != ignore_index
        picked = _ops.take(weight, _ops.reshape(_ops.where(counted, target, 0), (-1,)), axis=0)
        summed = _ops.sum(_ops.where(_ops.reshape(counted, (-1,)), picked, 0.0))
        return _ops.sum(loss) / _ops.where(summed == 0, math.nan, summed)
    counted = _ops.counted_weight(input, target, weight, ignore_index=ignore_index)
    if counted.dtype != loss.dtype:  # float16: summed and divided in float32, rounded once
        return _ops.astype(_ops.sum(loss, dtype=counted.dtype) / counted, loss.dtype)
    return _ops.sum(loss) / counted


@_autocast.listed("nn.functional.cross_entropy")
@accepts_legacy_reduction(after="weight")
def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross-entropy between logits and class targets, computed in one fused op.

    Parameters
    ----------
    input : Tensor
        Unnormalized logits, ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``.
    target : Tensor
        Class indices (integers, of the input's shape without the class axis),
        or class probabilities (floats, of the input's shape).
    weight : Tensor, optional
        ``(C,)``: a weight per class. With class-index targets no gradient reaches it: one
        that requires grad is refused, as in PyTorch (``nll_loss`` of ``log_softmax`` gives
        one).
    ignore_index : int
        Class-index targets equal to it count neither in the loss nor in the mean
        (class indices only: with probability targets it must be left out).
    reduction : {"mean", "sum", "none"}
        ``"mean"`` divides by the summed weights of the counted targets.
    label_smoothing : float
        In ``[0, 1]``: mix the target with the uniform distribution.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> logits = plugrad.tensor([[1.0, 2.0, 0.5], [0.1, 0.2, 3.0]])
    >>> F.cross_entropy(logits, plugrad.tensor([1, 2]))
    tensor(0.2870)
    >>> F.cross_entropy(logits, plugrad.tensor([1, -100]), reduction="none")
    tensor([0.4644, 0.0000])
    """
    _check_loss("cross_entropy", reduction, input=input, target=target)
    if not isinstance(label_smoothing, (int, float)) or not 0.0 <= label_smoothing <= 1.0:
        raise InvalidArgumentError(
            f"cross_entropy(): label_smoothing must be in [0, 1], got {label_smoothing!r}"
        )
    classes = input.shape[0 if input.ndim == 1 else 1] if input.ndim else 0
    if weight is not None and weight.shape != (classes,):
        raise ShapeError(
            f"cross_entropy(): weight must have shape ({classes},), one per class, "
            f"got {weight.shape}"
        )
    if target.dtype.kind == "real floating":
        if ignore_index != -100:
            raise ArgumentError(
                f"cross_entropy(): ignore_index={ignore_index} names a class index to skip, and "
                "the target holds class probabilities (floats), not indices; leave ignore_index "
                "out, or give each sample's class index as an integer target"
            )
        return _soft_cross_entropy(input, target, weight, reduction, label_smoothing)
    _class_target_shape("cross_entropy", input, target)
    _check_class_range("cross_entropy", target, classes, ignore_index)
    if weight is not None and weight.requires_grad and _grad_state.enabled:
        raise InvalidArgumentError(
            "cross_entropy(): weight requires grad, and no gradient reaches the class weights "
            "of class-index targets (PyTorch refuses it too); pass weight.detach(), or write "
            "the loss as nll_loss(log_softmax(input, 1), target, weight) for a gradient"
        )
    loss = _ops.cross_entropy(
        input, target, weight, ignore_index=ignore_index, label_smoothing=float(label_smoothing)
    )
    return _reduce_over_classes(loss, reduction, input, target, weight, ignore_index)


def linear_cross_entropy(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    *,
    linear_bias: Tensor | None = None,
    weight: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options: Any = None,
) -> Tensor:
    """Cross-entropy of the logits ``linear(input, linear_weight, linear_bias)`` and a target.

    The logits ``(N, C, d1, ..., dK)`` come from a weight ``(C, d1, ..., dK, in_features)``
    (``K = 0``: an ordinary ``(C, in_features)`` weight); the loss is then
    :func:`cross_entropy` of them.

    Parameters
    ----------
    input : Tensor
        ``(in_features,)`` or ``(N, in_features)``; a weight with ``K > 0`` needs the batched one.
    linear_weight : Tensor
        ``(C, d1, ..., dK, in_features)``.
    target : Tensor
        Class indices (integers): ``()``, ``(N,)`` or ``(N, d1, ..., dK)``; or class
        probabilities (floats) of the logits' shape: ``(C,)`` or ``(N, C, d1, ..., dK)``.
    linear_bias : Tensor, optional
        ``(C, d1, ..., dK)``, added to the logits.
    weight : Tensor, optional
        ``(C,)``: a weight per class, as for :func:`cross_entropy`.
    reduction : {"mean", "sum", "none"}
    ignore_index : int, optional
        A class index to skip; ``None`` (the default) skips ``-100`` for class-index targets.
        Probability targets take none.
    label_smoothing : float
        In ``[0, 1]``, as for :func:`cross_entropy`.
    options : None
        PyTorch's ``LinearCrossEntropyOptions`` choose how its result is computed in chunks
        of the batch, which saves memory, not what the result is; plugrad has no chunked
        path, so only ``None`` is taken.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x = plugrad.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> w = plugrad.tensor([[2.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    >>> F.linear_cross_entropy(x, w, plugrad.tensor([0, 1]))
    tensor(0.2395)
    """
    name = "linear_cross_entropy"
    _check_loss(name, reduction, input=input, linear_weight=linear_weight, target=target)
    if options is not None:
        raise NotSupportedError(
            f"{name}(): options={options!r} asks for PyTorch's chunked computation, which "
            "plugrad does not have; pass options=None: the result is the unchunked one, "
            "which the chunked one only computes with less memory"
        )
    if input.ndim not in (1, 2):
        raise ShapeError(
            f"{name}(): input must be (in_features,) or (N, in_features), got shape {input.shape}"
        )
    if linear_weight.ndim < 2:
        raise ShapeError(
            f"{name}(): linear_weight must be (C, d1, ..., dK, in_features), at least 2-d; got "
            f"shape {linear_weight.shape}"
        )
    in_features = input.shape[-1]
    if linear_weight.shape[-1] != in_features:
        raise ShapeError(
            f"{name}(): the last axes of input and linear_weight (in_features) must agree, "
            f"got {in_features} and {linear_weight.shape[-1]}"
        )
    classes, extra = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None:
        _check_tensor("linear_bias", name, linear_bias)
        if tuple(linear_bias.shape) != (classes, *extra):
            raise ShapeError(
                f"{name}(): linear_bias must have shape {(classes, *extra)} (linear_weight's "
                f"without in_features), got {linear_bias.shape}"
            )
    if extra and input.ndim == 1:
        raise ShapeError(
            f"{name}(): a linear_weight of shape {linear_weight.shape} gives a K-dimensional "
            f"loss, which needs a batch: input (N, {in_features}), got shape {input.shape}"
        )
    if ignore_index is not None and target.dtype.kind == "real floating":
        raise ArgumentError(
            f"{name}(): ignore_index={ignore_index} names a class index to skip, and the target "
            "holds class probabilities (floats); leave ignore_index out (None)"
        )
    flat = math.prod(extra) * classes
    # One 2-d linear map, whose outputs are then laid out as (N, C, d1, ..., dK).
    if extra:
        linear_weight = _ops.reshape(linear_weight, (flat, in_features))
        if linear_bias is not None:
            linear_bias = _ops.reshape(linear_bias, (flat,))
    logits = _ops.reshape(
        linear(input, linear_weight, linear_bias), (*input.shape[:-1], classes, *extra)
    )
    return cross_entropy(
        logits,
        target,
        weight,
        ignore_index=-100 if ignore_index is None else ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )


def _soft_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None,
    reduction: str,
    label_smoothing: float,
) -> Tensor:
    """Cross-entropy against class probabilities (a composition, not a fused op)."""
    if target.shape != input.shape:
        raise ShapeError(
            f"cross_entropy(): class probabilities must have the input's shape {input.shape}, "
            f"got {target.shape}"
        )
    axis = 0 if input.ndim == 1 else 1
    classes = input.shape[axis]
    if label_smoothing:
        target = target * (1.0 - label_smoothing) + label_smoothing / classes
    terms = _ops.log_softmax(input, axis=axis) * target
    if weight is not None:
        terms = terms * _ops.reshape(
            weight, tuple(classes if i == axis else 1 for i in range(input.ndim))
        )
    loss = -_ops.sum(terms, axis=axis)
    return _reduce(loss, reduction)


@_autocast.listed("nn.functional.nll_loss")
@accepts_legacy_reduction(after="weight")
def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of class targets given log-probabilities.

    ``cross_entropy(x, t)`` is ``nll_loss(log_softmax(x, 1), t)``, in one op;
    use this when the log-probabilities are computed anyway.

    Parameters
    ----------
    input : Tensor
        Log-probabilities, ``(N, C)``, ``(N, C, d1, ...)`` or ``(C,)``.
    target : Tensor
        Class indices, of the input's shape without the class axis.
    weight, ignore_index, reduction
        As for :func:`cross_entropy`.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.nll_loss(plugrad.tensor([[-0.5, -1.0], [-2.0, -0.1]]), plugrad.tensor([0, 1]))
    tensor(0.3000)
    """
    _check_reduction("nll_loss", reduction)
    _check_tensor("input", "nll_loss", input)
    _class_target_shape("nll_loss", input, _check_tensor("target", "nll_loss", target))
    axis = 0 if input.ndim == 1 else 1
    classes = input.shape[axis]
    _check_class_range("nll_loss", target, classes, ignore_index)
    if weight is not None and (not isinstance(weight, Tensor) or weight.shape != (classes,)):
        raise ShapeError(
            f"nll_loss(): weight must be a tensor of shape ({classes},), one per class, got "
            f"{getattr(weight, 'shape', type(weight).__name__)}"
        )
    class_shape = tuple(classes if i == axis else 1 for i in range(input.ndim))
    labels = _ops.reshape(arange(classes, device=input.device), class_shape)
    hit = _ops.expand_dims(target, axis=axis) == labels
    picked = input if weight is None else input * _ops.reshape(weight, class_shape)
    loss = -_ops.sum(_ops.where(hit, picked, 0.0), axis=axis)
    loss = _ops.where(target != ignore_index, loss, 0.0)
    return _reduce_over_classes(loss, reduction, input, target, weight, ignore_index)


@_autocast.listed("nn.functional.binary_cross_entropy_with_logits")
@accepts_legacy_reduction(after="weight")
def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross-entropy of ``sigmoid(input)`` against ``target``, computed stably.

    Parameters
    ----------
    input : Tensor
        Logits.
    target : Tensor
        Probabilities in ``[0, 1]``, of the input's shape.
    weight : Tensor, optional
        Broadcasts against the input: a weight per element.
    reduction : {"mean", "sum", "none"}
    pos_weight : Tensor, optional
        Broadcasts against the input (typically ``(C,)``): the weight of positive examples.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x = plugrad.tensor([0.0, 2.0])
    >>> F.binary_cross_entropy_with_logits(x, plugrad.tensor([0.0, 1.0]))
    tensor(0.4100)
    """
    _check_reduction("binary_cross_entropy_with_logits", reduction)
    _check_tensor("input", "binary_cross_entropy_with_logits", input)
    if _check_tensor("target", "binary_cross_entropy_with_logits", target).shape != input.shape:
        raise ShapeError(
            f"binary_cross_entropy_with_logits(): target has shape {target.shape} but input "
            f"has shape {input.shape}; they must match"
        )
    function = "binary_cross_entropy_with_logits"
    if weight is not None:
        _weight_within(function, "weight", weight, input)
    if pos_weight is not None:
        _weight_within(function, "pos_weight", pos_weight, input)
    # As PyTorch's kernel: the loss has the target's floating dtype (float32 logits with a
    # float64 target give float64, float64 logits with a float32 target float32).
    target = _floating_target(target, input)
    input = _as_input_dtype(input, target)
    # The weights too (a float64 weight made a float32 loss float64; not in PyTorch)
    weight = None if weight is None else _as_input_dtype(weight, input)
    pos_weight = None if pos_weight is None else _as_input_dtype(pos_weight, input)
    loss = _ops.binary_cross_entropy_with_logits(input, target, weight, pos_weight)
    return _reduce(loss, reduction)


# -- normalization, embedding -------------------------------------------------------------


def _floating_target(target: Tensor, input: Tensor) -> Tensor:
    """An integer or bool target (0/1 labels, which PyTorch refuses) in the input's dtype;
    computed as it was, NumPy's ``1.0 - labels`` made the loss float64."""
    if target.dtype.kind in ("real floating", "complex floating"):
        return target
    return _ops.astype(target, input.dtype)


def _as_input_dtype(other: Tensor, input: Tensor) -> Tensor:
    """``other`` in ``input``'s floating dtype where both are floating (some PyTorch losses
    compute in one argument's dtype instead of promoting); otherwise as it is."""
    if other.dtype is input.dtype or not (other.dtype.kind == input.dtype.kind == "real floating"):
        return other
    return _ops.astype(other, input.dtype)


def _moving_average_(running: Tensor, batch: Tensor, momentum: float) -> None:
    """Move a running statistic toward the batch's in place: ``(1 - momentum) * running +
    momentum * batch``, as PyTorch does."""
    running.copy_((1.0 - momentum) * running + momentum * batch)


def _in_float32(*tensors: Tensor | None) -> tuple[Any, ...]:
    """Each tensor given as float32 (a float16 computation done in float32); None stays."""
    return tuple(None if t is None else _ops.astype(t, _dtypes.float32) for t in tensors)


def _scale_shift(
    input: Tensor, weight: Tensor | None, bias: Tensor | None, kept: tuple[int, ...]
) -> Tensor:
    """``input * weight + bias``, each (when given) reshaped to ``kept`` to broadcast."""
    if weight is not None:
        input = input * _ops.reshape(weight, kept)
    if bias is not None:
        input = input + _ops.reshape(bias, kept)
    return input


def _normalized_by_running(
    function: str,
    flag: str,
    otherwise: str,
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    kept: tuple[int, ...],
    eps: float,
) -> Tensor:
    """``input`` normalized by the running statistics (reshaped to ``kept``), as a
    normalization with ``flag=False`` does; an ArgumentError (suggesting ``otherwise``)
    where they are not both given."""
    if running_mean is None or running_var is None:
        raise ArgumentError(
            f"{function}(): {flag}=False normalizes with running_mean and running_var; give "
            f"both, or pass {otherwise}"
        )
    centered = input - _ops.reshape(running_mean, kept)
    return centered / _ops.sqrt(_ops.reshape(running_var, kept) + eps)


def _check_running_statistics(function: str, **running: Tensor | None) -> None:
    """Refuse running statistics that cannot hold fractions (an int64 running_var was
    updated in place by truncation; PyTorch refuses it too)."""
    for name, value in running.items():
        if value is not None and value.dtype.kind != "real floating":
            raise DtypeError(
                f"{function}(): {name} must be a real floating-point tensor, got "
                f"{value.dtype.name}; make it with the input's dtype (e.g. "
                f"plugrad.zeros(C, dtype=input.dtype))"
            )


def _check_per_channel(
    function: str, channels: int, input: Tensor, **per_channel: Tensor | None
) -> None:
    """Refuse statistics or affine parameters that do not hold one value per channel.

    Checked before anything is computed: a running mean of another length
    would be updated in place (or broadcast) before an error came.
    """
    for name, value in per_channel.items():
        if value is not None and value.size != channels:
            raise ShapeError(
                f"{function}(): the input of shape {input.shape} has {channels} channels (axis "
                f"1), but {name} holds {value.size} values; a layer made for {value.size} "
                "channels was given this input?"
            )


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel (axis 1) over the batch and the other axes, then scale and shift.

    With ``training=True`` the statistics are the batch's, and the running
    statistics (when given) move toward them in place by ``momentum``: the
    mean, and the unbiased variance, as in PyTorch. Otherwise the running
    statistics normalize.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> mean, var = plugrad.zeros(1), plugrad.ones(1)
    >>> F.batch_norm(plugrad.tensor([[1.0], [3.0]]), mean, var, training=True)
    tensor([[-1.0000],
            [ 1.0000]])
    >>> mean, var
    (tensor([0.2000]), tensor([1.1000]))
    """
    momentum = _number("batch_norm", "momentum", momentum)
    eps = _number("batch_norm", "eps", eps)
    _check_tensor("input", "batch_norm", input)
    _refuse_complex("batch_norm", input)
    if (running_mean is None) != (running_var is None):
        raise ArgumentError(
            "batch_norm(): running_mean and running_var are given together or not at all "
            f"(running_mean is {type(running_mean).__name__}, running_var "
            f"{type(running_var).__name__})"
        )
    if not isinstance(momentum, (int, float)) or isinstance(momentum, bool):
        raise ArgumentError(
            f"batch_norm(): momentum must be a number, got {type(momentum).__name__} (the "
            "BatchNorm layers' momentum=None, a running average, is theirs alone)"
        )
    if training and not eps > 0:
        raise InvalidArgumentError(f"batch_norm(): eps must be positive in training, got {eps}")
    if input.ndim < 2:
        raise ShapeError(
            f"batch_norm(): expected an input of shape (N, C, ...), got shape {input.shape}"
        )
    _check_norm_dtypes("batch_norm", input, weight, bias)
    channels = input.shape[1]
    _check_running_statistics("batch_norm", running_mean=running_mean, running_var=running_var)
    _check_per_channel("batch_norm", channels, input, running_mean=running_mean,
                       running_var=running_var, weight=weight, bias=bias)  # fmt: skip
    if input.dtype in _dtypes.half_floats:
        # float16 is normalized in float32 and rounded once, as PyTorch does: the squares
        # of values a few hundred apart overflow float16 (the result came out 0).
        x, w, b = _in_float32(input, weight, bias)
        if not training:  # read only: in float32 too (sqrt(var + eps) was rounded first)
            running_mean, running_var = _in_float32(running_mean, running_var)
        out = batch_norm(x, running_mean, running_var, w, b, training, momentum, eps)
        return _ops.astype(out, input.dtype)
    axes = (0, *range(2, input.ndim))
    kept = (1, channels) + (1,) * (input.ndim - 2)
    if training:
        count = input.size // channels if channels else 0
        if count == 0:  # an empty batch: an empty result, statistics left alone (PyTorch's)
            return _scale_shift(input * 0.0, weight, bias, kept)
        if count == 1:
            raise ShapeError(
                f"batch_norm(): training needs more than one value per channel, got input "
                f"of shape {input.shape}"
            )
        mean = _ops.mean(input, axis=axes, keepdims=True)
        centered = input - mean
        var = _ops.mean(centered * centered, axis=axes, keepdims=True)
        if running_mean is not None and running_var is not None:
            with no_grad():
                batch_mean = _ops.reshape(mean, (channels,))
                batch_var = _ops.reshape(var, (channels,)) * (count / (count - 1))
                _moving_average_(running_mean, batch_mean, momentum)
                _moving_average_(running_var, batch_var, momentum)
        normalized = centered / _ops.sqrt(var + eps)
    else:
        normalized = _normalized_by_running(
            "batch_norm", "training", "training=True to use the batch's statistics",
            input, running_mean, running_var, kept, eps,
        )  # fmt: skip
    return _scale_shift(normalized, weight, bias, kept)


@_autocast.listed("nn.functional.layer_norm")
def layer_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` axes, then scale and shift.

    One op with a fused backward; it keeps the input (and weight), not the
    normalized values.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.layer_norm(plugrad.tensor([[0.0, 2.0]]), (2,))
    tensor([[-1.0000,  1.0000]])
    """
    eps = _number("layer_norm", "eps", eps)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if (
        not shape
        or tuple(_check_tensor("input", "layer_norm", input).shape[-len(shape) :]) != shape
    ):
        raise ShapeError(
            f"layer_norm(): normalized_shape {shape} must be the trailing axes of the input, "
            f"whose shape is {input.shape}"
        )
    _check_floating("layer_norm", input)
    if weight is not None or bias is not None:
        _check_norm_dtypes("layer_norm", input, weight, bias)
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None and value.shape != shape:
            raise ShapeError(
                f"layer_norm(): {name} must have shape {shape} (normalized_shape), "
                f"got {value.shape}"
            )
    if input.dtype in _dtypes.half_floats and any(
        p is not None and p.dtype is _dtypes.float32 for p in (weight, bias)
    ):  # float32 parameters: in float32, rounded once to the input's dtype (PyTorch's)
        wide = _ops.layer_norm(
            _ops.astype(input, _dtypes.float32), weight, bias, ndim=len(shape), eps=eps
        )
        return _ops.astype(wide, input.dtype)
    return _ops.layer_norm(input, weight, bias, ndim=len(shape), eps=eps)


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Look up rows of ``weight`` (``(num_embeddings, dim)``) at the integer ``input``.

    Repeated indices accumulate their gradients; the row ``padding_idx`` (if
    given; negative counts from the end) receives none.

    Parameters
    ----------
    max_norm : float, optional
        Rows looked up whose ``norm_type``-norm exceeds it are first scaled
        down to it **in place** in ``weight`` (by ``max_norm / (norm + 1e-7)``,
        as PyTorch's), outside autograd.
    scale_grad_by_freq : bool
        Divide the gradient each use of a row sends by the number of uses of
        that row in ``input``.
    sparse : bool
        Accepted as PyTorch's; the gradient is dense (the same numbers): no
        plugrad optimizer takes sparse gradients.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> weight = plugrad.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    >>> F.embedding(plugrad.tensor([2, 1]), weight)
    tensor([[2., 2.],
            [1., 1.]])
    """
    _check_tensor("input", "embedding", input)
    if input.dtype.kind not in _INTEGER_KINDS:
        raise DtypeError(
            f"embedding(): indices must be integers, not {input.dtype.name}; "
            "convert with plugrad.astype(input, plugrad.int64)"
        )
    if _check_tensor("weight", "embedding", weight).ndim != 2:
        raise ShapeError(
            f"embedding(): weight must be (num_embeddings, embedding_dim), got {weight.shape}"
        )
    if padding_idx is not None:
        rows = weight.shape[0]
        if not -rows <= padding_idx < rows:
            raise InvalidArgumentError(
                f"embedding(): padding_idx must be within [-{rows}, {rows}), got {padding_idx}"
            )
        padding_idx %= rows
    if max_norm is not None and not (isinstance(max_norm, (int, float)) and max_norm > 0):
        raise InvalidArgumentError(
            f"embedding(): max_norm must be a positive number, got {max_norm!r}"
        )
    if not isinstance(norm_type, (int, float)) or isinstance(norm_type, bool):
        raise InvalidArgumentError(f"embedding(): norm_type must be a number, got {norm_type!r}")
    _check_indices(input, weight.shape[0])
    if max_norm is not None:
        _renorm_rows_(weight, input, float(max_norm), float(norm_type))
    return _ops.embedding(
        weight, input, padding_idx=padding_idx, scale_grad_by_freq=bool(scale_grad_by_freq)
    )


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """The sum, mean or max of the rows of ``weight`` looked up in each bag of ``input``.

    A 2-d ``input`` holds one bag per row; a 1-d one holds the bags one after
    the other, ``offsets`` giving where each starts (with
    ``include_last_offset``, one more, which must be the input's length, as
    PyTorch's documentation asks: the CSR layout). Entries equal to
    ``padding_idx`` are left out of their bag (and of its count for the mean);
    an empty bag gives zeros. ``per_sample_weights`` (``mode="sum"`` only)
    scales each row. As PyTorch's, with the gradients of the rows taken (with
    ``mode="max"``, the first entry of a bag holding a maximum takes its gradient).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> weight = plugrad.tensor([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]])
    >>> F.embedding_bag(plugrad.tensor([1, 2, 2, 0]), weight, plugrad.tensor([0, 3]))
    tensor([[2.3333, 3.3333],
            [0.0000, 0.0000]])
    """
    _check_tensor("input", "embedding_bag", input)
    if mode not in ("sum", "mean", "max"):
        raise InvalidArgumentError(
            f"embedding_bag(): mode must be 'sum', 'mean' or 'max', got {mode!r}"
        )
    if scale_grad_by_freq and mode == "max":
        raise InvalidArgumentError(
            "embedding_bag(): mode='max' takes no scale_grad_by_freq (a maximum's gradient "
            "goes to one row per bag, not by how often it occurs), as in PyTorch"
        )
    if per_sample_weights is not None and mode != "sum":
        raise InvalidArgumentError(
            f"embedding_bag(): per_sample_weights are taken with mode='sum' only, got {mode!r}"
        )
    if input.ndim == 2:
        if offsets is not None:
            raise InvalidArgumentError(
                "embedding_bag(): a 2-d input holds one bag per row, so offsets must be None"
            )
        bags, length = input.shape
        flat = _ops.reshape(input, (-1,))
        bag_of = arange(bags * length, device=input.device) // max(length, 1)
    elif input.ndim == 1:
        flat = input
        bag_of, bags = _bags_of(input, offsets, include_last_offset)
    else:
        raise ShapeError(f"embedding_bag(): input must be 1-d or 2-d, got {input.ndim} dimensions")
    if per_sample_weights is not None:
        if not isinstance(per_sample_weights, Tensor) or per_sample_weights.shape != input.shape:
            raise ShapeError(
                "embedding_bag(): per_sample_weights must be a Tensor of the input's shape "
                f"{input.shape}, got {getattr(per_sample_weights, 'shape', per_sample_weights)}"
            )
        per_sample_weights = _ops.reshape(per_sample_weights, (-1,))
    rows = embedding(flat, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)
    n, size = flat.shape[0], weight.shape[1]
    counted = ones((n,), dtype=weight.dtype, device=weight.device)
    if padding_idx is not None:
        counted = _ops.astype(flat != padding_idx % weight.shape[0], weight.dtype)
    counts = _ops.scatter_reduce(
        zeros((bags,), dtype=weight.dtype, device=weight.device), 0, bag_of, counted, "sum"
    )
    index = _ops.broadcast_to(_ops.reshape(bag_of, (n, 1)), (n, size))
    if mode == "max":
        kept = _ops.where(_ops.reshape(counted, (n, 1)) > 0, rows, -math.inf)
        with no_grad():
            start = full((bags, size), -math.inf, dtype=weight.dtype, device=weight.device)
            top = _ops.scatter_reduce(start, 0, index, kept, "amax")
            # The first entry of its bag holding the maximum takes the whole gradient, as in
            # PyTorch (amax would share it among tied rows).
            at_top = kept == _ops.take(top, bag_of, axis=0)
            position = _ops.broadcast_to(_ops.reshape(arange(n, device=input.device), (n, 1)),
                                         (n, size))  # fmt: skip
            candidates = _ops.where(at_top, position, n)
            first = full((bags, size), n, dtype=position.dtype, device=input.device)
            first = _ops.scatter_reduce(first, 0, index, candidates, "amin")
        padded = _ops.concat([rows, zeros((1, size), dtype=rows.dtype, device=rows.device)])
        out = _ops.take_along_axis(padded, first, axis=0)
        return _ops.where(_ops.reshape(counts, (bags, 1)) > 0, out, 0.0)
    scale = counted if per_sample_weights is None else counted * per_sample_weights
    start = zeros((bags, size), dtype=rows.dtype, device=weight.device)
    out = _ops.scatter_reduce(start, 0, index, rows * _ops.reshape(scale, (n, 1)), "sum")
    if mode == "mean":
        out = out / _ops.reshape(_ops.maximum(counts, 1.0), (bags, 1))
    return out


def _bags_of(
    input: Tensor, offsets: Tensor | None, include_last_offset: bool
) -> tuple[Tensor, int]:
    """The bag of each entry of a 1-d ``input`` whose bags start at ``offsets``, and how many
    bags there are (with ``include_last_offset`` the last offset is the input's length, where
    the last bag ends)."""
    if not isinstance(offsets, Tensor) or offsets.ndim != 1:
        raise InvalidArgumentError(
            "embedding_bag(): a 1-d input needs offsets, a 1-d Tensor of where each bag starts, "
            f"got {type(offsets).__name__ if not isinstance(offsets, Tensor) else offsets.shape}"
        )
    if offsets.dtype.kind not in _INTEGER_KINDS:
        raise DtypeError(f"embedding_bag(): offsets must be integers, got {offsets.dtype.name}")
    starts = offsets[:-1] if include_last_offset else offsets
    bags = starts.shape[0]
    values = [int(v) for v in offsets.tolist()]
    if values and (values[0] != 0 or values != sorted(values) or values[-1] > input.shape[0]):
        raise InvalidArgumentError(
            "embedding_bag(): offsets must start at 0, never decrease and not pass the input's "
            f"length {input.shape[0]}, got {values}"
        )
    if include_last_offset and values and values[-1] != input.shape[0]:
        # The last bag ran on to the input's end; PyTorch's forward stops it at the offset
        # and its backward gives other numbers: an input its documentation rules out.
        raise InvalidArgumentError(
            "embedding_bag(): with include_last_offset=True the last offset is the input's "
            f"length, {input.shape[0]} (where the last bag ends), got {values[-1]}; drop the "
            "entries after it from the input, or give that length"
        )
    positions = arange(input.shape[0], device=input.device)
    bag_of = _ops.searchsorted(_ops.astype(starts, positions.dtype), positions, side="right") - 1
    return bag_of, bags


def _renorm_rows_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> None:
    """Scale the rows of ``weight`` at ``indices`` whose norm exceeds ``max_norm`` down to it."""
    with no_grad():
        flat = _ops.reshape(indices, (-1,))
        rows = _ops.take(weight, flat, axis=0)
        norms = _ops.vector_norm(rows, ord=norm_type, axis=1, keepdims=True)
        scale = _ops.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        # A row used twice is written twice, with the same values.
        weight[flat] = rows * _ops.astype(scale, rows.dtype)


def _check_indices(indices: Tensor, rows: int) -> None:
    """Refuse embedding indices outside ``[0, rows)`` (one reduction)."""
    found = _ops.out_of_range(indices, low=0, high=rows)
    if not any_outside(found, f"embedding(): indices outside [0, {rows})"):
        return
    bad = _values_outside(indices, rows)
    raise IndexOutOfRangeError(
        f"embedding(): indices must lie in [0, {rows}) (the weight has {rows} rows), but "
        f"{len(bad)} of them do not, e.g. {bad[0]}; negative indices do not count from "
        "the end here"
    )


# -- convolution and pooling --------------------------------------------------------------


@_autocast.listed("nn.functional.conv2d")
def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | tuple[int, ...] = 1,
    padding: int | tuple[int, ...] | str = 0,
    dilation: int | tuple[int, ...] = 1,
    groups: int = 1,
) -> Tensor:
    """2-D convolution (cross-correlation) of ``(N, C, H, W)`` input with ``(O, C/groups, kh, kw)``.

    Parameters
    ----------
    input : Tensor
        ``(N, C, H, W)``, or ``(C, H, W)`` for a single image.
    weight : Tensor
        ``(O, C / groups, kh, kw)``.
    bias : Tensor, optional
        ``(O,)``.
    stride, dilation : int or (int, int)
    padding : int, (int, int), "valid" or "same"
        Zeros added on both sides; ``"same"`` (stride 1 only) keeps the size.
    groups : int
        Split the channels into that many independent convolutions.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x = plugrad.ones((1, 1, 3, 3))
    >>> F.conv2d(x, plugrad.ones((2, 1, 3, 3)), padding=1)[0, 0]
    tensor([[4., 6., 4.],
            [6., 9., 6.],
            [4., 6., 4.]])
    """
    return _convolution("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def _pooled_length(size: int, kernel: int, step: int, pad: int, dil: int, ceil_mode: bool) -> int:
    """The number of windows along an axis, as PyTorch counts them.

    With ``ceil_mode`` a last window may start past the last full one, clipped at the
    end, but not in the right padding: one window even where the padded input is
    shorter than the kernel.
    """
    reach = size + 2 * pad - dil * (kernel - 1) - 1 + (step - 1 if ceil_mode else 0)
    windows = reach // step + 1
    if ceil_mode and (windows - 1) * step >= size + pad:
        windows -= 1
    return windows


def _pool_arguments(
    function: str,
    input: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool = False,
    nd: int = 2,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The kernel, stride, padding and dilation of a pooling over the last ``nd`` (1 to 3)
    axes, checked as PyTorch's."""
    _check_spatial(function, _check_tensor("input", function, input), nd)

    def geometry(name: str, value: Any, minimum: int) -> tuple[int, ...]:
        if nd == 2:
            return _pool_pair(function, name, value, minimum)
        return _ntuple(function, name, value, nd, minimum, one_for_all=True)

    kernel = geometry("kernel_size", kernel_size, 1)
    no_stride = stride is None or (isinstance(stride, tuple | list) and not stride)
    step = kernel if no_stride else geometry("stride", stride, 1)
    pad = geometry("padding", padding, 0)
    dil = geometry("dilation", dilation, 1)
    # PyTorch's bound, of the kernel without its dilation (a 1-d pooling's sizes as ints)
    if any(p > k // 2 for p, k in zip(pad, kernel)):
        raise InvalidArgumentError(
            f"{function}(): padding {pad if nd > 1 else pad[0]} must be at most half the "
            f"kernel size {kernel if nd > 1 else kernel[0]}, as in PyTorch"
        )
    spatial = tuple(input.shape[-nd:])
    for size, p, k, st, d in zip(spatial, pad, kernel, step, dil):
        if _pooled_length(size, k, st, p, d, ceil_mode) < 1:
            too_small = (
                f"the padded input {spatial} is smaller than the kernel {kernel}"
                if nd > 1
                else f"the padded input length ({size} + 2 * {p}) is smaller than the kernel "
                f"({d * (k - 1) + 1})"
            )
            raise ShapeError(f"{function}(): {too_small}")
    return kernel, step, pad, dil


def max_pool2d(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    dilation: IntPair = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over each window of the last two axes; gradients flow to the maxima only.

    ``stride`` defaults to ``kernel_size``. With ``return_indices`` also returns,
    as PyTorch does, the flat index (``row * W + column``) of each maximum in
    its input plane.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x = plugrad.reshape(plugrad.arange(16.0), (1, 1, 4, 4))
    >>> F.max_pool2d(x, 2)
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    >>> F.max_pool2d(x, 2, return_indices=True)[1]
    tensor([[[[ 5,  7],
              [13, 15]]]])
    """
    kernel, step, pad, dil = _pool_arguments(
        "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode
    )
    values, offsets = _ops.max_pool2d(
        input, kernel_size=kernel, stride=step, padding=pad, dilation=dil, ceil_mode=ceil_mode
    )
    if not return_indices:
        return values
    with no_grad():
        # The offset inside each window, as the flat position in the input plane.
        oh, ow = values.shape[-2:]
        device = input.device
        rows = _ops.reshape(arange(oh, device=device) * step[0] - pad[0], (oh, 1))
        cols = _ops.reshape(arange(ow, device=device) * step[1] - pad[1], (1, ow))
        rows = rows + (offsets // kernel[1]) * dil[0]
        cols = cols + (offsets % kernel[1]) * dil[1]
        flat = rows * input.shape[-1] + cols
    return values, flat


def adaptive_avg_pool2d(input: Tensor, output_size: int | tuple[int | None, int | None]) -> Tensor:
    """Mean over windows of the last two axes chosen to give ``output_size``.

    Output row ``i`` of ``n`` averages the input rows from ``floor(i * H / n)``
    to ``ceil((i + 1) * H / n)`` (windows may overlap when ``H`` is not a
    multiple of ``n``), and likewise for columns, as in PyTorch. An
    ``output_size`` of ``None`` keeps that axis's size.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.adaptive_avg_pool2d(plugrad.arange(16.0).reshape(1, 4, 4), 2)
    tensor([[[ 2.5000,  4.5000],
             [10.5000, 12.5000]]])
    """
    rows, columns = _output_sizes("adaptive_avg_pool2d", input, output_size, 2)
    if not rows or not columns:
        return cast("Tensor", _empty_pooled(input, (rows, columns)))
    height, width = input.shape[-2:]
    if height % rows == 0 and width % columns == 0:  # equal windows side by side: one mean
        shape = (*input.shape[:-2], rows, height // rows, columns, width // columns)
        return _ops.mean(_ops.reshape(input, shape), axis=(-3, -1))

    def bounds(i: int, n: int, length: int) -> tuple[int, int]:
        return (i * length) // n, -((-(i + 1) * length) // n)

    pooled_rows = []
    for i in range(rows):
        top, bottom = bounds(i, rows, height)
        band = input[..., top:bottom, :]
        cells = []
        for j in range(columns):
            left, right = bounds(j, columns, width)
            cells.append(_ops.mean(band[..., left:right], axis=(-2, -1)))
        pooled_rows.append(_ops.stack(cells, axis=-1))
    return _ops.stack(pooled_rows, axis=-2)


def _check_divisor(function: str, divisor_override: Any) -> None:
    if divisor_override is not None and (
        isinstance(divisor_override, bool)
        or not isinstance(divisor_override, int)
        or divisor_override <= 0
    ):
        raise InvalidArgumentError(
            f"{function}(): divisor_override must be a positive int, got {divisor_override!r}"
        )


def _integer_means(pool: Callable[..., Tensor], input: Tensor, *arguments: Any) -> Tensor:
    """``pool`` of an integer ``input`` as PyTorch's: the sums exact in double precision
    (a library may divide floats only), divided with truncation toward zero."""
    wide = _dtypes.float64 if _dtypes.float64 in input.device.dtypes else _dtypes.float32
    return _ops.astype(_ops.trunc(pool(_ops.astype(input, wide), *arguments)), input.dtype)


def avg_pool2d(
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """Mean over each window of the last two axes.

    ``stride`` defaults to ``kernel_size``; ``count_include_pad`` counts the
    padding zeros in the mean; ``divisor_override`` replaces the count.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.avg_pool2d(plugrad.ones((1, 1, 2, 2)), 2, padding=1)
    tensor([[[[0.2500, 0.2500],
              [0.2500, 0.2500]]]])
    >>> F.avg_pool2d(plugrad.ones((1, 1, 2, 2)), 2, padding=1, count_include_pad=False)
    tensor([[[[1., 1.],
              [1., 1.]]]])
    """
    kernel, step, pad, _ = _pool_arguments(
        "avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode
    )
    _check_divisor("avg_pool2d", divisor_override)
    if input.dtype.kind in _INTEGER_KINDS:
        return _integer_means(
            avg_pool2d, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
            divisor_override,
        )  # fmt: skip
    out = _ops.avg_pool2d(
        input,
        kernel_size=kernel,
        stride=step,
        padding=pad,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
        divisor_override=divisor_override,
    )
    return out


# -- padding, one-hot ---------------------------------------------------------------------


def _source_positions(mode: str, length: int, before: int, after: int) -> list[int]:
    """Which input position each output position along a padded axis copies."""
    positions = range(-before, length + after)
    if mode == "replicate":
        return [min(max(i, 0), length - 1) for i in positions]
    if mode == "circular":
        return [i % length for i in positions]
    # reflect: mirrored about the edge elements, which are not repeated
    return [-i if i < 0 else 2 * (length - 1) - i if i >= length else i for i in positions]


@_autocast.listed("nn.functional.pad")
def pad(
    input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None
) -> Tensor:
    """Pad the last ``len(pad) // 2`` axes: ``pad = (last_before, last_after, ...)``.

    ``mode="constant"`` fills with ``value`` (None: 0); ``"reflect"`` mirrors the tensor
    about its edge elements, ``"replicate"`` repeats the edge elements and
    ``"circular"`` wraps around (what is left after cropping). A negative amount
    crops, in every mode. The padded values of the last three copy input
    elements, so their gradients add up there.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.pad(plugrad.tensor([[1.0, 2.0]]), (1, 2), value=9.0)
    tensor([[9., 1., 2., 9., 9.]])
    >>> F.pad(plugrad.tensor([[1.0, 2.0, 3.0]]), (2, 1), mode="reflect")
    tensor([[3., 2., 1., 2., 3., 2.]])
    """
    _check_tensor("input", "pad", input)
    modes = ("constant", "reflect", "replicate", "circular")
    if mode not in modes:
        raise ArgumentError(f"pad(): mode must be one of {modes}, got {mode!r}")
    try:  # NumPy's integers and 0-d integer tensors count as ints, as in PyTorch
        amounts = tuple(operator.index(a) for a in pad if not isinstance(a, bool))
    except TypeError:
        amounts = ()
    if len(amounts) != len(pad) or len(amounts) % 2 or len(amounts) // 2 > input.ndim:
        raise ArgumentError(
            f"pad(): pad must hold an even number of ints, two per padded axis and at most "
            f"{2 * input.ndim} for a {input.ndim}-d input, got {pad!r}"
        )
    if value is None:
        value = 0
    value = _number("pad", "value", value)
    if mode != "constant" and value != 0:
        raise ArgumentError(
            f"pad(): mode={mode!r} copies input elements and takes no fill value, got "
            f"value={value!r}; drop value, or use mode='constant'"
        )
    out, copied = input, False
    for i in range(len(amounts) // 2):
        axis = input.ndim - 1 - i
        before, after = amounts[2 * i], amounts[2 * i + 1]
        length = out_length = out.shape[axis]
        if mode != "constant":
            if mode == "circular" and min(before, after) < 0:
                # A negative amount crops first and the rest wraps what is left (PyTorch's).
                start, stop = max(-before, 0), length - max(-after, 0)
                out = out[(slice(None),) * axis + (slice(start, min(max(stop, start), length)),)]
                length, before, after = max(stop - start, 0), max(before, 0), max(after, 0)
            # Reflect and replicate read positions of the whole axis (a negative amount crops).
            limit = length - 1 if mode == "reflect" else length if mode == "circular" else None
            if (
                length < 1
                or (limit is not None and max(before, after) > limit)
                or length + before + after < 1
            ):
                most = "" if limit is None else f"by at most {limit} on each side "
                cropped = f" ({length} after cropping)" if length != out_length else ""
                raise ArgumentError(
                    f"pad(): mode={mode!r} pads axis {axis} of length {out_length}{cropped} "
                    f"{most}only where it holds elements, and crops (a negative amount) less "
                    f"than all of it; got {amounts[2 * i]} and {amounts[2 * i + 1]}"
                )
            if before or after:
                positions = _source_positions(mode, length, before, after)
                index = asarray(positions, dtype=out.device.default_int_dtype, device=out.device)
                out, copied = _ops.take(out, index, axis=axis), True
            continue
        start, stop = max(-before, 0), length - max(-after, 0)
        if start or stop != length:
            if stop < start:
                raise ArgumentError(
                    f"pad(): cropping {-before} and {-after} from axis {axis} of length "
                    f"{length} leaves nothing"
                )
            out = out[(slice(None),) * axis + (slice(start, stop),)]
        pieces = []
        for amount in (before, after):
            shape = tuple(amount if d == axis else n for d, n in enumerate(out.shape))
            pieces.append(
                full(shape, value, dtype=out.dtype, device=out.device) if amount > 0 else None
            )
        joined = [p for p in (pieces[0], out, pieces[1]) if p is not None]
        if len(joined) > 1:
            out, copied = _ops.concat(joined, axis=axis), True
    # New memory, as PyTorch's: padding by nothing (or only cropping) would give a view.
    return out if copied else out.clone()


def one_hot(input: Tensor, num_classes: int = -1) -> Tensor:
    """An ``int64`` tensor with a trailing axis of ``num_classes``: 1 at each index, else 0.

    ``num_classes=-1`` takes one more than the largest index.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.one_hot(plugrad.tensor([0, 2]), 3)
    tensor([[1, 0, 0],
            [0, 0, 1]])
    """
    num_classes = _number("one_hot", "num_classes", num_classes)
    if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral):
        # 3.0 was taken as 3, and 3.5 made classes 0..3 (arange of a float).
        raise ArgumentError(
            f"one_hot(): num_classes must be an int, got {type(num_classes).__name__} "
            f"{num_classes!r}"
        )
    num_classes = int(num_classes)  # (a NumPy integer too: some namespaces take ints only)
    _check_tensor("input", "one_hot", input)
    if input.dtype.kind not in _INTEGER_KINDS:
        raise DtypeError(f"one_hot(): takes an integer input of class indices, got {input.dtype}")
    if num_classes == -1:  # (the shape depends on the values: a graph break under compile)
        if not input.size:
            raise ShapeError(
                "one_hot(): an empty tensor has no largest index to count the classes from; "
                "give num_classes"
            )
        num_classes = int(_ops.max(input)) + 1
    # One reduction, which a compiled plan makes again at every replay.
    found = _ops.out_of_range(input, low=0, high=num_classes, allowed=None)
    if input.size and any_outside(found, f"one_hot(): class indices outside [0, {num_classes})"):
        bad = _values_outside(input, num_classes)
        raise IndexOutOfRangeError(
            f"one_hot(): class indices must lie in [0, {num_classes}), got {bad}"
        )
    classes = arange(num_classes, dtype=input.dtype, device=input.device)
    return _ops.astype(_ops.expand_dims(input, axis=-1) == classes, input.device.default_int_dtype)


# -- more activations: softmin, softsign, logsigmoid, the shrinks, prelu, glu -------------


def _checked_dim(function: str, dim: Any, ndim: int) -> int:
    """``dim`` as an axis in ``0..ndim-1`` (negative counts from the end), or an AxisError."""
    if type(dim) is not int:
        dim = as_int(dim)  # (a NumPy integer, a 0-d integer tensor)
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise ArgumentError(f"{function}(): dim must be an int, got {dim!r}")
    if not -ndim <= dim < ndim:
        valid = f"give one in [{-ndim}, {ndim - 1}]" if ndim else "a 0-d tensor has none"
        raise AxisError(
            f"{function}(): dim {dim} is out of range for a tensor of {ndim} dimension(s); {valid}"
        )
    return dim % ndim


def _broadcast_shape(function: str, *tensors: Tensor) -> tuple[int, ...]:
    """The shape the tensors broadcast to, or a ShapeError naming ``function`` and their shapes."""
    shapes = [tensor.shape for tensor in tensors]
    ndim = max(len(shape) for shape in shapes)
    out = []
    for axis in range(ndim):
        sizes = {
            shape[axis - ndim + len(shape)] for shape in shapes if axis - ndim + len(shape) >= 0
        }
        sizes.discard(1)
        if len(sizes) > 1:
            raise ShapeError(
                f"{function}(): shapes {', '.join(str(shape) for shape in shapes)} do not "
                "broadcast together"
            )
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _clamp_min_zero(value: Tensor) -> Tensor:
    """``max(value, 0)`` with PyTorch's ``clamp_min`` gradient: 1 where ``value >= 0``; NaN
    stays NaN (its gradient 0), as there: the hinge losses gave 0 for a NaN input."""
    clamped = _ops.where(value >= 0, value, 0.0)
    return _ops.where(_ops.isnan(value), value.detach(), clamped)


def softmin(
    input: Tensor,
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype: _dtypes.DType | None = None,
    *,
    axis: int | None = None,
) -> Tensor:
    """Softmax of ``-input`` along ``dim``: the smallest values get the largest weights.

    As for :func:`softmax`, ``dim`` (or ``axis=``) is required.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.softmin(plugrad.tensor([1.0, 2.0]), dim=0)
    tensor([0.7311, 0.2689])
    """
    _check_tensor("input", "softmin", input)
    dtype = _dtype_or_stacklevel("softmin", _stacklevel, dtype)
    return _ops.softmax(-_floating(input, dtype, "softmin"), axis=_dim("softmin", dim, axis))


def softsign(input: Tensor) -> Tensor:
    """``input / (1 + |input|)``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.softsign(plugrad.tensor([-3.0, 1.0]))
    tensor([-0.7500,  0.5000])
    """
    _check_tensor("input", "softsign", input)
    return input / (_ops.abs(input) + 1.0)


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(input))``, computed without overflow as ``-log(1 + exp(-input))``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.logsigmoid(plugrad.tensor([-200.0, 0.0, 200.0]))
    tensor([-200.0000,   -0.6931,    0.0000])
    """
    _check_tensor("input", "logsigmoid", input)
    return 0.0 - _ops.logaddexp(-input, 0.0)  # 0.0 - : a positive zero at large inputs


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``input - lambd`` above ``lambd``, ``input + lambd`` below ``-lambd``, 0 between.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.softshrink(plugrad.tensor([-2.0, 0.3, 1.0]))
    tensor([-1.5000,  0.0000,  0.5000])
    """
    _check_tensor("input", "softshrink", input)
    if lambd < 0:
        raise InvalidArgumentError(f"softshrink(): lambd must be >= 0, got {lambd!r}")
    # NaN (on neither side of a bound) is not between them: kept, gradient passing, as in PyTorch.
    inside = _ops.logical_and(input >= -lambd, input <= lambd)
    return _ops.where(inside, 0.0, _ops.where(input > lambd, input - lambd, input + lambd))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``input`` where ``|input| > lambd``, else 0.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.hardshrink(plugrad.tensor([-2.0, 0.3, 1.0]))
    tensor([-2.,  0.,  1.])
    """
    _check_tensor("input", "hardshrink", input)
    inside = _ops.logical_and(input >= -lambd, input <= lambd)
    return _ops.where(inside, 0.0, input)


def tanhshrink(input: Tensor) -> Tensor:
    """``input - tanh(input)``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.tanhshrink(plugrad.tensor([0.0, 1.0]))
    tensor([0.0000, 0.2384])
    """
    _check_tensor("input", "tanhshrink", input)
    return input - _ops.tanh(input)


@_autocast.listed("nn.functional.prelu")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``input`` where positive, else ``weight * input``, with a learned slope per channel.

    Parameters
    ----------
    input : Tensor
        Channels along dim 1 (a tensor of fewer than 2 dims has one channel).
    weight : Tensor
        One slope (``()`` or ``(1,)``), or one per channel (``(C,)``).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.prelu(plugrad.tensor([[-1.0, -1.0], [2.0, -2.0]]), plugrad.tensor([0.1, 0.5]))
    tensor([[-0.1000, -0.5000],
            [ 2.0000, -1.0000]])
    """
    _check_tensor("input", "prelu", input)
    _check_tensor("weight", "prelu", weight)
    _check_same_dtype("prelu", input, weight, None)
    if weight.ndim > 1:
        raise ShapeError(f"prelu(): weight must be 0-d or 1-d, got shape {weight.shape}")
    count = weight.shape[0] if weight.ndim else 1
    if count == 1:
        weight = _ops.reshape(weight, ())
    else:
        channels = input.shape[1] if input.ndim >= 2 else 1
        if input.ndim == 0 or channels != count:
            raise ShapeError(
                f"prelu(): the weight has {count} slopes but the input {input.shape} has "
                f"{channels if input.ndim else 'no'} channel(s) along dim 1; give one slope "
                "or one per channel"
            )
        if input.ndim > 2:
            weight = _ops.reshape(weight, (count,) + (1,) * (input.ndim - 2))
    return _ops.where(input > 0, input, weight * input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit ``a * sigmoid(b)``: ``a``, ``b`` the two halves of ``input`` along ``dim``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.glu(plugrad.tensor([[1.0, 2.0, 0.0, 100.0]]))
    tensor([[0.5000, 2.0000]])
    """
    _check_tensor("input", "glu", input)
    if input.ndim == 0:
        raise ShapeError("glu(): a 0-d tensor has no dim to halve")
    axis = _checked_dim("glu", dim, input.ndim)
    size = input.shape[axis]
    if size % 2:
        raise ShapeError(
            f"glu(): the halved dim must have an even size, but dim {dim} of {input.shape} "
            f"has size {size}"
        )
    before = (slice(None),) * axis
    first_half, second_half = (*before, slice(0, size // 2)), (*before, slice(size // 2, None))
    if input.dtype in _dtypes.half_floats:  # (its gradient g * a overflowed float16)
        return _rounded_once(lambda wide: glu(wide, dim), input)
    return input[first_half] * _ops.sigmoid(input[second_half])


# -- distances ----------------------------------------------------------------------------


def normalize(
    input: Tensor, p: float = 2.0, dim: int | Sequence[int] = 1, eps: float = 1e-12
) -> Tensor:
    """``input`` divided by its ``p``-norm along ``dim``, the norm clamped at ``eps`` from below.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.normalize(plugrad.tensor([[3.0, 4.0], [0.0, 0.0]]))
    tensor([[0.6000, 0.8000],
            [0.0000, 0.0000]])
    >>> F.normalize(plugrad.tensor([[3.0, 4.0]]), p=1, dim=-1)
    tensor([[0.4286, 0.5714]])
    """
    p = _number("normalize", "p", p)
    eps = _number("normalize", "eps", eps)
    _check_tensor("input", "normalize", input)
    dim = _int_or_itself(dim)
    dims = (dim,) if isinstance(dim, int) else tuple(map(_int_or_itself, dim))
    axes = tuple(_checked_dim("normalize", d, max(input.ndim, 1)) for d in dims)
    if input.ndim == 0:  # one element along dim 0 (or -1), as PyTorch takes a 0-d tensor
        return _ops.reshape(normalize(_ops.reshape(input, (1,)), p, 0, eps), ())
    norm = _ops.vector_norm(input, ord=p, axis=axes, keepdims=True)
    return input / _ops.clip(norm, min=eps)


def _clamped_norm(x: Tensor, axis: int, eps: float) -> Tensor:
    norm = _ops.vector_norm(x, axis=axis, keepdims=True)
    # NOTE: clamped at eps in value only: the gradient is the unclamped norm's, as in PyTorch
    # (which clamps in place under no_grad).
    return _ops.where(norm < eps, (norm - norm.detach()) + eps, norm)


@_autocast.listed("nn.functional.cosine_similarity")
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (they broadcast).

    Each is divided by its norm, clamped at ``eps`` from below, before the dot
    product, so the result lies in ``[-1, 1]``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> a = plugrad.tensor([[1.0, 0.0], [1.0, 1.0]])
    >>> F.cosine_similarity(a, plugrad.tensor([[1.0, 1.0]]))
    tensor([0.7071, 1.0000])
    """
    _check_tensor("x1", "cosine_similarity", x1)
    _check_tensor("x2", "cosine_similarity", x2)
    _refuse_complex("cosine_similarity", x1, x2)  # (x1 * x2 without a conjugate: no cosine)
    shape = _broadcast_shape("cosine_similarity", x1, x2)
    axis = _checked_dim("cosine_similarity", dim, max(len(shape), 1))
    if not shape:  # one element along dim 0 (or -1), as PyTorch takes 0-d tensors
        x1, x2 = _ops.reshape(x1, (1,)), _ops.reshape(x2, (1,))
        shape = (1,)
    x1, x2 = (x if x.shape == shape else _ops.broadcast_to(x, shape) for x in (x1, x2))
    # In the dtype the two compute in, as PyTorch's (an int64 operand made the norm float64).
    common = result_type(x1, x2)
    if not _dtypes.is_differentiable(common):
        common = _dtypes.default_float_dtype
    x1, x2 = (x if x.dtype is common else _ops.astype(x, common) for x in (x1, x2))
    unit1, unit2 = x1 / _clamped_norm(x1, axis, eps), x2 / _clamped_norm(x2, axis, eps)
    return _ops.sum(unit1 * unit2, axis=axis)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dim (they broadcast).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.pairwise_distance(plugrad.tensor([[0.0, 0.0]]), plugrad.tensor([[3.0, 4.0]]))
    tensor([5.0000])
    """
    _check_tensor("x1", "pairwise_distance", x1)
    _check_tensor("x2", "pairwise_distance", x2)
    _broadcast_shape("pairwise_distance", x1, x2)
    difference = x1 - x2 + eps
    if difference.ndim == 0:
        difference = _ops.reshape(difference, (1,))
        keepdim = False
    return _ops.vector_norm(difference, ord=p, axis=-1, keepdims=keepdim)


@_autocast.listed("nn.functional.pdist")
def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The ``p``-norm distances between the rows of ``input`` (N, M), each pair once.

    Row pairs ``(i, j)`` with ``i < j`` in order: ``N * (N - 1) / 2``
    distances (the upper triangle of the distance matrix, row by row), as
    PyTorch's and SciPy's condensed form.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.pdist(plugrad.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]]))
    tensor([ 5., 10.,  5.])
    """
    if _check_tensor("input", "pdist", input).ndim != 2:
        raise ShapeError(f"pdist(): input must be 2-d (N, M), got shape {input.shape}")
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not p >= 0:
        raise InvalidArgumentError(f"pdist(): p must be a non-negative number, got {p!r}")
    if input.dtype.kind != "real floating":
        raise DtypeError(f"pdist(): input must be real floating, got {input.dtype.name}")
    rows = input.shape[0]
    first = [i for i in range(rows) for _ in range(i + 1, rows)]
    second = [j for i in range(rows) for j in range(i + 1, rows)]
    device = input.device
    int64 = device.default_int_dtype
    difference = _ops.take(input, asarray(first, device=device, dtype=int64), axis=0) - _ops.take(
        input, asarray(second, device=device, dtype=int64), axis=0
    )
    return _ops.vector_norm(difference, ord=p, axis=-1)


# -- more losses --------------------------------------------------------------------------


@_autocast.listed("nn.functional.huber_loss")
@accepts_legacy_reduction
def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """``0.5 * d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)``.

    ``d`` is ``input - target``.

    ``weight``, of the input's shape, multiplies the loss of each element.
    With ``delta=1`` it is :func:`smooth_l1_loss`.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.huber_loss(plugrad.tensor([0.5, 3.0]), plugrad.tensor([0.0, 0.0]), "none", delta=2.0)
    tensor([0.1250, 4.0000])
    """
    _check_reduction("huber_loss", reduction)
    _refuse_complex("huber_loss", input, target)
    _same_shape("huber_loss", input, target)
    if delta <= 0:
        raise InvalidArgumentError(f"huber_loss(): delta must be > 0, got {delta!r}")
    _check_element_weight("huber_loss", weight, input)
    difference = input - _as_input_dtype(target, input)
    distance = _ops.abs(difference)
    # NOTE: the square is of the masked difference, so its gradient is 0 where |d| >= delta.
    near = _ops.where(distance < delta, difference, 0.0)
    loss = _ops.where(distance < delta, 0.5 * (near * near), delta * (distance - 0.5 * delta))
    return _reduce(loss if weight is None else loss * weight, reduction)


@_autocast.listed("nn.functional.kl_div")
def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """Kullback-Leibler divergence of ``target`` from ``input``, given as log-probabilities.

    Elementwise ``target * (log(target) - input)`` (0 where ``target`` is 0), or
    with ``log_target`` (``target`` as log-probabilities too)
    ``exp(target) * (target - input)``. ``reduction="batchmean"`` divides the sum
    by the batch size ``input.shape[0]``: the KL divergence of each sample,
    averaged; ``"mean"`` divides by the number of elements.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> log_p = plugrad.log(plugrad.tensor([[0.5, 0.5]]))
    >>> F.kl_div(log_p, plugrad.tensor([[0.9, 0.1]]), reduction="batchmean")
    tensor(0.3681)
    """
    if size_average is not None or reduce is not None:
        # As PyTorch's: the deprecated pair sets the reduction, and "batchmean" still
        # divides what it gives by the batch size.
        legacy = legacy_reduction("kl_div", size_average, reduce)
        loss = kl_div(input, target, reduction=legacy, log_target=log_target)
        return loss / input.shape[0] if reduction == "batchmean" and input.ndim else loss
    if reduction not in (*_REDUCTIONS, "batchmean"):
        raise InvalidArgumentError(
            f"kl_div(): reduction must be 'mean', 'sum', 'none' or 'batchmean', got {reduction!r}"
        )
    _check_tensor("input", "kl_div", input)
    _check_tensor("target", "kl_div", target)
    _broadcast_shape("kl_div", input, target)
    if log_target:
        loss = _ops.exp(target) * (target - input)
    else:
        loss = _ops.xlogy(target, target) - target * input
    if reduction == "batchmean":
        total = _ops.sum(loss)
        return total / input.shape[0] if input.ndim else total
    return _reduce(loss, reduction)


@_autocast.listed("nn.functional.margin_ranking_loss")
@accepts_legacy_reduction(after="margin")
def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: str = "mean"
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``: ``target`` 1 ranks ``input1`` higher.

    The three tensors have the same number of dims and broadcast.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x1, x2 = plugrad.tensor([1.0, 3.0]), plugrad.tensor([2.0, 1.0])
    >>> F.margin_ranking_loss(x1, x2, plugrad.tensor([1.0, 1.0]), reduction="none")
    tensor([1., 0.])
    """
    _check_loss("margin_ranking_loss", reduction, input1=input1, input2=input2, target=target)
    if not input1.ndim == input2.ndim == target.ndim:
        raise ShapeError(
            "margin_ranking_loss(): input1, input2 and target must have the same number of dims, "
            f"got shapes {input1.shape}, {input2.shape} and {target.shape}"
        )
    _broadcast_shape("margin_ranking_loss", input1, input2, target)
    return _reduce(_clamp_min_zero(-target * (input1 - input2) + margin), reduction)


@_autocast.listed("nn.functional.hinge_embedding_loss")
@accepts_legacy_reduction(after="margin")
def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, reduction: str = "mean"
) -> Tensor:
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1.

    ``input`` is usually a distance, ``target`` says whether the pair is alike (1)
    or not (-1).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> distance, target = plugrad.tensor([0.3, 0.3]), plugrad.tensor([1.0, -1.0])
    >>> F.hinge_embedding_loss(distance, target, reduction="none")
    tensor([0.3000, 0.7000])
    """
    _check_loss("hinge_embedding_loss", reduction, input=input, target=target)
    _broadcast_shape("hinge_embedding_loss", input, target)
    # As in PyTorch, a target that is neither 1 nor -1 takes both terms.
    apart = _ops.where(target != 1, _clamp_min_zero(margin - input), 0.0)
    alike = _ops.where(target != -1, input, 0.0)
    return _reduce(apart + alike, reduction)


@_autocast.listed("nn.functional.soft_margin_loss")
@accepts_legacy_reduction(after="target")
def soft_margin_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-target * input))``, ``target`` 1 or -1.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x, y = plugrad.tensor([0.0, 2.0]), plugrad.tensor([1.0, -1.0])
    >>> F.soft_margin_loss(x, y, reduction="none")
    tensor([0.6931, 2.1269])
    """
    _check_reduction("soft_margin_loss", reduction)
    _same_shape("soft_margin_loss", input, target)
    target = _as_input_dtype(target, input)
    return _reduce(_ops.logaddexp(-target * input, 0.0), reduction)


@_autocast.listed("nn.functional.cosine_embedding_loss")
@accepts_legacy_reduction(after="margin")
def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: str = "mean"
) -> Tensor:
    """``1 - cos(input1, input2)`` where ``target`` is 1, ``max(0, cos - margin)`` where it is -1.

    ``input1`` and ``input2`` are ``(N, D)`` with a ``(N,)`` target, or ``(D,)``
    with a 0-d one; the cosine is taken along ``D``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> a, b = plugrad.tensor([[1.0, 0.0], [1.0, 0.0]]), plugrad.tensor([[1.0, 1.0], [1.0, 1.0]])
    >>> F.cosine_embedding_loss(a, b, plugrad.tensor([1.0, -1.0]), reduction="none")
    tensor([0.2929, 0.7071])
    """
    _check_loss("cosine_embedding_loss", reduction, input1=input1, input2=input2, target=target)
    if target.ndim not in (0, 1) or not input1.ndim == input2.ndim == target.ndim + 1:
        raise ShapeError(
            "cosine_embedding_loss(): takes (N, D) inputs with an (N,) target, or (D,) inputs "
            f"with a 0-d one; got shapes {input1.shape}, {input2.shape} and {target.shape}"
        )
    axis = target.ndim
    _broadcast_shape("cosine_embedding_loss", input1, input2)
    products = _ops.sum(input1 * input2, axis=axis)
    squares1 = _ops.sum(input1 * input1, axis=axis) + 1e-12
    squares2 = _ops.sum(input2 * input2, axis=axis) + 1e-12
    cosine = products / _ops.sqrt(squares1 * squares2)
    alike = _ops.where(target == 1, 1.0 - cosine, 0.0)
    apart = _ops.where(target == -1, _clamp_min_zero(cosine - margin), 0.0)
    return _reduce(alike + apart, reduction)


def _triplet_loss(
    function: str,
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    distance: Callable[[Tensor, Tensor], Tensor],
    margin: float,
    swap: bool,
    reduction: str,
) -> Tensor:
    """``max(0, margin + distance(anchor, positive) - distance(anchor, negative))``, checked."""
    _check_loss(function, reduction, anchor=anchor, positive=positive, negative=negative)
    if margin <= 0:
        raise InvalidArgumentError(f"{function}(): margin must be > 0, got {margin!r}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise ShapeError(
            f"{function}(): anchor, positive and negative must have the same number of dims, "
            f"got shapes {anchor.shape}, {positive.shape} and {negative.shape}"
        )
    to_positive = distance(anchor, positive)
    to_negative = distance(anchor, negative)
    if swap:
        to_negative = _ops.minimum(to_negative, distance(positive, negative))
    return _reduce(_clamp_min_zero(margin + to_positive - to_negative), reduction)


@_autocast.listed("nn.functional.triplet_margin_loss")
@accepts_legacy_reduction(after="swap")
def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))``.

    ``d`` is :func:`pairwise_distance` (with ``p`` and ``eps``).

    With ``swap`` the negative distance is the smaller of ``d(anchor, negative)``
    and ``d(positive, negative)``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> a, pos = plugrad.zeros((1, 2)), plugrad.tensor([[0.0, 1.0]])
    >>> neg = plugrad.tensor([[0.0, 1.5]])
    >>> F.triplet_margin_loss(a, pos, neg)
    tensor(0.5000)
    """
    return _triplet_loss(
        "triplet_margin_loss", anchor, positive, negative,
        lambda x1, x2: pairwise_distance(x1, x2, p, eps), margin, swap, reduction,
    )  # fmt: skip


@accepts_legacy_reduction
def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """:func:`triplet_margin_loss` with a distance of one's own (:func:`pairwise_distance` if None).

    ``distance_function(x1, x2)`` returns the distances of paired rows; it
    must be differentiable (plugrad ops) for the loss to be.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> a, pos = plugrad.zeros((1, 2)), plugrad.tensor([[0.0, 1.0]])
    >>> neg = plugrad.tensor([[0.0, 1.5]])
    >>> manhattan = lambda x, y: (x - y).abs().sum(-1)
    >>> F.triplet_margin_with_distance_loss(a, pos, neg, distance_function=manhattan)
    tensor(0.5000)
    """
    distance = pairwise_distance if distance_function is None else distance_function
    return _triplet_loss(
        "triplet_margin_with_distance_loss", anchor, positive, negative, distance, margin, swap,
        reduction,
    )  # fmt: skip


@_autocast.listed("nn.functional.multilabel_margin_loss")
@accepts_legacy_reduction(after="target")
def multilabel_margin_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss: each target class above each other class by a margin of 1.

    ``target`` (the input's shape, integers) lists each sample's classes,
    ended by the first ``-1`` (what follows it is ignored). A sample's loss is
    ``sum(max(0, 1 - (x[y] - x[i]))) / C`` over its target classes ``y`` and
    the classes ``i`` that are not targets.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x = plugrad.tensor([[0.1, 0.2, 0.4, 0.8]])
    >>> F.multilabel_margin_loss(x, plugrad.tensor([[3, 0, -1, 1]]))
    tensor(0.8500)
    """
    function = "multilabel_margin_loss"
    _check_loss(function, reduction, input=input, target=target)
    if input.ndim not in (1, 2) or target.shape != input.shape or input.shape[-1] == 0:
        raise ShapeError(
            f"{function}(): input must be non-empty (C,) or (N, C) and target of its shape, "
            f"got {input.shape} and {target.shape}"
        )
    if target.dtype.kind not in _INTEGER_KINDS:
        raise DtypeError(f"{function}(): target must hold integer classes, got {target.dtype}")
    classes = input.shape[-1]
    found = _ops.out_of_range(target, low=-1, high=classes)
    if any_outside(found, f"{function}(): targets outside [-1, {classes})"):
        raise IndexOutOfRangeError(
            f"{function}(): targets must be classes in [0, {classes}) or -1 (which ends a "
            "sample's list)"
        )
    scores = _ops.reshape(input, (-1, classes))
    labels = _ops.reshape(_ops.astype(target, target.device.default_int_dtype), (-1, classes))
    # The listed positions: those before the first -1 of each row.
    listed = _ops.cumulative_prod(_ops.astype(labels >= 0, labels.dtype), axis=1) > 0
    chosen = _ops.where(listed, labels, 0)
    positions = arange(classes, dtype=labels.dtype, device=input.device)
    is_target = _ops.any(
        _ops.logical_and(listed[:, :, None], chosen[:, :, None] == positions), axis=1
    )
    target_scores = _ops.take_along_axis(scores, chosen, axis=1)
    margin = 1.0 - target_scores[:, :, None] + scores[:, None, :]
    hinge = _ops.where(margin > 0, margin, 0.0)  # PyTorch's: a term at exactly 0 has no gradient
    counted = _ops.logical_and(listed[:, :, None], _ops.logical_not(is_target)[:, None, :])
    loss = _ops.sum(_ops.where(counted, hinge, 0.0), axis=(1, 2)) / classes
    if input.ndim == 1:
        loss = _ops.reshape(loss, ())
    return _reduce(loss, reduction)


@_autocast.listed("nn.functional.poisson_nll_loss")
@accepts_legacy_reduction(after="full")
def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    eps: float = 1e-8,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of ``target`` under a Poisson distribution of rate ``input``.

    ``exp(input) - target * input`` when ``log_input`` (``input`` is the log of
    the rate), else ``input - target * log(input + eps)``. ``full`` adds
    Stirling's approximation of ``log(target!)``,
    ``target * log(target) - target + 0.5 * log(2 * pi * target)``, where
    ``target > 1`` (0 elsewhere).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.poisson_nll_loss(plugrad.tensor([0.0, 1.0]), plugrad.tensor([1.0, 3.0]), reduction="none")
    tensor([ 1.0000, -0.2817])
    """
    _check_loss("poisson_nll_loss", reduction, input=input, target=target)
    _broadcast_shape("poisson_nll_loss", input, target)
    if log_input:
        loss = _ops.exp(input) - target * input
    else:
        loss = input - target * _ops.log(input + eps)
    if full:
        counted = target > 1
        # NOTE: the term of the other targets is 0, and so is its gradient: the logs are
        # taken of a stand-in, since log(0) would make both nan.
        safe = _ops.where(counted, target, 2.0)
        stirling = safe * _ops.log(safe) - safe + 0.5 * _ops.log((2 * math.pi) * safe)
        loss = loss + _ops.where(counted, stirling, 0.0)
    return _reduce(loss, reduction)


@accepts_legacy_reduction
def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Tensor | float,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of ``target`` under Gaussians of mean ``input`` and variance ``var``.

    ``0.5 * (log(var) + (input - target)**2 / var)``, plus ``0.5 * log(2 * pi)``
    with ``full``. ``var`` (clamped at ``eps`` from below, in value only) has
    the input's shape, or it with the last dim dropped or one dim of size 1
    (a variance shared along it), or is one number.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> mean, target = plugrad.tensor([0.0, 1.0]), plugrad.tensor([1.0, 1.0])
    >>> F.gaussian_nll_loss(mean, target, plugrad.tensor([1.0, 2.0]))
    tensor(0.4233)
    """
    _check_loss("gaussian_nll_loss", reduction, input=input, target=target)
    if not isinstance(var, Tensor) and isinstance(var, (int, float)) and var < 0:
        raise InvalidArgumentError(f"gaussian_nll_loss(): var must be >= 0, got {var!r}")
    if not isinstance(var, Tensor) and isinstance(var, (int, float)):
        var = _ops.broadcast_to(
            asarray(float(var), dtype=input.dtype, device=input.device), input.shape
        )
    var = _check_tensor("var", "gaussian_nll_loss", var)
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = _ops.expand_dims(var, axis=-1)
        elif not (
            input.ndim == var.ndim and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1
        ):
            raise ShapeError(
                f"gaussian_nll_loss(): var has shape {var.shape}; give the input's shape "
                f"{input.shape}, or it with the last dim dropped or one dim of size 1"
            )
    _broadcast_shape("gaussian_nll_loss", input, target, var)
    with no_grad():
        negative = _ops.any(var < 0)
    if _rules.any_true(negative, "gaussian_nll_loss(): a negative variance", ValueError):
        raise InvalidArgumentError(
            "gaussian_nll_loss(): var has negative entries; variances must be >= 0"
        )
    # NOTE: clamped in value only: the gradient reaches var as if unclamped, as in PyTorch.
    var = _ops.where(var < eps, (var - var.detach()) + eps, var)
    difference = input - target
    loss = 0.5 * (_ops.log(var) + difference * difference / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@accepts_legacy_reduction(after="weight")
def multilabel_soft_margin_loss(
    input: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    """Binary cross-entropy from logits for each of ``C`` labels, averaged over the labels.

    ``input`` is ``(N, C)`` (or ``(C,)``); ``target`` holds 0 or 1 for each
    label; ``weight`` (broadcast) multiplies each label's term. ``"none"`` gives
    one loss per sample.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.multilabel_soft_margin_loss(plugrad.tensor([[0.0, 2.0]]), plugrad.tensor([[1.0, 0.0]]))
    tensor(1.4100)
    """
    _check_loss("multilabel_soft_margin_loss", reduction, input=input, target=target)
    if input.ndim == 0:
        raise ShapeError(
            "multilabel_soft_margin_loss(): input must have a class dim, got a 0-d one"
        )
    if target.shape != input.shape:  # (PyTorch's result is then summed along a wrong axis)
        raise ShapeError(
            f"multilabel_soft_margin_loss(): target has shape {target.shape} but input has "
            f"shape {input.shape}; they must match (one 0/1 label per class)"
        )
    if weight is not None:
        _weight_within("multilabel_soft_margin_loss", "weight", weight, input)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(_ops.sum(loss, axis=-1) / input.shape[-1], reduction)


@_autocast.listed("nn.functional.multi_margin_loss")
@accepts_legacy_reduction(after="weight")
def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-class hinge loss: ``sum over i != y of max(0, margin - x[y] + x[i]) ** p / C``.

    ``input`` is ``(N, C)`` scores with ``(N,)`` class targets (or ``(C,)`` with
    a 0-d target); ``p`` is 1 or 2; ``weight`` (``(C,)``) scales each sample's
    loss by the weight of its class.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.multi_margin_loss(plugrad.tensor([[0.1, 0.2, 0.4, 0.8]]), plugrad.tensor([3]))
    tensor(0.3250)
    """
    _check_loss("multi_margin_loss", reduction, input=input, target=target)
    if p not in (1, 2):
        raise InvalidArgumentError(f"multi_margin_loss(): p must be 1 or 2, got {p!r}")
    if weight is not None and _check_tensor("weight", "multi_margin_loss", weight).ndim != 1:
        raise ShapeError(f"multi_margin_loss(): weight must be 1-d, got shape {weight.shape}")
    if target.dtype.kind not in _INTEGER_KINDS:
        raise DtypeError(
            f"multi_margin_loss(): target must hold integer class indices, got {target.dtype}"
        )
    if input.ndim > 2 or (input.ndim and input.shape[-1] == 0):
        raise ShapeError(
            f"multi_margin_loss(): input must be non-empty (N, C) or (C,), got {input.shape}"
        )
    samples = input.shape[0] if input.ndim == 2 else 1
    if target.ndim > 1 or target.numel() != samples:
        raise ShapeError(
            f"multi_margin_loss(): the input {input.shape} needs {samples} class target(s) "
            f"(shape ({samples},) or ()), got shape {target.shape}"
        )
    classes = input.shape[-1] if input.ndim else 1
    if weight is not None and weight.shape[0] != classes:
        raise ShapeError(
            f"multi_margin_loss(): weight has {weight.shape[0]} entries but there are "
            f"{classes} classes"
        )
    _check_class_range("multi_margin_loss", target, classes, None)
    scores = _ops.reshape(input, (samples, classes))
    labels = _ops.reshape(_ops.astype(target, target.device.default_int_dtype), (samples, 1))
    chosen = _ops.take_along_axis(scores, labels, axis=1)
    others = labels != arange(classes, dtype=labels.dtype, device=input.device)
    excess = margin - chosen + scores
    hinge = _ops.where(_ops.logical_and(others, excess > 0), excess, 0.0)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * _ops.take(weight, _ops.reshape(labels, (-1,)), axis=0)[:, None]
    loss = _ops.sum(hinge, axis=1) / classes
    if input.ndim < 2:
        loss = _ops.reshape(loss, target.shape)
    return _reduce(loss, reduction)


def _ctc_lengths(name: str, value: Any, samples: int, batched: bool) -> list[int]:
    """``input_lengths`` or ``target_lengths`` of ``ctc_loss`` as a list of ints, checked."""
    function = "ctc_loss"
    if isinstance(value, Tensor):
        if value.dtype.kind not in _INTEGER_KINDS:
            raise DtypeError(
                f"{function}(): {name} must hold integers, got a {value.dtype.name} tensor; "
                f"convert it with {name}.long()"
            )
        if value.ndim > 1:
            raise ShapeError(
                f"{function}(): {name} must be 1-d, one length per sample, got shape {value.shape}"
            )
        lengths = _ops.reshape(value, (-1,)).tolist()
    elif isinstance(value, (list, tuple)):
        lengths = list(value)
    elif isinstance(value, numbers.Integral) and not isinstance(value, bool) and not batched:
        lengths = [value]
    else:
        raise ArgumentError(
            f"{function}(): {name} must be a tensor of integers or a list or tuple of ints, "
            f"got {type(value).__name__}"
        )
    for length in lengths:
        if not isinstance(length, numbers.Integral) or isinstance(length, bool):
            raise ArgumentError(
                f"{function}(): {name} must hold ints, got {type(length).__name__} {length!r}"
            )
    if len(lengths) != samples:
        raise ShapeError(
            f"{function}(): {name} must hold one length per sample ({samples}), got {len(lengths)}"
        )
    for length in lengths:
        if length < 0:
            raise InvalidArgumentError(
                f"{function}(): {name} must not be negative, got {int(length)}"
            )
    return [int(length) for length in lengths]


def _ctc_padded_targets(
    targets: Tensor, target_lengths: list[int], batched: bool, index_dtype: Any
) -> Tensor:
    """``ctc_loss``'s targets as ``(N, S)``, one row per sample (past its length: anything)."""
    function = "ctc_loss"
    if targets.ndim == 2 and batched:
        longest = targets.shape[1]
        for n, length in enumerate(target_lengths):
            if length > longest:
                raise ShapeError(
                    f"{function}(): target_lengths[{n}] is {length}, longer than the padded "
                    f"targets ({longest} per sample, shape {targets.shape}); pad the targets "
                    "to the longest length"
                )
        return targets
    if targets.ndim != 1:
        expected = "(N, S) padded or 1-d concatenated" if batched else "1-d (S,)"
        raise ShapeError(
            f"{function}(): targets must be {expected} for log_probs of "
            f"{'(T, N, C)' if batched else '(T, C)'}, got shape {targets.shape}"
        )
    if not batched:
        if target_lengths[0] > targets.shape[0]:
            raise ShapeError(
                f"{function}(): target_lengths is {target_lengths[0]}, longer than the "
                f"targets (shape {targets.shape})"
            )
        return _ops.reshape(targets, (1, targets.shape[0]))
    total = sum(target_lengths)
    if targets.shape[0] != total:
        raise ShapeError(
            f"{function}(): 1-d targets are every sample's labels one after another, "
            f"sum(target_lengths) = {total} of them, got {targets.shape[0]}; or give them "
            "padded, (N, S)"
        )
    longest = max(target_lengths)
    if total == 0:
        return zeros((len(target_lengths), 0), dtype=targets.dtype, device=targets.device)
    starts = [sum(target_lengths[:n]) for n in range(len(target_lengths))]
    # Past a sample's length any label will do: the op reads a blank there.
    index = [[min(start + s, total - 1) for s in range(longest)] for start in starts]
    positions = asarray(index, dtype=index_dtype, device=targets.device)
    return _ops.reshape(
        _ops.take(targets, _ops.reshape(positions, (-1,)), axis=0), (len(target_lengths), longest)
    )


@_autocast.listed("nn.functional.ctc_loss")
def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | Sequence[int],
    target_lengths: Tensor | Sequence[int],
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """Connectionist temporal classification loss: ``-log`` of the summed probability of
    every alignment of each target with its input.

    An alignment gives each frame a class, the labels in order with blanks before,
    between and after them (a repeated label needs a blank between its copies);
    the forward variables are computed in log space, and the gradient by the
    forward-backward formula in one op of its own.

    Parameters
    ----------
    log_probs : Tensor
        ``(T, N, C)`` log-probabilities (``log_softmax`` over the classes) of ``T``
        frames, ``N`` samples and ``C`` classes blank included; ``(T, C)`` for one
        sample. ``float32`` or ``float64``.
    targets : Tensor
        Integer labels: ``(N, S)`` padded (past each target length anything is
        ignored), or 1-d, every sample's labels one after another
        (``sum(target_lengths)`` of them); ``(S,)`` for one sample. No label may be
        ``blank``.
    input_lengths, target_lengths : Tensor or sequence of int
        Frames (at most ``T``) and labels of each sample, ``(N,)``; a 0-d tensor
        or an int for one sample. Frames past a sample's length take no part and get
        gradient 0.
    blank : int
        The class of the blank, in ``[0, C)``.
    reduction : {"mean", "sum", "none"}
        ``"mean"`` divides each sample's loss by its target length (1 for an empty
        target), then averages over the batch.
    zero_infinity : bool
        Give 0 (and gradient 0) for a target no alignment fits (input too short),
        instead of ``inf`` (and a NaN gradient).

    Notes
    -----
    The gradient with respect to ``log_probs`` is the derivative: minus the
    posterior probability of each class at each frame. PyTorch's adds
    ``exp(log_probs)`` to it (the gradient of logits normalized by
    ``log_softmax``), which ``log_softmax``'s backward takes away again: the
    gradients of the logits are the same. It is differentiable once: a second
    derivative raises :class:`~plugrad.errors.BackwardError`.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> log_probs = plugrad.zeros(4, 1, 3).log_softmax(2).requires_grad_()
    >>> loss = F.ctc_loss(log_probs, plugrad.tensor([[1, 2]]), [4], [2], reduction="sum")
    >>> loss
    tensor(1.6864, grad_fn=<SumBackward>)
    >>> loss.backward()
    >>> log_probs.grad[0]
    tensor([[-0.3333, -0.6667,  0.0000]])
    """
    function = "ctc_loss"
    _check_loss(function, reduction, log_probs=log_probs, targets=targets)
    if log_probs.dtype not in (_dtypes.float32, _dtypes.float64):
        raise DtypeError(
            f"{function}(): log_probs must be float32 or float64, got {log_probs.dtype.name}; "
            "convert them with log_probs.float()"
        )
    if log_probs.ndim not in (2, 3):
        raise ShapeError(
            f"{function}(): log_probs must be (T, N, C), or (T, C) for one sample, got shape "
            f"{log_probs.shape}"
        )
    if log_probs.numel() == 0:
        raise ShapeError(f"{function}(): log_probs must not be empty, got shape {log_probs.shape}")
    if targets.dtype.kind not in _INTEGER_KINDS:
        raise DtypeError(
            f"{function}(): targets must hold integer class indices, got "
            f"{targets.dtype.name}; convert them with targets.long()"
        )
    batched = log_probs.ndim == 3
    steps, classes = log_probs.shape[0], log_probs.shape[-1]
    samples = log_probs.shape[1] if batched else 1
    if (
        isinstance(blank, bool)
        or not isinstance(blank, numbers.Integral)
        or not (0 <= blank < classes)
    ):
        raise InvalidArgumentError(
            f"{function}(): blank must be a class index in [0, {classes}), got {blank!r}"
        )
    blank = int(blank)
    frames = _ctc_lengths("input_lengths", input_lengths, samples, batched)
    labels = _ctc_lengths("target_lengths", target_lengths, samples, batched)
    for n, length in enumerate(frames):
        if length > steps:
            raise InvalidArgumentError(
                f"{function}(): input_lengths[{n}] is {length}, but log_probs have only {steps} "
                "frames (T)"
            )
    index_dtype = log_probs.device.default_int_dtype
    padded = _ctc_padded_targets(targets, labels, batched, index_dtype)
    padded = _ops.astype(padded, index_dtype)
    label_lengths = asarray(labels, dtype=index_dtype, device=log_probs.device)
    used = arange(padded.shape[1], device=log_probs.device)[None, :] < label_lengths[:, None]
    wrong = _ops.logical_and(used, (padded < 0) | (padded >= classes) | (padded == blank))
    if bool(_ops.any(wrong)):
        flags = _ops.reshape(wrong, (-1,)).tolist()
        bad = [v for v, w in zip(_ops.reshape(padded, (-1,)).tolist(), flags, strict=True) if w]
        if bad[0] == blank:
            raise InvalidArgumentError(
                f"{function}(): the targets hold the blank ({blank}) as a label; the blank "
                "is implicit between labels: leave it out of the targets (or pass the "
                "class that stands for it as blank=)"
            )
        raise IndexOutOfRangeError(
            f"{function}(): target labels must lie in [0, {classes}) (there are {classes} "
            f"classes), got {bad[0]}; fix the labels"
        )
    lp = log_probs if batched else _ops.expand_dims(log_probs, axis=1)
    loss, _ = _ops.ctc_loss(
        lp,
        padded,
        asarray(frames, dtype=index_dtype, device=log_probs.device),
        label_lengths,
        blank=blank,
        zero_infinity=bool(zero_infinity),
    )
    if not batched:
        loss = _ops.reshape(loss, ())
    if reduction == "mean":
        per_label = _ops.astype(_ops.clip(label_lengths, min=1), loss.dtype)
        return _ops.mean(loss / (per_label if batched else _ops.reshape(per_label, ())))
    return _reduce(loss, reduction)


# -- channel dropout, alpha dropout --------------------------------------------------------


def _check_probability(function: str, p: Any, bool_too: bool = False) -> float:
    """``p`` as a float, refused unless a number (a NumPy scalar too) in ``[0, 1]``."""
    if (
        not isinstance(p, numbers.Real)
        or (isinstance(p, bool) and not bool_too)
        or not 0.0 <= float(p) <= 1.0
    ):
        raise InvalidArgumentError(
            f"{function}(): p must be a probability between 0 and 1, got {p!r}"
        )
    return float(p)


def _keep_mask(
    input: Tensor, p: float, shape: tuple[int, ...], generator: Generator | None
) -> Tensor:
    """A boolean mask of ``shape``, true with probability ``1 - p``."""
    # float16 draws in float32: on its grid of 2**-11 a p off it was p rounded.
    dtype = input.dtype if input.dtype.kind == "real floating" else _dtypes.float32
    dtype = _dtypes.float32 if dtype in _dtypes.half_floats else dtype
    with no_grad():
        noise = rand(*shape, dtype=dtype, device=input.device, generator=generator)
        return noise >= p


def _scaled_dropout(function: str, input: Tensor, keep: Tensor, p: float, inplace: bool) -> Tensor:
    """``input`` where ``keep`` is true, scaled by ``1 / (1 - p)``; zero elsewhere."""
    # p == 1 drops everything; a zero scale avoids 1 / 0.
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    if inplace:
        return apply_inplace(
            input, lambda x: _ops.dropout(x, keep, scale=scale), name=f"{function}(inplace=True)"
        )
    return _ops.dropout(input, keep, scale=scale)


def _check_scalable(function: str, input: Tensor) -> None:
    """Refuse an integer or bool input to a dropout (it became float64 without a word)."""
    if input.dtype.kind not in ("real floating", "complex floating"):
        raise DtypeError(
            f"{function}(): gives floating values (what it keeps is scaled), which a "
            f"{input.dtype.name} tensor cannot hold; convert it first (x.float())"
        )


def _drop(
    function: str, input: Tensor, p: float, inplace: bool, generator: Generator | None, per: int
) -> Tensor:
    """The dropout of ``input`` by ``p``, both already checked: one draw for each index into
    its first ``per`` dims zeroes all that the index holds, or keeps it scaled by
    ``1 / (1 - p)``."""
    _check_scalable(function, input)
    keep = _keep_mask(input, p, input.shape[:per] + (1,) * (input.ndim - per), generator)
    return _scaled_dropout(function, input, keep, p, inplace)


def _channel_dropout(
    function: str,
    input: Tensor,
    p: float,
    training: bool,
    inplace: bool,
    generator: Generator | None,
    dims: tuple[int, int],
    unbatched: int | None,
) -> Tensor:
    """Zero whole channels: one draw per ``(sample, channel)``, or per channel of an input
    with ``unbatched`` dims."""
    _check_tensor("input", function, input)
    p = _check_probability(function, p)
    if input.ndim not in dims:
        raise ShapeError(
            f"{function}(): takes a {dims[0]}-d or {dims[1]}-d input (channels, then "
            f"{dims[1] - 2} spatial dim(s), after an optional batch dim), got shape "
            f"{input.shape}; use dropout() to zero single elements"
        )
    if not training or p == 0:
        return input
    return _drop(function, input, p, inplace, generator, per=1 if input.ndim == unbatched else 2)


def dropout1d(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Zero each channel of ``(N, C, L)`` or ``(C, L)`` input with probability ``p``.

    As :func:`dropout`, but one draw zeroes (or keeps, scaled by ``1 / (1 - p)``)
    a whole channel.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> _ = plugrad.manual_seed(0)
    >>> F.dropout1d(plugrad.ones((4, 3)), p=0.5)
    tensor([[2., 2., 2.],
            [2., 2., 2.],
            [2., 2., 2.],
            [0., 0., 0.]])
    """
    return _channel_dropout("dropout1d", input, p, training, inplace, generator, (2, 3), 2)


def dropout2d(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Zero each channel of ``(N, C, H, W)`` input with probability ``p``; scale the rest.

    A 3-d input is taken as ``(N, C, L)``, as PyTorch does for now (use
    :func:`dropout1d` for that, or add the batch dim to a ``(C, H, W)`` image).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> _ = plugrad.manual_seed(0)
    >>> F.dropout2d(plugrad.ones((1, 4, 2, 2)), p=0.5)[0, :, 0, 0]
    tensor([2., 2., 2., 0.])
    """
    return _channel_dropout("dropout2d", input, p, training, inplace, generator, (3, 4), None)


def dropout3d(
    input: Tensor,
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Zero each channel of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with probability ``p``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.dropout3d(plugrad.ones((2, 1, 1, 1)), p=0.5, training=False).flatten()
    tensor([1., 1.])
    """
    return _channel_dropout("dropout3d", input, p, training, inplace, generator, (4, 5), 4)


_SELU_NEGATIVE = -SELU_ALPHA * SELU_SCALE  # the value SELU tends to, where alpha dropout drops


def _alpha_dropout(
    function: str,
    input: Tensor,
    p: float,
    training: bool,
    inplace: bool,
    generator: Generator | None,
    features: bool,
) -> Tensor:
    _check_tensor("input", function, input)
    p = _check_probability(function, p)
    if not training or p == 0 or input.numel() == 0:
        return input
    _check_scalable(function, input)
    if features and input.ndim < 2:
        raise ShapeError(
            f"{function}(): takes (N, C, ...) input with at least 2 dims, got shape {input.shape}"
        )
    if p == 1:
        result = lambda x: x * 0.0
    else:
        shape = input.shape[:2] + (1,) * (input.ndim - 2) if features else input.shape
        dtype = input.dtype if input.dtype.kind == "real floating" else _dtypes.float32
        keep = _ops.astype(_keep_mask(input, p, shape, generator), dtype)
        alpha = -_SELU_NEGATIVE
        a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
        offset = (keep - 1.0) * (alpha * a) + alpha * a * p
        result = lambda x: x * (keep * a) + offset
    if inplace:
        return apply_inplace(input, result, name=f"{function}(inplace=True)")
    return result(input)


def alpha_dropout(
    input: Tensor,
    p: float = 0.5,
    training: bool = False,
    inplace: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Dropout for SELU networks: dropped elements take SELU's negative limit, and the
    result is scaled and shifted to keep a zero mean and unit variance.

    As in PyTorch, ``training`` is false by default (:class:`~plugrad.nn.AlphaDropout`
    passes its mode).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> _ = plugrad.manual_seed(0)
    >>> F.alpha_dropout(plugrad.zeros(4), p=0.5, training=True)
    tensor([ 0.7792,  0.7792,  0.7792, -0.7792])
    """
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, generator, False)


def feature_alpha_dropout(
    input: Tensor,
    p: float = 0.5,
    training: bool = False,
    inplace: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """:func:`alpha_dropout` of whole channels: one draw per sample and channel of ``(N, C, ...)``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.feature_alpha_dropout(plugrad.zeros((1, 2, 3)), p=0.5).shape
    (1, 2, 3)
    """
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, generator, True)


# -- more convolution: 1-D, transposed ----------------------------------------------------
#
# A 1-D convolution is a 2-D one over a height of 1, and a transposed convolution is the
# gradient of a convolution for its input (plugrad.ops.conv2d_input_grad): both reuse the
# 2-D ops, so their gradients (of every order) come with them.

_SPATIAL = {1: ("L",), 2: ("H", "W"), 3: ("D", "H", "W")}
_KERNEL = {1: "k", 2: "kh, kw", 3: "kd, kh, kw"}


def _ntuple(
    function: str,
    name: str,
    value: Any,
    n: int,
    minimum: int,
    one_for_all: bool = False,
) -> tuple[int, ...]:
    """``value`` as ``n`` ints ``>= minimum``: one int for every axis, or a sequence of ``n``
    (or, with ``one_for_all``, of one, as PyTorch's convolutions take ``stride=(2,)``); else
    an InvalidArgumentError."""
    value = _int_or_itself(value)
    if isinstance(value, int):
        values: tuple[Any, ...] = (value,) * n
    else:
        values = tuple(map(_int_or_itself, value)) if isinstance(value, tuple | list) else ()
        if one_for_all and len(values) == 1:
            values *= n
    if (
        len(values) != n
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in values)
        or min(values) < minimum
    ):
        what = {1: "an int or a 1-tuple of ints", 2: "an int or a pair of ints"}.get(
            n, f"an int or a tuple of {n} ints"
        )
        raise InvalidArgumentError(
            f"{function}(): {name} must be {what} >= {minimum}, got {value!r}"
        )
    return values


def _groups(function: str, groups: Any, channels: int, which: str) -> None:
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1 or channels % groups:
        raise InvalidArgumentError(
            f"{function}(): groups must be a positive int dividing the {channels} {which} "
            f"channels, got {groups!r}"
        )


def _check_spatial(function: str, input: Tensor, nd: int) -> None:
    """Refuse an input that is not ``(N, C, *spatial)`` or ``(C, *spatial)`` with ``nd`` axes."""
    if input.ndim not in (nd + 1, nd + 2):
        spatial = ", ".join(_SPATIAL[nd])
        raise ShapeError(
            f"{function}(): input must be (N, C, {spatial}) or (C, {spatial}), got {input.shape}"
        )


def _batched(function: str, input: Tensor, nd: int) -> tuple[Tensor, bool]:
    """``input`` with a batch axis (added to an unbatched one), and whether it was added."""
    _check_spatial(function, input, nd)
    unbatched = input.ndim == nd + 1
    return (_ops.expand_dims(input, axis=0) if unbatched else input), unbatched


def _flat_padding(pads: Sequence[tuple[int, int]]) -> tuple[int, ...]:
    return tuple(amount for pair in pads for amount in pair)


def _conv_operands(
    function: str, nd: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any
) -> tuple[int, ...]:
    """The checks every convolution starts with; its strides as ``nd`` ints."""
    _check_tensor("input", function, input)
    _check_tensor("weight", function, weight)
    _check_same_dtype(function, input, weight, bias)
    return _ntuple(function, "stride", stride, nd, 1, one_for_all=True)


def _kernel_size(function: str, weight: Tensor) -> tuple[int, ...]:
    """The kernel's size on each spatial axis of a convolution's weight, none of them 0."""
    kernel = tuple(weight.shape[2:])
    if min(kernel) < 1:
        raise ShapeError(f"{function}(): the weight {weight.shape} has a kernel of size 0")
    return kernel


def _conv_result(
    function: str, out: Tensor, nd: int, bias: Tensor | None, channels: int, unbatched: bool
) -> Tensor:
    """The 2-D op's output back in the caller's terms: ``nd`` axes, the bias, the batch."""
    if nd == 1:
        out = _ops.squeeze(out, axis=2)
    if bias is not None:
        if bias.shape != (channels,):
            raise ShapeError(
                f"{function}(): the bias must be 1-D with one element per output channel "
                f"({channels}), got shape {bias.shape}"
            )
        out = out + _ops.reshape(bias, (channels,) + (1,) * nd)
    return _ops.squeeze(out, axis=0) if unbatched else out


def _convolution(
    function: str,
    nd: int,
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: int,
) -> Tensor:
    """``conv1d``, ``conv2d`` and ``conv3d``: checked in the caller's terms, computed by the
    2-D op."""
    steps = _conv_operands(function, nd, input, weight, bias, stride)
    dilations = _ntuple(function, "dilation", dilation, nd, 1, one_for_all=True)
    if weight.ndim != nd + 2:
        raise ShapeError(
            f"{function}(): weight must be (O, C / groups, {_KERNEL[nd]}), got {weight.shape}"
        )
    input, unbatched = _batched(function, input, nd)
    out_channels, group_channels = weight.shape[:2]
    kernel = _kernel_size(function, weight)
    _groups(function, groups, out_channels, "output")
    if input.shape[1] != group_channels * groups:
        raise ShapeError(
            f"{function}(): the input has {input.shape[1]} channels but the weight {weight.shape} "
            f"with groups={groups} expects {group_channels * groups}"
        )
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise InvalidArgumentError(
                f"{function}(): padding must be 'valid', 'same' or ints, got {padding!r}"
            )
        if padding == "same" and steps != (1,) * nd:
            raise InvalidArgumentError(
                f"{function}(): padding='same' needs stride 1, as in PyTorch"
            )
        # PyTorch's "same": the odd element of an even total goes after (bottom, right).
        totals = [d * (k - 1) if padding == "same" else 0 for k, d in zip(kernel, dilations)]
        pads = [(total // 2, total - total // 2) for total in totals]
    else:
        pads = [(p, p) for p in _ntuple(function, "padding", padding, nd, 0, one_for_all=True)]
    for size, (before, after), k, d, axis in zip(
        input.shape[2:], pads, kernel, dilations, _SPATIAL[nd]
    ):
        if size + before + after < d * (k - 1) + 1:
            raise ShapeError(
                f"{function}(): the padded input ({size} + {before + after} along {axis}) is "
                f"smaller than the dilated kernel ({d * (k - 1) + 1})"
            )
    if nd == 1:  # over a height of 1
        input, weight = _ops.expand_dims(input, axis=2), _ops.expand_dims(weight, axis=2)
        steps, dilations, pads = (1, *steps), (1, *dilations), [(0, 0), *pads]
    if nd == 3:
        out = _conv3d_by_depth(input, weight, steps, pads, dilations, groups)
    else:
        out = _ops.conv2d(
            input, weight, stride=steps, padding=_flat_padding(pads), dilation=dilations,
            groups=groups,
        )  # fmt: skip
    return _conv_result(function, out, nd, bias, out_channels, unbatched)


def _with_zeros(x: Tensor, axis: int, before: int, after: int) -> Tensor:
    """``x`` with ``before`` and ``after`` zeros along ``axis``."""
    if not before and not after:
        return x

    def block(count: int) -> Tensor:
        shape = list(x.shape)
        shape[axis] = count
        return zeros(tuple(shape), dtype=x.dtype, device=x.device)

    parts = ([block(before)] if before else []) + [x] + ([block(after)] if after else [])
    return _ops.concat(parts, axis=axis)


def _conv3d_by_depth(
    input: Tensor,
    weight: Tensor,
    steps: tuple[int, ...],
    pads: Sequence[tuple[int, int]],
    dilations: tuple[int, ...],
    groups: int,
) -> Tensor:
    """A 3-D convolution as a sum over the kernel's depth of 2-D ones: each of its slices
    convolves every output depth's input slice at once (the depths taken into the batch),
    so the result has the 2-D op's gradients of every order."""
    input = _with_zeros(input, 2, *pads[0])
    batch, channels, depth, height, width = input.shape
    kernel_depth, step, dilation = weight.shape[2], steps[0], dilations[0]
    out_depth = (depth - dilation * (kernel_depth - 1) - 1) // step + 1
    total = None
    for k in range(kernel_depth):
        start = k * dilation
        part = input[:, :, start : start + step * (out_depth - 1) + 1 : step]
        part = _ops.reshape(
            _ops.permute_dims(part, (0, 2, 1, 3, 4)), (batch * out_depth, channels, height, width)
        )
        term = _ops.conv2d(
            part, weight[:, :, k], stride=steps[1:], padding=_flat_padding(pads[1:]),
            dilation=dilations[1:], groups=groups,
        )  # fmt: skip
        total = term if total is None else total + term
    assert total is not None  # (a kernel has at least one slice)
    out = _ops.reshape(total, (batch, out_depth, *total.shape[1:]))
    return _ops.permute_dims(out, (0, 2, 1, 3, 4))


@_autocast.listed("nn.functional.conv1d")
def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | tuple[int, ...] = 1,
    padding: int | tuple[int, ...] | str = 0,
    dilation: int | tuple[int, ...] = 1,
    groups: int = 1,
) -> Tensor:
    """1-D convolution (cross-correlation) of ``(N, C, L)`` input with ``(O, C/groups, k)``.

    Computed as a 2-D convolution over a height of 1, so it has the same
    gradients of every order.

    Parameters
    ----------
    input : Tensor
        ``(N, C, L)``, or ``(C, L)`` for a single sequence.
    weight : Tensor
        ``(O, C / groups, k)``.
    bias : Tensor, optional
        ``(O,)``.
    stride, dilation : int or (int,)
    padding : int, (int,), "valid" or "same"
        Zeros added on both sides; ``"same"`` (stride 1 only) keeps the length.
    groups : int
        Split the channels into that many independent convolutions.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x = plugrad.tensor([[[1.0, 2.0, 3.0, 4.0]]])
    >>> F.conv1d(x, plugrad.tensor([[[1.0, 0.0, -1.0]]]), padding=1)
    tensor([[[-2., -2., -2.,  3.]]])
    """
    return _convolution("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(
    function: str,
    nd: int,
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Any,
    padding: Any,
    output_padding: Any,
    groups: int,
    dilation: Any,
) -> Tensor:
    """``conv_transpose1d``/``2d``/``3d``: the gradient of a convolution for its input."""
    steps = _conv_operands(function, nd, input, weight, bias, stride)
    pads = _ntuple(function, "padding", padding, nd, 0, one_for_all=True)
    extras = _ntuple(function, "output_padding", output_padding, nd, 0, one_for_all=True)
    dilations = _ntuple(function, "dilation", dilation, nd, 1, one_for_all=True)
    if weight.ndim != nd + 2:
        raise ShapeError(
            f"{function}(): weight must be (C_in, C_out / groups, {_KERNEL[nd]}), got "
            f"{weight.shape}"
        )
    input, unbatched = _batched(function, input, nd)
    in_channels, group_out = weight.shape[:2]
    kernel = _kernel_size(function, weight)
    _groups(function, groups, in_channels, "input")
    if input.shape[1] != in_channels:
        raise ShapeError(
            f"{function}(): the input has {input.shape[1]} channels but the weight "
            f"{weight.shape} expects {in_channels}"
        )
    if any(e >= max(s, d) for e, s, d in zip(extras, steps, dilations)):
        raise InvalidArgumentError(
            f"{function}(): output_padding {extras} must be smaller than the stride {steps} "
            f"or the dilation {dilations}, as in PyTorch"
        )
    full = [
        (n - 1) * s + d * (k - 1) + 1
        for n, s, d, k in zip(input.shape[2:], steps, dilations, kernel)
    ]
    sizes = [f - 2 * p + e for f, p, e in zip(full, pads, extras)]
    if min(sizes) < 0:
        raise ShapeError(
            f"{function}(): the output would have size {tuple(sizes)} for an input of shape "
            f"{input.shape} (padding {pads}); use less padding or a larger input"
        )
    # NOTE: output_padding is taken off the padding after (bottom, right) rather than added
    # to the output: the windows of the op's own gradients then fit its input exactly.
    # What lies beyond every window (output_padding larger than the padding) is zeros.
    after = [max(p - e, 0) for p, e in zip(pads, extras)]
    computed = [f - p - a for f, p, a in zip(full, pads, after)]
    beyond = [size - c for size, c in zip(sizes, computed)]
    flat = [(p, a) for p, a in zip(pads, after)]
    if nd == 1:  # over a height of 1
        input, weight = _ops.expand_dims(input, axis=2), _ops.expand_dims(weight, axis=2)
        steps, dilations, flat = (1, *steps), (1, *dilations), [(0, 0), *flat]
        computed, beyond = [1, *computed], [0, *beyond]
    if nd == 3:
        out = _conv_transpose3d_by_depth(
            input, weight, steps, flat, dilations, groups, computed, full[0]
        )
        out = _with_zeros(out, 2, 0, beyond[0])
        computed, beyond = computed[1:], beyond[1:]
    else:
        out = _ops.conv2d_input_grad(
            input,
            weight,
            input_size=tuple(computed),
            stride=steps,
            padding=_flat_padding(flat),
            dilation=dilations,
            groups=groups,
        )
    if any(beyond):
        out = pad(out, (0, beyond[1], 0, beyond[0]))
    return _conv_result(function, out, nd, bias, group_out * groups, unbatched)


def _conv_transpose3d_by_depth(
    input: Tensor,
    weight: Tensor,
    steps: tuple[int, ...],
    flat: Sequence[tuple[int, int]],
    dilations: tuple[int, ...],
    groups: int,
    computed: Sequence[int],
    full_depth: int,
) -> Tensor:
    """A 3-D transposed convolution as a sum over the kernel's depth of 2-D ones: each
    slice's result lands at every ``stride``-th output depth from its offset (the adjoint
    of :func:`_conv3d_by_depth`), then the depth padding is cut off."""
    batch, channels, depth, height, width = input.shape
    kernel_depth, step, dilation = weight.shape[2], steps[0], dilations[0]
    rows = _ops.reshape(
        _ops.permute_dims(input, (0, 2, 1, 3, 4)), (batch * depth, channels, height, width)
    )
    spread = (depth - 1) * step + 1  # the input's depths, ``step`` apart
    total = None
    for k in range(kernel_depth):
        term = _ops.conv2d_input_grad(
            rows, weight[:, :, k], input_size=tuple(computed[1:]), stride=steps[1:],
            padding=_flat_padding(flat[1:]), dilation=dilations[1:], groups=groups,
        )  # fmt: skip
        term = _ops.reshape(term, (batch, depth, *term.shape[1:]))
        if step > 1:  # zeros between the depths: (batch, depth, step, ...) read as one axis
            gap = zeros(tuple(term.shape), dtype=term.dtype, device=term.device)
            term = _ops.stack([term] + [gap] * (step - 1), axis=2)
            term = _ops.reshape(term, (batch, depth * step, *term.shape[3:]))[:, :spread]
        term = _with_zeros(term, 1, k * dilation, full_depth - k * dilation - spread)
        total = term if total is None else total + term
    assert total is not None  # (a kernel has at least one slice)
    before = flat[0][0]
    out = total[:, before : before + computed[0]]
    return _ops.permute_dims(out, (0, 2, 1, 3, 4))


@_autocast.listed("nn.functional.conv_transpose1d")
def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | tuple[int, ...] = 1,
    padding: int | tuple[int, ...] = 0,
    output_padding: int | tuple[int, ...] = 0,
    groups: int = 1,
    dilation: int | tuple[int, ...] = 1,
) -> Tensor:
    """1-D transposed convolution of ``(N, C_in, L)`` with ``(C_in, C_out/groups, k)``.

    The gradient of :func:`conv1d` for its input: the output has length
    ``(L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

    Parameters
    ----------
    input : Tensor
        ``(N, C_in, L)``, or ``(C_in, L)``.
    weight : Tensor
        ``(C_in, C_out / groups, k)``.
    bias : Tensor, optional
        ``(C_out,)``.
    stride, padding, dilation : int or (int,)
    output_padding : int or (int,)
        Added to one side of the output; smaller than the stride or the dilation.
    groups : int

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.conv_transpose1d(plugrad.tensor([[[1.0, 2.0]]]), plugrad.ones((1, 1, 3)), stride=2)
    tensor([[[1., 1., 3., 2., 2.]]])
    """
    return _conv_transpose(
        "conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
        dilation,
    )  # fmt: skip


@_autocast.listed("nn.functional.conv_transpose2d")
def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | tuple[int, ...] = 1,
    padding: int | tuple[int, ...] = 0,
    output_padding: int | tuple[int, ...] = 0,
    groups: int = 1,
    dilation: int | tuple[int, ...] = 1,
) -> Tensor:
    """2-D transposed convolution of ``(N, C_in, H, W)`` with ``(C_in, C_out/groups, kh, kw)``.

    The gradient of :func:`conv2d` for its input (sometimes called a
    deconvolution): each output size is
    ``(n - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

    Parameters
    ----------
    input : Tensor
        ``(N, C_in, H, W)``, or ``(C_in, H, W)``.
    weight : Tensor
        ``(C_in, C_out / groups, kh, kw)``.
    bias : Tensor, optional
        ``(C_out,)``.
    stride, padding, dilation : int or (int, int)
    output_padding : int or (int, int)
        Added to the bottom and right; smaller than the stride or the dilation.
    groups : int

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.conv_transpose2d(plugrad.ones((1, 1, 2, 2)), plugrad.ones((1, 1, 2, 2)))
    tensor([[[[1., 2., 1.],
              [2., 4., 2.],
              [1., 2., 1.]]]])
    """
    return _conv_transpose(
        "conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
        dilation,
    )  # fmt: skip


@_autocast.listed("nn.functional.conv3d")
def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | tuple[int, ...] = 1,
    padding: int | tuple[int, ...] | str = 0,
    dilation: int | tuple[int, ...] = 1,
    groups: int = 1,
) -> Tensor:
    """3-D convolution (cross-correlation) of ``(N, C, D, H, W)`` input with
    ``(O, C/groups, kd, kh, kw)``.

    Computed as a sum over the kernel's depth of 2-D convolutions, so it has
    their gradients of every order.

    Parameters
    ----------
    input : Tensor
        ``(N, C, D, H, W)``, or ``(C, D, H, W)`` for a single volume.
    weight : Tensor
        ``(O, C / groups, kd, kh, kw)``.
    bias : Tensor, optional
        ``(O,)``.
    stride, dilation : int or (int, int, int)
    padding : int, (int, int, int), "valid" or "same"
        Zeros added on both sides; ``"same"`` (stride 1 only) keeps the size.
    groups : int
        Split the channels into that many independent convolutions.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.conv3d(plugrad.ones((1, 1, 3, 3, 3)), plugrad.ones((1, 1, 2, 2, 2))).shape
    (1, 1, 2, 2, 2)
    """
    return _convolution("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


@_autocast.listed("nn.functional.conv_transpose3d")
def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | tuple[int, ...] = 1,
    padding: int | tuple[int, ...] = 0,
    output_padding: int | tuple[int, ...] = 0,
    groups: int = 1,
    dilation: int | tuple[int, ...] = 1,
) -> Tensor:
    """3-D transposed convolution of ``(N, C_in, D, H, W)`` with
    ``(C_in, C_out/groups, kd, kh, kw)``.

    The gradient of :func:`conv3d` for its input: each output size is
    ``(n - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

    Parameters
    ----------
    input : Tensor
        ``(N, C_in, D, H, W)``, or ``(C_in, D, H, W)``.
    weight : Tensor
        ``(C_in, C_out / groups, kd, kh, kw)``.
    bias : Tensor, optional
        ``(C_out,)``.
    stride, padding, dilation : int or (int, int, int)
    output_padding : int or (int, int, int)
        Added after each axis; smaller than the stride or the dilation.
    groups : int

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.conv_transpose3d(plugrad.ones((1, 1, 2, 2, 2)), plugrad.ones((1, 1, 2, 2, 2)))[0, 0, 1]
    tensor([[2., 4., 2.],
            [4., 8., 4.],
            [2., 4., 2.]])
    """
    return _conv_transpose(
        "conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
        dilation,
    )  # fmt: skip


# -- 3-D pooling: 2-D pooling of each depth, then along the depth --------------------------


def _hw(values: Sequence[int]) -> tuple[int, int]:
    """The height and width entries of a 3-D pooling's ``(depth, height, width)``."""
    return (values[-2], values[-1])


def _planes(input: Tensor) -> Tensor:
    """``(..., D, H, W)`` as ``(N, C * D, H, W)``: every depth a plane of 2-D pooling."""
    return _ops.reshape(input, (-1, math.prod(input.shape[-4:-2]), *input.shape[-2:]))


def _with_value(x: Tensor, axis: int, before: int, after: int, value: Any) -> Tensor:
    """``x`` with ``before`` and ``after`` elements of ``value`` along ``axis``."""
    parts = [x]
    for count, at in ((before, 0), (after, 2)):
        if count:
            shape = list(x.shape)
            shape[axis] = count
            parts.insert(min(at, len(parts)), full(tuple(shape), value, dtype=x.dtype,
                                                   device=x.device))  # fmt: skip
    return _ops.concat(parts, axis=axis) if len(parts) > 1 else x


def _depth_windows(
    x: Tensor, size: int, kernel: int, step: int, pad: int, dil: int, out: int, fill: Any
) -> tuple[Tensor, list[int]]:
    """The ``kernel`` elements of each of ``out`` windows along axis -3 (stacked first), the
    axis padded with ``fill``; and each window's first input position."""
    last = (out - 1) * step + (kernel - 1) * dil  # in the padded axis
    padded = _with_value(x, -3, pad, max(0, last + 1 - size - pad), fill)
    slices = [padded[..., k * dil : k * dil + step * (out - 1) + 1 : step, :, :]
              for k in range(kernel)]  # fmt: skip
    return _ops.stack(slices, axis=0), [o * step - pad for o in range(out)]


def _chosen(stacked: Tensor, choice: Tensor) -> Tensor:
    """The element of ``stacked``'s first axis that ``choice`` names at each position."""
    return _ops.take_along_axis(stacked, _ops.expand_dims(choice, axis=0), axis=0)[0]


@_autocast.listed("nn.functional.max_pool3d")
def max_pool3d(
    input: Tensor,
    kernel_size: int | tuple[int, ...],
    stride: int | tuple[int, ...] | None = None,
    padding: int | tuple[int, ...] = 0,
    dilation: int | tuple[int, ...] = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over each window of the last three axes; gradients flow to the maxima only.

    ``stride`` defaults to ``kernel_size``. With ``return_indices`` also returns,
    as PyTorch does, the flat index (``(d * H + h) * W + w``) of each maximum in
    its input volume; of equal values the first in that order is taken.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x = plugrad.arange(64.0).reshape(1, 1, 4, 4, 4)
    >>> F.max_pool3d(x, 2)[0, 0, 0]
    tensor([[21., 23.],
            [29., 31.]])
    """
    kernel, step, pad, dil = _pool_arguments(
        "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode, nd=3
    )
    if input.dtype.kind == "bool":
        raise DtypeError("max_pool3d(): takes numbers, got a bool tensor")
    depth, height, width = input.shape[-3:]
    planes, flat = max_pool2d(
        _planes(input), _hw(kernel), _hw(step), _hw(pad), _hw(dil), ceil_mode, return_indices=True
    )
    shape = (*input.shape[:-3], depth, *planes.shape[-2:])
    planes, flat = _ops.reshape(planes, shape), _ops.reshape(flat, shape)
    out = _pooled_length(depth, kernel[0], step[0], pad[0], dil[0], ceil_mode)
    lowest = -math.inf if input.dtype.kind == "real floating" else iinfo(input.dtype).min
    windows = (depth, kernel[0], step[0], pad[0], dil[0], out)
    values, starts = _depth_windows(planes, *windows, lowest)
    with no_grad():
        choice = _ops.argmax(values, axis=0)  # (the first of equal maxima)
    pooled = _chosen(values, choice)
    if not return_indices:
        return pooled
    with no_grad():
        positions, _ = _depth_windows(flat, *windows, 0)
        first = asarray(starts, device=input.device)[:, None, None]
        chosen_depth = first + choice * dil[0]
        indices = chosen_depth * (height * width) + _chosen(positions, choice)
    return pooled, indices


def _pool_counts(
    size: int, kernel: int, step: int, pad: int, out: int, with_pad: bool
) -> list[int]:
    """How many elements each of ``out`` windows along an axis averages, as PyTorch counts:
    the window clipped to the padded axis, and to the axis itself without ``with_pad``."""
    counts = []
    for o in range(out):
        start, end = o * step - pad, min(o * step - pad + kernel, size + pad)
        if not with_pad:
            start, end = max(start, 0), min(end, size)
        counts.append(end - start)
    return counts


@_autocast.listed("nn.functional.avg_pool3d")
def avg_pool3d(
    input: Tensor,
    kernel_size: int | tuple[int, ...],
    stride: int | tuple[int, ...] | None = None,
    padding: int | tuple[int, ...] = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """Mean over each window of the last three axes.

    ``stride`` defaults to ``kernel_size``; ``count_include_pad`` counts the
    padding zeros in the mean; ``divisor_override`` replaces the count.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.avg_pool3d(plugrad.ones((1, 1, 2, 2, 2)), 2, padding=1)[0, 0, 0]
    tensor([[0.1250, 0.1250],
            [0.1250, 0.1250]])
    """
    kernel, step, pad, _ = _pool_arguments(
        "avg_pool3d", input, kernel_size, stride, padding, 1, ceil_mode, nd=3
    )
    _check_divisor("avg_pool3d", divisor_override)
    if input.dtype.kind == "bool":
        raise DtypeError("avg_pool3d(): takes numbers, got a bool tensor")
    if input.dtype.kind in _INTEGER_KINDS:
        return _integer_means(
            avg_pool3d, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
            divisor_override,
        )  # fmt: skip
    depth = input.shape[-3]
    # The sums over each window: of each depth's planes, then along the depth.
    sums = avg_pool2d(_planes(input), _hw(kernel), _hw(step), _hw(pad), ceil_mode, True, 1)
    sums = _ops.reshape(sums, (*input.shape[:-3], depth, *sums.shape[-2:]))
    out = _pooled_length(depth, kernel[0], step[0], pad[0], 1, ceil_mode)
    windows, _ = _depth_windows(sums, depth, kernel[0], step[0], pad[0], 1, out, 0)
    total = _ops.sum(windows, axis=0)
    if divisor_override is not None:
        return total / divisor_override
    counts = [
        _pool_counts(size, k, st, p, n, count_include_pad)
        for size, k, st, p, n in zip(input.shape[-3:], kernel, step, pad, total.shape[-3:])
    ]
    divisor = [[[a * b * c for c in counts[2]] for b in counts[1]] for a in counts[0]]
    return total / asarray(divisor, dtype=total.dtype, device=total.device)


def _depth_bins(depth: int, out: int) -> list[tuple[int, int]]:
    """The input depths each of ``out`` adaptive windows takes (PyTorch's, as for 2-D)."""
    return [((i * depth) // out, -((-(i + 1) * depth) // out)) for i in range(out)]


@_autocast.listed("nn.functional.adaptive_avg_pool3d")
def adaptive_avg_pool3d(input: Tensor, output_size: int | tuple[int | None, ...]) -> Tensor:
    """Mean over windows of the last three axes chosen to give ``output_size``.

    The windows along each axis are those of :func:`adaptive_avg_pool2d`; an
    ``output_size`` of ``None`` keeps that axis's size.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.adaptive_avg_pool3d(plugrad.arange(8.0).reshape(1, 2, 2, 2), 1)
    tensor([[[[3.5000]]]])
    """
    sizes = _output_sizes("adaptive_avg_pool3d", input, output_size, 3)
    if not all(sizes):
        return cast("Tensor", _empty_pooled(input, sizes))
    depth = input.shape[-3]
    planes = adaptive_avg_pool2d(_planes(input), _hw(sizes))
    planes = _ops.reshape(planes, (*input.shape[:-3], depth, *sizes[1:]))
    means = [_ops.mean(planes[..., start:end, :, :], axis=-3)
             for start, end in _depth_bins(depth, sizes[0])]  # fmt: skip
    return _ops.stack(means, axis=-3)


@_autocast.listed("nn.functional.adaptive_max_pool3d")
def adaptive_max_pool3d(
    input: Tensor, output_size: int | tuple[int | None, ...], return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over windows of the last three axes chosen to give ``output_size``.

    The windows are those of :func:`adaptive_avg_pool3d`; gradients flow to the
    maxima only. With ``return_indices`` also returns the flat index
    (``(d * H + h) * W + w``) of each maximum in its input volume.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.adaptive_max_pool3d(plugrad.arange(8.0).reshape(1, 2, 2, 2), 1, return_indices=True)
    (tensor([[[[7.]]]]), tensor([[[[7]]]]))
    """
    sizes = _output_sizes("adaptive_max_pool3d", input, output_size, 3)
    if not all(sizes):
        return cast("tuple[Tensor, Tensor] | Tensor", _empty_pooled(input, sizes, return_indices))
    depth, height, width = input.shape[-3:]
    planes, flat = adaptive_max_pool2d(_planes(input), _hw(sizes), return_indices=True)
    shape = (*input.shape[:-3], depth, *sizes[1:])
    planes, flat = _ops.reshape(planes, shape), _ops.reshape(flat, shape)
    pooled, indices = [], []
    for start, end in _depth_bins(depth, sizes[0]):
        window = _ops.moveaxis(planes[..., start:end, :, :], -3, 0)
        with no_grad():
            choice = _ops.argmax(window, axis=0)
        pooled.append(_chosen(window, choice))
        if return_indices:
            with no_grad():
                positions = _ops.moveaxis(flat[..., start:end, :, :], -3, 0)
                indices.append((start + choice) * (height * width) + _chosen(positions, choice))
    values = _ops.stack(pooled, axis=-3)
    return (values, _ops.stack(indices, axis=-3)) if return_indices else values


# -- more pooling: 1-D, adaptive maximum ----------------------------------------------------


def _without_height(result: Tensor | tuple[Tensor, Tensor]) -> Tensor | tuple[Tensor, Tensor]:
    """A 1-D maximum pooling's result (and indices), pooled in 2-D over a height of 1."""
    if isinstance(result, tuple):
        # In a plane of height 1 the flat index is the position along the axis.
        return _ops.squeeze(result[0], axis=-2), _ops.squeeze(result[1], axis=-2)
    return _ops.squeeze(result, axis=-2)


def max_pool1d(
    input: Tensor,
    kernel_size: int | tuple[int],
    stride: int | tuple[int] | None = None,
    padding: int | tuple[int] = 0,
    dilation: int | tuple[int] = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over each window of the last axis; gradients flow to the maxima only.

    ``stride`` defaults to ``kernel_size``. With ``return_indices`` also returns
    the position of each maximum along the input's last axis.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.max_pool1d(plugrad.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]]), 2, return_indices=True)
    (tensor([[[3., 5.]]]), tensor([[[1, 3]]]))
    """
    (kernel,), (step,), (pad_,), (dil,) = _pool_arguments(
        "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode, nd=1
    )
    result = max_pool2d(
        _ops.expand_dims(input, axis=-2), (1, kernel), (1, step), (0, pad_), (1, dil),
        ceil_mode, return_indices,
    )  # fmt: skip
    return _without_height(result)


def lp_pool2d(
    input: Tensor,
    norm_type: float,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    ceil_mode: bool = False,
) -> Tensor:
    """The ``norm_type``-norm of each window of the last two axes: ``sum(x ** p) ** (1 / p)``.

    As PyTorch's: the mean of ``x ** p`` over the window (:func:`avg_pool2d`)
    times the kernel's size, to the power ``1 / p``; ``inf`` is the largest
    absolute value. A negative ``x ** p`` (odd ``p``) is taken as 0.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.lp_pool2d(plugrad.tensor([[[[3.0, 4.0], [0.0, 0.0]]]]), 2, 2)
    tensor([[[[5.]]]])
    """
    return _lp_pool("lp_pool2d", avg_pool2d, max_pool2d, input, norm_type, kernel_size, stride,
                    ceil_mode)  # fmt: skip


def _lp_pool(
    function: str,
    average: Callable[..., Tensor],
    largest: Callable[..., Any],
    input: Tensor,
    norm_type: float,
    kernel_size: Any,
    stride: Any,
    ceil_mode: bool,
) -> Tensor:
    if not isinstance(norm_type, (int, float)) or isinstance(norm_type, bool) or norm_type == 0:
        raise InvalidArgumentError(
            f"{function}(): norm_type must be a non-zero number, got {norm_type!r}"
        )
    dims = int(function[-2])  # lp_pool1d, 2d, 3d
    # (checked here: the average pool it is computed with would name itself)
    _ntuple(function, "kernel_size", kernel_size, dims, 1)
    if stride is not None:
        _ntuple(function, "stride", stride, dims, 1)
    if math.isinf(norm_type):
        sign = 1.0 if norm_type > 0 else -1.0
        return sign * largest(sign * _ops.abs(input), kernel_size, stride, 0, 1, ceil_mode)
    out = average(input**norm_type, kernel_size, stride, 0, ceil_mode)
    kernel_size = _int_or_itself(kernel_size)
    kernel = kernel_size**dims if isinstance(kernel_size, int) else math.prod(kernel_size)
    return (_ops.sign(out) * relu(_ops.abs(out)) * kernel) ** (1.0 / norm_type)


def lp_pool3d(
    input: Tensor,
    norm_type: float,
    kernel_size: int | tuple[int, int, int],
    stride: int | tuple[int, int, int] | None = None,
    ceil_mode: bool = False,
) -> Tensor:
    """The ``norm_type``-norm of each window of the last three axes (see :func:`lp_pool2d`).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.lp_pool3d(plugrad.full((1, 1, 2, 2, 2), 2.0), 2, 2)
    tensor([[[[[5.6569]]]]])
    """
    return _lp_pool("lp_pool3d", avg_pool3d, max_pool3d, input, norm_type, kernel_size, stride,
                    ceil_mode)  # fmt: skip


def lp_pool1d(
    input: Tensor,
    norm_type: float,
    kernel_size: int,
    stride: int | None = None,
    ceil_mode: bool = False,
) -> Tensor:
    """The ``norm_type``-norm of each window of the last axis (see :func:`lp_pool2d`).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.lp_pool1d(plugrad.tensor([[[3.0, 4.0, 1.0, 1.0]]]), 1, 2)
    tensor([[[7., 2.]]])
    """
    return _lp_pool("lp_pool1d", avg_pool1d, max_pool1d, input, norm_type, kernel_size, stride,
                    ceil_mode)  # fmt: skip


@_autocast.listed("nn.functional.max_unpool2d")
def max_unpool2d(
    input: Tensor,
    indices: Tensor,
    kernel_size: IntPair,
    stride: IntPair | None = None,
    padding: IntPair = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    """The inverse of :func:`max_pool2d`: each value put back at its index, zeros elsewhere.

    ``indices`` are those ``max_pool2d(..., return_indices=True)`` gave (flat
    positions in each input plane). The output planes have the pooled input's
    size, ``(H - 1) * stride - 2 * padding + kernel_size``, unless
    ``output_size`` (the last two sizes, or the whole shape) picks one of the
    sizes that pool to the same (less than ``stride`` away from it). The
    gradient of each value is the output gradient at its index.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x = plugrad.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    >>> values, indices = F.max_pool2d(x, 2, return_indices=True)
    >>> F.max_unpool2d(values, indices, 2)
    tensor([[[[0., 0.],
              [0., 4.]]]])
    """
    function = "max_unpool2d"
    kernel = _pair(function, "kernel_size", kernel_size, 1)
    step = kernel if stride is None else _pair(function, "stride", stride, 1)
    pad = _pair(function, "padding", padding, 0)
    return _max_unpool(function, input, indices, kernel, step, pad, output_size)


def _max_unpool(
    function: str,
    input: Tensor,
    indices: Tensor,
    kernel: tuple[int, ...],
    step: tuple[int, ...],
    pad: tuple[int, ...],
    output_size: Sequence[int] | None,
) -> Tensor:
    """:func:`max_unpool2d` over the last ``len(kernel)`` axes, its errors naming ``function``."""
    nd = len(kernel)
    axes = {1: ("L",), 2: ("H", "W"), 3: ("D", "H", "W")}[nd]
    pool = f"max_pool{nd}d"
    _check_tensor("input", function, input)
    _check_tensor("indices", function, indices)
    if input.ndim not in (nd + 1, nd + 2) or indices.shape != input.shape:
        batched, single = ", ".join(("N", "C", *axes)), ", ".join(("C", *axes))
        raise ShapeError(
            f"{function}(): input must be ({batched}) or ({single}) and indices of its shape "
            f"(as {pool}(..., return_indices=True) gives them), got {input.shape} and "
            f"{indices.shape}"
        )
    if indices.dtype.kind not in _INTEGER_KINDS:
        raise DtypeError(f"{function}(): indices must be integers, got {indices.dtype.name}")
    sizes = [(n - 1) * st - 2 * p + k for n, st, p, k in zip(input.shape[-nd:], step, pad, kernel)]
    if output_size is not None:
        wanted = tuple(output_size)
        # the whole shape, as PyTorch takes it
        wanted = wanted[2:] if len(wanted) == nd + 2 else wanted
        last = {1: "last size", 2: "last two sizes", 3: "last three sizes"}[nd]
        if len(wanted) != nd or not all(
            isinstance(n, int) and size - st < n < size + st
            for n, size, st in zip(wanted, sizes, step)
        ):
            raise InvalidArgumentError(
                f"{function}(): output_size {tuple(output_size)} must give the {last} "
                f"({', '.join(axes)}) or the whole shape, within a stride {step} of "
                f"{tuple(sizes)} (the sizes that pool to the input's)"
            )
        sizes = list(wanted)
    planes_size = math.prod(sizes)
    shown = " x ".join(map(str, sizes))
    where = {1: "output rows of length", 2: "output planes of", 3: "output volumes of"}[nd]
    if min(sizes) < 1:
        raise ShapeError(
            f"{function}(): the output would be empty ({shown}); check kernel_size, stride and "
            "padding"
        )
    found = _ops.out_of_range(indices, low=0, high=planes_size)
    if any_outside(found, f"{function}(): indices outside the output planes"):
        raise IndexOutOfRangeError(
            f"{function}(): indices must lie in [0, {planes_size}) ({where} {shown}); were "
            f"they made by {pool} with this geometry?"
        )
    planes = input.shape[:-nd]
    count = math.prod(input.shape[-nd:])
    flat_values = _ops.reshape(input, (-1, count))
    flat_indices = _ops.reshape(_ops.astype(indices, indices.device.default_int_dtype), (-1, count))
    out = zeros((flat_values.shape[0], planes_size), dtype=input.dtype, device=input.device)
    out = out.scatter(1, flat_indices, flat_values)
    return _ops.reshape(out, (*planes, *sizes))


@_autocast.listed("nn.functional.max_unpool3d")
def max_unpool3d(
    input: Tensor,
    indices: Tensor,
    kernel_size: int | tuple[int, int, int],
    stride: int | tuple[int, int, int] | None = None,
    padding: int | tuple[int, int, int] = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    """The inverse of :func:`max_pool3d` (see :func:`max_unpool2d`): ``indices`` are flat
    positions ``(d * H + h) * W + w`` in each output volume.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x = plugrad.arange(8.0).reshape(1, 1, 2, 2, 2)
    >>> values, indices = F.max_pool3d(x, 2, return_indices=True)
    >>> F.max_unpool3d(values, indices, 2).flatten()
    tensor([0., 0., 0., 0., 0., 0., 0., 7.])
    """
    function = "max_unpool3d"

    def triple(name: str, value: Any, minimum: int) -> tuple[int, int, int]:
        return cast("tuple[int, int, int]", _ntuple(function, name, value, 3, minimum))

    kernel = triple("kernel_size", kernel_size, 1)
    step = kernel if stride is None else triple("stride", stride, 1)
    pad = triple("padding", padding, 0)
    return _max_unpool(function, input, indices, kernel, step, pad, output_size)


@_autocast.listed("nn.functional.max_unpool1d")
def max_unpool1d(
    input: Tensor,
    indices: Tensor,
    kernel_size: int | tuple[int],
    stride: int | tuple[int] | None = None,
    padding: int | tuple[int] = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    """The inverse of :func:`max_pool1d` (see :func:`max_unpool2d`).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> values, indices = F.max_pool1d(plugrad.tensor([[[1.0, 3.0, 2.0, 5.0]]]), 2,
    ...                                return_indices=True)
    >>> F.max_unpool1d(values, indices, 2)
    tensor([[[0., 3., 0., 5.]]])
    """

    function = "max_unpool1d"

    def single(value: Any, name: str) -> tuple[int]:
        if isinstance(value, (tuple, list)) and len(value) == 1:
            value = value[0]
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidArgumentError(
                f"{function}(): {name} must be an int or a 1-tuple, got {value!r}"
            )
        return (value,)

    kernel = single(kernel_size, "kernel_size")
    step = kernel if stride is None else single(stride, "stride")
    return _max_unpool(function, input, indices, kernel, step, single(padding, "padding"),
                       output_size)  # fmt: skip


def avg_pool1d(
    input: Tensor,
    kernel_size: int | tuple[int],
    stride: int | tuple[int] | None = None,
    padding: int | tuple[int] = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """Mean over each window of the last axis.

    ``stride`` defaults to ``kernel_size``; ``count_include_pad`` counts the
    padding zeros in the mean.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.avg_pool1d(plugrad.tensor([[[1.0, 2.0, 3.0, 4.0]]]), 2)
    tensor([[[1.5000, 3.5000]]])
    """
    (kernel,), (step,), (pad_,), _ = _pool_arguments(
        "avg_pool1d", input, kernel_size, stride, padding, 1, ceil_mode, nd=1
    )
    out = avg_pool2d(
        _ops.expand_dims(input, axis=-2), (1, kernel), (1, step), (0, pad_), ceil_mode,
        count_include_pad,
    )  # fmt: skip
    return _ops.squeeze(out, axis=-2)


def _output_sizes(function: str, input: Tensor, output_size: Any, nd: int) -> tuple[int, ...]:
    """``output_size`` of an adaptive pooling, ``None`` keeping an axis's size."""
    _check_spatial(function, _check_tensor("input", function, input), nd)
    output_size = _int_or_itself(output_size)
    sizes = (
        (output_size,) * nd
        if output_size is None or isinstance(output_size, int)
        else tuple(map(_int_or_itself, output_size))
        if isinstance(output_size, tuple | list)
        else ()
    )
    # (before zip(), which stopped at the shorter: (1, 2, 3) for 2 axes was (1, 2))
    if len(sizes) == nd:
        sizes = tuple(n if s is None else s for s, n in zip(sizes, input.shape[-nd:]))
    if len(sizes) != nd or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in sizes
    ):
        raise InvalidArgumentError(
            f"{function}(): output_size must be {nd} non-negative int(s) (or None), got "
            f"{output_size!r}"
        )
    if min(input.shape[-nd:]) < 1:
        spatial = ", ".join(_SPATIAL[nd])
        raise ShapeError(f"{function}(): the input {input.shape} has an empty {spatial} axis")
    return cast("tuple[int, ...]", sizes)  # checked above: ints, None replaced


def _empty_pooled(input: Tensor, sizes: tuple[int, ...], return_indices: bool = False) -> Any:
    """An adaptive pooling's result with an output size of 0: an empty slice of ``input``
    shaped as the output, so its gradient is zeros of the input's shape."""
    nd = len(sizes)
    corner = input[(Ellipsis,) + (slice(0, 0),) * nd]
    values = _ops.reshape(corner, (*input.shape[:-nd], *sizes))
    if not return_indices:
        return values
    indices = zeros(tuple(values.shape), dtype=input.device.default_int_dtype, device=input.device)
    return values, indices


def adaptive_avg_pool1d(input: Tensor, output_size: int | tuple[int]) -> Tensor:
    """Mean over windows of the last axis chosen to give ``output_size`` elements.

    The windows are those of :func:`adaptive_avg_pool2d`.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.adaptive_avg_pool1d(plugrad.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]]), 2)
    tensor([[2., 4.]])
    """
    (size,) = _output_sizes("adaptive_avg_pool1d", input, output_size, 1)
    out = adaptive_avg_pool2d(_ops.expand_dims(input, axis=-2), (1, size))
    return _ops.squeeze(out, axis=-2)


def _adaptive_max(input: Tensor, sizes: tuple[int, int], return_indices: bool) -> Any:
    """Adaptive maximum over the last two axes as one ``max_pool2d``.

    Each axis is gathered into equal windows: a window shorter than the longest
    repeats its last element, which never wins over its first occurrence.
    """
    if not all(sizes):
        return _empty_pooled(input, sizes, return_indices)
    lengths = input.shape[-2:]
    spreads, widths = [], []
    for n, length in zip(sizes, lengths):
        windows = [range((i * length) // n, -((-(i + 1) * length) // n)) for i in range(n)]
        width = max(len(w) for w in windows)
        spreads.append([w[min(j, len(w) - 1)] for w in windows for j in range(width)])
        widths.append(width)
    gathered = input
    for axis, spread, length in zip((-2, -1), spreads, lengths):
        if spread != list(range(length)):
            index = asarray(spread, dtype=input.device.default_int_dtype, device=input.device)
            gathered = _ops.take(gathered, index, axis=axis)
    values, offsets = _ops.max_pool2d(gathered, kernel_size=tuple(widths), stride=tuple(widths))
    if not return_indices:
        return values
    with no_grad():
        position = []
        for axis, (spread, width, n) in enumerate(zip(spreads, widths, sizes)):
            within = offsets // widths[1] if axis == 0 else offsets % widths[1]
            shape = (n, 1) if axis == 0 else (1, n)
            start = _ops.reshape(arange(n, device=input.device) * width, shape)
            table = asarray(spread, dtype=input.device.default_int_dtype, device=input.device)
            picked = _ops.take(table, _ops.reshape(start + within, (-1,)), axis=0)
            position.append(_ops.reshape(picked, offsets.shape))
        flat = position[0] * lengths[1] + position[1]
    return values, flat


def adaptive_max_pool1d(
    input: Tensor, output_size: int | tuple[int], return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over windows of the last axis chosen to give ``output_size`` elements.

    The windows are those of :func:`adaptive_avg_pool1d`; gradients flow to the
    maxima only. With ``return_indices`` also returns each maximum's position.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.adaptive_max_pool1d(plugrad.tensor([[1.0, 5.0, 3.0, 2.0, 4.0]]), 2)
    tensor([[5., 4.]])
    """
    (size,) = _output_sizes("adaptive_max_pool1d", input, output_size, 1)
    result = _adaptive_max(_ops.expand_dims(input, axis=-2), (1, size), return_indices)
    return _without_height(result)


def adaptive_max_pool2d(
    input: Tensor,
    output_size: int | tuple[int | None, int | None],
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over windows of the last two axes chosen to give ``output_size``.

    The windows are those of :func:`adaptive_avg_pool2d` (``None`` keeps an
    axis's size); gradients flow to the maxima only. With ``return_indices``
    also returns the flat index (``row * W + column``) of each maximum in its
    input plane, as PyTorch does.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.adaptive_max_pool2d(plugrad.arange(16.0).reshape(1, 4, 4), 2)
    tensor([[[ 5.,  7.],
             [13., 15.]]])
    """
    rows, columns = _output_sizes("adaptive_max_pool2d", input, output_size, 2)
    return _adaptive_max(input, (rows, columns), return_indices)


def max_pool1d_with_indices(
    input: Tensor,
    kernel_size: int | tuple[int],
    stride: int | tuple[int] | None = None,
    padding: int | tuple[int] = 0,
    dilation: int | tuple[int] = 1,
    ceil_mode: bool = False,
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`max_pool1d`'s values and indices, whatever ``return_indices`` says (PyTorch's)."""
    del return_indices  # PyTorch's form takes it and returns both all the same
    return cast(
        "tuple[Tensor, Tensor]",
        max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True),
    )


def max_pool2d_with_indices(
    input: Tensor,
    kernel_size: int | tuple[int, int],
    stride: int | tuple[int, int] | None = None,
    padding: int | tuple[int, int] = 0,
    dilation: int | tuple[int, int] = 1,
    ceil_mode: bool = False,
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`max_pool2d`'s values and indices, whatever ``return_indices`` says (PyTorch's)."""
    del return_indices
    return cast(
        "tuple[Tensor, Tensor]",
        max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True),
    )


def max_pool3d_with_indices(
    input: Tensor,
    kernel_size: int | tuple[int, ...],
    stride: int | tuple[int, ...] | None = None,
    padding: int | tuple[int, ...] = 0,
    dilation: int | tuple[int, ...] = 1,
    ceil_mode: bool = False,
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`max_pool3d`'s values and indices, whatever ``return_indices`` says (PyTorch's).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> values, indices = F.max_pool3d_with_indices(plugrad.arange(8.0).reshape(1, 2, 2, 2), 2)
    >>> values, indices
    (tensor([[[[7.]]]]), tensor([[[[7]]]]))
    """
    del return_indices
    return cast(
        "tuple[Tensor, Tensor]",
        max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True),
    )


def adaptive_max_pool1d_with_indices(
    input: Tensor, output_size: int | tuple[int], return_indices: bool = True
) -> tuple[Tensor, Tensor]:
    """:func:`adaptive_max_pool1d`'s values and indices (PyTorch's form; see above)."""
    del return_indices
    return cast("tuple[Tensor, Tensor]", adaptive_max_pool1d(input, output_size, True))


def adaptive_max_pool2d_with_indices(
    input: Tensor,
    output_size: int | tuple[int | None, int | None],
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`adaptive_max_pool2d`'s values and indices (PyTorch's form; see above)."""
    del return_indices
    return cast("tuple[Tensor, Tensor]", adaptive_max_pool2d(input, output_size, True))


@_autocast.listed("nn.functional.adaptive_max_pool3d_with_indices")
def adaptive_max_pool3d_with_indices(
    input: Tensor,
    output_size: int | tuple[int | None, ...],
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`adaptive_max_pool3d`'s values and indices (PyTorch's form; see above).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.adaptive_max_pool3d_with_indices(plugrad.arange(8.0).reshape(1, 2, 2, 2), 1)
    (tensor([[[[7.]]]]), tensor([[[[7]]]]))
    """
    del return_indices
    return cast("tuple[Tensor, Tensor]", adaptive_max_pool3d(input, output_size, True))


# -- fractional maximum pooling -----------------------------------------------------------


def _fractional_output_size(
    function: str, input: Tensor, output_size: Any, output_ratio: Any, nd: int
) -> tuple[int, ...]:
    """The output size of a fractional pooling: ``output_size``, or each input size times
    ``output_ratio`` truncated (PyTorch takes ``output_size`` when both are given)."""
    if output_size is not None:
        return _ntuple(function, "output_size", output_size, nd, 0, one_for_all=True)
    if output_ratio is None:
        raise InvalidArgumentError(
            f"{function}(): give output_size or output_ratio (the output's size, or its "
            "fraction of the input's)"
        )
    ratios = output_ratio if isinstance(output_ratio, tuple | list) else (output_ratio,) * nd
    if nd == 2 and len(ratios) == 1:
        ratios = tuple(ratios) * 2
    numbers_given = all(isinstance(r, numbers.Real) and not isinstance(r, bool) for r in ratios)
    if len(ratios) != nd or not numbers_given or not all(0 < float(r) < 1 for r in ratios):
        raise InvalidArgumentError(
            f"{function}(): output_ratio must be a number or {nd} numbers strictly between "
            f"0 and 1, got {output_ratio!r}"
        )
    return tuple(int(size * float(r)) for size, r in zip(input.shape[-nd:], ratios))


def _fractional_starts(samples: Tensor, size: int, out: int, kernel: int) -> Tensor:
    """The first input position of each of ``out`` windows along an axis, ``(..., out)``,
    one row per sample in ``samples``.

    Window ``i < out - 1`` starts at ``trunc((i + u) * a) - trunc(u * a)`` with
    ``a = (size - kernel) / (out - 1)``, the last at ``size - kernel``: PyTorch's
    sequence, computed as it does in the samples' dtype so that the windows match.
    """
    device, integer = samples.device, samples.device.default_int_dtype
    last = full((*samples.shape, 1), size - kernel, dtype=integer, device=device)
    if out <= 1:
        return last[..., :out]
    dtype = samples.dtype
    alpha = asarray(size - kernel, dtype=dtype, device=device) / asarray(
        out - 1, dtype=dtype, device=device
    )
    steps = arange(out - 1, dtype=dtype, device=device)
    u = _ops.expand_dims(samples, axis=-1)
    starts = _ops.trunc((steps + u) * alpha) - _ops.trunc(u * alpha)
    return _ops.concat([_ops.astype(starts, integer), last], axis=-1)


def _fractional_max_pool(
    function: str,
    nd: int,
    input: Tensor,
    kernel_size: Any,
    output_size: Any,
    output_ratio: Any,
    return_indices: bool,
    samples: Tensor | None,
) -> Tensor | tuple[Tensor, Tensor]:
    """Fractional maximum pooling over the last ``nd`` axes (see
    :func:`fractional_max_pool2d`).

    Every window's elements are gathered side by side, ``(N, C, windows, kernel)``,
    in PyTorch's order, and the maximum it would pick is gathered from each.
    """
    _check_spatial(function, _check_tensor("input", function, input), nd)
    if input.dtype.kind != "real floating":
        raise DtypeError(f"{function}(): takes a floating-point input, got {input.dtype.name}")
    kernel = _ntuple(function, "kernel_size", kernel_size, nd, 1, one_for_all=True)
    out = _fractional_output_size(function, input, output_size, output_ratio, nd)
    spatial = tuple(input.shape[-nd:])
    # PyTorch's bound: windows at distinct starts, and in 3-D (its check) one more element.
    extra = 1 if nd == 3 else 0
    for axis_name, size, k, o in zip(_SPATIAL[nd], spatial, kernel, out):
        if o + k - 1 + extra > size:
            raise ShapeError(
                f"{function}(): {o} windows of {k} along {axis_name} need at least "
                f"{o + k - 1 + extra} elements, the input has {size}; use a smaller "
                "output_size or kernel_size"
            )
    batch, _ = _batched(function, input, nd)
    n, channels = batch.shape[:2]
    if batch.shape[1:].count(0):
        raise ShapeError(f"{function}(): the input {input.shape} has an empty non-batch axis")
    if samples is None:
        with no_grad():
            samples = rand(n, channels, nd, dtype=input.dtype, device=input.device)
    else:
        _check_tensor("_random_samples", function, samples)
        if samples.ndim != 3 or samples.shape[0] < n or samples.shape[1:] != (channels, nd):
            raise ShapeError(
                f"{function}(): _random_samples must be (N, C, {nd}) with N at least the "
                f"batch size {n} and C = {channels}, got {samples.shape}"
            )
        if samples.dtype is not input.dtype:
            raise DtypeError(
                f"{function}(): _random_samples is {samples.dtype.name} but the input is "
                f"{input.dtype.name}; give them the same dtype"
            )
    with no_grad():
        # The flat input position of every window element, (N, C, *out, *kernel).
        samples = samples[:n]
        flat = zeros((), dtype=input.device.default_int_dtype, device=input.device)
        stride = 1
        for axis in reversed(range(nd)):
            # PyTorch's 2-D pooling reads the width's sample first, its 3-D one the depth's.
            sample = samples[..., 1 - axis if nd == 2 else axis]
            starts = _fractional_starts(sample, spatial[axis], out[axis], kernel[axis])
            at = _ops.expand_dims(starts, axis=-1) + arange(kernel[axis], device=input.device)
            shape = [n, channels] + [1] * (2 * nd)
            shape[2 + axis], shape[2 + nd + axis] = out[axis], kernel[axis]
            flat = flat + _ops.reshape(at, tuple(shape)) * stride
            stride *= spatial[axis]
        windows, width = math.prod(out), math.prod(kernel)
        flat = _ops.reshape(flat, (n, channels, windows, width))
    planes = _ops.reshape(batch, (n, channels, math.prod(spatial)))
    every = (n, channels, windows * width)
    gathered = _ops.take_along_axis(planes, _ops.reshape(flat, every), axis=-1)
    gathered = _ops.reshape(gathered, (n, channels, windows, width))
    with no_grad():
        # PyTorch's choice: the first maximum, or the last NaN of a window that has one.
        nan = _ops.astype(_ops.isnan(gathered), input.device.default_int_dtype)
        last_nan = (width - 1) - _ops.argmax(_ops.flip(nan, axis=-1), axis=-1, keepdims=True)
        first_max = _ops.argmax(gathered, axis=-1, keepdims=True)
        choice = _ops.where(_ops.max(nan, axis=-1, keepdims=True) > 0, last_nan, first_max)
    out_shape = (*input.shape[:-nd], *out)
    # (the gradient reaches each chosen element through the two gathers)
    values = _ops.reshape(_ops.take_along_axis(gathered, choice, axis=-1), out_shape)
    if not return_indices:
        return values
    with no_grad():
        indices = _ops.reshape(_ops.take_along_axis(flat, choice, axis=-1), out_shape)
    return values, indices


@_autocast.listed("nn.functional.fractional_max_pool2d")
def fractional_max_pool2d(
    input: Tensor,
    kernel_size: IntPair,
    output_size: IntPair | None = None,
    output_ratio: float | tuple[float, float] | None = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over ``kernel_size`` windows of the last two axes at random fractional steps.

    Graham's fractional max pooling: ``output_size`` windows (or the input's size
    times ``output_ratio``, each in (0, 1), truncated) along each axis, starting at
    pseudo-random increasing positions, the first at 0 and the last at the end.
    ``_random_samples``, ``(N, C, 2)`` in [0, 1) of the input's dtype (the width's
    sample first, then the height's), fixes those positions as PyTorch's do: the
    same samples give PyTorch's values and indices. Without it they are drawn from
    plugrad's random generator (:func:`plugrad.manual_seed` makes them
    reproducible). Gradients flow to the maxima only; with ``return_indices`` also
    returns the flat index (``row * W + column``) of each maximum in its input plane.

    Parameters
    ----------
    input : Tensor
        ``(N, C, H, W)`` or ``(C, H, W)``, floating point.
    kernel_size : int or tuple of 2 ints
        The window's size.
    output_size : int or tuple of 2 ints, optional
        The output's ``(oH, oW)``; ``oH + kH - 1`` at most ``H`` (likewise ``W``).
        Taken over ``output_ratio`` when both are given, as in PyTorch.
    output_ratio : float or tuple of 2 floats, optional
        The output's size as a fraction of the input's.
    return_indices : bool
        Also return the indices of the maxima.
    _random_samples : Tensor, optional
        The samples that place the windows (``N`` may be more than the batch's).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x = plugrad.arange(25.0).reshape(1, 5, 5)
    >>> F.fractional_max_pool2d(x, 2, output_size=2, _random_samples=plugrad.zeros((1, 1, 2)))
    tensor([[[ 6.,  9.],
             [21., 24.]]])
    """
    return _fractional_max_pool(
        "fractional_max_pool2d",
        2,
        input,
        kernel_size,
        output_size,
        output_ratio,
        return_indices,
        _random_samples,
    )


@_autocast.listed("nn.functional.fractional_max_pool3d")
def fractional_max_pool3d(
    input: Tensor,
    kernel_size: int | tuple[int, int, int],
    output_size: int | tuple[int, int, int] | None = None,
    output_ratio: float | tuple[float, float, float] | None = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """Maximum over ``kernel_size`` windows of the last three axes at random fractional steps.

    :func:`fractional_max_pool2d` in 3-D: ``input`` is ``(N, C, D, H, W)`` or
    ``(C, D, H, W)``, ``_random_samples`` ``(N, C, 3)`` (the depth's sample first,
    then the height's and the width's), and the indices are flat in the input
    volume (``(d * H + h) * W + w``).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x = plugrad.arange(27.0).reshape(1, 3, 3, 3)
    >>> samples = plugrad.zeros((1, 1, 3))
    >>> F.fractional_max_pool3d(x, 2, output_size=1, return_indices=True, _random_samples=samples)
    (tensor([[[[26.]]]]), tensor([[[[26]]]]))
    """
    return _fractional_max_pool(
        "fractional_max_pool3d",
        3,
        input,
        kernel_size,
        output_size,
        output_ratio,
        return_indices,
        _random_samples,
    )


@_autocast.listed("nn.functional.fractional_max_pool2d_with_indices")
def fractional_max_pool2d_with_indices(
    input: Tensor,
    kernel_size: IntPair,
    output_size: IntPair | None = None,
    output_ratio: float | tuple[float, float] | None = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """:func:`fractional_max_pool2d`'s values and indices, whatever ``return_indices`` says."""
    del return_indices  # PyTorch's form takes it and returns both all the same
    return cast(
        "tuple[Tensor, Tensor]",
        fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples),
    )


@_autocast.listed("nn.functional.fractional_max_pool3d_with_indices")
def fractional_max_pool3d_with_indices(
    input: Tensor,
    kernel_size: int | tuple[int, int, int],
    output_size: int | tuple[int, int, int] | None = None,
    output_ratio: float | tuple[float, float, float] | None = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """:func:`fractional_max_pool3d`'s values and indices, whatever ``return_indices`` says."""
    del return_indices
    return cast(
        "tuple[Tensor, Tensor]",
        fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples),
    )


# -- more normalization: group, instance, RMS, local response -----------------------------


def _check_channel_shapes(function: str, channels: int, *named: tuple[str, Tensor | None]) -> None:
    """Each ``(name, tensor)`` given, unless the tensor is None, has one value per channel."""
    for name, value in named:
        if value is not None and tuple(value.shape) != (channels,):
            raise ShapeError(
                f"{function}(): {name} must have shape ({channels},), one per channel, got "
                f"{value.shape}"
            )


def _channel_affine(
    function: str, input: Tensor, weight: Tensor | None, bias: Tensor | None
) -> Tensor:
    """``input * weight + bias`` with one weight and bias per channel (axis 1)."""
    channels = input.shape[1]
    kept = (channels,) + (1,) * (input.ndim - 2)
    _check_channel_shapes(function, channels, ("weight", weight), ("bias", bias))
    return _scale_shift(input, weight, bias, kept)


@_autocast.listed("nn.functional.group_norm")
def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each sample over groups of channels (and the other axes), then scale and shift.

    The ``C`` channels of an ``(N, C, ...)`` input are split into ``num_groups``
    groups; each group of each sample is normalized to mean 0 and variance 1
    (the biased variance), then ``weight`` and ``bias`` (one per channel)
    apply.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.group_norm(plugrad.tensor([[1.0, 3.0, 0.0, 4.0]]), 2)
    tensor([[-1.0000,  1.0000, -1.0000,  1.0000]])
    """
    eps = _number("group_norm", "eps", eps)
    num_groups = _int_or_itself(num_groups)
    _check_tensor("input", "group_norm", input)
    if input.ndim < 2:
        raise ShapeError(f"group_norm(): expected an input of shape (N, C, ...), got {input.shape}")
    channels = input.shape[1]
    if (
        not isinstance(num_groups, int)
        or isinstance(num_groups, bool)
        or num_groups < 1
        or channels % num_groups
    ):
        raise InvalidArgumentError(
            f"group_norm(): num_groups must be a positive int dividing the {channels} channels "
            f"of the input {input.shape}, got {num_groups!r}"
        )
    _check_floating("group_norm", input)
    _check_norm_dtypes("group_norm", input, weight, bias)
    if input.dtype in _dtypes.half_floats:
        # Normalized, scaled and shifted in float32 and rounded once, as PyTorch's: the
        # normalized values rounded before the affine step were 96 ulp off where it cancels.
        x, w, b = _in_float32(input, weight, bias)
        return _ops.astype(group_norm(x, num_groups, w, b, eps), input.dtype)
    # The group size spelled out: -1 cannot be inferred for an empty batch.
    group_size = math.prod(input.shape[1:]) // num_groups
    grouped = _ops.reshape(input, (input.shape[0], num_groups, group_size))
    normalized = _ops.layer_norm(grouped, None, None, ndim=1, eps=eps)
    return _channel_affine("group_norm", _ops.reshape(normalized, input.shape), weight, bias)


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel of each sample over its spatial axes, then scale and shift.

    With ``use_input_stats`` the statistics are each instance's, and the
    running statistics (when given) move toward their mean over the batch in
    place by ``momentum`` (the variance unbiased), as in PyTorch. Otherwise the
    running statistics normalize.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.instance_norm(plugrad.tensor([[[1.0, 3.0], [0.0, 4.0]]]))
    tensor([[[-1.0000,  1.0000],
             [-1.0000,  1.0000]]])
    """
    momentum = _number("instance_norm", "momentum", momentum)
    eps = _number("instance_norm", "eps", eps)
    _check_tensor("input", "instance_norm", input)
    if input.ndim < 3:
        raise ShapeError(
            f"instance_norm(): expected an input of shape (N, C, ...) with at least one "
            f"spatial axis, got {input.shape}"
        )
    _check_floating("instance_norm", input)
    _check_norm_dtypes("instance_norm", input, weight, bias)
    n, channels = input.shape[:2]
    _check_running_statistics("instance_norm", running_mean=running_mean, running_var=running_var)
    _check_channel_shapes(
        "instance_norm",
        channels,
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),  # before the running statistics move
        ("bias", bias),
    )
    if input.dtype in _dtypes.half_floats:
        # Normalized, scaled and shifted in float32 and rounded once, as batch_norm and
        # group_norm (normalized values rounded first were off where the affine step cancels).
        x, w, b = _in_float32(input, weight, bias)
        if not use_input_stats:  # read only: in float32 too
            running_mean, running_var = _in_float32(running_mean, running_var)
        out = instance_norm(x, running_mean, running_var, w, b, use_input_stats, momentum, eps)
        return _ops.astype(out, input.dtype)
    if use_input_stats:
        flat = _ops.reshape(input, (n, channels, math.prod(input.shape[2:])))
        count = flat.shape[-1]
        if count <= 1:
            raise ShapeError(
                f"instance_norm(): expected more than one spatial element per channel when "
                f"using the input's statistics, got input of shape {input.shape}"
            )
        out = _ops.reshape(_ops.layer_norm(flat, None, None, ndim=1, eps=eps), input.shape)
        with no_grad():
            if running_mean is not None:
                batch_mean = _ops.mean(_ops.mean(flat, axis=2), axis=0)
                _moving_average_(running_mean, batch_mean, momentum)
            if running_var is not None:
                batch_var = _ops.mean(_ops.var(flat, axis=2, correction=1), axis=0)
                _moving_average_(running_var, batch_var, momentum)
    else:
        out = _normalized_by_running(
            "instance_norm", "use_input_stats", "use_input_stats=True",
            input, running_mean, running_var, (channels,) + (1,) * (input.ndim - 2), eps,
        )  # fmt: skip
    return _channel_affine("instance_norm", out, weight, bias)


@_autocast.listed("nn.functional.rms_norm")
def rms_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """Divide by the root mean square over the trailing ``normalized_shape`` axes, then scale.

    ``input / sqrt(mean(input ** 2) + eps) * weight``; ``eps=None`` is the
    machine epsilon of the dtype it computes in (float32 for float16), as in PyTorch.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.rms_norm(plugrad.tensor([[3.0, 4.0]]), (2,), eps=0.0)
    tensor([[0.8485, 1.1314]])
    """
    eps = _number("rms_norm", "eps", eps)
    _check_tensor("input", "rms_norm", input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or tuple(input.shape[-len(shape) :]) != shape or input.ndim < len(shape):
        raise ShapeError(
            f"rms_norm(): normalized_shape {shape} must be the trailing axes of the input, "
            f"whose shape is {input.shape}"
        )
    _check_floating("rms_norm", input, complex_too=True)  # (as PyTorch: x ** 2)
    if weight is not None:
        _check_norm_dtypes("rms_norm", input, weight, None)
        if tuple(weight.shape) != shape:
            raise ShapeError(
                f"rms_norm(): weight must have shape {shape} (normalized_shape), got {weight.shape}"
            )
    if input.dtype in _dtypes.half_floats:  # in float32 and rounded once, as batch_norm
        # eps=None there is float32's, as PyTorch's (float16's 1e-3 outweighed small inputs)
        wide_input, wide_weight = _in_float32(input, weight)
        return _ops.astype(rms_norm(wide_input, shape, wide_weight, eps), input.dtype)
    if eps is None:
        eps = finfo(input.dtype).eps
    axes = tuple(range(-len(shape), 0))
    out = input * _ops.rsqrt(_ops.mean(input * input, axis=axes, keepdims=True) + eps)
    return out if weight is None else out * weight


def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """Divide by ``(k + alpha * mean of squares over size neighbouring channels) ** beta``.

    The channels (axis 1) are padded with zeros, ``size // 2`` before and
    ``(size - 1) // 2`` after, so the mean always divides by ``size``, as in PyTorch.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.local_response_norm(plugrad.ones((1, 3, 1)), 2, alpha=1.0, beta=1.0)
    tensor([[[0.6667],
             [0.5000],
             [0.5000]]])
    """
    _check_tensor("input", "local_response_norm", input)
    if input.ndim < 3:
        raise ShapeError(
            f"local_response_norm(): expected an input of shape (N, C, ...) with at least one "
            f"spatial axis, got {input.shape}"
        )
    size = _int_or_itself(size)
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise InvalidArgumentError(
            f"local_response_norm(): size must be a positive int, got {size!r}"
        )
    channels = input.shape[1]
    amounts = (0, 0) * (input.ndim - 2) + (size // 2, (size - 1) // 2)
    squares = pad(input * input, amounts)
    total = squares[:, 0:channels]
    for offset in range(1, size):
        total = total + squares[:, offset : offset + channels]
    div = ((total / size) * alpha + k) ** beta
    return input / div


# -- resampling: pixel shuffle, interpolation -------------------------------------------------


def _factor(function: str, name: str, value: Any) -> int:
    # Integral numbers (NumPy's too), not bools or tensors.
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise InvalidArgumentError(f"{function}(): {name} must be a positive int, got {value!r}")
    return int(value)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Rearrange ``(*, C * r**2, H, W)`` into ``(*, C, H * r, W * r)``, ``r = upscale_factor``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.pixel_shuffle(plugrad.arange(4.0).reshape(1, 4, 1, 1), 2)
    tensor([[[[0., 1.],
              [2., 3.]]]])
    """
    r = _factor("pixel_shuffle", "upscale_factor", upscale_factor)
    if _check_tensor("input", "pixel_shuffle", input).ndim < 3:
        raise ShapeError(f"pixel_shuffle(): input must be (*, C, H, W), got {input.shape}")
    *lead, channels, height, width = input.shape
    if channels % (r * r):
        raise ShapeError(
            f"pixel_shuffle(): the {channels} channels of the input {input.shape} are not "
            f"divisible by upscale_factor ** 2 = {r * r}"
        )
    m = len(lead)
    x = _ops.reshape(input, (*lead, channels // (r * r), r, r, height, width))
    x = _ops.permute_dims(x, (*range(m), m, m + 3, m + 1, m + 4, m + 2))
    return _new_memory(_ops.reshape(x, (*lead, channels // (r * r), height * r, width * r)))


def _new_memory(rearranged: Tensor) -> Tensor:
    """``rearranged`` as a copy where its reshapes gave a view (a factor of 1, axes of length 1):
    PyTorch's rearranging ops never hand back their input's memory."""
    return rearranged.clone() if hasattr(rearranged, "_view_base") else rearranged


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """Rearrange ``(*, C, H * r, W * r)`` into ``(*, C * r**2, H, W)``: undo :func:`pixel_shuffle`.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.pixel_unshuffle(plugrad.arange(4.0).reshape(1, 1, 2, 2), 2).flatten()
    tensor([0., 1., 2., 3.])
    """
    r = _factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    if _check_tensor("input", "pixel_unshuffle", input).ndim < 3:
        raise ShapeError(f"pixel_unshuffle(): input must be (*, C, H, W), got {input.shape}")
    *lead, channels, height, width = input.shape
    if height % r or width % r:
        raise ShapeError(
            f"pixel_unshuffle(): the height and width of the input {input.shape} must be "
            f"divisible by downscale_factor = {r}"
        )
    m = len(lead)
    x = _ops.reshape(input, (*lead, channels, height // r, r, width // r, r))
    x = _ops.permute_dims(x, (*range(m), m, m + 2, m + 4, m + 1, m + 3))
    return _new_memory(_ops.reshape(x, (*lead, channels * r * r, height // r, width // r)))


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of ``(N, C, *)`` input from ``groups`` groups (ShuffleNet's).

    The channels, seen as ``groups`` rows of ``C / groups``, are read column by column.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.channel_shuffle(plugrad.arange(4.0).reshape(1, 4, 1), 2).flatten()
    tensor([0., 2., 1., 3.])
    """
    g = _factor("channel_shuffle", "groups", groups)
    if _check_tensor("input", "channel_shuffle", input).ndim < 3:
        raise ShapeError(f"channel_shuffle(): input must be (N, C, *), got {input.shape}")
    batch, channels, *rest = input.shape
    if channels % g:
        raise ShapeError(
            f"channel_shuffle(): the {channels} channels of the input {input.shape} are not "
            f"divisible by groups = {g}"
        )
    x = _ops.reshape(input, (batch, g, channels // g, *rest))
    return _new_memory(_ops.reshape(_ops.moveaxis(x, 1, 2), tuple(input.shape)))


native_channel_shuffle = channel_shuffle


#: The modes of :func:`interpolate` and the spatial ranks each takes.
_INTERPOLATION = {
    "nearest": (1, 2, 3),
    "nearest-exact": (1, 2, 3),
    "linear": (1,),
    "bilinear": (2,),
    "trilinear": (3,),
    "area": (1, 2, 3),
    "bicubic": (2,),
}


#: ``value`` rounded to single precision, as PyTorch's kernels compute their indices.
_float32 = _dtypes.rounded_to_float32


def _nearest(
    x: Tensor, axis: int, size: int, out: int, scale: float | None, exact: bool, planar: bool
) -> Tensor:
    """Resample ``axis`` of ``x`` from ``size`` to ``out`` elements by copying the nearest.

    ``planar``: ``x`` is a batch of images (4-d), for which PyTorch's mode ``"nearest"``
    copies an axis whose size stays and takes ``i // 2`` for one that doubles, whatever
    ``scale_factor`` says (1.2 on 3 rows keeps them; its rule would repeat the first).
    """
    if planar and not exact and out in (size, 2 * size):
        picks = [i * size // out for i in range(out)]
    else:
        # NOTE: PyTorch's arithmetic, which gives the same picks where a product falls on an
        # integer: the step in single precision (double for float64 data), each source
        # position rounded to single precision before its floor.
        rounded = _float32 if x.dtype is not _dtypes.float64 else float
        if scale is not None and scale > 0:
            step = rounded(1.0 / scale)
        else:
            step = rounded(rounded(size) / out)
        offset = 0.5 if exact else 0.0
        picks = [min(math.floor(_float32((i + offset) * step)), size - 1) for i in range(out)]
    if picks == list(range(size)):
        return x
    index = asarray(picks, dtype=x.device.default_int_dtype, device=x.device)
    return _ops.take(x, index, axis=axis)


def _sources(
    rounded: Callable[[float], float],
    size: int,
    out: int,
    scale: float | None,
    align_corners: bool,
) -> list[float]:
    """Where each of ``out`` elements falls on an axis of ``size`` input elements, in
    PyTorch's arithmetic (``rounded`` to the precision of the data); it may be below 0."""
    if align_corners:
        ratio = rounded(rounded(size - 1) / (out - 1)) if out > 1 else 0.0
        return [rounded(ratio * i) for i in range(out)]
    ratio = rounded(1.0 / scale) if scale is not None and scale > 0 else rounded(size / out)
    return [rounded(rounded(ratio * rounded(i + 0.5)) - 0.5) for i in range(out)]


def _linear(
    x: Tensor, axis: int, size: int, out: int, scale: float | None, align_corners: bool
) -> Tensor:
    """Resample ``axis`` of ``x`` from ``size`` to ``out`` elements by linear interpolation."""
    if out == size:
        return x
    # PyTorch's arithmetic, in single precision for single-precision data.
    rounded = _float32 if x.dtype is not _dtypes.float64 else float
    sources = _sources(rounded, size, out, scale, align_corners)
    sources = sources if align_corners else [max(s, 0.0) for s in sources]
    first = [min(math.floor(s), size - 1) for s in sources]
    second = [i + 1 if i < size - 1 else i for i in first]
    share = [min(max(rounded(s - i), 0.0), 1.0) for s, i in zip(sources, first)]
    shape = (out,) + (1,) * (x.ndim - 1 - axis)
    weights = [
        _ops.reshape(asarray(w, dtype=x.dtype, device=x.device), shape)
        for w in ([rounded(1.0 - s) for s in share], share)
    ]
    picked = [
        _ops.take(x, asarray(i, dtype=x.device.default_int_dtype, device=x.device), axis=axis)
        for i in (first, second)
    ]
    return picked[0] * weights[0] + picked[1] * weights[1]


#: PyTorch's bicubic convolution parameter (Keys' ``a``).
_CUBIC_A = -0.75


def _cubic(
    x: Tensor, axis: int, size: int, out: int, scale: float | None, align_corners: bool
) -> Tensor:
    """Resample ``axis`` of ``x`` from ``size`` to ``out`` elements by cubic convolution
    (``a = -0.75``), the four neighbours clamped to the axis, as PyTorch's bicubic."""
    if out == size and (align_corners or scale is None or scale == 1):
        return x  # every weight is 0 but the element's own
    rounded = _float32 if x.dtype is not _dtypes.float64 else float
    # (no clamp at 0, unlike the linear modes: the weights reach past the edge)
    sources = _sources(rounded, size, out, scale, align_corners)
    bases = [math.floor(s) for s in sources]
    shares = [rounded(s - b) for s, b in zip(sources, bases)]
    a = _CUBIC_A

    def near(t: float) -> float:  # |t| <= 1
        return rounded(rounded(rounded((a + 2) * t - (a + 3)) * t) * t + 1)

    def far(t: float) -> float:  # 1 < |t| < 2
        return rounded(rounded(rounded(rounded(a * t - 5 * a) * t) + 8 * a) * t - 4 * a)

    weights = [
        [far(t + 1.0) for t in shares],
        [near(t) for t in shares],
        [near(rounded(1.0 - t)) for t in shares],
        [far(rounded(1.0 - t) + 1.0) for t in shares],
    ]
    shape = (out,) + (1,) * (x.ndim - 1 - axis)
    result: Tensor | None = None
    for offset, weight in zip((-1, 0, 1, 2), weights):
        index = [min(max(b + offset, 0), size - 1) for b in bases]
        picked = _ops.take(
            x, asarray(index, dtype=x.device.default_int_dtype, device=x.device), axis=axis
        )
        term = picked * _ops.reshape(asarray(weight, dtype=x.dtype, device=x.device), shape)
        result = term if result is None else result + term
    assert result is not None
    return result


def _antialiased(
    x: Tensor,
    axis: int,
    size: int,
    out: int,
    scale: float | None,
    align_corners: bool,
    mode: str,
) -> Tensor:
    """Resample ``axis`` of ``x`` from ``size`` to ``out`` elements with PyTorch's
    antialiasing filter: a triangle (``"bilinear"``) or a cubic (``"bicubic"``, ``a = -0.5``)
    stretched by the shrinking factor, its weights summing to one."""
    if out == size:
        return x  # as PyTorch's: an axis that keeps its length is not resampled (scale 1.1)
    spans, rows = _antialias_rows(size, out, scale, align_corners, mode)
    # Each output element is a weighted sum of the few input elements under its filter:
    # gathered (taps per output, the last repeated and weighted 0 where a filter is
    # narrower) and summed, differentiable in x. (A dense (out, size) weight matrix cost
    # out * size per row: 0.4 s for a 1080p image shrunk four times.)
    taps = max(1, max(len(row) for row in rows))
    index = [min(first + k, size - 1) for first in spans for k in range(taps)]
    weights = [w for row in rows for w in row + [0.0] * (taps - len(row))]
    picked = _ops.take(x, asarray(index, device=x.device), axis=axis)
    picked = _ops.reshape(picked, (*x.shape[:axis], out, taps, *x.shape[axis + 1 :]))
    trailing = (1,) * (x.ndim - axis - 1)
    weight = _ops.reshape(asarray(weights, dtype=x.dtype, device=x.device), (out, taps, *trailing))
    return _ops.sum(picked * weight, axis=axis + 1)


def _keys_cubic(a: float) -> Callable[[float], float]:
    """Keys' cubic convolution kernel with parameter ``a``, in double precision."""

    def kernel(t: float) -> float:
        t = abs(t)
        if t < 1:
            return ((a + 2) * t - (a + 3)) * t * t + 1
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a if t < 2 else 0.0

    return kernel


def _triangle(t: float) -> float:
    return max(0.0, 1.0 - abs(t))


def _antialias_rows(
    size: int, out: int, scale: float | None, align_corners: bool, mode: str
) -> tuple[list[int], list[list[float]]]:
    """PyTorch's antialiasing filter for each of ``out`` elements over an axis of ``size``:
    the first input element it reaches and the weights from there, summing to one. The
    filter is a triangle (``"bilinear"``) or Keys' cubic with ``a = -0.5``, stretched by
    the shrinking factor."""
    if align_corners:
        step = (size - 1) / (out - 1) if out > 1 else 0.0
    else:
        step = 1.0 / scale if scale is not None and scale > 0 else size / out
    kernel, reach = (_triangle, 1.0) if mode == "bilinear" else (_keys_cubic(-0.5), 2.0)
    support = reach * step if step >= 1.0 else reach
    shrink = 1.0 / step if step >= 1.0 else 1.0  # (a product, as PyTorch's: not a quotient)
    widest = math.ceil(support) * 2 + 1
    spans, rows = [], []
    for i in range(out):
        center = step * (i + 0.5)
        # (int() truncates toward zero, as PyTorch's cast of the bounds)
        first = max(int(center - support + 0.5), 0)
        count = min(max(min(int(center + support + 0.5), size) - first, 0), widest)
        row = [kernel((j - center + 0.5) * shrink) for j in range(first, first + count)]
        total = sum(row)
        spans.append(first)
        rows.append([w / total for w in row] if total else row)
    return spans, rows


def _interpolation_rows(
    size: int, out: int, scale: float | None, align_corners: bool, mode: str
) -> tuple[list[int], list[list[float]], float]:
    """The linear (``"bilinear"``) or cubic (``a = -0.75``) weights of each of ``out``
    elements over an axis of ``size`` as PyTorch's ``uint8`` tables hold them: the first
    input element and the weights from there, a neighbour past an edge adding its weight
    to the edge element's; and the largest weight met on the way (a partial sum too)."""
    cubic = mode == "bicubic"
    reach = 2 if cubic else 1
    kernel = _keys_cubic(_CUBIC_A) if cubic else _triangle
    spans, rows, largest = [], [], 0.0
    for source in _sources(float, size, out, scale, align_corners):
        if not cubic:
            source = max(source, 0.0)
        index = min(math.floor(source), size - 1)
        share = min(max(source - index, 0.0), 1.0)
        lowest = index - reach + 1
        first = max(lowest, 0)
        count = min(max(min(index + reach + 1, size) - first, 0), 2 * reach)
        row = [0.0] * (2 * reach)
        slot = 0
        for k in range(2 * reach):
            if lowest + k <= 0:
                slot = 0
            elif lowest + k >= size - 1:
                slot = count - 1
            row[slot] += kernel(k + 1 - reach - share)
            largest = max(largest, row[slot])
            slot += 1
        spans.append(first)
        rows.append(row[:count])
    return spans, rows, largest


def _fixed_point_resampled(
    x: Tensor,
    axis: int,
    size: int,
    out: int,
    scale: float | None,
    align_corners: bool,
    mode: str,
    antialias: bool,
) -> Tensor:
    """Resample ``axis`` of a ``uint8`` ``x`` as PyTorch's ``uint8`` kernels do, bit for bit.

    The weights are scaled by ``2**bits`` and rounded to integers (``bits`` the most that
    keeps the largest weight, or partial sum of a weight past an edge, below ``2**15``); each
    output element is the integer sum of its inputs times their weights, plus one half,
    shifted right by ``bits`` and clipped to 0..255.
    """
    if out == size:
        return x  # as PyTorch's: an axis that keeps its length is left as it is
    if antialias:
        spans, rows = _antialias_rows(size, out, scale, align_corners, mode)
        largest = max((w for row in rows for w in row), default=0.0)
    else:
        spans, rows, largest = _interpolation_rows(size, out, scale, align_corners, mode)
    bits = 0
    while bits < 22 and int(0.5 + largest * (1 << (bits + 1))) < 1 << 15:
        bits += 1
    # Rounded half away from zero: int() truncates toward zero.
    rows = [[int(w * (1 << bits) + (0.5 if w >= 0 else -0.5)) for w in row] for row in rows]
    taps = max(1, max(len(row) for row in rows))
    index = [min(first + k, size - 1) for first in spans for k in range(taps)]
    weights = [w for row in rows for w in row + [0] * (taps - len(row))]
    int32 = _dtypes.int32
    picked = _ops.take(_ops.astype(x, int32), asarray(index, device=x.device), axis=axis)
    picked = _ops.reshape(picked, (*x.shape[:axis], out, taps, *x.shape[axis + 1 :]))
    trailing = (1,) * (x.ndim - axis - 1)
    weight = _ops.reshape(asarray(weights, dtype=int32, device=x.device), (out, taps, *trailing))
    total = _ops.sum(picked * weight, axis=axis + 1, dtype=int32) + (1 << (bits - 1))
    return _ops.astype(_ops.clip(total // (1 << bits), 0, 255), _dtypes.uint8)


@_autocast.listed("nn.functional.affine_grid")
def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid of the affine maps ``theta`` for :func:`grid_sample`, as PyTorch's.

    ``theta`` is ``(N, 2, 3)`` for a 4-d ``size`` ``(N, C, H, W)``, giving a
    grid ``(N, H, W, 2)`` of ``(x, y)`` in ``[-1, 1]``; or ``(N, 3, 4)`` for a
    5-d ``size``, giving ``(N, D, H, W, 3)``. ``align_corners`` places -1 and 1
    at the centers of the corner pixels (True) or at their outer edges
    (False, the default). Differentiable in ``theta``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> identity = plugrad.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    >>> F.affine_grid(identity, (1, 1, 1, 2), align_corners=False)
    tensor([[[[-0.5000,  0.0000],
              [ 0.5000,  0.0000]]]])
    """
    _check_tensor("theta", "affine_grid", theta)
    size = tuple(int(n) for n in size)
    if len(size) not in (4, 5):
        raise InvalidArgumentError(
            f"affine_grid(): size must be 4-d or 5-d (N, C, ...), got {size}"
        )
    spatial = size[2:]
    rows = len(spatial)
    if not theta.dtype.kind == "real floating":
        raise DtypeError(f"affine_grid(): theta must be floating-point, got {theta.dtype.name}")
    if theta.shape != (size[0], rows, rows + 1):
        raise ShapeError(
            f"affine_grid(): for a {len(size)}-d size, theta must be ({size[0]}, {rows}, "
            f"{rows + 1}), got {theta.shape}"
        )
    return _ops.affine_grid(theta, size=size, align_corners=bool(align_corners))


@_autocast.listed("nn.functional.grid_sample")
def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """Sample ``input`` at the points of ``grid``, as PyTorch's.

    ``input`` ``(N, C, H, W)`` takes a grid ``(N, H_out, W_out, 2)`` of
    ``(x, y)``; volumetric ``input`` ``(N, C, D, H, W)`` takes a grid
    ``(N, D_out, H_out, W_out, 3)`` of ``(x, y, z)``. The coordinates lie in
    ``[-1, 1]`` across each axis (``align_corners`` as in :func:`affine_grid`).
    ``mode`` is ``"bilinear"`` (trilinear for volumes), ``"nearest"`` (halves
    to even) or ``"bicubic"`` (4-d input only: cubic convolution, ``a = -0.75``,
    over the 4 x 4 neighbours, each padded on its own). Points outside are read
    as zeros (``padding_mode="zeros"``), as the nearest border value
    (``"border"``) or reflected back inside (``"reflection"``).
    Differentiable in ``input`` and, but for ``"nearest"``, in ``grid``.

    A coordinate with no place in the image is placed as PyTorch's CPU kernels
    place it: with ``"zeros"`` a NaN reads as outside (NaN in the blending
    modes, 0 in ``"nearest"``); with ``"border"`` a NaN, and with
    ``"reflection"`` a NaN or an infinity, goes to the first pixel of its axis
    for 4-d input and to the last for 5-d input; ``"border"`` clips an infinity
    to the edge; ``"bicubic"`` gives NaN for all of them. Such a coordinate has
    a zero gradient.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> image = plugrad.tensor([[[[0.0, 10.0], [20.0, 30.0]]]])
    >>> F.grid_sample(image, plugrad.tensor([[[[0.0, 0.0]]]]), align_corners=True)
    tensor([[[[15.]]]])
    >>> point = plugrad.tensor([[[[0.5, 0.5]]]])
    >>> F.grid_sample(image, point, "bicubic", "border", align_corners=True)
    tensor([[[[23.2031]]]])
    """
    _check_tensor("input", "grid_sample", input)
    _check_tensor("grid", "grid_sample", grid)
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise InvalidArgumentError(
            f"grid_sample(): mode must be 'bilinear', 'nearest' or 'bicubic', got {mode!r}"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise InvalidArgumentError(
            "grid_sample(): padding_mode must be 'zeros', 'border' or 'reflection', got "
            f"{padding_mode!r}"
        )
    if input.ndim not in (4, 5) or grid.ndim != input.ndim or grid.shape[0] != input.shape[0]:
        raise ShapeError(
            "grid_sample(): input must be (N, C, H, W) with a grid (N, H_out, W_out, 2), or "
            "(N, C, D, H, W) with a grid (N, D_out, H_out, W_out, 3), with the same N; got "
            f"{input.shape} and {grid.shape}"
        )
    k = input.ndim - 2
    if grid.shape[-1] != k:
        raise ShapeError(
            f"grid_sample(): the grid of a {input.ndim}-d input holds {k} coordinates in its "
            f"last axis, got a grid of shape {grid.shape}"
        )
    if mode == "bicubic" and k != 2:
        raise ShapeError(
            f"grid_sample(): mode='bicubic' takes 4-d input (N, C, H, W), got {input.shape}; "
            "use 'bilinear' or 'nearest' for a volume"
        )
    if input.dtype.kind != "real floating" or grid.dtype != input.dtype:
        raise DtypeError(
            "grid_sample(): input and grid must be floating-point of one dtype, got "
            f"{input.dtype.name} and {grid.dtype.name}"
        )
    if 0 in input.shape[2:]:
        raise ShapeError(
            f"grid_sample(): input {input.shape} has an empty spatial axis; there is nothing "
            "to sample"
        )
    n, c = input.shape[:2]
    spatial = tuple(input.shape[2:])  # (H, W) or (D, H, W)
    sizes = spatial[::-1]  # the sizes along the grid's coordinates (x, y[, z])
    out = tuple(grid.shape[1:-1])
    points = math.prod(out)
    corners = bool(align_corners)
    flat = _ops.reshape(input, (n, c, math.prod(spatial)))
    # PyTorch's kernels put a NaN (and, reflecting, an infinity) on the first pixel for
    # images, on the last for volumes (another kernel, the other operand order of a min).
    stray = 0 if k == 2 else None

    def column(w: Tensor) -> Tensor:
        return _ops.reshape(w, (n, 1, *out))

    def read(indices: Sequence[Tensor]) -> Tensor:
        """``input`` at the integer points ``indices`` (one per coordinate), 0 outside."""
        inside = None
        for index, size in zip(indices, sizes):
            within = (index >= 0) & (index <= size - 1)
            inside = within if inside is None else inside & within
        assert inside is not None
        # (A NaN or infinite coordinate is outside: no integer index is made of it.)
        index_dtype = flat.device.default_int_dtype  # (int32 on JAX without x64)
        linear = None
        for index, size in zip(indices[::-1], spatial):  # (the slowest axis first)
            safe = _ops.astype(_ops.where(inside, index, 0.0), index_dtype)
            linear = safe if linear is None else linear * size + safe
        assert linear is not None
        linear = _ops.broadcast_to(_ops.reshape(linear, (n, 1, points)), (n, c, points))
        values = _ops.reshape(_ops.take_along_axis(flat, linear, axis=2), (n, c, *out))
        return _ops.where(column(inside), values, 0.0)

    coordinates = [grid[..., i] for i in range(k)]
    if mode == "bicubic":
        return _bicubic_sample(read, column, coordinates, sizes, corners, padding_mode)
    positions = [
        _source_coordinates(g, size, corners, padding_mode, size - 1 if stray is None else stray)
        for g, size in zip(coordinates, sizes)
    ]
    if mode == "nearest":
        # The grid gets a zero gradient, as PyTorch's (a where() of no element: no NaN of inf).
        never = zeros(positions[0].shape, dtype=_dtypes.bool, device=input.device)
        connected = _ops.where(never, sum(positions[1:], positions[0]), 0.0)
        return read([_ops.round(p) for p in positions]) + column(connected)
    lows = [_ops.floor(p) for p in positions]
    shares = [p - low for p, low in zip(positions, lows)]  # (their gradients reach the grid)
    result = None
    for corner in range(2**k):
        far = [bool(corner >> i & 1) for i in range(k)]
        weight = None
        for is_far, share in zip(far, shares):
            w = share if is_far else 1 - share
            weight = w if weight is None else weight * w
        assert weight is not None
        term = read([low + 1 if is_far else low for low, is_far in zip(lows, far)]) * column(weight)
        result = term if result is None else result + term
    assert result is not None
    return result


def _bicubic_sample(
    read: Callable[[Sequence[Tensor]], Tensor],
    column: Callable[[Tensor], Tensor],
    coordinates: Sequence[Tensor],
    sizes: Sequence[int],
    align_corners: bool,
    padding: str,
) -> Tensor:
    """:func:`grid_sample`'s ``"bicubic"``: cubic convolution over the 4 x 4 pixels around
    each point, each neighbour's index padded on its own (PyTorch's way)."""
    bases, taps = [], []
    for coordinate, size in zip(coordinates, sizes):
        position = _unnormalized(coordinate, size, align_corners)
        base = _ops.floor(position)
        bases.append(base)
        taps.append(_cubic_coefficients(position - base))
    result = None
    for j in range(4):
        for i in range(4):
            index = []
            for base, size, offset in zip(bases, sizes, (i, j)):
                at = (base + (offset - 1)).detach()
                if padding != "zeros":
                    at = _ops.floor(_padded(at, size, align_corners, padding, 0))
                index.append(at)
            term = read(index) * column(taps[0][i] * taps[1][j])
            result = term if result is None else result + term
    assert result is not None
    return result


def _cubic_coefficients(t: Tensor) -> list[Tensor]:
    """The weights of the 4 neighbours at ``-1, 0, 1, 2`` of a point ``t`` past the second,
    by Keys' cubic convolution with ``a`` = :data:`_CUBIC_A` (differentiable in ``t``)."""
    a = _CUBIC_A

    def near(s: Tensor) -> Tensor:  # |s| <= 1
        return ((a + 2) * s - (a + 3)) * s * s + 1

    def far(s: Tensor) -> Tensor:  # 1 < |s| < 2
        return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _unnormalized(coordinate: Tensor, size: int, align_corners: bool) -> Tensor:
    """A grid coordinate in ``[-1, 1]`` as a pixel position on an axis of ``size``."""
    if align_corners:
        return (coordinate + 1) * ((size - 1) / 2)
    return ((coordinate + 1) * size - 1) / 2


def _source_coordinates(
    coordinate: Tensor, size: int, align_corners: bool, padding: str, stray: int = 0
) -> Tensor:
    """Grid coordinates in ``[-1, 1]`` as pixel positions of an axis of ``size``, padded;
    see :func:`_padded` for ``stray``."""
    return _padded(
        _unnormalized(coordinate, size, align_corners), size, align_corners, padding, stray
    )


def _padded(position: Tensor, size: int, align_corners: bool, padding: str, stray: int) -> Tensor:
    """``position`` on an axis of ``size`` brought inside by ``padding``.

    A position with no place (NaN; with reflection an infinity too) goes to the pixel
    ``stray``, with no gradient, as PyTorch's kernels place it.
    """
    if padding == "zeros":
        return position
    unplaced = _ops.isnan(position) if padding == "border" else ~_ops.isfinite(position)
    # (where() sends no gradient to the NaN: the grid's gradient there is 0.)
    position = _ops.where(unplaced, float(stray), position)
    if padding == "reflection":
        if align_corners:
            position = _reflected(position, 0.0, float(size - 1))
        else:
            position = _reflected(position, -0.5, size - 0.5)
    return _clipped_to_the_image(position, size)


def _clipped_to_the_image(position: Tensor, size: int) -> Tensor:
    """``position`` clipped to ``[0, size - 1]``, with no gradient at the bounds or beyond.

    As PyTorch's: a point exactly on the edge (an identity grid's first and last) is
    treated as clipped. Letting the gradient through there gave the slope toward the zero
    past the edge, which border padding never reads.
    """
    inside = (position > 0) & (position < size - 1)
    return _ops.where(inside, position, _ops.clip(position, 0, size - 1).detach())


def _reflected(position: Tensor, low: float, high: float) -> Tensor:
    """``position`` reflected by the bounds ``low`` and ``high`` until it lies between."""
    span = high - low
    if span <= 0:
        return position * 0.0 + low
    distance = _ops.abs(position - low)
    flips = _ops.floor(distance / span)
    extra = distance - flips * span  # (fmod, written so that its gradient is 1)
    even = _ops.remainder(flips, 2) == 0
    return _ops.where(even, extra + low, span - extra + low)


@_autocast.listed("nn.functional.interpolate")
def interpolate(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resample the spatial axes of ``(N, C, ...)`` input to ``size`` or by ``scale_factor``.

    Parameters
    ----------
    input : Tensor
        ``(N, C, L)``, ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
    size : int or sequence of int, optional
        The output's spatial size.
    scale_factor : float or sequence of float, optional
        Multiplies each spatial size (rounded down); give it or ``size``.
    mode : {"nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area"}
        ``"linear"`` takes 3-d input, ``"bilinear"`` and ``"bicubic"`` 4-d,
        ``"trilinear"`` 5-d; ``"bicubic"`` is PyTorch's cubic convolution
        (``a = -0.75``); ``"area"`` is :func:`adaptive_avg_pool1d`,
        :func:`adaptive_avg_pool2d` or :func:`adaptive_avg_pool3d` (3-, 4- or 5-d input).
        A ``uint8`` image is blended as PyTorch's CPU kernels blend it, bit for bit:
        one axis after the other (the last first), each in fixed point (integer
        weights scaled by a power of two, the sum rounded half up and clipped to
        0..255); an axis that keeps its size is left as it is. (PyTorch takes ``uint8``
        in 4-d input only; 3- and 5-d input follow the same rule.) Other integer images,
        which PyTorch refuses, are blended in ``float32`` and rounded to the nearest
        value (``"bicubic"`` and antialiasing round after each axis).
    align_corners : bool, optional
        Linear and cubic modes only: map the corner elements of input and output onto
        each other (``True``) or their corner edges (``False``, the default).
    recompute_scale_factor : bool, optional
        Compute the sampling from the rounded output size instead of ``scale_factor``.
    antialias : bool
        ``"bilinear"`` and ``"bicubic"`` only: when shrinking an axis, widen the
        filter by the factor, so that each output element averages all the input
        elements it covers (PyTorch's, and PIL's, resize; its ``"bicubic"`` filter
        has ``a = -0.5``). Growing an axis, it is the triangle or cubic filter
        itself, its weights renormalized at the edges.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x = plugrad.tensor([[[1.0, 2.0, 4.0]]])
    >>> F.interpolate(x, scale_factor=2)
    tensor([[[1., 1., 2., 2., 4., 4.]]])
    >>> F.interpolate(x, size=5, mode="linear", align_corners=True)
    tensor([[[1.0000, 1.5000, 2.0000, 3.0000, 4.0000]]])
    """
    _check_tensor("input", "interpolate", input)
    if mode not in _INTERPOLATION:
        raise InvalidArgumentError(
            f"interpolate(): mode must be one of {tuple(_INTERPOLATION)}, got {mode!r}"
        )
    nd = input.ndim - 2
    if nd not in _INTERPOLATION[mode]:
        ranks = " or ".join(f"{n + 2}-d" for n in _INTERPOLATION[mode])
        raise ShapeError(
            f"interpolate(): mode={mode!r} takes {ranks} input (N, C, spatial...), got "
            f"shape {input.shape}"
        )
    linear = mode in ("linear", "bilinear", "trilinear", "bicubic")  # (blends neighbours)
    if align_corners is not None and not linear:
        raise InvalidArgumentError(
            f"interpolate(): align_corners is for the modes 'linear', 'bilinear', 'bicubic' "
            f"and 'trilinear' only, not {mode!r}; leave it None"
        )
    if antialias and mode not in ("bilinear", "bicubic"):
        raise InvalidArgumentError(
            f"interpolate(): antialias=True is for the modes 'bilinear' and 'bicubic' (4-d "
            f"input), not {mode!r}"
        )
    if (size is None) == (scale_factor is None):
        raise ArgumentError("interpolate(): give exactly one of size and scale_factor")
    lengths = tuple(input.shape[2:])
    scales: tuple[float | None, ...] = (None,) * nd
    if size is not None:
        if recompute_scale_factor:
            raise ArgumentError(
                "interpolate(): recompute_scale_factor=True needs scale_factor, not size"
            )
        sizes = _ntuple("interpolate", "size", size, nd, 1)
    else:
        # (NumPy scalars are numbers here, as to PyTorch.)
        one = isinstance(scale_factor, numbers.Real) or not isinstance(scale_factor, Sequence)
        factors: tuple[Any, ...] = (scale_factor,) * nd if one else tuple(scale_factor)  # type: ignore[arg-type]
        if len(factors) != nd or not all(
            isinstance(f, numbers.Real)
            and not isinstance(f, bool)
            and 0 < float(f) < math.inf  # (an infinite size overflowed: a bare OverflowError)
            for f in factors
        ):
            raise InvalidArgumentError(
                f"interpolate(): scale_factor must be a positive finite number or {nd} of "
                f"them, got {scale_factor!r}"
            )
        sizes = tuple(math.floor(n * float(f)) for n, f in zip(lengths, factors))
        if min(sizes) < 1:
            raise ShapeError(
                f"interpolate(): scale_factor {scale_factor!r} gives the empty size {sizes} "
                f"for the input {input.shape}"
            )
        if not recompute_scale_factor:
            scales = tuple(float(f) for f in factors)
    if mode == "area":
        if nd == 1:
            return adaptive_avg_pool1d(input, sizes[0])
        if nd == 3:
            return adaptive_avg_pool3d(input, sizes)
        return adaptive_avg_pool2d(input, (sizes[0], sizes[1]))
    out = input
    integral = linear and input.dtype.kind in (*_INTEGER_KINDS, "bool")
    if integral:
        if input.dtype is _dtypes.bool:
            raise DtypeError(
                f"interpolate(mode={mode!r}) blends values, which booleans cannot hold; "
                "convert the input first (x.float())"
            )
        if input.dtype is _dtypes.uint8:  # PyTorch's images: its fixed-point arithmetic
            filter_mode = "bicubic" if mode == "bicubic" else "bilinear"
            for axis in reversed(range(nd)):  # the last axis first, as PyTorch's
                out = _fixed_point_resampled(
                    out, axis + 2, lengths[axis], sizes[axis], scales[axis],
                    bool(align_corners), filter_mode, antialias,
                )  # fmt: skip
            # A new tensor even where nothing moved, as in PyTorch.
            return out.clone() if out is input else out
        # Other integers (which PyTorch refuses) are blended in float32 and rounded back:
        # weights in the integer dtype were 0 or 1, and the result mostly zeros.
        out = _ops.astype(input, _dtypes.float32)
    half = linear and input.dtype in _dtypes.half_floats
    if half:  # blended in float32 and rounded once, as PyTorch's: 0.7 + 0.3 is not 1 in float16
        out = _ops.astype(input, _dtypes.float32)
    # The last axis first: PyTorch's weighted sums nest in that order.
    for axis in reversed(range(nd)):
        length, target, scale = lengths[axis], sizes[axis], scales[axis]
        if antialias:
            out = _antialiased(out, axis + 2, length, target, scale, bool(align_corners), mode)
            if integral:  # each pass rounded into the dtype's range
                info = iinfo(input.dtype)
                out = _ops.clip(_ops.round(out), info.min, info.max)
        elif mode == "bicubic":
            out = _cubic(out, axis + 2, length, target, scale, bool(align_corners))
            if integral:  # each pass rounded into the dtype's range
                info = iinfo(input.dtype)
                out = _ops.clip(_ops.round(out), info.min, info.max)
        elif linear:
            out = _linear(out, axis + 2, length, target, scale, bool(align_corners))
        else:
            exact = mode == "nearest-exact"
            out = _nearest(out, axis + 2, length, target, scale, exact, nd == 2)
    if integral:
        return _ops.astype(_ops.round(out), input.dtype)
    if half:
        return _ops.astype(out, input.dtype)
    # A new tensor even where nothing moved, as in PyTorch: writing to it leaves the input.
    return out.clone() if out is input else out


def _deprecated_upsample(name: str) -> None:
    warnings.warn(
        f"nn.functional.{name} is deprecated; use nn.functional.interpolate instead",
        UserWarning,
        stacklevel=3,
    )


@_autocast.listed("nn.functional.upsample")
def upsample(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
) -> Tensor:
    """Deprecated: :func:`interpolate`, with a warning (PyTorch's old name)."""
    _deprecated_upsample("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


@_autocast.listed("nn.functional.upsample_nearest")
def upsample_nearest(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
) -> Tensor:
    """Deprecated: :func:`interpolate` with ``mode="nearest"``, with a warning."""
    _deprecated_upsample("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


@_autocast.listed("nn.functional.upsample_bilinear")
def upsample_bilinear(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
) -> Tensor:
    """Deprecated: :func:`interpolate` with ``mode="bilinear", align_corners=True``, with a
    warning (as :class:`~plugrad.nn.UpsamplingBilinear2d`)."""
    _deprecated_upsample("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -- sliding blocks: unfold, fold ---------------------------------------------------------------


def _block_arguments(
    function: str, kernel_size: Any, dilation: Any, padding: Any, stride: Any
) -> tuple[tuple[int, ...], ...]:
    return (
        _ntuple(function, "kernel_size", kernel_size, 2, 1),
        _ntuple(function, "dilation", dilation, 2, 1),
        _ntuple(function, "padding", padding, 2, 0),
        _ntuple(function, "stride", stride, 2, 1),
    )


def _block_counts(
    size: Sequence[int], kernel: Sequence[int], dil: Sequence[int], pads: Sequence[int],
    step: Sequence[int],
) -> tuple[int, ...]:  # fmt: skip
    return tuple(
        (n + 2 * p - d * (k - 1) - 1) // s + 1
        for n, k, d, p, s in zip(size, kernel, dil, pads, step)
    )


def unfold(
    input: Tensor,
    kernel_size: IntPair,
    dilation: IntPair = 1,
    padding: IntPair = 0,
    stride: IntPair = 1,
) -> Tensor:
    """Every sliding block of ``(N, C, H, W)`` input as a column: ``(N, C * kh * kw, L)``.

    ``L`` is the number of blocks (im2col); within a column the values run
    over the channels, then the kernel's rows and columns, as in PyTorch.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.unfold(plugrad.arange(6.0).reshape(1, 1, 2, 3), 2)
    tensor([[[0., 1.],
             [1., 2.],
             [3., 4.],
             [4., 5.]]])
    """
    _check_tensor("input", "unfold", input)
    kernel, dil, pads, step = _block_arguments("unfold", kernel_size, dilation, padding, stride)
    input, unbatched = _batched("unfold", input, 2)
    n, _, height, width = input.shape
    rows, columns = _block_counts((height, width), kernel, dil, pads, step)
    if rows < 1 or columns < 1:
        raise ShapeError(
            f"unfold(): the padded input {(height + 2 * pads[0], width + 2 * pads[1])} is "
            f"smaller than the dilated kernel {kernel} (dilation {dil})"
        )
    padded = pad(input, (pads[1], pads[1], pads[0], pads[0])) if any(pads) else input
    blocks = [
        padded[
            ...,
            i * dil[0] : i * dil[0] + step[0] * (rows - 1) + 1 : step[0],
            j * dil[1] : j * dil[1] + step[1] * (columns - 1) + 1 : step[1],
        ]
        for i in range(kernel[0])
        for j in range(kernel[1])
    ]
    stacked = _ops.stack(blocks, axis=2)
    cols = _ops.reshape(stacked, (n, math.prod(stacked.shape[1:3]), rows * columns))
    return _ops.squeeze(cols, axis=0) if unbatched else cols


def fold(
    input: Tensor,
    output_size: IntPair,
    kernel_size: IntPair,
    dilation: IntPair = 1,
    padding: IntPair = 0,
    stride: IntPair = 1,
) -> Tensor:
    """Add columns of sliding blocks up into ``(N, C, *output_size)``: :func:`unfold`'s adjoint.

    ``input`` is ``(N, C * kh * kw, L)`` (or ``(C * kh * kw, L)``), ``L`` the
    number of blocks that fit ``output_size``; overlapping values add up.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.fold(plugrad.ones((1, 4, 2)), (2, 3), 2)
    tensor([[[[1., 2., 1.],
              [1., 2., 1.]]]])
    """
    _check_tensor("input", "fold", input)
    kernel, dil, pads, step = _block_arguments("fold", kernel_size, dilation, padding, stride)
    size = _ntuple("fold", "output_size", output_size, 2, 1)
    if input.ndim not in (2, 3):
        raise ShapeError(
            f"fold(): input must be (N, C * kh * kw, L) or (C * kh * kw, L), got {input.shape}"
        )
    unbatched = input.ndim == 2
    if unbatched:
        input = _ops.expand_dims(input, axis=0)
    depth, blocks = input.shape[1:]
    area = kernel[0] * kernel[1]
    if depth % area:
        raise ShapeError(
            f"fold(): the input's {depth} rows are not divisible by the kernel's "
            f"{kernel[0]} * {kernel[1]} = {area} elements"
        )
    rows, columns = _block_counts(size, kernel, dil, pads, step)
    if rows < 1 or columns < 1 or rows * columns != blocks:
        raise ShapeError(
            f"fold(): output_size {size} with kernel_size {kernel}, dilation {dil}, padding "
            f"{pads} and stride {step} has {max(rows, 0) * max(columns, 0)} blocks, but the "
            f"input {input.shape} has {blocks}"
        )
    out = _Fold.apply(input, size, (kernel, dil, pads, step))
    return _ops.squeeze(out, axis=0) if unbatched else out


class _Fold(Function):
    """:func:`fold` of ``(N, C * kh * kw, L)`` columns, whose gradient is :func:`unfold`."""

    @staticmethod
    def forward(
        ctx: Any, input: Tensor, size: tuple[int, ...], blocks: tuple[tuple[int, ...], ...]
    ) -> Tensor:
        ctx.blocks = blocks
        kernel, dil, pads, step = blocks
        n, depth, _ = input.shape
        area = kernel[0] * kernel[1]
        rows, columns = _block_counts(size, kernel, dil, pads, step)
        # The blocks' values at each kernel position fill a strided slice of the padded
        # output (no two blocks share a place there): one slice added per kernel position.
        # (A transposed convolution with a one-hot kernel would multiply every value by the
        # kernel's zeros too, spreading an inf or NaN to the neighbouring places.)
        height, width = size[0] + 2 * pads[0], size[1] + 2 * pads[1]
        pieces = _ops.unstack(_ops.reshape(input, (n, depth // area, area, rows, columns)), axis=2)
        out = zeros((n, depth // area, height, width), dtype=input.dtype, device=input.device)
        for i in range(kernel[0]):
            for j in range(kernel[1]):
                top, left = i * dil[0], j * dil[1]
                key = (
                    ...,
                    slice(top, top + step[0] * (rows - 1) + 1, step[0]),
                    slice(left, left + step[1] * (columns - 1) + 1, step[1]),
                )
                out = _ops.setitem(out, out[key] + pieces[i * kernel[1] + j], key=key)
        if any(pads):
            out = out[..., pads[0] : pads[0] + size[0], pads[1] : pads[1] + size[1]]
        return out

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Tensor) -> tuple[Any, ...]:
        return unfold(grad_outputs[0], *ctx.blocks), None, None


# -- attention ----------------------------------------------------------------------------

_SDPA = "scaled_dot_product_attention"
_MHA = "multi_head_attention_forward"


# -- checks -------------------------------------------------------------------------------


def _probability(function: str, name: str, p: Any) -> float:
    if not isinstance(p, int | float) or isinstance(p, bool) or not 0.0 <= p <= 1.0:
        raise InvalidArgumentError(
            f"{function}(): {name} must be a probability between 0 and 1, got {p!r}"
        )
    return float(p)


def _positive_int(layer: str, name: str, value: Any) -> int:
    value = _int_or_itself(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ArgumentError(f"{layer}: {name} must be an int, got {type(value).__name__}")
    if value <= 0:
        raise InvalidArgumentError(f"{layer}: {name} must be greater than zero, got {value}")
    return value


def _broadcasts(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether ``shape`` broadcasts to ``target`` without changing it."""
    if len(shape) > len(target):
        return False
    return all(a in (1, b) for a, b in zip(reversed(shape), reversed(target)))


def _safe_softmax(scores: Tensor) -> Tensor:
    """Softmax over the last axis, with zeros (and zero gradients) for a row that is all
    ``-inf``, where the plain softmax gives NaN: PyTorch's choice for a query that may
    attend to nothing."""
    empty = _ops.all(scores == float("-inf"), axis=-1, keepdims=True)
    # NOTE: the empty rows are replaced before the softmax, not only after it: a NaN
    # there would reach the gradient through the softmax's backward rule.
    weights = _ops.softmax(_ops.where(empty, 0.0, scores), axis=-1)
    return _ops.where(empty, 0.0, weights)


# -- scaled dot-product attention ---------------------------------------------------------


@_autocast.listed("nn.functional.scaled_dot_product_attention")
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """``softmax(query @ key.T * scale + mask) @ value`` over any leading batch axes.

    The batch axes of the three inputs (and of the mask) broadcast together.
    This math form is plugrad's one kernel; a call that none of the enabled
    kernels of PyTorch's CPU would run raises, as there (the kernels that
    :func:`plugrad.nn.attention.sdpa_kernel` or
    :func:`plugrad.backends.cuda.enable_math_sdp` and its siblings enable).

    Parameters
    ----------
    query : Tensor
        ``(..., L, E)``: ``L`` queries.
    key : Tensor
        ``(..., S, E)``: ``S`` keys.
    value : Tensor
        ``(..., S, Ev)``.
    attn_mask : Tensor, optional
        Broadcastable to ``(..., L, S)``. Boolean: True where a query may attend to
        a key (a query with no key to attend to gets zeros, as in PyTorch).
        Floating, of the query's dtype: added to the scores (``-inf`` leaves a key out).
    dropout_p : float
        Probability of zeroing each attention weight, applied whenever it is
        positive: a layer passes ``0.0`` in evaluation mode.
    is_causal : bool
        Let query ``i`` attend to keys ``0..i`` only (the lower triangle from the
        top-left corner); not together with ``attn_mask``.
    scale : float, optional
        Factor of the scores; ``1 / sqrt(E)`` by default.
    enable_gqa : bool
        Grouped-query attention: ``key`` and ``value`` may have fewer heads (axis
        ``-3``) than ``query``, a divisor of its count; each key head serves that
        many consecutive query heads.

    Returns
    -------
    Tensor
        ``(..., L, Ev)``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> q = k = plugrad.tensor([[1.0, 0.0], [0.0, 1.0]])
    >>> v = plugrad.tensor([[1.0], [2.0]])
    >>> F.scaled_dot_product_attention(q, k, v, is_causal=True)
    tensor([[1.0000],
            [1.6698]])
    """
    for name, tensor in (("query", query), ("key", key), ("value", value)):
        _check_tensor(name, _SDPA, tensor)
        if tensor.ndim < 2:
            raise ShapeError(
                f"{_SDPA}(): query, key and value must have at least 2 axes (positions, "
                f"features), got {name} of shape {tensor.shape}"
            )
        if tensor.dtype is not query.dtype or tensor.dtype.kind != "real floating":
            raise DtypeError(
                f"{_SDPA}(): query, key and value must have one real floating dtype, got "
                f"{query.dtype.name}, {key.dtype.name} and {value.dtype.name}"
            )
    length, features = query.shape[-2], query.shape[-1]
    if key.shape[-1] != features:
        raise ShapeError(
            f"{_SDPA}(): query and key must have the same number of features (last axis), "
            f"got shapes {query.shape} and {key.shape}"
        )
    if value.shape[-2] != key.shape[-2]:
        raise ShapeError(
            f"{_SDPA}(): key and value must have the same number of positions (axis -2), "
            f"got shapes {key.shape} and {value.shape}"
        )
    dropout_p = _probability(_SDPA, "dropout_p", dropout_p)
    # (is_causal="False" was true, and the causal mask applied)
    is_causal = checked_bool(f"{_SDPA}(): is_causal", is_causal)
    enable_gqa = checked_bool(f"{_SDPA}(): enable_gqa", enable_gqa)
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, numbers.Real)):
        raise ArgumentError(
            f"{_SDPA}(): scale must be a float (or None for 1/sqrt(features)), got "
            f"{type(scale).__name__} {scale!r}"
        )
    if is_causal and attn_mask is not None:
        raise InvalidArgumentError(
            f"{_SDPA}(): give attn_mask or is_causal=True, not both (a causal mask "
            "combined with another: pass their combination as attn_mask)"
        )
    if _sdpa_kernels is not None:  # some kernel disabled (sdpa_kernel, enable_*_sdp)
        _refuse_without_kernel(query, key, value, attn_mask, dropout_p, enable_gqa)
    if enable_gqa:
        key, value = _share_heads(query, key, value)
    scores = _ops.matmul(query, _ops.swapaxes(key, -2, -1))
    scores = scores * (1.0 / math.sqrt(features) if scale is None else scale)
    if is_causal:
        causal = _ops.tril(ones((length, key.shape[-2]), dtype=_dtypes.bool, device=query.device))
        weights = _ops.softmax(_ops.where(causal, scores, float("-inf")), axis=-1)
    elif attn_mask is not None:
        weights = _safe_softmax(_masked_scores(scores, attn_mask))
    else:
        weights = _ops.softmax(scores, axis=-1)
    if dropout_p > 0:
        weights = dropout(weights, dropout_p, training=True)
    return _ops.matmul(weights, value)


# -- the kernels sdpa_kernel enables -------------------------------------------------------

# The names of the SDPBackend members enabled (by sdpa_kernel or the enable_*_sdp switches of
# plugrad.backends.cuda); None while all are, so that the call then pays one test.
_sdpa_kernels: frozenset[str] | None = None


def _enable_sdpa_kernels(names: frozenset[str] | None) -> frozenset[str] | None:
    """Enable the kernels ``names`` (``None``: all) for :func:`scaled_dot_product_attention`
    and return the previous setting, to restore: the work of
    :func:`plugrad.nn.attention.sdpa_kernel`."""
    global _sdpa_kernels
    previous, _sdpa_kernels = _sdpa_kernels, names
    return previous


def _refuse_without_kernel(
    query: Tensor, key: Tensor, value: Tensor, mask: Any, dropout_p: float, gqa: bool
) -> None:
    """Raise where PyTorch's CPU dispatch finds no enabled kernel for the call.

    plugrad computes the math form whatever is enabled; this keeps the errors of
    PyTorch's CPU, whose kernels are the math one, which runs everything, and the
    flash one, which runs only the calls :func:`_flash_refusal` lets through.
    """
    enabled = cast("frozenset[str]", _sdpa_kernels)
    if "MATH" in enabled:
        return
    named = ", ".join(sorted(enabled)) or "none"
    if "FLASH_ATTENTION" not in enabled:
        raise InvalidArgumentError(
            f"{_SDPA}(): no kernel that runs on the CPU is enabled (kernels enabled: "
            f"{named}); PyTorch's CPU kernels are MATH and FLASH_ATTENTION: enable math "
            "with plugrad.backends.cuda.enable_math_sdp(True) or by adding SDPBackend.MATH "
            "to sdpa_kernel's list"
        )
    reason = _flash_refusal(query, key, value, mask, dropout_p, gqa)
    if reason is not None:
        raise InvalidArgumentError(
            f"{_SDPA}(): no available kernel: the kernels enabled are {named}, and PyTorch's "
            f"CPU flash-attention kernel {reason}; enable math with "
            "plugrad.backends.cuda.enable_math_sdp(True) or by adding SDPBackend.MATH to "
            "sdpa_kernel's list"
        )


def _flash_refusal(
    query: Tensor, key: Tensor, value: Tensor, mask: Any, dropout_p: float, gqa: bool
) -> str | None:
    """Why PyTorch's CPU flash-attention kernel would not take the call (its first reason,
    in its order), or ``None`` where it would."""
    shapes = f"{query.shape}, {key.shape} and {value.shape}"
    if dropout_p > 0:
        return f"takes no dropout, got dropout_p={dropout_p}"
    if not query.ndim == key.ndim == value.ndim == 4:
        return f"needs 4-d query, key and value (batch, heads, positions, features), got {shapes}"
    if not query.shape[0] == key.shape[0] == value.shape[0]:
        return f"needs one batch size (axis 0) in query, key and value, got {shapes}"
    heads, key_heads = query.shape[1], key.shape[1]
    grouped = gqa and key_heads == value.shape[1] and heads % key_heads == 0
    if not (heads == key_heads == value.shape[1] or grouped):
        return (
            "needs one number of heads (axis 1) in query, key and value (with enable_gqa=True, "
            f"a multiple in query of key's and value's one), got {shapes}"
        )
    if mask is not None and _check_tensor("attn_mask", _SDPA, mask).ndim not in (2, 4):
        return f"needs a 2-d or 4-d attn_mask, got one of shape {mask.shape}"
    if not query.shape[-1] == key.shape[-1] == value.shape[-1]:
        return f"needs one number of features (last axis) in query, key and value, got {shapes}"
    return None


def _share_heads(query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
    """``key`` and ``value`` with each head repeated for its group of query heads."""
    if min(query.ndim, key.ndim, value.ndim) < 3:
        raise ShapeError(
            f"{_SDPA}(): enable_gqa=True needs a heads axis (-3) in query, key and value, "
            f"got shapes {query.shape}, {key.shape} and {value.shape}"
        )
    heads = query.shape[-3]
    shared = []
    for name, tensor in (("key", key), ("value", value)):
        if heads % tensor.shape[-3]:
            raise ShapeError(
                f"{_SDPA}(): with enable_gqa=True the query's {heads} heads must be a "
                f"multiple of the {name}'s {tensor.shape[-3]} (axis -3)"
            )
        repeats = heads // tensor.shape[-3]
        shared.append(tensor if repeats == 1 else _ops.repeat_interleave(tensor, repeats, axis=-3))
    return shared[0], shared[1]


def _masked_scores(scores: Tensor, mask: Any) -> Tensor:
    _check_tensor("attn_mask", _SDPA, mask)
    if not _broadcasts(mask.shape, scores.shape):
        raise ShapeError(
            f"{_SDPA}(): attn_mask of shape {mask.shape} does not broadcast to the scores' "
            f"shape {scores.shape} (batch..., queries, keys)"
        )
    if mask.dtype is _dtypes.bool:
        return _ops.where(mask, scores, float("-inf"))
    if mask.dtype is _dtypes.float32 and scores.dtype is not _dtypes.float32:
        mask = _ops.astype(mask, scores.dtype)  # PyTorch takes a float32 mask for any query
    if mask.dtype is not scores.dtype:
        raise DtypeError(
            f"{_SDPA}(): attn_mask must be bool (True: take part), float32 or of the query's "
            f"dtype {scores.dtype.name} (added to the scores), got {mask.dtype.name}"
        )
    return scores + mask


# -- multi-head attention -----------------------------------------------------------------


def _canonical_mask(
    mask: Any, name: str, other: Any, other_name: str, dtype: _dtypes.DType
) -> Tensor | None:
    """``mask`` as a floating mask of ``dtype`` (a boolean one: ``-inf`` where True)."""
    if mask is None:
        return None
    _check_tensor(name, _MHA, mask)
    if mask.dtype is not _dtypes.bool and mask.dtype.kind != "real floating":
        raise DtypeError(
            f"{_MHA}(): {name} must be bool (True: leave the key out) or floating (added to "
            f"the scores), got {mask.dtype.name}"
        )
    if isinstance(other, Tensor) and other.dtype is not mask.dtype:
        warnings.warn(
            f"{name} is {mask.dtype.name} but {other_name} is {other.dtype.name}; give both "
            "the same dtype (PyTorch deprecates mixing them)",
            UserWarning,
            stacklevel=4,
        )
    if mask.dtype is _dtypes.bool:
        return _ops.where(mask, float("-inf"), zeros(mask.shape, dtype=dtype, device=mask.device))
    if mask.dtype is not dtype:
        raise DtypeError(
            f"{_MHA}(): the floating {name} is {mask.dtype.name} but the query is {dtype.name}; "
            f"convert the mask (mask.to(plugrad.{dtype.name}))"
        )
    return mask


def _check_shapes(
    query: Any, key: Any, value: Any, key_padding_mask: Any, attn_mask: Any, num_heads: int
) -> bool:
    """Whether the call is batched; a ShapeError for inputs that fit neither layout."""
    for name, tensor in (("query", query), ("key", key), ("value", value)):
        _check_tensor(name, _MHA, tensor)
    if query.ndim not in (2, 3):
        raise ShapeError(
            f"{_MHA}(): query must be 2-d (unbatched: L, E) or 3-d (batched), got shape "
            f"{query.shape}"
        )
    batched = query.ndim == 3
    layout = "batched (3-d)" if batched else "unbatched (2-d)"
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise ShapeError(
            f"{_MHA}(): for a {layout} query, key and value must be {query.ndim}-d too, got "
            f"shapes {key.shape} and {value.shape}"
        )
    if key_padding_mask is not None:
        _check_tensor("key_padding_mask", _MHA, key_padding_mask)
        if key_padding_mask.ndim != query.ndim - 1:
            raise ShapeError(
                f"{_MHA}(): for a {layout} query, key_padding_mask must be "
                f"{query.ndim - 1}-d, got shape {key_padding_mask.shape}"
            )
    if attn_mask is not None:
        _check_tensor("attn_mask", _MHA, attn_mask)
        if attn_mask.ndim not in (2, 3):
            raise ShapeError(
                f"{_MHA}(): attn_mask must be 2-d (L, S) or 3-d (batch * num_heads, L, S), "
                f"got shape {attn_mask.shape}"
            )
    return batched


def _in_projection(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    weights: tuple[Tensor, Tensor, Tensor] | Tensor,
    bias: Tensor | None,
) -> tuple[Tensor, Tensor, Tensor]:
    """``(q, k, v)``: each input through its block of the packed ``weights`` (or its own)."""
    biases = (None, None, None) if bias is None else _ops.chunk(bias, 3, 0)
    if isinstance(weights, Tensor):
        if query is key and key is value:  # self-attention: one matrix product
            q, k, v = _ops.chunk(linear(query, weights, bias), 3, -1)
            return q, k, v
        weights = _ops.chunk(weights, 3, 0)
    q, k, v = (
        linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases, strict=True)
    )
    return q, k, v


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """The computation of :class:`~plugrad.nn.MultiheadAttention`, with its weights passed in.

    Inputs are sequence-first: ``query`` ``(L, N, E)``, ``key`` ``(S, N, kdim)``,
    ``value`` ``(S, N, vdim)``, or without the batch axis ``N``. The masks are the
    layer's (a boolean True leaves a key out); ``static_k`` and ``static_v``
    (``(N * num_heads, S, E / num_heads)``) replace the projected key and value.

    Returns
    -------
    tuple
        ``(attn_output, attn_weights)``: ``(L, N, E)`` and, with ``need_weights``,
        ``(N, L, S)`` averaged over the heads or ``(N, num_heads, L, S)``; else None.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> x = plugrad.ones((3, 1, 4))
    >>> out, weights = F.multi_head_attention_forward(
    ...     x, x, x, 4, 2, plugrad.ones((12, 4)), None, None, None, False, 0.0,
    ...     plugrad.ones((4, 4)), None)
    >>> out.shape, weights[0, 0]
    ((3, 1, 4), tensor([0.3333, 0.3333, 0.3333]))
    """
    batched = _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    length, batch, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise ShapeError(
            f"{_MHA}(): expected a query with embed_dim={embed_dim_to_check} features, got "
            f"shape {tuple(query.shape)}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise InvalidArgumentError(
            f"{_MHA}(): embed_dim={embed_dim} is not divisible by num_heads={num_heads}"
        )
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise ShapeError(
                f"{_MHA}(): key and value must have the same sequence and batch axes, got "
                f"shapes {key.shape} and {value.shape}"
            )
    elif key.shape != value.shape:
        raise ShapeError(
            f"{_MHA}(): key and value must have the same shape, got {key.shape} and "
            f"{value.shape}; give the layer kdim= and vdim= for different feature sizes"
        )
    if key.shape[1] != batch:
        raise ShapeError(
            f"{_MHA}(): query and key must have the same batch size, got shapes "
            f"{query.shape} and {key.shape}"
        )
    if use_separate_proj_weight:
        projections: Any = (q_proj_weight, k_proj_weight, v_proj_weight)
        if any(w is None for w in projections):
            raise InvalidArgumentError(
                f"{_MHA}(): use_separate_proj_weight=True needs q_proj_weight, k_proj_weight "
                "and v_proj_weight"
            )
    else:
        if in_proj_weight is None:
            raise InvalidArgumentError(
                f"{_MHA}(): in_proj_weight is None; give it, or use_separate_proj_weight=True "
                "with q_proj_weight, k_proj_weight and v_proj_weight"
            )
        projections = in_proj_weight
    expected_features = (
        [w.shape[-1] for w in projections]
        if use_separate_proj_weight
        else [embed_dim, embed_dim, embed_dim]
    )
    for name, tensor, features in zip(("query", "key", "value"), (query, key, value),
                                      expected_features, strict=True):  # fmt: skip
        if tensor.shape[-1] != features:
            raise ShapeError(
                f"{_MHA}(): expected {name} with {features} features (last axis), got shape "
                f"{tuple(tensor.shape)}"
            )
    source = key.shape[0] if static_k is None else static_k.shape[1]
    if key_padding_mask is not None and tuple(key_padding_mask.shape) != (batch, source):
        raise ShapeError(
            f"{_MHA}(): expected key_padding_mask of shape {(batch, source)} (batch, keys), "
            f"got {tuple(key_padding_mask.shape)}"
        )
    if attn_mask is not None:
        expected = (length, source) if attn_mask.ndim == 2 else (batch * num_heads, length, source)
        if tuple(attn_mask.shape) != expected:
            raise ShapeError(
                f"{_MHA}(): expected a {attn_mask.ndim}-d attn_mask of shape {expected}, got "
                f"{tuple(attn_mask.shape)}"
            )
    if (bias_k is None) != (bias_v is None):
        raise InvalidArgumentError(f"{_MHA}(): give both bias_k and bias_v, or neither")
    if bias_k is not None and (static_k is not None or static_v is not None):
        raise InvalidArgumentError(f"{_MHA}(): bias_k and bias_v cannot be added to static_k/v")
    for name, static in (("static_k", static_k), ("static_v", static_v)):
        if static is not None and (
            static.ndim != 3 or static.shape[0] != batch * num_heads or static.shape[2] != head_dim
        ):
            raise ShapeError(
                f"{_MHA}(): expected {name} of shape ({batch * num_heads}, S, {head_dim}) "
                f"(batch * num_heads, keys, head_dim), got {tuple(static.shape)}"
            )
    dropout_p = _probability(_MHA, "dropout_p", dropout_p)
    if is_causal and attn_mask is None:
        raise InvalidArgumentError(
            f"{_MHA}(): is_causal=True is a hint that attn_mask is causal; give the mask too "
            "(nn.Transformer.generate_square_subsequent_mask(L) makes one)"
        )
    kpm = _canonical_mask(key_padding_mask, "key_padding_mask", attn_mask, "attn_mask", query.dtype)
    mask: Tensor | None
    if is_causal and kpm is None and not need_weights:
        mask = None  # the hint stands for the mask
    else:
        mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype)
        if kpm is not None:
            is_causal = False  # merged with the padding, the mask is no longer causal

    q, k, v = _in_projection(query, key, value, projections, in_proj_bias)
    if mask is not None and mask.ndim == 2:
        mask = mask.unsqueeze(0)
    if bias_k is not None and bias_v is not None:
        k = _ops.concat([k, _ops.broadcast_to(bias_k, (1, batch, embed_dim))], axis=0)
        v = _ops.concat([v, _ops.broadcast_to(bias_v, (1, batch, embed_dim))], axis=0)
        mask = None if mask is None else pad(mask, (0, 1))
        kpm = None if kpm is None else pad(kpm, (0, 1))
    heads = batch * num_heads
    q = _ops.swapaxes(_ops.reshape(q, (length, heads, head_dim)), 0, 1)
    k = _ops.swapaxes(_ops.reshape(k, (k.shape[0], heads, head_dim)), 0, 1)
    v = _ops.swapaxes(_ops.reshape(v, (v.shape[0], heads, head_dim)), 0, 1)
    k = k if static_k is None else static_k
    v = v if static_v is None else static_v
    if add_zero_attn:
        k = _ops.concat([k, zeros((heads, 1, head_dim), dtype=k.dtype, device=k.device)], axis=1)
        v = _ops.concat([v, zeros((heads, 1, head_dim), dtype=v.dtype, device=v.device)], axis=1)
        mask = None if mask is None else pad(mask, (0, 1))
        kpm = None if kpm is None else pad(kpm, (0, 1))
    source = k.shape[1]
    if kpm is not None:
        kpm = _ops.broadcast_to(_ops.reshape(kpm, (batch, 1, 1, source)),
                                (batch, num_heads, 1, source))  # fmt: skip
        kpm = _ops.reshape(kpm, (heads, 1, source))
        mask = kpm if mask is None else mask + kpm
    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = _ops.matmul(q * math.sqrt(1.0 / head_dim), _ops.swapaxes(k, -2, -1))
        if mask is not None:
            scores = mask + scores
        # NOTE: the plain softmax, as PyTorch's: a query with every key masked gets NaN here.
        weights = _ops.softmax(scores, axis=-1)
        if dropout_p > 0:
            weights = dropout(weights, dropout_p)
        output = _ops.matmul(weights, v)
        output = _ops.reshape(_ops.swapaxes(output, 0, 1), (length * batch, embed_dim))
        output = linear(output, out_proj_weight, out_proj_bias)
        output = _ops.reshape(output, (length, batch, output.shape[-1]))
        weights = _ops.reshape(weights, (batch, num_heads, length, source))
        if average_attn_weights:
            weights = _ops.mean(weights, axis=1)
        if not batched:
            output, weights = output.squeeze(1), weights.squeeze(0)
        return output, weights

    if mask is not None:
        mask = (
            mask.unsqueeze(0)
            if mask.shape[0] == 1
            else _ops.reshape(mask, (batch, num_heads, -1, source))
        )
    q = _ops.reshape(q, (batch, num_heads, length, head_dim))
    k = _ops.reshape(k, (batch, num_heads, source, head_dim))
    v = _ops.reshape(v, (batch, num_heads, source, head_dim))
    output = scaled_dot_product_attention(q, k, v, mask, dropout_p, is_causal)
    output = _ops.reshape(_ops.permute_dims(output, (2, 0, 1, 3)), (batch * length, embed_dim))
    output = linear(output, out_proj_weight, out_proj_bias)
    output = _ops.reshape(output, (length, batch, output.shape[-1]))
    return (output if batched else output.squeeze(1)), None


# PyTorch's Tensor methods of these functions (x.hardshrink(0.5), x.prelu(weight)).
install_methods(
    hardshrink=lambda self, lambd=0.5: hardshrink(self, lambd),
    prelu=lambda self, weight: prelu(self, weight),
)
