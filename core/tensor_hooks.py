"""Tensor hooks: functions backward calls on a tensor's gradient, and their handles.

This module installs :meth:`Tensor.register_hook`,
:meth:`Tensor.register_post_accumulate_grad_hook`, :meth:`Tensor.retain_grad`
and :attr:`Tensor.retains_grad`. A leaf keeps its hooks in its own list; a
non-leaf's hooks live on the node that computed it, as ``(output index, hook)``
entries, where the engine finds them when that node's gradient is ready.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from .errors import ArgumentError, BackwardError
from .node import RemovableHandle, note_hook_registered, split_edge
from .tensor import Tensor, install_methods

__all__ = ["PostAccumulateGradHook", "RemovableHandle", "RetainGrad", "move_retain_grad"]


class RetainGrad:
    """The node hook behind :meth:`Tensor.retain_grad`; the engine runs it after user hooks."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = weakref.ref(tensor)


class PostAccumulateGradHook:
    """A leaf hook that runs after ``.grad`` is updated (kept in the leaf's hook list)."""

    __slots__ = ("function",)

    def __init__(self, function: Callable[[Tensor], None]) -> None:
        self.function = function


def _retains_grad(self: Tensor) -> bool:
    """Whether this non-leaf keeps its ``.grad`` after backward (see :meth:`retain_grad`)."""
    node = self.grad_fn
    if node is None:
        return False
    hooks = node._hooks or ()
    return any(isinstance(h, RetainGrad) and h.tensor() is self for _, h in hooks)


def _retain_grad(self: Tensor) -> None:
    """Keep ``.grad`` on this non-leaf after backward (leaves keep theirs anyway).

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor(2.0, requires_grad=True)
    >>> y = x * x
    >>> y.retain_grad()
    >>> (3 * y).backward()
    >>> y.grad
    tensor(3.)
    """
    if self._edge is None:
        if not self._requires_grad:
            raise BackwardError(
                "retain_grad() was called on a tensor that does not require grad; "
                "set requires_grad=True on the leaves it is computed from first"
            )
        return
    if not _retains_grad(self):
        _add_node_hook(self, RetainGrad(self))


def _register_hook(self: Tensor, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
    """Call ``hook(grad)`` whenever the gradient with respect to this tensor is computed.

    The hook may return a Tensor to use instead of ``grad``. On a leaf it
    runs before the gradient is accumulated into ``.grad``.

    Returns
    -------
    RemovableHandle
        ``handle.remove()`` unregisters the hook.
    """
    if not self._requires_grad:
        raise BackwardError("cannot register a hook on a tensor that does not require grad")
    if not callable(hook):
        raise ArgumentError(f"hook must be callable, got {type(hook).__name__}")
    note_hook_registered()
    if self._edge is None:
        hooks = self._hooks
        if hooks is None:
            hooks = self._hooks = []
        hooks.append(hook)
        return RemovableHandle(hooks, hook)
    return _add_node_hook(self, hook)


def _register_post_accumulate_grad_hook(
    self: Tensor, hook: Callable[[Tensor], None]
) -> RemovableHandle:
    """Call ``hook(tensor)`` on this leaf after backward has accumulated into its ``.grad``.

    Useful to act on a parameter as soon as its gradient is ready (e.g. an
    optimizer step per parameter). The hook's return value is ignored.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    >>> seen = []
    >>> handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    >>> (w * 3).sum().backward()
    >>> seen
    [[3.0, 3.0]]
    >>> handle.remove()
    """
    if self._edge is not None or not self._requires_grad:
        raise BackwardError(
            "post-accumulate-grad hooks run when .grad of a leaf is updated, so they can only "
            "be registered on leaves that require grad; use register_hook() on this tensor"
        )
    if not callable(hook):
        raise ArgumentError(f"hook must be callable, got {type(hook).__name__}")
    entry = PostAccumulateGradHook(hook)
    note_hook_registered()
    if self._hooks is None:
        self._hooks = []
    self._hooks.append(entry)
    return RemovableHandle(self._hooks, entry)


def move_retain_grad(tensor: Tensor, old_edge: Any) -> None:
    """Move ``tensor``'s :meth:`retain_grad` from ``old_edge`` to its current one.

    An in-place op gives ``tensor`` a new graph history; as in PyTorch, its ``.grad``
    is then the gradient with respect to its new value.
    """
    node, index = split_edge(old_edge)
    for entry in node._hooks or ():
        output, hook = entry
        if output == index and isinstance(hook, RetainGrad) and hook.tensor() is tensor:
            node._hooks.remove(entry)
            _add_node_hook(tensor, hook)
            return


def _add_node_hook(tensor: Tensor, hook: Callable[..., Any] | RetainGrad) -> RemovableHandle:
    node, index = split_edge(tensor._edge)
    hooks = node._hooks
    if hooks is None:
        hooks = node._hooks = []
    entry = (index, hook)
    hooks.append(entry)
    return RemovableHandle(hooks, entry)


install_methods(
    retains_grad=property(_retains_grad),
    retain_grad=_retain_grad,
    register_hook=_register_hook,
    register_post_accumulate_grad_hook=_register_post_accumulate_grad_hook,
)
