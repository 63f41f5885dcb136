"""``nn.init``'s trunc_normal_, orthogonal_, eye_, dirac_ and sparse_, and
``nn.utils.get_total_norm`` / ``clip_grads_with_norm_``, against torch where the result
is deterministic and by their defining properties where it is random."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad.errors import ShapeError
from plugrad.nn import init
from plugrad.nn.utils import clip_grad_norm_, clip_grads_with_norm_, get_total_norm


def test_trunc_normal_stays_inside_and_follows_the_truncated_distribution() -> None:
    plugrad.manual_seed(0)
    w = init.trunc_normal_(
        plugrad.empty(40000, dtype=plugrad.float64), mean=1.0, std=2.0, a=0.0, b=3.0
    )
    values = w.numpy()
    assert values.min() >= 0.0 and values.max() <= 3.0
    # The truncated normal's mean: mu + sigma * (phi(alpha) - phi(beta)) / (Phi(beta) - Phi(alpha)).
    alpha, beta = (0.0 - 1.0) / 2.0, (3.0 - 1.0) / 2.0
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    cdf = lambda z: 0.5 * math.erfc(-z / math.sqrt(2))
    expected = 1.0 + 2.0 * (phi(alpha) - phi(beta)) / (cdf(beta) - cdf(alpha))
    assert abs(values.mean() - expected) < 0.02
    plugrad.manual_seed(3)
    first = init.trunc_normal_(plugrad.empty(50), std=0.02).numpy()
    plugrad.manual_seed(3)
    np.testing.assert_array_equal(init.trunc_normal_(plugrad.empty(50), std=0.02).numpy(), first)


@pytest.mark.parametrize(
    ("a", "b"), [(-0.01, 0.01), (2.5, 3.5), (-3.5, -2.5), (5.0, 6.0), (-2.0, 2.0), (-9.0, 0.5)]
)
def test_trunc_normal_fills_narrow_and_tail_intervals(a: float, b: float) -> None:
    # Redrawing until every sample fell inside gave up on [-0.01, 0.01] and [2.5, 3.5]
    # (PyTorch fills them); quantiles of uniform draws fill any interval in one pass.
    plugrad.manual_seed(0)
    values = init.trunc_normal_(plugrad.empty(100_000, dtype=plugrad.float64), a=a, b=b).numpy()
    assert values.min() >= a and values.max() <= b
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    cdf = lambda z: 0.5 * math.erfc(-z / math.sqrt(2))
    mass = cdf(b) - cdf(a)
    mean = (phi(a) - phi(b)) / mass
    variance = 1 + (a * phi(a) - b * phi(b)) / mass - mean**2
    assert abs(values.mean() - mean) < 0.01 * (b - a)
    assert abs(values.var() - variance) < 0.02 * variance
    median = np.median(values)  # half the mass on either side
    assert abs((cdf(median) - cdf(a)) / mass - 0.5) < 0.01


@pytest.mark.parametrize(("a", "b"), [(5.0, 6.0), (-7.0, -6.0), (6.0, 7.0)])
def test_trunc_normal_fills_a_tail_on_a_device_without_float64(monkeypatch, a, b) -> None:
    # JAX without its 64-bit types drew in float32, where 2p - 1 rounds to -1 this far
    # out: [6, 7] came out all 7.0, [5, 6] in 11 distinct values. (The suite turns JAX's
    # 64-bit types on: the device is narrowed here as JAX's own setting narrows it.)
    pytest.importorskip("jax")
    device = plugrad.registry.resolve_device("jax")
    narrowed = {d: n for d, n in device._dtype_to_native.items() if d != plugrad.float64}
    monkeypatch.setattr(device, "_dtype_to_native", narrowed)
    assert plugrad.float64 not in device.dtypes
    w = init.trunc_normal_(plugrad.empty(40_000, device=device), a=a, b=b)
    assert w.dtype == plugrad.float32 and w.device == device
    values = np.asarray(w.cpu().numpy(), dtype=np.float64)
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    cdf = lambda z: 0.5 * math.erfc(-z / math.sqrt(2))
    mass = cdf(b) - cdf(a)
    mean = (phi(a) - phi(b)) / mass
    variance = 1 + (a * phi(a) - b * phi(b)) / mass - mean**2
    assert values.min() >= a and values.max() <= b
    assert len(np.unique(values)) > 10_000
    assert abs(values.mean() - mean) < 0.01 * (b - a)
    assert abs(values.var() - variance) < 0.05 * variance


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (2, 3, 2), (6, 2, 2)])
def test_orthogonal_gives_orthonormal_rows_or_columns(shape: tuple[int, ...]) -> None:
    q = init.orthogonal_(plugrad.empty(shape, dtype=plugrad.float64), gain=2.0).numpy()
    flat = q.reshape(shape[0], -1) / 2.0
    small = min(flat.shape)
    product = flat @ flat.T if flat.shape[0] == small else flat.T @ flat
    np.testing.assert_allclose(product, np.eye(small), atol=1e-12)


def test_eye_and_dirac_equal_torch() -> None:
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(
        init.eye_(plugrad.empty((3, 5))).numpy(), torch.nn.init.eye_(torch.empty(3, 5)).numpy()
    )
    for shape, groups in [((4, 2, 3), 1), ((4, 2, 3), 2), ((6, 3, 3, 3), 3), ((2, 4, 3, 2, 5), 1)]:
        ours = init.dirac_(plugrad.empty(shape), groups).numpy()
        theirs = torch.nn.init.dirac_(torch.empty(shape), groups).numpy()
        np.testing.assert_array_equal(ours, theirs)


def test_sparse_zeroes_that_many_rows_per_column() -> None:
    plugrad.manual_seed(1)
    w = init.sparse_(plugrad.empty((10, 4)), sparsity=0.25, std=1.0).numpy()
    assert [(w[:, j] == 0).sum() for j in range(4)] == [3, 3, 3, 3]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: init.trunc_normal_(plugrad.empty(3), a=1.0, b=-1.0), ValueError, "not below"),
        (lambda: init.trunc_normal_(plugrad.empty(3), std=-1.0), ValueError, "non-negative"),
        (lambda: init.trunc_normal_(plugrad.empty(3), a=40.0, b=41.0), ValueError, "float64"),
        (lambda: init.orthogonal_(plugrad.empty(3)), ShapeError, "at least 2"),
        (lambda: init.eye_(plugrad.empty(2, 2, 2)), ShapeError, "matrix"),
        (lambda: init.dirac_(plugrad.empty(2, 2)), ShapeError, "3-, 4- or 5"),
        (lambda: init.dirac_(plugrad.empty(3, 2, 3), groups=2), ValueError, "groups"),
        (lambda: init.sparse_(plugrad.empty(3, 3), 1.5), ValueError, "sparsity"),
    ],
)
def test_bad_input_is_refused(call: Any, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_total_norm_and_clipping_with_it_agree_with_torch() -> None:
    torch = pytest.importorskip("torch")
    arrays = [np.array([3.0, -4.0]), np.array([[1.0, 2.0], [0.5, -7.0]])]
    for norm_type in (2.0, 1.0, 3.5, math.inf):
        ours = get_total_norm([plugrad.asarray(a) for a in arrays], norm_type)
        theirs = torch.nn.utils.get_total_norm([torch.from_numpy(a) for a in arrays], norm_type)
        np.testing.assert_allclose(float(ours), float(theirs), rtol=1e-12)
    params = [plugrad.asarray(a, requires_grad=True) for a in arrays]
    tparams = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    for p, t in zip(params, tparams, strict=True):
        p.grad, t.grad = p.detach() * 2, t.detach() * 2
    clip_grads_with_norm_(params, 1.5, get_total_norm([p.grad for p in params]), foreach=None)
    torch.nn.utils.clip_grads_with_norm_(
        tparams, 1.5, torch.nn.utils.get_total_norm([t.grad for t in tparams])
    )
    for p, t in zip(params, tparams, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    w = plugrad.tensor([3.0, 4.0], requires_grad=True)
    (w * w).sum().backward()
    assert float(clip_grad_norm_(w, 1.0, foreach=True)) == 10.0
    assert get_total_norm([]).tolist() == 0.0
    clip_grads_with_norm_(w, 0.5, 1.0)  # a number as the total norm
    np.testing.assert_allclose(w.grad.numpy(), np.array([0.3, 0.4]), rtol=1e-5)
    with pytest.raises(TypeError, match="takes Tensors"):
        get_total_norm([1.0])


def test_pytorchs_fan_helpers_and_deprecated_names() -> None:
    torch = pytest.importorskip("torch")
    for shape in [(3, 4), (8, 2, 3, 3), (5, 1, 7)]:
        ours = init._calculate_fan_in_and_fan_out(plugrad.empty(shape))
        assert ours == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
        for mode in ("fan_in", "FAN_OUT"):
            assert init._calculate_correct_fan(plugrad.empty(shape), mode) == (
                torch.nn.init._calculate_correct_fan(torch.empty(shape), mode)
            )
    with pytest.raises(ValueError, match="at least 2 axes"):
        init._calculate_fan_in_and_fan_out(plugrad.empty(3))
    w = plugrad.zeros(4)
    with pytest.warns(FutureWarning, match="constant_"):
        assert init.constant(w, 2.5) is w
    assert w.tolist() == [2.5] * 4
    for name in ("uniform", "normal", "xavier_uniform", "kaiming_normal", "orthogonal"):
        with pytest.warns(FutureWarning, match=f"{name}_"):
            getattr(init, name)(plugrad.zeros((3, 3)))


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_uniform_never_gives_its_upper_bound(dtype) -> None:
    # sample * (b - a) + a rounded up to b: 72 in 100,000 float16 draws on [1, 2), and most
    # float32 draws on a range a few ulps wide.
    if getattr(plugrad, dtype) not in plugrad.default_device().dtypes:
        pytest.skip(f"the default backend has no {dtype}")
    width = 1.0 if dtype == "float16" else 2.0**-20
    for fill in (plugrad.nn.init.uniform_, lambda t, a, b: t.uniform_(a, b)):
        x = fill(plugrad.empty(100_000, dtype=getattr(plugrad, dtype)), 1.0, 1.0 + width)
        assert float(x.max()) < 1.0 + width and float(x.min()) >= 1.0
        assert len(set(x.tolist())) > 1
    assert plugrad.empty(3).uniform_(2.0, 2.0).tolist() == [2.0, 2.0, 2.0]


def test_clipping_float16_gradients_rounds_once_as_pytorch() -> None:
    # The scale was cast to float16 first: two roundings, one float16 step off PyTorch's.
    torch = pytest.importorskip("torch")
    if plugrad.float16 not in plugrad.default_device().dtypes:
        pytest.skip("the default backend has no float16")
    values = np.array([4.015625, -1.140625, 5.703125], np.float16)
    results = []
    for lib in (plugrad, torch):
        half = lib.nn.Parameter(lib.zeros(3, dtype=lib.float16))
        half.grad = lib.tensor(values)
        lib.nn.utils.clip_grads_with_norm_([half], 1.0, lib.tensor(5.0))
        mixed = [lib.nn.Parameter(lib.zeros(3, dtype=lib.float16)), lib.nn.Parameter(lib.zeros(2))]
        mixed[0].grad, mixed[1].grad = lib.tensor(values), lib.tensor([3.0, 4.0])
        lib.nn.utils.clip_grad_norm_(mixed, 1.0)
        results.append([half.grad.tolist(), mixed[0].grad.tolist(), mixed[1].grad.tolist()])
        assert str(half.grad.dtype).endswith("float16")
    assert results[0] == results[1]


@pytest.mark.parametrize("fill", [init.normal_, init.trunc_normal_])
def test_a_nan_standard_deviation_is_refused_and_the_tensor_kept(fill) -> None:
    # normal_(w, 0, nan) filled w with NaN (PyTorch: "normal expects std >= 0.0").
    w = plugrad.ones(3)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="std must be non-negative"):
        fill(w, 0.0, float("nan"))
    assert w.tolist() == [1.0, 1.0, 1.0]
