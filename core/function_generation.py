"""Generates each op's public function and installs them with the Tensor methods ops declare.

Each function is compiled from text with the kernel's exact signature (so
Python itself rejects bad arguments) and calls dispatch directly: one call
per op, no wrapper.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from . import autocast_mode as _autocast_mode
from . import dtypes as _dtypes
from . import graph as _graph
from . import ops as _ops_module
from .dispatch import alpha_times, apply1, apply2, apply_general, apply_n, apply_view
from .errors import ArgumentError, AxisError, PlugradError, ShapeError, name_the_call
from .grad_mode import no_grad
from .inplace import apply_inplace, change_shape, check_out, into_out, write_out
from .opdef import RegisteredOp, dim_as_axis, reduction_dim_as_axis
from .plugin_tables import state as _state
from .tensor import Tensor


def install_functions(builtin: set[str], aliases: dict[str, str]) -> None:
    namespace = sys.modules["plugrad"]
    # Functions of the Array API extensions live in their own modules.
    extensions = {f"plugrad.{name}": sys.modules[f"plugrad.{name}"] for name in ("linalg", "fft")}
    modules = (_ops_module, namespace, *extensions.values())
    for alias in _state.aliases:
        for module in modules:
            if getattr(module.__dict__.get(alias), "__op__", None) is not None:
                delattr(module, alias)
    for name in list(_state.functions):
        if (
            name not in _state.ops
            or getattr(_state.functions[name], "__op__", None) is not _state.ops[name]
        ):
            del _state.functions[name]
            for key in [k for k in _state.method_functions if k[0] == name]:
                del _state.method_functions[key]
            for module in modules:
                if getattr(module.__dict__.get(name), "__op__", None) is not None:
                    delattr(module, name)
    for name, op in _state.ops.items():
        function = _state.functions.get(name)
        if function is None:
            is_builtin = _state.op_owners[name] in builtin
            home = "plugrad.ops"
            if is_builtin and op.namespace != "nn":  # nn ops stay out of the array namespace
                home = f"plugrad.{op.namespace}" if op.namespace else "plugrad"
            function = _make_function(op, home)
            _state.functions[name] = function
        setattr(_ops_module, name, function)
        if function.__module__ == "plugrad":
            setattr(namespace, name, function)
        elif function.__module__ in extensions:
            setattr(extensions[function.__module__], name, function)
    for alias, name in aliases.items():
        function = _alias_function(name, alias)
        setattr(_ops_module, alias, function)
        if function.__module__ == "plugrad":
            setattr(namespace, alias, function)
        elif function.__module__ in extensions:
            setattr(extensions[function.__module__], alias, function)
    _state.aliases = dict(aliases)
    # plugrad.linalg's own composites (lstsq, inv_ex, ...) sit below autocast's layer
    _autocast_mode.install_listed(extensions["plugrad.linalg"], "linalg.")
    public = {k: v for k, v in vars(namespace).items() if not k.startswith("_")}
    # Extension functions are reached as xp.linalg.<name> / xp.fft.<name>, as in the
    # backends' namespaces (plugrad.fft.fft must not hide the module plugrad.fft).
    top_level = {k: f for k, f in _state.functions.items() if f.__module__ not in extensions}
    _graph.tensor_namespace = types.SimpleNamespace(**{**public, **top_level})


def install_methods(methods: dict[str, str]) -> None:
    """Install the Tensor methods ops declare; remove methods of ops that are gone."""
    for name, function in _state.methods.items():
        if Tensor.__dict__.get(name) is function:
            delattr(Tensor, name)
    _state.methods = {
        method: _method_function(op, method)
        if method in _state.ops[op].method_names
        else _in_place_method(op, method)
        for method, op in methods.items()
    }
    for name, function in _state.methods.items():
        setattr(Tensor, name, function)
    _install_top_level_in_place()


#: PyTorch's top-level in-place functions (``torch.sigmoid_(x)`` is ``x.sigmoid_()``) that an
#: op's in-place method provides; listed because PyTorch offers them for some ops only
#: (``torch.exp_`` exists, ``torch.add_`` does not). An op that gains one of these methods gets
#: the function too.
TOP_LEVEL_IN_PLACE = frozenset({
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
    "clamp_min_", "clip_", "conj_physical_", "cos_", "cosh_", "deg2rad_", "erf_", "erfc_",
    "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "gcd_", "i0_", "lcm_", "ldexp_",
    "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_",
    "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_",
    "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_",
})  # fmt: skip
#: The top-level in-place functions installed, by name, to remove them when their op goes.
_top_level_in_place: dict[str, Callable[..., Any]] = {}


def _install_top_level_in_place() -> None:
    """Install ``plugrad.<name>_`` for the in-place methods of :data:`TOP_LEVEL_IN_PLACE`.

    A name the namespace already has from elsewhere (``relu_``, of nn.functional) keeps it.
    """
    namespace = sys.modules["plugrad"]
    for name, function in _top_level_in_place.items():
        if namespace.__dict__.get(name) is function:
            delattr(namespace, name)
    made = {}
    for name in sorted(TOP_LEVEL_IN_PLACE & _state.methods.keys()):
        method = _state.methods[name]
        if getattr(method, "__wrapped__", None) is None or hasattr(namespace, name):
            continue  # not an in-place form an op made, or a name with another owner
        made[name] = _top_level_function(name, method)
        setattr(namespace, name, made[name])
    _top_level_in_place.clear()
    _top_level_in_place.update(made)


def _top_level_function(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """``plugrad.<name>(input, ...)``: ``input.<name>(...)``, as PyTorch's ``torch.<name>``."""

    def function(input: Tensor, *args: Any, **params: Any) -> Tensor:
        if not isinstance(input, Tensor):
            raise ArgumentError(
                f"{name}() changes a tensor in place, so input must be a Tensor, "
                f"not {type(input).__name__}; for a new result, call {name[:-1]}() instead"
            )
        return method(input, *args, **params)

    function.__name__ = function.__qualname__ = name
    function.__module__ = "plugrad"
    function.__doc__ = (
        f"In-place :meth:`Tensor.{name[:-1]}`: ``plugrad.{name}(x, ...)`` is ``x.{name}(...)``."
    )
    first, *rest = inspect.signature(method).parameters.values()
    kind = first.kind
    if all(p.kind is not p.POSITIONAL_ONLY for p in rest):
        kind = first.POSITIONAL_OR_KEYWORD  # torch.sigmoid_(input=x), as PyTorch
    function.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [first.replace(name="input", kind=kind, annotation="Tensor"), *rest],
        return_annotation="Tensor",
    )
    function.__op__ = method.__op__  # type: ignore[attr-defined]
    function.__wrapped__ = method  # type: ignore[attr-defined]
    return function


