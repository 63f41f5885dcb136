"""The reverse-mode engine: the examples users learn autograd from, and its guarantees."""

from __future__ import annotations

import gc
import math
import threading
import warnings
import weakref
from typing import Any

import array_api_strict
import numpy as np
import pytest
from functions import identity_with_backward

import plugrad
from plugrad.errors import (
    BackwardError,
    DtypeError,
    GraphFreedError,
    InPlaceModificationError,
    PluginOutputError,
    ShapeError,
)


def scalar(value: float) -> plugrad.Tensor:
    return plugrad.tensor(value, dtype=plugrad.float64, requires_grad=True)


# -- the classic examples --------------------------------------------------------------


def test_linear_chain_gradient_is_eight() -> None:
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = 2 * x + 3
    z = 4 * y - 1
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [8.0, 8.0, 8.0])
    assert x.grad.dtype == plugrad.float32


def test_classic_graph_e_equals_ab_plus_log_d_times_c() -> None:
    a, b, c, d = scalar(2.0), scalar(3.0), scalar(4.0), scalar(5.0)
    u = a * b
    t = plugrad.log(d)
    v = t * c
    e = u + v
    assert repr(u.grad_fn) == "<MulBackward>"
    assert repr(t.grad_fn) == "<LogBackward>"
    assert repr(e.grad_fn) == "<AddBackward>"
    e.backward()
    assert a.grad.item() == pytest.approx(3.0)
    assert b.grad.item() == pytest.approx(2.0)
    assert c.grad.item() == pytest.approx(math.log(5.0))
    assert d.grad.item() == pytest.approx(4.0 / 5.0)
    assert e.item() == pytest.approx(6.0 + 4.0 * math.log(5.0))


def _w_graph() -> tuple[list[plugrad.Tensor], plugrad.Tensor]:
    gen = plugrad.Generator(seed=1)
    w1, w2, w3, w4 = (plugrad.randn(3, generator=gen, requires_grad=True) for _ in range(4))
    a = w1 * w2
    b = a + w3
    c = b * w4
    d = plugrad.exp(c) / (1.0 + plugrad.exp(c))
    return [w1, w2, w3, w4], 10 - d


def test_non_scalar_backward_needs_a_gradient_and_agrees_with_sum() -> None:
    ws, loss = _w_graph()
    with pytest.raises(
        RuntimeError, match="grad can be implicitly created only for scalar outputs"
    ):
        loss.backward()
    assert all(w.grad is None for w in ws), "a failed backward must not touch any .grad"
    loss.backward(plugrad.ones_like(loss))
    by_ones = [w.grad.numpy().copy() for w in ws]
    ws2, loss2 = _w_graph()
    loss2.sum().backward()
    for g1, w in zip(by_ones, ws2):
        np.testing.assert_allclose(g1, w.grad.numpy(), rtol=1e-6)


def test_gradient_descent_update() -> None:
    ws, loss = _w_graph()
    loss.sum().backward()
    w1 = ws[0]
    lr = 0.1
    with plugrad.no_grad():
        updated = w1 - lr * w1.grad
    assert not updated.requires_grad and updated.is_leaf
    np.testing.assert_allclose(
        updated.detach().numpy(), w1.detach().numpy() - 0.1 * w1.grad.numpy(), rtol=1e-6
    )


# -- leaves, grad_fn, requires_grad ------------------------------------------------------


def test_requires_grad_is_contagious_and_leaves_have_no_grad_fn() -> None:
    x = plugrad.tensor([1.0], requires_grad=True)
    c = plugrad.tensor([2.0])
    y = x * c
    assert x.is_leaf and x.grad_fn is None
    assert c.is_leaf and not c.requires_grad
    assert y.requires_grad and not y.is_leaf and repr(y.grad_fn) == "<MulBackward>"
    z = c * c
    assert not z.requires_grad and z.is_leaf and z.grad_fn is None


def test_only_leaves_get_grad_unless_retained() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    z = y * y
    y.retain_grad()
    assert y.retains_grad and not z.retains_grad
    z.sum().backward()
    with pytest.warns(UserWarning, match=r"not a leaf .*retain_grad\(\)"):
        assert z.grad is None  # as PyTorch, a warning says why
    np.testing.assert_allclose(y.grad.numpy(), 2 * y.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), 18 * x.detach().numpy())


def test_reading_grad_warns_only_of_a_non_leaf_that_keeps_none() -> None:
    # A non-leaf's .grad was None without a word, which looks like a missing gradient.
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    kept = x * 2
    kept.retain_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is None and kept.grad is None  # a leaf, a retained one: no warning
        assert plugrad.ones(2).grad is None
        (kept * x).sum().backward()
        assert x.grad is not None and kept.grad is not None
    with pytest.warns(UserWarning, match="not a leaf"):
        assert (x * 3).grad is None


def test_gradients_accumulate_across_backward_calls() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    for expected in (2.0, 4.0, 6.0):
        (x * 2).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [expected, expected])
    x.grad = None
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_second_backward_needs_retain_graph() -> None:
    x = plugrad.tensor(3.0, requires_grad=True)
    y = x * x
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.item() == pytest.approx(12.0)
    with pytest.raises(GraphFreedError, match="retain_graph=True"):
        y.backward()
    assert issubclass(GraphFreedError, RuntimeError)
    assert x.grad.item() == pytest.approx(12.0), "a failed backward must not touch .grad"


def test_a_graph_that_saved_no_values_can_be_backpropagated_again() -> None:
    # As in PyTorch: add, sum, reshape and scaling by a Python number read only shapes and
    # scalars, so nothing is freed; a graph through multiply keeps x and frees it.
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    s = plugrad.reshape(x + 1.0, (2, 1)).sum() * 3.0
    s.backward()
    s.backward()
    assert x.grad.tolist() == [6.0, 6.0]
    y = (x * x).sum() + s
    y.backward()
    with pytest.raises(GraphFreedError, match="retain_graph=True"):
        y.backward()
    assert x.grad.tolist() == [11.0, 13.0], "a failed backward must not touch .grad"


def test_backward_on_tensor_without_grad_is_an_error() -> None:
    with pytest.raises(BackwardError, match="does not require grad"):
        plugrad.tensor(1.0).backward()


def test_explicit_gradient_is_checked() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(ShapeError, match=r"shape \(3,\)"):
        y.backward(plugrad.ones(3))
    with pytest.raises(TypeError, match="must be a Tensor"):
        y.backward([1.0, 1.0])
    y.backward(plugrad.tensor([1.0, 10.0], dtype=plugrad.float64))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 20.0])
    assert x.grad.dtype == plugrad.float32


def test_backward_on_a_leaf() -> None:
    x = plugrad.tensor(2.0, requires_grad=True)
    x.backward()
    assert x.grad.item() == 1.0


