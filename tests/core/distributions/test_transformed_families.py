"""TransformedDistribution, and the families PyTorch builds on transforms (and Cauchy, the
relaxed and continuous Bernoullis).

Values and parameter gradients against ``torch.distributions`` on every backend,
in float64, with the ``Case`` table of ``test_against_torch``; KL pairs against
PyTorch's; samples' statistics, shapes, reproducibility and reparameterized
gradients (against finite differences of the draws); bad input.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import distributions as D
from plugrad.distributions import transforms as T
from plugrad.errors import ArgumentError, InvalidArgumentError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

from ._helpers import (  # noqa: E402
    F64,
    Builder,
    assert_sample_shapes,
    assert_seeded_draws_repeat,
    seeded,
    t,
)
from .test_against_torch import (  # noqa: E402  (after the skip without PyTorch)
    Case,
    KLCase,
    compare,
    compare_kl,
    method_cases,
)

RNG, uniform = seeded(37)


UNIT = uniform(0.05, 0.95, 4, 2, 3)
SIMPLEX = RNG.dirichlet([1.0, 2.0, 3.0, 2.0], size=(5, 2))
CORR_CHOLESKY = (
    torch.distributions.transforms.CorrCholeskyTransform()(torch.tensor(RNG.normal(size=(5, 2, 3))))
    .numpy()
    .copy()
)


def relaxed(D: Any, name: str) -> Any:
    """The relaxed class ``name``: PyTorch keeps two of them out of ``torch.distributions``."""
    if hasattr(D, name):
        return getattr(D, name)
    module = D.relaxed_categorical if "Categorical" in name else D.relaxed_bernoulli
    return getattr(module, name)


UNIVARIATE = ("log_prob", "entropy", "mean", "mode", "variance", "cdf", "icdf")

CASES: dict[str, Case] = {
    "Cauchy": Case(
        lambda D, loc, scale: D.Cauchy(loc, scale),
        (RNG.normal(size=3), uniform(0.5, 2.0, 2, 1)),
        RNG.normal(size=(4, 1, 3)) * 3,
        UNIVARIATE,
        UNIT,
    ),
    "HalfCauchy": Case(
        lambda D, scale: D.HalfCauchy(scale),
        (uniform(0.5, 2.0, 2, 3),),
        uniform(0.0, 5.0, 4, 2, 3),
        UNIVARIATE,
        UNIT,
    ),
    "HalfNormal": Case(
        lambda D, scale: D.HalfNormal(scale),
        (uniform(0.5, 2.0, 3),),
        uniform(0.0, 4.0, 4, 2, 3),
        (*UNIVARIATE, "stddev"),
        UNIT,
    ),
    "Gumbel": Case(
        lambda D, loc, scale: D.Gumbel(loc, scale),
        (uniform(-1.0, 1.0, 3), uniform(1.0, 2.0, 2, 1)),
        uniform(-3.0, 5.0, 4, 2, 3),  # (PyTorch's cdf refuses values far in the tails)
        (*UNIVARIATE, "stddev"),
        UNIT,
    ),
    "Weibull": Case(
        lambda D, scale, k: D.Weibull(scale, k),
        (uniform(0.5, 2.0, 3), uniform(1.2, 3.0, 2, 1)),
        uniform(0.1, 3.0, 4, 2, 3),
        UNIVARIATE,
        UNIT,
    ),
    "Pareto": Case(
        lambda D, scale, alpha: D.Pareto(scale, alpha),
        (uniform(0.5, 1.5, 3), uniform(2.5, 4.0, 2, 1)),
        uniform(1.6, 5.0, 4, 2, 3),
        UNIVARIATE,
        UNIT,
    ),
    "Kumaraswamy": Case(
        lambda D, a, b: D.Kumaraswamy(a, b),
        (uniform(0.5, 3.0, 3), uniform(0.5, 3.0, 2, 1)),
        uniform(0.05, 0.95, 4, 2, 3),
        ("log_prob", "entropy", "mean", "variance", "cdf", "icdf"),
        UNIT,
    ),
    "LogisticNormal": Case(
        lambda D, loc, scale: D.LogisticNormal(loc, scale),
        (RNG.normal(size=(2, 3)), uniform(0.5, 2.0, 3)),
        SIMPLEX,
        ("log_prob",),
    ),
    "LogitRelaxedBernoulli probs": Case(
        lambda D, t, p: relaxed(D, "LogitRelaxedBernoulli")(t, probs=p),
        (np.array(0.7), uniform(0.05, 0.95, 2, 3)),
        RNG.normal(size=(4, 2, 3)) * 2,
        ("log_prob",),
    ),
    "LogitRelaxedBernoulli logits": Case(
        lambda D, t, logits: relaxed(D, "LogitRelaxedBernoulli")(t, logits=logits),
        (np.array(1.3), RNG.normal(size=3) * 2),
        RNG.normal(size=(4, 2, 3)) * 30,  # (large |d|: PyTorch's log1p(e**d) is exact below 709)
        ("log_prob",),
    ),
    "RelaxedBernoulli": Case(
        lambda D, t, p: D.RelaxedBernoulli(t, probs=p),
        (np.array(0.5), uniform(0.05, 0.95, 2, 3)),
        uniform(0.02, 0.98, 4, 2, 3),
        ("log_prob",),
    ),
    "ExpRelaxedCategorical": Case(
        lambda D, t, logits: relaxed(D, "ExpRelaxedCategorical")(t, logits=logits),
        (np.array(0.8), RNG.normal(size=(2, 4))),
        np.log(SIMPLEX),
        ("log_prob",),
    ),
    "RelaxedOneHotCategorical": Case(
        lambda D, t, p: D.RelaxedOneHotCategorical(t, probs=p),
        (np.array(1.5), RNG.dirichlet([1.0, 1.0, 1.0, 1.0], size=2)),
        SIMPLEX,
        ("log_prob",),
    ),
    "ContinuousBernoulli probs": Case(
        lambda D, p: D.ContinuousBernoulli(probs=p),
        (np.array([[0.2, 0.4995, 0.8], [0.05, 0.5, 0.7]]),),  # two within lims, by 1/2
        uniform(0.02, 0.98, 4, 2, 3),
        ("log_prob", "entropy", "mean", "variance", "stddev", "cdf", "icdf"),
        UNIT,
    ),
    "ContinuousBernoulli logits": Case(
        lambda D, logits: D.ContinuousBernoulli(logits=logits),
        (RNG.normal(size=(2, 3)) * 2,),
        uniform(0.02, 0.98, 4, 1, 3),
        ("log_prob", "entropy", "mean", "variance", "cdf", "icdf"),
        UNIT,
    ),
    # TransformedDistribution itself
    "Logistic": Case(
        lambda D, low, high, loc, scale: D.TransformedDistribution(
            D.Uniform(low, high),
            [D.transforms.SigmoidTransform().inv, D.transforms.AffineTransform(loc, scale)],
        ),
        (np.zeros(3), np.ones(3), RNG.normal(size=3), uniform(0.5, 2.0, 2, 1)),
        RNG.normal(size=(4, 2, 3)) * 2,
        ("log_prob", "cdf", "icdf"),
        UNIT,
    ),
    "Tanh-squashed normal": Case(
        lambda D, loc, scale: D.TransformedDistribution(
            D.Normal(loc, scale), [D.transforms.TanhTransform()]
        ),
        (RNG.normal(size=(2, 3)), uniform(0.3, 1.5, 3)),
        uniform(-0.95, 0.95, 4, 2, 3),
        ("log_prob", "cdf", "icdf"),
        UNIT,
    ),
    "Decreasing affine": Case(
        lambda D, loc, scale: D.TransformedDistribution(
            D.Normal(loc, 1.0), [D.transforms.AffineTransform(2.0, -scale)]
        ),
        (RNG.normal(size=3), uniform(0.5, 2.0, 3)),
        RNG.normal(size=(4, 3)),
        ("log_prob", "cdf", "icdf"),
        UNIT[..., 0, :],
    ),
    "Power widening a uniform's batch": Case(
        lambda D, low, high, e: D.TransformedDistribution(
            D.Uniform(low, high), [D.transforms.PowerTransform(e)]
        ),
        (np.array(0.1), np.array(0.9), uniform(0.5, 3.0, 3)),
        uniform(0.2, 0.6, 4, 3),
        ("log_prob", "cdf", "icdf"),
        UNIT[..., 0, :],
    ),
    "Exp then affine of vectors": Case(
        lambda D, loc, scale, s: D.TransformedDistribution(
            D.Normal(loc, scale),
            [D.transforms.ExpTransform(), D.transforms.AffineTransform(0.0, s, event_dim=1)],
        ),
        (RNG.normal(size=(2, 3)), uniform(0.5, 1.5, 3), uniform(0.5, 2.0, 3)),
        uniform(0.1, 3.0, 4, 2, 3),
        ("log_prob",),
    ),
    "Stick breaking of a batch": Case(
        lambda D, loc, scale: D.TransformedDistribution(
            D.Normal(loc, scale), D.transforms.StickBreakingTransform()
        ),
        (RNG.normal(size=(2, 3)), uniform(0.5, 2.0, 3)),
        SIMPLEX,
        ("log_prob",),
    ),
    "Independent exp": Case(
        lambda D, loc, scale: D.TransformedDistribution(
            D.Normal(loc, scale),
            [D.transforms.IndependentTransform(D.transforms.ExpTransform(), 1)],
        ),
        (RNG.normal(size=(2, 3)), uniform(0.5, 2.0, 3)),
        uniform(0.1, 3.0, 4, 2, 3),
        ("log_prob",),
    ),
    "Reshape": Case(
        lambda D, loc, scale: D.TransformedDistribution(
            D.Independent(D.Normal(loc, scale), 1), [D.transforms.ReshapeTransform((6,), (2, 3))]
        ),
        (RNG.normal(size=(2, 6)), uniform(0.5, 2.0, 6)),
        RNG.normal(size=(4, 2, 2, 3)),
        ("log_prob",),
    ),
    "Correlation Cholesky factors": Case(
        lambda D, loc, scale: D.TransformedDistribution(
            D.Normal(loc, scale), [D.transforms.CorrCholeskyTransform()]
        ),
        (RNG.normal(size=(2, 3)), uniform(0.5, 2.0, 3)),
        CORR_CHOLESKY,
        ("log_prob",),
    ),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(**method_cases(CASES))
def test_agrees_with_torch(name: str, method: str, backend: str) -> None:
    through_trigamma = (name, method) in THROUGH_TRIGAMMA
    compare(CASES[name], method, backend, through_trigamma=through_trigamma)


#: Gradients through digamma: PyTorch's trigamma is off by up to 5e-10 relative.
THROUGH_TRIGAMMA = {("Kumaraswamy", "entropy")}


@pytest.mark.parametrize("name", list(CASES))
def test_shapes_support_and_expand_agree_with_torch(name: str) -> None:
    case = CASES[name]
    ours = case.build(plugrad.distributions, *(plugrad.asarray(p) for p in case.params))
    theirs = case.build(torch.distributions, *(torch.tensor(p) for p in case.params))
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    assert ours.has_rsample == True  # noqa: E712  (PyTorch's LogitRelaxedBernoulli says False)
    support, expected = repr(ours.support), repr(theirs.support)
    if "Pareto" not in name:  # (a tensor bound: compared below)
        assert support == expected
    assert tuple(ours.sample((2,)).shape) == tuple(theirs.sample((2,)).shape)
    batch = (5, *ours.batch_shape)
    wide_ours, wide_theirs = ours.expand(batch), theirs.expand(batch)
    assert tuple(wide_ours.batch_shape) == tuple(wide_theirs.batch_shape)
    assert tuple(wide_ours.event_shape) == tuple(wide_theirs.event_shape)
    value = wide_theirs.sample()
    np.testing.assert_allclose(
        wide_ours.log_prob(plugrad.asarray(value.numpy())).numpy(),
        wide_theirs.log_prob(value).numpy(),
        rtol=1e-9,
    )
    assert type(wide_ours) is type(ours) and wide_ours._validate_args == ours._validate_args
    assert repr(ours).replace("plugrad.Size", "torch.Size") == repr(theirs)


def test_pareto_support_is_greater_than_eq_its_scale() -> None:
    scale = plugrad.tensor([1.0, 2.0], dtype=F64)
    support = D.Pareto(scale, 3.0).support
    assert type(support) is type(D.constraints.greater_than_eq(0.0))
    assert support.lower_bound.tolist() == [1.0, 2.0]
    assert support.check(plugrad.tensor([1.0, 1.5], dtype=F64)).tolist() == [True, False]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_number_parameters_take_the_default_dtype_and_agree_with_torch(dtype: str) -> None:
    builds = [
        lambda D: D.Cauchy(0.5, 2.0),
        lambda D: D.HalfCauchy(2.0),
        lambda D: D.HalfNormal(1.5),
        lambda D: D.Gumbel(1.0, 2.0),
        lambda D: D.Weibull(1.5, 2.0),
        lambda D: D.Pareto(1.0, 3.0),
        lambda D: D.Kumaraswamy(2.0, 3.0),
        lambda D: D.ContinuousBernoulli(0.3),
    ]
    values = {
        "Pareto": [1.6, 2.2, 1.9],
        "Kumaraswamy": [0.6, 0.2],
        "ContinuousBernoulli": [0.6, 0.2],
    }
    previous = plugrad.get_default_dtype(), torch.get_default_dtype()
    plugrad.set_default_dtype(getattr(plugrad, dtype))
    torch.set_default_dtype(getattr(torch, dtype))
    try:
        for build in builds:
            ours, theirs = build(plugrad.distributions), build(torch.distributions)
            assert tuple(ours.batch_shape) == tuple(theirs.batch_shape) == ()
            x = values.get(type(ours).__name__, [0.6, 1.2, 0.9])
            got = ours.log_prob(plugrad.tensor(x))
            expected = theirs.log_prob(torch.tensor(x))
            assert str(got.dtype).rpartition(".")[2] == dtype
            np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5)
    finally:
        plugrad.set_default_dtype(previous[0])
        torch.set_default_dtype(previous[1])


# -- KL divergence ---------------------------------------------------------------------------

KL_CASES: dict[str, KLCase] = {
    "Cauchy-Cauchy": (
        lambda D, a, b, c, d: (D.Cauchy(a, b), D.Cauchy(c, d)),
        (RNG.normal(size=3), uniform(0.5, 2, 2, 1), RNG.normal(size=(2, 3)), uniform(0.5, 2, 3)),
    ),
    "HalfCauchy-HalfCauchy": (
        lambda D, a, b: (D.HalfCauchy(a), D.HalfCauchy(b)),
        (uniform(0.5, 2, 3), uniform(0.5, 2, 3)),
    ),
    "HalfNormal-HalfNormal": (
        lambda D, a, b: (D.HalfNormal(a), D.HalfNormal(b)),
        (uniform(0.5, 2, 2, 3), uniform(0.5, 2, 3)),
    ),
    "Gumbel-Gumbel": (
        lambda D, a, b, c, d: (D.Gumbel(a, b), D.Gumbel(c, d)),
        (RNG.normal(size=3), uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "Pareto-Pareto": (
        lambda D, a, b, c, d: (D.Pareto(a, b), D.Pareto(c, d)),
        (
            np.array([1.0, 2.0, 1.5, 0.5]),
            uniform(0.5, 3, 4),
            np.array([0.5, 1.0, 1.5, 1.0]),  # the last: p below q's minimum, inf
            uniform(0.5, 3, 4),
        ),
    ),
    "LogisticNormal-LogisticNormal": (
        lambda D, a, b, c, d: (D.LogisticNormal(a, b), D.LogisticNormal(c, d)),
        (RNG.normal(size=(2, 3)), uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "TransformedDistribution-TransformedDistribution": (
        lambda D, a, b, c, d: (
            D.TransformedDistribution(D.Normal(a, b), [D.transforms.ExpTransform()]),
            D.TransformedDistribution(D.Normal(c, d), [D.transforms.ExpTransform()]),
        ),
        (RNG.normal(size=3), uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "ContinuousBernoulli-ContinuousBernoulli": (
        lambda D, a, b: (D.ContinuousBernoulli(probs=a), D.ContinuousBernoulli(logits=b)),
        (np.array([0.2, 0.4995, 0.8, 0.5]), RNG.normal(size=4)),
    ),
    "ContinuousBernoulli-Exponential": (
        lambda D, a, b: (D.ContinuousBernoulli(probs=a), D.Exponential(b)),
        (uniform(0.05, 0.95, 3), uniform(0.5, 2, 3)),
    ),
    "ContinuousBernoulli-Normal": (
        lambda D, a, b, c: (D.ContinuousBernoulli(logits=a), D.Normal(b, c)),
        (RNG.normal(size=3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "ContinuousBernoulli-Uniform": (
        lambda D, a, b, c: (D.ContinuousBernoulli(probs=a), D.Uniform(b, c)),
        (uniform(0.05, 0.95, 3), np.array([-0.5, 0.2, -1.0]), np.array([1.5, 2.0, 0.5])),
    ),
    "Uniform-ContinuousBernoulli": (
        lambda D, a, b, c: (D.Uniform(a, b), D.ContinuousBernoulli(probs=c)),
        (np.array([0.1, -0.5, 0.3]), np.array([0.8, 0.5, 0.9]), uniform(0.05, 0.95, 3)),
    ),
    "Beta-ContinuousBernoulli": (
        lambda D, a, b, c: (D.Beta(a, b), D.ContinuousBernoulli(probs=c)),
        (uniform(0.5, 3, 3), uniform(0.5, 3, 3), uniform(0.05, 0.95, 3)),
    ),
    "Exponential-Gumbel": (
        lambda D, a, b, c: (D.Exponential(a), D.Gumbel(b, c)),
        (uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "Gamma-Gumbel": (
        lambda D, a, b, c, d: (D.Gamma(a, b), D.Gumbel(c, d)),
        (uniform(0.5, 3, 3), uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "Gumbel-Normal": (
        lambda D, a, b, c, d: (D.Gumbel(a, b), D.Normal(c, d)),
        (RNG.normal(size=3), uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "Normal-Gumbel": (
        lambda D, a, b, c, d: (D.Normal(a, b), D.Gumbel(c, d)),
        (RNG.normal(size=3), uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "Uniform-Gumbel": (
        lambda D, a, b, c, d: (D.Uniform(a, b), D.Gumbel(c, d)),
        (uniform(-2, 0, 3), uniform(0.5, 2, 3), RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "Pareto-Exponential": (
        lambda D, a, b, c: (D.Pareto(a, b), D.Exponential(c)),
        (uniform(0.5, 2, 4), np.array([0.5, 0.9, 1.5, 3.0]), uniform(0.5, 2, 4)),
    ),
    "Pareto-Gamma": (
        lambda D, a, b, c, d: (D.Pareto(a, b), D.Gamma(c, d)),
        (
            uniform(0.5, 2, 4),
            np.array([0.5, 0.9, 1.5, 3.0]),
            uniform(0.5, 3, 4),
            uniform(0.5, 2, 4),
        ),
    ),
    "Pareto-Normal": (
        lambda D, a, b, c, d: (D.Pareto(a, b), D.Normal(c, d)),
        (
            uniform(0.5, 2, 4),
            np.array([1.5, 1.9, 2.5, 4.0]),
            RNG.normal(size=4),
            uniform(0.5, 2, 4),
        ),
    ),
    "Uniform-Pareto": (
        lambda D, a, b, c, d: (D.Uniform(a, b), D.Pareto(c, d)),
        (
            np.array([1.0, 0.3, 0.5, 2.0]),  # (a negative low: PyTorch's gradient is nan)
            np.array([3.0, 2.0, 4.0, 2.5]),
            np.array([0.5, 0.5, 1.0, 1.5]),
            uniform(0.5, 3, 4),
        ),
    ),
}

INFINITE_PAIRS: dict[str, Callable[..., Any]] = {
    "ContinuousBernoulli-Pareto": lambda D, t: (
        D.ContinuousBernoulli(logits=t),
        D.Pareto(t.exp(), 2.0),
    ),
    "Exponential-ContinuousBernoulli": lambda D, t: (
        D.Exponential(t.exp()),
        D.ContinuousBernoulli(logits=t),
    ),
    "Exponential-Pareto": lambda D, t: (D.Exponential(t.exp()), D.Pareto(t.exp(), 2.0)),
    "Gamma-ContinuousBernoulli": lambda D, t: (
        D.Gamma(t.exp(), 1.0),
        D.ContinuousBernoulli(logits=t),
    ),
    "Gamma-Pareto": lambda D, t: (D.Gamma(t.exp(), 1.0), D.Pareto(t.exp(), 2.0)),
    "Gumbel-Beta": lambda D, t: (D.Gumbel(t, 1.0), D.Beta(t.exp(), 2.0)),
    "Gumbel-ContinuousBernoulli": lambda D, t: (
        D.Gumbel(t, 1.0),
        D.ContinuousBernoulli(logits=t),
    ),
    "Gumbel-Exponential": lambda D, t: (D.Gumbel(t, 1.0), D.Exponential(t.exp())),
    "Gumbel-Gamma": lambda D, t: (D.Gumbel(t, 1.0), D.Gamma(t.exp(), 1.0)),
    "Gumbel-Pareto": lambda D, t: (D.Gumbel(t, 1.0), D.Pareto(t.exp(), 2.0)),
    "Gumbel-Uniform": lambda D, t: (D.Gumbel(t, 1.0), D.Uniform(t - 1, t + 1)),
    "Laplace-ContinuousBernoulli": lambda D, t: (
        D.Laplace(t, 1.0),
        D.ContinuousBernoulli(logits=t),
    ),
    "Laplace-Pareto": lambda D, t: (D.Laplace(t, 1.0), D.Pareto(t.exp(), 2.0)),
    "Normal-ContinuousBernoulli": lambda D, t: (
        D.Normal(t, 1.0),
        D.ContinuousBernoulli(logits=t),
    ),
    "Normal-Pareto": lambda D, t: (D.Normal(t, 1.0), D.Pareto(t.exp(), 2.0)),
    "Pareto-Beta": lambda D, t: (D.Pareto(t.exp(), 2.0), D.Beta(2.0, t.exp())),
    "Pareto-ContinuousBernoulli": lambda D, t: (
        D.Pareto(t.exp(), 2.0),
        D.ContinuousBernoulli(logits=t),
    ),
    "Pareto-Uniform": lambda D, t: (D.Pareto(t.exp(), 2.0), D.Uniform(0.0, t.exp() + 5)),
    "Beta-Pareto": lambda D, t: (D.Beta(t.exp(), 2.0), D.Pareto(t.exp(), 2.0)),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(KL_CASES))
def test_kl_divergence_agrees_with_torch(name: str, backend: str) -> None:
    compare_kl(KL_CASES[name], backend, name, through_trigamma=True)


@pytest.mark.parametrize("name", list(INFINITE_PAIRS))
def test_kl_where_q_misses_part_of_p_is_infinite_as_pytorchs(name: str) -> None:
    values = RNG.normal(size=(2, 3)) * 0.5
    pair = INFINITE_PAIRS[name]
    ours = D.kl_divergence(*pair(plugrad.distributions, plugrad.tensor(values)))
    theirs = torch.distributions.kl_divergence(*pair(torch.distributions, torch.tensor(values)))
    assert ours.tolist() == theirs.tolist() == np.full((2, 3), np.inf).tolist()


def test_kl_of_transformed_distributions_needs_equal_transforms() -> None:
    p = D.TransformedDistribution(D.Normal(0.0, 1.0), [T.ExpTransform()])
    q = D.TransformedDistribution(D.Normal(0.0, 1.0), [T.AffineTransform(0.0, 2.0)])
    with pytest.raises(NotImplementedError, match="equal transforms"):
        D.kl_divergence(p, q)
    relaxed = D.RelaxedBernoulli(1.0, probs=0.3), D.RelaxedBernoulli(2.0, probs=0.3)
    with pytest.raises(NotImplementedError, match=r"No KL.*LogitRelaxedBernoulli"):
        D.kl_divergence(*relaxed)  # equal transforms, no formula for the bases
    # Weibulls of equal parameters have equal transforms (once expanded too): their bases' KL.
    same = D.Weibull(1.0, 2.0), D.Weibull(1.0, 2.0).expand((2,))
    assert D.kl_divergence(*same).tolist() == [0.0, 0.0]


def continuous_bernoulli_expectation(q: Any, low: float, high: float, points: int) -> float:
    """``E[-log q(x)]`` for ``x`` uniform on ``[low, high]``, by the midpoint rule."""
    x = low + (np.arange(points) + 0.5) * (high - low) / points
    return float(-q.log_prob(plugrad.tensor(x, dtype=F64)).numpy().mean())


def test_kl_between_continuous_bernoulli_and_uniform_is_finite_where_supports_agree() -> None:
    # PyTorch's is inf at Uniform(0, 1) either way round, where the divergence is finite.
    q = D.ContinuousBernoulli(probs=plugrad.tensor([0.2, 0.7], dtype=F64))
    unit = D.Uniform(plugrad.zeros(2, dtype=F64), plugrad.ones(2, dtype=F64))
    np.testing.assert_allclose(D.kl_divergence(q, unit).numpy(), -q.entropy().numpy())
    expected = [
        continuous_bernoulli_expectation(D.ContinuousBernoulli(probs=t(p)), 0.0, 1.0, 200000)
        for p in (0.2, 0.7)
    ]
    np.testing.assert_allclose(D.kl_divergence(unit, q).numpy(), expected, rtol=1e-8)


# -- sampling --------------------------------------------------------------------------------

N = 20000


BUILDERS: dict[str, Builder] = {
    "Cauchy": (lambda: D.Cauchy(t([0.0, 2.0]), t([1.0, 0.5])), (2,), ()),
    "HalfCauchy": (lambda: D.HalfCauchy(t([1.0, 3.0])), (2,), ()),
    "HalfNormal": (lambda: D.HalfNormal(t([1.0, 0.5])), (2,), ()),
    "Gumbel": (lambda: D.Gumbel(t([0.0, 1.0]), t([[1.0], [2.0]])), (2, 2), ()),
    "Weibull": (lambda: D.Weibull(t([1.0, 2.0]), t([0.8, 2.5])), (2,), ()),
    "Pareto": (lambda: D.Pareto(t([1.0, 2.0]), t([6.0, 8.0])), (2,), ()),
    "Kumaraswamy": (lambda: D.Kumaraswamy(t([0.5, 2.0]), t([2.0, 0.7])), (2,), ()),
    "ContinuousBernoulli": (
        lambda: D.ContinuousBernoulli(probs=t([0.1, 0.4995, 0.8])),
        (3,),
        (),
    ),
    "LogisticNormal": (
        lambda: D.LogisticNormal(t([[0.0, 1.0, -1.0]]), t([0.5, 1.0, 2.0])),
        (1,),
        (4,),
    ),
    "LogitRelaxedBernoulli": (
        lambda: D.LogitRelaxedBernoulli(t(0.5), probs=t([0.2, 0.6])),
        (2,),
        (),
    ),
    "RelaxedBernoulli": (lambda: D.RelaxedBernoulli(t(2.0), logits=t([-1.0, 1.0])), (2,), ()),
    "ExpRelaxedCategorical": (
        lambda: D.ExpRelaxedCategorical(t(0.3), probs=t([0.2, 0.3, 0.5])),
        (),
        (3,),
    ),
    "RelaxedOneHotCategorical": (
        lambda: D.RelaxedOneHotCategorical(t([0.4, 2.0]), logits=t([[0.0, 1.0, 2.0]] * 2)),
        (2,),
        (3,),
    ),
    "Tanh-squashed normal": (
        lambda: D.TransformedDistribution(D.Normal(t([0.0, 3.0]), 1.0), T.TanhTransform()),
        (2,),
        (),
    ),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(BUILDERS))
def test_sample_shapes(name: str, backend: str) -> None:
    build, batch, event = BUILDERS[name]
    with plugrad.use_backend(backend):
        dist = build()
        assert dist.has_rsample
        assert_sample_shapes(dist, batch, event)


def test_manual_seed_makes_sampling_reproducible() -> None:
    assert_seeded_draws_repeat(BUILDERS, again="rsample")


def draws(name: str, seed: int = 1234) -> tuple[Any, np.ndarray]:
    dist = BUILDERS[name][0]()
    plugrad.manual_seed(seed)
    return dist, dist.sample((N,)).numpy()


#: Those of ``BUILDERS`` with an ``icdf``: their draws are checked against it.
WITH_ICDF = ["Cauchy", "HalfCauchy", "HalfNormal", "Gumbel", "Weibull", "Pareto", "Kumaraswamy",
             "ContinuousBernoulli", "Tanh-squashed normal"]  # fmt: skip


@pytest.mark.parametrize("name", WITH_ICDF)
def test_samples_follow_the_cdf(name: str) -> None:
    # The fraction of draws below each quartile (and decile) is that probability.
    dist, x = draws(name)
    for p in (0.1, 0.25, 0.5, 0.75, 0.9):
        quantile = dist.icdf(plugrad.full(tuple(dist.batch_shape), p, dtype=F64)).numpy()
        fraction = (x <= quantile).mean(axis=0)
        np.testing.assert_allclose(fraction, p, atol=5 * math.sqrt(p * (1 - p) / N))
        np.testing.assert_allclose(dist.cdf(plugrad.asarray(quantile)).numpy(), p, rtol=1e-9)


@pytest.mark.parametrize(
    "name", ["HalfNormal", "Gumbel", "Weibull", "Pareto", "Kumaraswamy", "ContinuousBernoulli"]
)
def test_sample_moments(name: str) -> None:
    dist, x = draws(name)
    mean, variance = dist.mean.numpy(), dist.variance.numpy()
    np.testing.assert_allclose(x.mean(axis=0), mean, atol=float(np.max(5 * np.sqrt(variance / N))))
    np.testing.assert_allclose(x.var(axis=0), variance, rtol=0.08)


def test_relaxed_draws_are_gumbel_max_choices_and_logistic_logits() -> None:
    # The argmax of a relaxed one-hot draw is a categorical draw of the same probabilities.
    for name in ("ExpRelaxedCategorical", "RelaxedOneHotCategorical"):
        dist, x = draws(name)
        probs = np.broadcast_to(dist.probs.numpy(), x.shape[1:])
        for k in range(3):
            frequency = (x.argmax(-1) == k).mean(axis=0)
            np.testing.assert_allclose(frequency, probs[..., k], atol=4 * 0.5 / math.sqrt(N))
    _, x = draws("ExpRelaxedCategorical")
    np.testing.assert_allclose(np.exp(x).sum(-1), 1.0, rtol=1e-12)
    # temperature * draw - logits is standard logistic: mean 0, variance pi**2 / 3.
    dist, x = draws("LogitRelaxedBernoulli")
    noise = x * dist.temperature.item() - dist.logits.numpy()
    np.testing.assert_allclose(noise.mean(axis=0), 0.0, atol=5 * math.pi / math.sqrt(3 * N))
    np.testing.assert_allclose(noise.var(axis=0), math.pi**2 / 3, rtol=0.08)
    dist, x = draws("RelaxedBernoulli")
    noise = np.log(x / (1 - x)) * dist.temperature.item() - dist.logits.numpy()
    np.testing.assert_allclose(noise.mean(axis=0), 0.0, atol=5 * math.pi / math.sqrt(3 * N))


def test_logistic_normal_draws_are_normal_before_the_stick_breaking() -> None:
    dist, x = draws("LogisticNormal")
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-12)
    normal = T.StickBreakingTransform().inv(plugrad.asarray(x)).numpy()
    loc, scale = dist.loc.numpy()[0], dist.scale.numpy()[0]
    tolerance = float(5 * scale.max() / math.sqrt(N))
    np.testing.assert_allclose(normal.mean(axis=(0, 1)), loc, atol=tolerance)
    np.testing.assert_allclose(normal.std(axis=(0, 1)), scale, rtol=0.03)


# name -> (build(*parameters), parameter arrays): every draw depends on its own parameters only
# (and on a shared temperature), so the derivative of each draw is found by moving them all.
RSAMPLE_CASES: dict[str, tuple[Callable[..., Any], tuple[np.ndarray, ...]]] = {
    "Cauchy": (lambda loc, scale: D.Cauchy(loc, scale), (RNG.normal(size=3), uniform(0.5, 2, 3))),
    "HalfCauchy": (lambda scale: D.HalfCauchy(scale), (uniform(0.5, 2, 3),)),
    "HalfNormal": (lambda scale: D.HalfNormal(scale), (uniform(0.5, 2, 3),)),
    "Gumbel": (lambda loc, scale: D.Gumbel(loc, scale), (RNG.normal(size=3), uniform(0.5, 2, 3))),
    "Weibull": (lambda scale, k: D.Weibull(scale, k), (uniform(0.5, 2, 3), uniform(0.5, 3, 3))),
    "Pareto": (lambda scale, a: D.Pareto(scale, a), (uniform(0.5, 2, 3), uniform(0.5, 3, 3))),
    "Kumaraswamy": (lambda a, b: D.Kumaraswamy(a, b), (uniform(0.5, 3, 3), uniform(0.5, 3, 3))),
    "LogisticNormal": (
        lambda loc, scale: D.LogisticNormal(loc, scale),
        (RNG.normal(size=3), uniform(0.5, 2, 3)),
    ),
    "ContinuousBernoulli": (
        lambda p: D.ContinuousBernoulli(probs=p),
        (np.array([0.1, 0.4995, 0.8]),),
    ),
    "LogitRelaxedBernoulli": (
        lambda temperature, logits: D.LogitRelaxedBernoulli(temperature, logits=logits),
        (np.array(0.7), RNG.normal(size=3)),
    ),
    "RelaxedBernoulli": (
        lambda temperature, p: D.RelaxedBernoulli(temperature, probs=p),
        (np.array(1.5), uniform(0.1, 0.9, 3)),
    ),
    "RelaxedOneHotCategorical": (
        lambda temperature, logits: D.RelaxedOneHotCategorical(temperature, logits=logits),
        (np.array(0.8), RNG.normal(size=3)),
    ),
}


def draw(build: Callable[..., Any], params: list[np.ndarray], requires_grad: bool) -> Any:
    tensors = [plugrad.asarray(p, requires_grad=requires_grad) for p in params]
    plugrad.manual_seed(5)
    return build(*tensors).rsample(), tensors


@pytest.mark.parametrize("name", list(RSAMPLE_CASES))
def test_rsample_gradients_are_those_of_the_draws(name: str) -> None:
    build, params = RSAMPLE_CASES[name]
    x, tensors = draw(build, list(params), True)
    for i, param in enumerate(params):
        for tensor in tensors:
            tensor.grad = None
        x.sum().backward(retain_graph=True)
        h = 1e-6
        moved = [p + h * (j == i) for j, p in enumerate(params)]
        up = draw(build, moved, False)[0].numpy()
        moved = [p - h * (j == i) for j, p in enumerate(params)]
        down = draw(build, moved, False)[0].numpy()
        difference = (up - down) / (2 * h)
        shared = param.ndim == 0 or name in ("LogisticNormal", "RelaxedOneHotCategorical")
        expected = difference.sum() if shared else difference
        np.testing.assert_allclose(tensors[i].grad.numpy(), expected, rtol=1e-5, atol=1e-7)


def test_a_tanh_squashed_policy_scores_its_own_samples_exactly() -> None:
    # As SAC's: log_prob(rsample()) with cache_size=1 inverts the tanh exactly, even where
    # tanh rounds to 1 (atanh would be inf); the log-Jacobian stays finite.
    loc = plugrad.tensor([0.0, 12.0, -12.0], requires_grad=True)
    scale = plugrad.tensor([1.0, 0.5, 0.5], requires_grad=True)
    policy = D.TransformedDistribution(D.Normal(loc, scale), [T.TanhTransform(cache_size=1)])
    plugrad.manual_seed(0)
    action = policy.rsample()
    assert action.tolist()[1:] == [1.0, -1.0]  # rounded in float32
    log_prob = policy.log_prob(action)
    assert np.isfinite(log_prob.detach().numpy()).all()
    plugrad.manual_seed(0)
    u = D.Normal(loc, scale).rsample().detach()  # the same draw, before the squash
    expected = D.Normal(loc, scale).log_prob(u) - T.TanhTransform().log_abs_det_jacobian(
        u, plugrad.tanh(u)
    )
    np.testing.assert_allclose(log_prob.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    log_prob.sum().backward()
    assert np.isfinite(loc.grad.numpy()).all() and np.isfinite(scale.grad.numpy()).all()
    uncached = D.TransformedDistribution(D.Normal(loc, scale), [T.TanhTransform()])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's atanh(1)
        assert not np.isfinite(uncached.log_prob(action.detach()).detach().numpy()[1:]).any()


def test_transformed_distribution_shapes_and_support() -> None:
    normal = D.Normal(plugrad.zeros(4, 3), 1.0)
    d = D.TransformedDistribution(normal, T.StickBreakingTransform())
    assert (tuple(d.batch_shape), tuple(d.event_shape)) == ((4,), (4,))
    assert isinstance(d.base_dist, D.Independent) and d.transforms == [T.StickBreakingTransform()]
    assert repr(d.support) == "Simplex()"
    # The event grows to the base's: a transform of numbers over vectors.
    mvn = D.MultivariateNormal(plugrad.zeros(2, 3), scale_tril=plugrad.eye(3))
    d = D.TransformedDistribution(mvn, [T.ExpTransform()])
    assert (tuple(d.batch_shape), tuple(d.event_shape)) == ((2,), (3,))
    assert repr(d.support) == "IndependentConstraint(GreaterThan(lower_bound=0.0), 1)"
    assert d.log_prob(plugrad.ones(2, 3)).shape == (2,)
    no_transforms = D.TransformedDistribution(D.Exponential(2.0), [])
    assert no_transforms.support is D.Exponential(2.0).support
    assert no_transforms.log_prob(plugrad.tensor(1.0)).item() == pytest.approx(math.log(2) - 2)
    assert not D.TransformedDistribution(D.Bernoulli(0.5), [T.ExpTransform()]).has_rsample


def test_transformed_distribution_validates_values() -> None:
    d = D.TransformedDistribution(D.Normal(0.0, 1.0), [T.ExpTransform()])
    with pytest.raises(InvalidArgumentError, match="within the support"):
        d.log_prob(plugrad.tensor(-1.0))
    with pytest.raises(InvalidArgumentError, match="must be a Tensor"):
        d.log_prob(1.0)
    with pytest.raises(ShapeError, match="not broadcastable"):
        D.TransformedDistribution(D.Normal(plugrad.zeros(3), 1.0), T.ExpTransform()).log_prob(
            plugrad.ones(2)
        )
    pareto = D.Pareto(2.0, 3.0)
    with pytest.raises(InvalidArgumentError, match="within the support"):
        pareto.cdf(plugrad.tensor(1.0))  # (checked through the base, as PyTorch's)
    unchecked = D.TransformedDistribution(
        D.Normal(0.0, 1.0, validate_args=False), [T.ExpTransform()], validate_args=False
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's log(-1)
        assert math.isnan(unchecked.log_prob(plugrad.tensor(-1.0)).item())


def test_bad_transformed_distributions_raise() -> None:
    with pytest.raises(ArgumentError, match="base_distribution must be a Distribution"):
        D.TransformedDistribution(T.ExpTransform(), [T.ExpTransform()])
    with pytest.raises(ArgumentError, match="a Transform or a list of Transforms"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), [T.ExpTransform(), "log"])
    with pytest.raises(ArgumentError, match="a Transform or a list of Transforms"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), T.ExpTransform)
    with pytest.raises(ShapeError, match="take events of 1 axes"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), T.StickBreakingTransform())
    with pytest.raises(ShapeError, match="does not broadcast"):
        D.TransformedDistribution(D.Normal(plugrad.zeros(3), 1.0), T.PowerTransform(t([2.0] * 2)))
    with pytest.raises(ShapeError, match="cannot be broadcast"):
        D.HalfNormal(plugrad.ones(3)).expand((2,))


def test_modes_pytorch_gets_wrong() -> None:
    # Weibull: 0 for a concentration of at most 1 (PyTorch: nan, or 1.0 at k = 0.5).
    weibull = D.Weibull(t([2.0, 2.0, 2.0]), t([0.5, 1.0, 3.0]))
    expected = [0.0, 0.0, 2.0 * (2.0 / 3.0) ** (1.0 / 3.0)]
    np.testing.assert_allclose(weibull.mode.numpy(), expected, rtol=1e-14)
    # Kumaraswamy: the maximum of the density (PyTorch's formula is nan wherever b > 1).
    a, b = t([2.0, 5.0, 1.0, 0.5, 1.0]), t([3.0, 1.0, 4.0, 2.0, 1.0])
    mode = D.Kumaraswamy(a, b).mode.numpy()
    grid = np.linspace(1e-6, 1 - 1e-6, 200001)
    for i in range(3):
        density = D.Kumaraswamy(a[i], b[i]).log_prob(plugrad.asarray(grid)).numpy()
        assert mode[i] == pytest.approx(grid[density.argmax()], abs=1e-5)
    assert np.isnan(mode[3:]).all()  # unbounded, and flat
    pareto = D.Pareto(t([1.0, 1.0, 1.0]), t([0.5, 1.5, 3.0]))
    assert pareto.mean.tolist()[:1] == [math.inf] and pareto.variance.tolist()[:2] == [math.inf] * 2


@pytest.mark.parametrize("backend", backends_under_test())
def test_bad_parameters_raise(backend: str) -> None:
    with plugrad.use_backend(backend):
        cases = [
            (lambda: D.Cauchy(0.0, t([1.0, -1.0])), "scale"),
            (lambda: D.HalfCauchy(t(-1.0)), "scale"),
            (lambda: D.HalfNormal(t(0.0)), "scale"),
            (lambda: D.Gumbel(t(math.nan), 1.0), "loc"),
            (lambda: D.Gumbel(0.0, t(0.0)), "scale"),
            (lambda: D.Weibull(1.0, t([0.0, 1.0])), "concentration"),  # (no 1/0 computed first)
            (lambda: D.Weibull(t(-1.0), 1.0), "scale"),
            (lambda: D.Pareto(1.0, t(0.0)), "alpha"),
            (lambda: D.Kumaraswamy(t(0.0), 1.0), "concentration1"),
            (lambda: D.Kumaraswamy(1.0, t(-2.0)), "concentration0"),
            (lambda: D.LogisticNormal(t([0.0, 1.0]), t(-1.0)), "scale"),
            (lambda: D.LogitRelaxedBernoulli(1.0, probs=t(1.5)), "probs"),
            (lambda: D.LogitRelaxedBernoulli(t(-1.0), logits=t(0.0)), "temperature"),
            (lambda: D.RelaxedBernoulli(t(0.0), probs=t(0.5)), "temperature"),
            (lambda: D.ExpRelaxedCategorical(1.0, probs=t([0.5, -0.1, 0.6])), "probs"),
            (lambda: D.RelaxedOneHotCategorical(t(-1.0), logits=t([0.0, 1.0])), "temperature"),
            (lambda: D.ContinuousBernoulli(probs=t([0.5, 1.5])), "probs"),
        ]
        for build, name in cases:
            with pytest.raises(InvalidArgumentError, match=f"parameter {name} "):
                build()


def test_bad_arguments_raise() -> None:
    with pytest.raises(ShapeError, match=r"temperature of shape \(2, 1\) does not broadcast"):
        D.RelaxedBernoulli(plugrad.ones(2, 1), probs=t([0.5, 0.5, 0.5]))
    with pytest.raises(ShapeError, match="temperature of shape"):
        D.RelaxedOneHotCategorical(plugrad.ones(3), logits=plugrad.zeros(2, 3))
    with pytest.raises(ArgumentError, match="temperature must be a Tensor or a positive number"):
        D.LogitRelaxedBernoulli("hot", probs=0.5)
    with pytest.raises(InvalidArgumentError, match="either probs or logits"):
        D.RelaxedBernoulli(1.0)
    with pytest.raises(InvalidArgumentError, match="either probs or logits"):
        D.ContinuousBernoulli(probs=0.5, logits=0.0)
    with pytest.raises(InvalidArgumentError, match="lims must be two numbers about 1/2"):
        D.ContinuousBernoulli(0.5, lims=(0.6, 0.7))
    with pytest.raises(ArgumentError, match="must be a Tensor"):
        D.ExpRelaxedCategorical(1.0, probs=[0.5, 0.5])
    with pytest.raises(ArgumentError, match="Tensors or real numbers"):
        D.Gumbel("0", 1.0)
    # Validation off: accepted as given.
    assert D.Pareto(1.0, -1.0, validate_args=False).alpha.item() == -1.0
    assert D.LogitRelaxedBernoulli(-1.0, probs=0.5, validate_args=False).temperature.item() == -1.0


@pytest.mark.parametrize("backend", backends_under_test())
def test_values_outside_the_support_raise(backend: str) -> None:
    with plugrad.use_backend(backend):
        cases = [
            (D.HalfNormal(1.0), t(-0.5), "GreaterThanEq(lower_bound=0.0)"),
            (D.HalfCauchy(1.0), t(-0.5), "GreaterThanEq(lower_bound=0.0)"),
            (D.Pareto(t(2.0), 3.0), t(1.0), "GreaterThanEq(lower_bound=2.0)"),
            (D.Weibull(1.0, 2.0), t(0.0), "GreaterThan(lower_bound=0.0)"),
            (D.Kumaraswamy(2.0, 2.0), t(1.5), "Interval(lower_bound=0.0, upper_bound=1.0)"),
            (D.ContinuousBernoulli(0.3), t(-0.1), "Interval(lower_bound=0.0"),
            (D.RelaxedBernoulli(1.0, probs=0.3), t(1.2), "Interval(lower_bound=0.0"),
            (D.RelaxedOneHotCategorical(1.0, probs=t([0.5, 0.5])), t([0.5, 0.6]), "Simplex()"),
            (D.LogisticNormal(t([0.0]), 1.0), t([0.5, 0.6]), "Simplex()"),
            (D.Cauchy(0.0, 1.0), t(math.nan), "Real()"),
        ]
        for dist, value, support in cases:
            with pytest.raises(InvalidArgumentError, match="to be within the support") as info:
                dist.log_prob(value)
            assert support in str(info.value)
        with pytest.raises(InvalidArgumentError, match="support"):
            D.Gumbel(0.0, 1.0).cdf(t(math.nan))


def test_logit_relaxed_bernoulli_log_prob_stays_finite_where_exp_overflows() -> None:
    # log(1 + e**d) for d = 800 is 800 (PyTorch's overflows to inf: a log_prob of -inf).
    d = D.LogitRelaxedBernoulli(1.0, logits=t(0.0))
    np.testing.assert_allclose(d.log_prob(t([-800.0, 800.0])).numpy(), [-800.0, -800.0])


def test_continuous_bernoulli_moments_near_one_half_are_accurate_in_float32() -> None:
    # The exact forms cancel there: float32's variance at probs 0.498 was 0.018 (and 0.25 at
    # 0.499), for 0.0833; PyTorch's is as far off. Computed in float64, cast back.
    probs = np.array([0.45, 0.49, 0.498, 0.4989, 0.5012, 0.51, 0.55], dtype=np.float32)
    dist = D.ContinuousBernoulli(probs=plugrad.tensor(probs))
    exact = D.ContinuousBernoulli(probs=plugrad.tensor(probs.astype(np.float64)))
    for moment in ("mean", "variance"):
        got, expected = getattr(dist, moment), getattr(exact, moment)
        assert got.dtype == plugrad.float32
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=2e-7)
