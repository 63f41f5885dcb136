"""Declaring an op: the one place a kernel, its backward rules and its docs live together.

An op is data. Its *kernel* is a function ``kernel(xp, *arrays, **params)``
written against an Array API namespace ``xp``. Its *backward rules* — one per
array input — are functions ``rule(xp, g, ans, *inputs, **params)`` that
return the gradient with respect to that input, given the output gradient
``g`` and the output ``ans``. The engine calls a rule with the backend's raw
namespace and raw arrays for an ordinary backward pass, and with ``plugrad``
itself and Tensors under ``create_graph=True``, which is how higher-order
gradients come without extra code: write rules with operators and ``xp.*``
functions only.

Example
-------
>>> from plugrad.opdef import op
>>> square = op("square_example", lambda xp, x, /: x * x, saves=("x",))
>>> square.vjp(lambda xp, g, ans, x: 2 * x * g)
OpDef('square_example')
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .errors import PluginRegistrationError
from .graph import OpNode

__all__ = ["OpDef", "op"]

Kernel = Callable[..., Any]
Rule = Callable[..., Any]

_ANS = "ans"


class OpDef:
    """One op as a plugin declares it; ``op(...)`` is the same class.

    The array inputs of an op are the kernel's positional-only parameters
    after ``xp`` (all positional parameters if it declares none with ``/``);
    every other parameter is a *param*: a non-array argument such as ``axis``,
    passed to the kernel and to every rule by keyword. Give the backward rules
    with :meth:`vjp`. After registration the declaration is frozen; its derived
    fields (``input_names``, ``param_names``, ``node_type``, ...) are filled then.

    Parameters
    ----------
    name : str
        The name it is reachable by (``plugrad.ops.<name>``; built-in ops are
        also ``plugrad.<name>``).
    kernel : callable
        ``kernel(xp, *arrays, **params)``, the generic forward computation,
        written against the Array API namespace ``xp``.
    broadcasting : bool
        Whether the op broadcasts its array inputs against each other. If so,
        the engine sums each gradient back to its input's shape, so rules may
        return gradients of the broadcast shape.
    differentiable : bool
        ``False`` for ops without gradients (comparisons, ``floor``, ...): their
        results never require grad.
    saves : iterable of str, optional
        Which of the input names and ``"ans"`` (the output) the backward rules
        read. Others reach the rules as an object with only ``shape``, ``ndim``
        and ``dtype``, so they are not kept alive. Default: all inputs and the output.
    grad_fn_name : str, optional
        Prefix of the ``grad_fn`` name, e.g. ``"Mul"`` gives ``<MulBackward>``.
        Default: the op name in CamelCase.
    kernels : mapping of str to callable, optional
        Backend-specific kernels by backend name, used instead of ``kernel`` there.
    doc : str, optional
        The docstring of the public function.
    view : bool
        Whether the result may share memory with the (single) input, as
        ``reshape`` may. Such results share the input's version counter, so an
        in-place change to either is caught by backward passes that saved the other.
    method : bool or str
        Also make the op a :class:`~plugrad.Tensor` method: ``True`` under the
        op's name, a string under that name (``x.name(...)`` calls the op with
        ``x`` as its first input). Refused at registration if the Tensor class
        already has an attribute of that name or another op claimed it.
    """

    def __init__(
        self,
        name: str,
        kernel: Kernel,
        *,
        broadcasting: bool = False,
        differentiable: bool = True,
        saves: Iterable[str] | None = None,
        grad_fn_name: str | None = None,
        kernels: Mapping[str, Kernel] | None = None,
        doc: str | None = None,
        view: bool = False,
        method: bool | str = False,
    ) -> None:
        self.name = name
        self.view = view
        self.kernel = kernel
        self.broadcasting = broadcasting
        self.differentiable = differentiable
        self.saves = None if saves is None else tuple(saves)
        self.grad_fn_name = grad_fn_name
        self.backend_kernels = dict(kernels or {})
        self.doc = doc
        self.method = method
        self.vjps: tuple[Rule | None, ...] = ()
        # Filled by _freeze() at registration.
        self.input_names: tuple[str, ...] = ()
        self.param_names: tuple[str, ...] = ()
        self.signature: inspect.Signature | None = None
        self.saved_inputs: tuple[bool, ...] = ()
        self.saves_ans = False
        self.method_name: str | None = None
        self.node_type: type[OpNode] | None = None
        self._frozen = False

    def vjp(self, *rules: Rule | None) -> OpDef:
        """Set the backward rules: one per array input, ``None`` where it has no gradient.

        Returns the op itself so that declaration and rules read as one row.
        """
        if self._frozen:
            raise PluginRegistrationError(
                f"op {self.name!r} is already registered; declare its rules before registering it"
            )
        self.vjps = rules
        return self

    def kernel_for(self, backend: str) -> Callable[[Kernel], Kernel]:
        """Decorator adding a kernel used instead of the generic one on ``backend``."""

        def register(kernel: Kernel) -> Kernel:
            self.backend_kernels[backend] = kernel
            return kernel

        return register

    def __repr__(self) -> str:
        return f"OpDef({self.name!r})"

    # -- registration-time validation -------------------------------------------------

    def _freeze(self, owner: str) -> None:
        """Validate the declaration and derive the tables the per-op path reads.

        Raises :class:`PluginRegistrationError` naming ``owner`` (the plugin,
        e.g. ``"plugin 'myops' (plugrad-myops 0.1.0)"``) and the op.
        Freezing again (when the tables are rebuilt) changes nothing.
        """
        if self._frozen:
            return

        def fail(message: str) -> PluginRegistrationError:
            return PluginRegistrationError(f"{owner}, op {self.name!r}: {message}")

        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise fail("the op name must be a valid Python identifier")
        if not callable(self.kernel):
            raise fail(f"the kernel must be callable, got {type(self.kernel).__name__}")
        inputs, params, signature = _split_kernel_signature(self.kernel, fail)
        if self.view and len(inputs) != 1:
            raise fail(f"view=True needs exactly one array input, but it has {inputs}")
        for backend, kernel in self.backend_kernels.items():
            if not callable(kernel):
                raise fail(f"the kernel for backend {backend!r} must be callable")
            if _split_kernel_signature(kernel, fail)[:2] != (inputs, params):
                raise fail(
                    f"the kernel for backend {backend!r} must take the same inputs and params "
                    f"as the generic kernel: {signature}"
                )
        if self.differentiable:
            if len(self.vjps) != len(inputs):
                raise fail(
                    f"it has {len(inputs)} array input(s) {inputs} but {len(self.vjps)} backward "
                    "rule(s); give one rule per input to .vjp() (None for an input with no "
                    "gradient), or declare differentiable=False"
                )
            for index, rule in enumerate(self.vjps):
                if rule is not None:
                    _check_rule_arity(rule, index, inputs, params, fail)
        elif self.vjps:
            raise fail("it is declared differentiable=False but has backward rules")
        saves = (*inputs, _ANS) if self.saves is None else self.saves
        unknown = [s for s in saves if s not in inputs and s != _ANS]
        if unknown:
            raise fail(f"saves={self.saves} names {unknown}, which are neither inputs {inputs} "
                       f"nor {_ANS!r}")  # fmt: skip
        method_name = self.name if self.method is True else self.method or None
        if method_name is not None and (
            not isinstance(method_name, str)
            or not method_name.isidentifier()
            or method_name.startswith("_")
        ):
            raise fail(
                f"method={self.method!r}: give True (the op's name) or a public identifier "
                "to make the op a Tensor method, or False"
            )
        self.input_names = inputs
        self.param_names = params
        self.method_name = method_name
        self.signature = signature
        self.saved_inputs = tuple(name in saves for name in inputs)
        self.saves_ans = _ANS in saves
        grad_fn_name = self.grad_fn_name or "".join(p.title() for p in self.name.split("_"))
        self.node_type = type(f"{grad_fn_name}Backward", (OpNode,), {"__slots__": (), "op": self})
        self._frozen = True


#: Declare an op: ``op(name, kernel, ...)`` (see :class:`OpDef` for the parameters).
op = OpDef


def _split_kernel_signature(
    kernel: Kernel, fail: Callable[[str], Exception]
) -> tuple[tuple[str, ...], tuple[str, ...], inspect.Signature]:
    """Return (input names, param names, public signature without ``xp``) of a kernel."""
    try:
        signature = inspect.signature(kernel)
    except (TypeError, ValueError) as exc:
        raise fail(f"cannot read the kernel's signature: {exc}") from None
    parameters = list(signature.parameters.values())
    kinds = inspect.Parameter
    if not parameters or parameters[0].kind not in (
        kinds.POSITIONAL_ONLY,
        kinds.POSITIONAL_OR_KEYWORD,
    ):
        raise fail("the kernel's first parameter must be the namespace `xp`")
    rest = parameters[1:]
    if any(p.kind in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD) for p in rest):
        raise fail("the kernel must name its inputs and params (no *args or **kwargs)")
    positional_only = [p for p in rest if p.kind is kinds.POSITIONAL_ONLY]
    if positional_only:
        inputs = tuple(p.name for p in positional_only)
    else:
        inputs = tuple(p.name for p in rest if p.kind is kinds.POSITIONAL_OR_KEYWORD)
    params = tuple(p.name for p in rest if p.name not in inputs)
    if not inputs:
        raise fail("the kernel takes no array inputs after `xp`")
    if _ANS in inputs + params:
        raise fail(f"{_ANS!r} is reserved for the op's output and cannot name an input or param")
    public = [p.replace(kind=kinds.POSITIONAL_ONLY) if p.name in inputs else p for p in rest]
    return inputs, params, signature.replace(parameters=public)


def _check_rule_arity(
    rule: Rule,
    index: int,
    inputs: tuple[str, ...],
    params: tuple[str, ...],
    fail: Callable[[str], Exception],
) -> None:
    """Check that ``rule(xp, g, ans, *inputs, **params)`` is a valid call."""
    if not callable(rule):
        raise fail(f"backward rule {index} ({inputs[index]}) is not callable")
    try:
        signature = inspect.signature(rule)
    except (TypeError, ValueError):
        return  # builtins without signatures: trust them
    try:
        signature.bind("xp", "g", _ANS, *inputs, **dict.fromkeys(params))
    except TypeError as exc:
        raise fail(
            f"backward rule {index} (for input {inputs[index]!r}) has signature {signature}, "
            f"but is called as rule(xp, g, ans, {', '.join(inputs)}"
            + "".join(f", {p}=..." for p in params)
            + f"): {exc}"
        ) from None
