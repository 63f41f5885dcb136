"""Empty tensors, 0-d tensors, bools and integers where PyTorch gives a result, against ``torch``.

Each case once gave an error (softmax of an empty tensor, clone of a bool tensor,
mean(dtype=)) or a result of another shape or dtype (argsort of a 0-d tensor,
logsumexp of integers) than PyTorch's.
"""

from __future__ import annotations

import numpy as np
import pytest
from torch_compare import assert_agrees

import plugrad
from plugrad.errors import AxisError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

EMPTY_SHAPES = [(0,), (2, 0), (0, 3)]


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("shape", EMPTY_SHAPES)
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_normalizing_an_empty_tensor(name: str, dim: int, shape: tuple[int, ...], backend: str):
    # logsumexp over an empty axis is log(0) = -inf; softmax of nothing is nothing.
    assert_agrees(lambda lib, x: getattr(lib, name)(x, dim=dim), np.zeros(shape), backend)


EMPTY_EXTREMA = {
    "max of nothing": lambda lib, x: lib.max(x.reshape(0)),
    "argmax of nothing": lambda lib, x: lib.argmax(x.reshape(0)),
    "amax over an empty axis": lambda lib, x: lib.amax(x, 0),
    "argmin over an empty axis": lambda lib, x: lib.argmin(x, 0),
    "x.min() of an empty tensor": lambda lib, x: x.min(),
}


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(EMPTY_EXTREMA))
def test_an_extremum_over_an_empty_axis_is_a_shape_error(name: str, backend: str):
    # torch's kernels raised RuntimeError or IndexError; Dask's returned a lazy value.
    with plugrad.use_backend(backend), pytest.raises(ShapeError):
        EMPTY_EXTREMA[name](plugrad, plugrad.zeros((0, 3)))
    with pytest.raises((RuntimeError, IndexError)):
        EMPTY_EXTREMA[name](torch, torch.zeros((0, 3)))
    with plugrad.use_backend(backend):  # over an axis that holds elements: empty, as PyTorch
        assert plugrad.amax(plugrad.zeros((0, 3)), 1).shape == (0,)


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("dims", [1, -2, (0, 1), (0, -2)])
def test_logsumexp_of_an_empty_tensor_checks_its_dims(dims, backend: str):
    # An empty input never reached the backend's check: dim 1 of a 1-D tensor gave -inf.
    with plugrad.use_backend(backend), pytest.raises(AxisError, match="dim"):
        plugrad.logsumexp(plugrad.zeros(0), dim=dims)
    with pytest.raises((IndexError, RuntimeError)):
        torch.logsumexp(torch.zeros(0), dim=dims)


def test_logsumexp_over_every_axis_of_an_empty_tensor_is_minus_inf():
    x = plugrad.zeros((2, 0), requires_grad=True)
    y = plugrad.logsumexp(x, dim=(0, 1))
    assert y.shape == () and float(y) == -np.inf
    y.backward()
    assert x.grad.shape == (2, 0)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_integers_are_normalized_in_the_default_float_dtype(name: str):
    ours = getattr(plugrad, name)(plugrad.tensor([1, 2, 3]), dim=0)
    if name == "logsumexp":  # PyTorch refuses integer softmax; its logsumexp gives float32
        theirs = torch.logsumexp(torch.tensor([1, 2, 3]), dim=0)
    else:
        theirs = getattr(torch, name)(torch.tensor([1.0, 2.0, 3.0]), dim=0)
    assert ours.dtype == plugrad.float32
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("backend", backends_under_test())
def test_argsort_of_a_0d_tensor_is_0d(backend: str):
    assert_agrees(lambda lib, x: lib.argsort(x), np.array(3.0), backend)
    assert_agrees(lambda lib, x: x.argsort(dim=0, descending=True), np.array(3.0), backend)
    with plugrad.use_backend(backend), pytest.raises(IndexError):  # an AxisError
        plugrad.argsort(plugrad.tensor(3.0), axis=1)


@pytest.mark.parametrize("dtype", ["bool", "int64", "uint8", "float32"])
def test_clone_copies_every_dtype(dtype: str):
    x = plugrad.asarray(np.array([1, 0, 1]).astype(dtype))
    for copy in (x.clone(), plugrad.clone(x)):
        assert copy.dtype == x.dtype and copy.tolist() == x.tolist()
        assert copy.array is not x.array and not copy.requires_grad
    copy[0] = 0
    assert x.tolist()[0] == 1


