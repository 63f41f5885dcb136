"""Calls from PyTorch's OpInfo sweep that plugrad answered wrongly or with an untyped or
misleading error: bool ``addr`` with integer ``beta``/``alpha``, ``hsplit``/``vsplit``/
``dsplit`` of 0 sections or of a bad list, ``put`` into an empty tensor, ``squeeze`` of a
0-d tensor on every backend, ``gradient`` with its defaults written out, ``gather`` with
an empty index of any shape. Each is compared with ``torch``."""

from __future__ import annotations

from typing import Any

import pytest

import plugrad
from plugrad.errors import (
    ArgumentError,
    AxisError,
    InvalidArgumentError,
    PlugradError,
    ShapeError,
)

torch = pytest.importorskip("torch")


def _both(values: Any, **kw: Any) -> tuple[Any, Any]:
    """``values`` as a plugrad tensor and a torch tensor."""
    dtype = kw.pop("dtype", None)
    mine = plugrad.tensor(values, dtype=getattr(plugrad, dtype) if dtype else None)
    theirs = torch.tensor(values, dtype=getattr(torch, dtype) if dtype else None)
    return mine, theirs


# -- addr of bool tensors ---------------------------------------------------------------------

M = [[True, False, False], [False, False, True]]
V1 = [True, False]
V2 = [True, True, False]


@pytest.mark.parametrize(
    "kw",
    [
        {"beta": 3, "alpha": 2},
        {"beta": -1, "alpha": -1},
        {"beta": 0, "alpha": 2},
        {"beta": 0, "alpha": 0},
        {"alpha": 0},
        {"beta": True, "alpha": False},
        {},
    ],
    ids=str,
)
def test_addr_of_bools_is_logical_as_pytorch(kw: dict[str, Any]) -> None:
    (m, tm), (a, ta), (b, tb) = _both(M), _both(V1), _both(V2)
    theirs = torch.addr(tm, ta, tb, **kw)
    ours = plugrad.addr(m, a, b, **kw)
    assert ours.dtype is plugrad.bool
    assert ours.tolist() == theirs.tolist()
    in_place = m.clone().addr_(a, b, **kw)  # (was a DtypeError: int64 into bool)
    assert in_place.dtype is plugrad.bool and in_place.tolist() == theirs.tolist()


@pytest.mark.parametrize("factor", [1.0, 1.5, 2, True, False, 0])
@pytest.mark.parametrize("name", ["beta", "alpha"])
@pytest.mark.parametrize(
    "dtypes",
    [
        ("int64", "int64"),
        ("bool", "bool"),
        ("bool", "int64"),
        ("float32", "float32"),
        ("int64", "float32"),
    ],
    ids=str,
)
def test_addr_refuses_the_factors_pytorch_refuses(dtypes, name, factor) -> None:
    # A float beta/alpha of integer tensors gave a float32 result (PyTorch refuses it, as
    # its fraction would be dropped), a bool one of float tensors counted as 1 or 0.
    results = []
    for lib in (plugrad, torch):
        try:
            results.append(
                lib.addr(
                    lib.ones((2, 3), dtype=getattr(lib, dtypes[0])),
                    lib.ones(2, dtype=getattr(lib, dtypes[1])),
                    lib.ones(3, dtype=getattr(lib, dtypes[1])),
                    **{name: factor},
                )
            )
        except (RuntimeError, plugrad.errors.PlugradError) as error:
            results.append(error)
    ours, theirs = results
    if isinstance(theirs, Exception):
        assert isinstance(ours, (plugrad.errors.DtypeError, plugrad.errors.ArgumentError)), ours
    else:
        assert not isinstance(ours, Exception), ours
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert ours.tolist() == theirs.tolist()


def test_addr_of_bools_with_ints_still_counts() -> None:
    (m, tm), (a, ta), (b, tb) = _both(M), _both([1, 0]), _both([1, 1, 0])
    ours = plugrad.addr(m, a, b, beta=3, alpha=2)
    theirs = torch.addr(tm, ta, tb, beta=3, alpha=2)
    assert ours.dtype is plugrad.int64 and ours.tolist() == theirs.tolist()


# -- hsplit, vsplit, dsplit ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["hsplit", "vsplit", "dsplit"])
@pytest.mark.parametrize("sections", [0, -2])
def test_split_into_no_sections_is_a_typed_error(name: str, sections: int) -> None:
    with pytest.raises(RuntimeError):  # PyTorch refuses too
        getattr(torch, name)(torch.ones(4, 4, 4), sections)
    x = plugrad.ones(4, 4, 4)
    with pytest.raises(InvalidArgumentError, match=rf"^{name}\(\): the number of sections"):
        getattr(plugrad, name)(x, sections)
    with pytest.raises(InvalidArgumentError, match=rf"^{name}\(\)"):
        getattr(x, name)(sections)


