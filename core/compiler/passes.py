"""Plan passes: rewrites of a captured plan before it becomes code.

A pass is a function ``plan -> plan``. The built-in one removes dead code;
plugins add theirs through the ``plugrad_plan_passes`` hook.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Collection
from typing import Any

from .. import plugin_tables as _plugin_tables
from .. import registry as _registry
from ..errors import ArgumentError, CompileWarning
from .plan import Plan, Ref, Step, refs_in, saved_across_yield, yield_index
from .tracer import user_stacklevel

__all__ = [
    "compute_in_place",
    "drop_multiplications_by_one",
    "drop_reshapes_to_the_same_shape",
    "eliminate_common_subexpressions",
    "eliminate_dead_code",
    "fold_constants",
    "read_broadcasts_as_they_are",
    "reduce_without_kept_axes",
    "run_passes",
    "shares_host_memory",
]

PlanPass = Callable[[Plan], Plan]


def eliminate_dead_code(plan: Plan) -> Plan:
    """Drop steps whose values nothing needs: no effect, no output, no later step uses them.

    The engine computes a gradient for every input that needs one, and some
    are never used (the gradient of a tensor whose ``.grad`` is not kept).
    """
    live = set(plan.output_refs)
    kept = []
    for step in reversed(plan.steps):
        if step.effect or (step.out is not None and step.out in live):
            kept.append(step)
            live.update(step.uses())
    kept.reverse()
    return dataclasses.replace(plan, steps=kept)


#: Functions that return a new array (never a view of an argument) on every backend.
_FRESH_RESULT = frozenset(
    {"add", "subtract", "multiply", "divide", "matmul", "where", "exp", "log", "negative"}
)


def fold_constants(plan: Plan) -> Plan:
    """Replace values that are the same at every replay by the arrays they held at capture.

    The engine seeds a backward pass with ``ones_like(loss)`` and broadcasts it
    through reductions: a chain of steps that depends on guarded shapes alone.
    A value is folded only where every step that reads it makes a new array
    from it (arithmetic), so the shared array is never written, returned or
    stored in a ``.grad``.
    """
    folded = plan.folded
    if not folded:
        return plan
    readers = _readers(plan, folded.keys())
    escaping = set(plan.output_refs)
    # Decided from the last step back: a reader that is itself folded no longer reads the
    # value, but one that could be and is not (a view kept in a .grad) still does.
    chosen: set[str] = set()
    for step in reversed(plan.steps):
        out = step.out
        if (
            out is not None
            and out in folded
            and out not in escaping
            and all(_only_reads(reader, chosen) for reader in readers.get(out, ()))
        ):
            chosen.add(out)
    constants = dict(plan.constants)
    steps = []
    for step in plan.steps:
        out = step.out
        if out is not None and out in chosen:
            constant = f"folded_{out}"
            constants[constant] = folded[out]
            step = Step("text", out, constant)
        steps.append(step)
    return dataclasses.replace(plan, steps=steps, constants=constants)


def _readers(plan: Plan, names: Collection[str] | None = None) -> dict[str, list[Step]]:
    """For each name the plan reads (of ``names``, if given), the steps that read it, in order."""
    readers: dict[str, list[Step]] = {}
    for step in plan.steps:
        for name in step.uses():
            if names is None or name in names:
                readers.setdefault(name, []).append(step)
    return readers


def _reader_indices(plan: Plan) -> dict[str, list[int]]:
    """For each name the plan reads, the positions of the steps that read it, in order."""
    readers: dict[str, list[int]] = {}
    for index, step in enumerate(plan.steps):
        for name in step.uses():
            readers.setdefault(name, []).append(index)
    return readers


def _only_reads(step: Step, folded: Collection[str]) -> bool:
    if step.effect:
        return False
    if step.out in folded or step.kind in ("binop", "unary"):
        return True
    target = step.target
    return (
        step.kind == "call"
        and type(target) is str
        and target.startswith("xp.")
        and (target[3:] in _FRESH_RESULT)
    )


#: Step kinds whose value depends on nothing but what they read (calls checked apart).
_PURE_KINDS = frozenset({"call", "binop", "unary", "getitem", "attr"})


#: How many earlier folded constants of the same shape and dtype a new one is compared with.
_FOLDED_COMPARED = 16


def eliminate_common_subexpressions(plan: Plan) -> Plan:
    """Compute once what the plan computes twice from the same values.

    Separate parts of a program often ask the same question (a loss masks the
    ignored targets in its value, in its mean and in its gradient): each asks
    the backend again. A step is read from an earlier one when both compute the
    same function (of the backend namespace: no random draw, no kernel with its
    own state) of the same plan values and literals, and nothing may have
    written into an array between them. Folded constants holding equal arrays
    are merged too. The values are the same bit for bit.
    """
    namespaces = plan.namespaces
    # Arrays written in place, or handed out (a result, a .grad that later steps or calls
    # accumulate into), must stay arrays of their own: merged, a change of one would show
    # in the other. So must what they are views of.
    shared = _written_or_handed_out(plan)
    seen: dict[Any, str] = {}
    # Folded constants by shape and dtype; each new one is compared with the latest few
    # of its kind only, so the pass stays linear in a long plan (a merge is an option).
    folded_seen: dict[Any, list[tuple[str, Any]]] = {}
    renamed: dict[str, str] = {}
    escaping = set(plan.output_refs)
    steps: list[Step] = []
    for step in plan.steps:
        if renamed:
            step = _with_renames(step, renamed)
        if step.effect:
            if _writes(step) and not _only_checks(step):
                seen.clear()  # what was computed before may differ from what is computed after
            steps.append(step)
            continue
        name = step.out
        if name is None or name in escaping:
            steps.append(step)
            continue
        same = None
        if step.kind == "text" and name in plan.folded and step.target == f"folded_{name}":
            array = plan.folded[name]
            kind = folded_seen.setdefault((tuple(array.shape), str(array.dtype)), [])
            same = _equal_folded(array, kind[-_FOLDED_COMPARED:], plan.folded)
            if same is None:
                kind.append((name, array))
        elif step.kind in _PURE_KINDS and name not in shared and _pure_target(step, namespaces):
            key = _key(step)
            if key is not None:
                same = seen.get(key)
                if same is None:
                    seen[key] = name
        if same is None:
            steps.append(step)
        else:
            renamed[name] = same
    if not renamed:
        return plan
    return dataclasses.replace(plan, steps=steps)


def _written_or_handed_out(plan: Plan) -> set[str]:
    """The plan values whose arrays an effect may write, or that leave the plan, and the
    values those may be views of (every value a step that makes no fresh array reads)."""
    shared = set(plan.output_refs)
    for step in plan.steps:
        if step.effect and not _only_checks(step):
            shared.update(step.uses())  # written, or given to code that may write it
        elif step.kind == "text" and type(step.target) is str and "_wrap(" in step.target:
            shared.update(step.uses())  # a Tensor's array: a result or a .grad
    for step in reversed(plan.steps):
        if step.out in shared and not _only_computes(step):
            shared.update(step.uses())
    return shared


def shares_host_memory(plan: Plan) -> bool:
    """Whether the plan writes, returns or keeps in a tensor an array it holds as a constant.

    Host data the function wrapped without a copy (``as_tensor(a)``,
    ``from_numpy(a)``) is a constant of the plan. The plan cannot tell an
    array made inside the function at every call (``np.zeros(3)``: each eager
    call writes a new one) from one that lives on (a global: each eager call
    writes the same one), so where such an array is written or handed out no
    plan is right for both: the call runs eagerly. Read only, it is shared
    safely, and a change made to it between calls is seen, as eagerly.
    """
    # Which values are written or leave the plan: the targets of writes (an index is only
    # read), what is returned or kept in a tensor, and, from the last step back, the first
    # argument of each step that may return a view of it (reshape, getitem, asarray...).
    shared = set(plan.output_refs)
    for step in plan.steps:
        if step.kind in ("setitem", "inplace"):
            shared.update(refs_in(step.args[0]))
        elif step.kind == "call" and step.kwargs.get("out") is not None:
            shared.update(refs_in(step.kwargs["out"]))
        elif (step.effect and not _only_checks(step)) or (
            step.kind == "text" and type(step.target) is str and "_wrap(" in step.target
        ):
            shared.update(step.uses())  # given to code that may write or keep it
    constants = plan.constants
    for step in reversed(plan.steps):
        if step.out not in shared or _only_computes(step):
            continue
        if step.kind == "text":
            if _is_array(constants.get(step.target)) or any(map(_is_array, step.args)):
                return True
            shared.update(step.uses())
        elif step.args:
            if _is_array(step.args[0]):
                return True
            shared.update(refs_in(step.args[0]))
    return False


def _is_array(value: Any) -> bool:
    """Whether ``value`` is an array (a host array held as a constant), not a Ref, a number
    or a dtype (whose class has ``shape`` and ``dtype`` too)."""
    return (
        type(value) is not Ref
        and not isinstance(value, (type, int, float, complex, str))
        and all(hasattr(value, a) for a in ("shape", "dtype", "ndim", "__array_namespace__"))
    )


def _only_checks(step: Step) -> bool:
    """Whether ``step`` is a check that raises (``if v: raise ...``) and writes nothing."""
    return step.kind == "text" and type(step.target) is str and step.target.startswith("if ")


def _pure_target(step: Step, namespaces: dict[str, Any]) -> bool:
    """Whether the function a ``call`` step makes is one of a backend namespace, with no out=."""
    if step.kind != "call":
        return step.kind != "attr" or step.target in ("T", "mT")
    target = step.target
    return (
        type(target) is str and target.partition(".")[0] in namespaces and "out" not in step.kwargs
    )


#: Comparison functions of the standard and the operators it defines as the same function.
_COMPARISON_OPERATORS = {
    "equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
    "greater_equal": ">=",
}  # fmt: skip


def _key(step: Step) -> Any:
    """A hashable description of what ``step`` computes, or None where there is none."""
    kind, target = step.kind, step.target
    if (
        kind == "call"
        and type(target) is str
        and len(step.args) == 2
        and not step.kwargs
        and type(step.args[0]) is Ref
    ):
        # ``a != b`` and ``xp.not_equal(a, b)`` (a an array) give the same booleans.
        symbol = _COMPARISON_OPERATORS.get(target.rpartition(".")[2])
        if symbol is not None:
            kind, target = "binop", symbol
    kwargs = step.kwargs
    try:
        # Asked of every step: plan values, the common arguments, keyed without a call.
        key = (
            kind,
            target,
            tuple([(Ref, v.name) if type(v) is Ref else _value_key(v) for v in step.args]),
            _value_key(kwargs) if kwargs else (),
        )
        hash(key)
    except TypeError:
        return None
    return key


def _value_key(value: Any) -> Any:
    """``value`` as a key: plan values by name, literals by type and value, others by identity."""
    kind = type(value)
    if kind is Ref:
        return (Ref, value.name)
    if kind in _LITERALS:
        # 1, 1.0 and True are equal keys to Python, not to a namespace function; nor are
        # 0.0 and -0.0 (x * 0.0 and x * -0.0 differ in sign): floats by their bits.
        if kind is float:
            return (kind, value.hex())
        if kind is complex:
            return (kind, value.real.hex(), value.imag.hex())
        return (kind, value)
    if kind is tuple or kind is list:
        # Plan values are the common items: their keys made here, without a call.
        return (kind, tuple([(Ref, v.name) if type(v) is Ref else _value_key(v) for v in value]))
    if kind is dict:
        return (dict, tuple([(k, _value_key(v)) for k, v in value.items()]))
    if kind is slice:
        return (slice, _value_key((value.start, value.stop, value.step)))
    if value is None or value is Ellipsis:
        return (kind, value)
    return (id, id(value), value)  # the object itself keeps its id taken


_LITERALS = frozenset({bool, int, float, str, complex})


def _namespace(array: Any) -> Any:
    """The namespace of the backend holding ``array`` (CuPy's and torch's arrays have no
    ``__array_namespace__``)."""
    device = _plugin_tables.device_of_array(array)
    if device is None:
        raise ArgumentError(f"not an array of a registered backend: {type(array).__name__}")
    return device.xp


def _equal_folded(array: Any, seen: list[tuple[str, Any]], folded: dict[str, Any]) -> str | None:
    """The name of an earlier folded constant with the same shape, dtype and values."""
    for name, other in seen:
        if other.shape != array.shape or other.dtype != array.dtype:
            continue
        try:
            xp = _namespace(array)
            if bool(xp.all(xp.equal(array, other))) and _same_kind(other, array):
                return name
        except Exception:  # a library that cannot answer: keep both
            continue
    return None


def _same_kind(a: Any, b: Any) -> bool:
    # NaNs never compare equal, so equal arrays of floats hold no NaN; the sign of a zero
    # still differs between equal values, and a folded value may be divided by.
    try:
        xp = _namespace(a)
        if getattr(a.dtype, "kind", "f") not in ("f", "c"):
            return True
        return bool(xp.all(xp.equal(xp.signbit(a), xp.signbit(b))))
    except Exception:
        return False


#: Functions of arrays that broadcast their operands against one another, element by element.
_BROADCASTING = frozenset(
    {"add", "subtract", "multiply", "divide", "where", "maximum", "minimum", "pow", "greater",
     "less", "equal", "not_equal", "greater_equal", "less_equal", "logical_and", "logical_or"}
)  # fmt: skip
_BROADCASTING_OPERATORS = frozenset({"+", "-", "*", "/", "**", "<", "<=", ">", ">=", "==", "!="})


def read_broadcasts_as_they_are(plan: Plan) -> Plan:
    """Read ``x`` where the plan broadcasts it only to combine it element by element.

    The gradient of a sum is its incoming gradient broadcast to the input's
    shape; the next rule multiplies it (or selects from it) with arrays of that
    shape, which broadcast it anyway. The explicit view costs a call (on NumPy,
    more than the product itself for small arrays). It is dropped when every
    step that reads it is such an operation whose result keeps its shape
    without it; the values are the same.
    """
    broadcasts = [
        step
        for step in plan.steps
        if step.kind == "call"
        and type(step.target) is str
        and step.target.endswith(".broadcast_to")
    ]
    if not broadcasts:
        return plan  # the common case, decided without the map of readers
    readers = _readers(plan, {step.out for step in broadcasts if step.out is not None})
    escaping = set(plan.output_refs)
    meta = plan.meta
    renamed: dict[str, str] = {}
    for step in broadcasts:  # in order: a broadcast of a dropped one reads its source
        if (
            step.target.partition(".")[2] != "broadcast_to"
            or step.target.partition(".")[0] not in plan.namespaces
            or step.out is None
            or step.out in escaping
            or step.kwargs
            or len(step.args) != 2
            or type(step.args[0]) is not Ref
            or step.args[0].name not in meta
        ):
            continue
        source, name = step.args[0].name, step.out
        reads = readers.get(name, [])
        if reads and all(_broadcasts_anyway(r, name, meta[source][0], meta) for r in reads):
            renamed[name] = renamed.get(source, source)
    if not renamed:
        return plan
    steps = [_with_renames(s, renamed) for s in plan.steps if s.out not in renamed]
    return dataclasses.replace(plan, steps=steps)


def _broadcasts_anyway(step: Step, name: str, shape: tuple[int, ...], meta: dict) -> bool:
    """Whether ``step`` combines ``name`` element by element into a result of the same shape
    when ``name`` has ``shape`` instead."""
    if step.effect or step.kwargs or step.out not in meta:
        return False
    if step.kind == "binop":
        if step.target not in _BROADCASTING_OPERATORS:
            return False
    else:
        function = _elementwise_function(step)
        if step.kind != "call" or function is None or function[1] not in _BROADCASTING:
            return False
    shapes = []
    for operand in step.args:
        if type(operand) is Ref:
            if operand.name == name:
                shapes.append(shape)
            elif operand.name in meta:
                shapes.append(meta[operand.name][0])
            else:
                return False
        elif type(operand) not in (bool, int, float):
            return False
    return _broadcast_shape(shapes) == meta[step.out][0]


def _broadcast_shape(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The shape arrays of ``shapes`` broadcast to, or None if they do not."""
    ndim = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(ndim):
        sizes = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0} - {1}
        if len(sizes) > 1:
            return None
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


