"""Normalization layers (batch, layer, group, instance, RMS, local response), scaled and shifted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..creation import empty, ones, zeros
from ..errors import InvalidArgumentError, ShapeError
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import (
    Module,
    ParameterPlacement,
    add_weight_and_bias,
    check_placement,
    with_placement,
)
from .parameter import Parameter

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "LayerNorm",
    "LocalResponseNorm",
    "RMSNorm",
]


def _as_shape(normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    normalized_shape = F._int_or_itself(normalized_shape)  # (a NumPy int too)
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(map(F._int_or_itself, normalized_shape))


class _NormBase(Module):
    """A normalization whose affine ``weight`` starts as ones and ``bias`` as zeros."""

    def reset_parameters(self) -> None:
        """Set the weight to ones and the bias to zeros."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def _add_affine(
        self,
        shape: tuple[int, ...],
        affine: bool,
        bias: bool,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        """A ``weight`` of ``shape`` if ``affine``, and a ``bias`` too if ``bias``; else None."""
        affine_shape = shape if affine else None
        add_weight_and_bias(self, affine_shape, affine_shape if bias else None, **placement)


class LayerNorm(_NormBase):
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
        self.normalized_shape = shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self._add_affine(shape, elementwise_affine, bias, **placement)
        self.reset_parameters()

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class _BatchNorm(_NormBase):
    """Batch normalization over axis 1 (see ``functional.batch_norm``), with running statistics.

    In training mode each batch is normalized with its own statistics and
    ``running_mean``/``running_var`` move toward them by ``momentum``
    (``None``: their plain average over every batch so far); in evaluation
    mode (``module.eval()``) the running statistics normalize. Without
    ``track_running_stats`` the batch's statistics are used in both modes.
    ``bias=False`` learns the scale only.
    """

    _input_ndims: tuple[int, ...]
    # Checkpoints saved before the count existed (version 1, or no version) load as in
    # PyTorch: it keeps its value. A version 2 checkpoint without it misses a key.
    _version = 2
    _optional_state = ("num_batches_tracked",)

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
        self._add_affine(shape, affine, bias, **placement)
        if track_running_stats:
            device, backend = placement.get("device"), placement.get("backend")
            dtype = placement.get("dtype")
            for name, fill in (("running_mean", zeros), ("running_var", ones)):
                buffer = fill(shape, dtype=dtype, device=device, backend=backend)
                self.register_buffer(name, buffer)
            # int64 as PyTorch's; int32 where the device has none (JAX without 64-bit types)
            count = zeros((), device=device, backend=backend)
            count = count.to(count.device.default_int_dtype)
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
        super().reset_parameters()

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in self._input_ndims:
            expected = " or ".join(f"{n}-d" for n in self._input_ndims)
            raise ShapeError(
                f"{type(self).__name__}: expected a {expected} input, got shape {input.shape}"
            )
        if input.shape[1] != self.num_features:  # checked before the count moves
            raise ShapeError(
                f"{type(self).__name__}: expected {self.num_features} channels on axis 1, got "
                f"input of shape {input.shape}"
            )
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # the plain average of every batch so far
                momentum = 1.0 / int(self.num_batches_tracked)
        # As PyTorch's: what the buffers are decides, not the flag (set False after the
        # layer was made, the running statistics stay and still normalize in eval mode).
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        running = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if running else None,
            self.running_var if running else None,
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


class BatchNorm3d(_BatchNorm):
    """Batch normalization of ``(N, C, D, H, W)`` inputs (volumes, clips) over each channel ``C``.

    Examples
    --------
    >>> import plugrad
    >>> norm = plugrad.nn.BatchNorm3d(2)
    >>> norm(plugrad.randn(2, 2, 3, 4, 4)).shape
    (2, 2, 3, 4, 4)
    """

    _input_ndims = (5,)


