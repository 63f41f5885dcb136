"""Arithmetic over tensors typed as text, evaluated without ``eval``: what ``plugrad graph`` draws.

:func:`evaluate` parses the text with :mod:`ast` and walks the tree itself,
so nothing but the following can run: numbers, the variables it is given,
the constants ``pi``, ``e``, ``inf``, ``nan``, plugrad's dtypes, the
arithmetic operators, and calls of plugrad's op functions (``exp(x)``,
``sum(x, axis=0)``, ``linalg.det(m)``, ``ops.NAME(...)`` for plugin ops).
Attribute access, subscripts, comprehensions, lambdas, comparisons and every
other name are refused with an :class:`ExpressionError` that lists what is allowed.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

from .. import dtypes as _dtypes
from .. import fft as _fft
from .. import linalg as _linalg
from .. import ops as _ops
from .. import registry as _registry
from ..errors import PlugradError

__all__ = ["ExpressionError", "evaluate"]

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.MatMult: operator.matmul,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan}
_DTYPES = {d.name: d for d in _dtypes.all_dtypes}
#: The namespaces whose functions ``NAMESPACE.NAME(...)`` may call, and which ops they hold.
_NAMESPACES: dict[str, tuple[Any, str | None]] = {
    "linalg": (_linalg, "linalg"),
    "fft": (_fft, "fft"),
    "ops": (_ops, None),
}
_LITERALS = (bool, int, float, complex, str, type(None))


class ExpressionError(PlugradError, ValueError):
    """An expression uses something :func:`evaluate` does not allow, or cannot be parsed."""


def evaluate(text: str, variables: Mapping[str, Any]) -> Any:
    """Evaluate the expression ``text`` with ``variables`` (name -> value) in scope.

    Parameters
    ----------
    text : str
        Python expression syntax, restricted as the module docstring says.
    variables : mapping of str to object
        The names the expression may use besides the constants and dtypes;
        they take precedence over those.

    Returns
    -------
    object
        The value: a Tensor (or a tuple of them) when a variable is a Tensor.

    Raises
    ------
    ExpressionError
        If ``text`` does not parse or uses something that is not allowed.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.cli.expression import evaluate
    >>> x = plugrad.tensor([1.0, 2.0])
    >>> evaluate("sum(x * 2) + 1", {"x": x})
    tensor(7.)
    >>> evaluate("__import__('os')", {"x": x})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
      ...
    plugrad.cli.expression.ExpressionError: ...__import__ is not a plugrad function...
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        raise ExpressionError(
            f"cannot parse the expression {text!r}: {error.msg}. {_allowed(variables)}"
        ) from None
    except (RecursionError, MemoryError):  # CPython's parser gives up on deep nesting
        raise ExpressionError(f"the expression {text[:40]!r}... is nested too deeply") from None
    try:
        return _Evaluator(variables).value(tree.body)
    except RecursionError:
        raise ExpressionError(f"the expression {text[:40]!r}... is nested too deeply") from None


def _allowed(variables: Mapping[str, Any]) -> str:
    names = ", ".join(variables) if variables else "none given"
    return (
        "Expressions may use numbers, the variables (" + names + "), the constants "
        "pi, e, inf and nan, the dtypes (float32, float64, ...), the operators "
        "+ - * / // % ** @, and calls of plugrad functions such as exp(x), "
        "sum(x, axis=0), linalg.det(m), fft.fft(x) or ops.NAME(x) for plugin ops; "
        "arguments may also be strings, tuples, True, False and None."
    )


#: The most items a sequence repeated with ``*`` in an expression may have.
_LONGEST_SEQUENCE = 1_000_000


def _repeats_too_much(left: Any, right: Any) -> bool:
    """Whether ``left * right`` repeats a sequence (str, tuple, list) past the longest allowed."""
    for sequence, count in ((left, right), (right, left)):
        if isinstance(sequence, (str, tuple, list)) and isinstance(count, int):
            return len(sequence) * count > _LONGEST_SEQUENCE
    return False


