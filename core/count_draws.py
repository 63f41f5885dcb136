"""Poisson and binomial variates: PyTorch's ``poisson`` and ``binomial``, and the draws of
:class:`~plugrad.distributions.Poisson` and :class:`~plugrad.distributions.Binomial`.

The variates are drawn exactly from plugrad's uniform draws, on every backend: by
inversion (a sequential search of the cumulative probabilities) where the mean is
small, and by Hörmann's transformed rejection with squeeze (PTRS for Poisson, BTRS for
binomial) where it is large. Each round works on the elements still waiting for a
value only, and the rounds go on while any is left. The arithmetic is in float64
where the device has it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

from . import dtypes as _dtypes
from . import grad_mode as _grad_mode
from . import ops as _ops
from .creation import arange, full
from .errors import ArgumentError, DtypeError, InvalidArgumentError, ShapeError
from .grad_mode import no_grad
from .plugins import _rules
from .pytorch_names import lgamma
from .random import DrawnFrom, Generator, rand
from .tensor import Tensor

__all__ = ["binomial", "poisson"]

#: Below this mean, inversion (a search of at most a few dozen steps); above, rejection.
_INVERSION_LIMIT = 10.0

State = dict[str, Tensor]
Step = Callable[[State], tuple[Tensor, Tensor, State]]


def working_dtype(like: Tensor) -> _dtypes.DType:
    """float64 where the device has it: log-factorials of large counts need its digits."""
    return _dtypes.float64 if _dtypes.float64 in like.device.dtypes else like.dtype


def _settle(index: Tensor, state: State, step: Step) -> tuple[list[Tensor], list[Tensor]]:
    """Apply ``step`` to the unsettled elements until every one has its value.

    ``step(state)`` returns ``(done, value, next_state)`` for the elements of
    ``state``; those done leave with their value, the others go on with
    ``next_state``. Returns the indices (taken from ``index``) and the values,
    in the order they settled.
    """
    indices, values = [], []
    while index.shape[0]:
        done, value, state = step(state)
        indices.append(index[done])
        values.append(value[done])
        left = _ops.logical_not(done)
        index = index[left]
        state = {name: part[left] for name, part in state.items()}
    return indices, values


def _assemble(size: int, like: Tensor, parts: list[tuple[list[Tensor], list[Tensor]]]) -> Tensor:
    """A flat tensor of ``size`` NaNs with the settled values written at their indices."""
    indices = [i for found, _ in parts for i in found]
    values = [v for _, found in parts for v in found]
    result = full((size,), math.nan, dtype=like.dtype, device=like.device)
    if not indices:
        return result
    return _ops.setitem(result, _ops.concat(values), key=_ops.concat(indices))


def _uniforms(like: Tensor, generator: Generator | None) -> Tensor:
    return rand(like.shape, dtype=like.dtype, device=like.device, generator=generator)


def _poisson_by_inversion(state: State) -> tuple[Tensor, Tensor, State]:
    """One step of the search for the first ``k`` whose cumulative probability reaches ``u``."""
    u, k, term, total, rate = (state[n] for n in ("u", "k", "term", "total", "rate"))
    k_next = k + 1
    term_next = term * rate / k_next
    total_next = total + term_next
    # NOTE: the sum stops growing once the terms fall below its last digit; u above it
    # (a chance of about 1e-16) takes the k reached.
    done = (u <= total) | (total_next == total)
    return done, k, {"u": u, "k": k_next, "term": term_next, "total": total_next, "rate": rate}


def _poisson_by_rejection(
    state: State, generator: Generator | None
) -> tuple[Tensor, Tensor, State]:
    """One proposal of Hörmann's PTRS (transformed rejection with squeeze), for rates >= 10."""
    rate = state["rate"]
    a, b, inv_alpha, v_r = state["a"], state["b"], state["inv_alpha"], state["v_r"]
    u = _uniforms(rate, generator) - 0.5
    v = _uniforms(rate, generator)
    us = 0.5 - _ops.abs(u)
    proper = us > 0  # u = -0.5 maps to infinity
    us = _ops.where(proper, us, 0.5)
    k = _ops.floor((2 * a / us + b) * u + rate + 0.43)
    in_support = proper & (k >= 0)
    squeezed = (us >= 0.07) & (v <= v_r)
    outside = (us < 0.013) & (v > us)
    k_safe = _ops.maximum(k, 0.0)
    log_pmf = -rate + k_safe * _ops.log(rate) - lgamma(k_safe + 1)
    tiny = _ops.maximum(v, 1e-300)
    under = _ops.log(tiny * inv_alpha / (a / (us * us) + b)) <= log_pmf
    done = in_support & (squeezed | (_ops.logical_not(outside) & under))
    return done, k, state


