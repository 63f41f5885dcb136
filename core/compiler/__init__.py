"""Capture a function once, replay it as straight-line code over the backend namespace.

See :func:`plugrad.compile`.
"""

from __future__ import annotations

from .function import CompiledFunction, compile

__all__ = ["CompiledFunction", "compile"]
