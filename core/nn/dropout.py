"""``Dropout``: random zeroing while training, nothing in evaluation mode."""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["Dropout"]


class Dropout(Module):
    """Zero each element with probability ``p`` in training mode, scaling the rest by ``1/(1-p)``.

    With ``inplace=True`` the input holds the result.

    In evaluation mode (:meth:`~plugrad.nn.Module.eval`) it returns its input.
    The masks come from plugrad's random generators (:func:`plugrad.manual_seed`).

    Examples
    --------
    >>> import plugrad
    >>> drop = plugrad.nn.Dropout(p=0.25)
    >>> drop
    Dropout(p=0.25, inplace=False)
    >>> x = plugrad.ones(8)
    >>> drop.eval()(x) is x
    True
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a probability between 0 and 1, got {p!r}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
