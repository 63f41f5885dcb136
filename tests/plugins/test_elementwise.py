"""The op table of plugins/elementwise.py (OpTests runs every check on each row)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from op_cases import over_xp

import plugrad
from plugrad.testing import OpCase, OpTests

P = plugrad
POSITIVE = (0.5, 2.0)
UNIT = (-0.9, 0.9)
MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, True]])
X = np.array([[-1.5, -0.5, 0.0, 0.5], [1.5, 2.5, -2.5, 3.0]])
INTS = np.array([12, 10, -3, 7])
BITS = np.array([6, 3, 5, 1])


def unary(name: str, reference, domain=(-2.0, 2.0), shape=(2, 3), **kw) -> OpCase:
    return OpCase(name, name, getattr(P, name), reference, (shape,), (domain,), **kw)


CASES = [
    OpCase("add", "add-broadcast", lambda a, b: a + b, np.add, ((3, 4), (4,))),
    OpCase("add", "add-outer", lambda a, b: P.add(a, b), np.add, ((2, 1, 3), (4, 1))),
    OpCase("add", "add-0d", lambda a, b: a + b, np.add, ((), (3,))),
    OpCase("add", "add-scalar", lambda a: 2.5 + a, lambda a: 2.5 + a, ((3,),)),
    OpCase("subtract", "sub", lambda a, b: a - b, np.subtract, ((3, 4), (3, 1))),
    OpCase("subtract", "rsub-scalar", lambda a: 1.5 - a, lambda a: 1.5 - a, ((2, 3),)),
    OpCase("multiply", "mul-broadcast", lambda a, b: a * b, np.multiply, ((3, 4), (4,))),
    OpCase("multiply", "mul-0d", lambda a, b: a * b, np.multiply, ((), (2, 3))),
    OpCase("multiply", "mul-self", lambda a: a * a, lambda a: a * a, ((5,),)),
    OpCase("divide", "div", lambda a, b: a / b, np.divide, ((3, 4), (4,)), ((-2, 2), POSITIVE)),
    OpCase("divide", "rdiv-scalar", lambda a: 2.0 / a, lambda a: 2.0 / a, ((4,),), (POSITIVE,)),
    OpCase("pow", "pow-int", lambda a: a**3, lambda a: a**3, ((2, 3),)),
    OpCase("pow", "pow-tensor", lambda a, b: a**b, np.power, ((3, 4), (4,)), (POSITIVE, (-1, 2))),
    OpCase("pow", "rpow-scalar", lambda a: 2.0**a, lambda a: 2.0**a, ((3,),)),
    OpCase("pow", "pow-sqrt", lambda a: P.pow(a, 0.5), np.sqrt, ((4,),), (POSITIVE,)),
    OpCase("negative", "neg", lambda a: -a, np.negative, ((2, 3),)),
    OpCase("positive", "positive", P.positive, np.positive, ((2, 3),)),
    unary("exp", np.exp),
    # Piecewise constant: a zero gradient, checked between the steps.
    unary("floor", np.floor, (0.1, 0.4)),
    unary("ceil", np.ceil, (-0.9, -0.6)),
    unary("round", np.round, (1.1, 1.4)),
    OpCase(
        "round_decimals",
        "round-decimals",
        lambda a: P.round(a, decimals=1),
        lambda a: np.round(a, 1),
        ((2, 3),),
        ((1.11, 1.14),),
    ),
    unary("trunc", np.trunc, (2.1, 2.9)),
    unary("sign", np.sign, POSITIVE),
    OpCase("sign", "sign-negative", P.sign, np.sign, ((2, 3),), ((-2.0, -0.5),)),
    unary("expm1", np.expm1),
    unary("exp2", np.exp2),
    unary("frac", lambda a: a - np.trunc(a), (0.1, 0.9)),
    OpCase("frac", "frac-negative", P.frac, lambda a: a - np.trunc(a), ((2, 3),), ((-1.9, -1.1),)),
    unary("deg2rad", np.deg2rad),
    unary("rad2deg", np.rad2deg),
    unary("log", np.log, POSITIVE),
    unary("log1p", np.log1p, POSITIVE),
    unary("logit", lambda a: np.log(a / (1 - a)), (0.1, 0.9)),
    OpCase(
        "logit",
        "logit-eps",
        lambda a: P.logit(a, 0.2),
        lambda a: np.log(np.clip(a, 0.2, 0.8) / (1 - np.clip(a, 0.2, 0.8))),
        ((2, 3),),
        ((0.25, 0.75),),
    ),
    unary("log2", np.log2, POSITIVE),
    unary("log10", np.log10, POSITIVE),
    unary("sqrt", np.sqrt, POSITIVE),
    unary("square", np.square),
    unary("reciprocal", np.reciprocal, POSITIVE),
    unary("rsqrt", lambda a: 1 / np.sqrt(a), POSITIVE),
    unary("abs", np.abs),
    OpCase("abs", "abs-operator", lambda a: abs(a), np.abs, ((4,),)),
    unary("sin", np.sin),
    unary("cos", np.cos),
    unary("tan", np.tan, (-1.2, 1.2)),
    unary("sinh", np.sinh),
    unary("cosh", np.cosh),
    unary("tanh", np.tanh),
    unary("asin", np.arcsin, UNIT),
    unary("acos", np.arccos, UNIT),
    unary("atan", np.arctan),
    unary("asinh", np.arcsinh),
    unary("acosh", np.arccosh, (1.2, 3.0)),
    unary("atanh", np.arctanh, UNIT),
    unary("real", np.real),
    over_xp("real", "real-complex", lambda xp, a: xp.real(a * (1 + 2j)), (3,)),
    over_xp("imag", "imag-complex", lambda xp, a: xp.imag(a * (1 + 2j)), (3,)),
    unary("conj", np.conj),
    OpCase("atan2", "atan2", P.atan2, np.arctan2, ((3, 4), (4,)), ((0.2, 2), (-2, 2))),
    OpCase("hypot", "hypot", P.hypot, np.hypot, ((3, 4), (3, 1))),
    OpCase("logaddexp", "logaddexp", P.logaddexp, np.logaddexp, ((3, 4), (4,))),
    # One ulp from x1: x1's gradient (it had none, so a sum through it lost a term).
    OpCase("nextafter", "nextafter", P.nextafter, np.nextafter, ((3, 4), (4,))),
    OpCase(
        "copysign",
        "copysign",
        lambda a: P.copysign(a, P.asarray(np.array([1.0, -1.0, -0.0, 2.0]))),
        lambda a: np.copysign(a, np.array([1.0, -1.0, -0.0, 2.0])),
        ((3, 4),),
    ),
    OpCase(
        "remainder",
        "remainder",
        lambda a, b: a % b,
        np.remainder,
        ((3, 4), (4,)),
        ((-3, 3), POSITIVE),
    ),
    OpCase("remainder", "rremainder", lambda a: 5.0 % a, lambda a: 5.0 % a, ((4,),), ((1.1, 1.9),)),
    OpCase("maximum", "maximum", P.maximum, np.maximum, ((3, 4), (4,))),
    OpCase("maximum", "relu", lambda a: P.maximum(a, 0.0), lambda a: np.maximum(a, 0.0), ((6,),)),
    OpCase("minimum", "minimum", P.minimum, np.minimum, ((3, 4), (4,))),
    OpCase(
        "clip",
        "clip-scalars",
        lambda a: P.clip(a, -1.0, 1.0),
        lambda a: np.clip(a, -1.0, 1.0),
        ((3, 4),),
    ),
    OpCase(
        "clip",
        "clip-tensors",
        lambda a, lo, hi: P.clip(a, lo, hi),
        lambda a, lo, hi: np.clip(a, lo, hi),
        ((3, 4), (4,), (3, 1)),
        ((-2, 2), (-1.5, -0.1), (0.1, 1.5)),
    ),
    OpCase(
        "clip",
        "clip-min-only",
        lambda a: P.clip(a, min=0.3),
        lambda a: np.clip(a, 0.3, None),
        ((5,),),
    ),
    # PyTorch's element-wise functions beyond the standard.
    OpCase("fmod", "fmod", P.fmod, np.fmod, ((3, 4), (4,)), ((-3, 3), POSITIVE)),
    OpCase("fmax", "fmax", P.fmax, np.fmax, ((3, 4), (4,))),
    OpCase("fmin", "fmin", P.fmin, np.fmin, ((3, 4), (4,))),
    OpCase(
        "xlogy", "xlogy", P.xlogy, lambda x, y: x * np.log(y), ((3, 4), (4,)), ((-2, 2), POSITIVE)
    ),
    OpCase(
        "xlog1py",
        "xlog1py",
        P.special.xlog1py,
        lambda x, y: x * np.log1p(y),
        ((3, 4), (4,)),
        ((-2, 2), POSITIVE),
    ),
    OpCase(
        "rounded_divide",
        "div-floor",
        lambda a, b: P.div(a, b, rounding_mode="floor"),
        lambda a, b: np.floor(a / b),
        ((3, 4), (4,)),
        ((-3, 3), POSITIVE),
    ),
    OpCase(
        "rounded_divide",
        "div-trunc",
        lambda a, b: a.div(b, rounding_mode="trunc"),
        lambda a, b: np.trunc(a / b),
        ((3, 4), (3, 1)),
        ((-3, 3), (-2, -0.5)),
    ),
    unary("sinc", np.sinc),
    OpCase("lerp", "lerp", P.lerp, lambda a, b, w: a + w * (b - a), ((3, 4), (4,), (3, 1))),
    OpCase(
        "addcmul",
        "addcmul",
        lambda a, b, c: P.addcmul(a, b, c, value=0.5),
        lambda a, b, c: a + 0.5 * b * c,
        ((3, 4), (4,), (3, 1)),
    ),
    OpCase(
        "addcdiv",
        "addcdiv",
        lambda a, b, c: P.addcdiv(a, b, c, value=-2.0),
        lambda a, b, c: a - 2.0 * b / c,
        ((3, 4), (4,), (3, 1)),
        ((-2, 2), (-2, 2), POSITIVE),
    ),
    OpCase(
        "float_power",
        "float_power",
        lambda a, b: P.astype(P.float_power(a, b), a.dtype),  # computes in float64
        lambda a, b: np.float_power(a, b).astype(a.dtype),
        ((3, 4), (4,)),
        (POSITIVE, (-2, 2)),
    ),
    # (x without 0: finite differences across the step; values' gradient is tested below)
    OpCase(
        "heaviside",
        "heaviside",
        P.heaviside,
        np.heaviside,
        inputs=[np.where(X == 0, 0.5, X), X[::-1].copy()],
    ),
    # A composite program: gradients through several ops at once.
    OpCase(
        "exp",
        "composite-mlp",
        lambda x, w, b: P.sum(P.maximum(x @ w + b, 0.0) ** 2, axis=1),
        lambda x, w, b: np.sum(np.maximum(x @ w + b, 0.0) ** 2, axis=1),
        ((5, 3), (3, 4), (4,)),
    ),
]


def compare(name: str, reference) -> OpCase:
    return OpCase(name, name, getattr(P, name), reference, inputs=[X, X[:, ::-1].copy()])


def predicate(name: str, reference, values=(1.0, -np.inf, np.nan, -0.0, 2.5)) -> OpCase:
    return OpCase(name, name, getattr(P, name), reference, inputs=[np.array(values)])


NO_GRAD = [
    compare("equal", np.equal),
    compare("not_equal", np.not_equal),
    compare("less", np.less),
    compare("less_equal", np.less_equal),
    compare("greater", np.greater),
    compare("greater_equal", np.greater_equal),
    OpCase("equal", "eq-operator", lambda a: a == 0.5, lambda a: a == 0.5, inputs=[X]),
    OpCase("logical_and", "logical_and", P.logical_and, np.logical_and, inputs=[MASK, MASK[::-1]]),
    OpCase("logical_or", "logical_or", P.logical_or, np.logical_or, inputs=[MASK, MASK[::-1]]),
    OpCase("logical_xor", "logical_xor", P.logical_xor, np.logical_xor, inputs=[MASK, MASK[::-1]]),
    OpCase("logical_not", "logical_not", P.logical_not, np.logical_not, inputs=[MASK]),
    predicate("signbit", np.signbit),
    predicate("isnan", np.isnan),
    predicate("isinf", np.isinf),
    predicate("isfinite", np.isfinite),
    OpCase("floor_divide", "floor_divide", lambda a: a // 0.7, lambda a: a // 0.7, inputs=[X]),
    OpCase("bitwise_and", "bitwise_and", lambda a, b: a & b, np.bitwise_and, inputs=[INTS, BITS]),
    OpCase("bitwise_or", "bitwise_or", lambda a, b: a | b, np.bitwise_or, inputs=[INTS, BITS]),
    OpCase("bitwise_xor", "bitwise_xor", lambda a, b: a ^ b, np.bitwise_xor, inputs=[INTS, BITS]),
    OpCase("bitwise_invert", "bitwise_invert", lambda a: ~a, np.invert, inputs=[INTS]),
    OpCase("gcd", "gcd", P.gcd, np.gcd, inputs=[INTS, BITS]),
    OpCase("lcm", "lcm", P.lcm, np.lcm, inputs=[INTS, BITS]),
    OpCase("bitwise_left_shift", "lshift", lambda a, b: a << b, np.left_shift, inputs=[INTS, BITS]),
    OpCase(
        "bitwise_right_shift", "rshift", lambda a, b: a >> b, np.right_shift, inputs=[INTS, BITS]
    ),
]


class TestElementwiseOps(OpTests):
    cases = (*CASES, *NO_GRAD)


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc", "sign"])
def test_piecewise_constant_ops_keep_the_graph_with_a_zero_gradient(name) -> None:
    # At the steps too (0.5, -2.5, 0.0, -0.0): the values are NumPy's, the gradient is 0.
    values = np.array([-1.5, -0.5, -0.0, 0.0, 0.5, 2.5, -np.inf, np.nan])
    x = P.tensor(values, requires_grad=True)
    y = getattr(P, name)(x)
    np.testing.assert_array_equal(y.detach().numpy(), getattr(np, name)(values))
    assert y.requires_grad and y.grad_fn is not None
    (y * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros_like(values))
    assert getattr(x.detach(), name)().requires_grad is False


def test_maximum_and_minimum_split_gradient_at_ties() -> None:
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = plugrad.tensor([1.0, 1.0, 5.0], requires_grad=True)
    (plugrad.maximum(x, y) + 2 * plugrad.minimum(x, y)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.5, 1.0, 2.0])
    np.testing.assert_array_equal(y.grad.numpy(), [1.5, 2.0, 1.0])


def test_pow_gradients_at_zero_are_finite() -> None:
    x = plugrad.tensor([0.0, 2.0], requires_grad=True)
    (x**0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
    e = plugrad.tensor([2.0, 3.0], requires_grad=True)
    plugrad.pow(plugrad.tensor([0.0, 0.0]), e).sum().backward()
    np.testing.assert_array_equal(e.grad.numpy(), [0.0, 0.0])


def test_kinks_take_documented_subgradients() -> None:
    x = plugrad.tensor([0.0, 0.0, -1.0], requires_grad=True)
    plugrad.abs(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, -1.0])
    a = plugrad.tensor([0.0, 3.0], requires_grad=True)
    plugrad.hypot(a, plugrad.tensor([0.0, 4.0])).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [0.0, 0.6])
    c = plugrad.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    plugrad.clip(c, -1.0, 1.0).sum().backward()
    np.testing.assert_array_equal(c.grad.numpy(), [1.0, 1.0, 1.0])


def test_mixed_precision_gradients_keep_each_input_dtype() -> None:
    a = plugrad.tensor([1.0, 2.0], dtype=plugrad.float32, requires_grad=True)
    b = plugrad.tensor([3.0, 4.0], dtype=plugrad.float64, requires_grad=True)
    h = plugrad.tensor([1.0, 2.0], dtype=plugrad.float16, requires_grad=True)
    out = a * b + h
    assert out.dtype == plugrad.float64
    out.sum().backward()
    assert (a.grad.dtype, b.grad.dtype, h.grad.dtype) == (
        plugrad.float32,
        plugrad.float64,
        plugrad.float16,
    )
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 4.0])


COMPLEX_HOLOMORPHIC = ["exp", "log", "sin", "cos", "tanh", "sqrt", "square", "reciprocal"]


@pytest.mark.parametrize("name", COMPLEX_HOLOMORPHIC)
def test_complex_gradients_follow_pytorch(name: str) -> None:
    torch = pytest.importorskip("torch")
    z = np.array([0.5 + 0.3j, -0.7 + 1.1j, 1.2 - 0.4j])
    w = np.array([0.3 - 0.2j, 1.0 + 0.5j, -0.4 + 0.1j])
    x = plugrad.asarray(z, requires_grad=True)
    out = getattr(plugrad, name)(x) * plugrad.asarray(w)
    plugrad.real(out * plugrad.conj(out)).sum().backward()
    t = torch.tensor(z, requires_grad=True)
    t_out = getattr(torch, name)(t) * torch.tensor(w)
    (t_out * t_out.conj()).real.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)


def test_complex_abs_real_imag_gradients_follow_pytorch() -> None:
    torch = pytest.importorskip("torch")
    z = np.array([0.5 + 0.3j, -0.7 + 1.1j, 0.0 + 0.0j])
    x = plugrad.asarray(z, requires_grad=True)
    (plugrad.abs(x) * 2 + plugrad.real(x) * 3 - plugrad.imag(x) * 5).sum().backward()
    t = torch.tensor(z, requires_grad=True)
    (t.abs() * 2 + t.real * 3 - t.imag * 5).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_atan2_at_the_origin_has_gradient_zero_like_pytorch() -> None:
    y = plugrad.tensor([0.0, 1.0, 0.0], dtype=plugrad.float64, requires_grad=True)
    x = plugrad.tensor([0.0, 0.0, -2.0], dtype=plugrad.float64, requires_grad=True)
    plugrad.atan2(y, x).sum().backward()
    assert y.grad.tolist()[0] == 0.0 and x.grad.tolist()[0] == 0.0
    torch = pytest.importorskip("torch")
    ty = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64, requires_grad=True)
    tx = torch.tensor([0.0, 0.0, -2.0], dtype=torch.float64, requires_grad=True)
    torch.atan2(ty, tx).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_rounding_a_bool_tensor_gives_it_back() -> None:
    # NumPy's round of a bool was float16 (PyTorch refuses bools; NumPy's floor gives them back).
    b = plugrad.tensor([True, False])
    for rounded in (plugrad.round(b), b.round(), b.clone().round_()):
        assert rounded.dtype is plugrad.bool and rounded.tolist() == [True, False]


def test_nextafter_passes_the_gradient_to_x1_as_pytorch() -> None:
    # It had no gradient: a sum through it and another path gave x.grad without its term.
    torch = pytest.importorskip("torch")
    x, y = np.array([[1.5], [-2.0]]), np.array([0.0, 1.0, 3.0])
    weights = np.arange(6.0).reshape(2, 3)
    ours, other = P.tensor(x, requires_grad=True), P.tensor(y, requires_grad=True)
    (P.nextafter(ours, other) * P.asarray(weights) + ours).sum().backward()
    theirs, their_other = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    (torch.nextafter(theirs, their_other) * torch.tensor(weights) + theirs).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    np.testing.assert_array_equal(other.grad.numpy(), their_other.grad.numpy())


def test_heaviside_passes_values_their_gradient_where_x_is_zero() -> None:
    # It had no gradient: values that required grad got none, silently (PyTorch raises).
    x = P.asarray(np.array([0.0, 1.0, -2.0, 0.0]))
    values = P.asarray(np.array([0.3, 0.4, 0.5, 0.6]), requires_grad=True)
    assert P.autograd.gradcheck(lambda v: P.heaviside(x, v), (values,))
    (P.heaviside(x, values) * P.asarray(np.array([2.0, 3.0, 4.0, 5.0]))).sum().backward()
    assert values.grad.tolist() == [2.0, 0.0, 0.0, 5.0]
    steps = P.asarray(np.array([0.0, 1.0]), requires_grad=True)
    P.heaviside(steps, P.asarray(np.array([0.5, 0.5]))).sum().backward()
    assert steps.grad.tolist() == [0.0, 0.0]  # a step: no slope almost everywhere


def test_lerp_picks_its_form_by_the_weights_magnitude_as_pytorch() -> None:
    # A complex number weight was compared with 0.5 (TypeError); a negative weight took the
    # form from x where PyTorch's (|weight| >= 0.5) takes the one from end.
    torch = pytest.importorskip("torch")
    start, end = [1 + 1j, 2j], [3 + 0j, 1j]
    for weight in (0.5 + 0.5j, 0.1j):
        ours = plugrad.lerp(plugrad.tensor(start), plugrad.tensor(end), weight)
        theirs = torch.lerp(torch.tensor(start), torch.tensor(end), weight)
        np.testing.assert_allclose(np.asarray(ours.tolist()), theirs.numpy(), rtol=1e-6)
    rng = np.random.default_rng(0)
    x = rng.normal(size=1000).astype(np.float32)
    e = (rng.normal(size=1000) * 1000).astype(np.float32)
    w = np.float32(-0.7)
    from_end = e - (e - x) * (np.float32(1) - w)
    for weight in (-0.7, plugrad.full((1000,), -0.7)):
        got = plugrad.lerp(plugrad.tensor(x), plugrad.tensor(e), weight)
        assert np.array_equal(np.asarray(got.tolist(), dtype=np.float32), from_end)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (PyTorch's overflowing x * 10**n)
@pytest.mark.parametrize(
    ("values", "decimals"),
    [
        ([1.234, 1e37, math.inf, -5.5, 0.0], 2),  # 1e37 * 100 overflows: 1e37 is kept
        ([1.234, -5.5], 39),  # 10**39 is past float32's range: every x is kept
        ([1.234, math.inf, -2.5], -400),
        ([123.4, -96.7, math.nan], -1),
    ],
)
def test_round_to_decimals_has_a_zero_gradient_as_pytorchs(values, decimals, backend) -> None:
    # Computed by where and asarray on tensors, it passed the gradient 1 where x was kept.
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (plugrad, torch):
        x = lib.tensor(values, requires_grad=True)
        (by_function,) = lib.autograd.grad(
            lib.round(x, decimals=decimals).sum(), x, create_graph=True
        )
        x.round(decimals=decimals).sum().backward()
        grads.append((by_function.tolist(), by_function.requires_grad, x.grad.tolist()))
    assert grads[0] == grads[1] == ([0.0] * len(values), False, [0.0] * len(values))


def test_acosh_below_minus_one_and_logit_at_minus_zero_have_pytorchs_gradients(backend) -> None:
    # acosh's gradient was NaN below -1 (sqrt(x - 1) * sqrt(x + 1)), where PyTorch's
    # 1 / sqrt(x * x - 1) is finite; logit's was -inf at -0.0, where PyTorch's is inf.
    torch = pytest.importorskip("torch")
    cases = {
        "acosh": [-3.0, -2.0, -1.0, -0.5, 0.5, 1.0, 1.0000001, 2.0, math.nan],
        "logit": [-0.0, 0.0, 0.25, 1.0, -0.5, 1.5, math.nan],
    }
    for name, values in cases.items():
        grads = []
        for lib in (plugrad, torch):
            x = lib.tensor(values, requires_grad=True)
            (getattr(lib, name)(x) * lib.tensor([2.0] * len(values))).sum().backward()
            grads.append(np.array(x.grad.tolist()))
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6, err_msg=name)
