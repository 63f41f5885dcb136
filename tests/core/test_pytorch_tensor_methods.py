"""PyTorch's Tensor methods made of plugrad's ops (``index_add``, ``unfold``, ``quantile``,
``cov``...), run in plugrad and in ``torch`` on the same float64 leaf: values, dtypes,
shapes and gradients agree on every backend under test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from torch_compare import as_tensor as _tensor
from torch_compare import assert_agrees

import plugrad
from plugrad.errors import ArgumentError, AxisError, DtypeError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

X = np.array([[0.5, -1.25, 2.0, 3.5], [1.5, 0.25, -0.75, 4.0], [2.5, -3.0, 1.0, 0.0]])
ROWS = np.array([2, 0, 2])


def _ix(lib: Any, values: Any) -> Any:
    return _tensor(lib, np.array(values))


def _nan_above(lib: Any, x: Any, limit: float) -> Any:
    return lib.where(x > limit, float("nan"), x)


def _clone(x: Any) -> Any:
    return x * 1.0  # a non-leaf copy, which in-place methods may change


# name -> program(lib, x); x is a float64 (3, 4) leaf that requires grad.
PROGRAMS: dict[str, Callable[[Any, Any], Any]] = {
    "index_add": lambda lib, x: lib.index_add(x, 0, _ix(lib, ROWS), x * x),
    "x.index_add alpha": lambda lib, x: x.index_add(1, _ix(lib, [3, 3]), x[:, :2], alpha=-2.0),
    "x.index_add_": lambda lib, x: _clone(x).index_add_(0, _ix(lib, ROWS), x.exp()),
    "index_copy": lambda lib, x: lib.index_copy(x, 1, _ix(lib, [3, 0]), x[:, 1:3] * 2),
    "x.index_copy_": lambda lib, x: _clone(x).index_copy_(0, _ix(lib, [1]), x[2:] + 1),
    "index_fill": lambda lib, x: lib.index_fill(x, 1, _ix(lib, [0, 2]), -1.5),
    "x.index_fill_ tensor value": lambda lib, x: _clone(x).index_fill_(0, _ix(lib, [2]), x[0, 0]),
    "x.unfold": lambda lib, x: x.unfold(1, 2, 1),
    "x.unfold step": lambda lib, x: x.unfold(1, 3, 2),
    "x.unfold rows": lambda lib, x: x.unfold(0, 2, 1),
    "x.unfold whole": lambda lib, x: x.unfold(-1, 4, 4),
    "x.fill_diagonal_": lambda lib, x: _clone(x).fill_diagonal_(7.0),
    "x.fill_diagonal_ wrap": lambda lib, x: _clone(x.mT).fill_diagonal_(-2.0, wrap=True),
    "quantile": lambda lib, x: lib.quantile(x, 0.3),
    "quantile dim": lambda lib, x: lib.quantile(x, 0.75, dim=1),
    "quantile many": lambda lib, x: lib.quantile(x, _tensor(lib, np.array([0.1, 0.5, 1.0])), dim=0),
    "quantile keepdim": lambda lib, x: lib.quantile(x, _tensor(lib, np.array([0.2, 0.9])), 1, True),
    "quantile keepdim all": lambda lib, x: lib.quantile(x, 0.4, keepdim=True),
    "quantile lower": lambda lib, x: lib.quantile(x, 0.4, 1, interpolation="lower"),
    "quantile higher": lambda lib, x: lib.quantile(x, 0.4, 1, interpolation="higher"),
    "quantile midpoint": lambda lib, x: lib.quantile(x, 0.4, 1, interpolation="midpoint"),
    "quantile nearest": lambda lib, x: lib.quantile(x, 0.5, 1, interpolation="nearest"),
    "x.quantile": lambda lib, x: x.quantile(0.6, dim=-1),
    "nanquantile": lambda lib, x: lib.nanquantile(_nan_above(lib, x, 2.2), 0.5, dim=1),
    "nanquantile all": lambda lib, x: lib.nanquantile(_nan_above(lib, x, 2.2), 0.3),
    "quantile with nan": lambda lib, x: lib.quantile(_nan_above(lib, x, 3.8), 0.5, dim=1),
    "cov": lambda lib, x: lib.cov(x),
    "cov correction 0": lambda lib, x: lib.cov(x.mT, correction=0),
    "cov fweights": lambda lib, x: lib.cov(x, fweights=_ix(lib, [1, 2, 0, 3])),
    "cov aweights": lambda lib, x: lib.cov(x, aweights=_ix(lib, [0.5, 1.0, 2.0, 1.0])),
    "cov both weights": lambda lib, x: lib.cov(
        x, fweights=_ix(lib, [1, 2, 1, 3]), aweights=_ix(lib, [0.5, 1.0, 2.0, 1.0])
    ),
    "cov vector": lambda lib, x: lib.cov(x[0]),
    "corrcoef": lambda lib, x: lib.corrcoef(x),
    "x.corrcoef": lambda lib, x: x.mT.corrcoef(),
    "histc": lambda lib, x: lib.histc(x.detach(), bins=5, min=-2, max=3),
    "histc range of data": lambda lib, x: lib.histc(x.detach(), bins=4),
    "x.sum_to_size": lambda lib, x: x.sum_to_size(1, 4),
    "x.sum_to_size columns": lambda lib, x: (x.reshape(1, 3, 4) * 2).sum_to_size((3, 1)),
    "x.split_with_sizes": lambda lib, x: x.split_with_sizes([1, 3], dim=1),
    "hsplit": lambda lib, x: lib.hsplit(x, 2),
    "vsplit sections": lambda lib, x: lib.vsplit(x, [1]),
    "dsplit": lambda lib, x: lib.dsplit(x.reshape(3, 2, 2), 2),
    "logaddexp2": lambda lib, x: lib.logaddexp2(x, x.flip(0) * 3),
    # (PyTorch's gradient of ldexp is 0 where the exponent is negative: not compared there.)
    "ldexp": lambda lib, x: lib.ldexp(x, _ix(lib, [[1, 2, 3, 0]] * 3)),
    "x.ldexp_": lambda lib, x: (lambda y: (y.ldexp_(_ix(lib, [[1, 2, 3, 0]] * 3)), y)[1])(x * 1.0),
    # float32: PyTorch's angle of a real tensor is float32's pi, even in float64.
    "angle": lambda lib, x: lib.angle(x.detach().float()),
    "isposinf": lambda lib, x: lib.isposinf(x.detach() / 0.0),
    "isneginf": lambda lib, x: lib.isneginf(x.detach() / 0.0),
    "isreal": lambda lib, x: lib.isreal(x),
}  # fmt: skip


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_agrees_with_torch(name: str, backend: str) -> None:
    with np.errstate(divide="ignore", invalid="ignore"):
        assert_agrees(PROGRAMS[name], X, backend)


def test_facts_of_a_tensor() -> None:
    x = plugrad.ones(2, 3, dtype=plugrad.float64)
    assert (x.itemsize, x.nbytes) == (8, 48)
    assert x.is_signed() and plugrad.tensor([1]).is_signed()
    assert not plugrad.tensor([1], dtype=plugrad.uint8).is_signed()
    assert not plugrad.tensor([True]).is_signed()
    assert plugrad.isreal(plugrad.tensor([1 + 0j, 1j])).tolist() == [True, False]
    assert plugrad.angle(plugrad.tensor([1j])).tolist() == [pytest.approx(np.pi / 2)]
    assert plugrad.angle(plugrad.tensor([-2.0], dtype=plugrad.float64)).tolist() == [np.pi]
    assert plugrad.ldexp(plugrad.tensor([3.0]), plugrad.tensor([-1])).tolist() == [1.5]


def test_unfold_is_a_copy_that_refuses_changes_which_would_not_reach_its_input() -> None:
    # PyTorch's unfold is a view: x.unfold(1, 2, 2).fill_(0) zeroes x there; plugrad's copy
    # took the change and left x as it was, without a word.
    x = plugrad.arange(12.0).reshape(3, 4)
    windows = x.unfold(1, 2, 2)
    with pytest.raises(plugrad.errors.ViewCopyError, match="unfold"):
        windows.fill_(0)
    with pytest.raises(plugrad.errors.ViewCopyError, match="unfold"):
        windows[0].zero_()
    with pytest.raises(plugrad.errors.ViewCopyError, match="unfold"):
        x.add_(1)
    assert x.sum().item() == 66 and windows.sum().item() == 66
    assert x.unfold(0, 2, 1).clone().fill_(0).sum().item() == 0  # a clone changes on purpose
    windows = None
    x.add_(1)  # once the windows are gone, x changes
    assert x.sum().item() == 78


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda x: x.index_add(2, plugrad.tensor([0]), x[:1]), ShapeError, "out of range"),
        (lambda x: x.index_add(0, plugrad.tensor([[0]]), x[:1]), ShapeError, "1-d tensor"),
        (lambda x: x.index_add(0, plugrad.tensor([0.0]), x[:1]), DtypeError, "integers"),
        (lambda x: x.index_add(0, plugrad.tensor([True]), x[:1]), DtypeError, "for a mask"),
        (lambda x: x.index_add(0, plugrad.tensor([0.0]), x[:1]), DtypeError, r"index\.long\(\)"),
        (lambda x: x.index_add(0, plugrad.tensor([0, 1]), x[:1]), ShapeError, "source must have"),
        (lambda x: x.index_fill(0, plugrad.tensor([0]), plugrad.ones(2)), ShapeError, "0-d tensor"),
        (lambda x: x.unfold(1, 5, 1), ShapeError, "size <= 4"),
        (lambda x: x.unfold(1, 2, 0), ShapeError, "step > 0"),
        (lambda x: x[0].fill_diagonal_(1.0), ShapeError, "matrix"),
        (lambda x: plugrad.quantile(x, 1.5), ArgumentError, r"\[0, 1\]"),
        (lambda x: plugrad.quantile(x, 0.5, interpolation="cubic"), ArgumentError, "interpolation"),
        (lambda x: plugrad.quantile(plugrad.tensor([1, 2]), 0.5), DtypeError, "real floating"),
        (lambda x: plugrad.quantile(x, plugrad.ones(2, 2)), ShapeError, "1-d tensor"),
        (lambda x: plugrad.cov(x.reshape(1, 3, 4)), ShapeError, "1-d or 2-d"),
        (lambda x: plugrad.cov(x, fweights=plugrad.tensor([1, 2])), ShapeError, "fweights"),
        (lambda x: plugrad.cov(x, fweights=plugrad.tensor([1, -2, 1, 1])), ArgumentError, "negat"),
        # Fractional counts and corrections were taken (PyTorch refuses both).
        (lambda x: plugrad.cov(x, fweights=plugrad.tensor([1.5, 1, 1, 1])), DtypeError, "integer"),
        (lambda x: plugrad.cov(x, correction=1.5), TypeError, "correction must be an int"),
        (lambda x: plugrad.cov(x, correction=True), TypeError, "correction must be an int"),
        (lambda x: plugrad.histc(x, bins=0), ArgumentError, "bins"),
        (lambda x: plugrad.histc(x, min=2, max=1), ArgumentError, "min must not exceed max"),
        (lambda x: x.sum_to_size(2, 4), ShapeError, "not expandable"),
        (lambda x: plugrad.hsplit(x, 3), ShapeError, "equal parts"),
        (lambda x: plugrad.dsplit(x, 2), ShapeError, "at least 3 dims"),
        (lambda x: plugrad.flatten(x.sum(), 1), AxisError, "out of range"),  # was shape (1,)
        # A dim out of range was wrapped (gather(2) of a matrix gathered along dim 0), an
        # integer mask gathered at its values, and tril of a vector built a matrix.
        (lambda x: x.gather(2, plugrad.tensor([[1, 2]])), AxisError, "out of range"),
        (lambda x: x.gather(-3, plugrad.tensor([[1, 2]])), AxisError, "out of range"),
        (lambda x: x.scatter(2, plugrad.tensor([[1]]), 5.0), AxisError, "out of range"),
        (lambda x: x.scatter_add_(2, plugrad.tensor([[1]]), x[:1, :1]), AxisError, "out of range"),
        (lambda x: x.scatter_reduce(-3, plugrad.tensor([[1]]), x, "sum"), AxisError, "range"),
        (lambda x: x.gather(1, plugrad.zeros((1, 1))), DtypeError, "integers"),
        (lambda x: x.gather(1, plugrad.tensor([1])), ShapeError, "as many dimensions"),
        (lambda x: x.masked_select(plugrad.tensor([1, 0, 1, 0])), DtypeError, "bool"),
        (lambda x: plugrad.tril(x[0]), ShapeError, "at least 2 dimensions"),
        (lambda x: x[0].triu_(), ShapeError, "at least 2 dimensions"),
        # NumPy added the shifts up, and [4, -1] adds up to a length of 3.
        (lambda x: plugrad.roll(x, (1, 2), 0), ShapeError, "one shift per axis"),
        (lambda x: x.roll((1, 2)), ShapeError, "one shift per axis"),
        (lambda x: x[0].split([4, -1]), ShapeError, "negative"),
        # mean(dtype=int64) ignored the dtype (a float64 result), nanmean's truncated.
        (lambda x: x.mean(dtype=plugrad.int64), DtypeError, "not a floating-point"),
        (lambda x: plugrad.nanmean(x, 0, dtype=plugrad.int32), DtypeError, "not a floating"),
        # Out-of-range dims were wrapped, sizes below -1 read as -1, floats truncated, and an
        # argument after max's other ignored: shapes and values PyTorch refuses to give.
        (lambda x: x.flatten(2), AxisError, "out of range"),
        (lambda x: plugrad.flatten(x, -3), AxisError, "out of range"),
        (lambda x: x.unbind(2), AxisError, "out of range"),
        (lambda x: x.reshape(-3), ShapeError, "at least 0, or -1"),
        (lambda x: x.view(2, -2, 3), ShapeError, "at least 0, or -1"),
        (lambda x: plugrad.tril(x, 0.5), TypeError, "diagonal is an int"),
        (lambda x: plugrad.roll(x, 1.5), TypeError, "shift must be an int"),
        (lambda x: plugrad.repeat_interleave(x, 2.5), TypeError, "repeats must be an int"),
        (lambda x: plugrad.rot90(x, 1.5), TypeError, "k must be an int"),
        (lambda x: plugrad.max(x, x, x), TypeError, "no more arguments"),
        (lambda x: plugrad.trace(x.reshape(1, 3, 4)), ShapeError, "takes a matrix"),
        (lambda x: x.long().polygamma_(1), DtypeError, "cannot hold"),  # (truncated)
        # A list as index or mask failed with an AttributeError ('list' has no 'ndim').
        (lambda x: x.index_select(1, [0, 1]), TypeError, "must be a tensor"),
        (lambda x: x.index_fill(1, [0], 1.0), TypeError, "as index"),
        (lambda x: x.masked_fill([[True] * 4] * 3, 1.0), TypeError, "must be a tensor"),
        (lambda x: x.masked_select([[True] * 4] * 3), TypeError, "must be a tensor"),
        # An int64 source was converted and written into the floats.
        (lambda x: x.put_(plugrad.tensor([1]), plugrad.tensor([7])), DtypeError, "same dtype"),
        (lambda x: x.put(plugrad.tensor([1]), plugrad.tensor([7])), DtypeError, "same dtype"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_and_changes_nothing(call: Any, error: type, message: str) -> None:
    x = plugrad.asarray(X.copy())
    with pytest.raises(error, match=message):
        call(x)
    np.testing.assert_array_equal(x.numpy(), X)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histc_counts_elements_on_bin_edges_where_pytorch_does(dtype: str) -> None:
    # The bin was floor((x - min) * (bins / (max - min))) in float64: one in three edge
    # values (x on a bin's edge as rounded in the dtype) fell into the neighbouring bin.
    if plugrad.default_device().backend.name == "jax":
        pytest.skip("XLA's division of an array by a scalar is 1 ulp off IEEE's at times")
    rng = np.random.default_rng(0)
    for _ in range(100):
        bins = int(rng.integers(1, 20))
        low = float(rng.integers(-5, 5))
        high = low + float(rng.integers(1, 10)) * float(rng.choice([1.0, 0.1, 0.3]))
        values = np.concatenate(
            [np.linspace(low, high, bins + 1), rng.uniform(low - 1, high + 1, 20)]
        ).astype(dtype)
        ours = plugrad.histc(plugrad.tensor(values), bins=bins, min=low, max=high)
        theirs = torch.histc(torch.tensor(values), bins=bins, min=low, max=high)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert plugrad.histc(plugrad.tensor([1.8, 0.6, 2.4]), 5, 0, 3).tolist() == [0, 1, 0, 1, 1]
    assert plugrad.histc(plugrad.tensor([1.0, 2.0]), bins=np.int64(2)).tolist() == [1, 1]


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_mode_gives_pytorchs_values_and_indices(dtype: str) -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        values = rng.integers(0, 3, (3, 5)).astype(dtype)
        dim, keepdim = int(rng.integers(-2, 2)), bool(rng.integers(0, 2))
        ours = plugrad.tensor(values).mode(dim, keepdim)
        theirs = torch.tensor(values).mode(dim, keepdim)
        assert type(ours).__name__ == "mode"
        assert ours.values.tolist() == theirs.values.tolist()
        assert ours.indices.tolist() == theirs.indices.tolist()  # the last index, as PyTorch's
    x = plugrad.tensor([1.0, 2.0, 2.0, 3.0], requires_grad=True)
    plugrad.mode(x).values.backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0, 0.0]
    assert plugrad.tensor(3.0).mode() == (3.0, 0)


TRAPEZOIDS = {
    "trapezoid(y)": lambda lib, y: lib.trapezoid(y),
    "trapezoid(y, dim=0)": lambda lib, y: lib.trapezoid(y, dim=0),
    "trapezoid(y, x)": lambda lib, y: lib.trapezoid(y, lib.tensor([0.0, 1.0, 3.0, 3.5])),
    "trapezoid(y, x of y's shape)": lambda lib, y: lib.trapezoid(y, y.detach().cumsum(1)),
    "trapezoid(y, dx=0.5)": lambda lib, y: lib.trapezoid(y, dx=0.5),
    "trapz(y, x, dim=0)": lambda lib, y: lib.trapz(y, lib.tensor([0.0, 2.0, 3.0]), dim=0),
    "cumulative_trapezoid(y)": lambda lib, y: lib.cumulative_trapezoid(y),
    "cumulative_trapezoid(y, dx=2, dim=0)": lambda lib, y: lib.cumulative_trapezoid(y, dx=2, dim=0),
}


@pytest.mark.parametrize("name", list(TRAPEZOIDS))
def test_trapezoid_and_cumulative_trapezoid_agree_with_pytorch(name: str) -> None:
    y = np.arange(12.0).reshape(3, 4) ** 1.5
    results = []
    for lib in (plugrad, torch):
        leaf = lib.tensor(y, requires_grad=True)
        out = TRAPEZOIDS[name](lib, leaf)
        out.sum().backward()
        results.append((out.detach().numpy(), leaf.grad.numpy()))
    for ours, theirs in zip(*results, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64"])
@pytest.mark.parametrize("function", ["trapezoid", "cumulative_trapezoid"])
def test_integer_samples_are_integrated_in_floats_without_wrapping(function: str, dtype: str):
    # Neighbours were added in the samples' dtype: int8 100 + 100 wrapped, and the area of
    # [100, 100] came out -28 (PyTorch's trapezoid gives 228, its cumulative_trapezoid -28).
    heights = [100, 100, 120]
    out = getattr(plugrad, function)(plugrad.tensor(heights, dtype=getattr(plugrad, dtype)))
    assert out.dtype == plugrad.float32
    expected = [100.0, 110.0]
    np.testing.assert_array_equal(out.numpy(), sum(expected) if function == "trapezoid" else
                                  np.cumsum(expected))  # fmt: skip
    with pytest.raises(DtypeError, match="bool"):
        getattr(plugrad, function)(plugrad.tensor([True, True]))


def test_trapezoid_refuses_mismatched_points_and_bincount_is_a_method() -> None:
    with pytest.raises(ShapeError, match="one x for each sample"):
        plugrad.trapezoid(plugrad.ones(3), plugrad.tensor([0.0, 1.0]))
    with pytest.raises(ArgumentError, match="not both"):
        plugrad.trapezoid(plugrad.ones(3), plugrad.ones(3), dx=2.0)
    assert plugrad.tensor([1, 1, 3]).bincount().tolist() == [0, 2, 0, 1]


def test_the_trace_method_sums_unsigned_matrices_in_int64_and_one_row_cov_is_0d() -> None:
    # x.trace() of uint8 was uint64 (the standard's function's dtype; PyTorch's is int64),
    # and cov/corrcoef of a (1, n) input were (1, 1) where PyTorch's are 0-d.
    for dtype in ("uint8", "uint16", "int8", "int32"):
        x = plugrad.tensor([[1, 2], [3, 4]], dtype=getattr(plugrad, dtype))
        assert x.trace().dtype == plugrad.int64 and x.trace().item() == 5
    unsigned = plugrad.tensor([[1, 2], [3, 4]], dtype=plugrad.uint8)
    # The standard's function sums into uint64; PyTorch has no uint64 sum (docs/backends.rst).
    standard_dtype = plugrad.int64 if unsigned.backend.name == "torch" else plugrad.uint64
    assert plugrad.linalg.trace(unsigned).dtype == standard_dtype
    row = [[1.0, 2.0, 4.0]]
    for name in ("cov", "corrcoef"):
        ours, theirs = (
            getattr(plugrad, name)(plugrad.tensor(row)),
            getattr(torch, name)(torch.tensor(row)),
        )
        assert ours.shape == tuple(theirs.shape) == ()
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("data", ["float16", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize(
    "weights",
    [
        "aweights float16",
        "aweights float32",
        "aweights float64",
        "fweights",
        "both float32",
        "both float64",
        "none",
    ],
)
def test_cov_has_pytorchs_dtype_for_every_mix_of_data_and_weights(data: str, weights: str) -> None:
    # The weights cast to the data's dtype (complex data: float64 weights) made complex64 data
    # complex128, float16 data with float32 aweights float16 and float32 data with float64
    # aweights float32; PyTorch promotes with the weights, not with their 0-d sums.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5)) + (1j * rng.standard_normal((3, 5)) if "complex" in data else 0)
    aweights, fweights = rng.random(5), np.array([1, 2, 0, 1, 3])
    results = []
    for lib in (torch, plugrad):
        kwargs = {}
        if weights.startswith(("aweights", "both")):
            kwargs["aweights"] = lib.tensor(aweights.astype(weights.split()[1]))
        if weights.startswith(("fweights", "both")):
            kwargs["fweights"] = lib.tensor(fweights)
        results.append(lib.cov(lib.tensor(x.astype(data)), **kwargs))
    theirs, ours = results
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    low = "16" in data or "float16" in weights
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-2 if low else 1e-5, atol=1e-3)


def test_torch_functions_of_unsigned_integers_sum_in_int64_as_pytorchs() -> None:
    # plugrad.trace was the standard's linalg.trace (uint64); sum_to_size used its sum.
    counts = plugrad.ones((2, 3), dtype=plugrad.uint8)
    assert plugrad.trace(counts[:, :2]).dtype == plugrad.int64
    assert counts.sum_to_size(1, 3).dtype == plugrad.int64


def test_polygamma_and_mvlgamma_in_place_are_differentiable() -> None:
    torch = pytest.importorskip("torch")
    for lib in (plugrad, torch):
        x = lib.tensor([1.3, 2.7], requires_grad=True)
        ((x * 1).polygamma_(1).sum() + (x * 1).mvlgamma_(1).sum()).backward()
        if lib is plugrad:
            ours = x.grad.numpy()
        else:
            np.testing.assert_allclose(ours, x.grad.numpy(), rtol=1e-5)


def test_casts_to_dtypes_no_backend_stores_say_what_to_use_instead() -> None:
    # AttributeError: 'Tensor' object has no attribute 'bfloat16' (and the same for modules).
    x = plugrad.ones(2, device="numpy")
    for call, words in (
        (x.bfloat16, "the torch and jax backends store bfloat16"),
        (x.chalf, "use x.cfloat()"),
        (plugrad.nn.Linear(2, 2, device="numpy").bfloat16, "torch and jax backends store"),
    ):
        with pytest.raises(plugrad.errors.DtypeError) as raised:
            call()
        assert words in str(raised.value)