def _in_place_method(name: str, method: str) -> Callable[..., Any]:
    """``x.<method>(...)`` (``add_``): make ``x`` hold the op's result, like ``x += y``.

    The version-counter checks of :func:`plugrad.inplace.apply_inplace` apply:
    a backward pass that saved the old value raises, and a leaf that requires
    grad may change only under ``no_grad``.
    """
    op = _state.ops[name]
    function = _method_function(name, method[:-1])
    made = _in_place_forms.setdefault(op, {})
    known = made.get(method)
    if known is not None and known.__wrapped__ is function:  # type: ignore[attr-defined]
        return known  # a rebuild that changes nothing installs the same methods
    array_operator = op.inplace if callable(op.inplace) else None
    label = f"{method}()"

    if op.view:  # the in-place form of a view changes the tensor's shape (squeeze_, t_)

        def in_place(self: Tensor, *args: Any, **params: Any) -> Tensor:
            try:
                return change_shape(self, functools.partial(function, **params), *args, name=label)
            except PlugradError as error:
                name_the_call(error, method)  # (it named the op: expand_dims for unsqueeze_)
                raise

    else:
        # PyTorch's deprecated x.add_(number, tensor) form, for the methods that have one.
        keyword = _LEADING_NUMBER_FORMS.get(method)

        def in_place(self: Tensor, *args: Any, **params: Any) -> Tensor:
            if keyword is not None and len(args) > 1:
                if _is_leading_number_form(args, params, keyword):
                    params = {**params, **_leading_number_form(method, keyword, args)}
                    args = args[1:]
            try:
                if params:
                    if "out" in params:
                        raise ArgumentError(
                            f"{label} takes no out=: it writes its result into the tensor "
                            f"itself; for a result in another tensor, call "
                            f"x.{method[:-1]}(..., out=that)"
                        )
                    return apply_inplace(self, function, *args, name=label, keywords=params)
                return apply_inplace(
                    self, function, *args, name=label, array_operator=array_operator
                )
            except PlugradError as error:
                name_the_call(error, method)  # (it named the op: clip for clamp_)
                raise

    in_place.__name__ = method
    in_place.__qualname__ = f"Tensor.{method}"
    in_place.__module__ = "plugrad.Tensor"
    in_place.__doc__ = f"In-place :meth:`{method[:-1]}`: ``x.{method}(...)`` makes ``x`` hold it."
    signature = inspect.signature(function)
    in_place.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[p for p in signature.parameters.values() if p.name != "out"]
    )
    in_place.__op__ = op  # type: ignore[attr-defined]
    in_place.__wrapped__ = function  # type: ignore[attr-defined]
    made[method] = in_place
    return in_place


#: The in-place methods made for each op, by method name (see :func:`_in_place_method`).
_in_place_forms: weakref.WeakKeyDictionary[RegisteredOp, dict[str, Callable[..., Any]]] = (
    weakref.WeakKeyDictionary()
)


