"""PyTorch's functions made of plugrad's ops (``diag_embed``, ``block_diag``, ``bincount``,
``vander``...), run in plugrad and in ``torch`` on the same float64 leaf: values, dtypes,
shapes and gradients agree on every backend under test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from torch_compare import as_tensor as _tensor
from torch_compare import assert_agrees

import plugrad
from plugrad.errors import ArgumentError, DtypeError, InvalidArgumentError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

X = np.arange(1.0, 13.0).reshape(3, 4) / 4
COUNTED = np.array([0, 3, 1, 1, 5, 3, 3])

# name -> program(lib, x); x is a float64 (3, 4) leaf that requires grad.
PROGRAMS: dict[str, Callable[[Any, Any], Any]] = {
    "erf": lambda lib, x: lib.erf(x - 1.5),
    "erfc": lambda lib, x: lib.erfc(x - 1.5),
    "diagflat": lambda lib, x: lib.diagflat(x[:2, :2]),
    "diagflat offset": lambda lib, x: lib.diagflat(x[0], -2),
    "diag_embed": lambda lib, x: lib.diag_embed(x),
    "diag_embed offset": lambda lib, x: lib.diag_embed(x, 2),
    "diag_embed negative offset": lambda lib, x: lib.diag_embed(x, -1),
    "diag_embed dims": lambda lib, x: lib.diag_embed(x, 1, 0, 2),
    "diag_embed reversed dims": lambda lib, x: lib.diag_embed(x, -1, -1, 0),
    "diag_embed vector": lambda lib, x: lib.diag_embed(x[1]),
    "block_diag": lambda lib, x: lib.block_diag(x[:2, :2], x[2], x[0, 0]),
    "block_diag one": lambda lib, x: lib.block_diag(x),
    "block_diag promotes": lambda lib, x: lib.block_diag(x, _tensor(lib, np.array([[1, 2]]))),
    "cartesian_prod": lambda lib, x: lib.cartesian_prod(x[0], x[1, :2], x[2, :3]),
    "cartesian_prod one": lambda lib, x: lib.cartesian_prod(x[0]),
    "bucketize": lambda lib, x: lib.bucketize(x, _tensor(lib, np.array([0.5, 1.0, 2.0]))),
    "bucketize right int32": lambda lib, x: lib.bucketize(
        x, _tensor(lib, np.array([0.5, 1.0, 2.0])), right=True, out_int32=True
    ),
    "bincount": lambda lib, x: lib.bincount(_tensor(lib, COUNTED)),
    "bincount minlength": lambda lib, x: lib.bincount(_tensor(lib, COUNTED), minlength=9),
    # PyTorch differentiates neither bincount nor vander: values here, gradients below.
    "bincount weights": lambda lib, x: lib.bincount(_tensor(lib, COUNTED), x.detach().ravel()[:7]),
    "bincount ints": lambda lib, x: lib.bincount(_tensor(lib, COUNTED), _tensor(lib, [2] * 7)),
    "vander": lambda lib, x: lib.vander(x.detach()[0]),
    "vander N increasing": lambda lib, x: lib.vander(x.detach()[1], N=6, increasing=True),
    "vander N 0": lambda lib, x: lib.vander(x[1], N=0),
    "vander integers": lambda lib, x: lib.vander(_tensor(lib, np.array([1, 2, 3])), 3),
}  # fmt: skip


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_agrees_with_torch(name: str, backend: str) -> None:
    assert_agrees(PROGRAMS[name], X, backend)


def test_gradients_of_bincount_weights_and_vander() -> None:
    counted = plugrad.asarray(COUNTED)
    weights = plugrad.asarray(X.flatten()[:7], requires_grad=True)
    plugrad.bincount(counted, weights).backward(plugrad.arange(6.0, dtype=plugrad.float64))
    np.testing.assert_array_equal(weights.grad.numpy(), COUNTED.astype(float))  # d/dw_i = g[x_i]
    assert plugrad.autograd.gradcheck(
        lambda v: plugrad.vander(v, N=4), (plugrad.asarray(X[0], requires_grad=True),)
    )


def test_bucketize_of_a_number_and_no_blocks() -> None:
    assert plugrad.bucketize(3, plugrad.tensor([1, 3, 5])).tolist() == 1
    assert plugrad.block_diag().shape == (1, 0)
    assert plugrad.bincount(plugrad.tensor([], dtype=plugrad.int64), minlength=2).tolist() == [0, 0]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: plugrad.diag_embed(plugrad.tensor(1.0)), ShapeError, "0-d"),
        (lambda: plugrad.diag_embed(plugrad.ones(2), 0, 0, 0), ShapeError, "two different axes"),
        (lambda: plugrad.diag_embed(plugrad.ones(2), 0, 0, 2), ShapeError, "out of range"),
        (lambda: plugrad.block_diag(plugrad.ones(1, 1, 1)), ShapeError, "at most 2"),
        (lambda: plugrad.cartesian_prod(plugrad.ones(2, 2)), ShapeError, "1-d"),
        (lambda: plugrad.cartesian_prod(), ArgumentError, "at least one"),
        (lambda: plugrad.cartesian_prod(plugrad.ones(2), plugrad.tensor([1])), DtypeError, "dtype"),
        (lambda: plugrad.bucketize(plugrad.ones(2), plugrad.ones(2, 2)), ShapeError, "1-d bound"),
        # RuntimeError as PyTorch's (it was a builtin ValueError only)
        (lambda: plugrad.bincount(plugrad.tensor([-1, 2])), InvalidArgumentError, "non-negative"),
        (lambda: plugrad.bincount(plugrad.tensor([-1, 2])), RuntimeError, "non-negative"),
        # a dtype is what is wrong (it was a ShapeError); PyTorch's NotImplementedError is one too
        (lambda: plugrad.bincount(plugrad.ones(2)), DtypeError, "counts integer values"),
        (lambda: plugrad.bincount(plugrad.ones(2)), RuntimeError, "plugrad.float32"),
        (lambda: plugrad.bincount(plugrad.tensor([True])), DtypeError, "integer values"),
        (lambda: plugrad.bincount(plugrad.ones(2, 2, dtype=plugrad.int64)), ShapeError, "1-d"),
        (lambda: plugrad.bincount(plugrad.tensor([1]), minlength=-1), ArgumentError, "minlength"),
        (lambda: plugrad.bincount(plugrad.tensor([1, 2]), plugrad.ones(3)), ShapeError, "weights"),
        (lambda: plugrad.vander(plugrad.ones(2, 2)), ShapeError, "1-d"),
        (lambda: plugrad.vander(plugrad.ones(2), N=-1), ArgumentError, "N >= 0"),
        (lambda: plugrad.erf([1.0]), TypeError, "takes a Tensor"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_clearly(call: Callable[[], Any], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()
