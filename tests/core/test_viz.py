"""plugrad.viz: the DOT source of graphs, rendering with Graphviz, and its absence."""

from __future__ import annotations

import html
import math
import re
import shutil
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

import plugrad
from plugrad import viz
from plugrad.errors import MissingDependencyError, MissingProgramError

NODE = re.compile(r"^  (n\d+) \[label=<(.*)>, (.*)\]$")
EDGE = re.compile(r"^  (n\d+) -> (n\d+)(?: \[(.*)\])?$")
LEAF_FILL = 'fillcolor="#d6e6fa"'
CONSTANT_STYLE = 'style="rounded,filled,dashed"'
OP_FILL = 'fillcolor="#e8e8e8"'
FUNCTION_FILL = 'fillcolor="#e6dcf4"'
OUTPUT_FILL = 'fillcolor="#d5ecc9"'


class Dot:
    """The boxes and arrows of DOT source written by to_dot, for assertions."""

    def __init__(self, source: str) -> None:
        assert source.startswith("digraph plugrad {\n") and source.endswith("}\n")
        self.source = source
        self.nodes: dict[str, tuple[str, str]] = {}
        self.edges: list[tuple[str, str, str]] = []
        for line in source.splitlines()[4:-1]:
            node = NODE.match(line)
            edge = EDGE.match(line)
            assert node or edge, f"unexpected line {line!r}"
            if node:
                self.nodes[node[1]] = (node[2], node[3])
            else:
                self.edges.append((edge[1], edge[2], edge[3] or ""))

    def text(self, node: str) -> str:
        """The label of a node as plain text, one line per label line."""
        label = self.nodes[node][0].replace("<BR/>", "\n")
        return html.unescape(re.sub(r"<[^>]+>", "", label))

    def titled(self, title: str) -> str:
        """The one node whose first label line is ``title``."""
        found = [n for n in self.nodes if self.text(n).split("\n")[0] == title]
        assert len(found) == 1, f"{len(found)} nodes titled {title!r}"
        return found[0]

    def titles(self) -> list[str]:
        return [self.text(n).split("\n")[0] for n in self.nodes]

    def arrows(self) -> set[tuple[str, str]]:
        """Arrows as (first line of source label, first line of target label)."""
        first = {n: self.text(n).split("\n")[0] for n in self.nodes}
        return {(first[a], first[b]) for a, b, _ in self.edges}


def classic() -> tuple[plugrad.Tensor, dict[str, plugrad.Tensor]]:
    a = plugrad.tensor(2.0, requires_grad=True)
    b = plugrad.tensor(3.0, requires_grad=True)
    c = plugrad.tensor(4.0, requires_grad=True)
    d = plugrad.tensor(5.0, requires_grad=True)
    e = a * b + plugrad.log(d) * c
    return e, {"a": a, "b": b, "c": c, "d": d, "e": e}


def test_classic_graph_structure(backend) -> None:
    e, names = classic()
    dot = Dot(viz.to_dot(e, names=names))
    assert len(dot.nodes) == 9 and len(dot.edges) == 8
    assert sorted(dot.titles()) == sorted(
        ["a", "b", "c", "d", "e", "MulBackward", "MulBackward", "LogBackward", "AddBackward"]
    )
    for leaf in "abcd":
        assert LEAF_FILL in dot.nodes[dot.titled(leaf)][1]
        assert dot.text(dot.titled(leaf)) == f"{leaf}\n() float32"
    assert OUTPUT_FILL in dot.nodes[dot.titled("e")][1]
    assert dot.titled("LogBackward") and OP_FILL in dot.nodes[dot.titled("AddBackward")][1]
    assert ("d", "LogBackward") in dot.arrows()
    assert ("LogBackward", "MulBackward") in dot.arrows()
    assert ("MulBackward", "AddBackward") in dot.arrows()
    assert ("AddBackward", "e") in dot.arrows()
    # a and b feed the same multiplication, c feeds the other one.
    mul_of = {dot.titles()[int(src[1:])]: dst for src, dst, _ in dot.edges}
    assert mul_of["a"] == mul_of["b"] != mul_of["c"]
    assert "rankdir=LR" in dot.source


def test_ops_are_named_like_their_grad_fn() -> None:
    x = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = plugrad.sum(plugrad.tanh(x @ x.T) / 3.0 - x, axis=1)
    expected = []
    stack = [y.grad_fn]
    while stack:
        node = stack.pop()
        expected.append(type(node).__name__)
        stack.extend(e[0] for e in node._next_edges if e and isinstance(e[0], plugrad.Node))
    dot = Dot(viz.to_dot(y))
    ops = [t for t in dot.titles() if t.endswith("Backward")]
    assert sorted(set(ops)) == sorted(set(expected))
    assert len(ops) == len(set(map(id, _nodes(y))))


