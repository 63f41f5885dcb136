"""Check that plugrad's modules import only their own layer and the layers below.

The layers are the import-linter contract in pyproject.toml (drawn in
docs/architecture.rst). pyproject maps three folders into the one package
``plugrad``, which import-linter can only read laid out as a wheel would be,
so this script lays it out (as ``tools/typecheck.py`` does for mypy) and runs
``lint-imports`` there::

    python tools/check_layers.py

Exits with lint-imports' status: 0 when every contract is kept.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from typecheck import lay_out  # noqa: E402


def run(change: Callable[[Path], None] | None = None) -> subprocess.CompletedProcess[str]:
    """lint-imports on the laid-out package; its output and status.

    ``change``, given the laid-out package folder, alters it first (for tests).
    """
    with tempfile.TemporaryDirectory() as tmp:
        package = lay_out(Path(tmp))
        if change is not None:
            change(package)
        environment = {**os.environ, "PYTHONPATH": tmp}
        command = [
            sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
            "sys.exit(lint_imports_command())", str(REPO / "pyproject.toml"), "--no-cache",
        ]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, env=environment, cwd=tmp)


def main() -> int:
    result = run()
    print(result.stdout + result.stderr, end="")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
