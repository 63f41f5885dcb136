"""The op table of plugins/statistical.py (OpTests runs every check on each row)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import plugrad
from plugrad.testing import OpCase, OpTests, backends_under_test

P = plugrad


def with_zeros(seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 2.0, size=(3, 4)) * rng.choice([-1, 1], size=(3, 4))
    x[0, 1] = 0.0  # one zero in row 0
    x[2, 0] = x[2, 3] = 0.0  # two zeros in row 2
    return [x]


def cumulative_with_zero(seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 2.0, size=(2, 5))
    x[0, 2] = 0.0
    x[1, 1] = x[1, 3] = 0.0
    return [x]


def cumulative_with_one_zero(seed):
    # Second derivatives are exact with one zero per slice: first, inside, last.
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 2.0, size=(4, 5)) * rng.choice([-1, 1], size=(4, 5))
    x[0, 0] = x[1, 2] = x[2, 4] = 0.0
    return [x]


def np_cumsum(x, axis=None, dtype=None, include_initial=False):
    axis = 0 if axis is None else axis
    out = np.cumsum(x, axis=axis, dtype=dtype)
    if include_initial:
        pad = np.zeros_like(np.take(out, [0], axis=axis))
        out = np.concatenate([pad, out], axis=axis)
    return out


def np_cumprod(x, axis=None, include_initial=False):
    axis = 0 if axis is None else axis
    out = np.cumprod(x, axis=axis)
    if include_initial:
        out = np.concatenate([np.ones_like(np.take(out, [0], axis=axis)), out], axis=axis)
    return out


CASES = [
    OpCase("sum", "sum-all", P.sum, np.sum, ((3, 4),)),
    OpCase("sum", "sum-axis", lambda a: P.sum(a, axis=1), lambda a: np.sum(a, axis=1), ((3, 4),)),
    OpCase(
        "sum",
        "sum-axes-keepdims",
        lambda a: a.sum(axis=(0, -1), keepdims=True),
        lambda a: np.sum(a, axis=(0, -1), keepdims=True),
        ((2, 3, 4),),
    ),
    OpCase("sum", "sum-0d", P.sum, np.sum, ((),)),
    OpCase(
        "sum",
        "sum-dtype",
        lambda a: P.astype(P.sum(a, axis=0, dtype=P.float64), a.dtype),
        lambda a: np.sum(a, axis=0, dtype=np.float64).astype(a.dtype),
        ((3, 4),),
    ),
    OpCase("mean", "mean-all", P.mean, np.mean, ((3, 4),)),
    OpCase(
        "mean",
        "mean-axis-keepdims",
        lambda a: a.mean(axis=-1, keepdims=True),
        lambda a: np.mean(a, axis=-1, keepdims=True),
        ((2, 3, 4),),
    ),
    OpCase(
        "prod", "prod-axis", lambda a: P.prod(a, axis=1), lambda a: np.prod(a, axis=1), ((3, 4),)
    ),
    OpCase("prod", "prod-all", P.prod, np.prod, ((2, 3),), ((0.5, 1.5),)),
    OpCase(
        "prod",
        "prod-zeros",
        lambda a: P.prod(a, axis=1, keepdims=True),
        lambda a: np.prod(a, axis=1, keepdims=True),
        inputs=with_zeros,
    ),
    OpCase(
        "prod",
        "prod-one-zero-double",
        lambda a: P.prod(a[:2], axis=1),
        lambda a: np.prod(a[:2], axis=1),
        inputs=with_zeros,
    ),
    OpCase("var", "var", lambda a: P.var(a, axis=0), lambda a: np.var(a, axis=0), ((4, 3),)),
    OpCase(
        "var",
        "var-corrected",
        lambda a: P.var(a, correction=1, keepdims=True),
        lambda a: np.var(a, ddof=1, keepdims=True),
        ((3, 4),),
    ),
    OpCase("std", "std", lambda a: P.std(a, axis=1), lambda a: np.std(a, axis=1), ((3, 4),)),
    OpCase(
        "std",
        "std-corrected",
        lambda a: P.std(a, axis=(0, 1), correction=1),
        lambda a: np.std(a, axis=(0, 1), ddof=1),
        ((3, 4),),
    ),
    OpCase("max", "max-all", P.max, np.max, ((3, 4),)),
    OpCase("max", "max-axis", lambda a: P.max(a, axis=0), lambda a: np.max(a, axis=0), ((3, 4),)),
    OpCase(
        "min",
        "min-keepdims",
        lambda a: P.min(a, axis=-1, keepdims=True),
        lambda a: np.min(a, axis=-1, keepdims=True),
        ((2, 3, 4),),
    ),
    OpCase("cumulative_sum", "cumsum-1d", P.cumulative_sum, np_cumsum, ((5,),)),
    OpCase(
        "cumulative_sum",
        "cumsum-axis-initial",
        lambda a: P.cumulative_sum(a, axis=0, include_initial=True),
        lambda a: np_cumsum(a, axis=0, include_initial=True),
        ((3, 4),),
    ),
    OpCase(
        "cumulative_sum",
        "cumsum-dtype",
        lambda a: P.astype(P.cumulative_sum(a, axis=1, dtype=P.float64), a.dtype),
        lambda a: np_cumsum(a, axis=1, dtype=np.float64).astype(a.dtype),
        ((3, 4),),
    ),
    OpCase("cumulative_prod", "cumprod-1d", P.cumulative_prod, np_cumprod, ((5,),)),
    OpCase(
        "cumulative_prod",
        "cumprod-axis-initial",
        lambda a: P.cumulative_prod(a, axis=-1, include_initial=True),
        lambda a: np_cumprod(a, axis=-1, include_initial=True),
        ((3, 4),),
    ),
    *(
        OpCase(
            "cumulative_prod",
            name,
            lambda a: P.cumulative_prod(a, axis=1),
            lambda a: np_cumprod(a, axis=1),
            inputs=inputs,
        )
        for name, inputs in (
            ("cumprod-zeros", cumulative_with_zero),
            ("cumprod-one-zero", cumulative_with_one_zero),
        )
    ),
    OpCase(
        "cumulative_logsumexp",
        "logcumsumexp-1d",
        lambda a: P.cumulative_logsumexp(a, axis=0),
        lambda a: np.logaddexp.accumulate(a, axis=0),
        ((5,),),
    ),
    OpCase(
        "cumulative_logsumexp",
        "logcumsumexp-axis",
        lambda a: P.logcumsumexp(a, -1),
        lambda a: np.logaddexp.accumulate(a, axis=-1),
        ((3, 4),),
    ),
]


class TestStatisticalOps(OpTests):
    cases = CASES


@pytest.mark.parametrize("name", ["max", "min"])
def test_ties_share_the_gradient_equally(name: str) -> None:
    x = plugrad.tensor([[2.0, 2.0, 1.0], [1.0, 1.0, 1.0]], requires_grad=True)
    sign = 1.0 if name == "max" else -1.0
    getattr(plugrad, name)(sign * x, axis=1).sum().backward()
    third = 1 / 3
    np.testing.assert_allclose(x.grad.numpy(), sign * np.array([[0.5, 0.5, 0], [third] * 3]))


def test_sum_with_dtype_keeps_the_gradient_dtype() -> None:
    x = plugrad.tensor([1.0, 2.0], dtype=plugrad.float16, requires_grad=True)
    total = plugrad.sum(x, dtype=plugrad.float64)
    assert total.dtype == plugrad.float64
    total.backward()
    assert x.grad.dtype == plugrad.float16
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


def test_integer_reductions_do_not_require_grad() -> None:
    x = plugrad.tensor([1.5, 2.5], requires_grad=True)
    as_int = plugrad.astype(x, plugrad.int64)
    assert not as_int.requires_grad and as_int.grad_fn is None
    assert not plugrad.sum(x, dtype=plugrad.int64).requires_grad


@pytest.mark.parametrize("correction", [0.0, 1.0])
def test_std_of_a_constant_has_gradient_zero_like_pytorch(correction) -> None:
    x = plugrad.tensor(
        [[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]], dtype=plugrad.float64, requires_grad=True
    )
    plugrad.std(x, axis=1, correction=correction).sum().backward()
    assert x.grad[0].tolist() == [0.0, 0.0, 0.0]
    torch = pytest.importorskip("torch")
    t = torch.tensor([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]], dtype=torch.float64, requires_grad=True)
    t.std(dim=1, correction=correction).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("correction", [2.0, 3.0, 5.0])
def test_a_correction_past_the_count_gives_infinite_gradients_not_finite_ones(correction):
    # The variance is inf (no degrees of freedom left), but the gradient divided by
    # count - correction < 0: finite, and of the wrong sign (var: [-0.67, 0.67] for 5).
    x = plugrad.tensor([3.0, 1.0], dtype=plugrad.float64, requires_grad=True)
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "Degrees of freedom <= 0"
        plugrad.var(x, correction=correction).backward()
        assert x.grad.tolist() == [math.inf, -math.inf]
        x.grad = None
        plugrad.std(x, correction=correction).backward()
    assert np.isnan(x.grad.numpy()).all()  # PyTorch's too


def test_float16_sums_and_float32_running_sums_round_once_as_pytorch() -> None:
    # NumPy adds float16 along any axis but the last one by one in float16, and a float32
    # running sum in float32: PyTorch (on the CPU) accumulates in float32 and float64.
    torch = pytest.importorskip("torch")
    backend = plugrad.default_device().backend.name
    if backend not in ("numpy", "torch"):
        pytest.skip(f"the accumulation is the backend library's own on {backend}")
    halves = np.random.default_rng(2).standard_normal((4000, 2)).astype(np.float16)
    if plugrad.float16 in plugrad.default_device().dtypes:
        ours = plugrad.asarray(halves).sum(0)
        assert ours.dtype == plugrad.float16
        np.testing.assert_array_equal(ours.numpy(), torch.tensor(halves).sum(0).numpy())
    tenths = plugrad.full((10**6,), 0.1)
    running = tenths.cumsum(0)
    assert running.dtype == plugrad.float32
    assert running[-1].item() == torch.full((10**6,), 0.1).cumsum(0)[-1].item() == 100000.0
    assert plugrad.cumulative_sum(tenths)[-1].item() == 100000.0


def test_a_float32_running_product_and_its_gradient_are_as_accurate_as_pytorchs() -> None:
    # A float32 running product drifted (1.09948 for 100,000 factors of 1 + 2**-20, whose
    # product is 1.10006), and its gradient, made by doubling steps, more (2e-5 off).
    torch = pytest.importorskip("torch")
    backend = plugrad.default_device().backend.name
    if plugrad.float64 not in plugrad.default_device().dtypes:
        pytest.skip(f"{backend} has no float64 to accumulate in")
    factors = np.full(100_000, 1 + 2**-20, dtype=np.float32)
    exact = np.prod(factors.astype(np.float64))
    for lib in (plugrad, torch):
        x = lib.tensor(factors, requires_grad=True)
        running = lib.cumprod(x, 0)
        running[-1].backward()
        if lib is torch or backend in ("numpy", "torch"):  # (others: their library's own)
            assert abs(running[-1].item() / exact - 1) < 1e-6
        assert running.dtype == x.grad.dtype == lib.float32
        assert abs(x.grad[0].item() / (exact / factors[0]) - 1) < 1e-6


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_the_median_of_an_empty_tensor_stays_in_its_graph(name) -> None:
    # NaN, as PyTorch's, but it was a new tensor: backward through it raised.
    x = plugrad.zeros(0, requires_grad=True)
    median = getattr(plugrad, name)(x)
    assert median.requires_grad and np.isnan(median.item())
    median.backward()
    assert x.grad.shape == (0,)


@pytest.mark.parametrize("backend", backends_under_test())
def test_a_correction_at_or_past_the_count_gives_pytorchs_inf_on_every_backend(backend) -> None:
    # (JAX gave NaN, Dask divided by a negative count: NaN where PyTorch gives inf)
    torch = pytest.importorskip("torch")
    host = np.array([[1.0, 2.0, 2.0], [3.0, 5.0, 2.0]], dtype=np.float32)
    for name in ("var", "std"):
        for dim, correction in ((0, 2), (0, 3), (1, 5), (None, 6), (None, 7.5)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # PyTorch's "degrees of freedom"
                theirs = getattr(torch.tensor(host), name)(dim, correction=correction)
            with plugrad.use_backend(backend):
                ours = getattr(plugrad.asarray(host), name)(dim, correction=correction)
            np.testing.assert_array_equal(np.asarray(ours), theirs.numpy(), f"{name} {dim}")


@pytest.mark.parametrize("name", ["std", "var"])
@pytest.mark.parametrize("backend_name", ["numpy", "torch", "jax", "dask"])
def test_a_fractional_correction_gives_pytorchs_spread_and_gradient_on_every_backend(
    backend_name, name
):
    # PyTorch's own std kernel refuses a float correction (its var takes one): std on the
    # torch backend raised a bare NotImplementedError.
    torch = pytest.importorskip("torch")
    if backend_name != "numpy":
        pytest.importorskip(backend_name)
    data = np.arange(12.0).reshape(3, 4) ** 1.5
    expected_x = torch.tensor(data, requires_grad=True)
    expected = getattr(torch, name)(expected_x, dim=1, correction=0.5)
    expected.sum().backward()
    with plugrad.use_backend(backend_name):
        x = plugrad.tensor(data, requires_grad=True)
        out = getattr(x, name)(dim=1, correction=0.5)
        out.sum().backward()
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), expected_x.grad.numpy(), rtol=1e-12)
