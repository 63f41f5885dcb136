"""Pictures of the autograd graph: Graphviz DOT source, image files, notebook display.

:func:`to_dot` writes the graph behind one or more tensors as DOT source; it
needs nothing beyond plugrad. :func:`render` and :class:`Graph` turn that
source into SVG, PNG or PDF with Graphviz, which is optional: the Python
package ``graphviz`` (``pip install ".[viz]"`` from a checkout) and the program ``dot``
(``apt-get install graphviz``, ``brew install graphviz`` or
``conda install -c conda-forge graphviz``). Both are looked up only when a
picture is rendered.

What the picture shows, in forward mode (the default):

- leaves that require grad: blue rounded boxes (their name, shape and dtype);
- constants (tensors that need no gradient, Python numbers): grey, dashed,
  joined by dashed edges, because no gradient flows back to them;
- operations: grey boxes named like their ``grad_fn`` (``MulBackward``), with
  the shape and dtype of their result and their non-tensor arguments;
  :class:`~plugrad.Function` subclasses are purple;
- the outputs: green boxes; non-leaves that were given a name or called
  :meth:`~plugrad.Tensor.retain_grad`: white boxes with a green border.

``backward=True`` draws the same graph as the backward pass walks it: every
edge is reversed, so the arrows carry gradients from the outputs back to the
leaves, and constants are left out because nothing flows to them.

The graph is walked without recursion, so graphs of many thousands of
operations are drawn as readily as small ones (rendering them is up to ``dot``).
"""

from __future__ import annotations

import html
import inspect
import os
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import MissingDependencyError, MissingProgramError
from .function import FunctionCtx
from .graph import ArraySpec, GeneralOpNode, Node, OpNode, split_edge
from .tensor import Tensor, _RetainGrad

__all__ = ["Graph", "graph", "render", "to_dot"]

#: File suffix -> Graphviz output format (``dot`` means: write the source itself).
FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": "dot", ".gv": "dot"}
_RANKDIRS = ("LR", "RL", "TB", "BT")

_INSTALL_DOT = (
    "apt-get install graphviz (Debian, Ubuntu), brew install graphviz (macOS) or "
    "conda install -c conda-forge graphviz"
)
_NO_PACKAGE = (
    "rendering a graph needs the Python package 'graphviz', which is not installed; "
    "install it with: pip install '.[viz]' from a checkout (or pip install graphviz). "
    "Rendering also "
    f"needs the Graphviz program 'dot': {_INSTALL_DOT}. Writing DOT source needs neither: "
    "use plugrad.viz.to_dot() or a path ending in .dot."
)
_NO_PROGRAM = (
    "rendering a graph needs the Graphviz program 'dot', which was not found on PATH; "
    f"install Graphviz: {_INSTALL_DOT}. Writing DOT source needs no Graphviz: use "
    "plugrad.viz.to_dot() or a path ending in .dot."
)

# -- how things look ----------------------------------------------------------------------

_FONT = "Helvetica"
_DETAIL_COLOR = "#4a4a4a"
_GRAD_COLOR = "#b03a2e"
_GRAPH_ATTRS = (
    f'fontname="{_FONT}", fontsize=13, nodesep=0.25, ranksep=0.45, pad=0.2, bgcolor="white"'
)
_NODE_ATTRS = (
    f'fontname="{_FONT}", fontsize=12, margin="0.14,0.06", height=0.4, penwidth=1.2, '
    'color="#6b6b6b"'
)
_EDGE_ATTRS = f'fontname="{_FONT}", fontsize=10, color="#4d4d4d", arrowsize=0.75, penwidth=1.2'
_STYLES = {
    "leaf": 'shape=box, style="rounded,filled", fillcolor="#d6e6fa", color="#3a6fb5"',
    "constant": (
        'shape=box, style="rounded,filled,dashed", fillcolor="#f2f2f2", color="#8c8c8c", '
        'fontcolor="#3c3c3c"'
    ),
    "number": (
        'shape=ellipse, style="filled,dashed", fillcolor="#f2f2f2", color="#8c8c8c", '
        'fontcolor="#3c3c3c", fontsize=11, height=0.3, margin="0.05,0.02"'
    ),
    "op": 'shape=box, style="filled", fillcolor="#e8e8e8", color="#6b6b6b"',
    "function": 'shape=box, style="filled", fillcolor="#e6dcf4", color="#7452a8"',
    "output": (
        'shape=box, style="rounded,filled", fillcolor="#d5ecc9", color="#4b8a34", penwidth=1.8'
    ),
    "tensor": 'shape=box, style="rounded,filled", fillcolor="#ffffff", color="#4b8a34"',
}
_CONSTANT_EDGE = 'style=dashed, color="#9a9a9a", arrowhead=empty'
_GRADIENT_EDGE = f'color="{_GRAD_COLOR}", fontcolor="{_GRAD_COLOR}"'
#: Longest text of one non-tensor argument shown on an op (longer ones are cut).
_PARAM_WIDTH = 24
#: Width at which value, gradient and argument lines wrap.
_LINE_WIDTH = 34


