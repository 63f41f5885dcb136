"""Random tensors from seedable generators, one stream per device."""

from __future__ import annotations

import contextlib
import math
import operator
import secrets
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from . import dtypes as _dtypes
from . import grad_mode as _grad_mode
from . import ops as _ops
from .backend import Device
from .creation import (
    CreationOptions,
    LikeOptions,
    _shape,
    creation_options,
    leaf,
    target_device,
    with_like_options,
)
from .creation import zeros_like as _zeros_like
from .dtype_functions import broadcast_shapes, finfo, iinfo
from .errors import ArgumentError, DtypeError, InvalidArgumentError, ScalarRangeError, ShapeError
from .function import Function
from .grad_mode import no_grad as _no_grad
from .inplace import apply_inplace, filled_with, takes_out
from .keyword_options import spell_out
from .memory_formats import check_memory_format, memory_format
from .plugins import _rules
from .tensor import Tensor, install_methods

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "Generator",
    "GeneratorState",
    "fork_rng",
    "get_rng_state",
    "initial_seed",
    "seed",
    "set_rng_state",
    "bernoulli",
    "manual_seed",
    "multinomial",
    "normal",
    "rand",
    "rand_like",
    "randint",
    "randint_like",
    "randn",
    "randn_like",
    "randperm",
]


class Generator:
    """A seeded random-number stream on one device.

    Parameters
    ----------
    seed : int, optional
        The seed; ``None`` draws one from the operating system (as
        :meth:`initial_seed` tells).
    device : str or Device, optional
        The device whose backend produces the numbers (default: the default device).
        Given first (``Generator("cpu")``), as PyTorch's only argument.
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

    __slots__ = ("_drawn", "_seed", "_source", "device")

    def __init__(
        self,
        seed: int | Device | str | None = None,
        device: Device | str | None = None,
        backend: str | None = None,
    ) -> None:
        if isinstance(seed, (str, Device)) and device is None:  # PyTorch's Generator("cpu")
            seed, device = None, seed
        if seed is not None:
            seed = _checked_seed(seed)
        # A seed drawn here (so that initial_seed() can tell it) is noted as drawn: a
        # compiled function's replay makes such a generator with a new one, as eagerly.
        self._drawn = seed is None
        if seed is None:
            seed = secrets.randbits(63)
        self.device = target_device(device, backend)
        self._seed: int = seed
        self._source = self.device.backend.random_source(seed, self.device.native)

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from ``seed`` and return the generator, as PyTorch's does.

        Examples
        --------
        >>> import plugrad
        >>> g = plugrad.Generator().manual_seed(7)
        >>> a = plugrad.rand(2, generator=g)
        >>> bool(plugrad.all(a == plugrad.rand(2, generator=g.manual_seed(7))))
        True
        """
        seed = _checked_seed(seed)
        self._source = self.device.backend.random_source(seed, self.device.native)
        self._seed = seed
        self._drawn = False
        return self

    def seed(self) -> int:
        """Restart the stream from a seed drawn from the operating system; return the seed
        (PyTorch's ``Generator.seed``)."""
        chosen = secrets.randbits(63)
        self.manual_seed(chosen)
        return chosen

    def get_state(self) -> GeneratorState:
        """Return a snapshot of the stream, to give :meth:`set_state` later (picklable).

        Examples
        --------
        >>> import plugrad
        >>> g = plugrad.Generator(seed=0)
        >>> state = g.get_state()
        >>> a = plugrad.rand(2, generator=g)
        >>> bool(plugrad.all(a == plugrad.rand(2, generator=g.set_state(state))))
        True
        """
        source = self._source
        if not hasattr(source, "get_state"):
            raise NotImplementedError(
                f"the random source of backend {self.device.backend.name!r} cannot save its "
                "state; reseed with manual_seed() to repeat a stream instead"
            )
        return GeneratorState(self.device.backend.name, self._seed, source.get_state())

    def set_state(self, state: GeneratorState) -> Generator:
        """Continue the stream from a :meth:`get_state` snapshot; return the generator."""
        if not isinstance(state, GeneratorState):
            raise ArgumentError(
                f"set_state() takes what get_state() returned, got {type(state).__name__}"
            )
        backend = self.device.backend.name
        if state.backend != backend:
            raise InvalidArgumentError(
                f"the state was saved from a generator of backend {state.backend!r}; this one "
                f"is of {backend!r}"
            )
        if not hasattr(self._source, "set_state"):
            raise NotImplementedError(
                f"the random source of backend {backend!r} cannot restore a state"
            )
        self._source.set_state(state.state)
        self._seed = state.seed
        return self

    def initial_seed(self) -> int:
        """The seed the stream started from (drawn from entropy where none was given)."""
        return self._seed

    def __repr__(self) -> str:
        return f"Generator(seed={self._seed}, device={self.device.name!r})"


def _checked_seed(seed: Any) -> int:
    """A seed as PyTorch takes it: an int (a NumPy int too) in [-2**63, 2**64), a negative
    one counted from 2**64."""
    if isinstance(seed, bool) or not hasattr(type(seed), "__index__"):
        raise ArgumentError(f"a seed is an int, got {seed!r}")
    seed = operator.index(seed)
    if not -(2**63) <= seed < 2**64:
        raise InvalidArgumentError(f"a seed lies in [-2**63, 2**64), got {seed}")
    return seed % 2**64


class GeneratorState:
    """A snapshot of a :class:`Generator`'s stream (:meth:`Generator.get_state`); opaque."""

    __slots__ = ("backend", "seed", "state")

    def __init__(self, backend: str, seed: int, state: Any) -> None:
        self.backend = backend
        self.seed = seed
        self.state = state

    def __reduce__(self) -> tuple[Any, ...]:
        return (GeneratorState, (self.backend, self.seed, self.state))

    def __repr__(self) -> str:
        return f"GeneratorState(backend={self.backend!r}, seed={self.seed})"


_default_seed: int | None = None
_default_generators: dict[Device, Generator] = {}


