"""Data-type functions of the Array API that are ops: ``astype``.

The others (``can_cast``, ``finfo``, ``iinfo``, ``isdtype``, ``result_type``)
only inspect dtypes; they live in :mod:`plugrad.data_types`.
"""

from __future__ import annotations

from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, collect_ops, op
from plugrad.plugins._rules import cast


def _astype(xp: Any, x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    if device is not None and getattr(device, "native", device) != getattr(x, "device", device):
        raise NotImplementedError(
            "astype(..., device=...) cannot move data between devices; use x.to(device) first"
        )
    return xp.astype(x, dtype, copy=copy)


# fmt: off
# The rule reads only x's dtype; an integer or bool result ends the graph.
astype = op("astype", _astype, inputs=("x",), saves=(),
            vjp=lambda xp, g, ans, x, *, dtype, copy, device: cast(xp, g, x.dtype),
            doc="Convert ``x`` to ``dtype`` (e.g. ``plugrad.float64``); its gradient to x's.")
# fmt: on


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return collect_ops(globals())
