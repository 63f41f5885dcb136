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

``register_backward_hook(hook)`` (PyTorch's deprecated non-full hook):
``hook(module, grad_input, grad_output)`` with the gradients of the node that
made the module's (first) output, registered on it at each call.

Each returns a handle whose ``remove()`` unregisters the hook; ``prepend=True``
runs it before the hooks registered earlier. A module without hooks pays one
attribute read per call.

The global hooks (``plugrad.nn.modules.module.register_module_forward_hook`` and
the like, in :data:`global_hooks`) run for every module, before its own, as
PyTorch's; the global registration hooks (:data:`registration_hooks`) see every
parameter, buffer and submodule registered.

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

__all__ = [
    "NO_HOOKS",
    "ModuleHooks",
    "add_registration_hook",
    "call_with_hooks",
    "global_hooks",
    "hook_dict",
    "hook_flags",
    "registered",
    "registration_hooks",
]


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
    """The hooks of one module, by kind, in the order they run.

    ``backward_legacy`` holds the hooks of the deprecated
    :meth:`~plugrad.nn.Module.register_backward_hook` (called on the node that made the
    output, as PyTorch's). An instance is true when it or :data:`global_hooks` holds any
    hook, so that a module with none of its own still runs the global ones.
    """

    __slots__ = ("backward", "backward_legacy", "backward_pre", "forward", "forward_pre")

    def __init__(self) -> None:
        self.forward_pre: list[_Entry] = []
        self.forward: list[_Entry] = []
        self.backward_pre: list[_Entry] = []
        self.backward: list[_Entry] = []
        self.backward_legacy: list[_Entry] = []

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
        # A full and a non-full backward hook on one module (or globally) are refused, as
        # PyTorch's: they would see the gradients of different nodes.
        other = {"backward": "backward_legacy", "backward_legacy": "backward"}.get(kind)
        if other is not None and getattr(self, other):
            owner = "the global module hooks" if self is global_hooks else "one module"
            raise InvalidArgumentError(
                f"cannot register both full and non-full (register_backward_hook) backward "
                f"hooks on {owner}; use register_full_backward_hook only (remove the "
                "others first)"
            )
        entries: list[_Entry] = getattr(self, kind)
        entry = _Entry(hook, bool(with_kwargs), bool(always_call))
        handle = RemovableHandle(entries, entry)
        entry.id = handle.id
        entries.insert(0, entry) if prepend else entries.append(entry)
        return handle

    def __getstate__(self) -> dict[str, list[_Entry]]:
        return {kind: getattr(self, kind) for kind in self.__slots__}

    def __setstate__(self, state: Any) -> None:
        # (A copy pickled by an earlier version may lack a kind: it starts empty.)
        self.__init__()  # type: ignore[misc]
        if isinstance(state, tuple):  # the slots' default pickled form: (None, slots)
            state = state[1] or {}
        for kind, entries in state.items():
            setattr(self, kind, entries)

    def _own(self) -> bool:
        return bool(
            self.forward_pre
            or self.forward
            or self.backward_pre
            or self.backward
            or self.backward_legacy
        )

    def __bool__(self) -> bool:
        return self._own() or global_hooks._own()


#: The hooks every module runs before its own (``register_module_forward_hook``, ...).
global_hooks = ModuleHooks()
#: The default ``_module_hooks`` of a module that registered none: empty, and true while a
#: global hook exists (a module call, and a capture by ``plugrad.compile``, then see them).
#: Nothing is ever added to it.
NO_HOOKS = ModuleHooks()
#: The global registration hooks, by kind ("parameter", "buffer", "module"), in order.
registration_hooks: dict[str, list[_Entry]] = {"parameter": [], "buffer": [], "module": []}


def add_registration_hook(kind: str, hook: Any) -> RemovableHandle:
    """Register a global registration hook of ``kind`` ("parameter", "buffer", "module")."""
    if not callable(hook):
        raise ArgumentError(f"a module hook must be callable, got {type(hook).__name__}")
    entries = registration_hooks[kind]
    entry = _Entry(hook, False, False)
    handle = RemovableHandle(entries, entry)
    entry.id = handle.id
    entries.append(entry)
    return handle


def registered(kind: str, module: Any, name: str, value: Any) -> Any:
    """``value`` as the global registration hooks of ``kind`` leave it: each is called with
    ``(module, name, value)`` and may return a replacement, as PyTorch's."""
    for entry in tuple(registration_hooks[kind]):
        output = entry.hook(module, name, value)
        if output is not None:
            value = output
    return value


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
    """``module.forward(*args, **kwargs)`` with its hooks around it, the global ones first."""
    every = global_hooks
    forward_pre = (*every.forward_pre, *hooks.forward_pre)
    forward = (*every.forward, *hooks.forward)
    called: set[int] = set()  # the always_call forward hooks run already
    output = None
    try:
        for entry in forward_pre:
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
        backward_hooks = (*every.backward, *hooks.backward)
        backward_pre_hooks = (*every.backward_pre, *hooks.backward_pre)
        backward = (backward_hooks or backward_pre_hooks) and is_grad_enabled()
        if backward:
            state = _BackwardState(module, backward_hooks, backward_pre_hooks)
            args = state.watch_inputs(args)
        output = module.forward(*args, **kwargs)
        for entry in forward:
            if entry.always_call:
                called.add(id(entry))
            changed = _call_forward_hook(entry, module, args, kwargs, output)
            if changed is not None:
                output = changed
        if backward:
            output = state.watch_outputs(output)
        legacy = (*every.backward_legacy, *hooks.backward_legacy)
        if legacy:
            _hook_output_node(module, legacy, args, output)
        return output
    except Exception:
        # Whatever failed (a pre-hook, forward, another hook), the always_call hooks not run
        # yet run now, with the output if forward gave one, as PyTorch's.
        for entry in forward:
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


def _first_tensor(output: Any) -> Any:
    """The tensor whose node gets the non-full backward hooks: the output, or the first
    tensor found by going into the first item of a tuple or list, or the first tensor value
    of a dict (as PyTorch's); None if there is none."""
    while not isinstance(output, Tensor):
        if isinstance(output, Mapping):
            output = next((v for v in output.values() if isinstance(v, Tensor)), None)
        elif isinstance(output, (tuple, list)) and output:
            output = output[0]
        else:
            return None
    return output


class _LegacyHook:
    """A hook of :meth:`Module.register_backward_hook` as a node hook: called with the
    module, and the node's input and output gradients."""

    __slots__ = ("hook", "module")

    def __init__(self, hook: Callable[..., Any], module: Any) -> None:
        self.hook, self.module = hook, module

    def __call__(self, grad_inputs: Any, grad_outputs: Any) -> Any:
        return self.hook(self.module, grad_inputs, grad_outputs)


def _hook_output_node(module: Any, legacy: tuple[_Entry, ...], args: Any, output: Any) -> None:
    """Register the non-full backward hooks on the node that made ``module``'s output, as
    PyTorch's ``register_backward_hook`` does, with PyTorch's warnings where that node's
    gradients are not the module's."""
    first = _first_tensor(output)
    node = None if first is None else first.grad_fn
    if node is None:
        return
    for entry in legacy:
        node.register_hook(_LegacyHook(entry.hook, module))
    outputs = (output,) if isinstance(output, Tensor) else output
    advice = "use register_full_backward_hook instead, which sees the module's own gradients"
    if not (isinstance(outputs, tuple) and all(isinstance(t, Tensor) for t in outputs)):
        message = "the module does not return a Tensor or a tuple of Tensors: the hook misses"
        message += " some of grad_output"
    elif not all(isinstance(a, Tensor) for a in args):
        message = "the module takes arguments that are not Tensors: the hook misses some of"
        message += " grad_input"
    else:
        nodes = {t.grad_fn for t in outputs if t.grad_fn is not None}
        if len(nodes) > 1:
            message = "the outputs come from different nodes: the hook misses some grad_output"
        elif node not in nodes:
            message = "the output is nested: the hook misses some grad_output"
        elif {a.grad_fn for a in args if a.grad_fn is not None} != {
            n for n, _ in node.next_functions
        }:
            message = "forward records several nodes: the hook sees the last one's grad_input"
            message += ", not the module's"
        else:
            return
    warnings.warn(
        f"a non-full backward hook (register_backward_hook) of {type(module).__name__}: "
        f"{message}; {advice}",
        FutureWarning,
        stacklevel=4,
    )


def _call_forward_hook(entry: _Entry, module: Any, args: Any, kwargs: Any, output: Any) -> Any:
    if entry.with_kwargs:
        return entry.hook(module, args, kwargs, output)
    return entry.hook(module, args, output)


class _BackwardState:
    """What the backward hooks of one call need: the module, and the outputs' gradients."""

    def __init__(
        self,
        module: Any,
        backward_hooks: tuple[_Entry, ...],
        backward_pre_hooks: tuple[_Entry, ...],
    ) -> None:
        self.module = module
        # The hooks as the forward call finds them, as PyTorch's: one removed or added
        # between forward and backward changes the next call, not this one's backward.
        self.backward_hooks = backward_hooks
        self.backward_pre_hooks = backward_pre_hooks
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
