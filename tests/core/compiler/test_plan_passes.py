"""Plan passes from plugins: validated when they register, isolated when they fail."""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest

import plugrad
from plugrad.compiler.plan import Plan, Step
from plugrad.errors import CompileWarning, PluginRegistrationError
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


def test_a_plugin_pass_rewrites_the_replayed_code(registered):
    calls = []

    def counted_exp(x):
        calls.append(x.shape)
        return np.exp(x)

    def exp_through_counter(plan: Plan) -> Plan:
        steps = [
            Step("call", s.out, counted_exp, s.args, s.kwargs, s.effect)
            if s.kind == "call" and s.target == "xp.exp"
            else s
            for s in plan.steps
        ]
        return dataclasses.replace(plan, steps=steps)

    registered(_pass_plugin(exp_through_counter), "counting_pass")
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
    with pytest.warns(CompileWarning) as record:
        result = compiled(a)
    messages = [str(w.message) for w in record]
    assert any("broken_pass" in m and "RuntimeError: boom" in m for m in messages)
    assert any("broken_pass" in m and "returned a str" in m for m in messages)
    np.testing.assert_array_equal(result.numpy(), _program(a).numpy())
    np.testing.assert_array_equal(compiled(a).numpy(), _program(a).numpy())


@pytest.mark.parametrize("answer", [42, lambda: None, lambda plan, other: plan])
def test_a_pass_that_is_not_a_function_of_one_plan_is_rejected(answer):
    with pytest.raises(PluginRegistrationError, match=r"plugin 'bad_pass'.*plugrad_plan_passes"):
        plugrad.plugins.register(_pass_plugin(answer), name="bad_pass")
    compiled = plugrad.compile(_program)
    a = plugrad.tensor([0.5])
    np.testing.assert_array_equal(compiled(a).numpy(), _program(a).numpy())
