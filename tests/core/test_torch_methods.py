"""Tensor methods with PyTorch's meaning: values, indices and gradients against ``torch``.

One row per calling form: a program over a library and a leaf tensor of that
library. Both libraries run it from the same values; every tensor it returns
(values, indices, pieces) must agree, and so must the gradient of a weighted
sum of its float outputs with respect to the leaf. Runs on every backend under
test; PyTorch is the oracle only.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

# Distinct values: ties would let the libraries pick different (equally right) indices.
X = np.array([[0.5, -1.25, 2.0, 0.75], [3.0, 0.25, -2.5, 1.5], [-0.125, 1.75, 1.0, -3.0]])
MASK = X > 0.6
INDEX = np.array([[2, 0], [1, 3], [0, 0]])
ROWS = np.array([2, 0, 2])


def _tensor(lib: Any, value: np.ndarray) -> Any:
    return lib.asarray(value) if lib is plugrad else torch.from_numpy(value.copy())


# name -> program(lib, x); x is a float64 (3, 4) leaf that requires grad.
PROGRAMS: dict[str, Callable[[Any, Any], Any]] = {
    "view(4, 3)": lambda lib, x: x.view(4, 3),
    "view((2, -1))": lambda lib, x: x.view((2, -1)),
    "view(-1)": lambda lib, x: x.view(-1),
    "flatten()": lambda lib, x: x.reshape(3, 2, 2).flatten(),
    "flatten(1)": lambda lib, x: x.reshape(3, 2, 2).flatten(1),
    "flatten(0, 1)": lambda lib, x: x.reshape(3, 2, 2).flatten(0, 1),
    "flatten() of 0-d": lambda lib, x: x[0, 0].flatten(),
    "permute(1, 0)": lambda lib, x: x.permute(1, 0),
    "permute((1, 0))": lambda lib, x: x.permute((1, 0)),
    "t()": lambda lib, x: x.t(),
    "t() of 1-d": lambda lib, x: x[0].t(),
    "expand(2, 3, 4)": lambda lib, x: x.expand(2, 3, 4),
    "expand(-1, 4) of (3, 1)": lambda lib, x: x[:, :1].expand(-1, 4),
    "expand((2, -1, -1))": lambda lib, x: x.expand((2, -1, -1)),
    "expand_as": lambda lib, x: x[:1].expand_as(x),
    "repeat(2, 1)": lambda lib, x: x.repeat(2, 1),
    "repeat(2, 1, 3)": lambda lib, x: x.repeat(2, 1, 3),
    "repeat((1, 2))": lambda lib, x: x.repeat((1, 2)),
    "repeat_interleave(2, dim=0)": lambda lib, x: x.repeat_interleave(2, dim=0),
    "squeeze()": lambda lib, x: x[:1, None].squeeze(),
    "squeeze(0)": lambda lib, x: x[:1].squeeze(0),
    "squeeze(1) of size 4 keeps it": lambda lib, x: x.squeeze(1),
    "squeeze(dim=-2)": lambda lib, x: x[:, None].squeeze(dim=-2),
    "dot": lambda lib, x: x[0].dot(x[1]),
    "outer": lambda lib, x: x[0].outer(x[1, :3]),
    "norm()": lambda lib, x: x.norm(),
    "norm(1)": lambda lib, x: x.norm(1),
    "norm(2, 1)": lambda lib, x: x.norm(2, 1),
    "norm(dim=0, keepdim=True)": lambda lib, x: x.norm(dim=0, keepdim=True),
    "norm(p='fro', dim=(0, 1))": lambda lib, x: x.norm(p="fro", dim=(0, 1)),
    "norm(float('inf'), 1)": lambda lib, x: x.norm(float("inf"), 1),
    "norm('nuc')": lambda lib, x: x.norm("nuc"),
    "topk(2)": lambda lib, x: tuple(x.topk(2)),
    "topk(2, dim=0)": lambda lib, x: tuple(x.topk(2, dim=0)),
    "topk(3, largest=False)": lambda lib, x: tuple(x.topk(3, largest=False)),
    "topk(2).values": lambda lib, x: x.topk(2).values,
    "max()": lambda lib, x: x.max(),
    "max(1)": lambda lib, x: tuple(x.max(1)),
    "max(dim=0, keepdim=True)": lambda lib, x: tuple(x.max(dim=0, keepdim=True)),
    "max(1).indices": lambda lib, x: x.max(1).indices,
    "max(other)": lambda lib, x: x.max(x.flip(1)),
    "min()": lambda lib, x: x.min(),
    "min(0)": lambda lib, x: tuple(x.min(0)),
    "min(-1, True).values": lambda lib, x: x.min(-1, True).values,
    "sort()": lambda lib, x: tuple(x.sort()),
    "sort(0)": lambda lib, x: tuple(x.sort(0)),
    "sort(dim=1, descending=True)": lambda lib, x: tuple(x.sort(dim=1, descending=True)),
    "sort(stable=True).indices": lambda lib, x: x.sort(stable=True).indices,
    "argsort(1, descending=True)": lambda lib, x: x.argsort(1, descending=True),
    "gather(1, index)": lambda lib, x: x.gather(1, _tensor(lib, INDEX)),
    "gather(0, index)": lambda lib, x: x.gather(0, _tensor(lib, INDEX % 3)),
    "gather(1, smaller index)": lambda lib, x: x.gather(1, _tensor(lib, INDEX[:2, :1])),
    "index_select(0, rows)": lambda lib, x: x.index_select(0, _tensor(lib, ROWS)),
    "index_select(1, rows)": lambda lib, x: x.index_select(1, _tensor(lib, ROWS)),
    "masked_fill(mask, 0.0)": lambda lib, x: x.masked_fill(_tensor(lib, MASK), 0.0),
    "masked_fill(mask, -inf)": lambda lib, x: x.masked_fill(_tensor(lib, MASK), float("-inf")),
    "where(cond, y)": lambda lib, x: x.where(_tensor(lib, MASK), x * x),
    "where(cond, 0.0)": lambda lib, x: x.where(_tensor(lib, MASK), 0.0),
    "chunk(2)": lambda lib, x: x.chunk(2),
    "chunk(3, 1)": lambda lib, x: x.chunk(3, 1),
    "chunk(4, dim=1)": lambda lib, x: x.chunk(4, dim=1),
    "split(2)": lambda lib, x: x.split(2),
    "split(3, 1)": lambda lib, x: x.split(3, 1),
    "split([1, 3], dim=1)": lambda lib, x: x.split([1, 3], dim=1),
    "unbind(1)": lambda lib, x: x.unbind(1),
    "std()": lambda lib, x: x.std(),
    "std(1)": lambda lib, x: x.std(1),
    "std(0, keepdim=True)": lambda lib, x: x.std(0, keepdim=True),
    "std(unbiased=False)": lambda lib, x: x.std(unbiased=False),
    "std(1, False)": lambda lib, x: x.std(1, False),
    "std(dim=1, correction=0)": lambda lib, x: x.std(dim=1, correction=0),
    "std(False)": lambda lib, x: x.std(False),
    "var()": lambda lib, x: x.var(),
    "var(0)": lambda lib, x: x.var(0),
    "var(1, keepdim=True)": lambda lib, x: x.var(1, keepdim=True),
    "var(correction=2)": lambda lib, x: x.var(correction=2),
    "var(dim=(0, 1), unbiased=False)": lambda lib, x: x.var(dim=(0, 1), unbiased=False),
    "type(float32)": lambda lib, x: x.type(lib.float32),
    "diag_embed(1, dim1=0, dim2=2)": lambda lib, x: x.diag_embed(1, dim1=0, dim2=2),
    # Python types as dtypes, as PyTorch takes them (refused: "not a dtype")
    "sum(dtype=float)": lambda lib, x: x.sum(dtype=float),
    "cumsum(0, dtype=float)": lambda lib, x: x.cumsum(0, dtype=float),
    "softmax(0, dtype=float)": lambda lib, x: x.softmax(0, dtype=float),
    "erf()": lambda lib, x: x.erf(),
    "exp2()": lambda lib, x: x.exp2(),
    "frac()": lambda lib, x: x.frac(),
    "deg2rad()": lambda lib, x: x.deg2rad(),
    "rad2deg()": lambda lib, x: x.rad2deg(),
    "sgn() + x": lambda lib, x: x.sgn() + x,  # PyTorch gives sgn alone a ZeroTensor gradient
    "fix()": lambda lib, x: x.fix(),
    "ravel()": lambda lib, x: x.t().ravel(),
    "torch.exp2(x)": lambda lib, x: lib.exp2(x),
    "torch.ravel(x)": lambda lib, x: lib.ravel(x),
    # Functions called as PyTorch calls them, where the standard has no such call.
    "torch.flatten(x, 1)": lambda lib, x: lib.flatten(x.reshape(3, 2, 2), 1),
    "torch.flatten(x)": lambda lib, x: lib.flatten(x),
    "torch.flatten(x, start_dim=0, end_dim=1)": lambda lib, x: lib.flatten(
        x.reshape(3, 2, 2), start_dim=0, end_dim=1
    ),
    "torch.max(x, 1)": lambda lib, x: tuple(lib.max(x, 1)),
    "torch.max(x, dim=0, keepdim=True)": lambda lib, x: tuple(lib.max(x, dim=0, keepdim=True)),
    "torch.max(x, 1, True)": lambda lib, x: tuple(lib.max(x, 1, True)),
    "torch.max(x)": lambda lib, x: lib.max(x),
    "torch.max(x, other)": lambda lib, x: lib.max(x, x.flip(1)),
    "torch.min(x, -1)": lambda lib, x: tuple(lib.min(x, -1)),
    "torch.min(x, other)": lambda lib, x: lib.min(x, x.flip(0)),
    "torch.sort(x, 1)": lambda lib, x: tuple(lib.sort(x, 1)),
    "torch.sort(x, dim=0, descending=True)": lambda lib, x: tuple(
        lib.sort(x, dim=0, descending=True)
    ),
    "torch.std(x, 1)": lambda lib, x: lib.std(x, 1),
    "torch.std(x, dim=0, keepdim=True)": lambda lib, x: lib.std(x, dim=0, keepdim=True),
    "torch.var(x, 1, unbiased=False)": lambda lib, x: lib.var(x, 1, unbiased=False),
    "torch.var(x, dim=1, correction=2)": lambda lib, x: lib.var(x, dim=1, correction=2),
    "torch.squeeze(x)": lambda lib, x: lib.squeeze(x[:1, None]),
    "torch.sum(x, 1)": lambda lib, x: lib.sum(x, 1),
    "torch.sum(x, (0, 1), True)": lambda lib, x: lib.sum(x, (0, 1), True),
    "torch.sum(x, 1, dtype=float32)": lambda lib, x: lib.sum(x, 1, dtype=lib.float32),
    "torch.sum(x, [0], keepdim=True)": lambda lib, x: lib.sum(x, [0], keepdim=True),
    "torch.mean(x, 0)": lambda lib, x: lib.mean(x, 0),
    "torch.mean(x, dim=1, keepdim=True)": lambda lib, x: lib.mean(x, dim=1, keepdim=True),
    "torch.prod(x, 1)": lambda lib, x: lib.prod(x, 1),
    "torch.argmax(x, 1)": lambda lib, x: lib.argmax(x, 1),
    "torch.argmin(x, 0, True)": lambda lib, x: lib.argmin(x, 0, True),
    "torch.all(x > 0, 1)": lambda lib, x: lib.all(x > 0, 1),
    "torch.any(x > 2, dim=0)": lambda lib, x: lib.any(x > 2, dim=0),
    "torch.cat([x, x], 1)": lambda lib, x: lib.cat([x, x], 1),
    "torch.cat((x, x), dim=0)": lambda lib, x: lib.cat((x, x), dim=0),
    "torch.stack([x, x], 1)": lambda lib, x: lib.stack([x, x], 1),
    "torch.cumsum(x, 1)": lambda lib, x: lib.cumsum(x, 1),
    "torch.cumprod(x, dim=0)": lambda lib, x: lib.cumprod(x, dim=0),
    "torch.argsort(x, 1)": lambda lib, x: lib.argsort(x, 1),
    "torch.argsort(x, dim=0, descending=True)": lambda lib, x: lib.argsort(
        x, dim=0, descending=True
    ),
    "torch.squeeze(x, dim=1) of size 4 keeps it": lambda lib, x: lib.squeeze(x, dim=1),
    "torch.squeeze(x, dim=0)": lambda lib, x: lib.squeeze(x[:1], dim=0),
    "torch.squeeze(x, 0)": lambda lib, x: lib.squeeze(x[:1], 0),
}


def _run(lib: Any, name: str) -> tuple[list[np.ndarray], np.ndarray | None]:
    x = _tensor(lib, X)
    x.requires_grad_(True)
    out = PROGRAMS[name](lib, x)
    outs = list(out) if isinstance(out, tuple) else [out]
    loss = None
    for i, o in enumerate(outs):
        if o.dtype in (lib.float32, lib.float64) and o.requires_grad:
            weight = _tensor(lib, np.linspace(0.5, 1.5, int(np.prod(o.shape))).reshape(o.shape))
            term = (o * (weight * (i + 1))).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    values = [np.asarray(o.detach().numpy()) for o in outs]
    grad = None if x.grad is None else np.asarray(x.grad.detach().numpy())
    return values, grad


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_method_gives_pytorchs_values_and_gradients(name: str, backend: str) -> None:
    with plugrad.use_backend(backend):
        ours, our_grad = _run(plugrad, name)
    theirs, their_grad = _run(torch, name)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        assert str(a.dtype) == str(b.dtype)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    if their_grad is None:
        assert our_grad is None
    else:
        np.testing.assert_allclose(our_grad, their_grad, rtol=1e-12, atol=1e-12)


def test_type_names_the_tensor_type_or_converts() -> None:
    x = plugrad.asarray(X)
    assert x.type() == "plugrad.DoubleTensor"
    assert x.type("torch.DoubleTensor") is x
    assert x.type("torch.LongTensor").dtype is plugrad.int64
    assert x.type(plugrad.float64) is x
    # The legacy tensor types themselves, PyTorch's old idiom (refused as not a dtype).
    assert x.type(plugrad.LongTensor).tolist() == torch.tensor(X).type(torch.LongTensor).tolist()
    assert x.type(plugrad.DoubleTensor, non_blocking=True) is x
    for dtype in (
        torch.bool,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.float16,
        torch.float32,
        torch.float64,
        torch.complex64,
        torch.complex128,
    ):
        target = getattr(plugrad, str(dtype).split(".")[1])
        if target is plugrad.float16 and not _has_float16():
            with pytest.raises(plugrad.errors.DtypeError, match="float16"):
                x.type(target)  # a backend without float16 (Dask) says so
            continue
        ours = x.type(target)
        assert ours.type().split(".")[1] == torch.zeros(1, dtype=dtype).type().split(".")[1]


def _has_float16() -> bool:
    try:
        plugrad.zeros(1, dtype=plugrad.float16)
    except plugrad.errors.DtypeError:
        return False
    return True


def test_the_named_tuples_have_pytorchs_fields() -> None:
    x = plugrad.asarray(X)
    for result in (x.max(1), x.min(0), x.sort(), x.topk(2), plugrad.max(x, 1), plugrad.sort(x, 0)):
        values, indices = result
        assert result.values is values and result.indices is indices
        assert indices.dtype is plugrad.int64
        # As torch.return_types: picklable, so results can cross process boundaries.
        copy = pickle.loads(pickle.dumps(result))
        assert type(copy) is type(result) and type(copy).__module__ == "plugrad.return_types"
        np.testing.assert_array_equal(copy.indices.numpy(), indices.numpy())
        np.testing.assert_array_equal(copy.values.numpy(), values.numpy())
        assert type(result).__name__ in ("max", "min", "sort", "topk")  # torch.return_types'


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        # the library's own words: NumPy's, PyTorch's, Dask's
        (lambda x: x.t().view(-1), ShapeError, "without a copy|view size is not compatible"),
        (lambda x: x.view(5), ShapeError, "cannot reshape|invalid for input of size|new array"),
        (lambda x: x.reshape(3, 2, 2).t(), ShapeError, "at most 2 dimensions"),
        (lambda x: x.expand(4), ShapeError, "at least one size per dimension"),
        (lambda x: x.squeeze(5), ShapeError, "out of range"),
        (lambda x: x.transpose(0, -3), ShapeError, "out of range"),
        (lambda x: x.expand(-1, 3, 4), ShapeError, "new leading dimension"),
        (lambda x: x.repeat(2), ShapeError, "one count per dimension"),
        (lambda x: x.flatten(1, 0), ShapeError, "start_dim comes after end_dim"),
        (lambda x: x.split([1, 1]), ShapeError, "add up to 2"),
        (lambda x: x.chunk(0), ShapeError, "must be positive"),
        (lambda x: x.topk(5), ShapeError, "out of range"),
        (lambda x: x.dot(x), ShapeError, "two 1-D tensors"),
        (lambda x: x.std(unbiased=True, correction=1), ArgumentError, "pass only one"),
        (lambda x: x.max(dim=1, axis=1), ArgumentError, "pass only one"),
        (lambda x: x.squeeze(dim=0, axis=0), ArgumentError, "pass only one"),
        (lambda x: plugrad.max(x, 1, keepdims=True), ArgumentError, "wholly in one form"),
        (lambda x: plugrad.max(x, dim=1, axis=1), ArgumentError, "pass only one"),
        # PyTorch's form takes out= too, refused (as every out=) while x requires grad
        (lambda x: plugrad.std(x, 1, out=plugrad.empty(3)), ArgumentError, "cannot record"),
        (lambda x: plugrad.std(x, 1, keepdims=True), ArgumentError, "wholly in one form"),
        (lambda x: plugrad.squeeze(x, dim=0, axis=0), ArgumentError, "pass only one"),
        (lambda x: plugrad.flatten(x, 1, 0), ShapeError, "start_dim comes after end_dim"),
        (lambda x: x.type("torch.NoSuchTensor"), TypeError, "tensor type name"),
        (lambda x: x.type(3), TypeError, "takes a dtype"),
    ],
)
@pytest.mark.parametrize("backend", backends_under_test())
def test_bad_calls_are_refused_and_change_nothing(call, error, message, backend) -> None:
    with plugrad.use_backend(backend):
        x = plugrad.asarray(X)
    x.requires_grad_(True)
    with pytest.raises(error, match=message):
        call(x)
    assert x.grad is None and x._version == 0


def test_the_namespace_keeps_the_standards_meaning() -> None:
    x = plugrad.asarray(X)
    # Functions: the standard; methods: PyTorch.
    np.testing.assert_allclose(plugrad.std(x).numpy(), X.std())
    np.testing.assert_allclose(x.std().numpy(), X.std(ddof=1))
    np.testing.assert_allclose(plugrad.var(x, axis=0).numpy(), X.var(axis=0))
    assert plugrad.max(x, axis=1).shape == (3,)
    assert isinstance(x.max(1), tuple)
    assert plugrad.sort(x).shape == (3, 4)
    # Calls the standard also has keep its meaning; PyTorch's own forms give PyTorch's.
    np.testing.assert_allclose(plugrad.std(x, axis=1).numpy(), X.std(axis=1))
    np.testing.assert_allclose(plugrad.std(x, 1).numpy(), X.std(axis=1, ddof=1))
    assert not isinstance(plugrad.max(x, axis=1, keepdims=True), tuple)
    assert isinstance(plugrad.max(x, dim=1), tuple)
    assert plugrad.sort(x, axis=0, descending=True).shape == (3, 4)
    with pytest.raises(ShapeError):
        plugrad.squeeze(x, 1)  # the standard: axis must name size-1 axes
    np.testing.assert_array_equal(plugrad.repeat(x, 2, axis=0).numpy(), np.repeat(X, 2, axis=0))
    np.testing.assert_array_equal(x.repeat(2, 1).numpy(), np.tile(X, (2, 1)))
    np.testing.assert_array_equal(plugrad.where(plugrad.asarray(MASK), x, 0.0).numpy(),
                                  np.where(MASK, X, 0.0))  # fmt: skip


def test_dtype_methods_take_pytorchs_memory_format_and_to_checks_its_rank() -> None:
    x = plugrad.ones(2, 3).mT
    for name in ("float", "double", "half", "long", "int", "short", "bool", "char", "byte"):
        if name == "half" and not _has_float16():
            continue
        assert getattr(x, name)(memory_format=plugrad.preserve_format).shape == (3, 2)
        converted = getattr(x, name)(memory_format=plugrad.contiguous_format)
        assert converted.is_contiguous() and converted.tolist() == x.tolist()
    # to() checked the rank of channels_last only without a tensor's rank to check against.
    for call in (
        lambda t: t.to(memory_format=plugrad.channels_last),
        lambda t: t.double(memory_format=plugrad.channels_last),
    ):
        with pytest.raises(ValueError, match="4-dimensional"):
            call(plugrad.zeros(3))
        assert call(plugrad.zeros(1, 2, 3, 4)).shape == (1, 2, 3, 4)


def test_module_type_casts_every_parameter_buffer_and_gradient() -> None:
    def cast(lib):
        norm = lib.nn.BatchNorm1d(2)
        norm(lib.tensor([[1.0, 2.0], [3.0, 5.0]])).sum().backward()
        norm.type(lib.DoubleTensor)
        tensors = [norm.weight, norm.weight.grad, norm.running_var, norm.num_batches_tracked]
        return [str(t.dtype).split(".")[1] for t in tensors], norm.running_var.tolist()

    assert cast(plugrad) == cast(torch)
    linear = plugrad.nn.Linear(2, 2)
    (linear.weight * 2).sum().backward()
    before = linear.weight.tolist(), linear.weight.grad.tolist()
    with pytest.raises(plugrad.errors.DtypeError, match="nothing was converted"):
        linear.type(plugrad.int64)  # parameters require grad: refused, all left as they were
    assert (linear.weight.tolist(), linear.weight.grad.tolist()) == before
    assert linear.weight.dtype is plugrad.float32


def test_positive_and_conj_of_a_real_tensor_are_the_tensor_itself_as_pytorchs() -> None:
    # They were copies: a later in-place change of x did not show in them, as it does in
    # PyTorch's (which return x itself).
    x = plugrad.tensor([1.0, -2.0], requires_grad=True)
    assert x.positive() is x and x.conj() is x
    assert plugrad.positive(x) is not x  # the standard's function: a new array
    z = plugrad.tensor([1 + 2j])
    assert z.conj().tolist() == [1 - 2j] and z.conj() is not z
    with pytest.raises(plugrad.errors.DtypeError, match="no bool"):
        plugrad.tensor([True]).positive()
