"""Plan passes: rewrites of a captured plan before it becomes code.

A pass is a function ``plan -> plan``. The built-in one removes dead code;
plugins add theirs through the ``plugrad_plan_passes`` hook.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable

from .. import plugin_tables as _plugin_tables
from .. import registry as _registry
from ..errors import CompileWarning
from .plan import Plan, Step

__all__ = ["eliminate_dead_code", "fold_constants", "run_passes"]

PlanPass = Callable[[Plan], Plan]


def eliminate_dead_code(plan: Plan) -> Plan:
    """Drop steps whose values nothing needs: no effect, no output, no later step uses them.

    The engine computes a gradient for every input that needs one, and some
    are never used (the gradient of a tensor whose ``.grad`` is not kept).
    """
    live = set(plan.output_refs)
    kept = []
    for step in reversed(plan.steps):
        if step.effect or (step.out is not None and step.out in live):
            kept.append(step)
            live.update(step.uses())
    kept.reverse()
    return dataclasses.replace(plan, steps=kept)


#: Functions that return a new array (never a view of an argument) on every backend.
_FRESH_RESULT = frozenset(
    {"add", "subtract", "multiply", "divide", "matmul", "where", "exp", "log", "negative"}
)


def fold_constants(plan: Plan) -> Plan:
    """Replace values that are the same at every replay by the arrays they held at capture.

    The engine seeds a backward pass with ``ones_like(loss)`` and broadcasts it
    through reductions: a chain of steps that depends on guarded shapes alone.
    A value is folded only where every step that reads it makes a new array
    from it (arithmetic), so the shared array is never written, returned or
    stored in a ``.grad``.
    """
    folded = plan.folded
    if not folded:
        return plan
    readers: dict[str, list[Step]] = {}
    for step in plan.steps:
        for name in step.uses():
            readers.setdefault(name, []).append(step)
    escaping = set(plan.output_refs)
    constants = dict(plan.constants)
    steps = []
    for step in plan.steps:
        name = step.out
        if (
            name in folded
            and name not in escaping
            and all(_only_reads(reader, folded) for reader in readers.get(name, ()))
        ):
            constant = f"folded_{name}"
            constants[constant] = folded[name]
            step = Step("text", name, constant)
        steps.append(step)
    return dataclasses.replace(plan, steps=steps, constants=constants)


def _only_reads(step: Step, folded: dict) -> bool:
    if step.effect:
        return False
    if step.out in folded or step.kind in ("binop", "unary"):
        return True
    target = step.target
    return (
        step.kind == "call"
        and type(target) is str
        and target.startswith("xp.")
        and (target[3:] in _FRESH_RESULT)
    )


def run_passes(plan: Plan) -> Plan:
    """Run the built-in passes, then those plugins registered, in order.

    A plugin's rewrite that raises or returns something else than a plan is
    skipped with a :class:`~plugrad.errors.CompileWarning` naming the plugin.
    """
    plan = eliminate_dead_code(fold_constants(plan))
    for plugin, rewrite in _registry._state.plan_passes:
        try:
            rewritten = rewrite(plan)
        except Exception as exc:
            problem = f"raised {type(exc).__name__}: {exc}"
        else:
            if isinstance(rewritten, Plan):
                plan = rewritten
                continue
            problem = f"returned a {type(rewritten).__name__}, not a Plan"
        warnings.warn(
            f"plugrad.compile: the plan pass {getattr(rewrite, '__qualname__', rewrite)!r} of "
            f"{_plugin_tables.describe_owner(plugin)} {problem}; the plan is used without it",
            CompileWarning,
            stacklevel=2,
        )
    return plan
