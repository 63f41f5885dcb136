"""PyTorch's ``torch.nn.modules`` paths, for code that imports from them or tests against them.

Custom losses subclass ``torch.nn.modules.loss._Loss``; optimizer set-ups leave
norm layers out of weight decay with ``isinstance(m, nn.modules.batchnorm._BatchNorm)``;
``from torch.nn.modules.activation import MultiheadAttention`` is a common import.
Each of PyTorch's submodules here is plugrad's module of the same job
(``plugrad.nn.modules.loss`` *is* :mod:`plugrad.nn.loss`), or, where PyTorch
splits a job otherwise, a module holding the same classes as PyTorch's
(``activation``, ``batchnorm``, ``channelshuffle``, ``conv``, ``instancenorm``,
``linear``).

One difference: plugrad's instance norms derive from ``_BatchNorm`` (they share
its running statistics), where PyTorch's derive from ``_NormBase`` only, so an
``isinstance(m, _BatchNorm)`` test also holds for them here.

Examples
--------
>>> import plugrad
>>> from plugrad.nn.modules.loss import _Loss
>>> class Half(_Loss):
...     def forward(self, input, target):
...         return 0.5 * (input - target).abs().mean()
>>> Half()(plugrad.ones(2), plugrad.zeros(2))
tensor(0.5000)
>>> isinstance(plugrad.nn.BatchNorm2d(3), plugrad.nn.modules.batchnorm._BatchNorm)
True
"""

from __future__ import annotations

import sys
import types

from .. import activation as _activation
from .. import (
    adaptive,
    attention,
    container,
    distance,
    dropout,
    flatten,
    fold,
    lazy,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)
from .. import conv as _conv
from .. import linear as _linear
from . import utils

__all__ = [
    "activation",
    "adaptive",
    "batchnorm",
    "channelshuffle",
    "container",
    "conv",
    "distance",
    "dropout",
    "flatten",
    "fold",
    "instancenorm",
    "lazy",
    "linear",
    "loss",
    "module",
    "normalization",
    "padding",
    "pixelshuffle",
    "pooling",
    "rnn",
    "sparse",
    "transformer",
    "upsampling",
    "utils",
]


def _gathered(name: str, doc: str, *whole: types.ModuleType, **members: object) -> types.ModuleType:
    """A module ``plugrad.nn.modules.<name>`` holding what the ``whole`` modules hold and
    ``members`` (importable by that name)."""
    gathered = types.ModuleType(f"{__name__}.{name}", doc)
    for source in whole:
        gathered.__dict__.update(
            (key, value) for key, value in vars(source).items() if not key.startswith("__")
        )
    gathered.__dict__.update(members)
    public = [*(n for source in whole for n in getattr(source, "__all__", ())), *members]
    gathered.__all__ = [key for key in public if not key.startswith("_")]  # type: ignore[attr-defined]
    sys.modules[gathered.__name__] = gathered
    return gathered


def _classes(source: types.ModuleType, *names: str) -> dict[str, object]:
    return {name: getattr(source, name) for name in names}


activation = _gathered(
    "activation",
    "The activation layers, and ``MultiheadAttention`` (which PyTorch keeps with them).",
    **{name: getattr(_activation, name) for name in _activation.__all__},
    **_classes(attention, "MultiheadAttention", "NonDynamicallyQuantizableLinear"),
)
batchnorm = _gathered(
    "batchnorm",
    "The batch norms and their bases.",
    **_classes(normalization, "_NormBase", "_BatchNorm", "BatchNorm1d", "BatchNorm2d",
               "BatchNorm3d", "SyncBatchNorm"),
    **_classes(lazy, "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d"),
)  # fmt: skip
instancenorm = _gathered(
    "instancenorm",
    "The instance norms and their base.",
    **_classes(normalization, "_InstanceNorm", "InstanceNorm1d", "InstanceNorm2d",
               "InstanceNorm3d"),
    **_classes(lazy, "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"),
)  # fmt: skip
conv = _gathered(
    "conv",
    "The convolutions, their bases and their lazy forms.",
    _conv,
    **_classes(lazy, "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
               "LazyConvTranspose2d", "LazyConvTranspose3d"),
)  # fmt: skip
linear = _gathered(
    "linear", "The linear layers and their lazy form.", _linear, **_classes(lazy, "LazyLinear")
)
channelshuffle = _gathered(
    "channelshuffle", "``ChannelShuffle``.", **_classes(pixelshuffle, "ChannelShuffle")
)

# The others are plugrad's modules themselves, importable by PyTorch's paths too.
for _same in (adaptive, container, distance, dropout, flatten, fold, lazy, loss, module,
              normalization, padding, pixelshuffle, pooling, rnn, sparse, transformer,
              upsampling):  # fmt: skip
    sys.modules[f"{__name__}.{_same.__name__.rpartition('.')[2]}"] = _same
del _same
