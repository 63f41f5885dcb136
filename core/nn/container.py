"""Containers: ``Sequential`` chains modules, ``ModuleList`` and ``ModuleDict`` hold them,
``ParameterList`` and ``ParameterDict`` hold parameters."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from ..errors import ArgumentError, IndexOutOfRangeError, InvalidArgumentError
from ..tensor import Tensor
from .module import Module
from .module_hooks import registered, registration_hooks
from .parameter import Parameter

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]

_V = TypeVar("_V")


def _position(index: Any, length: int, kind: str, assigned: bool = False) -> int:
    """``index`` as a position in ``0 .. length - 1``; ``assigned``: for an assignment,
    which takes no slice (as PyTorch's)."""
    if assigned and isinstance(index, slice):
        raise ArgumentError(
            f"{kind} cannot assign to a slice (PyTorch's cannot either); assign each "
            f"position (m[i] = value), or build a new {kind} from the values"
        )
    if not isinstance(index, int) or isinstance(index, bool):
        if isinstance(index, bool) or not hasattr(type(index), "__index__"):
            accepted = "ints" if assigned else "ints or slices"
            raise ArgumentError(f"{kind} indices must be {accepted}, not {type(index).__name__}")
        index = operator.index(index)  # a NumPy integer, as PyTorch takes it
    if not -length <= index < length:
        raise IndexOutOfRangeError(f"index {index} is out of range for a {kind} of length {length}")
    return index % length


class _Listed(Module, Generic[_V]):
    """What ``ModuleList`` and ``ParameterList`` share: made from an iterable (given to
    ``extend``), indexed, sliced and iterated like a list of ``_items()``."""

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def _items(self) -> list[_V]:
        raise NotImplementedError

    def extend(self, values: Iterable[Any]) -> Self:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> _V: ...
    @overload
    def __getitem__(self, index: slice) -> Self: ...
    def __getitem__(self, index: int | slice) -> _V | Self:
        items = self._items()
        if isinstance(index, slice):
            return type(self)(items[index])
        return items[_position(index, len(items), type(self).__name__)]

    def __iter__(self) -> Iterator[_V]:
        return iter(self._items())


class ModuleList(_Listed[Module]):
    """A list of modules, registered as submodules ``"0"``, ``"1"``, ...

    It has no ``forward``: iterate over it in your own.

    Examples
    --------
    >>> import plugrad
    >>> layers = plugrad.nn.ModuleList([plugrad.nn.Linear(4, 4) for _ in range(3)])
    >>> len(layers), len(list(layers.parameters()))
    (3, 6)

    Runs of modules that print alike print once, with their count:

    >>> layers.append(plugrad.nn.ReLU())
    ModuleList(
      (0-2): 3 x Linear(in_features=4, out_features=4, bias=True)
      (3): ReLU()
    )
    """

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__(modules)

    def __repr__(self) -> str:
        items = [repr(module).replace("\n", "\n  ") for module in self._modules.values()]
        if not items:
            return f"{type(self).__name__}()"
        lines, start = [], 0
        for end in range(1, len(items) + 1):
            if end < len(items) and items[end] == items[start]:
                continue
            if end - start == 1:
                lines.append(f"({start}): {items[start]}")
            else:
                lines.append(f"({start}-{end - 1}): {end - start} x {items[start]}")
            start = end
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"

    def _items(self) -> list[Module]:
        return list(self._modules.values())  # type: ignore[arg-type]

    def _renumber(self, modules: list[Module], added: int | None = None) -> None:
        """Hold ``modules`` as ``"0"``, ``"1"``, ...; ``added``: the position of the one among
        them not held before, checked (and shown to the registration hooks, as PyTorch shows
        an assigned one) before anything changes: a refusal leaves the list as it was."""
        if added is not None:
            module = modules[added]
            if module is not None and not isinstance(module, Module):
                raise ArgumentError(
                    f"{type(module).__name__} is not a Module; cannot add it as {str(added)!r}"
                )
            if registration_hooks["module"]:
                modules[added] = registered("module", self, str(added), module)
        self._modules.clear()
        self._modules.update((str(index), module) for index, module in enumerate(modules))

    def __setitem__(self, index: int, module: Module) -> None:
        items = self._items()
        position = _position(index, len(items), type(self).__name__, assigned=True)
        items[position] = module
        self._renumber(items, added=position)

    def __delitem__(self, index: int | slice) -> None:
        items = self._items()
        if isinstance(index, slice):
            del items[index]
        else:
            del items[_position(index, len(items), type(self).__name__)]
        self._renumber(items)

    def __len__(self) -> int:
        return len(self._modules)

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end; return self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Add each of ``modules`` at the end; return self."""
        if not isinstance(modules, Iterable):
            raise ArgumentError(
                f"{type(self).__name__}.extend() takes an iterable of modules, got "
                f"{type(modules).__name__}; to add one module, use append()"
            )
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Put ``module`` before position ``index`` (as ``list.insert``); renumber the rest."""
        items = self._items()
        items.insert(index, module)
        n = len(items) - 1  # where list.insert put it: index counted as a slice bound
        self._renumber(items, added=max(0, n + index) if index < 0 else min(index, n))

    def pop(self, index: int | slice = -1) -> Any:
        """Remove and return the module at ``index`` (the last by default), or those of a slice
        (as one container); renumber the rest."""
        taken = self[index]
        del self[index]
        return taken

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return type(self)([*self._items(), *other])


def _repeats(times: Any) -> int:
    """``times`` as the count of a Sequential's repetition: an int of at least 1."""
    if isinstance(times, bool) or not isinstance(times, int):
        raise ArgumentError(f"a Sequential is repeated an int number of times, got {times!r}")
    if times < 1:
        raise InvalidArgumentError(f"a Sequential is repeated at least once, got {times}")
    return times


def _sequential(operator: str, other: Any) -> list[Module]:
    """The modules of ``other``, a Sequential (what PyTorch's ``+`` and ``+=`` take)."""
    if not isinstance(other, Sequential):
        raise InvalidArgumentError(
            f"Sequential {operator} takes a Sequential, got a {type(other).__name__}; wrap the "
            "modules in nn.Sequential(...) first"
        )
    return other._items()


class Sequential(ModuleList):
    """Modules applied one after the other: ``Sequential(a, b)(x)`` is ``b(a(x))``.

    Give the modules as arguments (named ``"0"``, ``"1"``, ...) or as one
    mapping of names to modules. Index, slice, iterate and ``len()`` it like a list.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad import nn
    >>> net = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
    >>> net
    Sequential(
      (0): Linear(in_features=2, out_features=8, bias=True)
      (1): ReLU()
      (2): Linear(in_features=8, out_features=1, bias=True)
    )
    >>> net(plugrad.ones((5, 2))).shape
    (5, 1)
    >>> net[-1], len(net[:2])
    (Linear(in_features=8, out_features=1, bias=True), 2)
    """

    def __init__(self, *modules: Module | Mapping[str, Module | None]) -> None:
        Module.__init__(self)
        if len(modules) == 1 and isinstance(modules[0], Mapping):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for layer in modules:
                self.append(layer)  # type: ignore[arg-type]  # append rejects a mapping here

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            names = list(self._modules)[index]
            return type(self)({name: self._modules[name] for name in names})
        return super().__getitem__(index)

    def __setitem__(self, index: int, module: Module) -> None:
        names = list(self._modules)
        setattr(self, names[_position(index, len(names), "Sequential", assigned=True)], module)

    def __add__(self, other: Sequential) -> Sequential:  # type: ignore[override]
        return type(self)(*self._items(), *_sequential("+", other))

    def __iadd__(self, other: Sequential) -> Sequential:  # type: ignore[override]
        self.extend(_sequential("+=", other))
        return self

    def __mul__(self, times: int) -> Sequential:
        """The modules ``times`` over, the same objects repeated (shared weights), as PyTorch's."""
        return type(self)(*(self._items() * _repeats(times)))

    __rmul__ = __mul__

    def __imul__(self, times: int) -> Sequential:
        self.extend(self._items() * (_repeats(times) - 1))
        return self

    # Printed by name, every module on its line, as PyTorch prints it (a ModuleList folds
    # runs of alike modules into one line; a Sequential built from names shows them).
    __repr__ = Module.__repr__

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end; return self."""
        name = str(len(self))
        while name in self._modules:  # names from a mapping may be numbers too
            name += "_"
        self.add_module(name, module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:  # type: ignore[override]
        """Put ``module`` before position ``index``; return self (PyTorch's Sequential does,
        its ModuleList returns None). An index past either end is refused, as PyTorch's."""
        if not isinstance(index, int) or not -len(self) <= index <= len(self):
            raise IndexOutOfRangeError(
                f"Sequential.insert(): index {index!r} is out of range for {len(self)} modules"
            )
        super().insert(index, module)
        return self

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input


def _pairs(kind: str, items: Any, ordered: bool) -> Iterator[tuple[Any, Any]]:
    """``(key, value)`` from a mapping or an iterable of pairs, for ``update()``.

    A plain mapping's items come sorted by key unless ``ordered`` (PyTorch's
    ParameterDict sorts them; an ``OrderedDict`` or one of these containers keeps its order).
    """
    if not isinstance(items, Iterable):
        raise ArgumentError(
            f"{kind}.update() takes a mapping or an iterable of (key, value) pairs, "
            f"got {type(items).__name__}"
        )
    if isinstance(items, (OrderedDict, Module)) or (ordered and isinstance(items, Mapping)):
        yield from items.items()
    elif isinstance(items, Mapping):
        yield from sorted(items.items())
    else:
        for position, pair in enumerate(items):
            if not isinstance(pair, Iterable) or isinstance(pair, (str, Tensor)):
                raise ArgumentError(
                    f"{kind}.update(): element #{position} is a {type(pair).__name__}, "
                    "not a (key, value) pair"
                )
            pair = tuple(pair)
            if len(pair) != 2:
                raise InvalidArgumentError(
                    f"{kind}.update(): element #{position} has length {len(pair)}; a "
                    "(key, value) pair has 2"
                )
            yield pair[0], pair[1]


def _missing_key(kind: str, key: Any, keys: Iterable[str]) -> KeyError:
    return KeyError(f"{kind} has no key {key!r}; its keys are {list(keys)}")


class _Keyed(Module, Generic[_V]):
    """What ``ModuleDict`` and ``ParameterDict`` share: made from what ``update`` takes, a
    dict's methods over the dict of the module (``_entries``) that registers what they hold."""

    def __init__(self, entries: Any = None) -> None:
        super().__init__()
        if entries is not None:
            self.update(entries)

    def update(self, entries: Any) -> None:
        raise NotImplementedError

    def _entries(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> _V:
        raise NotImplementedError

    def __delitem__(self, key: str) -> None:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._entries())

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries()))

    def __contains__(self, key: object) -> bool:
        return key in self._entries()

    def clear(self) -> None:
        """Remove every entry."""
        self._entries().clear()

    def pop(self, key: str) -> _V:
        """Remove the entry under ``key`` and return it."""
        value = self[key]
        del self[key]
        return value

    def keys(self) -> KeysView[str]:
        """The keys, in insertion order."""
        return self._entries().keys()

    def items(self) -> ItemsView[str, _V]:
        """The ``(key, value)`` pairs, in insertion order."""
        return self._entries().items()

    def values(self) -> ValuesView[_V]:
        """The values, in insertion order."""
        return self._entries().values()


