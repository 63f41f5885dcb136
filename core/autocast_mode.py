"""Autocast's state and casts: inside an enabled :class:`plugrad.autocast` region, the ops
PyTorch's autocast lists run in a lower precision (or in float32), as PyTorch's.

The state is per thread and per device type (``"cpu"``, ``"cuda"``), as
PyTorch's: whether autocast is enabled, its dtype, whether casts of parameters
are cached, and how deep the regions nest. What an op does inside a region
depends on its kind in the device type's policy (:data:`POLICIES`):

- ``"lower"`` (matmul, linear, convolutions, ...): its floating-point tensor
  arguments other than float64 are cast to the region's dtype;
- ``"fp32"`` (losses, linear algebra, FFTs, ...): those arguments are cast to
  float32;
- ``"promote"`` (cat, stack, ...): its floating-point arguments are cast to
  the widest of their dtypes and the region's.
- ``"keep"`` (dot, mv, matrix_exp on the CPU): nothing is cast, and autocast is
  off inside (PyTorch's kernels of these are not made of lowered products);
- ``"fp32 lowered"`` (``linalg.pinv``): computed in float32, its result cast to the
  region's dtype (PyTorch's is a composite that ends in a lowered product).
- ``"refused"`` (binary_cross_entropy on CUDA): an error, as PyTorch's.

The casts are ordinary differentiable ``astype`` calls: a float32 parameter
used in bfloat16 gets a float32 gradient. A cast of a leaf that requires grad
(a parameter) is made once per outermost region and reused (``cache_enabled``).
An op runs with autocast off in its thread, so the ops a composite function
of the policy is made of are not cast again; functions outside the policy run
as they are, and the listed ops inside them are cast.

Where PyTorch's kind depends on the arguments, so does plugrad's (:data:`BY_ARGUMENTS`):
``einsum`` is lowered only where two operands share a label summed over (PyTorch's reaches
``bmm`` only then), ``tensordot`` on the CPU unless it sums every axis, ``inner`` on the CPU
unless both operands are vectors (a dot) or one is 0-d, and ``nn.functional.pad`` is float32
on the CPU in ``"replicate"`` mode and in ``"reflect"`` mode over one or two dimensions. The
``nn.LSTM`` and ``nn.RNN`` layers are lowered on the CPU (weights and states too), the
``nn.GRU`` layer is not, as PyTorch's; on CUDA none of them is lowered.
``nn.functional.max_pool3d`` is float32 with ``return_indices`` too. A cast cached in a
region is kept per dtype (PyTorch's would hand a nested float16 region its bfloat16
cast). Backward runs outside the region, in the dtypes the forward used; a compiled
step runs eagerly inside a region.

What it costs outside a region: nothing on the per-op path. The generated
functions of the listed ops are given autocasting entries while a region is
enabled in some thread (:func:`register_scope`), and the listed composite
functions (:func:`listed`) test one module flag per call.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, TypeVar

from . import dispatch as _dispatch
from . import dtypes as _dtypes
from . import ops as _ops
from .errors import NotSupportedError
from .tensor import Tensor

__all__ = [
    "BY_ARGUMENTS",
    "POLICIES",
    "cache_enabled",
    "cast_for",
    "clear_cache",
    "default_dtype",
    "device_type_of",
    "eligible",
    "enabled_dtype",
    "enabled_here",
    "install_listed",
    "is_listed",
    "listed",
    "register_scope",
    "region",
    "set_cache_enabled",
    "set_default_dtype",
    "set_enabled",
    "suspended",
]

F = TypeVar("F", bound=Callable[..., Any])

#: The dtype autocast uses where none is given, by device type (PyTorch's defaults).
_DEFAULT_DTYPES = {"cpu": _dtypes.bfloat16, "cuda": _dtypes.float16}


class _ThreadState(threading.local):
    """One thread's autocast state (each thread starts with autocast off, as in PyTorch)."""

    def __init__(self) -> None:
        #: device type -> dtype, for the device types autocast is enabled for
        self.enabled: dict[str, _dtypes.DType] = {}
        #: device type -> the dtype set for it (enabled or not)
        self.dtypes: dict[str, _dtypes.DType] = {}
        self.cache_enabled = True
        #: regions entered and not left (the cache is cleared when the outermost one ends)
        self.nesting = 0
        #: while > 0, an op of the policy runs: the ops it is made of are not cast again
        self.suspended = 0
        #: (id(leaf), dtype) -> (leaf, its cast), for leaves requiring grad
        self.cache: dict[tuple[int, _dtypes.DType], tuple[Tensor, Tensor]] = {}


