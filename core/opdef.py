"""Declaring an op: one row holds its signature, kernel, backward rules and one-line doc.

An op is data: an immutable :class:`OpDef` made by :func:`op`. Its *kernel* is
a function ``kernel(xp, *arrays, **params)`` written against an Array API
namespace ``xp``; an op declared with a signature instead of a kernel,
``op("exp(x)", ...)``, is computed by the backend namespace's function of the
same name (``xp.exp``), bound when the kernel table is built, so the call
costs no Python frame of plugrad's. Its *backward rules* — one per array
input — are functions ``rule(xp, g, ans, *inputs, **params)`` that return the
gradient with respect to that input, given the output gradient ``g`` and the
output ``ans``. The engine calls a rule with the backend's raw namespace and
raw arrays for an ordinary backward pass, and with ``plugrad`` itself and
Tensors under ``create_graph=True``, which is how higher-order gradients come
without extra code: write rules with operators and ``xp.*`` functions only
(functions of the ``linalg`` extension as ``xp.linalg.<name>``, which means
the same in both modes).

What a node keeps is read from the rules themselves: an input (or the output
``ans``) that no rule's code names is not kept alive. ``saves=`` is only needed
where a rule names a value but reads no more than its ``shape``/``dtype``.

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
  cannot require grad (integers, bools), never require grad. Where every rule
  reads ``ans`` only as ``ans[<constant>]``, only those outputs are
  checked for in-place changes (max pooling reads its indices: its values may
  go through ``relu_()`` before backward, as in PyTorch).
- a *sequence input*: a kernel ``kernel(xp, *arrays, ...)`` takes any number of
  arrays (``broadcast_arrays(*arrays)``), and ``sequence=True`` makes the only
  input a list or tuple of arrays (``concat(arrays, /, axis=0)``). Each Tensor
  in it gets its own edge; its rule is called with the tuple of arrays and
  returns a tuple of gradients, one per array (``None`` for none).

Only ops that declare one of these take the general dispatch path; the
one- and two-input ops that make up almost every call are unaffected.

Registration turns a declaration into a :class:`RegisteredOp`, which holds
what is derived from it (input names, node type, what a node keeps) and is
what the per-op path reads; the declaration itself never changes.

Example
-------
>>> from plugrad.opdef import op
>>> op("square_example(x)", vjp=lambda xp, g, ans, x: 2 * x * g, doc="``x * x``.")
OpDef('square_example')
"""

from __future__ import annotations

import collections
import dataclasses
import dis
import inspect
import keyword
import numbers
import operator
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .errors import ArgumentError, PluginRegistrationError
from .graph import BinaryOpNode, GeneralOpNode, OpNode, UnaryOpNode

__all__ = [
    "NamespaceKernel",
    "OpDef",
    "RegisteredOp",
    "as_int",
    "collect_ops",
    "dim_as_axis",
    "op",
    "reduction_dim_as_axis",
]

Kernel = Callable[..., Any]
Rule = Callable[..., Any]

_ANS = "ans"


class NamespaceKernel:
    """The kernel of an op declared without one: the backend namespace's function of its name.

    Called as every kernel is (``kernel(xp, *arrays, **params)``); the kernel
    table holds :meth:`bind`'s result, the namespace's function itself.
    """

    def __init__(self, path: tuple[str, ...], signature: inspect.Signature) -> None:
        self.path = path
        self.__signature__ = signature
        # Described as "xp.<name>" (module "xp"): the namespace is only known once bound.
        self.__qualname__ = ".".join(path)
        self.__module__ = "xp"

    def bind(self, xp: Any) -> Kernel | None:
        """The namespace's function, or ``None`` if ``xp`` has none of that name."""
        function = xp
        for name in self.path:
            function = getattr(function, name, None)
            if function is None:
                return None
        return function

    def __call__(self, xp: Any, *args: Any, **params: Any) -> Any:
        function = self.bind(xp)
        if function is None:
            raise AttributeError(f"the backend namespace has no function 'xp.{self.__qualname__}'")
        return function(*args, **params)

    def __repr__(self) -> str:
        return f"<kernel xp.{self.__qualname__}>"


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class OpDef:
    """One op as a plugin declares it (immutable); make it with :func:`op`.

    The fields are :func:`op`'s arguments, normalised (``vjps`` a tuple of
    rules, ``kernels`` a read-only mapping, ``methods``/``aliases`` tuples of
    names, ``method_adapters`` and ``alias_adapters`` the methods and aliases
    given a meaning of their own, by name). ``module`` is the module that
    declared it, for :func:`collect_ops`.
    """

    name: str
    kernel: Kernel
    vjps: tuple[Rule | None, ...] = ()
    broadcasting: bool = False
    differentiable: bool = True
    saves: tuple[str, ...] | None = None
    grad_fn_name: str | None = None
    kernels: Mapping[str, Kernel] = dataclasses.field(default_factory=dict)
    doc: str | None = None
    view: bool = False
    methods: tuple[str, ...] = ()
    method_adapters: Mapping[str, Callable[..., Any]] = dataclasses.field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    alias_adapters: Mapping[str, Callable[..., Any]] = dataclasses.field(default_factory=dict)
    torch_function: Callable[..., Any] | None = None
    standard: bool | None = None
    inputs: tuple[str, ...] | None = None
    dtype_params: tuple[str, ...] | None = None
    array_params: tuple[str, ...] = ()
    multiple_outputs: bool = False
    output_names: tuple[str, ...] | None = None
    nondifferentiable_outputs: frozenset[int] = frozenset()
    paired_outputs: bool = False
    sequence: bool = False
    namespace: str | None = None
    promotion: str | None = None
    real_only: bool = False
    inplace: bool | Callable[[Any, Any], Any] | tuple[str, ...] = False
    alpha: bool = False
    module: str | None = None

    @property
    def in_place_methods(self) -> tuple[str, ...]:
        """The Tensor methods with an in-place form (``add`` for ``add_``), by ``inplace=``."""
        if isinstance(self.inplace, tuple):
            return self.inplace
        return self.methods if self.inplace else ()

    def vjp(self, *rules: Rule | None) -> OpDef:
        """A copy of this declaration with backward ``rules``, one per array input.

        ``op(..., vjp=rules)`` says the same in the row itself.
        """
        return dataclasses.replace(self, vjps=rules)

    # Kept for plugins written against the mutable declaration.
    @property
    def backend_kernels(self) -> Mapping[str, Kernel]:
        """The backend-specific kernels, by backend name (``kernels=``)."""
        return self.kernels

    @property
    def declared_inputs(self) -> tuple[str, ...] | None:
        return self.inputs

    def __repr__(self) -> str:
        return f"OpDef({self.name!r})"