def draw_poisson(rate: Tensor, generator: Generator | None = None) -> Tensor:
    """Poisson variates of the rates of the flat ``rate`` (finite, non-negative), no gradient."""
    size = rate.shape[0]
    index = arange(size, device=rate.device)
    small = rate < _INVERSION_LIMIT
    lam = rate[small]
    term = _ops.exp(-lam)
    searched = {
        "u": _uniforms(lam, generator),
        "k": lam * 0,
        "term": term,
        "total": term,
        "rate": lam,
    }
    large = _ops.logical_not(small)
    lam = rate[large]
    b = 0.931 + 2.53 * _ops.sqrt(lam)
    proposed = {
        "rate": lam,
        "a": -0.059 + 0.02483 * b,
        "b": b,
        "inv_alpha": 1.1239 + 1.1328 / (b - 3.4),
        "v_r": 0.9277 - 3.6224 / (b - 2),
    }
    parts = [
        _settle(index[small], searched, _poisson_by_inversion),
        _settle(index[large], proposed, partial(_poisson_by_rejection, generator=generator)),
    ]
    return _assemble(size, rate, parts)


def _binomial_by_inversion(state: State) -> tuple[Tensor, Tensor, State]:
    """One step of the search for the first ``k`` whose cumulative probability reaches ``u``."""
    u, k, term, total, n, odds = (state[m] for m in ("u", "k", "term", "total", "n", "odds"))
    term_next = term * odds * (n - k) / (k + 1)
    total_next = total + term_next
    done = (u <= total) | (k >= n) | (total_next == total)  # (see _poisson_by_inversion)
    following = {"u": u, "k": k + 1, "term": term_next, "total": total_next, "n": n, "odds": odds}
    return done, k, following


def _binomial_by_rejection(
    state: State, generator: Generator | None
) -> tuple[Tensor, Tensor, State]:
    """One proposal of Hörmann's BTRS (transformed rejection with squeeze), for ``n p >= 10``."""
    n, a, b, c, v_r = state["n"], state["a"], state["b"], state["c"], state["v_r"]
    u = _uniforms(n, generator) - 0.5
    v = _uniforms(n, generator)
    us = 0.5 - _ops.abs(u)
    proper = us > 0
    us = _ops.where(proper, us, 0.5)
    k = _ops.floor((2 * a / us + b) * u + c)
    in_support = proper & (k >= 0) & (k <= n)
    squeezed = (us >= 0.07) & (v <= v_r)
    k_safe = _ops.minimum(_ops.maximum(k, 0.0), n)
    log_factorials = lgamma(k_safe + 1) + lgamma(n - k_safe + 1)
    log_ratio = state["h"] - log_factorials + (k_safe - state["m"]) * state["lpq"]
    tiny = _ops.maximum(v, 1e-300)
    under = _ops.log(tiny * state["alpha"] / (a / (us * us) + b)) <= log_ratio
    return in_support & (squeezed | under), k, state


def draw_binomial(n: Tensor, p: Tensor, generator: Generator | None = None) -> Tensor:
    """Binomial variates of the flat ``n`` and ``p``, no gradient; NaN where either is not
    finite."""
    size = n.shape[0]
    index = arange(size, device=n.device)
    flipped = p > 0.5  # draw the count of the less likely outcome, then flip it
    p = _ops.where(flipped, 1 - p, p)
    finite = _ops.isfinite(n) & _ops.isfinite(p)
    small = finite & (n * p < _INVERSION_LIMIT)
    n_, p_ = n[small], p[small]
    term = _ops.exp(n_ * _ops.log1p(-p_))  # p <= 1/2 and n p < 10: above exp(-14)
    searched = {
        "u": _uniforms(n_, generator), "k": n_ * 0, "term": term, "total": term, "n": n_,
        "odds": p_ / (1 - p_),
    }  # fmt: skip
    large = finite & _ops.logical_not(small)
    n_, p_ = n[large], p[large]
    spq = _ops.sqrt(n_ * p_ * (1 - p_))
    b = 1.15 + 2.53 * spq
    m = _ops.floor((n_ + 1) * p_)
    proposed = {
        "n": n_, "a": -0.0873 + 0.0248 * b + 0.01 * p_, "b": b, "c": n_ * p_ + 0.5,
        "v_r": 0.92 - 4.2 / b, "alpha": (2.83 + 5.1 / b) * spq, "lpq": _ops.log(p_ / (1 - p_)),
        "m": m, "h": lgamma(m + 1) + lgamma(n_ - m + 1),
    }  # fmt: skip
    parts = [
        _settle(index[small], searched, _binomial_by_inversion),
        _settle(index[large], proposed, partial(_binomial_by_rejection, generator=generator)),
    ]
    k = _assemble(size, n, parts)
    return _ops.where(flipped, n - k, k)


