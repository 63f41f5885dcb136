"""The text inside the boxes: shapes, dtypes, values and arguments, formatted for a picture."""

from __future__ import annotations

import html
import inspect
import textwrap
from typing import Any

from ..tensor import Tensor
from .style import LINE_WIDTH, PARAM_WIDTH


def dtype_name(native: Any, device: Any) -> str:
    try:
        return str(device._dtype_from_native[native].name)
    except (AttributeError, KeyError, TypeError):
        return str(native)


def shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def format_number(value: Any) -> str:
    if isinstance(value, bool) or isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = f"{value:.4g}"
        # "2.0" says the value is exactly 2; a rounded 1210.3 stays "1210".
        return text + ".0" if text.lstrip("-").isdigit() and value.is_integer() else text
    if isinstance(value, complex):
        return f"{value.real:.3g}{value.imag:+.3g}j"
    return str(value)


def format_constant(value: Any) -> str:
    """A Python number an op received: exactly, unless that takes many digits."""
    text = repr(value)
    return text if len(text) <= 10 else f"{value:.6g}"


def format_nested(values: Any) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(format_nested(v) for v in values) + "]"
    return format_number(values)


def values_text(array: Any, device: Any, limit: int) -> str:
    """The values of a raw array, at most ``limit`` of them (``…`` marks the rest)."""
    size = 1
    for n in array.shape:
        size *= n
    backend = device.backend
    if size <= limit:
        return format_nested(backend.to_numpy(array).tolist())
    # Only the first values are copied to the host, however large the tensor.
    head = device.xp.reshape(array, (-1,))[:limit]
    values = backend.to_numpy(head).tolist()
    # A no-break space keeps "(100 values)" on one line when labels wrap.
    return "[" + ", ".join(map(format_number, values)) + f", … ({size}\N{NO-BREAK SPACE}values)]"


def is_default(op: Any, name: str, value: Any) -> bool:
    """Whether an op's param has its default value (those are not drawn)."""
    signature = op.signature
    parameter = signature.parameters.get(name) if signature is not None else None
    if parameter is None or parameter.default is inspect.Parameter.empty:
        return False
    default = parameter.default
    if value is default:
        return True
    if type(value) is not type(default) or not isinstance(value, (int, float, str, tuple)):
        return False
    return bool(value == default)


def param_text(value: Any, device: Any) -> str:
    """A short text for one non-tensor argument of an op (``axis=1``, ``key=(0, :)``)."""
    text = python_text(value, device)
    return text if len(text) <= PARAM_WIDTH else text[: PARAM_WIDTH - 1] + "…"


def python_text(value: Any, device: Any) -> str:
    if value is Ellipsis:
        return "..."
    if isinstance(value, slice):
        parts = ["" if p is None else str(p) for p in (value.start, value.stop, value.step)]
        return ":".join(parts[:2] if value.step is None else parts)
    if isinstance(value, tuple):
        inner = ", ".join(python_text(v, device) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, Tensor):
        return f"tensor{shape_text(value.shape)}"
    if hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, type):
        # (a NumPy dtype given as its scalar class, numpy.float64, has both, as descriptors)
        return f"array{shape_text(tuple(value.shape))}"
    if isinstance(value, (bool, int, float, complex)):
        return format_number(value)
    try:
        return str(device._dtype_from_native[value].name)
    except (AttributeError, KeyError, TypeError):
        return repr(value)


def html_label(details: list[tuple[str, str | None]]) -> str:
    """An HTML-like Graphviz label: lines without a colour bold, the others small."""
    lines = []
    for text, color in details:
        for line in textwrap.wrap(text, LINE_WIDTH, break_on_hyphens=False) or [""]:
            line = html.escape(line, quote=False)
            if color is None:
                lines.append(f"<B>{line}</B>")
            else:
                lines.append(f'<FONT POINT-SIZE="10" COLOR="{color}">{line}</FONT>')
    return "<" + "<BR/>".join(lines) + ">"
