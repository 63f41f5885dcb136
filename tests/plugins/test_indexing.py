"""The op table of plugins/indexing.py: ``x[key]``, ``take``, ``take_along_axis``, scatter-add."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import over_xp

import plugrad
from plugrad.plugins import _scatter, indexing
from plugrad.testing import OpCase, OpTests, backends_under_test

P = plugrad
IDX = np.array([2, 0, 2, 2])
MASK = np.array([[True, False, True], [False, False, True]])
ALONG = np.array([[2, 2, 0], [1, 1, 1]])
WIDE = np.array([[0, 3], [1, 1], [2, 0]])
PAIR = np.array([2, 0])


def idx():
    return P.asarray(IDX)


def _numpy_setitem(key):
    def assign(x, v):
        out = x.copy()
        out[key] = v
        return out

    return assign


CASES = [
    OpCase(
        "setitem",
        "setitem-slices",
        lambda x, v: P.setitem(x, v, key=(slice(1, None), slice(None, None, 2))),
        _numpy_setitem((slice(1, None), slice(None, None, 2))),
        ((3, 4), (2,)),
    ),
    OpCase(
        "setitem",
        "setitem-array-and-slice",
        lambda x, v: P.setitem(x, v, key=(slice(None, None, -1), P.asarray(PAIR))),
        _numpy_setitem((slice(None, None, -1), PAIR)),
        ((2, 3), (2, 2)),
    ),
    OpCase("getitem", "getitem-basic", lambda a: a[1, ::-2], lambda a: a[1, ::-2], ((3, 4),)),
    OpCase(
        "getitem",
        "getitem-newaxis-ellipsis",
        lambda a: a[None, ..., 1:3],
        lambda a: a[None, ..., 1:3],
        ((2, 3, 4),),
    ),
    OpCase("getitem", "getitem-int", lambda a: a[-1], lambda a: a[-1], ((3, 2),)),
    OpCase("getitem", "getitem-0d", lambda a: a[...] * 1.0, lambda a: a[...] * 1.0, ((),)),
    OpCase("getitem", "getitem-repeated-indices", lambda a: a[idx()], lambda a: a[IDX], ((3, 2),)),
    OpCase(
        "getitem",
        "getitem-mixed-arrays",
        lambda a: a[:, idx(), 1],
        lambda a: a[:, IDX, 1],
        ((2, 3, 2),),
    ),
    OpCase(
        "getitem",
        "getitem-separated-arrays",
        lambda a: a[P.asarray(IDX[:3] - 1), ::-1, P.asarray(IDX[1:])],
        lambda a: a[IDX[:3] - 1, ::-1, IDX[1:]],
        ((2, 3, 3),),
    ),
    OpCase("getitem", "getitem-mask", lambda a: a[P.asarray(MASK)], lambda a: a[MASK], ((2, 3),)),
    OpCase(
        "take",
        "take-axis",
        lambda a: P.take(a, idx(), axis=1),
        lambda a: np.take(a, IDX, axis=1),
        ((2, 3),),
    ),
    OpCase("take", "take-1d", lambda a: P.take(a, idx()), lambda a: np.take(a, IDX), ((3,),)),
    *(
        over_xp(
            "take_along_axis",
            id,
            lambda xp, a, i=i: xp.take_along_axis(a, xp.asarray(i), axis=1),
            shape,
        )
        for id, i, shape in [
            ("take_along_axis", ALONG, (2, 3)),
            ("take_along_axis-broadcast", WIDE, (1, 4)),
        ]
    ),
    *(
        OpCase(
            "scatter_along_axis",
            f"scatter_along_axis-{reduce}{'' if include else '-without-self'}",
            lambda x, src, reduce=reduce, include=include: P.scatter_along_axis(
                x, P.asarray(ALONG), src, axis=1, reduce=reduce, include_self=include
            ),
            lambda x, src, reduce=reduce, include=include: _np_scatter_reduce(
                x, ALONG, src, reduce, include
            ),
            ((3, 3), (2, 3)),
        )
        for reduce in ("sum", "prod", "mean", "amax", "amin")
        for include in (True, False)
    ),
    OpCase(
        "scatter_add",
        "scatter_add",
        lambda v: P.scatter_add(v, key=(slice(None), idx()), shape=(2, 3)),
        lambda v: _np_scatter(v, (slice(None), IDX), (2, 3)),
        ((2, 4),),
    ),
    OpCase(
        "scatter_add",
        "scatter_add-broadcast-values",
        lambda v: P.scatter_add(v, key=(idx(),), shape=(3, 2)),
        lambda v: _np_scatter(v, (IDX,), (3, 2)),
        ((1, 2),),
    ),
]


def _np_scatter_reduce(x, index, src, reduce, include_self):
    """PyTorch's ``scatter_reduce`` along axis 1, one element at a time."""
    sent = {}
    for (i, j), position in np.ndenumerate(index):
        sent.setdefault((i, position), []).append(src[i, j])
    out = x.copy()
    combine = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}
    for place, values in sent.items():
        out[place] = combine[reduce]([x[place], *values] if include_self else values)
    return out