_thread = _ThreadState()
_lock = threading.Lock()
#: (thread, device type) pairs with autocast enabled; the listed ops' functions autocast
#: while there is one.
_enabled_count = 0
#: Whether the listed composite functions look at the thread's state (``_enabled_count > 0``).
active = False
#: The globals of the functions generated for listed ops, given autocasting entries while
#: ``active``.
_scopes: list[dict[str, Any]] = []


def default_dtype(device_type: str) -> _dtypes.DType:
    """The dtype autocast uses for ``device_type`` in this thread where none is given."""
    return _thread.dtypes.get(device_type, _DEFAULT_DTYPES.get(device_type, _dtypes.float16))


def set_default_dtype(device_type: str, dtype: _dtypes.DType) -> None:
    _thread.dtypes[device_type] = dtype
    if device_type in _thread.enabled:
        _thread.enabled[device_type] = dtype


def enabled_dtype(device_type: str) -> _dtypes.DType | None:
    """The dtype of the enabled autocast for ``device_type`` in this thread, or ``None``."""
    return _thread.enabled.get(device_type)


def enabled_here() -> bool:
    """Whether autocast is enabled for some device type in this thread."""
    return active and bool(_thread.enabled)


def set_enabled(device_type: str, enabled: bool) -> None:
    """Enable or disable autocast for ``device_type`` in this thread (its dtype as set)."""
    global _enabled_count, active
    was = device_type in _thread.enabled
    if enabled == was:
        return
    if enabled:
        _thread.enabled[device_type] = default_dtype(device_type)
    else:
        del _thread.enabled[device_type]
    with _lock:
        _enabled_count += 1 if enabled else -1
        now = _enabled_count > 0
        if now != active:
            active = now
            for scope in _scopes:
                _swap_entries(scope, now)


def cache_enabled() -> bool:
    return _thread.cache_enabled


def set_cache_enabled(enabled: bool) -> None:
    _thread.cache_enabled = bool(enabled)


def clear_cache() -> None:
    """Forget the casts of parameters made in this thread's regions."""
    _thread.cache.clear()


class region:
    """Enter an autocast region for ``device_type``: what :class:`plugrad.autocast` does."""

    def __init__(self, device_type: str, dtype: _dtypes.DType, enabled: bool, cache: bool) -> None:
        self.settings = (device_type, dtype, enabled, cache)
        self.saved: list[tuple[bool, _dtypes.DType, bool]] = []

    def __enter__(self) -> None:
        device_type, dtype, enabled, cache = self.settings
        self.saved.append(
            (device_type in _thread.enabled, default_dtype(device_type), _thread.cache_enabled)
        )
        _thread.nesting += 1
        _thread.cache_enabled = cache
        set_default_dtype(device_type, dtype)
        set_enabled(device_type, enabled)

    def __exit__(self, *exc_info: object) -> None:
        device_type = self.settings[0]
        was_enabled, dtype, cache = self.saved.pop()
        _thread.nesting -= 1
        if _thread.nesting == 0:
            _thread.cache.clear()
        set_enabled(device_type, was_enabled)
        set_default_dtype(device_type, dtype)
        _thread.cache_enabled = cache


# -- the casts ----------------------------------------------------------------------------


#: Device -> the device type autocast knows it by.
_device_types: dict[Any, str] = {}


def device_type_of(device: Any) -> str:
    """The device type an autocast region for which covers ``device``: ``"cpu"`` or
    ``"cuda"`` for the memory of the CPU or of a CUDA GPU, whatever the backend (the torch
    backend's ``torch:cpu`` is ``"cpu"``); else the device's own type."""
    found = _device_types.get(device)
    if found is None:
        found = device.type
        if found not in ("cpu", "cuda"):
            native = device.native
            # a torch.device's type, a JAX device's platform ("gpu": CUDA); else the CPU's
            kind = getattr(native, "type", None) or getattr(native, "platform", None) or "cpu"
            found = {"gpu": "cuda"}.get(kind, kind) if isinstance(kind, str) else "cpu"
        _device_types[device] = found
    return found


def eligible(x: Any, device_type: str) -> bool:
    """A floating-point tensor of ``device_type`` other than float64: what autocast casts."""
    return (
        isinstance(x, Tensor)
        and device_type_of(x._device) == device_type
        and x.dtype.kind == "real floating"
        and x.dtype is not _dtypes.float64
    )


