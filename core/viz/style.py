"""How the pictures look: fonts, colours, box styles and text widths."""

from __future__ import annotations

FONT = "Helvetica"
DETAIL_COLOR = "#4a4a4a"
GRAD_COLOR = "#b03a2e"
GRAPH_ATTRS = (
    f'fontname="{FONT}", fontsize=13, nodesep=0.25, ranksep=0.45, pad=0.2, bgcolor="white"'
)
NODE_ATTRS = (
    f'fontname="{FONT}", fontsize=12, margin="0.14,0.06", height=0.4, penwidth=1.2, color="#6b6b6b"'
)
EDGE_ATTRS = f'fontname="{FONT}", fontsize=10, color="#4d4d4d", arrowsize=0.75, penwidth=1.2'
STYLES = {
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
CONSTANT_EDGE = 'style=dashed, color="#9a9a9a", arrowhead=empty'
GRADIENT_EDGE = f'color="{GRAD_COLOR}", fontcolor="{GRAD_COLOR}"'
#: Longest text of one non-tensor argument shown on an op (longer ones are cut).
PARAM_WIDTH = 24
#: Width at which value, gradient and argument lines wrap.
LINE_WIDTH = 34
