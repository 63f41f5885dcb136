"""Saving and loading tensors and state dicts as safetensors files, which cannot run code.

A file holds raw tensor data plus a JSON header (the safetensors format), so
loading one never executes anything, unlike pickle. Any safetensors reader
(``safetensors.numpy``, ``safetensors.torch``, ...) reads the tensors of a
file written here, named by their dotted path (``"model.linear.weight"``);
the exact structure (nesting, keys, lists, tuples and the non-tensor values
of an optimizer's state dict) is kept as JSON in the header's metadata.

Tensor data leaves a backend through its host path (``Backend.to_numpy``,
handled here only as a buffer) and comes back through ``Backend.from_host``,
so core never imports an array library.
"""

from __future__ import annotations

import ctypes
import io
import json
import math
import os
import pickle
import secrets
import sys
from collections.abc import Mapping
from typing import Any, BinaryIO

from . import dtypes as _dtypes
from . import registry
from .backend import Device
from .creation import target_device
from .errors import ArgumentError, DtypeError, InvalidArgumentError, SerializationError
from .pickling import bfloat16_bits, bfloat16_from_bits
from .random import GeneratorState
from .tensor import Tensor, _wrap
from .transfer import HostBytes

__all__ = ["load", "save"]

#: Metadata key holding the JSON description of the saved structure.
_STRUCTURE_KEY = "plugrad"
_FORMAT_VERSION = 1
#: safetensors' codes for plugrad dtypes; complex128 has none (see _COMPLEX128).
_CODE_OF = {
    "bool": "BOOL",
    "int8": "I8",
    "int16": "I16",
    "int32": "I32",
    "int64": "I64",
    "uint8": "U8",
    "uint16": "U16",
    "uint32": "U32",
    "uint64": "U64",
    "float16": "F16",
    "bfloat16": "BF16",
    "float32": "F32",
    "float64": "F64",
    "complex64": "C64",
}
_DTYPE_OF_CODE = {code: getattr(_dtypes, name) for name, code in _CODE_OF.items()}
#: NumPy array-interface type strings (little-endian, as safetensors stores data).
_TYPESTR = {
    "bool": "|b1",
    "int8": "|i1",
    "uint8": "|u1",
    "int16": "<i2",
    "int32": "<i4",
    "int64": "<i8",
    "uint16": "<u2",
    "uint32": "<u4",
    "uint64": "<u8",
    "float16": "<f2",
    "float32": "<f4",
    "float64": "<f8",
    "complex64": "<c8",
    "complex128": "<c16",
}
# complex128 is stored as float64 with a trailing axis of 2 (real, imaginary), the form
# other libraries use for complex data without a complex type (torch.view_as_real).
_COMPLEX128 = "complex128"


