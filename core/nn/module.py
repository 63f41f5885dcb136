"""``Module``: the base class of layers and models, with PyTorch's mechanics.

A module registers what is assigned to its attributes: a
:class:`~plugrad.nn.Parameter` becomes a parameter, another module a
submodule, and tensors given to :meth:`Module.register_buffer` buffers
(state that is saved but not learned). Everything else -- iterating
parameters, moving to another backend, saving and loading, train and eval
modes -- walks that tree.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, cast

from .. import dtypes as _dtypes
from ..backend import Backend, Device
from ..creation import asarray, empty, empty_like, target_device
from ..errors import (
    ArgumentError,
    DtypeError,
    InvalidArgumentError,
    InvalidNameError,
    NotSupportedError,
    ShapeError,
)
from ..grad_mode import no_grad
from ..keyword_options import spell_out
from ..memory_formats import check_memory_format, memory_format
from ..node import note_hook_registered
from ..tensor import Tensor
from ..tensor_hooks import RemovableHandle
from .module_hooks import (
    NO_HOOKS,
    ModuleHooks,
    add_registration_hook,
    call_with_hooks,
    global_hooks,
    hook_dict,
    hook_flags,
    registered,
    registration_hooks,
)
from .module_state import IncompatibleKeys, note_change, note_extra_state, read_entry
from .module_state import load_state_dict as _load_state_dict
from .parameter import Parameter, marked_as_buffer

if TYPE_CHECKING:
    from typing_extensions import Unpack

# (The global hooks, register_module_*, are left out: plugrad.nn takes these names, and
# PyTorch has those functions in torch.nn.modules.module only.)
__all__ = ["IncompatibleKeys", "Module"]

ModuleT = TypeVar("ModuleT", bound="Module")

#: Told of every module called while ``plugrad.compile`` captures a plan (whose replays
#: check each such module's train/eval mode and tensors); None otherwise.
_call_observer: Callable[[Module], None] | None = None

#: Makes the compiled call of :meth:`Module.compile` (set by plugrad.compiler, a layer above).
_compile_calls: Callable[..., Any] | None = None
#: Whether any module's calls were compiled (until then a call does not look).
_compiled_calls_made = False

#: Whether any module ever registered a hook (until then a call does not look for them).
_hooks_registered = False


def _check_name(kind: str, owner: Module, name: Any) -> None:
    if not isinstance(name, str):
        raise ArgumentError(f"{kind} name must be a str, got {type(name).__name__}")
    if not name:
        raise InvalidNameError(f"a {kind} name cannot be empty; give a name such as 'weight'")
    if "." in name:
        raise InvalidNameError(
            f"a {kind} name cannot contain '.', got {name!r}: a dotted path names a "
            "submodule's member; register it on that submodule (module.get_submodule(path))"
        )
    if hasattr(type(owner), name) or (
        name in owner.__dict__ and name not in ("_parameters", "_buffers", "_modules")
    ):
        raise InvalidNameError(
            f"attribute {name!r} already exists on {type(owner).__name__}; choose another "
            f"{kind} name (or delete the attribute first)"
        )


_GRADIENT_KINDS = ("real floating", "complex floating")


def _older(local_metadata: Mapping[str, Any], module: Any) -> bool:
    """Whether the entries come from an older version of ``module``'s class than its own (or
    from one that does not say): then they may lack what the class added since."""
    version = local_metadata.get("version")
    return version is None or version < getattr(module, "_version", 1)


def zero_grads(params: Iterable[Tensor], set_to_none: bool) -> None:
    """Set each tensor's ``.grad`` to ``None``, or fill it with zeros in place
    (``Module.zero_grad`` and ``Optimizer.zero_grad``)."""
    for param in params:
        grad = param._grad
        if grad is None:
            continue
        if set_to_none:
            param._grad = None
        else:
            grad.detach_()  # a gradient made with create_graph=True leaves its graph
            grad.zero_()


class _ReturningStateDictHook:
    """A hook of ``Module._register_state_dict_hook``: one that may return a new dict."""

    __slots__ = ("hook",)

    def __init__(self, hook: Callable[..., Any]) -> None:
        if not callable(hook):
            raise ArgumentError(f"a state dict hook must be callable, got {type(hook).__name__}")
        self.hook = hook

    def __call__(self, *args: Any) -> Any:
        return self.hook(*args)


class _PrivateLoadPreHook:
    """A hook of ``Module._register_load_state_dict_pre_hook``: called without the module
    unless registered ``with_module``, as PyTorch's."""

    __slots__ = ("hook", "with_module")

    def __init__(self, hook: Callable[..., Any], with_module: bool) -> None:
        self.hook, self.with_module = hook, bool(with_module)

    def __call__(self, module: Any, *args: Any) -> Any:
        return self.hook(module, *args) if self.with_module else self.hook(*args)