#: Names of a multiplication, as a step spells it.
_MULTIPLY = ("*", "xp.multiply", "rxp.multiply")


def drop_multiplications_by_one(plan: Plan) -> Plan:
    """Read ``x`` where the plan computes ``1 * x`` (the backward seed times a first rule).

    The engine starts a backward pass from ``ones_like(loss)`` and the first
    rule multiplies by it. For real numbers ``1 * x`` is ``x`` bit for bit, so
    the product is dropped when it has the shape, dtype and memory layout of
    ``x`` and nothing could tell the two apart: every step that reads it makes a
    new array from it (laid out as its operands are), it is not returned, and
    nothing writes into ``x`` before those reads.
    """
    products = [
        (index, other)
        for index, step in enumerate(plan.steps)
        if (other := _times_one(step, plan)) is not None
    ]
    if not products:
        return plan
    readers = _reader_indices(plan)
    escaping = set(plan.output_refs)
    drops: dict[int, tuple[str, str]] = {}
    for index, other in products:
        step = plan.steps[index]
        if step.out is None or step.out in escaping:
            continue
        if plan.strides.get(step.out) != plan.strides.get(other):
            continue  # (ones * x.T is laid out by rows, x.T by columns)
        reads = readers.get(step.out, [])
        if not reads or not all(_only_reads(plan.steps[i], {}) for i in reads):
            continue
        if any(_writes(plan.steps[i]) for i in range(index + 1, max(reads) + 1)):
            continue
        drops[index] = (step.out, other)
    return _drop_renamed(plan, drops)


