"""Learning-rate schedules: they set ``group["lr"]`` of an optimizer's parameter groups.

Call ``scheduler.step()`` once per epoch (or per iteration, for warm-up),
*after* ``optimizer.step()``. Creating a scheduler records each group's
current learning rate as ``group["initial_lr"]`` and applies the schedule's
value for step 0. The schedules follow PyTorch's, including their recursive
form: each step scales the learning rate a group has now, so several
schedulers can act on one optimizer and a learning rate changed by hand is
carried forward. Counts (``step_size``, ``T_max``, ``total_iters``,
``step_size_up``, ``patience``, ...) are ints; a float with an integral value
(``StepLR(opt, 1.0)``) is taken as that int, as PyTorch takes it.

Examples
--------
A training loop that returns the learning rate of each epoch, and what it
gives for each schedule, starting from ``lr=1.0``:

>>> import plugrad
>>> from plugrad.optim import lr_scheduler
>>> def learning_rates(make_schedule, epochs=6):
...     w = plugrad.tensor([1.0], requires_grad=True)
...     opt = plugrad.optim.SGD([w], lr=1.0)
...     schedule = make_schedule(opt)
...     lrs = []
...     for epoch in range(epochs):
...         lrs.append(round(schedule.get_last_lr()[0], 4))
...         opt.zero_grad()
...         (w * w).sum().backward()
...         opt.step()
...         schedule.step()  # after opt.step()
...     return lrs
>>> learning_rates(lambda opt: lr_scheduler.StepLR(opt, step_size=2, gamma=0.5))
[1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
>>> learning_rates(lambda opt: lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma=0.5))
[1.0, 0.5, 0.5, 0.25, 0.25, 0.25]
>>> learning_rates(lambda opt: lr_scheduler.ExponentialLR(opt, gamma=0.5))
[1.0, 0.5, 0.25, 0.125, 0.0625, 0.0312]
>>> learning_rates(lambda opt: lr_scheduler.CosineAnnealingLR(opt, T_max=4))
[1.0, 0.8536, 0.5, 0.1464, 0.0, 0.1464]
>>> learning_rates(lambda opt: lr_scheduler.LambdaLR(opt, lambda epoch: 1 / (epoch + 1)))
[1.0, 0.5, 0.3333, 0.25, 0.2, 0.1667]
>>> learning_rates(lambda opt: lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=3))
[0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
>>> learning_rates(lambda opt: lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=6))
[0.04, 0.9944, 0.8117, 0.4626, 0.1335, 0.0]
>>> learning_rates(lambda opt: lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2))
[0.5, 0.5, 1.0, 1.0, 1.0, 1.0]
>>> learning_rates(lambda opt: lr_scheduler.MultiplicativeLR(opt, lambda epoch: 0.5))
[1.0, 0.5, 0.25, 0.125, 0.0625, 0.0312]
>>> learning_rates(lambda opt: lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0))
[1.0, 0.5625, 0.25, 0.0625, 0.0, 0.0]
>>> learning_rates(
...     lambda opt: lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2), epochs=7
... )
[1.0, 0.5, 1.0, 0.8536, 0.5, 0.1464, 1.0]
"""

from __future__ import annotations

import bisect
import collections
import math
import types
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ArgumentError, InvalidArgumentError, MissingStateError
from ..grad_mode import no_grad
from ..tensor import Tensor
from .checks import check_int, check_number, integral
from .optimizer import Optimizer

__all__ = [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]


def _set_lr(group: dict[str, Any], lr: float | Tensor) -> None:
    """Set ``group["lr"]``: a tensor learning rate is filled in place (whoever holds it sees
    the new one, and no other key comes to share it), as PyTorch's."""
    if isinstance(group["lr"], Tensor):
        with no_grad():
            group["lr"].fill_(float(lr))
    else:
        group["lr"] = lr


