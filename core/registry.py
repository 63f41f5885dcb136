"""Turns what plugins declare into the frozen tables the per-op path reads.

Loading asks every plugin's hooks once, validates each answer, and builds:

- the backends by name (activated lazily: namespace import, dtype maps and
  devices on first use);
- the ops by name, each frozen (its node type and rule tables derived);
- for every active backend, one kernel table (op name -> kernel), shared by
  its :class:`~plugrad.backend.Device` objects;
- one public function per op, in ``plugrad.ops`` (and, for built-in ops, in
  ``plugrad`` itself), generated with the kernel's exact signature.

Rebuilding replaces tables wholesale; nothing on the per-op path is mutated.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import pluggy

from . import dtypes as _dtypes
from . import ops as _ops_module
from .backend import Backend, Device
from .dispatch import apply1, apply2, apply_general, apply_n
from .errors import (
    BackendUnavailableError,
    PluginLoadWarning,
    PluginRegistrationError,
    UnknownBackendError,
)
from .opdef import OpDef
from .plugin_manager import builtin_plugin_names, create_plugin_manager

__all__ = [
    "backend_names",
    "default_device",
    "device_of_array",
    "find_op",
    "get_backend",
    "load",
    "op_names",
    "register_plugin",
    "resolve_device",
    "unregister_plugin",
]

DEFAULT_BACKEND = "numpy"


class _State:
    """Everything loaded from plugins; replaced piecewise by a rebuild."""

    def __init__(self) -> None:
        self.manager: pluggy.PluginManager | None = None
        self.failures: dict[str, str] = {}
        self.backends: dict[str, Backend] = {}
        self.backend_owners: dict[str, str] = {}
        self.ops: dict[str, OpDef] = {}
        self.op_owners: dict[str, str] = {}
        self.devices: dict[str, tuple[Device, ...]] = {}
        self.array_types: dict[str, tuple[type, ...]] = {}
        self.functions: dict[str, Callable[..., Any]] = {}
        #: What backward rules receive under create_graph: plugrad plus every registered op.
        self.tensor_namespace: types.SimpleNamespace = types.SimpleNamespace()
        self.default_device: Device | None = None


_state = _State()


# -- loading ----------------------------------------------------------------------------


def load() -> None:
    """Load every plugin and build the tables (done once, by ``import plugrad``)."""
    _state.manager = create_plugin_manager(_state.failures)
    _rebuild()
    _state.default_device = resolve_device(DEFAULT_BACKEND)


def register_plugin(plugin: object, name: str | None = None) -> str:
    """Register a plugin at run time and rebuild the tables; return its name.

    Unlike plugins found at import, a plugin registered here that is
    malformed raises :class:`~plugrad.errors.PluginRegistrationError` (or the
    error its hook raised), and plugrad is left exactly as it was.
    """
    manager = _state.manager
    assert manager is not None, "plugrad has not finished loading"
    registered = manager.register(plugin, name=name)
    if registered is None:  # pluggy refuses blocked plugins silently
        raise PluginRegistrationError(f"plugin {name or plugin!r} is blocked and cannot register")
    try:
        _rebuild(strict={registered})
    except BaseException:
        manager.unregister(name=registered)
        raise
    return registered


def unregister_plugin(name: str) -> None:
    """Remove a plugin registered under ``name`` and rebuild the tables without it."""
    manager = _state.manager
    assert manager is not None, "plugrad has not finished loading"
    if name in builtin_plugin_names():
        raise PluginRegistrationError(f"{name!r} is built into plugrad and cannot be unregistered")
    if manager.unregister(name=name) is None:
        raise PluginRegistrationError(
            f"no plugin named {name!r} is registered; registered plugins: "
            f"{', '.join(n for n, _ in manager.list_name_plugin())}"
        )
    _state.failures.pop(name, None)
    _rebuild()


def _rebuild(strict: set[str] | frozenset[str] = frozenset()) -> None:
    """Collect every plugin's answers, validate them, and swap in the new tables.

    Nothing in ``_state`` changes unless every answer from built-in plugins and
    from ``strict`` plugins is valid.
    """
    assert _state.manager is not None
    builtin = set(builtin_plugin_names()) | set(strict)
    backends, backend_owners = _collect_backends(_state.manager, builtin)
    ops, op_owners = _collect_ops(_state.manager, builtin)
    _state.backends, _state.backend_owners = backends, backend_owners
    _state.ops, _state.op_owners = ops, op_owners
    for name in list(_state.devices):
        if name in backends:
            _install_kernels(backends[name], _state.devices[name])
        else:
            del _state.devices[name]
    _install_functions(set(builtin_plugin_names()))


def _plugin_contributions(
    manager: pluggy.PluginManager, hook_name: str, builtin: set[str]
) -> Iterable[tuple[str, list[Any]]]:
    """Yield (plugin name, list of answers) per plugin, in registration order.

    A third-party plugin whose hook raises is reported and skipped; a built-in
    one raising is a bug in plugrad and propagates.
    """
    for impl in getattr(manager.hook, hook_name).get_hookimpls():
        name = impl.plugin_name
        try:
            yield name, list(impl.function() or ())
        except Exception as exc:
            if name in builtin:
                raise
            _state.failures[name] = f"{hook_name}() raised {type(exc).__name__}: {exc}"
            warnings.warn(
                f"plugrad plugin {name!r} failed in {hook_name}() and is skipped: {exc}",
                PluginLoadWarning,
                stacklevel=4,
            )


def _reject(plugin: str, builtin: set[str], error: PluginRegistrationError) -> None:
    if plugin in builtin:
        raise error
    _state.failures[plugin] = str(error)
    warnings.warn(f"{error} (plugin skipped)", PluginLoadWarning, stacklevel=4)


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
) -> tuple[dict[str, OpDef], dict[str, str]]:
    ops: dict[str, OpDef] = {}
    owners: dict[str, str] = {}
    for plugin, answers in _plugin_contributions(manager, "plugrad_ops", builtin):
        try:
            seen: set[str] = set()
            for op in answers:
                if not isinstance(op, OpDef):
                    raise PluginRegistrationError(
                        f"plugin {plugin!r}: plugrad_ops() returned a {type(op).__name__}; "
                        "return ops made with plugrad.opdef.op(...)"
                    )
                if op.name in ops or op.name in seen:
                    owner = owners.get(op.name, plugin)
                    raise PluginRegistrationError(
                        f"plugin {plugin!r}, op {op.name!r}: the name is already registered by "
                        f"plugin {owner!r}; choose another name"
                    )
                seen.add(op.name)
                op._freeze(plugin)
        except PluginRegistrationError as error:
            _reject(plugin, builtin, error)
            continue
        for op in answers:
            ops[op.name] = op
            owners[op.name] = plugin
    return ops, owners


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
    xp = backend.namespace()
    to_native: dict[_dtypes.DType, Any] = {}
    from_native: dict[Any, _dtypes.DType] = {}
    for dtype in _dtypes.all_dtypes:
        native = getattr(xp, dtype.name, None)
        if native is None:
            continue
        to_native[dtype] = native
        # Arrays report canonical dtype objects, which need not be the namespace attribute.
        from_native[xp.empty((0,), dtype=native).dtype] = dtype
        from_native[native] = dtype
    natives = tuple(backend.devices())
    devices = tuple(
        Device(
            backend,
            native,
            backend.name if len(natives) == 1 else f"{backend.name}:{index}",
            xp,
            to_native,
            from_native,
        )
        for index, native in enumerate(natives)
    )
    _install_kernels(backend, devices)
    _state.array_types[backend.name] = tuple(backend.array_types())
    _state.devices[backend.name] = devices
    return devices


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
    overrides = dict(backend.kernels())
    table = {
        name: op.backend_kernels.get(backend.name) or overrides.get(name) or op.kernel
        for name, op in _state.ops.items()
    }
    xp = _kernel_namespace(devices[0].namespace, table)
    for device in devices:
        device.kernels = table
        device.xp = xp


def _kernel_namespace(
    namespace: Any, table: dict[str, Callable[..., Any]]
) -> types.SimpleNamespace:
    """The backend's namespace plus every op it lacks, each bound to this namespace.

    Built once per table rebuild; attribute access is a plain dict lookup.
    """
    xp = types.SimpleNamespace(**vars(namespace))
    for name, kernel in table.items():
        if not hasattr(namespace, name):
            setattr(xp, name, functools.partial(kernel, xp))
    return xp


def resolve_device(spec: Device | Backend | str | None) -> Device:
    """Return the :class:`Device` for ``spec``.

    ``None`` is the default device; a string is a backend name (its default
    device) or ``"name:index"``; a :class:`Device` is returned as is.
    """
    if spec is None:
        device = _state.default_device
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
        return devices[0]
    if not index.isdigit() or int(index) >= len(devices):
        raise UnknownBackendError(
            f"backend {name!r} has no device {index!r}; its devices are "
            f"{', '.join(d.name for d in devices)}"
        )
    return devices[int(index)]


def default_device() -> Device:
    """The device new tensors are created on when none is given."""
    return resolve_device(None)


# -- ops and their public functions -----------------------------------------------------


def find_op(name: str) -> OpDef | None:
    """Return the registered op called ``name``, or ``None``."""
    return _state.ops.get(name)


def op_names() -> tuple[str, ...]:
    """Names of all registered ops."""
    return tuple(_state.ops)


def _install_functions(builtin: set[str]) -> None:
    namespace = sys.modules["plugrad"]
    # Functions of the Array API extensions live in their own modules.
    extensions = {f"plugrad.{name}": sys.modules[f"plugrad.{name}"] for name in ("linalg", "fft")}
    for name in list(_state.functions):
        if name not in _state.ops or _state.functions[name].__op__ is not _state.ops[name]:
            del _state.functions[name]
            if getattr(_ops_module, name, None) is not None:
                delattr(_ops_module, name)
            for module in (namespace, *extensions.values()):
                if getattr(module.__dict__.get(name), "__op__", None) is not None:
                    delattr(module, name)
    for name, op in _state.ops.items():
        function = _state.functions.get(name)
        if function is None:
            is_builtin = _state.op_owners[name] in builtin
            module = "plugrad.ops"
            if is_builtin:
                module = f"plugrad.{op.namespace}" if op.namespace else "plugrad"
            function = _make_function(op, module)
            _state.functions[name] = function
        setattr(_ops_module, name, function)
        if function.__module__ == "plugrad":
            setattr(namespace, name, function)
        elif function.__module__ in extensions:
            setattr(extensions[function.__module__], name, function)
    public = {k: v for k, v in vars(namespace).items() if not k.startswith("_")}
    # Extension functions are reached as xp.linalg.<name> / xp.fft.<name>, as in the
    # backends' namespaces (plugrad.fft.fft must not hide the module plugrad.fft).
    top_level = {k: f for k, f in _state.functions.items() if f.__module__ not in extensions}
    _state.tensor_namespace = types.SimpleNamespace(**{**public, **top_level})


class _DefaultName:
    """Prints as a variable name, so a signature's text can refer to its defaults."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


