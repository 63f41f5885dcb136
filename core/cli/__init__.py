"""The applications built on plugrad: the ``plugrad`` command and what it runs.

:mod:`plugrad.cli.commands` parses the command line (``plugrad info``,
``plugrad demo``, ``plugrad graph``; also ``python -m plugrad``);
:mod:`plugrad.cli.demo` is the digits-training demo and
:mod:`plugrad.cli.expression` the safe expression evaluator ``plugrad graph`` uses.
Nothing in the library imports this package.
"""

from __future__ import annotations

from .commands import info_report, main

__all__ = ["info_report", "main"]
