"""plugrad.autograd.graph: saved-tensor hooks (pack, unpack, save_on_cpu, disable),
increment_version and Node, against eager runs without hooks and against PyTorch."""

from __future__ import annotations

import threading
import warnings
import weakref

import numpy as np
import pytest

import plugrad
from plugrad.errors import BackwardError, GraphBreakError, InPlaceModificationError
from plugrad.testing import backends_under_test

G = plugrad.autograd.graph
torch = pytest.importorskip("torch")


def _detached(t):
    return t.detach()


def _same(t):
    return t


def test_the_tensors_an_op_saves_are_packed_and_unpacked_as_pytorchs():
    for lib in (plugrad, torch):
        events = []
        a = lib.ones(5, requires_grad=True)
        b = lib.ones(5, requires_grad=True) * 2
        with lib.autograd.graph.saved_tensors_hooks(
            lambda t, events=events: (events.append(("pack", t.grad_fn is None)), t.detach())[1],
            lambda t, events=events: (events.append(("unpack",)), t)[1],
        ):
            y = a * b
        assert sorted(events) == [("pack", False), ("pack", True)]  # a (a leaf) and b
        y.sum().backward()
        assert events[2:] == [("unpack",), ("unpack",)]
        assert a.grad.tolist() == [2.0] * 5
    # an output kept for the backward is handed over with its grad_fn, as PyTorch's
    handed = []
    x = plugrad.ones(2, requires_grad=True)
    with G.saved_tensors_hooks(lambda t: (handed.append(t.grad_fn), t.detach())[1], _same):
        y = x.exp()
    assert handed == [y.grad_fn]


def _program(x, w):
    h = (x @ w).tanh()
    s = plugrad.nn.functional.softmax(h * h.exp(), dim=1)
    values, _ = plugrad.sort(s, dim=1)  # several outputs
    joined = plugrad.concat([h, s])  # a sequence input
    norm = plugrad.linalg.vector_norm(h)
    return (values * s.sin()).sum() + norm + joined.pow(3).sum() + (w * w).sum()


def _gradients(hooks):
    x = plugrad.asarray(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    w = plugrad.asarray(np.arange(9.0).reshape(3, 3) / 10, requires_grad=True)
    if hooks is None:
        loss = _program(x, w)
    else:
        with G.saved_tensors_hooks(*hooks):
            loss = _program(x, w)
    (gx,) = plugrad.autograd.grad(loss, [x], create_graph=True)
    (gw,) = plugrad.autograd.grad(gx.sum(), [w])
    return loss.item(), gx.detach().cpu().numpy(), gw.cpu().numpy()


@pytest.mark.parametrize("backend", backends_under_test())
def test_first_and_second_derivatives_are_those_without_hooks(backend):
    packed = []
    copy = lambda t: (packed.append(1), t.detach().clone())[1]
    with plugrad.use_backend(backend):
        expected = _gradients(None)
        got = _gradients((copy, _same))
    assert packed  # (the hooks ran)
    assert got[0] == expected[0]
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[2], expected[2])


def test_a_pack_hook_that_copies_frees_the_saved_array():
    x = plugrad.ones(1000, requires_grad=True)
    with G.saved_tensors_hooks(lambda t: t.detach().numpy().copy(), plugrad.asarray):
        y = x * 2
        held = weakref.ref(y.array)
        loss = (y.sin() * y).sum()
    del y
    assert held() is None  # the graph keeps the hook's copy only
    loss.backward()
    expected = 4 * np.cos(2.0) + 2 * np.sin(2.0)
    np.testing.assert_allclose(x.grad.numpy(), np.full(1000, expected), rtol=1e-6)


def test_the_values_unpack_gives_are_those_the_backward_uses_as_in_pytorch():
    results = []
    for lib in (plugrad, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach() * 0 + 10, _same):
            (x * x).sum().backward()
        results.append(x.grad.tolist())
    assert results[0] == results[1] == [20.0, 20.0, 20.0]


