"""PyTorch's ``dim`` in reductions where the standard's ``axis`` differs, against ``torch``.

A 0-d tensor has one dim (0, or -1) to reduce, to accumulate, to flip, to
scatter and to normalize along; PyTorch's
``dim=()`` reduces every dim for ``sum``/``mean``/``std``/... and none for
``any``/``all``, where the standard's ``axis=()`` reduces none. Each row runs
the same program from the same float64 leaf with both libraries: values, dtypes,
shapes and the gradient of a weighted sum of the outputs must agree.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from torch_compare import assert_agrees

import plugrad
from plugrad.errors import ArgumentError, AxisError, DtypeError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

SCALAR = np.array(1.75)
MATRIX = np.array([[0.5, -1.5, 2.0], [3.0, 1.25, -0.125]])

_REDUCTIONS = ("sum", "mean", "prod", "amax", "amin", "logsumexp", "nansum", "nanmean")
_WITH_INDICES = ("max", "min", "median")
_NO_GRADIENT = ("argmax", "argmin", "all", "any", "count_nonzero")
# std and var of one element with correction 1 are nan (PyTorch warns), their gradient nan.
_SPREADS = ("std", "var")


def _method(name: str, *args: Any, **kwargs: Any) -> Callable[[Any, Any], Any]:
    return lambda lib, x: getattr(x, name)(*args, **kwargs)


def _function(name: str, *args: Any, **kwargs: Any) -> Callable[[Any, Any], Any]:
    return lambda lib, x: getattr(lib, name)(x, *args, **kwargs)


ZERO_D: dict[str, Callable[[Any, Any], Any]] = {}
for _name in _REDUCTIONS + _WITH_INDICES + _NO_GRADIENT + _SPREADS:
    for _dim in (0, -1):
        ZERO_D[f"x.{_name}({_dim})"] = _method(_name, _dim)
        ZERO_D[f"{_name}(x, dim={_dim})"] = _function(_name, dim=_dim)
        if _name not in ("count_nonzero", "nanmean", "nansum"):
            ZERO_D[f"x.{_name}({_dim}, keepdim=True)"] = _method(_name, _dim, keepdim=True)
for _name in ("sum", "mean", "amax", "logsumexp"):
    ZERO_D[f"x.{_name}(dim=(0,))"] = _method(_name, dim=(0,))
    ZERO_D[f"x.{_name}(dim=[-1])"] = _method(_name, dim=[-1])
for _name in ("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"):
    for _dim in (0, -1):
        ZERO_D[f"x.{_name}({_dim})"] = _method(_name, _dim)
        ZERO_D[f"{_name}(x, {_dim})"] = _function(_name, _dim)
# Ops along a dim that are not reductions take a 0-d tensor's dim 0 (or -1) alike.
for _dim in (0, -1):
    ZERO_D[f"x.flip({_dim})"] = _method("flip", _dim)
    ZERO_D[f"flip(x, [{_dim}])"] = lambda lib, x, d=_dim: lib.flip(x, [d])
    ZERO_D[f"x.movedim({_dim}, 0)"] = _method("movedim", _dim, 0)
    ZERO_D[f"x.scatter({_dim}, 0, 2 * x)"] = lambda lib, x, d=_dim: x.scatter(
        d, lib.tensor(0), x * 2
    )
    ZERO_D[f"x.scatter({_dim}, 0, value=3.0)"] = lambda lib, x, d=_dim: x.scatter(
        d, lib.tensor(0), value=3.0
    )
    ZERO_D[f"x.scatter_add({_dim}, 0, 3 * x)"] = lambda lib, x, d=_dim: x.scatter_add(
        d, lib.tensor(0), x * 3
    )
    ZERO_D[f"x.scatter_reduce({_dim}, 0, 2 * x, 'prod')"] = lambda lib, x, d=_dim: x.scatter_reduce(
        d, lib.tensor(0), x * 2, "prod"
    )
    ZERO_D[f"x.index_add({_dim}, [0], 3 * x)"] = lambda lib, x, d=_dim: x.index_add(
        d, lib.tensor([0]), x * 3
    )
    ZERO_D[f"x.index_copy({_dim}, [0], 3 * x)"] = lambda lib, x, d=_dim: x.index_copy(
        d, lib.tensor([0]), x * 3
    )
    ZERO_D[f"x.index_fill({_dim}, [0], 2.0)"] = lambda lib, x, d=_dim: x.index_fill(
        d, lib.tensor([0]), 2.0
    )
    ZERO_D[f"normalize(x, dim={_dim})"] = lambda lib, x, d=_dim: lib.nn.functional.normalize(
        x, dim=d
    )
    ZERO_D[f"cosine_similarity(x, 2 * x, dim={_dim})"] = lambda lib, x, d=_dim: (
        lib.nn.functional.cosine_similarity(x, x * 2, dim=d)
    )
ZERO_D["x.msort()"] = _method("msort")
ZERO_D["cumsum(x, 0, dtype=float32)"] = lambda lib, x: lib.cumsum(x, 0, dtype=lib.float32)
ZERO_D["x.cumsum(0).cumprod(-1) * x"] = lambda lib, x: x.cumsum(0).cumprod(-1) * x


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(ZERO_D))
def test_a_0d_tensor_takes_dim_0_and_minus_1(name: str, backend: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # std/var of one element: degrees of freedom <= 0
        assert_agrees(ZERO_D[name], SCALAR, backend)


def _vs_torch_without_dim(
    ours: Callable[[Any, Any], Any], theirs: Callable[[Any, Any], Any]
) -> Callable[[Any, Any], Any]:
    """``ours`` run by plugrad, ``theirs`` by PyTorch."""
    return lambda lib, x: (ours if lib is plugrad else theirs)(lib, x)


EMPTY_DIM: dict[str, Callable[[Any, Any], Any]] = {}
for _name in ("sum", "mean", "amax", "amin", "nansum", "nanmean", "any", "all"):
    EMPTY_DIM[f"x.{_name}(dim=())"] = _method(_name, dim=())
    EMPTY_DIM[f"{_name}(x, dim=())"] = _function(_name, dim=())
for _name in ("sum", "mean", "amax"):
    EMPTY_DIM[f"x.{_name}(dim=[], keepdim=True)"] = _method(_name, dim=[], keepdim=True)
EMPTY_DIM["x.sum(dim=(), dtype=float32)"] = lambda lib, x: x.sum(dim=(), dtype=lib.float32)
EMPTY_DIM["x.norm(dim=())"] = _method("norm", dim=())
EMPTY_DIM["count_nonzero(x, dim=())"] = _function("count_nonzero", dim=())
EMPTY_DIM["linalg.vector_norm(x, dim=())"] = lambda lib, x: lib.linalg.vector_norm(x, dim=())
# logsumexp(x, dim=()) reduced nothing (x came back); PyTorch's without keepdim raises.
EMPTY_DIM["logsumexp(x, dim=(), keepdim=True)"] = _function("logsumexp", dim=(), keepdim=True)
EMPTY_DIM["special.logsumexp(x, [], True)"] = lambda lib, x: lib.special.logsumexp(x, [], True)
EMPTY_DIM["x.logsumexp((), keepdim=True)"] = _method("logsumexp", (), keepdim=True)
# NOTE: PyTorch 2's std and var reduce every dim for dim=(), but their gradient then is
# inf (its backward reads dim=() as no dim): those rows compare with PyTorch's dim=None,
# and test_std_and_var_of_an_empty_dim_give_pytorchs_values checks the values themselves.
SPREADS_OF_EMPTY_DIM = {
    "x.std(dim=())": (_method("std", dim=()), _method("std", dim=None)),
    "x.var(dim=(), keepdim=True)": (
        _method("var", dim=(), keepdim=True),
        _method("var", dim=None, keepdim=True),
    ),
    "std(x, dim=())": (_function("std", dim=()), _function("std", dim=None)),
    "var(x, dim=())": (_function("var", dim=()), _function("var", dim=None)),
    "std_mean(x, dim=())": (_function("std_mean", dim=()), _function("std_mean", dim=None)),
    "var_mean(x, dim=())": (_function("var_mean", dim=()), _function("var_mean", dim=None)),
}
for _row, (_ours, _theirs) in SPREADS_OF_EMPTY_DIM.items():
    EMPTY_DIM[_row] = _vs_torch_without_dim(_ours, _theirs)


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(EMPTY_DIM))
def test_an_empty_dim_means_what_it_means_in_pytorch(name: str, backend: str) -> None:
    assert_agrees(EMPTY_DIM[name], MATRIX, backend)


@pytest.mark.parametrize("name", list(SPREADS_OF_EMPTY_DIM))
def test_std_and_var_of_an_empty_dim_give_pytorchs_values(name: str) -> None:
    program = SPREADS_OF_EMPTY_DIM[name][0]
    ours = program(plugrad, plugrad.asarray(MATRIX))
    theirs = program(torch, torch.from_numpy(MATRIX.copy()))
    ours, theirs = (ours, theirs) if isinstance(ours, tuple) else ((ours,), (theirs,))
    for a, b in zip(ours, theirs, strict=True):
        assert a.shape == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_the_standards_empty_axis_still_reduces_nothing() -> None:
    x = plugrad.asarray(MATRIX)
    for name in ("sum", "mean", "prod", "std", "var", "max", "min"):
        assert getattr(plugrad, name)(x, axis=()).shape == (2, 3), name


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.argmax(dim=()),
        lambda x: plugrad.argmin(x, dim=()),
        lambda x: x.max(dim=()),
        lambda x: x.min(dim=(0, 1)),
        lambda x: x.median(dim=()),
        lambda x: x.aminmax(dim=()),
    ],
)
def test_a_reduction_of_one_int_dim_refuses_a_tuple_clearly(call: Any) -> None:
    # PyTorch refuses these too (a TypeError); plugrad's ArgumentError is one.
    with pytest.raises(ArgumentError, match="dim"):
        call(plugrad.asarray(MATRIX))


@pytest.mark.parametrize(
    ("name", "call", "fix"),
    [
        ("sum", lambda t, x: t.sum(x, 1.0), "give dim=1"),
        ("logsumexp", lambda t, x: x.logsumexp(1.0), "give dim=1"),
        ("mean", lambda t, x: x.mean(-1.0), "give dim=-1"),
        ("std", lambda t, x: t.std(x, 0.0), "give dim=0"),
        ("argmax", lambda t, x: x.argmax(1.0), "give dim=1"),
        ("sum", lambda t, x: x.sum((0, 1.0)), "give dim=(0, 1)"),
        ("prod", lambda t, x: x.prod(0.5), "0.5"),
    ],
)
def test_a_float_dim_is_refused_naming_the_function_and_dim(name: str, call: Any, fix: str) -> None:
    # PyTorch refuses these with a TypeError; plugrad's kernels raised "'float' object cannot
    # be interpreted as an integer", naming neither the function nor the argument.
    with pytest.raises(TypeError):
        call(torch, torch.tensor(MATRIX))
    message = (
        f"^{name}\\(\\): argument 'dim' must be an int or a tuple of ints, got .*{re.escape(fix)}"
    )
    with pytest.raises(ArgumentError, match=message):
        call(plugrad, plugrad.asarray(MATRIX))


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.mean(1),
        lambda x: x.sum(-2),
        lambda x: x.max(1),
        lambda x: x.std(1),
        lambda x: x.cumsum(1),
        lambda x: plugrad.cumprod(x, -2),
        lambda x: x.argmax(1),
        lambda x: x.flip(1),
        lambda x: x.movedim(0, 1),
        lambda x: x.scatter(1, plugrad.tensor(0), 2.0),
        lambda x: x.index_fill(1, plugrad.tensor([0]), 2.0),
        lambda x: plugrad.nn.functional.normalize(x, dim=1),
    ],
)
def test_a_0d_tensor_has_no_dim_1(call: Any) -> None:
    with pytest.raises(AxisError):
        call(plugrad.asarray(SCALAR))


def test_a_0d_cumulative_sum_keeps_its_shape_and_refuses_an_initial_value() -> None:
    x = plugrad.tensor(2.5, requires_grad=True)
    out = plugrad.cumulative_sum(x)
    assert out.shape == () and float(out) == 2.5
    out.backward()
    assert float(x.grad) == 1.0
    assert plugrad.cumulative_prod(x, axis=-1).shape == ()
    with pytest.raises(ShapeError, match="include_initial"):
        plugrad.cumulative_sum(x, include_initial=True)


ACCUMULATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "x.sum()": lambda lib, x: x.sum(),
    "x.sum(0)": lambda lib, x: x.sum(0),
    "sum(x, dim=0, keepdim=True)": lambda lib, x: lib.sum(x, dim=0, keepdim=True),
    "x.prod()": lambda lib, x: x.prod(),
    "prod(x, 1)": lambda lib, x: lib.prod(x, 1),
    "x.nansum()": lambda lib, x: x.nansum(),
    "x.cumsum(1)": lambda lib, x: x.cumsum(1),
    "cumsum(x, 0)": lambda lib, x: lib.cumsum(x, 0),
    "x.cumprod(1)": lambda lib, x: x.cumprod(1),
    "cumprod(x, dim=0)": lambda lib, x: lib.cumprod(x, dim=0),
    "x.sum(dtype=uint8)": lambda lib, x: x.sum(dtype=lib.uint8),
}


@pytest.mark.parametrize("dtype", ["uint8", "int8", "bool", "int32"])
@pytest.mark.parametrize("call", list(ACCUMULATIONS))
def test_integer_sums_and_products_are_pytorchs_dtype(call: str, dtype: str) -> None:
    # uint8 sums were uint64 (the standard's): x.sum() - 5 wrapped to 18446744073709551614.
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor([[1, 2, 0], [3, 1, 1]], dtype=getattr(lib, dtype))
        out = ACCUMULATIONS[call](lib, x)
        results.append((str(out.dtype).split(".")[-1], (out - 5).tolist()))
    assert results[0] == results[1]


def test_the_standards_sum_of_unsigned_integers_stays_unsigned() -> None:
    x = plugrad.tensor([1, 2], dtype=plugrad.uint8)
    assert plugrad.sum(x).dtype == plugrad.uint64
    assert plugrad.cumulative_sum(x).dtype == plugrad.uint64


STANDARD_SPELLINGS = {
    "x.median(axis=0)": lambda lib, x: x.median(axis=0),
    "x.min(axis=1, keepdims=True)": lambda lib, x: x.min(axis=1, keepdims=True),
    "x.topk(1, axis=0)": lambda lib, x: x.topk(1, axis=0),
    "x.kthvalue(1, axis=0)": lambda lib, x: x.kthvalue(1, axis=0),
    "x.cummax(axis=1)": lambda lib, x: x.cummax(axis=1),
    "x.nansum(axis=0)": lambda lib, x: x.nansum(axis=0),
    "x.argsort(axis=0)": lambda lib, x: x.argsort(axis=0),
    "x.logcumsumexp(axis=1)": lambda lib, x: x.logcumsumexp(axis=1),
    "median(x, axis=1, keepdims=True)": lambda lib, x: lib.median(x, axis=1, keepdims=True),
    # norm's dtype= was refused (TypeError): the input is converted to it first.
    "x.float().norm(dtype=float64)": lambda lib, x: x.float().norm(dtype=lib.float64),
    "norm(x, 1, dim=0, dtype=float64)": lambda lib, x: lib.norm(x, 1, dim=0, dtype=lib.float64),
}


@pytest.mark.parametrize("name", list(STANDARD_SPELLINGS))
def test_pytorchs_forms_take_axis_and_keepdims_as_pytorch_does(name: str) -> None:
    # PyTorch reads axis= as dim= and keepdims= as keepdim= everywhere; these raised TypeError.
    assert_agrees(STANDARD_SPELLINGS[name], MATRIX, "numpy")


def test_a_dim_given_twice_and_a_narrowing_norm_dtype_are_refused() -> None:
    with pytest.raises(ArgumentError, match="both axis= and dim="):
        plugrad.asarray(MATRIX).median(dim=0, axis=0)
    with pytest.raises(DtypeError, match="narrow"):
        plugrad.asarray(MATRIX).norm(dtype=plugrad.float32)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: lib.sort(x, dim=0)[0],
        lambda lib, x: x.sort()[0],
        lambda lib, x: lib.msort(x),
        lambda lib, x: lib.mode(x, dim=-1)[0],
        lambda lib, x: x.flip(0),
    ],
)
@pytest.mark.parametrize("value", [True, 3])
def test_the_values_of_a_0d_sort_keep_the_dtype_as_pytorchs(call, value) -> None:
    # A 0-d sort, msort or mode returned x * 1: int64 for a bool tensor.
    ours, theirs = call(plugrad, plugrad.tensor(value)), call(torch, torch.tensor(value))
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert ours.item() == theirs.item()


def test_mode_of_nans_gives_a_position_that_holds_its_value() -> None:
    # A slice of NaNs gave index -1, and its gradient went to the last element of the
    # slice; each NaN counts as a value seen once, as in PyTorch.
    nan = float("nan")
    x = plugrad.tensor(
        [[nan, nan, nan], [1.0, 2.0, 2.0], [nan, nan, 1.0], [3.0, nan, nan, 3.0][:3]],
        requires_grad=True,
    )
    values, indices = plugrad.mode(x, 1)
    assert indices.tolist() == [2, 2, 2, 0]
    assert plugrad.mode(plugrad.tensor([3.0, nan, nan, 3.0])).values.item() == 3.0
    picked = np.take_along_axis(x.detach().numpy(), indices.numpy()[:, None], axis=1)[:, 0]
    np.testing.assert_array_equal(values.detach().numpy(), picked)
    values.sum().backward()
    assert x.grad.tolist() == [[0, 0, 1.0], [0, 0, 1.0], [0, 0, 1.0], [1.0, 0, 0]]


@pytest.mark.parametrize(
    "call", [lambda x: x.logsumexp(5), lambda x: plugrad.logsumexp(x, (0, 7)), lambda x: x.sort(7)]
)
def test_a_dim_out_of_range_of_a_0d_tensor_is_refused_by_logsumexp_and_sort(call) -> None:
    # They returned the element itself; PyTorch raises, as every other reduction here does.
    x = plugrad.tensor(2.5)
    with pytest.raises(AxisError, match="out of range for a tensor of 0 dimension"):
        call(x)
    assert x.logsumexp(-1).item() == 2.5 and x.sort(0).values.item() == 2.5