@pytest.mark.parametrize("bad", ["abc", [1.5], [None], ["a"]], ids=repr)
def test_split_at_what_is_not_indices_is_a_typed_error(bad: Any) -> None:
    with pytest.raises(TypeError):  # PyTorch refuses too
        torch.vsplit(torch.ones(4, 4), bad)
    for split in (plugrad.vsplit, plugrad.hsplit, plugrad.tensor_split):
        with pytest.raises(ArgumentError, match="takes an int or a list of ints"):
            split(plugrad.ones(4, 4), bad)


def test_split_at_a_matrix_of_indices_is_a_shape_error() -> None:
    with pytest.raises(RuntimeError):
        torch.tensor_split(torch.ones(4, 4), torch.tensor([[1]]))
    with pytest.raises(ShapeError, match="must be 1-d"):
        plugrad.tensor_split(plugrad.ones(4, 4), plugrad.tensor([[1]]))


def test_split_of_a_tensor_count_checks_it_divides() -> None:
    with pytest.raises(RuntimeError):
        torch.vsplit(torch.ones(4, 4), torch.tensor(3))
    with pytest.raises(ShapeError, match="does not divide into 3 equal parts"):
        plugrad.vsplit(plugrad.ones(4, 4), plugrad.tensor(3))
    ours = plugrad.vsplit(plugrad.ones(4, 4), plugrad.tensor(2))
    theirs = torch.vsplit(torch.ones(4, 4), torch.tensor(2))
    assert [tuple(t.shape) for t in ours] == [tuple(t.shape) for t in theirs]


# -- put into an empty tensor ----------------------------------------------------------------


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("shape", [(0,), (2, 0)])
def test_put_of_nothing_into_an_empty_tensor(backend: Any, shape: tuple, accumulate: bool) -> None:
    x = plugrad.zeros(shape, dtype=plugrad.float64, requires_grad=True)
    index = plugrad.zeros((0,), dtype=plugrad.int64)
    source = plugrad.zeros((0,), dtype=plugrad.float64, requires_grad=True)
    theirs = torch.put(torch.zeros(shape), torch.zeros(0, dtype=torch.long), torch.zeros(0),
                       accumulate=accumulate)  # fmt: skip
    ours = plugrad.put(x, index, source, accumulate=accumulate)
    assert tuple(ours.shape) == tuple(theirs.shape)
    gx, gs = plugrad.autograd.grad(ours.sum(), (x, source))
    assert tuple(gx.shape) == shape and tuple(gs.shape) == (0,)
    in_place = plugrad.zeros(shape).put_(index, plugrad.zeros(0), accumulate=accumulate)
    assert tuple(in_place.shape) == shape
    flat = plugrad.zeros(0).index_put_((index,), plugrad.zeros(0), accumulate=accumulate)
    assert tuple(flat.shape) == (0,)


def test_put_of_an_element_into_an_empty_tensor_is_refused() -> None:
    x = plugrad.zeros(0)
    with pytest.raises(IndexError):
        torch.zeros(0).put_(torch.tensor([0]), torch.tensor([1.0]))
    with pytest.raises(IndexError, match="out of range for an axis of length 0"):
        x.put_(plugrad.tensor([0]), plugrad.tensor([1.0]))
    assert tuple(x.shape) == (0,)


# -- squeeze of a 0-d tensor on every backend ------------------------------------------------


def test_squeeze_of_a_0d_tensor_on_every_backend(installed_backend: str) -> None:
    t = torch.tensor(2.0)
    with plugrad.use_backend(installed_backend):
        x = plugrad.tensor(2.0, requires_grad=True)
        for axis in (0, -1, (0,), [0], ()):
            expected = torch.squeeze(t, axis)
            for ours in (plugrad.squeeze(x, axis), plugrad.squeeze(x, axis=axis), x.squeeze(axis)):
                assert tuple(ours.shape) == tuple(expected.shape) == ()
                assert ours.item() == expected.item()
        (grad,) = plugrad.autograd.grad(plugrad.squeeze(x, 0) * 3.0, x)
        assert grad.item() == 3.0
        for axis in (1, -2):
            with pytest.raises(IndexError):
                torch.squeeze(t, axis)
            with pytest.raises(AxisError, match=r"give one in \[-1, 0\]"):
                plugrad.squeeze(x, axis)
        # 0 and -1 are the same axis of a 0-d tensor: naming both is refused, as PyTorch does
        with pytest.raises(RuntimeError, match="appears multiple times"):
            t.squeeze((0, -1))
        with pytest.raises(ShapeError, match=r"names a.* twice"):
            x.squeeze((0, -1))
        with pytest.raises(ShapeError, match=r"names a.* twice"):
            plugrad.squeeze(x, (0, -1))


def test_squeeze_of_an_axis_out_of_range_names_it(installed_backend: str) -> None:
    with plugrad.use_backend(installed_backend):
        x = plugrad.ones(1, 3)
        # (PyTorch's and Dask's kernels said "tuple index out of range")
        with pytest.raises(AxisError, match=r"dim 2 is out of range .* give one in \[-2, 1\]"):
            plugrad.squeeze(x, 2)
        with pytest.raises(ShapeError, match="names an axis twice"):
            plugrad.squeeze(x, (0, -2))
        assert tuple(plugrad.squeeze(x, [-2]).shape) == (3,)