#: Functions that make a view of their one array argument, reordering its axes.
_TRANSPOSES = frozenset({"matrix_transpose", "permute_dims"})


def drop_reshapes_to_the_same_shape(plan: Plan) -> Plan:
    """Read ``x`` where the plan reshapes ``x`` to the shape it has.

    A matrix product's gradient rule flattens the leading axes of its operands
    (``reshape(g, (-1, n))``), which for a matrix changes nothing but costs a
    call. The reshape is dropped when its value is not returned or stored,
    every step that reads it computes a new array from it (directly, or through
    a transpose whose readers do), and nothing writes into an array between the
    reshape and those reads: where a backend's ``reshape`` copies, nothing could
    tell the copy from ``x``. The values are the same bit for bit.
    """
    meta, namespaces = plan.meta, plan.namespaces
    candidates = []
    for index, step in enumerate(plan.steps):
        label, _, function = (
            step.target.partition(".") if type(step.target) is str else ("", "", "")
        )
        if (
            step.kind == "call"
            and function == "reshape"
            and label in namespaces
            and not step.kwargs
            and len(step.args) == 2
            and type(step.args[0]) is Ref
            and step.out is not None
            and meta.get(step.out) is not None
            and meta.get(step.out) == meta.get(step.args[0].name)
            and plan.strides.get(step.out) == plan.strides.get(step.args[0].name)
        ):
            candidates.append(index)
    if not candidates:
        return plan
    readers = _reader_indices(plan)
    escaping = set(plan.output_refs)
    drops: dict[int, tuple[str, str]] = {}
    for index in candidates:
        step = plan.steps[index]
        out = step.out
        last = _last_computing_read(plan, out, readers, escaping)
        if (
            out is None
            or last is None
            or any(_writes(plan.steps[i]) for i in range(index + 1, last + 1))
        ):
            continue
        drops[index] = (out, step.args[0].name)
    return _drop_renamed(plan, drops)


