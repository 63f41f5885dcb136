"""``Flatten``: merge a range of axes into one."""

from __future__ import annotations

import math

from .. import ops as _ops
from ..errors import ShapeError
from ..tensor import Tensor
from .module import Module

__all__ = ["Flatten"]


class Flatten(Module):
    """Merge the axes ``start_dim`` through ``end_dim`` into one (by default all but the first).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.Flatten()(plugrad.ones((2, 3, 4, 5))).shape
    (2, 60)
    >>> plugrad.nn.Flatten(0, 1)(plugrad.ones((2, 3, 4))).shape
    (6, 4)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        shape = input.shape
        ndim = max(len(shape), 1)
        start, end = self.start_dim, self.end_dim
        if not (-ndim <= start < ndim and -ndim <= end < ndim):
            raise ShapeError(
                f"Flatten({start}, {end}) does not fit an input with {len(shape)} axes"
            )
        start, end = start % ndim, end % ndim
        if start > end:
            raise ShapeError(
                f"Flatten: start_dim {self.start_dim} comes after end_dim {self.end_dim}"
            )
        if not shape:
            return _ops.reshape(input, (1,))
        merged = math.prod(shape[start : end + 1])
        return _ops.reshape(input, (*shape[:start], merged, *shape[end + 1 :]))

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
