"""The PyTorch backend: plugrad's engine on ``torch.Tensor`` data (PyTorch's autograd stays off).

Devices are the ones PyTorch really has here: ``torch:cpu`` always,
``torch:cuda:0``, ``torch:cuda:1``, ... for each visible CUDA GPU, and
``torch:mps`` on Apple silicon. Install with ``pip install '.[torch]'`` from a checkout;
PyTorch is imported only when the backend is first used.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from plugrad.backend import Backend, missing_library
from plugrad.backends._first_use import imported_on_first_use
from plugrad.creation import dlpack_exportable
from plugrad.errors import DtypeError
from plugrad.hookspecs import hookimpl

__all__ = ["TorchBackend", "TorchRandom", "plugrad_backends", "scatter_add"]

_DLPACK_CPU = (1, 0)
_DLPACK_CUDA = 2


_torch = imported_on_first_use("torch")


class TorchRandom:
    """A seeded ``torch.Generator`` on one device."""

    __slots__ = ("_device", "_generator")

    def __init__(self, seed: int | None, device: Any) -> None:
        torch = _torch()
        self._device = device
        self._generator = torch.Generator(device=device)
        if seed is None:
            self._generator.seed()
        else:
            self._generator.manual_seed(seed)

    def normal(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return _torch().randn(shape, generator=self._generator, dtype=dtype, device=self._device)

    def uniform(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return _torch().rand(shape, generator=self._generator, dtype=dtype, device=self._device)

    def get_state(self) -> list[int]:
        """The ``torch.Generator``'s state, its bytes as a list of ints (JSON can hold it)."""
        return self._generator.get_state().tolist()

    def set_state(self, state: Any) -> None:
        self._generator.set_state(_torch().tensor(state, dtype=_torch().uint8))


def scatter_add(xp: Any, values: Any, /, *, key: Any, shape: tuple[int, ...]) -> Any:
    """plugrad's ``scatter_add`` (the gradient of indexing) with ``Tensor.index_add_``.

    The flat position of every element ``key`` selects comes from plugrad's
    generic ``getitem`` kernel (any NumPy-style key, negative steps included,
    which PyTorch's own indexing lacks); ``index_add_`` then adds the values in
    one pass, accumulating repeated positions.
    """
    torch = _torch()
    from plugrad.plugins.indexing import getitem

    size = math.prod(shape)
    positions = getitem.kernel(xp, torch.arange(size, device=values.device).reshape(shape), key=key)
    flat_values = torch.broadcast_to(values, positions.shape).reshape(-1)
    # float16 adds up in float32, rounded once (index_add_ adds in float16 one value at a time).
    wide = torch.float32 if values.dtype == torch.float16 else values.dtype
    out = torch.zeros(size, dtype=wide, device=values.device)
    out.index_add_(0, positions.reshape(-1), flat_values.to(wide))
    return out.reshape(shape).to(values.dtype)


def positive(xp: Any, x: Any, /) -> Any:
    """``+x`` as new memory: PyTorch's ``positive`` returns ``x`` itself, which ``clone`` and
    every op computing through it would hand back as an alias of their input."""
    out = xp.positive(x)
    return out.clone() if out is x else out


def conj(xp: Any, x: Any, /) -> Any:
    """The conjugate as new memory (plugrad's ``conj`` is a copy on every backend): PyTorch's
    is ``x`` itself for real ``x``, and a view with a conjugate bit for complex ``x``."""
    return xp.conj(x).resolve_conj() if x.is_complex() else x.clone()  # resolving copies


def _complex_operand(x1: Any, x2: Any) -> bool:
    return any(
        isinstance(x, complex) or (not isinstance(x, (bool, int, float)) and x.is_complex())
        for x in (x1, x2)
    )


def _by_parts(function: Any, xp: Any, x1: Any, x2: Any) -> Any:
    """``function`` of the real and of the imaginary parts, as one complex result."""
    torch = _torch()
    dtype = xp.result_type(x1, x2)
    device = next(x.device for x in (x1, x2) if isinstance(x, torch.Tensor))
    parts = [
        torch.view_as_real(torch.as_tensor(x, dtype=dtype, device=device).resolve_conj())
        for x in (x1, x2)
    ]
    return torch.view_as_complex(function(*parts).contiguous())


def add(xp: Any, x1: Any, x2: Any, /) -> Any:
    """``x1 + x2``, complex numbers part by part: PyTorch's complex add computes
    ``x1 + 1 * x2`` in complex arithmetic, where ``1 * (0 + inf j)`` is ``nan + inf j``
    (``1 + (0 + inf j)`` gave ``nan + inf j``)."""
    if _complex_operand(x1, x2):
        return _by_parts(xp.add, xp, x1, x2)
    return xp.add(x1, x2)


def subtract(xp: Any, x1: Any, x2: Any, /) -> Any:
    """``x1 - x2``, complex numbers part by part (see :func:`add`)."""
    if _complex_operand(x1, x2):
        return _by_parts(xp.subtract, xp, x1, x2)
    return xp.subtract(x1, x2)


