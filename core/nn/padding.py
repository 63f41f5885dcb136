"""Padding layers: constant (and zero), reflection, replication and circular, over 1 to 3 axes.

Each applies :func:`plugrad.nn.functional.pad` to the last one, two or three
axes; ``padding`` is an int (the same on every side) or PyTorch's tuple
``(left, right[, top, bottom[, front, back]])``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidArgumentError
from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = [
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]


class _PadNd(Module):
    """What every padding layer keeps: ``2 * nd`` amounts, last axis first."""

    _nd: int
    mode: str

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__()
        count = 2 * self._nd
        amounts = (padding,) * count if isinstance(padding, int) else tuple(padding)
        if len(amounts) != count or not all(
            isinstance(a, int) and not isinstance(a, bool) for a in amounts
        ):
            raise InvalidArgumentError(
                f"{type(self).__name__}: padding must be an int or {count} ints, got {padding!r}"
            )
        self.padding = amounts

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    mode = "constant"

    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    """A constant padding of zeros: ``padding`` alone is taken and shown."""

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ReflectionPadNd(_PadNd):
    mode = "reflect"


class _ReplicationPadNd(_PadNd):
    mode = "replicate"


class _CircularPadNd(_PadNd):
    mode = "circular"


class ConstantPad1d(_ConstantPadNd):
    """Pad with the constant ``value`` on the last axis of ``(N, C, L)`` input.

    Examples
    --------
    >>> import plugrad
    >>> pad = plugrad.nn.ConstantPad1d((1, 2), 9.0)
    >>> pad(plugrad.tensor([[[1.0, 2.0, 3.0]]]))
    tensor([[[9., 1., 2., 3., 9., 9.]]])
    """

    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad with the constant ``value`` on the last two axes of ``(N, C, H, W)`` input.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.ConstantPad2d((1, 1, 0, 2), 0.5)(plugrad.ones((1, 1, 3, 3))).shape
    (1, 1, 5, 5)
    """

    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad with the constant ``value`` on the last three axes of ``(N, C, D, H, W)`` input.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.ConstantPad3d(1, 0.5)(plugrad.ones((1, 1, 3, 3, 3))).shape
    (1, 1, 5, 5, 5)
    """

    _nd = 3


class ZeroPad1d(_ZeroPadNd, ConstantPad1d):
    """Pad with zeros on the last axis of ``(N, C, L)`` input.

    Examples
    --------
    >>> import plugrad
    >>> pad = plugrad.nn.ZeroPad1d((1, 2))
    >>> pad(plugrad.tensor([[[1.0, 2.0, 3.0]]]))
    tensor([[[0., 1., 2., 3., 0., 0.]]])
    """


class ZeroPad2d(_ZeroPadNd, ConstantPad2d):
    """Pad with zeros on the last two axes of ``(N, C, H, W)`` input.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.ZeroPad2d((1, 1, 0, 2))(plugrad.ones((1, 1, 3, 3))).shape
    (1, 1, 5, 5)
    """


class ZeroPad3d(_ZeroPadNd, ConstantPad3d):
    """Pad with zeros on the last three axes of ``(N, C, D, H, W)`` input.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.ZeroPad3d(1)(plugrad.ones((1, 1, 3, 3, 3))).shape
    (1, 1, 5, 5, 5)
    """


class ReflectionPad1d(_ReflectionPadNd):
    """Pad by mirroring about the edge elements on the last axis of ``(N, C, L)`` input.

    Examples
    --------
    >>> import plugrad
    >>> pad = plugrad.nn.ReflectionPad1d((2, 1))
    >>> pad(plugrad.tensor([[[1.0, 2.0, 3.0]]]))
    tensor([[[3., 2., 1., 2., 3., 2.]]])
    """

    _nd = 1


class ReflectionPad2d(_ReflectionPadNd):
    """Pad by mirroring about the edge elements on the last two axes of ``(N, C, H, W)`` input.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.ReflectionPad2d((1, 1, 0, 2))(plugrad.ones((1, 1, 3, 3))).shape
    (1, 1, 5, 5)
    """

    _nd = 2


class ReflectionPad3d(_ReflectionPadNd):
    """Pad by mirroring about the edge elements on the last three axes of ``(N, C, D, H, W)`` input.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.ReflectionPad3d(1)(plugrad.ones((1, 1, 3, 3, 3))).shape
    (1, 1, 5, 5, 5)
    """

    _nd = 3


class ReplicationPad1d(_ReplicationPadNd):
    """Pad by repeating the edge elements on the last axis of ``(N, C, L)`` input.

    Examples
    --------
    >>> import plugrad
    >>> pad = plugrad.nn.ReplicationPad1d((2, 1))
    >>> pad(plugrad.tensor([[[1.0, 2.0, 3.0]]]))
    tensor([[[1., 1., 1., 2., 3., 3.]]])
    """

    _nd = 1


class ReplicationPad2d(_ReplicationPadNd):
    """Pad by repeating the edge elements on the last two axes of ``(N, C, H, W)`` input.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.ReplicationPad2d((1, 1, 0, 2))(plugrad.ones((1, 1, 3, 3))).shape
    (1, 1, 5, 5)
    """

    _nd = 2


class ReplicationPad3d(_ReplicationPadNd):
    """Pad by repeating the edge elements on the last three axes of ``(N, C, D, H, W)`` input.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.ReplicationPad3d(1)(plugrad.ones((1, 1, 3, 3, 3))).shape
    (1, 1, 5, 5, 5)
    """

    _nd = 3


class CircularPad1d(_CircularPadNd):
    """Pad by wrapping around on the last axis of ``(N, C, L)`` input.

    Examples
    --------
    >>> import plugrad
    >>> pad = plugrad.nn.CircularPad1d((2, 1))
    >>> pad(plugrad.tensor([[[1.0, 2.0, 3.0]]]))
    tensor([[[2., 3., 1., 2., 3., 1.]]])
    """

    _nd = 1


class CircularPad2d(_CircularPadNd):
    """Pad by wrapping around on the last two axes of ``(N, C, H, W)`` input.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.CircularPad2d((1, 1, 0, 2))(plugrad.ones((1, 1, 3, 3))).shape
    (1, 1, 5, 5)
    """

    _nd = 2


class CircularPad3d(_CircularPadNd):
    """Pad by wrapping around on the last three axes of ``(N, C, D, H, W)`` input.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.CircularPad3d(1)(plugrad.ones((1, 1, 3, 3, 3))).shape
    (1, 1, 5, 5, 5)
    """

    _nd = 3