def test_an_in_place_change_after_a_save_is_still_refused():
    x = plugrad.ones(3, requires_grad=True)
    constant = plugrad.ones(3) * 3  # (no version counter yet when saved)
    with G.saved_tensors_hooks(_detached, _same):
        y = x * 2
        z = (y * y).sum() + (x * constant).sum()
    with plugrad.no_grad():
        constant.add_(1)
    with pytest.raises(InPlaceModificationError):
        z.backward(retain_graph=True)
    with G.saved_tensors_hooks(_detached, _same):
        z = (y * y).sum()
    with plugrad.no_grad():
        y.add_(1)
    with pytest.raises(InPlaceModificationError, match="MulBackward"):
        z.backward()
    assert x.grad is None


@pytest.mark.parametrize(
    ("unpack", "match"),
    [
        (lambda t: t[:2], r"shape \(2,\), float32 .* for a saved tensor of shape \(3,\)"),
        (lambda t: t.double(), "float64"),
        (lambda t: t.numpy(), "returned a ndarray, not a Tensor"),
    ],
)
def test_an_unpack_hook_that_gives_back_another_tensor_is_refused(unpack, match):
    x = plugrad.ones(3, requires_grad=True)
    with G.saved_tensors_hooks(_detached, unpack):
        loss = (x * x).sum()
    with pytest.raises(BackwardError, match=match):
        loss.backward()
    assert x.grad is None


def test_a_failing_pack_hook_leaves_the_tensor_as_it_was():
    def refuse(t):
        raise ValueError("no room")

    y = plugrad.ones(3, requires_grad=True) * 1
    grad_fn = y.grad_fn
    with G.saved_tensors_hooks(refuse, _same), pytest.raises(ValueError, match="no room"):
        y.mul_(y)
    assert y.tolist() == [1.0] * 3 and y._version == 0 and y.grad_fn is grad_fn


