"""``Flatten``: merge a range of axes into one; ``Unflatten``: split one axis into several."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .. import ops as _ops
from ..errors import ArgumentError, ShapeError
from ..tensor import Tensor
from .functional import _int_or_itself
from .module import Module

__all__ = ["Flatten", "Unflatten"]


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


class Unflatten(Module):
    """Split the axis ``dim`` into the axes ``unflattened_size`` (one of them may be -1).

    The inverse of :class:`Flatten`.

    Examples
    --------
    >>> import plugrad
    >>> layer = plugrad.nn.Unflatten(1, (2, 5))
    >>> layer
    Unflatten(dim=1, unflattened_size=(2, 5))
    >>> layer(plugrad.ones((3, 10))).shape
    (3, 2, 5)
    >>> plugrad.nn.Unflatten(-1, (2, -1))(plugrad.ones((3, 10))).shape
    (3, 2, 5)
    """

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise ArgumentError(f"Unflatten: dim must be an int, got {type(dim).__name__}")
        if isinstance(unflattened_size, (tuple, list)):  # (NumPy ints too)
            sizes = [_int_or_itself(size) for size in unflattened_size]
            # (a named tuple is made of its fields, a plugrad.Size or list of one sequence)
            kind = type(unflattened_size)
            unflattened_size = kind(*sizes) if hasattr(kind, "_fields") else kind(sizes)
        if not isinstance(unflattened_size, (tuple, list)) or not all(
            isinstance(size, int) and not isinstance(size, bool) for size in unflattened_size
        ):
            raise ArgumentError(
                f"Unflatten: unflattened_size must be a tuple or list of ints, got "
                f"{unflattened_size!r}"
            )
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        return _ops.unflatten(input, self.dim, tuple(self.unflattened_size))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
