"""The ``MultiheadAttention`` layer, with PyTorch's signature, masks and parameters.

It computes with :func:`plugrad.nn.functional.multi_head_attention_forward` (the
attention functions live in :mod:`plugrad.nn.functional`, as PyTorch's do, and
are named here too).

Everything is composed of plugrad's differentiable ops (matrix products, softmax,
``where`` for the masks, dropout, linear maps), so gradients of any order work on
every backend. As in PyTorch, a boolean mask means opposite things in the two
APIs: for :func:`scaled_dot_product_attention` True marks a key that takes part,
for :class:`MultiheadAttention` (``attn_mask`` and ``key_padding_mask``) True
marks one that is left out. A floating mask is added to the scores in both.

It is PyTorch's ``torch.nn.attention`` too: :class:`SDPBackend` and
:func:`sdpa_kernel`, which choose the kernels of
:func:`scaled_dot_product_attention` (plugrad has one, see there). They set
the switches that :func:`plugrad.backends.cuda.enable_flash_sdp` and its
siblings set and read: one process-wide setting, as PyTorch's.
"""

from __future__ import annotations

import contextlib
import enum
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .. import ops as _ops
from ..backends import cuda as _cuda
from ..creation import empty
from ..errors import ArgumentError, InvalidArgumentError, ShapeError, checked_bool
from ..tensor import Tensor
from . import init
from .functional import (
    _check_tensor,
    _enable_sdpa_kernels,
    _positive_int,
    _probability,
    multi_head_attention_forward,
    scaled_dot_product_attention,
)
from .linear import Linear
from .module import Module, ParameterPlacement, check_placement, with_placement
from .parameter import Parameter

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "MultiheadAttention",
    "NonDynamicallyQuantizableLinear",
    "SDPBackend",
    "multi_head_attention_forward",
    "scaled_dot_product_attention",
    "sdpa_kernel",
]

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
    device, dtype, backend : optional
        Where the parameters are made, and their dtype (float32 by default), as for
        :class:`~plugrad.nn.Linear`.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
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
        _check_tensor("query", type(self).__name__, query)
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

    def merge_masks(
        self, attn_mask: Tensor | None, key_padding_mask: Tensor | None, query: Tensor
    ) -> tuple[Tensor | None, int | None]:
        """Combine the two masks of a self-attention call into one, with its type.

        PyTorch's helper of its fast path, which reads ``query`` as
        ``(batch, seq_len, embed_dim)`` whatever ``batch_first`` says. The masks
        are taken as given: no check that they are boolean.

        Parameters
        ----------
        attn_mask : Tensor or None
            ``seq_len * seq_len`` elements (``(seq_len, seq_len)``), or a 3-d
            ``(batch * num_heads, seq_len, seq_len)``.
        key_padding_mask : Tensor or None
            ``(batch, seq_len)``.
        query : Tensor
            ``(batch, seq_len, embed_dim)``; only its shape is read, and only with an
            ``attn_mask``.

        Returns
        -------
        tuple
            ``(mask, mask_type)``: ``(None, None)`` without masks;
            ``(key_padding_mask, 1)`` with that one only; with an ``attn_mask``,
            type 2 and the mask of shape ``(batch, num_heads, seq_len, seq_len)``:
            ``attn_mask`` broadcast, plus ``key_padding_mask`` broadcast over the
            heads and queries where given (for boolean masks, their ``or``).

        Examples
        --------
        >>> import plugrad
        >>> attention = plugrad.nn.MultiheadAttention(4, 2, batch_first=True)
        >>> query = plugrad.zeros(3, 5, 4)
        >>> causal = plugrad.ones(5, 5, dtype=plugrad.bool).triu(1)
        >>> padding = plugrad.zeros(3, 5, dtype=plugrad.bool)
        >>> mask, mask_type = attention.merge_masks(causal, padding, query)
        >>> mask.shape, mask_type
        ((3, 2, 5, 5), 2)
        >>> attention.merge_masks(None, padding, query)[1]
        1
        """
        layer = type(self).__name__
        for name, mask in (("attn_mask", attn_mask), ("key_padding_mask", key_padding_mask)):
            if mask is not None and not isinstance(mask, Tensor):
                raise ArgumentError(
                    f"{layer}.merge_masks(): {name} must be a Tensor or None, got "
                    f"{type(mask).__name__}"
                )
        if attn_mask is None:
            return (key_padding_mask, 1) if key_padding_mask is not None else (None, None)
        _check_tensor("query", f"{layer}.merge_masks", query)
        if query.ndim != 3:
            raise ShapeError(
                f"{layer}.merge_masks(): expected a query of shape (batch, seq_len, "
                f"embed_dim), got {query.shape}"
            )
        batch, length = query.shape[0], query.shape[1]
        heads = self.num_heads
        if attn_mask.ndim == 3:
            merged = _view(layer, "attn_mask", attn_mask, (batch, -1, length, length))
        else:
            merged = _view(layer, "attn_mask", attn_mask, (1, 1, length, length))
            merged = _ops.broadcast_to(merged, (batch, heads, length, length))
        if key_padding_mask is not None:
            padding = _view(layer, "key_padding_mask", key_padding_mask, (batch, 1, 1, length))
            merged = merged + _ops.broadcast_to(padding, (batch, heads, length, length))
        return merged, 2


