"""PyTorch's complex constructors and parts (``complex``, ``polar``, ``view_as_complex``,
``view_as_real``), values and gradients against ``torch``; they were missing, so rotary
position embeddings written for PyTorch did not run."""

from __future__ import annotations

import math

import numpy as np
import pytest

import plugrad
from plugrad.errors import DtypeError, ShapeError

torch = pytest.importorskip("torch")


def _rotary(lib, x, angles):
    pairs = lib.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
    rotation = lib.polar(lib.ones_like(angles), angles)
    return lib.view_as_real(pairs * rotation).flatten(-2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rotary_embeddings_agree_with_pytorch_in_values_and_gradients(dtype: str) -> None:
    rng = np.random.default_rng(0)
    x, angles = rng.standard_normal((2, 5, 8)).astype(dtype), rng.uniform(0, 6, (5, 4))
    weights = rng.standard_normal((2, 5, 8))
    results = []
    for lib in (plugrad, torch):
        leaf = lib.tensor(x, requires_grad=True)
        y = _rotary(lib, leaf, lib.tensor(angles.astype(dtype)))
        (y * lib.tensor(weights.astype(dtype))).sum().backward()
        results.append((y.detach().numpy(), leaf.grad.numpy(), str(y.dtype)))
    (y, grad, kind), (expected_y, expected_grad, expected_kind) = results
    assert kind.split(".")[-1] == expected_kind.split(".")[-1]
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(y, expected_y, rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(grad, expected_grad, rtol=tolerance, atol=tolerance)


def test_complex_and_polar_values_gradients_and_infinities() -> None:
    real = np.array([1.0, -2.0, math.inf, 0.5, 0.0])
    imag = np.array([3.0, math.inf, 1.0, math.nan, -math.inf])
    ours = plugrad.complex(plugrad.tensor(real), plugrad.tensor(imag)).numpy()
    theirs = torch.complex(torch.tensor(real), torch.tensor(imag)).numpy()
    np.testing.assert_array_equal(ours, theirs)  # inf * 1j would put NaN in the real part
    grads = []
    for lib in (plugrad, torch):
        a = lib.tensor([1.0, 2.0, 0.5], requires_grad=True)
        b = lib.tensor([0.3, -1.0, 2.0], requires_grad=True)
        z = lib.complex(a, b) * lib.tensor([1 + 1j, 2 - 1j, -0.5j]) + lib.polar(a, b)
        (z.abs() + z.angle()).sum().backward()
        grads.append(np.concatenate([a.grad.numpy(), b.grad.numpy()]))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
    assert plugrad.complex(plugrad.ones(2, 1), plugrad.zeros(3)).shape == (2, 3)  # broadcasts


@pytest.mark.parametrize("default", ["float32", "float64"])
def test_complex_polar_and_view_as_complex_keep_float32_whatever_the_default_dtype(default):
    # The non-finite imaginary parts were made in the default complex dtype and widened all.
    previous = plugrad.get_default_dtype()
    plugrad.set_default_dtype(getattr(plugrad, default))
    try:
        r = plugrad.tensor([1.0, 2.0], dtype=plugrad.float32)
        assert plugrad.complex(r, r).dtype is plugrad.complex64
        assert plugrad.polar(r, r).dtype is plugrad.complex64
        assert plugrad.view_as_complex(plugrad.ones(2, 2, dtype=plugrad.float32)).dtype is (
            plugrad.complex64
        )
        assert plugrad.complex(r.double(), r.double()).dtype is plugrad.complex128
    finally:
        plugrad.set_default_dtype(previous)


def test_view_as_real_and_back_and_the_lazy_bits() -> None:
    z = plugrad.tensor([[1 + 2j, -3j]], dtype=plugrad.complex128)
    pairs = plugrad.view_as_real(z)
    assert pairs.shape == (1, 2, 2) and pairs.dtype is plugrad.float64
    assert pairs.tolist() == [[[1.0, 2.0], [0.0, -3.0]]]
    assert plugrad.view_as_complex(pairs).tolist() == z.tolist()
    assert not z.is_conj() and not z.is_neg() and z.resolve_conj() is z
    assert plugrad.resolve_neg(z) is z
    assert plugrad.conj_physical(z).tolist() == z.conj().tolist() == z.conj_physical().tolist()


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: plugrad.complex(plugrad.ones(1), plugrad.ones(1, dtype=plugrad.float64)),
         DtypeError, "one dtype"),
        (lambda: plugrad.complex(plugrad.tensor([1]), plugrad.tensor([2])), DtypeError, "float32"),
        (lambda: plugrad.complex(plugrad.ones(1), 2.0), TypeError, "imag must be a Tensor"),
        (lambda: plugrad.polar(plugrad.ones(1), plugrad.ones(1, dtype=plugrad.float64)),
         DtypeError, "one dtype"),
        (lambda: plugrad.view_as_complex(plugrad.ones(3)), ShapeError, "size 2"),
        (lambda: plugrad.view_as_complex(plugrad.ones((2, 2), dtype=plugrad.int64)),
         DtypeError, "float32"),
        (lambda: plugrad.view_as_real(plugrad.ones(3)), DtypeError, "complex tensor"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_as_pytorch_refuses_it(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


def test_complex_logsumexp_is_the_principal_log_as_pytorchs() -> None:
    # Shifted by the (lexicographic) complex maximum, the imaginary part came out unwrapped:
    # -7.59 for one element where PyTorch gives -1.3068, -5085 for a pair.
    values = np.array([[-4.62 - 7.59j, 0.0], [3.2 + 1000j, -1.0 - 4000j], [1 + 2j, 0.5 - 0.5j]])
    results = []
    for lib in (plugrad, torch):
        z = lib.tensor(values, requires_grad=True)
        out = lib.logsumexp(z, dim=1)
        out.abs().sum().backward()
        results.append((out.detach().numpy(), z.grad.numpy()))
    for ours, theirs in zip(*results, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert np.all(np.abs(results[0][0].imag) <= math.pi)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (plugrad.view_as_real, "view_as_real"),
        (lambda z: z.conj(), "conj"),
        (lambda z: z[None].mH, "adjoint"),
    ],
)
def test_the_source_of_a_copy_where_pytorch_views_is_not_changed_under_it(make, name) -> None:
    # z.mul_(2) left view_as_real(z) (a copy here, a view in PyTorch) with the old values.
    z = plugrad.tensor([1 + 2j, 3 - 1j])
    copy = make(z)
    before = copy.tolist()
    for change in (lambda: z.mul_(2), lambda: z[:1].add_(1), lambda: z.detach().zero_()):
        with pytest.raises(plugrad.errors.ViewCopyError, match=name):
            change()
    assert z.tolist() == [1 + 2j, 3 - 1j] and copy.tolist() == before
    del copy  # once it is gone, z changes as any tensor
    z.mul_(2)
    assert z.tolist() == [2 + 4j, 6 - 2j]


def test_the_source_of_view_as_complex_is_not_changed_under_it() -> None:
    x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    w = plugrad.view_as_complex(x)
    with pytest.raises(plugrad.errors.ViewCopyError, match="view_as_complex"):
        x.add_(10)
    assert w.tolist() == [1 + 2j, 3 + 4j]
    y = plugrad.tensor([[5.0, 6.0]])
    y.add_(1)  # a tensor no copy was made from
    assert y.tolist() == [[6.0, 7.0]]


def test_conj_physical_in_place_as_pytorch() -> None:
    # x.conj_physical_() and torch.conj_physical_ were missing (AttributeError).
    def program(lib, z):
        w = z * 1
        assert w.conj_physical_() is w
        lib.conj_physical_(w[1:])
        return w.abs() ** 2 + w.real

    values = np.array([1 + 2j, -3j, 0.5 - 1j])
    ours = plugrad.tensor(values, requires_grad=True)
    theirs = torch.tensor(values, requires_grad=True)
    for lib, z in ((plugrad, ours), (torch, theirs)):
        program(lib, z).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy())
    x = plugrad.tensor([1.0, -2.0])
    assert plugrad.conj_physical_(x).tolist() == [1.0, -2.0]
    with pytest.raises(plugrad.errors.ArgumentError, match="conj_physical_"):
        plugrad.conj_physical_(values)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax", "dask", "array_api_strict"])
def test_complex_parts_keep_their_signed_zeros_as_pytorchs(backend: str) -> None:
    # complex(), view_as_complex() and polar() built real + imag * 1j, which turns an
    # imaginary -0.0 (and a real -0.0) into +0.0: sqrt, log and angle then took the other
    # side of their branch cut (sqrt(-4 - 0j) was +2j, angle(-1 - 0j) pi instead of -pi).
    pytest.importorskip(backend)
    real, imag = [-1.0, -4.0, -0.0, 0.0, -0.0, 2.0], [-0.0, -0.0, 0.0, -0.0, -0.0, -0.0]
    theirs = torch.complex(torch.tensor(real), torch.tensor(imag))
    with plugrad.use_backend(backend):
        ours = {
            "complex": plugrad.complex(plugrad.tensor(real), plugrad.tensor(imag)),
            "view_as_complex": plugrad.view_as_complex(
                plugrad.stack([plugrad.tensor(real), plugrad.tensor(imag)], -1)
            ),
        }
        for name, z in ours.items():
            parts = np.array(plugrad.view_as_real(z).tolist())
            expected = torch.view_as_real(theirs).numpy()
            np.testing.assert_array_equal(np.signbit(parts), np.signbit(expected), err_msg=name)
            # (JAX's own sqrt takes -1 - 0j to +1j: its branch cut ignores the zero's sign)
            for function in ("log", "angle") if backend == "jax" else ("sqrt", "log", "angle"):
                got = np.array(getattr(plugrad, function)(z).tolist())
                want = getattr(torch, function)(theirs).numpy()
                np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{name} {function}")
        # The gradient is that of the linear map, (real(g), imag(g)).
        r = plugrad.tensor(real, requires_grad=True)
        i = plugrad.tensor(imag, requires_grad=True)
        weights = plugrad.tensor([1 + 2j, 3 - 1j, 1j, 2.0, -1.0, 1 - 1j], dtype=plugrad.complex64)
        (plugrad.complex(r, i) * weights).real.sum().backward()
        assert r.grad.tolist() == [1.0, 3.0, 0.0, 2.0, -1.0, 1.0]
        assert i.grad.tolist() == [-2.0, 1.0, -1.0, -0.0, 0.0, 1.0]