# -- gradient with PyTorch's defaults written out --------------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        {"spacing": None},
        {"spacing": None, "dim": None},
        {"spacing": None, "dim": None, "edge_order": 1},
        {"spacing": None, "dim": 0, "edge_order": 2},
    ],
    ids=str,
)
def test_gradient_takes_pytorchs_defaults(kw: dict[str, Any]) -> None:
    x, tx = _both([1.0, 4.0, 9.0, 16.0, 30.0], dtype="float64")
    (theirs,) = torch.gradient(tx, **kw)
    (ours,) = plugrad.gradient(x, **kw)
    assert ours.tolist() == pytest.approx(theirs.tolist())


def test_gradient_of_a_0d_spacing_tensor_reads_its_number() -> None:
    x, tx = _both([1.0, 4.0, 9.0, 16.0, 30.0], dtype="float64")
    (theirs,) = torch.gradient(tx, spacing=torch.tensor(2.0))
    (ours,) = plugrad.gradient(x, spacing=plugrad.tensor(2.0))
    assert ours.tolist() == pytest.approx(theirs.tolist())


def test_gradient_of_spacing_none_along_a_dim_of_a_matrix() -> None:
    x, tx = _both([[1.0, 4.0, 9.0], [2.0, 3.0, 7.0]], dtype="float64")
    (ours,) = plugrad.gradient(x, spacing=None, dim=1)
    (theirs,) = torch.gradient(tx, spacing=None, dim=1)
    assert ours.tolist() == theirs.tolist()  # (halves of integer differences: exact)


def test_gradient_edge_order_none_is_refused_as_in_pytorch() -> None:
    with pytest.raises(TypeError):
        torch.gradient(torch.arange(4.0), edge_order=None)
    with pytest.raises(ArgumentError, match="edge_order 1 or 2"):
        plugrad.gradient(plugrad.arange(4.0), edge_order=None)


# -- gather with an empty index --------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "dim", "index_shape"),
    [
        ((4,), 0, (2, 0)),  # more dims than the input
        ((3, 4), 0, (0,)),  # fewer
        ((3, 4), 1, (0, 3, 2)),
        ((3, 4), 0, (0, 5)),  # longer than the input off dim
        ((3, 4), 1, (5, 0)),
        ((), 0, (2, 0)),
    ],
    ids=str,
)
def test_gather_of_an_empty_index_is_empty_of_its_shape(
    backend: Any, shape: tuple, dim: int, index_shape: tuple
) -> None:
    x = plugrad.ones(shape, dtype=plugrad.float64, requires_grad=True)
    index = plugrad.zeros(index_shape, dtype=plugrad.int64)
    theirs = torch.gather(torch.ones(shape), dim, torch.zeros(index_shape, dtype=torch.long))
    for ours in (plugrad.gather(x, dim, index), x.gather(dim, index)):
        assert tuple(ours.shape) == tuple(theirs.shape) == index_shape
        assert ours.dtype is plugrad.float64
        (grad,) = plugrad.autograd.grad(ours.sum(), x)
        assert tuple(grad.shape) == shape and not grad.any()


def test_gather_of_an_empty_index_still_checks_dim_and_dtype() -> None:
    x = plugrad.ones(3, 4)
    with pytest.raises(AxisError):
        plugrad.gather(x, 5, plugrad.zeros(0, dtype=plugrad.int64))
    # PyTorch skips every check for an empty index; a float index is a mistake even so.
    with pytest.raises(PlugradError, match="index must be a tensor of integers"):
        plugrad.gather(x, 0, plugrad.zeros(0))
    with pytest.raises(ShapeError, match="as many dimensions"):  # a non-empty one still
        plugrad.gather(x, 0, plugrad.zeros(2, dtype=plugrad.int64))


# -- tensordot over a length 1 against a longer axis: refused, with PyTorch's way out --------


def test_tensordot_of_a_length_1_against_a_longer_axis_says_how_to_broadcast() -> None:
    # PyTorch's kernel broadcasts the length 1 (summing the other side), undocumented; the
    # standard and NumPy refuse, and so does plugrad, naming the sum that does it.
    a, ta = _both([[[1.0]]])
    b, tb = _both([[[0.0, 1.0]], [[2.0, 3.0]]])
    theirs = torch.tensordot(ta, tb, dims=([0, 1], [2, 0]))
    with pytest.raises(ShapeError, match=r"sum the other tensor over its axis first"):
        plugrad.tensordot(a, b, dims=([0, 1], [2, 0]))
    ours = plugrad.tensordot(a, b.sum((0, 2), keepdim=True), dims=([0, 1], [2, 0]))
    assert ours.tolist() == theirs.tolist()
    with pytest.raises(ShapeError) as error:  # lengths 2 and 3: nothing to broadcast
        plugrad.tensordot(plugrad.ones(2), plugrad.ones(3), dims=1)
    assert "PyTorch" not in str(error.value)
