"""``PixelShuffle`` and ``PixelUnshuffle``: trade channels for resolution and back."""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle"]


class PixelShuffle(Module):
    """Apply :func:`plugrad.nn.functional.pixel_shuffle`: ``(*, C r², H, W) -> (*, C, H r, W r)``.

    Examples
    --------
    >>> import plugrad
    >>> shuffle = plugrad.nn.PixelShuffle(2)
    >>> shuffle
    PixelShuffle(upscale_factor=2)
    >>> shuffle(plugrad.ones((1, 8, 3, 3))).shape
    (1, 2, 6, 6)
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """Apply :func:`plugrad.nn.functional.pixel_unshuffle`: ``(*, C, H r, W r) -> (*, C r², H, W)``.

    Examples
    --------
    >>> import plugrad
    >>> unshuffle = plugrad.nn.PixelUnshuffle(2)
    >>> unshuffle
    PixelUnshuffle(downscale_factor=2)
    >>> unshuffle(plugrad.ones((1, 2, 6, 6))).shape
    (1, 8, 3, 3)
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
