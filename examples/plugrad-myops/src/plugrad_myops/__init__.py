"""plugrad-myops: an example third-party op plugin for plugrad.

Installing the package is all it takes: plugrad finds :mod:`plugrad_myops.plugin`
through the ``plugrad`` entry-point group, and then

- ``plugrad.ops.softplus(x)`` (also ``x.softplus()``) and
  ``plugrad.ops.smooth_max(x1, x2)`` exist, with gradients of any order;
- ``matmul`` on the NumPy backend runs :func:`plugrad_myops.kernels.matmul_numpy`.
"""

from __future__ import annotations

from plugrad_myops.ops import smooth_max, softplus

__all__ = ["smooth_max", "softplus"]
__version__ = "0.1.0"
