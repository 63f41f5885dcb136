"""plugrad's built-in op plugins, one module per section of the Array API standard.

Each module is written exactly as a third-party plugin would write it: one row
per op holding its kernel, backward rules and one-line doc (see
:mod:`plugrad.opdef`), collected by the module's ``plugrad_ops`` hook.

The functions that manage plugins while plugrad runs live in
:mod:`plugrad.plugin_control`; they are reachable here too, as
``plugrad.plugins.register``, ``plugrad.plugins.list_plugins``, ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plugrad.plugin_manager import BUILTIN_OP_PLUGINS

if TYPE_CHECKING:
    from plugrad.plugin_control import *  # noqa: F403

# The plugin-management API of plugrad.plugin_control, also reachable from here.
_MANAGEMENT = frozenset({
    "BackendInfo", "KernelSource", "PluginInfo", "checking", "checks_enabled", "kernel_source",
    "kernel_sources", "list_backends", "list_plugins", "register", "set_checks", "unregister",
})  # fmt: skip

__all__ = ["BUILTIN_OP_PLUGINS", *sorted(_MANAGEMENT)]


def __getattr__(name: str) -> Any:
    # The plugin-management API, imported on first use: the op modules of this package
    # import only the declaration modules, never the registry.
    if name in _MANAGEMENT:
        from plugrad import plugin_control

        return getattr(plugin_control, name)
    raise AttributeError(f"module 'plugrad.plugins' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
