"""Pickling tensors: their values as plain bytes, never the backend objects behind them.

A tensor pickles as its data (C-order bytes read through the backend's host
path), its shape, the host type string of its elements, the name of its
device and whether it requires grad. Unpickling copies the bytes onto the
device of that name, so a pickle holds no kernel, no backend namespace and no
graph, and works across processes (``multiprocessing`` with the ``spawn``
start method, ``concurrent.futures``, MPI object messages).

Modules and optimizers pickle through their ordinary attributes once their
tensors do (a lazy layer's uninitialized parameters pickle as what they will
be: see :mod:`plugrad.nn.lazy`); tensors that one pickle reaches several times
(a parameter in a model and in its optimizer) come back as one object.
"""

from __future__ import annotations

import copyreg
import ctypes
import math
from typing import Any

from . import dtypes as _dtypes
from . import registry
from .backend import Device
from .errors import BackendError, SerializationError
from .tensor import Tensor, _object_new, install_methods
from .transfer import HostBytes

__all__: list[str] = []


def reduce_tensor(tensor: Tensor) -> tuple[Any, ...]:
    """What ``pickle`` stores for ``tensor``: a rebuild function and plain arguments."""
    if tensor._edge is not None:
        raise SerializationError(
            f"cannot pickle a tensor computed by {tensor.grad_fn!r}: its graph cannot cross a "
            "process boundary; pickle tensor.detach() for its values"
        )
    host = tensor._device.backend.to_numpy(tensor._array)
    shape = tuple(host.shape)
    if tensor.dtype is _dtypes.bfloat16:
        typestr, data = BFLOAT16_TYPESTR, bfloat16_bits(host)
    else:
        typestr = host.__array_interface__["typestr"]  # the host format is NumPy's
        data = memoryview(host).tobytes()  # C order, whatever the strides
    arguments = (type(tensor), data, typestr, shape, tensor._device.name, tensor._requires_grad)
    attributes = tensor.__dict__  # those the user set (p.no_weight_decay = True)
    return (_rebuild_tensor, arguments, attributes) if attributes else (_rebuild_tensor, arguments)


def _rebuild_tensor(
    cls: type[Tensor],
    data: bytes,
    typestr: str,
    shape: tuple[int, ...],
    device_name: str,
    requires_grad: bool,
) -> Tensor:
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise SerializationError(f"a pickled tensor names {cls!r}, which is not a Tensor class")
    device = unpickled_device(device_name)
    if typestr == BFLOAT16_TYPESTR:
        array = bfloat16_from_bits(data, shape, device)
    else:
        # The host format of Backend.from_host is NumPy's; the numpy backend's namespace
        # makes a host array of the bytes, and the target backend copies them into its memory.
        host = registry.resolve_device("numpy").xp.asarray(HostBytes(data, typestr, shape))
        array = device.backend.from_host(host, device.native)
    tensor = _object_new(cls)
    tensor._array = array
    tensor._device = device
    tensor._requires_grad = bool(requires_grad)
    tensor._edge = None
    tensor._grad = None
    tensor._hooks = None
    tensor._counter = None
    return tensor


#: The type string a pickle gives bfloat16 data, which NumPy has no type for: the bits
#: of its elements, little-endian (NumPy's "<u2").
BFLOAT16_TYPESTR = "bfloat16"


def bfloat16_bits(host: Any) -> bytes:
    """The bits of a host array of bfloat16 values, C order, little-endian.

    ``Backend.to_numpy`` gives bfloat16 data as ml_dtypes' bfloat16, whose elements
    no ``memoryview`` can describe, or, where ml_dtypes is missing, as float32 values,
    whose top halves are their bfloat16 bits.
    """
    interface = host.__array_interface__
    if interface["typestr"] == "<f4":
        whole = memoryview(host).tobytes()  # C order, whatever the strides
        half = bytearray(len(whole) // 2)
        half[0::2], half[1::2] = whole[2::4], whole[3::4]
        return bytes(half)
    size = 2 * math.prod(host.shape)
    if size == 0:
        return b""
    if interface["strides"] is not None:  # lay it out in C order first
        host = registry.resolve_device("numpy").xp.reshape(host, (-1,), copy=True)
    return ctypes.string_at(host.__array_interface__["data"][0], size)


def bfloat16_from_bits(data: Any, shape: tuple[int, ...], device: Device) -> Any:
    """A bfloat16 array on ``device`` of the bits in ``data`` (C order, little-endian)."""
    # NumPy has no bfloat16: the values go through float32, which holds each of them exactly
    # (its top half is their bits), and the device narrows them back.
    host_xp = registry.resolve_device("numpy").xp
    bits = host_xp.asarray(HostBytes(data, "<u2", shape))
    widened = host_xp.astype(bits, host_xp.uint32) << 16
    host = host_xp.asarray(HostBytes(memoryview(widened).tobytes(), "<f4", shape))
    array = device.backend.from_host(host, device.native)
    return device.xp.astype(array, device.native_dtype(_dtypes.bfloat16))


def unpickled_device(device_name: str) -> Device:
    """The device of that name in this process, for a tensor being unpickled; a
    :class:`~plugrad.errors.SerializationError` saying what to do where it is not here.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.pickling import unpickled_device
    >>> unpickled_device("numpy") is plugrad.ones(1, backend="numpy").device
    True
    """
    try:
        return registry.resolve_device(device_name)
    except BackendError as error:
        raise SerializationError(
            f"the pickled tensor lived on {device_name!r}, which is not available here "
            f"({error}); unpickle it where that backend is installed, or move it with "
            ".to('cpu') before pickling"
        ) from error


def _reduce_ex(self: Tensor, protocol: Any) -> tuple[Any, ...]:
    """``pickle``: the values, dtype, device and ``requires_grad`` of a leaf, as plain bytes.

    Examples
    --------
    >>> import pickle, plugrad
    >>> w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    >>> pickle.loads(pickle.dumps(w))
    tensor([1., 2.], requires_grad=True)
    """
    return reduce_tensor(self)


def _device_named(name: str) -> Device:
    """The device of that name in this process (what an unpickled device is)."""
    return registry.resolve_device(name)


def _reduce_device(device: Device) -> tuple[Any, tuple[str]]:
    # A device is pickled by name (it holds its library's module): the receiving process
    # resolves it again, as a configuration naming "cuda:1" would.
    return _device_named, (device.name,)


copyreg.pickle(Device, _reduce_device)
install_methods(__reduce_ex__=_reduce_ex)
