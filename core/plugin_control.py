"""Managing plugins while plugrad runs: ``plugrad.plugins.register``, ``list_plugins``, ...

Register and unregister a plugin (for notebooks and tests), list what is
loaded, see which kernel serves an op on a backend, and switch on checking mode
while developing a plugin. Each name here is also reachable as
``plugrad.plugins.<name>``, the path the documentation uses.
"""

from __future__ import annotations

from plugrad import registry as _registry
from plugrad.checking import checking, checks_enabled, set_checks
from plugrad.inventory import (
    BackendInfo,
    PluginInfo,
    kernel_source,
    kernel_sources,
    list_backends,
    list_plugins,
)
from plugrad.kerneldef import KernelSource

__all__ = [
    "BackendInfo",
    "KernelSource",
    "PluginInfo",
    "checking",
    "checks_enabled",
    "kernel_source",
    "kernel_sources",
    "list_backends",
    "list_plugins",
    "register",
    "set_checks",
    "unregister",
]


def register(plugin: object, name: str | None = None) -> str:
    """Register a plugin now, as if it had been installed, and rebuild the dispatch tables.

    For notebooks and tests; an installed package announces its plugin in the
    ``plugrad`` entry-point group instead. The plugin is validated exactly like
    one found at import, but a problem raises instead of warning, and leaves
    plugrad as it was.

    Parameters
    ----------
    plugin : module or object
        Anything with functions (or methods) marked
        :data:`plugrad.hookspecs.hookimpl`.
    name : str, optional
        The name to register it under (for :func:`unregister`, error messages
        and ``plugrad info``). Default: the module's ``__name__``, or the
        object's class.

    Returns
    -------
    str
        The name it was registered under.

    Raises
    ------
    PluginRegistrationError
        The plugin is malformed (an op, a rule's arity, a kernel's signature),
        clashes with what is registered (naming both plugins), implements no
        plugrad hook, or one of its hooks raised.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.hookspecs import hookimpl
    >>> from plugrad.opdef import op
    >>> cube = op("cube", lambda xp, x, /: x * x * x, vjp=lambda xp, g, ans, x: 3 * x * x * g)
    >>> class Cubes:
    ...     @hookimpl
    ...     def plugrad_ops(self):
    ...         return [cube]
    >>> plugrad.plugins.register(Cubes(), name="cubes")
    'cubes'
    >>> x = plugrad.tensor([2.0], requires_grad=True)
    >>> plugrad.ops.cube(x).sum().backward()
    >>> x.grad
    tensor([12.])
    >>> plugrad.plugins.unregister("cubes")
    """
    return _registry.register_plugin(plugin, name)


def unregister(name: str) -> None:
    """Remove a plugin and everything it contributed, and rebuild the dispatch tables.

    Its ops disappear from ``plugrad.ops`` (and from Tensor), and kernels it
    declared stop serving; functions of its ops that were kept raise a
    ``LookupError`` saying so.

    Parameters
    ----------
    name : str
        The name it is registered under (see ``plugrad info``).

    Raises
    ------
    PluginRegistrationError
        No plugin of that name is registered, or it is built into plugrad.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.plugins.unregister("no_such_plugin")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    plugrad.errors.PluginRegistrationError: no plugin named 'no_such_plugin' is registered; ...
    """
    _registry.unregister_plugin(name)
