"""The namespace backward rules compute with: the backend's, plus plugrad's own ops."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from .plugin_manager import builtin_plugin_names
from .plugin_tables import state as _state


def rule_namespace(namespace: Any, table: dict[str, Callable[..., Any]]) -> types.SimpleNamespace:
    """What rules get: the backend's namespace plus plugrad's non-standard ops.

    A name the standard defines means the backend's own function; any other
    registered op (``scatter_add``, a plugin's op) means plugrad's, even if the
    backend happens to have something else of that name (torch has a
    ``scatter_add`` with another signature). The kernels are bound to the plain
    namespace, so one never finds itself. Built once per table rebuild;
    attribute access is a dict lookup.
    """
    # getattr, not vars(): extensions may be served lazily (array-api-strict's linalg).
    xp = types.SimpleNamespace(**{n: getattr(namespace, n) for n in dir(namespace)})
    for extension in ("linalg", "fft"):
        if extension not in vars(xp) and hasattr(namespace, extension):
            setattr(xp, extension, getattr(namespace, extension))
    builtin = set(builtin_plugin_names())
    for name, kernel in table.items():
        op = _state.ops[name]
        standard = op.standard if op.standard is not None else _state.op_owners[name] in builtin
        if not standard or not hasattr(namespace, name):
            setattr(xp, name, kernel)
    return xp
