"""The op table of plugins/creation.py: ``tril``, ``triu``, ``meshgrid``."""

from __future__ import annotations

import numpy as np

import plugrad
from plugrad.testing import OpCase, OpTests

P = plugrad

CASES = [
    OpCase("tril", "tril", P.tril, np.tril, ((3, 4),)),
    OpCase(
        "tril", "tril-k-batch", lambda a: P.tril(a, k=-1), lambda a: np.tril(a, -1), ((2, 3, 3),)
    ),
    OpCase("triu", "triu-k", lambda a: P.triu(a, k=1), lambda a: np.triu(a, 1), ((4, 3),)),
    OpCase(
        "meshgrid",
        "meshgrid-xy",
        lambda a, b, c: P.stack(P.meshgrid(a, b, c)),
        lambda a, b, c: np.stack(np.meshgrid(a, b, c)),
        ((2,), (3,), (4,)),
    ),
    OpCase(
        "meshgrid",
        "meshgrid-ij",
        lambda a, b: P.meshgrid(a, b, indexing="ij")[0] * P.meshgrid(a, b, indexing="ij")[1],
        lambda a, b: np.prod(np.meshgrid(a, b, indexing="ij"), axis=0),
        ((3,), (2,)),
    ),
]


class TestCreationOps(OpTests):
    cases = CASES


def test_eye_and_linspace() -> None:
    np.testing.assert_array_equal(P.eye(3, 2, k=-1).numpy(), np.eye(3, 2, k=-1, dtype=np.float32))
    assert P.eye(2).dtype == P.float32 and P.eye(2, dtype=P.int8).dtype == P.int8
    np.testing.assert_allclose(P.linspace(0, 1, 4, endpoint=False).numpy(), [0, 0.25, 0.5, 0.75])
    assert P.linspace(0, 1, 3).dtype == P.float32
    assert P.linspace(0j, 1, 3).dtype == P.complex64
    assert P.linspace(0.0, 1.0, 3, requires_grad=True).requires_grad