def _method_function(name: str, method: str) -> Callable[..., Any]:
    """The function installed as the op's Tensor method ``method``, made once."""
    function = _state.method_functions.get((name, method))
    if function is None:
        op = _state.ops[name]
        adapter = op.method_adapters.get(method)
        if adapter is not None:
            function = _adapted_method(op, method, adapter)
        elif (
            _torch_names(op)
            or op.alpha
            or method in _ACCUMULATING_METHODS
            or _second_input_keyword(op) is not None
        ):
            function = _make_function(
                op, "plugrad.Tensor", method=True, accumulates=method in _ACCUMULATING_METHODS,
                called=method,
            )  # fmt: skip
        else:
            function = _state.functions[name]
        _state.method_functions[name, method] = function
    return function


#: PyTorch's keyword for the second input of a two-input op's method, where it is not "other".
_SECOND_INPUT_KEYWORDS = {"pow": "exponent", "float_power": "exponent", "heaviside": "values"}


def _second_input_keyword(op: RegisteredOp) -> str | None:
    """The keyword a method of ``op`` takes its second input by, as PyTorch's (``x.add(other=
    y)``): for ops of two inputs taken by position only and keyword-only params otherwise."""
    if op.signature is None or len(op.input_names) != 2 or op.sequence_kind is not None:
        return None
    kinds = inspect.Parameter
    for parameter in op.signature.parameters.values():
        if parameter.name in op.input_names:
            if parameter.kind is not kinds.POSITIONAL_ONLY:
                return None
        elif parameter.kind is not kinds.KEYWORD_ONLY:
            return None
    keyword = _SECOND_INPUT_KEYWORDS.get(op.name, "other")
    return None if keyword in op.signature.parameters else keyword


#: PyTorch's methods that sum or multiply: unsigned integers accumulate in int64 there (the
#: standard's functions keep the unsigned kind, so x.sum() - 5 of uint8 would wrap).
_ACCUMULATING_METHODS = frozenset({"sum", "prod", "cumsum", "cumprod"})


def _torch_accumulation(x: Tensor, dtype: _dtypes.DType | None) -> tuple[Tensor, Any]:
    """The input and dtype of PyTorch's ``x.sum()`` (and ``prod``, ``cumsum``, ``cumprod``)
    of unsigned integers or bools: the default integer dtype (``int64``; the standard's keeps
    ``uint8`` unsigned), bools converted first (the standard's functions take numbers only)."""
    if dtype is None:
        dtype = x._device.default_int_dtype
    if x.dtype == _dtypes.bool:
        x = _ops_module.astype(x, dtype)
    return x, dtype


#: In-place methods whose PyTorch overload with a leading number is deprecated but still
#: accepted (``p.add_(-lr, grad)``, ``v.addcmul_(1 - beta, g, g)``: older optimizer code),
#: with the keyword that number is.
_LEADING_NUMBER_FORMS = {
    "add_": "alpha", "sub_": "alpha", "subtract_": "alpha", "addcmul_": "value",
    "addcdiv_": "value",
}  # fmt: skip


def _leading_number_form(method: str, keyword: str, args: tuple[Any, ...]) -> dict[str, Any]:
    """The keywords of ``x.method(number, tensor, ...)``, PyTorch's deprecated form (warned)."""
    warnings.warn(
        f"x.{method}(number, tensor, ...) is PyTorch's deprecated form of "
        f"x.{method}(tensor, ..., {keyword}=number), read as that",
        UserWarning,
        stacklevel=_callers_level(),
    )
    return {keyword: args[0]}


def _is_leading_number_form(args: tuple[Any, ...], params: dict[str, Any], keyword: str) -> bool:
    return (
        len(args) >= 2
        and isinstance(args[0], (int, float))
        and not isinstance(args[0], bool)
        and isinstance(args[1], Tensor)
        and keyword not in params
    )


def _callers_level() -> int:
    """The ``stacklevel`` of a warning that names the first caller outside plugrad."""
    frame: types.FrameType | None = sys._getframe(2)  # the frame that called warn()'s caller
    level = 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("plugrad"):
        frame, level = frame.f_back, level + 1
    return level


def _alias_function(name: str, alias: str) -> Callable[..., Any]:
    """The public function ``alias`` of the op ``name``: the op's own, or its adapter's."""
    function = _state.functions[name]
    adapter = _state.ops[name].alias_adapters.get(alias)
    if adapter is None:
        return function
    made = _state.method_functions.get((name, f"plugrad.{alias}"))
    if made is None or made.__wrapped__ is not adapter:  # type: ignore[attr-defined]
        made = _adapted_function(_state.ops[name], alias, adapter, function.__module__)
        _state.method_functions[name, f"plugrad.{alias}"] = made
    return made


def _signature_without_xp(adapter: Callable[..., Any]) -> inspect.Signature:
    """The adapter's signature less its ``xp``; returning a Tensor where it is marked
    :func:`~plugrad.plugins._rules.one_array` (its own annotation says only ``Any``)."""
    signature = inspect.signature(adapter)
    returns = "Tensor" if getattr(adapter, "returns_one_array", False) else None
    return signature.replace(
        parameters=list(signature.parameters.values())[1:],
        return_annotation=returns or signature.return_annotation,
    )


