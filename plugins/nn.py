"""Neural-network ops: activations, softmax, losses, layer norm, dropout, embedding.

These are not functions of the Array API standard, so they are declared with
``namespace="nn"``: each is ``plugrad.ops.<name>`` (with plugrad's conventions,
``axis=``), and :mod:`plugrad.nn.functional` wraps them with PyTorch's
signatures. Inside backward rules they are ``xp.<name>`` in both modes.

Each op saves only what its backward needs, and its rules are written with
``xp`` only, so they are differentiable again under ``create_graph=True``:

- ``relu``, ``sigmoid``, ``softmax``, ``log_softmax`` differentiate from their
  output alone (which the next layer usually keeps anyway);
- ``cross_entropy`` and ``binary_cross_entropy_with_logits`` compute a stable
  loss per element in one op, and their gradient (``softmax - onehot``,
  ``sigmoid - target``) without any intermediate of the forward pass;
- ``layer_norm`` keeps its input and recomputes the statistics in backward,
  instead of keeping the normalized values;
- ``dropout`` keeps a boolean mask, ``embedding`` only the indices.

The exact GELU needs the complementary error function, which the standard
lacks: :func:`erfc` evaluates it from polynomial fits accurate to a few units
in the last place of float64.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from plugrad.errors import ArgumentError, AxisError, BackwardError, DtypeError, InvalidArgumentError
from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, collect_ops, dim_as_axis, op
from plugrad.plugins._error_function import erf_values, erfc_values
from plugrad.plugins._index_plan import put
from plugrad.plugins._rules import (
    cast,
    checked_axis,
    conj,
    device_of,
    half_in_float32,
    half_rule_in_float32,
    in_float32_if_half,
    in_float64,
    index_dtype,
    is_complex,
    is_half,
    logistic,
)
from plugrad.plugins._scatter import scatter_add_generic, scatter_add_numpy

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TANH_CUBIC = 0.044715

# Not functions of the standard: plugrad.ops.<name>, and xp.<name> in rules through plugrad's
# own kernel table.
nn_op = functools.partial(op, standard=False, namespace="nn")

# Rows are aligned by hand, one op per statement.
# fmt: off

# -- erfc ---------------------------------------------------------------------------------

#: Where exp(-x**2) is 0 in float64 (below its smallest subnormal): the slopes of erf and
#: erfc are clamped there, so that beyond it they are exactly 0 (as PyTorch's), not 1e-317.
_SLOPE_ZERO_BEYOND = 28.0


def _erfc_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    clamped = xp.clip(x, min=-_SLOPE_ZERO_BEYOND, max=_SLOPE_ZERO_BEYOND)
    return g * (-_TWO_OVER_SQRT_PI * xp.exp(-(clamped * clamped)))


# In float64 for float32: exp(-x**2) of a float32 x**2 is 55 ulp off by x = 8.3.
erfc = nn_op("erfc", in_float64(erfc_values), vjp=_erfc_grad, methods="erfc", inplace=True,
             promotion="float", real_only=True,
             doc="Complementary error function ``1 - erf(x)``, accurate in both tails.")

def _erf_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    clamped = xp.clip(x, min=-_SLOPE_ZERO_BEYOND, max=_SLOPE_ZERO_BEYOND)
    return g * (_TWO_OVER_SQRT_PI * xp.exp(-(clamped * clamped)))


# float16 in float32 (as PyTorch): its polynomial in float16 was 2 ulp off.
erf = nn_op("erf", half_in_float32(erf_values), vjp=_erf_grad, methods="erf", inplace=True,
            promotion="float", real_only=True,
            doc="The error function ``erf(x)`` element-wise, accurate near 0.")

# -- linear -------------------------------------------------------------------------------


def _linear_weight_grad(xp: Any, g: Any, ans: Any, x: Any, weight: Any) -> Any:
    # (out, in) directly, summed over every leading axis: contiguous like the weight,
    # so the optimizer's update runs over plain memory.
    # The row count spelled out: -1 is ambiguous where a feature count is 0.
    count = math.prod(x.shape[:-1])
    rows = xp.reshape(g, (count, g.shape[-1]))
    return xp.matmul(xp.matrix_transpose(rows), conj(xp, xp.reshape(x, (count, x.shape[-1]))))


def _linear_numpy(xp: Any, x: Any, weight: Any, /) -> Any:
    # NOTE: with few rows and many outputs, OpenBLAS multiplies the weight by the transposed
    # rows faster than the rows by the transposed weight: 0.81-0.84 of the time at 8 rows,
    # 0.95 at 32, but 1.02 at 64 and 1.04-1.08 at 128 (512 or 256 outputs, one thread).
    # The product comes out transposed; a copy (cheap at so few rows) keeps the result in
    # C order, whose reductions over the rows (a bias's gradient) are four times faster.
    if x.ndim == 2 and x.shape[0] <= 32 and weight.ndim == 2 and 2 * x.shape[0] <= weight.shape[0]:
        return xp.matmul(weight, x.T).T.copy()
    return xp.matmul(x, xp.matrix_transpose(weight))


# Shapes never broadcast here; broadcasting=True makes each gradient keep its input's dtype.
linear = nn_op("linear", lambda xp, x, weight, /: xp.matmul(x, xp.matrix_transpose(weight)),
               kernels={"numpy": _linear_numpy},
               vjp=(lambda xp, g, ans, x, weight: xp.matmul(g, conj(xp, weight)),
                    _linear_weight_grad),
               broadcasting=True, doc="``x @ weight.T``: (..., in) by (out, in).")

# -- activations --------------------------------------------------------------------------

relu = nn_op("relu", lambda xp, x, /: xp.maximum(x, 0), methods="relu", inplace=True,
             vjp=lambda xp, g, ans, x: xp.where(ans <= 0, 0.0, g), real_only=True,
             doc="Rectified linear unit ``max(x, 0)``; NaN stays NaN and passes its gradient.")


def _sigmoid_kernel(xp: Any, x: Any, /) -> Any:
    if is_complex(xp, x):  # (complex numbers have no sign to split on)
        return 1.0 / (1.0 + xp.exp(-x))
    if is_half(xp, x.dtype):  # in float32, rounded once (as PyTorch): 2 ulp off in float16
        return xp.astype(logistic(xp, xp.astype(x, xp.float32)), x.dtype)
    return logistic(xp, x)


sigmoid = nn_op("sigmoid", _sigmoid_kernel,
                vjp=lambda xp, g, ans, x: g * conj(xp, ans * (1.0 - ans)),
                methods="sigmoid", inplace=True, promotion="float",
                doc="Logistic sigmoid ``1 / (1 + exp(-x))``, without overflow.")


def _check_approximate(approximate: str) -> None:
    if approximate not in ("none", "tanh"):
        raise InvalidArgumentError(
            f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}"
        )


# float16 in float32 (as PyTorch), rounded once: 1 + tanh(...) cancelled to 0 below -3.3
# (gelu(-3.6, approximate="tanh") was 0, not -4.3e-4, and its gradient 0).
@half_in_float32
def _gelu_kernel(xp: Any, x: Any, /, *, approximate: str = "none") -> Any:
    _check_approximate(approximate)
    if approximate == "tanh":
        return 0.5 * x * (1.0 + xp.tanh(_SQRT_2_OVER_PI * (x + _TANH_CUBIC * (x * x * x))))
    # x * Phi(x), with Phi(x) = erfc(-x / sqrt 2) / 2: accurate for large negative x too.
    return 0.5 * x * erfc_values(xp, -_SQRT_HALF * x)


@half_rule_in_float32
def _gelu_grad(xp: Any, g: Any, ans: Any, x: Any, *, approximate: str) -> Any:
    if approximate == "tanh":
        inner = _SQRT_2_OVER_PI * (x + _TANH_CUBIC * (x * x * x))
        t = xp.tanh(inner)
        d_inner = _SQRT_2_OVER_PI * (1.0 + 3.0 * _TANH_CUBIC * (x * x))
        return g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * d_inner)
    # NOTE: clamp before squaring: the density underflows to 0 long before x * x overflows.
    clamped = xp.clip(x, min=-40.0, max=40.0)
    density = _INV_SQRT_2PI * xp.exp(-0.5 * (clamped * clamped))
    return g * (0.5 * xp.erfc(-_SQRT_HALF * x) + x * density)


# Real only, as PyTorch's: of a complex x the exact form gave x * Phi(|x|), wrong.
gelu = nn_op("gelu", _gelu_kernel, vjp=_gelu_grad, promotion="float", real_only=True,
             doc="Gaussian error linear unit ``x * Phi(x)``, exact or by tanh (``approximate``).")

# -- softmax and its relatives -------------------------------------------------------------


def _one_axis(x: Any, axis: int) -> int | None:
    """``axis``, or None of a 0-d ``x`` (its dim 0 or -1, as PyTorch's): Dask's reductions
    take no axis of a 0-d array."""
    return None if x.ndim == 0 else axis


@half_in_float32  # as PyTorch: float16 normalized in float32, rounded once
def _log_softmax_kernel(xp: Any, x: Any, /, *, axis: int = -1) -> Any:
    if 0 in x.shape:  # no elements: nothing to normalize (max() has no identity)
        return xp.reshape(x, x.shape) * 1
    axes = _one_axis(x, axis)
    shifted = x - xp.max(x, axis=axes, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axes, keepdims=True))


@half_in_float32  # as PyTorch: float16 normalized in float32, rounded once
def _softmax_kernel(xp: Any, x: Any, /, *, axis: int = -1) -> Any:
    if 0 in x.shape:
        return xp.reshape(x, x.shape) * 1
    axes = _one_axis(x, axis)
    e = xp.exp(x - xp.max(x, axis=axes, keepdims=True))
    return e / xp.sum(e, axis=axes, keepdims=True)


@half_rule_in_float32
def _softmax_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: int) -> Any:
    ans = conj(xp, ans)  # (a complex x's rule is the conjugate Jacobian's, as every one here)
    return ans * (g - xp.sum(g * ans, axis=_one_axis(ans, axis), keepdims=True))


@half_rule_in_float32
def _log_softmax_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: int) -> Any:
    return g - conj(xp, xp.exp(ans)) * xp.sum(g, axis=_one_axis(ans, axis), keepdims=True)


_PYTHON_TYPE_DTYPES = {float: "float64", int: "int64", bool: "bool", complex: "complex128"}


def _normalizing_method(name: str) -> Any:
    """PyTorch's ``x.softmax(dim, dtype=None)`` (or ``log_softmax``): ``dtype`` converts
    ``x`` first; the axis comes as ``dim`` or the standard's ``axis`` (the last by default)."""

    def method(xp: Any, x: Any, dim: Any = None, dtype: Any = None, *, axis: Any = None) -> Any:
        if dim is not None and axis is not None:
            raise ArgumentError(f"{name}() got both dim= and axis=; give one of them")
        if dtype is not None:
            if isinstance(dtype, type):  # PyTorch's Python types: float is float64
                dtype = getattr(xp, _PYTHON_TYPE_DTYPES.get(dtype, ""), dtype)
            if xp.isdtype(dtype, ("bool", "integral")):
                raise DtypeError(
                    f"{name}(): dtype={dtype} is not a floating dtype; its values are "
                    "fractions: pass a floating dtype such as float64, or none"
                )
            x = xp.astype(x, dtype)
        return getattr(xp, name)(x, axis=-1 if dim is None and axis is None else dim_as_axis(
            axis if dim is None else dim))  # fmt: skip

    method.__doc__ = _normalizing_method.__doc__
    return method


# saves=("ans",): the rules read x's dtype alone, so x may change in place after, as in PyTorch.
softmax = nn_op("softmax", _softmax_kernel, vjp=_softmax_grad, saves=("ans",),
                methods={"softmax": _normalizing_method("softmax")}, promotion="float",
                doc="Softmax along ``axis``: ``exp(x) / sum(exp(x))``, after subtracting the max.")

log_softmax = nn_op("log_softmax", _log_softmax_kernel, vjp=_log_softmax_grad, saves=("ans",),
                    methods={"log_softmax": _normalizing_method("log_softmax")},
                    promotion="float", doc="Log of the softmax along ``axis``, stably.")


def _normalized_axes(axis: int | tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """logsumexp's axes in order, each checked (an empty input never reaches the backend's
    own check); a 0-d input takes 0 and -1, as PyTorch's reductions do."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    checked = sorted(checked_axis("logsumexp", a, ndim, zero_d_as_one=True) for a in axes)
    if len(set(checked)) != len(checked):
        raise AxisError(f"logsumexp(): dim {axis!r} names one dimension more than once")
    return tuple(checked) if ndim else ()


def _kept_shape(shape: tuple[int, ...], axis: Any) -> tuple[int, ...]:
    axes = _normalized_axes(axis, len(shape))
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _logsumexp_kernel(
    xp: Any, x: Any, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False
) -> Any:
    if x.ndim == 0:
        for a in () if axis is None else (axis,) if isinstance(axis, int) else axis:
            checked_axis("logsumexp", a, 0, zero_d_as_one=True)  # (dim=5 was taken)
        axis = None  # dim 0 or -1 of a 0-d tensor: CuPy takes no axis there
    if 0 in x.shape:
        # No elements: each empty sum is log(0) = -inf (max() of nothing has no value).
        out = xp.full(_kept_shape(tuple(x.shape), axis), -math.inf, dtype=x.dtype,
                      device=device_of(x))  # fmt: skip
    else:
        # Complex: shifted by the largest real part only, so that the log is the principal
        # one, as PyTorch's (a complex shift's imaginary part came out unwrapped).
        top = xp.max(xp.real(x) if is_complex(xp, x) else x, axis=axis, keepdims=True)
        # NOTE: a slice that is all -inf (or holds +inf) would give inf - inf = nan below.
        top = xp.where(xp.isfinite(top), top, 0.0)
        out = xp.log(xp.sum(xp.exp(x - top), axis=axis, keepdims=True)) + top
    if keepdims:
        return out
    axes = _normalized_axes(axis, x.ndim)
    return xp.reshape(out, tuple(n for i, n in enumerate(x.shape) if i not in axes))


def _logsumexp_grad(xp: Any, g: Any, ans: Any, x: Any, *, axis: Any, keepdims: bool) -> Any:
    if not keepdims:
        kept = _kept_shape(tuple(x.shape), axis)
        g = xp.reshape(g, kept)
        ans = xp.reshape(ans, kept)
    return g * conj(xp, xp.exp(x - ans))


logsumexp = nn_op("logsumexp", _logsumexp_kernel, vjp=_logsumexp_grad, methods="logsumexp",
                  promotion="float",
                  doc="``log(sum(exp(x)))`` over ``axis`` (default all), without overflow.")

# -- losses ------------------------------------------------------------------------------


def _class_axis(logits: Any) -> int:
    """PyTorch's layout: ``(N, C, ...)``, or ``(C,)`` for a single sample."""
    return 0 if logits.ndim == 1 else 1


def _class_shape(ndim: int, axis: int, classes: int) -> tuple[int, ...]:
    return tuple(classes if i == axis else 1 for i in range(ndim))


def _targets_hit(xp: Any, logits: Any, target: Any, axis: int) -> Any:
    """Boolean, logits-shaped: True at each element's target class."""
    classes = logits.shape[axis]
    labels = xp.reshape(
        xp.arange(classes, device=device_of(target)), _class_shape(logits.ndim, axis, classes)
    )
    return xp.expand_dims(target, axis=axis) == labels


def _cross_entropy_kernel(
    xp: Any,
    logits: Any,
    target: Any,
    weight: Any = None,
    *,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
) -> Any:
    axis = _class_axis(logits)
    logp = _log_softmax_kernel(xp, logits, axis=axis)
    hit = _targets_hit(xp, logits, target, axis)
    if weight is not None:
        class_weight = xp.reshape(weight, _class_shape(logits.ndim, axis, weight.shape[0]))
        weighted = logp * class_weight
    else:
        weighted = logp
    loss = -xp.sum(xp.where(hit, weighted, 0.0), axis=axis)
    if label_smoothing:
        smooth = -xp.sum(weighted, axis=axis) / logits.shape[axis]
        loss = (1.0 - label_smoothing) * loss + label_smoothing * smooth
    return xp.where(target != ignore_index, loss, 0.0)


def _cross_entropy_grad(
    xp: Any,
    g: Any,
    ans: Any,
    logits: Any,
    target: Any,
    weight: Any,
    *,
    ignore_index: int,
    label_smoothing: float,
) -> Any:
    axis = _class_axis(logits)
    classes = logits.shape[axis]
    p = xp.softmax(logits, axis=axis)
    onehot = xp.astype(_targets_hit(xp, logits, target, axis), p.dtype)
    scale = xp.expand_dims(xp.where(target != ignore_index, g, 0.0), axis=axis)
    if weight is None:
        # d/dx of -log p_t is p - onehot; of the smoothing term -mean(log p), p - 1/C.
        grad = p - (1.0 - label_smoothing) * onehot
        if label_smoothing:
            grad = grad - label_smoothing / classes
        return scale * grad
    class_weight = xp.reshape(weight, _class_shape(logits.ndim, axis, classes))
    target_weight = xp.sum(onehot * class_weight, axis=axis, keepdims=True)
    grad = (1.0 - label_smoothing) * target_weight * (p - onehot)
    if label_smoothing:
        total = xp.sum(weight)
        grad = grad + (label_smoothing / classes) * (p * total - class_weight)
    return scale * grad


cross_entropy = nn_op("cross_entropy", _cross_entropy_kernel, vjp=(_cross_entropy_grad, None, None),
                      inputs=("logits", "target", "weight"),
                      doc="Cross-entropy of ``logits`` against integer classes ``target``.")


def _counted_weight_kernel(
    xp: Any, logits: Any, target: Any, weight: Any = None, /, *, ignore_index: int
) -> Any:
    counted = target != ignore_index
    dtype = _counted_dtype(xp, logits)
    if weight is None:
        total = xp.sum(xp.astype(counted, dtype))
    else:
        safe = xp.reshape(xp.where(counted, target, 0), (-1,))
        picked = xp.reshape(xp.take(weight, safe, axis=0), target.shape)
        total = xp.sum(xp.astype(xp.where(counted, picked, 0.0), dtype))
    # Nothing counted: NaN, as in PyTorch, without a division-by-zero warning (the
    # backward rules zero the ignored samples).
    return xp.where(total == 0, float("nan"), total)


def _counted_weight_numpy(
    xp: Any, logits: Any, target: Any, weight: Any = None, /, *, ignore_index: int
) -> Any:
    # The common case, no weights and no target equal to ignore_index (one reduction
    # tells), needs no mask: the total is the number of targets, exact as a float.
    if (
        weight is None
        and target.size
        and (target.min() > ignore_index or target.max() < ignore_index)
    ):
        import numpy as np  # a tenth of the time of array-api-compat's asarray

        return np.array(target.size, dtype=_counted_dtype(xp, logits))
    return _counted_weight_kernel(xp, logits, target, weight, ignore_index=ignore_index)


def _counted_dtype(xp: Any, logits: Any) -> Any:
    """``logits``' dtype, or float32 for float16: 70000 targets are inf in float16."""
    return xp.float32 if is_half(xp, logits.dtype) else logits.dtype


counted_weight = nn_op("counted_weight", _counted_weight_kernel, differentiable=False,
                       inputs=("logits", "target", "weight"),
                       kernels={"numpy": _counted_weight_numpy},
                       doc="The summed ``weight`` (1 each without it) of the class ``target`` "
                           "values other than ``ignore_index``, in ``logits``' dtype (float32 "
                           "for float16, which holds counts only up to 65504); NaN if none: "
                           "the denominator of a mean over class targets.")


def _softplus_of_negative(xp: Any, x: Any) -> Any:
    """``log(1 + exp(-x))`` without overflow."""
    return xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(-x, 0.0)


def _bce(
    xp: Any, input: Any, target: Any, weight: Any = None, pos_weight: Any = None
) -> Any:
    # loss = -[pos_weight * y * log(sigmoid(x)) + (1 - y) * log(1 - sigmoid(x))]
    #      = (1 - y) * x + (1 + (pos_weight - 1) * y) * softplus(-x)
    softplus_neg = _softplus_of_negative(xp, input)
    if pos_weight is None:
        loss = (1.0 - target) * input + softplus_neg
    else:
        loss = (1.0 - target) * input + (1.0 + (pos_weight - 1.0) * target) * softplus_neg
    return loss if weight is None else loss * weight


def _bce_grad_input(
    xp: Any, g: Any, ans: Any, input: Any, target: Any, weight: Any, pos_weight: Any
) -> Any:
    if pos_weight is None:
        grad = xp.sigmoid(input) - target
    else:
        scaled_target = pos_weight * target
        grad = xp.sigmoid(input) * (scaled_target + 1.0 - target) - scaled_target
    return g * grad if weight is None else g * weight * grad


def _bce_grad_target(
    xp: Any, g: Any, ans: Any, input: Any, target: Any, weight: Any, pos_weight: Any
) -> Any:
    if pos_weight is None:
        grad = -input
    else:
        grad = (pos_weight - 1.0) * _softplus_of_negative(xp, input) - input
    return g * grad if weight is None else g * weight * grad


def _bce_grad_weight(
    xp: Any, g: Any, ans: Any, input: Any, target: Any, weight: Any, pos_weight: Any
) -> Any:
    return g * _bce(xp, input, target, None, pos_weight)


def _bce_grad_pos_weight(
    xp: Any, g: Any, ans: Any, input: Any, target: Any, weight: Any, pos_weight: Any
) -> Any:
    grad = target * _softplus_of_negative(xp, input)
    return g * grad if weight is None else g * weight * grad


binary_cross_entropy_with_logits = nn_op(
    "binary_cross_entropy_with_logits", _bce, inputs=("input", "target", "weight", "pos_weight"),
    vjp=(_bce_grad_input, _bce_grad_target, _bce_grad_weight, _bce_grad_pos_weight),
    broadcasting=True, doc="Binary cross-entropy of ``sigmoid(input)`` against ``target``, stably.")

# -- connectionist temporal classification -----------------------------------------------
# The labels are extended with a blank before, between and after them (2 * S + 1 states);
# log_alpha[t, n, s] is the log-probability of the paths over frames 0..t that end in state
# s. The recursions loop over the frames only, each step one set of array operations over
# the batch and the states.


def _logaddexp3(xp: Any, a: Any, b: Any, c: Any) -> Any:
    """``log(exp(a) + exp(b) + exp(c))`` without overflow, -inf where all three are -inf."""
    top = xp.maximum(xp.maximum(a, b), c)
    finite = top > -math.inf
    shift = xp.where(finite, top, 0.0)
    total = xp.exp(a - shift) + xp.exp(b - shift) + xp.exp(c - shift)
    # (log(1) + -inf where nothing is reachable: no log(0) warning)
    return xp.log(xp.where(finite, total, 1.0)) + top


def _ctc_shifted(xp: Any, x: Any, by: int, fill: Any) -> Any:
    """``x`` moved ``by`` states along its last axis (up if positive), ``fill`` coming in."""
    states = x.shape[-1]
    width = min(abs(by), states)
    pad = xp.full((*x.shape[:-1], width), fill, dtype=x.dtype, device=device_of(x))
    if by > 0:
        return xp.concat([pad, x[..., : states - width]], axis=-1)
    return xp.concat([x[..., width:], pad], axis=-1)


def _ctc_states(xp: Any, log_probs: Any, targets: Any, target_lengths: Any, blank: int) -> Any:
    """The extended labels' emissions ``(T, N, 2S+1)``, where a state may be reached from
    two states below (a label unlike the one before it), and the states of each sample."""
    steps, batch, _ = log_probs.shape
    labels = targets.shape[1]
    states = 2 * labels + 1
    device = device_of(log_probs)
    lengths = xp.reshape(target_lengths, (batch, 1))
    # Padding past a sample's length may hold anything (-1, a class out of range): blanks.
    used = xp.reshape(xp.arange(labels, device=device), (1, labels)) < lengths
    last = xp.full((batch, 1), blank, dtype=targets.dtype, device=device)
    if labels:
        labels_used = xp.where(used, targets, blank)
        blanks = xp.full((batch, labels), blank, dtype=targets.dtype, device=device)
        extended = xp.reshape(xp.stack([blanks, labels_used], axis=2), (batch, 2 * labels))
        extended = xp.concat([extended, last], axis=1)
    else:  # (an empty stack is more than Dask's reshape takes)
        extended = last
    skip = xp.zeros((batch, min(2, states)), dtype=xp.bool, device=device)
    if labels:
        skips = (extended[:, 2:] != blank) & (extended[:, 2:] != extended[:, :-2])
        skip = xp.concat([skip, skips], axis=1)
    emissions = xp.take_along_axis(
        log_probs, xp.broadcast_to(xp.reshape(extended, (1, batch, states)),
                                   (steps, batch, states)), axis=2,
    )
    state = xp.reshape(xp.arange(states, device=device), (1, states))
    return extended, emissions, skip, state, lengths


def _ctc_likelihood(
    xp: Any, last: Any, state: Any, input_lengths: Any, target_lengths: Any
) -> Any:
    """The negative log-likelihood of each sample from ``last``, log_alpha at its last frame."""
    lengths = xp.reshape(target_lengths, (-1, 1))
    final = (state == 2 * lengths) | (state == 2 * lengths - 1)
    ends = xp.where(final, last, -math.inf)
    top = xp.max(ends, axis=1)
    finite = top > -math.inf
    shift = xp.where(finite, top, 0.0)
    total = xp.sum(xp.exp(ends - xp.reshape(shift, (-1, 1))), axis=1)
    nll = -(xp.log(xp.where(finite, total, 1.0)) + top)
    # No frames: only the empty target is possible, with probability 1.
    empty = xp.where(target_lengths == 0, xp.zeros_like(nll), math.inf)
    return xp.where(input_lengths == 0, empty, nll)


def _ctc_loss_kernel(
    xp: Any,
    log_probs: Any,
    targets: Any,
    input_lengths: Any,
    target_lengths: Any,
    /,
    *,
    blank: int = 0,
    zero_infinity: bool = False,
) -> Any:
    _, emissions, skip, state, _ = _ctc_states(xp, log_probs, targets, target_lengths, blank)
    frames = xp.reshape(input_lengths, (-1, 1))
    alpha = xp.where(state < 2, emissions[0, ...], -math.inf)
    alphas = [alpha]
    for t in range(1, log_probs.shape[0]):
        step = _logaddexp3(
            xp, alpha, _ctc_shifted(xp, alpha, 1, -math.inf),
            xp.where(skip, _ctc_shifted(xp, alpha, 2, -math.inf), -math.inf),
        ) + emissions[t, ...]
        # Past a sample's last frame its alphas stay: the last row holds each final one.
        alpha = xp.where(t < frames, step, alpha)
        alphas.append(alpha)
    log_alpha = xp.stack(alphas, axis=0)
    nll = _ctc_likelihood(xp, alpha, state, input_lengths, target_lengths)
    if zero_infinity:
        nll = xp.where(nll == math.inf, 0.0, nll)
    return nll, log_alpha


def _ctc_loss_grad(
    xp: Any,
    g: Any,
    ans: Any,
    log_probs: Any,
    targets: Any,
    input_lengths: Any,
    target_lengths: Any,
    *,
    blank: int,
    zero_infinity: bool,
) -> Any:
    return xp.ctc_loss_backward(g[0], log_probs, targets, input_lengths, target_lengths, ans[1],
                                blank=blank, zero_infinity=zero_infinity)


ctc_loss = nn_op("ctc_loss", _ctc_loss_kernel, vjp=(_ctc_loss_grad, None, None, None),
                 output_names=("loss", "log_alpha"), nondifferentiable_outputs=(1,),
                 doc="Connectionist temporal classification loss of each sample (and the "
                     "forward variables log_alpha, ``(T, N, 2S+1)``) for log-probabilities "
                     "``(T, N, C)`` and padded targets ``(N, S)``.")


def _ctc_backward_with(scatter_add: Any) -> Any:
    """The ``ctc_loss_backward`` kernel that sums the states of a class with ``scatter_add``."""

    def kernel(
        xp: Any,
        grad: Any,
        log_probs: Any,
        targets: Any,
        input_lengths: Any,
        target_lengths: Any,
        log_alpha: Any,
        /,
        *,
        blank: int = 0,
        zero_infinity: bool = False,
    ) -> Any:
        steps, batch, classes = log_probs.shape
        extended, emissions, skip, state, lengths = _ctc_states(
            xp, log_probs, targets, target_lengths, blank
        )
        states = state.shape[1]
        frames = xp.reshape(input_lengths, (-1, 1))
        final = (state == 2 * lengths) | (state == 2 * lengths - 1)
        skip_up = _ctc_shifted(xp, skip, -2, False)  # s + 2 reachable from s
        # log_beta[t, n, s]: the paths over frames t.. of sample n from state s, frame t's
        # emission included (so alpha + beta counts it twice).
        beta = xp.full((batch, states), -math.inf, dtype=log_probs.dtype,
                       device=device_of(log_probs))
        betas = []
        for t in range(steps - 1, -1, -1):
            step = _logaddexp3(
                xp, beta, _ctc_shifted(xp, beta, -1, -math.inf),
                xp.where(skip_up, _ctc_shifted(xp, beta, -2, -math.inf), -math.inf),
            ) + emissions[t, ...]
            start = xp.where(final, emissions[t, ...], -math.inf)
            beta = xp.where(t == frames - 1, start, xp.where(t < frames - 1, step, -math.inf))
            betas.append(beta)
        log_beta = xp.stack(betas[::-1], axis=0)
        nll = _ctc_likelihood(xp, log_alpha[-1, ...], state, input_lengths, target_lengths)
        feasible = nll < math.inf
        shift = xp.reshape(xp.where(feasible, nll, 0.0), (1, batch, 1))
        # The posterior probability of each state at each frame, at most 1: summed by class
        # without the underflow of a log-space sum of small terms.
        occupancy = xp.exp(log_alpha + log_beta - emissions + shift)
        offsets = xp.reshape(
            xp.arange(steps * batch, dtype=extended.dtype, device=device_of(extended)),
            (steps, batch, 1),
        ) * classes
        key = xp.reshape(offsets + xp.reshape(extended, (1, batch, states)), (-1,))
        posterior = xp.reshape(
            scatter_add(xp, xp.reshape(occupancy, (-1,)), key=key,
                        shape=(steps * batch * classes,)),
            (steps, batch, classes),
        )
        # The derivative of -log p(target) by each log-probability: minus its posterior.
        # (PyTorch's adds exp(log_probs), which log_softmax's backward takes away again.)
        out = 0.0 - posterior  # (+0, not -0, where a class has no posterior)
        # An impossible alignment: 0 with zero_infinity, else NaN (as PyTorch).
        out = xp.where(xp.reshape(feasible, (1, batch, 1)), out, 0.0 if zero_infinity else math.nan)
        during = xp.reshape(xp.arange(steps, device=device_of(log_probs)), (steps, 1, 1)) < (
            xp.reshape(input_lengths, (1, batch, 1))
        )
        return xp.where(during, out * xp.reshape(grad, (1, batch, 1)), 0.0)

    return kernel


def _ctc_twice(xp: Any, g: Any, ans: Any, *inputs: Any, **params: Any) -> Any:
    raise BackwardError(
        "ctc_loss() is differentiable once, as PyTorch's: its gradient has no derivative of "
        "its own. Differentiate it without create_graph=True, or write the loss from "
        "plugrad's ops for higher derivatives"
    )


def _ctc_backward_grad_grad(
    xp: Any, g: Any, ans: Any, grad: Any, log_probs: Any, targets: Any, input_lengths: Any,
    target_lengths: Any, log_alpha: Any, /, **params: Any,
) -> Any:  # fmt: skip
    # Linear in each sample's incoming gradient: the gradient for 1, read against g.
    unit = xp.ctc_loss_backward(
        xp.ones_like(grad), log_probs, targets, input_lengths, target_lengths, log_alpha, **params
    )
    return xp.sum(g * unit, axis=(0, 2))


ctc_loss_backward = nn_op("ctc_loss_backward", _ctc_backward_with(scatter_add_generic),
                          kernels={"numpy": _ctc_backward_with(scatter_add_numpy)},
                          vjp=(_ctc_backward_grad_grad, _ctc_twice, None, None, None, None),
                          doc="The gradient of :func:`ctc_loss` with respect to its "
                              "log-probabilities, from its log_alpha.")

# -- binary cross-entropy of probabilities ---------------------------------------------------


def _logs(xp: Any, p: Any, floor: float) -> tuple[Any, Any]:
    """``log(p)`` and ``log(1 - p)``, each at least ``floor``; log(0) is taken of 1 instead
    and replaced, so that it neither warns nor makes nan."""
    positive, below_one = p > 0, p < 1
    log_p = xp.where(positive, xp.maximum(xp.log(xp.where(positive, p, 1.0)), floor), floor)
    log_q = xp.where(below_one, xp.log1p(-xp.where(below_one, p, 0.0)), floor)
    return log_p, xp.maximum(log_q, floor)


def _bce_probabilities(xp: Any, input: Any, target: Any, /) -> Any:
    log_p, log_q = _logs(xp, input, -100.0)  # PyTorch's clamp
    return -(target * log_p + (1.0 - target) * log_q)


#: 1e-12 as float32 holds it: PyTorch's bound, bit for bit in float64 too.
_BCE_EPSILON = 9.999999960041972e-13


def _bce_probabilities_grad_input(xp: Any, g: Any, ans: Any, input: Any, target: Any) -> Any:
    # An op of its own, whose derivatives are PyTorch's (not those of its clamped formula).
    return xp.binary_cross_entropy_backward(g, input, target)


def _bce_backward(xp: Any, g: Any, input: Any, target: Any, /) -> Any:
    # In float32 for float16, rounded once (as PyTorch): a mean's g (1 / N) times
    # input - target underflowed float16 to 0, and 1e-12 is 0 there.
    return in_float32_if_half(xp, _bce_input_slope, g, input, target)


def _bce_input_slope(xp: Any, g: Any, input: Any, target: Any) -> Any:
    # PyTorch's: the clamp is ignored, and the product bounded below by 1e-12, so that a
    # confidently wrong probability (0 for a target of 1) still gets a gradient.
    return g * (input - target) / xp.maximum(input * (1.0 - input), _BCE_EPSILON)


def _bce_backward_grad_input(xp: Any, gg: Any, ans: Any, g: Any, input: Any, target: Any) -> Any:
    return in_float32_if_half(xp, _bce_curvature, gg, g, input, target)


def _bce_curvature(xp: Any, gg: Any, g: Any, input: Any, target: Any) -> Any:
    # PyTorch's second derivative, not that of the bounded slope above (1 / 1e-12 where
    # p is within 1e-12 of a label 0 or 1): the unclamped loss's, with 1e-12 added to p and
    # to 1 - p, so 0 at p equal to a label 0 or 1. The loss's own curvature there is 1
    # (-log(1 - p) at p = 0), but that 0 goes with the slope, 0 there too: kept. Its numerator
    # p**2 - 2 p y + y is written (p - y)**2 + y (1 - y), which does not cancel near p = y = 1
    # (there PyTorch's gives 0 in float32 up to p = 0.9999, its curvature near p = y = 0 ~1).
    bounded = (input + 1e-12) * ((1.0 - input) + 1e-12)
    return gg * g * ((input - target) ** 2 + target * (1.0 - target)) / (bounded * bounded)


def _bce_backward_grad_target(xp: Any, gg: Any, ans: Any, g: Any, input: Any, target: Any) -> Any:
    return in_float32_if_half(xp, _bce_target_slope, gg, g, input)


def _bce_target_slope(xp: Any, gg: Any, g: Any, input: Any) -> Any:
    # PyTorch's bound here is 1e-12 itself, not its float32 rounding as in the slope.
    return -(gg * g) / xp.maximum(input * (1.0 - input), 1e-12)


def _bce_probabilities_grad_target(xp: Any, g: Any, ans: Any, input: Any, target: Any) -> Any:
    log_p, log_q = _logs(xp, input, -math.inf)  # PyTorch's: not clamped (inf at 0 and 1)
    return g * (log_q - log_p)


binary_cross_entropy = nn_op(
    "binary_cross_entropy", _bce_probabilities,
    vjp=(_bce_probabilities_grad_input, _bce_probabilities_grad_target), broadcasting=True,
    doc="Binary cross-entropy of probabilities ``input`` against ``target``, element-wise.")

binary_cross_entropy_backward = nn_op(
    "binary_cross_entropy_backward", _bce_backward, broadcasting=True,
    vjp=(lambda xp, gg, ans, g, input, target: xp.binary_cross_entropy_backward(gg, input, target),
         _bce_backward_grad_input, _bce_backward_grad_target),
    doc="The gradient of :func:`binary_cross_entropy` with respect to its probabilities.")

# -- affine grid ---------------------------------------------------------------------------


def _affine_grid_base(xp: Any, size: tuple[int, ...], align_corners: bool, like: Any) -> Any:
    """``(points, rows + 1)``: each output point's coordinates in [-1, 1], x (the last axis)
    first, then 1."""
    spatial = size[2:]
    rows = len(spatial)
    columns = []
    for index, n in enumerate(reversed(spatial)):
        steps = xp.arange(n, dtype=like.dtype, device=device_of(like))
        if align_corners:
            coordinates = steps * (2.0 / (n - 1)) - 1.0 if n > 1 else steps * 0.0
        else:
            coordinates = (steps * 2.0 + 1.0) / n - 1.0
        shape = [1] * rows
        shape[rows - 1 - index] = n
        columns.append(xp.broadcast_to(xp.reshape(coordinates, tuple(shape)), spatial))
    columns.append(xp.ones(spatial, dtype=like.dtype, device=device_of(like)))
    return xp.reshape(xp.stack(columns, axis=-1), (math.prod(spatial), rows + 1))


def _affine_grid(xp: Any, theta: Any, /, *, size: Any, align_corners: bool = False) -> Any:
    base = _affine_grid_base(xp, size, align_corners, theta)
    grid = xp.matmul(base, xp.matrix_transpose(theta))  # (N, points, rows)
    return xp.reshape(grid, (size[0], *size[2:], len(size) - 2))


def _affine_grid_grad(xp: Any, g: Any, ans: Any, theta: Any, *, size: Any,
                      align_corners: bool) -> Any:  # fmt: skip
    # The coordinates are made again: nothing is kept, so a grid backpropagates any number
    # of times (as PyTorch's, whose backward keeps none either).
    base = _affine_grid_base(xp, size, align_corners, g)
    points = xp.reshape(g, (size[0], math.prod(size[2:]), len(size) - 2))
    return xp.matmul(xp.matrix_transpose(points), base)


affine_grid = nn_op("affine_grid", _affine_grid, vjp=_affine_grid_grad, saves=(),
                    doc="The sampling grid ``(N, *spatial, rows)`` of the affine maps ``theta`` "
                        "``(N, rows, rows + 1)`` for the output ``size`` ``(N, C, *spatial)``.")

# -- layer norm ---------------------------------------------------------------------------


def _normalized(xp: Any, x: Any, ndim: int, eps: float) -> tuple[Any, Any]:
    """``(x - mean) * rstd`` over the last ``ndim`` axes, and ``rstd``.

    NOTE: float16 is normalized in float32, as PyTorch does: the squares of
    values a few hundred apart overflow float16, and the result came out 0.
    """
    if is_half(xp, x.dtype):
        x = xp.astype(x, xp.float32)
    axes = tuple(range(x.ndim - ndim, x.ndim))
    centered = x - xp.mean(x, axis=axes, keepdims=True)
    rstd = 1.0 / xp.sqrt(xp.mean(centered * centered, axis=axes, keepdims=True) + eps)
    return centered * rstd, rstd


def _layer_norm_kernel(
    xp: Any, x: Any, weight: Any = None, bias: Any = None, *, ndim: int, eps: float = 1e-5
) -> Any:
    out, _ = _normalized(xp, x, ndim, eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return cast(xp, out, x.dtype)


def _layer_norm_grad_x(
    xp: Any, g: Any, ans: Any, x: Any, weight: Any, bias: Any, *, ndim: int, eps: float
) -> Any:
    axes = tuple(range(x.ndim - ndim, x.ndim))
    normalized, rstd = _normalized(xp, x, ndim, eps)
    gw = g if weight is None else g * weight
    gw = cast(xp, gw, normalized.dtype)  # float16's means taken in float32
    mean_gw = xp.mean(gw, axis=axes, keepdims=True)
    mean_gwn = xp.mean(gw * normalized, axis=axes, keepdims=True)
    return cast(xp, rstd * (gw - mean_gw - normalized * mean_gwn), x.dtype)


def _layer_norm_grad_weight(
    xp: Any, g: Any, ans: Any, x: Any, weight: Any, bias: Any, *, ndim: int, eps: float
) -> Any:
    normalized, _ = _normalized(xp, x, ndim, eps)
    return cast(xp, xp.sum(g * normalized, axis=tuple(range(x.ndim - ndim))), weight.dtype)


def _layer_norm_grad_bias(
    xp: Any, g: Any, ans: Any, x: Any, weight: Any, bias: Any, *, ndim: int, eps: float
) -> Any:
    wide = xp.float32 if is_half(xp, g.dtype) else None  # float16 summed in float32
    return cast(xp, xp.sum(g, axis=tuple(range(x.ndim - ndim)), dtype=wide), bias.dtype)


layer_norm = nn_op("layer_norm", _layer_norm_kernel, inputs=("x", "weight", "bias"),
                   vjp=(_layer_norm_grad_x, _layer_norm_grad_weight, _layer_norm_grad_bias),
                   doc="Normalize the last ``ndim`` axes, then scale by ``weight``, add ``bias``.")

# -- dropout ------------------------------------------------------------------------------

dropout = nn_op("dropout", lambda xp, x, keep, /, *, scale: xp.where(keep, x * scale, 0.0),
                vjp=(lambda xp, g, ans, x, keep, *, scale: xp.where(keep, g * scale, 0.0), None),
                doc="``x * scale`` where the boolean ``keep`` is true, 0 elsewhere.")

# -- embedding ----------------------------------------------------------------------------


def _embedding_kernel(
    xp: Any,
    weight: Any,
    indices: Any,
    /,
    *,
    padding_idx: int | None = None,
    scale_grad_by_freq: bool = False,
) -> Any:
    if indices.dtype != (wide := index_dtype(xp, indices)):  # (PyTorch's refuses int16)
        indices = xp.astype(indices, wide)
    rows = xp.take(weight, xp.reshape(indices, (-1,)), axis=0)
    return xp.reshape(rows, (*indices.shape, weight.shape[1]))


def _embedding_grad(
    xp: Any, g: Any, ans: Any, weight: Any, indices: Any, *, padding_idx: Any,
    scale_grad_by_freq: bool,
) -> Any:
    rows = weight.shape[0]
    if scale_grad_by_freq:
        # Each use of a row sends its gradient divided by how many times the batch uses it.
        ones = xp.ones((*indices.shape, 1), dtype=g.dtype, device=device_of(g))
        counts = xp.embedding_backward(ones, indices, num_embeddings=rows, padding_idx=None)
        g = g / xp.embedding(counts, indices)
    return xp.embedding_backward(g, indices, num_embeddings=rows, padding_idx=padding_idx)


embedding = nn_op("embedding", _embedding_kernel, vjp=(_embedding_grad, None), saves=("indices",),
                  doc="Rows of ``weight`` (V, D) at integer ``indices``: ``(*indices.shape, D)``.")


#: (dtype type, integer dtype) -> its (smallest, largest) value, for the range check.
_INT_BOUNDS: dict[tuple[type, Any], tuple[int, int]] = {}


def _out_of_range_kernel(
    xp: Any, indices: Any, /, *, low: int, high: int, allowed: int | None = None
) -> Any:
    # One reduction whatever the arguments: an allowed value next to the range widens it,
    # one inside it changes nothing, and bounds the dtype cannot cross are not compared.
    if allowed is not None:
        if low <= allowed < high:
            allowed = None
        elif allowed == low - 1:
            low, allowed = allowed, None
        elif allowed == high:
            high, allowed = high + 1, None
    dtype = indices.dtype
    key = (type(dtype), dtype)  # never compare dtypes of two libraries
    bounds = _INT_BOUNDS.get(key)
    if bounds is None:
        info = xp.iinfo(dtype)
        bounds = _INT_BOUNDS[key] = (int(info.min), int(info.max))
    smallest, largest = bounds
    outside = indices >= high if high <= largest else None
    if low > smallest:
        outside = indices < low if outside is None else outside | (indices < low)
    if outside is None:  # every value of the dtype lies in the range
        return xp.zeros((), dtype=xp.bool, device=device_of(indices))
    if allowed is not None and smallest <= allowed <= largest:
        outside = outside & (indices != allowed)
    return xp.any(outside)


def _out_of_range_numpy(
    xp: Any, indices: Any, /, *, low: int, high: int, allowed: int | None = None
) -> Any:
    # The common case, every value inside the range, decided by the smallest and the
    # largest value (two reductions instead of five operations); the comparisons over
    # every value only where one lies outside (an error, or the allowed value).
    if indices.size and indices.dtype.kind in "iu":
        outside = (xp.min(indices) < low) | (xp.max(indices) >= high)
        if not outside:
            return outside
    return _out_of_range_kernel(xp, indices, low=low, high=high, allowed=allowed)


out_of_range = nn_op("out_of_range", _out_of_range_kernel, differentiable=False,
                     kernels={"numpy": _out_of_range_numpy},
                     doc="Whether some integer in ``indices`` lies outside ``[low, high)`` "
                         "(other than ``allowed``), in one reduction: a 0-d boolean.")


def _embedding_backward_with(scatter_add: Any) -> Any:
    """The ``embedding_backward`` kernel that sums the rows with ``scatter_add``."""

    def kernel(
        xp: Any,
        grad: Any,
        indices: Any,
        /,
        *,
        num_embeddings: int,
        padding_idx: int | None = None,
    ) -> Any:
        width = grad.shape[-1]
        out = scatter_add(
            xp,
            xp.reshape(grad, (-1, width)),
            key=xp.reshape(indices, (-1,)),
            shape=(num_embeddings, width),
        )
        if padding_idx is not None:
            out = put(out, (padding_idx, slice(None)), 0.0)  # JAX's arrays are immutable
        return out

    return kernel


# The standard has no scatter-add: the generic indexing gradient sums the rows sent to
# each index with a sort and a segment sum; NumPy has a kernel of its own.
_embedding_backward_kernel = _embedding_backward_with(scatter_add_generic)
_embedding_backward_numpy = _embedding_backward_with(scatter_add_numpy)


def _embedding_backward_grad(
    xp: Any, g: Any, ans: Any, rows: Any, indices: Any, *, num_embeddings: int, padding_idx: Any
) -> Any:
    picked = xp.embedding(g, indices)
    if padding_idx is None:
        return picked
    return xp.where(xp.expand_dims(indices == padding_idx, axis=-1), 0.0, picked)


embedding_backward = nn_op("embedding_backward", _embedding_backward_kernel,
                           kernels={"numpy": _embedding_backward_numpy},
                           vjp=(_embedding_backward_grad, None),
                           doc="The gradient of :func:`embedding` with respect to its weight.")


# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
