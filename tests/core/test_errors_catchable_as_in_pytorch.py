"""Errors that code written against PyTorch catches with ``except RuntimeError``.

PyTorch raises ``RuntimeError`` for shapes, dtypes, invalid values and singular
matrices alike; plugrad's errors for these are also the ``ValueError`` or
``TypeError`` that NumPy and the Array API standard raise, so both kinds of code
keep working. Each case is run through PyTorch too, where it is installed, to
check that PyTorch indeed raises a ``RuntimeError`` there.
"""

from __future__ import annotations

import pytest

import plugrad
from plugrad import errors

CASES = {
    "cat of mismatched shapes": lambda t: t.cat([t.ones(2, 3), t.ones(2, 4)]),
    "stack of mismatched shapes": lambda t: t.stack([t.ones(2), t.ones(3)]),
    "matmul of mismatched shapes": lambda t: t.ones(2, 3) @ t.ones(2, 3),
    "broadcasting": lambda t: t.ones(2, 3) + t.ones(4),
    "view to another size": lambda t: t.arange(6).view(4, 2),
    "item of two elements": lambda t: t.ones(2).item(),
    "masked_fill with an integer mask": lambda t: t.zeros(3).masked_fill(t.tensor([1, 0, 1]), 1.0),
    "requires_grad of an integer tensor": lambda t: t.ones(3, dtype=t.int64).requires_grad_(),
    "linear layer of the wrong width": lambda t: t.nn.Linear(3, 2)(t.ones(4, 5)),
    "layer norm of the wrong trailing shape": lambda t: t.nn.LayerNorm(4)(t.ones(2, 5)),
    "inverse of a singular matrix": lambda t: t.linalg.inv(t.zeros(2, 2)),
    "cholesky of a matrix not positive definite": lambda t: t.linalg.cholesky(-t.eye(2)),
    # Indices out of range: PyTorch's RuntimeError, where plugrad's is an IndexError too
    "gather out of range": lambda t: t.zeros(2, 3).gather(1, t.tensor([[0, 3]])),
    "scatter out of range": lambda t: t.zeros(2, 3).scatter(1, t.tensor([[0, 3]]), 1.0),
    "scatter_add out of range": lambda t: t.zeros(2, 3).scatter_add(
        1, t.tensor([[0, 3]]), t.ones(1, 2)
    ),
    "index_select out of range": lambda t: t.zeros(2, 3).index_select(1, t.tensor([3])),
    "index_add out of range": lambda t: t.zeros(2, 3).index_add(1, t.tensor([3]), t.ones(2, 1)),
    "narrow out of range": lambda t: t.zeros(2, 3).narrow(1, 2, 2),
    "kthvalue of k out of range": lambda t: t.zeros(2, 3).kthvalue(4),
    "one_hot of a class out of range": lambda t: t.nn.functional.one_hot(t.tensor([5]), 3),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_caught_as_a_runtime_error_as_in_pytorch(case):
    with pytest.raises(RuntimeError) as caught:
        case(plugrad)
    assert isinstance(caught.value, errors.PlugradError)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError):
        case(torch)


@pytest.mark.parametrize(
    ("error", "also"),
    [
        (errors.ShapeError, ValueError),
        (errors.AxisError, IndexError),
        (errors.DtypeError, TypeError),
        (errors.InvalidArgumentError, ValueError),
        (errors.LinAlgError, ValueError),
        (errors.IndexOutOfRangeError, IndexError),
    ],
)
def test_the_errors_stay_what_numpy_and_the_standard_raise(error, also):
    assert issubclass(error, RuntimeError)
    assert issubclass(error, also)


def _backward_through_a_modified_value(t):
    a = t.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    c = b**2
    with t.no_grad():
        b += 1
    c.sum().backward()


def _backward_through_a_modified_output(t):
    a = t.tensor([1.0, 2.0], requires_grad=True)
    b = t.exp(a)
    with t.no_grad():
        b += 1
    b.sum().backward()


@pytest.mark.parametrize(
    "case", [_backward_through_a_modified_value, _backward_through_a_modified_output]
)
def test_a_modified_saved_value_is_told_in_the_words_users_search_for(case):
    phrase = "modified by an inplace operation"
    with pytest.raises(errors.InPlaceModificationError, match=phrase):
        case(plugrad)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=phrase):
        case(torch)
