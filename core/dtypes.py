"""plugrad's data types, shared by every backend.

Each backend stores data in its own dtype objects; plugrad names them with
these backend-independent :class:`DType` objects, so ``x.dtype == plugrad.float32``
holds whichever library holds ``x``. The mapping to a backend's own dtype
objects is built once, when the backend is activated.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from typing import Any

from .errors import ArgumentError

__all__ = [
    "DType",
    "all_dtypes",
    "bool",
    "complex64",
    "complex128",
    "default_complex_dtype",
    "default_float_dtype",
    "default_int_dtype",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_differentiable",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]

_builtin_bool = bool


class DType:
    """A data type, named the same on every backend.

    Attributes
    ----------
    name : str
        The standard name, e.g. ``"float32"``; it is also the attribute name of
        the dtype in every Array API namespace.
    kind : str
        One of the Array API kinds: ``"bool"``, ``"signed integer"``,
        ``"unsigned integer"``, ``"real floating"``, ``"complex floating"``.
    itemsize : int
        Bytes per element.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.float32
    plugrad.float32
    >>> plugrad.float32.kind
    'real floating'
    """

    __slots__ = ("itemsize", "kind", "name")

    def __init__(self, name: str, kind: str, itemsize: int) -> None:
        self.name = name
        self.kind = kind
        self.itemsize = itemsize

    def __repr__(self) -> str:
        return f"plugrad.{self.name}"

    @property
    def is_floating_point(self) -> _builtin_bool:
        """Whether the dtype is real floating-point (PyTorch's ``dtype.is_floating_point``)."""
        return self.kind == "real floating"

    @property
    def is_complex(self) -> _builtin_bool:
        """Whether the dtype is complex (PyTorch's ``dtype.is_complex``)."""
        return self.kind == "complex floating"

    @property
    def is_signed(self) -> _builtin_bool:
        """Whether the dtype holds negative numbers (PyTorch's ``dtype.is_signed``)."""
        return self.kind in ("signed integer", "real floating", "complex floating")

    def to_complex(self) -> DType:
        """The complex dtype of this precision (PyTorch's ``dtype.to_complex()``)."""
        return self._counterpart(
            "complex floating", {"float32": "complex64", "float64": "complex128"}
        )

    def to_real(self) -> DType:
        """The real dtype of this precision (PyTorch's ``dtype.to_real()``)."""
        return self._counterpart("real floating", {"complex64": "float32", "complex128": "float64"})

    def _counterpart(self, kind: str, names: dict[str, str]) -> DType:
        if self.kind == kind:
            return self
        if self.name not in names:
            wanted = kind.split()[0]
            raise ArgumentError(
                f"{self.name} has no {wanted} counterpart (only {', '.join(names)})"
            )
        result: DType = globals()[names[self.name]]
        return result

    def __reduce__(self) -> str:
        # DTypes are singletons: copying or unpickling must give the same object.
        return self.name


bool = DType("bool", "bool", 1)
int8 = DType("int8", "signed integer", 1)
int16 = DType("int16", "signed integer", 2)
int32 = DType("int32", "signed integer", 4)
int64 = DType("int64", "signed integer", 8)
uint8 = DType("uint8", "unsigned integer", 1)
uint16 = DType("uint16", "unsigned integer", 2)
uint32 = DType("uint32", "unsigned integer", 4)
uint64 = DType("uint64", "unsigned integer", 8)
float16 = DType("float16", "real floating", 2)
#: Not in the Array API standard: the PyTorch and JAX backends store it (float32's range,
#: 8 bits of precision).
bfloat16 = DType("bfloat16", "real floating", 2)
float32 = DType("float32", "real floating", 4)
float64 = DType("float64", "real floating", 8)
complex64 = DType("complex64", "complex floating", 8)
complex128 = DType("complex128", "complex floating", 16)

all_dtypes: tuple[DType, ...] = (
    bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float16, bfloat16, float32, float64, complex64, complex128,
)  # fmt: skip

#: The 16-bit floats, which PyTorch accumulates (norms, fused kernels) in float32.
half_floats: tuple[DType, ...] = (float16, bfloat16)

# PyTorch's defaults: Python floats become float32, Python ints int64.
default_float_dtype = float32
default_complex_dtype = complex64
#: Called after the default dtypes change (compiled plans made before are stale).
_default_listeners: list[Callable[[], None]] = []


def on_default_change(listener: Callable[[], None]) -> None:
    """Call ``listener()`` whenever ``set_default_dtype`` changes the default dtypes."""
    _default_listeners.append(listener)


def set_defaults(float_dtype: DType, complex_dtype: DType) -> None:
    """Make these the default dtypes (what ``set_default_dtype`` does after its checks)."""
    global default_float_dtype, default_complex_dtype
    default_float_dtype, default_complex_dtype = float_dtype, complex_dtype
    for listener in _default_listeners:
        listener()


default_int_dtype = int64

_DIFFERENTIABLE_KINDS = frozenset({"real floating", "complex floating"})


def is_differentiable(dtype: DType) -> _builtin_bool:
    """Return whether tensors of ``dtype`` may require grad (floating and complex only)."""
    return dtype.kind in _DIFFERENTIABLE_KINDS


#: PyTorch's order of kinds for mixed-kind promotion: bool < integer < real < complex.
_KIND_RANKS = {
    "bool": 0,
    "signed integer": 1,
    "unsigned integer": 1,
    "real floating": 2,
    "complex floating": 3,
}
#: The kind rank of each Python scalar type (``bool`` is checked before ``int``).
SCALAR_RANKS: dict[type, int] = {_builtin_bool: 0, int: 1, float: 2, complex: 3}
_COMPLEX_OF_REAL = {float64: complex128}


def kind_rank(dtype: DType) -> int:
    """The rank of ``dtype``'s kind: 0 bool, 1 integer, 2 real floating, 3 complex floating."""
    return _KIND_RANKS[dtype.kind]


def mixed_kind_result(first: DType, second: DType) -> DType | None:
    """The dtype two tensors of different kinds compute in, as in PyTorch; ``None`` otherwise.

    The Array API standard promotes only within a kind (and real with complex
    floating); across kinds, the operand of the higher kind decides: ``int64``
    with ``float32`` gives ``float32``, ``bool`` with ``int8`` gives ``int8``.
    Integers with a complex dtype give that complex dtype.
    """
    rank1, rank2 = _KIND_RANKS[first.kind], _KIND_RANKS[second.kind]
    if rank1 == rank2 or min(rank1, rank2) >= 2:  # one kind, or real and complex: the standard's
        return None
    return first if rank1 > rank2 else second


_FLOATING_BY_SIZE = {
    ("real floating", 2): float16,
    ("real floating", 4): float32,
    ("real floating", 8): float64,
    ("complex floating", 4): complex64,  # float16 with a complex dtype: complex64, as PyTorch
    ("complex floating", 8): complex64,
    ("complex floating", 16): complex128,
}


def floating_result(first: DType, second: DType) -> DType:
    if first is second:
        return first
    if bfloat16 in (first, second):
        # bfloat16 with float16: float32 (neither holds the other), as PyTorch and JAX
        other = second if first is bfloat16 else first
        if other.itemsize <= 2:
            return float32
        first, second = float32, other
    return _floating_result(first, second)


def _floating_result(first: DType, second: DType) -> DType:
    """The promotion of two floating dtypes (real or complex), which every library shares.

    The wider precision wins; complex if either is. It needs no backend, so it
    holds for dtypes a backend lacks (``float16`` on array-api-strict).
    """
    part = max(
        first.itemsize // 2 if first.kind == "complex floating" else first.itemsize,
        second.itemsize // 2 if second.kind == "complex floating" else second.itemsize,
    )
    if "complex floating" in (first.kind, second.kind):
        return _FLOATING_BY_SIZE["complex floating", 2 * part]
    return _FLOATING_BY_SIZE["real floating", part]


#: Python's types as dtypes, as PyTorch takes them: ``dtype=float`` is ``float64``.
_OF_PYTHON_TYPE = {_builtin_bool: bool, int: int64, float: float64, complex: complex128}


def of_python_type(value: Any) -> Any:
    """``value``, or the dtype a Python type (``bool``, ``int``, ...) stands for."""
    return _OF_PYTHON_TYPE.get(value, value) if isinstance(value, type) else value


def common_dtype(dtypes: Sequence[DType], standard: Callable[[DType, DType], DType]) -> DType:
    """The dtype tensors of ``dtypes`` combine into: across kinds PyTorch's rule
    (:func:`mixed_kind_result`), within a kind (or real with complex floating) the
    standard's, which ``standard(first, second)`` gives (a backend's promotion)."""
    result = dtypes[0]
    for dtype in dtypes[1:]:
        mixed = mixed_kind_result(result, dtype)
        if mixed is not None:
            result = mixed
        elif dtype is not result:
            result = standard(result, dtype)
    return result


def scalar_result(dtype: DType, scalar: object) -> DType:
    """The dtype a tensor of ``dtype`` computes in with a Python scalar of a higher kind.

    As in PyTorch: an integer or bool tensor with a float gives the default
    float dtype; a bool tensor with an int the default integer dtype; a real
    tensor with a complex number the complex dtype of its precision (the default
    complex dtype for integers and bools).
    """
    kind = type(scalar)
    if kind is float:
        return default_float_dtype
    if kind is int:
        return default_int_dtype
    if dtype.kind == "real floating":
        return _COMPLEX_OF_REAL.get(dtype, complex64)
    return default_complex_dtype


def rounded_to_float32(value: float) -> float:
    """``value`` as a float32 holds it (an infinity beyond its range), as a Python float:
    what PyTorch's 0-d float32 state tensors (a loss scale, an optimizer's step size) hold."""
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


#: The largest finite value of each real floating dtype (bfloat16 has float32's exponent
#: and 8 bits of precision).
_LARGEST_FLOAT = {
    float16: 65504.0,
    bfloat16: 3.3895313892515355e38,
    float32: 3.4028234663852886e38,
    float64: 1.7976931348623157e308,
}


def holds_number(dtype: DType, value: _builtin_bool | int | float) -> _builtin_bool:
    """Whether a Python number written into an array of ``dtype`` keeps its value up to
    rounding (floats) or truncation toward zero (integers): no overflow, no wraparound,
    no NaN or infinity into an integer. Any number is held by bool."""
    kind = dtype.kind
    if kind == "real floating":
        return not math.isfinite(value) or abs(value) <= _LARGEST_FLOAT[dtype]
    if kind == "complex floating":
        return not math.isfinite(value) or abs(value) <= _LARGEST_FLOAT[dtype.to_real()]
    if kind == "signed integer":
        bound = 1 << (8 * dtype.itemsize - 1)
        return math.isfinite(value) and -bound <= value < bound
    if kind == "unsigned integer":
        return math.isfinite(value) and 0 <= value < 1 << (8 * dtype.itemsize)
    return True
