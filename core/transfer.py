"""Moving tensors between devices and backends, and DLPack exchange.

Moves are explicit (``x.to("cupy")``); an operation never copies for you.
Between two libraries whose devices share memory (numpy and torch on the
CPU, cupy and torch on one GPU) data moves through DLPack without a copy;
otherwise it goes through host memory. ``to()`` is differentiable: the
gradient moves back to the source device.
"""

from __future__ import annotations

from typing import Any

from . import registry
from .backend import Backend, Device
from .errors import BackendUnavailableError
from .grad_mode import _state
from .graph import Node
from .tensor import Tensor, _object_new, _wrap

__all__ = ["from_dlpack", "move_array", "to_device"]


def move_array(array: Any, source: Device, target: Device) -> Any:
    """Return ``array`` (living on ``source``) as an array on ``target``."""
    if source is target:
        return array
    if source.backend is target.backend:
        return source.backend.copy_to_device(array, target.native)
    shared = source.backend.dlpack_device(source.native)
    if (
        shared is not None
        and hasattr(array, "__dlpack__")  # NumPy scalars, for one, have none
        and shared == target.backend.dlpack_device(target.native)
    ):
        try:
            return target.backend.from_dlpack(array, target.native)
        except BufferError:
            # The exporter refused this array (e.g. NumPy's read-only views of JAX
            # buffers, which DLPack before 1.0 cannot flag): copy through the host.
            pass
    return target.backend.from_host(source.backend.to_numpy(array), target.native)


class ToDeviceBackward(Node):
    """Backward of :meth:`Tensor.to`: moves the gradient back to the source device."""

    __slots__ = ("_source",)
    _source: Device

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        if create_graph:
            return (to_device(grad, self._source),)
        return (move_array(grad, self._device, self._source),)

    def _release(self) -> None:
        """Nothing is saved for backward."""


def to_device(x: Tensor, device: Device | Backend | str) -> Tensor:
    """Return ``x`` on ``device`` (``x`` itself if it is already there); differentiable."""
    target = registry.resolve_device(device)
    source = x._device
    if target is source:
        return x
    array = move_array(x._array, source, target)
    if x._requires_grad and _state.enabled:
        node = _object_new(ToDeviceBackward)
        node._device = target
        node._hooks = None
        node._source = source
        node._edges = (x._edge or x,)
        return _wrap(array, target, True, node)
    return _wrap(array, target, False, None)


def from_dlpack(
    x: Any, /, *, device: Device | Backend | str | None = None, copy: bool | None = None
) -> Tensor:
    """Make a tensor from any object supporting DLPack (numpy, cupy, torch, jax arrays...).

    Without ``copy=True`` the tensor shares memory with ``x``.

    Parameters
    ----------
    x : object with ``__dlpack__``
    device : str or Device, optional
        Which backend to wrap the memory with; by default the default device if
        it sits on the same hardware as ``x``, else the first available backend
        that does.
    copy : bool, optional
        ``True`` to copy instead of sharing memory.

    Examples
    --------
    >>> import numpy as np
    >>> import plugrad
    >>> a = np.arange(3.0)
    >>> t = plugrad.from_dlpack(a)
    >>> a[0] = 7.0
    >>> t
    tensor([7., 1., 2.], dtype=plugrad.float64)
    """
    if isinstance(x, Tensor):
        x = x._array
    if not hasattr(x, "__dlpack__"):
        raise TypeError(
            f"from_dlpack() needs an object with __dlpack__ (an array of numpy, cupy, torch, "
            f"jax...), got a {type(x).__name__}; use plugrad.asarray() for Python data"
        )
    target = registry.resolve_device(device) if device is not None else _dlpack_target(x)
    array = target.backend.from_dlpack(x, target.native)
    if copy:
        array = target.xp.asarray(array, copy=True)
    return _wrap(array, target, False, None)


def _dlpack_target(x: Any) -> Device:
    where = tuple(x.__dlpack_device__())
    default = registry.default_device()
    candidates = [default] + [
        registry.resolve_device(name)
        for name in registry.backend_names()
        if name != default.backend.name and registry.backend_status(name) is None
    ]
    for device in candidates:
        for candidate in registry.devices_of(device.backend):
            if candidate.backend.dlpack_device(candidate.native) == where:
                return candidate
    raise BackendUnavailableError(
        f"no available backend can hold memory on DLPack device {where}; install the "
        "library for that hardware (e.g. pip install '.[cuda]' from a checkout, for CUDA memory)"
    )