class Graph:
    """A picture of an autograd graph: DOT source that renders to files and in notebooks.

    Made by :func:`graph`. In Jupyter, a ``Graph`` as the last expression of
    a cell is shown as SVG (rendering needs Graphviz, see :mod:`plugrad.viz`).

    Attributes
    ----------
    source : str
        The graph in Graphviz's DOT language (what :func:`to_dot` returns).
    node_count : int
        How many boxes the picture has (operations, tensors and constants).
    edge_count : int
        How many arrows the picture has.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    >>> g = plugrad.viz.graph(plugrad.sum(x * x), names={"x": x})
    >>> g
    <plugrad.viz.Graph: 4 nodes, 4 edges>
    >>> g.source.startswith("digraph")
    True
    """

    __slots__ = ("edge_count", "node_count", "source")

    def __init__(self, source: str, node_count: int, edge_count: int) -> None:
        self.source = source
        self.node_count = node_count
        self.edge_count = edge_count

    def render(self, path: str | os.PathLike[str]) -> Path:
        """Write the picture to ``path``, in the format its suffix names; return the path.

        Parameters
        ----------
        path : str or path-like
            Ends in ``.svg``, ``.png``, ``.pdf`` (rendered by Graphviz) or
            ``.dot``/``.gv`` (the DOT source, which needs no Graphviz).

        Returns
        -------
        pathlib.Path
            ``path``.

        Raises
        ------
        ValueError
            If the suffix is none of those.
        plugrad.errors.MissingDependencyError
            If the Python package ``graphviz`` is missing (image formats only).
        plugrad.errors.MissingProgramError
            If the Graphviz program ``dot`` is missing (image formats only).

        Examples
        --------
        >>> import os, tempfile
        >>> import plugrad
        >>> x = plugrad.tensor(2.0, requires_grad=True)
        >>> folder = tempfile.mkdtemp()
        >>> path = plugrad.viz.graph(x * x).render(os.path.join(folder, "square.dot"))
        >>> path.read_text().startswith("digraph")
        True
        """
        path = Path(path)
        file_format = _format_of(path)
        if file_format == "dot":
            path.write_text(self.source, encoding="utf-8")
        else:
            # Rendered fully before the file is opened: a failure leaves no partial file.
            path.write_bytes(self.pipe(file_format))
        return path

    def pipe(self, format: str = "svg") -> bytes:
        """Return the picture rendered by Graphviz in ``format`` (``"svg"``, ``"png"``, ...).

        Raises the errors :meth:`render` raises when Graphviz is missing.

        Examples
        --------
        >>> import plugrad
        >>> x = plugrad.tensor(2.0, requires_grad=True)
        >>> svg = plugrad.viz.graph(x * x).pipe("svg")  # doctest: +SKIP
        """
        graphviz = _import_graphviz()
        try:
            return bytes(graphviz.Source(self.source).pipe(format=format))
        except graphviz.ExecutableNotFound as error:
            raise MissingProgramError(_NO_PROGRAM) from error

    def _repr_svg_(self) -> str:
        return self.pipe("svg").decode("utf-8")

    def __str__(self) -> str:
        return self.source

    def __repr__(self) -> str:
        return f"<plugrad.viz.Graph: {self.node_count} nodes, {self.edge_count} edges>"