class _Evaluator:
    """Walks an expression tree, allowing only what the module docstring lists."""

    def __init__(self, variables: Mapping[str, Any]) -> None:
        self.variables = variables

    def refuse(self, node: ast.AST, why: str, list_allowed: bool = True) -> ExpressionError:
        snippet = ast.unparse(node)
        if len(snippet) > 40:
            snippet = snippet[:39] + "…"
        if not list_allowed:
            return ExpressionError(f"cannot evaluate {snippet!r}: {why}")
        return ExpressionError(f"{snippet!r} is not allowed: {why}. {_allowed(self.variables)}")

    def value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            if type(node.value) not in _LITERALS:
                raise self.refuse(node, f"{type(node.value).__name__} literals are not allowed")
            return node.value
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.BinOp):
            return self.binary(node)
        if isinstance(node, ast.UnaryOp):
            unary = _UNARY.get(type(node.op))
            if unary is None:
                raise self.refuse(node, "the only unary operators are - and +")
            return unary(self.value(node.operand))
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.value(item) for item in node.elts)
        if isinstance(node, ast.Attribute):
            raise self.refuse(node, "attributes cannot be read (only linalg.NAME(...) style calls)")
        if isinstance(node, ast.Compare):
            raise self.refuse(node, "comparisons are not allowed")
        raise self.refuse(node, f"{_describe(node)} are not allowed")

    def name(self, node: ast.Name) -> Any:
        name = node.id
        if name in self.variables:
            return self.variables[name]
        if name in _CONSTANTS:
            return _CONSTANTS[name]
        if name in _DTYPES:
            return _DTYPES[name]
        if _registry.find_op(name) is not None or name in _NAMESPACES:
            raise self.refuse(node, f"{name} is a function; call it, e.g. {name}(x)")
        raise self.refuse(node, f"{name} is not defined (define it with --var {name}=...)")

    def binary(self, node: ast.BinOp) -> Any:
        apply = _BINARY.get(type(node.op))
        if apply is None:
            raise self.refuse(node, "the only binary operators are + - * / // % ** @")
        left = self.value(node.left)
        right = self.value(node.right)
        if isinstance(node.op, ast.Pow) and _is_number(left) and _is_number(right):
            # NOTE: integer powers of plain numbers can take unbounded time and memory
            # (9**9**9); float powers overflow at once instead.
            try:
                return float(left) ** float(right)
            except OverflowError:
                raise self.refuse(node, "the result is too large for a float", False) from None
            except ZeroDivisionError as error:
                raise self.refuse(node, str(error), False) from None
        if isinstance(node.op, ast.Mult) and _repeats_too_much(left, right):
            # NOTE: a repeated sequence is built in full before anything can refuse it
            # ((0,) * 50_000_000 took most of a gigabyte).
            raise self.refuse(
                node, f"a sequence repeated to more than {_LONGEST_SEQUENCE:,} items", False
            )
        try:
            return apply(left, right)
        except ZeroDivisionError as error:
            raise self.refuse(node, str(error), False) from None

    def call(self, node: ast.Call) -> Any:
        function = self.function(node.func)
        args = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise self.refuse(arg, "*arguments are not allowed")
            args.append(self.value(arg))
        kwargs = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise self.refuse(keyword.value, "**arguments are not allowed")
            kwargs[keyword.arg] = self.value(keyword.value)
        return function(*args, **kwargs)

    def function(self, node: ast.expr) -> Any:
        """The plugrad op function that ``node`` names, or an error."""
        if isinstance(node, ast.Name):
            if node.id in self.variables:
                raise self.refuse(node, f"{node.id} is a variable, not a function")
            if _registry.find_op(node.id) is None:
                raise self.refuse(node, f"{node.id} is not a plugrad function")
            return getattr(_ops, node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            namespace = _NAMESPACES.get(node.value.id)
            if namespace is None:
                raise self.refuse(
                    node,
                    f"{node.value.id}.{node.attr} is not a plugrad function (only "
                    "linalg.NAME, fft.NAME and ops.NAME can be called)",
                )
            module, extension = namespace
            op = _registry.find_op(node.attr)
            if op is None or (extension is not None and op.namespace != extension):
                raise self.refuse(node, f"{node.value.id}.{node.attr} is not a plugrad function")
            return getattr(module, node.attr)
        raise self.refuse(node, "only plugrad functions can be called, by name")


def _is_number(value: Any) -> bool:
    return type(value) in (int, float, bool)


def _describe(node: ast.AST) -> str:
    kinds = {
        ast.Subscript: "subscripts",
        ast.Lambda: "lambdas",
        ast.IfExp: "conditional expressions",
        ast.BoolOp: "and/or",
        ast.NamedExpr: "assignments",
        ast.Dict: "dicts",
        ast.Set: "sets",
        ast.JoinedStr: "f-strings",
    }
    for kind, words in kinds.items():
        if isinstance(node, kind):
            return words
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return "comprehensions"
    return f"{type(node).__name__} expressions"
