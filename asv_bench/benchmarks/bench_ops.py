"""Ops on real data, each beside its raw-backend floor: forward + backward.

Unlike ``bench_overhead`` (tiny tensors, framework cost only), these use
moderately sized float32 data, so the arithmetic itself is part of the time
and the ratio shows what plugrad adds on top of real work:

- ``LargeElementwiseChain``: ``sum(exp((x * w + 1) * x))`` on a million elements;
- ``Reduction``: ``sum(var(x, axis=1))`` of a (256, 256) tensor;
- ``MatMul``: ``sum(a @ b)`` of (128, 128) matrices;
- ``Indexing``: ``sum(take(x, idx, axis=0) * w)`` with 4096 repeated row
  indices into a (1024, 16) tensor (its backward is a scatter-add).

Each benchmark is parametrized over the registered backends; unavailable ones
are skipped (``NotImplementedError`` in ``setup``). ``track_ratio_*`` report
plugrad time / floor time, measured in one process. The workloads themselves,
with their hand-derived backward passes, are in ``_workloads.py``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from . import _workloads as workloads
from ._common import _ForwardBackward


class LargeElementwiseChain(_ForwardBackward):
    """``sum(exp((x * w + 1) * x))`` on shape (1_000_000,) float32: forward + backward."""

    def _workload(self, backend: str) -> Any:
        return workloads.ElementwiseChain(backend, size=1_000_000)


class Reduction(_ForwardBackward):
    """``sum(var(x, axis=1))`` on (256, 256) float32: forward + backward."""

    def _workload(self, backend: str) -> Any:
        return workloads.Reduction(backend)


class MatMul(_ForwardBackward):
    """``sum(a @ b)`` on (128, 128) float32 matrices: forward + backward."""

    def _workload(self, backend: str) -> Any:
        return workloads.MatMul(backend)


class Indexing(_ForwardBackward):
    """``sum(take(x, idx, axis=0) * w)``: 4096 repeated row indices into (1024, 16) float32."""

    def _workload(self, backend: str) -> Any:
        return workloads.Indexing(backend)


class InPlaceOnManyViews:
    """``rows[i].add_(1.0)`` for each row view of an (n, 4) float32 tensor (numpy backend,
    nothing requiring grad), beside the same on NumPy views: the cost of one change must
    not grow with the number of live views of its base (1,000 rows took 1.1 s, 4,000 33 s,
    when each change read every member of the family)."""

    params: ClassVar[list[int]] = [100, 1_000, 10_000]
    param_names: ClassVar[list[str]] = ["views"]

    def setup(self, views: int) -> None:
        import numpy as np

        import plugrad

        self.x = plugrad.zeros(views, 4)
        self.rows = [self.x[i] for i in range(views)]
        self.raw = np.zeros((views, 4), dtype=np.float32)
        self.raw_rows = [self.raw[i] for i in range(views)]

    def time_plugrad_add_each_row(self, views: int) -> None:
        for row in self.rows:
            row.add_(1.0)

    def time_floor_add_each_row(self, views: int) -> None:
        for row in self.raw_rows:
            row += 1.0


class NumberWrites:
    """``x[i] = number`` for 100 elements of a float32 tensor of ``size`` elements (numpy
    backend, nothing requiring grad), beside the same on a NumPy array: a write of one
    element must cost the same whatever the size (it copied the whole tensor, 190 us at a
    million elements, where NumPy and PyTorch take about 2 us)."""

    params: ClassVar[list[int]] = [100, 1_000_000]
    param_names: ClassVar[list[str]] = ["size"]

    def setup(self, size: int) -> None:
        import numpy as np

        import plugrad

        self.x = plugrad.zeros(size)
        self.raw = np.zeros(size, dtype=np.float32)

    def time_plugrad_write_numbers(self, size: int) -> None:
        x = self.x
        for i in range(100):
            x[i] = 0.5

    def time_floor_write_numbers(self, size: int) -> None:
        raw = self.raw
        for i in range(100):
            raw[i] = 0.5
