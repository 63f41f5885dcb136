"""``plugrad.autograd.graph``: the graph's nodes, and hooks on what a backward saves.

PyTorch's ``torch.autograd.graph``: :class:`Node` (the class of every
``grad_fn``), :class:`saved_tensors_hooks`, :class:`save_on_cpu`,
:class:`disable_saved_tensors_hooks` (see :mod:`plugrad.saved_tensor_hooks`)
and :func:`increment_version`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import ArgumentError
from .graph import Node
from .saved_tensor_hooks import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks
from .tensor import Tensor
from .versions import bump_version

__all__ = [
    "Node",
    "disable_saved_tensors_hooks",
    "increment_version",
    "save_on_cpu",
    "saved_tensors_hooks",
]


def increment_version(tensor: Tensor | Iterable[Tensor]) -> None:
    """Count an in-place change of ``tensor`` (or of each tensor given) that plugrad did not
    see, such as one a foreign kernel made through the array's memory (PyTorch's): a
    backward that saved the tensor before it is then refused, as after ``x.add_(1)``.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.ones(2, requires_grad=True)
    >>> y = x * 1
    >>> z = y * y
    >>> y.array[0] = 5.0  # changed behind plugrad's back
    >>> plugrad.autograd.graph.increment_version(y)
    >>> z.sum().backward()
    Traceback (most recent call last):
      ...
    plugrad.errors.InPlaceModificationError: one of the variables needed for gradient ...
    """
    if isinstance(tensor, Tensor):
        tensors: tuple[Any, ...] = (tensor,)
    elif isinstance(tensor, Iterable) and not isinstance(tensor, (str, bytes)):
        tensors = tuple(tensor)
    else:
        raise ArgumentError(
            f"increment_version() takes a Tensor or an iterable of Tensors, got "
            f"{type(tensor).__name__}"
        )
    for index, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise ArgumentError(
                f"increment_version() takes a Tensor or an iterable of Tensors; item {index} "
                f"is a {type(t).__name__}"
            )
    for t in tensors:
        bump_version(t)
