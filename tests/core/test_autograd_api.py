"""plugrad.autograd: grad(), backward(inputs=), hooks, once_differentiable, anomaly mode,
gradcheck."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from functions import Cube, Exp, Square, identity_with_backward

import plugrad
from plugrad.autograd import grad
from plugrad.errors import AnomalyError, BackwardError, GradcheckError


def f64(*values, requires_grad=True) -> plugrad.Tensor:
    return plugrad.tensor(list(values), dtype=plugrad.float64, requires_grad=requires_grad)


# -- grad() ----------------------------------------------------------------------------------


def test_grad_returns_gradients_without_touching_dot_grad() -> None:
    x, w = f64(1.0, 2.0), f64(3.0, 4.0)
    loss = plugrad.sum(x * w * w)
    gx, gw = grad(loss, [x, w])
    np.testing.assert_allclose(gx.numpy(), [9.0, 16.0])
    np.testing.assert_allclose(gw.numpy(), [6.0, 16.0])
    assert x.grad is None and w.grad is None
    assert not gx.requires_grad


def test_grad_of_intermediate_tensors() -> None:
    x = f64(1.0, 2.0)
    h = x * 3
    y = plugrad.sum(h * h)
    (gh,) = grad(y, h)
    np.testing.assert_allclose(gh.detach().numpy(), 2 * h.detach().numpy())


def test_grad_prunes_branches_that_do_not_lead_to_inputs() -> None:
    calls = []

    def spy(ctx, g):
        calls.append("spy")
        return g

    Spy = identity_with_backward("Spy", spy)

    x, w = f64(1.0), f64(2.0)
    loss = plugrad.sum(x * 2 + Spy.apply(w))
    (gx,) = grad(loss, x)
    assert gx.tolist() == [2.0] and calls == [], "the branch to w must not run"


def test_grad_unused_inputs() -> None:
    x, unused = f64(1.0), f64(5.0)
    y = plugrad.sum(x * x)
    with pytest.raises(BackwardError, match="allow_unused=True"):
        grad(y, [x, unused], retain_graph=True)
    gx, gu = grad(y, [x, unused], allow_unused=True)
    assert gx.tolist() == [2.0] and gu is None


def test_grad_needs_inputs_that_require_grad() -> None:
    with pytest.raises(BackwardError, match="does not require grad"):
        grad(plugrad.sum(f64(1.0) * 2), f64(1.0, requires_grad=False))


def test_grad_with_create_graph_matches_pytorch_hessian() -> None:
    torch = pytest.importorskip("torch")
    values = [0.3, -1.2, 0.7]

    def f(lib, x):
        return lib.sum(lib.exp(x) * x * x) + lib.sum(x) ** 3

    x = f64(*values)
    (g,) = grad(f(plugrad, x), x, create_graph=True)
    rows = [grad(g, x, plugrad.asarray(row, device=x.device), retain_graph=True)[0].tolist()
            for row in np.eye(3)]  # fmt: skip
    expected = torch.autograd.functional.hessian(
        lambda t: f(torch, t), torch.tensor(values, dtype=torch.float64)
    )
    np.testing.assert_allclose(rows, expected.numpy(), rtol=1e-12)


def test_third_order_through_grad() -> None:
    x = f64(0.5)
    (g1,) = grad(plugrad.sum(x**4), x, create_graph=True)
    (g2,) = grad(plugrad.sum(g1), x, create_graph=True)
    (g3,) = grad(plugrad.sum(g2), x)
    assert g3.item() == pytest.approx(24 * 0.5)


def test_backward_with_inputs_accumulates_only_there() -> None:
    x, w = f64(1.0, 2.0), f64(3.0, 4.0)
    h = x * w
    loss = plugrad.sum(h * h)
    loss.backward(inputs=[w, h])
    assert x.grad is None
    np.testing.assert_allclose(w.grad.numpy(), 2 * h.detach().numpy() * x.detach().numpy())
    np.testing.assert_allclose(h.grad.numpy(), 2 * h.detach().numpy())


# -- hooks -----------------------------------------------------------------------------------


def test_post_accumulate_grad_hooks_see_the_new_grad() -> None:
    w = f64(1.0, 2.0)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    plugrad.sum(w * 3).backward()
    plugrad.sum(w * 3).backward()
    assert seen == [[3.0, 3.0], [6.0, 6.0]]
    handle.remove()
    plugrad.sum(w * 3).backward()
    assert len(seen) == 2
    with pytest.raises(BackwardError, match="leaves"):
        (w * 2).register_post_accumulate_grad_hook(lambda t: None)


def test_grad_does_not_run_post_accumulate_hooks() -> None:
    w = f64(1.0)
    seen = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append(1))
    grad(plugrad.sum(w * 2), w)
    assert seen == [] and w.grad is None


def test_detach_in_place() -> None:
    x = f64(1.0)
    y = x * 2
    assert y.detach_() is y
    assert y.is_leaf and not y.requires_grad and y.tolist() == [2.0]


# -- higher order must never be silently wrong -------------------------------------------------


class RawSquare(Square):
    @staticmethod
    @plugrad.autograd.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return plugrad.asarray(2 * x.array * g.array)


def test_once_differentiable_first_order_works() -> None:
    x = f64(3.0)
    plugrad.sum(RawSquare.apply(x)).backward()
    assert x.grad.tolist() == [6.0]


def test_once_differentiable_refuses_double_backward() -> None:
    x = f64(3.0)
    (g,) = grad(plugrad.sum(RawSquare.apply(x)), x, create_graph=True)
    assert g.tolist() == [6.0] and g.requires_grad
    with pytest.raises(BackwardError, match=r"RawSquare\.backward is decorated with once_diff"):
        grad(plugrad.sum(g), x)


def test_once_differentiable_gradient_requires_grad_where_pytorch_would_be_silently_wrong() -> None:
    # Unlike PyTorch's, the gradient requires grad when a tensor the backward saved does
    # (PyTorch's only when an incoming gradient does): PyTorch's, a constant, makes the
    # second derivative of (g * x).sum() g ([6]) where it is 4 * x ([12]), without a word.
    torch = pytest.importorskip("torch")

    class TorchSquare(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    t = torch.tensor([3.0], dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad(TorchSquare.apply(t).sum(), t, create_graph=True)
    assert not tg.requires_grad
    assert torch.autograd.grad((tg * t).sum(), t)[0].tolist() == [6.0]
    x = f64(3.0)
    (g,) = grad(plugrad.sum(RawSquare.apply(x)), x, create_graph=True)
    assert g.requires_grad
    with pytest.raises(BackwardError, match="once_differentiable"):
        grad(plugrad.sum(g * x), x)


# -- anomaly mode ------------------------------------------------------------------------------


LOG_OF_ZERO = pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
ZERO_TIMES_INFINITY = pytest.mark.filterwarnings(
    "ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning"
)


@ZERO_TIMES_INFINITY
def test_anomaly_mode_names_op_plugin_backend_and_user_code() -> None:
    x = f64(0.0, 1.0)
    with plugrad.autograd.detect_anomaly():
        assert plugrad.autograd.is_anomaly_enabled()
        # the slope of sqrt at 0 is infinite, and where() sends it 0: 0 * inf
        y = plugrad.sum(plugrad.where(x > 0, plugrad.sqrt(x), 0.0))  # this line must appear
        with pytest.raises(AnomalyError) as info:
            y.backward()
    message = str(info.value)
    assert "SqrtBackward" in message and "'plugrad.plugins.elementwise'" in message
    assert f"on {x.device.name}" in message and "produced NaN" in message
    assert "test_autograd_api.py" in message and "this line must appear" in message
    assert x.grad is None, "a failed backward changes no .grad"
    assert not plugrad.autograd.is_anomaly_enabled()


@ZERO_TIMES_INFINITY
def test_anomaly_mode_lets_infinite_gradients_pass_and_check_nan_false_checks_nothing() -> None:
    # As PyTorch: an infinity is a legitimate gradient (a loss scaler's overflow, which it
    # detects and skips); anomaly mode raised on it.
    autograd = plugrad.autograd
    x = f64(0.0, 1.0)
    with autograd.detect_anomaly():
        assert autograd.is_anomaly_check_nan_enabled()
        plugrad.sum(plugrad.log(x)).backward()
    assert x.grad.tolist() == [math.inf, 1.0]
    x.grad = None
    with autograd.detect_anomaly(check_nan=False):
        assert not autograd.is_anomaly_check_nan_enabled()
        y = plugrad.sum(plugrad.where(x > 0, plugrad.sqrt(x), 0.0))
        assert y.grad_fn.next_functions[0][0]._trace, "it still records where ops ran"
        y.backward()
    assert math.isnan(x.grad.tolist()[0])
    assert autograd.is_anomaly_check_nan_enabled() and not autograd.is_anomaly_enabled()
    with autograd.set_detect_anomaly(True, check_nan=False):
        assert autograd.is_anomaly_enabled() and not autograd.is_anomaly_check_nan_enabled()
    assert autograd.is_anomaly_check_nan_enabled() and not autograd.is_anomaly_enabled()


def test_anomaly_mode_reports_nan_and_custom_functions() -> None:
    NanGrad = identity_with_backward("NanGrad", lambda ctx, g: g * math.nan)

    x = f64(1.0)
    with plugrad.autograd.detect_anomaly():
        out = plugrad.sum(NanGrad.apply(x) * 2)
        with pytest.raises(AnomalyError, match=r"NanGradBackward \(Function .*NanGrad.*NaN"):
            out.backward()


@LOG_OF_ZERO
def test_without_anomaly_mode_nan_gradients_pass_silently() -> None:
    x = f64(0.0)
    plugrad.sum(plugrad.log(x)).backward()
    assert math.isinf(x.grad.item())


# -- gradcheck ---------------------------------------------------------------------------------


def test_gradcheck_accepts_correct_gradients() -> None:
    x, w = f64(0.5, -1.0), f64(1.5, 2.0)
    assert plugrad.autograd.gradcheck(lambda a, b: plugrad.exp(a * b) / (b * b), (x, w))
    assert plugrad.autograd.gradgradcheck(lambda a, b: plugrad.exp(a * b) / (b * b), (x, w))


class WrongGradient(Square):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x * 3  # should be 2


class NotTwiceDifferentiable(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        # Right value, but x is used as a constant: the second derivative is lost.
        return g * 3 * x.detach() * x.detach()


def test_gradcheck_catches_wrong_gradients() -> None:
    x = f64(0.5, 2.0)
    with pytest.raises(GradcheckError, match="input 0"):
        plugrad.autograd.gradcheck(WrongGradient.apply, (x,))
    assert not plugrad.autograd.gradcheck(WrongGradient.apply, (x,), raise_exception=False)


_NaNGradient = identity_with_backward(
    "_NaNGradient", lambda ctx, g: plugrad.where(g == 0, g, g * math.nan)
)


class _HalfLog(plugrad.autograd.Function):
    """log with a wrong rule; outside log's domain both sides of the check are NaN."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return plugrad.log(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / (2 * x)