def save(obj: Tensor | Mapping[str, Any], path: str | os.PathLike[str] | BinaryIO) -> None:
    """Save a tensor, or a nested dict of tensors and plain values, to a safetensors file.

    Parameters
    ----------
    obj : Tensor or dict
        A tensor, or a dict (with ``str`` or ``int`` keys) whose values are
        tensors, ``None``, bools, ints, floats, complex numbers, strings,
        generator states (:func:`plugrad.get_rng_state`), or dicts, lists and
        tuples of those: a model's state dict, an optimizer's
        :meth:`~plugrad.optim.Optimizer.state_dict`, or a checkpoint holding
        both and the epoch. A NumPy scalar (``np.float32(0.5)``,
        ``np.int64(3)``, ``np.bool_(True)``) is saved as the Python value it
        holds (its ``.item()``) and loads as that value.
    path : str, os.PathLike or binary file object
        The file to write. A named file is written under a temporary name in the
        same folder and renamed when complete, so an error never leaves a
        partial file (nor changes an existing one). A file object (``io.BytesIO``,
        an open file, as PyTorch's ``torch.save`` takes) gets the bytes written
        at its position.

    Notes
    -----
    - Tensors are saved as their values only: ``requires_grad`` and graph
      history are not saved, and :func:`load` returns plain tensors.
    - Tensors sharing memory (views, the same tensor twice) are saved as
      separate copies and load as independent tensors.
    - Mappings load as ``dict``, in their order: an ``OrderedDict``'s class and a
      state dict's ``_metadata`` (the versions of its modules) are not saved.
    - In the file, each tensor is named by its keys joined with dots
      (``"optimizer.state.0.exp_avg"``; ``"tensor"`` for a lone tensor), with
      ``#1``, ``#2``, ... appended when two paths would give the same name.
      Other safetensors readers see these names; :func:`load` restores the
      exact structure from the metadata, however the keys are spelled.
    - ``complex128`` has no safetensors dtype: it is stored as ``F64`` with an
      extra last axis of length 2 (real and imaginary parts), which
      :func:`load` turns back into ``complex128``. ``complex64`` is ``C64``.

    Raises
    ------
    TypeError
        For a value that cannot be saved (an array of another library, an
        object...) or a key that is neither ``str`` nor ``int``; the message
        names where in ``obj`` it is.
    ValueError
        For a structure that contains itself.

    Examples
    --------
    >>> import os, tempfile
    >>> import plugrad
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "checkpoint.safetensors")
    >>> w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    >>> plugrad.save({"model": {"w": w}, "epoch": 3, "betas": (0.9, 0.999)}, path)
    >>> plugrad.load(path)
    {'model': {'w': tensor([1., 2.])}, 'epoch': 3, 'betas': (0.9, 0.999)}
    """
    if not isinstance(obj, Tensor | Mapping):
        raise ArgumentError(
            f"save() takes a Tensor or a dict of tensors (a state dict), got a "
            f"{type(obj).__name__}; wrap other values in a dict, e.g. {{'values': [...]}}"
        )
    file = path if hasattr(path, "write") else None
    if file is not None:
        _check_binary(file, "save", "'wb'")
    name = "" if file is not None else os.fspath(path)  # type: ignore[arg-type]
    tensors: list[tuple[str, Tensor]] = []
    structure = _describe(obj, (), tensors, set(), set())
    metadata = {
        _STRUCTURE_KEY: json.dumps(
            {"version": _FORMAT_VERSION, "structure": structure}, separators=(",", ":")
        )
    }
    safetensors = _safetensors()
    keep_alive: list[Any] = []  # host buffers whose addresses the specs hold
    specs = {name: _spec(safetensors, tensor, keep_alive) for name, tensor in tensors}
    if file is not None:  # a file object (io.BytesIO, an open file): the bytes written to it
        file.write(safetensors.serialize(specs, metadata))
        return
    _write_atomically(
        name, lambda temporary: safetensors.serialize_file(specs, temporary, metadata)
    )


def _check_binary(file: Any, what: str, binary_mode: str) -> None:
    """Refuse a text stream (``io.StringIO``, a file opened without ``"b"``): a safetensors
    file is bytes."""
    mode = getattr(file, "mode", None)
    if isinstance(file, io.TextIOBase) or (isinstance(mode, str) and "b" not in mode):
        raise ArgumentError(
            f"{what}() got a text stream ({type(file).__name__}), but a safetensors file is "
            f"bytes: open the file in binary mode ({binary_mode}), or use io.BytesIO()"
        )


def _one_file(stream: BinaryIO) -> bytes:
    """The bytes of the safetensors file that starts at ``stream``'s position, and no more:
    as PyTorch's, a stream may hold one saved file after another."""
    head = stream.read(8)
    if len(head) < 8:
        return head  # (deserialize says what is wrong)
    header = stream.read(int.from_bytes(head, "little"))
    try:
        entries = json.loads(header)
        end = max(
            (int(entry["data_offsets"][1]) for key, entry in entries.items()
             if key != "__metadata__"),
            default=0,
        )  # fmt: skip
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return head + header + stream.read()  # not one we can size: let deserialize say
    return head + header + stream.read(end)


