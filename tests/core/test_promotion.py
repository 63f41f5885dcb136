"""Promotion across dtype kinds follows PyTorch, forward and backward, on every backend.

Within a kind the Array API's rules hold (``float32`` with ``float64`` gives
``float64`` everywhere); across kinds, which the standard leaves open, the
element-wise ops give PyTorch's dtype, checked here against PyTorch itself.
"""

from __future__ import annotations

import itertools
import operator

import numpy as np
import pytest

import plugrad
from plugrad.errors import DtypeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

DTYPES = [
    "bool",
    "int8",
    "uint8",
    "int32",
    "int64",
    "float32",
    "float64",
    "complex64",
    "complex128",
]
OPERATORS = {
    "add": operator.add,
    "multiply": operator.mul,
    "subtract": operator.sub,
    "divide": operator.truediv,
    "less": operator.lt,
    "equal": operator.eq,
}
SCALARS = [True, 3, 0.5, 1j]
BACKENDS = [
    name
    for name in ("numpy", "array_api_strict", "torch", "jax", "dask")
    if name in plugrad.registry.backend_names() and plugrad.registry.backend_status(name) is None
]


def _values(dtype: str) -> np.ndarray:
    if dtype == "bool":  # no False: it would be a division by zero
        return np.array([True, True, True])
    return np.array([1, 2, 3]).astype(dtype)


def _torch_dtype_name(result: object) -> str:
    return str(result.dtype).removeprefix("torch.")


def _pairs() -> list[tuple[str, str, str]]:
    cases = []
    for name, (first, second) in itertools.product(OPERATORS, itertools.product(DTYPES, DTYPES)):
        kinds = {plugrad.dtypes.kind_rank(getattr(plugrad, d)) for d in (first, second)}
        if len(kinds) > 1 and kinds != {2, 3}:  # mixed kinds: the standard leaves them open
            cases.append((name, first, second))
    return cases


