"""Checking mode: what plugin kernels and backward rules return, checked at the op boundary.

Registration checks what can be checked without running anything (names,
signatures, arities). What a kernel or rule *returns* can only be checked when
it runs, and that costs every op: even the cheapest always-on check (array type
and dtype of each output, shape and dtype of each gradient) made the asv
overhead chain about 10% slower (no-grad forward) and 6% slower (forward plus
backward). So the full checks run only in checking mode, which is off by
default. Two are always on, made cheap on the success path: the per-op path
refuses a kernel output that is not an array of its backend (one identity
comparison of its type, :mod:`plugrad.dispatch`), or, when it records a node,
one of an integer or bool dtype (one set lookup), and the engine a gradient
of the wrong kind, dtype or shape (:mod:`plugrad.graph`).

Switching the mode swaps the tables: on, every kernel in the per-device
kernel tables is replaced by a checking wrapper and every backward rule by a
checking wrapper; off, the plain kernels and rules are back. The per-op path
never tests a flag, so with checking off it costs nothing.

In checking mode,

- every kernel's result must be an array of the inputs' backend and device,
  of a dtype plugrad knows, floating-point (or complex) for a differentiable op
  with floating-point inputs;
- a kernel that is not the op's generic kernel (an override, an op's or a
  backend's own kernel) must agree with the generic kernel: same shape, same
  dtype, values within the square root of the dtype's epsilon, relative to the
  largest value;
- every backward rule must return a gradient (not ``None``) on the inputs'
  device (a Tensor under ``create_graph=True``) with the dtype and shape of its
  input (for broadcasting ops: a shape that sums back to the input's).

A violation raises :class:`~plugrad.errors.PluginOutputError` naming the
plugin (and its distribution), the op and what was wrong.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from . import dtypes as _dtypes
from .errors import ArgumentError, PluginOutputError
from .errors import type_name as _type_name
from .graph import ArraySpec
from .plugin_tables import device_of_array
from .tensor import Tensor

if TYPE_CHECKING:
    from .backend import Device
    from .kerneldef import KernelSource
    from .opdef import RegisteredOp

__all__ = ["checking", "checks_enabled", "set_checks"]

_enabled = False
#: Called after the mode is switched (plugin loading reinstalls the kernel tables and rules).
_listeners: list[Callable[[], None]] = []
#: op -> its declared rules, for every op whose rules are currently wrapped.
_declared_rules: dict[RegisteredOp, tuple[Any, ...]] = {}


def checks_enabled() -> bool:
    """Whether checking mode is on.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.plugins.checks_enabled()
    False
    """
    return _enabled


def set_checks(enabled: bool) -> None:
    """Turn checking mode on or off for the whole process.

    In checking mode every kernel's output and every backward rule's gradient
    is checked as it is produced, and a wrong shape, dtype or backend raises
    :class:`~plugrad.errors.PluginOutputError` naming the plugin and the op.
    It slows every op down; with it off (the default) the checks cost nothing.
    ``PLUGRAD_CHECK_PLUGINS=1`` in the environment turns it on at import.

    Parameters
    ----------
    enabled : bool
        ``True`` to check, ``False`` to stop checking.

    See Also
    --------
    checking : the same as a context manager.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.plugins.set_checks(True)
    >>> plugrad.exp(plugrad.tensor([0.0]))
    tensor([1.])
    >>> plugrad.plugins.set_checks(False)
    """
    global _enabled
    if not isinstance(enabled, bool):
        raise ArgumentError(f"set_checks() takes True or False, got {enabled!r}")
    if enabled == _enabled:
        return
    _enabled = enabled
    for listener in _listeners:
        listener()


def on_switch(listener: Callable[[], None]) -> None:
    """Call ``listener()`` whenever checking mode is switched on or off.

    How the layer that builds the kernel tables, which imports this module,
    rebuilds them with or without the checks.
    """
    _listeners.append(listener)


@contextlib.contextmanager
def checking(enabled: bool = True) -> Iterator[None]:
    """Context manager: checking mode on (or off) inside the block, as before after it.

    The mode is process-wide, not per thread: other threads running ops
    meanwhile are checked too.

    Parameters
    ----------
    enabled : bool
        The mode inside the block.

    Examples
    --------
    >>> import plugrad
    >>> with plugrad.plugins.checking():
    ...     y = plugrad.sum(plugrad.tensor([1.0, 2.0]))
    >>> y
    tensor(3.)
    """
    previous = _enabled
    set_checks(enabled)
    try:
        yield
    finally:
        set_checks(previous)


# -- what the registry installs ---------------------------------------------------------


def checked_kernel(op: RegisteredOp, source: KernelSource) -> Callable[..., Any]:
    """Wrap the kernel ``source`` names so that its output is checked (and compared)."""
    kernel = source.function
    reference = None if source.kind == "generic" else op.kernel

    def checked(xp: Any, *args: Any, **params: Any) -> Any:
        out = kernel(xp, *args, **params)
        _check_output(op, source, xp, args, params, out, reference)
        return out

    checked.__wrapped__ = kernel  # type: ignore[attr-defined]
    return checked


def contract_kernel(
    op: RegisteredOp,
    source: KernelSource,
    kernel: Callable[..., Any],
    reference: Callable[..., Any],
) -> Callable[..., Any]:
    """``kernel`` (bound) with the shape and dtype of every output it returns checked.

    Kernels of built-in plugins are trusted (the op tables test them), and so is
    an op's own generic kernel, which defines the op. A kernel that a
    third-party plugin puts in its place (an override from ``plugrad_kernels``,
    a backend-specific kernel of the op, a backend's own kernel) is wrapped in
    this, outside checking mode too: its outputs must have the shapes and dtypes
    that the op's generic kernel (``reference``, bound) gives for the same
    inputs. The reference runs once per signature (input shapes and dtypes,
    Python scalars, params) and again whenever an output differs from what it
    gave, so a size that depends on the values (``nonzero``) is compared with
    the reference on those very inputs rather than refused. A mismatch raises
    :class:`~plugrad.errors.PluginOutputError` naming the plugin, the op and the
    kernel, where the wrong result would otherwise flow on silently.
    """
    expected: dict[Any, Any] = {}
    several = op.multiple_outputs
    where = f"{source.owner()}, op {op.name!r}: its {source.kind} kernel {source.function_name}"

    def checked(*args: Any, **params: Any) -> Any:
        out = kernel(*args, **params)
        got = _metadata(out, several)
        if got is None or (several and None in got):
            return out  # not arrays: the per-op path's type check names the kernel
        try:
            key: Any = (
                tuple((a.shape, a.dtype) if hasattr(a, "shape") else a for a in args),
                tuple(params.items()),
            )
            wanted = expected.get(key)
        except TypeError:  # unhashable params or a sequence input: nothing remembered
            key = wanted = None
        if wanted is not None and _fits(got, wanted, several):
            return out
        try:
            wanted = _metadata(reference(*args, **params), several)
        except Exception:
            return out  # the generic kernel cannot run here; nothing to compare against
        if wanted is None or _fits(got, wanted, several):
            if key is not None and wanted is not None:
                expected[key] = wanted
            return out
        shapes = ", ".join(
            str(tuple(a.shape)) if hasattr(a, "shape") else _type_name(a) for a in args
        )
        raise PluginOutputError(
            f"{where} returned {_describe(got, several)} for inputs of shapes {shapes}, but the "
            f"op's generic kernel gives {_describe(wanted, several)}; a kernel must return what "
            "the op gives"
        )

    checked.__wrapped__ = kernel  # type: ignore[attr-defined]
    return checked


def _metadata(out: Any, several: bool) -> Any:
    """``(shape, dtype)`` of a kernel output, or a tuple of them for an op with several."""
    if several:
        if not isinstance(out, (tuple, list)):
            return None
        return tuple(_metadata(o, False) for o in out)
    if not hasattr(out, "shape"):
        return None
    return (tuple(out.shape), getattr(out, "dtype", None))


def _fits(got: Any, wanted: Any, several: bool) -> bool:
    """Whether output metadata ``got`` is ``wanted``."""
    if got is None:
        return False  # not an array: the per-op path's type check names it
    if several:
        return len(got) == len(wanted) and all(_fits(g, w, False) for g, w in zip(got, wanted))
    return got == wanted


def _describe(metadata: Any, several: bool) -> str:
    if metadata is None:
        return "no array"
    if several:
        return "(" + ", ".join(_describe(m, False) for m in metadata) + ")"
    shape, dtype = metadata
    return f"shape {shape} and dtype {dtype}"


def sync_rules(ops: Mapping[str, RegisteredOp], owner: Callable[[str], str]) -> None:
    """Wrap the rules of every registered op if checking is on; restore all others."""
    registered = set(ops.values())
    for op in list(_declared_rules):
        if not _enabled or op not in registered:
            op.vjps = _declared_rules.pop(op)
    if not _enabled:
        return
    for op in registered - _declared_rules.keys():
        _declared_rules[op] = op.vjps
        label = f"{owner(op.name)}, op {op.name!r}"
        op.vjps = tuple(
            None if rule is None else _checked_rule(op, index, rule, label)
            for index, rule in enumerate(op.vjps)
        )


# -- the checks -------------------------------------------------------------------------


def _fail(where: str, message: str) -> PluginOutputError:
    return PluginOutputError(f"{where} {message} (found by plugrad's checking mode)")


def _device_of(value: Any) -> Device | None:
    return device_of_array(value)


def _check_output(
    op: RegisteredOp,
    source: KernelSource,
    xp: Any,
    args: tuple[Any, ...],
    params: dict[str, Any],
    out: Any,
    reference: Callable[..., Any] | None,
    several: bool = False,
) -> None:
    where = f"{source.owner()}, op {op.name!r}: its {source.backend} kernel {source.function_name}"
    if op.multiple_outputs and not several:
        if not isinstance(out, (tuple, list)):
            raise _fail(
                where,
                f"returned a {_type_name(out)}; the op declares several outputs, so its "
                "kernel returns a tuple of arrays",
            )
        for element in out:
            _check_output(op, source, xp, args, params, element, None, several=True)
        return
    device = next((d for d in map(_device_of, args) if d is not None), None)
    got = _device_of(out)
    if device is None:  # called with Python scalars only (from inside a rule): compare less
        device = got
    if got is None or device is None:
        backend = source.backend
        raise _fail(where, f"returned a {_type_name(out)}, not an array of backend {backend!r}")
    if got is not device:
        raise _fail(
            where, f"returned an array on {got.name!r}, but its inputs are on {device.name!r}"
        )
    dtype = device._dtype_from_native.get(out.dtype)
    if dtype is None:
        raise _fail(where, f"returned an array of dtype {out.dtype}, which plugrad does not know")
    floating_inputs = any(
        _dtypes.is_differentiable(device._dtype_from_native.get(a.dtype, _dtypes.bool))
        for a in args
        if hasattr(a, "dtype")
    )
    if several:  # one of several outputs: some (indices, signs) are legitimately not floating
        return
    # An op with a dtype param (astype) returns the dtype it is asked for.
    requested = op.dtype_params and any(params.get(p) is not None for p in op.dtype_params)
    if (
        op.differentiable
        and floating_inputs
        and not requested
        and not _dtypes.is_differentiable(dtype)
    ):
        raise _fail(
            where,
            f"returned {dtype.name} for floating-point inputs, but the op is "
            "differentiable: its result must be floating-point",
        )
    if reference is None:
        return
    try:
        expected = reference(xp, *args, **params)
    except Exception:
        return  # the generic kernel cannot run here; nothing to compare against
    if tuple(out.shape) != tuple(expected.shape) or out.dtype != expected.dtype:
        raise _fail(
            where,
            f"returned shape {tuple(out.shape)} and dtype {out.dtype}, but the "
            f"op's generic kernel gives shape {tuple(expected.shape)} and dtype "
            f"{expected.dtype} for the same inputs",
        )
    mismatch = _mismatch(xp, out, expected, dtype)
    if mismatch:
        raise _fail(where, f"disagrees with the op's generic kernel: {mismatch}")


def _mismatch(xp: Any, out: Any, expected: Any, dtype: _dtypes.DType) -> str | None:
    """Describe how ``out`` differs from ``expected`` beyond rounding, or return ``None``."""
    if 0 in tuple(expected.shape):
        return None
    if not _dtypes.is_differentiable(dtype):
        same = bool(xp.all(out == expected))
        return None if same else "some elements differ"
    finite = xp.isfinite(expected)
    both_nan = xp.isnan(out) & xp.isnan(expected)
    if bool(xp.any(~finite & ~((out == expected) | both_nan))):
        return "it differs where the generic kernel gives inf or nan"
    zero = xp.zeros_like(expected)
    out_finite = xp.where(finite, out, zero)
    expected_finite = xp.where(finite, expected, zero)
    error = float(xp.max(xp.abs(out_finite - expected_finite)))
    scale = float(xp.max(xp.abs(expected_finite)))
    info = xp.finfo(expected.dtype)
    tolerance = float(info.eps) ** 0.5 * scale + float(info.smallest_normal)
    if error <= tolerance:
        return None
    return f"largest difference {error:.3g}, more than {tolerance:.3g} allowed"


def _checked_rule(
    op: RegisteredOp, index: int, rule: Callable[..., Any], where: str
) -> Callable[..., Any]:
    name = op.input_names[index]
    where = f"{where}: backward rule {index} (for input {name!r})"

    def checked(xp: Any, g: Any, ans: Any, *inputs: Any, **params: Any) -> Any:
        grad = rule(xp, g, ans, *inputs, **params)
        reference = g[0] if isinstance(g, tuple) else g  # several outputs: a tuple of grads
        if op.sequence_kind is not None:  # one rule, one gradient per tensor of the sequence
            arrays = inputs[index]
            if not isinstance(grad, (tuple, list)) or len(grad) != len(arrays):
                raise _fail(
                    where,
                    f"returned a {_type_name(grad)}; for a sequence of {len(arrays)} tensors "
                    f"it must return {len(arrays)} gradients",
                )
            for element, expected in zip(grad, arrays):
                _check_gradient(op, name, where, reference, expected, element)
            return grad
        _check_gradient(op, name, where, reference, inputs[index], grad)
        return grad

    checked.__wrapped__ = rule  # type: ignore[attr-defined]
    return checked


def _check_gradient(
    op: RegisteredOp, name: str, where: str, g: Any, expected: Any, grad: Any
) -> None:
    if grad is None:
        raise _fail(
            where,
            "returned None; a rule must return a gradient (declare None in "
            "op.vjp(...) for an input that has none)",
        )
    if isinstance(g, Tensor):  # create_graph=True: rules compute with Tensors
        if not isinstance(grad, Tensor):
            raise _fail(
                where,
                f"returned a {_type_name(grad)} under create_graph=True, where "
                "it must return a Tensor: compute with xp.* functions and "
                "operators only, never with a particular array library",
            )
        if grad._device is not g._device:
            raise _fail(
                where,
                f"returned a gradient on {grad._device.name!r}, but the output "
                f"gradient is on {g._device.name!r}",
            )
        raw = grad._array
    else:
        device, got = _device_of(g), _device_of(grad)
        if got is None:
            raise _fail(
                where,
                f"returned a {_type_name(grad)}, not an array of backend "
                f"{device.backend.name if device else '?'!r}",
            )
        if got is not device:
            raise _fail(
                where,
                f"returned a gradient on {got.name!r}, but the output gradient "
                f"is on {device.name if device else '?'!r}",
            )
        raw = grad
    target = expected._array if isinstance(expected, (Tensor, ArraySpec)) else expected
    shape, wanted = tuple(raw.shape), tuple(target.shape)
    if shape != wanted and not (op.broadcasting and _sums_back_to(shape, wanted)):
        allowed = " (or a shape it broadcasts to)" if op.broadcasting else ""
        raise _fail(
            where,
            f"returned a gradient of shape {shape}, but input {name!r} has shape "
            f"{wanted}; return a gradient of the input's shape{allowed}",
        )
    # Under create_graph both sides are plugrad dtypes; in raw mode both are the backend's.
    got_dtype = grad.dtype if isinstance(grad, Tensor) else raw.dtype
    wanted_dtype = expected.dtype if isinstance(expected, (Tensor, ArraySpec)) else target.dtype
    # Broadcasting ops also promote; the engine casts their gradients back, as it sums shapes.
    if got_dtype != wanted_dtype and not op.broadcasting:
        raise _fail(
            where,
            f"returned a gradient of dtype {got_dtype}, but input {name!r} has "
            f"dtype {wanted_dtype}; gradients keep their input's dtype",
        )


def _sums_back_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether ``target`` broadcasts to ``shape`` (so the engine can sum ``shape`` back)."""
    if len(shape) < len(target):
        return False
    tail = shape[len(shape) - len(target) :]
    return all(t in (n, 1) for n, t in zip(tail, target))
