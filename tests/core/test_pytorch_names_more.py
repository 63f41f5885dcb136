"""``frexp``, ``histogram``, ``histogramdd``, ``index_reduce``, ``is_same_size``, ``detach``,
``rsub``, ``typename``, ``cond`` and ``is_inference_mode_enabled`` against PyTorch's."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError, DtypeError, ShapeError
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(29)


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_frexp_agrees_with_torch(dtype: str, backend: str) -> None:
    wide = RNG.normal(size=400) * 10.0 ** RNG.integers(-30, 30, 400)
    special = [0.0, -0.0, 1.0, 0.5, 3.0, -5.5, math.inf, -math.inf, math.nan]
    subnormal = [1e-40, 2.0**-149]
    with plugrad.use_backend(backend):
        # XLA on the CPU flushes subnormal numbers to zero in arithmetic: JAX's frexp sees 0.
        if bool(plugrad.all(plugrad.tensor(subnormal, dtype=plugrad.float32) != 0)):
            special += subnormal
        x = np.concatenate([wide, special]).astype(dtype)
        ours = plugrad.frexp(plugrad.tensor(x))
        assert ours.exponent.dtype == plugrad.int32
        mantissa, exponent = ours.mantissa.numpy(), ours.exponent.numpy()
    theirs = torch.frexp(torch.tensor(x))
    np.testing.assert_array_equal(mantissa, theirs.mantissa.numpy())
    np.testing.assert_array_equal(exponent, theirs.exponent.numpy())


def test_frexp_of_extreme_doubles_and_its_gradient() -> None:
    x = np.array([1e-310, 5e-324, 1.7e308, 0.49999999999999994, 4503599627370495.5])
    theirs = torch.frexp(torch.tensor(x))
    ours = plugrad.frexp(plugrad.tensor(x))
    np.testing.assert_array_equal(ours.mantissa.numpy(), theirs.mantissa.numpy())
    np.testing.assert_array_equal(ours.exponent.numpy(), theirs.exponent.numpy())
    leaf = plugrad.tensor([3.0, -40.0], requires_grad=True)
    plugrad.frexp(leaf).mantissa.sum().backward()
    assert leaf.grad.tolist() == [0.25, 1 / 64]  # 2**-exponent
    with pytest.raises(DtypeError, match="real floating"):
        plugrad.frexp(plugrad.tensor([1, 2]))


@pytest.mark.parametrize("backend", backends_under_test())
def test_histogram_agrees_with_torch(backend: str) -> None:
    for trial in range(24):
        dtype = "float32" if trial % 2 else "float64"
        x = RNG.normal(size=60).astype(dtype)
        if trial % 3 == 0:
            x = np.round(x * 4) / 4  # values on the edges
        bins: Any = int(RNG.integers(1, 12))
        span = None if trial % 4 < 2 else (-1.0, 1.5)
        weight = RNG.uniform(size=60).astype(dtype) if trial % 5 == 0 else None
        density = trial % 6 == 0
        if trial % 7 == 0:
            bins = np.sort(RNG.uniform(-2, 2, 5)).astype(dtype)
        edges_given = isinstance(bins, np.ndarray)
        # (PyTorch's takes no range with edges, not even None)
        extra = {} if edges_given else {"range": span}
        theirs = torch.histogram(
            torch.tensor(x), bins=torch.tensor(bins) if edges_given else bins,
            weight=None if weight is None else torch.tensor(weight), density=density, **extra,
        )  # fmt: skip
        with plugrad.use_backend(backend):
            ours = plugrad.tensor(x).histogram(
                plugrad.tensor(bins) if edges_given else bins,
                weight=None if weight is None else plugrad.tensor(weight), density=density, **extra,
            )  # fmt: skip
            hist, edges = ours.hist.numpy(), ours.bin_edges.numpy()
        np.testing.assert_allclose(hist, theirs.hist.numpy(), rtol=1e-6, err_msg=str(trial))
        # The edges are PyTorch's to the bit, so an element on an edge is counted where
        # PyTorch counts it (values rounded to quarters sit on edges).
        np.testing.assert_array_equal(edges, theirs.bin_edges.numpy())


def test_histogram_of_one_value_nothing_and_bad_input() -> None:
    for values in ([2.0, 2.0], []):
        ours = plugrad.histogram(plugrad.tensor(values), bins=2)
        theirs = torch.histogram(torch.tensor(values), bins=2)
        assert ours.hist.tolist() == theirs.hist.tolist()
        assert ours.bin_edges.tolist() == theirs.bin_edges.tolist()
    with pytest.raises(ArgumentError, match="not finite"):
        plugrad.histogram(plugrad.tensor([1.0, math.nan]), bins=2)
    with pytest.raises(ArgumentError, match="bins must be an int > 0"):
        plugrad.histogram(plugrad.tensor([1.0]), bins=0)
    with pytest.raises(ArgumentError, match="increasing"):
        plugrad.histogram(plugrad.tensor([1.0]), bins=plugrad.tensor([1.0, 0.0]))
    with pytest.raises(ShapeError, match="weight must have the input's shape"):
        plugrad.histogram(plugrad.tensor([1.0, 2.0]), bins=2, weight=plugrad.ones(3))
    with pytest.raises(DtypeError, match="real floating"):
        plugrad.histogram(plugrad.tensor([1, 2]), bins=2)
    with pytest.raises(ArgumentError, match="exceeds its maximum"):
        plugrad.histogram(plugrad.tensor([1.0]), bins=2, range=(2.0, 1.0))


@pytest.mark.parametrize("backend", backends_under_test())
def test_histogramdd_agrees_with_torch(backend: str) -> None:
    points = RNG.normal(size=(50, 3))
    weight = RNG.uniform(size=50)
    edges = [np.array([-3.0, 0.0, 3.0]), np.array([-1.0, 0.0, 0.5, 2.0]), np.array([-2.0, 2.0])]
    cases = [
        {"bins": 3},
        {"bins": [2, 3, 4], "density": True},
        {"bins": 2, "range": [-1.0, 1.0, -2.0, 2.0, 0.0, 1.0], "weight": weight},
        {"bins": edges, "weight": weight, "density": True},
    ]
    for case in cases:
        results = []
        for lib in (plugrad, torch):
            context = plugrad.use_backend(backend) if lib is plugrad else warnings.catch_warnings()
            with context:
                options = dict(case)
                if isinstance(options["bins"], list) and isinstance(options["bins"][0], np.ndarray):
                    options["bins"] = [lib.tensor(e) for e in options["bins"]]
                if "weight" in options:
                    options["weight"] = lib.tensor(options["weight"])
                result = lib.histogramdd(lib.tensor(points), **options)
                results.append((result.hist.numpy(), [e.numpy() for e in result.bin_edges]))
        (ours, our_edges), (theirs, their_edges) = results
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, err_msg=str(case))
        for mine, reference in zip(our_edges, their_edges, strict=True):
            np.testing.assert_array_equal(mine, reference)
    with pytest.raises(ArgumentError, match="2 bins given for 3 dimensions"):
        plugrad.histogramdd(plugrad.tensor(points), bins=[2, 2])
    with pytest.raises(ArgumentError, match="range takes a minimum and a maximum"):
        plugrad.histogramdd(plugrad.tensor(points), bins=2, range=[0.0, 1.0])


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_agrees_with_torch(reduce: str, include_self: bool, backend: str) -> None:
    base, source = RNG.normal(size=(4, 3)), RNG.normal(size=(5, 3))
    index = np.array([0, 2, 0, 3, 0])
    results = []
    for lib in (plugrad, torch):
        context = plugrad.use_backend(backend) if lib is plugrad else warnings.catch_warnings()
        with context:
            warnings.simplefilter("ignore", UserWarning)  # PyTorch's "index_reduce() is in beta"
            x = lib.tensor(base, requires_grad=True)
            s = lib.tensor(source, requires_grad=True)
            out = x.index_reduce(0, lib.tensor(index), s, reduce, include_self=include_self)
            (out * lib.tensor(np.linspace(0.5, 1.5, 12).reshape(4, 3))).sum().backward()
            in_place = x.detach().clone()
            in_place.index_reduce_(
                0, lib.tensor(index), s.detach(), reduce, include_self=include_self
            )
            results.append([out.detach().numpy(), x.grad.numpy(), s.grad.numpy(), in_place.numpy()])
    for mine, reference in zip(*results, strict=True):
        np.testing.assert_allclose(mine, reference, rtol=1e-12)


def test_index_reduce_refuses_bad_input() -> None:
    x, index, source = plugrad.zeros(3, 2), plugrad.tensor([0, 1]), plugrad.ones(2, 2)
    with pytest.raises(ArgumentError, match="reduce must be one of"):
        x.index_reduce(0, index, source, "sum")
    with pytest.raises(TypeError, match="include_self"):
        x.index_reduce(0, index, source, "prod", include_self=1)
    with pytest.raises(ShapeError):
        x.index_reduce(0, index, plugrad.ones(3, 2), "prod")


def test_small_names_agree_with_torch() -> None:
    for lib in (plugrad, torch):
        a, b = lib.ones(2, 3), lib.zeros(2, 3)
        assert lib.is_same_size(a, b) and a.is_same_size(b) and not a.is_same_size(lib.ones(3))
        x = lib.tensor([1.0, 2.0], requires_grad=True) * 2
        assert not lib.detach(x).requires_grad
        assert lib.rsub(lib.tensor([1.0, 2.0]), 5, alpha=2).tolist() == [3.0, 1.0]
        assert lib.rsub(lib.tensor([1.0, 2.0]), lib.tensor([3.0, 3.0])).tolist() == [2.0, 1.0]
        assert not lib.is_inference_mode_enabled()
        with lib.inference_mode():
            assert lib.is_inference_mode_enabled()
    assert plugrad.typename(plugrad.ones(2, dtype=plugrad.int64)) == "plugrad.LongTensor"
    assert plugrad.typename(3) == torch.typename(3) == "int"
    assert plugrad.typename(plugrad.nn.Linear(1, 1)) == "plugrad.nn.linear.Linear"


@pytest.mark.parametrize(
    ("dtype", "values", "other", "alpha"),
    [
        ("int8", [1, 2, 3], 2, 1),
        ("uint8", [1, 2, 3], 2, 1),  # 2 - 3 wraps to 255, as `2 - x`
        ("int16", [1, 2, 3], 2, 1),
        ("int32", [5, -7], 3, 1),
        ("float16", [1.0, 2.0], 2.5, 1),
        ("int8", [100, 120], 100, 2),  # alpha * x wraps in int8 first, as PyTorch's
        ("int64", [1, 2], 2.5, 2),  # a float number promotes to the default float dtype
        ("float32", [1.0, 2.0], 2, 2),
    ],
)
def test_rsub_of_a_number_takes_the_tensors_dtype(
    dtype: str, values: list[Any], other: Any, alpha: Any
) -> None:
    # The number became a 0-d tensor first (int64 or float32), so int8 and uint8 results
    # were int64 (2 - 3 = -1, not 255) and float16 ones float32.
    ours = plugrad.rsub(plugrad.tensor(values, dtype=getattr(plugrad, dtype)), other, alpha=alpha)
    theirs = torch.rsub(torch.tensor(values, dtype=getattr(torch, dtype)), other, alpha=alpha)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.tolist() == theirs.tolist()


def test_rsub_refuses_a_float_alpha_for_integers_naming_the_dtype() -> None:
    with pytest.raises(DtypeError, match=r"rsub\(\): alpha=2.5 .*the tensor is plugrad.int64"):
        plugrad.rsub(plugrad.tensor([1, 2]), 2, alpha=2.5)


def test_cond_runs_one_branch_differentiably() -> None:
    x = plugrad.tensor([1.0, -2.0], requires_grad=True)
    calls = []

    def positive(v: Any) -> Any:
        calls.append("true")
        return v * 3

    def negative(v: Any) -> Any:
        calls.append("false")
        return v * 5

    plugrad.cond(x.sum() > 0, positive, negative, (x,)).sum().backward()
    assert calls == ["false"] and x.grad.tolist() == [5.0, 5.0]
    assert plugrad.cond(True, positive, negative, [x]).tolist() == [3.0, -6.0]
    with pytest.raises(ShapeError, match="one element"):
        plugrad.cond(x > 0, positive, negative, (x,))
    with pytest.raises(TypeError, match="two functions"):
        plugrad.cond(True, positive, 3, (x,))
    with pytest.raises(TypeError, match="operands must be a tuple"):
        plugrad.cond(True, positive, negative, x)


def test_top_level_anomaly_names_as_pytorchs() -> None:
    for lib in (plugrad, torch):
        assert not lib.is_anomaly_enabled()
        lib.set_anomaly_enabled(True, check_nan=False)
        try:
            assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        finally:
            lib.set_anomaly_enabled(False)
        assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
