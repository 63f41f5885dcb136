"""Window functions of signal processing, as PyTorch's ``torch.*_window``.

:func:`hann_window`, :func:`hamming_window`, :func:`blackman_window`,
:func:`bartlett_window` and :func:`kaiser_window` make a 1-d tensor of
``window_length`` weights, computed in the dtype asked for on the device asked
for. A periodic window (the default) is the symmetric window one longer with its
last value dropped: what a spectral analysis repeating every ``window_length``
samples needs; a window of one sample is ``[1.0]``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from . import creation as _creation
from . import dtypes as _dtypes
from . import ops as _ops
from .creation import CreationOptions
from .errors import ArgumentError, DtypeError, InvalidArgumentError
from .tensor import Tensor

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"]


def _window(
    function: str,
    window_length: Any,
    periodic: Any,
    options: Mapping[str, Any],
    weights: Callable[[Tensor, int], Tensor],
) -> Tensor:
    """The window ``weights(positions, span)`` of the sample positions ``0 .. window_length -
    1`` and the period ``span`` they cover; ones where it is trivial (no sample, or one)."""
    if isinstance(window_length, bool):
        raise ArgumentError(f"{function}(): window_length must be an int, got bool")
    try:
        length = operator.index(window_length)
    except TypeError:
        raise ArgumentError(
            f"{function}(): window_length must be an int, got {type(window_length).__name__}"
        ) from None
    if length < 0:
        raise InvalidArgumentError(f"{function}(): window_length must be >= 0, got {length}")
    if not isinstance(periodic, bool):
        raise ArgumentError(f"{function}(): periodic must be a bool, got {type(periodic).__name__}")
    dtype, device, backend, requires_grad = _creation.creation_options(function, options)
    dtype = _dtypes.default_float_dtype if dtype is None else dtype
    if dtype.kind != "real floating":
        raise DtypeError(f"{function}(): a window has a real floating dtype, got {dtype.name}")
    if length <= 1:
        window = _creation.ones(length, dtype=dtype, device=device, backend=backend)
    else:
        positions = _creation.arange(length, dtype=dtype, device=device, backend=backend)
        window = weights(positions, length if periodic else length - 1)
    return window.requires_grad_(requires_grad)


def _cosine_sum(coefficients: tuple[float, ...]) -> Callable[[Tensor, int], Tensor]:
    """``a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N) - ...``, the generalized cosine window."""

    def weights(positions: Tensor, span: int) -> Tensor:
        phase = positions * (2.0 * math.pi / span)
        window = _creation.full_like(positions, coefficients[0])
        for order, coefficient in enumerate(coefficients[1:], start=1):
            term = _ops.cos(phase * order) * coefficient
            window = window - term if order % 2 else window + term
        return window

    return weights


def _cosine_window(
    function: str, coefficients: tuple[float, ...], doc: str
) -> Callable[..., Tensor]:
    """A window of fixed cosine ``coefficients`` (see :func:`_cosine_sum`)."""

    def window(
        window_length: int, periodic: bool = True, **options: Unpack[CreationOptions]
    ) -> Tensor:
        return _window(function, window_length, periodic, options, _cosine_sum(coefficients))

    window.__name__ = window.__qualname__ = function
    window.__doc__ = doc
    return window


hann_window = _cosine_window(
    "hann_window",
    (0.5, 0.5),
    """Return the Hann window ``0.5 - 0.5 cos(2 pi n / N)``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.hann_window(4)
    tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """,
)


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    **options: Unpack[CreationOptions],
) -> Tensor:
    """Return the Hamming window ``alpha - beta cos(2 pi n / N)``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.hamming_window(4, periodic=False)
    tensor([0.0800, 0.7700, 0.7700, 0.0800])
    """
    for name, value in (("alpha", alpha), ("beta", beta)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ArgumentError(f"hamming_window(): {name} must be a number, got {value!r}")
    weights = _cosine_sum((float(alpha), float(beta)))
    return _window("hamming_window", window_length, periodic, options, weights)


blackman_window = _cosine_window(
    "blackman_window",
    (0.42, 0.5, 0.08),
    """Return the Blackman window ``0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.blackman_window(5, periodic=False, dtype=plugrad.float64)
    tensor([-1.3878e-17,  3.4000e-01,  1.0000e+00,  3.4000e-01, -1.3878e-17],
           dtype=plugrad.float64)
    """,
)


def bartlett_window(
    window_length: int, periodic: bool = True, **options: Unpack[CreationOptions]
) -> Tensor:
    """Return the Bartlett (triangular) window ``1 - |2 n / N - 1|``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.bartlett_window(5, periodic=False)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """

    def weights(positions: Tensor, span: int) -> Tensor:
        return 1.0 - _ops.abs(positions * (2.0 / span) - 1.0)

    return _window("bartlett_window", window_length, periodic, options, weights)


def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    **options: Unpack[CreationOptions],
) -> Tensor:
    """Return the Kaiser window ``I0(beta * sqrt(1 - (2 n / N - 1)**2)) / I0(beta)``.

    ``I0`` is the modified Bessel function of order 0, summed as its power series
    in Python's floats (every term positive: no cancellation) and rounded once to
    the dtype asked for.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.kaiser_window(5, periodic=False, beta=5.0, dtype=plugrad.float64)
    tensor([0.0367, 0.5529, 1.0000, 0.5529, 0.0367], dtype=plugrad.float64)
    """
    if isinstance(beta, bool) or not isinstance(beta, (int, float)):
        raise ArgumentError(f"kaiser_window(): beta must be a number, got {beta!r}")

    def weights(positions: Tensor, span: int) -> Tensor:
        scale = _bessel_i0(float(beta))
        values = []
        for n in range(positions.shape[0]):
            ratio = n * (2.0 / span) - 1.0
            values.append(_bessel_i0(beta * math.sqrt(max(1.0 - ratio * ratio, 0.0))) / scale)
        return _creation.asarray(values, dtype=positions.dtype, device=positions.device)

    return _window("kaiser_window", window_length, periodic, options, weights)


def _bessel_i0(x: float) -> float:
    """The modified Bessel function of order 0: ``sum_k ((x / 2) ** k / k!) ** 2``."""
    half_squared = x * x / 4.0
    total = term = 1.0
    k = 0
    while term > total * 1e-17:
        k += 1
        term *= half_squared / (k * k)
        total += term
    return total
