"""Lazy layers: ``LazyLinear``, ``LazyConv2d``, ... infer their input size at the first call.

A lazy layer is made without the size of its input (``in_features``,
``in_channels``, ``num_features``); its parameters are
:class:`UninitializedParameter` objects until the first forward pass reads that
size from the input, gives them their shapes and initialises them as the
ordinary layer would. The layer then *becomes* the ordinary one
(``type(layer) is Linear``), and its parameters ordinary Parameters -- the same
objects, so an optimizer made before the first call keeps working. Loading a
state dict into a lazy layer also gives its parameters their shapes.

Until then, an uninitialized parameter knows its dtype and device but has no
shape or values: reading them (``p.shape``, ``p.sum()``, ``module.to(...)``)
raises :class:`~plugrad.errors.UninitializedParameterError`, which says to run
a forward pass first.

Examples
--------
>>> import plugrad
>>> from plugrad import nn
>>> model = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(2))
>>> model[0]
LazyLinear(in_features=0, out_features=8, bias=True)
>>> model(plugrad.ones((4, 5))).shape  # the first call: in_features is 5
(4, 2)
>>> model[0]
Linear(in_features=5, out_features=8, bias=True)
>>> model[0].weight.shape
(8, 5)
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, ClassVar

from ..creation import empty
from ..errors import ArgumentError, SerializationError, ShapeError, UninitializedParameterError
from ..grad_mode import no_grad
from ..pickling import unpickled_device
from ..tensor import Tensor, _object_new
from .conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from .linear import Linear
from .module import Module, ParameterPlacement
from .module_state import active_plan
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _InstanceNorm,
)
from .parameter import Parameter

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from typing_extensions import Unpack

    from ..backend import Device
    from ..dtypes import DType

__all__ = [
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
    "LazyLinear",
    "LazyModuleMixin",
    "UninitializedBuffer",
    "UninitializedParameter",
]


class _NoValuesYet:
    """The array of an uninitialized parameter: every use of it raises, saying what to do."""

    __slots__ = ("_kind",)

    def __init__(self, kind: str) -> None:
        self._kind = kind

    def __getattr__(self, name: str) -> Any:
        raise UninitializedParameterError(
            f"this {self._kind} of a lazy layer has no shape or values yet (it was read for "
            f"its {name!r}); run the model once on an example input (a dry run), or load a "
            "state dict into it, before using its parameters"
        )

    def __repr__(self) -> str:
        return f"<no values yet: an uninitialized {self._kind}>"


class _Uninitialized:
    """What uninitialized parameters and buffers share: a dtype and a device, no shape."""

    #: The class the tensor becomes once :meth:`materialize` gives it values.
    cls_to_become: ClassVar[type[Tensor]]
    _kind: ClassVar[str]
    _array: Any
    _device: Device

    #: ``requires_grad`` unless told: a parameter's is True, a buffer's False.
    _requires_grad_by_default: ClassVar[bool]

    def __new__(
        cls, requires_grad: bool | None = None, **placement: Unpack[ParameterPlacement]
    ) -> Any:
        if requires_grad is None:
            requires_grad = cls._requires_grad_by_default
        # A tensor of no elements settles the device and dtype as the layer's own would.
        placeholder = empty((0,), **placement)
        tensor: Any = _object_new(cls)
        tensor._array = _NoValuesYet(cls._kind)
        tensor._device = placeholder._device
        tensor._requires_grad = requires_grad
        tensor._edge = tensor._grad = tensor._hooks = tensor._counter = None
        vars(tensor)["_dtype_to_be"] = placeholder.dtype
        return tensor

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Everything happens in ``__new__``."""

    @property
    def dtype(self) -> DType:
        """The dtype the values will have."""
        dtype: DType = vars(self)["_dtype_to_be"]
        return dtype

    @property
    def device(self) -> Device:
        """The device the values will be on."""
        return self._device

    def materialize(
        self, shape: int | Sequence[int], device: Any = None, dtype: DType | None = None
    ) -> None:
        """Give the tensor values of ``shape`` (not initialised: ``empty``), in place.

        It becomes an ordinary :class:`~plugrad.nn.Parameter` (or Tensor, for a
        buffer), the same object; ``device`` and ``dtype`` default to those it was
        made with.
        """
        values = empty(
            shape if isinstance(shape, int) else tuple(shape),
            device=self._device if device is None else device,
            dtype=self.dtype if dtype is None else dtype,
        )
        tensor: Any = self
        del vars(tensor)["_dtype_to_be"]
        tensor._array = values._array
        tensor._device = values._device
        tensor.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def detach(self) -> Any:
        """Itself: there are no values to share (a state dict holds the tensor, as PyTorch's)."""
        return self

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        """``pickle``: the class, device, dtype and ``requires_grad`` (it has no values);
        the unpickled tensor is uninitialized too, and gets its shape as this one would.

        Examples
        --------
        >>> import pickle, plugrad
        >>> layer = pickle.loads(pickle.dumps(plugrad.nn.LazyLinear(3)))
        >>> layer.weight
        <UninitializedParameter>
        >>> layer(plugrad.ones((2, 4))).shape
        (2, 3)
        """
        tensor: Any = self
        arguments = (type(self), tensor._device.name, self.dtype, tensor._requires_grad)
        # Those the user set (p.no_weight_decay = True), as an ordinary tensor's.
        attributes = {k: v for k, v in vars(self).items() if k != "_dtype_to_be"}
        if attributes:
            return _rebuild_uninitialized, arguments, attributes
        return _rebuild_uninitialized, arguments

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        original: Any = self
        copied: Any = _object_new(type(self))
        copied.__dict__.update(vars(self))
        copied._array = _NoValuesYet(self._kind)
        copied._device = self._device
        copied._requires_grad = original._requires_grad
        copied._edge = copied._grad = copied._hooks = copied._counter = None
        memo[id(self)] = copied
        return copied


