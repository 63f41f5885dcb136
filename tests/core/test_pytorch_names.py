"""PyTorch's names in plugrad: each one gives what ``torch`` gives on the same input.

One row per name or calling form: a function of a module (``plugrad`` or
``torch``) whose results are compared by value, dtype name and shape.
Random functions are compared by dtype, shape and range, not by value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import plugrad

torch = pytest.importorskip("torch")

SAMPLE = np.array([[1.5, -2.0, 0.25], [3.0, 0.0, -1.0]], dtype=np.float32)


def t(lib: Any, *, requires_grad: bool = False) -> Any:
    return lib.tensor(SAMPLE.tolist(), requires_grad=requires_grad)


# name -> program over a library; both libraries run it and the results must match.
SAME: dict[str, Callable[[Any], Any]] = {
    "float is float32": lambda lib: lib.float is lib.float32,
    "double is float64": lambda lib: lib.double is lib.float64,
    "half is float16": lambda lib: lib.half is lib.float16,
    "long is int64": lambda lib: lib.long is lib.int64,
    "int is int32": lambda lib: lib.int is lib.int32,
    "short is int16": lambda lib: lib.short is lib.int16,
    "cfloat is complex64": lambda lib: lib.cfloat is lib.complex64,
    "cdouble is complex128": lambda lib: lib.cdouble is lib.complex128,
    "zeros(2, 3)": lambda lib: lib.zeros(2, 3),
    "ones(2, 3, dtype=float64)": lambda lib: lib.ones(2, 3, dtype=lib.float64),
    "empty(2, 3).shape": lambda lib: tuple(lib.empty(2, 3).shape),
    "full((2, 3), 7.0)": lambda lib: lib.full((2, 3), 7.0),
    "zeros(size=(2,))": lambda lib: lib.zeros((2,)),
    "from_numpy": lambda lib: lib.from_numpy(SAMPLE.astype(np.float64)),
    "as_tensor(list, dtype)": lambda lib: lib.as_tensor([1, 2], dtype=lib.float64),
    "is_tensor": lambda lib: (lib.is_tensor(t(lib)), lib.is_tensor(SAMPLE)),
    "numel": lambda lib: lib.numel(t(lib)),
    "get_default_dtype": lambda lib: str(lib.get_default_dtype()).split(".")[-1],
    "device('cpu').type/index": lambda lib: (lib.device("cpu").type, lib.device("cpu").index),
    "x.device.type": lambda lib: t(lib).device.type,
    "cuda.is_available": lambda lib: lib.cuda.is_available() and lib.cuda.device_count() > 0,
    "x.size()": lambda lib: tuple(t(lib).size()),
    "x.size(-1)": lambda lib: t(lib).size(-1),
    "x.numel()": lambda lib: t(lib).numel(),
    "x.dim()": lambda lib: t(lib).dim(),
    "x.float()": lambda lib: t(lib).double().float(),
    "x.double()": lambda lib: t(lib).double(),
    "x.half()": lambda lib: t(lib).half(),
    "x.long()": lambda lib: t(lib).long(),
    "x.int()": lambda lib: t(lib).int(),
    "x.short()": lambda lib: t(lib).short(),
    "x.bool()": lambda lib: t(lib).bool(),
    "x.to(float64)": lambda lib: t(lib).to(lib.float64),
    "x.to('cpu')": lambda lib: t(lib).to("cpu"),
    "x.to('cpu', float64)": lambda lib: t(lib).to("cpu", lib.float64),
    "x.to(other)": lambda lib: t(lib).to(lib.zeros(1, dtype=lib.float64)),
    "x.to(dtype=)": lambda lib: t(lib).to(dtype=lib.int64),
    "x.cpu()": lambda lib: t(lib).cpu(),
    "x.type_as(y)": lambda lib: t(lib).type_as(lib.zeros(1, dtype=lib.float64)),
    "x.new_zeros(2, 3)": lambda lib: t(lib).new_zeros(2, 3),
    "x.new_ones((2,))": lambda lib: t(lib).new_ones((2,)),
    "x.new_full((2,), 3)": lambda lib: t(lib).new_full((2,), 3.0),
    "x.new_tensor([1, 2])": lambda lib: t(lib).new_tensor([1.0, 2.0]),
    "x.contiguous()": lambda lib: t(lib).contiguous(),
    "transpose(x, 0, 1)": lambda lib: lib.transpose(t(lib), 0, 1),
    "swapaxes(x, -1, 0)": lambda lib: lib.swapaxes(t(lib), -1, 0),
    "swapdims(x, 1, 0)": lambda lib: lib.swapdims(t(lib), 1, 0),
    "t(x)": lambda lib: lib.t(t(lib)),
    "unsqueeze(x, 1)": lambda lib: lib.unsqueeze(t(lib), 1),
    "x.clone() keeps the graph": lambda lib: _clone_grad(lib),
    "bare @no_grad": lambda lib: lib.no_grad(lambda x: (x * 2).requires_grad)(
        t(lib, requires_grad=True)
    ),
    "to(float64) keeps the graph": lambda lib: _to_grad(lib),
    "np.float32 * x": lambda lib: np.float32(2) * t(lib),
    "x + np.float64": lambda lib: t(lib) + np.float64(0.5),
    "np.int64 - x": lambda lib: np.int64(3) - t(lib),
    "x / np.float64 keeps the graph": lambda lib: _numpy_scalar_grad(lib),
}


def _numpy_scalar_grad(lib: Any) -> Any:
    x = t(lib, requires_grad=True)
    y = x / np.float64(4.0)
    y.sum().backward()
    return (y.detach(), x.grad)


def _clone_grad(lib: Any) -> Any:
    x = t(lib, requires_grad=True)
    (x.clone() * 3).sum().backward()
    return x.grad


def _to_grad(lib: Any) -> Any:
    x = t(lib, requires_grad=True)
    y = x.to(lib.float64)
    (y * y).sum().backward()
    return (y.dtype is lib.float64, x.grad)


def comparable(value: Any) -> Any:
    """Values of either library in one form: NumPy arrays with a dtype name, or plain values."""
    if isinstance(value, plugrad.Tensor | torch.Tensor):
        array = value.detach().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)
        return ("tensor", str(array.dtype), array.shape, array.tolist())
    if isinstance(value, tuple):
        return tuple(comparable(v) for v in value)
    return value


@pytest.mark.parametrize("name", list(SAME))
def test_a_pytorch_name_gives_pytorchs_result(name: str) -> None:
    with plugrad.use_backend("numpy"):
        ours = comparable(SAME[name](plugrad))
    assert ours == comparable(SAME[name](torch))


RANDOM: dict[str, Callable[[Any], Any]] = {
    "randn(2, 3)": lambda lib: lib.randn(2, 3),
    "rand(2, 3, dtype=float64)": lambda lib: lib.rand(2, 3, dtype=lib.float64),
    "randint(0, 5, (4, 2))": lambda lib: lib.randint(0, 5, (4, 2)),
    "randint(5, (3,))": lambda lib: lib.randint(5, (3,)),
    "randn_like": lambda lib: lib.randn_like(t(lib)),
    "rand_like": lambda lib: lib.rand_like(t(lib)),
    "randint_like": lambda lib: lib.randint_like(t(lib), 3),
    "normal(mean, std, size)": lambda lib: lib.normal(0.0, 1.0, (3, 2)),
}


@pytest.mark.parametrize("name", list(RANDOM))
def test_a_random_pytorch_name_gives_pytorchs_dtype_shape_and_range(name: str) -> None:
    with plugrad.use_backend("numpy"):
        plugrad.manual_seed(0)
        ours = np.asarray(RANDOM[name](plugrad))
    theirs = RANDOM[name](torch).numpy()
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    if name.startswith("randint"):
        high = 3 if "like" in name else 5
        assert ours.min() >= 0 and ours.max() < high
    if name.startswith("rand("):
        assert ours.min() >= 0 and ours.max() < 1


def test_the_default_dtype_setter_changes_float_creation_as_in_pytorch() -> None:
    for lib in (plugrad, torch):
        previous = lib.get_default_dtype()
        lib.set_default_dtype(lib.float64)
        try:
            assert lib.tensor([1.5]).dtype is lib.float64
            assert lib.zeros(2).dtype is lib.float64
            assert lib.tensor([1]).dtype is lib.int64
        finally:
            lib.set_default_dtype(previous)
        assert lib.zeros(2).dtype is lib.float32


def test_a_generator_is_seeded_as_in_pytorch_and_shuffles_a_loader_reproducibly() -> None:
    from plugrad.utils.data import DataLoader, TensorDataset

    data = TensorDataset(plugrad.arange(10))
    first = [
        int(b[0][0])
        for b in DataLoader(data, shuffle=True, generator=plugrad.Generator().manual_seed(3))
    ]
    again = [
        int(b[0][0])
        for b in DataLoader(data, shuffle=True, generator=plugrad.Generator().manual_seed(3))
    ]
    assert first == again and sorted(first) == list(range(10))
    generator = plugrad.Generator()
    assert generator.manual_seed(5) is generator and generator.initial_seed() == 5
    with pytest.raises(ValueError, match="seed lies in"):
        generator.manual_seed(-(2**63) - 1)
    assert generator.initial_seed() == 5


def test_pytorchs_dtype_class_and_the_deprecated_clip_grad_norm() -> None:
    # `dtype: torch.dtype = torch.float32` in a signature raised AttributeError at import.
    assert isinstance(plugrad.float32, plugrad.dtype)
    p = plugrad.nn.Parameter(plugrad.ones(2))
    (p * 3).sum().backward()
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        total = plugrad.nn.utils.clip_grad_norm([p], 1.0)
    assert abs(total.item() - 18**0.5) < 1e-5


def test_from_numpy_of_a_numpy_scalar_is_a_type_error() -> None:
    # a warning about a read-only array, then NumPy's raw ValueError ("Unable to avoid copy")
    with pytest.raises(TypeError, match=r"from_numpy\(\) takes a numpy\.ndarray, got float32"):
        plugrad.from_numpy(np.float32(1.0))
    assert plugrad.from_numpy(np.zeros(())).shape == ()


@pytest.mark.parametrize(
    ("indices", "shape"),
    [
        ([4, 1, 11], (3, 4)),
        (5, (3, 4)),
        ([-1, -12], (3, 4)),
        ([12, -13, 25], (3, 4)),  # outside [-n, n): wrapped around, as PyTorch's
        ([[1, 2], [3, 4]], (2, 3)),
        ([7, 23], (2, 3, 4)),
        ([0, 4], 5),
        ([0], ()),
        ([2**40 + 3], (2**30, 2**30)),
    ],
)
def test_unravel_index_is_pytorchs(indices, shape) -> None:
    ours = plugrad.unravel_index(plugrad.tensor(indices), shape)
    theirs = torch.unravel_index(torch.tensor(indices), shape)
    assert len(ours) == len(theirs)
    for got, expected in zip(ours, theirs, strict=True):
        assert got.tolist() == expected.tolist() and got.dtype == plugrad.int64
    small = plugrad.unravel_index(plugrad.tensor([5], dtype=plugrad.uint8), plugrad.Size([2, 3]))
    assert [c.tolist() for c in small] == [[1], [2]]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: plugrad.unravel_index(plugrad.tensor([1.0]), (3,)), plugrad.errors.DtypeError,
         "integer indices"),
        (lambda: plugrad.unravel_index(plugrad.tensor([True]), (3,)), plugrad.errors.DtypeError,
         "integer indices"),
        (lambda: plugrad.unravel_index(plugrad.tensor([1]), (3, -4)), plugrad.errors.ShapeError,
         "positive sizes"),
        (lambda: plugrad.unravel_index(plugrad.tensor([1]), (2, 0)), plugrad.errors.ShapeError,
         "positive sizes"),
        (lambda: plugrad.unravel_index(plugrad.tensor([1]), (2.0, 3)), TypeError, "hold ints"),
        (lambda: plugrad.unravel_index([1, 2], (3,)), TypeError, "takes a Tensor"),
    ],
)  # fmt: skip
def test_unravel_index_refuses_what_it_cannot_unravel(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()
