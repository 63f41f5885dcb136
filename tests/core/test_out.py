"""PyTorch's ``out=``: the result is written into a given tensor, which autograd cannot record."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError, DtypeError, ShapeError

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("add", ([1.0, 2.0], [3.0, 4.0])),
        ("multiply", ([1.0, 2.0], 3.0)),
        ("exp", ([0.0, 1.0],)),
        ("matmul", ([[1.0, 2.0], [3.0, 4.0]], [[1.0], [2.0]])),
        ("sum", ([[1.0, 2.0], [3.0, 4.0]],)),
    ],
)
def test_out_receives_the_result_in_place(backend, name, arguments) -> None:
    tensors = [
        plugrad.asarray(np.array(a, np.float32), device=backend) if isinstance(a, list) else a
        for a in arguments
    ]
    expected = getattr(torch, name if name != "multiply" else "mul")(
        *[torch.tensor(a) if isinstance(a, list) else a for a in arguments]
    )
    out = plugrad.empty(tuple(expected.shape), device=backend)
    result = getattr(plugrad, name)(*tensors, out=out)
    assert result is out
    assert out._version == 1
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6)


def test_out_is_refused_while_gradients_are_recorded() -> None:
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    out = plugrad.zeros(2)
    with pytest.raises(ArgumentError, match="autograd cannot record"):
        plugrad.multiply(w, 2.0, out=out)
    assert out.tolist() == [0.0, 0.0] and out._version == 0
    with plugrad.no_grad():
        plugrad.multiply(w, 2.0, out=out)
    assert out.tolist() == [2.0, 4.0] and not out.requires_grad


def test_out_must_have_the_results_shape_and_a_dtype_that_holds_it() -> None:
    x = plugrad.tensor([1.0, 2.0])
    with pytest.raises(ShapeError, match="out= has shape"):
        plugrad.add(x, x, out=plugrad.zeros(3))
    counts = plugrad.zeros(2, dtype=plugrad.int64)
    with pytest.raises(DtypeError, match="cannot hold"):
        plugrad.add(x, x, out=counts)
    assert counts.tolist() == [0, 0]
    wide = plugrad.zeros(2, dtype=plugrad.float64)
    plugrad.add(plugrad.tensor([1, 2]), 1, out=wide)  # int result into a float tensor, as PyTorch
    assert wide.dtype is plugrad.float64 and wide.tolist() == [2.0, 3.0]
    with pytest.raises(TypeError, match="out= takes a Tensor"):
        plugrad.add(x, x, out=np.zeros(2))


def test_an_empty_out_takes_the_results_shape_as_in_pytorch(backend) -> None:
    # PyTorch resizes an out without elements (out=torch.empty(0)); plugrad refused it.
    x = plugrad.asarray(np.arange(6.0, dtype=np.float32).reshape(2, 3), device=backend)
    for call, expected in [
        (lambda o: plugrad.add(x, 1, out=o), np.arange(6.0).reshape(2, 3) + 1),
        (lambda o: plugrad.matmul(x, x.T, out=o), [[5.0, 14.0], [14.0, 50.0]]),
        (lambda o: plugrad.sum(x, 1, out=o), [3.0, 12.0]),
        (lambda o: plugrad.cumsum(x[0], 0, out=o), [0.0, 1.0, 3.0]),
        (lambda o: plugrad.zeros(2, 2, out=o), np.zeros((2, 2))),
    ]:
        out = plugrad.empty(0, device=backend)
        assert call(out) is out
        assert out._version == 1
        np.testing.assert_array_equal(out.numpy(), expected)
    # one with elements stays refused (PyTorch resizes it too, with a warning that it will
    # stop), and a refused dtype leaves an empty one empty
    out = plugrad.empty(7, device=backend)
    with pytest.raises(ShapeError, match=r"out= has shape \(7,\).*an empty one"):
        plugrad.add(x, 1, out=out)
    empty = plugrad.empty(0, dtype=plugrad.int64, device=backend)
    with pytest.raises(DtypeError, match="cannot hold"):
        plugrad.add(x, 1.5, out=empty)
    assert out.shape == (7,) and empty.shape == (0,) and empty._version == 0


def test_out_is_keyword_only_and_left_out_of_views_and_methods() -> None:
    assert inspect.signature(plugrad.add).parameters["out"].kind is inspect.Parameter.KEYWORD_ONLY
    assert "out" not in inspect.signature(plugrad.reshape).parameters
    assert "out" not in inspect.signature(plugrad.Tensor.sum).parameters


def test_out_is_taken_by_ops_with_tensor_parameters_too() -> None:
    # pinv(x, rtol=tensor) reads its tolerance per matrix; that dropped its out=.
    x = plugrad.asarray(np.array([[2.0, 0.0], [0.0, 4.0]], np.float32))
    out = plugrad.empty((2, 2))
    assert plugrad.linalg.pinv(x, out=out) is out
    np.testing.assert_allclose(out.numpy(), [[0.5, 0.0], [0.0, 0.25]])
    positions = plugrad.empty(2, dtype=plugrad.int64)
    plugrad.searchsorted(plugrad.tensor([1.0, 2.0, 3.0]), plugrad.tensor([1.5, 2.5]), out=positions)
    assert positions.tolist() == [1, 2]


_X = [[1.0, 5.0, 2.0], [4.0, 0.0, 3.0]]


@pytest.mark.parametrize(
    ("name", "call"),
    [
        # PyTorch's form of an op (dim by position): out= was refused as "the other form's"
        ("sum", lambda lib, x, out: lib.sum(x, 1, out=out)),
        ("mean", lambda lib, x, out: lib.mean(x, 1, True, out=out)),
        ("amax", lambda lib, x, out: lib.amax(x, 1, out=out)),
        # PyTorch's names with adapters: out= was a raw TypeError
        ("cumsum", lambda lib, x, out: lib.cumsum(x, 1, out=out)),
        ("div", lambda lib, x, out: lib.div(x, 2.0, rounding_mode="floor", out=out)),
        ("norm", lambda lib, x, out: lib.norm(x, out=out)),
        ("nan_to_num", lambda lib, x, out: lib.nan_to_num(x, out=out)),
        ("logcumsumexp", lambda lib, x, out: lib.logcumsumexp(x, 0, out=out)),
        # sequence inputs: cat and stack had no out=
        ("cat", lambda lib, x, out: lib.cat([x, x], 1, out=out)),
        ("stack", lambda lib, x, out: lib.stack([x, x], out=out)),
    ],
)
def test_pytorch_forms_and_names_take_out_as_pytorch(name, call) -> None:
    expected = call(torch, torch.tensor(_X), None)
    out = plugrad.empty(tuple(expected.shape))
    assert call(plugrad, plugrad.tensor(_X), out) is out
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6)
    assert out._version == 1


def test_out_of_a_function_with_two_results_takes_a_pair() -> None:
    values, indices = plugrad.empty(2, 3), plugrad.empty(2, 3, dtype=plugrad.int64)
    result = plugrad.cummax(plugrad.tensor(_X), 1, out=(values, indices))
    assert result.values is values and result.indices is indices
    expected = torch.cummax(torch.tensor(_X), 1)
    assert values.tolist() == expected.values.tolist()
    assert indices.tolist() == expected.indices.tolist()
    with pytest.raises(ArgumentError, match="a tuple of 2 tensors"):
        plugrad.cummax(plugrad.tensor(_X), 1, out=values)
    with pytest.raises(ArgumentError, match="one tensor"):
        plugrad.cumsum(plugrad.tensor(_X), 1, out=(values, indices))


def test_out_of_a_pytorch_name_is_refused_while_gradients_are_recorded() -> None:
    x = plugrad.tensor(_X, requires_grad=True)
    out = plugrad.zeros(2, 3)
    with pytest.raises(ArgumentError, match="autograd cannot record"):
        plugrad.cumsum(x, 1, out=out)
    with pytest.raises(ArgumentError, match="autograd cannot record"):
        plugrad.cat([x, x], out=plugrad.zeros(4, 3))
    with pytest.raises(ArgumentError, match="autograd cannot record"):
        plugrad.hstack([x, x], out=plugrad.zeros(2, 6))  # a list argument of an adapter
    assert out.tolist() == [[0.0] * 3] * 2 and out._version == 0
    assert "out" not in inspect.signature(plugrad.var_mean).parameters  # PyTorch's has none


@pytest.mark.parametrize("name", ["var_mean", "std_mean"])
def test_out_of_a_function_without_one_is_refused_naming_it(name) -> None:
    # PyTorch refuses it too; the message named the adapter (_spread_and_mean.<locals>...).
    x, outs = [[1.0, 2.0], [3.0, 5.0]], (plugrad.zeros(2), plugrad.zeros(2))
    with pytest.raises(TypeError, match="out"):
        getattr(torch, name)(torch.tensor(x), dim=1, out=(torch.zeros(2), torch.zeros(2)))
    with pytest.raises(TypeError, match=rf"^{name}\(\) got an unexpected keyword argument 'out'$"):
        getattr(plugrad, name)(plugrad.tensor(x), dim=1, out=outs)
    with pytest.raises(TypeError, match=r"^median\(\) got an unexpected keyword argument 'dimm'$"):
        plugrad.tensor(x).median(dimm=1)  # a method's too


_M = [[1.0, 0.5], [0.5, 2.0]]  # symmetric positive definite


@pytest.mark.parametrize(
    ("name", "call"),
    [
        # PyTorch's names written as Python functions: out= was a raw TypeError
        ("logsumexp", lambda lib, x, out: lib.logsumexp(x, 1, out=out)),
        ("quantile", lambda lib, x, out: lib.quantile(x, 0.25, dim=1, out=out)),
        ("nanquantile", lambda lib, x, out: lib.nanquantile(x, 0.5, out=out)),
        ("sigmoid", lambda lib, x, out: lib.sigmoid(x, out=out)),
        ("erf", lambda lib, x, out: lib.erf(x, out=out)),
        ("special.erfc", lambda lib, x, out: lib.special.erfc(x, out=out)),
        ("special.xlog1py", lambda lib, x, out: lib.special.xlog1py(x, x, out=out)),
        ("special.ndtr", lambda lib, x, out: lib.special.ndtr(x, out=out)),
        ("lgamma", lambda lib, x, out: lib.lgamma(x, out=out)),
        ("polygamma", lambda lib, x, out: lib.polygamma(1, x, out=out)),
        ("cross", lambda lib, x, out: lib.cross(x, x.flip(1), dim=1, out=out)),
        ("kron", lambda lib, x, out: lib.kron(x, x, out=out)),
        ("inner", lambda lib, x, out: lib.inner(x, x, out=out)),
        ("mv", lambda lib, x, out: lib.mv(x, x[0], out=out)),
        ("inverse", lambda lib, x, out: lib.inverse(lib.tensor(_M), out=out)),
        ("matrix_power", lambda lib, x, out: lib.matrix_power(lib.tensor(_M), 3, out=out)),
        ("addr", lambda lib, x, out: lib.addr(x[:, :2], x[0, :2], x[1, :2], out=out)),
        ("renorm", lambda lib, x, out: lib.renorm(x, 2, 0, 3.0, out=out)),
        ("take_along_dim", lambda lib, x, out: lib.take_along_dim(x, x.argsort(1), 1, out=out)),
        ("polar", lambda lib, x, out: lib.polar(x, x, out=out)),
        ("logaddexp2", lambda lib, x, out: lib.logaddexp2(x, x, out=out)),
        # creation functions: the result takes out's dtype unless dtype= says otherwise
        ("zeros", lambda lib, x, out: lib.zeros(2, 3, out=out)),
        ("full", lambda lib, x, out: lib.full((2, 3), 7.0, out=out)),
        ("arange", lambda lib, x, out: lib.arange(1, 7, out=out)),
        ("linspace", lambda lib, x, out: lib.linspace(0, 1, 5, out=out)),
        ("eye", lambda lib, x, out: lib.eye(3, out=out)),
        ("fft.fftfreq", lambda lib, x, out: lib.fft.fftfreq(6, out=out)),
    ],
)
def test_pytorch_names_written_as_functions_take_out_as_pytorch(name, call) -> None:
    expected = call(torch, torch.tensor(_X), None)
    torch_out = torch.empty(tuple(expected.shape), dtype=expected.dtype)
    assert call(torch, torch.tensor(_X), torch_out) is torch_out  # PyTorch's takes out= too
    dtype = {torch.float32: plugrad.float32, torch.int64: plugrad.int64,
             torch.complex64: plugrad.complex64}[expected.dtype]  # fmt: skip
    out = plugrad.empty(tuple(expected.shape), dtype=dtype)
    assert call(plugrad, plugrad.tensor(_X), out) is out
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    assert out._version == 1


def test_out_of_creation_and_random_functions_takes_outs_dtype() -> None:
    whole = plugrad.empty(5, dtype=plugrad.int32)
    assert plugrad.arange(5, out=whole) is whole and whole.tolist() == [0, 1, 2, 3, 4]
    assert plugrad.randperm(5, out=whole) is whole and sorted(whole.tolist()) == [0, 1, 2, 3, 4]
    wide = plugrad.empty(3, dtype=plugrad.float64)
    assert plugrad.randn(3, out=wide).dtype is plugrad.float64
    narrow = plugrad.empty(3, dtype=plugrad.int64)
    with pytest.raises(DtypeError, match="cannot hold"):  # a float result into an int tensor
        plugrad.ones(3, dtype=plugrad.float32, out=narrow)
    with pytest.raises(ShapeError, match="out= has shape"):
        plugrad.zeros(4, out=wide)
    assert narrow._version == 0 and wide._version == 1


def test_out_of_a_function_with_several_results_or_of_its_method() -> None:
    values, indices = plugrad.empty(2), plugrad.empty(2, dtype=plugrad.int64)
    x = plugrad.tensor([[1.0, 1.0, 2.0], [3.0, 0.0, 0.0]])
    result = plugrad.mode(x, 1, out=(values, indices))
    assert result.values is values and values.tolist() == [1.0, 0.0]
    assert indices.tolist() == torch.mode(torch.tensor(x.tolist()), 1).indices.tolist()
    # PyTorch's methods take no out=, nor do the methods made from these functions
    assert "out" not in inspect.signature(plugrad.Tensor.quantile).parameters
    with pytest.raises(TypeError, match="out"):
        x.quantile(0.5, out=plugrad.empty(()))
    weights = plugrad.tensor([1.0, 2.0], requires_grad=True)
    out = plugrad.zeros(())
    with pytest.raises(ArgumentError, match="autograd cannot record"):
        plugrad.logsumexp(weights, 0, out=out)
    assert out._version == 0 and weights.grad is None


@pytest.mark.parametrize(
    ("call", "shape"),
    [
        (lambda x, o: plugrad.max(x, dim=1, out=(plugrad.zeros(1), o)), (1,)),
        (lambda x, o: plugrad.min(-x, dim=1, out=(plugrad.zeros(1), o)), (1,)),
        (lambda x, o: plugrad.sort(x, dim=1, out=(plugrad.zeros(1, 300), o)), (1, 300)),
        (lambda x, o: plugrad.topk(x, 1, out=(plugrad.zeros(1, 1), o)), (1, 1)),
        (lambda x, o: plugrad.cummax(x, dim=1, out=(plugrad.zeros(1, 300), o)), (1, 300)),
        (lambda x, o: plugrad.argmax(x, dim=1, out=o), (1,)),
        (lambda x, o: plugrad.argsort(x, dim=1, out=o), (1, 300)),
        (lambda x, o: plugrad.searchsorted(x, plugrad.asarray([[299.0]]), out=o), (1, 1)),
    ],
)
@pytest.mark.parametrize("dtype", ["int8", "int32", "float32"])
def test_indices_go_only_into_an_out_of_their_dtype(call, shape, dtype) -> None:
    # An int8 out held position 299 as 43, and a float one took positions as floats.
    x = plugrad.arange(300.0).reshape(1, 300)
    out = plugrad.zeros(shape, dtype=getattr(plugrad, dtype))
    with pytest.raises(DtypeError, match="indices are int64"):
        call(x, out)
    assert not out.any() and out._version == 0
    right = plugrad.zeros(shape, dtype=plugrad.int64)
    call(x, right)
    assert right.max().item() == 299  # the last position, as an int64 out holds it


def test_a_refused_out_of_several_leaves_every_out_as_it_was() -> None:
    # The values were written before the indices' out was found to have the wrong shape.
    x = plugrad.asarray([[3.0, 1.0, 5.0], [2.0, 4.0, 0.0]])
    values, indices = plugrad.zeros(2), plugrad.zeros(7, dtype=plugrad.int64)
    with pytest.raises(ShapeError):
        plugrad.min(x, dim=1, out=(values, indices))
    assert values.tolist() == [0.0, 0.0] and values._version == 0 == indices._version
    low, high = plugrad.zeros(()), plugrad.zeros((), dtype=plugrad.int64)
    with pytest.raises(DtypeError):
        plugrad.aminmax(x, out=(low, high))
    assert low.item() == 0.0 and low._version == 0