def _cast(x: Any, dtype: _dtypes.DType, device_type: str) -> Any:
    if not eligible(x, device_type) or x.dtype is dtype:
        return x
    cacheable = (
        _thread.cache_enabled
        and x._edge is None
        and x._requires_grad
        and dtype is _thread.enabled.get(device_type)
        and x.dtype is _dtypes.float32
    )
    if not cacheable:
        return _ops.astype(x, dtype)
    key = (id(x), dtype)
    cached = _thread.cache.get(key)
    if cached is None or cached[0] is not x:
        cached = (x, _ops.astype(x, dtype))
        _thread.cache[key] = cached
    return cached[1]


def _tensors_of(values: Iterable[Any]) -> Iterable[Tensor]:
    for value in values:
        if isinstance(value, Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from (v for v in value if isinstance(v, Tensor))


def _target(kind: str, dtype: _dtypes.DType, tensors: list[Tensor], device_type: str) -> Any:
    """The dtype the eligible arguments are cast to (``None``: none is cast)."""
    if kind == "keep":
        return None
    if kind == "lower":
        return dtype
    if kind == "fp32":
        return _dtypes.float32
    widest = dtype
    for x in tensors:
        if device_type_of(x._device) == device_type and x.dtype.kind == "real floating":
            widest = _dtypes.floating_result(widest, x.dtype)
    return widest


def _cast_all(values: tuple[Any, ...], target: _dtypes.DType, device_type: str) -> tuple[Any, ...]:
    return tuple(
        [_cast(v, target, device_type) for v in value]
        if isinstance(value, list)
        else tuple(_cast(v, target, device_type) for v in value)
        if isinstance(value, tuple)
        else _cast(value, target, device_type)
        for value in values
    )


class _Plan(NamedTuple):
    """What autocast does to one call: its device type, the dtype its eligible arguments are
    cast to (``None``: none is cast) and the dtype its result is cast to (``None``: none)."""

    device_type: str
    target: Any
    result: Any


def _policy_of(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any], dtype_given: bool
) -> _Plan | None:
    """What to do for a call of ``name`` with ``args`` and ``kwargs`` in this thread, or
    ``None`` where autocast has nothing to do (a ``"keep"`` call's plan casts nothing: it
    runs with autocast off inside). ``dtype_given``: the call names its result's dtype, which
    an ``"fp32"`` op then keeps (PyTorch's ``sum(x, dtype=...)``)."""
    if _thread.suspended or not _thread.enabled:
        return None
    tensors = list(_tensors_of((*args, *kwargs.values())))
    if not tensors:
        return None
    device_type = device_type_of(tensors[0]._device)
    dtype = _thread.enabled.get(device_type)
    if dtype is None:
        return None
    kind = POLICIES.get(device_type, {}).get(name)
    rule = BY_ARGUMENTS.get((device_type, name))
    if rule is not None:
        kind = rule(kind, args, kwargs)
    if kind is None or (kind == "fp32" and dtype_given):
        return None
    if kind == "refused":
        raise NotSupportedError(
            f"{name}() is unsafe to autocast (as in PyTorch): its input is usually a sigmoid's "
            "output, which a lower precision rounds to 0 or 1; use "
            "binary_cross_entropy_with_logits (BCEWithLogitsLoss) on the logits, or run it "
            f"under autocast({device_type!r}, enabled=False) with float32 inputs"
        )
    if kind == "fp32 lowered":
        return _Plan(device_type, _dtypes.float32, dtype)
    return _Plan(device_type, _target(kind, dtype, tensors, device_type), None)


def _cast_result(result: Any, dtype: _dtypes.DType, device_type: str) -> Any:
    if isinstance(result, tuple):
        parts = [_cast_result(r, dtype, device_type) for r in result]
        return type(result)(*parts) if hasattr(result, "_fields") else tuple(parts)
    return _cast(result, dtype, device_type)


# -- the listed ops' generated functions ---------------------------------------------------


def _op_name(op: Any) -> str:
    return f"{op.namespace}.{op.name}" if op.namespace else op.name


def _run_op(op: Any, inputs: tuple[Any, ...], params: Any, run: Callable[..., Any]) -> Any:
    """``run(inputs)``, the op's dispatch, with the op's autocast."""
    plan = _policy_of(
        _op_name(op), inputs, params or {}, bool(params) and params.get("dtype") is not None
    )
    if plan is None:
        return run(inputs)
    if plan.target is not None:
        inputs = _cast_all(inputs, plan.target, plan.device_type)
    result = run(inputs)
    return result if plan.result is None else _cast_result(result, plan.result, plan.device_type)


