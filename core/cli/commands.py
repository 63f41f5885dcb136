"""The ``plugrad`` command (also ``python -m plugrad``).

``plugrad info`` prints what this installation has loaded: the version, the
backends (available or why not, and their devices), the plugins (distribution,
version, what each contributes: backends, ops, kernels, Tensor methods, further
names of its ops' functions, plan passes), the plugins that failed and why, and with
``--ops`` which kernel serves each op on each available backend. ``--json``
prints the same as one JSON object for tools.

``plugrad demo`` trains a small network on handwritten digits, on the chosen
backend, and writes its loss curve, graph picture and weights (see
:mod:`plugrad.cli.demo`).

``plugrad graph`` draws the autograd graph of an expression (see
:mod:`plugrad.viz`): with none, the classic ``e = a*b + log(d)*c``. The
expression is never given to ``eval``; :mod:`plugrad.cli.expression` evaluates
only arithmetic, plugrad functions, numbers and the ``--var`` variables.
"""

from __future__ import annotations

import argparse
import json
import keyword
import os
import platform
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from .. import checking as _checking
from .. import inventory as _inventory
from .. import plugin_manager as _plugin_manager
from .. import registry as _registry
from ..errors import PlugradError
from . import demo as _demo

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse's parser, saying how to pass an expression that starts with ``-``."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments: -"):
            message += (
                "; an expression that starts with '-' goes after '--' (plugrad graph -- '-x*2'),"
                " or in parentheses ('(-x*2)')"
            )
        super().error(message)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (default: ``sys.argv[1:]``); return its exit code."""
    parser = _Parser(
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
    _add_graph_parser(commands)
    _demo.add_parser(commands)
    args = parser.parse_args(argv)
    if args.command == "graph":
        return graph_command(args)
    if args.command == "demo":
        return demo_command(args)
    report = info_report(ops=args.ops)
    try:
        print(json.dumps(report, indent=2) if args.json else format_report(report), flush=True)
    except BrokenPipeError:
        # The reader stopped early (``plugrad info | head``): not an error of this command.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
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
        "autoload": _plugin_manager.autoload_enabled(),
        "disabled": _plugin_manager.disabled_plugin_names(),
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
                "aliases": dict(plugin.aliases),
                "plan_passes": list(plugin.plan_passes),
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


#: The widest line ``plugrad info`` prints (tables are split and text wrapped to fit).
WIDTH = 100


def _kernel_cell(entry: dict[str, Any]) -> str:
    """The table's short word for the kernel that serves an op on a backend."""
    return "generic" if entry["kind"] == "generic" else str(entry["kind"])


def _kernels_table(report: dict[str, Any]) -> list[str]:
    """The ``--ops`` table, its columns split into blocks that fit :data:`WIDTH`.

    Unavailable backends get no column (the Backends list says why), and a kernel
    other than the generic one is a short word in the table, named in full below it.
    """
    backends = [b["name"] for b in report["backends"] if b["available"]]
    unavailable = [b["name"] for b in report["backends"] if not b["available"]]
    lines = [
        "",
        "Kernels (which kernel computes each op on each available backend; generic: the op's",
        "generic kernel, op: the op's own kernel for that backend, backend: the backend's",
        "kernel, override: a plugin's kernel from plugrad_kernels()):",
    ]
    names = list(report["ops"])
    first = max(len(n) for n in ["op", *names])
    width = {b: max(len(b), 8) for b in backends}
    blocks: list[list[str]] = [[]]
    used = 2 + first
    for b in backends:
        if blocks[-1] and used + 2 + width[b] > WIDTH:
            blocks.append([])
            used = 2 + first
        blocks[-1].append(b)
        used += 2 + width[b]
    for index, block in enumerate(blocks):
        if index:
            lines.append("")
        rows = [["op", *block]]
        rows += [[n, *(_kernel_cell(report["ops"][n][b]) for b in block)] for n in names]
        for row in rows:
            cells = [row[0].ljust(first), *(c.ljust(width[b]) for c, b in zip(row[1:], block))]
            lines.append("  " + "  ".join(cells).rstrip())
    special = [
        f"{n} on {b}: {entry['kind']} kernel {entry['function']} ({entry['plugin']})"
        for n in names
        for b in backends
        if (entry := report["ops"][n][b])["kind"] != "generic"
    ]
    if special:
        lines += ["", "Kernels other than the generic one:"]
        for text in special:
            lines += textwrap.wrap(text, WIDTH, initial_indent="  ", subsequent_indent="      ")
    if unavailable:
        lines += ["", f"Not in the table (unavailable): {', '.join(unavailable)}"]
    return lines


