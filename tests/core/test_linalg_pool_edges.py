"""Edges of linalg and max pooling that plugrad answered wrongly or with an untyped error,
each compared with ``torch`` on the numpy, torch and jax backends: the gradients of
``det`` (and its neighbours) at empty matrices, ``inv_ex`` of empty matrices leaving the
graph, integer max pooling with padding or ``ceil_mode`` (padded with ``-inf``, which an
integer cannot hold), and ``cholesky`` of a matrix holding NaN (not reported as failing)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import registry
from plugrad.errors import BackendError, LinAlgError

torch = pytest.importorskip("torch")

BACKENDS = ["numpy", "torch", "jax", "dask", "array_api_strict"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each backend in turn (skipped where its library is missing)."""
    name = request.param
    try:
        registry.resolve_device(name)
    except BackendError:
        pytest.skip(f"{name} is not installed")
    with plugrad.use_backend(name):
        yield name


def _has(name: str) -> bool:
    """Whether the current backend has the dtype ``name`` (JAX has no 64-bit ones)."""
    return getattr(plugrad, name) in plugrad.get_default_device().dtypes


def _float() -> str:
    return "float64" if _has("float64") else "float32"


# -- gradients at empty matrices ---------------------------------------------------------------

EMPTY_FUNCTIONS = {
    "det": lambda lib, a: lib.linalg.det(a),
    "slogdet": lambda lib, a: lib.linalg.slogdet(a)[1],
    "logdet": lambda lib, a: lib.logdet(a),
    "inv": lambda lib, a: lib.linalg.inv(a),
    "inv_ex": lambda lib, a: lib.linalg.inv_ex(a).inverse,
    "solve": lambda lib, a: lib.linalg.solve(a, a),
    "matrix_power": lambda lib, a: lib.linalg.matrix_power(a, 3),
    "matrix_power_negative": lambda lib, a: lib.linalg.matrix_power(a, -2),
}


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0)], ids=str)
@pytest.mark.parametrize("function", list(EMPTY_FUNCTIONS))
def test_gradient_at_empty_matrices(backend: str, function: str, shape: tuple[int, ...]) -> None:
    # (det's rule took a maximum over no column: NumPy's and JAX's ValueError, PyTorch's
    # IndexError; inv_ex's result did not depend on A)
    dtype = _float()
    call = EMPTY_FUNCTIONS[function]
    theirs = torch.zeros(shape, dtype=getattr(torch, dtype), requires_grad=True)
    ours = plugrad.zeros(shape, dtype=getattr(plugrad, dtype), requires_grad=True)
    expected, result = call(torch, theirs), call(plugrad, ours)
    assert tuple(result.shape) == tuple(expected.shape)
    assert result.requires_grad == expected.requires_grad
    (want,) = torch.autograd.grad(expected.sum(), theirs)
    (got,) = plugrad.autograd.grad(result.sum(), ours)
    assert got is not None
    assert tuple(got.shape) == tuple(want.shape) == shape
    assert got.dtype == ours.dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_det_gradient_of_a_batch_with_empty_matrices_keeps_the_others(backend: str) -> None:
    dtype = _float()
    values = [[[2.0, 1.0], [1.0, 3.0]]]
    ours = plugrad.tensor(values, dtype=getattr(plugrad, dtype), requires_grad=True)
    theirs = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    plugrad.linalg.det(ours).sum().backward()
    torch.linalg.det(theirs).sum().backward()
    assert ours.grad is not None and theirs.grad is not None
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("shape", [(0, 0), (3, 0, 0)], ids=str)
def test_inv_ex_of_empty_matrices_stays_in_the_graph(backend: str, shape: tuple[int, ...]) -> None:
    dtype = _float()
    theirs = torch.linalg.inv_ex(torch.zeros(shape, requires_grad=True))
    a = plugrad.zeros(shape, dtype=getattr(plugrad, dtype), requires_grad=True)
    result = plugrad.linalg.inv_ex(a)
    assert result.inverse.requires_grad is theirs.inverse.requires_grad is True
    assert tuple(result.inverse.shape) == shape
    assert result.info.tolist() == theirs.info.tolist()
    result.inverse.sum().backward()
    assert a.grad is not None
    assert tuple(a.grad.shape) == shape


# -- integer max pooling with padding ----------------------------------------------------------

_PLANES = np.arange(36).reshape(1, 2, 3, 6) - 20

POOLS: dict[str, tuple[str, Any, dict[str, Any]]] = {
    "ceil_mode": ("max_pool2d", _PLANES, {"kernel_size": 3, "stride": 2, "ceil_mode": True}),
    "padding": ("max_pool2d", _PLANES, {"kernel_size": 3, "stride": 1, "padding": 1}),
    "padding_dilation": (
        "max_pool2d", _PLANES, {"kernel_size": 2, "stride": 2, "padding": 1, "dilation": 2},
    ),
    "3d_padding": (
        "max_pool3d", _PLANES[None], {"kernel_size": (1, 3, 3), "stride": 2, "padding": (0, 1, 1)},
    ),
    "3d_ceil_mode": ("max_pool3d", _PLANES[None], {"kernel_size": 2, "ceil_mode": True}),
}  # fmt: skip


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
@pytest.mark.parametrize("case", list(POOLS))
def test_integer_max_pool_with_padding(backend: str, case: str, dtype: str) -> None:
    # (padded with -inf: PyTorch's full() raised an untyped RuntimeError; NumPy warned, and
    # its int16 and int8 padding was 0, above the negative inputs)
    if not _has(dtype):
        pytest.skip(f"{backend} has no {dtype}")
    name, values, kw = POOLS[case]
    values = values % 100 if dtype == "uint8" else values
    theirs = getattr(torch.nn.functional, name)(
        torch.tensor(values, dtype=getattr(torch, dtype)), return_indices=True, **kw
    )
    ours = getattr(plugrad.nn.functional, name)(
        plugrad.tensor(values, dtype=getattr(plugrad, dtype)), return_indices=True, **kw
    )
    assert ours[0].dtype == getattr(plugrad, dtype)
    np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8"])
