"""``Conv2d``: a learned 2-D convolution."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module, ParameterPlacement, add_weight_and_bias, with_placement

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Conv2d"]


def _pair(name: str, value: int | tuple[int, int]) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) for v in pair):
        raise ValueError(f"Conv2d: {name} must be an int or a pair of ints, got {value!r}")
    return pair


class Conv2d(Module):
    """Convolve ``(N, C_in, H, W)`` input with ``out_channels`` learned kernels.

    Arguments and initialization are PyTorch's (zero padding only): the weight
    ``(out_channels, in_channels / groups, kh, kw)`` and the bias are drawn
    from ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``, ``fan_in = in_channels / groups * kh * kw``,
    by plugrad's random generators. See :func:`plugrad.nn.functional.conv2d`.

    Parameters
    ----------
    in_channels, out_channels : int
    kernel_size : int or (int, int)
    stride, dilation : int or (int, int)
    padding : int, (int, int), "valid" or "same"
    groups : int
        Must divide both channel counts.
    bias : bool
    device, dtype, backend
        Where and of what dtype the parameters are made.

    Examples
    --------
    >>> import plugrad
    >>> conv = plugrad.nn.Conv2d(3, 8, kernel_size=3, padding=1)
    >>> conv
    Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    >>> conv(plugrad.ones((2, 3, 16, 16))).shape
    (2, 8, 16, 16)
    """

    @with_placement
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int],
        stride: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] | str = 0,
        dilation: int | tuple[int, int] = 1,
        groups: int = 1,
        bias: bool = True,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        if not isinstance(groups, int) or groups < 1:
            raise ValueError(f"Conv2d: groups must be a positive int, got {groups!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"Conv2d: groups={groups} must divide in_channels={in_channels} and "
                f"out_channels={out_channels}"
            )
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(
                    f"Conv2d: padding must be 'valid', 'same' or ints, got {padding!r}"
                )
            if padding == "same" and _pair("stride", stride) != (1, 1):
                raise ValueError("Conv2d: padding='same' needs stride 1, as in PyTorch")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _pair("kernel_size", kernel_size)
        self.stride = _pair("stride", stride)
        self.padding = padding if isinstance(padding, str) else _pair("padding", padding)
        self.dilation = _pair("dilation", dilation)
        self.groups = groups
        add_weight_and_bias(
            self, (out_channels, in_channels // groups, *self.kernel_size),
            (out_channels,) if bias else None, **placement,
        )  # fmt: skip
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw new initial values (PyTorch's defaults)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = math.prod(self.weight.shape[1:])
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.conv2d(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )

    def extra_repr(self) -> str:
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding not in ((0, 0), "valid"):
            text += f", padding={self.padding!r}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text
