"""Complex values and gradients against PyTorch's (its conjugate Wirtinger convention).

Each case maps complex (or mixed real and complex) inputs to an output whose value
and whose gradients, for a random complex upstream gradient, must be PyTorch's;
a real input must get a real gradient.
"""

from __future__ import annotations

import numpy as np
import pytest

import plugrad

torch = pytest.importorskip("torch")

P, T = plugrad, torch
PF, TF = plugrad.nn.functional, torch.nn.functional

# name -> (plugrad function, torch function, input shapes, kinds: "c" complex, "r" real)
# fmt: off
CASES = {
    **{
        name: (getattr(P, name), getattr(T, name), [(3, 4)], "c")
        for name in (
            "exp", "log", "sin", "cos", "tan", "sinh", "cosh", "tanh", "sqrt", "abs", "square",
            "reciprocal", "asin", "acos", "atan", "asinh", "acosh", "atanh", "expm1", "log1p",
            "log2", "log10", "rsqrt", "sigmoid", "sgn", "angle", "real", "imag", "conj",
        )
    },
    "x.sigmoid()": (lambda x: x.sigmoid(), lambda x: x.sigmoid(), [(3, 4)], "c"),
    "F.sigmoid": (PF.sigmoid, TF.sigmoid, [(3, 4)], "c"),
    "x.sgn()": (lambda x: x.sgn(), lambda x: x.sgn(), [(3, 4)], "c"),
    "sgn at 0": (lambda x: (x * P.tensor([1.0, 0.0, 1.0, 1.0])).sgn(),
                 lambda x: (x * T.tensor([1.0, 0.0, 1.0, 1.0])).sgn(), [(3, 4)], "c"),
    "logsumexp": (lambda x: x.logsumexp(dim=1), lambda x: x.logsumexp(dim=1), [(3, 4)], "c"),
    "logsumexp keepdim": (lambda x: P.logsumexp(x, dim=0, keepdim=True),
                          lambda x: T.logsumexp(x, dim=0, keepdim=True), [(3, 4)], "c"),
    "linear": (PF.linear, TF.linear, [(3, 4), (2, 4)], "cc"),
    "linear, few rows": (PF.linear, TF.linear, [(2, 4), (8, 4)], "cc"),
    "linear with bias": (PF.linear, TF.linear, [(3, 4), (2, 4), (2,)], "ccc"),
    "pow": (P.pow, T.pow, [(3, 4), (3, 4)], "cc"),
    "pow(real, complex)": (P.pow, T.pow, [(3, 4), (3, 4)], "rc"),
    "pow(complex, real)": (P.pow, T.pow, [(3, 4), (3, 4)], "cr"),
    "negative ** complex": (lambda x: (-2.0) ** x, lambda x: (-2.0) ** x, [(3, 4)], "c"),
    "outer(real, complex)": (P.outer, T.outer, [(3,), (4,)], "rc"),
    "outer(complex, real)": (P.outer, T.outer, [(3,), (4,)], "cr"),
    "outer": (P.outer, T.outer, [(3,), (4,)], "cc"),
    "tensordot(real, complex)": (lambda a, b: P.tensordot(a, b, dims=1),
                                 lambda a, b: T.tensordot(a.to(T.complex128), b, dims=1),
                                 [(3, 4), (4, 2)], "rc"),
    "addcmul": (lambda x, a, b: P.addcmul(x, a, b, value=0.5),
                lambda x, a, b: T.addcmul(x, a, b, value=0.5), [(3, 4)] * 3, "ccc"),
    "addcdiv": (lambda x, a, b: P.addcdiv(x, a, b, value=-2.0),
                lambda x, a, b: T.addcdiv(x, a, b, value=-2.0), [(3, 4)] * 3, "ccc"),
    "lerp": (P.lerp, T.lerp, [(3, 4)] * 3, "ccc"),
    "conv1d": (PF.conv1d, TF.conv1d, [(2, 3, 7), (4, 3, 3)], "cc"),
    "conv2d, groups, stride, padding": (
        lambda x, w: PF.conv2d(x, w, stride=2, padding=1, groups=3),
        lambda x, w: TF.conv2d(x, w, stride=2, padding=1, groups=3), [(2, 3, 5, 5), (6, 1, 3, 3)],
        "cc"),
    "conv_transpose2d": (PF.conv_transpose2d, TF.conv_transpose2d, [(1, 3, 4, 4), (3, 2, 3, 3)],
                         "cc"),
    "inner(complex, real)": (P.inner, lambda a, b: T.inner(a, b.to(T.complex128)),
                             [(3, 4), (2, 4)], "cr"),
}
# fmt: on


