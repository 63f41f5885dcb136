"""Constructing a module without initialising its parameters (:func:`skip_init`)."""

from __future__ import annotations

import inspect
from typing import Any, TypeVar

from ...creation import empty_like
from ...errors import ArgumentError, InvalidArgumentError
from ...grad_mode import no_grad
from ...random import fork_rng
from ..module import Module

__all__ = ["skip_init"]

M = TypeVar("M", bound=Module)


def skip_init(module_cls: type[M], *args: Any, **kwargs: Any) -> M:
    """``module_cls(*args, **kwargs)`` with its parameters and buffers left uninitialised,
    as PyTorch's ``torch.nn.utils.skip_init``: to be filled by the caller (from a
    checkpoint, or by an initialisation of its own).

    The module's class must take a ``device`` argument, as PyTorch requires.
    PyTorch builds the module on its ``meta`` device and then allocates the
    tensors; plugrad has no meta device, so the module is built as usual, its
    initialisation drawing nothing from the random generators (they continue as
    if it had not run), and every parameter and buffer is then overwritten with
    uninitialised memory (:func:`plugrad.empty_like`) of its shape, dtype and
    device: rely on none of its values. The tensors are the module's own
    (tied parameters stay tied), with their ``requires_grad``.

    Parameters
    ----------
    module_cls : type
        A :class:`plugrad.nn.Module` subclass.
    *args, **kwargs
        Its constructor's arguments.

    Examples
    --------
    >>> import plugrad
    >>> layer = plugrad.nn.utils.skip_init(plugrad.nn.Linear, 3, 2)
    >>> layer.weight.shape, layer.weight.requires_grad
    ((2, 3), True)
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise ArgumentError(f"skip_init() takes a Module class, got {module_cls!r}")
    try:
        parameters = inspect.signature(module_cls).parameters
    except (TypeError, ValueError):  # (a signature Python cannot read: not refused)
        parameters = {"device": None}  # type: ignore[assignment]
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    if "device" not in parameters and not takes_any:
        raise InvalidArgumentError(
            f"skip_init(): {module_cls.__name__} takes no 'device' argument, which skip_init "
            "requires of a module (as PyTorch's); construct it and initialise it yourself"
        )
    with fork_rng():
        module = module_cls(*args, **kwargs)
    with no_grad():
        for tensor in {id(t): t for t in (*module.parameters(), *module.buffers())}.values():
            tensor.copy_(empty_like(tensor))
    return module
