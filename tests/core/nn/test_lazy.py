"""Lazy layers: the first call (or a state dict) gives their parameters shapes, as torch.nn's."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad import nn
from plugrad.errors import (
    InvalidArgumentError,
    ShapeError,
    StateDictError,
    UninitializedParameterError,
)

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)

# (how to build the lazy layer from a namespace, an input shape)
LAZY_LAYERS: list[tuple[str, Callable[[Any], Any], tuple[int, ...]]] = [
    ("linear", lambda m: m.LazyLinear(3), (2, 5)),
    ("linear 3-d input", lambda m: m.LazyLinear(3, bias=False), (2, 4, 5)),
    ("conv1d", lambda m: m.LazyConv1d(4, 3, padding=1), (2, 3, 7)),
    ("conv1d unbatched", lambda m: m.LazyConv1d(4, 3), (3, 7)),
    ("conv2d groups", lambda m: m.LazyConv2d(6, 3, groups=2, bias=False), (2, 4, 6, 6)),
    ("conv3d", lambda m: m.LazyConv3d(2, 2, stride=2), (1, 3, 4, 4, 4)),
    ("conv_transpose1d", lambda m: m.LazyConvTranspose1d(4, 3, stride=2), (2, 3, 5)),
    ("conv_transpose2d groups", lambda m: m.LazyConvTranspose2d(4, 3, groups=2), (2, 6, 4, 4)),
    ("conv_transpose3d", lambda m: m.LazyConvTranspose3d(2, 2), (1, 3, 3, 3, 3)),
    ("batch_norm1d", lambda m: m.LazyBatchNorm1d(), (4, 3)),
    ("batch_norm1d 3-d", lambda m: m.LazyBatchNorm1d(momentum=None), (4, 3, 5)),
    ("batch_norm2d", lambda m: m.LazyBatchNorm2d(affine=False), (4, 3, 2, 2)),
    ("batch_norm3d", lambda m: m.LazyBatchNorm3d(), (2, 3, 2, 2, 2)),
    ("instance_norm1d", lambda m: m.LazyInstanceNorm1d(affine=True), (2, 3, 6)),
    ("instance_norm2d", lambda m: m.LazyInstanceNorm2d(), (2, 3, 4, 4)),
    ("instance_norm3d", lambda m: m.LazyInstanceNorm3d(track_running_stats=False), (2, 3, 2, 2, 2)),
]


@pytest.mark.parametrize(("build", "shape"), [row[1:] for row in LAZY_LAYERS],
                         ids=[row[0] for row in LAZY_LAYERS])  # fmt: skip
def test_first_call_shapes_the_layer_as_pytorch(build: Callable[[Any], Any], shape: tuple) -> None:
    """The same class, sizes, parameter and buffer shapes as PyTorch's after the first call;
    with PyTorch's values loaded, the same outputs and gradients."""
    ours, theirs = build(nn), build(torch.nn)
    assert ours.has_uninitialized_params()
    held = [*ours.parameters(), *ours.buffers()]
    input = RNG.standard_normal(shape).astype(np.float32)
    x, y = plugrad.asarray(input, requires_grad=True), torch.tensor(input, requires_grad=True)
    ours(x)
    theirs(y)
    assert type(ours).__name__ == type(theirs).__name__  # LazyLinear became Linear
    assert repr(ours) == repr(theirs)
    # The same objects, now ordinary Parameters and Tensors.
    assert all(any(t is h for h in held) for t in [*ours.parameters(), *ours.buffers()])
    assert all(type(p) is nn.Parameter for p in ours.parameters())
    assert all(type(b) is plugrad.Tensor for b in ours.buffers())
    shapes = {k: tuple(v.shape) for k, v in ours.state_dict().items()}
    assert shapes == {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    out, expected = ours(x), theirs(y)
    np.testing.assert_allclose(
        out.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-5
    )
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_initial_values_are_those_of_the_ordinary_layer() -> None:
    """Initialised at the first call as the layer itself is, from the same random stream."""
    plugrad.manual_seed(3)
    lazy = nn.LazyLinear(4)
    lazy(plugrad.ones((1, 6)))
    plugrad.manual_seed(3)
    plain = nn.Linear(6, 4)
    np.testing.assert_array_equal(lazy.weight.detach().numpy(), plain.weight.detach().numpy())
    np.testing.assert_array_equal(lazy.bias.detach().numpy(), plain.bias.detach().numpy())
    plugrad.manual_seed(3)
    conv = nn.LazyConv2d(2, 3)
    conv(plugrad.ones((1, 5, 4, 4)))
    plugrad.manual_seed(3)
    np.testing.assert_array_equal(
        conv.weight.detach().numpy(), nn.Conv2d(5, 2, 3).weight.detach().numpy()
    )
    norm = nn.LazyBatchNorm1d()
    norm.eval()
    norm(plugrad.ones((2, 3)))
    np.testing.assert_array_equal(norm.running_var.numpy(), np.ones(3, np.float32))
    np.testing.assert_array_equal(norm.weight.detach().numpy(), np.ones(3, np.float32))


def test_placement_and_an_optimizer_made_before_the_first_call() -> None:
    assert nn.LazyLinear(4).weight.dtype is plugrad.float32
    # Tanh, not ReLU: a random start can leave every ReLU unit dead, and no gradient to move by
    model = nn.Sequential(
        nn.LazyLinear(4, dtype=plugrad.float64), nn.Tanh(), nn.LazyLinear(1, dtype=plugrad.float64)
    )
    assert model[0].weight.dtype is plugrad.float64
    optimizer = plugrad.optim.Adam(model.parameters(), lr=0.1)
    x = plugrad.ones((8, 3), dtype=plugrad.float64)
    before = None
    for _ in range(3):
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        if before is None:
            before = model[0].weight.clone()
    assert model[0].weight.shape == (4, 3) and model[0].weight.dtype is plugrad.float64
    assert not bool((model[0].weight == before).all())  # the optimizer moved it


def test_uninitialized_parameters_refuse_every_use_with_a_clear_error() -> None:
    layer = nn.LazyLinear(2)
    weight = layer.weight
    assert repr(weight) == "<UninitializedParameter>"
    assert weight.dtype is plugrad.float32 and weight.requires_grad
    for use in (
        lambda: weight.shape,
        lambda: weight.sum(),
        lambda: weight + 1,
        lambda: weight.numpy(force=True),
        lambda: sum(p.numel() for p in layer.parameters()),
    ):
        with pytest.raises(UninitializedParameterError, match="dry run"):
            use()
    assert layer.has_uninitialized_params() and layer.weight is weight
    assert repr(layer.state_dict()["weight"]) == "<UninitializedParameter>"


def test_bad_first_inputs_leave_the_layer_lazy() -> None:
    with pytest.raises(InvalidArgumentError, match=r"groups=4 must divide .*out_channels=6"):
        nn.LazyConv2d(6, 3, groups=4)
    conv = nn.LazyConv2d(6, 3, groups=2)
    with pytest.raises(ShapeError, match="groups=2 must divide the input's 3 channels"):
        conv(plugrad.ones((1, 3, 5, 5)))
    with pytest.raises(ShapeError, match="expected a 3-d or 4-d input"):
        conv(plugrad.ones((5, 5)))
    assert type(conv) is nn.LazyConv2d and conv.has_uninitialized_params()
    assert conv(plugrad.ones((1, 8, 5, 5))).shape == (1, 6, 3, 3)
    with pytest.raises(ShapeError, match="last axis"):
        nn.LazyLinear(2)(plugrad.tensor(1.0))


def test_a_state_dict_shapes_the_layer_and_a_failed_load_changes_nothing() -> None:
    source = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    lazy = nn.Sequential(nn.LazyLinear(4), nn.LazyLinear(2))
    lazy.load_state_dict(source.state_dict())
    assert type(lazy[0]) is nn.Linear and lazy[0].in_features == 3 and lazy[1].in_features == 4
    np.testing.assert_array_equal(
        lazy[1].weight.detach().numpy(), source[1].weight.detach().numpy()
    )
    # A missing key, or a mismatch elsewhere: nothing is materialized.
    for target, state in (
        (nn.LazyLinear(4), {"weight": plugrad.ones(4, 3)}),
        (nn.Sequential(nn.LazyLinear(4), nn.Linear(4, 3)), source.state_dict()),
    ):
        with pytest.raises(StateDictError):
            target.load_state_dict(state)
        layer = target[0] if isinstance(target, nn.Sequential) else target
        assert type(layer) is nn.LazyLinear and layer.in_features == 0
        assert repr(layer.weight) == "<UninitializedParameter>"
        assert layer.has_uninitialized_params()


def test_deepcopy_before_the_first_call_is_independent() -> None:
    lazy = nn.LazyConv1d(2, 3)
    twin = copy.deepcopy(lazy)
    lazy(plugrad.ones((1, 5, 8)))
    assert twin.has_uninitialized_params()
    twin(plugrad.ones((1, 2, 8)))
    assert twin.weight.shape == (2, 2, 3) and lazy.weight.shape == (2, 5, 3)


def test_unbatched_instance_norm_reads_the_channel_axis() -> None:
    """(PyTorch's lazy instance norms read axis 1 of an unbatched input, its length.)"""
    norm = nn.LazyInstanceNorm1d()
    assert norm(plugrad.ones((3, 6))).shape == (3, 6)
    assert norm.num_features == 3 and norm.weight.shape == (3,)
    conv = nn.LazyConv1d(2, 3)
    conv(plugrad.ones((5, 8)))
    assert conv.in_channels == 5


def test_uninitialized_parameter_materialize() -> None:
    buffer = nn.UninitializedBuffer(dtype=plugrad.float64)
    assert not buffer.requires_grad
    buffer.materialize(3)
    assert type(buffer) is plugrad.Tensor and buffer.shape == (3,)
    assert buffer.dtype is plugrad.float64


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_a_compiled_training_step_with_lazy_layers_matches_eager(optimizer: str) -> None:
    """The first call shapes the layers (captured, not kept); later calls replay."""

    def trajectory(compiled: bool) -> tuple[list[float], int | None]:
        plugrad.manual_seed(0)
        model = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(1))
        opt = getattr(plugrad.optim, optimizer)(model.parameters(), lr=0.05)

        def step(x: plugrad.Tensor, y: plugrad.Tensor) -> plugrad.Tensor:
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        run = plugrad.compile(step) if compiled else step
        x, y = plugrad.ones((8, 3)), plugrad.zeros((8, 1))
        return [run(x, y).item() for _ in range(6)], getattr(run, "captures", None)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eager, _ = trajectory(False)
        compiled, captures = trajectory(True)
    assert compiled == eager
    assert captures is not None and captures <= 3


