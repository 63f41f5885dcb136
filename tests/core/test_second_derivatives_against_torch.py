"""Second derivatives at the points where a first-derivative formula special-cases, against
``torch``.

Each case once gave a silently different number: ``cumprod`` with two zeros in a row lost
the second derivative through the later zeros (its gradient masked where the zeros were,
a constant to the next derivative), ``smooth_l1_loss`` squared ``|d|`` and had a second
derivative of 0 at ``input == target``, ``logit``'s quotient rule gave finite slopes
outside ``[0, 1]`` where the logit is NaN, and ``sinc``'s slope at 0 was a constant 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import plugrad

torch = pytest.importorskip("torch")

# NumPy warns of the divisions by zero at the singular points the cases are about.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# name -> (point, program(lib, x) -> a tensor whose sum is differentiated twice)
# fmt: off
CASES: dict[str, tuple[Any, Callable[..., Any]]] = {
    "cumprod, two zeros at the end": ([2.0, 0.0, 0.0], lambda lib, x: lib.cumprod(x, 0)),
    "cumprod, zeros apart": ([0.0, 1.5, 0.0], lambda lib, x: lib.cumprod(x, 0)),
    "cumprod, zeros first": ([0.0, 0.0, 2.0], lambda lib, x: lib.cumprod(x, 0)),
    "cumprod, three zeros": ([0.0, 0.0, 0.0], lambda lib, x: lib.cumprod(x, 0)),
    "cumprod, long": ([2.0, 3.0, 0.0, 0.0, 4.0, 0.5, 0.0],
                      lambda lib, x: lib.cumprod(x, 0) * lib.arange(1, 8, dtype=lib.float64)),
    "cumprod along the last dim": ([[0.0, 3.0, 0.0, 2.0], [1.0, 0.0, 2.0, 0.0]],
                                   lambda lib, x: x.cumprod(dim=-1)),
    "cumprod along the first dim": ([[0.0, 3.0], [0.0, 2.0], [5.0, 0.0]],
                                    lambda lib, x: x.cumprod(0) ** 2),
    "cumprod without zeros": ([1.5, -2.0, 0.5, 3.0], lambda lib, x: lib.cumprod(x, 0)),
    "smooth_l1_loss at input == target": (
        [1.0, 1.2, 3.0, 0.9],
        lambda lib, x: lib.nn.functional.smooth_l1_loss(
            x, lib.ones(4, dtype=lib.float64), reduction="none", beta=0.5)),
    "logit in, at and outside [0, 1]": ([0.0, 1.0, 1.5, -0.5, 0.3, 0.97], lambda lib, x: x.logit()),
    # (At 0 and 1 PyTorch's reverse mode gives NaN where the clamped logit is constant, its
    # forward mode and plugrad 0: see test_gradients_at_edges_against_torch.py.)
    "logit with eps": ([0.05, 0.3, 0.97, 1.5], lambda lib, x: lib.logit(x, 0.1)),
}
# fmt: on


def _hessian(lib: Any, point: Any, program: Callable[..., Any]) -> tuple[np.ndarray, ...]:
    x = lib.tensor(point, dtype=lib.float64, requires_grad=True)
    (grad,) = lib.autograd.grad(program(lib, x).sum(), x, create_graph=True)
    rows = [
        lib.autograd.grad(component, x, retain_graph=True)[0].detach().numpy()
        for component in grad.reshape(-1)
    ]
    return grad.detach().numpy(), np.stack(rows)


@pytest.mark.parametrize("name", list(CASES))
def test_second_derivatives_are_pytorchs(name: str) -> None:
    point, program = CASES[name]
    grad, hessian = _hessian(plugrad, point, program)
    expected_grad, expected_hessian = _hessian(torch, point, program)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(hessian, expected_hessian, rtol=1e-12, atol=1e-12)


def test_the_second_derivative_of_sinc_at_zero_is_sincs() -> None:
    # PyTorch gives NaN there; the true value is -pi**2 / 3.
    x = plugrad.tensor([0.0, 0.25], dtype=plugrad.float64, requires_grad=True)
    (grad,) = plugrad.autograd.grad(x.sinc().sum(), x, create_graph=True)
    (second,) = plugrad.autograd.grad(grad.sum(), x)
    assert grad.tolist()[0] == 0.0 and math.copysign(1.0, grad.tolist()[0]) == 1.0
    t = torch.tensor([0.25], dtype=torch.float64, requires_grad=True)
    (expected,) = torch.autograd.grad(t.sinc(), t, create_graph=True)
    (expected_second,) = torch.autograd.grad(expected, t)
    assert second.tolist() == pytest.approx([-(math.pi**2) / 3, float(expected_second)], rel=1e-12)


def test_cumprod_gradients_with_include_initial_and_complex_inputs() -> None:
    values = np.array([[1 + 1j, 0, 2 - 1j, 0], [0.5j, 3, 0, 1]])
    x = plugrad.tensor(values, requires_grad=True)
    t = torch.tensor(values, requires_grad=True)
    plugrad.cumulative_prod(x, axis=1, include_initial=True).abs().sum().backward()
    torch.cumprod(t, 1).abs().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def _scatter_prod(lib: Any, x: Any, source: Any, include_self: bool) -> Any:
    index = lib.tensor([0, 0, 1, 1])
    return x.scatter_reduce(0, index, source, "prod", include_self=include_self)


def _scatter_prod_derivatives(lib: Any, include_self: bool) -> list[np.ndarray]:
    x = lib.tensor([0.5, 2.0], dtype=lib.float64, requires_grad=True)
    source = lib.tensor([0.0, 1.5, -2.0, 3.0], dtype=lib.float64, requires_grad=True)  # a lone 0
    out = _scatter_prod(lib, x, source, include_self).sum()
    grads = lib.autograd.grad(out, (x, source), create_graph=True)
    flat = lib.cat([g.reshape(-1) for g in grads])
    found = [flat.detach().numpy()]
    for component in flat:
        rows = lib.autograd.grad(component, (x, source), retain_graph=True, allow_unused=True)
        found.extend(np.zeros(2) if r is None else r.detach().numpy() for r in rows)
    return found


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_second_derivatives_with_a_lone_zero_are_pytorchs(include_self):
    ours = _scatter_prod_derivatives(plugrad, include_self)
    theirs = _scatter_prod_derivatives(torch, include_self)
    assert len(ours) == len(theirs) == 13
    for mine, its in zip(ours, theirs):
        np.testing.assert_allclose(mine, its, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("self_values", "source_values", "include_self"),
    [([1.0, 1.0], [0.0, 0.0, 3.0, 2.0], True), ([0.0, 1.0], [0.0, 2.0, 3.0, 2.0], True),
     ([1.0, 1.0], [0.0, 0.0, 3.0, 2.0], False)],
)  # fmt: skip
def test_scatter_reduce_prod_refuses_second_derivatives_where_two_zeros_meet(
    self_values, source_values, include_self
):
    # The gradient there is 0 whichever way it is written, but its derivative is the other
    # zero's cofactor (2.0 at the first slot): it came out 0, silently. PyTorch refuses too.
    x = plugrad.tensor(self_values, dtype=plugrad.float64, requires_grad=True)
    source = plugrad.tensor(source_values, dtype=plugrad.float64, requires_grad=True)
    out = _scatter_prod(plugrad, x, source, include_self).sum()
    with pytest.raises(plugrad.errors.BackwardError, match="two or more zeros"):
        plugrad.autograd.grad(out, (x, source), create_graph=True)
    assert x.grad is None and source.grad is None
    # Once is fine, and gives PyTorch's gradients.
    grads = plugrad.autograd.grad(out, (x, source))
    tx = torch.tensor(self_values, dtype=torch.float64, requires_grad=True)
    ts = torch.tensor(source_values, dtype=torch.float64, requires_grad=True)
    expected = torch.autograd.grad(_scatter_prod(torch, tx, ts, include_self).sum(), (tx, ts))
    for mine, its in zip(grads, expected):
        np.testing.assert_array_equal(mine.numpy(), its.numpy())
