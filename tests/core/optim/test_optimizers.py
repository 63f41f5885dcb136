"""plugrad.optim optimizers: trajectories against torch.optim, in-place updates, state dicts,
closures, and errors that leave the optimizer as it was."""

from __future__ import annotations

import re

import numpy as np
import pytest

import plugrad
from plugrad import optim
from plugrad.errors import (
    DtypeError,
    InPlaceModificationError,
    InvalidArgumentError,
    ShapeError,
)

SGD_OPTIONS = [
    {},
    {"momentum": 0.9},
    {"momentum": 0.9, "dampening": 0.3},
    {"momentum": 0.9, "nesterov": True},
    {"weight_decay": 0.1},
    {"maximize": True},
    {"momentum": 0.8, "weight_decay": 0.05, "nesterov": True, "maximize": True},
    {"momentum": 0.7, "dampening": 0.2, "weight_decay": 0.05, "maximize": True},
]
ADAM_OPTIONS = [
    {},
    {"betas": (0.8, 0.95), "eps": 1e-6},
    {"weight_decay": 0.1},
    {"amsgrad": True},
    {"maximize": True},
    {"weight_decay": 0.1, "amsgrad": True, "maximize": True},
]
RMSPROP_OPTIONS = [
    {},
    {"alpha": 0.9, "eps": 1e-6},
    {"momentum": 0.9},
    {"centered": True},
    {"momentum": 0.8, "centered": True, "weight_decay": 0.1, "maximize": True},
]
ADAGRAD_OPTIONS = [
    {},
    {"lr_decay": 0.05, "initial_accumulator_value": 0.2},
    {"weight_decay": 0.1, "eps": 1e-6},
    {"maximize": True},
    {"weight_decay": 0.1, "maximize": True},
]
CASES = (
    [("SGD", options) for options in SGD_OPTIONS]
    + [("Adam", options) for options in ADAM_OPTIONS]
    + [("AdamW", options) for options in ADAM_OPTIONS]
    + [("RMSprop", options) for options in RMSPROP_OPTIONS]
    + [("Adagrad", options) for options in ADAGRAD_OPTIONS]
)
# NOTE: float32 state entries that cancel to near zero (a momentum buffer of -0.048 from terms
# of ~1) differ from PyTorch by a few ulps of those terms, so atol follows their scale.
TOLERANCES = {"float32": {"rtol": 2e-5, "atol": 1e-5}, "float64": {"rtol": 1e-11, "atol": 1e-13}}
# JAX's own matmul and reductions sum in another order than NumPy's and PyTorch's, so its float32
# gradients differ by rounding, which centered RMSprop's sqrt(E[g^2] - E[g]^2) amplifies over
# the steps (up to 2.5e-5 on values of ~0.5 beside values of ~17); float64 stays as tight.
JAX_FLOAT32_TOLERANCE = {"rtol": 2e-5, "atol": 5e-5}
# One case per optimizer for the in-place checks, the fullest of each.
IN_PLACE_CASES = [
    ("SGD", SGD_OPTIONS[1]),
    ("SGD", SGD_OPTIONS[-2]),
    ("AdamW", ADAM_OPTIONS[-1]),
    ("RMSprop", RMSPROP_OPTIONS[-1]),
    ("Adagrad", ADAGRAD_OPTIONS[-1]),
]
STATE_KEYS = (
    "momentum_buffer",
    "exp_avg",
    "exp_avg_sq",
    "max_exp_avg_sq",
    "square_avg",
    "grad_avg",
    "sum",
)


def case_id(case: tuple[str, dict]) -> str:
    name, options = case
    return name + "-" + ("-".join(f"{k}={v}" for k, v in options.items()) or "defaults")


def initial_values(dtype: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "weight": rng.normal(size=(3, 4)).astype(dtype),
        "bias": rng.normal(size=3).astype(dtype),
        "unused": rng.normal(size=2).astype(dtype),  # never gets a gradient: skipped
        "scale": np.asarray(1.5, dtype=dtype),  # 0-d: NumPy computes with scalars there
        "inputs": rng.normal(size=(5, 4)).astype(dtype),
    }


def plugrad_loss(p: dict[str, plugrad.Tensor], inputs: plugrad.Tensor) -> plugrad.Tensor:
    hidden = plugrad.tanh(inputs @ plugrad.matrix_transpose(p["weight"]) + p["bias"])
    return plugrad.sum(hidden * hidden * p["scale"]) + plugrad.sum(p["weight"] ** 3) * 0.1


def torch_loss(torch, p: dict, inputs) -> object:
    hidden = torch.tanh(inputs @ p["weight"].T + p["bias"])
    return (hidden * hidden * p["scale"]).sum() + (p["weight"] ** 3).sum() * 0.1


