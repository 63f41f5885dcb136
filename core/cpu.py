"""``plugrad.cpu``: PyTorch's ``torch.cpu``, for device-agnostic code.

Code written for any device calls ``getattr(torch, device_type).synchronize()``,
``.device_count()`` or ``.current_stream()``; for ``"cpu"`` these are the answers
of one CPU: it is available, there is one, it is ``"cpu"``, and its streams and
events are placeholders (CPU work is done when a call returns). As PyTorch's,
the device arguments are taken and ignored.

``plugrad.cpu.amp.autocast`` and ``plugrad.cpu.amp.GradScaler`` are PyTorch's
deprecated names of ``plugrad.amp.autocast("cpu", ...)`` and
``plugrad.amp.GradScaler("cpu", ...)``: they warn (``FutureWarning``, as
PyTorch's) and are those.

Examples
--------
>>> import plugrad
>>> plugrad.cpu.is_available(), plugrad.cpu.device_count(), plugrad.cpu.current_device()
(True, 1, 'cpu')
>>> plugrad.cpu.synchronize()
>>> with plugrad.cpu.stream(plugrad.cpu.Stream()):
...     y = plugrad.ones(2) * 2
"""

from __future__ import annotations

import sys
import types
import warnings
from contextlib import AbstractContextManager
from typing import Any

from . import amp as _amp
from .backend import Device
from .devices import resolve
from .errors import ArgumentError, type_name

__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "amp",
    "current_device",
    "current_stream",
    "device_count",
    "is_available",
    "is_initialized",
    "set_device",
    "stream",
    "synchronize",
]


def is_available() -> bool:
    """Whether the CPU can be used: always.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.cpu.is_available()
    True
    """
    return True


def is_initialized() -> bool:
    """Whether the CPU is initialized: always."""
    return True


def device_count() -> int:
    """The number of CPU devices (not cores): 1."""
    return 1


def current_device() -> str:
    """The current CPU device: ``"cpu"``."""
    return "cpu"


def _checked_device(function: str, device: object) -> None:
    """Refuse what names no device at all; a device, a name or an index is taken and
    ignored, as PyTorch's (there is one CPU)."""
    if device is not None and (
        isinstance(device, bool) or not isinstance(device, (Device, str, int))
    ):
        raise ArgumentError(
            f"plugrad.cpu.{function}() takes a device, a device string, an index or None, "
            f"got {type_name(device)}"
        )


def set_device(device: Device | str | int | None) -> None:
    """Select the current CPU device: there is one, so nothing changes (PyTorch's)."""
    _checked_device("set_device", device)


def synchronize(device: Device | str | int | None = None) -> None:
    """Wait until the CPU's work has finished: the NumPy backend, plugrad's ``"cpu"``,
    finishes each call before it returns, so this returns at once. ``device`` is
    ignored, as PyTorch's.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.cpu.synchronize()
    """
    _checked_device("synchronize", device)
    cpu = resolve("cpu")
    cpu.backend.synchronize(cpu.native)


class Stream:
    """A CPU stream, PyTorch's placeholder: the CPU runs each call when it is made, so
    there is nothing to wait for or order."""

    def __init__(self, priority: int = -1) -> None:
        self.priority = priority

    def wait_stream(self, stream: Stream) -> None:
        """Make this stream wait for ``stream``: nothing to wait for."""

    def record_event(self) -> None:
        """Record an event on this stream: nothing to record."""

    def wait_event(self, event: Event) -> None:
        """Make this stream wait for ``event``: nothing to wait for."""


class Event:
    """A CPU event, PyTorch's placeholder: it has always happened."""

    def query(self) -> bool:
        """Whether the event has happened: always."""
        return True

    def record(self, stream: Stream | None = None) -> None:
        """Record the event: nothing to record."""

    def synchronize(self) -> None:
        """Wait for the event: it has happened."""

    def wait(self, stream: Stream | None = None) -> None:
        """Make ``stream`` wait for the event: it has happened."""


