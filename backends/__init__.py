"""Backends: where tensors live; each is a pluggy plugin returning a ``Backend``.

plugrad ships ``numpy`` (the default), ``cupy`` (NVIDIA GPUs; the ``cuda`` extra,
``pip install '.[cuda]'`` from a checkout), ``torch``, ``jax`` and ``dask`` (each
active when its library is installed: the ``torch``, ``jax`` and ``dask`` extras) and
``array_api_strict`` (the bare standard, for testing).
Third-party packages add more through the ``plugrad`` entry-point group.
The communication libraries of :mod:`plugrad.distributed` (``mpi`` through
mpi4py, ``nccl`` through CuPy) are plugins of the same kind. :mod:`.cudnn` holds
PyTorch's ``torch.backends.cudnn`` switches, for code that sets them, :mod:`.cuda`
those of ``torch.backends.cuda`` (``matmul.allow_tf32``, ``enable_flash_sdp``), and
:mod:`.mps` the answers to ``torch.backends.mps.is_available()``, for code that picks
its device.
"""

from __future__ import annotations

from plugrad import registry
from plugrad.plugin_manager import BUILTIN_BACKENDS, BUILTIN_COMMUNICATORS

from . import cuda, cudnn, mps

__all__ = ["BUILTIN_BACKENDS", "BUILTIN_COMMUNICATORS", "available", "cuda", "cudnn", "mps"]


def available() -> tuple[str, ...]:
    """Names of the backends that can run on this machine.

    Each available backend is activated to make sure (its library imported).
    :func:`plugrad.plugins.list_backends` lists every registered backend with
    the reason it is unavailable, without importing anything.

    Examples
    --------
    >>> import plugrad
    >>> "numpy" in plugrad.backends.available()
    True
    """
    return tuple(name for name in registry.backend_names() if registry.backend_status(name) is None)
