"""Creating tensors: from data, filled with a value, or as ranges.

Every function takes ``dtype=`` (a plugrad dtype), ``device=`` (a backend
name such as ``"numpy"``, ``"name:index"``, or a :class:`~plugrad.backend.Device`),
``backend=`` (a backend name; its current device) and ``requires_grad=``.
Without ``device``/``backend`` tensors go to the default device (see
``plugrad.use_backend``), except data of a device library (cupy, torch...),
which stays on its device.
Python floats become ``float32`` and Python ints ``int64`` unless a dtype is
given, as in PyTorch; arrays keep their dtype.
"""

from __future__ import annotations

import math
import operator
from array import array as _python_array
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NoReturn, TypedDict, cast

from . import dtypes as _dtypes
from . import registry
from .backend import Backend, Device
from .devices import resolve
from .errors import (
    ArgumentError,
    BackwardError,
    DtypeError,
    InvalidArgumentError,
    ScalarRangeError,
    ShapeError,
)
from .grad_mode import _state as _grad_state
from .inplace import takes_out
from .keyword_options import spell_out
from .memory_formats import check_memory_format, layout, memory_format, strided
from .opdef import as_int
from .tensor import Tensor, _wrap, install_methods
from .transfer import move_array

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "CreationOptions",
    "LikeOptions",
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "eye",
    "full",
    "full_like",
    "linspace",
    "logspace",
    "ones",
    "ones_like",
    "python_buffer_as_list",
    "tensor",
    "tril_indices",
    "triu_indices",
    "zeros",
    "zeros_like",
]

Shape = int | tuple[int, ...]
DeviceLike = Device | str | None


class CreationOptions(TypedDict, total=False):
    """The keyword arguments every creation function takes (see the module docstring).

    ``layout`` and ``pin_memory`` are PyTorch's, taken as code written for PyTorch passes
    them: tensors are ``strided`` (dense) and not in pinned memory.
    """

    dtype: _dtypes.DType | None
    device: DeviceLike
    backend: str | None
    requires_grad: bool
    layout: layout | None
    pin_memory: bool


class LikeOptions(CreationOptions, total=False):
    """The keyword arguments of the ``*_like`` functions: those of every creation
    function and PyTorch's ``memory_format`` (accepted; layouts are the backend's)."""

    memory_format: memory_format | None


with_creation_options = spell_out(CreationOptions, requires_grad=False, pin_memory=False)
with_like_options = spell_out(LikeOptions, requires_grad=False, pin_memory=False)


def creation_options(
    function: str, options: Mapping[str, Any], accepted: type = CreationOptions
) -> tuple[_dtypes.DType | None, DeviceLike, str | None, bool]:
    """``dtype, device, backend, requires_grad`` from a creation function's ``**options``,
    which may hold only the keys of ``accepted`` (a TypedDict)."""
    if not options:  # the common call, which checks nothing
        return None, None, None, False
    keys = accepted.__annotations__.keys()
    if not options.keys() <= keys:
        name = next(name for name in options if name not in keys)
        raise ArgumentError(
            f"{function}() got an unexpected keyword argument {name!r}; it takes "
            + ", ".join(f"{key}=" for key in keys)
        )
    if options.get("layout", strided) not in (None, strided):
        raise ArgumentError(
            f"{function}(): layout={options['layout']!r} is not supported: tensors are dense "
            "(plugrad.strided)"
        )
    if options.get("pin_memory"):
        raise ArgumentError(
            f"{function}(): pin_memory=True is not supported (pinned host memory is for "
            "copies to a CUDA device); pass pin_memory=False"
        )
    return (
        _dtypes.of_python_type(options.get("dtype")),
        options.get("device"),
        options.get("backend"),
        options.get("requires_grad", False),
    )


