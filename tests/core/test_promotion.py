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