def groups_of(params: dict) -> list[dict]:
    # A second group with options of its own, as schedulers and fine-tuning use them.
    return [
        {"params": [params["weight"], params["unused"]]},
        {"params": [params["bias"], params["scale"]], "lr": 0.03},
    ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_trajectory_matches_torch(backend, step_both, case, dtype) -> None:
    torch = pytest.importorskip("torch")
    name, options = case
    values = initial_values(dtype)
    ours = {k: plugrad.asarray(v, requires_grad=True) for k, v in values.items() if k != "inputs"}
    theirs = {k: torch.tensor(v, requires_grad=True) for k, v in values.items() if k != "inputs"}
    inputs, torch_inputs = plugrad.asarray(values["inputs"]), torch.tensor(values["inputs"])
    opt = getattr(optim, name)(groups_of(ours), lr=0.05, **options)
    reference = getattr(torch.optim, name)(groups_of(theirs), lr=0.05, **options)
    tolerance = TOLERANCES[dtype]
    if dtype == "float32" and backend.backend.name == "jax":
        tolerance = JAX_FLOAT32_TOLERANCE
    for _ in range(6):
        step_both(
            opt,
            ours,
            plugrad_loss(ours, inputs),
            reference,
            torch_loss(torch, theirs, torch_inputs),
        )
        for key in ours:
            np.testing.assert_allclose(
                ours[key].detach().numpy(), theirs[key].detach().numpy(), err_msg=key, **tolerance
            )
            state, expected = opt.state.get(ours[key], {}), reference.state[theirs[key]]
            for state_key in STATE_KEYS:
                if expected.get(state_key) is None:
                    assert state.get(state_key) is None, state_key
                    continue
                np.testing.assert_allclose(
                    state[state_key].numpy(),
                    expected[state_key].numpy(),
                    err_msg=f"{key} {state_key}",
                    **tolerance,
                )
            if "step" in expected:
                assert state["step"] == int(expected["step"])
    assert ours["unused"].detach().numpy().tolist() == values["unused"].tolist()
    # A parameter without gradient has no state, except Adagrad's sums (made at construction).
    assert (ours["unused"] in opt.state) == (name == "Adagrad")


@pytest.mark.parametrize(
    ("name", "options", "steps", "rtol"),
    [
        ("SGD", {"momentum": 0.9, "weight_decay": 0.01}, 3, 1e-12),
        ("ASGD", {"t0": 1, "weight_decay": 0.01}, 4, 1e-6),  # linear in the gradient too
    ],
)
def test_complex_parameters_match_torch(on_numpy, name, options, steps, rtol) -> None:
    torch = pytest.importorskip("torch")
    start = np.array([1.0 + 2.0j, -0.5 + 0.25j])
    z = plugrad.asarray(start.copy(), requires_grad=True)
    reference_z = torch.tensor(start, requires_grad=True)
    opt = getattr(optim, name)([z], lr=0.1, **options)
    reference = getattr(torch.optim, name)([reference_z], lr=0.1, **options)
    for _ in range(steps):
        opt.zero_grad()
        plugrad.sum(plugrad.real(z * plugrad.conj(z) * z)).backward()
        opt.step()
        reference.zero_grad()
        (reference_z * reference_z.conj() * reference_z).real.sum().backward()
        reference.step()
    np.testing.assert_allclose(z.detach().numpy(), reference_z.detach().numpy(), rtol=rtol)


def test_adafactor_refuses_complex_parameters(on_numpy) -> None:
    # (the other optimizers take them: tests/core/optim/test_complex_parameters.py)
    z = plugrad.asarray(np.array([[1.0 + 1.0j]]), requires_grad=True)
    with pytest.raises(DtypeError, match="complex parameters"):
        optim.Adafactor([z])


# -- updates in place ----------------------------------------------------------------------


def train_once(opt: optim.Optimizer, params: list[plugrad.Tensor]) -> None:
    opt.zero_grad()
    sum((plugrad.sum(p * p * p) for p in params), plugrad.tensor(0.0)).backward()
    opt.step()


@pytest.mark.parametrize("case", IN_PLACE_CASES, ids=case_id)
def test_step_updates_each_parameter_in_its_own_memory(backend, case) -> None:
    name, options = case
    params = [plugrad.asarray(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)]
    params.append(plugrad.asarray(np.array([0.5, 2.0]), requires_grad=True))
    opt = getattr(optim, name)(params, lr=0.1, **options)
    arrays = [p.array for p in params]
    before = [p.detach().numpy().copy() for p in params]
    train_once(opt, params)
    state_tensors = tensor_ids(opt)
    train_once(opt, params)
    # Where arrays are immutable (JAX) or lazy (Dask), a change is a new array in the same
    # tensor: the memory is the backend's to reuse.
    same_memory = not (params[0].device.views_are_copies or params[0].device.backend.lazy)
    for param, array, old in zip(params, arrays, before):
        assert param.array is array or not same_memory, "the step replaced the parameter's array"
        assert not np.allclose(param.detach().numpy(), old)
    assert opt.param_groups[0]["params"][0] is params[0]
    # State tensors are updated, not replaced, between steps.
    assert state_tensors == tensor_ids(opt)


def tensor_ids(opt: optim.Optimizer) -> set[int]:
    return {
        id(value)
        for entry in opt.state.values()
        for value in entry.values()
        if isinstance(value, plugrad.Tensor)
    }


def test_step_modifies_views_of_the_parameter_memory(on_numpy) -> None:
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    alias = w.detach()
    opt = optim.SGD([w], lr=0.5)
    plugrad.sum(w).backward()
    opt.step()
    assert alias.tolist() == [0.5, 1.5]


def test_a_graph_that_saved_the_old_value_refuses_backward_after_a_step(on_numpy) -> None:
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.5)
    plugrad.sum(w * w).backward()
    stale = plugrad.sum(w * w)  # saves w
    opt.step()
    with pytest.raises(InPlaceModificationError):
        stale.backward()