class TorchBackend(Backend):
    """PyTorch tensors on the CPU, CUDA GPUs and Apple's MPS, through ``array_api_compat.torch``."""

    name = "torch"
    library = "torch"

    def unavailable_reason(self) -> str | None:
        return missing_library("torch", install="pip install '.[torch]' from a checkout")

    def namespace(self) -> Any:
        import array_api_compat.torch

        return array_api_compat.torch

    def array_types(self) -> tuple[type, ...]:
        return (_torch().Tensor,)

    def may_share_memory(self, array: Any, other: Any) -> bool:
        storage = array.untyped_storage()
        return bool(storage.data_ptr() == other.untyped_storage().data_ptr() and storage.nbytes())

    def devices(self) -> tuple[Any, ...]:
        torch = _torch()
        found = [torch.device("cpu")]
        if torch.cuda.is_available():
            found += [torch.device("cuda", index) for index in range(torch.cuda.device_count())]
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            found.append(torch.device("mps"))
        return tuple(found)

    def device_names(self, devices: Sequence[Any]) -> list[str]:
        return [
            f"torch:{device.type}"
            if device.index is None
            else f"torch:{device.type}:{device.index}"
            for device in devices
        ]

    def device_of(self, array: Any) -> Any:
        device = array.device
        # The engine asks this of every gradient on a machine with a GPU: the cheap tests
        # first (reading ``device.type`` costs several times as much as ``index``).
        if device.index is None and array.is_cuda:
            return _torch().device("cuda", _torch().cuda.current_device())
        return device

    def device_context(self, device: Any) -> Any:
        if device.type == "cuda":
            return _torch().cuda.device(device)
        return super().device_context(device)

    def dlpack_device(self, device: Any) -> tuple[int, int] | None:
        if device.type == "cpu":
            return _DLPACK_CPU
        if device.type == "cuda":
            return (_DLPACK_CUDA, device.index)
        return None  # MPS memory is not exchanged through DLPack

    def from_dlpack(self, obj: Any, device: Any) -> Any:
        torch = _torch()
        obj = dlpack_exportable(obj)
        if device.type == "cpu":
            host = np.from_dlpack(obj)
            if any(stride < 0 for stride in host.strides):
                # NOTE: torch cannot view memory with negative strides (x[::-1] in NumPy),
                # and its from_dlpack aborts the process on it: copy instead.
                return torch.from_numpy(np.ascontiguousarray(host))
            if not host.flags.writeable:
                # A read-only NumPy array (e.g. a plugrad tensor's .numpy() view) cannot be
                # shared with torch, whose tensors are always writable: copy it.
                return torch.from_numpy(host.copy())
            return torch.from_dlpack(host)
        return torch.from_dlpack(obj)

    def from_host(self, host: Any, device: Any) -> Any:
        return _torch().tensor(np.array(host), device=device)

    def copy_to_device(self, array: Any, device: Any) -> Any:
        return array.to(device, copy=True)

    def strides(self, array: Any) -> tuple[int, ...]:
        return tuple(array.stride())

    def to_numpy(self, array: Any) -> np.ndarray:
        return _numpy(array, shared=False)

    def share_with_numpy(self, array: Any) -> np.ndarray:
        # PyTorch's own x.numpy(): writable, the tensor's memory on the CPU (it was a
        # read-only view, neither the shared array nor a copy)
        return _numpy(array, shared=True)

    def data_pointer(self, array: Any) -> int | None:
        return int(array.data_ptr())

    def release_cached_memory(self) -> None:
        torch = _torch()
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()

    def synchronize(self, device: Any) -> None:
        torch = _torch()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        elif device.type == "mps":
            torch.mps.synchronize()

    def random_source(self, seed: int | None, device: Any) -> TorchRandom:
        return TorchRandom(seed, device)

    def kernels(self) -> Mapping[str, Callable[..., Any]]:
        from plugrad.plugins._rules import extrema_refusing_empty_axes

        # max/min/argmax/argmin: PyTorch's raise a RuntimeError over an axis of length 0.
        kernels = {
            "add": add,
            "conj": conj,
            "positive": positive,
            "scatter_add": scatter_add,
            "subtract": subtract,
        }
        return {**kernels, **extrema_refusing_empty_axes()}


@hookimpl
def plugrad_backends() -> list[Backend]:
    return [TorchBackend()]


def _numpy(array: Any, *, shared: bool) -> np.ndarray:
    """A tensor's values as a NumPy array: on the CPU its memory (read-only unless
    ``shared``), from any other device a copy."""
    array = array.detach()
    if array.dtype is _torch().bfloat16:
        return _bfloat16_numpy(array, shared=shared)
    if array.device.type != "cpu":
        return array.cpu().numpy()
    return _read_only_unless(shared, array.resolve_conj().resolve_neg().numpy())


def _read_only_unless(shared: bool, host: np.ndarray) -> np.ndarray:
    """``host`` itself where ``shared``, else a read-only view of it."""
    if shared:
        return host
    view = host.view()
    view.flags.writeable = False  # writing through it would bypass autograd
    return view


def _bfloat16_numpy(array: Any, *, shared: bool) -> np.ndarray:
    """A bfloat16 tensor's values as a NumPy array of ml_dtypes' bfloat16 (NumPy has no
    bfloat16, and PyTorch's own ``x.numpy()`` refuses one): its memory where ``shared``
    and on the CPU, else read-only."""
    torch = _torch()
    try:
        import ml_dtypes
    except ImportError:
        if shared:
            raise DtypeError(
                "x.numpy() of a bfloat16 tensor needs ml_dtypes for NumPy's bfloat16 (pip "
                "install ml_dtypes); or take x.float().numpy() (float32 holds every value)"
            ) from None
        return array.float().cpu().numpy()  # (item(), tolist(), printing: the same values)
    host = array.cpu().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return _read_only_unless(shared, host)
