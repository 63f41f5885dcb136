"""Neural networks: ``Module`` and its layers, ``Parameter``, losses, ``init`` and ``functional``.

PyTorch's ``torch.nn`` API on any plugrad backend. A model is a
:class:`Module` holding :class:`Parameter` objects; calling it records the
graph, ``loss.backward()`` fills each parameter's ``.grad``.

Examples
--------
>>> import plugrad
>>> from plugrad import nn
>>> _ = plugrad.manual_seed(0)
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

from . import (
    activation,
    adaptive,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    functional,
    init,
    lazy,
    linear,
    loss,
    module,
    modules,
    normalization,
    padding,
    parallel,
    parameter,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
    utils,
)
from .activation import *  # noqa: F403
from .adaptive import *  # noqa: F403
from .attention import MultiheadAttention
from .container import *  # noqa: F403
from .conv import *  # noqa: F403
from .distance import *  # noqa: F403
from .dropout import *  # noqa: F403
from .flatten import *  # noqa: F403
from .fold import *  # noqa: F403
from .lazy import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .module import *  # noqa: F403
from .normalization import *  # noqa: F403
from .padding import *  # noqa: F403
from .parallel import DataParallel
from .parameter import *  # noqa: F403
from .pixelshuffle import *  # noqa: F403
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .sparse import *  # noqa: F403
from .transformer import *  # noqa: F403
from .upsampling import *  # noqa: F403

# The layers of each module (its __all__), and the submodules named as PyTorch's.
__all__ = [
    *activation.__all__,
    *adaptive.__all__,
    "MultiheadAttention",
    "DataParallel",
    *container.__all__,
    *conv.__all__,
    *distance.__all__,
    *dropout.__all__,
    *flatten.__all__,
    *fold.__all__,
    *lazy.__all__,
    *linear.__all__,
    *loss.__all__,
    *module.__all__,
    *normalization.__all__,
    *padding.__all__,
    *parameter.__all__,
    *pixelshuffle.__all__,
    *pooling.__all__,
    *rnn.__all__,
    *sparse.__all__,
    *transformer.__all__,
    *upsampling.__all__,
    "functional",
    "init",
    "modules",
    "parallel",
    "utils",
]