def test_step_records_nothing(on_numpy) -> None:
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.Adam([w], lr=0.5)
    plugrad.sum(w * w).backward()
    opt.step()
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    assert all(not t.requires_grad for t in opt.state[w].values() if isinstance(t, plugrad.Tensor))


# -- zero_grad and closures ----------------------------------------------------------------


def test_zero_grad_sets_to_none_or_zeros_in_place(backend) -> None:
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    plugrad.sum(w * w).backward()
    grad, array = w.grad, w.grad.array
    opt.zero_grad(set_to_none=False)
    assert w.grad is grad and w.grad.tolist() == [0.0, 0.0]
    # In the same memory, where arrays are written (JAX's and Dask's are rebound instead).
    assert w.grad.array is array or w.device.views_are_copies
    opt.zero_grad()
    assert w.grad is None


def test_zero_grad_detaches_a_gradient_that_has_a_graph(on_numpy) -> None:
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    plugrad.sum(w * w * w).backward(create_graph=True)
    assert w.grad.grad_fn is not None
    optim.SGD([w]).zero_grad(set_to_none=False)
    assert w.grad.grad_fn is None and not w.grad.requires_grad and w.grad.tolist() == [0.0, 0.0]


def test_closure_runs_with_grad_enabled_and_its_loss_is_returned(on_numpy) -> None:
    w = plugrad.tensor([3.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.25)
    calls = []

    def closure():
        calls.append(plugrad.is_grad_enabled())
        opt.zero_grad()
        loss = plugrad.sum(w * w)
        loss.backward()
        return loss

    with plugrad.no_grad():
        loss = opt.step(closure)
    assert calls == [True]
    assert loss.item() == 9.0
    assert w.tolist() == [1.5]
    assert opt.step() is None


# -- state dicts ----------------------------------------------------------------------------


def make(
    name: str, dtype: str = "float64", lr: float = 0.05, **options
) -> tuple[optim.Optimizer, list]:
    values = initial_values(dtype)
    params = [plugrad.asarray(values[k], requires_grad=True) for k in ("weight", "bias")]
    groups = [{"params": params[:1]}, {"params": params[1:], "lr": 0.02}]
    return getattr(optim, name)(groups, lr=lr, **options), params


@pytest.mark.parametrize(
    "case",
    [("SGD", {"momentum": 0.9, "nesterov": True}), ("Adam", {"amsgrad": True}), ("AdamW", {})],
    ids=case_id,
)
def test_state_dict_round_trip_continues_the_same_trajectory(backend, case, tmp_path) -> None:
    name, options = case
    opt, params = make(name, **options)
    for _ in range(3):
        train_once(opt, params)
    saved = opt.state_dict()
    assert saved["param_groups"][1]["params"] == [1]
    assert set(saved["state"]) == {0, 1}
    plugrad.save(saved, tmp_path / "opt.safetensors")
    for source in (saved, plugrad.load(tmp_path / "opt.safetensors", backend="numpy")):
        restored, copies = make(name, lr=1.0)  # other options: the state dict brings them
        with plugrad.no_grad():  # (through plugrad: JAX's and Dask's arrays are not written)
            for duplicate, param in zip(copies, params):
                duplicate.copy_(param)
        restored.load_state_dict(source)
        assert [g["lr"] for g in restored.param_groups] == [0.05, 0.02]
        assert restored.param_groups[0] | {"params": None} == saved["param_groups"][0] | {
            "params": None
        }
        twin, twin_params = make(name, **options)
        twin.load_state_dict(clone(saved))
        with plugrad.no_grad():
            for p, q in zip(twin_params, params):
                p.copy_(q)
        for _ in range(2):
            train_once(restored, copies)
            train_once(twin, twin_params)
        for a, b in zip(copies, twin_params):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_load_state_dict_copies_state_to_the_parameters_device_and_dtype(on_numpy) -> None:
    opt, params = make("Adam", dtype="float64")
    train_once(opt, params)
    saved = opt.state_dict()
    with plugrad.use_backend("array_api_strict"):
        target, _ = make("Adam", dtype="float32")
    target.load_state_dict(saved)
    moved = target.state[target.param_groups[0]["params"][0]]
    assert moved["exp_avg"].device.backend.name == "array_api_strict"
    assert moved["exp_avg"].dtype == plugrad.float32
    moved["exp_avg"].array[...] = 0  # no aliasing of the dict it came from
    assert np.any(saved["state"][0]["exp_avg"].numpy() != 0)


@pytest.mark.parametrize(("name", "buffer"), [("Adam", "exp_avg"), ("RMSprop", "square_avg")])
def test_load_state_dict_casts_integer_state_to_the_parameters_dtype_as_torch(
    on_numpy, name, buffer
) -> None:
    # Only floating-point state was cast: an int64 moment stayed int64, and the next step
    # failed in NumPy (UFuncTypeError) after counting itself. PyTorch casts every state
    # tensor but the step count to the parameter's dtype.
    torch = pytest.importorskip("torch")
    found = []
    for lib, make_opt in ((plugrad, getattr(optim, name)), (torch, getattr(torch.optim, name))):
        w = lib.tensor([0.5, -0.25], requires_grad=True)
        opt = make_opt([w], lr=0.1)
        (w * w).sum().backward()
        opt.step()
        saved = opt.state_dict()
        saved["state"][0][buffer] = lib.tensor([1, 2])
        w2 = lib.tensor([0.5, -0.25], requires_grad=True)
        opt2 = make_opt([w2], lr=0.1)
        opt2.load_state_dict(saved)
        assert opt2.state[w2][buffer].dtype == lib.float32
        (w2 * w2).sum().backward()
        opt2.step()
        found.append((w2.detach().numpy(), opt2.state[w2][buffer].numpy()))
        assert float(opt2.state[w2]["step"]) == 2
    for ours, theirs in zip(*found):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ([2**24 + 1, 0, 0], "int64, but the optimizer keeps it in"),
        ([1 + 2j, 0j, 0j], "complex64, but the optimizer keeps it in"),
    ],
    ids=["rounded int", "complex"],
)
def test_load_state_dict_refuses_state_a_cast_would_change(on_numpy, value, match) -> None:
    opt, params = make("Adam", dtype="float32")
    train_once(opt, params)
    saved = opt.state_dict()
    before = snapshot(opt)
    with pytest.raises(DtypeError, match=re.escape(f"state 'exp_avg' of parameter 1 is {match}")):
        opt.load_state_dict(
            broken(saved, lambda s: s["state"][1].update(exp_avg=plugrad.tensor(value)))
        )
    assert snapshot(opt) == before
    exact = broken(saved, lambda s: s["state"][1].update(exp_avg=plugrad.tensor([2**24, 3, 0])))
    opt.load_state_dict(exact)  # integers float32 holds exactly: taken, as PyTorch takes them
    assert opt.state[params[1]]["exp_avg"].tolist() == [2.0**24, 3.0, 0.0]


