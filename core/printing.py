"""How tensors print: PyTorch's layout, the same on every backend.

The values are formatted here, in Python, from the host copy the backend
gives, so a tensor prints the same on NumPy, CuPy or any other backend, and
doctests do not depend on how a library rounds its last digit: floating
values show four decimals by default, as in PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from .errors import InvalidArgumentError

__all__ = ["format_tensor", "get_printoptions", "printoptions", "set_printoptions"]


@dataclass(frozen=True)
class PrintOptions:
    precision: int = 4
    threshold: float = 1000  # float("inf"): never summarize
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


_PROFILES = {
    "default": PrintOptions(),
    "short": PrintOptions(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": PrintOptions(threshold=2**63 - 1),
}
_options = PrintOptions()


def set_printoptions(
    precision: float | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set how tensors print, as ``torch.set_printoptions`` does.

    Parameters
    ----------
    precision
        Digits after the decimal point of floating values (default 4).
    threshold
        Tensors with more elements than this print summarized (default 1000).
    edgeitems
        Items shown at each end of a summarized dimension (default 3).
    linewidth
        Characters per line before a row wraps (default 80).
    profile
        ``"default"``, ``"short"`` or ``"full"``: a preset applied before the other arguments.
    sci_mode
        ``True`` or ``False`` forces scientific notation on or off; ``None`` chooses
        from the values.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.set_printoptions(precision=2)
    >>> plugrad.tensor([3.14159, 2.71828])
    tensor([3.14, 2.72])
    >>> plugrad.set_printoptions(profile="default")
    >>> plugrad.tensor([3.14159, 2.71828])
    tensor([3.1416, 2.7183])
    """
    global _options
    if profile is not None and profile not in _PROFILES:
        raise InvalidArgumentError(
            f"unknown print profile {profile!r}; choose one of {sorted(_PROFILES)}"
        )
    changes = {
        "precision": precision,
        "threshold": threshold,
        "edgeitems": edgeitems,
        "linewidth": linewidth,
    }
    for name, value in changes.items():
        if value is None:
            continue
        # PyTorch's idioms: threshold=float("inf") prints every element; precision=3.0.
        endless = name == "threshold" and value == math.inf
        whole = (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and (endless or (math.isfinite(value) and value == int(value)))
        )
        if not whole or value < 0:
            raise InvalidArgumentError(f"{name} must be a non-negative int, got {value!r}")
        changes[name] = value if endless else int(value)
    if sci_mode is not None:
        if sci_mode not in (True, False) or not isinstance(sci_mode, (bool, int)):
            raise InvalidArgumentError(f"sci_mode must be True, False or None, got {sci_mode!r}")
        sci_mode = bool(sci_mode)
    base = _PROFILES[profile] if profile is not None else _options
    given: dict[str, Any] = {name: value for name, value in changes.items() if value is not None}
    _options = replace(base, sci_mode=sci_mode, **given)


def get_printoptions() -> dict[str, Any]:
    """Return the current print options as a dict (the arguments of :func:`set_printoptions`).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.get_printoptions()["precision"]
    4
    """
    return {
        "precision": _options.precision,
        "threshold": _options.threshold,
        "edgeitems": _options.edgeitems,
        "linewidth": _options.linewidth,
        "sci_mode": _options.sci_mode,
    }


@contextmanager
def printoptions(**options: Any) -> Iterator[None]:
    """Use other print options inside a ``with`` block, then restore the previous ones.

    Examples
    --------
    >>> import plugrad
    >>> with plugrad.printoptions(precision=1):
    ...     print(plugrad.tensor([0.25, 1.5]))
    tensor([0.2, 1.5])
    """
    global _options
    saved = _options
    set_printoptions(**options)
    try:
        yield
    finally:
        _options = saved


