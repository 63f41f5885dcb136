"""``OneHotCategoricalStraightThrough`` against PyTorch's: one-hot draws that carry the
gradient of ``probs``."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.distributions import (
    ExponentialFamily,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)

torch = pytest.importorskip("torch")

TD = torch.distributions
LOGITS = np.array([[0.3, -1.2, 2.0], [1.0, 0.5, -0.4]])


def test_it_is_a_one_hot_categorical_with_rsample():
    assert issubclass(OneHotCategoricalStraightThrough, OneHotCategorical)
    assert not issubclass(OneHotCategoricalStraightThrough, ExponentialFamily)
    assert (
        OneHotCategoricalStraightThrough.has_rsample
        is TD.OneHotCategoricalStraightThrough.has_rsample
    )
    assert OneHotCategorical.has_rsample is TD.OneHotCategorical.has_rsample is False


@pytest.mark.parametrize("sample_shape", [(), (5,), (2, 3)])
@pytest.mark.parametrize("given", ["logits", "probs"])
def test_rsample_draws_as_sample_with_the_gradient_of_probs(sample_shape, given):
    values = LOGITS if given == "logits" else np.exp(LOGITS) / np.exp(LOGITS).sum(-1, keepdims=True)
    gradients, draws = [], {}
    for lib, module in ((plugrad, plugrad.distributions), (torch, TD)):
        leaf = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        dist = module.OneHotCategoricalStraightThrough(**{given: leaf})
        lib.manual_seed(2)
        x = dist.rsample(sample_shape)
        assert x.requires_grad
        weights = np.random.default_rng(0).uniform(-1, 1, (*sample_shape, 2, 3))
        (x * lib.tensor(weights)).sum().backward()
        gradients.append(leaf.grad.numpy())
        draws[lib.__name__] = x.detach().numpy()
    np.testing.assert_allclose(gradients[0], gradients[1], rtol=1e-12, atol=1e-15)
    ours = draws["plugrad"]
    assert ours.shape == (*sample_shape, 2, 3) and ours.dtype == np.float64
    np.testing.assert_array_equal(ours.sum(-1), 1.0)
    assert set(np.unique(ours)) <= {0.0, 1.0}
    # The values are the draws of sample(), from the same numbers.
    plugrad.manual_seed(2)
    again = OneHotCategoricalStraightThrough(logits=plugrad.tensor(LOGITS)).sample(sample_shape)
    np.testing.assert_array_equal(again.numpy(), ours)


def test_the_rest_is_one_hot_categoricals():
    ours = OneHotCategoricalStraightThrough(logits=plugrad.tensor(LOGITS))
    theirs = TD.OneHotCategoricalStraightThrough(logits=torch.tensor(LOGITS))
    value = np.eye(3)[[2, 0]]
    np.testing.assert_allclose(
        ours.log_prob(plugrad.tensor(value)).numpy(), theirs.log_prob(torch.tensor(value)).numpy()
    )
    for name in ("entropy", "mean", "variance", "mode"):
        result = getattr(ours, name)
        result = result() if callable(result) else result
        expected = getattr(theirs, name)
        expected = expected() if callable(expected) else expected
        np.testing.assert_allclose(result.numpy(), expected.numpy(), rtol=1e-13)
    expanded = ours.expand((4, 2))
    assert type(expanded) is OneHotCategoricalStraightThrough
    assert expanded.rsample().shape == (4, 2, 3)
    assert repr(ours).startswith("OneHotCategoricalStraightThrough(")
