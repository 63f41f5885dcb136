"""A node of the backward graph, and the edges that point at nodes.

A tensor's ``_edge`` is ``None`` (no graph), a node (output 0 of a node with one
output, or a leaf's accumulation point) or ``(node, index)`` for output
``index`` of a node with several. :class:`Node` is the base of every
``grad_fn``; :mod:`plugrad.graph` defines the nodes of ops.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from .errors import ArgumentError

if TYPE_CHECKING:
    from .backend import Device

__all__ = [
    "AccumulateGrad",
    "Node",
    "NodeHook",
    "RemovableHandle",
    "hook_epoch",
    "releasing_classes",
    "note_hook_registered",
    "output_edge",
    "split_edge",
]

#: How many hooks (of tensors, nodes and modules) were ever registered: a compiled plan
#: captured when it was smaller looks for hooks on its tensors and modules again.
hook_epoch = [0]


def note_hook_registered() -> None:
    """Count one hook registration (see :data:`hook_epoch`)."""
    hook_epoch[0] += 1


def split_edge(edge: Any) -> tuple[Any, int]:
    """``(node or leaf tensor, output index)`` of an edge (not ``None``)."""
    return edge if type(edge) is tuple else (edge, 0)


def output_edge(node: Node, index: int) -> Any:
    """The edge to output ``index`` of ``node``: the node itself if it has only one."""
    return node if node.n_outputs == 1 else (node, index)


#: The ids of handles, one per registration (of every kind), as PyTorch numbers them.
_handle_ids = itertools.count()


class RemovableHandle:
    """Returned by hook registration; :meth:`remove` unregisters the hook.

    ``id`` numbers the registration (each handle its own, across every kind of
    hook); a module's hook dicts (``module._forward_hooks``, ...) are keyed by it.
    """

    __slots__ = ("_entry", "_hooks", "id")

    def __init__(self, hooks: list[Any], entry: Any) -> None:
        self._hooks = hooks
        self._entry = entry
        self.id: int = next(_handle_ids)

    def remove(self) -> None:
        """Unregister the hook; removing twice is harmless."""
        try:
            self._hooks.remove(self._entry)
        except ValueError:
            pass

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """The hook lives for the ``with`` block: ``with x.register_hook(f): ...``."""
        self.remove()


class NodeHook:
    """A hook of a whole node (:meth:`Node.register_prehook`, :meth:`Node.register_hook`).

    Kept in the node's hook list as ``(None, hook)``, beside the tensor hooks
    ``(output index, hook)``; ``before`` says whether it runs before the node's
    backward (on the output gradients) or after it (on the input gradients too).
    """

    __slots__ = ("before", "function")

    def __init__(self, function: Callable[..., Any], before: bool) -> None:
        self.function = function
        self.before = before


class Node:
    """Base class of every ``grad_fn``: one recorded operation in the backward graph.

    Subclasses exist per op (``MulBackward``, ``ExpBackward``, ...) and per
    user :class:`~plugrad.Function`, so ``type(t.grad_fn).__name__`` names the op.

    Attributes
    ----------
    next_functions : tuple
        For each input of the operation, ``(node, index)`` where its gradient
        flows, or ``None`` if it needs none. Leaves appear as the tensor itself.
    """

    # _trace (where the forward op was created) is set only in anomaly mode.
    # Nodes define no __len__ or __bool__, so they are always true: the per-op path
    # writes an input's edge as ``x._edge or x``.
    __slots__ = ("__weakref__", "_device", "_edges", "_hooks", "_trace")
    _device: Device
    _edges: tuple[Any, ...]
    _hooks: list[Any] | None
    _trace: Any
    #: How many tensors the operation produced.
    n_outputs: ClassVar[int] = 1

    def name(self) -> str:
        """Return the node's name, e.g. ``"MulBackward"``."""
        return type(self).__name__

    def register_prehook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(grad_outputs)`` when the node's output gradients are ready, before its
        backward; it may return a tuple of gradients to use instead (PyTorch's).

        ``grad_outputs`` holds one Tensor per output (``None`` where none arrived).
        """
        return self._add_hook(hook, before=True)

    def register_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(grad_inputs, grad_outputs)`` after the node's backward; it may return a
        tuple of input gradients to use instead (PyTorch's).

        ``grad_inputs`` holds one Tensor per input (``None`` for inputs that need none).
        """
        return self._add_hook(hook, before=False)

    def _add_hook(self, hook: Callable[..., Any], before: bool) -> RemovableHandle:
        if not callable(hook):
            raise ArgumentError(f"hook must be callable, got {type(hook).__name__}")
        hooks = self._hooks
        if hooks is None:
            hooks = self._hooks = []
        entry = (None, NodeHook(hook, before))
        hooks.append(entry)
        note_hook_registered()
        return RemovableHandle(hooks, entry)

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        """Where each input's gradient goes, as PyTorch's: ``(node, output index)``;
        ``(AccumulateGrad, 0)`` for a leaf (its ``variable``), ``(None, 0)`` for an input
        that needs no gradient."""
        return tuple(
            (None, 0)
            if edge is None
            else (AccumulateGrad(edge), 0)
            if type(edge) is not tuple and not isinstance(edge, Node)
            else split_edge(edge)
            for edge in self._edges
        )

    @property
    def _next_edges(self) -> tuple[tuple[Any, int] | None, ...]:
        """Each input's edge as ``(node or leaf tensor, index)``, ``None`` where there is none."""
        return tuple(None if edge is None else split_edge(edge) for edge in self._edges)

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        """Return one gradient (or ``None``) per input, given the output gradient(s)."""
        raise NotImplementedError

    def _release(self) -> None:
        """Drop everything saved for backward (after a backward without ``retain_graph``)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_release" in cls.__dict__:
            releasing_classes.add(cls)


#: The node classes that define their own ``_release``: a capture notes the calls of each
#: (kept as classes are made, so a capture does not search the hundreds of op nodes).
releasing_classes: weakref.WeakSet[type] = weakref.WeakSet([Node])


class AccumulateGrad(Node):
    """The ``grad_fn``-like end of a path at a leaf, as PyTorch's: ``variable`` is the leaf.

    It stands in :attr:`Node.next_functions` for the leaf a gradient flows
    into; plugrad accumulates into ``.grad`` in the engine itself, so hooks are
    registered on the leaf (``register_post_accumulate_grad_hook``), not here.
    """

    __slots__ = ("variable",)

    def __init__(self, variable: Any) -> None:
        self.variable = variable
        self._edges = ()
        self._hooks = None

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        return ()

    def register_prehook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(grad_outputs)`` with the gradient arriving for the leaf, before it
        is added into ``.grad``; it may return a tuple holding the gradient to use instead
        (PyTorch's). It is a hook of the leaf, as ``variable.register_hook`` makes.
        """
        if not callable(hook):
            raise ArgumentError(f"hook must be callable, got {type(hook).__name__}")

        def on_the_leaf(grad: Any) -> Any:
            result = hook((grad,))
            if result is None:
                return None
            if not isinstance(result, (tuple, list)) or len(result) != 1:
                raise ArgumentError(
                    "an AccumulateGrad pre-hook returns None or a tuple of one gradient, got "
                    f"{type(result).__name__}"
                    + (f" of {len(result)}" if isinstance(result, (tuple, list)) else "")
                )
            return result[0]

        handle: RemovableHandle = self.variable.register_hook(on_the_leaf)
        return handle

    def _add_hook(self, hook: Callable[..., Any], before: bool) -> RemovableHandle:
        raise NotImplementedError(
            "plugrad accumulates gradients in its engine, not in an AccumulateGrad node: "
            "a hook after the accumulation is a hook of the leaf, "
            "variable.register_post_accumulate_grad_hook()"
        )
