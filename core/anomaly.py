"""Anomaly mode: find where NaN gradients come from.

Inside :class:`detect_anomaly`, every recorded op remembers where in user code
it was created, and the backward pass checks each gradient as it is computed.
The first NaN raises :class:`~plugrad.errors.AnomalyError` naming the op, the
plugin that provides it, its backend, and the user code that ran the forward
op. Infinities pass, as in PyTorch: they are legitimate in a gradient (a loss
scaler's overflow, which it detects and skips), and one that meets a zero
becomes the NaN that is caught. Outside anomaly mode none of this costs anything: the
recording functions of the per-op path are swapped only while the mode is on.

This module sits below the per-op path and does not import it: the per-op
path subscribes with :func:`on_switch` and swaps its own recorders (see
:func:`plugrad.dispatch.use_recorders`), wrapping them with :func:`with_stack`.
"""

from __future__ import annotations

import functools
import os
import threading
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import AnomalyError

__all__ = [
    "detect_anomaly",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "set_anomaly_enabled",
    "set_detect_anomaly",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Read by the engine once per backward pass.
enabled = False
#: Whether the backward pass checks gradients for NaN (``check_nan=False`` only records
#: where ops ran); named apart from the parameters that set it.
check_nan_ = True
_depth = 0
_lock = threading.Lock()
#: Called with True when anomaly mode turns on and False when it turns off.
_listeners: list[Callable[[bool], None]] = []
#: How the name of an op's plugin is found; plugin loading installs the real one.
op_plugin: Callable[[str], str | None] = lambda op: None
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def is_anomaly_enabled() -> bool:
    """Return whether anomaly mode is on."""
    return enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Return whether anomaly mode, when on, checks gradients for NaN (``check_nan``)."""
    return check_nan_


def user_stack() -> list[traceback.FrameSummary]:
    """The current call stack without plugrad's own frames (where the user's code is)."""
    return [
        frame
        for frame in traceback.extract_stack()[:-1]
        if not os.path.abspath(frame.filename).startswith(_PACKAGE_DIR)
    ]


def with_stack(record: Callable[..., Any]) -> Callable[..., Any]:
    """``record``, also noting on the node where in user code the op was called."""

    def record_with_stack(*args: Any) -> Any:
        node = record(*args)
        node._trace = user_stack()
        return node

    return record_with_stack


class detect_anomaly:
    """Context manager (and decorator) that finds the op producing NaN gradients.

    Anomaly mode is process-wide, like PyTorch's, and slows the forward pass
    (a stack trace per op) and the backward pass (a check per gradient): use it
    to debug, not to train. With ``check_nan=False`` the gradients are not
    checked; ops still record where they ran (for errors the backward raises).

    Examples
    --------
    A square root masked where its argument is 0 still has an infinite slope
    there, and 0 times that is NaN:

    >>> import plugrad
    >>> x = plugrad.tensor([0.0, 4.0], requires_grad=True)
    >>> with plugrad.autograd.detect_anomaly():
    ...     y = plugrad.where(x > 0, plugrad.sqrt(x), 0.0)
    ...     y.sum().backward()
    Traceback (most recent call last):
      ...
    plugrad.errors.AnomalyError: SqrtBackward (op 'sqrt' from plugin ...) produced NaN ...
    """

    def __init__(self, check_nan: bool = True) -> None:
        self._check_nan = bool(check_nan)
        self._check_before: list[bool] = []

    def __enter__(self) -> None:
        global check_nan_
        with _lock:
            self._check_before.append(check_nan_)
            check_nan_ = self._check_nan
            _add_level(1)

    def __exit__(self, *exc_info: object) -> None:
        global check_nan_
        with _lock:
            check_nan_ = self._check_before.pop()
            _add_level(-1)

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def _add_level(change: int) -> None:
    """One more (or one fewer) reason for anomaly mode; on while there is any. Holds ``_lock``."""
    global enabled, _depth
    _depth += change
    if enabled is not (_depth > 0):
        enabled = _depth > 0
        for listener in _listeners:
            listener(enabled)


#: Whether ``set_detect_anomaly(True)`` holds one of the levels.
_switched_on = False


class set_detect_anomaly:
    """Turn anomaly mode on or off from now on, or, as a context manager, for a block (PyTorch's).

    ``set_detect_anomaly(True)`` keeps the mode on until ``set_detect_anomaly(False)``
    (which leaves it on inside a :class:`detect_anomaly` block still open); used
    in a ``with`` statement, the setting before it comes back at the end.

    Examples
    --------
    >>> import plugrad
    >>> with plugrad.autograd.set_detect_anomaly(True):
    ...     plugrad.autograd.is_anomaly_enabled()
    True
    >>> plugrad.autograd.is_anomaly_enabled()
    False
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._before = (_switched_on, check_nan_)
        _switch(bool(mode), bool(check_nan))

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        _switch(*self._before)


def set_anomaly_enabled(mode: bool, check_nan: bool = True) -> None:
    """Turn anomaly mode on or off from now on (PyTorch's ``torch.set_anomaly_enabled``).

    The function form of :class:`set_detect_anomaly`, without its context manager.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.set_anomaly_enabled(True)
    >>> plugrad.is_anomaly_enabled(), plugrad.is_anomaly_check_nan_enabled()
    (True, True)
    >>> plugrad.set_anomaly_enabled(False)
    >>> plugrad.is_anomaly_enabled()
    False
    """
    _switch(bool(mode), bool(check_nan))


def _switch(on: bool, check: bool) -> None:
    global _switched_on, check_nan_
    with _lock:
        check_nan_ = check
        if on is not _switched_on:
            _switched_on = on
            _add_level(1 if on else -1)


def on_switch(listener: Callable[[bool], None]) -> None:
    """Call ``listener(True)`` when anomaly mode turns on, ``listener(False)`` when it turns off.

    How layers above this one (the per-op path) take part in the mode without
    this module importing them.
    """
    _listeners.append(listener)
    if enabled:
        listener(True)


def anomaly_error(node: Any, index: int, array: Any) -> AnomalyError:
    """Build the error for a NaN gradient of input ``index`` computed by ``node``."""
    op = getattr(node, "op", None)
    if op is not None:
        owner = op_plugin(op.name) or "an unregistered plugin"
        what = f"op {op.name!r} from plugin {owner!r}"
    else:
        function = getattr(node, "_function", None)
        what = (
            f"Function {function.__qualname__} from {function.__module__}"
            if function
            else ("a plugrad internal op")
        )
    trace = getattr(node, "_trace", None)
    if trace:
        where = "The forward op was created at (most recent call last):\n" + "".join(
            traceback.format_list(trace)
        )
    else:
        where = (
            "The forward op was created before anomaly mode was turned on; run the forward "
            "pass inside detect_anomaly() too to see where."
        )
    return AnomalyError(
        f"{node.name()} ({what}, on {node._device.name}) produced NaN in the gradient of "
        f"input {index} (shape {tuple(array.shape)}). {where}"
    )
