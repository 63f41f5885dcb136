"""``Embedding`` and ``EmbeddingBag``: learned lookup tables of vectors (looked up one by one,
or summed, averaged or maxed over bags)."""

from __future__ import annotations

from typing import Any

from .. import dtypes as _dtypes
from ..backend import Device
from ..creation import empty
from ..errors import InvalidArgumentError, ShapeError
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["Embedding", "EmbeddingBag"]


class _EmbeddingTable(Module):
    """What :class:`Embedding` and :class:`EmbeddingBag` share: the table ``weight`` (given,
    or drawn), its padding row and the options of the lookup."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None,
        max_norm: float | None,
        norm_type: float,
        scale_grad_by_freq: bool,
        sparse: bool,
        weight: Tensor | None,
        freeze: bool,
        device: Device | str | None,
        dtype: _dtypes.DType | None,
        backend: str | None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise InvalidArgumentError(
                    f"{name}: padding_idx must be within [-{num_embeddings}, {num_embeddings}), "
                    f"got {padding_idx}"
                )
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        if weight is None:
            table = empty(
                (num_embeddings, embedding_dim), device=device, dtype=dtype, backend=backend
            )
            self.weight = Parameter(table, requires_grad=not freeze)
            self.reset_parameters()
        elif isinstance(weight, Tensor) and weight.shape == (num_embeddings, embedding_dim):
            self.weight = Parameter(weight.detach(), requires_grad=not freeze)
        else:
            shape = weight.shape if isinstance(weight, Tensor) else type(weight).__name__
            raise ShapeError(
                f"{name}: _weight must be a Tensor of shape ({num_embeddings}, {embedding_dim}), "
                f"got {shape}"
            )
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse

    def reset_parameters(self) -> None:
        """Draw the table from ``N(0, 1)`` and zero the padding row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def _lookup_repr(self) -> str:
        """The options of the lookup that differ from their defaults, for ``extra_repr``."""
        text = ""
        if self.max_norm is not None:
            text += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            text += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            text += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        return text


class Embedding(_EmbeddingTable):
    """Map integer indices to rows of a learned ``(num_embeddings, embedding_dim)`` table.

    The table is drawn from ``N(0, 1)`` (plugrad's random generators); the row
    ``padding_idx``, if given, starts at zero and never receives a gradient.
    ``max_norm``, ``norm_type``, ``scale_grad_by_freq`` and ``sparse`` are
    :func:`~plugrad.nn.functional.embedding`'s (``max_norm`` rescales rows of
    the table in place when they are looked up). ``_weight`` gives the table
    itself (``_freeze``: one that needs no gradient), as :meth:`from_pretrained` does.

    Examples
    --------
    >>> import plugrad
    >>> table = plugrad.nn.Embedding(10, 3, padding_idx=0)
    >>> table
    Embedding(10, 3, padding_idx=0)
    >>> table(plugrad.tensor([[1, 2], [0, 9]])).shape
    (2, 2, 3)
    >>> table.weight[0]
    tensor([0., 0., 0.], grad_fn=<GetitemBackward>)
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        *,
        device: Device | str | None = None,
        dtype: _dtypes.DType | None = None,
        backend: str | None = None,
    ) -> None:
        super().__init__(
            num_embeddings, embedding_dim, padding_idx, max_norm, norm_type, scale_grad_by_freq,
            sparse, _weight, _freeze, device, dtype, backend,
        )  # fmt: skip

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An embedding whose table is ``embeddings`` (2-d), learned only if not ``freeze``.

        The table shares memory with ``embeddings``, as PyTorch's does.

        Examples
        --------
        >>> import plugrad
        >>> table = plugrad.nn.Embedding.from_pretrained(plugrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> table(plugrad.tensor([1])), table.weight.requires_grad
        (tensor([[3., 4.]]), False)
        """
        rows, cols = _table_sizes(cls, embeddings)
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)  # fmt: skip

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        text += self._lookup_repr()
        if self.sparse:
            text += ", sparse=True"
        return text


def _table_sizes(cls: type, embeddings: Any) -> tuple[int, int]:
    """The sizes of a table given to ``cls.from_pretrained``, which must be a 2-d tensor."""
    if not isinstance(embeddings, Tensor) or embeddings.ndim != 2:
        raise ShapeError(
            f"{cls.__name__}.from_pretrained() takes a 2-d Tensor (num_embeddings, "
            f"embedding_dim), got {getattr(embeddings, 'shape', type(embeddings).__name__)}"
        )
    rows, cols = embeddings.shape
    return rows, cols


class EmbeddingBag(_EmbeddingTable):
    """Sum, average or take the max of the rows of a learned table over bags of indices.

    :func:`~plugrad.nn.functional.embedding_bag` with the layer's table (drawn
    from ``N(0, 1)``, the row ``padding_idx`` zero) and settings. ``forward``
    takes ``input`` (a 2-d tensor of bags, or a 1-d one with ``offsets``) and
    ``per_sample_weights``.

    Examples
    --------
    >>> import plugrad
    >>> bags = plugrad.nn.EmbeddingBag(10, 3, mode="sum")
    >>> bags
    EmbeddingBag(10, 3, mode='sum')
    >>> bags(plugrad.tensor([1, 2, 4, 5, 4]), plugrad.tensor([0, 2])).shape
    (2, 3)
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        *,
        device: Device | str | None = None,
        dtype: _dtypes.DType | None = None,
        backend: str | None = None,
        _freeze: bool = False,
    ) -> None:
        if mode not in ("sum", "mean", "max"):
            raise InvalidArgumentError(
                f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}"
            )
        super().__init__(
            num_embeddings, embedding_dim, padding_idx, max_norm, norm_type, scale_grad_by_freq,
            sparse, _weight, _freeze, device, dtype, backend,
        )  # fmt: skip
        self.mode = mode
        self.include_last_offset = include_last_offset

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> EmbeddingBag:
        """A layer whose table is ``embeddings`` (2-d), learned only if not ``freeze``."""
        rows, cols = _table_sizes(cls, embeddings)
        return cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                   embeddings, include_last_offset, padding_idx, _freeze=freeze)  # fmt: skip

    def forward(
        self,
        input: Tensor,
        offsets: Tensor | None = None,
        per_sample_weights: Tensor | None = None,
    ) -> Tensor:
        return F.embedding_bag(
            input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
            self.mode, self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx,
        )  # fmt: skip

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}{self._lookup_repr()}"
        text += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text
