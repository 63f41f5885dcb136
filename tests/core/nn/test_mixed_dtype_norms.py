"""Normalizations of a float16 or bfloat16 input with float32 parameters, as PyTorch's "mixed
dtype" ones: computed in float32, the result in the input's dtype, float32 gradients for the
parameters (a lowered activation under autocast into a float32 LayerNorm or BatchNorm). The
other way round (a float32 input, half-precision parameters) is refused, as there."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.errors import DtypeError

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 4, 3, 3)).astype(np.float32)
W4 = np.linspace(0.5, 1.5, 4, dtype=np.float32)
W3 = np.linspace(0.5, 1.5, 3, dtype=np.float32)

NORMS = {
    "layer_norm": lambda F, x, w4, w3, stats: F.layer_norm(x, (3,), w3, w3 * 0.5),
    "batch_norm": lambda F, x, w4, w3, stats: F.batch_norm(x, *stats, w4, w4 * 0.5, training=True),
    "batch_norm eval": lambda F, x, w4, w3, stats: F.batch_norm(x, *stats, w4, None),
    "group_norm": lambda F, x, w4, w3, stats: F.group_norm(x, 2, w4, w4 * 0.5),
    "instance_norm": lambda F, x, w4, w3, stats: F.instance_norm(x, weight=w4, bias=None),
    "rms_norm": lambda F, x, w4, w3, stats: F.rms_norm(x, (3,), w3),
}


def _run(lib, device, half, norm):
    options = {} if lib is torch else {"device": device}
    x = lib.tensor(X, **options).to(getattr(lib, half)).requires_grad_(True)
    w4 = lib.tensor(W4, requires_grad=True, **options)
    w3 = lib.tensor(W3, requires_grad=True, **options)
    stats = (lib.zeros(4, **options), lib.ones(4, **options))
    out = NORMS[norm](lib.nn.functional, x, w4, w3, stats)
    grads = lib.autograd.grad(out.float().sum(), [x, w4, w3], allow_unused=True)
    return out, grads, stats


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")  # torch's rms_norm
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(("device", "half"), [("numpy", "float16"), ("torch", "bfloat16")])
def test_a_half_input_with_float32_parameters_as_pytorch(device, half, norm) -> None:
    if half == "bfloat16":
        pytest.importorskip("ml_dtypes")
    ours, theirs = _run(plugrad, device, half, norm), _run(torch, None, half, norm)
    assert str(ours[0].dtype).split(".")[-1] == half == str(theirs[0].dtype).split(".")[-1]
    np.testing.assert_array_equal(
        ours[0].detach().float().numpy(), theirs[0].detach().float().numpy()
    )
    for mine, reference in zip(ours[1], theirs[1]):
        assert (mine is None) == (reference is None)
        if mine is not None:
            assert str(mine.dtype).split(".")[-1] == str(reference.dtype).split(".")[-1]
            scale = max(1.0, float(np.abs(reference.float().numpy()).max()))
            np.testing.assert_allclose(
                mine.float().numpy(), reference.float().numpy(), atol=2**-6 * scale
            )
    for mine, reference in zip(ours[2], theirs[2]):  # running statistics, in float32
        assert mine.dtype is plugrad.float32
        np.testing.assert_allclose(mine.numpy(), reference.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("norm", ["layer_norm", "batch_norm", "group_norm"])
def test_a_float32_input_with_half_parameters_is_refused_as_pytorch(norm) -> None:
    x = plugrad.tensor(X)
    w4, w3 = plugrad.tensor(W4).half(), plugrad.tensor(W3).half()
    stats = (plugrad.zeros(4), plugrad.ones(4))
    with pytest.raises(DtypeError, match="float16"):
        NORMS[norm](plugrad.nn.functional, x, w4, w3, stats)
    with pytest.raises(RuntimeError, match="mixed dtype"):
        NORMS[norm](torch.nn.functional, torch.tensor(X), torch.tensor(W4).half(),
                    torch.tensor(W3).half(), (torch.zeros(4), torch.ones(4)))  # fmt: skip


def test_a_lowered_activation_into_layer_norm_and_batch_norm_trains_under_autocast() -> None:
    model = plugrad.nn.Sequential(
        plugrad.nn.Conv2d(3, 4, 3), plugrad.nn.BatchNorm2d(4), plugrad.nn.Flatten(),
        plugrad.nn.Linear(16, 8), plugrad.nn.LayerNorm(8),
    )  # fmt: skip
    with plugrad.autocast("cpu", dtype=plugrad.float16):
        out = model(plugrad.ones((2, 3, 4, 4)))
    assert out.dtype is plugrad.float16
    out.float().sum().backward()
    assert all(p.grad.dtype is plugrad.float32 for p in model.parameters())
