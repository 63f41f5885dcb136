"""The orthogonal polynomials of ``plugrad.special`` at high degrees: the recurrence's bound
(a typed error instead of a loop that does not end), its cost per degree, and agreement
with ``torch.special`` up to degrees of some thousands, in float32 and float64."""

from __future__ import annotations

import math

import numpy as np
import pytest

import plugrad
from plugrad import orthogonal_polynomials
from plugrad.errors import NotSupportedError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

BACKENDS = backends_under_test()
#: The highest degree the recurrence runs to (documented in the module).
LIMIT = 100_000
RECURRING = [
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
]
CHEBYSHEV = [f"{shift}chebyshev_polynomial_{kind}" for shift in ("", "shifted_") for kind in "tuvw"]
inf, nan = math.inf, math.nan


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", RECURRING)
def test_a_degree_above_the_limit_is_refused(name: str, backend: str) -> None:
    function = getattr(plugrad.special, name)
    with plugrad.use_backend(backend):
        x = plugrad.tensor([0.5, -0.25])
        # (before, LIMIT + 1 took many seconds, and 1e20 never returned)
        for degree, shown in [(LIMIT + 1, LIMIT + 1), (1e20, 10**20)]:
            with pytest.raises(NotSupportedError) as caught:
                function(x, degree)
            message = str(caught.value)
            assert f"special.{name}: degree {shown} is above {LIMIT}" in message
            assert f"use degrees of at most {LIMIT}" in message
        # a tensor of degrees: its largest where the recurrence runs counts
        with pytest.raises(NotImplementedError, match=f"degree {LIMIT + 5} is above"):
            function(x, plugrad.tensor([3, LIMIT + 5]))


