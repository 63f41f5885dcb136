"""The jax backend: plugrad's engine, eagerly, on immutable JAX arrays."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import plugrad

jax = pytest.importorskip("jax", reason="the jax backend needs jax (the jax extra)")


def test_devices_are_named_after_jax_platforms() -> None:
    info = {b.name: b for b in plugrad.plugins.list_backends()}["jax"]
    assert "jax:cpu:0" in info.devices
    x = plugrad.ones(2, device="jax:cpu:0")
    assert isinstance(x.array, jax.Array) and x.device.name == "jax:cpu:0"


def test_float64_follows_jax_enable_x64() -> None:
    # tests/conftest.py turns x64 on before plugrad first uses jax
    assert jax.config.jax_enable_x64
    x = plugrad.tensor([1.0, 2.0], dtype=plugrad.float64, backend="jax", requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.dtype == plugrad.float64 and x.grad.tolist() == [2.0, 4.0]


def test_gradients_match_jax_grad() -> None:
    rng = np.random.default_rng(0)
    w_value, x_value = rng.normal(size=(5, 4)), rng.normal(size=(8, 5))
    w = plugrad.asarray(w_value, device="jax", requires_grad=True)
    plugrad.mean(plugrad.tanh(plugrad.asarray(x_value, device="jax") @ w) ** 2).backward()
    jnp = jax.numpy
    reference = jax.grad(lambda w: jnp.mean(jnp.tanh(x_value @ w) ** 2))(jnp.asarray(w_value))
    np.testing.assert_allclose(w.grad.numpy(), np.asarray(reference), rtol=1e-12)


def test_in_place_operators_rebind_to_a_new_array_and_bump_the_version() -> None:
    x = plugrad.zeros(3, backend="jax")
    before, version = x.array, x._version
    x += 1.0
    x[0] = 5.0
    assert x.tolist() == [5.0, 1.0, 1.0]
    assert x.array is not before and np.asarray(before).tolist() == [0.0, 0.0, 0.0]
    assert x._version == version + 2


def test_modifying_a_saved_jax_tensor_still_stops_backward() -> None:
    x = plugrad.tensor([1.0, 2.0], backend="jax", requires_grad=True)
    y = x * 1.0
    z = y * y  # saves y
    with plugrad.no_grad():
        y += 1.0
    with pytest.raises(plugrad.errors.InPlaceModificationError, match="modified"):
        z.sum().backward()


def test_optimizer_steps_update_jax_parameters() -> None:
    p = plugrad.tensor([1.0, -2.0], backend="jax", requires_grad=True)
    optimizer = plugrad.optim.SGD([p], lr=0.5)
    (p * p).sum().backward()
    optimizer.step()
    assert p.tolist() == [0.0, 0.0] and isinstance(p.array, jax.Array)


def test_transfers_to_and_from_numpy_carry_gradients() -> None:
    plugrad.testing.check_transfers("jax")


def test_seeded_random_numbers_repeat() -> None:
    a = plugrad.randn(4, generator=plugrad.Generator(seed=1, backend="jax"))
    b = plugrad.randn(4, generator=plugrad.Generator(seed=1, backend="jax"))
    assert a.device.name.startswith("jax:") and a.tolist() == b.tolist()


def test_a_strided_numpy_view_moves_to_jax_by_copy() -> None:
    strided = np.arange(8.0)[::2]
    x = plugrad.asarray(strided, device="jax:cpu:0")
    assert x.device.name == "jax:cpu:0" and x.tolist() == [0.0, 2.0, 4.0, 6.0]
    moved = plugrad.asarray(strided).to("jax")
    assert moved.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_views_are_separate_arrays_that_follow_in_place_changes_as_on_numpy() -> None:
    # A view and its base share no memory on JAX; plugrad brings each up to date.
    x = plugrad.tensor([1.0, 2.0, 3.0], backend="jax")
    row = x[1:]
    before = row.array
    x += 10.0
    assert x.tolist() == [11.0, 12.0, 13.0] and row.tolist() == [12.0, 13.0]
    assert row.array is not before  # a new array, not a write into the old one
    row[0] = -1.0
    assert row.tolist() == [-1.0, 13.0] and x.tolist() == [11.0, -1.0, 13.0]
    on_numpy = plugrad.tensor([1.0, 2.0, 3.0])
    numpy_row = on_numpy[1:]
    on_numpy += 10.0
    numpy_row[0] = -1.0
    assert on_numpy.tolist() == x.tolist() and numpy_row.tolist() == row.tolist()


def _aligned(values: list[float], alignment: int) -> np.ndarray:
    """``values`` as float64 in a buffer whose address is a multiple of ``alignment``."""
    spare = alignment // 8
    block = np.zeros(len(values) + spare)
    start = (-block.ctypes.data % alignment) // 8
    array = block[start : start + len(values)]
    array[...] = values
    return array


@pytest.mark.parametrize("alignment", [8, 16, 64, 128])
@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda a: plugrad.asarray(a, device="jax"), id="asarray"),
        pytest.param(lambda a: plugrad.from_dlpack(a, device="jax"), id="from_dlpack"),
        pytest.param(lambda a: plugrad.asarray(a, device="numpy").to("jax"), id="to"),
    ],
)
def test_host_memory_is_copied_whatever_its_alignment(make, alignment) -> None:
    # JAX would share an aligned NumPy buffer and copy any other, so a later change of
    # the NumPy array would show in some jax tensors and not in others.
    host = _aligned([1.0, 2.0, 3.0], alignment)
    assert host.ctypes.data % alignment == 0
    x = make(host)
    host[0] = 9.0
    assert x.tolist() == [1.0, 2.0, 3.0]


def test_products_ask_jax_for_full_precision() -> None:
    # JAX's default on GPUs and TPUs is a reduced-precision float32 product (TF32).
    import jax

    xp = plugrad.registry.resolve_device("jax").xp
    a = np.ones((2, 2), dtype=np.float32)
    for product in (xp.matmul, xp.tensordot, xp.vecdot):
        (equation,) = jax.make_jaxpr(product)(a, a).jaxpr.eqns
        assert equation.params["precision"] == (jax.lax.Precision.HIGHEST,) * 2, product


def test_linalg_runs_at_full_product_precision() -> None:
    import types

    import jax

    from plugrad.backends import jax_namespace

    fake = types.ModuleType("fake_linalg")
    fake.precision = lambda: jax.config.jax_default_matmul_precision  # type: ignore[attr-defined]
    assert jax_namespace._FullPrecisionModule(fake).precision() == "highest"
    assert jax.config.jax_default_matmul_precision != "highest"  # only inside the call
    xp = plugrad.registry.resolve_device("jax").xp
    assert isinstance(xp.linalg, jax_namespace._FullPrecisionModule)
    spd = np.array([[4.0, 2.0], [2.0, 3.0]], dtype=np.float32)
    np.testing.assert_allclose(np.asarray(xp.linalg.cholesky(spd)), np.linalg.cholesky(spd))


def test_float16_linear_algebra_is_a_dtype_error() -> None:
    # JAX's kernels raised a raw NotImplementedError ("Unsupported dtype float16").
    half = plugrad.eye(2, dtype=plugrad.float16, device="jax")
    for function in (plugrad.linalg.inv, plugrad.linalg.pinv, plugrad.linalg.cholesky):
        with pytest.raises(plugrad.errors.DtypeError, match=r"float16.*x\.to\(plugrad\.float32\)"):
            function(half)


def test_without_64_bit_types_integers_default_to_int32(monkeypatch) -> None:
    # JAX without jax_enable_x64 has no int64: plugrad's integer default follows JAX's own.
    device = plugrad.registry.resolve_device("jax")
    narrowed = {d: n for d, n in device._dtype_to_native.items() if d != plugrad.int64}
    monkeypatch.setattr(device, "_dtype_to_native", narrowed)
    assert device.default_int_dtype == plugrad.int32
    assert plugrad.arange(3, device=device).dtype == plugrad.int32
    assert plugrad.full(2, 7, device=device).dtype == plugrad.int32
    info = plugrad.__array_namespace_info__().default_dtypes(device=device)
    assert info["integral"] == info["indexing"] == plugrad.int32
    assert plugrad.arange(3, device="numpy").dtype == plugrad.int64  # where int64 exists


def test_without_64_bit_types_python_floats_collate_to_float32(monkeypatch) -> None:
    # default_collate asked for float64 whatever the backend: a DataLoader of samples with a
    # float (a regression target) stopped with a DtypeError on JAX without x64.
    from plugrad.utils.data import DataLoader, default_collate

    device = plugrad.registry.resolve_device("jax")
    narrowed = {d: n for d, n in device._dtype_to_native.items() if d != plugrad.float64}
    monkeypatch.setattr(device, "_dtype_to_native", narrowed)
    with plugrad.use_backend("jax"):
        batch = default_collate([0.5, np.float64(1.5)])
        assert batch.dtype == plugrad.float32 and batch.tolist() == [0.5, 1.5]
        targets = [y for _, y in DataLoader([(i, i / 2) for i in range(4)], batch_size=2)]
        assert [t.tolist() for t in targets] == [[0.0, 0.5], [1.0, 1.5]]
    assert default_collate([0.5, 1.5]).dtype == plugrad.float64  # (NumPy: PyTorch's float64)


def test_searchsorted_and_unique_all_answer_the_default_index_dtype() -> None:
    # jax.numpy.searchsorted answers int32 even with 64-bit types on.
    assert jax.config.jax_enable_x64
    values = np.array([3.0, 1.0, 3.0, 2.0, 3.0])
    for backend in ("numpy", "jax"):
        x = plugrad.asarray(values, device=backend)
        found = plugrad.searchsorted(plugrad.sort(x), x, side="right")
        assert found.dtype == plugrad.int64 and found.tolist() == [5, 1, 5, 2, 5]
        unique, first, inverse, counts = plugrad.unique_all(x)
        assert first.dtype == inverse.dtype == counts.dtype == plugrad.int64
        assert (unique.tolist(), counts.tolist()) == ([1.0, 2.0, 3.0], [1, 1, 3])
        assert (first.tolist(), inverse.tolist()) == ([1, 3, 0], [2, 0, 2, 1, 2])


@pytest.mark.parametrize(
    "index",
    [
        lambda x, t: x[4],
        lambda x, t: x[-5],
        lambda x, t: x[t(4)],
        lambda x, t: x[None, ..., 4],
        lambda x, t: x[t([1, 4])],
        lambda x, t: x.reshape(2, 2)[:, 2],
        lambda x, t: x.reshape(2, 2)[..., -3],
    ],
)
def test_an_index_past_the_end_is_refused_not_clamped(index) -> None:
    # JAX clamps such indices (x[4] of four elements read the last one, x[:, 3] of three
    # columns the third).
    x = plugrad.arange(4.0, device="jax")
    with pytest.raises(IndexError, match="out of bounds"):
        index(x, lambda v: plugrad.asarray(v, device="jax"))


@pytest.mark.parametrize(
    "write",
    [
        lambda x, t: x.__setitem__(4, 1.0),
        lambda x, t: x.__setitem__(t([5]), 1.0),
        lambda x, t: x.__setitem__(t([-5]), 1.0),
        lambda x, t: x.reshape(2, 2).__setitem__((slice(None), 2), 1.0),
        lambda x, t: x.index_put_((t([6]),), t([1.0])),
    ],
)
def test_a_write_past_the_end_is_refused_not_dropped(write) -> None:
    # JAX's .at[].set drops writes at such indices, without a word.
    x = plugrad.arange(4.0, device="jax")
    with pytest.raises(IndexError, match="out of bounds"):
        write(x, lambda v: plugrad.asarray(v, device="jax"))
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
    x[plugrad.asarray([0, -1], device="jax")] = 9.0
    x[1] = 5.0
    assert x.tolist() == [9.0, 5.0, 2.0, 9.0] and x[-4].item() == 9.0


_WITHOUT_INT64 = """
import warnings
warnings.simplefilter("error")
import plugrad as P
F, t = P.nn.functional, P.tensor
assert P.int64 not in P.default_device().dtypes
checks = {
    "BatchNorm1d": lambda: P.nn.BatchNorm1d(3)(P.ones(4, 3)),
    "median": lambda: P.median(t([1.0, 2, 3])),
    "nanmedian": lambda: P.nanmedian(t([1.0, float("nan"), 3])),
    "kthvalue": lambda: P.kthvalue(t([3.0, 1, 2]), 2),
    "quantile": lambda: P.quantile(t([1.0, 2, 3, 4]), 0.5),
    "unique": lambda: t([1.0, 2, 2]).unique(return_inverse=True, return_counts=True),
    "bucketize": lambda: P.bucketize(t([2.0]), t([1.0, 3])),
    "bincount": lambda: P.bincount(t([0, 1, 1])),
    "one_hot": lambda: F.one_hot(t([0, 2]), 3),
    "interpolate": lambda: F.interpolate(P.ones(1, 1, 3, 4), scale_factor=2),
    "nearest-exact": lambda: F.interpolate(P.ones(1, 1, 3, 4), scale_factor=2,
                                           mode="nearest-exact"),
    "put_": lambda: P.zeros(3).put_(t([1]), t([5.0])),
    "masked_scatter": lambda: P.zeros(3).masked_scatter(t([True, False, True]), t([1.0, 2.0])),
    "multi_margin_loss": lambda: F.multi_margin_loss(P.ones(2, 3), t([0, 2])),
    "multilabel_margin_loss": lambda: F.multilabel_margin_loss(P.ones(1, 3), t([[0, -1, 1]])),
    "an empty index list": lambda: P.ones(3)[[]],
    "sort of a 0-d tensor": lambda: t(3.0).sort(),
    "matrix_rank": lambda: P.linalg.matrix_rank(P.eye(3)),
    "Categorical": lambda: P.distributions.Categorical(probs=t([0.5, 0.5])).enumerate_support(),
    "adaptive_max_pool2d": lambda: F.adaptive_max_pool2d(P.ones(1, 3, 5), 2),
}
failed = []
for name, check in checks.items():
    try:
        check()
    except Exception as error:
        failed.append(f"{name}: {type(error).__name__}: {error}")
