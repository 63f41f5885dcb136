"""``plugrad.func``: function transforms built on the reverse-mode engine.

:func:`vjp` and :func:`jvp` give vector-Jacobian and Jacobian-vector
products (:func:`linearize` the latter at one point for many tangents),
:func:`jacobian` whole Jacobians (by rows in reverse mode, by columns in
forward mode), :func:`hessian` and :func:`hvp` second derivatives. Forward
mode is computed as the reverse mode of a reverse pass (the "double-vjp"
construction), so every op with a twice-differentiable backward supports it.

The transforms compose (``hessian`` is ``jacobian`` of ``jacobian``), and
their results stay differentiable with respect to arguments, and tensors the
function closes over (a model's parameters), that require grad; when nothing
outside requires grad, results come back detached. A transform differentiates
with respect to its argument only: other uses of the same tensor in the
function (a closure, another argument) are constants to it, as in
``torch.func``. :func:`grad` takes real-valued outputs, and Jacobians and
Hessians real functions: complex ones raise a
:class:`~plugrad.errors.DtypeError` (use :func:`vjp` and :func:`jvp`).

A result that no output depends on is zeros (its mathematical value); with
``strict=True`` it is an :class:`~plugrad.errors.IndependentInputError`
instead, so that a ``.detach()`` or a ``no_grad`` block inside the function
cannot pass for a zero derivative.

:func:`functional_call` (from :mod:`plugrad.nn.utils.stateless`) calls a module
with other tensors as its parameters, so that a transform can differentiate a
model with respect to them; :func:`stack_module_state` stacks the parameters of
several models for an ensemble run through :func:`vmap`. Arguments and outputs may
be dicts, lists and tuples of Tensors (``torch.func``'s pytrees): a Jacobian is then
the output's structure holding, for each output Tensor, the argument's structure of
blocks, so that
``hessian(loss)(dict(model.named_parameters()))`` is a dict of dicts; ``vjp_fn``
takes cotangents in the output's structure.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from . import dtypes as _dtypes
from . import ops as _ops
from .creation import eye, ones_like, zeros, zeros_like
from .dtypes import is_differentiable
from .engine import grad as _engine_grad
from .errors import (
    ArgumentError,
    BackwardError,
    DtypeError,
    IndependentInputError,
    InvalidArgumentError,
    PlugradError,
    ShapeError,
)
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .gradcheck import basis
from .nn.utils.stateless import functional_call, stack_module_state
from .node import Node, split_edge
from .tensor import Tensor, tensors_in
from .versions import restore_version

__all__ = [
    "functional_call",
    "stack_module_state",
    "vmap",
    "grad",
    "grad_and_value",
    "hessian",
    "hvp",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jvp",
    "linearize",
    "vjp",
]

Function = Callable[..., Any]
Argnums = int | tuple[int, ...]


def _tuple(value: Any, what: str) -> tuple[Tensor, ...]:
    values = value if isinstance(value, tuple) else (value,)
    for index, v in enumerate(values):
        if not isinstance(v, Tensor):
            raise ArgumentError(f"{what} {index} is a {type(v).__name__}; expected a Tensor")
    return values


def _is_tree(output: Any) -> bool:
    """Whether a function's output is a structure beyond a Tensor or a tuple of Tensors:
    a list or dict, or a tuple holding one (torch.func's pytrees)."""
    if isinstance(output, (list, dict)):
        return True
    return isinstance(output, tuple) and any(isinstance(o, (list, tuple, dict)) for o in output)


def _output_parts(output: Any) -> tuple[tuple[Tensor, ...], Callable[[Iterator[Any]], Any]]:
    """The Tensors of a function's output, and how to build its structure from replacements."""
    if _is_tree(output):
        leaves, rebuild = _flatten(output, "the output")
        return tuple(leaves), rebuild
    outputs = _tuple(output, "output")
    if isinstance(output, tuple):  # (a named tuple stays one, as torch.func's)
        return outputs, _rebuilding(output, [(o, next) for o in outputs])
    return outputs, next


#: The fresh leaves transforms made to track their primals, by id: the nesting level of the
#: transform (1 for the outermost). One transform's leaves are constants to the transforms
#: around it: an inner ``grad``'s gradient keeps a graph to its leaf, which must not make
#: the outer one's result keep its graph.
_leaf_levels: dict[int, int] = {}
#: How many transforms are running their function now, one inside another.
_running = [0]


@contextlib.contextmanager
def _running_at(level: int) -> Iterator[None]:
    """While a transform at nesting ``level`` runs its function (in grad mode)."""
    outer, _running[0] = _running[0], level
    try:
        with enable_grad():
            yield
    finally:
        _running[0] = outer


def _tracked(primals: Sequence[Any], level: int) -> list[Tensor]:
    """Primals that record their uses: themselves if they already do, else fresh leaves
    (remembered as the transform's at ``level``)."""
    tracked = []
    for index, p in enumerate(_tuple(tuple(primals), "primal")):
        if not is_differentiable(p.dtype):
            raise DtypeError(
                f"primal {index} is {p.dtype.name}; transforms differentiate with respect to "
                "floating-point (or complex) tensors only"
            )
        # A primal that requires grad is tracked through a copy of its own: the function's
        # other uses of that tensor (a closure, another argument) stay constants here.
        if p.requires_grad:
            with enable_grad():  # (under no_grad the copy was cut off: every gradient 0)
                tracked.append(_ops.positive(p))
            continue
        leaf = p.detach().requires_grad_()
        _leaf_levels[id(leaf)] = level
        weakref.finalize(leaf, _leaf_levels.pop, id(leaf), None)
        tracked.append(leaf)
    return tracked


def _refuse_changed_primals(inputs: Sequence[Tensor], versions: Sequence[int]) -> None:
    """Raise if the function changed a tracked primal in place: the gradient would be with
    respect to the changed value (t.mul_(2) ** 2 gave 4t for 8t), as torch.func refuses."""
    for index, (tensor, version) in enumerate(zip(inputs, versions)):
        if tensor._version != version:
            raise BackwardError(
                f"the function changed primal {index} in place; a transform differentiates "
                "with respect to the value it was given, which that replaces. Compute out "
                "of place (t * 2, not t.mul_(2)), or change a clone (t.clone().mul_(2))"
            )


def _call_at(level: int, inputs: Sequence[Tensor], func: Callable[..., Any], *args: Any,
             **kwargs: Any) -> Any:  # fmt: skip
    """``func(*args, **kwargs)`` at transform ``level``, refusing an in-place change of one of
    the tracked ``inputs`` (see :func:`_refuse_changed_primals`)."""
    versions = [t._version for t in inputs]
    with _running_at(level):
        output = func(*args, **kwargs)
    _refuse_changed_primals(inputs, versions)
    return output


def _reaches_outside(outputs: Sequence[Any], inputs: Sequence[Tensor], level: int) -> bool:
    """Whether ``outputs`` were computed from a tensor that requires grad other than the
    fresh leaves tracking the primals (a parameter the function closes over, a primal of a
    transform around this one at ``level``): then, as torch.func's, the results keep their
    graph to it."""
    fresh = {id(t) for t in inputs if t._edge is None}
    fresh.update(i for i, at in _leaf_levels.items() if at >= level)
    stack = [o._edge for o in outputs if isinstance(o, Tensor) and o._edge is not None]
    seen: set[int] = set()
    while stack:
        edge = stack.pop()
        node = split_edge(edge)[0]
        if not isinstance(node, Node):
            if node._requires_grad and id(node) not in fresh:
                return True
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(e for e in node._edges if e is not None)
    return any(
        isinstance(o, Tensor) and o._edge is None and o._requires_grad and id(o) not in fresh
        for o in outputs
    )


def _finish(value: Tensor, keep_graph: bool) -> Tensor:
    return value if keep_graph else value.detach()


def _independent(what: str) -> IndependentInputError:
    return IndependentInputError(
        f"{what}, so its part of the result would be zeros only because of that, which "
        "strict=True refuses; pass strict=False to get the zeros, or check that the function "
        "does not cut the dependence (.detach(), a no_grad block, a non-differentiable op)"
    )


def _check_outputs_depend(
    outputs: tuple[Tensor, ...], strict: bool, what: Callable[[int], str]
) -> None:
    """Under ``strict``, refuse an output that was not computed from any input."""
    if strict:
        for index, output in enumerate(outputs):
            if not output.requires_grad:
                raise _independent(f"{what(index)} depends on no input")


def _zeros_where_unused(
    grads: Sequence[Tensor | None],
    like: Sequence[Tensor],
    keep_graph: bool,
    strict: bool,
    unused: Callable[[int], str],
) -> tuple[Tensor, ...]:
    """``grads`` with zeros for each ``None`` (refused under ``strict``, ``unused(i)`` says why)."""
    filled = []
    for index, (g, ref) in enumerate(zip(grads, like)):
        if g is None:
            if strict:
                raise _independent(unused(index))
            g = zeros_like(ref)
        filled.append(_finish(g, keep_graph))
    return tuple(filled)


def _gradients(
    outputs: Sequence[Tensor], inputs: Sequence[Tensor], cotangents: Sequence[Tensor | None]
) -> tuple[Tensor | None, ...]:
    """Differentiable gradients of ``outputs``, ``None`` for an input none of them depends on.

    Outputs computed from nothing that requires grad contribute nothing (the
    engine would refuse them as roots).
    """
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    roots, seeds = zip(*pairs)
    return _engine_grad(roots, inputs, seeds, True, True, allow_unused=True)


def _refuse_integer_outputs(name: str, outputs: Sequence[Any]) -> None:
    """An integer or bool output has no derivative: its gradients came out zeros."""
    for index, output in enumerate(outputs):
        if isinstance(output, Tensor) and not is_differentiable(output.dtype):
            raise DtypeError(
                f"{name}: output {index} is {output.dtype.name}, which has no derivative (the "
                "result would be zeros); differentiate a floating-point output (convert it "
                "with .to(plugrad.float32) where its values should carry a gradient)"
            )


def _no_output_uses(index: int) -> str:
    return f"no output of the function depends on input {index}"


def _split_aux(func: Function, has_aux: bool, name: str) -> tuple[Function, list[Any]]:
    """``func`` giving only its output, and the list its first call's ``aux`` goes into,
    for ``has_aux=True`` (``func`` returns the pair ``(output, aux)``)."""
    if not has_aux:
        return func, []
    box: list[Any] = []

    def output_only(*args: Any, **kwargs: Any) -> Any:
        result = func(*args, **kwargs)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise InvalidArgumentError(
                f"{name}: with has_aux=True the function must return a pair (output, aux), "
                f"got a {type(result).__name__}"
            )
        if not box:
            box.append(result[1])
        return result[0]

    return output_only, box


def _output_name(index: int) -> str:
    return f"output {index} of the function"


def _uses_no_input(index: int) -> str:
    return f"{_output_name(index)} depends on no input"


def _vjp(
    func: Function, primals: Sequence[Tensor], strict: bool, forward: bool = False
) -> tuple[
    Any,
    tuple[Tensor, ...],
    list[Tensor],
    bool,
    Callable[..., tuple[Tensor, ...]],
    Callable[[Iterator[Any]], Any],
]:
    """:func:`vjp`'s work: the raw output and its Tensors, the tracked inputs, keep the graph?,
    the product function (one cotangent per output Tensor) and how to rebuild the output.
    ``forward``: for a forward-mode Jacobian, where an integer output is let through (its
    columns are zeros of its dtype, as torch.func.jacfwd's)."""
    # Results keep a graph only where one is recorded: not under no_grad, as torch.func's.
    recording = is_grad_enabled()
    keep = recording and any(p.requires_grad for p in _tuple(tuple(primals), "primal"))
    level = _running[0] + 1
    inputs = _tracked(primals, level)
    output = _call_at(level, inputs, func, *inputs)
    outputs, rebuild = _output_parts(output)
    if not forward:
        _refuse_integer_outputs("vjp", outputs)
    _check_outputs_depend(outputs, strict, _output_name)
    keep = keep or (recording and _reaches_outside(outputs, inputs, level))

    def vjp_fn(*cotangents: Any) -> tuple[Tensor, ...]:
        if (
            isinstance(output, tuple)
            and len(cotangents) == 1
            and isinstance(cotangents[0], (tuple, list))
        ):
            cotangents = tuple(cotangents[0])  # PyTorch's form: one tuple, as func returned
        if len(cotangents) != len(outputs):
            raise InvalidArgumentError(
                f"vjp_fn takes one cotangent per output of the function: {len(outputs)}, "
                f"got {len(cotangents)}; pass one tensor shaped like each output"
            )
        keep_result = keep or any(c.requires_grad for c in _tuple(cotangents, "cotangent"))
        with enable_grad():
            grads = _gradients(outputs, inputs, cotangents)
        return _zeros_where_unused(grads, inputs, keep_result, strict, _no_output_uses)

    return output, outputs, inputs, keep, vjp_fn, rebuild


def vjp(func: Function, *primals: Tensor, strict: bool = False, has_aux: bool = False) -> Any:
    """Evaluate ``func(*primals)`` and return it with its vector-Jacobian product function.

    With ``strict=True``, an output computed from no primal, or a primal no
    output depends on, raises :class:`~plugrad.errors.IndependentInputError`
    (when ``func`` or ``vjp_fn`` runs) instead of giving zeros.

    Returns
    -------
    output : Tensor or tuple of Tensor
        ``func(*primals)``.
    vjp_fn : callable
        ``vjp_fn(*cotangents)`` (one per output, of its shape; for a tuple of
        outputs also PyTorch's ``vjp_fn((c1, c2))``) returns one gradient per
        primal: ``cotangent @ d output / d primal``.
    aux : optional
        With ``has_aux=True`` (``func`` returns ``(output, aux)``), the ``aux``
        it returned, as a third result.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0])
    >>> out, vjp_fn = plugrad.func.vjp(lambda t: t * t, x)
    >>> vjp_fn(plugrad.ones(2))
    (tensor([2., 4.]),)
    """
    main, aux = _split_aux(func, has_aux, "vjp")
    finished: Any
    if any(not isinstance(p, Tensor) for p in primals):
        finished, vjp_fn, inputs, keep = _vjp_of_structures(main, primals, strict)
    else:
        output, outputs, inputs, keep, vjp_fn, rebuild = _vjp(main, primals, strict)
        finished = rebuild(iter([_finish(o, keep) for o in outputs]))
        if _is_tree(output):
            vjp_fn = _taking_structures(vjp_fn, output)
    if not has_aux:
        return finished, vjp_fn
    return finished, vjp_fn, _aux_finished(aux[0], keep, inputs)


def _vjp_of_structures(
    func: Function, primals: Sequence[Any], strict: bool
) -> tuple[Any, Callable[..., tuple[Any, ...]], list[Tensor], bool]:
    """:func:`vjp` where primals are dicts, lists or tuples of Tensors (torch.func's pytrees):
    the output in its structure, and a ``vjp_fn`` taking cotangents in the output's structure
    and giving gradients in the primals'."""
    flattened = [_flatten(p, f"primal {i}") for i, p in enumerate(primals)]
    leaves = [leaf for part, _ in flattened for leaf in part]
    structure: list[Any] = []

    def over_leaves(*values: Tensor) -> tuple[Tensor, ...]:
        replacements = iter(values)
        output = func(*(rebuild(replacements) for _, rebuild in flattened))
        output_leaves, rebuild_output = _flatten(output, "the output")
        structure[:] = [output, rebuild_output]
        return tuple(output_leaves)

    output, _, inputs, keep, leaves_vjp, _ = _vjp(over_leaves, leaves, strict)
    template, rebuild_output = structure
    finished = rebuild_output(iter([_finish(o, keep) for o in output]))
    taking_structures = _taking_structures(leaves_vjp, template)

    def vjp_fn(*cotangents: Any) -> tuple[Any, ...]:
        grads = iter(taking_structures(*cotangents))
        return tuple(rebuild(grads) for _, rebuild in flattened)

    return finished, vjp_fn, inputs, keep


def _taking_structures(
    leaves_vjp: Callable[..., tuple[Tensor, ...]], template: Any
) -> Callable[..., tuple[Tensor, ...]]:
    """``leaves_vjp`` (one cotangent per output Tensor) taking cotangents in the structure
    of the output ``template`` instead."""

    def vjp_fn(*cotangents: Any) -> tuple[Tensor, ...]:
        given = cotangents[0] if len(cotangents) == 1 else cotangents
        return leaves_vjp(*_leaves_like(given, template, "cotangents"))

    return vjp_fn


def _leaves_like(value: Any, template: Any, where: str, of: str = "the output") -> list[Any]:
    """The parts of ``value`` where ``template`` (an output, or what ``of`` names) has its
    Tensors, in its order."""
    if isinstance(template, Tensor):
        return [value]
    if isinstance(template, dict) and isinstance(value, dict) and set(value) == set(template):
        return [
            x for k in template for x in _leaves_like(value[k], template[k], f"{where}[{k!r}]", of)
        ]  # fmt: skip
    if (
        isinstance(template, (list, tuple))
        and isinstance(value, (list, tuple))
        and len(value) == len(template)
    ):
        return [
            x for i, (v, t) in enumerate(zip(value, template))
            for x in _leaves_like(v, t, f"{where}[{i}]", of)
        ]  # fmt: skip
    if isinstance(template, dict) and isinstance(value, dict):
        found = f"the keys {list(value)}, where {of} has {list(template)}"
    elif isinstance(value, type(template)) and hasattr(template, "__len__"):
        found = f"{len(value)} parts, where {of} has {len(template)}"
    else:
        found = f"a {type(value).__name__}, where {of} has a {type(template).__name__}"
    whose = "the function's output" if of == "the output" else of
    raise ArgumentError(f"{where} must have the structure of {whose}; it has {found}")


def grad_and_value(
    func: Function, argnums: Argnums = 0, has_aux: bool = False
) -> Callable[..., tuple[Any, Any]]:
    """Return a function giving the gradient of ``func`` and its value, as ``torch.func``'s.

    ``func`` returns a 0-d tensor (with ``has_aux=True``, a pair ``(output, aux)``);
    the new function returns ``(gradient, output)`` (``(gradient, (output, aux))``),
    the gradient with respect to the argument at ``argnums``, or a tuple of them
    for a tuple of argnums. An argument may be a dict, list or tuple of tensors
    (nested), such as a model's parameters by name for :func:`functional_call`;
    its gradient has the same structure. Transforms compose: ``grad(grad(f))`` is
    the second derivative. An integer or bool output has gradient zeros, as
    ``torch.func.grad``'s (where :func:`vjp` and :func:`jacrev` refuse it).

    Examples
    --------
    >>> import plugrad
    >>> g, value = plugrad.func.grad_and_value(lambda x: (x * x).sum())(plugrad.tensor([1.0, 2.0]))
    >>> g, value
    (tensor([2., 4.]), tensor(5.))
    """

    def grad_and_value_of_func(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        chosen = _argnums(argnums, len(args))
        # An argument may be a Tensor or a dict, list or tuple of them (nested): the
        # gradient has its structure, as torch.func's (grad(loss)(dict(model.named_parameters()))).
        flattened = [_flatten(args[i], f"argument {i}") for i in chosen]
        primals = [leaf for leaves, _ in flattened for leaf in leaves]
        recording = is_grad_enabled()
        keep = recording and any(p.requires_grad for p in primals)
        level = _running[0] + 1
        inputs = _tracked(primals, level)
        call = list(args)
        tracked = iter(inputs)
        for index, (_, rebuild) in zip(chosen, flattened):
            call[index] = rebuild(tracked)
        main, aux = _split_aux(func, has_aux, "grad")
        output = _call_at(level, inputs, main, *call, **kwargs)
        if isinstance(output, Tensor) and output.dtype.kind == "complex floating":
            raise DtypeError(
                f"grad() differentiates a real-valued function, got a {output.dtype.name} "
                "output; take its real part, abs() or another real function of it"
            )
        # (an integer or bool output is let through: its gradient is zeros, as torch.func's,
        # where vjp and jacrev refuse it)
        if not isinstance(output, Tensor) or output.ndim != 0:
            shape = f"shape {output.shape}" if isinstance(output, Tensor) else type(output).__name__
            raise ShapeError(
                f"grad() differentiates a function whose output is one number (a 0-d tensor), "
                f"got {shape}; reduce it (.sum(), .mean()), or use plugrad.func.vjp"
            )
        keep = keep or (recording and _reaches_outside([output], inputs, level))
        flat_grads = iter(
            _zeros_where_unused(
                _gradients([output], inputs, [None]), inputs, keep, False, _no_output_uses
            )
        )
        grads = tuple(rebuild(flat_grads) for _, rebuild in flattened)
        gradient = grads[0] if isinstance(argnums, int) else grads
        value = _finish(output, keep)
        if not has_aux:
            return gradient, value
        # Computed from the tracked copies: no graph outside, wherever in aux they are.
        return gradient, (value, _aux_finished(aux[0], keep, inputs))

    return grad_and_value_of_func


def grad(func: Function, argnums: Argnums = 0, has_aux: bool = False) -> Callable[..., Any]:
    """Return a function giving the gradient of ``func``, as ``torch.func.grad``.

    As :func:`grad_and_value`, without the value: the gradient, or
    ``(gradient, aux)`` with ``has_aux=True``.

    Examples
    --------
    >>> import plugrad
    >>> cube = lambda x: (x**3).sum()
    >>> plugrad.func.grad(cube)(plugrad.tensor([1.0, 2.0]))
    tensor([ 3., 12.])
    >>> plugrad.func.grad(plugrad.func.grad(lambda x: x**3))(plugrad.tensor(2.0))
    tensor(12.)
    """
    both = grad_and_value(func, argnums, has_aux)

    def grad_of_func(*args: Any, **kwargs: Any) -> Any:
        gradient, value = both(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return grad_of_func


def jvp(
    func: Function,
    primals: Sequence[Any],
    tangents: Sequence[Any],
    *,
    strict: bool = False,
    has_aux: bool = False,
) -> Any:
    """Evaluate ``func(*primals)`` and its Jacobian-vector product with ``tangents``.

    Computed as the derivative, with respect to a dummy cotangent ``u``, of
    ``<u, J>`` contracted with the tangents: two reverse passes. A primal may be
    a dict, list or tuple of tensors (nested, ``torch.func``'s pytrees), its
    tangent then of the same structure. With ``strict=True``, an output computed
    from no primal, or a primal no output depends on, raises
    :class:`~plugrad.errors.IndependentInputError`.

    Returns
    -------
    output, jvp_out
        ``func(*primals)`` and ``J @ tangents`` in the output's structure (an
        integer or bool output's part is zeros of its dtype, as ``torch.func``'s);
        with ``has_aux=True`` (``func`` returns ``(output, aux)``), its ``aux`` third.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0])
    >>> plugrad.func.jvp(lambda t: t**3, (x,), (plugrad.ones(2),))
    (tensor([1., 8.]), tensor([ 3., 12.]))
    """
    main, aux = _split_aux(func, has_aux, "jvp")
    if (
        isinstance(primals, (tuple, list))
        and isinstance(tangents, (tuple, list))
        and any(not isinstance(v, Tensor) for v in (*primals, *tangents))
    ):  # dicts, lists and tuples of Tensors (torch.func's pytrees): over their Tensors
        main, primals, tangents = _over_tensors_of(main, primals, tangents, "jvp")
    tangents, keep, inputs, output = _evaluate(main, primals, tangents, "jvp")
    outputs, rebuild = _output_parts(output)
    _check_outputs_depend(outputs, strict, _output_name)
    columns = _pushforward(outputs, inputs, strict)(tangents)
    products = _zeros_where_unused(columns, outputs, keep, strict, _uses_no_input)
    finished = rebuild(iter([_finish(o, keep) for o in outputs]))
    result = (finished, rebuild(iter(products)))
    return (*result, _aux_finished(aux[0], keep, inputs)) if has_aux else result


def linearize(func: Function, *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """Evaluate ``func(*primals)`` and return it with a function giving its Jacobian-vector
    products at ``primals``, as ``torch.func.linearize``.

    ``func`` runs once, and the reverse pass the products are made of is recorded
    once: each ``jvp_fn(*tangents)`` costs one more pass, against two and a call of
    ``func`` for each :func:`jvp`. The primals (and tangents) may be dicts, lists and
    tuples of tensors, as ``torch.func``'s pytrees.

    Returns
    -------
    output
        ``func(*primals)``.
    jvp_fn : callable
        ``jvp_fn(*tangents)``, one tangent per primal, of its structure, shapes and
        dtypes, returns ``J @ tangents`` in the output's structure: what
        ``jvp(func, primals, tangents)[1]`` gives.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0])
    >>> output, jvp_fn = plugrad.func.linearize(lambda t: t**3, x)
    >>> output
    tensor([1., 8.])
    >>> jvp_fn(plugrad.ones(2)), jvp_fn(plugrad.tensor([1.0, 0.0]))
    (tensor([ 3., 12.]), tensor([3., 0.]))
    """
    if not primals:
        raise InvalidArgumentError(
            "linearize needs primals: the point to linearize func at, as linearize(func, x)"
        )
    flattened = [_flatten(primal, f"primal {i}") for i, primal in enumerate(primals)]
    leaves = [leaf for part, _ in flattened for leaf in part]
    recording = is_grad_enabled()
    keep = recording and any(leaf.requires_grad for leaf in leaves)
    level = _running[0] + 1
    inputs = _tracked(leaves, level)
    output = _call_at(level, inputs, _on_leaves(func, flattened), *inputs)
    outputs, rebuild_output = _output_parts(output)
    keep = keep or (recording and _reaches_outside(outputs, inputs, level))
    push = _pushforward(outputs, inputs, strict=False)
    finished = rebuild_output(iter([_finish(o, keep) for o in outputs]))

    def jvp_fn(*tangents: Any) -> Any:
        if len(tangents) != len(primals):
            raise InvalidArgumentError(
                f"jvp_fn takes one tangent per primal given to linearize: {len(primals)}, "
                f"got {len(tangents)}; pass one shaped like each primal"
            )
        given = [
            leaf
            for i, (tangent, primal) in enumerate(zip(tangents, primals))
            for leaf in _leaves_like(tangent, primal, f"tangent {i}", f"primal {i}")
        ]
        for index, (tangent, primal) in enumerate(zip(given, leaves)):
            if not isinstance(tangent, Tensor):
                raise ArgumentError(
                    f"jvp_fn: tangent {index} is a {type(tangent).__name__}; pass a Tensor "
                    "shaped like its primal"
                )
            if tangent.shape != primal.shape or tangent.dtype != primal.dtype:
                raise (ShapeError if tangent.shape != primal.shape else DtypeError)(
                    f"jvp_fn: tangent {index} is {tangent.dtype.name} of shape "
                    f"{tangent.shape}, its primal {primal.dtype.name} of shape {primal.shape}; "
                    "pass a tangent of its primal's shape and dtype"
                )
        keep_result = keep or (is_grad_enabled() and any(t.requires_grad for t in given))
        columns = push(given)
        products = _zeros_where_unused(columns, outputs, keep_result, False, _uses_no_input)
        return rebuild_output(iter(products))

    return finished, jvp_fn


def _on_leaves(
    func: Function, flattened: Sequence[tuple[list[Tensor], Callable[[Iterator[Any]], Any]]]
) -> Function:
    """``func`` called with the Tensors of its arguments, each argument :func:`_flatten`-ed
    into ``flattened``: it is given the arguments' structures back."""

    def over_leaves(*values: Tensor) -> Any:
        replacements = iter(values)
        return func(*(rebuild(replacements) for _, rebuild in flattened))

    return over_leaves


def _over_tensors_of(
    func: Function, primals: Sequence[Any], tangents: Sequence[Any], name: str
) -> tuple[Function, list[Tensor], list[Any]]:
    """For primals that are dicts, lists and tuples of Tensors (nested): ``func`` taking
    their Tensors, those Tensors, and the tangents' parts in their place (each tangent of
    its primal's structure, as torch.func's)."""
    if len(primals) != len(tangents):
        raise InvalidArgumentError(
            f"{name} needs one tangent per primal: {len(primals)}, got {len(tangents)}; "
            "pass one shaped like each primal"
        )
    flattened = [_flatten(primal, f"primal {i}") for i, primal in enumerate(primals)]
    leaves = [leaf for part, _ in flattened for leaf in part]
    given = [
        leaf
        for i, (tangent, primal) in enumerate(zip(tangents, primals))
        for leaf in _leaves_like(tangent, primal, f"tangent {i}", f"primal {i}")
    ]
    return _on_leaves(func, flattened), leaves, given


def _pushforward(
    outputs: tuple[Tensor, ...], inputs: Sequence[Tensor], strict: bool
) -> Callable[[Sequence[Tensor]], tuple[Tensor | None, ...]]:
    """``J @ tangents`` for the recorded ``outputs`` of ``inputs``, as a function of the
    tangents, ``None`` for an output computed from no input: the derivative, with respect to
    a dummy cotangent ``u``, of ``<u, J>`` contracted with the tangents. The first reverse
    pass is made once, so each product costs one more (the function is not run again)."""
    # An integer or bool output has no dummy: its tangent is None (zeros of its dtype, as
    # torch.func's forward mode gives).
    carried = [k for k, o in enumerate(outputs) if is_differentiable(o.dtype)]
    with enable_grad():
        dummies = [zeros_like(outputs[k]).requires_grad_() for k in carried]
        transposed = _gradients([outputs[k] for k in carried], inputs, dummies)
    unused = [index for index, g in enumerate(transposed) if g is None]
    if strict and unused:
        raise _independent(_no_output_uses(unused[0]))

    def push(tangents: Sequence[Tensor]) -> tuple[Tensor | None, ...]:
        used = [(g, t) for g, t in zip(transposed, tangents) if g is not None]
        with enable_grad():
            columns = _gradients([g for g, _ in used], dummies, [t for _, t in used])
        found: list[Tensor | None] = [None] * len(outputs)
        for k, column in zip(carried, columns):
            found[k] = column
        return tuple(found)

    return push


def _evaluate(
    func: Function, primals: Sequence[Tensor], tangents: Sequence[Tensor], name: str
) -> tuple[tuple[Tensor, ...], bool, list[Tensor], Any]:
    """Check the tangents, then run ``func`` on tracked primals.

    Returns the tangents as a tuple, whether the results keep their graph, the
    tracked inputs and ``func``'s output.
    """
    for what, given in (("primals", primals), ("tangents", tangents)):
        if isinstance(given, Tensor):  # tuple() would split it into its rows
            raise ArgumentError(
                f"{name} takes the {what} as a tuple of tensors, got a Tensor; pass (x,)"
            )
    primals = _tuple(tuple(primals), "primal")
    tangents = _tuple(tuple(tangents), "tangent")
    if len(primals) != len(tangents):
        raise InvalidArgumentError(
            f"{name} needs one tangent per primal: {len(primals)}, got {len(tangents)}; "
            "pass one tensor shaped like each primal"
        )
    for index, (p, t) in enumerate(zip(primals, tangents)):
        if t.shape != p.shape:
            raise ShapeError(
                f"{name}: tangent {index} has shape {t.shape} but its primal has shape "
                f"{p.shape}; pass a tangent shaped like its primal"
            )
    recording = is_grad_enabled()
    keep = recording and any(v.requires_grad for v in (*primals, *tangents))
    level = _running[0] + 1
    inputs = _tracked(primals, level)
    output = _call_at(level, inputs, func, *inputs)
    outputs = _output_parts(output)[0]
    keep = keep or (recording and _reaches_outside(outputs, inputs, level))
    return tangents, keep, inputs, output


def _aux_finished(aux: Any, keep: bool, inputs: Sequence[Tensor]) -> Any:
    """``aux`` finished: with its graph where it reaches past this transform's own inputs
    (a parameter the function closes over), as torch.func's (it came back detached)."""
    if not keep and is_grad_enabled():
        keep = _reaches_outside(tensors_in(aux), inputs, _running[0] + 1)
    return _finish_each(aux, keep)


def _finish_each(value: Any, keep: Any) -> Any:
    """``value`` with each Tensor in it (in dicts, lists and tuples, nested) finished."""
    if isinstance(value, Tensor):
        return _finish(value, keep)
    if isinstance(value, dict):
        return type(value)({k: _finish_each(v, keep) for k, v in value.items()})
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_finish_each(v, keep) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_finish_each(v, keep) for v in value)
    return value


_TRANSFORM_INPUT = (
    "a transform differentiates with respect to Tensors, or dicts, lists and tuples of them"
)
_VMAP_INPUT = (
    "vmap() maps over Tensors, or dicts, lists and tuples of them; pass its in_dims entry as "
    "None to give it whole to every slice"
)
_VMAP_OUTPUT = (
    "vmap() stacks Tensors (or dicts, lists and tuples of them) returned by the function; "
    "return a Tensor (plugrad.tensor(value)), or pass out_dims=None for that output if it "
    "is the same in every slice"
)


def _flatten(
    value: Any, where: str, rule: str = _TRANSFORM_INPUT
) -> tuple[list[Tensor], Callable[[Iterator[Any]], Any]]:
    """The Tensors of ``value`` (a Tensor, or a dict, list or tuple of them, nested) in order,
    and a function building the same structure from an iterator of replacements; ``rule``
    says in an error what was expected."""
    if isinstance(value, Tensor):
        return [value], next
    if isinstance(value, dict):
        keys = list(value)
        parts = [_flatten(value[k], f"{where}[{k!r}]", rule) for k in keys]
        leaves = [leaf for part, _ in parts for leaf in part]
        mapping = type(value)  # (an OrderedDict stays one)
        return leaves, lambda it: mapping((k, rebuild(it)) for k, (_, rebuild) in zip(keys, parts))
    if isinstance(value, (list, tuple)):
        parts = [_flatten(v, f"{where}[{i}]", rule) for i, v in enumerate(value)]
        leaves = [leaf for part, _ in parts for leaf in part]
        return leaves, _rebuilding(value, parts)
    raise ArgumentError(f"{where} is a {type(value).__name__}; {rule}")


def _rebuilding(value: tuple[Any, ...] | list[Any], parts: list[Any]) -> Callable[..., Any]:
    """How :func:`_flatten` builds a list or tuple like ``value`` from the ``rebuild`` of
    each of its ``parts``: a named tuple as its own type (x.max(0)'s, a user's), as
    torch.func's pytrees."""
    kind = type(value)
    if hasattr(value, "_fields"):
        return lambda it: kind(*(rebuild(it) for _, rebuild in parts))
    return lambda it: kind(rebuild(it) for _, rebuild in parts)


def _argnums(argnums: int | tuple[int, ...], n: int) -> tuple[int, ...]:
    chosen = (argnums,) if isinstance(argnums, int) else argnums
    if not isinstance(chosen, (tuple, list)) or any(not isinstance(a, int) for a in chosen):
        raise ArgumentError(
            f"argnums must be an int or a tuple of ints (the positions of the arguments to "
            f"differentiate with respect to), got {argnums!r}"
        )
    chosen = tuple(chosen)
    if not chosen or any(not -n <= a < n for a in chosen):
        raise InvalidArgumentError(
            f"argnums {argnums!r} does not name arguments of a call with {n}; "
            f"give indices from {-n} to {n - 1}"
        )
    chosen = tuple(a % n for a in chosen)
    if len(set(chosen)) < len(chosen):
        raise InvalidArgumentError(
            f"argnums {argnums!r} names an argument twice; name each argument once (the "
            "gradient with respect to one argument is one result)"
        )
    return chosen


def jacobian(
    func: Function, argnums: Argnums = 0, *, mode: str = "reverse", strict: bool = False
) -> Function:
    """Return a function computing the Jacobian of ``func`` with respect to argument(s) ``argnums``.

    The Jacobian of an output of shape ``O`` with respect to an input of shape
    ``I`` has shape ``O + I``. ``mode="reverse"`` builds it one output element
    at a time (cheap for few outputs), ``mode="forward"`` one input element at
    a time (cheap for few inputs). With ``strict=True``, a block whose output
    does not depend on its input raises
    :class:`~plugrad.errors.IndependentInputError` instead of being zeros.

    Examples
    --------
    >>> import plugrad
    >>> jac = plugrad.func.jacobian(lambda t: t * t)
    >>> jac(plugrad.tensor([1.0, 3.0]))
    tensor([[2., 0.],
            [0., 6.]])
    """
    return _jacobian(func, argnums, mode, strict, of_gradients=False)


def _jacobian(
    func: Function, argnums: int | tuple[int, ...], mode: str, strict: bool, of_gradients: bool
) -> Function:
    """:func:`jacobian`; ``of_gradients``: ``func`` returns the gradients (for :func:`hessian`)."""
    if mode not in ("reverse", "forward"):
        raise InvalidArgumentError(f"mode must be 'reverse' or 'forward', got {mode!r}")

    def jacobian_of(*args: Any) -> Any:
        chosen = _argnums(argnums, len(args))
        if any(not isinstance(args[a], Tensor) for a in chosen):
            return _jacobian_of_structures(func, args, chosen, argnums, mode, strict, of_gradients)

        def partial(*primals: Tensor) -> Any:
            full = list(args)
            for a, p in zip(chosen, primals):
                full[a] = p
            return func(*full)

        primals = [args[a] for a in chosen]
        # The function runs once in either mode: its side effects (a module's running
        # statistics) happen once, and a random op's draw is one draw for every column.
        _, outputs, inputs, keep, vjp_fn, rebuild = _vjp(
            partial, primals, strict=False, forward=mode == "forward"
        )
        if strict:
            _check_blocks(outputs, inputs, chosen, of_gradients)
        _refuse_complex("a Jacobian", primals, outputs)
        if mode == "reverse":
            blocks = [[_rows(vjp_fn, primals, outputs, k, i) for i in range(len(primals))]
                      for k in range(len(outputs))]  # fmt: skip
        else:
            push = _pushforward(outputs, inputs, strict=False)
            blocks = [[_columns(push, keep, primals, outputs, k, i) for i in range(len(primals))]
                      for k in range(len(outputs))]  # fmt: skip
        result = [b[0] if isinstance(argnums, int) else tuple(b) for b in blocks]
        return rebuild(iter(result))

    return jacobian_of


def _jacobian_of_structures(
    func: Function,
    args: Sequence[Any],
    chosen: tuple[int, ...],
    argnums: Argnums,
    mode: str,
    strict: bool,
    of_gradients: bool,
) -> Any:
    """The Jacobian where arguments are dicts, lists or tuples of Tensors (torch.func's
    pytrees, a module's parameters): computed over their Tensors, then given the output's
    structure, each output Tensor's part the arguments' structure."""
    flattened = [_flatten(args[a], f"argument {a}") for a in chosen]
    leaves = [leaf for part, _ in flattened for leaf in part]
    output_structure: list[Callable[[Iterator[Any]], Any]] = []

    def over_leaves(*values: Tensor) -> tuple[Tensor, ...]:
        replacements = iter(values)
        full = list(args)
        for a, (_, rebuild) in zip(chosen, flattened):
            full[a] = rebuild(replacements)
        output_leaves, rebuild_output = _flatten(func(*full), "the output")
        output_structure[:] = [rebuild_output]
        return tuple(output_leaves)

    every_leaf = tuple(range(len(leaves)))
    rows = _jacobian(over_leaves, every_leaf, mode, strict, of_gradients)(*leaves)
    per_output = []
    for row in rows:  # one per output Tensor, a block per input Tensor
        blocks = iter(row)
        parts = [rebuild(blocks) for _, rebuild in flattened]
        per_output.append(parts[0] if isinstance(argnums, int) else tuple(parts))
    return output_structure[0](iter(per_output))


def _refuse_complex(what: str, primals: Sequence[Any], outputs: Sequence[Any]) -> None:
    """Jacobians of complex functions have no one convention (torch.func refuses them too)."""
    for kind, values in (("input", primals), ("output", outputs)):
        for index, value in enumerate(values):
            if isinstance(value, Tensor) and value.dtype.kind == "complex floating":
                raise DtypeError(
                    f"{what} of a function with a complex {kind} ({kind} {index} is "
                    f"{value.dtype.name}) is not defined here: a complex function is not "
                    "complex-differentiable in general. Split it into real and imaginary "
                    "parts (plugrad.real, plugrad.imag), or use vjp/jvp, which follow "
                    "PyTorch's conjugate convention"
                )


def _check_blocks(
    outputs: tuple[Tensor, ...], inputs: list[Tensor], chosen: tuple[int, ...], of_gradients: bool
) -> None:
    """Refuse a Jacobian block that is zeros because its output does not depend on its input."""
    for k, out in enumerate(outputs):
        name = (
            f"the gradient with respect to input {chosen[k]}" if of_gradients else _output_name(k)
        )
        if not out.requires_grad:
            raise _independent(f"{name} depends on no input")
        reached = _engine_grad(out, inputs, zeros_like(out), True, False, allow_unused=True)
        for i, g in zip(chosen, reached):
            if g is None:
                raise _independent(f"{name} does not depend on input {i}")


def _rows(
    vjp_fn: Any, primals: list[Tensor], outputs: tuple[Tensor, ...], k: int, i: int
) -> Tensor:
    out = outputs[k]
    if out.size == 0:  # no rows to stack: the block is empty
        return zeros(out.shape + primals[i].shape, dtype=primals[i].dtype, device=out.device)
    rows = []
    for element in range(out.size):
        cotangents = [basis(o, element) if j == k else zeros_like(o) for j, o in enumerate(outputs)]
        rows.append(vjp_fn(*cotangents)[i])
    return _ops.reshape(_ops.stack(rows), out.shape + rows[0].shape)


def _columns(
    push: Callable[[Sequence[Tensor]], tuple[Tensor | None, ...]],
    keep: bool,
    primals: list[Tensor],
    outputs: tuple[Tensor, ...],
    k: int,
    i: int,
) -> Tensor:
    x = primals[i]
    if x.size == 0:  # no columns to stack: the block is empty
        return zeros(outputs[k].shape + x.shape, dtype=outputs[k].dtype, device=x.device)
    columns = []
    for element in range(x.size):
        tangents = [basis(p, element) if j == i else zeros_like(p) for j, p in enumerate(primals)]
        column = push(tangents)[k]
        columns.append(_finish(zeros_like(outputs[k]) if column is None else column, keep))
    stacked = _ops.stack(columns, axis=-1)  # output shape + (number of input elements,)
    return _ops.reshape(stacked, outputs[k].shape + x.shape)


def jacrev(
    func: Function,
    argnums: int | tuple[int, ...] = 0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
) -> Function:
    """:func:`jacobian` in reverse mode, as ``torch.func.jacrev``.

    With ``has_aux=True`` (``func`` returns ``(output, aux)``) the new function
    returns ``(jacobian, aux)``. ``chunk_size`` (how many rows PyTorch computes
    at once) is taken for PyTorch code: rows are computed one at a time here.
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise InvalidArgumentError(f"jacrev: chunk_size must be a positive int, got {chunk_size!r}")
    return _jacobian_with_aux(func, argnums, "reverse", has_aux, "jacrev")


def jacfwd(
    func: Function,
    argnums: int | tuple[int, ...] = 0,
    has_aux: bool = False,  # (by position too, as torch.func's; jacrev's is keyword-only)
    *,
    randomness: str = "error",
) -> Function:
    """:func:`jacobian` in forward mode, as ``torch.func.jacfwd``.

    With ``has_aux=True`` (``func`` returns ``(output, aux)``) the new function
    returns ``(jacobian, aux)``. The function runs once, and each column is a
    product with its Jacobian: ``randomness`` is taken for PyTorch code, and a
    random op's one draw holds for every column (PyTorch's ``randomness="same"``).
    The Jacobian of an integer or bool output is zeros of its dtype, as
    ``torch.func.jacfwd``'s (where :func:`jacrev` refuses it).
    """
    if randomness not in ("error", "different", "same"):
        raise InvalidArgumentError(
            f"jacfwd: randomness must be 'error', 'different' or 'same', got {randomness!r}"
        )
    return _jacobian_with_aux(func, argnums, "forward", has_aux, "jacfwd")


def _jacobian_with_aux(
    func: Function, argnums: int | tuple[int, ...], mode: str, has_aux: bool, name: str
) -> Function:
    if not has_aux:
        return jacobian(func, argnums, mode=mode)

    def jacobian_and_aux(*args: Any) -> tuple[Any, Any]:
        main, aux = _split_aux(func, True, name)
        result = jacobian(main, argnums, mode=mode)(*args)
        # aux keeps its graph where it reaches a tensor that requires grad outside the
        # transform (an argument, in a dict too, or a parameter the function closes over),
        # as torch.func's; only the arguments were looked at (W of a closure lost its part).
        keep = is_grad_enabled() and (
            any(t.requires_grad for t in tensors_in(args))
            or _reaches_outside(tensors_in(aux[0]), (), _running[0] + 1)
        )
        return result, _finish_each(aux[0], keep)

    return jacobian_and_aux


def hessian(
    func: Function, argnums: Argnums = 0, *, mode: str = "reverse", strict: bool = False
) -> Function:
    """Return a function computing the Hessian of scalar-valued ``func``.

    It is the Jacobian (built in ``mode``) of the gradient. With
    ``strict=True``, a block that would be zeros because ``func`` does not
    depend on an input, or the gradient with respect to one input does not
    depend on another, raises :class:`~plugrad.errors.IndependentInputError`.

    Examples
    --------
    >>> import plugrad
    >>> h = plugrad.func.hessian(lambda t: plugrad.sum(t**3))
    >>> h(plugrad.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    gradient = _jacobian(func, argnums, "reverse", strict, of_gradients=False)
    return _jacobian(gradient, argnums, mode, strict, of_gradients=True)


def hvp(
    func: Function, primals: Sequence[Tensor], tangents: Sequence[Tensor], *, strict: bool = False
) -> tuple[Tensor, Any]:
    """Evaluate scalar-valued ``func(*primals)`` and its Hessian times ``tangents``.

    Uses two reverse passes and the symmetry of the Hessian, without forming
    it. With ``strict=True``, an input ``func`` does not depend on, a gradient
    that depends on no input, or an input no gradient depends on raises
    :class:`~plugrad.errors.IndependentInputError` instead of giving zeros.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0])
    >>> plugrad.func.hvp(lambda t: plugrad.sum(t**3), (x,), (plugrad.ones(2),))
    (tensor(9.), (tensor([ 6., 12.]),))
    """
    tangents, keep, inputs, output = _evaluate(func, primals, tangents, "hvp")
    with enable_grad():
        if not isinstance(output, Tensor) or output.size != 1:
            raise InvalidArgumentError(
                "hvp needs a function that returns a single one-element tensor; reduce what "
                "it returns to one (for example return its .sum())"
            )
        gradients = _gradients((output,), inputs, (None,))
        if strict:
            _check_gradients(gradients)
        used = [(g, t) for g, t in zip(gradients, tangents) if g is not None]
        products = _gradients([g for g, _ in used], inputs, [t for _, t in used])
    return _finish(output, keep), _zeros_where_unused(
        products, inputs, keep, strict, lambda j: f"no gradient depends on input {j}"
    )


def _check_gradients(gradients: tuple[Tensor | None, ...]) -> None:
    for index, g in enumerate(gradients):
        if g is None:
            raise _independent(f"the function does not depend on input {index}")
        if not g.requires_grad:
            raise _independent(f"the gradient with respect to input {index} depends on no input")


def vmap(
    func: Function,
    in_dims: int | tuple[int | None, ...] | None = 0,
    out_dims: int | tuple[Any, ...] | None = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Function:
    """Return ``func`` mapped over a dimension of its arguments, as ``torch.func.vmap``.

    ``in_dims`` gives, per argument (or for all), the dimension mapped over, or
    ``None`` for an argument passed whole to every call; an argument may be a
    dict, list or tuple of tensors (nested), mapped over the same dimension.
    The results, one per slice, are stacked along ``out_dims``. Transforms
    compose: ``vmap(grad(loss), in_dims=(None, 0, 0))`` gives per-sample gradients.
    An ``out_dims`` entry may itself be a tuple (or dict) shaped as its output,
    as ``torch.func``'s: ``out_dims=(0, (0, 1))`` for outputs ``(a, (b, c))``.

    Each slice is one call of ``func``: plugrad has no batching rules, so the
    result is exactly that of a Python loop over the slices, stacked, and takes
    as long. ``randomness`` holds for every generator, the default ones and those
    passed as ``generator=``: ``"error"`` (the default) refuses a draw before it
    is made, ``"different"`` lets each slice draw its own numbers, ``"same"``
    gives every slice the numbers the first drew (each generator is then where one
    slice's draws leave it, as ``torch.func``'s). ``chunk_size`` is accepted for
    PyTorch code (slices run one at a time anyway).

    An argument passed whole (``in_dims`` None) that ``func`` changes in place is
    changed once, as ``torch.func.vmap`` changes it, where every slice makes the
    same change (``b.add_(1.0)``): each slice starts from its value before the
    call, and is checked to leave it as the first did. A change that differs
    between slices (``b.add_(row)``), which ``torch.func.vmap`` refuses, raises
    :class:`~plugrad.errors.InvalidArgumentError` and is undone; so is every
    change to them by a call that raises. With one slice a change cannot be told
    apart: it is made. The tensors passed whole are copied for this at each
    call. An in-place change of a tensor the function reaches without receiving
    it is made once per slice, where ``torch.func.vmap`` makes it once, or refuses
    to write a mapped value into it: keep such writes out of ``func``. The buffers
    of the modules in training mode ``func`` reaches (``func`` itself, a bound method's module, a
    ``functools.partial``'s arguments, the modules in its closure and in the
    globals its code names) are an exception, treated as tensors passed whole: a
    training ``BatchNorm``'s update of its running statistics, which differs
    between slices, is refused and undone, as ``torch.func.vmap`` refuses it.

    Over a dimension of size 0 the results are empty, as ``torch.func.vmap``'s:
    ``func`` runs once on a stand-in slice, which gives the shapes and dtypes
    of its outputs: zeros, or where ``func`` refuses them (``linalg.inv``), an
    identity matrix in the last two dims, then ones. The stand-in draws no
    random numbers that stay drawn, and its changes to arguments passed whole
    are undone (``torch.func.vmap`` makes one with values that are not mapped).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.func import vmap
    >>> x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> vmap(lambda row: (row * row).sum())(x)
    tensor([ 5., 25.])
    >>> vmap(lambda row, w: row @ w, in_dims=(0, None))(x, plugrad.tensor([1.0, -1.0]))
    tensor([-1., -1.])
    """
    if randomness not in ("error", "different", "same"):
        raise InvalidArgumentError(
            f"vmap(): randomness must be 'error', 'different' or 'same', got {randomness!r}"
        )
    if chunk_size is not None and (
        isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1
    ):
        raise InvalidArgumentError(f"vmap(): chunk_size must be a positive int, got {chunk_size!r}")

    def mapped(*args: Any, **kwargs: Any) -> Any:
        from .random import watching_draws

        dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise InvalidArgumentError(
                f"vmap(): in_dims has {len(dims)} entries for a call with {len(args)} arguments; "
                "give one per argument (None for an argument passed whole)"
            )
        parts: list[tuple[list[Tensor], list[int | None], Callable[[Iterator[Any]], Any]] | None]
        parts = []
        size = None
        for index, (arg, dim) in enumerate(zip(args, dims)):
            if dim is None:
                parts.append(None)
                continue
            leaves, rebuild = _flatten(arg, f"argument {index}", _VMAP_INPUT)
            leaf_dims = _leaf_dims(arg, dim, f"in_dims[{index}]", len(leaves))
            axes: list[int | None] = []
            for leaf, dim in zip(leaves, leaf_dims):
                if dim is None:  # (a part of the argument passed whole: in_dims=((0, None),))
                    axes.append(None)
                    continue
                if not -leaf.ndim <= dim < leaf.ndim:
                    raise InvalidArgumentError(
                        f"vmap(): argument {index} has a tensor of shape {leaf.shape}, which "
                        f"has no dimension {dim} to map over"
                    )
                axis = dim % leaf.ndim
                if size is None:
                    size = leaf.shape[axis]
                elif leaf.shape[axis] != size:
                    raise ShapeError(
                        f"vmap(): the mapped dimensions differ in size ({size} and "
                        f"{leaf.shape[axis]}, in argument {index}); map over equal sizes"
                    )
                axes.append(axis)
            parts.append((leaves, axes, rebuild))
        if size is None:
            raise InvalidArgumentError(
                "vmap(): no argument is mapped over (every in_dims entry is None, or no "
                "tensor); map over at least one"
            )
        # Arguments passed whole to every slice: a change in place is made once, as
        # torch.func's, where every slice makes the same; else refused, undone.
        whole = [(f"argument {index}", t) for index, dim in enumerate(dims) if dim is None
                 for t in tensors_in(args[index])]  # fmt: skip
        whole += [(f"argument {index}", leaf) for index, part in enumerate(parts)
                  if part is not None for leaf, axis in zip(part[0], part[1])
                  if axis is None]  # fmt: skip
        # The buffers of the modules the function reaches (a BatchNorm's running statistics)
        # are treated alike: torch.func refuses a training BatchNorm's update of them.
        whole += _buffers_reached(func)
        passed_whole = _PassedWhole(whole)
        draws = _Draws(randomness, rewind=size == 0)

        def call_on(slice_of: Callable[[Tensor, int], Tensor]) -> Any:
            call = list(args)
            for index, part in enumerate(parts):
                if part is not None:
                    leaves, axes, rebuild = part
                    sliced = (leaf if axis is None else slice_of(leaf, axis)
                              for leaf, axis in zip(leaves, axes))  # fmt: skip
                    call[index] = rebuild(sliced)
            return func(*call, **kwargs)

        try:
            with watching_draws(draws):
                if size == 0:
                    stand_ins = _stand_in_fills(parts)
                    result = _first_that_runs(call_on, stand_ins, passed_whole, draws)
                    return _stacked([result], out_dims, empty=True)
                results = []
                for i in range(size):
                    if i:
                        passed_whole.start_slice()
                        if randomness == "same":
                            draws.rewind()
                    results.append(call_on(functools.partial(_slice, i=i)))
                    passed_whole.check(i)
        except BaseException:
            passed_whole.undo()
            raise
        finally:
            if size == 0:
                passed_whole.undo()  # (the stand-in's changes: see _first_that_runs)
                draws.rewind()  # (an empty batch draws no numbers)
        return _stacked(results, out_dims)

    return mapped


def _leaf_dims(value: Any, dims: Any, where: str, count: int) -> list[int | None]:
    """The ``in_dims`` entry of each Tensor of ``value``, in :func:`_flatten`'s order: one int
    (or None) for all of them, or a tuple, list or dict of entries shaped as ``value``."""
    if dims is None or (isinstance(dims, int) and not isinstance(dims, bool)):
        return [dims] * count
    if isinstance(dims, (tuple, list)) and isinstance(value, (tuple, list)):
        if len(dims) != len(value):
            raise InvalidArgumentError(
                f"vmap(): {where} has {len(dims)} entries for an argument of {len(value)}; "
                "give one per element (None for one passed whole)"
            )
        pairs = list(zip(value, dims))
    elif isinstance(dims, dict) and isinstance(value, dict):
        if set(dims) != set(value):
            raise InvalidArgumentError(
                f"vmap(): {where} has the keys {sorted(map(repr, dims))} for an argument with "
                f"the keys {sorted(map(repr, value))}; give one entry per key"
            )
        pairs = [(value[key], dims[key]) for key in value]
    else:
        raise InvalidArgumentError(
            f"vmap(): {where} must be an int, None, or a tuple, list or dict of them shaped "
            f"as its argument, got {dims!r} for a {type(value).__name__}"
        )
    found: list[int | None] = []
    for item, entry in pairs:
        found += _leaf_dims(item, entry, where, len(_flatten(item, where, _VMAP_INPUT)[0]))
    return found


class _Draws:
    """What :func:`vmap`'s ``randomness`` does with the draws of its function, called
    before each one (see :func:`plugrad.random.watching_draws`): refuses it ("error"), or
    notes the state of each generator before its first draw, to give every slice the same
    numbers ("same") or to draw none for an empty batch (``rewind``)."""

    def __init__(self, randomness: str, rewind: bool) -> None:
        self.randomness = randomness
        self.rewinds = rewind or randomness == "same"
        self.refused = False
        self.starts: dict[int, tuple[Any, Any]] = {}  # id: (generator, state before)

    def __call__(self, generator: Any) -> None:
        if self.randomness == "error":
            self.refused = True  # (the draw is not made: every stream stays where it was)
            raise InvalidArgumentError(
                "vmap(): the function draws random numbers, and randomness='error'; pass "
                "randomness='different' (each slice its own) or 'same'"
            )
        if self.rewinds and id(generator) not in self.starts:
            try:
                state = generator.get_state()
            except NotImplementedError:  # a stream that cannot be saved: only "same" needs it
                if self.randomness == "same":
                    raise
                return
            self.starts[id(generator)] = (generator, state)

    def rewind(self) -> None:
        """Put every generator drawn from back where it was before its first draw."""
        for generator, state in self.starts.values():
            generator.set_state(state)


class _PassedWhole:
    """The tensors :func:`vmap` gives whole to every slice (``in_dims`` None), and what the
    slices change of them in place: a change every slice makes alike (from values that are
    not mapped) is made once, as ``torch.func``'s; one that differs between slices is
    refused, as ``torch.func`` refuses to write a mapped value there, and undone."""

    def __init__(self, whole: list[tuple[str, Tensor]]) -> None:
        self.whole = whole
        # (copies: a refused change must be undone, and the loop cannot know beforehand)
        with no_grad():
            self.before = [(t._version, t.clone(), t._edge, t._requires_grad) for _, t in whole]
        self.made: dict[int, Tensor] = {}  # position: the tensor as slice 0 left it

    def check(self, i: int) -> None:
        """Refuse what slice ``i`` changed in place unless slice 0 changed it alike."""
        for position, (where, tensor) in enumerate(self.whole):
            changed = tensor._version != self.before[position][0]
            if i == 0:
                if changed:
                    with no_grad():
                        self.made[position] = tensor.clone()
                continue
            made = self.made.get(position)
            if made is None and not changed:
                continue
            if made is not None and changed and _equal(tensor, made):
                continue
            how = (
                f"in slice {i} but not in slice 0" if made is None
                else f"in slice 0 but not in slice {i}" if not changed
                else "with values that differ between slices (they depend on a mapped "
                "argument, as torch.func refuses too)"
            )  # fmt: skip
            if where.startswith("argument"):
                whole = "which in_dims passes whole (None) to every slice"
                fix = "Change a copy (x.clone()), or map over it"
            else:
                whole = "which every slice shares"
                fix = (
                    "Put the module in eval mode (model.eval()) where it updates running "
                    "statistics in training, or keep such writes out of the function"
                )
            raise InvalidArgumentError(
                f"vmap(): the function changed {where} in place, {whole}, {how}: the change "
                f"cannot be made once for all of them. Nothing was changed. {fix}"
            )

    def start_slice(self) -> None:
        """Give the next slice the tensors slice 0 changed as they were before it: it makes
        the change again (then checked to be the same), on the same history."""
        for position in self.made:
            self._put_back(position)

    def undo(self) -> None:
        """Put back every tensor changed in place as it was before the call."""
        for position, (_, tensor) in enumerate(self.whole):
            if position in self.made or tensor._version != self.before[position][0]:
                self._put_back(position)

    def _put_back(self, position: int) -> None:
        tensor = self.whole[position][1]
        version, values, edge, requires_grad = self.before[position]
        with no_grad():
            tensor.copy_(values)
        restore_version(tensor, version)
        tensor._edge, tensor._requires_grad = edge, requires_grad


def _buffers_reached(func: Any) -> list[tuple[str, Tensor]]:
    """The buffers of the modules in training mode that ``func`` reaches, described: ``func``
    itself, a bound method's module, a ``functools.partial``'s function and arguments, and
    the modules in ``func``'s closure and in the globals its code names (not those of
    functions it calls)."""
    from .nn.module import Module

    reached: list[Any] = []
    if isinstance(func, functools.partial):
        reached += [func.func, *func.args, *func.keywords.values()]
        func = func.func
    reached += [func, getattr(func, "__self__", None)]
    code = getattr(func, "__code__", None)
    if code is not None:
        reached += [_contents(cell) for cell in func.__closure__ or ()]
        names = getattr(func, "__globals__", {})
        reached += [names[name] for name in code.co_names if name in names]
    found: list[tuple[str, Tensor]] = []
    seen: set[int] = set()
    for value in reached:
        if not isinstance(value, Module) or id(value) in seen:
            continue
        seen.add(id(value))
        for prefix, module in value.named_modules():
            if not module.training:  # (it updates no running statistics: nothing copied)
                continue
            for name, buffer in module.named_buffers(prefix=prefix, recurse=False):
                if id(buffer) not in seen:
                    seen.add(id(buffer))
                    found.append((f"the buffer {name} of {type(value).__name__}", buffer))
    return found


def _contents(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # (a cell not yet assigned)
        return None


def _slice(leaf: Tensor, axis: int, i: int) -> Tensor:
    """Slice ``i`` of ``leaf`` along ``axis``: a view, as torch.func's (changes reach it)."""
    return leaf[(slice(None),) * axis + (i,)]


def _stand_in_fills(
    parts: Sequence[tuple[list[Tensor], list[int | None], Any] | None],
) -> list[str]:
    """The stand-in slices :func:`vmap` tries for an empty batch, in order: zeros, then ones
    on the diagonal of the last two dims (an identity matrix, which inv and cholesky take)
    where a slice has two dims, then ones."""
    matrices = any(
        leaf.ndim > 2 for part in parts if part is not None
        for leaf, axis in zip(part[0], part[1]) if axis is not None
    )  # fmt: skip
    return ["zeros", "identity", "ones"] if matrices else ["zeros", "ones"]


def _first_that_runs(
    call_on: Callable[[Callable[[Tensor, int], Tensor]], Any],
    fills: list[str],
    passed_whole: _PassedWhole,
    draws: _Draws,
) -> Any:
    """The result of the function on the first stand-in slice of ``fills`` it runs on (for
    an empty batch, only to tell the structure, shapes and dtypes of its outputs): a
    function refusing some values (inv of zeros) is tried on the next, its changes to
    arguments undone; raises the first error where it runs on none."""
    first: PlugradError | None = None
    for fill in fills:
        try:
            return call_on(functools.partial(_stand_in, fill=fill))
        except PlugradError as error:
            if draws.refused:
                raise
            first = first or error
            passed_whole.undo()
            draws.rewind()
    assert first is not None
    raise first


def _stand_in(leaf: Tensor, axis: int, fill: str) -> Tensor:
    """``fill`` (see :func:`_stand_in_fills`) shaped as one slice of ``leaf`` along its
    (empty) ``axis``: a function of ``leaf`` where that can be differentiated (the empty
    result then is too, as torch.func's)."""
    shape = leaf.shape[:axis] + leaf.shape[axis + 1 :]
    values = zeros(shape, dtype=leaf.dtype, device=leaf.device)
    if fill == "ones" or (fill == "identity" and len(shape) < 2):
        values = ones_like(values)
    elif fill == "identity":
        diagonal = eye(shape[-2], shape[-1], dtype=_dtypes.bool, device=leaf.device)
        values = _ops.where(diagonal, ones_like(values), values)
    if leaf.requires_grad and is_differentiable(leaf.dtype):
        return leaf.sum(axis) + values  # (a sum over no elements: zeros)
    return values


def _equal(first: Any, other: Any) -> bool:
    """Whether two slices' values are the same: Tensors of one shape, equal
    (NaN where the other has NaN), or equal other values."""
    if isinstance(first, Tensor) and isinstance(other, Tensor):
        if first.shape != other.shape:
            return False
        with no_grad():
            return bool(_ops.all((first == other) | ((first != first) & (other != other))))
    return not isinstance(first, Tensor) and not isinstance(other, Tensor) and first == other


def _unmapped(column: list[Any], where: str) -> Any:
    """The one value of an output whose ``out_dims`` entry is None: the same in every slice."""
    first = column[0]
    for other in column[1:]:
        if other is not first and not _equal(first, other):
            raise InvalidArgumentError(
                f"vmap(): out_dims is None for {where}, but it differs between slices (it "
                "depends on a mapped argument); give it a dim to stack along"
            )
    return first


def _stacked(results: list[Any], out_dims: Any, *, empty: bool = False) -> Any:
    """The results of the slices, each output stacked along its ``out_dims`` entry; with
    ``empty``, ``results`` is the one result of a stand-in slice, and each stack has none."""
    first = results[0]
    if not isinstance(first, tuple):
        dims = out_dims if isinstance(out_dims, tuple) else (out_dims,)
        if len(dims) != 1:
            raise InvalidArgumentError(f"vmap(): out_dims has {len(dims)} entries for 1 output")
        return _stacked_output(results, dims[0], "output 0", empty)
    dims = out_dims if isinstance(out_dims, tuple) else (out_dims,) * len(first)
    names = [f"output {position}" for position in range(len(first))]
    return _stacked_parts(results, dims, names, f"{len(first)} outputs", empty)


def _stacked_parts(
    column: list[Any], dims: Any, names: list[str], what: str, empty: bool = False
) -> Any:
    """Each part of a tuple or list output of every slice stacked along its entry of ``dims``;
    ``what`` names the output's parts in an error."""
    first = column[0]
    if len(dims) != len(first):
        raise InvalidArgumentError(f"vmap(): out_dims has {len(dims)} entries for {what}")
    parts = [
        _stacked_output([value[k] for value in column], dim, name, empty)
        for k, (dim, name) in enumerate(zip(dims, names))
    ]
    # A named tuple stays one (x.max(0) mapped has .values), as torch.func's.
    return type(first)(*parts) if hasattr(first, "_fields") else type(first)(parts)


def _stacked_output(column: list[Any], dim: Any, where: str, empty: bool = False) -> Any:
    """One output of every slice, stacked along ``dim``: an int (every Tensor in it), None
    (given once), or a tuple, list or dict of those matching the output's structure."""
    first = column[0]
    if dim is None:  # torch.func's: an output no slice changes, given once
        return _unmapped(column, where)
    if isinstance(dim, int):
        dim = int(dim)  # (True as 1: torch.func's takes a bool as the int it is)
        leaves_per_slice = [_flatten(value, where, _VMAP_OUTPUT) for value in column]
        rebuild = leaves_per_slice[0][1]
        joined = [
            _ops.stack([leaves[k] for leaves, _ in leaves_per_slice], axis=dim)
            for k in range(len(leaves_per_slice[0][0]))
        ]
        if empty:  # (the stand-in slice's stack of one, less that one)
            joined = [t[(slice(None),) * (dim % t.ndim) + (slice(0, 0),)] for t in joined]
        return rebuild(iter(joined))
    if isinstance(dim, (tuple, list)) and isinstance(first, (tuple, list)):
        names = [f"{where}[{k}]" for k in range(len(first))]
        return _stacked_parts(column, dim, names, f"{where}, which has {len(first)}", empty)
    if isinstance(dim, dict) and isinstance(first, dict):
        if set(dim) != set(first):
            raise InvalidArgumentError(
                f"vmap(): out_dims for {where} has the keys {list(dim)}, where it has {list(first)}"
            )
        return type(first)(
            (key, _stacked_output([v[key] for v in column], dim[key], f"{where}[{key!r}]", empty))
            for key in first
        )
    raise InvalidArgumentError(
        f"vmap(): out_dims for {where} must be an int, None, or a tuple (or dict) of them "
        f"shaped as that output; got {dim!r} for a {type(first).__name__}"
    )