_NoisyGradient = identity_with_backward(
    "_NoisyGradient", lambda ctx, g: g * (1 + 1e-9 * plugrad.randn(*g.shape, dtype=g.dtype))
)


@pytest.mark.parametrize(
    "func, x",
    [
        (_NaNGradient.apply, (0.5, 1.5)),
        (_HalfLog.apply, (-1.0, -2.0)),
        (lambda t: t * math.nan, (0.5, 1.5)),  # a NaN value: NaN finite differences
        (lambda t: t * math.inf, (0.5, 1.5)),
    ],
    ids=["nan-gradient", "wrong-rule-at-nan", "nan-output", "inf-output"],
)
def test_gradcheck_fails_on_nan_where_pytorchs_does(func, x) -> None:
    # (a NaN compared as no mismatch: every one of these passed)
    checks = [plugrad.autograd.gradcheck]
    if func != _HalfLog.apply:  # (its first derivative, g / 2x, is differentiated right)
        checks.append(plugrad.autograd.gradgradcheck)
    for check in checks:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's, of the NaN made
            assert not check(func, (f64(*x),), raise_exception=False), check.__name__
    with pytest.raises(GradcheckError, match="mismatch"):
        plugrad.autograd.gradcheck(func, (f64(*x),))


def test_gradcheck_checks_that_backward_is_reentrant_within_nondet_tol() -> None:
    x = f64(0.5, 1.5)
    with pytest.raises(GradcheckError, match="not reentrant"):
        plugrad.autograd.gradcheck(_NoisyGradient.apply, (x,))
    assert not plugrad.autograd.gradgradcheck(_NoisyGradient.apply, (x,), raise_exception=False)
    assert plugrad.autograd.gradcheck(_NoisyGradient.apply, (x,), nondet_tol=1e-6)


