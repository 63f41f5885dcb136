"""PyTorch's ``torch.backends.cuda`` switches, for code that sets them.

Training scripts open with ``torch.backends.cuda.matmul.allow_tf32 = True`` or
``torch.backends.cuda.enable_flash_sdp(False)``. Here the switches keep what is set,
with PyTorch's defaults and its checks of the values, and read back what was set:

- ``matmul.allow_tf32`` is the other face of :func:`plugrad.set_float32_matmul_precision`,
  as in PyTorch (``True`` reads as ``"high"``, ``"highest"`` as ``False``), and like it
  selects nothing: plugrad's float32 products are float32 products. CuPy, plugrad's
  GPU backend, chooses TensorFloat-32 for its float32 matrix products only when the
  environment variable ``CUPY_TF32=1`` is set before CuPy is imported; plugrad neither
  sets it nor reads it, and no switch here changes CuPy once it is imported.
- ``matmul.allow_fp16_reduced_precision_reduction`` and its bfloat16 twin choose
  cuBLAS's reductions in PyTorch; CuPy's float16 products keep their own.
- ``enable_flash_sdp``, ``enable_mem_efficient_sdp``, ``enable_math_sdp`` and
  ``enable_cudnn_sdp`` enable PyTorch's kernels of
  :func:`~plugrad.nn.functional.scaled_dot_product_attention`, and are the switches
  that :func:`plugrad.nn.attention.sdpa_kernel` sets for its block, as in PyTorch
  (inside ``sdpa_kernel(SDPBackend.MATH)``, :func:`flash_sdp_enabled` is False; after
  it, each switch is as before). plugrad has one kernel, the math form, and computes
  it whatever is enabled; what the switches decide is which calls raise, as on
  PyTorch's CPU, whose kernels are the math one, which runs every call, and the
  flash one, which runs some (see :func:`~plugrad.nn.attention.sdpa_kernel`). So
  after ``enable_math_sdp(False)`` a call that the flash kernel does not take (or
  any call, with ``enable_flash_sdp(False)`` too) raises
  :class:`~plugrad.errors.InvalidArgumentError`, as PyTorch's CPU raises its
  ``RuntimeError``; ``enable_math_sdp(True)`` runs them again. The switches are
  process-wide, as PyTorch's.

:func:`is_built` answers that plugrad is no CUDA build of its own; whether its GPU
backend can run is :func:`plugrad.cuda.is_available`.

Examples
--------
>>> import plugrad
>>> plugrad.backends.cuda.matmul.allow_tf32
False
>>> plugrad.backends.cuda.matmul.allow_tf32 = True
>>> plugrad.get_float32_matmul_precision()
'high'
>>> plugrad.backends.cuda.matmul.allow_tf32 = False
>>> plugrad.backends.cuda.enable_flash_sdp(False)
>>> plugrad.backends.cuda.flash_sdp_enabled(), plugrad.backends.cuda.math_sdp_enabled()
(False, True)
>>> plugrad.backends.cuda.enable_flash_sdp(True)
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from typing import Any

from plugrad.errors import ArgumentError, InvalidArgumentError, checked_bool, type_name
from plugrad.runtime_settings import get_float32_matmul_precision, set_float32_matmul_precision

__all__ = [
    "cuBLASModule",
    "cudnn_sdp_enabled",
    "enable_cudnn_sdp",
    "enable_flash_sdp",
    "enable_math_sdp",
    "enable_mem_efficient_sdp",
    "flash_sdp_enabled",
    "is_built",
    "math_sdp_enabled",
    "matmul",
    "mem_efficient_sdp_enabled",
    "preferred_linalg_library",
]


def is_built() -> bool:
    """Whether plugrad was built with CUDA: never (its GPU backend is CuPy's, whose
    availability :func:`plugrad.cuda.is_available` tells).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.backends.cuda.is_built()
    False
    """
    return False


# -- cuBLAS: matmul ------------------------------------------------------------------------

# The reduced-precision switches: (allow_reduced_precision, allow_splitk), PyTorch's defaults.
_REDUCTIONS = ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")


class cuBLASModule:
    """The type of :data:`matmul`: PyTorch's cuBLAS switches as attributes, kept and read
    back (see the module's note: they select nothing here). A name PyTorch's does not
    know raises ``AttributeError``, read or set, as there.

    Attributes
    ----------
    allow_tf32 : bool
        ``plugrad.get_float32_matmul_precision() != "highest"``; setting it sets that
        precision (``True``: ``"high"``, unless it is ``"medium"``; ``False``:
        ``"highest"``), as PyTorch's. ``False`` at first.
    allow_fp16_reduced_precision_reduction, allow_bf16_reduced_precision_reduction : bool
        ``True`` at first; set a bool or PyTorch's ``(allow, allow_splitk)`` (a tuple or
        list of one or two bools; split-K cannot be refused while reduced precision
        is allowed).
    allow_fp16_reduced_precision_reduction_split_k : bool
        The second of the float16 pair (read only).
    allow_bf16_reduced_precision_reduction_split_k : bool
        The second of the bfloat16 pair (read only).
    allow_fp16_accumulation : bool
        ``False`` at first.
    """

    def __init__(self) -> None:
        state = {name: (True, True) for name in _REDUCTIONS}
        object.__setattr__(self, "_state", {**state, "allow_fp16_accumulation": False})

    def __getattr__(self, name: str) -> Any:
        state: dict[str, Any] = object.__getattribute__(self, "_state")
        if name == "allow_tf32":
            return get_float32_matmul_precision() != "highest"
        if name in _REDUCTIONS:
            return state[name][0]
        if name.endswith("_split_k") and name[: -len("_split_k")] in _REDUCTIONS:
            return state[name[: -len("_split_k")]][1]
        if name == "allow_fp16_accumulation":
            return state[name]
        raise AttributeError(f"plugrad.backends.cuda.matmul has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        state: dict[str, Any] = object.__getattribute__(self, "_state")
        what = f"plugrad.backends.cuda.matmul.{name}"
        if name == "allow_tf32":
            if checked_bool(what, value):
                if get_float32_matmul_precision() == "highest":
                    set_float32_matmul_precision("high")
            else:
                set_float32_matmul_precision("highest")
        elif name in _REDUCTIONS:
            state[name] = _reduction_setting(what, value)
        elif name == "allow_fp16_accumulation":
            state[name] = checked_bool(what, value)
        else:
            raise AttributeError(
                f"plugrad.backends.cuda.matmul has no attribute {name!r} to set; it has "
                f"allow_tf32, {', '.join(_REDUCTIONS)} and allow_fp16_accumulation"
            )

    def __dir__(self) -> list[str]:
        split_k = [f"{name}_split_k" for name in _REDUCTIONS]
        settings = ["allow_tf32", *_REDUCTIONS, *split_k, "allow_fp16_accumulation"]
        return sorted([*super().__dir__(), *settings])


def _reduction_setting(what: str, value: Any) -> tuple[bool, bool]:
    """PyTorch's reading of a reduced-precision switch: a bool (split-K allowed) or a
    tuple or list ``(allow[, allow_splitk])`` of bools."""
    if isinstance(value, bool):
        return value, True
    if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 2:
        raise ArgumentError(
            f"{what} takes a bool or a tuple of one or two bools (allow_reduced_precision, "
            f"allow_splitk), got {type_name(value)} {value!r}"
        )
    allow = checked_bool(f"{what}: allow_reduced_precision", value[0])
    splitk = True if len(value) == 1 else checked_bool(f"{what}: allow_splitk", value[1])
    if allow and not splitk:
        raise InvalidArgumentError(
            f"{what}: allow_splitk=False cannot go with allow_reduced_precision=True (as in "
            "PyTorch); give (True, True) or (False, False)"
        )
    return allow, splitk


#: PyTorch's ``torch.backends.cuda.matmul``.
matmul = cuBLASModule()


# -- the kernels of scaled_dot_product_attention -------------------------------------------

# The kernels enabled, by the names of plugrad.nn.attention.SDPBackend's members: PyTorch's
# five switches (OVERRIDEABLE's has no enable_*_sdp, as in PyTorch). sdpa_kernel sets them
# too, through _set_sdp_kernels: one process-wide setting, as PyTorch's flags.
_SDP_KERNELS = frozenset(
    {"MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "OVERRIDEABLE"}
)
_sdp_kernels = _SDP_KERNELS

# The setting is one frozenset, replaced whole: the lock keeps two threads that switch two
# kernels from losing one change (PyTorch's flags are separate, so both take effect there).
_sdp_lock = threading.Lock()

# Given each new setting (None while all are enabled): plugrad.nn.attention puts here the
# setter of the copy that scaled_dot_product_attention tests, a layer this one cannot import.
_sdp_follower: Callable[[frozenset[str] | None], object] | None = None


def _follow_sdp_kernels(follower: Callable[[frozenset[str] | None], object]) -> None:
    """Give ``follower`` the setting now and each new one (``None`` while every kernel
    is enabled, so that the usual call of scaled_dot_product_attention pays one test)."""
    global _sdp_follower
    with _sdp_lock:
        _sdp_follower = follower
        _replace_sdp_kernels(_sdp_kernels)


def _set_sdp_kernels(names: frozenset[str]) -> frozenset[str]:
    """Enable the kernels ``names`` (among ``_SDP_KERNELS``), disable the others, and return
    those enabled before, to restore: the work of plugrad.nn.attention.sdpa_kernel."""
    with _sdp_lock:
        return _replace_sdp_kernels(names)


def _enable_sdp_kernel(name: str, enabled: bool) -> None:
    """Enable or disable the kernel ``name``, the others as they are."""
    with _sdp_lock:
        _replace_sdp_kernels(_sdp_kernels | {name} if enabled else _sdp_kernels - {name})


def _replace_sdp_kernels(names: frozenset[str]) -> frozenset[str]:
    """Set ``names`` as the kernels enabled and return the previous ones (with the lock held)."""
    global _sdp_kernels
    previous, _sdp_kernels = _sdp_kernels, names
    if _sdp_follower is not None:
        _sdp_follower(None if names == _SDP_KERNELS else names)
    return previous


def enable_flash_sdp(enabled: bool) -> None:
    """Enable or disable PyTorch's flash-attention kernel of
    ``scaled_dot_product_attention`` (see the module's note: on the CPU it runs float
    inputs of 4 axes, with no dropout).

    Examples
    --------
    >>> import plugrad
    >>> plugrad.backends.cuda.enable_flash_sdp(False)
    >>> plugrad.backends.cuda.flash_sdp_enabled()
    False
    >>> plugrad.backends.cuda.enable_flash_sdp(True)
    """
    enabled = checked_bool("enable_flash_sdp(): enabled", enabled)
    _enable_sdp_kernel("FLASH_ATTENTION", enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Enable or disable PyTorch's memory-efficient attention kernel (a GPU kernel: it runs
    no call here, as on PyTorch's CPU)."""
    enabled = checked_bool("enable_mem_efficient_sdp(): enabled", enabled)
    _enable_sdp_kernel("EFFICIENT_ATTENTION", enabled)


