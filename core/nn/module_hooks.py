"""Module hooks, as PyTorch's: code run before and after ``forward`` and on gradients.

``register_forward_pre_hook(hook)``: ``hook(module, args)`` before ``forward``,
returning ``None`` or new positional arguments (``with_kwargs=True``:
``hook(module, args, kwargs)`` returning ``None`` or ``(args, kwargs)``).

``register_forward_hook(hook)``: ``hook(module, args, output)`` after it,
returning ``None`` or a new output (``with_kwargs=True``:
``hook(module, args, kwargs, output)``; ``always_call=True``: also when
``forward``, a pre-hook or another forward hook raised: with ``forward``'s output,
or ``None``).

``register_full_backward_pre_hook(hook)``: ``hook(module, grad_output)`` when
the gradients of the outputs are known (one per output, ``None`` for outputs
without one), returning ``None`` or new ones.
``register_full_backward_hook(hook)``: ``hook(module, grad_input,
grad_output)`` when those of the tensor arguments are, returning ``None`` or
new ones (``grad_input`` holds zeros for a tensor argument that needs none, and
``None`` for the others). The backward hooks of a call are those registered
when its ``forward`` ran, as in PyTorch: removing or adding one before
``backward()`` changes the next call only. They run for a module that returns
a Tensor or a tuple or list of them (one returning a dict warns, as PyTorch's).

Each returns a handle whose ``remove()`` unregisters the hook; ``prepend=True``
runs it before the hooks registered earlier. A module without hooks pays one
attribute read per call.

PyTorch's dicts of them read and write the same lists: ``module._forward_hooks``,
``_forward_pre_hooks``, ``_backward_hooks`` and ``_backward_pre_hooks`` map each
handle's ``id`` to its hook, in the order they run (``clear()``, ``del``, ``pop``
and ``d[id] = hook`` change which run); ``_forward_hooks_with_kwargs``,
``_forward_hooks_always_called`` and ``_forward_pre_hooks_with_kwargs`` map the
ids of those registered so to ``True``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any

from ..creation import zeros
from ..errors import ArgumentError, DtypeError, InvalidArgumentError, ShapeError
from ..function import Function
from ..grad_mode import is_grad_enabled
from ..tensor import Tensor
from ..tensor_hooks import RemovableHandle

__all__ = ["ModuleHooks", "call_with_hooks", "hook_dict", "hook_flags"]


class _Entry:
    """One registered hook and how it is called (each entry its own object, for ``remove``)."""

    __slots__ = ("always_call", "hook", "id", "with_kwargs")

    def __init__(
        self, hook: Callable[..., Any], with_kwargs: bool, always_call: bool, id: Any = None
    ) -> None:
        self.hook = hook
        self.with_kwargs = with_kwargs
        self.always_call = always_call
        self.id = id  # its handle's, the key of the module's hook dicts


class ModuleHooks:
    """The hooks of one module, by kind, in the order they run."""

    __slots__ = ("backward", "backward_pre", "forward", "forward_pre")

    def __init__(self) -> None:
        self.forward_pre: list[_Entry] = []
        self.forward: list[_Entry] = []
        self.backward_pre: list[_Entry] = []
        self.backward: list[_Entry] = []

    def add(
        self,
        kind: str,
        hook: Any,
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        if not callable(hook):
            raise ArgumentError(f"a module hook must be callable, got {type(hook).__name__}")
        entries: list[_Entry] = getattr(self, kind)
        entry = _Entry(hook, bool(with_kwargs), bool(always_call))
        handle = RemovableHandle(entries, entry)
        entry.id = handle.id
        entries.insert(0, entry) if prepend else entries.append(entry)
        return handle

    def __bool__(self) -> bool:
        return bool(self.forward_pre or self.forward or self.backward_pre or self.backward)


def _entries(module: Any, kind: str) -> list[_Entry]:
    """The list of ``module``'s hooks of ``kind`` (an empty one if it has none)."""
    hooks = module._module_hooks
    return [] if hooks is None else getattr(hooks, kind)


def _find(entries: list[_Entry], key: Any) -> _Entry | None:
    for entry in entries:
        if entry.id == key:
            return entry
    return None


