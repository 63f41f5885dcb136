"""The op table of plugins/utility.py (OpTests runs every check on each row)."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import over_xp

import plugrad
from plugrad.testing import OpCase, OpTests

P = plugrad
B = np.array([[1.0, 0.0], [2.0, 3.0]])

CASES = [
    OpCase("diff", "diff", P.diff, np.diff, ((3, 5),)),
    OpCase(
        "diff",
        "diff-n2-axis0",
        lambda a: P.diff(a, axis=0, n=2),
        lambda a: np.diff(a, 2, 0),
        ((5, 3),),
    ),
    OpCase(
        "diff",
        "diff-prepend-append",
        lambda a, p, q: P.diff(a, prepend=p, append=q),
        lambda a, p, q: np.diff(a, prepend=p, append=q),
        ((3, 4), (3, 1), (3, 2)),
    ),
    OpCase(
        "diff",
        "diff-append-n3",
        lambda a, q: P.diff(a, n=3, append=q),
        lambda a, q: np.diff(a, n=3, append=q),
        ((5,), (2,)),
    ),
]

NO_GRAD = [
    OpCase("all", "all", lambda a: P.all(a), lambda a: np.all(a), inputs=[B]),
    OpCase("all", "all-axis", lambda a: P.all(a, axis=1), lambda a: np.all(a, axis=1), inputs=[B]),
    OpCase("any", "any", lambda a: P.any(a), lambda a: np.any(a), inputs=[B]),
    over_xp("any", "any-keepdims", lambda xp, a: xp.any(a, axis=0, keepdims=True), inputs=[B]),
]


class TestUtilityOps(OpTests):
    cases = (*CASES, *NO_GRAD)


def test_diff_with_an_empty_output_gives_zero_gradients_of_the_input_shape() -> None:
    for shape, n, prepend in (
        ((1,), 1, None),
        ((2,), 3, None),
        ((2, 1), 1, (2, 0)),
        ((3,), 5, (1,)),
    ):
        x = plugrad.ones(shape, dtype=plugrad.float64, requires_grad=True)
        p = (
            None
            if prepend is None
            else plugrad.ones(prepend, dtype=plugrad.float64, requires_grad=True)
        )
        out = plugrad.diff(x, n=n, prepend=p)
        assert out.size == 0
        out.sum().backward()
        assert x.grad.shape == shape and not bool(plugrad.any(x.grad != 0))
        if p is not None:
            assert p.grad.shape == prepend


def test_diff_refuses_an_end_of_fewer_dimensions_as_pytorch():
    # NumPy broadcast a 0-d prepend along the axis; PyTorch and the standard refuse it.
    x = plugrad.ones((2, 3))
    for end in (plugrad.tensor(0.0), 0.0, plugrad.zeros(3)):
        with pytest.raises(plugrad.errors.ShapeError, match="2 dimensions"):
            plugrad.diff(x, prepend=end)
        with pytest.raises(plugrad.errors.ShapeError, match="append must be"):
            plugrad.diff(x, append=end)
    assert plugrad.diff(x, prepend=plugrad.zeros((2, 1))).tolist() == [[1, 0, 0]] * 2


def test_diff_refuses_a_negative_or_non_integer_order_naming_n():
    # n=-1 raised NumPy's bare ValueError ("order must be non-negative"), not a plugrad error.
    x = plugrad.ones(3, requires_grad=True)
    with pytest.raises(
        plugrad.errors.InvalidArgumentError, match=r"n must be non-negative .* got -1"
    ):
        plugrad.diff(x, n=-1)
    for n in (1.5, True, None):
        with pytest.raises(plugrad.errors.ArgumentError, match="n must be an int"):
            x.diff(n=n)
    assert plugrad.diff(x, n=np.int64(2)).tolist() == [0.0] and x.grad is None


def test_the_infinity_norm_of_an_empty_axis_is_refused_as_a_maximum_of_nothing():
    # NumPy's answer was 0 (PyTorch refuses, as plugrad's max() does).
    empty = plugrad.zeros((0, 3))
    for order in (float("inf"), float("-inf")):
        with pytest.raises(plugrad.errors.ShapeError, match="empty axis"):
            plugrad.linalg.vector_norm(empty, order)
        assert plugrad.linalg.vector_norm(empty, order, dim=1).shape == (0,)
    assert plugrad.linalg.vector_norm(empty, 2).item() == 0.0


def test_diff_joins_ends_of_another_dtype_as_cat_does():
    # The kernel took x's dtype alone: a bool x with float ends gave neighbours that differ
    # (True, True, True), and int64 with float32 ends NumPy's float64.
    torch = pytest.importorskip("torch")
    cases = [
        ([True, False, True], [1.5], "float32"),
        ([True, False, True], [3], "int64"),
        ([1, 2, 4], [0.5], "float32"),
    ]
    for values, end, end_dtype in cases:
        ours = plugrad.diff(
            plugrad.tensor(values), prepend=plugrad.tensor(end, dtype=getattr(plugrad, end_dtype))
        )
        theirs = torch.diff(
            torch.tensor(values), prepend=torch.tensor(end, dtype=getattr(torch, end_dtype))
        )
        assert ours.tolist() == theirs.tolist()
        assert str(ours.dtype).rpartition(".")[2] == str(theirs.dtype).rpartition(".")[2]


def test_mvlgamma_outside_its_domain_is_a_typed_error():
    with pytest.raises(plugrad.errors.InvalidArgumentError, match=r"\(p - 1\) / 2 = 0.5"):
        plugrad.mvlgamma(plugrad.tensor([0.2, 3.0]), p=2)
