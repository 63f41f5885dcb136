"""Backward passes, function transforms and gradcheck against PyTorch, where gradients
once vanished or were taken with respect to the wrong uses of a tensor."""

from __future__ import annotations

import pytest
from functions import Square

import plugrad
from plugrad.errors import GradcheckError

torch = pytest.importorskip("torch")

LIBRARIES = [(plugrad, plugrad.func), (torch, torch.func)]


def _both(program):
    ours, theirs = (program(lib, func) for lib, func in LIBRARIES)
    assert ours == theirs
    return ours


def test_roots_sharing_a_node_each_give_their_gradient():
    def program(lib, func):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        a, b = (x * x).unbind(0)
        lib.autograd.backward([a, b], [lib.ones(2), lib.ones(2) * 2])
        first = x.grad.tolist()
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        lib.autograd.backward([y, y], retain_graph=True)
        (again,) = lib.autograd.grad([y, y], x)
        rows = func.jacrev(lambda t: tuple((t * t).unbind(0)))(lib.ones(2, 2) * 3)
        return first, x.grad.tolist(), again.tolist(), [r.tolist() for r in rows]

    _both(program)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's forward mode, inside
def test_a_transform_differentiates_its_argument_not_other_uses_of_the_tensor():
    def program(lib, func):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = lib.tensor([0.5, -1.0], requires_grad=True)
        return [
            func.grad(lambda y: (x * y).sum())(x).tolist(),
            func.grad(lambda a, b: (a * b).sum())(x, x).tolist(),
            func.jacrev(lambda y: x * y)(x).tolist(),
            func.jacfwd(lambda y: x * y)(x).tolist(),
            func.hessian(lambda y: (x * y * y).sum())(x).tolist(),
            func.grad(lambda s: func.grad(lambda y: s * y)(s))(lib.tensor(2.0)).item(),
            lib.autograd.functional.hessian(lambda v: (w * v * v).sum(), w).tolist(),
        ]

    _both(program)


def test_results_keep_their_graph_to_a_closed_over_parameter():
    def program(lib, func):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        g = func.grad(lambda x: (w * x * x).sum())(lib.tensor([3.0, 4.0]))
        out, vjp_fn = func.vjp(lambda x: w * x, lib.tensor([3.0, 4.0]))
        (cotangent_grad,) = vjp_fn(lib.ones(2))
        (g.sum() + out.sum() + cotangent_grad.sum()).backward()
        return g.requires_grad, w.grad.tolist()

    assert _both(program)[0] is True


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_leafs_hook_sees_the_gradient_grad_returns(create_graph):
    def program(lib, func):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: g * 10)
        (g,) = lib.autograd.grad((x * x).sum(), x, create_graph=create_graph)
        second = lib.autograd.grad(g.sum(), x)[0].tolist() if create_graph else None
        return g.tolist(), second

    _both(program)


class _IgnoresItsOutputGradient(Square):
    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 2 * x  # should be grad_output * 2 * x


def test_gradcheck_fails_a_backward_that_ignores_its_output_gradient():
    x = plugrad.tensor(0.7, dtype=plugrad.float64, requires_grad=True)
    assert (
        plugrad.autograd.gradcheck(_IgnoresItsOutputGradient.apply, (x,), raise_exception=False)
        is False
    )
    with pytest.raises(GradcheckError, match="does not multiply by its output gradient"):
        plugrad.autograd.gradcheck(_IgnoresItsOutputGradient.apply, (x,))
    assert plugrad.autograd.gradcheck(lambda t: t * t, (x,))


def test_an_argument_named_twice_in_argnums_is_refused():
    with pytest.raises(plugrad.errors.InvalidArgumentError, match="twice"):
        plugrad.func.grad(lambda a, b: (a * b).sum(), argnums=(0, -2))(
            plugrad.ones(2), plugrad.ones(2)
        )


