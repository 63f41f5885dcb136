"""Muon against torch.optim.Muon: trajectories of square, tall and wide matrices with each
option, state dicts both ways, the bfloat16 rounding of its Newton-Schulz iteration, a
closure, compiled steps, and the errors where PyTorch raises."""

from __future__ import annotations

import contextlib
import copy
import itertools
import re

import numpy as np
import pytest
from classifier_training import (
    classification_batch,
    classifier_and_optimizer,
    training_step,
    trajectory,
)

import plugrad
from plugrad import optim
from plugrad.errors import ArgumentError, DtypeError, InvalidArgumentError, ShapeError
from plugrad.optim.muon import _bfloat16_values, _fused

torch = pytest.importorskip("torch")

# Square, tall (orthogonalized through its transpose) and wide. Small: float32 sums of a
# few exact bfloat16 products come out the same in nearly any order (see test_larger_...).
SHAPES = [(3, 3), (5, 2), (2, 4)]
CASES = [
    {"nesterov": nesterov, "weight_decay": decay, "adjust_lr_fn": adjust, "momentum": momentum}
    for nesterov, decay, adjust, momentum in itertools.product(
        [True, False], [0.1, 0.0], [None, "original", "match_rms_adamw"], [0.95, 0.3]
    )  # (momentum 0.3: both lerps rounded by their other formula)
] + [
    {"momentum": 0.0},
    {"momentum": 0.0, "nesterov": False, "weight_decay": 0.5},
    {"ns_coefficients": (2.0, -1.5, 0.5), "ns_steps": 3, "eps": 1e-2},
    {"ns_steps": 0},  # the normalized gradient itself
]
# Every branch of the update (either lerp formula, with and without Nesterov momentum,
# decay, each adjustment), for each backend; CASES, every combination, on NumPy.
BACKEND_CASES = [
    {},
    {"nesterov": False, "momentum": 0.3, "adjust_lr_fn": "match_rms_adamw"},
    {"momentum": 0.3, "weight_decay": 0.0, "adjust_lr_fn": "original"},
    {"momentum": 0.0, "nesterov": False, "weight_decay": 0.5},
    {"ns_coefficients": (2.0, -1.5, 0.5), "ns_steps": 3, "eps": 1e-2},
]
STEPS = 6
TOLERANCE = {
    # PyTorch's add_ with alpha fuses the multiply-add: last bits apart.
    "float32": {"rtol": 1e-6, "atol": 1e-7},
    "float64": {"rtol": 1e-14, "atol": 1e-15},
}


def case_id(options: dict) -> str:
    return "-".join(f"{k}={v}" for k, v in options.items()) or "defaults"


def start(shapes, dtype: str, seed: int = 0) -> tuple[list, list]:
    """The same random matrices as plugrad and as torch tensors that require grad."""
    rng = np.random.default_rng(seed)
    values = [rng.normal(size=shape).astype(dtype) for shape in shapes]
    ours = [plugrad.asarray(v.copy(), requires_grad=True) for v in values]
    theirs = [torch.tensor(v.copy(), requires_grad=True) for v in values]
    return ours, theirs


def set_gradients(ours, theirs, rng, skip: int | None = None) -> None:
    """The same random gradients in both (none for parameter ``skip``)."""
    for index, (p, q) in enumerate(zip(ours, theirs)):
        if index == skip:
            p.grad, q.grad = None, None
            continue
        g = rng.normal(size=tuple(p.shape)).astype(p.detach().numpy().dtype) * 3
        p.grad, q.grad = plugrad.asarray(g), torch.tensor(g)


def assert_same(opt, ours, reference, theirs, tolerance) -> None:
    for index, (p, q) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(
            p.detach().numpy(), q.detach().numpy(), err_msg=f"parameter {index}", **tolerance
        )
        expected = reference.state.get(q)
        if not expected:
            assert not opt.state.get(p), f"parameter {index} has state, PyTorch's none"
            continue
        assert set(opt.state[p]) == set(expected) == {"momentum_buffer"}
        np.testing.assert_allclose(
            opt.state[p]["momentum_buffer"].numpy(),
            expected["momentum_buffer"].numpy(),
            err_msg=f"momentum buffer {index}",
            **tolerance,
        )


