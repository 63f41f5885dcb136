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

This module loads and rebuilds; the work is done by
:mod:`plugrad.plugin_validation` (asking hooks, checking answers),
:mod:`plugrad.backend_activation` (devices and kernel tables),
:mod:`plugrad.function_generation` (public functions and Tensor methods), all
writing :mod:`plugrad.plugin_tables`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import pluggy

from . import anomaly as _anomaly
from . import backend_activation as _activation
from . import checking as _checking
from . import graph as _graph
from .backend_activation import *  # noqa: F403  (re-exported: its __all__ is part of ours)
from .backend_activation import backend_names, install_kernels, resolve_device
from .errors import (
    ArgumentError,
    BackendUnavailableError,
    PluginRegistrationError,
    UnknownBackendError,
)
from .function_generation import install_functions, install_methods
from .opdef import RegisteredOp
from .plugin_manager import builtin_plugin_names, create_plugin_manager, register_whole
from .plugin_tables import (
    DEFAULT_BACKEND,
    describe_owner,
    op_owner,
    scoped_default_device,
    third_party_op,
)
from .plugin_tables import state as _state
from .plugin_validation import (
    check_hooks,
    collect_aliases,
    collect_backends,
    collect_kernels,
    collect_methods,
    collect_ops,
    collect_plan_passes,
    distribution_of,
)

__all__ = [
    "find_op",
    "load",
    "on_rebuild",
    "op_names",
    "register_plugin",
    "scoped_default_device",
    "unregister_plugin",
]
__all__ += _activation.__all__


# -- loading ----------------------------------------------------------------------------

#: Called with no arguments after every rebuild of the tables (see :func:`on_rebuild`).
_rebuild_listeners: list[Callable[[], None]] = []


def on_rebuild(listener: Callable[[], None]) -> None:
    """Call ``listener()`` whenever a plugin's registration changes the op and kernel tables
    (compiled plans, made over the old ones, are forgotten)."""
    _rebuild_listeners.append(listener)


def load() -> None:
    """Load every plugin and build the tables (done once, by ``import plugrad``).

    The default device is ``$PLUGRAD_BACKEND`` (a backend or ``name:index``) if set.
    """
    version = getattr(sys.modules.get("plugrad"), "__version__", None)
    _state.distributions = dict.fromkeys(builtin_plugin_names(), ("plugrad", version))
    _state.manager = create_plugin_manager(_state.failures, _state.distributions)
    if os.environ.get("PLUGRAD_CHECK_PLUGINS", "").strip() not in ("", "0"):
        _checking.set_checks(True)
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
    if plugin is None:  # (pluggy takes None as a blocked plugin, and says so)
        raise PluginRegistrationError(
            "None is not a plugin: register a module or object whose functions (or methods) "
            "are marked @plugrad.hookspecs.hookimpl, e.g. a plugrad_ops() that returns ops"
        )
    if name is None:
        name = getattr(plugin, "__name__", None) or (
            f"{type(plugin).__module__}.{type(plugin).__qualname__}"
        )
    if not isinstance(name, str) or not name:
        raise ArgumentError(f"a plugin name must be a non-empty str, got {name!r}")
    if manager.has_plugin(name):
        raise PluginRegistrationError(
            f"a plugin named {name!r} is already registered ({describe_owner(name)}); "
            "unregister it "
            "first, or register this one under another name"
        )
    if manager.is_registered(plugin):
        raise PluginRegistrationError(
            f"this plugin object is already registered, as {manager.get_name(plugin)!r}"
        )
    try:
        registered = register_whole(manager, plugin, name)
    except pluggy.PluginValidationError as exc:
        detail = " ".join(str(exc).split())
        raise PluginRegistrationError(
            f"plugin {name!r}: {detail}; plugrad's hooks take no arguments"
        ) from exc
    if registered is None:  # pluggy refuses blocked plugins silently
        raise PluginRegistrationError(f"plugin {name!r} is blocked and cannot register")
    known = name in _state.distributions
    if not known and (origin := distribution_of(plugin)) is not None:
        _state.distributions[name] = origin
    try:
        _rebuild(strict={name})
    except BaseException:
        manager.unregister(name=name)
        if not known:
            _state.distributions.pop(name, None)
        # A failure after the new tables were swapped in (installing the functions, the
        # methods) would leave the plugin's ops behind: build them again without it.
        _rebuild()
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
        check_hooks(manager, builtin)
        backends, backend_owners = collect_backends(manager, builtin)
        for name, owner in backend_owners.items():
            # The same plugin's backend keeps its object: active devices point at it.
            if _state.backend_owners.get(name) == owner:
                backends[name] = _state.backends[name]
        ops, op_owners = collect_ops(manager, builtin, backends)
        overrides = collect_kernels(manager, builtin, ops, backends)
        aliases = collect_aliases(ops, op_owners, builtin)
        methods = collect_methods(ops, op_owners, builtin)
        plan_passes = collect_plan_passes(manager, builtin)
        rejected = [n for n in _state.failures if n not in builtin and manager.has_plugin(n)]
        if not rejected:
            break
        for name in rejected:
            manager.unregister(name=name)
    _state.backends, _state.backend_owners = backends, backend_owners
    _state.ops, _state.op_owners = ops, op_owners
    _state.builtin_plugins = frozenset(builtin_plugin_names())
    _state.overrides = overrides
    _state.plan_passes = plan_passes
    for name in list(_state.devices):
        if name in backends:
            install_kernels(backends[name], _state.devices[name])
        else:
            del _state.devices[name]
            _state.kernel_sources.pop(name, None)
    install_functions(set(builtin_plugin_names()), aliases)
    install_methods(methods)
    _graph.op_owner = op_owner
    _graph.third_party_op = third_party_op
    _anomaly.op_plugin = _state.op_owners.get
    _checking.sync_rules(ops, op_owner)
    for listener in _rebuild_listeners:
        listener()


def _refresh_checks() -> None:
    """Reinstall the kernel tables and rules after checking mode was switched."""
    for name, devices in _state.devices.items():
        install_kernels(_state.backends[name], devices)
    _checking.sync_rules(_state.ops, op_owner)


_checking.on_switch(_refresh_checks)


# -- ops ----------------------------------------------------------------------------------


def find_op(name: str) -> RegisteredOp | None:
    """Return the registered op called ``name``, or ``None``."""
    return _state.ops.get(name)


def op_names() -> tuple[str, ...]:
    """Names of all registered ops."""
    return tuple(_state.ops)
