"""What the tests of ``plugrad.distributions`` share that needs no PyTorch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import plugrad

F64 = plugrad.float64

#: How a table of samplers gives a distribution: ``(build(), batch_shape, event_shape)``.
Builder = tuple[Callable[[], plugrad.distributions.Distribution], tuple[int, ...], tuple[int, ...]]


def seeded(seed: int) -> tuple[np.random.Generator, Callable[..., np.ndarray]]:
    """A test module's own generator, seeded with ``seed``, and its ``uniform(low, high,
    *shape)``: an array of ``shape`` drawn uniformly from ``[low, high)`` by that generator."""
    rng = np.random.default_rng(seed)

    def uniform(low: float, high: float, *shape: int) -> np.ndarray:
        return rng.uniform(low, high, shape)

    return rng, uniform


def t(values: Any, dtype: Any = F64) -> plugrad.Tensor:
    return plugrad.tensor(values, dtype=dtype)


def leaf(values: Any) -> plugrad.Tensor:
    return plugrad.tensor(values, dtype=F64, requires_grad=True)


def assert_sample_shapes(
    dist: Any, batch_shape: tuple[int, ...], event_shape: tuple[int, ...]
) -> None:
    """``dist``'s shapes, and those of its samples (and reparameterized samples, where it
    has them) for a few sample shapes; its samples lie in its support."""
    assert tuple(dist.batch_shape) == batch_shape and tuple(dist.event_shape) == event_shape
    for sample_shape in [(), (5,), (2, 3)]:
        x = dist.sample(sample_shape)
        assert x.shape == sample_shape + batch_shape + event_shape
        assert not x.requires_grad
        assert x.device == dist.sample().device
        if dist.has_rsample:
            assert dist.rsample(sample_shape).shape == sample_shape + batch_shape + event_shape
    dist.log_prob(dist.sample((4,)))  # validated: an error if outside the support


def assert_seeded_draws_repeat(builders: dict[str, Builder], again: str = "sample") -> None:
    """Each distribution of ``builders``, drawn from twice after one seed (by ``sample``, then
    by the method ``again``: ``rsample`` draws as ``sample`` does), gives the same values."""
    for build, _, _ in builders.values():
        plugrad.manual_seed(7)
        first = build().sample((3,))
        plugrad.manual_seed(7)
        second = getattr(build(), again)((3,))
        assert np.array_equal(first.numpy(), second.detach().numpy())