def check_trajectory(options: dict, dtype: str) -> None:
    ours, theirs = start([*SHAPES, (2, 2)], dtype)
    opt = optim.Muon(ours, lr=0.02, **options)
    reference = torch.optim.Muon(theirs, lr=0.02, **options)
    rng = np.random.default_rng(1)
    for step in range(STEPS):
        # The last parameter gets a gradient from the third step on only.
        set_gradients(ours, theirs, rng, skip=3 if step < 2 else None)
        opt.step()
        reference.step()
        assert_same(opt, ours, reference, theirs, TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("options", CASES, ids=case_id)
def test_trajectory_matches_torch(on_numpy, options, dtype) -> None:
    check_trajectory(options, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("options", BACKEND_CASES, ids=case_id)
def test_trajectory_matches_torch_on_each_backend(backend, options, dtype) -> None:
    if dtype == "float64" and plugrad.float64 not in backend.dtypes:
        pytest.skip(f"{backend.backend.name} has no float64")
    check_trajectory(options, dtype)


def test_larger_matrices_differ_only_where_float32_sums_round_apart(on_numpy) -> None:
    # PyTorch's bfloat16 products accumulate in float32 in its kernel's order, the
    # emulation's in the BLAS's: where a sum lands within a float32 rounding of the
    # midpoint of two bfloat16 values, they round apart (rare: one in these 18 updates).
    # The next iterations spread that over the matrix, by less than a bfloat16 step of the
    # update; the other updates agree to float32 rounding.
    shapes = [(16, 16), (32, 10), (12, 40)]
    ours, theirs = start(shapes, "float32")
    options = {"lr": 0.02, "adjust_lr_fn": "match_rms_adamw"}
    opt, reference = optim.Muon(ours, **options), torch.optim.Muon(theirs, **options)
    rng = np.random.default_rng(2)
    for _ in range(STEPS):
        set_gradients(ours, theirs, rng)
        opt.step()
        reference.step()
    for p, q, shape in zip(ours, theirs, shapes):
        step_size = 0.02 * 0.2 * max(shape) ** 0.5
        difference = np.abs(p.detach().numpy() - q.detach().numpy())
        assert difference.max() <= STEPS * step_size * 2.0**-8
        assert np.median(difference) <= 1e-6


def test_one_step_is_torchs_orthogonalized_gradient(backend) -> None:
    # From zeros, with lr 1 and neither momentum nor decay: the step is minus the
    # iteration's result, bfloat16 values (those of a square or wide matrix as they are).
    ours = [plugrad.zeros(shape, requires_grad=True) for shape in SHAPES]
    theirs = [torch.zeros(shape, requires_grad=True) for shape in SHAPES]
    options = {"lr": 1.0, "momentum": 0.0, "nesterov": False, "weight_decay": 0.0}
    opt, reference = optim.Muon(ours, **options), torch.optim.Muon(theirs, **options)
    set_gradients(ours, theirs, np.random.default_rng(4))
    opt.step()
    reference.step()
    for p, q in zip(ours, theirs):
        update = -p.detach().numpy()
        np.testing.assert_allclose(update, -q.detach().numpy(), rtol=1e-6, atol=1e-7)
        if p.shape[0] <= p.shape[1]:  # (a tall one's is scaled by sqrt(rows / columns))
            assert np.array_equal(update, torch.tensor(update).bfloat16().float().numpy())


def test_bfloat16_rounding_is_torchs_cast(backend) -> None:
    # Every kind of float32: random bit patterns (normal, subnormal, huge), ties to even,
    # zeros of both signs, the largest values (some round to infinity), infinities, NaN.
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    ties = (bits[:50_000] & np.uint32(0xFFFF0000)) | np.uint32(0x8000)
    near = (bits[:50_000] & np.uint32(0xFFFF0000)) | np.uint32(0x7FFF)
    specials = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 3.4028235e38, -3.39e38, 3.3961e38, 1e-45, -1e-40,
         2.0**100, 2.0**101 * 1.00390625, 2.0**-126, 2.0**-127 * 1.0078125],
        dtype=np.float32,
    )  # fmt: skip
    values = np.concatenate([bits.view(np.float32), ties.view(np.float32),
                             near.view(np.float32), specials])  # fmt: skip
    if backend.backend.name == "jax":  # (its arithmetic flushes subnormals to zero on the CPU)
        values = values[(np.abs(values) >= 2.0**-126) | ~np.isfinite(values) | (values == 0)]
    values[np.isnan(values)] = np.nan  # (quiet ones: a signaling NaN makes NumPy warn)
    x = plugrad.asarray(values)
    # (NumPy warns of those that round to infinity; Dask's computes later, as NumPy)
    quiet = backend.backend.floating_point_warnings_off()
    with quiet if quiet is not None else contextlib.nullcontext(), np.errstate(all="ignore"):
        found = plugrad.asarray(_bfloat16_values(x.device.xp, x.array), device=x.device).numpy()
    expected = torch.from_numpy(values.copy()).bfloat16().float().numpy()
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(found), nan)
    mismatch = found[~nan].view(np.uint32) != expected[~nan].view(np.uint32)
    assert not mismatch.any(), (values[~nan][mismatch][:5], found[~nan][mismatch][:5])


