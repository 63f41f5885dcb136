"""Rearrangements of channels: ``PixelShuffle`` and ``PixelUnshuffle`` trade them for
resolution and back, ``ChannelShuffle`` interleaves groups of them."""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["ChannelShuffle", "PixelShuffle", "PixelUnshuffle"]


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


class ChannelShuffle(Module):
    """Apply :func:`plugrad.nn.functional.channel_shuffle` with ``groups`` groups.

    Examples
    --------
    >>> import plugrad
    >>> shuffle = plugrad.nn.ChannelShuffle(2)
    >>> shuffle
    ChannelShuffle(groups=2)
    >>> shuffle(plugrad.arange(4.0).reshape(1, 4, 1)).flatten()
    tensor([0., 2., 1., 3.])
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
