"""``Embedding``: a learned lookup table of vectors."""

from __future__ import annotations

from .. import dtypes as _dtypes
from ..backend import Device
from ..creation import empty
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

__all__ = ["Embedding"]


class Embedding(Module):
    """Map integer indices to rows of a learned ``(num_embeddings, embedding_dim)`` table.

    The table is drawn from ``N(0, 1)`` (plugrad's random generators); the row
    ``padding_idx``, if given, starts at zero and never receives a gradient.

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
        *,
        device: Device | str | None = None,
        dtype: _dtypes.DType | None = None,
        backend: str | None = None,
    ) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(
                    f"Embedding: padding_idx must be within [-{num_embeddings}, "
                    f"{num_embeddings}), got {padding_idx}"
                )
            padding_idx %= num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.weight = Parameter(
            empty((num_embeddings, embedding_dim), device=device, dtype=dtype, backend=backend)
        )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the table from ``N(0, 1)`` and zero the padding row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text
