"""The per-op path: find the device, call its kernel, record a node if needed.

Everything here runs on every operation, so it is table lookups and
attribute reads only: no pluggy, no namespace discovery, no validation that
registration already did. The unary and binary paths are spelled out because
they are almost every call.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from . import anomaly as _anomaly
from . import dtypes as _dtypes
from . import graph as _graph
from . import ops as _ops
from . import saved_tensor_hooks as _saved_tensor_hooks
from . import strided_layout
from . import versions as _versions
from .dtypes import DType, is_differentiable, of_python_type
from .errors import (
    BACKEND_LINALG_ERRORS,
    ArgumentError,
    AxisError,
    DeviceMismatchError,
    DtypeError,
    IndexOutOfRangeError,
    InvalidIndexError,
    LinAlgError,
    PluginOutputError,
    PlugradError,
    ScalarRangeError,
    ShapeError,
    add_note,
)
from .errors import type_name as _type_name
from .floating_point_warnings import again_without_warnings as _again_quietly
from .grad_mode import _state
from .graph import array_spec, output_edge
from .opdef import as_int
from .plugin_tables import state as _tables
from .tensor import Tensor, _object_new, _wrap
from .versions import Unstacked, ViewOf

if TYPE_CHECKING:
    from .backend import Device
    from .opdef import RegisteredOp

__all__ = [
    "PLAIN_RECORDERS",
    "Recorders",
    "apply1",
    "apply2",
    "apply_general",
    "apply_n",
    "apply_view",
    "saved_version",
    "use_recorders",
]

# Python scalars adapt to the tensor they meet (the Array API's scalar rules).
_SCALARS = frozenset({int, float, bool, complex})
_REAL_NUMBERS = frozenset({int, float})


def apply1(op: RegisteredOp, x: Any, params: dict[str, Any] | None) -> Tensor:
    """Run a one-input op."""
    if not isinstance(x, Tensor):
        raise _not_a_tensor(op, 0, x)
    device = x._device
    if op.to_float and x._array.dtype in device.integral_natives:
        # In the dtype asked for where one is (mean(x, dtype=float64) of int64 counts):
        # through float32 it would lose digits.
        dtype = params.get("dtype") if params else None
        target = _dtypes.default_float_dtype if dtype is None else dtype
        return apply1(op, _ops.astype(x, target), params)
    if op.real_only and x._array.dtype in device.complex_natives:
        raise _complex_error(op, (x,))
    try:
        kernel = device.kernels[op.name]
    except KeyError:
        raise _no_kernel(op, device) from None
    try:
        out = kernel(x._array, **params) if params else kernel(x._array)
    except (ValueError, RuntimeError, IndexError) as exc:  # PyTorch's: RuntimeError, IndexError
        if (plain := _plain_int_params(op, params)) is not None:
            return apply1(op, x, plain)
        _retell_kernel_error(op, device, exc, (x,))
        raise
    except RuntimeWarning:  # NumPy's of an inf or nan made, raised by an "error" filter
        out = _again_quietly(device, kernel, x._array, **(params or {}))
    except TypeError as exc:
        if (plain := _plain_int_params(op, params)) is not None:
            return apply1(op, x, plain)
        _retell_dtype_error(op, device, exc, (x,), params)
        raise
    except Exception as exc:  # (Dask's assert of an int axis)
        if (plain := _plain_int_params(op, params)) is not None:
            return apply1(op, x, plain)
        _name_third_party_kernel(op, device, exc)
        raise
    if type(out) is not device.array_type and type(out) not in device.output_types:
        _check_kernel_output(op, device, out)
    if x._requires_grad and _state.enabled and op.differentiable:
        if out.dtype in device.integral_natives:
            raise _integral_output(op, device, out)
        node = _record1(op, device, x, params, out)
        result = _wrap(out, device, True, node)
        result._counter = node._ans_counter
        return result
    return _wrap(out, device, False, None)


def apply2(op: RegisteredOp, x1: Any, x2: Any, params: dict[str, Any] | None) -> Tensor:
    """Run a two-input op; either input may be a Python scalar."""
    if isinstance(x1, Tensor):
        device = x1._device
        a1 = x1._array
        if isinstance(x2, Tensor):
            if x2._device is not device:
                raise _mixed_devices(op, (x1, x2))
            a2 = x2._array
            dtype1 = a1.dtype
            # Ordered so that the common case (one dtype, an op of any kind) tests least.
            if (dtype1 is not a2.dtype and op.promotes) or op.checks_dtype:
                mixed = dtype1 is not a2.dtype
                if op.real_only and (
                    dtype1 in device.complex_natives
                    or (mixed and a2.dtype in device.complex_natives)
                ):
                    raise _complex_error(op, (x1, x2))
                if (mixed and op.promotes) or (op.to_float and dtype1 in device.integral_natives):
                    promoted = _promote_pair(op, device, x1, x2)
                    if promoted is not None:
                        return apply2(op, *promoted, params)
            requires_grad = x1._requires_grad or x2._requires_grad
        elif type(x2) in _SCALARS:
            if (a1.dtype in device.scalar_promotions[type(x2)] and op.promotes) or op.checks_dtype:
                if op.real_only and (type(x2) is complex or a1.dtype in device.complex_natives):
                    raise _complex_error(op, (x1, x2))
                if (a1.dtype in device.scalar_promotions[type(x2)] and op.promotes) or (
                    op.to_float and a1.dtype in device.integral_natives
                ):
                    return _apply_with_scalar(op, device, x1, x2, params, False)
            if type(x2) is int and a1.dtype in device.integer_natives:
                fitted = _int_scalar_fitted(op, device, x1, x2, False)
                if fitted is not None:
                    return fitted
            a2 = x2
            requires_grad = x1._requires_grad
        elif _is_numpy_scalar(x2):
            return apply2(op, x1, x2.item(), params)
        else:
            raise _not_a_tensor(op, 1, x2)
    elif isinstance(x2, Tensor):
        if type(x1) not in _SCALARS:
            if _is_numpy_scalar(x1):
                return apply2(op, x1.item(), x2, params)
            raise _not_a_tensor(op, 0, x1)
        device = x2._device
        a1 = x1
        a2 = x2._array
        # The scalar-second branch above, mirrored: written twice, as a shared helper would
        # add a call to every op with a scalar.
        if (a2.dtype in device.scalar_promotions[type(x1)] and op.promotes) or op.checks_dtype:
            if op.real_only and (type(x1) is complex or a2.dtype in device.complex_natives):
                raise _complex_error(op, (x1, x2))
            if (a2.dtype in device.scalar_promotions[type(x1)] and op.promotes) or (
                op.to_float and a2.dtype in device.integral_natives
            ):
                return _apply_with_scalar(op, device, x2, x1, params, True)
        if type(x1) is int and a2.dtype in device.integer_natives:
            fitted = _int_scalar_fitted(op, device, x2, x1, True)
            if fitted is not None:
                return fitted
        requires_grad = x2._requires_grad
    else:
        raise _not_a_tensor(
            op, 1 if type(x1) in _SCALARS else 0, x2 if type(x1) in _SCALARS else x1
        )
    try:
        kernel = device.kernels[op.name]
    except KeyError:
        raise _no_kernel(op, device) from None
    try:
        out = kernel(a1, a2, **params) if params else kernel(a1, a2)
    except (ValueError, RuntimeError, IndexError) as exc:  # PyTorch's: RuntimeError, IndexError
        if (plain := _plain_int_params(op, params)) is not None:
            return apply2(op, x1, x2, plain)
        _retell_kernel_error(op, device, exc, (x1, x2))
        raise
    except RuntimeWarning:  # as in apply1
        out = _again_quietly(device, kernel, a1, a2, **(params or {}))
    except TypeError as exc:
        if (plain := _plain_int_params(op, params)) is not None:
            return apply2(op, x1, x2, plain)
        _retell_dtype_error(op, device, exc, (x1, x2), params)
        raise
    except OverflowError as exc:
        floats = _ints_as_floats(op, device, (x1, x2))
        if floats is not None:
            return apply2(op, floats[0], floats[1], params)
        raise _scalar_out_of_range(op, exc) from exc
    except Exception as exc:  # (Dask's assert of an int axis)
        if (plain := _plain_int_params(op, params)) is not None:
            return apply2(op, x1, x2, plain)
        _name_third_party_kernel(op, device, exc)
        raise
    if type(out) is not device.array_type and type(out) not in device.output_types:
        _check_kernel_output(op, device, out)
    if requires_grad and _state.enabled and op.differentiable:
        if out.dtype in device.integral_natives:
            raise _integral_output(op, device, out)
        node = _record2(op, device, x1, x2, params, out)
        result = _wrap(out, device, True, node)
        result._counter = node._ans_counter
        return result
    return _wrap(out, device, False, None)


_FLOATING_KINDS = frozenset({"real floating", "complex floating"})


def _promote_pair(
    op: RegisteredOp, device: Device, x1: Tensor, x2: Tensor
) -> tuple[Tensor, Tensor] | None:
    """The two tensors in the dtype they compute in, if that is not their own; else ``None``.

    For an op that computes in floating point (``promotion="float"``: true
    division, ``atan2``) integer and bool tensors become the default float
    dtype (``int / int`` is ``float32``, as in PyTorch); otherwise kinds mix
    as :func:`_promote_mixed_kinds` says (``int8 / float16`` is ``float16``).
    """
    if op.to_float:
        integral = device.integral_natives
        if x1._array.dtype in integral and x2._array.dtype in integral:
            to = _dtypes.default_float_dtype
            return _ops.astype(x1, to), _ops.astype(x2, to)
    if op.name == "subtract":
        _refuse_bool_subtraction(device, x1, x2)
    promoted = _promote_mixed_kinds(device, x1, x2)
    if promoted is not None:
        return promoted
    # Floating dtypes of two precisions: both in the wider one before the kernel runs, as
    # PyTorch computes. A kernel made of several calls (x * log(y)) would otherwise take
    # log(y) of a float16 y in float16 and only then widen it.
    from_native = device._dtype_from_native
    dtype1, dtype2 = from_native[x1._array.dtype], from_native[x2._array.dtype]
    if dtype1 is not dtype2 and dtype1.kind in _FLOATING_KINDS and dtype2.kind in _FLOATING_KINDS:
        target = _dtypes.floating_result(dtype1, dtype2)
        return (
            x1 if dtype1 is target else _ops.astype(x1, target),
            x2 if dtype2 is target else _ops.astype(x2, target),
        )
    return None


def _promote_mixed_kinds(device: Device, x1: Tensor, x2: Tensor) -> tuple[Tensor, Tensor] | None:
    """The two tensors in the dtype they compute in, if their kinds differ; else ``None``.

    The standard leaves promotion across kinds to the library: plugrad follows
    PyTorch (:func:`plugrad.dtypes.mixed_kind_result`) on every backend, casting
    the lower-kind operand with ``astype`` -- an op, so gradients keep each
    input's dtype -- before the kernel sees it (array-api-strict refuses mixed
    kinds, NumPy would widen ``float32`` with ``int64`` to ``float64``).
    """
    from_native = device._dtype_from_native
    dtype1 = from_native[x1._array.dtype]
    dtype2 = from_native[x2._array.dtype]
    target = _dtypes.mixed_kind_result(dtype1, dtype2)
    if target is None:
        return None
    if target is dtype1:
        return x1, _ops.astype(x2, target)
    return _ops.astype(x1, target), x2


def _promote_inputs(
    op: RegisteredOp, device: Device, inputs: tuple[Any, ...]
) -> tuple[Any, ...] | None:
    """The inputs of a many-input op in the dtype they compute in, if their dtypes differ.

    PyTorch's rules, as for two inputs: the tensors are converted (with ``astype``,
    so gradients keep each input's dtype) to their common dtype
    (:func:`plugrad.dtypes.common_dtype`), or to a Python scalar's default dtype
    where the scalar's kind is higher. An input named ``condition`` (``where``'s) is
    a mask: never converted.
    """
    from_native = device._dtype_from_native
    ranks = _dtypes.SCALAR_RANKS
    tensors = []
    scalar_rank, scalar = -1, None
    for name, x in zip(op.input_names, inputs):
        if name == "condition":
            continue
        if isinstance(x, Tensor):
            tensors.append(from_native[x._array.dtype])
        elif type(x) in ranks and ranks[type(x)] > scalar_rank:
            scalar_rank, scalar = ranks[type(x)], x
    if not tensors:
        if scalar_rank < 1:
            return None
        # Only scalars beside the mask (where(c, 1.0, 2.0)), which the standard does not
        # define: the default dtype of their kind, as in PyTorch.
        target = _dtypes.scalar_result(_dtypes.bool, scalar)
        native = device.xp.asarray(scalar, dtype=device.native_dtype(target))
        return tuple(
            _wrap(native, device, False, None) if x is scalar and name != "condition" else x
            for name, x in zip(op.input_names, inputs)
        )
    target = _dtypes.common_dtype(tensors, device.result_type)
    if scalar_rank > _dtypes.kind_rank(target):
        target = _dtypes.scalar_result(target, scalar)
    elif all(d is target for d in tensors):
        return None
    # Every tensor in the common dtype (clamp of uint8 by an int8 bound is int16), so a
    # kernel need neither promote nor take a bound wider than its input.
    return tuple(
        _ops.astype(x, target)
        if isinstance(x, Tensor)
        and name != "condition"
        and from_native[x._array.dtype] is not target
        else x
        for name, x in zip(op.input_names, inputs)
    )


def _promote_sequence(device: Device, items: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    """The tensors of a sequence input (``concat``'s) in their common dtype, as PyTorch's.

    Across kinds the higher kind decides (``int64`` with ``float32`` is ``float32``,
    where NumPy would widen to ``float64``); within a kind, the standard's rules.
    Converted with ``astype``, so each gradient keeps its input's dtype.
    """
    from_native = device._dtype_from_native
    dtypes = [from_native[x._array.dtype] for x in items]
    target = _dtypes.common_dtype(dtypes, device.result_type)
    return tuple(x if d is target else _ops.astype(x, target) for x, d in zip(items, dtypes))


def _apply_with_scalar(
    op: RegisteredOp,
    device: Device,
    x: Tensor,
    scalar: Any,
    params: dict[str, Any] | None,
    scalar_first: bool,
) -> Tensor:
    """Run the two-input ``op`` of ``x`` and a Python scalar that converts it (see
    :func:`_promote_with_scalar`), or of a ``float16`` ``x`` and an int or float scalar.

    NOTE: arithmetic of ``float16`` with a number computes in ``float32``, rounded to
    ``float16`` once, as PyTorch's ``h * 1e5`` and ``h / 1e5`` do: in ``float16`` the
    number itself may not fit (``h / 1e5`` would divide by inf and give 0) or lose
    digits. Comparisons and the other ops with no gradient (bits, ``nextafter``) take
    the number in ``float16``, as scalars adapt to tensors (PyTorch's ``h == 0.1``).
    """
    if x._array.dtype in device.half_natives and type(scalar) in _REAL_NUMBERS:
        half = device.dtype_of(x._array)  # float16 or bfloat16
        if (not op.differentiable or op.name == "nextafter") and op.name != "floor_divide":
            native = device.xp.asarray(scalar, dtype=device.native_dtype(half))
            scalar = _wrap(native, device, False, None)
            return apply2(op, scalar, x, params) if scalar_first else apply2(op, x, scalar, params)
        wide = _ops.astype(x, _dtypes.float32)
        out = apply2(op, scalar, wide, params) if scalar_first else apply2(op, wide, scalar, params)
        if out._array.dtype is wide._array.dtype:
            return _ops.astype(out, half)
        return out
    x, scalar = _promote_with_scalar(op, device, x, scalar)
    return apply2(op, scalar, x, params) if scalar_first else apply2(op, x, scalar, params)


def _refuse_bool_subtraction(device: Device, *terms: Any) -> None:
    """Refuse a bool tensor or Python bool in a subtraction, as PyTorch and the standard do
    (a bool and an int8 tensor gave int8, ``1 - mask`` int64: the mask read as numbers
    without a word)."""
    if any(
        type(t) is bool
        or (isinstance(t, Tensor) and device._dtype_from_native[t._array.dtype] is _dtypes.bool)
        for t in terms
    ):
        raise DtypeError(
            "subtract(): a bool tensor takes no part in a subtraction, as in PyTorch; invert "
            "a mask with ~mask (or logical_not), or convert it first (mask.to(plugrad.int64))"
        )


def _promote_with_scalar(
    op: RegisteredOp, device: Device, x: Tensor, scalar: Any
) -> tuple[Tensor, Any]:
    """``x`` and a Python scalar of another kind, as they compute together (PyTorch's rule).

    A scalar of a higher kind converts ``x`` (``int tensor + 0.5`` is ``float32``);
    a bool meeting a number tensor is that number (array-api-strict refuses it).
    An op computing in floating point converts an integer or bool ``x`` to the
    default float dtype whatever the scalar (``int tensor / 2`` is ``float32``).
    """
    if op.name == "subtract":
        _refuse_bool_subtraction(device, x, scalar)
    if type(scalar) is bool:
        return x, int(scalar)
    if op.to_float and x._array.dtype in device.integral_natives:
        return _ops.astype(x, _dtypes.default_float_dtype), scalar
    dtype = device._dtype_from_native[x._array.dtype]
    target = _dtypes.scalar_result(dtype, scalar)
    if target is _dtypes.default_int_dtype:  # the device's (int32 on JAX without 64 bits)
        target = device.default_int_dtype
    return _ops.astype(x, target), scalar


def apply_n(op: RegisteredOp, inputs: tuple[Any, ...], params: dict[str, Any] | None) -> Tensor:
    """Run an op with any number of inputs; Python scalars allowed if one input is a Tensor."""
    # This input scan is repeated in apply_general on purpose: a shared helper would add
    # a Python call to every op.
    device = None
    requires_grad = False
    numbers = False
    arrays = []
    for index, x in enumerate(inputs):
        if isinstance(x, Tensor):
            if device is None:
                device = x._device
            elif x._device is not device:
                raise _mixed_devices(op, inputs)
            requires_grad = requires_grad or x._requires_grad
            arrays.append(x._array)
        elif x is None or type(x) in _SCALARS:
            arrays.append(x)  # None: an optional input left out (e.g. clip's max)
            # Numbers every dtype of their kind holds need no check (the common 0, 1, 0.5).
            if (type(x) is int and not 0 <= x <= 127) or (
                type(x) is float and not -65504.0 <= x <= 65504.0
            ):
                numbers = True
        elif _is_numpy_scalar(x):  # as the Python number it holds, promoted as one
            numbers_held = tuple(v.item() if _is_numpy_scalar(v) else v for v in inputs)
            return apply_n(op, numbers_held, params)
        else:
            raise _not_a_tensor(op, index, x)
    if device is None:
        raise _not_a_tensor(op, 0, inputs[0] if inputs else None)
    if op.promotes:
        promoted = _promote_inputs(op, device, inputs)
        if promoted is not None:
            return apply_n(op, promoted, params)
    if op.real_only:
        _refuse_complex(op, device, inputs)
    if numbers:
        _check_numbers_fit(op, device, inputs, arrays)
    try:
        kernel = device.kernels[op.name]
    except KeyError:
        raise _no_kernel(op, device) from None
    try:
        out = kernel(*arrays, **params) if params else kernel(*arrays)
    except (ValueError, RuntimeError, IndexError) as exc:  # PyTorch's: RuntimeError, IndexError
        if (plain := _plain_int_params(op, params)) is not None:
            return apply_n(op, inputs, plain)
        _retell_kernel_error(op, device, exc, inputs)
        raise
    except RuntimeWarning:  # as in apply1
        out = _again_quietly(device, kernel, *arrays, **(params or {}))
    except TypeError as exc:
        if (plain := _plain_int_params(op, params)) is not None:
            return apply_n(op, inputs, plain)
        _retell_dtype_error(op, device, exc, inputs, params)
        raise
    except OverflowError as exc:
        floats = _ints_as_floats(op, device, inputs)
        if floats is not None:
            return apply_n(op, floats, params)
        raise _scalar_out_of_range(op, exc) from exc
    except Exception as exc:  # (Dask's assert of an int axis)
        if (plain := _plain_int_params(op, params)) is not None:
            return apply_n(op, inputs, plain)
        _name_third_party_kernel(op, device, exc)
        raise
    if type(out) is not device.array_type and type(out) not in device.output_types:
        _check_kernel_output(op, device, out)
    if requires_grad and _state.enabled and op.differentiable:
        if out.dtype in device.integral_natives:
            raise _integral_output(op, device, out)
        node = _record(op, device, inputs, params, out)
        result = _wrap(out, device, True, node)
        result._counter = node._ans_counter
        return result
    return _wrap(out, device, False, None)


def apply_general(op: RegisteredOp, inputs: tuple[Any, ...], params: dict[str, Any] | None) -> Any:
    """Run an op that converts params, returns several outputs or takes a sequence input.

    Only ops declaring one of those come here (see :mod:`plugrad.opdef`), and ops
    with dtype params only when a dtype is actually given.
    """
    sequence = op.sequence_kind
    if sequence is not None:
        items = inputs[0]
        if not isinstance(items, (list, tuple)) or not items:
            raise ArgumentError(
                f"{op.name}(): {op.input_names[0]} must be a non-empty list or tuple of Tensors, "
                f"got {_type_name(items)}"
            )
        items = tuple(items)
    else:
        items = inputs
    # The input scan of apply_n, copied on purpose (no extra call per op).
    device = None
    requires_grad = False
    arrays = []
    for index, x in enumerate(items):
        if isinstance(x, Tensor):
            if device is None:
                device = x._device
            elif x._device is not device:
                raise _mixed_devices(op, items, sequence is not None)
            requires_grad = requires_grad or x._requires_grad
            arrays.append(x._array)
        elif sequence is None and (x is None or type(x) in _SCALARS):
            arrays.append(x)
        elif sequence is None and _is_numpy_scalar(x):  # (np.float64(0.5): a Python number)
            numbers = tuple(v.item() if _is_numpy_scalar(v) else v for v in items)
            return apply_general(op, numbers, params)
        else:
            raise _not_a_tensor(op, 0 if sequence else index, x, index if sequence else None)
    if device is None:
        raise _not_a_tensor(op, 0, items[0] if items else None)
    if sequence is not None and op.promotes:
        first = arrays[0].dtype
        for array in arrays:
            if array.dtype is not first:
                items = _promote_sequence(device, items)
                arrays = [x._array for x in items]
                break
    elif op.promotes and len(items) > 1:  # (searchsorted's, isin's: compared as by == and <)
        promoted = _promote_inputs(op, device, items)
        if promoted is not None:
            items = promoted
            arrays = [x._array if isinstance(x, Tensor) else x for x in items]
    if op.to_float and all(
        a.dtype in device.integral_natives for a in arrays if hasattr(a, "dtype")
    ):  # integers computed in the default float dtype (svd of int64 was float64 on NumPy),
        # or in the one asked for (mean(x, dtype=float64) of int64 counts), as in apply1
        dtype = params.get("dtype") if params else None
        target = _dtypes.default_float_dtype if dtype is None else dtype
        items = tuple(_ops.astype(x, target) if isinstance(x, Tensor) else x for x in items)
        arrays = [x._array if isinstance(x, Tensor) else x for x in items]
    if op.real_only:
        _refuse_complex(op, device, items)
    given = params
    if params:
        params = dict(params)
        for name in op.dtype_params:
            params[name] = _native_dtype(op, device, name, params[name])
        recorded = requires_grad and _state.enabled and op.differentiable
        for name in op.array_params:
            params[name] = _raw_arrays(op, device, name, params[name], recorded)
    try:
        kernel = device.kernels[op.name]
    except KeyError:
        raise _no_kernel(op, device) from None
    try:
        if sequence == "sequence":
            out = kernel(arrays, **params) if params else kernel(arrays)
        else:
            out = kernel(*arrays, **params) if params else kernel(*arrays)
    except (ValueError, RuntimeError, IndexError) as exc:  # PyTorch's: RuntimeError, IndexError
        if (plain := _plain_int_params(op, given)) is not None:
            return apply_general(op, inputs, plain)
        _retell_kernel_error(op, device, exc, items)
        raise
    except RuntimeWarning:  # as in apply1
        if sequence == "sequence":
            out = _again_quietly(device, kernel, arrays, **(params or {}))
        else:
            out = _again_quietly(device, kernel, *arrays, **(params or {}))
    except TypeError as exc:
        if (plain := _plain_int_params(op, given)) is not None:
            return apply_general(op, inputs, plain)
        _retell_dtype_error(op, device, exc, items, params)
        raise
    except OverflowError as exc:
        raise _scalar_out_of_range(op, exc) from exc
    except Exception as exc:  # (Dask's assert of an int axis)
        if (plain := _plain_int_params(op, given)) is not None:
            return apply_general(op, inputs, plain)
        _name_third_party_kernel(op, device, exc)
        raise
    record = requires_grad and _state.enabled and op.differentiable
    if not op.multiple_outputs:
        if type(out) is not device.array_type and type(out) not in device.output_types:
            _check_kernel_output(op, device, out)
        # The output dtype is checked here: astype(x, int32) must not require grad.
        if record and is_differentiable(device.dtype_of(out)):
            node = _record(op, device, items, params, out)
            if op.general:
                node.n_outputs = 1
                node._out_specs = None
            result = _wrap(out, device, True, node)
            result._counter = node._ans_counter
            return result
        return _wrap(out, device, False, None)
    _check_kernel_output(op, device, out)
    outs = tuple(out)
    differentiable = [
        record and i not in op.nondifferentiable_outputs and is_differentiable(device.dtype_of(o))
        for i, o in enumerate(outs)
    ]
    if not any(differentiable):
        results = tuple(_wrap(o, device, False, None) for o in outs)
        if op.view:
            _share_counters(op, items, results, params)
        return op.output_type(results)
    node = _record(op, device, items, params, outs)
    node.n_outputs = len(outs)
    node._out_specs = tuple((o.shape, o.dtype, d) for o, d in zip(outs, differentiable))
    results = tuple(
        _wrap(o, device, d, output_edge(node, i) if d else None)
        for i, (o, d) in enumerate(zip(outs, differentiable))
    )
    if op.view:
        _share_counters(op, items, results, params)
        if node._ans_counter is not None:
            node._ans_counter = tuple(result._counter for result in results)
    elif node._ans_counter is not None:
        # Only the outputs the rules read are checked for in-place changes at backward.
        read = op.outputs_read
        n = len(outs)
        node._ans_counter = counters = tuple(
            [0] if read is None or i in read or i - n in read else None for i in range(n)
        )
        for result, counter in zip(results, counters):
            if counter is not None:
                result._counter = counter
    return op.output_type(results)


def _share_counters(
    op: RegisteredOp,
    inputs: tuple[Any, ...],
    results: tuple[Tensor, ...],
    params: dict[str, Any] | None,
) -> None:
    """Give each output of a view op with several outputs its input's version counter:
    the one input's (``unstack``), or that of the input in its position (``broadcast_arrays``).
    """
    if len(inputs) == 1:
        x = inputs[0]
        if op.name == "unstack" and x._device.views_are_copies:  # output i: x[..., i] at axis
            axis = (params or {}).get("axis", 0) % max(x.ndim, 1)
            for i, result in enumerate(results):
                x._add_alias(result, Unstacked((slice(None),) * axis + (i,)))
            return
        for result in results:
            x._add_alias(result)
        return
    for x, result in zip(inputs, results):
        if isinstance(x, Tensor):
            x._add_alias(result)


_PYTHON_TYPES = (float, int, bool, complex)


def _native_dtype(op: RegisteredOp, device: Device, name: str, value: Any) -> Any:
    """The backend's dtype for a dtype param (None stays None; native dtypes pass)."""
    if value is None:
        return None
    if isinstance(value, DType):
        return device.native_dtype(value)
    if value in _PYTHON_TYPES:  # PyTorch's x.sum(dtype=float): float64, int64, bool, complex128
        return device.native_dtype(of_python_type(value))
    try:
        if value in device._dtype_from_native:
            # Rules pass an input's own (native) dtype back, e.g. xp.astype(g, x.dtype).
            return value
    except TypeError:
        pass
    raise DtypeError(
        f"{op.name}(): {name}={value!r} is not a dtype; pass a plugrad dtype such as "
        "plugrad.float32"
    )


def _raw_arrays(op: RegisteredOp, device: Device, name: str, value: Any, recorded: bool) -> Any:
    """Replace every Tensor in an array param (also inside tuples) by its raw array.

    For an op autograd records, a copy: the backward rules read the param later, after
    the caller may have changed the tensor in place (an index tensor, say).
    """
    if isinstance(value, Tensor):
        if value._device is not device:
            raise DeviceMismatchError(
                f"{op.name}(): {name} holds a tensor on {value._device.name!r}, but the inputs "
                f"are on {device.name!r}; move it with .to({device.name!r})"
            )
        if recorded and not device.views_are_copies:  # immutable arrays need no copy
            return device.xp.asarray(value._array, copy=True)
        return value._array
    if type(value) is tuple:
        return tuple(_raw_arrays(op, device, name, v, recorded) for v in value)
    return value


def _record(
    op: RegisteredOp,
    device: Device,
    inputs: tuple[Any, ...],
    params: dict[str, Any] | None,
    out: Any,
) -> Any:
    """Create the backward node of one op application (any number of inputs).

    The node keeps, per input, its edge (where its gradient goes, or ``None``)
    and what the backward rules receive for it: the raw array if a rule that
    will run reads it, else an :class:`ArraySpec` (a Python scalar as is).
    Tensors whose values are kept are also listed, for the in-place check and
    for ``create_graph``.
    """
    node = _object_new(op.node_type)
    node._device = device
    node._hooks = None
    node._params = params
    sequence = op.sequence_kind is not None
    rules = op.vjps * len(inputs) if sequence else op.vjps
    edges = []
    mask = 0
    bit = 1
    for x, rule in zip(inputs, rules):
        edge = None
        if rule is not None and isinstance(x, Tensor):
            edge = x._edge
            if edge is None and x._requires_grad:
                edge = x
            if edge is not None:
                mask |= bit
        edges.append(edge)
        bit <<= 1
    if sequence:
        keeps, keep_ans = op.saved_inputs * len(inputs), op.saves_ans
    else:
        keeps, keep_ans = op.keeps[mask]
    saved = []
    tensors: list[Tensor | None] | None = None  # made when the first tensor is kept
    modified = False
    for index, (x, keep) in enumerate(zip(inputs, keeps)):
        if not isinstance(x, Tensor):
            saved.append(x)
        elif keep:
            saved.append(x._array)
            if tensors is None:
                tensors = [None] * len(inputs)
            tensors[index] = x
            modified = modified or x._counter is not None
        else:
            saved.append(array_spec(x._array))
    node._edges = tuple(edges)
    if keep_ans:
        node._ans = out
        node._ans_counter = [0]  # shared with the output tensor: see OpNode
    else:
        node._ans = node._ans_counter = None
    node._saved = tuple(saved)
    if tensors is None:
        node._saved_tensors = None
        node._versions = None
    else:
        node._saved_tensors = tuple(tensors)
        # Versions only once some kept tensor was modified in place (None: all unmodified).
        node._versions = tuple(map(saved_version, tensors)) if modified else None
    return node


def _record1(
    op: RegisteredOp, device: Device, x: Tensor, params: dict[str, Any] | None, out: Any
) -> Any:
    """:func:`_record` for a one-input op whose input requires grad, spelled out."""
    if op.vjps[0] is None:
        return _record(op, device, (x,), params, out)
    node = _object_new(op.node_type)
    node._device = device
    node._hooks = None
    node._params = params
    edge = x._edge or x
    keeps, keep_ans = op.keeps[1]
    node._edges = (edge,)
    if keep_ans:
        node._ans = out
        node._ans_counter = [0]
    else:
        node._ans = node._ans_counter = None
    array = x._array
    if keeps[0]:
        node._saved = (array,)
        node._saved_tensors = (x,)
        node._versions = None if x._counter is None else (x._counter[0],)
    else:
        node._saved = (array_spec(array),)
        node._saved_tensors = None
        node._versions = None
    return node


def _record2(
    op: RegisteredOp, device: Device, x1: Any, x2: Any, params: dict[str, Any] | None, out: Any
) -> Any:
    """:func:`_record` for a two-input op (either may be a Python scalar), spelled out."""
    node = _object_new(op.node_type)
    node._device = device
    node._hooks = None
    node._params = params
    rule1, rule2 = op.vjps
    edge1 = edge2 = None
    if rule1 is not None and isinstance(x1, Tensor) and x1._requires_grad:
        edge1 = x1._edge or x1
    if rule2 is not None and isinstance(x2, Tensor) and x2._requires_grad:
        edge2 = x2._edge or x2
    (keep1, keep2), keep_ans = op.keeps[(edge1 is not None) | (edge2 is not None) << 1]
    node._edges = (edge1, edge2)
    if keep_ans:
        node._ans = out
        node._ans_counter = [0]
    else:
        node._ans = node._ans_counter = None
    kept1 = kept2 = None
    if isinstance(x1, Tensor):
        a1 = x1._array
        if keep1:
            saved1, kept1 = a1, x1
        else:
            saved1 = array_spec(a1)
    else:
        saved1 = x1
    if isinstance(x2, Tensor):
        a2 = x2._array
        if keep2:
            saved2, kept2 = a2, x2
        else:
            saved2 = array_spec(a2)
    else:
        saved2 = x2
    node._saved = (saved1, saved2)
    if kept1 is None and kept2 is None:
        node._saved_tensors = None
        node._versions = None
    else:
        node._saved_tensors = (kept1, kept2)
        if (kept1 is None or kept1._counter is None) and (kept2 is None or kept2._counter is None):
            node._versions = None
        else:
            node._versions = (saved_version(kept1), saved_version(kept2))
    return node


class Recorders(NamedTuple):
    """The functions the per-op path records a node with: any op, one input, two inputs."""

    record: Callable[..., Any]
    record1: Callable[..., Any]
    record2: Callable[..., Any]


#: The recorders defined here, in use unless a mode has swapped in its own.
PLAIN_RECORDERS = Recorders(_record, _record1, _record2)


def use_recorders(recorders: Recorders) -> Recorders:
    """Record nodes with ``recorders`` from now on; return the recorders used until now.

    The per-op path reads ``_record``, ``_record1`` and ``_record2`` as module
    globals, so the swap costs nothing per op. Modes that note more about each
    op wrap :data:`PLAIN_RECORDERS` (anomaly mode notes the user's call stack).
    """
    global _record, _record1, _record2
    previous = Recorders(_record, _record1, _record2)
    _record, _record1, _record2 = recorders
    return previous


def _modes_switched(_: bool) -> None:
    """Record as the modes on now ask: saved-tensor hooks pack what a node keeps, anomaly
    mode notes where it was made."""
    with _modes_lock:  # (each mode sets its flag first: the last switch sees both)
        recorders = PLAIN_RECORDERS
        if _saved_tensor_hooks.active:
            recorders = Recorders(*map(_saved_tensor_hooks.packing, recorders))
        if _anomaly.enabled:
            recorders = Recorders(*map(_anomaly.with_stack, recorders))
        use_recorders(recorders)


_modes_lock = threading.Lock()


_anomaly.on_switch(_modes_switched)
_saved_tensor_hooks.on_switch(_modes_switched)


def saved_version(value: Any) -> int:
    """The version of a saved value (0 for anything that is not a modified tensor)."""
    counter = getattr(value, "_counter", None)
    return 0 if counter is None else counter[0]


def apply_view(op: RegisteredOp, x: Any, params: dict[str, Any] | None) -> Tensor:
    """Run a one-input op whose result may share memory with its input (reshape, ...).

    The result shares the input's version counter, so modifying either in place
    is seen by backward passes that saved the other.
    """
    if type(x._array) in x._device.scalar_types:
        x._shareable_array()
    out = apply1(op, x, params)
    device = x._device
    if op.name == "reshape" and _reshape_copied(op, device, x, out, params):
        return out  # a copy (the layout allowed no view): changing it changes nothing of x
    # How the view was made is kept: an in-place change of either brings the other's graph
    # history up to date (and, where views are copies, its values).
    x._add_alias(out, ViewOf(op, params))
    return out


def _reshape_copied(
    op: RegisteredOp, device: Device, x: Tensor, out: Tensor, params: dict[str, Any] | None
) -> bool:
    """Whether ``reshape`` gave a copy: as the backend did, or where views are copies (its
    arrays have no layout) as a strided library would (``x.t().reshape(-1)``, ``copy=True``)."""
    if not device.views_are_copies:
        return _versions.made_a_copy(device, x, out)
    copy = (params or {}).get("copy")
    if copy is True:
        return True
    if strided_layout.reshapes_in_place(x, tuple(out.shape)):
        return False
    if copy is False:
        raise ShapeError(
            f"a tensor of shape {x.shape} and strides {x.stride()} cannot be seen in shape "
            f"{out.shape} without a copy (view(), reshape(copy=False)); reshape(...) copies "
            "where it must"
        )
    return True


def _is_numpy_scalar(value: Any) -> bool:
    """Whether ``value`` is a NumPy scalar (``np.float32(2)``): it then acts as a Python scalar.

    Checked only after the fast paths, so it costs nothing to Tensor and Python-scalar inputs.
    """
    return any(
        kind.__name__ == "generic" and kind.__module__ == "numpy" for kind in type(value).__mro__
    )


def _not_a_tensor(
    op: RegisteredOp, index: int, value: Any, element: int | None = None
) -> ArgumentError:
    name = op.input_names[index] if index < len(op.input_names) else f"input {index}"
    if element is not None:
        name = f"{name}[{element}]"
    if hasattr(value, "__array_namespace__") or hasattr(value, "__array__"):
        hint = "convert it with plugrad.asarray(...) first"
    else:
        hint = "inputs must be Tensors or Python scalars, and at least one must be a Tensor"
    return ArgumentError(f"{op.name}(): {name} is a {_type_name(value)}, not a Tensor; {hint}")


def _mixed_devices(
    op: RegisteredOp, inputs: tuple[Any, ...], sequence: bool = False
) -> DeviceMismatchError:
    names = (
        [f"{op.input_names[0]}[{i}]" for i in range(len(inputs))] if sequence else op.input_names
    )
    tensors = [(names[i], x) for i, x in enumerate(inputs) if isinstance(x, Tensor)]
    (name_a, a) = tensors[0]
    (name_b, b) = next((n, t) for n, t in tensors if t._device is not a._device)
    return DeviceMismatchError(
        f"{op.name}(): inputs are on different devices: {name_a} on {a._device.name!r} and "
        f"{name_b} on {b._device.name!r}. plugrad never copies silently; move one explicitly, "
        f"e.g. {name_b}.to({a._device.name!r})."
    )


_SHAPE_WORDS = (
    "shape", "broadcast", "dimension", "aligned", "size", "axis", "reshape", "empty", "square",
    "axes don't match", "array indexing assignment",  # NumPy's transpose and mask assignment
    "duplicate dims", "repeated elements",  # PyTorch's and Dask's permute of an axis twice
    "appears multiple times", "repeated dim",  # PyTorch's reductions, flip, movedim of one too
    "must be unique", "repeated axis",  # JAX's flip, and plugrad's Dask namespace
)  # fmt: skip


def alpha_times(function: str, x: Any, other: Any, alpha: Any) -> Any:
    """``other * alpha``, the second term of PyTorch's ``x + alpha * other``.

    As PyTorch's, ``alpha`` takes the kind of the result: a float ``alpha`` where
    both terms are integers or bools is refused (the sum would silently become a
    float tensor, or, written in place, be truncated), a bool one where the result
    is not bool, a complex one where it is real; where both terms are bools, any
    ``alpha`` counts as true or false (``x.add(y, alpha=2)`` stays bool).
    """
    if type(alpha) not in _SCALARS and _is_numpy_scalar(alpha):  # (np.float32 is no float)
        alpha = alpha.item()
    # Kind ranks: 0 bool, 1 integer, 2 real, 3 complex (a NumPy scalar counts as real).
    ranks = [
        _dtypes.kind_rank(v.dtype)
        if isinstance(v, Tensor)
        else _dtypes.SCALAR_RANKS.get(type(v), 2)
        for v in (x, other)
    ]
    if function == "subtract" and 0 in ranks:
        tensor = x if isinstance(x, Tensor) else other
        _refuse_bool_subtraction(tensor._device, x, other)
    if ranks == [0, 0]:
        return other if alpha else other & False
    wrong = None
    if isinstance(alpha, bool):
        wrong = "a bool, and the result is not (give a number)"
    elif isinstance(alpha, float) and max(ranks) <= 1:
        wrong = (
            "a float, and both terms are integers or bools; give an integer alpha, or "
            "convert the tensor first (x.to(plugrad.float32))"
        )
    elif isinstance(alpha, complex) and max(ranks) < 3:
        wrong = "complex, and the terms are real; convert them to a complex dtype first"
    if wrong is not None:
        tensor = x if isinstance(x, Tensor) else other
        kind = tensor.dtype if isinstance(tensor, Tensor) else type(x).__name__
        raise DtypeError(f"{function}(): alpha={alpha!r} is {wrong} (the tensor is {kind})")
    if isinstance(other, Tensor):
        # In the result's dtype, as PyTorch multiplies: in int8, 100 * 2 would wrap to -56.
        if isinstance(x, Tensor):
            target = _dtypes.common_dtype([x.dtype, other.dtype], other._device.result_type)
        elif ranks[0] > ranks[1]:
            target = _dtypes.scalar_result(other.dtype, x.item() if _is_numpy_scalar(x) else x)
        else:
            target = other.dtype
        if target is not other.dtype:
            other = _ops.astype(other, target)
    return other * alpha


_FLOAT32_MAX = 3.4028234663852886e38  # the largest finite float32

#: (backend, native dtype) -> (lowest, highest) real number it holds; None for bool.
_RANGES: dict[tuple[str, Any], tuple[Any, Any] | None] = {}


def _check_numbers_fit(
    op: RegisteredOp, device: Device, inputs: tuple[Any, ...], arrays: list[Any]
) -> None:
    """Raise unless each Python number fits the dtype of the tensors it meets.

    Kernels of two inputs refuse such a number themselves (NumPy raises); ``where``,
    ``clip`` and the like would not: NumPy's ``where`` turns 300 into 44 in ``int8``,
    and 1e40 into inf in ``float32``, where PyTorch refuses.
    """
    native = next(
        (x._array.dtype for name, x in zip(op.input_names, inputs)
         if isinstance(x, Tensor) and name != "condition"),
        None,
    )  # fmt: skip
    if native is None:
        return
    # Keyed by backend too: dtypes of two libraries must never be compared.
    key = (device.backend.name, native)
    if key not in _RANGES:
        xp = device.xp
        if xp.isdtype(native, "integral"):
            info: Any = xp.iinfo(native)
            _RANGES[key] = (info.min, info.max)
        elif xp.isdtype(native, ("real floating", "complex floating")):
            info = xp.finfo(native)  # a complex dtype's: that of its parts
            _RANGES[key] = (-float(info.max), float(info.max))
        else:
            _RANGES[key] = None
    bounds = _RANGES[key]
    if bounds is None:
        return
    low, high = bounds
    for i, value in enumerate(arrays):
        if (
            type(value) in _REAL_NUMBERS
            and not low <= value <= high
            and value == value  # NaN and infinities are values every float dtype holds
            and value not in (math.inf, -math.inf)
        ):
            if op.name == "where" and type(high) is float and abs(value) <= _FLOAT32_MAX:
                # PyTorch's where() reads a number as a float32 tensor first: -1e9 into
                # float16 is -inf (an attention mask's fill), as the conversion rounds it.
                arrays[i] = math.copysign(math.inf, value)
                continue
            dtype = device._dtype_from_native[native]
            raise ScalarRangeError(
                f"{op.name}(): the number {value!r} is out of the range of {dtype.name} "
                f"[{low}, {high}], the dtype of the tensor it meets; convert the tensor to a "
                "dtype that holds it (x.to(plugrad.int64), x.to(plugrad.float64)), or pass a "
                "number in range"
            )


#: Ops whose answer for a number outside the tensor's range is still defined: computed with
#: the tensor widened (``uint8 < -3`` is all False, where a wrapped -3 made it all True).
_COMPARISONS = frozenset({"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"})


#: Whether ``x <op> number`` holds for every x, with ``number`` above all of x's dtype's
#: values; below them, the mirrored op's answer.
_ALL_BELOW = {"less": True, "less_equal": True, "greater": False, "greater_equal": False,
              "equal": False, "not_equal": True}  # fmt: skip
_MIRRORED = {"less": "greater", "less_equal": "greater_equal", "greater": "less",
             "greater_equal": "less_equal", "equal": "equal", "not_equal": "not_equal"}  # fmt: skip


def _int_scalar_fitted(
    op: RegisteredOp, device: Device, x: Tensor, number: int, number_first: bool
) -> Tensor | None:
    """None where the Python int ``number`` fits the integer dtype of ``x``; else, for a
    comparison, its answer (the same for every element), or a ScalarRangeError (as NumPy
    raises).

    Checked here, not left to the kernel: PyTorch and JAX wrap the number silently.
    """
    low, high = _integer_range(device, x._array.dtype)
    if low <= number <= high or op.name == "float_power":  # (float_power computes in float64)
        return None
    if op.name in _COMPARISONS:
        # Every x lies in [low, high]: the answer is the same for all (uint8 < -3 is all
        # False, where a wrapped -3 made it all True; int64 < 2**64 all True, where a
        # ScalarRangeError said to use int64).
        name = _MIRRORED[op.name] if number_first else op.name
        holds = _ALL_BELOW[name] if number > high else _ALL_BELOW[_MIRRORED[name]]
        # (x == x holds for every integer x, x != x for none: the answer, shaped and placed as x)
        x = x.detach()
        return _ops.equal(x, x) if holds else _ops.not_equal(x, x)
    where = "first" if number_first else "second"
    raise ScalarRangeError(
        f"{op.name}(): the number {number} ({where} argument) is out of the range of "
        f"{x.dtype.name} [{low}, {high}], the dtype of the tensor it meets; convert the tensor "
        "to a dtype that holds it (x.to(plugrad.int64)), or pass a number in range"
    )


def _integer_range(device: Device, native: Any) -> tuple[int, int]:
    """The lowest and highest value of the integer dtype ``native`` of ``device``'s backend."""
    key = (device.backend.name, native)
    if key not in _RANGES:
        info = device.xp.iinfo(native)
        _RANGES[key] = (int(info.min), int(info.max))
    return cast(tuple[int, int], _RANGES[key])


def _ints_as_floats(
    op: RegisteredOp, device: Device, inputs: tuple[Any, ...]
) -> tuple[Any, ...] | None:
    """``inputs`` with their Python ints as floats, where every tensor among them is floating
    (``where``'s condition aside): the same computation (an int takes a float tensor's dtype),
    which JAX without 64-bit types refuses for an int beyond int32 (``x * 2**31``). None where
    nothing would change."""
    integral = device.integral_natives
    if not any(type(x) is int for x in inputs) or any(
        x._array.dtype in integral
        for name, x in zip(op.input_names, inputs)
        if isinstance(x, Tensor) and name != "condition"
    ):
        return None
    try:
        return tuple(float(x) if type(x) is int else x for x in inputs)
    except OverflowError:
        return None  # beyond every float: the kernel's refusal stands


def _scalar_out_of_range(op: RegisteredOp, error: OverflowError) -> ScalarRangeError:
    return ScalarRangeError(
        f"{op.name}(): {error}; convert the tensor to a dtype that holds the number "
        "(x.to(plugrad.int64), x.to(plugrad.float32)), or pass a number in the dtype's range"
    )


def _plain_int_params(op: RegisteredOp, params: dict[str, Any] | None) -> dict[str, Any] | None:
    """``params`` with integers of other kinds (NumPy's, 0-d tensors) as ints, where a kernel
    refused them (``x.unsqueeze(numpy.int64(1))`` on PyTorch's backend); None if none is.

    Called only after a kernel raised, so that ints, the common case, cost nothing.
    """
    if not params:
        return None
    plain = None
    for name, value in params.items():
        if name not in op.array_params:
            converted = _plain_ints(value)
            if converted is not value:
                plain = dict(params) if plain is None else plain
                plain[name] = converted
    return plain


def _plain_ints(value: Any) -> Any:
    if type(value) in (tuple, list):
        items = [_plain_ints(v) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return type(value)(items)
    return as_int(value)


def _retell_kernel_error(
    op: RegisteredOp, device: Device, error: Exception, inputs: tuple[Any, ...]
) -> None:
    """Raise a backend's own error from a kernel again as plugrad's, naming the op.

    A singular or indefinite matrix becomes a :class:`~plugrad.errors.LinAlgError`
    (NumPy's is a ValueError, PyTorch's a RuntimeError), a shape error a ShapeError
    (see :func:`_retell_shape_error`), a dtype the kernel lacks a DtypeError.
    Returns for other errors, which the caller raises again (one from a third-party
    plugin's kernel with a note naming the kernel).
    """
    if isinstance(error, PlugradError):
        return
    _retell_missing_dtype(op, device, error, inputs)
    _retell_shape_error(op, device, error, inputs)  # (NumPy's "must be square" is one too)
    if "negative integer powers" in str(error):  # NumPy's and PyTorch's words
        raise DtypeError(
            f"{op.name}(): an integer to a negative integer power is not an integer ({error}); "
            "convert the base to a floating dtype first, e.g. x.float() ** -1"
        ) from error
    if type(error).__name__ in BACKEND_LINALG_ERRORS:
        if _holds_nan(inputs):  # NumPy calls such a matrix singular
            raise LinAlgError(
                f"{op.name}(): {error} (from the {device.backend.name} kernel): the input holds "
                "NaN; find where it was made (plugrad.autograd.detect_anomaly() for a gradient)"
            ) from error
        raise LinAlgError(
            f"{op.name}(): {error} (from the {device.backend.name} kernel): the matrix is "
            "singular, or not positive definite, where the op needs it to be; check its values, "
            "or use plugrad.linalg.pinv or lstsq for a least-squares answer"
        ) from error
    _name_third_party_kernel(op, device, error)


def _name_third_party_kernel(op: RegisteredOp, device: Device, error: BaseException) -> None:
    """Note under an error a third-party plugin's kernel raised which kernel it was (the
    error keeps its type and message: the plugin may document them).

    Python prints the note under the message; plugrad's own errors and kernels get none.
    """
    if isinstance(error, PlugradError):
        return
    sources = _tables.kernel_sources.get(device.backend.name, {}).get(op.name)
    plugin = sources[0].plugin if sources else _tables.op_owners.get(op.name)
    if plugin is not None and plugin not in _tables.builtin_plugins:
        add_note(error, f"plugrad: raised by {_kernel_that_ran(op, device)}")


def _names_axes(value: Any) -> bool:
    """Whether ``value`` is an int or a sequence of ints (anything with ``__index__``)."""
    items = value if isinstance(value, (tuple, list)) else (value,)
    return all(hasattr(type(item), "__index__") for item in items)


def _holds_nan(inputs: tuple[Any, ...]) -> bool:
    """Whether a floating tensor among ``inputs`` holds NaN (read on an error path only)."""
    for x in inputs:
        if isinstance(x, Tensor) and x.dtype.kind in ("real floating", "complex floating"):
            xp = x._device.xp
            try:
                if bool(xp.any(xp.isnan(x._array))):
                    return True
            except Exception:  # a backend that cannot tell here: the general message
                return False
    return False


def _retell_missing_dtype(
    op: RegisteredOp, device: Device, error: Exception, inputs: tuple[Any, ...]
) -> None:
    """Raise a DtypeError for a kernel that lacks the inputs' dtype (PyTorch's: ``"add_stub"
    not implemented for 'UInt32'``, ``Low precision dtypes not supported. Got Half``,
    ``expected a tensor ... of float, double, cfloat or cdouble types``; JAX's
    ``Unsupported dtype float16``)."""
    text = str(error)
    lowered = text.lower()
    dtypes = [x.dtype for x in inputs if isinstance(x, Tensor)]
    unusual = any(d not in _FULL_PRECISION for d in dtypes)
    if not (
        (isinstance(error, NotImplementedError) and "not implemented for" in text)
        or ("bool tensor" in text and "not supported" in text)  # PyTorch's `-` of bools
        or "low precision dtypes not supported" in lowered
        or (unusual and "of float, double" in lowered)  # (said of a 1-d float input too)
        or (unusual and "unsupported dtype" in lowered)  # JAX's linalg of float16
    ):
        return
    names = ", ".join(x.dtype.name if isinstance(x, Tensor) else type(x).__name__ for x in inputs)
    if any(d.kind == "real floating" and d.itemsize < 4 for d in dtypes):
        advice = "convert them first, e.g. x.to(plugrad.float32)"
    elif any(d.kind == "complex floating" for d in dtypes):
        advice = "compute it on a backend that has one (numpy, jax)"
    else:
        advice = "convert them first, e.g. x.to(plugrad.int64)"
    raise DtypeError(
        f"{op.name}(): the {device.backend.name} kernel has no version for inputs of dtype "
        f"{names} ({error}); {advice}"
    ) from error


_FULL_PRECISION = (_dtypes.float32, _dtypes.float64, _dtypes.complex64, _dtypes.complex128)


def _retell_shape_error(
    op: RegisteredOp, device: Device, error: Exception, inputs: tuple[Any, ...]
) -> None:
    """Raise a backend's own shape error again as a ShapeError naming the op and the shapes.

    Returns for other errors, which the caller raises again unchanged.
    """
    text = str(error)
    if isinstance(error, PlugradError):
        return
    if (
        isinstance(error, IndexError)
        and not isinstance(error, ValueError)
        and "dimension out of range" not in text.lower()
        and "appears multiple times" not in text  # (array-api-compat's squeeze on torch)
    ):
        # an index past the end (the standard's IndexError), or one that cannot index the
        # array (two ellipses, too many indices); not an axis (NumPy's AxisError)
        if "out of bounds" in text.lower():
            raise IndexOutOfRangeError(f"{op.name}(): {text}") from error
        raise InvalidIndexError(f"{op.name}(): {text}") from error
    if not any(w in text.lower() for w in _SHAPE_WORDS):
        return
    shapes = ", ".join(str(x.shape) if isinstance(x, Tensor) else type(x).__name__ for x in inputs)
    # An axis out of range (NumPy's AxisError is also an IndexError): the standard's IndexError.
    # Dask says "`axis` of (-3,) invalid for 2-D array".
    lowered = text.lower()
    axis_error = isinstance(error, IndexError) or (
        "axis" in lowered and ("out of bounds" in lowered or "invalid for" in lowered)
    )
    if axis_error:
        raise AxisError(
            f"{op.name}(): an axis is out of bounds for inputs of shapes {shapes}; pass one "
            f"that names a dimension (negative ones count from the last) (the "
            f"{device.backend.name} kernel says: {text})"
        ) from error
    raise ShapeError(
        f"{op.name}(): the {device.backend.name} kernel cannot take inputs of shapes "
        f"{shapes}: {text}"
    ) from error


def _refuse_complex(op: RegisteredOp, device: Device, inputs: tuple[Any, ...]) -> None:
    """Raise if an input of the real-only ``op`` is complex (a tensor or a Python complex)."""
    complex_natives = device.complex_natives
    for x in inputs:
        if type(x) is complex or (isinstance(x, Tensor) and x._array.dtype in complex_natives):
            raise _complex_error(op, inputs)


def _complex_error(op: RegisteredOp, inputs: tuple[Any, ...]) -> DtypeError:
    dtypes = ", ".join(x.dtype.name if isinstance(x, Tensor) else type(x).__name__ for x in inputs)
    return DtypeError(
        f"{op.name}(): complex inputs are not supported ({dtypes}): {op.name} is defined for "
        "real numbers only; apply it to x.real, x.imag or abs(x) instead"
    )


#: Parameters that name axes: a kernel given another kind of value raises a TypeError.
_AXIS_PARAMETERS = ("axis", "axes", "dim", "dims", "axis1", "axis2", "source", "destination")


def _retell_dtype_error(
    op: RegisteredOp,
    device: Device,
    error: TypeError,
    inputs: tuple[Any, ...],
    params: dict[str, Any] | None = None,
) -> None:
    """Raise a backend's refusal of an input dtype again as a DtypeError naming the op,
    and its refusal of an axis that is not an int (``x.sum("rows")``) as an ArgumentError.

    Returns for other errors, which the caller raises again unchanged. JAX's shape
    errors are TypeErrors too: those are retold as ShapeErrors.
    """
    if params and not isinstance(error, PlugradError):
        for name in _AXIS_PARAMETERS:
            value = params.get(name)
            if value is not None and not _names_axes(value):
                raise ArgumentError(
                    f"{op.name}(): {name} must be an int or a tuple of ints, got {value!r} "
                    "(plugrad has no named dimensions)"
                ) from error
    text = str(error)
    if "shape" in text or "must be unique" in text:  # (JAX's flip of an axis twice)
        _retell_shape_error(op, device, error, inputs)
    lowered = text.lower()
    # NumPy refuses `-` of bools saying "The numpy boolean negative ... is not supported",
    # linear algebra of float16 saying "array type float16 is unsupported in linalg", Dask
    # `-` of bools "Parameters of such types are not supported by negative", a NumPy ufunc
    # without a loop for them (shifts of floats) "not supported for the input types".
    if isinstance(error, PlugradError) or not any(
        word in lowered
        for word in (
            "dtype", "boolean", "unsupported in linalg", "types are not supported",
            "not supported for the input types",
        )
    ):  # fmt: skip
        _name_third_party_kernel(op, device, error)
        return
    dtypes = ", ".join(x.dtype.name if isinstance(x, Tensor) else type(x).__name__ for x in inputs)
    advice = "cast first, e.g. x.to(plugrad.float32)"
    if any(isinstance(x, Tensor) and x.dtype.kind == "complex floating" for x in inputs):
        # (a cast to a real dtype would drop the imaginary parts)
        advice = (
            "compute it from the real and imaginary parts (x.real, x.imag), or on a backend "
            "whose kernel takes complex numbers (numpy)"
        )
    raise DtypeError(
        f"{op.name}(): the {device.backend.name} kernel does not take inputs of dtype "
        f"{dtypes} ({text}); {advice}"
    ) from error


def _check_kernel_output(op: RegisteredOp, device: Device, out: Any) -> None:
    """Raise unless ``out`` is what ``op``'s kernel must return on ``device``.

    The per-op path calls this only for an output of a type not yet seen on the
    device, so that almost every op pays one identity comparison (the device's
    usual array type) and the rest one set lookup: an array of the device's
    backend, or for an op declaring several outputs a tuple or list of them.
    Anything else raises :class:`~plugrad.errors.PluginOutputError` naming the
    op, the plugin that declared it and the kernel that ran, at once rather
    than wherever the wrapped value would fail later.
    """
    if not op.multiple_outputs:
        if not _is_backend_array(device, out):
            wanted = "one array"
            if isinstance(out, (tuple, list)):
                wanted += " (an op with several outputs declares multiple_outputs=True)"
            raise _bad_kernel_output(op, device, out, wanted)
        return
    if not isinstance(out, (tuple, list)):
        raise _bad_kernel_output(op, device, out, "a tuple of arrays, one per output")
    for element in out:
        if type(element) not in device.output_types and not _is_backend_array(device, element):
            raise _bad_kernel_output(
                op, device, element, "a tuple of arrays, one per output", " as one output"
            )


def _is_backend_array(device: Device, value: Any) -> bool:
    """Whether ``value`` is an array of ``device``'s backend; remember its type if so."""
    backend = device.backend
    types = backend.array_types()
    if isinstance(value, types):
        device.output_types.add(type(value))
        if device.array_type is None and isinstance(value, types[0]):  # not a NumPy scalar
            device.array_type = type(value)
        return True
    # During a capture kernels return traced arrays: accepted, never remembered.
    return isinstance(value, _graph.backend_array_types(backend))


def _kernel_that_ran(op: RegisteredOp, device: Device) -> str:
    """``"plugin 'p', op 'f': its op kernel m.f_numpy for numpy"``, for errors."""
    backend = device.backend.name
    owner = _graph.op_owner(op.name)
    kernel = f"its {backend} kernel"
    sources = _tables.kernel_sources.get(backend, {}).get(op.name)
    if sources:
        source = sources[0]
        kernel = f"its {source.kind} kernel {source.function_name} for {backend}"
        if source.owner() != owner:
            kernel += f" (from {source.owner()})"
    return f"{owner}, op {op.name!r}: {kernel}"


def _bad_kernel_output(
    op: RegisteredOp, device: Device, value: Any, wanted: str, where: str = ""
) -> PluginOutputError:
    backend = device.backend.name
    return PluginOutputError(
        f"{_kernel_that_ran(op, device)} returned a "
        f"{_type_name(value)}{where}, not an array of backend {backend!r}; a kernel must "
        f"return {wanted}"
    )


def _integral_output(op: RegisteredOp, device: Device, out: Any) -> PluginOutputError:
    """The error for an integer or bool result of a differentiable op whose inputs require
    grad: as a Tensor it would require grad, which no integer tensor can."""
    return PluginOutputError(
        f"{_kernel_that_ran(op, device)} returned an array of dtype {out.dtype} for inputs "
        "that require grad, but the op is differentiable: its result must be floating-point "
        "(or complex), like its gradient. Compute it in the inputs' dtype (xp.astype(result, "
        "x.dtype)), or declare the op differentiable=False if it has no gradient"
    )


def _no_kernel(op: RegisteredOp, device: Device) -> LookupError:
    if _tables.ops.get(op.name) is not op:
        return LookupError(
            f"op {op.name!r} is no longer registered (its plugin was unregistered); "
            "re-register the plugin or stop using the old function object"
        )
    return LookupError(f"op {op.name!r} has no kernel for backend {device.backend.name!r}")