def enable_math_sdp(enabled: bool) -> None:
    """Enable or disable PyTorch's math attention kernel, which runs every call; disabled,
    a call that no other enabled kernel runs raises (see the module's note)."""
    _enable_sdp_kernel("MATH", checked_bool("enable_math_sdp(): enabled", enabled))


def enable_cudnn_sdp(enabled: bool) -> None:
    """Enable or disable PyTorch's cuDNN attention kernel (a GPU kernel: it runs no call
    here, as on PyTorch's CPU)."""
    enabled = checked_bool("enable_cudnn_sdp(): enabled", enabled)
    _enable_sdp_kernel("CUDNN_ATTENTION", enabled)


def flash_sdp_enabled() -> bool:
    """Whether the flash-attention kernel is enabled (``True`` at first), by
    :func:`enable_flash_sdp` or :func:`plugrad.nn.attention.sdpa_kernel`."""
    return "FLASH_ATTENTION" in _sdp_kernels


def mem_efficient_sdp_enabled() -> bool:
    """Whether the memory-efficient kernel is enabled (``True`` at first)."""
    return "EFFICIENT_ATTENTION" in _sdp_kernels


def math_sdp_enabled() -> bool:
    """Whether the math kernel is enabled (``True`` at first)."""
    return "MATH" in _sdp_kernels


