"""Run mypy on the package ``plugrad`` from this source tree, and on other files using it.

pyproject maps three folders (``core/``, ``backends/``, ``plugins/``) into one
package, which an editable install serves through an import hook that mypy
cannot follow. This script lays the package out as a wheel would, with links
into the source tree, and runs mypy there with the settings of pyproject.toml::

    python tools/typecheck.py                # the package
    python tools/typecheck.py snippet.py ...  # files that use it (the package is read, not
                                              # checked: --follow-imports=silent)

Paths in mypy's messages are given back as paths of the source tree.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Package folder in the wheel -> folder of the source tree.
LAYOUT = {"plugrad": REPO / "core", "backends": REPO / "backends", "plugins": REPO / "plugins"}


def lay_out(root: Path) -> Path:
    """Link the source tree into ``root/plugrad`` as the installed package; return it."""
    package = root / "plugrad"
    package.mkdir()
    for child in LAYOUT["plugrad"].iterdir():
        if child.name != "__pycache__":
            (package / child.name).symlink_to(child)
    for name in ("backends", "plugins"):
        (package / name).symlink_to(LAYOUT[name])
    return package


def run(files: list[str], extra_args: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """mypy on ``files``, or on the package if none; its output with source-tree paths."""
    with tempfile.TemporaryDirectory() as tmp:
        package = lay_out(Path(tmp))
        command = [
            sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
            "--cache-dir", str(Path(tmp) / "cache"), *(extra_args or []),
            *(["--follow-imports=silent", *files] if files else ["-p", "plugrad"]),
        ]  # fmt: skip
        environment = {**os.environ, "MYPYPATH": tmp}
        result = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=tmp)
    output = result.stdout + result.stderr
    for name in ("backends", "plugins"):
        output = re.sub(rf"^plugrad/{name}/", f"{name}/", output, flags=re.M)
    output = re.sub(r"^plugrad/", "core/", output, flags=re.M).replace(f"{package}/", "core/")
    return subprocess.CompletedProcess(command, result.returncode, output, "")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    files = [str(Path(f).resolve()) for f in args if not f.startswith("-")]
    result = run(files, [a for a in args if a.startswith("-")])
    print(result.stdout, end="")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