def op(
    spec: str,
    kernel: Kernel | None = None,
    *,
    vjp: Rule | Iterable[Rule | None] | None = None,
    doc: str | None = None,
    broadcasting: bool = False,
    differentiable: bool = True,
    saves: Iterable[str] | None = None,
    methods: str | Iterable[str] | Mapping[str, Callable[..., Any] | None] = (),
    aliases: str | Iterable[str] | Mapping[str, Callable[..., Any] | None] = (),
    torch_function: Callable[..., Any] | None = None,
    grad_fn_name: str | None = None,
    kernels: Mapping[str, Kernel] | None = None,
    view: bool = False,
    method: bool | str = False,
    standard: bool | None = None,
    inputs: Iterable[str] | None = None,
    dtype_params: Iterable[str] | None = None,
    array_params: Iterable[str] = (),
    multiple_outputs: bool = False,
    output_names: Iterable[str] | None = None,
    nondifferentiable_outputs: Iterable[int] = (),
    paired_outputs: bool = False,
    sequence: bool = False,
    namespace: str | None = None,
    promotion: str | None = None,
    real_only: bool = False,
    inplace: bool | Callable[[Any, Any], Any] | Iterable[str] = False,
    alpha: bool = False,
) -> OpDef:
    """Declare an op: one row that says everything about it.

    Parameters
    ----------
    spec : str
        The op's name (``"matmul"``), or its name with the signature of its
        public function without ``xp`` (``"exp(x)"``, ``"sum(x, /, *, axis=None)"``)
        when ``kernel`` is left out: the op is then computed by the backend
        namespace's function of that name (``xp.exp``; ``xp.linalg.<name>``
        for ``namespace="linalg"``). Parameters before ``/`` (or all positional
        ones if there is no ``/``) are the array inputs.
    kernel : callable, optional
        ``kernel(xp, *arrays, **params)``, the generic forward computation,
        written against the Array API namespace ``xp``; its signature is the op's.
    vjp : callable or sequence of callables, optional
        The backward rule (one-input ops) or one rule per array input (``None``
        for an input without gradient): ``rule(xp, g, ans, *inputs, **params)``.
    doc : str, optional
        One line saying what the op computes: the public function's docstring.
    broadcasting : bool
        Whether the op broadcasts its array inputs against each other. If so,
        the engine sums each gradient back to its input's shape, so rules may
        return gradients of the broadcast shape.
    differentiable : bool
        ``False`` for ops without gradients (comparisons, ``isnan``, ...): their
        results never require grad, and they take no rules.
    saves : iterable of str, optional
        Which of the input names and ``"ans"`` may be kept for the rules.
        Default: those the rules' code names (read from their bytecode; all
        of them for a rule that cannot be read). Give it where a rule names a
        value but only reads its ``shape``/``dtype``/``ndim``: the others reach
        the rules as an object with only those attributes.
    methods : str, iterable of str, or mapping of str to callable or None
        Tensor methods the op provides: ``x.<method>(...)`` calls the op with
        ``x`` as its first input. In a mapping, a method whose value is a
        callable ``adapter(xp, x, ...)`` calls that instead, with ``xp`` the
        ``plugrad`` namespace: a method whose meaning on the Tensor differs
        from the function's (PyTorch's ``x.max(dim)`` returns values and
        indices, ``x.repeat(*sizes)`` tiles); ``None`` means the op itself.
        Refused at registration if the Tensor class has an attribute of that
        name or another op claims it.
    aliases : str, iterable of str, or mapping of str to callable or None
        Further names of the public function (``plugrad.<alias>`` for a
        built-in op, ``plugrad.ops.<alias>`` for a plugin's, beside its name),
        e.g. PyTorch's names; refused on a clash like the op name itself. In a
        mapping, an alias whose value is a callable ``adapter(xp, x, ...)`` is
        a function of its own computed by it, as for ``methods`` (PyTorch's
        ``flatten(x, start_dim)`` beside ``reshape``).
    torch_function : callable, optional
        PyTorch's meaning of the public function, ``adapter(xp, x, ...)``, for
        the calls the standard's signature has no place for: a parameter of
        the adapter that the op lacks (PyTorch's ``dim``/``keepdim``, taken by
        position where the op's own parameters are keyword-only), or a
        required parameter of the op left out. Such calls run the adapter;
        every other call is the op's. ``max(x, 1)`` and ``max(x, dim=1)``
        give PyTorch's ``(values, indices)`` while ``max(x, axis=1)`` stays
        the standard's. For an op of several inputs whose inputs after the
        first default to None, a call leaving any of them out runs
        ``adapter(xp, x, *others)`` (PyTorch's ``where(condition)``).
    grad_fn_name : str, optional
        Prefix of the ``grad_fn`` name, e.g. ``"Mul"`` gives ``<MulBackward>``.
        Default: the op name in CamelCase.
    kernels : mapping of str to callable, optional
        Backend-specific kernels by backend name, used instead of ``kernel`` there.
        A backend need not be installed (cupy kernels ship to machines without a
        GPU), but a name a typo away from a registered backend's (``"nmupy"``)
        is refused when the plugin registers, naming the backend meant (see
        :func:`plugrad.kerneldef.misspelled_backend`).
    view : bool
        Whether the result may share memory with the (single) input, as
        ``reshape`` may. Such results share the input's version counter, so an
        in-place change to either is caught by backward passes that saved the other.
        With several outputs, each output shares the counter of the single input
        (``unstack``), or of the input in its position (``broadcast_arrays``).
    method : bool or str
        The older spelling of ``methods``: ``True`` for a method of the op's name.
    standard : bool, optional
        Whether the op is a function of the Array API standard, so that inside
        backward rules ``xp.<name>`` means the backend's own function. Default:
        true for plugrad's built-in ops, false for plugins' ops.
    inputs : iterable of str, optional
        The kernel parameters that are array inputs, for kernels whose array
        inputs may also be given by keyword (``clip(x, /, min=None, max=None)``).
        An input may then be ``None`` (absent); its rule is not called.
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
    paired_outputs : bool
        Output ``i`` is computed from array input ``i`` alone (``broadcast_arrays``,
        ``meshgrid``): an input whose output no gradient reaches gets none (its
        ``.grad`` stays None), as separate ops would give. Needs ``multiple_outputs``.
    sequence : bool
        The op's only input is a sequence of arrays (see the module docstring).
    namespace : str, optional
        ``"linalg"`` or ``"fft"`` for ops of those extensions (``plugrad.linalg.<name>``);
        ``"nn"`` for the neural-network ops, reached as ``plugrad.ops.<name>`` and
        wrapped by :mod:`plugrad.nn.functional`.
    promotion : {None, "mixed", "float"}, optional
        How inputs of different kinds are combined. ``None``: as the backend
        does. ``"mixed"`` (element-wise ops): PyTorch's promotion across kinds
        on every backend -- ``float32`` with ``int64`` computes in ``float32``,
        an integer tensor with a Python float in the default float dtype --
        while within a kind the Array API's rules hold. ``"float"``: that, and
        integer or bool inputs compute in the default float dtype (true
        division: ``int / int`` gives ``float32``).
    real_only : bool
        The op is defined for real numbers only (the standard's "real-valued
        data type": orderings, rounding, ``atan2``, ...): a complex input raises
        :class:`~plugrad.errors.DtypeError`, as in PyTorch, where a backend
        would order complex numbers lexicographically or fail with its own error.
    inplace : bool, callable or iterable of str
        Whether each Tensor method ``m`` in ``methods`` also has the in-place
        form ``m_`` (``x.add_(y)`` makes ``x`` hold ``add(x, y)``), with the
        version-counter checks of the in-place operators. A callable says so
        too, and is the raw arrays' in-place operator computing the same
        (``operator.iadd`` for ``add``): used when nothing is recorded and the
        operand has the tensor's dtype and shape, one pass over memory. An
        iterable of method names gives in-place forms to those methods only.
        A bool result (a comparison's) is written as 1 and 0 of the tensor's
        dtype, as PyTorch's ``x.lt_(y)`` does. The in-place form of a view op
        (``view=True``) changes the tensor's shape instead of its data, as
        PyTorch's ``x.squeeze_()`` and ``x.t_()`` do.
    alpha : bool
        Whether the Tensor methods take PyTorch's keyword ``alpha``, a factor
        for the second input: ``x.add(y, alpha=2)`` (and ``x.add_(y, alpha=2)``)
        computes ``x + 2 * y``.

    Returns
    -------
    OpDef
        The declaration, for a plugin's ``plugrad_ops()`` hook to return.

    Examples
    --------
    >>> from plugrad.opdef import op
    >>> op("cube_example", lambda xp, x, /: x * x * x, vjp=lambda xp, g, ans, x: 3 * x * x * g)
    OpDef('cube_example')
    """
    name, signature = _parse_spec(spec)
    if kernel is None:
        if signature is None:
            raise PluginRegistrationError(
                f"op {spec!r}: give a kernel, or the signature in the name "
                f"(e.g. op({spec + '(x)'!r})) to use the backend's function {spec!r}"
            )
        path = (namespace, name) if namespace in ("linalg", "fft") else (name,)
        kernel = NamespaceKernel(path, signature)
    elif signature is not None:
        raise PluginRegistrationError(
            f"op {spec!r}: the signature comes from the kernel; name the op without it"
        )
    if vjp is None:
        rules: tuple[Rule | None, ...] = ()
    elif callable(vjp):
        rules = (vjp,)
    elif isinstance(vjp, (str, bytes)) or not isinstance(vjp, Iterable):
        raise PluginRegistrationError(
            f"op {spec!r}: vjp= takes a rule (a function) or a sequence of them, one per array "
            f"input (None for an input without gradient), got {type(vjp).__name__} {vjp!r}"
        )
    else:
        rules = tuple(vjp)
        for rule in rules:
            if rule is not None and not callable(rule):
                raise PluginRegistrationError(
                    f"op {spec!r}: each rule of vjp= is a function or None, got "
                    f"{type(rule).__name__} {rule!r}"
                )
    adapters: dict[str, Callable[..., Any]] = {}
    alias_adapters: dict[str, Callable[..., Any]] = {}
    if isinstance(aliases, Mapping):
        alias_adapters = {a: adapter for a, adapter in aliases.items() if adapter is not None}
        aliases = tuple(aliases)
    if isinstance(methods, str):
        method_names: tuple[str, ...] = (methods,)
    elif isinstance(methods, Mapping):
        method_names = tuple(methods)
        adapters = {name: adapter for name, adapter in methods.items() if adapter is not None}
    else:
        method_names = tuple(methods)
    if method is True:
        method_names = (name, *method_names)
    elif method:
        method_names = (method, *method_names)
    in_place: bool | Callable[[Any, Any], Any] | tuple[str, ...] = (
        inplace if isinstance(inplace, bool) or callable(inplace) else tuple(inplace)
    )
    frame = sys._getframe(1)
    return OpDef(
        name=name,
        kernel=kernel,
        vjps=rules,
        broadcasting=broadcasting,
        differentiable=differentiable,
        saves=None if saves is None else tuple(saves),
        grad_fn_name=grad_fn_name,
        kernels=types.MappingProxyType(dict(kernels or {})),
        doc=doc,
        view=view,
        methods=method_names,
        method_adapters=types.MappingProxyType(adapters),
        aliases=(aliases,) if isinstance(aliases, str) else tuple(aliases),
        alias_adapters=types.MappingProxyType(alias_adapters),
        torch_function=torch_function,
        standard=standard,
        inputs=None if inputs is None else tuple(inputs),
        dtype_params=None if dtype_params is None else tuple(dtype_params),
        array_params=tuple(array_params),
        multiple_outputs=multiple_outputs or output_names is not None,
        output_names=None if output_names is None else tuple(output_names),
        nondifferentiable_outputs=frozenset(nondifferentiable_outputs),
        paired_outputs=paired_outputs,
        sequence=sequence,
        namespace=namespace,
        promotion=promotion,
        real_only=real_only,
        inplace=in_place,
        alpha=alpha,
        module=frame.f_globals.get("__name__"),
    )


