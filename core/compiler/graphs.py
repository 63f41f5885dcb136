"""Replaying a plan as one device graph (CUDA graphs on CuPy): ``compile(fn, device_graph=True)``.

A replayed plan still launches its kernels one by one from Python. A device
graph records those launches once and runs them again with one call, on the
same memory. So the graph reads its inputs from buffers of its own (each call
copies the arguments into them), writes its results into memory of its own
(each call copies them out, so no two calls share a result), and updates the
free tensors (parameters, optimizer state) in place, where they are. What
Python did while the graph was recorded -- setting ``.grad``, bumping
versions -- is done again after each launch.

A plan is graphed only when a launch repeats the whole call: no number read on
the host (range checks), no Python code the plan calls (an optimizer's step
counts, a scheduler), no random draws (a graph would repeat the same numbers),
no write into an argument or a view, no free tensor given a new array. Other
plans replay as usual, with a :class:`~plugrad.errors.CompileWarning` saying why.

The backend provides the recording (:meth:`plugrad.backend.Backend.graph_recorder`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from ..errors import CompileError, DeviceGraphError
from ..tensor import Tensor, _wrap, tensors_in
from . import codegen, passes
from .plan import Plan, Ref

__all__ = ["graphed", "tensors_changed_in_place", "why_not_graphed"]

_FREE_ARRAY_READ = re.compile(r"^F\[(\d+)\]\._array$")
_BUMP = re.compile(r"^([FL])\[(\d+)\]\._bump_version\(\)$")
_GRAD_WRITE = re.compile(r"^([FL])\[(\d+)\]\._grad = ")


def tensors_changed_in_place(plan: Plan) -> list[tuple[str, int]]:
    """Where the plan's tensors whose version it bumps are: ``("L" or "F", index)``, once each."""
    found: dict[tuple[str, int], None] = {}
    for step in plan.steps:
        if step.kind == "text" and type(step.target) is str:
            match = _BUMP.match(step.target)
            if match:
                found[match.group(1), int(match.group(2))] = None
    return list(found)


def why_not_graphed(plan: Plan, host_calls: int) -> str | None:
    """Why launching a graph of ``plan`` would not repeat the call, or None if it would."""
    if host_calls:
        return "it calls Python code at every replay (an optimizer's step counts, a scheduler)"
    namespaces = plan.namespaces
    writable: set[str] = set()  # free tensors' arrays, and new arrays the plan made
    for step in plan.steps:
        target = step.target
        if step.kind == "text" and type(target) is str:
            if _FREE_ARRAY_READ.match(target) and step.out is not None:
                writable.add(step.out)
            elif target.startswith("if "):
                return "it reads values on the host (a range check)"
            elif "._array = " in target:
                return "it gives a tensor a new array"
            continue
        written = None
        if step.kind in ("inplace", "setitem"):
            written = step.args[0]
            if step.kind == "setitem":
                return "it assigns into part of an array"
        elif step.kind == "call" and "out" in step.kwargs:
            written = step.kwargs["out"]
        elif step.effect:
            label = target.partition(".")[0] if type(target) is str else ""
            if label not in namespaces:
                return "it draws random numbers or calls a function with effects"
            return "it calls a function that writes into an array"
        elif step.kind == "method":
            return "it calls a method of an array"
        if written is not None:
            if type(written) is not Ref or written.name not in writable:
                return "it writes into an argument or a view"
            if step.out is not None:
                writable.add(step.out)  # the array written into
        elif step.out is not None and step.kind in ("call", "binop", "unary"):
            function = passes._elementwise_function(step)
            if function is not None and function[1] in passes._OWNED_RESULT:
                writable.add(step.out)  # a new array that nothing else holds
    return None


