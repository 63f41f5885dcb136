"""Declaring an op: the one place a kernel, its backward rules and its docs live together.

An op is data. Its *kernel* is a function ``kernel(xp, *arrays, **params)``
written against an Array API namespace ``xp``. Its *backward rules* — one per
array input — are functions ``rule(xp, g, ans, *inputs, **params)`` that
return the gradient with respect to that input, given the output gradient
``g`` and the output ``ans``. The engine calls a rule with the backend's raw
namespace and raw arrays for an ordinary backward pass, and with ``plugrad``
itself and Tensors under ``create_graph=True``, which is how higher-order
gradients come without extra code: write rules with operators and ``xp.*``
functions only (functions of the ``linalg`` extension as ``xp.linalg.<name>``,
which means the same in both modes).

Beyond one-array-in, one-array-out, an op may declare:

- *dtype params* (``dtype_params``, by default every param named ``dtype``):
  users pass plugrad dtypes such as ``plugrad.float64``; the kernel receives
  the backend's own dtype object. Rules receive the converted value too, and
  may pass it (or an input's ``.dtype``) back to ``xp.astype`` in either mode.
- *array params* (``array_params``): params that may hold Tensors, e.g. an
  index key; each Tensor in them (also inside a tuple) reaches the kernel as
  its raw array and is never differentiated.
- *several outputs* (``multiple_outputs=True``): the kernel returns a tuple of
  arrays, each wrapped as its own Tensor; rules then receive ``g`` and ``ans``
  as tuples, one entry per output, with zeros in place of the gradients of
  outputs that took no part in the loss (like PyTorch's materialised grads).
  Outputs listed in ``nondifferentiable_outputs``, and outputs of a dtype that
  cannot require grad (integers, bools), never require grad.
- a *sequence input*: a kernel ``kernel(xp, *arrays, ...)`` takes any number of
  arrays (``broadcast_arrays(*arrays)``), and ``sequence=True`` makes the only
  input a list or tuple of arrays (``concat(arrays, /, axis=0)``). Each Tensor
  in it gets its own edge; its rule is called with the tuple of arrays and
  returns a tuple of gradients, one per array (``None`` for none).

Only ops that declare one of these take the general dispatch path; the
one- and two-input ops that make up almost every call are unaffected.

Example
-------
>>> from plugrad.opdef import op
>>> square = op("square_example", lambda xp, x, /: x * x, saves=("x",))
>>> square.vjp(lambda xp, g, ans, x: 2 * x * g)
OpDef('square_example')
"""

from __future__ import annotations

