"""How a Tensor meets the world outside autograd: devices, host values, DLPack, printing.

Importing this module makes its functions methods of :class:`~plugrad.Tensor`;
none of them records on the graph.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from . import dtypes as _dtypes
from . import printing as _printing
from . import strided_layout
from .errors import (
    ArgumentError,
    AxisError,
    BackendError,
    BackwardError,
    DtypeError,
    InvalidArgumentError,
    ShapeError,
)
from .tensor import Tensor, install_methods

if TYPE_CHECKING:
    from .backend import Device

__all__ = ["SUPPORTED_API_VERSIONS"]

_PRINT_KINDS = {
    "bool": "bool",
    "signed integer": "int",
    "unsigned integer": "int",
    "real floating": "float",
    "complex floating": "complex",
}


def _dtype_shown(dtype: _dtypes.DType, size: int) -> bool:
    """Whether a repr names the dtype, as PyTorch's: not for those a Python literal gets by
    default (the default float and complex dtypes now, int64, bool), unless the tensor is
    empty (its values cannot tell): then for all but the default float dtype."""
    if dtype is _dtypes.default_float_dtype:
        return False
    if size == 0:
        return True
    return not (
        dtype is _dtypes.default_complex_dtype
        or dtype is _dtypes.default_int_dtype
        or dtype is _dtypes.bool
    )


#: The Array API versions plugrad implements (the last is ``plugrad.__array_api_version__``).
SUPPORTED_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12")


def _dlpack(
    self: Tensor,
    *,
    stream: Any = None,
    max_version: tuple[int, int] | None = None,
    dl_device: tuple[int, int] | None = None,
    copy: bool | None = None,
) -> Any:
    """Export the data through DLPack (zero-copy for the consumer); a tensor that requires
    grad is refused, as ``numpy()`` refuses it (and PyTorch's export)."""
    if self._requires_grad:
        raise BufferError(
            "a tensor that requires grad cannot be exported through DLPack: the consumer's "
            "array would leave the graph; export x.detach() if that is meant"
        )
    # Pass on only what was given, so libraries with an older __dlpack__ still work.
    given = {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
    return self._array.__dlpack__(**{k: v for k, v in given.items() if v is not None})


def _dlpack_device(self: Tensor) -> tuple[int, int]:
    return self._array.__dlpack_device__()


def _numpy(self: Tensor, *, force: bool = False) -> Any:
    """Return the values as a NumPy array; on the CPU it shares the tensor's memory.

    As in PyTorch, on the NumPy backend and on ``torch:cpu`` a change made
    through either one shows in the other. A write through NumPy is invisible to the version
    counter, so a backward pass that saved this tensor cannot detect it.
    Other backends copy to the host; the JAX, Dask and array-api-strict ones give
    a read-only array (a write to it could not reach the tensor). A tensor that requires grad is
    refused, as in PyTorch, and so is ``numpy.asarray`` of it: the array
    would leave the graph without a word; ``x.detach().numpy()`` or
    ``x.numpy(force=True)`` (PyTorch's) says that this is meant.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.zeros(3)
    >>> x.numpy()[0] = 5.0
    >>> x
    tensor([5., 0., 0.])
    """
    if self._requires_grad and not force:
        raise BackwardError(
            "numpy() of a tensor that requires grad would cut it off from the graph, and "
            "whatever is computed from the array gets no gradient; call "
            "x.detach().numpy() or x.numpy(force=True) if that is meant"
        )
    # (a 0-d NumPy result is a scalar: given an array first, so that the two share it)
    return self._device.backend.share_with_numpy(self._shareable_array())


def _stride(self: Tensor, dim: int | None = None) -> Any:
    """PyTorch's ``x.stride(dim=None)``: elements between neighbours along each axis.

    The backend's memory layout where its arrays have one (NumPy, CuPy,
    PyTorch: a transposed view has swapped strides); the row-major layout of
    a copy otherwise (JAX, Dask).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.zeros(2, 3).stride(), plugrad.zeros(2, 3).T.stride(0)
    ((3, 1), 1)
    """
    device = self._device
    if device.views_are_copies:  # its arrays have no layout: a view's is kept
        strides = strided_layout.strides_of(self)
    else:
        strides = device.backend.strides(self._array)
    if dim is None:
        return strides
    if type(dim) is not int or not -len(strides) <= dim < len(strides):
        if not strides:
            raise AxisError(f"stride(dim={dim!r}): a 0-d tensor has no dimensions")
        raise AxisError(
            f"stride(dim={dim!r}): dim must be an int in [{-len(strides)}, "
            f"{len(strides) - 1}] for a tensor of {len(strides)} dimension(s)"
        )
    return strides[dim]


def _data_ptr(self: Tensor) -> int:
    """PyTorch's ``x.data_ptr()``: the address of the first element in memory (0 for an
    empty tensor), to tell whether two tensors share memory.

    Views share their base's memory on NumPy, CuPy and PyTorch; on backends whose views
    are copies (JAX, Dask) each view has memory of its own. A lazy array (Dask) has no
    address yet: :class:`~plugrad.errors.BackendError`.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.zeros(4)
    >>> x[1:].data_ptr() - x.data_ptr() == x.element_size()
    True
    """
    if self.size == 0:
        return 0
    backend = self._device.backend
    pointer = backend.data_pointer(self._array)
    if pointer is None:
        raise BackendError(
            f"data_ptr(): the {backend.name} backend gives no memory address of its arrays "
            "(a lazy array has none yet); compare tensors by identity or values instead"
        )
    return pointer


def _host(self: Tensor) -> Any:
    """The values as a NumPy array, whether or not the tensor requires grad."""
    return self._device.backend.to_numpy(self._array)


def _numpy_array(self: Tensor, dtype: Any = None, copy: bool | None = None) -> Any:
    host = _numpy(self)
    if dtype is not None and host.dtype != dtype:
        if copy is False:  # NumPy 2's promise: never a copy then
            raise InvalidArgumentError(
                f"numpy.asarray(x, dtype={dtype}, copy=False): the tensor is {self.dtype.name}, "
                "so the array must be a copy; pass copy=None (or convert the tensor first)"
            )
        return host.astype(dtype)
    return host.copy() if copy else host


def _item(self: Tensor) -> bool | int | float | complex:
    """Return the value of a one-element tensor as a Python scalar."""
    if self.size != 1:
        raise ShapeError(
            f"item() needs a tensor with exactly one element, but this one has shape "
            f"{self.shape}; index or reduce it first (e.g. x.sum().item())"
        )
    return _host(self).reshape(()).item()


def _tolist(self: Tensor) -> Any:
    """Return the values as (nested) Python lists of Python scalars."""
    return _host(self).tolist()


def _real_item(self: Tensor, conversion: str) -> bool | int | float:
    value = _item(self)
    if isinstance(value, complex):
        raise DtypeError(
            f"{conversion}() of a complex tensor would drop its imaginary part; take "
            f"plugrad.real(x) or plugrad.abs(x) first"
        )
    return value


def _float(self: Tensor) -> float:
    return float(_real_item(self, "float"))


def _int(self: Tensor) -> int:
    return int(_real_item(self, "int"))


def _complex(self: Tensor) -> complex:
    return complex(_item(self))


def _bool(self: Tensor) -> bool:
    if self.size != 1:
        raise ShapeError(
            f"the truth value of a tensor with shape {self.shape} is ambiguous; "
            "use plugrad.all(x) or plugrad.any(x), or compare one element"
        )
    return bool(_item(self))


def _index(self: Tensor) -> int:
    if self.dtype.kind not in ("signed integer", "unsigned integer", "bool"):
        raise DtypeError(f"only integer tensors can be used as an index, not {self.dtype.name}")
    return int(_real_item(self, "int"))


def _len(self: Tensor) -> int:
    if not self._array.ndim:
        raise ArgumentError("len() of a 0-d tensor")
    return self._array.shape[0]


def _iter(self: Tensor) -> Any:
    """The slices along the first axis, as PyTorch's (views, as ``x[i]``); a 0-d tensor has none
    to give, and says so rather than yield nothing."""
    if not self._array.ndim:
        raise ArgumentError(
            "iteration over a 0-d tensor: it has no axis to iterate over; x.item() is its value"
        )
    return (self[index] for index in range(self._array.shape[0]))


def _contains(self: Tensor, element: Any) -> bool:
    """``element in x``: whether any element equals it (PyTorch's)."""
    if not isinstance(element, Tensor) and getattr(element, "shape", None) == ():
        element = element.item()  # a NumPy scalar: the number it holds
    if not isinstance(element, (Tensor, bool, int, float, complex)):
        raise ArgumentError(
            f"'in' takes a Tensor or a number on its left, got {type(element).__name__}"
        )
    return bool((self == element).any())


def _repr(self: Tensor) -> str:
    device = self._device
    dtype = self.dtype
    suffixes = []
    if _dtype_shown(dtype, self.size):
        suffixes.append(f"dtype={dtype!r}")
    if device.name != "numpy":
        suffixes.append(f"device={device.name!r}")
    if self._edge is not None:
        suffixes.append(f"grad_fn={self.grad_fn!r}")
    elif self._requires_grad:
        suffixes.append("requires_grad=True")
    host = device.backend.to_numpy(self._array)
    return _printing.format_tensor(host, self.shape, _PRINT_KINDS[dtype.kind], suffixes)


def _format(self: Tensor, spec: str) -> str:
    """``f"{x:.4f}"``: a 0-d tensor formats as its number, as in PyTorch; others as ``str(x)``.

    Examples
    --------
    >>> import plugrad
    >>> loss = plugrad.tensor(0.123456, requires_grad=True)
    >>> f"loss {loss:.4f}, step {plugrad.tensor(3)}"
    'loss 0.1235, step 3'
    """
    if self._array.ndim == 0:
        return format(self.item(), spec)
    if spec:
        raise ArgumentError(
            f"format spec {spec!r} given for a tensor of shape {self.shape}; only 0-d tensors "
            "take one (format x.item(), or the elements of x.tolist(), instead)"
        )
    return str(self)


def _array_namespace(self: Tensor, /, *, api_version: str | None = None) -> Any:
    """Return ``plugrad``, the Array API namespace of tensors.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.ones(2).__array_namespace__() is plugrad
    True
    """
    if api_version is not None and api_version not in SUPPORTED_API_VERSIONS:
        raise InvalidArgumentError(
            f"plugrad implements Array API versions {', '.join(SUPPORTED_API_VERSIONS)}; "
            f"got api_version={api_version!r}"
        )
    return sys.modules["plugrad"]


def _cpu(self: Tensor) -> Tensor:
    """Return the tensor on the CPU (the NumPy backend); itself if it is there."""
    return self.to("cpu")


def _cuda(self: Tensor, device: Device | int | str | None = None) -> Tensor:
    """Return the tensor on a GPU (``"cuda"``, or ``"cuda:N"`` for ``device=N``).

    Raises :class:`~plugrad.errors.BackendUnavailableError` where no GPU backend can run.
    """
    if device is None:
        device = "cuda"
    elif isinstance(device, int) and not isinstance(device, bool):
        device = f"cuda:{device}"
    return self.to(device)


install_methods(
    __dlpack__=_dlpack,
    __dlpack_device__=_dlpack_device,
    numpy=_numpy,
    stride=_stride,
    data_ptr=_data_ptr,
    _host=_host,
    __array__=_numpy_array,
    item=_item,
    tolist=_tolist,
    __float__=_float,
    __int__=_int,
    __complex__=_complex,
    __bool__=_bool,
    __index__=_index,
    __len__=_len,
    __iter__=_iter,
    __contains__=_contains,
    __repr__=_repr,
    __format__=_format,
    __array_namespace__=_array_namespace,
    cpu=_cpu,
    cuda=_cuda,
)
