"""Sampling from ``plugrad.distributions``: shapes, statistics, reproducibility, rsample gradients.

Needs no PyTorch. Every test seeds plugrad's generators, so the statistics are
deterministic; tolerances are several standard errors of 20000 samples.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import plugrad
from plugrad import distributions as D
from plugrad.testing import backends_under_test

from ._helpers import F64, Builder, assert_sample_shapes, assert_seeded_draws_repeat, leaf, t

N = 20000

BUILDERS: dict[str, Builder] = {
    "Normal": (lambda: D.Normal(t([0.0, 1.0, -2.0]), t([[1.0], [0.5]])), (2, 3), ()),
    "LogNormal": (lambda: D.LogNormal(t([0.0, 0.3]), 0.4), (2,), ()),
    "Uniform": (lambda: D.Uniform(t([-1.0, 0.0]), t([1.0, 3.0])), (2,), ()),
    "Laplace": (lambda: D.Laplace(t([0.0, 2.0]), t([1.0, 0.5])), (2,), ()),
    "Exponential": (lambda: D.Exponential(t([0.5, 2.0, 4.0])), (3,), ()),
    "Bernoulli": (lambda: D.Bernoulli(probs=t([0.1, 0.5, 0.8])), (3,), ()),
    "Geometric": (lambda: D.Geometric(probs=t([0.2, 0.7])), (2,), ()),
    "Categorical": (lambda: D.Categorical(probs=t([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])), (2,), ()),
    "OneHotCategorical": (lambda: D.OneHotCategorical(logits=t([[0.0, 1.0, 2.0]])), (1,), (3,)),
    "MultivariateNormal": (
        lambda: D.MultivariateNormal(t([1.0, -1.0]), covariance_matrix=t([[1.0, 0.5], [0.5, 2.0]])),
        (),
        (2,),
    ),
    "Independent": (lambda: D.Independent(D.Normal(t([[0.0, 1.0]]), 2.0), 1), (1,), (2,)),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(BUILDERS))
def test_sample_shapes(name: str, backend: str) -> None:
    build, batch, event = BUILDERS[name]
    with plugrad.use_backend(backend):
        assert_sample_shapes(build(), batch, event)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_sample_statistics(name: str) -> None:
    build, _, _ = BUILDERS[name]
    dist = build()
    plugrad.manual_seed(1234)
    x = dist.sample((N,)).numpy().astype(np.float64)
    mean, variance = dist.mean.numpy(), dist.variance.numpy()
    if name == "Categorical":  # mean and variance are nan: compare the frequencies
        probs = dist.probs.numpy()
        for k in range(probs.shape[-1]):
            frequency = (x == k).mean(axis=0)
            np.testing.assert_allclose(frequency, probs[..., k], atol=4 * 0.5 / math.sqrt(N))
        return
    standard_error = np.sqrt(variance / N)
    np.testing.assert_allclose(x.mean(axis=0), mean, atol=float(np.max(5 * standard_error)))
    np.testing.assert_allclose(x.var(axis=0), variance, rtol=0.08)
    if name == "MultivariateNormal":
        covariance = np.cov(x, rowvar=False)
        np.testing.assert_allclose(covariance, dist.covariance_matrix.numpy(), atol=0.06)


def test_manual_seed_makes_sampling_reproducible() -> None:
    assert_seeded_draws_repeat(BUILDERS)


def test_python_number_parameters_take_the_default_dtype() -> None:
    dist = D.Normal(0.0, 1.0)
    assert dist.loc.dtype == plugrad.get_default_dtype()
    assert dist.sample((2,)).dtype == plugrad.get_default_dtype()
    assert D.Normal(t(0.0), 1.0).scale.dtype == F64


@pytest.mark.parametrize("backend", backends_under_test())
def test_rsample_gradients_are_those_of_the_reparameterization(backend: str) -> None:
    with plugrad.use_backend(backend):
        plugrad.manual_seed(0)
        loc, scale = leaf([0.5, -1.0]), leaf([2.0, 0.5])
        x = D.Normal(loc, scale).rsample((100,))
        x.sum().backward()
        eps = (x.detach() - loc.detach()) / scale.detach()
        np.testing.assert_allclose(loc.grad.numpy(), [100.0, 100.0])
        np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0).numpy(), rtol=1e-12)

        rate = leaf([0.5, 3.0])
        x = D.Exponential(rate).rsample((50,))
        x.sum().backward()
        expected = (-x.detach() / rate.detach()).sum(0)
        np.testing.assert_allclose(rate.grad.numpy(), expected.numpy(), rtol=1e-12)

        low, high = leaf([0.0, -1.0]), leaf([1.0, 3.0])
        x = D.Uniform(low, high).rsample((50,))
        x.sum().backward()
        u = (x.detach() - low.detach()) / (high.detach() - low.detach())
        np.testing.assert_allclose(high.grad.numpy(), u.sum(0).numpy(), rtol=1e-12)
        np.testing.assert_allclose(low.grad.numpy(), (1 - u).sum(0).numpy(), rtol=1e-12)

        loc, scale = leaf(0.2), leaf(0.3)
        x = D.LogNormal(loc, scale).rsample((50,))
        x.sum().backward()
        np.testing.assert_allclose(loc.grad.numpy(), x.detach().sum().numpy(), rtol=1e-12)

        loc, scale = leaf([1.0]), leaf([0.5])
        x = D.Laplace(loc, scale).rsample((50,))
        x.sum().backward()
        expected = ((x.detach() - loc.detach()) / scale.detach()).sum(0)
        np.testing.assert_allclose(scale.grad.numpy(), expected.numpy(), rtol=1e-12)

        loc, tril = leaf([0.0, 1.0]), leaf([[1.0, 0.0], [0.3, 0.5]])
        x = D.MultivariateNormal(loc, scale_tril=tril).rsample((40,))
        x.sum().backward()
        np.testing.assert_allclose(loc.grad.numpy(), [40.0, 40.0])
        # d/dL of sum(L @ eps) is eps summed over the samples, in every row: above the
        # diagonal too, as PyTorch's (scale_tril is used as given).
        rows = tril.grad.numpy()
        np.testing.assert_allclose(rows[0], rows[1], rtol=1e-12)
        assert rows[0, 1] != 0.0


def test_rsample_gives_a_pathwise_gradient_estimate() -> None:
    # d/dloc E[x^2] = 2 loc and d/dscale E[x^2] = 2 scale for x ~ Normal(loc, scale).
    plugrad.manual_seed(3)
    loc, scale = leaf(0.7), leaf(1.3)
    (D.Normal(loc, scale).rsample((N,)) ** 2).mean().backward()
    assert loc.grad.item() == pytest.approx(1.4, abs=0.05)
    assert scale.grad.item() == pytest.approx(2.6, abs=0.05)


def test_log_prob_gives_a_score_function_gradient_estimate() -> None:
    # REINFORCE: d/dtheta E[f(a)] = E[f(a) * d log p(a) / d theta], for a ~ Categorical(logits).
    plugrad.manual_seed(5)
    logits = leaf([0.0, 0.5, -0.5])
    reward = t([1.0, 2.0, 4.0])
    dist = D.Categorical(logits=logits)
    action = dist.sample((N,))
    (dist.log_prob(action) * plugrad.take(reward, action)).mean().backward()
    probs = dist.probs.detach().numpy()
    expected = probs * (reward.numpy() - probs @ reward.numpy())
    np.testing.assert_allclose(logits.grad.numpy(), expected, atol=0.05)


def test_sample_has_no_rsample_for_discrete_distributions() -> None:
    with pytest.raises(NotImplementedError, match="use sample"):
        D.Bernoulli(probs=0.5).rsample()
    assert not D.Categorical(logits=plugrad.zeros(3)).has_rsample
    assert D.Independent(D.Normal(plugrad.zeros(2), 1.0), 1).has_rsample


def test_enumerate_support() -> None:
    d = D.Categorical(logits=plugrad.zeros(2, 3))
    assert d.enumerate_support().shape == (3, 2)
    assert d.enumerate_support(expand=False).tolist() == [[0], [1], [2]]
    assert D.Bernoulli(probs=t([0.5, 0.2])).enumerate_support().tolist() == [[0, 0], [1, 1]]
    support = D.OneHotCategorical(logits=plugrad.zeros(3)).enumerate_support()
    assert support.tolist() == np.eye(3).tolist()
