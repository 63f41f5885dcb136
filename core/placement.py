"""Choosing where new tensors are created: for the process, or for a scope.

Operations always run where their inputs live; the default device only
decides where *new* tensors go (``plugrad.tensor``, ``plugrad.zeros``, ...).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from . import registry
from .backend import Backend, Device
from .devices import resolve

__all__ = [
    "default_device",
    "get_default_device",
    "set_backend",
    "set_default_device",
    "use_backend",
]

DeviceSpec = Device | Backend | str


def default_device() -> Device:
    """Return the device new tensors are created on when none is given.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.default_device()
    device('numpy')
    """
    return registry.default_device()


def get_default_device() -> Device:
    """PyTorch's name for :func:`default_device`: where new tensors go when none is given.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.get_default_device().type
    'cpu'
    """
    return registry.default_device()


def set_backend(device: DeviceSpec) -> None:
    """Make ``device`` the process-wide default for new tensors.

    Parameters
    ----------
    device : str, Device or Backend
        A backend name (``"numpy"``, ``"cupy"``), a device (``"cupy:1"``), or a
        :class:`~plugrad.backend.Device`. The environment variable
        ``PLUGRAD_BACKEND`` sets the same default at import.

    Raises
    ------
    plugrad.errors.UnknownBackendError
        No such backend is registered (the message lists those that are).
    plugrad.errors.BackendUnavailableError
        The backend is registered but cannot run here (the message says why).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.set_backend("numpy")
    >>> plugrad.zeros(2).device
    device('numpy')
    """
    registry.set_default_device(resolve(device))


def set_default_device(device: DeviceSpec | None) -> None:
    """PyTorch's name for :func:`set_backend`: new tensors go to ``device`` (``"cpu"``, ``"cuda"``).

    ``None`` restores the CPU (the NumPy backend).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.set_default_device("cpu")
    >>> plugrad.zeros(2).device.type
    'cpu'
    """
    set_backend("cpu" if device is None else device)


@contextlib.contextmanager
def use_backend(device: DeviceSpec) -> Iterator[Device]:
    """Create new tensors on ``device`` inside a ``with`` block.

    The choice is local to the current thread (and asyncio task), so threads
    can use different backends at once. On libraries with a "current device"
    (cupy), the block also makes ``device`` current.

    Examples
    --------
    >>> import plugrad
    >>> with plugrad.use_backend("numpy") as device:
    ...     x = plugrad.ones(3)
    >>> x.device is device
    True
    """
    target = resolve(device)
    token = registry.scoped_default_device.set(target)
    try:
        with target.backend.device_context(target.native):
            yield target
    finally:
        registry.scoped_default_device.reset(token)
