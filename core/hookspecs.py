"""The hooks through which plugins extend plugrad.

plugrad is a pluggy host with the project name ``"plugrad"``. A plugin is any
module or object with functions marked ``@hookimpl`` whose names match the
specifications below. plugrad's own backends and ops are plugins of exactly
this kind. A third-party package makes its plugin known through the
``plugrad`` entry-point group::

    # pyproject.toml of the plugin package
    [project.entry-points.plugrad]
    myops = "plugrad_myops.plugin"

Hooks are called once, when plugins are loaded (at ``import plugrad``, and
again when a plugin is registered or unregistered at run time). Their answers
are validated and frozen into plain tables; no hook is ever called on the
per-op path.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from .backend import Backend
    from .opdef import OpDef

__all__ = ["hookimpl", "hookspec", "plugrad_backends", "plugrad_ops"]

PROJECT_NAME = "plugrad"

#: Marks a function in a plugin as the implementation of a plugrad hook.
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
#: Marks a hook specification (for plugrad itself).
hookspec = pluggy.HookspecMarker(PROJECT_NAME)


@hookspec
def plugrad_backends() -> Iterable[Backend]:
    """Return the backends this plugin provides.

    Called once per plugin when plugins are loaded. Each backend is an
    instance of a :class:`plugrad.backend.Backend` subclass. It is only a
    description: plugrad imports its library (``Backend.namespace()``) when the
    backend is first used, so a plugin for a library that is not installed
    costs nothing and is listed with the reason it is unavailable.

    Returns
    -------
    iterable of Backend
        The backends. Two backends with one name are rejected, naming both plugins.

    Examples
    --------
    ::

        from plugrad.hookspecs import hookimpl

        @hookimpl
        def plugrad_backends():
            return [MyBackend()]
    """


@hookspec
def plugrad_ops() -> Iterable[OpDef]:
    """Return the ops this plugin provides.

    Called once per plugin when plugins are loaded. Each op is an
    :class:`plugrad.opdef.OpDef` made with :func:`plugrad.opdef.op`: a
    generic kernel written against an Array API namespace, optional
    backend-specific kernels, and one backward rule per input (or
    ``differentiable=False``). Every op is validated when it is registered: a
    malformed op, a rule whose arity does not match, or a name another plugin
    already registered rejects this plugin's ops with an error that names the
    plugin and the op; the rest of plugrad keeps working.

    Returns
    -------
    iterable of OpDef
        The ops. Each becomes ``plugrad.ops.<name>``.

    Examples
    --------
    ::

        from plugrad.hookspecs import hookimpl
        from plugrad.opdef import op

        cube = op("cube", lambda xp, x, /: x * x * x, saves=("x",))
        cube.vjp(lambda xp, g, ans, x: 3 * x * x * g)

        @hookimpl
        def plugrad_ops():
            return [cube]
    """
