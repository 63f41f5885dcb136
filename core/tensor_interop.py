"""How a Tensor meets the world outside autograd: devices, host values, DLPack, printing.

:class:`TensorInterop` is a base of :class:`~plugrad.Tensor`; its methods never
record on the graph (except ``to``, whose dtype change is the ``astype`` op).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from . import dtypes as _dtypes
from . import ops as _ops
from . import printing as _printing
from .errors import BackwardError, DtypeError, ShapeError

if TYPE_CHECKING:
    from .backend import Backend, Device
    from .tensor import Tensor

__all__ = ["SUPPORTED_API_VERSIONS", "TensorInterop"]

_PRINT_KINDS = {
    "bool": "bool",
    "signed integer": "int",
    "unsigned integer": "int",
    "real floating": "float",
    "complex floating": "complex",
}
# Dtypes a repr leaves out, as PyTorch's does: those a Python literal gets by default.
_UNSHOWN_DTYPES = (
    _dtypes.default_float_dtype,
    _dtypes.default_int_dtype,
    _dtypes.default_complex_dtype,
    _dtypes.bool,
)
#: The Array API versions plugrad implements (the last is ``plugrad.__array_api_version__``).
SUPPORTED_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12")


class TensorInterop:
    """Moving, converting and printing tensors (a base of :class:`~plugrad.Tensor`)."""

    __slots__ = ()
    _array: Any
    _device: Device

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
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
        device, dtype, copy = _to_arguments(args, kwargs)
        result = self
        if device is not None:
            from .devices import resolve  # devices.py builds on this module
            from .transfer import to_device

            target = resolve(device)
            if target is not self._device:
                result = to_device(self, target)
                copy = False
        if dtype is not None and dtype is not result.dtype:
            result = _ops.astype(result, dtype)
            copy = False
        if copy:
            result = self.clone()
        return result

    def to_device(self, device: Device | Backend | str, /, *, stream: Any = None) -> Tensor:
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
            raise ValueError(
                "to_device(stream=...) is not supported: transfers run on the device's "
                "current stream; make that stream current (e.g. with cupy's stream context) instead"
            )
        return self.to(device)

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Export the data through DLPack (zero-copy for the consumer)."""
        # Pass on only what was given, so libraries with an older __dlpack__ still work.
        given = {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
        return self._array.__dlpack__(**{k: v for k, v in given.items() if v is not None})

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._array.__dlpack_device__()

    def numpy(self) -> Any:
        """Return the values as a NumPy array; on the CPU it shares the tensor's memory.

        As in PyTorch, on the NumPy backend a change made through either one
        shows in the other. A write through NumPy is invisible to the version
        counter, so a backward pass that saved this tensor cannot detect it.
        Other backends copy to the host. A tensor that requires grad is
        refused, as in PyTorch, and so is ``numpy.asarray`` of it: the array
        would leave the graph without a word; ``x.detach().numpy()`` says that
        this is meant.

        Examples
        --------
        >>> import plugrad
        >>> x = plugrad.zeros(3)
        >>> x.numpy()[0] = 5.0
        >>> x
        tensor([5., 0., 0.])
        """
        if self._requires_grad:
            raise BackwardError(
                "numpy() of a tensor that requires grad would cut it off from the graph, and "
                "whatever is computed from the array gets no gradient; call "
                "x.detach().numpy() if that is meant"
            )
        return self._device.backend.share_with_numpy(self._array)

    def _host(self) -> Any:
        """The values as a NumPy array, whether or not the tensor requires grad."""
        return self._device.backend.to_numpy(self._array)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        host = self.numpy()
        if dtype is not None:
            host = host.astype(dtype)
        elif copy:
            host = host.copy()
        return host

    def item(self) -> bool | int | float | complex:
        """Return the value of a one-element tensor as a Python scalar."""
        if self.size != 1:
            raise ShapeError(
                f"item() needs a tensor with exactly one element, but this one has shape "
                f"{self.shape}; index or reduce it first (e.g. x.sum().item())"
            )
        return self._host().reshape(()).item()

    def tolist(self) -> Any:
        """Return the values as (nested) Python lists of Python scalars."""
        return self._host().tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ShapeError(
                f"the truth value of a tensor with shape {self.shape} is ambiguous; "
                "use plugrad.all(x) or plugrad.any(x), or compare one element"
            )
        return bool(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in ("signed integer", "unsigned integer", "bool"):
            raise DtypeError(f"only integer tensors can be used as an index, not {self.dtype.name}")
        return int(self.item())

    def __len__(self) -> int:
        if not self._array.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self._array.shape[0]

    def __repr__(self) -> str:
        device = self._device
        dtype = self.dtype
        suffixes = []
        if dtype not in _UNSHOWN_DTYPES:
            suffixes.append(f"dtype={dtype!r}")
        if device.name != "numpy":
            suffixes.append(f"device={device.name!r}")
        if self._edge is not None:
            suffixes.append(f"grad_fn={self.grad_fn!r}")
        elif self._requires_grad:
            suffixes.append("requires_grad=True")
        host = device.backend.to_numpy(self._array)
        return _printing.format_tensor(host, self.shape, _PRINT_KINDS[dtype.kind], suffixes)

    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        """Return ``plugrad``, the Array API namespace of tensors.

        Examples
        --------
        >>> import plugrad
        >>> plugrad.ones(2).__array_namespace__() is plugrad
        True
        """
        if api_version is not None and api_version not in SUPPORTED_API_VERSIONS:
            raise ValueError(
                f"plugrad implements Array API versions {', '.join(SUPPORTED_API_VERSIONS)}; "
                f"got api_version={api_version!r}"
            )
        return sys.modules["plugrad"]

    def cpu(self) -> Tensor:
        """Return the tensor on the CPU (the NumPy backend); itself if it is there."""
        return self.to("cpu")

    def cuda(self, device: Device | int | str | None = None) -> Tensor:
        """Return the tensor on a GPU (``"cuda"``, or ``"cuda:N"`` for ``device=N``).

        Raises :class:`~plugrad.errors.BackendUnavailableError` where no GPU backend can run.
        """
        if device is None:
            device = "cuda"
        elif isinstance(device, int) and not isinstance(device, bool):
            device = f"cuda:{device}"
        return self.to(device)


def _to_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, bool]:
    """(device, dtype, copy) from the ways ``Tensor.to`` may be called."""
    unknown = set(kwargs) - {"device", "dtype", "copy", "non_blocking", "memory_format"}
    if unknown:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(unknown)}")
    device = kwargs.get("device")
    dtype = kwargs.get("dtype")
    copy = kwargs.get("copy", False)
    from .tensor import Tensor  # the class this module is a base of

    positional = list(args)
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
        raise TypeError(
            f"to() takes a device, a dtype, both (device first) or another tensor; "
            f"could not use {positional!r}"
        )
    if dtype is not None and not isinstance(dtype, _dtypes.DType):
        raise DtypeError(
            f"to(): dtype must be a plugrad dtype such as plugrad.float32, got {dtype!r}"
        )
    return device, dtype, copy
