"""Peak memory of an MLP's forward and backward pass, beside the hand-written floor.

A 512 x 784 -> 2048 -> 2048 -> 10 float32 MLP with ReLU and a mean squared error:
``peakmem_plugrad_step`` and ``peakmem_floor_step`` report the peak resident
memory of the process (asv's measure), and ``track_peak_ratio`` the ratio of
the bytes each one allocates at its peak (tracemalloc, which sees NumPy's
allocations). The floor keeps exactly what its backward needs (the ReLU masks,
not the pre-activations) and frees gradients as soon as they are used, as
careful hand-written code would.

ReLU is written ``where(h > 0, h, 0)``, which saves a boolean mask.
``track_peak_ratio_maximum_relu`` tracks ``maximum(h, 0)`` instead: its backward
splits the gradient at ties, so it saves ``h`` itself and needs two more
temporaries. ``track_peak_ratio_fused_relu`` tracks ``plugrad.nn.functional.relu``,
whose backward reads only its output, which the next layer keeps anyway.
"""

from __future__ import annotations

import tracemalloc
from typing import Any, ClassVar

import numpy as np

import plugrad
from plugrad.registry import backend_names

from ._common import device_or_skip

BATCH, INPUTS, HIDDEN, OUTPUTS = 512, 784, 2048, 10


class _MLP:
    """Forward + backward of a wide MLP: plugrad and the raw-backend floor."""

    params: ClassVar[list[str]] = list(backend_names())
    param_names: ClassVar[list[str]] = ["backend"]

    def setup(self, backend: str) -> None:
        device = device_or_skip(backend)
        rng = np.random.default_rng(0)

        def make(*shape: int, scale: float = 1.0) -> Any:
            return plugrad.asarray((rng.standard_normal(shape) * scale).astype(np.float32))

        host = [
            make(BATCH, INPUTS),
            make(BATCH, OUTPUTS),
            make(INPUTS, HIDDEN, scale=0.03),
            make(HIDDEN, HIDDEN, scale=0.02),
            make(HIDDEN, OUTPUTS, scale=0.02),
        ]
        moved = [t.to(device) for t in host]
        self.x, self.y = moved[0], moved[1]
        self.weights = [w.detach().requires_grad_() for w in moved[2:]]
        self.xp = device.xp
        self.raw = [t.array for t in moved]
        loss = self.plugrad_step()
        floor_loss, *floor_grads = self.floor_step()
        to_numpy = device.backend.to_numpy
        np.testing.assert_allclose(loss.numpy(), to_numpy(floor_loss), rtol=1e-4)
        for w, g in zip(self.weights, floor_grads):
            np.testing.assert_allclose(w.grad.numpy(), to_numpy(g), rtol=1e-3, atol=1e-6)

    def plugrad_step(self, relu: Any = None) -> plugrad.Tensor:
        relu = relu or _relu
        w1, w2, w3 = self.weights
        for w in self.weights:
            w.grad = None
        a1 = relu(self.x @ w1)
        a2 = relu(a1 @ w2)
        loss = plugrad.mean((a2 @ w3 - self.y) ** 2)
        loss.backward()
        return loss

    def floor_step(self) -> tuple[Any, ...]:
        xp = self.xp
        x, y, w1, w2, w3 = self.raw
        h1 = x @ w1
        m1 = h1 > 0
        a1 = xp.where(m1, h1, 0.0)
        del h1
        h2 = a1 @ w2
        m2 = h2 > 0
        a2 = xp.where(m2, h2, 0.0)
        del h2
        diff = a2 @ w3 - y
        loss = xp.mean(diff * diff)
        g = diff * (2.0 / (BATCH * OUTPUTS))
        del diff
        g_w3 = xp.matrix_transpose(a2) @ g
        g_h2 = xp.where(m2, g @ xp.matrix_transpose(w3), 0.0)
        del g, a2, m2
        g_w2 = xp.matrix_transpose(a1) @ g_h2
        g_h1 = xp.where(m1, g_h2 @ xp.matrix_transpose(w2), 0.0)
        del g_h2, a1, m1
        g_w1 = xp.matrix_transpose(x) @ g_h1
        return loss, g_w1, g_w2, g_w3


class MLPPeakMemory(_MLP):
    """Peak resident memory of the process during one step, each way."""

    def peakmem_plugrad_step(self, backend: str) -> None:
        self.plugrad_step()

    def peakmem_floor_step(self, backend: str) -> None:
        self.floor_step()


class MLPPeakMemoryRatio(_MLP):
    """plugrad's peak allocation over the floor's, in one process (NumPy only)."""

    def setup(self, backend: str) -> None:
        if backend != "numpy":
            raise NotImplementedError("tracemalloc sees only NumPy's allocations")
        super().setup(backend)

    def track_peak_ratio(self, backend: str) -> float:
        return _traced_peak(self.plugrad_step) / _traced_peak(self.floor_step)

    track_peak_ratio.unit = "ratio"

    def track_peak_ratio_maximum_relu(self, backend: str) -> float:
        step = lambda: self.plugrad_step(relu=lambda h: plugrad.maximum(h, 0.0))
        return _traced_peak(step) / _traced_peak(self.floor_step)

    track_peak_ratio_maximum_relu.unit = "ratio"

    def track_peak_ratio_fused_relu(self, backend: str) -> float:
        step = lambda: self.plugrad_step(relu=plugrad.nn.functional.relu)
        return _traced_peak(step) / _traced_peak(self.floor_step)

    track_peak_ratio_fused_relu.unit = "ratio"


def _relu(h: plugrad.Tensor) -> plugrad.Tensor:
    return plugrad.where(h > 0, h, 0.0)


def _traced_peak(step: Any) -> int:
    step()  # warm up: first-use allocations are not part of a step
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = step()
        del result
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