def test_explicit_gradient_is_not_aliased_into_grad() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    gradient = plugrad.tensor([1.0, 1.0])
    (x + w).backward(gradient)
    # A lazy array (Dask's) is a task graph, not memory; np.shares_memory reads host memory.
    if not x.device.backend.lazy and x.grad.array.__dlpack_device__()[0] == 1:
        shares = np.shares_memory
        assert not shares(x.grad.array, gradient.array)
        assert not shares(w.grad.array, gradient.array)
        assert not shares(x.grad.array, w.grad.array)
    x.grad.add_(1.0)
    w.grad.mul_(3.0)
    assert gradient.tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [2.0, 2.0] and w.grad.tolist() == [3.0, 3.0]


# -- graph shapes ------------------------------------------------------------------------


def test_diamond_sums_contributions_before_propagating() -> None:
    calls = []
    x = plugrad.tensor(2.0, dtype=plugrad.float64, requires_grad=True)
    h = x * x
    h.register_hook(lambda g: calls.append(g.item()))
    y = plugrad.exp(h) + plugrad.log(h) + h * 3
    y.backward()
    assert calls == [pytest.approx(math.exp(4.0) + 0.25 + 3.0)], "h's gradient arrived in pieces"
    assert x.grad.item() == pytest.approx(2 * 2.0 * (math.exp(4.0) + 0.25 + 3.0))


def test_tensor_used_many_times() -> None:
    x = plugrad.tensor(1.5, dtype=plugrad.float64, requires_grad=True)
    y = x * x * x + x * x + x
    y.backward()
    assert x.grad.item() == pytest.approx(3 * 1.5**2 + 2 * 1.5 + 1)


def test_deep_chain_of_100000_ops_backpropagates() -> None:
    x = plugrad.tensor(1.0, dtype=plugrad.float64, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0000001
    y.backward()
    assert x.grad.item() == pytest.approx(1.0000001**100_000)
    del y  # freeing a 100,000-node chain must not overflow the stack either


def test_broadcast_gradients_are_reduced_to_input_shapes() -> None:
    a = plugrad.ones((3, 1), requires_grad=True)
    b = plugrad.ones((4,), requires_grad=True)
    c = plugrad.ones((), requires_grad=True)
    (a * b + c).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,) and c.grad.shape == ()
    np.testing.assert_array_equal(a.grad.numpy(), np.full((3, 1), 4.0))
    np.testing.assert_array_equal(b.grad.numpy(), np.full((4,), 3.0))
    assert c.grad.item() == 12.0


def test_python_scalars_do_not_promote_float32() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = (2.5 * x + 1) / 3.0 - 0.5 * x**2.0
    assert y.dtype == plugrad.float32
    y.sum().backward()
    assert x.grad.dtype == plugrad.float32


def test_dynamic_graph_with_python_control_flow() -> None:
    x = plugrad.tensor(0.5, dtype=plugrad.float64, requires_grad=True)
    y = x
    steps = 0
    while y.item() < 10:
        y = y * 2 if steps % 2 == 0 else y + 1
        steps += 1
    y.backward()
    # y = 2(2(2(2x+1)+1)+1)... five steps: 2,+1,2,+1,2 -> dy/dx = 8
    assert steps == 5 and x.grad.item() == pytest.approx(8.0)


def test_unreached_branch_does_not_block_other_paths() -> None:
    Blocked = identity_with_backward("Blocked", lambda ctx, g: None)

    x = plugrad.tensor(2.0, requires_grad=True)
    h = x * 3
    y = Blocked.apply(h) * 5 + h * 7
    y.backward()
    assert x.grad.item() == pytest.approx(21.0)


def test_several_roots_where_one_depends_on_the_other() -> None:
    from plugrad.engine import backward

    x = plugrad.tensor(2.0, dtype=plugrad.float64, requires_grad=True)
    y = x * x
    z = y * 3
    backward([y, z], [plugrad.tensor(1.0, dtype=plugrad.float64), None])
    assert x.grad.item() == pytest.approx(2 * 2.0 + 3 * 2 * 2.0)


# -- higher order -------------------------------------------------------------------------


def test_create_graph_gives_differentiable_gradients() -> None:
    x = plugrad.tensor(2.0, dtype=plugrad.float64, requires_grad=True)
    y = x**3
    y.backward(create_graph=True)
    first = x.grad
    assert first.requires_grad and first.item() == pytest.approx(12.0)
    x.grad = None
    first.backward()
    assert x.grad.item() == pytest.approx(12.0)  # d/dx 3x^2 = 6x


def test_create_graph_through_exp_uses_the_saved_output() -> None:
    x = plugrad.tensor(0.3, dtype=plugrad.float64, requires_grad=True)
    y = plugrad.exp(x * x)
    y.backward(create_graph=True)
    g = x.grad
    x.grad = None
    g.backward()
    expected = (2 + 4 * 0.09) * math.exp(0.09)
    assert x.grad.item() == pytest.approx(expected)


@pytest.mark.parametrize(
    "piecewise",
    [
        plugrad.nn.functional.relu,
        lambda x: plugrad.nn.functional.max_pool1d(x.reshape(1, 1, 4), 2),
        lambda x: plugrad.copysign(plugrad.ones(4), x) * x,
    ],
)
def test_a_gradient_piecewise_in_the_input_is_differentiable_with_zero_derivative(piecewise):
    # As PyTorch's: it depends on x through where x lies, so it requires grad and its
    # derivative is zero. It required no grad, and differentiating it raised.
    x = plugrad.tensor([-1.5, 0.5, 2.0, -3.0], requires_grad=True)
    (first,) = plugrad.autograd.grad(piecewise(x).sum(), x, create_graph=True)
    assert first.requires_grad and first.grad_fn is not None
    (second,) = plugrad.autograd.grad(first.sum(), x)
    assert second.tolist() == [0.0] * 4


def test_zero_grad_without_none_after_create_graph_zeroes_as_in_pytorch() -> None:
    # The bias's .grad was a view (of a reshape): detach_() then zero_() was refused as a
    # write into a view of a tensor that requires grad.
    layer = plugrad.nn.Linear(2, 1)
    (layer(plugrad.ones(1, 2)) ** 2).sum().backward(create_graph=True)
    assert layer.bias.grad.requires_grad
    layer.zero_grad(set_to_none=False)
    assert layer.bias.grad.tolist() == [0.0] and layer.weight.grad.tolist() == [[0.0, 0.0]]
    assert not layer.bias.grad.requires_grad


