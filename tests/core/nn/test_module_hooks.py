"""Module hooks against PyTorch's: forward pre-hooks and hooks, full backward (pre-)hooks."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import nn
from plugrad.errors import ArgumentError

torch = pytest.importorskip("torch")


def _pair(lib: Any) -> tuple[Any, Any]:
    """A linear layer with the same weights in both libraries, and an input."""
    layer = lib.nn.Linear(3, 2)
    with lib.no_grad():
        layer.weight.copy_(lib.tensor([[1.0, -2.0, 0.5], [0.0, 1.0, 3.0]]))
        layer.bias.copy_(lib.tensor([0.25, -1.0]))
    return layer, lib.tensor([[1.0, 2.0, 3.0], [-1.0, 0.0, 2.0]], requires_grad=True)


def _numbers(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        return [_numbers(v) for v in value]
    return np.asarray(value.detach().numpy() if hasattr(value, "detach") else value).tolist()


SCENARIOS = {
    "pre-hook scales the input": lambda lib, m: m.register_forward_pre_hook(
        lambda mod, args: (args[0] * 2,)
    ),
    "pre-hook returns one value": lambda lib, m: m.register_forward_pre_hook(
        lambda mod, args: args[0] + 1
    ),
    "pre-hook with kwargs": lambda lib, m: m.register_forward_pre_hook(
        lambda mod, args, kwargs: ((args[0] - 1,), kwargs), with_kwargs=True
    ),
    "hook replaces the output": lambda lib, m: m.register_forward_hook(
        lambda mod, args, out: out * args[0].sum()
    ),
    "hook with kwargs": lambda lib, m: m.register_forward_hook(
        lambda mod, args, kwargs, out: out + 1, with_kwargs=True
    ),
    "hooks in order, one prepended": lambda lib, m: (
        m.register_forward_hook(lambda mod, args, out: out * 3),
        m.register_forward_hook(lambda mod, args, out: out + 1, prepend=True),
    ),
    "backward pre-hook scales grad_output": lambda lib, m: m.register_full_backward_pre_hook(
        lambda mod, grad_output: (grad_output[0] * 10,)
    ),
    "backward hook replaces grad_input": lambda lib, m: m.register_full_backward_hook(
        lambda mod, grad_input, grad_output: (grad_input[0] * 0 + grad_output[0].sum(),)
    ),
    "removed hook": lambda lib, m: m.register_forward_hook(lambda mod, a, out: out * 7).remove(),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_hooks_change_values_and_gradients_as_pytorchs(name: str) -> None:
    results = []
    for lib in (plugrad, torch):
        layer, x = _pair(lib)
        SCENARIOS[name](lib, layer)
        out = layer(x)
        (out * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        results.append([_numbers(out), _numbers(x.grad), _numbers(layer.weight.grad)])
    np.testing.assert_allclose(np.array(results[0][0]), np.array(results[1][0]), rtol=1e-6)
    for ours, theirs in zip(results[0][1:], results[1][1:]):
        np.testing.assert_allclose(np.array(ours), np.array(theirs), rtol=1e-6)


def test_full_backward_hooks_see_the_gradients_pytorch_gives() -> None:
    seen: dict[str, list[Any]] = {"plugrad": [], "torch": []}
    for lib, key in ((plugrad, "plugrad"), (torch, "torch")):
        layer, x = _pair(lib)
        layer.register_full_backward_pre_hook(lambda m, go, k=key: seen[k].append(_numbers(go)))
        layer.register_full_backward_hook(
            lambda m, gi, go, k=key: seen[k].append((_numbers(gi), _numbers(go)))
        )
        (layer(x) ** 2).sum().backward()
        constant = lib.ones(2, 3)  # no argument needs a gradient: grad_input is (None,)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # PyTorch's about this case
            (layer(constant) ** 2).sum().backward()
    assert len(seen["plugrad"]) == len(seen["torch"]) == 4
    for ours, theirs in zip(seen["plugrad"], seen["torch"]):
        np.testing.assert_allclose(
            np.array(_flatten(ours), dtype=float), np.array(_flatten(theirs), dtype=float)
        )


def test_full_backward_hooks_give_zeros_for_a_tensor_argument_without_grad() -> None:
    # It was None, and a hook adding to it failed; a non-tensor argument stays None.
    seen: dict[str, Any] = {}
    for lib in (plugrad, torch):

        class Scale(lib.nn.Module):
            def forward(self, x, y, factor):
                return x * y * factor

        module = Scale()
        module.register_full_backward_hook(lambda m, gi, go, k=lib.__name__: seen.update({k: gi}))
        module(lib.ones(2, requires_grad=True), lib.full((2,), 3.0), 2.0).sum().backward()
    ours, theirs = seen["plugrad"], seen["torch"]
    assert ours[2] is None and theirs[2] is None
    for mine, reference in zip(ours[:2], theirs[:2]):
        np.testing.assert_array_equal(mine.numpy(), reference.numpy())


def _flatten(value: Any) -> list[Any]:
    if value is None:
        return [np.nan]
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in _flatten(item)]
    return [value]


def test_always_call_hooks_run_when_forward_raises() -> None:
    class Failing(nn.Module):
        def forward(self, x):
            raise ValueError("no")

    layer, calls = Failing(), []
    layer.register_forward_hook(lambda m, a, out: calls.append(("always", out)), always_call=True)
    layer.register_forward_hook(lambda m, a, out: calls.append("normal"))
    with pytest.raises(ValueError, match="no"):
        layer(plugrad.ones(2, 5))
    assert calls == [("always", None)]


def _hook_log(lib: Any) -> list[Any]:
    """What backward and always_call hooks see, in a call PyTorch's documentation covers."""
    log: list[Any] = []

    class TwoOutputs(lib.nn.Module):
        def forward(self, x, k=2):
            return x.detach() * 2, x * 3, 5

    def numbers(grads):
        return [None if g is None else g.tolist() for g in grads]

    module = TwoOutputs()
    module.register_full_backward_pre_hook(lambda m, go: log.append(("pre", numbers(go))))
    module.register_full_backward_hook(lambda m, gi, go: log.append((numbers(gi), numbers(go))))
    x = lib.ones(2, requires_grad=True)
    (module(x, 3)[1] * 7).sum().backward()
    replacing = TwoOutputs()  # a pre-hook returns one gradient per output
    replacing.register_full_backward_pre_hook(lambda m, go: (None, go[1] * 0, None))
    x.grad = None
    replacing(x)[1].sum().backward()
    log.append(x.grad.tolist())
    w = lib.ones(2, requires_grad=True)

    class NoInputGrad(lib.nn.Module):
        def forward(self, x, y, z):
            return x * w

    no_input = NoInputGrad()
    no_input.register_full_backward_hook(lambda m, gi, go: log.append((gi, numbers(go))))
    with warnings.catch_warnings():  # (PyTorch warns that no input needs a gradient)
        warnings.simplefilter("ignore")
        no_input(lib.ones(2), 1, lib.ones(1)).sum().backward()

    class UnusedInput(lib.nn.Module):
        def forward(self, a, b):
            return a * 2

    unused = UnusedInput()
    unused.register_full_backward_hook(lambda m, gi, go: log.append(("unused", numbers(gi))))
    a, b = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
    unused(a, b).sum().backward()
    log.append(b.grad.tolist())  # zeros, as the hook's grad_input says (it was None)
    for failing in ("pre-hook", "hook"):
        layer = lib.nn.Linear(2, 2)
        if failing == "pre-hook":
            layer.register_forward_pre_hook(lambda m, a: [][0])
        else:
            layer.register_forward_hook(lambda m, a, out: [][0])
        layer.register_forward_hook(
            lambda m, a, out, failing=failing: log.append(
                (failing, out if out is None else out.shape)
            ),
            always_call=True,
        )
        with pytest.raises(IndexError):
            layer(lib.ones(1, 2))
    return log


