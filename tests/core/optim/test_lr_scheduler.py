"""plugrad.optim.lr_scheduler: learning-rate sequences against torch.optim.lr_scheduler,
state dicts, the call-order warning and argument errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import plugrad
from plugrad import optim
from plugrad.optim import lr_scheduler

SCHEDULES = {
    "StepLR": {"step_size": 3, "gamma": 0.5},
    "ExponentialLR": {"gamma": 0.8},
    "CosineAnnealingLR": {"T_max": 4, "eta_min": 0.01},
    "CosineAnnealingLR-short": {"T_max": 1},
    "LambdaLR": {"lr_lambda": lambda epoch: 1.0 / (1 + epoch) ** 0.5},
    "LinearLR": {"start_factor": 0.2, "end_factor": 0.9, "total_iters": 4},
    "LinearLR-defaults": {},
    "MultiStepLR": {"milestones": [2, 5, 5, 9], "gamma": 0.5},
}


def schedule_class(module, key: str):
    return getattr(module, key.split("-")[0])


def two_groups(make_tensor) -> list[dict]:
    return [{"params": [make_tensor()]}, {"params": [make_tensor()], "lr": 0.3}]


def plugrad_setup(key: str):
    opt = optim.SGD(two_groups(lambda: plugrad.tensor([1.0], requires_grad=True)), lr=0.1)
    return opt, schedule_class(lr_scheduler, key)(opt, **SCHEDULES[key])


def torch_setup(torch, key: str):
    opt = torch.optim.SGD(two_groups(lambda: torch.ones(1, requires_grad=True)), lr=0.1)
    return opt, schedule_class(torch.optim.lr_scheduler, key)(opt, **SCHEDULES[key])


def flat(sequence: list[list[float]]) -> list[float]:
    return [lr for lrs in sequence for lr in lrs]


def lr_sequence(opt, schedule, epochs: int = 14) -> list[list[float]]:
    lrs = [schedule.get_last_lr()]
    for _ in range(epochs):
        opt.step()
        schedule.step()
        lrs.append(schedule.get_last_lr())
        assert lrs[-1] == [group["lr"] for group in opt.param_groups]
    return lrs


@pytest.mark.parametrize("key", sorted(SCHEDULES))
def test_learning_rates_match_torch(key) -> None:
    torch = pytest.importorskip("torch")
    ours = lr_sequence(*plugrad_setup(key))
    theirs = lr_sequence(*torch_setup(torch, key))
    assert flat(ours) == pytest.approx(flat(theirs), rel=1e-12, abs=1e-15)


def test_chained_schedulers_match_torch() -> None:
    # The recursive forms let a warm-up and a decay act on the same optimizer.
    torch = pytest.importorskip("torch")
    sequences = []
    for module, tensor in (
        (plugrad, lambda: plugrad.tensor([1.0], requires_grad=True)),
        (torch, lambda: torch.ones(1, requires_grad=True)),
    ):
        schedulers = module.optim.lr_scheduler
        opt = module.optim.Adam(two_groups(tensor), lr=0.1)
        warmup = schedulers.LinearLR(opt, start_factor=0.1, total_iters=3)
        decay = schedulers.CosineAnnealingLR(opt, T_max=6)
        lrs = []
        for _ in range(10):
            opt.step()
            warmup.step()
            decay.step()
            lrs.append([group["lr"] for group in opt.param_groups])
        sequences.append(lrs)
    assert flat(sequences[0]) == pytest.approx(flat(sequences[1]), rel=1e-12, abs=1e-15)


def test_construction_records_initial_lr_and_applies_epoch_zero() -> None:
    opt, schedule = plugrad_setup("LinearLR")
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.3]
    assert schedule.base_lrs == [0.1, 0.3]
    assert schedule.get_last_lr() == pytest.approx([0.02, 0.06])
    assert schedule.last_epoch == 0


@pytest.mark.parametrize("key", sorted(SCHEDULES))
def test_state_dict_resumes_the_same_sequence(key) -> None:
    opt, schedule = plugrad_setup(key)
    lr_sequence(opt, schedule, epochs=5)
    saved_schedule, saved_optimizer = schedule.state_dict(), opt.state_dict()
    assert "optimizer" not in saved_schedule
    # Functions are code, which is not saved.
    assert all(entry is None for entry in saved_schedule.get("lr_lambdas", []))
    expected = lr_sequence(opt, schedule, epochs=6)

    resumed_opt, resumed = plugrad_setup(key)
    resumed_opt.load_state_dict(saved_optimizer)
    resumed.load_state_dict(saved_schedule)
    assert lr_sequence(resumed_opt, resumed, epochs=6) == expected


def test_state_dict_survives_save_and_load(tmp_path) -> None:
    opt, schedule = plugrad_setup("CosineAnnealingLR")
    lr_sequence(opt, schedule, epochs=3)
    plugrad.save({"scheduler": schedule.state_dict()}, tmp_path / "s.safetensors")
    loaded = plugrad.load(tmp_path / "s.safetensors")["scheduler"]
    assert loaded == schedule.state_dict()


def test_resuming_with_last_epoch_needs_initial_lr() -> None:
    opt = optim.SGD([plugrad.tensor([1.0], requires_grad=True)], lr=0.1)
    # (a KeyError as PyTorch's, and plugrad's: it was a bare KeyError)
    with pytest.raises(plugrad.errors.MissingStateError, match="initial_lr") as caught:
        lr_scheduler.StepLR(opt, step_size=2, last_epoch=4)
    assert isinstance(caught.value, KeyError)
    assert "initial_lr" not in opt.param_groups[0]
    opt.param_groups[0]["initial_lr"] = 1.0
    schedule = lr_scheduler.ExponentialLR(opt, gamma=0.5, last_epoch=4)
    assert schedule.last_epoch == 5 and schedule.base_lrs == [1.0]
    assert schedule.get_last_lr() == [0.1]


def test_warns_when_stepped_before_the_optimizer() -> None:
    _, schedule = plugrad_setup("StepLR")
    with pytest.warns(UserWarning, match=r"before the optimizer's step\(\)"):
        schedule.step()
    schedule.step()  # only the first call can be out of order


def test_no_warning_for_an_optimizer_that_overrides_step() -> None:
    class Custom(optim.SGD):
        def step(self, closure=None):
            return None

    opt = Custom([plugrad.tensor([1.0], requires_grad=True)], lr=0.1)
    lr_scheduler.StepLR(opt, step_size=1).step()


def test_load_state_dict_refuses_another_schedulers_state() -> None:
    _, schedule = plugrad_setup("StepLR")
    _, other = plugrad_setup("ExponentialLR")
    before = schedule.state_dict()
    with pytest.raises(ValueError, match="another kind of scheduler"):
        schedule.load_state_dict(other.state_dict())
    wrong_groups = dict(before, base_lrs=[0.1])
    with pytest.raises(ValueError, match="one learning rate per parameter group"):
        schedule.load_state_dict(wrong_groups)
    assert schedule.state_dict() == before


def test_lambda_lr_takes_one_function_per_group() -> None:
    opt = optim.SGD(two_groups(lambda: plugrad.tensor([1.0], requires_grad=True)), lr=1.0)
    schedule = lr_scheduler.LambdaLR(opt, [lambda e: 0.5**e, lambda e: 1.0 + e])
    opt.step()
    schedule.step()
    assert schedule.get_last_lr() == [0.5, 0.6]
    with pytest.raises(ValueError, match="2 parameter groups"):
        lr_scheduler.LambdaLR(opt, [lambda e: 1.0])
    with pytest.raises(TypeError, match="function of the epoch"):
        lr_scheduler.LambdaLR(opt, 0.5)


class _Decay:
    """A callable object whose state (its factor) is part of the schedule, as in PyTorch."""

    def __init__(self) -> None:
        self.factor = 0.5

    def __call__(self, epoch: int) -> float:
        return self.factor**epoch


@pytest.mark.parametrize("name", ["LambdaLR", "MultiplicativeLR"])
def test_function_schedulers_save_and_restore_a_callable_objects_attributes(name) -> None:
    # The objects' attributes were dropped: the restored schedule went on with factor 0.5.
    make = getattr(lr_scheduler, name)
    opt = optim.SGD(two_groups(lambda: plugrad.tensor([1.0], requires_grad=True)), lr=1.0)
    decay = _Decay()
    decay.factor = 0.9
    schedule = make(opt, [decay, lambda epoch: 1.0])
    opt.step()
    schedule.step()
    saved = schedule.state_dict()
    assert saved["lr_lambdas"] == [{"factor": 0.9}, None]
    fresh_opt = optim.SGD(two_groups(lambda: plugrad.tensor([1.0], requires_grad=True)), lr=1.0)
    fresh = make(fresh_opt, [_Decay(), lambda epoch: 1.0])
    fresh_opt.load_state_dict(opt.state_dict())
    fresh.load_state_dict(saved)
    assert fresh.lr_lambdas[0].factor == 0.9
    fresh_opt.step()
    fresh.step()
    opt.step()
    schedule.step()
    assert fresh.get_last_lr() == schedule.get_last_lr()
    before = fresh.state_dict()
    for bad in ([{"factor": 1.0}], [3, None]):
        with pytest.raises(ValueError, match="lr_lambdas"):
            fresh.load_state_dict(dict(saved, lr_lambdas=bad))
    with pytest.raises(ValueError, match="keeps none"):
        make(fresh_opt, [lambda epoch: 1.0, lambda epoch: 1.0]).load_state_dict(saved)
    assert fresh.state_dict() == before
    older = {key: value for key, value in saved.items() if key != "lr_lambdas"}
    fresh.load_state_dict(older)  # a state saved without lr_lambdas still loads


def test_cosine_annealing_reaches_eta_min_at_t_max() -> None:
    opt, schedule = plugrad_setup("CosineAnnealingLR")
    lrs = lr_sequence(opt, schedule, epochs=4)
    assert lrs[4] == pytest.approx([0.01, 0.01])
    assert lrs[2][0] == pytest.approx(0.01 + 0.09 * (1 + math.cos(math.pi / 2)) / 2)


ARGUMENT_ERRORS = {
    "not an optimizer": (lambda opt: lr_scheduler.StepLR(object(), 2), TypeError, "Optimizer"),
    "step_size": (lambda opt: lr_scheduler.StepLR(opt, 0), ValueError, "step_size"),
    "gamma": (lambda opt: lr_scheduler.ExponentialLR(opt, gamma=-0.5), ValueError, "gamma"),
    "T_max": (lambda opt: lr_scheduler.CosineAnnealingLR(opt, T_max=0), ValueError, "T_max"),
    "start_factor": (
        lambda opt: lr_scheduler.LinearLR(opt, start_factor=0.0),
        ValueError,
        "start_factor",
    ),
    "end_factor": (lambda opt: lr_scheduler.LinearLR(opt, end_factor=1.5), ValueError, "end_"),
    "total_iters": (lambda opt: lr_scheduler.LinearLR(opt, total_iters=0), ValueError, "total"),
    "last_epoch": (lambda opt: lr_scheduler.StepLR(opt, 2, last_epoch=-2), ValueError, "last_"),
}


@pytest.mark.parametrize("bad", sorted(ARGUMENT_ERRORS))
def test_argument_errors_leave_the_optimizer_alone(bad) -> None:
    make_it, error, message = ARGUMENT_ERRORS[bad]
    opt = optim.SGD([plugrad.tensor([1.0], requires_grad=True)], lr=0.1)
    with pytest.raises(error, match=message):
        make_it(opt)
    assert opt.param_groups[0]["lr"] == 0.1 and "initial_lr" not in opt.param_groups[0]


def test_repr() -> None:
    _, schedule = plugrad_setup("StepLR")
    assert repr(schedule) == "StepLR(last_epoch=0, last_lr=[0.1, 0.3])"


PLATEAU = {
    "defaults": {},
    "patience-1": {"patience": 1, "factor": 0.5},
    "max-abs-cooldown": {
        "mode": "max", "patience": 0, "cooldown": 2, "threshold": 0.1, "threshold_mode": "abs"
    },
    "min_lr-per-group": {"patience": 2, "min_lr": [0.02, 0.2], "factor": 0.5},
    "large-threshold": {"patience": 0, "factor": 0.9, "threshold": 0.6},
}  # fmt: skip
METRICS = [3.0, 2.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 0.99995, 1.0, 1.0, 1.0] + [5.0] * 12


@pytest.mark.parametrize("key", sorted(PLATEAU))
def test_reduce_lr_on_plateau_matches_torch(key) -> None:
    torch = pytest.importorskip("torch")
    sequences = []
    for lib, make in (
        (plugrad, lambda: plugrad.tensor([1.0], requires_grad=True)),
        (torch, lambda: torch.ones(1, requires_grad=True)),
    ):
        opt = lib.optim.SGD(two_groups(make), lr=0.1)
        schedule = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **PLATEAU[key])
        lrs = []
        for metric in METRICS:
            opt.step()
            schedule.step(metric)
            lrs.append([group["lr"] for group in opt.param_groups])
        sequences.append(flat(lrs))
    assert sequences[0] == pytest.approx(sequences[1], rel=1e-12)


def test_reduce_lr_on_plateau_state_and_arguments() -> None:
    opt = optim.SGD(two_groups(lambda: plugrad.tensor([1.0], requires_grad=True)), lr=0.1)
    schedule = lr_scheduler.ReduceLROnPlateau(opt, patience=0)
    saved = schedule.state_dict()
    schedule.step(plugrad.tensor(1.0))
    schedule.step(2.0)
    assert schedule.get_last_lr() == pytest.approx([0.01, 0.03])
    schedule.load_state_dict(saved)
    assert schedule.num_bad_epochs == 0 and schedule.best == math.inf
    for bad in (
        {"mode": "up"},
        {"threshold_mode": "ratio"},
        {"factor": 1.0},
        {"patience": -1},
        {"min_lr": [0.1]},
    ):
        with pytest.raises(ValueError):
            lr_scheduler.ReduceLROnPlateau(opt, **bad)
    with pytest.raises(ValueError, match="another kind"):
        schedule.load_state_dict({"best": 1.0})


ONE_CYCLE = {
    "cos": {"max_lr": 1.0, "total_steps": 10},
    "linear-per-group": {
        "max_lr": [0.5, 2.0], "epochs": 3, "steps_per_epoch": 4, "anneal_strategy": "linear"
    },
    "three-phase": {"max_lr": 1.0, "total_steps": 12, "three_phase": True, "pct_start": 0.25},
    "no-momentum": {
        "max_lr": 0.3, "total_steps": 7, "cycle_momentum": False, "div_factor": 5,
        "final_div_factor": 100,
    },
}  # fmt: skip


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
@pytest.mark.parametrize("key", sorted(ONE_CYCLE))
def test_one_cycle_matches_torch_in_learning_rate_and_momentum(key, optimizer) -> None:
    torch = pytest.importorskip("torch")
    sequences = []
    for lib, make in (
        (plugrad, lambda: plugrad.tensor([1.0], requires_grad=True)),
        (torch, lambda: torch.ones(1, requires_grad=True)),
    ):
        options = {"momentum": 0.9} if optimizer == "SGD" else {}
        opt = getattr(lib.optim, optimizer)(two_groups(make), lr=0.1, **options)
        schedule = lib.optim.lr_scheduler.OneCycleLR(opt, **ONE_CYCLE[key])
        values = []
        for _ in range(schedule.total_steps - 1):
            opt.step()
            schedule.step()
            for group in opt.param_groups:
                momentum = group["momentum"] if optimizer == "SGD" else group["betas"][0]
                values += [group["lr"], momentum]
        sequences.append(values)
    assert sequences[0] == pytest.approx(sequences[1], rel=1e-12)


def test_one_cycle_refuses_what_it_cannot_schedule() -> None:
    opt = optim.Adagrad([plugrad.tensor([1.0], requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="momentum or betas"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    with pytest.raises(ValueError, match="total_steps"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, cycle_momentum=False)
    schedule = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=2, cycle_momentum=False)
    opt.step()
    schedule.step()
    schedule.step()
    with pytest.raises(ValueError, match="past its total_steps"):
        schedule.step()


def _warmup(module):
    class Warmup(module.LRScheduler):
        """PyTorch's way of writing a schedule: override get_lr()."""

        def __init__(self, optimizer, steps):
            self.steps = steps
            super().__init__(optimizer)

        def get_lr(self):
            return [base * min(1.0, (self.last_epoch + 1) / self.steps) for base in self.base_lrs]

    class HalvedStep(module.StepLR):
        """A built-in schedule changed through get_lr() and super().get_lr()."""

        def get_lr(self):
            return [lr / 2 for lr in super().get_lr()]

    return Warmup, HalvedStep


