"""The op table of plugins/sorting.py (OpTests runs every check on each row)."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.testing import OpCase, OpTests, backends_under_test

P = plugrad
X = np.array([[3.0, 1.0, 2.0, 1.0], [0.5, -1.0, 7.0, 0.0]])

CASES = [
    OpCase("sort", "sort", P.sort, np.sort, ((3, 5),)),
    OpCase(
        "sort",
        "sort-axis0-descending",
        lambda a: P.sort(a, axis=0, descending=True),
        lambda a: -np.sort(-a, axis=0),
        ((4, 3),),
    ),
]

NO_GRAD = [
    OpCase("argsort", "argsort", P.argsort, lambda a: np.argsort(a, kind="stable"), inputs=[X]),
    OpCase(
        "argsort",
        "argsort-descending",
        lambda a: P.argsort(a, axis=0, descending=True),
        lambda a: np.argsort(-a, axis=0, kind="stable"),
        inputs=[X],
    ),
]


class TestSortingOps(OpTests):
    cases = (*CASES, *NO_GRAD)


def test_sort_with_ties_gives_each_element_one_gradient() -> None:
    x = plugrad.tensor([2.0, 1.0, 2.0], requires_grad=True)
    (plugrad.sort(x) * plugrad.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert sorted(x.grad.tolist()) == [1.0, 10.0, 100.0]
    assert x.grad.tolist()[1] == 1.0


def test_pytorchs_positional_descending():
    # torch.sort(x, 1, True), torch.argsort(x, 0, True), x.argsort(0, True): dim, descending.
    x = P.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    assert P.sort(x, 1, True).values.tolist() == [[3.0, 2.0, 1.0], [5.0, 4.0, 0.0]]
    assert P.argsort(x, 0, True).tolist() == [[0, 1, 1], [1, 0, 0]]
    assert x.argsort(0, True).tolist() == [[0, 1, 1], [1, 0, 0]]
    assert x.sort(1, True).indices.tolist() == [[0, 2, 1], [1, 2, 0]]
    # The standard's keywords still work, and the two forms are not mixed.
    assert P.argsort(x, axis=1, descending=True).tolist() == [[0, 2, 1], [1, 2, 0]]
    with pytest.raises(TypeError):
        P.argsort(x, 0, True, axis=1)


@pytest.mark.parametrize("backend", backends_under_test())
def test_a_stable_descending_sort_keeps_ties_in_their_order_as_argsort(backend):
    # array-api-compat reversed an ascending sort: -0.0 came before 0.0, unlike argsort's order.
    with P.use_backend(backend):
        x = P.asarray(np.array([[1.0, 0.0, -0.0, 0.0, 2.0, -0.0]]))
        values = P.sort(x, axis=1, descending=True)
        picked = P.take_along_axis(x, P.argsort(x, axis=1, descending=True), axis=1)
        assert np.signbit(values.numpy()).tolist() == np.signbit(picked.numpy()).tolist()
        assert values.tolist() == picked.tolist() == [[2.0, 1.0, 0.0, -0.0, 0.0, -0.0]]


def test_topk_of_a_0d_tensor_checks_k_and_dim_as_pytorch():
    # k and dim were ignored (topk(2) and topk(1, 3) gave the element) and the result was
    # sort's named tuple.
    x = P.tensor(4.0)
    for k, dim in ((0, -1), (1, 0), (1, -1)):
        found = x.topk(k, dim)
        assert type(found).__name__ == "topk" and found.values.item() == 4.0
        assert found.indices.item() == 0
    with pytest.raises(plugrad.errors.ShapeError, match="k=2 is out of range"):
        x.topk(2)
    with pytest.raises(plugrad.errors.AxisError, match="dim must be 0 or -1"):
        x.topk(1, 3)
    with pytest.raises(plugrad.errors.AxisError, match="dim must be an int"):
        P.topk(P.tensor([1.0, 2.0]), 1, dim=None)


@pytest.mark.parametrize("k", [2.0, True, "2"])
def test_topk_refuses_a_k_that_is_no_int_naming_it_as_pytorch(k):
    # PyTorch: "topk(): argument 'k' (position 1) must be int, not float"; a float k was
    # refused by slicing ("slice indices must be integers"), a bool taken as 1.
    for x in (P.tensor([1.0, 3.0, 2.0]), P.tensor(1.0)):
        with pytest.raises(TypeError, match=r"^topk\(\): argument 'k' must be int, not "):
            x.topk(k)
    assert P.topk(P.tensor([1.0, 3.0, 2.0]), np.int64(2)).values.tolist() == [3.0, 2.0]
    # kthvalue took a float k as the integer below it (1.5: the smallest).
    with pytest.raises(TypeError, match=r"^kthvalue\(\): argument 'k' must be int, not "):
        P.kthvalue(P.tensor([1.0, 3.0, 2.0]), k)
    assert P.kthvalue(P.tensor([1.0, 3.0, 2.0]), np.int64(2)).values.item() == 2.0


def test_sort_of_a_0d_tensor_is_its_element_as_pytorch():
    # The standard's form raised AxisError (axis -1 of a 0-d array), where x.sort() worked.
    x = P.tensor(3.0, requires_grad=True)
    for kwargs in ({}, {"stable": True}, {"descending": True}, {"axis": 0}):
        assert P.sort(x, **kwargs).item() == 3.0
    (P.sort(x, descending=True) * 2).backward()
    assert x.grad.item() == 2.0
    with pytest.raises(plugrad.errors.AxisError):
        P.sort(x, axis=1)


@pytest.mark.parametrize("backend", backends_under_test())
def test_topk_of_tied_values_takes_the_first_ones_on_every_backend(backend):
    # The order coming_from_pytorch.rst promises (PyTorch's own is its kernel's).
    with plugrad.use_backend(backend):
        largest = plugrad.topk(plugrad.asarray([1.0, 3.0, 3.0, 2.0, 3.0]), 2)
        smallest = plugrad.topk(plugrad.asarray([1.0, 3.0, 1.0, 2.0, 1.0]), 2, largest=False)
        assert largest.indices.tolist() == [1, 2] and smallest.indices.tolist() == [0, 2]
        nan = float("nan")
        x = plugrad.asarray([nan, 1.0, 3.0], requires_grad=True)
        pair = plugrad.aminmax(x)
        (pair.min + pair.max).backward()
        assert x.grad.tolist() == [2.0, 0.0, 0.0]  # the NaN is the minimum and the maximum