def test_backward_hooks_see_every_output_and_always_call_hooks_any_failure() -> None:
    # grad_output held only the outputs that need a gradient (go[1] was another's); an
    # always_call hook ran only when forward itself raised.
    ours, theirs = _hook_log(plugrad), _hook_log(torch)
    assert ours[:-1] == theirs[:-1]
    assert ours[-1] == ("hook", (1, 2)) and theirs[-1][0] == "hook"


def test_hooks_of_submodules_run_inside_the_parent_and_tuples_pass_through() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    shapes = []
    handles = [
        m.register_forward_hook(lambda m, a, out: shapes.append(tuple(out.shape))) for m in model
    ]
    model(plugrad.ones(5, 3))
    assert shapes == [(5, 4), (5, 4), (5, 2)]
    for handle in handles:
        handle.remove()
    rnn, grads = nn.GRU(3, 4, batch_first=True), []
    rnn.register_full_backward_hook(
        lambda m, gi, go: grads.append([None if g is None else tuple(g.shape) for g in go])
    )
    output, _ = rnn(plugrad.ones(2, 5, 3, requires_grad=True))
    output.sum().backward()
    assert grads == [[(2, 5, 4), None]]  # the hidden state took no part in the loss


def test_bad_hooks_are_refused_clearly() -> None:
    layer = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="must be callable"):
        layer.register_forward_hook(3)
    layer.register_forward_pre_hook(lambda m, a, k: "not a pair", with_kwargs=True)
    with pytest.raises(ArgumentError, match=r"returns None or \(args, kwargs\)"):
        layer(plugrad.ones(1, 2))
    other = nn.Linear(2, 2)
    other.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(ArgumentError, match="returned 2 gradient"):
        other(plugrad.ones(1, 2, requires_grad=True)).sum().backward()


