"""``ExponentialFamily`` against PyTorch's: which families derive from it, their natural
parameters and log-normalizers, and the entropy computed from them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import plugrad
import plugrad.distributions as D
from plugrad.distributions import ExponentialFamily

torch = pytest.importorskip("torch")

TD = torch.distributions
RNG = np.random.default_rng(21)


def _positive_definite(size: int) -> np.ndarray:
    a = RNG.standard_normal((size, size))
    return a @ a.T + np.eye(size)


# name -> the parameter arrays (float64), given positionally to both libraries' class.
FAMILIES: dict[str, tuple[np.ndarray, ...]] = {
    "Bernoulli": (np.array([0.2, 0.7, 0.5, 0.01]),),
    "ContinuousBernoulli": (np.array([0.2, 0.5, 0.4995, 0.9]),),
    "Exponential": (np.array([0.5, 2.0]),),
    "Gamma": (np.array([0.7, 3.0]), np.array([[2.0], [0.5]])),
    "Chi2": (np.array([1.5, 5.0]),),
    "Normal": (np.array([0.0, -1.5]), np.array([[0.5], [2.0]])),
    "Beta": (np.array([0.7, 3.0]), np.array([2.0, 0.5])),
    "Dirichlet": (np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 4.0]]),),
    "Poisson": (np.array([2.0, 0.5]),),
}


def build(lib: Any, name: str, arrays: tuple[np.ndarray, ...] | None = None) -> Any:
    module = D if lib is plugrad else TD
    arrays = FAMILIES[name] if arrays is None else arrays
    return getattr(module, name)(*(lib.tensor(a, dtype=lib.float64) for a in arrays))


def wisharts() -> tuple[Any, Any]:
    df, sigma = np.array([4.0, 6.5]), _positive_definite(3)
    return (
        D.Wishart(plugrad.tensor(df), covariance_matrix=plugrad.tensor(sigma)),
        TD.Wishart(torch.tensor(df), covariance_matrix=torch.tensor(sigma)),
    )


def pair(name: str) -> tuple[Any, Any]:
    return wisharts() if name == "Wishart" else (build(plugrad, name), build(torch, name))


def numpy(value: Any) -> np.ndarray:
    return value.detach().numpy()


def test_the_families_deriving_from_it_are_pytorchs():
    theirs = {
        name
        for name in dir(TD)
        if isinstance(getattr(TD, name), type)
        and issubclass(getattr(TD, name), TD.ExponentialFamily)
    }
    ours = {
        name
        for name in D.__all__
        if isinstance(getattr(D, name), type) and issubclass(getattr(D, name), ExponentialFamily)
    }
    assert ours == theirs
    for name in D.__all__:  # and no other class of plugrad's derives from it
        kind = getattr(D, name)
        if isinstance(kind, type) and hasattr(TD, name):
            assert issubclass(kind, ExponentialFamily) == issubclass(
                getattr(TD, name), TD.ExponentialFamily
            ), name


@pytest.mark.parametrize("name", [*FAMILIES, "Wishart"])
def test_natural_parameters_and_log_normalizer_are_pytorchs(name: str):
    ours, theirs = pair(name)
    assert isinstance(ours, ExponentialFamily)
    for mine, its in zip(ours._natural_params, theirs._natural_params, strict=True):
        np.testing.assert_allclose(numpy(mine), numpy(its), rtol=1e-13)
    np.testing.assert_allclose(
        numpy(ours._log_normalizer(*ours._natural_params)),
        numpy(theirs._log_normalizer(*theirs._natural_params)),
        rtol=1e-13,
    )


@pytest.mark.parametrize("name", [*FAMILIES, "Wishart"])
def test_entropy_from_the_log_normalizer_is_pytorchs_and_the_closed_form(name: str):
    ours, theirs = pair(name)
    try:
        expected = TD.ExponentialFamily.entropy(theirs)
    except NotImplementedError:  # no _mean_carrier_measure in PyTorch: none here either
        with pytest.raises(NotImplementedError, match="carrier measure"):
            ExponentialFamily.entropy(ours)
        return
    generic = ExponentialFamily.entropy(ours)
    # (atol: a continuous Bernoulli's entropy near probs 1/2 is a difference of near equals)
    np.testing.assert_allclose(numpy(generic), numpy(expected), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(numpy(generic), numpy(ours.entropy()), rtol=1e-12, atol=1e-14)


def test_poisson_has_no_entropy_as_in_pytorch():
    with pytest.raises(NotImplementedError):
        TD.Poisson(2.0).entropy()
    with pytest.raises(NotImplementedError):
        D.Poisson(2.0).entropy()


def test_the_entropy_is_differentiable_in_the_parameters():
    # PyTorch's is computed from detached copies: no gradient reaches loc and scale.
    loc = plugrad.tensor([0.0, 1.0], dtype=plugrad.float64, requires_grad=True)
    scale = plugrad.tensor([0.5, 2.0], dtype=plugrad.float64, requires_grad=True)
    generic = ExponentialFamily.entropy(D.Normal(loc, scale))
    assert generic.requires_grad
    generic.sum().backward()
    np.testing.assert_allclose(scale.grad.numpy(), 1 / scale.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(loc.grad.numpy(), [0.0, 0.0], atol=1e-15)


class _CarriedBeta(D.Beta):
    """``Beta`` with the mean of its carrier measure, ``-E[log x + log(1 - x)]``."""

    @property
    def _mean_carrier_measure(self) -> Any:
        a, b = self.concentration1, self.concentration0
        total = plugrad.special.digamma(a + b)
        return 2 * total - plugrad.special.digamma(a) - plugrad.special.digamma(b)


def test_a_parameter_given_twice_gets_the_gradient_of_each_place_once():
    # Beta(a, a): both natural parameters are the tensor a itself.
    a = plugrad.tensor([0.7, 3.0], dtype=plugrad.float64, requires_grad=True)
    dist = _CarriedBeta(a, a)
    assert dist._natural_params[0] is dist._natural_params[1]
    generic = ExponentialFamily.entropy(dist)
    (ours,) = plugrad.autograd.grad(generic.sum(), [a])
    (closed,) = plugrad.autograd.grad(dist.entropy().sum(), [a])
    np.testing.assert_allclose(generic.detach().numpy(), dist.entropy().detach().numpy())
    np.testing.assert_allclose(ours.numpy(), closed.numpy(), rtol=1e-12)


def test_the_entropy_under_no_grad_is_computed_without_a_graph():
    rate = plugrad.tensor([0.5, 2.0], requires_grad=True)
    with plugrad.no_grad():
        entropy = ExponentialFamily.entropy(D.Exponential(rate))
    assert not entropy.requires_grad
    np.testing.assert_allclose(entropy.numpy(), 1 - np.log([0.5, 2.0]), rtol=1e-6)
    assert rate.grad is None


def test_a_subclass_without_the_parts_says_what_it_lacks():
    class Bare(ExponentialFamily):
        pass

    with pytest.raises(NotImplementedError, match="Bare does not give"):
        Bare().entropy()
    with pytest.raises(NotImplementedError, match="log-normalizer"):
        Bare()._log_normalizer(plugrad.zeros(()))


@pytest.mark.parametrize("name", [*FAMILIES, "Wishart"])
def test_the_families_results_are_unchanged(name: str):
    # The closed forms each family keeps, against PyTorch's.
    ours, theirs = pair(name)
    value = ours.sample((3,))
    np.testing.assert_allclose(
        numpy(ours.log_prob(value)), numpy(theirs.log_prob(torch.tensor(value.numpy()))), rtol=1e-11
    )
    if name != "Poisson":
        np.testing.assert_allclose(numpy(ours.entropy()), numpy(theirs.entropy()), rtol=1e-11)
