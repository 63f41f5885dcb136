"""The error function and its complement, evaluated with the standard's functions alone.

The standard has neither; these evaluate them from polynomial fits accurate to
a few units in the last place of float64, for the ops ``erf`` and ``erfc`` and
for other kernels that need them (GELU, ``erfinv``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ERFC_ZERO_BEYOND", "erf_values", "erfc_values", "horner"]

# erf(z) / z as a polynomial in s = z**2 on [0, 1] (highest degree first), and
# erfc(z) * exp(z**2) / t as a polynomial in t = 2 / (2 + z) for z >= 1: Chebyshev
# fits of degree 13 and 18, computed in 50-digit arithmetic; the relative error
# of each, evaluated in float64, is below 5e-16 (exp(-z**2) adds up to 6e-14).
_ERF_SMALL = (
    -4.230945824295338e-12, 8.709045129053106e-11, -1.216456005728345e-09,
    1.4792401209404813e-08, -1.6364642158167616e-07, 1.6462045441468418e-06,
    -1.4925647567519332e-05, 0.00012055332902888736, -0.000854832702193483,
    0.0052239776254232985, -0.02686617064512984, 0.1128379167095512,
    -0.37612638903183754, 1.1283791670955126,
)  # fmt: skip
_ERFC_LARGE = (
    0.16011183315835462, -1.016032846160958, 2.8377754063004605, -4.488654022742511,
    4.256126244643616, -2.2856772487394514, 0.5129466393985056, 0.05400584004239607,
    -0.08646508837800025, 0.12187290083755023, -0.026976934892471403,
    -0.04816057578972332, -0.05763512463946403, -0.004297891298056613,
    0.08373693562898663, 0.17630988457732602, 0.246832915272764, 0.28209479248335295,
    0.28209479176562435,
)  # fmt: skip
# erfc(z) is below the smallest float64 beyond this (and 0 at it: exp(-z * z) underflows);
# clamping keeps z * z finite. At 27, erfc(inf) was erfc(27), a subnormal 5e-319.
ERFC_ZERO_BEYOND = 27.3


def horner(coefficients: tuple[float, ...], u: Any) -> Any:
    result = coefficients[0] * u + coefficients[1]
    for c in coefficients[2:]:
        result = result * u + c
    return result


def erfc_values(xp: Any, x: Any, /) -> Any:
    a = xp.minimum(xp.abs(x), ERFC_ZERO_BEYOND)
    s = xp.minimum(a * a, 1.0)
    near_zero = 1.0 - a * horner(_ERF_SMALL, s)
    t = 2.0 / (2.0 + a)
    tail = t * xp.exp(-(a * a)) * horner(_ERFC_LARGE, t)
    positive = xp.where(a < 1.0, near_zero, tail)
    return xp.where(x < 0, 2.0 - positive, positive)


def erf_values(xp: Any, x: Any, /) -> Any:
    a = xp.minimum(xp.abs(x), ERFC_ZERO_BEYOND)
    s = xp.minimum(a * a, 1.0)
    near_zero = x * horner(_ERF_SMALL, s)  # exact relative accuracy near 0
    t = 2.0 / (2.0 + a)
    beyond_one = 1.0 - t * xp.exp(-(a * a)) * horner(_ERFC_LARGE, t)
    return xp.where(a < 1.0, near_zero, xp.where(x < 0, -beyond_one, beyond_one))
