"""The NumPy backend's lean functions give exactly what array-api-compat's NumPy namespace gives."""

from __future__ import annotations

import itertools
from typing import Any

import array_api_compat.numpy as compat
import numpy as np
import pytest

from plugrad.backends import numpy_namespace as lean

DTYPES = ["bool", "int8", "uint8", "int32", "int64", "float16", "float32", "float64", "complex64"]
SHAPES = [(), (0,), (3,), (2, 0), (2, 3), (2, 3, 4)]


def _arrays() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    arrays = []
    for dtype, shape in itertools.product(DTYPES, SHAPES):
        values = rng.integers(-3, 4, shape) if shape else rng.integers(-3, 4)
        arrays.append(np.asarray(values).astype(dtype))
    # A non-contiguous view and a NumPy scalar, as rules and kernels may receive.
    arrays.append(np.arange(24.0).reshape(4, 6)[:, ::2])
    arrays.append(np.float32(2.5))
    return arrays


def _axes(ndim: int) -> list[Any]:
    axes: list[Any] = [None, ()]
    axes += list(range(-ndim, ndim))
    axes += [tuple(c) for r in range(1, ndim + 1) for c in itertools.combinations(range(ndim), r)]
    return axes


def _same(got: Any, expected: Any) -> None:
    assert type(got) is type(expected)
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def _outcome(function: Any, *args: Any, **kwargs: Any) -> Any:
    """The result, or the type of the error raised."""
    try:
        return function(*args, **kwargs)
    except Exception as error:  # the error type is what is compared
        return type(error)


def _compare(name: str, *args: Any, **kwargs: Any) -> None:
    got = _outcome(getattr(lean, name), *args, **kwargs)
    expected = _outcome(getattr(compat, name), *args, **kwargs)
    if isinstance(expected, type):
        assert got is expected, f"{name}{args, kwargs}: raised {got}, expected {expected}"
    else:
        _same(got, expected)


@pytest.mark.parametrize("name", ["sum", "prod"])
def test_sum_and_prod(name: str) -> None:
    for x in _arrays():
        for axis, keepdims in itertools.product(_axes(x.ndim), (False, True)):
            _compare(name, x, axis=axis, keepdims=keepdims)
        for dtype in (None, np.float64, np.int64, np.complex128):
            _compare(name, x, dtype=dtype)


@pytest.mark.parametrize("name", ["any", "all"])
def test_any_and_all(name: str) -> None:
    for x in _arrays():
        for axis, keepdims in itertools.product(_axes(x.ndim), (False, True)):
            _compare(name, x, axis=axis, keepdims=keepdims)
    _compare(name, np.array([0.0, np.nan, -0.0]))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min(name: str) -> None:
    for x in _arrays():
        for axis, keepdims in itertools.product(_axes(x.ndim), (False, True)):
            _compare(name, x, axis=axis, keepdims=keepdims)
    nan = np.array([1.0, np.nan, 3.0])
    _compare(name, nan)
    _compare(name, np.zeros((2, 0)), axis=1)  # empty reductions raise


def test_reshape() -> None:
    for x in _arrays():
        size = x.size
        for shape in [(size,), (-1,), (1, size), (size, 1, 1), (size + 1,)]:
            for copy in (None, True, False):
                _compare("reshape", x, shape, copy=copy)


def test_expand_dims() -> None:
    for x in _arrays():
        for axis in range(-x.ndim - 3, x.ndim + 3):
            _compare("expand_dims", x, axis=axis)
        _same(lean.expand_dims(x), np.expand_dims(x, 0))  # the standard's default axis
    view = np.arange(12.0).reshape(3, 4)[:, ::2]
    assert np.shares_memory(lean.expand_dims(view, axis=1), view), "a view, as NumPy's"


def test_matrix_transpose_and_matmul() -> None:
    for x in _arrays():
        _compare("matrix_transpose", x)
    rng = np.random.default_rng(1)
    for shape1, shape2 in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((5, 2, 3), (3, 4))]:
        a, b = rng.standard_normal(shape1), rng.standard_normal(shape2)
        _compare("matmul", a, b)
    _compare("matmul", np.ones((2, 3)), np.ones((2, 3)))  # mismatched: both raise


def test_broadcast_to() -> None:
    shapes = [(), (1,), (3,), (2, 3), (4, 2, 3), (2, 1, 3), (0, 3), (3, 0), (2, 2)]
    for x in _arrays():
        for shape in [*shapes, x.shape, (5, *x.shape), (2, 3, *x.shape)]:
            _compare("broadcast_to", x, shape)
            result = _outcome(lean.broadcast_to, x, shape)
            if not isinstance(result, type):
                assert not result.flags.writeable, "read-only, as NumPy's"
                if isinstance(x, np.ndarray) and result.size:
                    assert np.shares_memory(result, x), "a view, as NumPy's"
                    assert result.strides == np.broadcast_to(x, shape).strides
    column = np.arange(3.0).reshape(3, 1)
    _compare("broadcast_to", column, (2, 3, 4))
    _compare("broadcast_to", column, (3, -1))  # a negative size raises


@pytest.mark.parametrize("name", ["ones_like", "zeros_like"])
def test_ones_and_zeros_like(name: str) -> None:
    for x in _arrays():
        for dtype in (None, np.float32, np.int16, np.bool_):
            _compare(name, x, dtype=dtype)
        _compare(name, x, device="cpu")
        _compare(name, x, device="gpu")  # an unknown device raises


