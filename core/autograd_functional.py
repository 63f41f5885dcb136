"""``plugrad.autograd.functional``: PyTorch's functional autograd API over :mod:`plugrad.func`.

PyTorch's ``torch.autograd.functional`` takes the inputs as one tensor or a
tuple of them and mirrors that structure in what it returns; these functions
do the same, computed by :mod:`plugrad.func` (which takes inputs as separate
arguments). The results are detached from the graph unless ``create_graph``
is true.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import func as _func
from .tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _as_tuple(inputs: Any, what: str) -> tuple[bool, tuple[Tensor, ...]]:
    """Whether ``inputs`` came as a tuple, and the tensors in it."""
    several = isinstance(inputs, (tuple, list))
    values = tuple(inputs) if several else (inputs,)
    for value in values:
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{what} must be a Tensor or a tuple of Tensors, got {type(value).__name__}"
            )
    return several, values


def _done(value: Any, create_graph: bool) -> Any:
    if isinstance(value, tuple):
        return tuple(_done(v, create_graph) for v in value)
    return value if create_graph or not isinstance(value, Tensor) else value.detach()


def _shaped(several: bool, values: tuple[Any, ...]) -> Any:
    return tuple(values) if several else values[0]


def jacobian(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of ``func`` at ``inputs``: for each output, per input, shape ``out + in``.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.autograd.functional.jacobian(lambda t: t * t, plugrad.tensor([1.0, 3.0]))
    tensor([[2., 0.],
            [0., 6.]])
    """
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f"strategy must be 'reverse-mode' or 'forward-mode', got {strategy!r}")
    several, values = _as_tuple(inputs, "inputs")
    argnums: int | tuple[int, ...] = tuple(range(len(values))) if several else 0
    mode = "reverse" if strategy == "reverse-mode" else "forward"
    return _done(_func.jacobian(func, argnums, mode=mode)(*values), create_graph)


def hessian(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of scalar-valued ``func`` at ``inputs`` (a tuple of tuples for tuple inputs).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.autograd.functional.hessian(lambda t: (t**3).sum(), plugrad.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    several, values = _as_tuple(inputs, "inputs")
    argnums: int | tuple[int, ...] = tuple(range(len(values))) if several else 0
    return _done(_func.hessian(func, argnums)(*values), create_graph)


def vjp(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """``func(*inputs)`` and ``v`` times its Jacobian (``v`` may be left out for a scalar output).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.autograd.functional import vjp
    >>> vjp(lambda t: t * t, plugrad.tensor([1.0, 2.0]), plugrad.ones(2))
    (tensor([1., 4.]), tensor([2., 4.]))
    """
    several, values = _as_tuple(inputs, "inputs")
    output, vjp_fn = _func.vjp(func, *values)
    if v is None:
        if isinstance(output, tuple) or output.size != 1:
            raise ValueError("vjp() needs v unless func returns a single one-element tensor")
        v = _func_ones_like(output)
    cotangents = tuple(v) if isinstance(v, (tuple, list)) else (v,)
    return _done(output, create_graph), _done(_shaped(several, vjp_fn(*cotangents)), create_graph)


def jvp(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """``func(*inputs)`` and its Jacobian times ``v`` (left out: a one-element input's 1).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.autograd.functional import jvp
    >>> jvp(lambda t: t * t, plugrad.tensor([1.0, 2.0]), plugrad.ones(2))
    (tensor([1., 4.]), tensor([2., 4.]))
    """
    _, values = _as_tuple(inputs, "inputs")
    if v is None:
        if len(values) != 1 or values[0].size != 1:
            raise ValueError("jvp() needs v unless the input is a single one-element tensor")
        v = _func_ones_like(values[0])
    _, tangents = _as_tuple(v, "v")
    output, product = _func.jvp(func, values, tangents)
    return _done(output, create_graph), _done(product, create_graph)


def hvp(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """Scalar-valued ``func(*inputs)`` and its Hessian times ``v``.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.autograd.functional import hvp
    >>> hvp(lambda t: (t**3).sum(), plugrad.tensor([1.0, 2.0]), plugrad.ones(2))
    (tensor(9.), tensor([ 6., 12.]))
    """
    several, values = _as_tuple(inputs, "inputs")
    if v is None:
        if len(values) != 1 or values[0].size != 1:
            raise ValueError("hvp() needs v unless the input is a single one-element tensor")
        v = _func_ones_like(values[0])
    _, tangents = _as_tuple(v, "v")
    output, products = _func.hvp(func, values, tangents)
    return _done(output, create_graph), _done(_shaped(several, products), create_graph)


def vhp(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    v: Any = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """``v`` times the Hessian of scalar-valued ``func``: :func:`hvp` (the Hessian is symmetric)."""
    return hvp(func, inputs, v, create_graph, strict)


def _func_ones_like(value: Tensor) -> Tensor:
    from .creation import ones_like

    return ones_like(value)
