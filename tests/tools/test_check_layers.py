"""plugrad's import layers hold, and the check finds an import that breaks them."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="import-linter is in the lint extra")

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "check_layers.py"


def test_every_module_imports_only_its_layer_and_those_below(script) -> None:
    result = script.run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_an_import_of_a_higher_layer_is_reported(script) -> None:
    def import_registry_from_node(package: Path) -> None:
        node = package / "node.py"
        text = node.read_text()
        node.unlink()  # a link into the source tree: replace it, leave the tree alone
        node.write_text(text + "\nfrom . import registry  # noqa\n")

    result = script.run(import_registry_from_node)
    assert result.returncode != 0
    assert "plugrad.node -> plugrad.registry" in result.stdout
