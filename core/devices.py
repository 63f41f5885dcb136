"""PyTorch's device names: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` and ``plugrad.device(...)``.

plugrad names devices after backends (``"numpy"``, ``"cupy:1"``). Code written
for PyTorch names them after the hardware; this module translates: ``"cpu"``
is the NumPy backend and ``"cuda"``/``"cuda:N"`` the CuPy backend (NVIDIA GPUs).
Every function that takes ``device=`` goes through :func:`resolve`.
"""

from __future__ import annotations

import importlib.util

from . import registry
from .backend import Backend, Device
from .errors import (
    ArgumentError,
    BackendUnavailableError,
    InvalidArgumentError,
    UnknownBackendError,
)

__all__ = ["device", "device_count", "is_available", "resolve"]

_CPU_BACKEND = "numpy"
_GPU_BACKEND = "cupy"


def _backend_name(spec: str) -> str:
    """``spec`` with a PyTorch device type replaced by the backend that provides it."""
    kind, colon, index = spec.partition(":")
    if kind == "cpu":
        if index not in ("", "0"):
            raise UnknownBackendError(
                f"device {spec!r}: there is one CPU device; use 'cpu' (the NumPy backend)"
            )
        return _CPU_BACKEND
    if kind == "cuda":
        reason = _gpu_unavailable_reason()
        if reason is not None:
            raise BackendUnavailableError(
                f"device {spec!r} needs the CuPy backend, which cannot run here: {reason}. "
                "Use device='cpu' instead, or check plugrad.cuda.is_available() first."
            )
        return f"{_GPU_BACKEND}{colon}{index}"
    return spec


def resolve(spec: Device | Backend | str | None) -> Device:
    """Return the :class:`~plugrad.backend.Device` named by ``spec``.

    ``spec`` is ``None`` (the default device), a backend name (``"numpy"``),
    ``"name:index"``, PyTorch's ``"cpu"``, ``"cuda"`` or ``"cuda:N"``, a
    :class:`~plugrad.backend.Device` or a :class:`~plugrad.backend.Backend`.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.devices import resolve
    >>> resolve("cpu") is resolve("numpy")
    True
    """
    if isinstance(spec, str):
        spec = _backend_name(spec)
    return registry.resolve_device(spec)


def device(type: str | Device, index: int | None = None) -> Device:
    """Return the device named ``type`` (and ``index``), as ``torch.device`` does.

    Parameters
    ----------
    type : str or Device
        ``"cpu"``, ``"cuda"``, ``"cuda:1"``, or a plugrad backend name
        (``"numpy"``, ``"cupy:1"``, ...). A Device is returned as it is.
    index : int, optional
        The device index, for a type without one (``device("cuda", 1)``).

    Returns
    -------
    Device
        The one :class:`~plugrad.backend.Device` object for that device, so
        ``x.device == plugrad.device("cpu")`` compares as expected. It has
        PyTorch's ``type`` (``"cpu"``, ``"cuda"``, or the backend name) and
        ``index`` (``None`` on a single-device backend).

    Raises
    ------
    plugrad.errors.BackendUnavailableError
        ``"cuda"`` was asked for but CuPy or a GPU is missing.

    Examples
    --------
    >>> import plugrad
    >>> d = plugrad.device("cpu")
    >>> d.type, d.index
    ('cpu', None)
    >>> plugrad.zeros(2, device=d).device == d
    True
    """
    if isinstance(type, Device):
        if index is not None:
            raise ArgumentError("device(d, index): give an index only with a device type string")
        return type
    if not isinstance(type, str):
        raise ArgumentError(f"device() takes a string such as 'cpu' or 'cuda:0', got {type!r}")
    if index is not None:
        if ":" in type:
            raise InvalidArgumentError(f"device({type!r}, {index}): the index is given twice")
        if not isinstance(index, int) or index < 0:
            raise InvalidArgumentError(f"a device index is a non-negative int, got {index!r}")
        type = f"{type}:{index}"
    return resolve(type)


def _gpu_unavailable_reason() -> str | None:
    """Why the GPU backend cannot run here, without importing CuPy when it is not installed."""
    if importlib.util.find_spec("cupy") is None:
        return "cupy is not installed (pip install '.[cuda]' from a checkout; needs an NVIDIA GPU)"
    return registry.backend_status(_GPU_BACKEND)


def is_available() -> bool:
    """Return whether a CUDA GPU can be used (CuPy installed and a GPU visible).

    CuPy is not imported when it is not installed.

    Examples
    --------
    >>> import plugrad
    >>> isinstance(plugrad.cuda.is_available(), bool)
    True
    """
    return _gpu_unavailable_reason() is None


def device_count() -> int:
    """Return how many CUDA GPUs plugrad can use (0 without CuPy or a GPU).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.cuda.device_count() >= 0
    True
    """
    if not is_available():
        return 0
    return len(registry.devices_of(registry.get_backend(_GPU_BACKEND)))
