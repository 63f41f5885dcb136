"""Cases whose program and reference are one expression, run over two namespaces."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import plugrad
from plugrad.testing import OpCase


def over_xp(
    op: str, id: str, expression: Callable[..., Any], *shapes: Any, **fields: Any
) -> OpCase:
    """A case of ``expression(xp, *inputs)``: ``xp`` is plugrad in the program under test and
    NumPy in the reference, for ops that NumPy has under the same name and arguments."""
    program, reference = partial(expression, plugrad), partial(expression, np)
    return OpCase(op, id, program, reference, shapes, **fields)