def test_a_module_with_hooks_runs_eagerly_under_compile() -> None:
    layer, seen = nn.Linear(2, 2), []
    layer.register_forward_hook(lambda m, a, out: seen.append(1))
    compiled = plugrad.compile(lambda x: layer(x).detach())
    with pytest.warns(plugrad.errors.CompileWarning, match="a hook of Linear runs Python"):
        for _ in range(3):
            compiled(plugrad.ones(1, 2))
    assert seen == [1, 1, 1]  # a replay would have run it once


def test_set_materialize_grads_false_gives_none_for_unused_outputs_as_pytorch() -> None:
    seen = []
    for lib in (plugrad, torch):
        function = lib.autograd.Function

        class Two(function):  # type: ignore[misc, valid-type]
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, ga, gb):
                seen.append((ga is None, gb is None))
                return ga * 2

        x = lib.ones(2, requires_grad=True)
        a, _ = Two.apply(x)
        a.sum().backward()
    assert seen == [(False, True), (False, True)]


def _hooked_between_forward_and_backward(lib: Any) -> tuple[list[str], list[Any]]:
    """Backward hooks removed after forward, then added after forward: the calls and grads."""
    log: list[str] = []

    def note(what: str) -> Any:
        return lambda *args: log.append(what)

    def zeroing(module: Any, grad_input: Any, grad_output: Any) -> Any:
        return (grad_input[0] * 0,)

    grads = []
    for when in ("removed", "added"):
        module = lib.nn.Tanh()
        kept = module.register_full_backward_hook(note("kept"))
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        if when == "removed":
            handles = [
                module.register_full_backward_hook(zeroing),
                module.register_full_backward_pre_hook(note("pre")),
            ]
            y = module(x)
            for handle in handles:
                handle.remove()
        else:
            y = module(x)
            module.register_full_backward_hook(zeroing)
            module.register_full_backward_pre_hook(note("late pre"))
        kept.remove()
        y.sum().backward()
        grads.append(_numbers(x.grad))
    return log, grads


