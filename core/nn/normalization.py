"""``LayerNorm``: normalization over the trailing axes, with a learned scale and shift."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module, ParameterPlacement, add_weight_and_bias, check_placement

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["LayerNorm"]


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` axes (see ``functional.layer_norm``).

    With ``elementwise_affine`` a weight (ones) and, with ``bias``, a bias
    (zeros) of shape ``normalized_shape`` are learned.

    Examples
    --------
    >>> import plugrad
    >>> norm = plugrad.nn.LayerNorm(4)
    >>> norm
    LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)
    >>> y = norm(plugrad.tensor([[1.0, 2.0, 3.0, 4.0]]))
    >>> round(float(plugrad.mean(y)), 6), round(float(plugrad.std(y)), 3)
    (0.0, 1.0)
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        shape = (
            (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        )
        self.normalized_shape = shape
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            add_weight_and_bias(self, shape, shape if bias else None, **placement)
        else:
            check_placement(self, placement)
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set the weight to ones and the bias to zeros."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )
