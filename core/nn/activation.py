"""Activation layers: ``ReLU``, ``GELU``, ``SiLU``, ``LeakyReLU``, ``ELU``, ``Softmax``, ..."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["ELU", "GELU", "LeakyReLU", "LogSoftmax", "ReLU", "SiLU", "Sigmoid", "Softmax", "Tanh"]


class _Elementwise(Module):
    """A layer without settings that applies ``_function`` of :mod:`plugrad.nn.functional`."""

    _function: ClassVar[Callable[[Tensor], Tensor]]

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._function(input)


class _AlongDim(Module):
    """A layer that applies ``_function`` of :mod:`plugrad.nn.functional` along ``dim``."""

    _function: ClassVar[Callable[[Tensor, int], Tensor]]

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._function(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class ReLU(Module):
    """Apply :func:`plugrad.nn.functional.relu` (in place with ``inplace=True``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.ReLU()(plugrad.tensor([-1.0, 1.0]))
    tensor([0., 1.])
    >>> plugrad.nn.ReLU(inplace=True)
    ReLU(inplace=True)
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """Apply :func:`plugrad.nn.functional.gelu` (``approximate="none"`` or ``"tanh"``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.GELU(approximate="tanh")
    GELU(approximate='tanh')
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(_Elementwise):
    """Apply :func:`plugrad.nn.functional.silu`.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.SiLU()(plugrad.tensor([0.0]))
    tensor([0.])
    """

    _function = F.silu


class LeakyReLU(Module):
    """Apply :func:`plugrad.nn.functional.leaky_relu` with ``negative_slope``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.LeakyReLU(0.1)(plugrad.tensor([-1.0, 1.0]))
    tensor([-0.1000,  1.0000])
    """

    def __init__(self, negative_slope: float = 0.01) -> None:
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}"


class ELU(Module):
    """Apply :func:`plugrad.nn.functional.elu` with ``alpha``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.ELU()
    ELU(alpha=1.0)
    """

    def __init__(self, alpha: float = 1.0) -> None:
        super().__init__()
        self.alpha = alpha

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class Sigmoid(_Elementwise):
    """Apply :func:`plugrad.nn.functional.sigmoid`.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.Sigmoid()(plugrad.tensor([0.0]))
    tensor([0.5000])
    """

    _function = F.sigmoid


class Tanh(_Elementwise):
    """Apply :func:`plugrad.nn.functional.tanh`.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.Tanh()(plugrad.tensor([0.0]))
    tensor([0.])
    """

    _function = F.tanh


class Softmax(_AlongDim):
    """Apply :func:`plugrad.nn.functional.softmax` along ``dim``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.Softmax(dim=0)(plugrad.tensor([0.0, 0.0]))
    tensor([0.5000, 0.5000])
    """

    _function = F.softmax


class LogSoftmax(_AlongDim):
    """Apply :func:`plugrad.nn.functional.log_softmax` along ``dim``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.LogSoftmax(dim=0)(plugrad.tensor([0.0, 0.0]))
    tensor([-0.6931, -0.6931])
    """

    _function = F.log_softmax