@pytest.mark.parametrize("name", RECURRING)
def test_the_limit_itself_runs(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert orthogonal_polynomials._MAX_DEGREE == LIMIT
    monkeypatch.setattr(orthogonal_polynomials, "_MAX_DEGREE", 30)  # (the real one: ~1 s)
    function = getattr(plugrad.special, name)
    x = np.linspace(-2, 2, 7)
    mine = function(plugrad.tensor(x, dtype=plugrad.float64), 30).numpy()
    expected = getattr(torch.special, name)(torch.tensor(x), 30).numpy()
    np.testing.assert_allclose(mine, expected, rtol=1e-13)
    with pytest.raises(NotSupportedError, match="degree 31 is above 30"):
        function(plugrad.tensor(x), 31)


@pytest.mark.parametrize("name", RECURRING + CHEBYSHEV)
def test_degrees_the_recurrence_skips_are_not_bounded(name: str) -> None:
    function = getattr(plugrad.special, name)
    if name in CHEBYSHEV:  # in closed form at any degree, inside [-1, 1] and beyond it
        x = np.array([0.8, 0.3, 0.6, 1.5, -4.0, 3.0])  # (also within [0, 1] and beyond)
        mine = function(plugrad.tensor(x, dtype=plugrad.float64), 10.0**7).numpy()
        assert np.isfinite(mine[:3]).all() and (np.abs(mine[:3]) <= 10.0**8).all()
        assert np.isinf(mine[3:]).all()
        return
    # x = NaN, beyond 2**256 (the leading term), and n < 0, inf, NaN: no recurrence
    x = np.array([nan, 1e300, -1e300, 0.75, 2.0, -3.0])
    n = np.array([1e20, 1e20, 2e20, -1e20, inf, nan])
    expected = [nan, inf, inf, 0.0, 0.0, 0.0]
    if name == "legendre_polynomial_p":  # and x = +-1, Legendre's exact values
        x, n, expected = np.append(x, [1.0, -1.0]), np.append(n, [1e20, 3e20]), [*expected, 1, 1]
    mine = function(plugrad.tensor(x, dtype=plugrad.float64), plugrad.tensor(n)).numpy()
    np.testing.assert_array_equal(mine, expected)
    # PyTorch's 0 for n < 0, inf and NaN (not at n = 1e20: its float -> int64 cast overflows)
    got = getattr(torch.special, name)(torch.tensor(x[3:6]), torch.tensor(n[3:6])).numpy()
    assert got.tolist() == [0.0, 0.0, 0.0]


def test_the_loop_does_not_dispatch_tensor_operations_per_degree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The cost per degree is what made high degrees slow: count the module's tensor
    # operations (a measure of work that no machine's speed changes) at two degrees.
    calls = [0]

    class Counting:
        def __getattr__(self, attribute: str) -> object:
            operation = getattr(plugrad.ops, attribute)

            def counted(*args: object, **kwargs: object) -> object:
                calls[0] += 1
                return operation(*args, **kwargs)

            return counted

    monkeypatch.setattr(orthogonal_polynomials, "_ops", Counting())
    x = plugrad.tensor(np.linspace(-2, 2, 9), dtype=plugrad.float64)
    for name in RECURRING:
        function = getattr(plugrad.special, name)
        counts = []
        for degrees in ([10], [400], [2, 10, 7], [2, 400, 7]):
            calls[0] = 0
            function(x[:, None], plugrad.tensor(degrees))
            counts.append(calls[0])
        assert counts[0] == counts[1] and counts[2] == counts[3], (name, counts)


@pytest.mark.parametrize("name", RECURRING)
def test_one_degree_for_all_and_degrees_apart_give_the_same_values(name: str) -> None:
    function = getattr(plugrad.special, name)
    x = plugrad.tensor(np.linspace(-2, 2, 21), dtype=plugrad.float64)
    degrees = [0, 1, 2, 3, 40, 41, 250, 700]
    together = function(x, plugrad.tensor(degrees)[:, None]).numpy()
    for row, degree in zip(together, degrees, strict=True):
        np.testing.assert_array_equal(row, function(x, degree).numpy())


# -- agreement with PyTorch ----------------------------------------------------------------

AGREEMENT_X = np.concatenate(
    [np.linspace(-2, 2, 33), [0.999, -0.999, 1.001, 12.5, -25.0, 1e3, -1e3, 1e12, -1e12]]
)


#: The exact values (mpmath's) where PyTorch's recurrence overflows on the way to a finite
#: value, or to 0 (odd Hermite polynomials at x = 0: NaN from inf - inf).
EXACT = {
    "hermite_polynomial_h": lambda mpmath, n, x: mpmath.hermite(n, x),
    "hermite_polynomial_he": lambda mpmath, n, x: (
        mpmath.hermite(n, x / mpmath.sqrt(2)) / mpmath.sqrt(2) ** n
    ),
    "laguerre_polynomial_l": lambda mpmath, n, x: mpmath.laguerre(n, 0, x),
    # (at x < -1 mpmath's is complex, with a rounding's imaginary part: by parity)
    "legendre_polynomial_p": lambda mpmath, n, x: (
        (-1) ** (n * (x < 0)) * mpmath.legendre(n, abs(x))
    ),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", RECURRING + CHEBYSHEV)
def test_polynomials_agree_with_torch_to_degrees_of_thousands(name: str, dtype: str) -> None:
    mpmath = pytest.importorskip("mpmath")
    function = getattr(plugrad.special, name)
    n = np.concatenate([np.arange(301), [1000, 2999]])[:, None]
    xs, ns = np.broadcast_arrays(AGREEMENT_X.astype(dtype), n)
    # (apart: the low degrees' elements need not run to the highest)
    mine = np.concatenate([
        function(plugrad.tensor(xs[:-2]), plugrad.tensor(ns[:-2])).numpy(),
        function(plugrad.tensor(xs[-2:]), plugrad.tensor(ns[-2:])).numpy(),
    ])  # fmt: skip
    assert mine.dtype == np.dtype(dtype)
    # ours in float32 are the float64 values rounded (PyTorch's computes in float32)
    expected = getattr(torch.special, name)(torch.tensor(xs, dtype=torch.float64),
                                            torch.tensor(ns)).numpy()  # fmt: skip
    with mpmath.workdps(30):
        for i, j in zip(*np.nonzero(~np.isfinite(expected)), strict=True):
            if name in EXACT:
                exact = EXACT[name](mpmath, int(ns[i, j]), mpmath.mpf(float(xs[i, j])))
                expected[i, j] = float(exact)  # (inf beyond float64)
            else:  # (PyTorch's NaN from inf - inf: beyond float64)
                expected[i, j] = math.copysign(inf, mine[i, j])
    with np.errstate(over="ignore"):
        expected = expected.astype(dtype).astype(np.float64)
    # The float64 recurrences (and closed forms) lose about n ulps of the polynomial's
    # size about x, not of its value (near a root): of the largest value between 0 and x.
    size = np.abs(np.where(np.isfinite(expected), expected, 0.0))
    order = np.argsort(np.abs(xs[0]), kind="stable")
    size[:, order] = np.maximum.accumulate(size[:, order], axis=1)
    tolerance = np.finfo(dtype).eps + 32 * np.finfo(np.float64).eps * (ns + 10)
    same = mine == expected
    with np.errstate(all="ignore"):
        error = np.abs(mine - expected) / np.maximum(size, 1.0)
    assert (same | (error <= tolerance)).all(), np.max(np.where(same, 0.0, error / tolerance))