def _make_function(op: OpDef, module: str) -> Callable[..., Any]:
    """Generate ``def name(<kernel signature without xp>): return apply(op, ...)``.

    Generated rather than wrapped so the function has the kernel's exact
    signature (Python itself rejects bad arguments) and costs one call.
    """
    assert op.signature is not None
    defaults: dict[str, Any] = {}
    parameters = []
    for p in op.signature.parameters.values():
        if p.default is not inspect.Parameter.empty:
            defaults[f"_default_{p.name}"] = p.default
            p = p.replace(default=_DefaultName(f"_default_{p.name}"))
        parameters.append(p.replace(annotation=inspect.Parameter.empty))
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
    elif op.declared_inputs is not None:
        # Declared inputs may be left out (None), which only apply_n accepts.
        call = f"_apply_n(_op, ({', '.join(inputs)},), {params})"
    elif len(inputs) == 1:
        call = f"_apply1(_op, {inputs[0]}, {params})"
    elif len(inputs) == 2:
        call = f"_apply2(_op, {inputs[0]}, {inputs[1]}, {params})"
    else:
        call = f"_apply_n(_op, ({', '.join(inputs)},), {params})"
    if op.dtype_params and not op.general:
        # Converting a dtype takes the general path; calls without one stay on the fast path.
        fast = " and ".join(f"{p} is None" for p in op.dtype_params)
        body = f"    if {fast}:\n        return {call}\n    return {general}\n"
    else:
        body = f"    return {call}\n"
    source = f"def {op.name}{signature}:\n{body}"
    scope: dict[str, Any] = {
        "_op": op, "_apply1": apply1, "_apply2": apply2, "_apply_n": apply_n,
        "_apply_general": apply_general, **defaults,
    }  # fmt: skip
    exec(compile(source, f"<plugrad op {op.name}>", "exec"), scope)
    function = scope[op.name]
    function.__module__ = module
    function.__doc__ = op.doc
    function.__op__ = op
    if op.namespace:
        function.__qualname__ = op.name
    return function