def load(
    path: str | os.PathLike[str] | BinaryIO,
    map_location: Device | str | None = None,
    pickle_module: Any = None,
    *,
    backend: str | None = None,
    device: Device | str | None = None,
    weights_only: bool = True,
    mmap: bool | None = None,
) -> Any:
    """Load what :func:`save` wrote, or any safetensors file, as plugrad tensors.

    Parameters
    ----------
    path : str, os.PathLike or binary file object
        A safetensors file, or a file object reading one (from its position).
    backend : str, optional
        Backend to put the tensors on (its current device).
    device : str or Device, optional
        Device to put the tensors on (``"cupy:1"``). Without ``backend`` and
        ``device`` tensors go to the default device.
    weights_only : bool
        Accepted for PyTorch's ``torch.load(..., weights_only=True)``; the file
        holds data only whatever its value, since nothing is ever unpickled.
    map_location : str or Device, optional
        PyTorch's name for ``device`` (``map_location="cpu"``), which may be
        given positionally, as ``torch.load(f, "cpu")``. PyTorch's dicts and
        functions from saved to new devices have nothing to map here (a file
        records no device): they are refused.
    pickle_module : None
        PyTorch's module to unpickle with: a safetensors file is not a pickle,
        so only ``None`` (or the ``pickle`` module, PyTorch's default) is
        accepted, and changes nothing.
    mmap : bool, optional
        PyTorch's ``mmap=True`` (map the file instead of reading it), for a
        file path only, as PyTorch's. It is accepted and gives the same result:
        plugrad's tensors hold memory of their own, so their data is read from
        the file either way.

    Returns
    -------
    Tensor or dict
        The structure that was saved, with new tensors that do not require
        grad. A file written by another program (without plugrad's metadata)
        loads as a flat dict from tensor name to tensor, sorted by name.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    plugrad.errors.SerializationError
        If the file is not a complete safetensors file, or its plugrad
        metadata does not match its tensors.
    plugrad.errors.DtypeError
        If a tensor's dtype has no plugrad equivalent (the 8-bit floats
        ``F8_E4M3`` and ``F8_E5M2``, say) or the target backend does not
        support it (``BF16`` on the numpy backend).

    Examples
    --------
    >>> import os, tempfile
    >>> import plugrad
    >>> path = os.path.join(tempfile.mkdtemp(), "x.safetensors")
    >>> plugrad.save(plugrad.arange(3), path)
    >>> plugrad.load(path, backend="array_api_strict")
    tensor([0, 1, 2], device='array_api_strict:0')
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise ArgumentError(
            f"load(pickle_module={getattr(pickle_module, '__name__', pickle_module)!r}): "
            "plugrad's files are safetensors, not pickles, so nothing is unpickled; leave "
            "pickle_module out"
        )
    if mmap is not None and not isinstance(mmap, bool):
        raise ArgumentError(f"load(mmap=...) takes True, False or None, got {mmap!r}")
    if mmap and hasattr(path, "read"):
        raise InvalidArgumentError(
            "load(mmap=True) maps a file by its path: give the path, not a file object "
            "(as PyTorch's), or leave mmap out"
        )
    if map_location is not None:
        if device is not None:
            raise ArgumentError(
                "load() got device= and PyTorch's map_location=, which name the same; give one"
            )
        if type(map_location).__name__ == "device" and isinstance(
            getattr(map_location, "type", None), str
        ):
            map_location = str(map_location)  # PyTorch's torch.device("cpu")
        if not isinstance(map_location, (str, Device)):
            raise ArgumentError(
                f"load(map_location=...) takes a device (a name such as 'cpu' or a Device), got "
                f"a {type(map_location).__name__}: a saved file records no device to map from"
            )
        device = map_location
    target = target_device(device, backend)
    if isinstance(path, (bytes, bytearray, memoryview)):
        raise ArgumentError(
            "load() takes a path or a binary file object, got the bytes themselves; wrap "
            "them in io.BytesIO(data)"
        )
    if hasattr(path, "read"):  # a file object: the one file that starts where it stands
        _check_binary(path, "load", "'rb'")
        data = _one_file(path)  # type: ignore[arg-type]
        path = getattr(path, "name", f"<{type(path).__name__}>")
    else:
        path = os.fspath(path)
        with open(path, "rb") as file:
            data = file.read()
    safetensors = _safetensors()
    try:
        entries = safetensors.deserialize(data)
    except safetensors.SafetensorError as exc:
        kind = _pickled_format(data)
        if kind is not None:
            raise SerializationError(
                f"{path!r} is {kind}, likely a PyTorch checkpoint of torch.save, which "
                "plugrad.load does not read: it reads safetensors files only, and unpickles "
                "nothing. Convert it where PyTorch is installed: for a state_dict, "
                "safetensors.torch.save_file(torch.load(path, weights_only=True), "
                "'model.safetensors'); plugrad.load('model.safetensors') then gives its "
                "tensors by name, for model.load_state_dict"
            ) from None
        raise SerializationError(
            f"{path!r} is not a readable safetensors file ({exc}); it may be truncated or in "
            "another format (plugrad.load reads only safetensors files)"
        ) from None
    metadata = _header_metadata(data)
    del data
    structure = _saved_structure(metadata, path)
    complex_names = _complex128_names(structure) if structure is not None else set()
    specs = {}
    for name, info in entries:
        dtype, shape = _plugrad_dtype(name, info, name in complex_names, path)
        try:
            target.native_dtype(dtype)
        except DtypeError as exc:
            raise DtypeError(
                f"tensor {name!r} in {path!r} is {dtype.name}: {exc}; load it on another "
                "backend (backend='numpy')"
            ) from None
        specs[name] = (dtype, shape, info["data"])
    del entries
    tensors = {}
    for name in sorted(specs):
        dtype, shape, buffer = specs.pop(name)
        tensors[name] = _tensor_from_bytes(buffer, dtype, shape, target)
    if structure is None:
        return tensors
    result = _rebuild(structure, tensors, path)
    if tensors:
        raise SerializationError(
            f"{path!r} holds tensors its plugrad metadata does not mention "
            f"({sorted(tensors)[:5]}); the file was changed after it was saved"
        )
    return result


# -- saving --------------------------------------------------------------------------------


def _where(keys: tuple[Any, ...]) -> str:
    return "obj" + "".join(f"[{key!r}]" for key in keys)


def _describe(
    obj: Any,
    keys: tuple[Any, ...],
    tensors: list[tuple[str, Tensor]],
    names: set[str],
    open_containers: set[int],
) -> dict[str, Any]:
    """The JSON description of ``obj``; its tensors are appended to ``tensors``, named."""
    if isinstance(obj, Tensor):
        name = base = ".".join(str(key) for key in keys) or "tensor"
        suffix = 0
        while name in names or name == "__metadata__":  # the header's own reserved key
            suffix += 1
            name = f"{base}#{suffix}"
        names.add(name)
        tensors.append((name, obj))
        node: dict[str, Any] = {"tensor": name}
        if obj.dtype is _dtypes.complex128:
            node["dtype"] = _COMPLEX128
        return node
    if obj is None or isinstance(obj, bool | int | str):
        return {"value": obj}
    if isinstance(obj, GeneratorState):  # a checkpoint's random state: JSON by contract
        return {"generator_state": [obj.backend, obj.seed, obj.state]}
    if isinstance(obj, float):
        # JSON has no infinities or NaN; repr() and float() round-trip every float exactly.
        return {"value": obj} if math.isfinite(obj) else {"float": repr(float(obj))}
    if isinstance(obj, complex):
        return {"complex": [repr(obj.real), repr(obj.imag)]}
    numpy = sys.modules.get("numpy")  # (a NumPy scalar exists only where NumPy is imported)
    if numpy is not None and isinstance(obj, numpy.generic):
        # As the Python value it holds (np.float32(0.5) -> 0.5, np.int64(3) -> 3), the
        # value PyTorch's torch.load gives back too; one with no JSON form is refused below.
        value = obj.item()
        if isinstance(value, bool | int | float | complex | str):
            return _describe(value, keys, tensors, names, open_containers)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        # A file that runs no code cannot name the class to rebuild: it would load as a tuple.
        raise ArgumentError(
            f"cannot save {_where(keys)}, a namedtuple ({type(obj).__name__}): it would load as "
            "a plain tuple, losing its field names; save obj._asdict() (or tuple(obj))"
        )
    if isinstance(obj, Mapping | list | tuple):
        if id(obj) in open_containers:
            raise InvalidArgumentError(
                f"{_where(keys)} contains itself; save() needs a tree of values"
            )
        open_containers.add(id(obj))
        try:
            if isinstance(obj, Mapping):
                items = []
                for key, value in obj.items():
                    if isinstance(key, bool) or not isinstance(key, str | int):
                        raise ArgumentError(
                            f"{_where(keys)} has the key {key!r} ({type(key).__name__}); saved "
                            "dicts need str (or int) keys"
                        )
                    items.append(
                        [key, _describe(value, (*keys, key), tensors, names, open_containers)]
                    )
                return {"dict": items}
            kind = "list" if isinstance(obj, list) else "tuple"
            return {
                kind: [
                    _describe(value, (*keys, index), tensors, names, open_containers)
                    for index, value in enumerate(obj)
                ]
            }
        finally:
            open_containers.discard(id(obj))
    raise ArgumentError(
        f"cannot save {_where(keys)}, a {type(obj).__name__}: save() stores tensors, None, bool, "
        "int, float, complex, str and NumPy scalars of those, in dicts, lists and tuples; "
        "convert it (plugrad.asarray(...) for arrays, float(...) or int(...) for scalars of "
        "other libraries)"
    )


def _spec(safetensors: Any, tensor: Tensor, keep_alive: list[Any]) -> Any:
    """The safetensors description of one tensor's data, read from host memory."""
    dtype = tensor.dtype
    shape = list(tensor.shape)
    host = tensor._device.backend.to_numpy(tensor._array)
    interface = host.__array_interface__  # the host format is NumPy's (Backend.to_numpy)
    if interface["typestr"][0] == ">":
        raise DtypeError(
            f"cannot save big-endian {dtype.name} data; safetensors files are little-endian"
        )
    name = dtype.name
    if dtype is _dtypes.complex128:
        name, shape = "float64", [*shape, 2]
    takes_addresses = hasattr(safetensors, "TensorSpec")  # safetensors 0.7 takes bytes
    if dtype is _dtypes.bfloat16 and (
        interface["typestr"] == "<f4" or interface["strides"] is not None or not takes_addresses
    ):
        # ml_dtypes' bfloat16 is written from its memory where that is in C order; other
        # layouts, and float32 values (a host without ml_dtypes), become the bits as uint16
        # (no memoryview can describe ml_dtypes' elements).
        host = _host_array(HostBytes(bfloat16_bits(host), "<u2", tuple(shape)))
        interface = host.__array_interface__
    size = math.prod(shape) * (8 if name == "float64" else dtype.itemsize)
    if not takes_addresses:
        return {"dtype": name, "shape": shape, "data": memoryview(host).tobytes()}
    if size == 0:
        address = 0
    elif interface["strides"] is None:  # C-contiguous: serialize straight from its memory
        address = interface["data"][0]
        keep_alive.append(host)
    else:
        contiguous = bytearray(memoryview(host))  # copies in C order
        keep_alive.append(contiguous)
        address = ctypes.addressof(ctypes.c_char.from_buffer(contiguous))
    return safetensors.TensorSpec(dtype=name, shape=shape, data_ptr=address, data_len=size)