def _rebuild_uninitialized(
    cls: type[Any], device_name: str, dtype: DType, requires_grad: bool
) -> Any:
    """An uninitialized tensor unpickled (see ``_Uninitialized.__reduce_ex__``)."""
    if not (isinstance(cls, type) and issubclass(cls, _Uninitialized)):
        raise SerializationError(
            f"a pickled uninitialized tensor names {cls!r}, which is not an uninitialized "
            "tensor class"
        )
    return cls(bool(requires_grad), device=unpickled_device(device_name), dtype=dtype)


class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter of a lazy layer before the first call: a dtype and a device, no shape.

    :meth:`materialize` makes it an ordinary Parameter (the same object).

    Examples
    --------
    >>> import plugrad
    >>> p = plugrad.nn.UninitializedParameter(dtype=plugrad.float64)
    >>> p, p.dtype, p.requires_grad
    (<UninitializedParameter>, plugrad.float64, True)
    >>> p.materialize((2, 3))
    >>> type(p).__name__, p.shape
    ('Parameter', (2, 3))
    """

    __slots__ = ()
    cls_to_become = Parameter
    _kind = "parameter"
    _requires_grad_by_default = True


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer of a lazy layer (``running_mean``, ...) before the first call.

    :meth:`materialize` makes it an ordinary Tensor (the same object).
    """

    __slots__ = ()
    cls_to_become = Tensor
    _kind = "buffer"
    _requires_grad_by_default = False


def is_uninitialized(value: Any) -> bool:
    """Whether ``value`` is a lazy layer's parameter or buffer that has no shape yet."""
    return isinstance(value, _Uninitialized)


class LazyModuleMixin:
    """What makes a layer lazy: its first call (or a loaded state dict) shapes its parameters.

    A lazy layer derives from this mixin and from the layer it becomes
    (``cls_to_become``), makes :class:`UninitializedParameter` (and
    :class:`UninitializedBuffer`) objects in its constructor, and defines
    :meth:`initialize_parameters`, which reads the input's size, calls
    ``materialize`` on each and initialises them.
    """

    #: The class the layer becomes once every parameter has a shape (``None``: it stays).
    cls_to_become: ClassVar[type[Module] | None] = None

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this layer (not of its children) has no shape."""
        module: Any = self
        held = (*module._parameters.values(), *module._buffers.values())
        return any(is_uninitialized(tensor) for tensor in held)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Shape and initialise the parameters from the arguments of the first call."""
        raise NotImplementedError(
            f"{type(self).__name__} defines no initialize_parameters(self, input); a lazy "
            "layer gives its parameters their shapes there"
        )

    def reset_parameters(self) -> None:
        """Nothing to initialise before the first call (which initialises the parameters as
        the ordinary layer does); the layer's constructor calls it on stand-ins."""

    def _shape(self, shapes: Mapping[str, tuple[int, ...]]) -> None:
        """Materialize the named uninitialized tensors, then initialise them as the ordinary
        layer does."""
        for name, shape in shapes.items():
            tensor: Any = getattr(self, name, None)
            if is_uninitialized(tensor):
                tensor.materialize(shape)
        if self.cls_to_become is not None:
            self.cls_to_become.reset_parameters(self)  # type: ignore[attr-defined]

    def _become(self) -> None:
        """Once every parameter has a shape: become the ordinary layer."""
        if self.cls_to_become is not None and not self.has_uninitialized_params():
            self.__class__ = self.cls_to_become  # type: ignore[assignment]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.has_uninitialized_params():
            with no_grad():
                self.initialize_parameters(*args, **kwargs)
            self._become()  # no longer a LazyModuleMixin: super() would not find the class
        return Module.__call__(self, *args, **kwargs)  # type: ignore[arg-type]

    def _load_from_state_dict(self, state_dict: Mapping[str, Any], prefix: str, *rest: Any) -> None:
        """Give uninitialized parameters and buffers the shapes of the loaded values first
        (the other arguments are :meth:`Module._load_from_state_dict`'s).

        A load that fails somewhere puts everything back (:mod:`plugrad.nn.module_state`):
        this layer, its class and its parameters' lack of shapes included.
        """
        module: Any = self
        plan = active_plan()
        if plan is not None:
            plan.undo.append(_restoring_layer(module))
        for table in (module._parameters, module._buffers):
            for name, tensor in table.items():
                shape = getattr(state_dict.get(prefix + name), "shape", None)
                if is_uninitialized(tensor) and shape is not None:  # a tensor or an array
                    if plan is not None:
                        plan.undo.append(_restoring_uninitialized(tensor))
                    tensor.materialize(tuple(shape))
        if not self.has_uninitialized_params():
            self._sizes_from_parameters()
        super()._load_from_state_dict(state_dict, prefix, *rest)  # type: ignore[misc]
        self._become()

    def _sizes_from_parameters(self) -> None:
        """Set the input size the layer's shaped parameters imply (after a state dict load)."""


