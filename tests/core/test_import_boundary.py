"""core/ never imports an array library: every array operation goes through a backend."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import plugrad

ARRAY_LIBRARIES = {"numpy", "cupy", "torch", "jax", "array_api_compat", "array_api_strict"}
CORE = Path(plugrad.__file__).parent
# An installed wheel nests plugrad.backends and plugrad.plugins inside the package;
# they come from backends/ and plugins/, which may import array libraries.
NOT_CORE = {"backends", "plugins"}


def core_sources() -> list[Path]:
    """Every source file of core/ and its subpackages (nn, optim, ...)."""
    return sorted(
        path for path in CORE.rglob("*.py") if path.relative_to(CORE).parts[0] not in NOT_CORE
    )


def imported_modules(path: Path) -> set[str]:
    """Top-level names of every module imported by a source file, however it is imported."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None))
            in {"import_module", "__import__"}
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value.split(".")[0])
    return names


def test_core_sources_import_no_array_library() -> None:
    sources = core_sources()
    assert len(sources) > 10, f"expected the core package at {CORE}"
    assert CORE / "optim" / "optimizer.py" in sources, "subpackages of core/ are checked too"
    offenders = {
        str(path.relative_to(CORE)): sorted(imported_modules(path) & ARRAY_LIBRARIES)
        for path in sources
        if imported_modules(path) & ARRAY_LIBRARIES
    }
    assert not offenders, f"core/ imports array libraries: {offenders}"


def test_the_check_catches_every_import_form(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import numpy as np\nfrom cupy import ndarray\nimport importlib\n"
        "importlib.import_module('torch')\n__import__('jax.numpy')\n"
    )
    assert imported_modules(sample) & ARRAY_LIBRARIES == {"numpy", "cupy", "torch", "jax"}


def test_core_modules_import_without_numpy_installed() -> None:
    # Import every core module with numpy made unimportable; only plugin loading (in
    # plugrad/__init__) may need it, so the package itself is stubbed out here.
    code = f"""
import sys, types, importlib.util, pathlib
for name in {sorted(ARRAY_LIBRARIES)!r}:
    sys.modules[name] = None
package = types.ModuleType("plugrad")
package.__path__ = [{str(CORE)!r}]
sys.modules["plugrad"] = package
core = pathlib.Path({str(CORE)!r})
for path in map(pathlib.Path, {[str(p) for p in core_sources()]!r}):
    parts = path.relative_to(core).with_suffix("").parts
    if parts != ("__init__",):
        importlib.import_module(".".join(("plugrad", *parts)).removesuffix(".__init__"))
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