class ModuleDict(_Keyed[Module]):
    """A dict of modules, registered as submodules under their keys.

    It has no ``forward``: look the modules up in your own. Keys are strings
    without ``"."``; insertion order is kept.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad import nn
    >>> heads = nn.ModuleDict({"cls": nn.Linear(4, 3), "box": nn.Linear(4, 2)})
    >>> heads["cls"](plugrad.ones((1, 4))).shape
    (1, 3)
    >>> heads["act"] = nn.ReLU()
    >>> list(heads), "box" in heads, len(heads)
    (['cls', 'box', 'act'], True, 3)
    >>> [name for name, _ in heads.named_parameters()]
    ['cls.weight', 'cls.bias', 'box.weight', 'box.bias']
    """

    def __init__(
        self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None
    ) -> None:
        super().__init__(modules)

    def __getitem__(self, key: str) -> Module:
        try:
            return self._modules[key]  # type: ignore[return-value]
        except KeyError:
            raise _missing_key("ModuleDict", key, self._modules) from None

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        if key not in self._modules:
            raise _missing_key("ModuleDict", key, self._modules)
        del self._modules[key]

    def _entries(self) -> dict[str, Any]:
        return self._modules

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add (or replace) the modules of a mapping or of ``(key, module)`` pairs, in order."""
        for key, module in list(_pairs("ModuleDict", modules, ordered=True)):
            self[key] = module


def _as_parameter(kind: str, value: Any) -> Parameter:
    """``value`` as a Parameter: a Parameter as it is, a Tensor wrapped (sharing its memory)."""
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value)
    raise ArgumentError(
        f"{kind} holds tensors (each registered as a Parameter), got {type(value).__name__}; "
        "keep other values in a plain attribute"
    )


def _parameters_repr(items: Iterable[tuple[str, Parameter | None]]) -> str:
    """PyTorch's listing of a parameter container: ``(key): Parameter containing: [...]``."""
    lines = []
    for key, parameter in items:
        if parameter is not None:
            size = "x".join(str(n) for n in parameter.shape)
            lines.append(f"  ({key}): Parameter containing: [{parameter.dtype} of size {size}]")
    return "\n".join(lines)