def to_dot(
    outputs: Tensor | Sequence[Tensor],
    *,
    names: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]] | None = None,
    show_values: bool = False,
    show_grads: bool = False,
    backward: bool = False,
    rankdir: str | None = None,
    max_elements: int = 8,
    title: str | None = None,
) -> str:
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
    return _draw(
        outputs, names, show_values, show_grads, backward, rankdir, max_elements, title
    ).source


def graph(
    outputs: Tensor | Sequence[Tensor],
    *,
    names: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]] | None = None,
    show_values: bool = False,
    show_grads: bool = False,
    backward: bool = False,
    rankdir: str | None = None,
    max_elements: int = 8,
    title: str | None = None,
) -> Graph:
    """Return a :class:`Graph`: the picture of the graph behind ``outputs``.

    Takes the arguments of :func:`to_dot`. In a notebook the result displays
    itself as SVG; ``.render(path)`` writes a file and ``.source`` is the DOT text.

    Examples
    --------
    >>> import plugrad
    >>> a = plugrad.tensor(2.0, requires_grad=True)
    >>> b = plugrad.tensor(3.0, requires_grad=True)
    >>> c = plugrad.tensor(4.0, requires_grad=True)
    >>> d = plugrad.tensor(5.0, requires_grad=True)
    >>> e = a * b + plugrad.log(d) * c
    >>> picture = plugrad.viz.graph(e, names=dict(a=a, b=b, c=c, d=d, e=e))
    >>> picture
    <plugrad.viz.Graph: 9 nodes, 8 edges>
    >>> picture  # in Jupyter: the SVG picture  # doctest: +SKIP
    """
    drawing = _draw(outputs, names, show_values, show_grads, backward, rankdir, max_elements, title)
    return Graph(drawing.source, drawing.node_count, drawing.edge_count)


def render(
    outputs: Tensor | Sequence[Tensor],
    path: str | os.PathLike[str],
    *,
    names: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]] | None = None,
    show_values: bool = False,
    show_grads: bool = False,
    backward: bool = False,
    rankdir: str | None = None,
    max_elements: int = 8,
    title: str | None = None,
) -> Path:
    """Draw the graph behind ``outputs`` into the file ``path``; return the path.

    The format follows the suffix: ``.svg``, ``.png`` and ``.pdf`` are
    rendered by Graphviz (see :mod:`plugrad.viz` for installing it);
    ``.dot``/``.gv`` files hold the DOT source and need no Graphviz. The
    other arguments are those of :func:`to_dot`.

    Raises
    ------
    ValueError
        If the suffix is not one of those above.
    plugrad.errors.MissingDependencyError, plugrad.errors.MissingProgramError
        If rendering needs Graphviz and it is missing (the message says what to install).

    Examples
    --------
    >>> import os, tempfile
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    >>> folder = tempfile.mkdtemp()
    >>> plugrad.viz.render(plugrad.exp(x), os.path.join(folder, "exp.dot")).name
    'exp.dot'
    >>> plugrad.viz.render(plugrad.exp(x), os.path.join(folder, "exp.svg"))  # doctest: +SKIP
    PosixPath('.../exp.svg')
    """
    _format_of(Path(path))  # a bad suffix fails before any work
    picture = graph(
        outputs,
        names=names,
        show_values=show_values,
        show_grads=show_grads,
        backward=backward,
        rankdir=rankdir,
        max_elements=max_elements,
        title=title,
    )
    return picture.render(path)


# -- building the source ------------------------------------------------------------------


def _draw(
    outputs: Any,
    names: Any,
    show_values: bool,
    show_grads: bool,
    backward: bool,
    rankdir: str | None,
    max_elements: int,
    title: str | None,
) -> _Drawing:
    """Check the arguments of :func:`to_dot` and draw the graph."""
    for flag, value in (
        ("show_values", show_values),
        ("show_grads", show_grads),
        ("backward", backward),
    ):
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be True or False, got {value!r}")
    if rankdir is None:
        rankdir = "RL" if backward else "LR"
    elif rankdir not in _RANKDIRS:
        raise ValueError(f"rankdir must be one of {', '.join(_RANKDIRS)}, got {rankdir!r}")
    if type(max_elements) is not int or max_elements < 1:
        raise ValueError(f"max_elements must be a positive int, got {max_elements!r}")
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str or None, got {type(title).__name__}")
    drawing = _Drawing(
        _as_tensors(outputs), _named(names), show_values, show_grads, backward, max_elements
    )
    drawing.draw(rankdir, title)
    return drawing


