"""Data-type functions of the Array API that are ops: ``astype``.

The others (``can_cast``, ``finfo``, ``iinfo``, ``isdtype``, ``result_type``)
only inspect dtypes; they live in :mod:`plugrad.data_types`.
"""

from __future__ import annotations

from typing import Any

from plugrad.hookspecs import hookimpl
from plugrad.opdef import OpDef, op
from plugrad.plugins._rules import cast


def _astype(xp: Any, x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    if device is not None and getattr(device, "native", device) != getattr(x, "device", device):
        raise NotImplementedError(
            "astype(..., device=...) cannot move data between devices; use x.to(device) first"
        )
    return xp.astype(x, dtype, copy=copy)


astype = op(
    "astype",
    _astype,
    inputs=("x",),
    saves=(),
    doc="""Convert ``x`` to ``dtype`` (a plugrad dtype such as ``plugrad.float64``).

    The gradient is converted back to ``x``'s dtype (its real part, for a real
    ``x`` cast to complex). Converting to an integer or bool dtype ends the graph.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.5, -2.5], requires_grad=True)
    >>> y = plugrad.astype(x, plugrad.float64)
    >>> y
    tensor([ 1.5000, -2.5000], dtype=plugrad.float64, grad_fn=<AstypeBackward>)
    >>> plugrad.astype(x, plugrad.int32)
    tensor([ 1, -2], dtype=plugrad.int32)
    """,
).vjp(lambda xp, g, ans, x, *, dtype, copy, device: cast(xp, g, x.dtype))


@hookimpl
def plugrad_ops() -> list[OpDef]:
    return [astype]
