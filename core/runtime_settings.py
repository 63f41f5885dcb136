"""Process-wide switches PyTorch code sets: threads, determinism, float32 matmul precision.

``torch.set_num_threads(1)``, ``torch.use_deterministic_algorithms(True)`` and
``torch.set_float32_matmul_precision("high")`` open many training scripts.
Threads are the CPU math library's (through threadpoolctl, where installed:
the ``threads`` extra). The other two change nothing in plugrad: its CPU
kernels give the same results run after run (on a GPU, CuPy's atomic additions
in scatter-adds may not, and this switch does not change them), and it has no
TensorFloat-32 path; they are kept and reported back, so that code reading them
sees what it set.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from .errors import ArgumentError, InvalidArgumentError

__all__ = [
    "are_deterministic_algorithms_enabled",
    "get_float32_matmul_precision",
    "get_num_threads",
    "set_float32_matmul_precision",
    "set_num_threads",
    "use_deterministic_algorithms",
]

_state: dict[str, Any] = {"deterministic": False, "warn_only": False, "precision": "highest"}
_PRECISIONS = ("highest", "high", "medium")


def _threadpools() -> Any:
    try:
        import threadpoolctl  # type: ignore[import-untyped]
    except ImportError:
        return None
    return threadpoolctl


def set_num_threads(count: int) -> None:
    """Use at most ``count`` threads in the CPU math library (BLAS, OpenMP), as PyTorch's.

    Needs threadpoolctl (``pip install 'plugrad[threads]'``); without it a
    warning says the call changed nothing.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.set_num_threads(1)
    >>> plugrad.get_num_threads()
    1
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidArgumentError(f"set_num_threads() takes an int of at least 1, got {count!r}")
    threadpoolctl = _threadpools()
    if threadpoolctl is None:
        warnings.warn(
            "set_num_threads() changed nothing: limiting the math library's threads needs "
            "threadpoolctl (pip install 'plugrad[threads]')",
            RuntimeWarning,
            stacklevel=2,
        )
        return
    threadpoolctl.threadpool_limits(limits=count)
    _state["threads"] = count


def get_num_threads() -> int:
    """The threads the CPU math library may use: the last :func:`set_num_threads`, else the
    most any of its pools has (the number of CPUs without threadpoolctl)."""
    if "threads" in _state:
        return int(_state["threads"])
    threadpoolctl = _threadpools()
    pools = threadpoolctl.threadpool_info() if threadpoolctl is not None else []
    return max((int(pool["num_threads"]) for pool in pools), default=os.cpu_count() or 1)


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Accepted from PyTorch code and kept; it changes no kernel (see the module's text)."""
    if not isinstance(mode, bool) or not isinstance(warn_only, bool):
        raise ArgumentError(
            f"use_deterministic_algorithms() takes bools, got {mode!r} and warn_only={warn_only!r}"
        )
    _state["deterministic"], _state["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """What :func:`use_deterministic_algorithms` was last given (False at first)."""
    return bool(_state["deterministic"])


def set_float32_matmul_precision(precision: str) -> None:
    """Accepted from PyTorch code (``"highest"``, ``"high"``, ``"medium"``); plugrad's
    float32 products are always computed in float32 (``"highest"``)."""
    if precision not in _PRECISIONS:
        raise InvalidArgumentError(
            f"set_float32_matmul_precision() takes one of {', '.join(_PRECISIONS)}, got "
            f"{precision!r}"
        )
    _state["precision"] = precision


def get_float32_matmul_precision() -> str:
    """What :func:`set_float32_matmul_precision` was last given (``"highest"`` at first)."""
    return str(_state["precision"])