def collect_ops(module_globals: Mapping[str, Any]) -> list[OpDef]:
    """Every op declared at the top level of a module, in declaration order.

    A plugin module's hook returns ``collect_ops(globals())``; ops it merely
    imports from another module are not its own and are left out.
    """
    module = module_globals.get("__name__")
    seen: dict[int, OpDef] = {}
    for value in module_globals.values():
        if isinstance(value, OpDef) and value.module == module:
            seen.setdefault(id(value), value)
    return list(seen.values())


def _parse_spec(spec: Any) -> tuple[Any, inspect.Signature | None]:
    """Split ``"name(signature)"`` into the name and the kernel signature ``(xp, ...)``."""
    if not isinstance(spec, str) or not spec.endswith(")") or "(" not in spec:
        return spec, None
    name, _, params = spec[:-1].partition("(")
    name = name.strip()
    if not name.isidentifier():
        raise PluginRegistrationError(f"op {spec!r}: the op name must be a Python identifier")
    scope: dict[str, Any] = {}
    try:
        exec(compile(f"def _kernel(xp, {params}): pass", f"<op {name}>", "exec"), scope)
    except SyntaxError as exc:
        raise PluginRegistrationError(
            f"op {spec!r}: cannot read the signature {params!r}: {exc.msg}"
        ) from None
    return name, inspect.signature(scope["_kernel"])