def _np_scatter(values, key, shape):
    out = np.zeros(shape, dtype=values.dtype)
    np.add.at(out, key, values)
    return out


class TestIndexingOps(OpTests):
    cases = CASES
    views = frozenset({"getitem"})


def test_repeated_indices_accumulate() -> None:
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[plugrad.tensor([0, 0, 0, 2])].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


# NumPy-style keys, including what the standard leaves out: integer arrays beside slices,
# `...` or None (adjacent, and separated: the result axes go first), keys shorter than
# ndim, masks beside other indices, 0-d masks, negative steps, slice bounds past the end.
NUMPY_KEYS = {
    "basic-newaxis": (1, None, slice(0, 2)),
    "reversed": (Ellipsis, slice(None, None, -1)),
    "negative-steps": (slice(None, None, -2), slice(3, 0, -1), slice(None)),
    "bounds-past-the-end": (slice(-10, 10), slice(2, 99)),
    "empty-slice": (slice(2, 1), Ellipsis),
    "int-array": (1, np.array([2, 0, 2, 2])),
    "short-key": (np.array([2, 0, 2, 2]),),
    "negative-indices": (np.array([-1, 0, -1]), Ellipsis),
    "array-between-slices": (slice(None), np.array([2, 0, 2]), slice(1, 3)),
    "arrays-adjacent": (slice(None), np.array([[2], [0]]), np.array([1, 1, 3])),
    "arrays-separated": (np.array([0, 1, 1]), slice(None), np.array([3, 3, 0])),
    "int-and-array-separated": (1, slice(None, None, -1), np.array([3, 0, 3])),
    "none-between-arrays": (np.array([0, 1]), None, np.array([2, 2])),
    "zero-d-array": (slice(None), np.array(2)),
    "mask": (np.array([[True, False, True, True], [False, True, True, False], [True] * 4]),),
    "leading-mask": (np.array([True, False, True]), Ellipsis),
    "mask-after-slice": (slice(None), np.array([True, False, True, False])),
    "mask-and-array": (np.array([True, True, False]), np.array([3, 0])),
    "zero-d-mask": (True, slice(1, None)),
    "false-zero-d-mask": (np.array(False), Ellipsis),
    # (a mask after an ellipsis was taken as a leading one)
    "trailing-mask": (Ellipsis, np.array([True, False, True, False, False])),
    "trailing-2d-mask": (Ellipsis, np.array([[True, False, True, False, True]] * 4)),
    "mask-after-slice-and-ellipsis": (slice(None), Ellipsis, np.array([False, True] * 2 + [True])),
}


def _strict_key(xp, key):
    return tuple(xp.asarray(k) if isinstance(k, np.ndarray) else k for k in key)


def _generic_namespaces():
    names = ["array_api_strict"]
    try:
        import array_api_compat.torch  # noqa: F401

        names.append("array_api_compat.torch")
    except ImportError:
        pass
    return names


@pytest.mark.parametrize("namespace", _generic_namespaces())
@pytest.mark.parametrize("key", NUMPY_KEYS.values(), ids=NUMPY_KEYS.keys())
def test_generic_indexing_kernels_match_numpy(key, namespace) -> None:
    # The generic kernels use nothing beyond the standard: array-api-strict checks
    # that; PyTorch, which has no negative steps, runs them too.
    xp = pytest.importorskip(namespace)
    shape = (3, 4, 5)
    x = np.arange(60.0).reshape(shape)
    key_xp = _strict_key(xp, key)
    got = indexing._getitem_generic(xp, xp.asarray(x), key=key_xp)
    np.testing.assert_array_equal(np.asarray(got), x[key])
    values = np.random.default_rng(0).normal(size=x[key].shape)
    got = _scatter.scatter_add_generic(xp, xp.asarray(values), key=key_xp, shape=shape)
    np.testing.assert_allclose(np.asarray(got), _np_scatter(values, key, shape), rtol=1e-12)
    # Assignment: of repeated indices the last write wins, as in NumPy.
    x_xp = xp.asarray(x)
    got = indexing._setitem_generic(xp, x_xp, xp.asarray(values), key=key_xp)
    np.testing.assert_array_equal(np.asarray(got), _numpy_setitem(key)(x, values))
    np.testing.assert_array_equal(np.asarray(x_xp), x, "the input was written to")
    got = indexing._setitem_generic(xp, x_xp, -1.0, key=key_xp)
    np.testing.assert_array_equal(np.asarray(got), _numpy_setitem(key)(x, -1.0))


