"""Backends: where tensors live; each is a pluggy plugin returning a ``Backend``.

plugrad ships ``numpy`` (the default), ``cupy`` (NVIDIA GPUs; ``pip install
'plugrad[cuda]'``) and ``array_api_strict`` (the bare standard, for testing).
Third-party packages add more through the ``plugrad`` entry-point group.
"""

from __future__ import annotations

from dataclasses import dataclass

from plugrad import registry

__all__ = ["BUILTIN_BACKENDS", "BackendStatus", "available", "registered"]

#: Backend plugin modules registered at import, before any third-party plugin.
BUILTIN_BACKENDS: tuple[str, ...] = (
    "plugrad.backends.numpy_backend",
    "plugrad.backends.cupy_backend",
    "plugrad.backends.array_api_strict_backend",
)


@dataclass(frozen=True)
class BackendStatus:
    """One registered backend, as :func:`registered` reports it."""

    #: The name to select it by.
    name: str
    #: The plugin that registered it.
    plugin: str
    #: Whether it can run here.
    available: bool
    #: Why not, if it cannot (a sentence that says how to fix it).
    reason: str | None
    #: Names of its devices (``"cupy:0"``, ...); empty if unavailable.
    devices: tuple[str, ...]


def registered() -> list[BackendStatus]:
    """Every registered backend, available or not, with the reason if not.

    Asking imports each available backend's library.

    Examples
    --------
    >>> import plugrad
    >>> [b.name for b in plugrad.backends.registered() if b.available][:1]
    ['numpy']
    """
    statuses = []
    for name in registry.backend_names():
        reason = registry.backend_status(name)
        devices = (
            () if reason else tuple(d.name for d in registry.devices_of(registry.get_backend(name)))
        )
        statuses.append(
            BackendStatus(name, registry.backend_owner(name), reason is None, reason, devices)
        )
    return statuses


def available() -> tuple[str, ...]:
    """Names of the backends that can run on this machine.

    Examples
    --------
    >>> import plugrad
    >>> "numpy" in plugrad.backends.available()
    True
    """
    return tuple(status.name for status in registered() if status.available)