def test_backward_hooks_are_the_ones_registered_when_forward_ran() -> None:
    # A full backward (pre-)hook removed between forward and backward still ran in
    # PyTorch but not here, and one added in between ran here only: other gradients.
    (log, grads), (torch_log, torch_grads) = map(
        _hooked_between_forward_and_backward, (plugrad, torch)
    )
    assert log == torch_log == ["pre", "kept", "kept"]
    assert grads[0] == [0.0, 0.0]
    np.testing.assert_allclose(grads, torch_grads, rtol=1e-6)


def test_backward_hooks_of_a_module_returning_a_dict_do_not_run_and_say_so() -> None:
    # They ran with grad_output None (a hook reading grad_output[0] failed); PyTorch's warn
    # and do not run.
    for lib in (plugrad, torch):

        class Named(lib.nn.Module):
            def forward(self, x):
                return {"y": x * 2}

        module, calls = Named(), []
        module.register_full_backward_hook(lambda m, gi, go, calls=calls: calls.append(go))
        module.register_full_backward_pre_hook(lambda m, go, calls=calls: calls.append(go))
        x = lib.ones(2, requires_grad=True)
        with pytest.warns(UserWarning, match="(?i)backward hooks"):
            out = module(x)
        out["y"].sum().backward()
        assert calls == [] and x.grad.tolist() == [2.0, 2.0], lib.__name__


@pytest.mark.parametrize("layer", ["cube", "tanh", "sigmoid"])
def test_a_double_backward_does_not_run_full_backward_hooks_again(layer: str) -> None:
    # The second pass reaches the module's inputs through what the first recorded, not
    # through its outputs: the hooks ran again there with the first pass's grad_output and
    # scaled the second derivative once more (x.grad 1200 for 120).
    results = []
    for lib in (plugrad, torch):
        calls = []

        class Cube(lib.nn.Module):
            def forward(self, x):
                return x**3

        module = {"cube": Cube, "tanh": lib.nn.Tanh, "sigmoid": lib.nn.Sigmoid}[layer]()

        def scale(module, grad_input, grad_output, calls=calls):
            calls.append(grad_output[0].tolist())
            return (grad_input[0] * 10,)

        module.register_full_backward_hook(scale)
        x = lib.tensor([0.7, -1.3], dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(module(x).sum(), x, create_graph=True)
        g.sum().backward()
        results.append((g.tolist(), x.grad.tolist(), calls))
    (ours, ours_grad, ours_calls), (theirs, theirs_grad, theirs_calls) = results
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    np.testing.assert_allclose(ours_grad, theirs_grad, rtol=1e-12)
    assert ours_calls == theirs_calls == [[1.0, 1.0]]


@pytest.mark.parametrize(
    ("register", "hook", "error", "words"),
    [
        ("register_full_backward_hook", lambda m, gi, go: (plugrad.ones(2),),
         plugrad.errors.ShapeError, "changed the shape of grad_input[0] from (3, 2) to (2,)"),
        ("register_full_backward_hook", lambda m, gi, go: (gi[0].double(),),
         plugrad.errors.DtypeError, "changed the dtype of grad_input[0] from float32 to float64"),
        ("register_full_backward_hook", lambda m, gi, go: (3,), ArgumentError, "of type int"),
        ("register_full_backward_pre_hook", lambda m, go: (plugrad.ones(5),),
         plugrad.errors.ShapeError, "changed the shape of grad_output[0] from (3, 1) to (5,)"),
    ],
)  # fmt: skip
def test_a_hook_returning_a_gradient_unlike_the_tensor_is_refused(register, hook, error, words):
    # The engine said that an internal node (_Watched.backward) returned it, naming an
    # argument that does not exist; a float64 gradient for float32 was cast silently.
    module = nn.Linear(2, 1)
    getattr(module, register)(hook)
    x = plugrad.zeros((3, 2), requires_grad=True)
    with pytest.raises(error) as raised:
        module(x).sum().backward()
    assert words in str(raised.value)
    assert x.grad is None and module.weight.grad is None