assert not failed, "\\n".join(failed)
# uint32 values beyond int32 compared with -3: answered (every one is above it), not
# compared in int32, which would wrap them.
assert (t([1, 2], dtype=P.uint8) < -3).tolist() == [False, False]
assert (t([4000000000, 1], dtype=P.uint32) < -3).tolist() == [False, False]
assert (t([4000000000, 1], dtype=P.uint32) != -3).tolist() == [True, True]
# A bool meets an int in the default int32 (it asked for int64); a float tensor meets an int
# beyond int32 as the float it stands for (JAX refused to parse it).
assert (t([True, False]) * 3).tolist() == [3, 0] and (t([True]) * 3).dtype == P.int32
assert (t([1.0]) * 2**31).tolist() == [2147483648.0]
assert P.zeros(1).fill_(2**40).tolist() == [1099511627776.0]
assert P.where(t([True]), t([1.0]), 2**40).tolist() == [1.0]
# Values int32 cannot hold are refused, not wrapped: int64 NumPy data (2**33 became 0), an
# arange past 2**31.
import numpy as np
for call in (lambda: t(np.array([2**33, 3])), lambda: P.arange(2**31 - 2, 2**31 + 1)):
    try:
        call()
    except P.errors.ScalarRangeError:
        pass
    else:
        raise AssertionError("int32 values wrapped")
