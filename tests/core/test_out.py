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
