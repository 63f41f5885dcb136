"""The backward graph: nodes recorded by the forward pass.

A tensor produced by a recorded operation points at a :class:`Node` (its
``grad_fn``). A node knows, for each input of the operation, its *edge*: where
that input's gradient goes. An edge is

- the node that produced the input, if that node has one output (almost always);
- ``(node, output_index)`` for an output of a node with several;
- the input itself, for a leaf that requires grad;
- ``None`` if the input needs no gradient.

A tensor's ``_edge`` is its edge as an input (``None`` for a leaf). Storing the
node itself rather than a ``(node, 0)`` pair spares one object per operation,
which the garbage collector would otherwise traverse on every full collection;
:attr:`Node.next_functions` shows every edge as a pair. Nodes never point back
at the tensors they produced, so a graph is freed by reference counting alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

from .errors import ArgumentError, GraphFreedError, InPlaceModificationError, PluginOutputError
from .errors import type_name as _type_name
from .node import Node, output_edge, split_edge
from .tensor import Tensor, _wrap

__all__ = [
    "ArraySpec",
    "BinaryOpNode",
    "GeneralOpNode",
    "Node",
    "OpNode",
    "RegisteredRules",
    "UnaryOpNode",
    "array_spec",
    "output_edge",
    "split_edge",
]

#: What backward rules receive under create_graph: plugrad plus every registered op.
#: The registry sets it whenever it rebuilds its tables.
tensor_namespace: Any = None


def _unknown_owner(op_name: str) -> str:
    return "an unregistered plugin"


#: Names the plugin (and its distribution) that declared an op, for error messages.
#: The registry sets it whenever it rebuilds its tables.
op_owner: Callable[[str], str] = _unknown_owner
#: Whether an op comes from a third-party plugin (errors its rules raise then name it).
#: The registry sets it whenever it rebuilds its tables.
third_party_op: Callable[[str], bool] = lambda op_name: False


class ArraySpec:
    """Shape and dtype of an input a backward rule does not need the values of.

    Rules receive it in place of inputs their op did not save, so ``x.shape``
    and ``x.ndim`` work while ``x * g`` fails loudly.
    """

    __slots__ = ("dtype", "shape")

    def __init__(self, shape: tuple[int, ...], dtype: Any) -> None:
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def _array(self) -> ArraySpec:
        # Stands in for its own raw array, like a Tensor's ``_array``.
        return self

    def __repr__(self) -> str:
        return f"ArraySpec(shape={self.shape}, dtype={self.dtype})"


#: Shared specs, by (shape, dtype type, dtype): a graph of many ops on arrays of one
#: shape then holds one spec instead of one per op, which also spares the garbage
#: collector. Never mutated; emptied when it grows past a bound.
_SPECS: dict[tuple[Any, ...], ArraySpec] = {}
_MAX_SPECS = 1024


def array_spec(array: Any) -> ArraySpec:
    """The :class:`ArraySpec` of ``array``'s shape and dtype (shared, so never modify it)."""
    shape, dtype = array.shape, array.dtype
    # The dtype's type is part of the key: dtypes of two libraries must never be compared.
    key = (shape, type(dtype), dtype)
    try:
        spec = _SPECS.get(key)
    except TypeError:  # an unhashable shape or dtype
        return ArraySpec(shape, dtype)
    if spec is None:
        if len(_SPECS) >= _MAX_SPECS:
            _SPECS.clear()
        spec = _SPECS[key] = ArraySpec(shape, dtype)
    return spec


#: What a node may keep after backward: not values, only what describes them.
_METADATA_TYPES = frozenset({ArraySpec, int, float, complex, bool, type(None)})


#: How PyTorch's message starts, which users search for.
_MODIFIED = (
    "one of the variables needed for gradient computation has been modified by an inplace operation"
)


