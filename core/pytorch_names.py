"""PyTorch's names for what plugrad offers under the Array API's names.

Small functions PyTorch code calls every day:
:func:`from_numpy`, :func:`as_tensor`, :func:`is_tensor`, :func:`numel`,
:func:`clone`, :func:`is_floating_point`, :func:`is_complex`, :func:`is_nonzero`,
:func:`diagonal`, :func:`masked_fill`, :func:`scatter`, :func:`take_along_dim`,
:func:`isclose`, :func:`allclose` (also Tensor methods), :func:`einsum`,
:func:`get_default_dtype` and :func:`set_default_dtype`. (PyTorch's short dtype
names, ``plugrad.float`` for ``plugrad.float32`` and so on, are set in the package itself.)
"""

from __future__ import annotations

import itertools
import math
import operator
import warnings
from typing import TYPE_CHECKING, Any

from . import autocast_mode as _autocast
from . import creation as _creation
from . import dtypes as _dtypes
from . import ops as _ops
from . import registry
from .backend import Device
from .creation import CreationOptions, asarray, full, python_buffer_as_list
from .dispatch import alpha_times
from .dtype_functions import result_type
from .errors import (
    ArgumentError,
    DtypeError,
    IndexOutOfRangeError,
    InvalidArgumentError,
    ShapeError,
)
from .grad_mode import is_grad_enabled
from .inplace import apply_inplace, takes_out
from .memory_formats import memory_format
from .opdef import as_int
from .plugins import _rules
from .tensor import Tensor, install_methods

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "MISSING_DTYPES",
    "allclose",
    "as_tensor",
    "bincount",
    "block_diag",
    "bucketize",
    "cartesian_prod",
    "chain_matmul",
    "clone",
    "combinations",
    "cond",
    "cumulative_trapezoid",
    "detach",
    "diag_embed",
    "diagflat",
    "diagonal",
    "digamma",
    "einsum",
    "erf",
    "erfc",
    "erfinv",
    "from_numpy",
    "get_default_dtype",
    "gradient",
    "is_complex",
    "is_floating_point",
    "is_inference_mode_enabled",
    "is_nonzero",
    "is_tensor",
    "isclose",
    "lgamma",
    "masked_fill",
    "mvlgamma",
    "numel",
    "polygamma",
    "promote_types",
    "rsub",
    "scalar_tensor",
    "scatter",
    "set_default_dtype",
    "take_along_dim",
    "trapezoid",
    "trapz",
    "typename",
    "unravel_index",
    "vander",
]

#: Dtypes PyTorch has and no plugrad backend stores, with what to use instead.
MISSING_DTYPES: dict[str, str] = {
    "float8_e4m3fn": "no plugrad backend stores 8-bit floats; use plugrad.float16",
    "float8_e5m2": "no plugrad backend stores 8-bit floats; use plugrad.float16",
}


def from_numpy(array: Any) -> Tensor:
    """Return a CPU tensor sharing the memory of the NumPy array ``array`` (no copy).

    As in PyTorch, a change made through either one shows in the other. The
    tensor's version counter cannot see writes made through NumPy, so a
    backward pass that saved the tensor cannot detect them: do not modify the
    array while a graph that used the tensor may still be backpropagated.

    Examples
    --------
    >>> import numpy as np
    >>> import plugrad
    >>> a = np.array([1.0, 2.0])
    >>> t = plugrad.from_numpy(a)
    >>> a[0] = 5.0
    >>> t
    tensor([5., 2.], dtype=plugrad.float64)
    """
    host = registry.resolve_device("numpy")
    # (a NumPy scalar, which has no ctypes, is among the array types, but has no memory to share)
    if not isinstance(array, host.backend.array_types()) or not hasattr(array, "ctypes"):
        raise ArgumentError(
            f"from_numpy() takes a numpy.ndarray, got {type(array).__name__}; use "
            "plugrad.as_tensor(data) or plugrad.tensor(data) for other data"
        )
    flags = getattr(array, "flags", None)
    if flags is not None and not flags.writeable:
        warnings.warn(
            "from_numpy(): the NumPy array is not writeable; the tensor shares its memory for "
            "reading, and a change made in place gives the tensor an array of its own, which "
            "the NumPy array does not see (PyTorch would write into it). Copy it "
            "(plugrad.tensor(a)) or make it writeable first",
            UserWarning,
            stacklevel=2,
        )
    return asarray(array, device=host, copy=False)


def as_tensor(
    data: Any,
    dtype: _dtypes.DType | None = None,
    device: Device | str | None = None,
) -> Tensor:
    """Convert ``data`` to a tensor, sharing memory where possible (PyTorch's ``as_tensor``).

    Same as :func:`plugrad.asarray` with PyTorch's positional ``dtype`` and ``device``;
    Python's own buffers (``bytearray``, ``array.array``) are read as the numbers they
    hold, as in PyTorch (ints as int64), not in their narrow type.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.as_tensor([1, 2], plugrad.float64)
    tensor([1., 2.], dtype=plugrad.float64)
    """
    return asarray(python_buffer_as_list(data), dtype=dtype, device=device)


def is_tensor(obj: Any) -> bool:
    """Return whether ``obj`` is a :class:`~plugrad.Tensor` (Parameters included).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.is_tensor(plugrad.ones(2)), plugrad.is_tensor([1.0])
    (True, False)
    """
    return isinstance(obj, Tensor)


def numel(x: Tensor) -> int:
    """Return the number of elements of ``x``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.numel(plugrad.zeros(2, 3))
    6
    """
    if not isinstance(x, Tensor):
        raise ArgumentError(f"numel() takes a Tensor, got {type(x).__name__}")
    return x.numel()