def _torch_result(function, *operands):
    try:
        return function(*operands)
    except RuntimeError as exc:  # e.g. bool - bool, complex < float: PyTorch refuses them too
        pytest.skip(f"PyTorch refuses it: {exc}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("name", "first", "second"), _pairs())
def test_tensors_of_two_kinds_give_pytorchs_dtype_and_values(backend, name, first, second):
    function = OPERATORS[name]
    expected = _torch_result(
        function, torch.asarray(_values(first)), torch.asarray(_values(second))
    )
    with plugrad.use_backend(backend):
        got = function(plugrad.asarray(_values(first)), plugrad.asarray(_values(second)))
    assert got.dtype.name == _torch_dtype_name(expected)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float32", "float64", "complex64"])
@pytest.mark.parametrize("name", ["add", "multiply", "divide", "less"])
def test_a_python_scalar_of_a_higher_kind_gives_pytorchs_dtype(backend, name, dtype, scalar):
    if plugrad.dtypes.SCALAR_RANKS[type(scalar)] == plugrad.dtypes.kind_rank(
        getattr(plugrad, dtype)
    ):
        pytest.skip("one kind: the standard's rules (and each backend's) apply")
    function = OPERATORS[name]
    for flipped in (False, True):

        def apply(x, flipped=flipped):
            return function(scalar, x) if flipped else function(x, scalar)

        expected = _torch_result(apply, torch.asarray(_values(dtype)))
        with plugrad.use_backend(backend):
            got = apply(plugrad.asarray(_values(dtype)))
        assert got.dtype.name == _torch_dtype_name(expected), (flipped, got, expected)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


def test_numpy_scalars_act_as_python_scalars() -> None:
    ints = plugrad.tensor([1, 2])
    assert (ints * np.float64(0.5)).dtype is plugrad.float32
    assert (np.float32(2) * plugrad.tensor([1.0])).dtype is plugrad.float32


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_keep_each_inputs_dtype_across_kinds(backend) -> None:
    with plugrad.use_backend(backend):
        x = plugrad.tensor([1.0, 2.0], requires_grad=True)
        counts = plugrad.tensor([3, 4])
        y = (x * counts + counts / x + x * 1j).abs().sum()
        y.backward()
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    tc = torch.tensor([3, 4])
    ty = (tx * tc + tc / tx + tx * 1j).abs().sum()
    ty.backward()
    assert y.dtype is plugrad.float32 and x.grad.dtype is plugrad.float32
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(y.item(), ty.item(), rtol=1e-6)


def test_within_a_kind_the_standards_promotion_holds() -> None:
    single = plugrad.tensor([1.0], dtype=plugrad.float32)
    double = plugrad.tensor([1.0], dtype=plugrad.float64)
    assert (single + double).dtype is plugrad.float64
    assert (
        plugrad.tensor([1], dtype=plugrad.int8) + plugrad.tensor([1], dtype=plugrad.uint8)
    ).dtype is plugrad.int16


def test_the_default_dtype_decides_int_division_and_int_with_float() -> None:
    ints = plugrad.tensor([1, 2])
    plugrad.set_default_dtype(plugrad.float64)
    try:
        assert (ints / ints).dtype is plugrad.float64
        assert (ints + 0.5).dtype is plugrad.float64
    finally:
        plugrad.set_default_dtype(plugrad.float32)
    assert (ints / ints).dtype is plugrad.float32


def test_an_in_place_op_that_would_change_the_kind_is_refused() -> None:
    ints = plugrad.tensor([1, 2])
    with pytest.raises(DtypeError, match="int64 tensor cannot hold"):
        ints /= 2
    assert ints.tolist() == [1, 2]
    floats = plugrad.tensor([1.0, 2.0])
    floats += plugrad.tensor([1, 1])
    assert floats.dtype is plugrad.float32 and floats.tolist() == [2.0, 3.0]


FLOAT_FUNCTIONS = [
    "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "reciprocal", "rsqrt", "sin", "cos",
    "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "atanh", "sigmoid",
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64"])
@pytest.mark.parametrize("name", FLOAT_FUNCTIONS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_float_function_of_integers_gives_the_default_float_dtype(backend, name, dtype) -> None:
    # In every function's domain, without infinities (atanh(1), log(0)).
    values = np.array([0, 0, 0] if name == "atanh" else [1, 2, 3]).astype(dtype)
    if name in ("asin", "acos"):
        values = np.array([0, 1, 1]).astype(dtype)
    with plugrad.use_backend(backend):
        ours = getattr(plugrad.asarray(values), name)()
    theirs = getattr(torch.from_numpy(values), name)()
    assert ours.dtype.name == _torch_dtype_name(theirs)
    np.testing.assert_allclose(np.asarray(ours.numpy()), theirs.numpy(), rtol=1e-6)


SPREADS = {
    "x.mean()": lambda lib, x: x.mean(),
    "mean(x, dim=0)": lambda lib, x: lib.mean(x, dim=0),
    "x.var()": lambda lib, x: x.var(),
    "x.std(0)": lambda lib, x: x.std(0),
    "std(x, correction=1)": lambda lib, x: lib.std(x, correction=1),
    "var_mean(x)": lambda lib, x: lib.var_mean(x)[1],
}


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64"])
@pytest.mark.parametrize("name", SPREADS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_mean_or_spread_of_integers_is_in_the_default_float_dtype(backend, name, dtype) -> None:
    # It was float64 on NumPy and Dask, float32 on JAX without 64 bits (PyTorch refuses).
    values = np.array([1, 0, 3, 4]).astype(dtype)
    with plugrad.use_backend(backend):
        ours = SPREADS[name](plugrad, plugrad.asarray(values))
    assert ours.dtype == plugrad.float32
    theirs = SPREADS[name](torch, torch.from_numpy(values.astype(np.float32)))
    np.testing.assert_allclose(np.asarray(ours.numpy()), theirs.numpy(), rtol=1e-6)


MATRIX_FUNCTIONS = {
    "det": lambda lib, x: lib.linalg.det(x),
    "inv": lambda lib, x: lib.linalg.inv(x),
    "slogdet": lambda lib, x: lib.linalg.slogdet(x)[1],
    "cholesky": lambda lib, x: lib.linalg.cholesky(x),
    "qr": lambda lib, x: lib.linalg.qr(x)[1].abs(),
    "svdvals": lambda lib, x: lib.linalg.svdvals(x),
    "svd": lambda lib, x: lib.linalg.svd(x)[1],
    "eigvalsh": lambda lib, x: lib.linalg.eigvalsh(x),
    "eigh": lambda lib, x: lib.linalg.eigh(x)[0],
    "pinv": lambda lib, x: lib.linalg.pinv(x),
    "matrix_norm": lambda lib, x: lib.linalg.matrix_norm(x),
    "vector_norm": lambda lib, x: lib.linalg.vector_norm(x),
    "solve": lambda lib, x: lib.linalg.solve(x, x[:, 0]),
    "normalize": lambda lib, x: lib.nn.functional.normalize(x),
    "gelu": lambda lib, x: lib.nn.functional.gelu(x),
}


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("name", MATRIX_FUNCTIONS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_matrix_function_of_integers_is_in_the_default_float_dtype(backend, name, dtype):
    # NumPy's linalg gave float64 (PyTorch refuses integers; array-api-strict did too).
    values = np.array([[4, 1], [1, 3]]).astype(dtype)
    with plugrad.use_backend(backend):
        ours = MATRIX_FUNCTIONS[name](plugrad, plugrad.asarray(values))
    assert ours.dtype == plugrad.float32
    theirs = MATRIX_FUNCTIONS[name](torch, torch.from_numpy(values.astype(np.float32)))
    np.testing.assert_allclose(np.asarray(ours.numpy()), theirs.numpy(), rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_mean_of_integers_in_float64_is_computed_in_float64(backend) -> None:
    with plugrad.use_backend(backend):
        if plugrad.float64 not in plugrad.default_device().dtypes:
            pytest.skip(f"{backend} has no float64 here")
        counts = plugrad.asarray(np.array([2**40 + 1, 2**40 + 2]))
        assert counts.mean(dtype=plugrad.float64).item() == 2**40 + 1.5  # not through float32


def _mask(lib):
    return (
        lib.asarray(np.array([True, False, True]))
        if lib is plugrad
        else torch.tensor([True, False, True])
    )


def _ints(lib):
    return lib.asarray(np.array([1, -2, 3])) if lib is plugrad else torch.tensor([1, -2, 3])


def _floats(lib, dtype="float32"):
    values = np.array([0.5, 1.5, -2.5], dtype=dtype)
    return lib.asarray(values) if lib is plugrad else torch.from_numpy(values)


# Ops of more than two inputs, and result_type, across kinds.
MANY_INPUTS = {
    "where(c, int, float32)": lambda lib: lib.where(_mask(lib), _ints(lib), _floats(lib)),
    "where(c, float64, int)": lambda lib: lib.where(
        _mask(lib), _floats(lib, "float64"), _ints(lib)
    ),
    "where(c, int, 0.5)": lambda lib: lib.where(_mask(lib), _ints(lib), 0.5),
    "where(c, bool, int)": lambda lib: lib.where(_mask(lib), _mask(lib), _ints(lib)),
    "where(c, float32, 2)": lambda lib: lib.where(_mask(lib), _floats(lib), 2),
    "where(c, 1.0, 2)": lambda lib: lib.where(_mask(lib), 1.0, 2),
    "where(c, 3, 2)": lambda lib: lib.where(_mask(lib), 3, 2),
    "clamp(int, min=0.5)": lambda lib: lib.clamp(_ints(lib), min=0.5),
    "clamp(int, -1, 2)": lambda lib: lib.clamp(_ints(lib), -1, 2),
    "clamp(int, min=float32)": lambda lib: lib.clamp(_ints(lib), min=_floats(lib)),
    "clamp(float32, max=int)": lambda lib: lib.clamp(_floats(lib), max=_ints(lib)),
    "x.clip(0.25, 2.5) of int": lambda lib: _ints(lib).clip(0.25, 2.5),
}


@pytest.mark.parametrize("name", list(MANY_INPUTS))
@pytest.mark.parametrize("backend", BACKENDS)
def test_where_and_clamp_promote_across_kinds_as_pytorch(backend, name) -> None:
    with plugrad.use_backend(backend):
        ours = MANY_INPUTS[name](plugrad)
    theirs = MANY_INPUTS[name](torch)
    assert ours.dtype.name == _torch_dtype_name(theirs)
    np.testing.assert_array_equal(np.asarray(ours.numpy()), theirs.numpy())


def test_where_with_an_integer_branch_keeps_the_float_branchs_gradient() -> None:
    w = plugrad.tensor([0.5, 1.5, 2.5], requires_grad=True)
    plugrad.where(_mask(plugrad), _ints(plugrad), w * 2).sum().backward()
    assert w.grad.dtype is plugrad.float32 and w.grad.tolist() == [0.0, 2.0, 0.0]


RESULT_TYPES = [
    ("int64", "float32"), ("float32", "int64"), ("bool", "int8"), ("uint8", "float64"),
    ("int32", "complex64"), ("float64", "complex64"), ("int8", "uint8"), ("float32", "float64"),
]  # fmt: skip


@pytest.mark.parametrize(("first", "second"), RESULT_TYPES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_result_type_agrees_with_what_the_ops_compute(backend, first, second) -> None:
    with plugrad.use_backend(backend):
        a = plugrad.asarray(_values(first))
        b = plugrad.asarray(_values(second))
        assert plugrad.result_type(a, b) is (a + b).dtype
        assert (
            plugrad.result_type(getattr(plugrad, first), getattr(plugrad, second)) is (a + b).dtype
        )
        for scalar in SCALARS:
            if not (first == "bool" and scalar is True):  # the standard adds no bools
                assert plugrad.result_type(a, scalar) is (a + scalar).dtype
    expected = torch.promote_types(getattr(torch, first), getattr(torch, second))
    assert plugrad.result_type(getattr(plugrad, first), getattr(plugrad, second)).name == str(
        expected
    ).removeprefix("torch.")


def test_a_python_integer_out_of_an_integer_tensors_range_is_a_clear_error() -> None:
    small = plugrad.tensor([1, 2], dtype=plugrad.uint8)
    for operation in (
        lambda: small + -1,
        lambda: small * 300,
        lambda: plugrad.tensor([1], dtype=plugrad.int32) + 2**40,
        lambda: small.__setitem__(0, -1),
        lambda: small.add_(300),
    ):
        with pytest.raises(plugrad.errors.ScalarRangeError, match=r"convert the tensor to a dtype"):
            operation()
    assert small.tolist() == [1, 2] and small._version == 0
    with pytest.raises(OverflowError):  # still what NumPy code catches
        small - 256


PRODUCTS = {
    "matmul": lambda lib, a, b: lib.matmul(a.reshape(1, 3), b.reshape(3, 1)),
    "x @ y": lambda lib, a, b: a.reshape(3, 1).T @ b.reshape(3, 1),
    "tensordot": lambda lib, a, b: lib.tensordot(a, b, 1),
    "linalg.vecdot": lambda lib, a, b: lib.linalg.vecdot(a, b),
    "linalg.cross": lambda lib, a, b: lib.linalg.cross(a, b),
    "outer": lambda lib, a, b: lib.outer(a, b),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("first", "second"),
    [("int64", "float32"), ("float32", "int32"), ("int8", "complex64"), ("bool", "float32")],
)
@pytest.mark.parametrize("name", list(PRODUCTS))
def test_products_of_two_kinds_take_the_element_wise_dtype(backend, name, first, second) -> None:
    # int64 @ float32 was float64 (NumPy's rule), where int64 * float32 is float32
    # (PyTorch's, which refuses the matrix products of mixed dtypes).
    with plugrad.use_backend(backend):
        a, b = plugrad.asarray(_values(first)), plugrad.asarray(_values(second))
        product, element_wise = PRODUCTS[name](plugrad, a, b), a * b
    assert product.dtype == element_wise.dtype
    wide = torch.complex128 if "complex" in first + second else torch.float64
    expected = PRODUCTS[name](torch, *(torch.asarray(_values(d)).to(wide) for d in (first, second)))
    np.testing.assert_allclose(product.numpy(), expected.numpy())


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(
    "operation",
    [lambda t, lib: t + 300, lambda t, lib: 300 + t, lambda t, lib: t * -1,
     lambda t, lib: lib.maximum(t, -3), lambda t, lib: t - 256, lambda t, lib: t << 300],
)  # fmt: skip
def test_a_python_integer_out_of_range_is_refused_on_every_backend(backend: str, operation):
    # PyTorch and JAX wrap such a number silently (uint8 + 300 gave 44 on those backends).
    with plugrad.use_backend(backend):
        small = plugrad.asarray([1, 2, 0], dtype=plugrad.uint8)
        with pytest.raises(plugrad.errors.ScalarRangeError, match=r"out of the range of uint8"):
            operation(small, plugrad)
        assert small.tolist() == [1, 2, 0]


@pytest.mark.parametrize("backend", backends_under_test())
def test_comparing_with_a_python_integer_out_of_range_answers_as_mathematics(backend: str):
    # A wrapped -3 is 253 in uint8: uint8 < -3 came out all True on PyTorch and JAX.
    with plugrad.use_backend(backend):
        small = plugrad.asarray([1, 2, 0], dtype=plugrad.uint8)
        assert (small < -3).tolist() == [False, False, False]
        assert (small >= -3).tolist() == [True, True, True]
        assert (300 > small).tolist() == [True, True, True]
        assert (plugrad.asarray([1, 2], dtype=plugrad.int8) == 1000).tolist() == [False, False]
        assert (small != 256).tolist() == [True, True, True]
        assert (small + 255).tolist() == [0, 1, 255]  # in range: uint8 arithmetic wraps


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(
    "operation",
    [lambda lib: lib.asarray([2, 1]) ** lib.asarray([-1, 1]), lambda lib: lib.asarray([2]) ** -1,
     lambda lib: 2 ** lib.asarray([-1]), lambda lib: lib.pow(lib.asarray([2]), -2),
     lambda lib: lib.asarray([2]).pow_(-1)],
)  # fmt: skip
def test_integers_to_negative_integer_powers_are_refused_on_every_backend(backend, operation):
    # NumPy refuses them (a raw ValueError came through); PyTorch and JAX gave 2 ** -1 as 0.
    with plugrad.use_backend(backend):
        with pytest.raises(DtypeError, match="an integer to a negative integer power"):
            operation(plugrad)
        assert (plugrad.asarray([2, 3]) ** plugrad.asarray([2, 0])).tolist() == [4, 1]
        assert (plugrad.asarray([2.0]) ** -1).tolist() == [0.5]


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, m: m - lib.tensor([1, 1], dtype=lib.int8),
        lambda lib, m: lib.tensor([1, 1]) - m,
        lambda lib, m: 1 - m,
        lambda lib, m: m - 1,
        lambda lib, m: m - 0.5,
        lambda lib, m: lib.sub(m, lib.tensor([1.0, 1.0])),
    ],
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_bool_tensor_in_a_subtraction_is_refused_as_pytorch(backend, call) -> None:
    # bool - int8 gave int8 and 1 - mask int64: the mask read as numbers without a word.
    with plugrad.use_backend(backend), pytest.raises(DtypeError, match="invert a mask"):
        call(plugrad, plugrad.tensor([True, False]))
    with pytest.raises(RuntimeError, match="bool tensor is not supported"):
        call(torch, torch.tensor([True, False]))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "uint64"])
@pytest.mark.parametrize("number", [2**63, 2**64 + 5, -(2**63) - 1, -(2**70)])
def test_comparing_integers_with_a_number_past_int64_gives_the_answer(dtype, number) -> None:
    # A ScalarRangeError advised converting to int64, which the tensor already was;
    # the answer is known (PyTorch gives it): every value is below (or above) the number.
    import operator

    values = [0, 1, 5] if dtype.startswith("u") else [-5, 0, 7]
    x = plugrad.tensor(values, dtype=getattr(plugrad, dtype))
    if dtype == "uint64" and number == 2**63:
        number = 2**64  # (2**63 is within uint64's range)
    for name in ("lt", "le", "gt", "ge", "eq", "ne"):
        compare = getattr(operator, name)
        assert compare(x, number).tolist() == [compare(v, number) for v in values], name
        assert compare(number, x).tolist() == [compare(number, v) for v in values], name
    assert compare(x, number).dtype is plugrad.bool and compare(x, number).shape == (3,)