def test_a_zero_second_derivative_reaches_the_parameters_as_in_pytorch() -> None:
    # A gradient penalty through a max-pool: the bias gets a zero .grad (it stayed None, and
    # SGD's weight decay skipped it; PyTorch's bias becomes 0.5 - 0.1 * 0.5 * 0.5).
    functional = plugrad.nn.functional
    weight = plugrad.nn.Parameter(plugrad.tensor([[[1.0, 1.0]]]))
    bias = plugrad.nn.Parameter(plugrad.tensor([0.5]))
    optimizer = plugrad.optim.SGD([weight, bias], lr=0.1, weight_decay=0.5)
    x = plugrad.tensor([[[1.0, -2.0, 3.0]]], requires_grad=True)
    out = functional.max_pool1d(functional.conv1d(x, weight, bias), 2)
    (penalty,) = plugrad.autograd.grad(out.sum(), x, create_graph=True)
    (penalty**2).sum().backward()
    optimizer.step()
    assert bias.grad.tolist() == [0.0] and bias.tolist() == pytest.approx([0.475])
    assert weight.grad.tolist() == [[[2.0, 2.0]]] and x.grad.tolist() == [[[0.0] * 3]]


def test_a_piecewise_gradient_that_also_reads_a_parameter_links_both_as_in_pytorch() -> None:
    # A gradient penalty through linear -> relu -> linear: relu's gradient is computed from
    # the second weight (so it required grad already) and was not linked to relu's input:
    # the first bias and x got no .grad where PyTorch gives zeros.
    functional = plugrad.nn.functional
    w1 = plugrad.tensor([[1.0, -1.0], [0.5, 2.0]], requires_grad=True)
    b1 = plugrad.tensor([0.1, -0.2], requires_grad=True)
    w2 = plugrad.tensor([[1.0, 1.0]], requires_grad=True)
    x = plugrad.tensor([[1.0, 2.0]], requires_grad=True)
    out = functional.linear(functional.relu(functional.linear(x, w1, b1)), w2)
    (g,) = plugrad.autograd.grad(out.sum(), x, create_graph=True)
    (g * g).sum().backward()
    assert b1.grad.tolist() == [0.0, 0.0] and x.grad.tolist() == [[0.0, 0.0]]
    # PyTorch's values
    assert w1.grad.tolist() == [[0.0, 0.0], [1.0, 4.0]] and w2.grad.tolist() == [[0.0, 8.5]]
    # A rule that does not read an input links nothing to it: d(x * y)/dx = y is unused in x.
    y = plugrad.tensor([3.0, 4.0], requires_grad=True)
    (gx,) = plugrad.autograd.grad((x[0] * y).sum(), x, create_graph=True)
    assert plugrad.autograd.grad(gx.sum(), x, allow_unused=True) == (None,)


# -- hooks and atomicity ------------------------------------------------------------------


def test_hooks_can_replace_gradients_and_be_removed() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    handle = x.register_hook(lambda g: g * 10)
    (x * 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [10.0, 10.0])
    handle.remove()
    x.grad = None
    (x * 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


def _times_ten_in_place(*grads: Any) -> None:
    for g in grads[0] if isinstance(grads[0], tuple) else grads[:1]:
        g.mul_(10)


@pytest.mark.parametrize(
    "where", ["leaf", "non-leaf", "node hook", "node prehook", "module hook", "module prehook"]
)
def test_a_hook_changing_a_summed_gradient_in_place_changes_the_result(where: str) -> None:
    # The gradient of a sum is a read-only broadcast, which mul_ replaces by an array of its
    # own: the engine kept the old array, and the change was lost without a word.
    x = plugrad.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    layer = plugrad.nn.Flatten()  # hands the gradient on as it is, a broadcast here
    y = x.reshape(1, 3)
    if where == "leaf":
        x.register_hook(_times_ten_in_place)
    elif where == "non-leaf":
        y.register_hook(_times_ten_in_place)
    elif where == "node hook":
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: _times_ten_in_place(grad_inputs))
    elif where == "node prehook":
        y.grad_fn.register_prehook(lambda grads: _times_ten_in_place(grads))
    elif where == "module hook":
        layer.register_full_backward_hook(lambda m, gi, go: _times_ten_in_place(gi))
    else:
        layer.register_full_backward_pre_hook(lambda m, go: _times_ten_in_place(go))
    layer(y).sum().backward()
    assert x.grad.tolist() == [[10.0, 10.0, 10.0]]


def test_a_hook_handle_used_as_a_context_manager_removes_the_hook_after_the_block() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    with x.register_hook(lambda g: g * 10) as handle:
        (x * 1).sum().backward()
    assert x.grad.tolist() == [10.0, 10.0] and handle is not None
    x.grad = None
    (x * 1).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    layer, seen = plugrad.nn.Linear(2, 2), []
    with layer.register_forward_hook(lambda *arguments: seen.append(1)):
        layer(x)
    layer(x)
    assert seen == [1]


def test_grad_fn_pre_and_post_hooks_see_and_replace_gradients() -> None:
    # Node.register_hook / register_prehook did not exist (AttributeError).
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    w = plugrad.tensor([3.0, 4.0], requires_grad=True)
    y = x * w
    seen = []

    def pre(grads):
        seen.append(("pre", [g.tolist() for g in grads]))
        return (grads[0] * 10,)

    def post(grad_inputs, grad_outputs):
        seen.append(("post", [g.tolist() for g in grad_inputs], [g.tolist() for g in grad_outputs]))
        return (grad_inputs[0], None)

    handles = [y.grad_fn.register_prehook(pre), y.grad_fn.register_hook(post)]
    y.sum().backward()
    assert seen == [("pre", [[1.0, 1.0]]), ("post", [[30.0, 40.0], [10.0, 20.0]], [[10.0, 10.0]])]
    assert x.grad.tolist() == [30.0, 40.0] and w.grad is None
    for handle in handles:
        handle.remove()
    x.grad = None
    z = x * w
    z.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0][:1], None))
    with pytest.raises(ShapeError, match="shape"):
        z.sum().backward()
    z = x * w
    z.grad_fn.register_prehook(lambda grads: grads[0])
    with pytest.raises(TypeError, match="tuple of 1 gradients"):
        z.sum().backward()
    with pytest.raises(TypeError, match="callable"):
        z.grad_fn.register_hook(3)


@pytest.mark.parametrize("how", ["backward", "backward(inputs=)", "autograd.grad"])
def test_grad_fn_pre_hooks_act_on_the_nodes_input_not_on_the_tensors_gradient(how) -> None:
    # As PyTorch: retain_grad() and the gradients asked for are the tensor's (after its tensor
    # hooks), and a pre-hook runs only when its node runs. They saw the pre-hook's result, and
    # a pre-hook ran on a node that autograd.grad(y.sum(), y) never runs.
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    calls = []
    y.register_hook(lambda g: g * 2)
    y.grad_fn.register_prehook(lambda grads: calls.append(1) or (grads[0] * 10,))
    if how == "backward":
        y.retain_grad()
        y.sum().backward()
        assert y.grad.tolist() == [2.0, 2.0] and x.grad.tolist() == [60.0, 60.0]
        assert calls == [1]
        return
    if how == "autograd.grad":
        assert [g.tolist() for g in plugrad.autograd.grad(y.sum(), y)] == [[2.0, 2.0]]
    else:
        y.retain_grad()
        y.sum().backward(inputs=[y])
        assert y.grad.tolist() == [2.0, 2.0] and x.grad is None
    assert calls == []


