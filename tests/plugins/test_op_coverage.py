"""Every registered op has rules or a no-gradient mark, and a case in the op tables."""

from __future__ import annotations

import importlib

from plugrad import registry
from plugrad.plugins import BUILTIN_OP_PLUGINS
from plugrad.testing import OpTests

TABLES = [f"test_{name.rsplit('.', 1)[1]}" for name in BUILTIN_OP_PLUGINS]


def ops_with_a_case() -> set[str]:
    """The ops with a case in an ``OpTests`` class of the built-in plugins' test modules."""
    ops: set[str] = set()
    for table in TABLES:
        for value in vars(importlib.import_module(table)).values():
            if isinstance(value, type) and issubclass(value, OpTests) and value is not OpTests:
                ops |= {case.op for case in value.cases}
    return ops


def test_every_builtin_plugin_has_a_table() -> None:
    for table in TABLES:
        module = vars(importlib.import_module(table))
        assert any(isinstance(v, type) and issubclass(v, OpTests) for v in module.values()), table


def test_every_op_has_rules_of_the_right_kind_and_a_case() -> None:
    tested = ops_with_a_case()
    missing = []
    for name in registry.op_names():
        op = registry.find_op(name)
        assert op.differentiable or not op.vjps, f"{name}: rules on a non-differentiable op"
        if op.differentiable:
            assert len(op.vjps) == len(op.input_names), f"{name}: a rule per input"
        if name not in tested:
            missing.append(name)
    assert not missing, "ops without a case in the op tables (plugrad.testing.OpCase):\n" + (
        "\n".join(missing)
    )