def check_versions(node: Node, saved: Any, versions: tuple[int, ...] | None) -> None:
    """Raise if a tensor ``node`` saved was modified in place after it was saved.

    ``saved`` holds Tensors, or anything with a ``_counter`` (a saved output of a
    :class:`~plugrad.Function`), or other values, which are not checked.
    """
    for index, value in enumerate(saved):
        counter = getattr(value, "_counter", None)
        if counter is not None:
            expected = 0 if versions is None else versions[index]
            if counter[0] != expected:
                shape = tuple(getattr(value, "shape", None) or value.array.shape)
                raise InPlaceModificationError(
                    f"{_MODIFIED}: {node.name()} needs saved tensor {index} (of shape {shape}) "
                    "as it was "
                    "when the forward op ran, but it (or a view sharing its memory) has since "
                    f"been modified in place: it is at version {counter[0]}, expected version "
                    f"{expected}. Compute the backward before modifying it, or use an "
                    "out-of-place operation (x = x + y instead of x += y)."
                )


def check_output_versions(node: Node, counters: Any) -> None:
    """Raise if an output ``node`` saved (its ``ans``) was modified in place since."""
    for index, counter in enumerate(counters if type(counters) is tuple else (counters,)):
        if counter is not None and counter[0]:
            raise InPlaceModificationError(
                f"{_MODIFIED}: {node.name()} needs its "
                f"output{f' {index}' if node.n_outputs > 1 else ''} as "
                "it was computed, but that output (or a view sharing its memory) has since been "
                f"modified in place (it is at version {counter[0]}, expected 0). Compute the "
                "backward before modifying it, or use an out-of-place operation (y = y + 1 "
                "instead of y += 1)."
            )


def _freed_error(node: Node) -> GraphFreedError:
    return GraphFreedError(
        f"Trying to backward through the graph a second time (or to reach {node.name()} "
        "after its saved values were freed). Saved values are freed after backward() to "
        "save memory; pass retain_graph=True to the first backward() if you need to "
        "backward through the same graph again."
    )


class RegisteredRules(Protocol):
    """What a node reads of its op (a :class:`plugrad.opdef.RegisteredOp` has it all)."""

    name: str
    #: One backward rule per input, ``None`` for an input that gets no gradient.
    vjps: tuple[Callable[..., Any] | None, ...]
    broadcasting: bool
    input_names: tuple[str, ...]
    multiple_outputs: bool
    #: Outputs (of several) that take no gradient, whatever their dtype.
    nondifferentiable_outputs: frozenset[int]
    paired_outputs: bool
    #: ``"sequence"`` or ``"variadic"`` for an op whose inputs are one sequence, else None.
    sequence_kind: str | None
    #: Per rule, the inputs (positions) and whether ``ans`` its code reads; None: unknown.
    rule_reads: tuple[tuple[tuple[int, ...], bool] | None, ...]


