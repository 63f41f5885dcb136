"""Render the pictures of docs/visualising_graphs.rst into docs/_static/.

Each function below builds one example and returns its :class:`plugrad.viz.Graph`;
the documentation shows these functions' code next to their pictures. Run it
from the repository root after changing plugrad.viz or an example::

    pip install ".[viz]"          # and Graphviz's dot: apt-get install graphviz
    python tools/render_doc_graphs.py

``--format dot`` writes the DOT sources instead, which needs no Graphviz;
``--out DIR`` writes somewhere else.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import plugrad
from plugrad import cli

DOCS_STATIC = Path(__file__).resolve().parent.parent / "docs" / "_static"


def _classic_leaves() -> list[plugrad.Tensor]:
    """a, b, c, d of the classic example e = a*b + log(d)*c."""
    return [plugrad.tensor(value, requires_grad=True) for value in (2.0, 3.0, 4.0, 5.0)]


def classic() -> plugrad.viz.Graph:
    a, b, c, d = _classic_leaves()
    e = a * b + plugrad.log(d) * c
    return plugrad.viz.graph(e, names={"a": a, "b": b, "c": c, "d": d, "e": e})


def classic_values_and_grads() -> plugrad.viz.Graph:
    a, b, c, d = _classic_leaves()
    u = a * b
    t = plugrad.log(d)
    v = t * c
    e = u + v
    e.backward(retain_graph=True)  # keep what the picture reads from the graph
    names = {"a": a, "b": b, "c": c, "d": d, "u": u, "t": t, "v": v, "e": e}
    return plugrad.viz.graph(e, names=names, show_values=True, show_grads=True)


def classic_backward() -> plugrad.viz.Graph:
    a, b, c, d = _classic_leaves()
    e = a * b + plugrad.log(d) * c
    e.backward()
    names = {"a": a, "b": b, "c": c, "d": d, "e": e}
    return plugrad.viz.graph(e, names=names, backward=True, show_grads=True)


def constants() -> plugrad.viz.Graph:
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    scale = plugrad.tensor([0.5, 1.0, 2.0])  # needs no gradient
    y = 2 * x + 3
    z = (4 * y - 1) * scale
    return plugrad.viz.graph(z, names={"x": x, "scale": scale, "z": z}, show_values=True)


class Cube(plugrad.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x**2 * grad


def network() -> plugrad.viz.Graph:
    plugrad.manual_seed(0)
    x = plugrad.randn(8, 3)  # a batch of inputs: no gradient
    W1 = plugrad.randn(3, 4, requires_grad=True)
    b1 = plugrad.zeros(4, requires_grad=True)
    W2 = plugrad.randn(4, 1, requires_grad=True)
    hidden = plugrad.tanh(x @ W1 + b1)
    hidden.retain_grad()
    loss = plugrad.mean((hidden @ W2) ** 2)
    loss.backward(retain_graph=True)
    names = {"x": x, "W1": W1, "b1": b1, "W2": W2, "hidden": hidden, "loss": loss}
    return plugrad.viz.graph(loss, names=names, show_grads=True, max_elements=3, rankdir="TB")


def shared_outputs() -> plugrad.viz.Graph:
    m = plugrad.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
    values, vectors = plugrad.linalg.eigh(m)  # one op, two outputs
    cubed = Cube.apply(vectors)  # a custom Function
    spread = plugrad.max(values) - plugrad.min(values)
    energy = plugrad.sum(cubed * values)  # values feeds both outputs
    return plugrad.viz.graph(
        [spread, energy], names={"m": m, "values": values, "spread": spread, "energy": energy}
    )


EXAMPLES: dict[str, Callable[[], plugrad.viz.Graph]] = {
    "viz_classic": classic,
    "viz_classic_values_grads": classic_values_and_grads,
    "viz_classic_backward": classic_backward,
    "viz_constants": constants,
    "viz_network": network,
    "viz_shared_outputs": shared_outputs,
}

#: Pictures drawn by the ``plugrad graph`` command itself: name -> its arguments.
COMMANDS: dict[str, list[str]] = {
    "viz_cli_expression": [
        "sum(exp(x * w))",
        "--var",
        "x=1,2,3",
        "--var",
        "w=0.5,0.1,2",
        "--values",
        "--grads",
    ],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=("svg", "png", "dot"), default="svg")
    parser.add_argument("--out", type=Path, default=DOCS_STATIC, help="the folder to write to")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with plugrad.use_backend("numpy"):
        for name, example in EXAMPLES.items():
            print(f"wrote {example().render(args.out / f'{name}.{args.format}')}")
        for name, arguments in COMMANDS.items():
            path = args.out / f"{name}.{args.format}"
            if cli.main(["graph", *arguments, "--output", str(path)]) != 0:
                return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
