"""Turns DOT source into SVG, PNG or PDF files and notebook pictures, with Graphviz."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError, MissingDependencyError, MissingProgramError
from ..tensor import Tensor
from .dot import DrawingOptions, draw, with_drawing_options

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["FORMATS", "Graph", "graph", "render"]

FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": "dot", ".gv": "dot"}

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
        file_format = format_of(path)
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
        graphviz = import_graphviz()
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


@with_drawing_options
def graph(outputs: Tensor | Sequence[Tensor], **options: Unpack[DrawingOptions]) -> Graph:
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
    drawing = draw(outputs, **options)
    return Graph(drawing.source, drawing.node_count, drawing.edge_count)


@with_drawing_options
def render(
    outputs: Tensor | Sequence[Tensor],
    path: str | os.PathLike[str],
    **options: Unpack[DrawingOptions],
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
    format_of(Path(path))  # a bad suffix fails before any work
    drawing = draw(outputs, **options)
    return Graph(drawing.source, drawing.node_count, drawing.edge_count).render(path)


def format_of(path: Path) -> str:
    try:
        return FORMATS[path.suffix.lower()]
    except KeyError:
        raise InvalidArgumentError(
            f"cannot tell the picture format from {str(path)!r}: give a path ending in "
            f"{', '.join(FORMATS)}"
        ) from None


def import_graphviz() -> Any:
    try:
        import graphviz
    except ImportError as error:
        raise MissingDependencyError(_NO_PACKAGE) from error
    return graphviz
