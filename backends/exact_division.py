"""Floor division and remainder of floating-point arrays, exact, from ``fmod``.

``x1 - floor(x1 / x2) * x2`` rounds twice: CuPy computes its ``remainder`` so,
and ``remainder(1.2, 0.4)`` comes out ``1.1e-16`` where NumPy and PyTorch give
``0.3999999999999999`` (the true remainder of the two doubles). ``fmod`` is
exact, and the floor quotient follows from it as NumPy's ``divmod`` takes it.
These take the backend's array module (NumPy's in the tests, CuPy's in use).
"""

from __future__ import annotations

from typing import Any

__all__ = ["floor_divide", "remainder"]


def remainder(xp: Any, x1: Any, x2: Any) -> Any:
    """``x1 mod x2`` with the sign of ``x2`` (Python's ``%``); zero takes ``x2``'s sign."""
    mod = xp.fmod(x1, x2)
    mod = xp.where((mod != 0) & ((x2 < 0) != (mod < 0)), mod + x2, mod)
    return xp.where(mod == 0, xp.copysign(xp.zeros_like(mod), x2), mod)


def floor_divide(xp: Any, x1: Any, x2: Any) -> Any:
    """``floor(x1 / x2)`` of the exact quotient (``1 // 0.1`` is 9, as in Python)."""
    mod = xp.fmod(x1, x2)
    quotient = (x1 - mod) / x2
    # The exact quotient is a whole number minus mod / x2: one less where mod's sign is not
    # x2's; the division above may round it off a whole number, which rounding restores.
    quotient = xp.where((mod != 0) & ((x2 < 0) != (mod < 0)), quotient - 1, quotient)
    floored = xp.floor(quotient)
    floored = xp.where(quotient - floored > 0.5, floored + 1, floored)
    floored = xp.where(quotient == 0, xp.copysign(xp.zeros_like(floored), x1 / x2), floored)
    return xp.where(x2 == 0, x1 / x2, floored)  # inf or NaN, as x1 / x2
