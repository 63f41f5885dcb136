"""plugrad.utils.checkpoint against torch.utils.checkpoint: values and gradients of
checkpointed code equal those of the code itself, for every way of differentiating it."""

from __future__ import annotations

import gc
import importlib
import warnings
import weakref

import numpy as np
import pytest

import plugrad
from plugrad.errors import InPlaceModificationError
from plugrad.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

torch = pytest.importorskip("torch")

WEIGHTS = [
    np.linspace(-1.0, 1.0, 20, dtype=np.float32).reshape(5, 4),
    np.linspace(-0.5, 0.5, 5, dtype=np.float32),
    np.linspace(1.0, -1.0, 15, dtype=np.float32).reshape(3, 5),
    np.zeros(3, dtype=np.float32),
]
INPUT = (np.arange(8.0, dtype=np.float32).reshape(2, 4) - 3) / 4


def _network(lib):
    net = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 3))
    with lib.no_grad():
        for parameter, values in zip(net.parameters(), WEIGHTS, strict=True):
            parameter.copy_(lib.tensor(values))
    return net


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_values_and_gradients_are_those_of_pytorch(use_reentrant: bool) -> None:
    found = []
    for lib in (plugrad, torch):
        module = importlib.import_module(f"{lib.__name__}.utils.checkpoint")
        net, scale = _network(lib), lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x = lib.tensor(INPUT, requires_grad=True)

        def block(t, net=net, scale=scale):
            return (net(t) * scale).exp(), 3  # a tensor the block reads, a non-tensor output

        out, three = module.checkpoint(block, x, use_reentrant=use_reentrant)
        assert three == 3 and out.requires_grad
        (out.sum() * 2).backward()
        found.append([out.detach().numpy(), x.grad.numpy(), scale.grad.numpy()])
        found[-1] += [p.grad.numpy() for p in net.parameters()]
    for ours, theirs in zip(*found, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)  # float32 rounding


def _derivatives(through_checkpoint: bool):
    net = _network(plugrad)
    x = plugrad.tensor(INPUT, requires_grad=True)

    def block(t, power=3):
        return net(t) ** power

    y = checkpoint(block, x, use_reentrant=False, power=3) if through_checkpoint else block(x)
    first = plugrad.autograd.grad(y.sum(), [x, net[0].weight], create_graph=True)
    second = plugrad.autograd.grad(first[0].sum(), x)
    return [t.detach().numpy() for t in (*first, *second)]


def test_autograd_grad_and_second_derivatives_go_through_a_checkpoint() -> None:
    # .grad() and create_graph=True, which PyTorch's reentrant variant refuses.
    for ours, expected in zip(_derivatives(True), _derivatives(False), strict=True):
        np.testing.assert_allclose(ours, expected, rtol=1e-6)


def test_dropout_draws_the_same_masks_again_and_the_stream_goes_on() -> None:
    dropout = plugrad.nn.Dropout(0.5)
    x = plugrad.ones(64, requires_grad=True)
    plugrad.manual_seed(3)
    y = checkpoint(lambda t: dropout(t) * t, x, use_reentrant=False)
    after_forward = plugrad.rand(3)
    y.sum().backward()
    # y = mask * 2 * x * x: its gradient, 4 * mask * x, from the forward's mask
    np.testing.assert_array_equal(x.grad.numpy(), 2 * y.detach().numpy())
    plugrad.manual_seed(3)
    dropout(x)
    assert plugrad.rand(3).tolist() == after_forward.tolist()  # backward drew nothing for it


def test_checkpoint_sequential_matches_the_network() -> None:
    found = []
    for checkpointed in (True, False):
        net = plugrad.nn.Sequential(*(plugrad.nn.Linear(4, 4) for _ in range(5)))
        for i, parameter in enumerate(net.parameters()):
            with plugrad.no_grad():
                parameter.copy_(plugrad.full(parameter.shape, 0.1 * (i + 1)))
        x = plugrad.tensor(INPUT, requires_grad=True)
        out = checkpoint_sequential(net, 3, x, use_reentrant=False) if checkpointed else net(x)
        out.sum().backward()
        found.append(
            [out.detach().numpy(), x.grad.numpy(), *(p.grad.numpy() for p in net.parameters())]
        )
    for ours, expected in zip(*found, strict=True):
        np.testing.assert_allclose(ours, expected, rtol=1e-6)


