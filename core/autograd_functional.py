"""``plugrad.autograd.functional``: PyTorch's functional autograd API over :mod:`plugrad.func`.

PyTorch's ``torch.autograd.functional`` takes the inputs as one tensor or a
tuple of them and mirrors that structure in what it returns; these functions
do the same, computed by :mod:`plugrad.func` (which takes inputs as separate
arguments). The results are detached from the graph unless ``create_graph``
is true.

``strict=True`` refuses, with :class:`~plugrad.errors.IndependentInputError`,
a result that would be zeros only because an output does not depend on an
input (where ``strict=False`` gives those zeros), and with ``create_graph=True``
a result that does not depend on the inputs, so that differentiating it again
would give zeros for that reason. ``vectorize`` changes nothing here: the
results are computed the same way either way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import func as _func
from . import ops as _ops
from .dtypes import is_differentiable
from .errors import ArgumentError, IndependentInputError, InvalidArgumentError, ShapeError
from .func import Function
from .tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

Inputs = Tensor | tuple[Tensor, ...]

_MODES = {"reverse-mode": "reverse", "forward-mode": "forward"}


def _as_tuple(inputs: Any, what: str) -> tuple[bool, tuple[Tensor, ...]]:
    """Whether ``inputs`` came as a tuple, and the tensors in it."""
    several = isinstance(inputs, (tuple, list))
    values = tuple(inputs) if several else (inputs,)
    for value in values:
        if not isinstance(value, Tensor):
            raise ArgumentError(
                f"{what} must be a Tensor or a tuple of Tensors, got {type(value).__name__}"
            )
    return several, values


def _inputs(inputs: Any, create_graph: bool) -> tuple[bool, tuple[Tensor, ...]]:
    """The inputs as a tuple; with ``create_graph``, each one a tensor that records its uses.

    An input that does not require grad is replaced by a detached copy that does,
    so the results are differentiable, as PyTorch's are, and the caller's tensor
    is left as it was.
    """
    several, values = _as_tuple(inputs, "inputs")
    if create_graph:
        values = tuple(
            x.detach().requires_grad_() if not x.requires_grad and is_differentiable(x.dtype) else x
            for x in values
        )
    return several, values


def _mode(name: str, strategy: str) -> str:
    if strategy not in _MODES:
        raise InvalidArgumentError(
            f"{name} must be 'reverse-mode' or 'forward-mode', got {strategy!r}"
        )
    return _MODES[strategy]


def _done(value: Any, create_graph: bool) -> Any:
    if isinstance(value, tuple):
        return tuple(_done(v, create_graph) for v in value)
    return value if create_graph or not isinstance(value, Tensor) else value.detach()


def _shaped(several: bool, values: tuple[Any, ...]) -> Any:
    return tuple(values) if several else values[0]


def _check_differentiable(result: Any, what: str, strict: bool, create_graph: bool) -> None:
    """With ``strict`` and ``create_graph``, refuse a result that does not depend on the inputs."""
    if not (strict and create_graph):
        return
    tensors: list[Tensor] = []
    pending = [result]
    while pending:
        value = pending.pop()
        if isinstance(value, tuple):
            pending.extend(reversed(value))
        else:
            tensors.append(value)
    for index, tensor in enumerate(tensors):
        if not tensor.requires_grad:
            raise IndependentInputError(
                f"{what} {index} does not depend on the inputs, so differentiating it again "
                "(create_graph=True) would give zeros only because of that, which strict=True "
                "refuses; pass strict=False to get those zeros, or create_graph=False if the "
                "result need not be differentiated again"
            )


def jacobian(
    func: Function,
    inputs: Inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of ``func`` at ``inputs``: for each output, per input, shape ``out + in``.

    With ``strict=True``, a block whose output does not depend on its input
    raises :class:`~plugrad.errors.IndependentInputError` instead of being zeros.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.autograd.functional.jacobian(lambda t: t * t, plugrad.tensor([1.0, 3.0]))
    tensor([[2., 0.],
            [0., 6.]])
    """
    mode = _mode("strategy", strategy)
    return _matrix(_func.jacobian, "Jacobian", func, inputs, mode, create_graph, strict)