def graphed(
    plan: Plan,
    replay: Callable[..., Any],
    record: Callable[[Callable[[], list[Any]]], Callable[[], None]],
) -> Callable[..., Any]:
    """``replay`` made to launch a device graph of the plan, recorded on its first call.

    ``record(work)`` runs ``work`` once while recording the kernels it launches
    and returns ``launch``, which runs them again on the same memory; ``work``
    returns the arrays a launch writes that each call reads (results, gradients).
    """
    guards_only = dataclasses.replace(plan, steps=[], output="None", output_refs=())
    check, _ = codegen.build(guards_only, "<plugrad graph guards>")
    bumps: list[tuple[str, int]] = []
    grads: dict[tuple[str, int], None] = {}  # in order, without repeats
    for step in plan.steps:
        if step.kind != "text" or type(step.target) is not str:
            continue
        match = _BUMP.match(step.target)
        if match:
            bumps.append((match.group(1), int(match.group(2))))
        match = _GRAD_WRITE.match(step.target)
        if match:
            grads[match.group(1), int(match.group(2))] = None
    recorded: dict[str, Any] = {}

    def run(L: Any, F: Any) -> Any:
        if check(L, F) is codegen.MISS:
            return codegen.MISS
        if "unrecordable" in recorded:
            return replay(L, F)
        graph = recorded.get("graph")
        if graph is None or any(t._array is not a for t, a in zip(F, graph.free_arrays)):
            # Recorded (again: a free tensor has a new array) and launched once.
            try:
                graph = recorded["graph"] = _Graph(replay, record, L, F, list(grads))
            except DeviceGraphError as error:
                recorded["unrecordable"] = True
                return codegen.replay_with_warning(
                    f"plugrad.compile: a plan replays without a device graph: {error}",
                    replay,
                    L,
                    F,
                )
        else:
            for tensor, static in zip(L, graph.static_inputs):
                static._array[...] = tensor._array
            graph.launch()
        for which, index in bumps:
            (L if which == "L" else F)[index]._bump_version()
        for which, index, grad in graph.grads or ():
            (L if which == "L" else F)[index]._grad = None if grad is None else _copied(grad)
        return _copied(graph.result)

    return run


class _Graph:
    """One recording: the static input tensors, the launch, what it writes."""

    def __init__(
        self,
        replay: Callable[..., Any],
        record: Callable[[Callable[[], list[Any]]], Callable[[], None]],
        L: Any,
        F: Any,
        grads: list[tuple[str, int]],
    ) -> None:
        self.static_inputs = [_wrap(_copy(t), t._device, t._requires_grad, None) for t in L]
        self.free_arrays = [t._array for t in F]
        self.result: Any = None
        #: (``"F"`` or ``"L"``, index, the .grad the recorded call left) for each .grad it set.
        self.grads: list[tuple[str, int, Any]] | None = None

        def work() -> list[Any]:
            result = replay(self.static_inputs, F)
            if result is codegen.MISS:
                raise CompileError(
                    "a compiled plan's guards failed while its device graph was recorded"
                )
            written = [
                (which, index, (self.static_inputs if which == "L" else F)[index]._grad)
                for which, index in grads
            ]
            if self.grads is None:  # not when a backend runs the work again to launch it
                self.result, self.grads = result, written
            arrays = [t._array for t in tensors_in(result)]
            return arrays + [g._array for _, _, g in written if g is not None]

        # A recording that fails may have run part of the work (or set .grad to memory
        # that no kernel wrote): the free tensors are put back as they were.
        saved = [(t, t._grad, _copy(t)) for t in F]
        try:
            self.launch = record(work)
        except DeviceGraphError:
            for tensor, grad, values in saved:
                tensor._grad = grad
                tensor._array[...] = values
            raise


def _copy(tensor: Tensor) -> Any:
    """A copy of ``tensor``'s array."""
    return tensor._device.xp.asarray(tensor._array, copy=True)


def _copied(value: Any) -> Any:
    """``value`` with every Tensor in it replaced by one holding a copy of its array."""
    if isinstance(value, Tensor):
        return _wrap(_copy(value), value._device, value._requires_grad, None)
    kind = type(value)
    if kind is tuple or kind is list:
        return kind(_copied(v) for v in value)
    if kind is dict:
        return {k: _copied(v) for k, v in value.items()}
    return value
