"""Helpers shared by the built-in backward rules (not a plugin itself).

Everything here is written against ``xp`` only, so it works in both backward
modes: raw backend arrays, and Tensors under ``create_graph=True``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import numbers
import sys
from typing import Any

from plugrad import return_types
from plugrad.errors import (
    ArgumentError,
    AxisError,
    DtypeError,
    IndexOutOfRangeError,
    ScalarRangeError,
    ShapeError,
)
from plugrad.graph import ArraySpec
from plugrad.opdef import OpDef, as_int, dim_as_axis, op, reduction_dim_as_axis

_SCALARS = (bool, int, float, complex)


def any_true(flag: Any, what: str, error: type[Exception] = IndexOutOfRangeError) -> bool:
    """Whether ``flag``, a 0-d boolean array a kernel computed, is true.

    Kernels call it through this module (``_rules.any_true``): under
    :func:`plugrad.compile` it is a check every replay repeats, raising
    ``error`` that says ``what`` was found, instead of a read of a value
    (which would fall back to eager execution).
    """
    return bool(flag)


def check_positions(xp: Any, function: str, index: Any, size: int, *, dim: int, wrap: bool) -> Any:
    """``index`` in the default index dtype, once checked: integer indices outside ``[0,
    size)`` (``[-size, size)`` where negative ones count from the end) are refused (NumPy
    raises its own error, JAX clamps or reads NaN, and PyTorch's gather, index_select and
    scatter refuse negative indices that NumPy would wrap), and so are bool indices (NumPy
    reads True as position 1). Narrower integers are widened: PyTorch's kernels refuse
    int8 indices, and Dask's and JAX's compute ``index + size`` in the index's dtype."""
    if not xp.isdtype(index.dtype, "integral"):
        given = str(index.dtype).rpartition(".")[2]  # (bool, numpy.bool, torch.bool)
        raise DtypeError(
            f"{function}(): indices must be integers, got {given}; for a mask, select with "
            "x[mask] (or convert the positions with .to(plugrad.int64))"
        )
    wide = index_dtype(xp, index)
    if index.dtype != wide:  # (-200 and 200 in int8 would wrap, or overflow)
        index = xp.astype(index, wide)
    if not math.prod(index.shape):
        return index
    low = -size if wrap else 0
    if hasattr(xp, "out_of_range"):  # a method's kernel computes on tensors: one op
        outside = xp.out_of_range(index, low=low, high=size)
    else:  # two reductions, fewer passes than comparing every index twice
        outside = (xp.min(index) < low) | (xp.max(index) >= size)
    what = f"{function}(): an index outside [{low}, {size}) along dim {dim}"
    if not sys.modules[__name__].any_true(outside, what):  # the compiled replay's check
        return index
    lowest = int(xp.min(index))
    first = lowest if lowest < low else int(xp.max(index))
    advice = "" if wrap or first >= size else " (negative indices do not count from the end here)"
    raise IndexOutOfRangeError(
        f"{function}(): index {first} is out of bounds for dim {dim} of size {size}; indices "
        f"must lie in [{low}, {size}){advice}"
    )


def device_of(array: Any) -> Any:
    """``array.device``, or None (the library's default device) for arrays that have none.

    Dask arrays carry no ``device``: every chunk lives wherever the scheduler
    puts it, so the default device is the right one for arrays made beside them.
    """
    return getattr(array, "device", None)


def is_scalar(value: Any) -> bool:
    """Whether ``value`` is a Python number (not a NumPy scalar, which is a 0-d array with
    its own dtype, though ``numpy.float64`` subclasses ``float``)."""
    return type(value) in _SCALARS


def require_array(function: str, name: str, value: Any) -> None:
    """Raise a ``TypeError`` naming ``function``'s argument ``name`` unless ``value`` is an
    array (a list of indices or a mask as a list fails later, with an AttributeError)."""
    if not hasattr(value, "dtype") or not hasattr(value, "shape"):
        raise ArgumentError(
            f"{function}(): {name} must be a tensor, got {type(value).__name__}; make one "
            f"with plugrad.tensor(...), as PyTorch requires"
        )


