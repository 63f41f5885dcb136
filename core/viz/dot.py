"""Builds the Graphviz DOT source of the autograd graph behind some tensors."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from ..errors import ArgumentError, InvalidArgumentError
from ..function import FunctionCtx
from ..graph import ArraySpec, GeneralOpNode, Node, OpNode, split_edge
from ..keyword_options import keyword_defaults, spell_out
from ..tensor import Tensor
from ..tensor_hooks import RetainGrad
from .labels import (
    dtype_name,
    format_constant,
    html_label,
    is_default,
    param_text,
    shape_text,
    values_text,
)
from .style import (
    CONSTANT_EDGE,
    DETAIL_COLOR,
    EDGE_ATTRS,
    GRAD_COLOR,
    GRADIENT_EDGE,
    GRAPH_ATTRS,
    NODE_ATTRS,
    STYLES,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["DrawingOptions", "draw", "to_dot"]

RANKDIRS = ("LR", "RL", "TB", "BT")


class DrawingOptions(TypedDict, total=False):
    """The keyword arguments of :func:`to_dot`, :func:`graph` and :func:`render`."""

    names: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]] | None
    show_values: bool
    show_grads: bool
    backward: bool
    rankdir: str | None
    max_elements: int
    title: str | None


def draw(
    outputs: Any,
    *,
    names: Any = None,
    show_values: bool = False,
    show_grads: bool = False,
    backward: bool = False,
    rankdir: str | None = None,
    max_elements: int = 8,
    title: str | None = None,
) -> _Drawing:
    """Check the arguments of :func:`to_dot` and draw the graph (the defaults are theirs)."""
    for flag, value in (
        ("show_values", show_values),
        ("show_grads", show_grads),
        ("backward", backward),
    ):
        if not isinstance(value, bool):
            raise ArgumentError(f"{flag} must be True or False, got {value!r}")
    if rankdir is None:
        rankdir = "RL" if backward else "LR"
    elif rankdir not in RANKDIRS:
        raise InvalidArgumentError(f"rankdir must be one of {', '.join(RANKDIRS)}, got {rankdir!r}")
    if type(max_elements) is not int or max_elements < 1:
        raise InvalidArgumentError(f"max_elements must be a positive int, got {max_elements!r}")
    if title is not None and not isinstance(title, str):
        raise ArgumentError(f"title must be a str or None, got {type(title).__name__}")
    drawing = _Drawing(
        _as_tensors(outputs), _named(names), show_values, show_grads, backward, max_elements
    )
    drawing.draw(rankdir, title)
    return drawing


with_drawing_options = spell_out(DrawingOptions, **keyword_defaults(draw))


@with_drawing_options
def to_dot(outputs: Tensor | Sequence[Tensor], **options: Unpack[DrawingOptions]) -> str:
    """Return Graphviz DOT source of the autograd graph behind ``outputs``.

    Needs no Graphviz: paste the text into any DOT viewer, or render it with
    :func:`render` / :func:`graph`.

    Parameters
    ----------
    outputs : Tensor or sequence of Tensor
        The tensor(s) whose graph to draw. Several outputs share one picture
        (their common subgraphs are drawn once). A tensor with no graph (a
        leaf) is drawn alone.
    names : mapping of str to Tensor, or iterable of (str, Tensor) pairs, optional
        Labels for tensors, e.g. ``{"a": a, "b": b}`` or
        ``model.named_parameters()``-style pairs. Leaves and constants are
        labelled with their name; a named non-leaf gets a box of its own
        between the operation that made it and those that use it.
    show_values : bool
        Also show the values of the tensors drawn as boxes: the first
        ``max_elements`` values of larger ones, followed by ``…``.
    show_grads : bool
        Also show ``.grad`` of the leaves that require grad and of the
        non-leaves that called :meth:`~plugrad.Tensor.retain_grad` (after a
        ``backward()``).
    backward : bool
        Draw the gradient flow instead of the data flow: edges reversed, from
        the outputs back to the leaves, constants left out.
    rankdir : {"LR", "RL", "TB", "BT"}, optional
        Graphviz's layout direction. Default: ``"LR"`` (inputs on the left),
        and ``"RL"`` with ``backward=True``, so the leaves stay on the left in
        both pictures.
    max_elements : int
        How many values of one tensor ``show_values`` and ``show_grads`` print.
    title : str, optional
        A caption above the picture.

    Returns
    -------
    str
        The DOT source (``digraph plugrad { ... }``).

    Notes
    -----
    Shapes of non-leaf results come from what the graph saved for backward.
    After a ``backward()`` without ``retain_graph=True`` the graph has freed
    them, so operations may then be drawn without a shape, and constant
    inputs are no longer known; pass ``retain_graph=True`` to keep the
    picture complete. Non-tensor arguments of a custom
    :class:`~plugrad.Function` are not recorded in the graph, so they are not drawn.

    Examples
    --------
    >>> import plugrad
    >>> a = plugrad.tensor(2.0, requires_grad=True)
    >>> b = plugrad.tensor(3.0, requires_grad=True)
    >>> source = plugrad.viz.to_dot(a * b + 1, names={"a": a, "b": b})
    >>> print(source)  # doctest: +ELLIPSIS
    digraph plugrad {
      ...
      n0 [label=<<B>a</B><BR/><FONT POINT-SIZE="10" COLOR="#4a4a4a">() float32</FONT>>, ...]
      n1 [label=<<B>b</B><BR/>...
      n2 [label=<<B>MulBackward</B><BR/>...
      n0 -> n2
      n1 -> n2
      ...
    }
    <BLANKLINE>
    """
    return draw(outputs, **options).source


def _as_tensors(outputs: Any) -> list[Tensor]:
    """``outputs`` as a list of distinct Tensors, or a TypeError/ValueError that says why not."""
    if isinstance(outputs, Tensor):
        return [outputs]
    if isinstance(outputs, (str, bytes, Mapping)) or not isinstance(outputs, Iterable):
        hint = " (name them with names=...)" if isinstance(outputs, Mapping) else ""
        raise ArgumentError(
            f"outputs must be a Tensor or a sequence of Tensors, got {type(outputs).__name__}{hint}"
        )
    tensors: list[Tensor] = []
    seen: set[int] = set()
    for index, tensor in enumerate(outputs):
        if not isinstance(tensor, Tensor):
            raise ArgumentError(
                f"outputs[{index}] is a {type(tensor).__name__}, not a Tensor; pass the tensors "
                "whose graph to draw"
            )
        if id(tensor) not in seen:
            seen.add(id(tensor))
            tensors.append(tensor)
    if not tensors:
        raise InvalidArgumentError(
            "outputs is empty; pass a Tensor or a sequence of Tensors to draw"
        )
    return tensors


def _named(names: Any) -> list[tuple[str, Tensor]]:
    """``names`` as (name, tensor) pairs, checked."""
    if names is None:
        return []
    if isinstance(names, Mapping):
        pairs = list(names.items())
    elif isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        raise ArgumentError(
            "names must map names to tensors ({'a': a, ...}) or be (name, tensor) pairs, "
            f"got {type(names).__name__}"
        )
    else:
        pairs = list(names)
    checked = []
    for index, pair in enumerate(pairs):
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise ArgumentError(
                f"names must hold (name, tensor) pairs, but item {index} is {pair!r:.60}"
            )
        name, tensor = pair
        if isinstance(name, Tensor) and isinstance(tensor, str):
            raise ArgumentError(
                "names maps names to tensors ({'a': a}), not tensors to names; "
                f"got the tensor -> {tensor!r} the other way round"
            )
        if not isinstance(name, str) or not name:
            raise ArgumentError(f"names: every name must be a non-empty str, got {name!r:.60}")
        if not isinstance(tensor, Tensor):
            raise ArgumentError(f"names: {name!r} is given a {type(tensor).__name__}, not a Tensor")
        checked.append((name, tensor))
    return checked


#: A slot: one output of one node, as (id(node), output index).
_Slot = tuple[int, int]


class _Drawing:
    """Walks the graph once (no recursion) and writes one DOT statement per box and arrow."""

    def __init__(
        self,
        roots: list[Tensor],
        named: list[tuple[str, Tensor]],
        show_values: bool,
        show_grads: bool,
        backward: bool,
        max_elements: int,
    ) -> None:
        self.roots = roots
        self.show_values = show_values
        self.show_grads = show_grads
        self.backward = backward
        self.max_elements = max_elements
        self.lines: list[str] = []
        self.node_count = 0
        self.edge_count = 0
        self.source = ""
        #: id(tensor or node) -> DOT node id, for everything drawn so far.
        self.ids: dict[int, str] = {}
        #: slot -> DOT id of the box of a non-leaf tensor drawn on its own.
        self.slot_ids: dict[_Slot, str] = {}
        self.tensor_names: dict[int, list[str]] = {}
        self.slot_names: dict[_Slot, list[str]] = {}
        #: Non-leaf tensors that get a box of their own: outputs, named and retained ones.
        self.slot_tensors: dict[_Slot, Tensor] = {}
        self.output_slots: set[_Slot] = set()
        for name, tensor in named:
            edge = tensor._edge
            if edge is None:
                self.tensor_names.setdefault(id(tensor), []).append(name)
            else:
                node, output = split_edge(edge)
                slot = (id(node), output)
                self.slot_names.setdefault(slot, []).append(name)
                self.slot_tensors.setdefault(slot, tensor)
        for index, tensor in enumerate(roots):
            edge = tensor._edge
            if edge is None:
                continue
            node, output = split_edge(edge)
            slot = (id(node), output)
            self.output_slots.add(slot)
            self.slot_tensors.setdefault(slot, tensor)
            if slot not in self.slot_names:
                self.slot_names[slot] = ["output" if len(roots) == 1 else f"output {index}"]
        self.order = _forward_order(roots)
        #: Shape and dtype of each slot, as the nodes that use it saw it.
        self.consumer_meta: dict[_Slot, tuple[tuple[int, ...], str]] = {}
        devices = {id(t._device) for t in roots}
        for item in self.order:
            device = getattr(item, "_device", None)
            if device is not None:
                devices.add(id(device))
            if not isinstance(item, Node):
                continue
            for index, hook in getattr(item, "_hooks", None) or ():
                if isinstance(hook, RetainGrad):
                    retained = hook.tensor()
                    if retained is not None:
                        self.slot_tensors.setdefault((id(item), index), retained)
            for index, edge in enumerate(item._next_edges):
                if edge is not None and isinstance(edge[0], Node):
                    slot = (id(edge[0]), edge[1])
                    if slot not in self.consumer_meta:
                        meta = _input_meta(item, index)
                        if meta is not None:
                            self.consumer_meta[slot] = meta
        self.show_device = len(devices) > 1

    # -- the walk -------------------------------------------------------------------------

    def draw(self, rankdir: str, title: str | None) -> None:
        graph_attrs = f"rankdir={rankdir}, {GRAPH_ATTRS}"
        if title:
            graph_attrs += f", label={html_label([(title, None)])}, labelloc=t"
        self.lines = [
            "digraph plugrad {",
            f"  graph [{graph_attrs}]",
            f"  node [{NODE_ATTRS}]",
            f"  edge [{EDGE_ATTRS}]",
        ]
        for item in self.order:
            if isinstance(item, Node):
                self._op(item)
            else:
                self._leaf(item)
        self.lines.append("}")
        self.source = "\n".join(self.lines) + "\n"

    def _new_id(self, key: int | None) -> str:
        dot_id = f"n{self.node_count}"
        self.node_count += 1
        if key is not None:
            self.ids[key] = dot_id
        return dot_id

    def _box(self, dot_id: str, label: str, kind: str) -> None:
        self.lines.append(f"  {dot_id} [label={label}, {STYLES[kind]}]")

    def _arrow(self, source: str, target: str, attrs: str = "") -> None:
        """An arrow along the data flow; reversed, in gradient colours, in backward mode."""
        if self.backward:
            source, target = target, source
            attrs = f"{attrs}, {GRADIENT_EDGE}" if attrs else GRADIENT_EDGE
        self.edge_count += 1
        self.lines.append(f"  {source} -> {target}" + (f" [{attrs}]" if attrs else ""))

    def _leaf(self, tensor: Tensor, constant: bool = False) -> str:
        """Draw a tensor that no drawn node produced: a leaf or a constant."""
        kind = "constant" if constant or not tensor._requires_grad else "leaf"
        names = self.tensor_names.get(id(tensor))
        title = ", ".join(names) if names else None if kind == "leaf" else "constant"
        dot_id = self._new_id(id(tensor))
        self._box(dot_id, html_label(self._tensor_details(title, tensor, kind == "leaf")), kind)
        return dot_id

    def _op(self, node: Node) -> None:
        sources: list[tuple[str, str]] = []
        for index, edge in enumerate(node._next_edges):
            if edge is not None:
                sources.append(self._source_of(edge[0], edge[1]))
            elif not self.backward:
                constant = self._constant(node, index)
                if constant is not None:
                    source, attrs = constant
                    sources.append(
                        (source, f"{attrs}, {CONSTANT_EDGE}" if attrs else CONSTANT_EDGE)
                    )
        kind = "function" if isinstance(node, FunctionCtx) else "op"
        dot_id = self._new_id(id(node))
        self._box(dot_id, html_label(self._op_details(node)), kind)
        for source, attrs in sources:
            self._arrow(source, dot_id, attrs)
        n_outputs = node.n_outputs
        for index in range(n_outputs):
            slot = (id(node), index)
            tensor = self.slot_tensors.get(slot)
            if tensor is None:
                continue
            kind = "output" if slot in self.output_slots else "tensor"
            names = self.slot_names.get(slot)
            title = ", ".join(names) if names else None
            retained = tensor.retains_grad or tensor._grad is not None
            tensor_id = self._new_id(None)
            self.slot_ids[slot] = tensor_id
            self._box(tensor_id, html_label(self._tensor_details(title, tensor, retained)), kind)
            self._arrow(dot_id, tensor_id, f'label="[{index}]"' if n_outputs > 1 else "")

    def _source_of(self, producer: Any, index: int) -> tuple[str, str]:
        """Where the arrow for output ``index`` of ``producer`` starts, and its attributes."""
        if isinstance(producer, Node):
            slot_box = self.slot_ids.get((id(producer), index))
            if slot_box is not None:
                return slot_box, ""
            if producer.n_outputs > 1:
                return self.ids[id(producer)], f'label="[{index}]"'
        return self.ids[id(producer)], ""

    def _constant(self, node: Node, index: int) -> tuple[str, str] | None:
        """Draw input ``index`` of ``node``, which takes no gradient; return where its arrow
        starts and the arrow's attributes (``None``: the input is not known)."""
        value = _constant_input(node, index)
        if value is None:
            return None
        if isinstance(value, Tensor):
            if id(value) in self.ids:
                return self.ids[id(value)], ""
            edge = value._edge
            if edge is not None and id(value.grad_fn) in self.ids:
                # A tensor of the graph used where the op takes no gradient (an index, ...).
                return self._source_of(*split_edge(edge))
            return self._leaf(value, constant=True), ""
        if isinstance(value, ArraySpec):
            dot_id = self._new_id(None)
            meta = (tuple(value.shape), dtype_name(value.dtype, node._device))
            details = [("constant", None), (self._meta_text(meta, node._device), DETAIL_COLOR)]
            self._box(dot_id, html_label(details), "constant")
            return dot_id, ""
        dot_id = self._new_id(None)
        self._box(dot_id, html_label([(format_constant(value), None)]), "number")
        return dot_id, ""

    # -- labels ---------------------------------------------------------------------------

    def _meta_text(self, meta: tuple[tuple[int, ...], str], device: Any) -> str:
        shape, dtype = meta
        text = f"{shape_text(shape)} {dtype}"
        if self.show_device and device is not None:
            text += f" · {device.name}"
        return text

    def _tensor_details(
        self, title: str | None, tensor: Tensor, grad: bool
    ) -> list[tuple[str, str | None]]:
        details: list[tuple[str, str | None]] = [] if title is None else [(title, None)]
        meta = (tensor.shape, tensor.dtype.name)
        details.append((self._meta_text(meta, tensor._device), DETAIL_COLOR))
        if self.show_values:
            text = values_text(tensor._array, tensor._device, self.max_elements)
            details.append((f"value {text}", DETAIL_COLOR))
        if self.show_grads and grad:
            g = tensor._grad
            text = "None" if g is None else values_text(g._array, g._device, self.max_elements)
            details.append((f"grad {text}", GRAD_COLOR))
        return details

    def _op_details(self, node: Node) -> list[tuple[str, str | None]]:
        details: list[tuple[str, str | None]] = [(node.name(), None)]
        device = getattr(node, "_device", None)
        n_outputs = node.n_outputs
        for index in range(n_outputs):
            meta = self._slot_meta(node, index)
            if meta is not None:
                prefix = f"[{index}] " if n_outputs > 1 else ""
                details.append((prefix + self._meta_text(meta, device), DETAIL_COLOR))
        if isinstance(node, OpNode) and node._params:
            shown = [
                f"{name}={param_text(value, device)}"
                for name, value in node._params.items()
                if not is_default(node.op, name, value)
            ]
            if shown:
                details.append((", ".join(shown), DETAIL_COLOR))
        return details

    def _slot_meta(self, node: Node, index: int) -> tuple[tuple[int, ...], str] | None:
        """Shape and dtype of output ``index`` of ``node``, from wherever the graph keeps them."""
        slot = (id(node), index)
        tensor = self.slot_tensors.get(slot)
        if tensor is not None:
            return tensor.shape, tensor.dtype.name
        device = getattr(node, "_device", None)
        specs = getattr(node, "_out_specs", None) if isinstance(node, GeneralOpNode) else None
        if specs is None and isinstance(node, FunctionCtx):
            specs = getattr(node, "_output_specs", None)
        if specs is not None:
            shape, native = specs[index][:2]
            return tuple(shape), dtype_name(native, device)
        if isinstance(node, OpNode) and node.n_outputs == 1:
            ans = node._ans
            if ans is not None and not isinstance(ans, tuple):
                return tuple(ans.shape), dtype_name(ans.dtype, device)
        return self.consumer_meta.get(slot)


def _forward_order(roots: list[Tensor]) -> list[Any]:
    """Every node and leaf behind ``roots``, each after everything it is computed from.

    An iterative depth-first walk (post-order), inputs in order, so the result
    is deterministic and the drawing lists leaves in the order they were used.
    """
    order: list[Any] = []
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root.grad_fn or root, False) for root in reversed(roots)]
    while stack:
        item, finished = stack.pop()
        if finished:
            order.append(item)
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        stack.append((item, True))
        if isinstance(item, Node):
            for edge in reversed(item._next_edges):
                if edge is not None and id(edge[0]) not in seen:
                    stack.append((edge[0], False))
    return order


