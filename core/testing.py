"""Testing tools for op authors: :func:`assert_close` and the op-test harness.

An op is tested by declaring cases, each some inputs and a reference
computation, in a subclass of :class:`OpTests`. pytest collects the subclass
and runs, for every case on every available backend:

- the forward result against the reference (values, shape and dtype), in
  float32 and float64, for ops with and without gradients;
- :func:`plugrad.autograd.gradcheck` (backward against finite differences),
  and that backward rules leave the gradient they are handed unchanged;
- :func:`plugrad.autograd.gradgradcheck` (double backward);
- float32 and float16 inputs getting gradients of their own dtype;
- under :func:`plugrad.compile`, eager's values and gradients, with the
  backward inside the compiled function and after it.

Everything here is written against plugrad's public API; pytest is needed only
to run :class:`OpTests` and is imported when the tests are collected.
"""

from __future__ import annotations

import importlib
import math
import numbers
import operator
import os
import warnings
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from . import dtypes as _dtypes
from . import registry
from .autograd import backward as autograd_backward
from .autograd import grad, gradcheck, gradgradcheck
from .checking import checks_enabled
from .creation import asarray, ones_like
from .devices import resolve
from .dtype_functions import finfo, iinfo
from .errors import (
    ArgumentError,
    BackendError,
    DeviceMismatchError,
    DtypeError,
    InvalidArgumentError,
)
from .grad_mode import no_grad
from .random import Generator, rand, randint, uniform_values
from .tensor import Tensor

__all__ = [
    "ON_REQUEST",
    "OpCase",
    "OpTests",
    "assert_close",
    "backends_left_out",
    "backends_under_test",
    "check_transfers",
    "default_tolerances",
    "make_tensor",
]

_SCALARS = (bool, int, float, complex)

# (rtol, atol) for values computed two ways in a dtype: a few units in the last
# place relative to the values, and an absolute floor for values near zero.
_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "float32": (1e-5, 1e-6),
    "float64": (1e-7, 1e-9),
    "complex64": (1e-5, 1e-6),
    "complex128": (1e-7, 1e-9),
}


def default_tolerances(*dtypes: _dtypes.DType) -> tuple[float, float]:
    """Return the ``(rtol, atol)`` :func:`assert_close` uses for values of ``dtypes``.

    Floating-point dtypes get tolerances a little above their precision (the
    loosest of those given); integers and booleans must match exactly.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.testing.default_tolerances(plugrad.float32)
    (1e-05, 1e-06)
    >>> plugrad.testing.default_tolerances(plugrad.int64)
    (0.0, 0.0)
    """
    chosen = [_TOLERANCES.get(d.name, (0.0, 0.0)) for d in dtypes]
    return max(r for r, _ in chosen), max(a for _, a in chosen)


def _as_tensor(value: Any, like: Tensor | None) -> Tensor:
    if isinstance(value, Tensor):
        return value.detach()
    if like is not None and type(value) in _SCALARS:
        return asarray(value, dtype=like.dtype, device=like.device)
    return asarray(value, device=None if like is None else like.device)


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        flat, rest = divmod(flat, size)
        index.append(rest)
    return tuple(reversed(index))


def assert_close(
    actual: Any,
    expected: Any,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_dtype: bool = True,
    msg: str | None = None,
) -> None:
    """Assert that ``actual`` and ``expected`` are equal within tolerances.

    Elements agree when ``|actual - expected| <= atol + rtol * |expected|``
    (or when they are equal, such as infinities of the same sign). Shapes must
    be the same, and dtypes too unless ``check_dtype=False``. Tuples and lists
    are compared element by element.

    Parameters
    ----------
    actual : Tensor, array, Python scalar, or tuple/list of them
        The values under test.
    expected : Tensor, array, Python scalar, or tuple/list of them
        The values they should have. Arrays of any backend plugrad can read
        are accepted; a Python scalar takes the dtype of ``actual``.
    rtol, atol : float, optional
        Relative and absolute tolerances. Both default to
        :func:`default_tolerances` of the dtypes compared; give both or neither.
    equal_nan : bool
        Whether NaN in both places counts as equal.
    check_dtype : bool
        Whether the dtypes must be the same.
    msg : str, optional
        Put at the start of the error message.

    Raises
    ------
    AssertionError
        Saying how many elements differ, the greatest absolute and relative
        differences and the index of each, and the tolerances used.
    TypeError
        If only one of ``rtol`` and ``atol`` is given.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0, 3.0])
    >>> plugrad.testing.assert_close(x * 3, plugrad.tensor([3.0, 6.0, 9.0]))
    >>> plugrad.testing.assert_close(x + 1e-3, x)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    AssertionError: 3 of 3 elements differ. Greatest absolute difference: 0.00100004... (0,) ...
    """
    if (rtol is None) != (atol is None):
        raise ArgumentError("assert_close: give both rtol and atol, or neither for the defaults")
    prefix = f"{msg}: " if msg else ""
    if isinstance(actual, (tuple, list)) or isinstance(expected, (tuple, list)):
        if not (isinstance(actual, (tuple, list)) and isinstance(expected, (tuple, list))):
            raise AssertionError(
                f"{prefix}one side is a sequence and the other is not: "
                f"{type(actual).__name__} and {type(expected).__name__}"
            )
        if len(actual) != len(expected):
            raise AssertionError(
                f"{prefix}sequences of different lengths: {len(actual)} and {len(expected)}"
            )
        for position, (a, e) in enumerate(zip(actual, expected)):
            assert_close(
                a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=check_dtype,
                msg=f"{prefix}item {position}",
            )  # fmt: skip
        return
    with no_grad():
        a = _as_tensor(actual, None)
        e = _as_tensor(expected, a)
        if e.device is not a.device:
            e = e.to(a.device)
        if a.shape != e.shape:
            raise AssertionError(f"{prefix}shapes differ: {a.shape} and {e.shape} expected")
        if check_dtype and type(expected) not in _SCALARS and a.dtype != e.dtype:
            raise AssertionError(
                f"{prefix}dtypes differ: {a.dtype} and {e.dtype} expected "
                "(pass check_dtype=False to compare values only)"
            )
        if rtol is None or atol is None:
            rtol, atol = default_tolerances(a.dtype, e.dtype)
        _check_values(a, e, rtol, atol, equal_nan, prefix)