def test_state_dict_holds_no_parameter_objects(on_numpy) -> None:
    opt, params = make("SGD", momentum=0.5)
    train_once(opt, params)
    groups = opt.state_dict()["param_groups"]
    assert [g["params"] for g in groups] == [[0], [1]]
    assert opt.param_groups[0]["params"][0] is params[0]


def snapshot(opt: optim.Optimizer) -> tuple:
    state = opt.state_dict()
    return (
        repr(state["param_groups"]),
        {i: {k: v.tolist() if hasattr(v, "tolist") else v for k, v in e.items()} for i, e in
         state["state"].items()},
        [[id(p) for p in g["params"]] for g in opt.param_groups],
    )  # fmt: skip


def clone(tree):
    """A deep copy of a state dict, tensors included."""
    if isinstance(tree, plugrad.Tensor):
        return plugrad.asarray(tree, copy=True)
    if isinstance(tree, dict):
        return {key: clone(value) for key, value in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(clone(value) for value in tree)
    return tree


def broken(saved: dict, change) -> dict:
    saved = clone(saved)
    change(saved)
    return saved


BAD_STATE_DICTS = {
    "not a state dict": (lambda s: s.pop("state"), ValueError, "keys 'state' and 'param_groups'"),
    "group count": (lambda s: s["param_groups"].pop(), ValueError, "has 1 parameter groups"),
    "group size": (
        lambda s: s["param_groups"][0]["params"].append(7),
        ValueError,
        "has 2 parameters",
    ),
    "negative lr": (
        lambda s: s["param_groups"][1].update(lr=-1.0),
        ValueError,
        "lr must be at least 0",
    ),
    "repeated index": (
        lambda s: s["param_groups"][1].update(params=[0]),
        ValueError,
        "not a fresh integer index",
    ),
    "unknown parameter": (
        lambda s: s["state"].update({5: s["state"][0]}),
        ValueError,
        "parameter 5",
    ),
    "wrong shape": (
        lambda s: s["state"][1].update(exp_avg=plugrad.zeros(7)),
        ValueError,
        "has shape",
    ),
    "unknown key": (lambda s: s["state"][1].update(velocity=1), ValueError, "velocity"),
    "missing moment": (lambda s: s["state"][1].pop("exp_avg_sq"), ValueError, "lacks"),
    "bad step": (lambda s: s["state"][1].update(step=1.5), TypeError, "'step' must be an int"),
    "not a tensor": (lambda s: s["state"][1].update(exp_avg=[0.0]), TypeError, "must be a Tensor"),
}


@pytest.mark.parametrize("bad", sorted(BAD_STATE_DICTS))
def test_a_bad_state_dict_leaves_the_optimizer_unchanged(on_numpy, bad) -> None:
    change, error, message = BAD_STATE_DICTS[bad]
    opt, params = make("Adam")
    train_once(opt, params)
    saved = opt.state_dict()
    opt.param_groups[0]["lr"] = 0.5
    before = snapshot(opt)
    with pytest.raises(error, match=re.escape(message)):
        opt.load_state_dict(broken(saved, change))
    assert snapshot(opt) == before


#: optimizer, options, the buffer every parameter's state needs once it has stepped
NEEDED_BUFFERS = {
    "Adagrad": ({}, "sum"),
    "Adam": ({}, "exp_avg"),
    "AdamW": ({}, "exp_avg_sq"),
    "RMSprop": ({}, "square_avg"),
}


@pytest.mark.parametrize("name", sorted(NEEDED_BUFFERS))
def test_every_optimizer_checks_its_state_dicts_the_same_way(on_numpy, name) -> None:
    options, needed = NEEDED_BUFFERS[name]
    opt, params = make(name, **options)
    train_once(opt, params)
    saved = opt.state_dict()
    for change, error, message in [
        (lambda s: s["state"][1].pop(needed), ValueError, f"state of a parameter lacks ['{needed}"),
        (lambda s: s["state"][1].update(speed=1), ValueError, f"{name} keeps ["),
        (lambda s: s["state"][1].update(step=-1), TypeError, f"{name} state 'step' must be"),
    ]:
        with pytest.raises(error, match=re.escape(message)):
            opt.load_state_dict(broken(saved, change))
    sgd, params = make("SGD", momentum=0.9)
    train_once(sgd, params)
    with pytest.raises(ValueError, match=re.escape("SGD keeps ['momentum_buffer'] per parameter")):
        sgd.load_state_dict(broken(sgd.state_dict(), lambda s: s["state"][1].update(step=1)))


@pytest.mark.parametrize(
    ("name", "options"),
    [("SGD", {"momentum": 0.9}), ("SGD", {}), ("Adam", {}), ("RMSprop", {"momentum": 0.5})],
)
def test_a_gradient_reshaped_in_place_is_refused_before_any_update(on_numpy, name, options):
    # SGD with momentum kept a buffer of the gradient's shape (1, 2) for a (2,) parameter,
    # and every later step failed; without momentum the gradient broadcast into the step.
    a = plugrad.tensor([1.0, 2.0], requires_grad=True)
    b = plugrad.tensor([[3.0, 4.0]], requires_grad=True)
    opt = getattr(optim, name)([a, b], lr=0.1, **options)
    (a.sum() + b.sum()).backward()
    a.grad.unsqueeze_(0)
    state = {k: dict(v) for k, v in opt.state.items()}
    with pytest.raises(ShapeError, match=r"parameter 0 of group 0 has shape \(2,\) but its .grad"):
        opt.step()
    assert a.tolist() == [1.0, 2.0] and b.tolist() == [[3.0, 4.0]]
    assert {k: dict(v) for k, v in opt.state.items()} == state
    a.grad = plugrad.ones(2)
    opt.step()
    assert a.tolist() != [1.0, 2.0]  # the optimizer steps again once the gradient is fixed


def test_sgd_state_dict_checks_its_buffer(on_numpy) -> None:
    opt, params = make("SGD", momentum=0.9)
    train_once(opt, params)
    bad = broken(opt.state_dict(), lambda s: s["state"][0].update(momentum_buffer=plugrad.ones(2)))
    with pytest.raises(ValueError, match="momentum_buffer"):
        opt.load_state_dict(bad)


def test_amsgrad_switched_on_later_starts_its_maximum_from_zero(on_numpy) -> None:
    opt, params = make("Adam")
    train_once(opt, params)
    opt.param_groups[0]["amsgrad"] = True
    train_once(opt, params)
    assert "max_exp_avg_sq" in opt.state[params[0]]
    assert "max_exp_avg_sq" not in opt.state[params[1]]


# -- construction errors ---------------------------------------------------------------------


def leaf(*values: float) -> plugrad.Tensor:
    return plugrad.tensor(list(values), requires_grad=True)


CONSTRUCTION_ERRORS = {
    "empty": (lambda: optim.SGD([]), ValueError, "empty parameter list"),
    "single tensor": (lambda: optim.SGD(leaf(1.0)), TypeError, "not a single Tensor"),
    "set": (lambda: optim.SGD({leaf(1.0)}), TypeError, "got a set; pass a list"),
    "group dict alone": (lambda: optim.SGD({"params": [leaf(1.0)]}), TypeError, "in a list"),
    "not a tensor": (lambda: optim.SGD([np.ones(2)]), TypeError, "parameter 0 is a ndarray"),
    "non-leaf": (lambda: optim.SGD([leaf(1.0) * 2]), ValueError, "only optimize leaf tensors"),
    "duplicate": (lambda: optim.SGD([w := leaf(1.0), w]), ValueError, "more than once"),
    "negative lr": (lambda: optim.SGD([leaf(1.0)], lr=-0.1), ValueError, "lr must be at least 0"),
    "lr type": (lambda: optim.Adam([leaf(1.0)], lr="fast"), TypeError, "lr must be a number"),
    "nan lr": (lambda: optim.Adam([leaf(1.0)], lr=float("nan")), ValueError, "lr must be"),
    "momentum": (lambda: optim.SGD([leaf(1.0)], momentum=-1), ValueError, "momentum"),
    "nesterov": (lambda: optim.SGD([leaf(1.0)], nesterov=True), ValueError, "Nesterov"),
    "flag": (lambda: optim.SGD([leaf(1.0)], maximize=1), TypeError, "maximize must be True"),
    "beta": (lambda: optim.Adam([leaf(1.0)], betas=(0.9, 1.0)), ValueError, "betas[1]"),
    "betas": (lambda: optim.Adam([leaf(1.0)], betas=0.9), TypeError, "pair"),
    "eps": (lambda: optim.AdamW([leaf(1.0)], eps=-1e-8), ValueError, "eps"),
    "group lr": (
        lambda: optim.SGD([{"params": [leaf(1.0)], "lr": -1.0}]),
        ValueError,
        "lr must be at least 0",
    ),
    "group without params": (lambda: optim.SGD([{"lr": 0.1}]), ValueError, "no 'params' entry"),
}


# The options of the other optimizers (test_more_optimizers.py).
CONSTRUCTION_ERRORS |= {
    "Adamax negative lr": (lambda: optim.Adamax([leaf(1.0)], lr=-0.1), ValueError,
                           "lr must be at least 0"),
    "NAdam bad betas": (lambda: optim.NAdam([leaf(1.0)], betas=(0.9, 1.0)), ValueError,
                        "betas[1] must"),
    "RAdam betas type": (lambda: optim.RAdam([leaf(1.0)], betas=0.9), TypeError,
                         "RAdam betas must be a pair"),
    "NAdam momentum_decay": (lambda: optim.NAdam([leaf(1.0)], momentum_decay=-1), ValueError,
                             "momentum_decay must be at least 0"),
    "RAdam decoupled flag": (lambda: optim.RAdam([leaf(1.0)], decoupled_weight_decay=1),
                             TypeError, "decoupled_weight_decay must be True or False"),
    "Adadelta rho": (lambda: optim.Adadelta([leaf(1.0)], rho=1.5), ValueError,
                     "rho must be at most 1"),
    "Adadelta eps": (lambda: optim.Adadelta([leaf(1.0)], eps=-1.0), ValueError,
                     "eps must be at least 0"),
    "Rprop etas": (lambda: optim.Rprop([leaf(1.0)], etas=(1.2, 0.5)), ValueError,
                   "0 < etaminus < 1 < etaplus"),
    "Rprop step_sizes": (lambda: optim.Rprop([leaf(1.0)], step_sizes=(1.0, 0.1)), ValueError,
                         "minimum <= maximum"),
    "ASGD weight_decay": (lambda: optim.ASGD([leaf(1.0)], weight_decay=-0.1), ValueError,
                          "weight_decay must be at least 0"),
    "ASGD foreach": (lambda: optim.ASGD([leaf(1.0)], foreach="yes"), TypeError,
                     "foreach must be None"),
    "Adamax differentiable": (lambda: optim.Adamax([leaf(1.0)], differentiable=True),
                              InvalidArgumentError, "cannot be differentiated through"),
    "Adafactor complex": (lambda: optim.Adafactor([plugrad.asarray(np.array([1j]),
                                                                   requires_grad=True)]),
                          DtypeError, "does not support complex parameters"),
}  # fmt: skip


@pytest.mark.parametrize("bad", sorted(CONSTRUCTION_ERRORS))
def test_construction_errors(on_numpy, bad) -> None:
    make_it, error, message = CONSTRUCTION_ERRORS[bad]
    with pytest.raises(error, match=re.escape(message)):
        make_it()


def test_add_param_group_refuses_a_parameter_already_optimized(on_numpy) -> None:
    w, b = leaf(1.0), leaf(2.0)
    opt = optim.SGD([w], lr=0.1)
    with pytest.raises(ValueError, match="already in parameter group 0"):
        opt.add_param_group({"params": [b, w]})
    with pytest.raises(ValueError, match="lr must be at least 0"):
        opt.add_param_group({"params": [b], "lr": -2.0})
    assert len(opt.param_groups) == 1
    opt.add_param_group({"params": b, "momentum": 0.5})
    assert opt.param_groups[1]["params"] == [b] and opt.param_groups[1]["momentum"] == 0.5
    assert opt.param_groups[1]["lr"] == 0.1


def test_repr_lists_each_group_and_its_options(on_numpy) -> None:
    opt = optim.Adam([{"params": [leaf(1.0), leaf(2.0)]}, {"params": [leaf(3.0)], "lr": 0.5}])
    text = repr(opt)
    assert text.startswith("Adam(\n  group 0: 2 params, lr=0.001, betas=(0.9, 0.999), eps=1e-08")
    assert "group 1: 1 param, lr=0.5" in text


def test_adam_and_adamw_default_weight_decay() -> None:
    w = plugrad.tensor([1.0], requires_grad=True)
    assert plugrad.optim.Adam([w]).defaults["weight_decay"] == 0
    assert plugrad.optim.AdamW([w]).defaults["weight_decay"] == 1e-2
    assert plugrad.optim.AdamW([w], weight_decay=0.5).defaults["weight_decay"] == 0.5


# -- the check a compiled step makes of its optimizer ----------------------------------------


def _stepped(make):
    params = [plugrad.ones((2, 3), requires_grad=True), plugrad.zeros(3, requires_grad=True)]
    optimizer = make(params)
    for p in params:
        p.grad = plugrad.full(p.shape, 0.5)
    optimizer.step()  # makes the state of those that keep one
    return optimizer, params


def _key_check(optimizer):
    """The optimizer's quick check as a function of it (None where it writes none)."""
    constants = {}

    def constant(value):
        name = f"c{len(constants)}"
        constants[name] = value
        return name

    check = optimizer._compile_key_check("opt", constant)
    if check is None:
        return None
    code = compile(f"def check(opt):\n    return bool({check})\n", "<check>", "exec")
    exec(code, constants)
    return constants["check"]


def _replace_state_tensor(optimizer, params):
    entry = optimizer.state[params[0]]
    name = next(k for k, v in entry.items() if isinstance(v, plugrad.Tensor))
    entry[name] = entry[name].clone()


def _make_state(optimizer, params):
    optimizer.state[params[0]] = {"momentum_buffer": plugrad.zeros(params[0].shape)}


_KEY_CHANGES = {
    "an option": lambda o, p: o.param_groups[0].__setitem__("weight_decay", 0.25),
    "an option added": lambda o, p: o.param_groups[0].__setitem__("extra", 1),
    "an option removed": lambda o, p: o.param_groups[0].pop("maximize"),
    "a group added": lambda o, p: o.add_param_group({"params": [plugrad.ones(1).requires_grad_()]}),
    "the parameter list replaced": lambda o, p: o.param_groups[0].__setitem__("params", p[::-1]),
    "a parameter removed in place": lambda o, p: o.param_groups[0]["params"].pop(),
    "a state tensor replaced": _replace_state_tensor,
    "a state entry removed": lambda o, p: o.state.pop(p[1]),
    "a state value of another type": lambda o, p: o.state[p[0]].__setitem__(
        next(iter(o.state[p[0]])), "other"
    ),
}  # fmt: skip
_STATE_CHANGES = [change for name, change in _KEY_CHANGES.items() if "state" in name]


@pytest.mark.parametrize("change", list(_KEY_CHANGES.values()), ids=list(_KEY_CHANGES))
@pytest.mark.parametrize(
    "make",
    [
        lambda p: plugrad.optim.SGD(p, lr=0.1),
        lambda p: plugrad.optim.SGD(p, lr=0.1, momentum=0.9),
        lambda p: plugrad.optim.Adam(p, lr=0.01, amsgrad=True),
    ],
    ids=["SGD", "SGD-momentum", "Adam"],
)
def test_compile_key_check_holds_only_while_the_key_is_the_same(make, change):
    optimizer, params = _stepped(make)
    check = _key_check(optimizer)
    assert check is not None and check(optimizer)
    key = optimizer._compile_key()
    optimizer.param_groups[0]["lr"] = 123.0  # read afresh at every step: not in the key
    assert check(optimizer) and optimizer._compile_key() == key
    if change in _STATE_CHANGES and not optimizer.state:
        change = _make_state  # this optimizer keeps none: making some changes the key
    change(optimizer, params)
    assert optimizer._compile_key() != key  # the change is one the key sees
    assert not check(optimizer)


def test_compile_key_check_of_an_optimizer_with_its_own_key_is_none():
    class Keyed(plugrad.optim.SGD):
        def _compile_key(self):
            return (super()._compile_key(), "more")

    optimizer, _ = _stepped(lambda p: Keyed(p, lr=0.1))
    assert _key_check(optimizer) is None


@pytest.mark.parametrize("name", optim.__all__)
def test_shared_parameter_docs_are_filled_in(name) -> None:
    doc = getattr(optim, name).__doc__ or ""
    assert not re.search(r"(?m)^ *\{\w+\}$", doc)
    if name == "Adamax":
        assert "    differentiable : bool, default False\n        Only ``False``" in doc


def test_fill_parameter_docs_indents_entries_and_leaves_other_braces() -> None:
    from plugrad.optim.optimizer import fill_parameter_docs

    @fill_parameter_docs
    class Documented:
        r"""Math :math:`\frac{a}{b}`.

        Parameters
        ----------
        {maximize}
            {foreach}
        """

    assert Documented.__doc__ == (
        "Math :math:`\\frac{a}{b}`.\n\n        Parameters\n        ----------\n"
        "        maximize : bool, default False\n"
        "            Ascend the objective instead of descending.\n"
        "            foreach : bool, optional\n"
        "                Accepted for compatibility with PyTorch (its multi-tensor "
        "implementation);\n                the update is the same.\n        "
    )
    with pytest.raises(KeyError, match="maximise"):

        @fill_parameter_docs
        class Misspelt:
            """
            {maximise}
            """


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop"])
def test_frozen_parameters_are_taken_and_train_once_unfrozen_as_in_pytorch(name):
    # They were refused: optim.Adam(model.parameters()) failed for a partly frozen model.
    torch = pytest.importorskip("torch")
    trajectories = []
    for lib in (plugrad, torch):
        frozen = lib.tensor([1.0, -2.0], dtype=lib.float64)  # requires_grad=False
        trained = lib.tensor([0.5, 3.0], dtype=lib.float64, requires_grad=True)
        options = {"lr": 0.1} if name != "SGD" else {"lr": 0.1, "momentum": 0.9}
        opt = getattr(lib.optim, name)([frozen, trained], **options)
        seen = []
        for step in range(6):
            if step == 3:
                frozen.requires_grad_(True)  # fine-tuning: unfrozen later
            opt.zero_grad()
            ((frozen * trained) ** 2).sum().backward()
            opt.step()
            seen.append(frozen.detach().tolist() + trained.detach().tolist())
        trajectories.append(seen)
    np.testing.assert_allclose(trajectories[0], trajectories[1], rtol=1e-9, atol=1e-15)


def test_named_parameters_are_taken_and_their_names_kept_as_pytorch():
    # model.named_parameters() was refused (parameter 0 is a tuple).
    torch = pytest.importorskip("torch")
    dicts = []
    for lib in (plugrad, torch):
        model = lib.nn.Linear(2, 2)
        opt = lib.optim.Adam(model.named_parameters(), lr=0.1)
        model(lib.ones(1, 2)).sum().backward()
        opt.step()
        dicts.append(opt.state_dict())
        grouped = lib.optim.SGD([{"params": model.named_parameters(), "lr": 0.5}])
        assert grouped.param_groups[0]["param_names"] == ["weight", "bias"]
        restored = lib.optim.Adam(model.named_parameters(), lr=0.1)
        restored.load_state_dict(opt.state_dict())
        assert restored.param_groups[0]["param_names"] == ["weight", "bias"]
    for saved in dicts:
        assert saved["param_groups"][0]["param_names"] == ["weight", "bias"]
        assert sorted(saved["state"]) == [0, 1]
    weight = plugrad.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="mixing"):
        optim.SGD([("w", weight), plugrad.zeros(2, requires_grad=True)])


