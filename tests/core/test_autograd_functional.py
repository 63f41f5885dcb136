"""plugrad.autograd.functional against torch.autograd.functional: values and nesting."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad

torch = pytest.importorskip("torch")

A = np.array([1.0, 2.0])
B = np.array([0.5, -1.0, 3.0])


def _pair(a, b):
    return a * b.sum(), (a**2).sum() * b


def _scalar(a, b):
    return (a**3).sum() * b.sum() + (a.sum() * b**2).sum()


# name -> call(lib, a, b); both libraries run it and must give the same nesting and values.
CALLS = {
    "jacobian": lambda lib, a, b: lib.autograd.functional.jacobian(lambda t: t.exp() * t[0], a),
    "jacobian of tuples": lambda lib, a, b: lib.autograd.functional.jacobian(_pair, (a, b)),
    # (PyTorch's forward mode warns of its own internals; its results are the reverse mode's.)
    "jacobian forward-mode": lambda lib, a, b: lib.autograd.functional.jacobian(
        _pair, (a, b), strategy="forward-mode" if lib is plugrad else "reverse-mode"
    ),
    "hessian": lambda lib, a, b: lib.autograd.functional.hessian(lambda t: (t**3).prod(), a),
    "hessian of tuples": lambda lib, a, b: lib.autograd.functional.hessian(_scalar, (a, b)),
    "vjp": lambda lib, a, b: lib.autograd.functional.vjp(
        lambda x, y: x[:, None] * y, (a, b), lib.ones(2, 3, dtype=lib.float64)
    ),
    "vjp of a scalar": lambda lib, a, b: lib.autograd.functional.vjp(lambda x: (x**2).sum(), a),
    "jvp": lambda lib, a, b: lib.autograd.functional.jvp(
        lambda x: x.sin(), a, lib.ones(2, dtype=lib.float64)
    ),
    "hvp": lambda lib, a, b: lib.autograd.functional.hvp(
        _scalar, (a, b), (lib.ones(2, dtype=lib.float64), lib.ones(3, dtype=lib.float64))
    ),
    "vhp": lambda lib, a, b: lib.autograd.functional.vhp(
        lambda t: (t**3).sum(), a, lib.ones(2, dtype=lib.float64)
    ),
}


def _structure(value):
    if isinstance(value, tuple | list):
        return tuple(_structure(v) for v in value)
    return ("tensor", tuple(value.shape), np.asarray(value.detach().numpy()))


def _assert_same(ours, theirs):
    if theirs[0] != "tensor":
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs, strict=True):
            _assert_same(o, t)
        return
    assert ours[:2] == theirs[:2]
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-12)


@pytest.mark.parametrize("name", list(CALLS))
def test_the_functional_api_gives_pytorchs_results(name) -> None:
    ours = CALLS[name](plugrad, plugrad.asarray(A), plugrad.asarray(B))
    theirs = CALLS[name](torch, torch.tensor(A), torch.tensor(B))
    _assert_same(_structure(ours), _structure(theirs))


def test_results_leave_the_graph_unless_create_graph() -> None:
    x = plugrad.asarray(A, requires_grad=True)
    assert not plugrad.autograd.functional.jacobian(lambda t: t * t, x).requires_grad
    kept = plugrad.autograd.functional.jacobian(lambda t: t * t, x, create_graph=True)
    assert kept.requires_grad
    import plugrad.autograd.functional as imported

    assert imported is plugrad.autograd.functional
    with pytest.raises(ValueError, match="needs v"):
        plugrad.autograd.functional.vjp(lambda t: t * 2, x)
    with pytest.raises(TypeError, match="Tensor"):
        plugrad.autograd.functional.jacobian(lambda t: t, [1.0])
