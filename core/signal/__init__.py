"""``plugrad.signal``: PyTorch's ``torch.signal``, the window functions of
:mod:`plugrad.signal.windows` (``plugrad.signal.windows.hann(8)``, ...).

Examples
--------
>>> import plugrad
>>> plugrad.signal.windows.bartlett(5)
tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
"""

from __future__ import annotations

from . import windows

__all__ = ["windows"]