def _apply1(op: Any, x: Any, params: Any) -> Tensor:
    return _run_op(op, (x,), params, lambda inputs: _dispatch.apply1(op, inputs[0], params))


def _apply2(op: Any, x1: Any, x2: Any, params: Any) -> Tensor:
    return _run_op(
        op, (x1, x2), params, lambda inputs: _dispatch.apply2(op, inputs[0], inputs[1], params)
    )


def _apply_n(op: Any, inputs: tuple[Any, ...], params: Any) -> Tensor:
    return _run_op(op, inputs, params, lambda inputs: _dispatch.apply_n(op, inputs, params))


def _apply_general(op: Any, inputs: tuple[Any, ...], params: Any) -> Any:
    return _run_op(op, inputs, params, lambda inputs: _dispatch.apply_general(op, inputs, params))


#: The entries of a generated function's globals, and their autocasting forms.
_ENTRIES = {
    "_apply1": (_dispatch.apply1, _apply1),
    "_apply2": (_dispatch.apply2, _apply2),
    "_apply_n": (_dispatch.apply_n, _apply_n),
    "_apply_general": (_dispatch.apply_general, _apply_general),
}


def _swap_entries(scope: dict[str, Any], autocasting: bool) -> None:
    for entry, (plain, casting) in _ENTRIES.items():
        if entry in scope:
            scope[entry] = casting if autocasting else plain


def is_listed(name: str) -> bool:
    """Whether a policy lists ``name``."""
    return any(name in policy for policy in POLICIES.values())


def register_scope(op: Any, scope: dict[str, Any]) -> None:
    """Make the function generated for ``op`` (its globals ``scope``) take part in autocast,
    where a policy lists the op."""
    if not is_listed(_op_name(op)):
        return
    with _lock:
        _scopes.append(scope)
        if active:
            _swap_entries(scope, True)


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Autocast off in this thread inside: the ops a function of the policy is made of are
    not cast again."""
    _thread.suspended += 1
    try:
        yield
    finally:
        _thread.suspended -= 1


def cast_for(name: str, args: tuple[Any, ...]) -> Callable[[Any], Any] | None:
    """For a function of the policy that uses tensors beyond its arguments (a module's
    weights): the cast its kind gives each tensor it uses in this thread's region, or
    ``None`` where autocast leaves it alone (run it with :func:`suspended` otherwise).
    Only kinds that cast inputs alone (not ``"fp32 lowered"``) may be given this way."""
    if not active:
        return None
    plan = _policy_of(name, args, {}, False)
    if plan is None:
        return None
    assert plan.result is None, f"{name}: a kind that casts results has no cast_for"
    target = plan.target
    if target is None:
        return lambda x: x
    return lambda x: _cast(x, target, plan.device_type)


# -- the listed composite functions --------------------------------------------------------


def listed(name: str) -> Callable[[F], F]:
    """Decorate the composite function ``name`` (e.g. ``"nn.functional.linear"``) so that it
    casts its arguments in an autocast region as its kind in the policies says, and runs
    with autocast off (the ops it is made of are not cast again)."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            if not active:
                return function(*args, **kwargs)
            plan = _policy_of(name, args, kwargs, kwargs.get("dtype") is not None)
            if plan is None:
                return function(*args, **kwargs)
            if plan.target is not None:
                args = _cast_all(args, plan.target, plan.device_type)
                values = _cast_all(tuple(kwargs.values()), plan.target, plan.device_type)
                kwargs = dict(zip(kwargs, values))
            with suspended():
                result = function(*args, **kwargs)
            if plan.result is None:
                return result
            return _cast_result(result, plan.result, plan.device_type)

        call.__autocast_listed__ = name  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return decorate


def install_listed(module: Any, prefix: str) -> None:
    """Give the functions of ``module`` that the policies list as ``<prefix><name>`` their
    autocast (for a module of a lower layer than this one: ``plugrad.linalg``'s own
    functions, which plugin loading installs beside the generated ones)."""
    names = {
        n[len(prefix) :] for policy in POLICIES.values() for n in policy if n.startswith(prefix)
    }
    for name in names:
        function = module.__dict__.get(name)
        if (
            callable(function)
            and not hasattr(function, "__op__")
            and not hasattr(function, "__autocast_listed__")
        ):
            setattr(module, name, listed(prefix + name)(function))