class HookDict(MutableMapping[Any, Callable[..., Any]]):
    """A module's hooks of one kind as PyTorch's dict of them: handle id -> hook, in the
    order they run. Reads and writes go to the module's hook list itself."""

    __slots__ = ("_kind", "_module", "_name")

    def __init__(self, module: Any, kind: str, name: str) -> None:
        self._module, self._kind, self._name = module, kind, name

    def __getitem__(self, key: Any) -> Callable[..., Any]:
        entry = _find(_entries(self._module, self._kind), key)
        if entry is None:
            raise KeyError(key)
        return entry.hook

    def __setitem__(self, key: Any, hook: Callable[..., Any]) -> None:
        if not callable(hook):
            raise ArgumentError(
                f"{type(self._module).__name__}.{self._name}[{key!r}] = ...: a module hook "
                f"must be callable, got {type(hook).__name__}"
            )
        entries: list[_Entry] = getattr(self._module._hooks(), self._kind)
        entry = _find(entries, key)
        if entry is None:  # a new key runs last, as a dict's new key comes last
            entries.append(_Entry(hook, False, False, key))
        else:  # a known one keeps its place and how it is called
            entry.hook = hook

    def __delitem__(self, key: Any) -> None:
        entries = _entries(self._module, self._kind)
        entry = _find(entries, key)
        if entry is None:
            raise KeyError(key)
        entries.remove(entry)

    def __iter__(self) -> Iterator[Any]:
        return iter([entry.id for entry in _entries(self._module, self._kind)])

    def __len__(self) -> int:
        return len(_entries(self._module, self._kind))

    def clear(self) -> None:
        _entries(self._module, self._kind).clear()  # in place: the handles keep their list

    def __repr__(self) -> str:
        return f"{self._name}({dict(self.items())!r})"


class HookFlags(MutableMapping[Any, bool]):
    """The ids of a module's hooks of one kind registered with a flag (``with_kwargs``,
    ``always_call``), each mapped to ``True``, as PyTorch's dicts of them."""

    __slots__ = ("_flag", "_kind", "_module", "_name")

    def __init__(self, module: Any, kind: str, flag: str, name: str) -> None:
        self._module, self._kind, self._flag, self._name = module, kind, flag, name

    def _flagged(self) -> list[_Entry]:
        return [e for e in _entries(self._module, self._kind) if getattr(e, self._flag)]

    def __getitem__(self, key: Any) -> bool:
        if _find(self._flagged(), key) is None:
            raise KeyError(key)
        return True

    def __setitem__(self, key: Any, value: bool) -> None:
        entry = _find(_entries(self._module, self._kind), key)
        where = f"{type(self._module).__name__}.{self._name}[{key!r}] = {value!r}"
        if value is not True:
            raise InvalidArgumentError(
                f"{where}: its values are True (delete the key to clear the flag)"
            )
        if entry is None:
            raise KeyError(
                f"{where}: no hook has that id; register the hook first (its handle's id)"
            )
        setattr(entry, self._flag, True)

    def __delitem__(self, key: Any) -> None:
        entry = _find(self._flagged(), key)
        if entry is None:
            raise KeyError(key)
        setattr(entry, self._flag, False)

    def __iter__(self) -> Iterator[Any]:
        return iter([entry.id for entry in self._flagged()])

    def __len__(self) -> int:
        return len(self._flagged())

    def __repr__(self) -> str:
        return f"{self._name}({dict(self.items())!r})"


def hook_dict(kind: str, name: str) -> Any:
    """The property ``name`` of modules: their hooks of ``kind`` as a :class:`HookDict`.
    Assigning a mapping replaces them (a known id keeps how its hook is called)."""

    def get(module: Any) -> HookDict:
        return HookDict(module, kind, name)

    def set_(module: Any, hooks: Mapping[Any, Callable[..., Any]]) -> None:
        if not isinstance(hooks, Mapping):
            raise ArgumentError(
                f"{type(module).__name__}.{name} = ...: give a mapping of handle id to hook "
                f"(an OrderedDict), got {type(hooks).__name__}"
            )
        items = list(hooks.items())
        for key, hook in items:
            if not callable(hook):
                raise ArgumentError(
                    f"{type(module).__name__}.{name} = ...: the hook of {key!r} must be "
                    f"callable, got {type(hook).__name__}"
                )
        entries: list[_Entry] = getattr(module._hooks(), kind)
        known = {entry.id: entry for entry in entries}
        new = []
        for key, hook in items:
            entry = known.get(key) or _Entry(hook, False, False, key)
            entry.hook = hook
            new.append(entry)
        entries[:] = new  # in place: the handles keep their list

    return property(get, set_, doc=f"The {kind.replace('_', ' ')} hooks, by handle id.")


def hook_flags(kind: str, flag: str, name: str) -> Any:
    """The property ``name`` of modules: a :class:`HookFlags`. Assigning a mapping
    flags the hooks whose ids are its keys, and only those."""

    def get(module: Any) -> HookFlags:
        return HookFlags(module, kind, flag, name)

    def set_(module: Any, flagged: Mapping[Any, bool]) -> None:
        entries = _entries(module, kind)
        where = f"{type(module).__name__}.{name} = ..."
        if not isinstance(flagged, Mapping):
            raise ArgumentError(
                f"{where}: give a mapping of handle id to True, got {type(flagged).__name__}"
            )
        unknown = set(flagged) - {entry.id for entry in entries}
        if unknown:
            raise KeyError(f"{where}: no hook has the id(s) {sorted(unknown, key=repr)}")
        for entry in entries:
            setattr(entry, flag, entry.id in flagged)

    return property(get, set_, doc=f"The ids of the {kind.replace('_', ' ')} hooks with {flag}.")


