"""A reduction, a matmul and an indexing op, each beside its raw-backend floor.

Unlike ``bench_overhead`` (tiny tensors, framework cost only), these use
moderately sized float32 data, so the arithmetic itself is part of the time
and the ratio shows what plugrad adds on top of real work:

- ``Reduction``: ``var(x, axis=1)`` of a (256, 256) tensor, forward and backward;
  by hand: ``2 * (x - mean) / n``;
- ``MatMul``: ``sum(a @ b)`` of (128, 128) matrices, forward and backward;
  by hand: ``ones @ b.T`` and ``a.T @ ones``;
- ``Indexing``: ``sum(x[idx] * w)`` with 4096 random (repeated) row indices
  into a (1024, 16) tensor; by hand, the backward is a scatter-add
  (``np.add.at`` on numpy, ``index_add_`` on the example torch backend, a
  sort and segmented sum elsewhere: the backend's ``scatter_add`` kernel).

Each benchmark is parametrized over the registered backends; unavailable ones
are skipped (``NotImplementedError`` in ``setup``). ``track_ratio_*`` report
plugrad time / floor time, measured in one process.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

import plugrad
from plugrad.registry import backend_names

from ._common import device_or_skip, median_seconds_per_call

_NUMBER = 20


class _OpBenchmark:
    params: ClassVar[list[str]] = list(backend_names())
    param_names: ClassVar[list[str]] = ["backend"]

    def _device(self, backend: str):
        device = device_or_skip(backend)
        self.xp = device.xp
        self._sync_backend = device.backend
        self._sync_native = device.native
        self.to_numpy = device.backend.to_numpy
        return device

    def _sync(self) -> None:
        self._sync_backend.synchronize(self._sync_native)

    def _leaf(self, array: np.ndarray, backend: str, requires_grad: bool = True):
        return plugrad.tensor(
            array, dtype=plugrad.float32, device=backend, requires_grad=requires_grad
        )

    def time_plugrad_forward_backward(self, backend: str) -> None:
        self._plugrad()
        self._sync()

    def time_floor_forward_backward(self, backend: str) -> None:
        self._floor()
        self._sync()

    def track_ratio_forward_backward(self, backend: str) -> float:
        plugrad_s = median_seconds_per_call(
            lambda: self.time_plugrad_forward_backward(backend), _NUMBER
        )
        floor_s = median_seconds_per_call(
            lambda: self.time_floor_forward_backward(backend), _NUMBER
        )
        return plugrad_s / floor_s

    track_ratio_forward_backward.unit = "ratio"


class Reduction(_OpBenchmark):
    """``var(x, axis=1).sum()`` on (256, 256) float32: forward + backward."""

    def setup(self, backend: str) -> None:
        self._device(backend)
        data = np.random.default_rng(0).normal(size=(256, 256))
        self.x = self._leaf(data, backend)
        self.xr = self._leaf(data, backend, requires_grad=False).array
        loss = self._plugrad()
        loss_r, grad_r = self._floor()
        np.testing.assert_allclose(loss.numpy(), self.to_numpy(loss_r), rtol=1e-4)
        np.testing.assert_allclose(self.x.grad.numpy(), self.to_numpy(grad_r), rtol=1e-4, atol=1e-6)

    def _plugrad(self):
        self.x.grad = None
        loss = plugrad.sum(plugrad.var(self.x, axis=1))
        loss.backward()
        return loss

    def _floor(self):
        xp, x = self.xp, self.xr
        loss = xp.sum(xp.var(x, axis=1))
        grad = 2.0 * (x - xp.mean(x, axis=1, keepdims=True)) / x.shape[1]
        return loss, grad


class MatMul(_OpBenchmark):
    """``sum(a @ b)`` on (128, 128) float32 matrices: forward + backward."""

    def setup(self, backend: str) -> None:
        self._device(backend)
        rng = np.random.default_rng(1)
        a, b = rng.normal(size=(128, 128)), rng.normal(size=(128, 128))
        self.a, self.b = self._leaf(a, backend), self._leaf(b, backend)
        self.ar = self._leaf(a, backend, requires_grad=False).array
        self.br = self._leaf(b, backend, requires_grad=False).array
        loss = self._plugrad()
        loss_r, ga, gb = self._floor()
        np.testing.assert_allclose(loss.numpy(), self.to_numpy(loss_r), rtol=1e-4)
        np.testing.assert_allclose(self.a.grad.numpy(), self.to_numpy(ga), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(self.b.grad.numpy(), self.to_numpy(gb), rtol=1e-4, atol=1e-4)

    def _plugrad(self):
        self.a.grad = None
        self.b.grad = None
        loss = plugrad.sum(self.a @ self.b)
        loss.backward()
        return loss

    def _floor(self):
        xp, a, b = self.xp, self.ar, self.br
        out = a @ b
        loss = xp.sum(out)
        ones = xp.ones_like(out)
        return loss, ones @ xp.matrix_transpose(b), xp.matrix_transpose(a) @ ones


class Indexing(_OpBenchmark):
    """``sum(take(x, idx, axis=0) * w)``: 4096 repeated row indices into (1024, 16) float32.

    ``take`` is the standard's row gather (``x[idx]`` on a 2-D array is NumPy's).
    """

    def setup(self, backend: str) -> None:
        device = self._device(backend)
        rng = np.random.default_rng(2)
        data, weights = rng.normal(size=(1024, 16)), rng.normal(size=(4096, 16))
        index = rng.integers(0, 1024, size=4096)
        self.x = self._leaf(data, backend)
        self.w = self._leaf(weights, backend, requires_grad=False)
        self.index = plugrad.tensor(index, device=backend)
        self.xr, self.wr, self.ir = self.x.array, self.w.array, self.index.array
        self.scatter_add = device.kernels["scatter_add"]
        loss = self._plugrad()
        loss_r, grad_r = self._floor()
        np.testing.assert_allclose(loss.numpy(), self.to_numpy(loss_r), rtol=1e-4)
        np.testing.assert_allclose(self.x.grad.numpy(), self.to_numpy(grad_r), rtol=1e-4, atol=1e-5)
        expected = np.zeros((1024, 16))
        np.add.at(expected, index, weights)
        np.testing.assert_allclose(self.x.grad.numpy(), expected, rtol=1e-4, atol=1e-5)

    def _plugrad(self):
        self.x.grad = None
        loss = plugrad.sum(plugrad.take(self.x, self.index, axis=0) * self.w)
        loss.backward()
        return loss

    def _floor(self):
        xp = self.xp
        loss = xp.sum(xp.take(self.xr, self.ir, axis=0) * self.wr)
        # The backward by hand: add each weight row into the row it was gathered from.
        grad = self.scatter_add(xp, self.wr, key=(self.ir, ...), shape=self.xr.shape)
        return loss, grad
