"""PyTorch's dicts of a module's hooks (``_forward_hooks``, ...) read and written as in
PyTorch: handle id -> hook, in call order; writes change which hooks run."""

from __future__ import annotations

import copy
import importlib
import pickle
import warnings
from collections import OrderedDict
from typing import Any

import pytest

import plugrad
from plugrad import nn
from plugrad.errors import ArgumentError, InvalidArgumentError

torch = pytest.importorskip("torch")

LIBS = {"plugrad": plugrad, "torch": torch}


def _labelled(calls: list[str], label: str, with_kwargs: bool = False) -> Any:
    if with_kwargs:
        return lambda module, args, kwargs, out: calls.append(label)
    return lambda module, args, out: calls.append(label)


def _hooked(lib: Any) -> tuple[Any, list[str], list[Any]]:
    """A linear layer with four forward hooks (two prepended, one with kwargs and
    always_call), the list they append their labels to, and their handles."""
    layer, calls = lib.nn.Linear(2, 2), []
    handles = [
        layer.register_forward_hook(_labelled(calls, "a")),
        layer.register_forward_hook(_labelled(calls, "b"), prepend=True),
        layer.register_forward_hook(
            _labelled(calls, "c", with_kwargs=True), with_kwargs=True, always_call=True
        ),
        layer.register_forward_hook(_labelled(calls, "d"), prepend=True),
    ]
    return layer, calls, handles


def _called(lib: Any, layer: Any, calls: list[str]) -> list[str]:
    calls.clear()
    layer(lib.ones((1, 2)))
    return list(calls)


@pytest.mark.parametrize("lib_name", list(LIBS))
def test_dicts_list_the_hooks_by_handle_id_in_call_order(lib_name: str) -> None:
    lib = LIBS[lib_name]
    layer, calls, handles = _hooked(lib)
    ids = [h.id for h in handles]
    assert len(set(ids)) == 4 and ids == sorted(ids)  # one per registration, increasing
    hooks = layer._forward_hooks
    position = {hook_id: i for i, hook_id in enumerate(ids)}
    # d (prepended last), b (prepended), a, c: as they run.
    assert [position[k] for k in hooks] == [3, 1, 0, 2]
    assert len(hooks) == 4 and list(hooks.values()) == [hooks[k] for k in hooks]
    assert _called(lib, layer, calls) == ["d", "b", "a", "c"]
    assert dict(layer._forward_hooks_with_kwargs) == {ids[2]: True}
    assert dict(layer._forward_hooks_always_called) == {ids[2]: True}
    assert len(layer._forward_pre_hooks) == 0 and not layer._forward_pre_hooks_with_kwargs
    assert not layer._backward_hooks and not layer._backward_pre_hooks


@pytest.mark.parametrize("lib_name", list(LIBS))
def test_removal_through_the_handle_or_the_dict_changes_which_hooks_run(lib_name: str) -> None:
    lib = LIBS[lib_name]
    layer, calls, handles = _hooked(lib)
    handles[2].remove()  # c: gone from the dict and its flags
    assert handles[2].id not in layer._forward_hooks
    assert not layer._forward_hooks_with_kwargs and not layer._forward_hooks_always_called
    del layer._forward_hooks[handles[3].id]  # d
    handles[3].remove()  # after del: harmless
    assert layer._forward_hooks.pop(handles[0].id) is not None  # a
    assert _called(lib, layer, calls) == ["b"]
    with pytest.raises(KeyError):
        del layer._forward_hooks[handles[0].id]
    assert len(layer._forward_hooks) > 0
    layer._forward_hooks.clear()
    assert _called(lib, layer, calls) == [] and len(layer._forward_hooks) == 0
    handles[1].remove()  # after clear: harmless


@pytest.mark.parametrize("lib_name", list(LIBS))
def test_writing_a_key_replaces_the_hook_in_place_or_adds_it_last(lib_name: str) -> None:
    lib = LIBS[lib_name]
    layer, calls, handles = _hooked(lib)
    layer._forward_hooks[handles[1].id] = _labelled(calls, "B")  # keeps its place
    layer._forward_hooks[handles[2].id] = _labelled(calls, "C", with_kwargs=True)  # and flags
    layer._forward_hooks[10_000] = _labelled(calls, "new")  # a new key runs last
    assert _called(lib, layer, calls) == ["d", "B", "a", "C", "new"]
    layer._forward_hooks = OrderedDict()  # drops them all
    assert _called(lib, layer, calls) == []


@pytest.mark.parametrize("lib_name", list(LIBS))
def test_a_hook_written_into_the_dict_of_a_module_without_hooks_runs(lib_name: str) -> None:
    lib = LIBS[lib_name]
    layer, calls = lib.nn.Linear(2, 2), []
    layer._forward_pre_hooks[7] = lambda module, args: calls.append("pre")
    assert list(layer._forward_pre_hooks) == [7]
    layer(lib.ones((1, 2)))
    assert calls == ["pre"]


@pytest.mark.parametrize("lib_name", list(LIBS))
def test_the_flag_dicts_say_how_the_hooks_are_called(lib_name: str) -> None:
    lib = LIBS[lib_name]
    layer, calls = lib.nn.Linear(2, 2), []
    handle = layer.register_forward_pre_hook(
        lambda module, args, kwargs: calls.append(sorted(kwargs)), with_kwargs=True
    )
    assert dict(layer._forward_pre_hooks_with_kwargs) == {handle.id: True}
    layer._forward_pre_hooks[handle.id] = lambda module, args: calls.append("plain")
    del layer._forward_pre_hooks_with_kwargs[handle.id]  # now called without kwargs
    layer(lib.ones((1, 2)))
    assert calls == ["plain"] and not layer._forward_pre_hooks_with_kwargs