class ParameterList(_Listed[Parameter]):
    """A list of parameters, registered as ``"0"``, ``"1"``, ...

    A Tensor put in it becomes a :class:`~plugrad.nn.Parameter` sharing its memory.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad import nn
    >>> weights = nn.ParameterList([nn.Parameter(plugrad.ones((2, 2))), plugrad.zeros(2)])
    >>> weights
    ParameterList(
        (0): Parameter containing: [plugrad.float32 of size 2x2]
        (1): Parameter containing: [plugrad.float32 of size 2]
    )
    >>> type(weights[1]).__name__, list(weights.state_dict())
    ('Parameter', ['0', '1'])
    """

    def __init__(self, values: Iterable[Tensor] | None = None) -> None:
        super().__init__(values)

    def _items(self) -> list[Parameter]:
        return list(self._parameters.values())  # type: ignore[arg-type]

    def __setitem__(self, index: int, value: Tensor) -> None:
        position = _position(index, len(self), "ParameterList", assigned=True)
        self.register_parameter(str(position), _as_parameter("ParameterList", value))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iadd__(self, values: Iterable[Tensor]) -> ParameterList:
        return self.extend(values)

    def append(self, value: Tensor) -> ParameterList:
        """Add ``value`` (made a Parameter) at the end; return self."""
        self.register_parameter(str(len(self)), _as_parameter("ParameterList", value))
        return self

    def extend(self, values: Iterable[Tensor]) -> ParameterList:
        """Add each of ``values`` at the end; return self."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise ArgumentError(
                f"ParameterList.extend() takes an iterable of tensors, got {type(values).__name__}"
            )
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return _parameters_repr(self._parameters.items())


class ParameterDict(_Keyed[Parameter]):
    """A dict of parameters, registered under their keys.

    A Tensor put in it becomes a :class:`~plugrad.nn.Parameter` sharing its
    memory. As in PyTorch, the items of a plain ``dict`` given to the
    constructor or to :meth:`update` are added in sorted key order; those of an
    ``OrderedDict``, a ParameterDict or a sequence of pairs in their own.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad import nn
    >>> params = nn.ParameterDict({"scale": plugrad.ones(3), "bias": plugrad.zeros(3)})
    >>> params
    ParameterDict(
        (bias): Parameter containing: [plugrad.float32 of size 3]
        (scale): Parameter containing: [plugrad.float32 of size 3]
    )
    >>> params["shift"] = plugrad.zeros(1)
    >>> list(params.state_dict()), "scale" in params
    (['bias', 'scale', 'shift'], True)
    >>> params.pop("shift").shape
    (1,)
    """

    def __init__(
        self,
        parameters: Mapping[str, Tensor | None] | Iterable[tuple[str, Tensor | None]] | None = None,
    ) -> None:
        super().__init__(parameters)

    def __getitem__(self, key: str) -> Parameter:
        if not isinstance(key, str):
            raise ArgumentError(f"ParameterDict keys are strings, got {type(key).__name__}")
        if key not in self._parameters:
            raise _missing_key("ParameterDict", key, self._parameters)
        return self._parameters[key]  # type: ignore[return-value]

    def __setitem__(self, key: str, value: Tensor | None) -> None:
        # None holds the key without a parameter, as in PyTorch (fromkeys(keys) gives that).
        parameter = None if value is None else _as_parameter("ParameterDict", value)
        self.register_parameter(key, parameter)

    def __delitem__(self, key: str) -> None:
        self[key]  # the errors of a missing key
        del self._parameters[key]

    def _entries(self) -> dict[str, Any]:
        return self._parameters

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._parameters))

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same parameters, in the same order."""
        return ParameterDict(OrderedDict(self.items()))

    def setdefault(self, key: str, default: Tensor) -> Parameter:
        """The parameter under ``key``, after putting ``default`` there if it was missing."""
        if key not in self:
            self[key] = default
        return self[key]

    def popitem(self) -> tuple[str, Parameter]:
        """Remove the last inserted ``(key, parameter)`` pair and return it."""
        if not self._parameters:
            raise KeyError("popitem(): ParameterDict is empty")
        key = list(self._parameters)[-1]
        return key, self.pop(key)

    def get(self, key: str, default: Any = None) -> Any:
        """The parameter under ``key``, or ``default``."""
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Tensor | None = None) -> ParameterDict:
        """A new ParameterDict with ``default`` under each of ``keys``, as PyTorch's: a
        Parameter is shared; a plain tensor becomes one Parameter per key (over its memory)."""
        return ParameterDict([(key, default) for key in keys])

    def update(
        self,
        parameters: Mapping[str, Tensor | None]
        | Iterable[tuple[str, Tensor | None]]
        | ParameterDict,
    ) -> None:
        """Add (or replace) the parameters of a mapping or of ``(key, tensor)`` pairs."""
        for key, value in list(_pairs("ParameterDict", parameters, ordered=False)):
            self[key] = value

    def __or__(self, other: ParameterDict) -> ParameterDict:
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self

    def extra_repr(self) -> str:
        return _parameters_repr(self._parameters.items())
