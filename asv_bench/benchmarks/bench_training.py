"""A training step of a small classifier, beside the same step written by hand.

A 784-512-256-10 ReLU MLP with a softmax cross-entropy loss, float32: forward,
backward and an in-place SGD update of the six parameters, at batch sizes 8,
128 and 1024. At 8 the step is mostly per-op overhead and the update's memory
traffic; at 1024 it is mostly matrix products, so the ratio to the floor should
approach 1. The ``compiled`` benchmarks run the same steps through
:func:`plugrad.compile` (captured in ``setup``, then replayed);
``time_plugrad_capture_step`` times a capture, and
``time_plugrad_capture_and_first_replay`` a capture and the first replay, which
writes and compiles the plan's code (against two floor steps). The floor
(``_workloads.MLPStep.floor_step``) computes the gradient with respect to
the logits directly, ``(softmax - onehot) / batch``, as hand-written code
would; plugrad differentiates the loss op by op. The steps through ``plugrad.nn``
(``nn.Linear``, ``cross_entropy`` of class labels, ``optim.SGD``) have a floor of
their own, ``floor_module_step``: the same hand-written step with the weights laid
out ``(out, in)`` as ``nn.Linear`` keeps them and integer labels for the loss.

Parametrized over every registered backend and the batch size; unavailable
backends are skipped (``NotImplementedError`` in ``setup``). On Dask each step
is computed (its loss and updated parameters), so the time is the step's work
and not only the building of its task graph. The time limit per benchmark run
is 300 s rather than asv's 60: eager JAX compiles every op with XLA the first
time it meets a shape, and checking every step against the floor took 25 to
40 s there on a loaded 2-core machine. The checks run once per class
(``setup_cache``, for every backend and batch size), not before each benchmark.
"""

from __future__ import annotations

from typing import ClassVar

from ._common import benchmarked_backends, check_each, timed, tracked_ratio
from ._workloads import MLPStep


class MLPTrainingStep:
    """One SGD step (forward, backward, update) of a 784-512-256-10 MLP."""

    params: ClassVar[list[list[object]]] = [benchmarked_backends(), [8, 128, 1024]]
    param_names: ClassVar[list[str]] = ["backend", "batch"]
    timeout = 300

    def setup_cache(self) -> int:
        return check_each(MLPStep, self.params)

    setup_cache.timeout = 600  # type: ignore[attr-defined]

    def setup(self, checked: int, backend: str, batch: int) -> None:
        self.work = MLPStep(backend, batch)
        self.work.warm_up()

    time_plugrad_step = timed("plugrad_step")
    time_plugrad_module_step = timed("plugrad_module_step")
    time_plugrad_compiled_step = timed("plugrad_compiled_step")
    time_plugrad_compiled_module_step = timed("plugrad_compiled_module_step")
    time_plugrad_compiled_model_step = timed("plugrad_compiled_model_step")
    time_plugrad_capture_step = timed("plugrad_capture_step")
    time_plugrad_capture_and_first_replay = timed("plugrad_capture_and_first_replay")
    time_floor_two_steps = timed("floor_two_steps")
    time_floor_step = timed("floor_step")
    time_floor_module_step = timed("floor_module_step")

    track_ratio_step = tracked_ratio("plugrad_step", "floor_step")
    track_ratio_module_step = tracked_ratio(
        "plugrad_module_step",
        "floor_module_step",
        "The same step through plugrad.nn, cross_entropy and optim.SGD, against the floor.",
    )
    track_ratio_compiled_step = tracked_ratio(
        "plugrad_compiled_step",
        "floor_step",
        "The step through plugrad.compile (captured in setup, replayed), against the floor.",
    )
    track_ratio_compiled_module_step = tracked_ratio(
        "plugrad_compiled_module_step",
        "floor_module_step",
        "nn + optim.SGD through plugrad.compile, against the floor.",
    )
    track_ratio_compiled_model_step = tracked_ratio(
        "plugrad_compiled_model_step",
        "floor_module_step",
        "nn + optim.SGD with the model compiled, its backward after the call, against the floor.",
    )