def _check_values(
    a: Tensor, e: Tensor, rtol: float, atol: float, equal_nan: bool, prefix: str
) -> None:
    import plugrad as p  # the namespace of ops, filled once plugins are loaded

    floating = ("real floating", "complex floating")
    # The widest the device has: JAX without 64-bit types has neither int64 nor float64.
    widest_int = a.device.default_int_dtype
    widest_float = p.float64 if p.float64 in a.device.dtypes else p.float32
    if p.isdtype(a.dtype, "bool") or p.isdtype(e.dtype, "bool"):
        a, e = p.astype(a, widest_int), p.astype(e, widest_int)
    exact = not (p.isdtype(a.dtype, floating) or p.isdtype(e.dtype, floating))
    if exact:
        close = a == e  # integers compare exactly, before any conversion to float
    for_difference = widest_float if exact else p.result_type(a.dtype, e.dtype)
    a, e = p.astype(a, for_difference), p.astype(e, for_difference)
    # Differences of finite values only: inf - inf would be NaN (and a warning).
    finite = p.isfinite(a) & p.isfinite(e)
    a_finite, e_finite = p.where(finite, a, 0), p.where(finite, e, 0)
    difference = p.where(finite, p.abs(a_finite - e_finite), p.inf)
    if not exact:
        close = (difference <= atol + rtol * p.abs(e_finite)) | (a == e)
        if equal_nan:
            close = close | (p.isnan(a) & p.isnan(e))
    if bool(p.all(close)):
        return
    bad = p.logical_not(close)
    magnitude = p.abs(e_finite)
    relative = p.where(magnitude > 0, difference / p.where(magnitude > 0, magnitude, 1), p.inf)
    flat_diff = p.reshape(p.where(bad, difference, 0), (-1,))
    flat_rel = p.reshape(p.where(bad, relative, 0), (-1,))
    worst_abs, worst_rel = int(p.argmax(flat_diff)), int(p.argmax(flat_rel))
    shape = tuple(a.shape)
    count = int(p.sum(p.astype(bad, widest_int)))
    raise AssertionError(
        f"{prefix}{count} of {math.prod(shape)} elements differ. "
        f"Greatest absolute difference: {float(flat_diff[worst_abs]):.10g} at index "
        f"{_unravel(worst_abs, shape)} (atol={atol:g}); "
        f"greatest relative difference: {float(flat_rel[worst_rel]):.10g} at index "
        f"{_unravel(worst_rel, shape)} (rtol={rtol:g})"
    )


# -- tensors for tests ------------------------------------------------------------------


#: make_tensor's default ``[low, high)`` per kind of dtype (PyTorch's table).
_DEFAULT_RANGES = {
    "bool": (0, 2),
    "unsigned integer": (-9, 10),  # (clamped to the dtype's 0, as PyTorch's)
    "signed integer": (-9, 10),
    "real floating": (-9, 9),
    "complex floating": (-9, 9),
}


def _make_tensor_range(
    dtype: _dtypes.DType, low: Any, high: Any, floating: bool
) -> tuple[float, float]:
    """make_tensor's ``[low, high)``: the defaults filled in, checked, clamped to what
    ``dtype`` holds, and for integers and bools rounded up."""
    default_low, default_high = _DEFAULT_RANGES[dtype.kind]
    low = default_low if low is None else low
    high = default_high if high is None else high
    for name, value in (("low", low), ("high", high)):
        if not isinstance(value, numbers.Real):
            raise ArgumentError(
                f"make_tensor(): {name} must be a real number or None, got {value!r:.60}"
            )
    if low != low or high != high:  # NaN
        raise InvalidArgumentError(
            f"make_tensor(): low and high cannot be NaN, got [{low}, {high})"
        )
    lowest: float
    highest: float
    if not floating:
        if dtype.kind == "bool":
            lowest, highest = 0, 2
        else:
            info = iinfo(dtype)
            # (PyTorch's randint cannot draw int64's largest value: the bound stays it)
            lowest, highest = int(info.min), int(info.max) + (dtype is not _dtypes.int64)
    else:
        lowest, highest = finfo(dtype).min, finfo(dtype).max
    if low == high and floating:
        warnings.warn(
            "make_tensor(): low == high gives a tensor of one value, which PyTorch deprecates "
            f"(since 2.1); use plugrad.full(shape, {low}) instead",
            FutureWarning,
            stacklevel=3,
        )
    elif low >= high:
        raise InvalidArgumentError(
            f"make_tensor(): low must be less than high, got [{low}, {high})"
        )
    elif high < lowest or low >= highest:
        raise InvalidArgumentError(
            f"make_tensor(): the interval [{low}, {high}) holds no {dtype.name} value: "
            f"{dtype.name} holds [{lowest}, {highest})"
        )
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if not floating:  # both up: low is inclusive, high exclusive
        low, high = math.ceil(low), math.ceil(high)
        if low >= high:  # ([-5, 0) for uint8: PyTorch's randint refuses it)
            raise InvalidArgumentError(
                f"make_tensor(): the interval holds no {dtype.name} value once clamped to the "
                f"dtype's range and rounded: [{low}, {high})"
            )
    return low, high