@pytest.mark.parametrize("create_graph", [False, True])
def test_leaf_hooks_run_in_the_passs_grad_mode(create_graph) -> None:
    # They ran with grad mode on: an optimizer step in a post-accumulate hook (PyTorch's
    # pattern for updating each parameter as its gradient is ready) raised.
    w = plugrad.nn.Parameter(plugrad.tensor([1.0, 2.0]))
    modes = []
    w.register_hook(lambda g: modes.append(plugrad.is_grad_enabled()))

    def step(parameter):
        modes.append(plugrad.is_grad_enabled())
        if not create_graph:
            parameter.add_(parameter.grad, alpha=-0.1)
            parameter.grad = None

    w.register_post_accumulate_grad_hook(step)
    (w * w).sum().backward(create_graph=create_graph)
    assert modes == [create_graph, create_graph] and plugrad.is_grad_enabled()
    if not create_graph:
        assert w.tolist() == pytest.approx([0.8, 1.6]) and w.grad is None
    modes.clear()
    plugrad.autograd.grad((w * w).sum(), w, create_graph=create_graph)
    assert modes == [create_graph] and plugrad.is_grad_enabled()


@pytest.mark.parametrize("leaf", [False, True])
def test_hooks_removed_or_added_during_a_pass_take_effect_in_the_next_as_pytorch(leaf) -> None:
    # A hook removed by an earlier one in the same pass was skipped, and one added ran.
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = x if leaf else x * 2
    calls, handles = [], {}

    def first(grad):
        calls.append("first")
        handles["second"].remove()
        y.register_hook(lambda g: calls.append("added"))

    handles["first"] = y.register_hook(first)
    handles["second"] = y.register_hook(lambda g: calls.append("second"))
    (y * 1.0).sum().backward()
    assert calls == ["first", "second"]
    handles["first"].remove()
    calls.clear()
    (y * 1.0).sum().backward()
    assert calls == ["added"]


def test_retain_grad_sees_hook_result() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 3)
    y.sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0])


def test_failing_backward_changes_no_grad() -> None:
    a = plugrad.tensor([1.0], requires_grad=True)
    b = plugrad.tensor([2.0], requires_grad=True)
    (a * b).sum().backward()
    before = (a.grad.numpy().copy(), b.grad.numpy().copy())

    def explode(g):
        raise ValueError("hook failed")

    h = a * b
    h.register_hook(explode)
    loss = (a * 5).sum() + h.sum()
    with pytest.raises(ValueError, match="hook failed"):
        loss.backward()
    np.testing.assert_array_equal(a.grad.numpy(), before[0])
    np.testing.assert_array_equal(b.grad.numpy(), before[1])


def test_hook_returning_wrong_shape_is_an_error() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: plugrad.ones(3))
    with pytest.raises(ShapeError, match="shape"):
        (x * 2).sum().backward()
    assert x.grad is None


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("on_leaf", [True, False])
def test_hook_changing_the_dtype_is_an_error(on_leaf: bool, create_graph: bool) -> None:
    """As in PyTorch: else a float64 leaf would silently get a float32 .grad."""
    x = plugrad.tensor([1.0, 2.0], dtype=plugrad.float64, requires_grad=True)
    y = x if on_leaf else x * 1.0
    y.register_hook(lambda g: g.to(plugrad.float32))
    with pytest.raises(DtypeError, match="returned a gradient of dtype float32 instead of float64"):
        (y * 2).sum().backward(create_graph=create_graph)
    assert x.grad is None


# -- memory ---------------------------------------------------------------------------------


def test_saved_values_are_freed_after_backward() -> None:
    x = plugrad.tensor(np.ones(1000), requires_grad=True)
    h = plugrad.exp(x)  # saves its output
    y = h * h  # saves h
    saved = weakref.ref(h)
    del h
    assert saved() is not None, "the graph must keep h alive until backward"
    y.sum().backward()
    assert saved() is None, "backward must release what the graph saved"


def test_the_graph_keeps_only_what_the_rules_that_will_run_read() -> None:
    x = plugrad.tensor(np.ones(1000), requires_grad=True)
    h = plugrad.exp(x)
    y = h * 3.0  # only the rule for h runs, and it reads the 3.0, not h
    z = h * x  # both rules run: each reads the other input
    kept = weakref.ref(h)
    del h
    assert kept() is not None, "z's node keeps h for x's gradient"
    del z
    assert kept() is None, "y's node does not keep h"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.e)


def test_nodes_share_the_spec_of_inputs_they_do_not_keep() -> None:
    from plugrad.graph import ArraySpec, array_spec

    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    a, b = x + 1.0, x + 2.0  # add keeps no input values, only their shapes and dtypes
    assert a.grad_fn._saved[0] is b.grad_fn._saved[0]
    assert array_spec(a.array) is not array_spec(plugrad.ones((2, 1)).array)

    class Unhashable:
        shape, dtype = [2], "float32"  # a list is unhashable: a spec of its own

    spec = array_spec(Unhashable())
    assert isinstance(spec, ArraySpec) and spec.shape == [2]


def test_changing_a_value_no_rule_reads_is_not_an_error() -> None:
    x = scalar(2.0)
    h = x * 1
    y = h * 3.0  # does not keep h, as in PyTorch
    z = h * h  # keeps h
    h += 1
    y.backward()
    assert x.grad.tolist() == 3.0
    with pytest.raises(InPlaceModificationError, match="MulBackward"):
        z.backward()


def test_graph_has_no_reference_cycles() -> None:
    gc.collect()
    gc.disable()
    try:
        x = plugrad.tensor([1.0, 2.0], requires_grad=True)
        y = plugrad.exp(x * 2)
        y.retain_grad()
        out = (y / 3).sum()
        out.backward(retain_graph=True)
        node = weakref.ref(y.grad_fn)
        result = weakref.ref(out)
        del y, out
        assert node() is None and result() is None, "freeing the graph needed the collector"
    finally:
        gc.enable()


def _tracked_objects_per_step(step, start, steps=500):
    """Objects the garbage collector gains per call of ``step`` in a chain, and the chain's end."""
    step(step(start))  # first-call caches (JAX compiles each op once) are not per op
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        end = start
        for _ in range(steps):
            end = step(end)
        return (len(gc.get_objects()) - before) / steps, end
    finally:
        gc.enable()


