"""User-defined Functions: the PyTorch extension API."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from functions import Exp, Square, doubling_in_place, identity_with_backward

import plugrad
from plugrad.errors import FunctionBackwardError, GraphFreedError, InPlaceModificationError


class MulAdd(plugrad.Function):
    """x * y + z, with z not differentiated."""

    @staticmethod
    def forward(ctx, x, y, z, scale):
        ctx.save_for_backward(x, y)
        ctx.scale = scale
        seen.append(ctx.needs_input_grad)
        return (x * y + z) * scale

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y * ctx.scale, grad * x * ctx.scale, None, None


seen: list = []


def test_custom_function_forward_backward_and_grad_fn_name() -> None:
    x = plugrad.tensor([0.0, 1.0], dtype=plugrad.float64, requires_grad=True)
    y = Exp.apply(x)
    assert repr(y.grad_fn) == "<ExpBackward>" and type(y.grad_fn).__name__ == "ExpBackward"
    assert isinstance(y.grad_fn, plugrad.Node)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.0, 1.0]))


def test_needs_input_grad_and_none_gradients() -> None:
    seen.clear()
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = plugrad.tensor([3.0, 4.0])
    z = plugrad.tensor([1.0, 1.0], requires_grad=True)
    out = MulAdd.apply(x, y, z, 2.0)
    assert seen == [(True, False, True, False)]
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 8.0])
    assert y.grad is None and z.grad is None


def test_function_without_grad_inputs_records_nothing() -> None:
    y = Exp.apply(plugrad.tensor([1.0]))
    assert not y.requires_grad and y.grad_fn is None
    with plugrad.no_grad():
        assert Exp.apply(plugrad.tensor([1.0], requires_grad=True)).grad_fn is None


def test_double_backward_through_a_function() -> None:
    x = plugrad.tensor(0.5, dtype=plugrad.float64, requires_grad=True)
    Exp.apply(x * x).backward(create_graph=True)
    g = x.grad
    x.grad = None
    g.backward()
    assert x.grad.item() == pytest.approx((2 + 4 * 0.25) * np.exp(0.25))


def test_saving_an_output_makes_no_reference_cycle() -> None:
    gc.collect()
    gc.disable()
    try:
        x = plugrad.tensor([1.0], requires_grad=True)
        y = Exp.apply(x)
        node = weakref.ref(y.grad_fn)
        del y
        assert node() is None
    finally:
        gc.enable()


def test_multiple_outputs_and_missing_output_gradients() -> None:
    class SplitScale(plugrad.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g2, g3):
            return g2 * 2 + g3 * 3

    x = plugrad.tensor([1.0, 1.0], requires_grad=True)
    a, b = SplitScale.apply(x)
    assert a.grad_fn is b.grad_fn
    (a.sum() + b.sum() * 10).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [32.0, 32.0])
    x.grad = None
    a, b = SplitScale.apply(x)
    b.sum().backward()  # a receives no gradient: backward gets zeros for it
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


@pytest.mark.parametrize(
    ("arguments", "gradients", "message"),
    [
        pytest.param(
            lambda x: (x, x),
            lambda g: g,
            r"Bad\.backward returned 1 gradient",
            id="too-few-gradients",
        ),
        pytest.param(
            lambda x: (x, 2.0),
            lambda g: (g * 2.0, plugrad.ones(1)),  # the factor is a number: it has no gradient
            r"Bad\.backward returned a gradient for argument 1, which is not a Tensor",
            id="a-gradient-for-a-number",
        ),
    ],
)
def test_gradients_that_do_not_fit_the_arguments_name_the_function(
    arguments, gradients, message
) -> None:
    class Bad(plugrad.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return gradients(g)

    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(FunctionBackwardError, match=message):
        Bad.apply(*arguments(x)).sum().backward()
    assert x.grad is None


def test_wrong_gradient_shape_names_the_function() -> None:
    class BadShape(plugrad.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return g

    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(FunctionBackwardError, match=r"BadShape\.backward .* shape \(\) .* \(2,\)"):
        BadShape.apply(x).backward()


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_complex_gradient_for_a_real_argument_is_refused(create_graph: bool) -> None:
    # It was cast to the argument's real dtype: the imaginary part dropped without a word.
    ComplexGradient = identity_with_backward(
        "ComplexGradient", lambda ctx, g: g.to(plugrad.complex64) * (1 + 1j)
    )

    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        FunctionBackwardError, match=r"complex gradient \(complex64\) for argument 0"
    ):
        ComplexGradient.apply(x).sum().backward(create_graph=create_graph)
    assert x.grad is None
    z = plugrad.tensor([1 + 1j], requires_grad=True)  # a real gradient of a complex one is taken
    ComplexGradient.apply(z).abs().sum().backward()
    assert z.grad is not None and z.grad.dtype == z.dtype


def test_saved_tensors_are_freed_after_backward() -> None:
    x = plugrad.tensor([1.0], requires_grad=True)
    y = Exp.apply(x)
    y.backward(plugrad.ones_like(y))
    with pytest.raises(GraphFreedError, match="retain_graph=True"):
        _ = y.grad_fn.saved_tensors
    with pytest.raises(GraphFreedError):
        y.backward(plugrad.ones_like(y))


def test_definition_errors() -> None:
    with pytest.raises(TypeError, match="staticmethod"):

        class NotStatic(plugrad.Function):
            def forward(ctx, x):
                return x

    with pytest.raises(TypeError, match="apply"):
        Exp()
    with pytest.raises(TypeError, match="Tensor"):

        class ReturnsList(plugrad.Function):
            @staticmethod
            def forward(ctx, x):
                return [x]

        ReturnsList.apply(plugrad.ones(1))

    class SavesNumber(plugrad.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(3)
            return x

    with pytest.raises(TypeError, match="ctx attributes"):
        SavesNumber.apply(plugrad.ones(1))


def test_mark_non_differentiable() -> None:
    class WithIndex(plugrad.Function):
        @staticmethod
        def forward(ctx, x):
            index = plugrad.zeros_like(x)
            ctx.mark_non_differentiable(index)
            return x * 2, index

        @staticmethod
        def backward(ctx, g, g_index):
            return g * 2

    x = plugrad.tensor([1.0], requires_grad=True)
    out, index = WithIndex.apply(x)
    assert out.requires_grad and not index.requires_grad


def test_a_function_that_saves_its_own_outputs_returns_them_all() -> None:
    class SinCos(plugrad.Function):
        @staticmethod
        def forward(ctx, x):
            s, c = plugrad.sin(x), plugrad.cos(x)
            ctx.save_for_backward(s, c)
            return s, c

        @staticmethod
        def backward(ctx, gs, gc):
            s, c = ctx.saved_tensors
            return gs * c - gc * s

    x = plugrad.tensor([0.5, 1.0], requires_grad=True)
    out = SinCos.apply(x)
    assert isinstance(out, tuple) and len(out) == 2
    s, c = out
    (s.sum() + c.sum()).backward()
    expected = np.cos([0.5, 1.0]) - np.sin([0.5, 1.0])
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


class _WithACount(plugrad.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2, 5, "tag"

    @staticmethod
    def backward(ctx, grad, grad_count, grad_tag):
        assert grad_count is None and grad_tag is None
        return grad * 2


def test_outputs_that_are_not_tensors_pass_through_as_in_pytorch() -> None:
    # forward returning (tensor, 5) raised a TypeError.
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y, count, tag = _WithACount.apply(x)
    assert (count, tag) == (5, "tag") and y.grad_fn is not None
    (y * 3).sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]
    with plugrad.no_grad():
        assert _WithACount.apply(x)[1:] == (5, "tag")
    compiled = plugrad.compile(lambda t: _WithACount.apply(t)[0] * 1)
    for _ in range(2):
        assert compiled(plugrad.tensor([3.0])).tolist() == [6.0]


class _AddInPlace(plugrad.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.mark_dirty(x)
        x.add_(w)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


def test_mark_dirty_makes_the_changed_input_the_output() -> None:
    # ctx.mark_dirty did not exist (AttributeError).
    x0 = plugrad.tensor([1.0, 2.0], requires_grad=True)
    w = plugrad.tensor([0.5, 0.5], requires_grad=True)
    x = x0 * 1
    y = _AddInPlace.apply(x, w)
    assert y is x and x.tolist() == [1.5, 2.5] and type(x.grad_fn).__name__ == "_AddInPlaceBackward"
    (y * plugrad.tensor([2.0, 3.0])).sum().backward()
    assert x0.grad.tolist() == [2.0, 3.0] and w.grad.tolist() == [2.0, 3.0]
    a = plugrad.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    c = b * b  # saves b, which the function then changes
    _AddInPlace.apply(b, plugrad.ones(2))
    with pytest.raises(plugrad.errors.InPlaceModificationError):
        c.sum().backward()
    with pytest.raises(plugrad.errors.BackwardError, match="leaf tensor that requires grad"):
        _AddInPlace.apply(plugrad.ones(1, requires_grad=True), plugrad.ones(1))
    with plugrad.no_grad():
        z = plugrad.ones(1)
        assert _AddInPlace.apply(z, plugrad.ones(1)) is z and z.tolist() == [2.0]

    class ForgetsToReturn(plugrad.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(plugrad.errors.FunctionBackwardError, match="not both an argument"):
        ForgetsToReturn.apply(plugrad.ones(1, requires_grad=True) * 1)


def _double_in_place(library, case):
    """Double (in place, marked dirty) part of y = x * 1, where y shares memory with views;
    return y, x.grad and a view made before, as PyTorch or plugrad computes them."""
    x = library.tensor([1.0, 2.0, 3.0, 4.0], dtype=library.float64, requires_grad=True)
    y = x * 1
    first = y[0]  # a view alive through the change
    if case == "a view":
        doubling_in_place(library).apply(y[1:3])
    elif case == "a view's view":
        doubling_in_place(library).apply(y.reshape(2, 2)[1, :1])
    else:  # the tensor itself, while a view of it lives
        doubling_in_place(library).apply(y)
    ((y * y).sum() + first * 10).backward()
    return y.tolist(), x.grad.tolist(), first.tolist()


@pytest.mark.parametrize("case", ["a view", "a view's view", "a tensor with a view"])
def test_mark_dirty_of_memory_shared_with_views_rebases_them_as_pytorch(case) -> None:
    # mark_dirty refused an input that was a view, or had one, after forward had changed it
    # (BackwardError: "shares memory with views"), and a caller going on got gradients of
    # the old history ([2, 4, 6, 8] for a view). As in PyTorch, the base now takes the view
    # at its place, through the Function's backward, and other views are taken again.
    torch = pytest.importorskip("torch")
    assert _double_in_place(plugrad, case) == _double_in_place(torch, case)


def test_mark_dirty_bumps_the_version_once_more_as_pytorch() -> None:
    # The version went up by one (forward's mul_); PyTorch's mark_dirty adds one.
    torch = pytest.importorskip("torch")

    def bumps(library, case):
        x = library.tensor([1.0, 2.0, 3.0], requires_grad=case != "nothing requires grad")
        y = x * 1
        before = y._version
        target = y[1:] if case == "a view" else y
        if case == "no_grad":
            with library.no_grad():
                doubling_in_place(library).apply(target)
        else:
            doubling_in_place(library).apply(target)
        return y._version - before

    for case in ("recorded", "a view", "no_grad", "nothing requires grad"):
        assert bumps(plugrad, case) == bumps(torch, case) == 2, case


def test_a_refused_mark_dirty_leaves_no_history_that_gives_wrong_gradients() -> None:
    # Forward has changed the input by the time mark_dirty says so: where apply() then
    # refuses, the tensors whose history describes the old values refuse backward (PyTorch
    # gives x.grad [4, 8] for (y * y).sum(), of y = x * 1, where y now holds 2 * x).
    class ForgetsToReturn(plugrad.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    first = y[0]
    with pytest.raises(FunctionBackwardError, match="already changed the tensors it marked"):
        ForgetsToReturn.apply(y)
    for changed in (y, first):
        with pytest.raises(InPlaceModificationError, match=r"ForgetsToReturn\.forward changed"):
            (changed * changed).sum().backward()
    assert x.grad is None
    # A view of a leaf that requires grad is refused, as PyTorch does; the leaf's other
    # views still describe their values (the leaf's own), and differentiate.
    leaf = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    head = leaf[:2]
    with pytest.raises(plugrad.errors.BackwardError, match="leaf tensor that requires grad"):
        doubling_in_place(plugrad).apply(leaf[1:])
    (head * head).sum().backward()
    assert leaf.tolist() == [1.0, 4.0, 6.0] and leaf.grad.tolist() == [2.0, 8.0, 0.0]


def test_apply_takes_keywords_and_defaults_as_pytorchs() -> None:
    # setup_context's inputs left a forward's defaults out (inputs[1] raised IndexError),
    # and apply() took no keyword arguments.
    class Scale(plugrad.autograd.Function):
        @staticmethod
        def forward(x, k=2.0):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.k, None

    class Shift(plugrad.autograd.Function):
        @staticmethod
        def forward(ctx, x, by=1.0, *, twice=False):
            return x + by * (2 if twice else 1)

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    x = plugrad.ones(2, requires_grad=True)
    Scale.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    x.grad = None
    Scale.apply(x, k=5.0).sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]
    assert Shift.apply(x, by=3.0).tolist() == [4.0, 4.0]
    with pytest.raises(TypeError, match="unexpected keyword argument 'q'"):
        Shift.apply(x, q=1)
    with pytest.raises(TypeError, match="keyword-only"):
        Shift.apply(x, twice=True)


class _TailView(plugrad.Function):
    @staticmethod
    def forward(ctx, x):
        return x[1:]

    @staticmethod
    def backward(ctx, grad):
        return plugrad.concat([plugrad.zeros(1, dtype=grad.dtype), grad])


class _AsItIs(plugrad.Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


@pytest.mark.parametrize("function", [_TailView, _AsItIs])
def test_an_output_sharing_an_inputs_memory_follows_its_in_place_changes(function) -> None:
    # The output was a tensor of its own over the input's memory: z.mul_(3) changed its
    # values unseen, and a backward that had saved it used the new ones ([0, -9, 12] where
    # the product computed gives [0, -3, 4]). PyTorch refuses, as plugrad does now.
    x = plugrad.tensor([0.5, -1.5, 2.0], requires_grad=True)
    z = x * 1.0
    y = function.apply(z)
    product = y * y
    z.mul_(3.0)
    with pytest.raises(InPlaceModificationError):
        product.sum().backward()
    # Changed in place while gradients are recorded, the output's history cannot be
    # rewritten as a view's (its backward is the Function's): using it is refused.
    x = plugrad.tensor([0.5, -1.5, 2.0], requires_grad=True)
    z = x * 1.0
    y = function.apply(z)
    y.mul_(3.0)
    with pytest.raises(InPlaceModificationError):
        (z * z).sum().backward()
    # Without gradients the output is a view of the input, as in PyTorch.
    base = plugrad.tensor([1.0, 2.0, 3.0])
    out = function.apply(base)
    base.mul_(2.0)
    assert out.tolist() == base.tolist()[-len(out.tolist()) :] and out._version == base._version


def test_a_gradient_returned_by_backward_never_becomes_grad_by_reference() -> None:
    # backward returned x itself for w: w.grad was x's memory, and the next pass added into x
    # (x became [2, 4] and a later gradient through x was twice PyTorch's).
    class Scale(plugrad.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x)
            return (x * w).sum()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return None, x

    for create_graph in (False, True):
        x = plugrad.tensor([1.0, 2.0], requires_grad=True)
        w = plugrad.tensor([3.0, 4.0], requires_grad=True)
        square = (x * x).sum()
        Scale.apply(x, w).backward(create_graph=create_graph)
        Scale.apply(x, w).backward()
        square.backward()
        assert x.tolist() == [1.0, 2.0]
        assert w.grad.tolist() == [2.0, 4.0] and x.grad.tolist() == [2.0, 4.0]


def test_a_hooks_replacement_gradient_never_becomes_grad_by_reference() -> None:
    shared = plugrad.tensor([7.0, 7.0])
    y = plugrad.tensor([1.0, 1.0], requires_grad=True)
    y.register_hook(lambda g: shared)
    (y * 2).sum().backward()
    (y * 2).sum().backward()
    y.grad.zero_()
    assert shared.tolist() == [7.0, 7.0]


def test_a_gradient_of_another_dtype_is_cast_to_the_inputs_with_create_graph_too() -> None:
    # Cast without create_graph only: x.grad of a float32 x came out float64.
    # (doubled: the gradients checked below are backward's)
    Float64Gradient = identity_with_backward(
        "Float64Gradient", lambda ctx, g: (g * 2).to(plugrad.float64)
    )

    for create_graph in (False, True):
        x = plugrad.tensor([1.0, 2.0], requires_grad=True)
        Float64Gradient.apply(x).sum().backward(create_graph=create_graph)
        assert x.grad.dtype == plugrad.float32 and x.grad.tolist() == [2.0, 2.0]
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    (found,) = plugrad.autograd.grad(Float64Gradient.apply(x).sum(), x, create_graph=True)
    assert found.dtype == plugrad.float32


class _SquareBackwardUnrecorded(Square):
    """x * x whose backward computes under no_grad: right once, not differentiable again."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with plugrad.no_grad():
            return 2 * x * g


