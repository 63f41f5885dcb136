"""PyTorch's ``torch.backends.cudnn`` switches, for code that sets them: plugrad has no cuDNN.

``torch.backends.cudnn.deterministic = True`` and ``benchmark = False`` open many
training scripts. plugrad's kernels (CuPy's on a GPU) do not go through cuDNN,
so the switches change nothing here (its CPU kernels give the same results run
after run; on a GPU CuPy's atomic additions in scatter-adds may not); they keep
what is set, and :func:`is_available` says there is no cuDNN to use.

Examples
--------
>>> import plugrad
>>> plugrad.backends.cudnn.deterministic = True
>>> plugrad.backends.cudnn.benchmark = False
>>> plugrad.backends.cudnn.is_available()
False
"""

from __future__ import annotations

__all__ = ["allow_tf32", "benchmark", "deterministic", "enabled", "is_available", "version"]

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """Whether plugrad uses cuDNN: never."""
    return False


def version() -> None:
    """cuDNN's version, as PyTorch's: ``None`` where it is not used."""
    return None
