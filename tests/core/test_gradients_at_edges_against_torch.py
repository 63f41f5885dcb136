"""Values and gradients at edges (infinities, NaN, zeros, flattened positions) against ``torch``.

Each case once gave a silently different number: ``take`` of a matrix sent its
gradient along the first axis instead of to the flattened positions, a rounded
division gave NaN gradients where the divisor is 0, ``xlog1py`` cut the gradient
at ``x == 0``, ``sinc`` gave NaN for a tiny ``x``, ``logaddexp`` NaN beside an
infinite input, ``max`` NaN everywhere for a NaN maximum, ``quantile`` NaN next
to an infinite value, ``index_select`` with a 0-d index lost a dimension, and
``addmm``-like functions with ``beta=0`` left the input's gradient None (PyTorch: zeros),
``maximum``/``minimum`` gave 0 to both inputs where one is NaN (PyTorch: the whole gradient),
``pow(0.0, x)`` gave 0 where ``x < 0`` (PyTorch: -inf), ``angle`` a gradient of 1 at NaN and
``relu`` a gradient of 0 at NaN (PyTorch passes it: NaN is not <= 0), and ``max_pool`` sent the
gradient of a window of -inf values to its padding (negative indices, which ``max_unpool`` refused),
and ``elu``/``selu``/``celu`` lost their gradient far below 0 (expm1's rule read ``expm1(x) + 1``),
``logcumsumexp`` gave NaN to every position after a second infinity, and ``renorm`` NaN to
a whole slice left unscaled for holding a NaN; second derivatives of ``x ** y`` at ``x = 0, y = 0``
and of ``logit`` where its ``eps`` clamps were NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from torch_compare import assert_arrays_agree

import plugrad
from plugrad.errors import ArgumentError, ShapeError

torch = pytest.importorskip("torch")

INF, NAN = math.inf, math.nan

# name -> (leaves, program(lib, *leaves) -> a tensor whose sum is differentiated)
# fmt: off
CASES: dict[str, tuple[list[Any], Callable[..., Any]]] = {
    "take of a matrix": ([[[1., 2.], [3., 4.], [5., 6.]]],
                         lambda lib, a: lib.take(a, lib.tensor([1, 2, 5, 1])) * lib.tensor(
                             [10., 100., 1000., 1.], dtype=lib.float64)),
    "take of a 3-d tensor": ([np.arange(24.0).reshape(2, 3, 4)],
                             lambda lib, a: lib.take(a, lib.tensor([[0, 23], [7, 7]])) ** 2),
    "take of a 0-d tensor": ([3.0], lambda lib, a: lib.take(a, lib.tensor([0, 0]))),
    "take along an axis": ([[[1., 2.], [3., 4.]]],
                           lambda lib, a: a.index_select(1, lib.tensor([1, 1, 0])) ** 2),
    "index_select with a 0-d index": ([[[1., 2.], [3., 4.], [5., 6.]]],
                                      lambda lib, a: a.index_select(1, lib.tensor(0))
                                      + lib.tensor([1., 2., 3.], dtype=lib.float64)),
    "div rounding floor": ([[1., 2., -3.5], [0., 2., 2.]],
                           lambda lib, x, y: x.div(y, rounding_mode="floor")),
    "div rounding trunc": ([[1., -2., -3.5], [0., 0., 2.]],
                           lambda lib, x, y: lib.div(x, y, rounding_mode="trunc")),
    "xlog1py": ([[0., 0., 0., 0., 2., 0.5], [3., -1., NAN, INF, 0., -0.5]],
                lambda lib, x, y: lib.special.xlog1py(x, y)),
    "xlogy": ([[0., 0., 0., 0., 2., 0.5], [3., -1., NAN, INF, 0., 0.5]],
              lambda lib, x, y: lib.special.xlogy(x, y)),
    # (closer to 0 PyTorch's closed form cancels: 0 at 1e-200, 2.6e-7 off at 1e-5; plugrad's
    # Taylor series there is checked in test_special.py)
    "sinc near 0": ([[0.06, -0.07, 0.1, 0.0, 0.3, -2.5]], lambda lib, x: x.sinc()),
    "logaddexp with infinities": ([[INF, 1., -INF, 3., 700.], [2., INF, 0., 3., -700.]],
                                  lambda lib, x, y: lib.logaddexp(x, y)),
    "max of all with NaN": ([[[1., NAN, 3., NAN], [1., 2., 2., 0.]]], lambda lib, x: x.max()),
    "min of all with NaN": ([[[1., NAN], [-1., 0.]]], lambda lib, x: lib.min(x)),
    "quantile next to -inf": ([[[-INF, 1., 2.], [0., 1., 2.]]],
                              lambda lib, x: x.quantile(0.3, dim=1)),
    "quantile next to inf": ([[[1., 2., INF, 5.]]], lambda lib, x: x.quantile(0.75, dim=1)),
    "quantile midpoint": ([[[-INF, 1., 2., 4.]]],
                          lambda lib, x: x.quantile(0.5, dim=1, interpolation="midpoint")),
    "addmm, beta 0": ([[[NAN, 1.], [2., 3.]]],
                      lambda lib, a: lib.addmm(a, lib.ones(2, 3, dtype=lib.float64),
                                               lib.ones(3, 2, dtype=lib.float64), beta=0)),
    "addr, beta 0, broadcast": ([[NAN]],
                                lambda lib, a: lib.addr(a, lib.ones(2, dtype=lib.float64),
                                                        lib.ones(3, dtype=lib.float64), beta=0)),
    "baddbmm, beta 0": ([np.ones((2, 2, 2))],
                        lambda lib, a: a.baddbmm(lib.ones(2, 2, 3, dtype=lib.float64),
                                                 lib.ones(2, 3, 2, dtype=lib.float64), beta=0)),
    "maximum with NaN": ([[NAN, 1., 2., 3.], [1., NAN, 2., 1.]],
                         lambda lib, x, y: lib.maximum(x, y)),
    "minimum with NaN": ([[NAN, 1., 2., 3.], [1., NAN, 2., 1.]],
                         lambda lib, x, y: lib.minimum(x, y)),
    "pow of a base 0": ([[-1., 0., 2., -0.5]], lambda lib, x: lib.pow(0.0, x)),
    "angle of NaN": ([[NAN, -1., 1., INF]], lambda lib, x: lib.angle(x) + x),
    "relu of NaN": ([[NAN, -1., 0., 2., -INF, INF]], lambda lib, x: lib.relu(x) * 3),
    "relu_ of NaN": ([[NAN, -1., 0., 2.]], lambda lib, x: (x * 1).relu_() * 3),
    "max_pool1d of -inf beside padding": (
        [[[[-INF, 1., -INF, 2.]]]],
        lambda lib, x: lib.nn.functional.max_pool1d(x, 2, padding=1)),
    "max_pool2d of -inf beside padding, ceil mode": (
        [np.full((1, 1, 5, 5), -INF)],
        lambda lib, x: lib.nn.functional.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)),
    "erf and erfc far in the tails": ([[30.0, 1e6, INF, -40.0, 27.5, 2.0]],
                                      lambda lib, x: lib.special.erf(x) + lib.special.erfc(x) * 3),
    "quantile of q": ([[[3., 1., 2., 5.]]],
                      lambda lib, x: x.quantile(lib.tensor([0.3, 0.5], dtype=lib.float64), dim=1)),
    "elu far below 0": ([[-50., -30., -1., 2.]], lambda lib, x: lib.nn.functional.elu(x)),
    "selu far below 0": ([[-50., -30., -1., 2.]], lambda lib, x: lib.nn.functional.selu(x)),
    "celu far below 0": ([[-50., -30., -1., 2.]],
                         lambda lib, x: lib.nn.functional.celu(x, alpha=0.5)),
    "renorm of a slice holding a NaN": ([[[1., NAN], [3., 4.]], [[3., 4.], [0.3, 0.4]]],
                                        lambda lib, x, y: lib.cat([lib.renorm(x, 2, 0, 100.),
                                                                   lib.renorm(y, 2, 0, 1.)])),
    "logcumsumexp past two infinities": ([[1., 2., INF, 3., INF]],
                                         lambda lib, x: lib.logcumsumexp(x, 0)),
    "logcumsumexp from an infinity": ([[[INF, 1., INF, 0.], [-INF, 1., 2., -INF]]],
                                      lambda lib, x: lib.logcumsumexp(x, 1) * lib.tensor(
                                          [1., -2., 0., 3.], dtype=lib.float64)),
}
# fmt: on


def _run(lib: Any, name: str) -> list[np.ndarray]:
    leaves, program = CASES[name]
    tensors = [lib.tensor(np.asarray(v, dtype=np.float64), requires_grad=True) for v in leaves]
    out = program(lib, *tensors)
    results = [np.asarray(out.detach().numpy()), np.asarray(out.shape)]
    out.sum().backward()
    return results + [np.asarray(t.grad.numpy()) for t in tensors]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's about the infinities
@pytest.mark.parametrize("name", CASES)
def test_values_and_gradients_are_pytorchs(name: str):
    assert_arrays_agree(_run(plugrad, name), _run(torch, name), rtol=1e-12, atol=1e-300)


def test_index_select_takes_a_vector_of_indices():
    x = plugrad.ones((3, 2))
    with pytest.raises(ShapeError, match="0-d or 1-d"):
        x.index_select(1, plugrad.tensor([[0]]))


def test_cross_entropy_refuses_ignore_index_with_probability_targets():
    logits = plugrad.tensor([[1.0, 2.0, 0.5]])
    probabilities = plugrad.tensor([[0.2, 0.7, 0.1]])
    with pytest.raises(ArgumentError, match=r"ignore_index=1.*probabilities"):
        plugrad.nn.functional.cross_entropy(logits, probabilities, ignore_index=1)
    # As PyTorch, whose message differs.
    with pytest.raises(RuntimeError, match="ignore_index"):
        torch.nn.functional.cross_entropy(
            torch.tensor([[1.0, 2.0, 0.5]]), torch.tensor([[0.2, 0.7, 0.1]]), ignore_index=1
        )


def test_keepdim_keeps_every_axis_when_no_dim_is_given():
    x = plugrad.tensor([[1.0, 5.0], [3.0, 2.0]])
    for value in (x.max(keepdim=True), x.min(keepdim=True), x.median(keepdim=True)):
        assert value.shape == (1, 1)
    assert x.max(keepdim=True).item() == 5.0 and x.median(keepdim=True).item() == 2.0


def test_max_pool_indices_of_windows_of_minus_infinity_are_pytorchs():
    # A window whose input cells were all -inf named a padding cell (index -1 and the like).
    x = np.array([[[-INF, 1.0, -INF, 2.0, -INF]]])
    for function, data in (("max_pool1d", x), ("max_pool2d", np.full((1, 1, 2, 3), -INF))):
        results = []
        for lib in (plugrad, torch):
            _values, indices = getattr(lib.nn.functional, function)(
                lib.tensor(data), 2, padding=1, return_indices=True
            )
            results.append(indices.tolist())
        assert results[0] == results[1], function


def test_the_slopes_of_erf_and_erfc_are_zero_far_in_the_tails():
    # They were 2.8e-317 for every |x| >= 27 (the clamp of the values), never 0 as PyTorch's.
    x = plugrad.tensor([30.0, 1e6, INF, -40.0, 27.5], dtype=plugrad.float64, requires_grad=True)
    (plugrad.special.erf(x) + plugrad.special.erfc(x) * 3).sum().backward()
    assert x.grad.tolist() == [0.0] * 5


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
def test_products_in_another_dtype_are_differentiated_in_that_dtype() -> None:
    # The rules used the complex input where the product had its real parts: z.prod(dtype=
    # float64) gave [3+1j, 1-2j] (PyTorch: [3, 1]); cumprod likewise (PyTorch is wrong there).
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's and PyTorch's about dropping imaginary parts
        for lib in (plugrad, torch):
            z = lib.tensor([1 + 2j, 3 - 1j], requires_grad=True)
            z.prod(0, dtype=lib.float64).backward()
            assert z.grad.tolist() == [3 + 0j, 1 + 0j], lib.__name__
        z = plugrad.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        z.cumprod(0, dtype=plugrad.float64).sum().backward()
        assert z.grad.tolist() == [4 + 0j, 1 + 0j]  # d(r0 + r0 r1)/dr0 = 1 + r1, /dr1 = r0
    x = plugrad.tensor([1.0, 2.0, 0.0, 3.0], requires_grad=True)
    x.cumprod(0, dtype=plugrad.float64).sum().backward()
    assert x.grad.dtype == plugrad.float32 and x.grad.tolist() == [3.0, 1.0, 8.0, 0.0]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("base", ["number", "tensor"])
def test_the_exponents_gradient_at_a_base_0_off_the_real_axis_is_nan_as_pytorchs(base, dtype):
    # 0 ** z has no limit where z is not real (0 ** 0.5j is nan): the gradient was 0 there
    exponents = np.array([1 + 1j, 2, -1, 0.5j, 0, 3 - 2j])
    grads = []
    for lib in (plugrad, torch):
        z = lib.tensor(exponents, dtype=getattr(lib, dtype), requires_grad=True)
        zero = 0 if base == "number" else lib.zeros(len(exponents), dtype=z.dtype)
        y = zero**z
        (y.real.sum() + 0.3 * y.imag.sum()).backward()
        grads.append(z.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


def test_logcumsumexp_of_complex_numbers_and_its_second_derivative_are_pytorchs():
    # Complex inputs were refused (its composite called logaddexp), and the second
    # derivative, through the rule, was not PyTorch's.
    values = [[1 + 1j, 2 - 1j, -1 + 3j], [0.5 + 0j, -2 + 1j, 1 - 1j]]
    weights = [[1 + 2j, 0.5 - 1j, 1j], [1.0, -1j, 2 + 0j]]
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor(values, dtype=lib.complex128, requires_grad=True)
        y = lib.logcumsumexp(x, 1)
        lib.real((y * lib.tensor(weights, dtype=lib.complex128)).sum()).backward()
        results.append([y.detach().resolve_conj().numpy(), x.grad.resolve_conj().numpy()])
    assert_arrays_agree(*results, rtol=1e-12, atol=1e-300)
    second = []
    for lib in (plugrad, torch):
        x = lib.tensor([0.3, -1.2, 2.0, 0.7], dtype=lib.float64, requires_grad=True)
        g = lib.tensor([0.3, -0.7, 1.2, 0.5], dtype=lib.float64)
        (first,) = lib.autograd.grad((lib.logcumsumexp(x, 0) * g).sum(), x, create_graph=True)
        (grad,) = lib.autograd.grad((first * lib.arange(4.0, dtype=lib.float64)).sum(), x)
        second.append([grad.numpy()])
    assert_arrays_agree(*second, rtol=1e-12, atol=1e-15)


def test_the_gradient_of_an_infinity_norm_goes_to_its_nan():
    # The ties were split as hit / sum(hit), 0 / 0 where no element equals a NaN norm: NaN
    # everywhere. Now the NaN takes the gradient, as amax's does (PyTorch: zero everywhere).
    for order, values in ((INF, [1.0, NAN, -3.0]), (-INF, [NAN, 2.0, NAN])):
        x = plugrad.tensor(values, requires_grad=True)
        with np.errstate(invalid="ignore"):
            plugrad.linalg.vector_norm(x, ord=order).backward()
        grad = x.grad.numpy()
        assert np.isnan(grad).tolist() == np.isnan(values).tolist()
        assert (grad[~np.isnan(grad)] == 0).all()


@pytest.mark.parametrize(
    "program",
    [
        lambda lib, x: x ** lib.tensor([0.0, 0.0, 1.5, 0.0], dtype=lib.float64),
        lambda lib, x: lib.logit(x, eps=1e-6),
    ],
    ids=["pow-with-a-zero-exponent", "logit-clamped"],
)
def test_second_derivatives_where_a_rule_masks_are_zero(program):
    # The masked branch of the first derivative was 0 * 0 ** -1 (pow) or g / 0 (logit):
    # dropped by where(), but its own derivative was 0 * inf = nan, in hessian and jvp.
    # Where the function is constant near x (x ** 0, a clamped logit) the second
    # derivative is 0, as PyTorch's forward mode (jvp) gives; its reverse mode gives nan.
    second = []
    for lib in (plugrad, torch):
        x = lib.tensor([0.0, 1.0, 0.3, 2.0], dtype=lib.float64, requires_grad=True)
        (first,) = lib.autograd.grad(program(lib, x).sum(), x, create_graph=True)
        (grad,) = lib.autograd.grad((first * lib.arange(1.0, 5.0, dtype=lib.float64)).sum(), x)
        second.append([first.detach().numpy(), grad.numpy()])
    (ours_first, ours), (their_first, theirs) = second
    np.testing.assert_array_equal(ours_first, their_first)
    constant = np.isnan(theirs)
    assert constant.any() and (ours[constant] == 0).all()
    np.testing.assert_allclose(ours[~constant], theirs[~constant], rtol=1e-12)


def test_logit_with_a_negative_eps_has_a_nan_gradient_where_its_value_is_nan():
    # A clamp wider than [0, 1] leaves x where log(x / (1 - x)) is NaN: the gradient there
    # was the finite 1 / (x (1 - x)) (-1.33 at 1.5); PyTorch's, and the value's, is NaN.
    grads = []
    for lib in (plugrad, torch):
        x = lib.tensor([1.5, 0.5, -0.5, 2.5, 0.0], dtype=lib.float64, requires_grad=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            lib.logit(x, eps=-1.0).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(*grads)
    assert np.isnan(grads[0]).tolist() == [True, False, True, True, False]
