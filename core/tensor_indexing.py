"""Indexing a Tensor: ``x[key]``, with NumPy's rules (PyTorch's layout where they differ).

Importing this module makes ``x[key]`` work (``Tensor.__getitem__``);
:func:`index_key` is also what ``x[key] = value`` (:mod:`plugrad.inplace`) uses.
"""

from __future__ import annotations

import sys
from typing import Any

from . import dtypes as _dtypes
from . import grad_mode as _grad_mode
from . import ops as _ops
from . import versions as _versions
from .errors import ArgumentError, DeviceMismatchError, DtypeError, IndexDtypeError
from .grad_mode import no_grad
from .tensor import Tensor, _wrap, install_methods

__all__ = ["in_numpy_order", "index_key", "pytorch_placement", "refuse_uint8_index"]

#: Key types of basic indexing, whose result shares memory with the indexed tensor.
BASIC_INDEX_TYPES = frozenset({int, slice, type(None), type(Ellipsis)})


def _getitem(self: Tensor, key: Any) -> Tensor:
    """Index like NumPy: ints, slices, ``None``, ``...``, integer and boolean tensors.

    A key mixing integers, index arrays and slices lays out as in PyTorch (see
    :func:`pytorch_placement`).

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
    key = index_key(self, key, self._requires_grad and _grad_mode._state.enabled)
    if type(self._array) in self._device.scalar_types:
        self._shareable_array()
    out = _ops.getitem(self, key=key)
    if all(type(k) in BASIC_INDEX_TYPES for k in key):
        if _copied_by_negative_step(self, key, out):
            return out  # a copy: changing it (or self) changes nothing of the other
        # Basic indexing gives a view: an in-place change through either one is
        # seen by backward passes that saved the other.
        self._add_alias(out, key)
        return out
    placement = pytorch_placement(self, key)
    if placement is not None:
        out = _ops.permute_dims(out, axes=_to_pytorch_order(out.ndim, *placement))
    return out


def _copied_by_negative_step(tensor: Tensor, key: tuple[Any, ...], out: Tensor) -> bool:
    """Whether ``out = tensor[key]``, a basic index with a negative step, is a copy: PyTorch
    has no negative strides, so on the torch backend ``x[::-1]`` cannot be a view."""
    device = tensor._device
    return (
        not device.views_are_copies
        and any(type(k) is slice and k.step is not None and k.step < 0 for k in key)
        and _versions.made_a_copy(device, tensor, out)
    )


def pytorch_placement(tensor: Tensor, key: tuple[Any, ...]) -> tuple[int, int] | None:
    """Where PyTorch puts the indexed axes of ``tensor[key]`` when NumPy puts them first.

    To NumPy an integer beside index arrays is one more index array: separated
    from the arrays by a slice, it makes the indexed axes go first
    (``x[0, :, [0, 2]]`` has shape ``(2, 3)`` for ``x`` of shape ``(2, 3, 3)``).
    PyTorch applies integers first, as basic indexing, so adjacent arrays keep
    their place (shape ``(3, 2)``). The standard leaves keys mixing index arrays
    with slices to the library; plugrad gives PyTorch's layout.

    Returns None where the two agree, else the number of axes before the indexed
    ones in PyTorch's layout and the number of axes the basic part of ``key``
    leaves (slices, ``None``, ``...`` and the axes after the key).
    """
    if len(key) < 3:
        return None  # an integer, an array and a slice between them: three entries at least
    xp = tensor._device.xp
    kinds: list[str] = []
    consumed = 0  # axes of the tensor the key names
    for k in key:
        if k is None or k is Ellipsis:
            kinds.append("new" if k is None else "...")
            continue
        shape = getattr(k, "shape", None)
        if (
            isinstance(k, bool)
            or type(k) is list
            or (shape is not None and len(shape) == 0 and xp.isdtype(k.dtype, "bool"))
        ):
            return None  # masks of no axes and unconverted lists: NumPy's rules
        if type(k) is slice or shape is None or len(shape) == 0:
            kinds.append("slice" if type(k) is slice else "int")
            consumed += 1
        else:
            kinds.append("array")
            consumed += len(shape) if xp.isdtype(k.dtype, "bool") else 1
    spanned = tensor.ndim - consumed  # what `...`, or the end of the key, stands for
    # A `...` of no axes separates index arrays to NumPy, not to PyTorch (x[:, i, ..., j]
    # of a 3-d x): PyTorch reads the key as if it were not there.
    empty_ellipsis = spanned == 0 and "..." in kinds
    if "array" not in kinds or ("int" not in kinds and not empty_ellipsis):
        return None
    advanced = [i for i, kind in enumerate(kinds) if kind in ("int", "array")]
    if advanced[-1] - advanced[0] == len(advanced) - 1:
        return None  # adjacent to NumPy too: both keep the indexed axes in place
    arrays = [i for i, kind in enumerate(kinds) if kind == "array"]
    between = kinds[arrays[0] : arrays[-1]]
    if any(
        kind not in ("int", "array") and not (kind == "..." and empty_ellipsis) for kind in between
    ):
        return None  # the arrays themselves are apart: both put the indexed axes first
    before = sum(
        spanned if kind == "..." else kind in ("slice", "new") for kind in kinds[: arrays[0]]
    )
    if before == 0:
        return None
    return before, kinds.count("slice") + kinds.count("new") + spanned


def _to_pytorch_order(ndim: int, before: int, basic: int) -> tuple[int, ...]:
    """The permutation of NumPy's ``x[key]`` into PyTorch's (see :func:`pytorch_placement`)."""
    indexed = ndim - basic
    return (*range(indexed, indexed + before), *range(indexed), *range(indexed + before, ndim))


def in_numpy_order(tensor: Tensor, key: tuple[Any, ...], value: Any) -> Any:
    """``value`` for ``tensor[key] = value`` laid out as NumPy's ``tensor[key]`` is.

    The value of an assignment has the shape of ``tensor[key]`` as PyTorch lays it out
    (see :func:`pytorch_placement`); the indexing op writes NumPy's layout.
    """
    placement = pytorch_placement(tensor, key)
    if placement is None or isinstance(value, (bool, int, float, complex)):
        return value
    if not isinstance(value, Tensor):
        device = tensor._device
        value = _wrap(device.xp.asarray(value, device=device.native), device, False, None)
    with no_grad():
        shape = _ops.getitem(tensor, key=key).shape
    order = _to_pytorch_order(len(shape), *placement)
    pytorch_shape = tuple(shape[axis] for axis in order)
    inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
    return _ops.permute_dims(_ops.broadcast_to(value, pytorch_shape), axes=inverse)


def index_key(tensor: Tensor, key: Any, recorded: bool = False) -> tuple[Any, ...]:
    """``key`` as ``tensor`` is indexed with it: a tuple, index tensors as raw arrays, and
    ``...`` appended to a basic key.

    For an op autograd records (``recorded``), index tensors are copied: the
    gradient reads the key later, after the caller may have changed them in place.
    """
    if type(key) is not tuple:
        if type(key) is list and _pytorch_reads_as_a_tuple(key):
            raise ArgumentError(
                "a list holding lists, tensors, slices, None or ... as an index is ambiguous: "
                "NumPy reads it as one index array, PyTorch (before 2.9) as a tuple of indices; "
                "write x[tuple(key)] for the tuple or x[plugrad.tensor(key)] for the array"
            )
        key = (key,)
    for k in key:  # (a loop: cheaper than a generator for the one or two items of most keys)
        if type(k) not in BASIC_INDEX_TYPES:
            break
    else:
        # Ints, slices, None and ...: the common case, with nothing to convert.
        # NOTE: the standard wants `...` in a tuple that indexes fewer axes than there
        # are (array-api-strict insists); appending it changes nothing in any library.
        return key if Ellipsis in key else (*key, Ellipsis)
    for k in key:
        if type(k) not in _PLAIN_KEY_TYPES:
            key = tuple(_host_array_as_tensor(tensor, k) for k in key)
            break
    if any(isinstance(k, Tensor) and not k._array.ndim for k in key):
        # A 0-d integer tensor indexes as the int it holds, as in PyTorch: a view (NumPy
        # would read it as an index array, whose result is a copy).
        key = tuple(_as_int_index(k) for k in key)
    if any(isinstance(k, (Tensor, list)) for k in key):
        return tuple(
            _index_array(tensor, k, recorded)
            if isinstance(k, Tensor)
            else _list_index(tensor, k)
            if type(k) is list
            else k
            for k in key
        )
    if not any(k is Ellipsis for k in key):
        key = (*key, Ellipsis)
    return key


#: Index types that need no conversion (tensors and lists are read further on).
_PLAIN_KEY_TYPES = frozenset({int, slice, type(None), type(Ellipsis), bool, tuple, list, Tensor})


def _host_array_as_tensor(tensor: Tensor, key: Any) -> Any:
    """A NumPy array or scalar (any array but a Tensor) in a key as a tensor on ``tensor``'s
    device, so that it indexes as a tensor does: a uint8 array refused as a Tensor is, a
    0-d integer as the int it holds (a view). A NumPy integer scalar is that int, whatever
    its dtype: PyTorch reads ``np.uint8(1)`` as a position, a 0-d uint8 array as a mask."""
    if isinstance(key, (Tensor, list)) or type(key) in _PLAIN_KEY_TYPES:
        return key
    numpy = sys.modules.get("numpy")  # the core imports no array library itself
    if numpy is not None and isinstance(key, numpy.integer):
        return int(key)
    if hasattr(key, "__array__") and hasattr(key, "dtype") and hasattr(key, "shape"):
        device = tensor._device
        return _wrap(device.xp.asarray(key, device=device.native), device, False, None)
    return key


def _as_int_index(key: Any) -> Any:
    """``key`` as an int where it is a 0-d integer tensor; else as it is.

    A 0-d uint8 tensor is refused as a 1-d one is: PyTorch reads it as a mask too.
    """
    if (
        isinstance(key, Tensor)
        and not key._array.ndim
        and key.dtype.kind in ("signed integer", "unsigned integer")
    ):
        refuse_uint8_index(key)
        return int(key)
    return key


def _pytorch_reads_as_a_tuple(key: list[Any]) -> bool:
    """Whether PyTorch 2.13 indexes with ``key`` as with ``tuple(key)`` (NumPy does not).

    Its rule: a list shorter than 32 holding a sequence, tensor, slice, None or ``...``.
    """
    return len(key) < 32 and any(
        k is None
        or k is Ellipsis
        or isinstance(k, (Tensor, slice, list, tuple))
        or (hasattr(type(k), "__getitem__") and hasattr(type(k), "__len__") and type(k) is not dict)
        for k in key
    )


def _list_index(tensor: Tensor, index: list[Any]) -> Any:
    """A list of indices (or of bools) as an array of ``tensor``'s device.

    Read now: the gradient uses the key later, when the caller may have changed the list.
    """
    device = tensor._device
    try:
        array = device.xp.asarray(index, device=device.native)
    except (TypeError, ValueError):
        return index  # not a list of numbers (the indexing op says what is wrong with it)
    if 0 in array.shape:  # NumPy reads [] as no integer indices; asarray makes it float
        array = device.xp.astype(array, device.native_dtype(device.default_int_dtype))
    return array


def refuse_uint8_index(index: Tensor, function: str = "") -> None:
    """Raise DtypeError for a uint8 index tensor, which PyTorch and the standard read apart."""
    if index.dtype is _dtypes.uint8:
        raise DtypeError(
            f"{function + '(): ' if function else ''}a uint8 index tensor is ambiguous: "
            "PyTorch reads it as a mask (deprecated), the Array API as integer indices; "
            "convert it, index.bool() for a mask or index.long() for positions"
        )


def _index_array(tensor: Tensor, index: Tensor, recorded: bool) -> Any:
    if index._device is not tensor._device:
        raise DeviceMismatchError(
            f"an index tensor on {index._device.name!r} cannot index a tensor on "
            f"{tensor._device.name!r}; move it with .to({tensor._device.name!r})"
        )
    if index.dtype.kind not in ("signed integer", "unsigned integer", "bool"):
        raise IndexDtypeError(
            f"index tensors must have an integer or bool dtype, not {index.dtype.name}; "
            "convert with plugrad.astype(index, plugrad.int64)"
        )
    refuse_uint8_index(index)
    if recorded and not index._device.views_are_copies:  # immutable arrays need no copy
        return index._device.xp.asarray(index._array, copy=True)
    return index._array


install_methods(__getitem__=_getitem)