class RegisteredOp:
    """What registration derives from an :class:`OpDef`: the object the per-op path reads.

    It answers every field of its ``declaration`` too (``op.doc``,
    ``op.methods``, ...). Built once per declaration by :func:`register_op`;
    rebuilding the tables reuses it.
    """

    __slots__ = (
        "__weakref__",
        "array_params",
        "backend_kernels",
        "broadcasting",
        "checks_dtype",
        "declaration",
        "differentiable",
        "dtype_params",
        "general",
        "input_names",
        "keeps",
        "kernel",
        "method_names",
        "multiple_outputs",
        "name",
        "node_type",
        "nondifferentiable_outputs",
        "output_type",
        "outputs_read",
        "paired_outputs",
        "param_names",
        "promotes",
        "real_only",
        "rule_reads",
        "saved_inputs",
        "saves_ans",
        "sequence_kind",
        "signature",
        "to_float",
        "view",
        "vjps",
    )  # fmt: skip
    declaration: OpDef
    name: str
    view: bool
    broadcasting: bool
    differentiable: bool
    promotes: bool
    to_float: bool
    real_only: bool
    checks_dtype: bool
    #: The backward rules the per-op path runs (checking mode swaps in checked ones).
    vjps: tuple[Rule | None, ...]
    array_params: tuple[str, ...]
    multiple_outputs: bool
    nondifferentiable_outputs: frozenset[int]
    paired_outputs: bool
    #: The outputs the rules read, of an op with several (None: maybe all of them).
    outputs_read: frozenset[int] | None
    kernel: Kernel
    backend_kernels: dict[str, Kernel]
    input_names: tuple[str, ...]
    param_names: tuple[str, ...]
    method_names: tuple[str, ...]
    signature: inspect.Signature
    saved_inputs: tuple[bool, ...]
    saves_ans: bool
    #: Per rule, the positions of the inputs it reads and whether it reads ``ans``;
    #: None where its code cannot be read (see :func:`_names_read`).
    rule_reads: tuple[tuple[tuple[int, ...], bool] | None, ...]
    keeps: tuple[tuple[tuple[bool, ...], bool], ...]
    dtype_params: tuple[str, ...]
    sequence_kind: str | None
    general: bool
    output_type: Callable[[Any], Any]
    node_type: type[OpNode]

    def __getattr__(self, name: str) -> Any:
        # Only reached for what is not derived: the declaration's own fields.
        if name == "declaration":
            raise AttributeError(name)
        return getattr(self.declaration, name)

    @property
    def method_name(self) -> str | None:
        """The first Tensor method the op provides, if any."""
        return self.method_names[0] if self.method_names else None

    def __repr__(self) -> str:
        return f"RegisteredOp({self.name!r})"