class OpNode(Node):
    """The node of a built-in or plugin op: calls the op's backward rules.

    ``_saved`` holds one entry per op input, as the rules receive it in an
    ordinary backward pass: the raw array if a rule that runs reads it, an
    :class:`ArraySpec` if not, or the Python scalar itself. ``_saved_tensors``
    lists the Tensors whose arrays are kept (``None`` elsewhere, or ``None``
    altogether), for the in-place check and for ``create_graph``; ``_versions``
    their versions when saved (``None``: all unmodified). ``_ans`` is the raw
    output array if a rule reads it, and ``_ans_counter`` then the version counter
    the output tensor shares with its views (a tuple of them for several outputs),
    so that an in-place change of the output is caught like one of an input.
    """

    __slots__ = ("_ans", "_ans_counter", "_params", "_saved", "_saved_tensors", "_versions")
    _ans: Any
    _ans_counter: Any
    _params: dict[str, Any] | None
    _saved: tuple[Any, ...] | None
    _saved_tensors: tuple[Any, ...] | None
    _versions: tuple[Any, ...] | None
    op: ClassVar[RegisteredRules]

    # The checks opening this method and GeneralOpNode._backward are copies on purpose:
    # a shared helper would add a Python call to every node's backward.
    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        args: Sequence[Any] | None = self._saved
        if args is None:
            raise _freed_error(self)
        tensors = self._saved_tensors
        if tensors is not None:
            check_versions(self, tensors, self._versions)
        if self._ans_counter is not None:
            check_output_versions(self, self._ans_counter)
        op = self.op
        params = self._params
        device = self._device
        if create_graph:
            # Rules run on Tensors through plugrad's ops, so the gradient is differentiable.
            xp = tensor_namespace
            args = _tensor_mode_args(args, tensors, device)
            ans = None if self._ans is None else _wrap(self._ans, device, True, self)
        else:
            xp = device.rule_xp
            ans = self._ans
        kind = type(grad)
        grads: list[Any] = []
        for index, (rule, edge, arg) in enumerate(zip(op.vjps, self._edges, args)):
            if edge is None:
                grads.append(None)
                continue
            # An input with an edge has a rule (registration checks it); mypy cannot see it.
            if params:
                g = rule(xp, grad, ans, *args, **params)  # type: ignore[misc]
            else:
                g = rule(xp, grad, ans, *args)  # type: ignore[misc]
            if (
                create_graph
                or type(g) is not kind
                or g.dtype is not arg.dtype
                or g.shape != arg.shape
                or (not device.only_device and device.backend.device_of(g) != device.native)
            ):
                g = checked_gradient(self, index, g, arg, xp, create_graph)
                if create_graph:
                    g = _linked(g, args, ans, device, op.rule_reads[index])
            grads.append(g)
        return tuple(grads)

    def _release(self) -> None:
        saved = self._saved
        # A node whose rules read no values (only shapes, dtypes and scalars) keeps what it
        # has, so a second backward through it works, as in PyTorch.
        if self._ans is not None or (
            saved is not None and not _METADATA_TYPES.issuperset(map(type, saved))
        ):
            self._saved = None
            self._saved_tensors = None
            self._ans = None
            self._ans_counter = None


class UnaryOpNode(OpNode):
    """:class:`OpNode` of a non-broadcasting op with one array input, its backward spelled out."""

    __slots__ = ()

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        saved = self._saved
        if create_graph or saved is None or self._edges[0] is None:
            return OpNode._backward(self, grad, create_graph)
        if self._saved_tensors is not None:
            check_versions(self, self._saved_tensors, self._versions)
        counter = self._ans_counter
        if counter is not None and counter[0]:
            check_output_versions(self, counter)
        params = self._params
        device = self._device
        xp = device.rule_xp
        (rule,) = self.op.vjps
        x = saved[0]
        # A unary node exists only for an op with a rule for its input; mypy cannot see it.
        if params:
            g = rule(xp, grad, self._ans, x, **params)  # type: ignore[misc]
        else:
            g = rule(xp, grad, self._ans, x)  # type: ignore[misc]
        # The engine trusts no rule: a gradient of another kind, dtype, shape or device is
        # caught here. Dtypes are compared by identity (an equal dtype that is another object
        # takes the full check, which accepts it): cheaper than equality, which NumPy computes.
        # The devices of one backend share array types and dtypes, so where a backend has
        # several, only asking for the gradient's device tells them apart.
        if (
            type(g) is not type(grad)
            or g.dtype is not x.dtype
            or g.shape != x.shape
            or (not device.only_device and device.backend.device_of(g) != device.native)
        ):
            g = checked_gradient(self, 0, g, x, xp, False)
        return (g,)


