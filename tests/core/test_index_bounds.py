"""Integer indices out of bounds are refused on every backend, as PyTorch refuses them.

NumPy wraps negative indices and raises its own error past the end; JAX clamps
or reads NaN; PyTorch's gather, index_select, scatter, index_add and
index_copy refuse negative indices, while take, take_along_dim and
index_fill count them from the end. plugrad does what PyTorch does, on all.
"""

from __future__ import annotations

import math
import warnings

import pytest

import plugrad
from plugrad.errors import IndexOutOfRangeError, ScalarRangeError

torch = pytest.importorskip("torch")

REFUSING = {
    "gather": lambda lib, x, i: x.gather(1, i),
    "scatter": lambda lib, x, i: x.scatter(1, i, 9.0),
    "scatter-reduce": lambda lib, x, i: x.scatter(1, i, 9.0, reduce="add"),
    "scatter_add": lambda lib, x, i: x.scatter_add(1, i, lib.ones_like(x[:, :1])),
    "scatter_reduce": lambda lib, x, i: x.scatter_reduce(1, i, lib.ones_like(x[:, :1]), "amax"),
    "index_select": lambda lib, x, i: x.index_select(1, i[:, 0]),
    "index_add": lambda lib, x, i: x.index_add(1, i[:1, 0], lib.ones_like(x[:, :1])),
    "index_copy": lambda lib, x, i: x.index_copy(1, i[:1, 0], lib.ones_like(x[:, :1])),
}
WRAPPING = {
    "take": lambda lib, x, i: lib.take(x, i),
    "take_along_dim": lambda lib, x, i: lib.take_along_dim(x, i, 1),
    "index_fill": lambda lib, x, i: x.index_fill(1, i[:1, 0], 7.0),
}


def _on(device):
    x = plugrad.reshape(plugrad.arange(6.0, device=device), (2, 3))
    return x, lambda rows: plugrad.tensor(rows, device=device)


@pytest.mark.parametrize("name", list(REFUSING))
@pytest.mark.parametrize("rows", [[[-1], [0]], [[3], [0]]], ids=["negative", "past-the-end"])
def test_pytorchs_refusing_index_ops_refuse_on_every_backend(name, rows):
    with pytest.raises((RuntimeError, IndexError)):
        REFUSING[name](torch, torch.arange(6.0).reshape(2, 3), torch.tensor(rows))
    for device in plugrad.backends.available():
        x, index = _on(device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # JAX's int64 note
            with pytest.raises(IndexOutOfRangeError, match=r"out of bounds for dim 1 of size 3"):
                REFUSING[name](plugrad, x, index(rows))


@pytest.mark.parametrize("name", list(WRAPPING))
def test_pytorchs_wrapping_index_ops_count_negative_indices_from_the_end(name):
    expected = WRAPPING[name](torch, torch.arange(6.0).reshape(2, 3), torch.tensor([[-1], [0]]))
    for device in plugrad.backends.available():
        x, index = _on(device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert WRAPPING[name](plugrad, x, index([[-1], [0]])).tolist() == expected.tolist()
            if name != "index_fill":
                with pytest.raises(IndexOutOfRangeError, match="out of bounds"):
                    WRAPPING[name](plugrad, x, index([[-7], [0]]))


def test_take_along_dim_without_dim_refuses_negative_indices_as_pytorch():
    # Indices into the flattened input wrapped (-1 read the last element); PyTorch's refuse
    # them there, and count from the end only along a given dim.
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.take_along_dim(torch.arange(6.0).reshape(2, 3), torch.tensor([1, -1]))
    for device in plugrad.backends.available():
        x, index = _on(device)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert plugrad.take_along_dim(x, index([1, 5])).tolist() == [1.0, 5.0]
            with pytest.raises(IndexOutOfRangeError, match="index -1 is out of bounds"):
                plugrad.take_along_dim(x, index([1, -1]))


def test_a_compiled_function_checks_its_indices_at_every_replay():
    x = plugrad.reshape(plugrad.arange(6.0), (2, 3)).requires_grad_()

    def step(x, i):
        loss = (x.gather(1, i) * 2).sum()
        loss.backward()
        return loss.detach()

    compiled = plugrad.compile(step)
    for _ in range(3):
        compiled(x, plugrad.tensor([[2], [0]]))
    assert compiled.captures == 2  # the first call's backward made x.grad
    with pytest.raises(IndexOutOfRangeError, match=r"gather.*compiled function"):
        compiled(x, plugrad.tensor([[1], [-1]]))
    assert compiled.captures == 2  # the check is part of the plan, not a graph break


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        ("uint8", 300),
        ("uint8", -1.5),
        ("int8", -129),
        ("int32", math.nan),  # no comparison holds for NaN: it was written as INT_MIN
        ("float16", 1e5),
        ("float32", 1e300),
    ],
)
def test_masked_fill_refuses_a_tensor_value_its_dtype_cannot_hold(dtype, value):
    # The value was converted with wrap-around: uint8 masked_fill(tensor(300)) gave 44.
    if getattr(plugrad, dtype) not in plugrad.default_device().dtypes:
        pytest.skip(f"the default backend has no {dtype}")
    mask = [True, False]
    wide = "float64" if isinstance(value, float) else "int64"
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.tensor([1, 2], dtype=getattr(torch, dtype)).masked_fill(
            torch.tensor(mask), torch.tensor(value, dtype=getattr(torch, wide))
        )
    x = plugrad.tensor([1, 2], dtype=getattr(plugrad, dtype))
    with pytest.raises(ScalarRangeError, match="does not fit"):
        x.masked_fill(plugrad.tensor(mask), plugrad.tensor(value, dtype=getattr(plugrad, wide)))
    with pytest.raises(ScalarRangeError, match="does not fit"):
        x.index_fill(0, plugrad.tensor([0]), plugrad.tensor(value, dtype=getattr(plugrad, wide)))
    fits = x.masked_fill(plugrad.tensor(mask), plugrad.tensor(7, dtype=plugrad.int64))
    assert fits.tolist() == [7, 2] and fits.dtype == x.dtype


