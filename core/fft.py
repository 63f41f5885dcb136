"""The Array API ``fft`` extension: ``plugrad.fft.fft``, ``plugrad.fft.rfft``, ...

The transforms are generated from the built-in op plugin :mod:`plugrad.plugins.fft`
when plugrad loads its plugins, like every other op; :func:`fftfreq` and
:func:`rfftfreq`, which make new tensors, are defined here.
"""

from __future__ import annotations

import math
import typing as _typing
from collections.abc import Callable

from . import dtypes as _dtypes
from .creation import (
    CreationOptions,
    creation_options,
    leaf,
    target_device,
    with_creation_options,
)
from .errors import DtypeError, InvalidArgumentError
from .inplace import takes_out
from .tensor import Tensor

if _typing.TYPE_CHECKING:  # the transforms plugin loading installs, as type checkers see them
    from typing_extensions import Unpack

    from ._api_fft import *  # noqa: F403

__all__ = ["fftfreq", "rfftfreq"]


def _frequency_function(kind: str, summary: str, example: str) -> Callable[..., Tensor]:
    """``fftfreq`` or ``rfftfreq``: the library's function of that name, on the device asked
    for; ``example`` is what ``kind(4)`` gives."""

    def frequencies(n: int, /, d: float = 1.0, **options: Unpack[CreationOptions]) -> Tensor:
        dtype, device, backend, requires_grad = creation_options(kind, options)
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidArgumentError(
                f"{kind}() takes the number of samples n as an int >= 0, got {n!r}"
            )
        if dtype is not None and dtype.kind not in ("real floating", "complex floating"):
            # Frequencies are fractions: an integer dtype truncated them (fftfreq(5) -> zeros).
            raise DtypeError(
                f"{kind}() makes frequencies, fractions of the sample rate: give a floating or "
                f"complex dtype, got {dtype.name} (leave dtype out for the default float)"
            )
        target = target_device(device, backend)
        native = target.native_dtype(dtype or _dtypes.default_float_dtype)
        if n == 0:  # no frequencies (the libraries divide by n)
            array = target.xp.zeros((0,), dtype=native, device=target.native)
        elif d == 0:  # the libraries divide by n * d in Python: PyTorch's nan and infinities
            xp = target.xp
            steps = getattr(xp.fft, kind)(n, d=1.0, dtype=native, device=target.native)
            infinite = xp.full_like(steps, math.copysign(math.inf, d))
            array = xp.where(
                steps == 0,
                xp.full_like(steps, math.nan),
                xp.where(steps > 0, infinite, -infinite),
            )
        else:
            array = getattr(target.xp.fft, kind)(n, d=d, dtype=native, device=target.native)
        return leaf(array, target, requires_grad)

    frequencies.__name__ = frequencies.__qualname__ = kind
    frequencies.__doc__ = f"""{summary}

    ``d`` may come by position, as in PyTorch (``{kind}(8, 0.1)``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.fft.{kind}(4)
    {example}
    """
    return takes_out(with_creation_options(frequencies))


fftfreq = _frequency_function(
    "fftfreq",
    "Return the sample frequencies of an ``n``-point transform with sample spacing ``d``.",
    "tensor([ 0.0000,  0.2500, -0.5000, -0.2500])",
)
rfftfreq = _frequency_function(
    "rfftfreq",
    "Return the non-negative sample frequencies of an ``n``-point real transform.",
    "tensor([0.0000, 0.2500, 0.5000])",
)