assert t(np.array([5, 3])).tolist() == [5, 3]
# plugrad.testing.assert_close compared in int64 and float64 (DtypeError on equal values).
x = t(np.array([1.0, 2.0], np.float32))
P.testing.assert_close(x > 0, np.array([True, True]))
P.testing.assert_close(t(np.array([1, 2], np.int32)), np.array([1, 2], np.int32))
try:
    P.testing.assert_close(x, np.array([1.0, 2.5], np.float32))
except AssertionError as error:
    assert "1 of 2 elements differ" in str(error), error
else:
    raise AssertionError("assert_close passed different values")
"""


def test_without_64_bit_types_the_library_asks_for_no_int64() -> None:
    # BatchNorm1d (its num_batches_tracked), median, unique counts, one_hot, interpolate and
    # more asked for int64 inside, which JAX without jax_enable_x64 does not have.
    environment = {**os.environ, "JAX_ENABLE_X64": "0", "PLUGRAD_BACKEND": "jax"}
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_INT64], env=environment, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod", "cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32"])
def test_running_sums_and_products_of_small_integers_widen_as_the_standard_says(name, dtype):
    # JAX kept int8 for a running product: 100 * 100 came out 16.
    values = np.array([100, 100, 3])
    kwargs = {"dim": 0} if name in ("cumsum", "cumprod") else {}
    function, kind = getattr(plugrad, name), getattr(plugrad, dtype)
    ours = function(plugrad.asarray(values, dtype=kind, device="jax"), **kwargs)
    reference = function(plugrad.asarray(values, dtype=kind), **kwargs)
    assert ours.dtype == reference.dtype
    assert ours.tolist() == reference.tolist()


def test_tensors_of_python_numbers_are_not_weakly_typed() -> None:
    # A JAX array made from a Python number takes the other operand's dtype: int8 + tensor(100)
    # stayed int8 and wrapped to -56, where a 0-d int64 tensor promotes (numpy backend: 200).
    with plugrad.use_backend("jax"):
        total = plugrad.tensor([100], dtype=plugrad.int8) + plugrad.tensor(100)
        assert total.dtype == plugrad.int64 and total.tolist() == [200]
        assert plugrad.maximum(
            plugrad.tensor([1], dtype=plugrad.uint8), plugrad.tensor(-1)
        ).tolist() == [1]


def test_cholesky_and_eigh_read_the_lower_triangle_as_numpy() -> None:
    # JAX averaged the matrix with its transpose: eigvalsh([[2, 100], [1, 2]]) gave
    # [-48.5, 52.5] for every UPLO, cholesky of an upper-triangular part a wrong factor.
    matrix = np.array([[2.0, 100.0], [1.0, 2.0]])
    factor = np.array([[4.0, 2.0], [0.0, 4.0]])
    for device in ("numpy", "jax"):
        m = plugrad.asarray(matrix, device=device)
        assert plugrad.linalg.eigvalsh(m).tolist() == pytest.approx([1.0, 3.0])
        assert plugrad.linalg.eigvalsh(m, UPLO="U").tolist() == pytest.approx([-98.0, 102.0])
        assert plugrad.linalg.eigh(m)[0].tolist() == pytest.approx([1.0, 3.0])
        got = plugrad.linalg.cholesky(plugrad.asarray(factor, device=device))
        np.testing.assert_allclose(got.numpy(), [[2.0, 0.0], [0.0, 2.0]])


_WITHOUT_X64 = """
import plugrad
import plugrad.nn.functional as F
from plugrad.optim.swa_utils import AveragedModel

