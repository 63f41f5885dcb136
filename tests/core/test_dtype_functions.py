"""result_type, promote_types, finfo and iinfo of dtypes alone need no backend that holds them.

Their answers are the same in every library, so they hold under any default
backend, array-api-strict's (which has no float16) included.
"""

from __future__ import annotations

import itertools

import pytest

import plugrad

FLOATING = ["float16", "float32", "float64", "complex64", "complex128"]
# NumPy's and PyTorch's promotion of floating dtypes (the wider precision; complex if either is).
EXPECTED = {
    ("float16", "float32"): "float32",
    ("float16", "float64"): "float64",
    ("float16", "complex64"): "complex64",
    ("float16", "complex128"): "complex128",
    ("float32", "float64"): "float64",
    ("float32", "complex64"): "complex64",
    ("float32", "complex128"): "complex128",
    ("float64", "complex64"): "complex128",
    ("float64", "complex128"): "complex128",
    ("complex64", "complex128"): "complex128",
}


@pytest.mark.parametrize(("first", "second"), list(itertools.product(FLOATING, FLOATING)))
def test_floating_dtypes_promote_without_a_backend(first: str, second: str) -> None:
    expected = first if first == second else EXPECTED.get((first, second))
    expected = expected or EXPECTED[second, first]
    for function in (plugrad.result_type, plugrad.promote_types):
        assert function(getattr(plugrad, first), getattr(plugrad, second)).name == expected


def test_limits_of_a_dtype_the_default_backend_lacks() -> None:
    info = plugrad.finfo(plugrad.float16)
    assert (info.bits, info.eps, info.max) == (16, 2.0**-10, 65504.0)
    assert plugrad.iinfo(plugrad.uint64).max == 2**64 - 1


def test_limits_of_bfloat16_whatever_backend_is_the_default() -> None:
    # NumPy, the fallback for a dtype the default backend lacks, has no bfloat16: a DtypeError.
    info = plugrad.finfo(plugrad.bfloat16)
    largest = 3.3895313892515355e38
    assert (info.bits, info.eps, info.max, info.min) == (16, 2.0**-7, largest, -largest)
    assert info.smallest_normal == info.tiny == 2.0**-126
    assert info.resolution == 0.01 and info.dtype is plugrad.bfloat16
    torch = pytest.importorskip("torch")
    theirs = torch.finfo(torch.bfloat16)
    for limit in ("eps", "max", "min", "tiny", "resolution"):
        assert getattr(info, limit) == getattr(theirs, limit), limit


def test_finfo_without_a_dtype_is_that_of_the_default_float_dtype() -> None:
    assert plugrad.finfo().dtype == plugrad.float32 and plugrad.finfo().eps == 2.0**-23
    plugrad.set_default_dtype(plugrad.float64)
    try:
        assert plugrad.finfo().dtype == plugrad.float64
    finally:
        plugrad.set_default_dtype(plugrad.float32)
