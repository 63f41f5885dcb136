"""Values, dtypes and views where plugrad once differed from ``torch`` without an error.

Infinite values on a diagonal, promotion of real with complex and of integers with
float16 in element-wise ops, the common dtype of joined tensors, float16 ranges,
and in-place writes into a broadcast view (which must be refused, not dropped).
"""

from __future__ import annotations

import contextlib
import math
import re
import warnings
from typing import Any

import numpy as np
import pytest
from torch_compare import assert_agrees

import plugrad
from plugrad.errors import ReadOnlyViewError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")


def _skip_without(*dtypes: str) -> None:
    missing = [d for d in dtypes if getattr(plugrad, d) not in plugrad.default_device().dtypes]
    if missing:
        pytest.skip(f"the default backend has no {', '.join(missing)}")


# -- a diagonal holding inf or NaN: nothing leaks off it ---------------------------------------


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("offset", [0, 1, -1])
def test_diag_of_a_vector_with_inf_and_nan_is_zero_off_the_diagonal(offset: int, backend: str):
    values = np.array([1.0, math.inf, math.nan])
    assert_agrees(lambda lib, x: lib.diag(x, offset), values, backend)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@pytest.mark.parametrize("backend", backends_under_test())
def test_gradients_through_a_diagonal_and_a_trace_at_an_infinite_slope(backend: str):
    # sqrt'(0) is inf: the gradient is inf on the diagonal and exactly 0 elsewhere.
    matrix = np.array([[0.0, 1.0], [4.0, 9.0]])
    assert_agrees(lambda lib, x: x.diagonal().sqrt(), matrix, backend)
    assert_agrees(lambda lib, x: lib.trace(x).sqrt(), np.array([[0.0, 5.0], [2.0, 0.0]]), backend)
    assert_agrees(lambda lib, x: lib.diag_embed(x), np.array([[1.0, math.inf]]), backend)


# -- promotion ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("real", "complex_"),
    [("float64", "complex64"), ("float32", "complex64"), ("int64", "complex64")],
)
def test_where_of_real_and_complex_keeps_the_real_precision(real: str, complex_: str):
    results = []
    for lib in (plugrad, torch):
        first = (
            lib.asarray([1.1, 2.2], dtype=getattr(lib, real))
            if real != "int64"
            else (lib.asarray([1, 2], dtype=lib.int64))
        )
        second = lib.ones(2, dtype=getattr(lib, complex_)) * 2j
        results.append(lib.where(lib.asarray([True, False]), first, second))
    ours, theirs = results
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("integral", ["int8", "uint8", "bool", "int64"])
@pytest.mark.parametrize("name", ["divide", "true_divide", "atan2"])
def test_an_integer_with_a_float16_tensor_computes_in_float16(integral: str, name: str):
    _skip_without("float16")
    ours = getattr(plugrad, name)(
        plugrad.ones(3, dtype=getattr(plugrad, integral)),
        plugrad.full((3,), 3.0, dtype=plugrad.float16),
    )
    theirs = getattr(torch, name)(
        torch.ones(3, dtype=getattr(torch, integral)), torch.full((3,), 3.0, dtype=torch.float16)
    )
    assert ours.dtype == plugrad.float16 and str(theirs.dtype) == "torch.float16"
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    # Two integers still compute in the default float dtype.
    assert (
        plugrad.divide(plugrad.ones(2, dtype=plugrad.int8), plugrad.ones(2)).dtype
        == plugrad.float32
    )


JOINS = ["cat", "stack", "hstack", "vstack", "dstack", "column_stack"]
MIXED = [("int64", "float32"), ("int32", "float16"), ("bool", "int32"), ("int8", "uint8"),
         ("float32", "float64"), ("int64", "complex64"), ("float64", "complex64")]  # fmt: skip


