"""Replays that must do what the eager function does, where they once did not.

Each test runs a function eagerly and compiled (several calls, so plans are
replayed, not only captured) and compares what a user can observe.
"""

from __future__ import annotations

import copy

import pytest

import plugrad
from plugrad import nn, optim
from plugrad.errors import InPlaceModificationError


@pytest.mark.parametrize("source", ["the default generator", "a generator"])
def test_seeding_reaches_replays(source):
    generator = plugrad.Generator(seed=3)

    def noisy(x):
        if source == "a generator":
            return x * plugrad.rand(3, generator=generator)
        return x + plugrad.randn(3)

    def seed():
        if source == "a generator":
            generator.manual_seed(5)
        else:
            plugrad.manual_seed(0)

    compiled = plugrad.compile(noisy)
    x = plugrad.ones(3)
    for _ in range(4):
        seed()
        expected = noisy(x).tolist()
        seed()
        assert compiled(x).tolist() == expected
    assert compiled.captures == 1
    assert compiled(x).tolist() != compiled(x).tolist()  # unseeded: fresh numbers


def test_a_seeded_training_step_with_dropout_follows_eager():
    plugrad.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))
    twin = copy.deepcopy(model)
    optimizers = [optim.SGD(m.parameters(), lr=0.1) for m in (model, twin)]

    def step_of(m, opt):
        def step(x):
            opt.zero_grad()
            loss = m(x).square().mean()
            loss.backward()
            opt.step()
            return loss

        return step

    eager, compiled = step_of(model, optimizers[0]), plugrad.compile(step_of(twin, optimizers[1]))
    x = plugrad.ones(5, 4)
    for call in range(4):
        plugrad.manual_seed(10 + call)
        expected = eager(x).item()
        plugrad.manual_seed(10 + call)
        assert compiled(x).item() == expected
    for p, q in zip(model.parameters(), twin.parameters()):
        assert p.tolist() == q.tolist()


FREE = plugrad.tensor([1.0, 1.0, 1.0])
VIEWS = {"of the input": lambda x: x[1:], "of a free tensor": lambda x: FREE[1:]}


@pytest.mark.parametrize("made", sorted(VIEWS))
def test_a_returned_view_shares_its_base_version(made):
    function = VIEWS[made]
    compiled = plugrad.compile(function)
    for call in (function, compiled, compiled, compiled):
        x = plugrad.tensor([1.0, 1.0, 1.0])
        base = x if made == "of the input" else FREE
        w = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
        view = call(x)
        y = (w * base).sum()  # saves base
        before = base._version
        view.add_(10.0)
        assert base._version == before + 1
        with pytest.raises(InPlaceModificationError):
            y.backward()
        assert w.grad is None


def test_results_that_share_memory_share_their_version():
    def f(x):
        y = x * 2
        return y, y.view(3, 1)

    compiled = plugrad.compile(f)
    for function in (f, compiled, compiled):
        a, b = function(plugrad.ones(3))
        before = a._version
        b.mul_(2)
        assert a._version == b._version == before + 1
        assert a.tolist() == [4.0, 4.0, 4.0]


def test_zero_grad_outside_the_compiled_step_follows_eager():
    def world():
        plugrad.manual_seed(0)
        model = nn.Linear(2, 1)
        opt = optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            model(x).sum().backward()
            opt.step()

        return model, opt, step

    (model, opt, eager), (twin, twin_opt, step) = world(), world()
    compiled = plugrad.compile(step)
    x = plugrad.ones((1, 2))
    for call in range(7):
        if call % 3 == 2:
            opt.zero_grad()
            twin_opt.zero_grad()
        eager(x)
        compiled(x)
        for p, q in zip(model.parameters(), twin.parameters()):
            assert p.tolist() == q.tolist() and p.grad.tolist() == q.grad.tolist()
    # A .grad the replay made is the function's own array: it can be changed in place.
    for p in twin.parameters():
        p.grad.mul_(0.5)


def test_a_module_switched_to_eval_mode_is_seen():
    plugrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.BatchNorm1d(4))
    compiled = plugrad.compile(lambda x: model(x).detach())
    x = plugrad.randn(3, 4)
    for mode in ("train", "train", "eval", "eval", "train", "eval"):
        getattr(model, mode)()
        state = copy.deepcopy(model.state_dict())
        plugrad.manual_seed(7)
        expected = model(x).detach().tolist()
        model.load_state_dict(state)  # the running statistics as before the eager call
        plugrad.manual_seed(7)
        assert compiled(x).tolist() == expected, mode
    assert compiled.captures == 2


@pytest.mark.parametrize("shape", [(1, 2), (3, 2)])
def test_a_parameter_rebound_to_another_tensor_is_seen(shape):
    def world():
        plugrad.manual_seed(0)
        model = nn.Linear(2, 1 if shape == (1, 2) else 3, bias=False)

        def step(x):
            loss = model(x).sum()
            loss.backward()
            return loss.detach()

        return model, step

    (model, eager), (twin, step) = world(), world()
    compiled = plugrad.compile(step)
    x = plugrad.ones((1, 2))
    for call in range(4):
        if call == 2:
            model.weight = nn.Parameter(plugrad.full(shape, 5.0))
            twin.weight = nn.Parameter(plugrad.full(shape, 5.0))
        assert compiled(x).item() == eager(x).item()
        assert twin.weight.grad.tolist() == model.weight.grad.tolist()