def require_bool_mask(xp: Any, function: str, mask: Any) -> None:
    """Raise unless ``mask``, ``function``'s mask, is a bool tensor: a ``TypeError`` for
    something else than a tensor (a list, a NumPy array), a ``DtypeError`` for numbers
    (more often a mistake, indices or weights, than a mask, as PyTorch holds)."""
    require_array(function, "mask", mask)
    try:
        is_bool = xp.isdtype(mask.dtype, "bool")
    except DtypeError:  # an array of another library (NumPy's), not a tensor
        raise ArgumentError(
            f"{function}(): mask must be a tensor, got {type(mask).__name__}; make one with "
            "plugrad.tensor(...), as PyTorch requires"
        ) from None
    if not is_bool:
        raise DtypeError(
            f"{function}(): the mask must be a bool tensor, got {mask.dtype}; compare it "
            "first (mask != 0)"
        )


def python_number(value: Any) -> Any:
    """A NumPy scalar (``np.float64(1.5)``, as NumPy's reductions return) as the Python
    number it holds, which takes a tensor's dtype; anything else as it is."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        return value.item()
    return value


def scalar_number(function: str, name: str, value: Any) -> Any:
    """A number param (PyTorch's ``Scalar``) as a Python number: a NumPy scalar or a 0-d
    tensor gives the number it holds (PyTorch's reads a 0-d tensor's value, without a
    gradient); anything else that is not a number is refused."""
    if type(value) in _SCALARS:
        return value
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        return value.item()
    if isinstance(value, numbers.Number):
        return value
    shape = getattr(value, "shape", None)
    got = f"a tensor of shape {tuple(shape)}" if shape is not None else type(value).__name__
    raise ArgumentError(
        f"{function}(): {name} must be a number (or a 0-d tensor), got {got}; pass "
        f"{name}=float(...) or a 0-d tensor"
    )


# dtype object -> whether it is complex, learned per dtype: conj() runs in the backward
# rules of multiply, divide, exp, ... on every call, and a dict lookup is several times
# cheaper than comparing dtypes (or than xp.isdtype).
# NOTE: keyed by (type, dtype): dtypes of different libraries may collide in a hash
# table, and comparing them across libraries is unsupported (array-api-strict warns).
_IS_COMPLEX: dict[tuple[type, Any], bool] = {}


def is_complex(xp: Any, value: Any) -> bool:
    """Whether ``value`` (an array, a Tensor or a Python scalar) is complex."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return isinstance(value, complex)
    try:
        return _IS_COMPLEX[type(dtype), dtype]
    except (KeyError, TypeError):
        return _remembered(_IS_COMPLEX, dtype, dtype == xp.complex64 or dtype == xp.complex128)


def _remembered(cache: dict[tuple[type, Any], bool], dtype: Any, fact: Any) -> bool:
    """``fact`` about ``dtype`` as a bool, kept in ``cache`` where the dtype object hashes."""
    result = bool(fact)
    try:
        cache[type(dtype), dtype] = result
    except TypeError:  # an unhashable dtype object: no caching
        pass
    return result


def dtype_name(dtype: Any) -> str:
    """The name plugrad gives ``dtype``, a plugrad or a backend's dtype: ``float16`` for
    ``plugrad.float16``, NumPy's ``float16`` and ``torch.float16`` alike."""
    name = getattr(dtype, "name", None)  # plugrad's and NumPy's dtypes
    return name if isinstance(name, str) else str(dtype).rpartition(".")[2]


def refuse_value_it_cannot_hold(xp: Any, function: str, x: Any, value: Any) -> None:
    """Raise where writing ``value`` into ``x`` would change it without a word, as PyTorch
    refuses: a complex value into a real tensor (its imaginary part dropped), a Python number
    outside the range of ``x``'s dtype (300 into uint8 wraps to 44, 1e5 into float16 is inf)."""
    if (isinstance(value, complex) or is_complex(xp, value)) and not is_complex(xp, x):
        raise DtypeError(
            f"{function}(): the value {value!r} is complex, but the tensor is "
            f"{dtype_name(x.dtype)}, which would keep only its real part; make the tensor "
            "complex first (x.to(plugrad.complex64)), or pass value.real"
        )
    kind = type(value)
    if kind is not int and kind is not float:
        return
    if xp.isdtype(x.dtype, "integral"):
        info: Any = xp.iinfo(x.dtype)
        fits = kind is int or math.isfinite(value)
        fits = fits and info.min <= value <= info.max
    elif xp.isdtype(x.dtype, ("real floating", "complex floating")):
        info = xp.finfo(x.dtype)  # infinities and NaN are values of every float dtype
        fits = not math.isfinite(value) or abs(value) <= float(info.max)
    else:
        return
    if not fits:
        raise ScalarRangeError(
            f"{function}(): the number {value!r} is out of the range of {dtype_name(x.dtype)} "
            f"[{info.min}, {info.max}]; convert the tensor to a dtype that holds it, or write a "
            "number in range"
        )


def without_leading_ones(xp: Any, value: Any) -> Any:
    """``value`` without its leading axes of length 1, as PyTorch assigns it: a (1, 1) value
    into ``x[mask]`` is one number (NumPy's mask assignment takes 0-d or 1-d values only)."""
    shape = getattr(value, "shape", ())
    lead = 0
    while lead < len(shape) and shape[lead] == 1:
        lead += 1
    return xp.reshape(value, tuple(shape[lead:])) if lead else value


def conj(xp: Any, value: Any) -> Any:
    """``conj(value)`` for complex values, ``value`` itself (no copy) for real ones.

    plugrad follows PyTorch's convention for complex gradients: the gradient of
    a real loss with respect to ``z`` is the conjugate Wirtinger derivative, so
    for a holomorphic ``f`` the rule is ``g * conj(f'(z))``.
    """
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return value.conjugate() if isinstance(value, complex) else value
    try:
        if not _IS_COMPLEX[type(dtype), dtype]:
            return value
    except (KeyError, TypeError):
        if not is_complex(xp, value):
            return value
    return xp.conj(value)


def cast(xp: Any, grad: Any, dtype: Any) -> Any:
    """Cast ``grad`` to ``dtype``, taking the real part when ``dtype`` is real."""
    if grad.dtype == dtype:
        return grad
    if is_complex(xp, grad) and not xp.isdtype(dtype, "complex floating"):
        grad = xp.real(grad)
    return xp.astype(grad, dtype)


# dtype object -> whether it is float16 or bfloat16, learned per dtype as _IS_COMPLEX is.
_IS_HALF: dict[tuple[type, Any], bool] = {}


def is_half(xp: Any, dtype: Any) -> bool:
    """Whether ``dtype`` is ``float16`` or ``bfloat16`` (never for a backend without them):
    PyTorch accumulates both in float32."""
    try:
        return _IS_HALF[type(dtype), dtype]
    except (KeyError, TypeError):
        halves = [getattr(xp, name, None) for name in ("float16", "bfloat16")]
        return _remembered(
            _IS_HALF, dtype, any(half is not None and bool(dtype == half) for half in halves)
        )


def half_in_float32(function: Any) -> Any:
    """The kernel ``function(xp, x, ...)`` computing a ``float16`` (or ``bfloat16``) ``x`` in
    ``float32``.

    NOTE: PyTorch accumulates float16 reductions (norms, variances, running
    sums) in float32 and rounds the result once; computed in float16, the
    squares of a vector of 300s overflow and its norm comes out inf, and a
    running sum stops growing at 2048 + 2 * n. A ``dtype=`` param, where the
    kernel takes one, is the dtype computed in: ``float16`` there computes in
    ``float32`` too.
    """

    def kernel(xp: Any, x: Any, /, **params: Any) -> Any:
        dtype = params.get("dtype")
        if not is_half(xp, x.dtype if dtype is None else dtype):
            return function(xp, x, **params)
        if dtype is not None:
            params["dtype"] = xp.float32
        out = function(xp, xp.astype(x, xp.float32), **params)
        return xp.astype(out, x.dtype if dtype is None else dtype)

    kernel.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]
    kernel.__name__ = kernel.__qualname__ = function.__name__
    kernel.__doc__ = function.__doc__
    return kernel


