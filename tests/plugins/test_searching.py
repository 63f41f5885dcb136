"""The op table of plugins/searching.py (OpTests runs every check on each row)."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import over_xp

import plugrad
from plugrad.testing import OpCase, OpTests

P = plugrad
MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, True]])
X = np.array([[0.0, 3.0, -1.0], [2.0, 0.0, 2.0]])
SORTED = np.array([1.0, 2.0, 2.0, 5.0])

CASES = [
    over_xp("where", "where", lambda xp, a, b: xp.where(xp.asarray(MASK), a, b), (3, 4), (4,)),
    over_xp("where", "where-scalar", lambda xp, a: xp.where(a > 0, a, 0.0), (3, 4)),
]

NO_GRAD = [
    OpCase("argmax", "argmax", lambda a: P.argmax(a), lambda a: np.argmax(a), inputs=[X]),
    over_xp(
        "argmax",
        "argmax-axis-keepdims",
        lambda xp, a: xp.argmax(a, axis=1, keepdims=True),
        inputs=[X],
    ),
    over_xp("argmin", "argmin-axis", lambda xp, a: xp.argmin(a, axis=0), inputs=[X]),
    OpCase("nonzero", "nonzero", P.nonzero, np.nonzero, inputs=[X]),
    OpCase(
        "count_nonzero",
        "count_nonzero",
        lambda a: P.count_nonzero(a),
        lambda a: np.asarray(np.count_nonzero(a)),
        inputs=[X],
    ),
    over_xp(
        "count_nonzero",
        "count_nonzero-axis",
        lambda xp, a: xp.count_nonzero(a, axis=1, keepdims=True),
        inputs=[X],
    ),
    OpCase(
        "searchsorted",
        "searchsorted",
        P.searchsorted,
        np.searchsorted,
        inputs=[SORTED, np.array([[0.0, 2.0], [3.0, 9.0]])],
    ),
    OpCase(
        "searchsorted",
        "searchsorted-right-sorter",
        lambda a, v: P.searchsorted(a, v, side="right", sorter=P.argsort(a)),
        lambda a, v: np.searchsorted(a, v, side="right", sorter=np.argsort(a)),
        inputs=[SORTED[::-1].copy(), np.array([2.0, 4.0])],
    ),
    OpCase(
        "searchsorted",
        "searchsorted-rows-sorter",  # PyTorch's N-d form: row i of the values in row i
        lambda a, v: P.searchsorted(a, v, side="right", sorter=P.argsort(a, axis=-1)),
        lambda a, v: np.stack(
            [np.searchsorted(r, w, side="right", sorter=np.argsort(r)) for r, w in zip(a, v)]
        ),
        inputs=[np.array([[3.0, 1.0, 2.0], [0.0, 6.0, 5.0]]), np.array([[2.0, 0.0], [5.0, 7.0]])],
    ),
    OpCase(
        "searchsorted",
        "searchsorted-scalar",
        lambda a: P.searchsorted(a, 2.0),
        lambda a: np.asarray(np.searchsorted(a, 2.0)),
        inputs=[SORTED],
    ),
]


class TestSearchingOps(OpTests):
    cases = (*CASES, *NO_GRAD)


def test_searchsorted_and_isin_compare_numbers_as_comparisons_do() -> None:
    # A float searched among integers was truncated (2.5 found at 1); 0.1 was compared with
    # float32 values in float64 (never found); integers met floats in NumPy's float64.
    nan = float("nan")
    assert plugrad.searchsorted(plugrad.tensor([1, 2, 3]), 2.5).item() == 2
    assert plugrad.searchsorted(plugrad.tensor([1, 2, 3]), 1.5, right=True).item() == 1
    found = plugrad.searchsorted(plugrad.tensor([1, 2, 3]), 1.5, out_int32=True)
    assert found.item() == 1 and found.dtype == plugrad.int32
    assert plugrad.searchsorted(plugrad.tensor([1, 2, 3]), nan).item() == 3
    assert plugrad.isin(plugrad.tensor([0.1, 0.2]), 0.1).tolist() == [True, False]
    assert plugrad.isin(0.1, plugrad.tensor([0.1, 0.2])).item() is True
    # int64 with float32 compares in float32, as x == y and x < y do (PyTorch's rule).
    big_int, big_float = plugrad.tensor([16777217]), plugrad.tensor([16777217.0])
    assert plugrad.isin(big_int, big_float).tolist() == (big_int == big_float).tolist() == [True]
    assert plugrad.searchsorted(big_float, big_int).tolist() == [0]


def test_searchsorted_side_none_and_bincount_numpy_minlength_as_pytorch() -> None:
    # side=None gave NumPy's "search side must be str"; a NumPy int minlength was refused.
    assert plugrad.searchsorted(
        plugrad.tensor([1, 3]), plugrad.tensor([3]), side=None
    ).tolist() == [1]
    assert plugrad.bincount(plugrad.tensor([0, 1]), minlength=np.int64(3)).tolist() == [1, 1, 0]


def test_a_sorter_index_past_the_end_is_refused():
    # NumPy read the index past the end and answered [1] from no order.
    sequence = plugrad.tensor([1.0, 2.0, 3.0])
    with pytest.raises(plugrad.errors.IndexOutOfRangeError, match="sorter"):
        plugrad.searchsorted(sequence, plugrad.tensor([2.0]), sorter=plugrad.tensor([0, 1, 9]))
    shuffled = plugrad.tensor([3.0, 1.0, 2.0])
    found = plugrad.searchsorted(shuffled, plugrad.tensor([2.0]), sorter=plugrad.tensor([1, 2, 0]))
    assert found.tolist() == [1]


def test_searchsorted_refuses_opposite_sides_as_pytorch() -> None:
    # side="left" with right=True gave the right side's answer without a word.
    ordered, value = plugrad.tensor([1.0, 2.0, 2.0, 3.0]), plugrad.tensor([2.0])
    assert plugrad.searchsorted(ordered, value).tolist() == [1]
    assert plugrad.searchsorted(ordered, value, side="left").tolist() == [1]
    assert plugrad.searchsorted(ordered, value, right=True).tolist() == [3]
    assert plugrad.searchsorted(ordered, value, side="right", right=True).tolist() == [3]
    with pytest.raises(plugrad.errors.ArgumentError, match="opposite sides"):
        plugrad.searchsorted(ordered, value, side="left", right=True)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="'left' or 'right'"):
        plugrad.searchsorted(ordered, value, side="middle")


def test_searchsorted_refuses_a_0d_sorted_sequence() -> None:
    # NumPy's bare ValueError ("object of too small depth") reached the user.
    for values in (plugrad.tensor(0.5), plugrad.tensor([0.5, 1.0])):
        with pytest.raises(plugrad.errors.ShapeError, match="0-d"):
            plugrad.searchsorted(plugrad.tensor(0.5), values)


@pytest.mark.parametrize("dtype", ["bool", "float32"])
def test_searchsorted_refuses_a_sorter_of_other_than_integers_as_pytorch(dtype) -> None:
    # NumPy's bare TypeError leaked for a bool sorter ("sorter must only contain integers").
    ordered, value = plugrad.tensor([1.0, 3.0, 2.0]), plugrad.tensor([2.5])
    sorter = plugrad.tensor([0, 2, 1]).to(getattr(plugrad, dtype))
    with pytest.raises(plugrad.errors.DtypeError, match=f"integer positions.*got {dtype}"):
        plugrad.searchsorted(ordered, value, sorter=sorter)
    assert plugrad.searchsorted(ordered, value, sorter=plugrad.tensor([0, 2, 1])).tolist() == [2]
