"""Pooling layers: maximum, mean and their adaptive forms, over one, two or three axes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from ..errors import InvalidArgumentError
from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
]

IntTuple = int | tuple[int, ...]


def _single(value: int | tuple[int]) -> tuple[int]:
    return (value,) if isinstance(value, int) else tuple(value)  # type: ignore[return-value]


class _PoolNd(Module):
    """What a maximum or mean pooling layer keeps: its window's size, stride and padding.

    ``_geometry`` turns each as given into what the layer keeps (``AvgPool1d``
    keeps 1-tuples, as PyTorch's does). ``_summary`` begins the docstring of each
    layer of the family (see :func:`_documented`).
    """

    _summary: ClassVar[str]

    def __init__(self, kernel_size: Any, stride: Any, padding: Any) -> None:
        super().__init__()
        self.kernel_size = self._geometry(kernel_size)
        self.stride = self._geometry(kernel_size if stride is None else stride)
        self.padding = self._geometry(padding)

    def _geometry(self, value: Any) -> Any:
        return value

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _MaxPoolNd(_PoolNd):
    """A maximum pooling: ``_max_pool`` (``F.max_pool1d`` or ``2d``) with the layer's geometry."""

    _max_pool: ClassVar[Callable[..., Any]]
    _summary = """Apply :func:`plugrad.nn.functional.max_pool{nd}d` with the given geometry.

    ``stride`` defaults to ``kernel_size``."""

    def __init__(
        self,
        kernel_size: IntTuple,
        stride: IntTuple | None = None,
        padding: IntTuple = 0,
        dilation: IntTuple = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__(kernel_size, stride, padding)
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Any:
        return type(self)._max_pool(
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


class _AvgPoolNd(_PoolNd):
    """A mean pooling: its geometry, ``ceil_mode`` and ``count_include_pad``."""

    _summary = """Apply :func:`plugrad.nn.functional.avg_pool{nd}d` with the given geometry.

    ``stride`` defaults to ``kernel_size``."""

    def __init__(
        self,
        kernel_size: IntTuple,
        stride: IntTuple | None = None,
        padding: IntTuple = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__(kernel_size, stride, padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad


class _AdaptivePoolNd(Module):
    """An adaptive pooling: ``_pool`` (an ``F.adaptive_*_pool``) giving ``output_size``."""

    _pool: ClassVar[Callable[..., Any]]
    _summary: ClassVar[str]

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Any:
        return type(self)._pool(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveAvgPoolNd(_AdaptivePoolNd):
    _summary = "Apply :func:`plugrad.nn.functional.adaptive_avg_pool{nd}d` to give ``output_size``."


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    _summary = (
        "Apply :func:`plugrad.nn.functional.adaptive_max_pool{nd}d` to give ``output_size``.\n\n"
        "    With ``return_indices`` the layer also returns the flat index of each maximum."
    )

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor) -> Any:
        return type(self)._pool(input, self.output_size, self.return_indices)


_Layer = TypeVar("_Layer", bound=type[_PoolNd] | type[_AdaptivePoolNd])


def _documented(
    arguments: str, shown: str, input: tuple[int, ...], output: tuple[int, ...], note: str = ""
) -> Callable[[_Layer], _Layer]:
    """Give a pooling layer its docstring: its family's ``_summary`` (then ``note``) and an
    example that makes it with ``arguments``, shows it (``shown`` between the parentheses)
    and pools ones of shape ``input`` into ``output``."""

    def document(layer: _Layer) -> _Layer:
        name, summary = layer.__name__, layer._summary.format(nd=len(input) - 2)
        layer.__doc__ = f"""{summary}{note}

    Examples
    --------
    >>> import plugrad
    >>> pool = plugrad.nn.{name}({arguments})
    >>> pool
    {name}({shown})
    >>> pool(plugrad.ones({input})).shape
    {output}
    """
        return layer

    return document


_MAX_POOL_SHOWN = "kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False"


@_documented("2", _MAX_POOL_SHOWN, (1, 3, 8, 8), (1, 3, 4, 4))
class MaxPool2d(_MaxPoolNd):
    _max_pool = F.max_pool2d


@_documented("2, stride=1", "kernel_size=2, stride=1, padding=0", (1, 3, 8, 8), (1, 3, 7, 7))
class AvgPool2d(_AvgPoolNd):
    _avg_pool: ClassVar[Callable[..., Tensor]] = F.avg_pool2d

    def __init__(
        self,
        kernel_size: IntTuple,
        stride: IntTuple | None = None,
        padding: IntTuple = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._avg_pool(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override,
        )  # fmt: skip


@_documented("(1, 1)", "output_size=(1, 1)", (2, 3, 5, 7), (2, 3, 1, 1))
class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    _pool = F.adaptive_avg_pool2d


@_documented("2", _MAX_POOL_SHOWN, (1, 3, 8), (1, 3, 4))
class MaxPool1d(_MaxPoolNd):
    _max_pool = F.max_pool1d


@_documented(
    "3, stride=2, padding=1",
    "kernel_size=(3,), stride=(2,), padding=(1,)",
    (1, 3, 8),
    (1, 3, 4),
    note=" As in PyTorch, the geometry is kept as 1-tuples.",
)
class AvgPool1d(_AvgPoolNd):
    def _geometry(self, value: int | tuple[int]) -> tuple[int]:
        return _single(value)

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(
            input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad,
        )  # fmt: skip


@_documented("4", "output_size=4", (2, 3, 10), (2, 3, 4))
class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    _pool = F.adaptive_avg_pool1d


@_documented("4", "output_size=4", (2, 3, 10), (2, 3, 4))
class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _pool = F.adaptive_max_pool1d


@_documented("(1, 1)", "output_size=(1, 1)", (2, 3, 5, 7), (2, 3, 1, 1))
class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _pool = F.adaptive_max_pool2d


@_documented("2", _MAX_POOL_SHOWN, (1, 3, 4, 8, 8), (1, 3, 2, 4, 4))
class MaxPool3d(_MaxPoolNd):
    _max_pool = F.max_pool3d


@_documented("2, stride=1", "kernel_size=2, stride=1, padding=0", (1, 3, 4, 8, 8), (1, 3, 3, 7, 7))
class AvgPool3d(AvgPool2d):
    _avg_pool = F.avg_pool3d


@_documented("1", "output_size=1", (2, 3, 4, 5, 7), (2, 3, 1, 1, 1))
class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _pool = F.adaptive_avg_pool3d


@_documented("(1, 2, 2)", "output_size=(1, 2, 2)", (2, 3, 4, 5, 7), (2, 3, 1, 2, 2))
class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _pool = F.adaptive_max_pool3d


class _MaxUnpoolNd(_PoolNd):
    """The inverse of a max pooling, with its geometry kept as tuples (as PyTorch's)."""

    _size: ClassVar[int]
    _unpool: ClassVar[Callable[..., Tensor]]

    def __init__(
        self, kernel_size: IntTuple, stride: IntTuple | None = None, padding: IntTuple = 0
    ) -> None:
        super().__init__(kernel_size, stride, padding)

    def _geometry(self, value: Any) -> Any:
        values = (value,) * self._size if isinstance(value, int) else tuple(value)
        if len(values) != self._size:
            raise InvalidArgumentError(
                f"{type(self).__name__}: expected an int or {self._size} ints, got {value!r}"
            )
        return values

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        unpool = type(self)._unpool
        return unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    """Apply :func:`plugrad.nn.functional.max_unpool1d`: undo a ``MaxPool1d(return_indices=True)``.

    Examples
    --------
    >>> import plugrad
    >>> pool, unpool = plugrad.nn.MaxPool1d(2, return_indices=True), plugrad.nn.MaxUnpool1d(2)
    >>> unpool
    MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))
    >>> unpool(*pool(plugrad.tensor([[[1.0, 3.0, 2.0, 5.0]]])))
    tensor([[[0., 3., 0., 5.]]])
    """

    _size = 1
    _unpool = F.max_unpool1d


class MaxUnpool2d(_MaxUnpoolNd):
    """Apply :func:`plugrad.nn.functional.max_unpool2d`: undo a ``MaxPool2d(return_indices=True)``.

    Examples
    --------
    >>> import plugrad
    >>> pool, unpool = plugrad.nn.MaxPool2d(2, return_indices=True), plugrad.nn.MaxUnpool2d(2)
    >>> unpool
    MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))
    >>> unpool(*pool(plugrad.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])), output_size=(1, 1, 3, 2))
    tensor([[[[0., 0.],
              [0., 4.],
              [0., 0.]]]])
    """

    _size = 2
    _unpool = F.max_unpool2d


class MaxUnpool3d(_MaxUnpoolNd):
    """Apply :func:`plugrad.nn.functional.max_unpool3d`: undo a ``MaxPool3d(return_indices=True)``.

    Examples
    --------
    >>> import plugrad
    >>> pool, unpool = plugrad.nn.MaxPool3d(2, return_indices=True), plugrad.nn.MaxUnpool3d(2)
    >>> unpool
    MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))
    >>> unpool(*pool(plugrad.arange(8.0).reshape(1, 1, 2, 2, 2))).flatten()
    tensor([0., 0., 0., 0., 0., 0., 0., 7.])
    """

    _size = 3
    _unpool = F.max_unpool3d


class _LPPoolNd(Module):
    """A power-average pooling: ``_lp_pool`` (``F.lp_pool1d`` or ``2d``) with its geometry."""

    _lp_pool: ClassVar[Callable[..., Tensor]]

    def __init__(
        self,
        norm_type: float,
        kernel_size: IntTuple,
        stride: IntTuple | None = None,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        lp_pool = type(self)._lp_pool
        return lp_pool(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """Apply :func:`plugrad.nn.functional.lp_pool1d`: the ``norm_type``-norm of each window.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.LPPool1d(2, 2)(plugrad.tensor([[[3.0, 4.0]]]))
    tensor([[[5.]]])
    """

    _lp_pool = F.lp_pool1d


class LPPool2d(_LPPoolNd):
    """Apply :func:`plugrad.nn.functional.lp_pool2d`: the ``norm_type``-norm of each window.

    Examples
    --------
    >>> import plugrad
    >>> pool = plugrad.nn.LPPool2d(2, 2)
    >>> pool
    LPPool2d(norm_type=2, kernel_size=2, stride=None, ceil_mode=False)
    >>> pool(plugrad.tensor([[[[3.0, 4.0], [0.0, 0.0]]]]))
    tensor([[[[5.]]]])
    """

    _lp_pool = F.lp_pool2d


class LPPool3d(_LPPoolNd):
    """Apply :func:`plugrad.nn.functional.lp_pool3d`: the ``norm_type``-norm of each window.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.LPPool3d(1, 2)(plugrad.ones((1, 1, 2, 2, 2)))
    tensor([[[[[8.]]]]])
    """

    _lp_pool = F.lp_pool3d


class _FractionalMaxPoolNd(Module):
    """A fractional maximum pooling: ``_pool`` (``F.fractional_max_pool2d`` or ``3d``) with the
    layer's kernel and output size (or ratio), and ``_random_samples`` as a buffer."""

    _pool: ClassVar[Callable[..., Any]]
    _size: ClassVar[int]

    def __init__(
        self,
        kernel_size: IntTuple,
        output_size: IntTuple | None = None,
        output_ratio: float | tuple[float, ...] | None = None,
        return_indices: bool = False,
        _random_samples: Tensor | None = None,
    ) -> None:
        super().__init__()
        name, n = type(self).__name__, self._size
        if (output_size is None) == (output_ratio is None):
            raise InvalidArgumentError(
                f"{name}: give exactly one of output_size and output_ratio, got "
                f"output_size={output_size!r}, output_ratio={output_ratio!r}"
            )
        self.kernel_size = _as_tuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = None if output_size is None else _as_tuple(output_size, n)
        self.output_ratio = None if output_ratio is None else _as_tuple(output_ratio, n)
        if self.output_ratio is not None and not all(
            isinstance(r, int | float) and not isinstance(r, bool) and 0 < r < 1
            for r in self.output_ratio
        ):
            raise InvalidArgumentError(
                f"{name}: output_ratio must be between 0 and 1 (exclusive), got {output_ratio!r}"
            )

    def forward(self, input: Tensor) -> Any:
        return type(self)._pool(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


def _as_tuple(value: Any, n: int) -> Any:
    """``value`` as PyTorch's ``_pair``/``_triple`` keep it: one value for every axis."""
    return tuple(value) if isinstance(value, tuple | list) else (value,) * n


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Apply :func:`plugrad.nn.functional.fractional_max_pool2d` with the layer's geometry.

    Give ``output_size`` or ``output_ratio`` (each in (0, 1)), not both. The windows'
    places are drawn afresh at each call, unless ``_random_samples`` fixes them.

    Examples
    --------
    >>> import plugrad
    >>> pool = plugrad.nn.FractionalMaxPool2d(3, output_ratio=0.5)
    >>> pool
    FractionalMaxPool2d()
    >>> pool(plugrad.ones((1, 3, 8, 8))).shape
    (1, 3, 4, 4)
    """

    _pool = F.fractional_max_pool2d
    _size = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Apply :func:`plugrad.nn.functional.fractional_max_pool3d` with the layer's geometry.

    Give ``output_size`` or ``output_ratio`` (each in (0, 1)), not both. The windows'
    places are drawn afresh at each call, unless ``_random_samples`` fixes them.

    Examples
    --------
    >>> import plugrad
    >>> pool = plugrad.nn.FractionalMaxPool3d(2, output_size=(2, 3, 3))
    >>> pool(plugrad.ones((1, 3, 4, 6, 6))).shape
    (1, 3, 2, 3, 3)
    """

    _pool = F.fractional_max_pool3d
    _size = 3
