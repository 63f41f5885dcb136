"""How a Tensor meets the world outside autograd: devices, host values, DLPack, printing.

:class:`TensorInterop` is a base of :class:`~plugrad.Tensor`; its methods never
record on the graph (except ``to``, whose dtype change is the ``astype`` op).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from . import dtypes as _dtypes
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

    if TYPE_CHECKING:
        # Installed by plugrad.transfer, which moves data between devices.
        def to(self, *args: Any, **kwargs: Any) -> Tensor: ...
        def to_device(self, device: Device | Backend | str, /, *, stream: Any = None) -> Tensor: ...

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
