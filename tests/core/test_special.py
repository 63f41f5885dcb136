"""``plugrad.special`` against ``torch.special``: values and gradients on each backend."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from torch_compare import assert_agrees

import plugrad
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

X = np.array([[-40.0, -6.0, -1.5, -0.25], [0.0, 0.3, 0.75, 1.0], [2.5, 6.0, 9.0, 40.0]])
UNIT = np.array([[0.01, 0.2, 0.5], [0.7, 0.9, 0.999]])

# name -> (program(lib, x), leaf); x is a float64 leaf that requires grad.
PROGRAMS: dict[str, tuple[Callable[[Any, Any], Any], np.ndarray]] = {
    "expit": (lambda lib, x: lib.special.expit(x), X),
    "logit": (lambda lib, x: lib.special.logit(x), UNIT),
    "logit eps": (lambda lib, x: lib.special.logit(x * 1.5 - 0.2, eps=0.05), UNIT),
    "erf": (lambda lib, x: lib.special.erf(x), X),
    "erfc": (lambda lib, x: lib.special.erfc(x), X),
    "ndtr": (lambda lib, x: lib.special.ndtr(x), X),
    "xlogy": (lambda lib, x: lib.special.xlogy(x, x * x + 1), X),
    "xlog1py": (lambda lib, x: lib.special.xlog1py(x, x), UNIT),
    "xlog1py zero": (lambda lib, x: lib.special.xlog1py(x * 0, x - 2), UNIT),
    "log1p": (lambda lib, x: lib.special.log1p(x), UNIT),
    "expm1": (lambda lib, x: lib.special.expm1(x), UNIT),
    "exp2": (lambda lib, x: lib.special.exp2(x), UNIT),
    "sinc": (lambda lib, x: lib.special.sinc(x), X),
    "round": (lambda lib, x: lib.special.round(x * 3), X),
    "entr": (lambda lib, x: lib.special.entr(x - 0.5), UNIT),
    "entr zero": (lambda lib, x: lib.special.entr(lib.where(x > 0.6, x, 0.0)), UNIT),
    "softmax": (lambda lib, x: lib.special.softmax(x, 1), X),
    "log_softmax": (lambda lib, x: lib.special.log_softmax(x, dim=0), X),
    "logsumexp": (lambda lib, x: lib.special.logsumexp(x, 1), X),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_agrees_with_torch(name: str, backend: str) -> None:
    program, leaf = PROGRAMS[name]
    assert_agrees(program, leaf, backend)


def test_every_function_of_torch_special_is_here() -> None:
    theirs = {n for n in torch.special.__all__ if callable(getattr(torch.special, n))}
    assert theirs <= set(plugrad.special.__all__)
    x = [0.5, 2.0]
    for name in ("i0", "bessel_j0", "ndtri"):
        ours = getattr(plugrad.special, name)(plugrad.tensor(x, dtype=plugrad.float64))
        expected = getattr(torch.special, name)(torch.tensor(x, dtype=torch.float64))
        np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-13)
    ours = plugrad.special.zeta(plugrad.tensor(x, dtype=plugrad.float64), 3.0)
    expected = torch.special.zeta(torch.tensor(x, dtype=torch.float64), 3.0)
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), rtol=1e-14)
    with pytest.raises(TypeError, match="takes a Tensor"):
        plugrad.special.ndtr(0.5)


def test_lgamma_keeps_its_relative_accuracy_next_to_its_zeros() -> None:
    # The Lanczos sum's absolute error (1e-16) was the whole value there: lgamma(1 + 1e-12)
    # was 1e-4 off and lgamma(2 - 1e-15) had the wrong sign.
    points = [1 + 1e-12, 2 - 1e-15, 1 - 1e-9, 1 + 1e-6, 0.76, 1.24, 1.76, 2.24, 1.0, 2.0]
    ours = plugrad.lgamma(plugrad.tensor(points, dtype=plugrad.float64)).numpy()
    theirs = torch.lgamma(torch.tensor(points, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-14, atol=0)
    assert plugrad.special.gammaln(plugrad.tensor([1.1, 2.2])).dtype is plugrad.float32


def _flushed(value: float) -> float:
    """``value``, or 0 where it is a subnormal float64."""
    return value if abs(value) >= 2.2250738585072014e-308 else 0.0


def test_erfc_reaches_zero_and_ldexp_does_not_overflow_halfway() -> None:
    far = [27.0, 27.1, 30.0, math.inf, -math.inf]
    ours = plugrad.erfc(plugrad.tensor(far, dtype=plugrad.float64)).tolist()
    theirs = torch.erfc(torch.tensor(far, dtype=torch.float64)).tolist()  # erfc(27) is 5e-319
    # (JAX on the CPU computes with subnormal numbers as 0: there erfc(27) is 0 too)
    flushes = (plugrad.tensor([5e-324], dtype=plugrad.float64) * 1.0).item() == 0
    if flushes:
        theirs = [_flushed(v) for v in theirs]
    assert ours == theirs  # was 5e-319 at 30
    assert plugrad.special.ndtr(plugrad.tensor([-math.inf], dtype=plugrad.float64)).item() == 0
    for values, exponents, dtype in [
        ([1e-30, 1e30, 3.0, -2.5], [150, -150, 2, -3], "float32"),
        ([0.5, 3.0, 1e-300, 5e-324], [1024, -1075, 2000, 2097], "float64"),
    ]:  # 2**exponent alone overflows or underflows where the result is finite
        ours = plugrad.ldexp(plugrad.tensor(values, dtype=getattr(plugrad, dtype)),
                             plugrad.tensor(exponents))  # fmt: skip
        held = [_flushed(v) for v in values] if flushes else values
        theirs = torch.ldexp(torch.tensor(held, dtype=getattr(torch, dtype)),
                             torch.tensor(exponents))  # fmt: skip
        expected = theirs.tolist()
        if flushes and dtype == "float64":
            expected = [_flushed(v) for v in expected]
        assert ours.tolist() == expected


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ldexp_of_an_infinite_exponent_saturates(dtype) -> None:
    # inf - floor(inf / 3) between the three factors was nan: [nan, nan, nan] for [inf, 0, nan].
    values, exponents = [1.5, -2.0, 1.5, 0.0], [math.inf, math.inf, -math.inf, math.nan]
    with warnings.catch_warnings():  # NumPy warns of the overflow to inf, as of x * 1e308
        warnings.simplefilter("ignore", RuntimeWarning)
        ours = plugrad.ldexp(plugrad.tensor(values, dtype=getattr(plugrad, dtype)),
                             plugrad.tensor(exponents, dtype=getattr(plugrad, dtype)))  # fmt: skip
    theirs = torch.ldexp(torch.tensor(values, dtype=getattr(torch, dtype)),
                         torch.tensor(exponents, dtype=getattr(torch, dtype)))  # fmt: skip
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # a complex input (floor() of the complex exponent refused it)
    ours = plugrad.ldexp(plugrad.tensor([1 + 1j, -2j]), plugrad.tensor([2, -1]))
    assert ours.tolist() == torch.ldexp(torch.tensor([1 + 1j, -2j]), torch.tensor([2, -1])).tolist()


def test_lgamma_of_subnormal_numbers_is_minus_their_log() -> None:
    # The reflection's sin(pi x) lost the digits of a subnormal x: log(pi / 3) too much.
    x = plugrad.tensor([5e-324, -5e-324, 1e-320, 1e-300, 1e-99], dtype=plugrad.float64)
    # (JAX on the CPU computes with subnormal numbers as 0, where lgamma is inf)
    held = (x * 1.0).tolist()
    expected = [-math.log(abs(v)) if v else math.inf for v in held]
    assert plugrad.lgamma(x).tolist() == pytest.approx(expected, rel=1e-15)


def test_float32_erfc_and_ndtr_keep_their_relative_accuracy_in_the_tail() -> None:
    # In float32 arithmetic exp(-x**2) was 55 ulp off at 8.3 (erfc), 95 ulp at -9.9 (ndtr).
    x = plugrad.tensor([8.333333, 3.0, -2.0], dtype=plugrad.float32)
    exact = [math.erfc(v) for v in x.tolist()]
    assert plugrad.special.erfc(x).tolist() == pytest.approx(exact, rel=1.2e-7)
    t = plugrad.tensor([-9.880953, -3.0, 0.5], dtype=plugrad.float32)
    exact = [0.5 * math.erfc(-v / math.sqrt(2)) for v in t.tolist()]
    out = plugrad.special.ndtr(t)
    assert out.dtype == plugrad.float32 and out.tolist() == pytest.approx(exact, rel=1.2e-7)


def test_the_slope_of_sinc_next_to_zero_is_its_taylor_series() -> None:
    # The closed form cancels there: 36 % off at 1e-8 and 0 below 1e-10 (PyTorch's too).
    points = [1e-200, -1e-170, 1e-12, 1e-8, -1e-6, 1e-5, 1e-3, 0.3]
    x = plugrad.tensor(points, dtype=plugrad.float64, requires_grad=True)
    plugrad.sinc(x).sum().backward()

    def slope(v: float) -> float:
        u = math.pi * v
        return (u * math.cos(u) - math.sin(u)) / (u * v) if abs(v) > 0.01 else (
            -(math.pi**2) * v / 3 * (1 - u * u / 10 + u**4 / 280))  # fmt: skip

    assert x.grad.tolist() == pytest.approx([slope(v) for v in x.tolist()], rel=1e-12)


def test_entr_second_derivative_agrees_with_torch_at_zero_and_elsewhere() -> None:
    # At x = 0 the second derivative was 0 (a guarded log's where()); torch's -1/x is -inf.
    points = [0.0, -1.0, 0.5, 2.0, 1e-300]
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor(points, dtype=lib.float64, requires_grad=True)
        (first,) = lib.autograd.grad(lib.special.entr(x).sum(), x, create_graph=True)
        (second,) = lib.autograd.grad(first.sum(), x)
        results.append((first.detach().numpy(), second.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-14)
    assert results[0][0][0] == math.inf and results[0][1][0] == -math.inf


def test_gammainc_refuses_a_second_derivative_in_a_and_keeps_those_in_x() -> None:
    # The a-derivative is computed outside the graph: differentiating it again raised
    # advice for Function authors (once_differentiable), or, where the cotangent required
    # grad (gradgradcheck), was taken for 0 without a word.
    f64 = plugrad.float64
    a = plugrad.tensor([1.5, 2.0], dtype=f64, requires_grad=True)
    x = plugrad.tensor([1.0, 3.0], dtype=f64, requires_grad=True)
    for function in (plugrad.special.gammainc, plugrad.special.gammaincc):
        (in_a,) = plugrad.autograd.grad(function(a, x).sum(), a, create_graph=True)
        with pytest.raises(plugrad.errors.BackwardError, match=r"in a can be taken once only"):
            plugrad.autograd.grad(in_a.sum(), a)
        v = plugrad.ones(2, dtype=f64, requires_grad=True)
        (in_a,) = plugrad.autograd.grad(function(a, x), a, v, create_graph=True)
        with pytest.raises(plugrad.errors.BackwardError, match=r"in a can be taken once only"):
            plugrad.autograd.grad(in_a.sum(), x)
    with pytest.raises(plugrad.errors.BackwardError, match=r"in a can be taken once only"):
        plugrad.autograd.gradgradcheck(
            lambda a: plugrad.special.gammainc(a, x.detach()), (a,), raise_exception=False
        )
    # In x, second derivatives (and the first in a, forward mode too) keep working, as torch's.
    (in_x,) = plugrad.autograd.grad(plugrad.special.gammainc(a, x).sum(), x, create_graph=True)
    (second,) = plugrad.autograd.grad(in_x.sum(), x)
    tx = torch.tensor([1.0, 3.0], dtype=torch.float64, requires_grad=True)
    (t_in_x,) = torch.autograd.grad(
        torch.special.gammainc(torch.tensor([1.5, 2.0], dtype=torch.float64), tx).sum(),
        tx,
        create_graph=True,
    )
    (t_second,) = torch.autograd.grad(t_in_x.sum(), tx)
    np.testing.assert_allclose(second.numpy(), t_second.numpy(), rtol=1e-12)
    assert plugrad.autograd.gradgradcheck(lambda x: plugrad.special.gammainc(a.detach(), x), (x,))
    ones = plugrad.ones(2, dtype=f64)
    _, tangent = plugrad.func.jvp(
        lambda a: plugrad.special.gammainc(a, x.detach()), (a.detach(),), (ones,)
    )
    np.testing.assert_allclose(tangent.numpy(), [-0.3747, -0.1974], atol=1e-4)


def test_gammaincc_below_shape_one_is_computed_not_one_less_gammainc() -> None:
    # For a < 1 and x < a + 1 (the series' side) Q was 1 - P: a = 1e-20 gave -2.2e-16 at
    # x = 1e-5 (a negative probability) and 2.2e-16 at 0.5, where Q is 1e-19 and 6e-21.
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    f64 = plugrad.float64
    shapes = [1e-20, 1e-10, 1e-7, 1e-3, 0.1, 0.5, 0.99]
    points = [*np.geomspace(1e-8, 50.0, 23).tolist(), 0.5, 1.0, 1.5, 1.99]
    a = np.repeat(shapes, len(points))
    x = np.tile(points, len(shapes))
    p = plugrad.special.gammainc(plugrad.tensor(a, dtype=f64), plugrad.tensor(x, dtype=f64))
    q = plugrad.special.gammaincc(plugrad.tensor(a, dtype=f64), plugrad.tensor(x, dtype=f64))
    p, q = p.numpy(), q.numpy()
    assert ((p >= 0) & (p <= 1) & (q >= 0) & (q <= 1)).all()
    assert np.abs(p + q - 1).max() <= 2.3e-16
    exact_p, exact_q = (
        np.array([float(mpmath.gammainc(u, *ends, regularized=True)) for u, ends in
                  zip(a, [(0, v) if lower else (v, mpmath.inf) for v in x])])
        for lower in (True, False)
    )  # fmt: skip
    smaller = np.where(exact_q < exact_p, q, p)
    np.testing.assert_allclose(smaller, np.minimum(exact_p, exact_q), rtol=1e-13)
    # Its derivatives: in a (the series' own) and in x (the density) as before.
    at = plugrad.tensor([1e-20, 1e-7, 0.1, 0.5], dtype=f64, requires_grad=True)
    xt = plugrad.tensor([1e-5, 0.5, 1.0, 1e-3], dtype=f64, requires_grad=True)
    plugrad.special.gammaincc(at, xt).sum().backward()

    def upper(u: float, v: float) -> Any:
        return mpmath.gammainc(u, v, mpmath.inf, regularized=True)

    in_a = [
        float(mpmath.diff(lambda s, v=v: upper(s, v), u)) for u, v in zip(at.tolist(), xt.tolist())
    ]
    in_x = [float(-mpmath.exp(-v) * mpmath.mpf(v) ** (u - 1) / mpmath.gamma(u))
            for u, v in zip(at.tolist(), xt.tolist())]  # fmt: skip
    np.testing.assert_allclose(at.grad.numpy(), in_a, rtol=1e-12)
    np.testing.assert_allclose(xt.grad.numpy(), in_x, rtol=1e-13)


@pytest.mark.parametrize("function", [plugrad.special.gammainc, plugrad.special.gammaincc])
def test_gammainc_gradient_in_x_is_nan_where_its_value_is(function) -> None:
    # Below x = 0 the value is nan (as PyTorch's); its gradient in x was 0 (or 1, or inf).
    x = plugrad.tensor([-1.0, 0.0, 1.0], dtype=plugrad.float64, requires_grad=True)
    a = plugrad.tensor([2.0, 2.0, 2.0], dtype=plugrad.float64)
    value = function(a, x)
    value.sum().backward()
    np.testing.assert_array_equal(np.isnan(value.detach().numpy()), [True, False, False])
    np.testing.assert_array_equal(np.isnan(x.grad.numpy()), [True, False, False])
