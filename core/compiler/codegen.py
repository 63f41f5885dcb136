"""Turn a plan into Python source over the backend namespace, and that source into a function."""

from __future__ import annotations

import math
import operator
import re
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import autocast_mode as _autocast_mode
from .. import checking as _checking
from .. import floating_point_warnings as _floating_point_warnings
from ..errors import CompileError, CompileWarning, InvalidArgumentError
from ..grad_mode import _state as _grad_state
from ..tensor import Tensor, _wrap
from .plan import Name, Plan, Ref, Step, saved_across_yield, yield_index

__all__ = ["MISS", "build", "source_of"]


class _Miss:
    """Returned by a replayed plan whose guards do not hold (nothing has run)."""

    def __repr__(self) -> str:
        return "MISS"


MISS = _Miss()


def replay_with_warning(message: str, replay: Callable[..., Any], L: Any, F: Any) -> Any:
    """``replay(L, F)`` after a :class:`~plugrad.errors.CompileWarning` ``message``: how a
    replay falls back to a plainer one. The replay calls it; the warning points where the
    replay's caller was called (``stacklevel=3`` of the replay itself)."""
    warnings.warn(message, CompileWarning, stacklevel=4)
    return replay(L, F)


#: What a plan's guard checks of each free tensor it reads (a ``Device`` is one object per
#: device, so the comparison of two is one of identities).
TENSOR_META = operator.attrgetter("_array.shape", "_array.dtype", "_device", "_requires_grad")
#: ``TENSOR_META`` with the array's memory layout, for libraries whose arrays have strides.
LAID_OUT_META = operator.attrgetter(
    "_array.shape", "_array.dtype", "_array.strides", "_device", "_requires_grad"
)


def meta_guard(arrays: list[Any]) -> tuple[str, Callable[[Any], tuple[Any, ...]]]:
    """The getter a guard compares tensors by, with its name in the replayed code.

    Where every array has strides (NumPy, CuPy), the layouts are compared too: a
    plan may write a result into an operand laid out as that result (see
    ``passes.compute_in_place``), which is right only for inputs laid out as
    the capture's were, and the comparison costs next to nothing more.
    """
    if all(type(getattr(a, "strides", None)) is tuple for a in arrays):
        return "_laid_out_meta", LAID_OUT_META
    return "_tensor_meta", TENSOR_META


def arguments_meta(count: int, laid_out: bool) -> str:
    """The expression of what ``TENSOR_META`` (``LAID_OUT_META`` where ``laid_out``) reads of
    the call's tensors ``a0``, ``a1``, ..., as one flat tuple.

    Written out rather than ``[*map(_laid_out_meta, L)]``: a replay of a small step is
    a few microseconds, and the getter's calls and tuples are a tenth of them (the
    text costs ``compile()`` little for the eight arguments it is made for at most).
    """
    parts = []
    for index in range(count):
        array = f"_r{index}"
        layout = f", {array}.strides" if laid_out else ""
        parts.append(
            f"({array} := a{index}._array).shape, {array}.dtype{layout}, "
            f"a{index}._device, a{index}._requires_grad"
        )
    return "(" + ", ".join(parts) + ")"


def _strides_of(tensor: Any) -> Any:
    """The memory layout of a tensor's array, where its library has one; elsewhere that
    of a view (see plugrad.strided_layout), else None."""
    return getattr(tensor._array, "strides", None) or getattr(tensor, "_layout", None)


class _Literal:
    """Renders values as Python source; what cannot be written literally becomes a constant."""

    def __init__(self, constants: dict[str, Any]) -> None:
        self.constants = constants
        self._names = {id(v): k for k, v in constants.items()}

    def constant(self, value: Any) -> str:
        name = self._names.get(id(value))
        if name is None:
            name = f"c{len(self.constants)}"
            while name in self.constants:
                name += "_"
            self.constants[name] = value
            self._names[id(value)] = name
        return name

    def __call__(self, value: Any) -> str:
        kind = type(value)
        if kind is Ref or kind is Name:
            return value.name
        if value is None or kind is bool or kind is int or kind is str:
            return repr(value)
        if kind is float:
            return repr(value) if math.isfinite(value) else self.constant(value)
        if kind is tuple:
            items = [self(v) for v in value]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if kind is list:
            return "[" + ", ".join(self(v) for v in value) + "]"
        if kind is dict and all(type(k) is str for k in value):
            return "{" + ", ".join(f"{k!r}: {self(v)}" for k, v in value.items()) + "}"
        if kind is slice:
            return f"slice({self(value.start)}, {self(value.stop)}, {self(value.step)})"
        if value is Ellipsis:
            return "..."
        return self.constant(value)


