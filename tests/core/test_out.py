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
