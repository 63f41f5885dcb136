"""Optimizer hooks, as torch.optim's: around step(), state_dict() and load_state_dict()."""

from __future__ import annotations

import warnings

import pytest

import plugrad
from plugrad import nn, optim
from plugrad.errors import CompileWarning
from plugrad.optim import hooks


def _trained(optimizer_class=optim.SGD, **options):
    w = nn.Parameter(plugrad.tensor([1.0, 2.0]))
    opt = optimizer_class([w], **options)
    w.grad = plugrad.tensor([1.0, 1.0])
    return w, opt


def test_step_hooks_run_in_pytorch_s_order_around_the_step():
    w, opt = _trained(lr=0.5)
    seen = []
    handles = [
        hooks.register_optimizer_step_pre_hook(lambda o, a, k: seen.append("every pre")),
        opt.register_step_pre_hook(lambda o, a, k: seen.append(("pre", w.tolist()))),
        opt.register_step_post_hook(lambda o, a, k: seen.append(("post", w.tolist()))),
        hooks.register_optimizer_step_post_hook(lambda o, a, k: seen.append("every post")),
    ]
    try:
        opt.step()
    finally:
        for handle in handles:
            handle.remove()
    assert seen == ["every pre", ("pre", [1.0, 2.0]), ("post", [0.5, 1.5]), "every post"]
    seen.clear()
    opt.step()
    assert seen == [] and w.tolist() == [0.0, 1.0]


def test_a_pre_hook_may_replace_the_step_s_arguments():
    _, opt = _trained(lr=0.5)
    calls = []

    def closure():
        calls.append(1)
        return plugrad.tensor(3.0)

    opt.register_step_pre_hook(lambda o, args, kwargs: ((), {"closure": closure}))
    assert opt.step().item() == 3.0 and calls == [1]
    opt.register_step_pre_hook(lambda o, args, kwargs: "not a pair")
    with pytest.raises(TypeError, match=r"returns None or \(args, kwargs\)"):
        opt.step()


def test_an_optimizer_with_a_step_of_its_own_runs_the_hooks_once():
    class Doubled(optim.SGD):
        def step(self, closure=None):  # calls SGD's step (itself hooked) through super()
            super().step(closure)
            return super().step(closure)

    w, opt = _trained(Doubled, lr=0.25)
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: seen.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: seen.append("post"))
    opt.step()
    assert seen == ["pre", "post"] and w.tolist() == [0.5, 1.5]
    w2, lbfgs = _trained(optim.LBFGS, lr=0.1, max_iter=1)
    lbfgs.register_step_post_hook(lambda o, a, k: seen.append("lbfgs"))
    lbfgs.step(lambda: (w2 * w2).sum())
    assert seen[-1:] == ["lbfgs"]


def test_state_dict_hooks_change_what_is_saved_and_loaded():
    w, opt = _trained(lr=0.5, momentum=0.9)
    opt.step()
    order = []
    opt.register_state_dict_pre_hook(lambda o: order.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    opt.register_state_dict_pre_hook(lambda o: order.append("first"), prepend=True)
    saved = opt.state_dict()
    assert order == ["first", "pre"] and saved["extra"] == 1

    fresh = optim.SGD([w], lr=0.1, momentum=0.9)
    loaded = []

    def drop_extra(o, state_dict):
        assert state_dict is not saved  # a copy: the caller's dict is left as it is
        state_dict.pop("extra")

    fresh.register_load_state_dict_pre_hook(drop_extra)
    fresh.register_load_state_dict_post_hook(lambda o: loaded.append(o.param_groups[0]["lr"]))
    fresh.load_state_dict(saved)
    assert loaded == [0.5] and "extra" in saved


def test_a_hook_that_is_not_callable_is_refused():
    _, opt = _trained(lr=0.1)
    with pytest.raises(TypeError, match="a hook must be callable"):
        opt.register_step_pre_hook(3)
    assert opt._optimizer_step_pre_hooks == []


def test_a_compiled_step_runs_the_hooks_at_every_replay_and_follows_them():
    model = nn.Linear(2, 1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    x = plugrad.ones(4, 2)

    def step():
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()

    compiled = plugrad.compile(step)
    for _ in range(2):
        compiled()
    seen = []
    handle = opt.register_step_post_hook(lambda o, a, k: seen.append(model.bias.item()))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for _ in range(3):
            compiled()
    assert len(seen) == 3 and seen[0] > seen[1] > seen[2]
    handle.remove()
    compiled()
    assert len(seen) == 3


def test_hooks_are_not_pickled_nor_deep_copied_as_in_pytorch():
    import copy
    import pickle

    w, opt = _trained(lr=0.5, momentum=0.9)
    opt.step()
    opt.register_step_pre_hook(lambda o, a, k: None)  # a lambda: not picklable
    for clone in (pickle.loads(pickle.dumps(opt)), copy.deepcopy(opt)):
        assert clone._optimizer_step_pre_hooks == []
        assert clone.param_groups[0]["lr"] == 0.5
        clone.register_step_post_hook(lambda o, a, k: None)
        clone.step()
    assert len(opt._optimizer_step_pre_hooks) == 1 and w.tolist() == [0.5, 1.5]
