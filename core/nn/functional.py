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

from collections.abc import Sequence
from typing import Any

from .. import dtypes as _dtypes
from .. import ops as _ops
from ..creation import arange, asarray, full
from ..errors import ArgumentError, DtypeError, IndexOutOfRangeError, ShapeError
from ..grad_mode import no_grad
from ..inplace import apply_inplace
from ..random import Generator, rand
from ..tensor import Tensor

__all__ = [
    "adaptive_avg_pool2d",
    "avg_pool2d",
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
    "cross_entropy",
    "dropout",
    "elu",
    "embedding",
    "gelu",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "logsumexp",
    "max_pool2d",
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
]

_REDUCTIONS = ("mean", "sum", "none")
IntPair = int | tuple[int, int]


def _check_tensor(name: str, function: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(
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
                f"{parameter.dtype.name}; expected the same dtype. Convert the input "
                f"(x.to(plugrad.{parameter.dtype.name})) or the module "
                f"(module.to(plugrad.{input.dtype.name}), module.double(), module.float())"
            )


def _check_reduction(function: str, reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f"{function}(): reduction must be 'mean', 'sum' or 'none', got {reduction!r}"
        )


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return _ops.mean(loss)
    if reduction == "sum":
        return _ops.sum(loss)
    return loss


def _pair(function: str, name: str, value: Any, minimum: int) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if (
        len(pair) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
        or min(pair) < minimum
    ):
        raise ValueError(
            f"{function}(): {name} must be an int or a pair of ints >= {minimum}, got {value!r}"
        )
    return pair


# -- linear and activations ---------------------------------------------------------------


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
    out = _ops.linear(input, weight)
    return out if bias is None else out + bias


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
        raise ValueError(f"gelu(): approximate must be 'none' or 'tanh', got {approximate!r}")
    return _ops.gelu(input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """Sigmoid linear unit ``input * sigmoid(input)`` (also called swish).

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.silu(plugrad.tensor([0.0, 1.0]))
    tensor([0.0000, 0.7311])
    """
    _check_tensor("input", "silu", input)
    if inplace:
        return apply_inplace(input, silu, name="silu(inplace=True)")
    return input * _ops.sigmoid(input)


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


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Exponential linear unit: ``input`` where positive, else ``alpha * (exp(input) - 1)``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.elu(plugrad.tensor([-1.0, 2.0]))
    tensor([-0.6321,  2.0000])
    """
    _check_tensor("input", "elu", input)
    if inplace:
        return apply_inplace(input, elu, alpha, name="elu(inplace=True)")
    # NOTE: expm1 of the non-positive part only: a large positive input would overflow
    # exp in the branch where() discards, and its gradient would be 0 * inf = nan. Not
    # minimum(input, 0), whose gradient at the tie 0 is halved.
    negative = _ops.where(input > 0, 0.0, input)
    return _ops.where(input > 0, input, alpha * _ops.expm1(negative))


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
        raise ValueError(f"hardtanh(): min_val ({min_val}) must not exceed max_val ({max_val})")
    if inplace:
        return apply_inplace(input, hardtanh, min_val, max_val, name="hardtanh(inplace=True)")
    # NOTE: where(), not clip(): as in PyTorch, no gradient reaches an input on a bound.
    inside = _ops.logical_and(input > min_val, input < max_val)
    return _ops.where(inside, input, _ops.clip(input.detach(), min_val, max_val))


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
    if inplace:
        return apply_inplace(
            input, globals()["threshold"], threshold, value, name="threshold(inplace=True)"
        )
    return _ops.where(input > threshold, input, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """:func:`threshold` in place: ``input`` holds the result."""
    return globals()["threshold"](input, threshold, value, inplace=True)


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
    scaled = input * beta
    linear = scaled > threshold
    # NOTE: exp() of the part where() keeps only: exp of a large input would overflow in
    # the discarded branch, and its gradient there would be 0 * inf = nan.
    smooth = _ops.log1p(_ops.exp(_ops.where(linear, 0.0, scaled))) / beta
    return _ops.where(linear, input, smooth)


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
    _check_tensor("input", "hardswish", input)
    if inplace:
        return apply_inplace(input, hardswish, name="hardswish(inplace=True)")
    return input * hardsigmoid(input)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * tanh(softplus(input))``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.mish(plugrad.tensor([0.0, 1.0]))
    tensor([0.0000, 0.8651])
    """
    _check_tensor("input", "mish", input)
    if inplace:
        return apply_inplace(input, mish, name="mish(inplace=True)")
    return input * _ops.tanh(softplus(input))


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
    _check_tensor("input", "selu", input)
    if inplace:
        return apply_inplace(input, selu, name="selu(inplace=True)")
    return elu(input, SELU_ALPHA) * SELU_SCALE


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
        raise ValueError("celu(): alpha must not be 0 (it divides the input)")
    if inplace:
        return apply_inplace(input, celu, alpha, name="celu(inplace=True)")
    negative = _ops.where(input > 0, 0.0, input)
    return _ops.where(input > 0, input, alpha * _ops.expm1(negative / alpha))


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


def _dim(function: str, dim: Any, axis: Any) -> Any:
    """``dim``, or the Array API's ``axis`` given in its place; both is an error."""
    if axis is None:
        if dim is None:
            raise ArgumentError(f"{function}() needs dim= (the axis to reduce over)")
        return dim
    if dim is not None:
        raise ArgumentError(
            f"{function}() got both dim= and axis=, which name the same argument (axis is "
            "the Array API's name for dim); pass only one"
        )
    return axis


def softmax(
    input: Tensor,
    dim: int | None = None,
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
    return _ops.softmax(_cast(input, dtype), axis=_dim("softmax", dim, axis))


def log_softmax(
    input: Tensor,
    dim: int | None = None,
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
    return _ops.log_softmax(_cast(input, dtype), axis=_dim("log_softmax", dim, axis))


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
    return _ops.logsumexp(input, axis=dim if isinstance(dim, int) else tuple(dim), keepdims=keepdim)


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
    >>> plugrad.manual_seed(0)
    >>> F.dropout(plugrad.ones(6), p=0.5)
    tensor([2., 2., 2., 0., 0., 0.])
    >>> F.dropout(plugrad.ones(2), p=0.5, training=False)
    tensor([1., 1.])
    """
    _check_tensor("input", "dropout", input)
    if not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout(): p must be a probability between 0 and 1, got {p!r}")
    if not training or p == 0:
        return input
    dtype = input.dtype if input.dtype.kind == "real floating" else _dtypes.float32
    with no_grad():
        noise = rand(*input.shape, dtype=dtype, device=input.device, generator=generator)
        keep = noise >= p
    # p == 1 drops everything; a zero scale avoids 1 / 0.
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    if inplace:
        return apply_inplace(
            input, lambda x: _ops.dropout(x, keep, scale=scale), name="dropout(inplace=True)"
        )
    return _ops.dropout(input, keep, scale=scale)


# -- losses ------------------------------------------------------------------------------


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean squared error ``(input - target) ** 2``, reduced by ``reduction``.

    Parameters
    ----------
    input, target : Tensor
        Of the same shape.
    reduction : {"mean", "sum", "none"}

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.mse_loss(plugrad.tensor([1.0, 2.0]), plugrad.tensor([1.0, 4.0]))
    tensor(2.)
    """
    _check_reduction("mse_loss", reduction)
    if _check_tensor("input", "mse_loss", input).shape != target.shape:
        raise ShapeError(
            f"mse_loss(): input has shape {input.shape} but target has shape {target.shape}; "
            "they must match (PyTorch would broadcast with a warning)"
        )
    diff = input - target
    return _reduce(diff * diff, reduction)


def _same_shape(function: str, input: Tensor, target: Tensor) -> None:
    if (
        _check_tensor("input", function, input).shape
        != _check_tensor("target", function, target).shape
    ):
        raise ShapeError(
            f"{function}(): input has shape {input.shape} but target has shape "
            f"{target.shape}; they must match"
        )


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean absolute error ``|input - target|``, reduced by ``reduction``.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.l1_loss(plugrad.tensor([1.0, 2.0]), plugrad.tensor([1.5, 4.0]))
    tensor(1.2500)
    """
    _check_reduction("l1_loss", reduction)
    _same_shape("l1_loss", input, target)
    return _reduce(_ops.abs(input - target), reduction)


def smooth_l1_loss(
    input: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0
) -> Tensor:
    """Huber-like loss: ``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta``.

    ``d = input - target``; ``beta=0`` gives :func:`l1_loss`.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> F.smooth_l1_loss(plugrad.tensor([0.5, 3.0]), plugrad.tensor([0.0, 0.0]), "none")
    tensor([0.1250, 2.5000])
    """
    _check_reduction("smooth_l1_loss", reduction)
    _same_shape("smooth_l1_loss", input, target)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss(): beta must be >= 0, got {beta!r}")
    distance = _ops.abs(input - target)
    if beta == 0:
        return _reduce(distance, reduction)
    # NOTE: the square is of the masked distance, so its gradient is 0 where |d| >= beta.
    near = _ops.where(distance < beta, distance, 0.0)
    loss = _ops.where(distance < beta, (0.5 / beta) * (near * near), distance - 0.5 * beta)
    return _reduce(loss, reduction)


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
        if bool(_ops.any(_ops.logical_or(value < 0, value > 1))):
            raise ValueError(
                f"binary_cross_entropy(): every element of the {name} must lie in [0, 1]"
                + (" (for logits, use binary_cross_entropy_with_logits)" if name == "input" else "")
            )
    # NOTE: log(0) is taken of 1 instead (and masked): it would warn, and its gradient
    # would be inf * 0 = nan.
    positive, below_one = input > 0, input < 1
    log_p = _ops.where(positive, _ops.log(_ops.where(positive, input, 1.0)), -100.0)
    log_not_p = _ops.where(below_one, _ops.log1p(-_ops.where(below_one, input, 0.0)), -100.0)
    log_p, log_not_p = _ops.maximum(log_p, -100.0), _ops.maximum(log_not_p, -100.0)
    loss = -(target * log_p + (1.0 - target) * log_not_p)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


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
    if target.dtype.kind not in ("signed integer", "unsigned integer"):
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


def _check_class_range(function: str, target: Tensor, classes: int, ignore_index: int) -> None:
    """Refuse class targets outside ``[0, classes)`` other than ``ignore_index`` (one reduction)."""
    found = _ops.out_of_range(target, low=0, high=classes, allowed=ignore_index)
    if not any_outside(found, f"{function}(): class targets outside [0, {classes})"):
        return
    bad = _values_outside(target, classes, allowed=ignore_index)
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
    total = _ops.sum(loss)
    if reduction == "sum":
        return total
    return total / _ops.counted_weight(input, target, weight, ignore_index=ignore_index)


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
        ``(C,)``: a weight per class (no gradient flows to it).
    ignore_index : int
        Class-index targets equal to it count neither in the loss nor in the mean.
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
    _check_reduction("cross_entropy", reduction)
    _check_tensor("input", "cross_entropy", input)
    _check_tensor("target", "cross_entropy", target)
    if not isinstance(label_smoothing, (int, float)) or not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(
            f"cross_entropy(): label_smoothing must be in [0, 1], got {label_smoothing!r}"
        )
    classes = input.shape[0 if input.ndim == 1 else 1] if input.ndim else 0
    if weight is not None and weight.shape != (classes,):
        raise ShapeError(
            f"cross_entropy(): weight must have shape ({classes},), one per class, "
            f"got {weight.shape}"
        )
    if target.dtype.kind == "real floating":
        return _soft_cross_entropy(input, target, weight, reduction, label_smoothing)
    _class_target_shape("cross_entropy", input, target)
    _check_class_range("cross_entropy", target, classes, ignore_index)
    loss = _ops.cross_entropy(
        input, target, weight, ignore_index=ignore_index, label_smoothing=float(label_smoothing)
    )
    return _reduce_over_classes(loss, reduction, input, target, weight, ignore_index)


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
    class_shape = tuple(classes if i == axis else 1 for i in range(input.ndim))
    labels = _ops.reshape(arange(classes, device=input.device), class_shape)
    hit = _ops.expand_dims(target, axis=axis) == labels
    picked = input if weight is None else input * _ops.reshape(weight, class_shape)
    loss = -_ops.sum(_ops.where(hit, picked, 0.0), axis=axis)
    loss = _ops.where(target != ignore_index, loss, 0.0)
    return _reduce_over_classes(loss, reduction, input, target, weight, ignore_index)


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
    loss = _ops.binary_cross_entropy_with_logits(input, target, weight, pos_weight)
    return _reduce(loss, reduction)


# -- normalization, embedding -------------------------------------------------------------


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
    _check_tensor("input", "batch_norm", input)
    if input.ndim < 2:
        raise ShapeError(
            f"batch_norm(): expected an input of shape (N, C, ...), got shape {input.shape}"
        )
    _check_same_dtype("batch_norm", input, weight, bias)
    channels = input.shape[1]
    axes = (0, *range(2, input.ndim))
    kept = (1, channels) + (1,) * (input.ndim - 2)
    if training:
        count = input.size // channels
        if count <= 1:
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
                running_mean.copy_((1.0 - momentum) * running_mean + momentum * batch_mean)
                running_var.copy_((1.0 - momentum) * running_var + momentum * batch_var)
    else:
        if running_mean is None or running_var is None:
            raise ArgumentError(
                "batch_norm(): training=False normalizes with running_mean and running_var; "
                "give both, or pass training=True to use the batch's statistics"
            )
        centered = input - _ops.reshape(running_mean, kept)
        var = _ops.reshape(running_var, kept)
    out = centered / _ops.sqrt(var + eps)
    if weight is not None:
        out = out * _ops.reshape(weight, kept)
    if bias is not None:
        out = out + _ops.reshape(bias, kept)
    return out


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
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if (
        not shape
        or tuple(_check_tensor("input", "layer_norm", input).shape[-len(shape) :]) != shape
    ):
        raise ShapeError(
            f"layer_norm(): normalized_shape {shape} must be the trailing axes of the input, "
            f"whose shape is {input.shape}"
        )
    if weight is not None:
        _check_same_dtype("layer_norm", input, weight, bias)
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None and value.shape != shape:
            raise ShapeError(
                f"layer_norm(): {name} must have shape {shape} (normalized_shape), "
                f"got {value.shape}"
            )
    return _ops.layer_norm(input, weight, bias, ndim=len(shape), eps=eps)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Look up rows of ``weight`` (``(num_embeddings, dim)``) at the integer ``input``.

    Repeated indices accumulate their gradients; the row ``padding_idx`` (if
    given; negative counts from the end) receives none.

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
    if input.dtype.kind not in ("signed integer", "unsigned integer"):
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
            raise ValueError(
                f"embedding(): padding_idx must be within [-{rows}, {rows}), got {padding_idx}"
            )
        padding_idx %= rows
    _check_indices(input, weight.shape[0])
    return _ops.embedding(weight, input, padding_idx=padding_idx)


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


def _same_padding(kernel: tuple[int, int], dilation: tuple[int, int]) -> tuple[int, int, int, int]:
    """PyTorch's ``padding="same"``: the odd element of an even total goes bottom/right."""
    (kh, kw), (dh, dw) = kernel, dilation
    total_h, total_w = dh * (kh - 1), dw * (kw - 1)
    return (total_h // 2, total_h - total_h // 2, total_w // 2, total_w - total_w // 2)


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntPair = 1,
    padding: IntPair | str = 0,
    dilation: IntPair = 1,
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
    _check_tensor("input", "conv2d", input)
    _check_tensor("weight", "conv2d", weight)
    _check_same_dtype("conv2d", input, weight, bias)
    stride = _pair("conv2d", "stride", stride, 1)
    dilation = _pair("conv2d", "dilation", dilation, 1)
    if weight.ndim != 4:
        raise ShapeError(f"conv2d(): weight must be (O, C / groups, kh, kw), got {weight.shape}")
    unbatched = input.ndim == 3
    if unbatched:
        input = _ops.expand_dims(input, axis=0)
    if input.ndim != 4:
        raise ShapeError(f"conv2d(): input must be (N, C, H, W) or (C, H, W), got {input.shape}")
    out_channels, group_channels, kh, kw = weight.shape
    if not isinstance(groups, int) or groups < 1 or out_channels % groups:
        raise ValueError(
            f"conv2d(): groups must be a positive int dividing the {out_channels} output "
            f"channels, got {groups!r}"
        )
    if input.shape[1] != group_channels * groups:
        raise ShapeError(
            f"conv2d(): the input has {input.shape[1]} channels but the weight {weight.shape} "
            f"with groups={groups} expects {group_channels * groups}"
        )
    if padding == "valid":
        pads: tuple[int, ...] = (0, 0, 0, 0)
    elif padding == "same":
        if stride != (1, 1):
            raise ValueError("conv2d(): padding='same' needs stride 1, as in PyTorch")
        pads = _same_padding((kh, kw), dilation)
    elif isinstance(padding, str):
        raise ValueError(f"conv2d(): padding must be 'valid', 'same' or ints, got {padding!r}")
    else:
        ph, pw = _pair("conv2d", "padding", padding, 0)
        pads = (ph, ph, pw, pw)
    for size, pad, kernel, dil, axis in zip(
        input.shape[2:], (pads[0] + pads[1], pads[2] + pads[3]), (kh, kw), dilation, "HW"
    ):
        if size + pad < dil * (kernel - 1) + 1:
            raise ShapeError(
                f"conv2d(): the padded input ({size} + {pad} along {axis}) is smaller than the "
                f"dilated kernel ({dil * (kernel - 1) + 1})"
            )
    out = _ops.conv2d(input, weight, stride=stride, padding=pads, dilation=dilation, groups=groups)
    if bias is not None:
        out = out + _ops.reshape(bias, (out_channels, 1, 1))
    return _ops.squeeze(out, axis=0) if unbatched else out


def _pool_arguments(
    function: str,
    input: Tensor,
    kernel_size: IntPair,
    stride: IntPair | tuple[()] | None,
    padding: IntPair,
    dilation: IntPair,
) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]:
    _check_tensor("input", function, input)
    if input.ndim not in (3, 4):
        raise ShapeError(
            f"{function}(): input must be (N, C, H, W) or (C, H, W), got {input.shape}"
        )
    kernel = _pair(function, "kernel_size", kernel_size, 1)
    step = kernel if stride is None or stride == () else _pair(function, "stride", stride, 1)
    pad = _pair(function, "padding", padding, 0)
    dil = _pair(function, "dilation", dilation, 1)
    for p, k, d in zip(pad, kernel, dil):
        if 2 * p > d * (k - 1) + 1:
            raise ValueError(
                f"{function}(): padding {pad} must be at most half the (dilated) kernel size "
                f"{kernel}, as in PyTorch"
            )
    for size, p, k, d in zip(input.shape[-2:], pad, kernel, dil):
        if size + 2 * p < d * (k - 1) + 1:
            raise ShapeError(
                f"{function}(): the padded input {tuple(input.shape[-2:])} is smaller than the "
                f"kernel {kernel}"
            )
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
        "max_pool2d", input, kernel_size, stride, padding, dilation
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
    _check_tensor("input", "adaptive_avg_pool2d", input)
    if input.ndim not in (3, 4):
        raise ShapeError(
            f"adaptive_avg_pool2d() takes a (C, H, W) or (N, C, H, W) tensor, got shape "
            f"{input.shape}"
        )
    sizes = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    height, width = input.shape[-2:]
    rows, columns = (
        size if size is not None else full for size, full in zip(sizes, (height, width))
    )
    if not all(isinstance(n, int) and n >= 1 for n in (rows, columns)):
        raise ValueError(
            f"adaptive_avg_pool2d(): output_size must be positive ints (or None), got "
            f"{output_size!r}"
        )
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
    kernel, step, pad, _ = _pool_arguments("avg_pool2d", input, kernel_size, stride, padding, 1)
    if divisor_override is not None and (
        not isinstance(divisor_override, int) or divisor_override <= 0
    ):
        raise ValueError(
            f"avg_pool2d(): divisor_override must be a positive int, got {divisor_override!r}"
        )
    return _ops.avg_pool2d(
        input,
        kernel_size=kernel,
        stride=step,
        padding=pad,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
        divisor_override=divisor_override,
    )


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


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float = 0.0) -> Tensor:
    """Pad the last ``len(pad) // 2`` axes: ``pad = (last_before, last_after, ...)``.

    ``mode="constant"`` fills with ``value`` (a negative amount crops);
    ``"reflect"`` mirrors the tensor about its edge elements, ``"replicate"``
    repeats the edge elements and ``"circular"`` wraps around. The padded
    values of the last three copy input elements, so their gradients add up there.

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
    amounts = tuple(pad)
    if (
        len(amounts) % 2
        or len(amounts) // 2 > input.ndim
        or not all(isinstance(a, int) and not isinstance(a, bool) for a in amounts)
    ):
        raise ArgumentError(
            f"pad(): pad must hold an even number of ints, two per padded axis and at most "
            f"{2 * input.ndim} for a {input.ndim}-d input, got {pad!r}"
        )
    out = input
    for i in range(len(amounts) // 2):
        axis = input.ndim - 1 - i
        before, after = amounts[2 * i], amounts[2 * i + 1]
        length = out.shape[axis]
        if mode != "constant":
            limit = length - 1 if mode == "reflect" else length
            if min(before, after) < 0 or max(before, after) > limit or length == 0:
                raise ArgumentError(
                    f"pad(): mode={mode!r} pads axis {axis} of length {length} by at most "
                    f"{limit} on each side, and not by a negative amount; got {before} and {after}"
                )
            if before or after:
                positions = _source_positions(mode, length, before, after)
                index = asarray(positions, dtype=_dtypes.int64, device=out.device)
                out = _ops.take(out, index, axis=axis)
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
            out = _ops.concat(joined, axis=axis)
    return out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
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
    _check_tensor("tensor", "one_hot", tensor)
    if tensor.dtype.kind not in ("signed integer", "unsigned integer"):
        raise DtypeError(f"one_hot(): takes an integer tensor of class indices, got {tensor.dtype}")
    if num_classes == -1:
        num_classes = int(_ops.max(tensor)) + 1 if tensor.size else 0
    bad = _values_outside(tensor, num_classes) if tensor.size else []
    if bad:
        raise IndexOutOfRangeError(
            f"one_hot(): class indices must lie in [0, {num_classes}), got {bad}"
        )
    classes = arange(num_classes, dtype=tensor.dtype, device=tensor.device)
    return _ops.astype(_ops.expand_dims(tensor, axis=-1) == classes, _dtypes.int64)
