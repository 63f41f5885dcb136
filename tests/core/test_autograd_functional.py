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


def _ones(lib, n):
    return lib.ones(n, dtype=lib.float64)


def _functional(lib):
    return lib.autograd.functional


# name -> call(lib, a, b, strict, create_graph). Each covers one way an output can be
# independent of an input (or a gradient of an input), or none.
STRICT_CALLS = {
    "vjp, an unused input": lambda lib, a, b, s, cg: _functional(lib).vjp(
        lambda x, y: x * 2, (a, b), _ones(lib, 2), cg, s
    ),
    "vjp, an output computed from no input": lambda lib, a, b, s, cg: _functional(lib).vjp(
        lambda x, y: (x * y.sum(), _ones(lib, 2)), (a, b), (_ones(lib, 2), _ones(lib, 2)), cg, s
    ),
    "vjp, the dependence cut by detach": lambda lib, a, b, s, cg: _functional(lib).vjp(
        lambda x: x.detach() * 2, a, _ones(lib, 2), cg, s
    ),
    "vjp, connected": lambda lib, a, b, s, cg: _functional(lib).vjp(
        lambda x, y: x * y.sum(), (a, b), _ones(lib, 2), cg, s
    ),
    "vjp, linear": lambda lib, a, b, s, cg: _functional(lib).vjp(
        lambda x: x * 2, a, _ones(lib, 2), cg, s
    ),
    "jvp, an unused input": lambda lib, a, b, s, cg: _functional(lib).jvp(
        lambda x, y: x**2, (a, b), (_ones(lib, 2), _ones(lib, 3)), cg, s
    ),
    "jvp, an output computed from no input": lambda lib, a, b, s, cg: _functional(lib).jvp(
        lambda x: (x**2, _ones(lib, 3)), a, _ones(lib, 2), cg, s
    ),
    "jvp, connected": lambda lib, a, b, s, cg: _functional(lib).jvp(
        lambda x: x.sin(), a, _ones(lib, 2), cg, s
    ),
    "jacobian, an independent block": lambda lib, a, b, s, cg: _functional(lib).jacobian(
        lambda x, y: (x * 2, y**2), (a, b), cg, s
    ),
    "jacobian, connected": lambda lib, a, b, s, cg: _functional(lib).jacobian(
        lambda x, y: (x * y.sum(), y**2 * x.sum()), (a, b), cg, s
    ),
    "jacobian, linear": lambda lib, a, b, s, cg: _functional(lib).jacobian(
        lambda x: x * 2, a, cg, s
    ),
    "hessian, separable": lambda lib, a, b, s, cg: _functional(lib).hessian(
        lambda x, y: (x**3).sum() + (y**3).sum(), (a, b), cg, s
    ),
    "hessian, linear in one input": lambda lib, a, b, s, cg: _functional(lib).hessian(
        lambda x, y: x.sum() * 3 + (y**3).sum() * x.sum(), (a, b), cg, s
    ),
    "hessian, an unused input": lambda lib, a, b, s, cg: _functional(lib).hessian(
        lambda x, y: (x**3).sum(), (a, b), cg, s
    ),
    "hessian, cubic": lambda lib, a, b, s, cg: _functional(lib).hessian(
        lambda x: (x**3).prod(), a, cg, s
    ),
    "hessian, quadratic": lambda lib, a, b, s, cg: _functional(lib).hessian(
        lambda x: (x**2).sum(), a, cg, s
    ),
    "hvp, linear": lambda lib, a, b, s, cg: _functional(lib).hvp(
        lambda x: (x * 2).sum(), a, _ones(lib, 2), cg, s
    ),
    "hvp, an unused input": lambda lib, a, b, s, cg: _functional(lib).hvp(
        lambda x, y: (x**3).sum(), (a, b), (_ones(lib, 2), _ones(lib, 3)), cg, s
    ),
    "hvp, connected": lambda lib, a, b, s, cg: _functional(lib).hvp(
        _scalar, (a, b), (_ones(lib, 2), _ones(lib, 3)), cg, s
    ),
    "hvp, quadratic": lambda lib, a, b, s, cg: _functional(lib).hvp(
        lambda x: (x**2).sum(), a, _ones(lib, 2), cg, s
    ),
    "vhp, an unused input": lambda lib, a, b, s, cg: _functional(lib).vhp(
        lambda x, y: (x**3).sum(), (a, b), (_ones(lib, 2), _ones(lib, 3)), cg, s
    ),
    "vhp, connected": lambda lib, a, b, s, cg: _functional(lib).vhp(
        lambda x: (x**3).sum(), a, _ones(lib, 2), cg, s
    ),
}


