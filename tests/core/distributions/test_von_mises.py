"""VonMises against ``torch.distributions.VonMises``: values, gradients, samples, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import plugrad
from plugrad import distributions as D
from plugrad.errors import InvalidArgumentError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

from ._helpers import seeded  # noqa: E402
from .test_against_torch import (  # noqa: E402  (after the skip without PyTorch)
    Case,
    evaluated,
    method_cases,
)

RNG, uniform = seeded(41)


CASES = {
    "VonMises": Case(
        lambda D, loc, k: D.VonMises(loc, k),
        (RNG.normal(size=3), uniform(0.05, 30.0, 2, 1)),
        RNG.uniform(-7, 7, (4, 2, 3)),
        ("log_prob", "mean", "mode", "variance"),
    ),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(**method_cases(CASES))
def test_agrees_with_torch(name: str, method: str, backend: str) -> None:
    # PyTorch's log I0 and I1 / I0 are polynomial fits, off by up to 3e-8 relative (plugrad's
    # i0e by 4e-16 from SciPy's, checked below), and 1 - I1/I0 loses digits to cancellation:
    # values are compared to 1e-6, gradients to 1e-5.
    (ours, our_grads), (theirs, their_grads) = evaluated(CASES[name], method, backend)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
    for mine, reference in zip(our_grads, their_grads, strict=True):
        if reference is not None and np.any(reference):
            np.testing.assert_allclose(mine, reference, rtol=1e-5, atol=1e-6)


def test_log_prob_is_exact() -> None:
    scipy_special = pytest.importorskip("scipy.special")
    k = np.array([0.05, 0.7, 3.3, 12.0, 29.0, 700.0])
    x = RNG.uniform(-3, 3, 6)
    ours = D.VonMises(0.2, plugrad.tensor(k)).log_prob(plugrad.tensor(x)).numpy()
    exact = k * np.cos(x - 0.2) - np.log(2 * np.pi) - np.log(scipy_special.i0e(k)) - k
    np.testing.assert_allclose(ours, exact, rtol=1e-13)


@pytest.mark.parametrize("backend", backends_under_test())
def test_samples_follow_the_distribution(backend: str) -> None:
    with plugrad.use_backend(backend):
        loc = plugrad.tensor([0.0, 1.0, -3.0, 2.5], dtype=plugrad.float64)
        k = plugrad.tensor([0.3, 4.0, 80.0, 1e-8], dtype=plugrad.float64)
        d = D.VonMises(loc, k)
        plugrad.manual_seed(3)
        x = d.sample((20000,)).numpy()
        plugrad.manual_seed(3)
        assert np.array_equal(x, d.sample((20000,)).numpy())
        variance = d.variance.numpy()
    assert x.shape == (20000, 4) and x.min() >= -math.pi and x.max() < math.pi
    resultant = np.exp(1j * x).mean(axis=0)
    # The circular variance 1 - |E exp(ix)| and, where concentrated (k = 4, 80), the mean
    # direction (at k = 0.3 its standard error is 0.034).
    np.testing.assert_allclose(1 - np.abs(resultant), variance, atol=0.02)  # 4 standard errors
    np.testing.assert_allclose(np.angle(resultant[1:3]), [1.0, -3.0], atol=0.03)


def test_log_prob_is_periodic_and_bad_input_is_refused() -> None:
    d = D.VonMises(0.5, 2.0)
    a, b = d.log_prob(plugrad.tensor(1.0)), d.log_prob(plugrad.tensor(1.0 + 2 * math.pi))
    assert a.item() == pytest.approx(b.item(), rel=1e-6)
    with pytest.raises(InvalidArgumentError, match="concentration"):
        D.VonMises(0.0, plugrad.tensor([-1.0]))
    big = D.VonMises(0.0, plugrad.tensor(1e4, dtype=plugrad.float64))
    assert math.isfinite(big.log_prob(plugrad.tensor(0.0, dtype=plugrad.float64)).item())
    assert tuple(D.VonMises(plugrad.zeros(1, 3), 1.0).expand((2, 3)).sample((5,)).shape) == (
        5, 2, 3,
    )  # fmt: skip
