"""Pooling layers: maximum, mean and their adaptive forms, over one or two axes."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "MaxPool1d",
    "MaxPool2d",
]

IntPair = int | tuple[int, int]


class _Pool2d(Module):
    """What a maximum or mean pooling layer keeps: its window's size, stride and padding."""

    def __init__(self, kernel_size: Any, stride: Any, padding: Any) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """Apply :func:`plugrad.nn.functional.max_pool2d` with the given geometry.

    ``stride`` defaults to ``kernel_size``.

    Examples
    --------
    >>> import plugrad
    >>> pool = plugrad.nn.MaxPool2d(2)
    >>> pool
    MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    >>> pool(plugrad.ones((1, 3, 8, 8))).shape
    (1, 3, 4, 4)
    """

    def __init__(
        self,
        kernel_size: IntPair,
        stride: IntPair | None = None,
        padding: IntPair = 0,
        dilation: IntPair = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__(kernel_size, stride, padding)
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Any:
        return F.max_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, dilation={self.dilation}, ceil_mode={self.ceil_mode}"


class AvgPool2d(_Pool2d):
    """Apply :func:`plugrad.nn.functional.avg_pool2d` with the given geometry.

    ``stride`` defaults to ``kernel_size``.

    Examples
    --------
    >>> import plugrad
    >>> pool = plugrad.nn.AvgPool2d(2, stride=1)
    >>> pool
    AvgPool2d(kernel_size=2, stride=1, padding=0)
    >>> pool(plugrad.ones((1, 3, 8, 8))).shape
    (1, 3, 7, 7)
    """

    def __init__(
        self,
        kernel_size: IntPair,
        stride: IntPair | None = None,
        padding: IntPair = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__(kernel_size, stride, padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class AdaptiveAvgPool2d(Module):
    """Apply :func:`plugrad.nn.functional.adaptive_avg_pool2d` to give ``output_size``.

    Examples
    --------
    >>> import plugrad
    >>> pool = plugrad.nn.AdaptiveAvgPool2d((1, 1))
    >>> pool
    AdaptiveAvgPool2d(output_size=(1, 1))
    >>> pool(plugrad.ones((2, 3, 5, 7))).shape
    (2, 3, 1, 1)
    """

    def __init__(self, output_size: int | tuple[int | None, int | None]) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class MaxPool1d(_Pool2d):
    """Apply :func:`plugrad.nn.functional.max_pool1d` with the given geometry.

    ``stride`` defaults to ``kernel_size``.

    Examples
    --------
    >>> import plugrad
    >>> pool = plugrad.nn.MaxPool1d(2)
    >>> pool
    MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    >>> pool(plugrad.ones((1, 3, 8))).shape
    (1, 3, 4)
    """

    def __init__(
        self,
        kernel_size: int | tuple[int],
        stride: int | tuple[int] | None = None,
        padding: int | tuple[int] = 0,
        dilation: int | tuple[int] = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__(kernel_size, stride, padding)
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Any:
        return F.max_pool1d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, dilation={self.dilation}, ceil_mode={self.ceil_mode}"


def _single(value: int | tuple[int]) -> tuple[int]:
    return (value,) if isinstance(value, int) else tuple(value)  # type: ignore[return-value]


class AvgPool1d(Module):
    """Apply :func:`plugrad.nn.functional.avg_pool1d` with the given geometry.

    ``stride`` defaults to ``kernel_size``; as in PyTorch, the geometry is kept
    as 1-tuples.

    Examples
    --------
    >>> import plugrad
    >>> pool = plugrad.nn.AvgPool1d(3, stride=2, padding=1)
    >>> pool
    AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,))
    >>> pool(plugrad.ones((1, 3, 8))).shape
    (1, 3, 4)
    """

    def __init__(
        self,
        kernel_size: int | tuple[int],
        stride: int | tuple[int] | None = None,
        padding: int | tuple[int] = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(kernel_size if stride is None else stride)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad,
        )  # fmt: skip

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool1d(Module):
    """Apply :func:`plugrad.nn.functional.adaptive_avg_pool1d` to give ``output_size``.

    Examples
    --------
    >>> import plugrad
    >>> pool = plugrad.nn.AdaptiveAvgPool1d(4)
    >>> pool
    AdaptiveAvgPool1d(output_size=4)
    >>> pool(plugrad.ones((2, 3, 10))).shape
    (2, 3, 4)
    """

    def __init__(self, output_size: int | tuple[int]) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(Module):
    """Apply :func:`plugrad.nn.functional.adaptive_max_pool1d` to give ``output_size``.

    With ``return_indices`` the layer also returns the position of each maximum.

    Examples
    --------
    >>> import plugrad
    >>> pool = plugrad.nn.AdaptiveMaxPool1d(4)
    >>> pool
    AdaptiveMaxPool1d(output_size=4)
    >>> pool(plugrad.ones((2, 3, 10))).shape
    (2, 3, 4)
    """

    def __init__(self, output_size: int | tuple[int], return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(Module):
    """Apply :func:`plugrad.nn.functional.adaptive_max_pool2d` to give ``output_size``.

    With ``return_indices`` the layer also returns the flat index of each maximum.

    Examples
    --------
    >>> import plugrad
    >>> pool = plugrad.nn.AdaptiveMaxPool2d((1, 1))
    >>> pool
    AdaptiveMaxPool2d(output_size=(1, 1))
    >>> pool(plugrad.ones((2, 3, 5, 7))).shape
    (2, 3, 1, 1)
    """

    def __init__(
        self, output_size: int | tuple[int | None, int | None], return_indices: bool = False
    ) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"
