"""Moving tensors between devices and backends, and DLPack exchange.

Moves are explicit (``x.to("cupy")``); an operation never copies for you.
Between two libraries whose devices share memory (numpy and torch on the
CPU, cupy and torch on one GPU) data moves through DLPack without a copy;
otherwise it goes through host memory. ``to()`` is differentiable: the
gradient moves back to the source device.
"""

from __future__ import annotations

from typing import Any

from . import dtypes as _dtypes
from . import ops as _ops
from . import registry
from .backend import Backend, Device
from .devices import resolve
from .errors import ArgumentError, BackendUnavailableError, DtypeError, InvalidArgumentError
from .grad_mode import _state
from .graph import Node
from .memory_formats import check_memory_format
from .tensor import Tensor, _object_new, _wrap, install_methods

__all__ = ["from_dlpack", "move_array", "to_device"]


class HostBytes:
    """Bytes in host memory described with NumPy's array interface: the host backend's
    ``xp.asarray`` reads them without a copy, and no array library is imported here.

    ``buffer`` holds the C-order elements of ``shape`` in the layout ``typestr`` names
    (``"<f4"``: little-endian float32).
    """

    __slots__ = ("__array_interface__",)

    def __init__(self, buffer: Any, typestr: str, shape: tuple[int, ...]) -> None:
        self.__array_interface__ = {
            "version": 3,
            "shape": shape,
            "typestr": typestr,
            "data": buffer,
        }


def move_array(array: Any, source: Device, target: Device) -> Any:
    """Return ``array`` (living on ``source``) as an array on ``target``."""
    if source is target:
        return array
    if source.backend is target.backend:
        return source.backend.copy_to_device(array, target.native)
    shared = source.backend.dlpack_device(source.native)
    if (
        shared is not None
        and hasattr(array, "__dlpack__")  # NumPy scalars, for one, have none
        and shared == target.backend.dlpack_device(target.native)
    ):
        try:
            return target.backend.from_dlpack(array, target.native)
        except BufferError:
            # The exporter refused this array (e.g. NumPy's read-only views of JAX
            # buffers, which DLPack before 1.0 cannot flag): copy through the host.
            pass
    return target.backend.from_host(source.backend.to_numpy(array), target.native)


def _may_share(source: Device, target: Device) -> bool:
    """Whether :func:`move_array` from ``source`` to ``target`` may share the memory."""
    shared = source.backend.dlpack_device(source.native)
    return shared is not None and shared == target.backend.dlpack_device(target.native)


class ToDeviceBackward(Node):
    """Backward of :meth:`Tensor.to`: moves the gradient back to the source device."""

    __slots__ = ("_source",)
    _source: Device

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        if create_graph:
            return (to_device(grad, self._source),)
        return (move_array(grad, self._device, self._source),)

    def _release(self) -> None:
        """Nothing is saved for backward."""


def to_device(x: Tensor, device: Device | Backend | str) -> Tensor:
    """Return ``x`` on ``device`` (``x`` itself if it is already there); differentiable."""
    target = registry.resolve_device(device)
    source = x._device
    if target is source:
        return x
    if source.backend is not target.backend and x.dtype not in target.dtypes:
        # (moved anyway, the tensor's array was of a dtype its backend cannot name)
        raise DtypeError(
            f"to(): the {target.backend.name} backend has no dtype {x.dtype.name}, so this "
            f"tensor cannot move to {target.name!r}; convert it first, e.g. "
            f"x.to(plugrad.float32).to({target.name!r})"
        )
    array = move_array(x._array, source, target)
    if x._requires_grad and _state.enabled:
        node = _object_new(ToDeviceBackward)
        node._device = target
        node._hooks = None
        node._source = source
        node._edges = (x._edge or x,)
        return _wrap(array, target, True, node)
    return _wrap(array, target, False, None)


def from_dlpack(
    x: Any, /, *, device: Device | Backend | str | None = None, copy: bool | None = None
) -> Tensor:
    """Make a tensor from any object supporting DLPack (numpy, cupy, torch, jax arrays...).

    Without ``copy=True`` the tensor shares memory with ``x``, except on ``jax:cpu``,
    whose immutable arrays always copy host memory.

    Parameters
    ----------
    x : object with ``__dlpack__``
    device : str or Device, optional
        Which backend to wrap the memory with; by default the default device if
        it sits on the same hardware as ``x``, else the first available backend
        that does.
    copy : bool, optional
        ``True`` to copy instead of sharing memory.

    Examples
    --------
    >>> import numpy as np
    >>> import plugrad
    >>> a = np.arange(3.0)
    >>> t = plugrad.from_dlpack(a)
    >>> a[0] = 7.0
    >>> t
    tensor([7., 1., 2.], dtype=plugrad.float64)
    """
    if isinstance(x, Tensor):
        x = x._array
    if not hasattr(x, "__dlpack__"):
        raise ArgumentError(
            f"from_dlpack() needs an object with __dlpack__ (an array of numpy, cupy, torch, "
            f"jax...), got a {type(x).__name__}; use plugrad.asarray() for Python data"
        )
    target = registry.resolve_device(device) if device is not None else _dlpack_target(x)
    try:
        array = target.backend.from_dlpack(x, target.native)
    except (RuntimeError, TypeError, ValueError) as error:
        if "dtype" not in str(error).lower():
            raise
        # (PyTorch's bfloat16, say: "Unsupported dtype in DLTensor")
        raise DtypeError(
            f"from_dlpack(): the {target.backend.name} backend cannot take memory of dtype "
            f"{getattr(x, 'dtype', '?')} ({error}); convert it first (to float32, say)"
        ) from error
    try:
        target.dtype_of(array)
    except KeyError:  # (a library whose dtypes plugrad's backend does not all name: Dask's)
        raise DtypeError(
            f"from_dlpack(): the {target.backend.name} backend has no dtype for memory of "
            f"dtype {getattr(x, 'dtype', '?')}; convert it first (to float32, say)"
        ) from None
    if copy:
        array = target.xp.asarray(array, copy=True)
    return _wrap(array, target, False, None)


