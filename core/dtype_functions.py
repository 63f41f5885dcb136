"""The Array API's data-type functions, inspection and shape utilities over plugrad dtypes.

These take and return plugrad :class:`~plugrad.DType` objects (and Tensors),
never a backend's own dtypes. Questions about a backend's numbers (the range of
``float16``, whether a cast is safe) are answered by the backend's own
namespace -- that of the tensor given, else of the default device -- so the
answers agree with what the backend's kernels actually do.
``astype``, which converts data and carries a gradient, is an op (in
:mod:`plugrad.plugins.data_types`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from . import dtypes as _dtypes
from . import registry
from .backend import Device
from .errors import ArgumentError, DtypeError, InvalidArgumentError, ShapeError
from .tensor import Tensor
from .tensor_interop import SUPPORTED_API_VERSIONS as _SUPPORTED_API_VERSIONS

__all__ = [
    "__array_api_version__",
    "__array_namespace_info__",
    "broadcast_shapes",
    "can_cast",
    "e",
    "finfo",
    "iinfo",
    "inf",
    "isdtype",
    "nan",
    "newaxis",
    "pi",
    "result_type",
]

#: The version of the Array API standard plugrad implements.
__array_api_version__ = "2025.12"
SUPPORTED_API_VERSIONS = _SUPPORTED_API_VERSIONS

e = 2.718281828459045
inf = float("inf")
nan = float("nan")
pi = 3.141592653589793
newaxis = None

_STANDARD_DTYPES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
    | {"float32", "float64", "complex64", "complex128"}
)
_KINDS = {
    "bool": frozenset({"bool"}),
    "signed integer": frozenset({"signed integer"}),
    "unsigned integer": frozenset({"unsigned integer"}),
    "integral": frozenset({"signed integer", "unsigned integer"}),
    "real floating": frozenset({"real floating"}),
    "complex floating": frozenset({"complex floating"}),
    "numeric": frozenset(
        {"signed integer", "unsigned integer", "real floating", "complex floating"}
    ),
}


def _device_of(values: Sequence[Any]) -> Device:
    for value in values:
        if isinstance(value, Tensor):
            return value._device
    return registry.default_device()


def _check_dtype(value: Any, function: str) -> _dtypes.DType:
    if not isinstance(value, _dtypes.DType):
        raise DtypeError(
            f"{function}() expects a plugrad dtype such as plugrad.float32 (or a Tensor), "
            f"got {value!r}"
        )
    return value


def isdtype(dtype: _dtypes.DType, kind: Any) -> bool:
    """Return whether ``dtype`` is of ``kind``: a kind name, a dtype, or a tuple of those.

    Kind names are ``"bool"``, ``"signed integer"``, ``"unsigned integer"``,
    ``"integral"``, ``"real floating"``, ``"complex floating"`` and ``"numeric"``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.isdtype(plugrad.float32, "real floating")
    True
    >>> plugrad.isdtype(plugrad.int8, ("bool", plugrad.int8))
    True
    """
    _check_dtype(dtype, "isdtype")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, _dtypes.DType):
        return dtype is kind
    if isinstance(kind, str):
        try:
            return dtype.kind in _KINDS[kind]
        except KeyError:
            raise InvalidArgumentError(
                f"isdtype(): unknown kind {kind!r}; use one of {', '.join(map(repr, _KINDS))}"
            ) from None
    raise ArgumentError(f"isdtype(): kind must be a str, a dtype or a tuple of them, got {kind!r}")


def result_type(*arrays_and_dtypes: Any) -> _dtypes.DType:
    """Return the dtype that results from combining the given tensors, dtypes and Python scalars.

    Within a kind, the Array API type-promotion rules (as implemented by the
    backend); across kinds, which the standard leaves to the library, the same
    rules as plugrad's element-wise ops, PyTorch's: the operand of the higher
    kind decides (``int64`` with ``float32`` gives ``float32``), and a Python
    scalar of a higher kind than every tensor gives the default dtype of its
    kind (``int64`` with ``1.0`` gives the default float dtype).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.result_type(plugrad.float32, plugrad.float64)
    plugrad.float64
    >>> plugrad.result_type(plugrad.tensor([1, 2], dtype=plugrad.int8), plugrad.uint8)
    plugrad.int16
    >>> plugrad.result_type(plugrad.int64, plugrad.float32), plugrad.result_type(plugrad.int64, 1.0)
    (plugrad.float32, plugrad.float32)
    """
    if not arrays_and_dtypes:
        raise InvalidArgumentError("result_type() needs at least one tensor or dtype")
    device = _device_of(arrays_and_dtypes)
    dtypes: list[_dtypes.DType] = []
    scalars = []
    for value in arrays_and_dtypes:
        if isinstance(value, Tensor):
            dtypes.append(value.dtype)
        elif isinstance(value, _dtypes.DType):
            dtypes.append(value)
        elif isinstance(value, (bool, int, float, complex)):
            scalars.append(value)
        else:
            raise DtypeError(
                f"result_type() takes Tensors, plugrad dtypes and Python scalars, got {value!r}"
            )
    if not dtypes:
        raise InvalidArgumentError(
            "result_type() needs at least one tensor or dtype besides Python scalars"
        )
    result = _dtypes.common_dtype(
        dtypes, lambda first, second: _standard_result(device, arrays_and_dtypes, first, second)
    )
    for scalar in scalars:
        if _dtypes.SCALAR_RANKS[type(scalar)] > _dtypes.kind_rank(result):
            result = _dtypes.scalar_result(result, scalar)
    return result


def _standard_result(
    device: Any, values: tuple[Any, ...], first: _dtypes.DType, second: _dtypes.DType
) -> _dtypes.DType:
    """The Array API's promotion of two dtypes of one kind (or real with complex)."""
    if _dtypes.kind_rank(first) >= 2 and _dtypes.kind_rank(second) >= 2:
        return _dtypes.floating_result(first, second)
    try:
        return device.result_type(first, second)
    except TypeError as exc:
        names = ", ".join(
            v.dtype.name if isinstance(v, Tensor) else getattr(v, "name", repr(v)) for v in values
        )
        raise DtypeError(
            f"result_type(): {names} have no common dtype ({exc}); cast explicitly with astype"
        ) from None


