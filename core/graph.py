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

from typing import TYPE_CHECKING, Any, ClassVar

from .errors import GraphFreedError, InPlaceModificationError
from .tensor import Tensor, _wrap

if TYPE_CHECKING:
    from .backend import Device
    from .opdef import OpDef

__all__ = [
    "ArraySpec",
    "BinaryOpNode",
    "GeneralOpNode",
    "Node",
    "OpNode",
    "UnaryOpNode",
    "array_spec",
    "output_edge",
    "split_edge",
]

#: What backward rules receive under create_graph: plugrad plus every registered op.
#: The registry sets it whenever it rebuilds its tables.
tensor_namespace: Any = None


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


class Node:
    """Base class of every ``grad_fn``: one recorded operation in the backward graph.

    Subclasses exist per op (``MulBackward``, ``ExpBackward``, ...) and per
    user :class:`~plugrad.Function`, so ``type(t.grad_fn).__name__`` names the op.

    Attributes
    ----------
    next_functions : tuple
        For each input of the operation, ``(node, index)`` where its gradient
        flows, or ``None`` if it needs none. Leaves appear as the tensor itself.
    """

    # _trace (where the forward op was created) is set only in anomaly mode.
    # Nodes define no __len__ or __bool__, so they are always true: the per-op path
    # writes an input's edge as ``x._edge or x``.
    __slots__ = ("__weakref__", "_device", "_edges", "_hooks", "_trace")
    _device: Device
    _edges: tuple[Any, ...]
    _hooks: list[Any] | None
    _trace: Any
    #: How many tensors the operation produced.
    n_outputs: ClassVar[int] = 1

    def name(self) -> str:
        """Return the node's name, e.g. ``"MulBackward"``."""
        return type(self).__name__

    @property
    def next_functions(self) -> tuple[tuple[Any, int] | None, ...]:
        return tuple(None if edge is None else split_edge(edge) for edge in self._edges)

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        """Return one gradient (or ``None``) per input, given the output gradient(s)."""
        raise NotImplementedError

    def _release(self) -> None:
        """Drop everything saved for backward (after a backward without ``retain_graph``)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


def split_edge(edge: Any) -> tuple[Any, int]:
    """``(node or leaf tensor, output index)`` of an edge (not ``None``)."""
    return edge if type(edge) is tuple else (edge, 0)


def output_edge(node: Node, index: int) -> Any:
    """The edge to output ``index`` of ``node``: the node itself if it has only one."""
    return node if node.n_outputs == 1 else (node, index)


def check_versions(node: Node, saved: Any, versions: tuple[int, ...] | None) -> None:
    """Raise if a tensor ``node`` saved was modified in place after it was saved."""
    for index, value in enumerate(saved):
        if isinstance(value, Tensor) and value._counter is not None:
            expected = 0 if versions is None else versions[index]
            if value._counter[0] != expected:
                raise InPlaceModificationError(
                    f"{node.name()} needs input {index} (a tensor of shape {value.shape}, "
                    f"dtype {value.dtype.name}) as it was when the forward op ran, but it has "
                    f"since been modified in place: it is at version {value._counter[0]}, "
                    f"expected version {expected}. Compute the backward before modifying it, "
                    "or use an out-of-place operation (x = x + y instead of x += y)."
                )


def _freed_error(node: Node) -> GraphFreedError:
    return GraphFreedError(
        f"Trying to backward through the graph a second time (or to reach {node.name()} "
        "after its saved values were freed). Saved values are freed after backward() to "
        "save memory; pass retain_graph=True to the first backward() if you need to "
        "backward through the same graph again."
    )


class OpNode(Node):
    """The node of a built-in or plugin op: calls the op's backward rules.

    ``_saved`` holds one entry per op input, as the rules receive it in an
    ordinary backward pass: the raw array if a rule that runs reads it, an
    :class:`ArraySpec` if not, or the Python scalar itself. ``_saved_tensors``
    lists the Tensors whose arrays are kept (``None`` elsewhere, or ``None``
    altogether), for the in-place check and for ``create_graph``; ``_versions``
    their versions when saved (``None``: all unmodified). ``_ans`` is the raw
    output array if a rule reads it.
    """

    __slots__ = ("_ans", "_params", "_saved", "_saved_tensors", "_versions")
    _ans: Any
    _params: dict[str, Any] | None
    _saved: tuple[Any, ...] | None
    _saved_tensors: tuple[Any, ...] | None
    _versions: tuple[Any, ...] | None
    op: ClassVar[OpDef]

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        args = self._saved
        if args is None:
            raise _freed_error(self)
        tensors = self._saved_tensors
        if tensors is not None:
            check_versions(self, tensors, self._versions)
        op = self.op
        params = self._params
        if create_graph:
            # Rules run on Tensors through plugrad's ops, so the gradient is differentiable.
            xp = tensor_namespace
            args = _tensor_mode_args(args, tensors, self._device)
            ans = None if self._ans is None else _wrap(self._ans, self._device, True, self)
        else:
            xp = self._device.rule_xp
            ans = self._ans
        broadcasting = op.broadcasting
        grads = []
        for rule, edge, arg in zip(op.vjps, self._edges, args):
            if edge is None:
                grads.append(None)
                continue
            g = rule(xp, grad, ans, *args, **params) if params else rule(xp, grad, ans, *args)
            if broadcasting:
                # Broadcasting ops also promote dtypes: hand each input its own shape and dtype.
                g = _fit(xp, g, arg)
            grads.append(g)
        return tuple(grads)

    def _release(self) -> None:
        self._saved = None
        self._saved_tensors = None
        self._ans = None


class UnaryOpNode(OpNode):
    """:class:`OpNode` of a non-broadcasting op with one array input, its backward spelled out."""

    __slots__ = ()

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        saved = self._saved
        if create_graph or saved is None or self._edges[0] is None:
            return OpNode._backward(self, grad, create_graph)
        if self._saved_tensors is not None:
            check_versions(self, self._saved_tensors, self._versions)
        params = self._params
        xp = self._device.rule_xp
        (rule,) = self.op.vjps
        if params:
            return (rule(xp, grad, self._ans, saved[0], **params),)
        return (rule(xp, grad, self._ans, saved[0]),)


class BinaryOpNode(OpNode):
    """:class:`OpNode` of an op with two array inputs: :meth:`_backward` spelled out."""

    __slots__ = ()

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        saved = self._saved
        if create_graph or saved is None:
            return OpNode._backward(self, grad, create_graph)
        if self._saved_tensors is not None:
            check_versions(self, self._saved_tensors, self._versions)
        xp = self._device.rule_xp
        ans = self._ans
        params = self._params or _NO_PARAMS
        x1, x2 = saved
        edge1, edge2 = self._edges
        op = self.op
        rule1, rule2 = op.vjps
        g1 = None if edge1 is None else rule1(xp, grad, ans, x1, x2, **params)
        g2 = None if edge2 is None else rule2(xp, grad, ans, x1, x2, **params)
        if op.broadcasting:
            # Broadcasting ops also promote dtypes: hand each input its own shape and dtype.
            if g1 is not None:
                g1 = _fit(xp, g1, x1)
            if g2 is not None:
                g2 = _fit(xp, g2, x2)
        return (g1, g2)


_NO_PARAMS: dict[str, Any] = {}


def _fit(xp: Any, grad: Any, arg: Any) -> Any:
    """``grad`` summed to ``arg``'s shape and cast to its dtype."""
    if grad.shape != arg.shape:
        grad = _unbroadcast(xp, grad, arg.shape)
    if grad.dtype != arg.dtype:
        grad = _restore_dtype(xp, grad, arg.dtype)
    return grad


