"""Per-op overhead: a short elementwise chain on tiny tensors, and a 10,000-op chain.

On a 4-element tensor the arithmetic is free, so what is timed is the
framework's own cost per op (dispatch, graph recording, the backward engine).
Each plugrad benchmark sits beside the same computation hand-written against
the backend's raw namespace -- forward, and the hand-derived backward -- which
is the floor a framework on that backend can reach. Compare e.g.
``time_plugrad_forward_backward`` with ``time_floor_forward_backward``, or read
the ratio directly from ``track_ratio_forward_backward``.

``ElementwiseChainOverhead`` times 5 ops (``x`` and ``w`` both require grad)::

    a = x * w;  b = a + 1.0;  c = b * x;  y = exp(c);  loss = sum(y)

``LongChainOverhead`` times a chain of 10,000 multiplications and additions,
then ``sum``, forward and backward: the engine on a deep graph.

Parametrized over every registered backend; backends that are not available
here are skipped (``NotImplementedError`` in ``setup``). The workloads
themselves are in ``_workloads.py``.
"""

from __future__ import annotations

from typing import ClassVar

from plugrad.registry import backend_names

from ._common import ratio
from ._workloads import ElementwiseChain, LongChain


class ElementwiseChainOverhead:
    """plugrad vs the hand-written raw-backend floor, 5-op chain on shape (4,) float32."""

    params: ClassVar[list[str]] = list(backend_names())
    param_names: ClassVar[list[str]] = ["backend"]

    def setup(self, backend: str) -> None:
        self.work = ElementwiseChain(backend, size=4)
        self.work.check()

    # -- timed: forward + backward ------------------------------------------------------

    def time_plugrad_forward_backward(self, backend: str) -> None:
        self.work.plugrad_forward_backward()
        self.work.sync()

    def time_floor_forward_backward(self, backend: str) -> None:
        self.work.floor_forward_backward()
        self.work.sync()

    # -- timed: forward only (plugrad under no_grad) -------------------------------------

    def time_plugrad_forward_no_grad(self, backend: str) -> None:
        self.work.plugrad_forward_no_grad()
        self.work.sync()

    def time_floor_forward(self, backend: str) -> None:
        self.work.floor_forward()
        self.work.sync()

    # -- tracked: plugrad time / floor time, measured in one process ---------------------

    def track_ratio_forward_backward(self, backend: str) -> float:
        return ratio(
            lambda: self.time_plugrad_forward_backward(backend),
            lambda: self.time_floor_forward_backward(backend),
            self.work.clock,
        )

    track_ratio_forward_backward.unit = "ratio"

    def track_ratio_forward_no_grad(self, backend: str) -> float:
        return ratio(
            lambda: self.time_plugrad_forward_no_grad(backend),
            lambda: self.time_floor_forward(backend),
            self.work.clock,
        )

    track_ratio_forward_no_grad.unit = "ratio"


class LongChainOverhead:
    """A chain of 10,000 ops on shape (4,) float32, forward + backward, vs the floor."""

    params: ClassVar[list[str]] = list(backend_names())
    param_names: ClassVar[list[str]] = ["backend"]

    def setup(self, backend: str) -> None:
        self.work = LongChain(backend, n_ops=10_000)
        self.work.check()

    def time_plugrad_forward_backward(self, backend: str) -> None:
        self.work.plugrad_forward_backward()
        self.work.sync()

    def time_floor_forward_backward(self, backend: str) -> None:
        self.work.floor_forward_backward()
        self.work.sync()

    def track_ratio_forward_backward(self, backend: str) -> float:
        # A deep graph is many Python objects, and the garbage collector's full
        # collections come every few chains: runs of several chains include them.
        return ratio(
            lambda: self.time_plugrad_forward_backward(backend),
            lambda: self.time_floor_forward_backward(backend),
            self.work.clock,
            repeat=5,
            seconds=0.2,
        )

    track_ratio_forward_backward.unit = "ratio"
