"""The new ops: ``softplus`` and ``smooth_max``, each in one place.

Each op has

- a *generic kernel* written against the Array API namespace ``xp``, so it runs
  on every backend plugrad has (numpy, cupy, array-api-strict, ...);
- kernels for particular backends: NumPy's own stable ufunc, and a fused CuPy
  kernel (see :mod:`plugrad_myops._cupy`, imported only when a cupy array arrives);
- one backward rule per input, written against ``xp`` with operators and
  ``xp.*`` functions only. plugrad calls a rule with the backend's namespace and
  raw arrays for an ordinary backward pass, and with the ``plugrad`` namespace
  and Tensors under ``create_graph=True``, so the same rule gives second and
  higher derivatives. A rule may call any registered op through ``xp``,
  including this plugin's own (``xp.softplus`` below).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from plugrad.opdef import op

from plugrad_myops import _cupy

_LOG2 = math.log(2.0)


# -- softplus -------------------------------------------------------------------------


def _softplus(xp: Any, x: Any, /) -> Any:
    # log(1 + exp(x)) overflows for large x; this form never exponentiates a positive number.
    return xp.maximum(x, xp.zeros_like(x)) + xp.log1p(xp.exp(-xp.abs(x)))


def _softplus_numpy(xp: Any, x: Any, /) -> Any:
    return np.logaddexp(x, 0)  # log(exp(x) + exp(0)), one stable ufunc


def _softplus_grad(xp: Any, g: Any, ans: Any, x: Any) -> Any:
    # sigmoid(x) = exp(-softplus(-x)): never overflows, and differentiable again.
    return g * xp.exp(-xp.softplus(-x))


softplus = op(
    "softplus",
    _softplus,
    vjp=_softplus_grad,
    kernels={"numpy": _softplus_numpy, "cupy": _cupy.softplus},
    methods="softplus",
    doc="""Softplus, ``log(1 + exp(x))`` element-wise, computed without overflow.

    A smooth ReLU: about ``x`` for large ``x``, about ``exp(x)`` for very negative
    ``x``. Its derivative is the logistic sigmoid. Also ``x.softplus()``.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([-2.0, 0.0, 2.0], requires_grad=True)
    >>> y = x.softplus()
    >>> y
    tensor([0.1269, 0.6931, 2.1269], grad_fn=<SoftplusBackward>)
    >>> y.sum().backward()
    >>> x.grad  # the logistic sigmoid
    tensor([0.1192, 0.5000, 0.8808])
    >>> plugrad.ops.softplus(plugrad.tensor([-1000.0, 1000.0]))
    tensor([   0., 1000.])
    """,
)


# -- smooth_max ------------------------------------------------------------------------


def _smooth_max(xp: Any, x1: Any, x2: Any, /) -> Any:
    m = xp.maximum(x1, x2)
    # NOTE: where x1 == x2 (including equal infinities) the difference below is 0 or nan;
    # the first branch gives the exact answer there.
    return xp.where(x1 == x2, m + _LOG2, m + xp.log1p(xp.exp(-xp.abs(x1 - x2))))


def _logaddexp_numpy(xp: Any, x1: Any, x2: Any, /) -> Any:
    return np.logaddexp(x1, x2)


smooth_max = op(
    "smooth_max",
    _smooth_max,
    vjp=(
        # d/dx1 = exp(x1) / (exp(x1) + exp(x2)) = exp(x1 - ans); x1 - ans <= 0, so no overflow.
        lambda xp, g, ans, x1, x2: g * xp.exp(x1 - ans),
        lambda xp, g, ans, x1, x2: g * xp.exp(x2 - ans),
    ),
    kernels={"numpy": _logaddexp_numpy, "cupy": _cupy.smooth_max},
    broadcasting=True,
    doc="""A smooth maximum, ``log(exp(x1) + exp(x2))``, element-wise and without overflow.

    Examples
    --------
    >>> import plugrad
    >>> a = plugrad.tensor([1000.0, 0.0], requires_grad=True)
    >>> plugrad.ops.smooth_max(a, 1000.0)
    tensor([1000.6932, 1000.0000], grad_fn=<SmoothMaxBackward>)
    """,
)