import collections
import dis
import inspect
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .errors import PluginRegistrationError
from .graph import BinaryOpNode, GeneralOpNode, OpNode, UnaryOpNode

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
    standard : bool, optional
        Whether the op is a function of the Array API standard, so that inside
        backward rules ``xp.<name>`` means the backend's own function. Default:
        true for plugrad's built-in ops, false for plugins' ops; a rule calling a
        non-standard op gets plugrad's op even where the backend has a function
        of that name.
    view : bool
        Whether the result may share memory with the (single) input, as
        ``reshape`` may. Such results share the input's version counter, so an
        in-place change to either is caught by backward passes that saved the other.
    method : bool or str
        Also make the op a :class:`~plugrad.Tensor` method: ``True`` under the
        op's name, a string under that name (``x.name(...)`` calls the op with
        ``x`` as its first input). Refused at registration if the Tensor class
        already has an attribute of that name or another op claimed it.
    inputs : iterable of str, optional
        The kernel parameters that are array inputs, for kernels whose array
        inputs may also be given by keyword (``clip(x, /, min=None, max=None)``).
        An input may then be ``None`` (absent); its rule is not called.
        Default: the positional-only parameters.
    dtype_params : iterable of str, optional
        Params holding a dtype (see the module docstring). Default: those named ``dtype``.
    array_params : iterable of str, optional
        Params that may hold Tensors (see the module docstring).
    multiple_outputs : bool
        The kernel returns a tuple of arrays (see the module docstring).
    output_names : iterable of str, optional
        Names of a fixed number of outputs: the public function then returns a
        named tuple (``Q, R = qr(x)`` or ``qr(x).Q``). Implies ``multiple_outputs``.
    nondifferentiable_outputs : iterable of int
        Indices of outputs that never require grad (e.g. indices returned beside values).
    sequence : bool
        The op's only input is a sequence of arrays (see the module docstring).
    namespace : str, optional
        ``"linalg"`` or ``"fft"`` for ops of those extensions: their public
        function is ``plugrad.linalg.<name>`` (and ``plugrad.ops.<name>``), not
        ``plugrad.<name>``. ``"nn"`` for the neural-network ops, which are not
        Array API functions: their function is ``plugrad.ops.<name>`` only, and
        :mod:`plugrad.nn.functional` wraps them with PyTorch's signatures.
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
        standard: bool | None = None,
        inputs: Iterable[str] | None = None,
        dtype_params: Iterable[str] | None = None,
        array_params: Iterable[str] = (),
        multiple_outputs: bool = False,
        output_names: Iterable[str] | None = None,
        nondifferentiable_outputs: Iterable[int] = (),
        sequence: bool = False,
        namespace: str | None = None,
    ) -> None:
        self.name = name
        self.view = view
        self.standard = standard
        self.kernel = kernel
        self.broadcasting = broadcasting
        self.differentiable = differentiable
        self.saves = None if saves is None else tuple(saves)
        self.grad_fn_name = grad_fn_name
        self.backend_kernels = dict(kernels or {})
        self.doc = doc
        self.method = method
        self.declared_inputs = None if inputs is None else tuple(inputs)
        self.declared_dtype_params = None if dtype_params is None else tuple(dtype_params)
        self.array_params = tuple(array_params)
        self.output_names = None if output_names is None else tuple(output_names)
        self.multiple_outputs = multiple_outputs or self.output_names is not None
        self.nondifferentiable_outputs = frozenset(nondifferentiable_outputs)
        self.sequence = sequence
        self.namespace = namespace
        self.vjps: tuple[Rule | None, ...] = ()
        # Filled by _freeze() at registration.
        self.input_names: tuple[str, ...] = ()
        self.param_names: tuple[str, ...] = ()
        self.signature: inspect.Signature | None = None
        self.saved_inputs: tuple[bool, ...] = ()
        self.saves_ans = False
        #: What a node keeps, by which inputs get a gradient (bit i set: input i does):
        #: ``keeps[mask] = (keep each input's value, keep the output)``. Empty for
        #: sequence inputs, which keep what ``saved_inputs`` and ``saves_ans`` say.
        self.keeps: tuple[tuple[tuple[bool, ...], bool], ...] = ()
        self.method_name: str | None = None
        self.dtype_params: tuple[str, ...] = ()
        #: "variadic" for a ``*arrays`` kernel, "sequence" for ``sequence=True``, else None.
        self.sequence_kind: str | None = None
        #: Whether calls take the general dispatch path (see the module docstring).
        self.general = False
        #: What the public function returns for several outputs: tuple or a named tuple.
        self.output_type: Callable[..., tuple[Any, ...]] = tuple
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
        declared = self.declared_inputs
        inputs, params, signature, variadic = _split_kernel_signature(self.kernel, declared, fail)
        if self.view and len(inputs) != 1:
            raise fail(f"view=True needs exactly one array input, but it has {inputs}")
        for backend, kernel in self.backend_kernels.items():
            if not callable(kernel):
                raise fail(f"the kernel for backend {backend!r} must be callable")
            if _split_kernel_signature(kernel, declared, fail)[:2] != (inputs, params):
                raise fail(
                    f"the kernel for backend {backend!r} must take the same inputs and params "
                    f"as the generic kernel: {signature}"
                )
        if (variadic or self.sequence) and len(inputs) != 1:
            raise fail(
                f"an op with a sequence input takes no other array inputs, but it has {inputs}; "
                "make the others params"
            )
        if variadic and self.sequence:
            raise fail("sequence=True is for a kernel taking one list of arrays, not *arrays")
        dtype_params = (
            tuple(p for p in params if p == "dtype")
            if self.declared_dtype_params is None
            else self.declared_dtype_params
        )
        for kind, names in (("dtype_params", dtype_params), ("array_params", self.array_params)):
            unknown = [name for name in names if name not in params]
            if unknown:
                raise fail(f"{kind} names {unknown}, which are not params of the kernel {params}")
        if any(not isinstance(i, int) for i in self.nondifferentiable_outputs):
            raise fail("nondifferentiable_outputs must hold output indices (ints)")
        if self.nondifferentiable_outputs and not self.multiple_outputs:
            raise fail("nondifferentiable_outputs needs multiple_outputs=True")
        names = self.output_names
        if names is not None and (
            not names or not all(isinstance(n, str) and n.isidentifier() for n in names)
        ):
            raise fail(f"output_names must be identifiers, got {names}")
        if self.namespace not in (None, "linalg", "fft", "nn"):
            raise fail(f"namespace must be None, 'linalg', 'fft' or 'nn', got {self.namespace!r}")
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
            if (variadic or self.sequence) and self.vjps[0] is None:
                raise fail("a sequence input needs a rule; declare differentiable=False instead")
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
        self.kernel = _adapt_kernel(self.kernel, inputs, params)
        self.backend_kernels = {
            backend: _adapt_kernel(kernel, inputs, params)
            for backend, kernel in self.backend_kernels.items()
        }
        self.input_names = inputs
        self.param_names = params
        self.method_name = method_name
        self.signature = signature
        self.saved_inputs = tuple(name in saves for name in inputs)
        self.saves_ans = _ANS in saves
        if self.differentiable and not variadic and not self.sequence:
            self.keeps = _keeps_by_gradients(self.vjps, inputs, self.saved_inputs, self.saves_ans)
        self.dtype_params = dtype_params
        self.sequence_kind = "variadic" if variadic else "sequence" if self.sequence else None
        self.general = bool(self.array_params or self.multiple_outputs or self.sequence_kind)
        if names is not None:
            result = collections.namedtuple(f"{self.name}_result", names)  # type: ignore[misc]
            self.output_type = lambda values: result(*values)
        grad_fn_name = self.grad_fn_name or "".join(p.title() for p in self.name.split("_"))
        # Most ops take one or two arrays: their nodes have a backward without loops.
        if self.general:
            base: type[OpNode] = GeneralOpNode
        elif len(self.vjps) == 1 and not self.broadcasting:
            base = UnaryOpNode
        elif len(self.vjps) == 2:
            base = BinaryOpNode
        else:
            base = OpNode
        self.node_type = type(f"{grad_fn_name}Backward", (base,), {"__slots__": (), "op": self})
        self._frozen = True


