"""The op table of plugins/searching.py (see op_table.py for what each row checks)."""

from __future__ import annotations

import numpy as np
from op_table import Case, NoGrad, table_tests

import plugrad

P = plugrad
MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, True]])
X = np.array([[0.0, 3.0, -1.0], [2.0, 0.0, 2.0]])
SORTED = np.array([1.0, 2.0, 2.0, 5.0])

CASES = [
    Case(
        "where",
        "where",
        lambda a, b: P.where(P.asarray(MASK), a, b),
        lambda a, b: np.where(MASK, a, b),
        ((3, 4), (4,)),
    ),
    Case(
        "where",
        "where-scalar",
        lambda a: P.where(a > 0, a, 0.0),
        lambda a: np.where(a > 0, a, 0.0),
        ((3, 4),),
    ),
]

NO_GRAD = [
    NoGrad("argmax", "argmax", lambda a: P.argmax(a), lambda a: np.argmax(a), [X]),
    NoGrad(
        "argmax",
        "argmax-axis-keepdims",
        lambda a: P.argmax(a, axis=1, keepdims=True),
        lambda a: np.argmax(a, axis=1, keepdims=True),
        [X],
    ),
    NoGrad(
        "argmin", "argmin-axis", lambda a: P.argmin(a, axis=0), lambda a: np.argmin(a, axis=0), [X]
    ),
    NoGrad("nonzero", "nonzero", P.nonzero, np.nonzero, [X]),
    NoGrad(
        "count_nonzero",
        "count_nonzero",
        lambda a: P.count_nonzero(a),
        lambda a: np.asarray(np.count_nonzero(a)),
        [X],
    ),
    NoGrad(
        "count_nonzero",
        "count_nonzero-axis",
        lambda a: P.count_nonzero(a, axis=1, keepdims=True),
        lambda a: np.count_nonzero(a, axis=1, keepdims=True),
        [X],
    ),
    NoGrad(
        "searchsorted",
        "searchsorted",
        P.searchsorted,
        np.searchsorted,
        [SORTED, np.array([[0.0, 2.0], [3.0, 9.0]])],
    ),
    NoGrad(
        "searchsorted",
        "searchsorted-right-sorter",
        lambda a, v: P.searchsorted(a, v, side="right", sorter=P.argsort(a)),
        lambda a, v: np.searchsorted(a, v, side="right", sorter=np.argsort(a)),
        [SORTED[::-1].copy(), np.array([2.0, 4.0])],
    ),
    NoGrad(
        "searchsorted",
        "searchsorted-scalar",
        lambda a: P.searchsorted(a, 2.0),
        lambda a: np.asarray(np.searchsorted(a, 2.0)),
        [SORTED],
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
