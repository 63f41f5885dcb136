"""Finding plugins: plugrad's own, then the ``plugrad`` entry-point group.

Built-in backends and op plugins are registered through the same hooks a
third-party package uses. A third-party plugin that fails to import is
reported with a :class:`~plugrad.errors.PluginLoadWarning` and skipped; the
rest keeps working.

Environment variables
---------------------
``PLUGRAD_DISABLE_PLUGIN_AUTOLOAD=1``
    Do not load the ``plugrad`` entry-point group (built-ins still load).
    ``1``, ``true``, ``yes`` and ``on`` disable autoload; empty, ``0``,
    ``false``, ``no`` and ``off`` leave it on.
``PLUGRAD_DISABLED_PLUGINS=a,b``
    Do not load the named entry points (they are not even imported). A name
    no installed entry point has is reported with a warning.
"""

from __future__ import annotations

import importlib
import os
import warnings
from importlib.metadata import entry_points

import pluggy

from . import hookspecs
from .errors import PluginLoadWarning

__all__ = [
    "BUILTIN_BACKENDS",
    "BUILTIN_COMMUNICATORS",
    "BUILTIN_OP_PLUGINS",
    "ENTRY_POINT_GROUP",
    "autoload_enabled",
    "builtin_plugin_names",
    "create_plugin_manager",
    "disabled_plugin_names",
]

ENTRY_POINT_GROUP = "plugrad"

# plugrad's own plugins, registered by module name before any third-party one (and
# re-exported by plugrad.backends and plugrad.plugins, which hold them): the core
# finds them here by name and never imports those packages itself.
#: Backend plugin modules registered at import, before any third-party plugin.
BUILTIN_BACKENDS: tuple[str, ...] = (
    "plugrad.backends.numpy_backend",
    "plugrad.backends.cupy_backend",
    "plugrad.backends.torch_backend",
    "plugrad.backends.jax_backend",
    "plugrad.backends.dask_backend",
    "plugrad.backends.array_api_strict_backend",
)

#: Communication libraries for plugrad.distributed (the plugrad_communicators hook).
BUILTIN_COMMUNICATORS: tuple[str, ...] = (
    "plugrad.backends.mpi_communicator",
    "plugrad.backends.nccl_communicator",
)

#: Op plugin modules registered at import, after the built-in backends.
BUILTIN_OP_PLUGINS: tuple[str, ...] = (
    "plugrad.plugins.elementwise",
    "plugrad.plugins.statistical",
    "plugrad.plugins.utility",
    "plugrad.plugins.searching",
    "plugrad.plugins.sorting",
    "plugrad.plugins.set_functions",
    "plugrad.plugins.linear_algebra",
    "plugrad.plugins.linalg",
    "plugrad.plugins.fft",
    "plugrad.plugins.nn",
    "plugrad.plugins.convolution",
    "plugrad.plugins.manipulation",
    "plugrad.plugins.indexing",
    "plugrad.plugins.creation",
    "plugrad.plugins.data_types",
)


def builtin_plugin_names() -> tuple[str, ...]:
    """The modules registered before any third-party plugin, in this order."""
    return BUILTIN_BACKENDS + BUILTIN_COMMUNICATORS + BUILTIN_OP_PLUGINS


_AUTOLOAD_OFF = ("1", "true", "yes", "on")
_AUTOLOAD_ON = ("", "0", "false", "no", "off")


def autoload_enabled() -> bool:
    """Whether the ``plugrad`` entry-point group is loaded (``PLUGRAD_DISABLE_PLUGIN_AUTOLOAD``)."""
    value = os.environ.get("PLUGRAD_DISABLE_PLUGIN_AUTOLOAD", "").strip().lower()
    if value in _AUTOLOAD_ON:
        return True
    if value not in _AUTOLOAD_OFF:
        warnings.warn(
            f"PLUGRAD_DISABLE_PLUGIN_AUTOLOAD={value!r} is not understood and disables "
            f"autoload; use one of {', '.join(_AUTOLOAD_OFF)} to disable it, or one of "
            f"{', '.join(repr(v) for v in _AUTOLOAD_ON)} to keep it",
            PluginLoadWarning,
            stacklevel=2,
        )
    return False


def disabled_plugin_names() -> list[str]:
    """The entry-point names listed in ``PLUGRAD_DISABLED_PLUGINS``, in order."""
    names = os.environ.get("PLUGRAD_DISABLED_PLUGINS", "").split(",")
    return [n.strip() for n in names if n.strip()]


def create_plugin_manager(
    failures: dict[str, str], distributions: dict[str, tuple[str, str | None]] | None = None
) -> pluggy.PluginManager:
    """Return a plugin manager with the built-ins and the entry-point plugins registered.

    Entry points that fail to load are recorded in ``failures`` (name -> reason);
    the distribution and version of every entry point found, loaded or not, in
    ``distributions`` (name -> (distribution, version)).
    """
    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    for name in builtin_plugin_names():
        manager.register(importlib.import_module(name), name=name)
    if not autoload_enabled():
        return manager
    disabled = set(disabled_plugin_names())
    found: set[str] = set()
    if distributions is None:
        distributions = {}
    sources: dict[str, str] = {}  # name -> "distribution version", of each entry point taken
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        found.add(entry_point.name)
        if entry_point.name in disabled:
            continue
        dist = entry_point.dist
        dist_name = getattr(dist, "name", None)
        source = f"{dist_name} {dist.version}" if dist_name else "an unknown distribution"
        name = entry_point.name
        if manager.has_plugin(name) or name in sources:
            # Two distributions claim one name: the first keeps it, the second is reported.
            owner = sources.get(name, "plugrad")
            reason = f"the plugin name {name!r} is already taken by {owner}; rename the entry point"
            name = f"{name} ({source})"
        else:
            sources[name] = source
            if dist_name:
                distributions[name] = (dist_name, dist.version)
            try:
                manager.register(entry_point.load(), name=name)
                continue
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}"
        failures[name] = reason
        warnings.warn(
            f"plugrad plugin {name!r} (from {source}, {entry_point.value}) failed to load and "
            f"is skipped: {reason}",
            PluginLoadWarning,
            stacklevel=2,
        )
    unknown = sorted(disabled - found)
    if unknown:
        warnings.warn(
            f"PLUGRAD_DISABLED_PLUGINS names {', '.join(map(repr, unknown))}, which no installed "
            f"plugin is called (installed: {', '.join(sorted(found)) or 'none'}); check the "
            "spelling (the names are those of `plugrad info`)",
            PluginLoadWarning,
            stacklevel=2,
        )
    return manager
