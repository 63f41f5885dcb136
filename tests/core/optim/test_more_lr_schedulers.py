"""ConstantLR, MultiplicativeLR, PolynomialLR, CosineAnnealingWarmRestarts, CyclicLR,
SequentialLR and ChainedScheduler: learning rates against torch over 30+ epochs, state dicts
and argument errors."""

from __future__ import annotations

import re

import pytest

import plugrad
from plugrad import optim
from plugrad.optim import lr_scheduler

EPOCHS = 40

SCHEDULES = {
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.4, total_iters=6),
    "ConstantLR-defaults": lambda m, o: m.ConstantLR(o),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda epoch: 0.95 - 0.001 * epoch),
    "MultiplicativeLR-per-group": lambda m, o: m.MultiplicativeLR(
        o, [lambda epoch: 0.9, lambda epoch: 1.01]
    ),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=25, power=2.0),
    "PolynomialLR-defaults": lambda m, o: m.PolynomialLR(o),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=7),
    "CosineAnnealingWarmRestarts-mult": lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.001
    ),
    "CyclicLR": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(
        o, base_lr=[0.01, 0.02], max_lr=0.2, step_size_up=3, step_size_down=5, mode="triangular2"
    ),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(
        o, 0.01, 0.1, step_size_up=5, mode="exp_range", gamma=0.97, base_momentum=0.7
    ),
    "CyclicLR-scale_fn": lambda m, o: m.CyclicLR(
        o, 0.01, 0.1, step_size_up=5, scale_fn=lambda x: 0.9**x, scale_mode="iterations",
        cycle_momentum=False,
    ),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5), m.ExponentialLR(o, gamma=0.9)],
        milestones=[5],
    ),
    "SequentialLR-three": lambda m, o: m.SequentialLR(
        o,
        [m.ConstantLR(o, factor=0.5, total_iters=3), m.CosineAnnealingLR(o, T_max=6),
         m.StepLR(o, step_size=4, gamma=0.5)],
        milestones=[4, 15],
    ),
    "SequentialLR-closed-forms": lambda m, o: m.SequentialLR(
        o,
        [m.MultiStepLR(o, [2, 3], 0.5), m.PolynomialLR(o, total_iters=8),
         m.LinearLR(o, 0.5, total_iters=4), m.LambdaLR(o, lambda e: 0.99**e)],
        milestones=[6, 12, 20],
    ),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.1, total_iters=2), m.ExponentialLR(o, gamma=0.9)]
    ),
    "ChainedScheduler-nested": lambda m, o: m.ChainedScheduler(
        [m.SequentialLR(o, [m.LinearLR(o, 0.2, total_iters=3), m.StepLR(o, 5, 0.5)], [3]),
         m.MultiplicativeLR(o, lambda e: 0.99)],
        optimizer=o,
    ),
}  # fmt: skip


def setup(module, make_tensor, key: str, optimizer: str = "SGD"):
    groups = [{"params": [make_tensor()]}, {"params": [make_tensor()], "lr": 0.3}]
    options = {"momentum": 0.9} if optimizer == "SGD" else {}
    opt = getattr(module.optim, optimizer)(groups, lr=0.1, **options)
    return opt, SCHEDULES[key](module.optim.lr_scheduler, opt)


def run(opt, schedule, epochs: int = EPOCHS, momentum: str | None = "momentum") -> list:
    seen = []
    for _ in range(epochs):
        momenta = [g["betas"][0] if "betas" in g else g.get("momentum") for g in opt.param_groups]
        seen.append((schedule.get_last_lr(), [g["lr"] for g in opt.param_groups], momenta))
        opt.step()
        schedule.step()
    return seen


