"""Turns what plugins declare into the frozen tables the per-op path reads.

Loading asks every plugin's hooks once, validates each answer, and builds:

- the backends by name (activated lazily: namespace import, dtype maps and
  devices on first use);
- the ops by name, each frozen (its node type and rule tables derived);
- the kernels other plugins declared for existing ops, by (op, backend), best first;
- for every active backend, one kernel table (op name -> kernel), shared by
  its :class:`~plugrad.backend.Device` objects;
- one public function per op, in ``plugrad.ops`` (and, for built-in ops, in
  ``plugrad`` itself), generated with the kernel's exact signature, and the
  Tensor methods ops asked for.

A plugin is accepted or rejected whole. Rebuilding replaces tables wholesale;
nothing on the per-op path is mutated.
"""

from __future__ import annotations

import contextvars
import functools
import importlib.metadata
import inspect
import os
import sys
import types
import warnings
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import pluggy

from . import checking as _checking
from . import dtypes as _dtypes
from . import graph as _graph
from . import ops as _ops_module
from .backend import Backend, Device
from .dispatch import apply1, apply1_float, apply2, apply2_float, apply_general, apply_n, apply_view
from .errors import (
    ArgumentError,
    BackendError,
    BackendUnavailableError,
    PluginLoadWarning,
    PluginRegistrationError,
    UnknownBackendError,
)
from .grad_mode import no_grad
from .inplace import apply_inplace, check_out, write_out
from .kerneldef import KernelDef, KernelSource, describe_plugin
from .opdef import NamespaceKernel, OpDef, RegisteredOp, _adapt_kernel, register_op
from .plugin_manager import builtin_plugin_names, create_plugin_manager
from .tensor import Tensor

__all__ = [
    "backend_names",
    "backend_owner",
    "backend_status",
    "default_device",
    "device_of_array",
    "devices_of",
    "find_op",
    "get_backend",
    "load",
    "op_names",
    "register_plugin",
    "resolve_device",
    "scoped_default_device",
    "set_default_device",
    "unregister_plugin",
]

DEFAULT_BACKEND = "numpy"
_HOOKS = (
    "plugrad_backends",
    "plugrad_ops",
    "plugrad_kernels",
    "plugrad_communicators",
    "plugrad_plan_passes",
)


class _State:
    """Everything loaded from plugins; replaced piecewise by a rebuild."""

    def __init__(self) -> None:
        self.manager: pluggy.PluginManager | None = None
        self.failures: dict[str, str] = {}
        #: plugin name -> (distribution, version), where known.
        self.distributions: dict[str, tuple[str, str | None]] = {}
        self.backends: dict[str, Backend] = {}
        self.backend_owners: dict[str, str] = {}
        self.ops: dict[str, RegisteredOp] = {}
        self.op_owners: dict[str, str] = {}
        #: (op, backend) -> kernels from plugrad_kernels hooks, best first.
        self.overrides: dict[tuple[str, str], tuple[KernelSource, ...]] = {}
        self.devices: dict[str, tuple[Device, ...]] = {}
        self.array_types: dict[str, tuple[type, ...]] = {}
        #: backend -> op -> every kernel that could serve it, best (the one used) first.
        self.kernel_sources: dict[str, dict[str, tuple[KernelSource, ...]]] = {}
        self.functions: dict[str, Callable[..., Any]] = {}
        #: Tensor method name -> the op function installed on Tensor under it.
        self.methods: dict[str, Callable[..., Any]] = {}
        #: op name -> the function its Tensor methods are (PyTorch's positional ``dim``).
        self.method_functions: dict[str, Callable[..., Any]] = {}
        #: backend -> kernel -> that kernel with the backend's namespace bound.
        self.bound_kernels: dict[str, dict[Any, Callable[..., Any]]] = {}
        #: Further public function name -> op name.
        self.aliases: dict[str, str] = {}
        self.default_device: Device | None = None
        #: (plugin, rewrite) from plugrad_plan_passes hooks, in registration order.
        self.plan_passes: tuple[tuple[str, Callable[[Any], Any]], ...] = ()


_state = _State()
#: The default device inside ``use_backend(...)``: per thread and per asyncio task.
scoped_default_device: contextvars.ContextVar[Device | None] = contextvars.ContextVar(
    "plugrad_default_device", default=None
)


# -- loading ----------------------------------------------------------------------------


def load() -> None:
    """Load every plugin and build the tables (done once, by ``import plugrad``).

    The default device is ``$PLUGRAD_BACKEND`` (a backend or ``name:index``) if set.
    """
    version = getattr(sys.modules.get("plugrad"), "__version__", None)
    _state.distributions = dict.fromkeys(builtin_plugin_names(), ("plugrad", version))
    _state.manager = create_plugin_manager(_state.failures, _state.distributions)
    if os.environ.get("PLUGRAD_CHECK_PLUGINS", "").strip() not in ("", "0"):
        _checking._enabled = True
    _rebuild()
    requested = os.environ.get("PLUGRAD_BACKEND", "").strip()
    try:
        _state.default_device = resolve_device(requested or DEFAULT_BACKEND)
    except (BackendUnavailableError, UnknownBackendError) as exc:
        raise type(exc)(
            f"PLUGRAD_BACKEND={requested!r} cannot be used: {exc}. Unset PLUGRAD_BACKEND to "
            f"use {DEFAULT_BACKEND!r}, or pick one of: {', '.join(backend_names())}"
        ) from None