def test_a_compiled_masked_fill_checks_its_value_at_every_replay():
    compiled = plugrad.compile(lambda x, m, v: x.masked_fill(m, v) * 1)
    x, m = plugrad.tensor([1, 2], dtype=plugrad.uint8), plugrad.tensor([True, False])
    for value in (3, 4, 5):
        assert compiled(x, m, plugrad.tensor(value)).tolist() == [value, 2]
    assert compiled.captures == 1
    with pytest.raises(ScalarRangeError, match=r"masked_fill.*compiled function"):
        compiled(x, m, plugrad.tensor(300))


SMALL_INDEX_CALLS = {
    "take": lambda P, x, i: P.take(x, i),
    "getitem": lambda P, x, i: x[i],
    "gather": lambda P, x, i: P.gather(x[None], 1, i[None]),
    "index_select": lambda P, x, i: P.index_select(x, 0, i),
    "take_along_dim": lambda P, x, i: P.take_along_dim(x, i),
    "scatter_add": lambda P, x, i: P.zeros(200, dtype=x.dtype).scatter_add(0, i, x[:2]),
    "embedding": lambda P, x, i: P.nn.functional.embedding(i, x[:, None]),
}


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint8"])
@pytest.mark.parametrize("call", list(SMALL_INDEX_CALLS))
def test_small_integer_indices_index_on_every_backend(call, dtype) -> None:
    # int8 positions of a 200-long axis: -200 and 200 compared in int8 wrapped (a false "out
    # of bounds" on torch and JAX) or overflowed (Dask, array-api-strict); PyTorch's kernels
    # refused int8, int16 and (gather) int32 indices.
    from plugrad.testing import backends_under_test

    if call == "getitem" and dtype == "uint8":
        pytest.skip("x[uint8 tensor] is refused as ambiguous (a mask in PyTorch)")
    reached = 0 if call == "scatter_add" else 5  # (scatter_add's source is x[:2])
    for backend in backends_under_test():
        with plugrad.use_backend(backend):
            x = plugrad.arange(200.0).requires_grad_()
            index = plugrad.tensor([5, 5], dtype=getattr(plugrad, dtype))
            SMALL_INDEX_CALLS[call](plugrad, x, index).sum().backward()
            assert float(x.grad.sum()) == 2.0, backend
            assert float(x.grad[reached]) == (1.0 if reached == 0 else 2.0), backend
            with pytest.raises(IndexOutOfRangeError):
                plugrad.take(x[:100], plugrad.tensor([120], dtype=getattr(plugrad, dtype)))


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax", "dask", "array_api_strict"])
def test_an_index_past_the_end_of_a_tensor_is_plugrads_error(backend):
    # x[3] and x[tensor([0, 5])] raised a plain IndexError (NumPy's, or the index plan's):
    # not a PlugradError, where gather and index_select raise IndexOutOfRangeError.
    pytest.importorskip(backend)
    with plugrad.use_backend(backend):
        x = plugrad.zeros((3, 4))
        for key in (3, (0, 9), plugrad.asarray([0, 5]), (-4,)):
            with pytest.raises(IndexOutOfRangeError, match="out of bounds"):
                x[key]
            with pytest.raises(IndexOutOfRangeError, match="out of bounds"):
                x[key] = 1.0
        assert float(plugrad.sum(plugrad.abs(x))) == 0.0


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax", "dask", "array_api_strict"])
def test_a_0d_tensor_as_a_slice_bound_indexes_on_every_backend(backend):
    # x[i:4] with i = plugrad.tensor(1) raised Dask's raw TypeError ("Invalid index type"),
    # reading and assigning; NumPy, JAX and torch read the bound through __index__.
    import numpy as np

    pytest.importorskip(backend)
    with plugrad.use_backend(backend):
        x = plugrad.arange(6.0, requires_grad=True)
        i, j = plugrad.tensor(1), plugrad.tensor(2)
        assert x[i:4].tolist() == [1.0, 2.0, 3.0]
        assert x[:j].tolist() == [0.0, 1.0]
        assert x[::j].tolist() == [0.0, 2.0, 4.0]
        assert x[np.int64(1) : np.int32(3)].tolist() == [1.0, 2.0]
        (x[i:4] * 2.0).sum().backward()
        assert x.grad.tolist() == [0.0, 2.0, 2.0, 2.0, 0.0, 0.0]
        y = plugrad.zeros(6)
        y[i:3] = 5.0
        y[plugrad.tensor(4) :] += 1.0
        assert y.tolist() == [0.0, 5.0, 5.0, 0.0, 1.0, 1.0]


def test_binary_cross_entropy_outside_0_1_is_an_invalid_argument():
    with pytest.raises(plugrad.errors.InvalidArgumentError, match=r"must lie in \[0, 1\]"):
        plugrad.nn.functional.binary_cross_entropy(plugrad.tensor([1.5]), plugrad.tensor([1.0]))
    with pytest.raises(RuntimeError):  # PyTorch's error
        torch.nn.functional.binary_cross_entropy(torch.tensor([1.5]), torch.tensor([1.0]))
