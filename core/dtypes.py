"""plugrad's data types, shared by every backend.

Each backend stores data in its own dtype objects; plugrad names them with
these backend-independent :class:`DType` objects, so ``x.dtype == plugrad.float32``
holds whichever library holds ``x``. The mapping to a backend's own dtype
objects is built once, when the backend is activated.
"""

from __future__ import annotations

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
float32 = DType("float32", "real floating", 4)
float64 = DType("float64", "real floating", 8)
complex64 = DType("complex64", "complex floating", 8)
complex128 = DType("complex128", "complex floating", 16)

all_dtypes: tuple[DType, ...] = (
    bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float16, float32, float64, complex64, complex128,
)  # fmt: skip

# PyTorch's defaults: Python floats become float32, Python ints int64.
default_float_dtype = float32
default_complex_dtype = complex64
default_int_dtype = int64

_DIFFERENTIABLE_KINDS = frozenset({"real floating", "complex floating"})


def is_differentiable(dtype: DType) -> _builtin_bool:
    """Return whether tensors of ``dtype`` may require grad (floating and complex only)."""
    return dtype.kind in _DIFFERENTIABLE_KINDS