class GroupNorm(_NormBase):
    """Normalize over groups of channels (see ``functional.group_norm``).

    ``num_channels`` must be divisible by ``num_groups``. With ``affine`` a
    weight (ones) and, with ``bias``, a bias (zeros) per channel are learned.

    Examples
    --------
    >>> import plugrad
    >>> norm = plugrad.nn.GroupNorm(2, 4)
    >>> norm
    GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)
    >>> norm(plugrad.randn(3, 4, 5)).shape
    (3, 4, 5)
    """

    @with_placement
    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        *,
        bias: bool = True,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        num_groups, num_channels = F._int_or_itself(num_groups), F._int_or_itself(num_channels)
        if not isinstance(num_groups, int) or num_groups < 1 or num_channels % num_groups:
            raise InvalidArgumentError(
                f"GroupNorm: num_groups={num_groups!r} must be a positive int dividing "
                f"num_channels={num_channels}"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        self._add_affine((num_channels,), affine, bias, **placement)
        self.reset_parameters()

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class _InstanceNorm(_BatchNorm):
    """Instance normalization (see ``functional.instance_norm``) of each channel of each sample.

    PyTorch's defaults differ from batch normalization's: no affine parameters
    and no running statistics. With ``track_running_stats`` the running
    statistics are updated in training mode and normalize in evaluation mode
    (``num_batches_tracked`` is kept but, as in PyTorch, not counted).
    """

    @with_placement
    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        *,
        bias: bool = True,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, bias=bias, **placement
        )

    def forward(self, input: Tensor) -> Tensor:
        unbatched_ndim = self._input_ndims[0]
        if input.ndim not in self._input_ndims:
            raise ShapeError(
                f"{type(self).__name__}: expected a {unbatched_ndim}-d (unbatched) or "
                f"{unbatched_ndim + 1}-d input, got shape {input.shape}"
            )
        channels = input.shape[-unbatched_ndim]
        if channels != self.num_features and (self.affine or self.track_running_stats):
            raise ShapeError(
                f"{type(self).__name__}: expected {self.num_features} channels "
                f"(num_features) on axis {input.ndim - unbatched_ndim}, got input of shape "
                f"{input.shape}"
            )
        unbatched = input.ndim == unbatched_ndim
        out = F.instance_norm(
            input.unsqueeze(0) if unbatched else input,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            0.0 if self.momentum is None else self.momentum,
            self.eps,
        )
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of ``(N, C, L)`` or ``(C, L)`` inputs over each sequence.

    Examples
    --------
    >>> import plugrad
    >>> norm = plugrad.nn.InstanceNorm1d(2)
    >>> norm
    InstanceNorm1d(2, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)
    >>> norm(plugrad.tensor([[1.0, 3.0], [0.0, 4.0]]))
    tensor([[-1.0000,  1.0000],
            [-1.0000,  1.0000]])
    """

    _input_ndims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of ``(N, C, H, W)`` or ``(C, H, W)`` inputs over each image.

    Examples
    --------
    >>> import plugrad
    >>> norm = plugrad.nn.InstanceNorm2d(3, affine=True)
    >>> sorted(norm.state_dict())
    ['bias', 'weight']
    >>> norm(plugrad.randn(2, 3, 4, 4)).shape
    (2, 3, 4, 4)
    """

    _input_ndims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs over each volume.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.nn.InstanceNorm3d(3)(plugrad.randn(2, 3, 2, 4, 4)).shape
    (2, 3, 2, 4, 4)
    """

    _input_ndims = (4, 5)


class RMSNorm(Module):
    """Root-mean-square normalization over the trailing ``normalized_shape`` axes.

    See ``functional.rms_norm``; ``eps=None`` is the machine epsilon of the
    input's dtype. With ``elementwise_affine`` a weight (ones) of shape
    ``normalized_shape`` is learned.

    Examples
    --------
    >>> import plugrad
    >>> norm = plugrad.nn.RMSNorm(4)
    >>> norm
    RMSNorm((4,), eps=None, elementwise_affine=True)
    >>> norm(plugrad.tensor([[2.0, 2.0, 2.0, 2.0]])).detach()
    tensor([[1., 1., 1., 1.]])
    """

    @with_placement
    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float | None = None,
        elementwise_affine: bool = True,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        super().__init__()
        self.normalized_shape = shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        check_placement(self, placement)
        if elementwise_affine:  # a weight and, as in PyTorch, no bias
            self.weight = Parameter(empty(shape, **placement))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set the weight to ones."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:  # PyTorch's name here, where others say input
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class LocalResponseNorm(Module):
    """Normalize each element by its neighbours across channels.

    See ``functional.local_response_norm``.

    Examples
    --------
    >>> import plugrad
    >>> norm = plugrad.nn.LocalResponseNorm(2)
    >>> norm
    LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)
    >>> norm(plugrad.ones((1, 4, 3))).shape
    (1, 4, 3)
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