def _restoring_layer(module: Any) -> Callable[[], None]:
    """What puts back a lazy layer's class and attributes (its sizes) as they are now."""
    cls, attributes = type(module), dict(vars(module))

    def restore() -> None:
        module.__class__ = cls
        vars(module).clear()
        vars(module).update(attributes)

    return restore


def _restoring_uninitialized(tensor: Any) -> Callable[[], None]:
    """What makes a tensor about to be materialized uninitialized again."""
    cls, attributes, device = type(tensor), dict(vars(tensor)), tensor._device

    def restore() -> None:
        tensor.__class__ = cls
        tensor._array = _NoValuesYet(cls._kind)
        tensor._device = device
        vars(tensor).update(attributes)

    return restore


def _materialize_all(module: Module, shapes: Mapping[str, tuple[int, ...]]) -> None:
    for name, shape in shapes.items():
        tensor = getattr(module, name)
        if is_uninitialized(tensor):
            tensor.materialize(shape)


def _input_size(layer: str, input: Any, ndims: tuple[int, ...], batched_axis: bool) -> int:
    """The size of the input's feature (channel) axis: axis 1, or, where ``ndims`` also
    accepts an unbatched input (one axis fewer), the axis after the batch axis if any."""
    if not isinstance(input, Tensor):
        raise ArgumentError(
            f"{layer} infers its size from a Tensor input, got {type(input).__name__}"
        )
    if input.ndim not in ndims:
        expected = " or ".join(f"{n}-d" for n in ndims)
        raise ShapeError(
            f"{layer}: expected a {expected} input to infer its size from, got shape {input.shape}"
        )
    axis = 1 if batched_axis else input.ndim - min(ndims)
    return int(input.shape[axis])


class _LazyLinear(LazyModuleMixin):
    in_features: int
    out_features: int
    weight: Any

    def initialize_parameters(self, input: Any, *args: Any, **kwargs: Any) -> None:
        if not isinstance(input, Tensor) or input.ndim < 1:
            raise ShapeError(
                f"LazyLinear infers in_features from the last axis of a tensor input, got "
                f"{getattr(input, 'shape', type(input).__name__)}"
            )
        self.in_features = int(input.shape[-1])
        weight = (self.out_features, self.in_features)
        self._shape({"weight": weight, "bias": (self.out_features,)})

    def _sizes_from_parameters(self) -> None:
        self.in_features = int(self.weight.shape[1])


