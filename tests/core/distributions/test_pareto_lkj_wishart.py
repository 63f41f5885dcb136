"""GeneralizedPareto, LKJCholesky and Wishart against ``torch.distributions``: values and
parameter gradients, expand, validation, and the distribution of their samples."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator

import numpy as np
import pytest

import plugrad
from plugrad import distributions as D
from plugrad.errors import ArgumentError, InvalidArgumentError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")
stats = pytest.importorskip("scipy.stats")

from ._helpers import (  # noqa: E402  (after the skip without PyTorch)
    assert_sample_shapes,
    assert_seeded_draws_repeat,
    seeded,
)
from .test_against_torch import (  # noqa: E402
    Case,
    Result,
    as_value,
    assert_expand_agrees_with_torch,
    assert_same_results,
    compare,
    differentiated,
    leaves,
    method_cases,
    ours_and_theirs,
)

RNG, uniform = seeded(2713)

F64 = plugrad.float64


@pytest.fixture(autouse=True)
def torch_default_float64() -> Iterator[None]:
    """PyTorch's GeneralizedPareto compares the concentration with a tensor of the default
    dtype, so that its float64 ``log_prob`` raises unless the default is float64."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


def corr_cholesky(*shape: int) -> np.ndarray:
    """Lower Cholesky factors of correlation matrices: rows of unit length, positive diagonal."""
    size = shape[-1]
    a = np.tril(RNG.normal(size=shape))
    a = a * (1 - np.eye(size)) + (np.abs(np.diagonal(a, axis1=-2, axis2=-1)) + 0.3)[
        ..., None
    ] * np.eye(size)
    return a / np.linalg.norm(a, axis=-1, keepdims=True)


def positive_definite(*shape: int) -> np.ndarray:
    a = RNG.normal(size=shape) * 0.6
    return a @ np.swapaxes(a, -1, -2) + np.eye(shape[-1])


def lower_cholesky(*shape: int) -> np.ndarray:
    return np.linalg.cholesky(positive_definite(*shape))


GP_LOC = RNG.normal(size=3)
GP_VALUE = GP_LOC + uniform(0.02, 1.4, 4, 2, 3)  # inside [loc, loc + scale / 0.35] for scale >= 0.5
UNIT = uniform(0.02, 0.98, 4, 2, 3)
GP_METHODS = ("log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance", "stddev")
WISHART_METHODS = ("log_prob", "entropy", "mean", "mode", "variance")

