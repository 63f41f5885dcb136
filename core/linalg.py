"""The Array API ``linalg`` extension: ``plugrad.linalg.det``, ``plugrad.linalg.svd``, ...

The functions of this module are generated from the built-in op plugin
:mod:`plugrad.plugins.linalg_extension` when plugrad loads its plugins, like every other
op function; the four functions the standard also places in the main namespace
(``matmul``, ``matrix_transpose``, ``tensordot``, ``vecdot``) are the same
objects as ``plugrad.matmul`` and so on.

Backward rules reach these functions as ``xp.linalg.<name>``, which means the
same thing with raw backend arrays and, under ``create_graph=True``, with Tensors.
"""

from __future__ import annotations

import sys
import typing as _typing
from typing import Any

if _typing.TYPE_CHECKING:  # the functions plugin loading installs, as type checkers see them
    from ._api_linalg import *  # noqa: F403

_SHARED = ("matmul", "matrix_transpose", "tensordot", "vecdot")


def __getattr__(name: str) -> Any:
    if name in _SHARED:
        return getattr(sys.modules["plugrad"], name)
    raise AttributeError(f"module 'plugrad.linalg' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SHARED})
