"""Loading a state dict into a module tree, as PyTorch's protocol does, all or nothing.

Each module checks its own entries (``Module._load_from_state_dict``, which
layers and user code override to rename the keys of older checkpoints), with
PyTorch's hooks before and after, and its values are copied in as it reads
them, as in PyTorch (code after the base method and the post-hooks see them).
What each change replaced is kept in a :class:`LoadPlan` until the load ends:
if anything does not fit, every change is undone, so that a failed load leaves
every tensor as it was.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ..creation import asarray
from ..errors import ArgumentError, StateDictError
from ..grad_mode import no_grad
from ..tensor import Tensor
from ..versions import restore_version
from .parameter import Parameter

__all__ = ["IncompatibleKeys", "LoadPlan", "active_plan", "load_state_dict", "read_entry"]


class IncompatibleKeys(NamedTuple):
    """What :meth:`Module.load_state_dict` returns: the keys it did not match."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"  # PyTorch's words
        return f"IncompatibleKeys(missing_keys={self.missing_keys!r}, " + (
            f"unexpected_keys={self.unexpected_keys!r})"
        )


class LoadPlan:
    """How to undo what a load in progress has changed, in the order it changed it."""

    def __init__(self, assign: bool) -> None:
        self.assign = assign
        self.undo: list[Callable[[], object]] = []

    def roll_back(self) -> None:
        """Undo every change, the last first; one undo that raises (a ``set_extra_state``
        refusing the state it replaced) does not keep the others from running."""
        failed: BaseException | None = None
        with no_grad():
            for undo in reversed(self.undo):
                try:
                    undo()
                except Exception as exc:
                    failed = failed or exc
        self.undo.clear()
        if failed is not None:
            raise StateDictError(
                "a failed load_state_dict could not put everything back: undoing a change "
                f"raised {type(failed).__name__}: {failed}"
            ) from failed


#: The plan of the load in progress (None: a change is not kept to be undone).
_active: LoadPlan | None = None


def active_plan() -> LoadPlan | None:
    return _active


def read_entry(
    key: str, value: Any, tensor: Tensor, assign: bool, error_msgs: list[str]
) -> Tensor | None:
    """``value`` read as the new value of ``tensor``, or None with the problem noted."""
    try:
        values = asarray(value) if assign else asarray(value, device=tensor.device, copy=True)
    except Exception as exc:  # anything asarray rejects, reported with its key
        error_msgs.append(f"{key!r}: cannot be read as an array ({exc})")
        return None
    if values.shape == (1,) and tensor.shape == ():
        values = values.reshape(())  # a scalar saved before 0-d tensors existed, as PyTorch's
    if values.shape != tensor.shape:
        error_msgs.append(
            f"{key!r}: shape {values.shape} in the state dict, {tensor.shape} in the module"
        )
        return None
    if (
        not assign
        and values.dtype is not tensor.dtype
        and not _floating_into_floating(values.dtype.kind, tensor.dtype.kind)
        and not _casts_exactly(values, tensor.dtype)
    ):
        error_msgs.append(
            f"{key!r}: dtype {values.dtype.name} in the state dict, {tensor.dtype.name} in "
            "the module, which would change its values (convert one with .to(dtype) first)"
        )
        return None
    return values


def _floating_into_floating(kind: str, into: str) -> bool:
    """Whether values of dtype kind ``kind`` load into a tensor of kind ``into`` by PyTorch's
    rounding cast: a float into a float (float64 into float32) or into a complex, a complex
    into a complex (complex128 into complex64); never a complex into a real tensor."""
    if into == "complex floating":
        return kind in ("real floating", "complex floating")
    return kind == into == "real floating"


def _casts_exactly(values: Tensor, dtype: Any) -> bool:
    """Whether ``values`` keep every value in ``dtype``, which PyTorch's load casts them to
    (integer weights into a float layer; a count saved as ``5.0`` into an int64 buffer).
    A cast that would round, wrap or drop an imaginary part is refused instead."""
    if values.dtype.kind == "complex floating" and dtype.kind != "complex floating":
        return False
    with no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's for a value out of range
        back = values.to(dtype).to(values.dtype)
        return bool((back == values).all())