def register_plugin(plugin: object, name: str | None = None) -> str:
    """Register a plugin at run time and rebuild the tables; return its name.

    Unlike plugins found at import, a plugin registered here that is
    malformed raises :class:`~plugrad.errors.PluginRegistrationError`, and
    plugrad is left exactly as it was.
    """
    manager = _state.manager
    assert manager is not None, "plugrad has not finished loading"
    if name is None:
        name = getattr(plugin, "__name__", None) or (
            f"{type(plugin).__module__}.{type(plugin).__qualname__}"
        )
    if not isinstance(name, str) or not name:
        raise TypeError(f"a plugin name must be a non-empty str, got {name!r}")
    if manager.has_plugin(name):
        raise PluginRegistrationError(
            f"a plugin named {name!r} is already registered ({_owner(name)}); unregister it "
            "first, or register this one under another name"
        )
    if manager.is_registered(plugin):
        raise PluginRegistrationError(
            f"this plugin object is already registered, as {manager.get_name(plugin)!r}"
        )
    try:
        registered = manager.register(plugin, name=name)
    except pluggy.PluginValidationError as exc:
        detail = " ".join(str(exc).split())
        raise PluginRegistrationError(
            f"plugin {name!r}: {detail}; plugrad's hooks take no arguments"
        ) from exc
    if registered is None:  # pluggy refuses blocked plugins silently
        raise PluginRegistrationError(f"plugin {name!r} is blocked and cannot register")
    known = name in _state.distributions
    if not known and (origin := _distribution_of(plugin)) is not None:
        _state.distributions[name] = origin
    try:
        _rebuild(strict={name})
    except BaseException:
        manager.unregister(name=name)
        if not known:
            _state.distributions.pop(name, None)
        raise
    _state.failures.pop(name, None)
    return name


def unregister_plugin(name: str) -> None:
    """Remove a plugin registered under ``name`` and rebuild the tables without it."""
    manager = _state.manager
    assert manager is not None, "plugrad has not finished loading"
    if name in builtin_plugin_names():
        raise PluginRegistrationError(f"{name!r} is built into plugrad and cannot be unregistered")
    if not manager.has_plugin(name):
        failed = _state.failures.get(name)
        because = "" if failed is None else f" (it failed to load: {failed})"
        raise PluginRegistrationError(
            f"no plugin named {name!r} is registered{because}; registered plugins: "
            f"{', '.join(n for n, _ in manager.list_name_plugin())}"
        )
    manager.unregister(name=name)
    _state.failures.pop(name, None)
    _state.distributions.pop(name, None)
    _rebuild()


def _rebuild(strict: set[str] | frozenset[str] = frozenset()) -> None:
    """Collect every plugin's answers, validate them, and swap in the new tables.

    Nothing in ``_state`` changes unless every answer from built-in plugins and
    from ``strict`` plugins is valid. A third-party plugin with an invalid
    answer is reported, recorded in ``_state.failures`` and unregistered, and
    the collection starts again without it, so none of its answers is used.
    """
    manager = _state.manager
    assert manager is not None
    builtin = set(builtin_plugin_names()) | set(strict)
    while True:
        _check_hooks(manager, builtin)
        backends, backend_owners = _collect_backends(manager, builtin)
        for name, owner in backend_owners.items():
            # The same plugin's backend keeps its object: active devices point at it.
            if _state.backend_owners.get(name) == owner:
                backends[name] = _state.backends[name]
        ops, op_owners = _collect_ops(manager, builtin)
        overrides = _collect_kernels(manager, builtin, ops)
        aliases = _collect_aliases(ops, op_owners, builtin)
        methods = _collect_methods(ops, op_owners, builtin)
        plan_passes = _collect_plan_passes(manager, builtin)
        rejected = [n for n in _state.failures if n not in builtin and manager.has_plugin(n)]
        if not rejected:
            break
        for name in rejected:
            manager.unregister(name=name)
    _state.backends, _state.backend_owners = backends, backend_owners
    _state.ops, _state.op_owners = ops, op_owners
    _state.overrides = overrides
    _state.plan_passes = plan_passes
    for name in list(_state.devices):
        if name in backends:
            _install_kernels(backends[name], _state.devices[name])
        else:
            del _state.devices[name]
            _state.kernel_sources.pop(name, None)
    _install_functions(set(builtin_plugin_names()), aliases)
    _install_methods(methods)
    _graph.op_owner = _op_owner
    _checking.sync_rules(ops, _op_owner)


def _refresh_checks() -> None:
    """Reinstall the kernel tables and rules after checking mode was switched."""
    for name, devices in _state.devices.items():
        _install_kernels(_state.backends[name], devices)
    _checking.sync_rules(_state.ops, _op_owner)


def _owner(plugin: str) -> str:
    """``"plugin 'myops' (plugrad-myops 0.1.0)"``, for error messages."""
    return describe_plugin(plugin, *_state.distributions.get(plugin, (None, None)))


def _op_owner(op: str) -> str:
    plugin = _state.op_owners.get(op)
    return "an unregistered plugin" if plugin is None else _owner(plugin)


@functools.cache
def _packages_distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def _distribution_of(plugin: object) -> tuple[str, str | None] | None:
    """The installed distribution a run-time plugin's module belongs to, if any."""
    module = plugin.__name__ if isinstance(plugin, types.ModuleType) else None
    module = module or getattr(plugin, "__module__", None) or type(plugin).__module__
    names = _packages_distributions().get(str(module).partition(".")[0])
    if not names:
        return None
    try:
        return names[0], importlib.metadata.version(names[0])
    except importlib.metadata.PackageNotFoundError:
        return names[0], None


