"""A plugrad layer against its ``torch.nn`` twin: the same leaves, PyTorch's weights loaded,
outputs and gradients compared in float64; and the checks of training and bad calls
that the layer tests share.

A *leaf* is a pair ``(ours, theirs)``: the same float64 values in plugrad (on the
default device) and in torch, both requiring grad.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import nn

torch = pytest.importorskip("torch")  # the modules that import this one skip without it

RTOL, ATOL = 1e-10, 1e-12


def torch_state(module: Any) -> dict[str, np.ndarray]:
    """A torch module's state dict as NumPy arrays (what a user converts and loads)."""
    return {key: value.detach().numpy() for key, value in module.state_dict().items()}


def randn(shape: tuple[int, ...], seed: int) -> tuple[plugrad.Tensor, Any]:
    """A leaf of standard normal values."""
    values = np.random.default_rng(seed).standard_normal(shape)
    ours = plugrad.asarray(values, device=plugrad.default_device(), requires_grad=True)
    return ours, torch.tensor(values, requires_grad=True)


def as_lib(lib: Any, value: Any) -> Any:
    """A NumPy array as a tensor of ``lib`` (plugrad or torch); anything else as it is."""
    if not isinstance(value, np.ndarray):
        return value
    if lib is plugrad:
        return plugrad.asarray(value, device=plugrad.default_device())
    return torch.tensor(value)


def causal(size: int) -> np.ndarray:
    """The float causal mask: ``-inf`` above the diagonal."""
    return np.triu(np.full((size, size), -np.inf), 1)


def flat(result: Any) -> list[Any]:
    """A layer's result (a tensor, or tuples of them and None) as a flat list."""
    if isinstance(result, tuple):
        return [item for part in result for item in flat(part)]
    return [result]


def weighted_sum(outputs: list[Any], lib: Any) -> Any:
    """A loss that weighs every element of every output differently."""
    total = 0
    for index, out in enumerate(outputs):
        weights = np.linspace(0.5, 1.5, int(np.prod(out.shape))).reshape(tuple(out.shape))
        weights = weights * (index + 1)
        if lib is plugrad:
            total = total + (out * plugrad.asarray(weights, device=out.device)).sum()
        else:
            total = total + (out * torch.tensor(weights)).sum()
    return total


def backward_squared_gradient(lib: Any, outputs: list[Any], leaf: Any) -> None:
    """Backpropagate ``|d weighted_sum(outputs) / d leaf|^2``: second-order gradients."""
    (g,) = lib.autograd.grad(weighted_sum(outputs, lib), leaf, create_graph=True)
    (g * g).sum().backward()


def assert_close(ours: Any, theirs: Any, what: str) -> None:
    if theirs is None:
        assert ours is None, what
        return
    assert ours.shape == tuple(theirs.shape), what
    np.testing.assert_allclose(
        ours.detach().numpy(), theirs.detach().numpy(), rtol=RTOL, atol=ATOL, err_msg=what
    )


def compare_gradients(leaves: list[tuple[Any, Any]], what: str) -> None:
    """The gradients of the leaves, ours against theirs."""
    for index, (a, b) in enumerate(leaves):
        assert_close(a.grad, b.grad, f"{what}: gradient of input {index}")


def compare_parameter_gradients(ours: nn.Module, theirs: Any, what: str = "gradient") -> None:
    """The same parameter names in the same order, and their gradients."""
    theirs_named = dict(theirs.named_parameters())
    assert [name for name, _ in ours.named_parameters()] == list(theirs_named)
    for name, parameter in ours.named_parameters():
        assert parameter.grad is None or parameter.grad.dtype is plugrad.float64, name
        assert_close(parameter.grad, theirs_named[name].grad, f"{what} of {name}")


def compare_outputs(results: tuple[Any, Any], leaves: list[tuple[Any, Any]], what: str) -> None:
    """Our results and theirs, then the gradients of a weighted sum of each with respect
    to the leaves."""
    our_out, their_out = (flat(result) for result in results)
    assert len(our_out) == len(their_out)
    for index, (a, b) in enumerate(zip(our_out, their_out)):
        assert_close(a, b, f"{what}: result {index}")
    weighted_sum([o for o in our_out if o is not None], plugrad).backward()
    weighted_sum([o for o in their_out if o is not None], torch).backward()
    compare_gradients(leaves, what)


def compare(
    ours: nn.Module,
    theirs: Any,
    leaves: list[tuple[Any, Any]],
    arguments: dict[str, Any] | None = None,
    call: Callable[..., Any] | None = None,
) -> None:
    """Load torch's weights into ``ours``, call both (``call(module, *leaves, **arguments)``,
    by default ``module(*leaves, **arguments)``, the NumPy arrays among the arguments
    converted), and compare their outputs and the gradients of the leaves and of every
    parameter."""
    ours.load_state_dict(torch_state(theirs))
    call = call or (lambda module, *args, **kwargs: module(*args, **kwargs))
    results = []
    for side, (lib, module) in enumerate(((plugrad, ours), (torch, theirs))):
        converted = {k: as_lib(lib, v) for k, v in (arguments or {}).items()}
        results.append(call(module, *(leaf[side] for leaf in leaves), **converted))
    compare_outputs((results[0], results[1]), leaves, "inputs")
    compare_parameter_gradients(ours, theirs)


def assert_layout_is_torchs(ours: nn.Module, theirs: Any) -> None:
    """The same repr, and the same state dict keys in the same order with the same shapes."""
    assert repr(ours) == repr(theirs)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in theirs.state_dict().items()
    }
    assert list(ours.state_dict()) == list(theirs.state_dict())


def assert_raises_and_changes_nothing(
    module: nn.Module, call: Callable[[Any], Any], error: type[Exception], message: str
) -> None:
    """``call(module)`` raises, leaving the module's state and gradients as they were."""
    before = {k: v.detach().numpy().copy() for k, v in module.state_dict().items()}
    with pytest.raises(error, match=message):
        call(module)
    for key, value in module.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), before[key])
    for name, parameter in module.named_parameters():
        assert parameter.grad is None, name


# -- training ----------------------------------------------------------------------------


def training_step(
    model: nn.Module, x: plugrad.Tensor, y: plugrad.Tensor, *args: Any, optimizer: Any = None
) -> Callable[[], plugrad.Tensor]:
    """One step of ``optimizer`` (SGD by default) on ``mse_loss(model(x, *args), y)``,
    returning the loss."""
    optimizer = optimizer or plugrad.optim.SGD(model.parameters(), lr=0.1)

    def step() -> plugrad.Tensor:
        loss = nn.functional.mse_loss(model(x, *args), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    return step


def training_losses(
    model: nn.Module, x: plugrad.Tensor, y: plugrad.Tensor, lr: float, steps: int = 40
) -> list[float]:
    """The losses of ``steps`` steps of Adam."""
    step = training_step(model, x, y, optimizer=plugrad.optim.Adam(model.parameters(), lr=lr))
    return [step().item() for _ in range(steps)]


def eager_and_compiled_losses(
    make: Callable[[], nn.Module], x: plugrad.Tensor, y: plugrad.Tensor, *args: Any
) -> list[list[float]]:
    """The losses of three SGD steps of a model made after ``manual_seed(0)``, run eagerly
    and compiled whole (no fallback to eager, no graph break)."""
    results = []
    for compiled in (False, True):
        plugrad.manual_seed(0)
        step = training_step(make(), x, y, *args)
        run = plugrad.compile(step, fullgraph=True) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no fallback to eager, no graph break
            results.append([run().item() for _ in range(3)])
    return results
