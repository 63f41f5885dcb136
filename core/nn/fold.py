"""``Unfold`` and ``Fold``: sliding blocks as columns (im2col) and back (col2im)."""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["Fold", "Unfold"]

IntPair = int | tuple[int, int]


class _Blocks(Module):
    """The geometry of the sliding blocks, as ``F.unfold`` and ``F.fold`` take it."""

    def __init__(
        self,
        kernel_size: IntPair,
        dilation: IntPair = 1,
        padding: IntPair = 0,
        stride: IntPair = 1,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Unfold(_Blocks):
    """Apply :func:`plugrad.nn.functional.unfold`: ``(N, C, H, W) -> (N, C * kh * kw, L)``.

    Examples
    --------
    >>> import plugrad
    >>> unfold = plugrad.nn.Unfold(kernel_size=(2, 3))
    >>> unfold
    Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=1)
    >>> unfold(plugrad.ones((2, 5, 3, 4))).shape
    (2, 30, 4)
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)


class Fold(_Blocks):
    """Apply :func:`plugrad.nn.functional.fold`: ``(N, C * kh * kw, L) -> (N, C, *output_size)``.

    Examples
    --------
    >>> import plugrad
    >>> fold = plugrad.nn.Fold(output_size=(3, 4), kernel_size=(2, 3))
    >>> fold
    Fold(output_size=(3, 4), kernel_size=(2, 3), dilation=1, padding=0, stride=1)
    >>> fold(plugrad.ones((2, 30, 4))).shape
    (2, 5, 3, 4)
    """

    def __init__(
        self,
        output_size: IntPair,
        kernel_size: IntPair,
        dilation: IntPair = 1,
        padding: IntPair = 0,
        stride: IntPair = 1,
    ) -> None:
        super().__init__(kernel_size, dilation, padding, stride)
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, {super().extra_repr()}"