class GeneralOpNode(OpNode):
    """The node of an op with several outputs or a sequence input (see :mod:`plugrad.opdef`).

    For several outputs, the engine hands :meth:`_backward` one gradient slot
    per output; slots that received nothing are filled with zeros before the
    rule runs, so rules never see ``None``. For a sequence input, ``_saved`` and
    ``_edges`` hold one entry per array of the sequence.
    """

    __slots__ = ("_out_specs", "n_outputs")
    _out_specs: tuple[Any, ...]

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        args = self._saved
        if args is None:
            raise _freed_error(self)
        tensors = self._saved_tensors
        if tensors is not None:
            check_versions(self, tensors, self._versions)
        op = self.op
        params = self._params or {}
        device = self._device
        if create_graph:
            xp = tensor_namespace
            args = _tensor_mode_args(args, tensors, device)
        else:
            xp = device.rule_xp
        if op.multiple_outputs:
            g, ans = self._outputs_for_rules(grad, create_graph)
        else:
            g = grad
            ans = self._ans
            if create_graph and ans is not None:
                ans = _wrap(ans, device, True, self)
        if op.sequence_kind is not None:
            result = tuple(op.vjps[0](xp, g, ans, tuple(args), **params))
            if len(result) != len(args):
                raise TypeError(
                    f"the backward rule of {op.name!r} returned {len(result)} gradients for a "
                    f"sequence of {len(args)} arrays; it must return one per array"
                )
            rules_and_results = [(None, r) for r in result]
        else:
            rules_and_results = [(rule, None) for rule in op.vjps]
        grads = []
        for (rule, result_g), edge, arg in zip(rules_and_results, self._edges, args):
            if edge is None:
                grads.append(None)
                continue
            g_in = result_g if rule is None else rule(xp, g, ans, *args, **params)
            if g_in is not None and op.broadcasting:
                g_in = _fit(xp, g_in, arg)
            grads.append(g_in)
        return tuple(grads)

    def _outputs_for_rules(self, grad: Any, create_graph: bool) -> tuple[tuple[Any, ...], Any]:
        """The output gradients (zeros where none arrived) and outputs, as the rules see them."""
        device = self._device
        raw = device.xp
        grads = []
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


def _tensor_mode_args(
    saved: tuple[Any, ...], tensors: tuple[Any, ...] | None, device: Any
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


def _unbroadcast(xp: Any, grad: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``grad`` over the axes that broadcasting added or stretched, giving ``shape``."""
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1
    )
    if axes:
        grad = xp.sum(grad, axis=axes, keepdims=True)
    if lead or grad.shape != shape:
        grad = xp.reshape(grad, shape)
    return grad
