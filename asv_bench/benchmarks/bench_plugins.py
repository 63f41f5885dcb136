"""Per-op cost of ops from plugins, and of plugrad's checking mode.

A third-party op is dispatched exactly like a built-in one (its function and its
kernel sit in the same frozen tables), so ``time_plugin_op`` should match
``time_builtin_op`` and ``track_ratio_plugin_vs_builtin`` should stay at 1.0.
Both multiply two shape (4,) float32 tensors with ``xp.multiply``, so the
arithmetic is free and what is timed is the per-op path.

``CheckingModeOverhead`` times the same built-in op with checking mode on (it is
off by default): the price of debugging a plugin, not of using one.

Parametrized over every registered backend; backends that are not available here
are skipped (``NotImplementedError`` in ``setup``).
"""

from __future__ import annotations

import types
from typing import ClassVar

import plugrad
from plugrad.hookspecs import hookimpl
from plugrad.opdef import op

from ._common import (
    benchmarked_backends,
    clock_for,
    device_or_skip,
    interleaved_runs,
    medians,
    ratio,
)

_X = [0.1, -0.2, 0.3, 0.4]
_PLUGIN = "asv_times_plugin"


def _multiply_plugin():
    times = op("times_bench", lambda xp, x1, x2, /: xp.multiply(x1, x2), broadcasting=True)
    times = times.vjp(lambda xp, g, ans, x1, x2: g * x2, lambda xp, g, ans, x1, x2: g * x1)
    return types.SimpleNamespace(plugrad_ops=hookimpl(lambda: [times]))


def _tensor(backend: str):
    device_or_skip(backend)
    return plugrad.tensor(_X, dtype=plugrad.float32, device=backend)


class PluginOpOverhead:
    """A third-party op (``plugrad.ops.times_bench``) vs the built-in ``multiply``."""

    params: ClassVar[list[str]] = benchmarked_backends()
    param_names: ClassVar[list[str]] = ["backend"]

    def setup(self, backend: str) -> None:
        self.registered = False
        self.x = _tensor(backend)  # raises NotImplementedError (skip) for unavailable backends
        plugrad.plugins.register(_multiply_plugin(), name=_PLUGIN)
        self.registered = True
        self.times = plugrad.ops.times_bench
        assert self.times(self.x, self.x).tolist() == plugrad.multiply(self.x, self.x).tolist()

    def teardown(self, backend: str) -> None:
        # asv tears down after a skipping setup too: undo only what setup did.
        if self.registered:
            plugrad.plugins.unregister(_PLUGIN)

    def time_builtin_op(self, backend: str) -> None:
        plugrad.multiply(self.x, self.x)

    def time_plugin_op(self, backend: str) -> None:
        self.times(self.x, self.x)

    def track_ratio_plugin_vs_builtin(self, backend: str) -> float:
        x, times, multiply = self.x, self.times, plugrad.multiply
        return ratio(lambda: times(x, x), lambda: multiply(x, x), clock_for(x.device))

    track_ratio_plugin_vs_builtin.unit = "ratio"


class CheckingModeOverhead:
    """The built-in ``multiply`` with checking mode on, and its ratio to checking off."""

    params: ClassVar[list[str]] = benchmarked_backends()
    param_names: ClassVar[list[str]] = ["backend"]

    def setup(self, backend: str) -> None:
        self.x = _tensor(backend)  # raises NotImplementedError (skip) for unavailable backends
        plugrad.plugins.set_checks(True)

    def teardown(self, backend: str) -> None:
        plugrad.plugins.set_checks(False)

    def time_builtin_op_checked(self, backend: str) -> None:
        plugrad.multiply(self.x, self.x)

    def track_ratio_checked_vs_unchecked(self, backend: str) -> float:
        x, multiply, clock = self.x, plugrad.multiply, clock_for(self.x.device)
        # Switching checks rebuilds the kernel tables: the two sides cannot interleave.
        (checked_s,) = medians(interleaved_runs([lambda: multiply(x, x)], clock=clock))
        plugrad.plugins.set_checks(False)
        try:
            (unchecked_s,) = medians(interleaved_runs([lambda: multiply(x, x)], clock=clock))
        finally:
            plugrad.plugins.set_checks(True)
        return checked_s / unchecked_s

    track_ratio_checked_vs_unchecked.unit = "ratio"