def _tensor(function: str, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise ArgumentError(f"{function}() takes a Tensor, got {type(value).__name__}")
    return value


def clone(input: Tensor, *, memory_format: memory_format | None = None) -> Tensor:
    """Return a copy of ``input`` that gradients flow through (``input.clone()``)."""
    return _tensor("clone", input).clone(memory_format=memory_format)


def scalar_tensor(s: Any, **options: Unpack[CreationOptions]) -> Tensor:
    """PyTorch's ``scalar_tensor(s)``: a 0-d tensor of ``s``, of the default float dtype
    unless ``dtype=`` says otherwise (``scalar_tensor(1)`` is ``tensor(1.)``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.scalar_tensor(1), plugrad.scalar_tensor(2, dtype=plugrad.int64)
    (tensor(1.), tensor(2))
    """
    if options.get("dtype") is None:
        options["dtype"] = _dtypes.default_float_dtype
    return full((), s, **options)


def promote_types(type1: _dtypes.DType, type2: _dtypes.DType) -> _dtypes.DType:
    """Return the dtype of an element-wise operation of tensors of dtypes ``type1`` and ``type2``.

    PyTorch's ``torch.promote_types``: :func:`plugrad.result_type` of two dtypes.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.promote_types(plugrad.int32, plugrad.float32)
    plugrad.float32
    >>> plugrad.promote_types(plugrad.uint8, plugrad.int8)
    plugrad.int16
    """
    for name, value in (("type1", type1), ("type2", type2)):
        if not isinstance(value, _dtypes.DType):
            raise ArgumentError(
                f"promote_types(): {name} must be a plugrad dtype, got {value!r}; for tensors "
                "use plugrad.result_type"
            )
    return result_type(type1, type2)


def is_floating_point(input: Tensor) -> bool:
    """Return whether ``input``'s dtype is a real floating one (``input.is_floating_point()``)."""
    return _tensor("is_floating_point", input).is_floating_point()


def is_complex(input: Tensor) -> bool:
    """Return whether ``input``'s dtype is a complex one (``input.is_complex()``)."""
    return _tensor("is_complex", input).is_complex()


def is_nonzero(input: Tensor) -> bool:
    """Return whether the one element of a one-element tensor is not zero."""
    return _tensor("is_nonzero", input).is_nonzero()


def detach(input: Tensor) -> Tensor:
    """``input.detach()``: the same values, sharing memory, outside the graph.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.detach(plugrad.ones(2, requires_grad=True) * 2).requires_grad
    False
    """
    return _tensor("detach", input).detach()


def rsub(input: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """``other - alpha * input``: :func:`plugrad.subtract` with its operands reversed.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.rsub(plugrad.tensor([1.0, 2.0]), 5, alpha=2)
    tensor([3., 1.])
    """
    x = _tensor("rsub", input)
    if isinstance(other, Tensor):
        return _ops.subtract(other, x) if alpha == 1 else other.sub(x, alpha=alpha)
    # A number adapts to x's dtype, as in ``other - x`` (int8 stays int8, not int64).
    return other - (x if alpha == 1 else alpha_times("rsub", other, x, alpha))


def typename(obj: Any) -> str:
    """The name of ``obj``'s type: a tensor's legacy type name, as ``x.type()`` gives it
    (``"plugrad.FloatTensor"``, PyTorch's ``"torch.FloatTensor"``), else the qualified
    name of its class.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.typename(plugrad.ones(2)), plugrad.typename(3)
    ('plugrad.FloatTensor', 'int')
    """
    if isinstance(obj, Tensor):
        return str(obj.type())
    kind = type(obj)
    module = kind.__module__
    return kind.__qualname__ if module in (None, "builtins") else f"{module}.{kind.__qualname__}"


def is_inference_mode_enabled() -> bool:
    """Whether code runs inside :class:`plugrad.inference_mode` (which plugrad takes as
    ``no_grad``: this is whether gradients are off).

    Examples
    --------
    >>> import plugrad
    >>> with plugrad.inference_mode():
    ...     plugrad.is_inference_mode_enabled()
    True
    """
    return not is_grad_enabled()


def cond(pred: Any, true_fn: Any, false_fn: Any, operands: Any = ()) -> Any:
    """PyTorch's ``cond``: ``true_fn(*operands)`` if ``pred`` holds, else ``false_fn(*operands)``.

    ``pred`` is a bool or a tensor of one element. Both branches are functions;
    only the chosen one runs, eagerly, so gradients flow through it as through
    any code. (Under :func:`plugrad.compile` a tensor ``pred`` is read, which
    ends the capture there; see :doc:`compile`.)

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, -2.0])
    >>> plugrad.cond(x.sum() > 0, lambda v: v.sin(), lambda v: v.cos(), (x,))
    tensor([ 0.5403, -0.4161])
    """
    if not (callable(true_fn) and callable(false_fn)):
        raise ArgumentError("cond() takes two functions, true_fn and false_fn")
    if not isinstance(operands, (tuple, list)):
        raise ArgumentError(
            f"cond(): operands must be a tuple or list, got {type(operands).__name__}"
        )
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise ShapeError(f"cond(): pred must hold one element, got shape {tuple(pred.shape)}")
        pred = bool(pred.detach())
    elif not isinstance(pred, (bool, int)):
        raise ArgumentError(f"cond(): pred must be a bool or a tensor, got {type(pred).__name__}")
    return true_fn(*operands) if pred else false_fn(*operands)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """Return the diagonal ``offset`` of the matrices spanned by axes ``dim1`` and ``dim2``.

    PyTorch's ``torch.diagonal`` (its default axes are the first two);
    :func:`plugrad.linalg.diagonal` is the standard's (the last two).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.diagonal(plugrad.arange(9.0).reshape(3, 3), 1)
    tensor([1., 5.])
    """
    return _tensor("diagonal", input).diagonal(offset, dim1, dim2)


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """Return ``input`` with ``value`` where ``mask`` is true (``input.masked_fill(...)``)."""
    return _tensor("masked_fill", input).masked_fill(mask, value)


def scatter(
    input: Tensor,
    dim: int,
    index: Tensor,
    src: Any = None,
    *,
    value: Any = None,
    reduce: str | None = None,
) -> Tensor:
    """Return ``input`` with ``src`` (or ``value``) written at ``index`` along ``dim``.

    The function form of :meth:`Tensor.scatter`.
    """
    return _tensor("scatter", input).scatter(dim, index, src, value=value, reduce=reduce)


@takes_out
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """Return the elements of ``input`` at ``indices`` along ``dim`` (of both flattened if None).

    ``input`` and ``indices`` broadcast against each other, but along ``dim``.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([[10.0, 30.0, 20.0], [60.0, 40.0, 50.0]])
    >>> plugrad.take_along_dim(x, x.argmax(dim=1, keepdim=True), dim=1)
    tensor([[30.],
            [60.]])
    >>> plugrad.take_along_dim(x, plugrad.tensor([5, 0]))
    tensor([50., 10.])
    """
    _tensor("take_along_dim", input)
    _tensor("take_along_dim", indices)
    if dim is None:
        flat = _ops.reshape(indices, (-1,))
        what = "take_along_dim(): a negative index with dim=None"
        if flat.shape[0] and _rules.any_true(_ops.any(flat < 0), what, IndexOutOfRangeError):
            # PyTorch's: an index into the flattened input counts from its start only.
            raise IndexOutOfRangeError(
                f"take_along_dim(): index {int(_ops.min(flat))} is out of bounds for the "
                f"flattened input of size {input.size}; with dim=None indices count from 0 "
                "(negative ones count from the end only along a given dim)"
            )
        return _ops.take_along_axis(_ops.reshape(input, (-1,)), flat, axis=0)
    return _ops.take_along_axis(input, indices, axis=_rules.one_int_axis("take_along_dim", dim))


@takes_out
def erf(input: Tensor) -> Tensor:
    """The error function element-wise (``plugrad.ops.erf``; also ``x.erf()``)."""
    return _ops.erf(_tensor("erf", input))


@takes_out
def erfc(input: Tensor) -> Tensor:
    """The complementary error function ``1 - erf(x)``, accurate in both tails."""
    return _ops.erfc(_tensor("erfc", input))


@takes_out
def lgamma(input: Tensor) -> Tensor:
    """``log|gamma(x)|`` element-wise (``plugrad.ops.lgamma``; also ``x.lgamma()``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.lgamma(plugrad.tensor([1.0, 4.0, 0.5]))
    tensor([0.0000, 1.7918, 0.5724])
    """
    return _ops.lgamma(_tensor("lgamma", input))


@takes_out
def digamma(input: Tensor) -> Tensor:
    """The digamma function, the derivative of ``lgamma``, element-wise (``x.digamma()``)."""
    return _ops.digamma(_tensor("digamma", input))


@takes_out
def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of ``digamma`` element-wise (PyTorch's argument order).

    NOTE: from ``n = 2`` on, arguments below -20 lose most digits to cancellation
    in the reflection formula, as PyTorch's do.
    """
    return _ops.polygamma(_tensor("polygamma", input), n=n)


@_autocast.listed("erfinv")
@takes_out
def erfinv(input: Tensor) -> Tensor:
    """The inverse error function element-wise, on ``(-1, 1)`` (``x.erfinv()``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.erfinv(plugrad.tensor([0.0, 0.5, -1.0]))
    tensor([ 0.0000,  0.4769,    -inf])
    """
    return _ops.erfinv(_tensor("erfinv", input))


@takes_out
def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The log of the multivariate gamma function of dimension ``p``, element-wise.

    ``p (p - 1) / 4 log(pi) + sum over i < p of lgamma(x - i / 2)``; every
    element must exceed ``(p - 1) / 2``, where the function is defined
    (:class:`~plugrad.errors.InvalidArgumentError` otherwise; PyTorch 2.13 no
    longer checks, and gives numbers of no meaning there).
    """
    _tensor("mvlgamma", input)
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise ArgumentError(f"mvlgamma(): p must be a positive int, got {p!r}")
    below = _ops.any(input <= (p - 1) / 2)
    if _rules.any_true(below, "mvlgamma(): an element <= (p - 1) / 2", InvalidArgumentError):
        raise InvalidArgumentError(
            f"mvlgamma(): every element must be greater than (p - 1) / 2 = {(p - 1) / 2}, "
            "where the multivariate gamma function is defined; use a smaller p or larger inputs"
        )
    total = _ops.lgamma(input)
    for i in range(1, p):
        total = total + _ops.lgamma(input - i / 2)
    return total + p * (p - 1) / 4 * math.log(math.pi)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """Return the square matrix with the flattened ``input`` on diagonal ``offset``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.diagflat(plugrad.tensor([[1, 2]]), 1)
    tensor([[0, 1, 0],
            [0, 0, 2],
            [0, 0, 0]])
    """
    return _ops.diag(_ops.reshape(_tensor("diagflat", input), (-1,)), offset)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Return matrices with the last axis of ``input`` on diagonal ``offset``.

    The result has one axis more than ``input``; its matrices span axes
    ``dim1`` (rows) and ``dim2`` (columns), counted in the result.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.diag_embed(plugrad.tensor([[1.0, 2.0], [3.0, 4.0]]))
    tensor([[[1., 0.],
             [0., 2.]],
    <BLANKLINE>
            [[3., 0.],
             [0., 4.]]])
    """
    _tensor("diag_embed", input)
    if input.ndim == 0:
        raise ShapeError(
            "diag_embed() puts the last axis of its input on diagonals; got a 0-d tensor"
        )
    ndim = input.ndim + 1
    first, second = (_checked_dim("diag_embed", d, ndim) for d in (dim1, dim2))
    offset = as_int(offset)  # (a NumPy integer, a 0-d integer tensor)
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise ArgumentError(f"diag_embed(): offset must be an int, got {offset!r}")
    if first == second:
        raise ShapeError(f"diag_embed() needs two different axes, got dim1={dim1} and dim2={dim2}")
    *batch, n = input.shape
    size = n + abs(offset)
    # The values with `size` zeros after each, read as rows of `size`, have them on the
    # main diagonal; zero rows and columns around move it to `offset`.
    zeros = _creation.zeros((*batch, n, size), dtype=input.dtype, device=input.device)
    padded = _ops.concat([_ops.reshape(input, (*batch, n, 1)), zeros], axis=-1)
    square = _ops.reshape(
        _ops.reshape(padded, (*batch, n * (size + 1)))[..., : n * size], (*batch, n, size)
    )[..., :n]
    above, left = max(-offset, 0), max(offset, 0)
    square = _padded(square, -2, above, size - n - above)
    square = _padded(square, -1, left, size - n - left)
    return _ops.moveaxis(square, (-2, -1), (first, second))


def _checked_dim(function: str, dim: int, ndim: int) -> int:
    if type(dim) is not int:  # (a NumPy integer, a 0-d integer tensor: as an int)
        dim = _rules.one_int_axis(function, dim)
    if not -ndim <= dim < ndim:
        raise ShapeError(f"{function}(): dim {dim!r} is out of range for {ndim} dimensions")
    return dim % ndim


def _padded(x: Tensor, axis: int, before: int, after: int) -> Tensor:
    """``x`` with ``before`` and ``after`` zeros along ``axis``."""
    parts = []
    for count in (before, after):
        shape = list(x.shape)
        shape[axis] = count
        parts.append(_creation.zeros(tuple(shape), dtype=x.dtype, device=x.device))
    return _ops.concat([parts[0], x, parts[1]], axis=axis) if before or after else x


def block_diag(*tensors: Tensor) -> Tensor:
    """Return the block-diagonal matrix of ``tensors`` (0-d, 1-d as one row, or 2-d).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.block_diag(plugrad.ones(2, 2), plugrad.tensor(5.0))
    tensor([[1., 1., 0.],
            [1., 1., 0.],
            [0., 0., 5.]])
    """
    blocks = []
    for index, block in enumerate(tensors):
        _tensor("block_diag", block)
        if block.ndim > 2:
            raise ShapeError(
                f"block_diag() takes tensors of at most 2 dimensions; tensor {index} has shape "
                f"{block.shape}"
            )
        blocks.append(_ops.reshape(block, (1, -1)) if block.ndim < 2 else block)
    if not blocks:
        return _creation.zeros((1, 0))
    dtype = result_type(*blocks)
    width = sum(block.shape[1] for block in blocks)
    rows, before = [], 0
    for block in blocks:
        block = _ops.astype(block, dtype) if block.dtype != dtype else block
        rows.append(_padded(block, 1, before, width - before - block.shape[1]))
        before += block.shape[1]
    return _ops.concat(rows, axis=0)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Return every combination of one element of each 1-d tensor, one per row.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.cartesian_prod(plugrad.tensor([1, 2]), plugrad.tensor([3, 4]))
    tensor([[1, 3],
            [1, 4],
            [2, 3],
            [2, 4]])
    """
    for tensor in tensors:
        if _tensor("cartesian_prod", tensor).ndim != 1:
            raise ShapeError(f"cartesian_prod() takes 1-d tensors, got shape {tensor.shape}")
    if not tensors:
        raise ArgumentError("cartesian_prod() takes at least one tensor")
    if len({t.dtype for t in tensors}) > 1:
        raise DtypeError(
            "cartesian_prod() takes tensors of one dtype; convert them with .to(dtype)"
        )
    if len(tensors) == 1:
        return tensors[0]
    grids = _ops.meshgrid(*tensors, indexing="ij")
    return _ops.stack([_ops.reshape(grid, (-1,)) for grid in grids], axis=1)


def unravel_index(indices: Tensor, shape: int | tuple[int, ...]) -> tuple[Tensor, ...]:
    """The coordinates, one tensor per dimension of ``shape``, of the flat ``indices`` into
    an array of that shape (C order), as ``int64`` tensors of ``indices``' shape.

    As PyTorch's, an index outside ``[-n, n)`` (``n`` the number of elements) wraps
    around (it is not checked: that would read the values), and a negative one counts
    from the end.

    Examples
    --------
    >>> import plugrad
    >>> rows, columns = plugrad.unravel_index(plugrad.tensor([4, 1, 11]), (3, 4))
    >>> rows.tolist(), columns.tolist()
    ([1, 0, 2], [0, 1, 3])
    """
    _tensor("unravel_index", indices)
    if indices.dtype.kind not in ("signed integer", "unsigned integer"):
        raise DtypeError(
            f"unravel_index() takes integer indices, got {indices.dtype.name}; convert "
            "them with .long()"
        )
    given = (shape,) if hasattr(shape, "__index__") else tuple(shape)
    if any(isinstance(size, bool) or not hasattr(size, "__index__") for size in given):
        raise ArgumentError(f"unravel_index(): shape must hold ints, got {shape!r}")
    sizes = [operator.index(size) for size in given]
    for size in sizes:
        if size <= 0:
            raise ShapeError(
                f"unravel_index(): shape must hold positive sizes (no index lies in an "
                f"empty array), got {shape!r}"
            )
    flat = _ops.astype(indices, indices.device.default_int_dtype)
    coordinates = []
    for size in reversed(sizes):  # Python's // and %: -1 is the last element
        coordinates.append(_ops.remainder(flat, size))
        flat = _ops.floor_divide(flat, size)
    return tuple(reversed(coordinates))


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Return the ``r``-element combinations of a 1-d tensor's elements, one per row, as
    ``itertools.combinations`` orders them (``combinations_with_replacement`` with
    ``with_replacement``); differentiable, as indexing is.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.combinations(plugrad.tensor([1, 2, 3]))
    tensor([[1, 2],
            [1, 3],
            [2, 3]])
    """
    if _tensor("combinations", input).ndim != 1:
        raise ShapeError(f"combinations() takes a 1-d tensor, got shape {input.shape}")
    r = as_int(r)
    if isinstance(r, bool) or not isinstance(r, int) or r < 0:
        raise ArgumentError(f"combinations() takes an int r >= 0, got {r!r}")
    if r == 0:  # PyTorch's: an empty 1-d tensor
        return _creation.zeros((0,), dtype=input.dtype, device=input.device)
    choose = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    picks = [i for combination in choose(range(input.shape[0]), r) for i in combination]
    index = asarray(picks, dtype=input.device.default_int_dtype, device=input.device)
    return _ops.reshape(_ops.take(input, index, axis=0), (len(picks) // r, r))


@_autocast.listed("chain_matmul")
@takes_out
def chain_matmul(*matrices: Tensor) -> Tensor:
    """Return the product of the matrices in order: PyTorch's deprecated name for
    :func:`plugrad.linalg.multi_dot` (which takes them as one list), without its warning.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.chain_matmul(plugrad.ones(2, 3), plugrad.ones(3, 4)).shape
    (2, 4)
    """
    if not matrices:
        raise ArgumentError("chain_matmul() takes at least one matrix")
    for matrix in matrices:
        if _tensor("chain_matmul", matrix).ndim != 2:
            raise ShapeError(f"chain_matmul() takes 2-d tensors, got shape {matrix.shape}")
    product = matrices[0]
    for matrix in matrices[1:]:  # left to right, as multi_dot multiplies
        product = _ops.matmul(product, matrix)
    return clone(product) if len(matrices) == 1 else product  # a new tensor, as PyTorch's


def gradient(
    input: Tensor, *, spacing: Any = 1, dim: int | list[int] | tuple[int, ...] | None = None,
    edge_order: int = 1,
) -> tuple[Tensor, ...]:  # fmt: skip
    """Estimate the derivative of ``input`` along each of ``dim`` (every dim by default) by
    differences, as PyTorch's ``gradient`` (and NumPy's): central ones inside, one-sided ones
    of ``edge_order`` 1 or 2 at the ends; differentiable.

    ``spacing`` is the distance between samples (a number for every dim, or one per dim;
    None is 1), or per dim the 1-d tensor of the coordinates of the samples, which may be
    uneven.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.gradient(plugrad.tensor([1.0, 4.0, 9.0, 16.0]))
    (tensor([3., 4., 6., 7.]),)
    """
    _tensor("gradient", input)
    if edge_order not in (1, 2) or isinstance(edge_order, bool):
        raise ArgumentError(f"gradient() takes edge_order 1 or 2, got {edge_order!r}")
    if input.ndim == 0:
        raise ShapeError("gradient() takes a tensor of at least 1 dimension, got a 0-d one")
    if dim is None:
        dims = list(range(input.ndim))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [_checked_dim("gradient", d, input.ndim) for d in dims]
        if len(set(dims)) != len(dims):
            raise ArgumentError(f"gradient() got dim {dim!r} naming a dim twice")
    if spacing is None:  # PyTorch's overloads take None for the default, samples 1 apart
        spacing = 1
    elif isinstance(spacing, Tensor) and spacing.ndim == 0:  # a number, as PyTorch reads it
        spacing = spacing.item()
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise ArgumentError(
                f"gradient() got {len(spacing)} spacings for {len(dims)} dims; give one per dim "
                "(or one number for all)"
            )
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    x = input
    if x.dtype.kind in ("signed integer", "unsigned integer", "bool"):
        x = _ops.astype(x, _dtypes.default_float_dtype)
    return tuple(_gradient_along(x, axis, h, edge_order) for axis, h in zip(dims, spacings))


def _gradient_along(f: Tensor, axis: int, h: Any, edge_order: int) -> Tensor:
    n = f.shape[axis]
    if n < edge_order + 1:
        raise ShapeError(
            f"gradient(): dim {axis} has {n} samples; edge_order={edge_order} needs at least "
            f"{edge_order + 1}"
        )

    def part(start: int | None, stop: int | None) -> Tensor:
        return f[(slice(None),) * axis + (slice(start, stop),)]

    def along(values: Tensor) -> Tensor:  # a 1-d tensor of one value per sample, on axis
        return _ops.reshape(values, (-1,) + (1,) * (f.ndim - 1 - axis))

    if isinstance(h, Tensor):
        if h.ndim != 1 or h.shape[0] != n:
            raise ShapeError(
                f"gradient(): the coordinates along dim {axis} must be a 1-d tensor of {n} "
                f"values, got shape {h.shape}"
            )
        steps = along(h[1:] - h[:-1])
        left, right = steps[:-1], steps[1:]  # h_l, h_r of each inside sample
        inside = (
            left * left * part(2, None) - right * right * part(None, -2)
            + (right * right - left * left) * part(1, -1)
        ) / (left * right * (left + right))  # fmt: skip
        if edge_order == 1:
            first = (part(1, 2) - part(0, 1)) / steps[:1]
            last = (part(-1, None) - part(-2, -1)) / steps[-1:]
        else:
            h1, h2 = steps[:1], steps[1:2]
            first = (
                -(2 * h1 + h2) / (h1 * (h1 + h2)) * part(0, 1) + (h1 + h2) / (h1 * h2) * part(1, 2)
                - h1 / (h2 * (h1 + h2)) * part(2, 3)
            )  # fmt: skip
            h1, h2 = steps[-1:], steps[-2:-1]
            last = (
                h1 / (h2 * (h1 + h2)) * part(-3, -2) - (h1 + h2) / (h1 * h2) * part(-2, -1)
                + (2 * h1 + h2) / (h1 * (h1 + h2)) * part(-1, None)
            )  # fmt: skip
    else:
        if isinstance(h, bool) or not isinstance(h, (int, float)):
            raise ArgumentError(
                f"gradient(): spacing must be numbers or 1-d coordinate tensors, got {h!r}"
            )
        inside = (part(2, None) - part(None, -2)) / (2 * h)
        if edge_order == 1:
            first = (part(1, 2) - part(0, 1)) / h
            last = (part(-1, None) - part(-2, -1)) / h
        else:
            first = (-1.5 * part(0, 1) + 2 * part(1, 2) - 0.5 * part(2, 3)) / h
            last = (0.5 * part(-3, -2) - 2 * part(-2, -1) + 1.5 * part(-1, None)) / h
    return _ops.concat([first, inside, last], axis=axis)


@takes_out
def bucketize(
    input: Tensor | int | float, boundaries: Tensor, *, out_int32: bool = False, right: bool = False
) -> Tensor:
    """Return the index of the bucket of each value among sorted ``boundaries``.

    Index ``i`` means ``boundaries[i-1] < x <= boundaries[i]`` (``<`` then
    ``<=`` reversed with ``right=True``), as :func:`plugrad.searchsorted` with the
    arguments swapped. ``int64`` (``int32`` with ``out_int32``); not differentiable.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.bucketize(plugrad.tensor([1, 5, 9]), plugrad.tensor([1, 3, 5, 7, 9]))
    tensor([0, 2, 4])
    """
    _tensor("bucketize", boundaries)
    if boundaries.ndim != 1:
        raise ShapeError(f"bucketize() takes 1-d boundaries, got shape {boundaries.shape}")
    values = input if isinstance(input, Tensor) else asarray(input, device=boundaries.device)
    found = _ops.searchsorted(
        boundaries.detach(), values.detach(), side="right" if right else "left"
    )
    return _ops.astype(found, _dtypes.int32 if out_int32 else found.device.default_int_dtype)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Count each value of a 1-d tensor of non-negative integers (or sum ``weights`` by value).

    The result has ``max(input) + 1`` entries, or ``minlength`` if more; it is
    ``int64`` without weights, else floating (float32 and float64 weights keep
    their dtype, others give ``float64``, as in PyTorch). Differentiable with
    respect to ``weights``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.bincount(plugrad.tensor([0, 1, 1, 3]), minlength=6)
    tensor([1, 2, 0, 1, 0, 0])
    """
    _tensor("bincount", input)
    if input.ndim != 1:
        raise ShapeError(
            f"bincount() counts a 1-d tensor of integers, got shape {input.shape} and "
            f"{input.dtype}; flatten it first (x.flatten())"
        )
    if input.dtype.kind not in ("signed integer", "unsigned integer"):
        raise DtypeError(
            f"bincount() counts integer values, got a tensor of {input.dtype}; convert whole "
            "numbers to integers first (x.long())"
        )
    if isinstance(minlength, bool) or not hasattr(type(minlength), "__index__"):
        raise ArgumentError(f"bincount() takes an int minlength >= 0, got {minlength!r}")
    minlength = operator.index(minlength)  # (a NumPy int too)
    if minlength < 0:
        raise ArgumentError(f"bincount() takes an int minlength >= 0, got {minlength!r}")
    if weights is not None and (
        _tensor("bincount", weights).ndim != 1 or weights.shape != input.shape
    ):
        raise ShapeError(
            f"bincount() takes weights of the input's shape {input.shape}, got {weights.shape}"
        )
    size = minlength
    if input.shape[0]:
        lowest, highest = int(_ops.min(input)), int(_ops.max(input))
        if lowest < 0:
            raise InvalidArgumentError(
                f"bincount() counts non-negative integers; the input holds {lowest} (shift the "
                "values up first, or count x[x >= 0] only)"
            )
        size = max(size, highest + 1)
    if weights is None:
        added = _creation.ones(
            input.shape, dtype=input.device.default_int_dtype, device=input.device
        )
    elif weights.dtype in (_dtypes.float32, _dtypes.float64):
        added = weights
    else:  # PyTorch's float64, where the device has it (JAX without x64 has not)
        wide = _dtypes.float64 in weights.device.dtypes
        added = _ops.astype(weights, _dtypes.float64 if wide else _dtypes.float32)
    counts = _creation.zeros((size,), dtype=added.dtype, device=input.device)
    return counts.scatter_add(0, _ops.astype(input, input.device.default_int_dtype), added)


def _trapezoids(function: str, y: Tensor, x: Tensor | None, dx: Any, dim: int) -> Tensor:
    """The areas of the trapezoids between neighbouring samples of ``y`` along ``dim``."""
    _tensor(function, y)
    if y.ndim == 0:
        raise ShapeError(f"{function}() takes a tensor of at least 1 dimension, got a 0-d one")
    axis = _checked_dim(function, dim, y.ndim)
    if y.dtype.kind == "bool":
        raise DtypeError(
            f"{function}() does not take bool samples, as PyTorch; convert them first "
            "(y.to(plugrad.float32))"
        )
    if y.dtype.kind in ("signed integer", "unsigned integer"):
        # In floats before adding neighbours: int8 100 + 100 wrapped to -56 (PyTorch's
        # trapezoid converts too; its cumulative_trapezoid wraps).
        y = _ops.astype(y, _dtypes.default_float_dtype)
    ahead = (slice(None),) * axis
    later, earlier = (*ahead, slice(1, None)), (*ahead, slice(None, -1))
    heights = (y[later] + y[earlier]) / 2
    if x is None:
        return heights * (1.0 if dx is None else dx)
    if dx is not None:
        raise ArgumentError(f"{function}() takes sample points x or a spacing dx=, not both")
    _tensor(function, x)
    if x.ndim == 1:
        if x.shape[0] != y.shape[axis]:
            raise ShapeError(
                f"{function}(): one x for each sample point: {y.shape[axis]} along dim {dim}, "
                f"got {x.shape[0]}"
            )
        x = _ops.reshape(x, (-1,) + (1,) * (y.ndim - 1 - axis))
        widths = x[1:] - x[:-1]
    else:
        if x.ndim < y.ndim:  # aligned on y's last dims, as broadcasting (and PyTorch) does
            x = _ops.reshape(x, (1,) * (y.ndim - x.ndim) + tuple(x.shape))
        widths = x[later] - x[earlier]
    return heights * widths


def trapezoid(
    y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1
) -> Tensor:
    """The integral of ``y`` along ``dim`` by the trapezoidal rule (PyTorch's ``trapezoid``):
    at sample points ``x`` (1-d, or broadcasting with ``y``), or ``dx`` apart (default 1).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.trapezoid(plugrad.tensor([1.0, 2.0, 4.0]), plugrad.tensor([0.0, 1.0, 3.0]))
    tensor(7.5000)
    """
    return _ops.sum(_trapezoids("trapezoid", y, x, dx, dim), axis=dim)


def trapz(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """PyTorch's older name of :func:`trapezoid`."""
    return _ops.sum(_trapezoids("trapz", y, x, dx, dim), axis=dim)


def cumulative_trapezoid(
    y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1
) -> Tensor:
    """The running integral of ``y`` along ``dim`` by the trapezoidal rule: one value fewer
    than ``y`` has along ``dim`` (PyTorch's ``cumulative_trapezoid``).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.cumulative_trapezoid(plugrad.tensor([1.0, 2.0, 3.0]))
    tensor([1.5000, 4.0000])
    """
    return _ops.cumulative_sum(_trapezoids("cumulative_trapezoid", y, x, dx, dim), axis=dim)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """Return the Vandermonde matrix of a vector: its powers, one column each.

    Columns are ``x**(N-1), ..., x**0`` (the other way with ``increasing``);
    ``N`` defaults to ``len(x)``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.vander(plugrad.tensor([1, 2, 3]), N=3)
    tensor([[1, 1, 1],
            [4, 2, 1],
            [9, 3, 1]])
    """
    if _tensor("vander", x).ndim != 1:
        raise ShapeError(f"vander() takes a 1-d tensor, got shape {x.shape}")
    N = x.shape[0] if N is None else as_int(N)
    if isinstance(N, bool) or not isinstance(N, int) or N < 0:
        raise ArgumentError(f"vander() takes an int N >= 0, got {N!r}")
    powers = range(N) if increasing else range(N - 1, -1, -1)
    if x.dtype.kind in ("signed integer", "unsigned integer", "bool"):
        # PyTorch's: integer powers in int64 (int8 100 ** 3 wrapped in int8)
        x = _ops.astype(x, x.device.default_int_dtype)
    if N == 0:
        return _creation.zeros((x.shape[0], 0), dtype=x.dtype, device=x.device)
    return _ops.stack([_ops.pow(x, power) for power in powers], axis=1)


def get_default_dtype() -> _dtypes.DType:
    """Return the dtype that Python floats and float factories give (``float32`` at start).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.get_default_dtype()
    plugrad.float32
    """
    return _dtypes.default_float_dtype


def set_default_dtype(dtype: _dtypes.DType) -> None:
    """Make ``dtype`` (a real floating dtype) the default for Python floats and float factories.

    The default complex dtype follows: ``complex128`` with ``float64``, else
    ``complex64``, as in PyTorch. New layers create their parameters with it.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.set_default_dtype(plugrad.float64)
    >>> plugrad.tensor([1.5]).dtype
    plugrad.float64
    >>> plugrad.set_default_dtype(plugrad.float32)
    """
    if not isinstance(dtype, _dtypes.DType) or dtype.kind != "real floating":
        raise DtypeError(
            f"the default dtype must be a real floating dtype such as plugrad.float64, "
            f"got {dtype!r}"
        )
    _dtypes.set_defaults(
        dtype, _dtypes.complex128 if dtype is _dtypes.float64 else _dtypes.complex64
    )


_UNSIGNED_OF = {
    "int8": _dtypes.uint8, "int16": _dtypes.uint16, "int32": _dtypes.uint32,
    "int64": _dtypes.uint64,
}  # fmt: skip


def isclose(
    input: Tensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Tensor:
    """Return where ``|input - other| <= atol + rtol * |other|``, element-wise (a bool tensor).

    Equal infinities are close; NaN is close to NaN only with ``equal_nan``.
    The two broadcast against each other. Not differentiable.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.isclose(plugrad.tensor([1.0, 2.0]), plugrad.tensor([1.0 + 1e-9, 2.1]))
    tensor([ True, False])
    """
    if not isinstance(input, Tensor):
        raise ArgumentError(f"isclose() takes a Tensor, got {type(input).__name__}")
    if rtol < 0 or atol < 0:
        raise InvalidArgumentError(
            f"isclose(): rtol and atol must be >= 0, got rtol={rtol}, atol={atol}"
        )
    input = input.detach()
    other = other.detach() if isinstance(other, Tensor) else asarray(other, device=input.device)
    close = _ops.equal(input, other)
    if {input.dtype.kind, other.dtype.kind} & {"real floating", "complex floating"}:
        # NOTE: equal infinities are close through equal() only; the distance is taken
        # between finite values (0 elsewhere), as inf - inf would warn and give nan.
        finite = _ops.logical_and(_ops.isfinite(input), _ops.isfinite(other))
        distance = _ops.abs(_ops.where(finite, input, 0) - _ops.where(finite, other, 0))
        within = _ops.logical_and(finite, distance <= atol + rtol * _ops.abs(other))
        if equal_nan:
            close = _ops.logical_or(close, _ops.logical_and(_ops.isnan(input), _ops.isnan(other)))
    elif input.dtype is _dtypes.bool or other.dtype is _dtypes.bool:
        return close  # booleans are close where equal (they have no difference)
    else:
        # The distance exactly, as the larger less the smaller seen unsigned (it may wrap the
        # signed dtype, never the unsigned one); in floating point, 2**62 and 2**62 + 1 were
        # 0 apart. The tolerance is a float, as PyTorch's.
        distance = _ops.maximum(input, other) - _ops.minimum(input, other)
        if distance.dtype.kind == "signed integer":
            distance = _ops.astype(distance, _UNSIGNED_OF[distance.dtype.name])
        wide = _dtypes.float64 if _dtypes.float64 in input.device.dtypes else _dtypes.float32
        within = distance <= atol + rtol * _ops.abs(_ops.astype(other, wide))
    close = _ops.logical_or(close, within)
    return close


def allclose(
    input: Tensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    """Return whether every element of ``input`` is close to ``other`` (see :func:`isclose`).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.allclose(plugrad.tensor([1.0, 2.0]), plugrad.tensor([1.0, 2.0 + 1e-7]))
    True
    """
    return bool(_ops.all(isclose(input, other, rtol, atol, equal_nan)))


def _isclose_method(
    self: Tensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Tensor:
    """:func:`plugrad.isclose` of this tensor and ``other``."""
    return isclose(self, other, rtol, atol, equal_nan)


def _allclose_method(
    self: Tensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    """:func:`plugrad.allclose` of this tensor and ``other``."""
    return allclose(self, other, rtol, atol, equal_nan)


def _equal_method(self: Tensor, other: Tensor) -> bool:
    """PyTorch's ``x.equal(other)``: whether both have the same shape and the same elements.

    A ``bool``, never a tensor; ``nan`` equals nothing, as in ``==``. (The
    function ``plugrad.equal`` is the standard's element-wise comparison.)

    Examples
    --------
    >>> import plugrad
    >>> plugrad.tensor([1.0, 2.0]).equal(plugrad.tensor([1.0, 2.0]))
    True
    >>> plugrad.ones(2).equal(plugrad.ones(3))
    False
    """
    if not isinstance(other, Tensor):
        raise ArgumentError(f"equal() takes a Tensor, got {type(other).__name__}")
    if self.shape != other.shape:
        return False
    return bool(_ops.all(_ops.equal(self.detach(), other.detach())))


install_methods(isclose=_isclose_method, allclose=_allclose_method, equal=_equal_method)
install_methods(take_along_dim=lambda self, indices, dim=None: take_along_dim(self, indices, dim))
install_methods(bincount=lambda self, weights=None, minlength=0: bincount(self, weights, minlength))
install_methods(
    diag_embed=lambda self, offset=0, dim1=-2, dim2=-1: diag_embed(self, offset, dim1, dim2),
    diagflat=lambda self, offset=0: diagflat(self, offset),
)
install_methods(
    polygamma=lambda self, n: polygamma(n, self),
    # In place as the other ops are: an integer tensor is refused (copy_ truncated the
    # values), and the graph sees one op (backward through copy_ of its own input failed).
    polygamma_=lambda self, n: apply_inplace(self, lambda x: polygamma(n, x), name="polygamma_()"),
    mvlgamma=lambda self, p: mvlgamma(self, p),
    mvlgamma_=lambda self, p: apply_inplace(self, mvlgamma, p, name="mvlgamma_()"),
)


def _einsum_terms(equation: str, operands: tuple[Tensor, ...]) -> tuple[list[str], str]:
    """The letters of each operand and of the output of an einsum ``equation``.

    Each ``...`` becomes letters of its own (Greek ones, which no equation may
    use), one per axis it covers; the ellipses of the operands are aligned at
    their last axes and broadcast against each other, as PyTorch's are.
    """
    text = equation.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ArgumentError(
            f"einsum({equation!r}): the equation names {len(terms)} operand(s) but "
            f"{len(operands)} were given"
        )
    for term in (*terms, output):
        named = term.replace("...", "", 1)
        if not all("a" <= c <= "z" or "A" <= c <= "Z" for c in named):
            raise ArgumentError(
                f"einsum({equation!r}): axes are named by the letters a-z and A-Z, and one "
                "'...' per term may stand for the axes not named"
            )
    spans = []
    for term, operand in zip(terms, operands, strict=True):
        span = operand.ndim - (len(term) - 3) if "..." in term else 0
        if span < 0:
            raise ShapeError(
                f"einsum({equation!r}): the term {term!r} names {len(term) - 3} axes but the "
                f"operand has shape {operand.shape}"
            )
        spans.append(span)
    ellipsis = "".join(chr(0x3B1 + k) for k in range(max(spans)))
    terms = [
        term.replace("...", ellipsis[len(ellipsis) - span :])
        for term, span in zip(terms, spans, strict=True)
    ]
    letters = "".join(terms)
    if not arrow:  # implicit output: the ellipsis, then the letters seen once, sorted
        once = sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ellipsis)
        output = ellipsis + "".join(once)
    else:
        output = output.replace("...", ellipsis)
    if len(set(output)) != len(output) or not set(output) <= set(letters):
        raise ArgumentError(
            f"einsum({equation!r}): each output letter must appear once, and in an operand"
        )
    return terms, output


@_autocast.listed("einsum")
def einsum(equation: str, *operands: Tensor) -> Tensor:
    """Sum products of ``operands`` over the axes an Einstein-summation ``equation`` names.

    ``"ij,jk->ik"`` is a matrix product, ``"ii->i"`` a diagonal, ``"bij->bji"``
    a transpose; without ``->`` the output has the letters seen once, in
    alphabetical order. Computed from differentiable ops (diagonals, sums, and
    one matrix product per pair of operands, contracted from the left), so it
    has gradients of every order and the memory of the products alone. As in
    PyTorch, a contraction keeps an integer dtype and a sum over a letter only
    one operand has gives int64 for integers and bools. The operands may also
    come as one list, or in the sublist form ``einsum(x, [0, 1], y, [1, 2],
    [0, 2])`` (axes numbered 0-51, ``...`` allowed). ``...`` stands for the axes a
    term does not name (``"...ij,...jk->...ik"`` is a batched matrix product):
    the ellipses of all operands broadcast against each other, and without
    ``->`` they lead the output; an output that leaves ``...`` out sums them.

    Examples
    --------
    >>> import plugrad
    >>> a = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> plugrad.einsum("ij,jk->ik", a, a)
    tensor([[ 7., 10.],
            [15., 22.]])
    >>> plugrad.einsum("ii", a)
    tensor(5.)
    >>> plugrad.einsum("...j,j->...", a, plugrad.tensor([1.0, -1.0]))
    tensor([-1., -1.])
    """
    if isinstance(equation, Tensor):  # the sublist form: operand, [axes], ..., [output]
        equation, operands = _einsum_from_sublists((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str) or not operands:
        raise ArgumentError("einsum() takes an equation string and at least one tensor")
    for operand in operands:
        if not isinstance(operand, Tensor):
            raise ArgumentError(f"einsum() takes Tensors, got {type(operand).__name__}")
    terms, output = _einsum_terms(equation, operands)
    sizes: dict[str, int] = {}
    prepared: list[tuple[Tensor, str]] = []
    for operand, term in zip(operands, terms, strict=True):
        if len(term) != operand.ndim:
            raise ShapeError(
                f"einsum({equation!r}): the term {term!r} names {len(term)} axes but the "
                f"operand has shape {operand.shape}"
            )
        for letter in {c for c in term if term.count(c) > 1}:
            lengths = {size for c, size in zip(term, operand.shape, strict=True) if c == letter}
            if len(lengths) > 1:
                raise ShapeError(
                    f"einsum({equation!r}): axis {letter!r} is repeated in the term {term!r} "
                    f"(a diagonal) with sizes {sorted(lengths)}; a diagonal needs equal sizes"
                )
        for letter, size in zip(term, operand.shape, strict=True):
            if sizes.setdefault(letter, size) != size and 1 not in (size, sizes[letter]):
                raise ShapeError(
                    f"einsum({equation!r}): axis {letter!r} has sizes {sizes[letter]} and "
                    f"{size} in different places"
                )
            sizes[letter] = max(sizes[letter], size)
        # A letter repeated within one operand takes its diagonal.
        while len(set(term)) != len(term):
            letter = next(c for c in term if term.count(c) > 1)
            first = term.index(letter)
            second = term.index(letter, first + 1)
            rest = [i for i in range(len(term)) if i not in (first, second)]
            operand = _ops.diagonal(_ops.permute_dims(operand, (*rest, first, second)))
            term = "".join(term[i] for i in rest) + letter
        prepared.append((operand, term))
    # Letters no other operand and not the output names are summed first (PyTorch's
    # sum: integers give int64); pairs are then contracted from the left by one matmul
    # each (the dtype kept), never through a broadcast product of all their axes.
    for index, (operand, term) in enumerate(prepared):
        others = output + "".join(t for k, (_, t) in enumerate(prepared) if k != index)
        operand, term = _einsum_sum_out(operand, term, others)
        prepared[index] = (operand, term)
    result, letters = prepared[0]
    for index, (operand, term) in enumerate(prepared[1:], start=1):
        later = output + "".join(t for _, t in prepared[index + 1 :])
        result, letters = _einsum_pair(result, letters, operand, term, later)
    return _ops.permute_dims(result, tuple(letters.index(c) for c in output))


def _einsum_from_sublists(arguments: tuple[Any, ...]) -> tuple[str, tuple[Tensor, ...]]:
    """The equation and operands of ``einsum(x, [0, 1], y, [1, 2], [0, 2])``."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

    def term(axes: Any) -> str:
        if not isinstance(axes, (list, tuple)):
            raise ArgumentError(
                "einsum(operand, axes, ...): each operand is followed by a list of its axes "
                f"(ints from 0 to 51, or ...), not {type(axes).__name__}"
            )
        named = []
        for axis in axes:
            if axis is Ellipsis:
                named.append("...")
            elif isinstance(axis, int) and not isinstance(axis, bool) and 0 <= axis < 52:
                named.append(letters[axis])
            else:
                raise ArgumentError(
                    f"einsum(operand, axes, ...): axes are ints from 0 to 51 or ..., not {axis!r}"
                )
        return "".join(named)

    operands = arguments[0::2][: len(arguments) // 2]
    terms = [term(axes) for axes in arguments[1::2]]
    equation = ",".join(terms)
    if len(arguments) % 2:
        equation += "->" + term(arguments[-1])
    return equation, tuple(operands)


def _einsum_sum_out(operand: Tensor, term: str, needed: str) -> tuple[Tensor, str]:
    """``operand`` summed over its letters that ``needed`` does not name."""
    done = tuple(i for i, c in enumerate(term) if c not in needed)
    if not done:
        return operand, term
    return _einsum_sum(operand, done), "".join(c for c in term if c in needed)


def _einsum_sum(operand: Tensor, axis: int | tuple[int, ...], keepdims: bool = False) -> Tensor:
    """PyTorch's sum: integers and bools add up in int64 (the device's widest int)."""
    exact = operand.dtype.kind in ("signed integer", "unsigned integer", "bool")
    dtype = operand.device.default_int_dtype if exact else None
    return _ops.sum(operand, axis=axis, keepdims=keepdims, dtype=dtype)


def _einsum_pair(a: Tensor, a_term: str, b: Tensor, b_term: str, later: str) -> tuple[Tensor, str]:
    """The contraction of two einsum operands, keeping the letters ``later`` names."""
    contracted = [c for c in a_term if c in b_term and c not in later]
    for letter in contracted:  # a size-1 axis against a longer one: sum the longer first
        size_a, size_b = a.shape[a_term.index(letter)], b.shape[b_term.index(letter)]
        if size_a != size_b:
            longer, term = (a, a_term) if size_a != 1 else (b, b_term)
            summed = _einsum_sum(longer, term.index(letter), keepdims=True)
            if longer is a:
                a = summed
            else:
                b = summed
    if not contracted:  # an elementwise or outer product: the dtype of a multiply
        order = "".join(dict.fromkeys(a_term + b_term))
        return _ops.multiply(
            _einsum_aligned(a, a_term, order), _einsum_aligned(b, b_term, order)
        ), order
    if a.dtype == _dtypes.bool:  # bools are counted, as PyTorch's sum counts them
        a = _ops.astype(a, a.device.default_int_dtype)
    if b.dtype == _dtypes.bool:
        b = _ops.astype(b, b.device.default_int_dtype)
    batch = [c for c in a_term if c in b_term and c not in contracted]
    left = [c for c in a_term if c not in b_term]
    right = [c for c in b_term if c not in a_term]
    a = _ops.permute_dims(a, tuple(a_term.index(c) for c in (*batch, *left, *contracted)))
    b = _ops.permute_dims(b, tuple(b_term.index(c) for c in (*batch, *contracted, *right)))
    nb = len(batch)
    batch_a, batch_b = a.shape[:nb], b.shape[:nb]  # sizes 1 broadcast in the matmul
    left_sizes, right_sizes = a.shape[nb : nb + len(left)], b.shape[len(b.shape) - len(right) :]
    inner = math.prod(a.shape[nb + len(left) :])
    a = _ops.reshape(a, (*batch_a, math.prod(left_sizes), inner))
    b = _ops.reshape(b, (*batch_b, inner, math.prod(right_sizes)))
    product = _ops.matmul(a, b)
    product = _ops.reshape(product, (*product.shape[:nb], *left_sizes, *right_sizes))
    return product, "".join((*batch, *left, *right))


def _einsum_aligned(operand: Tensor, term: str, order: str) -> Tensor:
    """``operand`` with its axes in ``order``, size 1 where it lacks a letter."""
    present = [c for c in order if c in term]
    operand = _ops.permute_dims(operand, tuple(term.index(c) for c in present))
    shape = tuple(operand.shape[present.index(c)] if c in term else 1 for c in order)
    return _ops.reshape(operand, shape)