def _momentum_optimizer(lib):
    """An optimizer written the way PyTorch's own are: state read through self.state[p]."""

    class Momentum(lib.optim.Optimizer):
        def __init__(self, params, lr=0.1, momentum=0.9):
            super().__init__(params, {"lr": lr, "momentum": momentum})

        @lib.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = 0
                        state["buf"] = lib.zeros_like(p, memory_format=lib.preserve_format)
                    state["step"] += 1
                    state["buf"].mul_(group["momentum"]).add_(p.grad)
                    p.add_(state["buf"], alpha=-group["lr"])

    return Momentum


def test_an_optimizer_written_for_pytorch_runs_and_matches_it():
    # self.state[p] of a parameter without state raised KeyError (PyTorch's is a defaultdict).
    torch = pytest.importorskip("torch")
    results = []
    for lib in (plugrad, torch):
        w = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
        unused = lib.tensor([3.0], dtype=lib.float64, requires_grad=True)
        opt = _momentum_optimizer(lib)([w, unused])
        for _ in range(4):
            opt.zero_grad()
            (w**3).sum().backward()
            opt.step()
        restored = _momentum_optimizer(lib)([w, unused])
        restored.load_state_dict(opt.state_dict())
        assert restored.state[unused] == {} and restored.state[w]["step"] == 4
        results.append((w.detach().tolist(), opt.state[w]["buf"].tolist()))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "Rprop"])
