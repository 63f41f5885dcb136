"""``nn.utils.fusion`` (batch norm folded into the layer before it) and
``func.stack_module_state``, against PyTorch's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import plugrad
from plugrad.errors import InvalidArgumentError, ShapeError
from plugrad.func import stack_module_state, vmap
from plugrad.nn.utils import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(17)


def same_state(lib: Any, module: Any, reference: Any) -> None:
    """Give ``module`` (of ``lib``) the values of the torch module ``reference``."""
    with lib.no_grad():
        for name, value in reference.state_dict().items():
            target = module.state_dict()[name]
            target.copy_(lib.tensor(value.detach().numpy()))


def random_bn(bn: Any) -> None:
    with torch.no_grad():
        bn.running_mean.copy_(torch.tensor(RNG.normal(size=bn.num_features)))
        bn.running_var.copy_(torch.tensor(RNG.uniform(0.5, 2.0, bn.num_features)))
        if bn.weight is not None:
            bn.weight.copy_(torch.tensor(RNG.normal(size=bn.num_features)))
            bn.bias.copy_(torch.tensor(RNG.normal(size=bn.num_features)))


LAYERS = {
    "conv2d": (lambda L: L.nn.Conv2d(2, 3, 3), lambda L: L.nn.BatchNorm2d(3), (1, 2, 6, 6), False),
    "conv1d no bias": (
        lambda L: L.nn.Conv1d(2, 4, 3, bias=False), lambda L: L.nn.BatchNorm1d(4), (2, 2, 7), False,
    ),
    "conv transpose": (
        lambda L: L.nn.ConvTranspose2d(3, 2, 3), lambda L: L.nn.BatchNorm2d(2), (1, 3, 4, 4), True,
    ),
    "bn without affine": (
        lambda L: L.nn.Conv2d(2, 3, 1), lambda L: L.nn.BatchNorm2d(3, affine=False),
        (1, 2, 3, 3), False,
    ),
}  # fmt: skip


@pytest.mark.parametrize("backend", backends_under_test())
@pytest.mark.parametrize("name", list(LAYERS))
def test_fused_convolution_agrees_with_torch(name: str, backend: str) -> None:
    make_conv, make_bn, shape, transpose = LAYERS[name]
    conv, bn = make_conv(torch).double().eval(), make_bn(torch).double().eval()
    random_bn(bn)
    x = RNG.normal(size=shape)
    theirs = torch.nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
    with plugrad.use_backend(backend):
        our_conv, our_bn = make_conv(plugrad).double().eval(), make_bn(plugrad).double().eval()
        same_state(plugrad, our_conv, conv)
        same_state(plugrad, our_bn, bn)
        ours = fuse_conv_bn_eval(our_conv, our_bn, transpose=transpose)
        out = ours(plugrad.tensor(x)).detach().numpy()
        unfused = our_bn(our_conv(plugrad.tensor(x))).detach().numpy()
        assert ours is not our_conv and our_conv.weight is not ours.weight
    expected = theirs(torch.tensor(x)).detach().numpy()
    # An output is a sum of products: one near zero by cancellation carries rounding of the
    # size of the others (the weights are torch's random initialisation, new at each run).
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    np.testing.assert_allclose(out, unfused, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
    assert isinstance(ours.weight, plugrad.nn.Parameter) and ours.weight.requires_grad


@pytest.mark.parametrize("features", [4, 1])
def test_fused_linear_agrees_with_torch(features: int) -> None:
    linear, bn = torch.nn.Linear(3, 4).double().eval(), torch.nn.BatchNorm1d(features).double()
    bn.eval()
    random_bn(bn)
    x = RNG.normal(size=(5, 3))
    theirs = torch.nn.utils.fuse_linear_bn_eval(linear, bn)
    our_linear, our_bn = plugrad.nn.Linear(3, 4).double().eval(), plugrad.nn.BatchNorm1d(features)
    our_bn = our_bn.double().eval()
    same_state(plugrad, our_linear, linear)
    same_state(plugrad, our_bn, bn)
    ours = fuse_linear_bn_eval(our_linear, our_bn)
    np.testing.assert_allclose(
        ours(plugrad.tensor(x)).detach().numpy(),
        theirs(torch.tensor(x)).detach().numpy(),
        rtol=1e-12,
    )


def test_the_weight_functions_agree_with_torch() -> None:
    w, b = RNG.normal(size=(3, 2, 2, 2)), RNG.normal(size=3)
    rm, rv, g, beta = (
        RNG.normal(size=3),
        RNG.uniform(0.5, 2, 3),
        RNG.normal(size=3),
        RNG.normal(size=3),
    )
    for transpose in (False, True):
        weight = w if not transpose else w.transpose(1, 0, 2, 3).copy()
        ours = fuse_conv_bn_weights(*map(plugrad.tensor, (weight, b, rm, rv)), 1e-3,
                                    plugrad.tensor(g), None, transpose)  # fmt: skip
        theirs = torch.nn.utils.fuse_conv_bn_weights(*map(torch.tensor, (weight, b, rm, rv)), 1e-3,
                                                     torch.tensor(g), None, transpose)  # fmt: skip
        for mine, reference in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(mine.detach().numpy(), reference.detach().numpy())
    lw = RNG.normal(size=(3, 5))
    ours = fuse_linear_bn_weights(plugrad.tensor(lw), None, *map(plugrad.tensor, (rm, rv)), 1e-5,
                                  plugrad.tensor(g), plugrad.tensor(beta))  # fmt: skip
    theirs = torch.nn.utils.fuse_linear_bn_weights(torch.tensor(lw), None,
                                                   *map(torch.tensor, (rm, rv)), 1e-5,
                                                   torch.tensor(g), torch.tensor(beta))  # fmt: skip
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine.detach().numpy(), reference.detach().numpy())


def test_fusion_refuses_what_it_cannot_fold() -> None:
    conv, bn = plugrad.nn.Conv2d(2, 3, 3), plugrad.nn.BatchNorm2d(3)
    with pytest.raises(InvalidArgumentError, match="evaluation mode"):
        fuse_conv_bn_eval(conv, bn)
    with pytest.raises(InvalidArgumentError, match="no running statistics"):
        fuse_conv_bn_eval(conv.eval(), plugrad.nn.BatchNorm2d(3, track_running_stats=False).eval())
    with pytest.raises(ShapeError, match="4 features but the convolution 3"):
        fuse_conv_bn_eval(conv.eval(), plugrad.nn.BatchNorm2d(4).eval())
    with pytest.raises(TypeError, match="convolution layer first"):
        fuse_conv_bn_eval(plugrad.nn.Linear(2, 2).eval(), bn.eval())  # type: ignore[type-var]
    with pytest.raises(TypeError, match="BatchNorm layer second"):
        fuse_linear_bn_eval(plugrad.nn.Linear(2, 2).eval(), plugrad.nn.ReLU())  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="must be equal"):
        fuse_linear_bn_eval(plugrad.nn.Linear(2, 3).eval(), plugrad.nn.BatchNorm1d(2).eval())


def test_stack_module_state_agrees_with_torch_and_runs_an_ensemble() -> None:
    references = [torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)).double()
                  for _ in range(3)]  # fmt: skip
    models = [plugrad.nn.Sequential(plugrad.nn.Linear(3, 4), plugrad.nn.BatchNorm1d(4)).double()
              for _ in range(3)]  # fmt: skip
    for model, reference in zip(models, references, strict=True):
        same_state(plugrad, model, reference)
    params, buffers = stack_module_state(models)
    their_params, their_buffers = torch.func.stack_module_state(references)
    assert list(params) == list(their_params) and list(buffers) == list(their_buffers)
    for ours, theirs in ((params, their_params), (buffers, their_buffers)):
        for name in theirs:
            np.testing.assert_array_equal(
                ours[name].detach().numpy(), theirs[name].detach().numpy()
            )
            assert ours[name].requires_grad == theirs[name].requires_grad
            assert ours[name].is_leaf
    x = RNG.normal(size=(5, 3))
    for each in models + references:
        each.eval()

    def run(lib: Any, model: Any) -> Any:
        return lambda p, b, data: lib.func.functional_call(model, (p, b), (data,))

    ours = vmap(run(plugrad, models[0]), in_dims=(0, 0, None))(params, buffers, plugrad.tensor(x))
    theirs = torch.func.vmap(run(torch, references[0]), in_dims=(0, 0, None))(
        their_params, their_buffers, torch.tensor(x)
    )
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    ours.sum().backward()
    assert params["0.weight"].grad.shape == (3, 4, 3)
    assert models[0][0].weight.grad is None  # the stacked leaves are the models' own no more


def test_stack_module_state_refuses_models_that_differ() -> None:
    with pytest.raises(InvalidArgumentError, match="at least one model"):
        stack_module_state([])
    with pytest.raises(InvalidArgumentError, match="one class"):
        stack_module_state([plugrad.nn.Linear(2, 2), plugrad.nn.Conv1d(2, 2, 1)])
    with pytest.raises(InvalidArgumentError, match="same mode"):
        stack_module_state([plugrad.nn.Linear(2, 2), plugrad.nn.Linear(2, 2).eval()])
    with pytest.raises(InvalidArgumentError, match="shape"):
        stack_module_state([plugrad.nn.Linear(2, 2), plugrad.nn.Linear(3, 2)])
    frozen = plugrad.nn.Linear(2, 2)
    frozen.weight.requires_grad_(False)
    with pytest.raises(InvalidArgumentError, match="requires grad in some"):
        stack_module_state([plugrad.nn.Linear(2, 2), frozen])
    with pytest.raises(TypeError, match="takes Modules"):
        stack_module_state([plugrad.nn.Linear(2, 2), "model"])  # type: ignore[list-item]
