"""``plugrad.cuda``: whether NVIDIA GPUs can be used, as ``torch.cuda`` answers it.

The GPU backend is CuPy's. These functions never import CuPy when it is not installed.
"""

from __future__ import annotations

from .devices import device_count, is_available

__all__ = ["device_count", "is_available"]