def test_a_schedule_that_overrides_get_lr_runs_as_in_torch() -> None:
    torch = pytest.importorskip("torch")
    ours_warmup, ours_halved = _warmup(lr_scheduler)
    theirs_warmup, theirs_halved = _warmup(torch.optim.lr_scheduler)
    for ours_class, theirs_class, arguments in (
        (ours_warmup, theirs_warmup, (3,)),
        (ours_halved, theirs_halved, (2,)),
    ):
        opt = optim.SGD(two_groups(lambda: plugrad.tensor([1.0], requires_grad=True)), lr=0.1)
        ours = lr_sequence(opt, ours_class(opt, *arguments), epochs=6)
        topt = torch.optim.SGD(two_groups(lambda: torch.ones(1, requires_grad=True)), lr=0.1)
        theirs = lr_sequence(topt, theirs_class(topt, *arguments), epochs=6)
        assert flat(ours) == pytest.approx(flat(theirs), rel=1e-12)
    assert lr_scheduler._LRScheduler is lr_scheduler.LRScheduler


def test_get_lr_outside_step_warns_and_a_schedule_without_one_says_what_is_missing() -> None:
    opt = optim.SGD([plugrad.tensor([1.0], requires_grad=True)], lr=0.1)
    schedule = lr_scheduler.StepLR(opt, 2, gamma=0.5)
    with pytest.warns(UserWarning, match="get_last_lr"):
        assert schedule.get_lr() == [0.1]
    with pytest.raises(NotImplementedError, match="does not implement get_lr"):
        lr_scheduler.LRScheduler(opt)


