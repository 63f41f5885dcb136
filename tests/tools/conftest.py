"""The scripts of tools/, imported for their tests."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest


@pytest.fixture(scope="module")
def script(request: pytest.FixtureRequest) -> ModuleType:
    """The script at the path the test module names ``SCRIPT``, imported as a module."""
    path = request.module.SCRIPT
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None, f"cannot import {path}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