CASES: dict[str, Case] = {
    "GeneralizedPareto": Case(
        lambda D, loc, scale, c: D.GeneralizedPareto(loc, scale, c),
        (GP_LOC, uniform(0.5, 2.0, 2, 1), np.array([-0.35, 0.05, 0.45])),
        GP_VALUE,
        GP_METHODS,
        UNIT,
    ),
    # (its gradients in the concentration are not compared: PyTorch's are 0 at c = 0, which
    # is wrong; test_generalized_pareto_gradients_in_the_concentration_at_zero checks ours)
    "GeneralizedPareto zero concentration": Case(
        lambda D, loc, scale, c: D.GeneralizedPareto(loc, scale, c.detach()),
        (GP_LOC, uniform(0.5, 2.0, 2, 1), np.array([0.0, 1e-5, -1e-5])),
        GP_VALUE,
        GP_METHODS,
        UNIT,
    ),
    "GeneralizedPareto heavy tails (NaN moments)": Case(
        lambda D, scale, c: D.GeneralizedPareto(0.5, scale, c),
        (uniform(0.5, 2.0, 3), np.array([0.6, 1.0, 2.5])),
        0.5 + uniform(0.0, 5.0, 2, 3),
        ("log_prob", "cdf", "icdf", "mean", "variance", "entropy"),
        UNIT[0],
    ),
    "GeneralizedPareto number parameters": Case(
        lambda D, loc: D.GeneralizedPareto(loc, 1.5, -0.25),
        (np.array(0.3),),
        0.3 + uniform(0.0, 5.9, 5),
        ("log_prob", "cdf", "icdf", "entropy", "mean", "variance"),
        UNIT[0, 0],
    ),
    "LKJCholesky": Case(
        lambda D, c: D.LKJCholesky(3, c),
        (np.array([0.4, 1.0, 2.5]),),
        corr_cholesky(4, 3, 3, 3),
        ("log_prob",),
    ),
    "LKJCholesky dim 2": Case(
        lambda D, c: D.LKJCholesky(2, c),
        (uniform(0.3, 3.0, 2, 1),),
        corr_cholesky(4, 2, 2),
        ("log_prob",),
    ),
    "LKJCholesky dim 5": Case(
        lambda D, c: D.LKJCholesky(5, c),
        (uniform(0.3, 3.0, 2),),
        corr_cholesky(3, 1, 5, 5),
        ("log_prob",),
    ),
    "Wishart covariance_matrix": Case(
        lambda D, df, cov: D.Wishart(df, covariance_matrix=cov),
        (np.array([3.0, 4.5]), positive_definite(2, 3, 3)),
        positive_definite(4, 2, 3, 3),
        (*WISHART_METHODS, "precision_matrix", "scale_tril"),
        symmetric=(1,),
    ),
    "Wishart precision_matrix": Case(
        lambda D, df, precision: D.Wishart(df, precision_matrix=precision),
        (uniform(3.0, 8.0, 2, 1), positive_definite(3, 3, 3)),
        positive_definite(4, 1, 1, 3, 3),
        (*WISHART_METHODS, "covariance_matrix"),
        symmetric=(1,),
    ),
    "Wishart scale_tril, number df": Case(
        # (The solves read the lower triangle; PyTorch's gradient has parts above it.)
        lambda D, tril: D.Wishart(5.5, scale_tril=_lib(D).tril(tril)),
        (lower_cholesky(4, 4),),
        positive_definite(3, 2, 4, 4),
        (*WISHART_METHODS, "covariance_matrix", "precision_matrix"),
    ),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(**method_cases(CASES))
def test_agrees_with_torch(name: str, method: str, backend: str) -> None:
    # Wishart's entropy is differentiated in df through digamma: trigamma, PyTorch's a fit.
    through_trigamma = name.startswith("Wishart") and method == "entropy"
    compare(CASES[name], method, backend, through_trigamma=through_trigamma)


def _log_tail(
    lib, method: str, params: tuple[np.ndarray, ...], value: np.ndarray, zero_c: bool
) -> Result:
    tensors = leaves(lib, params)
    loc, scale, c = tensors
    d = lib.distributions.GeneralizedPareto(loc, scale, c.detach() if zero_c else c)
    return differentiated(lib, getattr(d, method)(as_value(lib, value)), tensors)


@pytest.mark.parametrize("method", ["log_survival_function", "log_cdf"])
@pytest.mark.parametrize("backend", backends_under_test())
def test_log_survival_and_log_cdf_agree_with_torch(method: str, backend: str) -> None:
    for name in ("GeneralizedPareto", "GeneralizedPareto zero concentration"):
        case = CASES[name]
        zero_c = "zero" in name  # (see the case's note)
        ours, theirs = ours_and_theirs(backend, _log_tail, method, case.params, case.value, zero_c)
        assert_same_results(ours, theirs, f"{name} {method}")


def test_the_cases_cover_each_method_torch_has() -> None:
    # Each family's flags and the methods compared above: those PyTorch has, none left out.
    pairs = [
        (D.GeneralizedPareto, torch.distributions.GeneralizedPareto),
        (D.LKJCholesky, torch.distributions.LKJCholesky),
        (D.Wishart, torch.distributions.Wishart),
    ]
    for ours, theirs in pairs:
        assert ours.has_rsample == theirs.has_rsample
        assert ours.has_enumerate_support == theirs.has_enumerate_support
    compared = {m for name, case in CASES.items() if "Pareto" in name for m in case.methods}
    assert compared >= {"log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance"}


@pytest.mark.parametrize(
    ("build", "array", "batch_shape", "moment"),
    [
        (lambda D, t: D.GeneralizedPareto(t, 1.5, -0.2), np.zeros((1, 3)), (4, 3), "variance"),
        (lambda D, t: D.GeneralizedPareto(0.0, 1.0, t), np.array([0.3]), (2, 3), "mean"),
        (lambda D, t: D.Wishart(t, covariance_matrix=_eye(D, 3)), np.array([4.0]), (2, 5), "mean"),
        (lambda D, t: D.Wishart(4.0, scale_tril=t), lower_cholesky(1, 3, 3), (2, 3), "variance"),
    ],
    ids=["GeneralizedPareto loc", "GeneralizedPareto concentration", "Wishart df", "Wishart L"],
)
def test_expand_agrees_with_torch(build, array, batch_shape, moment) -> None:
    with warnings.catch_warnings():
        # PyTorch's Wishart.rsample warns "Singular sample detected" of every sample (it
        # tests for the regular ones); LKJCholesky, below, samples with no warning.
        warnings.simplefilter("ignore", UserWarning)
        assert_expand_agrees_with_torch(build, array, batch_shape, moment)


def test_lkj_expand_agrees_with_torch() -> None:
    ours = D.LKJCholesky(4, plugrad.tensor([0.5], dtype=F64)).expand((2, 3))
    theirs = torch.distributions.LKJCholesky(4, torch.tensor([0.5])).expand((2, 3))
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape) == (2, 3)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape) == (4, 4)
    assert ours.dim == theirs.dim == 4
    value = corr_cholesky(5, 2, 3, 4, 4)
    np.testing.assert_allclose(
        ours.log_prob(plugrad.asarray(value)).numpy(),
        theirs.log_prob(torch.tensor(value)).numpy(),
        rtol=1e-12,
    )
    assert tuple(ours.sample((5,)).shape) == (5, 2, 3, 4, 4)


