"""Every package of the source tree is in pyproject.toml's list, so that a wheel (and a
non-editable install) ships it: an unlisted one imports from a checkout and not installed."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_is_listed_for_the_wheel() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    homes = {name: ROOT / path for name, path in config["package-dir"].items()}
    found = set()
    for name, home in homes.items():
        for init in home.rglob("__init__.py"):
            parts = init.parent.relative_to(home).parts
            if "__pycache__" not in parts:
                found.add(".".join((name, *parts)))
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