def _hook_answers(
    manager: pluggy.PluginManager, hook_name: str, builtin: set[str]
) -> Iterable[tuple[pluggy.HookImpl, list[Any]]]:
    """Yield (hookimpl, list of answers) per plugin, in registration order.

    A third-party plugin whose hook raises is reported and skipped; a built-in
    one raising is a bug in plugrad and propagates; a ``strict`` one raising
    is a :class:`PluginRegistrationError` for the caller of ``register``.
    """
    for impl in getattr(manager.hook, hook_name).get_hookimpls():
        name = impl.plugin_name
        try:
            yield impl, list(impl.function() or ())
        except Exception as exc:
            message = f"{_owner(name)}: {hook_name}() raised {type(exc).__name__}: {exc}"
            if name in builtin_plugin_names():
                raise
            if name in builtin:
                raise PluginRegistrationError(message) from exc
            _state.failures[name] = message
            warnings.warn(f"{message} (plugin skipped)", PluginLoadWarning, stacklevel=5)


def _plugin_contributions(
    manager: pluggy.PluginManager, hook_name: str, builtin: set[str]
) -> Iterable[tuple[str, list[Any]]]:
    """Yield (plugin name, list of answers) per plugin, in registration order."""
    for impl, answers in _hook_answers(manager, hook_name, builtin):
        yield impl.plugin_name, answers


def _reject(plugin: str, builtin: set[str], error: PluginRegistrationError) -> None:
    if plugin in builtin:
        raise error
    _state.failures[plugin] = str(error)
    warnings.warn(f"{error} (plugin skipped)", PluginLoadWarning, stacklevel=4)


def _check_hooks(manager: pluggy.PluginManager, builtin: set[str]) -> None:
    """Reject plugins that implement no plugrad hook, or a hook plugrad does not have."""
    for name, plugin in manager.list_name_plugin():
        if plugin is None or name in builtin_plugin_names():
            continue
        callers = manager.get_hookcallers(plugin) or []
        unknown = sorted(c.name for c in callers if c.spec is None)
        if unknown:
            message = (
                f"implements {', '.join(h + '()' for h in unknown)}, which plugrad does not "
                f"have; its hooks are {', '.join(h + '()' for h in _HOOKS)} (check the spelling)"
            )
        elif not callers:
            message = (
                "has no function marked with @plugrad.hookspecs.hookimpl, so it contributes "
                "nothing; mark its plugrad_ops()/plugrad_kernels()/plugrad_backends() with it"
            )
        else:
            continue
        _reject(name, builtin, PluginRegistrationError(f"{_owner(name)} {message}"))


def _collect_backends(
    manager: pluggy.PluginManager, builtin: set[str]
) -> tuple[dict[str, Backend], dict[str, str]]:
    backends: dict[str, Backend] = {}
    owners: dict[str, str] = {}
    for plugin, answers in _plugin_contributions(manager, "plugrad_backends", builtin):
        try:
            seen: set[str] = set()
            for backend in answers:
                if not isinstance(backend, Backend):
                    raise PluginRegistrationError(
                        f"plugin {plugin!r}: plugrad_backends() returned a "
                        f"{type(backend).__name__}; return instances of plugrad.backend.Backend"
                    )
                if not isinstance(backend.name, str) or not backend.name.isidentifier():
                    raise PluginRegistrationError(
                        f"plugin {plugin!r}: backend name {backend.name!r} must be an identifier"
                    )
                if backend.name in backends or backend.name in seen:
                    owner = owners.get(backend.name, plugin)
                    raise PluginRegistrationError(
                        f"plugin {plugin!r}: backend {backend.name!r} is already registered by "
                        f"plugin {owner!r}; choose another name"
                    )
                seen.add(backend.name)
        except PluginRegistrationError as error:
            _reject(plugin, builtin, error)
            continue
        for backend in answers:
            backends[backend.name] = backend
            owners[backend.name] = plugin
    return backends, owners


def _collect_ops(
    manager: pluggy.PluginManager, builtin: set[str]
) -> tuple[dict[str, RegisteredOp], dict[str, str]]:
    ops: dict[str, RegisteredOp] = {}
    owners: dict[str, str] = {}
    for plugin, answers in _plugin_contributions(manager, "plugrad_ops", builtin):
        try:
            seen: set[str] = set()
            for op in answers:
                if not isinstance(op, OpDef):
                    raise PluginRegistrationError(
                        f"{_owner(plugin)}: plugrad_ops() returned a {type(op).__name__}; "
                        "return ops made with plugrad.opdef.op(...)"
                    )
                if op.name in ops or op.name in seen:
                    raise _name_clash(plugin, op.name, owners.get(op.name, plugin))
                if plugin not in builtin_plugin_names() and _is_plugrad_function(op.name):
                    raise PluginRegistrationError(
                        f"{_owner(plugin)}, op {op.name!r}: the name is taken by "
                        f"plugrad.{op.name}, which backward rules reach as xp.{op.name}; "
                        "choose another name"
                    )
                seen.add(op.name)
            derived = [_registered(op, _owner(plugin)) for op in answers]
        except PluginRegistrationError as error:
            _reject(plugin, builtin, error)
            continue
        for registered in derived:
            ops[registered.name] = registered
            owners[registered.name] = plugin
    return ops, owners