def _lib(lib_distributions):
    return plugrad if lib_distributions is D else torch


def _eye(lib_distributions, n: int):
    lib = _lib(lib_distributions)
    return lib.eye(n, dtype=lib.float64)


def test_shapes_of_samples_and_seeded_repeats() -> None:
    builders = {
        "GeneralizedPareto": (
            lambda: D.GeneralizedPareto(plugrad.zeros(2, 1), 1.0, plugrad.tensor([-0.5, 0.0, 0.5])),
            (2, 3),
            (),
        ),
        "LKJCholesky": (lambda: D.LKJCholesky(3, plugrad.tensor([0.5, 2.0])), (2,), (3, 3)),
        "Wishart": (
            lambda: D.Wishart(plugrad.tensor([[3.0], [6.0]]), covariance_matrix=plugrad.eye(3)),
            (2, 1),
            (3, 3),
        ),
    }
    for build, batch_shape, event_shape in builders.values():
        assert_sample_shapes(build(), batch_shape, event_shape)
    assert_seeded_draws_repeat(builders)
    del builders["LKJCholesky"]  # no rsample, as PyTorch's
    assert_seeded_draws_repeat(builders, again="rsample")
    with pytest.raises(NotImplementedError):
        D.LKJCholesky(3).rsample()


@pytest.mark.parametrize("concentration", [-0.4, 0.0, 0.3])
def test_generalized_pareto_samples_follow_scipy(concentration: float) -> None:
    plugrad.manual_seed(5)
    x = D.GeneralizedPareto(0.5, 1.5, plugrad.tensor(concentration, dtype=F64)).sample((20000,))
    reference = stats.genpareto(concentration, loc=0.5, scale=1.5)
    assert stats.kstest(x.numpy(), reference.cdf).pvalue > 1e-3


def test_generalized_pareto_matches_scipy_and_its_special_cases() -> None:
    c = np.array([-0.7, -0.2, 0.0, 0.3, 1.5])
    d = D.GeneralizedPareto(-1.0, 2.0, plugrad.tensor(c))
    x = np.array([0.2, 3.0, 10.0, 0.01, 40.0]) - 1.0
    reference = stats.genpareto(c, loc=-1.0, scale=2.0)
    value = plugrad.tensor(x)
    np.testing.assert_allclose(d.log_prob(value).numpy(), reference.logpdf(x), rtol=1e-12)
    np.testing.assert_allclose(d.cdf(value).numpy(), reference.cdf(x), rtol=1e-12)
    q = np.array([0.1, 0.5, 0.9, 1e-6, 0.999])
    np.testing.assert_allclose(d.icdf(plugrad.tensor(q)).numpy(), reference.ppf(q), rtol=1e-12)
    np.testing.assert_allclose(d.entropy().numpy(), reference.entropy(), rtol=1e-12)
    # Bounded above by loc - scale / c where c < 0; every c < 1/2 has a variance.
    support = d.support
    assert support.check(plugrad.tensor([1.85, 8.9, 1e6, 1e6, 1e6])).tolist() == [
        True, True, True, True, True,
    ]  # fmt: skip
    assert support.check(plugrad.tensor([1.9, 9.1, -1.1, 0.0, 0.0])).tolist() == [
        False, False, False, True, True,
    ]  # fmt: skip
    # c = 0 is the exponential distribution from loc; c = -1 the uniform on [loc, loc + scale].
    y = plugrad.tensor([0.1, 0.7, 1.9])
    np.testing.assert_allclose(
        D.GeneralizedPareto(0.0, 2.0, 0.0).log_prob(y).numpy(),
        D.Exponential(0.5).log_prob(y).numpy(),
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        D.GeneralizedPareto(0.0, 2.0, -1.0).log_prob(y).numpy(), [-math.log(2)] * 3, rtol=1e-6
    )


