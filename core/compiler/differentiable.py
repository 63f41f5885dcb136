"""Compiled functions whose results carry a graph: the backward captured with the forward.

``model = plugrad.compile(model)`` and then ``loss_fn(model(x), y).backward()``
outside it: the result must be differentiable later, by a backward the
function does not run. The capture runs the engine's backward of the result
itself, on gradients that stand for the ones a later backward will bring
(values the plan reads at replay), so the plan holds both passes. It is
emitted as a generator: a replay runs the forward up to a ``yield`` that hands
out the result; the result's ``grad_fn`` (:class:`CompiledFunctionBackward`)
sends the output gradients in and gets the input gradients back, as many
times as ``retain_graph=True`` allows. The values the backward reads stay in
the generator's frame, as an eager graph keeps them on its nodes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import engine as _engine
from ..errors import CompileError, GraphFreedError, InPlaceModificationError
from ..node import Node, split_edge
from ..tensor import Tensor, _wrap, tensors_in
from .plan import Plan, Ref, saved_across_yield, yield_index
from .tracer import TracedArray

__all__ = [
    "Backward",
    "CompiledFunctionBackward",
    "capture_backward",
    "outputs_with_graph",
]


@dataclass(frozen=True)
class Backward:
    """What a capture learnt of the backward of a result that carries a graph."""

    #: The expression of the input gradients (the plan's output).
    output: str
    #: Where each input that gets a gradient is: ("L", index) or ("F", index).
    inputs: tuple[tuple[str, int], ...]
    #: For each of those inputs, the outputs whose graph reaches it: an input that only
    #: outputs without a gradient reach gets none (its ``.grad`` stays None, as eagerly).
    reaching: tuple[frozenset[int], ...]
    #: (shape, dtype) of each output the backward starts from.
    specs: tuple[tuple[tuple[int, ...], Any], ...]
    device: Any


def outputs_with_graph(tracer: Any, result: Any) -> list[Tensor]:
    """The tensors of ``result`` a later backward could differentiate (each once)."""
    found: dict[int, Tensor] = {}
    for tensor in tensors_in(result):
        edge = tensor._edge
        if edge is not None and id(tensor) in tracer._created and not tracer._graph_consumed(edge):
            if tracer.leads_to_consumed(edge):
                # Eagerly, its backward raises once it reaches what was freed; a plan's
                # backward would need those values.
                tracer.graph_break(
                    "a result's graph leads into one that a backward pass in the function "
                    "freed (it ran without retain_graph=True)"
                )
                return []
            found.setdefault(id(tensor), tensor)
    return list(found.values())


#: The names of plan values in an expression (``v12``, ``t3``, ``h0``).
_VALUE_NAME = re.compile(r"\b[vth]\d+\b")


def capture_backward(
    tracer: Any, outputs: list[Tensor], leaves: list[Tensor], result: str
) -> Backward | None:
    """Record the backward of ``outputs`` after the forward; None after a graph break.

    ``result`` is the expression of the function's result, whose ``outputs``
    the tracer made as tensors that require grad and have no graph yet.
    """
    names = [tracer._materialized.get(id(t)) for t in outputs]
    if None in names:
        tracer.graph_break("a result that carries a graph is not a tensor the plan makes")
        return None
    inputs: list[Tensor] = []
    where: list[tuple[str, int]] = []
    seen: set[int] = set()
    for label, tensors in (("L", leaves), ("F", list(tracer.free))):
        for index, tensor in enumerate(tensors):
            if tensor._requires_grad and id(tensor) not in seen:
                seen.add(id(tensor))
                inputs.append(tensor)
                where.append((label, index))
    # An argument that carries a graph made before the call ends the plan's graph: the
    # pass gives its gradient, and a later backward goes on into its graph.
    ends = {split_edge(t._edge): t for t in leaves if t._edge is not None}
    reached = [_inputs_reached(t._edge, ends) for t in outputs]
    for found in reached:
        for tensor in found.values():
            if tensor._requires_grad and id(tensor) not in seen:
                # (plugrad.ones(3, requires_grad=True), x.detach().requires_grad_() in the
                # function): each replay makes it anew, and the plan gives it no gradient.
                tracer.graph_break(
                    f"the result's graph reaches a tensor (shape {tensor.shape}) that the "
                    "call made and made require grad, whose gradient a replay would not give"
                )
                return None
    # The step that hands out the result and takes the output gradients in: the result's
    # expression with each plan value it names as an argument (renamed with the plan).
    reads: list[Ref] = []

    def argument(match: re.Match[str]) -> str:
        reads.append(Ref(match[0]))
        return "{" + str(len(reads) - 1) + "}"

    expression = _VALUE_NAME.sub(argument, result.replace("{", "{{").replace("}", "}}"))
    handed = "".join("{" + str(len(reads) + i) + "}, " for i in range(len(names)))
    reads += [Ref(name) for name in names]
    # Values only the capture sees (made outside the plan): the replay reads the real ones.
    stand_ins = tuple(_unrecorded(t._device.xp).ones_like(_real(t._array)) for t in outputs)
    traced = tracer.record(
        "text", f"yield ({expression}, ({handed}))", tuple(reads), None, stand_ins, effect=True
    )
    grad_outputs = [_wrap(g, t._device, False, None) for g, t in zip(traced, outputs)]
    grads = _engine.grad(
        outputs,
        inputs,
        grad_outputs,
        retain_graph=True,
        allow_unused=True,
        input_hooks=False,
        ends=frozenset(tracer.boundary.values()),
    )
    if tracer.broken is not None:
        return None
    kept: list[str] = []
    kept_where: list[tuple[str, int]] = []
    reaching: list[frozenset[int]] = []
    for grad, place, tensor in zip(grads, where, inputs):
        if grad is None:
            continue
        reaching.append(frozenset(i for i, found in enumerate(reached) if id(tensor) in found))
        array = grad._array
        if type(array) is not TracedArray:
            # The same array at every replay, which .grad would then hold and accumulate into.
            tracer.graph_break("a gradient of the result does not depend on the call's values")
            return None
        kept.append(array._ref.name)
        kept_where.append(place)
    if not kept:
        tracer.graph_break("no input of the call gets a gradient from its result")
        return None
    return Backward(
        output="(" + "".join(name + ", " for name in kept) + ")",
        inputs=tuple(kept_where),
        reaching=tuple(reaching),
        specs=tuple((tuple(t.shape), _real(t._array).dtype) for t in outputs),
        device=outputs[0]._device,
    )


def _inputs_reached(edge: Any, ends: dict[tuple[Any, int], Tensor]) -> dict[int, Tensor]:
    """The tensors at the ends of the graph behind ``edge``, by id: its leaves, and the
    arguments in ``ends`` (by their edges) whose graph was made before the call."""
    found: dict[int, Tensor] = {}
    seen = {id(node) for node, _ in ends}  # (not followed past: the graph before the call)
    stack = [edge]
    while stack:
        edge = stack.pop()
        if edge is None:
            continue
        target, index = split_edge(edge)
        if isinstance(target, Tensor):
            found[id(target)] = target
        elif (target, index) in ends:
            argument = ends[target, index]
            found[id(argument)] = argument
        elif id(target) not in seen:
            seen.add(id(target))
            stack.extend(getattr(target, "_edges", ()))
    return found


def _real(array: Any) -> Any:
    return getattr(array, "_real", array)


def _unrecorded(namespace: Any) -> Any:
    """The backend namespace behind the one a capture records through."""
    return namespace.__dict__.get("_real", namespace)


#: A text step that reads the array of an argument or a free tensor.
_TENSOR_READ = re.compile(r"([LF])\[(\d+)\]\._array")


def replaying(run: Callable[..., Any], plan: Plan, backward: Backward) -> Callable[[Any, Any], Any]:
    """A replay ``(L, F) -> result`` from the generator ``run`` that ``codegen.build`` made.

    Each call runs the forward and gives the result's differentiable tensors
    a :class:`CompiledFunctionBackward` node, whose edges lead to the inputs'.
    """
    saved = saved_across_yield(plan)
    watched: list[tuple[str, int]] = []  # tensors whose arrays the backward reads
    definitions = {step.out: step for step in plan.steps if step.out is not None}
    for name in saved:
        step = definitions[name]
        if step.kind == "text" and not step.args and type(step.target) is str:
            match = _TENSOR_READ.fullmatch(step.target)
            if match is not None:
                watched.append((match[1], int(match[2])))
    at = yield_index(plan)
    assert at is not None
    handed = plan.steps[at]
    outputs_read = []  # results whose arrays the backward reads (an ``exp``'s, say)
    names = handed.args[len(handed.args) - len(backward.specs) :]
    for index, ref in enumerate(names):
        made = definitions.get(ref.name)
        if made is not None and made.args and type(made.args[0]) is Ref:
            if made.args[0].name in saved:
                outputs_read.append(index)
    inputs, specs, device = backward.inputs, backward.specs, backward.device
    reaching = backward.reaching
    several = len(specs) > 1

    def replay(L: Any, F: Any) -> Any:
        steps = run(L, F)
        try:
            result, outputs = next(steps)
        except StopIteration as missed:  # a guard did not hold: nothing ran
            return missed.value
        node = CompiledFunctionBackward(steps, device, specs, reaching)
        node._edges = tuple(
            (t._edge or t) for t in ((L if label == "L" else F)[i] for label, i in inputs)
        )
        node._watched = tuple((L if label == "L" else F)[i] for label, i in watched) + tuple(
            outputs[i] for i in outputs_read
        )
        node._versions = tuple(t._version for t in node._watched)
        if several:
            for index, tensor in enumerate(outputs):
                tensor._edge = (node, index)
        else:
            outputs[0]._edge = node
        return result

    return replay


class CompiledFunctionBackward(Node):
    """The ``grad_fn`` of a compiled function's result: runs the captured backward.

    Its edges are those of the call's inputs that get a gradient (arguments,
    parameters and other tensors the function read); a backward through it
    is one call into the replayed code, which kept what the backward reads.
    """

    __slots__ = ("_reaching", "_run", "_specs", "_versions", "_watched", "n_outputs")

    def __init__(
        self, run: Any, device: Any, specs: tuple[Any, ...], reaching: tuple[frozenset[int], ...]
    ) -> None:
        self._run = run
        self._reaching = reaching
        self._device = device
        self._edges = ()
        self._hooks = None
        self._specs = specs
        self.n_outputs = len(specs)  # type: ignore[misc]  # one class, any count
        self._watched: tuple[Tensor, ...] = ()
        self._versions: tuple[int, ...] = ()

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        """The input gradients of one pass through the plan's backward (see the class)."""
        if create_graph:
            raise CompileError(
                "the backward of a compiled function's result cannot be differentiated "
                "again (create_graph=True): its plan computes gradients without recording "
                "them. Compile the whole step (the backward inside the compiled function, "
                "where create_graph=True is captured too), or call the function uncompiled"
            )
        run = self._run
        if run is None:
            raise GraphFreedError(
                f"{self.name()}: trying to backward through the compiled function's result "
                "a second time, after the values its backward reads were freed; pass "
                "retain_graph=True to the first backward() to differentiate it again"
            )
        for tensor, version in zip(self._watched, self._versions):
            if tensor._version != version:
                raise InPlaceModificationError(
                    f"{self.name()} needs a tensor of shape {tuple(tensor.shape)} as it was "
                    "when the compiled function ran, but it (or a view sharing its memory) "
                    f"has since been modified in place (version {tensor._version}, "
                    f"expected {version}). Compute the backward before modifying it, or "
                    "use an out-of-place operation (x = x + y instead of x += y)."
                )
        grads = grad if self.n_outputs > 1 else (grad,)
        if not any(g is None for g in grads):
            result: tuple[Any, ...] = run.send(grads)
            return result
        device = self._device
        received = frozenset(i for i, g in enumerate(grads) if g is not None)
        zeros = tuple(
            device.xp.zeros(shape, dtype=dtype, device=device.native) if g is None else g
            for g, (shape, dtype) in zip(grads, self._specs)
        )
        grads = tuple(
            g if reach & received else None for g, reach in zip(run.send(zeros), self._reaching)
        )
        # The plan's backward is linear in each output gradient: the zeros add nothing, unless
        # they met an infinity or a NaN (0 * inf), which eager autograd would never compute.
        xp = device.xp
        if not all(bool(xp.all(xp.isfinite(g))) for g in grads if g is not None):
            raise CompileError(
                f"{self.name()}: a backward through {len(received)} of the compiled "
                f"function's {self.n_outputs} results gave gradients that are not finite, "
                "which the zeros the plan's backward takes for the other results may have "
                "caused (0 * inf), where eager autograd would not. Return from the compiled "
                "function only the results to differentiate, or call it uncompiled"
            )
        return grads

    def _release(self) -> None:
        run, self._run = self._run, None
        self._watched = ()
        if run is not None:
            run.close()
