"""Activation layers: ``ReLU``, ``GELU``, ``SiLU``, ``PReLU``, ``ELU``, ``Softmax``, ``GLU``, ...

A layer given ``inplace=True`` makes its input hold the result, as PyTorch's
do, with the version-counter checks of every in-place op.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from ..creation import empty
from ..errors import ArgumentError, InvalidArgumentError, ShapeError
from ..tensor import Tensor
from . import functional as F
from . import init as nn_init
from .module import Module, ParameterPlacement, check_placement, with_placement
from .parameter import Parameter

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "CELU",
    "ELU",
    "GELU",
    "GLU",
    "Hardshrink",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "LeakyReLU",
    "RReLU",
    "LogSigmoid",
    "LogSoftmax",
    "Mish",
    "PReLU",
    "ReLU",
    "ReLU6",
    "SELU",
    "SiLU",
    "Sigmoid",
    "Softmax",
    "Softmax2d",
    "Softmin",
    "Softplus",
    "Softshrink",
    "Softsign",
    "Tanh",
    "Tanhshrink",
    "Threshold",
]


class _Activation(Module):
    """An activation layer; its repr shows the settings named in ``_shown``.

    ``name=value`` each, then ``inplace=True`` when the layer works in place, as
    PyTorch's layers print (a layer without ``inplace`` never does).
    """

    _shown: ClassVar[tuple[str, ...]] = ()

    def extra_repr(self) -> str:
        settings = [f"{name}={getattr(self, name)}" for name in self._shown]
        if getattr(self, "inplace", False):
            settings.append("inplace=True")
        return ", ".join(settings)


class _Elementwise(_Activation):
    """A layer without settings that applies ``_function`` of :mod:`plugrad.nn.functional`."""

    _function: ClassVar[Callable[[Tensor], Tensor]]

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._function(input)


class _WithSettings(_Activation):
    """A layer applying ``_function(input, *settings)`` of :mod:`plugrad.nn.functional`.

    The settings are the attributes named in ``_shown``, then ``inplace`` where
    ``_takes_inplace``.
    """

    _function: ClassVar[Callable[..., Tensor]]
    _takes_inplace: ClassVar[bool] = True

    def forward(self, input: Tensor) -> Tensor:
        settings = [getattr(self, name) for name in self._shown]
        if self._takes_inplace:
            settings.append(self.inplace)
        return type(self)._function(input, *settings)


class _AlongDim(_WithSettings):
    """A layer that applies ``_function`` of :mod:`plugrad.nn.functional` along ``dim``."""

    _shown = ("dim",)
    _takes_inplace = False

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        if dim is None:
            # PyTorch picks a dim (with a deprecation warning) where plugrad asks for one.
            raise ArgumentError(
                f"{type(self).__name__}() needs dim=, the axis to normalize over (e.g. "
                f"{type(self).__name__}(dim=-1)); PyTorch's implicit choice is deprecated there"
            )
        self.dim = dim


class _InPlaceElementwise(_Activation):
    """A layer applying ``_function(input, inplace=...)`` of :mod:`plugrad.nn.functional`."""

    _function: ClassVar[Callable[..., Tensor]]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._function(input, inplace=self.inplace)


class _WithAlpha(_WithSettings):
    """A layer applying ``_function(input, alpha, inplace)``: ELU and CELU."""

    _shown = ("alpha",)

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace


class _Shrink(_WithSettings):
    """A layer applying ``_function(input, lambd)``; its repr is ``lambd`` alone."""

    _shown = ("lambd",)
    _takes_inplace = False

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return str(self.lambd)


class ReLU(_InPlaceElementwise):
    """Apply :func:`plugrad.nn.functional.relu` (in place with ``inplace=True``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.ReLU()(plugrad.tensor([-1.0, 1.0]))
    tensor([0., 1.])
    >>> plugrad.nn.ReLU(inplace=True)
    ReLU(inplace=True)
    """

    _function = F.relu


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
            raise InvalidArgumentError(
                f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}"
            )
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(_InPlaceElementwise):
    """Apply :func:`plugrad.nn.functional.silu` (in place with ``inplace=True``)."""

    _function = F.silu


class ReLU6(_InPlaceElementwise):
    """Apply :func:`plugrad.nn.functional.relu6` (in place with ``inplace=True``)."""

    _function = F.relu6


class Hardsigmoid(_InPlaceElementwise):
    """Apply :func:`plugrad.nn.functional.hardsigmoid` (in place with ``inplace=True``)."""

    _function = F.hardsigmoid


class Hardswish(_InPlaceElementwise):
    """Apply :func:`plugrad.nn.functional.hardswish` (in place with ``inplace=True``)."""

    _function = F.hardswish


class Mish(_InPlaceElementwise):
    """Apply :func:`plugrad.nn.functional.mish` (in place with ``inplace=True``)."""

    _function = F.mish


class SELU(_InPlaceElementwise):
    """Apply :func:`plugrad.nn.functional.selu` (in place with ``inplace=True``)."""

    _function = F.selu


class Hardtanh(_WithSettings):
    """Apply :func:`plugrad.nn.functional.hardtanh` between ``min_val`` and ``max_val``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.Hardtanh(-2.0, 2.0)
    Hardtanh(min_val=-2.0, max_val=2.0)
    """

    _function = F.hardtanh
    _shown = ("min_val", "max_val")

    def __init__(
        self,
        min_val: float = -1.0,
        max_val: float = 1.0,
        inplace: bool = False,
        min_value: float | None = None,
        max_value: float | None = None,
    ) -> None:
        super().__init__()
        # PyTorch's old names, still taken there with a warning.
        for old, given in (("min_value", min_value), ("max_value", max_value)):
            if given is not None:
                new = old.replace("value", "val")
                warnings.warn(
                    f"Hardtanh: {old} is deprecated and renamed to {new}", FutureWarning,
                    stacklevel=2,
                )  # fmt: skip
        min_val = min_val if min_value is None else min_value
        max_val = max_val if max_value is None else max_value
        if min_val > max_val:
            raise InvalidArgumentError(
                f"Hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})"
            )
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace


class Threshold(_WithSettings):
    """Apply :func:`plugrad.nn.functional.threshold`: ``value`` at or below ``threshold``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.Threshold(0.1, 20.0)(plugrad.tensor([0.0, 1.0]))
    tensor([20.,  1.])
    """

    _function = F.threshold
    _shown = ("threshold", "value")

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace


class Softplus(_WithSettings):
    """Apply :func:`plugrad.nn.functional.softplus` with ``beta`` and ``threshold``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.Softplus()
    Softplus(beta=1.0, threshold=20.0)
    """

    _function = F.softplus
    _shown = ("beta", "threshold")
    _takes_inplace = False

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold


class CELU(_WithAlpha):
    """Apply :func:`plugrad.nn.functional.celu` with ``alpha``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.CELU(2.0)
    CELU(alpha=2.0)
    """

    _function = F.celu


class LeakyReLU(_WithSettings):
    """Apply :func:`plugrad.nn.functional.leaky_relu` with ``negative_slope``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.LeakyReLU(0.1)(plugrad.tensor([-1.0, 1.0]))
    tensor([-0.1000,  1.0000])
    """

    _function = F.leaky_relu
    _shown = ("negative_slope",)

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace


class RReLU(_Activation):
    """Apply :func:`plugrad.nn.functional.rrelu`: random slopes in ``[lower, upper]`` in
    training, their mean in evaluation.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.RReLU(0.1, 0.3).eval()(plugrad.tensor([-1.0, 1.0]))
    tensor([-0.2000,  1.0000])
    """

    _shown = ("lower", "upper")

    def __init__(
        self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False
    ) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)


class ELU(_WithAlpha):
    """Apply :func:`plugrad.nn.functional.elu` with ``alpha``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.ELU()
    ELU(alpha=1.0)
    """

    _function = F.elu


class Sigmoid(_Elementwise):
    """Apply :func:`plugrad.nn.functional.sigmoid`."""

    _function = F.sigmoid


class Tanh(_Elementwise):
    """Apply :func:`plugrad.nn.functional.tanh`."""

    _function = F.tanh


class Softmax(_AlongDim):
    """Apply :func:`plugrad.nn.functional.softmax` along ``dim``."""

    _function = F.softmax


class LogSoftmax(_AlongDim):
    """Apply :func:`plugrad.nn.functional.log_softmax` along ``dim``."""

    _function = F.log_softmax


class Softmin(_AlongDim):
    """Apply :func:`plugrad.nn.functional.softmin` along ``dim``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.Softmin(dim=0)(plugrad.tensor([1.0, 2.0]))
    tensor([0.7311, 0.2689])
    """

    _function = F.softmin


class Softmax2d(Module):
    """Softmax over the channels of ``(N, C, H, W)`` or ``(C, H, W)`` input, at each position.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.Softmax2d()(plugrad.zeros((1, 2, 1, 1))).flatten()
    tensor([0.5000, 0.5000])
    """

    def forward(self, input: Tensor) -> Tensor:
        if not isinstance(input, Tensor) or input.ndim not in (3, 4):
            shape = input.shape if isinstance(input, Tensor) else type(input).__name__
            raise ShapeError(f"Softmax2d: takes (N, C, H, W) or (C, H, W) input, got {shape}")
        return F.softmax(input, dim=-3)


class Softsign(_Elementwise):
    """Apply :func:`plugrad.nn.functional.softsign`: ``input / (1 + |input|)``."""

    _function = F.softsign


class LogSigmoid(_Elementwise):
    """Apply :func:`plugrad.nn.functional.logsigmoid`: ``log(sigmoid(input))``, stably."""

    _function = F.logsigmoid


class Tanhshrink(_Elementwise):
    """Apply :func:`plugrad.nn.functional.tanhshrink`: ``input - tanh(input)``."""

    _function = F.tanhshrink


class Softshrink(_Shrink):
    """Apply :func:`plugrad.nn.functional.softshrink` with ``lambd``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.Softshrink(1.0)(plugrad.tensor([-2.0, 0.5, 3.0]))
    tensor([-1.,  0.,  2.])
    """

    _function = F.softshrink

    def __init__(self, lambd: float = 0.5) -> None:
        if lambd < 0:
            raise InvalidArgumentError(f"Softshrink: lambd must be >= 0, got {lambd!r}")
        super().__init__(lambd)


class Hardshrink(_Shrink):
    """Apply :func:`plugrad.nn.functional.hardshrink` with ``lambd``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.Hardshrink()
    Hardshrink(0.5)
    """

    _function = F.hardshrink


class GLU(_AlongDim):
    """Apply :func:`plugrad.nn.functional.glu`: the first half of ``dim`` gated by the second.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.GLU()(plugrad.ones((2, 6))).shape
    (2, 3)
    """

    _function = F.glu

    def __init__(self, dim: int = -1) -> None:
        super().__init__(dim)


class PReLU(Module):
    """Apply :func:`plugrad.nn.functional.prelu` with a learned ``weight``: one slope, or one
    per channel (dim 1 of the input).

    Parameters
    ----------
    num_parameters : int
        1, or the number of channels.
    init : float
        The initial slope (:meth:`reset_parameters` sets it again).
    device, dtype, backend : optional
        Where and of which dtype the weight is made (float32 by default).

    Examples
    --------
    >>> import plugrad
    >>> act = plugrad.nn.PReLU(3)
    >>> act
    PReLU(num_parameters=3)
    >>> act.weight
    Parameter containing:
    tensor([0.2500, 0.2500, 0.2500], requires_grad=True)
    >>> act(plugrad.tensor([[-4.0, 1.0, -2.0]]))
    tensor([[-1.0000,  1.0000, -0.5000]], grad_fn=<WhereBackward>)
    """

    @with_placement
    def __init__(
        self,
        num_parameters: int = 1,
        init: float = 0.25,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        check_placement(self, placement)
        if (
            not isinstance(num_parameters, int)
            or isinstance(num_parameters, bool)
            or (num_parameters < 1)
        ):
            raise InvalidArgumentError(
                f"PReLU: num_parameters must be a positive int, got {num_parameters!r}"
            )
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(empty((num_parameters,), **placement))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set every slope to ``init``."""
        nn_init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