def _drop_renamed(plan: Plan, drops: dict[int, tuple[str, str]]) -> Plan:
    """The plan without the steps at the indices of ``drops``.

    ``drops`` maps a step's index to its value's name and the name of the value
    it only passed on, which the step's readers then read instead.
    """
    if not drops:
        return plan
    renamed: dict[str, str] = {}
    for _, (out, source) in sorted(drops.items()):
        renamed[out] = renamed.get(source, source)
    kept = [_with_renames(s, renamed) for i, s in enumerate(plan.steps) if i not in drops]
    if any(plan.strides.get(out) is not None for out, _ in drops.values()):
        return _guarding_layouts(plan, kept)  # the layouts compared are the capture's
    return dataclasses.replace(plan, steps=kept)


def _guarding_layouts(plan: Plan, steps: list[Step]) -> Plan:
    """``plan`` with ``steps``, made by a rewrite that is right only for the memory
    layouts the capture saw, and the guards that the inputs are laid out so again."""
    guards = plan.guards + [g for g in plan.layout_guards.values() if g not in plan.guards]
    return dataclasses.replace(plan, steps=steps, guards=guards)


def reduce_without_kept_axes(plan: Plan) -> Plan:
    """Sum without ``keepdims`` where the plan reshapes a sum with kept axes to drop them.

    ``reshape(sum(x, axis=a, keepdims=True), s)``, ``s`` the shape without the
    kept axes, becomes ``sum(x, axis=a)``.

    The engine undoes broadcasting by summing with ``keepdims=True`` and
    reshaping to the input's shape (a bias's gradient): the reduction can drop
    the axes itself, one call instead of two, with the same values bit for bit.
    Only where nothing else reads the kept-axes sum and the result is not 0-d
    (NumPy gives a scalar, not an array, for that).
    """
    meta = plan.meta
    reshapes = [
        index
        for index, step in enumerate(plan.steps)
        if step.kind == "call"
        and type(step.target) is str
        and step.target.partition(".")[2] == "reshape"
        and not step.kwargs
        and len(step.args) == 2
        and type(step.args[0]) is Ref
        and step.out is not None
        and step.out in meta
    ]
    if not reshapes:
        return plan  # decided without the maps below
    reshaped = {plan.steps[index].args[0].name for index in reshapes}
    steps: list[Step | None] = list(plan.steps)
    producers = {s.out: index for index, s in enumerate(plan.steps) if s.out in reshaped}
    uses: dict[str, int] = {}
    for step in plan.steps:
        for name in step.uses():
            if name in reshaped:
                uses[name] = uses.get(name, 0) + 1
    escaping = set(plan.output_refs)
    changed = False
    for index in reshapes:
        step = plan.steps[index]
        kept, out = step.args[0].name, step.out
        at = producers.get(kept)
        if at is None or out is None or kept in escaping or uses.get(kept) != 1 or kept not in meta:
            continue
        reduction = plan.steps[at]
        axes = _kept_axes(reduction, plan)
        shape = meta[out][0]
        if axes is None or shape == ():
            continue
        kept_shape = meta[kept][0]
        if shape != tuple(n for i, n in enumerate(kept_shape) if i not in axes):
            continue
        kwargs = dict(reduction.kwargs)
        kwargs["keepdims"] = False
        steps[index] = Step("call", step.out, reduction.target, reduction.args, kwargs)
        steps[at] = None
        changed = True
    if not changed:
        return plan
    return dataclasses.replace(plan, steps=[s for s in steps if s is not None])