@pytest.mark.parametrize("name", JOINS)
@pytest.mark.parametrize(("first", "second"), MIXED)
def test_joined_tensors_of_two_dtypes_take_pytorchs_common_dtype(
    name: str, first: str, second: str
):
    _skip_without(first, second)
    ours = getattr(plugrad, name)([plugrad.ones(2, dtype=getattr(plugrad, first)),
                                   plugrad.ones(2, dtype=getattr(plugrad, second))])  # fmt: skip
    theirs = getattr(torch, name)([torch.ones(2, dtype=getattr(torch, first)),
                                   torch.ones(2, dtype=getattr(torch, second))])  # fmt: skip
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert ours.shape == tuple(theirs.shape)


def test_each_joined_tensor_gets_a_gradient_of_its_own_dtype():
    x = plugrad.ones(2, dtype=plugrad.float32, requires_grad=True)
    y = plugrad.ones(2, dtype=plugrad.float64, requires_grad=True)
    joined = plugrad.cat([x, y])
    assert joined.dtype == plugrad.float64
    (joined * plugrad.arange(4.0, dtype=plugrad.float64)).sum().backward()
    assert (x.grad.dtype, y.grad.dtype) == (plugrad.float32, plugrad.float64)
    assert x.grad.tolist() == [0.0, 1.0] and y.grad.tolist() == [2.0, 3.0]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize(("start", "stop", "step"), [(-1, 1, 0.2), (0.5, 5.0, 0.3), (3, -1, -0.7)])
def test_a_float_range_does_not_drift(dtype: str, start: float, stop: float, step: float):
    _skip_without(dtype)
    ours = plugrad.arange(start, stop, step, dtype=getattr(plugrad, dtype)).numpy()
    theirs = torch.arange(start, stop, step, dtype=getattr(torch, dtype)).numpy()
    assert ours.shape == theirs.shape
    # Within one rounding of the dtype (NumPy's own float16 steps were off by 1e-3 at 0).
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=float(np.finfo(dtype).eps))


def test_an_in_place_op_on_a_result_the_backward_does_not_need():
    # abs saved its output for complex inputs only; for real ones x.abs().add_(1) is fine.
    x = plugrad.tensor([-1.0, 2.0], requires_grad=True)
    y = x.abs()
    y.add_(1)
    y.sum().backward()
    assert x.grad.tolist() == [-1.0, 1.0]
    z = plugrad.tensor([3 + 4j, 0j], requires_grad=True)
    z.abs().sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [0.6 + 0.8j, 0])


# -- broadcast views: a write is refused, never dropped ------------------------------------------


WRITES = {
    "fill_": lambda v: v.fill_(5.0),
    "zero_": lambda v: v.zero_(),
    "add_": lambda v: v.add_(1.0),
    "setitem": lambda v: v.__setitem__(v > -1, 3.0),
    "masked_fill_": lambda v: v.masked_fill_(v > -1, 2.0),
    "copy_": lambda v: v.copy_(plugrad.ones(2, 3)),
    "out=": lambda v: plugrad.add(plugrad.ones(2, 3), 1.0, out=v),
}


@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
@pytest.mark.parametrize("make", ["expand", "broadcast_to"])
def test_writing_into_a_broadcast_view_is_refused_and_changes_nothing(write: str, make: str):
    x = plugrad.zeros(2, 1)
    view = x.expand(2, 3) if make == "expand" else plugrad.broadcast_to(x, (2, 3))
    version = x._version
    with pytest.raises(ReadOnlyViewError, match="clone"):
        WRITES[write](view)
    assert x.tolist() == [[0.0], [0.0]] and view.tolist() == [[0.0] * 3] * 2
    assert x._version == version


def test_writing_into_a_copy_of_a_broadcast_view_works():
    x = plugrad.zeros(2, 1)
    copy = x.expand(2, 3).clone()
    copy.fill_(5.0)
    assert copy.tolist() == [[5.0] * 3] * 2 and x.tolist() == [[0.0], [0.0]]


def test_a_recorded_write_into_a_broadcast_view_is_refused_too():
    base = plugrad.zeros(2, 1, requires_grad=True).clone()
    with pytest.raises(ReadOnlyViewError):
        base.expand(2, 3).mul_(2.0)
    assert base.grad_fn is not None and base.tolist() == [[0.0], [0.0]]