def _array(rng, shape, kind):
    real = rng.standard_normal(shape)
    return real + 1j * rng.standard_normal(shape) if kind == "c" else real


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_gradients_are_pytorchs(name):
    function, reference, shapes, kinds = CASES[name]
    rng = np.random.default_rng(sorted(CASES).index(name))
    arrays = [_array(rng, shape, kind) for shape, kind in zip(shapes, kinds)]
    ours = [P.tensor(a, requires_grad=True) for a in arrays]
    theirs = [T.tensor(a, requires_grad=True) for a in arrays]
    with np.errstate(all="ignore"):
        result, expected = function(*ours), reference(*theirs)
        expected_value = expected.detach().resolve_conj().resolve_neg().numpy()
        assert result.dtype.name == str(expected_value.dtype)
        np.testing.assert_allclose(result.detach().numpy(), expected_value, rtol=1e-10, atol=1e-12)
        upstream = _array(rng, tuple(expected.shape), "c" if expected.is_complex() else "r")
        grads = P.autograd.grad(result, ours, P.tensor(upstream))
        expected_grads = T.autograd.grad(expected, theirs, T.tensor(upstream))
    for index, (grad, want) in enumerate(zip(grads, expected_grads)):
        want = want.resolve_conj().resolve_neg().numpy()
        assert grad.dtype == ours[index].dtype, f"input {index}: a real input's gradient is real"
        np.testing.assert_allclose(
            grad.numpy(), want, rtol=1e-9, atol=1e-12, err_msg=f"gradient of input {index}"
        )


def test_sigmoid_of_complex_stays_complex_in_place():
    x = P.tensor([0.5 + 1.0j, -2.0 - 0.5j])
    expected = T.tensor([0.5 + 1.0j, -2.0 - 0.5j]).sigmoid().numpy()
    x.sigmoid_()
    assert x.dtype == P.complex64
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize(
    "name", ["conv2d, groups, stride, padding", "linear", "sigmoid", "sgn", "logsumexp", "acosh"]
)
def test_second_order_gradients_are_pytorchs(name):
    function, reference, shapes, kinds = CASES[name]
    rng = np.random.default_rng(7)
    arrays = [_array(rng, shape, kind) for shape, kind in zip(shapes, kinds)]
    ours = [P.tensor(a, requires_grad=True) for a in arrays]
    theirs = [T.tensor(a, requires_grad=True) for a in arrays]
    results = []
    for inputs, library, wrap in ((ours, P, P.tensor), (theirs, T, T.tensor)):
        rng_up = np.random.default_rng(8)
        out = function(*inputs) if library is P else reference(*inputs)
        upstream = wrap(_array(rng_up, tuple(out.shape), "c"))
        grads = library.autograd.grad(out, inputs, upstream, create_graph=True)
        total = sum((g * g.conj()).real.sum() for g in grads)  # a real function of the grads
        results.append(library.autograd.grad(total, inputs))
    for index, (grad, want) in enumerate(zip(*results)):
        np.testing.assert_allclose(
            grad.numpy(),
            want.resolve_conj().resolve_neg().numpy(),
            rtol=1e-8,
            atol=1e-10,
            err_msg=f"second-order gradient of input {index}",
        )
