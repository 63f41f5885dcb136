"""The plugin plugrad registers (entry point ``myops`` in the ``plugrad`` group)."""

from __future__ import annotations

from plugrad.hookspecs import hookimpl
from plugrad.kerneldef import KernelDef, kernel
from plugrad.opdef import OpDef

from plugrad_myops.kernels import matmul_numpy
from plugrad_myops.ops import smooth_max, softplus


@hookimpl
def plugrad_ops() -> list[OpDef]:
    """New ops: plugrad.ops.softplus and plugrad.ops.smooth_max."""
    return [softplus, smooth_max]


@hookimpl
def plugrad_kernels() -> list[KernelDef]:
    """A faster kernel for plugrad's built-in matmul on the NumPy backend."""
    return [kernel("matmul", backend="numpy", fn=matmul_numpy)]
