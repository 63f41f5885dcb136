"""The CuPy backend: NVIDIA GPUs, one plugrad device per GPU (``cupy:0``, ``cupy:1``, ...).

CuPy is imported only when the backend is first used, so ``import plugrad``
never initialises CUDA. Install it with ``pip install '.[cuda]'`` from a checkout.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from plugrad.backend import Backend, missing_library
from plugrad.backends._first_use import imported_on_first_use
from plugrad.creation import dlpack_exportable
from plugrad.errors import DeviceGraphError, InvalidArgumentError
from plugrad.hookspecs import hookimpl

__all__ = ["CupyBackend", "plugrad_backends"]

_DLPACK_CUDA = 2


_cupy = imported_on_first_use("cupy")


class CupyRandom:
    """CuPy's default generator, creating numbers on one GPU."""

    __slots__ = ("_device", "_rng")

    def __init__(self, seed: int | None, device: Any) -> None:
        self._device = device
        with device:
            self._rng = _cupy().random.default_rng(seed)

    def normal(self, shape: tuple[int, ...], dtype: Any) -> Any:
        with self._device:
            if np.dtype(dtype).itemsize >= 4:
                return self._rng.standard_normal(shape, dtype=dtype)
            return self._rng.standard_normal(shape, dtype=np.float32).astype(dtype)

    def uniform(self, shape: tuple[int, ...], dtype: Any) -> Any:
        with self._device:
            if np.dtype(dtype).itemsize >= 4:
                return self._rng.random(shape, dtype=dtype)
            cupy = _cupy()
            # float16: the multiples of 2**-11 below 1, each as likely (see NumpyRandom).
            sample = self._rng.random(shape, dtype=np.float32)
            return (cupy.floor(sample * 2048) / 2048).astype(dtype)


class CupyBackend(Backend):
    """CuPy arrays on NVIDIA GPUs, through array-api-compat's CuPy namespace."""

    name = "cupy"

    def unavailable_reason(self) -> str | None:
        missing = missing_library(
            "cupy", install="pip install '.[cuda]' from a checkout; needs an NVIDIA GPU"
        )
        if missing is not None:
            return missing
        try:
            count = _cupy().cuda.runtime.getDeviceCount()
        except Exception as exc:  # CUDA driver or runtime missing
            return f"cupy is installed but cannot reach a GPU ({type(exc).__name__}: {exc})"
        return None if count else "cupy is installed but no CUDA device is visible"

    def namespace(self) -> Any:
        from plugrad.backends import cupy_namespace

        return cupy_namespace

    def may_share_memory(self, array: Any, other: Any) -> bool:
        return bool(_cupy().may_share_memory(array, other))

    def repeats_elements(self, array: Any) -> bool:
        # CuPy writes a broadcast view (stride 0) without complaint: one element, many times.
        return any(step == 0 and size > 1 for step, size in zip(array.strides, array.shape))

    def write(self, array: Any, values: Any) -> Any:
        if self.repeats_elements(array):
            raise InvalidArgumentError(
                "the array is a broadcast view: it shows one element in several places"
            )
        array[...] = values
        return array

    def array_types(self) -> tuple[type, ...]:
        return (_cupy().ndarray,)

    def devices(self) -> tuple[Any, ...]:
        cupy = _cupy()
        return tuple(cupy.cuda.Device(i) for i in range(cupy.cuda.runtime.getDeviceCount()))

    def device_of(self, array: Any) -> Any:
        return array.device

    def device_context(self, device: Any) -> Any:
        return device  # a cupy.cuda.Device is a context manager that makes it current

    def dlpack_device(self, device: Any) -> tuple[int, int]:
        return (_DLPACK_CUDA, device.id)

    def from_dlpack(self, obj: Any, device: Any) -> Any:
        with device:
            return _cupy().from_dlpack(dlpack_exportable(obj))

    def from_host(self, host: Any, device: Any) -> Any:
        with device:
            return _cupy().array(host, copy=True)

    def copy_to_device(self, array: Any, device: Any) -> Any:
        with device:
            return _cupy().array(array, copy=True)

    def to_numpy(self, array: Any) -> np.ndarray:
        return _cupy().asnumpy(array)

    def synchronize(self, device: Any) -> None:
        device.synchronize()

    def release_cached_memory(self) -> None:
        cupy = _cupy()
        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()

    def random_source(self, seed: int | None, device: Any) -> CupyRandom:
        return CupyRandom(seed, device)

    def graph_recorder(self, device: Any) -> Any:
        return functools.partial(_record_cuda_graph, device)


def _record_cuda_graph(device: Any, work: Any) -> Any:
    """Record the kernels ``work`` launches as a CUDA graph, launch it once, return its launch.

    The capture runs on a stream of its own (the legacy default stream cannot
    be captured), allocating from a memory pool of its own that lives as long
    as the graph: memory freed inside the capture is reused inside it, and
    never by anything else, which would be overwritten at the next launch.
    CuPy refuses some libraries' calls inside a recording (cuBLAS's matrix products,
    cuSOLVER, cuRAND): then :class:`~plugrad.errors.DeviceGraphError` says which, and
    the plan replays without a graph.
    """
    cupy = _cupy()
    pool = cupy.cuda.MemoryPool()
    stream = cupy.cuda.Stream(non_blocking=True)
    with device:
        caller = cupy.cuda.get_current_stream()
        stream.wait_event(caller.record())  # the inputs are copied on the caller's stream
        with cupy.cuda.using_allocator(pool.malloc), stream:
            stream.begin_capture()
            try:
                work()
            except (NotImplementedError, cupy.cuda.runtime.CUDARuntimeError) as exc:
                _end_failed_capture(stream)
                raise DeviceGraphError(f"CuPy cannot record it as a CUDA graph: {exc}") from exc
            except BaseException:
                _end_failed_capture(stream)
                raise
            graph = stream.end_capture()

    def launch() -> None:
        with device:
            current = cupy.cuda.get_current_stream()
            stream.wait_event(current.record())
            graph.launch(stream)
            current.wait_event(stream.record())

    launch.pool = pool  # type: ignore[attr-defined]  # lives as long as the graph
    launch()
    return launch


def _end_failed_capture(stream: Any) -> None:
    """End a recording that failed, so the stream takes work again; what it recorded is dropped."""
    try:
        stream.end_capture()
    except _cupy().cuda.runtime.CUDARuntimeError:
        pass  # an invalidated capture ends with an error of its own; the first one is raised


@hookimpl
def plugrad_backends() -> list[Backend]:
    return [CupyBackend()]