def test_a_backward_not_recorded_refuses_higher_derivatives_rather_than_give_zeros() -> None:
    # func.jvp, jacfwd and hessian through it were zeros without a word (jvp: [0, 0], not [2, 4])
    square = _SquareBackwardUnrecorded.apply
    x = plugrad.tensor([1.0, 2.0])
    for transform in (
        lambda: plugrad.func.jvp(square, (x,), (plugrad.ones(2),)),
        lambda: plugrad.func.jacfwd(square)(x),
        lambda: plugrad.func.hessian(lambda t: square(t).sum())(x),
        lambda: plugrad.autograd.functional.hessian(lambda t: square(t).sum(), x),
    ):
        with pytest.raises(plugrad.errors.BackwardError, match="_SquareBackwardUnrecorded"):
            transform()
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    (g,) = plugrad.autograd.grad(square(w).sum(), w, create_graph=True)
    assert g.tolist() == [2.0, 4.0]  # first order as before
    with pytest.raises(plugrad.errors.BackwardError, match="g \\* 0"):
        g.sum().backward()
    assert w.grad is None
    square(w).sum().backward()  # an ordinary pass is untouched
    assert w.grad.tolist() == [2.0, 4.0]


class _StepWithZeroGradient(plugrad.Function):
    @staticmethod
    def forward(ctx, x):
        return (x > 0).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        return plugrad.zeros_like(g)