# -- the policies --------------------------------------------------------------------------
# PyTorch 2.13's autocast lists (aten/src/ATen/autocast_mode.cpp), under plugrad's names: an op
# by its name (aliases without an adapter share it: cat is concat), an alias with an adapter
# or a composite function by its public name. Composites PyTorch makes of listed ops (einsum,
# tensordot, ... on the CPU) are listed as those ops' kind.

# On both device types:
_LOWER = """
    addbmm addmm baddbmm bmm chain_matmul conv_tbc einsum linalg.matrix_power matmul
    matrix_power mm nn.functional.conv1d nn.functional.conv2d nn.functional.conv3d
    nn.functional.conv_transpose1d nn.functional.conv_transpose2d
    nn.functional.conv_transpose3d nn.functional.linear nn.functional.prelu
    nn.functional.scaled_dot_product_attention rnn_relu_cell rnn_tanh_cell vecdot
"""
_FP32 = """
    binary_cross_entropy_with_logits cdist cosine_embedding_loss hinge_embedding_loss kl_div
    margin_ranking_loss nn.functional.binary_cross_entropy_with_logits
    nn.functional.cosine_embedding_loss nn.functional.hinge_embedding_loss
    nn.functional.huber_loss nn.functional.kl_div nn.functional.l1_loss
    nn.functional.margin_ranking_loss nn.functional.mse_loss nn.functional.multi_margin_loss
    nn.functional.multilabel_margin_loss nn.functional.nll_loss
    nn.functional.poisson_nll_loss nn.functional.smooth_l1_loss
    nn.functional.soft_margin_loss nn.functional.triplet_margin_loss poisson_nll_loss prod
    triplet_margin_loss
"""
# On one:
_CPU_KEEP = """
    convolution dot linalg.lu_solve linalg.matrix_exp matrix_exp mv vdot
"""
_CPU_LOWER = """
    nn.LSTM nn.RNN nn.functional.affine_grid tensordot
"""
_CPU_FP32 = """
    cholesky cholesky_inverse cholesky_solve ctc_loss fft.fft fft.fft2 fft.fftn fft.hfft
    fft.ifft fft.ifft2 fft.ifftn fft.ihfft fft.irfft fft.irfft2 fft.irfftn fft.rfft
    fft.rfft2 fft.rfftn geqrf inverse linalg.cholesky linalg.cholesky_ex linalg.cond
    linalg.eig linalg.eigh linalg.eigvals linalg.eigvalsh linalg.householder_product
    linalg.inv linalg.inv_ex linalg.lstsq linalg.matrix_rank linalg.qr linalg.solve
    linalg.svd linalg.svdvals linalg.tensorinv linalg.tensorsolve lu lu_solve nanquantile
    nn.functional.adaptive_avg_pool3d nn.functional.adaptive_max_pool3d
    nn.functional.adaptive_max_pool3d_with_indices nn.functional.avg_pool3d
    nn.functional.binary_cross_entropy nn.functional.cross_entropy nn.functional.ctc_loss
    nn.functional.fractional_max_pool2d nn.functional.fractional_max_pool2d_with_indices
    nn.functional.fractional_max_pool3d nn.functional.fractional_max_pool3d_with_indices
    nn.functional.grid_sample nn.functional.max_pool3d nn.functional.max_unpool1d
    nn.functional.max_unpool2d nn.functional.max_unpool3d orgqr ormqr pinverse polar qr
    quantile stft svd trace triangular_solve view_as_complex
"""
_CPU_PROMOTE = """
    concat index_copy stack
"""
_CUDA_LOWER = """
    addmv addr convolution gru_cell lstm_cell mv
"""
_CUDA_FP32 = """
    acos asin cosh cumprod cumsum dist erfinv exp expm1 frobenius_norm group_norm layer_norm
    linalg.matrix_norm linalg.vector_norm log log10 log1p log2 logsumexp native_layer_norm
    nn.functional.cosine_similarity nn.functional.group_norm nn.functional.interpolate
    nn.functional.layer_norm nn.functional.log_softmax nn.functional.pdist
    nn.functional.rms_norm nn.functional.softmax nn.functional.softplus
    nn.functional.upsample nn.functional.upsample_bilinear nn.functional.upsample_nearest
    norm nuclear_norm pow reciprocal renorm rsqrt sinh sum tan
"""
_CUDA_PROMOTE = """
    addcdiv addcmul atan2 cross dot index_put inner nn.functional.bilinear
    nn.functional.grid_sample scatter_add tensordot vdot
"""
# Both device types: linear algebra that ends in a lowered product.
_FP32_LOWERED = """
    linalg.pinv
"""
_CUDA_REFUSED = """
    nn.functional.binary_cross_entropy
"""

