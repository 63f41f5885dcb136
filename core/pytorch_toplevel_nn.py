"""PyTorch's top-level forms of nn functions, whose arguments differ from nn.functional's.

``torch.batch_norm``, ``torch.embedding``, ``torch.kl_div``, ``torch.dropout``, ... are the
operators that ``torch.nn.functional`` calls: their parameters come in another order
(``embedding(weight, indices)``), the losses take ``reduction`` as an int (0 ``"none"``,
1 ``"mean"``, 2 ``"sum"``) and the dropouts take ``p`` and ``train`` with no defaults.
Each here checks and converts its arguments and calls :mod:`plugrad.nn.functional`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import autocast_mode as _autocast
from . import ops as _ops
from .errors import InvalidArgumentError, ShapeError
from .nn import functional as F
from .nn.functional import _check_probability, _check_tensor, _drop, _renorm_rows_
from .nn.rnn import gru_cell, lstm_cell, rnn_relu_cell, rnn_tanh_cell
from .tensor import Tensor

__all__ = [
    "alpha_dropout",
    "alpha_dropout_",
    "batch_norm",
    "binary_cross_entropy_with_logits",
    "constant_pad_nd",
    "conv_tbc",
    "convolution",
    "cosine_embedding_loss",
    "ctc_loss",
    "dropout",
    "dropout_",
    "embedding",
    "embedding_renorm_",
    "feature_alpha_dropout",
    "feature_alpha_dropout_",
    "feature_dropout",
    "feature_dropout_",
    "group_norm",
    "gru_cell",
    "hinge_embedding_loss",
    "instance_norm",
    "kl_div",
    "layer_norm",
    "lstm_cell",
    "margin_ranking_loss",
    "native_layer_norm",
    "poisson_nll_loss",
    "rnn_relu_cell",
    "rnn_tanh_cell",
    "triplet_margin_loss",
]

#: PyTorch's ``reduction`` enum of its top-level losses.
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(function: str, reduction: Any) -> str:
    """The name of the reduction PyTorch's top-level losses take as an int."""
    if isinstance(reduction, bool) or reduction not in _REDUCTIONS:
        raise InvalidArgumentError(
            f"{function}(): reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction!r}; "
            f"for a reduction by name use plugrad.nn.functional.{function}"
        )
    return _REDUCTIONS[reduction]


# -- normalization ------------------------------------------------------------------------


def batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    """Batch normalization with PyTorch's top-level argument order (weight, bias first).

    ``cudnn_enabled`` is accepted and ignored: it picks a GPU kernel in PyTorch.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([[1.0], [3.0]])
    >>> plugrad.batch_norm(x, None, None, None, None, True, 0.1, 1e-5, False).round()
    tensor([[-1.],
            [ 1.]])
    """
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    use_input_stats: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    """Instance normalization with PyTorch's top-level argument order (weight, bias first).

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([[[1.0, 3.0]]])
    >>> plugrad.instance_norm(x, None, None, None, None, True, 0.1, 0.0, False)
    tensor([[[-1.,  1.]]])
    """
    return F.instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


@_autocast.listed("layer_norm")
def layer_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enable: bool = True,
) -> Tensor:
    """Layer normalization over the last dims; ``cudnn_enable`` is accepted and ignored.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.layer_norm(plugrad.tensor([1.0, 3.0]), [2], eps=0.0)
    tensor([-1.,  1.])
    """
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


@_autocast.listed("group_norm")
def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enabled: bool = True,
) -> Tensor:
    """Group normalization; ``cudnn_enabled`` is accepted and ignored.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.group_norm(plugrad.tensor([[[1.0], [3.0]]]), 1, eps=0.0)
    tensor([[[-1.],
             [ 1.]]])
    """
    return F.group_norm(input, num_groups, weight, bias, eps)


