"""PyTorch's ``torch.backends.mps`` questions, for code that picks its device: plugrad has no
Metal (Apple GPU) backend.

The usual opening line picks CUDA, then Apple's GPU, then the CPU::

    device = "cuda" if torch.cuda.is_available() else (
        "mps" if torch.backends.mps.is_available() else "cpu")

:func:`is_available` and :func:`is_built` answer that plugrad cannot run there,
so such code goes on to the CPU.

Examples
--------
>>> import plugrad
>>> plugrad.backends.mps.is_available(), plugrad.backends.mps.is_built()
(False, False)
"""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """Whether plugrad can run on an Apple GPU (Metal): never."""
    return False


def is_built() -> bool:
    """Whether plugrad was built with Metal support: never."""
    return False
