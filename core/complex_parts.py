"""Complex values made from their real and imaginary parts, in any array namespace.

``real + imag * 1j`` is wrong where ``imag`` is not finite: in complex arithmetic
``inf * 1j`` is ``nan + inf j``, which would turn the real part into nan; and it
loses signed zeros (``-1.0 + -0.0 * 1j`` is ``-1 + 0j``), which puts ``sqrt``,
``log`` and ``angle`` on the wrong side of their branch cut. The one function here
builds the value exactly, on arrays with their backend's namespace or on tensors
with plugrad's, unrecorded (``plugrad.complex`` gives it its gradient).
"""

from __future__ import annotations

import math
from typing import Any


def assembled(xp: Any, real: Any, imag: Any, dtype: Any) -> Any:
    """``real + imag * 1j`` in the complex ``dtype``, exact where ``imag`` is inf or nan."""
    finite = xp.isfinite(imag)
    as_complex = xp.astype(real, dtype)
    z = as_complex + xp.astype(xp.where(finite, imag, xp.zeros_like(imag)), dtype) * 1j
    # A non-finite imaginary part is added as 0 + inf j (or nan j): the real part stays.
    unusual = xp.where(
        xp.isnan(imag),
        xp.full_like(imag, complex(0.0, math.nan), dtype=dtype),
        xp.where(
            imag > 0,
            xp.full_like(imag, complex(0.0, math.inf), dtype=dtype),
            xp.full_like(imag, complex(0.0, -math.inf), dtype=dtype),
        ),
    )
    z = xp.where(finite, z, as_complex + unusual)
    # The zeros' signs, which the additions above turned to +0: -conj(z) changes the sign
    # of the real part alone, conj(z) that of the imaginary part.
    z = xp.where(_sign_lost(xp, xp.real(z), real), -xp.conj(z), z)
    return xp.where(_sign_lost(xp, xp.imag(z), imag), xp.conj(z), z)


def _sign_lost(xp: Any, made: Any, wanted: Any) -> Any:
    """Where ``made`` is a zero of the other sign than ``wanted``'s."""
    return (made == 0) & (xp.signbit(made) != xp.signbit(wanted))