def register_op(declaration: OpDef, owner: str) -> RegisteredOp:
    """Validate a declaration and derive the tables the per-op path reads.

    Raises :class:`PluginRegistrationError` naming ``owner`` (the plugin,
    e.g. ``"plugin 'myops' (plugrad-myops 0.1.0)"``) and the op.
    """
    self = declaration
    name = self.name

    def fail(message: str) -> PluginRegistrationError:
        return PluginRegistrationError(f"{owner}, op {name!r}: {message}")

    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise fail("the op name must be a valid Python identifier, not a keyword")
    if name[0] == "_":
        # The op becomes plugrad.ops.<name>: a private or dunder name would replace the
        # module's own attributes (__name__, __class__, ...), and unregistering delete them.
        raise fail("the op name must be public (not start with an underscore)")
    if not callable(self.kernel):
        raise fail(f"the kernel must be callable, got {type(self.kernel).__name__}")
    declared = self.inputs
    inputs, params, signature, variadic = _split_kernel_signature(self.kernel, declared, fail)
    if self.view and len(inputs) != 1 and not (self.multiple_outputs and variadic):
        raise fail(
            f"view=True needs exactly one array input, or variadic inputs and several "
            f"outputs, but it has {inputs}"
        )
    for backend, kernel in self.kernels.items():
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
        tuple(p for p in params if p == "dtype") if self.dtype_params is None else self.dtype_params
    )
    for kind, names in (("dtype_params", dtype_params), ("array_params", self.array_params)):
        unknown = [n for n in names if n not in params]
        if unknown:
            raise fail(f"{kind} names {unknown}, which are not params of the kernel {params}")
    if any(not isinstance(i, int) for i in self.nondifferentiable_outputs):
        raise fail("nondifferentiable_outputs must hold output indices (ints)")
    if self.nondifferentiable_outputs and not self.multiple_outputs:
        raise fail("nondifferentiable_outputs needs multiple_outputs=True")
    if self.paired_outputs and not self.multiple_outputs:
        raise fail("paired_outputs needs multiple_outputs=True")
    output_names = self.output_names
    if output_names is not None and (
        not output_names or not all(isinstance(n, str) and n.isidentifier() for n in output_names)
    ):
        raise fail(f"output_names must be identifiers, got {output_names}")
    if self.promotion not in (None, "mixed", "float"):
        raise fail(f"promotion must be None, 'mixed' or 'float', got {self.promotion!r}")
    if self.alpha and (not self.methods or len(inputs) != 2):
        raise fail("alpha=True scales the second of two array inputs in the Tensor methods")
    if self.inplace and not self.methods:
        raise fail("inplace=True makes in-place forms of the op's Tensor methods; declare methods=")
    if isinstance(self.inplace, tuple) and not set(self.inplace) <= set(self.methods):
        raise fail(f"inplace={self.inplace} names methods the op does not declare {self.methods}")
    if self.namespace not in (None, "linalg", "fft", "nn"):
        raise fail(f"namespace must be None, 'linalg', 'fft' or 'nn', got {self.namespace!r}")
    if self.differentiable:
        if len(self.vjps) != len(inputs):
            raise fail(
                f"it has {len(inputs)} array input(s) {inputs} but {len(self.vjps)} backward "
                "rule(s); give one rule per input with vjp= (None for an input with no "
                "gradient), or declare differentiable=False"
            )
        for index, rule in enumerate(self.vjps):
            if rule is not None:
                _check_rule_arity(rule, index, inputs, params, fail)
        if (variadic or self.sequence) and self.vjps[0] is None:
            raise fail("a sequence input needs a rule; declare differentiable=False instead")
    elif self.vjps:
        raise fail("it is declared differentiable=False but has backward rules")
    saves = _inferred_saves(self.vjps, inputs) if self.saves is None else self.saves
    unknown = [s for s in saves if s not in inputs and s != _ANS]
    if unknown:
        raise fail(f"saves={self.saves} names {unknown}, which are neither inputs {inputs} "
                   f"nor {_ANS!r}")  # fmt: skip
    for kind, values in (("method", self.methods), ("alias", self.aliases)):
        for value in values:
            if not isinstance(value, str) or not value.isidentifier() or value[0] == "_":
                raise fail(f"{kind}={value!r}: a Tensor method or alias is a public identifier")
    for kind, adapters in (("method", self.method_adapters), ("alias", self.alias_adapters)):
        for adapted, adapter in adapters.items():
            if not callable(adapter):
                raise fail(f"the {kind} {adapted!r} maps to {adapter!r}, which is not callable")
    # Inputs after the first that may be left out (default None): torch_function then
    # gives the call without them PyTorch's meaning (where(condition)).
    optional_rest = all(signature.parameters[i].default is None for i in inputs[1:])
    if self.torch_function is not None and (
        not callable(self.torch_function) or (len(inputs) != 1 and not optional_rest)
    ):
        raise fail(
            "torch_function= is a callable adapter(xp, x, ...) giving PyTorch's meaning of a "
            "one-input op's function, or of an op whose other inputs default to None"
        )
    derived = RegisteredOp()
    derived.declaration = self
    derived.name = name
    derived.view = self.view
    derived.broadcasting = self.broadcasting
    derived.differentiable = self.differentiable
    #: Whether inputs of different kinds are promoted as PyTorch does (see ``promotion``).
    derived.promotes = self.promotion is not None
    #: Whether integer and bool inputs compute in the default float dtype (``promotion="float"``).
    derived.to_float = self.promotion == "float"
    #: Whether complex inputs are refused (``real_only``).
    derived.real_only = self.real_only
    #: Whether the per-op path looks at input dtypes (``to_float`` or ``real_only``): one
    #: test for the ops that do neither.
    derived.checks_dtype = derived.to_float or derived.real_only
    derived.vjps = self.vjps
    derived.array_params = self.array_params
    derived.multiple_outputs = self.multiple_outputs
    derived.nondifferentiable_outputs = self.nondifferentiable_outputs
    derived.paired_outputs = self.paired_outputs
    derived.outputs_read = _outputs_read(self.vjps) if self.multiple_outputs else None
    derived.kernel = _adapt_kernel(self.kernel, inputs, params)
    derived.backend_kernels = {
        backend: _adapt_kernel(kernel, inputs, params) for backend, kernel in self.kernels.items()
    }
    derived.input_names = inputs
    derived.param_names = params
    derived.method_names = self.methods
    derived.signature = signature
    derived.saved_inputs = tuple(n in saves for n in inputs)
    derived.saves_ans = _ANS in saves
    derived.rule_reads = tuple(
        None
        if (read := _names_read(rule)) is None
        else (tuple(i for i, n in enumerate(inputs) if n in read), _ANS in read)
        for rule in self.vjps
    )
    #: What a node keeps, by which inputs get a gradient (bit i set: input i does):
    #: ``keeps[mask] = (keep each input's value, keep the output)``. Empty for
    #: sequence inputs, which keep what ``saved_inputs`` and ``saves_ans`` say.
    derived.keeps = ()
    if self.differentiable and not variadic and not self.sequence:
        derived.keeps = _keeps_by_gradients(
            self.vjps, inputs, derived.saved_inputs, derived.saves_ans
        )
    derived.dtype_params = dtype_params
    #: "variadic" for a ``*arrays`` kernel, "sequence" for ``sequence=True``, else None.
    derived.sequence_kind = "variadic" if variadic else "sequence" if self.sequence else None
    #: Whether calls take the general dispatch path (see the module docstring).
    derived.general = bool(self.array_params or self.multiple_outputs or derived.sequence_kind)
    derived.output_type = tuple
    if output_names is not None:
        result = collections.namedtuple(f"{name}_result", output_names)  # type: ignore[misc]
        derived.output_type = lambda values: result(*values)
    grad_fn_name = self.grad_fn_name or "".join(p.title() for p in name.split("_"))
    # Most ops take one or two arrays: their nodes have a backward without loops.
    if derived.general:
        base: type[OpNode] = GeneralOpNode
    elif len(self.vjps) == 1 and not self.broadcasting:
        base = UnaryOpNode
    elif len(self.vjps) == 2:
        base = BinaryOpNode
    else:
        base = OpNode
    derived.node_type = type(f"{grad_fn_name}Backward", (base,), {"__slots__": (), "op": derived})
    return derived


