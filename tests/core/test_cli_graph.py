"""``plugrad graph``: the classic example, user expressions, options, and what it refuses."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import plugrad
from plugrad import cli

pytestmark = pytest.mark.usefixtures("on_numpy")
NODE_TITLE = re.compile(r"^  n\d+ \[label=<<B>([^<]*)</B>", re.MULTILINE)
EDGE = re.compile(r"^  (n\d+) -> (n\d+)", re.MULTILINE)


def graph(capsys, tmp_path: Path, *args: str, code: int = 0) -> tuple[str, str]:
    """Run ``plugrad graph ARGS`` in ``tmp_path``; return (stdout, stderr)."""
    assert cli.main(["graph", *args]) == code
    out, err = capsys.readouterr()
    return out, err


def test_classic_example_as_dot(capsys, tmp_path) -> None:
    path = tmp_path / "e.dot"
    out, _ = graph(capsys, tmp_path, "-o", str(path))
    assert out == f"wrote {path}\n"
    source = path.read_text()
    titles = NODE_TITLE.findall(source)
    assert sorted(titles) == sorted(
        ["a", "b", "c", "d", "e", "MulBackward", "MulBackward", "LogBackward", "AddBackward"]
    )
    assert len(EDGE.findall(source)) == 8
    assert "label=<<B>e = a*b + log(d)*c</B>>" in source


def test_classic_example_with_grads_and_values(capsys, tmp_path) -> None:
    path = tmp_path / "e.dot"
    graph(capsys, tmp_path, "--grads", "--values", "--var", "d=2", "-o", str(path))
    source = path.read_text()
    # de/da = b, de/db = a, de/dc = log(d), de/dd = c/d with a=2, b=3, c=4 and d=2 given.
    for name, value, grad in [("a", 2, 3), ("b", 3, 2), ("c", 4, math.log(2)), ("d", 2, 2)]:
        label = label_text(source, name)
        assert f"value {float(value)}" in label
        assert f"grad {grad:.4g}" in label
    assert "value 8.773" in source  # e = 6 + 4 log 2


def test_user_expression(capsys, tmp_path) -> None:
    path = tmp_path / "user.dot"
    out, err = graph(
        capsys,
        tmp_path,
        "sum(exp(x * w))",
        "--var",
        "x=1,2,3",
        "--var",
        "w=0.5,0.1,2",
        "--grads",
        "-o",
        str(path),
    )
    assert out == f"wrote {path}\n" and err == ""
    source = path.read_text()
    assert "label=<<B>sum(exp(x * w))</B>>, labelloc=t" in source  # the caption
    assert NODE_TITLE.findall(source) == [
        "x",
        "w",
        "MulBackward",
        "ExpBackward",
        "SumBackward",
        "output",
    ]
    x, w = [1.0, 2.0, 3.0], [0.5, 0.1, 2.0]
    x_grad = ", ".join(f"{wi * math.exp(xi * wi):.4g}" for xi, wi in zip(x, w))
    assert f"grad [{x_grad}]" in label_text(source, "x")


def label_text(source: str, title: str) -> str:
    """The label of the box titled ``title`` as plain text on one line."""
    label = re.search(rf"label=<<B>{re.escape(title)}</B>(.*?)>, shape", source)[1]
    return " ".join(re.sub(r"<[^>]+>", " ", label).split())


def test_matrix_variables_and_backward_mode(capsys, tmp_path) -> None:
    path = tmp_path / "mv.dot"
    graph(
        capsys,
        tmp_path,
        "m @ v",
        "--var",
        "m=1,2;3,4",
        "--var",
        "v=1,1",
        "--backward",
        "--values",
        "-o",
        str(path),
    )
    source = path.read_text()
    assert "(2, 2) float32" in source and "value [3.0, 7.0]" in source
    titles = dict(re.findall(r"^  (n\d+) \[label=<<B>([^<]*)</B>", source, re.MULTILINE))
    edges = {(titles[a], titles[b]) for a, b in EDGE.findall(source)}
    assert edges == {("output", "MatMulBackward"), ("MatMulBackward", "m"), ("MatMulBackward", "v")}
    assert "rankdir=RL" in source


def test_backend_option(capsys, tmp_path) -> None:
    if "array_api_strict" not in plugrad.backends.available():
        pytest.skip("needs the array_api_strict backend")
    path = tmp_path / "g.dot"
    graph(
        capsys,
        tmp_path,
        "x * 2",
        "--var",
        "x=1,2",
        "--backend",
        "array_api_strict",
        "-o",
        str(path),
    )
    assert "MulBackward" in path.read_text()
    _, err = graph(capsys, tmp_path, "x", "--var", "x=1", "--backend", "nope", code=2)
    assert "no backend named 'nope'" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["__import__('os').system('touch pwned')"], "is not allowed"),
        (["open('pwned', 'w')"], "open is not a plugrad function"),
        (["x.__class__"], "attributes cannot be read"),
        (["x * y", "--var", "x=1"], "y is not defined"),
        (["x", "--var", "x=1,a"], "the values must be numbers"),
        (["x", "--var", "1x=1"], "NAME a Python identifier"),
        (["x", "--var", "x"], "give NAME=VALUES"),
        (["x", "--var", "x=1", "--var", "x=2"], "--var x is given twice"),
        (["x", "--var", "x=1,2;3"], "every row of a matrix"),
        (["--var", "z=1"], "--var can set a, b, c and d, not z"),
        (["x * 2", "--var", "x=1,2", "--grads"], "must be one number, but it has shape"),
        (["2 + 3"], "the expression gives int, not a tensor"),
        (["x", "--var", "x=1", "-o", "graph.jpeg"], "cannot tell the picture format"),
    ],
)
def test_bad_input_is_refused_with_exit_code_2(
    capsys, tmp_path, monkeypatch, args, message
) -> None:
    monkeypatch.chdir(tmp_path)
    out, err = graph(capsys, tmp_path, *args, code=2)
    assert out == ""
    assert err.startswith("plugrad graph: error: ") and message in err
    assert list(tmp_path.iterdir()) == []  # nothing written, nothing run


def test_failures_of_the_computation_exit_with_1(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _, err = graph(capsys, tmp_path, "x @ w", "--var", "x=1,2", "--var", "w=1,2,3", code=1)
    assert err.startswith("plugrad graph: error: ShapeError: matmul()")


def test_missing_graphviz_is_explained(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "graphviz", None)
    _, err = graph(capsys, tmp_path, code=1)
    assert "pip install '.[viz]'" in err and "a path ending in .dot" in err
    assert not (tmp_path / "graph.svg").exists()


@pytest.mark.skipif(shutil.which("dot") is None, reason="the Graphviz program dot is not installed")
def test_default_output_is_graph_svg(capsys, tmp_path, monkeypatch) -> None:
    pytest.importorskip("graphviz")
    monkeypatch.chdir(tmp_path)
    out, _ = graph(capsys, tmp_path)
    assert out == "wrote graph.svg\n"
    svg = (tmp_path / "graph.svg").read_text()
    assert "<svg" in svg and "LogBackward" in svg
    out, _ = graph(capsys, tmp_path, "--grads", "-o", "e.png")
    assert (tmp_path / "e.png").read_bytes().startswith(b"\x89PNG")


def test_python_dash_m_end_to_end(tmp_path) -> None:
    command = [
        sys.executable,
        "-m",
        "plugrad",
        "graph",
        "sum(x ** 2)",
        "--var",
        "x=3,4",
        "-o",
        "g.dot",
    ]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "wrote g.dot\n"
    assert "PowBackward" in (tmp_path / "g.dot").read_text()
    refused = subprocess.run(
        [sys.executable, "-m", "plugrad", "graph", "__import__('os').system('touch pwned')"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode == 2 and "is not allowed" in refused.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.dot"]


def test_info_still_works(capsys) -> None:
    assert cli.main(["info"]) == 0
    assert capsys.readouterr().out.startswith(f"plugrad {plugrad.__version__} (Python ")
