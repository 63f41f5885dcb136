"""The op table of plugins/set_functions.py: none has gradients (as in PyTorch)."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError
from plugrad.testing import OpCase, OpTests

P = plugrad
X = np.array([[2.0, 1.0, 2.0], [3.0, 1.0, 0.0]])


def np_unique_all(a):
    values, indices, inverse, counts = np.unique(
        a, return_index=True, return_inverse=True, return_counts=True
    )
    return values, indices, inverse.reshape(a.shape), counts


NO_GRAD = [
    OpCase("unique_all", "unique_all", lambda a: tuple(P.unique_all(a)), np_unique_all, inputs=[X]),
    OpCase(
        "unique_counts",
        "unique_counts",
        lambda a: tuple(P.unique_counts(a)),
        lambda a: np.unique(a, return_counts=True),
        inputs=[X],
    ),
    OpCase(
        "unique_inverse",
        "unique_inverse",
        lambda a: tuple(P.unique_inverse(a)),
        lambda a: (np.unique(a), np.unique(a, return_inverse=True)[1].reshape(a.shape)),
        inputs=[X],
    ),
    OpCase("unique_values", "unique_values", P.unique_values, np.unique, inputs=[X]),
    OpCase("isin", "isin", P.isin, np.isin, inputs=[X, np.array([1.0, 3.0])]),
    OpCase(
        "isin",
        "isin-invert",
        lambda a, b: P.isin(a, b, invert=True),
        lambda a, b: np.isin(a, b, invert=True),
        inputs=[X, np.array([2.0])],
    ),
]


class TestSetFunctionsOps(OpTests):
    cases = NO_GRAD


def test_unique_returns_named_tuples() -> None:
    result = plugrad.unique_all(plugrad.tensor([2.0, 1.0, 2.0], requires_grad=True))
    assert result._fields == ("values", "indices", "inverse_indices", "counts")
    assert result.counts.tolist() == [1, 2]
    assert not result.values.requires_grad


def test_generic_isin_kernel_matches_numpy() -> None:
    import array_api_strict as xp

    from plugrad.plugins.set_functions import isin

    x1, x2 = xp.asarray([[1.0, 2.0], [3.0, 4.0]]), xp.asarray([4.0, 1.0])
    np.testing.assert_array_equal(
        np.asarray(isin.kernel(xp, x1, x2)), [[True, False], [False, True]]
    )


@pytest.mark.parametrize(
    "values",
    [[[2.0, 1.0, 2.0], [3.0, 1.0, 0.0]], [5.0], [], [1.0, 1.0, 1.0], [0.0, -0.0, 4.0, -3.0]],
    ids=["2-d", "one", "empty", "all-equal", "signed-zero"],
)
def test_generic_unique_all_kernel_matches_numpy(values) -> None:
    # The generic kernel builds unique_all from unique_inverse (PyTorch has no unique_all).
    import array_api_strict as xp

    from plugrad.plugins.set_functions import unique_all

    x = np.asarray(values)
    got = unique_all.kernel(xp, xp.asarray(x))
    expected = np_unique_all(x)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(np.asarray(g), e)
        assert np.asarray(g).dtype == e.dtype


def test_unique_refuses_a_flag_that_is_not_a_bool() -> None:
    # unique(x, 1), meant as dim=1, was read as sorted=True: the flattened unique values
    # came back without a word (PyTorch raises: its second argument is the bool sorted).
    x = P.asarray([[3, 1], [1, 3]])
    with pytest.raises(ArgumentError, match=r"sorted must be True or False, got 1.*dim=1"):
        P.unique(x, 1)
    with pytest.raises(ArgumentError, match="return_counts must be True or False"):
        x.unique(return_counts="yes")
    assert P.unique(x, dim=1).tolist() == [[1, 3], [3, 1]]
    assert P.unique(x, True, True)[1].tolist() == [[1, 0], [0, 1]]