def _kept_axes(step: Step, plan: Plan) -> set[int] | None:
    """The axes ``step`` reduces, if it is a namespace's ``sum`` with ``keepdims=True``."""
    label, _, function = step.target.partition(".") if type(step.target) is str else ("", "", "")
    if (
        step.kind != "call"
        or function != "sum"
        or label not in plan.namespaces
        or step.effect
        or len(step.args) != 1
        or type(step.args[0]) is not Ref
        or step.kwargs.get("keepdims") is not True
        or set(step.kwargs) - {"axis", "keepdims", "dtype"}
        or step.out not in plan.meta
    ):
        return None
    ndim = len(plan.meta[step.out][0])
    axis = step.kwargs.get("axis")
    if axis is None:
        return set(range(ndim))
    axes = (axis,) if type(axis) is int else axis
    if type(axes) is not tuple or not all(type(a) is int and -ndim <= a < ndim for a in axes):
        return None
    return {a % ndim for a in axes}


def _last_computing_read(
    plan: Plan, name: str | None, readers: dict[str, list[int]], escaping: set[str]
) -> int | None:
    """The index of the last step that reads ``name`` if every read makes a new array
    from it, directly or through a transpose whose reads do; otherwise None."""
    if name is None or name in escaping or not readers.get(name):
        return None
    last = -1
    for index in readers[name]:
        step = plan.steps[index]
        if not _only_reads(step, {}):
            if (
                step.effect
                or not _is_transpose(step)
                or len(step.uses()) != 1
                or step.out is None
                or step.out in escaping
                or not readers.get(step.out)
                or not all(_only_reads(plan.steps[i], {}) for i in readers[step.out])
            ):
                return None
            index = max(readers[step.out])
        last = max(last, index)
    return last


