"""A compiled function whose result carries a graph: ``plugrad.compile(model)``, then a
backward outside it, replayed with the plan's own backward, bit-identical to eager."""

from __future__ import annotations

import copy
import pickle
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import nn
from plugrad.errors import (
    CompileError,
    CompileWarning,
    GraphBreakError,
    GraphFreedError,
    InPlaceModificationError,
    NotSupportedError,
)

pytestmark = pytest.mark.usefixtures("on_numpy")


def _bits(t: plugrad.Tensor | None) -> bytes | None:
    return None if t is None else t.detach().numpy().tobytes()


def _train(make: Callable[[], nn.Module], compiled: bool, optimizer: str, steps: int = 8) -> Any:
    plugrad.manual_seed(0)
    model = make()
    opt = getattr(plugrad.optim, optimizer)(model.parameters(), lr=0.01)
    forward = plugrad.compile(model) if compiled else model
    rng = np.random.default_rng(0)
    x = plugrad.tensor(rng.standard_normal((8, 3)), dtype=plugrad.float32)
    y = plugrad.tensor(rng.standard_normal((8, 1)), dtype=plugrad.float32)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        out = forward(x)
        assert out.grad_fn is not None
        loss = ((out - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    state = {k: _bits(v) for k, v in model.state_dict().items()}
    return losses, state, getattr(forward, "captures", None), out


MODELS = {
    "mlp": lambda: nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 1)),
    "dropout and gelu": lambda: nn.Sequential(
        nn.Linear(3, 16), nn.Dropout(0.3), nn.GELU(), nn.Linear(16, 1)
    ),
    "batch norm": lambda: nn.Sequential(
        nn.Linear(3, 16), nn.BatchNorm1d(16), nn.Sigmoid(), nn.Linear(16, 1)
    ),
    "tanh output": lambda: nn.Sequential(nn.Linear(3, 4), nn.Tanh()),
}


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
@pytest.mark.parametrize("model", list(MODELS))
def test_training_with_a_compiled_model_equals_eager(model: str, optimizer: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to eager, which warns
        eager_losses, eager_state, _, _ = _train(MODELS[model], False, optimizer)
        losses, state, captures, out = _train(MODELS[model], True, optimizer)
    assert losses == eager_losses
    assert state == eager_state
    assert captures == 1
    assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"


def test_the_replay_code_holds_the_forward_then_the_backward_in_a_loop() -> None:
    model = nn.Linear(3, 2)
    forward = plugrad.compile(model)
    x = plugrad.ones((4, 3))
    forward(x)
    code = forward.code(x)
    head, _, loop = code.partition("while True:")
    assert "yield _handed.pop()" in head and "kernel_linear" in head
    assert "yield (" in loop and "matmul" in loop


def _two_layer() -> tuple[nn.Module, plugrad.Tensor]:
    plugrad.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    return model, plugrad.randn(6, 3)


def _grads(model: nn.Module) -> list[bytes | None]:
    return [_bits(p.grad) for p in model.parameters()]


def _replayed(model: nn.Module, x: plugrad.Tensor) -> Any:
    forward = plugrad.compile(model)
    forward(x).sum().backward()  # the capture (eager)
    model.zero_grad()
    return forward


def test_retain_graph_allows_a_second_backward_and_then_frees() -> None:
    model, x = _two_layer()
    forward = _replayed(model, x)
    y = forward(x)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    compiled = _grads(model)
    with pytest.raises(GraphFreedError, match="retain_graph=True"):
        y.sum().backward()
    model.zero_grad()
    e = model(x)
    e.sum().backward(retain_graph=True)
    e.sum().backward()
    assert compiled == _grads(model)


def test_backward_through_some_outputs_only() -> None:
    plugrad.manual_seed(2)
    a, b = nn.Linear(3, 2), nn.Linear(3, 4)

    def two(x: plugrad.Tensor) -> tuple[plugrad.Tensor, plugrad.Tensor]:
        return a(x).tanh(), b(x)

    forward = plugrad.compile(two)
    x = plugrad.randn(5, 3)
    for _ in range(2):
        a.zero_grad()
        b.zero_grad()
        p, q = forward(x)
        (p * 3).sum().backward()
    assert p.grad_fn is q.grad_fn  # one node for the replay's two results
    got = [_bits(t.grad) for t in (*a.parameters(), *b.parameters())]
    assert got[2:] == [None, None]  # b's outputs got no gradient: b's parameters none
    a.zero_grad()
    (a(x).tanh() * 3).sum().backward()
    assert got[:2] == [_bits(t.grad) for t in a.parameters()]


def test_gradients_reach_an_argument_that_requires_grad() -> None:
    model, _ = _two_layer()
    forward = plugrad.compile(model)
    x = plugrad.randn(2, 3, requires_grad=True)
    results = []
    for run in (forward, forward, forward, model):
        x.grad = None
        model.zero_grad()
        run(x).pow(2).sum().backward()
        results.append([_bits(x.grad), *_grads(model)])
    assert results[1] == results[2] == results[3]
    assert all(g is not None for g in results[3])


@pytest.mark.parametrize("how", ["plugrad.compile(block)", "block.compile()"])
def test_a_compiled_block_inside_a_larger_model_equals_eager(how: str) -> None:
    """The block's input carries the graph of the layer before: the capture runs on a
    leaf standing in for it, and the gradient goes on into that graph."""

    def trained(compiled: bool) -> list[Any]:
        plugrad.manual_seed(3)
        first, block = nn.Linear(3, 4), nn.Sequential(nn.Linear(4, 4), nn.Sigmoid())
        last = nn.Linear(4, 1)
        forward = block
        if compiled and how == "block.compile()":
            block.compile()
        elif compiled:
            forward = plugrad.compile(block)
        params = [*first.parameters(), *block.parameters(), *last.parameters()]
        optimizer = plugrad.optim.Adam(params, lr=0.05)
        x = plugrad.randn(2, 3, requires_grad=True)
        seen = []
        for _ in range(4):
            x.grad = None
            optimizer.zero_grad()
            out = last(forward(first(x)))
            out.pow(2).sum().backward()
            optimizer.step()
            seen.append([_bits(x.grad), *(_bits(p.grad) for p in params)])
        return seen

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert trained(True) == trained(False)


def test_a_compiled_module_running_a_backward_through_such_an_argument_runs_eagerly() -> None:
    """Its backward would go on into the graph before the call: a graph break, and the
    call runs eagerly with a warning (its result and gradients those of eager code)."""

    class Inner(nn.Module):
        def forward(self, h: plugrad.Tensor) -> plugrad.Tensor:
            (g,) = plugrad.autograd.grad(h.sum() ** 2, first.weight, create_graph=True)
            return g.sum() * h

    plugrad.manual_seed(1)
    first = nn.Linear(3, 3)
    inner = Inner()
    x = plugrad.randn(2, 3)
    inner(first(x)).sum().backward()
    expected = _bits(first.weight.grad)
    first.zero_grad()
    inner.compile()
    with pytest.warns(CompileWarning, match="goes on into the graph that an argument carries"):
        inner(first(x)).sum().backward()
    assert _bits(first.weight.grad) == expected


def test_a_compiled_function_running_a_backward_through_such_an_argument_runs_eagerly() -> None:
    first = nn.Linear(3, 3)

    def step(h: plugrad.Tensor) -> plugrad.Tensor:
        loss = h.pow(2).sum()
        loss.backward()
        return loss.detach()

    compiled = plugrad.compile(step)
    x = plugrad.ones((2, 3))
    with pytest.warns(CompileWarning, match="goes on into the graph that an argument carries"):
        compiled(first(x))
    got = _bits(first.weight.grad)
    first.zero_grad()
    step(first(x))
    assert got == _bits(first.weight.grad)
    with pytest.raises(GraphBreakError, match="goes on into the graph that an argument"):
        plugrad.compile(step, fullgraph=True)(first(x))


def test_a_compiled_loss_function_of_a_models_output_replays() -> None:
    """``loss_fn = plugrad.compile(loss_fn)`` on ``model(x)``: the plan's backward ends at
    the argument, and each replay's result leads on into the model's graph."""

    def trained(compiled: bool) -> tuple[list[Any], int | None]:
        plugrad.manual_seed(2)
        model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
        optimizer = plugrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def loss_fn(out: plugrad.Tensor, target: plugrad.Tensor) -> plugrad.Tensor:
            return nn.functional.smooth_l1_loss(out.sigmoid(), target) + out.pow(2).mean()

        criterion = plugrad.compile(loss_fn) if compiled else loss_fn
        x, target = plugrad.randn(6, 3), plugrad.rand(6, 2)
        seen = []
        for _ in range(5):
            optimizer.zero_grad()
            loss = criterion(model(x), target)
            assert loss.grad_fn is not None
            loss.backward()
            optimizer.step()
            seen.append([_bits(loss), *(_bits(p) for p in model.parameters())])
        return seen, getattr(criterion, "captures", None)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled, captures = trained(True)
    assert compiled == trained(False)[0]
    assert captures == 1


def test_a_parameter_used_before_the_call_and_inside_gets_both_gradients() -> None:
    """Tied weights: the plan's backward gives the weight the gradient of its use inside
    the call, and the pass goes on through the argument to its use before."""
    plugrad.manual_seed(5)
    embed = nn.Linear(4, 4, bias=False)

    def head(h: plugrad.Tensor) -> plugrad.Tensor:
        return (h @ embed.weight.T).tanh().sum()

    compiled = plugrad.compile(head)
    x = plugrad.randn(5, 4)
    head(embed(x)).backward()
    expected = embed.weight.grad.detach().numpy()
    for _ in range(3):
        embed.zero_grad()
        compiled(embed(x)).backward()
        np.testing.assert_allclose(embed.weight.grad.numpy(), expected, rtol=1e-6, atol=1e-7)
    assert compiled.captures == 1


def test_gradients_with_respect_to_such_an_argument_inside_the_function_replay() -> None:
    """``autograd.grad(y, h)`` for the argument itself stops at it: nothing of the graph
    before runs, and the plan holds the pass."""
    first = nn.Linear(3, 3)

    def slope(h: plugrad.Tensor) -> plugrad.Tensor:
        (g,) = plugrad.autograd.grad(h.sin().sum(), h)
        return g

    compiled = plugrad.compile(slope)
    x = plugrad.randn(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            assert _bits(compiled(first(x))) == _bits(slope(first(x)))
    assert compiled.captures == 1
    assert first.weight.grad is None


def test_arguments_from_one_node_with_several_outputs() -> None:
    plugrad.manual_seed(6)
    first = nn.Linear(3, 4)
    x = plugrad.randn(2, 3)

    def mix(a: plugrad.Tensor, b: plugrad.Tensor) -> plugrad.Tensor:
        return (a * b.exp()).sum()

    compiled = plugrad.compile(mix)
    mix(*first(x).split(2, dim=1)).backward()
    expected = [_bits(p.grad) for p in first.parameters()]
    for _ in range(2):
        first.zero_grad()
        compiled(*first(x).split(2, dim=1)).backward()
        assert [_bits(p.grad) for p in first.parameters()] == expected
    assert compiled.captures == 1


def test_a_free_tensor_with_a_graph_made_before_the_call_is_a_graph_break() -> None:
    first = nn.Linear(3, 3)
    h = first(plugrad.ones((2, 3)))
    compiled = plugrad.compile(lambda y: (h * y).sum())
    with pytest.warns(CompileWarning, match="pass it as an argument"):
        compiled(plugrad.ones((2, 3))).backward()
    assert first.weight.grad is not None


def test_create_graph_through_a_compiled_result_raises_a_typed_error() -> None:
    model, x = _two_layer()
    forward = _replayed(model, x)
    y = forward(x).sum()
    with pytest.raises(CompileError, match="create_graph=True"):
        plugrad.autograd.grad(y, list(model.parameters()), create_graph=True)


def test_changing_a_saved_tensor_in_place_before_backward_raises() -> None:
    model, x = _two_layer()
    forward = _replayed(model, x)
    y = forward(x)
    with plugrad.no_grad():
        model[2].weight.mul_(2.0)  # its backward reads this weight
    with pytest.raises(InPlaceModificationError, match="modified in place"):
        y.sum().backward()
    assert all(p.grad is None for p in model.parameters())


def test_changing_a_tensor_the_backward_does_not_read_is_allowed() -> None:
    model, x = _two_layer()
    forward = _replayed(model, x)
    y = forward(x)
    with plugrad.no_grad():
        model[2].bias.add_(1.0)  # as eagerly: the backward of + does not read it
    y.sum().backward()
    assert model[2].bias.grad is not None


def test_changing_an_output_the_backward_reads_raises_as_eagerly() -> None:
    plugrad.manual_seed(4)
    layer = nn.Linear(3, 2)
    forward = plugrad.compile(lambda x: layer(x).exp())
    x = plugrad.randn(4, 3)
    forward(x)
    y = forward(x)
    y.add_(1.0)  # exp's backward reads its output
    with pytest.raises(InPlaceModificationError):
        y.sum().backward()


class _Round(plugrad.autograd.Function):
    """Forward only: differentiating its result raises (eagerly, at backward())."""

    @staticmethod
    def forward(ctx: Any, x: plugrad.Tensor) -> plugrad.Tensor:
        return x.round()


def _input_changed_after_use(layer: nn.Module) -> Callable[[plugrad.Tensor], Any]:
    def f(x: plugrad.Tensor) -> plugrad.Tensor:
        y = layer(x)
        x.mul_(2.0)  # the layer's backward reads x as it was
        return y.sum()

    return f


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (_input_changed_after_use, InPlaceModificationError),
        (lambda layer: lambda x: _Round.apply(layer(x)), NotSupportedError),
    ],
    ids=["input-changed-in-place-after-use", "custom-function-without-backward"],
)
def test_a_result_whose_backward_would_fail_is_returned_as_eagerly(
    make: Callable[[nn.Module], Callable[[plugrad.Tensor], Any]], error: type[Exception]
) -> None:
    # The capture runs the result's backward with the forward: where that backward failed
    # the call raised (after its effects), at every call, where eagerly only a backward()
    # through the result does.
    plugrad.manual_seed(0)
    layer = nn.Linear(3, 2)
    function = make(layer)
    compiled = plugrad.compile(function)
    eager_x, x = plugrad.ones(4, 3), plugrad.ones(4, 3)
    expected = function(eager_x)
    with pytest.warns(
        CompileWarning, match=f"runs eagerly.*backward of its result.*{error.__name__}"
    ):
        result = compiled(x)
    assert _bits(result) == _bits(expected) and _bits(x) == _bits(eager_x)  # changed once
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)  # said once
        assert _bits(compiled(plugrad.ones(4, 3))) == _bits(expected)
    with pytest.raises(error):
        result.backward(plugrad.ones_like(result))  # as the eager result's does
    with pytest.raises(GraphBreakError, match=error.__name__):
        plugrad.compile(function, fullgraph=True)(plugrad.ones(4, 3))


