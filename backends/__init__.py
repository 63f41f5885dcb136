"""plugrad's built-in backends, each a pluggy plugin returning a :class:`~plugrad.backend.Backend`.

Third-party backends register the same way, through the ``plugrad`` entry-point group.
"""

from __future__ import annotations

__all__ = ["BUILTIN_BACKENDS"]

#: Backend plugin modules registered at import, before any third-party plugin.
BUILTIN_BACKENDS: tuple[str, ...] = ("plugrad.backends.numpy_backend",)