def hessian(
    func: Function,
    inputs: Inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of scalar-valued ``func`` at ``inputs`` (a tuple of tuples for tuple inputs).

    With ``strict=True``, a block that would be zeros because ``func`` does not
    depend on an input, or its gradient with respect to one input does not
    depend on another, raises :class:`~plugrad.errors.IndependentInputError`.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.autograd.functional.hessian(lambda t: (t**3).sum(), plugrad.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    mode = _mode("outer_jacobian_strategy", outer_jacobian_strategy)

    def scalar(*values: Any) -> Tensor:
        out = func(*values)
        if not isinstance(out, Tensor) or out.size != 1:
            got = f"shape {out.shape}" if isinstance(out, Tensor) else type(out).__name__
            raise ShapeError(
                f"hessian() takes a function returning one value (a single-element Tensor), "
                f"got {got}; for the Hessians of several outputs use plugrad.func.hessian"
            )
        return _ops.reshape(out, ())

    return _matrix(_func.hessian, "Hessian", scalar, inputs, mode, create_graph, strict)


def _matrix(
    transform: Callable[..., Function],
    name: str,
    func: Function,
    inputs: Inputs,
    mode: str,
    create_graph: bool,
    strict: bool,
) -> Any:
    """:func:`jacobian` and :func:`hessian`: ``transform`` of ``func`` at ``inputs``."""
    several, values = _inputs(inputs, create_graph)
    argnums: int | tuple[int, ...] = tuple(range(len(values))) if several else 0
    result = transform(func, argnums, mode=mode, strict=strict)(*values)
    _check_differentiable(result, f"{name} block", strict, create_graph)
    return _done(result, create_graph)


def _ones_like_single(name: str, values: Any, what: str, shaped: str) -> Tensor:
    """The ``v`` a product takes when none is given: 1 for a single one-element tensor."""
    if isinstance(values, tuple) and len(values) == 1:
        values = values[0]
    if isinstance(values, tuple) or values.size != 1:
        raise InvalidArgumentError(
            f"{name}() needs v unless {what} a single one-element tensor; pass v= a tensor "
            f"shaped like {shaped} (a tuple of them, one each, for several)"
        )
    from .creation import ones_like

    return ones_like(values)


def _vector_product(
    name: str,
    func: Function,
    inputs: Inputs,
    v: Any,
    create_graph: bool,
    strict: bool,
) -> tuple[Any, Any]:
    """:func:`vjp`, :func:`jvp`, :func:`hvp` and :func:`vhp`: ``func(*inputs)`` and the product."""
    several, values = _inputs(inputs, create_graph)
    if name == "vjp":
        output, vjp_fn = _func.vjp(func, *values, strict=strict)
        if v is None:
            v = _ones_like_single(name, output, "func returns", "the output")
        result = _shaped(several, vjp_fn(*_as_tuple(v, "v")[1]))
        what = "the product with respect to input"
    else:
        if v is None:
            v = _ones_like_single(name, values, "the input is", "the input")
        tangents = _as_tuple(v, "v")[1]
        if name == "jvp":
            output, result = _func.jvp(func, values, tangents, strict=strict)
            what = "the product for output"
        else:  # the Hessian is symmetric: v H is H v
            output, products = _func.hvp(func, values, tangents, strict=strict)
            result = _shaped(several, products)
            what = "the product with respect to input"
    _check_differentiable(result, what, strict, create_graph)
    return _done(output, create_graph), _done(result, create_graph)


def vjp(
    func: Function, inputs: Inputs, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """``func(*inputs)`` and ``v`` times its Jacobian (``v`` may be left out for a scalar output).

    ``strict=True`` refuses an input no output depends on, or an output computed
    from no input (see the module's introduction).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.autograd.functional import vjp
    >>> vjp(lambda t: t * t, plugrad.tensor([1.0, 2.0]), plugrad.ones(2))
    (tensor([1., 4.]), tensor([2., 4.]))
    """
    return _vector_product("vjp", func, inputs, v, create_graph, strict)


def jvp(
    func: Function, inputs: Inputs, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """``func(*inputs)`` and its Jacobian times ``v`` (left out: a one-element input's 1).

    ``strict=True`` refuses the same as :func:`vjp`'s.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([1.0, 2.0])
    >>> plugrad.autograd.functional.jvp(lambda t: t**3, x, plugrad.tensor([1.0, 0.0]))
    (tensor([1., 8.]), tensor([3., 0.]))
    """
    return _vector_product("jvp", func, inputs, v, create_graph, strict)


def hvp(
    func: Function, inputs: Inputs, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """Scalar-valued ``func(*inputs)`` and its Hessian times ``v``.

    With ``strict=True``, an input ``func`` does not depend on, or a gradient
    that depends on no input, raises :class:`~plugrad.errors.IndependentInputError`.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.autograd.functional import hvp
    >>> hvp(lambda t: (t**3).sum(), plugrad.tensor([1.0, 2.0]), plugrad.ones(2))
    (tensor(9.), tensor([ 6., 12.]))
    """
    return _vector_product("hvp", func, inputs, v, create_graph, strict)


def vhp(
    func: Function, inputs: Inputs, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """``v`` times the Hessian of scalar-valued ``func``: :func:`hvp` (the Hessian is symmetric)."""
    return _vector_product("vhp", func, inputs, v, create_graph, strict)