#: PyTorch names of ops with adapters that take no ``out=`` in PyTorch (their results are
#: views, several tensors of any number, or no tensor).
_NO_OUT = frozenset({
    "cdist", "dist", "fliplr", "flipud", "narrow", "repeat_interleave", "rot90", "select",
    "std_mean", "unique", "var_mean",
})  # fmt: skip


def _adapted_function(
    op: RegisteredOp, alias: str, adapter: Callable[..., Any], module: str
) -> Callable[..., Any]:
    """The public function ``adapter(xp, x, ...)`` with ``xp`` the plugrad namespace."""

    spelled = _taking_the_standards_names(alias, adapter)
    signature = _signature_without_xp(adapter)

    if "out" in signature.parameters or op.view or alias in _NO_OUT:

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return spelled(_graph.tensor_namespace, *args, **kwargs)
            except (TypeError, PlugradError, AttributeError) as error:
                _explain_failure(error, adapter, alias, args, kwargs)
                raise

    else:  # PyTorch's out= (cumsum, logsumexp, cummax's pair...)

        def call(*args: Any, out: Any = None, **kwargs: Any) -> Any:
            try:
                if out is None:
                    return spelled(_graph.tensor_namespace, *args, **kwargs)
                return into_out(alias, out, (), spelled, _graph.tensor_namespace, *args, **kwargs)
            except (TypeError, PlugradError, AttributeError) as error:
                _explain_failure(error, adapter, alias, args, kwargs)
                raise

        out = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)
        parameters = list(signature.parameters.values())
        at = next(
            (i for i, p in enumerate(parameters) if p.kind is inspect.Parameter.VAR_KEYWORD),
            len(parameters),
        )
        signature = signature.replace(parameters=[*parameters[:at], out, *parameters[at:]])

    call.__signature__ = signature  # type: ignore[attr-defined]
    call.__name__ = call.__qualname__ = alias
    call.__module__ = module
    call.__doc__ = adapter.__doc__ or op.doc
    call.__op__ = op  # type: ignore[attr-defined]
    listed = alias if module == "plugrad" else f"{module.removeprefix('plugrad.')}.{alias}"
    if _autocast_mode.is_listed(listed):  # (addmm: its addition in the lower precision too)
        call = _autocast_mode.listed(listed)(call)
    call.__wrapped__ = adapter  # type: ignore[attr-defined]
    return call


