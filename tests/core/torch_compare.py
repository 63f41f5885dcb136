"""One program run with plugrad and with PyTorch from the same float leaf, and compared.

A program is ``program(lib, x)``: ``lib`` is ``plugrad`` or ``torch``, ``x`` a leaf
that requires grad. Both results must agree in dtype, shape and values (named
tuples and lists element by element), and so must the gradient of a weighted
sum of the float outputs with respect to ``x``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import plugrad

torch = pytest.importorskip("torch")  # the modules that import this one skip without it

Program = Callable[[Any, Any], Any]


def as_tensor(lib: Any, value: Any) -> Any:
    """``value`` as a tensor of ``lib`` (a copy for PyTorch, which shares NumPy's memory)."""
    value = np.asarray(value)
    return lib.asarray(value) if lib is plugrad else torch.from_numpy(value.copy())


def comparable(value: Any, containers: bool = False) -> Any:
    """Tensors as ``("tensor", dtype, shape, values)``; with ``containers`` a tuple or a
    list also says which it is."""
    if isinstance(value, plugrad.Tensor | torch.Tensor):
        array = np.asarray(value.detach().numpy())
        return ("tensor", str(array.dtype), array.shape, array)
    if isinstance(value, tuple | list):
        items = tuple(comparable(v, containers) for v in value)
        return (type(value).__name__, *items) if containers else items
    return value


def run(lib: Any, program: Program, leaf: Any, containers: bool = False) -> tuple[Any, Any]:
    """The program's result (comparable) and the gradient of its weighted float outputs."""
    x = as_tensor(lib, leaf)
    x.requires_grad_(True)
    out = program(lib, x)
    outs = list(out) if isinstance(out, tuple | list) else [out]
    loss = None
    for i, o in enumerate(outs):
        if isinstance(o, plugrad.Tensor | torch.Tensor) and o.requires_grad:
            weights = np.linspace(0.5, 1.5, int(np.prod(o.shape))).reshape(tuple(o.shape))
            weight = as_tensor(lib, weights * (i + 1))
            if lib is plugrad:  # on the output's device (x.cpu() moves off the default one)
                weight = plugrad.asarray(weights * (i + 1), device=o.device)
            term = (o * weight.to(o.dtype)).sum()
            loss = term if loss is None else loss + term
    if loss is not None:
        loss.backward()
    grad = None if x.grad is None else np.asarray(x.grad.detach().numpy())
    return comparable(out, containers), grad


def assert_same(ours: Any, theirs: Any, tolerance: float = 1e-12) -> None:
    """Equal dtypes, shapes and, within ``tolerance`` (relative and absolute), values."""
    if isinstance(theirs, tuple) and theirs and theirs[0] == "tensor":
        assert ours[:3] == theirs[:3]
        rtol = 1e-3 if theirs[1] == "float16" else tolerance
        np.testing.assert_allclose(ours[3], theirs[3], rtol=rtol, atol=tolerance)
    elif isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            assert_same(a, b, tolerance)
    else:
        assert ours == theirs


def assert_agrees(
    program: Program,
    leaf: Any,
    backend: str,
    containers: bool = False,
    tolerance: float = 1e-12,
    grad_tolerance: float = 1e-12,
) -> None:
    """Run ``program`` with plugrad on ``backend`` and with PyTorch; compare both results:
    values within ``tolerance``, gradients within ``grad_tolerance`` (relative)."""
    with plugrad.use_backend(backend):
        ours, our_grad = run(plugrad, program, leaf, containers)
    theirs, their_grad = run(torch, program, leaf, containers)
    assert_same(ours, theirs, tolerance)
    if their_grad is None:
        assert our_grad is None
    else:
        np.testing.assert_allclose(our_grad, their_grad, rtol=grad_tolerance, atol=tolerance)


def assert_arrays_agree(ours: list[Any], theirs: list[Any], rtol: float, atol: float) -> None:
    """Two lists of arrays agree one by one: shapes, and values (floats within ``rtol``/``atol``,
    NaN where the other has NaN; others exactly)."""
    assert len(ours) == len(theirs)
    for mine, its in zip(ours, theirs):
        mine, its = np.asarray(mine), np.asarray(its)
        assert mine.shape == its.shape
        if mine.dtype.kind in "fc":
            np.testing.assert_allclose(mine, its, rtol=rtol, atol=atol, equal_nan=True)
        else:
            assert (mine == its).all()


def random_matrix(rng: np.random.Generator, *shape: int, complex_: bool = False) -> np.ndarray:
    """Normal values of ``shape`` from ``rng`` (complex ones with ``complex_``)."""
    a = rng.normal(size=shape)
    return a + 1j * rng.normal(size=shape) if complex_ else a


def numpy_of(value: Any) -> np.ndarray:
    """A plugrad or PyTorch tensor's values as a NumPy array (a lazy conjugate resolved)."""
    if isinstance(value, torch.Tensor):
        return value.detach().resolve_conj().numpy()
    return np.asarray(value.detach().numpy())
