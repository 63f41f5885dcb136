"""How many gradients a Function's backward returns: one per argument given to apply, as
PyTorch counts them; and a Function without backward refused by name."""

from __future__ import annotations

import re

import pytest

import plugrad
from plugrad.errors import ArgumentError, FunctionBackwardError, NotSupportedError

torch = pytest.importorskip("torch")

#: apply()'s arguments after x, each as (positional, keyword).
CALLS = {
    "x": ((), {}),
    "x, k": ((5.0,), {}),
    "x, k=": ((), {"k": 5.0}),
    "x, k, j": ((5.0, 1.0), {}),
}


def _scale(lib, setup_context: bool, n_grads: int, last=None):
    """forward(x, k=2.0, j=3.0) -> x * k, in either style, whose backward returns
    ``n_grads`` gradients (``last`` in place of the last None, if given)."""

    def gradients(ctx, grad):
        result = (grad * ctx.k,) + (None,) * (n_grads - 1)
        return result if last is None else (*result[:-1], last(grad))

    if setup_context:

        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(x, k=2.0, j=3.0):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.k = inputs[1]
                ctx.seen = (len(inputs), ctx.needs_input_grad)

            backward = staticmethod(gradients)

    else:

        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k=2.0, j=3.0):
                ctx.k = k
                ctx.seen = (None, ctx.needs_input_grad)
                return x * k

            backward = staticmethod(gradients)

    return Scale


def _run(lib, function, call: str):
    """What ``function.apply`` and a backward through it give: ``(gradient, (number of
    setup_context inputs, needs_input_grad))``, or the error raised."""
    args, kwargs = CALLS[call]
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    try:
        y = function.apply(x, *args, **kwargs)
        seen = y.grad_fn.seen
        y.sum().backward()
    except Exception as exc:  # the error is the result compared
        return exc
    return x.grad.tolist(), seen


@pytest.mark.parametrize("n_grads", [1, 2, 3, 4])
@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("setup_context", [False, True], ids=["ctx", "setup_context"])
def test_backward_returns_a_gradient_per_argument_counted_as_pytorch(
    setup_context: bool, call: str, n_grads: int
) -> None:
    # forward(ctx, x, k=2.0) called as apply(x) wanted two gradients (and needs_input_grad
    # had two entries), where PyTorch wants one per argument given to apply. With
    # setup_context, PyTorch binds forward's defaults first, so every parameter counts.
    expected = _run(torch, _scale(torch, setup_context, n_grads), call)
    found = _run(plugrad, _scale(plugrad, setup_context, n_grads), call)
    if isinstance(expected, Exception):
        assert isinstance(found, FunctionBackwardError), found
        n_args = len(CALLS[call][0]) + len(CALLS[call][1]) + 1
        message = str(found)
        assert message.startswith(f"Scale.backward returned {n_grads} gradient(s)"), message
        assert f"Scale.apply() received {n_args} argument(s)" in message, message
        n_inputs = re.search(r"expected (\d+)", str(expected)).group(1)
        assert (f"make {n_inputs} inputs" in message) == (int(n_inputs) != n_args), message
    else:
        assert found == expected


@pytest.mark.parametrize("setup_context", [False, True], ids=["ctx", "setup_context"])
def test_a_gradient_beyond_the_arguments_must_be_none_as_in_pytorch(setup_context: bool) -> None:
    n_grads = 4 if setup_context else 2
    expected = _run(torch, _scale(torch, setup_context, n_grads, last=lambda g: g), "x")
    assert f"expected {n_grads - 1}, got {n_grads}" in str(expected)
    found = _run(plugrad, _scale(plugrad, setup_context, n_grads, last=lambda g: g), "x")
    assert isinstance(found, FunctionBackwardError)
    assert f"returned {n_grads} gradient(s), but Scale.apply() received 1" in str(found)


def test_a_keyword_after_a_parameter_left_out_is_refused_as_in_pytorch() -> None:
    # apply(x, j=1.0) filled k's default in, and so counted an argument apply never got.
    function = _scale(plugrad, False, 3)
    x = plugrad.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="missing required argument"):
        _scale(torch, False, 3).apply(torch.ones(2, requires_grad=True), j=1.0)
    message = r"Scale.apply\(\) got j by keyword but not forward's earlier parameter\(s\) k;"
    with pytest.raises(ArgumentError, match=message):
        function.apply(x, j=1.0)
    # With setup_context the defaults are bound first: j by keyword is taken.
    assert _run(plugrad, _scale(plugrad, True, 3), "x") == ([2.0, 2.0], (3, (True, False, False)))
    y = _scale(plugrad, True, 3).apply(x, j=1.0)
    assert y.grad_fn.seen == (3, (True, False, False))


class _OnlyJvp(plugrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def jvp(ctx, tangent):
        return tangent * 2


class _NoBackward(plugrad.autograd.Function):
    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass


def test_a_function_without_backward_is_refused_by_name() -> None:
    # A builtin NotImplementedError that named no class: forward mode (func.jvp) is
    # computed from backward in plugrad, so a Function with only jvp cannot be used.
    with pytest.raises(NotSupportedError, match="_OnlyJvp defines no backward") as info:
        plugrad.func.jvp(_OnlyJvp.apply, (plugrad.ones(2),), (plugrad.ones(2),))
    assert "jvp staticmethod is not called" in str(info.value)
    assert isinstance(info.value, NotImplementedError)
    x = plugrad.ones(2, requires_grad=True)
    with pytest.raises(NotSupportedError, match="_OnlyJvp defines no backward"):
        _OnlyJvp.apply(x).sum().backward()
    with pytest.raises(NotSupportedError, match="_NoBackward defines no backward") as info:
        _NoBackward.apply(x).sum().backward()
    assert "jvp staticmethod" not in str(info.value)
    assert x.grad is None