with plugrad.use_backend("jax"):
    image = plugrad.arange(16.0).reshape(1, 1, 4, 4)
    grid = F.affine_grid(plugrad.eye(2, 3)[None], (1, 1, 4, 4), align_corners=False)
    same = F.grid_sample(image, grid, align_corners=False)
    print(float((same - image).abs().max()))
    truth = plugrad.ones((2, 2), dtype=plugrad.bool)
    print(plugrad.einsum("ij,jk->ik", truth, truth).tolist())
    print(plugrad.einsum("ij->", plugrad.ones((2, 2), dtype=plugrad.int32)).item())
    print(AveragedModel(plugrad.nn.Linear(2, 2)).n_averaged.dtype)
    counted = plugrad.bincount(plugrad.tensor([0, 1, 1]), weights=plugrad.tensor([1, 2, 3]))
    print(counted.tolist(), counted.dtype)
    tall = plugrad.nn.utils.parametrizations.orthogonal(plugrad.nn.Linear(3, 5)).weight
    print(round(float((tall.mT @ tall - plugrad.eye(3)).abs().max()), 4))
"""


def test_functions_that_made_64_bit_integers_work_without_jax_enable_x64() -> None:
    # grid_sample, einsum of bools or ints, AveragedModel and bincount with integer weights
    # asked for int64 or float64, which JAX without x64 lacks: a DtypeError on ordinary input.
    # So did the householder map of parametrizations.orthogonal (a non-square weight's).
    environment = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_X64], capture_output=True, text=True, env=environment
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:6] == [
        "0.0",
        "[[2, 2], [2, 2]]",
        "4",
        "plugrad.int32",
        "[1.0, 5.0] plugrad.float32",
        "0.0",
    ]