def _write_atomically(path: str, write: Any) -> None:
    """Run ``write(temporary_path)``, then move the result to ``path``; clean up on error."""
    folder, base = os.path.split(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(
            f"cannot save to {path!r}: the folder {folder!r} does not exist; create it first "
            "(os.makedirs(folder, exist_ok=True))"
        )
    while True:
        temporary = os.path.join(folder, f".{base}.{secrets.token_hex(6)}.tmp")
        try:
            # Created like any new file (mode 0o666 less the umask), unlike mkstemp's 0o600.
            os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
    try:
        mode = os.stat(temporary).st_mode
        write(temporary)
        os.chmod(temporary, mode)  # safetensors may replace the file with a private one
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


# -- loading -------------------------------------------------------------------------------


def _pickled_format(data: bytes) -> str | None:
    """What ``data`` is where it starts as torch.save's files do: a zip archive (its format
    since PyTorch 1.6) or a pickle (the format before, and of plain pickle.dump)."""
    if data[:4] == b"PK\x03\x04":
        return "a zip archive"
    if data[:1] == b"\x80" and data[1:2] in {b"\x02", b"\x03", b"\x04", b"\x05"}:
        return "a pickle"
    return None


def _header_metadata(data: bytes) -> dict[str, str]:
    """The ``__metadata__`` of a safetensors header (``deserialize`` returns tensors only)."""
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    return header.get("__metadata__") or {}


def _too_deep(path: str) -> SerializationError:
    return SerializationError(
        f"the plugrad metadata of {path!r} nests containers deeper than Python can follow; "
        "the file was not written by plugrad.save (its tensors can still be read with "
        "another safetensors reader)"
    )


def _saved_structure(metadata: Mapping[str, str], path: str) -> Any:
    text = metadata.get(_STRUCTURE_KEY)
    if text is None:
        return None
    try:
        saved = json.loads(text)
        version, structure = saved["version"], saved["structure"]
    except RecursionError:
        raise _too_deep(path) from None
    except (ValueError, TypeError, KeyError):
        raise SerializationError(
            f"the plugrad metadata of {path!r} is damaged; the tensors can still be read with "
            "another safetensors reader"
        ) from None
    if version != _FORMAT_VERSION:
        raise SerializationError(
            f"{path!r} was saved in plugrad file format {version!r}, which this plugrad cannot "
            f"read (it reads format {_FORMAT_VERSION}); upgrade plugrad"
        )
    return structure


def _complex128_names(node: Any) -> set[str]:
    names: set[str] = set()
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("dtype") == _COMPLEX128 and isinstance(node.get("tensor"), str):
                names.add(node["tensor"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return names


def _plugrad_dtype(
    name: str, info: Mapping[str, Any], is_complex128: bool, path: str
) -> tuple[_dtypes.DType, tuple[int, ...]]:
    code, shape = info["dtype"], tuple(info["shape"])
    if is_complex128:
        if code != "F64" or not shape or shape[-1] != 2:
            raise SerializationError(
                f"tensor {name!r} in {path!r} is marked complex128 but is {code} of shape {shape}"
            )
        return _dtypes.complex128, shape[:-1]
    dtype = _DTYPE_OF_CODE.get(code)
    if dtype is None:
        raise DtypeError(
            f"tensor {name!r} in {path!r} has safetensors dtype {code}, which plugrad has no "
            f"dtype for (it reads {', '.join(_DTYPE_OF_CODE)}); convert it to float32 before "
            "saving"
        )
    return dtype, shape


def _tensor_from_bytes(
    buffer: Any, dtype: _dtypes.DType, shape: tuple[int, ...], target: Device
) -> Tensor:
    if dtype is _dtypes.bfloat16:  # (NumPy has none)
        return _wrap(bfloat16_from_bits(buffer, shape, target), target, False, None)
    # The host format of Backend.from_host is NumPy's; the numpy backend's namespace makes
    # a host array of the bytes, and the target backend copies it into memory of its own.
    host = _host_array(HostBytes(buffer, _TYPESTR[dtype.name], shape))
    array = target.backend.from_host(host, target.native)
    return _wrap(array, target, False, None)


def _rebuild(node: Any, tensors: dict[str, Tensor], path: str) -> Any:
    """The object described by ``node``, taking its tensors out of ``tensors``."""
    try:
        if not isinstance(node, dict):
            raise ArgumentError(node)
        if "tensor" in node:
            return tensors.pop(node["tensor"])
        if "value" in node:
            return node["value"]
        if "float" in node:
            return float(node["float"])
        if "complex" in node:
            real, imag = node["complex"]
            return complex(float(real), float(imag))
        if "dict" in node:
            return {key: _rebuild(value, tensors, path) for key, value in node["dict"]}
        if "list" in node:
            return [_rebuild(value, tensors, path) for value in node["list"]]
        if "tuple" in node:
            return tuple(_rebuild(value, tensors, path) for value in node["tuple"])
        if "generator_state" in node:
            return GeneratorState(*node["generator_state"])
    except SerializationError:
        raise
    except (KeyError, TypeError, ValueError):
        pass
    raise SerializationError(
        f"the plugrad metadata of {path!r} does not match its tensors (at {str(node)[:80]}); "
        "the file was changed after it was saved"
    )


def _safetensors() -> Any:
    try:
        import safetensors
    except ImportError:  # pragma: no cover - a declared dependency
        raise ImportError(
            "plugrad.save and plugrad.load need the safetensors package; pip install safetensors"
        ) from None
    return safetensors


def _host_array(data: HostBytes) -> Any:
    """Host memory as the host backend's array (NumPy's, the format of Backend.to_numpy)."""
    return registry.resolve_device("numpy").xp.asarray(data)