def _is_transpose(step: Step) -> bool:
    """Whether ``step`` makes a view of one array with its axes reordered."""
    if step.kind == "attr":
        return step.target in ("T", "mT")
    function = _elementwise_function(step)
    return function is not None and function[1] in _TRANSPOSES


def _with_renames(step: Step, names: dict[str, str]) -> Step:
    """``step``, or a copy of it that reads the new names of the values it reads."""
    if names.keys().isdisjoint(step.uses()):
        return step
    return dataclasses.replace(
        step, args=_renamed(step.args, names), kwargs=_renamed(step.kwargs, names)
    )


def _renamed(value: Any, names: dict[str, str]) -> Any:
    """``value`` with every Ref whose name is in ``names`` made a Ref to the new name."""
    kind = type(value)
    if kind is Ref:
        return Ref(names[value.name]) if value.name in names else value
    if kind is tuple:
        return tuple(_renamed(v, names) for v in value)
    if kind is list:
        return [_renamed(v, names) for v in value]
    if kind is dict:
        return {k: _renamed(v, names) for k, v in value.items()}
    if kind is slice:
        return slice(*(_renamed(v, names) for v in (value.start, value.stop, value.step)))
    return value


def _times_one(step: Step, plan: Plan) -> str | None:
    """The plan value ``x`` if ``step`` computes ``1 * x`` (or ``x * 1``) with ``x``'s type."""
    if (
        not (
            (step.kind == "binop" and step.target == "*")
            or (step.kind == "call" and step.target in _MULTIPLY and not step.kwargs)
        )
        or len(step.args) != 2
    ):
        return None
    for one, other in (step.args, reversed(step.args)):
        if type(other) is not Ref or not _is_one(one, plan):
            continue
        shape_dtype = plan.meta.get(other.name)
        if shape_dtype is None or step.out is None or plan.meta.get(step.out) != shape_dtype:
            continue
        # Not for complex numbers: 1 * (inf + 0j) has a NaN imaginary part.
        if getattr(shape_dtype[1], "kind", None) in ("f", "i", "u"):
            return other.name
    return None


def _is_one(value: object, plan: Plan) -> bool:
    if type(value) in (int, float):
        return value == 1
    if type(value) is not Ref or value.name not in plan.folded:
        return False
    array = plan.folded[value.name]
    try:
        xp = _namespace(array)
        return bool(xp.all(array == 1))
    except Exception:  # an array whose library cannot answer: keep the product
        return False


def _writes(step: Step) -> bool:
    """Whether ``step`` may write into an array (an effect other than setting a ``.grad``)."""
    if not step.effect:
        return False
    return not (step.kind == "text" and _grad_write(step) is not None)


def _grad_write(step: Step) -> str | None:
    """``F[0]`` if ``step`` is ``F[0]._grad = ...``; otherwise None."""
    target = step.target
    if step.kind != "text" or type(target) is not str or step.out is not None:
        return None
    source, found, _ = target.partition("._grad = ")
    if not found or not source.replace("[", "").replace("]", "").replace("_", "").isalnum():
        return None
    return source


#: Python operators and the namespace functions that compute them.
_OPERATOR_FUNCTIONS = {
    "+": "add", "-": "subtract", "*": "multiply", "/": "divide", "**": "pow",
}  # fmt: skip
_UNARY_FUNCTIONS = {"-": "negative", "abs": "abs"}
#: Functions that make a new array (never a view) that nothing else holds.
_OWNED_RESULT = frozenset(
    {"matmul", "exp", "log", "add", "subtract", "multiply", "divide", "negative", "where",
     "maximum", "minimum", "sqrt", "tanh", "abs", "pow", "square", "greater", "less",
     "equal", "not_equal", "greater_equal", "less_equal", "logical_and", "logical_or",
     "sin", "cos", "sigmoid", "log1p", "expm1"}
)  # fmt: skip


