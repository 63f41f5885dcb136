"""Checking gradients against finite differences: for op tests and plugin authors.

Written against the Array API only, so it checks ops on any backend.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .dtypes import complex64, float32, float64, is_differentiable
from .engine import grad
from .errors import ArgumentError, GradcheckError, InvalidArgumentError
from .grad_mode import enable_grad, no_grad
from .lazy import compute
from .tensor import Tensor, _wrap

if TYPE_CHECKING:
    from .backend import Device
    from .random import Generator

__all__ = ["gradcheck", "gradgradcheck"]

Function = Callable[..., Any]


def _outputs(result: Any) -> tuple[Tensor, ...]:
    outputs = result if isinstance(result, tuple) else (result,)
    if not all(isinstance(o, Tensor) for o in outputs):
        raise ArgumentError("the checked function must return a Tensor or a tuple of Tensors")
    return tuple(o for o in outputs if is_differentiable(o.dtype))


def basis(like: Tensor, index: int) -> Tensor:
    """A tensor shaped like ``like`` that is 1 at flat ``index`` and 0 elsewhere."""
    xp = like._device.xp
    array = like._array
    n = 1
    for d in array.shape:
        n *= d
    flat = xp.astype(xp.arange(n, device=like._device.native) == index, array.dtype)
    return _wrap(xp.reshape(flat, array.shape), like._device, False, None)


def _is_complex(t: Tensor) -> bool:
    return t.dtype.kind == "complex floating"


def _read(nested: Any) -> Any:
    """``nested`` (lists of tensors and ``None``) with each tensor read into a flat list.

    Comparing two Jacobians reads every element of every gradient. One by one,
    each element would cost a transfer from a device, and on a lazy backend a
    computation of its own; here each tensor is read once, row-major, into
    Python numbers (complex for a complex tensor), and a lazy backend computes
    them all together.
    """
    tensors: list[Tensor] = []

    def collect(value: Any) -> None:
        if isinstance(value, Tensor):
            tensors.append(value)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    def convert(value: Any) -> Any:
        if isinstance(value, Tensor):
            return value.reshape(-1).tolist()
        if isinstance(value, list):
            return [convert(item) for item in value]
        return value

    collect(nested)
    if tensors:
        compute(*tensors)
    return convert(nested)


def _size(t: Tensor) -> int:
    n = 1
    for d in t._array.shape:
        n *= d
    return n


# A complex number is two real ones: inputs are perturbed along 1 and 1j, and complex
# outputs are probed with the output gradients 1 and 1j.
def _directions(t: Tensor) -> tuple[complex, ...]:
    return (1, 1j) if _is_complex(t) else (1,)


def _numerical_jacobian(
    func: Function, inputs: Sequence[Any], index: int, eps: float
) -> list[list[list[Tensor]]]:
    """``columns[j][d][k]``: d(outputs[k])/d(inputs[index][j]) along direction ``d`` (1, then
    1j for complex inputs), by central differences, as flat tensors."""
    x = inputs[index]
    columns = []
    with no_grad():
        for j in range(_size(x)):
            along = []
            for direction in _directions(x):
                step = basis(x, j) * (eps * direction)
                plus = list(inputs)
                plus[index] = x.detach() + step
                minus = list(inputs)
                minus[index] = x.detach() - step
                along.append(
                    [
                        ((p - m) / (2 * eps)).reshape(-1)
                        for p, m in zip(_outputs(func(*plus)), _outputs(func(*minus)))
                    ]
                )
            columns.append(along)
    return columns


def _analytical_jacobian(
    func: Function, inputs: Sequence[Any], differentiable: list[int]
) -> tuple[list[Tensor], list[list[list[list[Tensor | None]]]]]:
    """``rows[k][i][c]``: the input gradients of a backward pass whose only output gradient
    is ``c`` (1, then 1j for complex outputs) at element ``i`` of output ``k``."""
    outputs = _outputs(func(*inputs))
    rows: list[list[list[list[Tensor | None]]]] = []
    wanted = [inputs[i] for i in differentiable]
    for out in outputs:
        out_rows = []
        for i in range(_size(out)):
            probes: list[list[Tensor | None]] = []
            for c in _directions(out):
                if not out.requires_grad:
                    probes.append([None] * len(wanted))
                    continue
                seed = basis(out, i) if c == 1 else basis(out, i) * c
                grads = grad(out, wanted, seed, retain_graph=True, allow_unused=True)
                probes.append(list(grads))
            out_rows.append(probes)
        rows.append(out_rows)
    return list(outputs), rows


def _expected(c: complex, along: list[list[list[Any]]], k: int, i: int) -> float | complex:
    """The gradient a backward pass with output gradient ``c`` must give, from differences.

    It is the gradient of the real function ``Re(conj(c) * out[i])``: its derivative along
    the real axis of the input, plus ``1j`` times that along the imaginary axis. ``along``
    holds the differences read by :func:`_read`: ``along[d][k]``, output ``k`` along ``d``.
    """
    total: float | complex = 0.0
    for direction, column in zip((1, 1j), along):
        total += direction * (c.conjugate() * column[k][i]).real
    return total


def gradcheck(
    func: Function,
    inputs: Sequence[Any] | Tensor,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    **pytorch_options: Any,
) -> bool:
    """Check the gradients of ``func`` at ``inputs`` against central finite differences.

    Every element of every output is differentiated with respect to every
    element of every input that requires grad, both ways, and the two
    Jacobians must agree within ``atol + rtol * |numerical|``. Use float64
    (or complex128) inputs: finite differences in float32 are too coarse.

    Complex inputs and outputs are checked as pairs of real numbers, with
    PyTorch's convention: a backward pass with output gradient ``v`` gives the
    gradient ``dL/dx + 1j * dL/dy`` of ``L = Re(sum(conj(v) * output))`` with
    respect to each input ``x + 1j * y`` (the conjugate Wirtinger derivative,
    times two), so holomorphic and non-holomorphic functions are both covered.

    Parameters
    ----------
    func : callable
        Takes ``*inputs``, returns a Tensor or a tuple of Tensors.
    inputs : Tensor or sequence
        Tensors (those with ``requires_grad=True`` are checked) and other arguments.
    eps : float
        Finite-difference step.
    atol, rtol : float
        Tolerances.
    raise_exception : bool
        Raise :class:`~plugrad.errors.GradcheckError` describing the first
        mismatch (default), or return ``False``.
    **pytorch_options
        ``nondet_tol`` (default 0): by how much two backward passes of one graph
        with one output gradient may differ, as PyTorch's. PyTorch's ``fast_mode``,
        ``check_undefined_grad``, ``check_grad_dtypes``, ``check_batched_grad``,
        ``check_batched_forward_grad``, ``check_forward_ad``, ``check_backward_ad``
        and ``masked`` are taken for PyTorch code; the whole Jacobian is always
        checked in reverse mode (the stronger check ``fast_mode=False`` makes).
        Any other name is a TypeError.

    Returns
    -------
    bool
        ``True`` if the gradients agree.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([0.5, 1.5], dtype=plugrad.float64, requires_grad=True)
    >>> plugrad.autograd.gradcheck(lambda t: plugrad.exp(t) * t, (x,))
    True
    >>> z = plugrad.tensor([0.5 + 1j, -1.5j], dtype=plugrad.complex128, requires_grad=True)
    >>> plugrad.autograd.gradcheck(lambda t: plugrad.abs(plugrad.exp(t) * t), (z,))
    True
    """
    _take_pytorch_options("gradcheck", pytorch_options)
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    differentiable = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not differentiable:
        raise InvalidArgumentError(
            "gradcheck needs at least one input Tensor with requires_grad=True"
        )
    outputs, analytic_rows = _analytical_jacobian(func, inputs, differentiable)
    rows = _read(analytic_rows)
    for position, index in enumerate(differentiable):
        numerical = _read(_numerical_jacobian(func, inputs, index, eps))
        for k, out in enumerate(outputs):
            for j, along in enumerate(numerical):
                for i in range(_size(out)):
                    for c, analytic in zip(_directions(out), rows[k][i]):
                        values = analytic[position]
                        got = 0.0 if values is None else values[j]
                        want = _expected(c, along, k, i)
                        # (not <=: a NaN on either side is a mismatch, equal infinities not)
                        if got != want and not abs(got - want) <= atol + rtol * abs(want):
                            if not raise_exception:
                                return False
                            probe = "" if c == 1 else " (output gradient 1j)"
                            raise GradcheckError(
                                f"gradient mismatch for output {k} element {i}{probe} with "
                                f"respect to input {index} element {j}: backward gives {got!r}, "
                                f"finite differences give {want!r} (atol={atol}, rtol={rtol}, "
                                f"eps={eps})"
                            )
    if not _zero_output_gradient_gives_zero(func, inputs, differentiable, raise_exception):
        return False
    nondet_tol = pytorch_options.get("nondet_tol", 0.0)
    return _backward_is_reentrant(func, inputs, differentiable, nondet_tol, raise_exception)


def _backward_is_reentrant(
    func: Function,
    inputs: Sequence[Any],
    differentiable: list[int],
    nondet_tol: float,
    raise_exception: bool,
) -> bool:
    """Two backward passes of one graph with one output gradient must agree within
    ``nondet_tol`` (PyTorch's reentrancy check): a rule that adds noise, or reads state
    that its first pass changed, fails."""
    outputs = [out for out in _outputs(func(*inputs)) if out.requires_grad]
    if not outputs:
        return True
    wanted = [inputs[i] for i in differentiable]
    ones = [_wrap(o._device.xp.ones_like(o._array), o._device, False, None) for o in outputs]
    passes = [
        list(grad(outputs, wanted, ones, retain_graph=True, allow_unused=True)) for _ in range(2)
    ]
    first, second = _read(passes)  # (read together: one computation on a lazy backend)
    for index, a, b in zip(differentiable, first, second):
        for j, (x, y) in enumerate(zip(a or (), b or ())):
            if x != y and not abs(x - y) <= nondet_tol:
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"backward is not reentrant: two backward passes with one output gradient "
                    f"give {x!r} and {y!r} for input {index} element {j} (nondet_tol="
                    f"{nondet_tol}); for a rule that is nondeterministic, set nondet_tol to "
                    "how far its passes may differ"
                )
    return True


def _zero_output_gradient_gives_zero(
    func: Function, inputs: Sequence[Any], differentiable: list[int], raise_exception: bool
) -> bool:
    """A backward pass with output gradients of zeros must give zero input gradients.

    A rule that ignores its output gradient (returns ``2 * x`` for ``x * x``) agrees
    with finite differences whenever that gradient is one, as for a 0-d output.
    """
    outputs = _outputs(func(*inputs))
    wanted = [inputs[i] for i in differentiable]
    for k, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        zeros = _wrap(out._device.xp.zeros_like(out._array), out._device, False, None)
        grads = grad(out, wanted, zeros, retain_graph=True, allow_unused=True)
        for index, values in zip(differentiable, _read(list(grads))):
            if values is not None and any(v != 0 for v in values):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"backward of output {k} with an output gradient of zeros gives a nonzero "
                    f"gradient for input {index}: the backward rule does not multiply by its "
                    "output gradient"
                )
    return True


def _real_dtype(t: Tensor) -> Any:
    return float32 if t.dtype == complex64 else float64


#: PyTorch's gradcheck options, taken; but for ``nondet_tol`` (how far two backward passes
#: may differ), they change how it checks, not what passes: the whole Jacobian is checked
#: in reverse mode (what fast_mode=False does).
_PYTORCH_OPTIONS = frozenset({
    "fast_mode", "nondet_tol", "check_undefined_grad", "check_grad_dtypes",
    "check_batched_grad", "check_batched_forward_grad", "check_forward_ad",
    "check_backward_ad", "masked",
})  # fmt: skip


def _take_pytorch_options(
    name: str, given: dict[str, Any], more: frozenset[str] = frozenset()
) -> None:
    unknown = sorted(set(given) - _PYTORCH_OPTIONS - more)
    if unknown:
        raise ArgumentError(f"{name}() got an unexpected keyword argument {unknown[0]!r}")


def gradgradcheck(
    func: Function,
    inputs: Sequence[Any] | Tensor,
    grad_outputs: Sequence[Tensor] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    **pytorch_options: Any,
) -> bool:
    """Check second-order gradients: :func:`gradcheck` of the gradient of ``func``.

    The gradient ``v -> vjp(func)(v)`` is computed with ``create_graph=True``
    and checked, with respect to the inputs and to ``v``, against finite
    differences. An op whose backward is not itself differentiable fails here.

    Parameters
    ----------
    func, inputs, eps, atol, rtol, raise_exception, pytorch_options
        As for :func:`gradcheck` (``gen_non_contig_grad_outputs`` is taken too).
    grad_outputs : sequence of Tensor, optional
        The output gradients ``v``; random (float64, on the outputs' devices) by default.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.tensor([0.5, 1.5], dtype=plugrad.float64, requires_grad=True)
    >>> v = plugrad.tensor([1.0, -2.0], dtype=plugrad.float64)
    >>> plugrad.autograd.gradgradcheck(lambda t: t * t * t, (x,), grad_outputs=(v,))
    True
    """
    from .random import Generator, randn

    _take_pytorch_options(
        "gradgradcheck", pytorch_options, frozenset({"gen_non_contig_grad_outputs"})
    )
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    differentiable = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    outputs = _outputs(func(*inputs))
    if grad_outputs is None:
        generator: dict[Device, Generator] = {}
        grad_outputs = []
        for out in outputs:
            g = generator.setdefault(out._device, Generator(seed=0, device=out._device))
            if _is_complex(out):
                real = _real_dtype(out)
                v = randn(*out.shape, dtype=real, generator=g) + 1j * randn(
                    *out.shape, dtype=real, generator=g
                )
            else:
                v = randn(*out.shape, dtype=out.dtype, generator=g)
            grad_outputs.append(v)
    grad_outputs = [v.detach().requires_grad_() for v in grad_outputs]
    n = len(inputs)

    def first_derivative(*args: Any) -> tuple[Tensor, ...]:
        # Finite differences call this under no_grad with plain tensors: it still
        # needs a graph of its own to take the first derivative.
        xs = [
            x.detach().requires_grad_() if i in differentiable and not x.requires_grad else x
            for i, x in enumerate(args[:n])
        ]
        vs = list(args[n:])
        with enable_grad():
            outs = _outputs(func(*xs))
            wanted = [xs[i] for i in differentiable]
            grads = grad(outs, wanted, vs, create_graph=True, allow_unused=True)
        return tuple(
            g if g is not None else xs[i].detach() * 0 for g, i in zip(grads, differentiable)
        )

    return gradcheck(
        first_derivative,
        (*inputs, *grad_outputs),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=pytorch_options.get("nondet_tol", 0.0),
    )
