"""Every registered op, built-in or from a plugin, as a function over Tensors.

This module is filled when plugins are loaded: ``plugrad.ops.<name>`` exists
for each registered op. Built-in ops are also in the top-level ``plugrad``
namespace (or ``plugrad.linalg``, ``plugrad.fft``); the neural-network ops
(:mod:`plugrad.plugins.nn`, wrapped by :mod:`plugrad.nn.functional`) and ops
from third-party plugins live here only.
"""

import typing as _typing

# Only ops are public attributes here: what type checkers need is imported for them alone.
if _typing.TYPE_CHECKING:  # the built-in ops as type checkers see them; plugins' ops are untyped
    from collections.abc import Callable
    from typing import Any

    from ._api_ops import *  # noqa: F403

    def __getattr__(name: str) -> Callable[..., Any]: ...
