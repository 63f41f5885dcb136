"""Computing the values of tensors on lazy backends (Dask), several at once.

On a lazy backend an operation only adds to a task graph. A value is computed
when Python needs it (``.item()``, ``bool(x)``, printing, ``.numpy()``), one
tensor at a time; :func:`compute` computes several together, so work they
share (a forward pass behind a loss and its gradients) runs once. On an eager
backend it changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .tensor import Tensor

if TYPE_CHECKING:
    from .backend import Backend

__all__ = ["compute"]


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
            raise TypeError(
                f"plugrad.compute() takes tensors, got a {type(tensor).__name__}; "
                "wrap arrays with plugrad.asarray() first"
            )
        groups.setdefault(tensor._device.backend, []).append(tensor)
    for backend, members in groups.items():
        computed = backend.compute([t._array for t in members])
        for tensor, array in zip(members, computed, strict=True):
            tensor._array = array
    return tensors
