"""``plugrad.amp``: PyTorch's loss scaling (:class:`GradScaler`) and ``autocast``.

:class:`GradScaler` works as PyTorch's: the loss is multiplied by a scale before
``backward()``, the gradients are divided by it before the optimizer's step, a
step whose gradients hold an inf or NaN is skipped and the scale halved, and the
scale doubles after ``growth_interval`` steps without one. It guards float16
training (``model.half()``) and is harmless in float32.

``autocast`` runs the ops of PyTorch's autocast lists in a lower precision (or
float32) inside a region, as PyTorch's (see :class:`autocast` and
:mod:`plugrad.autocast_mode`).
"""

from __future__ import annotations

import contextlib
import functools
import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from . import autocast_mode as _autocast_mode
from . import dtypes as _dtypes
from . import ops as _ops
from .devices import is_available as _cuda_is_available
from .errors import (
    ArgumentError,
    CallOrderError,
    InvalidArgumentError,
    MissingStateError,
    NotSupportedError,
    StateDictError,
    checked_bool,
)
from .grad_mode import no_grad
from .tensor import Tensor

__all__ = [
    "GradScaler",
    "autocast",
    "custom_bwd",
    "custom_fwd",
    "clear_autocast_cache",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_cache_enabled",
    "is_autocast_enabled",
    "set_autocast_cache_enabled",
    "set_autocast_dtype",
    "set_autocast_enabled",
]


F = TypeVar("F", bound=Callable[..., Any])


class autocast(contextlib.ContextDecorator):
    """Run the ops of a region in a lower precision where PyTorch's autocast does:
    ``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``.

    Inside an enabled region, the ops of PyTorch's lists for ``device_type``
    (``"cpu"`` or ``"cuda"``) cast their floating-point tensor arguments (not
    float64 ones): matrix products, linear layers and convolutions to ``dtype``
    (by default bfloat16 on the CPU, float16 on CUDA), losses, linear algebra
    and FFTs to float32, ``cat``/``stack`` to the widest of their inputs. Every
    other op runs in its inputs' dtype. The casts are differentiable, so
    float32 parameters get float32 gradients; a parameter's cast is made once
    per outermost region (``cache_enabled``). See :mod:`plugrad.autocast_mode`
    for the lists.

    As PyTorch's, a dtype the device type's autocast does not take (the CPU
    takes bfloat16 and float16) or a CUDA region without a CUDA device warns
    and leaves autocast off. bfloat16 is stored by the torch and JAX backends:
    on NumPy, use ``dtype=plugrad.float16``. A context manager and a decorator;
    the state is per thread.

    Examples
    --------
    >>> import plugrad
    >>> a = plugrad.ones((2, 2))
    >>> with plugrad.autocast("cpu", dtype=plugrad.float16):
    ...     (a @ a).dtype, (a + a).dtype
    (plugrad.float16, plugrad.float32)
    """

    def __init__(
        self,
        device_type: str = "cpu",
        dtype: Any = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ) -> None:
        device_type = _checked_autocast_device("autocast", device_type)
        enabled = checked_bool("autocast(): enabled", enabled)
        if enabled and device_type not in _AUTOCAST_DTYPES:
            raise NotSupportedError(
                f"autocast(): plugrad's autocast covers the device types 'cpu' and 'cuda', "
                f"not {device_type!r}"
            )
        if dtype is None:
            dtype = _autocast_mode.default_dtype(device_type)
        elif not isinstance(dtype, _dtypes.DType):
            raise ArgumentError(f"autocast(): dtype must be a plugrad dtype, got {dtype!r}")
        if enabled and dtype not in _AUTOCAST_DTYPES[device_type]:
            warnings.warn(
                f"autocast({device_type!r}, dtype={dtype}): {device_type} autocast takes "
                f"{' and '.join(map(str, _AUTOCAST_DTYPES[device_type]))}; autocast is left off",
                UserWarning,
                stacklevel=2,
            )
            enabled = False
        if enabled and device_type == "cuda" and not _cuda_is_available():
            warnings.warn(
                "autocast('cuda'): no CUDA device is available; autocast is left off",
                UserWarning,
                stacklevel=2,
            )
            enabled = False
        if cache_enabled is None:
            cache_enabled = _autocast_mode.cache_enabled()
        self.device_type, self.fast_dtype, self.enabled = device_type, dtype, enabled
        self.device = device_type  # (PyTorch's attribute, beside device_type)
        self._cache_enabled = bool(cache_enabled)
        self._region = _autocast_mode.region(device_type, dtype, enabled, self._cache_enabled)

    @property
    def dtype(self) -> _dtypes.DType:
        return self.fast_dtype

    def __enter__(self) -> autocast:
        self._region.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._region.__exit__()


