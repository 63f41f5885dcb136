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

Both also time the same step through :func:`plugrad.compile`
(``time_plugrad_compiled_forward_backward``, ``track_ratio_compiled_forward_backward``):
the plan captured once in ``setup``, then replayed.

Parametrized over every registered backend; backends that are not available
here are skipped (``NotImplementedError`` in ``setup``). The workloads
themselves are in ``_workloads.py``.
"""

from __future__ import annotations

from ._common import REPEAT, _ForwardBackward, timed, tracked_ratio
from ._workloads import ElementwiseChain, LongChain


class _CompiledForwardBackward(_ForwardBackward):
    """Also the forward + backward through :func:`plugrad.compile`, replayed (captured in setup)."""

    time_plugrad_compiled_forward_backward = timed("plugrad_compiled_forward_backward")
    track_ratio_compiled_forward_backward = tracked_ratio(
        "plugrad_compiled_forward_backward",
        "floor_forward_backward",
        "Replayed plan / floor, measured in one process.",
    )


class ElementwiseChainOverhead(_CompiledForwardBackward):
    """plugrad vs the hand-written raw-backend floor, 5-op chain on shape (4,) float32.

    Forward + backward as in every :class:`_ForwardBackward`, and forward alone
    (plugrad under ``no_grad``).
    """

    def _workload(self, backend: str) -> ElementwiseChain:
        return ElementwiseChain(backend, size=4)

    time_plugrad_forward_no_grad = timed("plugrad_forward_no_grad")
    time_floor_forward = timed("floor_forward")
    track_ratio_forward_no_grad = tracked_ratio("plugrad_forward_no_grad", "floor_forward")


class LongChainOverhead(_CompiledForwardBackward):
    """A chain of 10,000 ops on shape (4,) float32, forward + backward, vs the floor."""

    # A deep graph is many Python objects, and the garbage collector's full
    # collections come every few chains: runs of several chains include them.
    ratio_repeat = min(5, REPEAT)
    ratio_seconds = 0.2

    def _workload(self, backend: str) -> LongChain:
        return LongChain(backend, n_ops=10_000)
