"""Neural networks: ``Module`` and its layers, ``Parameter``, losses, ``init`` and ``functional``.

PyTorch's ``torch.nn`` API on any plugrad backend. A model is a
:class:`Module` holding :class:`Parameter` objects; calling it records the
graph, ``loss.backward()`` fills each parameter's ``.grad``.

Examples
--------
>>> import plugrad
>>> from plugrad import nn
>>> plugrad.manual_seed(0)
>>> model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
>>> x, target = plugrad.randn(8, 4), plugrad.tensor([0, 1, 2, 0, 1, 2, 0, 1])
>>> loss = nn.CrossEntropyLoss()(model(x), target)
>>> loss.backward()
>>> model[0].weight.grad.shape
(16, 4)
>>> with plugrad.no_grad():
...     for p in model.parameters():
...         p -= 0.1 * p.grad
>>> model.zero_grad()
"""

from __future__ import annotations

from . import functional, init, parallel, utils
from .activation import (
    CELU,
    ELU,
    GELU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSoftmax,
    Mish,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
    Threshold,
)
from .container import ModuleList, Sequential
from .conv import Conv2d
from .dropout import Dropout
from .flatten import Flatten
from .linear import Linear
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import IncompatibleKeys, Module
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from .parameter import Parameter
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .sparse import Embedding

__all__ = [
    "AdaptiveAvgPool2d",
    "AvgPool2d",
    "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm1d",
    "BatchNorm2d",
    "CELU",
    "Conv2d",
    "CrossEntropyLoss",
    "Dropout",
    "ELU",
    "Embedding",
    "Flatten",
    "GELU",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "IncompatibleKeys",
    "L1Loss",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSoftmax",
    "MSELoss",
    "MaxPool2d",
    "Mish",
    "Module",
    "ModuleList",
    "NLLLoss",
    "Parameter",
    "ReLU",
    "ReLU6",
    "SELU",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SmoothL1Loss",
    "Softmax",
    "Softplus",
    "Tanh",
    "Threshold",
    "functional",
    "init",
    "parallel",
    "utils",
]
