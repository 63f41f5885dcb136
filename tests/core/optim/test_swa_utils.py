"""``optim.swa_utils``: AveragedModel (SWA and EMA), SWALR and update_bn against PyTorch's."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad.optim import swa_utils
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)


def build(lib: Any) -> Any:
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
    return model.double()


def load(lib: Any, model: Any, arrays: list[np.ndarray]) -> None:
    with lib.no_grad():
        for parameter, array in zip(model.parameters(), arrays, strict=True):
            parameter.copy_(lib.tensor(array))


AVERAGERS = {
    "swa": lambda lib: {},
    "ema multi": lambda lib: {"multi_avg_fn": lib.optim.swa_utils.get_ema_multi_avg_fn(0.8)},
    "ema one by one": lambda lib: {"avg_fn": lib.optim.swa_utils.get_ema_avg_fn(0.7)},
    "swa one by one": lambda lib: {"avg_fn": lib.optim.swa_utils.get_swa_avg_fn()},
    "swa buffers": lambda lib: {"use_buffers": True},
    "ema buffers": lambda lib: {
        "multi_avg_fn": lib.optim.swa_utils.get_ema_multi_avg_fn(0.5),
        "use_buffers": True,
    },
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(AVERAGERS))
def test_averaged_model_agrees_with_torch(name: str, backend: str) -> None:
    shapes = [tuple(p.shape) for p in build(torch).parameters()]
    steps = [[RNG.normal(size=s) for s in shapes] for _ in range(4)]
    batches = [RNG.normal(size=(5, 3)) for _ in range(4)]
    results = []
    for lib in (plugrad, torch):
        with plugrad.use_backend(backend) if lib is plugrad else _no_context():
            model = build(lib)
            averaged = lib.optim.swa_utils.AveragedModel(model, **AVERAGERS[name](lib))
            for arrays, batch in zip(steps, batches, strict=True):
                load(lib, model, arrays)
                model(lib.tensor(batch))  # moves the batch-norm statistics
                averaged.update_parameters(model)
            state = averaged.state_dict()
            results.append(
                {key: np.asarray(value.detach().numpy()) for key, value in state.items()}
            )
    ours, theirs = results
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-12, atol=1e-14, err_msg=key)
    assert int(ours["n_averaged"]) == 4


class _no_context:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None


def test_averaged_model_forwards_to_its_copy_and_leaves_the_model_alone() -> None:
    model = plugrad.nn.Linear(2, 1)
    swa = swa_utils.AveragedModel(model)
    assert swa.module is not model and swa.module.weight is not model.weight
    x = plugrad.ones(3, 2)
    assert swa(x).tolist() == model(x).tolist()
    before = model.weight.tolist()
    swa.update_parameters(model)
    assert model.weight.tolist() == before
    loss = swa(x).sum()
    loss.backward()  # the copy's parameters are trainable as any module's
    assert swa.module.weight.grad is not None and model.weight.grad is None


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 3])
def test_swalr_agrees_with_torch(strategy: str, anneal_epochs: int) -> None:
    rates = []
    for lib in (plugrad, torch):
        w = lib.zeros(1, requires_grad=True)
        v = lib.zeros(1, requires_grad=True)
        optimizer = lib.optim.SGD([{"params": [w]}, {"params": [v], "lr": 0.5}], lr=1.0)
        schedule = lib.optim.swa_utils.SWALR(
            optimizer, swa_lr=[0.05, 0.2], anneal_epochs=anneal_epochs, anneal_strategy=strategy
        )
        seen = [schedule.get_last_lr()]
        for _ in range(6):
            optimizer.step()
            schedule.step()
            seen.append(schedule.get_last_lr())
        rates.append(seen)
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12)


def test_swalr_after_another_schedule_and_its_state_dict() -> None:
    rates = []
    for lib in (plugrad, torch):
        w = lib.zeros(1, requires_grad=True)
        optimizer = lib.optim.SGD([w], lr=1.0)
        decay = lib.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.5)
        for _ in range(2):
            optimizer.step()
            decay.step()
        swa = lib.optim.swa_utils.SWALR(optimizer, swa_lr=0.01, anneal_epochs=4)
        for _ in range(5):
            optimizer.step()
            swa.step()
        rates.append(swa.get_last_lr())
        state = swa.state_dict()
        assert state["last_epoch"] == 5 and "optimizer" not in state
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-12)


def test_update_bn_agrees_with_torch() -> None:
    batches = [RNG.normal(size=(6, 3)) * 2 + 1 for _ in range(3)]
    shapes = [tuple(p.shape) for p in build(torch).parameters()]
    arrays = [RNG.normal(size=s) for s in shapes]
    results = []
    for lib in (plugrad, torch):
        model = build(lib)
        load(lib, model, arrays)
        model.eval()
        momentum = model[1].momentum
        # A loader of (input, label) pairs: the model gets the first element.
        loader = [(lib.tensor(b), lib.zeros(6)) for b in batches]
        lib.optim.swa_utils.update_bn(loader, model)
        assert not model.training and model[1].momentum == momentum
        bn = model[1]
        results.append([to_numpy(bn.running_mean), to_numpy(bn.running_var)])
        results[-1].append(int(bn.num_batches_tracked))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)
    assert results[0][2] == results[1][2] == 3


def to_numpy(value: Any) -> np.ndarray:
    return np.asarray(value.detach().numpy())


def test_update_bn_without_batch_norm_does_nothing() -> None:
    model = plugrad.nn.Sequential(plugrad.nn.Linear(2, 2), plugrad.nn.InstanceNorm1d(2))

    def loader() -> Any:
        raise AssertionError("the loader must not be read")
        yield  # pragma: no cover

    swa_utils.update_bn(loader(), model)


def test_bad_input_is_refused() -> None:
    model = plugrad.nn.Linear(2, 1)
    with pytest.raises(ValueError, match="not both"):
        swa_utils.AveragedModel(
            model, avg_fn=swa_utils.get_swa_avg_fn(), multi_avg_fn=swa_utils.get_swa_multi_avg_fn()
        )
    with pytest.raises(TypeError, match=r"plugrad\.nn\.Module"):
        swa_utils.AveragedModel(torch.nn.Linear(2, 1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="avg_fn must be a function"):
        swa_utils.AveragedModel(model, avg_fn=0.9)  # type: ignore[arg-type]
    for decay in (-0.1, 1.5, "0.9", True):
        with pytest.raises(ValueError, match=r"decay must be a number in \[0, 1\]"):
            swa_utils.get_ema_multi_avg_fn(decay)  # type: ignore[arg-type]
    swa = swa_utils.AveragedModel(model)
    with pytest.raises(ValueError, match="same architecture"):
        swa.update_parameters(plugrad.nn.Linear(3, 1))
    assert int(swa.n_averaged) == 0  # nothing changed
    optimizer = plugrad.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy"):
        swa_utils.SWALR(optimizer, swa_lr=0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs"):
        swa_utils.SWALR(optimizer, swa_lr=0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="lists 2 values for 1 parameter groups"):
        swa_utils.SWALR(optimizer, swa_lr=[0.1, 0.2])
    with pytest.raises(TypeError, match="update_bn"):
        swa_utils.update_bn([], torch.nn.Linear(1, 1))  # type: ignore[arg-type]


def test_averaging_integer_buffers_rounds_as_pytorch() -> None:
    counts = []
    for lib in (plugrad, torch):
        model = lib.nn.BatchNorm1d(2)
        averaged = lib.optim.swa_utils.AveragedModel(
            model, multi_avg_fn=lib.optim.swa_utils.get_ema_multi_avg_fn(0.5), use_buffers=True
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(3):
                model(lib.ones(4, 2))
                averaged.update_parameters(model)
        counts.append(int(averaged.module.num_batches_tracked))
    assert counts[0] == counts[1]


def test_update_bn_refuses_a_batch_it_cannot_give_the_model_and_keeps_the_statistics() -> None:
    # A dict batch raised AttributeError ('dict' object has no attribute 'dtype') from the
    # model, after the statistics had been reset. PyTorch's takes batch[0] of a list or tuple.
    model = plugrad.nn.BatchNorm1d(2)
    swa_utils.update_bn([plugrad.tensor([[1.0, 2.0], [3.0, 6.0]])], model)
    before = [
        model.running_mean.tolist(),
        model.running_var.tolist(),
        int(model.num_batches_tracked),
    ]
    for loader in ([{"x": plugrad.ones(2, 2)}], [plugrad.ones(2, 2), ({"x": 1},)], [[]]):
        with pytest.raises(
            plugrad.errors.ArgumentError, match=r"update_bn\(\): batch \d .*must be"
        ):
            swa_utils.update_bn(loader, model)
        after = [
            model.running_mean.tolist(),
            model.running_var.tolist(),
            int(model.num_batches_tracked),
        ]
        assert after == before and model.momentum == 0.1 and model.training
    results = []
    for lib, utils in ((plugrad, swa_utils), (torch, torch.optim.swa_utils)):
        norm = lib.nn.BatchNorm1d(2)
        batches = [
            (lib.tensor([[1.0, 2.0], [3.0, 6.0]]), 0),
            [lib.tensor([[5.0, 0.0], [1.0, 1.0]])],
        ]
        utils.update_bn(batches, norm)
        results.append((norm.running_mean.tolist(), norm.running_var.tolist()))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