def test_clone_of_a_tensor_that_requires_grad_passes_the_gradient_on():
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    (x.clone() * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("backend", backends_under_test())
def test_mean_with_pytorch_dtype_casts_first(backend: str):
    assert_agrees(lambda lib, x: x.mean(dtype=lib.float64), np.arange(6.0).reshape(2, 3), backend)
    assert_agrees(
        lambda lib, x: lib.mean(x, 1, keepdim=True, dtype=lib.float32),
        np.arange(6.0).reshape(2, 3),
        backend,
    )
    ints = plugrad.tensor([[1, 2], [3, 4]])
    assert ints.mean(dtype=plugrad.float64).dtype == plugrad.float64
    assert ints.mean(1, dtype=plugrad.float32).tolist() == [1.5, 3.5]
    assert plugrad.mean(ints, axis=0, dtype=plugrad.float64).tolist() == [2.0, 3.0]


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_of_an_empty_tensor(name: str):
    assert np.isnan(float(getattr(plugrad.zeros(0), name)()))
    empty = plugrad.zeros(0, dtype=plugrad.int64)
    with pytest.raises(ShapeError, match=f"{name}\\(\\) of an empty"):
        getattr(empty, name)()


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("values", [[False, True, False], [True, False, True], []])
def test_running_extremes_of_bools(name: str, values: list[bool]):
    ours = getattr(plugrad.tensor(values, dtype=plugrad.bool), name)(0)
    theirs = getattr(torch.tensor(values, dtype=torch.bool), name)(0)
    assert ours.values.dtype == plugrad.bool
    assert ours.values.tolist() == theirs.values.tolist()
    assert ours.indices.tolist() == theirs.indices.tolist()


def test_negative_of_bools_is_a_dtype_error_naming_the_op():
    # NumPy's own TypeError came through ("The numpy boolean negative ... is not supported").
    for call in (lambda: -plugrad.tensor([True]), lambda: plugrad.negative(plugrad.tensor([True]))):
        with pytest.raises(plugrad.errors.DtypeError, match=r"negative\(\).*bool"):
            call()
    with pytest.raises(RuntimeError, match="bool tensor is not supported"):
        -torch.tensor([True])


def test_bitwise_ops_of_floats_are_dtype_errors_naming_the_op():
    # NumPy's own TypeError came through ("ufunc 'left_shift' not supported for the input
    # types"); PyTorch refuses them too.
    x = plugrad.tensor([1.0])
    for call, name in ((lambda: x << 1, "bitwise_left_shift"), (lambda: x & x, "bitwise_and")):
        with pytest.raises(plugrad.errors.DtypeError, match=rf"{name}\(\).*float32"):
            call()
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        torch.tensor([1.0]) << 1


def test_argmax_over_an_empty_axis_is_a_shape_error_naming_the_op():
    # NumPy's ValueError ("attempt to get argmax of an empty sequence") came through.
    with pytest.raises(plugrad.errors.ShapeError, match=r"argmax\(\).*\(0, 3\)"):
        plugrad.argmax(plugrad.empty((0, 3)), axis=0)
    with pytest.raises(plugrad.errors.ShapeError, match=r"^max\(\)"):
        plugrad.empty((0, 3)).max(0)
    with pytest.raises(IndexError):
        torch.empty(0, 3).max(0)


EMPTY_DIM_CALLS = {
    "median": lambda lib, x: x.median(1),
    "nanmedian": lambda lib, x: lib.nanmedian(x, dim=1),
    "max": lambda lib, x: x.max(1),
    "min": lambda lib, x: lib.min(x, -1),
    "amax": lambda lib, x: x.amax(1),
    "amin": lambda lib, x: lib.amin(x, (0, 1)),
    "aminmax": lambda lib, x: lib.aminmax(x, dim=1),
    "argmax": lambda lib, x: x.argmax(1),
    "argmin": lambda lib, x: lib.argmin(x, dim=1),
    "kthvalue": lambda lib, x: x.kthvalue(1, 1),
    "mode": lambda lib, x: x.mode(1),
}


@pytest.mark.parametrize("name", list(EMPTY_DIM_CALLS))
def test_a_reduction_picking_along_an_empty_dim_names_the_function_and_dim(name: str):
    # They named an op they are made of (median: "take_along_axis(): index -1 is out of
    # bounds", max: "argmax(): the numpy kernel cannot take ...", aminmax: "min()").
    call = EMPTY_DIM_CALLS[name]
    with pytest.raises(IndexError, match=r"Expected reduction dim -?1 to have non-zero size"):
        call(torch, torch.zeros(3, 0))
    message = rf"^{name}\(\): expected reduction dim -?1 to have non-zero size, .*\(3, 0\)"
    with pytest.raises(plugrad.errors.AxisError, match=message) as raised:
        call(plugrad, plugrad.zeros(3, 0))
    assert isinstance(raised.value, (IndexError, plugrad.errors.ShapeError))


EMPTY_MATRICES = {
    "eigh": lambda lib, a: lib.linalg.eigh(a)[1].abs().sum() + lib.linalg.eigh(a)[0].sum(),
    "svd": lambda lib, a: sum(part.abs().sum() for part in lib.linalg.svd(a)),
    "eig": lambda lib, a: lib.linalg.eig(a)[1].abs().sum() + lib.linalg.eig(a)[0].abs().sum(),
    "cond": lambda lib, a: lib.linalg.cond(a) + a.sum(),
    "cond(p='fro')": lambda lib, a: lib.linalg.cond(a, "fro") + a.sum(),
}


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 2, 2)])
@pytest.mark.parametrize("name", list(EMPTY_MATRICES))
def test_decompositions_of_empty_matrices_and_their_gradients(name: str, shape):
    # backward took max() of no singular value; cond read the first of none
    assert_agrees(EMPTY_MATRICES[name], np.zeros(shape), "numpy")


def test_matrix_exp_of_a_matrix_with_an_infinity_is_nan_as_pytorchs():
    # int() of an infinite number of squarings raised OverflowError
    values = np.array([[[np.inf, 0.0], [0.0, 1.0]], [[1.0, 2.0], [0.0, 1.0]]])
    for batch in (values, values[:1], np.where(np.isinf(values), np.nan, values)):
        assert_agrees(lambda lib, a: lib.linalg.matrix_exp(a.detach()), batch, "numpy")


@pytest.mark.parametrize("bins", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histc_of_equal_values_too_large_to_widen_by_one(bins: int, dtype: str):
    # 1e20 - 1 == 1e20: the bin was 0 / 0, an index of -2**63
    for lib in (plugrad, torch):
        x = lib.full((2,), 1e20, dtype=getattr(lib, dtype))
        counts = lib.histc(x, bins).tolist()
        assert counts == [2.0 if i == bins // 2 else 0.0 for i in range(bins)]
