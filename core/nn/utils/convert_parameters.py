"""A model's parameters as one flat vector, and back."""

from __future__ import annotations

from collections.abc import Iterable

from ... import ops
from ...errors import ArgumentError, InvalidArgumentError
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _as_list(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    items = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    for position, p in enumerate(items):
        if not isinstance(p, Tensor):
            raise ArgumentError(
                f"parameters must be Tensors; item {position} is {type(p).__name__}"
            )
    return items


def parameters_to_vector(parameters: Tensor | Iterable[Tensor]) -> Tensor:
    """Concatenate the parameters, each flattened, into one vector (differentiable).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import parameters_to_vector
    >>> parameters_to_vector([plugrad.ones((2, 2)), plugrad.zeros(1)])
    tensor([1., 1., 1., 1., 0.])
    """
    items = _as_list(parameters)
    if not items:
        raise InvalidArgumentError("parameters_to_vector needs at least one parameter")
    devices = {p.device for p in items}
    if len(devices) > 1:
        raise InvalidArgumentError(
            f"the parameters live on several devices {sorted(str(d) for d in devices)}; "
            "move them to one with Module.to(...) first"
        )
    return ops.concat([ops.reshape(p, (-1,)) for p in items])


def vector_to_parameters(vec: Tensor, parameters: Tensor | Iterable[Tensor]) -> None:
    """Make each parameter hold its slice of ``vec`` (the inverse of :func:`parameters_to_vector`).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import vector_to_parameters
    >>> a, b = plugrad.zeros((2, 2)), plugrad.zeros(1)
    >>> vector_to_parameters(plugrad.arange(5.0), [a, b])
    >>> a, b
    (tensor([[0., 1.],
            [2., 3.]]), tensor([4.]))
    """
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        raise ArgumentError(
            f"vec must be a 1-d Tensor, got {type(vec).__name__} {getattr(vec, 'shape', '')}"
        )
    items = _as_list(parameters)
    needed = sum(p.size for p in items)
    if vec.shape[0] != needed:
        raise InvalidArgumentError(
            f"the parameters hold {needed} elements in all, but vec has {vec.shape[0]}"
        )
    offset = 0
    for p in items:
        n = p.size
        p.data = ops.reshape(vec[offset : offset + n], p.shape).detach()
        offset += n