def _nodes(tensor: plugrad.Tensor) -> list[plugrad.Node]:
    seen, stack, nodes = set(), [tensor.grad_fn], []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(e[0] for e in node._next_edges if e and isinstance(e[0], plugrad.Node))
    return nodes


def test_shapes_and_dtypes_on_every_box() -> None:
    x = plugrad.asarray(np.ones((2, 3)), requires_grad=True)  # float64
    w = plugrad.ones((3, 4), dtype=plugrad.float64, requires_grad=True)
    y = plugrad.sum(x @ w, axis=0)
    dot = Dot(viz.to_dot(y, names={"x": x, "w": w}))
    assert dot.text(dot.titled("x")) == "x\n(2, 3) float64"
    assert dot.text(dot.titled("w")) == "w\n(3, 4) float64"
    assert dot.text(dot.titled("MatMulBackward")) == "MatMulBackward\n(2, 4) float64"
    # Non-default arguments of an op are shown, defaults are not.
    assert dot.text(dot.titled("SumBackward")) == "SumBackward\n(4,) float64\naxis=0"
    assert dot.text(dot.titled("output")) == "output\n(4,) float64"


def test_an_op_given_a_dtype_is_drawn_with_its_name() -> None:
    # NumPy's dtype given as its scalar class (numpy.float64) has a shape and a dtype (class
    # descriptors): it was drawn as an array, and to_dot failed with "'getset_descriptor'
    # object is not iterable" for astype, a promotion or sum(dtype=).
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    for y, title in (
        (plugrad.astype(x, plugrad.float64), "AstypeBackward"),
        (x * plugrad.ones(2, dtype=plugrad.float64), "AstypeBackward"),
        (plugrad.sum(x, dtype=plugrad.float64), "SumBackward"),
    ):
        dot = Dot(viz.to_dot(y))
        assert dot.text(dot.titled(title)).endswith("float64\ndtype=float64")


def test_values_small_and_truncated() -> None:
    x = plugrad.tensor([1.0, 2.5, -3.0], requires_grad=True)
    big = plugrad.arange(100, dtype=plugrad.float32)
    y = plugrad.sum(x * 2) * big  # multiply keeps big: the picture knows its values
    plain = Dot(viz.to_dot(y, names={"x": x, "big": big}))
    assert "value" not in plain.source
    dot = Dot(viz.to_dot(y, names={"x": x, "big": big}, show_values=True, max_elements=4))
    assert "value [1.0, 2.5, -3.0]" in dot.text(dot.titled("x"))
    truncated = "value [0.0, 1.0, 2.0, 3.0, … (100\N{NO-BREAK SPACE}values)]"
    assert truncated in flat(dot, "big") and truncated in flat(dot, "output")
    matrix = plugrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    dot = Dot(viz.to_dot(matrix, names={"m": matrix}, show_values=True))
    assert "value [[1.0, 2.0], [3.0, 4.0]]" in flat(dot, "m")


def flat(dot: Dot, title: str) -> str:
    """The label of the node titled ``title`` on one line (labels wrap long lines)."""
    return dot.text(dot.titled(title)).replace("\n", " ")


def test_grads_after_backward() -> None:
    e, names = classic()
    before = Dot(viz.to_dot(e, names=names, show_grads=True))
    assert before.text(before.titled("a")).endswith("grad None")
    e.backward(retain_graph=True)
    dot = Dot(viz.to_dot(e, names=names, show_grads=True))
    a, b, c, d = (names[k].item() for k in "abcd")
    for name, expected in {"a": b, "b": a, "c": math.log(d), "d": c / d}.items():
        shown = dot.text(dot.titled(name)).split("\n")[-1]
        assert shown.startswith("grad ")
        assert float(shown[5:]) == pytest.approx(expected, rel=1e-3)
        assert 'COLOR="#b03a2e"' in dot.nodes[dot.titled(name)][0]
    assert "grad" not in dot.text(dot.titled("e"))  # e did not retain its gradient