def manual_seed(seed: int) -> Generator:
    """Seed the default generator of every device, for reproducible runs; return the default
    device's (as PyTorch returns its default generator).

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(42); a = plugrad.rand(2)
    >>> _ = plugrad.manual_seed(42); b = plugrad.rand(2)
    >>> bool(plugrad.all(a == b))
    True
    """
    global _default_seed
    seed = _checked_seed(seed)
    _default_seed = seed
    # The default device's is reseeded in place, so that a generator returned earlier stays
    # the default one, as PyTorch's; the others are made anew when next drawn from.
    default = target_device(None, None)
    kept = _default_generators.get(default)
    _default_generators.clear()
    if kept is None:
        return _generator_for(default)
    _default_generators[default] = kept.manual_seed(seed)
    return kept


def get_rng_state() -> GeneratorState:
    """Return a snapshot of the default generator of the default device (PyTorch's name).

    Examples
    --------
    >>> import plugrad
    >>> state = plugrad.get_rng_state()
    >>> a = plugrad.rand(3)
    >>> plugrad.set_rng_state(state)
    >>> bool(plugrad.all(a == plugrad.rand(3)))
    True
    """
    return _generator_for(target_device(None, None)).get_state()


def set_rng_state(new_state: GeneratorState) -> None:
    """Continue the default generator of the default device from a :func:`get_rng_state`."""
    _generator_for(target_device(None, None)).set_state(new_state)


def initial_seed() -> int:
    """The seed of the default generator of the default device (PyTorch's name)."""
    return _generator_for(target_device(None, None)).initial_seed()


def seed() -> int:
    """Seed every device's default generator from the operating system's entropy; return
    the seed (PyTorch's ``torch.seed``)."""
    chosen = secrets.randbits(63)
    manual_seed(chosen)
    return chosen


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True) -> Iterator[None]:
    """Within the block, draw from the default generators as usual; after it, they continue
    as if the block had drawn nothing (PyTorch's ``torch.random.fork_rng``).

    ``devices`` names the devices whose default generators are restored besides
    the CPU's, which are always restored, as PyTorch's (``devices=[]`` restores
    them only); default: every one used so far, and the default device's.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> with plugrad.random.fork_rng():
    ...     _ = plugrad.rand(5)
    >>> after = plugrad.rand(2)
    >>> _ = plugrad.manual_seed(0)
    >>> bool(plugrad.all(after == plugrad.rand(2)))
    True
    """
    global _default_seed
    if not enabled:
        yield
        return
    default = target_device(None, None)
    if devices is None:
        chosen = {*_default_generators, default}
    else:
        cpus = {device for device in (*_default_generators, default) if device.type == "cpu"}
        chosen = cpus | {target_device(d, None) for d in devices}
    seed_before = _default_seed
    saved = {device: _generator_for(device).get_state() for device in chosen}
    try:
        yield
    finally:
        _default_seed = seed_before  # (a manual_seed() inside reseeded the ones to come)
        for device, state in saved.items():
            _generator_for(device).set_state(state)


def default_generator_states() -> dict[Device, GeneratorState]:
    """A snapshot of the default generator of every device drawn from so far and of the
    default device, for :func:`set_default_generator_states` (what
    :func:`plugrad.utils.checkpoint.checkpoint` replays its function from)."""
    devices = {*_default_generators, target_device(None, None)}
    return {device: _generator_for(device).get_state() for device in devices}


def set_default_generator_states(states: dict[Device, GeneratorState]) -> None:
    """Continue each device's default generator from :func:`default_generator_states`."""
    for device, state in states.items():
        _generator_for(device).set_state(state)


class _DrawWatchers(threading.local):
    watchers: tuple[Callable[[Generator], None], ...] = ()


_draw_watchers = _DrawWatchers()


@contextlib.contextmanager
def watching_draws(watcher: Callable[[Generator], None]) -> Iterator[None]:
    """Within the block, call ``watcher(generator)`` before each draw this thread makes
    from any generator (a default one too), so that it can refuse the draw or note the
    stream's state first: :func:`plugrad.func.vmap`'s ``randomness``. Blocks nest: every
    watcher of the blocks around the draw is called, the outermost first."""
    outer = _draw_watchers.watchers
    _draw_watchers.watchers = (*outer, watcher)
    try:
        yield
    finally:
        _draw_watchers.watchers = outer


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
    if len(shape) == 1 and not hasattr(type(shape[0]), "__index__"):  # (a NumPy int is one)
        shape = tuple(shape[0])
    size = _shape(shape)
    target, generator = _sampling_device(device, backend, generator)
    dtype = _dtypes.of_python_type(dtype) or _dtypes.default_float_dtype
    for watch in _draw_watchers.watchers:  # (vmap's randomness: every draw passes here)
        watch(generator)
    source = generator._source
    if dtype.kind == "complex floating":
        # As PyTorch: the real and imaginary parts drawn apart, each normal of variance
        # 1/2 (so that E|z|**2 is 1) or uniform on [0, 1).
        part = _dtypes.float32 if dtype is _dtypes.complex64 else _dtypes.float64
        xp, native = target.xp, target.native_dtype(dtype)
        real, imag = (getattr(source, kind)(size, target.native_dtype(part)) for _ in range(2))
        array = xp.astype(real, native) + xp.astype(imag, native) * 1j
        if kind == "normal":
            array = array * math.sqrt(0.5)
        return leaf(array, target, requires_grad)
    if dtype.kind != "real floating":
        raise DtypeError(
            f"{kind}() draws floating-point numbers (real or complex); dtype {dtype.name} is not"
        )
    array = getattr(source, kind)(size, target.native_dtype(dtype))
    return leaf(array, target, requires_grad)