class LRScheduler:
    """Base class of the learning-rate schedulers.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer whose learning rates the schedule sets.
    last_epoch : int, default -1
        The index of the last epoch when resuming; ``-1`` starts afresh. When
        resuming, every group must already have ``"initial_lr"`` (load the
        optimizer's state dict first).

    Attributes
    ----------
    optimizer : Optimizer
    base_lrs : list of float
        Each group's ``initial_lr``.
    last_epoch : int
        How many times :meth:`step` has been called (after construction, 0).

    Notes
    -----
    A subclass implements ``get_lr()``, as in PyTorch, returning one learning
    rate per parameter group for the epoch ``self.last_epoch`` (it may read
    ``self.base_lrs`` and the groups' current ``"lr"``). The built-in schedules
    implement ``_compute_lr()`` instead, which their ``get_lr()`` returns, so
    that a subclass of one may override ``get_lr()`` and call ``super().get_lr()``.

    Examples
    --------
    A schedule of one's own, which halves the initial learning rates every epoch:

    >>> import plugrad
    >>> class Halving(plugrad.optim.lr_scheduler.LRScheduler):
    ...     def get_lr(self):
    ...         return [lr / 2**self.last_epoch for lr in self.base_lrs]
    >>> w = plugrad.tensor([1.0], requires_grad=True)
    >>> opt = plugrad.optim.SGD([w], lr=1.0)
    >>> schedule = Halving(opt)
    >>> opt.step()  # after a backward pass, in real training
    >>> schedule.step()
    >>> schedule.get_last_lr()
    [0.5]
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(type(self).__name__, optimizer)
        check_int("last_epoch", last_epoch, at_least=-1)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copied(group["lr"]))
        else:
            for number, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise MissingStateError(
                        f"parameter group {number} has no 'initial_lr', which resuming with "
                        f"last_epoch={last_epoch} needs; load the optimizer's state dict (saved "
                        "while a scheduler was attached) first, or start with last_epoch=-1"
                    )
        self.base_lrs: list[float] = [
            _copied(group["initial_lr"]) for group in optimizer.param_groups
        ]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._initial = True
        self.step()
        self._initial = False

    def _compute_lr(self) -> list[float]:
        """The learning rate of each group for epoch ``self.last_epoch``."""
        raise NotImplementedError(
            f"{type(self).__name__} does not implement get_lr(): a schedule returns from it one "
            "learning rate per parameter group for the epoch self.last_epoch"
        )

    #: True while step() computes the learning rates (get_lr() then does not warn).
    _stepping = False

    def get_lr(self) -> list[float]:
        """The learning rate of each group for epoch ``last_epoch``, as :meth:`step` computes it.

        What a subclass overrides to make a schedule of its own (see the class).
        Called outside :meth:`step`, it warns: the rates the groups have now are
        :meth:`get_last_lr`'s.
        """
        if not self._stepping:
            warnings.warn(
                "to get the learning rates the scheduler set last, use get_last_lr(); get_lr() "
                "computes those of the epoch last_epoch, for step()",
                UserWarning,
                stacklevel=2,
            )
        return self._compute_lr()

    def _lr_values(self) -> list[float]:
        """The rates step() sets: from get_lr() where a subclass overrides it."""
        self._stepping = True
        try:
            if type(self).get_lr is not LRScheduler.get_lr:
                return list(self.get_lr())
            return self._compute_lr()
        finally:
            del self._stepping

    def _group_lrs(self) -> list[float]:
        return [_copied(group["lr"]) for group in self.optimizer.param_groups]

    def _set_lrs(self, values: Sequence[float]) -> None:
        """Set each group's learning rate to its value in ``values``, and remember them.

        A tensor learning rate is filled in place (whoever holds it sees the new
        one), as PyTorch's.
        """
        groups = self.optimizer.param_groups
        values = list(values)
        if len(values) != len(groups):  # (zip() stopped at the shorter: a group unscheduled)
            raise InvalidArgumentError(
                f"{type(self).__name__} computed {len(values)} learning rates for the "
                f"optimizer's {len(groups)} parameter groups: was a group added after the "
                "scheduler was made? Make the scheduler after adding every group"
            )
        for group, lr in zip(groups, values):
            _set_lr(group, lr)
        self._last_lr = self._group_lrs()

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule by one epoch and set each group's learning rate.

        Call it after ``optimizer.step()``; calling it first skips the first
        value of the schedule, and a warning says so. ``step(epoch)`` jumps to
        ``epoch``, as PyTorch's deprecated form does (with a warning): from the
        schedule's closed form where it has one.
        """
        self._warn_if_early()
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            self._set_lrs(self._lr_values())
            return
        if isinstance(epoch, bool) or not isinstance(epoch, (int, float)) or not epoch >= 0:
            raise InvalidArgumentError(f"epoch must be a number >= 0, got {epoch!r}")
        warnings.warn(
            "scheduler.step(epoch) is deprecated (as in PyTorch); call step() once per epoch",
            UserWarning,
            stacklevel=2,
        )
        self.last_epoch = epoch
        # As PyTorch's: the closed form wherever the class has one (a subclass overriding
        # get_lr() too), which needs no learning rates of earlier epochs.
        closed_form = getattr(self, "_get_closed_form_lr", None)
        self._set_lrs(closed_form() if closed_form is not None else self._lr_values())

    def _warn_if_early(self) -> None:
        if self._step_count == 1 and self._optimizer_not_stepped():
            warnings.warn(
                f"{type(self).__name__}.step() was called before the optimizer's step(); call "
                "optimizer.step() first, otherwise the first learning rate of the schedule is "
                "skipped",
                UserWarning,
                stacklevel=3,
            )

    def _restart(self) -> None:
        """Go back to epoch 0 and set its learning rates (SequentialLR at a milestone).

        As PyTorch's, from the schedule's closed form where it has one
        (``_get_closed_form_lr``: the value for ``last_epoch`` from ``base_lrs``),
        which does not depend on the learning rates the groups have now.
        """
        self.last_epoch = 0
        closed_form = getattr(self, "_get_closed_form_lr", None)
        self._set_lrs(closed_form() if closed_form is not None else self._lr_values())

    def _initial_step(self) -> None:
        """Step as on construction: count from 0, with the initial form of the schedule."""
        self._step_count = 0
        self._initial = True
        try:
            self.step()
        finally:
            self._initial = False

    def _optimizer_not_stepped(self) -> bool:
        # Only the base class's step() counts calls; a subclass overriding it may not.
        optimizer = self.optimizer
        return type(optimizer).step is Optimizer.step and optimizer._step_count == 0

    def get_last_lr(self) -> list[float]:
        """Return the learning rate of each group as last set by this scheduler.

        Examples
        --------
        >>> import plugrad
        >>> w = plugrad.tensor([1.0], requires_grad=True)
        >>> opt = plugrad.optim.SGD([w], lr=0.1)
        >>> plugrad.optim.lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=2).get_last_lr()
        [0.05]
        """
        return [_copied(lr) for lr in self._last_lr]

    def state_dict(self) -> dict[str, Any]:
        """Return the scheduler's state (no reference to the optimizer) as a dict.

        Examples
        --------
        >>> import plugrad
        >>> w = plugrad.tensor([1.0], requires_grad=True)
        >>> opt = plugrad.optim.SGD([w], lr=0.1)
        >>> plugrad.optim.lr_scheduler.StepLR(opt, step_size=2).state_dict()["last_epoch"]
        0
        """
        return {
            key: list(value) if isinstance(value, list) else value
            for key, value in vars(self).items()
            if key not in self._not_saved
        }

    #: Attributes that state_dict() leaves out.
    _not_saved: tuple[str, ...] = ("optimizer", "_initial")

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict`; on error nothing changes.

        Examples
        --------
        >>> import plugrad
        >>> w = plugrad.tensor([1.0], requires_grad=True)
        >>> opt = plugrad.optim.SGD([w], lr=0.1)
        >>> schedule = plugrad.optim.lr_scheduler.StepLR(opt, step_size=2)
        >>> saved = schedule.state_dict()
        >>> opt.step(); schedule.step()
        >>> schedule.load_state_dict(saved)
        >>> schedule.last_epoch
        0
        """
        self._check_keys(state_dict)
        groups = len(self.optimizer.param_groups)
        for key in ("base_lrs", "_last_lr"):
            value = state_dict[key]
            if not isinstance(value, Sequence) or len(value) != groups:
                raise InvalidArgumentError(
                    f"{key} of the state dict must list one learning rate per parameter group "
                    f"({groups}), got {value!r}"
                )
        for key, value in state_dict.items():
            setattr(self, key, list(value) if key in ("base_lrs", "_last_lr") else value)

    def _check_keys(self, state_dict: Any, expected: set[str] | None = None) -> None:
        """Raise ``ValueError`` unless ``state_dict`` is a mapping with this scheduler's keys
        (``expected``, by default those of :meth:`state_dict`), and perhaps more: a subclass
        may set an attribute after it was made, as warm-up schedulers do, and PyTorch's
        dicts hold some of its own."""
        if expected is None:
            expected = set(self.state_dict())
        if not isinstance(state_dict, Mapping) or not expected <= set(state_dict):
            found = sorted(state_dict) if isinstance(state_dict, Mapping) else type(state_dict)
            raise InvalidArgumentError(
                f"{type(self).__name__}.load_state_dict() needs the keys {sorted(expected)}, "
                f"got {found}; was the dict saved from another kind of scheduler?"
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(last_epoch={self.last_epoch}, last_lr={self._last_lr})"


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs.

    Parameters
    ----------
    optimizer : Optimizer
    step_size : int
        Epochs between two decays (positive).
    gamma : float, default 0.1
        Decay factor.
    last_epoch : int, default -1
        See :class:`LRScheduler`.

    Examples
    --------
    ``StepLR(opt, step_size=2, gamma=0.5)`` halves the learning rate every second
    epoch; the example of :mod:`plugrad.optim.lr_scheduler` lists its first values.
    """

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        step_size = integral("step_size", step_size, at_least=1)
        check_number("gamma", gamma)
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _compute_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each epoch listed in ``milestones``.

    Parameters
    ----------
    optimizer : Optimizer
    milestones : sequence of int
        The epochs of the decays (a milestone listed twice decays twice).
    gamma : float, default 0.1
        Decay factor, applied at each milestone.
    last_epoch : int, default -1
        See :class:`LRScheduler`.

    Examples
    --------
    ``MultiStepLR(opt, milestones=[1, 3], gamma=0.5)`` halves the learning rate at
    epochs 1 and 3; the example of :mod:`plugrad.optim.lr_scheduler` lists its values.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Sequence[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:
        check_number("gamma", gamma)
        #: How many decays each milestone epoch makes (a Counter, as PyTorch keeps it, so that
        #: state dicts load both ways).
        self.milestones = _milestone_counts(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _compute_lr(self) -> list[float]:
        decays = self.milestones[self.last_epoch]
        return [lr * self.gamma**decays for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        decays = bisect.bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma**decays for base in self.base_lrs]

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Load a state from :meth:`state_dict` (or PyTorch's), whose milestones may be a
        Counter (PyTorch's and this one's) or a list of epochs."""
        self._check_keys(state_dict)
        counts = _milestone_counts(state_dict["milestones"])  # checked before anything is set
        super().load_state_dict({**state_dict, "milestones": counts})


def _milestone_counts(milestones: Any) -> collections.Counter[int]:
    """Milestone epochs (a sequence, a listed twice decays twice, or a mapping of epoch to
    count) as a Counter, each checked."""
    if isinstance(milestones, Mapping):
        listed = list(collections.Counter(milestones).elements())
        for count in milestones.values():
            check_int("each milestone's count", count, at_least=0)
    else:
        listed = list(milestones)  # (a generator was used up by the checks: no decay)
    for milestone in listed:
        check_int("each milestone", milestone, at_least=0)
    return collections.Counter(sorted(listed))


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every epoch.

    Parameters
    ----------
    optimizer : Optimizer
    gamma : float
        Decay factor.
    last_epoch : int, default -1
        See :class:`LRScheduler`.

    Examples
    --------
    The example of :mod:`plugrad.optim.lr_scheduler` lists the learning rates of
    ``ExponentialLR(opt, gamma=0.5)``: halved at every epoch.
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        check_number("gamma", gamma)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def _compute_lr(self) -> list[float]:
        if self._initial:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    r"""Anneal the learning rate from its initial value to ``eta_min`` along a cosine.

    .. math::

        \eta_t = \eta_{\min} + \frac{\eta_0 - \eta_{\min}}{2}
                 \left(1 + \cos\frac{t\pi}{T_{\max}}\right)

    computed recursively, as PyTorch does: past ``T_max`` the value keeps
    following the cosine (it rises again), and a learning rate changed in
    between is carried forward.

    Parameters
    ----------
    optimizer : Optimizer
    T_max : int
        Epochs of one half period (positive).
    eta_min : float, default 0
        The lowest learning rate.
    last_epoch : int, default -1
        See :class:`LRScheduler`.

    Examples
    --------
    ``CosineAnnealingLR(opt, T_max=4)`` reaches ``eta_min`` (0) at epoch 4 and
    rises again; the example of :mod:`plugrad.optim.lr_scheduler` lists its values.
    """

    def __init__(
        self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        T_max = integral("T_max", T_max, at_least=1)
        check_number("eta_min", eta_min)
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def _compute_lr(self) -> list[float]:
        epoch, period, low = self.last_epoch, self.T_max, self.eta_min
        if self._initial:
            return self._group_lrs()
        if (epoch - 1 - period) % (2 * period) == 0:
            # Leaving the minimum: the recursive ratio below would divide by zero.
            rise = (1 - math.cos(math.pi / period)) / 2
            return [lr + (base - low) * rise for lr, base in zip(self._group_lrs(), self.base_lrs)]
        ratio = (1 + math.cos(math.pi * epoch / period)) / (
            1 + math.cos(math.pi * (epoch - 1) / period)
        )
        return [ratio * (lr - low) + low for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        cosine = 1 + math.cos(math.pi * self.last_epoch / self.T_max)
        return [self.eta_min + (base - self.eta_min) * cosine / 2 for base in self.base_lrs]


def _keeps_attributes(function: object) -> bool:
    """Whether ``function`` is a callable object whose attributes a state dict saves."""
    return not isinstance(function, types.FunctionType) and hasattr(function, "__dict__")


class _FunctionScheduler(LRScheduler):
    """What LambdaLR and MultiplicativeLR share: a function of the epoch per group."""

    _not_saved = ("optimizer", "_initial", "lr_lambdas")

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
        last_epoch: int = -1,
    ) -> None:
        self.lr_lambdas = _functions_per_group(type(self).__name__, optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """The state, with ``lr_lambdas``: for each group ``None`` where its function is a
        function (code, which is not saved), else a copy of the callable object's
        attributes, as PyTorch saves them (a decay factor kept on the object)."""
        state = super().state_dict()
        state["lr_lambdas"] = [
            dict(vars(f)) if _keeps_attributes(f) else None for f in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict` (PyTorch's too); the attributes saved
        for callable objects are set on this scheduler's objects. On error nothing changes."""
        if not isinstance(state_dict, Mapping):
            super().load_state_dict(state_dict)  # raises, saying what it needs
        saved = state_dict.get("lr_lambdas", [None] * len(self.lr_lambdas))
        if (
            not isinstance(saved, Sequence)
            or len(saved) != len(self.lr_lambdas)
            or not all(entry is None or isinstance(entry, Mapping) for entry in saved)
        ):
            raise InvalidArgumentError(
                "lr_lambdas of the state dict must hold, per parameter group "
                f"({len(self.lr_lambdas)}), None or a dict of a callable object's attributes; "
                f"got {saved!r}"
            )
        for function, entry in zip(self.lr_lambdas, saved):
            if entry is not None and not _keeps_attributes(function):
                raise InvalidArgumentError(
                    f"the state dict holds attributes for lr_lambda {function!r}, which keeps "
                    "none; build the scheduler with the callable object it was saved from"
                )
        rest = {key: value for key, value in state_dict.items() if key != "lr_lambdas"}
        super().load_state_dict(rest)
        for function, entry in zip(self.lr_lambdas, saved):
            if entry is not None:
                vars(function).update(entry)

    def _check_keys(self, state_dict: Any, expected: set[str] | None = None) -> None:
        # Called with the saved function's key taken out: the keys of the rest.
        expected = set(super().state_dict())
        if not isinstance(state_dict, Mapping) or set(state_dict) != expected:
            super()._check_keys(state_dict, expected)


class LambdaLR(_FunctionScheduler):
    """Set the learning rate to the initial one times ``lr_lambda(epoch)``.

    Parameters
    ----------
    optimizer : Optimizer
    lr_lambda : callable or list of callable
        A function of the epoch index returning a factor, or one such
        function per parameter group.
    last_epoch : int, default -1
        See :class:`LRScheduler`.

    Notes
    -----
    :meth:`state_dict` does not include the functions (they are code, which
    saved files never contain); give the same ones when building the
    scheduler that loads the state. The attributes of a callable object
    (an instance with ``__call__``) are saved and restored, as in PyTorch.

    Examples
    --------
    ``LambdaLR(opt, lambda epoch: 1 / (epoch + 1))`` divides the initial learning
    rate by the epoch's number, counting from 1; the example of
    :mod:`plugrad.optim.lr_scheduler` lists its values.
    """

    def _compute_lr(self) -> list[float]:
        return [base * f(self.last_epoch) for f, base in zip(self.lr_lambdas, self.base_lrs)]


class LinearLR(LRScheduler):
    """Scale the learning rate linearly from ``start_factor`` to ``end_factor`` (warm-up).

    Over the first ``total_iters`` steps the factor goes linearly from
    ``start_factor`` to ``end_factor``; afterwards it stays at ``end_factor``.

    Parameters
    ----------
    optimizer : Optimizer
    start_factor : float, default 1/3
        Factor at epoch 0, in ``(0, 1]``.
    end_factor : float, default 1.0
        Factor from epoch ``total_iters`` on, in ``[0, 1]``.
    total_iters : int, default 5
        Number of steps the change takes.
    last_epoch : int, default -1
        See :class:`LRScheduler`.

    Examples
    --------
    ``LinearLR(opt, start_factor=0.25, total_iters=3)`` warms up over three epochs,
    from a quarter of the learning rate to all of it; the example of
    :mod:`plugrad.optim.lr_scheduler` lists its values.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        check_number("start_factor", start_factor)
        check_number("end_factor", end_factor)
        if not 0 < start_factor <= 1:
            raise InvalidArgumentError(f"start_factor must be in (0, 1], got {start_factor!r}")
        if not 0 <= end_factor <= 1:
            raise InvalidArgumentError(f"end_factor must be in [0, 1], got {end_factor!r}")
        total_iters = integral("total_iters", total_iters, at_least=1)
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def _compute_lr(self) -> list[float]:
        epoch, start, end = self.last_epoch, self.start_factor, self.end_factor
        if epoch == 0:
            return [lr * start for lr in self._group_lrs()]
        if self._initial or epoch > self.total_iters:
            return self._group_lrs()
        # The factor for this epoch divided by the one for the previous epoch.
        ratio = 1.0 + (end - start) / (self.total_iters * start + (epoch - 1) * (end - start))
        return [lr * ratio for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        start, end, total = self.start_factor, self.end_factor, self.total_iters
        done = min(total, self.last_epoch)
        return [base * (start + (end - start) * done / total) for base in self.base_lrs]


#: The order in which OneCycleLR keeps a phase's fields, as PyTorch's dicts name them.
_PYTORCH_PHASE_KEYS = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")


class OneCycleLR(LRScheduler):
    """The one-cycle policy: the learning rate rises to ``max_lr`` and falls far below it.

    Stepped once per batch, for ``total_steps`` steps (or ``epochs *
    steps_per_epoch``). The learning rate starts at ``max_lr / div_factor``,
    reaches ``max_lr`` after ``pct_start`` of the steps, then anneals to
    ``max_lr / div_factor / final_div_factor``; with ``three_phase`` it first
    comes back down to the start before the final annealing. Annealing is by
    cosine (``"cos"``) or linear (``"linear"``). With ``cycle_momentum`` the
    momentum (SGD's ``momentum``, Adam's first beta) moves the opposite way,
    between ``max_momentum`` and ``base_momentum``. As PyTorch's, it computes
    each step's value from the step number, not from the current one.

    Examples
    --------
    The example of :mod:`plugrad.optim.lr_scheduler` lists the learning rates of
    ``OneCycleLR(opt, max_lr=1.0, total_steps=6)``. The momentum moves the other way:

    >>> import plugrad
    >>> w = plugrad.tensor([1.0], requires_grad=True)
    >>> opt = plugrad.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> schedule = plugrad.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=6)
    >>> opt.param_groups[0]["momentum"]  # max_momentum, while the learning rate starts low
    0.95
    >>> opt.step(); schedule.step()
    >>> round(opt.param_groups[0]["momentum"], 4)  # near base_momentum, near max_lr
    0.8506
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | Sequence[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | Sequence[float] = 0.85,
        max_momentum: float | Sequence[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise ArgumentError(
                f"OneCycleLR schedules a plugrad.optim.Optimizer, got {optimizer!r}"
            )
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise InvalidArgumentError(
                    "OneCycleLR needs total_steps, or epochs and steps_per_epoch"
                )
            check_int("epochs", epochs, at_least=1)
            check_int("steps_per_epoch", steps_per_epoch, at_least=1)
            total_steps = epochs * steps_per_epoch
        check_int("total_steps", total_steps, at_least=1)
        check_number("pct_start", pct_start)
        if pct_start > 1:
            raise InvalidArgumentError(f"pct_start must be between 0 and 1, got {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise InvalidArgumentError(
                f"anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}"
            )
        groups = optimizer.param_groups
        max_lrs = _per_group("max_lr", optimizer, max_lr, Sequence)
        self.total_steps = total_steps
        self.anneal_strategy = anneal_strategy
        self.cycle_momentum = cycle_momentum
        self._uses_betas = "betas" in optimizer.defaults
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and not self._uses_betas:
                raise InvalidArgumentError(
                    "cycle_momentum=True needs an optimizer with momentum or betas; pass "
                    "cycle_momentum=False"
                )
            base = _per_group("base_momentum", optimizer, base_momentum, Sequence)
            peak = _per_group("max_momentum", optimizer, max_momentum, Sequence)
        if last_epoch == -1:
            for number, group in enumerate(groups):
                group["initial_lr"] = max_lrs[number] / div_factor
                group["max_lr"] = max_lrs[number]
                group["min_lr"] = group["initial_lr"] / final_div_factor
                if cycle_momentum:
                    group["base_momentum"], group["max_momentum"] = base[number], peak[number]
                    _set_momentum(group, peak[number], self._uses_betas)
        rise_end = float(pct_start * total_steps) - 1
        if three_phase:
            self._phases = [
                (rise_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (2 * rise_end, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                (total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._phases = [
                (rise_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        super().__init__(optimizer, last_epoch)

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict`, or by PyTorch's OneCycleLR (whose
        phases are dicts, its annealing and beta flags named otherwise); all or nothing."""
        if isinstance(state_dict, Mapping) and "_schedule_phases" in state_dict:
            state = dict(state_dict)
            try:
                state["_phases"] = [
                    tuple(phase[key] for key in _PYTORCH_PHASE_KEYS)
                    for phase in state.pop("_schedule_phases")
                ]
            except (TypeError, KeyError) as error:
                raise InvalidArgumentError(
                    f"the state dict's '_schedule_phases' must be PyTorch's dicts with the "
                    f"keys {list(_PYTORCH_PHASE_KEYS)}: {error!r}"
                ) from None
            if "_anneal_func_type" in state:
                state["anneal_strategy"] = state.pop("_anneal_func_type")
            if "use_beta1" in state:
                state["_uses_betas"] = state.pop("use_beta1")
            state_dict = state
        super().load_state_dict(state_dict)

    def _anneal(self, start: float, end: float, fraction: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * fraction) + 1)
        return (end - start) * fraction + start

    def _compute_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise InvalidArgumentError(
                f"OneCycleLR was stepped {step} times, past its total_steps={self.total_steps}; "
                "give total_steps (or epochs and steps_per_epoch) for the whole run"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for index, (end_step, lr_from, lr_to, m_from, m_to) in enumerate(self._phases):
                if step <= end_step or index == len(self._phases) - 1:
                    fraction = (step - start_step) / (end_step - start_step)
                    lrs.append(self._anneal(group[lr_from], group[lr_to], fraction))
                    if self.cycle_momentum:
                        momentum = self._anneal(group[m_from], group[m_to], fraction)
                        _set_momentum(group, momentum, self._uses_betas)
                    break
                start_step = end_step
        return lrs


class ConstantLR(LRScheduler):
    """Multiply the learning rate by ``factor`` for the first ``total_iters`` epochs.

    Parameters
    ----------
    optimizer : Optimizer
    factor : float, default 1/3
        The factor, in ``(0, 1]``.
    total_iters : int, default 5
        The epoch at which the learning rate goes back to its initial value.
    last_epoch : int, default -1
        See :class:`LRScheduler`.

    Examples
    --------
    ``ConstantLR(opt, factor=0.5, total_iters=2)`` halves the learning rate for two
    epochs; the example of :mod:`plugrad.optim.lr_scheduler` lists its values.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        check_number("factor", factor)
        if not 0 < factor <= 1:
            raise InvalidArgumentError(f"factor must be in (0, 1], got {factor!r}")
        total_iters = integral("total_iters", total_iters, at_least=0)
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def _compute_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._group_lrs()]
        if self.last_epoch != self.total_iters:
            return self._group_lrs()
        return [lr * (1.0 / self.factor) for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        reached = self.last_epoch >= self.total_iters
        return [base * (self.factor + reached * (1 - self.factor)) for base in self.base_lrs]


class MultiplicativeLR(_FunctionScheduler):
    """Multiply the learning rate by ``lr_lambda(epoch)`` at every epoch.

    Parameters
    ----------
    optimizer : Optimizer
    lr_lambda : callable or list of callable
        A function of the epoch index returning the factor for that epoch,
        or one such function per parameter group.
    last_epoch : int, default -1
        See :class:`LRScheduler`.

    Notes
    -----
    As for :class:`LambdaLR`, :meth:`state_dict` does not include the functions
    (the attributes of callable objects it does).

    Examples
    --------
    ``MultiplicativeLR(opt, lambda epoch: 0.5)`` halves the learning rate at every
    epoch; the example of :mod:`plugrad.optim.lr_scheduler` lists its values.
    """

    def _compute_lr(self) -> list[float]:
        if self._initial:
            return self._group_lrs()
        return [lr * f(self.last_epoch) for f, lr in zip(self.lr_lambdas, self._group_lrs())]


class PolynomialLR(LRScheduler):
    """Decay the learning rate to 0 over ``total_iters`` epochs along a polynomial.

    The factor at epoch :math:`t` is :math:`(1 - \\min(t, T) / T)^{p}`, with
    ``total_iters`` :math:`T` and ``power`` :math:`p`, computed recursively.

    Parameters
    ----------
    optimizer : Optimizer
    total_iters : int, default 5
        Epochs of the decay (positive).
    power : float, default 1.0
        The power of the polynomial.
    last_epoch : int, default -1
        See :class:`LRScheduler`.

    Examples
    --------
    ``PolynomialLR(opt, total_iters=4, power=2.0)`` decays the learning rate to 0 over
    four epochs along a parabola; the example of :mod:`plugrad.optim.lr_scheduler`
    lists its values.
    """

    def __init__(
        self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1
    ) -> None:
        total_iters = integral("total_iters", total_iters, at_least=1)
        check_number("power", power)
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def _compute_lr(self) -> list[float]:
        epoch, total = self.last_epoch, self.total_iters
        if self._initial or epoch > total:
            return self._group_lrs()
        factor = ((1.0 - epoch / total) / (1.0 - (epoch - 1) / total)) ** self.power
        return [lr * factor for lr in self._group_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (1.0 - done) ** self.power for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    r"""Cosine annealing with warm restarts (SGDR, Loshchilov & Hutter, 2017).

    .. math::

        \eta_t = \eta_{\min} + \frac{\eta_0 - \eta_{\min}}{2}
                 \left(1 + \cos\frac{T_{cur}\,\pi}{T_i}\right)

    where :math:`T_{cur}` counts the epochs since the last restart and the
    :math:`i`-th period lasts :math:`T_i = T_0\,T_{mult}^i` epochs.

    Parameters
    ----------
    optimizer : Optimizer
    T_0 : int
        Epochs of the first period (positive).
    T_mult : int, default 1
        Factor by which each period is longer than the one before (at least 1).
    eta_min : float, default 0
        The lowest learning rate.
    last_epoch : int, default -1
        See :class:`LRScheduler`.

    Notes
    -----
    As PyTorch's, :meth:`step` also takes the epoch, possibly fractional, to
    step within an epoch: ``scheduler.step(epoch + batch / batches)``.

    Examples
    --------
    ``CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)`` restarts at epochs 2 and 6,
    after periods of 2 and 4 epochs; the example of :mod:`plugrad.optim.lr_scheduler`
    lists its values.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,
        T_mult: int = 1,
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        check_int("T_0", T_0, at_least=1)
        check_int("T_mult", T_mult, at_least=1)
        check_number("eta_min", eta_min)
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur: float = last_epoch
        super().__init__(optimizer, last_epoch)

    def _compute_lr(self) -> list[float]:
        cosine = 1 + math.cos(math.pi * self.T_cur / self.T_i)
        return [self.eta_min + (base - self.eta_min) * cosine / 2 for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advance by one epoch, or go to ``epoch`` (a number >= 0, possibly fractional).

        Examples
        --------
        >>> import plugrad
        >>> w = plugrad.tensor([1.0], requires_grad=True)
        >>> opt = plugrad.optim.SGD([w], lr=1.0)
        >>> schedule = plugrad.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=4)
        >>> opt.step()
        >>> schedule.step(2.0)  # half way through the first period
        >>> schedule.get_last_lr()
        [0.5]
        """
        if epoch is not None:
            check_number("epoch", epoch)
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        elif epoch >= self.T_0:
            if self.T_mult == 1:
                self.T_cur = epoch % self.T_0
            else:
                n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                self.T_i = self.T_0 * self.T_mult**n
        else:
            self.T_i = self.T_0
            self.T_cur = epoch
        self._warn_if_early()
        self._step_count += 1
        self.last_epoch = math.floor(epoch)
        self._set_lrs(self._lr_values())


class CyclicLR(LRScheduler):
    """Cycle the learning rate between ``base_lr`` and ``max_lr`` (Smith, 2017).

    Stepped once per batch. Each cycle rises linearly from ``base_lr`` to
    ``max_lr`` over ``step_size_up`` steps and comes back over
    ``step_size_down``. The amplitude is scaled per cycle (``"triangular"``:
    constant; ``"triangular2"``: halved every cycle) or per step
    (``"exp_range"``: ``gamma ** step``), or by ``scale_fn``. With
    ``cycle_momentum`` the momentum (SGD's ``momentum``, the first beta of the
    Adam family) moves the other way, between ``max_momentum`` and
    ``base_momentum``.

    Parameters
    ----------
    optimizer : Optimizer
    base_lr : float or list of float
        The lower bound of the cycle, for all groups or one per group; also the
        initial learning rate.
    max_lr : float or list of float
        The upper bound of the cycle (before scaling).
    step_size_up : int, default 2000
        Steps of the rising half of a cycle.
    step_size_down : int, optional
        Steps of the falling half, ``step_size_up`` by default.
    mode : {"triangular", "triangular2", "exp_range"}
        The amplitude's scaling, unless ``scale_fn`` is given.
    gamma : float, default 1.0
        The base of ``"exp_range"``'s scaling.
    scale_fn : callable, optional
        A function of the cycle number (``scale_mode="cycle"``) or of the step
        (``"iterations"``) returning the amplitude's scale; replaces ``mode``.
    scale_mode : {"cycle", "iterations"}
        What ``scale_fn`` takes.
    cycle_momentum : bool, default True
        Cycle the momentum too; needs an optimizer with ``momentum`` or ``betas``.
    base_momentum : float or list of float, default 0.8
        The momentum at the top of the learning rate's cycle.
    max_momentum : float or list of float, default 0.9
        The momentum at its bottom (and initially).
    last_epoch : int, default -1
        See :class:`LRScheduler`.

    Notes
    -----
    As for :class:`LambdaLR`, :meth:`state_dict` does not include ``scale_fn``'s code,
    only the attributes of a callable object given as ``scale_fn``.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.tensor([1.0], requires_grad=True)
    >>> opt = plugrad.optim.SGD([w], lr=1.0, momentum=0.9)
    >>> schedule = plugrad.optim.lr_scheduler.CyclicLR(
    ...     opt, base_lr=0.1, max_lr=0.5, step_size_up=2, mode="triangular2"
    ... )
    >>> lrs = []
    >>> for _ in range(9):
    ...     lrs.append(round(schedule.get_last_lr()[0], 4))
    ...     opt.step()
    ...     schedule.step()
    >>> lrs
    [0.1, 0.3, 0.5, 0.3, 0.1, 0.2, 0.3, 0.2, 0.1]
    >>> round(opt.param_groups[0]["momentum"], 4)  # low where the learning rate is high
    0.8875
    """

    _not_saved = ("optimizer", "_initial", "_scale_fn_custom")

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | Sequence[float],
        max_lr: float | Sequence[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float | Sequence[float] = 0.8,
        max_momentum: float | Sequence[float] = 0.9,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer("CyclicLR", optimizer)
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        step_size_up = integral("step_size_up", step_size_up, at_least=1)
        if step_size_down is not None:
            step_size_down = integral("step_size_down", step_size_down, at_least=0)
        if scale_fn is None and mode not in ("triangular", "triangular2", "exp_range"):
            raise InvalidArgumentError(
                f"mode must be 'triangular', 'triangular2' or 'exp_range' (or give scale_fn), "
                f"got {mode!r}"
            )
        if scale_fn is not None and not callable(scale_fn):
            raise ArgumentError(f"scale_fn must be a function, got {type(scale_fn).__name__}")
        if scale_mode not in ("cycle", "iterations"):
            raise InvalidArgumentError(
                f"scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}"
            )
        check_number("gamma", gamma)
        uses_betas = "betas" in optimizer.defaults
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and not uses_betas:
                raise InvalidArgumentError(
                    f"cycle_momentum=True needs an optimizer with momentum or betas, and "
                    f"{type(optimizer).__name__} has neither; pass cycle_momentum=False"
                )
            base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            max_momentums = _per_group("max_momentum", optimizer, max_momentum)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.max_lrs = max_lrs
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode if scale_fn is not None else _SCALE_MODES[mode]
        self.cycle_momentum = cycle_momentum
        self.use_beta1 = uses_betas
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                _set_lr(group, lr)
        if cycle_momentum:
            self.base_momentums = base_momentums
            self.max_momentums = max_momentums
            if last_epoch == -1:
                for peak, low, group in zip(max_momentums, base_momentums, optimizer.param_groups):
                    _set_momentum(group, peak, uses_betas)
                    group["max_momentum"] = peak
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def state_dict(self) -> dict[str, Any]:
        """The state, with ``_scale_fn_custom``: a copy of the attributes of a callable
        object given as ``scale_fn``, as PyTorch saves them, else None (code is not saved)."""
        state = super().state_dict()
        function = self._scale_fn_custom
        state["_scale_fn_custom"] = dict(vars(function)) if _keeps_attributes(function) else None
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict` (PyTorch's too); saved attributes of
        a ``scale_fn`` object are set on this scheduler's. On error nothing changes."""
        if not isinstance(state_dict, Mapping):
            super().load_state_dict(state_dict)  # raises, saying what it needs
        saved = state_dict.get("_scale_fn_custom")
        if saved is not None and not (
            isinstance(saved, Mapping) and _keeps_attributes(self._scale_fn_custom)
        ):
            raise InvalidArgumentError(
                f"the state dict holds attributes {saved!r} for scale_fn, but this scheduler's "
                f"scale_fn ({self._scale_fn_custom!r}) is not a callable object that keeps "
                "attributes; build it with the object it was saved from"
            )
        super().load_state_dict(
            {key: value for key, value in state_dict.items() if key != "_scale_fn_custom"}
        )
        if saved is not None:
            vars(self._scale_fn_custom).update(saved)

    def _check_keys(self, state_dict: Any, expected: set[str] | None = None) -> None:
        # Called with the saved function's key taken out: the keys of the rest.
        expected = set(super().state_dict())
        if not isinstance(state_dict, Mapping) or set(state_dict) != expected:
            super()._check_keys(state_dict, expected)

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle (or step) ``x``, from ``mode`` or ``scale_fn``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def _compute_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [
            base + (peak - base) * scale_factor * scale
            for base, peak in zip(self.base_lrs, self.max_lrs)
        ]
        if self.cycle_momentum:
            for group, low, peak in zip(
                self.optimizer.param_groups, self.base_momentums, self.max_momentums
            ):
                _set_momentum(group, peak - (peak - low) * scale_factor * scale, self.use_beta1)
        return lrs


class _Composite(LRScheduler):
    """What SequentialLR and ChainedScheduler share: the states of their schedulers in theirs."""

    _schedulers: list[LRScheduler]
    _not_saved = ("optimizer", "_initial", "_schedulers")

    def state_dict(self) -> dict[str, Any]:
        """Return this scheduler's state with those of its schedulers (``"_schedulers"``).

        Examples
        --------
        >>> import plugrad
        >>> from plugrad.optim import lr_scheduler
        >>> opt = plugrad.optim.SGD([plugrad.zeros(1, requires_grad=True)], lr=1.0)
        >>> schedule = lr_scheduler.SequentialLR(
        ...     opt, [lr_scheduler.ConstantLR(opt), lr_scheduler.StepLR(opt, 2)], milestones=[4]
        ... )
        >>> saved = schedule.state_dict()
        >>> sorted(saved)
        ['_last_lr', '_milestones', '_schedulers', 'last_epoch']
        >>> opt.step(); schedule.step()
        >>> schedule.load_state_dict(saved)
        >>> schedule.last_epoch
        0
        """
        state = super().state_dict()
        state["_schedulers"] = [scheduler.state_dict() for scheduler in self._schedulers]
        return state

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict` and its schedulers'; all or nothing.

        Examples
        --------
        See :meth:`state_dict`.
        """
        self._check_keys(state_dict)
        name = type(self).__name__
        saved = state_dict["_schedulers"]
        if not isinstance(saved, list | tuple) or len(saved) != len(self._schedulers):
            raise InvalidArgumentError(
                f"the state dict's '_schedulers' must list the states of {name}'s "
                f"{len(self._schedulers)} schedulers"
            )
        before = [each.state_dict() for each in self._schedulers]
        try:
            for each, state in zip(self._schedulers, saved):
                each.load_state_dict(state)
        except Exception:
            for each, state in zip(self._schedulers, before):
                each.load_state_dict(state)
            raise
        for key, value in state_dict.items():
            if key != "_schedulers":
                setattr(self, key, list(value) if isinstance(value, list) else value)


class SequentialLR(_Composite):
    """Run several schedulers one after the other, switching at the ``milestones``.

    The scheduler ``i`` runs from epoch ``milestones[i - 1]`` on, restarted
    there from its epoch 0 (from the initial learning rates, where its
    schedule has a closed form), as PyTorch's.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer all the schedulers schedule.
    schedulers : list of LRScheduler
        The schedulers, built over ``optimizer`` (not :class:`ReduceLROnPlateau`).
    milestones : list of int
        The epochs of the switches, one fewer than the schedulers.
    last_epoch : int, default -1
        See :class:`LRScheduler`.

    Examples
    --------
    A linear warm-up over 3 epochs, then an exponential decay:

    >>> import plugrad
    >>> from plugrad.optim import lr_scheduler
    >>> w = plugrad.tensor([1.0], requires_grad=True)
    >>> opt = plugrad.optim.SGD([w], lr=1.0)
    >>> warmup = lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=3)
    >>> decay = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    >>> schedule = lr_scheduler.SequentialLR(opt, [warmup, decay], milestones=[3])
    >>> lrs = []
    >>> for _ in range(6):
    ...     lrs.append(schedule.get_last_lr()[0])
    ...     opt.step()
    ...     schedule.step()
    >>> lrs
    [0.25, 0.5, 0.75, 1.0, 0.5, 0.25]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers: Sequence[LRScheduler],
        milestones: Sequence[int],
        last_epoch: int = -1,
    ) -> None:
        _check_schedulers("SequentialLR", schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise InvalidArgumentError(
                f"SequentialLR needs one milestone fewer than schedulers, got "
                f"{len(schedulers)} schedulers and {len(milestones)} milestones"
            )
        for milestone in milestones:
            check_int("each milestone", milestone, at_least=0)
        check_int("last_epoch", last_epoch, at_least=-1)
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        self._initial = False
        for group in optimizer.param_groups:
            _set_lr(group, group["initial_lr"])
        # Undo the step each scheduler took when it was built, then take the first one's.
        for scheduler in self._schedulers:
            _undo_step(scheduler)
        first = self._schedulers[bisect.bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:  # type: ignore[override]  # PyTorch's takes no epoch either
        """Advance by one epoch: step the scheduler of the new epoch (restart it at a milestone)."""
        self.last_epoch += 1
        index = bisect.bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._restart()
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def __repr__(self) -> str:
        names = ", ".join(type(s).__name__ for s in self._schedulers)
        return (
            f"SequentialLR([{names}], milestones={self._milestones}, last_epoch={self.last_epoch}, "
            f"last_lr={self._last_lr})"
        )


class ChainedScheduler(_Composite):
    """Step several schedulers together at every epoch: their effects multiply.

    Parameters
    ----------
    schedulers : list of LRScheduler
        The schedulers, all over one optimizer (not :class:`ReduceLROnPlateau`).
    optimizer : Optimizer, optional
        That optimizer; the first scheduler's by default.

    Examples
    --------
    A constant factor of 0.5 for two epochs, and a decay by 0.9 every epoch:

    >>> import plugrad
    >>> from plugrad.optim import lr_scheduler
    >>> w = plugrad.tensor([1.0], requires_grad=True)
    >>> opt = plugrad.optim.SGD([w], lr=1.0)
    >>> schedule = lr_scheduler.ChainedScheduler(
    ...     [lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2),
    ...      lr_scheduler.ExponentialLR(opt, gamma=0.9)]
    ... )
    >>> lrs = []
    >>> for _ in range(4):
    ...     lrs.append(round(schedule.get_last_lr()[0], 4))
    ...     opt.step()
    ...     schedule.step()
    >>> lrs
    [0.5, 0.45, 0.81, 0.729]
    """

    def __init__(
        self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None
    ) -> None:
        if len(schedulers) < 1:
            raise InvalidArgumentError("ChainedScheduler needs at least one scheduler")
        if optimizer is None:
            optimizer = getattr(schedulers[0], "optimizer", None)
        _check_schedulers("ChainedScheduler", schedulers, optimizer)
        assert optimizer is not None  # checked: each scheduler's optimizer is it
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._initial = False
        self._last_lr = self._group_lrs()

    def step(self) -> None:  # type: ignore[override]  # PyTorch's takes no epoch either
        """Step every scheduler, in order.

        Examples
        --------
        See :class:`ChainedScheduler`.
        """
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._group_lrs()

    def __repr__(self) -> str:
        names = ", ".join(type(s).__name__ for s in self._schedulers)
        return f"ChainedScheduler([{names}], last_lr={self._last_lr})"


#: The scale_mode each built-in CyclicLR mode uses.
_SCALE_MODES = {"triangular": "cycle", "triangular2": "cycle", "exp_range": "iterations"}


def _per_group(
    name: str, optimizer: Optimizer, value: Any, lists: type | tuple[type, ...] = (list, tuple)
) -> list[float]:
    """``value`` for each parameter group: a number for all, or one each in a list or tuple.

    ``lists``: the types taken as one value per group (OneCycleLR takes any sequence).
    """
    groups = len(optimizer.param_groups)
    one_each = isinstance(value, lists)
    values = list(value) if one_each else [value] * groups
    if len(values) != groups:
        raise InvalidArgumentError(
            f"{name} lists {len(values)} values for {groups} parameter groups"
        )
    for v in values:
        check_number(name, v)
    return values


def _set_momentum(group: dict[str, Any], momentum: float, uses_betas: bool) -> None:
    """Set the momentum of ``group``: its first beta (Adam's family) or SGD's ``momentum``."""
    if uses_betas:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


def _functions_per_group(scheduler: str, optimizer: Any, value: Any) -> list[Callable[[int], Any]]:
    """``value`` (a function, or a list or tuple of one per group) for each parameter group."""
    groups = len(optimizer.param_groups) if isinstance(optimizer, Optimizer) else 0
    if isinstance(value, list | tuple):
        if len(value) != groups:
            raise InvalidArgumentError(
                f"{scheduler} got {len(value)} functions for {groups} parameter groups; give one "
                "per group, or a single function for all"
            )
        functions = list(value)
    else:
        functions = [value] * groups
    for function in functions:
        if not callable(function):
            raise ArgumentError(
                f"lr_lambda must be a function of the epoch, got {type(function).__name__}"
            )
    return functions


def _check_optimizer(name: str, optimizer: Any) -> None:
    """Raise ``TypeError`` unless ``optimizer`` is a plugrad optimizer (``name`` schedules it)."""
    if not isinstance(optimizer, Optimizer):
        raise ArgumentError(
            f"{name} schedules a plugrad.optim.Optimizer, got a {type(optimizer).__name__}"
        )


def _check_schedulers(name: str, schedulers: Sequence[Any], optimizer: Any) -> None:
    _check_optimizer(name, optimizer)
    if len(schedulers) < 1:
        raise InvalidArgumentError(f"{name} needs at least one scheduler")
    for index, scheduler in enumerate(schedulers):
        if isinstance(scheduler, ReduceLROnPlateau):
            raise InvalidArgumentError(
                f"{name} cannot run ReduceLROnPlateau (scheduler {index}): its step() takes the "
                "metric; step it on its own"
            )
        if not isinstance(scheduler, LRScheduler):
            raise ArgumentError(
                f"{name} runs LRSchedulers, but scheduler {index} is a {type(scheduler).__name__}"
            )
        if scheduler.optimizer is not optimizer:
            raise InvalidArgumentError(
                f"{name} needs schedulers of one optimizer, but scheduler {index} "
                f"({type(scheduler).__name__}) schedules another"
            )


def _undo_step(scheduler: LRScheduler) -> None:
    """Take back one epoch from ``scheduler`` (and, for a composite, from each of its own)."""
    inner = getattr(scheduler, "_schedulers", None)
    if inner is not None:
        for each in inner:
            _undo_step(each)
    elif hasattr(scheduler, "last_epoch"):
        scheduler.last_epoch -= 1


class ReduceLROnPlateau(LRScheduler):
    """Multiply the learning rate by ``factor`` when a metric stops improving.

    Call ``scheduler.step(metric)`` once per epoch with the value watched (a
    validation loss, say). When it has not improved for more than ``patience``
    epochs in a row, each group's learning rate is multiplied by ``factor``
    (never below ``min_lr``), then ``cooldown`` epochs pass before the count
    starts again. As PyTorch's, it is an :class:`LRScheduler` that follows the
    metric, not the epoch count: it has no ``get_lr()``, and SequentialLR and
    ChainedScheduler cannot run it.

    Parameters
    ----------
    optimizer : Optimizer
    mode : {"min", "max"}
        Whether the metric improves by going down or up.
    factor : float, default 0.1
        The decay factor, below 1.
    patience : int, default 10
        Epochs without improvement tolerated before a decay.
    threshold : float, default 1e-4
        How much better a value must be to count as an improvement.
    threshold_mode : {"rel", "abs"}
        ``"rel"``: better than ``best * (1 - threshold)`` (``1 + threshold``
        in ``"max"`` mode); ``"abs"``: than ``best - threshold`` (``+``).
    cooldown : int, default 0
        Epochs after a decay during which bad epochs are not counted.
    min_lr : float or list of float, default 0
        The lowest learning rate, for all groups or one per group.
    eps : float, default 1e-8
        A decay smaller than this is not applied.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.tensor([1.0], requires_grad=True)
    >>> opt = plugrad.optim.SGD([w], lr=1.0)
    >>> schedule = plugrad.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1, factor=0.5)
    >>> for loss in [3.0, 2.0, 2.0, 2.0, 2.0, 1.0]:
    ...     schedule.step(loss)
    >>> schedule.get_last_lr()
    [0.5]
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | Sequence[float] = 0.0,
        eps: float = 1e-8,
    ) -> None:
        _check_optimizer("ReduceLROnPlateau", optimizer)
        if mode not in ("min", "max"):
            raise InvalidArgumentError(f"mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise InvalidArgumentError(
                f"threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}"
            )
        check_number("factor", factor, below=1.0)
        patience = integral("patience", patience, at_least=0)
        check_number("threshold", threshold)
        cooldown = integral("cooldown", cooldown, at_least=0)
        check_number("eps", eps)
        groups = len(optimizer.param_groups)
        if isinstance(min_lr, Sequence):
            if len(min_lr) != groups:
                raise InvalidArgumentError(
                    f"min_lr lists {len(min_lr)} values but the optimizer has {groups} "
                    "parameter groups"
                )
            min_lrs = list(min_lr)
            #: The floor of a group added later (None: min_lr was a list, one per group).
            self.default_min_lr: float | None = None
        else:
            min_lrs = [min_lr] * groups
            self.default_min_lr = min_lr
        for value in min_lrs:
            check_number("min_lr", value)
        self.optimizer = optimizer
        self.mode, self.factor, self.patience = mode, factor, patience
        self.threshold, self.threshold_mode = threshold, threshold_mode
        self.cooldown, self.min_lrs, self.eps = cooldown, min_lrs, eps
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def _better(self, value: float) -> bool:
        relative = self.threshold_mode == "rel"
        if self.mode == "min":
            return value < (
                self.best * (1 - self.threshold) if relative else self.best - self.threshold
            )
        return value > (
            self.best * (1 + self.threshold) if relative else self.best + self.threshold
        )

    def get_lr(self) -> list[float]:
        """Not defined: the rates follow the metric (see :meth:`get_last_lr`)."""
        raise NotImplementedError(
            "ReduceLROnPlateau computes no learning rate from the epoch; get_last_lr() gives "
            "the rates it set last"
        )

    def step(self, metrics: Any, epoch: int | None = None) -> None:  # type: ignore[override]
        """Take the epoch's value of the watched metric (a number or a one-element tensor).

        ``epoch`` sets :attr:`last_epoch` instead of counting one more, as PyTorch's
        deprecated form does (with a warning).
        """
        value = float(metrics)
        if epoch is None:
            self.last_epoch += 1
        else:
            warnings.warn(
                "ReduceLROnPlateau.step(metrics, epoch) is deprecated (as in PyTorch); call "
                "step(metrics) once per epoch",
                UserWarning,
                stacklevel=2,
            )
            self.last_epoch = epoch
        if self._better(value):
            self.best = value
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            groups = len(self.optimizer.param_groups)
            if len(self.min_lrs) != groups:
                if self.default_min_lr is None:
                    raise InvalidArgumentError(
                        f"the optimizer has {groups} parameter groups, but min_lr listed "
                        f"{len(self.min_lrs)} values when ReduceLROnPlateau was made (a group "
                        "was added since); set scheduler.min_lrs to one value per group"
                    )
                self.min_lrs = [self.default_min_lr] * groups
            for group, floor in zip(self.optimizer.param_groups, self.min_lrs):
                old_lr = float(group["lr"])  # (a tensor's in float64, as PyTorch's)
                new_lr = max(old_lr * self.factor, floor)
                if old_lr - new_lr > self.eps:
                    _set_lr(group, new_lr)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """Return the learning rate of each group after the last :meth:`step`."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """Return the scheduler's state (no reference to the optimizer) as a dict."""
        return {key: value for key, value in vars(self).items() if key != "optimizer"}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a state saved by :meth:`state_dict`."""
        expected = set(self.state_dict())
        if isinstance(state_dict, Mapping) and "default_min_lr" not in state_dict:
            expected.discard("default_min_lr")  # saved before plugrad kept it
        if isinstance(state_dict, Mapping) and "mode_worse" in state_dict:
            # PyTorch's keeps the worst value of its mode too, which plugrad derives
            state_dict = {key: value for key, value in state_dict.items() if key != "mode_worse"}
        if not isinstance(state_dict, Mapping) or set(state_dict) != expected:
            raise InvalidArgumentError(
                f"ReduceLROnPlateau.load_state_dict() needs the keys {sorted(expected)}; was "
                "the dict saved from another kind of scheduler?"
            )
        for key, value in state_dict.items():
            setattr(self, key, value)


#: PyTorch's former name of :class:`LRScheduler`, which code written for it still subclasses.
_LRScheduler = LRScheduler


def _copied(lr: Any) -> Any:
    """A learning rate held apart from the one given: a tensor's copy, a number itself."""
    return lr.clone() if isinstance(lr, Tensor) else lr