def can_cast(from_: _dtypes.DType | Tensor, to: _dtypes.DType, /) -> bool:
    """Return whether ``from_`` can be cast to ``to`` by the type-promotion rules.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.can_cast(plugrad.int8, plugrad.int32)
    True
    >>> plugrad.can_cast(plugrad.float64, plugrad.float32)
    False
    """
    device = _device_of((from_,))
    source = from_._array.dtype if isinstance(from_, Tensor) else None
    if source is None:
        source = device.native_dtype(_check_dtype(from_, "can_cast"))
    return bool(device.xp.can_cast(source, device.native_dtype(_check_dtype(to, "can_cast"))))


class finfo_object(NamedTuple):
    """Machine limits of a floating-point dtype, as Python floats (see :func:`finfo`)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: _dtypes.DType

    @property
    def tiny(self) -> float:
        """PyTorch's and NumPy's name for :attr:`smallest_normal`."""
        return self.smallest_normal

    @property
    def resolution(self) -> float:
        """``10 ** -precision``: the decimal resolution (``1e-06`` for ``float32``)."""
        return 10.0 ** -int(-math.log10(self.eps))


class iinfo_object(NamedTuple):
    """Machine limits of an integer dtype, as Python ints (see :func:`iinfo`)."""

    bits: int
    max: int
    min: int
    dtype: _dtypes.DType


_REAL_OF_COMPLEX = {"complex64": "float32", "complex128": "float64"}


class _Bfloat16Limits:
    """bfloat16's limits (float32's exponent, 8 bits of significand), fixed in every library:
    the answer where the default backend has no bfloat16 and NumPy, the fallback, has none."""

    bits = 16
    eps = 2.0**-7
    max = (2 - 2.0**-7) * 2.0**127
    min = -max
    smallest_normal = 2.0**-126


def _backend_info(
    type: _dtypes.DType | Tensor, function: str, kinds: tuple[str, str], wanted: str
) -> tuple[_dtypes.DType, Any]:
    """The dtype of ``type`` and the backend's ``xp.finfo``/``xp.iinfo`` of it."""
    device = _device_of((type,))
    dtype = device.dtype_of(type._array) if isinstance(type, Tensor) else type
    _check_dtype(dtype, function)
    if dtype.kind not in kinds:
        other = "iinfo" if function == "finfo" else "finfo"
        raise DtypeError(f"{function}() needs {wanted}, got {dtype.name}; see {other}()")
    if dtype not in device._dtype_to_native and not isinstance(type, Tensor):
        if dtype is _dtypes.bfloat16:
            return dtype, _Bfloat16Limits
        # A dtype's limits are the same in every library: ask NumPy's (always installed).
        device = registry.resolve_device("numpy")
    return dtype, getattr(device.xp, function)(device.native_dtype(dtype))