def note_change(module: Any, name: str, tensor: Tensor, values: Tensor, assign: bool) -> None:
    """Copy ``values`` into ``tensor`` (or assign them as ``module``'s ``name``) now, keeping
    what it replaces while a load is in progress, so that a failed load can put it back."""
    with no_grad():
        if not assign:
            if _active is not None:
                replaced, version = tensor.clone(), tensor._version
                _active.undo.append(lambda: _put_back(tensor, replaced, version))
            # Into the tensor's memory, as PyTorch copies: a view of a parameter, or a
            # state dict taken before, sees the loaded values (float64 ones cast to float32).
            tensor.copy_(values)
            return
        if _active is not None:
            _active.undo.append(_restoring(module, name))
        if isinstance(tensor, Parameter) or name in module._parameters:
            if isinstance(values, Parameter):
                values.requires_grad_(tensor.requires_grad)
                setattr(module, name, values)
            else:
                setattr(module, name, Parameter(values, requires_grad=tensor.requires_grad))
        else:
            module._buffers[name] = values


def _put_back(tensor: Tensor, replaced: Tensor, version: int) -> None:
    """Copy ``replaced`` back into ``tensor``, and its version with it: a graph that saved
    it before the load runs again (the load records nothing, so none saw the new values)."""
    tensor.copy_(replaced)
    restore_version(tensor, version)


def _restoring(module: Any, name: str) -> Callable[[], None]:
    """What puts back ``module``'s parameter or buffer ``name`` as it is now."""
    if name in module._parameters:
        parameter = module._parameters[name]
        return lambda: setattr(module, name, parameter)
    buffer = module._buffers[name]

    def restore() -> None:
        module._buffers[name] = buffer

    return restore


def note_extra_state(module: Any, state: Any) -> None:
    """Call ``module.set_extra_state(state)``, keeping the state it replaces while a load is
    in progress."""
    replaced = module.get_extra_state() if _active is not None else None
    module.set_extra_state(state)
    if _active is not None:  # (once set: one that refused the state has nothing to undo)
        _active.undo.append(lambda: module.set_extra_state(replaced))


def load_state_dict(
    root: Any, state_dict: Mapping[str, Any], strict: bool, assign: bool
) -> IncompatibleKeys:
    """:meth:`Module.load_state_dict`: every module's entries, undone if any does not fit."""
    global _active
    if not isinstance(state_dict, Mapping):
        raise ArgumentError(f"load_state_dict() takes a mapping, got {type(state_dict).__name__}")
    metadata = getattr(state_dict, "_metadata", None)
    entries: OrderedDict[str, Any] = OrderedDict(state_dict)  # the hooks may change it
    missing: list[str] = []
    unexpected: list[str] = []
    errors: list[str] = []
    incompatible = IncompatibleKeys(missing, unexpected)

    def load(module: Any, local: OrderedDict[str, Any], prefix: str) -> None:
        # ``local``: the entries under ``prefix``, as the module's parent's hooks left them
        # (a module's hooks see its own entries only, as PyTorch's).
        local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
        local_metadata["assign_to_params_buffers"] = assign
        for hook in module._state_hooks_of("load_state_dict_pre"):
            hook(module, local, prefix, local_metadata, strict, missing, unexpected, errors)
        module._load_from_state_dict(
            local, prefix, local_metadata, True, missing, unexpected, errors
        )
        for name, child in module._modules.items():
            if child is not None:
                below = f"{prefix}{name}."
                load(
                    child,
                    OrderedDict((k, v) for k, v in local.items() if k.startswith(below)),
                    below,
                )
        for hook in module._state_hooks_of("load_state_dict_post"):
            if hook(module, incompatible) is not None:
                raise ArgumentError(
                    f"a load_state_dict post-hook of {type(module).__name__} returned a value; "
                    "it may change the incompatible keys in place, and must return None"
                )

    plan = LoadPlan(assign)
    outer, _active = _active, plan
    try:
        # Without recording: no graph saves a tensor between a copy and its undo, so an
        # undone copy can give the tensor its version back (see _put_back).
        with no_grad():
            load(root, entries, "")
        problems = list(errors)
        if strict:
            problems[:0] = [f"missing key {key!r}" for key in missing] + [
                f"unexpected key {key!r}" for key in unexpected
            ]
        if problems:
            raise StateDictError(
                f"cannot load into {type(root).__name__}, which is left unchanged:"
                + "".join(f"\n  {problem}" for problem in problems)
            )
    except BaseException:
        # A problem found, or raised by a hook or an override: what was copied is put back.
        plan.roll_back()
        raise
    finally:
        _active = outer
    return incompatible