def test_a_recorded_op_keeps_three_objects_for_the_collector() -> None:
    # The node and two tuples (edges, saved inputs): an edge is the node itself, so deep
    # graphs give the garbage collector as little to traverse as possible. Arrays that
    # the collector tracks (Dask's task graphs; NumPy's it does not) are counted apart.
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    per_op, y = _tracked_objects_per_step(lambda t: t * 1.0001, x)
    per_array, _ = _tracked_objects_per_step(lambda a: a * 1.0001, x.detach().array)
    assert per_op - per_array <= 3.05, f"{per_op - per_array:.2f} objects tracked per recorded op"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1.0001**500, rtol=1e-4)


def test_edges_show_as_node_and_output_index_pairs() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2.0
    y = h + x
    # As PyTorch's: a leaf as its AccumulateGrad (whose variable it is), (None, 0) for none.
    assert y.grad_fn.next_functions[0] == (h.grad_fn, 0)
    accumulate, index = y.grad_fn.next_functions[1]
    assert type(accumulate).__name__ == "AccumulateGrad" and accumulate.variable is x
    assert index == 0 and accumulate.next_functions == ()
    assert h.grad_fn.next_functions[1] == (None, 0)
    with pytest.raises(NotImplementedError, match="register_post_accumulate_grad_hook"):
        accumulate.register_hook(lambda grad_inputs, grad_outputs: None)
    first, second = plugrad.unstack(plugrad.stack([h, x]))
    z = first * second
    assert z.grad_fn.next_functions == ((first.grad_fn, 0), (first.grad_fn, 1))
    z.sum().backward()
    assert x.grad.tolist() == [2.0 * 1.0 + 2.0, 2.0 * 2.0 + 4.0]


def test_an_accumulate_grad_pre_hook_sees_and_replaces_the_leaf_gradient() -> None:
    # As PyTorch's: it raised NotImplementedError.
    torch = pytest.importorskip("torch")

    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * 3).sum()
        accumulate = y.grad_fn.next_functions[0][0].next_functions[0][0]
        seen = []
        handle = accumulate.register_prehook(
            lambda grads: (seen.append(grads[0].tolist()), (grads[0] * 10,))[1]
        )
        y.backward(retain_graph=True)
        first = x.grad.tolist()
        handle.remove()
        x.grad = None
        y.backward()
        return seen, first, x.grad.tolist()

    assert run(plugrad) == run(torch) == ([[3.0, 3.0]], [30.0, 30.0], [3.0, 3.0])
    x = plugrad.tensor([1.0], requires_grad=True)
    accumulate = (x * 2).grad_fn.next_functions[0][0]
    with pytest.raises(TypeError, match="callable"):
        accumulate.register_prehook(3)
    accumulate.register_prehook(lambda grads: grads[0])  # not a tuple
    with pytest.raises(TypeError, match="tuple of one gradient"):
        (x * 2).sum().backward()
    assert x.grad is None


# -- threads -------------------------------------------------------------------------------


def test_independent_backward_passes_in_threads() -> None:
    results: dict[int, float] = {}
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            x = plugrad.tensor(float(k), dtype=plugrad.float64, requires_grad=True)
            y = x
            for _ in range(200):
                y = y * 1.001 + 0.0
            y.backward()
            results[k] = x.grad.item()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(v == pytest.approx(1.001**200) for v in results.values()) and len(results) == 8


def test_concurrent_backward_into_a_shared_leaf_adds_up_exactly() -> None:
    import threading

    from threads import run_in_threads

    # Large enough that the addition into .grad releases the interpreter lock mid-update.
    w = plugrad.zeros(200_000, dtype=plugrad.float64, requires_grad=True)
    passes, threads = 40, 4
    start = threading.Barrier(threads)

    def work() -> None:
        start.wait()
        for _ in range(passes):
            (w * 1.0).sum().backward()

    run_in_threads(work, [()] * threads)
    assert bool(plugrad.all(w.grad == float(passes * threads)))


# -- every rule's result is checked, checking mode or not ----------------------------------


def _unary_op(name, rule, **options):
    from plugrad.opdef import op

    return op(name, lambda xp, x, /: x * 1, **options).vjp(rule)


BAD_RULES = [
    ("scalar", lambda xp, g, ans, x: xp.sum(g), r"shape \(\), but the input has shape \(3,\)"),
    ("short", lambda xp, g, ans, x: g[:1], r"shape \(1,\), but the input has shape \(3,\)"),
    ("broadcast", lambda xp, g, ans, x: g[None], r"shape \(1, 3\), but the input has shape"),
    ("tuple", lambda xp, g, ans, x: (g, g), "returned a tuple, not an array of backend"),
    ("none", lambda xp, g, ans, x: None, "returned None; a rule must return a gradient"),
    ("complex", lambda xp, g, ans, x: g * 1j, "a real input needs a real gradient"),
    # Cast, these were truncated to 0 and 1 without a word (0.5 * g as int32 is 0).
    ("integer", lambda xp, g, ans, x: xp.astype(g * 0.5, xp.int32), "a gradient is floating"),
    ("bool", lambda xp, g, ans, x: x > 1, r"dtype (plugrad\.)?bool, but the input has dtype"),
]  # fmt: skip


def _two_output_op(name, rule):
    """An op of two outputs (a GeneralOpNode) whose rule gives ``rule``'s result for ``g[0]``."""
    from plugrad.opdef import op

    forward = op(name, lambda xp, x, /: (x * 1, x * 2), multiple_outputs=True)
    return forward.vjp(lambda xp, g, ans, x: rule(xp, g[0], ans, x))


@pytest.mark.parametrize("create_graph", [False, True], ids=["raw", "create_graph"])
@pytest.mark.parametrize(("case", "rule", "message"), BAD_RULES, ids=[r[0] for r in BAD_RULES])
@pytest.mark.parametrize("make_op", [_unary_op, _two_output_op], ids=["one output", "two outputs"])
def test_a_bad_gradient_is_refused_naming_op_and_plugin(
    plugin, registered, on_numpy, make_op, case, rule, message, create_graph
) -> None:
    if create_graph and case == "tuple":
        message = "returned a tuple under create_graph=True"
    registered(plugin(ops=[make_op("bad_rule_op", rule)]), "culprit")
    x = plugrad.tensor([1.0, 2.0, 3.0], dtype=plugrad.float64, requires_grad=True)
    outputs = plugrad.ops.bad_rule_op(x)
    loss = sum(y.sum() for y in (outputs if isinstance(outputs, tuple) else (outputs,)))
    # The engine's own check: checking mode, when on, words the same finding its own way.
    with plugrad.plugins.checking(False), pytest.raises(PluginOutputError, match=message) as info:
        loss.backward(create_graph=create_graph)
    assert str(info.value).startswith(
        "plugin 'culprit', op 'bad_rule_op': the backward rule for input 'x' returned"
    )
    assert x.grad is None


