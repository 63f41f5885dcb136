"""Every registered op has rules or a no-gradient mark, and a row in the op table."""

from __future__ import annotations

import importlib

from plugrad import registry
from plugrad.plugins import BUILTIN_OP_PLUGINS

TABLES = [f"test_{name.rsplit('.', 1)[1]}" for name in BUILTIN_OP_PLUGINS]


def rows() -> tuple[set[str], set[str]]:
    differentiable: set[str] = set()
    no_grad: set[str] = set()
    for table in TABLES:
        module = importlib.import_module(table)
        differentiable |= {case.op for case in getattr(module, "CASES", ())}
        no_grad |= {row.op for row in getattr(module, "NO_GRAD", ())}
    return differentiable, no_grad


def test_every_builtin_plugin_has_a_table() -> None:
    for table in TABLES:
        importlib.import_module(table)


def test_every_op_has_a_row_of_the_right_kind() -> None:
    differentiable, no_grad = rows()
    missing = []
    for name in registry.op_names():
        op = registry.find_op(name)
        assert op.differentiable or not op.vjps, f"{name}: rules on a non-differentiable op"
        if op.differentiable:
            assert len(op.vjps) == len(op.input_names), f"{name}: a rule per input"
            if name not in differentiable:
                missing.append(f"{name} (needs a Case row: forward, backward, double backward)")
        elif name not in no_grad:
            missing.append(f"{name} (needs a NoGrad row)")
    assert not missing, "ops without a row in the op table:\n" + "\n".join(missing)
