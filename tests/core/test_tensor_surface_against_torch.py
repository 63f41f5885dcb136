"""Tensor methods and operators whose results silently differed from PyTorch's.

A number out of a dtype's range was wrapped by ``fill_``, ``masked_fill`` and
``where`` (300 into ``int8`` gave 44); iterating over a 0-d tensor gave nothing;
``x[t]`` with a 0-d integer tensor ``t`` was a copy, so writing into it missed ``x``;
``index_add`` with a float ``alpha`` turned an integer tensor into a float one; and
``tensor([t1, t2])`` of float64 0-d tensors was float32 (1-element tensors: an extra axis).
"""

from __future__ import annotations

import pytest

import plugrad
from plugrad.errors import DtypeError, ScalarRangeError

torch = pytest.importorskip("torch")

# name -> a call that PyTorch refuses, given the library
OUT_OF_RANGE = {
    "int8 fill_(300)": lambda lib: lib.tensor([1, 2], dtype=lib.int8).fill_(300),
    "int8 fill_(-129)": lambda lib: lib.tensor([1, 2], dtype=lib.int8).fill_(-129),
    "int8 masked_fill(300)": lambda lib: lib.tensor([1, 2], dtype=lib.int8).masked_fill(
        lib.tensor([True, False]), 300
    ),
    "int16 masked_fill_(1e40)": lambda lib: lib.tensor([1, 2], dtype=lib.int16).masked_fill_(
        lib.tensor([True, False]), 1e40
    ),
    "where(c, 300, int8)": lambda lib: lib.where(
        lib.tensor([True, False]), 300, lib.tensor([1, 2], dtype=lib.int8)
    ),
    "float32 fill_(1e40)": lambda lib: lib.tensor([1.0, 2.0]).fill_(1e40),
}


@pytest.mark.parametrize("name", OUT_OF_RANGE)
def test_a_number_out_of_the_dtypes_range_is_refused(name: str):
    x = plugrad.tensor([1, 2], dtype=plugrad.int8)
    with pytest.raises(ScalarRangeError, match="out of the range"):
        OUT_OF_RANGE[name](plugrad)
    with pytest.raises(RuntimeError):
        OUT_OF_RANGE[name](torch)
    assert x.tolist() == [1, 2]


def test_numbers_in_range_and_infinities_are_taken():
    for lib in (plugrad, torch):
        assert lib.tensor([1, 2], dtype=lib.int8).fill_(127).tolist() == [127, 127]
        assert lib.tensor([1.0]).fill_(float("inf")).tolist() == [float("inf")]
        assert lib.where(lib.tensor([True]), -1, lib.tensor([3])).tolist() == [-1]


def test_iterating_over_a_0d_tensor_is_refused_and_rows_are_views():
    for lib in (plugrad, torch):
        with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
            list(lib.tensor(5.0))
        x = lib.zeros(2, 3)
        for row in x:
            row.add_(1)
        assert x.tolist() == [[1.0] * 3] * 2
        assert (1.5 in x, 1.0 in x) == (False, True)


def test_a_0d_integer_tensor_indexes_as_an_int_a_view():
    for lib in (plugrad, torch):
        x = lib.zeros(2, 3)
        x[lib.tensor(1)].add_(1)
        value = x[lib.tensor(0), lib.tensor(2)]
        x.add_(5)
        assert x.tolist() == [[5.0] * 3, [6.0] * 3] and float(value) == 5.0
        leaf = lib.arange(6.0).reshape(2, 3).requires_grad_()
        (leaf[lib.tensor(-1)] * 2).sum().backward()
        assert leaf.grad.tolist() == [[0.0] * 3, [2.0] * 3]


def test_a_float_alpha_for_an_integer_tensor_is_refused():
    x = plugrad.tensor([1, 2])
    for call in (
        lambda: x.add(plugrad.tensor([1, 1]), alpha=1.5),
        lambda: x.index_add(0, plugrad.tensor([0]), plugrad.tensor([5]), alpha=1.5),
        lambda: x.clone().index_add_(0, plugrad.tensor([0]), plugrad.tensor([5]), alpha=1.5),
    ):
        with pytest.raises(DtypeError, match=r"alpha=1\.5 is a float"):
            call()
    assert x.sub(plugrad.tensor([1, 1]), alpha=2).tolist() == [-1, 0]
    with pytest.raises(RuntimeError, match="alpha"):
        torch.tensor([1, 2]).add(torch.tensor([1, 1]), alpha=1.5)


def _made_from_tensors(lib):
    f64, i8 = lib.float64, lib.int8
    calls = [
        lambda: lib.tensor([lib.tensor(1.0, dtype=f64), lib.tensor(2.0, dtype=f64)]),
        lambda: lib.tensor([lib.tensor([1.0]), lib.tensor([2.0])]),
        lambda: lib.tensor([lib.tensor(1, dtype=lib.int32), 2]),
        lambda: lib.tensor([[lib.tensor(1.5, dtype=f64)]]),
        lambda: lib.tensor([lib.tensor(1, dtype=i8), lib.tensor(2, dtype=i8)]),
        lambda: lib.tensor([lib.tensor(True), 2]),
        lambda: lib.tensor([lib.tensor(2, dtype=i8), 1.5]),
    ]
    return [(tuple(r.shape), str(r.dtype).split(".")[-1], r.tolist()) for r in (c() for c in calls)]


def test_a_list_of_one_element_tensors_keeps_their_dtypes():
    # tensor([a.mean(), b.mean()]) of float64 means was float32: digits silently lost.
    assert _made_from_tensors(plugrad) == _made_from_tensors(torch)
    with pytest.raises(ValueError, match="one-element tensors"):
        plugrad.tensor([plugrad.ones(2), plugrad.ones(2)])


def test_comparing_with_none_is_pythons_answer_and_gather_takes_a_0d_index():
    for lib in (plugrad, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        assert (x == None, x != None) == (False, True)  # noqa: E711 (the case itself)
        picked = lib.gather(x, 0, lib.tensor(1))
        picked.backward()
        assert picked.shape == () and picked.tolist() == 2.0 and x.grad.tolist() == [0, 1, 0]
