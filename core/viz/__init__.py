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

from .dot import to_dot
from .rendering import FORMATS, Graph, graph, render

__all__ = ["FORMATS", "Graph", "graph", "render", "to_dot"]
