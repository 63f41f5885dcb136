"""Hooks around an optimizer's step, as ``torch.optim``'s: per optimizer and for all of them.

A step pre-hook is called as ``hook(optimizer, args, kwargs)`` before the step
and may return ``(new_args, new_kwargs)`` to call the step with; a post-hook is
called the same way after it. Hooks registered for every optimizer
(:func:`register_optimizer_step_pre_hook`) run before an optimizer's own pre-hooks
and after its own post-hooks, as PyTorch runs them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..errors import ArgumentError
from ..tensor_hooks import RemovableHandle

__all__ = [
    "has_step_hooks",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
    "registered",
    "run_replacing",
    "with_step_hooks",
]

#: The hooks every optimizer's step runs (see the module's docstring).
_global_pre_hooks: list[Callable[..., Any]] = []
_global_post_hooks: list[Callable[..., Any]] = []


def registered(
    hooks: list[Callable[..., Any]], hook: Any, prepend: bool = False
) -> RemovableHandle:
    """Add ``hook`` to ``hooks`` (first with ``prepend``); the handle removes it."""
    if not callable(hook):
        raise ArgumentError(f"a hook must be callable, got {type(hook).__name__}; pass a function")
    hooks.insert(0 if prepend else len(hooks), hook)
    return RemovableHandle(hooks, hook)


def run_replacing(hooks: list[Callable[..., Any]], optimizer: Any, state_dict: Any) -> Any:
    """``hook(optimizer, state_dict)`` of each hook in turn; one that returns a dict (not
    None) replaces it for the next and for the caller."""
    for hook in hooks:
        changed = hook(optimizer, state_dict)
        if changed is not None:
            state_dict = changed
    return state_dict


def register_optimizer_step_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Run ``hook(optimizer, args, kwargs)`` before every optimizer's step.

    Parameters
    ----------
    hook : callable
        Returns None, or ``(args, kwargs)`` to call the step with instead.

    Returns
    -------
    RemovableHandle
        ``handle.remove()`` unregisters the hook.
    """
    return registered(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Run ``hook(optimizer, args, kwargs)`` after every optimizer's step.

    Returns
    -------
    RemovableHandle
        ``handle.remove()`` unregisters the hook.
    """
    return registered(_global_post_hooks, hook)


def has_step_hooks(optimizer: Any) -> bool:
    """Whether a step of ``optimizer`` runs a hook (its own or one for every optimizer)."""
    fields = optimizer.__dict__
    return bool(
        _global_pre_hooks
        or _global_post_hooks
        or fields.get("_optimizer_step_pre_hooks")
        or fields.get("_optimizer_step_post_hooks")
    )


def with_step_hooks(step: Callable[..., Any]) -> Callable[..., Any]:
    """``step`` running the step hooks around it (once: a step that calls the class's
    parent's step through ``super()`` runs them at the outer call only)."""
    if getattr(step, "_runs_step_hooks", False):
        return step

    @functools.wraps(step)
    def stepping(self: Any, *args: Any, **kwargs: Any) -> Any:
        fields = self.__dict__
        if fields.get("_in_step") or not has_step_hooks(self):
            return step(self, *args, **kwargs)
        fields["_in_step"] = True
        try:
            for hook in (*_global_pre_hooks, *fields.get("_optimizer_step_pre_hooks", ())):
                changed = hook(self, args, kwargs)
                if changed is not None:
                    if not (isinstance(changed, tuple) and len(changed) == 2):
                        raise ArgumentError(
                            "an optimizer step pre-hook returns None or (args, kwargs), got "
                            f"{type(changed).__name__}; return None to keep the step's "
                            "arguments"
                        )
                    args, kwargs = changed
            result = step(self, *args, **kwargs)
            for hook in (*fields.get("_optimizer_step_post_hooks", ()), *_global_post_hooks):
                hook(self, args, kwargs)
            return result
        finally:
            fields["_in_step"] = False

    stepping._runs_step_hooks = True  # type: ignore[attr-defined]
    return stepping
