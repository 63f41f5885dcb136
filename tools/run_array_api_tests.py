"""Run the Array API conformance suite (data-apis/array-api-tests) against plugrad.

The suite is not part of this repository and nothing is downloaded: pass the
path of a checkout (with its ``array-api`` submodule), pinned at the commits
recorded in docs/array_api.rst::

    git clone https://github.com/data-apis/array-api-tests
    git -C array-api-tests checkout 55fcc60 && git -C array-api-tests submodule update --init
    pip install pytest-json-report ndindex hypothesis
    python tools/run_array_api_tests.py ../array-api-tests

``--module array_api_compat.numpy --xfails FILE`` runs the same command against
another namespace, for comparison. The summary line counts outcomes from the
suite's JSON report.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PINNED_SUITE = "55fcc60"
PINNED_SPEC = "5f847a38"
DEFAULT_XFAILS = HERE / "array_api_xfails.txt"


def _commit(path: Path) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("suite", type=Path, help="path of an array-api-tests checkout")
    parser.add_argument("--module", default="plugrad", help="ARRAY_API_TESTS_MODULE (plugrad)")
    parser.add_argument(
        "--xfails", type=Path, default=None, help=f"xfails file (plugrad: {DEFAULT_XFAILS.name})"
    )
    parser.add_argument("--skips", type=Path, default=None, help="skips file (none by default)")
    parser.add_argument("--max-examples", type=int, default=100)
    parser.add_argument("pytest_args", nargs="*", help="further pytest arguments (after --)")
    # Intermixed: options may follow the checkout path and still precede "-- pytest args".
    args = parser.parse_intermixed_args(argv)

    suite = args.suite.resolve()
    if not (suite / "array_api_tests").is_dir():
        parser.error(f"{suite} is not an array-api-tests checkout (no array_api_tests/ in it)")
    for path, pinned, what in (
        (suite, PINNED_SUITE, "array-api-tests"),
        (suite / "array-api", PINNED_SPEC, "its array-api submodule"),
    ):
        commit = _commit(path)
        if not commit.startswith(pinned):
            print(f"warning: {what} is at {commit}, not the pinned {pinned}", file=sys.stderr)

    xfails = (
        args.xfails
        if args.xfails is not None
        else (DEFAULT_XFAILS if args.module == "plugrad" else None)
    )
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [
            sys.executable, "-m", "pytest", "array_api_tests", "-q", "-p", "no:cacheprovider",
            f"--max-examples={args.max_examples}", "--hypothesis-disable-deadline",
            "--json-report", f"--json-report-file={report}", "-W", "ignore::DeprecationWarning",
        ]  # fmt: skip
        if xfails is not None:
            command.append(f"--xfails-file={Path(xfails).resolve()}")
        if args.skips is not None:
            command.append(f"--skips-file={args.skips.resolve()}")
        command += args.pytest_args
        env = {**os.environ, "ARRAY_API_TESTS_MODULE": args.module}
        print("$", f"ARRAY_API_TESTS_MODULE={args.module}", " ".join(command[1:]), flush=True)
        returncode = subprocess.run(command, cwd=suite, env=env).returncode
        if not report.exists():
            return returncode or 1
        tests = json.loads(report.read_text())["tests"]
    counts = collections.Counter(test["outcome"] for test in tests)
    summary = ", ".join(f"{counts[k]} {k}" for k in sorted(counts))
    print(f"{args.module}: {summary} (array-api-tests {_commit(suite)[:7]})")
    return returncode


if __name__ == "__main__":
    sys.exit(main())