class BinaryOpNode(OpNode):
    """:class:`OpNode` of an op with two array inputs: :meth:`_backward` spelled out."""

    __slots__ = ()

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        saved = self._saved
        if create_graph or saved is None:
            return OpNode._backward(self, grad, create_graph)
        if self._saved_tensors is not None:
            check_versions(self, self._saved_tensors, self._versions)
        counter = self._ans_counter
        if counter is not None and counter[0]:
            check_output_versions(self, counter)
        device = self._device
        xp = device.rule_xp
        ans = self._ans
        params = self._params or _NO_PARAMS
        x1, x2 = saved
        edge1, edge2 = self._edges
        op = self.op
        rule1, rule2 = op.vjps
        kind = type(grad)
        g1 = g2 = None
        # An input with an edge has a rule (registration checks it); mypy cannot see it.
        if edge1 is not None:
            g1 = rule1(xp, grad, ans, x1, x2, **params)  # type: ignore[misc]
            if (
                type(g1) is not kind
                or g1.dtype is not x1.dtype
                or g1.shape != x1.shape
                or (not device.only_device and device.backend.device_of(g1) != device.native)
            ):
                g1 = checked_gradient(self, 0, g1, x1, xp, False)
        if edge2 is not None:
            g2 = rule2(xp, grad, ans, x1, x2, **params)  # type: ignore[misc]
            if (
                type(g2) is not kind
                or g2.dtype is not x2.dtype
                or g2.shape != x2.shape
                or (not device.only_device and device.backend.device_of(g2) != device.native)
            ):
                g2 = checked_gradient(self, 1, g2, x2, xp, False)
        return (g1, g2)


_NO_PARAMS: dict[str, Any] = {}


def checked_gradient(
    node: OpNode, index: int, g: Any, arg: Any, xp: Any, create_graph: bool
) -> Any:
    """Return the gradient a rule gave for input ``index``, made to fit it, or raise.

    The per-node paths call this only when the gradient is not already an array
    of the output gradient's kind with its input's shape and dtype, on its
    input's device where the backend has several (and always under
    ``create_graph``). A broadcasting op's gradient is summed back to its
    input's shape and cast to its dtype -- the contract of such ops; any other
    mismatch is a bug of the rule (or kernel) and raises
    :class:`~plugrad.errors.PluginOutputError` naming the op and its plugin.
    """
    op = node.op

    def at() -> str:  # named only when there is an error to report
        return _where(node, index)

    if g is None:
        raise PluginOutputError(
            f"{at()} returned None; a rule must return a gradient (declare None in "
            "op.vjp(...) for an input that gets none)"
        )
    device = node._device
    if create_graph:
        if not isinstance(g, Tensor):
            raise PluginOutputError(
                f"{at()} returned a {_type_name(g)} under create_graph=True, where it must "
                "return a Tensor: compute with xp.* functions and operators only"
            )
        if g._device is not device:
            raise PluginOutputError(
                f"{at()} returned a gradient on {g._device.name!r}, but the op ran on "
                f"{device.name!r}; compute the gradient with xp.* on the inputs' device"
            )
        got_dtype = g.dtype
    else:
        backend = device.backend
        kind = type(g)
        # A type the device's kernels were seen to return is an array of the backend.
        if (
            kind is not device.array_type
            and kind not in device.output_types
            and not isinstance(g, backend_array_types(backend))
        ):
            raise PluginOutputError(
                f"{at()} returned a {_type_name(g)}, not an array of backend "
                f"{backend.name!r}; return one array of the input's shape"
            )
        if not device.only_device:  # else every array of the backend is on it
            native = backend.device_of(g) if hasattr(g, "device") else device.native
            if native != device.native:
                raise PluginOutputError(
                    f"{at()} returned a gradient on {native!r}, but the op ran on "
                    f"{device.name!r}; compute the gradient with xp.* on the inputs' device"
                )
        got_dtype = g.dtype
    shape, wanted = tuple(g.shape), tuple(arg.shape)
    if shape != wanted:
        axes = _broadcast_axes(shape, wanted) if op.broadcasting else None
        if not axes:
            allowed = " (or a shape it broadcasts to)" if op.broadcasting else ""
            raise PluginOutputError(
                f"{at()} returned a gradient of shape {shape}, but the input has shape "
                f"{wanted}; a rule must return a gradient of its input's shape{allowed}"
            )
        # Sum over the axes broadcasting added or stretched, then drop the added ones.
        g = xp.sum(g, axis=axes, keepdims=True)
        if axes[0] < len(shape) - len(wanted):
            g = xp.reshape(g, wanted)
    wanted_dtype = arg.dtype
    if got_dtype != wanted_dtype:
        if not xp.isdtype(got_dtype, ("real floating", "complex floating")):
            # Cast, it would be truncated (0.5 -> 0) or become 0 and 1, without a word.
            raise PluginOutputError(
                f"{at()} returned a gradient of dtype {got_dtype}, but the input has dtype "
                f"{wanted_dtype}; a gradient is floating-point: compute it with the "
                "floating-point values (g, the inputs), or cast a mask with xp.astype"
            )
        if not op.broadcasting and _is_complex(xp, got_dtype) != _is_complex(xp, wanted_dtype):
            raise PluginOutputError(
                f"{at()} returned a gradient of dtype {got_dtype}, but the input has dtype "
                f"{wanted_dtype}; a real input needs a real gradient (and a complex input a "
                "complex one)"
            )
        # Broadcasting ops also promote dtypes: hand each input its own dtype back.
        g = _restore_dtype(xp, g, wanted_dtype)
    return g


