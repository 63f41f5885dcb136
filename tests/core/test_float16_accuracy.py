"""float16 computes as PyTorch computes it: with a Python number, and in reductions, in float32.

In float16 itself the number may not fit (``h / 1e5`` divides by inf: 0) and
sums of squares overflow (the norm of a vector of 300s: inf). plugrad computes
those in float32 and rounds the result to float16 once; the result stays float16.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest

import plugrad

pytestmark = pytest.mark.skipif(
    plugrad.float16 not in plugrad.default_device().dtypes,
    reason="the default backend has no float16",
)

VALUES = np.array([0.1, 65504.0, 3.0, 1.0, -2.5, 1e-4, 0.0], dtype=np.float16)
NUMBERS = [1e5, -1e5, 70000, 1e-5, 0.3, 3, 1e-8]
OPERATORS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow,
}  # fmt: skip


def _in_float32(function, *args):
    """``function`` of float16 arrays computed in float32, rounded to float16 once."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        wide = [a.astype(np.float32) if isinstance(a, np.ndarray) else a for a in args]
        return np.asarray(function(*wide)).astype(np.float16)


@pytest.mark.parametrize("number", NUMBERS)
@pytest.mark.parametrize("symbol", list(OPERATORS))
def test_float16_with_a_number_computes_in_float32(symbol: str, number: float) -> None:
    function = OPERATORS[symbol]
    h = plugrad.asarray(VALUES)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        out, reflected = function(h, number), function(number, h)
    assert out.dtype == plugrad.float16 and reflected.dtype == plugrad.float16
    np.testing.assert_array_equal(out.numpy(), _in_float32(function, VALUES, number))
    np.testing.assert_array_equal(reflected.numpy(), _in_float32(function, number, VALUES))


