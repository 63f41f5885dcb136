"""The Array API ``fft`` extension: ``plugrad.fft.fft``, ``plugrad.fft.rfft``, ...

The transforms are generated from the built-in op plugin :mod:`plugrad.plugins.fft`
when plugrad loads its plugins, like every other op; :func:`fftfreq` and
:func:`rfftfreq`, which make new tensors, are defined here.
"""

from __future__ import annotations

import typing as _typing
from collections.abc import Mapping
from typing import Any

from . import dtypes as _dtypes
from .creation import (
    CreationOptions,
    creation_options,
    leaf,
    target_device,
    with_creation_options,
)
from .inplace import takes_out
from .tensor import Tensor

if _typing.TYPE_CHECKING:  # the transforms plugin loading installs, as type checkers see them
    from typing_extensions import Unpack

    from ._api_fft import *  # noqa: F403

__all__ = ["fftfreq", "rfftfreq"]


def _frequencies(kind: str, n: int, d: float, options: Mapping[str, Any]) -> Tensor:
    dtype, device, backend, requires_grad = creation_options(kind, options)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"{kind}() takes the number of samples n as an int >= 0, got {n!r}")
    target = target_device(device, backend)
    native = target.native_dtype(dtype or _dtypes.default_float_dtype)
    if n == 0:  # no frequencies (the libraries divide by n)
        array = target.xp.zeros((0,), dtype=native, device=target.native)
    else:
        array = getattr(target.xp.fft, kind)(n, d=d, dtype=native, device=target.native)
    return leaf(array, target, requires_grad)


@takes_out
@with_creation_options
def fftfreq(n: int, /, d: float = 1.0, **options: Unpack[CreationOptions]) -> Tensor:
    """Return the sample frequencies of an ``n``-point transform with sample spacing ``d``.

    ``d`` may come by position, as in PyTorch (``fftfreq(8, 0.1)``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.fftfreq(4)
    tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    return _frequencies("fftfreq", n, d, options)


@takes_out
@with_creation_options
def rfftfreq(n: int, /, d: float = 1.0, **options: Unpack[CreationOptions]) -> Tensor:
    """Return the non-negative sample frequencies of an ``n``-point real transform.

    ``d`` may come by position, as in PyTorch (``rfftfreq(8, 0.1)``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.rfftfreq(4)
    tensor([0.0000, 0.2500, 0.5000])
    """
    return _frequencies("rfftfreq", n, d, options)
