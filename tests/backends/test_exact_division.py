"""Exact floor division and remainder from fmod (used by the CuPy backend), against NumPy's."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from plugrad.backends import exact_division

EDGES = [0.0, -0.0, 0.1, -0.1, 0.4, 1.2, -1.2, 1.0, -1.0, 2.5, 1e17, -1e-300, 7.0, 3.0]
EDGES += [np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_floor_divide_and_remainder_are_numpys(dtype) -> None:
    # CuPy's remainder rounds (x1 - floor(x1 / x2) * x2): remainder(1.2, 0.4) was 1.1e-16.
    pairs = np.array(list(itertools.product(EDGES, EDGES)), dtype=np.float64)
    rng = np.random.default_rng(0)
    pairs = np.concatenate([pairs, rng.normal(scale=10.0, size=(2000, 2))])
    with np.errstate(all="ignore"):  # 1e17 is inf in float16; x / 0 and the like warn
        x1, x2 = pairs[:, 0].astype(dtype), pairs[:, 1].astype(dtype)
        for name in ("floor_divide", "remainder"):
            ours = getattr(exact_division, name)(np, x1, x2)
            theirs = getattr(np, name)(x1, x2)
            assert ours.dtype == theirs.dtype
            # Bit for bit, NaNs and the signs of zeros too.
            np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs), err_msg=name)
            np.testing.assert_array_equal(ours, theirs, err_msg=name)
        # A Python number on either side, as the kernels pass them.
        np.testing.assert_array_equal(
            exact_division.remainder(np, x1, 0.4), np.remainder(x1, dtype(0.4))
        )
        np.testing.assert_array_equal(
            exact_division.floor_divide(np, 1.0, x1[x1 != 0]),
            np.floor_divide(dtype(1.0), x1[x1 != 0]),
        )
