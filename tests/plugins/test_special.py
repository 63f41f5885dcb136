"""The op table of plugins/special.py, against mpmath's values (OpTests runs every check),
and the special points and PyTorch's conventions against ``torch``."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import plugrad
from plugrad.testing import OpCase, OpTests

ops = plugrad.ops


def _exact(function):
    """A NumPy reference from mpmath's function, at 30 digits, in the input's dtype."""

    def reference(x, **params):
        with mpmath.workdps(30):
            values = [float(function(mpmath.mpf(float(v)), **params)) for v in x.ravel()]
        return np.array(values).reshape(x.shape).astype(x.dtype)

    return reference


def _polygamma(x, n):
    return mpmath.polygamma(n, x)


CASES = [
    OpCase("lgamma", "lgamma", reference=_exact(mpmath.loggamma), shapes=((3, 4),),
           domains=((0.1, 12.0),)),
    OpCase("lgamma", "lgamma-negative",
           reference=_exact(lambda x: mpmath.log(abs(mpmath.gamma(x)))), shapes=((2, 5),),
           domains=((-4.9, -0.1),)),
    OpCase("digamma", "digamma", reference=_exact(mpmath.digamma), shapes=((3, 4),),
           domains=((0.1, 15.0),)),
    OpCase("digamma", "digamma-negative", reference=_exact(mpmath.digamma), shapes=((2, 5),),
           domains=((-4.9, 0.4),)),
    OpCase("polygamma", "trigamma", lambda x: ops.polygamma(x, n=1),
           _exact(lambda x: _polygamma(x, 1)), ((3, 4),), domains=((0.2, 12.0),)),
    OpCase("polygamma", "polygamma-3", lambda x: ops.polygamma(x, n=3),
           _exact(lambda x: _polygamma(x, 3)), ((3, 4),), domains=((-2.9, 12.0),)),
    OpCase("erfinv", "erfinv", reference=_exact(mpmath.erfinv), shapes=((3, 4),),
           domains=((-0.95, 0.95),)),
]  # fmt: skip


class TestSpecialOps(OpTests):
    cases = CASES


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's about infinities
def test_special_points_are_pytorchs() -> None:
    torch = pytest.importorskip("torch")
    x = [0.0, -0.0, -1.0, -3.0, 1.0, 2.0, 1e-300, 1e300, math.inf, -math.inf, math.nan]
    y = [0.0, -0.0, 1.0, -1.0, 1.5, 1 - 1e-16, 1e-300, math.nan]
    pairs = [
        (plugrad.lgamma, torch.lgamma, x),
        (plugrad.digamma, torch.digamma, x),
        (lambda t: plugrad.polygamma(2, t), lambda t: torch.polygamma(2, t), x[:8]),
        (lambda t: plugrad.polygamma(3, t), lambda t: torch.polygamma(3, t), x[:8]),
        (plugrad.erfinv, torch.erfinv, y),
    ]
    for ours, theirs, values in pairs:
        got = ours(plugrad.tensor(values, dtype=plugrad.float64)).numpy()
        want = theirs(torch.tensor(values, dtype=torch.float64)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


def test_float32_is_computed_wide_and_rounded_once() -> None:
    x = np.linspace(0.05, 30.0, 200, dtype=np.float32)
    exact = _exact(mpmath.loggamma)(x.astype(np.float64))
    got = plugrad.lgamma(plugrad.asarray(x)).numpy()
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, exact.astype(np.float32))


def test_surface_names_and_methods() -> None:
    torch = pytest.importorskip("torch")
    x = np.array([1.7, 2.5, 4.0])
    for name, call in {
        "mvlgamma": lambda lib, t: lib.mvlgamma(t, p=3),
        "method mvlgamma": lambda lib, t: t.mvlgamma(2),
        "method polygamma": lambda lib, t: t.polygamma(1),
        "special.gammaln": lambda lib, t: lib.special.gammaln(t),
        "special.psi": lambda lib, t: lib.special.psi(t),
        "special.multigammaln": lambda lib, t: lib.special.multigammaln(t, 2),
        "special.erfinv": lambda lib, t: lib.special.erfinv(t / 5),
        "in place lgamma_": lambda lib, t: t.clone().lgamma_(),
        "in place digamma_": lambda lib, t: t.clone().digamma_(),
        "in place polygamma_": lambda lib, t: t.clone().polygamma_(2),
    }.items():
        ours, theirs = call(plugrad, plugrad.tensor(x)), call(torch, torch.tensor(x))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-9, err_msg=name)
    with pytest.raises(ValueError, match="greater than"):
        plugrad.mvlgamma(plugrad.tensor([0.5]), p=3)
    with pytest.raises(plugrad.errors.ArgumentError, match="non-negative int"):
        plugrad.polygamma(-1, plugrad.tensor([1.0]))


def test_poles_and_infinities_warn_of_nothing() -> None:
    # inf - round(inf) and a division by a pole's 0 warned (NumPy), the value set apart anyway.
    import warnings

    x = plugrad.tensor([0.0, -0.0, -1.0, -3.0, math.inf, -math.inf, math.nan, -2.5],
                       dtype=plugrad.float64)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for function in (plugrad.lgamma, plugrad.digamma, lambda t: plugrad.polygamma(2, t)):
            function(x)


def _exact_polygamma(n: int, x: np.ndarray) -> np.ndarray:
    # 400 digits: at negative x the series mpmath sums cancel terms of n! 2**n
    with mpmath.workdps(400):
        values = [mpmath.polygamma(n, mpmath.mpf(float(v))) for v in x]
        return np.array([float(v) for v in values])  # (inf beyond the largest float)


def test_polygamma_of_large_order_is_finite_where_its_value_is() -> None:
    # The factorials in the asymptotic series were Python floats: from n = 158 on
    # (157 + 14)! raised OverflowError (157 warned of overflows, 150 gave 0 at 1e4).
    torch = pytest.importorskip("torch")
    x = np.array([30.0, 100.0, 1e4, 0.5, 200.5])
    for n in (150, 157, 158, 170, 171, 300):
        mine = plugrad.special.polygamma(n, plugrad.tensor(x, dtype=plugrad.float64)).numpy()
        np.testing.assert_allclose(mine, _exact_polygamma(n, x), rtol=5e-13)
    theirs = torch.special.polygamma(158, torch.tensor([30.0], dtype=torch.float64)).item()
    assert plugrad.special.polygamma(158, plugrad.tensor([30.0], dtype=plugrad.float64)).item() \
        == pytest.approx(theirs, rel=1e-12)  # fmt: skip
    # Beyond the largest float, infinite (with the sign) or 0, without a word.
    mine = plugrad.special.polygamma(2000, plugrad.tensor([30.0, 1e4, -3.25]))
    assert mine.tolist() == [-math.inf, 0.0, math.inf]  # (-n! / (x + 3)**(n+1) at -3.25)


def test_polygamma_at_negative_arguments_against_mpmath() -> None:
    # By the reflection with cot(pi x) from cos/sin: at a half-integer cot was 6e-17, not 0,
    # times coefficients of the size of n!: polygamma(100, -20.5) was 1.9e174 (-2.5e23),
    # polygamma(10, -50.5) 6.4e-6 (-3.0e-12); and above -20 the shifted sum cancelled.
    rng = np.random.default_rng(0)
    x = np.concatenate([-rng.uniform(0.0, 100.0, 40), -np.arange(0.5, 100.0, 7.0), [-1e-7]])
    for n in (2, 3, 4, 7, 10, 15, 20):
        mine = plugrad.special.polygamma(n, plugrad.tensor(x, dtype=plugrad.float64)).numpy()
        np.testing.assert_allclose(mine, _exact_polygamma(n, x), rtol=1e-12, err_msg=f"n={n}")
    x = np.array([-20.5, -20.3, -3.5, -0.75])
    mine = plugrad.special.polygamma(100, plugrad.tensor(x, dtype=plugrad.float64)).numpy()
    np.testing.assert_allclose(mine, _exact_polygamma(100, x), rtol=1e-12)
