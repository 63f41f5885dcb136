"""Compiled calls run eagerly in checking mode (tested on its own): these tests compile."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import plugrad


@pytest.fixture(autouse=True)
def checking_off() -> Iterator[None]:
    with plugrad.plugins.checking(False):
        yield