def _collect_aliases(
    ops: dict[str, RegisteredOp], owners: dict[str, str], builtin: set[str]
) -> dict[str, str]:
    """Return alias -> op name for the further function names ops declare."""
    aliases: dict[str, str] = {}
    for name, op in ops.items():
        for alias in op.aliases:
            if alias in ops:
                problem = f"it is the name of op {alias!r} of {_owner(owners[alias])}"
            elif alias in aliases:
                other = aliases[alias]
                problem = f"op {other!r} of {_owner(owners[other])} already declared it"
            elif _is_plugrad_function(alias):
                problem = f"plugrad.{alias} is one of plugrad's own functions"
            else:
                aliases[alias] = name
                continue
            _reject(
                owners[name],
                builtin,
                PluginRegistrationError(
                    f"{_owner(owners[name])}, op {name!r}: it declares the alias {alias!r}, but "
                    f"{problem}; remove the alias or choose another name"
                ),
            )
    return aliases


#: Each declaration's registered form, made once: rebuilding the tables reuses it.
_registered_forms: weakref.WeakKeyDictionary[OpDef, RegisteredOp] = weakref.WeakKeyDictionary()


def _registered(declaration: OpDef, owner: str) -> RegisteredOp:
    registered = _registered_forms.get(declaration)
    if registered is None:
        registered = _registered_forms[declaration] = register_op(declaration, owner)
    return registered


def _is_plugrad_function(name: str) -> bool:
    """Whether ``name`` is one of plugrad's own public names that is not an op."""
    value = vars(sys.modules["plugrad"]).get(name)
    return value is not None and not name.startswith("_") and not hasattr(value, "__op__")


def _name_clash(plugin: str, name: str, owner: str) -> PluginRegistrationError:
    if owner in builtin_plugin_names():
        return PluginRegistrationError(
            f"{_owner(plugin)}, op {name!r}: {name!r} is a built-in op of plugrad (from "
            f"{owner!r}) and cannot be declared again. Give the new op another name, or, to "
            f"compute {name!r} with your own kernel on a backend, return "
            f"plugrad.kerneldef.kernel({name!r}, backend=..., fn=...) from plugrad_kernels()"
        )
    return PluginRegistrationError(
        f"{_owner(plugin)}, op {name!r}: the name is already registered by {_owner(owner)}; "
        "choose another name (or uninstall one of the two)"
    )


def _collect_kernels(
    manager: pluggy.PluginManager, builtin: set[str], ops: dict[str, RegisteredOp]
) -> dict[tuple[str, str], tuple[KernelSource, ...]]:
    """Validate every plugrad_kernels answer; order each (op, backend)'s kernels best first."""
    order = {name: index for index, (name, _) in enumerate(manager.list_name_plugin())}
    ranked: dict[tuple[str, str], list[tuple[tuple[int, int], KernelSource]]] = {}
    for impl, answers in _hook_answers(manager, "plugrad_kernels", builtin):
        plugin = impl.plugin_name
        mark = "tryfirst" if impl.tryfirst else "trylast" if impl.trylast else None
        rank = (2 if impl.tryfirst else 0 if impl.trylast else 1, order[plugin])
        dist, version = _state.distributions.get(plugin, (None, None))
        accepted: dict[tuple[str, str], KernelSource] = {}
        try:
            for declared in answers:
                if not isinstance(declared, KernelDef):
                    raise PluginRegistrationError(
                        f"{_owner(plugin)}: plugrad_kernels() returned a "
                        f"{type(declared).__name__}; return plugrad.kerneldef.kernel(...) "
                        "declarations"
                    )
                target = declared._validate(_owner(plugin), ops)
                key = (target.name, declared.backend)
                if key in accepted:
                    raise PluginRegistrationError(
                        f"{_owner(plugin)}: two kernels for op {key[0]!r} on backend "
                        f"{key[1]!r}; return one"
                    )
                # Called like every kernel: kernel(xp, *arrays, **params).
                function = _adapt_kernel(declared.fn, target.input_names, target.param_names)
                accepted[key] = KernelSource(
                    *key, "override", plugin, function, dist, version, mark
                )
        except PluginRegistrationError as error:
            _reject(plugin, builtin, error)
            continue
        for key, source in accepted.items():
            ranked.setdefault(key, []).append((rank, source))
    return {
        key: tuple(source for _, source in sorted(entries, key=lambda e: e[0], reverse=True))
        for key, entries in ranked.items()
    }


def _collect_plan_passes(
    manager: pluggy.PluginManager, builtin: set[str]
) -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    """Validate every plugrad_plan_passes answer: callables of one argument."""
    found = []
    for impl, answers in _hook_answers(manager, "plugrad_plan_passes", builtin):
        plugin = impl.plugin_name
        try:
            for rewrite in answers:
                if not callable(rewrite) or not _takes_one_argument(rewrite):
                    raise PluginRegistrationError(
                        f"{_owner(plugin)}: plugrad_plan_passes() returned {rewrite!r}; return "
                        "functions rewrite(plan) -> plan of one argument"
                    )
        except PluginRegistrationError as error:
            _reject(plugin, builtin, error)
            continue
        found.extend((plugin, rewrite) for rewrite in answers)
    return tuple(found)


def _takes_one_argument(function: Callable[..., Any]) -> bool:
    try:
        inspect.signature(function).bind(None)
    except TypeError:
        return False
    except ValueError:  # no signature to read (some builtins): trust it
        return True
    return True


