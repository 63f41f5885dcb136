"""Normalization layers (batch, layer, group, instance, RMS, local response), scaled and shifted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import distributed as _dist
from .. import dtypes as _dtypes
from .. import ops as _ops
from ..creation import asarray, empty, full, ones, zeros
from ..distributed.call_agreement import agree
from ..distributed.communicator import ReduceOp
from ..errors import (
    ArgumentError,
    DistributedError,
    InvalidArgumentError,
    ShapeError,
    UninitializedParameterError,
)
from ..function import Function, once_differentiable
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
    "SyncBatchNorm",
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

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._input_ndims:
            expected = " or ".join(f"{n}-d" for n in self._input_ndims)
            raise ShapeError(
                f"{type(self).__name__}: expected a {expected} input, got shape {input.shape}"
            )

    def _check_input(self, input: Tensor) -> None:
        self._check_input_dim(input)
        if input.shape[1] != self.num_features:  # checked before the count moves
            raise ShapeError(
                f"{type(self).__name__}: expected {self.num_features} channels on axis 1, got "
                f"input of shape {input.shape}"
            )

    def _counts_batches(self) -> bool:
        return self.training and self.track_running_stats and self.num_batches_tracked is not None

    def _batch_momentum(self) -> float:
        """The momentum this batch moves the running statistics by; the batch is counted
        by :meth:`_count_batch` once it has been normalized, so a failing call counts none."""
        if self.momentum is not None:
            return self.momentum
        if self._counts_batches():  # the plain average of every batch so far, this one too
            return 1.0 / (int(self.num_batches_tracked) + 1)
        return 0.0

    def _count_batch(self) -> None:
        if self._counts_batches():
            with no_grad():
                self.num_batches_tracked.add_(1)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input(input)
        momentum = self._batch_momentum()
        # As PyTorch's: what the buffers are decides, not the flag (set False after the
        # layer was made, the running statistics stay and still normalize in eval mode).
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        running = not self.training or self.track_running_stats
        out = F.batch_norm(
            input,
            self.running_mean if running else None,
            self.running_var if running else None,
            self.weight,
            self.bias,
            use_batch,
            momentum,
            self.eps,
        )
        self._count_batch()
        return out

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


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose training statistics are those of the whole batch of every rank.

    With :mod:`plugrad.distributed` initialized on more than one process, each
    training forward pass normalizes each channel of the ``(N, C, ...)`` input
    with the mean and variance of the global batch, the concatenation of every
    rank's: each rank sends its count, mean and sum of squared deviations per
    channel (one all-gather), and every rank combines them (Chan's formula for
    the pooled variance, sound where the mean is large against the spread). The
    ranks may hold batches of different sizes, an empty one too. The running
    statistics move toward the global mean and the global unbiased variance, so
    they stay equal on every rank. Backward sums, across the ranks, each
    channel's sums of the output gradient and of its product with the
    normalized input (one all-reduce), which the input's gradient needs; the
    weight's and bias's gradients are this rank's (DistributedDataParallel
    averages them). Training then equals :class:`BatchNorm2d` (or 1d, 3d) on one
    process over the global batch.

    In evaluation mode, or without a process group, or in a group of one process,
    it is a batch norm of any input rank (no communication). Every rank must run
    each training forward pass, and the backward pass of each one whose input
    requires grad, in step with the others: these are collectives.

    Parameters
    ----------
    num_features : int
        ``C``, the channels of the input.
    eps, momentum, affine, track_running_stats
        As for :class:`BatchNorm1d` (``momentum=None``: the plain average of every
        batch so far).
    process_group : None
        The group whose batches are joined: only the default group (every process) is
        supported, so only ``None`` is accepted.
    device, dtype, backend
        Where the parameters and buffers are made.

    Examples
    --------
    One process (or evaluation mode) normalizes as BatchNorm does:

    >>> import plugrad
    >>> norm = plugrad.nn.SyncBatchNorm(2)
    >>> norm
    SyncBatchNorm(2, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
    >>> norm(plugrad.tensor([[1.0, 2.0], [3.0, 6.0]]))
    tensor([[-1.0000, -1.0000],
            [ 1.0000,  1.0000]], grad_fn=<AddBackward>)
    >>> norm.running_mean
    tensor([0.2000, 0.4000])

    Under ``mpiexec``, a model's batch norms become synchronized ones before it is
    wrapped for data-parallel training::

        model = nn.SyncBatchNorm.convert_sync_batchnorm(make_model())
        model = nn.parallel.DistributedDataParallel(model)
    """

    @with_placement
    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group: Any = None,
        *,
        bias: bool = True,
        **placement: Unpack[ParameterPlacement],
    ) -> None:
        if process_group is not None:
            raise InvalidArgumentError(
                f"SyncBatchNorm: process_group={process_group!r} is not supported: only the "
                "default group (every process) is; leave it at None"
            )
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, bias=bias, **placement
        )
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim < 2:
            raise ShapeError(
                f"SyncBatchNorm: expected an input of shape (N, C, ...), at least 2-d, got "
                f"shape {input.shape}"
            )

    def forward(self, input: Tensor) -> Tensor:
        if not self.training or not _joined_group():
            return super().forward(input)  # BatchNorm's: no other rank to join
        self._check_input(input)
        running = self.track_running_stats
        mean = self.running_mean if running else None
        var = self.running_var if running else None
        _check_sync_arguments(input, self.weight, self.bias, mean, var, self.eps)
        out = _SyncBatchNormFunction.apply(
            input, self.weight, self.bias, mean, var, float(self.eps), self._batch_momentum()
        )
        self._count_batch()
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every BatchNorm1d, 2d and 3d in it (itself too) made a SyncBatchNorm.

        Each SyncBatchNorm holds the batch norm's own parameters and buffers
        (the same tensors: an optimizer made before still updates them), its
        settings and its training mode. The containers are changed in place;
        the returned module is ``module`` itself unless ``module`` is a batch norm.

        Parameters
        ----------
        module : Module
            The model.
        process_group : None
            As for :class:`SyncBatchNorm`: only ``None`` is supported.

        Examples
        --------
        >>> from plugrad import nn
        >>> model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
        >>> model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        >>> model[1]
        SyncBatchNorm(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
        """
        if not isinstance(module, Module):
            raise ArgumentError(
                "SyncBatchNorm.convert_sync_batchnorm: module must be a plugrad.nn.Module, "
                f"got {type(module).__name__}"
            )
        if process_group is not None:
            raise InvalidArgumentError(
                "SyncBatchNorm.convert_sync_batchnorm: process_group="
                f"{process_group!r} is not supported: only the default group (every "
                "process) is; leave it at None"
            )
        for name, inner in module.named_modules():
            lazy = getattr(inner, "has_uninitialized_params", None)  # (a lazy layer's)
            if _converted(inner) and lazy is not None and lazy():
                raise UninitializedParameterError(
                    f"SyncBatchNorm.convert_sync_batchnorm: the lazy batch norm "
                    f"{name or 'module'} has not seen an input yet, so its size is unknown; "
                    "run the model once before converting it"
                )
        return _convert(module)


def _converted(module: Module) -> bool:
    """Whether convert_sync_batchnorm replaces ``module``."""
    return isinstance(module, (BatchNorm1d, BatchNorm2d, BatchNorm3d))


def _convert(module: Module) -> Module:
    result = module
    if _converted(module):
        result = SyncBatchNorm(
            module.num_features,
            module.eps,
            module.momentum,
            module.affine,
            module.track_running_stats,
            bias=module.bias is not None or not module.affine,
        )
        # The same tensors, not copies: the parameters keep their requires_grad, their
        # place in an optimizer made before, and their .grad.
        for name in ("weight", "bias"):
            setattr(result, name, getattr(module, name))
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            setattr(result, name, getattr(module, name))
        result.train(module.training)
    for name, child in module.named_children():
        converted = _convert(child)
        if converted is not child:
            setattr(result, name, converted)
    return result


def _joined_group() -> bool:
    """Whether this process is one of several in an initialized process group."""
    group = _dist.process_group._group
    return group is not None and group.communicator.size > 1


def _check_sync_arguments(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    eps: float,
) -> None:
    """What ``F.batch_norm`` refuses, refused before the count moves and anything is sent."""
    F._check_floating("SyncBatchNorm", input)
    F._check_same_dtype("SyncBatchNorm", input, weight, bias)
    F._check_running_statistics("SyncBatchNorm", running_mean=running_mean, running_var=running_var)
    F._check_per_channel("SyncBatchNorm", input.shape[1], input, running_mean=running_mean,
                         running_var=running_var, weight=weight, bias=bias)  # fmt: skip
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not eps > 0:
        raise InvalidArgumentError(
            f"SyncBatchNorm: eps must be a positive number in training, got {eps!r}"
        )


def _across_ranks(kind: str, tensor: Tensor) -> Tensor:
    """All-gather (``sync_batchnorm_statistics``: one row per rank) or sum
    (``sync_batchnorm_gradients``) ``tensor`` across the ranks."""
    group = _dist.process_group._require()
    communicator = group.communicator
    reason = communicator.supports(tensor._array)
    if reason is not None:
        raise DistributedError(
            f"SyncBatchNorm: the {group.backend!r} communication library cannot send a tensor "
            f"on {tensor.device}: {reason}; move the model and its inputs to a device it can send"
        )
    if group.check_collectives:
        agree(communicator, kind, tensor, None, 0)
    if kind == "sync_batchnorm_statistics":
        work = communicator.allgather(tensor._array)
    else:
        work = communicator.allreduce(tensor._array, ReduceOp.SUM)
    work.wait()
    result = tensor._array if work.output is None else work.output
    return asarray(result, device=tensor.device)


class _SyncBatchNormFunction(Function):
    """Batch normalization over the global batch: statistics gathered in forward,
    the input gradient's per-channel sums added up across ranks in backward."""

    @staticmethod
    def forward(
        ctx: Any,  # (holds this pass's statistics as attributes)
        input: Tensor,
        weight: Tensor | None,
        bias: Tensor | None,
        running_mean: Tensor | None,
        running_var: Tensor | None,
        eps: float,
        momentum: float,
    ) -> Tensor:
        # float16 is normalized in float32 and rounded once, as BatchNorm does.
        wide = input.dtype in _dtypes.half_floats
        x, w, b = F._in_float32(input, weight, bias) if wide else (input, weight, bias)
        channels = x.shape[1]
        axes = (0, *range(2, x.ndim))
        kept = (1, channels) + (1,) * (x.ndim - 2)
        count = x.size // channels if channels else 0
        if count:
            local_mean = _ops.mean(x, axis=axes)
            centered = x - _ops.reshape(local_mean, kept)
            local_m2 = _ops.sum(centered * centered, axis=axes)
        else:  # an empty share: it weighs nothing
            local_mean = zeros((channels,), dtype=x.dtype, device=x.device)
            local_m2 = zeros((channels,), dtype=x.dtype, device=x.device)
        own = full((1,), float(count), dtype=x.dtype, device=x.device)
        table = _across_ranks("sync_batchnorm_statistics", _ops.concat([local_mean, local_m2, own]))
        means, m2s = table[:, :channels], table[:, channels : 2 * channels]
        counts = table[:, 2 * channels :]
        total = round(float(_ops.sum(counts)))
        ctx.total, ctx.axes, ctx.kept, ctx.wide = total, axes, kept, wide
        if total == 0:  # every share empty: an empty result, statistics left alone
            ctx.save_for_backward(None, weight)
            return _cast_back(F._scale_shift(x * 0.0, w, b, kept), input)
        if total == 1:
            raise ShapeError(
                "SyncBatchNorm: training needs more than one value per channel in the batch of "
                f"all ranks together, got one (this rank's input has shape {input.shape})"
            )
        # Chan's formula: the pooled squared deviations are each share's own plus its
        # count times its mean's squared distance from the global mean.
        mean = _ops.sum(counts * means, axis=0) / total
        apart = means - mean
        m2 = _ops.sum(m2s, axis=0) + _ops.sum(counts * apart * apart, axis=0)
        invstd = 1.0 / _ops.sqrt(m2 / total + eps)
        if running_mean is not None and running_var is not None:
            F._moving_average_(running_mean, mean, momentum)
            F._moving_average_(running_var, m2 / (total - 1), momentum)
        ctx.mean, ctx.invstd = mean, invstd
        ctx.save_for_backward(input, weight)
        normalized = (x - _ops.reshape(mean, kept)) * _ops.reshape(invstd, kept)
        return _cast_back(F._scale_shift(normalized, w, b, kept), input)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        input, weight = ctx.saved_tensors
        needs_input, needs_weight, needs_bias = ctx.needs_input_grad[:3]
        axes, kept, total = ctx.axes, ctx.kept, ctx.total
        dy = _ops.astype(grad, _dtypes.float32) if ctx.wide else grad
        if total == 0:
            zero = _ops.sum(dy, axis=axes)  # (zeros: the batch is empty)
            return (
                grad * 0.0 if needs_input else None,
                zero if needs_weight else None,
                zero if needs_bias else None,
                None, None, None, None,
            )  # fmt: skip
        assert input is not None
        x = _ops.astype(input, _dtypes.float32) if ctx.wide else input
        invstd = _ops.reshape(ctx.invstd, kept)
        normalized = (x - _ops.reshape(ctx.mean, kept)) * invstd
        sum_dy = _ops.sum(dy, axis=axes)
        sum_dy_normalized = _ops.sum(dy * normalized, axis=axes)
        grad_input = None
        if needs_input:
            channels = sum_dy.shape[0]
            sums = _across_ranks(
                "sync_batchnorm_gradients", _ops.concat([sum_dy, sum_dy_normalized])
            )
            mean_dy = _ops.reshape(sums[:channels], kept) / total
            mean_dy_normalized = _ops.reshape(sums[channels:], kept) / total
            scale = invstd if weight is None else invstd * _ops.reshape(weight, kept)
            grad_input = scale * (dy - mean_dy - normalized * mean_dy_normalized)
        return (
            grad_input,
            sum_dy_normalized if needs_weight else None,
            sum_dy if needs_bias else None,
            None, None, None, None,
        )  # fmt: skip


def _cast_back(output: Tensor, input: Tensor) -> Tensor:
    return output if output.dtype is input.dtype else _ops.astype(output, input.dtype)


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