class Module:
    """Base class of every layer and model.

    Subclasses call ``super().__init__()`` first, assign parameters and
    submodules as attributes, and define :meth:`forward`; calling the module
    calls ``forward``.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad import nn
    >>> class TwoLayers(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.hidden = nn.Linear(3, 4)
    ...         self.out = nn.Linear(4, 1)
    ...
    ...     def forward(self, x):
    ...         return self.out(nn.functional.relu(self.hidden(x)))
    >>> model = TwoLayers()
    >>> model
    TwoLayers(
      (hidden): Linear(in_features=3, out_features=4, bias=True)
      (out): Linear(in_features=4, out_features=1, bias=True)
    )
    >>> [name for name, _ in model.named_parameters()]
    ['hidden.weight', 'hidden.bias', 'out.weight', 'out.bias']
    >>> model(plugrad.ones((2, 3))).shape
    (2, 1)
    """

    training: bool
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Tensor | None]
    _non_persistent_buffers: set[str]
    _modules: dict[str, Module | None]
    #: Entries a state dict may leave out (saved by older versions): they keep their values.
    _optional_state: tuple[str, ...] = ()
    #: The hooks registered on this module (NO_HOOKS until the first registration).
    _module_hooks: ModuleHooks | None = NO_HOOKS
    # PyTorch's dicts of them (handle id -> hook, in the order they run), views of those lists.
    _forward_pre_hooks = hook_dict("forward_pre", "_forward_pre_hooks")
    _forward_pre_hooks_with_kwargs = hook_flags(
        "forward_pre", "with_kwargs", "_forward_pre_hooks_with_kwargs"
    )
    _forward_hooks = hook_dict("forward", "_forward_hooks")
    _forward_hooks_with_kwargs = hook_flags("forward", "with_kwargs", "_forward_hooks_with_kwargs")
    _forward_hooks_always_called = hook_flags(
        "forward", "always_call", "_forward_hooks_always_called"
    )
    _backward_pre_hooks = hook_dict("backward_pre", "_backward_pre_hooks")
    _backward_hooks = hook_dict("backward", "_backward_hooks")
    #: Its state dict hooks, by kind (made at the first registration).
    _state_dict_hooks: dict[str, list[Callable[..., Any]]] | None = None
    #: The compiled call :meth:`compile` made, which calls run instead (None: none).
    _compiled_call: Callable[..., Any] | None = None

    def __init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", {})
        set_(self, "_buffers", {})
        set_(self, "_non_persistent_buffers", set())
        set_(self, "_modules", {})

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Compute the module's output; every subclass defines it."""
        raise NotImplementedError(
            f"{type(self).__name__} has no forward(); define forward(self, ...) in the subclass"
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _compiled_calls_made:  # one global read for programs that never compile a module
            compiled = self._compiled_call
            if compiled is not None and _call_observer is None:  # (a capture runs the layers)
                return compiled(*args, **kwargs)
        if _call_observer is not None:
            _call_observer(self)
        try:
            if _hooks_registered and self._module_hooks:
                return call_with_hooks(self, self._module_hooks, args, kwargs)
            return self.forward(*args, **kwargs)
        except ShapeError as exc:
            if getattr(exc, "_layer_named", False):
                raise
            layered = ShapeError(f"in the layer {self!r}: {exc}")
            vars(layered)["_layer_named"] = True  # the innermost layer is the one to name
            raise layered from exc

    def compile(
        self,
        *,
        fullgraph: bool = False,
        cache_size: int = 8,
        optimize: bool = True,
        device_graph: bool = False,
        **torch_options: Any,
    ) -> None:
        """Compile this module's calls with :func:`plugrad.compile`, in place (PyTorch's).

        Later calls ``module(x)`` capture a plan per input signature and replay
        it; a result that carries a graph keeps it, so ``loss.backward()`` after
        the call works as eagerly (see :doc:`/compile`). The module is otherwise
        the same object (parameters, ``state_dict``, ``repr``); a copy or a
        pickle of it is not compiled. The options are :func:`plugrad.compile`'s;
        ``torch.compile``'s others (``mode``, ``dynamic``, ``backend``, ...) are
        refused with a :class:`TypeError` that says so.

        Examples
        --------
        >>> import plugrad
        >>> model = plugrad.nn.Linear(3, 1)
        >>> model.compile()
        >>> y = model(plugrad.ones((2, 3)))
        >>> y = model(plugrad.ones((2, 3)))  # replayed
        >>> y.grad_fn
        <CompiledFunctionBackward>
        """
        global _compiled_calls_made
        if torch_options:
            raise ArgumentError(
                f"Module.compile() got {', '.join(sorted(torch_options))}: plugrad.compile "
                "captures a plan per input signature and replays it as Python over the "
                "backend, so torch.compile's mode, dynamic, backend and options have no "
                "counterpart; leave them out (its options here: fullgraph, cache_size, "
                "optimize, device_graph)"
            )
        assert _compile_calls is not None  # plugrad imports plugrad.compiler
        compiled = _compile_calls(
            self,
            fullgraph=fullgraph,
            cache_size=cache_size,
            optimize=optimize,
            device_graph=device_graph,
        )
        object.__setattr__(self, "_compiled_call", compiled)
        _compiled_calls_made = True

    def __getstate__(self) -> dict[str, Any]:
        # A compiled call holds plans made for this object: a copy compiles anew if asked.
        state = self.__dict__.copy()
        state.pop("_compiled_call", None)
        for key, value in state.items():
            if isinstance(value, Tensor) and value.grad_fn is not None:
                # An attribute a forward pre-hook recomputes (a pruned or normalized weight):
                # its values are copied, its graph cannot be.
                state[key] = value.detach()
        return state

    # -- hooks ----------------------------------------------------------------------------

    def _hooks(self) -> ModuleHooks:
        global _hooks_registered
        _hooks_registered = True
        note_hook_registered()
        hooks = self._module_hooks
        if hooks is None or hooks is NO_HOOKS:
            hooks = ModuleHooks()
            object.__setattr__(self, "_module_hooks", hooks)
        return hooks

    def register_forward_pre_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, args)`` before each ``forward``; it may return new arguments.

        ``with_kwargs=True`` calls ``hook(module, args, kwargs)``, which may return
        ``(args, kwargs)``. ``prepend=True`` runs it before the hooks registered
        earlier. Returns a handle whose ``remove()`` unregisters it.
        """
        return self._hooks().add("forward_pre", hook, prepend=prepend, with_kwargs=with_kwargs)

    def register_forward_hook(
        self,
        hook: Callable[..., Any],
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after each ``forward``; it may return a new output.

        ``with_kwargs=True`` calls ``hook(module, args, kwargs, output)``;
        ``always_call=True`` calls it also when ``forward`` raised (with output
        ``None``). Returns a handle whose ``remove()`` unregisters it.

        Examples
        --------
        >>> import plugrad
        >>> from plugrad import nn
        >>> layer, seen = nn.Linear(2, 3), []
        >>> handle = layer.register_forward_hook(lambda m, args, out: seen.append(out.shape))
        >>> _ = layer(plugrad.ones(4, 2))
        >>> handle.remove()
        >>> _ = layer(plugrad.ones(1, 2))
        >>> seen
        [(4, 3)]
        """
        return self._hooks().add(
            "forward", hook, prepend=prepend, with_kwargs=with_kwargs, always_call=always_call
        )

    def register_full_backward_pre_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when the gradients of the module's outputs are
        known (during backward); it may return new ones."""
        return self._hooks().add("backward_pre", hook, prepend=prepend)

    def register_full_backward_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` when the gradients of the module's
        tensor arguments are known; it may return new ``grad_input``.

        ``grad_input`` has one entry per positional argument, ``None`` for those
        that need no gradient; where none does, the hook is called with
        ``(None,)`` once the outputs' gradients are known.
        """
        return self._hooks().add("backward", hook, prepend=prepend)

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` with the gradients of the node that
        made the module's output (PyTorch's deprecated non-full hook; use
        :meth:`register_full_backward_hook`).

        As PyTorch's, the hook is registered on the ``grad_fn`` of the module's
        (first) output at each call: ``grad_input`` are that node's input
        gradients, which are the module's only when its ``forward`` records a
        single node of its tensor arguments; where they are not, the call warns
        with a ``FutureWarning``, as PyTorch's does. A module takes either full or
        non-full backward hooks, not both. Returns a handle whose ``remove()``
        unregisters it.
        """
        return self._hooks().add("backward_legacy", hook)

    # -- registration ---------------------------------------------------------------------

    def _registries(self, name: str) -> tuple[dict[str, Any], ...]:
        try:
            return (self._parameters, self._buffers, self._modules)
        except AttributeError:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__() has run; call "
                "super().__init__() first in the subclass's __init__"
            ) from None

    def _forget(self, name: str, keep: dict[str, Any] | None = None) -> None:
        """Drop ``name`` from every registry but ``keep`` (where it keeps its place)."""
        for registry in self._registries(name):
            if registry is not keep:
                registry.pop(name, None)
        self.__dict__.pop(name, None)
        self._non_persistent_buffers.discard(name)

    def _register(self, kind: str, name: str, value: Any, expected: type, error: str) -> None:
        """Put ``value`` under ``name`` in the registry of ``kind``, dropping it from the others.

        A ``value`` neither None nor an ``expected`` raises TypeError(``error``), formatted
        with ``name`` and ``got`` (the value's type name), once ``name`` is known to be valid.
        """
        registries = self._registries(name)
        registry = registries[("parameter", "buffer", "module").index(kind)]
        if name not in registry:
            _check_name(kind, self, name)
            for other, what in zip(registries, ("parameter", "buffer", "submodule")):
                if other is not registry and name in other:
                    # As PyTorch's: registering moves nothing out of another registry.
                    raise InvalidNameError(
                        f"attribute {name!r} already exists (a {what}); delete it first "
                        f"(del module.{name}) to register a {kind} under that name"
                    )
        if value is not None and not isinstance(value, expected):
            raise ArgumentError(error.format(name=name, got=type(value).__name__))
        if registration_hooks[kind] and (value is not None or kind != "parameter"):
            value = registered(kind, self, name, value)  # (None: no hook, as PyTorch's)
        self._forget(name, keep=registry)
        registry[name] = value

    def __setattr__(self, name: str, value: Any) -> None:
        if marked_as_buffer(value):  # nn.Buffer(...): registered as a buffer, as PyTorch's
            self.register_buffer(name, value, persistent=value.__dict__.get("persistent", True))
            return
        if isinstance(value, (Parameter, Module)):
            tables = self._registries(name)
            registry = tables[0 if isinstance(value, Parameter) else 2]
            if registry is tables[2] and name in tables[0]:
                raise ArgumentError(
                    f"cannot assign a {type(value).__name__} to parameter {name!r}: give a "
                    f"plugrad.nn.Parameter (or None), or delete it first (del module.{name})"
                )
            if registry is tables[0] and hasattr(type(self), name):
                # A method or class attribute (forward, ...), refused as PyTorch refuses it.
                raise InvalidNameError(
                    f"attribute {name!r} already exists on {type(self).__name__}; choose "
                    "another name for the parameter"
                )
            kind = "parameter" if registry is tables[0] else "module"
            if registration_hooks[kind]:
                value = registered(kind, self, name, value)
            self._forget(name, keep=registry)
            registry[name] = value
            return
        if "_parameters" in self.__dict__:
            # A registered name keeps its registry: it takes None or what that registry holds.
            registries: tuple[tuple[dict[str, Any], str, tuple[type, ...], str], ...] = (
                (self._parameters, "parameter", (), "plugrad.nn.Parameter"),
                (self._modules, "submodule", (), "Module"),
                (self._buffers, "buffer", (Tensor,), "Tensor"),
            )
            for registry, kind, accepted, wanted in registries:
                if name in registry:
                    if value is not None and not isinstance(value, accepted):
                        raise ArgumentError(
                            f"cannot assign a {type(value).__name__} to {kind} {name!r}: "
                            f"give a {wanted} (or None)"
                        )
                    hook_kind = {"submodule": "module", "buffer": "buffer"}.get(kind)
                    if hook_kind is not None and registration_hooks[hook_kind]:
                        # As PyTorch's: assigning to a buffer or submodule registers it anew.
                        value = registered(hook_kind, self, name, value)
                    registry[name] = value
                    return
        object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: parameters, buffers and submodules live here.
        for registry in ("_parameters", "_buffers", "_modules"):
            values = self.__dict__.get(registry)
            if values is not None and name in values:
                return values[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry:
                del registry[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        # Names that are no attribute names ("0" of a Sequential) left out, as PyTorch's.
        members = (*self._parameters, *self._buffers, *self._modules)
        return sorted({*super().__dir__(), *(name for name in members if not name[:1].isdigit())})

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a ``None`` placeholder, e.g. a disabled bias) under ``name``.

        Examples
        --------
        >>> import plugrad
        >>> m = plugrad.nn.Module()
        >>> m.register_parameter("scale", plugrad.nn.Parameter(plugrad.ones(1)))
        >>> [name for name, _ in m.named_parameters()]
        ['scale']
        """
        self._register(
            "parameter",
            name,
            param,
            Parameter,
            "cannot register a {got} as parameter {name!r}; wrap it: plugrad.nn.Parameter(tensor)",
        )

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: a tensor that belongs to the module's state but is not learned.

        Buffers move with :meth:`to` and, if ``persistent``, are part of the
        :meth:`state_dict`.

        Examples
        --------
        >>> import plugrad
        >>> m = plugrad.nn.Module()
        >>> m.register_buffer("steps", plugrad.zeros(()))
        >>> list(m.state_dict())
        ['steps']
        """
        self._register(
            "buffer",
            name,
            tensor,
            Tensor,
            "buffer {name!r} must be a Tensor or None, got {got}",
        )
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a submodule under ``name`` (what assigning ``self.name = module`` does)."""
        self._register(
            "module",
            name,
            module,
            Module,
            "{got} is not a Module; cannot add it as {name!r}",
        )

    register_module = add_module

    # -- walking the tree -----------------------------------------------------------------

    def named_modules(
        self, memo: set[Module] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """Yield ``(name, module)`` for this module (name ``prefix``) and every descendant.

        A module reachable in several places is yielded once unless
        ``remove_duplicate`` is false; the modules in ``memo`` (a set, filled as
        the walk goes) are left out, as in PyTorch.
        """
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                child = f"{prefix}.{name}" if prefix else name
                yield from module.named_modules(memo, child, remove_duplicate)

    def get_submodule(self, target: str) -> Module:
        """Return the submodule at the dotted path ``target`` (``""``: this module).

        Examples
        --------
        >>> import plugrad
        >>> net = plugrad.nn.Sequential(plugrad.nn.Sequential(plugrad.nn.Linear(2, 2)))
        >>> net.get_submodule("0.0")
        Linear(in_features=2, out_features=2, bias=True)
        """
        if not isinstance(target, str):
            raise ArgumentError(f"get_submodule() takes a dotted path (a str), got {target!r}")
        module: Module = self
        walked = type(self).__name__
        for name in target.split(".") if target else ():
            child = module._modules.get(name) if name in module._modules else None
            if child is None:
                raise AttributeError(
                    f"{walked} has no submodule {name!r} (its submodules: "
                    f"{', '.join(repr(n) for n in module._modules) or 'none'})"
                )
            module, walked = child, f"{walked}.{name}"
        return module

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put ``module`` at the dotted path ``target`` (``"0.conv"``), replacing what is there.

        The parent path must exist. With ``strict``, the last name must already be a
        submodule; without, it may be new (PyTorch's ``set_submodule``).

        Examples
        --------
        >>> import plugrad
        >>> net = plugrad.nn.Sequential(plugrad.nn.Linear(2, 2), plugrad.nn.ReLU())
        >>> net.set_submodule("1", plugrad.nn.Tanh())
        >>> net[1]
        Tanh()
        """
        if not isinstance(target, str) or not target:
            raise InvalidArgumentError(
                f"set_submodule() takes a non-empty dotted path, got {target!r}"
            )
        if not isinstance(module, Module):
            raise ArgumentError(f"set_submodule() puts a Module, got {type(module).__name__}")
        path, _, name = target.rpartition(".")
        parent = self.get_submodule(path)
        if strict and name not in parent._modules:
            raise AttributeError(
                f"{type(parent).__name__} at {path or 'the top'!r} has no submodule {name!r} to "
                "replace (strict=True); give strict=False to add it"
            )
        if name in parent._modules or not hasattr(parent, name):
            parent.add_module(name, module)
        else:
            raise AttributeError(
                f"{type(parent).__name__} at {path or 'the top'!r} has an attribute {name!r} "
                "that is not a submodule; set_submodule() does not replace it"
            )

    def _get_member(self, target: str, registry: str, what: str) -> Any:
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        members = getattr(module, registry)
        if name not in members:
            raise AttributeError(
                f"{type(module).__name__} at {path or 'the top'!r} has no {what} {name!r} (its "
                f"{what}s: {', '.join(repr(n) for n in members) or 'none'})"
            )
        if members[name] is None and what == "parameter":  # PyTorch's: a buffer may be None
            raise AttributeError(
                f"the parameter {name!r} of {type(module).__name__} at {path or 'the top'!r} is "
                "registered but holds None"
            )
        return members[name]

    def get_parameter(self, target: str) -> Parameter:
        """Return the parameter at the dotted path ``target`` (``"0.weight"``)."""
        return cast(Parameter, self._get_member(target, "_parameters", "parameter"))

    def get_buffer(self, target: str) -> Tensor | None:
        """Return the buffer at the dotted path ``target`` (``"bn.running_mean"``); ``None``
        for one registered as None, as PyTorch's."""
        return cast("Tensor | None", self._get_member(target, "_buffers", "buffer"))

    def modules(self) -> Iterator[Module]:
        """Yield this module and every descendant, each once."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Yield ``(name, module)`` for the direct submodules, each once."""
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        """Yield the direct submodules, each once."""
        for _, module in self.named_children():
            yield module

    def _named_members(
        self, registry: str, prefix: str, recurse: bool, remove_duplicate: bool
    ) -> Iterator[tuple[str, Any]]:
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        seen: set[int] = set()
        for module_prefix, module in modules:
            for name, value in getattr(module, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """Yield ``(dotted name, parameter)``; a parameter shared by several modules once.

        Examples
        --------
        >>> import plugrad
        >>> net = plugrad.nn.Sequential(plugrad.nn.Linear(2, 2), plugrad.nn.ReLU())
        >>> [(name, p.shape) for name, p in net.named_parameters()]
        [('0.weight', (2, 2)), ('0.bias', (2,))]
        """
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Yield every parameter (of submodules too, unless ``recurse`` is false), each once."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """Yield ``(dotted name, buffer)``, each buffer once."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Yield every buffer, each once."""
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def apply(self: ModuleT, fn: Callable[[Module], Any]) -> ModuleT:
        """Call ``fn`` on every submodule (children first), then on this module; return it.

        Examples
        --------
        >>> import plugrad
        >>> net = plugrad.nn.Sequential(plugrad.nn.Linear(2, 2), plugrad.nn.ReLU())
        >>> names = []
        >>> _ = net.apply(lambda m: names.append(type(m).__name__))
        >>> names
        ['Linear', 'ReLU', 'Sequential']
        """
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- modes and gradients --------------------------------------------------------------

    def train(self: ModuleT, mode: bool = True) -> ModuleT:
        """Set training mode (``mode=True``) or evaluation mode on every module; return self.

        Only layers that behave differently look at it (:class:`~plugrad.nn.Dropout`).
        Each child's own ``train`` is called, as in PyTorch, so a module that
        overrides it (to keep its batch norms frozen, say) has the last word.
        """
        if not isinstance(mode, bool):
            raise ArgumentError(f"train() takes a bool, got {type(mode).__name__}")
        object.__setattr__(self, "training", mode)
        for child in self.children():
            child.train(mode)
        return self

    def eval(self: ModuleT) -> ModuleT:
        """Set evaluation mode (``train(False)``); return self."""
        return self.train(False)

    def requires_grad_(self: ModuleT, requires_grad: bool = True) -> ModuleT:
        """Set ``requires_grad`` on every parameter (e.g. ``False`` to freeze); return self."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradient of every parameter: to ``None`` (default) or to zeros in place."""
        zero_grads(self.parameters(), set_to_none)

    # -- moving ---------------------------------------------------------------------------

    def to(
        self: ModuleT,
        device: Device | Backend | str | _dtypes.DType | Tensor | None = None,
        dtype: _dtypes.DType | None = None,
        non_blocking: bool = False,
        *,
        backend: str | None = None,
        memory_format: memory_format | None = None,
    ) -> ModuleT:
        """Move every parameter and buffer to ``device`` and/or cast floating ones to ``dtype``.

        The parameters are changed in place (see :attr:`plugrad.Tensor.data`):
        they stay the same objects, so an optimizer made before ``to()`` keeps
        working. Their gradients move too. Buffers are replaced by converted copies,
        as PyTorch's: a tensor given to ``register_buffer`` is left as it was.
        ``to(plugrad.float64)`` casts only. Nothing changes if any tensor cannot be
        converted.

        Parameters
        ----------
        device : str, Device, plugrad dtype or Tensor, optional
            A backend name (``"numpy"``, ``"torch"``), a device (``"cupy:1"``), a
            dtype, or a tensor whose device and dtype to take.
        dtype : plugrad dtype, optional
            A floating-point or complex dtype for the floating-point and complex tensors
            (real ones become complex with imaginary parts 0; a complex one is not made
            real, which would drop its imaginary parts).
        non_blocking : bool, default False
            PyTorch's option; transfers here complete before ``to()`` returns.
        backend : str, optional
            A backend name, for its current device.
        memory_format : plugrad memory format, optional
            PyTorch's layout hint (e.g. ``plugrad.channels_last``), accepted;
            layouts are the backend's (:mod:`plugrad.memory_formats`).

        Examples
        --------
        >>> import plugrad
        >>> layer = plugrad.nn.Linear(2, 2)
        >>> weight = layer.weight
        >>> layer.to(plugrad.float64) is layer
        True
        >>> layer.weight is weight, weight.dtype
        (True, plugrad.float64)
        """
        check_memory_format("Module.to", memory_format)
        # Python's types stand for dtypes (to(float) is float64), as in Tensor.to
        device, dtype = _dtypes.of_python_type(device), _dtypes.of_python_type(dtype)
        if isinstance(device, Tensor):  # PyTorch's to(other): other's device and dtype
            if dtype is not None:
                raise ArgumentError("to(tensor) takes the tensor's dtype; give no dtype beside it")
            other = device
            device, dtype = other.device, other.dtype
        if isinstance(device, _dtypes.DType):
            if dtype is not None:
                raise ArgumentError(
                    "to() got two dtypes; give a device and a dtype, or one of them"
                )
            device, dtype = None, device
        if dtype is not None and (
            not isinstance(dtype, _dtypes.DType) or not _dtypes.is_differentiable(dtype)
        ):
            raise DtypeError(
                f"Module.to() casts to floating-point or complex dtypes only, got {dtype!r}"
            )
        target = None if device is None and backend is None else target_device(device, backend)

        def convert(tensor: Tensor) -> Tensor:
            moved = tensor.detach() if target is None else tensor.detach().to(target)
            if dtype is not None and tensor.dtype.kind in ("real floating", "complex floating"):
                if tensor.dtype.kind == "complex floating" and dtype.kind != "complex floating":
                    raise DtypeError(
                        f"Module.to({dtype.name}) would drop the imaginary parts of a complex "
                        f"{tensor.dtype.name} parameter or buffer; take .real of it first"
                    )
                moved = asarray(moved, dtype=dtype)  # real into complex: imaginary parts 0
            return moved

        return self._converted(convert)

    def _converted(self: ModuleT, convert: Callable[[Tensor], Tensor]) -> ModuleT:
        """Every parameter (and gradient) as ``convert`` makes it, in place, and every buffer
        replaced by its converted copy, as PyTorch's: a tensor registered as a buffer is the
        caller's and stays as it was. Everything is converted first, so that a failure
        changes nothing."""
        parameters = list(self.parameters())
        parameter_ids = {id(parameter) for parameter in parameters}
        buffers = [buffer for buffer in self.buffers() if id(buffer) not in parameter_ids]
        # A lazy layer's tensors with no values yet take the dtype and device they will have,
        # as PyTorch's (LazyLinear(3).double()): what convert makes of an empty one.
        lazy = []
        for tensor in [t for t in (*parameters, *buffers) if _is_uninitialized(t)]:
            sample = convert(empty((0,), dtype=tensor.dtype, device=tensor.device))
            if tensor.requires_grad and sample.dtype.kind not in _GRADIENT_KINDS:
                raise DtypeError(
                    f"cannot convert {type(self).__name__}'s tensors to {sample.dtype}: a tensor "
                    "that requires grad must be floating-point or complex; nothing was converted"
                )
            lazy.append((tensor, sample))
        lazy_ids = {id(tensor) for tensor, _ in lazy}
        parameters = [t for t in parameters if id(t) not in lazy_ids]
        buffers = [t for t in buffers if id(t) not in lazy_ids]
        plan = []
        for tensor in parameters:
            grad = tensor.grad
            values = convert(tensor)
            if tensor.requires_grad and values.dtype.kind not in _GRADIENT_KINDS:
                raise DtypeError(
                    f"cannot convert {type(self).__name__}'s tensors to {values.dtype}: a tensor "
                    "that requires grad must be floating-point or complex; nothing was converted"
                )
            plan.append((tensor, values, None if grad is None else convert(grad)))
        replacements = {}
        for buffer in buffers:
            values = convert(buffer)
            if values._array is not buffer._array:  # already there: the same tensor stays
                replacements[id(buffer)] = values.requires_grad_(buffer.requires_grad)
        for tensor, values, grad in plan:
            if values._array is tensor._array:
                continue  # already there: leave it (and its version) alone
            tensor.grad = None
            tensor.data = values
            tensor.grad = grad
        for tensor, sample in lazy:
            vars(tensor)["_dtype_to_be"] = sample.dtype
            tensor._device = sample._device
        for module in self.modules():
            table = module._buffers
            for name, held in table.items():
                if held is not None and id(held) in replacements:
                    table[name] = replacements[id(held)]
        return self

    def _real_floating_to(self: ModuleT, dtype: _dtypes.DType) -> ModuleT:
        """The real floating-point tensors cast to ``dtype``; others (complex, integer) kept,
        as PyTorch's ``half()``, ``float()`` and ``double()``."""

        def convert(tensor: Tensor) -> Tensor:
            if tensor.dtype.kind != "real floating":
                return tensor.detach()
            return asarray(tensor.detach(), dtype=dtype)

        return self._converted(convert)

    def cpu(self: ModuleT) -> ModuleT:
        """Move every parameter and buffer to the CPU (``to("cpu")``, the NumPy backend).

        Examples
        --------
        >>> import plugrad
        >>> plugrad.nn.Linear(2, 1).cpu().weight.device.type
        'cpu'
        """
        return self.to("cpu")

    def cuda(self: ModuleT, device: int | str | Device | None = None) -> ModuleT:
        """Move every parameter and buffer to a GPU (``"cuda"``, or ``"cuda:N"`` for ``N``).

        Raises :class:`~plugrad.errors.BackendUnavailableError`, changing nothing, where
        no GPU backend can run (check :func:`plugrad.cuda.is_available` first).
        """
        if isinstance(device, int) and not isinstance(device, bool):
            return self.to(f"cuda:{device}")
        if isinstance(device, bool):
            raise ArgumentError(f"cuda() takes a device index or name, got {device!r}")
        return self.to("cuda" if device is None else device)

    def _apply(self: ModuleT, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> ModuleT:
        """Replace every parameter's values (and gradient's) by ``fn`` of them, and every
        buffer by ``fn`` of it; return self (PyTorch's helper of ``to`` and the like).

        As PyTorch's: the submodules' own ``_apply`` first (unless ``recurse`` is
        false), ``fn`` called without recording a graph, and each parameter and its
        gradient stay the same objects (their data replaced), so an optimizer made
        before keeps working; buffers are replaced by ``fn``'s results.

        Examples
        --------
        >>> import plugrad
        >>> layer = plugrad.nn.Linear(2, 1)
        >>> weight = layer.weight
        >>> _ = layer._apply(lambda t: t * 0 + 1)
        >>> layer.weight is weight, layer.weight.tolist()
        (True, [[1.0, 1.0]])
        """
        if not callable(fn):
            raise ArgumentError(f"_apply() takes a function of a tensor, got {type(fn).__name__}")
        if recurse:
            for module in self.children():
                module._apply(fn)

        def applied(tensor: Tensor, what: str) -> Tensor:
            with no_grad():
                result = fn(tensor)
            if not isinstance(result, Tensor):
                raise ArgumentError(
                    f"_apply(): the function returned a {type(result).__name__} for {what} of "
                    f"{type(self).__name__}; it must return a Tensor"
                )
            return result

        for name, param in self._parameters.items():
            if param is None:
                continue
            grad = param.grad
            values = applied(param, f"parameter {name!r}")
            new_grad = None if grad is None else applied(grad, f"the gradient of {name!r}")
            param.grad = None  # (the old gradient may not fit the new values)
            try:
                param.data = values.detach()
            except Exception:
                param.grad = grad  # (refused, an integer dtype for one that requires grad)
                raise
            if grad is not None and new_grad is not None:
                grad.data = new_grad.detach()  # the same gradient object, as PyTorch's
                param.grad = grad
        for name, buffer in self._buffers.items():
            if buffer is not None:
                self._buffers[name] = applied(buffer, f"buffer {name!r}")
        return self

    def to_empty(self: ModuleT, *, device: Device | str | None, recurse: bool = True) -> ModuleT:
        """Replace every parameter and buffer by an uninitialised tensor of its shape and
        dtype on ``device`` (``None``: where it is), as PyTorch's; return self.

        The parameters stay the same objects; their values are undefined until
        initialised (``reset_parameters()`` or :meth:`load_state_dict`).

        Examples
        --------
        >>> import plugrad
        >>> layer = plugrad.nn.Linear(3, 2).to_empty(device="cpu")
        >>> layer.weight.shape, layer.weight.device.type
        ((2, 3), 'cpu')
        """
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def share_memory(self: ModuleT) -> ModuleT:
        """PyTorch's move of the tensors into shared memory, for worker processes; plugrad
        cannot (see the error)."""
        raise NotSupportedError(
            f"{type(self).__name__}.share_memory(): plugrad's tensors live in the backend's "
            "own arrays (NumPy's on the CPU), which cannot be moved into memory shared "
            "between processes; send the state_dict() to the other processes instead (or "
            "plugrad.save it and plugrad.load it there)"
        )

    # -- saving and loading ---------------------------------------------------------------

    def double(self: ModuleT) -> ModuleT:
        """Cast the real floating-point parameters and buffers to ``float64`` (complex ones are
        kept, as PyTorch's).

        Examples
        --------
        >>> import plugrad
        >>> plugrad.nn.Linear(2, 1).double().weight.dtype
        plugrad.float64
        """
        return self._real_floating_to(_dtypes.float64)

    def float(self: ModuleT) -> ModuleT:
        """Cast the real floating-point parameters and buffers to ``float32`` (complex ones
        are kept, as PyTorch's)."""
        return self._real_floating_to(_dtypes.float32)

    def half(self: ModuleT) -> ModuleT:
        """Cast the real floating-point parameters and buffers to ``float16``."""
        return self._real_floating_to(_dtypes.float16)

    def bfloat16(self: ModuleT) -> ModuleT:
        """Cast the real floating-point parameters and buffers to ``bfloat16`` (stored by
        the torch and JAX backends; on others a :class:`~plugrad.errors.DtypeError`)."""
        return self._real_floating_to(_dtypes.bfloat16)

    def type(self: ModuleT, dst_type: Any) -> ModuleT:
        """Cast every parameter and buffer, of any dtype, to ``dst_type`` (a dtype or a
        legacy tensor type such as ``plugrad.DoubleTensor``), as PyTorch's.

        Examples
        --------
        >>> import plugrad
        >>> plugrad.nn.BatchNorm1d(2).type(plugrad.float64).num_batches_tracked.dtype
        plugrad.float64
        """
        if dst_type is None:
            raise ArgumentError("Module.type() takes a dtype or a tensor type, got None")

        def convert(tensor: Tensor) -> Tensor:
            converted = tensor.detach().type(dst_type)
            assert isinstance(converted, Tensor)  # (a name only without a dtype)
            return converted

        return self._converted(convert)

    def state_dict(
        self, *, destination: Any = None, prefix: str = "", keep_vars: bool = False
    ) -> dict[str, Any]:
        """Return the parameters and persistent buffers by dotted name, as PyTorch's.

        The values share memory with the module (detached, unless
        ``keep_vars``); copy them to keep a snapshot. A module that defines
        :meth:`get_extra_state` adds its ``"_extra_state"`` entry. ``prefix`` is
        put before every key (``"encoder."``); ``destination`` is a dict to fill.
        The dict's ``_metadata`` holds each module's ``version``, as PyTorch's.

        Examples
        --------
        >>> import plugrad
        >>> net = plugrad.nn.Sequential(plugrad.nn.Linear(3, 2))
        >>> {name: value.shape for name, value in net.state_dict().items()}
        {'0.weight': (2, 3), '0.bias': (2,)}
        """
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": getattr(self, "_version", 1)}
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:
            metadata[prefix[:-1]] = local_metadata
        for hook in self._state_hooks_of("state_dict_pre"):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        # A module registered under two names has its entries under both, as in PyTorch.
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars
                )
        for hook in self._state_hooks_of("state_dict_post"):
            result = hook(self, destination, prefix, local_metadata)
            if result is not None and isinstance(hook, _ReturningStateDictHook):
                destination = result  # (the private API's: what the caller gets, at the top)
            elif result is not None:
                raise ArgumentError(
                    f"a state_dict post-hook of {type(self).__name__} returned a value; it may "
                    "change the state dict in place, and must return None"
                )
        return cast("dict[str, Any]", destination)

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        """Put this module's own entries (not its submodules') into ``destination``."""
        for name, value in self._parameters.items():
            if value is not None:
                destination[prefix + name] = value if keep_vars else value.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def _load_from_state_dict(
        self,
        state_dict: Mapping[str, Any],
        prefix: str,
        local_metadata: dict[str, Any],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        """Check this module's own entries of ``state_dict`` (keys starting with ``prefix``)
        and note their loading; PyTorch's protocol, which a layer overrides to read the
        keys of an older version (``local_metadata["version"]``) before calling this.

        Missing and unexpected keys and problems are added to the lists, and the
        values copied in (put back by :meth:`load_state_dict` if the load fails).
        """
        assign = bool(local_metadata.get("assign_to_params_buffers", False))
        own: dict[str, Tensor] = {
            name: value for name, value in self._parameters.items() if value is not None
        }
        own.update(
            (name, buffer)
            for name, buffer in self._buffers.items()
            if buffer is not None and name not in self._non_persistent_buffers
        )
        for name, tensor in own.items():
            key = prefix + name
            if key not in state_dict:
                if strict and not (name in self._optional_state and _older(local_metadata, self)):
                    missing_keys.append(key)
                continue
            values = read_entry(key, state_dict[key], tensor, assign, error_msgs)
            if values is not None:
                note_change(self, name, tensor, values, assign)
        extra = prefix + "_extra_state"
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra in state_dict:
                note_extra_state(self, state_dict[extra])
            elif strict:
                missing_keys.append(extra)
        elif strict and extra in state_dict:
            unexpected_keys.append(extra)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra:
                    # A dotted name is a submodule's; a plain one, this module's own tensor.
                    first, dot, _ = key[len(prefix) :].partition(".")
                    if first not in (self._modules if dot else own):
                        unexpected_keys.append(key)

    def get_extra_state(self) -> Any:
        """State beyond parameters and buffers that :meth:`state_dict` saves; a module
        that has some defines it (and :meth:`set_extra_state`), as in PyTorch."""
        raise NotImplementedError(
            f"{type(self).__name__}.get_extra_state() is not defined; a module with extra "
            "state defines get_extra_state() and set_extra_state()"
        )

    def set_extra_state(self, state: Any) -> None:
        """Restore what :meth:`get_extra_state` returned, when a state dict is loaded."""
        raise NotImplementedError(
            f"{type(self).__name__} saved extra state but defines no set_extra_state(state) "
            "to restore it"
        )

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> IncompatibleKeys:
        """Copy values from ``state_dict`` into the parameters and buffers, in place.

        Every value must have its tensor's shape, and its dtype or one that
        casts to it: another floating-point dtype for a floating-point tensor,
        a real or complex floating-point dtype for a complex tensor, or any
        dtype whose values the cast keeps (integer weights into a float layer,
        a count saved as ``5.0``); any other cast that would round, wrap or
        drop an imaginary part is refused (Tensors, or arrays that
        :func:`plugrad.asarray` accepts, e.g. loaded with ``numpy.load``);
        values are copied into each tensor's memory, on its device, as in
        PyTorch (a view of a parameter sees them). With ``assign``, the state
        dict's tensors become the module's instead, with their dtypes and
        devices (parameters keep ``requires_grad``). With ``strict``, the keys
        must be exactly those of :meth:`state_dict`.

        Each module reads its entries with :meth:`_load_from_state_dict`, between
        the hooks of :meth:`register_load_state_dict_pre_hook` and
        :meth:`register_load_state_dict_post_hook`, as in PyTorch, and its values
        are copied in as it reads them (code after the base method and the
        post-hooks see them). Unlike PyTorch's, a load is all or nothing: if
        anything does not fit (or a hook or ``set_extra_state`` raises), every
        value copied is put back, with its version (a graph made before the load
        still runs its backward), and :class:`~plugrad.errors.StateDictError`
        lists every problem. Until the load ends it keeps what each copy
        replaced (``assign=True`` copies nothing); the load, hooks included,
        records no graph (as under :func:`plugrad.no_grad`).

        Returns
        -------
        IncompatibleKeys
            ``(missing_keys, unexpected_keys)`` (both empty when ``strict``).

        Examples
        --------
        >>> import plugrad
        >>> a, b = plugrad.nn.Linear(2, 2), plugrad.nn.Linear(2, 2)
        >>> b.load_state_dict(a.state_dict())
        <All keys matched successfully>
        >>> bool(plugrad.all(a.weight == b.weight))
        True
        >>> b.load_state_dict({"weight": plugrad.zeros((3, 2))})
        Traceback (most recent call last):
        ...
        plugrad.errors.StateDictError: cannot load into Linear, which is left unchanged:
          missing key 'bias'
          'weight': shape (3, 2) in the state dict, (2, 2) in the module
        """
        return _load_state_dict(self, state_dict, bool(strict), bool(assign))

    # -- state dict hooks -----------------------------------------------------------------

    def _state_hooks_of(self, kind: str) -> list[Callable[..., Any]]:
        hooks = self._state_dict_hooks
        return [] if hooks is None else list(hooks.get(kind, ()))

    def _add_state_hook(self, kind: str, hook: Callable[..., Any]) -> RemovableHandle:
        if not callable(hook):
            raise ArgumentError(f"a state dict hook must be callable, got {type(hook).__name__}")
        hooks = self._state_dict_hooks
        if hooks is None:
            hooks = {}
            object.__setattr__(self, "_state_dict_hooks", hooks)
        entries = hooks.setdefault(kind, [])
        entries.append(hook)
        return RemovableHandle(entries, hook)

    def register_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(module, prefix, keep_vars)`` before :meth:`state_dict` saves this
        module's entries. Returns a handle whose ``remove()`` unregisters it."""
        return self._add_state_hook("state_dict_pre", hook)

    def register_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(module, state_dict, prefix, local_metadata)`` once this module's
        entries (and its submodules') are in ``state_dict``; it may change them in place."""
        return self._add_state_hook("state_dict_post", hook)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module reads its entries; it may change
        ``state_dict`` (rename the keys of an older checkpoint). As in PyTorch, a submodule's
        hook gets the entries under its ``prefix`` only, as its parent's hooks left them."""
        return self._add_state_hook("load_state_dict_pre", hook)

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Call ``hook(module, incompatible_keys)`` once this module and its submodules
        have read their entries; it may change the keys' lists in place (drop a missing
        key it accepts). It runs once the values are copied in, so it sees the loaded
        values, as PyTorch's (they are put back if the load fails)."""
        return self._add_state_hook("load_state_dict_post", hook)

    def _register_state_dict_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """PyTorch's private form of :meth:`register_state_dict_post_hook`, which libraries
        call: ``hook(module, state_dict, prefix, local_metadata)`` may also return a new
        dict, which the top-level :meth:`state_dict` then returns instead (as PyTorch's)."""
        return self._add_state_hook("state_dict_post", _ReturningStateDictHook(hook))

    def _register_load_state_dict_pre_hook(
        self, hook: Callable[..., Any], with_module: bool = False
    ) -> RemovableHandle:
        """PyTorch's private form of :meth:`register_load_state_dict_pre_hook`, which
        libraries call: the hook gets ``(state_dict, prefix, local_metadata, strict,
        missing_keys, unexpected_keys, error_msgs)``, with the module first if
        ``with_module``."""
        if not callable(hook):
            raise ArgumentError(f"a state dict hook must be callable, got {type(hook).__name__}")
        return self._add_state_hook("load_state_dict_pre", _PrivateLoadPreHook(hook, with_module))

    # -- printing -------------------------------------------------------------------------

    def _get_name(self) -> str:
        """The name ``repr`` gives the module: its class's (PyTorch's helper)."""
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text inside the parentheses of ``repr(module)``; layers override it."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        children = [
            f"({name}): " + repr(module).replace("\n", "\n  ")
            for name, module in self._modules.items()
        ]
        if not children:
            if "\n" not in extra:
                return f"{type(self).__name__}({extra})"
            return f"{type(self).__name__}(\n  " + extra.replace("\n", "\n  ") + "\n)"
        lines = (extra.split("\n") if extra else []) + children  # each line indented
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"


# -- global module hooks (PyTorch's torch.nn.modules.module.register_module_*) -----------


def _global(kind: str, hook: Any, **options: Any) -> RemovableHandle:
    global _hooks_registered
    handle = global_hooks.add(kind, hook, **options)
    _hooks_registered = True
    note_hook_registered()  # (a compiled plan then checks for hooks again)
    return handle


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, args)`` before the ``forward`` of every module, before the
    module's own forward pre-hooks; it may return new arguments (PyTorch's global hook).

    Returns a handle whose ``remove()`` unregisters it. Like a module's hooks, it
    makes :func:`plugrad.compile` run the modules' calls eagerly while it is there.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.modules.module import register_module_forward_pre_hook
    >>> seen = []
    >>> handle = register_module_forward_pre_hook(lambda m, args: seen.append(type(m).__name__))
    >>> _ = plugrad.nn.Sequential(plugrad.nn.ReLU())(plugrad.ones(2))
    >>> handle.remove()
    >>> seen
    ['Sequential', 'ReLU']
    """
    return _global("forward_pre", hook)


def register_module_forward_hook(
    hook: Callable[..., Any], *, with_kwargs: bool = False, always_call: bool = False
) -> RemovableHandle:
    """Call ``hook(module, args, output)`` after the ``forward`` of every module, before the
    module's own forward hooks; it may return a new output (PyTorch's global hook).

    ``with_kwargs`` and ``always_call`` are those of
    :meth:`Module.register_forward_hook`. Returns a handle whose ``remove()``
    unregisters it.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.modules.module import register_module_forward_hook
    >>> with register_module_forward_hook(lambda m, args, out: out * 2):
    ...     plugrad.nn.Identity()(plugrad.ones(2))
    tensor([2., 2.])
    """
    return _global("forward", hook, with_kwargs=with_kwargs, always_call=always_call)


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, grad_output)`` during backward for every module's call, before
    the module's own backward pre-hooks (see
    :meth:`Module.register_full_backward_pre_hook`). Returns a removable handle.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.modules.module import register_module_full_backward_pre_hook
    >>> x = plugrad.ones(2, requires_grad=True)
    >>> with register_module_full_backward_pre_hook(lambda m, g: (g[0] * 3,)):
    ...     plugrad.nn.Identity()(x).sum().backward()
    >>> x.grad
    tensor([3., 3.])
    """
    return _global("backward_pre", hook)


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, grad_input, grad_output)`` during backward for every module's
    call, before the module's own full backward hooks (see
    :meth:`Module.register_full_backward_hook`). Returns a removable handle.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.modules.module import register_module_full_backward_hook
    >>> seen = []
    >>> x = plugrad.ones(2, requires_grad=True)
    >>> with register_module_full_backward_hook(lambda m, gi, go: seen.append(gi[0].shape)):
    ...     plugrad.nn.Tanh()(x).sum().backward()
    >>> seen
    [(2,)]
    """
    return _global("backward", hook)


def register_module_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """PyTorch's deprecated global non-full backward hook: :meth:`Module.register_backward_hook`
    for every module, before its own. Use :func:`register_module_full_backward_hook`."""
    return _global("backward_legacy", hook)


def _registration(kind: str, hook: Any) -> RemovableHandle:
    global _hooks_registered
    handle = add_registration_hook(kind, hook)
    _hooks_registered = True
    return handle


def register_module_buffer_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, name, buffer)`` whenever any module registers a buffer (also by
    assigning to one); it may return a tensor to register instead (PyTorch's global hook).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.modules.module import register_module_buffer_registration_hook
    >>> module = plugrad.nn.Module()
    >>> with register_module_buffer_registration_hook(lambda m, name, b: b * 2):
    ...     module.register_buffer("scale", plugrad.ones(2))
    >>> module.scale
    tensor([2., 2.])
    """
    return _registration("buffer", hook)


def register_module_module_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, name, submodule)`` whenever any module registers a submodule;
    it may return a module to register instead (PyTorch's global hook).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.modules.module import register_module_module_registration_hook
    >>> names = []
    >>> with register_module_module_registration_hook(lambda m, name, sub: names.append(name)):
    ...     _ = plugrad.nn.Sequential(plugrad.nn.ReLU(), plugrad.nn.Tanh())
    >>> names
    ['0', '1']
    """
    return _registration("module", hook)


def register_module_parameter_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, name, parameter)`` whenever any module registers a parameter
    (not ``None``); it may return a parameter to register instead (PyTorch's global hook).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.modules.module import register_module_parameter_registration_hook
    >>> names = []
    >>> with register_module_parameter_registration_hook(lambda m, n, p: names.append(n)):
    ...     _ = plugrad.nn.Linear(2, 2)
    >>> names
    ['weight', 'bias']
    """
    return _registration("parameter", hook)


class ParameterPlacement(TypedDict, total=False):
    """The keyword arguments that place a layer's parameters (``Linear``, ``Conv2d``, ...).

    ``device`` (a Device or its name), ``dtype`` (float32 by default) and
    ``backend`` (a backend name: its current device), as for :func:`plugrad.empty`.
    """

    device: Device | str | None
    dtype: _dtypes.DType | None
    backend: str | None


with_placement = spell_out(ParameterPlacement)


def check_placement(module: Module, placement: Mapping[str, Any]) -> None:
    """Refuse a keyword argument of a layer's constructor that is not one of
    :class:`ParameterPlacement`'s (a misspelt ``device=``, say)."""
    for name in placement:
        if name not in ParameterPlacement.__annotations__:
            raise ArgumentError(
                f"{type(module).__name__}() got an unexpected keyword argument {name!r}; "
                "its parameters are placed with device=, dtype= and backend="
            )


def add_weight_and_bias(
    module: Module,
    weight_shape: tuple[int, ...] | None,
    bias_shape: tuple[int, ...] | None,
    **placement: Unpack[ParameterPlacement],
) -> None:
    """Give ``module`` a ``weight`` and a ``bias`` (a shape of ``None``: that one is
    ``None``), not yet initialised, where and with the dtype a layer's constructor was given."""
    check_placement(module, placement)
    for name, shape in (("weight", weight_shape), ("bias", bias_shape)):
        if shape is None:
            module.register_parameter(name, None)
        else:
            setattr(module, name, Parameter(empty(shape, **placement)))


def _is_uninitialized(tensor: Tensor) -> bool:
    """Whether ``tensor`` is a lazy layer's parameter or buffer with no values yet (those of
    :mod:`plugrad.nn.lazy`, which imports this module: known by what they hold)."""
    return "_dtype_to_be" in getattr(tensor, "__dict__", ())
