"""Gradients of complex inputs where PyTorch has no complex kernel or refuses to differentiate:
checked with finite differences (``plugrad.autograd.gradcheck``), PyTorch's convention."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.errors import DtypeError
from plugrad.testing import backends_under_test

RNG = np.random.default_rng(0)


def _complex(*shape: int) -> plugrad.Tensor:
    values = RNG.normal(size=shape) + 1j * RNG.normal(size=shape)
    return plugrad.tensor(values, requires_grad=True)


def _check(function, inputs) -> None:
    """gradcheck of ``function``, skipped where the backend refuses its complex inputs
    (array-api-strict's max and ordering refuse complex arrays, as the standard does)."""
    try:
        function(*inputs)
    except DtypeError as refusal:
        pytest.skip(f"the default backend refuses these complex inputs: {refusal}")
    assert plugrad.autograd.gradcheck(function, inputs)


@pytest.mark.parametrize(
    "function",
    [
        lambda t: plugrad.softmax(t, axis=-1),
        lambda t: plugrad.log_softmax(t, axis=-1),
        lambda t: plugrad.nn.functional.softmin(t, dim=0),
    ],
    ids=["softmax", "log_softmax", "softmin"],
)
def test_normalizing_functions_of_complex_inputs(function) -> None:
    # Their gradients were the conjugates of the right ones.
    _check(function, (_complex(2, 3),))


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_products_of_complex_values(include_self) -> None:
    # The gradients of both inputs were not conjugated (PyTorch refuses to differentiate).
    index = plugrad.tensor([0, 2, 0, 2])

    def product(x, src):
        return x.scatter_reduce(0, index, src, "prod", include_self=include_self)

    source = _complex(4)
    with plugrad.no_grad():
        source[1] = 0  # a lone zero: the gradient there is the product of the others
    _check(product, (_complex(3), source))
    _check(lambda x, src: x.scatter(0, index, src, reduce="multiply"), (_complex(3), _complex(4)))


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "mean", "prod"])
def test_scatter_reductions_of_complex_values_on_the_torch_backend(reduce, include_self) -> None:
    # They raised DtypeError ("gt_cpu" not implemented for 'ComplexFloat'): the count of
    # values sent to each position was complex.
    torch = pytest.importorskip("torch")
    values = RNG.normal(size=(2, 4)) + 1j * RNG.normal(size=(2, 4))
    index = [[0, 2, 0, 2], [1, 1, 0, 2]]
    expected = torch.tensor(values[0, :3]).scatter_reduce(
        0, torch.tensor(index[0]), torch.tensor(values[1]), reduce, include_self=include_self
    )
    with plugrad.use_backend("torch"):

        def reduced(x, src):
            return x.scatter_reduce(0, plugrad.tensor(index[0]), src, reduce,
                                    include_self=include_self)  # fmt: skip

        x = plugrad.tensor(values[0, :3], requires_grad=True)
        src = plugrad.tensor(values[1], requires_grad=True)
        np.testing.assert_allclose(reduced(x, src).detach().numpy(), expected.numpy())
        assert plugrad.autograd.gradcheck(reduced, (x, src))
        x = plugrad.tensor(values[0], dtype=plugrad.complex64).reshape(2, 2)
        x.scatter_reduce_(1, plugrad.tensor(index).reshape(2, 4)[:, :2] % 2,
                          plugrad.tensor(values[1], dtype=plugrad.complex64).reshape(2, 2),
                          reduce)  # fmt: skip
        assert x.dtype is plugrad.complex64


@pytest.mark.parametrize("scale", [1e-170, 1e-30, 1.0, 1e150, 1e200])
def test_angle_and_atan2_gradients_do_not_underflow_or_overflow(scale: float) -> None:
    # |z|**2 underflowed to 0 below 1e-154, and the gradient then was 0 (PyTorch's NaN);
    # the angle of s * (3 + 4j) has the gradient of 3 + 4j divided by s.
    z = plugrad.tensor([scale * (3 + 4j)], dtype=plugrad.complex128, requires_grad=True)
    plugrad.angle(z).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [(-0.16 + 0.12j) / scale], rtol=1e-15)
    y = plugrad.tensor([4 * scale], dtype=plugrad.float64, requires_grad=True)
    x = plugrad.tensor([3 * scale], dtype=plugrad.float64, requires_grad=True)
    plugrad.atan2(y, x).backward()
    np.testing.assert_allclose([y.grad.item(), x.grad.item()], [0.12 / scale, -0.16 / scale])


@pytest.mark.parametrize("backend", backends_under_test())
def test_variance_and_deviation_of_complex_values_on_every_backend(backend: str) -> None:
    # The mean of |x - mean|**2, real (array_api_strict's var and std refused complex input).
    values = np.array([1 + 2j, 3 - 1j, -2 + 0.5j, 0.25j])
    centered = np.abs(values - values.mean()) ** 2
    with plugrad.use_backend(backend):
        z = plugrad.tensor(values, dtype=plugrad.complex128, requires_grad=True)
        var, std = z.var(), plugrad.std(z, correction=0)
        assert var.dtype == std.dtype == plugrad.float64
        np.testing.assert_allclose(
            [var.item(), std.item()], [centered.sum() / 3, np.sqrt(centered.mean())]
        )
        var.backward()
        np.testing.assert_allclose(z.grad.numpy(), 2 * (values - values.mean()) / 3)
        assert plugrad.var(z, correction=4).item() == float("inf")  # PyTorch's too


def test_a_kernel_refusing_complex_input_does_not_advise_a_cast_to_a_real_dtype() -> None:
    with plugrad.use_backend("array_api_strict"):
        z = plugrad.tensor([1 + 2j, 3 - 1j])
        with pytest.raises(DtypeError, match=r"softmax\(\).*real and imaginary parts") as caught:
            plugrad.nn.functional.softmax(z, 0)
    assert "float32" not in str(caught.value)