def test_generic_scatter_add_accumulates_keeps_dtype_and_broadcasts() -> None:
    xp = pytest.importorskip("array_api_strict")
    rng = np.random.default_rng(1)
    index = rng.integers(0, 50, size=3000)
    for dtype in (np.float32, np.float64, np.complex128, np.int64):
        values = (rng.normal(size=(3000, 3)) * 10).astype(dtype)
        got = _scatter.scatter_add_generic(
            xp, xp.asarray(values), key=(xp.asarray(index), Ellipsis), shape=(50, 3)
        )
        assert np.asarray(got).dtype == dtype
        expected = _np_scatter(values.astype(np.complex128), (index,), (50, 3))
        atol = 1e-3 if dtype == np.float32 else 1e-9
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6, atol=atol)
    got = _scatter.scatter_add_generic(
        xp, xp.asarray(np.ones(3)), key=(xp.asarray(index),), shape=(50, 3)
    )
    np.testing.assert_array_equal(np.asarray(got), _np_scatter(np.ones(3), (index,), (50, 3)))


def _add_at(values, key, shape):
    out = np.zeros(shape, dtype=values.dtype)
    np.add.at(out, key, values)
    return out


def _row_keys(rng, shape):
    """Keys of take and of indexing by one integer array, with values large enough."""
    index = rng.integers(-shape[0], shape[0], size=700)
    middle = rng.integers(0, shape[1], size=(40, 30))
    return [
        (index,),
        (index, Ellipsis),
        (index.astype(np.uint16) % shape[0], slice(None), slice(None)),
        (slice(None), middle),  # a 2-D index array
        (slice(None), middle, Ellipsis),
        (slice(None), slice(None), rng.integers(0, shape[2], size=400)),
        (slice(None), np.array(3)),  # a 0-d index array
    ]


@pytest.mark.parametrize("block", [_scatter.FLAT_SCATTER_BLOCK, 30])
def test_numpy_scatter_add_of_row_keys_adds_as_np_add_at_bit_for_bit(monkeypatch, block) -> None:
    # A block of 30 positions makes every key take many blocks.
    monkeypatch.setattr(_scatter, "FLAT_SCATTER_BLOCK", block)
    rng = np.random.default_rng(4)
    shape = (60, 7, 5)
    keys = _row_keys(rng, shape)
    for dtype in (np.float32, np.float64, np.complex64, np.int32, np.int64):
        for key in keys:
            picked_shape = np.zeros(shape)[key].shape
            values = (rng.normal(size=picked_shape) * 100).astype(dtype)
            if values.size >= _scatter.FLAT_SCATTER_MIN_SIZE:
                assert _scatter.picked_rows(np, key, shape, values.shape) is not None, key
            got = _scatter.scatter_add_numpy(np, values, key=key, shape=shape)
            expected = _add_at(values, key, shape)
            assert got.dtype == expected.dtype and got.shape == shape
            np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    # Every key on the flat path, small values and the 0-d index included: each value
    # lands where the key puts it.
    monkeypatch.setattr(_scatter, "FLAT_SCATTER_MIN_SIZE", 1)
    numbered = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    for key in keys:
        values = numbered[key] + 1.0
        assert _scatter.picked_rows(np, key, shape, values.shape) is not None, key
        got = _scatter.scatter_add_numpy(np, values, key=key, shape=shape)
        np.testing.assert_array_equal(got, _add_at(values, key, shape))
    # Non-contiguous values go to np.add.at; an empty index array adds nothing.
    values = rng.normal(size=(700, 7, 10))[:, :, ::2]
    np.testing.assert_array_equal(
        _scatter.scatter_add_numpy(np, values, key=keys[1], shape=shape),
        _add_at(values, keys[1], shape),
    )
    empty = (np.zeros(0, dtype=np.int64),)
    got = _scatter.scatter_add_numpy(np, np.ones((0, 7, 5)), key=empty, shape=shape)
    np.testing.assert_array_equal(got, np.zeros(shape))