def format_report(report: dict[str, Any]) -> str:
    """Render :func:`info_report`'s dict as the text ``plugrad info`` prints."""
    lines = [f"plugrad {report['version']} (Python {report['python']}) at {report['location']}"]
    lines.append(
        "checking mode: "
        + ("on" if report["checks"] else "off (PLUGRAD_CHECK_PLUGINS=1 turns it on)")
    )
    lines.append(
        "plugin autoload: "
        + ("on" if report["autoload"] else "off (PLUGRAD_DISABLE_PLUGIN_AUTOLOAD is set)")
    )
    if report["disabled"]:
        lines.append("disabled by PLUGRAD_DISABLED_PLUGINS: " + ", ".join(report["disabled"]))
    lines += ["", "Backends:"]
    for b in report["backends"]:
        if b["available"]:
            state = "available" + (", default" if b["default"] else "")
            detail = f"devices: {', '.join(b['devices'])}"
        else:
            state, detail = "unavailable", b["reason"]
        text = f"{b['name']}  [{state}]  {detail}  (plugin {b['plugin']})"
        lines += textwrap.wrap(text, WIDTH, initial_indent="  ", subsequent_indent="      ")
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
        if p.get("aliases"):
            by_op: dict[str, list[str]] = {}
            for alias, op in p["aliases"].items():
                by_op.setdefault(op, []).append(alias)
            named = (f"{op} as {', '.join(aliases)}" for op, aliases in by_op.items())
            parts.append(f"aliases: {'; '.join(named)}")
        if p.get("plan_passes"):
            parts.append(f"plan passes: {', '.join(p['plan_passes'])}")
        for part in parts or ["contributes nothing"]:
            lines += textwrap.wrap(part, WIDTH, initial_indent="    ", subsequent_indent="      ")
    lines += ["", "Failed plugins:"]
    for p in report["failed"]:
        origin = " ".join(filter(None, (p["distribution"], p["version"]))) or "unknown distribution"
        lines.append(f"  {p['name']}  ({origin})")
        lines += textwrap.wrap(p["reason"], WIDTH, initial_indent="    ", subsequent_indent="    ")
    if not report["failed"]:
        lines.append("  none")
    if "ops" in report:
        lines += _kernels_table(report)
    return "\n".join(lines)


# -- plugrad graph ------------------------------------------------------------------------

#: What ``plugrad graph`` draws without an expression, and its variables' default values.
CLASSIC_EXPRESSION = "a*b + log(d)*c"
CLASSIC_VALUES = {"a": 2.0, "b": 3.0, "c": 4.0, "d": 5.0}
_GRAPH_EPILOG = """\
examples:
  plugrad graph                         e = a*b + log(d)*c into graph.svg
  plugrad graph --grads -o e.png        the same after backward, gradients shown
  plugrad graph "sum(exp(x * w))" --var x=1,2,3 --var w=0.5,0.1,2
  plugrad graph "m @ v" --var "m=1,2;3,4" --var v=1,1 --values -o mv.pdf

The expression may use numbers, the --var variables, pi, e, inf, nan, dtypes
(float32, ...), + - * / // % ** @ and calls of plugrad functions: exp(x),
sum(x, axis=0), linalg.det(m), fft.fft(x), ops.NAME(x). It is not evaluated as
Python: anything else (attributes, subscripts, other names) is refused.
Rendering SVG, PNG or PDF needs Graphviz (pip install ".[viz]" from a checkout, and the
dot program); -o FILE.dot writes the DOT source and needs neither.
"""


def _add_graph_parser(commands: Any) -> None:
    graph = commands.add_parser(
        "graph",
        help="draw the autograd graph of an expression (SVG, PNG, PDF or DOT)",
        description=(
            "Draw the autograd graph of an expression over tensors. Without an expression, "
            f"draw the classic e = {CLASSIC_EXPRESSION} with a=2, b=3, c=4, d=5."
        ),
        epilog=_GRAPH_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    graph.add_argument(
        "expression", nargs="?", help=f"what to compute (default: {CLASSIC_EXPRESSION})"
    )
    graph.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUES",
        help="a variable that requires grad: one number, comma-separated numbers, or rows "
        "separated by ';' for a matrix (repeat for several variables)",
    )
    graph.add_argument(
        "-o",
        "--output",
        default="graph.svg",
        metavar="PATH",
        help="the file to write; its suffix picks the format: .svg, .png, .pdf or .dot "
        "(default: graph.svg)",
    )
    graph.add_argument("--values", action="store_true", help="show the tensors' values")
    graph.add_argument(
        "--grads",
        action="store_true",
        help="run backward on the (scalar) result first and show the gradients",
    )
    graph.add_argument(
        "--backward",
        action="store_true",
        help="draw the gradient flow (edges from the result back to the variables)",
    )
    graph.add_argument("--backend", help="the backend to compute on (default: the default one)")