def test_retained_and_named_intermediates_get_boxes() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    u = x * 3
    u.retain_grad()
    h = plugrad.exp(x)
    y = plugrad.sum(u * h)
    y.backward(retain_graph=True)
    dot = Dot(viz.to_dot(y, names={"x": x, "h": h}, show_grads=True))
    h_box = dot.titled("h")
    assert dot.text(h_box) == "h\n(2,) float32"  # named, not retained: no gradient line
    retained = [n for n in dot.nodes if dot.text(n).startswith("(2,) float32\ngrad ")]
    assert len(retained) == 1
    grad = (h.detach()).tolist()
    assert dot.text(retained[0]).endswith(f"grad [{grad[0]:.4g}, {grad[1]:.4g}]")
    ids = {dot.text(n).split("\n")[0]: n for n in dot.nodes}
    assert (ids["ExpBackward"], h_box, "") in dot.edges
    assert (h_box, ids["MulBackward"], "") in [(a, b, c) for a, b, c in dot.edges]
    assert len(dot.nodes) == 9 and len(dot.edges) == 9  # with the number 3


def test_backward_mode_reverses_every_edge() -> None:
    e, names = classic()
    forward = Dot(viz.to_dot(e, names=names))
    backward = Dot(viz.to_dot(e, names=names, backward=True))
    assert forward.nodes.keys() == backward.nodes.keys()
    assert {(b, a) for a, b, _ in forward.edges} == {(a, b) for a, b, _ in backward.edges}
    assert all('color="#b03a2e"' in attrs for _, _, attrs in backward.edges)
    assert "rankdir=RL" in backward.source
    assert "rankdir=TB" in viz.to_dot(e, backward=True, rankdir="TB")


def test_constants_are_dashed_and_left_out_of_the_gradient_flow() -> None:
    x = plugrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    k = plugrad.tensor([1.0, 1.0, 1.0])
    offset = plugrad.tensor([0.5, 0.5, 0.5])
    z = (4 * (2 * x + 3) - 1) * k + offset  # add keeps no input, multiply keeps both
    dot = Dot(viz.to_dot(z, names={"x": x, "k": k}))
    numbers = [n for n in dot.nodes if "shape=ellipse" in dot.nodes[n][1]]
    assert sorted(dot.text(n) for n in numbers) == ["1", "2", "3", "4"]
    assert CONSTANT_STYLE in dot.nodes[dot.titled("k")][1]
    unnamed = dot.titled("constant")  # offset: the op kept only its shape and dtype
    assert dot.text(unnamed) == "constant\n(3,) float32"
    constant_ids = {*numbers, dot.titled("k"), unnamed}
    for source, _, attrs in dot.edges:
        assert ("style=dashed" in attrs) == (source in constant_ids)
    assert len(dot.nodes) == 14 and len(dot.edges) == 13
    flow = Dot(viz.to_dot(z, names={"x": x, "k": k}, backward=True))
    assert "constant" not in flow.source and "k" not in flow.titles()
    assert len(flow.nodes) == 8 and len(flow.edges) == 7


def test_inputs_without_a_gradient_rule_are_constants() -> None:
    x = plugrad.tensor([-1.0, 2.0], requires_grad=True)
    y = plugrad.where(x > 0, x, 0.0)  # the condition takes no gradient
    dot = Dot(viz.to_dot(y, names={"x": x}))
    condition = dot.titled("constant")
    assert dot.text(condition) == "constant\n(2,) bool"
    where = dot.titled("WhereBackward")
    edges = {(a, b): attrs for a, b, attrs in dot.edges}
    assert "style=dashed" in edges[(condition, where)]
    assert edges[(dot.titled("x"), where)] == ""
    assert [dot.text(n) for n in dot.nodes if "shape=ellipse" in dot.nodes[n][1]] == ["0.0"]


def test_several_outputs_share_their_common_subgraph() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    shared = plugrad.exp(x)
    first = plugrad.sum(shared)
    second = plugrad.mean(shared * shared)  # a diamond: shared is used twice
    dot = Dot(viz.to_dot([first, second, first], names={"x": x}))
    assert dot.titles().count("ExpBackward") == 1
    assert {"output 0", "output 1"} <= set(dot.titles())
    exp_box = dot.titled("ExpBackward")
    assert sum(1 for a, _, _ in dot.edges if a == exp_box) == 3


def test_multiple_output_ops_label_their_outputs(on_numpy) -> None:
    m = plugrad.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
    values, vectors = plugrad.linalg.eigh(m)
    y = plugrad.sum(values) + plugrad.sum(vectors**2)
    dot = Dot(viz.to_dot(y))
    eigh = dot.titled("EighBackward")
    assert dot.text(eigh) == "EighBackward\n[0] (2,) float32\n[1] (2, 2) float32"
    labels = sorted(attrs for a, _, attrs in dot.edges if a == eigh)
    assert labels == ['label="[0]"', 'label="[1]"']


