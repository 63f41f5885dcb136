"""Weight averaging, as PyTorch's ``torch.optim.swa_utils``: SWA and EMA of a model.

:class:`AveragedModel` keeps a copy of a model whose parameters (and, with
``use_buffers``, buffers) are a running average of the model's: the equal
average of stochastic weight averaging by default, or an exponential moving
average with :func:`get_ema_multi_avg_fn`. :class:`SWALR` anneals the learning
rate to a constant for the averaging phase, and :func:`update_bn` recomputes
batch-norm statistics for the averaged weights.

Examples
--------
An exponential moving average of a model's weights, as diffusion models keep:

>>> import plugrad
>>> from plugrad.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
>>> model = plugrad.nn.Linear(2, 1)
>>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
>>> with plugrad.no_grad():
...     _ = model.weight.fill_(1.0)
>>> ema.update_parameters(model)  # the first update copies
>>> with plugrad.no_grad():
...     _ = model.weight.fill_(2.0)
>>> ema.update_parameters(model)
>>> ema.module.weight
Parameter containing:
tensor([[1.1000, 1.1000]], requires_grad=True)
>>> int(ema.n_averaged)
2
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .. import ops as _ops
from ..creation import tensor
from ..errors import ArgumentError, InvalidArgumentError
from ..grad_mode import no_grad
from ..nn.module import Module
from ..nn.normalization import _BatchNorm, _InstanceNorm
from ..tensor import Tensor
from .lr_scheduler import LRScheduler, _per_group
from .optimizer import Optimizer

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]

AverageFunction = Callable[[Tensor, Tensor, Any], Tensor]
MultiAverageFunction = Callable[[Sequence[Tensor], Sequence[Tensor], Any], None]


def _checked_decay(decay: Any) -> float:
    if isinstance(decay, bool) or not isinstance(decay, (int, float)) or not 0 <= decay <= 1:
        raise InvalidArgumentError(f"decay must be a number in [0, 1], got {decay!r}")
    return float(decay)


def _floating(value: Tensor) -> bool:
    return value.dtype.kind in ("real floating", "complex floating")


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAverageFunction:
    """An in-place update of averaged tensors by an exponential moving average:
    ``averaged = decay * averaged + (1 - decay) * current``.

    For :class:`AveragedModel`'s ``multi_avg_fn``. Integer tensors (a buffer
    counting batches) are rounded back to their dtype, as PyTorch's.
    """
    decay = _checked_decay(decay)

    def ema_update(averaged: Sequence[Tensor], current: Sequence[Tensor], _: Any) -> None:
        with no_grad():
            for mean, value in zip(averaged, current, strict=True):
                if _floating(mean):
                    mean.copy_(_ops.lerp(mean, value, 1 - decay))
                else:
                    mean.copy_(mean * decay + value * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> MultiAverageFunction:
    """An in-place update of averaged tensors to the equal average of every model seen:
    ``averaged += (current - averaged) / (n_averaged + 1)``."""

    def swa_update(averaged: Sequence[Tensor], current: Sequence[Tensor], n_averaged: Any) -> None:
        count = float(n_averaged)
        with no_grad():
            for mean, value in zip(averaged, current, strict=True):
                if _floating(mean):
                    mean.copy_(_ops.lerp(mean, value, 1 / (count + 1)))
                else:
                    mean.copy_(mean + (value - mean) / (count + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> AverageFunction:
    """The exponential moving average of one tensor, returned (``avg_fn`` of
    :class:`AveragedModel`): ``decay * averaged + (1 - decay) * current``."""
    decay = _checked_decay(decay)

    def ema_update(averaged: Tensor, current: Tensor, n_averaged: Any) -> Tensor:
        with no_grad():
            return decay * averaged + (1 - decay) * current

    return ema_update


def get_swa_avg_fn() -> AverageFunction:
    """The equal average of one tensor, returned: ``averaged + (current - averaged) /
    (n_averaged + 1)``."""

    def swa_update(averaged: Tensor, current: Tensor, n_averaged: Any) -> Tensor:
        with no_grad():
            return averaged + (current - averaged) / (float(n_averaged) + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose weights are a running average of ``model``'s.

    Parameters
    ----------
    model : Module
        The model to average; it is deep-copied (the copy is :attr:`module`).
    device : str or Device, optional
        Where the copy lives (default: where ``model`` is).
    avg_fn : callable, optional
        ``avg_fn(averaged, current, n_averaged)`` returning the new average of
        one tensor (see :func:`get_ema_avg_fn`).
    multi_avg_fn : callable, optional
        ``multi_avg_fn(averaged_list, current_list, n_averaged)`` updating the
        averages in place (see :func:`get_ema_multi_avg_fn`). Without either,
        the equal average of every model given to :meth:`update_parameters`.
    use_buffers : bool, default False
        Average the buffers too (batch-norm statistics); otherwise they are
        copied from ``model`` at each update.

    Attributes
    ----------
    module : Module
    n_averaged : Tensor
        How many models have been averaged (an int64 buffer, int32 on JAX without x64;
        saved in the state dict).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.optim.swa_utils import AveragedModel
    >>> model = plugrad.nn.Linear(1, 1, bias=False)
    >>> swa = AveragedModel(model)
    >>> for value in (1.0, 2.0, 6.0):
    ...     with plugrad.no_grad():
    ...         _ = model.weight.fill_(value)
    ...     swa.update_parameters(model)
    >>> swa.module.weight.item(), swa(plugrad.ones(1, 1)).item()
    (3.0, 3.0)
    """

    n_averaged: Tensor

    def __init__(
        self,
        model: Module,
        device: Any = None,
        avg_fn: AverageFunction | None = None,
        multi_avg_fn: MultiAverageFunction | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if not isinstance(model, Module):
            raise ArgumentError(
                f"AveragedModel() takes a plugrad.nn.Module, got {type(model).__name__}"
            )
        if avg_fn is not None and multi_avg_fn is not None:
            raise InvalidArgumentError("AveragedModel() takes avg_fn or multi_avg_fn, not both")
        for name, function in (("avg_fn", avg_fn), ("multi_avg_fn", multi_avg_fn)):
            if function is not None and not callable(function):
                raise ArgumentError(f"{name} must be a function, got {type(function).__name__}")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        count_device = device
        if count_device is None:
            first = next(itertools.chain(self.module.parameters(), self.module.buffers()), None)
            count_device = None if first is None else first.device
        # (the device's default int: int64, or int32 on JAX without x64)
        self.register_buffer("n_averaged", tensor(0, device=count_device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = bool(use_buffers)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Call the averaged copy of the model."""
        return self.module(*args, **kwargs)

    def _averaged_tensors(self, model: Module) -> tuple[list[Tensor], list[Tensor]]:
        if self.use_buffers:
            mine = [*self.module.parameters(), *self.module.buffers()]
            theirs = [*model.parameters(), *model.buffers()]
        else:
            mine, theirs = list(self.module.parameters()), list(model.parameters())
        if len(mine) != len(theirs) or any(a.shape != b.shape for a, b in zip(mine, theirs)):
            raise InvalidArgumentError(
                "update_parameters() takes a model of the same architecture as the averaged "
                f"one: {len(theirs)} tensors of shapes {[tuple(t.shape) for t in theirs]}, "
                f"expected {len(mine)} of shapes {[tuple(t.shape) for t in mine]}"
            )
        return [t.detach() for t in mine], [t.detach().to(a.device) for a, t in zip(mine, theirs)]

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average (the first call copies them)."""
        averaged, current = self._averaged_tensors(model)
        count = int(self.n_averaged)
        with no_grad():
            if count == 0:
                for mean, value in zip(averaged, current):
                    mean.copy_(value)
            elif self.avg_fn is not None:
                for mean, value in zip(averaged, current):
                    mean.copy_(self.avg_fn(mean, value, self.n_averaged))
            else:
                update = self.multi_avg_fn or get_swa_multi_avg_fn()
                update(averaged, current, self.n_averaged)
            if not self.use_buffers:
                for mine, theirs in zip(self.module.buffers(), model.buffers(), strict=True):
                    mine.copy_(theirs.detach().to(mine.device))
            self.n_averaged.add_(1)


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the running statistics of ``model``'s batch-norm layers over ``loader``.

    Each layer's statistics are reset and become the equal average over every
    batch (``momentum=None`` for the pass; each layer's own momentum is restored
    after). A batch is a tensor, or a list or tuple whose first element (a
    tensor) goes to the model, as PyTorch's. The model is in training mode for
    the pass and back in its mode after; should a batch be refused or the model
    raise, the statistics are put back as they were. Nothing happens for a
    model without batch-norm layers.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.optim.swa_utils import update_bn
    >>> model = plugrad.nn.BatchNorm1d(1)
    >>> update_bn([plugrad.tensor([[1.0], [3.0]]), plugrad.tensor([[5.0], [7.0]])], model)
    >>> model.running_mean
    tensor([4.])
    """
    if not isinstance(model, Module):
        raise ArgumentError(f"update_bn() takes a plugrad.nn.Module, got {type(model).__name__}")
    momenta = {}
    kept: dict[Module, dict[str, Tensor]] = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            if not module.track_running_stats:
                continue
            kept[module] = {
                name: getattr(module, name).clone()
                for name in ("running_mean", "running_var", "num_batches_tracked")
            }
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    try:
        with no_grad():
            for index, batch in enumerate(loader):
                what = f"is a {type(batch).__name__}"
                if isinstance(batch, (list, tuple)) and batch:
                    batch = batch[0]
                    what += f" whose first element is a {type(batch).__name__}"
                if not isinstance(batch, Tensor):
                    raise ArgumentError(
                        f"update_bn(): batch {index} of the loader {what}; each batch must be "
                        "a Tensor, or a list or tuple whose first element is the model's "
                        "input Tensor (as (inputs, targets)); give a loader of those"
                    )
                if device is not None:
                    batch = batch.to(device)
                model(batch)
    except BaseException:
        # (the statistics were reset: a partial pass would leave them neither old nor new)
        with no_grad():
            for module, saved in kept.items():
                for name, value in saved.items():
                    getattr(module, name).copy_(value)
        raise
    finally:
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` over ``anneal_epochs`` epochs, then keep it.

    Parameters
    ----------
    optimizer : Optimizer
    swa_lr : float or list of float
        The learning rate of the averaging phase, for every group or one each.
    anneal_epochs : int, default 10
        How many epochs the annealing takes (0: at once).
    anneal_strategy : {"cos", "linear"}, default "cos"
    last_epoch : int, default -1
        See :class:`~plugrad.optim.lr_scheduler.LRScheduler`.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.tensor([1.0], requires_grad=True)
    >>> opt = plugrad.optim.SGD([w], lr=1.0)
    >>> schedule = plugrad.optim.swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=2,
    ...                                          anneal_strategy="linear")
    >>> rates = []
    >>> for _ in range(3):
    ...     opt.step()
    ...     schedule.step()
    ...     rates.append(round(schedule.get_last_lr()[0], 3))
    >>> rates
    [0.55, 0.1, 0.1]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float | Sequence[float],
        anneal_epochs: int = 10,
        anneal_strategy: str = "cos",
        last_epoch: int = -1,
    ) -> None:
        swa_lrs = _per_group("swa_lr", optimizer, swa_lr)
        if anneal_strategy not in ("cos", "linear"):
            raise InvalidArgumentError(
                f"anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}"
            )
        if (
            isinstance(anneal_epochs, bool)
            or not isinstance(anneal_epochs, int)
            or anneal_epochs < 0
        ):
            raise InvalidArgumentError(f"anneal_epochs must be an int >= 0, got {anneal_epochs!r}")
        for value, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = value
        self.anneal_epochs = anneal_epochs
        self._anneal_strategy = anneal_strategy
        super().__init__(optimizer, last_epoch)

    def _annealed(self, t: float) -> float:
        return t if self._anneal_strategy == "linear" else (1 - math.cos(math.pi * t)) / 2

    def _compute_lr(self) -> list[float]:
        # The rate of the epoch before is undone to the one annealing started from, so that
        # another schedule changing the rates meanwhile is taken up (as PyTorch's).
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        before = self._annealed(max(0.0, min(1.0, (step - 1) / span)))
        now = self._annealed(max(0.0, min(1.0, step / span)))
        rates = []
        for group in self.optimizer.param_groups:
            swa_lr = group["swa_lr"]
            start = swa_lr if before == 1 else (group["lr"] - before * swa_lr) / (1 - before)
            rates.append(swa_lr * now + start * (1 - now))
        return rates