def leaf(array: Any, device: Device, requires_grad: bool) -> Tensor:
    """Wrap a new backend array as a leaf tensor, checking that it may require grad."""
    if requires_grad:
        if not isinstance(requires_grad, bool):
            raise ArgumentError(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
        dtype = device.dtype_of(array)
        if not _dtypes.is_differentiable(dtype):
            raise DtypeError(
                f"only floating-point and complex tensors can require gradients, but this tensor "
                f"would be {dtype.name}; pass dtype=plugrad.float32 (or use float data such as "
                "1.0 instead of 1)"
            )
    return _wrap(array, device, requires_grad, None)


def target_device(device: DeviceLike | Backend, backend: str | None) -> Device:
    """Resolve the ``device=``/``backend=`` pair of a creation function (both optional)."""
    if backend is None:
        return resolve(device)
    if not isinstance(backend, str) or ":" in backend:
        raise ArgumentError(
            f"backend= takes a backend name such as 'numpy' or 'cupy', got {backend!r}; "
            "choose a particular device with device='cupy:1'"
        )
    chosen = registry.resolve_device(backend)
    if device is None:
        return chosen
    target = resolve(device)
    if target.backend is not chosen.backend:
        raise InvalidArgumentError(
            f"device {target.name!r} does not belong to backend {backend!r}; give one of them, "
            f"or a device of that backend such as {chosen.name!r}"
        )
    return target


def _shape(shape: Shape) -> tuple[int, ...]:
    if isinstance(shape, int):
        result: tuple[int, ...] = (shape,)
    elif type(shape) is not tuple and _is_index(shape):  # a NumPy integer, a 0-d integer tensor
        result = (operator.index(cast(Any, shape)),)
    else:
        try:
            # operator.index, not int(): int() made a shape of (2.5,) into (2,), silently.
            result = tuple(operator.index(n) for n in shape)
        except TypeError:
            raise ArgumentError(f"a shape is an int or a tuple of ints, got {shape!r}") from None
    if any(n < 0 for n in result):
        raise InvalidArgumentError(f"shape {result} has a negative dimension")
    return result


def _is_index(n: Any) -> bool:
    """Whether ``n`` is an integer (a NumPy one too, a 0-d integer tensor), not a bool."""
    if isinstance(n, Tensor):
        return n.ndim == 0 and n.dtype.kind in ("signed integer", "unsigned integer")
    return hasattr(type(n), "__index__") and not isinstance(n, bool)


def _varargs_shape(function: str, shape: tuple[Any, ...], size: Shape | None = None) -> Shape:
    """The shape given as ``f(2, 3)`` (PyTorch), ``f((2, 3))`` (the Array API) or
    ``f(size=(2, 3))`` (PyTorch's keyword)."""
    if size is not None:
        if shape[0] is not None or len(shape) > 1:
            raise ArgumentError(
                f"{function}() got the shape twice, as an argument and as size=; give one"
            )
        return size
    if shape[0] is None:
        shape = shape[1:]
    if len(shape) == 1:
        return shape[0]
    if not shape:
        raise ArgumentError(f"{function}() needs a shape: {function}((2, 3)) or {function}(2, 3)")
    for n in shape:  # the common case, ints (bools too, as PyTorch), as it is
        if type(n) is not int and type(n) is not bool:
            break
    else:
        return shape
    if not all(isinstance(n, int) or _is_index(n) for n in shape):
        raise ArgumentError(
            f"{function}() takes the shape as one tuple or as several ints, got {shape!r}"
        )
    return tuple(operator.index(n) for n in shape)


def _scalar_dtype(value: Any, device: Device) -> _dtypes.DType:
    """The default dtype on ``device`` for a Python scalar (bool before int: bool is an int)."""
    if isinstance(value, bool):
        return _dtypes.bool
    if isinstance(value, int):
        return device.default_int_dtype
    if isinstance(value, float):
        return _dtypes.default_float_dtype
    if isinstance(value, complex):
        return _dtypes.default_complex_dtype
    raise ArgumentError(
        f"fill value must be a Python bool, int, float or complex, got {type(value).__name__}"
    )


def _apply_default_dtype(array: Any, device: Device) -> Any:
    """Python data that the library read as double precision becomes the default precision."""
    dtype = device.dtype_of(array)
    if dtype is _dtypes.float64 and _dtypes.default_float_dtype is not _dtypes.float64:
        return device.xp.astype(array, device.native_dtype(_dtypes.default_float_dtype))
    if dtype is _dtypes.complex128 and _dtypes.default_complex_dtype is not _dtypes.complex128:
        return device.xp.astype(array, device.native_dtype(_dtypes.default_complex_dtype))
    return array


#: Python data whose numbers NumPy converts one by one (float() of each, for a real dtype).
_DATA = (list, tuple, complex)


def _convert(
    data: Any,
    dtype: _dtypes.DType | None,
    device: DeviceLike,
    backend: str | None,
    copy: bool | None,
) -> tuple[Any, Device]:
    """Return (backend array, Device) for ``data``, a Tensor, a backend array or Python data."""
    source: Device | None
    if isinstance(data, Tensor):
        source = data._device
        array = data._array
    else:
        source = registry.device_of_array(data)
        array = data
    if device is None and backend is None:
        # Host data (Python or NumPy) goes to the default device; arrays of other
        # libraries stay where they are: plugrad never copies between devices silently.
        if source is None or source.backend.holds_host_data:
            target = registry.default_device()
        else:
            target = source
    else:
        target = target_device(device, backend)
    if source is not None and array is data and not source.backend.holds_host_data:
        array = _values_of_foreign_array(array, source, target, dtype)
    native_dtype = None if dtype is None else target.native_dtype(dtype)
    xp = target.xp
    if native_dtype is not None and source is None and type(data) in _NUMBERS_CHECKED:
        _check_numbers_fit(data, dtype, native_dtype, target)  # type: ignore[arg-type]
    try:
        if source is not None and source is not target:
            array = move_array(array, source, target)
        if copy is None:
            result = xp.asarray(array, dtype=native_dtype, device=target.native)
        else:
            result = xp.asarray(array, dtype=native_dtype, device=target.native, copy=copy)
    except (BufferError, TypeError, ValueError, OverflowError, NotImplementedError) as error:
        result = None
        if type(data) in (list, tuple):
            _refuse_ragged(data)
            if dtype is None:  # (a library refusing Python objects where NumPy keeps them)
                result = _floats_beside_large_ints(data, None, target)
        if result is None:
            _check_int64_numbers(data, dtype, native_dtype, source, target)
            if not isinstance(data, Tensor):
                if dtype is None and source is None and not hasattr(data, "dtype"):
                    _check_python_int_range(data, None, target)
                _check_host_dtype(data, target)  # a library may fail on strings its own way
                # tensor([1 + 2j], dtype=float32): NumPy's float() of a complex number
                if dtype is not None and isinstance(error, TypeError) and type(data) in _DATA:
                    raise DtypeError(
                        f"the data cannot be held in dtype {dtype.name} ({error}); give a "
                        "dtype that holds it (complex64 for complex numbers), or convert the "
                        "numbers first"
                    ) from error
            raise
    except RuntimeError:  # PyTorch's refusal of a number int64 cannot hold
        _check_int64_numbers(data, dtype, native_dtype, source, target)
        raise
    if dtype is None and source is None and not hasattr(data, "dtype"):
        _check_python_int_range(data, result, target)
    if native_dtype is None and source is not target and not isinstance(data, Tensor):
        _check_integers_kept(data, result, target)
    if not isinstance(data, Tensor):
        result = _floats_beside_large_ints(data, result, target)
        _check_supported_dtype(result, target)
    if dtype is None and source is None and not hasattr(data, "dtype"):
        result = _reread_in_double(data, result, target)
        if target.dtype_of(result) not in _DOUBLE or not _holds_double_scalars(data):
            result = _apply_default_dtype(result, target)
    return result, target


_INT64_RANGE = range(-(2**63), 2**63)


def _refuse_ragged(data: list[Any] | tuple[Any, ...]) -> None:
    """Raise a ShapeError naming the first depth where nested sequences differ in length
    (each library words its own refusal: NumPy's speaks of an "inhomogeneous part")."""
    level: list[Any] = [data]
    depth = 0
    while level:
        nested = [type(item) in (list, tuple) for item in level]
        if not any(nested):
            return
        lengths = {len(item) for item, is_sequence in zip(level, nested) if is_sequence}
        if not all(nested) or len(lengths) > 1:
            found = sorted(lengths) + ([] if all(nested) else ["a number"])
            raise ShapeError(
                f"tensor(): the nested sequences at depth {depth} are not all of one length "
                f"(found {', '.join(map(str, found))}); a tensor is a rectangular array, so "
                "pad them to one length (or use a list of tensors)"
            )
        level = [inner for item in level for inner in item]
        depth += 1


def _check_python_int_range(data: Any, array: Any, target: Device) -> None:
    """Refuse Python integers beyond int64, the dtype they are read as (as PyTorch does).

    NumPy reads ``[2**63, -1]`` as float64 (rounded, then float32 by default) and ``[2**63]``
    as uint64: a dtype the caller never asked for, and numbers that may be wrong.
    """
    kinds = _leaf_types(data) if type(data) in (list, tuple) else {type(data)}
    if int not in kinds or not kinds <= {int, bool}:
        return
    try:
        read = None if array is None else target.dtype_of(array)
    except (KeyError, TypeError):
        read = None  # an object array: NumPy could not read them as numbers at all
    if read is not None and read not in (_dtypes.uint64, _dtypes.float32, _dtypes.float64):
        # NumPy (and the libraries built on it) never read a larger int as int64; a library
        # that may wrap it (array-api-strict given device=: 2**63 became -2**63) is checked.
        if read is not _dtypes.int64 or target.backend.holds_host_data:
            return
    beyond = next((n for n in _python_numbers(data) if n not in _INT64_RANGE), None)
    if beyond is not None:
        unsigned = "dtype=plugrad.uint64 for integers up to 2**64 - 1, or " if beyond > 0 else ""
        raise ScalarRangeError(
            f"the Python integer {beyond} does not fit int64, the dtype Python integers are "
            f"read as; pass {unsigned}dtype=plugrad.float64 to read them as (rounded) floats"
        )


def _check_integers_kept(data: Any, result: Any, target: Device) -> None:
    """Refuse a NumPy integer array whose values the narrower integer dtype the backend read it
    as cannot hold (JAX without 64-bit types reads int64 as int32: 2**33 became 0)."""
    kind = getattr(getattr(data, "dtype", None), "kind", None)  # NumPy's: "i", "u"
    if kind not in ("i", "u") or not data.size:
        return
    read = target.dtype_of(result)
    if read.itemsize >= data.dtype.itemsize:
        return
    info = target.xp.iinfo(result.dtype)
    low, high = int(data.min()), int(data.max())
    if low < int(info.min) or high > int(info.max):
        raise ScalarRangeError(
            f"the {data.dtype} values {low} to {high} do not fit {read.name}, the dtype "
            f"{target.backend.name!r} reads {data.dtype} as here; convert them to a floating "
            "dtype first, or use a backend (or mode: JAX_ENABLE_X64=1) with 64-bit integers"
        )


#: The Python data whose numbers are checked against an integer dtype asked for.
_NUMBERS_CHECKED = (list, tuple, int, float)


def _check_numbers_fit(
    data: Any, dtype: _dtypes.DType, native: Any, target: Device, walk_int64: bool = False
) -> None:
    """Refuse Python numbers outside the integer ``dtype`` asked for: NumPy raises its own
    OverflowError (naming 256 for 256.5), PyTorch and JAX wrap integers (``tensor([-1],
    dtype=uint8)`` would hold 255). A float must lie within the range, as PyTorch requires
    (255.5 and -0.5 do not fit uint8); NaN and infinities fit no integer dtype.

    Not for int64 unless ``walk_int64``, which holds every integer a library reads without
    raising: the walk over the data tripled the time of ``tensor(labels, dtype=int64)`` for
    a long list.
    """
    if dtype.kind not in ("signed integer", "unsigned integer"):
        return
    if dtype is _dtypes.int64 and not walk_int64:
        return
    info = target.xp.iinfo(native)
    low, high = int(info.min), int(info.max)
    beyond = next(
        (n for n in _python_numbers(data)
         if (type(n) is int or type(n) is float) and not low <= n <= high),
        None,
    )  # fmt: skip
    if beyond is not None:
        what = "Python integer" if type(beyond) is int else "number"
        raise ScalarRangeError(
            f"the {what} {beyond!r} does not fit {dtype.name}, which holds {low} to "
            f"{high}; pass a dtype that holds it"
        )


def _check_int64_numbers(
    data: Any, dtype: _dtypes.DType | None, native: Any, source: Device | None, target: Device
) -> None:
    """Where the library refused Python data: the numbers checked against int64 too (1e19)."""
    if dtype is not None and source is None and type(data) in _NUMBERS_CHECKED:
        _check_numbers_fit(data, dtype, native, target, walk_int64=True)


def _python_numbers(data: Any) -> Iterator[Any]:
    if type(data) is list or type(data) is tuple:
        for item in data:
            yield from _python_numbers(item)
    else:
        yield data


def _holds_double_scalars(data: Any) -> bool:
    """Whether Python data holds NumPy float64/complex128 scalars, whose precision PyTorch keeps
    (``tensor([np.float64(1.5)])`` is float64: a list of ``np.mean(...)`` stays exact)."""
    kind = type(data)
    if kind is list or kind is tuple:
        if not data:
            return False
        if type(data[0]) is list or type(data[0]) is tuple:
            return any(_holds_double_scalars(row) for row in data)
        kinds = set(map(type, data))  # C speed
        if any(_is_array(kind) for kind in kinds):  # [np.array([1.0]), ...]: their dtypes
            return any(_holds_double_scalars(item) for item in data)
        return any(_is_double_scalar(kind) for kind in kinds)
    if _is_array(kind):
        return str(data.dtype) in ("float64", "complex128")
    return _is_double_scalar(kind)


def _is_array(kind: type) -> bool:
    return kind.__module__ == "numpy" and kind.__name__ == "ndarray"


def _is_double_scalar(kind: type) -> bool:
    # By name: the core imports no array library (NumPy's scalars are Python floats too).
    return kind.__module__ == "numpy" and kind.__name__ in ("float64", "complex128")


_DOUBLE = (_dtypes.float64, _dtypes.complex128)


def _reread_in_double(data: Any, array: Any, target: Device) -> Any:
    """Python data read in single precision, read again in double where that is the default.

    PyTorch reads Python floats at its own default, float32; with
    ``set_default_dtype(float64)`` the digits beyond float32 would be lost.
    """
    read = target.dtype_of(array)
    for single, double, default, python in (
        (_dtypes.float32, _dtypes.float64, _dtypes.default_float_dtype, float),
        (_dtypes.complex64, _dtypes.complex128, _dtypes.default_complex_dtype, complex),
    ):
        if read is single and default is double:
            # Single precision read from NumPy float32 scalars alone is theirs to keep
            # (``tensor([np.float32(1)])`` is float32 whatever the default, as in PyTorch).
            kinds = _leaf_types(data) if type(data) in (list, tuple) else {type(data)}
            if python not in kinds and not (python is complex and float in kinds):
                return array
            return target.xp.asarray(data, dtype=target.native_dtype(double), device=target.native)
    return array


def _check_host_dtype(data: Any, target: Device) -> None:
    """Raise the dtype error for host data whose dtype no op can handle, read on the host."""
    try:
        host = registry.resolve_device("numpy")
        array = host.xp.asarray(data)
    except Exception:  # the data cannot be read on the host either: the caller's error stands
        return
    try:
        dtype = host.dtype_of(array)
    except (KeyError, TypeError):
        _refuse_dtype(array.dtype, target)
    target.native_dtype(dtype)  # a dtype the target lacks (float16 on some): a DtypeError


def _floats_beside_large_ints(data: Any, array: Any, target: Device) -> Any:
    """``array`` read again as floats where it holds Python objects because ``data`` mixes
    floats (or complex numbers) with an integer beyond int64: NumPy kept them as objects
    (``[1.5, 2**64]``), where PyTorch reads them all as floats. ``array`` is None where the
    library refused them outright."""
    if array is not None:
        try:
            target.dtype_of(array)
            return array  # the common case: numbers
        except (KeyError, TypeError):
            pass
    if type(data) not in (list, tuple):
        return array
    kinds = _leaf_types(data)
    if int not in kinds or not kinds & {float, complex} or not kinds <= {int, bool, float, complex}:
        return array
    wide = _dtypes.complex128 if complex in kinds else _dtypes.float64
    if wide not in target.dtypes:
        wide = _dtypes.complex64 if complex in kinds else _dtypes.float32
    return target.xp.asarray(data, dtype=target.native_dtype(wide), device=target.native)


def _check_supported_dtype(array: Any, target: Device) -> None:
    """Refuse data whose dtype no op can handle (object, strings, long double, dates)."""
    try:
        target.dtype_of(array)
    except (KeyError, TypeError):
        _refuse_dtype(array.dtype, target)


def _values_of_foreign_array(
    array: Any, source: Device, target: Device, dtype: _dtypes.DType | None
) -> Any:
    """The values of ``array``, an array of ``source``'s library (not host data), as every
    backend reads them.

    A torch tensor that requires grad leaves torch's graph (``torch.tensor(t)`` detaches it
    too; the torch backend would otherwise record torch's graph in every op), and one
    with a lazy negative or conjugate bit gets its values (a copy): DLPack and NumPy
    export the memory without the bit (``conj().imag`` came in negated). A dtype that
    ``source`` has no plugrad dtype for, or ``target`` does not store (bfloat16 for the
    numpy backend), is converted to ``dtype`` there, or refused (each library failed its
    own way).
    """
    if getattr(array, "requires_grad", False) is True:
        array = array.detach()
    array = resolve_lazy_bits(array)
    try:
        found = source.dtype_of(array)
    except (KeyError, TypeError):
        found = None
    if found is None or (found is _dtypes.bfloat16 and found not in target.dtypes):
        if dtype is None:
            _refuse_dtype(array.dtype, target)
        array = source.xp.astype(array, source.native_dtype(dtype))  # as torch.tensor(x, dtype=)
    return array


def resolve_lazy_bits(array: Any) -> Any:
    """``array`` with PyTorch's lazy negative and conjugate bits applied (a copy where one
    is set), else ``array`` itself: DLPack exports a torch tensor's memory without its
    negative bit (the values come out negated) and refuses one with a conjugate bit.

    Duck-typed (``is_neg``/``is_conj``), as the core imports no array library.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.creation import resolve_lazy_bits
    >>> a = [1.0]
    >>> resolve_lazy_bits(a) is a  # nothing lazy to apply
    True
    """
    is_neg = getattr(array, "is_neg", None)
    if is_neg is None:  # (not a torch tensor: the common case)
        return array
    if is_neg():
        array = array.resolve_neg()
    if array.is_conj():
        array = array.resolve_conj()
    return array


def dlpack_exportable(array: Any) -> Any:
    """``array`` (any library's) as a backend's ``from_dlpack`` can take it: lazy bits
    applied (:func:`resolve_lazy_bits`), and a typed error for memory DLPack cannot carry:
    a torch tensor that requires grad (torch refuses to export it), another byte order
    (NumPy's ``>f8``). Each library refused these with its own ``BufferError`` or
    ``RuntimeError``.

    Examples
    --------
    >>> import numpy as np
    >>> from plugrad.creation import dlpack_exportable
    >>> a = np.zeros(2)
    >>> dlpack_exportable(a) is a
    True
    """
    if getattr(array, "requires_grad", False) is True:
        raise BackwardError(
            "from_dlpack() of a torch tensor that requires grad: torch does not export its "
            "memory, which would leave torch's graph; pass x.detach() if that is meant"
        )
    dtype = getattr(array, "dtype", None)
    if getattr(dtype, "isnative", True) is False:
        order = "big" if getattr(dtype, "byteorder", "") == ">" else "little"
        raise DtypeError(
            f"memory of dtype {dtype} holds {order}-endian numbers, which DLPack cannot "
            "carry (nor a backend store); a.astype(a.dtype.newbyteorder('=')) converts them"
        )
    return resolve_lazy_bits(array)


_BFLOAT16_REFUSAL = (
    "bfloat16 (not an Array API dtype) is stored by the torch and jax backends only; use "
    "one of them (plugrad.use_backend('torch')), or convert it first, with x.float() for a "
    "torch tensor (x.astype('float32') for others)"
)


def _is_bfloat16(dtype: Any) -> bool:
    # By name: torch's, and NumPy's from ml_dtypes (JAX's); the core imports neither library.
    return dtype is not None and str(dtype) in ("torch.bfloat16", "bfloat16")


def _refuse_dtype(dtype: Any, target: Device) -> NoReturn:
    if _is_bfloat16(dtype):
        raise DtypeError(
            f"cannot make a tensor of dtype {dtype}: {_BFLOAT16_REFUSAL}, or pass "
            "dtype=plugrad.float32"
        ) from None
    supported = ", ".join(sorted({d.name for d in target._dtype_from_native.values()}))
    raise DtypeError(
        f"cannot make a tensor of dtype {dtype} on {target}: tensors hold numbers "
        f"of one of the dtypes {supported}; convert the data first (e.g. with "
        "numpy.asarray(data, dtype=numpy.float64))"
    ) from None


@with_creation_options
def tensor(data: Any, **options: Unpack[CreationOptions]) -> Tensor:
    """Create a leaf tensor holding a copy of ``data``.

    Parameters
    ----------
    data : array_like
        A Python scalar, nested sequences, a backend array, or a Tensor.
    dtype : DType, optional
        The dtype; by default inferred: Python floats give the default ``float32``,
        NumPy ``float64`` scalars among them keep ``float64`` (as in PyTorch).
    device : str or Device, optional
        Where the tensor lives; by default where ``data`` lives, else the default device.
    requires_grad : bool
        Whether to record operations on it for backward.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    tensor([[1., 2.],
            [3., 4.]], requires_grad=True)
    >>> plugrad.tensor(3)
    tensor(3)
    """
    dtype, device, backend, requires_grad = creation_options("tensor", options)
    return _tensor_of(data, dtype, device, backend, requires_grad)


def python_buffer_as_list(data: Any) -> Any:
    """``data`` as a list if it is one of Python's own buffers (``bytearray``, ``memoryview``,
    ``array.array``): PyTorch reads them as the numbers they hold (ints as int64), where
    NumPy keeps their narrow type (``bytearray`` as uint8, whose sums wrap at 256)."""
    if isinstance(data, (bytearray, memoryview, _python_array)):
        return memoryview(data).tolist()
    return data


def _tensor_of(
    data: Any,
    dtype: _dtypes.DType | None,
    device: Device | str | None,
    backend: str | None,
    requires_grad: bool,
) -> Tensor:
    """:func:`tensor`, its options read."""
    held: list[Tensor] = []
    plain: list[Any] = []
    data = python_buffer_as_list(data)
    if type(data) in (list, tuple) and any(issubclass(k, Tensor) for k in _leaf_types(data)):
        data = _numbers_of_tensors(data, held, plain)
    array, target = _convert(data, dtype, device, backend, copy=True)
    if held and dtype is None:
        # Each tensor's dtype counts, as in PyTorch: tensor([a.mean(), b.mean()]) of float64
        # means is float64, not the default float32 its numbers alone would give; the other
        # numbers count with the dtype they alone would have ([h16, h16, 3] is float16).
        dtypes = [t.dtype for t in held]
        if plain:
            numbers, _ = _convert(plain, None, target, None, copy=True)
            dtypes.append(target.dtype_of(numbers))
        wanted = _dtypes.common_dtype(dtypes, target.result_type)
        if wanted is not target.dtype_of(array):
            array = target.xp.asarray(data, dtype=target.native_dtype(wanted), device=target.native)
    return leaf(array, target, requires_grad)


def _leaf_types(data: list[Any] | tuple[Any, ...]) -> set[type]:
    """The types of the items of nested lists and tuples (each row's read at C speed)."""
    kinds = set(map(type, data))
    if list in kinds or tuple in kinds:
        kinds -= {list, tuple}
        for row in data:
            if type(row) is list or type(row) is tuple:
                kinds |= _leaf_types(row)
    return kinds


def _numbers_of_tensors(data: Any, held: list[Tensor], plain: list[Any]) -> list[Any]:
    """Nested lists with each one-element Tensor replaced by its number (noted in ``held``),
    as PyTorch reads ``tensor([t1, t2])``; the other numbers are noted in ``plain``."""
    converted: list[Any] = []
    for item in data:
        if isinstance(item, Tensor):
            if item.size != 1:
                raise ShapeError(
                    f"tensor(): a list element is a tensor of shape {item.shape}; only "
                    "one-element tensors can stand for numbers in a list (as in PyTorch). "
                    "Join tensors with plugrad.stack(...) instead"
                )
            held.append(item)
            converted.append(item.item())
        elif type(item) is list or type(item) is tuple:
            converted.append(_numbers_of_tensors(item, held, plain))
        else:
            converted.append(item)
            plain.append(item)
    return converted


@with_creation_options
def asarray(obj: Any, /, *, copy: bool | None = None, **options: Unpack[CreationOptions]) -> Tensor:
    """Convert ``obj`` to a tensor, sharing memory where possible (the Array API ``asarray``).

    A Tensor that needs no conversion is returned as it is, graph included.
    One that requires grad and is asked for another dtype or device, or for
    ``copy=True``, is converted by differentiable ops (``astype``, ``to``), so
    Array API code that calls ``asarray`` on its inputs stays in the graph.

    Examples
    --------
    >>> import plugrad
    >>> t = plugrad.asarray([1.0, 2.0])
    >>> t
    tensor([1., 2.])
    >>> plugrad.asarray(t) is t  # nothing to convert
    True
    """
    dtype, device, backend, requires_grad = creation_options("asarray", options)
    if isinstance(obj, Tensor):
        unchanged = (dtype is None or dtype == obj.dtype) and (
            (device is None and backend is None) or target_device(device, backend) is obj._device
        )
        if unchanged and not copy:
            if requires_grad and not obj._requires_grad:
                raise BackwardError(
                    "asarray(x, requires_grad=True) would change x itself; use "
                    "x.requires_grad_() on the leaf instead"
                )
            return obj
        if obj._requires_grad:
            return _converted_in_graph(obj, dtype, device, backend, copy)
    if type(obj) in (list, tuple) and any(issubclass(k, Tensor) for k in _leaf_types(obj)):
        # Tensors in a list stand for their numbers, with their dtypes, as in tensor().
        return _tensor_of(obj, dtype, device, backend, requires_grad)
    array, target = _convert(obj, dtype, device, backend, copy)
    return leaf(array, target, requires_grad)


def _converted_in_graph(
    x: Tensor,
    dtype: _dtypes.DType | None,
    device: DeviceLike,
    backend: str | None,
    copy: bool | None,
) -> Tensor:
    """``asarray`` of a tensor that requires grad, through differentiable ops."""
    from . import ops as _ops  # filled once plugins are loaded

    if copy is False:
        raise InvalidArgumentError(
            "asarray(x, copy=False) cannot convert x without a copy; pass copy=None to allow one"
        )
    moved = x if device is None and backend is None else x.to(target_device(device, backend))
    if dtype is None or dtype == moved.dtype:
        if not copy and moved is not x:
            return moved
        return _ops.astype(moved, moved.dtype, copy=True)
    return _ops.astype(moved, dtype)


def _filled(
    kind: str,
    shape: Shape,
    options: Mapping[str, Any],
    fill_value: Any = None,
    like: Tensor | None = None,
) -> Tensor:
    """A tensor of ``kind`` (zeros, ones, empty, full), with the dtype and device of ``like``
    (when given) unless ``options`` say otherwise."""
    function = kind if like is None else f"{kind}_like"
    accepted = CreationOptions if like is None else LikeOptions
    dtype, device, backend, requires_grad = creation_options(function, options, accepted)
    if like is not None and options:
        check_memory_format(function, options.get("memory_format"), like.ndim)
    if like is None or device is not None or backend is not None:
        target = target_device(device, backend)
    else:
        target = like._device
    if like is not None:
        dtype = dtype or like.dtype
    if dtype is None:
        if fill_value is None:
            dtype = _dtypes.default_float_dtype
        else:
            dtype = _scalar_dtype(fill_value, target)
    native = target.native_dtype(dtype)
    xp = target.xp
    shape = _shape(shape)
    if isinstance(fill_value, complex) and dtype.kind != "complex floating":
        raise DtypeError(
            f"{function}(): fill_value {fill_value!r} is complex, but dtype is {dtype}, which "
            "would keep only its real part; pass a complex dtype, or fill_value.real"
        )
    if kind == "full":
        if type(fill_value) in (int, float):
            _check_fill_fits(function, fill_value, dtype, target)
        array = xp.full(shape, fill_value, dtype=native, device=target.native)
    else:
        array = getattr(xp, kind)(shape, dtype=native, device=target.native)
    return leaf(array, target, requires_grad)


def _check_fill_fits(function: str, value: int | float, dtype: _dtypes.DType, target: Any) -> None:
    """Refuse a fill value the dtype cannot hold (NumPy would wrap it, or make it inf)."""
    xp, native = target.xp, target.native_dtype(dtype)
    if dtype.kind in ("signed integer", "unsigned integer"):
        info = xp.iinfo(native)
        fits = math.isfinite(value) and info.min <= math.trunc(value) <= info.max
    elif dtype.kind == "real floating":
        fits = not math.isfinite(value) or abs(value) <= float(xp.finfo(native).max)
    else:
        return
    if not fits:
        raise ScalarRangeError(
            f"{function}(): the fill value {value!r} cannot be held by {dtype.name} without "
            "overflow; pass a dtype that holds it"
        )


def _filled_function(kind: str, summary: str, examples: str = "") -> Callable[..., Tensor]:
    """``zeros``, ``ones`` or ``empty``: a new tensor of that kind, of the shape given
    (``examples``: the docstring's last section, after its blank line)."""

    def filled(
        shape: int | tuple[int, ...] | None = None,
        *sizes: int,
        size: int | tuple[int, ...] | None = None,
        **options: Unpack[CreationOptions],
    ) -> Tensor:
        return _filled(kind, _varargs_shape(kind, (shape, *sizes), size), options)

    filled.__name__ = filled.__qualname__ = kind
    filled.__doc__ = f"""{summary}

    The shape is one tuple or several ints: ``{kind}((2, 3))`` or ``{kind}(2, 3)``
    (``size=`` is PyTorch's keyword for it).{examples}
    """
    return takes_out(with_creation_options(filled))


zeros = _filled_function(
    "zeros",
    "Return a tensor of zeros (``float32`` unless ``dtype`` is given).",
    """

    Examples
    --------
    >>> import plugrad
    >>> plugrad.zeros(2, 3)
    tensor([[0., 0., 0.],
            [0., 0., 0.]])""",
)
ones = _filled_function(
    "ones",
    "Return a tensor of ones (``float32`` unless ``dtype`` is given).",
    """

    Examples
    --------
    >>> import plugrad
    >>> plugrad.ones(3, dtype=plugrad.int64)
    tensor([1, 1, 1])""",
)
empty = _filled_function(
    "empty",
    "Return a tensor whose values are whatever the memory held (fast; fill it before use).",
)


@takes_out
@with_creation_options
def full(
    shape: Shape | None = None,
    fill_value: bool | int | float | complex | None = None,
    *,
    size: Shape | None = None,
    **options: Unpack[CreationOptions],
) -> Tensor:
    """Return a tensor filled with ``fill_value``; the dtype follows the value's Python type.

    A NumPy scalar or a 0-d tensor fills as the Python number it holds. ``size=`` is
    PyTorch's keyword for ``shape``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.full((2,), 0.5)
    tensor([0.5000, 0.5000])
    """
    if fill_value is None:
        raise ArgumentError("full() needs a fill_value: full(shape, fill_value)")
    shape = _varargs_shape("full", (shape,), size)
    return _filled("full", shape, options, _fill_number("full", fill_value))


def _like(kind: str, x: Tensor, options: Mapping[str, Any], fill_value: Any = None) -> Tensor:
    """A new tensor shaped like ``x``, filled as ``kind`` says (see :class:`LikeOptions`)."""
    if not isinstance(x, Tensor):
        raise ArgumentError(f"{kind}_like() needs a Tensor, got {type(x).__name__}")
    return _filled(kind, x.shape, options, fill_value, like=x)


@with_like_options
def zeros_like(x: Tensor, /, **options: Unpack[LikeOptions]) -> Tensor:
    """Return zeros with the shape of ``x`` (and its dtype and device unless given)."""
    return _like("zeros", x, options)


@with_like_options
def ones_like(x: Tensor, /, **options: Unpack[LikeOptions]) -> Tensor:
    """Return ones with the shape of ``x`` (and its dtype and device unless given).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.ones_like(plugrad.zeros((2,)))
    tensor([1., 1.])
    """
    return _like("ones", x, options)


@with_like_options
def empty_like(x: Tensor, /, **options: Unpack[LikeOptions]) -> Tensor:
    """Return an uninitialised tensor with the shape of ``x`` (and its dtype and device)."""
    return _like("empty", x, options)


@with_like_options
def full_like(
    x: Tensor, /, fill_value: bool | int | float | complex, **options: Unpack[LikeOptions]
) -> Tensor:
    """Return a tensor with the shape of ``x`` filled with ``fill_value``."""
    return _like("full", x, options, _fill_number("full_like", fill_value))


@takes_out
@with_creation_options
def arange(
    start: int | float | None = None,
    /,
    stop: int | float | None = None,
    step: int | float = 1,
    *,
    end: int | float | None = None,
    **options: Unpack[CreationOptions],
) -> Tensor:
    """Return evenly spaced values in ``[start, stop)``; ``arange(n)`` is ``0, 1, ..., n-1``.

    ``end=`` is PyTorch's keyword for ``stop`` (``arange(end=3)``, ``arange(1, end=3)``,
    ``arange(start=1, end=3)``). A step that moves away from ``stop`` gives an empty tensor,
    as the standard says, and in PyTorch's form (``end=``, ``start=``) raises
    :class:`~plugrad.errors.InvalidArgumentError`, as PyTorch does.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.arange(4)
    tensor([0, 1, 2, 3])
    >>> plugrad.arange(0.0, 1.0, 0.25)
    tensor([0.0000, 0.2500, 0.5000, 0.7500])
    """
    pytorchs_form = end is not None or "start" in options
    if "start" in options:  # PyTorch's arange(start=1, end=4): the keyword form of start
        if start is not None:
            raise ArgumentError("arange() got start twice, by position and as start=")
        start = options.pop("start")  # type: ignore[typeddict-item]
    dtype, device, backend, requires_grad = creation_options("arange", options)
    if end is not None:
        if stop is not None:
            raise ArgumentError(
                "arange() got stop and PyTorch's end=, which name the same; give one"
            )
        start, stop = (0 if start is None else start), end
    if start is None:
        raise ArgumentError(
            "arange() needs where to stop: arange(3), arange(0, 3) or arange(end=3)"
        )
    if stop is None:
        start, stop = 0, start
    # 0-d tensors and NumPy scalars as the Python numbers they hold (a float32 0.5 is a float).
    start, stop, step = (
        _python_number("arange", v, name)
        for v, name in ((start, "start"), (stop, "stop"), (step, "step"))
    )
    target = target_device(device, backend)
    floating = any(isinstance(v, float) for v in (start, stop, step))
    if step == 0:
        raise InvalidArgumentError(f"arange(): step must be nonzero, got {step!r}")
    if floating and not all(math.isfinite(v) for v in (start, stop, step)):
        raise InvalidArgumentError(
            f"arange(): start, stop and step must be finite, got {start!r}, {stop!r}, {step!r}"
        )
    if pytorchs_form and (stop < start if step > 0 else stop > start):
        # (the standard's arange(1, 0, 0.3), without end=, is empty)
        raise InvalidArgumentError(
            f"arange(): from start {start!r}, step {step!r} moves away from the end {stop!r} "
            "(PyTorch's error: upper bound and lower bound inconsistent with step sign); give "
            "a step of the other sign, or swap start and end"
        )
    if dtype is None:
        dtype = _dtypes.default_float_dtype if floating else target.default_int_dtype
    elif floating and dtype is _dtypes.int64:
        # PyTorch's: the bounds and the step become int64 first (truncated).
        given = step
        start, stop, step = int(start), int(stop), int(step)
        if step == 0:
            raise InvalidArgumentError(
                f"arange(): step must be nonzero in int64, and {given!r} made an integer is 0"
            )
    elif floating and dtype.kind in ("signed integer", "unsigned integer"):
        # PyTorch's for the other integer dtypes: the length from the numbers as given, the
        # values from the start and the step made integers: arange(-3, 3, 1.5) is [-3..0].
        length = max(math.ceil((stop - start) / step), 0)
        first, each = int(start), int(step)
        last = first + each * (length - 1) if length else first
        bits = 8 * dtype.itemsize
        low, high = (
            (0, 2**bits - 1)
            if dtype.kind == "unsigned integer"
            else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        )
        xp, native = target.xp, target.native_dtype(dtype)
        if length and not (low <= min(first, last) and max(first, last) <= high):
            raise ScalarRangeError(
                f"arange(): the values {first} to {last} do not fit {dtype.name}; pick a "
                "wider dtype"
            )
        counts = xp.arange(length, dtype=target.native_dtype(target.default_int_dtype))
        values = counts * each + first
        return leaf(xp.astype(values, native), target, requires_grad)
    if not floating and dtype.kind in ("signed integer", "unsigned integer"):
        count = max(-(-(stop - start) // step), 0)
        final = start + step * (count - 1)
        info = target.xp.iinfo(target.native_dtype(dtype))
        if count and not (
            int(info.min) <= min(start, final) and max(start, final) <= int(info.max)
        ):
            # The backend would wrap them (JAX without 64-bit types: 2**31 became -2**31).
            raise ScalarRangeError(
                f"arange(): the values {start} to {final} do not fit {dtype.name}; pass a wider "
                "dtype, or a float step for floating values"
            )
    if dtype.kind == "real floating":
        # PyTorch's values, start + i * step in float64 and rounded once: NumPy steps in the
        # dtype itself (float16 values drift: 0.2 * 5 - 1 is 0.00098, not 0) and from
        # (start + step) - start (arange(-0.5, 0.5, 0.1)[5] was -1.1e-16, not +2.8e-17).
        xp, length = target.xp, max(math.ceil((stop - start) / step), 0)
        wide = _dtypes.float64 if _dtypes.float64 in target.dtypes else dtype
        counts = xp.arange(length, dtype=target.native_dtype(wide), device=target.native)
        array = xp.astype(counts * step + start, target.native_dtype(dtype))
    else:
        array = target.xp.arange(
            start, stop, step, dtype=target.native_dtype(dtype), device=target.native
        )
    return leaf(array, target, requires_grad)


def _fill_number(function: str, value: Any) -> Any:
    """``fill_value`` as a Python number; None is refused (it read as NaN, as an empty fill)."""
    if value is None:
        raise ArgumentError(
            f"{function}() takes a number as fill_value, got None; pass float('nan') for NaNs"
        )
    number = _python_number(function, value)
    if not isinstance(number, (bool, int, float, complex)):
        # xp.full would broadcast a list and parse a string (a list skipped the range check).
        raise ArgumentError(
            f"{function}() takes one number as fill_value (a Python number, a NumPy scalar or "
            f"a 0-d tensor), got a {type(value).__name__}"
        )
    return number


def refuse_a_tensor_read_as_a_number(function: str, name: str, value: Tensor) -> None:
    """Refuse a tensor that requires grad where its value is read as a number: no gradient
    would reach it (``F.layer_norm(x, eps=t)`` left ``t.grad`` None without a word)."""
    if value._requires_grad and _grad_state.enabled:
        raise ArgumentError(
            f"{function}(): {name} is a tensor that requires grad, but it is read as a "
            f"number, so no gradient would reach it; pass {name}.item() (or a detached "
            "tensor) for a constant"
        )


def _python_number(function: str, value: Any, name: str = "fill_value") -> Any:
    """``value`` as a Python number: a 0-d tensor's or a NumPy scalar's, else itself."""
    if isinstance(value, Tensor):
        refuse_a_tensor_read_as_a_number(function, name, value)
        if value.ndim != 0:
            raise ShapeError(
                f"{function}() takes numbers or 0-d tensors, got a tensor of shape {value.shape}"
            )
        return value.item()
    if not isinstance(value, (bool, int, float, complex)) and hasattr(value, "item"):
        if getattr(value, "size", 1) != 1:
            raise ShapeError(
                f"{function}() takes numbers or 0-d tensors as {name}, got an array of shape "
                f"{tuple(value.shape)}"
            )
        return value.item()
    return value


@takes_out
@with_creation_options
def eye(
    n_rows: int | None = None,
    n_cols: int | None = None,
    /,
    *,
    k: int = 0,
    n: int | None = None,
    m: int | None = None,
    **options: Unpack[CreationOptions],
) -> Tensor:
    """Return a 2-D tensor with ones on diagonal ``k`` and zeros elsewhere (``float32`` default).

    ``n`` and ``m`` are PyTorch's names for ``n_rows`` and ``n_cols`` (``eye(n=2, m=3)``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.eye(2, 3, k=1)
    tensor([[0., 1., 0.],
            [0., 0., 1.]])
    """
    dtype, device, backend, requires_grad = creation_options("eye", options)
    if m is not None:
        if n_cols is not None:
            raise ArgumentError("eye() got n_cols and PyTorch's m=, which name the same; give one")
        n_cols = m
    if n is not None:
        if n_rows is not None:
            raise ArgumentError("eye() got n_rows and PyTorch's n=, which name the same; give one")
        n_rows = n
    if n_rows is None:
        raise ArgumentError("eye() needs the number of rows: eye(3) or eye(n=3)")
    for name, count in (("rows", n_rows), ("columns", n_cols)):
        if count is not None and count < 0:
            raise InvalidArgumentError(f"eye() takes a number of {name} >= 0, got {count}")
    target = target_device(device, backend)
    native = target.native_dtype(dtype or _dtypes.default_float_dtype)
    array = target.xp.eye(n_rows, n_cols, k=k, dtype=native, device=target.native)
    return leaf(array, target, requires_grad)


@takes_out
@with_creation_options
def linspace(
    start: int | float | complex,
    stop: int | float | complex | None = None,
    num: int | None = None,
    *,
    endpoint: bool = True,
    steps: int | None = None,
    end: int | float | complex | None = None,
    **options: Unpack[CreationOptions],
) -> Tensor:
    """Return ``num`` evenly spaced values from ``start`` to ``stop`` (included if ``endpoint``).

    ``steps=`` is PyTorch's name for ``num``, ``end=`` its name for ``stop``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.linspace(0.0, 1.0, 5)
    tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    >>> plugrad.linspace(0, 1, steps=3)
    tensor([0.0000, 0.5000, 1.0000])
    """
    if (num is None) == (steps is None):
        raise ArgumentError(
            "linspace() takes the number of values once: as num (the Array API's name) or "
            "steps= (PyTorch's)"
        )
    if (stop is None) == (end is None):
        raise ArgumentError(
            "linspace() takes its last value once: as stop (the Array API's name) or end= "
            "(PyTorch's)"
        )
    stop = end if stop is None else stop
    assert stop is not None  # (one of the two was given)
    num = as_int(steps if num is None else num)
    if type(num) is not int:  # (a float or a bool: PyTorch refuses them too)
        raise ArgumentError(f"linspace() takes an int number of values, got {num!r}")
    if num < 0:
        raise InvalidArgumentError(f"linspace() takes a number of values >= 0, got {num}")
    # 0-d tensors and NumPy scalars as the Python numbers they hold: a complex one's dtype
    # was taken for a real one's (its imaginary parts dropped), and the torch and JAX
    # kernels refused tensors.
    start = _python_number("linspace", start, "start")
    stop = _python_number("linspace", stop, "end")
    for name, value in (("start", start), ("end", stop)):
        if not isinstance(value, (int, float, complex)):
            raise ArgumentError(f"linspace() takes a number as {name}, got {value!r}")
    dtype, device, backend, requires_grad = creation_options("linspace", options)
    if dtype is None:
        is_complex = isinstance(start, complex) or isinstance(stop, complex)
        dtype = _dtypes.default_complex_dtype if is_complex else _dtypes.default_float_dtype
    target = target_device(device, backend)
    integer = dtype.kind in ("signed integer", "unsigned integer")
    # Integers as PyTorch gives them: the endpoints made integers, then the float values
    # rounded toward zero (NumPy floors).
    computed = dtype
    if integer:
        computed = _dtypes.float64 if _dtypes.float64 in target.dtypes else _dtypes.float32
        info = target.xp.iinfo(target.native_dtype(dtype))
        ends = [v.real if isinstance(v, complex) else float(v) for v in (start, stop)]
        if not all(math.isfinite(v) and int(info.min) <= v <= int(info.max) for v in ends):
            # The cast below would wrap them (NumPy) or clamp them (JAX), as PyTorch refuses.
            raise ScalarRangeError(
                f"linspace(): the values {start} to {stop} do not fit {dtype.name}; pass a "
                "wider dtype"
            )
        start, stop = (math.trunc(v) for v in ends)  # PyTorch's: the endpoints as integers
    array = target.xp.linspace(
        start,
        stop,
        num,
        dtype=target.native_dtype(computed),
        device=target.native,
        endpoint=endpoint,
    )
    if integer:
        array = target.xp.astype(array, target.native_dtype(dtype))
    return leaf(array, target, requires_grad)


@takes_out
@with_creation_options
def logspace(
    start: int | float,
    end: int | float,
    steps: int,
    base: int | float = 10.0,
    **options: Unpack[CreationOptions],
) -> Tensor:
    """Return ``steps`` values from ``base**start`` to ``base**end``, evenly spaced in log scale.

    PyTorch's ``logspace``: ``base ** linspace(start, end, steps)``, computed in
    float64 where the device has it; an integer dtype rounds the endpoints (of two or
    more steps) and the values toward zero, as PyTorch does.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.logspace(0, 3, 4)
    tensor([   1.,   10.,  100., 1000.])
    >>> plugrad.logspace(0, 2, 3, base=2, dtype=plugrad.int64)
    tensor([1, 2, 4])
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ArgumentError(f"logspace() takes a number of steps >= 0, got {steps!r}")
    # 0-d tensors and NumPy scalars as the Python numbers they hold (linspace's too).
    start, end, base = (
        _python_number("logspace", v, name)
        for v, name in ((start, "start"), (end, "end"), (base, "base"))
    )
    for name, value in (("start", start), ("end", end), ("base", base)):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ArgumentError(f"logspace() takes a real number as {name}, got {value!r}")
    dtype, device, backend, requires_grad = creation_options("logspace", options)
    target = target_device(device, backend)
    dtype = dtype or _dtypes.default_float_dtype
    if dtype.kind not in ("real floating", "signed integer", "unsigned integer"):
        raise DtypeError(f"logspace() makes real floating or integer values, not {dtype.name}")
    computed = _dtypes.float64 if _dtypes.float64 in target.dtypes else _dtypes.float32
    native = target.native_dtype(computed)
    if dtype.kind != "real floating" and steps > 1 and all(map(math.isfinite, (start, end))):
        # PyTorch's integer endpoints; a single step is base**start, of start as it is.
        start, end = math.trunc(start), math.trunc(end)
    exponents = target.xp.linspace(start, end, steps, dtype=native, device=target.native)
    array = target.xp.pow(target.xp.asarray(base, dtype=native, device=target.native), exponents)
    if dtype is not computed:
        array = target.xp.astype(array, target.native_dtype(dtype))
    return leaf(array, target, requires_grad)


def _triangle_indices(
    function: str, row: int, col: int, offset: int, options: Mapping[str, Any]
) -> Tensor:
    row, col, offset = as_int(row), as_int(col), as_int(offset)  # (NumPy integers too)
    for name, value in (("row", row), ("col", col), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentError(f"{function}() takes an int as {name}, got {value!r}")
    if row < 0 or col < 0:
        raise ArgumentError(f"{function}() takes row and col >= 0, got {row} and {col}")
    dtype, device, backend, requires_grad = creation_options(function, options)
    if requires_grad:
        raise ArgumentError(f"{function}() makes integer indices, which cannot require grad")
    target = target_device(device, backend)
    dtype = dtype or target.default_int_dtype
    if dtype.kind not in ("signed integer", "unsigned integer"):
        raise DtypeError(f"{function}() makes integer indices, not {dtype.name}")
    xp, native = target.xp, target.native_dtype(dtype)
    rows = xp.arange(row, dtype=native, device=target.native)
    cols = xp.arange(col, dtype=native, device=target.native)
    # Row-major, as PyTorch lists them: the (i, j) with j - i on the kept side of offset.
    signed = target.native_dtype(target.default_int_dtype)
    difference = xp.astype(cols[None, :], signed) - xp.astype(rows[:, None], signed)
    kept = difference <= offset if function == "tril_indices" else difference >= offset
    found = xp.nonzero(kept)
    array = xp.stack([xp.astype(found[0], native), xp.astype(found[1], native)])
    return leaf(array, target, False)


@with_creation_options
def tril_indices(row: int, col: int, offset: int = 0, **options: Unpack[CreationOptions]) -> Tensor:
    """Return the indices of the lower triangle of a ``row`` x ``col`` matrix, as 2 rows.

    The first row holds row indices, the second column indices, in row-major
    order; ``offset`` moves the diagonal up (positive) or down. The device's default
    integer dtype (``int64``) unless ``dtype`` says otherwise.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.tril_indices(3, 3)
    tensor([[0, 1, 1, 2, 2, 2],
            [0, 0, 1, 0, 1, 2]])
    """
    return _triangle_indices("tril_indices", row, col, offset, options)


@with_creation_options
def triu_indices(row: int, col: int, offset: int = 0, **options: Unpack[CreationOptions]) -> Tensor:
    """Return the indices of the upper triangle of a ``row`` x ``col`` matrix, as 2 rows.

    As :func:`tril_indices`, for the elements on and above diagonal ``offset``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.triu_indices(3, 3, 1)
    tensor([[0, 0, 1],
            [1, 2, 2]])
    """
    return _triangle_indices("triu_indices", row, col, offset, options)


# -- the new_* methods of Tensor ---------------------------------------------------------


def _new_filled(kind: str, doc: str) -> Callable[..., Tensor]:
    """The method ``new_<kind>`` (``new_zeros``, ``new_ones``), documented by ``doc``."""

    def method(
        self: Tensor,
        *sizes: int | tuple[int, ...],
        size: int | tuple[int, ...] | None = None,
        dtype: _dtypes.DType | None = None,
        device: Device | str | None = None,
        requires_grad: bool = False,
    ) -> Tensor:
        shape = _varargs_shape(f"new_{kind}", (None, *sizes), size)
        return _filled(kind, shape, _new_options(self, dtype, device, requires_grad))

    method.__doc__ = doc
    return method


_new_zeros = _new_filled(
    "zeros",
    """Return zeros of shape ``size`` with this tensor's dtype and device (unless given).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.ones(2, dtype=plugrad.float64).new_zeros(2, 2)
    tensor([[0., 0.],
            [0., 0.]], dtype=plugrad.float64)
    """,
)
_new_ones = _new_filled(
    "ones", """Return ones of shape ``size`` with this tensor's dtype and device (unless given)."""
)
_new_empty = _new_filled(
    "empty",
    """Return a tensor of shape ``size`` with this tensor's dtype and device (unless given),
    holding whatever the memory held: fill it before use.""",
)


def _new_full(
    self: Tensor,
    size: int | tuple[int, ...],
    fill_value: bool | int | float | complex,
    *,
    dtype: _dtypes.DType | None = None,
    device: Device | str | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return ``fill_value`` in shape ``size`` with this tensor's dtype and device."""
    return full(size, fill_value, **_new_options(self, dtype, device, requires_grad))


def _new_tensor(
    self: Tensor,
    data: Any,
    *,
    dtype: _dtypes.DType | None = None,
    device: Device | str | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return a new leaf holding a copy of ``data``, with this tensor's dtype and device."""
    return tensor(data, **_new_options(self, dtype, device, requires_grad))


def _new_options(
    self: Tensor, dtype: _dtypes.DType | None, device: Device | str | None, requires_grad: bool
) -> dict[str, Any]:
    return {
        "dtype": self.dtype if dtype is None else dtype,
        "device": self._device if device is None else device,
        "requires_grad": requires_grad,
    }


install_methods(
    new_zeros=_new_zeros,
    new_ones=_new_ones,
    new_empty=_new_empty,
    new_full=_new_full,
    new_tensor=_new_tensor,
    new=lambda self, *args, **kwargs: _legacy_tensor(
        "new", self.dtype, args, {"device": self.device, **kwargs}
    ),  # PyTorch's legacy x.new(data) and x.new(2, 3): x's dtype and device
)


def _legacy_constructor(*args: Any, **kwargs: Any) -> Tensor:
    """PyTorch's legacy ``torch.Tensor(data)``, ``Tensor(2, 3)`` and ``Tensor()``: a tensor of
    the default float dtype (the data converted; uninitialised memory as zeros)."""
    return _legacy_tensor("Tensor", _dtypes.default_float_dtype, args, kwargs)


def _legacy_tensor(
    name: str, dtype: _dtypes.DType, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Tensor:
    """``name(data)``, ``name(2, 3)`` or ``name()``: a tensor of ``dtype``."""
    unknown = set(kwargs) - {"device"}
    if unknown:
        raise ArgumentError(
            f"{name}() takes data or sizes, and device=; got {sorted(unknown)} (for dtype= and "
            "the rest use plugrad.tensor(data, ...) or plugrad.empty(shape, ...))"
        )
    if not args:
        return empty((0,), dtype=dtype, **kwargs)
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return zeros(args, dtype=dtype, **kwargs)
    if len(args) == 1 and isinstance(args[0], (tuple, list)) and not args[0]:
        return empty((0,), dtype=dtype, **kwargs)
    if len(args) == 1 and isinstance(args[0], Tensor):
        return _legacy_alias(name, dtype, args[0], kwargs)
    if len(args) == 1:
        return tensor(args[0], dtype=dtype, **kwargs)
    raise ArgumentError(
        f"{name}() takes one sequence of data or ints for a shape, got {args!r}; use "
        "plugrad.tensor(data) or plugrad.empty(shape)"
    )


def _legacy_alias(name: str, dtype: _dtypes.DType, data: Tensor, kwargs: dict[str, Any]) -> Tensor:
    """``name(t)`` of a tensor: ``t`` itself under a new name (a view sharing its memory and
    its history), as PyTorch's; ``Tensor(t)`` takes any dtype, the typed ones their own."""
    if name != "Tensor" and data.dtype is not dtype:
        raise ArgumentError(
            f"{name}() of a {data.dtype} tensor: a legacy tensor type takes tensors of its own "
            f"dtype ({dtype}); convert it with t.to({dtype})"
        )
    device = kwargs.get("device")
    if device is not None and resolve(device) is not data.device:
        raise ArgumentError(
            f"{name}(t, device={device!r}) of a tensor on {data.device}: move it with t.to(device)"
        )
    return data.view(data.shape)


Tensor._legacy_constructor = _legacy_constructor


class _TensorType(type):
    """The class of PyTorch's legacy tensor types (``plugrad.FloatTensor``): calling one makes
    a tensor of its dtype, and ``isinstance`` asks a tensor's dtype, as in PyTorch."""

    dtype: _dtypes.DType

    def __call__(cls, *args: Any, **kwargs: Any) -> Tensor:
        return _legacy_tensor(cls.__name__, cls.dtype, args, kwargs)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, Tensor) and instance.dtype is cls.dtype

    def __repr__(cls) -> str:
        return f"<class 'plugrad.{cls.__name__}'>"


def _tensor_type(name: str, dtype: _dtypes.DType) -> _TensorType:
    doc = (
        f"PyTorch's legacy ``torch.{name}``: ``{name}(data)`` or ``{name}(2, 3)`` makes a "
        f"{dtype.name} tensor (zeros for sizes); ``isinstance(x, plugrad.{name})`` asks whether "
        f"``x`` is one."
    )
    return _TensorType(name, (), {"dtype": dtype, "__doc__": doc, "__module__": "plugrad"})


FloatTensor = _tensor_type("FloatTensor", _dtypes.float32)
DoubleTensor = _tensor_type("DoubleTensor", _dtypes.float64)
HalfTensor = _tensor_type("HalfTensor", _dtypes.float16)
LongTensor = _tensor_type("LongTensor", _dtypes.int64)
IntTensor = _tensor_type("IntTensor", _dtypes.int32)
ShortTensor = _tensor_type("ShortTensor", _dtypes.int16)
CharTensor = _tensor_type("CharTensor", _dtypes.int8)
ByteTensor = _tensor_type("ByteTensor", _dtypes.uint8)
BoolTensor = _tensor_type("BoolTensor", _dtypes.bool)