#: Declare an op: ``op(name, kernel, ...)`` (see :class:`OpDef` for the parameters).
op = OpDef


def _split_kernel_signature(
    kernel: Kernel, declared: tuple[str, ...] | None, fail: Callable[[str], Exception]
) -> tuple[tuple[str, ...], tuple[str, ...], inspect.Signature, bool]:
    """Return (input names, param names, public signature without ``xp``, variadic) of a kernel."""
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
    if any(p.kind is kinds.VAR_KEYWORD for p in rest):
        raise fail("the kernel must name its params (no **kwargs)")
    var_positional = [p for p in rest if p.kind is kinds.VAR_POSITIONAL]
    variadic = bool(var_positional)
    if variadic:
        if any(p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD) for p in rest):
            raise fail("a kernel taking *arrays takes no other positional parameters")
        inputs = (var_positional[0].name,)
    elif declared is not None:
        names = [p.name for p in rest]
        unknown = [name for name in declared if name not in names]
        if unknown or not declared:
            raise fail(f"inputs={declared} must name parameters of the kernel {names}")
        inputs = tuple(declared)
    else:
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
    public = [
        p.replace(kind=kinds.POSITIONAL_ONLY)
        if p.name in inputs and p.kind is kinds.POSITIONAL_OR_KEYWORD and declared is None
        else p
        for p in rest
    ]
    return inputs, params, signature.replace(parameters=public), variadic