def test_step_with_an_epoch_jumps_there_as_torchs_deprecated_form() -> None:
    torch = pytest.importorskip("torch")
    opt, ours = plugrad_setup("MultiStepLR")
    topt, theirs = torch_setup(torch, "MultiStepLR")
    for epoch in (3, 6, 1):
        opt.step()
        topt.step()
        with pytest.warns(UserWarning, match="deprecated"):
            ours.step(epoch)
        with pytest.warns(UserWarning):
            theirs.step(epoch)
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12)
        assert ours.last_epoch == theirs.last_epoch == epoch
    with pytest.raises(ValueError, match="epoch"):
        ours.step(-2)


def test_reduce_lr_on_plateau_is_an_lr_scheduler_as_in_torch() -> None:
    opt = optim.SGD([plugrad.tensor([1.0], requires_grad=True)], lr=0.1)
    schedule = lr_scheduler.ReduceLROnPlateau(opt)
    assert isinstance(schedule, lr_scheduler.LRScheduler)
    with pytest.raises(NotImplementedError, match="get_last_lr"):
        schedule.get_lr()
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        lr_scheduler.ChainedScheduler([schedule], optimizer=opt)


def test_cyclic_lr_saves_and_restores_a_scale_function_objects_attributes() -> None:
    # The object's attributes were dropped: the restored cycle scaled with the new object's.
    torch = pytest.importorskip("torch")
    rates = []
    for lib in (plugrad, torch):

        def make(factor, lib=lib):
            w = lib.zeros(1, requires_grad=True)
            opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)
            scale = _Decay()
            scale.factor = factor
            return opt, lib.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, 2, scale_fn=scale)

        opt, schedule = make(0.5)
        for _ in range(5):
            opt.step()
            schedule.step()
        saved = schedule.state_dict()
        fresh_opt, fresh = make(0.9)
        fresh.load_state_dict(saved)
        fresh_opt.step()
        fresh.step()
        rates.append(fresh.get_last_lr())
    assert rates[0] == pytest.approx(rates[1], rel=1e-12)
    opt = optim.SGD([plugrad.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
    saved = lr_scheduler.CyclicLR(opt, 0.01, 0.1, 2, scale_fn=_Decay()).state_dict()
    with pytest.raises(ValueError, match="scale_fn"):
        lr_scheduler.CyclicLR(opt, 0.01, 0.1, 2, scale_fn=lambda x: 1.0).load_state_dict(saved)


def test_reduce_on_plateau_reduces_a_group_added_later_as_pytorch() -> None:
    torch = pytest.importorskip("torch")
    rates = []
    for lib in (plugrad, torch):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
        schedule = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)
        opt.add_param_group({"params": [lib.zeros(1, requires_grad=True)], "lr": 0.2})
        schedule.step(1.0)
        with pytest.warns(UserWarning, match="deprecated"):
            schedule.step(2.0, 5)  # the deprecated epoch argument
        rates.append(([g["lr"] for g in opt.param_groups], schedule.last_epoch))
    assert rates[0] == rates[1] == ([0.05, 0.1], 5)  # the added group was left at 0.2
    opt = optim.SGD([plugrad.zeros(1, requires_grad=True)], lr=0.1)
    schedule = lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=[0.0])
    opt.add_param_group({"params": [plugrad.zeros(1, requires_grad=True)]})
    schedule.step(1.0)
    with pytest.raises(ValueError, match=r"set scheduler\.min_lrs"):
        schedule.step(2.0)


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "PolynomialLR"])
def test_a_fractional_epoch_of_the_deprecated_step_form_as_pytorch(name) -> None:
    torch = pytest.importorskip("torch")
    options = {
        "StepLR": {"step_size": 2},
        "MultiStepLR": {"milestones": [2, 3]},
        "ExponentialLR": {"gamma": 0.5},
        "PolynomialLR": {"total_iters": 6},
    }[name]
    rates = []
    for lib in (plugrad, torch):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
        schedule = getattr(lib.optim.lr_scheduler, name)(opt, **options)
        for epoch in (1.5, 2.5, 4.25):
            opt.step()
            with pytest.warns(UserWarning):
                schedule.step(epoch)
            rates.append(opt.param_groups[0]["lr"])
    assert rates[:3] == pytest.approx(rates[3:], rel=1e-12)


