"""The Tensor: one backend array plus its place in the autograd graph.

This module holds the data and the autograd state; the version counter's
methods come from :mod:`plugrad.versions`. The modules above it add methods
with :func:`install_methods`: the operators
(:mod:`plugrad.tensor_operators`), indexing (:mod:`plugrad.tensor_indexing`),
the conversions to and from the outside world (:mod:`plugrad.tensor_interop`),
hooks (:mod:`plugrad.tensor_hooks`), backward, the in-place methods, ...
"""

from __future__ import annotations

import builtins
import copy
import inspect
import operator
import types
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from . import dtypes as _dtypes
from . import ops as _ops
from . import versions as _versions
from .errors import (
    ArgumentError,
    AxisError,
    BackwardError,
    DeviceMismatchError,
    DtypeError,
    InvalidArgumentError,
    ShapeError,
)
from .memory_formats import check_memory_format, contiguous_format, memory_format
from .versions import DETACHED

if TYPE_CHECKING:
    from ._api_tensor import InstalledTensorMethods as _InstalledMethods
    from .backend import Backend, Device
    from .node import Node
else:
    _InstalledMethods = object  # the methods are set on the class when plugins load

__all__ = ["Size", "Tensor"]

_object_new = object.__new__
_T = TypeVar("_T", bound="Tensor")


def _copy_attributes(source: Any, copied: Any, memo: dict[int, Any] | None) -> None:
    """Give ``copied`` the attributes the user set on ``source`` (deep copies with ``memo``)."""
    attributes = source.__dict__
    if attributes:
        copied.__dict__.update(attributes if memo is None else copy.deepcopy(attributes, memo))