def test_a_several_output_op_gradient_with_an_equal_dtype_object_is_accepted(
    plugin, registered, on_numpy
) -> None:
    # As for one-output ops: the fast check compares dtypes by identity, the full check by value.
    def rule(xp, g, ans, x):
        return g.view(g.dtype.newbyteorder("="))

    registered(plugin(ops=[_two_output_op("pair_dtype_copy_op", rule)]), "copies")
    x = plugrad.tensor([1.0, 2.0], dtype=plugrad.float64, requires_grad=True)
    first, second = plugrad.ops.pair_dtype_copy_op(x)
    (first * 3.0 + second).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0] and x.grad.dtype == plugrad.float64


BAD_KERNELS = [
    ("tuple", lambda xp, x: (x, x), "returned a tuple, not an array of backend 'numpy'",
     "declares multiple_outputs=True"),
    ("list", lambda xp, x: [1.0], "returned a list, not an array of backend 'numpy'", None),
    ("float", lambda xp, x: 1.0, "returned a float, not an array of backend 'numpy'", None),
    ("strict array", lambda xp, x: array_api_strict.asarray([1.0]),
     "returned a array_api_strict._array_object.Array, not an array of backend 'numpy'", None),
]  # fmt: skip


@pytest.mark.parametrize("requires_grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize(
    ("case", "forward", "message", "hint"), BAD_KERNELS, ids=[k[0] for k in BAD_KERNELS]
)
def test_a_kernel_returning_no_array_is_refused_naming_op_and_plugin(
    plugin, registered, on_numpy, still_works, case, forward, message, hint, requires_grad
) -> None:
    from plugrad.opdef import op

    bad = op("bad_kernel_op", lambda xp, x, /: forward(xp, x)).vjp(lambda xp, g, ans, x: g)
    registered(plugin(ops=[bad]), "culprit")
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=requires_grad)
    with plugrad.plugins.checking(False), pytest.raises(PluginOutputError, match=message) as info:
        plugrad.ops.bad_kernel_op(x)
    text = str(info.value)
    assert text.startswith("plugin 'culprit', op 'bad_kernel_op': its generic kernel ")
    assert hint is None or hint in text
    # every call, not only the first
    with plugrad.plugins.checking(False), pytest.raises(PluginOutputError, match=message):
        plugrad.ops.bad_kernel_op(x)
    still_works()


def test_an_override_kernel_returning_no_array_names_its_own_plugin(
    plugin, registered, on_numpy
) -> None:
    from plugrad.kerneldef import kernel
    from plugrad.opdef import op

    good = op("overridden_op", lambda xp, x, y, /: x + y)
    registered(plugin(ops=[good.vjp(lambda xp, g, ans, x, y: g, None)]), "owner")
    registered(plugin(kernels=[kernel("overridden_op", backend="numpy",
                                      fn=lambda xp, x, y, /: (x, y))]), "override")  # fmt: skip
    x = plugrad.tensor([1.0, 2.0])
    # The always-on check (checking mode, which words it otherwise, has its own tests).
    with plugrad.plugins.checking(False), pytest.raises(PluginOutputError, match="a tuple") as info:
        plugrad.ops.overridden_op(x, x)
    assert str(info.value).startswith("plugin 'owner', op 'overridden_op': its override kernel")
    assert "(from plugin 'override')" in str(info.value)


def test_an_op_with_several_outputs_must_return_arrays(plugin, registered, on_numpy) -> None:
    from plugrad.opdef import op

    halves = op("halves_op", lambda xp, x, /: (x[:1], "not an array"), multiple_outputs=True,
                differentiable=False)  # fmt: skip
    single = op("single_op", lambda xp, x, /: x[:1], multiple_outputs=True, differentiable=False)
    registered(plugin(ops=[halves, single]), "culprit")
    x = plugrad.tensor([1.0, 2.0])
    with plugrad.plugins.checking(False):  # the always-on check, not checking mode's
        with pytest.raises(PluginOutputError, match="returned a str as one output, not an array"):
            plugrad.ops.halves_op(x)
        with pytest.raises(PluginOutputError, match="must return a tuple of arrays, one per"):
            plugrad.ops.single_op(x)


def _doubles_g_in_place(xp, g, ans, x):
    g *= 2  # the bug: g may be read-only, or shared with another gradient
    return g


@pytest.mark.parametrize("checks", [False, True], ids=["plain", "checking mode"])
def test_a_rule_writing_into_a_read_only_gradient_is_named(
    plugin, registered, backend, checks
) -> None:
    # The gradient of a sum is a read-only broadcast: NumPy's "output array is read-only"
    # (PyTorch's "more than one element of the written-to tensor ...") named no op.
    from plugrad.opdef import op

    registered(plugin(ops=[op("writes_g_op", lambda xp, x, /: 2 * x, vjp=_doubles_g_in_place)]),
               "culprit")  # fmt: skip
    x = plugrad.tensor([0.5, 1.5], requires_grad=True)
    loss = plugrad.ops.writes_g_op(x).sum()
    with plugrad.plugins.checking(checks):
        if backend.backend.name in ("jax", "dask"):  # immutable arrays: g *= 2 makes a new one
            loss.backward()
            assert x.grad.tolist() == [2.0, 2.0]
            return
        with pytest.raises(PluginOutputError) as info:
            loss.backward()
    text = str(info.value)
    assert text.startswith("plugin 'culprit', op 'writes_g_op': the backward rule for input 'x'")
    assert "a backward rule must not write into its gradient argument" in text
    assert x.grad is None


INTEGRAL_KERNELS = [
    ("one input", lambda xp, x, /: xp.astype(x * 3, xp.int64), (lambda xp, g, ans, x: 3 * g,)),
    ("bool", lambda xp, x, /: x > 1, (lambda xp, g, ans, x: g,)),
    ("two inputs", lambda xp, x, y, /: xp.astype(x * y, xp.int32),
     (lambda xp, g, ans, x, y: g * y, lambda xp, g, ans, x, y: g * x)),
    ("three inputs", lambda xp, x, y, z, /: xp.astype(x + y + z, xp.int64),
     (lambda xp, g, ans, x, y, z: g,) * 3),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "forward", "rules"), INTEGRAL_KERNELS, ids=[k[0] for k in INTEGRAL_KERNELS]
)
def test_an_integer_result_of_a_differentiable_op_is_refused_where_inputs_require_grad(
    plugin, registered, still_works, backend, case, forward, rules
) -> None:
    # It made an integer tensor that required grad (grad_fn and all), which backward then
    # blamed on the rule: the integer gradient it was handed came from the kernel.
    from plugrad.opdef import op

    registered(plugin(ops=[op("int_result_op", forward, vjp=rules)]), "culprit")
    n = len(rules)
    with plugrad.plugins.checking(False):
        x = plugrad.tensor([0.5, 1.5], requires_grad=True)
        with pytest.raises(PluginOutputError, match="for inputs that require grad") as info:
            plugrad.ops.int_result_op(x, *[plugrad.tensor([1.0, 2.0])] * (n - 1))
        text = str(info.value)
        assert text.startswith("plugin 'culprit', op 'int_result_op': its generic kernel ")
        assert "its result must be floating-point" in text and "differentiable=False" in text
        if n == 2:  # with a Python number as the second input too
            with pytest.raises(PluginOutputError, match="for inputs that require grad"):
                plugrad.ops.int_result_op(x, 2.0)
        assert x.grad is None and x.tolist() == [0.5, 1.5]
        # Without gradients nothing is recorded: the result is returned as before.
        with plugrad.no_grad():
            quiet = plugrad.ops.int_result_op(x, *[plugrad.tensor([1.0, 2.0])] * (n - 1))
        assert not quiet.requires_grad and quiet.grad_fn is None
        assert not plugrad.isdtype(quiet.dtype, "real floating")
    still_works()