def cudnn_sdp_enabled() -> bool:
    """Whether the cuDNN kernel is enabled (``True`` at first)."""
    return "CUDNN_ATTENTION" in _sdp_kernels


# -- linear algebra ------------------------------------------------------------------------


class _LinalgBackend(enum.Enum):
    """PyTorch's names of the CUDA linear-algebra libraries (its ``_LinalgBackend``)."""

    Default = 0
    Cusolver = 1
    Magma = 2


_preferred_linalg = _LinalgBackend.Default


def preferred_linalg_library(backend: str | _LinalgBackend | None = None) -> _LinalgBackend:
    """The CUDA linear-algebra library preferred (``Default`` at first); given ``backend``
    (``"default"``, ``"cusolver"``, ``"magma"``), prefer it first, as PyTorch's.

    The preference is kept and changes nothing: CuPy's linear algebra uses cuSOLVER
    (and cuBLAS), and plugrad has no MAGMA. (PyTorch built without CUDA refuses
    ``"cusolver"`` and ``"magma"``; these are taken, for the GPU scripts that set them.)

    Examples
    --------
    >>> import plugrad
    >>> plugrad.backends.cuda.preferred_linalg_library()
    <_LinalgBackend.Default: 0>
    """
    global _preferred_linalg
    if backend is None:
        return _preferred_linalg
    if isinstance(backend, _LinalgBackend):
        _preferred_linalg = backend
    elif isinstance(backend, str):
        names = {member.name.lower(): member for member in _LinalgBackend}
        if backend not in names:
            raise InvalidArgumentError(
                f"preferred_linalg_library(): unknown library {backend!r}; choose from "
                f"{', '.join(names)}"
            )
        _preferred_linalg = names[backend]
    else:
        raise ArgumentError(
            "preferred_linalg_library() takes a library name ('default', 'cusolver', "
            f"'magma') or None, got {type_name(backend)}"
        )
    return _preferred_linalg
