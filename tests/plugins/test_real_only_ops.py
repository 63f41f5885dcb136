"""Ops defined for real numbers only refuse complex inputs, as PyTorch does.

A backend may order complex numbers (NumPy compares them lexicographically:
``maximum``, ``sort``, ``>``) or fail with its own message; either would give
a PyTorch user a number or an error PyTorch never gives. Each case here is
refused by PyTorch too, and plugrad's refusal is a DtypeError naming the op
that leaves the input as it was.
"""

from __future__ import annotations

import pytest

import plugrad
from plugrad.errors import DtypeError
from plugrad.plugin_tables import state

Z = [[1 + 2j, 3 - 1j], [0.5 + 0j, -2 + 1j]]
R = [[1.0, -2.0], [0.5, 3.0]]

# name -> a call of the op, its function, method or operator form, given the namespace
# (plugrad or torch), a complex tensor z and a real tensor x
# fmt: off
CASES = {
    "maximum": lambda ns, z, x: ns.maximum(z, z),
    "minimum(real, complex)": lambda ns, z, x: ns.minimum(x, z),
    "maximum(real, complex scalar)": lambda ns, z, x: ns.maximum(x, 1j),
    "fmax": lambda ns, z, x: ns.fmax(z, z),
    "fmin": lambda ns, z, x: ns.fmin(z, z),
    "clamp": lambda ns, z, x: ns.clamp(z, 0, 1),
    "clip with tensor bounds": lambda ns, z, x: ns.clip(x, z, None),
    "x.clamp_()": lambda ns, z, x: z.clamp_(0, 1),
    "z > z": lambda ns, z, x: z > z,
    "z <= 1": lambda ns, z, x: z <= 1,
    "x < 1j": lambda ns, z, x: x < 1j,
    "greater_equal": lambda ns, z, x: ns.greater_equal(z, x),
    "z.lt(z)": lambda ns, z, x: z.lt(z),
    "max": lambda ns, z, x: ns.max(z),
    "z.max(dim=0)": lambda ns, z, x: z.max(dim=0),
    "z.amin(1)": lambda ns, z, x: z.amin(1),
    "z.aminmax()": lambda ns, z, x: z.aminmax(),
    "argmax": lambda ns, z, x: ns.argmax(z),
    "z.argmin(dim=1)": lambda ns, z, x: z.argmin(dim=1),
    "sort": lambda ns, z, x: ns.sort(z),
    "z.sort(descending=True)": lambda ns, z, x: z.sort(descending=True),
    "argsort": lambda ns, z, x: ns.argsort(z),
    "z.topk(1)": lambda ns, z, x: z.topk(1),
    "z.msort()": lambda ns, z, x: z.msort(),
    "z.median()": lambda ns, z, x: z.median(),
    "z.kthvalue(1)": lambda ns, z, x: z.kthvalue(1),
    "z.cummax(0)": lambda ns, z, x: z.cummax(0),
    "floor": lambda ns, z, x: ns.floor(z),
    "z.ceil()": lambda ns, z, x: z.ceil(),
    "trunc": lambda ns, z, x: ns.trunc(z),
    "frac": lambda ns, z, x: ns.frac(z),
    "atan2": lambda ns, z, x: ns.atan2(z, z),
    "hypot": lambda ns, z, x: ns.hypot(z, x),
    "copysign": lambda ns, z, x: ns.copysign(z, z),
    "logaddexp": lambda ns, z, x: ns.logaddexp(z, z),
    "remainder": lambda ns, z, x: ns.remainder(z, z),
    "z % 2": lambda ns, z, x: z % 2,
    "fmod": lambda ns, z, x: ns.fmod(z, z),
    "floor_divide": lambda ns, z, x: ns.floor_divide(z, z),
    "z // 2": lambda ns, z, x: z // 2,
    "signbit": lambda ns, z, x: ns.signbit(z),
    "nextafter": lambda ns, z, x: ns.nextafter(z, z),
    "heaviside": lambda ns, z, x: ns.heaviside(z, z),
    "deg2rad": lambda ns, z, x: ns.deg2rad(z),
    "rad2deg": lambda ns, z, x: ns.rad2deg(z),
    "xlogy": lambda ns, z, x: ns.xlogy(z, z),
    "searchsorted": lambda ns, z, x: ns.searchsorted(z[0], z[1]),
    "relu": lambda ns, z, x: ns.nn.functional.relu(z),
    "erf": lambda ns, z, x: ns.special.erf(z),
    "erfc": lambda ns, z, x: ns.special.erfc(z),
}
# fmt: on


@pytest.mark.parametrize("name", CASES)
def test_complex_input_is_refused_and_left_as_it_was(name):
    z = plugrad.tensor(Z, dtype=plugrad.complex128)
    x = plugrad.tensor(R, dtype=plugrad.float64)
    before, version = z.numpy().copy(), z._version
    with pytest.raises(DtypeError, match="complex"):
        CASES[name](plugrad, z, x)
    assert (z.numpy() == before).all() and z._version == version


# PyTorch also takes complex numbers in logaddexp, which the standard defines for real ones;
# plugrad refuses them (clearly) rather than pick a branch of the complex logarithm.
@pytest.mark.parametrize("name", [name for name in CASES if name != "logaddexp"])
def test_pytorch_refuses_the_same_call(name):
    torch = pytest.importorskip("torch")
    z = torch.tensor(Z, dtype=torch.complex128)
    x = torch.tensor(R, dtype=torch.float64)
    with pytest.raises((RuntimeError, TypeError, NotImplementedError)):
        CASES[name](torch, z, x)


def test_the_refusal_names_the_op_and_the_way_out():
    z = plugrad.tensor(Z, dtype=plugrad.complex64)
    with pytest.raises(DtypeError, match=r"maximum\(\).*complex64.*real numbers only.*abs\(x\)"):
        plugrad.maximum(z, z)


def test_real_inputs_are_unchanged_by_the_check():
    x = plugrad.tensor(R, dtype=plugrad.float32, requires_grad=True)
    y = plugrad.maximum(x, 0.0).sum() + x.sort(dim=1).values.sum()
    y.backward()
    assert x.grad.tolist() == [[2.0, 1.0], [2.0, 2.0]]
    assert (x > 0).tolist() == [[True, False], [True, True]]


def test_ops_that_take_complex_numbers_are_not_real_only():
    # The standard defines these for complex numbers too.
    for name in ("abs", "sign", "round", "exp", "equal", "not_equal", "add", "sum", "where"):
        assert not state.ops[name].real_only, name
    assert state.ops["maximum"].real_only and state.ops["sort"].real_only