def _one_group(lr: object = 1.0, momentum: float = 0.0) -> optim.SGD:
    return optim.SGD(
        [plugrad.zeros(1, requires_grad=True)], lr=lr, momentum=momentum, foreach=False
    )


def _stepped(scheduler: lr_scheduler.LRScheduler, steps: int) -> list[float]:
    for _ in range(steps):
        scheduler.optimizer.step()
        scheduler.step()
    return scheduler.get_last_lr()


def test_milestones_from_a_generator_decay() -> None:
    # The checks used the generator up: no milestone was left, and the rate never decayed.
    schedule = lr_scheduler.MultiStepLR(_one_group(), (epoch for epoch in [2, 4]), 0.5)
    assert _stepped(schedule, 5) == [0.25]


def test_a_tensor_learning_rate_is_filled_in_place_and_handed_out_as_copies() -> None:
    # As PyTorch's: the group's tensor is the one the caller holds; get_last_lr(),
    # base_lrs and initial_lr are copies (writing into one changed the optimizer's rate).
    lr = plugrad.tensor(0.1)
    optimizer = _one_group(lr)
    schedule = lr_scheduler.StepLR(optimizer, 1, 0.5)
    _stepped(schedule, 1)
    assert optimizer.param_groups[0]["lr"] is lr and float(lr) == pytest.approx(0.05)
    schedule.get_last_lr()[0].mul_(10)
    assert schedule.base_lrs[0] is not lr and float(schedule.base_lrs[0]) == pytest.approx(0.1)
    assert float(lr) == pytest.approx(0.05)


