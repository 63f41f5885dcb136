"""plugrad.poisson and plugrad.binomial: PyTorch's samplers, with the laws they claim."""

from __future__ import annotations

import math

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError, DtypeError, InvalidArgumentError, ShapeError

DRAWS = 20_000


def _frequencies_match(drawn: np.ndarray, pmf: list[float]) -> None:
    """Each value's share of the draws is within 5 standard errors of its probability."""
    assert np.all(drawn == np.round(drawn)) and drawn.min() >= 0
    counts = np.bincount(drawn.astype(np.int64), minlength=len(pmf))
    assert counts[len(pmf) :].sum() <= 5 * math.sqrt(DRAWS * max(1e-12, 1 - sum(pmf))) + 1
    for k, p in enumerate(pmf):
        spread = 5 * math.sqrt(DRAWS * p * (1 - p)) + 1
        assert abs(counts[k] - DRAWS * p) <= spread, (k, counts[k], DRAWS * p)


@pytest.mark.parametrize("rate", [0.3, 4.0, 25.0])
def test_poisson_draws_follow_the_poisson_law(backend, rate):
    plugrad.manual_seed(0)
    drawn = plugrad.poisson(plugrad.full((DRAWS,), rate)).numpy()
    top = int(rate + 8 * math.sqrt(rate) + 5)
    pmf = [math.exp(k * math.log(rate) - rate - math.lgamma(k + 1)) for k in range(top)]
    _frequencies_match(drawn, pmf)


@pytest.mark.parametrize(("n", "p"), [(7, 0.9), (40, 0.1), (200, 0.35)])
def test_binomial_draws_follow_the_binomial_law(backend, n, p):
    plugrad.manual_seed(1)
    drawn = plugrad.binomial(plugrad.full((DRAWS,), float(n)), plugrad.tensor(p)).numpy()
    assert drawn.max() <= n
    pmf = [math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]
    _frequencies_match(drawn, pmf)


def test_shapes_dtypes_ends_and_broadcasting():
    rates = plugrad.tensor([[0.0, 2.0], [5.0, 0.0]], dtype=plugrad.float64)
    drawn = plugrad.poisson(rates)
    assert drawn.shape == (2, 2) and drawn.dtype == plugrad.float64
    assert drawn[0, 0].item() == 0 and drawn[1, 1].item() == 0
    assert plugrad.poisson(plugrad.zeros(0)).shape == (0,)
    assert plugrad.poisson(plugrad.tensor(3.0)).shape == ()
    counts = plugrad.binomial(plugrad.tensor([[0.0], [5.0]]), plugrad.tensor([0.5, 1.0, 0.0]))
    assert counts.shape == (2, 3) and counts.dtype == plugrad.float32
    assert counts[0].tolist() == [0.0, 0.0, 0.0]
    assert counts[1, 1:].tolist() == [5.0, 0.0]  # probabilities 1 and 0 are certain


def test_a_generator_makes_the_draws_repeatable():
    generator = plugrad.Generator().manual_seed(5)
    rates = plugrad.full((50,), 40.0)
    first = plugrad.poisson(rates, generator)
    n, p = plugrad.full((50,), 30.0), plugrad.full((50,), 0.4)
    first_counts = plugrad.binomial(n, p, generator=generator)
    generator.manual_seed(5)
    assert plugrad.poisson(rates, generator=generator).tolist() == first.tolist()
    assert plugrad.binomial(n, p, generator).tolist() == first_counts.tolist()


def test_draws_are_in_the_graph_with_zero_gradients_as_in_pytorch():
    rate = plugrad.tensor([1.0, 30.0], requires_grad=True)
    drawn = plugrad.poisson(rate)
    assert drawn.requires_grad
    (drawn * 2).sum().backward()
    assert rate.grad.tolist() == [0.0, 0.0]
    count = plugrad.tensor([10.0, 20.0], requires_grad=True)
    prob = plugrad.tensor([0.5], requires_grad=True)
    plugrad.binomial(count, prob).sum().backward()
    assert count.grad.tolist() == [0.0, 0.0] and prob.grad.tolist() == [0.0]
    with plugrad.no_grad():
        assert not plugrad.poisson(rate).requires_grad


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: plugrad.poisson([1.0]), ArgumentError, "takes a Tensor as input"),
        (lambda: plugrad.poisson(plugrad.tensor([3])), DtypeError, "real floating dtype"),
        (lambda: plugrad.poisson(plugrad.tensor([1.0, -1.0])), InvalidArgumentError,
         "finite and non-negative"),
        (lambda: plugrad.poisson(plugrad.tensor([math.inf])), InvalidArgumentError,
         "finite and non-negative"),
        (lambda: plugrad.poisson(plugrad.tensor([math.nan])), InvalidArgumentError,
         "finite and non-negative"),
        (lambda: plugrad.binomial(plugrad.tensor([2.5]), plugrad.tensor([0.5])),
         InvalidArgumentError, "whole number"),
        (lambda: plugrad.binomial(plugrad.tensor([-1.0]), plugrad.tensor([0.5])),
         InvalidArgumentError, "whole number"),
        (lambda: plugrad.binomial(plugrad.tensor([2.0]), plugrad.tensor([1.5])),
         InvalidArgumentError, "in [0, 1]"),
        (lambda: plugrad.binomial(plugrad.tensor([2.0]), plugrad.tensor([math.nan])),
         InvalidArgumentError, "in [0, 1]"),
        (lambda: plugrad.binomial(plugrad.tensor([2.0]), plugrad.ones(1, dtype=plugrad.float64)),
         DtypeError, "one dtype"),
        (lambda: plugrad.binomial(plugrad.ones(3), plugrad.full((2,), 0.5)), ShapeError,
         "do not broadcast"),
        (lambda: plugrad.poisson(plugrad.ones(2), generator=3), ArgumentError, "plugrad.Generator"),
    ],
)  # fmt: skip
def test_bad_input_gets_a_typed_error(call, error, words):
    with pytest.raises(error) as raised:
        call()
    assert words in str(raised.value)
