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

import contextlib
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .. import engine as _engine
from ..errors import CompileError, GraphFreedError, InPlaceModificationError
from ..node import Node
from ..tensor import Tensor, _wrap, tensors_in
from .plan import Plan, Ref, saved_across_yield, yield_index
from .tracer import TracedArray

__all__ = [
    "Backward",
    "CapturedGraphBackward",
    "CompiledFunctionBackward",
    "capture_backward",
    "outputs_with_graph",
    "standing_in",
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
        outputs, inputs, grad_outputs, retain_graph=True, allow_unused=True, input_hooks=False
    )
    if tracer.broken is not None:
        return None
    kept: list[str] = []
    kept_where: list[tuple[str, int]] = []
    reached = [_leaves_reached(t._edge) for t in outputs]
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


def _leaves_reached(edge: Any) -> dict[int, Tensor]:
    """The tensors at the ends of the graph behind ``edge``, by id."""
    found: dict[int, Tensor] = {}
    seen: set[int] = set()
    stack = [edge]
    while stack:
        edge = stack.pop()
        target = edge[0] if type(edge) is tuple else edge
        if target is None:
            continue
        if isinstance(target, Tensor):
            found[id(target)] = target
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


# -- arguments that carry a graph made before the call -------------------------------------


def standing_in(args: tuple[Any, ...], leaves: list[Tensor]) -> dict[int, Tensor]:
    """For each argument with a graph made before the call, a leaf standing in for it.

    A block compiled on its own (``block.compile()`` inside a larger model) gets
    its input with the graph of the layers before. The capture runs on a leaf
    that shares the argument's array (a detached view), so the plan's backward
    ends there; a replay's node leads on to the argument's own graph. Keyed by
    the argument's id.
    """
    return {
        id(t): t.detach().requires_grad_()
        for t in leaves
        if t._edge is not None and any(a is t for a in args)
    }


@contextlib.contextmanager
def refusing_backward(what: str) -> Iterator[None]:
    """No backward pass in this thread while the function runs on stand-ins: it would stop
    at them (other threads' backward passes run as ever)."""
    original = _engine._run
    capturing = threading.get_ident()

    def refused(*args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() != capturing:
            return original(*args, **kwargs)
        raise CompileError(
            f"plugrad.compile: {what} runs a backward pass while an argument carries a graph "
            "made before the call, which the capture cannot follow. Compile the whole step "
            "(the code that made that argument too), or pass the argument detached"
        )

    _engine._run = refused
    try:
        yield
    finally:
        _engine._run = original


def bridge_capture(
    outputs: list[Tensor], stand_ins: dict[int, Tensor], originals: list[Tensor]
) -> None:
    """Lead the capture's own results on to the graph before the call.

    The capture ran eagerly on stand-ins: its results' graph ends at them. Each
    result gets a :class:`CapturedGraphBackward` node (in place of its own),
    which differentiates that graph and hands the stand-ins' gradients to the
    arguments' graph and the others to the leaves it reached.
    """
    if not outputs:
        return
    by_stand_in = {id(stand_ins[id(t)]): t for t in originals if id(t) in stand_ins}
    reached: dict[int, Tensor] = {}
    for tensor in outputs:
        reached.update(_leaves_reached(tensor._edge))
    inputs = [t for t in reached.values() if t._requires_grad]
    edges = tuple(by_stand_in[id(t)]._edge if id(t) in by_stand_in else t for t in inputs)
    roots = [_wrap(t._array, t._device, True, t._edge) for t in outputs]
    node = CapturedGraphBackward(roots, inputs, outputs[0]._device)
    node._edges = edges
    for index, tensor in enumerate(outputs):
        tensor._edge = (node, index) if len(outputs) > 1 else node


class CapturedGraphBackward(Node):
    """The ``grad_fn`` of a capture's own result where arguments carried a graph made
    before the call: differentiates the graph the capture made (which ends at the
    stand-ins of those arguments) and hands their gradients on to the arguments'."""

    __slots__ = ("_inputs", "_roots", "n_outputs")

    def __init__(self, roots: list[Tensor], inputs: list[Tensor], device: Any) -> None:
        self._roots: list[Tensor] | None = roots
        self._inputs = inputs
        self._device = device
        self._edges = ()
        self._hooks = None
        self.n_outputs = len(roots)  # type: ignore[misc]  # one class, any count

    def name(self) -> str:
        return "CompiledFunctionBackward"

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        """The inputs' gradients, by an eager pass through the capture's graph."""
        roots = self._roots
        if roots is None:
            raise GraphFreedError(
                f"{self.name()}: trying to backward through the compiled function's result "
                "a second time, after its graph was freed; pass retain_graph=True to the "
                "first backward() to differentiate it again"
            )
        grads = grad if self.n_outputs > 1 else (grad,)
        pairs = [(r, g) for r, g in zip(roots, grads) if g is not None]
        device = self._device
        given = [g if create_graph else _wrap(g, device, False, None) for _, g in pairs]
        found = _engine.grad(
            [r for r, _ in pairs],
            self._inputs,
            given,
            retain_graph=True,
            create_graph=create_graph,
            allow_unused=True,
            input_hooks=False,
        )
        return tuple(g if g is None or create_graph else g._array for g in found)

    def _release(self) -> None:
        self._roots = None