def _inferred_saves(rules: tuple[Rule | None, ...], inputs: tuple[str, ...]) -> tuple[str, ...]:
    """The inputs and ``ans`` that some rule's code names (all, if a rule cannot be read)."""
    reads = [_names_read(rule) for rule in rules]
    return tuple(n for n in (*inputs, _ANS) if any(names is None or n in names for names in reads))


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
        inputs: tuple[str, ...] = (var_positional[0].name,)
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
    # The inputs that lead the signature go by position, the others by name (keyword-only
    # ones, or ones after params: diff(x, /, n, axis, prepend, append)).
    leading = list(parameters)[1:]
    positional = 0
    for name in inputs:
        if parameters[name].kind is kinds.KEYWORD_ONLY or leading[positional] != name:
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


def _plain_code(rule: Rule) -> types.CodeType | None:
    """The code of a rule, or ``None`` where it is not a plain Python function.

    A wrapper marked ``passes_arguments_on`` reads no argument's values itself (only
    shapes and dtypes, which an input not saved still has): the rule it wraps is read.
    """
    while getattr(rule, "passes_arguments_on", False) and hasattr(rule, "__wrapped__"):
        rule = rule.__wrapped__
    return rule.__code__ if isinstance(rule, types.FunctionType) else None


def _names_read(rule: Rule | None) -> frozenset[str] | None:
    """The names a rule's code mentions, a superset of the arguments it reads.

    ``None`` when that cannot be told: not a plain Python function, ``*args`` or
    ``**kwargs`` (a wrapper passing its arguments on), or access to its locals.
    A parameter that is not in the set is certainly not read.
    """
    if rule is None:
        return frozenset()
    code = _plain_code(rule)
    if code is None or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
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


