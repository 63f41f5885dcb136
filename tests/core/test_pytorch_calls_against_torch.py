"""Calls PyTorch users write that plugrad refused or got wrong, against ``torch``.

Each raised a TypeError (``x.softmax(1, dtype=...)``, ``linalg.pinv(A, hermitian=True)``,
``matrix_norm(A, 2)``, ``repeat_interleave(counts)``...), an error from inside a kernel
(``histc`` of data holding NaN, the gradient of ``rfft(norm=None)``), or a silently
different result: ``qr(mode='r')`` split R into "Q" and "R", ``norm(p='nuc',
keepdim=True)`` put the kept axes last, ``arange`` read NumPy float scalars and 0-d
tensors as integers, the real transforms of integers computed in float64, and
``default_collate`` took the first sample's type for the whole batch; ``chunk`` of an empty
dimension gave one piece, ``index_select`` and ``unfold`` of a 0-d tensor an extra dimension.
A NumPy integer or a 0-d integer tensor given for an int (a dim, a size, a count) was refused
by many functions, or reached the backward rule as given and failed there.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from torch_compare import assert_arrays_agree

import plugrad
from plugrad.errors import ArgumentError, DtypeError, ShapeError

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(7)
MATRICES = _rng.standard_normal((3, 4, 4))
MATRICES[1] = MATRICES[1] @ np.diag([1.0, 1.0, 0.0, 1e-17])  # rank 2
SYMMETRIC = MATRICES + MATRICES.transpose(0, 2, 1)
NAN = float("nan")
#: array-api-strict has no float16: the cases using it are skipped there.
HAS_FLOAT16 = plugrad.float16 in plugrad.default_device().dtypes
no_float16 = pytest.mark.skipif(not HAS_FLOAT16, reason="the default backend has no float16")

# name -> (input array, program(lib, x)); x requires grad where the input is floating
# fmt: off
CASES: dict[str, tuple[Any, Callable[..., Any]]] = {
    "x.softmax(dim, dtype)": (MATRICES, lambda lib, x: x.float().softmax(1, dtype=lib.float64)),
    "x.log_softmax(dim, dtype)": (MATRICES, lambda lib, x: x.float().log_softmax(-1, lib.float64)),
    "histc with NaN": (np.array([NAN, 1.0, 0.5, 2.0, NAN]),
                       lambda lib, x: lib.histc(x.detach(), bins=4, min=0, max=2)),
    "repeat_interleave(counts)": (np.array([1, 2, 0, 3]), lambda lib, x: lib.repeat_interleave(x)),
    "repeat_interleave(x, counts, dim)": (
        np.arange(6.0).reshape(2, 3),
        lambda lib, x: lib.repeat_interleave(x, lib.tensor([2, 1]), dim=0)),
    "eigvalsh(UPLO='U')": (SYMMETRIC, lambda lib, x: lib.linalg.eigvalsh(x, UPLO="U")),
    "eigvalsh of the lower triangle": (MATRICES, lambda lib, x: lib.linalg.eigvalsh(x)),
    "pinv(atol)": (MATRICES, lambda lib, x: lib.linalg.pinv(x, atol=1e-6)),
    "pinv(rtol)": (MATRICES, lambda lib, x: lib.linalg.pinv(x, rtol=0.1)),
    "pinv(atol per matrix)": (
        MATRICES, lambda lib, x: lib.linalg.pinv(x, atol=lib.tensor([0.1, 0.2, 0.3],
                                                                    dtype=lib.float64))),
    "pinv(hermitian)": (SYMMETRIC, lambda lib, x: lib.linalg.pinv(x, hermitian=True)),
    "matrix_rank(atol)": (MATRICES, lambda lib, x: lib.linalg.matrix_rank(x.detach(), atol=0.5)),
    "matrix_rank(hermitian, rtol)": (
        SYMMETRIC, lambda lib, x: lib.linalg.matrix_rank(x.detach(), hermitian=True, rtol=0.2)),
    "matrix_rank of empty matrices": (np.zeros((2, 0, 3)), lambda lib, x: lib.linalg.matrix_rank(
        x.detach())),
    "matrix_norm(A, 2)": (MATRICES, lambda lib, x: lib.linalg.matrix_norm(x, 2)),
    "vector_norm(x, 1, dim, keepdim)": (MATRICES, lambda lib, x: lib.linalg.vector_norm(x, 1, 2,
                                                                                       True)),
    "vector_norm(x, inf)": (MATRICES, lambda lib, x: lib.linalg.vector_norm(x, float("inf"))),
    "matrix_norm(A, 'nuc', dims)": (MATRICES, lambda lib, x: lib.linalg.matrix_norm(x, "nuc",
                                                                                   (0, 1))),
    "qr(mode='r')": (MATRICES[:, :, :3], lambda lib, x: lib.linalg.qr(x.detach(), mode="r")[1]),
    "qr(mode='r') Q": (MATRICES, lambda lib, x: lib.linalg.qr(x.detach(), mode="r")[0]),
    "norm(p='nuc', dim, keepdim)": (MATRICES, lambda lib, x: lib.norm(x, p="nuc", dim=(0, 1),
                                                                     keepdim=True)),
    "norm(p='nuc', dim reversed, keepdim)": (
        MATRICES, lambda lib, x: x.norm(p="nuc", dim=(2, 0), keepdim=True)),
    "solve with a stack of vectors": (
        MATRICES[:2] + 4 * np.eye(4),
        lambda lib, x: lib.linalg.solve(x, lib.tensor(MATRICES[0, :2], dtype=lib.float64))),
    "arange(numpy float32 step)": (np.array(0.0), lambda lib, x: lib.arange(0, 2, np.float32(0.5))),
    "arange(0-d tensors)": (np.array(0.0), lambda lib, x: lib.arange(
        lib.tensor(0.0), lib.tensor(1.0), lib.tensor(0.25))),
    "arange(0-d float)": (np.array(0.0), lambda lib, x: lib.arange(lib.tensor(2.5))),
    "arange(fractions, int64)": (np.array(0.0), lambda lib, x: lib.arange(-2.5, 3.7, 1.5,
                                                                          dtype=lib.int64)),
    "rfft of integers": (np.arange(6), lambda lib, x: lib.fft.rfft(x)),
    "irfft of integers": (np.arange(6), lambda lib, x: lib.fft.irfft(x)),
    "hfft of bools": (np.array([True, False, True]), lambda lib, x: lib.fft.hfft(x)),
    "fftn of integers": (np.arange(6).reshape(2, 3), lambda lib, x: lib.fft.fftn(x)),
    "lstsq of a vector": (MATRICES[0, :, :3], lambda lib, x: lib.linalg.lstsq(
        x, lib.tensor(MATRICES[1, :, 0], dtype=lib.float64)).solution),
    "lstsq of a stack of vectors": (MATRICES[:, :, :3], lambda lib, x: lib.linalg.lstsq(
        x, lib.tensor(MATRICES[:, :, 3], dtype=lib.float64)).solution),
    "searchsorted of rows": (np.array(0.0), lambda lib, x: lib.searchsorted(
        lib.tensor([[1.0, 2.0, 3.0], [0.0, 5.0, 6.0]]), lib.tensor([[2.5, 0.0], [5.5, 7.0]]),
        right=True)),
    "fft(x, n, dim, norm) by position": (MATRICES[0], lambda lib, x: lib.fft.fft(x, 6, 0,
                                                                            "ortho").abs()),
    "fftn(dim=)": (MATRICES, lambda lib, x: lib.fft.fftn(x, dim=(2, 0)).abs()),
    "fft2": (MATRICES, lambda lib, x: lib.fft.fft2(x).abs()),
    "ifft2(s=)": (MATRICES, lambda lib, x: lib.fft.ifft2(x, s=(3, 5)).abs()),
    "rfft2, irfft2": (MATRICES, lambda lib, x: lib.fft.irfft2(lib.fft.rfft2(x), s=(4, 4))),
    "x.max(other=)": (MATRICES[0], lambda lib, x: x.max(other=x.flip(0))),
    "min(x, other=)": (MATRICES[0], lambda lib, x: lib.min(x, other=x.flip(1))),
    # -1 on the halved axis is PyTorch's default length 2 * (m - 1) there (it was m)
    "irfft2(s=(n, -1))": (MATRICES, lambda lib, x: lib.fft.irfft2(lib.fft.rfft2(x), s=(3, -1))),
    "irfftn(s=(-1, -1), dim=)": (MATRICES, lambda lib, x: lib.fft.irfftn(
        lib.fft.rfftn(x, dim=(0, 2)), s=(-1, -1), dim=(0, 2))),
    "fftshift(dim=)": (MATRICES, lambda lib, x: lib.fft.fftshift(x, dim=1) * x),
    "rfft(norm=None)": (np.arange(6.0), lambda lib, x: lib.fft.rfft(x, norm=None).abs()),
    # (PyTorch has no gradient of igamma in its first argument)
    "igamma, igammac, x.igamma_()": (np.abs(MATRICES[0]) + 0.1, lambda lib, x: (
        lib.igamma(lib.full_like(x, 2.0), x) + lib.full_like(x, 0.5).igammac(x)
        + lib.full_like(x, 3.0).igamma_(x.detach()))),
    "x.diagflat(offset)": (np.arange(3.0), lambda lib, x: x.diagflat(1) + x.diagflat(-1)),
    "x.hardshrink(), x.prelu()": (MATRICES[0], lambda lib, x: (
        x.hardshrink(0.3) + x.prelu(lib.tensor([0.25], dtype=x.dtype)))),
    "histc with min == max != 0": (np.array([-1.0, 0.2, 0.5, 1.0, 1.5, 3.0]),
                                   lambda lib, x: lib.histc(x.detach(), 2, 1, 1)),
    "ldexp of float16 by int64 (half precision)": (np.array([1e-3, 2.0]), lambda lib, x: lib.ldexp(
        x.half(), lib.tensor([10, 1])).double()),
    "ldexp of integers": (np.array([3, 4]), lambda lib, x: lib.ldexp(x, lib.tensor([1, 2]))),
    # log(y) was taken in float16, then widened: a float16 input's precision for a float32 result
    "xlogy of float32 and float16": (np.array([1.0, 2.0]), lambda lib, x: lib.xlogy(
        x.float(), lib.tensor([2.0, 3.0], dtype=lib.float16))),
    "xlog1py of float16 and float64 (half precision)": (
        np.array([0.3, 2.0]),
        lambda lib, x: lib.special.xlog1py(lib.tensor([2.0, 3.0], dtype=lib.float64), x.half())),
    "logaddexp2 of float16 and float64": (np.array([1e-3, 2.0]), lambda lib, x: lib.logaddexp2(
        x.half(), lib.tensor([1.0, 2.0], dtype=lib.float64))),
    "logaddexp2 of float16 and int64 (half precision)": (
        np.array([1e-3, 2.0]),
        lambda lib, x: lib.logaddexp2(x.half(), lib.tensor([1, 2])).double()),
    "roll with a list of shifts": (MATRICES[0], lambda lib, x: lib.roll(x, [1]) * x),
    "meshgrid of a 0-d and a 1-d tensor": (np.array(2.0), lambda lib, x: lib.stack(lib.meshgrid(
        x, lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64), indexing="xy")) * 2),
    "isclose of bools": (np.array([True, False]), lambda lib, x: lib.isclose(
        x, lib.tensor([True, True]))),
    "isclose of uint8 across the wrap": (
        np.array([1, 250], dtype=np.uint8),
        lambda lib, x: lib.isclose(x, lib.tensor([2, 255], dtype=lib.uint8), rtol=0, atol=5)),
    "isclose of int8 at its extremes": (
        np.array([-128, 127], dtype=np.int8),
        lambda lib, x: lib.isclose(x, lib.tensor([127, -128], dtype=lib.int8), rtol=0, atol=5)),
    "isclose of int64 beyond float64's integers": (  # they were compared in float64
        np.array([2**62, 2**53 + 1, -(2**63)]),
        lambda lib, x: lib.isclose(x, lib.tensor([2**62 + 1, 2**53, 2**63 - 1]), rtol=0, atol=0)),
    "isclose of int64 far apart": (np.array([2**62, 10]), lambda lib, x: lib.isclose(
        x, lib.tensor([-2**62, 11]), rtol=0.1, atol=0)),
    "allclose of uint8 across the wrap": (np.array([1], dtype=np.uint8), lambda lib, x: lib.tensor(
        lib.allclose(x, lib.tensor([2], dtype=lib.uint8), rtol=0, atol=5))),
    "chunk of an empty dimension": (np.zeros((0, 3)), lambda lib, x: lib.stack(x.chunk(3)) * 2),
    "index_select of a 0-d tensor": (np.array(3.0),
                                     lambda lib, x: x.index_select(0, lib.tensor([0])) * 2),
    "unfold of a 0-d tensor": (np.array(5.0), lambda lib, x: x.unfold(0, 1, 1) * 3),
    "torch.scatter_add(input, dim, index, src)": (
        MATRICES[0], lambda lib, x: lib.scatter_add(x, 1, lib.tensor([[0, 1, 1, 3]] * 4), x * 2)),
    "index_put of a bool mask, accumulated": (
        MATRICES[0], lambda lib, x: x.index_put(
            (lib.tensor([True, False, True, True]), lib.tensor([1, 0, 1])), x[0, :3] * 2,
            accumulate=True)),
    "cholesky(upper=True) reads the upper triangle": (
        np.array([[4.0, 1.0, 0.5], [2.0, 3.0, 0.2], [-1.0, 7.0, 2.0]]),
        lambda lib, x: lib.linalg.cholesky(x, upper=True)),
    "torch.nonzero(x, as_tuple=False)": (np.array([[0, 1], [1, 1]]),
                                         lambda lib, x: lib.nonzero(x, as_tuple=False)),
    "linalg.pinv(A, rcond) by position": (MATRICES[1], lambda lib, x: lib.linalg.pinv(x, 1e-3)),
    "linalg.matrix_rank(A, tol) by position": (
        MATRICES[1], lambda lib, x: lib.linalg.matrix_rank(x.detach(), 1e-3)),
    "meshgrid of a list": (np.array([1.0, 2.0]), lambda lib, x: lib.stack(lib.meshgrid(
        [x, lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)], indexing="ij")) * 2),
    "nan_to_num of complex": (np.array([complex(NAN, 1.0), complex(2.0, np.inf), 3 + 0j]),
                              lambda lib, x: lib.nan_to_num(x.detach(), nan=5.0, posinf=1.0)),
    "nan_to_num of bools, in place": (np.array([True, False]),
                                      lambda lib, x: x.clone().nan_to_num_()),
    "fill_ of an integer tensor with a float": (np.array([1, 2]), lambda lib, x: x.clone().fill_(
        -2.7)),
    "fill_ and zero_ of a bool tensor": (np.array([True, False]), lambda lib, x: lib.stack(
        [x.clone().fill_(2), x.clone().zero_()])),
    "x.take(index) of the flattened tensor": (MATRICES[0], lambda lib, x: x.take(lib.tensor(
        [[0, 15], [-1, 3]]))),
    "argwhere": (np.array([[0, 1], [2, 0]]), lambda lib, x: lib.argwhere(x) + x.argwhere()),
}
# fmt: on


def _run(lib: Any, name: str) -> list[np.ndarray]:
    value, program = CASES[name]
    floating = np.asarray(value).dtype.kind == "f"
    x = lib.tensor(value, requires_grad=floating) if floating else lib.tensor(value)
    out = program(lib, x)
    results = [np.asarray(out.detach().numpy()), np.asarray(str(out.dtype).split(".")[-1])]
    if out.requires_grad:
        out.sum().backward()
        results.append(np.asarray(x.grad.numpy()))
    return results


@pytest.mark.parametrize("name", CASES)
def test_the_call_gives_pytorchs_values_dtypes_and_gradients(name: str):
    if not HAS_FLOAT16 and ("float16" in name or "half" in name):
        pytest.skip("the default backend has no float16")
    ours, theirs = _run(plugrad, name), _run(torch, name)
    half = ours[0].dtype == np.float16 or name.endswith("(half precision)")
    single = ours[0].dtype in (np.float32, np.complex64)
    tolerance = (1e-3, 1e-4) if half else (1e-5, 1e-6) if single else (1e-7, 1e-9)
    assert_arrays_agree(ours, theirs, *tolerance)


def test_meshgrid_refuses_what_pytorch_refuses_and_broadcast_shapes_reads_ints():
    with pytest.raises(plugrad.errors.ShapeError, match="1-D"):
        plugrad.meshgrid(plugrad.ones(2, 2), indexing="ij")
    assert plugrad.broadcast_shapes(3, (2, 1)) == tuple(torch.broadcast_shapes(3, (2, 1)))
    assert plugrad.allclose(plugrad.tensor([True]), plugrad.tensor([True]))


def test_histc_refuses_a_range_that_is_not_finite():
    for data in ([NAN, 1.0], [np.inf, 1.0]):
        with pytest.raises(ArgumentError, match="not finite"):
            plugrad.histc(plugrad.tensor(data))
        with pytest.raises(RuntimeError, match="not finite"):
            torch.histc(torch.tensor(data))


@pytest.mark.parametrize(
    "batch",
    [
        [1, 2.5],
        [True, 2],
        [2.5, 1],
        [np.float32(1.5)],
        [np.int32(1), np.int32(2)],
        [(1, 2.0), (3, 4.5)],
        [{"a": 1, "b": (np.float16(1), 2)}],
    ],
    ids=[
        "int then float",
        "bool then int",
        "floats",
        "float32 scalars",
        "int32 scalars",
        "tuples",
        "nested",
    ],
)
def test_default_collate_infers_the_batch_as_pytorch(batch):
    if not HAS_FLOAT16 and "float16" in repr(batch):
        pytest.skip("the default backend has no float16")
    from torch.utils.data import default_collate as theirs

    from plugrad.utils.data import default_collate as ours

    def flat(value):
        if isinstance(value, dict):
            return {k: flat(v) for k, v in value.items()}
        if isinstance(value, list):
            return ["list", *map(flat, value)]
        return (value.tolist(), str(value.dtype).split(".")[-1])

    assert flat(ours(batch)) == flat(theirs(batch))


def test_arange_refuses_a_step_of_zero_as_pytorch():
    from plugrad.errors import InvalidArgumentError

    for call in (
        lambda lib: lib.arange(0, 5, 0),
        lambda lib: lib.arange(0, 5, 0.5, dtype=lib.int64),
    ):
        with pytest.raises(InvalidArgumentError, match="step must be nonzero"):
            call(plugrad)
        with pytest.raises((RuntimeError, ValueError), match="step must be nonzero"):
            call(torch)


def test_view_as_another_dtype_says_what_to_do_instead():
    with pytest.raises(DtypeError, match=r"reinterprets.*x.to\(plugrad.int32\)"):
        plugrad.tensor([1.0, 2.0]).view(plugrad.int32)
    x = plugrad.zeros(3)
    x.view(plugrad.float32).add_(1.0)  # its own dtype: a view, as PyTorch's (it was refused)
    assert x.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("interpolation", ["linear", "lower", "midpoint"])
def test_quantile_is_differentiable_in_q_as_in_pytorch(interpolation):
    # The positions used q detached: q.grad stayed None where PyTorch gives (high - low) * (n - 1).
    def run(lib):
        x = lib.tensor(MATRICES[0], requires_grad=True)
        q = lib.tensor([0.3, 0.5, 0.95], dtype=lib.float64, requires_grad=True)
        out = lib.quantile(x, q, dim=1, interpolation=interpolation)
        out.sum().backward()
        return out.detach().numpy(), x.grad.numpy(), None if q.grad is None else q.grad.numpy()

    (value, x_grad, q_grad), (expected, x_expected, q_expected) = run(plugrad), run(torch)
    assert_arrays_agree([value, x_grad], [expected, x_expected], 1e-7, 1e-9)
    assert (q_grad is None) == (q_expected is None)
    if q_grad is not None:
        assert_arrays_agree([q_grad], [q_expected], 1e-7, 1e-9)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("nan_function", ["quantile", "nanquantile"])
def test_quantiles_of_slices_with_nan_send_the_gradient_to_a_nan_as_pytorch(
    interpolation, nan_function
):
    # A where() put the NaN in the result: no element got any gradient (PyTorch's goes to
    # the NaN that the quantile reads).
    nan = math.nan
    values = [
        [1.0, nan, 3.0, 0.0],
        [1.0, nan, nan, 0.0],
        [nan, nan, nan, nan],
        [4.0, 2.0, 1.0, 3.0],
    ]

    def run(lib):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        q = lib.tensor([0.3, 0.6], dtype=lib.float64)
        out = getattr(lib, nan_function)(x, q, dim=1, interpolation=interpolation)
        out.sum().backward()
        return out.detach().numpy(), x.grad.numpy()

    for mine, its in zip(run(plugrad), run(torch), strict=True):
        np.testing.assert_array_equal(mine, its)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: lib.fmod(x, 0),
        lambda lib, x: lib.remainder(x, lib.tensor([0, 1])),
        lambda lib, x: x % 0,
        lambda lib, x: x // lib.tensor([1, 0]),
        lambda lib, x: lib.div(x, 0, rounding_mode="floor"),
        lambda lib, x: lib.div(x, lib.tensor([0, 2]), rounding_mode="trunc"),
    ],
)
def test_integer_division_by_zero_raises_as_in_pytorch(call):
    # NumPy gives 0 (with a warning): a number where PyTorch raises.
    for lib, error in ((plugrad, ZeroDivisionError), (torch, RuntimeError)):
        with pytest.raises(error, match=r"ZeroDivisionError|division by zero"):
            call(lib, lib.tensor([7, -7]))


@no_float16
def test_lists_of_tensors_keep_their_dtypes_in_tensor_as_tensor_and_asarray():
    def dtypes(lib):
        h = lib.tensor(1.5, dtype=lib.float16)
        i16 = lib.tensor(1, dtype=lib.int16)
        f64 = lib.tensor(0.1, dtype=lib.float64)
        lists = ([h, h, 3], [h, 3.5], [i16, True], [i16, 2.5], [i16, 70000], [f64, 1], [f64, f64])
        made = [make(data) for make in (lib.tensor, lib.as_tensor) for data in lists]
        made.append(lib.as_tensor([lib.tensor([1.5]), lib.tensor([2.5])]))
        return [(str(t.dtype).split(".")[-1], tuple(t.shape), t.tolist()) for t in made]

    assert dtypes(plugrad) == dtypes(torch)


def test_rounding_integers_to_decimal_places_is_refused_as_in_pytorch():
    # decimals was ignored for integers: round([12, -17, 25], decimals=-1) gave them back.
    with pytest.raises(plugrad.errors.DtypeError, match=r"\.float\(\)"):
        plugrad.round(plugrad.tensor([12, -17, 25]), decimals=-1)
    with pytest.raises(NotImplementedError):
        torch.round(torch.tensor([12, -17, 25]), decimals=-1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rounding_to_decimal_places_past_the_dtypes_range_gives_the_rounded_values(dtype):
    # 10**decimals past float32's range was a ScalarRangeError naming full(); x * 10**decimals
    # overflowing gave inf; PyTorch gives NaN and inf there.
    values = [1.25, -2.5, 1e30, 3e38, float("inf"), float("nan"), 0.0]
    x = plugrad.tensor(values, dtype=getattr(plugrad, dtype))
    cases = {50: values, 400: values, 20: values, -39: [0.0, -0.0, 0.0, 0.0, *values[4:]]}
    for decimals, expected in cases.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (an inf * 0 warned of itself on NumPy)
            got = plugrad.round(x, decimals=decimals).numpy()
        np.testing.assert_array_equal(got, np.array(expected, dtype=dtype), strict=True)
        assert np.array_equal(np.signbit(got), np.signbit(np.array(expected)))
    halves = plugrad.round(x, decimals=1).numpy()[:2]  # to even
    np.testing.assert_array_equal(halves, np.array([1.2, -2.5], dtype=dtype))


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_logit_of_integers_is_taken_of_their_values(dtype):
    # 1 - x was computed in the integers' dtype: a uint8 3 gave log(3 / 254).
    values = [3, 0, 1, 127] if dtype == "uint8" else [-128, 0, 1, 5]
    with np.errstate(all="ignore"):  # (Dask computes here, at .numpy())
        ours = plugrad.logit(plugrad.tensor(values, dtype=getattr(plugrad, dtype))).numpy()
    theirs = torch.logit(torch.tensor(values, dtype=getattr(torch, dtype)))
    np.testing.assert_array_equal(ours, theirs.numpy())


@pytest.mark.parametrize("eps", [0.2, 0.5, 0.7, 1.0])
def test_logit_clamps_as_pytorch_also_where_eps_crosses_the_bounds(eps):
    # With eps > 0.5, NumPy's clip gave every value the upper bound: the logits of x below
    # eps came out with the wrong sign.
    values = [0.0, 0.2, 0.5, 0.9, 1.0]
    x, t = plugrad.tensor(values, dtype=plugrad.float64), torch.tensor(values, dtype=torch.float64)
    with np.errstate(all="ignore"):
        ours = plugrad.logit(x, eps=eps).numpy()
    np.testing.assert_array_equal(ours, torch.logit(t, eps=eps).numpy())


@pytest.mark.parametrize(
    ("fill", "dtype"), [(float("nan"), "int32"), (1e10, "int32"), (1e10, "float16"), (300, "uint8")]
)
def test_a_fill_value_its_dtype_cannot_hold_is_refused_as_in_pytorch(fill, dtype):
    if not HAS_FLOAT16 and dtype == "float16":
        pytest.skip("the default backend has no float16")
    # NumPy's cast made nan and 1e10 into -2147483648 and 1e10 into inf in float16.
    with pytest.raises(plugrad.errors.ScalarRangeError, match="cannot be held"):
        plugrad.full((2,), fill, dtype=getattr(plugrad, dtype))
    with pytest.raises(RuntimeError):
        torch.full((2,), fill, dtype=getattr(torch, dtype))
    assert plugrad.full((2,), -2.7, dtype=plugrad.int32).tolist() == [-2, -2]


def test_fftn_over_no_axes_is_complex_and_repeated_axes_are_refused():
    # fftn(x, dim=()) gave the float64 input back as float64; dim=(0, 0) transformed twice.
    for lib in (plugrad, torch):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64)
        assert lib.fft.fftn(x, dim=()).dtype == lib.complex128
        assert lib.fft.ifftn(x.float(), dim=()).dtype == lib.complex64
        with pytest.raises((ValueError, RuntimeError), match=r"unique|twice"):
            lib.fft.fftn(lib.ones(2, 2), dim=(0, -2))


def test_python_types_stand_for_dtypes_as_in_pytorch():
    # dtype=float raised "expected a plugrad dtype"; x.to(float) took float for a device.
    for lib in (plugrad, torch):
        made = [
            lib.zeros(2, dtype=float), lib.tensor([1, 2], dtype=float), lib.ones(2).to(float),
            lib.arange(3, dtype=int), lib.as_tensor([1.5], dtype=complex),
            lib.full((2,), 1, dtype=bool), lib.ones(2).to(dtype=int),
            lib.zeros_like(lib.ones(2), dtype=float), lib.randn(2, dtype=float),
        ]  # fmt: skip
        names = [str(t.dtype).split(".")[-1] for t in made]
        assert names == ["float64", "float64", "float64", "int64", "complex128", "bool", "int64",
                         "float64", "float64"]  # fmt: skip


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: x.masked_fill_(lib.tensor([1, 0, 2]), 1.0),
        lambda lib, x: x.masked_fill(lib.tensor([0.5, 0.0, 2.0]), 1.0),
        lambda lib, x: x.where(lib.tensor([1, 0, 1]), 2.0),
        lambda lib, x: x.masked_fill_(lib.tensor([True, False, True]), lib.tensor([1.0, 2, 3])),
        lambda lib, x: x.fill_(lib.tensor([1.0, 2.0, 3.0])),
    ],
    ids=["masked_fill_ int mask", "masked_fill float mask", "where int", "values", "fill_ 1-d"],
)
def test_masks_of_numbers_and_fills_of_several_values_are_refused_as_in_pytorch(call):
    # A mask [1, 0, 2] was read as truthy, and fill_(tensor([1, 2, 3])) broadcast the values.
    x = plugrad.zeros(3)
    with pytest.raises((DtypeError, plugrad.errors.ShapeError)):
        call(plugrad, x)
    assert x.tolist() == [0.0, 0.0, 0.0] and x._version == 0
    with pytest.raises(RuntimeError):
        call(torch, torch.zeros(3))


def test_addcmul_with_a_float_value_and_addcdiv_of_integers_are_refused():
    # addcmul(x, x, x, value=0.5) of int64 tensors gave float64 [12., 4.]; PyTorch truncates
    # the value (to 0) in int64, plugrad refuses it as it refuses a float alpha.
    x = plugrad.tensor([-6, 2])
    with pytest.raises(DtypeError, match=r"value=0\.5 is a float"):
        plugrad.addcmul(x, x, x, value=0.5)
    with pytest.raises(DtypeError, match="divides them truly"):
        plugrad.addcdiv(x, x, x)
    with pytest.raises(RuntimeError):
        torch.addcdiv(torch.tensor([-6, 2]), torch.tensor([-6, 2]), torch.tensor([-6, 2]))
    assert plugrad.addcmul(x, x, x, value=2).tolist() == [66, 10]
    y = x.float()
    assert plugrad.addcmul(y, x, x, value=0.5).tolist() == [12.0, 4.0]
    # a complex value with real tensors made the result complex64 (PyTorch refuses it)
    for function in (plugrad.addcmul, plugrad.addcdiv):
        with pytest.raises(DtypeError, match="value=1j is complex"):
            function(y, y, y, value=1j)
    with pytest.raises(RuntimeError):
        torch.addcmul(torch.ones(2), torch.ones(2), torch.ones(2), value=1j)


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_addcmul_and_addcdiv_take_a_0d_tensor_as_value(name):
    # value=tensor(2.) reached the kernel as a Tensor and failed with "multiply(): x2 is a
    # numpy.ndarray" (PyTorch reads the 0-d tensor's number).
    results = []
    for lib in (plugrad, torch):
        x, a, b = (lib.tensor(v, requires_grad=True) for v in ([1.0, 2.0], [3.0, 4.0], [5.0, 6.0]))
        value = lib.tensor(2.0, dtype=lib.float64)
        y = getattr(lib, name)(x, a, b, value=value)
        with lib.no_grad():
            value.fill_(100.0)  # the recorded value is the one the forward used
        y.sum().backward()
        results.append(
            [str(y.dtype).split(".")[-1]] + [t.tolist() for t in (y, x.grad, a.grad, b.grad)]
        )
    assert results[0][0] == results[1][0] == "float32"
    for ours, theirs in zip(results[0][1:], results[1][1:]):
        assert ours == pytest.approx(theirs)
    x = plugrad.ones(2)
    getattr(x, name + "_")(x, x, value=plugrad.tensor(3))
    assert x.tolist() == [4.0, 4.0]
    with pytest.raises(
        ArgumentError,
        match=r"value must be a number \(or a 0-d tensor\), got a tensor of shape \(2,\)",
    ):
        getattr(plugrad, name)(x, x, x, value=plugrad.ones(2))
    assert x.tolist() == [4.0, 4.0] and x._version == 1


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_cosine_similarity_with_an_integer_operand_keeps_the_float_dtype(dtype):
    # An int64 operand's norm was float64, and so was the result.
    if not HAS_FLOAT16 and dtype == "float16":
        pytest.skip("the default backend has no float16")
    results = [
        lib.nn.functional.cosine_similarity(
            lib.tensor([1.0, 2.0], dtype=getattr(lib, dtype)), lib.tensor([3, 4]), dim=0
        )
        for lib in (plugrad, torch)
    ]
    assert str(results[0].dtype).split(".")[-1] == str(results[1].dtype).split(".")[-1]
    assert float(results[0]) == pytest.approx(float(results[1]), rel=1e-3)


def test_clamp_of_integers_by_a_broadcast_bound_as_pytorch():
    # array-api-compat's clip wrote into integer bounds in place: a broadcast view raised
    # "assignment destination is read-only".
    results = []
    for lib in (plugrad, torch):
        y = lib.tensor([1, 5, 2])
        low = lib.tensor([3]).expand(3)
        results.append((lib.clamp(y, min=low).tolist(), low.tolist()))
    assert results[0] == results[1] == ([3, 5, 3], [3, 3, 3])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_div_floor_of_floats_is_pythons_floor_division_as_in_pytorch(dtype):
    # floor(x / y) rounds the quotient first: 1 / 0.1 is 10.0, where 1 // 0.1 is 9.0.
    inf = float("inf")
    pairs = [
        (1.0, 0.1), (-1.0, 0.1), (0.3, 0.1), (7.0, -0.7), (-1.0, inf), (5.0, -inf),
        (inf, 2.0), (-inf, 3.0), (0.0, -2.0), (-0.0, 2.0), (3.0, 0.0), (-3.0, 0.0),
    ]  # fmt: skip
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]

    def run(lib):
        x, y = lib.tensor(a, dtype=getattr(lib, dtype)), lib.tensor(b, dtype=getattr(lib, dtype))
        return [
            lib.div(x, y, rounding_mode="floor"), x.div(y, rounding_mode="floor"),
            x.div_(y, rounding_mode="floor"), lib.div(x, 0.1, rounding_mode="floor"),
        ]  # fmt: skip

    with np.errstate(divide="ignore", invalid="ignore"):  # (x / 0 on NumPy: a warning)
        got_all = [got.numpy() for got in run(plugrad)]  # (Dask computes at .numpy())
    for got, expected in zip(got_all, run(torch), strict=True):
        expected = expected.numpy()
        np.testing.assert_array_equal(got, expected)  # (nan where nan)
        signed = ~np.isnan(expected)  # the sign of zeros too (XLA's -0.0 // 2 is +0.0)
        if plugrad.default_device().backend.name == "jax":
            signed &= expected != 0
        np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(expected[signed]))


@pytest.mark.parametrize(
    "call",
    [lambda x, y: x // y, lambda x, y: x % y, lambda x, y: x // True, lambda x, y: x % True],
)
def test_floor_division_and_remainder_of_two_booleans_are_refused_as_in_pytorch(call):
    # NumPy's answer, an int8 tensor, came back: a dtype PyTorch never gives here.
    for lib, error in ((torch, RuntimeError), (plugrad, DtypeError)):
        with pytest.raises(error):
            call(lib.tensor([True, False]), lib.tensor([True, True]))
    assert (plugrad.tensor([True, False]) // 2).tolist() == [0, 0]


@pytest.mark.parametrize(
    "call",
    [
        # a dtype by position: the top-level form takes it third (nn.functional's _stacklevel)
        lambda lib, y, x: lib.softmax(y, 1, lib.float32),
        lambda lib, y, x: lib.log_softmax(y, 0, lib.float32),
        # x with fewer dims than y, but more than 1: aligned on y's last dims
        lambda lib, y, x: lib.trapezoid(y, x, dim=1),
        lambda lib, y, x: lib.cumulative_trapezoid(y, x, dim=1),
        # integer dtypes: the endpoints truncated first; vander's powers in int64
        lambda lib, y, x: lib.linspace(0.5, 5.5, 4, dtype=lib.int64),
        lambda lib, y, x: lib.logspace(0.5, 5.5, 4, dtype=lib.int64),
        lambda lib, y, x: lib.vander(lib.tensor(np.array([100, 3], dtype=np.int8)), 4),
    ],
)
def test_function_forms_that_gave_other_numbers_or_dtypes_than_pytorch(call):
    rng = np.random.default_rng(7)
    y, x = rng.normal(size=(2, 2, 2)), np.cumsum(rng.random(size=(2, 2)), axis=-1)
    ours = call(plugrad, plugrad.tensor(y), plugrad.tensor(x))
    theirs = call(torch, torch.tensor(y), torch.tensor(x))
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


_GRADIENT_FORMS = {
    "every dim": {},
    "one dim, second-order ends": {"dim": 0, "edge_order": 2},
    "one spacing for all": {"spacing": 2.0},
    "a spacing per dim": {"spacing": [2.0, 0.5], "edge_order": 2},
    "coordinates": {"spacing": "coordinates", "edge_order": 2},
    "coordinates, first-order ends": {"spacing": "coordinates"},
    "dims in another order": {"dim": [1, 0], "spacing": [1.5, 3.0]},
}


@pytest.mark.parametrize("form", list(_GRADIENT_FORMS))
def test_gradient_estimates_and_their_gradients_are_pytorchs(form):
    # torch.gradient was missing (AttributeError).
    rng = np.random.default_rng(11)
    values = rng.normal(size=(4, 5))
    coordinates = [np.cumsum(rng.random(4) + 0.1), np.cumsum(rng.random(5) + 0.1)]

    def run(lib):
        options = dict(_GRADIENT_FORMS[form])
        if options.get("spacing") == "coordinates":
            options["spacing"] = tuple(lib.tensor(c) for c in coordinates)
        x = lib.tensor(values, requires_grad=True)
        out = lib.gradient(x, **options)
        sum(o.sum() * (i + 1) for i, o in enumerate(out)).backward()
        return [o.detach().numpy() for o in out] + [x.grad.numpy()]

    for mine, its in zip(run(plugrad), run(torch), strict=True):
        np.testing.assert_allclose(mine, its, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("r", "with_replacement"), [(2, False), (3, False), (2, True), (0, False),
                                                      (5, False)])  # fmt: skip
def test_combinations_and_chain_matmul_are_pytorchs(r, with_replacement):
    # Both were missing (AttributeError).
    values = np.array([1.5, -2.0, 3.0, 0.5])

    def run(lib):
        x = lib.tensor(values, requires_grad=True)
        out = lib.combinations(x, r, with_replacement)
        if out.numel():
            (
                out * lib.arange(1.0, out.numel() + 1, dtype=out.dtype).reshape(out.shape)
            ).sum().backward()
        return out.detach().numpy(), None if x.grad is None else x.grad.numpy()

    (ours, our_grad), (theirs, their_grad) = run(plugrad), run(torch)
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    assert (our_grad is None) == (their_grad is None)
    if our_grad is not None:
        np.testing.assert_array_equal(our_grad, their_grad)
    a, b, c = (np.arange(k * m, dtype=float).reshape(k, m) for k, m in ((2, 3), (3, 4), (4, 2)))
    with warnings.catch_warnings():  # PyTorch's deprecation, once per process
        warnings.simplefilter("ignore")
        expected = torch.chain_matmul(torch.tensor(a), torch.tensor(b), torch.tensor(c))
    ours = plugrad.chain_matmul(plugrad.tensor(a), plugrad.tensor(b), plugrad.tensor(c))
    np.testing.assert_array_equal(ours.numpy(), expected.numpy())


@pytest.mark.parametrize(
    "make",
    [lambda rng: rng.normal(size=(3, 3)), lambda rng: rng.normal(size=(2, 4, 4)) * 5,
     lambda rng: rng.normal(size=(3, 3)) * 40, lambda rng: np.zeros((2, 2)),
     lambda rng: rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3)),
     lambda rng: np.stack([np.eye(3) * 0.01, rng.normal(size=(3, 3)) * 30])],
)  # fmt: skip
def test_matrix_exp_and_its_gradient_are_pytorchs(make):
    # linalg.matrix_exp was missing (AttributeError).
    rng = np.random.default_rng(5)
    a = make(rng)
    weights = rng.normal(size=a.shape)

    def run(lib, function):
        x = lib.tensor(a, requires_grad=True)
        y = function(x)
        (y * lib.tensor(weights)).sum().real.backward()
        return y.detach().numpy(), x.grad.numpy()

    expected = run(torch, torch.linalg.matrix_exp)
    for function in (plugrad.linalg.matrix_exp, plugrad.matrix_exp, lambda x: x.matrix_exp()):
        for mine, its in zip(run(plugrad, function), expected, strict=True):
            np.testing.assert_allclose(mine, its, rtol=1e-12, atol=1e-12 * np.abs(its).max())
    with pytest.raises(ShapeError):
        plugrad.linalg.matrix_exp(plugrad.ones(2, 3))


def test_float_power_takes_any_python_int_with_an_integer_tensor():
    # float_power computes in float64: -3 with a uint8 tensor was refused as out of its range.
    ours = plugrad.float_power(plugrad.tensor([2], dtype=plugrad.uint8), -3)
    theirs = torch.float_power(torch.tensor([2], dtype=torch.uint8), -3)
    assert ours.tolist() == theirs.tolist() == [0.125]
    assert plugrad.float_power(-3, plugrad.tensor([2], dtype=plugrad.uint8)).tolist() == [9.0]


SHAPE_MISTAKES: dict[str, tuple[Callable[[Any], Any], str]] = {
    # Each raised a ShapeError that named another op (repeat, matmul, min) and quoted NumPy's
    # words ("operands could not be broadcast", "gufunc signature", "no identity").
    "repeat_interleave": (
        lambda lib: lib.repeat_interleave(lib.ones(3), lib.tensor([1, 2])),
        r"repeat_interleave\(\): repeats holds 2 counts .* 3 elements in all",
    ),
    "repeat_interleave along a dim": (
        lambda lib: lib.ones((2, 3)).repeat_interleave(lib.tensor([1, 2]), dim=1),
        r"repeat_interleave\(\): repeats holds 2 counts .* 3 elements along dim 1",
    ),
    "dot": (
        lambda lib: lib.dot(lib.ones(3), lib.ones(2)),
        r"dot\(\) takes two tensors of one length, got lengths 3 and 2",
    ),
    "aminmax of nothing": (
        lambda lib: lib.aminmax(lib.ones(0)),
        r"aminmax\(\): the input of shape \(0,\) has no elements",
    ),
    "x.min() of nothing": (
        lambda lib: lib.ones((0, 2)).min(),
        r"min\(\): the input of shape \(0, 2\) has no elements",
    ),
    "diff of a 0-d tensor": (
        lambda lib: lib.diff(lib.tensor(1.0)),
        r"diff\(\) takes a tensor of at least one dimension",
    ),
    "matrix_power of a non-square matrix": (
        lambda lib: lib.linalg.matrix_power(lib.ones((2, 3)), 2),
        r"matrix_power\(\) takes a square matrix .* got shape \(2, 3\)",
    ),
}


@pytest.mark.parametrize("name", list(SHAPE_MISTAKES))
def test_a_shape_mistake_is_told_in_the_called_functions_words(name):
    call, message = SHAPE_MISTAKES[name]
    with pytest.raises(ShapeError, match=message):
        call(plugrad)
    with pytest.raises(RuntimeError):  # (ShapeError is a RuntimeError, as PyTorch's error)
        call(torch)


def test_a_negative_matrix_power_of_an_integer_matrix_is_refused():
    # It gave NumPy's float64 inverse, where every other op of integers gives the default
    # float dtype (PyTorch refuses it).
    x = plugrad.tensor([[2, 0], [0, 1]])
    with pytest.raises(
        DtypeError, match=r"n=-1 inverts the matrix.* matrix_power\(x.float\(\), -1\)"
    ):
        plugrad.linalg.matrix_power(x, -1)
    with pytest.raises(RuntimeError):
        torch.linalg.matrix_power(torch.tensor([[2, 0], [0, 1]]), -1)
    assert plugrad.linalg.matrix_power(x, 2).tolist() == [[4, 0], [0, 1]]
    assert plugrad.linalg.matrix_power(x.float(), -1).tolist() == [[0.5, 0.0], [0.0, 1.0]]


# Integers of other kinds where PyTorch takes an int (a dim, a size, a count): a NumPy integer
# or a 0-d integer tensor. plugrad refused many ("dim np.int64(0) is out of range", "takes
# r >= 0", isdtype()'s DtypeError for narrow and tensor_split, "iteration over a 0-d tensor"
# for squeeze), or took them and failed in backward, where the value reached the rule as given
# (sum, tensordot). name -> program(lib, x, k), k(v) the integer v of the kind tested.
# fmt: off
INTEGER_ARGUMENTS: dict[str, Callable[..., Any]] = {
    "index_add(dim)": lambda lib, x, k: lib.index_add(x, k(0), lib.tensor([2, 0]), x[:2] * 2),
    "index_add_(dim)": lambda lib, x, k: (x * 1).index_add_(k(0), lib.tensor([1]), x[:1]),
    "index_fill(dim)": lambda lib, x, k: x.index_fill(k(1), lib.tensor([0, 2]), 2.0),
    "index_copy(dim)": lambda lib, x, k: lib.index_copy(x, k(0), lib.tensor([1]), x[:1] * 2),
    "index_reduce(dim)": lambda lib, x, k: x.index_reduce(k(0), lib.tensor([1]), x[:1] * 2,
                                                          "prod"),
    "unfold(dim, size, step)": lambda lib, x, k: x.unfold(k(1), k(2), k(1)),
    "unique_consecutive(dim=)": lambda lib, x, k: lib.unique_consecutive(
        (x > 1).detach(), dim=k(1)).float(),
    "diag_embed(offset, dim1, dim2)": lambda lib, x, k: lib.diag_embed(x, k(1), k(0), k(2)),
    "narrow(dim, start, length)": lambda lib, x, k: lib.narrow(x, k(1), k(1), k(2)),
    "narrow_copy(dim, start, length)": lambda lib, x, k: x.narrow_copy(k(1), k(-3), k(2)),
    "tensor_split(sections, dim)": lambda lib, x, k: lib.tensor_split(x, k(3), k(1))[0],
    "split([sizes], dim)": lambda lib, x, k: lib.split(x, [k(1), k(3)], k(1))[1],
    "chunk(chunks, dim)": lambda lib, x, k: lib.chunk(x, k(2), k(1))[1],
    "combinations(r)": lambda lib, x, k: lib.combinations(x[0], k(2)),
    "vander(N=)": lambda lib, x, k: lib.vander(x[0].detach(), N=k(3)),
    "tril_indices(row, col, offset)": lambda lib, x, k: lib.tril_indices(k(3), k(4), k(1)),
    "triu_indices(row, col, offset)": lambda lib, x, k: lib.triu_indices(k(3), k(4), k(-1)),
    "squeeze(dim)": lambda lib, x, k: x[None].squeeze(k(0)),
    "transpose(dim0, dim1)": lambda lib, x, k: x.transpose(k(0), k(1)),
    "sum(dim)": lambda lib, x, k: x.sum(k(1)),
    "std(dim)": lambda lib, x, k: x.std(k(1)),
    "var(dim, correction=)": lambda lib, x, k: x.var(1, correction=k(0)),
    "cumsum(dim)": lambda lib, x, k: lib.cumsum(x, k(1)),
    "softmax(dim)": lambda lib, x, k: lib.softmax(x, k(1)),
    "logsumexp(dim)": lambda lib, x, k: lib.logsumexp(x, k(1)),
    "topk(k, dim)": lambda lib, x, k: x.topk(k(2), k(0)).values,
    "kthvalue(k, dim)": lambda lib, x, k: x.kthvalue(k(2), k(1)).values,
    "roll(shifts, dims)": lambda lib, x, k: lib.roll(x, (k(1), k(-1)), (k(0), k(1))),
    "rot90(k, dims)": lambda lib, x, k: lib.rot90(x, k(1), (k(0), k(1))),
    "tril(diagonal)": lambda lib, x, k: lib.tril(x, k(-1)),
    "diag(diagonal)": lambda lib, x, k: lib.diag(x, k(1)),
    "diagonal(offset, dim1, dim2)": lambda lib, x, k: x.diagonal(k(1), k(1), k(0)),
    "take_along_dim(dim)": lambda lib, x, k: lib.take_along_dim(x, lib.tensor([[2], [0], [1]]),
                                                                k(1)),
    "unflatten(dim, sizes)": lambda lib, x, k: x.unflatten(k(1), (k(2), k(2))),
    "unbind(dim)": lambda lib, x, k: x.unbind(k(1))[2],
    "fft.fft(n, dim)": lambda lib, x, k: lib.fft.fft(x, k(3), k(0)).abs(),
    "tensordot(dims=n)": lambda lib, x, k: lib.tensordot(x, x.T * 1, dims=k(1)),
    "tensordot(dims=[[a], [b]])": lambda lib, x, k: lib.tensordot(x, x * 1, dims=([k(1)],
                                                                                  [k(1)])),
}
# fmt: on
#: kind -> (plugrad's integer of that kind, torch's)
INTEGER_KINDS = {
    "numpy.int64": (np.int64, np.int64),
    "0-d tensor": (plugrad.tensor, torch.tensor),
}
#: PyTorch refuses a NumPy integer as tensordot's dims (plugrad takes it: a NumPy integer is an
#: int everywhere else); the reference is dims=1.
_TORCH_INTS_ONLY = {("tensordot(dims=n)", "numpy.int64")}


def _run_with_integers(lib: Any, name: str, make: Callable[[int], Any]) -> list[np.ndarray]:
    x = lib.tensor(np.arange(1.0, 13.0).reshape(3, 4) / 3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # PyTorch's "index_reduce() is in beta"
        out = INTEGER_ARGUMENTS[name](lib, x, make)
    results = [np.asarray(out.detach().numpy())]
    if out.requires_grad:
        (out * out).sum().backward()  # (sum's gradient alone would hide a wrong selection)
        results.append(np.asarray(x.grad.numpy()))
    return results


@pytest.mark.parametrize("kind", list(INTEGER_KINDS))
@pytest.mark.parametrize("name", list(INTEGER_ARGUMENTS))
def test_integers_of_other_kinds_are_taken_as_ints_forward_and_backward(name: str, kind: str):
    ours_kind, torch_kind = INTEGER_KINDS[kind]
    ours = _run_with_integers(plugrad, name, ours_kind)
    theirs = _run_with_integers(
        torch, name, int if (name, kind) in _TORCH_INTS_ONLY else torch_kind
    )
    assert_arrays_agree(ours, theirs, 1e-7, 1e-9)


@pytest.mark.parametrize("make", [np.int64, plugrad.tensor], ids=["numpy.int64", "0-d tensor"])
def test_tensordots_pair_of_integer_axes_is_read_as_ints(make):
    # NumPy's reading of dims=(1, 0), one axis on each side, which PyTorch spells
    # ([1], [0]): NumPy integers there raised an untyped TypeError in the forward.
    values = np.arange(6.0).reshape(2, 3) / 4

    def run(lib: Any, dims: Any) -> list[np.ndarray]:
        a = lib.tensor(values, requires_grad=True)
        b = lib.tensor(values.T[::-1].copy(), requires_grad=True)
        out = lib.tensordot(a, b, dims=dims(lib))
        (out * out).sum().backward()
        return [out.detach().numpy(), a.grad.numpy(), b.grad.numpy()]

    ours = run(plugrad, lambda lib: (make(1), make(0)))
    theirs = run(torch, lambda lib: ([1], [0]))
    assert_arrays_agree(ours, theirs, 1e-7, 1e-9)


def test_a_tensor_given_for_an_int_reaches_the_backward_rule_as_an_int():
    # The rules received tensor(1) as given: x.sum(tensor(1)).backward() iterated over it.
    x = plugrad.ones((2, 3), requires_grad=True)
    out = x.sum(plugrad.tensor(1))
    assert type(out.grad_fn._params["axis"]) is int
    out.sum().backward()
    assert x.grad.tolist() == [[1.0] * 3] * 2


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.index_add(1.0, plugrad.tensor([0]), x[:, :1]),  # (a float is no dim)
        lambda x: plugrad.narrow(x, 0, 1.5, 1),
        lambda x: plugrad.combinations(x[0], True),  # (a bool is no count)
        lambda x: x.index_fill(plugrad.tensor(True), plugrad.tensor([0]), 1.0),  # (nor dim)
        lambda x: x.unfold(0, plugrad.tensor(1.0), 1),
        lambda x: plugrad.tril_indices(3, plugrad.tensor([2, 3])),
        lambda x: plugrad.tensor_split(x, 2.5),
    ],
)
def test_what_is_no_integer_is_still_refused_with_a_typed_error(call):
    with pytest.raises((ArgumentError, DtypeError)):
        call(plugrad.ones((3, 4)))


#: Calls whose integers go to the op's own params (no adapter converts them): each backend's
#: kernel got them as given, and PyTorch's refused them (x.unsqueeze(numpy.int64(1))).
OWN_PARAM_INTEGERS = {
    "unsqueeze": lambda x, k: x.unsqueeze(k(1)),
    "sum(axis)": lambda x, k: x.sum(axis=k(1)),
    "sum(axis pair)": lambda x, k: plugrad.sum(x, axis=(k(0), k(1))),
    "expand_dims": lambda x, k: plugrad.expand_dims(x, axis=k(0)),
    "diff": lambda x, k: plugrad.diff(x, axis=k(1), n=k(2)),
    "moveaxis": lambda x, k: plugrad.moveaxis(x, k(0), k(1)),
    "cumulative_sum": lambda x, k: plugrad.cumulative_sum(x, axis=k(0)),
    "roll": lambda x, k: plugrad.roll(x, k(1), axis=k(1)),
}


@pytest.mark.parametrize("make", [np.int64, plugrad.tensor], ids=["numpy.int64", "0-d tensor"])
@pytest.mark.parametrize("name", list(OWN_PARAM_INTEGERS))
@pytest.mark.parametrize("backend_name", ["numpy", "array_api_strict", "torch", "jax", "dask"])
def test_integers_of_other_kinds_in_an_ops_own_params_work_on_every_backend(
    backend_name, name, make
):
    if backend_name != "numpy":
        pytest.importorskip(backend_name)
    results = []
    for kind in (make, int):
        with plugrad.use_backend(backend_name):
            x = plugrad.tensor(np.arange(1.0, 13.0).reshape(3, 4) / 3, requires_grad=True)
            out = OWN_PARAM_INTEGERS[name](x, kind)
            (out * out).sum().backward()
            results.append([out.detach().numpy(), x.grad.numpy()])
    assert_arrays_agree(*results, 0, 0)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x, p, a: lib.diff(x, 1, 0, p, a),
        lambda lib, x, p, a: x.diff(2, -1, p),
        lambda lib, x, p, a: lib.diff(x, 1, 0, None, a),
    ],
    ids=["function", "method", "append only"],
)
def test_diffs_ends_may_come_by_position_in_pytorchs_order(call):
    # diff(input, n, dim, prepend, append): the ends were keyword-only (a bare TypeError).
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor([1.0, 2.0, 4.0, 7.0], dtype=lib.float64, requires_grad=True)
        p = lib.tensor([0.5], dtype=lib.float64, requires_grad=True)
        a = lib.tensor([9.0], dtype=lib.float64, requires_grad=True)
        out = call(lib, x, p, a)
        (out * out).sum().backward()
        results.append(
            [out.detach().numpy()] + [t.grad.numpy() for t in (x, p, a) if t.grad is not None]
        )
    assert_arrays_agree(*results, 1e-12, 0)


def test_normal_takes_pytorchs_layout_and_pin_memory_keywords():
    # torch.normal(mean, std, size, layout=torch.strided) is valid: a bare TypeError here.
    plugrad.manual_seed(0)
    drawn = plugrad.normal(0.0, 1.0, (2, 3), layout=plugrad.strided, pin_memory=False)
    assert drawn.shape == tuple(torch.normal(0.0, 1.0, (2, 3), layout=torch.strided).shape)
