"""Learned convolutions: ``Conv1d``, ``Conv2d``, ``Conv3d`` and their transposed forms."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from ..errors import InvalidArgumentError, ShapeError
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module, ParameterPlacement, add_weight_and_bias, with_placement

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(layer: str, name: str, value: Any, n: int) -> tuple[int, ...]:
    value = F._int_or_itself(value)  # (a NumPy int too)
    values = (
        (value,) * n
        if isinstance(value, int)
        else tuple(map(F._int_or_itself, value))
        if isinstance(value, tuple | list)
        else ()
    )
    if len(values) != n or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        what = {1: "an int or a 1-tuple of ints", 2: "an int or a pair of ints"}.get(
            n, f"an int or {n} ints"
        )
        raise InvalidArgumentError(f"{layer}: {name} must be {what}, got {value!r}")
    return values


class _ConvNd(Module):
    """What every convolution keeps: its geometry, its weight and bias, and their init."""

    _nd: int
    _conv: ClassVar[Callable[..., Tensor]]  # F.conv1d, F.conv_transpose2d, ...
    transposed = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int],
        padding: int | Sequence[int] | str,
        dilation: int | Sequence[int],
        output_padding: int | Sequence[int],
        groups: int,
        bias: bool,
        padding_mode: str,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        layer, n = type(self).__name__, self._nd
        if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
            raise InvalidArgumentError(f"{layer}: groups must be a positive int, got {groups!r}")
        if in_channels % groups or out_channels % groups:
            raise InvalidArgumentError(
                f"{layer}: groups={groups} must divide in_channels={in_channels} and "
                f"out_channels={out_channels}"
            )
        if padding_mode not in _PADDING_MODES:
            raise InvalidArgumentError(
                f"{layer}: padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}"
            )
        if self.transposed and padding_mode != "zeros":
            raise InvalidArgumentError(
                f"{layer}: only padding_mode='zeros' is supported, as in PyTorch"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(layer, "kernel_size", kernel_size, n)
        self.stride = _ntuple(layer, "stride", stride, n)
        if isinstance(padding, str):
            if self.transposed or padding not in ("valid", "same"):
                accepted = "ints" if self.transposed else "'valid', 'same' or ints"
                raise InvalidArgumentError(f"{layer}: padding must be {accepted}, got {padding!r}")
            if padding == "same" and self.stride != (1,) * n:
                raise InvalidArgumentError(f"{layer}: padding='same' needs stride 1, as in PyTorch")
        self.padding: tuple[int, ...] | str = (
            padding if isinstance(padding, str) else _ntuple(layer, "padding", padding, n)
        )
        self.dilation = _ntuple(layer, "dilation", dilation, n)
        self.output_padding = _ntuple(layer, "output_padding", output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        channels = (in_channels, out_channels // groups)
        if not self.transposed:
            channels = (out_channels, in_channels // groups)
        add_weight_and_bias(
            self, (*channels, *self.kernel_size), (out_channels,) if bias else None, **placement
        )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw new initial values (PyTorch's defaults)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = math.prod(self.weight.shape[1:])
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def _explicit_padding(self) -> tuple[int, ...]:
        """``self.padding`` as ``F.pad`` amounts (last axis first), for the non-zero modes."""
        if self.padding == "same":
            totals = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            pairs = [(total // 2, total - total // 2) for total in totals]
        elif self.padding == "valid":
            pairs = [(0, 0)] * self._nd
        else:
            pairs = [(p, p) for p in cast("tuple[int, ...]", self.padding)]
        return tuple(amount for pair in reversed(pairs) for amount in pair)

    def _padded(self, input: Tensor) -> tuple[Tensor, tuple[int, ...] | str | int]:
        """The input and the padding to convolve it with: ``F.pad`` does the non-zero modes."""
        if self.padding_mode == "zeros":
            return input, self.padding
        return F.pad(input, self._explicit_padding(), mode=self.padding_mode), 0

    def extra_repr(self) -> str:
        n = self._nd
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * n:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


_Layer = TypeVar("_Layer", bound=type[_ConvNd])

#: For each number of axes: the input's spatial axes, a kernel's, a tuple of ints, and the
#: spatial sizes of the examples' input.
_AXES = {
    1: ("L", "k", "(int,)", (5,)),
    2: ("H, W", "kh, kw", "(int, int)", (4, 4)),
    3: ("D, H, W", "kd, kh, kw", "(int, int, int)", (2, 3, 4)),
}

_CONV_DOC = """Convolve ``(N, C_in, {spatial})`` input with ``out_channels`` learned kernels.

    Arguments and initialization are PyTorch's: the weight
    ``(out_channels, in_channels / groups, {kernel})`` and the bias are drawn from
    ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``, ``fan_in = in_channels / groups * {fan}``,
    by plugrad's random generators. See :func:`plugrad.nn.functional.conv{nd}d`.

    Parameters
    ----------
    in_channels, out_channels : int
    kernel_size, stride, dilation : int or {ints}
    padding : int, {ints}, "valid" or "same"
    groups : int
        Must divide both channel counts.
    bias : bool
    padding_mode : {{"zeros", "reflect", "replicate", "circular"}}
        How the input is padded (see :func:`plugrad.nn.functional.pad`).
    device, dtype, backend
        Where and of what dtype the parameters are made.

    Examples
    --------
    >>> import plugrad
    >>> conv = plugrad.nn.{name}(2, 4, kernel_size=3, padding=1)
    >>> conv
    {name}(2, 4, kernel_size={threes}, stride={ones}, padding={ones})
    >>> conv(plugrad.ones({input})).shape
    {output}
    """

_TRANSPOSED_DOC = """Transposed convolution of ``(N, C_in, {spatial})`` input with learned kernels.

    The gradient of a :class:`Conv{nd}d` for its input (an upsampling layer); the
    weight is ``(in_channels, out_channels / groups, {kernel})``, initialized as
    PyTorch does. ``forward(input, output_size=None)`` accepts the wanted output
    size in place of ``output_padding``. See
    :func:`plugrad.nn.functional.conv_transpose{nd}d`.

    Examples
    --------
    >>> import plugrad
    >>> up = plugrad.nn.{name}(4, 2, kernel_size=2, stride=2)
    >>> up
    {name}(4, 2, kernel_size={twos}, stride={twos})
    >>> up(plugrad.ones({input})).shape
    {output}
    >>> up(plugrad.ones({input}), output_size={wanted}).shape
    {reached}
    """


def _documented(layer: _Layer) -> _Layer:
    """Give a convolution its docstring, with the shapes of its number of axes."""
    nd = layer._nd
    spatial, kernel, ints, sizes = _AXES[nd]
    words = dict(name=layer.__name__, nd=nd, spatial=spatial, kernel=kernel, ints=ints)
    if layer.transposed:
        doubled = tuple(2 * size for size in sizes)
        wanted = tuple(size + 1 for size in doubled)
        layer.__doc__ = _TRANSPOSED_DOC.format(
            **words, twos=(2,) * nd, input=(1, 4, *sizes), output=(1, 2, *doubled),
            wanted=wanted, reached=(1, 2, *wanted),
        )  # fmt: skip
    else:
        layer.__doc__ = _CONV_DOC.format(
            **words, fan=kernel.replace(", ", " * "), threes=(3,) * nd, ones=(1,) * nd,
            input=(1, 2, *sizes), output=(1, 4, *sizes),
        )  # fmt: skip
    return layer


class _ConvForwardNd(_ConvNd):
    """``Conv1d``, ``Conv2d`` and ``Conv3d``: PyTorch's constructor, and ``_conv`` of the
    padded input."""

    @with_placement
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, ...],
        stride: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] | str = 0,
        dilation: int | tuple[int, ...] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, 0, groups, bias,
            padding_mode, **placement,
        )  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:
        input, padding = self._padded(input)
        return type(self)._conv(
            input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups
        )


@_documented
class Conv1d(_ConvForwardNd):
    _nd = 1
    _conv = F.conv1d


@_documented
class Conv2d(_ConvForwardNd):
    _nd = 2
    _conv = F.conv2d


@_documented
class Conv3d(_ConvForwardNd):
    _nd = 3
    _conv = F.conv3d


class _ConvTransposeNd(_ConvNd):
    """``ConvTranspose1d``/``2d``/``3d``: PyTorch's constructor, ``forward(input, output_size)``."""

    transposed = True

    @with_placement
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, ...],
        stride: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] = 0,
        output_padding: int | tuple[int, ...] = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: int | tuple[int, ...] = 1,
        padding_mode: str = "zeros",
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding,
            groups, bias, padding_mode, **placement,
        )  # fmt: skip

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        return type(self)._conv(
            input, self.weight, self.bias, self.stride, cast("tuple[int, ...]", self.padding),
            self._output_padding(input, output_size), self.groups, self.dilation,
        )  # fmt: skip

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> tuple[int, ...]:
        """``output_padding``, or what gives ``output_size`` (PyTorch's ``forward`` argument)."""
        if output_size is None:
            return self.output_padding
        n, layer = self._nd, type(self).__name__
        size = tuple(output_size)
        if len(size) > n:  # given with the batch and channel axes
            size = size[len(size) - n :]
        if len(size) != n:
            raise ShapeError(
                f"{layer}: output_size must have {n} spatial size(s) (or the input's rank), "
                f"got {tuple(output_size)}"
            )
        pads = cast("tuple[int, ...]", self.padding)  # a string is refused in __init__
        smallest = [
            (length - 1) * s - 2 * p + d * (k - 1) + 1
            for length, s, p, d, k in zip(
                input.shape[-n:], self.stride, pads, self.dilation, self.kernel_size
            )
        ]
        for wanted, low, s in zip(size, smallest, self.stride):
            if not low <= wanted < low + s:
                raise ShapeError(
                    f"{layer}: output_size {size} is not reachable from the input "
                    f"{input.shape}: each size must lie between {tuple(smallest)} and that "
                    f"plus the stride {self.stride} minus 1"
                )
        return tuple(wanted - low for wanted, low in zip(size, smallest))


@_documented
class ConvTranspose1d(_ConvTransposeNd):
    _nd = 1
    _conv = F.conv_transpose1d


@_documented
class ConvTranspose2d(_ConvTransposeNd):
    _nd = 2
    _conv = F.conv_transpose2d


@_documented
class ConvTranspose3d(_ConvTransposeNd):
    _nd = 3
    _conv = F.conv_transpose3d
