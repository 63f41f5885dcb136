"""``plugrad.func``: function transforms built on the reverse-mode engine.

:func:`vjp` and :func:`jvp` give vector-Jacobian and Jacobian-vector
products, :func:`jacobian` whole Jacobians (by rows in reverse mode, by
columns in forward mode), :func:`hessian` and :func:`hvp` second
derivatives. Forward mode is computed as the reverse mode of a reverse pass
(the "double-vjp" construction), so every op with a twice-differentiable
backward supports it.

The transforms compose (``hessian`` is ``jacobian`` of ``jacobian``), and
their results stay differentiable with respect to arguments that require
grad; for arguments that do not, results come back detached.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import ops as _ops
from .creation import zeros_like
from .dtypes import is_differentiable
from .engine import grad
from .errors import DtypeError
from .grad_mode import enable_grad
from .gradcheck import basis
from .tensor import Tensor

__all__ = ["hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jvp", "vjp"]

Function = Callable[..., Any]


def _tuple(value: Any, what: str) -> tuple[Tensor, ...]:
    values = value if isinstance(value, tuple) else (value,)
    for index, v in enumerate(values):
        if not isinstance(v, Tensor):
            raise TypeError(f"{what} {index} is a {type(v).__name__}; expected a Tensor")
    return values


def _tracked(primals: Sequence[Any]) -> list[Tensor]:
    """Primals that record their uses: themselves if they already do, else fresh leaves."""
    tracked = []
    for index, p in enumerate(_tuple(tuple(primals), "primal")):
        if not is_differentiable(p.dtype):
            raise DtypeError(
                f"primal {index} is {p.dtype.name}; transforms differentiate with respect to "
                "floating-point (or complex) tensors only"
            )
        tracked.append(p if p.requires_grad else p.detach().requires_grad_())
    return tracked


def _finish(value: Tensor, keep_graph: bool) -> Tensor:
    return value if keep_graph else value.detach()


def vjp(func: Function, *primals: Tensor) -> tuple[Any, Callable[..., tuple[Tensor, ...]]]:
    """Evaluate ``func(*primals)`` and return it with its vector-Jacobian product function.

    Returns
    -------
    output : Tensor or tuple of Tensor
        ``func(*primals)``.
    vjp_fn : callable
        ``vjp_fn(*cotangents)`` (one per output, of its shape) returns one
        gradient per primal: ``cotangent @ d output / d primal``.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0])
    >>> out, vjp_fn = plugrad.func.vjp(lambda t: t * t, x)
    >>> vjp_fn(plugrad.ones(2))
    (tensor([2., 4.]),)
    """
    keep = any(p.requires_grad for p in _tuple(primals, "primal"))
    inputs = _tracked(primals)
    with enable_grad():
        output = func(*inputs)
    outputs = _tuple(output, "output")

    def vjp_fn(*cotangents: Tensor) -> tuple[Tensor, ...]:
        if len(cotangents) != len(outputs):
            raise ValueError(
                f"vjp_fn takes one cotangent per output of the function: {len(outputs)}, "
                f"got {len(cotangents)}"
            )
        keep_result = keep or any(c.requires_grad for c in _tuple(cotangents, "cotangent"))
        with enable_grad():
            grads = grad(outputs, inputs, cotangents, True, True, allow_unused=True)
        return tuple(
            _finish(zeros_like(p) if g is None else g, keep_result) for g, p in zip(grads, inputs)
        )

    if isinstance(output, tuple):
        return tuple(_finish(o, keep) for o in output), vjp_fn
    return _finish(output, keep), vjp_fn


def jvp(func: Function, primals: Sequence[Tensor], tangents: Sequence[Tensor]) -> tuple[Any, Any]:
    """Evaluate ``func(*primals)`` and its Jacobian-vector product with ``tangents``.

    Computed as the derivative, with respect to a dummy cotangent ``u``, of
    ``<u, J>`` contracted with the tangents: two reverse passes.

    Returns
    -------
    output, jvp_out
        ``func(*primals)`` and ``J @ tangents`` (a tuple if ``func`` returns one).

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0])
    >>> plugrad.func.jvp(lambda t: t**3, (x,), (plugrad.ones(2),))
    (tensor([1., 8.]), tensor([ 3., 12.]))
    """
    primals = _tuple(tuple(primals), "primal")
    tangents = _tuple(tuple(tangents), "tangent")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp needs one tangent per primal: {len(primals)}, got {len(tangents)}")
    for index, (p, t) in enumerate(zip(primals, tangents)):
        if t.shape != p.shape:
            raise ValueError(f"tangent {index} has shape {t.shape}, its primal {p.shape}")
    keep = any(v.requires_grad for v in (*primals, *tangents))
    inputs = _tracked(primals)
    with enable_grad():
        output = func(*inputs)
        outputs = _tuple(output, "output")
        dummies = [zeros_like(o).requires_grad_() for o in outputs]
        transposed = grad(outputs, inputs, dummies, True, True, allow_unused=True)
        pairs = [(g, t) for g, t in zip(transposed, tangents) if g is not None and g.requires_grad]
        if pairs:
            columns = grad(
                [g for g, _ in pairs], dummies, [t for _, t in pairs], True, True, allow_unused=True
            )
        else:
            columns = (None,) * len(outputs)
    products = tuple(
        _finish(zeros_like(o) if c is None else c, keep) for c, o in zip(columns, outputs)
    )
    if isinstance(output, tuple):
        return tuple(_finish(o, keep) for o in output), products
    return _finish(output, keep), products[0]


def _argnums(argnums: int | tuple[int, ...], n: int) -> tuple[int, ...]:
    chosen = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not chosen or any(not -n <= a < n for a in chosen):
        raise ValueError(f"argnums {argnums!r} does not name arguments of a call with {n}")
    return tuple(a % n for a in chosen)


def jacobian(
    func: Function, argnums: int | tuple[int, ...] = 0, *, mode: str = "reverse"
) -> Function:
    """Return a function computing the Jacobian of ``func`` with respect to argument(s) ``argnums``.

    The Jacobian of an output of shape ``O`` with respect to an input of shape
    ``I`` has shape ``O + I``. ``mode="reverse"`` builds it one output element
    at a time (cheap for few outputs), ``mode="forward"`` one input element at
    a time (cheap for few inputs).

    Examples
    --------
    >>> import plugrad
    >>> jac = plugrad.func.jacobian(lambda t: t * t)
    >>> jac(plugrad.tensor([1.0, 3.0]))
    tensor([[2., 0.],
            [0., 6.]])
    """
    if mode not in ("reverse", "forward"):
        raise ValueError(f"mode must be 'reverse' or 'forward', got {mode!r}")

    def jacobian_of(*args: Any) -> Any:
        chosen = _argnums(argnums, len(args))

        def partial(*primals: Tensor) -> Any:
            full = list(args)
            for a, p in zip(chosen, primals):
                full[a] = p
            return func(*full)

        primals = [args[a] for a in chosen]
        if mode == "reverse":
            output, vjp_fn = vjp(partial, *primals)
            outputs = _tuple(output, "output")
            blocks = [[_rows(vjp_fn, outputs, k, i) for i in range(len(primals))]
                      for k in range(len(outputs))]  # fmt: skip
        else:
            output = partial(*primals)
            outputs = _tuple(output, "output")
            blocks = [[_columns(partial, primals, outputs, k, i) for i in range(len(primals))]
                      for k in range(len(outputs))]  # fmt: skip
        result = [b[0] if isinstance(argnums, int) else tuple(b) for b in blocks]
        return tuple(result) if isinstance(output, tuple) else result[0]

    return jacobian_of


def _rows(vjp_fn: Any, outputs: tuple[Tensor, ...], k: int, i: int) -> Tensor:
    out = outputs[k]
    rows = []
    for element in range(out.size):
        cotangents = [basis(o, element) if j == k else zeros_like(o) for j, o in enumerate(outputs)]
        rows.append(vjp_fn(*cotangents)[i])
    return _ops.reshape(_ops.stack(rows), out.shape + rows[0].shape)


def _columns(
    func: Function, primals: list[Tensor], outputs: tuple[Tensor, ...], k: int, i: int
) -> Tensor:
    x = primals[i]
    columns = []
    for element in range(x.size):
        tangents = [basis(p, element) if j == i else zeros_like(p) for j, p in enumerate(primals)]
        products = jvp(func, primals, tangents)[1]
        columns.append(products[k] if isinstance(products, tuple) else products)
    stacked = _ops.stack(columns, axis=-1)  # output shape + (number of input elements,)
    return _ops.reshape(stacked, outputs[k].shape + x.shape)


def jacrev(func: Function, argnums: int | tuple[int, ...] = 0) -> Function:
    """:func:`jacobian` in reverse mode."""
    return jacobian(func, argnums, mode="reverse")


def jacfwd(func: Function, argnums: int | tuple[int, ...] = 0) -> Function:
    """:func:`jacobian` in forward mode."""
    return jacobian(func, argnums, mode="forward")


def hessian(func: Function, argnums: int | tuple[int, ...] = 0) -> Function:
    """Return a function computing the Hessian of scalar-valued ``func``.

    Examples
    --------
    >>> import plugrad
    >>> h = plugrad.func.hessian(lambda t: plugrad.sum(t**3))
    >>> h(plugrad.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacobian(jacobian(func, argnums), argnums)


def hvp(
    func: Function, primals: Sequence[Tensor], tangents: Sequence[Tensor]
) -> tuple[Tensor, Any]:
    """Evaluate scalar-valued ``func(*primals)`` and its Hessian times ``tangents``.

    Uses two reverse passes and the symmetry of the Hessian, without forming it.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0])
    >>> plugrad.func.hvp(lambda t: plugrad.sum(t**3), (x,), (plugrad.ones(2),))
    (tensor(9.), (tensor([ 6., 12.]),))
    """
    primals = _tuple(tuple(primals), "primal")
    tangents = _tuple(tuple(tangents), "tangent")
    keep = any(v.requires_grad for v in (*primals, *tangents))
    inputs = _tracked(primals)
    with enable_grad():
        output = func(*inputs)
        if not isinstance(output, Tensor) or output.size != 1:
            raise ValueError("hvp needs a function that returns a single one-element tensor")
        gradients = grad(output, inputs, None, True, True, allow_unused=True)
        pairs = [(g, t) for g, t in zip(gradients, tangents) if g is not None and g.requires_grad]
        products = (
            grad([g for g, _ in pairs], inputs, [t for _, t in pairs], True, True, True)
            if pairs
            else (None,) * len(inputs)
        )
    return _finish(output, keep), tuple(
        _finish(zeros_like(p) if h is None else h, keep) for h, p in zip(products, inputs)
    )
