"""A plugrad backend storing data as PyTorch CPU tensors, via ``array_api_compat.torch``."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from plugrad.backend import Backend
from plugrad.hookspecs import hookimpl

__all__ = ["TorchBackend", "plugrad_backends", "scatter_add"]

_DLPACK_CPU = (1, 0)


class TorchRandom:
    """A seeded ``torch.Generator``."""

    def __init__(self, seed: int | None) -> None:
        import torch

        self._generator = torch.Generator()
        if seed is None:
            self._generator.seed()
        else:
            self._generator.manual_seed(seed)

    def normal(self, shape: tuple[int, ...], dtype: Any) -> Any:
        import torch

        return torch.randn(shape, generator=self._generator, dtype=dtype)

    def uniform(self, shape: tuple[int, ...], dtype: Any) -> Any:
        import torch

        return torch.rand(shape, generator=self._generator, dtype=dtype)


def scatter_add(xp: Any, values: Any, /, *, key: Any, shape: tuple[int, ...]) -> Any:
    """plugrad's ``scatter_add`` (the gradient of indexing) with ``Tensor.index_add_``.

    The flat position of every element ``key`` selects comes from plugrad's
    generic ``getitem`` kernel (any NumPy-style key, negative steps included,
    which PyTorch's own indexing lacks); ``index_add_`` then adds the values in
    one pass, accumulating repeated positions.
    """
    import torch

    from plugrad.plugins.indexing import getitem

    size = math.prod(shape)
    positions = getitem.kernel(xp, torch.arange(size, device=values.device).reshape(shape), key=key)
    flat_values = torch.broadcast_to(values, positions.shape).reshape(-1)
    out = torch.zeros(size, dtype=values.dtype, device=values.device)
    return out.index_add_(0, positions.reshape(-1), flat_values).reshape(shape)


class TorchBackend(Backend):
    """PyTorch tensors on the CPU (plugrad does the autograd, not torch)."""

    name = "torch"

    def unavailable_reason(self) -> str | None:
        if importlib.util.find_spec("torch") is None:
            return "torch is not installed; pip install torch"
        return None

    def namespace(self) -> Any:
        import array_api_compat.torch

        return array_api_compat.torch

    def array_types(self) -> tuple[type, ...]:
        import torch

        return (torch.Tensor,)

    def devices(self) -> tuple[Any, ...]:
        import torch

        return (torch.device("cpu"),)

    def dlpack_device(self, device: Any) -> tuple[int, int]:
        return _DLPACK_CPU

    def from_dlpack(self, obj: Any, device: Any) -> Any:
        import torch

        host = np.from_dlpack(obj)
        if any(stride < 0 for stride in host.strides):
            # NOTE: torch cannot view memory with negative strides (x[::-1] in NumPy),
            # and its from_dlpack aborts the process on it: copy instead.
            return torch.from_numpy(np.ascontiguousarray(host))
        return torch.from_dlpack(host)

    def from_host(self, host: Any, device: Any) -> Any:
        import torch

        return torch.tensor(np.array(host), device=device)

    def to_numpy(self, array: Any) -> np.ndarray:
        view = array.detach().numpy().view()
        view.flags.writeable = False  # writing through it would bypass autograd
        return view

    def random_source(self, seed: int | None, device: Any) -> TorchRandom:
        return TorchRandom(seed)

    def kernels(self) -> Mapping[str, Callable[..., Any]]:
        return {"scatter_add": scatter_add}


@hookimpl
def plugrad_backends() -> list[Backend]:
    return [TorchBackend()]
