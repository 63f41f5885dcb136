"""The tables loaded from plugins, read by the rest of plugrad, and who owns each entry.

:mod:`plugrad.registry` fills them (loading and rebuilding);
:mod:`plugrad.plugin_validation` checks what plugins answer before it goes in,
:mod:`plugrad.backend_activation` adds devices and kernel tables as backends
are used, and :mod:`plugrad.function_generation` the public functions.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

from .backend import Backend, Device
from .kerneldef import describe_plugin

if TYPE_CHECKING:
    from .kerneldef import KernelSource
    from .opdef import RegisteredOp

DEFAULT_BACKEND = "numpy"
#: The hooks a plugin may implement.
HOOKS = (
    "plugrad_backends",
    "plugrad_ops",
    "plugrad_kernels",
    "plugrad_communicators",
    "plugrad_plan_passes",
)


class PluginTables:
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
        #: The names of plugrad's own plugins (backends, communicators, op plugins).
        self.builtin_plugins: frozenset[str] = frozenset()
        #: (op, backend) -> kernels from plugrad_kernels hooks, best first.
        self.overrides: dict[tuple[str, str], tuple[KernelSource, ...]] = {}
        self.devices: dict[str, tuple[Device, ...]] = {}
        self.array_types: dict[str, tuple[type, ...]] = {}
        #: backend -> op -> every kernel that could serve it, best (the one used) first.
        self.kernel_sources: dict[str, dict[str, tuple[KernelSource, ...]]] = {}
        self.functions: dict[str, Callable[..., Any]] = {}
        #: Tensor method name -> the op function installed on Tensor under it.
        self.methods: dict[str, Callable[..., Any]] = {}
        #: (op name, method) -> the function installed as that Tensor method.
        self.method_functions: dict[tuple[str, str], Callable[..., Any]] = {}
        #: backend -> kernel -> that kernel with the backend's namespace bound.
        self.bound_kernels: dict[str, dict[Any, Callable[..., Any]]] = {}
        #: lazy backend -> bound kernel -> that kernel settling its inputs and outputs.
        self.settling_kernels: dict[str, dict[Any, Callable[..., Any]]] = {}
        #: Further public function name -> op name.
        self.aliases: dict[str, str] = {}
        self.default_device: Device | None = None
        #: (plugin, rewrite) from plugrad_plan_passes hooks, in registration order.
        self.plan_passes: tuple[tuple[str, Callable[[Any], Any]], ...] = ()


state = PluginTables()
#: The default device inside ``use_backend(...)``: per thread and per asyncio task.
scoped_default_device: contextvars.ContextVar[Device | None] = contextvars.ContextVar(
    "plugrad_default_device", default=None
)


def describe_owner(plugin: str) -> str:
    """``"plugin 'myops' (plugrad-myops 0.1.0)"``, for error messages."""
    return describe_plugin(plugin, *state.distributions.get(plugin, (None, None)))


def op_owner(op: str) -> str:
    """The plugin that declared ``op``, described for error messages."""
    plugin = state.op_owners.get(op)
    return "an unregistered plugin" if plugin is None else describe_owner(plugin)


def third_party_op(op: str) -> bool:
    """Whether ``op`` was declared by a plugin that is not one of plugrad's own."""
    plugin = state.op_owners.get(op)
    return plugin is not None and plugin not in state.builtin_plugins


def device_of_array(obj: Any) -> Device | None:
    """Return the Device holding ``obj`` if it is an array of an active backend, else ``None``."""
    for name, devices in state.devices.items():
        if isinstance(obj, state.array_types[name]):
            if len(devices) == 1:
                return devices[0]
            native = devices[0].backend.device_of(obj)
            return next((d for d in devices if d.native == native), devices[0])
    return None