def _collect_methods(
    ops: dict[str, RegisteredOp], owners: dict[str, str], builtin: set[str]
) -> dict[str, str]:
    """Return Tensor method name -> op name for the methods ops declare."""
    methods: dict[str, str] = {}
    for name, op in ops.items():
        in_place = tuple(f"{method}_" for method in op.method_names) if op.inplace else ()
        for method in (*op.method_names, *in_place):
            plugin = owners[name]
            if method in methods:
                other = methods[method]
                problem = f"op {other!r} of {_owner(owners[other])} already claimed it"
            elif method not in _state.methods and hasattr(Tensor, method):
                problem = f"Tensor already has an attribute {method!r}"
            else:
                methods[method] = name
                continue
            _reject(
                plugin,
                builtin,
                PluginRegistrationError(
                    f"{_owner(plugin)}, op {name!r}: it asks to be the Tensor method {method!r}, "
                    f"but {problem}. Declare another method name, or leave the method out: "
                    f"plugrad.ops.{name}(x) always works"
                ),
            )
    return methods


# -- backends and devices ---------------------------------------------------------------


def backend_names() -> tuple[str, ...]:
    """Names of all registered backends, available or not."""
    return tuple(_state.backends)


def get_backend(name: str) -> Backend:
    """Return the registered backend called ``name``."""
    try:
        return _state.backends[name]
    except KeyError:
        raise UnknownBackendError(
            f"no backend named {name!r} is registered; registered backends: "
            f"{', '.join(sorted(_state.backends)) or 'none'}"
        ) from None


def _activate(backend: Backend) -> tuple[Device, ...]:
    """Import the backend's namespace and make its devices (once per backend)."""
    devices = _state.devices.get(backend.name)
    if devices is not None:
        return devices
    reason = backend.unavailable_reason()
    if reason is not None:
        raise BackendUnavailableError(f"backend {backend.name!r} is not available: {reason}")
    try:
        xp = backend.namespace()
    except Exception as exc:  # e.g. the library is installed but broken, or lacks a driver
        raise BackendUnavailableError(_start_failure(backend, "imported", exc)) from exc
    to_native: dict[_dtypes.DType, Any] = {}
    from_native: dict[Any, _dtypes.DType] = {}
    supported = backend.dtype_names(xp)
    for dtype in _dtypes.all_dtypes:
        native = getattr(xp, dtype.name, None)
        if native is None or (supported is not None and dtype.name not in supported):
            continue
        to_native[dtype] = native
        # Arrays report canonical dtype objects, which need not be the namespace attribute.
        from_native[xp.empty((0,), dtype=native).dtype] = dtype
        from_native[native] = dtype
    try:
        natives = tuple(backend.devices())
        names = list(backend.device_names(natives))
    except Exception as exc:
        raise BackendUnavailableError(_start_failure(backend, "asked for devices", exc)) from exc
    if not natives:
        raise BackendUnavailableError(
            f"backend {backend.name!r} is not available: its library "
            f"{backend.library or backend.name!r} reports no device it can run on here"
        )
    devices = tuple(
        Device(backend, native, name, xp, to_native, from_native)
        for native, name in zip(natives, names, strict=True)
    )
    _install_kernels(backend, devices)
    _state.array_types[backend.name] = tuple(backend.array_types())
    _state.devices[backend.name] = devices
    return devices


def _start_failure(backend: Backend, doing: str, exc: BaseException) -> str:
    """The sentence saying that ``backend``'s library failed while being ``doing``."""
    library = backend.library or backend.name
    return (
        f"backend {backend.name!r} is not available: its library {library!r} failed when "
        f"{doing} ({type(exc).__name__}: {exc}); check that {library} works on its own "
        f"(python -c 'import {library}')"
    )


def devices_of(backend: Backend) -> tuple[Device, ...]:
    """The devices of ``backend``, activating it if needed."""
    return _activate(backend)


def device_of_array(obj: Any) -> Device | None:
    """Return the Device holding ``obj`` if it is an array of an active backend, else ``None``."""
    for name, devices in _state.devices.items():
        if isinstance(obj, _state.array_types[name]):
            if len(devices) == 1:
                return devices[0]
            native = devices[0].backend.device_of(obj)
            return next((d for d in devices if d.native == native), devices[0])
    return None


def _install_kernels(backend: Backend, devices: tuple[Device, ...]) -> None:
    backend_kernels = dict(backend.kernels())
    sources = {
        name: _kernel_candidates(op, backend.name, backend_kernels)
        for name, op in _state.ops.items()
    }
    xp = devices[0].xp
    if _checking._enabled:
        table = {
            name: functools.partial(_checking.checked_kernel(_state.ops[name], s[0]), xp)
            for name, s in sources.items()
        }
    else:
        # Bound once per kernel: a rebuild that changes nothing gives an equal table.
        known = _state.bound_kernels.get(backend.name, {})
        table = {
            name: known.get(s[0].function) or _bind(s[0].function, xp, name, backend.name)
            for name, s in sources.items()
        }
        _state.bound_kernels[backend.name] = {s[0].function: table[n] for n, s in sources.items()}
    rule_xp = _rule_namespace(xp, table)
    for device in devices:
        device.kernels = table
        device.rule_xp = rule_xp
    _state.kernel_sources[backend.name] = sources


