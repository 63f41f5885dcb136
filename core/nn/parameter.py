"""``Parameter``: a leaf Tensor that a :class:`~plugrad.nn.Module` registers as learnable."""

from __future__ import annotations

from typing import Any

from ..creation import empty
from ..errors import ArgumentError
from ..tensor import Tensor
from ..versions import ALIAS

__all__ = ["Buffer", "Parameter"]


def _data_of(kind: str, data: Tensor | None) -> Tensor:
    """What ``Parameter(data)`` and ``Buffer(data)`` hold: ``data``, an empty float tensor
    for ``None``; anything else is a TypeError."""
    if data is None:
        return empty((0,))
    if not isinstance(data, Tensor):
        raise ArgumentError(
            f"{kind}() takes a Tensor, got {type(data).__name__}; make one with "
            "plugrad.tensor(...) or plugrad.asarray(...)"
        )
    return data


class Parameter(Tensor):
    """A Tensor that is a module parameter: a leaf that requires grad by default.

    Assigning a Parameter to an attribute of a :class:`~plugrad.nn.Module`
    registers it, so it appears in ``parameters()`` and ``state_dict()``.
    ``Parameter(t)`` shares ``t``'s memory. Results of operations on a
    Parameter are plain Tensors.

    Parameters
    ----------
    data : Tensor, optional
        The values (an empty float tensor if omitted).
    requires_grad : bool
        Whether gradients are computed for it.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.nn.Parameter(plugrad.zeros(2))
    >>> w
    Parameter containing:
    tensor([0., 0.], requires_grad=True)
    >>> isinstance(w, plugrad.Tensor), w.is_leaf
    (True, True)
    >>> type(w * 2).__name__
    'Tensor'
    """

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        data = _data_of("Parameter", data)
        # Shares the memory, so it shares the version counter.
        parameter = data._alias(cls, ALIAS)
        parameter.requires_grad = requires_grad
        return parameter

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        """Everything happens in ``__new__`` (Tensor itself has no constructor)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        """A copy of the data without the gradient, as PyTorch's (a copied model starts with
        no ``.grad``; a plain tensor's copy keeps its own)."""
        copied = super().__deepcopy__(memo)
        copied._grad = None
        return copied  # type: ignore[return-value]

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class _BufferKind(type):
    """``isinstance(t, Buffer)``: whether ``t`` was made by ``Buffer(...)`` (a plain Tensor
    marked so, as PyTorch's)."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return marked_as_buffer(instance)


def marked_as_buffer(value: Any) -> bool:
    """Whether ``value`` was made by ``Buffer(...)`` (what ``isinstance(value, Buffer)``
    asks, without the metaclass's call: :meth:`Module.__setattr__` asks at every set)."""
    return isinstance(value, Tensor) and value.__dict__.get("_is_buffer") is True


class Buffer(Tensor, metaclass=_BufferKind):
    """A Tensor that a :class:`~plugrad.nn.Module` registers as a buffer when assigned to
    one of its attributes (``self.steps = nn.Buffer(plugrad.zeros(()))``), as
    :meth:`~plugrad.nn.Module.register_buffer` does; PyTorch's ``nn.Buffer``.

    ``Buffer(t)`` is ``t.detach()`` (sharing its memory, keeping ``requires_grad``)
    marked as a buffer: a plain Tensor, for which ``isinstance(b, Buffer)`` holds.

    Parameters
    ----------
    data : Tensor, optional
        The values (an empty float tensor if omitted).
    persistent : bool, default True
        Whether the buffer is part of the module's ``state_dict()``.

    Examples
    --------
    >>> import plugrad
    >>> class Counter(plugrad.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.calls = plugrad.nn.Buffer(plugrad.zeros(()))
    ...         self.scratch = plugrad.nn.Buffer(plugrad.zeros(2), persistent=False)
    >>> [name for name, _ in Counter().named_buffers()], list(Counter().state_dict())
    (['calls', 'scratch'], ['calls'])
    """

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Tensor:  # type: ignore[misc]
        data = _data_of("Buffer", data)
        buffer = data.detach().requires_grad_(data.requires_grad)
        vars(buffer).update(persistent=bool(persistent), _is_buffer=True)
        return buffer