def test_sequential_lr_keeps_a_tensor_learning_rate_apart_from_initial_lr() -> None:
    # SequentialLR assigned initial_lr's tensor to lr: every later step rewrote initial_lr,
    # and a scheduler made again to resume took 0.025 as its base rate for 0.1.
    lr = plugrad.tensor(0.1)
    optimizer = _one_group(lr)
    parts = [
        lr_scheduler.ConstantLR(optimizer, 0.5, total_iters=2),
        lr_scheduler.ExponentialLR(optimizer, 0.5),
    ]
    schedule = lr_scheduler.SequentialLR(optimizer, parts, milestones=[2])
    group = optimizer.param_groups[0]
    assert group["lr"] is lr and group["initial_lr"] is not lr
    _stepped(schedule, 4)
    assert float(group["initial_lr"]) == pytest.approx(0.1)
    assert [float(v) for v in lr_scheduler.ExponentialLR(optimizer, 0.5).base_lrs] == [
        pytest.approx(0.1)
    ]


def test_cyclic_lr_and_reduce_on_plateau_fill_a_tensor_learning_rate_in_place() -> None:
    # Both assigned a Python float: the caller's tensor stopped following the rate.
    lr = plugrad.tensor(0.1)
    optimizer = _one_group(lr, momentum=0.9)
    schedule = lr_scheduler.CyclicLR(optimizer, 0.01, 0.1, step_size_up=4)
    _stepped(schedule, 1)
    assert optimizer.param_groups[0]["lr"] is lr and float(lr) == pytest.approx(0.0325)
    lr = plugrad.tensor(0.1)
    optimizer = _one_group(lr)
    plateau = lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.1, patience=0)
    for loss in (1.0, 2.0):
        optimizer.step()
        plateau.step(loss)
    assert optimizer.param_groups[0]["lr"] is lr
    assert float(lr) == np.float32(0.1 * 0.1)  # the product in float64, as PyTorch's


