"""Optimizer steps: plugrad.optim beside the same update hand-written on raw arrays.

The parameters are those of a 784-256-256-10 MLP (float32) with fixed
gradients. The floor applies the identical update with the backend's raw
namespace and in-place operators, so the ratio is what the optimizer adds:
walking the groups, finding each parameter's state, and its Tensor wrappers.

Parametrized over every registered backend (unavailable ones are skipped)
and over two optimizers: SGD with momentum, and Adam.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

import plugrad

from ._common import benchmarked_backends, clock_for, device_or_skip, ratio

_SHAPES = [(784, 256), (256,), (256, 256), (256,), (256, 10), (10,)]
_LR, _MOMENTUM, _BETAS, _EPS = 1e-3, 0.9, (0.9, 0.999), 1e-8


class OptimizerStep:
    """``optimizer.step()`` vs the raw-array floor, MLP-sized float32 parameters."""

    params: ClassVar[list[Any]] = [benchmarked_backends(), ["sgd_momentum", "adam"]]
    param_names: ClassVar[list[str]] = ["backend", "optimizer"]

    def setup(self, backend: str, optimizer: str) -> None:
        device = device_or_skip(backend)
        self.clock = clock_for(device)
        self.xp = device.xp
        self._sync_backend, self._sync_native = device.backend, device.native
        rng = np.random.default_rng(0)
        starts = [rng.normal(size=s).astype(np.float32) for s in _SHAPES]
        grads = [rng.normal(size=s).astype(np.float32) for s in _SHAPES]
        self.params = [plugrad.asarray(v.copy(), device=device, requires_grad=True) for v in starts]
        for param, grad in zip(self.params, grads):
            param.grad = plugrad.asarray(grad, device=device)
        # Immutable (JAX) and lazy (Dask) arrays have no in-place operators: ``a -= b``
        # makes a new array, so their floor stores each new array back instead.
        probe = alias = self.xp.zeros(1)
        alias += 1
        in_place = alias is probe
        if optimizer == "adam":
            self.optimizer = plugrad.optim.Adam(self.params, lr=_LR, betas=_BETAS, eps=_EPS)
            self._floor_step = self._floor_adam if in_place else self._floor_adam_rebinding
        else:
            self.optimizer = plugrad.optim.SGD(self.params, lr=_LR, momentum=_MOMENTUM)
            self._floor_step = self._floor_sgd if in_place else self._floor_sgd_rebinding
        # The floor's own copies of parameters, gradients and state.
        self.arrays = [plugrad.asarray(v.copy(), device=device).array for v in starts]
        self.grads = [p.grad.array for p in self.params]
        self.first = [self.xp.zeros_like(a) for a in self.arrays]
        self.second = [self.xp.zeros_like(a) for a in self.arrays]
        self.step = 0
        # A wrong floor must not go unnoticed: after two steps both sides agree.
        for _ in range(2):
            self.optimizer.step()
            self._floor_step()
        to_numpy = device.backend.to_numpy
        for param, array in zip(self.params, self.arrays):
            np.testing.assert_allclose(
                param.detach().numpy(), to_numpy(array), rtol=1e-6, atol=1e-7
            )

    def _sync(self) -> None:
        self._sync_backend.synchronize(self._sync_native)

    def _floor_sgd(self) -> None:
        for array, grad, buffer in zip(self.arrays, self.grads, self.first):
            if self.step:
                buffer *= _MOMENTUM
                buffer += grad
            else:
                buffer[...] = grad
            array -= _LR * buffer
        self.step += 1

    def _adam_step_scales(self) -> tuple[float, float]:
        """Count the step; Adam's bias corrections for it: ``sqrt(1 - b2**t)`` and the step size."""
        self.step += 1
        beta1, beta2 = _BETAS
        return math.sqrt(1 - beta2**self.step), _LR / (1 - beta1**self.step)

    def _floor_adam(self) -> None:
        correction2, step_size = self._adam_step_scales()
        beta1, beta2 = _BETAS
        for array, grad, m, v in zip(self.arrays, self.grads, self.first, self.second):
            work = grad * (1 - beta1)
            m *= beta1
            m += work
            work[...] = grad
            work *= grad
            work *= 1 - beta2
            v *= beta2
            v += work
            work[...] = v
            work **= 0.5
            work /= correction2
            work += _EPS
            work = m / work
            work *= step_size
            array -= work

    def _floor_sgd_rebinding(self) -> None:
        for i, (array, grad, buffer) in enumerate(zip(self.arrays, self.grads, self.first)):
            buffer = buffer * _MOMENTUM + grad if self.step else grad
            self.first[i] = buffer
            self.arrays[i] = array - _LR * buffer
        self.step += 1

    def _floor_adam_rebinding(self) -> None:
        correction2, step_size = self._adam_step_scales()
        beta1, beta2 = _BETAS
        xp = self.xp
        for i, (array, grad) in enumerate(zip(self.arrays, self.grads)):
            m = self.first[i] = self.first[i] * beta1 + grad * (1 - beta1)
            v = self.second[i] = self.second[i] * beta2 + grad * grad * (1 - beta2)
            self.arrays[i] = array - step_size * (m / (xp.sqrt(v) / correction2 + _EPS))

    def time_plugrad_step(self, backend: str, optimizer: str) -> None:
        self.optimizer.step()
        self._sync()

    def time_floor_step(self, backend: str, optimizer: str) -> None:
        self._floor_step()
        self._sync()

    def track_ratio_step(self, backend: str, optimizer: str) -> float:
        return ratio(
            lambda: self.time_plugrad_step(backend, optimizer),
            lambda: self.time_floor_step(backend, optimizer),
            self.clock,
        )

    track_ratio_step.unit = "ratio"
