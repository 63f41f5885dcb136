"""Parametrizations (PyTorch's ``torch.nn.utils.parametrize``): a tensor of a module
computed from others at each access.

``register_parametrization(module, "weight", P())`` keeps the weight's value as
``module.parametrizations.weight.original`` (or ``original0``, ``original1``,
... where ``P.right_inverse`` gives several tensors) and makes ``module.weight``
the result of ``P()(original)`` at every read; assigning to it sets the
originals through ``right_inverse``. The originals are what an optimizer
trains and what ``state_dict()`` holds, under PyTorch's keys.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

from ...errors import (
    ArgumentError,
    DtypeError,
    InvalidArgumentError,
    SerializationError,
    ShapeError,
    TensorNameError,
)
from ...grad_mode import no_grad
from ...tensor import Tensor
from ..container import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Parameter

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]

#: While :func:`cached` is entered: (id(module), name) -> the value computed first.
_cache: dict[tuple[int, str], Tensor] = {}
_cache_depth = 0
#: (id(module), name) -> a tensor read in place of the parametrized one, without the
#: parametrization (``functional_call`` given the parametrized name, as PyTorch's).
_given: dict[tuple[int, str], Tensor] = {}


@contextlib.contextmanager
def given_instead(values: dict[tuple[Module, str], Tensor]) -> Iterator[None]:
    """Within the block, each parametrized tensor ``(module, name)`` reads as its value in
    ``values``, as it is: the parametrization is not applied to it."""
    keys = [(id(module), name) for module, name in values]
    previous = {key: _given[key] for key in keys if key in _given}
    _given.update(zip(keys, values.values()))
    try:
        yield
    finally:
        for key in keys:
            _given.pop(key, None)
        _given.update(previous)


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Within the block, compute each parametrized tensor once, at its first read.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import parametrize
    >>> layer = parametrize.register_parametrization(plugrad.nn.Linear(2, 2), "weight",
    ...                                                plugrad.nn.Identity())
    >>> with parametrize.cached():
    ...     layer.weight is layer.weight
    True
    """
    global _cache_depth
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache.clear()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor of a module, and the tensors they start from.

    ``original`` (or ``original0``, ``original1``, ... where the first
    parametrization's ``right_inverse`` gives several) is a parameter where
    the parametrized tensor was one, else a buffer.
    """

    def __init__(self, modules: list[Module], original: Tensor, unsafe: bool = False) -> None:
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = original.shape, original.dtype
        #: The shape of the tensor parametrized: what the originals were computed from.
        self._registered_shape = shape
        before = original.detach()  # (its values, put back if the parametrization is refused)
        with no_grad():
            value: Any = original
            for module in reversed(list(self)):
                value = _right_inverse(module, value)
        self.is_tensor = isinstance(value, Tensor)
        if self.is_tensor:
            if value.dtype != dtype:  # (its shape may change: the tensor is the same object)
                raise InvalidArgumentError(
                    f"a parametrization's right_inverse that gives one tensor may not change its "
                    f"dtype: {dtype} became {value.dtype}"
                )
            with no_grad():  # the same tensor object: what holds it (an optimizer) keeps it
                original.data = value.detach()
            _register(self, "original", original, original)
        else:
            values = _tensors(value)
            self.ntensors = len(values)
            for index, item in enumerate(values):
                _register(self, f"original{index}", item.detach(), original)
        if not unsafe:
            try:
                _check_same("the parametrized tensor", self(), shape, dtype)
            except ValueError:
                with no_grad():
                    original.data = before
                raise

    def right_inverse(self, value: Tensor) -> None:
        """Set the originals so that the parametrized tensor is ``value``.

        What the parametrizations' ``right_inverse`` give is checked first (a tensor, or
        as many as there are originals, each of its original's dtype): a refused value
        leaves every original as it was.
        """
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise InvalidArgumentError(
                        f"parametrization {type(module).__name__} does not implement "
                        "right_inverse, so the parametrized tensor cannot be assigned"
                    )
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ArgumentError(
                        "the parametrizations' right_inverse must give one tensor here, as at "
                        f"registration, got {type(value).__name__}"
                    )
                originals = [self.original]
                values = [value]
            else:
                values = list(_tensors(value))
                if len(values) != self.ntensors:
                    raise InvalidArgumentError(
                        f"the parametrizations' right_inverse must give {self.ntensors} tensors "
                        f"here, as at registration, got {len(values)}; nothing was assigned"
                    )
                originals = [getattr(self, f"original{i}") for i in range(self.ntensors)]
            for index, (original, item) in enumerate(zip(originals, values)):
                if item.dtype != original.dtype:
                    name = "original" if self.is_tensor else f"original{index}"
                    raise DtypeError(
                        f"the parametrizations' right_inverse gave a {item.dtype.name} tensor "
                        f"for {name}, which is {original.dtype.name}; assign a value of the "
                        "parametrized tensor's dtype. Nothing was assigned"
                    )
            for original, item in zip(originals, values):
                original.data = item.detach()

    def forward(self) -> Tensor:
        modules = list(self)
        if self.is_tensor:
            value = modules[0](self.original)
        else:
            value = modules[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in modules[1:]:
            value = module(value)
        return value


def _right_inverse(module: Module, value: Any) -> Any:
    """``module.right_inverse(value)`` at registration; the identity where it has none or it
    raises NotImplementedError (PyTorch's reading)."""
    inverse = getattr(module, "right_inverse", None)
    if inverse is None:
        return value
    try:
        return inverse(value)
    except NotImplementedError:
        return value


def _tensors(value: Any) -> tuple[Tensor, ...]:
    """What a right_inverse gave for several originals: a sequence of tensors, or refused."""
    if not isinstance(value, (tuple, list)):
        raise ArgumentError(
            "a parametrization's right_inverse must give a tensor or a sequence of tensors, "
            f"got {type(value).__name__}"
        )
    if not all(isinstance(v, Tensor) for v in value):
        raise ArgumentError(
            "a parametrization's right_inverse must give a tensor or a sequence of "
            f"tensors, got {[type(v).__name__ for v in value]}"
        )
    return tuple(value)


def _check_same(what: str, value: Any, shape: tuple[int, ...], dtype: Any) -> None:
    """Raise unless ``value`` is a tensor of ``shape`` and ``dtype`` (PyTorch's checks, which
    ``unsafe=True`` skips)."""
    if not isinstance(value, Tensor):
        raise InvalidArgumentError(f"{what} must be a Tensor, got {type(value).__name__}")
    if value.shape != shape or value.dtype != dtype:
        raise InvalidArgumentError(
            f"{what} must keep the tensor's shape {shape} and dtype {dtype}, got {value.shape} "
            f"and {value.dtype}; pass unsafe=True to register a parametrization that changes them"
        )


def _register(owner: Module, name: str, value: Tensor, like: Tensor) -> None:
    """``value`` as ``owner``'s parameter ``name`` where ``like`` is a parameter, else a buffer."""
    if isinstance(like, Parameter):
        parameter = value if isinstance(value, Parameter) else Parameter(value, like.requires_grad)
        owner.register_parameter(name, parameter)
    else:
        owner.register_buffer(name, value)


def _refuse_pickling(self: Module) -> Any:
    """A parametrized module's class is made for it alone, so pickle cannot find it again."""
    raise SerializationError(
        f"a parametrized module ({type(self).__name__}) is saved through its state_dict(), "
        "not pickled: save module.state_dict(), and load it into a module parametrized the "
        "same way (or call remove_parametrizations() first)"
    )


def _deep_copy(self: Module, memo: dict[int, Any]) -> Module:
    """``copy.deepcopy`` of a parametrized module, which pickling refuses: its state copied
    into a new object of its class."""
    copied = object.__new__(type(self))
    memo[id(self)] = copied
    base: Any = type(self).__bases__[0]  # (the module's own class: Module.__getstate__)
    state = base.__getstate__(self)
    copied.__dict__.update(copy.deepcopy(state, memo))
    return copied


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Make ``module.<tensor_name>`` computed as ``parametrization(original)`` at each read.

    A second parametrization of the same tensor is applied after the first.
    The original is set to the parametrizations' ``right_inverse`` of the
    tensor, where they have one (one that raises ``NotImplementedError`` is
    read as the identity, as in PyTorch).
    Returns ``module``, whose class becomes a subclass ``Parametrized<Name>``
    holding the property, as PyTorch's.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import parametrize
    >>> class Symmetric(plugrad.nn.Module):
    ...     def forward(self, x):
    ...         return x.triu() + x.triu(1).mT
    >>> layer = parametrize.register_parametrization(plugrad.nn.Linear(3, 3), "weight", Symmetric())
    >>> bool((layer.weight == layer.weight.mT).all())
    True
    >>> sorted(layer.state_dict())
    ['bias', 'parametrizations.weight.original']
    """
    if not isinstance(module, Module) or not isinstance(parametrization, Module):
        raise ArgumentError(
            "register_parametrization() takes a Module and a Module that computes the tensor, "
            f"got {type(module).__name__} and {type(parametrization).__name__}"
        )
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        parametrizations = module.parametrizations[tensor_name]
        if not unsafe:
            current = getattr(module, tensor_name)
            result = parametrization(current)
            _check_same("the new parametrization's output", result, current.shape, current.dtype)
            if hasattr(parametrization, "right_inverse"):
                try:
                    back = parametrization.right_inverse(result)
                except NotImplementedError:
                    pass  # (the identity, as at the first registration)
                else:
                    _check_same("its right_inverse", back, current.shape, current.dtype)
        parametrizations.append(parametrization)
        parametrizations.unsafe |= unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise InvalidArgumentError(
            f"register_parametrization(): {type(module).__name__} has no parameter or buffer "
            f"named {tensor_name!r} (nor a parametrized tensor of that name)"
        )
    original = getattr(module, tensor_name)
    if original is None:
        raise InvalidArgumentError(
            f"register_parametrization(): {type(module).__name__}.{tensor_name} is None"
        )
    parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        cls = type(module)
        methods = {"__getstate__": _refuse_pickling, "__deepcopy__": _deep_copy}
        module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), methods)
        module.parametrizations = ModuleDict()
    setattr(type(module), tensor_name, _parametrized_property(tensor_name))
    module.parametrizations[tensor_name] = parametrizations
    return module


def _parametrized_property(name: str) -> property:
    def get(module: Module) -> Tensor:
        if _given:
            value = _given.get((id(module), name))
            if value is not None:
                return value
        if _cache_depth:
            key = (id(module), name)
            value = _cache.get(key)
            if value is None:
                value = _cache[key] = module.parametrizations[name]()
            return value
        return module.parametrizations[name]()

    def set_(module: Module, value: Tensor) -> None:
        module.parametrizations[name].right_inverse(value)

    return property(get, set_)


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (of ``tensor_name``, if given)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    return tensor_name is None or tensor_name in parametrizations


def type_before_parametrizations(module: Module) -> type:
    """The class ``module`` had before its first parametrization (its class if it has none)."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(
    from_module: Module, to_module: Module, tensor_name: str | None = None
) -> Module:
    """Give ``to_module`` the parametrizations of ``from_module`` and their originals.

    For ``tensor_name``, or every parametrized tensor of ``from_module`` if None:
    a tensor ``to_module`` lacks is first made, a parameter holding the
    parametrized value; then each of ``from_module``'s parametrizations of it is
    registered on ``to_module`` (the same module objects: they are shared), and
    the originals (``original``, or ``original0``, ``original1``, ...) become
    ``from_module``'s own, shared too, so training either trains both. Does
    nothing where ``from_module`` is not parametrized. As PyTorch's.

    Parameters
    ----------
    from_module : Module
        The parametrized module.
    to_module : Module
        The module to parametrize likewise.
    tensor_name : str, optional
        The one tensor to transfer.

    Returns
    -------
    Module
        ``to_module`` (whose class becomes ``Parametrized<Name>``).

    Raises
    ------
    TensorNameError
        If ``from_module`` has no parametrization of ``tensor_name`` (a
        ``KeyError``, as PyTorch's).
    ShapeError
        If ``to_module``'s parameter or buffer of that name has another shape
        than ``from_module``'s had when parametrized (PyTorch goes on, and
        leaves ``to_module`` with ``from_module``'s shapes). Both are checked
        before anything changes.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils import parametrize
    >>> class Symmetric(plugrad.nn.Module):
    ...     def forward(self, x):
    ...         return x.triu() + x.triu(1).mT
    >>> a = parametrize.register_parametrization(plugrad.nn.Linear(3, 3), "weight", Symmetric())
    >>> b = parametrize.transfer_parametrizations_and_params(a, plugrad.nn.Linear(3, 3))
    >>> type(b).__name__, bool((b.weight == a.weight).all())
    ('ParametrizedLinear', True)
    >>> b.parametrizations.weight.original is a.parametrizations.weight.original
    True
    """
    if not isinstance(from_module, Module) or not isinstance(to_module, Module):
        raise ArgumentError(
            "transfer_parametrizations_and_params() takes two Modules, got "
            f"{type(from_module).__name__} and {type(to_module).__name__}"
        )
    if not is_parametrized(from_module):
        return to_module
    if tensor_name is None:
        names = list(from_module.parametrizations)
    elif is_parametrized(from_module, tensor_name):
        names = [tensor_name]
    else:  # (a KeyError too, as PyTorch's)
        raise TensorNameError(
            f"transfer_parametrizations_and_params(): {type(from_module).__name__} has no "
            f"parametrization of {tensor_name!r}; it has "
            f"{', '.join(map(repr, from_module.parametrizations))}"
        )
    for name in names:
        # The originals are computed from to_module's tensor before they are replaced: it
        # must have the shape from_module's had (compared without computing the parametrized
        # tensor, which moves spectral_norm's power method in training).
        shape = from_module.parametrizations[name]._registered_shape
        present = to_module._parameters.get(name, to_module._buffers.get(name))
        if present is not None and present.shape != shape:
            raise ShapeError(
                f"transfer_parametrizations_and_params(): {type(to_module).__name__}.{name} has "
                f"shape {present.shape}, where {type(from_module).__name__}'s had {shape} when "
                "parametrized; transfer between modules of the same shapes. Nothing was changed"
            )
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        # The originals themselves, not copies: the two modules train them together.
        if source.is_tensor:
            target.original = source.original
        else:
            for index in range(source.ntensors):
                key = f"original{index}"
                setattr(target, key, getattr(source, key))
    return to_module


def remove_parametrizations(
    module: Module, tensor_name: str, leave_parametrized: bool = True
) -> Module:
    """Make ``module.<tensor_name>`` a plain parameter (or buffer) again.

    With ``leave_parametrized`` it holds the parametrized value; without, the
    original (possible only where the original is one tensor). A tensor
    parametrized from several originals becomes a parameter where one of them
    requires grad, else a buffer, as in PyTorch.
    """
    if not is_parametrized(module, tensor_name):
        raise InvalidArgumentError(
            f"remove_parametrizations(): {type(module).__name__} has no parametrization of "
            f"{tensor_name!r}"
        )
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                original.data = getattr(module, tensor_name).detach()
    else:
        if not leave_parametrized:
            raise InvalidArgumentError(
                "remove_parametrizations(leave_parametrized=False) of a tensor parametrized "
                "from several tensors: there is no one original to leave"
            )
        # A parameter where an original requires grad, else a buffer (PyTorch's reading).
        value = getattr(module, tensor_name)
        original = Parameter(value.detach(), True) if value.requires_grad else value.detach()
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module) or not len(module.parametrizations):
        del module.parametrizations
        module.__class__ = type(module).__bases__[0]
    return module