@pytest.fixture(autouse=True)
def _overflow_is_expected():
    """float16 results that overflow are inf, as they should be (NumPy warns of the cast)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def test_the_cases_that_gave_silently_wrong_numbers() -> None:
    h = plugrad.tensor([1.0], dtype=plugrad.float16)
    assert float(h / 1e5) == float(np.float16(1e-5))  # was 0: 1e5 is inf in float16
    assert float(h / 70000.0) == float(np.float16(1 / 70000))  # was 0
    assert float(h * 65536.0 / 65536.0) == float("inf")  # was nan: inf / inf
    assert float(plugrad.tensor(65504.0, dtype=plugrad.float16) - 1e5) == -34496.0  # was -inf


def test_float16_gradients_through_a_number_are_float16_and_computed_in_float32() -> None:
    x = plugrad.tensor([1.0, 2.0], dtype=plugrad.float16, requires_grad=True)
    (x / 1e5).sum().backward()
    assert x.grad.dtype == plugrad.float16
    np.testing.assert_array_equal(x.grad.numpy(), np.full(2, 1e-5, np.float16))  # was 0


IN_PLACE = {
    "/=": (operator.itruediv, operator.truediv), "*=": (operator.imul, operator.mul),
    "-=": (operator.isub, operator.sub), "+=": (operator.iadd, operator.add),
    "div_": (lambda h, n: h.div_(n), operator.truediv),
    "mul_": (lambda h, n: h.mul_(n), operator.mul),
    "sub_": (lambda h, n: h.sub_(n), operator.sub),
}  # fmt: skip


@pytest.mark.parametrize("number", [1e5, 70000.0, -1e5, 0.3])
@pytest.mark.parametrize("form", list(IN_PLACE))
def test_float16_in_place_with_a_number_computes_in_float32(form: str, number: float) -> None:
    # As out of place: h.mul_(70000.0) made 0 into NaN (0 * inf), h.sub_(1e5) gave -inf.
    in_place, function = IN_PLACE[form]
    h = plugrad.tensor(VALUES)  # a copy: asarray would share VALUES' memory
    h = in_place(h, number)
    assert h.dtype == plugrad.float16
    np.testing.assert_array_equal(h.numpy(), _in_float32(function, VALUES, number))


def test_float16_comparisons_take_the_number_in_float16_as_scalars_adapt() -> None:
    h = plugrad.tensor([0.1, 65504.0], dtype=plugrad.float16)
    assert (h == 0.1).tolist() == [True, False]  # PyTorch's answer too
    assert (h < 1e5).tolist() == [True, True]
    assert plugrad.nextafter(h, 1e5).tolist()[0] > 0.1  # the next float16, not float32's


def test_float32_and_integer_tensors_keep_their_own_rules() -> None:
    assert (plugrad.tensor([1.0]) / 1e5).dtype == plugrad.float32
    assert (plugrad.tensor([3]) * 2).dtype == plugrad.int64
    assert (plugrad.tensor([3], dtype=plugrad.int16) / 2).dtype == plugrad.float32
    assert (plugrad.tensor([1.0], dtype=plugrad.float16) + True).dtype == plugrad.float16


HUNDREDS = np.array([300.0, 600.0, -300.0, 200.0], dtype=np.float16)
SPIKE = np.array([0.0] * 1000 + [300.0], dtype=np.float16)
TENTHS = np.full(10000, 0.1, dtype=np.float16)
LARGE = np.array([60000.0, 60000.0, -60000.0, 1.0], dtype=np.float16)
REDUCTIONS = {
    "vector_norm": (lambda lib, x: lib.linalg.vector_norm(x), HUNDREDS),
    "vector_norm(ord=3)": (lambda lib, x: lib.linalg.vector_norm(x, ord=3), HUNDREDS),
    "matrix_norm": (lambda lib, x: lib.linalg.matrix_norm(x), HUNDREDS.reshape(2, 2)),
    "x.norm()": (lambda lib, x: x.norm(), HUNDREDS),
    "x.std()": (lambda lib, x: x.std(), HUNDREDS),
    "x.var()": (lambda lib, x: x.var(), SPIKE),
    "x.std(0)": (lambda lib, x: x.std(0), SPIKE),
    "x.cumsum(0)": (lambda lib, x: x.cumsum(0), TENTHS),
    "x.cumsum(0) of large": (lambda lib, x: x.cumsum(0), LARGE),
    "x.nanmean()": (lambda lib, x: x.nanmean(), LARGE),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_float16_reductions_accumulate_in_float32_as_pytorch(name: str) -> None:
    torch = pytest.importorskip("torch")
    program, values = REDUCTIONS[name]
    ours = program(plugrad, plugrad.asarray(values))
    theirs = program(torch, torch.from_numpy(values.copy()))
    assert ours.dtype == plugrad.float16 and ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_float16_norm_and_std_are_finite_and_their_gradients_float16() -> None:
    x = plugrad.full((4,), 300.0, dtype=plugrad.float16, requires_grad=True)
    norm = plugrad.linalg.vector_norm(x)
    assert float(norm) == 600.0  # was inf: 300 ** 2 overflows float16
    norm.backward()
    assert x.grad.dtype == plugrad.float16
    np.testing.assert_array_equal(x.grad.numpy(), [0.5] * 4)
    y = plugrad.asarray(HUNDREDS)
    assert np.isfinite(float(y.std())) and float(y.var()) == float("inf")  # 140000 > 65504


def test_float16_average_pooling_sums_its_windows_in_float32() -> None:
    # A 64-wide window summed in float16 lost digits (2.2e-3 relative, 5x PyTorch's 4.2e-4).
    x = np.random.default_rng(0).uniform(0, 1, (4, 8, 256)).astype(np.float16)
    exact = x.astype(np.float64).reshape(4, 8, 4, 64).mean(-1)
    for function, arguments in (
        (plugrad.nn.functional.avg_pool1d, (64,)),
        (plugrad.nn.functional.avg_pool2d, ((1, 64),)),
    ):
        pooled = function(plugrad.asarray(x if function.__name__.endswith("1d") else x[None]),
                          *arguments)  # fmt: skip
        assert pooled.dtype == plugrad.float16
        values = pooled.numpy().astype(np.float64).reshape(exact.shape)
        np.testing.assert_allclose(values, exact, rtol=6e-4)  # float16's rounding of the mean


ROWS = np.array([[300.0, -300.0, 1.0, 2.0], [1000.0, 1001.0, 999.0, 1000.5]], dtype=np.float16)
F = plugrad.nn.functional
# name -> (program, its float64 reference): each gave zeros (the variance overflowed float16).
NORMALIZATIONS = {
    "layer_norm": (lambda x: F.layer_norm(x, (4,)), lambda x: _standardized(x, axis=-1)),
    "group_norm": (lambda x: F.group_norm(x.reshape(2, 2, 2), 1).reshape(2, 4),
                   lambda x: _standardized(x, axis=-1)),
    "instance_norm": (lambda x: F.instance_norm(x[None]).reshape(2, 4),
                      lambda x: _standardized(x, axis=-1)),
    "batch_norm": (lambda x: F.batch_norm(x.T, None, None, training=True).T,
                   lambda x: _standardized(x, axis=-1)),
    "rms_norm": (lambda x: F.rms_norm(x, (4,), eps=0.0),
                 lambda x: x / np.sqrt((x * x).mean(-1, keepdims=True))),
}  # fmt: skip


def _standardized(x: np.ndarray, axis: int) -> np.ndarray:
    centered = x - x.mean(axis, keepdims=True)
    return centered / np.sqrt((centered * centered).mean(axis, keepdims=True) + 1e-5)


@pytest.mark.parametrize("name", list(NORMALIZATIONS))
def test_float16_normalizations_compute_their_statistics_in_float32(name: str) -> None:
    program, reference = NORMALIZATIONS[name]
    x = plugrad.tensor(ROWS, requires_grad=True)
    out = program(x)
    assert out.dtype == plugrad.float16
    np.testing.assert_allclose(
        out.detach().numpy(), reference(ROWS.astype(np.float64)), atol=2e-3, rtol=2e-3
    )
    (out.float() * plugrad.arange(4.0)).sum().backward()
    assert x.grad.dtype == plugrad.float16 and np.isfinite(x.grad.numpy()).all()


def test_float16_rms_norm_takes_float32s_eps_by_default_as_pytorch() -> None:
    # float16's eps (1e-3) outweighed a mean square of 1.25e-4: [0.30, 0.60] for [0.89, 1.79]
    torch = pytest.importorskip("torch")
    small = np.array([[0.01, 0.02, 0.0, 0.0]], dtype=np.float16)
    ours = F.rms_norm(plugrad.tensor(small), (4,))
    theirs = torch.nn.functional.rms_norm(torch.tensor(small), (4,))
    assert ours.dtype == plugrad.float16
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-3)
    layer = plugrad.nn.RMSNorm(4, dtype=plugrad.float16)
    np.testing.assert_allclose(layer(plugrad.tensor(small)).detach().numpy(), theirs.numpy(),
                               rtol=1e-3)  # fmt: skip


def test_float16_layer_norm_gradients_agree_with_float64() -> None:
    weight = np.array([1.0, 2.0, -1.0, 0.5], dtype=np.float16)
    got, want = [], []
    for dtype, store in ((plugrad.float16, got), (plugrad.float64, want)):
        x = plugrad.tensor(ROWS, requires_grad=True, dtype=dtype)
        w = plugrad.tensor(weight, requires_grad=True, dtype=dtype)
        b = plugrad.zeros(4, dtype=dtype, requires_grad=True)
        ramp = plugrad.arange(4.0, dtype=plugrad.float64)
        (F.layer_norm(x, (4,), w, b).double() * ramp).sum().backward()
        store.extend(t.grad.numpy().astype(np.float64) for t in (x, w, b))
    for ours, exact in zip(got, want):
        np.testing.assert_allclose(ours, exact, atol=5e-3, rtol=5e-3)


def test_float16_elementwise_with_overflowing_intermediates_compute_in_float32() -> None:
    torch = pytest.importorskip("torch")
    cases = {
        "lerp": (lambda lib, x, y: lib.lerp(x, y, 0.5), LARGE, -LARGE),
        "lerp by a tensor": (lambda lib, x, y: lib.lerp(x, -x, y / y / 2), LARGE, LARGE),
        "round(decimals=3)": (lambda lib, x, y: lib.round(x, decimals=3), HUNDREDS / 3, None),
        "round(decimals=-2)": (lambda lib, x, y: lib.round(x, decimals=-2), LARGE, None),
        "sinc": (lambda lib, x, y: lib.sinc(x), np.array([1000.0, 0.25, -3.5], np.float16), None),
    }
    for name, (program, x, y) in cases.items():
        ours = program(plugrad, plugrad.asarray(x), None if y is None else plugrad.asarray(y))
        theirs = program(
            torch, torch.from_numpy(x.copy()), None if y is None else torch.from_numpy(y.copy())
        )
        assert ours.dtype == plugrad.float16, name
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-3, atol=1e-6, err_msg=name)


def test_float16_tanh_gelu_gradient_is_finite_for_large_inputs() -> None:
    x = plugrad.tensor(np.array([-100.0, -41.0, 0.5, 41.0, 1000.0], np.float16), requires_grad=True)
    F.gelu(x, approximate="tanh").sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0, 0.8674, 1.0, 1.0], atol=1e-3)  # PyTorch's


_MANY = 70000  # more elements than float16 can count: 65504 is its largest finite value


@pytest.mark.parametrize(
    "name",
    ["mean", "var", "std", "nanmean", "mse_loss", "l1_loss", "adaptive_avg_pool1d",
     "cross_entropy", "nll_loss"],
)  # fmt: skip
def test_float16_means_over_more_than_65504_elements_are_not_0(name: str) -> None:
    # The count of elements became inf in float16: gradients (and nanmean's, avg_pool's and
    # the class losses' values) came out 0, silently. Reference: the same in float64.
    F = plugrad.nn.functional
    values = np.linspace(0.1, 0.9, _MANY)
    labels = plugrad.zeros(_MANY // 2, dtype=plugrad.int64)
    programs = {
        "mean": lambda x: x.mean(), "var": lambda x: x.var(), "std": lambda x: x.std(),
        "nanmean": lambda x: x.nanmean(),
        "mse_loss": lambda x: F.mse_loss(x, plugrad.zeros_like(x)),
        "l1_loss": lambda x: F.l1_loss(x, plugrad.zeros_like(x)),
        "adaptive_avg_pool1d": lambda x: F.adaptive_avg_pool1d(x.reshape(1, 1, -1), 1).sum(),
        "cross_entropy": lambda x: F.cross_entropy(x.reshape(-1, 2), labels),
        "nll_loss": lambda x: F.nll_loss(x.reshape(-1, 2), labels),
    }  # fmt: skip
    found = []
    for dtype in (plugrad.float16, plugrad.float64):
        x = plugrad.tensor(values, dtype=dtype, requires_grad=True)
        out = programs[name](x)
        out.backward()
        assert out.dtype == dtype and x.grad.dtype == dtype
        found.append((float(out), x.grad.numpy().astype(np.float64)))
    (value, grad), (expected, expected_grad) = found
    assert value == pytest.approx(expected, rel=2e-3)
    assert np.count_nonzero(grad) >= 0.99 * np.count_nonzero(expected_grad) > 0
    # (float16's resolution near the gradients' 1e-5 is subnormal: compared to the largest)
    np.testing.assert_allclose(grad, expected_grad, atol=2e-2 * np.abs(expected_grad).max())


def test_float16_average_pooling_over_more_than_65504_elements_is_not_0() -> None:
    # The divisor was counted in float16: inf, and the average and its gradient 0. On NumPy
    # whatever the default backend: the windows are gathered one kernel position at a time,
    # 70,000 array operations (minutes where each is a dispatch, as on JAX).
    with plugrad.use_backend("numpy"):
        found = []
        for dtype in (plugrad.float16, plugrad.float64):
            x = plugrad.tensor(np.linspace(0.1, 0.9, _MANY), dtype=dtype, requires_grad=True)
            out = plugrad.nn.functional.avg_pool1d(x.reshape(1, 1, -1), _MANY).sum()
            out.backward()
            assert out.dtype == dtype and x.grad.dtype == dtype
            found.append((float(out), x.grad.numpy().astype(np.float64)))
    (value, grad), (expected, expected_grad) = found
    assert value == pytest.approx(expected, rel=2e-3)
    np.testing.assert_allclose(grad, expected_grad, rtol=2e-2)


def test_float16_softmax_and_linear_interpolation_compute_in_float32() -> None:
    # softmax was a rounding off the float64 value rounded (PyTorch computes in float32), and
    # linear interpolation of a constant was not constant: 0.7 + 0.3 is not 1 in float16.
    values = np.array([1.0, 2.0, 3.0])
    ours = plugrad.softmax(plugrad.tensor(values, dtype=plugrad.float16), dim=0)
    expected = np.exp(values) / np.exp(values).sum()
    assert ours.numpy().tolist() == expected.astype(np.float16).tolist()
    constant = plugrad.full((1, 1, 4), 60000.0, dtype=plugrad.float16)
    for mode in ("linear",):
        resized = plugrad.nn.functional.interpolate(constant, size=7, mode=mode)
        assert resized.dtype == plugrad.float16 and resized.numpy().tolist() == [[[60000.0] * 7]]


def _half_and_wide(function, arrays, upstream):
    """``function``'s value and gradients in float16, and in float32 rounded to float16."""
    results = []
    for dtype in (plugrad.float16, plugrad.float32):
        tensors = [plugrad.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
        out = function(*tensors)
        (out * plugrad.tensor(upstream, dtype=dtype)).sum().backward()
        results.append([out.detach().numpy(), *(t.grad.numpy() for t in tensors)])
    half, wide = results
    return half, [w.astype(np.float16) for w in wide]


_RNG = np.random.default_rng(5)
_AROUND_ONE = _RNG.uniform(0.95, 1.05, 2000).astype(np.float16)
_PEAK_THEN_ZEROS = np.concatenate([[10.0], np.zeros(3000)]).astype(np.float16)
F = plugrad.nn.functional

#: name -> (function, inputs, upstream gradient): each was 2 % to 100 % off in float16
#: arithmetic (measured against float64), where PyTorch computes in float32.
COMPUTED_IN_FLOAT32 = {
    # The gradient of a running sum stopped at 2048; of a running maximum reached 3,000
    # times, +1.1 rounded to +2 (4008 for 3301); of a running product, 2 % off.
    "cumsum": (lambda x: plugrad.cumsum(x, 0), [np.zeros(20000, np.float16)], 1.0),
    "cummax": (lambda x: plugrad.cummax(x, 0).values, [_PEAK_THEN_ZEROS], 1.1),
    "cumprod": (lambda x: plugrad.cumprod(x, 0), [_AROUND_ONE], 1.0),
    # t1 / t2 overflowed: inf for 101; a product rounded before the sum cancelled.
    "addcdiv": (lambda x, a, b: plugrad.addcdiv(x, a, b, value=1e-3),
                [[1.0], [1000.0], [0.01]], 1.0),
    "addcmul": (lambda x, a, b: plugrad.addcmul(x, a, b, value=0.1),
                [[-2.1], [3.3], [6.4]], 1.0),
    # g / N times (input - target) underflowed to 0.
    "binary_cross_entropy": (
        lambda p, t: F.binary_cross_entropy(p, t).reshape(1),
        [np.full(20000, 0.999, np.float16), np.full(20000, 0.9995, np.float16)], 1.0),
    # g * a overflowed: inf for 21152.
    "glu": (lambda x: F.glu(x, 0), [[60000.0, 0.5]], 1.5),
    # Normalized values rounded before the affine step: 96 ulp off where it cancels.
    "group_norm": (lambda x, w, b: F.group_norm(x, 1, w, b),
                   [np.arange(1.0, 5.0).reshape(1, 4, 1), [0.7, 0.9, 1.3, 0.5],
                    [0.94, -0.1, -1.6, 0.3]], 1.0),
    "batch_norm (eval)": (
        lambda x, w, b: F.batch_norm(x, plugrad.tensor([0.1, 0.2], dtype=x.dtype),
                                     plugrad.tensor([1.3, 0.7], dtype=x.dtype), w, b),
        [[[0.3, 1.7]], [1.1, 0.9], [-0.24, -1.3]], 1.0),
    "instance_norm": (lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
                      [np.arange(1.0, 5.0).reshape(1, 1, 4), [0.7], [0.94]], 1.0),
    "celu": (lambda x: F.celu(x, alpha=0.7), [[-3.0, -7.0, -1.0]], 1.0),
    "elu": (lambda x: F.elu(x, alpha=0.7), [[-3.0, -7.0, -1.0]], 1.0),
    "selu": (F.selu, [[-3.0, -7.0, -1.0]], 1.0),
}  # fmt: skip


@pytest.mark.parametrize("name", COMPUTED_IN_FLOAT32)
def test_float16_values_and_gradients_are_computed_in_float32(name: str) -> None:
    function, inputs, upstream = COMPUTED_IN_FLOAT32[name]
    arrays = [np.asarray(a, dtype=np.float16) for a in inputs]
    half, wide = _half_and_wide(function, arrays, upstream)
    for got, expected in zip(half, wide):
        assert got.dtype == np.float16
        # One rounding of the float32 result, give or take an ulp of the float32 steps.
        np.testing.assert_allclose(got, expected, rtol=2**-10, atol=1e-7)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_float16_scatter_reductions_round_once_as_in_pytorch(reduce, include_self) -> None:
    # The values sent to a position were summed and rounded to float16, then added to
    # the tensor's own and rounded again: 1 + 7 * 0.1 gave 1.69921875, not 1.7001953125.
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 1.5, 5).astype(np.float16)
    src = rng.uniform(0.5, 1.5, 40).astype(np.float16)
    index = rng.integers(0, 5, 40)
    expected = torch.tensor(x).scatter_reduce(
        0, torch.tensor(index), torch.tensor(src), reduce, include_self=include_self
    )
    got = plugrad.asarray(x).scatter_reduce(
        0, plugrad.asarray(index), plugrad.asarray(src), reduce, include_self=include_self
    )
    assert got.dtype == plugrad.float16
    if reduce == "mean":
        # PyTorch rounds the sum to float16 before it divides (1 step off at times): the
        # mean here is the exact one, rounded once.
        values = [[*([x[i]] if include_self else []), *src[index == i]] for i in range(5)]
        exact = [
            np.mean(np.array(v, dtype=np.float64)) if v else x[i] for i, v in enumerate(values)
        ]
        expected = torch.tensor(np.array(exact).astype(np.float16))
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    if reduce == "sum" and include_self:
        added = plugrad.asarray(x).scatter_add(0, plugrad.asarray(index), plugrad.asarray(src))
        np.testing.assert_array_equal(added.numpy(), expected.numpy())


def test_float16_product_gradient_is_the_float32_one_rounded_once() -> None:
    # It was made from float16 cumulative products, which drift on NumPy: 5.81, not 7.04.
    values = np.full(2000, 1.001, dtype=np.float16)
    x = plugrad.asarray(values)
    x.requires_grad_(True)
    x.prod().backward()
    wide = values.astype(np.float64)
    expected = np.array([np.prod(np.delete(wide, i)) for i in (0, 1999)]).astype(np.float16)
    assert x.grad.dtype == plugrad.float16
    np.testing.assert_array_equal(x.grad.numpy()[[0, 1999]], expected)
