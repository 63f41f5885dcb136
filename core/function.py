"""User-defined differentiable operations, the PyTorch way."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, ClassVar

from . import anomaly as _anomaly
from . import saved_tensor_hooks as _saved_tensor_hooks
from .dispatch import saved_version
from .engine import note_borrowed
from .errors import (
    ArgumentError,
    BackwardError,
    FunctionBackwardError,
    GraphFreedError,
    NotSupportedError,
    PlugradError,
)
from .grad_mode import _state
from .graph import Node, check_versions, output_edge
from .inplace import AliasChangedNode, check_family, refuse_view_made_without_grad, relink_family
from .tensor import Tensor, _object_new, _wrap
from .tensor_hooks import move_retain_grad
from .versions import ALIAS, DETACHED, add_alias, memory_family

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class _SavedOutput:
    """Stands in ``ctx`` for a saved output, so the graph holds no tensor -> node cycle."""

    # _counter: the version counter shared with the output tensor, for the in-place check.
    __slots__ = ("_counter", "array", "index")

    def __init__(self, array: Any, index: int, counter: list[int]) -> None:
        self.array = array
        self.index = index
        self._counter = counter


class FunctionCtx(Node):
    """The ``ctx`` of a :class:`Function`; after ``apply`` it is also the output's ``grad_fn``.

    Store anything the backward needs as attributes (``ctx.axis = axis``);
    tensors go through :meth:`save_for_backward` so they are freed after backward.

    Attributes
    ----------
    needs_input_grad : tuple of bool
        For each argument of ``apply``, whether a gradient is needed for it.
    """

    # No __slots__: user code stores its own attributes on ctx.
    _function: ClassVar[type[Function]]
    _saved: tuple[Any, ...] | None
    _input_meta: tuple[Any, ...]
    _output_specs: tuple[Any, ...]

    def __init__(self) -> None:
        self._hooks = None
        self._saved = ()
        self._versions: tuple[int, ...] | None = None
        self._non_differentiable: set[int] = set()
        self._dirty: tuple[Tensor, ...] = ()
        self._materialize_grads = True
        self.needs_input_grad: tuple[bool, ...] = ()
        #: How many arguments apply() received (fewer than the inputs where setup_context's
        #: binding filled defaults in); for the error on a wrong count of gradients.
        self._n_received = 0

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Save tensors (inputs or outputs of ``forward``) for use in ``backward``."""
        for index, tensor in enumerate(tensors):
            if tensor is not None and not isinstance(tensor, Tensor):
                raise ArgumentError(
                    f"{self._function.__name__}.forward: save_for_backward() takes Tensors or "
                    f"None, but argument {index} is a {type(tensor).__name__}; store other "
                    "values as ctx attributes instead (ctx.value = ...)"
                )
        self._saved = tensors

    def save_for_forward(self, *tensors: Tensor | None) -> None:
        """Accept tensors for a ``jvp`` staticmethod, as PyTorch's, so that its Functions
        run; plugrad's forward mode (:func:`plugrad.func.jvp`, ``jacfwd``) differentiates
        ``backward`` twice and never calls ``jvp``."""
        for index, tensor in enumerate(tensors):
            if tensor is not None and not isinstance(tensor, Tensor):
                raise ArgumentError(
                    f"{self._function.__name__}.forward: save_for_forward() takes Tensors or "
                    f"None, but argument {index} is a {type(tensor).__name__}"
                )

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        """The tensors given to :meth:`save_for_backward`."""
        saved = self._saved
        if saved is None:
            raise self._freed_error()
        check_versions(self, saved, self._versions)
        if any(type(s) is _saved_tensor_hooks.Packed for s in saved):
            saved = tuple(
                s.tensor(self) if type(s) is _saved_tensor_hooks.Packed else s for s in saved
            )
        return tuple(
            _wrap(s.array, self._device, True, output_edge(self, s.index))
            if isinstance(s, _SavedOutput)
            else s
            for s in saved
        )

    def _freed_error(self) -> GraphFreedError:
        return GraphFreedError(
            f"{self.name()}: the tensors saved for backward were freed by an earlier "
            "backward(); pass retain_graph=True to that backward() to keep them"
        )

    def mark_non_differentiable(self, *outputs: Tensor) -> None:
        """Declare outputs of ``forward`` that have no gradient (e.g. indices)."""
        self._non_differentiable.update(id(t) for t in outputs)

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Declare inputs that ``forward`` changed in place and returns, as PyTorch's.

        Each such input is then the output itself, its history that of this
        function, and its version goes up once more, as PyTorch's. As after
        ``x.add_(y)``, the tensors sharing its memory follow: a base it is a view
        of takes it at its place (gradients for that part flow through this
        function's ``backward``), other views of them are taken again. A leaf that
        requires grad (or memory it shares) cannot be changed so while gradients
        are recorded.
        """
        for index, tensor in enumerate(tensors):
            if not isinstance(tensor, Tensor):
                raise ArgumentError(
                    f"{self._function.__name__}.forward: mark_dirty() takes Tensors, but "
                    f"argument {index} is a {type(tensor).__name__}"
                )
        self._dirty = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether ``backward`` receives zeros (the default) or ``None`` for outputs that
        got no gradient, as PyTorch's; ``False`` spares making the zeros."""
        if not isinstance(value, bool):
            raise ArgumentError(f"set_materialize_grads() takes a bool, got {type(value).__name__}")
        self._materialize_grads = value

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        if self._saved is None:
            raise self._freed_error()
        function = self._function
        grads = (grad,) if self.n_outputs == 1 else tuple(grad)
        xp = self._device.xp
        # Like PyTorch, backward() receives zeros for outputs that got no gradient.
        if self._materialize_grads:
            grads = tuple(
                (xp.zeros(spec[0], dtype=spec[1]) if g is None and spec is not None else g)
                for g, spec in zip(grads, self._output_specs)
            )
        if not create_graph:
            grads = tuple(None if g is None else _wrap(g, self._device, False, None) for g in grads)
        result = function.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n_inputs = len(self._edges)
        if len(result) < n_inputs or any(r is not None for r in result[n_inputs:]):
            raise self._count_error(len(result))
        out: list[Any] = []
        for index, (g, edge, meta) in enumerate(zip(result, self._edges, self._input_meta)):
            if meta is None and g is not None:
                raise FunctionBackwardError(
                    f"{function.__name__}.backward returned a gradient for argument {index}, "
                    "which is not a Tensor; return None for it"
                )
            if edge is None or g is None:
                out.append(None)
                continue
            g = self._check_gradient(index, g, meta, create_graph)
            if create_graph and not g._requires_grad:
                g = self._undifferentiated(index, g, grads)
            out.append(g)
        return tuple(out)

    def _count_error(self, n_grads: int) -> FunctionBackwardError:
        name = self._function.__name__
        n_inputs = len(self._edges)
        if n_inputs != self._n_received:
            # As PyTorch: with setup_context, forward's defaults are bound in and count.
            inputs = (
                f"{self._n_received} argument(s), which with forward's defaults filled in (as "
                f"for every Function with setup_context) make {n_inputs} inputs"
            )
        else:
            inputs = f"{n_inputs} argument(s)"
        return FunctionBackwardError(
            f"{name}.backward returned {n_grads} gradient(s), but {name}.apply() received "
            f"{inputs}; return one gradient per input (None for one that needs none); "
            "gradients beyond them may only be None"
        )

    def _undifferentiated(self, index: int, grad: Tensor, grads: tuple[Any, ...]) -> Tensor:
        """A gradient recorded from nothing (computed under no_grad, or on raw arrays) while
        a higher-order pass records: it is made to refuse being differentiated again.

        Taken as a constant, its derivatives would be zeros, without a word (a Hessian or a
        ``func.jvp`` through this Function all zeros).
        """
        sources = [
            t for t in (*grads, *self.saved_tensors) if isinstance(t, Tensor) and t._requires_grad
        ]
        if not sources:  # nothing it could depend on requires grad: a constant indeed
            return grad
        return _refusing(
            grad,
            tuple(t._edge or t for t in sources),
            f"{self._function.__name__}.backward returned gradient {index} computed from "
            "nothing autograd recorded (under no_grad, or on raw arrays) while a higher-order "
            "derivative was being recorded (create_graph=True, plugrad.func.jvp, jacfwd, "
            "hessian), so its derivatives are unknown and would be taken for zeros. Compute it "
            "with plugrad operations from the incoming gradient and the saved tensors (g * 0 "
            "for a gradient that is zero), or mark the backward once_differentiable.",
        )

    def _check_gradient(self, index: int, grad: Any, meta: Any, create_graph: bool) -> Any:
        name = self._function.__name__
        if not isinstance(grad, Tensor):
            raise FunctionBackwardError(
                f"{name}.backward returned a {type(grad).__name__} as gradient {index}; "
                "return Tensors (or None)"
            )
        shape, dtype = meta
        if grad.shape != shape and _expands_to(shape, grad.shape):
            # As PyTorch: a gradient of the broadcast shape is summed back to the argument's.
            grad = grad.sum_to_size(shape)
        if grad.shape != shape:
            raise FunctionBackwardError(
                f"{name}.backward returned a gradient of shape {grad.shape} for argument {index}, "
                f"which has shape {shape}; the gradient must have the argument's shape (or one it "
                "broadcasts to)"
            )
        if grad._device is not self._device:
            raise FunctionBackwardError(
                f"{name}.backward returned gradient {index} on {grad._device.name!r}, but the "
                f"argument is on {self._device.name!r}"
            )
        xp = self._device.xp
        if xp.isdtype(grad._array.dtype, "complex floating") and not xp.isdtype(
            dtype, "complex floating"
        ):
            # Cast, it would lose its imaginary part without a word (PyTorch refuses too).
            raise FunctionBackwardError(
                f"{name}.backward returned a complex gradient ({grad.dtype.name}) for "
                f"argument {index}, which is real ({dtype}); return a real gradient (its "
                ".real, if the imaginary part is meant to be dropped)"
            )
        # The backward's author may hold the tensor it returned: never a .grad by reference.
        note_borrowed(grad._array)
        if create_graph:
            if grad._array.dtype != dtype:  # (a float64 gradient of a float32 input)
                return grad.to(self._device._dtype_from_native[dtype])
            return grad
        array = grad._array
        if array.dtype != dtype:
            array = xp.astype(array, dtype)
        return array

    def _release(self) -> None:
        self._saved = None


def _expands_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether a tensor of ``shape`` broadcasts to ``target`` (as ``expand`` would)."""
    if len(shape) > len(target):
        return False
    return all(n in (1, m) for n, m in zip(shape[::-1], target[::-1]))


class Function:
    """Base class for differentiable operations with hand-written backward.

    Subclass it with two static methods, ``forward(ctx, *args)`` and
    ``backward(ctx, *grad_outputs)``, and call it with ``MyFunction.apply(*args)``.
    ``forward`` runs without recording (use any plugrad ops, or ``x.array`` with
    the backend namespace). ``backward`` gets one gradient per output of
    ``forward`` and returns one gradient per argument given to ``apply``
    (``None`` where none is needed; further gradients may only be ``None``), as
    PyTorch counts them: parameters left to their defaults take none. If
    ``backward`` is written with plugrad ops, ``create_graph=True`` differentiates
    through it. Forward-mode products (:func:`plugrad.func.jvp`, ``jacfwd``) are
    computed from ``backward`` too: a ``jvp`` staticmethod is not called.

    PyTorch's other style works too: ``forward(*args)`` without ``ctx``, and a
    static ``setup_context(ctx, inputs, output)`` that saves what ``backward``
    needs (``inputs`` is the tuple of arguments, ``output`` what ``forward``
    returned); it runs right after ``forward``, also without recording. As in
    PyTorch, ``apply`` then binds ``forward``'s defaults in first: ``inputs``,
    ``ctx.needs_input_grad`` and the gradients ``backward`` returns count every
    parameter of ``forward``.

    Examples
    --------
    >>> import plugrad
    >>> class Cube(plugrad.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x * x
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors
    ...         return 3 * x * x * grad
    >>> x = plugrad.tensor(2.0, requires_grad=True)
    >>> y = Cube.apply(x)
    >>> y
    tensor(8., grad_fn=<CubeBackward>)
    >>> y.backward()
    >>> x.grad
    tensor(12.)
    """

    _ctx_type: ClassVar[type[FunctionCtx]]
    _sets_up_context: ClassVar[bool] = False
    _forward_binds: ClassVar[bool] = False
    _forward_signature: ClassVar[inspect.Signature]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for method in ("forward", "backward", "setup_context"):
            if method in cls.__dict__ and not isinstance(cls.__dict__[method], staticmethod):
                raise ArgumentError(
                    f"{cls.__name__}.{method} must be a @staticmethod: decorate it with "
                    "@staticmethod"
                )
        cls._ctx_type = type(f"{cls.__name__}Backward", (FunctionCtx,), {"_function": cls})
        #: Whether forward takes no ctx and setup_context fills it (PyTorch's newer style).
        cls._sets_up_context = cls.setup_context is not Function.setup_context
        #: Whether apply() binds forward's defaults in, as PyTorch's does with setup_context
        #: only: its inputs and backward's gradients then count every parameter. A forward
        #: taking ctx fills its defaults itself, and only arguments given count.
        cls._forward_signature = inspect.signature(cls.forward)
        cls._forward_binds = cls._sets_up_context and any(
            p.default is not p.empty and p.kind is not p.KEYWORD_ONLY
            for p in cls._forward_signature.parameters.values()
        )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ArgumentError(
            f"{type(self).__name__} is not instantiated; call {type(self).__name__}.apply(...)"
        )

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Any:
        """Compute the outputs (a Tensor or a tuple of Tensors) from the arguments."""
        raise NotImplementedError("a Function subclass must define forward(ctx, *args)")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Tensor) -> Any:
        """Return the gradient for each argument of ``forward``, given each output's gradient.

        Each gradient has its argument's shape, or one the argument broadcasts to
        (summed back to the argument's, as PyTorch does); None for an argument that
        needs none.
        """
        # Reached when a subclass defines none; ctx names it.
        function = getattr(ctx, "_function", None)
        name = "this Function" if function is None else function.__name__
        jvp = " (its jvp staticmethod is not called)" if hasattr(function, "jvp") else ""
        raise NotSupportedError(
            f"{name} defines no backward staticmethod, and plugrad differentiates a Function "
            "through its backward alone: forward-mode products (plugrad.func.jvp, jacfwd) are "
            f"computed from backward too{jvp}; define backward(ctx, *grad_outputs)"
        )

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple[Any, ...], output: Any) -> None:
        """Save on ``ctx`` what ``backward`` needs, for a ``forward(*args)`` without ctx.

        Not defined by default: ``forward(ctx, *args)`` then fills ``ctx`` itself.
        """
        raise NotImplementedError(
            "setup_context(ctx, inputs, output) is defined by Function subclasses whose "
            "forward takes no ctx"
        )

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` and, if any argument requires grad, record it for backward.

        Arguments may be given by keyword and left to their defaults, as in PyTorch.
        ``backward`` returns a gradient for each argument given (a keyword one in its
        parameter's place), and ``ctx.needs_input_grad`` holds one entry for each; with
        ``setup_context``, ``forward``'s defaults are bound in first and count too
        (``setup_context``'s ``inputs`` hold every parameter).
        """
        if cls is Function:
            raise ArgumentError("call apply() on a subclass of Function, not on Function itself")
        n_received = len(args) + len(kwargs)
        if kwargs or cls._forward_binds:
            args = _bound(cls, args, kwargs)
        ctx = cls._ctx_type()
        ctx._n_received = n_received
        recording = _state.enabled
        # Whether each input requires grad, also under no_grad, as PyTorch's (a forward
        # that branches on it computes the same either way).
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        _state.enabled = False
        try:
            if cls._sets_up_context:
                output = cls.forward(*args)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args)
        finally:
            _state.enabled = recording
        outputs = output if isinstance(output, tuple) else (output,)
        # As in PyTorch, outputs that are not Tensors (a count, a flag) pass through as they
        # are; backward() receives None for them.
        recording = (
            recording and any(ctx.needs_input_grad) and any(isinstance(o, Tensor) for o in outputs)
        )
        try:
            for index, value in enumerate(outputs):
                if isinstance(value, (list, dict)) and any(
                    isinstance(v, Tensor)
                    for v in (value.values() if isinstance(value, dict) else value)
                ):
                    raise ArgumentError(
                        f"{cls.__name__}.forward returned Tensors inside a "
                        f"{type(value).__name__} (output {index}), which autograd would not "
                        "follow; return a Tensor or a tuple of them"
                    )
            families = _check_dirty(cls, ctx, args, outputs, recording)
        except PlugradError as error:
            if ctx._dirty:
                _forget_changed_histories(cls, ctx, error)
            raise
        for tensor in ctx._dirty:  # as PyTorch's: once more, past forward's own change
            tensor._bump_version()
        if not recording:
            dirty = {id(t) for t in ctx._dirty}
            results = tuple(
                _output(o, args, False, None) if isinstance(o, Tensor) and id(o) not in dirty else o
                for o in outputs
            )
            return results if isinstance(output, tuple) else results[0]
        return _record(cls, ctx, args, output, outputs, families)


def _output(o: Tensor, args: tuple[Any, ...], differentiable: bool, edge: Any) -> Tensor:
    """The Tensor ``apply`` returns for ``forward``'s output ``o``: its values, the history
    given, and, where ``o`` shares memory with an input (a view of it made in ``forward``,
    or the input itself), a place among the tensors sharing it, as a view's: an in-place
    change of the input then shows in the output's version (a backward that saved it
    refuses) and, where views are copies, in its values."""
    result = _wrap(o._array, o._device, differentiable, edge)
    counter = o._counter
    if counter is not None and len(counter) > 1:  # o is in a family: a view made in forward
        # An alias, not a view by o's key: autograd must not rewrite the history apply gave
        # it (an in-place change of it or of its base, recorded, is refused, as PyTorch's).
        add_alias(o, result, ALIAS)
        # Kept alive by it, as a view keeps its base: where views are copies, the output's
        # values follow the input's through o.
        result._view_base = o
        return result
    for a in args:  # an input returned as it is
        if isinstance(a, Tensor) and a._array is o._array:
            add_alias(a, result, ALIAS)
            break
    return result


def _bound(cls: type[Function], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """``args`` and ``kwargs`` as ``forward``'s parameters in order; with setup_context,
    every parameter, defaults filled in (as PyTorch's), else those given only."""
    signature = cls._forward_signature
    leading = () if cls._sets_up_context else (None,)  # the ctx, given by apply itself
    try:
        bound = signature.bind(*leading, *args, **kwargs)
    except TypeError as exc:
        raise ArgumentError(f"{cls.__name__}.apply(): {exc} (forward{signature})") from None
    parameters = signature.parameters
    keyword_only = [
        n
        for n in bound.kwargs
        if n not in parameters or parameters[n].kind is inspect.Parameter.KEYWORD_ONLY
    ]  # (a name not among them is one for **kwargs)
    if keyword_only:
        raise ArgumentError(
            f"{cls.__name__}.apply() got {', '.join(keyword_only)} for keyword-only parameters "
            "of forward (or its **kwargs), which apply() passes in order only; make them "
            "positional"
        )
    if bound.kwargs and not cls._sets_up_context:
        # A parameter left out before one given by keyword: filling its default in would
        # count an argument apply() never got (PyTorch refuses this call too).
        names = list(parameters)
        between = names[len(bound.args) : max(names.index(n) for n in bound.kwargs)]
        given = ", ".join(bound.kwargs)
        missing = ", ".join(n for n in between if n not in kwargs)
        raise ArgumentError(
            f"{cls.__name__}.apply() got {given} by keyword but not forward's earlier "
            f"parameter(s) {missing}; pass {missing} too (backward returns one gradient per "
            "argument given, in forward's order)"
        )
    if cls._sets_up_context:
        bound.apply_defaults()
    return tuple(bound.args)[len(leading) :]


def _in_place_name(cls: type[Function]) -> str:
    return f"{cls.__name__}.apply() with mark_dirty"


def _check_dirty(
    cls: type[Function],
    ctx: FunctionCtx,
    args: tuple[Any, ...],
    outputs: tuple[Any, ...],
    recording: bool,
) -> list[tuple[Tensor, list[Any]]]:
    """Refuse what ``mark_dirty`` cannot honour, before anything is recorded; return each
    dirty tensor with the tensors sharing its memory, as ``apply_inplace`` checks them.

    Only forward's ``mark_dirty`` says which inputs it changed: by then it has changed them.
    """
    name = _in_place_name(cls)
    families = []
    for tensor in ctx._dirty:
        if not any(tensor is a for a in args) or not any(tensor is o for o in outputs):
            raise FunctionBackwardError(
                f"{cls.__name__}.forward marked a tensor dirty that is not both an argument "
                "and an output; return each tensor it changes in place"
            )
        if tensor._requires_grad and tensor._edge is None and _state.enabled:
            raise BackwardError(
                f"{cls.__name__}.forward changed in place a leaf tensor that requires grad "
                "(the very value gradients are taken with respect to); pass a clone, or call "
                "it under plugrad.no_grad()"
            )
        if _state.enabled and tensor._counter is not None and not tensor._requires_grad:
            refuse_view_made_without_grad(tensor, name)
        family = memory_family(tensor)
        if family and recording:
            check_family(tensor, family, name)
        families.append((tensor, family))
    return families


def _forget_changed_histories(cls: type[Function], ctx: FunctionCtx, error: Exception) -> None:
    """After ``apply`` refused what forward did (``error``, which is told so): each tensor
    sharing memory with one it marked dirty, whose graph history computes values it no
    longer holds, refuses backward (its gradient would be silently wrong)."""
    if len(error.args) == 1 and isinstance(error.args[0], str):
        error.args = (
            f"{error.args[0]} ({cls.__name__}.forward had already changed the tensors it "
            "marked dirty; those whose graph history no longer describes their values now "
            "refuse backward)",
        )
    message = (
        f"{cls.__name__}.forward changed this tensor's values in place (it, or a tensor "
        "sharing its memory, was marked dirty), and apply() refused the change, so its graph "
        "history no longer describes its values: backward through it cannot be computed. "
        "Compute it again from tensors that were not changed."
    )
    for tensor in ctx._dirty:
        family = memory_family(tensor) or [(tensor, None, None)]
        made = {id(member): base for member, base, _ in family}
        for member, _, _ in family:
            # Consistent where a chain of views leads up to a leaf: the memory's own values.
            top = member
            while top._edge is not None:
                base = made.get(id(top))
                if base is None or base is DETACHED:
                    break
                top = base
            if member._edge is not None and not (top._edge is None and top._requires_grad):
                member._edge = AliasChangedNode(member, "", member._edge, message=message)


class RefusingBackward(Node):
    """Where a gradient that cannot be differentiated again enters a higher-order graph
    (a ``once_differentiable`` backward's, or one computed from nothing autograd recorded):
    its backward refuses, saying why."""

    __slots__ = ("_reason",)
    _reason: str

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        raise BackwardError(self._reason)

    def _release(self) -> None:
        """Nothing is saved."""


def _refusing(value: Tensor, edges: tuple[Any, ...], reason: str) -> Tensor:
    """``value``'s array as a tensor whose backward (over ``edges``) refuses with ``reason``."""
    node = _object_new(RefusingBackward)
    node._device = value._device
    node._hooks = None
    node._edges = edges
    node._reason = reason
    return _wrap(value._array, value._device, True, node)


def once_differentiable(backward: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a :class:`Function` backward as not differentiable again.

    Use it when ``backward`` computes on raw arrays (``t.array``) or otherwise
    outside plugrad's ops: first-order gradients work as usual, and a
    higher-order backward that reaches its result raises a clear error instead
    of silently treating it as constant.

    Examples
    --------
    >>> import plugrad
    >>> class Square(plugrad.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     @plugrad.autograd.once_differentiable
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors
    ...         return plugrad.asarray(2 * x.array * grad.array)
    >>> x = plugrad.tensor(3.0, requires_grad=True)
    >>> (g,) = plugrad.autograd.grad(Square.apply(x), x, create_graph=True)
    >>> plugrad.autograd.grad(g, x)
    Traceback (most recent call last):
      ...
    plugrad.errors.BackwardError: Square.backward is decorated with once_differentiable, ...
    """

    @functools.wraps(backward)
    def wrapper(ctx: FunctionCtx, *grad_outputs: Any) -> Any:
        if not _state.enabled:  # an ordinary backward pass
            return backward(ctx, *grad_outputs)
        _state.enabled = False
        try:
            result = backward(ctx, *grad_outputs)
        finally:
            _state.enabled = True
        sources = [
            t
            for t in (*grad_outputs, *ctx.saved_tensors)
            if isinstance(t, Tensor) and t._requires_grad
        ]
        if not sources:
            return result
        edges = tuple(t._edge or t for t in sources)

        reason = (
            f"{ctx._function.__name__}.backward is decorated with once_differentiable, so its "
            "result cannot be differentiated again, but a higher-order backward reached it. "
            "Write that backward with plugrad operations (no once_differentiable) to make it "
            "twice differentiable."
        )

        def poisoned(value: Any) -> Any:
            return _refusing(value, edges, reason) if isinstance(value, Tensor) else value

        if isinstance(result, tuple):
            return tuple(poisoned(r) for r in result)
        return poisoned(result)

    return wrapper


def _record(
    cls: type[Function],
    ctx: FunctionCtx,
    args: tuple[Any, ...],
    output: Any,
    outputs: tuple,
    families: list[tuple[Tensor, list[Any]]],
) -> Any:
    """Wire ``ctx`` into the graph as the outputs' ``grad_fn`` and wrap the outputs."""
    from .dtypes import is_differentiable

    device = next(o for o in outputs if isinstance(o, Tensor))._device
    ctx._device = device
    if _anomaly.enabled:
        ctx._trace = _anomaly.user_stack()
    ctx._edges = tuple(
        (a._edge or a) if needs else None for a, needs in zip(args, ctx.needs_input_grad)
    )
    ctx._input_meta = tuple(
        (a.shape, a._array.dtype) if isinstance(a, Tensor) else None for a in args
    )
    ctx._output_specs = tuple(
        (o.shape, o._array.dtype) if isinstance(o, Tensor) else None for o in outputs
    )
    ctx.n_outputs = len(outputs)  # type: ignore[misc]
    results = []
    position = {}
    dirty = {id(t) for t in ctx._dirty}
    for index, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            results.append(o)
            continue
        differentiable = id(o) not in ctx._non_differentiable and is_differentiable(o.dtype)
        edge = output_edge(ctx, index) if differentiable else None
        if id(o) in dirty:  # the input changed in place is the output: it takes the history
            old_edge = o._edge
            o._edge, o._requires_grad = edge, differentiable
            if old_edge is not None:
                move_retain_grad(o, old_edge)
            results.append(o)
        else:
            results.append(_output(o, args, differentiable, edge))
        position[id(o)] = index
    for tensor, family in families:  # as after an in-place op: its base and views follow
        if family:
            relink_family(tensor, family, _in_place_name(cls))
    # A saved output would make ctx -> output -> ctx a cycle: keep only its array.
    saved = []
    for s in ctx._saved or ():  # () only after the graph is freed, never here
        if s is not None and id(s) in position:
            result = results[position[id(s)]]
            s = _SavedOutput(s._array, position[id(s)], result._shared_counter())
        saved.append(s)
    ctx._saved = tuple(saved)
    ctx._versions = tuple(map(saved_version, ctx._saved))
    hooks = None
    if _saved_tensor_hooks.active and any(s is not None for s in ctx._saved):
        hooks = _saved_tensor_hooks.current_hooks()
    if hooks is not None:  # (an output is handed to pack_hook as the tensor returned)
        ctx._saved = tuple(
            _saved_tensor_hooks.pack_saved(
                results[s.index] if isinstance(s, _SavedOutput) else s, hooks
            )
            for s in ctx._saved
        )
    return tuple(results) if isinstance(output, tuple) else results[0]
