"""Attention: ``scaled_dot_product_attention``, ``multi_head_attention_forward`` and the
``MultiheadAttention`` layer, with PyTorch's signatures, masks and parameters.

Everything is composed of plugrad's differentiable ops (matrix products, softmax,
``where`` for the masks, dropout, linear maps), so gradients of any order work on
every backend. As in PyTorch, a boolean mask means opposite things in the two
APIs: for :func:`scaled_dot_product_attention` True marks a key that takes part,
for :class:`MultiheadAttention` (``attn_mask`` and ``key_padding_mask``) True
marks one that is left out. A floating mask is added to the scores in both.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any

from .. import dtypes as _dtypes
from .. import ops as _ops
from ..creation import empty, ones, zeros
from ..errors import DtypeError, InvalidArgumentError, ShapeError
from ..tensor import Tensor
from . import functional as F
from . import init
from .linear import Linear
from .module import Module, ParameterPlacement, check_placement, with_placement
from .parameter import Parameter

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "MultiheadAttention",
    "NonDynamicallyQuantizableLinear",
    "multi_head_attention_forward",
    "scaled_dot_product_attention",
]

_SDPA = "scaled_dot_product_attention"
_MHA = "multi_head_attention_forward"


# -- checks -------------------------------------------------------------------------------


def _tensor(function: str, name: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(
            f"{function}(): {name} must be a Tensor, got {type(value).__name__}; "
            "convert it with plugrad.asarray(...)"
        )
    return value


def _probability(function: str, name: str, p: Any) -> float:
    if not isinstance(p, int | float) or isinstance(p, bool) or not 0.0 <= p <= 1.0:
        raise InvalidArgumentError(
            f"{function}(): {name} must be a probability between 0 and 1, got {p!r}"
        )
    return float(p)


def _positive_int(layer: str, name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{layer}: {name} must be an int, got {type(value).__name__}")
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
        _tensor(_SDPA, name, tensor)
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
    if is_causal and attn_mask is not None:
        raise InvalidArgumentError(
            f"{_SDPA}(): give attn_mask or is_causal=True, not both (a causal mask "
            "combined with another: pass their combination as attn_mask)"
        )
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
        weights = F.dropout(weights, dropout_p, training=True)
    return _ops.matmul(weights, value)


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
    _tensor(_SDPA, "attn_mask", mask)
    if not _broadcasts(mask.shape, scores.shape):
        raise ShapeError(
            f"{_SDPA}(): attn_mask of shape {mask.shape} does not broadcast to the scores' "
            f"shape {scores.shape} (batch..., queries, keys)"
        )
    if mask.dtype is _dtypes.bool:
        return _ops.where(mask, scores, float("-inf"))
    if mask.dtype is not scores.dtype:
        raise DtypeError(
            f"{_SDPA}(): attn_mask must be bool (True: take part) or of the query's dtype "
            f"{scores.dtype.name} (added to the scores), got {mask.dtype.name}"
        )
    return scores + mask


# -- multi-head attention -----------------------------------------------------------------


def _canonical_mask(
    mask: Any, name: str, other: Any, other_name: str, dtype: _dtypes.DType
) -> Tensor | None:
    """``mask`` as a floating mask of ``dtype`` (a boolean one: ``-inf`` where True)."""
    if mask is None:
        return None
    _tensor(_MHA, name, mask)
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
        _tensor(_MHA, name, tensor)
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
        _tensor(_MHA, "key_padding_mask", key_padding_mask)
        if key_padding_mask.ndim != query.ndim - 1:
            raise ShapeError(
                f"{_MHA}(): for a {layout} query, key_padding_mask must be "
                f"{query.ndim - 1}-d, got shape {key_padding_mask.shape}"
            )
    if attn_mask is not None:
        _tensor(_MHA, "attn_mask", attn_mask)
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
            q, k, v = _ops.chunk(F.linear(query, weights, bias), 3, -1)
            return q, k, v
        weights = _ops.chunk(weights, 3, 0)
    q, k, v = (
        F.linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases, strict=True)
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
        mask = None if mask is None else F.pad(mask, (0, 1))
        kpm = None if kpm is None else F.pad(kpm, (0, 1))
    heads = batch * num_heads
    q = _ops.swapaxes(_ops.reshape(q, (length, heads, head_dim)), 0, 1)
    k = _ops.swapaxes(_ops.reshape(k, (k.shape[0], heads, head_dim)), 0, 1)
    v = _ops.swapaxes(_ops.reshape(v, (v.shape[0], heads, head_dim)), 0, 1)
    k = k if static_k is None else static_k
    v = v if static_v is None else static_v
    if add_zero_attn:
        k = _ops.concat([k, zeros((heads, 1, head_dim), dtype=k.dtype, device=k.device)], axis=1)
        v = _ops.concat([v, zeros((heads, 1, head_dim), dtype=v.dtype, device=v.device)], axis=1)
        mask = None if mask is None else F.pad(mask, (0, 1))
        kpm = None if kpm is None else F.pad(kpm, (0, 1))
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
            weights = F.dropout(weights, dropout_p)
        output = _ops.matmul(weights, v)
        output = _ops.reshape(_ops.swapaxes(output, 0, 1), (length * batch, embed_dim))
        output = F.linear(output, out_proj_weight, out_proj_bias)
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
    output = F.linear(output, out_proj_weight, out_proj_bias)
    output = _ops.reshape(output, (length, batch, output.shape[-1]))
    return (output if batched else output.squeeze(1)), None


# -- the layer ----------------------------------------------------------------------------


class NonDynamicallyQuantizableLinear(Linear):
    """The :class:`~plugrad.nn.Linear` of :class:`MultiheadAttention`'s ``out_proj``, under
    PyTorch's name (there it keeps quantization tools away; here it is a plain ``Linear``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.MultiheadAttention(4, 2).out_proj
    NonDynamicallyQuantizableLinear(in_features=4, out_features=4, bias=True)
    """


class MultiheadAttention(Module):
    """Attention with ``num_heads`` heads: ``concat(head_1, ..., head_h) @ W_o.T + b_o``,
    ``head_i = attention(query @ W_q_i.T, key @ W_k_i.T, value @ W_v_i.T)``.

    PyTorch's layer, with its parameters (names, shapes, initialization) and
    its ``forward``: a PyTorch ``state_dict`` converted to arrays loads into it.
    Inputs are sequence-first, ``(L, N, E)``, unless ``batch_first``; 2-d
    inputs are one unbatched sequence.

    Parameters
    ----------
    embed_dim : int
        Features of the query and of the output, ``E``.
    num_heads : int
        Heads, each of ``E / num_heads`` features (``embed_dim`` must be divisible).
    dropout : float
        Probability of zeroing each attention weight (training mode only).
    bias : bool
        Whether the input and output projections learn biases.
    add_bias_kv : bool
        Learn a key and a value (``bias_k``, ``bias_v``) appended to every sequence.
    add_zero_attn : bool
        Append a key and a value of zeros to every sequence.
    kdim, vdim : int, optional
        Features of the key and of the value (``embed_dim`` by default). When
        either differs, the projections are ``q_proj_weight``, ``k_proj_weight``
        and ``v_proj_weight`` instead of the packed ``in_proj_weight``.
    batch_first : bool
        Whether inputs and output are ``(N, L, E)``.
    device : str or Device, optional
    dtype : plugrad dtype, optional
        Of the parameters (float32 by default).
    backend : str, optional
        A backend name (its current device).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.manual_seed(0)
    >>> attention = plugrad.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = plugrad.randn(3, 5, 8)
    >>> out, weights = attention(x, x, x)
    >>> out.shape, weights.shape
    ((3, 5, 8), (3, 5, 5))
    >>> [name for name, _ in attention.named_parameters()]
    ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias']
    """

    @with_placement
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        layer = type(self).__name__
        check_placement(self, placement)
        _positive_int(layer, "embed_dim", embed_dim)
        _positive_int(layer, "num_heads", num_heads)
        kdim = embed_dim if kdim is None else _positive_int(layer, "kdim", kdim)
        vdim = embed_dim if vdim is None else _positive_int(layer, "vdim", vdim)
        if embed_dim % num_heads:
            raise InvalidArgumentError(
                f"{layer}: embed_dim must be divisible by num_heads, got embed_dim={embed_dim} "
                f"and num_heads={num_heads}"
            )
        self.dropout = _probability(layer, "dropout", dropout)
        self.embed_dim = embed_dim
        self.kdim = kdim
        self.vdim = vdim
        self._qkv_same_embed_dim = kdim == embed_dim and vdim == embed_dim
        self.num_heads = num_heads
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads

        def parameter(*shape: int) -> Parameter:
            return Parameter(empty(shape, **placement))

        if self._qkv_same_embed_dim:
            self.in_proj_weight = parameter(3 * embed_dim, embed_dim)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = parameter(embed_dim, embed_dim)
            self.k_proj_weight = parameter(embed_dim, kdim)
            self.v_proj_weight = parameter(embed_dim, vdim)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = parameter(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(
            embed_dim, embed_dim, bias=bias, **placement
        )
        if add_bias_kv:
            self.bias_k = parameter(1, 1, embed_dim)
            self.bias_v = parameter(1, 1, embed_dim)
        else:
            self.register_parameter("bias_k", None)
            self.register_parameter("bias_v", None)
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's initialization: Xavier-uniform projections, zero biases, Xavier-normal
        ``bias_k`` and ``bias_v`` (``out_proj.weight`` keeps ``Linear``'s)."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for weight in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to ``key``, reading ``value``.

        Parameters
        ----------
        query : Tensor
            ``(L, N, E)`` (``(N, L, E)`` with ``batch_first``) or unbatched ``(L, E)``.
        key, value : Tensor
            ``(S, N, kdim)`` and ``(S, N, vdim)``, in the query's layout.
        key_padding_mask : Tensor, optional
            ``(N, S)`` or ``(S,)``: True (or ``-inf``) marks a padding key to leave out.
        need_weights : bool
            Whether to return the attention weights.
        attn_mask : Tensor, optional
            ``(L, S)`` or ``(N * num_heads, L, S)``: True (or ``-inf``) leaves a key out
            for a query; a floating mask is added to the scores.
        average_attn_weights : bool
            Return the weights averaged over the heads, ``(N, L, S)``, rather than
            ``(N, num_heads, L, S)``.
        is_causal : bool
            A hint that ``attn_mask`` is the causal mask (it must be given too).

        Returns
        -------
        tuple
            ``(attn_output, attn_weights)``; ``attn_weights`` is None unless
            ``need_weights``.
        """
        _tensor(type(self).__name__, "query", query)
        batched = query.ndim == 3
        if self.batch_first and batched:
            # Keep self-attention recognisable (query is key is value) through the swap.
            if key is value:
                if query is key:
                    query = key = value = _ops.swapaxes(query, 0, 1)
                else:
                    query, key = (_ops.swapaxes(x, 0, 1) for x in (query, key))
                    value = key
            else:
                query, key, value = (_ops.swapaxes(x, 0, 1) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        output, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads,
            self.in_proj_weight, self.in_proj_bias, self.bias_k, self.bias_v,
            self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask,
            need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=separate, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal,
        )  # fmt: skip
        if self.batch_first and batched:
            output = _ops.swapaxes(output, 0, 1)
        return output, weights
