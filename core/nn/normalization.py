"""``LayerNorm`` and ``BatchNorm1d``/``BatchNorm2d``: normalization, scaled and shifted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import dtypes as _dtypes
from ..creation import ones, zeros
from ..errors import ShapeError
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import (
    Module,
    ParameterPlacement,
    add_weight_and_bias,
    with_placement,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["BatchNorm1d", "BatchNorm2d", "LayerNorm"]


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

    @with_placement
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
        affine_shape = shape if elementwise_affine else None
        add_weight_and_bias(self, affine_shape, affine_shape if bias else None, **placement)
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


class _BatchNorm(Module):
    """Batch normalization over axis 1 (see ``functional.batch_norm``), with running statistics.

    In training mode each batch is normalized with its own statistics and
    ``running_mean``/``running_var`` move toward them by ``momentum``
    (``None``: their plain average over every batch so far); in evaluation
    mode (``module.eval()``) the running statistics normalize. Without
    ``track_running_stats`` the batch's statistics are used in both modes.
    ``bias=False`` learns the scale only.
    """

    _input_ndims: tuple[int, ...]

    @with_placement
    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        *,
        bias: bool = True,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        shape = (num_features,)
        affine_shape = shape if affine else None
        add_weight_and_bias(self, affine_shape, affine_shape if bias else None, **placement)
        if track_running_stats:
            device, backend = placement.get("device"), placement.get("backend")
            dtype = placement.get("dtype")
            for name, fill in (("running_mean", zeros), ("running_var", ones)):
                buffer = fill(shape, dtype=dtype, device=device, backend=backend)
                self.register_buffer(name, buffer)
            count = zeros((), dtype=_dtypes.int64, device=device, backend=backend)
            self.register_buffer("num_batches_tracked", count)
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Set the running mean to zeros, the running variance to ones, the count to 0."""
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics; set the weight to ones and the bias to zeros."""
        self.reset_running_stats()
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in self._input_ndims:
            expected = " or ".join(f"{n}-d" for n in self._input_ndims)
            raise ShapeError(
                f"{type(self).__name__}: expected a {expected} input, got shape {input.shape}"
            )
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # the plain average of every batch so far
                momentum = 1.0 / int(self.num_batches_tracked)
        use_batch = self.training or not self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_batch,
            momentum,
            self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalization of ``(N, C)`` or ``(N, C, L)`` inputs over each channel ``C``.

    Examples
    --------
    >>> import plugrad
    >>> norm = plugrad.nn.BatchNorm1d(2)
    >>> norm
    BatchNorm1d(2, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    >>> y = norm(plugrad.tensor([[1.0, 2.0], [3.0, 6.0]]))
    >>> norm.running_mean
    tensor([0.2000, 0.4000])
    """

    _input_ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of ``(N, C, H, W)`` inputs over each channel ``C``.

    Examples
    --------
    >>> import plugrad
    >>> norm = plugrad.nn.BatchNorm2d(3).eval()
    >>> norm(plugrad.ones(1, 3, 2, 2)).shape
    (1, 3, 2, 2)
    """

    _input_ndims = (4,)
