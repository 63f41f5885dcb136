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

from collections.abc import Sequence
from typing import Any

from . import graph as _graph
from .errors import BackwardError, ShapeError
from .grad_mode import _state
from .tensor import Tensor, _RetainGrad, _wrap

__all__ = ["backward"]


def backward(
    tensors: Sequence[Tensor],
    grad_tensors: Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
) -> None:
    """Accumulate into ``.grad`` the gradients of ``tensors`` with respect to the graph leaves.

    Parameters
    ----------
    tensors : sequence of Tensor
        The outputs to differentiate.
    grad_tensors : sequence of Tensor or None, optional
        The gradient with respect to each output; ``None`` (or omitted) only
        for one-element outputs, where it is 1.
    retain_graph : bool, optional
        Keep saved values for another backward pass. Defaults to ``create_graph``.
    create_graph : bool
        Record the backward pass so gradients can be differentiated again.
    """
    if retain_graph is None:
        retain_graph = create_graph
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    if len(grad_tensors) != len(tensors):
        raise ValueError(
            f"backward() got {len(tensors)} tensors but {len(grad_tensors)} gradients; "
            "give one gradient (or None) per tensor"
        )
    roots = [
        (_root_edge(t, i), _root_gradient(t, g, create_graph))
        for i, (t, g) in enumerate(zip(tensors, grad_tensors))
    ]
    previous = _state.enabled
    # Rules are recorded only when the backward pass itself must be differentiable.
    _state.enabled = create_graph
    try:
        _run(roots, retain_graph, create_graph)
    finally:
        _state.enabled = previous


def _root_edge(tensor: Any, index: int) -> tuple[Any, int]:
    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"backward() needs Tensors, but element {index} is a {type(tensor).__name__}"
        )
    if not tensor._requires_grad:
        raise BackwardError(
            f"element {index} of tensors does not require grad and does not have a grad_fn: "
            "nothing it was computed from requires grad. Create the inputs with "
            "requires_grad=True (and compute outside no_grad()) to get gradients."
        )
    return tensor._edge or (tensor, 0)


def _root_gradient(tensor: Tensor, gradient: Any, create_graph: bool) -> Any:
    array = tensor._array
    if gradient is None:
        if tensor.size != 1:
            raise BackwardError(
                "grad can be implicitly created only for scalar outputs; this output has shape "
                f"{tensor.shape}. Reduce it first (e.g. y.sum().backward()) or pass the gradient "
                "with respect to it: y.backward(gradient)."
            )
        seed = tensor._device.xp.ones_like(array)
        return _wrap(seed, tensor._device, False, None) if create_graph else seed
    if not isinstance(gradient, Tensor):
        raise TypeError(
            f"the gradient passed to backward() must be a Tensor, got {type(gradient).__name__}; "
            "make one with plugrad.asarray(...) or plugrad.ones_like(y)"
        )
    if gradient.shape != tensor.shape:
        raise ShapeError(
            f"the gradient passed to backward() has shape {gradient.shape}, but the output has "
            f"shape {tensor.shape}; they must match"
        )
    if gradient._device is not tensor._device:
        raise ShapeError(
            f"the gradient passed to backward() is on {gradient._device.name!r} but the output is "
            f"on {tensor._device.name!r}; move it with .to({tensor._device.name!r})"
        )
    if create_graph:
        return gradient
    g = gradient._array
    if g.dtype != array.dtype:
        g = tensor._device.xp.astype(g, array.dtype)
    return g