@_autocast.listed("native_layer_norm")
def native_layer_norm(
    input: Tensor,
    normalized_shape: Sequence[int],
    weight: Tensor | None,
    bias: Tensor | None,
    eps: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """Layer normalization and the statistics it used: ``(output, mean, rstd)``.

    ``mean`` and ``rstd`` (``1 / sqrt(var + eps)``) keep the normalized dims, of size 1.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([[1.0, 3.0]])
    >>> plugrad.native_layer_norm(x, [2], None, None, 0.0)
    (tensor([[-1.,  1.]]), tensor([[2.]]), tensor([[1.]]))
    """
    _check_tensor("input", "native_layer_norm", input)
    shape = tuple(normalized_shape)
    if not shape or input.shape[input.ndim - len(shape) :] != shape:
        raise ShapeError(
            f"native_layer_norm(): normalized_shape {list(shape)} must be the last dims of "
            f"the input, of shape {input.shape}"
        )
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    mean = _ops.mean(input, axis=dims, keepdims=True)
    centered = input - mean
    var = _ops.mean(centered * centered, axis=dims, keepdims=True)
    rstd = _ops.rsqrt(var + eps)
    output = centered * rstd
    if weight is not None:
        output = output * weight
    if bias is not None:
        output = output + bias
    return output, mean, rstd


# -- embeddings ---------------------------------------------------------------------------


def embedding(
    weight: Tensor,
    indices: Tensor,
    padding_idx: int = -1,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of ``weight`` at ``indices``: PyTorch's top-level form, ``weight`` first.

    A negative ``padding_idx`` means none (PyTorch's ``-1``); the row ``padding_idx``
    otherwise gets no gradient.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.embedding(plugrad.tensor([[0.0], [1.0], [2.0]]), plugrad.tensor([2, 0]))
    tensor([[2.],
            [0.]])
    """
    padding = None if padding_idx < 0 else padding_idx
    return F.embedding(
        indices, weight, padding, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse
    )


def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """Scale the rows of ``input`` at ``indices`` whose norm exceeds ``max_norm`` down to it.

    In place and outside autograd, as ``embedding(..., max_norm=)`` does; returns ``input``.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.tensor([[3.0, 4.0], [0.3, 0.4]])
    >>> plugrad.embedding_renorm_(w, plugrad.tensor([0, 1]), 1.0, 2.0)
    tensor([[0.6000, 0.8000],
            [0.3000, 0.4000]])
    """
    _check_tensor("input", "embedding_renorm_", input)
    _check_tensor("indices", "embedding_renorm_", indices)
    _renorm_rows_(input, indices, float(max_norm), float(norm_type))
    return input


# -- losses -------------------------------------------------------------------------------


@_autocast.listed("kl_div")
def kl_div(
    input: Tensor, target: Tensor, reduction: int = 1, *, log_target: bool = False
) -> Tensor:
    """Kullback-Leibler divergence; ``reduction`` as PyTorch's int enum (1: mean).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.kl_div(plugrad.log(plugrad.tensor([0.5, 0.5])), plugrad.tensor([0.5, 0.5]))
    tensor(0.)
    """
    name = _reduction("kl_div", reduction)
    return F.kl_div(input, target, reduction=name, log_target=log_target)


@_autocast.listed("hinge_embedding_loss")
def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 1
) -> Tensor:
    """Hinge embedding loss; ``reduction`` as PyTorch's int enum (1: mean).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.hinge_embedding_loss(plugrad.tensor([0.5, 2.0]), plugrad.tensor([1.0, -1.0]))
    tensor(0.2500)
    """
    name = _reduction("hinge_embedding_loss", reduction)
    return F.hinge_embedding_loss(input, target, margin, reduction=name)


@_autocast.listed("margin_ranking_loss")
def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 1
) -> Tensor:
    """Margin ranking loss; ``reduction`` as PyTorch's int enum (1: mean).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.margin_ranking_loss(
    ...     plugrad.tensor([1.0]), plugrad.tensor([2.0]), plugrad.tensor([1.0])
    ... )
    tensor(1.)
    """
    name = _reduction("margin_ranking_loss", reduction)
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=name)


@_autocast.listed("cosine_embedding_loss")
def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int = 1
) -> Tensor:
    """Cosine embedding loss; ``reduction`` as PyTorch's int enum (1: mean).

    Examples
    --------
    >>> import plugrad
    >>> a = plugrad.tensor([[1.0, 0.0]])
    >>> plugrad.cosine_embedding_loss(a, a, plugrad.tensor([1.0]))
    tensor(0.)
    """
    name = _reduction("cosine_embedding_loss", reduction)
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=name)


@_autocast.listed("triplet_margin_loss")
def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: int = 1,
) -> Tensor:
    """Triplet margin loss; ``reduction`` as PyTorch's int enum (1: mean).

    Examples
    --------
    >>> import plugrad
    >>> a = plugrad.tensor([[0.0, 0.0]])
    >>> plugrad.triplet_margin_loss(a, a, a + 3.0)
    tensor(0.)
    """
    name = _reduction("triplet_margin_loss", reduction)
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=name)


@_autocast.listed("poisson_nll_loss")
def poisson_nll_loss(
    input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float, reduction: int
) -> Tensor:
    """Poisson negative log-likelihood; every argument required, as PyTorch's top-level form.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.poisson_nll_loss(plugrad.tensor([0.0]), plugrad.tensor([1.0]), True, False, 1e-8, 1)
    tensor(1.)
    """
    name = _reduction("poisson_nll_loss", reduction)
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=name)


@_autocast.listed("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: int = 1,
) -> Tensor:
    """Binary cross-entropy of logits; ``pos_weight`` before ``reduction`` (an int), as PyTorch's.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.binary_cross_entropy_with_logits(plugrad.tensor([0.0]), plugrad.tensor([1.0]))
    tensor(0.6931)
    """
    name = _reduction("binary_cross_entropy_with_logits", reduction)
    return F.binary_cross_entropy_with_logits(
        input, target, weight, reduction=name, pos_weight=pos_weight
    )


@_autocast.listed("ctc_loss")
def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | Sequence[int],
    target_lengths: Tensor | Sequence[int],
    blank: int = 0,
    reduction: int = 1,
    zero_infinity: bool = False,
) -> Tensor:
    """Connectionist temporal classification loss; ``reduction`` as PyTorch's int enum.

    Examples
    --------
    >>> import plugrad
    >>> log_probs = plugrad.log(plugrad.full((1, 1, 2), 0.5))
    >>> plugrad.ctc_loss(log_probs, plugrad.tensor([[1]]), [1], [1])
    tensor(0.6931)
    """
    name = _reduction("ctc_loss", reduction)
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, name, zero_infinity)


# -- padding and convolution --------------------------------------------------------------


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    """Pad the last dims with ``value``: ``pad`` as :func:`plugrad.nn.functional.pad`'s.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.constant_pad_nd(plugrad.tensor([1.0]), [1, 2], 9.0)
    tensor([9., 1., 9., 9.])
    """
    return F.pad(input, pad, "constant", value)


@_autocast.listed("conv_tbc")
def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-d convolution of a ``(time, batch, channels)`` input with a ``(width, in, out)`` weight.

    The result is ``(time', batch, out)``; ``pad`` zeros pad both ends of the time dim.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.ones(3, 1, 1)
    >>> plugrad.conv_tbc(x, plugrad.ones(2, 1, 1), plugrad.zeros(1)).flatten()
    tensor([2., 2.])
    """
    _check_tensor("input", "conv_tbc", input)
    _check_tensor("weight", "conv_tbc", weight)
    if input.ndim != 3 or weight.ndim != 3:
        raise ShapeError(
            f"conv_tbc(): takes a 3-d input (time, batch, channels) and a 3-d weight "
            f"(width, in, out), got shapes {input.shape} and {weight.shape}"
        )
    out = F.conv1d(
        _ops.permute_dims(input, (1, 2, 0)), _ops.permute_dims(weight, (2, 1, 0)), bias,
        padding=pad,
    )  # fmt: skip
    return _ops.permute_dims(out, (2, 0, 1))


@_autocast.listed("convolution")
def convolution(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> Tensor:
    """A 1-, 2- or 3-d convolution (or transposed one), by the input's number of dims.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.ones(1, 1, 3)
    >>> plugrad.convolution(x, plugrad.ones(1, 1, 2), None, [1], [0], [1], False, [0], 1)
    tensor([[[2., 2.]]])
    """
    _check_tensor("input", "convolution", input)
    spatial = input.ndim - 2
    if spatial not in (1, 2, 3):
        raise ShapeError(
            f"convolution(): takes a 3-d, 4-d or 5-d input (batch, channels, then 1 to 3 "
            f"spatial dims), got shape {input.shape}"
        )
    s, p, d = tuple(stride), tuple(padding), tuple(dilation)
    if transposed:
        transpose = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[spatial - 1]
        return transpose(input, weight, bias, s, p, tuple(output_padding), groups, d)
    conv = (F.conv1d, F.conv2d, F.conv3d)[spatial - 1]
    return conv(input, weight, bias, s, p, d, groups)


# -- dropout ------------------------------------------------------------------------------


def _train_form(
    name: str, functional: Callable[..., Tensor], inplace: bool
) -> Callable[..., Tensor]:
    """PyTorch's top-level ``name(input, p, train)``: ``functional`` (of nn.functional), in
    place where ``inplace``."""

    def top_level(input: Tensor, p: float, train: bool) -> Tensor:
        return functional(input, p, train, inplace=inplace)

    top_level.__name__ = top_level.__qualname__ = name
    top_level.__module__ = "plugrad"
    top_level.__doc__ = (
        f"In-place :func:`{name[:-1]}`: ``input`` holds the result."
        if inplace
        else f":func:`plugrad.nn.functional.{name}` with PyTorch's top-level arguments "
        "``(input, p, train)``."
    )
    return top_level


dropout = _train_form("dropout", F.dropout, False)
dropout_ = _train_form("dropout_", F.dropout, True)
alpha_dropout = _train_form("alpha_dropout", F.alpha_dropout, False)
alpha_dropout_ = _train_form("alpha_dropout_", F.alpha_dropout, True)
feature_alpha_dropout = _train_form("feature_alpha_dropout", F.feature_alpha_dropout, False)
feature_alpha_dropout_ = _train_form("feature_alpha_dropout_", F.feature_alpha_dropout, True)


def _feature_dropout(function: str, input: Tensor, p: float, train: bool, inplace: bool) -> Tensor:
    """Zero whole channels (dim 1) of an input of 2 or more dims, one draw per (sample, channel)."""
    _check_tensor("input", function, input)
    p = _check_probability(function, p)
    if input.ndim < 2:
        raise ShapeError(
            f"{function}(): zeroes whole channels, so it takes an input of at least 2 dims "
            f"(batch, channels, ...), got shape {input.shape}; use dropout() for elements"
        )
    if not train or p == 0:
        return input
    return _drop(function, input, p, inplace, None, per=2)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zero each channel (dim 1) with probability ``p``, scaling the rest by ``1 / (1 - p)``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.feature_dropout(plugrad.ones(1, 2), 0.5, False)
    tensor([[1., 1.]])
    """
    return _feature_dropout("feature_dropout", input, p, train, inplace=False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place :func:`feature_dropout`: ``input`` holds the result.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.feature_dropout_(plugrad.ones(1, 2), 0.0, True)
    tensor([[1., 1.]])
    """
    return _feature_dropout("feature_dropout_", input, p, train, inplace=True)
