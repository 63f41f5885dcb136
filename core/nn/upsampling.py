"""``Upsample`` and its fixed-mode forms ``UpsamplingNearest2d`` and ``UpsamplingBilinear2d``."""

from __future__ import annotations

from collections.abc import Sequence

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]


class Upsample(Module):
    """Resample the spatial axes with :func:`plugrad.nn.functional.interpolate`.

    Give ``size`` or ``scale_factor``; ``mode``, ``align_corners`` and
    ``recompute_scale_factor`` are passed on.

    Examples
    --------
    >>> import plugrad
    >>> up = plugrad.nn.Upsample(scale_factor=2, mode="bilinear")
    >>> up
    Upsample(scale_factor=2.0, mode='bilinear')
    >>> up(plugrad.ones((1, 3, 4, 5))).shape
    (1, 3, 8, 10)
    """

    def __init__(
        self,
        size: int | Sequence[int] | None = None,
        scale_factor: float | Sequence[float] | None = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        self.scale_factor: float | tuple[float, ...] | None = None
        if isinstance(scale_factor, int | float):
            self.scale_factor = float(scale_factor)
        elif scale_factor is not None:
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """:class:`Upsample` of ``(N, C, H, W)`` input in mode ``"nearest"``.

    Examples
    --------
    >>> import plugrad
    >>> up = plugrad.nn.UpsamplingNearest2d(scale_factor=2)
    >>> up(plugrad.tensor([[[[1.0, 2.0]]]]))
    tensor([[[[1., 1., 2., 2.],
              [1., 1., 2., 2.]]]])
    """

    def __init__(
        self,
        size: int | tuple[int, int] | None = None,
        scale_factor: float | tuple[float, float] | None = None,
    ) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """:class:`Upsample` of ``(N, C, H, W)`` input, ``"bilinear"`` with ``align_corners=True``.

    Examples
    --------
    >>> import plugrad
    >>> up = plugrad.nn.UpsamplingBilinear2d(size=(1, 3))
    >>> up(plugrad.tensor([[[[1.0, 2.0]]]]))
    tensor([[[[1.0000, 1.5000, 2.0000]]]])
    """

    def __init__(
        self,
        size: int | tuple[int, int] | None = None,
        scale_factor: float | tuple[float, float] | None = None,
    ) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
