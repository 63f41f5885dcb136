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
import inspect
import os
import sys
import traceback
import types
import warnings
from importlib.metadata import entry_points
from typing import Any

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
    "register_whole",
    "warn_about_plugin",
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
    "plugrad.plugins.matrix_products",
    "plugrad.plugins.linalg_extension",
    "plugrad.plugins.fft",
    "plugrad.plugins.nn",
    "plugrad.plugins.special",
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
        warn_about_plugin(
            f"PLUGRAD_DISABLE_PLUGIN_AUTOLOAD={value!r} is not understood and disables "
            f"autoload; use one of {', '.join(_AUTOLOAD_OFF)} to disable it, or one of "
            f"{', '.join(repr(v) for v in _AUTOLOAD_ON)} to keep it"
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
        dist_version = getattr(dist, "version", None)
        source = f"{dist_name} {dist_version}" if dist_name else "an unknown distribution"
        name = entry_point.name
        error: BaseException | None = None
        if manager.has_plugin(name) or name in sources:
            # Two distributions claim one name: the first keeps it, the second is reported.
            owner = sources.get(name, "plugrad")
            reason = f"the plugin name {name!r} is already taken by {owner}; rename the entry point"
            name = f"{name} ({source})"
        else:
            sources[name] = source
            if dist_name:
                distributions[name] = (dist_name, dist_version)
            try:
                register_whole(manager, entry_point.load(), name)
                continue
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}"
                error = exc
        failures[name] = reason
        warn_about_plugin(
            f"plugrad plugin {name!r} (from {source}, {entry_point.value}) failed to load and "
            f"is skipped: {reason}",
            error=error,
            package=entry_point.module,
        )
    unknown = sorted(disabled - found)
    if unknown:
        warn_about_plugin(
            f"PLUGRAD_DISABLED_PLUGINS names {', '.join(map(repr, unknown))}, which no installed "
            f"plugin is called (installed: {', '.join(sorted(found)) or 'none'}); check the "
            "spelling (the names are those of `plugrad info`)"
        )
    return manager


def register_whole(manager: pluggy.PluginManager, plugin: object, name: str) -> str | None:
    """``manager.register(plugin, name=name)``, leaving nothing behind when it fails.

    pluggy before 1.7 keeps a plugin whose hooks fail validation registered.
    """
    try:
        return manager.register(plugin, name=name)
    except BaseException:
        if manager.has_plugin(name) and manager.get_plugin(name) is plugin:
            manager.unregister(name=name)
        raise


def warn_about_plugin(
    message: str,
    *,
    error: BaseException | None = None,
    package: str | None = None,
    plugin: object = None,
) -> None:
    """Issue a :class:`~plugrad.errors.PluginLoadWarning` pointing at the line to fix.

    The warning's file and line are, in this order of preference: the line in
    ``package`` (a module name; its top-level package counts) where ``error``
    was raised; the first hook function of ``plugin``; otherwise the line of the
    program outside plugrad that started plugin loading (its ``import plugrad``,
    say). Never a line inside plugrad, which the reader cannot change.
    """
    where = _raised_at(error, package) if error is not None else None
    if where is None and plugin is not None:
        where = _hook_definition(plugin)
    if where is None:
        where = _caller_outside_plugrad()
    filename, lineno, module_globals = where
    registry = module_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit(
        message,
        PluginLoadWarning,
        filename,
        lineno,
        module=str(module_globals.get("__name__", filename)),
        registry=registry,
        # Lets the warning show the line's source; only files have one to read.
        module_globals=module_globals if os.path.isfile(filename) else None,
    )


_Location = tuple[str, int, dict[str, Any]]


def _is_internal(frame: types.FrameType) -> bool:
    """Whether ``frame`` runs plugrad's own code or Python's import machinery."""
    module = str(frame.f_globals.get("__name__", ""))
    return (
        module == "plugrad"
        or module.startswith(("plugrad.", "importlib", "pluggy"))
        or frame.f_code.co_filename.startswith("<frozen ")
    )


def _raised_at(error: BaseException, package: str | None) -> _Location | None:
    """The innermost line of ``package`` (else of any non-plugrad code) ``error`` came through."""
    frames = [frame for frame, _ in traceback.walk_tb(error.__traceback__)]
    lines = {id(frame): line for frame, line in traceback.walk_tb(error.__traceback__)}
    outside = [f for f in frames if not _is_internal(f)]
    top = (package or "").partition(".")[0]
    own = [f for f in outside if str(f.f_globals.get("__name__", "")).partition(".")[0] == top]
    for candidates in (own, outside):
        if candidates:
            frame = candidates[-1]
            return frame.f_code.co_filename, lines[id(frame)], frame.f_globals
    return None


def _hook_definition(plugin: object) -> _Location | None:
    """Where the first of ``plugin``'s plugrad hook functions is defined."""
    for name in sorted(dir(plugin)):
        function = getattr(getattr(plugin, name, None), "__func__", None) or getattr(
            plugin, name, None
        )
        if not name.startswith("plugrad_") or not inspect.isfunction(function):
            continue
        code = function.__code__
        module = sys.modules.get(function.__module__)
        module_globals = vars(module) if module is not None else function.__globals__
        return code.co_filename, code.co_firstlineno, module_globals
    return None


def _caller_outside_plugrad() -> _Location:
    frame = sys._getframe(1)
    while frame.f_back is not None and _is_internal(frame):
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno, frame.f_globals
