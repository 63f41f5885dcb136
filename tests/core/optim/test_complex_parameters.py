"""Complex parameters in the optimizers, against torch.optim: every optimizer but Adafactor
takes them, and those whose update is not linear in the gradient step each complex number
as two real ones (PyTorch's ``view_as_real``), keeping complex state tensors."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad import optim
from plugrad.errors import DtypeError, InPlaceModificationError

torch = pytest.importorskip("torch")

START = np.array([[1.0 + 2.0j, -0.5 + 0.25j, 0.0 - 1.5j], [0.3 - 1.0j, 2.0 + 0.1j, -1.2 + 0.0j]])
TARGET = np.array([[0.5 - 0.5j, 0.2 + 1.0j, -1.0 + 0.3j], [1.0 + 1.0j, -0.4 + 0.6j, 0.1 - 0.2j]])
REAL_START = np.array([0.7, -1.1, 0.4])

CASES = [
    ("Adam", {}),
    ("Adam", {"amsgrad": True, "weight_decay": 0.1}),
    ("Adam", {"maximize": True, "betas": (0.8, 0.95)}),
    ("Adam", {"weight_decay": 0.1, "amsgrad": True, "decoupled_weight_decay": True}),
    ("AdamW", {"amsgrad": True, "maximize": True}),
    ("Adamax", {"weight_decay": 0.1}),
    ("Adamax", {"maximize": True, "betas": (0.6, 0.9)}),
    ("NAdam", {"weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {"weight_decay": 0.1}),
    ("RAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True, "betas": (0.9, 0.9)}),
    ("RMSprop", {}),
    ("RMSprop", {"momentum": 0.9}),
    ("RMSprop", {"centered": True, "weight_decay": 0.1}),
    ("RMSprop", {"momentum": 0.8, "centered": True, "maximize": True, "alpha": 0.9}),
    ("Adagrad", {"lr_decay": 0.05, "initial_accumulator_value": 0.2}),
    ("Adagrad", {"weight_decay": 0.1, "maximize": True}),
    ("Adadelta", {"lr": 1.0, "rho": 0.8, "weight_decay": 0.1}),
    ("Adadelta", {"lr": 1.0, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True}),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]


def _loss(z, r, target, lib):
    """A loss whose real and imaginary gradients differ in scale and change sign."""
    if lib is torch:
        d = z - target
        return (d.abs() ** 2 * 3).sum() + (z * z * z).real.sum() * 0.1 + (z.imag.sum() * r).sum()
    d = z - target
    return (
        plugrad.sum(plugrad.abs(d) ** 2 * 3)
        + plugrad.sum(plugrad.real(z * z * z)) * 0.1
        + plugrad.sum(plugrad.sum(plugrad.imag(z)) * r)
    )


class _Pair:
    """The same parameters in plugrad and PyTorch: a complex matrix, a real vector and a
    complex parameter that never gets a gradient."""

    def __init__(self, start=START, real=REAL_START):
        self.z = plugrad.asarray(start.copy(), requires_grad=True)
        self.r = plugrad.asarray(real.copy(), requires_grad=True)
        self.unused = plugrad.asarray(np.array([1.0 - 1.0j]), requires_grad=True)
        self.tz = torch.tensor(start, requires_grad=True)
        self.tr = torch.tensor(real, requires_grad=True)
        self.tunused = torch.tensor(np.array([1.0 - 1.0j]), requires_grad=True)
        self.target = plugrad.asarray(TARGET)
        self.ttarget = torch.tensor(TARGET)

    def ours(self):
        return [self.z, self.r, self.unused]

    def theirs(self):
        return [self.tz, self.tr, self.tunused]

    def step(self, opt, reference, times):
        for _ in range(times):
            opt.zero_grad()
            _loss(self.z, self.r, self.target, plugrad).backward()
            opt.step()
            reference.zero_grad()
            _loss(self.tz, self.tr, self.ttarget, torch).backward()
            reference.step()


def _assert_same(pair, opt, reference, tolerance=None):
    tolerance = tolerance or {"rtol": 1e-10, "atol": 1e-12}
    for ours, theirs in zip(pair.ours(), pair.theirs()):
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **tolerance)
        expected = reference.state.get(theirs, {})
        state = opt.state.get(ours, {})
        assert sorted(state) == sorted(expected)
        for key, value in expected.items():
            if key == "step":
                assert state[key] == int(value)
            elif isinstance(value, torch.Tensor) and value.ndim == 0:
                # NAdam's mu_product: a float32 tensor, which PyTorch's load_state_dict casts
                # to float64 for a real parameter (plugrad keeps rounding it to float32).
                np.testing.assert_allclose(state[key], float(value), rtol=1e-7, err_msg=key)
            elif isinstance(value, torch.Tensor):
                assert state[key].dtype.name == str(value.dtype).removeprefix("torch."), key
                np.testing.assert_allclose(
                    state[key].numpy(), value.numpy(), err_msg=key, **tolerance
                )


@pytest.mark.parametrize(("name", "options"), CASES, ids=IDS)
def test_complex_parameters_match_torch(on_numpy, name, options) -> None:
    options = {"lr": 0.05, **options}
    pair = _Pair()
    opt = getattr(optim, name)(pair.ours(), **options)
    reference = getattr(torch.optim, name)(pair.theirs(), **options)
    pair.step(opt, reference, 20)
    _assert_same(pair, opt, reference)
    assert pair.unused.detach().numpy().tolist() == [1.0 - 1.0j]


@pytest.mark.parametrize(("name", "options"), CASES, ids=IDS)
def test_torch_complex_state_dict_loads_and_goes_on_the_same(on_numpy, name, options) -> None:
    options = {"lr": 0.05, **options}
    pair = _Pair()
    reference = getattr(torch.optim, name)(pair.theirs(), **options)
    scratch = getattr(torch.optim, name)(
        [torch.zeros_like(p, requires_grad=True) for p in pair.theirs()], **options
    )
    pair.step(scratch, reference, 7)  # (scratch: stepped on other tensors, unused)
    # plugrad's parameters where PyTorch's are now, and PyTorch's saved state.
    for ours, theirs in zip(pair.ours(), pair.theirs()):
        ours.data = plugrad.asarray(theirs.detach().numpy().copy())
    opt = getattr(optim, name)(pair.ours(), lr=0.7)
    opt.load_state_dict(reference.state_dict())
    buffers = [v for v in opt.state[pair.z].values() if isinstance(v, plugrad.Tensor)]
    assert buffers and all(v.dtype == plugrad.complex128 for v in buffers)
    pair.step(opt, reference, 10)
    _assert_same(pair, opt, reference)
    # And back: PyTorch continues from plugrad's state dict as plugrad does.
    again = getattr(torch.optim, name)(pair.theirs(), lr=0.7)
    saved = opt.state_dict()
    state = {
        index: {key: _as_torch(key, value) for key, value in entry.items()}
        for index, entry in saved["state"].items()
    }
    again.load_state_dict({"param_groups": saved["param_groups"], "state": state})
    pair.step(opt, again, 5)
    _assert_same(pair, opt, again)


def _as_torch(key, value):
    """A value of plugrad's optimizer state as PyTorch keeps it (numbers as 0-d tensors)."""
    if isinstance(value, plugrad.Tensor):
        return torch.tensor(value.numpy())
    if key in ("step", "mu_product"):
        return torch.tensor(float(value))
    return value