def compute_in_place(plan: Plan) -> Plan:
    """Write an elementwise result into an operand that dies there (``out=``), where it fits.

    Hand-written NumPy gets this from NumPy itself: in ``a * b + c`` the sum
    is computed into the product's memory, which nothing else holds. Named
    plan values are always held, so the plan says it: an operand is reused
    when it is a new array the plan made (not an input, a view or a constant),
    every step that reads it only computes from it, this step reads it last,
    it has the result's shape, dtype and memory layout, and the function is one
    that takes ``out=`` (an elementwise NumPy or CuPy ufunc). Values are the same
    bit for bit: a result written into an operand takes that operand's layout, and
    a reduction over it adds in the order of its memory. The layouts compared are
    those of the capture, so a plan that writes so guards its inputs' layouts.
    """
    namespaces = plan.namespaces
    last_use: dict[str, int] = {}
    readers: dict[str, list[Step]] = {}
    for index, step in enumerate(plan.steps):
        for name in step.uses():
            last_use[name] = index
            readers.setdefault(name, []).append(step)
    escaping = set(plan.output_refs)
    owned: set[str] = set()
    steps = list(plan.steps)
    changed = False
    # An operator runs on its operands' library, which is plain ``xp`` when the plan uses one.
    one_library = set(namespaces) <= {"xp", "rxp"}
    takes_out: dict[tuple[str, str], bool] = {}
    for index, step in enumerate(plan.steps):
        if step.out is None or step.kind not in _COMPUTING_KINDS:
            continue  # reads, writes, methods: neither a new array nor one that takes out=
        if step.kind == "attr" and step.target in ("T", "mT"):
            # The transpose of a new array that dies there is a new array too (``linear``
            # computes ``(weight @ x.T).T`` for few rows): a result may go into it.
            operand = step.args[0]
            if (
                type(operand) is Ref
                and operand.name in owned
                and operand.name not in escaping
                and len(readers[operand.name]) == 1
            ):
                owned.add(step.out)
            continue
        if step.kind in ("binop", "unary") and not one_library:
            continue
        function = _elementwise_function(step)
        if function is None:
            continue
        label, name = function
        fits = takes_out.get(function)
        if fits is None:
            namespace = namespaces.get(label)
            known = (id(namespace), name)
            fits = _TAKES_OUT.get(known)
            if fits is None:  # asked of the library once (a namespace's getattr is slow)
                fits = _TAKES_OUT[known] = _takes_out(getattr(namespace, name, None))
            takes_out[function] = fits
        if step.kwargs or not fits:
            if name in _OWNED_RESULT and not step.kwargs:
                owned.add(step.out)
            continue
        owned.add(step.out)
        result = plan.meta.get(step.out)
        layout = plan.strides.get(step.out)
        if result is None or layout is None:  # nothing to compare an operand's with
            continue
        for operand in step.args:
            if (
                type(operand) is Ref
                and operand.name in owned
                and operand.name not in escaping
                and last_use.get(operand.name) == index
                and plan.meta.get(operand.name) == result
                and plan.strides.get(operand.name) == layout
                and result[0] != ()  # NumPy gives scalars, not arrays, for 0-d results
                and all(_only_computes(r) for r in readers[operand.name])
            ):
                steps[index] = Step(
                    "call", step.out, f"{label}.{name}", step.args, {"out": operand}
                )
                changed = True
                break
    return _guarding_layouts(plan, steps) if changed else plan


#: Step kinds that may compute a new array (the others read, write or call methods).
_COMPUTING_KINDS = frozenset({"call", "binop", "unary", "attr"})


def _elementwise_function(step: Step) -> tuple[str, str] | None:
    """(namespace label, function name) that ``step`` calls or an operator stands for."""
    if step.kind == "binop" and step.target in _OPERATOR_FUNCTIONS:
        return "xp", _OPERATOR_FUNCTIONS[step.target]
    if step.kind == "unary" and step.target in _UNARY_FUNCTIONS:
        return "xp", _UNARY_FUNCTIONS[step.target]
    if step.kind == "call" and type(step.target) is str and step.target.count(".") == 1:
        label, _, name = step.target.partition(".")
        return label, name
    return None


#: (id of a backend namespace, function name) -> whether the function takes ``out=``; the
#: namespaces are the long-lived modules of the backends.
_TAKES_OUT: dict[tuple[int, str], bool] = {}

#: Libraries whose ufuncs write into ``out=`` (JAX's have the same type name and refuse it).
_OUT_LIBRARIES = frozenset({"numpy", "cupy"})


def _takes_out(function: Any) -> bool:
    """Whether ``function`` is an elementwise ufunc of one output (which takes ``out=``).

    Not a generalized ufunc (``matmul``): written into one of its own operands,
    NumPy copies that operand first, and the product of the copy may round
    differently (another BLAS path) from the one eager computes.
    """
    kind = type(function)
    return (
        kind.__name__ == "ufunc"
        and kind.__module__.partition(".")[0] in _OUT_LIBRARIES
        and getattr(function, "nout", 0) == 1
        and getattr(function, "signature", None) is None
    )


