"""L-BFGS: a quasi-Newton method that re-evaluates the loss through a closure."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from .. import inplace as _inplace
from .. import lazy as _lazy
from ..errors import ArgumentError, DtypeError, InvalidArgumentError, type_name
from ..grad_mode import enable_grad
from ..tensor import Tensor
from .checks import check_int, check_number
from .optimizer import Optimizer, ParamsT
from .updates import complex_from_pairs, is_complex, overwrite, real_pairs, state_tensor

__all__ = ["LBFGS"]

_NUMBERS = ("func_evals", "n_iter", "t", "H_diag", "prev_loss")
_VECTORS = ("d", "prev_flat_grad")
_HISTORIES = ("old_dirs", "old_stps")


class LBFGS(Optimizer):
    r"""L-BFGS (Nocedal, 1980), with PyTorch's options, iterations and line search.

    Each :meth:`step` runs up to ``max_iter`` iterations: it takes the
    direction :math:`d = -H g`, where :math:`H` approximates the inverse
    Hessian from the last ``history_size`` pairs of parameter and gradient
    changes, and moves the parameters along it by ``lr`` (the first iteration
    ever by ``min(1, 1 / |g|_1) * lr``), or by a step length from a line search
    satisfying the strong Wolfe conditions. It stops early when the gradient's
    largest entry is at most ``tolerance_grad``, or when the loss or the
    parameters change by less than ``tolerance_change``.

    Parameters
    ----------
    params : iterable of Tensor
        Leaf tensors that require grad, in a single group (L-BFGS treats them
        as one vector).
    lr : float, default 1
        Learning rate: the step length along the direction (the initial
        guess of the line search).
    max_iter : int, default 20
        Iterations per :meth:`step`.
    max_eval : int, optional
        Loss evaluations per :meth:`step`, ``max_iter * 5 // 4`` by default.
    tolerance_grad : float, default 1e-7
        Stop when every gradient entry is at most this in magnitude.
    tolerance_change : float, default 1e-9
        Stop when the loss or the parameters change by less than this.
    history_size : int, default 100
        How many updates the inverse-Hessian approximation remembers.
    line_search_fn : {None, "strong_wolfe"}
        ``None``: fixed steps of ``lr``; ``"strong_wolfe"``: a line search
        (cubic interpolation) that satisfies the strong Wolfe conditions.

    Notes
    -----
    :meth:`step` needs a closure: it evaluates the loss several times. The
    state (directions, step lengths, history) is kept in the state of the
    first parameter, as PyTorch does; the tensors there are flat vectors over
    all parameters. A complex parameter counts as two real numbers per entry,
    its real and imaginary parts side by side in those (real) vectors, as in
    PyTorch. Parameter groups are not supported.

    Each iteration reads values on the host (the loss, dot products) to
    decide what to do next, so under :func:`plugrad.compile` the whole step
    runs eagerly, the closure included: it cannot be captured as array code.

    Examples
    --------
    On a quadratic, L-BFGS with a line search finds the minimum in one step:

    >>> import plugrad
    >>> w = plugrad.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = plugrad.optim.LBFGS([w], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = ((w - plugrad.tensor([3.0, 4.0])) ** 2 * plugrad.tensor([1.0, 10.0])).sum()
    ...     loss.backward()
    ...     return loss
    >>> loss = opt.step(closure)
    >>> w
    tensor([3., 4.], requires_grad=True)
    """

    #: During a step, where views are copies: the parameters' views its writes update.
    _followers: tuple[tuple[Tensor, Any], ...] | list[tuple[Tensor, Any]] = ()

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        if max_eval is None and isinstance(max_iter, int):
            max_eval = max_iter * 5 // 4
        super().__init__(params, self._defaults_from(locals()))

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Refused once there is a group: L-BFGS optimizes a single group of parameters.

        Examples
        --------
        >>> import plugrad
        >>> opt = plugrad.optim.LBFGS([plugrad.zeros(2, requires_grad=True)])
        >>> opt.add_param_group({"params": [plugrad.zeros(1, requires_grad=True)]})
        Traceback (most recent call last):
            ...
        plugrad.errors.InvalidArgumentError: LBFGS optimizes a single parameter group; ...
        """
        if self.param_groups:
            raise InvalidArgumentError(
                "LBFGS optimizes a single parameter group; build a new LBFGS over all the "
                "tensors instead of adding a group"
            )
        super().add_param_group(param_group)

    def _check_options(self, group: dict[str, Any]) -> None:
        check_number("lr", group["lr"])
        check_int("max_iter", group["max_iter"], at_least=1)
        check_int("max_eval", group["max_eval"], at_least=1)
        check_number("tolerance_grad", group["tolerance_grad"])
        check_number("tolerance_change", group["tolerance_change"])
        check_int("history_size", group["history_size"], at_least=1)
        if group["line_search_fn"] not in (None, "strong_wolfe"):
            raise InvalidArgumentError(
                f"line_search_fn must be None or 'strong_wolfe', got {group['line_search_fn']!r}"
            )

    def _check_state(self, param: Tensor, state: Mapping[str, Any], group: dict[str, Any]) -> None:
        known = {*_NUMBERS, *_VECTORS, *_HISTORIES, "ro", "al"}
        unknown = set(state) - known
        if unknown:
            raise InvalidArgumentError(
                f"LBFGS keeps {sorted(known)} per parameter, not {sorted(unknown)}"
            )
        size = _flat_size(group["params"])
        for key in _VECTORS:
            if state.get(key) is not None:
                _check_vector(key, state[key], size)
        for key in _HISTORIES:
            if key in state:
                if not isinstance(state[key], list | tuple):
                    raise ArgumentError(f"LBFGS state {key!r} must be a list of tensors")
                for vector in state[key]:
                    _check_vector(key, vector, size)

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore the state and options saved by :meth:`state_dict` (see :class:`Optimizer`).

        Examples
        --------
        >>> import plugrad
        >>> w = plugrad.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = plugrad.optim.LBFGS([w], max_iter=3)
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = (w**4 + w**2).sum()
        ...     loss.backward()
        ...     return loss
        >>> _ = opt.step(closure)
        >>> again = plugrad.optim.LBFGS([w])
        >>> again.load_state_dict(opt.state_dict())
        >>> again.state[w]["n_iter"], len(again.state[w]["old_dirs"])
        (2, 1)
        """
        super().load_state_dict(state_dict)  # (the histories' tensors cast and copied too)
        params = self.param_groups[0]["params"]
        if params and is_complex(params[0]):
            # Cast to the first parameter's complex dtype, as every state tensor is; L-BFGS's
            # are real (vectors, and PyTorch's 0-d ro, t, ...): back to that dtype's reals.
            entry = self.state.get(params[0], {})
            for key, value in entry.items():
                if isinstance(value, list | tuple):
                    entry[key] = [_real_part(v) if isinstance(v, Tensor) else v for v in value]
                elif isinstance(value, Tensor):
                    entry[key] = _real_part(value)
        for entry in self.state.values():
            # Numbers as numbers: PyTorch saves ro (and H_diag, t) as 0-d tensors, which met
            # the raw arrays of a step in a product with no rule for them (a TypeError).
            if "ro" in entry:
                entry["ro"] = [float(value) for value in entry["ro"]]
            # PyTorch's scratch list (None where unset), which each iteration computes anew.
            entry.pop("al", None)
            for key in ("t", "H_diag", "prev_loss"):
                if isinstance(entry.get(key), Tensor):
                    entry[key] = float(entry[key])

    # -- flat views of the parameters -----------------------------------------------------

    def _gather_flat_grad(self) -> Any:
        params = self.param_groups[0]["params"]
        xp = params[0]._device.xp
        pieces = []
        for param in params:
            grad = param._grad
            if grad is None:
                dtype = param._array.dtype
                if is_complex(param):  # (finfo of a complex dtype: its real dtype's)
                    pieces.append(xp.zeros(2 * param.size, dtype=xp.finfo(dtype).dtype))
                else:
                    pieces.append(xp.zeros(param.size, dtype=dtype))
            elif is_complex(param):
                pieces.append(xp.reshape(real_pairs(xp, grad._array), (-1,)))
            else:
                pieces.append(xp.reshape(grad._array, (-1,)))
        return xp.concat(pieces)

    def _add_grad(self, step_size: float, update: Any) -> None:
        offset = 0
        for param in self.param_groups[0]["params"]:
            xp = param._device.xp
            array = param._array
            if is_complex(param):
                size = 2 * param.size
                pairs = xp.reshape(update[offset : offset + size], (*param.shape, 2))
                # Each part moves as a real number does (no complex product with step_size).
                array += complex_from_pairs(xp, step_size * pairs, array.dtype)
            else:
                size = param.size
                array += step_size * xp.reshape(update[offset : offset + size], param.shape)
            param._array = array  # the same object, unless the backend's arrays are immutable
            param._bump_version()
            offset += size
        self._follow_writes()

    def _clone_param(self) -> list[Any]:
        return [p._device.xp.asarray(p._array, copy=True) for p in self.param_groups[0]["params"]]

    def _set_param(self, arrays: list[Any]) -> None:
        for param, array in zip(self.param_groups[0]["params"], arrays):
            param._array = overwrite(param._device.xp, param._array, array)
            param._bump_version()
        self._follow_writes()

    def _follow_writes(self) -> None:
        """Where views are copies (JAX, Dask): bring the parameters' views up to date."""
        if self._followers:
            _inplace.follow_raw_writes(self._followers)

    def _directional_evaluate(
        self, closure: Callable[[], Any], x: list[Any], t: float, d: Any
    ) -> tuple[float, Any]:
        self._add_grad(t, d)
        with enable_grad():
            loss = _loss_value(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # -- the step ---------------------------------------------------------------------------

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Run up to ``max_iter`` L-BFGS iterations; ``closure`` evaluates the loss.

        Parameters
        ----------
        closure : callable
            Clears the gradients, computes the loss, calls ``backward()`` and
            returns the loss. It runs with grad mode on.

        Returns
        -------
        object
            What the first call of ``closure`` returned (the loss before the step).

        Examples
        --------
        See :class:`LBFGS`.
        """
        if closure is None or not callable(closure):
            raise ArgumentError(
                "LBFGS.step() needs a closure that clears the gradients, computes the loss, "
                "calls backward() and returns the loss: opt.step(closure)"
            )
        self._check_lr_set()
        params = self.param_groups[0]["params"]
        # Found (or the step refused) before the closure's first evaluation writes anything.
        self._followers = (
            _inplace.views_to_follow(params, "LBFGS.step()") if _inplace.copies_in_use else []
        )
        try:
            return self._iterate(closure)
        finally:
            self._followers = ()

    def _iterate(self, closure: Callable[[], Any]) -> Any:
        group = self.param_groups[0]
        params = group["params"]
        xp = params[0]._device.xp
        backend = params[0]._device.backend
        lr, max_iter, max_eval = float(group["lr"]), group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]

        with enable_grad():
            orig_loss = closure()
        loss = _loss_value(orig_loss)  # (refused before the step counts or makes state)
        self._step_count += 1

        # As PyTorch's, the state is all in the first parameter's entry.
        state = self.state.setdefault(params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if _abs_max(xp, flat_grad) <= tolerance_grad:
            return orig_loss

        d = _array_of(state.get("d"))
        t = state.get("t")
        old_dirs = [v._array for v in state.get("old_dirs", [])]
        old_stps = [v._array for v in state.get("old_stps", [])]
        ro = list(state.get("ro", []))
        h_diag = state.get("H_diag", 1.0)
        prev_flat_grad = _array_of(state.get("prev_flat_grad"))
        prev_loss = state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                h_diag = 1.0
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = _dot(xp, y, s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:  # forget the oldest pair
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / _dot(xp, y, y)
                # The two-loop recursion: d = -H g.
                al = [0.0] * len(old_dirs)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = _dot(xp, old_stps[i], q) * ro[i]
                    q = q - al[i] * old_dirs[i]
                d = q * h_diag
                for i in range(len(old_dirs)):
                    be_i = _dot(xp, old_dirs[i], d) * ro[i]
                    d = d + (al[i] - be_i) * old_stps[i]

            if backend.lazy:  # each float() below computes d: its graph kept bounded
                _lazy.settle(backend, [d, flat_grad, *old_dirs[-1:], *old_stps[-1:]])
            prev_flat_grad = xp.asarray(flat_grad, copy=True)
            prev_loss = loss

            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(xp.sum(xp.abs(flat_grad)))) * lr
            else:
                t = lr
            gtd = _dot(xp, flat_grad, d)
            if gtd > -tolerance_change:  # not a descent direction any more
                break

            evals = 0
            if group["line_search_fn"] is not None:
                start = self._clone_param()

                def evaluate(x: list[Any], step: float, direction: Any) -> tuple[float, Any]:
                    return self._directional_evaluate(closure, x, step, direction)

                loss, flat_grad, t, evals = _strong_wolfe(
                    xp, evaluate, start, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals
                )
                self._add_grad(t, d)
                converged = _abs_max(xp, flat_grad) <= tolerance_grad
            else:
                self._add_grad(t, d)
                converged = False
                if n_iter != max_iter:  # the last iteration's loss would go unused
                    with enable_grad():
                        loss = _loss_value(closure())
                    flat_grad = self._gather_flat_grad()
                    converged = _abs_max(xp, flat_grad) <= tolerance_grad
                    evals = 1
            current_evals += evals
            state["func_evals"] += evals

            if n_iter == max_iter or current_evals >= max_eval or converged:
                break
            if _abs_max(xp, d * t) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        first = params[0]
        state["d"] = None if d is None else state_tensor(first, d)
        state["t"] = t
        state["old_dirs"] = [state_tensor(first, v) for v in old_dirs]
        state["old_stps"] = [state_tensor(first, v) for v in old_stps]
        state["ro"] = ro
        state["H_diag"] = h_diag
        state["prev_flat_grad"] = state_tensor(first, prev_flat_grad)
        state["prev_loss"] = prev_loss
        return orig_loss


def _flat_size(params: list[Tensor]) -> int:
    """The length of L-BFGS's flat vectors: two entries per element of a complex parameter."""
    return sum(2 * p.size if is_complex(p) else p.size for p in params)


def _real_part(vector: Tensor) -> Tensor:
    return state_tensor(vector, vector._device.xp.real(vector._array))


def _check_vector(key: str, value: Any, size: int) -> None:
    if not isinstance(value, Tensor):
        raise ArgumentError(f"LBFGS state {key!r} must hold Tensors, got {type_name(value)}")
    if is_complex(value):
        raise DtypeError(
            f"LBFGS state {key!r} is {value.dtype.name}, but L-BFGS's flat vectors are real (a "
            "complex parameter's real and imaginary parts are two entries of them); the state "
            "dict belongs to another optimizer"
        )
    if value.shape != (size,):
        raise InvalidArgumentError(
            f"LBFGS state {key!r} has shape {value.shape}, but the parameters have {size} "
            "elements in all; the state dict belongs to other parameters"
        )


def _array_of(value: Tensor | None) -> Any:
    return None if value is None else value._array


def _dot(xp: Any, a: Any, b: Any) -> float:
    return float(xp.vecdot(a, b))


def _abs_max(xp: Any, a: Any) -> float:
    return float(xp.max(xp.abs(a)))


def _cubic_interpolate(
    x1: float,
    f1: float,
    g1: float,
    x2: float,
    f2: float,
    g2: float,
    bounds: tuple[float, float] | None = None,
) -> float:
    """The minimum of the cubic through two points with slopes, clipped to ``bounds``."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = math.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(
    xp: Any,
    obj_func: Callable[[list[Any], float, Any], tuple[float, Any]],
    x: list[Any],
    t: float,
    d: Any,
    f: float,
    g: Any,
    gtd: float,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple[float, Any, float, int]:
    """A step length along ``d`` satisfying the strong Wolfe conditions (PyTorch's search)."""
    d_norm = _abs_max(xp, d)
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = _dot(xp, g_new, d)

    # Bracket an interval containing a point that satisfies the conditions.
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    bracket: list[float] = []
    bracket_f: list[float] = []
    bracket_g: list[Any] = []
    bracket_gtd: list[float] = []
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(
            t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step)
        )
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new, gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(xp, g_new, d)
        ls_iter += 1

    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]

    # Zoom: shrink the bracket until a point satisfies the conditions.
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(
            bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]
        )
        # Too close to an end of the bracket twice in a row (or outside it): move 10% in.
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False

        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(xp, g_new, d)
        ls_iter += 1

        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            # Not a sufficient decrease, or not below the lowest point: the new high end.
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new, gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new, gtd_new

    t = bracket[low_pos]
    return bracket_f[low_pos], bracket_g[low_pos], t, ls_func_evals


def _loss_value(loss: Any) -> float:
    """The closure's loss as a float: a one-element tensor or a real number."""
    try:
        return float(loss)
    except (TypeError, ValueError) as error:
        kind = InvalidArgumentError if isinstance(error, ValueError) else ArgumentError
        raise kind(
            f"LBFGS.step(): the closure returned {loss!r:.60} (a {type(loss).__name__}), which "
            "is not a loss; return the loss, a one-element tensor or a number, from the "
            "closure (after calling backward() on it)"
        ) from None
