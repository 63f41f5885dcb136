"""tools/generate_stubs.py: the committed stubs are what the registry generates, and they
describe the functions plugrad really has."""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

import pytest

import plugrad

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "generate_stubs.py"


def test_committed_stubs_match_the_registry(script) -> None:
    out_of_date = script.stale()
    assert not out_of_date, (
        f"the stubs {out_of_date} in core/ differ from what the op registry generates; "
        f"regenerate them with: {script.COMMAND}"
    )


def test_a_changed_stub_is_reported(script, tmp_path) -> None:
    for name, text in script.stubs().items():
        (tmp_path / name).write_text(text)
    assert script.stale(tmp_path) == []
    (tmp_path / "_api_plugrad.pyi").write_text(text.replace("-> Tensor", "-> int", 1))
    (tmp_path / "_api_fft.pyi").unlink()
    assert sorted(script.stale(tmp_path)) == ["_api_fft.pyi", "_api_plugrad.pyi"]


def _stub_functions(text: str) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(text)
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def _reexported(text: str) -> set[str]:
    """The names a stub re-exports: ``from m import x as x``, as type checkers read it."""
    return {
        alias.asname
        for node in ast.parse(text).body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname == alias.name
    }


def _assignments(body: list[ast.stmt]) -> dict[str, ast.expr]:
    """``name = value`` statements of a stub's body (or a class's), by name."""
    return {
        target.id: node.value
        for node in body
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }


def _kinds(node: ast.FunctionDef) -> list[tuple[str, str, bool]]:
    a = node.args
    defaults = [None] * (len(a.posonlyargs) + len(a.args) - len(a.defaults)) + a.defaults
    positional = [
        (arg.arg, kind, default is not None)
        for (arg, kind), default in zip(
            [(x, "POSITIONAL_ONLY") for x in a.posonlyargs]
            + [(x, "POSITIONAL_OR_KEYWORD") for x in a.args],
            defaults,
        )
    ]
    rest = [(a.vararg.arg, "VAR_POSITIONAL", False)] if a.vararg else []
    rest += [(x.arg, "KEYWORD_ONLY", d is not None) for x, d in zip(a.kwonlyargs, a.kw_defaults)]
    return positional + rest


@pytest.mark.parametrize("module", ["plugrad", "plugrad.linalg", "plugrad.fft", "plugrad.ops"])
def test_every_builtin_op_function_has_its_exact_parameters(script, module) -> None:
    builtin = script.builtin_ops()
    stub = script.MODULES[module]
    text = script.module_stub(module, builtin)
    defined = _stub_functions(text)
    exported = set(defined) | _reexported(text)
    namespace = sys.modules[module]
    aliases = _assignments(ast.parse(text).body)
    for name, value in aliases.items():
        # Another name of a function the stub defines: the same object at run time.
        assert isinstance(value, ast.Name) and value.id in defined, f"{stub}: {name} = ?"
        assert getattr(namespace, name) is getattr(namespace, value.id), f"{module}.{name}"
    exported |= set(aliases)
    functions = {
        name: f
        for name in dir(namespace)
        if getattr((f := getattr(namespace, name)), "__op__", None) is not None
        and f.__op__.name in builtin
    }
    assert functions, f"no op functions found in {module}"
    assert set(functions) == exported, f"{stub}: exports differ from {module}'s op functions"
    for name, node in defined.items():
        runtime = [
            (p.name, p.kind.name, p.default is not p.empty)
            for p in inspect.signature(functions[name]).parameters.values()
        ]
        assert _kinds(node) == runtime, f"{module}.{name}: stub parameters differ"
        docstring = ast.get_docstring(node)
        assert docstring, f"{module}.{name} has no one-line doc in {stub}"


def test_tensor_methods_installed_from_ops_are_in_the_stub(script) -> None:
    builtin = script.builtin_ops()
    methods = script.installed_tensor_methods(builtin)
    tree = ast.parse(script.tensor_stub(builtin))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    declared = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    for name, value in _assignments(cls.body).items():
        if isinstance(value, ast.Name):  # another name of a method the class defines
            assert value.id in declared and methods[name] is methods[value.id], name
        else:  # a function of plugrad, ``_api_plugrad.abs``, which is the method itself
            assert isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)
            home = {stub[:-4]: module for module, stub in script.MODULES.items()}
            function = getattr(sys.modules[home[value.value.id]], value.attr)
            assert methods[name] is function, name
        declared.add(name)
    assert declared == set(methods)
    bases = {c.__name__ for c in plugrad.Tensor.__mro__}
    assert "InstalledTensorMethods" not in bases, (
        "the stub's base class exists for type checkers only"
    )


def test_a_method_installed_by_a_builtin_op_gets_a_stub(script, monkeypatch) -> None:
    # What the registry does for an op declared with method=True (none of the built-in
    # ops is one today): the method is the function itself, so the stub says so.
    monkeypatch.setattr(plugrad.Tensor, "logaddexp", plugrad.logaddexp, raising=False)
    stub = script.tensor_stub(script.builtin_ops())
    assert "    logaddexp = _api_plugrad.logaddexp\n" in stub
    assert "from . import _api_plugrad\n" in stub
    monkeypatch.setattr(plugrad.Tensor, "not_an_op", lambda self: None, raising=False)
    with pytest.raises(SystemExit, match="not_an_op"):
        script.tensor_stub(script.builtin_ops())