class Tensor(_InstalledMethods):
    """An array on some backend that can take part in automatic differentiation.

    Create tensors with :func:`plugrad.tensor`, :func:`plugrad.asarray` and the
    other creation functions, not with this class. A tensor made by the user
    is a *leaf* (``grad_fn is None``); a tensor computed from tensors that
    require grad, while grad mode is on, is a non-leaf whose ``grad_fn``
    records how it was made.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> y = (x * x).sum()
    >>> y
    tensor(14., grad_fn=<SumBackward>)
    >>> y.backward()
    >>> x.grad
    tensor([2., 4., 6.])
    """

    # _counter: None until the tensor is modified in place or a view of it is taken; then
    # the version counter shared with its views (see plugrad.versions).
    __slots__ = (
        "__dict__",  # attributes of the user's (p.no_weight_decay = True), as PyTorch's take
        "__weakref__",
        "_array",
        "_counter",
        "_device",
        "_edge",
        "_grad",
        "_hooks",
        "_layout",  # set on views where views are copies (see plugrad.strided_layout)
        "_requires_grad",
        "_view_base",  # set on views only (see plugrad.versions.add_alias)
    )
    _array: Any
    _counter: list[Any] | None
    _view_base: Tensor
    _layout: tuple[int, ...] | None
    _device: Device
    _edge: Any
    _grad: Tensor | None
    _hooks: Any
    _requires_grad: bool

    # Let Tensor's reflected operators handle `ndarray + tensor`, instead of numpy.
    __array_ufunc__ = None

    #: PyTorch's legacy ``Tensor(data)`` / ``Tensor(2, 3)``: set by :mod:`plugrad.creation`.
    _legacy_constructor: ClassVar[Callable[..., Tensor] | None] = None

    def __new__(cls, *args: Any, **kwargs: Any) -> Tensor:
        make = Tensor._legacy_constructor
        if cls is not Tensor or make is None:  # subclasses (Parameter) make their own
            return _object_new(cls)
        return make(*args, **kwargs)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass  # (made by __new__)

    # -- data ---------------------------------------------------------------------------

    @property
    def array(self) -> Any:
        """The raw backend array (e.g. a ``numpy.ndarray``). Changing it bypasses autograd."""
        return self._array

    @property
    def data(self) -> Tensor:
        """The values without history (``detach()``); assigning replaces a leaf's values.

        ``x.data = y`` makes the leaf ``x`` hold ``y``'s array -- any shape,
        dtype or device -- while staying the same object with the same
        ``requires_grad``, ``.grad`` and hooks. That is how
        :meth:`plugrad.nn.Module.to` and :meth:`~plugrad.nn.Module.load_state_dict`
        change parameters that an optimizer already holds. Autograd does not
        record it; a backward pass that saved the old values raises instead of
        using the new ones.

        Examples
        --------
        >>> import plugrad
        >>> w = plugrad.tensor([1.0, 2.0], requires_grad=True)
        >>> w.data = plugrad.tensor([3.0, 4.0, 5.0])
        >>> w
        tensor([3., 4., 5.], requires_grad=True)
        """
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise ArgumentError(
                f"data must be a Tensor, got {type(value).__name__}; wrap it with "
                "plugrad.asarray(...) first"
            )
        if self._edge is not None:
            raise BackwardError(
                f"only a leaf's data can be replaced, and this tensor was computed by "
                f"{self.grad_fn!r}; replace the data of the leaves it comes from"
            )
        if self._requires_grad and not _dtypes.is_differentiable(value.dtype):
            raise DtypeError(
                f"this tensor requires grad, so its data must be floating-point or complex, "
                f"not {value.dtype.name}"
            )
        self._array = value._array
        self._device = value._device
        # Graphs that saved this tensor, or a view of it, now raise instead of mixing the
        # old values with the new ones; its views stay views of the old memory.
        self._bump_version()
        _versions.leave_memory(self)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._array.shape)

    @property
    def ndim(self) -> int:
        return self._array.ndim

    @property
    def size(self) -> int:
        """Number of elements (an ``int``, as the Array API says) that PyTorch code may call.

        ``x.size`` is the element count; ``x.size()`` is the shape as a
        :class:`Size` and ``x.size(dim)`` one dimension, as in PyTorch.

        Examples
        --------
        >>> import plugrad
        >>> x = plugrad.zeros(2, 3)
        >>> x.size
        6
        >>> x.size()
        plugrad.Size([2, 3])
        >>> x.size(-1)
        3
        """
        shape = self._array.shape
        n = 1
        for d in shape:
            if d is None:
                return None  # type: ignore[return-value]  # a lazy array of unknown size
            n *= d
        count = int.__new__(_ElementCount, n)
        count._shape = tuple(shape)
        return count

    @property
    def dtype(self) -> _dtypes.DType:
        return self._device.dtype_of(self._array)

    @property
    def T(self) -> Tensor:
        """The tensor with all axes reversed; for 2-D tensors the matrix transpose."""
        return _ops.permute_dims(self, tuple(range(self._array.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Tensor:
        """Transpose of the last two axes (a stack of matrices)."""
        return _ops.matrix_transpose(self)

    @property
    def real(self) -> Tensor:
        """The real part (:func:`plugrad.real`), PyTorch's attribute; a view of the values."""
        return _ops.real(self)

    @property
    def imag(self) -> Tensor:
        """The imaginary part of a complex tensor (:func:`plugrad.imag`), PyTorch's attribute.

        A real tensor has none: PyTorch refuses, and so does this (``plugrad.imag(x)`` gives zeros).
        """
        if self._device.dtype_of(self._array).kind != "complex floating":
            raise DtypeError(
                f"x.imag is for complex tensors, and this one is {self.dtype.name}; "
                "use plugrad.imag(x) for zeros of its shape"
            )
        return _ops.imag(self)

    @property
    def device(self) -> Device:
        """The device the data lives on (also names the backend)."""
        return self._device

    @property
    def backend(self) -> Backend:
        return self._device.backend

    __hash__ = object.__hash__

    # -- autograd -----------------------------------------------------------------------

    @property
    def requires_grad(self) -> bool:
        """Whether gradients are computed for this tensor. Settable on leaves."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise ArgumentError(f"requires_grad must be a bool, got {type(value).__name__}")
        if self._edge is not None:
            if value:
                return
            raise BackwardError(
                "requires_grad can only be changed on leaf tensors, and this tensor was "
                f"computed by {self.grad_fn!r}. Use x.detach() for a copy that does not "
                "require grad."
            )
        if value and not _dtypes.is_differentiable(self.dtype):
            raise DtypeError(
                f"only floating-point and complex tensors can require gradients, but this tensor "
                f"is {self.dtype.name}; convert it first, e.g. plugrad.astype(x, plugrad.float32)"
            )
        self._requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set :attr:`requires_grad` in place and return the tensor."""
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient, after ``backward()``; ``None`` until then.

        A non-leaf keeps none unless :meth:`retain_grad` was called: reading it
        warns, as PyTorch's does (a ``None`` that looks like a missing gradient).
        """
        grad = self._grad
        if grad is None and self._edge is not None and not self.retains_grad:
            warnings.warn(
                "reading .grad of a tensor that is not a leaf (it has a grad_fn): backward() "
                "does not keep gradients of such tensors, so it is None. Call "
                "t.retain_grad() before backward() to keep it, or read .grad of the leaf "
                "tensors the result was computed from",
                UserWarning,
                stacklevel=2,
            )
        return grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise ArgumentError(f"grad must be a Tensor or None, got {type(value).__name__}")
            if value.shape != self.shape or value.dtype != self.dtype:
                raise (ShapeError if value.shape != self.shape else DtypeError)(
                    f"assigned grad has shape {value.shape} and dtype {value.dtype.name}, but the "
                    f"tensor has shape {self.shape} and dtype {self.dtype.name}; assign a "
                    "gradient of the tensor's shape and dtype (g.to(x.dtype)), or None"
                )
            if value._device is not self._device:
                raise DeviceMismatchError(
                    f"assigned grad is on {value._device.name} but the tensor is on "
                    f"{self._device.name}; move it first (g.to(x.device))"
                )
            counter = self._counter
            if (
                value is self
                or value._array is self._array
                or (counter is not None and value._counter is counter)
            ):
                # backward() adds into .grad's memory (zero_grad() zeros it): the tensor's.
                raise InvalidArgumentError(
                    "can't assign a tensor as its own grad: the assigned grad is the tensor "
                    "itself or shares its memory (a view of it, x.detach(), x.data), so "
                    "backward() would add gradients into the tensor's values; assign a copy "
                    "(x.detach().clone())"
                )
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None  # ``del x.grad``, as PyTorch's

    @property
    def grad_fn(self) -> Node | None:
        """The node that computed this tensor, or ``None`` for a leaf."""
        edge = self._edge
        if edge is None:
            return None
        return edge[0] if type(edge) is tuple else edge

    @property
    def is_leaf(self) -> bool:
        """``True`` if the tensor was not computed by a recorded operation."""
        return self._edge is None

    def detach(self) -> Tensor:
        """Return a new leaf sharing the data, cut off from the graph (``requires_grad=False``).

        It shares the version counter too: modifying either in place is seen by
        backward passes that saved the other.
        """
        detached = _wrap(self._shareable_array(), self._device, False, None)
        self._add_alias(detached, DETACHED)
        return detached

    def _shareable_array(self) -> Any:
        """The tensor's array, made one that views can share if it was an immutable scalar.

        NumPy gives a 0-d result as a scalar (``np.float64``), which no view or
        ``detach()``-ed tensor can share: a change through one would not reach
        the other. Such a tensor is given a 0-d array of the same value first.
        """
        array = self._array
        if type(array) in self._device.scalar_types:
            array = self._array = self._device.xp.asarray(array)
        return array

    def __copy__(self) -> Tensor:
        """``copy.copy``: a new leaf sharing the data (as PyTorch's), ``requires_grad`` kept.

        Like :meth:`detach`, it shares the version counter: an in-place change of
        either is seen by backward passes that saved the other.

        Examples
        --------
        >>> import copy, plugrad
        >>> w = plugrad.tensor([1.0, 2.0], requires_grad=True)
        >>> c = copy.copy(w)
        >>> c.array is w.array, c.requires_grad, c.is_leaf
        (True, True, True)
        """
        copied = self._alias(type(self), DETACHED)  # (a Parameter stays one)
        copied._requires_grad = self._requires_grad
        _copy_attributes(self, copied, None)
        return copied

    def _alias(self, cls: type[_T], key: Any) -> _T:
        """A new leaf of ``cls`` without grad sharing this tensor's memory and version
        counter (``key`` says how, see :func:`plugrad.versions.add_alias`)."""
        alias = _object_new(cls)
        alias._array = self._shareable_array()
        alias._device = self._device
        alias._requires_grad = False
        alias._edge = None
        alias._grad = None
        alias._hooks = None
        alias._counter = None
        self._add_alias(alias, key)
        return alias

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        """``copy.deepcopy``: a new leaf of the same type with its own copy of the data.

        ``requires_grad`` and ``.grad`` (copied too) carry over; hooks do not. Only leaves
        can be copied, as in PyTorch: a copy of a graph node would have no graph. A tensor
        reached twice in one ``deepcopy`` is copied once, but a view and its base are
        copied apart and share no memory afterwards (PyTorch's copies keep sharing), as
        with :func:`plugrad.save`.

        Examples
        --------
        >>> import copy, plugrad
        >>> w = plugrad.tensor([1.0, 2.0], requires_grad=True)
        >>> w2 = copy.deepcopy(w)
        >>> w2.requires_grad, w2.array is w.array
        (True, False)
        """
        if self._edge is not None:
            raise InvalidArgumentError(
                "only leaf tensors can be deep-copied (this one has "
                f"grad_fn={self.grad_fn!r}); copy x.detach() instead, or make the copy a leaf "
                "with copy.deepcopy(x.detach()).requires_grad_()"
            )
        copied = _object_new(type(self))
        memo[id(self)] = copied
        copied._array = self._device.xp.asarray(self._array, copy=True)
        copied._device = self._device
        copied._requires_grad = self._requires_grad
        copied._edge = None
        copied._hooks = None
        copied._counter = None
        copied._grad = None if self._grad is None else self._grad.__deepcopy__(memo)
        _copy_attributes(self, copied, memo)
        return copied

    # The version counter (see plugrad.versions). NOTE: the compile tracer swaps
    # _bump_version in the class's namespace while it captures.
    _version = property(_versions.version)
    _shared_counter = _versions.shared_counter
    _add_alias = _versions.add_alias
    _bump_version = _versions.bump_version

    def detach_(self) -> Tensor:
        """Cut this tensor off from the graph in place: it becomes a leaf without grad.

        Refused for a view (as in PyTorch): use :meth:`detach`, which makes a new tensor.
        """
        if self._edge is not None and _versions.is_view(self):
            raise BackwardError(
                f"detach_() of a view (shape {self.shape}): a view stays tied to the history "
                "of the tensor it views, so a later change of that tensor would put it back "
                "into the graph. Use detach(), which makes a new tensor."
            )
        self._edge = None
        self._requires_grad = False
        return self

    # -- PyTorch's methods that are not ops ------------------------------------------------

    def numel(self) -> int:
        """Return the number of elements (``x.size`` as a plain int).

        Examples
        --------
        >>> import plugrad
        >>> plugrad.zeros(2, 3).numel()
        6
        """
        return int(self.size)

    def nelement(self) -> int:
        """Return the number of elements: :meth:`numel`, by PyTorch's other name."""
        return int(self.size)

    def dim(self) -> int:
        """Return the number of dimensions (``x.ndim``)."""
        return self._array.ndim

    def ndimension(self) -> int:
        """Return the number of dimensions: :meth:`dim`, by PyTorch's other name."""
        return self._array.ndim

    def element_size(self) -> int:
        """Return the size of one element in bytes (4 for ``float32``)."""
        return self.dtype.itemsize

    def is_floating_point(self) -> bool:
        """Return whether the dtype is a real floating one (``float16``, ``float32``, ``float64``).

        Examples
        --------
        >>> import plugrad
        >>> plugrad.ones(2).is_floating_point(), plugrad.tensor([1]).is_floating_point()
        (True, False)
        """
        return self.dtype.kind == "real floating"

    def is_complex(self) -> bool:
        """Return whether the dtype is a complex one (``complex64``, ``complex128``)."""
        return self.dtype.kind == "complex floating"

    def is_inference(self) -> bool:
        """Return False: plugrad has no inference tensors (:class:`plugrad.inference_mode` is
        :class:`plugrad.no_grad`, so a tensor made in it is an ordinary one)."""
        return False

    def is_nonzero(self) -> bool:
        """Return whether the one element of a one-element tensor is not zero.

        Examples
        --------
        >>> import plugrad
        >>> plugrad.tensor([0.0]).is_nonzero(), plugrad.tensor(2).is_nonzero()
        (False, True)
        """
        return bool(self)

    def _cast(
        self, dtype: _dtypes.DType, memory_format: memory_format | None = None, name: str = ""
    ) -> Tensor:
        """``self`` converted to ``dtype`` (itself if it has it already); differentiable.

        ``memory_format`` is PyTorch's: ``contiguous_format`` gives a row-major tensor.
        """
        result = self if self.dtype is dtype else _ops.astype(self, dtype)
        if memory_format is not None:
            check_memory_format(name, memory_format, self.ndim)
            if memory_format is contiguous_format:
                result = result.contiguous()
        return result

    def float(self, memory_format: memory_format | None = None) -> Tensor:
        """Return the tensor as ``float32`` (itself if it is already); differentiable."""
        return self._cast(_dtypes.float32, memory_format, "float")

    def double(self, memory_format: memory_format | None = None) -> Tensor:
        """Return the tensor as ``float64`` (itself if it is already); differentiable.

        Examples
        --------
        >>> import plugrad
        >>> plugrad.tensor([1, 2]).double()
        tensor([1., 2.], dtype=plugrad.float64)
        """
        return self._cast(_dtypes.float64, memory_format, "double")

    def half(self, memory_format: memory_format | None = None) -> Tensor:
        """Return the tensor as ``float16`` (itself if it is already); differentiable."""
        return self._cast(_dtypes.float16, memory_format, "half")

    def bfloat16(self, memory_format: memory_format | None = None) -> Tensor:
        """Return the tensor as ``bfloat16`` (itself if it is already); differentiable.

        The torch and JAX backends store it; others raise
        :class:`~plugrad.errors.DtypeError`."""
        return self._cast(_dtypes.bfloat16, memory_format, "bfloat16")

    def chalf(self, memory_format: memory_format | None = None) -> Tensor:
        """PyTorch's cast to ``complex32``, a dtype no plugrad backend stores: raises
        :class:`~plugrad.errors.DtypeError` (use :meth:`cfloat`)."""
        raise DtypeError(
            "x.chalf(): no plugrad backend stores complex32; use x.cfloat() (complex64)"
        )

    def long(self, memory_format: memory_format | None = None) -> Tensor:
        """Return the tensor as ``int64`` (itself if it is already)."""
        return self._cast(_dtypes.int64, memory_format, "long")

    def int(self, memory_format: memory_format | None = None) -> Tensor:
        """Return the tensor as ``int32`` (itself if it is already)."""
        return self._cast(_dtypes.int32, memory_format, "int")

    def short(self, memory_format: memory_format | None = None) -> Tensor:
        """Return the tensor as ``int16`` (itself if it is already)."""
        return self._cast(_dtypes.int16, memory_format, "short")

    def bool(self, memory_format: memory_format | None = None) -> Tensor:
        """Return the tensor as ``bool`` (itself if it is already)."""
        return self._cast(_dtypes.bool, memory_format, "bool")

    def char(self, memory_format: memory_format | None = None) -> Tensor:
        """Return the tensor as ``int8`` (itself if it is already)."""
        return self._cast(_dtypes.int8, memory_format, "char")

    def byte(self, memory_format: memory_format | None = None) -> Tensor:
        """Return the tensor as ``uint8`` (itself if it is already)."""
        return self._cast(_dtypes.uint8, memory_format, "byte")

    def cfloat(self, memory_format: memory_format | None = None) -> Tensor:
        """Return the tensor as ``complex64`` (itself if it is already); differentiable."""
        return self._cast(_dtypes.complex64, memory_format, "cfloat")

    def cdouble(self, memory_format: memory_format | None = None) -> Tensor:
        """Return the tensor as ``complex128`` (itself if it is already); differentiable."""
        return self._cast(_dtypes.complex128, memory_format, "cdouble")

    def type(
        self,
        dtype: _dtypes.DType | str | builtins.type | None = None,
        non_blocking: builtins.bool = False,
    ) -> Tensor | str:
        """PyTorch's ``x.type(dtype)``: the tensor as ``dtype``; without it, the type's name.

        ``dtype`` is a dtype, a legacy tensor type (``plugrad.LongTensor``) or its
        name (``"torch.FloatTensor"``, also spelled ``"plugrad.FloatTensor"``).
        ``non_blocking`` is taken for PyTorch's signature (a conversion is done when
        it returns). Differentiable, like :meth:`to`.

        Examples
        --------
        >>> import plugrad
        >>> x = plugrad.tensor([True, False])
        >>> x.type(plugrad.float)
        tensor([1., 0.])
        >>> x.type()
        'plugrad.BoolTensor'
        """
        if dtype is None:
            return f"plugrad.{_TENSOR_TYPE_NAMES[self.dtype.name]}"
        if isinstance(dtype, str):
            prefix, _, type_name = dtype.rpartition(".")
            by_type_name = {v: k for k, v in _TENSOR_TYPE_NAMES.items()}
            if prefix not in ("torch", "plugrad") or type_name not in by_type_name:
                raise ArgumentError(
                    f"type() got {dtype!r}; give a dtype (x.type(plugrad.float32)) or a "
                    f"tensor type name such as 'torch.FloatTensor' (one of "
                    f"{', '.join(sorted(by_type_name))})"
                )
            dtype = getattr(_dtypes, by_type_name[type_name])
        elif isinstance(dtype, builtins.type):
            legacy = getattr(dtype, "dtype", None)  # a legacy tensor type: plugrad.LongTensor
            if isinstance(legacy, _dtypes.DType):
                dtype = legacy
        if not isinstance(dtype, _dtypes.DType):
            raise ArgumentError(
                f"type() takes a dtype such as plugrad.float32, got {type(dtype).__name__}"
            )
        return self._cast(dtype)

    def type_as(self, other: Tensor) -> Tensor:
        """Return the tensor with ``other``'s dtype (itself if it has it already)."""
        if not isinstance(other, Tensor):
            raise ArgumentError(f"type_as() takes a Tensor, got {type(other).__name__}")
        return self._cast(other.dtype)

    def clone(self, *, memory_format: memory_format | None = None) -> Tensor:
        """Return a copy of the data; differentiable (the gradient flows back unchanged).

        As in PyTorch, the copy keeps the layout of a tensor whose elements lie
        side by side in memory (a transposed one stays transposed), and is
        row-major for ``memory_format=plugrad.contiguous_format`` or where
        elements repeat (an ``expand``); channels-last formats are accepted and
        give the backend's order.

        Examples
        --------
        >>> import plugrad
        >>> x = plugrad.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x.clone()
        >>> y.array is x.array, y.requires_grad
        (False, True)
        """
        if memory_format is not None:
            check_memory_format("clone", memory_format, self.ndim)
        backend = self._device.backend
        if not backend.row_major(self._array) and (
            memory_format is contiguous_format
            or 0 in (s for s, n in zip(backend.strides(self._array), self.shape) if n > 1)
        ):  # a flat copy is made in row-major order; seen in the shape again, it stays so
            flat = _ops.reshape(self, (-1,), copy=True)
            return _ops.reshape(flat, self.shape)
        if self._requires_grad:
            return _ops.positive(self)
        # NOTE: not positive() here: the standard defines it for numbers only (no bools).
        return _wrap(self._device.xp.asarray(self._array, copy=True), self._device, False, None)


def tensors_in(value: Any) -> list[Tensor]:
    """The tensors in ``value``, inside tuples, lists and dicts too, in order."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in tensors_in(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in tensors_in(item)]
    return []


def install_methods(**methods: Callable[..., Any] | property) -> None:
    """Make each function a method of :class:`Tensor` (each property a property of it),
    under its keyword's name.

    The layers above this module add the methods that need them this way:
    hooks (:mod:`plugrad.tensor_hooks`), ``backward`` (:mod:`plugrad.engine`),
    ``x[key] = v``, ``x += y`` and the other in-place methods
    (:mod:`plugrad.inplace`), ``new_zeros`` and the like (:mod:`plugrad.creation`),
    ``to`` and ``to_device`` (:mod:`plugrad.transfer`) and pickling
    (:mod:`plugrad.pickling`); this module imports none of them. An installed
    method is a class attribute like any other: calling it costs what a method
    written in the class costs.
    """
    for name, function in methods.items():
        if not isinstance(function, property):
            function.__name__ = name
            function.__qualname__ = f"Tensor.{name}"
        setattr(Tensor, name, function)


def install_function_methods(**functions: Callable[..., Any]) -> None:
    """Make each function (its first parameter the tensor) also a method of :class:`Tensor`.

    The method is a copy of the function (same code, defaults and signature), so
    that the function keeps its own name where :func:`install_methods` names the
    method ``Tensor.<name>``. A function wrapped to take PyTorch's ``out=`` gives
    the method it wraps: PyTorch's methods take no ``out=``.
    """
    for name, function in functions.items():
        function = inspect.unwrap(function)
        method = types.FunctionType(
            function.__code__,
            function.__globals__,
            name,
            function.__defaults__,
            function.__closure__,
        )
        method.__kwdefaults__ = function.__kwdefaults__
        method.__annotations__ = dict(function.__annotations__)
        method.__doc__ = function.__doc__
        install_methods(**{name: method})


def _wrap(array: Any, device: Device, requires_grad: bool, edge: Any) -> Tensor:
    """Make a Tensor without running ``__init__`` (the per-op path uses this)."""
    t = _object_new(Tensor)
    t._array = array
    t._device = device
    t._requires_grad = requires_grad
    t._edge = edge
    t._grad = None
    t._hooks = None
    t._counter = None
    return t


class Size(tuple):
    """A shape, as ``x.size()`` returns it: a tuple of ints that prints as PyTorch's does.

    Examples
    --------
    >>> import plugrad
    >>> s = plugrad.zeros(2, 3).size()
    >>> s, s == (2, 3), s.numel()
    (plugrad.Size([2, 3]), True, 6)
    """

    __slots__ = ()

    def __new__(cls, sizes: Any = ()) -> Size:
        values = []
        for size in sizes:
            try:
                values.append(operator.index(size))  # ints, and 0-d integer tensors
            except TypeError:
                raise ArgumentError(
                    f"Size takes ints, got {type(size).__name__} {size!r}"
                ) from None
        return super().__new__(cls, values)

    def __repr__(self) -> str:
        return f"plugrad.Size({list(self)!r})"

    # A slice, a sum and a product of sizes are sizes, as PyTorch's (x.shape[1:].numel()).
    def __getitem__(self, index: Any) -> Any:
        found = tuple.__getitem__(self, index)
        return Size(found) if isinstance(index, slice) else found

    def __add__(self, other: Any) -> Any:
        return Size(tuple(self) + tuple(other)) if isinstance(other, tuple) else NotImplemented

    def __radd__(self, other: Any) -> Any:
        return Size(tuple(other) + tuple(self)) if isinstance(other, tuple) else NotImplemented

    def __mul__(self, count: Any) -> Any:
        return Size(tuple(self) * count) if isinstance(count, int) else NotImplemented

    __rmul__ = __mul__

    def numel(self) -> int:
        """Return the number of elements of a tensor of this shape."""
        n = 1
        for d in self:
            n *= d
        return n


class _ElementCount(int):
    """``x.size``: the element count, an int, that PyTorch code may also call for the shape."""

    _shape: tuple[int, ...]

    def __call__(self, dim: int | None = None) -> Any:
        shape = self._shape
        if dim is None:
            return Size(shape)
        if isinstance(dim, bool) or not hasattr(type(dim), "__index__"):
            raise ArgumentError(f"size(dim) takes an int, got {type(dim).__name__}")
        dim = dim.__index__()  # (a NumPy int too)
        if not -len(shape) <= dim < len(shape):
            raise AxisError(
                f"size({dim}): dimension out of range for a tensor with {len(shape)} dimensions "
                f"(expected one of {-len(shape)}..{len(shape) - 1})"
            )
        return shape[dim]

    def __reduce__(self) -> tuple[Any, ...]:
        return (int, (int(self),))


#: PyTorch's tensor type names (``x.type()``), by dtype name.
_TENSOR_TYPE_NAMES = {
    "bool": "BoolTensor", "uint8": "ByteTensor", "int8": "CharTensor", "int16": "ShortTensor",
    "int32": "IntTensor", "int64": "LongTensor", "float16": "HalfTensor",
    "float32": "FloatTensor", "float64": "DoubleTensor", "complex64": "ComplexFloatTensor",
    "complex128": "ComplexDoubleTensor", "uint16": "UInt16Tensor", "uint32": "UInt32Tensor",
    "uint64": "UInt64Tensor",
}  # fmt: skip
