"""Optimizers and learning-rate schedules: ``plugrad.optim``, after ``torch.optim``.

An optimizer holds the tensors to train and updates them from their
``.grad`` in :meth:`~Optimizer.step`, writing into each parameter's memory
without recording anything for autograd.

Examples
--------
A training loop: clear the gradients, compute the loss and its gradients, step.
(The examples of each optimizer set ``.grad`` by hand, to show one step's update.)

>>> import plugrad
>>> w = plugrad.tensor([2.0, -1.0], requires_grad=True)
>>> opt = plugrad.optim.SGD([w], lr=0.25)
>>> for _ in range(2):
...     opt.zero_grad()
...     loss = (w * w).sum()
...     loss.backward()
...     opt.step()
>>> w
tensor([ 0.5000, -0.2500], requires_grad=True)
"""

from __future__ import annotations

from . import lr_scheduler, swa_utils
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam, RAdam
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = [
    "ASGD",
    "LBFGS",
    "SGD",
    "Adadelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "Muon",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "Rprop",
    "lr_scheduler",
    "swa_utils",
]


def __getattr__(name: str) -> object:
    if name == "SparseAdam":
        # (an AttributeError, so that hasattr() and feature checks answer False)
        raise AttributeError(
            "plugrad.optim.SparseAdam: plugrad has no sparse gradients (an "
            "nn.Embedding(sparse=True) gets a dense one), and SparseAdam takes only sparse "
            "ones; use plugrad.optim.Adam (which decays the moments of every row at each "
            "step, where SparseAdam leaves those of rows without a gradient)"
        )
    raise AttributeError(f"module 'plugrad.optim' has no attribute {name!r}")