_default_stream = Stream()
_current_stream = _default_stream


def current_stream(device: Device | str | int | None = None) -> Stream:
    """The stream selected by :func:`stream` (a default one outside it); ``device`` is
    ignored, as PyTorch's."""
    _checked_device("current_stream", device)
    return _current_stream


class StreamContext(AbstractContextManager[None]):
    """Select ``stream`` as the current stream within a ``with`` block (``None``: leave
    the current one), as PyTorch's."""

    def __init__(self, stream: Stream | None) -> None:
        if stream is not None and not isinstance(stream, Stream):
            raise ArgumentError(
                f"plugrad.cpu.stream() takes a plugrad.cpu.Stream or None, got {type_name(stream)}"
            )
        self.stream = stream
        self.prev_stream = _default_stream

    def __enter__(self) -> None:
        global _current_stream
        if self.stream is not None:
            self.prev_stream, _current_stream = _current_stream, self.stream

    def __exit__(self, *exc_info: object) -> None:
        global _current_stream
        if self.stream is not None:
            _current_stream = self.prev_stream


def stream(stream: Stream | None) -> StreamContext:
    """A context manager that makes ``stream`` the current stream (:class:`StreamContext`).

    Examples
    --------
    >>> import plugrad
    >>> s = plugrad.cpu.Stream()
    >>> with plugrad.cpu.stream(s):
    ...     plugrad.cpu.current_stream() is s
    True
    """
    return StreamContext(stream)


# -- plugrad.cpu.amp: PyTorch's deprecated torch.cpu.amp -----------------------------------


def _deprecated(name: str) -> None:
    warnings.warn(
        f"plugrad.cpu.amp.{name}(args...) is deprecated, as PyTorch's torch.cpu.amp.{name}: "
        f"use plugrad.amp.{name}('cpu', args...) instead",
        FutureWarning,
        stacklevel=3,
    )


class _Autocast(_amp.autocast):
    """PyTorch's deprecated ``torch.cpu.amp.autocast(enabled=True, dtype=..., cache_enabled=True)``:
    :class:`plugrad.amp.autocast` with ``device_type="cpu"``, after a ``FutureWarning``.
    Taken only with ``enabled=False``, as that one. ``dtype`` defaults to ``None``
    (PyTorch's to ``torch.bfloat16``, a dtype plugrad does not have).

    Examples
    --------
    >>> import warnings
    >>> import plugrad
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     with plugrad.cpu.amp.autocast(enabled=False):
    ...         y = plugrad.ones(2) * 2
    >>> caught[0].category.__name__
    'FutureWarning'
    """

    def __init__(self, enabled: bool = True, dtype: Any = None, cache_enabled: bool = True) -> None:
        _deprecated("autocast")
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class _GradScaler(_amp.GradScaler):
    """PyTorch's deprecated ``torch.cpu.amp.GradScaler(init_scale, growth_factor,
    backoff_factor, growth_interval, enabled)``: :class:`plugrad.amp.GradScaler` of the
    CPU, after a ``FutureWarning``.
    """

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        _deprecated("GradScaler")
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


# Under their PyTorch names, in a module of its own: ``from plugrad.cpu.amp import autocast``.
for _class, _name in ((_Autocast, "autocast"), (_GradScaler, "GradScaler")):
    _class.__name__ = _class.__qualname__ = _name
    _class.__module__ = f"{__name__}.amp"
amp = types.ModuleType(
    f"{__name__}.amp",
    "PyTorch's deprecated ``torch.cpu.amp``: :class:`autocast` and :class:`GradScaler`, "
    "which warn and are ``plugrad.amp``'s of the CPU.",
)
amp.autocast = _Autocast  # type: ignore[attr-defined]
amp.GradScaler = _GradScaler  # type: ignore[attr-defined]
amp.__all__ = ["GradScaler", "autocast"]  # type: ignore[attr-defined]
sys.modules[amp.__name__] = amp
del _class, _name