#: The dtypes each device type's autocast takes (PyTorch's).
_AUTOCAST_DTYPES = {
    "cpu": (_dtypes.bfloat16, _dtypes.float16),
    "cuda": (_dtypes.float16, _dtypes.bfloat16),
}


def _checked_autocast_device(function: str, device_type: Any) -> str:
    _device_type_checked(function, device_type)
    return device_type.partition(":")[0]


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is enabled for ``device_type`` in this thread (without one: for
    ``"cuda"``, as PyTorch's).

    Examples
    --------
    >>> import plugrad
    >>> with plugrad.autocast("cpu", dtype=plugrad.float16):
    ...     plugrad.is_autocast_enabled("cpu"), plugrad.is_autocast_enabled()
    (True, False)
    """
    if device_type is None:
        device_type = "cuda"
    device_type = _checked_autocast_device("is_autocast_enabled", device_type)
    return _autocast_mode.enabled_dtype(device_type) is not None


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Enable or disable autocast for ``device_type`` in this thread, outside a region
    (PyTorch's low-level switch; :class:`autocast` is the usual way)."""
    device_type = _checked_autocast_device("set_autocast_enabled", device_type)
    _autocast_mode.set_enabled(
        device_type, checked_bool("set_autocast_enabled(): enabled", enabled)
    )


def get_autocast_dtype(device_type: str) -> _dtypes.DType:
    """The dtype autocast uses for ``device_type`` in this thread (bfloat16 for ``"cpu"``,
    float16 for ``"cuda"`` unless set).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.get_autocast_dtype("cpu")
    plugrad.bfloat16
    """
    device_type = _checked_autocast_device("get_autocast_dtype", device_type)
    return _autocast_mode.default_dtype(device_type)


def set_autocast_dtype(device_type: str, dtype: _dtypes.DType) -> None:
    """Set the dtype autocast uses for ``device_type`` in this thread."""
    device_type = _checked_autocast_device("set_autocast_dtype", device_type)
    if not isinstance(dtype, _dtypes.DType):
        raise ArgumentError(f"set_autocast_dtype(): takes a plugrad dtype, got {dtype!r}")
    _autocast_mode.set_default_dtype(device_type, dtype)


def is_autocast_cache_enabled() -> bool:
    """Whether autocast keeps one cast of each parameter per region (the default)."""
    return _autocast_mode.cache_enabled()


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Whether autocast keeps one cast of each parameter per region, in this thread."""
    _autocast_mode.set_cache_enabled(checked_bool("set_autocast_cache_enabled(): enabled", enabled))


def clear_autocast_cache() -> None:
    """Forget the casts of parameters autocast kept in this thread."""
    _autocast_mode.clear_cache()


def is_autocast_available(device_type: str) -> bool:
    """Whether :class:`autocast` covers ``device_type``: ``"cpu"`` and ``"cuda"``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.amp.is_autocast_available("cpu"), plugrad.amp.is_autocast_available("mps")
    (True, False)
    """
    return _checked_autocast_device("is_autocast_available", device_type) in _AUTOCAST_DTYPES


#: The device types PyTorch's amp functions know (a typo among them is an error there).
_DEVICE_TYPES = (
    "cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
    "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone",
)  # fmt: skip


def _device_type_checked(function: str, device_type: Any) -> str:
    if not isinstance(device_type, str):
        raise ArgumentError(
            f"{function}() takes device_type as a str such as 'cpu' or 'cuda', got {device_type!r}"
        )
    if device_type.partition(":")[0] not in _DEVICE_TYPES:
        raise InvalidArgumentError(
            f"{function}(): unknown device type {device_type!r}; expected one of "
            f"{', '.join(_DEVICE_TYPES)}"
        )
    return device_type


def custom_fwd(fwd: F | None = None, *, device_type: str, cast_inputs: Any = None) -> Any:
    """Decorate a :class:`plugrad.autograd.Function`'s ``forward`` as PyTorch's
    ``torch.amp.custom_fwd(device_type=..., cast_inputs=...)``.

    Under an enabled autocast for ``device_type``, with ``cast_inputs`` given,
    ``forward`` runs with autocast off and its floating-point tensor arguments
    of that device type (not float64 ones) cast to ``cast_inputs``; without it,
    ``forward`` runs under the region's autocast. Outside autocast, ``forward``
    runs as it is. Used bare or with arguments.

    Parameters
    ----------
    fwd : callable, optional
        The ``forward`` (``custom_fwd(forward, device_type="cpu")``); without it, a
        decorator.
    device_type : str
        The device type (``"cpu"``, ``"cuda"``), keyword-only as PyTorch's.
    cast_inputs : dtype, optional
        The dtype an enabled autocast would cast the inputs to.

    Examples
    --------
    >>> import plugrad
    >>> class Double(plugrad.autograd.Function):
    ...     @staticmethod
    ...     @plugrad.amp.custom_fwd(device_type="cpu", cast_inputs=plugrad.float32)
    ...     def forward(ctx, x):
    ...         return x * 2
    ...     @staticmethod
    ...     @plugrad.amp.custom_bwd(device_type="cpu")
    ...     def backward(ctx, grad):
    ...         return grad * 2
    >>> x = plugrad.tensor([1.0], dtype=plugrad.float64, requires_grad=True)
    >>> y = Double.apply(x); y.backward(); y.dtype, x.grad
    (plugrad.float64, tensor([2.], dtype=plugrad.float64))
    """
    _device_type_checked("custom_fwd", device_type)
    if cast_inputs is not None and not isinstance(cast_inputs, _dtypes.DType):
        raise ArgumentError(
            f"custom_fwd(): cast_inputs must be a dtype (plugrad.float16) or None, got "
            f"{cast_inputs!r}"
        )
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    if not callable(fwd):
        raise ArgumentError(f"custom_fwd() decorates a forward function, got {fwd!r}")

    @functools.wraps(fwd)
    def forward(*args: Any, **kwargs: Any) -> Any:
        enabled = _autocast_mode.enabled_dtype(device_type) is not None
        # Noted on the context, as PyTorch's, for custom_bwd: the autocast forward ran under.
        if args and _settable(args[0]):
            args[0]._fwd_used_autocast = enabled and cast_inputs is None
            args[0]._dtype = _autocast_mode.default_dtype(device_type)
        if cast_inputs is None or not enabled:
            return fwd(*args, **kwargs)
        with autocast(device_type, enabled=False):
            return fwd(
                *_cast_floating(args, device_type, cast_inputs),
                **_cast_floating(kwargs, device_type, cast_inputs),
            )

    return forward


def _cast_floating(value: Any, device_type: str, dtype: _dtypes.DType) -> Any:
    """``value`` with its floating-point tensors of ``device_type`` (not float64 ones) cast to
    ``dtype``, also inside lists, tuples and dicts."""
    if isinstance(value, Tensor):
        return _ops.astype(value, dtype) if _autocast_mode.eligible(value, device_type) else value
    if isinstance(value, dict):
        return {key: _cast_floating(item, device_type, dtype) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_floating(item, device_type, dtype) for item in value)
    return value


def custom_bwd(bwd: F | None = None, *, device_type: str) -> Any:
    """Decorate a :class:`plugrad.autograd.Function`'s ``backward`` as PyTorch's
    ``torch.amp.custom_bwd(device_type=...)``.

    ``backward`` runs under the autocast state its :func:`custom_fwd` forward ran
    under (enabled where the region's autocast was and no ``cast_inputs`` turned
    it off), as PyTorch's.

    Examples
    --------
    See :func:`custom_fwd`.
    """
    _device_type_checked("custom_bwd", device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    if not callable(bwd):
        raise ArgumentError(f"custom_bwd() decorates a backward function, got {bwd!r}")

    @functools.wraps(bwd)
    def backward(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0] if args else None
        enabled = getattr(ctx, "_fwd_used_autocast", False)
        if device_type not in _AUTOCAST_DTYPES:  # (a device type plugrad's autocast lacks)
            return bwd(*args, **kwargs)
        dtype = getattr(ctx, "_dtype", None) or _autocast_mode.default_dtype(device_type)
        with autocast(device_type, dtype=dtype, enabled=enabled):
            return bwd(*args, **kwargs)

    return backward


def _settable(ctx: Any) -> bool:
    """Whether attributes can be set on ``ctx`` (a Function's context; not a plain value)."""
    return hasattr(ctx, "__dict__")


class GradScaler:
    """Scale the loss against float16 underflow, and skip steps whose gradients overflowed.

    PyTorch's ``torch.amp.GradScaler``: ``scaler.scale(loss).backward()``, then
    ``scaler.step(optimizer)`` (which unscales the gradients first, unless
    ``scaler.unscale_(optimizer)`` did, e.g. before clipping them) and
    ``scaler.update()``. With ``enabled=False`` every method passes through.

    A gradient that is finite but overflows when unscaled (a scale below 1) counts
    as an inf: the step is skipped and the scale backs off. (PyTorch checks the
    gradients before unscaling them and steps with the inf.)

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.nn.Parameter(plugrad.ones(2))
    >>> opt = plugrad.optim.SGD([w], lr=0.5)
    >>> scaler = plugrad.amp.GradScaler(init_scale=1024.0)
    >>> scaler.scale((w * w).sum()).backward()
    >>> _ = scaler.step(opt); scaler.update()
    >>> w, scaler.get_scale()
    (Parameter containing:
    tensor([0., 0.], requires_grad=True), 1024.0)
    """

    def __init__(
        self,
        device: str = "cpu",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        if not init_scale > 0:
            raise InvalidArgumentError(f"GradScaler: init_scale must be > 0, got {init_scale!r}")
        self._device = device
        self._enabled = bool(enabled)
        self._scale = _dtypes.rounded_to_float32(float(init_scale))  # (PyTorch's: float32)
        self.set_growth_factor(growth_factor)
        self.set_backoff_factor(backoff_factor)
        self.set_growth_interval(growth_interval)
        self._growth_tracker = 0
        #: id(optimizer) -> {"unscaled": bool, "stepped": bool, "found_inf": bool}
        self._per_optimizer: dict[int, dict[str, bool]] = {}

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        """The scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_factor(self, new_factor: float) -> None:
        if not new_factor > 1.0:
            raise InvalidArgumentError(f"GradScaler: growth_factor must be > 1, got {new_factor!r}")
        self._growth_factor = float(new_factor)

    def set_backoff_factor(self, new_factor: float) -> None:
        if not 0.0 < new_factor < 1.0:
            raise InvalidArgumentError(
                f"GradScaler: backoff_factor must be in (0, 1), got {new_factor!r}"
            )
        self._backoff_factor = float(new_factor)

    def set_growth_interval(self, new_interval: int) -> None:
        if not (isinstance(new_interval, int) and new_interval > 0):
            raise InvalidArgumentError(
                f"GradScaler: growth_interval must be a positive int, got {new_interval!r}"
            )
        self._growth_interval = new_interval

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor, or tensors in tuples, lists and dicts) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if outputs.ndim == 0 and outputs.dtype in _HALF_DTYPES:
                # PyTorch's scale is a 0-d float32 tensor: a 0-d half-precision loss
                # becomes float32 (2.0 * 65536 is 131072, where float16 overflows to inf).
                return outputs.float() * self._scale
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, dict):
            return {key: self.scale(value) for key, value in outputs.items()}
        raise ArgumentError(f"GradScaler.scale() takes tensors, got {type(outputs).__name__}")

    def _state(self, optimizer: Any) -> dict[str, bool]:
        return self._per_optimizer.setdefault(
            id(optimizer), {"unscaled": False, "stepped": False, "found_inf": False}
        )

    def unscale_(self, optimizer: Any) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, and note whether any holds
        an inf or NaN; once per optimizer between :meth:`update` calls."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["stepped"]:  # (step() unscales too: this is the first thing to say)
            raise CallOrderError("unscale_() is being called after step(); call update() first")
        if state["unscaled"]:
            raise CallOrderError(
                "unscale_() has already been called on this optimizer since the last update()"
            )
        inverse = _dtypes.rounded_to_float32(1.0 / self._scale)  # PyTorch's float32 reciprocal
        found_inf = False
        with no_grad():
            for grad in _gradients(optimizer):
                grad.mul_(inverse)
                if not found_inf and not bool(_ops.all(_ops.isfinite(grad))):
                    found_inf = True
        state["unscaled"], state["found_inf"] = True, found_inf

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """``optimizer.step(*args, **kwargs)`` on the unscaled gradients, unless one holds an
        inf or NaN (then nothing changes); returns what the step returns, or None."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise InvalidArgumentError("GradScaler.step() does not take a closure (as PyTorch's)")
        state = self._state(optimizer)
        if state["stepped"]:
            raise CallOrderError("step() has already been called since the last update()")
        if not state["unscaled"]:
            self.unscale_(optimizer)
        state["stepped"] = True
        if state["found_inf"]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Halve the scale (``backoff_factor``) if a step found an inf or NaN, or grow it
        (``growth_factor``) after ``growth_interval`` steps without one; or set it."""
        if not self._enabled:
            return
        if new_scale is not None:
            value = float(new_scale)  # a 0-d tensor too
            if not (value > 0 and math.isfinite(value)):
                raise InvalidArgumentError(
                    f"GradScaler.update(): new_scale must be > 0, got {value!r}"
                )
            self._scale = _dtypes.rounded_to_float32(value)
        elif not self._per_optimizer:
            raise CallOrderError(
                "GradScaler.update(): no step() or unscale_() since the last update(), so no "
                "gradient was checked for inf or NaN; call scaler.step(optimizer) before "
                "scaler.update(), or pass update(new_scale)"
            )
        else:
            if any(state["found_inf"] for state in self._per_optimizer.values()):
                self._scale = _dtypes.rounded_to_float32(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    # PyTorch's scale is a float32 tensor: it grows only to what that holds.
                    grown = _dtypes.rounded_to_float32(self._scale * self._growth_factor)
                    if grown != math.inf:
                        self._scale = grown
                    self._growth_tracker = 0
        self._per_optimizer.clear()

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's keys: ``scale``, ``growth_factor``, ``backoff_factor``,
        ``growth_interval``, ``_growth_tracker`` (empty when disabled)."""
        if not self._enabled:
            return {}
        return {
            "scale": self._scale,
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if not self._enabled:
            return
        if not state_dict:
            raise StateDictError(
                "GradScaler.load_state_dict(): the state dict is empty (it came from a "
                "disabled scaler)"
            )
        keys = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")
        missing = [key for key in keys if key not in state_dict]
        if missing:
            raise MissingStateError(
                f"GradScaler.load_state_dict(): the state dict lacks {missing}; it needs the "
                f"keys GradScaler.state_dict() gives, {list(keys)}. Nothing was changed."
            )
        # Read and checked before anything is set: an error leaves the scaler as it was.
        scale = _dtypes.rounded_to_float32(float(state_dict["scale"]))
        if not scale > 0:
            raise InvalidArgumentError(
                f"GradScaler.load_state_dict(): the scale must be > 0, got {scale!r}. Nothing "
                "was changed."
            )
        restored = GradScaler(
            init_scale=scale,
            growth_factor=float(state_dict["growth_factor"]),
            backoff_factor=float(state_dict["backoff_factor"]),
            growth_interval=int(state_dict["growth_interval"]),
        )
        tracker = int(state_dict["_growth_tracker"])
        self._scale = restored._scale
        self._growth_factor = restored._growth_factor
        self._backoff_factor = restored._backoff_factor
        self._growth_interval = restored._growth_interval
        self._growth_tracker = tracker


_HALF_DTYPES = (_dtypes.float16, _dtypes.bfloat16)


def _gradients(optimizer: Any) -> Iterable[Tensor]:
    for group in optimizer.param_groups:
        for parameter in group["params"]:
            if parameter.grad is not None:
                yield parameter.grad