def make_tensor(
    *shape: int | Sequence[int],
    dtype: _dtypes.DType,
    device: Any = None,
    low: float | None = None,
    high: float | None = None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """Return a tensor of ``shape`` and ``dtype`` drawn uniformly from ``[low, high)``.

    PyTorch's ``torch.testing.make_tensor``, for tests: the same defaults,
    checks and clamping, drawn from plugrad's generator of the device (seeded
    by :func:`plugrad.manual_seed`), so the values are not PyTorch's for the
    same seed.

    ===========================  ========  =========
    dtype                        ``low``   ``high``
    ===========================  ========  =========
    bool                         0         2
    unsigned integers            0         10
    signed integers              -9        10
    floating, complex (parts)    -9        9
    ===========================  ========  =========

    Parameters
    ----------
    *shape : int or sequence of int
        The sizes, or one sequence of them.
    dtype : DType
        A bool, integer, floating or complex dtype.
    device : optional
        As for :func:`plugrad.zeros` (the default device if None).
    low, high : float, optional
        The interval, clamped to the dtype's finite range; for integers and
        bools both are rounded up (``high`` stays exclusive).
    requires_grad : bool
        For floating and complex dtypes only.
    noncontiguous : bool
        Give a strided view (every second element of a last axis twice as long)
        where the tensor has two elements or more.
    exclude_zero : bool
        Replace each zero with 1 (bool, integers), the dtype's smallest positive
        normal number (``finfo(dtype).tiny``), or for complex dtypes
        ``tiny + tiny * 1j``, as PyTorch documents (its code gives ``tiny + 0j``).
    memory_format : optional
        As for :meth:`Tensor.clone`; not with ``noncontiguous``.

    Returns
    -------
    Tensor

    Raises
    ------
    InvalidArgumentError
        If ``low >= high`` (``low == high`` for floating dtypes gives that one
        value with PyTorch's ``FutureWarning``), either is NaN, the interval lies
        outside the dtype's range, ``requires_grad`` is asked of a bool or integer
        dtype, or ``noncontiguous`` comes with ``memory_format``.
    DtypeError
        If ``dtype`` is not a dtype of plugrad's.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> x = plugrad.testing.make_tensor(2, 3, dtype=plugrad.float32, low=-1, high=1)
    >>> x.shape, bool(((x >= -1) & (x < 1)).all())
    ((2, 3), True)
    >>> plugrad.testing.make_tensor((4,), dtype=plugrad.int64, low=5, high=6)
    tensor([5, 5, 5, 5])
    """
    dtype = _dtypes.of_python_type(dtype)
    if not isinstance(dtype, _dtypes.DType):
        raise DtypeError(
            f"make_tensor(): dtype must be a plugrad dtype (plugrad.float32, ...), got "
            f"{dtype!r:.60}"
        )
    given: Any = shape[0] if len(shape) == 1 and isinstance(shape[0], Sequence) else shape
    try:
        sizes = tuple(operator.index(size) for size in given)
    except TypeError:
        raise ArgumentError(
            f"make_tensor(): the shape must be ints, or one sequence of them; got {given!r:.60}"
        ) from None
    if noncontiguous and memory_format is not None:
        raise InvalidArgumentError(
            "make_tensor(): noncontiguous and memory_format exclude each other; give one"
        )
    floating = dtype.kind in ("real floating", "complex floating")
    if requires_grad and not floating:
        raise InvalidArgumentError(
            f"make_tensor(): requires_grad=True needs a floating or complex dtype, got {dtype.name}"
        )
    low, high = _make_tensor_range(dtype, low, high, floating)
    target = resolve(device)
    noncontiguous = noncontiguous and math.prod(sizes) > 1
    if noncontiguous:  # twice the last axis, every second element taken: distinct values
        sizes = (*sizes[:-1], 2 * sizes[-1])
    if not floating:
        result = randint(int(low), int(high), sizes, dtype=dtype, device=target)
    elif high - low >= finfo(dtype).max:  # (the width overflows: drawn halved, as PyTorch's)
        result = uniform_values(sizes, low / 2, high / 2, dtype, target, None) * 2
    else:
        result = uniform_values(sizes, low, high, dtype, target, None)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        tiny = finfo(dtype).tiny if floating else 1
        result[result == 0] = complex(tiny, tiny) if dtype.kind == "complex floating" else tiny
    if floating:
        result.requires_grad_(requires_grad)
    return result


# -- the op-test harness ----------------------------------------------------------------


def _pytest() -> Any:
    try:
        return importlib.import_module("pytest")
    except ImportError:
        raise ImportError(
            "plugrad.testing.OpTests runs under pytest, which is not installed: "
            "pip install pytest (assert_close works without it)"
        ) from None


#: Backends whose op tests take minutes each (eager JAX and lazy Dask above all): they run
#: when they are the default backend (``PLUGRAD_BACKEND``) or named in ``PLUGRAD_TEST_BACKENDS``.
ON_REQUEST = ("torch", "jax", "dask")


#: Graph-break reasons of a kernel that reads its inputs' values (see plugrad.compile's docs).
_VALUE_READS = ("reads the values of a traced array", "a Python value computed from traced arrays")


def _compiled_or_fallback(
    function: Callable[..., Any], inputs: Sequence[Tensor], trial: Sequence[Tensor]
) -> Any:
    """``function`` compiled with ``fullgraph=True``, or, if a kernel reads values, without.

    A generic kernel that reads its inputs' values (the bounds of an index
    array, repeated positions) cannot be captured: such a call runs eagerly
    (one :class:`~plugrad.errors.CompileWarning`), and the caller still checks
    that the compiled function gives eager's results. ``trial`` are inputs the
    first attempt may change.
    """
    import warnings

    import plugrad

    from .errors import CompileWarning, GraphBreakError

    try:
        plugrad.compile(function, fullgraph=True)(*trial)
    except GraphBreakError as error:
        # Any other break (a hook, a call the tracer does not know) is a fault of the plan.
        if not any(reason in str(error) for reason in _VALUE_READS):
            raise
        compiled = plugrad.compile(function)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled(*inputs)
        assert any(issubclass(w.category, CompileWarning) for w in caught), "no warning"
        for tensor in inputs:
            tensor.grad = None
        return compiled
    return plugrad.compile(function, fullgraph=True)


def backends_under_test() -> tuple[str, ...]:
    """Names of the backends the op tests run on.

    Every backend that can run here, except those of :data:`ON_REQUEST`, which
    run when they are the default backend (``PLUGRAD_BACKEND``) or are named in
    the comma-separated ``PLUGRAD_TEST_BACKENDS`` (``all`` names every one).
    A backend runs on its first device; a device named there (``torch:cuda:0``)
    runs too.

    Examples
    --------
    >>> import plugrad
    >>> "numpy" in plugrad.testing.backends_under_test()
    True
    """
    requested = os.environ.get("PLUGRAD_TEST_BACKENDS", "")
    chosen = {name.strip() for name in requested.split(",") if name.strip()}
    chosen.add(os.environ.get("PLUGRAD_BACKEND", "numpy"))
    names = []
    for name in registry.backend_names():
        if name in ON_REQUEST and name not in chosen and "all" not in chosen:
            continue
        try:
            registry.resolve_device(name)
        except BackendError:
            continue
        names.append(name)
    for spec in sorted(chosen):
        if ":" in spec and spec.partition(":")[0] in registry.backend_names():
            try:
                registry.resolve_device(spec)
            except BackendError:
                continue
            names.append(spec)
    return tuple(names)


def check_transfers(device: str) -> None:
    """Check that tensors move between NumPy and ``device`` with their gradients.

    For backend authors: a leaf on NumPy moved to ``device`` gets its gradient
    back on NumPy, and an op mixing tensors of the two is refused with a
    :class:`~plugrad.errors.DeviceMismatchError` that shows ``.to(...)``.

    Raises
    ------
    AssertionError
        If a gradient is wrong or lands elsewhere, or mixing is not refused.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.testing.check_transfers("array_api_strict")
    """
    x = asarray([1.0, 2.0], device="numpy", requires_grad=True)
    (x.to(device) ** 2).sum().backward()
    assert x.grad is not None and x.grad.device.name == "numpy", f"gradient on {x.grad!r}"
    assert x.grad.tolist() == [2.0, 4.0], f"gradient {x.grad.tolist()}, expected [2.0, 4.0]"
    try:
        ones_like(x) * ones_like(x.detach().to(device))
    except DeviceMismatchError as error:
        assert ".to(" in str(error), f"the error does not show .to(...): {error}"
    else:
        raise AssertionError(f"an op mixed tensors on numpy and {device!r} without an error")


def backends_left_out() -> tuple[str, ...]:
    """Backends that could run here but that :func:`backends_under_test` leaves out."""
    tested = backends_under_test()
    left: list[str] = []
    for name in registry.backend_names():
        if name in tested:
            continue
        try:
            registry.resolve_device(name)
        except BackendError:
            continue
        left.append(name)
    return tuple(left)


@dataclass(frozen=True)
class OpCase:
    """One case of an op test: a program, its inputs, and the values it should give.

    Parameters
    ----------
    op : str
        The registered op the case tests; whether it is differentiable decides
        which checks run.
    id : str, optional
        The case's name in test ids (default: ``op``); also seeds its random inputs.
    program : callable, optional
        Takes Tensors, returns a Tensor (or a tuple of them). Default: the
        op's function, ``plugrad.ops.<op>``.
    reference : callable
        Takes NumPy arrays (the inputs, as ``Tensor.numpy()`` gives them) and
        returns the expected result: an array or a tuple of them.
    shapes : sequence of tuple of int
        Shapes of random inputs, drawn uniformly from ``domains``.
    domains : sequence of (low, high)
        One per input, or one for all (default ``(-2, 2)``).
    inputs : sequence or callable, optional
        Instead of ``shapes``: fixed inputs (arrays or nested lists), or a
        function ``inputs(seed)`` returning them. For differentiable ops they
        are cast to each dtype under test; for others they are used as given.
    rtol32 : float
        Relative tolerance of the float32 forward check (``atol`` is a tenth of it).
    rtol, atol : float
        Tolerances of the gradient checks, in float64 (ten times as much for
        double backward).
    no_double : str
        Why double backward is not checked for this case; empty: it is checked.
    differentiable : bool, optional
        Whether the program has gradients (default: whether the op has). A
        case of a differentiable op whose result has none, such as a cast to
        an integer dtype, says ``False``.

    Examples
    --------
    >>> import numpy as np
    >>> from plugrad.testing import OpCase
    >>> case = OpCase("exp", reference=np.exp, shapes=[(2, 3)])
    >>> [a.shape for a in case.host_inputs()]
    [(2, 3)]
    """

    op: str
    id: str = ""
    program: Callable[..., Any] | None = None
    reference: Callable[..., Any] | None = None
    shapes: Sequence[tuple[int, ...]] = ()
    domains: Sequence[tuple[float, float]] = ((-2.0, 2.0),)
    inputs: Sequence[Any] | Callable[[int], Sequence[Any]] | None = None
    rtol32: float = 1e-5
    rtol: float = 1e-5
    atol: float = 1e-6
    no_double: str = ""
    differentiable: bool | None = None

    def __post_init__(self) -> None:
        if self.reference is None:
            raise ArgumentError(f"OpCase {self.op!r}: give a reference=... to compare the op with")
        if not self.id:
            object.__setattr__(self, "id", self.op)
        if len(self.domains) not in (1, len(self.shapes)):
            raise InvalidArgumentError(
                f"OpCase {self.id!r}: {len(self.domains)} domains for {len(self.shapes)} "
                "shapes; give one domain per shape, or one for all"
            )

    @property
    def function(self) -> Callable[..., Any]:
        """The program under test: ``program``, or the op's public function."""
        if self.program is not None:
            return self.program
        return getattr(importlib.import_module("plugrad.ops"), self.op)

    @property
    def seed(self) -> int:
        """The seed of the case's random inputs, fixed by its id."""
        return zlib.crc32(self.id.encode())

    def host_inputs(self, dtype: _dtypes.DType | None = _dtypes.float64) -> list[Any]:
        """The inputs as NumPy arrays, in ``dtype`` (``None``: as given or drawn).

        Random inputs are drawn on the numpy backend from a generator seeded
        by the case id, so every backend and every run sees the same values.
        """
        host = registry.resolve_device("numpy")
        if self.inputs is not None:
            given = self.inputs(self.seed) if callable(self.inputs) else self.inputs
            # Copies: a check that writes into its inputs must not reach the case's arrays.
            return [
                asarray(a, dtype=_kept_complex(a, dtype), device=host, copy=True).numpy()
                for a in given
            ]
        generator = Generator(seed=self.seed, device=host)
        domains = list(self.domains) * len(self.shapes) if len(self.domains) == 1 else self.domains
        arrays = []
        for shape, (low, high) in zip(self.shapes, domains):
            draw = rand(*shape, dtype=_dtypes.float64, generator=generator)
            arrays.append(asarray(low + (high - low) * draw, dtype=dtype).numpy())
        return arrays


def _kept_complex(given: Any, dtype: _dtypes.DType | None) -> _dtypes.DType | None:
    """``dtype``, or the complex dtype of its precision for complex ``given`` inputs: the
    checks of a complex op run on complex numbers (their real parts hid a missing conj)."""
    host = registry.resolve_device("numpy")
    if dtype is None or asarray(given, device=host).dtype.kind != "complex floating":
        return dtype
    return _dtypes.complex64 if dtype in (_dtypes.float16, _dtypes.float32) else _dtypes.complex128


def _is_differentiable(case: OpCase) -> bool:
    if case.differentiable is not None:
        return case.differentiable
    op = registry.find_op(case.op)
    if op is None:
        raise LookupError(
            f"OpCase {case.id!r} tests the op {case.op!r}, which is not registered; "
            "register its plugin first (plugrad.plugins.register) or fix the name"
        )
    return bool(op.differentiable)


def _flatten(result: Any) -> list[Any]:
    if isinstance(result, (tuple, list)):
        return [leaf for item in result for leaf in _flatten(item)]
    return [result]


def _leaves(arrays: Sequence[Any], dtype: _dtypes.DType | None = None) -> list[Tensor]:
    return [asarray(a, dtype=dtype, requires_grad=True) for a in arrays]


#: The checks of ops with gradients, and of ops without.
_DIFFERENTIABLE_TESTS = (
    "test_forward_matches_reference",
    "test_backward_matches_finite_differences",
    "test_double_backward_matches_finite_differences",
    "test_float32_gradients_stay_float32",
    "test_float16_gradients_stay_float16",
    "test_compiled_matches_eager",
    "test_compiled_result_differentiates_as_eager",
    "test_gradients_match_numpy",
)
_NO_GRAD_TESTS = ("test_ops_without_gradient", "test_compiled_without_gradient_matches_eager")
#: The checks of every case.
_EVERY_CASE_TESTS = ("test_result_is_not_a_view_of_its_inputs",)


class OpTests:
    """Subclass in a test module, list the cases, and pytest runs every check on them.

    Each test method is parametrized over the cases it applies to and over
    :func:`backends_under_test` (the float16 check runs on the default device).
    Ops with gradients get the forward, gradient, double-backward and dtype
    checks, and on every backend but numpy their first- and second-order
    gradients against numpy's (:meth:`test_gradients_match_numpy`); ops
    without get :meth:`test_ops_without_gradient`. Subclasses may
    add tests of their own beside them.

    Examples
    --------
    In a test module (the reference receives NumPy arrays)::

        from plugrad.testing import OpCase, OpTests

        class TestAbs(OpTests):
            cases = [OpCase("abs", reference=lambda x: abs(x), shapes=[(3, 4)])]
    """

    #: The cases under test.
    cases: ClassVar[Sequence[OpCase]] = ()
    #: The dtypes of the forward checks of differentiable ops.
    forward_dtypes: ClassVar[tuple[_dtypes.DType, ...]] = (_dtypes.float32, _dtypes.float64)
    #: Ops whose results may be views of their inputs without being declared ``view=True``
    #: (``getitem``: basic indexing gives a view, advanced indexing a copy).
    views: ClassVar[frozenset[str]] = frozenset()
    #: The checks this class turned off because none of its cases needs them.
    _turned_off: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "cases" in cls.__dict__:  # read once: a generator would be spent by the next line
            cls.cases = tuple(cls.cases)
        kinds = {_is_differentiable(case) for case in cls.cases}
        # Checks without cases are not collected, rather than reported as skipped. Each
        # class decides from its own cases: one whose base has none (a base of shared
        # settings) gets back the checks the base turned off.
        turned_off = set()
        for name in (*_DIFFERENTIABLE_TESTS, *_NO_GRAD_TESTS):
            if (name in _NO_GRAD_TESTS) in {not kind for kind in kinds}:
                setattr(cls, name, _inherited_check(cls, name))
            else:
                setattr(cls, name, None)
                turned_off.add(name)
        cls._turned_off = frozenset(turned_off)

    def program_variants(self, case: OpCase) -> dict[str, Callable[..., Any]]:
        """The ways the case's program is run, by name; each must pass every check.

        The extension point for transformations of programs: a subclass, or a
        later ``plugrad.compile``, adds a compiled or otherwise transformed
        version beside ``"eager"``, and the forward and gradient checks then
        hold it to the same reference.
        """
        return {"eager": case.function}

    def pytest_generate_tests(self, metafunc: Any) -> None:
        """Parametrize the harness's tests over cases, dtypes and backends."""
        name = metafunc.function.__name__
        if not self.cases:
            # A test class without cases would pass without checking anything.
            raise ArgumentError(
                f"{type(self).__name__} has no cases: set cases = [OpCase(...), ...] (a "
                "class of shared settings for other test classes must not be named Test*)"
            )
        if name in _EVERY_CASE_TESTS:
            cases = list(self.cases)
        elif name in (*_DIFFERENTIABLE_TESTS, *_NO_GRAD_TESTS):
            wanted = name in _DIFFERENTIABLE_TESTS
            cases = [c for c in self.cases if _is_differentiable(c) == wanted]
        else:
            return
        metafunc.parametrize("case", cases, ids=[c.id for c in cases])
        if "dtype" in metafunc.fixturenames:
            names = [d.name for d in self.forward_dtypes]
            metafunc.parametrize("dtype", self.forward_dtypes, ids=names)
        if "backend" in metafunc.fixturenames:
            backends = backends_under_test()
            if name == "test_gradients_match_numpy":  # numpy is the reference there
                backends = tuple(b for b in backends if b != "numpy")
            metafunc.parametrize("backend", backends)

    def test_forward_matches_reference(
        self, case: OpCase, dtype: _dtypes.DType, backend: str
    ) -> None:
        """Values, shape and dtype against the reference, on ``backend``."""
        import plugrad

        arrays = case.host_inputs(dtype)
        expected = case.reference(*arrays)  # type: ignore[misc]
        rtol, atol = (case.rtol32, case.rtol32 / 10) if dtype == plugrad.float32 else (1e-10, 1e-12)
        for variant, program in self.program_variants(case).items():
            with plugrad.use_backend(backend) as device:  # constants in programs follow it too
                inputs = [asarray(a) for a in arrays]
                before = [t._host().copy() for t in inputs]
                result = program(*inputs)
            for position, (t, kept) in enumerate(zip(inputs, before)):
                assert _equal_hosts(t._host(), kept), (
                    f"{case.id} ({variant}) on {backend}: input {position} changed: the kernel "
                    "wrote into its input (compute into a new array)"
                )
            for position, out in enumerate(_flatten(result)):
                assert out.device is device, f"{variant}: output {position} left {device}"
            assert_close(result, expected, rtol=rtol, atol=atol, msg=f"{case.id} ({variant})")

    def test_backward_matches_finite_differences(self, case: OpCase, backend: str) -> None:
        """:func:`plugrad.autograd.gradcheck` in float64; a gradient reaches every input."""
        import plugrad

        for variant, program in self.program_variants(case).items():
            with plugrad.use_backend(backend):
                leaves = _leaves(case.host_inputs())
                _backward(program(*leaves), _weights, f"{case.id} ({variant}) on {backend}")
                for index, leaf in enumerate(leaves):
                    assert leaf.grad is not None, f"{variant}: no gradient reached input {index}"
                    assert leaf.grad.dtype == leaf.dtype, f"{variant}: input {index}"
                leaves = _leaves(case.host_inputs())
                gradcheck(program, leaves, atol=case.atol, rtol=case.rtol)

    def test_double_backward_matches_finite_differences(self, case: OpCase, backend: str) -> None:
        """:func:`plugrad.autograd.gradgradcheck` in float64."""
        import plugrad

        if case.no_double:
            _pytest().skip(f"{case.op}: {case.no_double}")
        for variant, program in self.program_variants(case).items():
            with plugrad.use_backend(backend):
                # First order first: a rule writing into its gradient says so here too,
                # rather than as the in-place error on gradgradcheck's gradient leaves.
                leaves = _leaves(case.host_inputs())
                _backward(program(*leaves), _weights, f"{case.id} ({variant}) on {backend}")
                leaves = _leaves(case.host_inputs())
                gradgradcheck(program, leaves, atol=case.atol * 10, rtol=case.rtol * 10, eps=1e-5)

    def test_gradients_match_numpy(self, case: OpCase, backend: str) -> None:
        """First- and second-order gradients on ``backend`` equal those on numpy, in float64.

        The same fixed weighted sums of the outputs are differentiated on both
        backends: once, and again through the first gradients (``create_graph``;
        not when the case says ``no_double``). The finite-difference checks
        establish numpy's gradients; this check carries them to backends where
        finite differences, one forward pass per input element, take minutes
        per case (eager JAX, Dask's task graphs). It runs on every backend under
        test but numpy.
        """
        second = not case.no_double
        expected = _weighted_gradients(case, "numpy", second)
        got = _weighted_gradients(case, backend, second)
        for (what, g, scale), (_, e, _) in zip(got, expected, strict=True):
            what = f"{case.id} on {backend}: {what}"
            if e is None or g is None:
                assert g is None and e is None, f"{what}: present on one backend only"
                continue
            assert_close(g, e, rtol=case.rtol * scale, atol=case.atol * scale, msg=what)

    def test_float32_gradients_stay_float32(self, case: OpCase, backend: str) -> None:
        """float32 inputs get float32 gradients that agree with the float64 ones."""
        import plugrad

        program = case.function
        with plugrad.use_backend(backend):
            leaves = _leaves(case.host_inputs(plugrad.float32))
            _backward(program(*leaves), ones_like, f"{case.id} on {backend}, float32")
            reference = _leaves(case.host_inputs())
            _backward(program(*reference), ones_like, f"{case.id} on {backend}")
        for index, (leaf, ref) in enumerate(zip(leaves, reference)):
            assert leaf.grad is not None and ref.grad is not None, f"no gradient of input {index}"
            assert leaf.grad.dtype == leaf.dtype, f"input {index}: {leaf.grad.dtype}"
            scale = (
                max(1.0, float(plugrad.max(plugrad.abs(ref.grad))))
                if math.prod(ref.grad.shape)
                else 1.0
            )
            assert_close(
                leaf.grad, ref.grad, rtol=case.rtol32 * 100, atol=1e-4 * scale,
                check_dtype=False, msg=f"float32 gradient of input {index}",
            )  # fmt: skip

    def test_float16_gradients_stay_float16(self, case: OpCase) -> None:
        """float16 inputs get float16 gradients, where the default backend has float16."""
        import plugrad

        device = plugrad.default_device()
        if plugrad.float16 not in device.dtypes:
            _pytest().skip(f"{device.backend.name} has no float16")
        if any(a.dtype.kind == "c" for a in case.host_inputs()):
            _pytest().skip(f"{case.id}: complex inputs have no 16-bit dtype")
        leaves = _leaves(case.host_inputs(), plugrad.float16)
        try:
            out = case.function(*leaves)
        except plugrad.errors.DtypeError as exc:  # the backend's kernel refused float16
            # (only plugrad's typed refusal: a kernel's own TypeError is a bug, and fails)
            _pytest().skip(f"{case.op}: the backend has no float16 version ({exc})")
        _backward(out, ones_like, f"{case.id}, float16")
        for index, leaf in enumerate(leaves):
            assert leaf.grad is not None, f"no gradient reached input {index}"
            assert leaf.grad.dtype == plugrad.float16, f"input {index}: {leaf.grad.dtype}"

    def test_compiled_matches_eager(self, case: OpCase, backend: str) -> None:
        """Under :func:`plugrad.compile`, capture and replay give eager's values and gradients.

        On each backend under test, in float64; the same kernels run in the
        same order, so they agree bit for bit.
        """
        if checks_enabled():
            _pytest().skip("plugrad.compile runs calls eagerly in checking mode")
        import plugrad

        with plugrad.use_backend(backend):
            self._check_compiled(case)

    def _check_compiled(self, case: OpCase, backward_outside: bool = False) -> None:
        """Capture and replay against eager: the backward inside the compiled function, or
        (``backward_outside``) run on its result after the call."""
        import plugrad

        program = case.function

        def differentiate(out: Any) -> tuple[Tensor, ...]:
            parts = _flatten(out)
            for part in parts:
                if part.requires_grad:
                    part.backward(plugrad.ones_like(part), retain_graph=True)
            return tuple(part.detach() for part in parts)

        def step(*inputs: Tensor) -> Any:
            for leaf in inputs:
                leaf.grad = None
            return differentiate(program(*inputs))

        arrays = case.host_inputs()
        eager_leaves, leaves = _leaves(arrays), _leaves(arrays)
        expected = step(*eager_leaves)
        compiled = _compiled_or_fallback(
            program if backward_outside else step, leaves, _leaves(arrays)
        )
        for attempt in ("capture", "replay"):
            if backward_outside:
                for leaf in leaves:
                    leaf.grad = None
                got = differentiate(compiled(*leaves))
            else:
                got = compiled(*leaves)
            for index, (g, e) in enumerate(zip(got, expected, strict=True)):
                _same_array(g, e, f"{case.id}, {attempt}, output {index}")
            for index, (leaf, reference) in enumerate(zip(leaves, eager_leaves)):
                if reference.grad is None:
                    assert leaf.grad is None, f"{case.id}, {attempt}: input {index} got a .grad"
                else:
                    assert leaf.grad is not None, (
                        f"{case.id}, {attempt}: input {index} got no .grad"
                    )
                    _same_array(leaf.grad, reference.grad, f"{case.id}, {attempt}, grad {index}")
        assert compiled.captures == 1, f"{case.id}: captured again on an unchanged call"

    def test_compiled_result_differentiates_as_eager(self, case: OpCase, backend: str) -> None:
        """A compiled op's result differentiated after the call gives eager's gradients.

        The plan carries the backward of its result (``plugrad.compile(model)``
        and ``loss.backward()`` outside it); each output is differentiated on
        its own, with ``retain_graph=True``, bit for bit as eagerly.
        """
        if checks_enabled():
            _pytest().skip("plugrad.compile runs calls eagerly in checking mode")
        import plugrad

        with plugrad.use_backend(backend):
            if plugrad.default_device().backend.lazy:
                _pytest().skip("on a lazy backend a compiled result does not carry its backward")
            self._check_compiled(case, backward_outside=True)

    def test_compiled_without_gradient_matches_eager(self, case: OpCase, backend: str) -> None:
        """Under :func:`plugrad.compile`, an op without gradient gives eager's values."""
        if checks_enabled():
            _pytest().skip("plugrad.compile runs calls eagerly in checking mode")
        import plugrad

        program = case.function
        with plugrad.use_backend(backend):
            tensors = [asarray(a) for a in case.host_inputs(None)]
            expected = _flatten(program(*tensors))
            compiled = _compiled_or_fallback(program, tensors, tensors)
            for attempt in ("capture", "replay"):
                got = _flatten(compiled(*tensors))
                assert len(got) == len(expected), f"{case.id}, {attempt}: number of outputs"
                for index, (g, e) in enumerate(zip(got, expected)):
                    _same_array(g, e, f"{case.id}, {attempt}, output {index}")

    def test_ops_without_gradient(self, case: OpCase, backend: str) -> None:
        """Exact values against the reference; results never require grad."""
        import plugrad

        arrays = case.host_inputs(None)
        expected = case.reference(*arrays)  # type: ignore[misc]
        with plugrad.use_backend(backend):
            tensors = [asarray(a) for a in arrays]
            for t in tensors:
                if plugrad.isdtype(t.dtype, ("real floating", "complex floating")):
                    t.requires_grad_()
            result = case.function(*tensors)
        results, expecteds = _flatten(result), _flatten(expected)
        assert len(results) == len(expecteds), f"{len(results)} results, {len(expecteds)} expected"
        for position, r in enumerate(results):
            assert isinstance(r, Tensor), f"result {position} is a {type(r).__name__}"
            assert not r.requires_grad and r.grad_fn is None, f"result {position} requires grad"
        assert_close(results, expecteds, rtol=0.0, atol=0.0, equal_nan=True, msg=case.id)

    def test_result_is_not_a_view_of_its_inputs(self, case: OpCase, backend: str) -> None:
        """A change made in place to an input after the call leaves the results as they were.

        Unless the op is declared a view (``view=True``), its results are new
        memory on every backend, as PyTorch's are: a kernel that hands back its
        input, or a view of it (NumPy's ``flip``, a reshape of a transposed array, a
        padding of zero), would let a later ``x.add_(1)`` change them silently.
        """
        import plugrad

        op = registry.find_op(case.op)
        if (op is not None and op.view) or case.op in self.views:
            _pytest().skip(f"{case.op} is declared a view of its input")
        differentiable = _is_differentiable(case)
        with plugrad.use_backend(backend):
            tensors = [
                asarray(a) for a in case.host_inputs(_dtypes.float64 if differentiable else None)
            ]
            results = [r for r in _flatten(case.function(*tensors)) if isinstance(r, Tensor)]
            before = [r._host().copy() for r in results]
            with no_grad():
                for t in tensors:
                    t.copy_(~t if t.dtype == _dtypes.bool else t + 1)
            for position, (result, kept) in enumerate(zip(results, before)):
                assert _equal_hosts(result._host(), kept), (
                    f"{case.id} on {backend}: result {position} changed with its input; "
                    "the kernel returned its input or a view of it (copy it)"
                )


def _inherited_check(cls: type, name: str) -> Any:
    """The check ``name`` as the nearest base defines it, passing over the bases that turned
    it off for want of cases (and ``cls`` itself, whose own definition stays)."""
    for klass in cls.__mro__:
        if name in klass.__dict__ and name not in klass.__dict__.get("_turned_off", ()):
            return klass.__dict__[name]
    raise AttributeError(name)  # not reached: OpTests defines every check


def _same_array(got: Tensor, expected: Tensor, what: str) -> None:
    """Bit-identical values (NaNs equal), shape and dtype."""
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != {expected.dtype}"
    assert _equal_hosts(got.detach()._host(), expected.detach()._host()), (
        f"{what}: the compiled values differ from the eager ones"
    )


def _equal_hosts(a: Any, b: Any) -> bool:
    """Whether two host arrays hold the same values, NaNs equal."""
    return bool(((a == b) | ((a != a) & (b != b))).all())


def _fixed_weights(like: Tensor, seed: int) -> Tensor:
    """Weights in [0.5, 1.5) (complex where ``like`` is), drawn on numpy: alike on every backend."""
    host = registry.resolve_device("numpy")
    generator = Generator(seed=seed, device=host)
    weights = 0.5 + rand(*like.shape, dtype=_dtypes.float64, generator=generator)
    if like.dtype.kind == "complex floating":
        weights = weights + 1j * rand(*like.shape, dtype=_dtypes.float64, generator=generator)
    return asarray(weights.numpy(), dtype=like.dtype, device=like.device)


def _weighted_gradients(
    case: OpCase, backend: str, second: bool
) -> list[tuple[str, Tensor | None, float]]:
    """Gradients of fixed weighted sums of the case's outputs on ``backend``, on the host.

    Each entry: what it is, the gradient (``None`` where an input gets none),
    and the factor on the case's tolerances (10 for second order, as in
    :func:`gradgradcheck`).
    """
    import plugrad

    with plugrad.use_backend(backend):
        leaves = _leaves(case.host_inputs())
        outs = [o for o in _flatten(case.function(*leaves)) if o.requires_grad]
        weights = [_fixed_weights(o, seed=7 + k) for k, o in enumerate(outs)]
        before = [w._host().copy() for w in weights]
        firsts = grad(outs, leaves, weights, create_graph=second, allow_unused=True)
        _check_unwritten(weights, before, f"{case.id} on {backend}")
        found: list[tuple[str, Tensor | None, float]] = [
            (f"gradient of input {i}", g, 1.0) for i, g in enumerate(firsts)
        ]
        if second:
            terms = [
                _real((g * _fixed_weights(g, seed=11 + i)).sum())
                for i, g in enumerate(firsts)
                if g is not None and g.requires_grad
            ]
            seconds: Sequence[Tensor | None] = [None] * len(leaves)
            if terms:
                seconds = grad(sum(terms[1:], terms[0]), leaves, allow_unused=True)
            found += [
                (f"second-order gradient of input {i}", g, 10.0) for i, g in enumerate(seconds)
            ]
    host = registry.resolve_device("numpy")
    return [
        (what, None if g is None else asarray(g.detach().numpy(), device=host), scale)
        for what, g, scale in found
    ]


def _real(value: Tensor) -> Tensor:
    """A real number made of a complex sum (its real part), for a second derivative."""
    return value.real if value.dtype.kind == "complex floating" else value


def _backward(result: Any, weights: Callable[[Tensor], Tensor], what: str) -> None:
    """Backward from every output of ``result`` that requires grad (an op may have several),
    each weighted by ``weights(output)``; the weights must come out unchanged."""
    outputs = [out for out in _flatten(result) if isinstance(out, Tensor) and out.requires_grad]
    gradients = [weights(out) for out in outputs]
    before = [g._host().copy() for g in gradients]
    autograd_backward(outputs, gradients)
    _check_unwritten(gradients, before, what)


def _check_unwritten(gradients: Sequence[Tensor], before: Sequence[Any], what: str) -> None:
    """Fail if backward changed the output gradients it was given (``before``: their values).

    Rules receive them as ``g``: a rule writing into ``g`` in place changes the
    caller's tensor, or, where ``g`` is shared, another input's gradient. Where it
    is read-only (a sum's gradient), the write fails in real use.
    """
    for position, (g, kept) in enumerate(zip(gradients, before)):
        assert _equal_hosts(g.detach()._host(), kept), (
            f"{what}: the gradient of output {position} changed during backward: a backward "
            "rule wrote into it. A backward rule must not write into its gradient argument g; "
            "compute a new array instead (return g * 2, not g *= 2; return g)"
        )


def _weights(out: Tensor) -> Tensor:
    # Fixed, distinct weights: every output element contributes differently.
    generator = Generator(seed=7, device=out.device)
    return 0.5 + rand(*out.shape, dtype=_dtypes.float64, generator=generator)