def _call_arguments(literal: _Literal, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    parts = [literal(a) for a in args]
    parts += [f"{k}={literal(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def _index(literal: _Literal, key: Any) -> str:
    if type(key) is tuple and key:
        return ", ".join(literal(k) for k in key) + ("," if len(key) == 1 else "")
    return literal(key)


def render(step: Step, literal: _Literal) -> str:
    """One line of source for ``step``."""
    kind, out, target, args = step.kind, step.out, step.target, step.args
    prefix = f"{out} = " if out is not None else ""
    if kind == "call":
        callee = target if type(target) is str else literal(target)
        return f"{prefix}{callee}({_call_arguments(literal, args, step.kwargs)})"
    if kind == "method":
        receiver = literal(args[0])
        return f"{prefix}{receiver}.{target}({_call_arguments(literal, args[1:], step.kwargs)})"
    if kind == "binop":
        return f"{prefix}{literal(args[0])} {target} {literal(args[1])}"
    if kind == "unary":
        if target == "abs":
            return f"{prefix}abs({literal(args[0])})"
        return f"{prefix}{target}{literal(args[0])}"
    if kind == "inplace":
        return f"{literal(args[0])} {target}= {literal(args[1])}"
    if kind == "getitem":
        return f"{prefix}{literal(args[0])}[{_index(literal, args[1])}]"
    if kind == "setitem":
        return f"{literal(args[0])}[{_index(literal, args[1])}] = {literal(args[2])}"
    if kind == "attr":
        return f"{prefix}{literal(args[0])}.{target}"
    if kind == "text":
        return prefix + target.format(*(literal(a) for a in args))
    raise InvalidArgumentError(f"unknown step kind {kind!r}")


def _with_releases(
    plan: Plan,
    lines: list[str],
    inlined: set[str] | frozenset[str] = frozenset(),
    moved: dict[int, int] | None = None,
    reads: list[list[str]] | None = None,
    keep: set[str] | frozenset[str] = frozenset(),
) -> list[str]:
    """``lines`` with each value deleted after the statement that uses it last.

    Straight-line code would otherwise keep every intermediate array until it
    returns; released at their last use, they are freed as early as the eager
    engine (and hand-written code) frees them. ``reads``: each step's
    ``uses()``, where the caller has them; ``keep``: values never deleted.
    """
    last_use: dict[str, int] = {}
    moved = moved or {}
    if reads is None:
        reads = [step.uses() for step in plan.steps]
    for index, step in enumerate(plan.steps):
        if step.out is not None and step.out not in last_use:
            last_use[step.out] = index
        at = moved.get(index, index)
        for name in reads[index]:
            if last_use.get(name, -1) < at:
                last_use[name] = at
    kept = set(plan.output_refs) | _held_elsewhere(plan, reads) | keep
    # ``b = f(a, out=a)`` names a's array again: its memory is freed when the last of
    # its names goes, so the names go together.
    group_of: dict[str, str] = {}
    for step in plan.steps:
        into = step.kwargs.get("out") if step.kwargs and step.out is not None else None
        if type(into) is Ref:
            group_of[step.out] = group_of.get(into.name, into.name)  # type: ignore[index]
    if group_of:
        for name, group in group_of.items():
            if name in kept:
                kept.add(group)
            if last_use.get(name, -1) > last_use.get(group, -1):
                last_use[group] = last_use[name]
        for name, group in group_of.items():
            if group in kept:
                kept.add(name)
            last_use[name] = last_use[group]
    released: dict[int, list[str]] = {}
    for name, index in last_use.items():
        if name not in kept and name not in inlined:
            released.setdefault(index, []).append(name)
    result = []
    for index, line in enumerate(lines):
        result.append(line)
        names = released.get(index)
        if names:
            result.append("del " + ", ".join(names))
    return result


def _held_elsewhere(plan: Plan, reads: list[list[str]]) -> set[str]:
    """Values whose arrays something outside the replay's names keeps: a tensor's array
    read (``v1 = F[0]._array``), a folded constant, an array wrapped into a ``.grad``.
    Deleting such a name frees nothing; its line would only cost compile time."""
    held: set[str] = set()
    wraps: dict[str, int] = {}
    stored: dict[str, int] = {}  # each .grad's last write: the gradient stored there
    for index, step in enumerate(plan.steps):
        if step.kind != "text" or type(step.target) is not str:
            continue
        target = step.target
        if step.out is not None and not step.args and _KEPT_ARRAY.fullmatch(target):
            held.add(step.out)
        elif step.out is not None and target.startswith("_wrap("):
            wraps[step.out] = index
        elif "._grad = " in target:
            owner, _, value = target.partition("._grad = ")
            stored_value = step.args[0] if value == "{0}" and step.args else None
            wrap = wraps.get(stored_value.name) if type(stored_value) is Ref else None
            stored[owner] = -1 if wrap is None else wrap
    for wrap in stored.values():
        if wrap >= 0:
            held.update(reads[wrap])
    return held


#: A text step reading an array that lives on after the replay: a tensor's, or a constant.
_KEPT_ARRAY = re.compile(r"[\w\[\]]+\._array|folded_\w+")


def _use_counts(plan: Plan, reads: list[list[str]] | None = None) -> dict[str, int]:
    """How many steps read each plan value (``reads``: each step's ``uses()``, if known)."""
    uses: dict[str, int] = {}
    for names in reads if reads is not None else (step.uses() for step in plan.steps):
        for used in names:
            uses[used] = uses.get(used, 0) + 1
    return uses


def _inline_wraps(
    plan: Plan,
    lines: list[str],
    uses: dict[str, int] | None = None,
    reads: list[list[str]] | None = None,
) -> tuple[list[str], str, set[str], dict[int, int]]:
    """Lines where a Tensor made for one use is made in that use (``p._grad = _wrap(...)``).

    Returns the lines (a merged one left empty), the output expression, the
    names that are no longer assigned, and where each merged line went.
    """
    inlined: set[str] = set()
    moved: dict[int, int] = {}
    if uses is None:
        uses = _use_counts(plan)
    output = plan.output
    lines = list(lines)
    steps = plan.steps
    if reads is None:
        reads = [step.uses() for step in steps]
    for index, step in enumerate(steps):
        name = step.out
        if not (
            step.kind == "text"
            and name is not None
            and type(step.target) is str
            and step.target.startswith("_wrap(")
        ):
            continue
        expression = lines[index].partition(" = ")[2]
        if uses.get(name, 0) == 0 and output == name:
            output, lines[index] = expression, ""
            inlined.add(name)
            moved[index] = len(steps)
        elif (
            uses.get(name, 0) == 1
            and name not in plan.output_refs
            and index + 1 < len(steps)
            and name in reads[index + 1]
        ):
            pattern = re.compile(rf"\b{name}\b")
            lines[index + 1] = pattern.sub(_literal(expression), lines[index + 1], count=1)
            lines[index] = ""
            inlined.add(name)
            moved[index] = index + 1
    return lines, output, inlined, moved


#: Steps whose line is one expression with no effect, which may move into the next line.
_EXPRESSION_KINDS = frozenset({"call", "method", "binop", "unary", "getitem", "attr"})
#: Steps whose line assigns to their first argument (``v *= 2``, ``v[k] = w``).
_ASSIGNING_KINDS = frozenset({"inplace", "setitem"})


def _names(value: Any, name: str) -> bool:
    """Whether ``value`` is the plan value ``name``."""
    return type(value) is Ref and value.name == name


#: Inlining stops where a line would grow longer than this.
_LONGEST_LINE = 100


def _inline_single_uses(
    plan: Plan,
    lines: list[str],
    inlined: set[str],
    moved: dict[int, int],
    uses: dict[str, int] | None = None,
    reads: list[list[str]] | None = None,
    stop_at: int | None = None,
) -> list[str]:
    """Lines where a value that only the next statement reads is computed inside it.

    ``b = f(a); c = g(b); del b`` becomes ``c = g(f(a))``: the same calls in the
    same order, one statement and one name fewer (the temporary is freed as the
    call returns), so the source compiles faster and the replay stores less. Nothing
    moves into the line of step ``stop_at`` (the first effect: see :func:`source_of`).
    """
    if uses is None:
        uses = _use_counts(plan)
    kept = set(plan.output_refs)
    steps = plan.steps
    if reads is None:
        reads = [step.uses() for step in steps]
    for index, step in enumerate(steps[:-1]):
        name = step.out
        line = lines[index]
        if (
            step.kind not in _EXPRESSION_KINDS
            or step.effect
            or index + 1 == stop_at
            or name is None
            or name in kept
            or uses.get(name, 0) != 1
            or name not in reads[index + 1]
            or not line.startswith(f"{name} = ")
        ):
            continue
        target = steps[index + 1]
        if target.kind in _ASSIGNING_KINDS and target.args and _names(target.args[0], name):
            continue  # the target of `v *= 2` or `v[k] = w` must stay a name
        following = lines[index + 1]
        expression = line[len(name) + 3 :]
        if step.kind in ("binop", "unary"):
            expression = f"({expression})"
        if len(following) + len(expression) > _LONGEST_LINE:
            continue  # kept readable: ``compiled.code()`` is for people too
        merged, found = re.subn(rf"\b{name}\b", _literal(expression), following)
        if found != 1:
            continue
        lines[index + 1] = merged
        lines[index] = ""
        inlined.add(name)
        moved[index] = index + 1
    # A chain (a inside b inside c) is used where its last line is.
    for index in list(moved):
        at = moved[index]
        while at in moved and at != moved[at]:
            at = moved[at]
        moved[index] = at
    return lines


def source_of(plan: Plan, name: str = "replay") -> tuple[str, dict[str, Any]]:
    """The source of ``plan`` as a function ``name(L, F)`` and the globals it needs.

    A plan with a ``yield`` step becomes a generator: the forward up to it, then
    the backward in a loop, each pass taking the output gradients at a ``yield``
    and handing out the input gradients at the next.
    """
    constants = dict(plan.constants)
    literal = _Literal(constants)
    reads = [step.uses() for step in plan.steps]
    uses = _use_counts(plan, reads)  # neither inlining changes what the steps read
    lines, output, inlined, moved = _inline_wraps(
        plan, [render(step, literal) for step in plan.steps], uses, reads
    )
    at = yield_index(plan)
    # NumPy's floating-point warnings, which an "error" filter raises (see below).
    switches = _floating_point_warnings.switches
    first_effect = None if switches is None or at is not None else _first_effect(plan)
    lines = _inline_single_uses(plan, lines, inlined, moved, uses, reads, first_effect)
    if first_effect is not None:
        lines[first_effect] = _EFFECTS_START + lines[first_effect]
    saved = saved_across_yield(plan)
    released = [line for line in _with_releases(plan, lines, inlined, moved, reads, saved) if line]
    split = next((i for i, line in enumerate(released) if line[0] == _EFFECTS_START), None)
    if split is not None:
        released[split] = released[split][1:]
        body = _merged_grad_stores(released[:split])
        effects = _merged_grad_stores(released[split:])
    else:
        body, effects = _merged_grad_stores(released), []
    lines = [f"def {name}(L, F):"]
    if plan.guards:
        guard = ["    if not (", *(f"        {g} and" for g in plan.guards[:-1])]
        guard += [f"        {plan.guards[-1]}", "    ):", "        return MISS"]
        if any("_laid_out_meta" in g or ".strides" in g for g in plan.guards):
            # An array without strides (another library's) is laid out unlike the capture's.
            guard = ["    try:", *("    " + line for line in guard)]
            guard += ["    except AttributeError:", "        return MISS"]
        lines += guard
    if at is not None:
        lines += _resumable(plan, body, at, output, switches)
    elif switches is None:
        lines += ["    " + line for line in body]
        lines.append(f"    return {output}")
    else:
        # A warning raised before the first effect (a write into a tensor, a .grad, a
        # random draw) changed nothing: the call is made again with the warnings off.
        # After it, a replay cannot start again: the effects run with them off, which
        # costs two calls, paid only where they compute.
        computing = first_effect is not None and any(
            _computes(step) for index, step in enumerate(plan.steps)
            if moved.get(index, index) >= first_effect
        )  # fmt: skip
        ending = [*effects, f"return {output}"]
        if body:
            lines += ["    try:", *("        " + line for line in body)]
            if not effects:
                lines.append(f"        return {output}")
                ending = []
            lines += ["    except RuntimeWarning:", f"        return _again_quietly({name}, L, F)"]
        lines += _warnings_off(ending) if computing else ["    " + line for line in ending]
    scope: dict[str, Any] = {
        "MISS": MISS,
        "_wrap": _wrap,
        "_store_grads": _store_grads,
        "_distinct_memory": distinct_memory,
        "_op": operator,
        "_tensor_meta": TENSOR_META,
        "_laid_out_meta": LAID_OUT_META,
        "_strides_of": _strides_of,
        "CompileError": CompileError,
        "Tensor": Tensor,
        "_grad_state": _grad_state,
        "_checking": _checking,
        "_autocast_mode": _autocast_mode,
    }
    if switches is not None:
        scope["_warnings_off"], scope["_warnings_on"] = switches
        scope["_again_quietly"] = _floating_point_warnings.again_quietly
    scope.update(plan.namespaces)
    scope.update(constants)
    return "\n".join(lines) + "\n", scope


#: Marks the line of the first effect until the lines are split there.
_EFFECTS_START = "\x00"


def _first_effect(plan: Plan) -> int | None:
    """The position of the first step that changes something outside the replay's own
    arrays (a write, a .grad, a random draw, a call into stateful code), if any: not
    ``x.grad = None`` (``zero_grad()``), which a replay made again makes again alike."""
    for index, step in enumerate(plan.steps):
        if step.effect and not (
            step.kind == "text"
            and type(step.target) is str
            and (step.target.startswith("if ") or step.target.endswith("._grad = None"))
        ):
            return index
    return None


#: Text steps that compute nothing: reads and writes of tensors' arrays and .grad, the
#: Tensors made of arrays, version bumps and checks.
_PLAIN_TEXT = re.compile(
    r"(_wrap\(|if |yield |folded_)|.*(\._grad = |\._bump_version\(\)$|\._array( =|$))"
)


def _computes(step: Step) -> bool:
    """Whether ``step`` may compute numbers (and so warn of an inf or a NaN made)."""
    if step.kind == "text":
        return type(step.target) is not str or _PLAIN_TEXT.match(step.target) is None
    return step.kind not in ("getitem", "attr", "setitem")


def _warnings_off(lines: list[str]) -> list[str]:
    """``lines`` as the end of the function, run with the warnings off."""
    return [
        "    _warnings = _warnings_off()",
        "    try:",
        *("        " + line for line in lines),
        "    finally:",
        "        _warnings_on(_warnings)",
    ]


def _resumable(plan: Plan, body: list[str], at: int, output: str, switches: Any) -> list[str]:
    """The body of a generator: the forward, the ``yield`` of its result, then the backward
    in a loop (each gradient it hands out deleted after, until the next pass makes it).
    The forward runs with NumPy's warnings off where ``switches`` are given (the backward
    runs in a backward pass, where they are off already)."""
    handed = plan.steps[at]
    before = {step.out for step in plan.steps[:at] if step.out is not None}
    start = f"{handed.out} = yield ("
    split = next(index for index, line in enumerate(body) if line.startswith(start))
    lines = ["    " + line for line in body[:split]]
    if switches is not None and split:
        lines = _warnings_off(body[:split])
    # Handed out from a list emptied as it goes: the suspended frame holds no name of the
    # result, whose grad_fn holds this generator (a cycle only the collector would free).
    lines.append("    _handed = [" + body[split][len(start) - 1 :] + "]")
    loop = []
    released_once = []  # forward values nothing reads after the yield: freed before the loop
    for line in body[split + 1 :]:
        if line.startswith("del "):
            names = line[4:].split(", ")
            released_once += [n for n in names if n in before]
            names = [n for n in names if n not in before]
            if names:
                loop.append("del " + ", ".join(names))
        else:
            loop.append(line)
    if released_once:
        lines.append("    del " + ", ".join(released_once))
    lines.append(f"    {handed.out} = yield _handed.pop()")
    lines.append("    while True:")
    lines += ["        " + line for line in loop]
    lines.append(f"        {handed.out} = yield {output}")
    made = sorted({n for n in plan.output_refs if n not in before})
    if made:
        lines.append("        del " + ", ".join(made))
    return lines


#: ``t._grad = None`` and ``t._grad = _wrap(a, device, False, None)``, as a plan writes them.
_CLEARED_GRAD = re.compile(r"([\w\[\]]+)\._grad = None")
_STORED_GRAD = re.compile(r"([\w\[\]]+)\._grad = _wrap\((\w+), (\w+), False, None\)")


def _merged_grad_stores(lines: list[str]) -> list[str]:
    """``lines`` with each run of ``.grad`` writes one statement: the writes of a
    backward pass (and of ``zero_grad``) come together, one line per parameter, and
    Python compiles one call faster than a line each (same order, same effect)."""
    if not any("._grad = " in line for line in lines):
        return lines
    merged: list[str] = []
    index, count = 0, len(lines)
    while index < count:
        line = lines[index]
        if "._grad = " in line:
            end, owners, pairs, device = index, list[str](), list[str](), None
            while end < count and (match := _CLEARED_GRAD.fullmatch(lines[end])):
                owners.append(match[1])
                end += 1
            if len(owners) > 1:
                merged.append(" = ".join(owner + "._grad" for owner in owners) + " = None")
                index = end
                continue
            end = index
            while end < count and (match := _STORED_GRAD.fullmatch(lines[end])):
                if device is not None and match[3] != device:
                    break
                device = match[3]
                pairs += match[1], match[2]
                end += 1
            # (two stores stay lines: one call costs more at every replay than it saves)
            if len(pairs) > 4:
                merged.append(f"_store_grads({device}, {', '.join(pairs)})")
                index = end
                continue
        merged.append(line)
        index += 1
    return merged


def _store_grads(device: Any, *owners_and_arrays: Any) -> None:
    """Give each tensor (every other argument) the array after it as its ``.grad``."""
    for index in range(0, len(owners_and_arrays), 2):
        owners_and_arrays[index]._grad = _wrap(owners_and_arrays[index + 1], device, False, None)


def distinct_memory(tensors: Any) -> int:
    """How many memories ``tensors`` hold: tensors that share one (a tensor and its views,
    by their version counter) count once, so ``len(tensors)`` means none is shared."""
    return len({id(t._counter or t) for t in tensors})


#: Code objects of recent sources, by text: a plan captured again (after ``cache_clear``,
#: an eviction, or in a new compiled function of the same code) skips Python's compiler.
_CODE: OrderedDict[tuple[str, str], Any] = OrderedDict()
_CODE_KEPT = 64
_CODE_LOCK = threading.Lock()


def build(plan: Plan, filename: str) -> tuple[Callable[..., Any], str]:
    """Compile ``plan`` into a Python function; return it and its source."""
    source, scope = source_of(plan)
    key = (source, filename)
    with _CODE_LOCK:
        code = _CODE.get(key)
        if code is not None:
            _CODE.move_to_end(key)
    if code is None:
        code = compile(source, filename, "exec")
        with _CODE_LOCK:
            _CODE[key] = code
            while len(_CODE) > _CODE_KEPT:
                _CODE.popitem(last=False)
    exec(code, scope)
    return scope["replay"], source


def forget_code() -> None:
    """Empty the cache of compiled sources (so that the next capture compiles its own)."""
    with _CODE_LOCK:
        _CODE.clear()


def _literal(text: str) -> Callable[[re.Match[str]], str]:
    """A replacement for ``re.sub`` that inserts ``text`` as it is (no backslash escapes)."""
    return lambda match: text
