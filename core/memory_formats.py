"""PyTorch's memory formats, accepted where PyTorch takes them; a layout is the backend's.

A backend array's layout is its library's business (NumPy keeps what an
operation gives, array-api-strict has none to ask about), so plugrad makes new
arrays in the backend's own order whatever format is named. The names exist so
that code written for PyTorch runs: ``zeros_like(p, memory_format=preserve_format)``,
the line every PyTorch optimizer holds, or ``model.to(memory_format=channels_last)``,
a speed hint. No value depends on a layout.
"""

from __future__ import annotations

from typing import Any

from .errors import ArgumentError, InvalidArgumentError

__all__ = [
    "channels_last",
    "channels_last_3d",
    "check_memory_format",
    "contiguous_format",
    "layout",
    "memory_format",
    "preserve_format",
    "row_major_layout",
    "strided",
]


class _Named:
    """A name that prints as plugrad's attribute of it, and copies as the same object."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"plugrad.{self.name}"

    def __reduce__(self) -> str:
        # Singletons: copying or unpickling gives the same object.
        return self.name


class memory_format(_Named):
    """A memory format, as ``torch.memory_format``: a name for an element order.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.preserve_format
    plugrad.preserve_format
    >>> plugrad.zeros_like(plugrad.ones(2), memory_format=plugrad.preserve_format)
    tensor([0., 0.])
    """

    __slots__ = ()


class layout(_Named):
    """A layout, as ``torch.layout``: how a tensor's elements are stored. plugrad's tensors
    are dense arrays, ``strided`` (PyTorch's sparse layouts have no equivalent).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.ones(2).layout
    plugrad.strided
    """

    __slots__ = ()


strided = layout("strided")

preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


#: The number of dimensions a tensor needs for each channels-last format, as in PyTorch.
_RANKS = {"channels_last": 4, "channels_last_3d": 5}


def check_memory_format(function: str, value: Any, ndim: int | None = None) -> None:
    """Raise unless ``value`` is ``None`` or a memory format a tensor of ``ndim`` dimensions
    (when given) can take: ``TypeError`` for another value, ``ValueError`` for a
    channels-last format of a tensor of the wrong rank (PyTorch refuses those too)."""
    if value is None:
        return
    if type(value) is not memory_format:
        raise ArgumentError(
            f"{function}(): memory_format must be one of plugrad.preserve_format, "
            f"plugrad.contiguous_format, plugrad.channels_last, plugrad.channels_last_3d, "
            f"got {value!r}"
        )
    rank = _RANKS.get(value.name)
    if rank is not None and ndim is not None and ndim != rank:
        raise InvalidArgumentError(
            f"{function}(): {value!r} is a layout of {rank}-dimensional tensors, and this one "
            f"has {ndim} dimensions; leave memory_format out"
        )


def row_major_layout(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether elements of ``shape`` at ``strides`` (in elements) lie in row-major order, one
    after the other, as PyTorch's contiguous tensors do; axes of length 1 do not matter."""
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size == 0:
            return True
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True
