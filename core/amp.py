"""``plugrad.amp``: PyTorch's loss scaling (:class:`GradScaler`) and ``autocast``.

:class:`GradScaler` works as PyTorch's: the loss is multiplied by a scale before
``backward()``, the gradients are divided by it before the optimizer's step, a
step whose gradients hold an inf or NaN is skipped and the scale halved, and the
scale doubles after ``growth_interval`` steps without one. It guards float16
training (``model.half()``) and is harmless in float32.

``autocast`` runs each op in a lower precision where PyTorch's does; plugrad
computes every op in its inputs' dtype, so only ``autocast(..., enabled=False)``
is taken (the usual ``enabled=use_amp`` of scripts that run without it); an enabled
autocast is refused with what to do instead.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from . import dtypes as _dtypes
from . import ops as _ops
from .errors import (
    ArgumentError,
    CallOrderError,
    InvalidArgumentError,
    MissingStateError,
    NotSupportedError,
    StateDictError,
)
from .grad_mode import no_grad
from .tensor import Tensor

__all__ = [
    "GradScaler",
    "autocast",
    "custom_bwd",
    "custom_fwd",
    "is_autocast_available",
    "is_autocast_enabled",
]


F = TypeVar("F", bound=Callable[..., Any])


class autocast:
    """PyTorch's ``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``;
    taken only with ``enabled=False`` (see the module's note). A context manager and a
    decorator.

    Examples
    --------
    >>> import plugrad
    >>> with plugrad.autocast("cpu", enabled=False):
    ...     y = plugrad.ones(2) * 2
    """

    def __init__(
        self,
        device_type: str = "cpu",
        dtype: Any = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ) -> None:
        if not isinstance(device_type, str):
            raise ArgumentError(
                f"autocast() takes a device type such as 'cpu', got {device_type!r}"
            )
        if enabled:
            raise NotSupportedError(
                "autocast(enabled=True): plugrad computes every op in its inputs' dtype and "
                "casts nothing on its own; convert the model and its inputs instead "
                "(model.half(), x.half(), with a GradScaler), or pass enabled=False"
            )
        self.device_type, self.dtype, self.enabled = device_type, dtype, False
        self.device = device_type  # (PyTorch's attribute, beside device_type)

    def __enter__(self) -> autocast:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def __call__(self, function: F) -> F:
        return function  # a disabled autocast changes nothing around a call


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether an autocast region is active: never, as only a disabled one is taken.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.is_autocast_enabled(), plugrad.is_autocast_enabled("cpu")
    (False, False)
    """
    if device_type is not None and not isinstance(device_type, str):
        raise ArgumentError(
            f"is_autocast_enabled() takes a device type such as 'cpu', got {device_type!r}"
        )
    return False


def is_autocast_available(device_type: str) -> bool:
    """Whether :class:`autocast` can be enabled for ``device_type`` (``"cpu"``, ``"cuda"``):
    never, in plugrad.

    PyTorch's answers True for the device types its autocast covers. plugrad
    computes every op in its inputs' dtype and takes only a disabled autocast,
    so it answers False for every device type: code that enables autocast only
    where it is available (``enabled=is_autocast_available(device)``) runs
    without it, in the model's own dtype.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.amp.is_autocast_available("cpu")
    False
    """
    _device_type_checked("is_autocast_available", device_type)
    return False


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

    Under an enabled autocast PyTorch's runs ``forward`` with autocast off, its
    floating-point tensor arguments cast to ``cast_inputs`` where that is given.
    plugrad's autocast is never enabled (see :func:`is_autocast_available`), so
    ``forward`` runs as it is, with its arguments as given: what PyTorch's does
    outside autocast, ``cast_inputs`` included. Used bare or with arguments.

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
        # PyTorch's notes on the context whether autocast ran the forward, for custom_bwd.
        if args and _settable(args[0]):
            args[0]._fwd_used_autocast = False
            args[0]._dtype = None
        return fwd(*args, **kwargs)

    return forward


def custom_bwd(bwd: F | None = None, *, device_type: str) -> Any:
    """Decorate a :class:`plugrad.autograd.Function`'s ``backward`` as PyTorch's
    ``torch.amp.custom_bwd(device_type=...)``.

    PyTorch's runs ``backward`` under the autocast state its :func:`custom_fwd`
    forward ran under; plugrad's is always off, so ``backward`` runs as it is.

    Examples
    --------
    See :func:`custom_fwd`.
    """
    _device_type_checked("custom_bwd", device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    if not callable(bwd):
        raise ArgumentError(f"custom_bwd() decorates a backward function, got {bwd!r}")
    return bwd


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