def test_a_compiled_forward_does_not_initialise_again_at_each_replay() -> None:
    model = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(1))
    forward = plugrad.compile(model)
    x = plugrad.ones((2, 3))
    with plugrad.no_grad():
        first = forward(x).numpy().copy()
        weight = model[0].weight.detach().numpy().copy()
        for _ in range(3):
            np.testing.assert_array_equal(forward(x).numpy(), first)
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), weight)


@pytest.mark.parametrize(
    "convert",
    [
        lambda m, lib: m.to(lib.float64),
        lambda m, lib: m.double(),
        lambda m, lib: m.to(dtype=lib.float64),
    ],
    ids=["to(dtype)", "double()", "to(dtype=)"],
)
def test_a_lazy_layer_converted_before_its_first_call_makes_values_of_that_dtype(convert):
    # PyTorch's module_db makes its layers so (LazyConv1d(5, 3).to(float64)): the dtype read
    # the uninitialized parameter's values and raised UninitializedParameterError.
    torch = pytest.importorskip("torch")
    results = []
    for lib in (plugrad, torch):
        layer = convert(lib.nn.LazyBatchNorm1d(), lib)
        out = layer(lib.ones(4, 3, dtype=lib.float64))
        results.append(
            [str(t.dtype).split(".")[-1] for t in (out, layer.weight, layer.running_mean)]
        )
        results[-1].append(str(layer.num_batches_tracked.dtype).split(".")[-1])
    assert results[0] == results[1] == ["float64", "float64", "float64", "int64"]


def test_a_lazy_layer_refused_a_conversion_keeps_its_dtype():
    layer = plugrad.nn.LazyLinear(2)
    with pytest.raises(plugrad.errors.DtypeError):
        layer.to(plugrad.int32)
    assert layer(plugrad.ones(1, 3)).dtype is plugrad.float32
