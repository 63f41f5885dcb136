"""Running plain PyTorch programs with plugrad standing in for ``torch``."""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator


@contextlib.contextmanager
def plugrad_as_torch() -> Iterator[None]:
    """Make ``import torch...`` give the plugrad modules of the same dotted names."""
    for name in ("nn.functional", "optim", "optim.lr_scheduler", "utils.data"):
        __import__(f"plugrad.{name}")
    saved = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "torch"}
    aliases = {
        "torch" + name[len("plugrad") :]: module
        for name, module in list(sys.modules.items())
        if name == "plugrad" or name.startswith("plugrad.")
    }
    for name in saved:
        del sys.modules[name]
    sys.modules.update(aliases)
    try:
        yield
    finally:
        for name in aliases:
            sys.modules.pop(name, None)
        sys.modules.update(saved)


def run_program(source: str, filename: str, data: dict, *, as_plugrad: bool) -> list:
    """Execute ``source`` (a program defining ``run(data)``) and return ``run(data)``,
    with plugrad as ``torch`` if ``as_plugrad``, else with PyTorch."""
    module = types.ModuleType(filename)
    with plugrad_as_torch() if as_plugrad else contextlib.nullcontext():
        exec(compile(source, filename, "exec"), module.__dict__)
        return module.run(data)