@pytest.mark.parametrize("create_graph", [False, True], ids=["", "create_graph"])
@pytest.mark.parametrize("name", list(STRICT_CALLS))
def test_strict_raises_where_pytorch_does_and_leaves_the_inputs_alone(name, create_graph) -> None:
    call = STRICT_CALLS[name]
    a = plugrad.asarray(A, requires_grad=True)
    b = plugrad.asarray(B)
    try:
        call(torch, torch.tensor(A, requires_grad=True), torch.tensor(B), True, create_graph)
    except RuntimeError:
        with pytest.raises(plugrad.errors.IndependentInputError, match="strict=False") as caught:
            call(plugrad, a, b, True, create_graph)
        assert isinstance(caught.value, RuntimeError)
    else:
        call(plugrad, a, b, True, create_graph)
    assert a.grad is None and a.requires_grad and a.grad_fn is None
    assert b.grad is None and not b.requires_grad
    np.testing.assert_array_equal(a.detach().numpy(), A)
    np.testing.assert_array_equal(b.numpy(), B)
    # Without strict, the same call gives PyTorch's results (zeros where independent).
    ours = call(plugrad, a, b, False, create_graph)
    theirs = call(torch, torch.tensor(A), torch.tensor(B), False, create_graph)
    _assert_same(_structure(ours), _structure(theirs))
    assert a.grad is None


def test_strict_messages_name_the_output_and_the_input() -> None:
    functional = plugrad.autograd.functional
    x, y = plugrad.asarray(A), plugrad.asarray(B)
    with pytest.raises(plugrad.errors.IndependentInputError, match="depends on input 1"):
        functional.vjp(lambda p, q: p * 2, (x, y), plugrad.ones(2), strict=True)
    with pytest.raises(plugrad.errors.IndependentInputError, match="output 1 of the function"):
        functional.jvp(lambda p: (p * 2, plugrad.ones(1)), x, plugrad.ones(2), strict=True)
    with pytest.raises(
        plugrad.errors.IndependentInputError,
        match="output 1 of the function does not depend on input 0",
    ):
        functional.jacobian(lambda p, q: (p * q.sum(), q * 2), (x, y), strict=True)
    # Forward mode gives the same answer (PyTorch refuses strict there; ours checks the same).
    with pytest.raises(plugrad.errors.IndependentInputError, match="does not depend on input 1"):
        functional.jacobian(lambda p, q: p * 2, (x, y), strict=True, strategy="forward-mode")
    with pytest.raises(
        plugrad.errors.IndependentInputError,
        match="the gradient with respect to input 0 does not depend on input 1",
    ):
        functional.hessian(lambda p, q: (p**3).sum() + (q**3).sum(), (x, y), strict=True)
    with pytest.raises(
        plugrad.errors.IndependentInputError,
        match="the gradient with respect to input 0 depends on no input",
    ):
        functional.hvp(lambda p: (p * 2).sum(), x, plugrad.ones(2), strict=True)
    # A gradient computed from a captured tensor only: it reaches no input.
    w = plugrad.asarray(A, requires_grad=True)
    with pytest.raises(
        plugrad.errors.IndependentInputError, match="no gradient depends on input 0"
    ):
        functional.hvp(lambda p: (p * w).sum(), x, plugrad.ones(2), strict=True)
    assert w.grad is None
    with pytest.raises(plugrad.errors.IndependentInputError, match="create_graph=False"):
        functional.vjp(lambda p: p * 2, x, plugrad.ones(2), create_graph=True, strict=True)
    product = functional.vjp(lambda p: p**2, x, plugrad.ones(2), create_graph=True, strict=True)[1]
    assert product.requires_grad and not x.requires_grad


def test_mistakes_get_typed_errors_that_say_the_fix() -> None:
    functional = plugrad.autograd.functional
    x = plugrad.asarray(A)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="pass v= a tensor shaped like"):
        functional.vjp(lambda t: t * 2, x)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match=r"jvp\(\) needs v .* input"):
        functional.jvp(lambda t: t * 2, x)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match=r"vhp\(\) needs v"):
        functional.vhp(lambda t: (t * 2).sum(), x)
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="'reverse-mode' or"):
        functional.jacobian(lambda t: t, x, strategy="backward")
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="outer_jacobian_strategy"):
        functional.hessian(lambda t: t.sum(), x, outer_jacobian_strategy="sideways")
    with pytest.raises(plugrad.errors.InvalidArgumentError, match=r"return its \.sum\(\)"):
        functional.hvp(lambda t: t * 2, x, plugrad.ones(2))
    with pytest.raises(plugrad.errors.ShapeError, match="shaped like its primal"):
        functional.jvp(lambda t: t * 2, x, plugrad.ones(3))
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="one tangent per primal"):
        functional.hvp(lambda p, q: (p * q).sum(), (x, x), plugrad.ones(2))
    with pytest.raises(TypeError, match="v must be a Tensor"):
        functional.jvp(lambda t: t * 2, x, [1.0, 2.0])
    # Defaults for one-element inputs and outputs, and the outer strategy honoured.
    one = plugrad.asarray(np.array([2.0]))
    assert functional.jvp(lambda t: t**2, one)[1].item() == 4.0
    assert functional.vjp(lambda t: (t**2,), one)[1].item() == 4.0
    forward = functional.hessian(lambda t: (t**3).sum(), x, outer_jacobian_strategy="forward-mode")
    np.testing.assert_allclose(forward.numpy(), np.diag(6 * A))