def test_step_with_an_epoch_uses_the_closed_form_of_a_subclass_too() -> None:
    class Passing(lr_scheduler.StepLR):
        def get_lr(self) -> list[float]:
            return super().get_lr()

    class Own(lr_scheduler.StepLR):
        def _get_closed_form_lr(self) -> list[float]:  # PyTorch's name
            return [0.3]

    for kind, expected in ((Passing, [0.125]), (Own, [0.3])):
        schedule = kind(_one_group(), step_size=2, gamma=0.5)
        schedule.optimizer.step()
        with pytest.warns(UserWarning, match="deprecated"):
            schedule.step(7)
        assert schedule.get_last_lr() == expected


def test_a_group_added_after_the_scheduler_is_refused_not_left_unscheduled() -> None:
    optimizer = _one_group()
    schedule = lr_scheduler.LambdaLR(optimizer, lambda epoch: 0.5)
    optimizer.add_param_group({"params": [plugrad.zeros(1, requires_grad=True)], "lr": 0.3})
    with pytest.raises(ValueError, match="added after the scheduler"):
        _stepped(schedule, 1)
    assert [group["lr"] for group in optimizer.param_groups] == [0.5, 0.3]


def test_a_state_with_an_attribute_set_after_construction_loads() -> None:
    class WarmUp(lr_scheduler.StepLR):
        def step(self, epoch=None):
            super().step(epoch)
            if self.last_epoch >= 2:
                self.finished = True

    saved = WarmUp(_one_group(), 1)
    _stepped(saved, 3)
    restored = WarmUp(_one_group(), 1)
    restored.load_state_dict(saved.state_dict())
    assert restored.finished and restored.last_epoch == 3
    with pytest.raises(ValueError, match="needs the keys"):
        restored.load_state_dict({"last_epoch": 1})