def test_a_constant_gradient_from_nothing_that_requires_grad_is_still_a_constant() -> None:
    x = plugrad.tensor([1.0, -2.0], requires_grad=True)
    (g,) = plugrad.autograd.grad(_StepWithZeroGradient.apply(x).sum(), x, create_graph=True)
    assert g.tolist() == [0.0, 0.0] and not g.requires_grad


class _ScaleByBroadcast(plugrad.Function):
    """x * w for a (3, 2) x and a (2,) w, whose backward returns w's gradient unreduced."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w, g * x  # (3, 2) for w of shape (2,): summed back, as PyTorch does


def test_a_gradient_of_the_broadcast_shape_is_summed_back_to_the_arguments() -> None:
    x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    w = plugrad.tensor([10.0, 20.0], requires_grad=True)
    _ScaleByBroadcast.apply(x, w).sum().backward()
    assert w.grad.tolist() == [9.0, 12.0] and x.grad.shape == (3, 2)
    (gw,) = plugrad.autograd.grad(_ScaleByBroadcast.apply(x, w).sum(), w, create_graph=True)
    assert gw.tolist() == [9.0, 12.0]


# Its gradient is not w's shape, nor one w broadcasts to.
_WrongShape = identity_with_backward("_WrongShape", lambda ctx, g: plugrad.ones(3, 3))


def test_a_gradient_of_a_shape_the_argument_does_not_broadcast_to_is_refused() -> None:
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(FunctionBackwardError, match=r"gradient of shape \(3, 3\) for argument 0"):
        _WrongShape.apply(w).sum().backward()
    assert w.grad is None


def test_a_function_saving_for_forward_runs_as_pytorchs() -> None:
    # ctx.save_for_forward (for PyTorch's jvp staticmethod) raised AttributeError in apply.
    class Sin(plugrad.autograd.Function):
        @staticmethod
        def forward(x):
            return x.sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.save_for_forward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos()

        @staticmethod
        def jvp(ctx, tangent):
            raise AssertionError("plugrad's forward mode differentiates backward instead")

    x = plugrad.tensor([0.5, 1.0], dtype=plugrad.float64, requires_grad=True)
    Sin.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos([0.5, 1.0]))
    ones = plugrad.ones(2, dtype=plugrad.float64)
    _, tangent = plugrad.func.jvp(Sin.apply, (x.detach(),), (ones,))
    np.testing.assert_allclose(tangent.numpy(), np.cos([0.5, 1.0]))
