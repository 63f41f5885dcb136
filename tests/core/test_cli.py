"""``plugrad info``: the console script, ``python -m plugrad``, text and JSON."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
from doubles import UnavailableBackend

import plugrad
from plugrad import cli, registry
from plugrad.cli import commands
from plugrad.hookspecs import hookimpl
from plugrad.kerneldef import kernel

# These tests are about plugin machinery; they pin the default device to numpy.
pytestmark = pytest.mark.usefixtures("on_numpy")


def run(capsys, *args: str) -> str:
    assert cli.main(list(args)) == 0
    return capsys.readouterr().out


@pytest.fixture
def loaded(monkeypatch, plugin, registered):
    """An unavailable backend, a plugin overriding matmul on numpy, and a failed plugin."""
    backends = types.SimpleNamespace(
        plugrad_backends=hookimpl(lambda: [UnavailableBackend("missing_cli", "missinglib")])
    )
    registered(backends, "missing_backend_plugin")
    direct = kernel("matmul", backend="numpy", fn=lambda xp, x1, x2, /: xp.matmul(x1, x2))
    monkeypatch.setitem(registry._state.distributions, "fast_cli", ("plugrad-fast", "0.2"))
    registered(plugin(kernels=[direct], tryfirst=True), "fast_cli")
    monkeypatch.setitem(registry._state.failures, "broken_cli", "ImportError: needs libbar")
    monkeypatch.setitem(registry._state.distributions, "broken_cli", ("plugrad-broken", "1.0"))


def test_text(capsys, loaded) -> None:
    text = run(capsys, "info")
    location = Path(plugrad.__file__).parent
    assert text.startswith(f"plugrad {plugrad.__version__} (Python ")
    assert text.splitlines()[0].endswith(f") at {location}")
    assert "checking mode: off" in text
    assert "  numpy  [available, default]  devices: numpy  (plugin " in text
    assert (
        "  missing_cli  [unavailable]  missinglib is not installed; pip install missinglib"
    ) in text
    assert f"  plugrad.plugins.matrix_products  (plugrad {plugrad.__version__}, built-in)" in text
    assert "    ops: matmul, matrix_transpose" in text
    assert "  fast_cli  (plugrad-fast 0.2)\n    kernels: matmul[numpy] (tryfirst)" in text
    assert (
        "Failed plugins:\n  broken_cli  (plugrad-broken 1.0)\n    ImportError: needs libbar" in text
    )
    assert "Kernels" not in text


def _unchanged_plan(plan):
    return plan


def test_aliases_and_plan_passes_are_listed(capsys, plugin, registered) -> None:
    # What a plugin contributes beside ops and kernels was missing from the listing.
    from plugrad.opdef import op

    halved = op("halved_cli", lambda xp, x, /: x / 2, aliases=("half_cli", "by_two_cli"))
    registered(plugin(ops=[halved.vjp(lambda xp, g, ans, x: g / 2)]), "aliases_cli")
    passes = types.SimpleNamespace(plugrad_plan_passes=hookimpl(lambda: [_unchanged_plan]))
    registered(passes, "passes_cli")
    text = run(capsys, "info")
    assert "  aliases_cli  (unknown distribution)\n    ops: halved_cli\n" in text
    assert "    aliases: halved_cli as half_cli, by_two_cli\n" in text
    assert (
        f"  passes_cli  (unknown distribution)\n    plan passes: {__name__}._unchanged_plan" in text
    )
    assert "    aliases: matmul as mm, bmm, dot, " in text  # plugrad's own, in the same form
    plugins = {p["name"]: p for p in json.loads(run(capsys, "info", "--json"))["plugins"]}
    assert plugins["aliases_cli"]["aliases"] == {
        "half_cli": "halved_cli",
        "by_two_cli": "halved_cli",
    }
    assert plugins["aliases_cli"]["plan_passes"] == []
    assert plugins["passes_cli"]["plan_passes"] == [f"{__name__}._unchanged_plan"]
    assert plugins["passes_cli"]["aliases"] == {}
    (info,) = [p for p in plugrad.plugins.list_plugins() if p.name == "aliases_cli"]
    assert info.aliases == (("half_cli", "halved_cli"), ("by_two_cli", "halved_cli"))


def test_text_ops_table(capsys, loaded) -> None:
    text = run(capsys, "info", "--ops")
    assert max(len(line) for line in text.splitlines()) <= commands.WIDTH
    lines = text[text.index("Kernels (") :].splitlines()
    # With many backends installed the table is split into blocks of columns that fit.
    starts = [i for i, line in enumerate(lines) if line.startswith("  op  ")]
    columns: list[str] = []
    rows: dict[str, list[str]] = {}
    for start in starts:
        header = lines[start].split()
        columns += header[1:]
        for line in lines[start + 1 :]:
            cells = line.split()
            if not line.startswith("  ") or not cells or cells[0] not in registry.op_names():
                break
            assert len(cells) == len(header), line
            rows.setdefault(cells[0], ["op"]).extend(cells[1:])
    available = [b.name for b in plugrad.plugins.list_backends() if b.available]
    assert columns == available and "missing_cli" not in columns
    assert list(rows) == list(registry.op_names())
    assert rows["exp"][1] == "generic" and rows["matmul"][1] == "override"
    assert re.search(r"\n  matmul on numpy: override kernel \S*<lambda> \(fast_cli\)\n", text)
    assert "Not in the table (unavailable): " in text and "missing_cli" in text.splitlines()[-1]


def test_a_wide_ops_table_is_split_to_fit(capsys) -> None:
    names = [f"backend_number_{i}" for i in range(9)]
    report = {
        "version": "0",
        "python": "3",
        "location": "here",
        "checks": False,
        "autoload": True,
        "disabled": [],
        "backends": [
            {"name": n, "available": True, "default": False, "devices": [n], "plugin": "p"}
            for n in names
        ],
        "plugins": [],
        "failed": [],
        "ops": {"an_op_with_a_long_name": {n: {"kind": "generic"} for n in names}},
    }
    lines = commands.format_report(report).splitlines()
    assert max(len(line) for line in lines) <= commands.WIDTH
    headers = [line.split() for line in lines if line.startswith("  op  ")]
    assert len(headers) > 1 and [n for h in headers for n in h[1:]] == names
    rows = [line.split() for line in lines if line.startswith("  an_op_with_a_long_name")]
    assert [len(r) for r in rows] == [len(h) for h in headers]


def test_json(capsys, loaded) -> None:
    report = json.loads(run(capsys, "info", "--json", "--ops"))
    assert report["version"] == plugrad.__version__ and report["checks"] is False
    assert report["location"] == str(Path(plugrad.__file__).parent)
    backends = {b["name"]: b for b in report["backends"]}
    assert backends["numpy"] == {
        "name": "numpy",
        "plugin": "plugrad.backends.numpy_backend",
        "available": True,
        "reason": None,
        "devices": ["numpy"],
        "default": True,
    }
    assert backends["missing_cli"]["available"] is False
    plugins = {p["name"]: p for p in report["plugins"]}
    assert plugins["fast_cli"]["distribution"] == "plugrad-fast"
    assert plugins["fast_cli"]["kernels"][0]["mark"] == "tryfirst"
    assert report["failed"] == [
        {
            "name": "broken_cli",
            "distribution": "plugrad-broken",
            "version": "1.0",
            "reason": "ImportError: needs libbar",
        }
    ]
    matmul = report["ops"]["matmul"]
    assert matmul["numpy"]["kind"] == "override" and matmul["numpy"]["plugin"] == "fast_cli"
    assert matmul["numpy"]["shadows"] == ["generic: xp.matmul (plugrad.plugins.matrix_products)"]
    assert matmul["missing_cli"] == {
        "kind": None,
        "unavailable": "missinglib is not installed; pip install missinglib",
    }


def test_usage_errors_exit_2(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main([])
    assert exit_info.value.code == 2
    assert "the following arguments are required: COMMAND" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["info", "--bogus"])
    assert exit_info.value.code == 2
    # an expression starting with '-' is read as an option: the error says how to pass it
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["graph", "-x*2", "--var", "x=1"])
    assert exit_info.value.code == 2
    assert "goes after '--' (plugrad graph -- '-x*2')" in capsys.readouterr().err


def test_python_dash_m_and_the_console_script(python) -> None:
    module = python("", args=("-m", "plugrad", "info", "--json"))
    assert module.returncode == 0, module.stderr
    assert json.loads(module.stdout)["version"] == plugrad.__version__
    script = Path(sys.executable).with_name("plugrad")
    assert script.is_file(), "the plugrad console script is not installed; pip install -e ."
    result = subprocess.run([str(script), "info"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"plugrad {plugrad.__version__}")
    version = python("", args=("-m", "plugrad", "--version"))
    assert version.stdout.strip() == f"plugrad {plugrad.__version__}"


def test_text_says_whether_autoload_is_on_and_what_is_disabled(capsys, monkeypatch) -> None:
    assert "plugin autoload: on" in run(capsys, "info")
    monkeypatch.setenv("PLUGRAD_DISABLE_PLUGIN_AUTOLOAD", "yes")
    monkeypatch.setenv("PLUGRAD_DISABLED_PLUGINS", "one, two")
    text = run(capsys, "info")
    assert "plugin autoload: off (PLUGRAD_DISABLE_PLUGIN_AUTOLOAD is set)" in text
    assert "disabled by PLUGRAD_DISABLED_PLUGINS: one, two" in text
    report = json.loads(run(capsys, "info", "--json"))
    assert report["autoload"] is False and report["disabled"] == ["one", "two"]


def test_a_reader_that_stops_early_is_no_error() -> None:
    # What `plugrad info --ops | head -1` does: the reader is gone when the command writes
    # (this one leaves before plugrad is even imported).
    reader = "pass"
    command = [sys.executable, "-m", "plugrad", "info", "--ops"]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.run([sys.executable, "-c", reader], stdin=first.stdout, timeout=120)
    first.stdout.close()
    stderr = first.communicate(timeout=120)[1].decode()
    assert head.returncode == 0
    assert "Traceback" not in stderr and first.returncode == 0, stderr