class _LazyConv(LazyModuleMixin):
    in_channels: int
    out_channels: int
    groups: int
    kernel_size: tuple[int, ...]
    transposed: bool
    weight: Any
    _nd: int

    def initialize_parameters(self, input: Any, *args: Any, **kwargs: Any) -> None:
        layer, n = type(self).__name__, self._nd
        in_channels = _input_size(layer, input, (n + 1, n + 2), batched_axis=False)
        if in_channels % self.groups:
            raise ShapeError(
                f"{layer}: groups={self.groups} must divide the input's {in_channels} channels"
            )
        self.in_channels = in_channels
        channels = (self.out_channels, in_channels // self.groups)
        if self.transposed:
            channels = (in_channels, self.out_channels // self.groups)
        self._shape({"weight": (*channels, *self.kernel_size), "bias": (self.out_channels,)})

    def _sizes_from_parameters(self) -> None:
        shape = self.weight.shape
        self.in_channels = int(shape[0] if self.transposed else shape[1] * self.groups)


class _LazyNorm(LazyModuleMixin):
    num_features: int
    _input_ndims: tuple[int, ...]

    def initialize_parameters(self, input: Any, *args: Any, **kwargs: Any) -> None:
        batch_axis_only = not isinstance(self, _InstanceNorm)  # instance norms take unbatched
        layer = type(self).__name__
        self.num_features = _input_size(layer, input, self._input_ndims, batch_axis_only)
        shape = (self.num_features,)
        self._shape(dict.fromkeys(("weight", "bias", "running_mean", "running_var"), shape))

    def _sizes_from_parameters(self) -> None:
        for name in ("weight", "running_mean"):
            tensor = getattr(self, name)
            if tensor is not None:
                self.num_features = int(tensor.shape[0])
                return


def _lazy_form(
    family: type[LazyModuleMixin],
    base: type[Module],
    size: str,
    reads: str,
    defaults: Mapping[str, Any] | None = None,
) -> type[Any]:
    """``base`` made lazy: its constructor without the argument ``size``, read from the
    first input (``reads`` says where), and with PyTorch's lazy ``defaults``."""
    signature = inspect.signature(base.__init__)
    parameters = [
        p.replace(default=defaults[p.name]) if defaults and p.name in defaults else p
        for p in signature.parameters.values()
        if p.name != size
    ]
    lazy_signature = signature.replace(parameters=parameters)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = lazy_signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        del arguments["self"]
        base.__init__(self, **{size: 0}, **arguments)
        _stand_ins_made_lazy(self)

    __init__.__signature__ = lazy_signature  # type: ignore[attr-defined]
    name = f"Lazy{base.__name__}"
    namespace = {
        "__init__": __init__,
        "__doc__": f":class:`~plugrad.nn.{base.__name__}` whose ``{size}`` is {reads} "
        f"of its first input; the other arguments are {base.__name__}'s.",
        "__module__": __name__,
        "__qualname__": name,
        "cls_to_become": base,
    }
    return type(name, (family, base), namespace)


def _stand_ins_made_lazy(module: Module) -> None:
    """The parameters and buffers the layer's constructor made for an input size of 0,
    replaced by uninitialized ones of the same dtype, device and ``requires_grad``."""
    for name in ("weight", "bias", "running_mean", "running_var"):
        tensor = getattr(module, name, None)
        if tensor is not None:
            kind = UninitializedParameter if isinstance(tensor, Parameter) else UninitializedBuffer
            lazy = kind(tensor.requires_grad, device=tensor.device, dtype=tensor.dtype)
            setattr(module, name, lazy)


_LAST_AXIS = "the last axis"
_CHANNELS = "axis 1 (axis 0 of an unbatched input)"
#: PyTorch's lazy normalization layers learn an affine map and track running statistics
#: by default, instance norms too.
_NORM_DEFAULTS = {"affine": True, "track_running_stats": True}

LazyLinear = _lazy_form(_LazyLinear, Linear, "in_features", _LAST_AXIS)
LazyConv1d = _lazy_form(_LazyConv, Conv1d, "in_channels", _CHANNELS)
LazyConv2d = _lazy_form(_LazyConv, Conv2d, "in_channels", _CHANNELS)
LazyConv3d = _lazy_form(_LazyConv, Conv3d, "in_channels", _CHANNELS)
LazyConvTranspose1d = _lazy_form(_LazyConv, ConvTranspose1d, "in_channels", _CHANNELS)
LazyConvTranspose2d = _lazy_form(_LazyConv, ConvTranspose2d, "in_channels", _CHANNELS)
LazyConvTranspose3d = _lazy_form(_LazyConv, ConvTranspose3d, "in_channels", _CHANNELS)
LazyBatchNorm1d = _lazy_form(_LazyNorm, BatchNorm1d, "num_features", "axis 1", _NORM_DEFAULTS)
LazyBatchNorm2d = _lazy_form(_LazyNorm, BatchNorm2d, "num_features", "axis 1", _NORM_DEFAULTS)
LazyBatchNorm3d = _lazy_form(_LazyNorm, BatchNorm3d, "num_features", "axis 1", _NORM_DEFAULTS)
LazyInstanceNorm1d = _lazy_form(
    _LazyNorm, InstanceNorm1d, "num_features", _CHANNELS, _NORM_DEFAULTS
)
LazyInstanceNorm2d = _lazy_form(
    _LazyNorm, InstanceNorm2d, "num_features", _CHANNELS, _NORM_DEFAULTS
)
LazyInstanceNorm3d = _lazy_form(
    _LazyNorm, InstanceNorm3d, "num_features", _CHANNELS, _NORM_DEFAULTS
)
