"""PyTorch's deprecated ``size_average=`` and ``reduce=`` of the losses, read as ``reduction=``.

Older PyTorch code writes ``F.mse_loss(x, y, size_average=False)`` or
``nn.CrossEntropyLoss(reduce=False)``; PyTorch still takes them, with a warning,
as ``reduction="sum"`` and ``reduction="none"``. So does plugrad: as keywords
(PyTorch's order of positional arguments differs from plugrad's, where these
two come first, so a positional call is read as plugrad's).
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["accepts_legacy_reduction", "legacy_reduction"]

_Callable = TypeVar("_Callable", bound=Callable[..., Any])


def legacy_reduction(function: str, size_average: Any, reduce: Any) -> str:
    """The ``reduction`` that ``size_average`` and ``reduce`` stand for, as PyTorch reads
    them (``None`` counts as ``True``), with PyTorch's deprecation warning."""
    for name, value in (("size_average", size_average), ("reduce", reduce)):
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"{function}(): {name} must be a bool or None, got {value!r}")
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


def accepts_legacy_reduction(function: _Callable) -> _Callable:
    """Give a loss function (or a loss layer's ``__init__``) PyTorch's deprecated
    ``size_average=`` and ``reduce=`` keywords; given, they set ``reduction``."""
    signature = inspect.signature(function)
    name = function.__qualname__.removesuffix(".__init__")

    @functools.wraps(function)
    def call(*args: Any, size_average: Any = None, reduce: Any = None, **kwargs: Any) -> Any:
        if size_average is None and reduce is None:
            return function(*args, **kwargs)
        bound = signature.bind_partial(*args, **kwargs)
        bound.arguments["reduction"] = legacy_reduction(name, size_average, reduce)
        return function(*bound.args, **bound.kwargs)

    keyword = inspect.Parameter.KEYWORD_ONLY
    parameters = [
        *signature.parameters.values(),
        inspect.Parameter("size_average", keyword, default=None, annotation="bool | None"),
        inspect.Parameter("reduce", keyword, default=None, annotation="bool | None"),
    ]
    call.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]