@pytest.mark.parametrize("lib_name", list(LIBS))
def test_backward_hook_dicts_list_and_drop_the_full_backward_hooks(lib_name: str) -> None:
    lib = LIBS[lib_name]
    layer, calls = lib.nn.Linear(2, 2), []
    pre = layer.register_full_backward_pre_hook(lambda module, g_out: calls.append("pre"))
    full = layer.register_full_backward_hook(lambda module, g_in, g_out: calls.append("full"))
    assert list(layer._backward_pre_hooks) == [pre.id]
    assert list(layer._backward_hooks) == [full.id]
    x = lib.ones((1, 2), requires_grad=True)
    layer(x).sum().backward()
    assert calls == ["pre", "full"]
    layer._backward_hooks.clear()
    layer._backward_pre_hooks.clear()
    calls.clear()
    layer(x).sum().backward()
    assert calls == []


@pytest.mark.parametrize("lib_name", list(LIBS))
def test_pruning_tutorial_loop_finds_the_pruning_method(lib_name: str) -> None:
    lib = LIBS[lib_name]
    prune = importlib.import_module(f"{lib_name}.nn.utils.prune")
    layer = lib.nn.Linear(3, 2)

    def methods() -> list[str]:
        return [
            type(hook).__name__
            for hook in layer._forward_pre_hooks.values()
            if isinstance(hook, prune.BasePruningMethod)
        ]

    assert methods() == []
    prune.l1_unstructured(layer, "weight", amount=0.5)
    assert methods() == ["L1Unstructured"]
    prune.random_unstructured(layer, "weight", amount=0.2)
    assert methods() == ["PruningContainer"]
    prune.remove(layer, "weight")
    assert methods() == []


@pytest.mark.parametrize("lib_name", list(LIBS))
def test_normalizations_show_their_pre_hooks_as_pytorch(lib_name: str) -> None:
    lib = LIBS[lib_name]
    utils = lib.nn.utils
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # PyTorch's weight_norm is deprecated
        weight_norm = utils.weight_norm(lib.nn.Linear(3, 2))
    spectral = utils.spectral_norm(lib.nn.Linear(3, 2))
    param = utils.parametrizations.weight_norm(lib.nn.Linear(3, 2))
    param = utils.parametrizations.spectral_norm(param, name="bias")

    def names(module: Any) -> list[str]:
        return [type(hook).__name__ for hook in module._forward_pre_hooks.values()]

    assert names(weight_norm) == ["WeightNorm"]
    assert names(spectral) == ["SpectralNorm"]
    assert names(param) == [] and len(param._forward_hooks) == 0  # parametrizations: no hooks
    utils.remove_weight_norm(weight_norm)
    assert names(weight_norm) == []


def _double(module: Any, args: Any, output: Any) -> Any:
    return output * 2


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_a_copied_module_keeps_its_hooks_and_their_ids(how: str) -> None:
    layer = nn.Linear(3, 2)
    nn.utils.prune.l1_unstructured(layer, "weight", amount=0.5)
    handle = layer.register_forward_hook(_double, with_kwargs=False, always_call=True)
    copied = copy.deepcopy(layer) if how == "deepcopy" else pickle.loads(pickle.dumps(layer))
    assert list(copied._forward_hooks) == [handle.id]
    assert dict(copied._forward_hooks_always_called) == {handle.id: True}
    (pre,) = copied._forward_pre_hooks.values()
    assert type(pre).__name__ == "L1Unstructured"
    x = plugrad.ones((1, 3))
    assert plugrad.allclose(copied(x), layer(x))
    copied._forward_hooks.clear()  # the copy's own hooks: the original keeps its
    assert list(layer._forward_hooks) == [handle.id]
    assert plugrad.allclose(copied(x) * 2, layer(x))
    assert set(copied.state_dict()) == set(layer.state_dict())


def test_reading_the_dicts_registers_nothing() -> None:
    layer = nn.Linear(2, 2)
    assert len(layer._forward_hooks) == 0 and list(layer._backward_hooks.items()) == []
    assert layer._forward_hooks == {} and "_forward_hooks" not in vars(layer)
    assert "_module_hooks" not in vars(layer) and not layer._module_hooks
    with pytest.raises(KeyError):
        layer._forward_hooks[0]


def test_bad_writes_are_refused_clearly_and_change_nothing() -> None:
    layer = nn.Linear(2, 2)
    handle = layer.register_forward_hook(_double)
    with pytest.raises(ArgumentError, match=r"Linear\._forward_hooks\[.*callable, got int"):
        layer._forward_hooks[handle.id] = 3
    with pytest.raises(ArgumentError, match="mapping of handle id to hook"):
        layer._forward_hooks = [_double]
    with pytest.raises(ArgumentError, match="callable, got str"):
        layer._forward_hooks = {1: "not a hook"}
    with pytest.raises(InvalidArgumentError, match="its values are True"):
        layer._forward_hooks_with_kwargs[handle.id] = False
    with pytest.raises(KeyError, match="no hook has that id"):
        layer._forward_hooks_always_called[handle.id + 1000] = True
    with pytest.raises(KeyError, match="no hook has the id"):
        layer._forward_hooks_with_kwargs = {handle.id + 1000: True}
    assert dict(layer._forward_hooks) == {handle.id: _double}
    assert not layer._forward_hooks_with_kwargs and not layer._forward_hooks_always_called


def test_tensor_hook_handles_have_ids_too() -> None:
    x = plugrad.ones(2, requires_grad=True)
    first, second = x.register_hook(lambda g: g), x.register_hook(lambda g: g)
    assert isinstance(first.id, int) and second.id > first.id
