"""Per-op overhead: a short elementwise chain on tiny tensors.

On a 4-element tensor the arithmetic is free, so what is timed is the
framework's own cost per op (dispatch, graph recording, the backward engine).
Each plugrad benchmark sits beside the same computation hand-written against
the backend's raw namespace -- forward, and the hand-derived backward -- which
is the floor a framework on that backend can reach. Compare e.g.
``time_plugrad_forward_backward`` with ``time_floor_forward_backward``, or read
the ratio directly from ``track_ratio_forward_backward``.

The computation (5 ops; ``x`` and ``w`` both require grad)::

    a = x * w;  b = a + 1.0;  c = b * x;  y = exp(c);  loss = sum(y)

and its backward by hand (d loss / d y = 1)::

    dc = y;  db = dc * x;  dx = db * w + dc * b;  dw = db * x

Parametrized over every registered backend; backends that are not available
here are skipped (``NotImplementedError`` in ``setup``).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

import plugrad
from plugrad.registry import backend_names

from ._common import device_or_skip, median_seconds_per_call

_X = [0.1, -0.2, 0.3, 0.4]
_W = [0.5, 0.25, -1.5, 2.0]

# For the track_ ratios: each timing is the median over _REPEAT runs of _NUMBER calls.
_NUMBER = 200


class ElementwiseChainOverhead:
    """plugrad vs the hand-written raw-backend floor, 5-op chain on shape (4,) float32."""

    params: ClassVar[list[str]] = list(backend_names())
    param_names: ClassVar[list[str]] = ["backend"]

    def setup(self, backend: str) -> None:
        device = device_or_skip(backend)
        self.device = device
        self.xp = device.xp
        self._sync_backend = device.backend
        self._sync_native = device.native

        # plugrad leaves
        self.x = plugrad.tensor(_X, dtype=plugrad.float32, device=backend, requires_grad=True)
        self.w = plugrad.tensor(_W, dtype=plugrad.float32, device=backend, requires_grad=True)
        # the same data as raw backend arrays, for the floor
        self.xr = plugrad.tensor(_X, dtype=plugrad.float32, device=backend).array
        self.wr = plugrad.tensor(_W, dtype=plugrad.float32, device=backend).array

        # A wrong floor must not go unnoticed: both sides must compute the same numbers.
        to_numpy = device.backend.to_numpy
        loss = self._plugrad_forward_backward()
        loss_r, dx_r, dw_r = self._floor_forward_backward()
        np.testing.assert_allclose(loss.numpy(), to_numpy(loss_r), rtol=1e-6)
        np.testing.assert_allclose(self.x.grad.numpy(), to_numpy(dx_r), rtol=1e-6)
        np.testing.assert_allclose(self.w.grad.numpy(), to_numpy(dw_r), rtol=1e-6)
        with plugrad.no_grad():
            y = self._plugrad_forward()
        np.testing.assert_allclose(y.numpy(), to_numpy(self._floor_forward()), rtol=1e-6)
        # ... and against an independent float64 reference computed here with numpy.
        x64, w64 = np.asarray(_X, dtype=np.float64), np.asarray(_W, dtype=np.float64)
        y64 = np.exp((x64 * w64 + 1.0) * x64)
        np.testing.assert_allclose(self.x.grad.numpy(), y64 * (2 * x64 * w64 + 1.0), rtol=1e-5)
        np.testing.assert_allclose(self.w.grad.numpy(), y64 * x64 * x64, rtol=1e-5)

    def _sync(self) -> None:
        self._sync_backend.synchronize(self._sync_native)

    # -- the computation, both ways ---------------------------------------------------

    def _plugrad_forward(self):
        x = self.x
        return ((x * self.w + 1.0) * x).exp()

    def _plugrad_forward_backward(self):
        x, w = self.x, self.w
        x.grad = None  # backward accumulates; start from zero each call
        w.grad = None
        loss = ((x * w + 1.0) * x).exp().sum()
        loss.backward()
        return loss

    def _floor_forward(self):
        xp, x = self.xp, self.xr
        return xp.exp((x * self.wr + 1.0) * x)

    def _floor_forward_backward(self):
        xp, x, w = self.xp, self.xr, self.wr
        # forward, keeping what backward needs
        b = x * w + 1.0
        y = xp.exp(b * x)
        loss = xp.sum(y)
        # backward by hand: d loss/d y = 1, exp' = exp
        dc = y
        db = dc * x
        dx = db * w + dc * b
        dw = db * x
        return loss, dx, dw

    # -- timed: forward + backward ------------------------------------------------------

    def time_plugrad_forward_backward(self, backend: str) -> None:
        self._plugrad_forward_backward()
        self._sync()

    def time_floor_forward_backward(self, backend: str) -> None:
        self._floor_forward_backward()
        self._sync()

    # -- timed: forward only (plugrad under no_grad) -------------------------------------

    def time_plugrad_forward_no_grad(self, backend: str) -> None:
        with plugrad.no_grad():
            self._plugrad_forward()
        self._sync()

    def time_floor_forward(self, backend: str) -> None:
        self._floor_forward()
        self._sync()

    # -- tracked: plugrad time / floor time, measured in one process ---------------------

    def track_ratio_forward_backward(self, backend: str) -> float:
        plugrad_s = median_seconds_per_call(
            lambda: self.time_plugrad_forward_backward(backend), _NUMBER
        )
        floor_s = median_seconds_per_call(
            lambda: self.time_floor_forward_backward(backend), _NUMBER
        )
        return plugrad_s / floor_s

    track_ratio_forward_backward.unit = "ratio"

    def track_ratio_forward_no_grad(self, backend: str) -> float:
        plugrad_s = median_seconds_per_call(
            lambda: self.time_plugrad_forward_no_grad(backend), _NUMBER
        )
        floor_s = median_seconds_per_call(lambda: self.time_floor_forward(backend), _NUMBER)
        return plugrad_s / floor_s

    track_ratio_forward_no_grad.unit = "ratio"