def test_generalized_pareto_rsample_is_differentiable() -> None:
    loc = plugrad.tensor([0.5, -1.0], dtype=F64, requires_grad=True)
    scale = plugrad.tensor([2.0, 0.5], dtype=F64, requires_grad=True)
    c = plugrad.tensor([-0.3, 0.4], dtype=F64, requires_grad=True)
    plugrad.manual_seed(2)
    x = D.GeneralizedPareto(loc, scale, c).rsample((1000,))
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [1000.0, 1000.0])
    # x = loc + scale * g(u, c): its derivative in scale is (x - loc) / scale.
    expected = ((x.detach() - loc.detach()) / scale.detach()).sum(axis=0)
    np.testing.assert_allclose(scale.grad.numpy(), expected.numpy(), rtol=1e-12)
    assert c.grad is not None and np.all(np.isfinite(c.grad.numpy()))


def test_lkj_samples_have_the_lkj_marginals() -> None:
    # Every correlation of an LKJ(eta) matrix of size d is 2 Beta(b, b) - 1, b = eta - 1 + d / 2.
    # (PyTorch 2.13's onion method draws rows 2 onwards from other Beta laws, and fails this.)
    plugrad.manual_seed(11)
    size, eta = 4, np.array([0.5, 3.0])
    factors = D.LKJCholesky(size, plugrad.tensor(eta)).sample((10000,)).numpy()
    assert np.allclose(np.linalg.norm(factors, axis=-1), 1.0)
    assert np.all(np.diagonal(factors, axis1=-2, axis2=-1) > 0)
    correlations = factors @ np.swapaxes(factors, -1, -2)
    for k, concentration in enumerate(eta):
        b = concentration - 1 + size / 2
        for i in range(1, size):
            for j in range(i):
                r = correlations[:, k, i, j]
                assert stats.kstest((r + 1) / 2, stats.beta(b, b).cdf).pvalue > 1e-4, (k, i, j)


def test_lkj_log_prob_is_a_density() -> None:
    # For dim 2, L = [[1, 0], [r, sqrt(1 - r^2)]] has the one free coordinate r, and the
    # density (proportional to (1 - r^2)^(eta - 1)) integrates to 1 over it.
    r = np.linspace(-1, 1, 20001)[1:-1]
    factors = np.zeros((r.size, 2, 2))
    factors[:, 0, 0], factors[:, 1, 0], factors[:, 1, 1] = 1.0, r, np.sqrt(1 - r**2)
    for eta in (1.5, 4.0):
        density = np.exp(D.LKJCholesky(2, eta).log_prob(plugrad.tensor(factors, dtype=F64)).numpy())
        assert np.trapezoid(density, r) == pytest.approx(1.0, abs=2e-3)


def test_wishart_samples_have_its_moments() -> None:
    plugrad.manual_seed(3)
    sigma = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 0.5]])
    df = np.array([3.0, 7.5])
    n = 20000
    d = D.Wishart(plugrad.tensor(df), covariance_matrix=plugrad.tensor(sigma))
    w = d.sample((n,)).numpy()
    assert np.all(np.linalg.eigvalsh(w) > 0)
    mean, variance = d.mean.numpy(), d.variance.numpy()
    np.testing.assert_allclose(mean, df[:, None, None] * sigma)
    assert np.all(np.abs(w.mean(axis=0) - mean) < 4.5 * np.sqrt(variance / n))
    np.testing.assert_allclose(w.var(axis=0), variance, rtol=0.08)
    # E[log det W] = sum of digamma((df - i) / 2) + p log 2 + log det Sigma: the Bartlett
    # diagonal's degrees of freedom, which the two moments above see only in total.
    special = pytest.importorskip("scipy.special")
    expected = sum(special.digamma((df - i) / 2) for i in range(3))
    expected = expected + 3 * math.log(2) + np.log(np.linalg.det(sigma))
    log_det = np.linalg.slogdet(w)[1]
    assert np.all(np.abs(log_det.mean(axis=0) - expected) < 4.5 * log_det.std(axis=0) / np.sqrt(n))