def test_under_no_grad_the_result_has_no_graph() -> None:
    model, x = _two_layer()
    forward = _replayed(model, x)
    with plugrad.no_grad():
        y = forward(x)
        y = forward(x)
    assert y.grad_fn is None and not y.requires_grad
    np.testing.assert_array_equal(y.numpy(), model(x).detach().numpy())


def test_a_loss_returned_by_the_compiled_function() -> None:
    model, x = _two_layer()
    target = plugrad.zeros((6, 2))
    loss_of = plugrad.compile(lambda x, t: nn.functional.mse_loss(model(x), t))
    got = []
    for _ in range(3):
        model.zero_grad()
        loss_of(x, target).backward()
        got.append(_grads(model))
    model.zero_grad()
    nn.functional.mse_loss(model(x), target).backward()
    assert got[1] == got[2] == _grads(model)
    assert loss_of.captures == 1


def test_parameter_hooks_run_in_the_backward_outside() -> None:
    model, x = _two_layer()
    seen = []
    model[0].weight.register_hook(lambda g: seen.append(g.shape))
    forward = plugrad.compile(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)  # hooks may make calls eager
        for _ in range(3):
            forward(x).sum().backward()
    assert seen == [(5, 3)] * 3


def test_fullgraph_compiles_a_result_with_a_graph() -> None:
    model, x = _two_layer()
    forward = plugrad.compile(model, fullgraph=True)
    for _ in range(2):
        model.zero_grad()
        forward(x).sum().backward()
    compiled = _grads(model)
    model.zero_grad()
    model(x).sum().backward()
    assert compiled == _grads(model)