def test_reading_the_state_of_a_parameter_before_its_step_changes_nothing(name):
    # As in PyTorch, opt.state[p] is {} before p's first step; the step still starts afresh.
    torch = pytest.importorskip("torch")
    results = []
    for lib in (plugrad, torch):
        w = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
        opt = getattr(lib.optim, name)([w], lr=0.1)
        before = dict(opt.state[w]) if name != "Adagrad" else {}
        assert before == {}
        for _ in range(3):
            opt.zero_grad()
            (w**2).sum().backward()
            opt.step()
        results.append(w.detach().tolist())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


def test_adagrad_starts_a_group_from_its_own_initial_accumulator_value() -> None:
    # Documented difference: PyTorch starts every group from the constructor's value.
    a = plugrad.tensor([1.0], dtype=plugrad.float64, requires_grad=True)
    b = plugrad.tensor([1.0], dtype=plugrad.float64, requires_grad=True)
    opt = plugrad.optim.Adagrad(
        [{"params": [a], "initial_accumulator_value": 3.0}, {"params": [b]}]
    )
    a.grad = plugrad.tensor([1.0], dtype=plugrad.float64)
    b.grad = plugrad.tensor([1.0], dtype=plugrad.float64)
    opt.step()
    assert opt.state[a]["sum"].tolist() == [4.0] and opt.state[b]["sum"].tolist() == [1.0]
