"""PyTorch's creation functions beside the standard's: ``logspace``, ``tril_indices``,
``triu_indices`` and the window functions, against ``torch`` on every backend under test."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError, DtypeError, InvalidArgumentError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((0, 3, 4), {}),
        ((-2.5, 1.5, 7), {}),
        ((0, 1, 5), {"base": 2}),
        ((1, 0, 3), {"base": 0.5}),
        ((0, 2, 1), {}),
        ((0, 2, 0), {}),
        ((0, 3, 4), {"dtype": "float64"}),
        ((0, 2, 3), {"base": 2, "dtype": "int64"}),
        ((0, 1, 4), {"base": 2, "dtype": "int32"}),
        # One step of an integer dtype is base**start of start as it is (two or more steps
        # round the endpoints toward zero first).
        ((1.5, 3, 1), {"dtype": "int64"}),
        ((1.5, 3, 1), {"base": 3, "dtype": "int32"}),
        ((2.5, 0, 2), {"dtype": "int64"}),
        ((0, 2.5, 6), {"dtype": "float16"}),
    ],
)
def test_logspace_agrees_with_torch(
    args: tuple[Any, ...], kwargs: dict[str, Any], backend: str
) -> None:
    dtype = kwargs.pop("dtype", None)
    with plugrad.use_backend(backend):
        if dtype is not None and getattr(plugrad, dtype) not in plugrad.default_device().dtypes:
            pytest.skip(f"{backend} has no {dtype}")
        ours = plugrad.logspace(*args, **kwargs, dtype=dtype and getattr(plugrad, dtype))
    theirs = torch.logspace(*args, **kwargs, dtype=dtype and getattr(torch, dtype))
    assert str(ours.dtype).rpartition(".")[2] == str(theirs.dtype).rpartition(".")[2]
    rtol = {"float16": 1e-3, "float32": 1e-6}.get(str(theirs.dtype).rpartition(".")[2], 1e-12)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol)


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize(
    ("row", "col", "offset"),
    [(3, 3, 0), (4, 3, 0), (3, 5, 1), (5, 3, -2), (3, 3, 7), (3, 3, -7), (0, 3, 0), (1, 1, 0)],
)
def test_triangle_indices_agree_with_torch(
    name: str, row: int, col: int, offset: int, backend: str
) -> None:
    with plugrad.use_backend(backend):
        ours = getattr(plugrad, name)(row, col, offset)
        assert ours.dtype == plugrad.default_device().default_int_dtype
        assert not ours.requires_grad
    theirs = getattr(torch, name)(row, col, offset)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.shape == tuple(theirs.shape)


def test_triangle_indices_select_the_triangle() -> None:
    m = plugrad.arange(12.0).reshape(3, 4).requires_grad_()
    rows, cols = plugrad.triu_indices(3, 4, 1, dtype=plugrad.int32)
    picked = m[rows, cols]
    np.testing.assert_array_equal(
        picked.detach().numpy(), np.triu(np.arange(12.0).reshape(3, 4), 1)[np.triu_indices(3, 1, 4)]
    )
    picked.sum().backward()
    np.testing.assert_array_equal(m.grad.numpy(), np.triu(np.ones((3, 4)), 1))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: plugrad.logspace(0, 1, -1), ArgumentError, "steps >= 0"),
        (lambda: plugrad.logspace(0, 1, 2.0), ArgumentError, "steps >= 0"),
        (lambda: plugrad.logspace(0, 1j, 2), TypeError, "real number as end"),
        (lambda: plugrad.logspace(0, 1, 2, dtype=plugrad.bool), DtypeError, "not bool"),
        (lambda: plugrad.tril_indices(-1, 2), ArgumentError, ">= 0"),
        (lambda: plugrad.tril_indices(2, 2.0), TypeError, "int as col"),
        (lambda: plugrad.triu_indices(2, 2, dtype=plugrad.float32), DtypeError, "integer indices"),
        (
            lambda: plugrad.triu_indices(2, 2, requires_grad=True),
            ArgumentError,
            "cannot require grad",
        ),
    ],
)
def test_bad_input_is_refused_clearly(call: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


# PyTorch's keyword spellings and argument types that the standard's signatures left out.
CALLS = {
    "zeros(size=)": lambda lib: lib.zeros(size=(2, 3)),
    "ones(size=)": lambda lib: lib.ones(size=(2,)),
    "empty(size=).shape": lambda lib: lib.empty(size=(1, 2)).shape,
    "zeros of NumPy ints": lambda lib: lib.zeros(np.int64(2), np.int32(3)),
    "zeros of one NumPy int": lambda lib: lib.zeros(np.int64(2)),
    "ones of 0-d tensors": lambda lib: lib.ones(lib.tensor(2), 1),
    "arange(end=)": lambda lib: lib.arange(end=4),
    "arange(start, end=)": lambda lib: lib.arange(1, end=4),
    "arange(start, end=, step=)": lambda lib: lib.arange(1.0, end=2.0, step=0.25),
    "arange(start=, end=)": lambda lib: lib.arange(start=1, end=4),
    "arange(start=, end=, step=)": lambda lib: lib.arange(start=1.0, end=2.0, step=0.25),
    "scalar_tensor": lambda lib: lib.scalar_tensor(1),
    "scalar_tensor of a bool": lambda lib: lib.scalar_tensor(True),
    "scalar_tensor(dtype=)": lambda lib: lib.scalar_tensor(2.5, dtype=lib.int64),
    "eye(n=)": lambda lib: lib.eye(n=2),
    "eye(n=, m=)": lambda lib: lib.eye(n=2, m=3),
    "full of a NumPy int": lambda lib: lib.full((2,), np.int32(3)),
    "full of a NumPy float": lambda lib: lib.full((2,), np.float64(0.5)),
    "full of a 0-d tensor": lambda lib: lib.full((2,), lib.tensor(3.0)),
    "full_like of a NumPy float": lambda lib: lib.full_like(lib.zeros(2), np.float32(2.5)),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_pytorch_keyword_forms_agree_with_torch(name: str) -> None:
    ours, theirs = CALLS[name](plugrad), CALLS[name](torch)
    if isinstance(theirs, torch.Tensor):
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    else:
        assert tuple(ours) == tuple(theirs)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: plugrad.zeros(2, size=3), "twice"),
        (lambda: plugrad.zeros(), "needs a shape"),
        (lambda: plugrad.zeros(2, 3.0), "several ints"),
        (lambda: plugrad.arange(), "where to stop"),
        (lambda: plugrad.arange(1, 2, end=3), "give one"),
        (lambda: plugrad.eye(), "number of rows"),
        (lambda: plugrad.eye(2, n=2), "give one"),
        (lambda: plugrad.full((2,), plugrad.ones(2)), "0-d tensors"),
    ],
)
def test_keyword_forms_refuse_conflicts_clearly(call: Any, message: str) -> None:
    with pytest.raises((TypeError, ArgumentError, ValueError), match=message):
        call()


SHARED_DTYPES = [
    name
    for name in dir(torch)
    if isinstance(getattr(torch, name), torch.dtype)
    and isinstance(getattr(plugrad, name, None), type(plugrad.float32))
]


@pytest.mark.parametrize("name", SHARED_DTYPES)
def test_dtype_properties_are_pytorchs(name: str) -> None:
    ours, theirs = getattr(plugrad, name), getattr(torch, name)
    for attribute in ("is_floating_point", "is_complex", "is_signed"):
        assert getattr(ours, attribute) == getattr(theirs, attribute), attribute


WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", WINDOWS)
def test_window_functions_as_pytorchs(name: str, backend: str) -> None:
    # (they were missing)
    device = plugrad.device(backend)
    dtypes = ["float32"] + (["float64"] if plugrad.float64 in device.dtypes else [])
    for length in (0, 1, 2, 5, 8):
        for periodic in (True, False):
            for dtype in dtypes:
                theirs = getattr(torch, name)(length, periodic, dtype=getattr(torch, dtype))
                ours = getattr(plugrad, name)(
                    length, periodic, dtype=getattr(plugrad, dtype), device=device
                )
                assert ours.dtype.name == dtype and ours.device == device
                assert ours.shape == tuple(theirs.shape)
                tolerance = 1e-6 if dtype == "float32" else 1e-14
                np.testing.assert_allclose(ours.tolist(), theirs.tolist(), atol=tolerance)
    ours = getattr(plugrad, name)(4, requires_grad=True)
    assert ours.requires_grad and ours.is_leaf and ours.dtype == plugrad.float32


@pytest.mark.parametrize("beta", [12.0, 0.0, 5, -3.0, 60.0])
def test_kaiser_window_takes_its_beta(beta: float) -> None:
    for dtype in ("float32", "float64"):
        ours = plugrad.kaiser_window(64, False, beta, dtype=getattr(plugrad, dtype))
        theirs = torch.kaiser_window(64, False, beta, dtype=getattr(torch, dtype))
        tolerance = {"rtol": 1e-5, "atol": 1e-7} if dtype == "float32" else {"rtol": 1e-12}
        np.testing.assert_allclose(ours.tolist(), theirs.tolist(), **tolerance)
    with pytest.raises(TypeError, match="beta must be a number"):
        plugrad.kaiser_window(4, beta="12")


def test_hamming_window_takes_its_coefficients() -> None:
    ours = plugrad.hamming_window(6, False, 0.5, 0.5)
    np.testing.assert_allclose(ours.tolist(), torch.hann_window(6, False).tolist(), atol=1e-7)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda f: f(-1), InvalidArgumentError, ">= 0"),
        (lambda f: f(3, dtype=plugrad.int64), DtypeError, "real floating"),
        (lambda f: f(3, dtype=plugrad.complex64), DtypeError, "real floating"),
        (lambda f: f(2.0), TypeError, "window_length must be an int"),
        (lambda f: f(True), TypeError, "window_length must be an int"),
        (lambda f: f(3, periodic=1), TypeError, "periodic must be a bool"),
    ],
)
@pytest.mark.parametrize("name", WINDOWS)
def test_window_functions_refuse_bad_arguments(name: str, call, error, match) -> None:
    with pytest.raises(error, match=match):
        call(getattr(plugrad, name))
