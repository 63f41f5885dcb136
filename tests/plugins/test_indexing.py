"""The op table of plugins/indexing.py: ``x[key]``, ``take``, ``take_along_axis``, scatter-add."""

from __future__ import annotations

import numpy as np
import pytest
from op_table import Case, table_tests

import plugrad
from plugrad.plugins import indexing

P = plugrad
IDX = np.array([2, 0, 2, 2])
MASK = np.array([[True, False, True], [False, False, True]])
ALONG = np.array([[2, 2, 0], [1, 1, 1]])
WIDE = np.array([[0, 3], [1, 1], [2, 0]])


def idx():
    return P.asarray(IDX)


def _numpy_setitem(key):
    def assign(x, v):
        out = x.copy()
        out[key] = v
        return out

    return assign


CASES = [
    Case(
        "setitem",
        "setitem-slices",
        lambda x, v: P.setitem(x, v, key=(slice(1, None), slice(None, None, 2))),
        _numpy_setitem((slice(1, None), slice(None, None, 2))),
        ((3, 4), (2,)),
    ),
    Case("getitem", "getitem-basic", lambda a: a[1, ::-2], lambda a: a[1, ::-2], ((3, 4),)),
    Case(
        "getitem",
        "getitem-newaxis-ellipsis",
        lambda a: a[None, ..., 1:3],
        lambda a: a[None, ..., 1:3],
        ((2, 3, 4),),
    ),
    Case("getitem", "getitem-int", lambda a: a[-1], lambda a: a[-1], ((3, 2),)),
    Case("getitem", "getitem-0d", lambda a: a[...] * 1.0, lambda a: a[...] * 1.0, ((),)),
    Case("getitem", "getitem-repeated-indices", lambda a: a[idx()], lambda a: a[IDX], ((3, 2),)),
    Case(
        "getitem",
        "getitem-mixed-arrays",
        lambda a: a[:, idx(), 1],
        lambda a: a[:, IDX, 1],
        ((2, 3, 2),),
    ),
    Case("getitem", "getitem-mask", lambda a: a[P.asarray(MASK)], lambda a: a[MASK], ((2, 3),)),
    Case(
        "take",
        "take-axis",
        lambda a: P.take(a, idx(), axis=1),
        lambda a: np.take(a, IDX, axis=1),
        ((2, 3),),
    ),
    Case("take", "take-1d", lambda a: P.take(a, idx()), lambda a: np.take(a, IDX), ((3,),)),
    Case(
        "take_along_axis",
        "take_along_axis",
        lambda a: P.take_along_axis(a, P.asarray(ALONG), axis=1),
        lambda a: np.take_along_axis(a, ALONG, axis=1),
        ((2, 3),),
    ),
    Case(
        "take_along_axis",
        "take_along_axis-broadcast",
        lambda a: P.take_along_axis(a, P.asarray(WIDE), axis=1),
        lambda a: np.take_along_axis(a, WIDE, axis=1),
        ((1, 4),),
    ),
    Case(
        "scatter_add",
        "scatter_add",
        lambda v: P.scatter_add(v, key=(slice(None), idx()), shape=(2, 3)),
        lambda v: _np_scatter(v, (slice(None), IDX), (2, 3)),
        ((2, 4),),
    ),
    Case(
        "scatter_add",
        "scatter_add-broadcast-values",
        lambda v: P.scatter_add(v, key=(idx(),), shape=(3, 2)),
        lambda v: _np_scatter(v, (IDX,), (3, 2)),
        ((1, 2),),
    ),
]


def _np_scatter(values, key, shape):
    out = np.zeros(shape, dtype=values.dtype)
    np.add.at(out, key, values)
    return out


(
    test_forward_matches_numpy,
    test_backward_matches_finite_differences,
    test_double_backward_matches_finite_differences,
    test_float32_gradients_stay_float32,
    test_float16_gradients_stay_float16,
    _,
) = table_tests(CASES)


def test_repeated_indices_accumulate() -> None:
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[plugrad.tensor([0, 0, 0, 2])].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


@pytest.mark.parametrize(
    "key",
    [
        (1, np.array([2, 0, 2, 2])),
        (np.array([[1], [0]]), np.array([[2, 2, 0]])),
        (np.array([[True, False, True], [False, True, True]]),),
        (1, None, slice(0, 2)),
        (Ellipsis, slice(None, None, -1)),
        (np.array([0, 1, 1]), np.array([2, 2, 0])),
    ],
    ids=["int-array", "broadcast-arrays", "mask", "basic-newaxis", "basic-reversed", "two-arrays"],
)
def test_generic_scatter_add_kernel_on_array_api_strict(key) -> None:
    # The generic kernel uses nothing beyond the standard; array-api-strict checks that
    # (with keys the standard allows: integer arrays only together with integers).
    xp = pytest.importorskip("array_api_strict")
    shape = (2, 3)
    values = np.random.default_rng(0).normal(size=np.zeros(shape)[key].shape)
    expected = _np_scatter(values, key, shape)
    strict_key = tuple(xp.asarray(k) if isinstance(k, np.ndarray) else k for k in key)
    got = indexing._scatter_add_generic(xp, xp.asarray(values), key=strict_key, shape=shape)
    np.testing.assert_allclose(np.asarray(got), expected)


def test_index_tensors_must_be_integers_or_bools_on_the_same_device() -> None:
    x = plugrad.ones(3)
    with pytest.raises(plugrad.errors.DtypeError, match="integer or bool"):
        x[plugrad.tensor([0.0])]


def test_setitem_writes_in_place_and_keeps_gradients() -> None:
    x = plugrad.tensor([1.0, 2.0, 3.0, 4.0], dtype=plugrad.float64, requires_grad=True)
    v = plugrad.tensor([10.0, 20.0], dtype=plugrad.float64, requires_grad=True)
    h = x * 1
    h[plugrad.tensor([0, 2])] = v * 2
    h[h > 30.0] = 0.0  # a boolean mask and a scalar
    assert h.tolist() == [20.0, 2.0, 0.0, 4.0] and h._version == 2
    plugrad.sum(h * h).backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 4.0, 0.0, 8.0])
    np.testing.assert_allclose(v.grad.numpy(), [80.0, 0.0])


def test_setitem_gradients_match_finite_differences(check_gradients) -> None:
    def program(x, v):
        h = x * 1
        h[1:, ::2] = v
        return h * h

    check_gradients(program, np.arange(12.0).reshape(3, 4) / 7, np.array([0.5, -1.5]))


def test_setitem_under_no_grad_writes_the_memory() -> None:
    w = plugrad.ones(4)
    memory = w.array
    with plugrad.no_grad():
        w[1:3] = 0.0
    assert w.tolist() == [1.0, 0.0, 0.0, 1.0] and w._version == 1
    assert w.array is memory or w.backend.name != "numpy"


def test_setitem_on_a_leaf_that_requires_grad_is_refused() -> None:
    w = plugrad.ones(2, requires_grad=True)
    with pytest.raises(plugrad.errors.BackwardError, match="no_grad"):
        w[0] = 5.0
    assert w.tolist() == [1.0, 1.0]