def _parameter(function: str, name: str, value: object) -> Tensor:
    if not isinstance(value, Tensor):
        raise ArgumentError(f"{function}() takes a Tensor as {name}, got {type(value).__name__}")
    if value.dtype.kind != "real floating":
        raise DtypeError(
            f"{function}() takes {name} of a real floating dtype (as PyTorch's), got "
            f"{value.dtype.name}; convert it first, e.g. {name}.float()"
        )
    return value


def _refuse_where(function: str, bad: Tensor, what: str) -> None:
    """Raise InvalidArgumentError saying ``what`` if any element of ``bad`` is true."""
    if _rules.any_true(_ops.any(bad), f"{function}(): {what}", InvalidArgumentError):
        raise InvalidArgumentError(f"{function}(): {what}")


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Draw a Poisson count for each rate in ``input``: a tensor of its shape and dtype.

    The rates must be finite and non-negative (PyTorch's gives a nonsense count for an
    infinite rate). Not differentiable: where ``input`` requires grad, so does the
    result (as in PyTorch), and its gradient for ``input`` is zero.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> counts = plugrad.poisson(plugrad.full((10000,), 4.0))
    >>> bool(abs(counts.mean() - 4.0) < 0.1), bool((counts == counts.round()).all())
    (True, True)
    """
    rate = _parameter("poisson", "input", input)
    with no_grad():
        flat = _ops.reshape(rate.detach(), (-1,))
        _refuse_where(
            "poisson", _ops.logical_not(_ops.isfinite(flat) & (flat >= 0)),
            "every rate must be finite and non-negative; some are negative, infinite or NaN",
        )  # fmt: skip
        drawn = draw_poisson(_ops.astype(flat, working_dtype(flat)), generator)
        result = _ops.astype(_ops.reshape(drawn, rate.shape), rate.dtype)
    if _grad_mode._state.enabled and rate._requires_grad:
        return DrawnFrom.apply(result, rate)
    return result


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """Draw the number of successes of ``count`` trials of success probability ``prob``,
    element-wise (the two broadcast together), in ``count``'s dtype.

    Each count must be a whole number, finite and non-negative, and each probability in
    ``[0, 1]`` (PyTorch's draws a count from a fractional or negative one, or from a
    probability above 1, without a word). Not differentiable: where an input requires
    grad, so does the result (as in PyTorch), and its gradients are zero.

    Examples
    --------
    >>> import plugrad
    >>> _ = plugrad.manual_seed(0)
    >>> successes = plugrad.binomial(plugrad.full((10000,), 20.0), plugrad.tensor(0.25))
    >>> bool(abs(successes.mean() - 5.0) < 0.1), int(successes.max()) <= 20
    (True, True)
    """
    count = _parameter("binomial", "count", count)
    prob = _parameter("binomial", "prob", prob)
    if prob.dtype is not count.dtype:
        raise DtypeError(
            f"binomial() takes count and prob of one dtype, got {count.dtype.name} and "
            f"{prob.dtype.name}; convert one, e.g. prob.to(count.dtype)"
        )
    with no_grad():
        try:
            n, p = _ops.broadcast_tensors(count.detach(), prob.detach())
        except ShapeError as error:
            raise ShapeError(
                f"binomial(): count of shape {count.shape} and prob of shape {prob.shape} do "
                "not broadcast together"
            ) from error
        shape = n.shape
        n, p = (_ops.reshape(t, (-1,)) for t in (n, p))
        _refuse_where(
            "binomial", _ops.logical_not(_ops.isfinite(n) & (n >= 0) & (n == _ops.floor(n))),
            "every count must be a finite, non-negative whole number; some are not",
        )  # fmt: skip
        _refuse_where(
            "binomial", _ops.logical_not((p >= 0) & (p <= 1)),
            "every probability must be in [0, 1]; some are outside it or NaN",
        )  # fmt: skip
        dtype = working_dtype(n)
        drawn = draw_binomial(_ops.astype(n, dtype), _ops.astype(p, dtype), generator)
        result = _ops.astype(_ops.reshape(drawn, shape), count.dtype)
    if _grad_mode._state.enabled and (count._requires_grad or prob._requires_grad):
        return DrawnFrom.apply(result, count, prob)
    return result