@pytest.mark.parametrize("shape", [(2, 5), (3, 6)])
def test_the_products_are_added_as_torchs_bfloat16_addmm_adds_them(on_numpy, shape) -> None:
    # PyTorch's addmm(C, A, B, beta=b, alpha=c) of bfloat16 matrices rounds b * C + (c * AB)
    # once to float32, then to bfloat16. The iteration's sums cancel as it converges:
    # rounding b * C first rounded an element the other way in 1 of 1000 products or so.
    # (Short sums of exact products: float32 gives the same in any order.)
    rng = np.random.default_rng(8)
    xp = plugrad.ones(1).device.xp
    a, b, c = 3.4445, -4.7750, 2.0315
    for _ in range(1000):
        x = torch.tensor(rng.normal(size=shape), dtype=torch.bfloat16)
        x = x / x.norm()
        for _ in range(3):  # three iterations of PyTorch's, each checked
            gram = x @ x.T
            polynomial = torch.addmm(gram, gram, gram, beta=b, alpha=c)
            new_x = torch.addmm(x, polynomial, x, beta=a)
            x32, gram32, polynomial32 = (t.float().numpy() for t in (x, gram, polynomial))
            found = _fused(xp, b, gram32, c * (gram32 @ gram32), xp.float64)
            np.testing.assert_array_equal(_bfloat16_values(xp, found), polynomial.float().numpy())
            found = _fused(xp, a, x32, polynomial32 @ x32, xp.float64)
            np.testing.assert_array_equal(_bfloat16_values(xp, found), new_x.float().numpy())
            x = new_x


def test_state_dict_has_torchs_keys_and_loads_torchs(on_numpy) -> None:
    ours, theirs = start(SHAPES, "float32")
    options = {"lr": 0.05, "adjust_lr_fn": "original", "nesterov": False}
    opt, reference = optim.Muon(ours, **options), torch.optim.Muon(theirs, **options)
    rng = np.random.default_rng(5)
    for _ in range(3):
        set_gradients(ours, theirs, rng, skip=1)
        opt.step()
        reference.step()
    saved, expected = opt.state_dict(), reference.state_dict()
    assert list(saved["param_groups"][0]) == list(expected["param_groups"][0])
    assert saved["param_groups"] == expected["param_groups"]
    assert set(saved["state"]) == set(expected["state"]) == {0, 2}
    for index, entry in expected["state"].items():
        assert list(saved["state"][index]) == list(entry) == ["momentum_buffer"]
        assert saved["state"][index]["momentum_buffer"].shape == tuple(
            entry["momentum_buffer"].shape
        )
    # PyTorch's dict (its tensors) into a new plugrad Muon over copies of its parameters:
    # the same trajectory on.
    copies = [plugrad.asarray(q.detach().numpy().copy(), requires_grad=True) for q in theirs]
    loaded = optim.Muon(copies, lr=1.0)  # the dict brings the options
    loaded.load_state_dict(copy.deepcopy(expected))
    assert loaded.param_groups[0]["lr"] == 0.05 and loaded.param_groups[0]["nesterov"] is False
    for _ in range(3):
        set_gradients(copies, theirs, rng)
        loaded.step()
        reference.step()
    assert_same(loaded, copies, reference, theirs, TOLERANCE["float32"])


def test_state_dict_round_trip_continues_the_same_trajectory(backend, tmp_path) -> None:
    ours, _ = start(SHAPES, "float32")
    twins = [plugrad.asarray(p.detach().numpy().copy(), requires_grad=True) for p in ours]
    opt = optim.Muon(ours, lr=0.05, momentum=0.9)
    rng = np.random.default_rng(6)
    grads = [[rng.normal(size=p.shape).astype(np.float32) for p in ours] for _ in range(5)]

    def step(optimizer, params, gradients) -> None:
        for p, g in zip(params, gradients):
            p.grad = plugrad.asarray(g)
        optimizer.step()

    for gradients in grads[:3]:
        step(opt, ours, gradients)
    saved = opt.state_dict()
    plugrad.save(saved, tmp_path / "muon.safetensors")
    restored = optim.Muon(twins, lr=1.0)
    restored.load_state_dict(plugrad.load(tmp_path / "muon.safetensors", backend="numpy"))
    with plugrad.no_grad():
        for twin, p in zip(twins, ours):
            twin.copy_(p)
    for gradients in grads[3:]:
        step(opt, ours, gradients)
        step(restored, twins, gradients)
    for p, twin in zip(ours, twins):
        np.testing.assert_array_equal(p.detach().numpy(), twin.detach().numpy())


