"""A training step of a small classifier, beside the same step written by hand.

A 784-512-256-10 ReLU MLP with a softmax cross-entropy loss, float32: forward,
backward and an in-place SGD update of the six parameters, at batch sizes 8,
128 and 1024. At 8 the step is mostly per-op overhead and the update's memory
traffic; at 1024 it is mostly matrix products, so the ratio to the floor should
approach 1. The ``compiled`` benchmarks run the same steps through
:func:`plugrad.compile` (captured in ``setup``, then replayed);
``time_plugrad_capture_step`` times a capture. The floor
(``_workloads.MLPStep.floor_step``) computes the gradient with respect to
the logits directly, ``(softmax - onehot) / batch``, as hand-written code
would; plugrad differentiates the loss op by op.

Parametrized over every registered backend and the batch size; unavailable
backends are skipped (``NotImplementedError`` in ``setup``). On Dask each step
is computed (its loss and updated parameters), so the time is the step's work
and not only the building of its task graph. The time limit per benchmark run
is 300 s rather than asv's 60: eager JAX compiles every op with XLA the first
time it meets a shape, and ``setup`` (which checks every step against the
floor) took 25 to 40 s there on a loaded 2-core machine, before any timing.
"""

from __future__ import annotations

from typing import ClassVar

from ._common import benchmarked_backends, ratio
from ._workloads import MLPStep


class MLPTrainingStep:
    """One SGD step (forward, backward, update) of a 784-512-256-10 MLP."""

    params: ClassVar[list[list[object]]] = [benchmarked_backends(), [8, 128, 1024]]
    param_names: ClassVar[list[str]] = ["backend", "batch"]
    timeout = 300

    def setup(self, backend: str, batch: int) -> None:
        self.work = MLPStep(backend, batch)
        self.work.check()

    def time_plugrad_step(self, backend: str, batch: int) -> None:
        self.work.plugrad_step()
        self.work.sync()

    def time_plugrad_module_step(self, backend: str, batch: int) -> None:
        self.work.plugrad_module_step()
        self.work.sync()

    def time_plugrad_compiled_step(self, backend: str, batch: int) -> None:
        self.work.plugrad_compiled_step()
        self.work.sync()

    def time_plugrad_compiled_module_step(self, backend: str, batch: int) -> None:
        self.work.plugrad_compiled_module_step()
        self.work.sync()

    def time_plugrad_capture_step(self, backend: str, batch: int) -> None:
        self.work.plugrad_capture_step()
        self.work.sync()

    def time_floor_step(self, backend: str, batch: int) -> None:
        self.work.floor_step()
        self.work.sync()

    def track_ratio_step(self, backend: str, batch: int) -> float:
        return ratio(
            lambda: self.time_plugrad_step(backend, batch),
            lambda: self.time_floor_step(backend, batch),
            self.work.clock,
        )

    track_ratio_step.unit = "ratio"

    def track_ratio_module_step(self, backend: str, batch: int) -> float:
        """The same step through plugrad.nn, cross_entropy and optim.SGD, against the floor."""
        return ratio(
            lambda: self.time_plugrad_module_step(backend, batch),
            lambda: self.time_floor_step(backend, batch),
            self.work.clock,
        )

    track_ratio_module_step.unit = "ratio"

    def track_ratio_compiled_step(self, backend: str, batch: int) -> float:
        """The step through plugrad.compile (captured in setup, replayed), against the floor."""
        return ratio(
            lambda: self.time_plugrad_compiled_step(backend, batch),
            lambda: self.time_floor_step(backend, batch),
            self.work.clock,
        )

    track_ratio_compiled_step.unit = "ratio"

    def track_ratio_compiled_module_step(self, backend: str, batch: int) -> float:
        """nn + optim.SGD through plugrad.compile, against the floor."""
        return ratio(
            lambda: self.time_plugrad_compiled_module_step(backend, batch),
            lambda: self.time_floor_step(backend, batch),
            self.work.clock,
        )

    track_ratio_compiled_module_step.unit = "ratio"