def call_with_hooks(module: Any, hooks: ModuleHooks, args: tuple[Any, ...], kwargs: Any) -> Any:
    """``module.forward(*args, **kwargs)`` with its hooks around it."""
    called: set[int] = set()  # the always_call forward hooks run already
    output = None
    try:
        for entry in tuple(hooks.forward_pre):
            if entry.with_kwargs:
                changed = entry.hook(module, args, kwargs)
                if changed is not None:
                    if not (isinstance(changed, tuple) and len(changed) == 2):
                        raise ArgumentError(
                            f"a forward pre-hook registered with with_kwargs=True returns None "
                            f"or (args, kwargs), got {type(changed).__name__}"
                        )
                    args, kwargs = changed
            else:
                changed = entry.hook(module, args)
                if changed is not None:
                    args = changed if isinstance(changed, tuple) else (changed,)
        backward = (hooks.backward or hooks.backward_pre) and is_grad_enabled()
        if backward:
            state = _BackwardState(module, hooks)
            args = state.watch_inputs(args)
        output = module.forward(*args, **kwargs)
        for entry in tuple(hooks.forward):
            if entry.always_call:
                called.add(id(entry))
            changed = _call_forward_hook(entry, module, args, kwargs, output)
            if changed is not None:
                output = changed
        if backward:
            output = state.watch_outputs(output)
        return output
    except Exception:
        # Whatever failed (a pre-hook, forward, another hook), the always_call hooks not run
        # yet run now, with the output if forward gave one, as PyTorch's.
        for entry in tuple(hooks.forward):
            if entry.always_call and id(entry) not in called:
                try:
                    _call_forward_hook(entry, module, args, kwargs, output)
                except Exception as exc:  # the first error is the one raised
                    warnings.warn(
                        f"a forward hook of {type(module).__name__} registered with "
                        f"always_call=True raised {type(exc).__name__}: {exc}; it is not "
                        "raised, as the call had failed already",
                        stacklevel=3,
                    )
        raise


def _call_forward_hook(entry: _Entry, module: Any, args: Any, kwargs: Any, output: Any) -> Any:
    if entry.with_kwargs:
        return entry.hook(module, args, kwargs, output)
    return entry.hook(module, args, output)


