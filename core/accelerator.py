"""``plugrad.accelerator``: PyTorch's device-agnostic questions about the machine's
accelerator (``torch.accelerator``), answered for plugrad's GPU backend: a CUDA GPU
through CuPy is the accelerator plugrad knows. PyTorch's tutorials pick their device so::

    accelerator = plugrad.accelerator
    device = accelerator.current_accelerator().type if accelerator.is_available() else "cpu"

CuPy is not imported when it is not installed.
"""

from __future__ import annotations

from . import cuda
from .backend import Device
from .devices import device

__all__ = ["current_accelerator", "device_count", "is_available"]


def is_available() -> bool:
    """Return whether an accelerator (a CUDA GPU, through CuPy) can be used.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.accelerator.is_available() == plugrad.cuda.is_available()
    True
    """
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> Device | None:
    """The accelerator's device (``cuda``, its ``type`` ``"cuda"``), or ``None`` without one.

    ``check_available`` is PyTorch's: plugrad knows an accelerator only where it can be
    used, so either way ``None`` means there is none.

    Examples
    --------
    >>> import plugrad
    >>> accelerator = plugrad.accelerator.current_accelerator()
    >>> accelerator is None or accelerator.type == "cuda"
    True
    """
    return device("cuda") if is_available() else None


def device_count() -> int:
    """Return how many accelerators plugrad can use (0 without one).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.accelerator.device_count() == plugrad.cuda.device_count()
    True
    """
    return cuda.device_count()