def _adapted_method(op: RegisteredOp, method: str, adapter: Callable[..., Any]) -> Any:
    """The Tensor method ``adapter(xp, self, ...)`` with ``xp`` the plugrad namespace."""

    spelled = _taking_the_standards_names(method, adapter)

    def call(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        try:
            return spelled(_graph.tensor_namespace, self, *args, **kwargs)
        except (TypeError, PlugradError) as error:
            _explain_failure(error, adapter, method, (self, *args), kwargs)
            raise

    call.__signature__ = _signature_without_xp(adapter)  # type: ignore[attr-defined]
    call.__name__ = method
    call.__qualname__ = f"Tensor.{method}"
    call.__module__ = "plugrad.Tensor"
    call.__doc__ = adapter.__doc__ or op.doc
    call.__op__ = op  # type: ignore[attr-defined]
    if _autocast_mode.is_listed(method):  # as its function (x.addmm is addmm)
        return _autocast_mode.listed(method)(call)
    return call


#: PyTorch's reductions that pick an element along ``dim`` (or compare its elements): where
#: ``dim`` has none, PyTorch raises "Expected reduction dim 1 to have non-zero size", an
#: IndexError; the kernels' errors named an op these are made of (take_along_axis, argmax).
_PICKING_REDUCTIONS = frozenset({
    "max", "min", "amax", "amin", "aminmax", "argmax", "argmin", "median", "nanmedian",
    "kthvalue",
})  # fmt: skip


def _explain_failure(
    error: BaseException, adapter: Callable[..., Any], name: str, args: Any, kwargs: Any
) -> None:
    """On the failure path of the PyTorch function or method ``name`` made of ``adapter``:
    make Python's binding error name ``name``, or raise PyTorch's error for a reduction
    along an empty dim; otherwise the caller re-raises ``error`` as it is."""
    if isinstance(error, AttributeError):
        # The adapter read a Tensor attribute of a number given for its input (clamp_min(2, x)).
        given, _ = _input_and_dim(adapter, args, kwargs)
        if given is not None and not isinstance(given, Tensor):
            raise ArgumentError(
                f"{name}(): its input must be a Tensor, got {type(given).__name__} "
                f"{given!r}; pass plugrad.tensor({given!r}) or put the tensor first"
            ) from error
    elif isinstance(error, TypeError):
        _rename_binding_error(error, adapter, name)
    elif name in _PICKING_REDUCTIONS:
        _refuse_empty_dim(name, *_input_and_dim(adapter, args, kwargs), name not in _MEDIANS)


def _input_and_dim(
    adapter: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Any, Any]:
    """The input and ``dim`` of a call of ``adapter`` that failed (``None`` for either that
    cannot be found: the failure is then left as it is)."""
    try:
        bound = inspect.signature(adapter).bind(None, *args, **kwargs)
    except TypeError:
        return None, None
    values = list(bound.arguments.values())
    dim = bound.arguments.get("dim")
    if dim is None:
        dim = bound.arguments.get("axis", kwargs.get("axis"))
    return (values[1] if len(values) > 1 else None), dim


#: Their own error tells the empty median of integers (a float tensor's is NaN, as PyTorch's).
_MEDIANS = frozenset({"median", "nanmedian"})


def _refuse_empty_dim(name: str, x: Any, dim: Any, whole: bool = True) -> None:
    """Raise PyTorch's error for the reduction ``name`` of ``x`` along ``dim`` where that
    dim has length 0 (no element to pick), or over every dim (``dim=None``) of an empty
    ``x`` where ``whole``; else return, and the caller re-raises the error it caught.
    Called on the failure path only."""
    if not isinstance(x, Tensor):
        return
    shape = tuple(x.shape)
    if dim is None:
        if whole and 0 in shape:  # (else NumPy's "zero-size array to reduction operation")
            raise ShapeError(
                f"{name}(): the input of shape {shape} has no elements, so there is none to "
                "take over all dims; give dim= over a dim that holds elements, or check "
                "x.numel() > 0 first"
            ) from None
        return
    for d in dim if isinstance(dim, (tuple, list)) else (dim,):
        if type(d) is int and -len(shape) <= d < len(shape) and shape[d] == 0:
            raise AxisError(
                f"{name}(): expected reduction dim {d} to have non-zero size, but the input "
                f"has shape {shape}: there is no element to take along dim {d}; reduce along "
                f"a dim that holds elements, or check x.size({d}) > 0 first"
            ) from None


def _rename_binding_error(error: TypeError, adapter: Callable[..., Any], name: str) -> None:
    """Make ``error`` name the function called (``var_mean()``) where Python named the adapter
    (``_spread_and_mean.<locals>.spread_and_mean() got an unexpected keyword argument 'out'``)
    for arguments it does not take; any other TypeError is left as it is. Only on the failure
    path: a call whose arguments bind pays nothing for it."""
    message = str(error)
    internal = f"{adapter.__qualname__}() "
    # (a count of positional arguments counts the adapter's xp too: left as Python says it)
    if type(error) is TypeError and message.startswith(internal) and " but " not in message:
        error.args = (f"{name}() {message[len(internal) :]}",)


def _taking_the_standards_names(name: str, adapter: Callable[..., Any]) -> Callable[..., Any]:
    """``adapter``, taking the standard's ``axis=``/``keepdims=`` for its PyTorch ``dim``/
    ``keepdim`` (PyTorch takes both spellings everywhere: ``x.median(axis=0)``)."""
    parameters = inspect.signature(adapter).parameters
    renames = {
        standard: torch
        for standard, torch in _TORCH_NAMES.items()
        if torch in parameters and standard not in parameters
    }
    if not renames:
        return adapter

    def renamed(*args: Any, **kwargs: Any) -> Any:
        for standard, torch in renames.items():
            if standard in kwargs:
                if torch in kwargs:
                    raise _both_given(name, standard, torch)
                kwargs[torch] = kwargs.pop(standard)
        return adapter(*args, **kwargs)

    return renamed


class _DefaultName:
    """Prints as a variable name, so a signature's text can refer to its defaults."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: PyTorch's names of the reduction params, accepted beside the standard's.
_TORCH_NAMES = {"axis": "dim", "keepdims": "keepdim"}


class _Unset:
    """The default of ``dim``/``keepdim``: tells "not given" from every value."""

    def __repr__(self) -> str:
        return "<unset>"


_UNSET = _Unset()


def _both_given(op: str, standard: str, torch: str) -> ArgumentError:
    return ArgumentError(
        f"{op}() got both {standard}= and {torch}=, which name the same argument "
        f"({torch} is PyTorch's name for {standard}); pass only one"
    )


def _torch_names(op: RegisteredOp) -> dict[str, str]:
    """The op's params (with defaults) that PyTorch names otherwise: ``{"axis": "dim"}``."""
    assert op.signature is not None
    parameters = op.signature.parameters
    return {
        standard: torch
        for standard, torch in _TORCH_NAMES.items()
        if standard in op.param_names
        and parameters[standard].default is not inspect.Parameter.empty
        and torch not in parameters
    }


def _axis_of_dim(op: RegisteredOp, dim: str) -> str:
    """Source converting PyTorch's ``dim`` to the op's ``axis``; a reduction's (an op taking
    ``keepdims``) reads it as PyTorch's reductions do (see ``reduction_dim_as_axis``): what
    an empty ``dim`` means comes from the op's ``torch_function`` (its ``empty_dim``)."""
    if "keepdims" not in op.param_names:
        return f"_dim_as_axis({dim})"
    empty = getattr(op.torch_function, "empty_dim", "all")
    return f"_reduction_dim_as_axis({op.name!r}, {dim}, {op.input_names[0]}, {empty!r})"


def _takes_out(op: RegisteredOp, method: bool) -> bool:
    """Whether the op's public function takes PyTorch's ``out=`` (one output, not a view)."""
    assert op.signature is not None
    # (a "sequence" op takes its inputs as one list: concat and stack have one result)
    several = op.multiple_outputs or op.sequence_kind == "variadic"
    return not (method or several or op.view or "out" in op.signature.parameters)


def _torch_form_prelude(
    op: RegisteredOp, torch_params: list[inspect.Parameter], form: inspect.Signature
) -> str:
    """Source that hands a call in PyTorch's form (see ``torch_function``) to the adapter."""
    assert op.signature is not None
    own = op.signature.parameters
    required = [n for n in op.param_names if own[n].default is inspect.Parameter.empty]
    tests = [f"{p.name} is not _unset" for p in torch_params] + [f"{n} is _unset" for n in required]
    lines = [f"    if {' or '.join(tests)}:\n", "        _given = {}\n"]
    for p in torch_params:
        lines.append(f"        if {p.name} is not _unset:\n")
        lines.append(f"            _given[{p.name!r}] = {p.name}\n")
    for name in op.param_names:
        unset = "_unset" if name in required else f"_default_{name}"
        if name in form.parameters:  # shared: passed on when given
            lines.append(f"        if {name} is not {unset}:\n")
            lines.append(f"            _given[{name!r}] = {name}\n")
        else:  # the op's own only: it has no meaning in PyTorch's form
            lines.append(
                f"        if {name} is not {unset}:\n"
                f"            raise _torch_form_mixed({op.name!r}, {name!r})\n"
            )
    x = op.input_names[0]
    if op.sequence_kind is None:  # (concat's input is a list)
        lines.append(f"        if not isinstance({x}, _Tensor):\n")
        lines.append(f"            raise _torch_form_input({op.name!r}, {x})\n")
    if _takes_out(op, False):
        # PyTorch's out= in PyTorch's form: the result written as the standard form's is.
        lines.append(
            "        if out is not None:\n"
            f"            return into_out({op.name!r}, out, ({x},), _torch_form, "
            f"_graph.tensor_namespace, {x}, **_given)\n"
        )
    if op.name not in _PICKING_REDUCTIONS:
        lines.append(f"        return _torch_form(_graph.tensor_namespace, {x}, **_given)\n")
        return "".join(lines)
    lines.append(
        "        try:\n"
        f"            return _torch_form(_graph.tensor_namespace, {x}, **_given)\n"
        "        except _PlugradError:\n"
        f"            _refuse_empty_dim({op.name!r}, {x}, _given.get('dim'))\n"
        "            raise\n"
    )
    return "".join(lines)


def _torch_form_input(op: str, given: Any) -> ArgumentError:
    return ArgumentError(
        f"{op}(): its input must be a Tensor, got {type(given).__name__} {given!r}; pass "
        f"plugrad.tensor({given!r})"
    )


def _torch_form_mixed(op: str, name: str) -> ArgumentError:
    return ArgumentError(
        f"{op}(): {name}= belongs to the Array API form of {op}(), but the call uses PyTorch's "
        f"(dim given by position, or one of PyTorch's own argument names); write the call "
        f"wholly in one form, e.g. {op}(x, axis=..., {name}=...) or PyTorch's {op}(x, dim, ...)"
    )


def _make_function(
    op: RegisteredOp, module: str, method: bool = False, accumulates: bool = False,
    called: str | None = None,
) -> Callable[..., Any]:  # fmt: skip
    """Generate ``def name(<kernel signature without xp>): return apply(op, ...)``.

    Generated rather than wrapped so the function has the kernel's exact
    signature (Python itself rejects bad arguments) and costs one call.
    Params named ``axis``/``keepdims`` (with a default) may also be given as
    PyTorch's ``dim``/``keepdim``; for a Tensor method (``method=True``) these
    come right after the op's positional params, so ``x.sum(1, True)`` works
    as in PyTorch. ``accumulates``: a method in :data:`_ACCUMULATING_METHODS`, whose
    ``dtype`` defaults to ``int64`` for unsigned integer tensors. ``called``: the name the
    function is called by, where not the op's (the method ``amax`` of ``max``), for errors.
    """
    assert op.signature is not None
    kinds = inspect.Parameter
    defaults: dict[str, Any] = {"_unset": _UNSET}
    parameters = []
    for p in op.signature.parameters.values():
        if p.default is not kinds.empty:
            defaults[f"_default_{p.name}"] = p.default
            p = p.replace(default=_DefaultName(f"_default_{p.name}"))
        parameters.append(p.replace(annotation=kinds.empty))
    torch_form = None if method else op.torch_function
    torch_params: list[inspect.Parameter] = []
    if torch_form is not None:
        # Params of PyTorch's form that the op lacks; they reach only the adapter.
        torch_params = [
            p for p in list(inspect.signature(torch_form).parameters.values())[2:]
            if p.name not in op.signature.parameters
            and p.kind not in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD)
        ]  # fmt: skip
    taken = {p.name for p in torch_params}
    torch_names = {k: v for k, v in _torch_names(op).items() if v not in taken}
    if torch_params:
        assert torch_form is not None
        required = [n for n in op.param_names if op.signature.parameters[n].default is kinds.empty]
        parameters = [
            p.replace(default=_DefaultName("_unset")) if p.name in required else p
            for p in parameters
        ]
        # PyTorch's params come by position only where the op's own params are keyword-only,
        # in PyTorch's order: its own (dim) and those the op shares (sort's descending).
        by_position = all(op.signature.parameters[n].kind is kinds.KEYWORD_ONLY
                          for n in op.param_names)  # fmt: skip
        torch_positional = []
        if by_position:
            own = {p.name: p for p in parameters}
            for p in list(inspect.signature(torch_form).parameters.values())[2:]:
                if p.kind not in (kinds.POSITIONAL_OR_KEYWORD, kinds.POSITIONAL_ONLY):
                    break
                if p.name in taken:
                    torch_positional.append(kinds(p.name, kinds.POSITIONAL_OR_KEYWORD,
                                                  default=_DefaultName("_unset")))  # fmt: skip
                elif p.name in own:
                    torch_positional.append(own[p.name].replace(kind=kinds.POSITIONAL_OR_KEYWORD))
                else:
                    break
        moved = {q.name for q in torch_positional}
        parameters = [
            p for p in parameters if p.name not in moved or p.kind is not kinds.KEYWORD_ONLY
        ]
        at = next(
            (i for i, p in enumerate(parameters) if p.kind is kinds.KEYWORD_ONLY), len(parameters)
        )
        torch_keyword = [
            kinds(p.name, kinds.KEYWORD_ONLY, default=_DefaultName("_unset"))
            for p in torch_params
            if p.name not in moved
        ]
        parameters[at:at] = torch_positional
        parameters.extend(torch_keyword)
    if torch_names:
        positional = method and all(
            op.signature.parameters[n].kind is kinds.KEYWORD_ONLY for n in torch_names
        )
        extra = [
            kinds(torch, kinds.POSITIONAL_OR_KEYWORD if positional else kinds.KEYWORD_ONLY,
                  default=_DefaultName("_unset"))
            for torch in torch_names.values()
        ]  # fmt: skip
        if positional:
            at = next(
                (i for i, p in enumerate(parameters) if p.kind is kinds.KEYWORD_ONLY),
                len(parameters),
            )
            if any(p.kind is kinds.VAR_POSITIONAL for p in parameters):
                positional = False
        if positional:
            parameters[at:at] = extra
        else:
            parameters.extend(extra)
    prelude = "".join(
        f"    if {torch} is not _unset:\n"
        f"        if {standard} is not _default_{standard}:\n"
        f"            raise _both_given({op.name!r}, {standard!r}, {torch!r})\n"
        + (f"        {standard} = {_axis_of_dim(op, torch)}\n" if standard == "axis" else
           f"        {standard} = {torch}\n")
        for standard, torch in torch_names.items()
    )  # fmt: skip
    if torch_params:
        assert torch_form is not None
        prelude += _torch_form_prelude(op, torch_params, inspect.signature(torch_form))
    if torch_form is not None and len(op.input_names) > 1:
        # Inputs after the first that default to None: a call leaving one out is PyTorch's.
        first, *rest = op.input_names
        prelude += (
            f"    if {' or '.join(f'{i} is None' for i in rest)}:\n"
            f"        return _torch_form(_graph.tensor_namespace, {first}, {', '.join(rest)})\n"
        )
    if op.sequence_kind == "variadic":
        # PyTorch's meshgrid([a, b]) beside meshgrid(a, b): one list or tuple of the inputs.
        arrays = op.input_names[0]
        prelude += (
            f"    if len({arrays}) == 1 and type({arrays}[0]) in (list, tuple):\n"
            f"        {arrays} = tuple({arrays}[0])\n"
        )
    if accumulates and "dtype" in op.param_names:
        defaults["_torch_accumulation"] = _torch_accumulation
        x = op.input_names[0]
        prelude += (
            f"    if {x}._array.dtype in {x}._device.summed_as_int_natives:\n"
            f"        {x}, dtype = _torch_accumulation({x}, dtype)\n"
        )
    if op.alpha:
        # PyTorch's factor for the second input: x.add(y, alpha=2) is x + 2 * y. The
        # function tests identity with the default: the cheapest test, as x + y calls it.
        defaults["_default_alpha"] = 1
        alpha = kinds("alpha", kinds.KEYWORD_ONLY, default=_DefaultName("_default_alpha"))
        parameters.append(alpha)
        second = op.input_names[1]
        test = "alpha != 1" if method else "alpha is not _default_alpha"
        first = op.input_names[0]
        prelude += (
            f"    if {test}:\n"
            f"        {second} = _alpha_times({op.name!r}, {first}, {second}, alpha)\n"
        )
    if _takes_out(op, method):
        parameters.append(kinds("out", kinds.KEYWORD_ONLY, default=None))
    keyword = _second_input_keyword(op) if method else None
    if keyword is not None:
        # The method takes its second input by PyTorch's keyword too (x.add(other=y)).
        second = op.input_names[1]
        parameters = [
            kinds(keyword, kinds.POSITIONAL_OR_KEYWORD) if p.name == second else p
            for p in parameters
        ]
        prelude = f"    {second} = {keyword}\n" + prelude
    signature = op.signature.replace(
        parameters=parameters, return_annotation=inspect.Signature.empty
    )
    inputs = op.input_names
    params = (
        "None"
        if not op.param_names
        else ("{" + ", ".join(f"{p!r}: {p}" for p in op.param_names) + "}")
    )
    general = f"_apply_general(_op, ({''.join(f'{i}, ' for i in inputs)}), {params})"
    if op.general:
        call = general
    elif op.view:
        call = f"_apply_view(_op, {inputs[0]}, {params})"
    elif op.declared_inputs is not None:
        # Declared inputs may be left out (None), which only apply_n accepts.
        call = f"_apply_n(_op, ({', '.join(inputs)},), {params})"
    elif len(inputs) == 1:
        call = f"_apply1(_op, {inputs[0]}, {params})"
    elif len(inputs) == 2:
        call = f"_apply2(_op, {inputs[0]}, {inputs[1]}, {params})"
    else:
        call = f"_apply_n(_op, ({', '.join(inputs)},), {params})"
    if op.dtype_params and not op.general:
        # Converting a dtype takes the general path; calls without one stay on the fast path.
        fast = " and ".join(f"{p} is None" for p in op.dtype_params)
        body = f"    if {fast}:\n        return {call}\n    return {general}\n"
        computed = f"({call}) if {fast} else ({general})"
    else:
        body = f"    return {call}\n"
        computed = call
    if _takes_out(op, method):
        # PyTorch's out=: refused while autograd records, else the result is written into out.
        checked_inputs = (
            f"tuple({inputs[0]})"
            if op.sequence_kind == "sequence"
            else f"({''.join(f'{i}, ' for i in inputs)})"
        )
        body = (
            f"    if out is not None:\n"
            f"        _check_out({op.name!r}, out, {checked_inputs})\n"
            f"        with _no_grad():\n"
            f"            return _write_out({op.name!r}, out, {computed})\n"
        ) + body
    if op.name in _PICKING_REDUCTIONS and "axis" in op.param_names:
        # An axis of length 0 has no element to pick: the kernel's error said so in its own
        # words, on some backends only (see _refuse_empty_dim). A try costs nothing until
        # something is raised.
        body = (
            "    try:\n"
            + "".join(f"    {line}\n" for line in body.splitlines())
            + "    except _PlugradError:\n"
            f"        _refuse_empty_dim({called or op.name!r}, {inputs[0]}, axis)\n"
            "        raise\n"
        )
    source = f"def {op.name}{signature}:\n{prelude}{body}"
    scope: dict[str, Any] = {
        "_op": op, "_apply1": apply1, "_apply2": apply2, "_apply_n": apply_n,
        "_apply_general": apply_general, "_apply_view": apply_view, "_both_given": _both_given,
        "_check_out": check_out, "_write_out": write_out, "_no_grad": no_grad,
        "_torch_form": torch_form, "_graph": _graph, "_torch_form_mixed": _torch_form_mixed,
        "_torch_form_input": _torch_form_input, "_Tensor": Tensor,
        "into_out": into_out,
        "_dim_as_axis": dim_as_axis, "_reduction_dim_as_axis": reduction_dim_as_axis,
        "_alpha_times": alpha_times, "_PlugradError": PlugradError,
        "_refuse_empty_dim": _refuse_empty_dim,
        **defaults,
    }  # fmt: skip
    exec(compile(source, f"<plugrad op {op.name}>", "exec"), scope)
    _autocast_mode.register_scope(op, scope)
    function = scope[op.name]
    function.__module__ = module
    function.__doc__ = op.doc
    function.__op__ = op
    if op.namespace or method:
        function.__qualname__ = f"Tensor.{op.name}" if method else op.name
    return function


def top_level_in_place() -> tuple[str, ...]:
    """The names of the top-level in-place functions installed (see :data:`TOP_LEVEL_IN_PLACE`)."""
    return tuple(sorted(_top_level_in_place))
