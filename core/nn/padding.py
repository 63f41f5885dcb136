"""Padding layers: constant (and zero), reflection, replication and circular, over 1 to 3 axes.

Each applies :func:`plugrad.nn.functional.pad` to the last one, two or three
axes; ``padding`` is an int (the same on every side) or PyTorch's tuple
``(left, right[, top, bottom[, front, back]])``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, TypeVar

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
    """What every padding layer keeps: ``2 * nd`` amounts, last axis first.

    Each kind of padding says what it does in ``_does``, and shows it on one axis
    in ``_example``: the amounts, then the padded values of ``[1, 2, 3]``.
    """

    _nd: int
    mode: str
    _does: ClassVar[str]
    _example: ClassVar[tuple[str, str]]
    _example_value: ClassVar[str] = ""  # ", value" in the examples of a constant padding

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
    _does = "Pad with the constant ``value``"
    _example = ("(1, 2)", "9., 1., 2., 3., 9., 9.")
    _example_value = ", 9.0"

    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    """A constant padding of zeros: ``padding`` alone is taken and shown."""

    _does = "Pad with zeros"
    _example = ("(1, 2)", "0., 1., 2., 3., 0., 0.")
    _example_value = ""

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding, 0.0)

    extra_repr = _PadNd.extra_repr


class _ReflectionPadNd(_PadNd):
    mode = "reflect"
    _does = "Pad by mirroring about the edge elements"
    _example = ("(2, 1)", "3., 2., 1., 2., 3., 2.")


class _ReplicationPadNd(_PadNd):
    mode = "replicate"
    _does = "Pad by repeating the edge elements"
    _example = ("(2, 1)", "1., 1., 1., 2., 3., 3.")


class _CircularPadNd(_PadNd):
    mode = "circular"
    _does = "Pad by wrapping around"
    _example = ("(2, 1)", "2., 3., 1., 2., 3., 1.")


#: For each number of axes: the axes padded and the input's shape.
_AXES = {
    1: ("the last axis", "(N, C, L)"),
    2: ("the last two axes", "(N, C, H, W)"),
    3: ("the last three axes", "(N, C, D, H, W)"),
}
#: The examples on two and three axes: the amounts, the shape of the ones padded, the result.
_SHAPE_EXAMPLES = {
    2: ("(1, 1, 0, 2)", "(1, 1, 3, 3)", "(1, 1, 5, 5)"),
    3: ("1", "(1, 1, 3, 3, 3)", "(1, 1, 5, 5, 5)"),
}

_Layer = TypeVar("_Layer", bound=type[_PadNd])


def _documented(layer: _Layer) -> _Layer:
    """Give ``layer`` its docstring: what its kind of padding does, on its number of axes."""
    name, nd = layer.__name__, layer._nd
    axes, shape = _AXES[nd]
    if nd == 1:
        amounts, padded = layer._example
        example = (
            f">>> pad = plugrad.nn.{name}({amounts}{layer._example_value})\n"
            "    >>> pad(plugrad.tensor([[[1.0, 2.0, 3.0]]]))\n"
            f"    tensor([[[{padded}]]])"
        )
    else:
        amounts, ones, padded = _SHAPE_EXAMPLES[nd]
        example = (
            f">>> plugrad.nn.{name}({amounts}{layer._example_value})(plugrad.ones({ones})).shape\n"
            f"    {padded}"
        )
    layer.__doc__ = f"""{layer._does} on {axes} of ``{shape}`` input.

    Examples
    --------
    >>> import plugrad
    {example}
    """
    return layer


@_documented
class ConstantPad1d(_ConstantPadNd):
    _nd = 1


@_documented
class ConstantPad2d(_ConstantPadNd):
    _nd = 2


@_documented
class ConstantPad3d(_ConstantPadNd):
    _nd = 3


@_documented
class ZeroPad1d(_ZeroPadNd, ConstantPad1d):
    pass


@_documented
class ZeroPad2d(_ZeroPadNd, ConstantPad2d):
    pass


@_documented
class ZeroPad3d(_ZeroPadNd, ConstantPad3d):
    pass


@_documented
class ReflectionPad1d(_ReflectionPadNd):
    _nd = 1


@_documented
class ReflectionPad2d(_ReflectionPadNd):
    _nd = 2


@_documented
class ReflectionPad3d(_ReflectionPadNd):
    _nd = 3


@_documented
class ReplicationPad1d(_ReplicationPadNd):
    _nd = 1


@_documented
class ReplicationPad2d(_ReplicationPadNd):
    _nd = 2


@_documented
class ReplicationPad3d(_ReplicationPadNd):
    _nd = 3


@_documented
class CircularPad1d(_CircularPadNd):
    _nd = 1


@_documented
class CircularPad2d(_CircularPadNd):
    _nd = 2


@_documented
class CircularPad3d(_CircularPadNd):
    _nd = 3
