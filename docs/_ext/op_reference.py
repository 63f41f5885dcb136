"""The ``plugrad-ops`` directive: the reference entries of a plugin module's ops, from the registry.

::

    .. plugrad-ops:: plugrad.plugins.linalg_extension
       :require-examples:

documents every op the module declares, in declaration order: the public
function's signature and one-line summary (autodoc), then the op's notes and
examples from ``docs/op_examples/<module>.txt``, whose ``>>>`` lines the doctest
builder runs. An entry there for an op the module does not declare is an error,
and so, with ``:require-examples:``, is an op without one.

The examples file holds one entry per op: its name at the start of a line, then
the entry's text indented by four spaces. Lines starting with ``#`` are comments.
"""

from __future__ import annotations

import importlib
import textwrap
from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

EXAMPLES = Path(__file__).resolve().parents[1] / "op_examples"

#: Where an op's public function lives, by its declared namespace.
PUBLIC_MODULES = {
    None: "plugrad",
    "linalg": "plugrad.linalg",
    "fft": "plugrad.fft",
    "nn": "plugrad.ops",
}


def read_examples(path: Path) -> dict[str, str]:
    """``{op name: entry text}`` from an examples file (empty if there is none)."""
    if not path.exists():
        return {}
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            continue
        if line and not line[0].isspace():
            current = entries.setdefault(line.strip(), [])
        elif current is not None:
            current.append(line)
    return {name: textwrap.dedent("\n".join(lines)).strip("\n") for name, lines in entries.items()}


class PlugradOps(SphinxDirective):
    required_arguments = 1
    option_spec: ClassVar[dict[str, Any]] = {"require-examples": directives.flag}

    def run(self) -> list[nodes.Node]:
        import plugrad.registry

        module_name = self.arguments[0]
        module = importlib.import_module(module_name)
        declared = module.plugrad_ops()
        path = EXAMPLES / f"{module_name.rsplit('.', 1)[-1]}.txt"
        self.env.note_dependency(str(path))
        examples = read_examples(path)
        names = {op.name for op in declared}
        for stale in sorted(set(examples) - names):
            where = self.get_location()
            logger.warning(f"{path.name}: {stale!r} is not an op of {module_name}", location=where)
        lines: list[str] = []
        for op in declared:
            if plugrad.registry.find_op(op.name) is None:
                logger.warning(f"op {op.name!r} is not registered", location=self.get_location())
                continue
            lines.append(f".. autofunction:: {PUBLIC_MODULES[op.namespace]}.{op.name}")
            entry = examples.get(op.name)
            if entry:
                lines += ["", *textwrap.indent(entry, "   ").splitlines()]
            elif "require-examples" in self.options:
                logger.warning(
                    f"op {op.name!r} has no entry in {path.name}", location=self.get_location()
                )
            lines.append("")
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source=str(path)), self.content_offset, container)
        return container.children


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("plugrad-ops", PlugradOps)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