def test_a_float16_tensor_with_a_complex_number():
    _skip_without("float16")
    half = plugrad.ones(2, dtype=plugrad.float16)
    assert (half == (1 + 1j)).tolist() == [False, False]
    assert (half == (1 + 0j)).tolist() == [True, True]
    assert (half * (1 + 1j)).dtype == plugrad.complex64  # PyTorch's complex32 is experimental


@pytest.mark.parametrize(
    "data",
    [
        [np.float64(1.5)],
        [1.5, np.float64(2.0)],
        [[1.0], [np.float64(2.0)]],
        [np.float32(1.5)],
        [1.5, 2.5],
        [np.complex128(1j)],
        [1j],
        np.float64(2.5),
    ],
)
def test_numpy_scalars_keep_their_precision_in_a_new_tensor(data):
    # A list of np.mean(...) results stays float64, as in PyTorch; Python floats take the default.
    assert plugrad.tensor(data).dtype.name == str(torch.tensor(data).dtype).removeprefix("torch.")


@pytest.mark.parametrize(
    "data",
    [
        [np.float32(1.5), np.float32(2.0)],
        [[np.float32(1.5)], [np.float32(2.0)]],
        [np.complex64(1j)],
        [np.float32(1.5), 2.5],
        [1.5, 2.5],
        [1j],
    ],
)
def test_numpy_single_precision_scalars_stay_single_under_a_double_default(data):
    # They were read again in the default double precision, as Python floats are.
    if plugrad.default_device().backend.name == "array_api_strict":
        pytest.skip("array_api_strict reads NumPy scalars in a list in double precision itself")
    plugrad.set_default_dtype(plugrad.float64)
    torch.set_default_dtype(torch.float64)
    try:
        expected = str(torch.tensor(data).dtype).removeprefix("torch.")
        assert plugrad.tensor(data).dtype.name == expected
    finally:
        plugrad.set_default_dtype(plugrad.float32)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize(
    "name", ["fmod", "fmax", "fmin", "xlogy", "remainder", "pow", "copysign", "maximum", "atan2"]
)
def test_a_0d_result_of_an_op_promotes_as_a_0d_tensor_does(name: str) -> None:
    # NumPy gives a 0-d result as a numpy.float64, a subclass of float: the rules took it for
    # a Python number, so fmod(sum of float64s, float32 tensor) was float32 (and fmax raised).
    made = plugrad.tensor([0.7, 1.2], dtype=plugrad.float64).sum()
    given = plugrad.tensor(1.9, dtype=plugrad.float64)
    other = plugrad.tensor([1.5, 2.5])
    function = getattr(plugrad, name)
    ours, reference = function(made, other), function(given, other)
    assert ours.dtype == reference.dtype == plugrad.float64
    np.testing.assert_array_equal(ours.numpy(), reference.numpy())
    leaf = plugrad.tensor([0.7, 1.2], dtype=plugrad.float64, requires_grad=True)
    function(leaf.sum(), 1.0).backward()
    assert leaf.grad.dtype == plugrad.float64


