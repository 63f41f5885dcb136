"""Transformer layers: ``TransformerEncoderLayer``, ``TransformerDecoderLayer``, the stacks
``TransformerEncoder`` and ``TransformerDecoder``, and the whole ``Transformer``.

PyTorch's constructors, submodule names, initialization and ``forward``
arguments, so a PyTorch ``state_dict`` converted to arrays loads into them and
gives the same outputs. Each layer is built of :class:`~plugrad.nn.MultiheadAttention`,
:class:`~plugrad.nn.Linear`, :class:`~plugrad.nn.LayerNorm` and
:class:`~plugrad.nn.Dropout`; the masks are :class:`~plugrad.nn.MultiheadAttention`'s
(a boolean True leaves a key out).

The ``is_causal`` arguments are hints that the mask given is the causal one, as
in PyTorch, where they choose a faster kernel; ``None`` (the stacks' default)
uses the mask as given, which gives the same values PyTorch's detection does.
``enable_nested_tensor`` is accepted and ignored: there are no nested tensors.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import dtypes as _dtypes
from .. import ops as _ops
from ..backend import Device
from ..creation import full
from ..errors import ArgumentError, InvalidArgumentError, ShapeError
from ..tensor import Tensor
from . import functional as F
from . import init
from .activation import GELU, ReLU
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .functional import _positive_int
from .linear import Linear
from .module import Module, ParameterPlacement, check_placement, with_placement
from .normalization import LayerNorm

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
]

Activation = str | Callable[[Tensor], Tensor]


def _activation(layer: str, activation: Any) -> Callable[[Tensor], Tensor]:
    if isinstance(activation, str):
        functions: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}
        if activation not in functions:
            raise InvalidArgumentError(
                f"{layer}: activation should be 'relu', 'gelu' or a callable, not {activation!r}"
            )
        return functions[activation]
    if not callable(activation):
        raise ArgumentError(
            f"{layer}: activation should be 'relu', 'gelu' or a callable, got "
            f"{type(activation).__name__}"
        )
    return activation


def _relu_or_gelu(activation: Any) -> int:
    """PyTorch's ``activation_relu_or_gelu``: 1 for ReLU, 2 for GELU, 0 for the rest."""
    if activation is F.relu or isinstance(activation, ReLU):
        return 1
    if activation is F.gelu or isinstance(activation, GELU):
        return 2
    return 0


def _check_sizes(layer: str, d_model: Any, nhead: Any, dim_feedforward: Any) -> None:
    for name, value in (
        ("d_model", d_model),
        ("nhead", nhead),
        ("dim_feedforward", dim_feedforward),
    ):
        _positive_int(layer, name, value)
    if d_model % nhead:
        raise InvalidArgumentError(
            f"{layer}: d_model must be divisible by nhead, got d_model={d_model} and nhead={nhead}"
        )


def _clones(layer: Module, count: Any, owner: str) -> ModuleList:
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise InvalidArgumentError(f"{owner}: num_layers must be a non-negative int, got {count!r}")
    if not isinstance(layer, Module):
        raise ArgumentError(f"{owner}: expected a layer (a Module), got {type(layer).__name__}")
    return ModuleList([copy.deepcopy(layer) for _ in range(count)])


