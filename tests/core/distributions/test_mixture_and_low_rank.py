"""MixtureSameFamily and LowRankMultivariateNormal: against ``torch.distributions``, samples,
bad input.

Values and parameter gradients are compared with PyTorch's on every backend in
float64 (the table and helpers of ``test_against_torch``), the KL divergences
too; samples' moments with the distribution's; every error path is checked for
its type and for a message that names the problem.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import distributions as D
from plugrad.errors import ArgumentError, InvalidArgumentError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

from ._helpers import F64, leaf, t  # noqa: E402
from .test_against_torch import (  # noqa: E402  (after the skip without PyTorch)
    Case,
    KLCase,
    assert_expand_agrees_with_torch,
    assert_kl_gradients_agree,
    compare,
    lower_cholesky,
    method_cases,
    positive_definite,
    uniform,
)

RNG = np.random.default_rng(47)


LOW_RANK = ("log_prob", "entropy", "mean", "mode", "variance", "stddev")
MATRICES = ("covariance_matrix", "precision_matrix", "scale_tril")

CASES: dict[str, Case] = {
    "LowRank": Case(
        lambda D, loc, factor, diag: D.LowRankMultivariateNormal(loc, factor, diag),
        (RNG.normal(size=(2, 3)), RNG.normal(size=(3, 2)), uniform(0.5, 2.0, 2, 3)),
        RNG.normal(size=(4, 2, 3)),
        LOW_RANK + MATRICES,
    ),
    "LowRank batched factor": Case(
        lambda D, loc, factor, diag: D.LowRankMultivariateNormal(loc, factor, diag),
        (RNG.normal(size=4), RNG.normal(size=(2, 1, 4, 3)), uniform(0.5, 2.0, 4)),
        RNG.normal(size=(5, 1, 1, 4)),
        LOW_RANK + MATRICES,
    ),
    "Mixture of normals": Case(
        lambda D, logits, loc, scale: D.MixtureSameFamily(
            D.Categorical(logits=logits), D.Normal(loc, scale)
        ),
        (RNG.normal(size=3), RNG.normal(size=(2, 3)) * 2, uniform(0.5, 2.0, 3)),
        RNG.normal(size=(4, 2)) * 2,
        ("log_prob", "mean", "variance", "stddev", "cdf"),
    ),
    "Mixture batched weights": Case(
        lambda D, probs, loc, scale: D.MixtureSameFamily(
            D.Categorical(probs=probs), D.Laplace(loc, scale)
        ),
        (uniform(0.1, 1.0, 2, 4), RNG.normal(size=(2, 4)), uniform(0.5, 2.0, 4)),
        RNG.normal(size=(3, 1)),
        ("log_prob", "mean", "variance", "cdf"),
    ),
    "Mixture of vectors": Case(
        lambda D, logits, loc, scale: D.MixtureSameFamily(
            D.Categorical(logits=logits), D.Independent(D.Normal(loc, scale), 1)
        ),
        (RNG.normal(size=(2, 3)), RNG.normal(size=(2, 3, 2)), uniform(0.5, 2.0, 3, 2)),
        RNG.normal(size=(4, 2, 2)),
        ("log_prob", "mean", "variance"),
    ),
    "Mixture of low-rank normals": Case(
        lambda D, logits, loc, factor, diag: D.MixtureSameFamily(
            D.Categorical(logits=logits), D.LowRankMultivariateNormal(loc, factor, diag)
        ),
        (RNG.normal(size=3), RNG.normal(size=(3, 2)), RNG.normal(size=(2, 1)), uniform(1, 2, 2)),
        RNG.normal(size=(4, 2)),
        ("log_prob", "mean", "variance"),
    ),
    "Mixture of Poissons": Case(
        lambda D, logits, rate: D.MixtureSameFamily(D.Categorical(logits=logits), D.Poisson(rate)),
        (RNG.normal(size=2), uniform(0.5, 10.0, 2)),
        RNG.integers(0, 12, (5,)).astype(float),
        ("log_prob", "mean", "variance"),
    ),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(**method_cases(CASES))
def test_agrees_with_torch(name: str, method: str, backend: str) -> None:
    compare(CASES[name], method, backend)


KL_CASES: dict[str, KLCase] = {
    "LowRank-LowRank": (
        lambda D, a, b, c, d, e, f: (
            D.LowRankMultivariateNormal(a, b, c),
            D.LowRankMultivariateNormal(d, e, f),
        ),
        (
            RNG.normal(size=(2, 3)), RNG.normal(size=(3, 2)), uniform(0.5, 2, 3),
            RNG.normal(size=3), RNG.normal(size=(2, 3, 1)), uniform(0.5, 2, 2, 3),
        ),
    ),
    "MultivariateNormal-LowRank": (
        lambda D, a, b, c, d, e: (
            D.MultivariateNormal(a, scale_tril=b),
            D.LowRankMultivariateNormal(c, d, e),
        ),
        (
            RNG.normal(size=(2, 3)), lower_cholesky(3, 3),
            RNG.normal(size=3), RNG.normal(size=(2, 3, 2)), uniform(0.5, 2, 3),
        ),
    ),
    "LowRank-MultivariateNormal": (
        lambda D, a, b, c, d, e: (
            D.LowRankMultivariateNormal(a, b, c),
            D.MultivariateNormal(d, covariance_matrix=e),
        ),
        (
            RNG.normal(size=3), RNG.normal(size=(2, 3, 2)), uniform(0.5, 2, 3),
            RNG.normal(size=(2, 3)), positive_definite(3, 3),
        ),
    ),
    "LowRank-MultivariateNormal scale_tril": (
        lambda D, a, b, c, d, e: (
            D.LowRankMultivariateNormal(a, b, c),
            D.MultivariateNormal(d, scale_tril=e),
        ),
        (
            RNG.normal(size=(2, 3)), RNG.normal(size=(3, 1)), uniform(0.5, 2, 2, 3),
            RNG.normal(size=3), lower_cholesky(2, 3, 3),
        ),
    ),
}  # fmt: skip


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(KL_CASES))
def test_kl_divergence_agrees_with_torch(name: str, backend: str) -> None:
    symmetric = (4,) if name == "LowRank-MultivariateNormal" else ()
    assert_kl_gradients_agree(KL_CASES[name], backend, symmetric=symmetric)


def test_kl_of_equal_low_rank_normals_is_zero_and_matches_the_full_covariance_formula() -> None:
    loc, factor, diag = t([0.5, -1.0, 2.0]), t([[1.0], [0.5], [-0.3]]), t([1.0, 2.0, 0.5])
    p = D.LowRankMultivariateNormal(loc, factor, diag)
    assert D.kl_divergence(p, p).item() == pytest.approx(0.0, abs=1e-12)
    q = D.LowRankMultivariateNormal(loc * 0, factor * 2, diag + 1)
    full_p = D.MultivariateNormal(p.loc, covariance_matrix=p.covariance_matrix)
    full_q = D.MultivariateNormal(q.loc, covariance_matrix=q.covariance_matrix)
    expected = D.kl_divergence(full_p, full_q).item()
    for pair in ((p, q), (full_p, q), (p, full_q)):
        assert D.kl_divergence(*pair).item() == pytest.approx(expected, rel=1e-12)


def test_low_rank_matches_the_multivariate_normal_of_its_covariance() -> None:
    d = D.LowRankMultivariateNormal(t([[1.0, 0.0, -1.0]]), t([[2.0, 0.1], [0.5, -1.0], [0.0, 0.3]]),
                                    t([0.5, 1.5, 1.0]))  # fmt: skip
    full = D.MultivariateNormal(d.loc, covariance_matrix=d.covariance_matrix)
    value = t([[0.3, -2.0, 4.0], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(d.log_prob(value).numpy(), full.log_prob(value).numpy(), rtol=1e-12)
    np.testing.assert_allclose(d.entropy().numpy(), full.entropy().numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        d.precision_matrix.numpy(), np.linalg.inv(d.covariance_matrix.numpy()), rtol=1e-10
    )
    tril = d.scale_tril.numpy()
    np.testing.assert_allclose(tril @ np.swapaxes(tril, -1, -2), d.covariance_matrix.numpy())
    assert np.all(np.triu(tril[0], 1) == 0)


@pytest.mark.parametrize(
    ("build", "batch_shape"),
    [
        (lambda D, x: D.LowRankMultivariateNormal(x, x[..., None].exp(), x.exp()), (4, 1)),
        (
            lambda D, x: D.MixtureSameFamily(D.Categorical(logits=x[0]), D.Normal(x, x.exp())),
            (2, 1),
        ),
    ],
    ids=["LowRank", "Mixture"],
)
def test_expand_agrees_with_torch(build: Callable[..., Any], batch_shape: tuple[int, ...]) -> None:
    assert_expand_agrees_with_torch(build, RNG.normal(size=(1, 3)), batch_shape, "variance")


N = 40_000


def test_low_rank_samples_have_its_mean_and_covariance() -> None:
    plugrad.manual_seed(8)
    d = D.LowRankMultivariateNormal(t([1.0, -1.0, 0.0]), t([[1.0, 0.5], [0.0, 1.0], [1.0, -1.0]]),
                                    t([0.5, 0.2, 1.0]))  # fmt: skip
    x = d.sample((N,)).numpy()
    assert x.shape == (N, 3) and x.dtype == np.float64
    np.testing.assert_allclose(x.mean(0), d.mean.numpy(), atol=0.05)
    np.testing.assert_allclose(np.cov(x, rowvar=False), d.covariance_matrix.numpy(), atol=0.08)


@pytest.mark.parametrize("backend", backends_under_test())
def test_low_rank_rsample_gradients_are_those_of_the_reparameterization(backend: str) -> None:
    with plugrad.use_backend(backend):
        plugrad.manual_seed(0)
        loc, factor, diag = leaf([0.0, 1.0]), leaf([[1.0], [0.5]]), leaf([0.25, 4.0])
        x = D.LowRankMultivariateNormal(loc, factor, diag).rsample((30,))
        x.sum().backward()
        np.testing.assert_allclose(loc.grad.numpy(), [30.0, 30.0])
        # x = loc + W e1 + sqrt(d) e2: d/dW_i0 sum(x) = sum(e1) for every row i, and
        # d/dd_i sum(x) = sum(e2_i) / (2 sqrt(d_i)) = sum(x_i - loc_i - W_i0 e1) / (2 d_i)
        rows = factor.grad.numpy()
        np.testing.assert_allclose(rows[0], rows[1], rtol=1e-12)
        e1 = rows[0, 0] / 30
        residual = x.detach().numpy() - loc.detach().numpy()
        residual = residual.sum(0) - factor.detach().numpy()[:, 0] * e1 * 30
        np.testing.assert_allclose(diag.grad.numpy(), residual / (2 * diag.detach().numpy()))


def test_mixture_samples_have_its_moments_and_pick_components_by_weight() -> None:
    plugrad.manual_seed(9)
    mix = D.Categorical(probs=t([[0.2, 0.8], [0.5, 0.5]]))
    gmm = D.MixtureSameFamily(mix, D.Normal(t([-5.0, 5.0]), t([0.5, 1.0])))
    x = gmm.sample((N,)).numpy()
    assert x.shape == (N, 2) and x.dtype == np.float64
    np.testing.assert_allclose((x > 0).mean(0), [0.8, 0.5], atol=0.015)
    np.testing.assert_allclose(x.mean(0), gmm.mean.numpy(), atol=0.1)
    np.testing.assert_allclose(x.var(0), gmm.variance.numpy(), rtol=0.03)
    # each component keeps its own spread
    np.testing.assert_allclose(x[x[:, 0] < 0, 0].std(), 0.5, rtol=0.05)


def test_mixture_of_vectors_samples_whole_events_from_one_component() -> None:
    plugrad.manual_seed(10)
    loc = t([[-10.0, -10.0], [10.0, 10.0]])
    gmm = D.MixtureSameFamily(
        D.Categorical(logits=t([0.0, 0.0])), D.Independent(D.Normal(loc, 0.1), 1)
    )
    x = gmm.sample((1000,)).numpy()
    assert x.shape == (1000, 2)
    assert np.all(np.sign(x[:, 0]) == np.sign(x[:, 1]))  # never one coordinate of each
    assert 0.4 < (x[:, 0] > 0).mean() < 0.6


BUILDERS: dict[str, Callable[[], D.Distribution]] = {
    "LowRank": lambda: D.LowRankMultivariateNormal(
        t([[0.0, 1.0, 2.0]]), t([[1.0], [0.0], [2.0]]), t([1.0, 1.0, 0.5])
    ),
    "Mixture": lambda: D.MixtureSameFamily(
        D.Categorical(logits=t([0.0, 1.0])), D.Normal(t([[0.0, 3.0]]), 1.0)
    ),
    "Mixture of vectors": lambda: D.MixtureSameFamily(
        D.Categorical(logits=t([0.0, 1.0, 2.0])),
        D.Independent(D.Exponential(t([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])), 1),
    ),
    "Mixture of Binomials": lambda: D.MixtureSameFamily(
        D.Categorical(probs=t([[0.3, 0.7]])), D.Binomial(10, probs=t([0.2, 0.7]))
    ),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(BUILDERS))
def test_sample_shapes_and_reproducibility_on_every_backend(name: str, backend: str) -> None:
    with plugrad.use_backend(backend):
        dist = BUILDERS[name]()
        batch, event = tuple(dist.batch_shape), tuple(dist.event_shape)
        for sample_shape in [(), (5,), (2, 3)]:
            x = dist.sample(sample_shape)
            assert x.shape == sample_shape + batch + event
            assert x.dtype == F64 and not x.requires_grad
            if dist.has_rsample:
                assert dist.rsample(sample_shape).shape == sample_shape + batch + event
        plugrad.manual_seed(5)
        first = dist.sample((20,))
        plugrad.manual_seed(5)
        assert np.array_equal(first.numpy(), dist.sample((20,)).numpy())
        assert np.isfinite(dist.log_prob(first).numpy()).all()


def test_mixture_support_and_repr() -> None:
    gmm = BUILDERS["Mixture of vectors"]()
    assert repr(gmm.support) == (
        "MixtureSameFamilyConstraint(IndependentConstraint(GreaterThanEq(lower_bound=0.0), 1))"
    )
    assert gmm.support.event_dim == 1 and not gmm.support.is_discrete
    assert gmm.support.check(t([[1.0, 2.0], [1.0, -2.0]])).tolist() == [True, False]
    assert BUILDERS["Mixture of Binomials"]().support.is_discrete
    # (PyTorch's shows the mixture's logits too: its constructor computes them)
    mixture = D.MixtureSameFamily(D.Categorical(probs=t([0.5, 0.5])), D.Normal(t([0.0, 1.0]), 1.0))
    assert repr(mixture) == (
        "MixtureSameFamily(\n  Categorical(probs: plugrad.Size([2])),\n"
        "  Normal(loc: plugrad.Size([2]), scale: plugrad.Size([2])))"
    )


def test_mixture_with_a_wider_mixing_batch_has_the_broadcast_batch_shape() -> None:
    # PyTorch's batch_shape is the components' (1,) though log_prob gives (3,); ours is (3,)
    mix = D.Categorical(logits=t(RNG.normal(size=(3, 2))))
    gmm = D.MixtureSameFamily(mix, D.Normal(t([[0.0, 2.0]]), 1.0))
    assert tuple(gmm.batch_shape) == (3,)
    assert gmm.log_prob(t(0.5)).shape == gmm.mean.shape == gmm.sample().shape == (3,)
    assert gmm.sample((4,)).shape == (4, 3)


def test_bad_low_rank_arguments_raise() -> None:
    loc, factor, diag = t([0.0, 0.0]), t([[1.0], [0.0]]), t([1.0, 1.0])
    L = D.LowRankMultivariateNormal
    with pytest.raises(ShapeError, match="loc must be at least one-dimensional"):
        L(t(0.0), factor, diag)
    with pytest.raises(ShapeError, match="cov_factor must be at least two-dimensional"):
        L(loc, t([1.0, 0.0]), diag)
    with pytest.raises(
        ShapeError, match=r"cov_factor must be a batch of matrices with shape 2 x m"
    ):
        L(loc, t([[1.0], [0.0], [0.0]]), diag)
    with pytest.raises(ShapeError, match=r"cov_diag must be a batch of vectors with shape \(2,\)"):
        L(loc, factor, t([1.0, 1.0, 1.0]))
    with pytest.raises(ShapeError, match="incompatible batch shapes"):
        L(t(np.zeros((2, 2))), t(np.ones((3, 2, 1))), diag)
    with pytest.raises(ArgumentError, match="cov_diag must be a Tensor"):
        L(loc, factor, [1.0, 1.0])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"parameter cov_diag .*GreaterThan"):
        L(loc, factor, t([1.0, -1.0]))
    with pytest.raises(InvalidArgumentError, match=r"parameter loc .*Real"):
        L(t([0.0, math.nan]), factor, diag)
    with pytest.raises(InvalidArgumentError, match=r"parameter cov_factor"):
        L(loc, t([[math.nan], [0.0]]), diag)
    d = L(loc, factor, diag)
    with pytest.raises(ShapeError, match="right-most size of value must match event_shape"):
        d.log_prob(t([0.0, 0.0, 0.0]))
    with pytest.raises(InvalidArgumentError, match="to be within the support"):
        d.log_prob(t([0.0, math.nan]))
    with pytest.raises(ShapeError, match=r"different event shapes: \(2,\) and \(3,\)"):
        D.kl_divergence(d, L(t([0.0, 0.0, 0.0]), t([[1.0], [0.0], [0.0]]), t([1.0, 1.0, 1.0])))
    mvn = D.MultivariateNormal(t([0.0]), scale_tril=t([[1.0]]))
    for pair in ((d, mvn), (mvn, d)):
        with pytest.raises(ShapeError, match="different event shapes"):
            D.kl_divergence(*pair)


def test_bad_mixture_arguments_raise() -> None:
    normal = D.Normal(t([0.0, 1.0]), 1.0)
    two = D.Categorical(logits=t([0.0, 0.0]))
    M = D.MixtureSameFamily
    with pytest.raises(InvalidArgumentError, match=r"mixture_distribution must be a .*Categorical"):
        M(D.OneHotCategorical(logits=t([0.0, 0.0])), normal)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="component_distribution must be a"):
        M(two, t([0.0, 1.0]))  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match=r"3 components but .*batch_shape\[-1\] is 2"):
        M(D.Categorical(logits=t([0.0, 0.0, 0.0])), normal)
    with pytest.raises(ShapeError, match=r"batch_shape \(3,\) is not compatible with .* \(2,\)"):
        M(D.Categorical(logits=t(np.zeros((3, 2)))), D.Normal(t(np.zeros((2, 2))), 1.0))
    with pytest.raises(ShapeError, match="batch axis indexing the components"):
        M(D.Categorical(logits=t([0.0])), D.Normal(t(0.0), 1.0))
    gmm = M(two, D.Exponential(t([1.0, 2.0])))
    with pytest.raises(InvalidArgumentError, match="MixtureSameFamilyConstraint") as info:
        gmm.log_prob(t([1.0, -1.0]))
    assert "to be within the support" in str(info.value)
    with pytest.raises(ShapeError, match="not broadcastable"):
        M(two, normal).expand((3,)).log_prob(t([0.0, 0.0]))
    with pytest.raises(NotImplementedError, match="use sample"):
        M(two, normal).rsample()
