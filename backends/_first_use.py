"""A backend's array library, imported when the backend first needs it, not with plugrad."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["imported_on_first_use"]


def imported_on_first_use(name: str) -> Callable[[], Any]:
    """A function returning the module ``name``, which it imports at its first call.

    A backend calls it wherever it needs its library, so that ``import plugrad``
    imports no backend's library (and one that is not installed fails only when used).
    """
    loaded: Any = None

    def module() -> Any:
        nonlocal loaded
        if loaded is None:
            loaded = importlib.import_module(name)
        return loaded

    return module