# -- bools and uint8 where the backend's own dtype rules differ from PyTorch's -----------------


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("form", ["function", "method"])
@pytest.mark.parametrize("name", ["square", "conj", "sign", "sgn"])
def test_bool_tensors_take_pytorchs_dtype_in_square_conj_and_sign(
    name: str, form: str, backend: str
):
    if form == "function" and not hasattr(plugrad, name):
        pytest.skip(f"plugrad.{name} is a method only")
    results = []
    for lib in (plugrad, torch):
        with plugrad.use_backend(backend) if lib is plugrad else _nothing():
            x = lib.asarray([True, False, True])
            result = getattr(lib, name)(x) if form == "function" else getattr(x, name)()
            results.append((str(result.dtype).rpartition(".")[2], result.tolist()))
    ours, theirs = results
    # NumPy squares a bool in int8 (so (b ** 2) * 200 wrapped), and conjugates one into int8.
    assert ours == theirs


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(
    ("method", "args", "kwargs"),
    [("all", (), {}), ("any", (), {}), ("all", (1,), {}), ("any", (), {"dim": 0, "keepdim": True}),
     ("all", ((),), {})],
)  # fmt: skip
@pytest.mark.parametrize("dtype", ["uint8", "int8", "bool", "float32"])
def test_all_and_any_methods_of_uint8_give_uint8_as_pytorch(
    method: str, args: tuple[Any, ...], kwargs: dict[str, Any], dtype: str, backend: str
):
    values = [[1, 2, 0], [3, 4, 5]]
    results = []
    for lib in (plugrad, torch):
        with plugrad.use_backend(backend) if lib is plugrad else _nothing():
            x = lib.asarray(values, dtype=getattr(lib, dtype))
            result = getattr(x, method)(*args, **kwargs)
            results.append((str(result.dtype).rpartition(".")[2], result.tolist()))
            if args or kwargs:  # the function called PyTorch's way too (it gave bools)
                result = getattr(lib, method)(x, *args, **kwargs)
                results.append((str(result.dtype).rpartition(".")[2], result.tolist()))
    ours, theirs = results[: len(results) // 2], results[len(results) // 2 :]
    assert ours == theirs
    # The standard's function gives bools whatever the dtype.
    with plugrad.use_backend(backend):
        assert plugrad.all(plugrad.asarray(values, dtype=getattr(plugrad, dtype))).dtype == (
            plugrad.bool
        )


def _nothing() -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext()


# -- a number written into a tensor that cannot hold it: refused on every backend ---------------

NUMBER_WRITES = {
    "x[0] = -1 into uint8": ("uint8", lambda lib, x: x.__setitem__(0, -1)),
    "x[0] = 300 into uint8": ("uint8", lambda lib, x: x.__setitem__(0, 300)),
    "index_fill -1 into uint8": ("uint8", lambda lib, x: x.index_fill_(0, lib.tensor([0]), -1)),
    "masked_fill 256 into uint8": (
        "uint8", lambda lib, x: x.masked_fill_(lib.tensor([True, False]), 256)),
    "x[0] = 1e39 into float32": ("float32", lambda lib, x: x.__setitem__(0, 1e39)),
    "x[0] = nan into int32": ("int32", lambda lib, x: x.__setitem__(0, math.nan)),
    "tensor([-1], dtype=uint8)": ("uint8", lambda lib, x: lib.tensor([3, -1], dtype=x.dtype)),
    "tensor(300, dtype=int8)": ("int8", lambda lib, x: lib.tensor(300, dtype=lib.int8)),
    "tensor([256.5], dtype=uint8)": ("uint8", lambda lib, x: lib.tensor([256.5], dtype=x.dtype)),
    "tensor([-129.5], dtype=int8)": ("int8", lambda lib, x: lib.tensor([-129.5], dtype=x.dtype)),
    "tensor([[1], [3e9]], dtype=int32)": (
        "int32", lambda lib, x: lib.tensor([[1], [3e9]], dtype=x.dtype)),
    "tensor(-1e19, dtype=int64)": ("int64", lambda lib, x: lib.tensor(-1e19, dtype=x.dtype)),
    "tensor([nan], dtype=int64)": ("int64", lambda lib, x: lib.tensor([math.nan], dtype=x.dtype)),
}  # fmt: skip


def _mask(lib: Any, x: Any) -> Any:
    return lib.ones(x.shape, dtype=lib.bool, device=x.device)


# Refusals of a number beyond a dtype's range: (dtype, call, the words the message holds)
NUMBERS_REFUSED_NAMING_THE_DTYPE = {
    "masked_fill_": ("int64", lambda lib, x: x.masked_fill_(_mask(lib, x), 2**70), "of int64 ["),
    "masked_fill(tensor)": (
        "uint8", lambda lib, x: x.masked_fill(_mask(lib, x), lib.tensor(300, device=x.device)),
        "does not fit uint8 ("),
    "x[0] =": ("int64", lambda lib, x: x.__setitem__(0, 2**70), "of int64 ["),
    "x[0] = into float16": ("float16", lambda lib, x: x.__setitem__(0, 1e6), "of float16 ["),
    "scatter": ("uint8", lambda lib, x: x.scatter(0, lib.tensor([0], device=x.device), 300),
                "of uint8 ["),
    "where": ("uint8", lambda lib, x: lib.where(_mask(lib, x), x, 300), "of uint8 ["),
    "full": ("uint8", lambda lib, x: lib.full((2,), 300, dtype=x.dtype, device=x.device),
             "held by uint8 without"),
    "div(rounding_mode=)": ("uint8", lambda lib, x: x.div(-7, rounding_mode="trunc"),
                            "div() (in floor_divide()): the number -7"),
    "div_(rounding_mode=)": ("uint8", lambda lib, x: x.div_(-7, rounding_mode="floor"),
                             "div_() (in floor_divide()): the number -7"),
}  # fmt: skip


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", NUMBERS_REFUSED_NAMING_THE_DTYPE)
def test_a_number_refused_names_the_dtype_and_the_function_as_plugrad_does(name: str, backend: str):
    # The dtype was named three ways (plugrad.int64, int64, torch.float16: the backend's own
    # name), and div() as floor_divide(), which the user never called.
    dtype, call, words = NUMBERS_REFUSED_NAMING_THE_DTYPE[name]
    with plugrad.use_backend(backend):
        _skip_without(dtype)
        x = plugrad.tensor([1, 0], dtype=getattr(plugrad, dtype))
        with pytest.raises(plugrad.errors.ScalarRangeError) as caught:
            call(plugrad, x)
    message = str(caught.value)
    assert words in message
    # (plugrad.int64 only in the advice to convert: x.to(plugrad.int64))
    assert not re.search(rf"\w\.{dtype}\b", re.sub(r"x\.to\(plugrad\.\w+\)", "", message))


FLOATS_BEYOND_AN_INTEGER_DTYPE = {
    "uint8": [256.5], "int8": [-129.5], "int32": [2.5, 3e9], "int64": [[1e19]], "uint16": -0.5,
}  # fmt: skip


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("dtype", FLOATS_BEYOND_AN_INTEGER_DTYPE)
def test_a_float_beyond_an_integer_dtype_is_refused_naming_it(dtype: str, backend: str):
    # NumPy raised its OverflowError naming the integer it truncated (256 for 256.5),
    # PyTorch a RuntimeError; a float must lie within the range, as PyTorch requires.
    data = FLOATS_BEYOND_AN_INTEGER_DTYPE[dtype]
    with pytest.raises(RuntimeError):
        torch.tensor(data, dtype=getattr(torch, dtype))
    with plugrad.use_backend(backend):
        _skip_without(dtype)
        number = re.escape(repr(float(np.ravel(data)[-1])))
        with pytest.raises(
            plugrad.errors.ScalarRangeError, match=rf"number {number} does not fit {dtype}"
        ):
            plugrad.tensor(data, dtype=getattr(plugrad, dtype))


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", NUMBER_WRITES)
def test_a_number_the_dtype_cannot_hold_is_refused_not_wrapped(name: str, backend: str):
    # PyTorch and JAX kernels wrapped it (x[0] = -1 gave 255, x[0] = 300 gave 44 on jax);
    # refused as NumPy refuses, and as PyTorch refuses x[0] = 300 (but not x[0] = -1).
    dtype, write = NUMBER_WRITES[name]
    with plugrad.use_backend(backend):
        x = plugrad.tensor([1, 0], dtype=getattr(plugrad, dtype))
        with pytest.raises(plugrad.errors.ScalarRangeError, match=r"range|fit"):
            write(plugrad, x)
        assert x.tolist() == [1, 0] and x._version == 0


NUMBERS_ROUNDED_TO_INFINITY = {
    # PyTorch reads where()'s number as a float32 tensor: -1e9 into float16 is -inf (an
    # attention mask's fill); masked_fill and x[0] = refuse it (above).
    "where(mask, float16, -1e9)": lambda lib: lib.where(
        lib.tensor([True, False]), lib.ones(2, dtype=lib.float16), -1e9
    ),
    "float16.where(mask, 1e9)": lambda lib: lib.ones(2, dtype=lib.float16).where(
        lib.tensor([True, False]), 1e9
    ),
    # nan_to_num converts its numbers as PyTorch does, to inf beyond the dtype's range
    "nan_to_num(float32, nan=1e300, posinf=1e300, neginf=-1e300)": lambda lib: lib.nan_to_num(
        lib.tensor([math.nan, math.inf, -math.inf, 2.0]), nan=1e300, posinf=1e300, neginf=-1e300
    ),
    "nan_to_num(float16, posinf=1e5)": lambda lib: lib.nan_to_num(
        lib.tensor([math.inf, 1.0], dtype=lib.float16), posinf=1e5
    ),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", NUMBERS_ROUNDED_TO_INFINITY)
def test_numbers_beyond_a_float_dtype_round_to_infinity_where_pytorch_rounds_them(
    name: str, backend: str
):
    with plugrad.use_backend(backend), warnings.catch_warnings():
        if "float16" in name and plugrad.float16 not in plugrad.default_device().dtypes:
            pytest.skip(f"{backend} has no float16")
        warnings.simplefilter("error")  # and NumPy's overflow warning stays inside
        ours = NUMBERS_ROUNDED_TO_INFINITY[name](plugrad)
    theirs = NUMBERS_ROUNDED_TO_INFINITY[name](torch)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def _masked(lib: Any, x: Any) -> Any:
    return x < 0


# Integers a float cannot hold exactly, beside a negative one the write replaces.
FILLS_OF_INTEGER_TENSORS = {
    "int32 masked_fill(mask, 2.5)": (
        "int32", [2**31 - 1, 16777217, -5], lambda lib, x: x.masked_fill(_masked(lib, x), 2.5)),
    "int64 masked_fill_(mask, -2.7)": (
        "int64", [10**12 + 1, -5], lambda lib, x: x.masked_fill_(_masked(lib, x), -2.7)),
    "int64 masked_fill(mask, float64 0-d tensor)": (
        "int64", [2**53 + 1, -5],
        lambda lib, x: x.masked_fill(_masked(lib, x), lib.tensor(2.5, dtype=lib.float64))),
    "int32 masked_fill(mask, float32 0-d tensor)": (
        "int32", [2**31 - 1, -5],
        lambda lib, x: x.masked_fill(_masked(lib, x), lib.tensor(-2.5, dtype=lib.float32))),
    "int64 index_fill(0, index, float64 0-d tensor)": (
        "int64", [2**53 + 1, -5, 2**62 + 3],
        lambda lib, x: x.index_fill(0, lib.tensor([1]), lib.tensor(2.5, dtype=lib.float64))),
    "int64 x[mask] = 2.5": (
        "int64", [2**53 + 1, -5], lambda lib, x: (x.__setitem__(_masked(lib, x), 2.5), x)[1]),
    "int32 x[mask] = -2.5": (
        "int32", [2**31 - 1, -5], lambda lib, x: (x.__setitem__(_masked(lib, x), -2.5), x)[1]),
}  # fmt: skip


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", FILLS_OF_INTEGER_TENSORS)
def test_a_float_filled_into_an_integer_tensor_leaves_the_other_elements_exact(
    name: str, backend: str
):
    # masked_fill computed where(mask, 2.5, x) in float64 and cast back: int32 2**31 - 1
    # became -2**31, int64 2**53 + 1 became 2**53; array-api-strict refused x[mask] = 2.5.
    dtype, values, fill = FILLS_OF_INTEGER_TENSORS[name]
    with plugrad.use_backend(backend):
        _skip_without(dtype, *(["float64"] if "float64" in name else []))
        ours = fill(plugrad, plugrad.tensor(values, dtype=getattr(plugrad, dtype)))
    theirs = fill(torch, torch.tensor(values, dtype=getattr(torch, dtype)))
    assert ours.dtype.name == dtype
    assert ours.tolist() == theirs.tolist()


OUT_OF_RANGE_CREATIONS = {
    "linspace to 3e9 in int32": lambda lib: lib.linspace(0, 3e9, 3, dtype=lib.int32),
    "randint up to 300 in int8": lambda lib: lib.randint(0, 300, (4,), dtype=lib.int8),
    "randint from -5 in uint8": lambda lib: lib.randint(-5, 3, (4,), dtype=lib.uint8),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", OUT_OF_RANGE_CREATIONS)
def test_creating_values_the_dtype_cannot_hold_is_refused_as_in_pytorch(name: str, backend: str):
    # NumPy wrapped them, JAX clamped them (58 % of randint(0, 300, int8) draws were 127).
    with plugrad.use_backend(backend), pytest.raises(plugrad.errors.ScalarRangeError):
        OUT_OF_RANGE_CREATIONS[name](plugrad)
    with pytest.raises(RuntimeError):
        OUT_OF_RANGE_CREATIONS[name](torch)


@pytest.mark.parametrize("backend", backends_under_test())
def test_a_negative_repeat_count_is_refused_as_in_pytorch(backend: str):
    # JAX's repeat dropped the element without a word; NumPy raised its own ValueError.
    with plugrad.use_backend(backend):
        x = plugrad.tensor([1, 2, 3])
        for repeats in (plugrad.tensor([2, -1, 1]), -1):
            with pytest.raises(plugrad.errors.InvalidArgumentError, match="must not be negative"):
                x.repeat_interleave(repeats)
        assert x.repeat_interleave(plugrad.tensor([2, 0, 1])).tolist() == [1, 1, 3]
    with pytest.raises(RuntimeError):
        torch.tensor([1, 2, 3]).repeat_interleave(torch.tensor([2, -1, 1]))


BOOL_AND_SMALL_INT_CALLS = {
    # torch's (and the standard's) argmax take no bool tensor: max(dim) of one raised
    "bool.max(1)": lambda lib: lib.tensor([[True, False], [True, True]]).max(1),
    # Dask subtracted bools (TypeError); the others give neighbours that differ
    "bool.diff()": lambda lib: lib.tensor([True, False, False, True]).diff(),
    "bool.diff(n=2, prepend)": lambda lib: lib.tensor([True, False, False]).diff(
        n=2, prepend=lib.tensor([True])
    ),
    # Dask summed the blocks in int64: the dtypes differed by backend
    "tensordot of int8": lambda lib: lib.tensordot(
        lib.tensor([3, 4], dtype=lib.int8), lib.tensor([1, 2], dtype=lib.int8), dims=1
    ),
    # A complex number written into a bool tensor is whether it is nonzero: its real part
    # alone made 2j False.
    "bool.copy_(complex)": lambda lib: lib.zeros(3, dtype=lib.bool).copy_(
        lib.tensor([2j, 0.5, 0j])
    ),
    "bool.fill_(complex tensor)": lambda lib: lib.zeros(2, dtype=lib.bool).fill_(lib.tensor(2j)),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", BOOL_AND_SMALL_INT_CALLS)
def test_bool_and_small_integer_calls_agree_with_pytorch_on_every_backend(name, backend):
    with plugrad.use_backend(backend):
        ours = BOOL_AND_SMALL_INT_CALLS[name](plugrad)
    theirs = BOOL_AND_SMALL_INT_CALLS[name](torch)
    for mine, reference in zip(_parts(ours), _parts(theirs), strict=True):
        assert mine.dtype.name == str(reference.dtype).removeprefix("torch."), name
        assert mine.tolist() == reference.tolist(), name


def _parts(result):
    return tuple(result) if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("backend", backends_under_test())
def test_a_dot_product_of_bools_is_a_bool_on_every_backend(backend):
    # Dask's was int8 (a count), NumPy's and JAX's bool.
    with plugrad.use_backend(backend):
        if backend in ("torch", "array_api_strict"):
            pytest.skip(f"{backend} has no bool matrix products")
        x = plugrad.tensor([True, True, False])
        assert plugrad.linalg.vecdot(x, x).dtype == plugrad.bool
        assert plugrad.linalg.vecdot(x, x).item() is True