class _BackwardState:
    """What the backward hooks of one call need: the module, and the outputs' gradients."""

    def __init__(self, module: Any, hooks: ModuleHooks) -> None:
        self.module = module
        # The hooks as the forward call finds them, as PyTorch's: one removed or added
        # between forward and backward changes the next call, not this one's backward.
        self.backward_hooks = tuple(hooks.backward)
        self.backward_pre_hooks = tuple(hooks.backward_pre)
        self.grad_output: tuple[Any, ...] | None = None
        self.inputs_watched = False
        self.input_count = 0

    def watch_inputs(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """The arguments, the tensors that require grad passed through an identity whose
        backward calls the full backward hooks with their gradients."""
        self.input_count = len(args)
        where = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
        if not where or not self.backward_hooks:
            return args
        self.inputs_watched = True
        self.positions = where
        self.watched_shapes = [(args[i].shape, args[i].dtype, args[i].device) for i in where]
        # The other tensor arguments get zeros, as PyTorch's (non-tensors get None).
        self.unwatched = [
            (i, a.shape, a.dtype, a.device)
            for i, a in enumerate(args)
            if isinstance(a, Tensor) and i not in where
        ]
        passed = _Watched.apply(self, "inputs", *(args[i] for i in where))
        passed = passed if isinstance(passed, tuple) else (passed,)
        new = list(args)
        for i, tensor in zip(where, passed):
            new[i] = tensor
        return tuple(new)

    def watch_outputs(self, output: Any) -> Any:
        """The output, its tensors passed through an identity whose backward calls the
        backward pre-hooks (and the full hooks, where no input needs a gradient)."""
        single = isinstance(output, Tensor)
        items = (output,) if single else output
        if not isinstance(items, (tuple, list)):
            # No gradients of the outputs to hand the hooks: they do not run, as PyTorch's.
            self.backward_hooks = self.backward_pre_hooks = ()
            warnings.warn(
                f"{type(self.module).__name__} returned a {type(output).__name__}: its full "
                "backward hooks run only for a module that returns a Tensor or a tuple or "
                "list of them, and do not run for this call",
                UserWarning,
                stacklevel=4,
            )
            return output
        where = [i for i, t in enumerate(items) if isinstance(t, Tensor) and t.requires_grad]
        if not where:
            return output
        # The hooks see one gradient per output (None where there is none), as PyTorch's.
        self.output_count = len(items)
        self.output_positions = where
        self.output_specs = [(items[i].shape, items[i].dtype) for i in where]
        passed = _Watched.apply(self, "outputs", *(items[i] for i in where))
        passed = passed if isinstance(passed, tuple) else (passed,)
        if single:
            return passed[0]
        new = list(items)
        for i, tensor in zip(where, passed):
            new[i] = tensor
        return type(items)(*new) if hasattr(items, "_fields") else type(items)(new)

    def outputs_backward(self, grads: tuple[Any, ...]) -> tuple[Any, ...]:
        full: list[Any] = [None] * self.output_count
        for i, grad in zip(self.output_positions, grads):
            full[i] = grad
        grad_output = tuple(full)
        for entry in self.backward_pre_hooks:
            changed = entry.hook(self.module, grad_output)
            if changed is not None:
                grad_output = _checked_grads("backward pre-hook", changed, self.output_count)
                _check_like(entry, "grad_output", grad_output, self.output_positions,
                            self.output_specs)  # fmt: skip
        self.grad_output = grad_output
        if self.backward_hooks and not self.inputs_watched:
            # No argument needs a gradient: the hooks are called now, with none.
            for entry in self.backward_hooks:
                entry.hook(self.module, (None,) * self.input_count, grad_output)
        return tuple(grad_output[i] for i in self.output_positions)

    def inputs_backward(self, grads: tuple[Any, ...]) -> tuple[Any, ...]:
        grad_output = self.grad_output
        if not self.backward_hooks or grad_output is None:
            # (None: the gradients reached the inputs without passing through the outputs in
            # this pass, as in a double backward through what the first one recorded: the
            # hooks, which ran in the first, are not run again with its grad_output.)
            return grads
        self.grad_output = None
        full: list[Any] = [None] * self.input_count
        for i, grad, (shape, dtype, device) in zip(self.positions, grads, self.watched_shapes):
            # An argument that needs a gradient and got none gets zeros, as PyTorch's.
            full[i] = grad if grad is not None else zeros(shape, dtype=dtype, device=device)
        for i, shape, dtype, device in self.unwatched:
            full[i] = zeros(shape, dtype=dtype, device=device)
        grad_input = tuple(full)
        for entry in self.backward_hooks:
            changed = entry.hook(self.module, grad_input, grad_output)
            if changed is not None:
                grad_input = _checked_grads("full backward hook", changed, self.input_count)
                specs = [(shape, dtype) for shape, dtype, _ in self.watched_shapes]
                _check_like(entry, "grad_input", grad_input, self.positions, specs)
        return tuple(grad_input[i] for i in self.positions)


def _checked_grads(what: str, grads: Any, count: int) -> tuple[Any, ...]:
    grads = tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)
    if len(grads) != count:
        raise ArgumentError(
            f"a module's {what} returned {len(grads)} gradient(s) where {count} are expected "
            "(one per tensor, None where there is none)"
        )
    return grads


def _check_like(
    entry: _Entry,
    what: str,
    grads: tuple[Any, ...],
    positions: list[int],
    specs: list[tuple[tuple[int, ...], Any]],
) -> None:
    """Refuse a gradient a hook returned of another shape or dtype than the tensor's, as
    PyTorch does (the engine would only have said that an internal node returned it)."""
    name = getattr(entry.hook, "__name__", repr(entry.hook))
    for i, (shape, dtype) in zip(positions, specs):
        grad = grads[i]
        if grad is None:
            continue
        if not isinstance(grad, Tensor):
            raise ArgumentError(
                f"the module's backward hook {name!r} returned a value of type "
                f"{type(grad).__name__} in {what}[{i}]; return Tensors (or None)"
            )
        if grad.shape != shape:
            raise ShapeError(
                f"the module's backward hook {name!r} changed the shape of {what}[{i}] from "
                f"{shape} to {grad.shape}; return a gradient of the tensor's shape"
            )
        if grad.dtype != dtype:
            raise DtypeError(
                f"the module's backward hook {name!r} changed the dtype of {what}[{i}] from "
                f"{dtype.name} to {grad.dtype.name}; return a gradient of the tensor's dtype"
            )


class _Watched(Function):
    """The identity, whose backward hands the gradients to a module's backward hooks."""

    @staticmethod
    def forward(ctx: Any, state: _BackwardState, side: str, *tensors: Tensor) -> Any:
        ctx.state, ctx.side = state, side
        ctx.set_materialize_grads(False)  # an output without gradient: None, as PyTorch's
        out = tuple(t.view_as(t) for t in tensors)
        return out[0] if len(out) == 1 else out

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        state = ctx.state
        if ctx.side == "outputs":
            grads = state.outputs_backward(grads)
        else:
            grads = state.inputs_backward(grads)
        return (None, None, *grads)
