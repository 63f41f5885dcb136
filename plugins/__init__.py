"""plugrad's built-in ops, written exactly as a third-party op plugin would write them.

The modules follow the sections of the Array API standard. Each op's kernel,
backward rules and docstring sit together in one row of its module.
"""

from __future__ import annotations

__all__ = ["BUILTIN_OP_PLUGINS"]

#: Op plugin modules registered at import, after the built-in backends.
BUILTIN_OP_PLUGINS: tuple[str, ...] = (
    "plugrad.plugins.elementwise",
    "plugrad.plugins.statistical",
    "plugrad.plugins.utility",
    "plugrad.plugins.searching",
    "plugrad.plugins.sorting",
    "plugrad.plugins.set_functions",
    "plugrad.plugins.linear_algebra",
    "plugrad.plugins.linalg",
    "plugrad.plugins.fft",
    "plugrad.plugins.manipulation",
    "plugrad.plugins.indexing",
    "plugrad.plugins.creation",
    "plugrad.plugins.data_types",
)