def _run(roots: list[tuple[tuple[Any, int], Any]], retain_graph: bool, create_graph: bool) -> None:
    Node = _graph.Node
    dependencies = _count_dependencies([target for (target, _), _ in roots], Node)
    buffers: dict[Any, Any] = {}
    leaf_grads: dict[int, list[Any]] = {}
    retained: list[tuple[Tensor, Any]] = []
    ready: list[Any] = []
    for (target, index), grad in roots:
        if isinstance(target, Node):
            _accumulate(buffers, target, index, grad)
            if not dependencies.get(target) and target not in ready:
                ready.append(target)
        else:
            _accumulate_leaf(leaf_grads, target, grad)

    while ready:
        node = ready.pop()
        grad = buffers.pop(node, None)
        if grad is not None:
            if node._hooks:
                grad = _run_node_hooks(node, grad, node._hooks, retained, create_graph)
            input_grads = node._backward(grad, create_graph)
            if not retain_graph:
                node._release()
        else:
            # Nothing reached this node; still count down the nodes it leads to.
            input_grads = (None,) * len(node._edges)
        for edge, g in zip(node._edges, input_grads):
            if edge is None:
                continue
            target, index = edge
            if isinstance(target, Node):
                if g is not None:
                    if target.n_outputs == 1:
                        previous = buffers.get(target)
                        buffers[target] = g if previous is None else previous + g
                    else:
                        _accumulate(buffers, target, index, g)
                remaining = dependencies[target] - 1
                dependencies[target] = remaining
                if not remaining:
                    ready.append(target)
            elif g is not None:
                _accumulate_leaf(leaf_grads, target, g)
        del grad, input_grads

    # The caller's gradient arrays must not become some tensor's .grad by reference.
    _commit(leaf_grads, retained, create_graph, {id(grad) for _, grad in roots})


def _count_dependencies(roots: list[Any], Node: type) -> dict[Any, int]:
    """Return, for each node reachable from ``roots``, the number of edges into it."""
    dependencies: dict[Any, int] = {}
    stack = [node for node in roots if isinstance(node, Node)]
    dependencies.update(dict.fromkeys(stack, 0))
    seen = set(stack)
    while stack:
        for edge in stack.pop()._edges:
            if edge is not None:
                target = edge[0]
                if isinstance(target, Node):
                    if target in seen:
                        dependencies[target] += 1
                    else:
                        dependencies[target] = 1
                        seen.add(target)
                        stack.append(target)
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


def _call_hook(hook: Any, grad: Any, device: Any, create_graph: bool, where: str) -> Any:
    """Call a user hook with the gradient as a Tensor; return its replacement (or ``grad``)."""
    result = hook(grad if create_graph else _wrap(grad, device, False, None))
    if result is None:
        return grad
    if not isinstance(result, Tensor):
        raise TypeError(
            f"hook {hook!r} on {where} returned a {type(result).__name__}; "
            "a hook must return a Tensor or None"
        )
    if tuple(result._array.shape) != tuple(grad.shape):
        raise ShapeError(
            f"hook {hook!r} on {where} returned a gradient of shape {result.shape} instead of "
            f"{tuple(grad.shape)}"
        )
    return result if create_graph else result._array


def _run_node_hooks(
    node: Any, grad: Any, hooks: list[Any], retained: list[tuple[Tensor, Any]], create_graph: bool
) -> Any:
    single = node.n_outputs == 1
    grads = [grad] if single else list(grad)
    # Tensor hooks first, in registration order; retain_grad() sees their result.
    for index, hook in hooks:
        if not isinstance(hook, _RetainGrad) and grads[index] is not None:
            grads[index] = _call_hook(hook, grads[index], node._device, create_graph, repr(node))
    for index, hook in hooks:
        if isinstance(hook, _RetainGrad) and grads[index] is not None:
            tensor = hook.tensor()
            if tensor is not None:
                retained.append((tensor, grads[index]))
    return grads[0] if single else grads


def _commit(
    leaf_grads: dict[int, list[Any]],
    retained: list[tuple[Tensor, Any]],
    create_graph: bool,
    stored: set[int],
) -> None:
    """Run leaf hooks, then accumulate every gradient into ``.grad``; nothing changes on error."""
    updates = []
    for leaf, grad in leaf_grads.values():
        for hook in leaf._hooks or ():
            grad = _call_hook(hook, grad, leaf._device, create_graph, "a leaf tensor")
        updates.append((leaf, grad))
    updates.extend(retained)
    new_grads = []
    for tensor, grad in updates:
        old = tensor._grad
        if create_graph:
            new = grad if old is None else old + grad
        else:
            if old is not None:
                array = old._array + grad
            elif id(grad) in stored:
                # Rules may pass one array to several inputs (add does); never let two
                # .grad tensors share memory.
                array = tensor._device.xp.asarray(grad, copy=True)
            else:
                array = grad
            stored.add(id(array))
            new = _wrap(array, tensor._device, False, None)
        new_grads.append((tensor, new))
    for tensor, new in new_grads:
        tensor._grad = new
