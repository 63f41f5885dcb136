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

from typing import Any

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
