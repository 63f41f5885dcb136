"""The op table of plugins/manipulation.py (OpTests runs every check on each row)."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.testing import OpCase, OpTests

P = plugrad


CASES = [
    OpCase(
        "reshape", "reshape", lambda a: a.reshape(6, -1), lambda a: a.reshape(6, -1), ((2, 3, 4),)
    ),
    OpCase(
        "permute_dims",
        "permute",
        lambda a: P.permute_dims(a, (2, 0, 1)),
        lambda a: np.transpose(a, (2, 0, 1)),
        ((2, 3, 4),),
    ),
    OpCase(
        "permute_dims",
        "permute-negative",
        lambda a: P.permute_dims(a, (-1, 0, -2)),
        lambda a: np.transpose(a, (2, 0, 1)),
        ((2, 3, 4),),
    ),
    OpCase("permute_dims", "T", lambda a: a.T, lambda a: a.T, ((3, 4),)),
    OpCase(
        "expand_dims",
        "expand_dims",
        lambda a: P.expand_dims(a, axis=-1),
        lambda a: np.expand_dims(a, -1),
        ((2, 3),),
    ),
    OpCase(
        "expand_dims",
        "expand_dims-tuple",
        lambda a: P.expand_dims(a, axis=(0, 2)),
        lambda a: np.expand_dims(a, (0, 2)),
        ((2, 3),),
    ),
    OpCase(
        "squeeze",
        "squeeze",
        lambda a: P.squeeze(a, axis=1),
        lambda a: np.squeeze(a, axis=1),
        ((2, 1, 3),),
    ),
    OpCase(
        "broadcast_to",
        "broadcast_to",
        lambda a: P.broadcast_to(a, (2, 3, 4)),
        lambda a: np.broadcast_to(a, (2, 3, 4)),
        ((3, 1),),
    ),
    OpCase("flip", "flip-all", P.flip, np.flip, ((2, 3),)),
    OpCase(
        "flip",
        "flip-axis",
        lambda a: P.flip(a, axis=(0, 2)),
        lambda a: np.flip(a, (0, 2)),
        ((2, 3, 2),),
    ),
    OpCase("roll", "roll-flat", lambda a: P.roll(a, 4), lambda a: np.roll(a, 4), ((2, 3),)),
    OpCase(
        "roll",
        "roll-axes",
        lambda a: P.roll(a, (1, -2), axis=(0, 1)),
        lambda a: np.roll(a, (1, -2), axis=(0, 1)),
        ((3, 4),),
    ),
    OpCase(
        "concat",
        "concat-axis1",
        lambda a, b, c: P.concat([a, b, c], axis=1),
        lambda a, b, c: np.concatenate([a, b, c], axis=1),
        ((2, 1), (2, 3), (2, 2)),
    ),
    OpCase(
        "concat",
        "concat-flat",
        lambda a, b: P.concat((a, b), axis=None),
        lambda a, b: np.concatenate([a.ravel(), b.ravel()]),
        ((2, 2), (3,)),
    ),
    OpCase(
        "concat",
        "concat-same-tensor-twice",
        lambda a: P.concat([a, a * 2.0]),
        lambda a: np.concatenate([a, a * 2.0]),
        ((3,),),
    ),
    OpCase(
        "stack",
        "stack",
        lambda a, b: P.stack([a, b], axis=-1),
        lambda a, b: np.stack([a, b], axis=-1),
        ((2, 3), (2, 3)),
    ),
    OpCase(
        "unstack",
        "unstack",
        lambda a: P.unstack(a, axis=1)[0] * 2.0 + P.unstack(a, axis=1)[2],
        lambda a: a[:, 0] * 2.0 + a[:, 2],
        ((2, 3),),
    ),
    OpCase(
        "moveaxis",
        "moveaxis",
        lambda a: P.moveaxis(a, (0, 1), (-1, 0)),
        lambda a: np.moveaxis(a, (0, 1), (-1, 0)),
        ((2, 3, 4),),
    ),
    OpCase("repeat", "repeat-flat", lambda a: P.repeat(a, 2), lambda a: np.repeat(a, 2), ((2, 3),)),
    OpCase(
        "repeat",
        "repeat-counts",
        lambda a: P.repeat(a, P.asarray(np.array([2, 0, 3])), axis=1),
        lambda a: np.repeat(a, [2, 0, 3], axis=1),
        ((2, 3),),
    ),
    OpCase("tile", "tile", lambda a: P.tile(a, (2, 3)), lambda a: np.tile(a, (2, 3)), ((2, 2),)),
    OpCase(
        "tile",
        "tile-more-reps",
        lambda a: P.tile(a, (2, 1, 2)),
        lambda a: np.tile(a, (2, 1, 2)),
        ((3,),),
    ),
    OpCase(
        "tile", "tile-fewer-reps", lambda a: P.tile(a, (2,)), lambda a: np.tile(a, (2,)), ((2, 3),)
    ),
    OpCase(
        "broadcast_arrays",
        "broadcast_arrays",
        lambda a, b: P.broadcast_arrays(a, b)[0] * P.broadcast_arrays(a, b)[1],
        lambda a, b: a * b,
        ((3, 1), (4,)),
    ),
]


class TestManipulationOps(OpTests):
    cases = CASES


def test_multi_output_results_are_separate_tensors_with_their_own_edges() -> None:
    x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    a, b = plugrad.unstack(x)
    assert a.grad_fn is b.grad_fn and a.grad_fn.n_outputs == 2
    assert repr(a.grad_fn) == "<UnstackBackward>"
    (b * 3.0).sum().backward()  # a takes no part: its gradient is zeros
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 0.0], [3.0, 3.0]])


def test_sequence_inputs_each_get_an_edge() -> None:
    a = plugrad.tensor([1.0], requires_grad=True)
    b = plugrad.tensor([2.0, 3.0])
    c = plugrad.tensor([4.0], requires_grad=True)
    out = plugrad.concat([a, b, c])
    assert len(out.grad_fn.next_functions) == 3
    assert out.grad_fn.next_functions[1] == (None, 0)
    (out * plugrad.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert a.grad.tolist() == [1.0] and c.grad.tolist() == [4.0] and b.grad is None


def test_sequence_input_errors_name_the_element() -> None:
    import pytest

    with pytest.raises(TypeError, match=r"arrays\[1\]"):
        plugrad.stack([plugrad.ones(2), np.ones(2)])
    with pytest.raises(TypeError, match="list or tuple"):
        plugrad.concat(plugrad.ones(2))


def test_repeating_a_0d_tensor_along_its_one_axis_has_a_gradient(on_numpy) -> None:
    # NumPy repeats a 0-d array along axis 0; the gradient divided by its zero dimensions.
    x = plugrad.tensor(3.0, requires_grad=True)
    y = x.repeat_interleave(2, 0)
    (y * plugrad.tensor([1.0, 10.0])).sum().backward()
    assert y.tolist() == [3.0, 3.0] and x.grad.item() == 11.0


@pytest.mark.parametrize(
    "split",
    [
        lambda lib, a, b: lib.broadcast_tensors(a, b),
        lambda lib, a, b: lib.meshgrid(a, b.reshape(-1), indexing="ij"),
    ],
    ids=["broadcast_tensors", "meshgrid"],
)
def test_an_input_whose_output_is_not_used_gets_no_gradient_as_in_pytorch(split) -> None:
    # It got zeros: code that skips parameters whose .grad is None saw a gradient.
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (plugrad, torch):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = lib.tensor([[1.0], [2.0]], requires_grad=True)
        first, _ = split(lib, a, b)
        (first * 2).sum().backward()
        grads.append((a.grad.tolist(), b.grad))
    assert grads[0] == grads[1] and grads[0][1] is None