def _bind(kernel: Callable[..., Any], xp: Any, op: str, backend: str) -> Callable[..., Any]:
    """``kernel`` with ``xp`` bound, as the kernel table holds it: ``f(*arrays, **params)``.

    A kernel that is the namespace's function of the op's name is that function
    itself, so calling it costs no frame of plugrad's.
    """
    if not isinstance(kernel, NamespaceKernel):
        return functools.partial(kernel, xp)
    function = kernel.bind(xp)
    if function is not None:
        return function
    missing = f"xp.{kernel.__qualname__}"

    def unavailable(*args: Any, **params: Any) -> Any:
        raise BackendError(
            f"{op}() cannot run on backend {backend!r}: its namespace has no {missing!r}, "
            f"which computes the op; use another backend, or give the op a kernel for "
            f"{backend!r} with plugrad.kerneldef.kernel({op!r}, backend={backend!r}, fn=...)"
        )

    return unavailable


def _kernel_candidates(
    op: OpDef, backend: str, backend_kernels: dict[str, Callable[..., Any]]
) -> tuple[KernelSource, ...]:
    """Every kernel that could compute ``op`` on ``backend``, best (the one used) first."""
    owner = _state.op_owners[op.name]
    found = list(_state.overrides.get((op.name, backend), ()))
    own = op.backend_kernels.get(backend)
    if own is not None:
        found.append(_source(op.name, backend, "op", owner, own))
    if op.name in backend_kernels:
        backend_owner = _state.backend_owners.get(backend, owner)
        found.append(_source(op.name, backend, "backend", backend_owner, backend_kernels[op.name]))
    found.append(_source(op.name, backend, "generic", owner, op.kernel))
    return tuple(found)


def _source(op: str, backend: str, kind: str, plugin: str, function: Any) -> KernelSource:
    dist, version = _state.distributions.get(plugin, (None, None))
    return KernelSource(op, backend, kind, plugin, function, dist, version)


def _rule_namespace(namespace: Any, table: dict[str, Callable[..., Any]]) -> types.SimpleNamespace:
    """What rules get: the backend's namespace plus plugrad's non-standard ops.

    A name the standard defines means the backend's own function; any other
    registered op (``scatter_add``, a plugin's op) means plugrad's, even if the
    backend happens to have something else of that name (torch has a
    ``scatter_add`` with another signature). The kernels are bound to the plain
    namespace, so one never finds itself. Built once per table rebuild;
    attribute access is a dict lookup.
    """
    # getattr, not vars(): extensions may be served lazily (array-api-strict's linalg).
    xp = types.SimpleNamespace(**{n: getattr(namespace, n) for n in dir(namespace)})
    for extension in ("linalg", "fft"):
        if extension not in vars(xp) and hasattr(namespace, extension):
            setattr(xp, extension, getattr(namespace, extension))
    builtin = set(builtin_plugin_names())
    for name, kernel in table.items():
        op = _state.ops[name]
        standard = op.standard if op.standard is not None else _state.op_owners[name] in builtin
        if not standard or not hasattr(namespace, name):
            setattr(xp, name, kernel)
    return xp


def resolve_device(spec: Device | Backend | str | None) -> Device:
    """Return the :class:`Device` for ``spec``.

    ``None`` is the default device; a string is a backend name (its default
    device) or ``"name:index"``; a :class:`Device` is returned as is.
    """
    if spec is None:
        device = scoped_default_device.get() or _state.default_device
        assert device is not None, "plugrad has not finished loading"
        return device
    if isinstance(spec, Device):
        return spec
    if isinstance(spec, Backend):
        return _activate(spec)[0]
    if not isinstance(spec, str):
        raise TypeError(
            f"a device is given as a backend name such as 'numpy' or 'cupy:0', or a Device; "
            f"got a {type(spec).__name__}"
        )
    name, _, index = spec.partition(":")
    devices = _activate(get_backend(name))
    if not index:
        # A bare backend name means its current device: the default one if it is on
        # this backend (e.g. inside use_backend("cupy:1")), else its first.
        current = scoped_default_device.get() or _state.default_device
        return current if current is not None and current in devices else devices[0]
    named = next((d for d in devices if d.name == spec), None)
    if named is not None:
        return named
    if not index.isdigit() or int(index) >= len(devices):
        raise UnknownBackendError(
            f"backend {name!r} has no device {index!r}; its devices are "
            f"{', '.join(d.name for d in devices)}"
        )
    return devices[int(index)]


def default_device() -> Device:
    """The device new tensors are created on when none is given."""
    return resolve_device(None)


def set_default_device(device: Device) -> None:
    """Make ``device`` the process-wide default (``use_backend`` scopes override it)."""
    _state.default_device = device


def backend_status(name: str) -> str | None:
    """Return ``None`` if backend ``name`` can be used here, else the reason it cannot.

    Activates the backend if it is available (imports its library).
    """
    backend = get_backend(name)
    if name in _state.devices:
        return None
    reason = backend.unavailable_reason()
    if reason is not None:
        return reason
    try:
        _activate(backend)
    except BackendUnavailableError as exc:
        return str(exc)
    except Exception as exc:  # a library that imports but cannot start (e.g. no driver)
        return f"{type(exc).__name__}: {exc}"
    return None


def backend_owner(name: str) -> str:
    """The plugin that registered backend ``name``."""
    get_backend(name)
    return _state.backend_owners[name]


# -- ops and their public functions -----------------------------------------------------


def find_op(name: str) -> OpDef | None:
    """Return the registered op called ``name``, or ``None``."""
    return _state.ops.get(name)