def test_gradgradcheck_catches_wrong_second_derivatives() -> None:
    x = f64(0.5, 2.0)
    assert plugrad.autograd.gradcheck(NotTwiceDifferentiable.apply, (x,))
    with pytest.raises(GradcheckError):
        plugrad.autograd.gradgradcheck(NotTwiceDifferentiable.apply, (x,))


def c128(*values: complex) -> plugrad.Tensor:
    return plugrad.tensor(list(values), dtype=plugrad.complex128, requires_grad=True)


ExpWithoutConj = Exp  # backward g * exp(z), without the conjugate complex inputs need


class RealPartOnly(plugrad.Function):
    """|z|^2 whose backward forgets the imaginary part of the gradient."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return plugrad.real(z * plugrad.conj(z))

    @staticmethod
    def backward(ctx, grad):
        (z,) = ctx.saved_tensors
        return plugrad.astype(2 * grad * plugrad.real(z), plugrad.complex128)


@pytest.mark.parametrize(
    "func",
    [
        plugrad.exp,
        plugrad.abs,  # complex -> real
        lambda z: z * plugrad.conj(z) + plugrad.sin(z),  # not holomorphic
        lambda z: plugrad.sum(plugrad.real(z) * plugrad.imag(z)),
    ],
)
def test_gradcheck_checks_complex_functions_both_orders(func) -> None:
    z = c128(0.5 + 1j, -1.5j, 0.3 - 0.2j)
    assert plugrad.autograd.gradcheck(func, (z,))
    assert plugrad.autograd.gradgradcheck(func, (z,))


def test_a_rule_right_only_for_real_inputs_passes_on_real_ones() -> None:
    assert plugrad.autograd.gradcheck(ExpWithoutConj.apply, (f64(0.5, -1.5),))


def test_gradcheck_real_input_complex_output() -> None:
    x = f64(0.5, 2.0)
    assert plugrad.autograd.gradcheck(lambda t: plugrad.exp(t * (1 + 2j)), (x,))


@pytest.mark.parametrize("wrong", [ExpWithoutConj, RealPartOnly])
def test_gradcheck_catches_wrong_complex_gradients(wrong) -> None:
    z = c128(0.5 + 1j, -1.5j)
    with pytest.raises(GradcheckError, match="finite differences give"):
        plugrad.autograd.gradcheck(wrong.apply, (z,))


def test_gradcheck_agrees_with_torch_on_complex_functions() -> None:
    torch = pytest.importorskip("torch")
    values = [0.5 + 1j, -1.5j, 0.3 - 0.2j]
    cases = [
        (lambda z: plugrad.exp(z) * plugrad.conj(z), lambda z: torch.exp(z) * torch.conj(z)),
        (lambda z: plugrad.abs(z) ** 2, lambda z: torch.abs(z) ** 2),
    ]
    for ours, theirs in cases:
        tz = torch.tensor(values, dtype=torch.complex128, requires_grad=True)
        assert torch.autograd.gradcheck(theirs, (tz,))
        assert plugrad.autograd.gradcheck(ours, (c128(*values),))


def test_backward_takes_one_tensor_and_grad_materializes_zeros_as_pytorch() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    unused = plugrad.tensor([3.0], requires_grad=True)
    plugrad.autograd.backward((x * x).sum())
    assert x.grad.tolist() == [2.0, 4.0]
    plugrad.autograd.backward(x * x, plugrad.ones(2), inputs=x)
    assert x.grad.tolist() == [4.0, 8.0]
    grads = plugrad.autograd.grad((x * x).sum(), (x, unused), materialize_grads=True)
    assert [g.tolist() for g in grads] == [[2.0, 4.0], [0.0]]
    with pytest.raises(ValueError, match="materialize_grads=True with allow_unused=False"):
        plugrad.autograd.grad((x * x).sum(), x, allow_unused=False, materialize_grads=True)
    with pytest.raises(plugrad.errors.BackwardError, match="materialize_grads=True for zeros"):
        plugrad.autograd.grad((x * x).sum(), (x, unused))


def test_what_pytorch_refuses_in_autograd_calls_is_refused_with_what_to_do() -> None:
    real = plugrad.tensor([1.0, 2.0], dtype=plugrad.float64, requires_grad=True)
    z = plugrad.tensor([1 + 2j, 3j], requires_grad=True)
    with pytest.raises(plugrad.errors.BackwardError, match="real scalar outputs"):
        (z * z).sum().backward()  # ambiguous: which real number is the loss?
    assert z.grad is None
    (z * z).sum().real.backward()
    assert z.grad is not None
    with pytest.raises(plugrad.errors.DtypeError, match="has no imaginary part"):
        plugrad.imag(real)
    with pytest.raises(TypeError, match=r"tuple of tensors, got a Tensor; pass \(x,\)"):
        plugrad.func.jvp(lambda x: x**2, real, plugrad.ones_like(real))
    with pytest.raises(plugrad.errors.ShapeError, match="one value"):
        plugrad.autograd.functional.hessian(lambda x: x**2, real)
    single = plugrad.autograd.functional.hessian(lambda x: (x**3).sum(keepdims=True), real)
    assert single.tolist() == [[6.0, 0.0], [0.0, 12.0]]


def test_a_post_accumulate_grad_hook_returning_a_value_is_refused() -> None:
    # Its value was dropped without a word (lambda p: p.grad * 2 changed nothing); PyTorch raises.
    w = f64(1.0, 2.0)
    w.register_post_accumulate_grad_hook(lambda t: t.grad * 2)
    with pytest.raises(TypeError, match="must return None"):
        plugrad.sum(w * 3).backward()
    assert w.grad.tolist() == [3.0, 3.0]


def test_needs_input_grad_materialized_zeros_and_del_grad_as_in_pytorch() -> None:
    seen = []

    class Double(plugrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(ctx.needs_input_grad)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = plugrad.ones(2, requires_grad=True)
    with plugrad.no_grad():
        assert not Double.apply(x).requires_grad
    assert seen == [(True,)]  # was (False,): a forward branching on it computed otherwise
    Double.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    del x.grad  # an AttributeError before
    assert x.grad is None
    unused = plugrad.ones(1, requires_grad=True)
    grads = plugrad.autograd.grad(
        (x * x).sum(), [x, unused], create_graph=True, materialize_grads=True
    )
    assert grads[1].requires_grad and grads[1].tolist() == [0.0]


def test_the_legacy_variable_wraps_a_tensor_as_pytorchs() -> None:
    from plugrad.autograd import Variable

    data = plugrad.ones(2)
    leaf = Variable(data * 2, requires_grad=True)
    assert leaf.is_leaf and leaf.requires_grad and leaf.grad_fn is None
    (leaf * 3).sum().backward()
    assert leaf.grad.tolist() == [3.0, 3.0]
    shared = Variable(data)
    shared.add_(1.0)  # a view of the same memory, as PyTorch's
    assert data.tolist() == [2.0, 2.0] and not shared.requires_grad
    assert isinstance(data, Variable) and not isinstance([1.0], Variable)
    with pytest.raises(TypeError, match="takes a Tensor"):
        Variable([1.0, 2.0])


def test_set_detect_anomaly_turns_the_mode_on_for_good_or_for_a_block() -> None:
    autograd = plugrad.autograd
    assert not autograd.is_anomaly_enabled()
    try:
        autograd.set_detect_anomaly(True)
        assert autograd.is_anomaly_enabled()
        with autograd.detect_anomaly():
            assert autograd.is_anomaly_enabled()
        assert autograd.is_anomaly_enabled()  # still set
    finally:
        autograd.set_detect_anomaly(False)
    assert not autograd.is_anomaly_enabled()
    x = plugrad.tensor([0.0, 1.0], requires_grad=True)
    with autograd.set_detect_anomaly(True):
        assert autograd.is_anomaly_enabled()
        with pytest.raises(plugrad.errors.AnomalyError), np.errstate(invalid="ignore"):
            plugrad.where(x > 0, plugrad.sqrt(x), 0.0).sum().backward()
    assert not autograd.is_anomaly_enabled()


def test_grad_takes_pytorchs_is_grads_batched_and_only_inputs() -> None:
    # Both raised TypeError; a batch of output gradients gives a Jacobian's rows at once.
    torch = pytest.importorskip("torch")
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        y = x**2 * lib.tensor([1.0, -1.0, 0.5], dtype=lib.float64)
        (rows,) = lib.autograd.grad(y, x, lib.eye(3, dtype=lib.float64), is_grads_batched=True)
        (plain,) = lib.autograd.grad((x * x).sum(), x, only_inputs=True)
        results.append((rows.tolist(), plain.tolist()))
    assert results[0] == results[1]
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match="batch dimension first"):
        plugrad.autograd.grad(x * 2, x, plugrad.tensor(1.0), is_grads_batched=True)


def test_gradcheck_takes_pytorchs_options_and_refuses_unknown_ones() -> None:
    x = plugrad.tensor([0.5, 1.5], dtype=plugrad.float64, requires_grad=True)
    options = dict(fast_mode=True, nondet_tol=0.0, check_undefined_grad=True,
                   check_batched_grad=False, check_forward_ad=False, masked=False)  # fmt: skip
    assert plugrad.autograd.gradcheck(lambda t: t**3, (x,), **options)
    assert plugrad.autograd.gradgradcheck(lambda t: t**3, (x,), gen_non_contig_grad_outputs=True)
    with pytest.raises(plugrad.errors.GradcheckError):  # the options never loosen the check
        plugrad.autograd.gradcheck(_wrong_cube, (x,), fast_mode=True)
    with pytest.raises(TypeError, match="fastmode"):
        plugrad.autograd.gradcheck(lambda t: t, (x,), fastmode=True)


class _WrongCube(Cube):
    @staticmethod
    def backward(ctx, g):
        (t,) = ctx.saved_tensors
        return 2 * t * t * g  # should be 3


def _wrong_cube(t):
    return _WrongCube.apply(t)


def test_a_non_leaf_input_of_backward_retains_its_gradient_from_then_on() -> None:
    # As PyTorch's: a later backward() adds to the .grad that inputs= gave it (it stayed
    # [4, 8], where PyTorch gives [7, 11]).
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    (y * y).sum().backward(inputs=[y], retain_graph=True)
    assert y.retains_grad and y.grad.tolist() == [4.0, 8.0] and x.grad is None
    (y * 3).sum().backward()
    assert y.grad.tolist() == [7.0, 11.0] and x.grad.tolist() == [6.0, 6.0]