def test_misuse_is_refused_clearly() -> None:
    x = plugrad.ones(3, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant"):
        checkpoint(lambda t: t * 2, x)
    with pytest.raises(TypeError, match="function"):
        checkpoint(3, x, use_reentrant=False)
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential(plugrad.nn.Sequential(plugrad.nn.Tanh()), 0, x, use_reentrant=False)
    # An argument written in place before backward: the recomputation would differ.
    y = checkpoint(lambda t: (t * t).sum(), x, use_reentrant=False)
    with plugrad.no_grad():
        x.add_(1)
    with pytest.raises(InPlaceModificationError):
        y.backward()
    # Python state that changes what the function computes before backward.
    sizes = [3]
    y = checkpoint(lambda t: t[: sizes[0]] * 2, x, use_reentrant=False)
    sizes[0] = 2
    with pytest.raises(CheckpointError, match="shapes or dtypes"):
        y.sum().backward()


def test_without_grad_mode_it_runs_the_function() -> None:
    with plugrad.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        y = checkpoint(lambda t: t * 2, plugrad.ones(2, requires_grad=True), use_reentrant=False)
    assert not y.requires_grad and y.tolist() == [2.0, 2.0]


def test_what_the_function_computes_inside_is_not_kept() -> None:
    inner = []

    def block(t):
        hidden = t.exp() * 3
        inner.append(weakref.ref(hidden))
        return hidden.sin()

    x = plugrad.ones(100, requires_grad=True)
    y = checkpoint(block, x, use_reentrant=False)
    gc.collect()
    assert inner[0]() is None  # the point of a checkpoint: no activation lives on
    y.sum().backward()
    expected = np.cos(3 * np.e) * 3 * np.e * np.ones(100)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5)  # (float32)


def test_an_argument_changed_in_place_is_an_error_not_other_gradients() -> None:
    # The function's own x.mul_(2) ran again in backward: the gradient of another function.
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    x = plugrad.tensor([1.0, 2.0])

    def doubling(t):
        t.mul_(2)
        return (t * w).sin()

    y = checkpoint(doubling, x, use_reentrant=False)
    with pytest.raises(InPlaceModificationError, match="changed in place"):
        y.sum().backward()
    assert x.tolist() == [2.0, 4.0] and w.grad is None


def test_outputs_in_lists_and_dicts_get_their_gradients() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    kept = plugrad.ones(2)
    out = checkpoint(lambda t: [t * 3, {"a": t.sin(), "b": kept}, 5], x, use_reentrant=False)
    assert out[1]["b"] is kept and out[2] == 5
    (out[0].sum() + out[1]["a"].sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 + np.cos([1.0, 2.0]), rtol=1e-6)


@pytest.mark.parametrize("use_reentrant", [False, True])
@pytest.mark.parametrize("lib", [plugrad, torch], ids=["plugrad", "torch"])
def test_a_hook_on_a_parameter_the_function_reads_runs_once(lib, use_reentrant: bool) -> None:
    # It ran in the pass that recomputed the function and again in the enclosing one: a
    # hook doubling the gradient doubled it twice ([[4, 4]] for [[2, 2]]).
    layer = lib.nn.Linear(2, 1, bias=False)
    calls = []

    def doubled(grad):
        calls.append(grad.tolist())
        return grad * 2

    layer.weight.register_hook(doubled)
    x = lib.tensor([[1.0, 1.0]], requires_grad=True)
    lib.utils.checkpoint.checkpoint(layer, x, use_reentrant=use_reentrant).sum().backward()
    assert calls == [[[1.0, 1.0]]] and layer.weight.grad.tolist() == [[2.0, 2.0]]
    (grad,) = lib.autograd.grad(
        lib.utils.checkpoint.checkpoint(layer, x, use_reentrant=False).sum(), [layer.weight]
    )
    assert len(calls) == 2 and grad.tolist() == [[2.0, 2.0]]
