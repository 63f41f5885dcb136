"""How a tensor points into the autograd graph: its edge.

A tensor's ``_edge`` is ``None`` (no graph), a node (output 0 of a node with one
output, or a leaf's accumulation point) or ``(node, index)`` for output
``index`` of a node with several.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .graph import Node

__all__ = ["output_edge", "split_edge"]


def split_edge(edge: Any) -> tuple[Any, int]:
    """``(node or leaf tensor, output index)`` of an edge (not ``None``)."""
    return edge if type(edge) is tuple else (edge, 0)


def output_edge(node: Node, index: int) -> Any:
    """The edge to output ``index`` of ``node``: the node itself if it has only one."""
    return node if node.n_outputs == 1 else (node, index)