class _Formatter:
    """Formats the real numbers of one tensor (or one part of complex ones) to a common width."""

    def __init__(self, values: list[Any], kind: str, options: PrintOptions) -> None:
        self.kind = kind
        self.precision = options.precision
        self.int_mode = True
        self.sci_mode = False
        if kind != "float":
            self.width = max((len(self.bare(v)) for v in values), default=1)
            return
        # As in PyTorch, the width and notation come from the nonzero finite values only.
        finite = [v for v in values if math.isfinite(v) and v != 0]
        if finite:
            magnitudes = [abs(v) for v in finite]
            self.int_mode = all(v == math.ceil(v) for v in magnitudes)
            low, high = min(magnitudes), max(magnitudes)
            wide = high / low > 1000.0 or high > 1.0e8
            self.sci_mode = wide if self.int_mode else (wide or low < 1.0e-4)
            # Only zeros, nan and inf keep PyTorch's notation whatever sci_mode says (forced,
            # 0.0000e+00 took 10 characters in a column laid out for 1: lines ran past).
            if options.sci_mode is not None:
                self.sci_mode = options.sci_mode
        self.width = max((len(self.bare(v)) for v in finite), default=1)

    def bare(self, value: Any) -> str:
        if self.kind == "bool":
            return "True" if value else "False"
        if self.kind == "int":
            return str(value)
        if not math.isfinite(value):
            return str(value)  # nan, inf, -inf
        if self.sci_mode:
            return f"{value:.{self.precision}e}"
        if self.int_mode:
            return f"{value:.0f}."
        return f"{value:.{self.precision}f}"

    def format(self, value: Any) -> str:
        return self.bare(value).rjust(self.width)


class _ComplexFormatter:
    def __init__(self, values: list[complex], options: PrintOptions) -> None:
        self.real = _Formatter([v.real for v in values], "float", options)
        self.imag = _Formatter([abs(v.imag) for v in values], "float", options)
        self.width = self.real.width + self.imag.width + 2

    def format(self, value: complex) -> str:
        # NaN has no sign to show (NumPy's 0 * inf sets one), as in PyTorch's printing.
        negative = not math.isnan(value.imag) and math.copysign(1.0, value.imag) < 0
        sign = "-" if negative else "+"
        # The real parts align; the imaginary part follows its sign unpadded, as PyTorch's.
        imag = self.imag.bare(abs(value.imag))
        return f"{self.real.format(value.real)}{sign}{imag}j"


def _summarized(host: Any, ndim: int, edge: int) -> Any:
    """The values shown of a summarized tensor, as nested lists with ``...`` between ends."""
    if ndim == 0:
        return host.tolist()
    size = len(host)
    if size > 2 * edge:
        ends = list(range(edge)) + list(range(size - edge, size))
        rows = [_summarized(host[i], ndim - 1, edge) for i in ends]
        return [*rows[:edge], ..., *rows[edge:]]
    return [_summarized(host[i], ndim - 1, edge) for i in range(size)]


def _flatten(values: Any) -> Iterator[Any]:
    if isinstance(values, list):
        for item in values:
            yield from _flatten(item)
    elif values is not ...:
        yield values


def _layout(values: Any, ndim: int, indent: int, fmt: Any, options: PrintOptions) -> str:
    if ndim == 0:
        return fmt.format(values)
    if ndim == 1:
        items = [" ..." if v is ... else fmt.format(v) for v in values]
        per_line = max(1, (options.linewidth - indent) // (fmt.width + 2))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = [
        "..." if row is ... else _layout(row, ndim - 1, indent + 1, fmt, options) for row in values
    ]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def format_tensor(host: Any, shape: tuple[int, ...], kind: str, suffixes: list[str]) -> str:
    """Return ``tensor(...)`` with the values of ``host`` (a NumPy array) laid out as PyTorch does.

    ``kind`` is ``"bool"``, ``"int"``, ``"float"`` or ``"complex"``; ``suffixes`` are the
    ``name=value`` parts after the values (dtype, device, grad_fn).
    """
    options = _options
    prefix = "tensor("
    numel = math.prod(shape)
    if numel == 0:
        text = "[]"
        if shape != (0,):
            suffixes = [f"size={shape}", *suffixes]
    elif numel > options.threshold and options.edgeitems == 0 and shape:
        text = "[...]"  # no value shown: the size says what is hidden (PyTorch's)
        suffixes = [f"size={shape}", *suffixes]
    else:
        if numel > options.threshold:
            values = _summarized(host, len(shape), options.edgeitems)
        else:
            values = host.tolist()
        flat = list(_flatten(values))
        fmt: Any = _ComplexFormatter(flat, options) if kind == "complex" else None
        fmt = fmt or _Formatter(flat, kind, options)
        text = _layout(values, len(shape), len(prefix), fmt, options)
    parts = [prefix, text]
    # A suffix that would overflow the last line goes on a line of its own (PyTorch's count,
    # the prefix in it on a first line).
    shown = prefix + text
    last_line = len(shown) - shown.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > options.linewidth:
            parts.append(",\n" + " " * len(prefix) + suffix)
            last_line = len(prefix) + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    parts.append(")")
    return "".join(parts)
