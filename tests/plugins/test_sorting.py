"""The op table of plugins/sorting.py (see op_table.py for what each row checks)."""

from __future__ import annotations

import numpy as np
from op_table import Case, NoGrad, table_tests

import plugrad

P = plugrad
X = np.array([[3.0, 1.0, 2.0, 1.0], [0.5, -1.0, 7.0, 0.0]])

CASES = [
    Case("sort", "sort", P.sort, np.sort, ((3, 5),)),
    Case(
        "sort",
        "sort-axis0-descending",
        lambda a: P.sort(a, axis=0, descending=True),
        lambda a: -np.sort(-a, axis=0),
        ((4, 3),),
    ),
]

NO_GRAD = [
    NoGrad("argsort", "argsort", P.argsort, lambda a: np.argsort(a, kind="stable"), [X]),
    NoGrad(
        "argsort",
        "argsort-descending",
        lambda a: P.argsort(a, axis=0, descending=True),
        lambda a: np.argsort(-a, axis=0, kind="stable"),
        [X],
    ),
]

(
    test_forward_matches_numpy,
    test_backward_matches_finite_differences,
    test_double_backward_matches_finite_differences,
    test_float32_gradients_stay_float32,
    test_float16_gradients_stay_float16,
    test_ops_without_gradient,
) = table_tests(CASES, NO_GRAD)


def test_sort_with_ties_gives_each_element_one_gradient() -> None:
    x = plugrad.tensor([2.0, 1.0, 2.0], requires_grad=True)
    (plugrad.sort(x) * plugrad.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert sorted(x.grad.tolist()) == [1.0, 10.0, 100.0]
    assert x.grad.tolist()[1] == 1.0