def op_names() -> tuple[str, ...]:
    """Names of all registered ops."""
    return tuple(_state.ops)


def _install_functions(builtin: set[str], aliases: dict[str, str]) -> None:
    namespace = sys.modules["plugrad"]
    # Functions of the Array API extensions live in their own modules.
    extensions = {f"plugrad.{name}": sys.modules[f"plugrad.{name}"] for name in ("linalg", "fft")}
    modules = (_ops_module, namespace, *extensions.values())
    for alias in _state.aliases:
        for module in modules:
            if getattr(module.__dict__.get(alias), "__op__", None) is not None:
                delattr(module, alias)
    for name in list(_state.functions):
        if name not in _state.ops or _state.functions[name].__op__ is not _state.ops[name]:
            del _state.functions[name]
            _state.method_functions.pop(name, None)
            for module in modules:
                if getattr(module.__dict__.get(name), "__op__", None) is not None:
                    delattr(module, name)
    for name, op in _state.ops.items():
        function = _state.functions.get(name)
        if function is None:
            is_builtin = _state.op_owners[name] in builtin
            module = "plugrad.ops"
            if is_builtin and op.namespace != "nn":  # nn ops stay out of the array namespace
                module = f"plugrad.{op.namespace}" if op.namespace else "plugrad"
            function = _make_function(op, module)
            _state.functions[name] = function
        setattr(_ops_module, name, function)
        if function.__module__ == "plugrad":
            setattr(namespace, name, function)
        elif function.__module__ in extensions:
            setattr(extensions[function.__module__], name, function)
    for alias, name in aliases.items():
        function = _state.functions[name]
        setattr(_ops_module, alias, function)
        if function.__module__ == "plugrad":
            setattr(namespace, alias, function)
        elif function.__module__ in extensions:
            setattr(extensions[function.__module__], alias, function)
    _state.aliases = dict(aliases)
    public = {k: v for k, v in vars(namespace).items() if not k.startswith("_")}
    # Extension functions are reached as xp.linalg.<name> / xp.fft.<name>, as in the
    # backends' namespaces (plugrad.fft.fft must not hide the module plugrad.fft).
    top_level = {k: f for k, f in _state.functions.items() if f.__module__ not in extensions}
    _graph.tensor_namespace = types.SimpleNamespace(**{**public, **top_level})


def _install_methods(methods: dict[str, str]) -> None:
    """Install the Tensor methods ops declare; remove methods of ops that are gone."""
    for name, function in _state.methods.items():
        if Tensor.__dict__.get(name) is function:
            delattr(Tensor, name)
    _state.methods = {
        method: _method_function(op)
        if method in _state.ops[op].method_names
        else _in_place_method(op, method)
        for method, op in methods.items()
    }
    for name, function in _state.methods.items():
        setattr(Tensor, name, function)


def _in_place_method(name: str, method: str) -> Callable[..., Any]:
    """``x.<method>(...)`` (``add_``): make ``x`` hold the op's result, like ``x += y``.

    The version-counter checks of :func:`plugrad.inplace.apply_inplace` apply:
    a backward pass that saved the old value raises, and a leaf that requires
    grad may change only under ``no_grad``.
    """
    op = _state.ops[name]
    function = _method_function(name)
    array_operator = op.inplace if callable(op.inplace) else None
    label = f"{method}()"

    def in_place(self: Tensor, *args: Any, **params: Any) -> Tensor:
        if params:
            return apply_inplace(self, functools.partial(function, **params), *args, name=label)
        return apply_inplace(self, function, *args, name=label, array_operator=array_operator)

    in_place.__name__ = method
    in_place.__qualname__ = f"Tensor.{method}"
    in_place.__module__ = "plugrad.Tensor"
    in_place.__doc__ = f"In-place :meth:`{method[:-1]}`: ``x.{method}(...)`` makes ``x`` hold it."
    in_place.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]
    in_place.__op__ = op  # type: ignore[attr-defined]
    return in_place


def _method_function(name: str) -> Callable[..., Any]:
    """The function installed as the op's Tensor method(s), made once per op."""
    function = _state.method_functions.get(name)
    if function is None:
        op = _state.ops[name]
        if _torch_names(op) or op.alpha:
            function = _make_function(op, "plugrad.Tensor", method=True)
        else:
            function = _state.functions[name]
        _state.method_functions[name] = function
    return function


class _DefaultName:
    """Prints as a variable name, so a signature's text can refer to its defaults."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: PyTorch's names of the reduction params, accepted beside the standard's.
_TORCH_NAMES = {"axis": "dim", "keepdims": "keepdim"}


class _Unset:
    """The default of ``dim``/``keepdim``: tells "not given" from every value."""

    def __repr__(self) -> str:
        return "<unset>"


_UNSET = _Unset()


def _both_given(op: str, standard: str, torch: str) -> ArgumentError:
    return ArgumentError(
        f"{op}() got both {standard}= and {torch}=, which name the same argument "
        f"({torch} is PyTorch's name for {standard}); pass only one"
    )


def _torch_names(op: RegisteredOp) -> dict[str, str]:
    """The op's params (with defaults) that PyTorch names otherwise: ``{"axis": "dim"}``."""
    assert op.signature is not None
    parameters = op.signature.parameters
    return {
        standard: torch
        for standard, torch in _TORCH_NAMES.items()
        if standard in op.param_names
        and parameters[standard].default is not inspect.Parameter.empty
        and torch not in parameters
    }