def test_integer_max_pool_of_windows_holding_the_lowest_value(backend: str, dtype: str) -> None:
    # The padding's own value in the input: the maximum's index is an input cell's.
    if not _has(dtype):
        pytest.skip(f"{backend} has no {dtype}")
    lowest = int(np.iinfo(dtype).min)
    values = np.full((1, 1, 3, 4), lowest)
    values[0, 0, 2, 3] = 5
    theirs = torch.nn.functional.max_pool2d(
        torch.tensor(values, dtype=getattr(torch, dtype)), 3, 2, 1, return_indices=True
    )
    ours: Any = plugrad.nn.functional.max_pool2d(
        plugrad.tensor(values, dtype=getattr(plugrad, dtype)), 3, 2, 1, return_indices=True
    )
    np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
    np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())


def test_bool_max_pool_with_padding_pads_with_false(backend: str) -> None:
    # (PyTorch refuses bool; -inf as a bool was True, which every window then held, and the
    # torch backend's argmax refused bool)
    values = np.zeros((1, 1, 3, 4), dtype=bool)
    values[0, 0, 0, 0] = True
    expected = torch.nn.functional.max_pool2d(torch.tensor(values, dtype=torch.float32), 3, 2, 1)
    result: Any = plugrad.nn.functional.max_pool2d(plugrad.tensor(values), 3, 2, 1)
    assert result.dtype == plugrad.bool
    np.testing.assert_array_equal(result.numpy(), expected.numpy() > 0)


# -- cholesky of a matrix holding NaN ----------------------------------------------------------

nan = math.nan
CHOLESKY = {
    "nan_first": [[nan, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]],
    "nan_off_diagonal": [[2.0, nan, 0.0], [nan, 3.0, 1.0], [0.0, 1.0, 4.0]],
    "nan_below_only": [[2.0, 1.0, 0.0], [nan, 3.0, 1.0], [0.0, 1.0, 4.0]],
    "nan_above_only": [[2.0, nan, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]],
    "nan_last": [[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, nan]],
    "nan_last_row": [[2.0, 1.0, 0.0], [1.0, 3.0, nan], [0.0, nan, 4.0]],
    "indefinite_then_nan": [[1.0, 2.0, 0.0], [2.0, 1.0, 1.0], [0.0, 1.0, nan]],
}


def _cholesky_pair(values: Any) -> tuple[Any, Any]:
    dtype = _float()
    return (
        plugrad.tensor(values, dtype=getattr(plugrad, dtype)),
        torch.tensor(values, dtype=getattr(torch, dtype)),
    )


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("case", list(CHOLESKY))
def test_cholesky_of_a_matrix_holding_nan(backend: str, case: str, upper: bool) -> None:
    # (NumPy's and JAX's kernels gave an all-NaN factor and info 0)
    ours, theirs = _cholesky_pair(CHOLESKY[case])
    expected = torch.linalg.cholesky_ex(theirs, upper=upper)
    result = plugrad.linalg.cholesky_ex(ours, upper=upper)
    assert result.info.item() == expected.info.item()
    if expected.info.item() == 0:  # NaN in the triangle not read
        np.testing.assert_allclose(result.L.numpy(), expected.L.numpy(), rtol=1e-6)
        assert not math.isnan(float(plugrad.linalg.cholesky(ours, upper=upper).sum()))
        return
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.cholesky(theirs, upper=upper)
    with pytest.raises(LinAlgError, match=r"not positive.definite"):
        plugrad.linalg.cholesky(ours, upper=upper)
    with pytest.raises(LinAlgError, match=f"minor of order {expected.info.item()}"):
        plugrad.linalg.cholesky_ex(ours, upper=upper, check_errors=True)


def test_cholesky_ex_of_a_batch_holding_nan(backend: str) -> None:
    values = [CHOLESKY["nan_last"], np.eye(3).tolist(), CHOLESKY["nan_first"]]
    ours, theirs = _cholesky_pair(values)
    expected = torch.linalg.cholesky_ex(theirs)
    result = plugrad.linalg.cholesky_ex(ours)
    assert result.info.tolist() == expected.info.tolist() == [3, 0, 1]
    np.testing.assert_array_equal(result.L[1].numpy(), expected.L[1].numpy())
    with pytest.raises(LinAlgError, match=r"batch element 0\).*minor of order 3"):
        plugrad.linalg.cholesky_ex(ours, check_errors=True)
