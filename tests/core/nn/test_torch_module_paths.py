"""``plugrad.nn.modules``: PyTorch's import paths of the layers, for code that uses them."""

from __future__ import annotations

import importlib

import pytest

import plugrad
from plugrad import nn

PATHS = [
    "activation", "batchnorm", "channelshuffle", "container", "conv", "distance", "dropout",
    "flatten", "fold", "instancenorm", "lazy", "linear", "loss", "module", "normalization",
    "padding", "pixelshuffle", "pooling", "rnn", "sparse", "transformer", "upsampling",
]  # fmt: skip


def test_a_custom_loss_and_a_weight_decay_split_written_for_pytorch_run():
    from plugrad.nn.modules.activation import MultiheadAttention
    from plugrad.nn.modules.loss import _Loss

    class Half(_Loss):
        def forward(self, input, target):
            return 0.5 * (input - target).abs().mean()

    assert Half()(plugrad.ones(2), plugrad.zeros(2)).item() == 0.5
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.LazyLinear(2))
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    convs = [m for m in model.modules() if isinstance(m, nn.modules.conv._ConvNd)]
    assert norms == [model[1]] and convs == [model[0]]
    assert MultiheadAttention is nn.MultiheadAttention
    assert nn.modules.module.Module is nn.Module


@pytest.mark.parametrize("path", PATHS)
def test_each_path_holds_the_classes_pytorchs_holds_that_plugrad_has(path):
    ours = importlib.import_module(f"plugrad.nn.modules.{path}")
    torch = pytest.importorskip("torch")
    theirs = importlib.import_module(f"torch.nn.modules.{path}")
    names = [
        name for name, value in vars(theirs).items()
        if isinstance(value, type) and value.__module__ == theirs.__name__
        and hasattr(nn, name) and not name.startswith("_")
    ]  # fmt: skip
    assert names, f"torch.nn.modules.{path} shares no layer with plugrad.nn"
    for name in names:
        assert getattr(ours, name) is getattr(nn, name), name
    assert torch  # the oracle ran