def _takes_out(op: RegisteredOp, method: bool) -> bool:
    """Whether the op's public function takes PyTorch's ``out=`` (one output, not a view)."""
    assert op.signature is not None
    return not (method or op.general or op.view or "out" in op.signature.parameters)


def _make_function(op: RegisteredOp, module: str, method: bool = False) -> Callable[..., Any]:
    """Generate ``def name(<kernel signature without xp>): return apply(op, ...)``.

    Generated rather than wrapped so the function has the kernel's exact
    signature (Python itself rejects bad arguments) and costs one call.
    Params named ``axis``/``keepdims`` (with a default) may also be given as
    PyTorch's ``dim``/``keepdim``; for a Tensor method (``method=True``) these
    come right after the op's positional params, so ``x.sum(1, True)`` works
    as in PyTorch.
    """
    assert op.signature is not None
    kinds = inspect.Parameter
    defaults: dict[str, Any] = {"_unset": _UNSET}
    parameters = []
    for p in op.signature.parameters.values():
        if p.default is not kinds.empty:
            defaults[f"_default_{p.name}"] = p.default
            p = p.replace(default=_DefaultName(f"_default_{p.name}"))
        parameters.append(p.replace(annotation=kinds.empty))
    torch_names = _torch_names(op)
    if torch_names:
        positional = method and all(
            op.signature.parameters[n].kind is kinds.KEYWORD_ONLY for n in torch_names
        )
        extra = [
            kinds(torch, kinds.POSITIONAL_OR_KEYWORD if positional else kinds.KEYWORD_ONLY,
                  default=_DefaultName("_unset"))
            for torch in torch_names.values()
        ]  # fmt: skip
        if positional:
            at = next(
                (i for i, p in enumerate(parameters) if p.kind is kinds.KEYWORD_ONLY),
                len(parameters),
            )
            if any(p.kind is kinds.VAR_POSITIONAL for p in parameters):
                positional = False
        if positional:
            parameters[at:at] = extra
        else:
            parameters.extend(extra)
    prelude = "".join(
        f"    if {torch} is not _unset:\n"
        f"        if {standard} is not _default_{standard}:\n"
        f"            raise _both_given({op.name!r}, {standard!r}, {torch!r})\n"
        f"        {standard} = {torch}\n"
        for standard, torch in torch_names.items()
    )
    if method and op.alpha:
        # PyTorch's factor for the second input: x.add(y, alpha=2) is x + 2 * y.
        parameters.append(kinds("alpha", kinds.KEYWORD_ONLY, default=1))
        second = op.input_names[1]
        prelude += f"    if alpha != 1:\n        {second} = {second} * alpha\n"
    if _takes_out(op, method):
        parameters.append(kinds("out", kinds.KEYWORD_ONLY, default=None))
    signature = op.signature.replace(
        parameters=parameters, return_annotation=inspect.Signature.empty
    )
    inputs = op.input_names
    params = (
        "None"
        if not op.param_names
        else ("{" + ", ".join(f"{p!r}: {p}" for p in op.param_names) + "}")
    )
    general = f"_apply_general(_op, ({''.join(f'{i}, ' for i in inputs)}), {params})"
    if op.general:
        call = general
    elif op.view:
        call = f"_apply_view(_op, {inputs[0]}, {params})"
    elif op.declared_inputs is not None:
        # Declared inputs may be left out (None), which only apply_n accepts.
        call = f"_apply_n(_op, ({', '.join(inputs)},), {params})"
    elif len(inputs) == 1:
        apply = "_apply1_float" if op.promotion == "float" else "_apply1"
        call = f"{apply}(_op, {inputs[0]}, {params})"
    elif len(inputs) == 2:
        apply = "_apply2_float" if op.promotion == "float" else "_apply2"
        call = f"{apply}(_op, {inputs[0]}, {inputs[1]}, {params})"
    else:
        call = f"_apply_n(_op, ({', '.join(inputs)},), {params})"
    if op.dtype_params and not op.general:
        # Converting a dtype takes the general path; calls without one stay on the fast path.
        fast = " and ".join(f"{p} is None" for p in op.dtype_params)
        body = f"    if {fast}:\n        return {call}\n    return {general}\n"
        computed = f"({call}) if {fast} else ({general})"
    else:
        body = f"    return {call}\n"
        computed = call
    if _takes_out(op, method):
        # PyTorch's out=: refused while autograd records, else the result is written into out.
        body = (
            f"    if out is not None:\n"
            f"        _check_out({op.name!r}, out, ({''.join(f'{i}, ' for i in inputs)}))\n"
            f"        with _no_grad():\n"
            f"            return _write_out({op.name!r}, out, {computed})\n"
        ) + body
    source = f"def {op.name}{signature}:\n{prelude}{body}"
    scope: dict[str, Any] = {
        "_op": op, "_apply1": apply1, "_apply2": apply2, "_apply_n": apply_n,
        "_apply1_float": apply1_float, "_apply2_float": apply2_float,
        "_apply_general": apply_general, "_apply_view": apply_view, "_both_given": _both_given,
        "_check_out": check_out, "_write_out": write_out, "_no_grad": no_grad,
        **defaults,
    }  # fmt: skip
    exec(compile(source, f"<plugrad op {op.name}>", "exec"), scope)
    function = scope[op.name]
    function.__module__ = module
    function.__doc__ = op.doc
    function.__op__ = op
    if op.namespace or method:
        function.__qualname__ = f"Tensor.{op.name}" if method else op.name
    return function