def test_a_custom_functions_saved_tensors_are_packed():
    class Square(plugrad.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            out = a * a
            ctx.save_for_backward(a, out)
            return out

        @staticmethod
        def backward(ctx, g):
            a, out = ctx.saved_tensors
            return g * 2 * a + 0 * out

    events = []
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    with G.saved_tensors_hooks(
        lambda t: (events.append(t.grad_fn), t.detach())[1],
        lambda t: (events.append("unpack"), t)[1],
    ):
        y = Square.apply(x)
    assert events == [None, y.grad_fn]  # the input (a leaf), then the output
    y.sum().backward()
    assert events[2:] == ["unpack", "unpack"] and x.grad.tolist() == [2.0, 4.0]
    # a double backward through the unpacked input reaches the leaf
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    with G.saved_tensors_hooks(_detached, _same):
        y = Square.apply(x)
    (g,) = plugrad.autograd.grad(y.sum(), [x], create_graph=True)
    g.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_each_backward_unpacks_and_the_graph_is_freed_after():
    unpacked = []
    x = plugrad.ones(3, requires_grad=True)
    with G.saved_tensors_hooks(_detached, lambda t: (unpacked.append(1), t)[1]):
        loss = (x.exp() * x).sum()
    loss.backward(retain_graph=True)
    count = len(unpacked)
    loss.backward()
    assert count > 0 and len(unpacked) == 2 * count
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * np.e * np.ones(3), rtol=1e-6)
    with pytest.raises(plugrad.errors.GraphFreedError):
        loss.backward()


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_save_on_cpu_gives_the_gradients_without_it(backend):
    pytest.importorskip(backend)
    with plugrad.use_backend(backend):
        grads = []
        for offload in (False, True):
            w = plugrad.asarray(np.linspace(0.5, 2.0, 4), requires_grad=True)
            if offload:
                with G.save_on_cpu(pin_memory=True):
                    loss = (w.sin() * w).sum()
            else:
                loss = (w.sin() * w).sum()
            loss.backward()
            grads.append(w.grad.cpu().numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


def test_disable_saved_tensors_hooks_refuses_new_hooks_with_its_message():
    with G.disable_saved_tensors_hooks("checkpointing here: no hooks"):
        with pytest.raises(BackwardError, match="checkpointing here: no hooks"):
            with G.save_on_cpu():
                pass
        with G.disable_saved_tensors_hooks("inner"):
            with pytest.raises(BackwardError, match="inner"):
                G.saved_tensors_hooks(_detached, _same).__enter__()
        with pytest.raises(BackwardError, match="checkpointing here"):
            G.saved_tensors_hooks(_detached, _same).__enter__()
    with G.save_on_cpu():  # allowed again
        pass
    with pytest.raises(TypeError, match="callable"):
        G.saved_tensors_hooks(_detached, None)


def test_the_innermost_hooks_apply_and_only_in_their_thread():
    calls = []
    outer = G.saved_tensors_hooks(lambda t: (calls.append("outer"), t.detach())[1], _same)
    inner = G.saved_tensors_hooks(lambda t: (calls.append("inner"), t.detach())[1], _same)
    x = plugrad.ones(2, requires_grad=True)

    def elsewhere():
        (x * x).sum()

    with outer:
        with inner:
            (x * x).sum()
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
    assert calls == ["inner", "inner"]  # none from the other thread
    assert plugrad.dispatch._record is plugrad.dispatch.PLAIN_RECORDERS.record


def test_hooks_and_anomaly_mode_record_together():
    calls = []
    with plugrad.autograd.detect_anomaly():
        with G.saved_tensors_hooks(lambda t: (calls.append(1), t.detach())[1], _same):
            x = plugrad.ones(2, requires_grad=True)
            y = x * x
        assert calls and y.grad_fn._trace  # packed, and where it was made noted
        y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert plugrad.dispatch._record is plugrad.dispatch.PLAIN_RECORDERS.record


def test_a_compiled_function_runs_eagerly_while_hooks_are_on():
    calls = []

    @plugrad.compile
    def step(a):
        return (a * a.exp()).sum()

    a = plugrad.ones(3, requires_grad=True)
    step(a)
    step(a)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with G.saved_tensors_hooks(lambda t: (calls.append(1), t.detach())[1], _same):
            loss = step(a)
    assert calls  # the hooks ran: the call was eager
    assert any("saved-tensor hooks are on" in str(w.message) for w in caught)
    loss.backward()
    captures = step.captures
    calls.clear()
    step(a)
    step(a)
    assert step.captures == captures and not calls  # the plan replays again after them
    strict = plugrad.compile(lambda a: (a * a).sum(), fullgraph=True)
    with G.save_on_cpu(), pytest.raises(GraphBreakError, match="saved-tensor hooks"):
        strict(a)


def test_increment_version_refuses_a_backward_that_saved_the_tensor():
    x = plugrad.ones(2, requires_grad=True)
    y = x * 1
    z = (y * y).sum()
    y.array[0] = 5.0  # behind plugrad's back
    G.increment_version([y])
    with pytest.raises(InPlaceModificationError):
        z.backward()
    with pytest.raises(TypeError, match="item 0 is a list"):
        G.increment_version([[y]])


def test_every_grad_fn_is_a_graph_node():
    x = plugrad.ones(2, requires_grad=True)
    assert isinstance((x * 2).grad_fn, G.Node)
    assert G.Node is plugrad.autograd.Node
    import plugrad.autograd.graph as module

    assert module is G


def test_a_pack_hook_may_compute_on_the_tensor_and_saves_nothing_through_itself():
    # Ops in the hook recorded nodes that called the hook again, until RecursionError.
    def quantize(t):
        scale = t.abs().amax() / 127
        return (t / scale).round().to(lib.int8), scale

    def dequantize(packed):
        values, scale = packed
        return values.to(scale.dtype) * scale

    results = []
    for lib in (plugrad, torch):
        x = lib.linspace(-1, 1, 5, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(quantize, dequantize):
            y = (x * x).sin().sum()
        y.backward()
        results.append(x.grad.tolist())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)


def test_a_pack_hook_that_changes_its_tensor_in_place_is_refused():
    def scale_in_place(t):
        with plugrad.no_grad():
            t.mul_(10)
        return t.detach()

    x = plugrad.ones(3, requires_grad=True)
    with (
        G.saved_tensors_hooks(scale_in_place, _same),
        pytest.raises(InPlaceModificationError, match="pack_hook changed the tensor"),
    ):
        x.exp()


def test_an_in_place_change_of_shape_after_a_save_is_told_as_an_in_place_change():
    x = plugrad.ones(3, requires_grad=True)
    h = x * 1
    with G.saved_tensors_hooks(_same, _same):
        loss = (h * h).sum()
    with plugrad.no_grad():
        h.unsqueeze_(0)
    with pytest.raises(InPlaceModificationError):
        loss.backward()


def test_identity_hooks_give_the_same_graph_through_saved_leaves():
    # Each unpack wrapped the leaf in a node of its own: a double backward summed in
    # another order (std's second derivative differed by 1e-18).
    def second(hooks):
        x = plugrad.tensor([0.3, -1.2, 2.5, 0.7], dtype=plugrad.float64, requires_grad=True)
        a = plugrad.tensor([[2.0, 0.5], [0.25, 3.0]], dtype=plugrad.float64, requires_grad=True)
        with G.saved_tensors_hooks(*hooks) if hooks else _no_hooks():
            loss = x.std() + plugrad.linalg.solve(a, x[:2]).sum()
        (g,) = plugrad.autograd.grad(loss, [x], create_graph=True)
        return [t.numpy() for t in plugrad.autograd.grad((g * g).sum(), [x, a])]

    for ours, expected in zip(second((_detached, _same)), second(None)):
        np.testing.assert_array_equal(ours, expected)


class _no_hooks:
    def __enter__(self):
        return None

    def __exit__(self, *exc_info):
        return None


def test_an_output_of_several_is_handed_over_with_its_grad_fn():
    handed = []
    x = plugrad.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
    with G.saved_tensors_hooks(lambda t: (handed.append(t), t.detach())[1], _same):
        pair = plugrad.linalg.eigh(x)
    outputs = [t for t in handed if t.grad_fn is pair.eigenvalues.grad_fn]
    assert outputs and all(t.requires_grad for t in outputs)
    with G.saved_tensors_hooks(lambda t: (handed.append(t), t.detach())[1], _same):
        values, _ = x.flatten().sort()
    kept = [t for t in handed if t.grad_fn is values.grad_fn]
    assert all(t.dtype == values.dtype for t in kept)  # (the int indices take no gradient)


def test_hooks_on_before_disabling_are_refused_when_a_tensor_is_saved():
    x = plugrad.ones(2, requires_grad=True)
    with G.save_on_cpu():
        with G.disable_saved_tensors_hooks("not here"):
            assert (x + 1).requires_grad  # nothing saved: allowed
            with pytest.raises(BackwardError, match="not here"):
                x * x
        (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_the_graph_module_refuses_arguments_with_plugrad_errors():
    with pytest.raises(plugrad.errors.ArgumentError, match="got int"):
        G.increment_version(3)
    with pytest.raises(plugrad.errors.ArgumentError, match="callable"):
        G.saved_tensors_hooks(1, _same)
    with pytest.raises(plugrad.errors.ArgumentError, match="str"):
        G.disable_saved_tensors_hooks(3)


def test_concurrent_backward_passes_through_one_packed_graph():
    unpacked = []
    x = plugrad.ones(64, requires_grad=True)
    with G.saved_tensors_hooks(_detached, lambda t: (unpacked.append(1), t)[1]):
        h = x
        for _ in range(20):
            h = (h * 1.01).sin() * h
        loss = h.sum()
    (expected,) = plugrad.autograd.grad(loss, [x], retain_graph=True)
    per_pass = len(unpacked)
    results, errors = [], []

    def run():
        try:
            for _ in range(5):
                results.append(plugrad.autograd.grad(loss, [x], retain_graph=True)[0])
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and len(results) == 20
    for result in results:
        np.testing.assert_array_equal(result.numpy(), expected.numpy())
    unpacked.clear()
    loss.backward()  # every node still packed: unpacks as many as the first pass
    assert len(unpacked) == per_pass


def test_hooks_entered_inside_a_compiled_function_make_it_eager():
    calls = []

    def step(a):
        with G.saved_tensors_hooks(lambda t: (calls.append(1), t.detach())[1], _same):
            return (a * a.exp()).sum()

    compiled = plugrad.compile(step)
    a = plugrad.ones(3, requires_grad=True)
    with pytest.warns(plugrad.errors.CompileWarning, match="enters saved-tensor hooks"):
        compiled(a)
    for _ in range(2):
        calls.clear()
        compiled(a).backward()
        assert calls  # the hooks ran at every call
    with pytest.raises(GraphBreakError, match="saved-tensor hooks"):
        plugrad.compile(step, fullgraph=True)(a)