def test_a_gradient_of_another_precision_is_cast_to_the_input_dtype(
    plugin, registered, on_numpy
) -> None:
    rule = lambda xp, g, ans, x: xp.astype(g, xp.float32)
    registered(plugin(ops=[_unary_op("lower_rule_op", rule)]), "lower")
    x = plugrad.tensor([1.0, 2.0], dtype=plugrad.float64, requires_grad=True)
    # Checking mode is stricter and reports the cast as the rule's mistake.
    with plugrad.plugins.checking(False):
        plugrad.ops.lower_rule_op(x).sum().backward()
    assert x.grad.dtype == plugrad.float64 and x.grad.tolist() == [1.0, 1.0]


def test_a_gradient_with_an_equal_dtype_object_is_accepted(plugin, registered, on_numpy) -> None:
    # The engine's fast check compares dtypes by identity; an equal dtype that is another
    # object must still pass (through the full check), unchanged.
    def rule(xp, g, ans, x):
        return g.view(g.dtype.newbyteorder("="))

    registered(plugin(ops=[_unary_op("dtype_copy_op", rule)]), "copies")
    x = plugrad.tensor([1.0, 2.0], dtype=plugrad.float64, requires_grad=True)
    y = plugrad.ops.dtype_copy_op(x) * 3.0
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0] and x.grad.dtype == plugrad.float64


@pytest.mark.parametrize(
    ("x_shape", "s_shape"),
    [((2, 3), (3,)), ((2, 3), (1, 3)), ((2, 3), (2, 1)), ((4, 1, 3), (2, 1)), ((2, 3), ())],
)
def test_broadcast_gradients_sum_back_to_every_input_shape(x_shape, s_shape) -> None:
    x = plugrad.ones(x_shape, dtype=plugrad.float64, requires_grad=True)
    s = plugrad.ones(s_shape, dtype=plugrad.float64, requires_grad=True)
    (x * s * 2.0).sum().backward()
    expected = np.broadcast_to(np.ones(s_shape), np.broadcast_shapes(x_shape, s_shape))
    expected = 2.0 * expected.sum() / np.prod(s_shape, dtype=int)
    assert s.grad.shape == s_shape and x.grad.shape == x_shape
    np.testing.assert_allclose(s.grad.numpy(), np.full(s_shape, expected))


def test_a_broadcasting_op_gets_its_gradient_summed_back(plugin, registered, on_numpy) -> None:
    from plugrad.opdef import op

    scale = op("scale_rule_op", lambda xp, x, s, /: x * s, broadcasting=True)
    # The second rule returns the broadcast shape (2, 3); the engine sums it to (1,).
    scale = scale.vjp(lambda xp, g, ans, x, s: g * s, lambda xp, g, ans, x, s: g * x)
    registered(plugin(ops=[scale]), "broadcasting")
    x = plugrad.ones((2, 3), dtype=plugrad.float64, requires_grad=True)
    s = plugrad.tensor([2.0], dtype=plugrad.float64, requires_grad=True)
    plugrad.ops.scale_rule_op(x, s).sum().backward()
    assert s.grad.tolist() == [6.0] and x.grad.shape == (2, 3)


def test_a_broadcasting_op_whose_gradient_cannot_sum_back_is_refused(
    plugin, registered, on_numpy
) -> None:
    from plugrad.opdef import op

    scale = op("scale_bad_op", lambda xp, x, s, /: x * s, broadcasting=True)
    scale = scale.vjp(lambda xp, g, ans, x, s: g[:, :2] * s, lambda xp, g, ans, x, s: g * x)
    registered(plugin(ops=[scale]), "broadcasting")
    x = plugrad.ones((2, 3), dtype=plugrad.float64, requires_grad=True)
    s = plugrad.tensor([2.0], dtype=plugrad.float64, requires_grad=True)
    with (
        plugrad.plugins.checking(False),
        pytest.raises(PluginOutputError, match=r"shape \(2, 2\), but the input has shape"),
    ):
        plugrad.ops.scale_bad_op(x, s).sum().backward()
    assert x.grad is None and s.grad is None


def test_a_complex_gradient_for_a_real_output_is_refused() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(DtypeError, match="a real output needs a real gradient"):
        y.backward(plugrad.tensor([1 + 1j, 2 + 0j]))
    with pytest.raises(DtypeError, match="a real output needs a real gradient"):
        plugrad.autograd.grad(y, x, plugrad.tensor([1j, 0j]))
    assert x.grad is None
    y.backward(plugrad.tensor([1.0, 2.0]))  # the graph is intact
    assert x.grad.tolist() == [2.0, 4.0]


def test_gradients_accumulate_into_the_grad_tensor_itself_as_in_pytorch() -> None:
    # Code that holds x.grad (g = x.grad) sees later passes' sums, as in PyTorch.
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    held = x.grad
    (x * 3).sum().backward()
    assert x.grad is held and held.tolist() == [5.0, 7.0]
    # A first gradient that is a broadcast (read-only) is stored as a copy that can take sums.
    y = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y.sum().backward()
    held = y.grad
    y.sum().backward()
    assert y.grad is held and held.tolist() == [2.0, 2.0]
    # Two leaves given one gradient array never share a .grad's memory.
    a, b = (plugrad.tensor([1.0, 2.0], requires_grad=True) for _ in range(2))
    (a + b).sum().backward()
    (a * 2).sum().backward()
    assert a.grad.tolist() == [3.0, 3.0] and b.grad.tolist() == [1.0, 1.0]


def test_one_tensor_as_the_grad_of_two_takes_both_sums() -> None:
    # a.grad = b.grad = g: each pass adds into g, so g holds both gradients, as in PyTorch
    # (each sum was computed from g's old values, and the second write undid the first).
    a = plugrad.tensor([1.0, 2.0], requires_grad=True)
    b = plugrad.tensor([3.0, 4.0], requires_grad=True)
    g = plugrad.zeros(2)
    a.grad = b.grad = g
    (a * 2 + b * 3).sum().backward()
    assert a.grad is g and b.grad is g and g.tolist() == [5.0, 5.0]
    # create_graph=True sums out of place: each tensor gets its own new .grad.
    a.grad = b.grad = g
    (a * 2 + b * 3).sum().backward(create_graph=True)
    assert a.grad.tolist() == [7.0, 7.0] and b.grad.tolist() == [8.0, 8.0]
    assert g.tolist() == [5.0, 5.0]