def _where(node: OpNode, index: int) -> str:
    """``"plugin 'p' (dist 1.0), op 'f': the backward rule for input 'x'"``, for errors.

    Built only when there is an error to report: naming the plugin looks it up.
    """
    op = node.op
    names = op.input_names
    if op.sequence_kind is not None:
        name = f"{names[0]}[{index}]"
    else:
        name = names[index] if index < len(names) else f"input {index}"
    return f"{op_owner(op.name)}, op {op.name!r}: the backward rule for input {name!r}"


def backend_array_types(backend: Any) -> tuple[type, ...]:
    """The array types a rule of ``backend`` may return (a capture adds its traced arrays)."""
    return backend.array_types()


def _is_complex(xp: Any, dtype: Any) -> bool:
    return bool(xp.isdtype(dtype, "complex floating"))


def _broadcast_axes(shape: tuple[int, ...], target: tuple[int, ...]) -> tuple[int, ...] | None:
    """The axes of ``shape`` to sum over to get back ``target``, which broadcasts to it.

    ``None`` if ``target`` does not broadcast to ``shape``; never empty for two
    different shapes.
    """
    lead = len(shape) - len(target)
    if lead < 0:
        return None
    axes = [*range(lead)]
    for i, t in enumerate(target, lead):
        n = shape[i]
        if t != n:
            if t != 1:
                return None
            axes.append(i)
    return tuple(axes)