def test_every_name_of_array_api_compat_is_served() -> None:
    missing = [n for n in dir(compat) if not n.startswith("_") and not hasattr(lean, n)]
    assert not missing
    assert lean.__array_api_version__ == compat.__array_api_version__
    assert lean.linalg is compat.linalg and lean.fft is compat.fft


def _same_bits(got: Any, expected: Any) -> None:
    """Equal values, dtype and shape, and equal bits too (NaN payloads, the sign of zero)."""
    _same(got, expected)
    unsigned = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.uint64}
    view = unsigned[expected.dtype.itemsize]
    np.testing.assert_array_equal(
        np.ascontiguousarray(got).view(view), np.ascontiguousarray(expected).view(view)
    )


def _compare_where(condition: Any, x1: Any, x2: Any) -> None:
    got = _outcome(lean.where, condition, x1, x2)
    expected = _outcome(np.where, condition, x1, x2)
    if isinstance(expected, type):
        assert got is expected, f"raised {got}, expected {expected}"
    else:
        _same_bits(got, expected)
        assert got.flags.writeable


WHERE_SCALARS = [True, 0, 1, -1, 1000, 2**40, 0.0, -0.0, 1.5, np.inf, np.nan, 1e300, 1j]


@pytest.mark.parametrize("size", [3, lean.WHERE_BITWISE_MIN_SIZE + 1])
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_where_matches_numpy_bit_for_bit(size: int) -> None:
    rng = np.random.default_rng(2)
    condition = rng.random(size) > 0.5
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 5e-324, -1.0])
    operands: list[Any] = []
    for dtype in [*DTYPES, "int16", "uint64", "complex128"]:
        values = (
            np.resize(specials, size) if np.dtype(dtype).kind in "fc" else rng.integers(-3, 4, size)
        )
        operands.append(values.astype(dtype))
    operands += WHERE_SCALARS
    for x1, x2 in itertools.product(operands, repeat=2):
        _compare_where(condition, x1, x2)


def test_where_broadcasts_and_reads_any_layout_as_numpy() -> None:
    rng = np.random.default_rng(3)
    n = lean.WHERE_BITWISE_MIN_SIZE
    matrix = rng.standard_normal((2 * n, 3)).astype(np.float32)
    cases = [
        (rng.random((n, 3)) > 0.5, matrix[::2], 0.0),  # a strided x1
        (rng.random((n, 3)) > 0.5, 0.0, matrix[::2]),
        (rng.random((n, 3)) > 0.5, matrix[:n], matrix[n:].T.copy().T),  # an F-ordered x2
        (rng.random((n, 1)) > 0.5, rng.standard_normal((1, 4)), 2.5),  # all three broadcast
        (rng.random((n, 1)) > 0.5, rng.standard_normal((n, 4)), 0.0),
        (rng.random((2, n, 3)) > 0.5, rng.standard_normal(3), rng.standard_normal((n, 1))),
        ((rng.random((n, 3)) > 0.5)[:, ::-1], matrix[:n], -matrix[n:]),  # a reversed condition
        (rng.random(n) > 0.5, np.arange(n, dtype=">f8"), 0.0),  # byte-swapped
        (rng.random(n) > 0.5, np.arange(n, dtype=">f8"), -np.arange(n, dtype=">f8")),
        (rng.random(n) > 0.5, rng.standard_normal(n), np.float32(1.0)),  # a NumPy scalar
        (rng.random(n), rng.standard_normal(n), 0.0),  # a non-boolean condition
        (rng.random(n) > 0.5, np.ones(n, dtype="U1"), "b"),  # strings: NumPy's where
        (rng.random(n) > 0.5, rng.standard_normal(n + 1), 0.0),  # shapes that do not broadcast
        (rng.random(n) > 0.5, [1.0] * n, 0.0),  # a list
    ]
    for condition, x1, x2 in cases:
        _compare_where(condition, x1, x2)
    x = rng.standard_normal(n)
    result = lean.where(x > 0, x, 0.0)
    assert not np.shares_memory(result, x), "a new array, as NumPy's"


def test_where_selects_bits_for_numeric_operands_of_one_width() -> None:
    n = lean.WHERE_BITWISE_MIN_SIZE
    condition = np.arange(n) % 3 == 0
    taken = [
        (np.ones(n, np.float32), 0.0),
        (0.0, np.ones(n)),
        (np.ones(n, np.float16), np.zeros(n, np.float16)),
        (np.ones(n, np.int8), -1),
        (np.ones(n, bool), False),
        (np.ones(n, np.complex64), 1j),
        (np.ones(n, ">f4"), 0.0),  # converted to the native float32 both promote to
    ]
    for x1, x2 in taken:
        assert lean._select_bits(condition, x1, x2) is not None, (x1, x2)
    left_to_numpy = [
        (np.ones(n, np.complex128), 0.0),  # 16 bytes: no unsigned integer that wide
        (np.ones(n, "U1"), "a"),
        (np.ones(n, np.int8), 1000),  # out of int8's range
        ([1.0] * n, 0.0),
    ]
    for x1, x2 in left_to_numpy:
        assert lean._select_bits(condition, x1, x2) is None, (x1, x2)
