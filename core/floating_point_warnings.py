"""Floating-point exceptions as PyTorch treats them: ``inf`` and ``nan``, never a warning.

NumPy warns of a division by zero, an overflow or an invalid operation, and a
warnings filter set to ``"error"`` (pytest's ``filterwarnings = ["error"]``)
makes each warning an exception in the middle of a valid program: ``log`` of a
probability that underflowed to 0, the backward of ``sqrt`` at 0. A backend
whose library warns says how to stop it
(:meth:`~plugrad.backend.Backend.floating_point_warnings_off`); plugrad turns
the warnings off for each backward pass, and computes a forward op again with
them off where one was raised as an error. A forward op's warning is otherwise
NumPy's own (shown once, as NumPy shows it). A compiled replay that raised one
before it changed anything is made again with them off, and the steps after its
first change run with them off (see ``plugrad.compiler.codegen``).
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

__all__ = ["again_quietly", "again_without_warnings", "note_backend", "switches", "warnings_off"]

#: The context managers' types -> the factory making them, one per kind (NumPy's state
#: serves NumPy and array-api-strict alike).
_factories: dict[type, Callable[[], Any]] = {}
#: The context of every started backend that warns: None while none does.
warnings_off: Callable[[], AbstractContextManager[Any]] | None = None
#: What a backward pass calls to turn the warnings off (its result is handed to the
#: second) and on again: None while no started backend warns.
switches: tuple[Callable[[], Any], Callable[[Any], Any]] | None = None


def note_backend(backend: Any) -> None:
    """Take note of a backend being started: its warnings go off where plugrad's do."""
    global warnings_off, switches
    context = backend.floating_point_warnings_off()
    if context is None or type(context) in _factories:
        return
    _factories[type(context)] = backend.floating_point_warnings_off
    factories = tuple(_factories.values())
    warnings_off = factories[0] if len(factories) == 1 else _all_off(factories)
    switches = _switches(warnings_off)


def _switches(factory: Callable[[], Any]) -> tuple[Callable[[], Any], Callable[[Any], Any]]:
    """``factory``'s contexts as two calls, entering and leaving one.

    A context naming a context variable and its value with the warnings off
    (``context_variable``, NumPy's) is switched by setting and resetting it:
    two calls into C, where a ``with`` statement costs a backward pass of a small
    model half a microsecond.
    """
    switch = getattr(factory(), "context_variable", None)
    if switch is not None:
        variable, value = switch
        return functools.partial(variable.set, value), variable.reset

    def enter() -> Any:
        context = factory()
        context.__enter__()
        return context

    def leave(context: Any) -> None:
        context.__exit__(None, None, None)

    return enter, leave


def _all_off(factories: tuple[Callable[[], Any], ...]) -> Callable[[], Any]:
    """One context turning off the warnings of every kind in ``factories``, entered as a
    whole (made but not entered, it changes nothing: ``_switches`` makes one to look at)."""

    @contextlib.contextmanager
    def all_off() -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for factory in factories:
                stack.enter_context(factory())
            yield

    return all_off


def again_without_warnings(
    device: Any, function: Callable[..., Any], /, *args: Any, **kwargs: Any
) -> Any:
    """``function(*args, **kwargs)`` computed again with ``device``'s warnings off.

    Called where the first call raised a RuntimeWarning as an error (a kernel
    returns a new array: computing it twice changes nothing). NumPy's own
    Python code warns of a few cases too (the mean of nothing, NaN), which a
    backend's context does not turn off: they are ignored for this call. Raises
    that warning again for a backend that cannot turn its warnings off.
    """
    context = device.backend.floating_point_warnings_off()
    if context is None:
        raise  # the warning the caller is handling
    with context, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return function(*args, **kwargs)


def again_quietly(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` with every started backend's warnings off: a compiled replay
    made again, whose first call raised a warning as an error before it changed anything."""
    factory = warnings_off
    assert factory is not None, "a replay is made again only where a backend warns"
    with factory(), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return function(*args)
