"""``DataParallel``, PyTorch's single-process wrapper, on one device."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from ...errors import ArgumentError
from ..module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """PyTorch's ``DataParallel`` on one device: ``module`` runs as it is, where its
    parameters are.

    The wrapper keeps PyTorch's shape (``.module``; state dict keys ``module.*``),
    so code and checkpoints written for it work; on a machine without GPUs PyTorch's
    does the same. plugrad does not split a batch over several GPUs in one process:
    :class:`DistributedDataParallel` runs one process per device. Naming more than one
    device in ``device_ids`` warns that only the module's own device computes.

    Parameters
    ----------
    module : Module
        The module to call.
    device_ids, output_device, dim
        PyTorch's; kept as attributes. The module is not moved: move it with
        ``.to(device)`` first, as a one-device ``DataParallel`` would.

    Examples
    --------
    >>> import plugrad
    >>> model = plugrad.nn.DataParallel(plugrad.nn.Linear(3, 2))
    >>> model(plugrad.ones(4, 3)).shape
    (4, 2)
    >>> sorted(model.state_dict())
    ['module.bias', 'module.weight']
    """

    def __init__(
        self,
        module: Module,
        device_ids: Sequence[Any] | None = None,
        output_device: Any = None,
        dim: int = 0,
    ) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise ArgumentError(f"DataParallel wraps a Module, got {type(module).__name__}")
        if device_ids is not None and len(device_ids) > 1:
            warnings.warn(
                f"DataParallel(device_ids={list(device_ids)!r}): plugrad runs the module on "
                "its own device only, one batch at a time; use DistributedDataParallel with "
                "one process per device to train on several",
                UserWarning,
                stacklevel=2,
            )
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)