def _view(layer: str, name: str, mask: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``mask`` reshaped to ``shape`` (whose one -1 stands for any size), or a ShapeError."""
    count, known = mask.numel(), math.prod(n for n in shape if n != -1)
    fits = (known and count % known == 0) if -1 in shape else count == known
    if not fits:
        wanted = ", ".join("any" if n == -1 else str(n) for n in shape)
        raise ShapeError(
            f"{layer}.merge_masks(): {name} of shape {mask.shape} does not hold a "
            f"({wanted}) mask: batch and seq_len are read from the query's shape "
            "(batch, seq_len, embed_dim)"
        )
    return _ops.reshape(mask, shape)


# -- the kernels of scaled_dot_product_attention -------------------------------------------


class SDPBackend(enum.Enum):
    """PyTorch's kernels of :func:`scaled_dot_product_attention`, to name in
    :func:`sdpa_kernel`: its members, with its values (``int(member)`` gives them).

    plugrad has one kernel: it computes the math form whichever is named.

    Examples
    --------
    >>> from plugrad.nn.attention import SDPBackend
    >>> SDPBackend.MATH, int(SDPBackend.FLASH_ATTENTION)
    (<SDPBackend.MATH: 0>, 1)
    """

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __int__(self) -> int:
        return int(self.value)

    def __index__(self) -> int:
        return int(self.value)


def sdpa_kernel(
    backends: SDPBackend | list[SDPBackend], set_priority: bool = False
) -> contextlib.AbstractContextManager[dict[str, Any]]:
    """Enable only the kernels ``backends`` for :func:`scaled_dot_product_attention`, within
    a ``with`` block (or a function it decorates); the setting before is restored after.

    plugrad has one kernel, the math form, and computes it whatever is enabled:
    the results are the same under any list. What the list changes is which
    calls raise, as on PyTorch's CPU, whose kernels are ``MATH`` (which runs
    every call) and ``FLASH_ATTENTION`` (which runs float inputs of 4 axes
    ``(batch, heads, positions, features)``, one batch size and number of heads
    in query, key and value (or grouped-query heads with ``enable_gqa``), one
    number of features, no dropout and a mask of 2 or 4 axes, if any). A call
    that no enabled kernel runs raises :class:`plugrad.errors.InvalidArgumentError`
    (a ``RuntimeError``, as PyTorch's), when it is made, not when the block
    is entered. Those are the CPU's rules on every backend: PyTorch's GPU
    kernels (``EFFICIENT_ATTENTION``, ``CUDNN_ATTENTION``) are not emulated.

    The kernels enabled are those of :func:`plugrad.backends.cuda.enable_flash_sdp`,
    :func:`~plugrad.backends.cuda.enable_mem_efficient_sdp`,
    :func:`~plugrad.backends.cuda.enable_math_sdp` and
    :func:`~plugrad.backends.cuda.enable_cudnn_sdp`, as in PyTorch: inside
    ``sdpa_kernel(SDPBackend.MATH)``, ``flash_sdp_enabled()`` is False. On
    leaving, the switches are as they were on entering (a switch set inside
    the block included). The setting is process-wide, not per thread, as
    PyTorch's, and blocks nest.

    Parameters
    ----------
    backends : SDPBackend or list of SDPBackend
        The kernels to enable; the others are disabled.
    set_priority : bool
        In PyTorch, whether the list's order is the kernels' order of
        preference; with one kernel, it changes nothing here.

    Returns
    -------
    context manager
        Entered, it gives an empty dict, as PyTorch's.

    Raises
    ------
    ArgumentError
        ``backends`` is not an :class:`SDPBackend` or a list of them, or
        ``set_priority`` is not a bool.

    Examples
    --------
    >>> import plugrad
    >>> import plugrad.nn.functional as F
    >>> from plugrad.nn.attention import SDPBackend, sdpa_kernel
    >>> q = plugrad.ones(1, 1, 2, 4)
    >>> with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
    ...     F.scaled_dot_product_attention(q, q, q).shape
    (1, 1, 2, 4)
    >>> with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
    ...     F.scaled_dot_product_attention(q, q, q)
    Traceback (most recent call last):
    ...
    plugrad.errors.InvalidArgumentError: scaled_dot_product_attention(): no kernel ...
    >>> with sdpa_kernel(SDPBackend.MATH):
    ...     plugrad.backends.cuda.flash_sdp_enabled()
    False
    """
    kernels = [backends] if isinstance(backends, SDPBackend) else backends
    if not isinstance(kernels, list) or not all(isinstance(k, SDPBackend) for k in kernels):
        raise ArgumentError(
            "sdpa_kernel(): backends must be an SDPBackend or a list of them, got "
            f"{backends!r}; e.g. sdpa_kernel([SDPBackend.MATH])"
        )
    checked_bool("sdpa_kernel(): set_priority", set_priority)
    return _kernels_enabled(frozenset(kernel.name for kernel in kernels) & _cuda._SDP_KERNELS)


@contextlib.contextmanager
def _kernels_enabled(names: frozenset[str]) -> Iterator[dict[str, Any]]:
    previous = _cuda._set_sdp_kernels(names)  # read on entering (each decorated call), as PyTorch
    try:
        yield {}
    finally:
        _cuda._set_sdp_kernels(previous)


# scaled_dot_product_attention tests its own copy of the switches: keep it theirs.
_cuda._follow_sdp_kernels(_enable_sdpa_kernels)