def test_numpy_integers_are_integers_to_the_schedulers() -> None:
    assert _stepped(lr_scheduler.StepLR(_one_group(), np.int64(2), 0.5), 2) == [0.5]


RESUMED_FROM_PYTORCH = {
    "LambdaLR": {"lr_lambda": lambda epoch: 0.9**epoch},
    "MultiplicativeLR": {"lr_lambda": lambda epoch: 0.95},
    "CyclicLR": {"base_lr": 0.01, "max_lr": 0.5, "step_size_up": 3, "mode": "triangular2"},
    "OneCycleLR": {"max_lr": 1.0, "total_steps": 20, "three_phase": True},
    "ReduceLROnPlateau": {"factor": 0.5, "patience": 1},
    "StepLR": {"step_size": 3, "gamma": 0.5},
    # PyTorch keeps milestones as a Counter: the next step raised an AttributeError
    "MultiStepLR": {"milestones": [3, 7, 7], "gamma": 0.5},
}


@pytest.mark.parametrize("name", list(RESUMED_FROM_PYTORCH))
def test_a_pytorch_schedulers_state_dict_resumes_the_same_schedule(name) -> None:
    # LambdaLR, MultiplicativeLR and CyclicLR refused PyTorch's dicts (they hold keys of
    # PyTorch's own), OneCycleLR and ReduceLROnPlateau name their state otherwise.
    torch = pytest.importorskip("torch")
    kwargs = RESUMED_FROM_PYTORCH[name]
    losses = [3.0, 2.0, 2.5, 2.6, 2.7, 1.0, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0]

    def setup(lib, module, tensor):
        opt = module.SGD(
            [{"params": [tensor()]}, {"params": [tensor()], "lr": 0.3}], lr=0.1, momentum=0.9
        )
        return opt, getattr(module.lr_scheduler, name)(opt, **kwargs)

    def advance(opt, schedule, loss):
        opt.step()
        schedule.step(loss) if name == "ReduceLROnPlateau" else schedule.step()

    torch_opt, torch_schedule = setup(
        torch, torch.optim, lambda: torch.zeros(1, requires_grad=True)
    )
    for loss in losses[:5]:
        advance(torch_opt, torch_schedule, loss)
    opt, schedule = setup(plugrad, optim, lambda: plugrad.zeros(1, requires_grad=True))
    schedule.load_state_dict(torch_schedule.state_dict())
    opt.load_state_dict(_plugrad_state(torch_opt.state_dict()))
    for loss in losses[5:]:
        advance(torch_opt, torch_schedule, loss)
        advance(opt, schedule, loss)
        ours = [(g["lr"], g["momentum"]) for g in opt.param_groups]
        theirs = [(g["lr"], g["momentum"]) for g in torch_opt.param_groups]
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_multistep_state_dicts_load_into_pytorch_and_milestones_are_checked() -> None:
    torch = pytest.importorskip("torch")
    schedule = lr_scheduler.MultiStepLR(_one_group(), milestones=[3, 7, 7], gamma=0.5)
    theirs = torch.optim.lr_scheduler.MultiStepLR(
        torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0), milestones=[1]
    )
    theirs.load_state_dict(schedule.state_dict())
    assert theirs.milestones == {3: 1, 7: 2}
    before = schedule.state_dict()
    with pytest.raises(ValueError, match="each milestone must be an int >= 0"):
        schedule.load_state_dict({**before, "milestones": [1, -2]})
    assert schedule.state_dict() == before