class _TransformerLayer(Module):
    """What :class:`TransformerEncoderLayer` and :class:`TransformerDecoderLayer` share:
    PyTorch's constructor and submodules, and the residual blocks.

    The layer is a chain of residual blocks: one for each attention named in
    ``_attentions``, then the feed-forward network ``linear2(dropout(activation(linear1(x))))``.
    Block ``k`` (from 1) has the norm ``norm<k>`` and the dropout ``dropout<k>`` on its output.
    """

    #: The attention submodules, in the order of their blocks (and of the state dict).
    _attentions: tuple[str, ...] = ("self_attn",)
    #: Whether the layer records ``activation_relu_or_gelu`` (PyTorch's encoder layer does).
    _records_activation = False

    @with_placement
    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        layer = type(self).__name__
        check_placement(self, placement)
        _check_sizes(layer, d_model, nhead, dim_feedforward)
        function = _activation(layer, activation)
        for name in self._attentions:
            attention = MultiheadAttention(
                d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **placement
            )
            setattr(self, name, attention)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **placement)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **placement)
        self.norm_first = norm_first
        blocks = range(1, len(self._attentions) + 2)
        for k in blocks:
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **placement)
            setattr(self, f"norm{k}", norm)
        for k in blocks:
            setattr(self, f"dropout{k}", Dropout(dropout))
        if self._records_activation:
            self.activation_relu_or_gelu = _relu_or_gelu(function)
        self.activation = function

    def _residual(
        self, x: Tensor, norm: Module, block: Callable[..., Tensor], *args: Any
    ) -> Tensor:
        """``x`` through a residual block: ``x + block(norm(x), *args)`` with ``norm_first``,
        else ``norm(x + block(x, *args))``."""
        if self.norm_first:
            return x + block(norm(x), *args)
        return norm(x + block(x, *args))

    def _sa_block(
        self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        masks = (attn_mask, key_padding_mask, is_causal)
        return self._attend(self.self_attn, self.dropout1, x, x, masks)

    @staticmethod
    def _attend(
        attention: Module, dropout: Module, x: Tensor, memory: Tensor, masks: tuple[Any, ...]
    ) -> Tensor:
        """An attention block: ``x`` attending to ``memory`` (``x`` itself in self-attention)
        with ``masks`` ``(attn_mask, key_padding_mask, is_causal)``, then ``dropout``."""
        attn_mask, key_padding_mask, is_causal = masks
        x = attention(
            x, memory, memory, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
            need_weights=False, is_causal=is_causal,
        )[0]  # fmt: skip
        return dropout(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        dropout = getattr(self, f"dropout{len(self._attentions) + 1}")
        return dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention, then a feed-forward network, each with a residual connection and
    a layer norm: ``x = norm1(x + attention(x)); x = norm2(x + feed_forward(x))``.

    With ``norm_first`` the norms come first inside the residual branches
    (``x = x + attention(norm1(x))``, ...), the "pre-LN" layout.

    Parameters
    ----------
    d_model : int
        Features of the input and output.
    nhead : int
        Attention heads (``d_model`` must be divisible by it).
    dim_feedforward : int
        Hidden features of the feed-forward network.
    dropout : float
        Dropout probability after the attention, inside and after the
        feed-forward network, and of the attention weights (training mode only).
    activation : {"relu", "gelu"} or callable
        Of the feed-forward network; a module (``nn.GELU()``) becomes a submodule.
    layer_norm_eps : float
    batch_first : bool
        Whether inputs and output are ``(N, L, E)`` rather than ``(L, N, E)``.
    norm_first : bool
    bias : bool
        Whether the linear maps and the layer norms learn biases.
    device, dtype, backend : optional
        Where every submodule's parameters are made, and their dtype, as for
        :class:`~plugrad.nn.Linear`.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> layer = plugrad.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16,
    ...                                            batch_first=True)
    >>> layer(plugrad.randn(3, 5, 8)).shape
    (3, 5, 8)
    """

    _records_activation = True

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        """Encode ``src`` (``(L, N, E)``, ``(N, L, E)`` with ``batch_first``, or ``(L, E)``).

        ``src_mask`` ``(L, L)`` or ``(N * nhead, L, L)`` and ``src_key_padding_mask``
        ``(N, L)`` are :class:`~plugrad.nn.MultiheadAttention`'s masks; ``is_causal``
        hints that ``src_mask`` is the causal mask.
        """
        x = self._residual(
            src, self.norm1, self._sa_block, src_mask, src_key_padding_mask, is_causal
        )
        return self._residual(x, self.norm2, self._ff_block)


class TransformerDecoderLayer(_TransformerLayer):
    """Self-attention, attention to the encoder's output (``memory``), then a
    feed-forward network, each with a residual connection and a layer norm.

    The arguments are :class:`TransformerEncoderLayer`'s; the layer adds
    ``multihead_attn``, ``norm3`` and ``dropout3``.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> layer = plugrad.nn.TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16)
    >>> tgt, memory = plugrad.randn(4, 3, 8), plugrad.randn(6, 3, 8)
    >>> layer(tgt, memory).shape
    (4, 3, 8)
    """

    _attentions = ("self_attn", "multihead_attn")

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Decode ``tgt`` ``(T, N, E)`` attending to ``memory`` ``(S, N, E)`` (batch first
        with ``batch_first``; unbatched without ``N``).

        ``tgt_mask`` ``(T, T)`` and ``memory_mask`` ``(T, S)`` (or with a leading
        ``N * nhead``), ``tgt_key_padding_mask`` ``(N, T)`` and
        ``memory_key_padding_mask`` ``(N, S)`` are
        :class:`~plugrad.nn.MultiheadAttention`'s masks.
        """
        x = self._residual(
            tgt, self.norm1, self._sa_block, tgt_mask, tgt_key_padding_mask, tgt_is_causal
        )
        x = self._residual(
            x, self.norm2, self._mha_block,
            memory, memory_mask, memory_key_padding_mask, memory_is_causal,
        )  # fmt: skip
        return self._residual(x, self.norm3, self._ff_block)

    def _mha_block(
        self,
        x: Tensor,
        memory: Tensor,
        attn_mask: Tensor | None,
        key_padding_mask: Tensor | None,
        is_causal: bool,
    ) -> Tensor:
        masks = (attn_mask, key_padding_mask, is_causal)
        return self._attend(self.multihead_attn, self.dropout2, x, memory, masks)


