"""Random tensors from seedable generators, one stream per device."""

from __future__ import annotations

from typing import Any

from . import dtypes as _dtypes
from .backend import Device
from .creation import _shape, leaf, target_device
from .errors import DtypeError
from .tensor import Tensor

__all__ = ["Generator", "manual_seed", "rand", "randn"]


class Generator:
    """A seeded random-number stream on one device.

    Parameters
    ----------
    seed : int, optional
        The seed; ``None`` draws one from the operating system.
    device : str or Device, optional
        The device whose backend produces the numbers (default: the default device).
    backend : str, optional
        A backend name, for its current device.

    Examples
    --------
    >>> import plugrad
    >>> a = plugrad.randn(3, generator=plugrad.Generator(seed=0))
    >>> b = plugrad.randn(3, generator=plugrad.Generator(seed=0))
    >>> bool(plugrad.all(a == b))
    True
    """

    __slots__ = ("_source", "device", "seed")

    def __init__(
        self,
        seed: int | None = None,
        device: Device | str | None = None,
        backend: str | None = None,
    ) -> None:
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
            raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
        self.device = target_device(device, backend)
        self.seed = seed
        self._source = self.device.backend.random_source(seed, self.device.native)

    def __repr__(self) -> str:
        return f"Generator(seed={self.seed}, device={self.device.name!r})"


_default_seed: int | None = None
_default_generators: dict[Device, Generator] = {}


def manual_seed(seed: int) -> None:
    """Seed the default generator of every device, for reproducible runs.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.manual_seed(42); a = plugrad.rand(2)
    >>> plugrad.manual_seed(42); b = plugrad.rand(2)
    >>> bool(plugrad.all(a == b))
    True
    """
    global _default_seed
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    _default_seed = seed
    _default_generators.clear()


def _generator_for(device: Device) -> Generator:
    generator = _default_generators.get(device)
    if generator is None:
        generator = _default_generators[device] = Generator(_default_seed, device)
    return generator


def _sample(
    kind: str,
    shape: tuple[Any, ...],
    dtype: _dtypes.DType | None,
    device: Device | str | None,
    backend: str | None,
    generator: Generator | None,
    requires_grad: bool,
) -> Tensor:
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    size = _shape(shape)
    if generator is not None:
        target = generator.device
        if (device is not None or backend is not None) and target_device(
            device, backend
        ) is not target:
            raise ValueError(
                f"the generator is on {target.name!r} but device={device!r}, backend={backend!r} "
                "was asked for; use a generator made for that device"
            )
    else:
        target = target_device(device, backend)
        generator = _generator_for(target)
    dtype = dtype or _dtypes.default_float_dtype
    if dtype.kind != "real floating":
        raise DtypeError(f"{kind}() draws real floating-point numbers; dtype {dtype.name} is not")
    source = generator._source
    array = getattr(source, kind)(size, target.native_dtype(dtype))
    return leaf(array, target, requires_grad)


def randn(
    *shape: int | tuple[int, ...],
    dtype: _dtypes.DType | None = None,
    device: Device | str | None = None,
    backend: str | None = None,
    generator: Generator | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return samples of the standard normal distribution: ``randn(2, 3)`` or ``randn((2, 3))``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.randn(2, 3).shape
    (2, 3)
    """
    return _sample("normal", shape, dtype, device, backend, generator, requires_grad)


def rand(
    *shape: int | tuple[int, ...],
    dtype: _dtypes.DType | None = None,
    device: Device | str | None = None,
    backend: str | None = None,
    generator: Generator | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return samples drawn uniformly from ``[0, 1)``: ``rand(2, 3)`` or ``rand((2, 3))``.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.rand(1000)
    >>> bool(plugrad.all(x >= 0.0)) and bool(plugrad.all(x < 1.0))
    True
    """
    return _sample("uniform", shape, dtype, device, backend, generator, requires_grad)
