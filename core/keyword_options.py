"""Keyword arguments that several functions share, declared once as a ``TypedDict``.

A function takes them as ``**options: Unpack[CreationOptions]``, which type
checkers read key by key. :func:`spell_out` gives it the run-time signature
that lists them one by one, so that ``help()``, ``inspect.signature``, editors
and the reference pages show ``dtype=None, device=None, ...`` rather than
``**options``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import ArgumentError

__all__ = ["keyword_defaults", "spell_out"]

_Function = TypeVar("_Function", bound=Callable[..., Any])


def spell_out(options: type, /, **defaults: Any) -> Callable[[_Function], _Function]:
    """Show the keys of the TypedDict ``options`` as keyword-only parameters in the
    signature of the decorated function, in place of its ``**options``.

    A key's default is the one given here, or ``None``.
    """
    unknown = defaults.keys() - options.__annotations__.keys()
    if unknown:
        raise ArgumentError(f"defaults for keys {sorted(unknown)} that {options.__name__} lacks")

    def decorate(function: _Function) -> _Function:
        signature = inspect.signature(function)
        kept = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        if len(kept) == len(signature.parameters):
            raise ArgumentError(f"{function.__qualname__} takes no **options to spell out")
        spelled = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=defaults.get(name),
                annotation=getattr(hint, "__forward_arg__", hint),
            )
            for name, hint in options.__annotations__.items()
        ]
        function.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=kept + spelled
        )
        return function

    return decorate


def keyword_defaults(function: Callable[..., Any]) -> dict[str, Any]:
    """The defaults of ``function``'s keyword-only parameters, by name."""
    return {
        p.name: p.default
        for p in inspect.signature(function).parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.default is not p.empty
    }
