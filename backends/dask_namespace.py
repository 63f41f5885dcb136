"""The Dask backend's Array API namespace: array-api-compat's, with a reshape that always works.

Dask reshapes an array only where every axis of the result either merges
whole axes of the input or splits one evenly along its chunks; a reshape that
splits one axis and merges others at once (``(n, g * c, h, w)`` to
``(n, g, c, h * w)``, as a grouped convolution does) raises
``NotImplementedError``. The standard's ``reshape`` has no such limit, so this
one falls back to two steps Dask always supports: flatten, then split.
Every other name is array-api-compat's own.
"""

from __future__ import annotations

import importlib
from typing import Any

from array_api_compat.dask.array import *  # noqa: F403
from array_api_compat.dask.array import __array_api_version__, __array_namespace_info__  # noqa: F401

# Typed Any: the module's functions are made at run time, beyond a type checker's sight.
_compat: Any = importlib.import_module("array_api_compat.dask.array")


def __getattr__(name: str) -> Any:
    # Anything not star-exported (e.g. the linalg and fft extensions) is array-api-compat's.
    return getattr(_compat, name)


def __dir__() -> list[str]:
    return sorted(set(dir(_compat)) | {n for n in globals() if not n.startswith("_")})


def reshape(x: Any, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Any:
    try:
        return _compat.reshape(x, shape, copy=copy)
    except NotImplementedError:
        # Flattening merges every axis and splitting one axis into many is always
        # supported; Dask rechunks as each step needs.
        return _compat.reshape(_compat.reshape(x, (-1,), copy=copy), shape, copy=copy)
