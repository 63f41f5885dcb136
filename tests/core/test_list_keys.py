"""List keys: which ones are index arrays, and which PyTorch reads otherwise (refused)."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError


@pytest.mark.parametrize(
    "key",
    [
        [[0, 1], [2, 2]],
        [plugrad.tensor([0, 1])],
        [slice(None), 1],
        [None],
        [Ellipsis, 0],
        [np.array([0, 1])],
        [(0, 1)],
    ],
    ids=["lists", "tensor", "slice", "None", "ellipsis", "array", "tuple"],
)
def test_a_list_key_pytorch_reads_as_a_tuple_is_refused_for_reading_and_writing(key):
    # PyTorch 2.13 reads these as x[tuple(key)], NumPy as one index array: no silent choice.
    x = plugrad.arange(12.0).reshape(3, 4)
    with pytest.raises(ArgumentError, match=r"x\[tuple\(key\)\]"):
        x[key]
    with pytest.raises(ArgumentError, match="ambiguous"):
        x[key] = 1.0
    assert x.tolist() == np.arange(12.0).reshape(3, 4).tolist()


def test_lists_of_numbers_and_long_lists_stay_index_arrays():
    x = plugrad.arange(12.0).reshape(3, 4)
    assert x[[0, 2]].shape == (2, 4) and x[[True, False, True]].shape == (2, 4)
    assert x[[np.int64(1), 2]].shape == (2, 4)
    assert x[[0, 1] * 20].shape == (40, 4)  # 32 or more: an index array for PyTorch too
