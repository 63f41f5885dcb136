"""Checking mode for plan passes: a rewritten plan must agree with the plan it rewrote.

Plan passes are plugins, and checking mode checks plugins by what they
produce. On the first replay of a plan that plugins' passes rewrote, the plan
before them and the plan after each pass run from the same state: the
tensors the plan reads and writes are copied first and put back before each
run. The results and the tensors' values (and ``.grad``) after each run must
agree with the first within rounding (as an override kernel must agree with
the generic kernel); otherwise :class:`~plugrad.errors.PluginOutputError`
names the first pass that broke it, and every tensor is left as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import checking as _checking
from ..errors import PluginOutputError
from ..tensor import Tensor
from . import codegen
from .plan import Plan

__all__ = ["first_replay_checked"]


def first_replay_checked(
    rewrites: list[tuple[str, Plan]], host_calls: int, filename: str
) -> Callable[..., Any]:
    """A replay whose first run checks each plan in ``rewrites`` against the first one."""
    built = [(label, codegen.build(plan, filename)[0]) for label, plan in rewrites]
    final = built[-1][1]
    state = {"checked": False}
    reason = _why_unrepeatable(rewrites[0][1], host_calls)

    def replay(L: Any, F: Any) -> Any:
        if state["checked"]:
            return final(L, F)
        if reason is not None:
            state["checked"] = True
            return codegen.replay_with_warning(
                f"plugrad's checking mode cannot check the plan passes of this plan: {reason}",
                final,
                L,
                F,
            )
        tensors = _touched(L, F)
        before = [_snapshot(t) for t in tensors]
        runs = []
        for index, (label, run) in enumerate(built):
            if index:
                for saved in before:
                    _restore(saved)
            result = run(L, F)
            if result is codegen.MISS:  # the guards read nothing a run changed
                return result
            runs.append((label, result, [_snapshot(t) for t in tensors]))
        _, expected, expected_state = runs[0]
        for label, result, after in runs[1:]:
            problem = _disagreement(expected, result) or _state_disagreement(expected_state, after)
            if problem is not None:
                for saved in before:
                    _restore(saved)
                # Not marked checked: every later call is checked again (and refused alike),
                # never replayed through the rewrite that disagreed.
                raise PluginOutputError(
                    f"{label} rewrote a plan into one that disagrees with it on its first "
                    f"replay: {problem} (found by plugrad's checking mode)"
                )
        state["checked"] = True
        return runs[-1][1]

    return replay


def _why_unrepeatable(plan: Plan, host_calls: int) -> str | None:
    """Why running ``plan`` twice from copied tensors would not repeat the same step, if so."""
    if host_calls:
        return "it calls Python code that keeps its own state (a scheduler, an optimizer)"
    for step in plan.steps:
        target = step.target
        if not step.effect:
            continue
        if step.kind == "call" and type(target) is not str:
            return "it draws random numbers"
        if step.kind == "text" and type(target) is str and target.startswith("advance_"):
            return "an optimizer's step counts advance at every replay"
    return None


def _touched(L: Any, F: Any) -> list[Tensor]:
    seen: dict[int, Tensor] = {}
    for tensor in (*L, *F):
        if isinstance(tensor, Tensor):
            seen.setdefault(id(tensor), tensor)
    return list(seen.values())


def _copy(xp: Any, array: Any) -> Any:
    return xp.asarray(array, copy=True)


def _snapshot(tensor: Tensor) -> tuple[Any, ...]:
    array = tensor._array
    grad = tensor._grad
    grad_array = None if grad is None else grad._array
    xp = tensor._device.xp  # a tensor's .grad is on its device
    return (
        tensor,
        array,
        _copy(xp, array),
        grad,
        grad_array,
        None if grad_array is None else _copy(xp, grad_array),
    )


def _restore(saved: tuple[Any, ...]) -> None:
    tensor, array, values, grad, grad_array, grad_values = saved
    xp = tensor._device.xp
    tensor._array = _write(xp, array, values)
    tensor._grad = grad
    if grad is not None:
        grad._array = _write(xp, grad_array, grad_values)


def _write(xp: Any, array: Any, values: Any) -> Any:
    """``array`` holding ``values`` again (in place where the library allows it)."""
    try:
        array[...] = values
    except (TypeError, ValueError, AttributeError):
        return _copy(xp, values)
    return array


def _disagreement(expected: Any, got: Any, where: str = "the result") -> str | None:
    if isinstance(expected, Tensor) and isinstance(got, Tensor):
        return _arrays_disagree(expected, got._array, expected._array, where)
    if type(expected) in (tuple, list) and type(got) is type(expected):
        if len(got) != len(expected):
            return f"{where} has {len(got)} items, not {len(expected)}"
        for index, (a, b) in enumerate(zip(expected, got)):
            problem = _disagreement(a, b, f"{where}[{index}]")
            if problem is not None:
                return problem
        return None
    if type(expected) is dict and type(got) is dict:
        if expected.keys() != got.keys():
            return f"{where} has other keys"
        for key in expected:
            problem = _disagreement(expected[key], got[key], f"{where}[{key!r}]")
            if problem is not None:
                return problem
        return None
    return None if expected == got else f"{where} is {got!r}, not {expected!r}"


def _state_disagreement(expected: list[tuple[Any, ...]], got: list[tuple[Any, ...]]) -> str | None:
    for index, (a, b) in enumerate(zip(expected, got)):
        tensor = a[0]
        problem = _arrays_disagree(tensor, b[2], a[2], f"the values of tensor {index}")
        if problem is not None:
            return problem
        if (a[3] is None) != (b[3] is None):
            return f"tensor {index} has a .grad in one run only"
        if a[3] is not None:
            problem = _arrays_disagree(tensor, b[5], a[5], f"the .grad of tensor {index}")
            if problem is not None:
                return problem
    return None


def _arrays_disagree(tensor: Tensor, got: Any, expected: Any, where: str) -> str | None:
    if tuple(got.shape) != tuple(expected.shape) or got.dtype != expected.dtype:
        return (
            f"{where} has shape {tuple(got.shape)} and dtype {got.dtype}, not "
            f"{tuple(expected.shape)} and {expected.dtype}"
        )
    device = tensor._device
    dtype = device._dtype_from_native.get(expected.dtype)
    if dtype is None:
        return None
    mismatch = _checking._mismatch(device.xp, got, expected, dtype)
    return None if mismatch is None else f"{where}: {mismatch}"