def test_the_graph_is_freed_with_the_result_without_the_collector() -> None:
    model, x = _two_layer()
    forward = _replayed(model, x)
    y = forward(x)
    node = weakref.ref(y.grad_fn)
    del y  # no cycle through the replay's frame keeps it
    assert node() is None


def test_a_non_finite_gradient_through_some_results_is_refused_not_returned() -> None:
    """A result without a gradient takes zeros in the plan's backward; where those meet an
    infinity (log's backward at 0), the sum would be NaN where eager's is finite."""
    w = plugrad.tensor([0.0, 1.0], requires_grad=True)

    def two(x: plugrad.Tensor) -> tuple[plugrad.Tensor, plugrad.Tensor]:
        return (x * w).sum(), plugrad.log(w)

    forward = plugrad.compile(two)
    x = plugrad.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's, of log(0) and 1 / 0
        forward(x)
        total, _ = forward(x)
        with pytest.raises(CompileError, match="not finite"):
            total.backward()
        assert w.grad is None
        total, _ = two(x)
        total.backward()  # eagerly: the first result's gradient alone, finite
    assert w.grad.tolist() == [1.0, 1.0]


def test_gradients_accumulate_over_several_calls_before_one_backward() -> None:
    model, x = _two_layer()
    forward = _replayed(model, x)
    halves = (x[:3], x[3:])
    got = []
    for run in (forward, model):
        model.zero_grad()
        loss = sum((run(h).pow(2).sum() for h in halves), plugrad.tensor(0.0))
        loss.backward()
        got.append(_grads(model))
    assert got[0] == got[1]