def test_numpy_scatter_add_leaves_other_keys_and_bad_indices_to_np_add_at() -> None:
    rng = np.random.default_rng(5)
    shape = (60, 7, 5)
    index = rng.integers(0, 60, size=700)
    others = [
        (index, 2),  # an int beside the array
        (index, None),  # a new axis
        (rng.random(60) > 0.5,),  # a mask
        (Ellipsis, rng.integers(0, 5, size=40)),  # the array after an ellipsis
        (slice(1, None), rng.integers(0, 7, size=40)),  # a slice that is not full
    ]
    for key in others:
        values = rng.normal(size=np.zeros(shape)[key].shape)
        assert _scatter.picked_rows(np, key, shape, values.shape) is None, key
        np.testing.assert_array_equal(
            _scatter.scatter_add_numpy(np, values, key=key, shape=shape),
            _add_at(values, key, shape),
        )
    broadcast = rng.normal(size=(7, 5))  # values that broadcast over the index array
    assert _scatter.picked_rows(np, (index,), shape, broadcast.shape) is None
    np.testing.assert_array_equal(
        _scatter.scatter_add_numpy(np, broadcast, key=(index,), shape=shape),
        _add_at(broadcast, (index,), shape),
    )
    big = np.ones((700, 7, 5))
    for bad in (np.array([0, 60] * 350), np.array([-61] * 700)):
        with pytest.raises(IndexError, match="out of bounds"):
            _scatter.scatter_add_numpy(np, big, key=(bad,), shape=shape)


@pytest.mark.parametrize(
    "key, error",
    [
        ((np.array([0, 4]), slice(None)), "out of bounds for axis 0 with size 3"),
        ((slice(None), np.array([-5])), "out of bounds for axis 1 with size 4"),
        ((0, 9), "index 9 is out of bounds for axis 1"),
        ((0, 0, 0), "too many indices"),
        ((Ellipsis, 0, Ellipsis), "single ellipsis"),
        ((slice(None), np.array([True, False])), r"shape \(2,\) does not match axis 1 of"),
    ],
    ids=["past-the-end", "negative", "int", "too-many", "two-ellipses", "short-mask"],
)
def test_generic_indexing_kernels_refuse_bad_keys(key, error) -> None:
    # Out-of-bounds indices must raise, never alias a valid element of the next row.
    xp = pytest.importorskip("array_api_strict")
    key = _strict_key(xp, key)
    with pytest.raises(IndexError, match=error):
        indexing._getitem_generic(xp, xp.zeros((3, 4)), key=key)
    with pytest.raises(IndexError, match=error):
        _scatter.scatter_add_generic(xp, xp.zeros(()), key=key, shape=(3, 4))


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


@pytest.mark.parametrize(
    "call",
    [
        lambda x, mask: plugrad.take(x, mask),
        lambda x, mask: x.take(mask),
        lambda x, mask: x.index_select(0, mask),
        lambda x, mask: plugrad.take_along_axis(x, mask, axis=0),
    ],
)
def test_bool_indices_are_refused_not_read_as_positions(call) -> None:
    # NumPy reads True as position 1: take([10, 20, 30], [True, False, True]) gave
    # [20, 10, 20] (PyTorch refuses bool indices).
    x, mask = plugrad.tensor([10, 20, 30]), plugrad.tensor([True, False, True])
    with pytest.raises(plugrad.errors.DtypeError, match="indices must be integers, got bool"):
        call(x, mask)


@pytest.mark.parametrize("backend", backends_under_test())
def test_a_mask_after_an_ellipsis_masks_the_trailing_axes(backend) -> None:
    # (every backend but NumPy's took it as a mask on the leading axes: another axis's values)
    x_host = np.arange(24.0).reshape(2, 3, 4)
    mask_host = np.array([True, False, True, False])
    weights = np.arange(1.0, 5.0)
    with plugrad.use_backend(backend):
        x = plugrad.asarray(x_host, requires_grad=True)
        mask = plugrad.asarray(mask_host)
        y = x[..., mask]
        (y * plugrad.asarray(weights[:2])).sum().backward()
        written = plugrad.asarray(x_host.copy())
        written[..., mask] = -1.0
    np.testing.assert_array_equal(np.asarray(y.detach()), x_host[..., mask_host])
    grad = np.zeros_like(x_host)
    grad[..., mask_host] = weights[:2]
    np.testing.assert_array_equal(np.asarray(x.grad), grad)
    expected = x_host.copy()
    expected[..., mask_host] = -1.0
    np.testing.assert_array_equal(np.asarray(written), expected)
