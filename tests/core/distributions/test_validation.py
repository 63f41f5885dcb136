"""Argument validation in ``plugrad.distributions``: typed errors that say what is wrong.

With ``validate_args`` (on by default, as in PyTorch) a parameter outside its
constraint or a value outside the support raises
:class:`plugrad.errors.InvalidArgumentError` (a ``ValueError``); wrong shapes
raise :class:`plugrad.errors.ShapeError`; wrong types
:class:`plugrad.errors.ArgumentError`. Nothing is changed by a call that fails.
"""

from __future__ import annotations

import math
import warnings

import pytest

import plugrad
from plugrad import distributions as D
from plugrad.errors import ArgumentError, InvalidArgumentError, ShapeError
from plugrad.testing import backends_under_test

from ._helpers import t


@pytest.mark.parametrize("backend", backends_under_test())
def test_bad_parameters_raise(backend: str) -> None:
    with plugrad.use_backend(backend):
        with pytest.raises(InvalidArgumentError, match=r"Expected parameter scale .*GreaterThan"):
            D.Normal(0.0, t([1.0, -1.0]))
        with pytest.raises(ValueError, match=r"parameter probs .*Interval\(lower_bound=0.0, up"):
            D.Bernoulli(probs=t([0.5, 1.5]))
        with pytest.raises(InvalidArgumentError, match="parameter rate"):
            D.Exponential(0.0)
        with pytest.raises(InvalidArgumentError, match=r"parameter low .*LessThan"):
            D.Uniform(1.0, 0.0)
        with pytest.raises(InvalidArgumentError, match="parameter loc"):
            D.Laplace(math.nan, 1.0)
        with pytest.raises(InvalidArgumentError, match=r"parameter probs .*Simplex"):
            D.Categorical(probs=t([0.5, -0.1, 0.6]))
        with pytest.raises(InvalidArgumentError, match=r"probs .* to be positive"):
            D.Geometric(probs=0.0)
        with pytest.raises(InvalidArgumentError, match=r"covariance_matrix .*PositiveDefinite"):
            D.MultivariateNormal(t([0.0, 0.0]), covariance_matrix=t([[1.0, 2.0], [2.0, 1.0]]))
        with pytest.raises(InvalidArgumentError, match=r"scale_tril .*LowerCholesky"):
            D.MultivariateNormal(t([0.0, 0.0]), scale_tril=t([[1.0, 1.0], [0.0, 1.0]]))


def test_validation_can_be_turned_off() -> None:
    d = D.Normal(0.0, -1.0, validate_args=False)
    assert d.scale.item() == -1.0
    D.Exponential(0.5, validate_args=False).log_prob(t(-1.0))
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(0.0, -1.0)
        assert D.Bernoulli(probs=0.5).log_prob(t(0.5)).shape == ()
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(InvalidArgumentError):
        D.Normal(0.0, -1.0)


def test_unvalidated_categorical_values_are_still_indices_in_range() -> None:
    # PyTorch's gather refuses them; a negative value never reads from the end.
    d = D.Categorical(probs=t([0.3, 0.7]), validate_args=False)
    assert d.log_prob(plugrad.tensor([1, 0])).tolist() == pytest.approx(
        [math.log(0.7), math.log(0.3)]
    )
    for value in (-1, 2):
        with pytest.raises(plugrad.errors.IndexOutOfRangeError, match="categories 0 to 1"):
            d.log_prob(plugrad.tensor(value))


def test_a_bad_default_changes_nothing() -> None:
    with pytest.raises(InvalidArgumentError, match="takes a bool"):
        D.Distribution.set_default_validate_args("no")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        D.Normal(0.0, -1.0)


@pytest.mark.parametrize("backend", backends_under_test())
def test_values_outside_the_support_raise(backend: str) -> None:
    with plugrad.use_backend(backend):
        cases = [
            (D.Exponential(1.0), t([1.0, -1.0]), "GreaterThanEq(lower_bound=0.0)"),
            (D.Normal(0.0, 1.0), t(math.nan), "Real()"),
            (D.Bernoulli(probs=0.3), t(0.5), "Boolean()"),
            (D.Categorical(logits=plugrad.zeros(3)), plugrad.tensor(3), "IntegerInterval"),
            (D.Geometric(probs=0.5), t(1.5), "IntegerGreaterThan(lower_bound=0)"),
            (D.Uniform(0.0, 1.0), t(2.0), "Interval(lower_bound=0.0, upper_bound=1.0)"),
            (D.LogNormal(0.0, 1.0), t(0.0), "GreaterThan(lower_bound=0.0)"),
            (D.OneHotCategorical(logits=plugrad.zeros(3)), t([1.0, 1.0, 0.0]), "OneHot()"),
        ]
        for dist, value, support in cases:
            with pytest.raises(InvalidArgumentError, match="to be within the support") as info:
                dist.log_prob(value)
            assert support in str(info.value)
            assert type(dist).__name__ in str(info.value)
        with pytest.raises(InvalidArgumentError, match="support"):
            D.Exponential(1.0).cdf(t(-2.0))


def test_values_of_the_wrong_kind_or_shape_raise() -> None:
    with pytest.raises(InvalidArgumentError, match="must be a Tensor"):
        D.Normal(0.0, 1.0).log_prob(0.5)  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="right-most size of value must match event_shape"):
        D.MultivariateNormal(t([0.0, 0.0]), scale_tril=t([[1.0, 0.0], [0.0, 1.0]])).log_prob(
            t([0.0, 0.0, 0.0])
        )
    with pytest.raises(ShapeError, match="not broadcastable"):
        D.Normal(plugrad.zeros(3), 1.0).log_prob(plugrad.zeros(2))