def _plugrad_state(state):
    """A PyTorch optimizer state dict with plugrad tensors for torch's."""
    if hasattr(state, "numpy"):
        return plugrad.tensor(state.numpy())
    if isinstance(state, dict):
        return {key: _plugrad_state(value) for key, value in state.items()}
    if isinstance(state, list):
        return [_plugrad_state(value) for value in state]
    return state


def test_counts_given_as_integral_floats_are_taken_as_pytorch_takes_them() -> None:
    # StepLR(optimizer, 1.0, gamma=0.1), verbatim from PyTorch's text classification
    # tutorial, raised ValueError.
    torch = pytest.importorskip("torch")
    schedules = [
        lambda lib, o: lib.optim.lr_scheduler.StepLR(o, 1.0, gamma=0.1),
        lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4.0),
        lambda lib, o: lib.optim.lr_scheduler.LinearLR(o, total_iters=3.0),
        lambda lib, o: lib.optim.lr_scheduler.CyclicLR(o, 0.1, 1.0, step_size_up=2.0),
    ]
    for make in schedules:
        rates = []
        for lib in (plugrad, torch):
            optimizer = lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=1.0)
            schedule = make(lib, optimizer)
            seen = []
            for _ in range(6):
                optimizer.step()
                schedule.step()
                seen.append(schedule.get_last_lr()[0])
            rates.append(seen)
        np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12)
    optimizer = plugrad.optim.SGD([plugrad.ones(1, requires_grad=True)], lr=1.0)
    with pytest.raises(ValueError, match=r"step_size must be an int >= 1, got 1.5"):
        plugrad.optim.lr_scheduler.StepLR(optimizer, 1.5)