def test_custom_function() -> None:
    class Cube(plugrad.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.save_for_backward(x)
            ctx.scale = scale
            return x**3 * scale

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * x * x * grad * ctx.scale, None

    class Weighted(plugrad.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(w)
            return x * w

        @staticmethod
        def backward(ctx, grad):
            (w,) = ctx.saved_tensors
            return grad * w, None

    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x, 2.0) * 1.5
    dot = Dot(viz.to_dot(y, names={"x": x}))
    cube = dot.titled("CubeBackward")
    assert FUNCTION_FILL in dot.nodes[cube][1]
    assert dot.text(cube) == "CubeBackward\n(2,) float32"
    assert (dot.titled("x"), cube, "") in dot.edges
    # A tensor argument that needs no gradient is drawn as a constant.
    z = Weighted.apply(Cube.apply(x, 1.0), plugrad.tensor([[1.0, 2.0]]))
    dot = Dot(viz.to_dot(z))
    assert dot.text(dot.titled("WeightedBackward")) == "WeightedBackward\n(1, 2) float32"
    constant = dot.titled("constant")
    assert dot.text(constant) == "constant\n(1, 2) float32"
    assert (constant, dot.titled("WeightedBackward")) == dot.edges[-2][:2]


def test_tensors_without_a_graph() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    dot = Dot(viz.to_dot(x, names={"x": x}))
    assert len(dot.nodes) == 1 and not dot.edges
    assert LEAF_FILL in dot.nodes[dot.titled("x")][1]
    dot = Dot(viz.to_dot(plugrad.ones(3)))
    assert dot.text(dot.titled("constant")) == "constant\n(3,) float32"
    with plugrad.no_grad():
        dot = Dot(viz.to_dot(x * 2))
    assert dot.titles() == ["constant"]


def test_names_pairs_aliases_and_escaping() -> None:
    a = plugrad.tensor(1.0, requires_grad=True)
    b = plugrad.tensor(2.0, requires_grad=True)
    pairs = iter([("w<1> & co", a), ("alias", a), ("b", b)])
    dot = Dot(viz.to_dot(a * b, names=pairs))
    assert dot.text(dot.titled("w<1> & co, alias")) == "w<1> & co, alias\n() float32"
    assert "w&lt;1&gt; &amp; co" in dot.source
    unused = plugrad.tensor(0.0)
    assert Dot(viz.to_dot(a * b, names={"b": b, "unused": unused})).titled("b")


def test_deterministic_and_the_graph_is_unchanged() -> None:
    e, names = classic()
    assert viz.to_dot(e, names=names) == viz.to_dot(e, names=names)
    e.backward()
    assert names["a"].grad.item() == 3.0
    # After backward without retain_graph the saved values are gone; drawing still works.
    dot = Dot(viz.to_dot(e, names=names, show_grads=True))
    assert len(dot.nodes) == 9
    assert dot.text(dot.titled("LogBackward")) == "LogBackward"


def test_devices_are_named_when_the_graph_spans_several() -> None:
    if "array_api_strict" not in plugrad.backends.available():
        pytest.skip("needs the array_api_strict backend")
    with plugrad.use_backend("numpy"):
        x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = plugrad.sum(x.to("array_api_strict") * 2)
    dot = Dot(viz.to_dot(y, names={"x": x}))
    assert dot.text(dot.titled("x")) == "x\n(2,) float32 · numpy"
    assert "ToDeviceBackward\n(2,) float32 · array_api_strict" in dot.text(
        dot.titled("ToDeviceBackward")
    )
    assert "·" not in viz.to_dot(x * 2)


def test_deep_graphs_are_walked_without_recursion() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    h = x
    for _ in range(5000):
        h = plugrad.sin(h) * 1.5
    limit = sys.getrecursionlimit()
    depth = len(_frames())
    sys.setrecursionlimit(depth + 120)
    try:
        start = time.perf_counter()
        picture = viz.graph(h, names={"x": x}, show_values=True)
        elapsed = time.perf_counter() - start
    finally:
        sys.setrecursionlimit(limit)
    dot = Dot(picture.source)
    # x, 10,000 ops, 5,000 numbers and the output; every op has one arrow in, plus the numbers.
    assert picture.node_count == len(dot.nodes) == 1 + 10_000 + 5_000 + 1
    assert picture.edge_count == len(dot.edges) == 10_000 + 5_000 + 1
    assert elapsed < 10, f"drawing 15,000 boxes took {elapsed:.1f} s"


def _frames() -> list[types.FrameType]:
    frame, frames = sys._getframe(), []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda x: viz.to_dot("x"), TypeError, "must be a Tensor or a sequence"),
        (lambda x: viz.to_dot({"x": x}), TypeError, "name them with names="),
        (lambda x: viz.to_dot([x, 2]), TypeError, r"outputs\[1\] is a int"),
        (lambda x: viz.to_dot([]), ValueError, "outputs is empty"),
        (lambda x: viz.to_dot(x, names={x: "x"}), TypeError, "not tensors to names"),
        (lambda x: viz.to_dot(x, names={"x": 1.0}), TypeError, "'x' is given a float"),
        (lambda x: viz.to_dot(x, names=[x]), TypeError, r"\(name, tensor\) pairs"),
        (lambda x: viz.to_dot(x, names="x"), TypeError, "names must map names"),
        (lambda x: viz.to_dot(x, rankdir="up"), ValueError, "LR, RL, TB, BT"),
        (lambda x: viz.to_dot(x, max_elements=0), ValueError, "positive int"),
        (lambda x: viz.to_dot(x, show_values=1), TypeError, "show_values must be True or False"),
        (lambda x: viz.to_dot(x, title=3), TypeError, "title must be a str"),
        (lambda x: viz.render(x, "graph.jpeg"), ValueError, r"\.svg, \.png, \.pdf, \.dot"),
    ],
)
def test_bad_arguments(call, error, message) -> None:
    x = plugrad.tensor([1.0], requires_grad=True)
    with pytest.raises(error, match=message):
        call(x)
    assert x.grad is None and x.requires_grad


