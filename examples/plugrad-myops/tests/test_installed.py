"""The installed plugin, end to end: found through its entry point, listed, overriding
numpy's matmul, and switched off by PLUGRAD_DISABLED_PLUGINS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version

import numpy as np
import plugrad
from plugrad.testing import OpCase, OpTests

import plugrad_myops
from plugrad_myops.kernels import matmul_numpy


def test_found_through_the_entry_point_with_its_distribution() -> None:
    (info,) = [p for p in plugrad.plugins.list_plugins() if p.name == "myops"]
    assert (info.distribution, info.version) == ("plugrad-myops", version("plugrad-myops"))
    assert info.failure is None and not info.builtin
    assert info.ops == ("softplus", "smooth_max") and info.methods == ("softplus",)
    assert [(k.op, k.backend) for k in info.kernels] == [("matmul", "numpy")]
    assert plugrad_myops.__version__ == info.version


def test_which_kernels_serve() -> None:
    softplus = plugrad.plugins.kernel_source("softplus", "numpy")
    assert (softplus.kind, softplus.plugin, softplus.distribution) == (
        "op",
        "myops",
        "plugrad-myops",
    )
    matmul = plugrad.plugins.kernel_source("matmul", "numpy")
    assert (matmul.kind, matmul.function) == ("override", matmul_numpy)
    assert [s.kind for s in plugrad.plugins.kernel_sources("matmul", "numpy")] == [
        "override",
        "generic",
    ]


class TestMatmulOverride(OpTests):
    """plugrad's matmul, now computed by this package's kernel on numpy, still matches
    NumPy and its backward rules, to second order."""

    cases = tuple(
        OpCase("matmul", id=f"matmul{shapes}", reference=np.matmul, shapes=shapes)
        for shapes in [((3, 4), (4, 2)), ((2, 3, 4), (4,)), ((4,), (4,))]
    )


def test_matmul_override_agrees_with_the_generic_kernel() -> None:
    with plugrad.plugins.checking():  # compares the override with the generic kernel
        plugrad.ones((2, 3)) @ plugrad.ones((3, 4))


def run(code: str, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PLUGRAD_")}
    result = subprocess.run(
        [sys.executable, "-c", code], env={**environment, **env}, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_plugrad_info_lists_it() -> None:
    report = json.loads(run("from plugrad.cli import main; main(['info', '--json', '--ops'])"))
    (myops,) = [p for p in report["plugins"] if p["name"] == "myops"]
    assert myops["distribution"] == "plugrad-myops" and report["failed"] == []
    assert report["ops"]["matmul"]["numpy"]["function"] == "plugrad_myops.kernels.matmul_numpy"
    assert report["ops"]["softplus"]["numpy"]["kind"] == "op"


def test_disabled_by_name_without_being_imported() -> None:
    code = (
        "import sys, plugrad\n"
        "print(hasattr(plugrad.ops, 'softplus'), 'plugrad_myops' in sys.modules,\n"
        "      plugrad.plugins.kernel_source('matmul').kind)"
    )
    assert run(code).split() == ["True", "True", "override"]
    assert run(code, PLUGRAD_DISABLED_PLUGINS="myops").split() == ["False", "False", "generic"]