class GeneralOpNode(OpNode):
    """The node of an op with several outputs or a sequence input (see :mod:`plugrad.opdef`).

    For several outputs, the engine hands :meth:`_backward` one gradient slot
    per output; slots that received nothing are filled with zeros before the
    rule runs, so rules never see ``None``. For a sequence input, ``_saved`` and
    ``_edges`` hold one entry per array of the sequence.
    """

    __slots__ = ("_out_specs", "n_outputs")
    _out_specs: tuple[Any, ...]

    # Same opening checks as OpNode._backward, copied on purpose (no extra call per node).
    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        args: Sequence[Any] | None = self._saved
        if args is None:
            raise _freed_error(self)
        tensors = self._saved_tensors
        if tensors is not None:
            check_versions(self, tensors, self._versions)
        if self._ans_counter is not None:
            check_output_versions(self, self._ans_counter)
        op = self.op
        params = self._params or {}
        device = self._device
        if create_graph:
            xp = tensor_namespace
            args = _tensor_mode_args(args, tensors, device)
        else:
            xp = device.rule_xp
        if op.multiple_outputs:
            # (paired: output i from input i alone, so an input whose output got no
            # gradient gets none)
            unreached = (
                [g is None for g in (grad if self.n_outputs > 1 else (grad,))]
                if op.paired_outputs
                else None
            )
            g, ans = self._outputs_for_rules(grad, create_graph)
        else:
            unreached = None
            g = grad
            ans = self._ans
            if create_graph and ans is not None:
                ans = _wrap(ans, device, True, self)
        if op.sequence_kind is not None:
            sequence_rule = op.vjps[0]  # one rule, for the whole sequence
            result = tuple(sequence_rule(xp, g, ans, tuple(args), **params))  # type: ignore[misc]
            if len(result) != len(args):
                raise ArgumentError(
                    f"the backward rule of {op.name!r} returned {len(result)} gradients for a "
                    f"sequence of {len(args)} arrays; it must return one per array"
                )
            rules_and_results: list[tuple[Callable[..., Any] | None, Any]]
            rules_and_results = [(None, r) for r in result]
        else:
            rules_and_results = [(rule, None) for rule in op.vjps]
        reference: Any = g[0] if op.multiple_outputs else g  # several outputs: a tuple of grads
        kind = type(reference)
        grads: list[Any] = []
        for index, ((rule, result_g), edge, arg) in enumerate(
            zip(rules_and_results, self._edges, args)
        ):
            if edge is None or (unreached is not None and unreached[index]):
                grads.append(None)
                continue
            g_in = result_g if rule is None else rule(xp, g, ans, *args, **params)
            # Dtypes by identity, as in OpNode: an equal dtype that is another object takes
            # the full check, which accepts it.
            if (
                create_graph
                or type(g_in) is not kind
                or g_in.dtype is not arg.dtype
                or g_in.shape != arg.shape
                or (not device.only_device and device.backend.device_of(g_in) != device.native)
            ):
                g_in = checked_gradient(self, index, g_in, arg, xp, create_graph)
                if create_graph:
                    g_in = _linked(g_in, args, ans, device, None)
            grads.append(g_in)
        return tuple(grads)

    def _outputs_for_rules(self, grad: Any, create_graph: bool) -> tuple[tuple[Any, ...], Any]:
        """The output gradients (zeros where none arrived) and outputs, as the rules see them."""
        device = self._device
        raw = device.xp
        if self.n_outputs == 1:  # the engine hands a one-output node its gradient bare
            grad = (grad,)
        grads: list[Any] = []
        for g, (shape, dtype, _) in zip(grad, self._out_specs):
            if g is None:
                g = raw.zeros(shape, dtype=dtype, device=device.native)
                if create_graph:
                    g = _wrap(g, device, False, None)
            grads.append(g)
        ans = self._ans
        if ans is not None and create_graph:
            ans = tuple(
                _wrap(a, device, differentiable, (self, i) if differentiable else None)
                for i, (a, (_, _, differentiable)) in enumerate(zip(ans, self._out_specs))
            )
        return tuple(grads), ans


class PiecewiseBackward(Node):
    """The ``grad_fn`` of a gradient that depends on saved tensors only through where they
    lie (relu's ``where(x > 0, g, 0)``, a max-pool's chosen positions).

    Its derivative in them is zero, but it is one, as in PyTorch: the gradient
    requires grad, differentiating it again gives zeros (not an error), and
    the leaves it reaches get a zero ``.grad`` (which an optimizer's weight
    decay then reads). A gradient that also depends on other tensors (relu's
    incoming gradient ``g``, made under ``create_graph``) passes its gradient
    on to them: its first edge is its own ``grad_fn``'s.
    """

    __slots__ = ("_passes", "_specs")

    def __init__(self, device: Any, tensors: list[Tensor], through: Tensor | None = None) -> None:
        self._device = device
        edges = tuple(t._edge or t for t in tensors)  # a leaf is its own edge
        self._passes = through is not None
        self._edges = edges if through is None else (through._edge or through, *edges)
        self._hooks = None
        self._specs = tuple((t._array.shape, t._array.dtype) for t in tensors)

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        device = self._device
        xp = device.xp
        zeros = [xp.zeros(shape, dtype=dtype, device=device.native) for shape, dtype in self._specs]
        if create_graph:
            zeros = [_wrap(z, device, False, None) for z in zeros]
        return (grad, *zeros) if self._passes else tuple(zeros)

    def _release(self) -> None:
        pass