def test_dot_files_need_no_graphviz(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)
    e, names = classic()
    path = viz.render(e, tmp_path / "e.dot", names=names)
    assert path == tmp_path / "e.dot"
    assert path.read_text(encoding="utf-8") == viz.to_dot(e, names=names)
    assert viz.graph(e).render(str(tmp_path / "e.gv")).read_text().startswith("digraph")


def test_missing_graphviz_package(tmp_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz now fails
    e, _ = classic()
    with pytest.raises(MissingDependencyError) as caught:
        viz.render(e, tmp_path / "e.svg")
    message = str(caught.value)
    assert "pip install '.[viz]'" in message and "apt-get install graphviz" in message
    assert isinstance(caught.value, ImportError)
    assert not (tmp_path / "e.svg").exists()
    with pytest.raises(MissingDependencyError):
        viz.graph(e)._repr_svg_()


def test_missing_dot_program_reported_by_the_package(tmp_path, monkeypatch) -> None:
    class ExecutableNotFound(RuntimeError):
        pass

    class Source:
        def __init__(self, source):
            self.source = source

        def pipe(self, format):
            raise ExecutableNotFound("failed to execute PosixPath('dot')")

    fake = types.SimpleNamespace(Source=Source, ExecutableNotFound=ExecutableNotFound)
    monkeypatch.setitem(sys.modules, "graphviz", fake)
    e, _ = classic()
    with pytest.raises(MissingProgramError) as caught:
        viz.render(e, tmp_path / "e.png")
    message = str(caught.value)
    for fix in ("apt-get install graphviz", "brew install graphviz", "conda install"):
        assert fix in message
    assert isinstance(caught.value.__cause__, ExecutableNotFound)
    assert not (tmp_path / "e.png").exists()


needs_graphviz = pytest.mark.skipif(
    shutil.which("dot") is None, reason="the Graphviz program dot is not installed"
)


@needs_graphviz
def test_missing_dot_program_on_path(tmp_path, monkeypatch) -> None:
    pytest.importorskip("graphviz")
    monkeypatch.setenv("PATH", str(tmp_path))
    e, _ = classic()
    with pytest.raises(MissingProgramError, match=r"dot.*not found on PATH"):
        viz.render(e, tmp_path / "e.svg")


@needs_graphviz
@pytest.mark.parametrize(
    ("suffix", "magic"), [(".svg", b"<?xml"), (".png", b"\x89PNG"), (".pdf", b"%PDF")]
)
def test_render(tmp_path, suffix, magic) -> None:
    pytest.importorskip("graphviz")
    e, names = classic()
    e.backward(retain_graph=True)
    path = viz.render(e, tmp_path / f"e{suffix}", names=names, show_grads=True, show_values=True)
    assert path == tmp_path / f"e{suffix}" and isinstance(path, Path)
    data = path.read_bytes()
    assert data.startswith(magic)
    if suffix == ".svg":
        text = data.decode()
        for label in ("MulBackward", "LogBackward", "AddBackward", "grad 0.8"):
            assert label in text
        assert text.count('class="node"') == 9 and text.count('class="edge"') == 8


@needs_graphviz
def test_notebook_display() -> None:
    pytest.importorskip("graphviz")
    e, names = classic()
    svg = viz.graph(e, names=names, backward=True)._repr_svg_()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "AddBackward" in svg