def _adapt_kernel(kernel: Kernel, inputs: tuple[str, ...], params: tuple[str, ...]) -> Kernel:
    """Return ``kernel`` callable as ``kernel(xp, *arrays, **params)``.

    That is how the dispatcher calls every kernel. Kernels whose signature
    needs otherwise (keyword-only inputs declared with ``inputs=``,
    positional-only params such as ``moveaxis(x, source, destination, /)``)
    get a thin adapter; all others are returned unchanged.
    """
    parameters = inspect.signature(kernel).parameters
    kinds = inspect.Parameter
    if any(p.kind is kinds.VAR_POSITIONAL for p in parameters.values()):
        return kernel
    positional = 0
    for name in inputs:
        if parameters[name].kind is kinds.KEYWORD_ONLY:
            break
        positional += 1
    by_keyword = inputs[positional:]
    positional_params = tuple(p for p in params if parameters[p].kind is kinds.POSITIONAL_ONLY)
    if not by_keyword and not positional_params:
        return kernel

    def call(xp: Any, *arrays: Any, **values: Any) -> Any:
        values.update(zip(by_keyword, arrays[positional:]))
        leading = [values.pop(p) for p in positional_params]
        return kernel(xp, *arrays[:positional], *leading, **values)

    call.__signature__ = inspect.signature(kernel)  # type: ignore[attr-defined]
    return call


def _keeps_by_gradients(
    rules: tuple[Rule | None, ...],
    inputs: tuple[str, ...],
    saved_inputs: tuple[bool, ...],
    saves_ans: bool,
) -> tuple[tuple[tuple[bool, ...], bool], ...]:
    """For each set of inputs that get a gradient, what the rules that then run read.

    ``multiply`` saves both inputs, but for ``x * 2.0`` only the rule for ``x``
    runs, and it reads the ``2.0``: ``x`` need not be kept alive. Entry ``mask``
    says, for the inputs whose bit is set in ``mask``, which declared saves
    their rules read (a rule that cannot be inspected reads all of them).
    """
    reads = [_names_read(rule) for rule in rules]
    table = []
    for mask in range(1 << len(inputs)):
        running = [reads[i] for i in range(len(inputs)) if mask >> i & 1]

        def needed(name: str, running: list[frozenset[str] | None] = running) -> bool:
            return any(names is None or name in names for names in running)

        keep = tuple(saved and needed(name) for name, saved in zip(inputs, saved_inputs))
        table.append((keep, saves_ans and needed(_ANS)))
    return tuple(table)


# Functions that reach a frame's locals without naming them.
_READS_LOCALS = frozenset({"locals", "vars", "eval", "exec", "_getframe"})


def _names_read(rule: Rule | None) -> frozenset[str] | None:
    """The names a rule's code mentions, a superset of the arguments it reads.

    ``None`` when that cannot be told: not a plain Python function, ``*args`` or
    ``**kwargs`` (a wrapper passing its arguments on), or access to its locals.
    A parameter that is not in the set is certainly not read.
    """
    if rule is None:
        return frozenset()
    if not isinstance(rule, types.FunctionType):
        return None
    code = rule.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None
    if _READS_LOCALS.intersection(code.co_names):
        return None
    names = set(code.co_cellvars)  # arguments an inner function reads
    for instruction in dis.get_instructions(code):
        value = instruction.argval
        if isinstance(value, str):
            names.add(value)
        elif isinstance(value, tuple):  # e.g. LOAD_FAST_LOAD_FAST (Python 3.13)
            names.update(v for v in value if isinstance(v, str))
    return frozenset(names)


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