def test_wishart_rsample_is_differentiable_in_df_and_the_scale() -> None:
    plugrad.manual_seed(4)
    df = plugrad.tensor(5.0, dtype=F64, requires_grad=True)
    tril = plugrad.tensor([[1.0, 0.0], [0.5, 2.0]], dtype=F64, requires_grad=True)
    n = 4000
    w = D.Wishart(df, scale_tril=tril).rsample((n,))
    # E[sum of W] = df * sum of L L^T: its derivatives are sum(L L^T) and 2 df (1 1^T L).
    (w.sum() / n).backward()
    sigma = tril.detach().numpy() @ tril.detach().numpy().T
    assert df.grad.item() == pytest.approx(sigma.sum(), rel=0.05)
    expected = 2 * 5.0 * np.ones((2, 2)) @ tril.detach().numpy()
    np.testing.assert_allclose(np.tril(tril.grad.numpy()), np.tril(expected), rtol=0.05)


def test_validation_errors_of_generalized_pareto() -> None:
    with pytest.raises(InvalidArgumentError, match="scale"):
        D.GeneralizedPareto(0.0, plugrad.tensor([1.0, -1.0]), 0.5)
    with pytest.raises(InvalidArgumentError, match="concentration"):
        D.GeneralizedPareto(0.0, 1.0, math.nan)
    d = D.GeneralizedPareto(1.0, 2.0, plugrad.tensor([0.5, -0.5]))
    with pytest.raises(InvalidArgumentError, match="support"):
        d.log_prob(plugrad.tensor([0.5, 2.0]))  # below loc
    with pytest.raises(InvalidArgumentError, match="support"):
        d.cdf(plugrad.tensor([2.0, 5.5]))  # above loc - scale / c = 5
    with pytest.raises(InvalidArgumentError, match="icdf"):
        d.icdf(plugrad.tensor([0.5, 1.5]))
    assert np.isfinite(d.log_prob(plugrad.tensor([2.0, 5.0 - 1e-6])).numpy()).all()
    unchecked = D.GeneralizedPareto(0.0, -1.0, 0.5, validate_args=False)
    assert unchecked.log_prob(plugrad.tensor(1.0)).shape == ()


def test_validation_errors_of_lkj_cholesky() -> None:
    with pytest.raises(InvalidArgumentError, match="dim"):
        D.LKJCholesky(1)
    with pytest.raises(ArgumentError, match="dim"):
        D.LKJCholesky(2.5)
    with pytest.raises(InvalidArgumentError, match="concentration"):
        D.LKJCholesky(3, plugrad.tensor([1.0, 0.0]))
    d = D.LKJCholesky(3, 1.5)
    good = corr_cholesky(3, 3)
    d.log_prob(plugrad.tensor(good))
    for bad in (good * 1.01, np.swapaxes(good, -1, -2), good * np.array([1.0, 1.0, -1.0])):
        with pytest.raises(InvalidArgumentError, match="support"):
            d.log_prob(plugrad.tensor(bad))


def test_wishart_number_df_with_a_batch_of_matrices() -> None:
    # (PyTorch's mean, mode and variance fail there: they view the 0-d df in the batch shape.)
    tril = plugrad.tensor(lower_cholesky(2, 3, 3))
    d = D.Wishart(4.5, scale_tril=tril)
    e = D.Wishart(plugrad.tensor([4.5, 4.5], dtype=F64), scale_tril=tril)
    assert tuple(d.batch_shape) == (2,) and tuple(d.df.shape) == ()
    for moment in ("mean", "mode", "variance"):
        np.testing.assert_allclose(getattr(d, moment).numpy(), getattr(e, moment).numpy())
    value = plugrad.tensor(positive_definite(2, 3, 3))
    np.testing.assert_allclose(d.log_prob(value).numpy(), e.log_prob(value).numpy())
    np.testing.assert_allclose(d.entropy().numpy(), e.entropy().numpy())