def _dlpack_target(x: Any) -> Device:
    where = tuple(x.__dlpack_device__())
    default = registry.default_device()
    candidates = [default] + [
        registry.resolve_device(name)
        for name in registry.backend_names()
        if name != default.backend.name and registry.backend_status(name) is None
    ]
    for device in candidates:
        for candidate in registry.devices_of(device.backend):
            if candidate.backend.dlpack_device(candidate.native) == where:
                return candidate
    raise BackendUnavailableError(
        f"no available backend can hold memory on DLPack device {where}; install the "
        "library for that hardware (e.g. pip install '.[cuda]' from a checkout, for CUDA memory)"
    )


# -- the to() and to_device() methods of Tensor --------------------------------------------


def _to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Return the tensor on another device and/or with another dtype; differentiable.

    Called as in PyTorch: ``x.to(dtype)``, ``x.to(device)``,
    ``x.to(device, dtype)``, ``x.to(other)`` (``other``'s device and
    dtype), or with the keywords ``device=``, ``dtype=``, ``copy=`` (and
    ``non_blocking=``, accepted and ignored). A device is ``"cpu"``,
    ``"cuda"``, ``"cuda:1"``, a backend name (``"numpy"``, ``"cupy:1"``) or
    a :class:`~plugrad.backend.Device`. The tensor itself is returned when
    nothing changes and ``copy`` is false. Gradients flow back to the
    source device and dtype.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    >>> x.to("cpu") is x
    True
    >>> x.to(plugrad.float64)
    tensor([1., 2.], dtype=plugrad.float64, grad_fn=<AstypeBackward>)
    >>> x.to(plugrad.zeros(1, dtype=plugrad.float16)).dtype
    plugrad.float16
    """
    device, dtype, copy = _to_arguments(args, kwargs, self.ndim)
    result = self
    if device is not None:
        target = resolve(device)
        if target is not self._device:
            result = to_device(self, target)
            # (a move between libraries on the same memory shares it: NumPy and torch:cpu)
            copy = copy and _may_share(self._device, target)
    if dtype is not None and dtype is not result.dtype:
        result = _ops.astype(result, dtype)
        copy = False
    if copy:
        result = result.clone()
    return result


def _to_device(self: Tensor, device: Device | Backend | str, /, *, stream: Any = None) -> Tensor:
    """The Array API's name for :meth:`to`: the tensor on ``device``; differentiable.

    ``stream`` is accepted for the standard's signature; plugrad orders its
    transfers on the device's current stream, so only ``None`` is supported.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0])
    >>> x.to_device(x.device) is x
    True
    """
    if stream is not None:
        raise InvalidArgumentError(
            "to_device(stream=...) is not supported: transfers run on the device's "
            "current stream; make that stream current (e.g. with cupy's stream context) instead"
        )
    return self.to(device)


def _to_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any], ndim: int
) -> tuple[Any, Any, bool]:
    """(device, dtype, copy) from the ways ``Tensor.to`` of a tensor of ``ndim`` dimensions
    may be called."""
    unknown = set(kwargs) - {"device", "dtype", "copy", "non_blocking", "memory_format"}
    if unknown:
        raise ArgumentError(f"to() got unexpected keyword arguments {sorted(unknown)}")
    if "memory_format" in kwargs:
        check_memory_format("to", kwargs["memory_format"], ndim)
    device = kwargs.get("device")
    dtype = _dtypes.of_python_type(kwargs.get("dtype"))
    copy = kwargs.get("copy", False)
    # PyTorch's x.to(float): a Python type stands for its dtype.
    positional = [_dtypes.of_python_type(a) for a in args]
    if positional and isinstance(positional[0], Tensor):
        other = positional.pop(0)
        device, dtype = other._device, other.dtype
    elif positional and not isinstance(positional[0], _dtypes.DType):
        device = positional.pop(0)
    if positional and isinstance(positional[0], _dtypes.DType):
        dtype = positional.pop(0)
    if positional and type(positional[0]) is bool:
        positional.pop(0)  # non_blocking, as PyTorch's to(device, dtype, non_blocking)
        if positional and type(positional[0]) is bool:
            copy = positional.pop(0)
    if positional:
        raise ArgumentError(
            f"to() takes a device, a dtype, both (device first) or another tensor; "
            f"could not use {positional!r}"
        )
    if dtype is not None and not isinstance(dtype, _dtypes.DType):
        raise DtypeError(
            f"to(): dtype must be a plugrad dtype such as plugrad.float32, got {dtype!r}"
        )
    return device, dtype, copy


install_methods(to=_to, to_device=_to_device)
