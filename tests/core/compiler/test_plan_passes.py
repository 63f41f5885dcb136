"""Plan passes from plugins: validated when they register, isolated when they fail."""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest

import plugrad
from plugrad.compiler.plan import Plan, Step
from plugrad.errors import CompileWarning, PluginOutputError, PluginRegistrationError
from plugrad.hookspecs import hookimpl

# Capture and the engine's callbacks are machinery: tested on NumPy (the strict backend
# is covered by its own test where it matters).
pytestmark = pytest.mark.usefixtures("on_numpy")


def _pass_plugin(*rewrites):
    namespace = types.SimpleNamespace()
    namespace.plugrad_plan_passes = hookimpl(lambda: list(rewrites))
    return namespace


def _program(a):
    return plugrad.exp(a) * 2.0


def _exp_replaced_by(function):
    def rewrite(plan: Plan) -> Plan:
        steps = [
            Step("call", s.out, function, s.args, s.kwargs, s.effect)
            if s.kind == "call" and s.target == "xp.exp"
            else s
            for s in plan.steps
        ]
        return dataclasses.replace(plan, steps=steps)

    return rewrite


def test_a_plugin_pass_rewrites_the_replayed_code(registered):
    calls = []

    def counted_exp(x):
        calls.append(x.shape)
        return np.exp(x)

    registered(_pass_plugin(_exp_replaced_by(counted_exp)), "counting_pass")
    compiled = plugrad.compile(_program)
    a = plugrad.tensor([0.0, 1.0])
    source = compiled.code(a)
    assert "xp.exp(" not in source
    calls.clear()
    np.testing.assert_array_equal(compiled(a).numpy(), _program(a).numpy())
    assert calls == [(2,)]


def test_a_failing_pass_is_skipped_with_a_warning_naming_it(registered):
    def broken(plan):
        raise RuntimeError("boom")

    def wrong_type(plan):
        return "not a plan"

    registered(_pass_plugin(broken, wrong_type), "broken_pass")
    compiled = plugrad.compile(_program)
    a = plugrad.tensor([0.0, 1.0])
    np.testing.assert_array_equal(compiled(a).numpy(), _program(a).numpy())  # captured
    with pytest.warns(CompileWarning) as record:  # passes run as the plan is first replayed
        result = compiled(a)
    assert {w.filename for w in record} == {__file__}  # the line calling the function
    messages = [str(w.message) for w in record]
    assert any("broken_pass" in m and "RuntimeError: boom" in m for m in messages)
    assert any("broken_pass" in m and "returned a str" in m for m in messages)
    np.testing.assert_array_equal(result.numpy(), _program(a).numpy())
    np.testing.assert_array_equal(compiled(a).numpy(), _program(a).numpy())


@pytest.mark.parametrize("requires_grad", [False, True])
def test_a_pass_whose_plan_cannot_run_is_skipped_with_a_warning(registered, requires_grad):
    # Every call after the capture raised NameError from the replayed code (or, with a
    # graph, a bare AssertionError), naming no plugin; one that emptied the steps in place
    # also spoiled the plan the others used.
    def dropped(plan):
        return dataclasses.replace(plan, steps=[])

    def cleared_in_place(plan):
        plan.steps.clear()
        return plan

    def reads_too_early(plan):
        return dataclasses.replace(plan, steps=plan.steps[::-1])

    registered(_pass_plugin(dropped, cleared_in_place, reads_too_early), "malformed_pass")
    compiled = plugrad.compile(_program)
    a = plugrad.tensor([0.0, 1.0], requires_grad=requires_grad)
    first = compiled(a)  # captured
    with pytest.warns(CompileWarning) as record:  # passes run as the plan is first replayed
        replayed = compiled(a)
    messages = [str(w.message) for w in record]
    assert sum("malformed_pass" in m and "no step computes" in m for m in messages) == 2
    assert any("malformed_pass" in m and "before any step computes it" in m for m in messages)
    expected = _program(a).detach().numpy()
    np.testing.assert_array_equal(first.detach().numpy(), expected)
    np.testing.assert_array_equal(replayed.detach().numpy(), expected)
    np.testing.assert_array_equal(compiled(a).detach().numpy(), expected)
    if requires_grad:
        replayed.sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), 2 * np.exp([0.0, 1.0]))


@pytest.mark.parametrize("answer", [42, lambda: None, lambda plan, other: plan])
def test_a_pass_that_is_not_a_function_of_one_plan_is_rejected(answer):
    with pytest.raises(PluginRegistrationError, match=r"plugin 'bad_pass'.*plugrad_plan_passes"):
        plugrad.plugins.register(_pass_plugin(answer), name="bad_pass")
    compiled = plugrad.compile(_program)
    a = plugrad.tensor([0.5])
    np.testing.assert_array_equal(compiled(a).numpy(), _program(a).numpy())


