"""``Linear``: an affine map ``x @ weight.T + bias``; ``Bilinear``: ``x1 @ W @ x2 + b``;
``Identity``: no map at all."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module, ParameterPlacement, add_weight_and_bias, with_placement

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Bilinear", "Identity", "Linear"]


def _sizes(layer: str, **sizes: Any) -> list[int]:
    """The ``sizes`` as ints (a NumPy int too), each refused unless a non-negative int."""
    checked: list[int] = []
    for name, value in sizes.items():
        value = F._int_or_itself(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidArgumentError(f"{layer}: {name} must be a non-negative int, got {value!r}")
        checked.append(value)
    return checked


class Linear(Module):
    """Apply ``y = x @ weight.T + bias`` to the last axis of the input.

    The weight ``(out_features, in_features)`` is initialized as PyTorch does
    (:func:`~plugrad.nn.init.kaiming_uniform_` with ``a=sqrt(5)``, i.e.
    ``U(-1/sqrt(in_features), 1/sqrt(in_features))``) and so is the bias, from
    plugrad's random generators: :func:`plugrad.manual_seed` makes it reproducible.

    Parameters
    ----------
    in_features, out_features : int
    bias : bool
        Whether to learn an additive bias.
    device : str or Device, optional
    dtype : plugrad dtype, optional
        Of the parameters (float32 by default).
    backend : str, optional
        A backend name (its current device).

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> layer = plugrad.nn.Linear(3, 2)
    >>> layer
    Linear(in_features=3, out_features=2, bias=True)
    >>> layer.weight.shape, layer.bias.shape
    ((2, 3), (2,))
    >>> layer(plugrad.ones((4, 3))).shape
    (4, 2)
    """

    @with_placement
    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        in_features, out_features = _sizes(
            "Linear", in_features=in_features, out_features=out_features
        )
        self.in_features = in_features
        self.out_features = out_features
        add_weight_and_bias(
            self, (out_features, in_features), (out_features,) if bias else None,
            **placement,
        )  # fmt: skip
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw new initial values (PyTorch's defaults)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Identity(Module):
    """Return the input unchanged; arguments given to the constructor are ignored.

    A placeholder where a layer is optional: ``head = nn.Linear(...) if c else nn.Identity()``.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.ones(3)
    >>> plugrad.nn.Identity(54, unused="x")(x) is x
    True
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class Bilinear(Module):
    """Apply ``y[..., o] = x1 @ weight[o] @ x2 + bias[o]`` to two inputs.

    The weight ``(out_features, in1_features, in2_features)`` and the bias are
    drawn from ``U(-1/sqrt(in1_features), 1/sqrt(in1_features))``, as PyTorch's.

    Examples
    --------
    >>> import plugrad
    >>> layer = plugrad.nn.Bilinear(3, 4, 2)
    >>> layer
    Bilinear(in1_features=3, in2_features=4, out_features=2, bias=True)
    >>> layer(plugrad.ones((5, 3)), plugrad.ones((5, 4))).shape
    (5, 2)
    """

    @with_placement
    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        in1_features, in2_features, out_features = _sizes(
            "Bilinear", in1_features=in1_features, in2_features=in2_features,
            out_features=out_features,
        )  # fmt: skip
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        add_weight_and_bias(
            self, (out_features, in1_features, in2_features), (out_features,) if bias else None,
            **placement,
        )  # fmt: skip
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw new initial values (PyTorch's defaults)."""
        bound = 1 / math.sqrt(self.in1_features) if self.in1_features > 0 else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
