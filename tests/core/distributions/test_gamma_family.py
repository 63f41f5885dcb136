"""Gamma, Chi2, Beta, Dirichlet, StudentT, InverseGamma, FisherSnedecor and NegativeBinomial,
and the incomplete gamma functions they use.

Values and parameter gradients against ``torch.distributions`` on every
backend; samples' moments and reproducibility; the implicit reparameterized
gradient of gamma samples against the derivative of the quantile function
(SciPy's, by central differences); ``special.gammainc``/``gammaincc`` against
PyTorch's and SciPy's; bad input.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import distributions as D
from plugrad.errors import InvalidArgumentError, ShapeError
from plugrad.incomplete_gamma import lower_regularized_derivative_in_a, quantile_derivative_in_a
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

from .test_against_torch import (  # noqa: E402  (after the skip without PyTorch)
    Case,
    KLCase,
    compare,
    compare_kl,
    method_cases,
    uniform,
)

RNG = np.random.default_rng(23)
F64 = plugrad.float64
SIMPLEX = RNG.dirichlet([1.0, 2.0, 3.0], size=(4, 2))

CASES: dict[str, Case] = {
    "Gamma": Case(
        lambda D, a, rate: D.Gamma(a, rate),
        (uniform(0.3, 4.0, 3), uniform(0.5, 2.0, 2, 1)),
        uniform(0.05, 5.0, 4, 1, 3),
        ("log_prob", "entropy", "mean", "mode", "variance", "stddev"),
    ),
    "Gamma number rate": Case(
        lambda D, a: D.Gamma(a, 1.5), (uniform(0.5, 3.0, 2, 3),), uniform(0.1, 3.0, 3)
    ),
    "Chi2": Case(
        lambda D, df: D.Chi2(df),
        (uniform(0.5, 6.0, 2, 3),),
        uniform(0.1, 8.0, 4, 2, 3),
        ("log_prob", "entropy", "mean", "mode", "variance"),
    ),
    "Beta": Case(
        lambda D, a, b: D.Beta(a, b),
        (uniform(0.3, 4.0, 3), uniform(0.3, 4.0, 2, 1)),
        uniform(0.02, 0.98, 4, 1, 3),
        ("log_prob", "entropy", "mean", "mode", "variance", "stddev"),
    ),
    "Dirichlet": Case(
        lambda D, c: D.Dirichlet(c),
        (uniform(0.3, 4.0, 2, 3),),
        SIMPLEX,
        ("log_prob", "entropy", "mean", "mode", "variance"),
    ),
    "StudentT": Case(
        lambda D, df, loc, scale: D.StudentT(df, loc, scale),
        (uniform(0.5, 6.0, 3), RNG.normal(size=(2, 1)), uniform(0.5, 2.0, 3)),
        RNG.normal(size=(4, 2, 3)) * 3,
        ("log_prob", "entropy", "mean", "mode", "variance"),
    ),
    "InverseGamma": Case(
        lambda D, a, rate: D.InverseGamma(a, rate),
        (uniform(2.5, 5.0, 3), uniform(0.5, 2.0, 2, 1)),
        uniform(0.1, 3.0, 4, 1, 3),
        ("log_prob", "entropy", "mean", "mode", "variance"),
    ),
    "FisherSnedecor": Case(
        lambda D, d1, d2: D.FisherSnedecor(d1, d2),
        (uniform(2.5, 8.0, 3), uniform(4.5, 9.0, 2, 1)),
        uniform(0.1, 4.0, 4, 1, 3),
        ("log_prob", "mean", "mode", "variance"),
    ),
    "NegativeBinomial": Case(
        lambda D, r, logits: D.NegativeBinomial(r, logits=logits),
        (uniform(0.5, 6.0, 3), RNG.normal(size=(2, 1))),
        RNG.integers(0, 9, (4, 1, 3)).astype(float),
        ("log_prob", "mean", "mode", "variance"),
    ),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(**method_cases(CASES))
def test_agrees_with_torch(name: str, method: str, backend: str) -> None:
    compare(CASES[name], method, backend, through_trigamma=True)


@pytest.mark.parametrize("backend", backends_under_test())
def test_gamma_and_chi2_cdf_agree_with_torch(backend: str) -> None:
    # PyTorch's cdf has no gradient in the concentration (test_incomplete_gamma_is_differentiable_
    # in_the_shape checks plugrad's); the value and the rate's and value's gradients are compared.
    a, rate, value = uniform(0.3, 4.0, 3), uniform(0.5, 2.0, 2, 1), uniform(0.05, 5.0, 4, 1, 3)

    def run(lib: Any) -> list[np.ndarray]:
        r = lib.tensor(rate, dtype=lib.float64, requires_grad=True)
        v = lib.tensor(value, dtype=lib.float64, requires_grad=True)
        d = lib.distributions
        out = d.Gamma(lib.tensor(a, dtype=lib.float64), r).cdf(v)
        chi2 = d.Chi2(lib.tensor(a, dtype=lib.float64)).cdf(v.detach())
        out.sum().backward()
        return [out.detach().numpy(), chi2.numpy(), r.grad.numpy(), v.grad.numpy()]

    with plugrad.use_backend(backend):
        ours = run(plugrad)
    for mine, theirs in zip(ours, run(torch), strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-300)


KL_CASES: dict[str, KLCase] = {
    "Gamma-Gamma": (
        lambda D, a, b, c, d: (D.Gamma(a, b), D.Gamma(c, d)),
        (uniform(0.5, 3, 3), uniform(0.5, 2, 2, 1), uniform(0.5, 3, 2, 3), uniform(0.5, 2, 3)),
    ),
    "Beta-Beta": (
        lambda D, a, b, c, d: (D.Beta(a, b), D.Beta(c, d)),
        (uniform(0.5, 3, 3), uniform(0.5, 3, 2, 1), uniform(0.5, 3, 2, 3), uniform(0.5, 3, 3)),
    ),
    "Dirichlet-Dirichlet": (
        lambda D, a, b: (D.Dirichlet(a), D.Dirichlet(b)),
        (uniform(0.5, 3, 2, 4), uniform(0.5, 3, 4)),
    ),
    "Chi2-Chi2": (lambda D, a, b: (D.Chi2(a), D.Chi2(b)), (uniform(1, 5, 3), uniform(1, 5, 3))),
    "Gamma-Exponential": (
        lambda D, a, b, c: (D.Gamma(a, b), D.Exponential(c)),
        (uniform(0.5, 3, 3), uniform(0.5, 2, 3), uniform(0.5, 2, 2, 3)),
    ),
    "Exponential-Gamma": (
        lambda D, a, b, c: (D.Exponential(a), D.Gamma(b, c)),
        (uniform(0.5, 2, 3), uniform(0.5, 3, 3), uniform(0.5, 2, 3)),
    ),
    "Gamma-Normal": (
        lambda D, a, b, c, d: (D.Gamma(a, b), D.Normal(c, d)),
        (uniform(0.5, 3, 3), uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "Beta-Exponential": (
        lambda D, a, b, c: (D.Beta(a, b), D.Exponential(c)),
        (uniform(0.5, 3, 3), uniform(0.5, 3, 3), uniform(0.5, 2, 3)),
    ),
    "Beta-Gamma": (
        lambda D, a, b, c, d: (D.Beta(a, b), D.Gamma(c, d)),
        (uniform(0.5, 3, 3), uniform(0.5, 3, 3), uniform(0.5, 3, 3), uniform(0.5, 2, 3)),
    ),
    "Beta-Normal": (
        lambda D, a, b, c, d: (D.Beta(a, b), D.Normal(c, d)),
        (uniform(0.5, 3, 3), uniform(0.5, 3, 3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "Beta-Uniform": (
        lambda D, a, b, c, d: (D.Beta(a, b), D.Uniform(c, d)),
        (
            uniform(0.5, 3, 4),
            uniform(0.5, 3, 4),
            np.array([-1.0, 0.2, 0.0, -0.5]),
            np.array([1.0, 1.0, 0.7, 2.0]),
        ),
    ),
    "Uniform-Beta": (
        lambda D, a, b, c, d: (D.Uniform(a, b), D.Beta(c, d)),
        (uniform(0.1, 0.4, 3), uniform(0.5, 0.9, 3), uniform(0.5, 3, 3), uniform(0.5, 3, 3)),
    ),
    "Uniform-Gamma": (
        lambda D, a, b, c, d: (D.Uniform(a, b), D.Gamma(c, d)),
        (uniform(0.1, 1, 3), uniform(1.5, 3, 3), uniform(0.5, 3, 3), uniform(0.5, 2, 3)),
    ),
    "Geometric-Geometric": (
        lambda D, a, b: (D.Geometric(probs=a), D.Geometric(probs=b)),
        (uniform(0.1, 0.9, 3), uniform(0.1, 0.9, 2, 3)),
    ),
    "Exponential-Normal": (
        lambda D, a, b, c: (D.Exponential(a), D.Normal(b, c)),
        (uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 2, 3)),
    ),
    "Laplace-Normal": (
        lambda D, a, b, c, d: (D.Laplace(a, b), D.Normal(c, d)),
        (RNG.normal(size=3), uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "Uniform-Normal": (
        lambda D, a, b, c, d: (D.Uniform(a, b), D.Normal(c, d)),
        (uniform(-2, 0, 3), uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "Normal-Laplace": (
        lambda D, a, b, c, d: (D.Normal(a, b), D.Laplace(c, d)),
        (RNG.normal(size=3), uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
}

INFINITE_PAIRS = {
    "Gamma-Beta": lambda D, t: (D.Gamma(t.exp(), 1.0), D.Beta(2.0, 2.0)),
    "Gamma-Uniform": lambda D, t: (D.Gamma(t.exp(), 1.0), D.Uniform(0.0, 5.0)),
    "Exponential-Beta": lambda D, t: (D.Exponential(t.exp()), D.Beta(2.0, 2.0)),
    "Normal-Gamma": lambda D, t: (D.Normal(t, 1.0), D.Gamma(2.0, 1.0)),
    "Normal-Beta": lambda D, t: (D.Normal(t, 1.0), D.Beta(2.0, 2.0)),
    "Laplace-Gamma": lambda D, t: (D.Laplace(t, 1.0), D.Gamma(2.0, 1.0)),
    "Laplace-Beta": lambda D, t: (D.Laplace(t, 1.0), D.Beta(2.0, 2.0)),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(KL_CASES))
def test_kl_divergence_agrees_with_torch(name: str, backend: str) -> None:
    compare_kl(KL_CASES[name], backend, name, through_trigamma=True)


@pytest.mark.parametrize("name", list(INFINITE_PAIRS))
def test_kl_where_q_has_no_mass_is_infinite_as_pytorchs(name: str) -> None:
    values = RNG.normal(size=(2, 3))
    pair = INFINITE_PAIRS[name]
    ours = D.kl_divergence(*pair(D, plugrad.tensor(values)))
    theirs = torch.distributions.kl_divergence(*pair(torch.distributions, torch.tensor(values)))
    assert ours.tolist() == theirs.tolist()


# -- sampling ------------------------------------------------------------------------------

N = 20000
SAMPLED = {
    "Gamma": lambda: D.Gamma(plugrad.tensor([0.1, 0.7, 1.0, 4.5, 300.0], dtype=F64), 2.0),
    "Chi2": lambda: D.Chi2(plugrad.tensor([1.0, 5.0], dtype=F64)),
    "Beta": lambda: D.Beta(plugrad.tensor([0.3, 2.0, 5.0], dtype=F64), 1.5),
    "Dirichlet": lambda: D.Dirichlet(plugrad.tensor([[0.4, 1.0, 3.0], [5.0, 5.0, 5.0]], dtype=F64)),
    "StudentT": lambda: D.StudentT(plugrad.tensor([5.0, 30.0], dtype=F64), 1.0, 2.0),
    "InverseGamma": lambda: D.InverseGamma(plugrad.tensor([5.0, 9.0], dtype=F64), 2.0),
    "FisherSnedecor": lambda: D.FisherSnedecor(plugrad.tensor([5.0, 20.0], dtype=F64), 12.0),
    "NegativeBinomial": lambda: D.NegativeBinomial(
        plugrad.tensor([0.5, 4.0, 30.0], dtype=F64), probs=plugrad.tensor(0.4, dtype=F64)
    ),
}


@pytest.mark.parametrize("name", list(SAMPLED))
def test_sample_moments(name: str) -> None:
    d = SAMPLED[name]()
    plugrad.manual_seed(5)
    x = d.sample((N,)).numpy()
    mean, variance = d.mean.numpy(), d.variance.numpy()
    np.testing.assert_allclose(x.mean(axis=0), mean, atol=float(np.max(5 * np.sqrt(variance / N))))
    np.testing.assert_allclose(x.var(axis=0), variance, rtol=0.1)
    assert np.all(np.isfinite(d.log_prob(d.sample((100,))).numpy()))


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(SAMPLED))
def test_samples_are_reproducible_shaped_and_in_the_support(name: str, backend: str) -> None:
    with plugrad.use_backend(backend):
        d = SAMPLED[name]()
        plugrad.manual_seed(9)
        first = d.sample((3, 2))
        plugrad.manual_seed(9)
        again = d.rsample((3, 2)) if d.has_rsample else d.sample((3, 2))
        assert first.shape == again.shape == (3, 2, *d.batch_shape, *d.event_shape)
        assert first.tolist() == again.tolist()
        assert not first.requires_grad
        assert bool(plugrad.all(d.support.check(first)))


def test_gamma_draws_follow_the_distribution() -> None:
    # The empirical distribution function against the exact one (Kolmogorov-Smirnov).
    for a in (0.05, 0.5, 1.0, 2.5, 40.0):
        plugrad.manual_seed(3)
        d = D.Gamma(plugrad.tensor(a, dtype=F64), 1.0)
        x = plugrad.sort(d.sample((N,)))
        empirical = np.arange(1, N + 1) / N
        distance = np.max(np.abs(d.cdf(x).numpy() - empirical))
        assert distance < 1.63 / math.sqrt(N)  # the 1% critical value


def test_gamma_rsample_gradient_is_the_quantile_derivative() -> None:
    scipy_special = pytest.importorskip("scipy.special")
    a = np.array([0.05, 0.3, 1.0, 2.0, 7.5, 60.0, 2e3])
    concentration = plugrad.tensor(a, dtype=F64, requires_grad=True)
    rate = plugrad.tensor(1.5, dtype=F64, requires_grad=True)
    plugrad.manual_seed(2)
    z = D.Gamma(concentration, rate).rsample()
    z.sum().backward()
    standard = z.detach().numpy() * 1.5
    p = scipy_special.gammainc(a, standard)
    h = 1e-6 * a
    quantile = [scipy_special.gammaincinv(a + s * h, p) for s in (1, -1)]
    expected = (quantile[0] - quantile[1]) / (2 * h) / 1.5
    np.testing.assert_allclose(concentration.grad.numpy(), expected, rtol=1e-6)
    assert rate.grad.item() == pytest.approx(-float(z.detach().sum()) / 1.5, rel=1e-12)


def test_quantile_derivative_over_the_whole_range_of_shapes() -> None:
    scipy_special = pytest.importorskip("scipy.special")
    a = np.array([1e-3, 0.2, 1.0, 5.0, 80.0, 1e4, 1e6, 2e7, 5e8])
    for deviations in (-4.0, 0.0, 3.0):
        spread = np.maximum(np.sqrt(a), 1.0)
        z = np.maximum(a + deviations * spread, a * 0.05)
        ours = quantile_derivative_in_a(plugrad.tensor(a, dtype=F64), plugrad.tensor(z, dtype=F64))
        p, q = scipy_special.gammainc(a, z), scipy_special.gammaincc(a, z)
        h = 1e-5 * a
        inverse = np.where(
            p < 0.5,
            scipy_special.gammaincinv(a + h, p) - scipy_special.gammaincinv(a - h, p),
            scipy_special.gammainccinv(a + h, q) - scipy_special.gammainccinv(a - h, q),
        )
        np.testing.assert_allclose(ours.numpy(), inverse / (2 * h), rtol=1e-5)


def test_beta_and_dirichlet_rsample_gradients_have_the_expected_mean() -> None:
    # d E[x] / d a for Beta(a, b), E[x] = a / (a + b): the sample gradients' mean.
    a = plugrad.tensor(2.0, dtype=F64, requires_grad=True)
    plugrad.manual_seed(4)
    D.Beta(a, 3.0).rsample((N,)).mean().backward()
    assert a.grad.item() == pytest.approx(3.0 / 25.0, abs=0.01)
    c = plugrad.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    D.Dirichlet(c).rsample((N,))[:, 0].mean().backward()
    np.testing.assert_allclose(c.grad.numpy(), [5 / 36, -1 / 36, -1 / 36], atol=0.01)


def test_student_t_rsample_is_differentiable_in_every_parameter() -> None:
    df = plugrad.tensor(4.0, dtype=F64, requires_grad=True)
    loc = plugrad.tensor(0.5, dtype=F64, requires_grad=True)
    scale = plugrad.tensor(2.0, dtype=F64, requires_grad=True)
    plugrad.manual_seed(6)
    x = D.StudentT(df, loc, scale).rsample((N,))
    (x.abs().mean()).backward()
    assert loc.grad is not None and scale.grad is not None and df.grad is not None
    # d E|x - loc| / d scale = E|t|, which is 1 for 4 degrees of freedom (|t| has variance 1).
    assert scale.grad.item() == pytest.approx(1.0, abs=0.04)


def test_gamma_draws_of_special_shapes() -> None:
    plugrad.manual_seed(0)
    tiny = D.Gamma(plugrad.tensor([1e-4] * 100, dtype=F64), 1.0).sample()
    assert bool(plugrad.all(tiny > 0))  # clamped to the smallest normal number, never 0
    d = D.Gamma(plugrad.tensor([math.nan, math.inf, 2.0]), 1.0, validate_args=False)
    drawn = d.sample().tolist()
    assert math.isnan(drawn[0]) and drawn[1] == math.inf and drawn[2] > 0


def test_float32_parameters_give_float32_samples_and_gradients() -> None:
    a = plugrad.tensor([0.5, 3.0], requires_grad=True)
    z = D.Gamma(a, 1.0).rsample((5,))
    assert z.dtype == plugrad.float32
    z.sum().backward()
    assert a.grad.dtype == plugrad.float32


# -- special.gammainc and gammaincc ----------------------------------------------------------


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma_against_torch(name: str, backend: str) -> None:
    a = np.concatenate([uniform(0.01, 3, 30), uniform(3, 300, 30)])
    x = np.concatenate([uniform(0.0, 6, 30), uniform(1, 400, 30)])

    def run(lib: Any) -> tuple[np.ndarray, np.ndarray]:
        shape = lib.tensor(a, dtype=lib.float64)
        point = lib.tensor(x, dtype=lib.float64, requires_grad=True)
        out = getattr(lib.special, name)(shape, point)
        out.sum().backward()
        return out.detach().numpy(), point.grad.numpy()

    with plugrad.use_backend(backend):
        ours = run(plugrad)
    theirs = run(torch)
    # PyTorch's values are off by up to 1.5e-9 relative (plugrad's by 5e-13, against SciPy).
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-8, atol=1e-300)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-8, atol=1e-300)
    scipy_special = pytest.importorskip("scipy.special")
    np.testing.assert_allclose(ours[0], getattr(scipy_special, name)(a, x), rtol=1e-11)


def test_incomplete_gamma_special_values_are_pytorchs() -> None:
    inf, nan = math.inf, math.nan
    a = [0.0, 0.0, 1.0, 1.0, -1.0, 1.0, inf, 2.0, nan, 5.0]
    x = [0.0, 1.0, 0.0, inf, 1.0, -1.0, 1.0, inf, 1.0, nan]
    for name in ("gammainc", "gammaincc"):
        ours = getattr(plugrad.special, name)(plugrad.tensor(a), plugrad.tensor(x))
        theirs = getattr(torch.special, name)(torch.tensor(a), torch.tensor(x))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_incomplete_gamma_far_in_the_upper_tail_is_one_and_zero_with_its_derivative() -> None:
    # From x = 1.3e154 on (float64) the continued fraction's convergents overflowed:
    # a ConvergenceError where P is 1 (Gamma(2, 1).cdf(1e155), InverseGamma.cdf near 0).
    a = plugrad.tensor([2.0, 0.5, 50.0, 1e200], dtype=plugrad.float64, requires_grad=True)
    x = plugrad.tensor([1e155, 1e300, 1.7e308, 1e200], dtype=plugrad.float64)
    p = plugrad.special.gammainc(a, x)
    assert p.tolist()[:3] == [1.0, 1.0, 1.0]
    assert abs(p.tolist()[3] - 0.5) < 1e-6  # (not the far tail: a is not below x / 2)
    assert plugrad.special.gammaincc(a, x).tolist()[:3] == [0.0, 0.0, 0.0]
    p[:3].sum().backward()
    assert a.grad.tolist()[:3] == [0.0, 0.0, 0.0]
    gamma = D.Gamma(
        plugrad.tensor([2.0], dtype=plugrad.float64), plugrad.tensor([1.0], dtype=plugrad.float64)
    )
    assert gamma.cdf(plugrad.tensor([1e155], dtype=plugrad.float64)).item() == 1.0


def test_incomplete_gamma_upper_tail_has_no_cancellation() -> None:
    scipy_special = pytest.importorskip("scipy.special")
    a, x = np.array([1e-30, 0.5, 3.0, 50.0]), np.array([1.0, 40.0, 60.0, 150.0])
    ours = plugrad.special.gammaincc(plugrad.tensor(a), plugrad.tensor(x)).numpy()
    np.testing.assert_allclose(ours, scipy_special.gammaincc(a, x), rtol=1e-11)


def test_incomplete_gamma_is_differentiable_in_the_shape() -> None:
    # PyTorch's is not; here dP/da comes from the expansions, against central differences.
    scipy_special = pytest.importorskip("scipy.special")
    a, x = np.array([0.3, 1.0, 4.0, 40.0, 200.0]), np.array([0.2, 2.5, 3.0, 45.0, 190.0])
    shape = plugrad.tensor(a, dtype=F64, requires_grad=True)
    plugrad.special.gammainc(shape, plugrad.tensor(x, dtype=F64)).sum().backward()
    h = 1e-6 * a
    expected = (scipy_special.gammainc(a + h, x) - scipy_special.gammainc(a - h, x)) / (2 * h)
    np.testing.assert_allclose(shape.grad.numpy(), expected, rtol=1e-6)
    upper = plugrad.tensor(a, dtype=F64, requires_grad=True)
    plugrad.special.gammaincc(upper, plugrad.tensor(x, dtype=F64)).sum().backward()
    np.testing.assert_allclose(upper.grad.numpy(), -expected, rtol=1e-6)
    assert plugrad.autograd.gradcheck(
        lambda s, p: plugrad.special.gammainc(s, p),
        (plugrad.tensor([0.7, 3.0], dtype=F64, requires_grad=True),
         plugrad.tensor([0.4, 5.0], dtype=F64, requires_grad=True)),
    )  # fmt: skip
    derivative = lower_regularized_derivative_in_a(plugrad.tensor([-1.0, 2.0]), plugrad.tensor(0.0))
    assert math.isnan(derivative.tolist()[0]) and derivative.tolist()[1] == 0.0


def test_incomplete_gamma_takes_numbers_and_integers_and_refuses_others() -> None:
    assert plugrad.special.gammainc(plugrad.tensor([2]), 1).dtype == plugrad.float32
    got = plugrad.special.gammainc(plugrad.tensor([2.0], dtype=F64), 1.0).item()
    assert got == pytest.approx(1 - 2 * math.exp(-1), rel=1e-14)
    with pytest.raises(TypeError, match="takes a Tensor"):
        plugrad.special.gammainc(2.0, plugrad.tensor([1.0]))
    with pytest.raises(TypeError, match="real tensors"):
        plugrad.special.gammaincc(plugrad.tensor([1j]), plugrad.tensor([1.0]))


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "parameter"),
    [
        (lambda: D.Gamma(plugrad.tensor([1.0, -1.0]), 1.0), "concentration"),
        (lambda: D.Gamma(1.0, plugrad.tensor([0.0])), "rate"),
        (lambda: D.Chi2(plugrad.tensor([-2.0])), "df"),
        (lambda: D.Beta(plugrad.tensor([0.0]), 1.0), "concentration1"),
        (lambda: D.Beta(1.0, plugrad.tensor([-1.0])), "concentration0"),
        (lambda: D.Dirichlet(plugrad.tensor([1.0, 0.0])), "concentration"),
        (lambda: D.StudentT(plugrad.tensor([-1.0])), "df"),
        (lambda: D.StudentT(1.0, 0.0, plugrad.tensor([-1.0])), "scale"),
    ],
)
def test_parameters_outside_their_constraints_are_refused(build: Any, parameter: str) -> None:
    with pytest.raises(InvalidArgumentError, match=f"parameter {parameter}"):
        build()


def test_values_outside_the_support_are_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="support"):
        D.Gamma(1.0, 1.0).log_prob(plugrad.tensor([-0.5]))
    with pytest.raises(InvalidArgumentError, match="support"):
        D.Beta(1.0, 1.0).log_prob(plugrad.tensor([1.5]))
    with pytest.raises(InvalidArgumentError, match="support"):
        D.Dirichlet(plugrad.ones(3)).log_prob(plugrad.tensor([0.5, 0.2, 0.2]))
    with pytest.raises(ShapeError, match="event_shape"):
        D.Dirichlet(plugrad.ones(3)).log_prob(plugrad.tensor([0.5, 0.5]))


def test_dirichlet_needs_a_tensor_with_a_category_axis() -> None:
    for given in (plugrad.tensor(1.0), 1.0):
        with pytest.raises(ShapeError, match="at least 1 dimension"):
            D.Dirichlet(given)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "batch_shape"),
    [
        (lambda L, t: L.distributions.Gamma(t, 2.0), (4, 3)),
        (lambda L, t: L.distributions.Chi2(t), (4, 3)),
        (lambda L, t: L.distributions.Beta(t, t + 1), (4, 3)),
        (lambda L, t: L.distributions.StudentT(t, 0.0, 2.0), (4, 3)),
        (lambda L, t: L.distributions.Dirichlet(t), (4,)),
    ],
    ids=["Gamma", "Chi2", "Beta", "StudentT", "Dirichlet"],
)
def test_expand_agrees_with_torch(build: Any, batch_shape: tuple[int, ...]) -> None:
    array = uniform(0.5, 3, 1, 3)
    ours = build(plugrad, plugrad.asarray(array)).expand(batch_shape)
    theirs = build(torch, torch.tensor(array)).expand(batch_shape)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    value = theirs.sample((2,))
    assert tuple(ours.sample((2,)).shape) == tuple(value.shape)
    np.testing.assert_allclose(
        ours.log_prob(plugrad.asarray(value.numpy())).numpy(),
        theirs.log_prob(value).numpy(),
        rtol=1e-10,
    )


def test_negative_binomial_refuses_bad_parameters_and_draws_zeros_for_zero_count() -> None:
    with pytest.raises(InvalidArgumentError, match="probs"):
        D.NegativeBinomial(2.0, probs=plugrad.tensor([1.0]))  # probs must be below 1
    with pytest.raises(InvalidArgumentError, match="total_count"):
        D.NegativeBinomial(plugrad.tensor([-1.0]), probs=0.5)
    with pytest.raises(InvalidArgumentError, match="either probs or logits"):
        D.NegativeBinomial(2.0)
    d = D.NegativeBinomial(plugrad.tensor([0.0, 2.0], dtype=F64), probs=0.5)
    assert d.sample((50,))[:, 0].tolist() == [0.0] * 50
    assert d.log_prob(plugrad.tensor([0.0, 0.0], dtype=F64)).tolist()[0] == 0.0


def test_incomplete_gamma_of_a_large_shape_keeps_its_precision() -> None:
    # a log x - x - lgamma(a) cancelled: P and Q were 2e-9 off at a = 1e6 (3e-7 at 1e8).
    # (PyTorch's own is 1e-10 off at a = 1e4: the reference is mpmath's, at 40 digits.)
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    for shape in (1e4, 1e6):
        x = [shape - 2 * math.sqrt(shape), shape, shape + 2 * math.sqrt(shape)]
        a = plugrad.tensor([shape] * 3, dtype=plugrad.float64)
        lower = plugrad.special.gammainc(a, plugrad.tensor(x, dtype=plugrad.float64)).tolist()
        upper = plugrad.special.gammaincc(a, plugrad.tensor(x, dtype=plugrad.float64)).tolist()
        for point, p, q in zip(x, lower, upper):
            exact = mpmath.gammainc(shape, 0, point, regularized=True)
            assert p == pytest.approx(float(exact), rel=1e-12)
            assert q == pytest.approx(float(1 - exact), rel=1e-12)


# (a, x, P, Q) from mpmath at 50 digits; x within 50 deviations of a, some far in the tails.
LARGE_SHAPE_VALUES = [
    (1e3, 241.053361559589, 8.709849868116456e-291, 1.0),
    (1e3, 905.1316701949486, 0.0010012389950642836, 0.9989987610049357),
    (1e3, 1000.0, 0.5042052441802155, 0.4957947558197845),
    (1e3, 1158.113883008419, 0.999999073386828, 9.266131719510585e-07),
    (1e3, 1948.6832980505137, 1.0, 7.18055165865818e-125),
    (1e5, 88932.02818941067, 4.318249680355486e-290, 1.0),
    (1e5, 100158.11388300842, 0.6917407749999465, 0.3082592250000536),
    (1e5, 106324.55532033676, 1.0, 8.644924638428654e-86),
    (1e8, 99860000.0, 7.11168328130972e-45, 1.0),
    (1e8, 100260000.0, 1.0, 4.4432793650570265e-149),
]
HUGE_SHAPE_VALUES = [
    (1e12, 999997000000.0, 0.0013498862133920378, 0.998650113786608),
    (1e12, 1000000000000.0, 0.5000001329807602, 0.4999998670192399),
    (1e12, 1000003000000.0, 0.9986500901500831, 0.0013499098499169014),
    (1e12, 1000037000000.0, 1.0, 5.823061528044497e-300),
    (1e15, 999999873508893.6, 3.167122080701413e-05, 0.999968328779193),
    (1e15, 1000000031622776.6, 0.8413447462469537, 0.1586552537530464),
    (1e15, 1000001106797181.0, 1.0, 1.125419288003042e-268),
]


def _check_incomplete_gamma(values: list[tuple[float, float, float, float]]) -> None:
    a, x, p, q = (plugrad.tensor(column, dtype=F64) for column in zip(*values))
    np.testing.assert_allclose(plugrad.special.gammainc(a, x).numpy(), p.numpy(), rtol=1e-13)
    np.testing.assert_allclose(plugrad.special.gammaincc(a, x).numpy(), q.numpy(), rtol=1e-13)


def test_incomplete_gamma_of_a_large_shape_is_accurate_in_the_far_tails() -> None:
    # Temme's uniform expansion from a = 1e3 on, and an exponent a (t - log1p(t)) taken
    # in two parts: the series' prefactor was 1e-9 off at a = 1e5, 3e-7 at 1e8.
    _check_incomplete_gamma(LARGE_SHAPE_VALUES)


def test_incomplete_gamma_of_a_huge_shape_is_accurate() -> None:
    # The series needed about 40 sqrt(a) terms (two minutes at a = 1e12); now a fixed few.
    _check_incomplete_gamma(HUGE_SHAPE_VALUES)
    a = plugrad.tensor([1e3, 1e12, 1e12, 1e15, 1e15, 1e300, 1e300], dtype=F64)
    x = plugrad.tensor([100.0, 9e11, 2e12, 1e-300, 1e300, 1e300, 2e300], dtype=F64)
    assert plugrad.special.gammainc(a, x).tolist() == [0.0, 0.0, 1.0, 0.0, 1.0, 0.5, 1.0]
    assert plugrad.special.gammaincc(a, x).tolist() == [1.0, 1.0, 0.0, 1.0, 0.0, 0.5, 0.0]
    single = plugrad.special.gammainc(plugrad.tensor([1e12]), plugrad.tensor([1.000003e12]))
    assert single.dtype == plugrad.float32
    # (float32 holds 999999995904 and 1000003010560: P is 0.998713634 there, by mpmath)
    assert single.item() == pytest.approx(0.9987136342509016, rel=1e-7)


def test_incomplete_gamma_gradients_at_a_large_shape() -> None:
    # (a, x, dP/da, density(x)) from mpmath. The density was exp((a-1) log x - x - lgamma(a)),
    # which lost |a log x| ulps: 1e-3 off at a = 1e12.
    values = [
        (2e3, 2067.0820393249937, -0.002919481136420705, 0.002871609089364931),
        (1e4, 8000.0, -1.3718345731102477e-103, 1.5369161904755414e-103),
        (1e12, 999998000000.0, -5.3990876528152376e-08, 5.3990930519109893e-08),
        (1e12, 1000030000000.0, -1.486946207027117e-202, 1.4869239033913536e-202),
    ]
    shape, point, slope, density = zip(*values)
    a = plugrad.tensor(shape, dtype=F64, requires_grad=True)
    x = plugrad.tensor(point, dtype=F64, requires_grad=True)
    plugrad.special.gammainc(a, x).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), slope, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), density, rtol=1e-12)
    upper = plugrad.tensor(shape, dtype=F64, requires_grad=True)
    plugrad.special.gammaincc(upper, x.detach()).sum().backward()
    np.testing.assert_allclose(upper.grad.numpy(), -np.array(slope), rtol=1e-12)


# (a, z, dz/da at a fixed P(a, z)) from mpmath at 50 digits (-(dP/da) / density(z), which
# matched the central difference of its inverse P^-1(a, p) to 1e-27); P(a, z) is 1e-10, 0.5
# and 1 - 1e-10 at each shape.
QUANTILE_DERIVATIVE_VALUES = [
    (1000.0, 811.7987627175607, 0.8995184544656016),
    (1000.0, 999.6666864269652, 0.9999999802324887),
    (1000.0, 1214.499555866878, 1.1004943280628807),
    (10000.0, 9376.961682044388, 0.9681963168838265),
    (10000.0, 9999.666668642047, 0.9999999998024547),
    (10000.0, 10649.348143058445, 1.0318038109447734),
    (100000.0, 98001.50416544829, 0.9899419310328532),
    (100000.0, 99999.6666668642, 0.9999999999980247),
    (100000.0, 102024.80680796504, 1.0100580702260413),
    (1000000.0, 993651.8087766353, 0.9968193325353603),
    (1000000.0, 999999.6666666864, 0.9999999999999802),
    (1000000.0, 1006374.5023496342, 1.0031806674943928),
    (3000000.0, 3000908.0466069393, 1.000151381398012),
    (10000000.0, 9979903.344695656, 0.9989945100815693),
    (10000000.0, 9999999.666666668, 0.9999999999999998),
    (10000000.0, 10020129.483606277, 1.0010058162157704),
    (100000000.0, 99936873.44702186, 0.9996843024642506),
    (100000000.0, 99999999.66666667, 1.0),
    (100000000.0, 100063626.56504092, 1.0003180670415286),
    (1000000000.0, 999803124.5288143, 0.9999015559704296),
    (10000000000.0, 10000636147.244581, 1.0000318067044456),
]


# dz/da at a = 1e6 from mpmath (as above) at the 12 Chebyshev points of a +- 6 sqrt(a),
# interpolated between them to 3e-16.
MILLION_SHAPE_NODES = [
    (1005948.6691682428, 1.0029686214474722),
    (1005543.2771950677, 1.0027666985522048),
    (1004760.1200417475, 1.00237645958895),
    (1003652.5685740523, 1.0018242317667252),
    (1002296.1005941905, 1.001147339482669),
    (1000783.1571533203, 1.0003916431260744),
    (999216.8428466797, 0.9996084857621715),
    (997703.8994058095, 0.9988512364882536),
    (996347.4314259477, 0.9981716544622236),
    (995239.8799582525, 0.9976163207772931),
    (994456.7228049323, 0.9972233920440043),
    (994051.3308317572, 0.9970199162033537),
]


def test_gamma_rsample_gradient_at_a_million_shape_matches_mpmath() -> None:
    concentration = plugrad.tensor(1e6, dtype=F64, requires_grad=True)
    plugrad.manual_seed(11)
    z = D.Gamma(concentration.expand(256), 1.0).rsample()
    gradient = plugrad.autograd.grad(z, concentration, plugrad.ones_like(z))[0]
    drawn = z.detach().numpy()
    assert np.all(np.abs(drawn - 1e6) < 5.9e3)  # (within the nodes: 6 deviations)
    # Each sample's own derivative, by the barycentric formula over the nodes.
    nodes, values = map(np.array, zip(*MILLION_SHAPE_NODES))
    k = np.arange(nodes.size)
    weights = (
        (-1.0) ** k * np.sin((2 * k + 1) * np.pi / (2 * nodes.size)) / (drawn[:, None] - nodes)
    )
    expected = (weights @ values) / weights.sum(axis=1)
    per_sample = quantile_derivative_in_a(concentration.detach().expand(256), z.detach())
    np.testing.assert_allclose(per_sample.numpy(), expected, rtol=2e-15)
    assert gradient.item() == pytest.approx(expected.sum(), rel=1e-14)


# (a, z, dz/da) from mpmath as above: P or Q down to 1e-290 and far below (z below 0.22 a or
# above 2.75 a, past the range of the expansion's table in eta); the last three in closed
# form: log z - digamma(a) for z >> a (the rest is a log(z) / z) and, at a = 1e300, the
# limit (z/a) log(z/a) / (z/a - 1).
FAR_TAIL_QUANTILE_DERIVATIVES = [
    (1000.0, 100.0, 0.25587910248111767),
    (1000.0, 1e-300, 6.976837830938626e-301),
    (1000.0, 1.0, 0.006915164443940132),
    (1000.0, 241.053361559589, 0.4519541589431444),
    (1000.0, 1948.6832980505137, 1.3706209769429414),
    (1000.0, 100000.0, 4.652154928430015),
    (1000.0, 10000000000.0, 16.118597344639518),
    (100000.0, 88932.02818941067, 0.9424989543463905),
    (100000.0, 106324.55532033676, 1.0309781421425621),
    (100000000.0, 99860000.0, 0.9992996747699737),
    (100000000.0, 100260000.0, 1.00129887646455),
    (1000.0, 1e300, 683.8682727025649),
    (1e15, 1e300, 656.236751503303),
    (1e300, 1e299, 0.2558427881104495),
]


@pytest.mark.parametrize(
    ("values", "rtol"),
    [
        # The series took ~40 sqrt(a) terms and lost 2e-12 at a = 1e6; Wilson and Hilferty's
        # approximation, from 1e7 on, was 7e-11 off there. Now Temme's expansion: 5e-16.
        pytest.param(QUANTILE_DERIVATIVE_VALUES, 2e-15, id="central"),
        # Where P underflows dz/da is finite; past the table the c_k are taken in closed form.
        pytest.param(FAR_TAIL_QUANTILE_DERIVATIVES, 3e-15, id="far tails"),
    ],
)
def test_quantile_derivative_at_a_large_shape_is_accurate(
    values: list[tuple[float, float, float]], rtol: float
) -> None:
    shape, point, expected = zip(*values)
    ours = quantile_derivative_in_a(
        plugrad.tensor(shape, dtype=F64), plugrad.tensor(point, dtype=F64)
    )
    np.testing.assert_allclose(ours.numpy(), expected, rtol=rtol)