def test_module_compile_compiles_its_calls_in_place() -> None:
    model, x = _two_layer()
    twin = copy.deepcopy(model)
    model.compile()
    got = []
    for _ in range(3):
        model.zero_grad()
        model(x).pow(2).sum().backward()
        got.append(_grads(model))
    twin(x).pow(2).sum().backward()
    assert got[1] == got[2] == _grads(twin)
    assert model._compiled_call.captures == 1
    assert type(model(x).grad_fn).__name__ == "CompiledFunctionBackward"
    assert list(model.state_dict()) == list(twin.state_dict())


def test_a_copy_or_pickle_of_a_compiled_module_is_not_compiled() -> None:
    model, x = _two_layer()
    model.compile()
    model(x)
    for other in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert "_compiled_call" not in other.__dict__
        assert type(other(x).grad_fn).__name__ != "CompiledFunctionBackward"
        np.testing.assert_array_equal(other(x).detach().numpy(), model(x).detach().numpy())


def test_a_compiled_module_inside_a_compiled_step_is_part_of_its_plan() -> None:
    model, x = _two_layer()
    model.compile(fullgraph=True)
    optimizer = plugrad.optim.SGD(model.parameters(), lr=0.1)

    @plugrad.compile(fullgraph=True)
    def step(x: plugrad.Tensor) -> plugrad.Tensor:
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        return loss

    losses = [step(x).item() for _ in range(4)]
    assert losses == sorted(losses, reverse=True) and step.captures <= 2  # (the first makes state)
    assert model._compiled_call.captures == 0  # its calls ran inside the step's plan


