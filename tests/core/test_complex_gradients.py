"""Gradients of complex inputs where PyTorch has no complex kernel or refuses to differentiate:
checked with finite differences (``plugrad.autograd.gradcheck``), PyTorch's convention."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.errors import DtypeError

RNG = np.random.default_rng(0)


def _complex(*shape: int) -> plugrad.Tensor:
    values = RNG.normal(size=shape) + 1j * RNG.normal(size=shape)
    return plugrad.tensor(values, requires_grad=True)


def _check(function, inputs) -> None:
    """gradcheck of ``function``, skipped where the backend refuses its complex inputs
    (array-api-strict's max and ordering refuse complex arrays, as the standard does)."""
    try:
        function(*inputs)
    except DtypeError as refusal:
        pytest.skip(f"the default backend refuses these complex inputs: {refusal}")
    assert plugrad.autograd.gradcheck(function, inputs)


@pytest.mark.parametrize(
    "function",
    [
        lambda t: plugrad.softmax(t, axis=-1),
        lambda t: plugrad.log_softmax(t, axis=-1),
        lambda t: plugrad.nn.functional.softmin(t, dim=0),
    ],
    ids=["softmax", "log_softmax", "softmin"],
)
def test_normalizing_functions_of_complex_inputs(function) -> None:
    # Their gradients were the conjugates of the right ones.
    _check(function, (_complex(2, 3),))


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_products_of_complex_values(include_self) -> None:
    # The gradients of both inputs were not conjugated (PyTorch refuses to differentiate).
    index = plugrad.tensor([0, 2, 0, 2])

    def product(x, src):
        return x.scatter_reduce(0, index, src, "prod", include_self=include_self)

    source = _complex(4)
    with plugrad.no_grad():
        source[1] = 0  # a lone zero: the gradient there is the product of the others
    _check(product, (_complex(3), source))
    _check(lambda x, src: x.scatter(0, index, src, reduce="multiply"), (_complex(3), _complex(4)))