@pytest.mark.parametrize(
    "transform",
    [
        lambda z: plugrad.func.jacrev(lambda t: t * t)(z),
        lambda z: plugrad.func.jacfwd(lambda t: t * t)(z),
        lambda z: plugrad.func.hessian(lambda t: (t * t).sum().real)(z),
        lambda z: plugrad.autograd.functional.jacobian(lambda t: t * t, z),
        lambda z: plugrad.func.jacrev(lambda t: t * (1 + 1j))(z.real),
        lambda z: plugrad.func.grad(lambda t: (t * t).sum())(z),
    ],
)
def test_complex_jacobians_and_complex_losses_are_refused(transform):
    # (jacrev and jacfwd of one complex function gave conjugate answers; torch.func refuses)
    with pytest.raises(plugrad.errors.DtypeError, match="complex"):
        transform(plugrad.tensor([1 + 2j, 3 - 1j]))


def test_the_gradient_of_a_real_loss_of_complex_inputs_is_pytorchs():
    def program(lib, func):
        z = lib.tensor([1 + 2j, 3 - 1j])
        return func.grad(lambda t: (t * t).sum().real)(z).tolist()

    _both(program)


def _as_lists(value):
    """A result's structure with its Tensors as nested lists (rounded: two libraries' sums)."""
    if isinstance(value, dict):
        return {key: _as_lists(part) for key, part in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_as_lists(part) for part in value)
    return torch.tensor(value.tolist(), dtype=torch.float64).round(decimals=10).tolist()


STRUCTURED_TRANSFORMS = {
    # torch.func's pattern: the Hessian of a loss in a module's parameters, as a dict of dicts
    "hessian of functional_call": lambda lib, func, model, x: func.hessian(
        lambda p: (func.functional_call(model, p, (x,)) ** 2).sum()
    )(dict(model.named_parameters())),
    "jacrev of a dict output, argnums tuple": lambda lib, func, model, x: func.jacrev(
        lambda p, y: {"out": func.functional_call(model, p, (y,)).tanh(), "w": p["weight"].sum()},
        argnums=(0, 1),
    )(dict(model.named_parameters()), x),
    "jacfwd of a tuple argument": lambda lib, func, model, x: func.jacfwd(
        lambda t: t[0] * t[1].sum()
    )((x[0], model.weight)),
    "hessian of a list argument": lambda lib, func, model, x: func.hessian(
        lambda t: (t[0] ** 3).sum() * t[1].sum()
    )([x[0], model.bias]),
    "vjp in the output's structure": lambda lib, func, model, x: (
        lambda out, vjp_fn: (out, vjp_fn({"y": out["y"] * 0 + 0.5, "n": out["n"] * 0 + 0.7}))
    )(*func.vjp(lambda p: {"y": p["w"].exp(), "n": p["b"].sum()},
                {"w": model.weight, "b": model.bias})),
}  # fmt: skip


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's forward mode, inside
@pytest.mark.parametrize("name", list(STRUCTURED_TRANSFORMS))
def test_transforms_take_and_give_dicts_lists_and_tuples_as_torch_func(name):
    # (jacrev, jacfwd, hessian and vjp refused anything but Tensors)
    def program(lib, func):
        lib.manual_seed(0)
        model = lib.nn.Linear(3, 2).double()
        with lib.no_grad():
            model.weight.copy_(lib.tensor([[0.5, -1.0, 0.25], [1.5, 0.75, -0.5]]))
            model.bias.copy_(lib.tensor([0.1, -0.2]))
        x = lib.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]], dtype=lib.float64)
        return _as_lists(STRUCTURED_TRANSFORMS[name](lib, func, model, x))

    _both(program)


def test_a_cotangent_of_another_structure_is_a_type_error_naming_it():
    _, vjp_fn = plugrad.func.vjp(lambda p: {"y": p["w"] * 2, "n": p["w"].sum()},
                                 {"w": plugrad.ones(2)})  # fmt: skip
    with pytest.raises(TypeError, match=r"keys \['y'\], where the output has \['y', 'n'\]"):
        vjp_fn({"y": plugrad.ones(2)})
