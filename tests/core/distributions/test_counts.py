"""Poisson, Binomial and Multinomial: against ``torch.distributions``, their samples, bad input.

Values and parameter gradients are compared with PyTorch's on every backend in
float64 (the table and helpers of ``test_against_torch``); the samples'
frequencies are compared with the probability mass function by a chi-square
statistic, and their moments with the distribution's; every error path is
checked for its type and for a message that names the problem.
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
from plugrad.errors import ArgumentError, InvalidArgumentError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

from ._helpers import F64, Builder, t  # noqa: E402
from .test_against_torch import (  # noqa: E402  (after the skip without PyTorch)
    Case,
    KLCase,
    assert_expand_agrees_with_torch,
    compare,
    compare_kl,
    evaluated,
    method_cases,
    uniform,
)

RNG = np.random.default_rng(31)


def counts_summing_to(n: int, k: int, *shape: int) -> np.ndarray:
    """Multinomial count vectors of ``n`` over ``k`` categories."""
    return RNG.multinomial(n, np.ones(k) / k, size=shape).astype(float)


CASES: dict[str, Case] = {
    "Poisson": Case(
        lambda D, rate: D.Poisson(rate),
        (uniform(0.5, 20.0, 2, 3),),
        RNG.integers(0, 25, (4, 1, 3)).astype(float),
        ("log_prob", "mean", "mode", "variance", "stddev"),
    ),
    "Binomial probs": Case(
        lambda D, n, p: D.Binomial(n, probs=p),
        (RNG.integers(12, 30, (2, 1)).astype(float), uniform(0.05, 0.95, 3)),
        RNG.integers(0, 12, (4, 2, 3)).astype(float),
        ("log_prob", "mean", "mode", "variance", "stddev"),
    ),
    "Binomial logits": Case(
        lambda D, logits: D.Binomial(15, logits=logits),
        (RNG.normal(size=(2, 3)) * 3,),
        RNG.integers(0, 16, (4, 2, 3)).astype(float),
        ("log_prob", "entropy", "mean", "mode", "variance"),
    ),
    "Binomial large logits": Case(
        lambda D, logits: D.Binomial(40, logits=logits),
        (np.array([-60.0, -25.0, -1e-3, 0.0, 2.5, 30.0, 80.0]),),
        np.array([0.0, 3.0, 20.0, 20.0, 33.0, 40.0, 40.0]),
        ("log_prob", "entropy", "mean", "variance"),
    ),
    "Binomial probs entropy": Case(
        lambda D, p: D.Binomial(7, probs=p),
        (uniform(0.05, 0.95, 2, 3),),
        RNG.integers(0, 8, (2, 3)).astype(float),
        ("log_prob", "entropy", "mode"),
    ),
    "Multinomial probs": Case(
        lambda D, p: D.Multinomial(9, probs=p),
        (uniform(0.1, 1.0, 2, 4),),
        counts_summing_to(9, 4, 5, 2),
        ("log_prob", "mean", "variance"),
    ),
    "Multinomial logits": Case(
        lambda D, logits: D.Multinomial(6, logits=logits),
        (RNG.normal(size=(3, 1, 4)),),
        counts_summing_to(6, 4, 2),
        ("log_prob", "mean", "variance"),
    ),
    "Multinomial log_prob only": Case(
        lambda D, p: D.Multinomial(probs=p, validate_args=False),  # the counts' own n
        (uniform(0.1, 1.0, 3),),
        counts_summing_to(11, 3, 4),
        ("log_prob",),
    ),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(**method_cases(CASES))
def test_agrees_with_torch(name: str, method: str, backend: str) -> None:
    compare(CASES[name], method, backend)


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", ["Multinomial probs", "Multinomial logits"])
def test_multinomial_entropy_agrees_with_torch_but_for_its_float32_log_factorial(
    name: str, backend: str
) -> None:
    # PyTorch's takes lgamma(n + 1) of an int64 tensor, which it computes in float32: off
    # by up to about 1e-7 relative. Ours is exact (checked by enumeration below).
    (ours, our_grads), (theirs, their_grads) = evaluated(CASES[name], "entropy", backend)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-7)
    for mine, reference in zip(our_grads, their_grads, strict=True):
        np.testing.assert_allclose(mine, reference, rtol=1e-9, atol=1e-12)


def test_multinomial_entropy_is_the_sum_over_every_count_vector() -> None:
    probs = [0.2, 0.3, 0.5]
    n = 5
    entropy = 0.0
    for a in range(n + 1):
        for b in range(n + 1 - a):
            x = (a, b, n - a - b)
            log_p = math.lgamma(n + 1) + sum(
                k * math.log(p) - math.lgamma(k + 1) for k, p in zip(x, probs)
            )
            entropy -= math.exp(log_p) * log_p
    ours = D.Multinomial(n, probs=t(probs)).entropy().item()
    assert ours == pytest.approx(entropy, rel=1e-13)


KL_CASES: dict[str, KLCase] = {
    "Poisson": (
        lambda D, a, b: (D.Poisson(a), D.Poisson(b)),
        (uniform(0.1, 5, 2, 3), uniform(0.1, 5, 3)),
    ),
    "Binomial": (
        lambda D, a, b: (D.Binomial(12, probs=a), D.Binomial(12, logits=b)),
        (uniform(0.05, 0.95, 2, 3), RNG.normal(size=(2, 3))),
    ),
    "Binomial more trials in p": (
        lambda D, n, a, b: (D.Binomial(n, probs=a), D.Binomial(12, probs=b)),
        (np.array([12.0, 15.0]), uniform(0.05, 0.95, 2), uniform(0.05, 0.95, 2)),
    ),
    "Bernoulli-Poisson": (
        lambda D, a, b: (D.Bernoulli(probs=a), D.Poisson(b)),
        (uniform(0.05, 0.95, 2, 3), uniform(0.1, 3, 3)),
    ),
    "Poisson-Bernoulli": (
        lambda D, a, b: (D.Poisson(a), D.Bernoulli(probs=b)),
        (uniform(0.1, 3, 3), uniform(0.05, 0.95, 3)),
    ),
    "Poisson-Binomial": (
        lambda D, a, b: (D.Poisson(a), D.Binomial(5, logits=b)),
        (uniform(0.1, 3, 3), RNG.normal(size=3)),
    ),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(KL_CASES))
def test_kl_divergence_agrees_with_torch(name: str, backend: str) -> None:
    compare_kl(KL_CASES[name], backend, name)


def test_kl_of_a_binomial_with_fewer_trials_in_p_is_not_implemented_as_pytorchs() -> None:
    with pytest.raises(NotImplementedError, match=r"q.total_count > p.total_count"):
        D.kl_divergence(D.Binomial(3, probs=t(0.5)), D.Binomial(t([3.0, 4.0]), probs=t(0.5)))


def test_rate_zero_as_pytorch_with_the_right_gradients_and_kl() -> None:
    # log_prob: mass 1 at 0 and -inf elsewhere, as PyTorch's
    value = [0.0, 2.0, 0.0]
    rate = plugrad.tensor([0.0, 0.0, 1.5], dtype=F64, requires_grad=True)
    log_prob = D.Poisson(rate).log_prob(t(value))
    their_rate = torch.tensor([0.0, 0.0, 1.5], dtype=torch.float64)
    assert log_prob.tolist() == D_torch_poisson(their_rate).log_prob(torch.tensor(value)).tolist()
    # its derivative in rate at rate 0 and value 0 is -1 (PyTorch's is 0 / 0, nan)
    log_prob[0].backward()
    assert rate.grad.tolist() == [-1.0, 0.0, 0.0]
    # KL(Poisson(0) || Poisson(r)) is r (PyTorch's is nan); against a Bernoulli or a
    # Binomial it is -log q(0), finite (PyTorch's is inf); with a positive rate inf.
    kl_value = D.kl_divergence(D.Poisson(t([0.0, 2.0])), D.Poisson(t([1.5, 0.0])))
    assert kl_value.tolist() == [1.5, math.inf]
    bernoulli = D.kl_divergence(D.Poisson(t([0.0, 1.0])), D.Bernoulli(probs=t(0.25)))
    assert bernoulli.tolist() == pytest.approx([-math.log(0.75), math.inf])
    binomial = D.kl_divergence(D.Poisson(t([0.0, 1.0])), D.Binomial(4, probs=t(0.25)))
    assert binomial.tolist() == pytest.approx([-4 * math.log(0.75), math.inf])
    # Bernoulli against Poisson(0): 0 where the Bernoulli is 0 surely, else inf
    against_zero = D.kl_divergence(D.Bernoulli(probs=t([0.0, 0.5])), D.Poisson(t(0.0)))
    assert against_zero.tolist() == [0.0, math.inf]


def D_torch_poisson(rate: Any) -> Any:
    return torch.distributions.Poisson(rate)


@pytest.mark.parametrize(
    ("build", "batch_shape"),
    [
        (lambda D, x: D.Poisson(x.exp()), (4, 3)),
        (lambda D, x: D.Binomial(10, logits=x), (2, 4, 3)),
        (lambda D, x: D.Binomial((x * 0).round() + 7.0, probs=x.sigmoid()), (4, 3)),
        (lambda D, x: D.Multinomial(5, logits=x), (4, 1)),
    ],
    ids=["Poisson", "Binomial", "Binomial counts", "Multinomial"],
)
def test_expand_agrees_with_torch(build: Callable[..., Any], batch_shape: tuple[int, ...]) -> None:
    assert_expand_agrees_with_torch(build, RNG.normal(size=(1, 3)), batch_shape, "mean")


def test_enumerate_support_and_repr_agree_with_torch() -> None:
    def seen(lib: Any) -> tuple[Any, ...]:
        probs = lib.tensor([[0.2, 0.4, 0.5]], dtype=lib.float64)
        d = lib.distributions.Binomial(3, probs=probs)
        support = d.enumerate_support()
        unexpanded = d.enumerate_support(expand=False)
        shown = repr(d).replace("plugrad.Size", "torch.Size")
        return support.tolist(), tuple(support.shape), unexpanded.tolist(), shown

    assert seen(plugrad) == seen(torch)
    # (PyTorch's Multinomial shows no parameter)
    assert repr(D.Multinomial(3, probs=t([0.5, 0.5]))) == "Multinomial(probs: plugrad.Size([2]))"


def pmf_poisson(rate: float, k: np.ndarray) -> np.ndarray:
    if rate == 0:
        return (k == 0).astype(float)
    return np.exp([kk * math.log(rate) - rate - math.lgamma(kk + 1) for kk in k])


def pmf_binomial(n: int, p: float, k: np.ndarray) -> np.ndarray:
    def one(kk: int) -> float:
        if p in (0.0, 1.0):
            return float(kk == (0 if p == 0 else n))
        log = math.lgamma(n + 1) - math.lgamma(kk + 1) - math.lgamma(n - kk + 1)
        return math.exp(log + kk * math.log(p) + (n - kk) * math.log1p(-p))

    return np.array([one(int(kk)) for kk in k])


def chi_square_z(draws: np.ndarray, pmf: np.ndarray) -> float:
    """How many standard deviations the chi-square statistic of the frequencies of the
    counts ``0, 1, ...`` (bins of expected count below 5 pooled, with the tail) lies above
    its mean: about normal for many bins, and below 1 most of the time."""
    n = draws.size
    assert np.all(draws == np.round(draws)) and np.all(draws >= 0)
    observed = np.bincount(draws.astype(np.int64), minlength=pmf.size)[: pmf.size]
    expected = n * pmf
    kept = expected >= 5
    obs = np.append(observed[kept], n - observed[kept].sum())
    exp = np.append(expected[kept], n - expected[kept].sum())
    if exp[-1] < 5:  # the pooled rest is too rare to count on: fold it into the last bin
        obs, exp = np.append(obs[:-2], obs[-2:].sum()), np.append(exp[:-2], exp[-2:].sum())
    statistic = float(np.sum((obs - exp) ** 2 / exp))
    dof = obs.size - 1
    if dof == 0:
        return 0.0 if obs[0] == n else math.inf
    return (statistic - dof) / math.sqrt(2 * dof)


N = 100_000


@pytest.mark.parametrize("rate", [0.0, 0.3, 5.0, 9.99, 10.0, 50.0, 1000.0])
def test_poisson_samples_follow_the_pmf(rate: float) -> None:
    plugrad.manual_seed(int(rate * 100) + 1)
    draws = D.Poisson(t(rate)).sample((N,)).numpy()
    assert draws.dtype == np.float64
    support = np.arange(int(rate + 12 * math.sqrt(rate) + 20))
    assert chi_square_z(draws, pmf_poisson(rate, support)) < 4
    np.testing.assert_allclose(draws.mean(), rate, atol=5 * math.sqrt(rate / N) + 1e-12)
    np.testing.assert_allclose(draws.var(), rate, atol=6 * math.sqrt(2 * rate**2 / N + rate / N))


@pytest.mark.parametrize(
    ("n", "p"),
    [(10, 0.3), (100, 0.05), (100, 0.5), (1000, 0.9), (40, 0.3), (6, 0.97), (0, 0.4), (8, 0.0),
     (8, 1.0), (100_000, 0.001)],
)  # fmt: skip
def test_binomial_samples_follow_the_pmf(n: int, p: float) -> None:
    plugrad.manual_seed(n + int(p * 1000))
    draws = D.Binomial(n, probs=t(p)).sample((N,)).numpy()
    assert draws.dtype == np.float64 and draws.max() <= n
    support = np.arange(min(n, int(n * p + 12 * math.sqrt(n * p * (1 - p)) + 20)) + 1)
    assert chi_square_z(draws, pmf_binomial(n, p, support)) < 4
    mean, variance = n * p, n * p * (1 - p)
    np.testing.assert_allclose(draws.mean(), mean, atol=5 * math.sqrt(variance / N) + 1e-12)
    np.testing.assert_allclose(draws.var(), variance, rtol=0.05, atol=1e-12)


def test_binomial_samples_of_a_batch_of_counts_and_logits() -> None:
    # every element its own n and p: each column follows its own pmf
    plugrad.manual_seed(2)
    n = [0.0, 3.0, 25.0, 60.0, 1000.0]
    logits = [0.3, -2.0, 1.5, -0.2, 4.0]
    d = D.Binomial(t(n), logits=t(logits))
    draws = d.sample((N,)).numpy()
    assert draws.shape == (N, 5)
    for j, (count, logit) in enumerate(zip(n, logits)):
        p = 1 / (1 + math.exp(-logit))
        support = np.arange(int(count) + 1)
        assert chi_square_z(draws[:, j], pmf_binomial(int(count), p, support)) < 4, j


def test_multinomial_samples_have_the_moments_of_the_distribution() -> None:
    plugrad.manual_seed(4)
    probs = t([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    d = D.Multinomial(20, probs=probs)
    draws = d.sample((N // 4,)).numpy()
    assert draws.shape == (N // 4, 2, 3) and draws.dtype == np.float64
    assert np.all(draws.sum(-1) == 20) and np.all(draws[:, 1, 2] == 0)
    np.testing.assert_allclose(draws.mean(0), d.mean.numpy(), atol=0.06)
    np.testing.assert_allclose(draws.var(0), d.variance.numpy(), rtol=0.05, atol=1e-12)
    covariance = np.cov(draws[:, 0].T)
    expected = 20 * (np.diag([0.1, 0.2, 0.7]) - np.outer([0.1, 0.2, 0.7], [0.1, 0.2, 0.7]))
    np.testing.assert_allclose(covariance, expected, atol=0.08)
    # one category's count is Binomial(20, p): its frequencies follow that pmf
    assert chi_square_z(draws[:, 0, 1], pmf_binomial(20, 0.2, np.arange(21))) < 4


BUILDERS: dict[str, Builder] = {
    "Poisson": (lambda: D.Poisson(t([0.0, 0.5, 12.0, 300.0])), (4,), ()),
    "Binomial": (lambda: D.Binomial(t([[3.0], [50.0]]), probs=t([0.1, 0.6, 0.95])), (2, 3), ()),
    "Multinomial": (lambda: D.Multinomial(7, logits=t([[0.0, 1.0, -1.0]])), (1,), (3,)),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(BUILDERS))
def test_sample_shapes_supports_and_reproducibility_on_every_backend(
    name: str, backend: str
) -> None:
    build, batch, event = BUILDERS[name]
    with plugrad.use_backend(backend):
        dist = build()
        assert tuple(dist.batch_shape) == batch and tuple(dist.event_shape) == event
        for sample_shape in [(), (5,), (2, 3), (0,)]:
            x = dist.sample(sample_shape)
            assert x.shape == sample_shape + batch + event
            assert x.dtype == F64 and not x.requires_grad
        plugrad.manual_seed(11)
        first = dist.sample((50,))
        plugrad.manual_seed(11)
        second = dist.sample((50,))
        assert np.array_equal(first.numpy(), second.numpy())
        assert np.isfinite(dist.log_prob(first).numpy()).all()  # within the support
        with pytest.raises(NotImplementedError, match="use sample"):
            dist.rsample()


def test_samples_take_the_parameters_dtype_and_do_not_need_float64() -> None:
    plugrad.manual_seed(0)
    rate = plugrad.tensor([0.5, 40.0], requires_grad=True)
    x = D.Poisson(rate).sample((1000,))
    assert x.dtype == plugrad.float32 and not x.requires_grad
    assert abs(float(x[:, 1].mean()) - 40) < 1.5
    y = D.Binomial(plugrad.tensor([5, 200]), probs=0.25).sample((3,))
    assert y.dtype == plugrad.get_default_dtype()
    assert D.Binomial(plugrad.tensor([5.0], dtype=F64), probs=0.25).probs.dtype == F64
    assert D.Multinomial(3, probs=plugrad.tensor([0.5, 0.5])).sample().dtype == plugrad.float32


def test_multinomial_of_zero_trials_and_an_empty_batch() -> None:
    assert D.Multinomial(0, probs=t([0.3, 0.7])).sample((2,)).tolist() == [[0.0, 0.0]] * 2
    assert D.Multinomial(0, probs=t([0.3, 0.7])).entropy().item() == 0.0
    assert D.Multinomial(3, probs=plugrad.ones(0, 2)).sample((2,)).shape == (2, 0, 2)
    assert D.Binomial(3, probs=plugrad.ones(0)).sample((2,)).shape == (2, 0)


def test_multinomial_log_prob_of_impossible_categories_counted_zero_times() -> None:
    def log_prob(lib: Any) -> list[float]:
        logits = lib.tensor([0.0, -math.inf, 1.0], dtype=lib.float64)
        d = lib.distributions.Multinomial(3, logits=logits)
        value = lib.tensor([[2.0, 0.0, 1.0], [1.0, 1.0, 1.0]], dtype=lib.float64)
        return d.log_prob(value).tolist()

    ours, theirs = log_prob(plugrad), log_prob(torch)
    assert ours[0] == pytest.approx(theirs[0], rel=1e-12) and ours[1] == theirs[1] == -math.inf


def test_unvalidated_nan_parameters_sample_nan_and_stop() -> None:
    # (PyTorch's binomial sampler never returns for a NaN count)
    d = D.Binomial(t([math.nan, 5.0, 5.0]), probs=t([0.5, math.nan, 0.5]), validate_args=False)
    draws = d.sample((3,)).numpy()
    assert np.isnan(draws[:, :2]).all() and np.isfinite(draws[:, 2]).all()


@pytest.mark.parametrize("rate", [math.inf, math.nan, -1.0])
def test_poisson_sample_refuses_rates_it_cannot_draw_from(rate: float) -> None:
    d = D.Poisson(t([1.0, rate]), validate_args=False)
    with pytest.raises(InvalidArgumentError, match="finite and non-negative"):
        d.sample()


def test_bad_parameters_raise() -> None:
    with pytest.raises(InvalidArgumentError, match=r"parameter rate .*GreaterThanEq"):
        D.Poisson(t([1.0, -0.5]))
    with pytest.raises(InvalidArgumentError, match=r"parameter total_count .*IntegerGreaterThan"):
        D.Binomial(t([2.5]), probs=t(0.5))
    with pytest.raises(InvalidArgumentError, match=r"parameter total_count"):
        D.Binomial(-1, probs=t(0.5))
    with pytest.raises(InvalidArgumentError, match=r"parameter probs .*Interval"):
        D.Binomial(3, probs=t([0.5, 1.5]))
    with pytest.raises(InvalidArgumentError, match=r"parameter logits .*Real"):
        D.Binomial(3, logits=t(math.nan))
    with pytest.raises(InvalidArgumentError, match=r"parameter probs .*Simplex"):
        D.Multinomial(3, probs=t([0.5, -0.5, 1.0]))
    for cls in (D.Binomial, D.Multinomial):
        with pytest.raises(InvalidArgumentError, match=rf"{cls.__name__}: give either probs"):
            cls(3, probs=t([0.5, 0.5]), logits=t([0.0, 0.0]))
        with pytest.raises(InvalidArgumentError, match="not neither"):
            cls(3)
    with pytest.raises(NotImplementedError, match=r"Python int.*inhomogeneous"):
        D.Multinomial(plugrad.tensor(3), probs=t([0.5, 0.5]))  # type: ignore[arg-type]
    for count in (3.0, True, "3"):
        with pytest.raises(ArgumentError, match="total_count must be an int"):
            D.Multinomial(count, probs=t([0.5, 0.5]))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="non-negative, got -2"):
        D.Multinomial(-2, probs=t([0.5, 0.5]))
    with pytest.raises(ShapeError, match="at least one axis"):
        D.Multinomial(2, probs=t(1.0))
    with pytest.raises(ArgumentError, match="Tensors or real numbers"):
        D.Poisson("1")  # type: ignore[arg-type]


def test_values_outside_the_support_raise() -> None:
    cases = [
        (D.Poisson(t(2.0)), t([1.0, -1.0]), "IntegerGreaterThan(lower_bound=0)"),
        (D.Poisson(t(2.0)), t(1.5), "IntegerGreaterThan(lower_bound=0)"),
        (D.Binomial(4, probs=t(0.5)), t(5.0), "IntegerInterval(lower_bound=0, upper_bound=4.0)"),
        (D.Binomial(4, probs=t(0.5)), t(0.5), "IntegerInterval"),
        (D.Multinomial(4, probs=t([0.5, 0.5])), t([3.0, 2.0]), "Multinomial(upper_bound=4)"),
        (D.Multinomial(4, probs=t([0.5, 0.5])), t([-1.0, 2.0]), "Multinomial(upper_bound=4)"),
    ]
    for dist, value, support in cases:
        with pytest.raises(InvalidArgumentError, match="to be within the support") as info:
            dist.log_prob(value)
        assert support in str(info.value) and type(dist).__name__ in str(info.value)
    with pytest.raises(ShapeError, match="right-most size of value must match event_shape"):
        D.Multinomial(4, probs=t([0.5, 0.5])).log_prob(t([1.0, 1.0, 2.0]))
    with pytest.raises(InvalidArgumentError, match="must be a Tensor"):
        D.Poisson(t(1.0)).log_prob(1.0)  # type: ignore[arg-type]


def test_binomial_needs_one_count_for_entropy_and_its_support() -> None:
    d = D.Binomial(t([3.0, 4.0]), probs=t(0.5))
    for method in ("entropy", "enumerate_support"):
        with pytest.raises(NotImplementedError, match=rf"Binomial.{method}\(\) needs one .*3 to 4"):
            getattr(d, method)()
    # (the log-probabilities of any counts are still there)
    assert d.log_prob(t([3.0, 4.0])).tolist() == pytest.approx([math.log(1 / 8), math.log(1 / 16)])


def test_no_warnings_at_the_edges_of_the_parameters() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        D.Poisson(t([0.0, 0.0])).log_prob(t([0.0, 3.0]))
        D.Binomial(5, probs=t([0.0, 1.0])).log_prob(t([0.0, 5.0]))
        D.Binomial(5, probs=t([0.0, 1.0])).sample((10,))
        D.kl_divergence(D.Poisson(t([0.0, 1.0])), D.Poisson(t([0.0, 0.0])))
        D.kl_divergence(D.Bernoulli(probs=t([0.0, 1.0])), D.Poisson(t(0.0)))


def test_counts_made_from_probs_zero_or_one_have_exact_log_probs_and_gradients() -> None:
    # Through the logits, p was clamped to the float's epsilon: n log(1 - p) of p = 0 and
    # a million trials gave log P(0) = -0.119 (P = 0.89), for both families (float32).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        n = plugrad.tensor(1e6)
        assert D.Binomial(n, probs=plugrad.tensor(0.0)).log_prob(plugrad.tensor(0.0)).item() == 0
        assert (
            D.NegativeBinomial(n, probs=plugrad.tensor(0.0)).log_prob(plugrad.tensor(0.0)).item()
            == 0
        )
        assert D.NegativeBinomial(n, probs=plugrad.tensor(0.0)).mean.item() == 0
        small = D.Binomial(n, probs=plugrad.tensor(1e-7)).log_prob(plugrad.tensor(0.0)).item()
        assert small == pytest.approx(1e6 * math.log1p(-1e-7), rel=1e-5)  # -0.1, not -0.119
        # an impossible count is -inf, without the backend's divide-by-zero warning
        edges = D.Binomial(t(10.0), probs=t([0.0, 1.0, 1.0])).log_prob(t([1.0, 10.0, 9.0]))
        assert edges.tolist() == [-math.inf, 0.0, -math.inf]
        entropy = D.Binomial(t(5.0), probs=t([0.0, 0.5, 1.0])).entropy()
        assert entropy.tolist()[::2] == [0.0, 0.0]
        assert entropy.tolist()[1] == pytest.approx(
            torch.distributions.Binomial(5, probs=torch.tensor(0.5)).entropy().item()
        )
    # d/dp [k log p + (n - k) log(1 - p)]: -n at p = 0, k = 0; n at p = 1, k = n
    p = plugrad.tensor([0.0, 0.3, 1.0], dtype=F64, requires_grad=True)
    D.Binomial(t(5.0), probs=p).log_prob(t([0.0, 2.0, 5.0])).sum().backward()
    assert p.grad.tolist() == pytest.approx([-5.0, 2 / 0.3 - 3 / 0.7, 5.0])
    # made from logits, and expanded, it computes as before / as made
    assert D.Binomial(t(5.0), probs=t(0.0)).expand((3,)).log_prob(t(0.0)).tolist() == [0.0] * 3
    lp = D.Binomial(t(5.0), logits=t(-3.0)).log_prob(t(2.0)).item()
    their = torch.distributions.Binomial(5, logits=torch.tensor(-3.0, dtype=torch.float64))
    assert lp == pytest.approx(their.log_prob(torch.tensor(2.0)).item())


@pytest.mark.parametrize(
    ("successes", "trials", "p"),
    [(30.0, 30.0, 0.9), (0.0, 0.0, 0.3), (0.0, 5.0, 0.9), (5.0, 5.0, 0.3)],
    ids=["all succeed", "no trial", "none succeed", "all succeed, p 0.3"],
)
def test_binomial_gradient_in_total_count_where_a_count_is_zero(successes, trials, p) -> None:
    # The log(1 - p) of a failure count of 0 was replaced by 0, so d/dn lost it: 3.99 for
    # PyTorch's (and the analytic) 1.69 at 30 of 30 with p 0.9.
    grads = []
    for lib in (plugrad, torch):
        n = lib.tensor([trials], dtype=lib.float64, requires_grad=True)
        probs = lib.tensor([p], dtype=lib.float64, requires_grad=True)
        dist = lib.distributions.Binomial(n, probs=probs)
        dist.log_prob(lib.tensor([successes], dtype=lib.float64)).sum().backward()
        grads.append([n.grad.item(), probs.grad.item()])
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-14)