def test_a_compiled_module_that_falls_back_runs_eagerly_once_per_call() -> None:
    class ReadsAValue(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = nn.Linear(3, 1)

        def forward(self, x: plugrad.Tensor) -> plugrad.Tensor:
            y = self.layer(x)
            return y * 2 if y.sum().item() > 0 else y

    model = ReadsAValue()
    model.compile()
    x = plugrad.ones((2, 3))
    with pytest.warns(CompileWarning, match=r"\.item\(\)"):
        model(x)
    for _ in range(2):
        y = model(x)  # eagerly, without recursion into the compiled call
    assert y.grad_fn is not None and type(y.grad_fn).__name__ != "CompiledFunctionBackward"


class _Square(plugrad.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: plugrad.Tensor) -> plugrad.Tensor:
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx: Any, g: plugrad.Tensor) -> plugrad.Tensor:
        (x,) = ctx.saved_tensors
        return 2 * x * g


def test_a_custom_function_and_train_eval_switches_in_a_compiled_module() -> None:
    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear, self.norm = nn.Linear(3, 3), nn.BatchNorm1d(3)

        def forward(self, x: plugrad.Tensor) -> plugrad.Tensor:
            return _Square.apply(self.norm(self.linear(x)))

    plugrad.manual_seed(0)
    model = Block()
    twin = copy.deepcopy(model)
    model.compile()
    x = plugrad.randn(4, 3)
    for mode in ("train", "eval", "train"):
        for _ in range(2):
            seen = []
            for module in (model, twin):
                getattr(module, mode)()
                module.zero_grad()
                module(x).sum().backward()
                seen.append([*_grads(module), *(_bits(b) for b in module.buffers())])
            assert seen[0] == seen[1], mode
    assert model._compiled_call.captures == 2  # one plan per mode