def assert_close(ours, theirs) -> None:
    assert len(ours) == len(theirs)
    for (a, b, c), (x, y, z) in zip(ours, theirs):
        assert a == pytest.approx(x, rel=1e-12, abs=1e-15)
        assert b == pytest.approx(y, rel=1e-12, abs=1e-15)
        assert c == pytest.approx(z, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
@pytest.mark.parametrize("key", sorted(SCHEDULES))
def test_learning_rates_match_torch(key, optimizer) -> None:
    torch = pytest.importorskip("torch")
    ours = run(*setup(plugrad, lambda: plugrad.tensor([1.0], requires_grad=True), key, optimizer))
    theirs = run(*setup(torch, lambda: torch.ones(1, requires_grad=True), key, optimizer))
    assert_close(ours, theirs)


def test_warm_restarts_take_fractional_epochs_like_torch() -> None:
    torch = pytest.importorskip("torch")
    key = "CosineAnnealingWarmRestarts-mult"
    runs = []
    for module, make in ((plugrad, lambda: plugrad.tensor([1.0], requires_grad=True)),
                         (torch, lambda: torch.ones(1, requires_grad=True))):  # fmt: skip
        opt, schedule = setup(module, make, key)
        seen = []
        for epoch in range(12):
            for batch in range(4):
                opt.step()
                schedule.step(epoch + batch / 4)
                seen.append((schedule.get_last_lr(), schedule.last_epoch, schedule.T_cur))
        runs.append(seen)
    for (lrs, epoch, t_cur), (expected, torch_epoch, torch_t_cur) in zip(*runs):
        assert lrs == pytest.approx(expected, rel=1e-12)
        assert (epoch, t_cur) == (torch_epoch, pytest.approx(torch_t_cur))


@pytest.mark.parametrize("key", sorted(SCHEDULES))
def test_state_dict_resumes_the_same_sequence(key) -> None:
    opt, schedule = setup(plugrad, lambda: plugrad.tensor([1.0], requires_grad=True), key)
    run(opt, schedule, epochs=9)
    saved = schedule.state_dict()
    groups = [dict(g) for g in opt.param_groups]
    expected = run(opt, schedule, epochs=12)
    twin, twin_schedule = setup(plugrad, lambda: plugrad.tensor([1.0], requires_grad=True), key)
    for group, values in zip(twin.param_groups, groups):
        group.update({k: v for k, v in values.items() if k != "params"})
    twin_schedule.load_state_dict(saved)
    assert run(twin, twin_schedule, epochs=12) == expected


def test_state_dict_matches_torchs_keys() -> None:
    torch = pytest.importorskip("torch")
    for key in ("ConstantLR", "PolynomialLR", "CosineAnnealingWarmRestarts", "SequentialLR"):
        _, ours = setup(plugrad, lambda: plugrad.tensor([1.0], requires_grad=True), key)
        _, theirs = setup(torch, lambda: torch.ones(1, requires_grad=True), key)
        # torch also keeps bookkeeping of its own (_get_lr_called_within_step, _is_initial...)
        assert set(ours.state_dict()) <= set(theirs.state_dict()) | {"_initial"}, key


def test_a_bad_composite_state_dict_changes_nothing() -> None:
    opt, schedule = setup(
        plugrad, lambda: plugrad.tensor([1.0], requires_grad=True), "SequentialLR"
    )
    run(opt, schedule, epochs=7)
    saved = schedule.state_dict()
    before = repr(schedule), [s.state_dict() for s in schedule._schedulers]
    broken = dict(saved, _schedulers=[saved["_schedulers"][0], {"last_epoch": 3}])
    with pytest.raises(ValueError, match="needs the keys"):
        schedule.load_state_dict(broken)
    with pytest.raises(ValueError, match="'_schedulers' must list"):
        schedule.load_state_dict(dict(saved, _schedulers=saved["_schedulers"][:1]))
    assert (repr(schedule), [s.state_dict() for s in schedule._schedulers]) == before


def lr_opt(**options):
    return optim.SGD([plugrad.tensor([1.0], requires_grad=True)], lr=0.1, **options)


ARGUMENT_ERRORS = {
    "constant factor": (lambda o: lr_scheduler.ConstantLR(o, factor=1.5), ValueError,
                        "factor must be in (0, 1]"),
    "multiplicative count": (lambda o: lr_scheduler.MultiplicativeLR(o, [lambda e: 1.0] * 2),
                             ValueError, "2 functions for 1 parameter groups"),
    "multiplicative type": (lambda o: lr_scheduler.MultiplicativeLR(o, 0.5), TypeError,
                            "lr_lambda must be a function"),
    "polynomial iters": (lambda o: lr_scheduler.PolynomialLR(o, total_iters=0), ValueError,
                         "total_iters must be an int >= 1"),
    "restarts T_0": (lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=0), ValueError,
                     "T_0 must be an int >= 1"),
    "restarts T_mult": (lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, 2, T_mult=1.5),
                        ValueError, "T_mult must be an int >= 1"),
    "cyclic mode": (lambda o: lr_scheduler.CyclicLR(o, 0.1, 1.0, mode="sawtooth"), ValueError,
                    "mode must be 'triangular'"),
    "cyclic per group": (lambda o: lr_scheduler.CyclicLR(o, [0.1, 0.2], 1.0), ValueError,
                         "base_lr lists 2 values for 1 parameter groups"),
    "cyclic momentum": (lambda o: lr_scheduler.CyclicLR(optim.Adagrad(o.param_groups[0]["params"]),
                        0.1, 1.0), ValueError, "cycle_momentum=True needs"),
    "sequential milestones": (
        lambda o: lr_scheduler.SequentialLR(o, [lr_scheduler.StepLR(o, 2)], milestones=[2]),
        ValueError, "one milestone fewer than schedulers"),
    "sequential optimizer": (
        lambda o: lr_scheduler.SequentialLR(o, [lr_scheduler.ConstantLR(lr_opt())], []),
        ValueError, "schedules another"),
    "chained plateau": (
        lambda o: lr_scheduler.ChainedScheduler([lr_scheduler.ReduceLROnPlateau(o)], o),
        ValueError, "cannot run ReduceLROnPlateau"),
    "chained empty": (lambda o: lr_scheduler.ChainedScheduler([]), ValueError,
                      "at least one scheduler"),
}  # fmt: skip


@pytest.mark.parametrize("bad", sorted(ARGUMENT_ERRORS))
def test_argument_errors_leave_the_optimizer_alone(bad) -> None:
    make, error, message = ARGUMENT_ERRORS[bad]
    opt = lr_opt(momentum=0.5)
    before = [(g["lr"], g["momentum"]) for g in opt.param_groups]
    with pytest.raises(error, match=re.escape(message)):
        make(opt)
    assert [(g["lr"], g["momentum"]) for g in opt.param_groups] == before


def test_schedulers_drive_the_new_optimizers() -> None:
    w = plugrad.tensor([1.0], requires_grad=True)
    opt = optim.NAdam([w], lr=0.1)
    schedule = lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=2)
    for _ in range(3):
        w.grad = plugrad.tensor([1.0])
        opt.step()
        schedule.step()
    assert opt.param_groups[0]["betas"][0] == pytest.approx(0.85)
    assert "CyclicLR" in repr(schedule) and "SequentialLR" in repr(
        lr_scheduler.SequentialLR(opt, [lr_scheduler.ConstantLR(opt)], [])
    )
