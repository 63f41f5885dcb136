"""Backends by name, activated on first use: their devices, kernel tables and lookup.

Activating a backend imports its namespace, maps its dtypes, makes its
:class:`~plugrad.backend.Device` objects and installs the kernel table they
share (with the namespace bound into each kernel once, here, so the per-op
path calls kernels directly).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from . import checking as _checking
from . import dtypes as _dtypes
from . import floating_point_warnings as _floating_point_warnings
from . import inplace as _inplace
from . import lazy as _lazy
from .backend import Backend, Device
from .errors import ArgumentError, BackendError, BackendUnavailableError, UnknownBackendError
from .kerneldef import KernelSource
from .opdef import NamespaceKernel, RegisteredOp
from .plugin_manager import builtin_plugin_names
from .plugin_tables import scoped_default_device
from .plugin_tables import state as _state
from .rule_namespace import rule_namespace

__all__ = [
    "backend_names",
    "backends_in_use",
    "backend_owner",
    "backend_status",
    "default_device",
    "device_of_array",
    "devices_of",
    "get_backend",
    "resolve_device",
    "set_default_device",
]


def backend_names() -> tuple[str, ...]:
    """Names of all registered backends, available or not."""
    return tuple(_state.backends)


def backends_in_use() -> tuple[Backend, ...]:
    """The backends whose devices this process made (the ones it used), no others: asking
    starts no library."""
    return tuple(_state.backends[name] for name in _state.devices if name in _state.backends)


def get_backend(name: str) -> Backend:
    """Return the registered backend called ``name``."""
    try:
        return _state.backends[name]
    except KeyError:
        raise UnknownBackendError(
            f"no backend named {name!r} is registered; registered backends: "
            f"{', '.join(sorted(_state.backends)) or 'none'}{_dtype_hint(name)}"
        ) from None


def _dtype_hint(name: Any) -> str:
    """Where a dtype's name was given for a device (``x.to("float64")``): what to pass."""
    if name in {dtype.name for dtype in _dtypes.all_dtypes}:
        return f". {name!r} names a dtype: pass plugrad.{name} (x.to(plugrad.{name}))"
    return ""


def activate(backend: Backend) -> tuple[Device, ...]:
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
    for device in devices:
        device.only_device = len(devices) == 1
    install_kernels(backend, devices)
    _floating_point_warnings.note_backend(backend)
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
    return activate(backend)


def device_of_array(obj: Any) -> Device | None:
    """Return the Device holding ``obj`` if it is an array of a registered backend, else ``None``.

    A backend not used yet is started here when ``obj`` may be one of its arrays
    (it has a ``shape`` and the backend's library is imported): a Dask array
    made before anything else touched the ``dask`` backend is still a Dask array,
    not host data to compute and copy.
    """
    for name, devices in _state.devices.items():
        if isinstance(obj, _state.array_types[name]):
            return _device_holding(obj, devices)
    if not hasattr(obj, "shape"):
        return None
    for name, backend in _state.backends.items():
        if (
            name not in _state.devices
            and backend.library in sys.modules
            and backend.unavailable_reason() is None
        ):
            devices = activate(backend)
            if isinstance(obj, _state.array_types[name]):
                return _device_holding(obj, devices)
    return None


def _device_holding(obj: Any, devices: tuple[Device, ...]) -> Device:
    if len(devices) == 1:
        return devices[0]
    native = devices[0].backend.device_of(obj)
    return next((d for d in devices if d.native == native), devices[0])


def install_kernels(backend: Backend, devices: tuple[Device, ...]) -> None:
    backend_kernels = dict(backend.kernels())
    sources = {
        name: kernel_candidates(op, backend.name, backend_kernels)
        for name, op in _state.ops.items()
    }
    xp = devices[0].xp
    table: dict[str, Callable[..., Any]]
    if _checking._enabled:
        table = {
            name: functools.partial(_checking.checked_kernel(_state.ops[name], s[0]), xp)
            for name, s in sources.items()
        }
    else:
        # Bound once per kernel: a rebuild that changes nothing gives an equal table.
        known = _state.bound_kernels.get(backend.name, {})
        table = {
            name: known.get(s[0].function) or bind_kernel(s[0].function, xp, name, backend.name)
            for name, s in sources.items()
        }
        bound: dict[Any, Callable[..., Any]] = {s[0].function: table[n] for n, s in sources.items()}
        # A kernel a third-party plugin puts in place of an op's generic kernel is checked
        # against that kernel's shapes and dtypes, always; built-in plugins' kernels are not.
        trusted = builtin_plugin_names()
        for name, (source, *_) in sources.items():
            op = _state.ops[name]
            if source.plugin in trusted or source.function is op.kernel:
                continue
            contract = known.get((source.function, "contract"))
            if contract is None or getattr(contract, "__wrapped__", None) is not table[name]:
                reference = bind_kernel(op.kernel, xp, name, backend.name)
                contract = _checking.contract_kernel(op, source, table[name], reference)
            table[name] = bound[(source.function, "contract")] = contract
        _state.bound_kernels[backend.name] = bound
    if backend.lazy:
        # Graphs are kept bounded where they grow (plugrad.lazy); eager backends pay nothing.
        # Wrapped once per kernel, as kernels are bound: a rebuild that changes nothing (a
        # plugin refused) gives an equal table.
        previous = _state.settling_kernels.get(backend.name, {})
        wrapped = {
            kernel: previous.get(kernel) or _lazy.settling_kernel(kernel, backend)
            for kernel in set(table.values())
        }
        _state.settling_kernels[backend.name] = wrapped
        table = {name: wrapped[kernel] for name, kernel in table.items()}
        _lazy.in_use = True
    if devices[0].views_are_copies:
        _inplace.copies_in_use = True  # raw writes (optimizer steps) bring views up to date
    rule_xp = rule_namespace(xp, table)
    for device in devices:
        device.kernels = table
        device.rule_xp = rule_xp
    _state.kernel_sources[backend.name] = sources


def bind_kernel(kernel: Callable[..., Any], xp: Any, op: str, backend: str) -> Callable[..., Any]:
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


def kernel_candidates(
    op: RegisteredOp, backend: str, backend_kernels: dict[str, Callable[..., Any]]
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
        return activate(spec)[0]
    if not isinstance(spec, str):
        raise ArgumentError(
            f"a device is given as a backend name such as 'numpy' or 'cupy:0', or a Device; "
            f"got a {type(spec).__name__}"
        )
    name, _, index = spec.partition(":")
    devices = activate(get_backend(name))
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
        activate(backend)
    except BackendUnavailableError as exc:
        return str(exc)
    except Exception as exc:  # a library that imports but cannot start (e.g. no driver)
        return f"{type(exc).__name__}: {exc}"
    return None


def backend_owner(name: str) -> str:
    """The plugin that registered backend ``name``."""
    get_backend(name)
    return _state.backend_owners[name]