def in_float64(function: Any) -> Any:
    """The kernel ``function(xp, x, **params)`` computed in float64 (where the backend has
    it) for narrower floats, its result rounded once: special functions whose float32
    forms lose digits (erfc's tail, 55 ulp at 8.3 in float32 arithmetic)."""

    @functools.wraps(function)
    def kernel(xp: Any, x: Any, /, **params: Any) -> Any:
        wide = getattr(xp, "float64", None)
        if wide is None or x.dtype == wide:
            return function(xp, x, **params)
        return xp.astype(function(xp, xp.astype(x, wide), **params), x.dtype)

    return kernel


def half_rule_in_float32(rule: Any) -> Any:
    """The backward rule ``rule(xp, g, ans, x, **params)`` computing for a ``float16`` ``x``
    in ``float32``, its gradient rounded once.

    NOTE: a rule dividing by the number of elements reduced (a mean's) divides a
    float16 gradient by a count that float16 holds only up to 65504: above it the
    count is inf and the gradient 0. PyTorch computes such steps in float32.
    """

    @functools.wraps(rule)
    def computed(xp: Any, g: Any, ans: Any, x: Any, /, **params: Any) -> Any:
        if not is_half(xp, x.dtype):
            return rule(xp, g, ans, x, **params)

        def widened(value: Any) -> Any:  # (an input not saved is its shape and dtype only)
            if value is None:
                return None
            if isinstance(value, ArraySpec):
                return ArraySpec(value.shape, xp.float32)
            return xp.astype(value, xp.float32) if is_half(xp, value.dtype) else value

        return xp.astype(rule(xp, widened(g), widened(ans), widened(x), **params), x.dtype)

    # It reads x's dtype alone (an input not saved is given as its shape and dtype): what
    # the op saves for backward is what ``rule`` reads (see plugrad.opdef's inference).
    computed.passes_arguments_on = True  # type: ignore[attr-defined]
    return computed