def _outputs_read(rules: tuple[Rule | None, ...]) -> frozenset[int] | None:
    """Which outputs of a several-output op the rules read, where each rule reads
    ``ans`` only as ``ans[<constant>]`` (``None``: maybe all of them).

    Only these outputs are checked for in-place changes at backward: max pooling's
    rule reads the indices, so its values may be modified in place, as in PyTorch.
    """
    read: set[int] = set()
    for rule in rules:
        found = _subscripts_of_ans(rule)
        if found is None:
            return None
        read |= found
    return frozenset(read)


def _subscripts_of_ans(rule: Rule | None) -> frozenset[int] | None:
    if rule is None:
        return frozenset()
    code = _plain_code(rule)
    # ans must be the rule's own third parameter (not inside *args), read only by name.
    if (
        code is None
        or code.co_argcount < 3
        or code.co_varnames[2] != _ANS
        or _READS_LOCALS.intersection(code.co_names)
        or _ANS in code.co_cellvars  # an inner function reads it: not followed
    ):
        return None
    instructions = list(dis.get_instructions(code))
    found = set()
    for index, instruction in enumerate(instructions):
        value = instruction.argval
        if value != _ANS and not (isinstance(value, tuple) and _ANS in value):
            continue
        # ans loaded last (LOAD_FAST, or the second name of LOAD_FAST_LOAD_FAST), then a
        # constant, then a subscript: anything else may read every output.
        loads_last = value == _ANS or value[-1] == _ANS
        if not instruction.opname.startswith("LOAD_FAST") or not loads_last:
            return None
        following = instructions[index + 1 : index + 3]
        if (
            len(following) < 2
            or following[0].opname not in ("LOAD_CONST", "LOAD_SMALL_INT")
            or type(following[0].argval) is not int
            or not (
                following[1].opname == "BINARY_SUBSCR"
                or (following[1].opname == "BINARY_OP" and following[1].argrepr == "[]")
            )
        ):
            return None
        found.add(following[0].argval)
    return frozenset(found)


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