def _only_computes(step: Step) -> bool:
    """Whether ``step`` only computes a new value from what it reads (no view, no effect)."""
    if step.effect or step.kwargs.get("out") is not None:
        return step.kind == "call" and not step.effect  # reads it as an operand only
    if step.kind in ("binop", "unary"):
        return True
    function = _elementwise_function(step)
    return function is not None and function[1] in _OWNED_RESULT | _REDUCTIONS


_REDUCTIONS = frozenset({"sum", "max", "min", "mean", "prod", "any", "all"})


def run_passes(plan: Plan, rewrites: list[tuple[str, Plan]] | None = None) -> Plan:
    """Run the built-in passes, then those plugins registered, in order.

    A plugin's rewrite that raises or returns something else than a plan is
    skipped with a :class:`~plugrad.errors.CompileWarning` naming the plugin.
    With ``rewrites`` (a list), the plan before the plugins' passes and each
    plan a plugin's pass returned are appended to it, each with a label naming
    the pass (the first labelled ``""``), so that checking mode can compare them.
    """
    plan = eliminate_common_subexpressions(fold_constants(plan))
    plan = drop_reshapes_to_the_same_shape(drop_multiplications_by_one(plan))
    plan = reduce_without_kept_axes(plan)
    plan = read_broadcasts_as_they_are(plan)
    plan = eliminate_dead_code(plan)
    if rewrites is not None:
        rewrites.append(("", compute_in_place(plan)))
    for plugin, rewrite in _registry._state.plan_passes:
        problem: str | None
        try:
            # Its own lists and dicts: a pass that edits them in place and then fails the
            # checks below must leave the plan used without it as it was.
            rewritten = rewrite(_copied(plan))
        except Exception as exc:
            problem = f"raised {type(exc).__name__}: {exc}"
        else:
            if isinstance(rewritten, Plan):
                problem = _malformed(rewritten, plan)
            else:
                problem = f"returned a {type(rewritten).__name__}, not a Plan"
            if problem is None:
                plan = rewritten
                if rewrites is not None:
                    label = (
                        f"the plan pass {getattr(rewrite, '__qualname__', rewrite)!r} of "
                        + _plugin_tables.describe_owner(plugin)
                    )
                    rewrites.append((label, compute_in_place(plan)))
                continue
        warnings.warn(
            f"plugrad.compile: the plan pass {getattr(rewrite, '__qualname__', rewrite)!r} of "
            f"{_plugin_tables.describe_owner(plugin)} {problem}; the plan is used without it",
            CompileWarning,
            stacklevel=user_stacklevel(),  # the call that makes the plan's code
        )
    # Last, so that the passes of plugins see plans without out= arguments.
    return keep_saved_values(compute_in_place(plan))


def _copied(plan: Plan) -> Plan:
    return dataclasses.replace(
        plan,
        steps=list(plan.steps),
        guards=list(plan.guards),
        constants=dict(plan.constants),
        free=list(plan.free),
        namespaces=dict(plan.namespaces),
        folded=dict(plan.folded),
        meta=dict(plan.meta),
        strides=dict(plan.strides),
        layout_guards=dict(plan.layout_guards),
    )


def _malformed(plan: Plan, before: Plan) -> str | None:
    """What makes a plugin pass's plan one that cannot run (a value read before any step
    computes it, a result no step computes, the backward's hand-over dropped), or None."""
    computed: set[str] = set()
    for step in plan.steps:
        for name in step.uses():
            if name not in computed:
                return f"returned a plan that reads {name} before any step computes it"
        if step.out is not None:
            computed.add(step.out)
    missing = [name for name in plan.output_refs if name not in computed]
    if missing:
        return f"returned a plan whose result reads {missing}, which no step computes"
    if (yield_index(plan) is None) != (yield_index(before) is None):
        return "returned a plan without the step that hands the forward's result to its backward"
    return None


def keep_saved_values(plan: Plan) -> Plan:
    """No ``out=`` into a value the backward of a resumable plan reads across passes.

    The backward after a plan's ``yield`` runs once per ``backward()`` through
    the result (``retain_graph=True`` allows more): a value of the forward it
    reads must be the same at each pass, so a result is not written into it
    even where this pass is its last reader.
    """
    saved = saved_across_yield(plan)
    if not saved:
        return plan
    steps = list(plan.steps)
    changed = False
    for index, step in enumerate(steps):
        into = step.kwargs.get("out") if step.kwargs else None
        if type(into) is Ref and into.name in saved:
            kwargs = {k: v for k, v in step.kwargs.items() if k != "out"}
            steps[index] = dataclasses.replace(step, kwargs=kwargs)
            changed = True
    return dataclasses.replace(plan, steps=steps) if changed else plan
