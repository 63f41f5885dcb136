"""``plugrad.cuda``: whether NVIDIA GPUs can be used, as ``torch.cuda`` answers it.

The GPU backend is CuPy's. These functions never import CuPy when it is not installed.
"""

from __future__ import annotations

import secrets

from . import amp, registry
from .backend import Device
from .devices import _GPU_BACKEND, _gpu_unavailable_reason, device_count, is_available, resolve
from .errors import ArgumentError, BackendUnavailableError, InvalidArgumentError
from .random import Generator, _default_generators

__all__ = [
    "amp",
    "current_device",
    "device_count",
    "empty_cache",
    "is_available",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "synchronize",
]
# PyTorch's older torch.cuda.amp.GradScaler and torch.cuda.amp.autocast: plugrad.amp's.


def manual_seed(seed: int) -> None:
    """Seed the default generator of the current GPU; without one, do nothing (PyTorch's).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.cuda.manual_seed(0)  # the usual seeding lines run on any machine
    >>> plugrad.cuda.manual_seed_all(0)
    """
    _seed_gpus(seed, every=False)


def manual_seed_all(seed: int) -> None:
    """Seed the default generator of every GPU; without one, do nothing (PyTorch's)."""
    _seed_gpus(seed, every=True)


def seed() -> None:
    """Seed the current GPU's default generator from the operating system's entropy."""
    _seed_gpus(secrets.randbits(63), every=False)


def seed_all() -> None:
    """Seed every GPU's default generator from the operating system's entropy."""
    _seed_gpus(secrets.randbits(63), every=True)


def _seed_gpus(seed: int, *, every: bool) -> None:
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise InvalidArgumentError(f"seed must be a non-negative int, got {seed!r}")
    if not is_available():
        return
    backend = registry.get_backend(_GPU_BACKEND)
    devices = registry.devices_of(backend)
    if not every:
        devices = (registry.resolve_device(_GPU_BACKEND),)
    for device in devices:
        _default_generators[device] = Generator(seed, device)


def empty_cache() -> None:
    """Hand the memory that the backends in use keep for reuse (blocks no array holds:
    CuPy's pools, PyTorch's CUDA cache) back to their devices; without any, do nothing
    (PyTorch's).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.cuda.empty_cache()  # runs on any machine
    """
    for backend in registry.backends_in_use():
        backend.release_cached_memory()


def synchronize(device: Device | str | int | None = None) -> None:
    """Wait until all work queued on a GPU (the current one by default) has finished, as
    PyTorch's: GPU work runs asynchronously, so a timer read before this measures only the
    launches.

    Without a usable GPU this raises a
    :class:`~plugrad.errors.BackendUnavailableError` saying why (PyTorch's raises too):
    guard it with :func:`is_available`.

    Examples
    --------
    >>> import plugrad
    >>> if plugrad.cuda.is_available():
    ...     plugrad.cuda.synchronize()
    """
    gpu = _gpu("synchronize", device)
    gpu.backend.synchronize(gpu.native)


def current_device() -> int:
    """The index of the current GPU (PyTorch's); without a usable GPU a
    :class:`~plugrad.errors.BackendUnavailableError`."""
    index = _gpu("current_device", None).index
    return 0 if index is None else index


def _gpu(function: str, device: Device | str | int | None) -> Device:
    """The GPU ``device`` names (the current one for ``None``, ``cuda:N`` for an int)."""
    reason = _gpu_unavailable_reason()
    if reason is not None:
        raise BackendUnavailableError(
            f"plugrad.cuda.{function}(): no CUDA GPU can be used here ({reason}); guard the "
            "call with plugrad.cuda.is_available()"
        )
    if device is None:
        device = "cuda"
    elif isinstance(device, int) and not isinstance(device, bool):
        device = f"cuda:{device}"
    elif not isinstance(device, (str, Device)):
        raise ArgumentError(
            f"plugrad.cuda.{function}() takes a device, a device string or an index, got "
            f"{type(device).__name__}"
        )
    gpu = resolve(device)
    if gpu.backend.name != _GPU_BACKEND:
        raise ArgumentError(
            f"plugrad.cuda.{function}(): {gpu.name!r} is not a CUDA GPU; give 'cuda' or 'cuda:N'"
        )
    return gpu
