"""Finding plugins: plugrad's own, then the ``plugrad`` entry-point group.

Built-in backends and op plugins are registered through the same hooks a
third-party package uses. A third-party plugin that fails to import is
reported with a :class:`~plugrad.errors.PluginLoadWarning` and skipped; the
rest keeps working.

Environment variables
---------------------
``PLUGRAD_DISABLE_PLUGIN_AUTOLOAD=1``
    Do not load the ``plugrad`` entry-point group (built-ins still load).
``PLUGRAD_DISABLED_PLUGINS=a,b``
    Do not load the named entry points (they are not even imported).
"""

from __future__ import annotations

import importlib
import os
import warnings
from importlib.metadata import entry_points

import pluggy

from . import hookspecs
from .errors import PluginLoadWarning

__all__ = ["ENTRY_POINT_GROUP", "builtin_plugin_names", "create_plugin_manager"]

ENTRY_POINT_GROUP = "plugrad"


def builtin_plugin_names() -> tuple[str, ...]:
    """The modules registered before any third-party plugin, in this order."""
    from plugrad.backends import BUILTIN_BACKENDS, BUILTIN_COMMUNICATORS
    from plugrad.plugins import BUILTIN_OP_PLUGINS

    return BUILTIN_BACKENDS + BUILTIN_COMMUNICATORS + BUILTIN_OP_PLUGINS


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
    if os.environ.get("PLUGRAD_DISABLE_PLUGIN_AUTOLOAD", "").strip() not in ("", "0"):
        return manager
    disabled = {
        n.strip() for n in os.environ.get("PLUGRAD_DISABLED_PLUGINS", "").split(",") if n.strip()
    }
    if distributions is None:
        distributions = {}
    sources: dict[str, str] = {}  # name -> "distribution version", of each entry point taken
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
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
    return manager
