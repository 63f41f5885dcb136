"""nn.utils.parametrizations.orthogonal against PyTorch's: the weight after registration and
after assignment, the originals, gradients, and orthogonality through training."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad.errors import InvalidArgumentError, PlugradError, ShapeError
from plugrad.nn.utils.parametrizations import orthogonal

torch = pytest.importorskip("torch")
torch_orthogonal = torch.nn.utils.parametrizations.orthogonal

MAPS = ["matrix_exp", "cayley", "householder"]
LIBS = ((plugrad, orthogonal), (torch, torch_orthogonal))


def _holder(lib: Any, values: np.ndarray) -> Any:
    module = lib.nn.Module()
    module.weight = lib.nn.Parameter(lib.tensor(values))
    return module


def _state(lib, orth, values, gradient, options, base=None, assigned=None) -> dict[str, Any]:
    """What registration, a backward and an assignment give, as NumPy arrays."""
    module = _holder(lib, values)
    orth(module, **options)
    parametrization = module.parametrizations.weight
    if base is not None:  # (a rectangular base is completed by random columns: share one)
        parametrization[0].base = lib.tensor(base)
    found = {"weight": module.weight.detach(), "original": parametrization.original.detach()}
    loss = (module.weight * lib.tensor(gradient)).sum()
    (loss.real if np.iscomplexobj(values) else loss).backward()
    found["grad"] = parametrization.original.grad
    if getattr(parametrization[0], "base", None) is not None:
        found["base"] = parametrization[0].base
    if assigned is not None:
        with lib.no_grad():
            module.weight = lib.tensor(assigned)
        found["assigned"] = module.weight.detach()
        found["assigned original"] = parametrization.original.detach()
    return {key: value.numpy().copy() for key, value in found.items()}


def _assert_orthonormal(weight: np.ndarray) -> None:
    wide = weight.shape[-2] < weight.shape[-1]
    gram = (
        weight @ np.swapaxes(weight, -1, -2).conj()
        if wide
        else np.swapaxes(weight, -1, -2).conj() @ weight
    )
    identity = np.broadcast_to(np.eye(min(weight.shape[-2:])), gram.shape)
    np.testing.assert_allclose(gram, identity, atol=1e-12)


@pytest.mark.parametrize("orthogonal_map", MAPS)
@pytest.mark.parametrize("use_trivialization", [True, False])
@pytest.mark.parametrize("shape", [(3, 3), (5, 2), (2, 4), (2, 3, 3)])
def test_orthogonal_agrees_with_torch(orthogonal_map, use_trivialization, shape) -> None:
    # orthogonal was missing.
    rng = np.random.default_rng(sum(shape))
    values, assigned, gradient = (rng.standard_normal(shape) for _ in range(3))
    options = {"orthogonal_map": orthogonal_map, "use_trivialization": use_trivialization}
    assignable = use_trivialization or orthogonal_map == "householder"
    ours = _state(
        plugrad, orthogonal, values, gradient, options, None, assigned if assignable else None
    )
    # A rectangular base has random columns (PyTorch's too): torch's run is given ours.
    base = ours.get("base") if shape[-1] != shape[-2] else None
    theirs = _state(
        torch, torch_orthogonal, values, gradient, options, base, assigned if assignable else None
    )
    assert set(ours) == set(theirs)
    for key in ours:
        np.testing.assert_allclose(ours[key], theirs[key], atol=1e-12, err_msg=key)
    _assert_orthonormal(ours["weight"])
    if assignable:
        _assert_orthonormal(ours["assigned"])
    else:  # the map has no inverse: refused as PyTorch's, typed
        for lib, orth in LIBS:
            module = _holder(lib, values)
            orth(module, **options)
            with pytest.raises(NotImplementedError), lib.no_grad():
                module.weight = lib.tensor(assigned)
        module = orthogonal(_holder(plugrad, values), **options)
        with pytest.raises(PlugradError, match="use_trivialization=True"), plugrad.no_grad():
            module.weight = plugrad.tensor(assigned)
        np.testing.assert_allclose(module.parametrizations.weight.original.detach().numpy(), values)


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley"])
def test_a_complex_weight_stays_unitary_as_torchs(orthogonal_map) -> None:
    rng = np.random.default_rng(3)
    values = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    assigned = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    gradient = rng.standard_normal((3, 3))
    options = {"orthogonal_map": orthogonal_map}
    ours, theirs = (
        _state(lib, orth, values, gradient, options, None, assigned) for lib, orth in LIBS
    )
    for key in ours:
        np.testing.assert_allclose(ours[key], theirs[key], atol=1e-12, err_msg=key)
    _assert_orthonormal(ours["assigned"])


@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_training_keeps_the_weight_orthogonal_and_follows_torch(orthogonal_map) -> None:
    rng = np.random.default_rng(7)
    values, x = rng.standard_normal((4, 4)), rng.standard_normal((6, 4))
    weights = []
    for lib, orth in LIBS:
        layer = lib.nn.Linear(4, 4, bias=False, dtype=lib.float64)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(values))
        orth(layer, orthogonal_map=orthogonal_map)
        optimizer = lib.optim.SGD(layer.parameters(), lr=0.2)
        for _ in range(5):
            optimizer.zero_grad()
            (layer(lib.tensor(x)) ** 3).sum().backward()
            optimizer.step()
        weights.append(layer.weight.detach().numpy())
    np.testing.assert_allclose(weights[0], weights[1], atol=1e-10)
    _assert_orthonormal(weights[0])
    assert not np.allclose(weights[0], _state(plugrad, orthogonal, values, x[:4], {})["weight"])


def test_orthogonal_refuses_what_torch_refuses_with_typed_errors() -> None:
    for lib, orth in LIBS:
        with pytest.raises(ValueError):
            orth(lib.nn.Linear(2, 2), orthogonal_map="qr")
        with pytest.raises(ValueError):
            orth(lib.nn.Linear(2, 2), name="scale")
        with pytest.raises(ValueError):
            orth(_holder(lib, np.ones(3)))
        with pytest.raises(ValueError):
            orth(_holder(lib, np.ones((2, 2)) * 1j), orthogonal_map="householder")
        module = orth(lib.nn.Linear(2, 3))
        with pytest.raises(ValueError), lib.no_grad():
            module.weight = lib.ones(2, 3)
    with pytest.raises(InvalidArgumentError, match="'matrix_exp', 'cayley' or 'householder'"):
        orthogonal(plugrad.nn.Linear(2, 2), orthogonal_map="qr")
    with pytest.raises(ShapeError, match="1 dimension"):
        orthogonal(_holder(plugrad, np.ones(3)))
    layer = orthogonal(plugrad.nn.Linear(2, 3))
    before = layer.parametrizations.weight.original.tolist()
    with pytest.raises(ShapeError, match=r"shape \(3, 2\)"), plugrad.no_grad():
        layer.weight = plugrad.ones(2, 3)
    assert layer.parametrizations.weight.original.tolist() == before