def test_another_threads_backward_runs_while_a_module_with_such_an_argument_is_captured() -> None:
    started, finish = threading.Event(), threading.Event()
    other, other_input = nn.Linear(2, 1), plugrad.ones((1, 2))  # (made here: on this
    errors: list[BaseException] = []  # thread's default device)

    class Waits(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(3, 3)

        def forward(self, h: plugrad.Tensor) -> plugrad.Tensor:
            started.set()
            finish.wait(timeout=10)  # the other thread's backward runs during the capture
            return self.linear(h)

    def background() -> None:
        started.wait(timeout=10)
        try:
            other(other_input).sum().backward()
        except BaseException as error:  # (reported by the test below)
            errors.append(error)
        finish.set()

    block = Waits()
    block.compile()
    first = nn.Linear(3, 3)
    thread = threading.Thread(target=background)
    thread.start()
    block(first(plugrad.ones((2, 3)))).sum().backward()
    thread.join(timeout=10)
    assert not errors
    assert other.weight.grad is not None and first.weight.grad is not None


def test_another_threads_backward_through_the_arguments_graph_is_not_the_captures() -> None:
    """A pass of another thread through the graph an argument carries runs as ever while
    the call is captured (fullgraph=True: no GraphBreakError in that thread)."""
    started, finish = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    first = nn.Linear(3, 3)
    h = first(plugrad.ones((2, 3)))

    def waits(h: plugrad.Tensor) -> plugrad.Tensor:
        started.set()
        finish.wait(timeout=10)  # the other thread's backward runs during the capture
        return h.tanh()

    def background() -> None:
        started.wait(timeout=10)
        try:
            h.sum().backward(retain_graph=True)
        except BaseException as error:  # (reported by the test below)
            errors.append(error)
        finish.set()

    thread = threading.Thread(target=background)
    thread.start()
    plugrad.compile(waits, fullgraph=True)(h).sum().backward()
    thread.join(timeout=10)
    assert not errors
    np.testing.assert_allclose(
        first.bias.grad.numpy().sum(),
        2 * 3 + h.detach().tanh().pow(2).neg().add(1).sum().item(),
        rtol=1e-6,
    )


def test_module_compile_refuses_torch_compiles_other_options_saying_why() -> None:
    model, _ = _two_layer()
    with pytest.raises(TypeError, match=r"mode.*no counterpart"):
        model.compile(mode="max-autotune")
    assert "_compiled_call" not in model.__dict__