def test_a_first_grad_is_laid_out_as_its_tensor() -> None:
    # The gradient of w in x @ w.t() comes out transposed; PyTorch lays .grad out as w,
    # so w.grad.view(-1) (flattening gradients) works where w.view(-1) does.
    torch = pytest.importorskip("torch")
    ours = plugrad.zeros((2, 3), requires_grad=True)
    theirs = torch.zeros(2, 3, requires_grad=True)
    (plugrad.ones((4, 3)) @ ours.t()).sum().backward()
    (torch.ones(4, 3) @ theirs.t()).sum().backward()
    assert ours.grad.is_contiguous()
    assert ours.grad.stride() == theirs.grad.stride()
    np.testing.assert_array_equal(ours.grad.view(-1).numpy(), theirs.grad.view(-1).numpy())
    # Used twice, the summed gradient is laid out alike.
    shared = plugrad.zeros((3, 2), requires_grad=True)
    (shared.t() * plugrad.ones((2, 3)) + shared.t()).sum().backward()
    assert shared.grad.is_contiguous()
    assert shared.grad.view(-1).tolist() == [2.0] * 6


def test_queue_callback_runs_once_the_pass_has_updated_every_grad() -> None:
    from plugrad import engine

    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    v = plugrad.tensor([3.0], requires_grad=True)
    seen = []

    def at_end() -> None:
        seen.append((w.grad.tolist(), v.grad.tolist()))
        engine.queue_callback(lambda: seen.append("queued by a callback"))

    def hook(tensor):
        if tensor is w:  # queued by w's hook; runs after v's .grad is set too
            engine.queue_callback(at_end)

    w.register_post_accumulate_grad_hook(hook)
    v.register_post_accumulate_grad_hook(hook)
    (w.sum() * 2 + v.sum()).backward()
    assert seen == [([2.0, 2.0], [1.0]), "queued by a callback"]
    (w.sum() * 2 + v.sum()).backward()  # each pass has its own: nothing left from the last
    assert len(seen) == 4
    with pytest.raises(BackwardError, match="during backward"):
        engine.queue_callback(at_end)

    def failing() -> None:
        raise RuntimeError("on purpose")

    v.register_post_accumulate_grad_hook(lambda t: engine.queue_callback(failing))
    with pytest.raises(RuntimeError, match="on purpose"):
        v.sum().backward()
    with pytest.raises(BackwardError, match="during backward"):  # the pass's queue is gone
        engine.queue_callback(at_end)


def _gradients_held_from_a_first_pass(lib) -> list:
    """What user code kept of a first pass's gradients, read after later passes."""
    kept = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(seen.append)  # returns None: the gradient goes on as it is
    (x * 3).sum().backward()
    (x * 5).sum().backward()
    kept.append(seen[0].tolist())
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(seen.append)
    (x * 3).sum().backward()
    with lib.no_grad():
        x.grad.zero_()  # zero_grad(set_to_none=False)
    kept.append(seen[0].tolist())
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    shown = []
    y = x * 1
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: shown.append(grad_inputs[0]))
    y.backward(lib.tensor([1.0, 1.0]))
    (x * 3).sum().backward()
    kept.append(shown[0].tolist())
    x, w = (lib.tensor([1.0, 2.0], requires_grad=True) for _ in range(2))
    seen = []
    w.register_hook(seen.append)
    (x + w).sum().backward()  # one gradient array for both leaves
    (x * 2).sum().backward()
    kept.append(seen[0].tolist())
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    h.retain_grad()
    (h * 1).sum().backward(retain_graph=True)
    held = h.grad
    (h * 1).sum().backward()
    kept.append((held.tolist(), h.grad.tolist()))
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).sum().backward()
    leaf_grad = x.grad
    (x * 2).sum().backward()
    kept.append((leaf_grad.tolist(), leaf_grad is x.grad))  # a leaf's .grad is summed into
    return kept


def test_a_gradient_a_hook_was_shown_or_a_retained_grad_keeps_its_values_as_pytorch() -> None:
    # A hook returning None let the tensor it was shown become x.grad, which later passes
    # (and zero_grad(set_to_none=False)) wrote into; a non-leaf's retained .grad was summed
    # into in place, where PyTorch makes a new tensor.
    torch = pytest.importorskip("torch")
    assert _gradients_held_from_a_first_pass(plugrad) == _gradients_held_from_a_first_pass(torch)


def _unpacks(xp, g, ans, x):
    first, _second = ans
    return g[0] * first + g[1]


def _reads_in_a_closure(xp, g, ans, x):
    return (lambda: g[0] * ans[0] + g[1])()


#: (rule, which outputs it is found to read: a change to those makes backward raise)
OUTPUT_READING_RULES = {
    "ans[0]": (lambda xp, g, ans, x: g[0] * ans[0] + g[1], {0}),
    "ans[-1]": (lambda xp, g, ans, x: g[0] + g[1] * ans[-1] / 2, {1}),
    "none": (lambda xp, g, ans, x: g[0] + 2 * g[1], set()),
    "unpacked": (_unpacks, {0, 1}),
    "closure": (_reads_in_a_closure, {0, 1}),
}


@pytest.mark.parametrize("changed", [0, 1])
@pytest.mark.parametrize("case", sorted(OUTPUT_READING_RULES))
def test_only_the_outputs_a_rule_reads_are_checked_for_in_place_changes(
    plugin, registered, on_numpy, case, changed
) -> None:
    from plugrad.opdef import op

    rule, read = OUTPUT_READING_RULES[case]
    pair = op("output_reading_op", lambda xp, x, /: (x * 1, x * 2), multiple_outputs=True)
    registered(plugin(ops=[pair.vjp(rule)]), "reads")
    x = plugrad.tensor([1.0, 2.0], dtype=plugrad.float64, requires_grad=True)
    outputs = plugrad.ops.output_reading_op(x)
    with plugrad.no_grad():
        outputs[changed].mul_(3)
    loss = outputs[0].sum() + outputs[1].sum()
    if changed in read:
        with pytest.raises(InPlaceModificationError, match=f"output {changed}"):
            loss.backward()
        assert x.grad is None
    else:
        loss.backward()
        # The rules' own formulas, with the outputs as computed (x and 2x) where read.
        expected = {"ans[0]": [2.0, 3.0], "ans[-1]": [2.0, 3.0], "none": [3.0, 3.0]}[case]
        assert x.grad.tolist() == expected
