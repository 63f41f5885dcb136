"""``Parameter``: a leaf Tensor that a :class:`~plugrad.nn.Module` registers as learnable."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import dtypes as _dtypes
from ..backend import Device
from ..creation import empty
from ..tensor import Tensor

if TYPE_CHECKING:
    from .module import Module

__all__ = ["Parameter"]


class Parameter(Tensor):
    """A Tensor that is a module parameter: a leaf that requires grad by default.

    Assigning a Parameter to an attribute of a :class:`~plugrad.nn.Module`
    registers it, so it appears in ``parameters()`` and ``state_dict()``.
    ``Parameter(t)`` shares ``t``'s memory. Results of operations on a
    Parameter are plain Tensors.

    Parameters
    ----------
    data : Tensor, optional
        The values (an empty float tensor if omitted).
    requires_grad : bool
        Whether gradients are computed for it.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.nn.Parameter(plugrad.zeros(2))
    >>> w
    Parameter containing:
    tensor([0., 0.], requires_grad=True)
    >>> isinstance(w, plugrad.Tensor), w.is_leaf
    (True, True)
    >>> type(w * 2).__name__
    'Tensor'
    """

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = empty((0,))
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter() takes a Tensor, got {type(data).__name__}; make one with "
                "plugrad.tensor(...) or plugrad.asarray(...)"
            )
        parameter = object.__new__(cls)
        parameter._array = data._array
        parameter._device = data._device
        parameter._requires_grad = False
        parameter._edge = None
        parameter._grad = None
        parameter._hooks = None
        # Shares the memory, so it shares the version counter.
        parameter._counter = data._shared_counter()
        parameter.requires_grad = requires_grad
        return parameter

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        """Everything happens in ``__new__`` (Tensor itself has no constructor)."""

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


def add_weight_and_bias(
    module: Module,
    weight_shape: tuple[int, ...],
    bias_shape: tuple[int, ...] | None,
    *,
    device: Device | str | None,
    dtype: _dtypes.DType | None,
    backend: str | None,
) -> None:
    """Give ``module`` a ``weight`` and a ``bias`` (``bias_shape=None``: none), not yet
    initialised, on the device and with the dtype a layer's constructor was given."""
    module.weight = Parameter(empty(weight_shape, device=device, dtype=dtype, backend=backend))
    if bias_shape is None:
        module.register_parameter("bias", None)
    else:
        module.bias = Parameter(empty(bias_shape, device=device, dtype=dtype, backend=backend))