# -- checking mode: a rewritten plan must agree with the plan it rewrote ----------------


def _training_step(x, w):
    w.grad = None
    loss = (plugrad.exp(x * w) * 2.0).sum()
    loss.backward()
    with plugrad.no_grad():
        w -= 0.1 * w.grad
    return loss


def test_checking_mode_finds_a_pass_whose_plan_disagrees_on_its_first_replay(registered):
    registered(_pass_plugin(_exp_replaced_by(lambda a: np.exp(a) * 1.01)), "wrong_pass")
    x = plugrad.tensor([0.5, -1.0, 2.0])
    w = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    compiled = plugrad.compile(_training_step)
    with plugrad.plugins.checking(True):
        compiled(x, w)  # captured
        before = w.detach().numpy().copy()
        grad = w.grad
        for _ in range(3):  # refused at every call, never replayed through the wrong pass
            with pytest.raises(PluginOutputError, match=r"plan pass .*'wrong_pass'.*first replay"):
                compiled(x, w)
            # Left as it was: the values, and the .grad object with its values.
            np.testing.assert_array_equal(w.detach().numpy(), before)
            assert w.grad is grad


def test_checking_mode_accepts_a_pass_that_agrees_and_then_replays_its_plan(registered):
    calls = []

    def counted_exp(a):
        calls.append(1)
        return np.exp(a)

    registered(_pass_plugin(_exp_replaced_by(counted_exp)), "right_pass")
    x = plugrad.tensor([0.5, -1.0, 2.0])
    w, w_eager = (plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True) for _ in range(2))
    compiled = plugrad.compile(_training_step)
    with plugrad.plugins.checking(True):
        for _ in range(4):
            loss = compiled(x, w)
            expected = _training_step(x, w_eager)
            np.testing.assert_array_equal(loss.detach().numpy(), expected.detach().numpy())
            np.testing.assert_array_equal(w.detach().numpy(), w_eager.detach().numpy())
            np.testing.assert_array_equal(w.grad.numpy(), w_eager.grad.numpy())
    assert compiled.captures == 1
    assert len(calls) == 3  # the rewritten plan's replays (the check ran it once)


def test_checking_mode_says_when_it_cannot_check_a_plans_passes(registered):
    registered(_pass_plugin(_exp_replaced_by(np.exp)), "harmless_pass")
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    optimizer = plugrad.optim.Adam([w], lr=0.1)

    def step(x):
        optimizer.zero_grad()
        plugrad.exp(x * w).sum().backward()
        optimizer.step()

    compiled = plugrad.compile(step)
    x = plugrad.tensor([0.5, 1.0])
    with plugrad.plugins.checking(True):
        compiled(x)
        compiled(x)  # the optimizer made its state: captured again
        with pytest.warns(CompileWarning, match="cannot check the plan passes.*step counts"):
            compiled(x)


def _ops_plugin(ops=(), kernels=()):
    namespace = types.SimpleNamespace()
    namespace.plugrad_ops = hookimpl(lambda: list(ops))
    namespace.plugrad_kernels = hookimpl(lambda: list(kernels))
    return namespace


def _scaling_op(k):
    from plugrad.opdef import op

    return op("scaled_for_plans", lambda xp, x, /: x * k, vjp=lambda xp, g, ans, x: g * k)


def test_a_registration_that_changes_the_tables_forgets_every_plan(registered):
    # (plans replayed the old op and the old kernel after a plugin was registered again)
    from plugrad.kerneldef import kernel

    name = registered(_ops_plugin([_scaling_op(2.0)]), "plans_v1")
    scaled = plugrad.compile(lambda x: plugrad.ops.scaled_for_plans(x).sum())
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(3):
        assert scaled(x).item() == 6.0
    plugrad.plugins.unregister(name)
    with pytest.raises(AttributeError, match="scaled_for_plans"):  # the op is gone
        scaled(x)
    registered(_ops_plugin([_scaling_op(3.0)]), "plans_v2")
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(3):
        x.grad = None
        out = scaled(x)
        out.backward()
        assert out.item() == 9.0 and x.grad.tolist() == [3.0, 3.0]
    exp_sum = plugrad.compile(lambda x: plugrad.exp(x).sum())
    zeros = plugrad.zeros(2)
    for _ in range(3):
        assert exp_sum(zeros).item() == 2.0
    five = kernel("exp", backend="numpy", fn=lambda xp, x, /: xp.exp(x) * 0 + 5)
    registered(_ops_plugin(kernels=[five]), "plans_exp_override")
    assert exp_sum(zeros).item() == plugrad.exp(zeros).sum().item() == 10.0