def dim_as_axis(dim: Any) -> Any:
    """PyTorch's ``dim`` as the standard's ``axis``: a list as a tuple, integers of other
    kinds as ints (:func:`as_int`).

    For the ``torch_function`` adapters of ops (PyTorch takes ``x.sum([0, 1])``,
    ``x.max(numpy.int64(1))`` and ``x.sum(torch.tensor(1))``); anything else is returned
    as it is.
    """
    if type(dim) is int or dim is None:
        return dim
    if type(dim) is list or type(dim) is tuple:
        return tuple(map(as_int, dim))
    return as_int(dim)


def reduction_dim_as_axis(name: str, dim: Any, x: Any, empty: str = "all") -> Any:
    """PyTorch's ``dim`` of the reduction ``name`` of ``x`` as the standard's ``axis``.

    As :func:`dim_as_axis`, with two rules of PyTorch's reductions that the
    standard lacks. A 0-d tensor has one dim to reduce, 0 (or -1), which
    reduces nothing: it gives ``axis=None``, as ``torch.mean(t, 0)`` of a 0-d
    ``t`` does. An empty ``dim`` (``()``, ``[]``) reduces every dim where
    ``empty`` is ``"all"`` (``torch.sum(x, dim=())`` is ``torch.sum(x)``), none
    where it is ``"none"`` (``torch.any``'s), and is refused where it is
    ``"refuse"`` (reductions PyTorch gives one int dim only, as ``argmax``).
    The standard's ``axis=()`` reduces nothing everywhere: only ``dim`` comes here.
    """
    if type(dim) is int:
        # NOTE: only dims 0 and -1 need the tensor's rank: the common call pays one test.
        if (dim == 0 or dim == -1) and getattr(x, "ndim", None) == 0:
            return None
        return dim
    if dim is None:
        return None
    axis = dim_as_axis(dim)
    if type(axis) is tuple:
        if any(type(a) is not int and _is_fractional(a) for a in axis):
            raise _fractional_dim(name, dim)
        if not axis:
            if empty == "all":
                return None
            if empty == "none":
                return ()
            raise ArgumentError(
                f"{name}(): dim={dim!r} names no dim, and {name}() reduces one int dim; pass "
                f"dim=None (or leave it out) to reduce every dim"
            )
        if len(axis) == 1 and (axis[0] == 0 or axis[0] == -1) and getattr(x, "ndim", None) == 0:
            return None
    elif type(axis) is not int and _is_fractional(axis):  # (an int, the common case, at once)
        raise _fractional_dim(name, dim)
    return axis


def _is_fractional(value: Any) -> bool:
    """Whether ``value`` is a number but no integer (``1.0``): a dim that a kernel would
    refuse as "'float' object cannot be interpreted as an integer", naming neither."""
    return isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral)


def _fractional_dim(name: str, dim: Any) -> ArgumentError:
    values = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    whole = all(isinstance(v, numbers.Integral) or float(v).is_integer() for v in values)
    ints = tuple(int(v) for v in values) if whole else None
    fix = (
        "" if ints is None else f"; give dim={ints if isinstance(dim, (tuple, list)) else ints[0]}"
    )
    return ArgumentError(
        f"{name}(): argument 'dim' must be an int or a tuple of ints, got {dim!r}{fix}"
    )


def as_int(value: Any) -> Any:
    """``value`` as a Python int if it is an integer of another kind, else ``value`` itself.

    PyTorch takes any integer where it takes an int (a dim, a size, a count): a NumPy
    integer, or a 0-d integer tensor, anything 0-d whose ``__index__`` gives one.
    Converted once where it is given, the value backward rules and compiled guards see is
    a plain int. A bool (a bool tensor too, which PyTorch refuses as an int), a float, a
    float tensor or a tensor of dimensions (a list of indices) comes back as it is, for the
    caller to read or refuse in its own words. An int costs one type test.

    Examples
    --------
    >>> import numpy, plugrad
    >>> from plugrad.opdef import as_int
    >>> as_int(numpy.int64(2)), as_int(plugrad.tensor(3)), as_int(True), as_int(1.5)
    (2, 3, True, 1.5)
    """
    if type(value) is int:
        return value
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        return value
    if getattr(value, "ndim", 0) or getattr(getattr(value, "dtype", None), "kind", 0) == "bool":
        return value  # (a tensor of indices, read elsewhere; a bool tensor)
    try:
        return operator.index(value)
    except (TypeError, ValueError):  # (plugrad's DtypeError and ShapeError are these too)
        return value