def test_a_bad_state_dict_is_refused_and_changes_nothing(on_numpy, refuses_each) -> None:
    ours, _ = start(SHAPES, "float32")
    opt = optim.Muon(ours, lr=0.05)
    for p in ours:
        p.grad = plugrad.ones(p.shape)
    opt.step()
    saved = opt.state_dict()
    cases = [
        (lambda s: s["state"][0].update(step=1), InvalidArgumentError,
         "Muon keeps ['momentum_buffer'] per parameter, not ['step']"),
        (lambda s: s["state"][1].update(momentum_buffer="zeros"), ArgumentError,
         "state 'momentum_buffer' of a parameter of shape (5, 2) must be a Tensor"),
        (lambda s: s["state"][2].update(momentum_buffer=plugrad.zeros((4, 2))),
         InvalidArgumentError, "has shape (4, 2) but its parameter has shape (2, 4)"),
        (lambda s: s["param_groups"][0].update(ns_steps=100), InvalidArgumentError,
         "ns_steps must be below 100"),
        (lambda s: s["param_groups"][0].update(adjust_lr_fn="sqrt"), InvalidArgumentError,
         "adjust_lr_fn must be None, 'original' or 'match_rms_adamw'"),
    ]  # fmt: skip
    refuses_each(opt, saved, cases)


def test_a_closure_is_evaluated_and_its_loss_returned(on_numpy) -> None:
    # float64, and a loss whose gradient both libraries compute exactly: 2 (w - target).
    ours, theirs = start(SHAPES, "float64")
    targets = [np.full(p.shape, 0.5) for p in ours]
    opt = optim.Muon(ours, lr=0.1)
    reference = torch.optim.Muon(theirs, lr=0.1)

    def closure_of(lib, optimizer, params):
        def closure():
            optimizer.zero_grad()
            loss = sum(((p - lib.tensor(t)) ** 2).sum() for p, t in zip(params, targets))
            loss.backward()
            return loss

        return closure

    for _ in range(4):
        loss = opt.step(closure_of(plugrad, opt, ours))
        expected = reference.step(closure_of(torch, reference, theirs))
        assert loss.item() == pytest.approx(expected.item(), rel=1e-12)
        assert_same(opt, ours, reference, theirs, TOLERANCE["float64"])


@pytest.mark.parametrize("nesterov", [True, False])
def test_an_infinite_gradient_gives_what_torchs_gives_without_warnings(on_numpy, nesterov):
    # NaN parameters (the norm is infinite), an infinite buffer element; NumPy's warnings
    # of inf - inf (errors under pytest) were raised from the Nesterov lerp.
    ours, theirs = start([(2, 3)], "float32")
    opt = optim.Muon(ours, lr=0.1, nesterov=nesterov)
    reference = torch.optim.Muon(theirs, lr=0.1, nesterov=nesterov)
    gradient = np.ones((2, 3), dtype=np.float32)
    gradient[0, 1] = np.inf
    ours[0].grad, theirs[0].grad = plugrad.asarray(gradient), torch.tensor(gradient)
    opt.step()
    reference.step()
    assert np.isnan(ours[0].detach().numpy()).all() and np.isnan(theirs[0].detach().numpy()).all()
    np.testing.assert_array_equal(
        opt.state[ours[0]]["momentum_buffer"].numpy(),
        reference.state[theirs[0]]["momentum_buffer"].numpy(),
    )


def test_compiled_training_step_equals_eager(on_numpy) -> None:
    # The matrices of the classifier (Muon takes those only; the biases stay as they are).
    def make(params):
        return optim.Muon([p for p in params if p.ndim == 2], lr=0.05, momentum=0.9)

    x, labels = classification_batch()
    trajectories = []
    for compiled in (False, True):
        model, optimizer = classifier_and_optimizer(make, plugrad.nn.Tanh)
        train = training_step(model, optimizer)
        step = plugrad.compile(train, fullgraph=True) if compiled else train
        trajectories.append(trajectory(step, model, 8))
        if compiled:
            assert step.captures <= 2  # the first step makes the momentum buffers
            assert "advance_" in step.code(x, labels)  # the step is array code
    (eager_losses, eager_params), (losses, params) = trajectories
    np.testing.assert_array_equal(losses, eager_losses)
    for a, b in zip(params, eager_params):
        np.testing.assert_array_equal(a, b)