def _whole(function: str, name: str, value: Any) -> int:
    """An int given as one: a Python or NumPy int, or a 0-d integer tensor (not a bool)."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise ArgumentError(f"{function}(): {name} must be an int, got {value!r}")
    return operator.index(value)


def _sampling_device(
    device: Device | str | None, backend: str | None, generator: Generator | None
) -> tuple[Device, Generator]:
    """The device a draw is made on and the generator it draws from."""
    if generator is None:
        target = target_device(device, backend)
        return target, _generator_for(target)
    if not isinstance(generator, Generator):
        raise ArgumentError(
            f"generator= takes a plugrad.Generator, got {type(generator).__name__}; make one "
            "with plugrad.Generator().manual_seed(seed)"
        )
    target = generator.device
    if (device is not None or backend is not None) and target_device(device, backend) is not target:
        raise InvalidArgumentError(
            f"the generator is on {target.name!r} but device={device!r}, backend={backend!r} "
            "was asked for; use a generator made for that device"
        )
    return target, generator


def _widest_float(device: Device) -> _dtypes.DType:
    """``float64``, or ``float32`` on a backend without it (JAX without ``jax_enable_x64``)."""
    return _dtypes.float64 if _dtypes.float64 in device.dtypes else _dtypes.float32


class SamplingOptions(CreationOptions, total=False):
    """The keyword arguments of :func:`randn` and :func:`rand`: those of every creation
    function, and the ``generator`` to draw from (by default the device's)."""

    generator: Generator | None


with_sampling_options = spell_out(SamplingOptions, requires_grad=False, pin_memory=False)


def _shape_or_size(function: str, shape: tuple[Any, ...], size: Any) -> tuple[Any, ...]:
    """The shape given as arguments, or as PyTorch's ``size=`` keyword; not both."""
    if size is None:
        return shape
    if shape:
        raise ArgumentError(
            f"{function}() got the shape twice, as arguments and as size=; give one"
        )
    return (size,)


def _sampling_function(
    kind: str, function: str, samples: str, examples: str
) -> Callable[..., Tensor]:
    """``randn`` or ``rand``: ``samples`` of the distribution ``kind`` in a new tensor."""

    def sample(
        *shape: int | tuple[int, ...],
        size: int | tuple[int, ...] | None = None,
        **options: Unpack[SamplingOptions],
    ) -> Tensor:
        shape = _shape_or_size(function, shape, size)
        dtype, device, backend, requires_grad = creation_options(function, options, SamplingOptions)
        generator = options.get("generator")
        return _sample(kind, shape, dtype, device, backend, generator, requires_grad)

    sample.__name__ = sample.__qualname__ = function
    sample.__doc__ = f"""Return {samples}: ``{function}(2, 3)`` or ``{function}((2, 3))``
    (``size=`` is PyTorch's keyword for the shape).

    Examples
    --------
    >>> import plugrad
{examples}
    """
    return takes_out(with_sampling_options(sample))


randn = _sampling_function(
    "normal",
    "randn",
    "samples of the standard normal distribution",
    """    >>> plugrad.randn(2, 3).shape
    (2, 3)""",
)
rand = _sampling_function(
    "uniform",
    "rand",
    "samples drawn uniformly from ``[0, 1)``",
    """    >>> x = plugrad.rand(1000)
    >>> bool(plugrad.all(x >= 0.0)) and bool(plugrad.all(x < 1.0))
    True""",
)


@takes_out
def randint(
    low: int | None = None,
    high: int | None = None,
    size: tuple[int, ...] | None = None,
    *,
    dtype: _dtypes.DType | None = None,
    device: Device | str | None = None,
    backend: str | None = None,
    generator: Generator | None = None,
) -> Tensor:
    """Return integers drawn uniformly from ``[low, high)``.

    Called ``randint(high, size)`` or ``randint(low, high, size)``.

    As in PyTorch, ``randint(high, size)`` starts at 0, and the result is
    ``int64`` (``int32`` on a backend without it) unless ``dtype`` is given.
    Any int64 range can be drawn; other dtypes take ranges up to ``2**53`` wide
    (``2**24`` on a backend without float64), and a floating ``dtype`` only
    integers it holds exactly (from -2048 to 2048 in float16, ``2**24`` in
    float32, ``2**53`` in float64).

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.randint(0, 10, (100,))
    >>> x.dtype, bool(plugrad.all((x >= 0) & (x < 10)))
    (plugrad.int64, True)
    """
    if low is None:  # randint(high=5, size=(2,)), PyTorch's keywords
        if high is None:
            raise ArgumentError("randint() needs a high bound: randint(high, size)")
        low = 0
    if size is None:
        if not isinstance(high, (tuple, list)):
            raise ArgumentError(
                "randint() needs a size: randint(high, size) or randint(low, high, size)"
            )
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    low, high = _whole("randint", "low", low), _whole("randint", "high", high)
    if high <= low:
        raise InvalidArgumentError(f"randint(): high ({high}) must be greater than low ({low})")
    target, generator = _sampling_device(device, backend, generator)
    dtype = _dtypes.of_python_type(dtype) or target.default_int_dtype
    if dtype is _dtypes.bool:  # as PyTorch's: 0 and 1 drawn as False and True
        if low < 0 or high > 2:
            raise ScalarRangeError(
                f"randint(): the range [{low}, {high}) does not fit bool (it holds 0 and 1); "
                "draw from [0, 2)"
            )
        drawn = randint(low, high, size, device=target, generator=generator)
        return leaf(target.xp.astype(drawn._array, target.native_dtype(dtype)), target, False)
    if dtype.kind not in ("signed integer", "unsigned integer", "real floating"):
        raise DtypeError(
            f"randint() draws integers, real numbers or bools; dtype {dtype.name} is none of them"
        )
    if dtype.kind == "real floating":
        # Every integer of the range must be one of the dtype's: float16 rounded 59999 up to
        # 60000 (its integers are exact up to 2048 only), returning high.
        smallest, largest = _random_ends(dtype)
        if low < smallest or high - 1 > largest:
            raise ScalarRangeError(
                f"randint(): the range [{low}, {high}) does not fit {dtype.name} (it holds "
                f"each integer from {smallest} to {largest} exactly); pass a wider dtype"
            )
    else:
        info = target.xp.iinfo(target.native_dtype(dtype))
        if low < int(info.min) or high - 1 > int(info.max):
            # Cast, the draws would wrap (NumPy) or pile up at the limit (JAX); PyTorch refuses.
            raise ScalarRangeError(
                f"randint(): the range [{low}, {high}) does not fit {dtype.name} (it holds "
                f"{int(info.min)} to {int(info.max)}); pass a wider dtype"
            )
    # Scaled uniform samples, floored: each integer takes 2**53 // n or one more of the 2**53
    # values a float64 draw has, a bias of at most n / 2**53, negligible up to 2**32 wide
    # (PyTorch's modulo of 32 bits has n / 2**32). Wider int64 ranges come from integer
    # bits: floored, a range 3 * 2**51 wide gave 0.334, 0.375, 0.291 of each residue mod 3.
    precise = _widest_float(target)
    widest = 2**53 if precise is _dtypes.float64 else 2**24
    exact = 2**32 if precise is _dtypes.float64 else 2**24
    if high - low > exact and dtype.kind == "real floating" and high - low <= widest:
        drawn = randint(low, high, size, device=target, generator=generator)
        return leaf(target.xp.astype(drawn._array, target.native_dtype(dtype)), target, False)
    if high - low > exact and dtype is _dtypes.int64:
        # From 32-bit halves, as PyTorch's (see random_).
        if high - low <= 2**63:
            drawn = _wide_randint(high - low, size, target, generator) + low
        else:
            drawn = _int64_in(low, high, size, target, generator)
        return leaf(drawn._array, target, False)
    if high - low > widest:
        raise InvalidArgumentError(
            f"randint(): the range [{low}, {high}) is wider than {widest} (the integers "
            f"{precise.name} draws exactly)"
        )
    uniform = _sample("uniform", (size,), precise, target, None, generator, False)
    xp = target.xp
    native = target.native_dtype(dtype)
    # NOTE: u * n can round up to n for u just below 1; keep the interval half-open.
    offsets = xp.minimum(xp.floor(uniform._array * float(high - low)), float(high - low - 1))
    if dtype.kind == "real floating":
        return leaf(xp.astype(offsets + float(low), native), target, False)
    # low is added in integers: in floats, low = 2**62 absorbed every offset below 1024.
    # Unsigned, low + offset fits the dtype; signed, the default integers hold the offsets
    # (up to 2**53, or 2**24 without int64) and the sums, which lie in the dtype's range.
    if dtype.kind == "signed integer":
        native = target.native_dtype(target.default_int_dtype)
    drawn = xp.astype(offsets, native) + low
    return leaf(xp.astype(drawn, target.native_dtype(dtype), copy=False), target, False)


@takes_out
def randperm(
    n: int,
    *,
    dtype: _dtypes.DType | None = None,
    device: Device | str | None = None,
    backend: str | None = None,
    generator: Generator | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """Return a random permutation of ``0, ..., n - 1``.

    The result is ``int64`` (``int32`` on a backend without it) unless ``dtype`` is given.

    Examples
    --------
    >>> import plugrad
    >>> p = plugrad.randperm(5)
    >>> p.dtype, sorted(p.tolist())
    (plugrad.int64, [0, 1, 2, 3, 4])
    """
    n = _whole("randperm", "n", n)
    if n < 0:
        raise InvalidArgumentError(f"randperm(): n must be a non-negative int, got {n!r}")
    if n > 2**53:
        raise InvalidArgumentError(f"randperm(): n ({n}) is larger than 2**53")
    target, generator = _sampling_device(device, backend, generator)
    dtype = _dtypes.of_python_type(dtype) or target.default_int_dtype
    if dtype.kind not in ("signed integer", "unsigned integer", "real floating"):
        raise DtypeError(f"randperm() gives integers or reals; dtype {dtype.name} is neither")
    # Every number below n must be one of the dtype's: int8 wrapped 300 into 256 values.
    if dtype.kind == "real floating":  # the integers up to 2 ** (mantissa bits + 1)
        exact = 2 ** (round(-math.log2(finfo(dtype).eps)) + 1) + 1
    else:
        exact = iinfo(dtype).max + 1
    if n > exact:
        raise DtypeError(
            f"randperm({n}, dtype={dtype.name}): {dtype.name} holds the numbers below {exact} "
            "only, each exactly; give a wider dtype"
        )
    # The order that sorts independent uniform keys is a uniformly random permutation
    # (float64 keys tie with negligible probability; a stable sort breaks ties anyway).
    precise = _widest_float(target)
    keys = _sample("uniform", (n,), precise, target, None, generator, False)._array
    xp = target.xp
    if precise is _dtypes.float64:
        order = xp.argsort(keys, stable=True)
    else:
        # float32 keys tie often (about n**2 / 2**25 pairs): ties are broken by a second
        # key, not by position, which would favour keeping small numbers first.
        second = _sample("uniform", (n,), precise, target, None, generator, False)._array
        order = xp.argsort(second, stable=True)
        order = xp.take(order, xp.argsort(xp.take(keys, order), stable=True))
    return leaf(xp.astype(order, target.native_dtype(dtype)), target, requires_grad)


@takes_out
def bernoulli(
    input: Tensor, p: float | None = None, *, generator: Generator | None = None
) -> Tensor:
    """Return 1 with probability ``input`` (or ``p``), else 0, element-wise, in ``input``'s dtype.

    Not differentiable: where ``input`` requires grad, so does the result (as in
    PyTorch), and its gradient for ``input`` is zero.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.bernoulli(plugrad.tensor([0.0, 1.0]))
    tensor([0., 1.])
    """
    shape, source = _like_shape(input, "bernoulli")
    if input.dtype.kind != "real floating":
        raise DtypeError(
            f"bernoulli() takes probabilities of a real floating dtype, got {input.dtype.name}"
        )
    probability = input.detach()._array if p is None else p
    if p is None:
        xp = input._device.xp
        outside = xp.any(~((probability >= 0) & (probability <= 1)))
        what = "bernoulli(): a probability outside [0, 1]"
        refused = _rules.any_true(outside, what, InvalidArgumentError)
    else:
        refused = not 0 <= p <= 1
    if refused:
        raise InvalidArgumentError(
            "bernoulli() takes probabilities in [0, 1] (as PyTorch's); some are outside it or "
            "NaN: clip them (x.clamp(0, 1)) or fix what computes them"
        )
    place = None if generator else source
    # float16 compares a float32 draw (on float16's grid of 2**-11, a probability of 1e-4
    # came true 1 in 2048 times); a Python number, a float64 one where the backend has it
    # (PyTorch's double: in float32, any p below 6e-8 came true as often as 6e-8).
    if p is not None:
        drawn_in = _widest_float(source)
    else:
        drawn_in = _dtypes.float32 if input.dtype in _dtypes.half_floats else input.dtype
    uniform = _sample("uniform", shape, drawn_in, place, None, generator, False)
    xp = uniform._device.xp
    drawn = xp.astype(uniform._array < probability, input._array.dtype)
    result = leaf(drawn, uniform._device, False)
    if _grad_mode._state.enabled and input._requires_grad:
        # PyTorch's: the draws are in input's graph, with a zero gradient.
        return DrawnFrom.apply(result, input)
    return result


@takes_out
def multinomial(
    input: Tensor,
    num_samples: int,
    replacement: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Draw ``num_samples`` category indices from each row of the weights ``input``.

    ``input`` is a vector of non-negative weights, or a matrix with one row of
    weights per draw (they need not sum to 1). Without ``replacement`` a row
    gives each category at most once, so it needs at least ``num_samples``
    categories of non-zero weight. The result is ``int64`` (``int32`` on a backend
    without it), of shape
    ``(num_samples,)`` or ``(rows, num_samples)``, and never requires grad.

    Examples
    --------
    >>> import plugrad
    >>> weights = plugrad.tensor([0.0, 1.0, 3.0])
    >>> sorted(plugrad.multinomial(weights, 2).tolist())
    [1, 2]
    >>> plugrad.multinomial(weights, 4, replacement=True, generator=plugrad.Generator(0)).shape
    (4,)
    """
    shape, source = _like_shape(input, "multinomial")
    if input.dtype.kind != "real floating":
        raise DtypeError(
            f"multinomial() takes weights of a real floating dtype, got {input.dtype.name}"
        )
    if len(shape) not in (1, 2) or shape[-1] == 0:
        raise InvalidArgumentError(
            f"multinomial() takes a vector or a matrix of weights with at least one category, "
            f"got shape {shape}"
        )
    if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples < 1:
        raise InvalidArgumentError(
            f"multinomial(): num_samples must be a positive int, got {num_samples!r}"
        )
    xp, int64 = source.xp, source.native_dtype(source.default_int_dtype)
    weights = input.detach()._array
    rows = weights if len(shape) == 2 else xp.reshape(weights, (1, shape[0]))
    if not bool(xp.all(xp.isfinite(rows))) or bool(xp.any(rows < 0)):
        raise InvalidArgumentError("multinomial(): the weights must be finite and non-negative")
    nonzero = xp.sum(xp.astype(rows > 0, int64), axis=-1)
    if bool(xp.any(nonzero == 0)):
        raise InvalidArgumentError(
            "multinomial(): a row of weights sums to 0; give it a positive weight"
        )
    if not replacement and bool(xp.any(nonzero < num_samples)):
        raise InvalidArgumentError(
            f"multinomial(): cannot draw {num_samples} samples without replacement from a row "
            f"with {int(xp.min(nonzero))} categories of non-zero weight; pass "
            "replacement=True or draw fewer"
        )
    place = None if generator else source
    count = (rows.shape[0], num_samples if replacement else rows.shape[1])
    sample = _sample("uniform", count, _widest_float(source), place, None, generator, False)
    uniform = sample._array
    rows = xp.astype(rows, uniform.dtype)
    if replacement:
        # Inverse-CDF sampling: how many cumulative weights lie at or below u * total,
        # found by bisection (memory of the draws, not draws times categories).
        cumulative = xp.cumulative_sum(rows, axis=-1)
        target = uniform * cumulative[:, -1:]
        drawn = xp.stack(
            [
                xp.searchsorted(cumulative[i, ...], target[i, ...], side="right")
                for i in range(rows.shape[0])
            ]
        )
        drawn = xp.minimum(drawn, rows.shape[1] - 1)  # u * total rounding up to the total
    else:
        # NOTE: the categories in decreasing order of u ** (1 / w) are a draw without
        # replacement with probabilities proportional to w (weighted reservoir keys);
        # log(u) / w orders the same way without underflow. Zero weights come last.
        keys = xp.where(rows > 0, xp.log(uniform) / xp.where(rows > 0, rows, 1.0), -xp.inf)
        drawn = xp.argsort(-keys, axis=-1, stable=True)[:, :num_samples]
    drawn = xp.astype(drawn, int64)
    if len(shape) == 1:
        drawn = xp.reshape(drawn, (num_samples,))
    return leaf(drawn, sample._device, False)


def _like_shape(x: Tensor, function: str) -> tuple[tuple[int, ...], Device]:
    if not isinstance(x, Tensor):
        raise ArgumentError(f"{function}() needs a Tensor, got {type(x).__name__}")
    return x.shape, x._device


def _sample_like(
    kind: str, function: str, x: Tensor, generator: Generator | None, options: Mapping[str, Any]
) -> Tensor:
    shape, source = _like_shape(x, function)
    dtype, device, backend, requires_grad = creation_options(function, options, LikeOptions)
    if options:
        check_memory_format(function, options.get("memory_format"), x.ndim)
    if device is None and backend is None:
        device = source  # (a generator of another device is refused, naming both)
    return _sample(kind, shape, dtype or x.dtype, device, backend, generator, requires_grad)


def _like_sampling_function(
    kind: str, function: str, samples: str, examples: str
) -> Callable[..., Tensor]:
    """``randn_like`` or ``rand_like``: ``samples`` of the distribution ``kind`` shaped as a
    tensor."""

    def sample_like(
        x: Tensor, *, generator: Generator | None = None, **options: Unpack[LikeOptions]
    ) -> Tensor:
        return _sample_like(kind, function, x, generator, options)

    sample_like.__name__ = sample_like.__qualname__ = function
    sample_like.__doc__ = f"""Return {samples} with the shape of ``x`` (and its dtype and device).

    ``generator`` draws them (its device's), as in PyTorch.

    Examples
    --------
    >>> import plugrad
{examples}
    """
    return with_like_options(sample_like)


randn_like = _like_sampling_function(
    "normal",
    "randn_like",
    "standard normal samples",
    """    >>> plugrad.randn_like(plugrad.zeros(2, 3, dtype=plugrad.float64)).dtype
    plugrad.float64""",
)
rand_like = _like_sampling_function(
    "uniform",
    "rand_like",
    "samples from ``[0, 1)``",
    """    >>> plugrad.rand_like(plugrad.zeros(4)).shape
    (4,)""",
)


def randint_like(
    x: Tensor,
    *bounds: int,
    low: int | None = None,
    high: int | None = None,
    dtype: _dtypes.DType | None = None,
    device: Device | str | None = None,
    memory_format: memory_format | None = None,
    generator: Generator | None = None,
) -> Tensor:
    """Return integers from ``[low, high)`` with the shape of ``x`` (and its dtype and device).

    ``randint_like(x, high)`` and ``randint_like(x, high=high)`` start at 0, as in PyTorch.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.randint_like(plugrad.zeros(3, dtype=plugrad.int64), 5).shape
    (3,)
    """
    shape, source = _like_shape(x, "randint_like")
    check_memory_format("randint_like", memory_format, x.ndim)
    # As PyTorch's overloads: (x, high), (x, low, high), (x, low, high=...), (x, high=...);
    # low given alone is refused (it drew from [0, low)).
    if len(bounds) > 2 or (len(bounds) == 2 and (low is not None or high is not None)):
        raise ArgumentError(
            "randint_like() takes low and high once each: (x, high) or (x, low, high)"
        )
    if len(bounds) == 2:
        low, high = bounds
    elif len(bounds) == 1:
        if high is None and low is None:
            high = bounds[0]
        elif high is not None and low is None:
            low = bounds[0]
        else:
            raise ArgumentError(f"randint_like() got low twice (as {bounds[0]!r} and low={low!r})")
    if high is None:
        raise ArgumentError(
            "randint_like() needs high: randint_like(x, high) or randint_like(x, low, high)"
            + (f"; low={low!r} alone is not the upper end" if low is not None else "")
        )
    if low is None:
        low = 0
    dtype = _dtypes.of_python_type(dtype) or x.dtype
    return randint(low, high, shape, dtype=dtype, device=device or source, generator=generator)


@takes_out
def normal(
    mean: float | Tensor,
    std: float | Tensor = 1.0,
    size: tuple[int, ...] | None = None,
    *,
    dtype: _dtypes.DType | None = None,
    device: Device | str | None = None,
    generator: Generator | None = None,
    requires_grad: bool = False,
    layout: Any = None,
    pin_memory: bool = False,
) -> Tensor:
    """Return samples of a normal distribution with the given ``mean`` and ``std``.

    ``mean`` and ``std`` are numbers (then ``size`` gives the shape) or
    tensors (the result has their broadcast shape, on their device). Where
    one requires grad, so does the result, and their gradients are 0, as in
    PyTorch (a draw is not differentiated; ``distributions.Normal.rsample`` is).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.normal(2.0, 0.5, (2, 3)).shape
    (2, 3)
    >>> plugrad.normal(plugrad.zeros(4), 1.0).shape
    (4,)
    """
    creation_options("normal", {"layout": layout, "pin_memory": pin_memory})  # (PyTorch's)
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    if isinstance(std, Tensor):
        # NaN fails it too; a negative std gave draws of a mirrored normal, as if valid.
        if std.numel() and not bool((std.detach() >= 0).all()):
            raise InvalidArgumentError(
                "normal(): every element of std must be >= 0 (as PyTorch), and one is negative "
                "or NaN; give standard deviations (an abs() or a clamp(min=0) of them)"
            )
    elif not std >= 0:
        raise InvalidArgumentError(f"normal(): std must be >= 0, got {std!r}")
    if tensors:
        if size is not None:
            raise ArgumentError("normal(): give size only when mean and std are numbers")
        shape = broadcast_shapes(*(t.shape for t in tensors))
        device = device or tensors[0]._device
        dtype = _dtypes.of_python_type(dtype) or tensors[0].dtype
    else:
        if size is None:
            raise ArgumentError(
                "normal(mean, std, size): size is needed when mean and std are numbers"
            )
        shape = size
    noise = _sample("normal", (shape,), dtype, device, None, generator, False)
    if _grad_mode._state.enabled and any(t._requires_grad for t in tensors):
        drawn = _Draw.apply(noise, mean, std)
        # As PyTorch: the dtype of the draws (mean's, or std's), whatever the other's is.
        return drawn if drawn.dtype is noise.dtype else _ops.astype(drawn, noise.dtype)
    with _no_grad():
        result = noise * std + mean
        if result.dtype is not noise.dtype:
            result = _ops.astype(result, noise.dtype)
    target = result._device
    return leaf(result._array, target, requires_grad)


class _Draw(Function):
    """``noise * std + mean`` in the graph of ``mean`` and ``std``, with gradients 0."""

    @staticmethod
    def forward(ctx: Any, noise: Tensor, mean: Any, std: Any) -> Tensor:
        ctx.inputs = (mean, std)
        return noise * std + mean

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Tensor) -> tuple[Any, ...]:
        zeros = [_zeros_like(value) if isinstance(value, Tensor) else None for value in ctx.inputs]
        return (None, *zeros)


class DrawnFrom(Function):
    """Draws in the graph of the tensors of parameters they were drawn from, with gradients
    0, as PyTorch's (``bernoulli``, ``poisson``, ``binomial``): ``DrawnFrom.apply(drawn,
    *sources)``."""

    @staticmethod
    def forward(ctx: Any, drawn: Tensor, *sources: Tensor) -> Tensor:
        ctx.sources = sources
        return drawn

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Tensor) -> tuple[Any, ...]:
        return (None, *(_zeros_like(source) for source in ctx.sources))


# -- the in-place sampling methods of Tensor ----------------------------------------------


def _uniform(self: Tensor, from_: float = 0.0, to: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with samples of the uniform distribution on ``[from_, to)``, in place.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.empty(1000).uniform_(-2.0, 2.0)
    >>> bool(plugrad.all(w >= -2.0)) and bool(plugrad.all(w < 2.0))
    True
    """
    if self.dtype.kind not in ("real floating", "complex floating"):
        raise DtypeError(
            f"uniform_() draws floating-point numbers (real or complex); dtype "
            f"{self.dtype.name} is not (random_(from, to) draws integers)"
        )
    values = uniform_values(self.shape, from_, to, self.dtype, self._device, generator)
    return apply_inplace(self, filled_with, values, name="uniform_()")


def uniform_values(
    shape: tuple[int, ...],
    low: float,
    high: float,
    dtype: _dtypes.DType,
    device: Device,
    generator: Generator | None,
) -> Tensor:
    """Samples of the uniform distribution on ``[low, high)``: never ``high`` itself, as
    PyTorch's (rounding carried draws just below 1 up to it: 72 in 100,000 of float16
    draws on [1, 2))."""
    for bound in (low, high):
        if isinstance(bound, (int, float)) and not math.isfinite(bound):
            raise InvalidArgumentError(
                f"uniform_(): the bounds must be finite numbers, got [{low}, {high}) (the "
                "draws would all be inf or NaN)"
            )
    if not low <= high:
        raise InvalidArgumentError(
            f"uniform_(): the lower bound {low} is above the upper bound {high}"
        )
    if dtype.kind == "complex floating":  # each part drawn on [low, high), as PyTorch's
        part = _dtypes.float64 if dtype is _dtypes.complex128 else _dtypes.float32
        real, imag = (uniform_values(shape, low, high, part, device, generator) for _ in "ri")
        return (real + imag * 1j).to(dtype)
    if high - low > finfo(dtype).max:
        # (high - low) overflows: every draw became inf, then the largest value under high
        raise InvalidArgumentError(
            f"uniform_(): the range [{low}, {high}) is wider than the largest {dtype.name} "
            f"({finfo(dtype).max:g}), as PyTorch's; draw on a narrower one"
        )
    sample = rand(*shape, dtype=dtype, device=device, generator=generator)
    values = sample * (high - low) + low
    if low < high:
        top = values.new_full((), high)
        below = top.nextafter(values.new_full((), low))  # the largest value under high
        values = values.where(values < top, below)
    return values


def _normal(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with samples of the normal distribution with ``mean`` and ``std``, in place."""
    if not std >= 0:  # (NaN too: every draw would be NaN)
        raise InvalidArgumentError(f"normal_(): std must be non-negative, got {std}")
    sample = randn(*self.shape, dtype=self.dtype, device=self._device, generator=generator)
    return apply_inplace(self, filled_with, sample * std + mean, name="normal_()")


def _bernoulli(self: Tensor, p: float | None = None, *, generator: Any = None) -> Tensor:
    """:func:`plugrad.bernoulli` of this tensor's probabilities (or of ``p``)."""
    return bernoulli(self, p, generator=generator)


def _multinomial(
    self: Tensor, num_samples: int, replacement: bool = False, *, generator: Generator | None = None
) -> Tensor:
    """:func:`plugrad.multinomial` of this tensor's weights."""
    return multinomial(self, num_samples, replacement, generator=generator)


def _check_real_floating(self: Tensor, method: str, distribution: str) -> None:
    if self.dtype.kind != "real floating":
        raise DtypeError(
            f"{method}(): the {distribution} distribution is continuous; fill a real "
            f"floating-point tensor, not {self.dtype.name} (convert with .float() first)"
        )


def _check_positive(method: str, name: str, value: float) -> None:
    if not value > 0:
        raise InvalidArgumentError(f"{method}(): {name} must be > 0, got {value!r}")


def _uniform_sample(self: Tensor, generator: Any) -> Tensor:
    """Uniform samples on ``[0, 1)`` of this tensor's shape and floating dtype (or the widest)."""
    dtype = self.dtype if self.dtype.kind == "real floating" else _widest_float(self._device)
    if dtype in _dtypes.half_floats:
        # float16's largest draw, 1 - 2**-11, cut the tails of exponential_ at 7.6 (PyTorch
        # draws in float32 for float16 too)
        dtype = _dtypes.float32
    return rand(*self.shape, dtype=dtype, device=self._device, generator=generator)


def _fill_in_place(self: Tensor, sample: Tensor, method: str) -> Tensor:
    with _no_grad():
        value = sample.to(self.dtype)
    return apply_inplace(self, filled_with, value, name=f"{method}()")


def _bernoulli_(self: Tensor, p: float | Tensor = 0.5, *, generator: Any = None) -> Tensor:
    """Fill with 1 with probability ``p``, else 0, in place, in any dtype.

    ``p`` is a number or a tensor of probabilities that broadcasts to this one.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.zeros(4, dtype=plugrad.int64).bernoulli_(1.0)
    tensor([1, 1, 1, 1])
    """
    if isinstance(p, Tensor):
        if broadcast_shapes(p.shape, self.shape) != self.shape:
            raise ShapeError(
                f"bernoulli_(): the probabilities of shape {p.shape} do not broadcast to the "
                f"tensor's shape {self.shape}"
            )
        with _no_grad():
            probabilities = p.detach().expand(*self.shape)
        drawn = bernoulli(probabilities, generator=generator)
    else:
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            raise InvalidArgumentError(f"bernoulli_(): p must be a number in [0, 1], got {p!r}")
        # A float64 draw for a number, as PyTorch's double (in float32, any p below 6e-8
        # came true as often as 6e-8).
        wide = _widest_float(self._device)
        drawn = rand(*self.shape, dtype=wide, device=self._device, generator=generator) < p
    return _fill_in_place(self, drawn, "bernoulli_")


def _exponential_(self: Tensor, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with samples of the exponential distribution of rate ``lambd``, in place.

    Examples
    --------
    >>> import plugrad
    >>> bool(plugrad.all(plugrad.empty(100).exponential_(2.0) >= 0))
    True
    """
    _check_real_floating(self, "exponential_", "exponential")
    _check_positive("exponential_", "lambd", lambd)
    with _no_grad():
        sample = -(-_uniform_sample(self, generator)).log1p() / lambd
    return _fill_in_place(self, sample, "exponential_")


def _geometric_(self: Tensor, p: float, *, generator: Any = None) -> Tensor:
    """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...),
    in place, in any real dtype.

    Examples
    --------
    >>> import plugrad
    >>> bool(plugrad.all(plugrad.empty(100, dtype=plugrad.int64).geometric_(0.5) >= 1))
    True
    """
    if self.dtype.kind not in ("signed integer", "unsigned integer", "real floating"):
        raise DtypeError(f"geometric_(): fills integer or real tensors, not {self.dtype.name}")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1:
        raise InvalidArgumentError(f"geometric_(): p must be a number in (0, 1), got {p!r}")
    with _no_grad():
        # 1 - u lies in (0, 1]: the ceiling of log(1 - u) / log(1 - p) is at least 1
        # except where 1 - u is 1, which the maximum lifts to 1.
        trials = ((-_uniform_sample(self, generator)).log1p() / math.log1p(-p)).ceil()
        sample = trials.clamp(min=1.0)
    return _fill_in_place(self, sample, "geometric_")


def _cauchy_(
    self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None
) -> Tensor:
    """Fill with samples of the Cauchy distribution at ``median`` of scale ``sigma``, in place.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.empty(3).cauchy_().shape
    (3,)
    """
    _check_real_floating(self, "cauchy_", "Cauchy")
    _check_positive("cauchy_", "sigma", sigma)
    with _no_grad():
        sample = ((_uniform_sample(self, generator) - 0.5) * math.pi).tan() * sigma + median
    return _fill_in_place(self, sample, "cauchy_")


def _log_normal_(
    self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Any = None
) -> Tensor:
    """Fill with ``exp`` of samples of the normal distribution of ``mean`` and ``std``, in place.

    Examples
    --------
    >>> import plugrad
    >>> bool(plugrad.all(plugrad.empty(100).log_normal_(0.0, 0.5) > 0))
    True
    """
    _check_real_floating(self, "log_normal_", "log-normal")
    _check_positive("log_normal_", "std", std)
    sample = randn(*self.shape, dtype=self.dtype, device=self._device, generator=generator)
    with _no_grad():
        sample = (sample * std + mean).exp()
    return _fill_in_place(self, sample, "log_normal_")


def _random_ends(dtype: _dtypes.DType) -> tuple[int, int]:
    """The smallest and largest integers ``dtype`` holds exactly, and ``random_()``'s end."""
    if dtype == _dtypes.bool:
        return 0, 1
    if dtype.kind in ("signed integer", "unsigned integer"):
        info = iinfo(dtype)
        return info.min, info.max
    if dtype.kind == "real floating":
        exact = 2 ** (round(-math.log2(finfo(dtype).eps)) + 1)
        return -exact, exact
    raise DtypeError(f"random_(): fills integer, bool or real tensors, not {dtype.name}")


_UP_TO_THE_DTYPE = object()  # random_(n): the one number given is the upper end
_FROM_ZERO = object()  # random_(): from 0 (random_(0) is an empty range, refused)


def _random_(
    self: Tensor,
    from_: Any = _FROM_ZERO,
    to: Any = _UP_TO_THE_DTYPE,
    *,
    generator: Any = None,
) -> Tensor:
    """Fill with integers drawn uniformly from ``[from_, to)``, in place.

    As in PyTorch, ``random_(to)`` draws from ``[0, to)``, ``random_(from_, None)`` from
    ``from_`` up to the largest integer the dtype holds exactly (``2**24`` in float32), and
    ``random_()`` from 0 up to it.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.empty(100).random_(3, 5)
    >>> sorted(set(x.tolist()))
    [3.0, 4.0]
    """
    smallest, largest = _random_ends(self.dtype)
    if to is _UP_TO_THE_DTYPE:
        low, high = (0, largest + 1) if from_ is _FROM_ZERO else (0, from_)
    else:
        low, high = (0 if from_ is _FROM_ZERO else from_), (largest + 1 if to is None else to)
    for name, value in (("from", low), ("to", high)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ArgumentError(f"random_(): {name} must be an int, got {value!r}")
    if not low < high:
        raise InvalidArgumentError(f"random_(): expects from < to, got from={low}, to={high}")
    if low < smallest or high - 1 > largest:
        raise InvalidArgumentError(
            f"random_(): the range [{low}, {high}) reaches outside the integers "
            f"{self.dtype.name} holds exactly, [{smallest}, {largest}]"
        )
    target = self._device
    if high - low <= 2**53:
        drawn = randint(low, high, self.shape, device=target, generator=generator)
    elif high - low <= 2**63:
        drawn = _wide_randint(high - low, self.shape, target, generator) + low
    else:
        drawn = _int64_in(low, high, self.shape, target, generator)
    return _fill_in_place(self, drawn, "random_")


def _wide_randint(width: int, shape: tuple[int, ...], target: Device, generator: Any) -> Tensor:
    """int64 integers uniform on ``[0, width)`` for ``2**32 < width <= 2**63``, beyond what a
    floored float64 draw gives without bias: 32-bit halves make ``bits`` bits, and draws at
    or past ``width`` (less than half of them) are drawn again."""
    bits = (width - 1).bit_length()

    def draw() -> Tensor:
        upper = randint(0, 2 ** (bits - 32), shape, device=target, generator=generator)
        lower = randint(0, 2**32, shape, device=target, generator=generator)
        return upper * 2**32 + lower

    with _no_grad():
        drawn = draw()
        while width < 2**bits and bool((drawn >= width).any()):
            drawn = draw().where(drawn >= width, drawn)
    return drawn


def _int64_in(low: int, high: int, shape: tuple[int, ...], target: Device, generator: Any):
    """int64 integers uniform on ``[low, high)`` wider than ``2**63``: any int64 from two
    32-bit halves, drawn again outside the range (less than half of them; the offsets of
    :func:`_wide_randint` would overflow int64 here)."""

    def draw() -> Tensor:
        upper = randint(-(2**31), 2**31, shape, device=target, generator=generator)
        lower = randint(0, 2**32, shape, device=target, generator=generator)
        return upper * 2**32 + lower  # within [-2**63, 2**63)

    def outside(values: Tensor) -> Tensor:
        below = values < low
        return below if high > 2**63 - 1 else below | (values >= high)

    with _no_grad():
        drawn = draw()
        while bool(outside(drawn).any()):
            drawn = draw().where(outside(drawn), drawn)
    return drawn


install_methods(
    uniform_=_uniform,
    normal_=_normal,
    bernoulli=_bernoulli,
    multinomial=_multinomial,
    bernoulli_=_bernoulli_,
    exponential_=_exponential_,
    geometric_=_geometric_,
    cauchy_=_cauchy_,
    log_normal_=_log_normal_,
    random_=_random_,
)
