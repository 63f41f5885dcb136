"""What is loaded: plugins and what each contributes, backends, and which kernel serves each op.

Everything here reads the registry's tables; nothing is loaded or activated
to answer, except that asking which kernel serves an op on an available
backend that has not been used yet asks that backend for its own kernels.
An unavailable backend is only asked why (``unavailable_reason()``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import backend_activation as _backend_activation
from . import registry as _registry
from .backend import Backend, Device
from .errors import BackendUnavailableError, UnknownOpError
from .kerneldef import KernelSource

__all__ = [
    "BackendInfo",
    "PluginInfo",
    "kernel_source",
    "kernel_sources",
    "list_backends",
    "list_plugins",
]


@dataclass(frozen=True)
class PluginInfo:
    """One plugin: where it comes from and what it contributes, or why it failed.

    Attributes
    ----------
    name : str
        The plugin's name (its entry-point name, or the name it was registered under).
    distribution : str or None
        The installed distribution it comes from, where known.
    version : str or None
        That distribution's version.
    builtin : bool
        Whether it is part of plugrad itself.
    failure : str or None
        Why it was skipped; ``None`` for a loaded plugin.
    backends : tuple of str
        The backends it registered.
    ops : tuple of str
        The ops it registered.
    kernels : tuple of KernelSource
        The kernels for existing ops it declared (``plugrad_kernels``), whether
        or not they won.
    methods : tuple of str
        The Tensor methods its ops became.
    aliases : tuple of (str, str)
        The further names of its ops' functions, as ``(alias, op)`` pairs
        (``("dot", "matmul")``: ``plugrad.dot``, or ``plugrad.ops.<alias>`` for
        a third-party plugin's op).
    plan_passes : tuple of str
        The dotted names of the plan passes it registered
        (``plugrad_plan_passes``), in the order they run.
    """

    name: str
    distribution: str | None
    version: str | None
    builtin: bool
    failure: str | None = None
    backends: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    kernels: tuple[KernelSource, ...] = ()
    methods: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()
    plan_passes: tuple[str, ...] = ()


@dataclass(frozen=True)
class BackendInfo:
    """One registered backend.

    Attributes
    ----------
    name : str
        The backend's name.
    plugin : str
        The plugin that registered it.
    available : bool
        Whether it can run here.
    reason : str or None
        Why not, for an unavailable backend.
    devices : tuple of str
        Its devices as plugrad names them (``"numpy"``, ``"cupy:0"``, ...);
        empty if unavailable.
    default : bool
        Whether new tensors are created on it by default.
    """

    name: str
    plugin: str
    available: bool
    reason: str | None
    devices: tuple[str, ...]
    default: bool


def list_plugins() -> tuple[PluginInfo, ...]:
    """Every plugin: the registered ones in registration order, then the failed ones.

    Returns
    -------
    tuple of PluginInfo

    Examples
    --------
    >>> import plugrad
    >>> info = {p.name: p for p in plugrad.plugins.list_plugins()}
    >>> products = info["plugrad.plugins.matrix_products"]
    >>> "matmul" in products.ops, products.distribution, products.builtin
    (True, 'plugrad', True)
    >>> ("dot", "matmul") in products.aliases
    True
    """
    state = _registry._state
    assert state.manager is not None, "plugrad has not finished loading"
    builtin = set(_registry.builtin_plugin_names())
    methods: dict[str, list[str]] = {}  # op -> every method it became (add, add_, __add__...)
    for method, op in _method_ops().items():
        methods.setdefault(op, []).append(method)
    plugins = []
    for name, plugin in state.manager.list_name_plugin():
        if plugin is None:
            continue
        dist, version = state.distributions.get(name, (None, None))
        ops = tuple(op for op, owner in state.op_owners.items() if owner == name)
        owned = set(ops)
        plugins.append(
            PluginInfo(
                name,
                dist,
                version,
                name in builtin,
                backends=tuple(b for b, owner in state.backend_owners.items() if owner == name),
                ops=ops,
                kernels=tuple(
                    s for sources in state.overrides.values() for s in sources if s.plugin == name
                ),
                methods=tuple(method for op in ops for method in methods.get(op, ())),
                aliases=tuple((alias, op) for alias, op in state.aliases.items() if op in owned),
                plan_passes=tuple(
                    _dotted_name(rewrite) for owner, rewrite in state.plan_passes if owner == name
                ),
            )
        )
    for name, reason in state.failures.items():
        if not state.manager.has_plugin(name):
            dist, version = state.distributions.get(name, (None, None))
            plugins.append(PluginInfo(name, dist, version, False, failure=reason))
    return tuple(plugins)


def _dotted_name(function: Callable[..., Any]) -> str:
    """``"package.module.function"``: where a plan pass is defined."""
    module = getattr(function, "__module__", None) or "?"
    return f"{module}.{getattr(function, '__qualname__', type(function).__qualname__)}"


def _method_ops() -> dict[str, str]:
    methods: dict[str, Any] = _registry._state.methods  # op functions: they carry __op__
    return {method: function.__op__.name for method, function in methods.items()}


def list_backends() -> tuple[BackendInfo, ...]:
    """Every registered backend, available or not, with its devices or the reason.

    Unavailable backends are only asked why; nothing of theirs is imported. An
    available one that is not active yet has its namespace imported and its
    devices listed (no kernel tables are built): a library that fails to
    import or has no device is listed unavailable, with the reason.

    Returns
    -------
    tuple of BackendInfo

    Examples
    --------
    >>> import plugrad
    >>> numpy = {b.name: b for b in plugrad.plugins.list_backends()}["numpy"]
    >>> numpy.available, numpy.reason
    (True, None)
    """
    state = _registry._state
    default = _registry.default_device().backend.name
    backends = []
    for name, backend in state.backends.items():
        try:
            reason = backend.unavailable_reason()
        except Exception as exc:  # a broken backend plugin is described, not propagated
            reason = f"unavailable_reason() raised {type(exc).__name__}: {exc}"
        devices: tuple[str, ...] = ()
        active = state.devices.get(name)
        if reason is None and active is not None:
            devices = tuple(d.name for d in active)
        elif reason is None:
            # What activation would find, without building its tables: a namespace
            # that fails to import, or no device, makes the backend unavailable.
            try:
                backend.namespace()
            except Exception as exc:
                reason = f"namespace() raised {type(exc).__name__}: {exc}"
            else:
                try:
                    natives = tuple(backend.devices())
                    devices = tuple(backend.device_names(natives))
                except Exception as exc:
                    reason = f"devices() raised {type(exc).__name__}: {exc}"
                else:
                    if not devices:
                        reason = "its library reports no device it can run on here"
        owner = state.backend_owners[name]
        backends.append(BackendInfo(name, owner, reason is None, reason, devices, name == default))
    return tuple(backends)


def kernel_sources(
    op: str | Callable[..., Any], backend: str | Backend | Device | None = None
) -> tuple[KernelSource, ...]:
    """Every kernel that could compute ``op`` on ``backend``, the one that does first.

    Parameters
    ----------
    op : str or callable
        The op's name, or its function (``plugrad.matmul``, ``plugrad.ops.name``).
    backend : str, Backend or Device, optional
        A backend name (``"numpy"``; a device such as ``"cupy:1"`` means its
        backend). Default: the default device's backend.

    Returns
    -------
    tuple of KernelSource
        Best first; the rest are what the first shadows, in precedence order.

    Raises
    ------
    UnknownOpError
        No op of that name is registered.
    BackendUnavailableError
        The backend cannot run here, so nothing serves the op on it.

    Examples
    --------
    >>> import plugrad
    >>> [s.kind for s in plugrad.plugins.kernel_sources("exp", "numpy")]
    ['generic']
    """
    name = getattr(getattr(op, "__op__", None), "name", op)
    definition = _registry.find_op(name) if isinstance(name, str) else None
    if definition is None:
        raise UnknownOpError(
            f"no op named {name!r} is registered; see plugrad.registry.op_names() or "
            "`plugrad info --ops` for the registered ones"
        )
    if backend is None:
        backend = _registry.default_device().backend
    elif isinstance(backend, Device):
        backend = backend.backend
    elif isinstance(backend, str):
        backend = _registry.get_backend(backend.partition(":")[0])
    state = _registry._state
    active = state.kernel_sources.get(backend.name)
    if active is not None:
        return active[definition.name]
    reason = backend.unavailable_reason()
    if reason is not None:
        raise BackendUnavailableError(
            f"backend {backend.name!r} is not available ({reason}), so no kernel serves "
            f"{name!r} on it here"
        )
    return _backend_activation.kernel_candidates(definition, backend.name, dict(backend.kernels()))


def kernel_source(
    op: str | Callable[..., Any], backend: str | Backend | Device | None = None
) -> KernelSource:
    """Which kernel computes ``op`` on ``backend``, and which plugin it comes from.

    Parameters
    ----------
    op : str or callable
        The op's name, or its function (``plugrad.matmul``).
    backend : str, Backend or Device, optional
        A backend name; default: the default device's backend.

    Returns
    -------
    KernelSource
        ``kind`` (``"override"``, ``"op"``, ``"backend"`` or ``"generic"``),
        ``plugin``, ``distribution``, ``version`` and the ``function`` itself.

    See Also
    --------
    kernel_sources : also the kernels it shadows.

    Examples
    --------
    >>> import plugrad
    >>> source = plugrad.plugins.kernel_source("matmul", "numpy")
    >>> source.kind, source.plugin, source.distribution
    ('generic', 'plugrad.plugins.matrix_products', 'plugrad')
    """
    return kernel_sources(op, backend)[0]