def finfo(type: _dtypes.DType | Tensor | None = None, /) -> finfo_object:
    """Return the machine limits of a floating-point dtype (for a complex one, of its parts);
    with none given, of the default float dtype (PyTorch's ``torch.finfo()``).

    A dtype is answered by the default backend, or by NumPy where that lacks it; bfloat16,
    which NumPy lacks too, on any setup.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.finfo(plugrad.float32).eps
    1.1920928955078125e-07
    >>> plugrad.finfo(plugrad.bfloat16).eps
    0.0078125
    >>> plugrad.finfo(plugrad.complex128).dtype
    plugrad.float64
    >>> plugrad.finfo().dtype
    plugrad.float32
    """
    if type is None:
        type = _dtypes.default_float_dtype
    kinds = ("real floating", "complex floating")
    dtype, info = _backend_info(type, "finfo", kinds, "a floating-point dtype")
    real = getattr(_dtypes, _REAL_OF_COMPLEX.get(dtype.name, dtype.name))
    return finfo_object(
        int(info.bits),
        float(info.eps),
        float(info.max),
        float(info.min),
        float(info.smallest_normal),
        real,
    )


def iinfo(type: _dtypes.DType | Tensor, /) -> iinfo_object:
    """Return the machine limits of an integer dtype.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.iinfo(plugrad.int8)
    iinfo_object(bits=8, max=127, min=-128, dtype=plugrad.int8)
    """
    kinds = ("signed integer", "unsigned integer")
    dtype, info = _backend_info(type, "iinfo", kinds, "an integer dtype")
    return iinfo_object(int(info.bits), int(info.max), int(info.min), dtype)


def broadcast_shapes(*shapes: tuple[int, ...] | int) -> tuple[int, ...]:
    """Return the shape that the given shapes broadcast to.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.broadcast_shapes((3, 1), (4,), ())
    (3, 4)
    """
    if not shapes:
        return ()
    # An int is the shape of a 1-D tensor, as PyTorch reads it.
    tuples = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    ndim = max(len(s) for s in tuples)
    result = [1] * ndim
    for shape in tuples:
        for i, n in enumerate(shape):
            axis = ndim - len(shape) + i
            if n == result[axis] or n == 1:
                continue
            if result[axis] == 1:
                result[axis] = n
            else:
                raise ShapeError(
                    f"shapes {', '.join(map(str, shapes))} cannot be broadcast together: "
                    f"{result[axis]} and {n} differ at axis {axis - ndim}"
                )
    return tuple(result)


class Info:
    """What ``plugrad.__array_namespace_info__()`` returns: the Array API inspection object."""

    __slots__ = ()

    def capabilities(self) -> dict[str, Any]:
        """What the default backend supports (boolean indexing, data-dependent shapes, ...)."""
        device = registry.default_device()
        info = getattr(device.xp, "__array_namespace_info__", None)
        capabilities = dict(info().capabilities()) if info is not None else {}
        return {
            "boolean indexing": capabilities.get("boolean indexing", True),
            "data-dependent shapes": capabilities.get("data-dependent shapes", True),
            "max dimensions": capabilities.get("max dimensions"),
        }

    def default_device(self) -> Device:
        """The device new tensors are created on."""
        return registry.default_device()

    def default_dtypes(self, *, device: Device | str | None = None) -> dict[str, _dtypes.DType]:
        """plugrad's default dtypes on ``device`` (default: the default device).

        float32 and complex64 everywhere, as in PyTorch; int64, or int32 where the
        backend has no int64 (JAX without ``jax_enable_x64``).
        """
        integer = registry.resolve_device(device).default_int_dtype
        return {
            "real floating": _dtypes.default_float_dtype,
            "complex floating": _dtypes.default_complex_dtype,
            "integral": integer,
            "indexing": integer,
        }

    def dtypes(
        self, *, device: Device | str | None = None, kind: Any = None
    ) -> dict[str, _dtypes.DType]:
        """The standard dtypes ``device`` supports (default: the default device), of ``kind``.

        ``float16`` works too wherever the backend has it, but is not an Array API dtype.
        """
        target = registry.resolve_device(device)
        return {
            dtype.name: dtype
            for dtype in target._dtype_to_native
            if dtype.name in _STANDARD_DTYPES and (kind is None or isdtype(dtype, kind))
        }

    def devices(self) -> tuple[Device, ...]:
        """The devices of the backends in use (the default backend's first)."""
        default = registry.default_device()
        found = [default]
        for devices in registry._state.devices.values():
            found.extend(d for d in devices if d not in found)
        return tuple(found)

    def __repr__(self) -> str:
        return "plugrad.__array_namespace_info__()"


def __array_namespace_info__() -> Info:
    """Return the Array API inspection object (default device, dtypes, capabilities).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.__array_namespace_info__().default_dtypes()["real floating"]
    plugrad.float32
    """
    return Info()