#: Device type -> {name -> "lower", "fp32", "promote", "keep", "fp32 lowered" or "refused"}.
POLICIES: dict[str, dict[str, str]] = {
    device_type: {name: kind for kind, names in kinds.items() for name in names.split()}
    for device_type, kinds in {
        "cpu": {
            "lower": _LOWER + _CPU_LOWER,
            "fp32": _FP32 + _CPU_FP32,
            "promote": _CPU_PROMOTE,
            "keep": _CPU_KEEP,
            "fp32 lowered": _FP32_LOWERED,
        },
        "cuda": {
            "lower": _LOWER + _CUDA_LOWER,
            "fp32": _FP32 + _CUDA_FP32,
            "promote": _CUDA_PROMOTE,
            "refused": _CUDA_REFUSED,
            "fp32 lowered": _FP32_LOWERED,
        },
    }.items()
}


# Where PyTorch's kind depends on the arguments (its function is a composite that reaches a
# listed op for some arguments only), a rule gives a call's kind from its arguments and the
# table's kind (None: autocast leaves the call as it is). "fp32 lowered": the function runs in
# float32 and its result is cast to the region's dtype (PyTorch's ends in a lowered product).


def _einsum_kind(kind: str | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """Lowered where a label that two or more operands share is summed over (PyTorch's
    einsum then reaches bmm); kept otherwise (its sums, diagonals and outer products)."""
    equation = args[0] if args else kwargs.get("equation")
    if not isinstance(equation, str):
        return kind
    inputs, arrow, output = equation.replace(" ", "").replace("...", ".").partition("->")
    terms = inputs.split(",")
    if not arrow:  # the implicit output: the labels that stand once, and the ellipsis
        output = "".join(c for c in inputs if c == "." or inputs.count(c) == 1)
    shared = {c for c in inputs if c != "," and sum(c in term for term in terms) > 1}
    return kind if shared - set(output) else "keep"


def _tensordot_kind(kind: str | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """Kept where every axis of both operands is summed over (PyTorch's product of 1x1
    matrices is not lowered), else the table's."""
    x1, x2 = args[0], args[1]
    axes = kwargs.get("dims")
    if axes is None:
        axes = kwargs.get("axes", 2)
    if hasattr(axes, "tolist"):  # an integer tensor or NumPy integer, as tensordot reads it
        axes = axes.tolist()
    try:
        if isinstance(axes, int):
            every = axes == x1.ndim == x2.ndim
        else:
            first, second = axes
            every = len(_as_sequence(first)) == x1.ndim and len(_as_sequence(second)) == x2.ndim
    except (TypeError, ValueError):
        return kind  # (axes tensordot refuses: its own error follows)
    return "keep" if every else kind


def _as_sequence(axes: Any) -> tuple[Any, ...]:
    return tuple(axes) if isinstance(axes, (list, tuple)) else (axes,)


def _inner_kind(kind: str | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """PyTorch's inner on the CPU: of two vectors a dot (kept), with a 0-d operand a product
    (not listed), else a lowered tensordot."""
    x1 = args[0] if args else kwargs.get("input")
    x2 = args[1] if len(args) > 1 else kwargs.get("other")
    if not isinstance(x1, Tensor) or not isinstance(x2, Tensor) or 0 in (x1.ndim, x2.ndim):
        return None
    return "keep" if x1.ndim == x2.ndim == 1 else "lower"


def _pad_kind(kind: str | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """PyTorch's CPU list has reflection_pad1d/2d and replication_pad1d/2d/3d in float32."""
    mode = args[2] if len(args) > 2 else kwargs.get("mode", "constant")
    pad = args[1] if len(args) > 1 else kwargs.get("pad", ())
    if mode == "replicate" or (mode == "reflect" and len(pad) <= 4):
        return "fp32"
    return None


#: (device type, name) -> the rule of a function whose kind depends on its arguments.
BY_ARGUMENTS: dict[
    tuple[str, str], Callable[[str | None, tuple[Any, ...], dict[str, Any]], str | None]
] = {
    ("cpu", "einsum"): _einsum_kind,
    ("cuda", "einsum"): _einsum_kind,
    ("cpu", "tensordot"): _tensordot_kind,
    ("cpu", "inner"): _inner_kind,
    ("cpu", "nn.functional.pad"): _pad_kind,
}
