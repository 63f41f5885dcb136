"""A small classifier and its training step, run eagerly and compiled by the optimizer
and compile tests, which compare the two trajectories."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import plugrad


def classifier_and_optimizer(
    make_optimizer: Callable[[Any], Any], activation: type = plugrad.nn.ReLU
) -> tuple[Any, Any]:
    """A 4-8-3 network from seed 0 and ``make_optimizer`` of its parameters."""
    plugrad.manual_seed(0)
    nn = plugrad.nn
    model = nn.Sequential(nn.Linear(4, 8), activation(), nn.Linear(8, 3))
    return model, make_optimizer(model.parameters())


def classification_batch() -> tuple[plugrad.Tensor, plugrad.Tensor]:
    """Six float32 samples of four features and their labels of three classes."""
    x = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32)
    return plugrad.tensor(x), plugrad.tensor([0, 1, 2, 1, 0, 2])


def training_step(model: Any, optimizer: Any) -> Callable[..., plugrad.Tensor]:
    """One step of cross-entropy training, returning the loss (to run or to compile)."""

    def train(x, labels, model=model, optimizer=optimizer):
        optimizer.zero_grad()
        loss = plugrad.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        optimizer.step()
        return loss

    return train


def trajectory(step: Callable[..., Any], model: Any, steps: int) -> tuple[list[Any], list[Any]]:
    """The losses of ``steps`` calls of ``step`` on the batch, and the parameters after."""
    x, labels = classification_batch()
    losses = [step(x, labels).detach().numpy().copy() for _ in range(steps)]
    return losses, [p.detach().numpy().copy() for p in model.parameters()]