def test_validation_errors_of_wishart() -> None:
    eye = plugrad.eye(3, dtype=F64)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        D.Wishart(4.0)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        D.Wishart(4.0, covariance_matrix=eye, scale_tril=eye)
    with pytest.raises(ShapeError):
        D.Wishart(4.0, covariance_matrix=plugrad.ones(3))
    with pytest.raises(ShapeError):
        D.Wishart(plugrad.ones(4) * 5, covariance_matrix=plugrad.eye(3).expand(3, 3, 3))
    # df > p - 1 is checked even without validate_args, as PyTorch does.
    for df in (2.0, plugrad.tensor([4.0, 1.5])):
        with pytest.raises(InvalidArgumentError, match="df"):
            D.Wishart(df, covariance_matrix=eye, validate_args=False)
    with pytest.warns(UserWarning, match="singular"):
        low = D.Wishart(2.5, covariance_matrix=eye)
    assert np.all(np.linalg.eigvalsh(low.sample((50,)).numpy()) > 0)
    not_positive = plugrad.tensor([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(InvalidArgumentError, match="covariance_matrix"):
        D.Wishart(4.0, covariance_matrix=not_positive)
    with pytest.raises(InvalidArgumentError, match="precision_matrix"):
        D.Wishart(4.0, precision_matrix=not_positive)
    with pytest.raises(InvalidArgumentError, match="scale_tril"):
        D.Wishart(4.0, scale_tril=-eye)
    with pytest.raises(InvalidArgumentError, match="support"):
        D.Wishart(4.0, covariance_matrix=eye).log_prob(not_positive)
    with pytest.raises(ArgumentError, match="df"):
        D.Wishart("4", covariance_matrix=eye)


def test_generalized_pareto_gradients_in_the_concentration_at_zero() -> None:
    # The c = 0 branch ignored c: every gradient in it was 0 (log_prob's is 1.5 at z = 3).
    def gradients(c0: float) -> list[float]:
        c = plugrad.tensor(c0, dtype=plugrad.float64, requires_grad=True)
        d = D.GeneralizedPareto(0.5, 2.0, c)
        value = plugrad.tensor(6.5, dtype=plugrad.float64)
        u = plugrad.tensor(0.7, dtype=plugrad.float64)
        outputs = (d.log_prob(value), d.cdf(value), d.icdf(u), d.log_survival_function(value))
        return [float(plugrad.autograd.grad(out, c)[0]) for out in outputs]

    # Away from the branch (|c| > 1e-8) the general formulas hold; at 0 the series.
    np.testing.assert_allclose(gradients(0.0), gradients(1e-7), rtol=1e-5)
    np.testing.assert_allclose(gradients(0.0), gradients(-1e-7), rtol=1e-5)
    z = 3.0
    assert gradients(0.0)[0] == pytest.approx(z * z / 2 - z)


@pytest.mark.parametrize("c", [1e-9, -1e-9, 3e-12])
def test_generalized_pareto_is_exact_near_zero_concentration(c: float) -> None:
    # Within 1e-8 of 0 the c = 0 formulas were used as they are, 6e-10 off at c = 1e-9
    # (PyTorch's too); their series in c keeps every digit.
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    loc, scale, value, u = 0.5, 1.3, 3.7, 0.7
    d = D.GeneralizedPareto(*(plugrad.tensor(p, dtype=plugrad.float64) for p in (loc, scale, c)))
    z, cc = (mpmath.mpf(value) - loc) / scale, mpmath.mpf(c)
    log_prob = -mpmath.log(scale) - (1 / cc + 1) * mpmath.log1p(cc * z)
    cdf = 1 - mpmath.exp(-mpmath.log1p(cc * z) / cc)
    icdf = loc + scale * mpmath.expm1(-cc * mpmath.log1p(-u)) / cc
    x = plugrad.tensor(value, dtype=plugrad.float64)
    assert float(d.log_prob(x)) == pytest.approx(float(log_prob), rel=1e-15)
    assert float(d.cdf(x)) == pytest.approx(float(cdf), rel=1e-15)
    assert float(d.icdf(plugrad.tensor(u, dtype=plugrad.float64))) == pytest.approx(
        float(icdf), rel=1e-15
    )
