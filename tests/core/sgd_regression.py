"""A small regression trained by hand-written SGD, shared by the compile tests."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import plugrad


def regression_params(seed: int) -> list[plugrad.Tensor]:
    """A (3, 4) weight and a (4,) bias that require grad."""
    rng = np.random.default_rng(seed)
    return [
        plugrad.tensor(rng.standard_normal((3, 4)), requires_grad=True),
        plugrad.tensor(rng.standard_normal(4), requires_grad=True),
    ]


def sgd_step(params: list[plugrad.Tensor]) -> Callable[..., plugrad.Tensor]:
    """One step: the tanh regression's mean squared error, backward, and ``p -= 0.1 * grad``."""

    def step(x: plugrad.Tensor, y: plugrad.Tensor) -> plugrad.Tensor:
        w, b = params
        w.grad = b.grad = None
        loss = (((x @ w + b).tanh() - y) ** 2).mean()
        loss.backward()
        with plugrad.no_grad():
            for p in params:
                p -= 0.1 * p.grad  # a new array on JAX, a new graph on Dask: rebound
        return loss

    return step