def test_bad_arguments_raise() -> None:
    with pytest.raises(InvalidArgumentError, match="either probs or logits, not both"):
        D.Bernoulli(probs=0.5, logits=0.0)
    with pytest.raises(InvalidArgumentError, match="not neither"):
        D.Categorical()
    with pytest.raises(ShapeError, match="at least one axis"):
        D.Categorical(probs=t(1.0))
    with pytest.raises(ArgumentError, match="must be a Tensor"):
        D.Categorical(probs=[0.5, 0.5])  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="Tensors or real numbers"):
        D.Normal("0", 1.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="exactly one of"):
        D.MultivariateNormal(t([0.0]), covariance_matrix=t([[1.0]]), scale_tril=t([[1.0]]))
    with pytest.raises(ShapeError, match="has 2 dimensions"):
        D.MultivariateNormal(t([0.0, 0.0]), covariance_matrix=t([[1.0]]))
    with pytest.raises(InvalidArgumentError, match="reinterpreted_batch_ndims"):
        D.Independent(D.Normal(plugrad.zeros(3), 1.0), 2)
    with pytest.raises(ArgumentError, match="tuple of ints"):
        D.Normal(0.0, 1.0).sample(3)  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="cannot be broadcast"):
        D.Normal(plugrad.zeros(3), 1.0).expand((2,))


def test_kl_without_a_formula_raises() -> None:
    with pytest.raises(NotImplementedError, match=r"No KL.*Cauchy.*Normal.*register_kl"):
        D.kl_divergence(D.Cauchy(0.0, 1.0), D.Normal(0.0, 1.0))
    with pytest.raises(ArgumentError, match="Distribution subclasses"):
        D.register_kl(int, D.Normal)
    with pytest.raises(ArgumentError, match="must be a Distribution"):
        D.kl_divergence(D.Normal(0.0, 1.0), 1.0)  # type: ignore[arg-type]
    p = D.Independent(D.Normal(plugrad.zeros(2, 3), 1.0), 1)
    q = D.Independent(D.Normal(plugrad.zeros(2, 3), 1.0), 2)
    with pytest.raises(NotImplementedError, match="reinterpreted_batch_ndims"):
        D.kl_divergence(p, q)


def test_register_kl_prefers_the_most_specific_pair() -> None:
    class Wide(D.Normal):
        pass

    assert D.kl_divergence(Wide(0.0, 1.0), D.Normal(1.0, 1.0)).item() == pytest.approx(0.5)

    @D.register_kl(Wide, D.Normal)
    def _kl_wide(p: D.Normal, q: D.Normal) -> plugrad.Tensor:
        return plugrad.tensor(-1.0)

    assert D.kl_divergence(Wide(0.0, 1.0), D.Normal(1.0, 1.0)).item() == -1.0
    assert D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(1.0, 1.0)).item() == pytest.approx(0.5)


def test_geometric_has_no_icdf_as_pytorchs() -> None:
    with pytest.raises(NotImplementedError):
        D.Geometric(0.5).icdf(t(0.5))


@pytest.mark.parametrize(
    "make",
    [
        lambda v: D.Uniform(plugrad.tensor(0.0), plugrad.tensor(1.0), validate_args=v),
        lambda v: D.Exponential(plugrad.tensor(1.0), validate_args=v),
        lambda v: D.Cauchy(plugrad.tensor(0.0), plugrad.tensor(1.0), validate_args=v),
        lambda v: D.Normal(plugrad.tensor(0.0), plugrad.tensor(1.0), validate_args=v),
        lambda v: D.Laplace(plugrad.tensor(0.0), plugrad.tensor(1.0), validate_args=v),
        lambda v: D.LogNormal(plugrad.tensor(0.0), plugrad.tensor(1.0), validate_args=v),
        lambda v: D.HalfCauchy(plugrad.tensor(1.0), validate_args=v),
        lambda v: D.Gumbel(plugrad.tensor(0.0), plugrad.tensor(1.0), validate_args=v),
        lambda v: D.ContinuousBernoulli(probs=plugrad.tensor(0.3), validate_args=v),
    ],
    ids=lambda make: type(make(None)).__name__,
)
@pytest.mark.parametrize("value", [1.5, -0.5, math.nan])
def test_icdf_of_a_value_that_is_not_a_probability_is_refused(make, value) -> None:
    # The docstring said icdf's values were checked; they were not (Uniform.icdf(1.5) was 1.5).
    with pytest.raises(InvalidArgumentError, match=r"icdf\(\) takes probabilities"):
        make(True).icdf(plugrad.tensor([0.5, value]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (NaN from the library's log)
        assert len(make(False).icdf(plugrad.tensor([0.5, value])).tolist()) == 2


def test_cauchy_icdf_is_infinite_at_0_and_1_in_float32() -> None:
    # tan of the rounded -pi/2 is positive in float32: icdf(0) was +2.3e7, icdf(1) -2.3e7.
    dist = D.Cauchy(plugrad.tensor(0.0), plugrad.tensor(1.0))
    assert dist.icdf(plugrad.tensor([0.0, 1.0])).tolist() == [-math.inf, math.inf]