def in_float32_if_half(xp: Any, function: Any, *arrays: Any, **params: Any) -> Any:
    """``function(xp, *arrays, **params)`` of several arrays, float16 ones computed in float32
    and the result rounded once to float16, as PyTorch's fused kernels (see
    :func:`half_in_float32` for one array)."""
    half = next((a.dtype for a in arrays if is_half(xp, a.dtype)), None)
    if half is None:
        return function(xp, *arrays, **params)
    wide = [xp.astype(a, xp.float32) if is_half(xp, a.dtype) else a for a in arrays]
    return xp.astype(function(xp, *wide, **params), half)


@functools.cache
def extrema_refusing_empty_axes() -> dict[str, Any]:
    """The kernels of ``max``, ``min``, ``argmax`` and ``argmin`` refusing an axis of length 0
    (see :func:`refusing_empty_reductions`), made once: a rebuild of the tables must find
    the same function objects."""
    return {name: refusing_empty_reductions(name) for name in ("max", "min", "argmax", "argmin")}


def refusing_empty_reductions(name: str) -> Any:
    """The kernel of the reduction ``name`` (``max``, ``argmin``, ...), refusing to reduce an
    axis of length 0, which has no extremum: for a backend whose own kernel returns a value
    there (Dask, lazily) or raises its own error (PyTorch's RuntimeError)."""

    gives_indices = name.startswith("arg")

    def kernel(xp: Any, x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
        shape = tuple(x.shape)
        if 0 in shape:
            axes = normalize_axes(axis, len(shape))
            if any(shape[a] == 0 for a in axes):
                raise ShapeError(
                    f"{name}() over an axis of length 0 (the input has shape {shape}) has no "
                    "value: reduce over axes that hold elements, or check the size first"
                )
            # Other axes hold elements, but the result has none: Dask's kernel raised
            # NumPy's "zero-size array to reduction" for the (0,) maximum of a (0, 3) array.
            if keepdims:
                out = tuple(1 if a in axes else n for a, n in enumerate(shape))
            else:
                out = tuple(n for a, n in enumerate(shape) if a not in axes)
            dtype = index_dtype(xp, x) if gives_indices else x.dtype
            return xp.zeros(out, dtype=dtype, device=device_of(x))
        if gives_indices and x.dtype == xp.bool:  # (PyTorch's refuses bools)
            x = xp.astype(x, xp.uint8)
        return getattr(xp, name)(x, axis=axis, keepdims=keepdims)

    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def normalize_axes(axis: int | tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """The non-negative axes a reduction over ``axis`` reduces (all for ``None``)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axes: tuple[Any, ...] = (axis,)
    elif type(axis) is tuple:
        axes = axis
    else:  # (the standard's axis=numpy.int64(1) reached the rules as given)
        axis = dim_as_axis(axis)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(a % ndim if ndim else a for a in axes)


def one_int_axis(name: str, dim: Any) -> int:
    """``dim`` as an int (a NumPy integer or a 0-d integer tensor too, see
    :func:`plugrad.opdef.as_int`), or an ArgumentError naming ``name`` (plugrad names no
    axes)."""
    if type(dim) is not int:
        dim = as_int(dim)
        if type(dim) is not int:
            raise ArgumentError(f"{name}(): dim must be one int, got {dim!r}")
    return dim


def checked_axis(name: str, dim: int, ndim: int, *, zero_d_as_one: bool = False) -> int:
    """``dim`` as an axis in ``0..ndim-1`` (negative counts from the end), or an AxisError
    naming ``name``; with ``zero_d_as_one`` a 0-d tensor takes 0 and -1, as PyTorch's
    reductions do."""
    n = 1 if zero_d_as_one and ndim == 0 else ndim
    dim = one_int_axis(name, dim)
    if not -n <= dim < n:
        valid = f"give one in [{-n}, {n - 1}]" if n else "a 0-d tensor has none"
        raise AxisError(
            f"{name}(): dim {dim} is out of range for a tensor of {ndim} dimension(s); {valid}"
        )
    return dim % n


def expand_reduced(xp: Any, g: Any, shape: tuple[int, ...], axis: Any, keepdims: bool) -> Any:
    """Broadcast the gradient of a reduction back over the axes it reduced."""
    if axis is None:  # a reduction to one element broadcasts as it is
        return xp.broadcast_to(g, tuple(shape))
    if not keepdims:
        axes = normalize_axes(axis, len(shape))
        g = xp.reshape(g, tuple(1 if i in axes else n for i, n in enumerate(shape)))
    return xp.broadcast_to(g, tuple(shape))


def keepdims_shape(shape: tuple[int, ...], axis: Any) -> tuple[int, ...]:
    axes = normalize_axes(axis, len(shape))
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def count(shape: tuple[int, ...], axis: Any) -> int:
    n = 1
    for a in normalize_axes(axis, len(shape)):
        n *= shape[a]
    return n


def axis_slice(ndim: int, axis: int, start: int | None, stop: int | None) -> tuple[Any, ...]:
    """The key selecting ``start:stop`` along ``axis`` of an ``ndim``-dimensional array.

    It ends with ``...``: the standard leaves a key shorter than ``ndim`` without one undefined.
    """
    return (slice(None),) * (axis % ndim) + (slice(start, stop), Ellipsis)


def reverse_cumulative_sum(xp: Any, g: Any, axis: int) -> Any:
    """``out[i] = sum(g[i:])`` along ``axis``."""
    return xp.flip(xp.cumulative_sum(xp.flip(g, axis=axis), axis=axis), axis=axis)


def safe_where_zero(xp: Any, x: Any, fill: float = 1.0) -> Any:
    """``x`` with its zeros replaced by ``fill``: divide by it without making nans.

    NOTE: a rule that computes ``where(x == 0, 0, g / x)`` still differentiates
    the masked ``g / x``, and ``0 * inf`` there makes the double backward nan;
    divide by the safe value instead.
    """
    return xp.where(x == 0, fill, x)


def logistic(xp: Any, x: Any) -> Any:
    """``1 / (1 + exp(-x))`` of real ``x`` without overflow: ``exp`` only of ``-|x|``.

    ``-|x|`` is written as a ``where``, whose gradient at 0 is that of ``-x``
    (``abs``'s is 0 there): a rule using this stays right when differentiated.
    """
    positive = x >= 0
    e = xp.exp(xp.where(positive, -x, x))
    return xp.where(positive, 1.0 / (1.0 + e), e / (1.0 + e))


def negative_axis(name: str, axis: int, x1: Any, x2: Any) -> int:
    """``axis`` counted from the end of the broadcast shape, as vecdot and cross require
    (an AxisError naming ``name`` where it is out of range: NumPy wraps some around)."""
    ndim = max(x1.ndim, x2.ndim)
    return checked_axis(name, axis, ndim) - ndim


def along_axis_key(
    xp: Any, indices: Any, axis: int, out_shape: tuple[int, ...], in_shape: tuple[int, ...]
) -> tuple[Any, ...]:
    """The key that indexes like ``take_along_axis(x, indices, axis)`` (for a scatter).

    Axes of ``x`` of length 1 that the indices broadcast over map to index 0.
    """
    ndim = len(out_shape)
    axis = axis % ndim
    key: list[Any] = []
    for d in range(ndim):
        if d == axis:
            key.append(indices)
            continue
        shape = [1] * ndim
        shape[d] = out_shape[d]
        positions = xp.arange(out_shape[d], device=device_of(indices))
        if in_shape[d] != out_shape[d]:
            positions = positions * 0
        key.append(xp.reshape(positions, tuple(shape)))
    return tuple(key)


# -- PyTorch's meaning of Tensor methods ------------------------------------------------

#: What PyTorch's ``x.max(dim)``, ``x.min(dim)``, ``x.sort()`` and ``x.topk(k)`` return.
values_indices: dict[str, Any] = {
    name: getattr(return_types, name) for name in ("max", "min", "sort", "topk")
}


def sizes(values: tuple[Any, ...], keyword: Any = None, name: str = "") -> tuple[int, ...]:
    """PyTorch's sizes given as varargs or as one sequence: ``view(2, 3)``, ``view((2, 3))``;
    or ``keyword``, given as PyTorch's ``name=`` (``view(size=(2, 3))``), instead."""
    if keyword is not None:
        if values:
            raise ArgumentError(f"give the sizes by position or as {name}=, not both")
        values = (keyword,)
    if len(values) == 1 and isinstance(values[0], (tuple, list)):
        return tuple(values[0])
    return tuple(values)


def below_minus_one(shape: tuple[Any, ...]) -> bool:
    """Whether a size of ``shape`` is below -1 (anything not a number is the kernel's to refuse)."""
    try:
        return bool(shape) and min(shape) < -1
    except TypeError:
        return False


def torch_axis(dim: Any, axis: Any, default: Any = None) -> Any:
    """The axis a method got as PyTorch's ``dim=`` or the standard's ``axis=`` (not both)."""
    if dim is not None and axis is not None:
        raise ArgumentError(
            "got both dim= and axis=, which name the same argument (dim is PyTorch's name for "
            "axis); pass only one"
        )
    return dim_as_axis(dim) if dim is not None else axis if axis is not None else default


def reduction_axis(name: str, x: Any, dim: Any, axis: Any, empty: str = "all") -> Any:
    """The axis of the reduction ``name`` of ``x`` given as PyTorch's ``dim=`` or the standard's
    ``axis=`` (not both); ``dim`` read as PyTorch's reductions read it (a 0-d tensor takes 0 and
    -1, ``dim=()`` is every dim: see :func:`plugrad.opdef.reduction_dim_as_axis`)."""
    if dim is None:
        return torch_axis(dim, axis)
    if axis is not None:
        torch_axis(dim, axis)  # raises: both given
    return reduction_dim_as_axis(name, dim, x, empty)


def one_array(adapter: Any) -> Any:
    """Mark a ``torch_function`` adapter that gives one array, as its op does.

    The generated stubs then type PyTorch's form of the call as a ``Tensor``,
    as the op's own; an unmarked adapter may give something else (PyTorch's
    ``max(x, dim)`` gives values and indices) and is typed ``Any``.
    """
    adapter.returns_one_array = True
    return adapter


def axis_query(
    name: str, doc: str, *, empty_dim: str = "refuse", real_only: bool = False,
    method: Any = None,
) -> OpDef:  # fmt: skip
    """The row of a reduction with no gradient: ``name(x, /, *, axis=None, keepdims=False)``.

    ``all``, ``any``, ``argmax`` and ``argmin`` share it: the kernel is the
    backend's function of that name, ``x.name(...)`` is its Tensor method and
    PyTorch's ``dim``/``keepdim`` form is accepted. The row belongs to the
    module that calls this, which collects it with its other ops. ``empty_dim``: what
    PyTorch's ``dim=()`` means (see :func:`torch_reduction`); ``real_only``: see :func:`op`;
    ``method``: PyTorch's form where it gives more than :func:`torch_reduction` (another
    result dtype), for the Tensor method and the function called with ``dim``/``keepdim``.
    """
    methods = name if method is None else {name: method}
    torch_form = torch_reduction(name, empty_dim=empty_dim) if method is None else method
    row = op(f"{name}(x, /, *, axis=None, keepdims=False)", differentiable=False, methods=methods,
             torch_function=torch_form, real_only=real_only, doc=doc)  # fmt: skip
    return dataclasses.replace(row, module=sys._getframe(1).f_globals.get("__name__"))


def index_dtype(xp: Any, like: Any) -> Any:
    """The default integer dtype where ``like`` (a Tensor or an array) lives: ``int64``, or
    ``int32`` on a backend without it (JAX without 64-bit types)."""
    default = getattr(getattr(like, "_device", None), "default_int_dtype", None)  # a Tensor's
    if default is not None:
        return default
    info = getattr(xp, "__array_namespace_info__", None)
    return xp.int64 if info is None else info().default_dtypes()["indexing"]


def torch_accumulation_dtype(xp: Any, x: Any, dtype: Any) -> Any:
    """The dtype PyTorch sums and multiplies ``x`` in: ``int64`` for unsigned integers and bools.

    The standard's ``sum``/``prod`` keep an unsigned kind (``uint8`` sums to
    ``uint64``), which wraps below zero at the next subtraction; PyTorch's give
    ``int64``, as they do for every integer and bool dtype. An explicit ``dtype`` wins.
    """
    if dtype is None and xp.isdtype(x.dtype, ("unsigned integer", "bool")):
        return index_dtype(xp, x)
    return dtype


def torch_accumulated(xp: Any, x: Any, dtype: Any) -> tuple[Any, Any]:
    """``x`` and the dtype PyTorch sums it in (:func:`torch_accumulation_dtype`), a bool ``x``
    converted to it first: the standard's ``sum`` and ``cumulative_sum`` take numbers only."""
    dtype = torch_accumulation_dtype(xp, x, dtype)
    if xp.isdtype(x.dtype, "bool"):
        x = xp.astype(x, dtype)
    return x, dtype


def torch_reduction(
    name: str, *, with_dtype: bool = False, accumulates: bool = True, empty_dim: str = "all"
) -> Any:
    """PyTorch's ``torch.<name>(x, dim=None, keepdim=False)``: the axis may come by position.

    The standard's ``axis=``/``keepdims=`` are taken too, so that a call giving
    both names of one argument is refused as everywhere else. ``dim`` is read as
    PyTorch's reductions read it (:func:`reduction_axis`); ``empty_dim`` says what
    ``dim=()`` means, as PyTorch 2 does: every dim (``"all"``: ``sum``, ``mean``),
    none (``"none"``: ``any``, ``all``), or refused (``"refuse"``: ``argmax``). The
    adapter carries it as ``empty_dim``, for the Tensor methods made from the op.
    """

    def arguments(x: Any, dim: Any, keepdim: Any, axis: Any, keepdims: Any) -> dict[str, Any]:
        return {
            "axis": reduction_axis(name, x, dim, axis, empty_dim),
            "keepdims": bool(torch_axis(keepdim, keepdims, default=False)),
        }

    if with_dtype:

        def reduce_with_dtype(
            xp: Any, x: Any, dim: Any = None, keepdim: Any = None, *,
            axis: Any = None, keepdims: Any = None, dtype: Any = None,
        ) -> Any:  # fmt: skip
            if accumulates:  # in PyTorch's accumulation dtype (a mean of integers is a float)
                x, dtype = torch_accumulated(xp, x, dtype)
            return getattr(xp, name)(x, dtype=dtype, **arguments(x, dim, keepdim, axis, keepdims))

        reduce_with_dtype.empty_dim = empty_dim  # type: ignore[attr-defined]
        return one_array(reduce_with_dtype)

    def reduce(
        xp: Any, x: Any, dim: Any = None, keepdim: Any = None, *,
        axis: Any = None, keepdims: Any = None,
    ) -> Any:  # fmt: skip
        return getattr(xp, name)(x, **arguments(x, dim, keepdim, axis, keepdims))

    reduce.empty_dim = empty_dim  # type: ignore[attr-defined]
    return one_array(reduce)


def torch_join(name: str) -> Any:
    """PyTorch's ``torch.cat``/``torch.stack(tensors, dim=0)``: the axis may come by position."""

    def join(xp: Any, tensors: Any, dim: int = 0) -> Any:
        return getattr(xp, name)(tensors, axis=dim if type(dim) is int else dim_as_axis(dim))

    return one_array(join)


def torch_cumulative(name: str) -> Any:
    """PyTorch's ``torch.cumsum``/``torch.cumprod(x, dim, *, dtype=None)``."""

    def accumulate(xp: Any, x: Any, dim: int, *, dtype: Any = None) -> Any:
        x, dtype = torch_accumulated(xp, x, dtype)
        return getattr(xp, name)(x, axis=dim if type(dim) is int else dim_as_axis(dim), dtype=dtype)

    return one_array(accumulate)
