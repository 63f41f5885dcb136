"""mypy sees plugrad's public API, generated functions included (skipped without mypy)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy is in the lint extra")

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "typecheck.py"

SNIPPET = """\
import plugrad

x = plugrad.tensor([1.0, 2.0], requires_grad=True)
y = plugrad.ones(2)
reveal_type(plugrad.multiply(x, y))
reveal_type(plugrad.sum(x * y, axis=0, keepdims=True))
reveal_type(plugrad.linalg.qr(plugrad.eye(2)).Q)
reveal_type(plugrad.linalg.matmul(x, y))
reveal_type(plugrad.fft.rfft(x))
reveal_type(plugrad.ops.relu(x))
reveal_type(plugrad.unique_counts(x).counts)
reveal_type(plugrad.meshgrid(x, y))
reveal_type(x + 1.0)
plugrad.multiply(x)
plugrad.exp(x, axis=0)
"""

REVEALED = [
    "plugrad.tensor.Tensor",
    "plugrad.tensor.Tensor",
    "plugrad.tensor.Tensor",
    "plugrad.tensor.Tensor",
    "plugrad.tensor.Tensor",
    "plugrad.tensor.Tensor",
    "plugrad.tensor.Tensor",
    "tuple[plugrad.tensor.Tensor, ...]",
    "plugrad.tensor.Tensor",
]


def test_public_api_types_as_written(script, tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(SNIPPET)
    output = script.run([str(snippet)], ["--strict"]).stdout
    revealed = re.findall(r'Revealed type is "(.*)"', output)
    assert revealed == REVEALED, output
    errors = re.findall(r"snippet\.py:(\d+): error: (.*)", output)
    assert [int(line) for line, _ in errors] == [14, 15], output
    assert 'Too few arguments for "multiply"' in errors[0][1]
    assert 'Unexpected keyword argument "axis" for "exp"' in errors[1][1]
