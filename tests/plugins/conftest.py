"""Known gaps of the op library on backends other than numpy, as strict xfails."""

from __future__ import annotations

from pathlib import Path

import pytest

_GAPS = Path(__file__).with_name("backend_gaps.txt")


def _known_gaps() -> dict[str, str]:
    gaps = {}
    for line in _GAPS.read_text().splitlines():
        if line and not line.startswith("#"):
            test, _, reason = line.partition("\t")
            gaps[test] = reason
    return gaps


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    gaps = _known_gaps()
    for item in items:
        reason = gaps.get(f"{item.path.name}::{item.name}")
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
