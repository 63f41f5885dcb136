"""A captured plan: the steps one call ran, as data that passes can rewrite and code can run.

A plan is a list of :class:`Step` objects in the order the eager program ran
them. Each step either computes a value (``out`` names it) from earlier values
(:class:`Ref`), constants and Python literals, or has an effect (an in-place
update, a ``.grad`` written, a call into code that keeps its own state). The
plan also keeps what the emitted function checks before it runs (``guards``)
and the expression that builds the function's result.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Plan", "Ref", "Step", "refs_in", "saved_across_yield", "yield_index"]


class Name:
    """A name the replayed code holds as written: a tensor's source, a tuple, ..."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


class Ref(Name):
    """A value of the plan, by name (``v12``): what a step computed or read.

    The passes test ``type(value) is Ref``, so a plain :class:`Name` is never taken for one.
    """

    __slots__ = ()


@dataclass(slots=True)
class Step:
    """One statement of a plan.

    ``kind`` is one of

    - ``"call"``: ``out = target(*args, **kwargs)``, ``target`` a dotted name
      (``"xp.multiply"``) or a constant callable;
    - ``"method"``: ``out = args[0].target(*args[1:], **kwargs)``;
    - ``"binop"``: ``out = args[0] <target> args[1]``; ``"unary"``: ``out = <target>args[0]``;
    - ``"inplace"``: ``args[0] <target>= args[1]`` (no ``out``);
    - ``"getitem"``: ``out = args[0][args[1]]``; ``"setitem"``: ``args[0][args[1]] = args[2]``;
    - ``"attr"``: ``out = args[0].target``;
    - ``"text"``: ``target`` is a format string over the rendered ``args``
      (reads of inputs, writes of ``.grad``, version bumps, calls into stateful code).

    ``effect`` marks steps that must run even if nothing uses what they compute.
    """

    kind: str
    out: str | None
    target: Any
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    effect: bool = False
    #: What ``uses()`` found, with the arguments it was found in.
    _uses: Any = field(default=None, init=False, repr=False, compare=False)

    def uses(self) -> list[str]:
        """The names of the plan values this step reads (do not change the list)."""
        # Every pass asks each step, and steps are replaced, not edited: kept, with what it
        # was computed from, so a step whose arguments were reassigned is asked again.
        cached = self._uses
        if cached is not None and cached[0] is self.args and cached[1] is self.kwargs:
            return cached[2]
        names = self._find_uses()
        self._uses = (self.args, self.kwargs, names)
        return names

    def _find_uses(self) -> list[str]:
        names: list[str] = []
        for value in self.args:
            kind = type(value)
            if kind is Ref:  # the common case, without a generator
                names.append(value.name)
            elif kind in _CONTAINERS:
                names.extend(refs_in(value))
        if self.kwargs:
            names.extend(refs_in(tuple(self.kwargs.values())))
        return names


def refs_in(value: Any) -> Iterator[str]:
    """Every :class:`Ref` name inside ``value`` (tuples, lists, dicts and slices searched)."""
    kind = type(value)
    if kind is Ref:
        yield value.name
    elif kind is tuple or kind is list:
        for item in value:
            if type(item) is Ref:  # the common case, without a nested generator
                yield item.name
            elif type(item) in _CONTAINERS:
                yield from refs_in(item)
    elif kind is dict:
        yield from refs_in(tuple(value.values()))
    elif kind is slice:
        yield from refs_in((value.start, value.stop, value.step))


_CONTAINERS = (tuple, list, dict, slice)


@dataclass
class Plan:
    """What one capture recorded, ready to be turned into code.

    Attributes
    ----------
    steps : list of Step
        The statements, in the order the eager program ran them.
    guards : list of str
        Conditions (Python expressions over ``L``, the call's tensors, and ``F``,
        the free tensors) that must hold when a call starts, else the plan does not apply.
    output : str
        The expression that builds the result (may refer to plan values).
    output_refs : tuple of str
        The plan values ``output`` reads.
    constants : dict
        Name -> object, for everything the code refers to that is not a literal.
    free : list
        The tensors the function reached without receiving them (``F[k]`` in the code).
    namespaces : dict
        Name -> backend namespace (``xp``, and ``rxp`` for what backward rules call).
    folded : dict
        Plan value -> the array it held at capture, for values that are the same at
        every replay (functions of constants and of guarded shapes only).
    meta : dict
        Plan value -> ``(shape, dtype)`` of the array it held at capture (the
        guards fix them for every replay).
    strides : dict
        Plan value -> the strides of the array it held at capture (``None`` where
        its library has none). A replay's arrays are laid out as these only where
        the inputs are laid out as at capture: see ``layout_guards``.
    layout_guards : dict
        ``"L"`` (the call's tensors) and ``"F"`` (the free tensors) -> a guard that
        fixes their memory layouts, where ``guards`` do not already. A pass whose
        rewrite is right only for the layouts seen at capture (a result written
        into an operand laid out as that result) adds them to ``guards``.
    """

    steps: list[Step]
    guards: list[str]
    output: str
    output_refs: tuple[str, ...]
    constants: dict[str, Any]
    free: list[Any]
    namespaces: dict[str, Any]
    folded: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, tuple[tuple[int, ...], Any]] = field(default_factory=dict)
    strides: dict[str, Any] = field(default_factory=dict)
    layout_guards: dict[str, str] = field(default_factory=dict)


def yield_index(plan: Plan) -> int | None:
    """Where the step that hands out a result carrying a graph is (see
    :mod:`.differentiable`), if the plan has one."""
    for index, step in enumerate(plan.steps):
        if step.kind == "text" and type(step.target) is str and step.target.startswith("yield "):
            return index
    return None


def saved_across_yield(plan: Plan) -> set[str]:
    """The values computed before the ``yield`` that the backward after it reads."""
    at = yield_index(plan)
    if at is None:
        return set()
    before = {step.out for step in plan.steps[:at] if step.out is not None}
    return {name for step in plan.steps[at + 1 :] for name in step.uses() if name in before}
