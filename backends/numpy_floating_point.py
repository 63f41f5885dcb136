"""NumPy's floating-point warnings, turned off for a while (backward passes, compiled replays).

NumPy keeps its error state in a context variable; setting that variable to the
value it has inside ``np.errstate(all="ignore")`` costs a fraction of entering
``np.errstate`` itself, which counts once per backward pass of a small model.
Where a NumPy release keeps it elsewhere, ``np.errstate`` is used as it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["WarningsOff"]


def _error_state_variable() -> tuple[Any, Any] | None:
    """NumPy's context variable of the error state and its value with every warning off."""
    try:
        from numpy._core import _ufunc_config
    except ImportError:
        return None
    variable = getattr(_ufunc_config, "_extobj_contextvar", None)
    if variable is None:
        return None
    with np.errstate(all="ignore"):
        ignoring = variable.get()
    return variable, ignoring


_STATE = _error_state_variable()


class WarningsOff:
    """A context manager: NumPy's floating-point warnings off inside it (one use each)."""

    __slots__ = ("_token",)
    _token: Any  # the context variable's token, or the np.errstate entered
    #: NumPy's context variable and its value with the warnings off, set and reset
    #: directly by the engine where a with statement costs too much (or None).
    context_variable = _STATE

    def __enter__(self) -> None:
        if _STATE is None:
            self._token = np.errstate(all="ignore")
            self._token.__enter__()
        else:
            self._token = _STATE[0].set(_STATE[1])

    def __exit__(self, *exc: Any) -> None:
        if _STATE is None:
            self._token.__exit__(*exc)
        else:
            _STATE[0].reset(self._token)
