"""Activation checkpointing (PyTorch's ``torch.utils.checkpoint``): memory for compute.

:func:`checkpoint` runs a function without keeping what its operations save
for backward, and runs it again, from the same inputs and random state, when
backward needs its gradients. A network checkpointed in segments keeps only
the segments' inputs and outputs between forward and backward; each segment's
own activations live only while it is computed, once in forward and once in
backward.

Gradients reach the tensor arguments and every tensor that requires grad and
that the function reads without receiving it (parameters, tensors of an
enclosing scope), whichever ``use_reentrant`` is given: ``.backward()``,
:func:`plugrad.autograd.grad` and ``create_graph=True`` work through a
checkpoint as through the function itself. A tensor of an enclosing scope
that is not a leaf (it has a ``grad_fn`` of its own) is best passed as an
argument: read from the scope, its gradient goes on to the leaves behind it
without passing through it (its hooks do not see it), and a backward pass that
freed its graph before reaching the checkpoint raises. The tensors the function
computes are computed anew in backward, and the forward run's are let go: a
hook or ``retain_grad()`` put on one of them from outside sees no gradient
(PyTorch's non-reentrant checkpoint gives it one); hooks on the arguments, the
parameters and the outputs run once, as without a checkpoint.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .. import engine as _engine
from .. import random as _random
from ..errors import ArgumentError, InPlaceModificationError, InvalidArgumentError, PlugradError
from ..function import Function
from ..grad_mode import _state, enable_grad
from ..tensor import Tensor, tensors_in

__all__ = ["CheckpointError", "checkpoint", "checkpoint_sequential"]


class CheckpointError(PlugradError, RuntimeError):
    """The function a checkpoint ran again in backward did not compute what it computed in
    forward (other output shapes or dtypes): its gradients would not be those of forward."""


def _no_contexts() -> tuple[Any, Any]:
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable[[], tuple[Any, Any]] = _no_contexts,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """Return ``function(*args, **kwargs)``, computed again in backward instead of kept.

    The result is the function's: a tensor, or a tuple of tensors and other
    values. Nothing the function's operations save for backward is kept;
    backward runs the function again with the random state it started with
    (``preserve_rng_state``, so dropout draws the same masks) and takes the
    gradients of that run. ``context_fn`` returns two context managers, the
    first entered around the forward run, the second around the run in
    backward. ``determinism_check="default"`` raises :class:`CheckpointError`
    where the second run's outputs differ in shape or dtype (``"none"``:
    unchecked). ``debug`` and ``early_stop`` are taken for PyTorch's signature.

    ``use_reentrant`` should be given, as PyTorch asks (a warning says so);
    both values give the same gradients here, to arguments and to the tensors
    the function reads, parameters included (PyTorch's ``use_reentrant=True``
    gives none where no argument requires grad).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.utils.checkpoint import checkpoint
    >>> layer = plugrad.nn.Linear(3, 3)
    >>> x = plugrad.ones(2, 3, requires_grad=True)
    >>> y = checkpoint(lambda t: layer(t).tanh(), x, use_reentrant=False)
    >>> y.sum().backward()
    >>> x.grad.shape, layer.weight.grad.shape
    ((2, 3), (3, 3))
    """
    if not callable(function):
        raise ArgumentError(f"checkpoint() takes a function to run, got {type(function).__name__}")
    if use_reentrant is None:
        warnings.warn(
            "plugrad.utils.checkpoint: pass use_reentrant explicitly (False is recommended), "
            "as PyTorch asks; both give the same gradients in plugrad",
            stacklevel=2,
        )
    if determinism_check not in ("default", "none"):
        raise InvalidArgumentError(
            f"checkpoint(): determinism_check must be 'default' or 'none', got "
            f"{determinism_check!r}"
        )
    forward_context, recompute_context = context_fn()
    if not _state.enabled:  # nothing to differentiate: run it, keep nothing
        with forward_context:
            return function(*args, **kwargs)
    states = _random.default_generator_states() if preserve_rng_state else None
    inner = _detached(args)
    # Each tensor argument's version: backward runs the function again on them, so a change
    # in place (by the function itself, or after it) would give other gradients.
    versions = [(a, a._version) for a in args if isinstance(a, Tensor)]
    with enable_grad(), forward_context:
        result = function(*inner, **kwargs)
    differentiable = [t for t in tensors_in(result) if t._requires_grad]
    if not differentiable:
        return result
    positions = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a._requires_grad]
    arguments = {id(inner[i]) for i in positions}
    read = _leaves_read(differentiable, arguments)
    plan = _Plan(
        function, args, kwargs, positions, read, states, recompute_context,
        [(t.shape, t.dtype) for t in differentiable], determinism_check == "default", versions,
    )  # fmt: skip
    # The graph of this run is let go here: only the detached outputs are kept.
    kept = tuple(t.detach() for t in differentiable)
    tracked = _Recomputed.apply(plan, kept, *(args[i] for i in positions), *read)
    tracked = tracked if isinstance(tracked, tuple) else (tracked,)
    return _replaced(result, {id(t): new for t, new in zip(differentiable, tracked, strict=True)})


def _replaced(value: Any, new: dict[int, Tensor]) -> Any:
    """``value`` with each tensor whose id is in ``new`` replaced (the containers rebuilt)."""
    if isinstance(value, Tensor):
        return new.get(id(value), value)
    if isinstance(value, (tuple, list)):
        items = [_replaced(item, new) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        return type(value)((key, _replaced(item, new)) for key, item in value.items())
    return value


def checkpoint_sequential(
    functions: Any,
    segments: int,
    input: Tensor,
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Run ``functions`` (a :class:`~plugrad.nn.Sequential` or a list of modules or
    functions) one after the other in ``segments`` checkpointed parts, as PyTorch's: each
    part but the last is run again in backward; the last is kept as usual.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.utils.checkpoint import checkpoint_sequential
    >>> net = plugrad.nn.Sequential(*(plugrad.nn.Linear(4, 4) for _ in range(4)))
    >>> out = checkpoint_sequential(net, 2, plugrad.ones(1, 4), use_reentrant=False)
    >>> out.sum().backward()
    >>> net[0].weight.grad is not None
    True
    """
    if use_reentrant is None:
        warnings.warn(
            "plugrad.utils.checkpoint.checkpoint_sequential: pass use_reentrant explicitly "
            "(False is recommended), as PyTorch asks",
            stacklevel=2,
        )
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)
    if not isinstance(segments, int) or isinstance(segments, bool) or segments < 1:
        raise InvalidArgumentError(
            f"checkpoint_sequential(): segments must be an int >= 1, got {segments!r}"
        )
    if not functions:
        raise InvalidArgumentError("checkpoint_sequential(): no functions to run")
    size = max(len(functions) // segments, 1)
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = min(start + size, len(functions)) - 1
        if start > end:
            break
        input = checkpoint(
            _run_segment(functions[start : end + 1]), input, use_reentrant=bool(use_reentrant),
            **kwargs,
        )  # fmt: skip
    return _run_segment(functions[end + 1 :])(input)


def _run_segment(functions: list[Any]) -> Callable[[Any], Any]:
    def run(value: Any) -> Any:
        for function in functions:
            value = function(value)
        return value

    return run


class _Plan:
    """What backward needs to run a checkpointed function again."""

    def __init__(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        positions: list[int],
        read: list[Tensor],
        states: Any,
        context: Any,
        meta: list[tuple[Any, Any]],
        check: bool,
        versions: list[tuple[Tensor, int]],
    ) -> None:
        self.function, self.args, self.kwargs = function, args, kwargs
        self.positions, self.read, self.states = positions, read, states
        self.context, self.meta, self.check = context, meta, check
        self.versions = versions


class _Recomputed(Function):
    """The checkpointed function as one node: its backward runs the function again."""

    @staticmethod
    def forward(ctx: Any, plan: _Plan, kept: tuple[Tensor, ...], *tensors: Tensor) -> Any:
        ctx.plan = plan
        # Saved, so that an argument written in place before backward is an error.
        ctx.save_for_backward(*tensors[: len(plan.positions)])
        return kept if len(kept) > 1 else kept[0]

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        plan = ctx.plan
        for tensor, version in plan.versions:
            if tensor._version != version:
                raise InPlaceModificationError(
                    f"an argument of a checkpointed function (shape {tensor.shape}) was changed "
                    f"in place since the checkpoint started (version {version}, now "
                    f"{tensor._version}), by the function or after it: running it again in "
                    "backward would not compute what forward did. Change a copy (t = t.clone())"
                )
        arguments = ctx.saved_tensors
        inner = list(_detached(plan.args))
        creating = _state.enabled  # create_graph: the gradients are differentiable
        for position, argument in zip(plan.positions, arguments, strict=True):
            # Under create_graph the run starts from the arguments themselves, so that the
            # gradients it gives are functions of them (a second derivative follows).
            inner[position] = argument if creating else argument.detach().requires_grad_(True)
        with contextlib.ExitStack() as stack:
            if plan.states is not None:
                stack.enter_context(_random.fork_rng())
                _random.set_default_generator_states(plan.states)
            stack.enter_context(enable_grad())
            stack.enter_context(plan.context)
            result = plan.function(*inner, **plan.kwargs)
        outputs = tuple(t for t in tensors_in(result) if t._requires_grad)
        if plan.check and [(o.shape, o.dtype) for o in outputs] != plan.meta:
            raise CheckpointError(
                "a checkpointed function computed outputs of other shapes or dtypes when run "
                f"again in backward ({[(o.shape, o.dtype) for o in outputs]} against "
                f"{plan.meta} in forward): it must compute the same from the same inputs; "
                "keep Python state it reads unchanged until backward"
            )
        pairs = [(o, g) for o, g in zip(outputs, grads, strict=True) if g is not None]
        targets = [inner[p] for p in plan.positions] + list(plan.read)
        found: tuple[Any, ...] = (None,) * len(targets)
        if pairs and targets:
            found = _engine.grad(
                [o for o, _ in pairs], targets, [g for _, g in pairs],
                allow_unused=True, create_graph=creating,
                # (a tensor of an enclosing scope with a graph: its nodes are the caller's)
                retain_graph=True,
                # Their hooks run in the enclosing pass, once, on the whole gradient (they
                # ran here too: a hook doubling a parameter's gradient doubled it twice).
                input_hooks=False,
            )  # fmt: skip
        return (None, None, *found)


def _detached(args: Iterable[Any]) -> tuple[Any, ...]:
    """The arguments, each tensor cut off from the graph (requiring grad where it did)."""
    return tuple(
        a.detach().requires_grad_(a._requires_grad) if isinstance(a, Tensor) else a for a in args
    )


def _leaves_read(outputs: list[Tensor], arguments: set[int]) -> list[Tensor]:
    """The tensors that require grad the graph of ``outputs`` ends in (parameters, tensors
    of an enclosing scope), other than the detached ``arguments``, in the order met."""
    found: dict[int, Tensor] = {}
    seen: set[int] = set()
    stack: list[Any] = [o.grad_fn for o in outputs if o.grad_fn is not None]
    stack += [o for o in outputs if o.grad_fn is None]
    for node in _walk(stack, seen):
        if isinstance(node, Tensor) and id(node) not in arguments:
            found.setdefault(id(node), node)
    return list(found.values())


def _walk(stack: list[Any], seen: set[int]) -> Iterator[Any]:
    """Every node and leaf tensor reachable from ``stack``, each once."""
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        if isinstance(item, Tensor):
            continue
        for entry in item.next_functions:
            if entry is None or entry[0] is None:
                continue
            # A leaf's AccumulateGrad is made at each read of next_functions: the tensor it
            # names, which lives on, is what is kept and compared.
            variable = getattr(entry[0], "variable", None)
            stack.append(variable if isinstance(variable, Tensor) else entry[0])