def _edge_key(edge: Any) -> Any:
    return (id(edge[0]), edge[1]) if type(edge) is tuple else id(edge)


def _linked(
    g: Any,
    args: Sequence[Any],
    ans: Any,
    device: Any,
    reads: tuple[tuple[int, ...], bool] | None,
) -> Any:
    """A gradient computed under ``create_graph``, linked to the saved tensors that need a
    gradient and that it depends on only through where they lie (see
    :class:`PiecewiseBackward`). ``reads``: the positions of the inputs the rule reads and
    whether it reads ``ans`` (None: not known)."""
    if not isinstance(g, Tensor):
        return g
    outputs = ans if type(ans) is tuple else (ans,)
    if not g._requires_grad:
        tensors = [t for t in (*args, *outputs) if isinstance(t, Tensor) and t._requires_grad]
        if not tensors:
            return g
        return _wrap(g._array, device, True, PiecewiseBackward(device, tensors))
    node = g.grad_fn
    if reads is None or node is None:
        return g
    # Computed from some tensors (relu's incoming gradient): what the rule read is linked
    # already where its result's own node reads it; one read only to choose where (relu's
    # output), or deeper, gets zeros beside any real gradient, which changes no sum.
    positions, reads_ans = reads
    read = [args[i] for i in positions]
    if reads_ans:
        read += outputs
    edges = node._edges
    wanted = {}
    for t in read:
        if isinstance(t, Tensor) and t._requires_grad:
            edge = t._edge or t
            if not any(e is edge for e in edges):  # (by identity: == of tensors is theirs)
                wanted[_edge_key(edge)] = t
    # The rule's few ops are the nodes nearest its result: a short walk finds what they read
    # (a tensor read further back only gets a zero it did not need).
    queue, seen = [node], 0
    while wanted and queue and seen < _LINK_SEARCH:
        current = queue.pop(0)
        seen += 1
        for edge in current._edges:
            if edge is None:
                continue
            if type(edge) is tuple:
                wanted.pop((id(edge[0]), edge[1]), None)
                queue.append(edge[0])
            else:
                wanted.pop(id(edge), None)
                if isinstance(edge, Node):
                    queue.append(edge)
    if not wanted:
        return g
    unlinked = list(wanted.values())
    return _wrap(g._array, device, True, PiecewiseBackward(device, unlinked, through=g))


#: How many nodes behind a rule's result :func:`_linked` looks through.
_LINK_SEARCH = 8


def _tensor_mode_args(
    saved: Sequence[Any], tensors: tuple[Any, ...] | None, device: Any
) -> list[Any]:
    """Saved inputs as rules see them under ``create_graph``: Tensors, specs of plugrad dtypes."""
    args = []
    for index, value in enumerate(saved):
        tensor = None if tensors is None else tensors[index]
        if tensor is not None:
            args.append(tensor)
        elif type(value) is ArraySpec:
            args.append(ArraySpec(value.shape, device._dtype_from_native[value.dtype]))
        else:
            args.append(value)
    return args


def _restore_dtype(xp: Any, grad: Any, dtype: Any) -> Any:
    """Cast a gradient back to its input's dtype (taking the real part for a real input)."""
    if xp.isdtype(grad.dtype, "complex floating") and not xp.isdtype(dtype, "complex floating"):
        grad = xp.real(grad)
    return xp.astype(grad, dtype)
