"""Module methods libraries call on PyTorch's modules (``_apply``, ``to_empty``, the private
state dict hooks, ``share_memory``) and the names a module refuses, against PyTorch's."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import nn
from plugrad.errors import ArgumentError, InvalidNameError, NotSupportedError, PlugradError

torch = pytest.importorskip("torch")


def _numbers(value: Any) -> Any:
    return np.asarray(value.detach().numpy()).tolist()


def _applied(lib: Any) -> list[Any]:
    net = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2))
    weight, grad_holder = net[0].weight, []
    running_mean = net[1].running_mean
    net(lib.ones(3, 2)).sum().backward()
    grad_holder.append(weight.grad)
    seen = []
    result = net._apply(lambda t: seen.append(tuple(t.shape)) or t * 0 + 2)
    return [
        result is net,
        net[0].weight is weight,
        net[0].weight.grad is grad_holder[0],
        _numbers(net[0].weight),
        _numbers(net[0].weight.grad),
        net[0].weight.requires_grad,
        net[0].weight.grad_fn is None,
        net[1].running_mean is running_mean,
        _numbers(net[1].running_mean),
        _numbers(net[1].num_batches_tracked),
        seen,
    ]


def test_apply_keeps_parameters_and_gradients_and_replaces_buffers_as_pytorchs() -> None:
    assert _applied(plugrad) == _applied(torch)


def test_apply_refuses_a_function_that_returns_no_tensor() -> None:
    layer = nn.Linear(2, 2)
    before = layer.weight.detach().clone()
    with pytest.raises(ArgumentError, match="must return a Tensor"):
        layer._apply(lambda t: None)
    assert bool(plugrad.all(layer.weight == before))


def _emptied(lib: Any, recurse: bool) -> list[Any]:
    class Net(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = lib.nn.Parameter(lib.ones(3, dtype=lib.float64))
            self.register_buffer("steps", lib.zeros((), dtype=lib.int64))
            self.inner = lib.nn.Linear(2, 4)

    net = Net()
    scale, inner_weight = net.scale, net.inner.weight
    inner_before = _numbers(inner_weight)
    assert net.to_empty(device="cpu", recurse=recurse) is net
    return [
        net.scale is scale,
        net.inner.weight is inner_weight,
        tuple(net.scale.shape),
        str(net.scale.dtype).rpartition(".")[2],
        str(net.steps.dtype).rpartition(".")[2],
        tuple(net.inner.weight.shape),
        net.scale.requires_grad,
        net.scale.device.type,
        _numbers(net.inner.weight) == inner_before if not recurse else None,
    ]


@pytest.mark.parametrize("recurse", [True, False])
def test_to_empty_gives_each_tensor_new_memory_of_its_shape_as_pytorchs(recurse: bool) -> None:
    assert _emptied(plugrad, recurse) == _emptied(torch, recurse)


def _private_state_dict_hooks(lib: Any) -> list[Any]:
    seen: list[Any] = []
    layer = lib.nn.Linear(2, 1)
    layer._register_state_dict_hook(
        lambda module, state, prefix, metadata: OrderedDict(replaced=type(module).__name__)
    )
    net = lib.nn.Sequential(lib.nn.Linear(2, 1))
    net[0]._register_state_dict_hook(lambda module, state, prefix, metadata: {"ignored": 1})
    target = lib.nn.Sequential(lib.nn.Linear(2, 1))
    target[0]._register_load_state_dict_pre_hook(
        lambda state, prefix, metadata, strict, missing, unexpected, errors: seen.append(
            ("plain", prefix, sorted(state), strict)
        )
    )
    handle = target[0]._register_load_state_dict_pre_hook(
        lambda module, state, prefix, *rest: seen.append(("module", type(module).__name__)),
        with_module=True,
    )
    target.load_state_dict(net.state_dict())
    handle.remove()
    target.load_state_dict(net.state_dict())
    return [dict(layer.state_dict()), sorted(net.state_dict()), seen]


def test_the_private_state_dict_hooks_take_pytorchs_arguments_and_returns() -> None:
    expected = _private_state_dict_hooks(torch)
    assert _private_state_dict_hooks(plugrad) == expected
    assert expected[0] == {"replaced": "Linear"}


def test_share_memory_says_plugrad_cannot() -> None:
    with pytest.raises(NotSupportedError, match="cannot be moved into memory shared"):
        nn.Linear(2, 2).share_memory()


NAMES = {
    "dotted": "a.b",
    "empty": "",
    "a method": "forward",
    "an attribute": "training",
}


@pytest.mark.parametrize("name", list(NAMES.values()), ids=list(NAMES))
@pytest.mark.parametrize("register", ["register_buffer", "register_parameter", "add_module"])
def test_names_a_module_cannot_register_raise_a_typed_key_error(name: str, register: str) -> None:
    values = {
        "register_buffer": (torch.zeros(1), plugrad.zeros(1)),
        "register_parameter": (torch.nn.Parameter(torch.zeros(1)), nn.Parameter(plugrad.zeros(1))),
        "add_module": (torch.nn.ReLU(), nn.ReLU()),
    }[register]
    with pytest.raises(KeyError):
        getattr(torch.nn.Module(), register)(name, values[0])
    with pytest.raises(InvalidNameError) as caught:
        getattr(nn.Module(), register)(name, values[1])
    assert isinstance(caught.value, (PlugradError, KeyError))
    assert not str(caught.value).startswith(("'", '"'))  # a message, not a quoted key


def test_a_name_taken_by_another_registry_is_a_typed_key_error() -> None:
    module = nn.Module()
    module.register_buffer("x", plugrad.zeros(1))
    with pytest.raises(InvalidNameError, match="already exists"):
        module.register_parameter("x", nn.Parameter(plugrad.zeros(1)))
    with pytest.raises(InvalidNameError, match="already exists"):
        module.forward = nn.Parameter(plugrad.zeros(1))