@pytest.mark.parametrize("name", sorted({name for name, _ in CASES}))
def test_complex_step_writes_in_place_and_bumps_the_version(on_numpy, name) -> None:
    z = plugrad.asarray(START.copy(), requires_grad=True)
    memory = z.array
    opt = getattr(optim, name)([z])
    product = z * z  # saves z for its backward
    before = z._version
    z.grad = plugrad.asarray(TARGET)
    opt.step()
    assert z.array is memory
    assert z._version == before + 1
    assert not np.array_equal(z.detach().numpy(), START)
    with pytest.raises(InPlaceModificationError):
        plugrad.sum(plugrad.real(product)).backward()


def test_adam_second_moment_is_per_part_not_the_modulus(on_numpy) -> None:
    z = plugrad.tensor([1.0 + 1.0j], dtype=plugrad.complex128, requires_grad=True)
    opt = optim.Adam([z], lr=0.1, betas=(0.0, 0.0))
    z.grad = plugrad.tensor([3.0 - 4.0j], dtype=plugrad.complex128)
    opt.step()
    # (|g|^2 would be 25; each part moves by lr, as a real parameter's first step does)
    assert opt.state[z]["exp_avg_sq"].numpy().tolist() == [9.0 + 16.0j]
    np.testing.assert_allclose(z.detach().numpy(), [0.9 + 1.1j], rtol=1e-7)


def test_compiled_complex_step_matches_torch(on_numpy) -> None:
    pair = _Pair()
    opt = optim.Adam(pair.ours(), lr=0.05, amsgrad=True)
    reference = torch.optim.Adam(pair.theirs(), lr=0.05, amsgrad=True)

    def step():
        opt.zero_grad()
        _loss(pair.z, pair.r, pair.target, plugrad).backward()
        opt.step()

    compiled = plugrad.compile(step)
    for _ in range(10):
        compiled()
        reference.zero_grad()
        _loss(pair.tz, pair.tr, pair.ttarget, torch).backward()
        reference.step()
    assert compiled.captures <= 2  # (the first step makes state: captured again once)
    _assert_same(pair, opt, reference)


