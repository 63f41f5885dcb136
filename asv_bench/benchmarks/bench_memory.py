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
temporaries.
"""

from __future__ import annotations

from typing import ClassVar

import plugrad

from ._common import benchmarked_backends
from ._workloads import MLPMemory, traced_peak


class _MLP:
    params: ClassVar[list[str]] = benchmarked_backends()
    param_names: ClassVar[list[str]] = ["backend"]

    def setup(self, backend: str) -> None:
        self.work = MLPMemory(backend)
        self.work.check()


class MLPPeakMemory(_MLP):
    """Peak resident memory of the process during one step, each way."""

    def peakmem_plugrad_step(self, backend: str) -> None:
        self.work.plugrad_step()

    def peakmem_plugrad_compiled_step(self, backend: str) -> None:
        self.work.plugrad_compiled_step()

    def peakmem_floor_step(self, backend: str) -> None:
        self.work.floor_step()


class MLPPeakMemoryRatio(_MLP):
    """plugrad's peak allocation over the floor's, in one process (NumPy only)."""

    def setup(self, backend: str) -> None:
        if backend != "numpy":
            raise NotImplementedError("tracemalloc sees only NumPy's allocations")
        super().setup(backend)

    def track_peak_ratio(self, backend: str) -> float:
        return self.work.peak_ratio()

    track_peak_ratio.unit = "ratio"

    def track_peak_ratio_maximum_relu(self, backend: str) -> float:
        return self.work.peak_ratio(relu=lambda h: plugrad.maximum(h, 0.0))

    track_peak_ratio_maximum_relu.unit = "ratio"

    def track_peak_ratio_fused_relu(self, backend: str) -> float:
        return self.work.peak_ratio(relu=plugrad.nn.functional.relu)

    track_peak_ratio_fused_relu.unit = "ratio"

    def track_peak_ratio_compiled(self, backend: str) -> float:
        """The step replayed by plugrad.compile (each value released after its last use)."""
        return traced_peak(self.work.plugrad_compiled_step) / traced_peak(self.work.floor_step)

    track_peak_ratio_compiled.unit = "ratio"
