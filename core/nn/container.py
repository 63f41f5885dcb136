"""Containers: ``Sequential`` chains modules, ``ModuleList`` holds them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, overload

from .module import Module

__all__ = ["ModuleList", "Sequential"]


def _position(index: Any, length: int, kind: str) -> int:
    if not isinstance(index, int) or isinstance(index, bool):
        raise TypeError(f"{kind} indices must be ints or slices, not {type(index).__name__}")
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range for a {kind} of length {length}")
    return index % length


class ModuleList(Module):
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
        super().__init__()
        if modules is not None:
            self.extend(modules)

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

    def _renumber(self, modules: list[Module]) -> None:
        self._modules.clear()
        for index, module in enumerate(modules):
            self.add_module(str(index), module)

    @overload
    def __getitem__(self, index: int) -> Module: ...
    @overload
    def __getitem__(self, index: slice) -> ModuleList: ...
    def __getitem__(self, index: int | slice) -> Module | ModuleList:
        items = self._items()
        if isinstance(index, slice):
            return type(self)(items[index])
        return items[_position(index, len(items), type(self).__name__)]

    def __setitem__(self, index: int, module: Module) -> None:
        items = self._items()
        items[_position(index, len(items), type(self).__name__)] = module
        self._renumber(items)

    def __delitem__(self, index: int | slice) -> None:
        items = self._items()
        if isinstance(index, slice):
            del items[index]
        else:
            del items[_position(index, len(items), type(self).__name__)]
        self._renumber(items)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._items())

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end; return self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Add each of ``modules`` at the end; return self."""
        for module in modules:
            self.append(module)
        return self


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
        setattr(self, names[_position(index, len(names), "Sequential")], module)

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end; return self."""
        name = str(len(self))
        while name in self._modules:  # names from a mapping may be numbers too
            name += "_"
        self.add_module(name, module)
        return self

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input
