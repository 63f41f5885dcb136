"""Computing the values of tensors on lazy backends (Dask), several at once.

On a lazy backend an operation only adds to a task graph. A value is computed
when Python needs it (``.item()``, ``bool(x)``, printing, ``.numpy()``), one
tensor at a time; :func:`compute` computes several together, so work they
share (a forward pass behind a loss and its gradients) runs once. On an eager
backend it changes nothing.

A graph that only ever grows (a chain of many ops, a training loop that never
asks for a value) would make each new task cost more than the last. So the
arrays of a lazy backend are *settled* (:meth:`plugrad.backend.Backend.settle`)
where graphs grow: the inputs and outputs of every kernel, every gradient of a
backward pass, and the parameters and state of an optimizer step. Settling
does nothing to a small graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import ArgumentError
from .tensor import Tensor

if TYPE_CHECKING:
    from .backend import Backend

__all__ = ["compute", "settle", "settling_kernel"]

#: Whether a lazy backend has been activated in this process. Eager-only processes
#: read this once per backward pass or optimizer step, and settle nothing.
in_use = False


def compute(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Compute the values of ``tensors`` together, and keep them; return the tensors.

    Each tensor then holds its computed values (on Dask: arrays wrapping them,
    with the same chunks), so reading them later costs nothing more. Graph,
    gradients and version counters are untouched: only how the same values are
    held changes. Tensors of different backends are computed backend by backend.

    Parameters
    ----------
    *tensors : Tensor

    Returns
    -------
    tuple of Tensor
        The same tensor objects, in the same order.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    >>> loss = (x * x).sum()
    >>> loss.backward()
    >>> loss, grad = plugrad.compute(loss, x.grad)
    >>> grad
    tensor([2., 4.])
    """
    groups: dict[Backend, list[Tensor]] = {}
    for tensor in tensors:
        if not isinstance(tensor, Tensor):
            raise ArgumentError(
                f"plugrad.compute() takes tensors, got a {type(tensor).__name__}; "
                "wrap arrays with plugrad.asarray() first"
            )
        groups.setdefault(tensor._device.backend, []).append(tensor)
    for backend, members in groups.items():
        computed = backend.compute([t._array for t in members])
        for tensor, array in zip(members, computed, strict=True):
            tensor._array = array
    return tensors


def settle(backend: Backend, value: Any) -> None:
    """Settle the arrays in ``value`` (an array, or a list or tuple of arrays and ``None``).

    Only for a lazy ``backend``; :meth:`plugrad.backend.Backend.settle` says what it does.
    """
    if type(value) in (list, tuple):
        for element in value:
            if element is not None:
                backend.settle(element)
    elif value is not None:
        backend.settle(value)


def settle_tensors(tensors: Any) -> None:
    """Settle the array of each tensor in ``tensors`` that lives on a lazy backend."""
    for tensor in tensors:
        backend = tensor._device.backend
        if backend.lazy:
            backend.settle(tensor._array)


def settling_kernel(kernel: Callable[..., Any], backend: Backend) -> Callable[..., Any]:
    """``kernel`` settling its array inputs (also inside lists and tuples) and its outputs."""
    settle_one = backend.settle
    array_types = tuple(backend.array_types())

    def settled(*args: Any, **params: Any) -> Any:
        for arg in args:
            if isinstance(arg, array_types):
                settle_one(arg)
            elif type(arg) in (list, tuple):
                for element in arg:
                    if isinstance(element, array_types):
                        settle_one(element)
        out = kernel(*args, **params)
        if isinstance(out, array_types):
            settle_one(out)
        elif isinstance(out, list | tuple):  # named tuples too
            for element in out:
                if isinstance(element, array_types):
                    settle_one(element)
        return out

    return settled
