"""PyTorch's deprecated ``size_average=`` and ``reduce=`` of the losses, read as ``reduction=``.

Older PyTorch code writes ``F.mse_loss(x, y, size_average=False)`` or
``nn.CrossEntropyLoss(reduce=False)``; PyTorch still takes them, with a warning,
as ``reduction="sum"`` and ``reduction="none"``. So does plugrad, as keywords
and at PyTorch's positions.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import ArgumentError

__all__ = ["accepts_legacy_reduction", "legacy_reduction"]

_Callable = TypeVar("_Callable", bound=Callable[..., Any])


def legacy_reduction(function: str, size_average: Any, reduce: Any) -> str:
    """The ``reduction`` that ``size_average`` and ``reduce`` stand for, as PyTorch reads
    them (``None`` counts as ``True``), with PyTorch's deprecation warning."""
    for name, value in (("size_average", size_average), ("reduce", reduce)):
        if value is not None and not isinstance(value, bool):
            hint = (
                f"; in PyTorch's order of arguments, {name} comes before reduction: pass "
                f"reduction={value!r} by name"
                if value in ("mean", "sum", "none")
                else ""
            )
            raise ArgumentError(f"{function}(): {name} must be a bool or None, got {value!r}{hint}")
    averaged = True if size_average is None else size_average
    reduced = True if reduce is None else reduce
    reduction = "none" if not reduced else "mean" if averaged else "sum"
    warnings.warn(
        f"{function}(): size_average and reduce are deprecated (as in PyTorch); read as "
        f"reduction={reduction!r}, which is the argument to pass",
        UserWarning,
        stacklevel=3,
    )
    return reduction


def accepts_legacy_reduction(function: _Callable | None = None, *, after: str | None = None) -> Any:
    """Give a loss function (or a loss layer's ``__init__``) PyTorch's deprecated
    ``size_average`` and ``reduce``; given, they set ``reduction``.

    ``after`` names the parameter that ``size_average`` follows in PyTorch's
    signature (``reduce`` comes just before ``reduction``): both are then
    positional where PyTorch has them, so that ``F.nll_loss(x, t, None, False)``
    means what it means in PyTorch. Without ``after`` they are keywords only
    (losses that PyTorch gives them as keywords).
    """
    if function is None:
        return functools.partial(accepts_legacy_reduction, after=after)
    signature = inspect.signature(function)
    name = function.__qualname__.removesuffix(".__init__")
    parameters = list(signature.parameters.values())
    if after is None:
        order: list[str] = []
        plain = len(parameters)
    else:
        names = [p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        order = names[:]
        order.insert(order.index(after) + 1, "size_average")
        order.insert(order.index("reduction"), "reduce")
        plain = order.index("size_average")  # the positions where the two signatures agree

    layer = function.__name__ == "__init__"

    @functools.wraps(function)
    def call(*args: Any, size_average: Any = None, reduce: Any = None, **kwargs: Any) -> Any:
        if len(args) > plain:
            if len(args) > len(order):
                raise ArgumentError(
                    f"{name}() takes at most {len(order) - layer} positional arguments, got "
                    f"{len(args) - layer}"
                )
            moved = dict(zip(order[plain:], args[plain:]))
            args = args[:plain]
            if "size_average" in moved:
                size_average = moved.pop("size_average")
            if "reduce" in moved:
                reduce = moved.pop("reduce")
            for key in moved:
                if key in kwargs:
                    raise ArgumentError(f"{name}() got multiple values for argument {key!r}")
            kwargs.update(moved)
        if size_average is None and reduce is None:
            return function(*args, **kwargs)
        bound = signature.bind_partial(*args, **kwargs)
        called = type(args[0]).__name__ if layer and args else name
        bound.arguments["reduction"] = legacy_reduction(called, size_average, reduce)
        return function(*bound.args, **bound.kwargs)

    Parameter = inspect.Parameter
    kind = Parameter.KEYWORD_ONLY if after is None else Parameter.POSITIONAL_OR_KEYWORD
    legacy = {
        key: Parameter(key, kind, default=None, annotation="bool | None")
        for key in ("size_average", "reduce")
    }
    if after is None:
        shown = [*parameters, *legacy.values()]
    else:
        by_name = {p.name: p for p in parameters}
        shown = [legacy[key] if key in legacy else by_name[key] for key in order]
        shown += [p for p in parameters if p.name not in order]
    call.__signature__ = signature.replace(parameters=shown)  # type: ignore[attr-defined]
    return call
