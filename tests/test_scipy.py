"""SciPy's Array API functions on Tensors: differentiated, or refused, never cut silently.

SciPy reads ``SCIPY_ARRAY_API`` once, when it is imported, so the functions run
in a fresh interpreter with it set. Each is classified by what it does with a
Tensor that requires grad; the classes are those listed in docs/array_api.rst.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("scipy")

DIFFERENTIATED = [
    "special.logsumexp",
    "special.softmax",
    "special.xlogy",
    "stats.moment",
    "stats.skew",
    "stats.kurtosis",
    "stats.variation",
    "stats.gmean",
    "special.expit",
    "special.logit",
    "special.erf",
    "special.gammaln",
    "special.erfinv",
    "stats.zscore",  # divides, then changes the quotient in place: divide saves its inputs
    # SciPy calls the namespace's own special functions where it has them
    "special.ndtri",
    "special.i0",
    "special.log_ndtr",
]
# Computed by NumPy after converting the input: refused instead of cutting the graph.
REFUSED_CONVERSION = ["special.spence"]
# Modify in place a value that their backward pass needs.
REFUSED_IN_PLACE = ["special.log_softmax"]

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import plugrad, scipy.special as special, scipy.stats as stats

    x0 = np.array([0.3, 0.7, 0.2, 0.4])  # inside every domain used here
    calls = {
        "special.logsumexp": special.logsumexp, "special.softmax": special.softmax,
        "special.xlogy": lambda x: special.xlogy(x, x * x + 1.0),
        "stats.moment": lambda x: stats.moment(x, 3), "stats.skew": stats.skew,
        "stats.kurtosis": stats.kurtosis, "stats.variation": stats.variation,
        "stats.gmean": stats.gmean, "special.expit": special.expit,
        "special.logit": special.logit, "special.erf": special.erf,
        "special.gammaln": special.gammaln, "special.log_softmax": special.log_softmax,
        "stats.zscore": stats.zscore, "special.erfinv": special.erfinv,
        "special.ndtri": special.ndtri, "special.i0": special.i0,
        "special.log_ndtr": special.log_ndtr, "special.spence": special.spence,
    }
    results = {}
    for name in sys.argv[1:]:
        f = calls[name]
        x = plugrad.asarray(x0.copy(), requires_grad=True)
        try:
            y = f(x)
        except plugrad.errors.PlugradError as exc:
            results[name] = type(exc).__name__
            continue
        if not y.requires_grad:
            results[name] = "cut"
            continue
        try:
            (y * plugrad.asarray([1.0, -2.0, 3.0, 0.5])[: y.size]).sum().backward()
        except plugrad.errors.PlugradError as exc:
            results[name] = type(exc).__name__
            continue
        numeric = []
        for i in range(4):
            up, down = x0.copy(), x0.copy()
            up[i] += 1e-6
            down[i] -= 1e-6
            w = np.array([1.0, -2.0, 3.0, 0.5])[: y.size]
            numeric.append((float((f(up) * w).sum()) - float((f(down) * w).sum())) / 2e-6)
        ok = np.allclose(x.grad.numpy(), numeric, rtol=1e-5, atol=1e-7)
        results[name] = "gradient" if ok else f"wrong gradient {x.grad.tolist()} {numeric}"
    print(json.dumps(results))
    """
)


def test_scipy_functions_are_differentiated_or_refused() -> None:
    names = DIFFERENTIATED + REFUSED_CONVERSION + REFUSED_IN_PLACE
    env = {**os.environ, "SCIPY_ARRAY_API": "1"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *names], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.strip().splitlines()[-1])
    expected = {name: "gradient" for name in DIFFERENTIATED}
    expected.update({name: "BackwardError" for name in REFUSED_CONVERSION})
    expected.update({name: "InPlaceModificationError" for name in REFUSED_IN_PLACE})
    assert results == expected