def test_a_scheduled_momentum_is_read_at_each_step(on_numpy) -> None:
    # OneCycleLR changes lr and momentum at each step, in PyTorch's Muon as in ours.
    ours, theirs = start(SHAPES, "float32")
    opt, reference = optim.Muon(ours), torch.optim.Muon(theirs)
    schedules = [
        optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10),
        torch.optim.lr_scheduler.OneCycleLR(reference, max_lr=0.1, total_steps=10),
    ]
    rng = np.random.default_rng(7)
    momenta = set()
    for _ in range(6):
        set_gradients(ours, theirs, rng)
        opt.step()
        reference.step()
        for schedule in schedules:
            schedule.step()
        momenta.add(opt.param_groups[0]["momentum"])
        assert opt.param_groups[0]["momentum"] == reference.param_groups[0]["momentum"]
    assert len(momenta) > 3
    assert_same(opt, ours, reference, theirs, TOLERANCE["float32"])


# -- errors where PyTorch raises ---------------------------------------------------------


def matrix(lib, shape=(2, 3), dtype=None):
    return lib.nn.Parameter(lib.ones(shape, dtype=dtype))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lr": -0.1}, "lr must be at least 0"),
        ({"momentum": -0.5}, "momentum must be at least 0"),
        ({"weight_decay": -1.0}, "weight_decay must be at least 0"),
        ({"adjust_lr_fn": "sqrt"}, "adjust_lr_fn must be None, 'original' or 'match_rms_adamw'"),
    ],
)
def test_options_torch_refuses_are_refused(on_numpy, options, message) -> None:
    with pytest.raises(ValueError):
        torch.optim.Muon([matrix(torch)], **options)
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        optim.Muon([matrix(plugrad)], **options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"ns_steps": 100}, "ns_steps must be below 100"),
        ({"ns_coefficients": (3.4, -4.7)}, "ns_coefficients must be three numbers (a, b, c)"),
    ],
)
def test_options_torch_refuses_at_its_step_are_refused_when_given(on_numpy, options, message):
    reference = torch.optim.Muon([w := matrix(torch)], **options)
    w.grad = torch.ones(2, 3)
    with pytest.raises(ValueError):
        reference.step()
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        optim.Muon([matrix(plugrad)], **options)


@pytest.mark.parametrize("shape", [(3,), (2, 3, 4), ()])
def test_parameters_that_are_not_matrices_are_refused(on_numpy, shape) -> None:
    with pytest.raises(ValueError, match="only supports 2D parameters"):
        torch.optim.Muon([matrix(torch), matrix(torch, shape)])
    with pytest.raises(ShapeError, match=re.escape(f"got one of shape {shape}")):
        optim.Muon([matrix(plugrad), matrix(plugrad, shape)])
    # A group added later too (PyTorch's fails at its step), leaving the optimizer as it was.
    opt = optim.Muon([matrix(plugrad)])
    with pytest.raises(ShapeError, match="only optimizes 2-D parameters"):
        opt.add_param_group({"params": [matrix(plugrad, shape)]})
    assert len(opt.param_groups) == 1


def test_complex_parameters_are_refused(on_numpy) -> None:
    reference = torch.optim.Muon([w := matrix(torch, dtype=torch.complex64)])
    w.grad = torch.ones(2, 3, dtype=torch.complex64)
    with pytest.raises(RuntimeError, match="does not support complex"):
        reference.step()
    with pytest.raises(DtypeError, match="Muon does not support complex parameters"):
        optim.Muon([matrix(plugrad, dtype=plugrad.complex64)])


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"nesterov": 1}, TypeError, "nesterov"),
        ({"eps": -1e-7}, ValueError, "eps must be at least 0"),
        ({"ns_steps": 2.5}, ValueError, "ns_steps must be an int >= 0"),
        ({"ns_steps": -1}, ValueError, "ns_steps must be an int >= 0"),
        ({"ns_coefficients": (1.0, float("nan"), 2.0)}, ValueError, "ns_coefficients[1]"),
        ({"ns_coefficients": 3.0}, ValueError, "ns_coefficients must be three numbers"),
    ],
)
def test_unusable_options_are_typed_errors(on_numpy, options, error, message) -> None:
    # (PyTorch takes these when the optimizer is built; its step fails, or computes with
    # them: a negative eps divides a zero gradient by 0.)
    with pytest.raises(error, match=re.escape(message)) as raised:
        optim.Muon([matrix(plugrad)], **options)
    assert isinstance(raised.value, plugrad.errors.PlugradError)
