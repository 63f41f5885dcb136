"""Indexing a Tensor: ``x[key]``, with NumPy's rules and gradients.

Importing this module makes ``x[key]`` work (``Tensor.__getitem__``);
:func:`index_key` is also what ``x[key] = value`` (:mod:`plugrad.inplace`) uses.
"""

from __future__ import annotations

from typing import Any

from . import ops as _ops
from .errors import DeviceMismatchError, DtypeError
from .tensor import Tensor, install_methods

__all__ = ["index_key"]

#: Key types of basic indexing, whose result shares memory with the indexed tensor.
_BASIC_INDEX_TYPES = frozenset({int, slice, type(None), type(Ellipsis)})


def _getitem(self: Tensor, key: Any) -> Tensor:
    """Index like NumPy: ints, slices, ``None``, ``...``, integer and boolean tensors.

    Gradients flow back to the indexed elements; an element selected several
    times (repeated integer indices) accumulates every contribution.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> y = x[plugrad.tensor([0, 0, 2])]
    >>> y.sum().backward()
    >>> x.grad
    tensor([2., 0., 1.])
    """
    key = index_key(self, key)
    out = _ops.getitem(self, key=key)
    if all(type(k) in _BASIC_INDEX_TYPES for k in key):
        # Basic indexing gives a view: an in-place change through either one is
        # seen by backward passes that saved the other.
        self._add_alias(out, key)
    return out


def index_key(tensor: Tensor, key: Any) -> tuple[Any, ...]:
    """``key`` as ``tensor`` is indexed with it: a tuple, index tensors as raw arrays, and
    ``...`` appended to a basic key."""
    if type(key) is not tuple:
        key = (key,)
    if any(isinstance(k, Tensor) for k in key):
        return tuple(_index_array(tensor, k) if isinstance(k, Tensor) else k for k in key)
    # NOTE: the standard wants `...` in a tuple that indexes fewer axes than there
    # are (array-api-strict insists); appending it changes nothing in any library.
    if not any(k is Ellipsis for k in key):
        key = (*key, Ellipsis)
    return key


def _index_array(tensor: Tensor, index: Tensor) -> Any:
    if index._device is not tensor._device:
        raise DeviceMismatchError(
            f"an index tensor on {index._device.name!r} cannot index a tensor on "
            f"{tensor._device.name!r}; move it with .to({tensor._device.name!r})"
        )
    if index.dtype.kind not in ("signed integer", "unsigned integer", "bool"):
        raise DtypeError(
            f"index tensors must have an integer or bool dtype, not {index.dtype.name}; "
            "convert with plugrad.astype(index, plugrad.int64)"
        )
    return index._array


install_methods(__getitem__=_getitem)