def _as_tensors(outputs: Any) -> list[Tensor]:
    """``outputs`` as a list of distinct Tensors, or a TypeError/ValueError that says why not."""
    if isinstance(outputs, Tensor):
        return [outputs]
    if isinstance(outputs, (str, bytes, Mapping)) or not isinstance(outputs, Iterable):
        hint = " (name them with names=...)" if isinstance(outputs, Mapping) else ""
        raise TypeError(
            f"outputs must be a Tensor or a sequence of Tensors, got {type(outputs).__name__}{hint}"
        )
    tensors: list[Tensor] = []
    seen: set[int] = set()
    for index, tensor in enumerate(outputs):
        if not isinstance(tensor, Tensor):
            raise TypeError(
                f"outputs[{index}] is a {type(tensor).__name__}, not a Tensor; pass the tensors "
                "whose graph to draw"
            )
        if id(tensor) not in seen:
            seen.add(id(tensor))
            tensors.append(tensor)
    if not tensors:
        raise ValueError("outputs is empty; pass a Tensor or a sequence of Tensors to draw")
    return tensors


def _named(names: Any) -> list[tuple[str, Tensor]]:
    """``names`` as (name, tensor) pairs, checked."""
    if names is None:
        return []
    if isinstance(names, Mapping):
        pairs = list(names.items())
    elif isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        raise TypeError(
            "names must map names to tensors ({'a': a, ...}) or be (name, tensor) pairs, "
            f"got {type(names).__name__}"
        )
    else:
        pairs = list(names)
    checked = []
    for index, pair in enumerate(pairs):
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(
                f"names must hold (name, tensor) pairs, but item {index} is {pair!r:.60}"
            )
        name, tensor = pair
        if isinstance(name, Tensor) and isinstance(tensor, str):
            raise TypeError(
                "names maps names to tensors ({'a': a}), not tensors to names; "
                f"got the tensor -> {tensor!r} the other way round"
            )
        if not isinstance(name, str) or not name:
            raise TypeError(f"names: every name must be a non-empty str, got {name!r:.60}")
        if not isinstance(tensor, Tensor):
            raise TypeError(f"names: {name!r} is given a {type(tensor).__name__}, not a Tensor")
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
                if isinstance(hook, _RetainGrad):
                    tensor = hook.tensor()
                    if tensor is not None:
                        self.slot_tensors.setdefault((id(item), index), tensor)
            for index, edge in enumerate(item.next_functions):
                if edge is not None and isinstance(edge[0], Node):
                    slot = (id(edge[0]), edge[1])
                    if slot not in self.consumer_meta:
                        meta = _input_meta(item, index)
                        if meta is not None:
                            self.consumer_meta[slot] = meta
        self.show_device = len(devices) > 1

    # -- the walk -------------------------------------------------------------------------

    def draw(self, rankdir: str, title: str | None) -> None:
        graph_attrs = f"rankdir={rankdir}, {_GRAPH_ATTRS}"
        if title:
            graph_attrs += f", label={_html([(title, None)])}, labelloc=t"
        self.lines = [
            "digraph plugrad {",
            f"  graph [{graph_attrs}]",
            f"  node [{_NODE_ATTRS}]",
            f"  edge [{_EDGE_ATTRS}]",
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
        self.lines.append(f"  {dot_id} [label={label}, {_STYLES[kind]}]")

    def _arrow(self, source: str, target: str, attrs: str = "") -> None:
        """An arrow along the data flow; reversed, in gradient colours, in backward mode."""
        if self.backward:
            source, target = target, source
            attrs = f"{attrs}, {_GRADIENT_EDGE}" if attrs else _GRADIENT_EDGE
        self.edge_count += 1
        self.lines.append(f"  {source} -> {target}" + (f" [{attrs}]" if attrs else ""))

    def _leaf(self, tensor: Tensor, constant: bool = False) -> str:
        """Draw a tensor that no drawn node produced: a leaf or a constant."""
        kind = "constant" if constant or not tensor._requires_grad else "leaf"
        names = self.tensor_names.get(id(tensor))
        title = ", ".join(names) if names else None if kind == "leaf" else "constant"
        dot_id = self._new_id(id(tensor))
        self._box(dot_id, _html(self._tensor_details(title, tensor, kind == "leaf")), kind)
        return dot_id

    def _op(self, node: Node) -> None:
        sources: list[tuple[str, str]] = []
        for index, edge in enumerate(node.next_functions):
            if edge is not None:
                sources.append(self._source_of(edge[0], edge[1]))
            elif not self.backward:
                constant = self._constant(node, index)
                if constant is not None:
                    source, attrs = constant
                    sources.append(
                        (source, f"{attrs}, {_CONSTANT_EDGE}" if attrs else _CONSTANT_EDGE)
                    )
        kind = "function" if isinstance(node, FunctionCtx) else "op"
        dot_id = self._new_id(id(node))
        self._box(dot_id, _html(self._op_details(node)), kind)
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
            self._box(tensor_id, _html(self._tensor_details(title, tensor, retained)), kind)
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
            meta = (tuple(value.shape), _dtype_name(value.dtype, node._device))
            details = [("constant", None), (self._meta_text(meta, node._device), _DETAIL_COLOR)]
            self._box(dot_id, _html(details), "constant")
            return dot_id, ""
        dot_id = self._new_id(None)
        self._box(dot_id, _html([(_format_constant(value), None)]), "number")
        return dot_id, ""

    # -- labels ---------------------------------------------------------------------------

    def _meta_text(self, meta: tuple[tuple[int, ...], str], device: Any) -> str:
        shape, dtype = meta
        text = f"{_shape_text(shape)} {dtype}"
        if self.show_device and device is not None:
            text += f" · {device.name}"
        return text

    def _tensor_details(
        self, title: str | None, tensor: Tensor, grad: bool
    ) -> list[tuple[str, str | None]]:
        details: list[tuple[str, str | None]] = [] if title is None else [(title, None)]
        meta = (tensor.shape, tensor.dtype.name)
        details.append((self._meta_text(meta, tensor._device), _DETAIL_COLOR))
        if self.show_values:
            text = _values_text(tensor._array, tensor._device, self.max_elements)
            details.append((f"value {text}", _DETAIL_COLOR))
        if self.show_grads and grad:
            g = tensor._grad
            text = "None" if g is None else _values_text(g._array, g._device, self.max_elements)
            details.append((f"grad {text}", _GRAD_COLOR))
        return details

    def _op_details(self, node: Node) -> list[tuple[str, str | None]]:
        details: list[tuple[str, str | None]] = [(node.name(), None)]
        device = getattr(node, "_device", None)
        n_outputs = node.n_outputs
        for index in range(n_outputs):
            meta = self._slot_meta(node, index)
            if meta is not None:
                prefix = f"[{index}] " if n_outputs > 1 else ""
                details.append((prefix + self._meta_text(meta, device), _DETAIL_COLOR))
        if isinstance(node, OpNode) and node._params:
            shown = [
                f"{name}={_param_text(value, device)}"
                for name, value in node._params.items()
                if not _is_default(node.op, name, value)
            ]
            if shown:
                details.append((", ".join(shown), _DETAIL_COLOR))
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
            return tuple(shape), _dtype_name(native, device)
        if isinstance(node, OpNode) and node.n_outputs == 1:
            ans = node._ans
            if ans is not None and not isinstance(ans, tuple):
                return tuple(ans.shape), _dtype_name(ans.dtype, device)
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
            for edge in reversed(item.next_functions):
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
            return tuple(value.shape), _dtype_name(value.dtype, device)
        return None
    if isinstance(node, FunctionCtx):
        metas = getattr(node, "_input_meta", None)
        if metas and index < len(metas) and metas[index] is not None:
            shape, native = metas[index]
            return tuple(shape), _dtype_name(native, device)
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


def _dtype_name(native: Any, device: Any) -> str:
    try:
        return str(device._dtype_from_native[native].name)
    except (AttributeError, KeyError, TypeError):
        return str(native)


def _shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _format_number(value: Any) -> str:
    if isinstance(value, bool) or isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = f"{value:.4g}"
        # "2.0" says the value is exactly 2; a rounded 1210.3 stays "1210".
        return text + ".0" if text.lstrip("-").isdigit() and value.is_integer() else text
    if isinstance(value, complex):
        return f"{value.real:.3g}{value.imag:+.3g}j"
    return str(value)


def _format_constant(value: Any) -> str:
    """A Python number an op received: exactly, unless that takes many digits."""
    text = repr(value)
    return text if len(text) <= 10 else f"{value:.6g}"


def _format_nested(values: Any) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(_format_nested(v) for v in values) + "]"
    return _format_number(values)


def _values_text(array: Any, device: Any, limit: int) -> str:
    """The values of a raw array, at most ``limit`` of them (``…`` marks the rest)."""
    size = 1
    for n in array.shape:
        size *= n
    backend = device.backend
    if size <= limit:
        return _format_nested(backend.to_numpy(array).tolist())
    # Only the first values are copied to the host, however large the tensor.
    head = device.xp.reshape(array, (-1,))[:limit]
    values = backend.to_numpy(head).tolist()
    # A no-break space keeps "(100 values)" on one line when labels wrap.
    return "[" + ", ".join(map(_format_number, values)) + f", … ({size}\N{NO-BREAK SPACE}values)]"


def _is_default(op: Any, name: str, value: Any) -> bool:
    """Whether an op's param has its default value (those are not drawn)."""
    signature = op.signature
    parameter = signature.parameters.get(name) if signature is not None else None
    if parameter is None or parameter.default is inspect.Parameter.empty:
        return False
    default = parameter.default
    if value is default:
        return True
    if type(value) is not type(default) or not isinstance(value, (int, float, str, tuple)):
        return False
    return bool(value == default)


def _param_text(value: Any, device: Any) -> str:
    """A short text for one non-tensor argument of an op (``axis=1``, ``key=(0, :)``)."""
    text = _python_text(value, device)
    return text if len(text) <= _PARAM_WIDTH else text[: _PARAM_WIDTH - 1] + "…"


def _python_text(value: Any, device: Any) -> str:
    if value is Ellipsis:
        return "..."
    if isinstance(value, slice):
        parts = ["" if p is None else str(p) for p in (value.start, value.stop, value.step)]
        return ":".join(parts[:2] if value.step is None else parts)
    if isinstance(value, tuple):
        inner = ", ".join(_python_text(v, device) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, Tensor):
        return f"tensor{_shape_text(value.shape)}"
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"array{_shape_text(tuple(value.shape))}"
    if isinstance(value, (bool, int, float, complex)):
        return _format_number(value)
    try:
        return str(device._dtype_from_native[value].name)
    except (AttributeError, KeyError, TypeError):
        return repr(value)


def _html(details: list[tuple[str, str | None]]) -> str:
    """An HTML-like Graphviz label: lines without a colour bold, the others small."""
    lines = []
    for text, color in details:
        for line in textwrap.wrap(text, _LINE_WIDTH, break_on_hyphens=False) or [""]:
            line = html.escape(line, quote=False)
            if color is None:
                lines.append(f"<B>{line}</B>")
            else:
                lines.append(f'<FONT POINT-SIZE="10" COLOR="{color}">{line}</FONT>')
    return "<" + "<BR/>".join(lines) + ">"


def _format_of(path: Path) -> str:
    try:
        return FORMATS[path.suffix.lower()]
    except KeyError:
        raise ValueError(
            f"cannot tell the picture format from {str(path)!r}: give a path ending in "
            f"{', '.join(FORMATS)}"
        ) from None


def _import_graphviz() -> Any:
    try:
        import graphviz
    except ImportError as error:
        raise MissingDependencyError(_NO_PACKAGE) from error
    return graphviz
