"""The global module hooks of ``torch.nn.modules.module`` and the deprecated non-full
backward hook, against PyTorch's."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import nn
from plugrad.errors import ArgumentError, CompileWarning, InvalidArgumentError
from plugrad.nn.modules import module as ours

torch = pytest.importorskip("torch")
theirs = torch.nn.modules.module


def _numbers(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        return [_numbers(v) for v in value]
    return np.asarray(value.detach().numpy()).round(5).tolist()


@pytest.fixture
def handles() -> Iterator[list[Any]]:
    """Handles to remove after the test, whatever happens (global hooks outlive it)."""
    held: list[Any] = []
    yield held
    for handle in held:
        handle.remove()


def test_the_global_hooks_are_where_pytorch_has_them() -> None:
    names = {name for name in theirs.__all__ if name.startswith("register_module_")}
    assert len(names) == 8
    for name in names:
        assert callable(getattr(ours, name))
        # (PyTorch has them in torch.nn.modules.module only)
        assert hasattr(torch.nn, name) is hasattr(plugrad.nn, name) is False


def _hook_order(lib: Any, mod: Any, held: list[Any]) -> list[tuple[str, str]]:
    log: list[tuple[str, str]] = []

    def note(kind: str) -> Any:
        return lambda m, *rest: log.append((kind, type(m).__name__))

    held += [
        mod.register_module_forward_pre_hook(note("global pre")),
        mod.register_module_forward_hook(note("global forward")),
        mod.register_module_full_backward_pre_hook(note("global backward pre")),
        mod.register_module_full_backward_hook(note("global backward")),
    ]
    net = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Tanh())
    net[1].register_forward_pre_hook(note("pre"), prepend=True)
    net[1].register_forward_hook(note("forward"), prepend=True)
    net[1].register_full_backward_pre_hook(note("backward pre"), prepend=True)
    net[1].register_full_backward_hook(note("backward"), prepend=True)
    x = lib.ones(3, 2, requires_grad=True)
    net(x).sum().backward()
    for handle in held:
        handle.remove()
    log.append(("removed", ""))
    net(x).sum().backward()
    return log


def test_global_hooks_run_before_each_modules_own_in_pytorchs_order(handles) -> None:
    expected = _hook_order(torch, theirs, handles)
    assert _hook_order(plugrad, ours, handles) == expected
    assert ("global pre", "Sequential") in expected and expected[-1] == ("backward", "Tanh")


def _changed_values(lib: Any, mod: Any, held: list[Any]) -> list[Any]:
    held += [
        mod.register_module_forward_pre_hook(lambda m, args: (args[0] + 1,)),
        mod.register_module_forward_hook(lambda m, args, out: out * 3),
        mod.register_module_forward_hook(
            lambda m, args, kwargs, out: out - len(kwargs), with_kwargs=True
        ),
        mod.register_module_full_backward_pre_hook(lambda m, grad_out: (grad_out[0] * 2,)),
        mod.register_module_full_backward_hook(lambda m, grad_in, grad_out: (grad_in[0] + 1,)),
    ]
    x = lib.tensor([0.5, -1.0], requires_grad=True)
    y = lib.nn.Tanh()(x)
    y.sum().backward()
    for handle in held:
        handle.remove()
    return [_numbers(y), _numbers(x.grad)]


def test_global_hooks_change_arguments_outputs_and_gradients_as_pytorchs(handles) -> None:
    assert _changed_values(plugrad, ours, handles) == _changed_values(torch, theirs, handles)


def _always_called(lib: Any, mod: Any, held: list[Any]) -> list[Any]:
    seen: list[Any] = []
    held.append(
        mod.register_module_forward_hook(lambda m, args, out: seen.append(out), always_call=True)
    )

    class Failing(lib.nn.Module):
        def forward(self, x: Any) -> Any:
            raise ValueError("forward failed")

    with pytest.raises(ValueError, match="forward failed"):
        Failing()(lib.ones(1))
    held.pop().remove()
    return seen


def test_an_always_called_global_forward_hook_runs_when_forward_raises(handles) -> None:
    assert _always_called(plugrad, ours, handles) == _always_called(torch, theirs, handles)
    assert _always_called(plugrad, ours, handles) == [None]


def _registrations(lib: Any, mod: Any, held: list[Any]) -> list[Any]:
    log: list[Any] = []

    def note(kind: str, replace: bool = False) -> Any:
        def hook(module: Any, name: str, value: Any) -> Any:
            log.append((kind, type(module).__name__, name, value is None))
            if replace and value is not None:
                return value * 0 + 7
            return None

        return hook

    held += [
        mod.register_module_parameter_registration_hook(note("parameter")),
        mod.register_module_buffer_registration_hook(note("buffer", replace=True)),
        mod.register_module_module_registration_hook(note("module")),
    ]
    net = lib.nn.Sequential(lib.nn.Linear(2, 2, bias=False), lib.nn.BatchNorm1d(2))
    net[1].running_mean = lib.zeros(2)  # (assigning to a buffer registers it again)
    net.extra = lib.nn.Parameter(lib.ones(1))
    net.register_buffer("empty", None)
    net.add_module("none", None)
    for handle in held:
        handle.remove()
    net.after = lib.nn.Parameter(lib.ones(1))  # (removed: not seen)
    log.append(_numbers(net[1].running_var))
    log.append(_numbers(net[1].running_mean))
    return log


def test_registration_hooks_see_and_replace_as_pytorchs(handles) -> None:
    expected = _registrations(torch, theirs, handles)
    assert _registrations(plugrad, ours, handles) == expected
    assert expected[-1] == [7.0, 7.0]  # the buffer hook's replacement was registered


def test_global_hooks_refuse_what_is_not_callable() -> None:
    for register in (
        ours.register_module_forward_pre_hook,
        ours.register_module_forward_hook,
        ours.register_module_full_backward_hook,
        ours.register_module_buffer_registration_hook,
    ):
        with pytest.raises(ArgumentError, match="must be callable"):
            register(3)


def test_a_global_hook_makes_compiled_module_calls_run_eagerly(handles) -> None:
    layer = nn.Linear(2, 2)
    compiled = plugrad.compile(lambda x: layer(x).detach())
    compiled(plugrad.ones(1, 2))
    compiled(plugrad.ones(1, 2))  # (a plan is replayed from here on)
    seen: list[int] = []
    handles.append(ours.register_module_forward_pre_hook(lambda m, args: seen.append(1)))
    handles.append(ours.register_module_forward_hook(lambda m, args, out: out * 0))
    with pytest.warns(CompileWarning, match="hook"):
        results = [compiled(plugrad.ones(1, 2)) for _ in range(3)]
    assert seen == [1, 1, 1]  # a replay would not run it
    assert all(not bool(result.abs().sum()) for result in results)
    for handle in handles:
        handle.remove()
    fresh = plugrad.compile(lambda x: layer(x).detach())
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        expected = layer(plugrad.ones(1, 2)).detach()
        for _ in range(3):
            assert plugrad.allclose(fresh(plugrad.ones(1, 2)), expected)
    assert fresh.captures == 1


def _non_full(lib: Any) -> list[Any]:
    class Tanh(lib.nn.Module):
        def forward(self, x: Any) -> Any:
            return lib.tanh(x)

    seen: list[Any] = []
    module = Tanh()
    module.register_backward_hook(lambda m, gi, go: seen.append((_numbers(gi), _numbers(go))))
    x = lib.tensor([0.5, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one node of its argument: no warning
        (module(x * 1.0) * 3).sum().backward()
    seen.append(_numbers(x.grad))
    return seen


def test_register_backward_hook_gets_the_output_nodes_gradients_as_pytorchs() -> None:
    assert _non_full(plugrad) == _non_full(torch)


@pytest.mark.parametrize("lib", [plugrad, torch], ids=["plugrad", "torch"])
def test_a_non_full_hook_over_several_nodes_warns_as_pytorchs(lib: Any) -> None:
    layer = lib.nn.Linear(2, 1)
    handle = layer.register_backward_hook(lambda *args: None)
    with pytest.warns(FutureWarning, match="non-full backward hook"):
        layer(lib.ones(1, 2, requires_grad=True))
    handle.remove()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        layer(lib.ones(1, 2, requires_grad=True))


def test_full_and_non_full_backward_hooks_on_one_module_are_refused_as_pytorchs() -> None:
    with pytest.raises(RuntimeError, match="Cannot use both"):
        layer = torch.nn.Linear(2, 2)
        layer.register_full_backward_hook(lambda *args: None)
        layer.register_backward_hook(lambda *args: None)
    layer = nn.Linear(2, 2)
    layer.register_full_backward_hook(lambda *args: None)
    with pytest.raises(InvalidArgumentError, match="both full and non-full"):
        layer.register_backward_hook(lambda *args: None)
    other = nn.Linear(2, 2)
    other.register_backward_hook(lambda *args: None)
    with pytest.raises(RuntimeError, match="both full and non-full"):
        other.register_full_backward_hook(lambda *args: None)


def test_the_global_non_full_hook_runs_as_pytorchs(handles, monkeypatch) -> None:
    # (PyTorch refuses one for good once a full global hook was registered, even removed)
    monkeypatch.setattr(theirs, "_global_is_full_backward_hook", None)
    results = []
    for lib, mod in ((torch, theirs), (plugrad, ours)):
        seen: list[Any] = []
        handle = mod.register_module_backward_hook(
            lambda m, gi, go, seen=seen: seen.append(_numbers(gi))
        )
        handles.append(handle)
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        module = lib.nn.Tanh()  # (alive until backward: PyTorch's hook refers to it weakly)
        module(x * 2).sum().backward()
        handle.remove()
        results.append(seen)
    assert results[0] == results[1] and len(results[0]) == 1