def test_adafactor_still_refuses_complex_parameters(on_numpy) -> None:
    z = plugrad.asarray(START.copy(), requires_grad=True)
    with pytest.raises(DtypeError, match="Adafactor does not support complex parameters"):
        optim.Adafactor([z])
    reference_z = torch.tensor(START, requires_grad=True)
    reference = torch.optim.Adafactor([reference_z])  # (PyTorch refuses at the first step)
    reference_z.grad = torch.ones_like(reference_z)
    with pytest.raises(RuntimeError, match="complex"):
        reference.step()


# -- L-BFGS: complex elements as two entries of its flat vectors ------------------------------


def _lbfgs_closure(opt, pair, lib):
    def closure():
        opt.zero_grad()
        if lib is torch:
            z, r, target = pair.tz, pair.tr, pair.ttarget
            loss = ((z - target).abs() ** 4).sum() + (z * z).real.sum() + (r**4).sum()
            loss = loss + z.imag.sum() * r.sum()
        else:
            z, r, target = pair.z, pair.r, pair.target
            loss = plugrad.sum(plugrad.abs(z - target) ** 4) + plugrad.sum(plugrad.real(z * z))
            loss = loss + plugrad.sum(r**4) + plugrad.sum(plugrad.imag(z)) * plugrad.sum(r)
        loss.backward()
        return loss

    return closure


def _assert_same_lbfgs(pair, opt, reference):
    for ours, theirs in zip(pair.ours(), pair.theirs()):
        np.testing.assert_allclose(
            ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-9, atol=1e-12
        )
    state, expected = opt.state[pair.z], reference.state[pair.tz]
    for key in ("func_evals", "n_iter"):
        assert state[key] == expected[key], key
    for key in ("d", "prev_flat_grad"):
        assert state[key].dtype == plugrad.float64 and state[key].shape == (2 * 6 + 3 + 2,)
        np.testing.assert_allclose(state[key].numpy(), expected[key].numpy(), rtol=1e-8, atol=1e-12)
    for key in ("old_dirs", "old_stps"):
        assert len(state[key]) == len(expected[key])
        for ours, theirs in zip(state[key], expected[key]):
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(state["ro"], [float(v) for v in expected["ro"]], rtol=1e-8)
    np.testing.assert_allclose(float(state["t"]), float(expected["t"]), rtol=1e-8)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_complex_parameters_match_torch(on_numpy, line_search_fn) -> None:
    pair = _Pair()
    options = {"lr": 0.5, "max_iter": 5, "history_size": 3, "line_search_fn": line_search_fn}
    opt = optim.LBFGS(pair.ours(), **options)
    reference = torch.optim.LBFGS(pair.theirs(), **options)
    for _ in range(4):
        ours = opt.step(_lbfgs_closure(opt, pair, plugrad))
        theirs = reference.step(_lbfgs_closure(reference, pair, torch))
        np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-9)
    _assert_same_lbfgs(pair, opt, reference)
    assert pair.unused.detach().numpy().tolist() == [1.0 - 1.0j]


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_loads_torch_complex_state_and_goes_on_the_same(on_numpy, line_search_fn) -> None:
    pair = _Pair()
    options = {"lr": 0.5, "max_iter": 4, "history_size": 3, "line_search_fn": line_search_fn}
    reference = torch.optim.LBFGS(pair.theirs(), **options)
    for _ in range(2):
        reference.step(_lbfgs_closure(reference, pair, torch))
    for ours, theirs in zip(pair.ours(), pair.theirs()):
        ours.data = plugrad.asarray(theirs.detach().numpy().copy())
    opt = optim.LBFGS(pair.ours(), **options)
    opt.load_state_dict(reference.state_dict())
    assert opt.state[pair.z]["d"].dtype == plugrad.float64
    for _ in range(2):
        opt.step(_lbfgs_closure(opt, pair, plugrad))
        reference.step(_lbfgs_closure(reference, pair, torch))
    _assert_same_lbfgs(pair, opt, reference)


def test_lbfgs_refuses_complex_flat_vectors(on_numpy) -> None:
    z = plugrad.asarray(START.copy(), requires_grad=True)
    opt = optim.LBFGS([z])
    saved = {
        "state": {0: {"d": plugrad.zeros(12, dtype=plugrad.complex128), "n_iter": 1}},
        "param_groups": opt.state_dict()["param_groups"],
    }
    with pytest.raises(DtypeError, match="flat vectors are real"):
        opt.load_state_dict(saved)
    assert not opt.state
