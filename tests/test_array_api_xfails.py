"""The conformance suite's xfails file: every entry has its own one-line reason."""

from __future__ import annotations

from pathlib import Path

XFAILS = Path(__file__).resolve().parents[1] / "tools" / "array_api_xfails.txt"


def test_every_xfail_entry_has_a_reason_line_above_it() -> None:
    lines = XFAILS.read_text().splitlines()
    entries = [i for i, line in enumerate(lines) if line.startswith("array_api_tests/")]
    assert entries, "no entries"
    for i in entries:
        above = lines[i - 1]
        assert above.startswith("# ") and len(above) > 10, f"line {i + 1}: no reason above it"
    others = [line for line in lines if line and not line.startswith(("#", "array_api_tests/"))]
    assert not others, f"lines that are neither entries nor comments: {others}"
    assert len(set(lines[i] for i in entries)) == len(entries), "duplicate entries"
