"""tools/render_doc_graphs.py: every picture of the docs can be drawn (as DOT, no Graphviz)."""

from __future__ import annotations

from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "render_doc_graphs.py"
DOCS = SCRIPT.parents[1] / "docs"


def test_every_picture_is_drawn_and_committed(script, tmp_path, capsys) -> None:
    assert script.main(["--format", "dot", "--out", str(tmp_path)]) == 0
    names = [*script.EXAMPLES, *script.COMMANDS]
    written = sorted(p.stem for p in tmp_path.iterdir())
    assert written == sorted(names)
    for path in tmp_path.iterdir():
        assert path.read_text(encoding="utf-8").startswith("digraph plugrad {")
    page = (DOCS / "visualising_graphs.rst").read_text(encoding="utf-8")
    for name in names:
        assert (DOCS / "_static" / f"{name}.svg").is_file(), f"{name}.svg is not committed"
        assert f"_static/{name}.svg" in page, f"{name}.svg is not shown in the docs"
    assert capsys.readouterr().out.count("wrote ") == len(names)
