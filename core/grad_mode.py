"""Grad mode: whether operations are recorded for backward, per thread."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import ArgumentError

__all__ = ["enable_grad", "inference_mode", "is_grad_enabled", "no_grad", "set_grad_enabled"]

F = TypeVar("F", bound=Callable[..., Any])


class _GradState(threading.local):
    # A class attribute is the default every new thread starts from.
    enabled = True


_state = _GradState()


def _run_in_mode(func: F, mode: bool) -> F:
    """Wrap ``func`` so that it runs with grad mode ``mode``, restoring it afterwards.

    A generator function runs in the mode each time it resumes (as in PyTorch), and the
    caller's mode holds between its yields.
    """
    if inspect.isgeneratorfunction(func):
        return _generator_in_mode(func, mode)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        previous = _state.enabled
        _state.enabled = mode
        try:
            return func(*args, **kwargs)
        finally:
            _state.enabled = previous

    return wrapper  # type: ignore[return-value]


def _generator_in_mode(func: F, mode: bool) -> F:
    def step(method: Callable[..., Any], *args: Any) -> Any:
        previous = _state.enabled
        _state.enabled = mode
        try:
            return method(*args)
        finally:
            _state.enabled = previous

    @functools.wraps(func)
    def generator(*args: Any, **kwargs: Any) -> Any:
        inner = func(*args, **kwargs)
        try:
            response = step(inner.send, None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    step(inner.close)
                    raise
                except BaseException as error:  # thrown in by the caller: on to the generator
                    response = step(inner.throw, error)
                else:
                    response = step(inner.send, request)
        except StopIteration as stop:
            return stop.value

    return generator  # type: ignore[return-value]


def is_grad_enabled() -> bool:
    """Return whether operations on this thread are being recorded for backward.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.is_grad_enabled()
    True
    >>> with plugrad.no_grad():
    ...     plugrad.is_grad_enabled()
    False
    """
    return _state.enabled


class set_grad_enabled:
    """Turn recording of operations on or off, on the current thread.

    Works as a function call (the change lasts until changed again), as a
    context manager (restores the previous mode on exit) and as a decorator.

    Parameters
    ----------
    mode : bool
        ``True`` to record operations for backward, ``False`` not to.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    >>> with plugrad.set_grad_enabled(False):
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    __slots__ = ("_mode", "_previous")

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise ArgumentError(
                f"set_grad_enabled() takes a bool, got {type(mode).__name__}; "
                "pass True to record operations or False not to"
            )
        self._previous = _state.enabled
        self._mode = mode
        _state.enabled = mode

    def __enter__(self) -> None:
        _state.enabled = self._mode

    def __exit__(self, *exc_info: object) -> None:
        _state.enabled = self._previous

    def __call__(self, func: F) -> F:
        # Calling the constructor already switched the mode; a decorator must not.
        _state.enabled = self._previous
        return _run_in_mode(func, self._mode)


class _GradModeContext:
    """Shared machinery of :class:`no_grad` and :class:`enable_grad`."""

    __slots__ = ("_previous",)
    _mode: bool

    def __new__(cls, func: Any = None) -> Any:
        # Used bare as a decorator (``@no_grad`` without parentheses), it gets the function.
        if func is not None:
            if not callable(func):
                raise ArgumentError(
                    f"{cls.__name__}() takes no arguments, or a function when used as "
                    f"@{cls.__name__}; got {type(func).__name__}"
                )
            return _run_in_mode(func, cls._mode)
        return super().__new__(cls)

    def __init__(self, func: Any = None) -> None:
        """Nothing to set up: the mode changes on ``__enter__``."""

    def __enter__(self) -> None:
        self._previous = _state.enabled
        _state.enabled = self._mode

    def __exit__(self, *exc_info: object) -> None:
        _state.enabled = self._previous

    def __call__(self, func: F) -> F:
        return _run_in_mode(func, self._mode)


class no_grad(_GradModeContext):
    """Context manager and decorator that stops recording operations.

    Results computed inside do not require grad, which saves the memory the
    backward pass would need. Use it for inference and for parameter updates.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    >>> with plugrad.no_grad():
    ...     v = w * 2
    >>> v.requires_grad
    False
    >>> @plugrad.no_grad()
    ... def predict(w):
    ...     return w * 3
    >>> predict(w).requires_grad
    False
    >>> @plugrad.no_grad
    ... def predict_bare(w):
    ...     return w * 3
    >>> predict_bare(w).requires_grad
    False
    """

    __slots__ = ()
    _mode = False


class enable_grad(_GradModeContext):
    """Context manager and decorator that records operations, even inside :class:`no_grad`.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor(3.0, requires_grad=True)
    >>> with plugrad.no_grad():
    ...     with plugrad.enable_grad():
    ...         y = x * x
    >>> y.requires_grad
    True
    """

    __slots__ = ()
    _mode = True


class inference_mode:
    """PyTorch's ``inference_mode``: here the same as :class:`no_grad`; ``mode=False`` as
    :class:`enable_grad` (PyTorch's ``inference_mode(False)`` turns gradients on, also
    inside ``no_grad``).

    A context manager and a decorator, also bare (``@plugrad.inference_mode``).
    Tensors made inside are ordinary tensors that do not require grad: plugrad
    has no separate kind of inference tensor, so none of PyTorch's restrictions
    on using them later applies.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    >>> @plugrad.inference_mode
    ... def predict(w):
    ...     return w * 3
    >>> v = predict(w)
    >>> v.requires_grad
    False
    >>> (v * w).sum().backward()  # an ordinary tensor: later autograd may use it
    >>> w.grad
    tensor([3., 6.])
    """

    __slots__ = ("_on", "_previous")

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode):  # used bare as a decorator: it gets the function
            return _run_in_mode(mode, False)
        return super().__new__(cls)

    def __init__(self, mode: Any = True) -> None:
        if not isinstance(mode, bool):
            raise ArgumentError(
                f"inference_mode() takes a bool, or a function when used as "
                f"@inference_mode; got {type(mode).__name__}"
            )
        self._on = mode

    def __enter__(self) -> None:
        self._previous = _state.enabled
        _state.enabled = not self._on

    def __exit__(self, *exc_info: object) -> None:
        _state.enabled = self._previous

    def __call__(self, func: F) -> F:
        return _run_in_mode(func, not self._on)