class _LayerStack(Module):
    """Copies of one layer applied in turn, then ``norm`` if given: what
    :class:`TransformerEncoder` and :class:`TransformerDecoder` share."""

    def __init__(self, layer: Module, num_layers: int, norm: Module | None) -> None:
        super().__init__()
        self.layers = _clones(layer, num_layers, type(self).__name__)
        self.num_layers = num_layers
        self.norm = norm

    def _stacked(self, output: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        """``output`` through every layer, each also given ``args`` and ``kwargs``."""
        for layer in self.layers:
            output = layer(output, *args, **kwargs)
        return output if self.norm is None else self.norm(output)


class TransformerEncoder(_LayerStack):
    """``num_layers`` copies of ``encoder_layer`` applied in turn, then ``norm`` if given.

    Each copy is a deep copy, with parameters of its own (initialized like
    ``encoder_layer``'s). ``enable_nested_tensor`` and ``mask_check`` are
    accepted for PyTorch's code and ignored. The positions a
    ``src_key_padding_mask`` pads hold what the layers computed for them, in
    every mode; PyTorch's nested-tensor path (evaluation without gradients)
    gives zeros there instead. Neither is meant to be read: mask them out.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad import nn
    >>> layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    >>> encoder = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(8))
    >>> mask = nn.Transformer.generate_square_subsequent_mask(5)
    >>> encoder(plugrad.randn(5, 3, 8), mask=mask, is_causal=True).shape
    (5, 3, 8)
    """

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__(encoder_layer, num_layers, norm)
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        """Pass ``src`` through every layer (the arguments are the layer's)."""
        return self._stacked(
            src, src_mask=mask, is_causal=bool(is_causal),
            src_key_padding_mask=src_key_padding_mask,
        )  # fmt: skip


class TransformerDecoder(_LayerStack):
    """``num_layers`` copies of ``decoder_layer`` applied in turn, then ``norm`` if given.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad import nn
    >>> decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), num_layers=2)
    >>> decoder(plugrad.randn(4, 3, 8), plugrad.randn(6, 3, 8)).shape
    (4, 3, 8)
    """

    def __init__(
        self,
        decoder_layer: TransformerDecoderLayer,
        num_layers: int,
        norm: Module | None = None,
    ) -> None:
        super().__init__(decoder_layer, num_layers, norm)

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Pass ``tgt`` through every layer, each attending to ``memory`` (the arguments
        are the layer's)."""
        return self._stacked(
            tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal,
        )  # fmt: skip


class Transformer(Module):
    """An encoder-decoder transformer ("Attention Is All You Need"), as ``torch.nn.Transformer``.

    ``encoder`` is a :class:`TransformerEncoder` of ``num_encoder_layers``
    layers and a final :class:`~plugrad.nn.LayerNorm` (or ``custom_encoder``),
    ``decoder`` likewise; every parameter with more than one axis is then
    drawn again with :func:`~plugrad.nn.init.xavier_uniform_`, as PyTorch does.
    The other arguments are :class:`TransformerEncoderLayer`'s.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad import nn
    >>> _ = plugrad.manual_seed(0)
    >>> model = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
    ...                        dim_feedforward=16, batch_first=True)
    >>> src, tgt = plugrad.randn(2, 6, 8), plugrad.randn(2, 4, 8)
    >>> mask = nn.Transformer.generate_square_subsequent_mask(4)
    >>> model(src, tgt, tgt_mask=mask).shape
    (2, 4, 8)
    """

    @with_placement
    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: Activation = F.relu,
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        check_placement(self, placement)
        options: dict[str, Any] = dict(
            dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
            layer_norm_eps=layer_norm_eps, batch_first=batch_first, norm_first=norm_first,
            bias=bias, **placement,
        )  # fmt: skip

        def norm() -> LayerNorm:
            return LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **placement)

        if custom_encoder is None:
            encoder_layer = TransformerEncoderLayer(d_model, nhead, **options)
            custom_encoder = TransformerEncoder(encoder_layer, num_encoder_layers, norm())
        if custom_decoder is None:
            decoder_layer = TransformerDecoderLayer(d_model, nhead, **options)
            custom_decoder = TransformerDecoder(decoder_layer, num_decoder_layers, norm())
        self.encoder = custom_encoder
        self.decoder = custom_decoder
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def _reset_parameters(self) -> None:
        for parameter in self.parameters():
            if parameter.ndim > 1:
                init.xavier_uniform_(parameter)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Encode ``src`` ``(S, N, E)`` and decode ``tgt`` ``(T, N, E)`` against it
        (batch first with ``batch_first``; unbatched without ``N``); ``(T, N, E)``.

        The masks and hints are those of :class:`TransformerEncoder` (``src_*``) and
        :class:`TransformerDecoder` (``tgt_*``, ``memory_*``).
        """
        for name, tensor in (("src", src), ("tgt", tgt)):
            if not isinstance(tensor, Tensor):
                raise ArgumentError(
                    f"Transformer: {name} must be a Tensor, got {type(tensor).__name__}"
                )
        batch_axis = 0 if self.batch_first else 1
        if src.ndim == 3 and (tgt.ndim != 3 or src.shape[batch_axis] != tgt.shape[batch_axis]):
            raise ShapeError(
                f"Transformer: the batch sizes of src and tgt must be equal (axis {batch_axis} "
                f"with batch_first={self.batch_first}), got shapes {src.shape} and {tgt.shape}"
            )
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(
                f"Transformer: src and tgt must have d_model={self.d_model} features (last "
                f"axis), got shapes {src.shape} and {tgt.shape}"
            )
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal,
        )  # fmt: skip

    @staticmethod
    def generate_square_subsequent_mask(
        sz: int, device: Device | str | None = None, dtype: _dtypes.DType | None = None
    ) -> Tensor:
        """The causal mask of ``sz`` positions: ``-inf`` above the diagonal, 0 elsewhere.

        Examples
        --------
        >>> import plugrad
        >>> plugrad.nn.Transformer.generate_square_subsequent_mask(3)
        tensor([[0., -inf, -inf],
                [0., 0., -inf],
                [0., 0., 0.]])
        """
        return _ops.triu(full((sz, sz), float("-inf"), dtype=dtype, device=device), 1)