def demo_command(args: argparse.Namespace) -> int:
    """Run ``plugrad demo``; return the exit code (2: bad input or a missing package)."""
    try:
        _demo.main(args)
    except (ValueError, ImportError, PlugradError) as error:
        print(f"plugrad demo: error: {error}", file=sys.stderr)
        return 2
    return 0


def graph_command(args: argparse.Namespace) -> int:
    """Run ``plugrad graph``; return the exit code (2: bad input, 1: could not draw)."""
    from .. import creation, viz
    from ..tensor import Tensor
    from .expression import ExpressionError, evaluate

    try:
        given = _parse_variables(args.var)
        if args.expression is None:
            unknown = sorted(set(given) - set(CLASSIC_VALUES))
            if unknown:
                raise ExpressionError(
                    f"without an expression plugrad graph draws e = {CLASSIC_EXPRESSION}; "
                    f"--var can set a, b, c and d, not {', '.join(unknown)}"
                )
            text = CLASSIC_EXPRESSION
            values: dict[str, Any] = {**CLASSIC_VALUES, **given}
            result_name, title = "e", f"e = {CLASSIC_EXPRESSION}"
        else:
            text = args.expression
            values = given
            result_name, title = None, text
        viz.rendering.format_of(Path(args.output))  # a bad suffix fails before any work
        variables = {
            name: creation.tensor(value, requires_grad=True, backend=args.backend)
            for name, value in values.items()
        }
    except (ValueError, PlugradError) as error:
        return _fail(error, 2)
    try:
        result = evaluate(text, variables)
    except ExpressionError as error:
        return _fail(error, 2)
    except Exception as error:  # what an op raised: a shape mismatch, numpy's LinAlgError, ...
        return _fail(error, 1, f"{type(error).__name__}: ")
    outputs = list(result) if isinstance(result, tuple) else [result]
    if not outputs or not all(isinstance(o, Tensor) for o in outputs):
        return _fail(
            f"the expression gives {type(result).__name__}, not a tensor; use a --var variable",
            2,
        )
    names: dict[str, Any] = dict(variables)
    if result_name is not None:
        names[result_name] = result
    try:
        if args.grads:
            if len(outputs) != 1 or outputs[0].size != 1:
                shapes = ", ".join(str(o.shape) for o in outputs)
                raise ExpressionError(
                    f"--grads runs backward on the result, which must be one number, but it "
                    f"has shape {shapes}; reduce it first, e.g. sum(...)"
                )
            # retain_graph keeps the shapes and constants that the picture reads.
            outputs[0].backward(retain_graph=True)
        path = viz.render(
            outputs,
            args.output,
            names=names,
            show_values=args.values,
            show_grads=args.grads,
            backward=args.backward,
            title=title,
        )
    except ExpressionError as error:
        return _fail(error, 2)
    except (PlugradError, OSError) as error:
        return _fail(error, 1)
    print(f"wrote {path}")
    return 0


def _fail(error: object, code: int, prefix: str = "") -> int:
    print(f"plugrad graph: error: {prefix}{error}", file=sys.stderr)
    return code


def _parse_variables(specs: Sequence[str]) -> dict[str, Any]:
    """``--var`` values: NAME=1 (a number), NAME=1,2,3 (a vector), NAME=1,2;3,4 (a matrix)."""
    from .expression import ExpressionError

    variables: dict[str, Any] = {}
    for spec in specs:
        name, equals, text = spec.partition("=")
        name = name.strip()
        if not equals or not name.isidentifier() or keyword.iskeyword(name):
            raise ExpressionError(
                f"--var {spec!r}: give NAME=VALUES with NAME a Python identifier, "
                "e.g. --var x=1,2,3"
            )
        if name in variables:
            raise ExpressionError(f"--var {name} is given twice")
        try:
            rows = [[float(v) for v in row.split(",")] for row in text.split(";")]
        except ValueError:
            raise ExpressionError(
                f"--var {spec!r}: the values must be numbers separated by ',' "
                "(and ';' between the rows of a matrix), e.g. --var x=1,2,3"
            ) from None
        if len(rows) > 1:
            if len({len(row) for row in rows}) != 1:
                raise ExpressionError(f"--var {spec!r}: every row of a matrix needs as many values")
            variables[name] = rows
        elif len(rows[0]) > 1:
            variables[name] = rows[0]
        else:
            variables[name] = rows[0][0]
    return variables
