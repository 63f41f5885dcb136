"""The reverse-mode engine.

``backward`` walks the graph from the roots without recursion:

1. count, for every node reachable from the roots, how many edges lead into it;
2. start from the roots; a node runs only when every edge into it has
   delivered its gradient, so each tensor's gradient is fully summed before it
   is propagated further (diamonds, tensors used many times);
3. run the node's backward, drop its saved values unless ``retain_graph``,
   pass the input gradients along its edges, and forget its own gradient;
4. only when the whole pass has succeeded, accumulate into ``.grad``: an
   error part-way leaves every ``.grad`` as it was.

In an ordinary pass gradients are raw backend arrays; with ``create_graph``
they are Tensors and the backward rules are recorded like any other ops.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Sequence
from typing import Any

from . import anomaly as _anomaly
from . import floating_point_warnings as _floating_point_warnings
from . import graph as _graph
from . import inplace as _inplace
from . import lazy as _lazy
from .backend import WRITE_REFUSED
from .errors import (
    BACKEND_LINALG_ERRORS,
    ArgumentError,
    BackwardError,
    DeviceMismatchError,
    DtypeError,
    InPlaceModificationError,
    InvalidArgumentError,
    LinAlgError,
    PluginOutputError,
    PlugradError,
    ShapeError,
    add_note,
)
from .grad_mode import _state
from .node import Node as _Node
from .tensor import Tensor, _wrap, install_methods
from .tensor_hooks import PostAccumulateGradHook, RetainGrad

__all__ = [
    "backward",
    "grad",
    "queue_callback",
    "queue_failure_callback",
    "watch_backward_failures",
    "watch_gradient_ready",
]

#: id(leaf) -> (weak reference to the leaf, callback); see watch_gradient_ready.
_ready_callbacks: dict[int, tuple[weakref.ref[Tensor], Any]] = {}


class _ReadyHandle:
    """Stops a :func:`watch_gradient_ready` callback with ``remove()``."""

    __slots__ = ("entry", "key")

    def __init__(self, key: int, entry: tuple[weakref.ref[Tensor], Any]) -> None:
        self.key = key
        self.entry = entry

    def remove(self) -> None:
        # Only this registration: a later one for the same leaf replaced it and stays.
        if _ready_callbacks.get(self.key) is self.entry:
            del _ready_callbacks[self.key]


def watch_gradient_ready(leaf: Tensor, callback: Any) -> _ReadyHandle:
    """Call ``callback(leaf, gradient)`` during ``backward()`` once ``leaf``'s gradient is final.

    It runs as soon as the last node that contributes to ``leaf`` has run its
    backward, while the rest of the pass goes on, with the gradient this pass
    adds (a raw array, or a Tensor with ``create_graph``). ``.grad`` itself is
    only updated when the whole pass has succeeded, as always; the
    post-accumulate-grad hooks run then. Passes restricted with ``inputs=``, and
    :func:`plugrad.autograd.grad`, do not call it, nor is it called for a leaf
    that is itself one of the tensors ``backward()`` starts from. A leaf has at
    most one such callback: a new one replaces the previous. Only a weak
    reference to ``leaf`` is kept (the callback goes when the leaf does); the
    callback itself is kept until ``remove()``. Data-parallel training uses it
    to start communicating gradients while backward still computes others.
    """
    if leaf._edge is not None or not leaf._requires_grad:
        raise BackwardError("only leaves that require grad can be watched")
    key = id(leaf)

    def forget(_ref: Any) -> None:
        if _ready_callbacks.get(key) is entry:
            del _ready_callbacks[key]

    entry = (weakref.ref(leaf, forget), callback)
    _ready_callbacks[key] = entry
    return _ReadyHandle(key, entry)


#: Callbacks of watch_backward_failures, by a key of their own.
_failure_watchers: dict[int, Any] = {}
_failure_watcher_keys = itertools.count()


class _FailureWatch:
    """Stops a :func:`watch_backward_failures` callback with ``remove()``."""

    __slots__ = ("key",)

    def __init__(self, key: int) -> None:
        self.key = key

    def remove(self) -> None:
        _failure_watchers.pop(self.key, None)


def watch_backward_failures(callback: Any) -> _FailureWatch:
    """Call ``callback()`` whenever an outermost ``backward()`` pass in this process raises,
    before its error leaves it, until ``remove()``.

    For code that expects a backward pass and cannot tell one that failed before it
    reached its part of the graph (a hook on the loss raised) from one not yet run:
    DistributedDataParallel then leaves the pass the other ranks wait in. Only a weak
    reference to a bound method's object is kept.
    """
    key = next(_failure_watcher_keys)
    if hasattr(callback, "__self__"):
        method = weakref.WeakMethod(callback)

        def call() -> None:
            bound = method()
            if bound is None:
                _failure_watchers.pop(key, None)
            else:
                bound()

        _failure_watchers[key] = call
    else:
        _failure_watchers[key] = callback
    return _FailureWatch(key)


class _PassState(threading.local):
    #: The callbacks queued (see queue_callback) in this thread's running backward() pass.
    queued: list[Any] | None = None
    #: Those queued by queue_failure_callback, for the same pass.
    on_failure: list[Any] | None = None


_pass = _PassState()


def queue_callback(callback: Any) -> None:
    """Call ``callback()`` once the running ``backward()`` pass has updated every ``.grad``.

    As PyTorch's ``Variable._execution_engine.queue_callback``: for a hook or a
    :func:`watch_gradient_ready` callback that must act once at the end of the
    pass, after the post-accumulate-grad hooks. Callbacks run in the order queued
    (one queued by another runs too), in the pass's grad mode; one that raises
    makes ``backward()`` raise. Only during a ``backward()`` pass.
    """
    queued = _pass.queued
    if queued is None:
        raise BackwardError(
            "queue_callback() queues a call for the end of the running backward() pass; "
            "call it from a hook during backward()"
        )
    queued.append(callback)


def queue_failure_callback(callback: Any) -> None:
    """Call ``callback()`` if the running ``backward()`` pass raises, before the error leaves it.

    For code that took part in the pass and must not be left half-way when it fails
    (DistributedDataParallel sends the all-reduces the other ranks wait for). Callbacks
    run in the order queued; the pass's error propagates after them (one that raises
    itself raises its own error, chained to it). Only during a ``backward()`` pass.
    """
    on_failure = _pass.on_failure
    if on_failure is None:
        raise BackwardError(
            "queue_failure_callback() queues a call for a failure of the running backward() "
            "pass; call it from a hook during backward()"
        )
    on_failure.append(callback)


#: Held while gradients are added into ``.grad``: concurrent backward passes into
#: shared leaves then add up exactly (one acquisition per pass).
_accumulation_lock = threading.Lock()


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Tensor | Sequence[Tensor] | None = None,
) -> None:
    """Accumulate into ``.grad`` the gradients of ``tensors`` with respect to the graph leaves.

    Parameters
    ----------
    tensors : Tensor or sequence of Tensor
        The outputs to differentiate.
    grad_tensors : Tensor, or sequence of Tensor or None, optional
        The gradient with respect to each output, of its shape (real for a
        real output); ``None`` (or omitted) only for one-element outputs,
        where it is 1.
    retain_graph : bool, optional
        Keep saved values for another backward pass. Defaults to ``create_graph``.
    create_graph : bool
        Record the backward pass so gradients can be differentiated again.
    inputs : Tensor or sequence of Tensor, optional
        Accumulate only into these tensors' ``.grad`` (leaves or not); the rest
        of the graph is not even visited unless it leads to them.
    """
    if isinstance(tensors, Tensor):
        tensors = (tensors,)
    if isinstance(grad_tensors, Tensor):
        grad_tensors = (grad_tensors,)
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    roots = _roots(tensors, grad_tensors, create_graph, "backward()")
    targets = None if inputs is None else _Targets(inputs, "backward()")
    if targets is not None:
        # A tensor that is not a leaf, given as an input, retains its gradient from then on
        # (PyTorch's): a later backward() adds to the .grad this one gives it.
        for tensor in inputs:  # type: ignore[union-attr]
            if tensor._edge is not None and not tensor.retains_grad:
                tensor.retain_grad()
    previous = _state.enabled
    # The backward rules and every hook run in the pass's grad mode: recorded only when the
    # pass itself must be differentiable (an optimizer step in a hook is not recorded).
    _state.enabled = create_graph
    # (a backward() run by a hook has its own callbacks)
    outer, outer_on_failure = _pass.queued, _pass.on_failure
    queued: list[Any] = []
    on_failure: list[Any] = []
    _pass.queued, _pass.on_failure = queued, on_failure
    # PyTorch's inf and nan, without NumPy's warnings (an "error" filter raises them).
    switches = _floating_point_warnings.switches
    quiet = None if switches is None else switches[0]()
    try:
        try:
            result = _run(
                roots, create_graph if retain_graph is None else retain_graph, create_graph, targets
            )
            _commit(result, create_graph, targets, {id(grad) for _, grad in roots})
        finally:
            if switches is not None:
                switches[1](quiet)
        for callback in queued:
            callback()
    except Exception:
        for callback in on_failure:
            callback()
        if outer is None and _failure_watchers:
            for watcher in list(_failure_watchers.values()):
                watcher()
        raise
    finally:
        _state.enabled = previous
        _pass.queued, _pass.on_failure = outer, outer_on_failure


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    materialize_grads: bool = False,
    *,
    input_hooks: bool = True,
    ends: Any = (),
) -> tuple[Tensor | None, ...]:
    """Return the gradients of ``outputs`` with respect to ``inputs``; ``.grad`` is not touched.

    The engine's work behind :func:`plugrad.autograd.grad`, which documents the
    parameters (and adds PyTorch's ``is_grads_batched``). ``input_hooks=False``
    leaves out the inputs' own tensor hooks, for a caller whose gradients reach
    the inputs again in an enclosing pass (a checkpoint), which runs them once.
    ``ends``: nodes the pass does not go past, though inputs lie behind them (a
    compiled function's arguments' graphs, which its callers' pass goes on into).
    """
    if materialize_grads and allow_unused is False:
        raise InvalidArgumentError(
            "grad() got materialize_grads=True with allow_unused=False: zeros for an unused "
            "input are the opposite of refusing it; leave allow_unused out"
        )
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,)
    roots = _roots(outputs, grad_outputs, create_graph, "grad()")
    targets = _Targets(inputs, "grad()", input_hooks, ends)
    previous = _state.enabled
    _state.enabled = create_graph  # as in backward()
    switches = _floating_point_warnings.switches  # as in backward()
    quiet = None if switches is None else switches[0]()
    try:
        return _grads_of_inputs(
            inputs, roots, targets, retain_graph, create_graph, allow_unused, materialize_grads
        )
    finally:
        if switches is not None:
            switches[1](quiet)
        _state.enabled = previous


def _grads_of_inputs(
    inputs: tuple[Tensor, ...],
    roots: list[tuple[tuple[Any, int], Any]],
    targets: _Targets,
    retain_graph: bool | None,
    create_graph: bool,
    allow_unused: bool | None,
    materialize_grads: bool,
) -> tuple[Tensor | None, ...]:
    result = _run(
        roots, create_graph if retain_graph is None else retain_graph, create_graph, targets
    )
    gradients: list[Tensor | None] = []
    for index, tensor in enumerate(inputs):
        g = result.captured(tensor)
        if g is not None and tensor._edge is None and tensor._hooks and targets.hooks:
            for hook in tuple(tensor._hooks):  # a leaf's hooks see its gradient, as .grad
                if not isinstance(hook, PostAccumulateGradHook):
                    g = _call_hook(hook, g, tensor._device, create_graph, "a leaf tensor")
        if g is None:
            if materialize_grads:
                zeros = tensor._device.xp.zeros_like(tensor._array)
                # With create_graph, a gradient that can be differentiated, as PyTorch's.
                gradients.append(_wrap(zeros, tensor._device, bool(create_graph), None))
                continue
            if not allow_unused:
                raise BackwardError(
                    f"input {index} of grad() (shape {tensor.shape}) was not used to compute the "
                    "outputs, so it has no gradient; pass allow_unused=True to get None for it "
                    "(or materialize_grads=True for zeros)"
                )
            gradients.append(None)
        else:
            gradients.append(g if create_graph else _wrap(g, tensor._device, False, None))
    if result.retained:  # non-leaves that retain their grad get it, as from backward()
        with _accumulation_lock:
            _store(
                [(t, g) for t, g in result.retained.values()],
                create_graph,
                {id(grad) for _, grad in roots},
            )
    return tuple(gradients)


def _roots(
    tensors: Any, gradients: Any, create_graph: bool, caller: str
) -> list[tuple[tuple[Any, int], Any]]:
    tensors = tuple(tensors)
    if not tensors:
        raise InvalidArgumentError(f"{caller} needs at least one output to differentiate")
    if gradients is None:
        gradients = (None,) * len(tensors)
    if len(gradients) != len(tensors):
        raise InvalidArgumentError(
            f"{caller} got {len(tensors)} outputs but {len(gradients)} gradients; "
            "give one gradient (or None) per output"
        )
    return [
        (_root_edge(t, i), _root_gradient(t, g, create_graph))
        for i, (t, g) in enumerate(zip(tensors, gradients))
    ]


class _Targets:
    """The tensors a pass must deliver gradients to; the rest of the graph is pruned."""

    __slots__ = ("ends", "hooks", "leaves", "nodes")

    def __init__(
        self, inputs: Sequence[Any], caller: str, hooks: bool = True, ends: Any = ()
    ) -> None:
        #: Whether the targets' own tensor hooks run (not for a pass inside another pass
        #: that runs them itself: a checkpoint's).
        self.hooks = hooks
        #: Nodes the pass does not go past (see grad()).
        self.ends = ends
        self.leaves: set[int] = set()
        #: node -> {output index: the non-leaf tensor it produced}
        self.nodes: dict[Any, dict[int, Tensor]] = {}
        if not inputs:
            raise InvalidArgumentError(f"{caller} got an empty inputs list")
        described = caller + ": input {}"
        for index, tensor in enumerate(inputs):
            _requiring_grad(
                tensor, described, index, "no gradient can flow to it; create it with "
                "requires_grad=True",
            )  # fmt: skip
            if tensor._edge is None:
                self.leaves.add(id(tensor))
            else:
                node, output = _graph.split_edge(tensor._edge)
                self.nodes.setdefault(node, {})[output] = tensor


class _Result:
    """What a backward pass computed, before anything is written to ``.grad``."""

    __slots__ = ("leaf_grads", "node_grads", "retained")

    def __init__(self) -> None:
        #: id(leaf) -> [leaf, summed gradient]
        self.leaf_grads: dict[int, list[Any]] = {}
        #: (node, output index) -> [tensor or None, gradient], for retained and target non-leaves
        self.node_grads: dict[tuple[Any, int], list[Any]] = {}
        #: The same for tensors that retain their grad, in a pass with targets (whose own
        #: gradients node_grads holds): their .grad is filled too, as PyTorch does.
        self.retained: dict[tuple[Any, int], list[Any]] = {}

    def captured(self, tensor: Tensor) -> Any:
        if tensor._edge is None:
            entry = self.leaf_grads.get(id(tensor))
        else:
            entry = self.node_grads.get(_graph.split_edge(tensor._edge))
        return None if entry is None else entry[1]


def _requiring_grad(tensor: Any, described: str, index: int, advice: str) -> None:
    """Raise unless ``tensor`` is a Tensor that requires grad (``described.format(index)``
    names it, formatted only for the error: backward() checks its root at every call)."""
    if not isinstance(tensor, Tensor):
        what = described.format(index)
        raise ArgumentError(f"{what} is a {type(tensor).__name__}, not a Tensor")
    if not tensor._requires_grad:
        what = described.format(index)
        raise BackwardError(f"{what} (shape {tensor.shape}) does not require grad: {advice}")


def _root_edge(tensor: Any, index: int) -> tuple[Any, int]:
    _requiring_grad(
        tensor,
        "backward(): element {} of tensors",
        index,
        "it has no grad_fn, as nothing it was computed from requires grad. Create the inputs "
        "with requires_grad=True (and compute outside no_grad()) to get gradients.",
    )
    return _graph.split_edge(tensor._edge or tensor)


def _root_gradient(tensor: Tensor, gradient: Any, create_graph: bool) -> Any:
    array = tensor._array
    if gradient is None:
        if tensor.size != 1:
            raise BackwardError(
                "grad can be implicitly created only for scalar outputs; this output has shape "
                f"{tensor.shape}. Reduce it first (e.g. y.sum().backward()) or pass the gradient "
                "with respect to it: y.backward(gradient)."
            )
        if tensor.dtype.kind == "complex floating":
            raise BackwardError(
                "grad can be implicitly created only for real scalar outputs; this output is "
                f"{tensor.dtype.name}. Backpropagate a real number made from it "
                "(y.real.backward(), y.abs().backward()) or pass the gradient: y.backward(g)."
            )
        seed = tensor._device.xp.ones_like(array)
        return _wrap(seed, tensor._device, False, None) if create_graph else seed
    if not isinstance(gradient, Tensor):
        raise ArgumentError(
            f"the gradient passed to backward() must be a Tensor, got {type(gradient).__name__}; "
            "make one with plugrad.asarray(...) or plugrad.ones_like(y)"
        )
    if gradient.shape != tensor.shape:
        raise ShapeError(
            f"the gradient passed to backward() has shape {gradient.shape}, but the output has "
            f"shape {tensor.shape}; they must match"
        )
    if gradient._device is not tensor._device:
        raise DeviceMismatchError(
            f"the gradient passed to backward() is on {gradient._device.name!r} but the output is "
            f"on {tensor._device.name!r}; move it with .to({tensor._device.name!r})"
        )
    if gradient.dtype.kind == "complex floating" and tensor.dtype.kind != "complex floating":
        raise DtypeError(
            f"the gradient passed to backward() is {gradient.dtype.name}, but the output is "
            f"{tensor.dtype.name}: a real output needs a real gradient (casting would drop the "
            "imaginary part); pass plugrad.real(gradient) if that is what you mean"
        )
    if create_graph:
        return gradient
    g = gradient._array
    if g.dtype != array.dtype:
        g = tensor._device.xp.astype(g, array.dtype)
    return g


#: How backends refuse a write into memory that cannot be written: NumPy's and
#: array-api-strict's read-only arrays (a broadcast gradient, the gradient of a sum),
#: PyTorch's expanded tensors.
_UNWRITABLE = ("read-only", "more than one element of the written-to tensor refers to")


def _retell_backward_error(node: Any, error: Exception) -> None:
    """Raise a backend's singular-matrix error from a backward rule as plugrad's
    :class:`~plugrad.errors.LinAlgError`, naming the node (NumPy's ``LinAlgError: Singular
    matrix`` named no op), and a rule's write into an array it may not write as
    :class:`~plugrad.errors.PluginOutputError` naming the op and its plugin. Returns for
    other errors, which the caller raises again: one from a third-party plugin's rule with
    a note naming the rule."""
    if isinstance(error, PlugradError):
        return
    op = getattr(node, "op", None)
    if (
        op is not None
        and isinstance(error, (ValueError, RuntimeError))
        and any(text in str(error) for text in _UNWRITABLE)
    ):
        raise PluginOutputError(
            f"{_failing_rule(node, op, error)} raised {type(error).__name__} ({error}): a "
            "backward rule must not write into its gradient argument g (nor into the inputs "
            "or ans it is given), which other gradients and tensors may share, and may be "
            "read-only; compute a new array instead: return g * 2, not g *= 2; return g"
        ) from error
    if type(error).__name__ not in BACKEND_LINALG_ERRORS:
        if op is not None and _graph.third_party_op(op.name):
            # Its own type and message are kept (the plugin may document them).
            add_note(error, f"plugrad: raised by {_failing_rule(node, op, error)}")
        return
    raise LinAlgError(
        f"{node.name()}: {error}: the gradient needs the inverse of a singular matrix here, "
        "so it is not finite (PyTorch's is inf or nan there); move the input off the "
        "singular point, or differentiate a function defined there"
    ) from error


def _failing_rule(node: Any, op: Any, error: Exception) -> str:
    """``"plugin 'p', op 'f': the backward rule for input 'x'"``: the rule whose frame is in
    ``error``'s traceback (unwrapped from checking mode's wrapper), or any rule of the op."""
    codes: dict[Any, int] = {}
    for position, rule in enumerate(op.vjps):
        code = getattr(getattr(rule, "__wrapped__", rule), "__code__", None)
        if code is not None:
            codes.setdefault(code, position)
    trace = error.__traceback__
    while trace is not None:
        index = codes.get(trace.tb_frame.f_code)
        if index is not None:
            return _graph._where(node, index)
        trace = trace.tb_next
    return f"{_graph.op_owner(op.name)}, op {op.name!r}: a backward rule"


def _run(
    roots: list[tuple[tuple[Any, int], Any]],
    retain_graph: bool,
    create_graph: bool,
    targets: _Targets | None,
) -> _Result:
    Node = _graph.Node
    root_nodes = [target for (target, _), _ in roots]
    # With targets, only nodes that lead to one are visited ("needed"); of those, only
    # the ones with a target below them run their backward ("expand").
    expand = None if targets is None else _nodes_leading_to(root_nodes, targets, Node)
    dependencies = _count_dependencies(root_nodes, Node, expand, targets)
    check_anomalies = _anomaly.enabled and _anomaly.check_nan_
    watch = _watched_leaf_edges(dependencies) if _ready_callbacks and targets is None else None
    buffers: dict[Any, Any] = {}
    result = _Result()
    leaf_grads = result.leaf_grads
    target_leaves = None if targets is None else targets.leaves
    ready: list[Any] = []
    # Gradients are arrays here only without create_graph (else ops made them, settled there).
    lazy = _lazy.in_use and not create_graph
    for (target, index), grad in roots:
        if isinstance(target, Node):
            _accumulate(buffers, target, index, grad)
            if not dependencies.get(target) and target not in ready:
                ready.append(target)
        elif target_leaves is None or id(target) in target_leaves:
            _accumulate_leaf(leaf_grads, target, grad)

    pop, push, take = ready.pop, ready.append, buffers.pop
    while ready:
        node = pop()
        grad = take(node, None)
        hooked = node._hooks
        if grad is not None and (hooked or targets is not None):
            grad = _node_grad_arrived(node, grad, result, targets, create_graph)
        if expand is not None and not expand[node]:
            continue  # a target itself, with nothing wanted below it
        if grad is not None:
            if hooked:
                grad = _node_about_to_run(node, grad, create_graph)
            try:  # (free in Python 3.11+ where nothing is raised)
                input_grads = node._backward(grad, create_graph)
            except Exception as error:
                _retell_backward_error(node, error)
                raise
            if hooked:
                input_grads = _node_backward_done(node, input_grads, grad, create_graph)
            if check_anomalies:
                _check_anomalies(node, input_grads, create_graph)
            if not retain_graph:
                node._release()
        else:
            # Nothing reached this node; still count down the nodes it leads to.
            input_grads = (None,) * len(node._edges)
        for edge, g in zip(node._edges, input_grads):
            if edge is None:
                continue
            target = edge[0] if type(edge) is tuple else edge
            if isinstance(target, Node):
                remaining = dependencies.get(target)
                if remaining is None:
                    continue  # pruned: leads to no target
                if g is not None:
                    if target.n_outputs == 1:
                        previous = buffers.get(target)
                        buffers[target] = g if previous is None else previous + g
                    else:
                        _accumulate(buffers, target, edge[1], g)
                    if lazy and target._device.backend.lazy:
                        _lazy.settle(target._device.backend, buffers[target])
                dependencies[target] = remaining - 1
                if remaining == 1:
                    push(target)
            else:
                if g is not None and (target_leaves is None or id(target) in target_leaves):
                    _accumulate_leaf(leaf_grads, target, g)
                    if lazy:
                        _settle_leaf_gradient(leaf_grads, target)
                if watch is not None and id(target) in watch:
                    _leaf_edge_done(watch, leaf_grads, target)
        del grad, input_grads
    return result


def _watched_leaf_edges(dependencies: dict[Any, int]) -> dict[int, int]:
    """For each watched leaf this pass reaches: the number of edges into it."""
    counts: dict[int, int] = {}
    for node in dependencies:
        for edge in node._edges:
            if edge is None:
                continue
            target = edge[0] if type(edge) is tuple else edge
            key = id(target)
            if key in _ready_callbacks and _ready_callbacks[key][0]() is target:
                counts[key] = counts.get(key, 0) + 1
    return counts


def _leaf_edge_done(watch: dict[int, int], leaf_grads: dict[int, list[Any]], leaf: Any) -> None:
    key = id(leaf)
    remaining = watch[key] - 1
    watch[key] = remaining
    watcher = _ready_callbacks.get(key) if remaining == 0 else None
    if watcher is not None:
        entry = leaf_grads.get(key)
        watcher[1](leaf, None if entry is None else entry[1])


def _nodes_leading_to(roots: list[Any], targets: _Targets, Node: type[_Node]) -> dict[Any, bool]:
    """For every node reachable from ``roots``: whether some edge below it reaches a target."""
    below: dict[Any, bool] = {}
    stack = [(node, False) for node in roots if isinstance(node, Node)]
    ends = targets.ends
    while stack:
        node, children_done = stack.pop()
        if node in below:
            continue
        if ends and node in ends:
            below[node] = False  # (a target itself, or left out)
            continue
        if not children_done:
            stack.append((node, True))
            for edge in node._edges:
                if edge is not None:
                    target = edge[0] if type(edge) is tuple else edge
                    if isinstance(target, Node) and target not in below:
                        stack.append((target, False))
            continue
        reaches = False
        for edge in node._edges:
            if edge is None:
                continue
            target = edge[0] if type(edge) is tuple else edge
            if isinstance(target, Node):
                reaches = reaches or below[target] or target in targets.nodes
            else:
                reaches = reaches or id(target) in targets.leaves
        below[node] = reaches
    return below


def _count_dependencies(
    roots: list[Any], Node: type[_Node], expand: dict[Any, bool] | None, targets: _Targets | None
) -> dict[Any, int]:
    """Return, for each node the pass visits, the number of edges into it."""
    stack = [node for node in roots if isinstance(node, Node)]
    dependencies: dict[Any, int] = dict.fromkeys(stack, 0)
    if len(dependencies) < len(stack):
        stack = list(dependencies)  # roots sharing a node: its edges count once
    push = stack.append
    target_nodes = targets.nodes if targets is not None else frozenset()
    while stack:
        node = stack.pop()
        if expand is not None and not expand[node]:
            continue
        for edge in node._edges:
            if edge is not None:
                target = edge[0] if type(edge) is tuple else edge
                if isinstance(target, Node):
                    if expand is not None and not (expand[target] or target in target_nodes):
                        continue
                    count = dependencies.get(target)
                    if count is None:
                        dependencies[target] = 1
                        push(target)
                    else:
                        dependencies[target] = count + 1
    return dependencies


def _accumulate(buffers: dict[Any, Any], node: Any, index: int, grad: Any) -> None:
    if node.n_outputs == 1:
        previous = buffers.get(node)
        buffers[node] = grad if previous is None else previous + grad
        return
    slots = buffers.get(node)
    if slots is None:
        slots = buffers[node] = [None] * node.n_outputs
    previous = slots[index]
    slots[index] = grad if previous is None else previous + grad


def _accumulate_leaf(leaf_grads: dict[int, list[Any]], leaf: Tensor, grad: Any) -> None:
    entry = leaf_grads.get(id(leaf))
    if entry is None:
        leaf_grads[id(leaf)] = [leaf, grad]
    else:
        entry[1] = entry[1] + grad


def _settle_leaf_gradient(leaf_grads: dict[int, list[Any]], leaf: Tensor) -> None:
    """Settle the gradient summed so far for ``leaf`` (a leaf used many times sums a chain)."""
    backend = leaf._device.backend
    if backend.lazy:
        backend.settle(leaf_grads[id(leaf)][1])


def _call_hook(hook: Any, grad: Any, device: Any, create_graph: bool, where: str) -> Any:
    """Call a user hook with the gradient as a Tensor; return its replacement (or ``grad``)."""
    given = grad if create_graph else _wrap(grad, device, False, None)
    result = hook(given)
    if result is None:
        # A hook that changed the gradient in place may have given it a new array: one of
        # its own where the gradient was a read-only broadcast (the gradient of a sum).
        array = given._array
        note_borrowed(array)  # the hook may keep what it was shown: no .grad by reference
        return grad if create_graph else array
    return _replacement(hook, result, grad, device, create_graph, where)


def _replacement(
    hook: Any, result: Any, grad: Any, device: Any, create_graph: bool, where: str
) -> Any:
    """A hook's replacement of ``grad``, checked: a Tensor of its shape, device and dtype."""
    if not isinstance(result, Tensor):
        raise ArgumentError(
            f"hook {hook!r} on {where} returned a {type(result).__name__}; "
            "a hook must return a Tensor or None"
        )
    if tuple(result._array.shape) != tuple(grad.shape):
        raise ShapeError(
            f"hook {hook!r} on {where} returned a gradient of shape {result.shape} instead of "
            f"{tuple(grad.shape)}"
        )
    if result._device is not device:
        raise DeviceMismatchError(
            f"hook {hook!r} on {where} returned a gradient on {result._device.name!r} instead "
            f"of {device.name!r}; a hook must keep the gradient where it is"
        )
    wanted = grad.dtype if create_graph else device.dtype_of(grad)
    if result.dtype is not wanted:
        raise DtypeError(
            f"hook {hook!r} on {where} returned a gradient of dtype {result.dtype.name} instead "
            f"of {wanted.name}; a hook must keep the gradient's dtype (cast with "
            f".to(plugrad.{wanted.name}))"
        )
    note_borrowed(result._array)  # the hook's author may hold it
    return result if create_graph else result._array


def _node_grad_arrived(
    node: Any, grad: Any, result: _Result, targets: _Targets | None, create_graph: bool
) -> Any:
    """Run the tensor hooks on a node's summed gradient; note retained and target grads.

    As PyTorch: ``retain_grad()`` and the gradients asked for see the tensor hooks' result,
    never the node's pre-hooks' (:func:`_node_about_to_run`), which act on the node's input.
    """
    single = node.n_outputs == 1
    grads = [grad] if single else list(grad)
    # A snapshot, as PyTorch's: a hook another one removes still runs in this pass, and
    # one added during it waits for the next.
    hooks = tuple(node._hooks or ())
    targeted = () if targets is None or targets.hooks else targets.nodes.get(node, ())
    for index, hook in hooks:  # in registration order
        if (
            index is not None
            and not isinstance(hook, RetainGrad)
            and grads[index] is not None
            and index not in targeted
        ):
            grads[index] = _call_hook(hook, grads[index], node._device, create_graph, repr(node))
    if targets is None:
        for index, hook in hooks:
            if isinstance(hook, RetainGrad) and grads[index] is not None:
                tensor = hook.tensor()
                if tensor is not None:
                    result.node_grads[(node, index)] = [tensor, grads[index]]
    else:
        for index, tensor in targets.nodes.get(node, {}).items():
            if grads[index] is not None:
                result.node_grads[(node, index)] = [tensor, grads[index]]
        for index, hook in hooks:
            if isinstance(hook, RetainGrad) and grads[index] is not None:
                tensor = hook.tensor()
                if tensor is not None:
                    result.retained[(node, index)] = [tensor, grads[index]]
    return grads[0] if single else grads


def _node_about_to_run(node: Any, grad: Any, create_graph: bool) -> Any:
    """Run the node's pre-hooks on its output gradients; only for a node whose backward runs."""
    hooks = [hook for index, hook in node._hooks or () if index is None and hook.before]
    if not hooks:
        return grad
    single = node.n_outputs == 1
    grads = [grad] if single else list(grad)
    for hook in hooks:
        grads = _call_node_hook(hook, node, (grads,), grads, create_graph)
    return grads[0] if single else grads


def _node_backward_done(
    node: Any, input_grads: tuple[Any, ...], grad: Any, create_graph: bool
) -> tuple[Any, ...]:
    """Run the node's post-hooks on its input gradients (and its output gradients)."""
    hooks = [hook for index, hook in node._hooks or () if index is None and not hook.before]
    if not hooks:
        return input_grads
    outputs = [grad] if node.n_outputs == 1 else list(grad)
    grads = list(input_grads)
    for hook in hooks:
        grads = _call_node_hook(hook, node, (grads, outputs), grads, create_graph)
    return tuple(grads)


def _call_node_hook(
    hook: Any, node: Any, arguments: tuple[list[Any], ...], grads: list[Any], create_graph: bool
) -> list[Any]:
    """Call a node hook with its gradient tuples as Tensors; return ``grads`` or the
    replacement it gave, checked as tensor hooks' are (one per entry, same shapes)."""
    device = node._device

    def as_tensors(values: list[Any]) -> tuple[Any, ...]:
        if create_graph:
            return tuple(values)
        return tuple(None if g is None else _wrap(g, device, False, None) for g in values)

    given = [as_tensors(values) for values in arguments]
    result = hook.function(*given)
    if result is None:
        # The hook may keep the gradients it was shown: none becomes a .grad by reference.
        for shown in given:
            for g in shown:
                if g is not None:
                    note_borrowed(g._array)
        if create_graph:
            return grads
        # Changed in place, a gradient may hold a new array (see _call_hook).
        return [None if g is None else g._array for g in given[0]]
    if not isinstance(result, (tuple, list)) or len(result) != len(grads):
        raise ArgumentError(
            f"hook {hook.function!r} on {node!r} returned {result!r}; a node hook returns None "
            f"or a tuple of {len(grads)} gradients (None where there is none)"
        )
    replaced: list[Any] = []
    for index, (old, new) in enumerate(zip(grads, result)):
        if new is None:
            replaced.append(None)
        elif old is None:
            raise ArgumentError(
                f"hook {hook.function!r} on {node!r} returned a gradient at position {index}, "
                "where there was none to replace; return None there"
            )
        else:
            replaced.append(_replacement(hook.function, new, old, device, create_graph, repr(node)))
    return replaced


def _check_anomalies(node: Any, input_grads: tuple[Any, ...], create_graph: bool) -> None:
    """Raise if the backward of ``node`` produced NaN (anomaly mode; infinities pass, as in
    PyTorch)."""
    xp = node._device.xp
    for index, g in enumerate(input_grads):
        if g is None:
            continue
        array = g._array if create_graph else g
        if bool(xp.any(xp.isnan(array))):
            raise _anomaly.anomaly_error(node, index, array)


def _commit(
    result: _Result, create_graph: bool, targets: _Targets | None, stored: set[int]
) -> None:
    """Run leaf hooks, then accumulate every gradient into ``.grad``; nothing changes on error.

    ``stored`` holds the ids of arrays that must not become a ``.grad`` by reference.
    """
    updates = []
    hooked = []  # leaves with their hooks (a snapshot), for those that run after .grad is set
    for leaf, grad in result.leaf_grads.values():
        hooks = leaf._hooks
        if hooks:
            hooks = tuple(hooks)
            hooked.append((leaf, hooks))
            for hook in hooks:
                if not isinstance(hook, PostAccumulateGradHook):
                    grad = _call_hook(hook, grad, leaf._device, create_graph, "a leaf tensor")
        updates.append((leaf, grad))
    if result.node_grads:
        updates.extend((t, g) for t, g in result.node_grads.values() if t is not None)
    if result.retained:  # retained non-leaves of a pass with targets, unless targets too
        retained = result.retained.items()
        updates.extend((t, g) for key, (t, g) in retained if key not in result.node_grads)
    # NOTE: reading .grad, adding and storing back must be one step, or two threads
    # running backward into a shared leaf lose each other's gradients.
    with _accumulation_lock:
        try:
            _store(updates, create_graph, stored)
        finally:
            _borrowed.clear()
    for leaf, hooks in hooked:
        for hook in hooks:
            if isinstance(hook, PostAccumulateGradHook) and hook.function(leaf) is not None:
                # As PyTorch: a value returned would be lost, which the hook's author
                # expected to take effect (``lambda p: p.grad * 2``); .grad is already stored.
                raise ArgumentError(
                    f"post-accumulate-grad hook {hook.function!r} returned a value; such hooks "
                    "act on tensor.grad in place and must return None"
                )


#: Ids of the arrays user code handed to a pass as gradients (a custom Function's backward,
#: a hook's replacement): the user may hold them, so they never become a ``.grad`` by
#: reference (a later pass would add into the user's tensor). Emptied at each commit; an
#: id left over, or reused, costs one copy at most.
_borrowed: set[int] = set()


def note_borrowed(array: Any) -> None:
    """Note that ``array`` came from user code (see :data:`_borrowed`)."""
    _borrowed.add(id(array))


def _store(updates: list[tuple[Tensor, Any]], create_graph: bool, stored: set[int]) -> None:
    """Add each gradient to its tensor's ``.grad``; every ``.grad`` changes only if all succeed."""
    new_grads = []
    # id(.grad tensor) -> the sum it is given: one tensor may be the .grad of several
    # (a.grad = b.grad = g), and each gradient adds to what the one before left.
    sums: dict[int, Any] = {}
    for tensor, grad in updates:
        if not tensor._requires_grad:
            continue  # requires_grad_(False) after the graph was made: no .grad, as PyTorch
        if grad.shape != tensor._array.shape:
            raise InPlaceModificationError(
                f"a tensor of shape {tensor.shape} gets a gradient of shape "
                f"{tuple(grad.shape)}: its shape was changed in place (x.t_(), "
                "x.unsqueeze_(...), x.resize_(...)) after the graph using it was made; change "
                "its shape before computing with it, or make a new view (y = x.t()). No .grad "
                "was changed."
            )
        old = tensor._grad
        if old is not None and (
            old._array.dtype != tensor._array.dtype or old._array.shape != tensor._array.shape
        ):
            # .grad is checked where it is set, but not its .data, nor a change in place.
            error = ShapeError if old._array.shape != tensor._array.shape else DtypeError
            raise error(
                f"a tensor of shape {tensor.shape} and dtype {tensor.dtype.name} has a .grad "
                f"of shape {old.shape} and dtype {old.dtype.name} (changed through .grad.data "
                "or in place); the gradient cannot be added to it. Set .grad to None, or to a "
                "tensor of the tensor's shape and dtype. No .grad was changed."
            )
        followers = None
        if create_graph:
            if old is None and (
                getattr(grad, "_view_base", None) is not None or id(grad._array) in _borrowed
            ):
                # A view (a reshape's) as .grad: detach_() and zero_() of it, as
                # zero_grad(set_to_none=False) does, would then write into its base; a
                # tensor of the user's, a later pass into it.
                grad = grad.clone()
            new = grad if old is None else old + grad
        else:
            if old is not None:
                if old._device.views_are_copies:
                    # Views of .grad (and detach()ed copies) must show the sum, as they do
                    # where views share memory; refused here, before any .grad changes.
                    followers = _inplace.views_to_follow([old], "accumulating into .grad")
                array = sums.get(id(old), old._array) + grad
                sums[id(old)] = array
                if _lazy.in_use and tensor._device.backend.lazy:
                    tensor._device.backend.settle(array)  # .grad summed over many passes
            elif id(grad) in stored or id(grad) in _borrowed:
                # Rules may pass one array to several inputs (add does); never let two
                # .grad tensors share memory, nor one share a tensor of the user's.
                array = _laid_out_as(tensor, tensor._device.xp.asarray(grad, copy=True))
            else:
                array = _laid_out_as(tensor, grad)
            stored.add(id(array))
            new = _wrap(array, tensor._device, False, None)
        new_grads.append((tensor, old, new, followers))
    for tensor, old, new, followers in new_grads:
        # A non-leaf's retained .grad is a new tensor at each pass, as PyTorch's: one held
        # from an earlier pass keeps its values.
        if old is not None and not create_graph and tensor._edge is None and _summed_into(old, new):
            if followers:
                _inplace.follow_raw_writes(followers)
            continue
        tensor._grad = new


def _laid_out_as(tensor: Tensor, grad: Any) -> Any:
    """``grad``, copied into row-major order where ``tensor`` is row-major and it is not.

    A first ``.grad`` follows its tensor's layout, as PyTorch's does: the
    gradient of ``w`` in ``x @ w.t()`` comes out transposed, and
    ``w.grad.view(-1)`` must work where ``w.view(-1)`` does.
    """
    backend = tensor._device.backend
    if backend.row_major(grad) or not backend.row_major(tensor._array):
        return grad
    xp = tensor._device.xp
    return xp.reshape(xp.reshape(grad, (-1,), copy=True), grad.shape)


def _summed_into(old: Tensor, total: Tensor) -> bool:
    """Make the ``.grad`` tensor ``old`` hold the sum ``total``, as PyTorch accumulates.

    A ``.grad`` tensor held elsewhere (``g = x.grad``) then shows the sum too: written
    into its memory where the backend's arrays can be written, else (a read-only
    broadcast, JAX's immutable arrays, Dask's) the tensor takes the new array. Not for
    another shape or dtype (``old`` is replaced then).
    """
    device = old._device
    array, values = old._array, total._array
    if values.dtype != array.dtype or values.shape != array.shape:
        return False
    written = None
    if not device.views_are_copies:
        try:
            written = device.backend.write(array, values)
        except WRITE_REFUSED:
            pass  # a read-only array: the tensor takes the new one
    if written is not array:
        old._array = values
    old._bump_version()
    return True


def _tensor_backward(
    self: Tensor,
    gradient: Tensor | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs: Sequence[Tensor] | None = None,
) -> None:
    """Compute the gradient of this tensor with respect to the graph leaves.

    Gradients are *accumulated* into the ``.grad`` of every leaf that
    requires grad (and of non-leaves that called :meth:`retain_grad`).

    Parameters
    ----------
    gradient : Tensor, optional
        The gradient with respect to this tensor, of its shape. May be
        omitted only for a tensor with one element (it is then 1). A real
        tensor needs a real gradient: a complex one raises
        :class:`~plugrad.errors.DtypeError` rather than losing its imaginary part.
    retain_graph : bool, optional
        Keep the values saved for backward so that the graph can be
        backpropagated again. Defaults to ``create_graph``.
    create_graph : bool
        Record the backward pass itself, so that gradients can be
        differentiated again (higher-order derivatives).
    inputs : sequence of Tensor, optional
        Accumulate only into these tensors' ``.grad`` (leaves or not).

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    >>> y = 3 * x
    >>> y.backward(plugrad.ones_like(y))
    >>> x.grad
    tensor([3., 3.])
    """
    backward((self,), None if gradient is None else (gradient,), retain_graph, create_graph, inputs)


install_methods(backward=_tensor_backward)
