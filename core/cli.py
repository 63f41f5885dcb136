"""The ``plugrad`` command (also ``python -m plugrad``).

``plugrad info`` prints what this installation has loaded: the version, the
backends (available or why not, and their devices), the plugins (distribution,
version, what each contributes), the plugins that failed and why, and with
``--ops`` which kernel serves each op on each available backend. ``--json``
prints the same as one JSON object for tools.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

from . import checking as _checking
from . import inventory as _inventory
from . import registry as _registry

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return its exit code."""
    parser = argparse.ArgumentParser(
        prog="plugrad",
        description="plugrad: PyTorch-style eager autograd on any Array API backend.",
    )
    parser.add_argument("--version", action="version", version=f"plugrad {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    info = commands.add_parser(
        "info",
        help="show the version, backends, plugins and failed plugins",
        description="Show what plugrad has loaded: version, backends, plugins, failed plugins.",
    )
    info.add_argument(
        "--ops", action="store_true", help="also show which kernel serves each op on each backend"
    )
    info.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = parser.parse_args(argv)
    report = info_report(ops=args.ops)
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def _version() -> str:
    return str(getattr(sys.modules.get("plugrad"), "__version__", "unknown"))


def info_report(ops: bool = False) -> dict[str, Any]:
    """What ``plugrad info --json`` prints, as a dict of JSON-ready values."""
    backends = _inventory.list_backends()
    package = sys.modules.get("plugrad")
    report: dict[str, Any] = {
        "version": _version(),
        "location": os.path.dirname(getattr(package, "__file__", None) or "") or None,
        "python": platform.python_version(),
        "checks": _checking.checks_enabled(),
        "backends": [
            {
                "name": b.name,
                "plugin": b.plugin,
                "available": b.available,
                "reason": b.reason,
                "devices": list(b.devices),
                "default": b.default,
            }
            for b in backends
        ],
        "plugins": [],
        "failed": [],
    }
    for plugin in _inventory.list_plugins():
        entry: dict[str, Any] = {
            "name": plugin.name,
            "distribution": plugin.distribution,
            "version": plugin.version,
        }
        if plugin.failure is not None:
            report["failed"].append({**entry, "reason": plugin.failure})
            continue
        report["plugins"].append(
            {
                **entry,
                "builtin": plugin.builtin,
                "backends": list(plugin.backends),
                "ops": list(plugin.ops),
                "kernels": [
                    {"op": k.op, "backend": k.backend, "function": k.function_name, "mark": k.mark}
                    for k in plugin.kernels
                ],
                "methods": list(plugin.methods),
            }
        )
    if ops:
        report["ops"] = {
            name: {b.name: _kernel_entry(name, b) for b in backends}
            for name in _registry.op_names()
        }
    return report


def _kernel_entry(op: str, backend: _inventory.BackendInfo) -> dict[str, Any]:
    if not backend.available:
        return {"kind": None, "unavailable": backend.reason}
    sources = _inventory.kernel_sources(op, backend.name)
    best = sources[0]
    return {
        "kind": best.kind,
        "plugin": best.plugin,
        "distribution": best.distribution,
        "version": best.version,
        "function": best.function_name,
        "shadows": [f"{s.kind}: {s.function_name} ({s.plugin})" for s in sources[1:]],
    }


def _kernel_cell(entry: dict[str, Any]) -> str:
    if entry["kind"] is None:
        return "(backend unavailable)"
    if entry["kind"] == "generic":
        return "generic"
    return f"{entry['kind']}: {entry['function']} ({entry['plugin']})"


def format_report(report: dict[str, Any]) -> str:
    """Render :func:`info_report`'s dict as the text ``plugrad info`` prints."""
    lines = [f"plugrad {report['version']} (Python {report['python']}) at {report['location']}"]
    lines.append(
        "checking mode: "
        + ("on" if report["checks"] else "off (PLUGRAD_CHECK_PLUGINS=1 turns it on)")
    )
    lines += ["", "Backends:"]
    for b in report["backends"]:
        if b["available"]:
            state = "available" + (", default" if b["default"] else "")
            detail = f"devices: {', '.join(b['devices'])}"
        else:
            state, detail = "unavailable", b["reason"]
        lines.append(f"  {b['name']}  [{state}]  {detail}  (plugin {b['plugin']})")
    lines += ["", "Plugins:"]
    for p in report["plugins"]:
        origin = " ".join(filter(None, (p["distribution"], p["version"]))) or "unknown distribution"
        lines.append(f"  {p['name']}  ({origin}{', built-in' if p['builtin'] else ''})")
        parts = []
        if p["backends"]:
            parts.append(f"backends: {', '.join(p['backends'])}")
        if p["ops"]:
            parts.append(f"ops: {', '.join(p['ops'])}")
        if p["kernels"]:
            kernels = (
                f"{k['op']}[{k['backend']}]" + (f" ({k['mark']})" if k["mark"] else "")
                for k in p["kernels"]
            )
            parts.append(f"kernels: {', '.join(kernels)}")
        if p["methods"]:
            parts.append(f"Tensor methods: {', '.join(p['methods'])}")
        for part in parts or ["contributes nothing"]:
            lines += textwrap.wrap(part, 96, initial_indent="    ", subsequent_indent="      ")
    lines += ["", "Failed plugins:"]
    for p in report["failed"]:
        origin = " ".join(filter(None, (p["distribution"], p["version"]))) or "unknown distribution"
        lines.append(f"  {p['name']}  ({origin})")
        lines += textwrap.wrap(p["reason"], 96, initial_indent="    ", subsequent_indent="    ")
    if not report["failed"]:
        lines.append("  none")
    if "ops" in report:
        backends = [b["name"] for b in report["backends"]]
        rows = [["op", *backends]]
        for op, per_backend in report["ops"].items():
            rows.append([op, *(_kernel_cell(per_backend[b]) for b in backends)])
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines += ["", "Kernels (which kernel computes each op on each backend):"]
        for row in rows:
            lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return "\n".join(lines)