def _input_meta(node: Node, index: int) -> tuple[tuple[int, ...], str] | None:
    """Shape and dtype of input ``index`` of ``node`` as it recorded them, if it still does."""
    device = getattr(node, "_device", None)
    if isinstance(node, OpNode):
        saved = node._saved
        if saved is None or index >= len(saved):
            return None
        value = _saved_input(node, saved, index)
        if isinstance(value, Tensor):
            return value.shape, value.dtype.name
        if isinstance(value, ArraySpec):
            return tuple(value.shape), dtype_name(value.dtype, device)
        return None
    if isinstance(node, FunctionCtx):
        metas = getattr(node, "_input_meta", None)
        if metas and index < len(metas) and metas[index] is not None:
            shape, native = metas[index]
            return tuple(shape), dtype_name(native, device)
    return None


def _constant_input(node: Node, index: int) -> Any:
    """What input ``index`` of ``node`` was, where it takes no gradient: a Tensor, an
    :class:`ArraySpec` (a tensor the node did not keep), a Python number, or ``None``
    when that is not known (freed, or not recorded by this kind of node)."""
    if isinstance(node, OpNode):
        saved = node._saved
        if saved is None or index >= len(saved):
            return None
        return _saved_input(node, saved, index)
    if isinstance(node, FunctionCtx):
        metas = getattr(node, "_input_meta", None)
        if metas and index < len(metas) and metas[index] is not None:
            shape, native = metas[index]
            return ArraySpec(tuple(shape), native)
    return None


def _saved_input(node: OpNode, saved: Any, index: int) -> Any:
    """Input ``index`` as the node keeps it: the Tensor whose array it kept, an
    :class:`ArraySpec` for an array it kept without its Tensor or did not keep,
    or the Python number itself."""
    tensors = node._saved_tensors
    if tensors is not None and index < len(tensors) and tensors[index] is not None:
        return tensors[index]
    value = saved[index]
    if value is None or isinstance(value, (ArraySpec, bool, int, float, complex)):
        return value
    return ArraySpec(tuple(value.shape), value.dtype)  # a raw array, kept for a rule
