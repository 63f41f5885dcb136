"""In-place operations (``x += y``, ``x.zero_()``, ...) made safe for autograd.

When the operation must be recorded, it is computed out of place and the
tensor is *rebased* onto the result: its data and ``grad_fn`` become the new
ones, and no memory a backward pass saved is overwritten. When nothing is
recorded (``no_grad``, or no tensor involved requires grad) the data is
overwritten in place where the backend allows it, so a parameter update
keeps its memory; ``x -= y`` with an operand of ``x``'s own dtype and shape (or
a Python number) then uses the arrays' own in-place operator, one pass over
memory as in hand-written code. Either way the tensor's version goes up, and a backward
pass that saved the old value raises
:class:`~plugrad.errors.InPlaceModificationError` instead of using wrong data.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, TypeVar, cast

from . import complex_parts
from . import dtypes as _dtypes
from . import graph as _graph
from . import ops as _ops
from . import versions as _versions
from .backend import WRITE_REFUSED
from .errors import (
    ArgumentError,
    BackwardError,
    DeviceMismatchError,
    DtypeError,
    InPlaceModificationError,
    PlugradError,
    ReadOnlyViewError,
    ShapeError,
    ViewCopyError,
    name_the_call,
)
from .grad_mode import _state, no_grad
from .node import Node
from .tensor import Tensor, _wrap, install_methods
from .tensor_hooks import move_retain_grad
from .tensor_indexing import BASIC_INDEX_TYPES, in_numpy_order, index_key
from .tensor_operators import BINARY_OPERATORS
from .versions import (
    ALIAS,
    DETACHED,
    Through,
    Unstacked,
    ViewOf,
    copies_of_views,
    copy_of_view_made_by,
    copy_of_view_made_from,
    detached_roots,
    memory_family,
    memory_links,
)

__all__ = [
    "AliasChangedNode",
    "apply_inplace",
    "change_shape",
    "check_family",
    "check_out",
    "copies_in_use",
    "filled_with",
    "follow_raw_writes",
    "into_out",
    "refuse_view_made_without_grad",
    "relink_family",
    "takes_out",
    "views_to_follow",
    "write_out",
]

#: Whether a backend whose views are copies (JAX, Dask) has been activated in this
#: process: code that writes raw arrays (optimizer steps) reads this once per call.
copies_in_use = False

_Function = TypeVar("_Function", bound=Callable[..., Any])
_NUMBERS = (int, float)
_NO_KEYWORDS: dict[str, Any] = {}
_FLOATING_KINDS = frozenset({"real floating", "complex floating"})


def _refuse_change_of_copy_of_view(target: Tensor, name: str) -> None:
    # (Views and detach()-ed aliases of a marked tensor are marked too: see versions.)
    made_by = copy_of_view_made_by(target)
    if made_by is not None:
        raise ViewCopyError(
            f"{name} on a tensor of shape {target.shape} that is, or is a view of, the "
            f"result of {made_by}, which in PyTorch is a view of its input but in plugrad a "
            "copy: the change would not reach the tensor it was made from. Change that "
            "tensor instead (z.real.add_(...), z.copy_(...)), or clone the result first "
            "(v = v.clone()) to change a copy on purpose. Nothing was changed."
        )
    made_by = copy_of_view_made_from(target)
    if made_by is not None:
        raise ViewCopyError(
            f"{name} on a tensor of shape {target.shape} that a result of {made_by} was "
            f"made from (or that shares its memory): in PyTorch that result is a view and "
            "would show the change, in plugrad it is a copy and would keep the old values. "
            "Make it again after the change, or let it go first (del it, or make it from a "
            "clone: view_as_real(z.clone())). Nothing was changed."
        )


def apply_inplace(
    target: Tensor,
    function: Callable[..., Tensor],
    *args: Any,
    name: str = "in-place op",
    array_operator: Callable[[Any, Any], Any] | None = None,
    keywords: dict[str, Any] | None = None,
) -> Tensor:
    """Make ``target`` hold ``function(target, *args, **keywords)``; return ``target``.

    ``array_operator`` is the raw arrays' in-place operator that computes the
    same as ``function`` (``operator.isub`` for ``subtract``), used when nothing
    is recorded and the one operand keeps ``target``'s dtype and shape.
    """
    if copies_of_views:  # rarely anything: view_as_real(z), z.conj(), ... while they live
        _refuse_change_of_copy_of_view(target, name)
    # Where views are copies, the tensors sharing target's memory are found (or the
    # change refused) first, and brought up to date after it.
    if _state.enabled and target._counter is not None and not target._requires_grad:
        refuse_view_made_without_grad(target, name)
    copies = target._device.views_are_copies and _copies_to_refresh(target, name)
    recording = _state.enabled and (
        target._requires_grad
        or any(isinstance(a, Tensor) and a._requires_grad for a in args)
        or (
            keywords is not None
            and any(isinstance(a, Tensor) and a._requires_grad for a in keywords.values())
        )
    )
    if (
        array_operator is not None
        and not recording
        and keywords is None
        and len(args) == 1
        and _apply_array_operator(target, array_operator, args[0])
    ):
        if copies:
            _refresh_copies(target, copies)
        target._bump_version()
        return target
    if keywords is None:
        keywords = _NO_KEYWORDS
    if recording:
        if target._edge is None and target._requires_grad:
            raise _changed_leaf(target, name, "x = x + y")
        family = memory_family(target)
        if family:
            check_family(target, family, name)
        # The memory is written where something else may hold it (NumPy's array given to
        # from_numpy, or got from .numpy(): PyTorch writes it, and it was left unchanged);
        # the tensor is rebound to the result only where nothing does.
        written = bool(family) or (
            not target._device.views_are_copies and _held_elsewhere(target._array)
        )
        # The recorded op saves this stand-in for the old value, not the tensor we rebase.
        array = target._array
        if written:  # the memory is written below, so what the op saves must be a copy
            array = target._device.xp.asarray(array, copy=True)
        before = _wrap(array, target._device, target._requires_grad, target._edge)
        result = function(before, *args, **keywords)
        if result.dtype is _dtypes.bool and target.dtype is not _dtypes.bool:
            result = _truth_values(before, result, args)
        elif result.dtype is not target.dtype and _dtypes.kind_rank(
            result.dtype
        ) == _dtypes.kind_rank(target.dtype):
            # As PyTorch: the tensor keeps its dtype (float32 += float64), in the graph.
            result = _ops.astype(result, target.dtype)
        _check_result(target, result, name, recording=True)
        if written:
            _write_or_rebind(target, result._array, name)
        else:
            target._array = result._array
        if result._counter is not None:
            # The op saved its output, which is now target's memory (or, where it was
            # written, stands for it): later changes of target or of a view sharing its
            # memory must reach that saved output's check, as in PyTorch.
            _tie_saved_output(result, target)
        old_edge = target._edge
        target._edge = result._edge
        target._requires_grad = result._requires_grad
        if old_edge is not None:
            move_retain_grad(target, old_edge)
        if family:
            relink_family(target, family, name)
    else:
        # no_grad() written out: its context manager costs a few times these lines, per op.
        previous = _state.enabled
        _state.enabled = False
        try:
            result = function(target, *args, **keywords)
            if result.dtype is _dtypes.bool and target.dtype is not _dtypes.bool:
                result = _truth_values(target, result, args)
        finally:
            _state.enabled = previous
        array = _check_result(target, result, name, recording=False)
        _write_or_rebind(target, array, name)
    if copies:
        _refresh_copies(target, copies)
    target._bump_version()
    return target


def _held_elsewhere(array: Any) -> bool:
    """Whether anything but its tensor holds ``array`` (CPython's count of references: the
    tensor's, this call's argument and getrefcount's own)."""
    return sys.getrefcount(array) > 3


class _VersionsSince:
    """A saved output's version counter, for a node whose output became another tensor's
    memory: that tensor's counter, counted from the version the in-place op leaves."""

    __slots__ = ("_counter", "_start")

    def __init__(self, counter: list[Any], start: int) -> None:
        self._counter = counter
        self._start = start

    def __getitem__(self, index: int) -> int:  # the checks read [0], the version
        return self._counter[0] - self._start


def _tie_saved_output(result: Tensor, target: Tensor) -> None:
    """Make the node that made ``result`` check ``target``'s version for its saved output."""
    edge = result._edge
    node, index = edge if type(edge) is tuple else (edge, 0)
    counter = target._shared_counter()
    tied = _VersionsSince(counter, counter[0] + 1)  # the version after this op's bump
    counters = getattr(node, "_ans_counter", None)
    if type(counters) is tuple:
        node._ans_counter = (*counters[:index], tied, *counters[index + 1 :])
    elif counters is result._counter:
        node._ans_counter = tied


def _write_or_rebind(target: Tensor, array: Any, name: str) -> None:
    """Write ``array`` into ``target``'s memory, or rebind ``target`` to it where its
    library refuses the write (an immutable array, a read-only one shared with no tensor).

    A refused write into memory other tensors share (a broadcast view of NumPy's,
    read-only) is an error: rebinding would leave them without the change.
    """
    try:
        target._array = target._device.backend.write(target._array, array)
    except WRITE_REFUSED as refusal:
        if not target._device.views_are_copies and len(memory_links(target)) > 1:
            raise ReadOnlyViewError(
                f"{name} on a tensor of shape {target.shape} whose memory the "
                f"{target._device.backend.name!r} backend will not write ({refusal}); it "
                "shares that memory with other tensors (a read-only view: a broadcast view "
                "such as x.expand(...), which shows one element in several places, or a "
                "diagonal where the backend's diagonal is read-only), which a new array "
                "would leave behind. Change a copy instead (y = view.clone()). Nothing "
                "was changed."
            ) from refusal
        target._array = array


def _refuse_shape_change_of_shared(target: Tensor, name: str) -> None:
    """Where views are copies, a tensor sharing memory with others cannot change shape in
    place: how they follow each other is known for the shapes they were made with."""
    if target._device.views_are_copies and len(memory_links(target)) > 1:
        raise ViewCopyError(
            f"{name} on a tensor of shape {target.shape} that shares its memory with other "
            f"tensors (its views, or one it is a view of): on the "
            f"{target._device.backend.name!r} backend views are copies, brought up to date "
            "by how they were made, which a shape change in place would falsify. Make a new "
            f"view instead (y = x.{name.removesuffix('_()')}(...)). Nothing was changed."
        )


def change_shape(target: Tensor, function: Callable[..., Tensor], *args: Any, name: str) -> Tensor:
    """Make ``target`` look at its data as the view ``function(target, *args)``; return it.

    PyTorch's in-place shape changes (``x.squeeze_()``, ``x.t_()``) change what
    the tensor looks at, not the data: its memory and the other views of it stay
    as they were. While gradients are recorded the tensor takes the view's place
    in the graph; a leaf that requires grad changes shape only under ``no_grad``.
    The version goes up, as in PyTorch. Where views are copies, a tensor sharing
    memory with others cannot change shape: how they follow each other is known
    for the shapes they were made with.
    """
    _refuse_shape_change_of_shared(target, name)
    if _state.enabled and target._requires_grad:
        if target._edge is None:
            raise _changed_leaf(target, name, f"y = x.{name.removesuffix('_()')}(...)")
        # The view op records this stand-in; the tensor then takes the view's place.
        before = _wrap(target._array, target._device, True, target._edge)
        result = function(before, *args)
        target._edge = result._edge
    else:
        # no_grad() written out, as in apply_inplace: its context manager costs more.
        previous = _state.enabled
        _state.enabled = False
        try:
            result = function(target, *args)
        finally:
            _state.enabled = previous
    target._array = result._array
    if target._device.views_are_copies:  # the view's layout, where arrays have none
        target._layout = getattr(result, "_layout", None)
    _forget_shape_links(target)
    target._bump_version()
    return target


def _forget_shape_links(target: Tensor) -> None:
    """After ``target`` changed shape in place: the keys that make it of its base, and its
    views of it, describe the old shape, so neither can rebuild the other's history now.

    A later in-place op through one of them then leaves the others without a history
    that describes their values (backward through them raises, see :func:`relink_family`)
    instead of writing at the old keys (gradients of ``y[0].mul_(5)`` after
    ``y.unsqueeze_(0)`` went to ``y[0]`` of the new shape: all of ``y``).
    """
    counter = target._counter
    if counter is None or len(counter) < 2:
        return
    for index in range(1, len(counter)):
        member_ref, source_ref, key = counter[index]
        if key is DETACHED or key is None:
            continue
        if member_ref() is target or (source_ref is not None and source_ref() is target):
            counter[index] = (member_ref, None, None)


def views_to_follow(tensors: Iterable[Tensor], name: str) -> list[tuple[Tensor, Any]]:
    """What must follow raw writes into ``tensors`` about to be made (an optimizer step).

    Where views are copies, each tensor whose memory others share (its views,
    or one it is a view of) with the links :func:`follow_raw_writes` brings up
    to date afterwards; a tensor whose sharers could not follow refuses the
    change here, before anything is written (:class:`~plugrad.errors.ViewCopyError`).
    Empty where views share memory: the writes show in every view by themselves.
    """
    found = []
    for tensor in tensors:
        counter = tensor._counter
        if counter is not None and len(counter) > 2 and tensor._device.views_are_copies:
            links = _copies_to_refresh(tensor, name)
            if links:
                found.append((tensor, links))
    return found


def follow_raw_writes(found: Sequence[tuple[Tensor, Any]]) -> None:
    """Bring the sharers listed by :func:`views_to_follow` up to date with the writes."""
    for tensor, links in found:
        _refresh_copies(tensor, links)


def check_family(target: Tensor, family: list[tuple[Tensor, Any, Any]], name: str) -> None:
    """Refuse a recorded in-place op on memory that a leaf requiring grad also looks at,
    or through a view whose base was cut from the graph (``detach_()``) after it was made."""
    made = {id(member): base for member, base, _ in family}
    member: Any = target
    while member._edge is not None:
        base = made.get(id(member))
        if base is None or base is DETACHED:
            break
        if base._edge is None and not base._requires_grad:
            raise InPlaceModificationError(
                f"{name} on a view (shape {target.shape}) of a tensor (shape {base.shape}) "
                "that was cut from the graph in place (detach_() or requires_grad_(False)) "
                "after the view was made: the view's history and its base's no longer agree, "
                "and the change would put the base back into the graph. Make the view again "
                "from the detached tensor, or use detach() (a new tensor) instead of detach_()."
            )
        member = base
    for other, base, _ in family:
        if other is not target and base is not DETACHED and other._edge is None:
            if other._requires_grad:
                raise BackwardError(
                    f"{name} would change, through a tensor of shape {target.shape} that "
                    "shares its memory (a view of it, or one it is a view of), a leaf tensor "
                    f"that requires grad (shape {other.shape}): the very value gradients are "
                    "taken with respect to. Do it inside plugrad.no_grad(), or compute on a "
                    "copy (x.clone())."
                )


def relink_family(target: Tensor, family: list[tuple[Tensor, Any, Any]], name: str) -> None:
    """Bring the graph history of the tensors sharing ``target``'s memory up to date.

    A recorded in-place op has just written into the memory and rebased ``target``
    onto its result. As in PyTorch, a base that ``target`` was indexed from (and its
    base, ...) becomes "the old base with ``target`` written at the key" (or, for a
    view op that shows all of it -- reshape, permute, transpose, ... -- the view op
    undone on ``target``; for ``diagonal``, the old base with ``target`` on that
    diagonal), and each tensor viewed from an updated one becomes that view of it
    again. A base viewed by a view op that cannot be undone (``broadcast_to``) now holds
    values that its history does not describe: backward through it raises instead
    of giving a wrong gradient. A tensor on the other side of a ``detach()`` from
    ``target`` (the detached one, what was made from it, or, for a ``target`` made
    from it, the tensor it was detached from) has no history that the change
    touches: it just sees the new values, as in PyTorch.
    """
    made = {id(member): (base, key) for member, base, key in family}
    updated = {id(target)}
    member = target
    while True:  # up: the bases target was indexed from (or viewed by a view op)
        base, key = made.get(id(member), (None, None))
        if base is None or base is DETACHED or id(base) in updated or id(base) not in made:
            break
        if type(key) is ViewOf:
            value = _view_undone(member, base, key)
            if value is None:  # a view op that cannot be undone (broadcast_to)
                break
        else:
            stand_in = _wrap(base._array, base._device, base._requires_grad, base._edge)
            value = _ops.setitem(stand_in, member, key=key)
        _rebase(base, value)
        updated.add(id(base))
        member = base
    base, key = made.get(id(target), (None, None))
    if base is not None and base is not DETACHED and id(base) in updated:
        # target itself is now that view of its updated base, as in PyTorch: what flows
        # into it passes through the base (gradients with respect to the base, its hooks).
        _rebase(target, _view_again(base, key))
    for member, base, key in family:  # down: what was viewed from an updated tensor
        if id(member) not in updated and base is not None and id(base) in updated:
            _rebase(member, _view_again(base, key))
            updated.add(id(member))
    stale = [m for m, base, _ in family if id(m) not in updated and base is not DETACHED]
    if stale:
        # Across a detach() (h.detach()[1:] changed through h, or h changed through it):
        # no graph link to target, as in PyTorch.
        roots = detached_roots(target)
        own = roots.get(id(target))
        stale = [m for m in stale if roots.get(id(m)) is own]
    if stale and (target._requires_grad or any(m._requires_grad for m in stale)):
        for other in stale:
            other._edge = AliasChangedNode(target, name, other._edge)
            other._requires_grad = True


def _copies_to_refresh(target: Tensor, name: str) -> list[tuple[Tensor, Any, Any]]:
    """What sharing ``target``'s memory needs new values after an in-place change of it.

    For backends whose views are copies: the links of :func:`memory_links`
    (empty when nothing shares the memory). Every member must be derivable from
    one other live member (an index, a view op, ``unstack`` or ``detach()`` of
    it), except the one at the top; one that is not (a view of a tensor that is
    gone) could not see the change. And each step up from ``target`` must be
    one whose base can be computed back from the view (not ``broadcast_to``).
    Otherwise the change is refused here, before anything is modified.
    """
    links = memory_links(target)
    if len(links) < 2:
        return []
    underived = [member for member, source, _ in links if source is None]
    if len(underived) > 1:
        # The first made is the top of the family; a later one is a view that cannot follow.
        view = underived[1]
        backend = target._device.backend.name
        raise ViewCopyError(
            f"{name} on a tensor of shape {target.shape} cannot be shown in a view of shape "
            f"{view.shape} that shares its memory: on the {backend!r} backend views are "
            "copies, and plugrad brings a view up to date only while it can be made again "
            "from another of them (not one made by several inputs as broadcast_arrays, nor "
            "detach()-ed parts of a tensor that is gone). Make that view after the change, "
            "or change a copy (x.clone()) instead. Nothing was changed."
        )
    made = {id(member): (source, key) for member, source, key in links}
    member = target
    while True:  # up: each step must be one whose base can be written back
        source, key = made[id(member)]
        if source is None:
            return links
        steps = _steps(source, key) if type(key) is Through else [(source, key, member)]
        for base, step, view in steps:
            if type(step) is ViewOf and _view_inverse(step, view, base) is None:
                _refuse_writing_back(name, target, view, base, step.op.name)
        member = source


def _refuse_writing_back(
    name: str, target: Tensor, view: Tensor, base: Tensor, op: str
) -> NoReturn:
    # A broadcast view is read-only on every backend (NumPy marks it so).
    refusal = ReadOnlyViewError if op == "broadcast_to" else ViewCopyError
    raise refusal(
        f"{name} on a view of shape {view.shape} made by {op}() cannot be shown in the "
        f"tensor of shape {base.shape} it views: on the {target._device.backend.name!r} "
        f"backend views are copies, and the values of a {op}() view cannot be written back "
        "into its base. Make the change on the base, or on a copy (v = v.clone()), instead. "
        "Nothing was changed."
    )


def _steps(source: Tensor, key: Through) -> list[tuple[Tensor, Any, Tensor]]:
    """The views between ``source`` and the tensor ``key`` derives from it, as ``(base,
    step, view)`` from ``source`` down, each view a stand-in holding its values."""
    steps = []
    base = source
    for step in key.keys:
        view = _wrap(_derived(base, step), source._device, False, None)
        steps.append((base, step, view))
        base = view
    return steps


#: What a refused write names while copied views are brought up to date (copy backends only,
#: where a refusal rebinds: their views share no memory).
_REFRESH = "bringing a copied view up to date"


def _refresh_copies(target: Tensor, links: list[tuple[Tensor, Any, Any]]) -> None:
    """Give every tensor in ``links`` the values it would hold if it shared ``target``'s memory.

    ``target`` has just been changed in place. Up the chain of tensors it was
    derived from, each becomes itself with the changed one written at its key;
    then each tensor derived from an updated one becomes its key of it again.
    Values only: graph history is :func:`relink_family`'s work.
    """
    made = {id(member): (source, key) for member, source, key in links}
    updated = {id(target)}
    previous = _state.enabled
    _state.enabled = False
    try:
        member = target
        while True:  # up: what target was derived from
            source, key = made.get(id(member), (None, None))
            if source is None or id(source) in updated or id(source) not in made:
                break
            _write_or_rebind(source, _written_back(source, member, key), _REFRESH)
            updated.add(id(source))
            member = source
        for member, source, key in links:  # down: in the order made, sources come first
            if id(member) not in updated and source is not None and id(source) in updated:
                _write_or_rebind(member, _derived(source, key), _REFRESH)
                updated.add(id(member))
    finally:
        _state.enabled = previous


def _written_back(source: Tensor, member: Tensor, key: Any) -> Any:
    """``source``'s values with those of ``member``, derived from it by ``key``, written in."""
    if key is DETACHED or key is ALIAS:
        return member._array
    if type(key) is Through:  # up the views between, from member's
        changed = member
        for base, step, _ in reversed(_steps(source, key)):
            changed = _wrap(_written_back(base, changed, step), source._device, False, None)
        return changed._array
    if type(key) is ViewOf:
        inverse = cast("Callable[..., Any]", _view_inverse(key, member, source))
        return inverse(source._device.xp, member._array, source._array, **(key.params or {}))
    if type(key) is Unstacked:
        key = key.index
    stand_in = _wrap(source._array, source._device, False, None)
    changed = _wrap(member._array, member._device, False, None)
    if None in key:  # new axes hold no elements of the base: write without them
        key = tuple(k for k in key if k is not None)
        changed = _ops.reshape(changed, _ops.getitem(stand_in, key=key).shape)
    return _ops.setitem(stand_in, changed, key=key)._array


def _derived(source: Tensor, key: Any) -> Any:
    """The values of the view ``key`` of ``source``."""
    if key is DETACHED or key is ALIAS:
        return source._array
    if type(key) is Through:
        return _steps(source, key)[-1][2]._array
    if type(key) is ViewOf:  # the kernel that made the view, as the view op called it
        kernel, params = source._device.kernels[key.op.name], key.params
        return kernel(source._array, **params) if params else kernel(source._array)
    if type(key) is Unstacked:
        key = key.index
    stand_in = _wrap(source._array, source._device, False, None)
    return _ops.getitem(stand_in, key=key)._array


def _same_order(xp: Any, view: Any, base: Any, **params: Any) -> Any:
    return xp.reshape(view, base.shape)


def _unpermuted(xp: Any, view: Any, base: Any, *, axes: tuple[int, ...]) -> Any:
    order = [axis % view.ndim for axis in axes]
    return xp.permute_dims(view, tuple(order.index(i) for i in range(view.ndim)))


def _unflipped(xp: Any, view: Any, base: Any, *, axis: Any = None) -> Any:
    return xp.flip(view, axis=axis)


def _moved_back(xp: Any, view: Any, base: Any, *, source: Any, destination: Any) -> Any:
    return xp.moveaxis(view, destination, source)


def _untransposed(xp: Any, view: Any, base: Any) -> Any:
    return xp.matrix_transpose(view)


def _diagonal_written(xp: Any, view: Any, base: Any, *, offset: int = 0) -> Any:
    """``base`` with ``view`` on its ``offset`` diagonal (of the last two axes)."""
    rows, cols = base.shape[-2], base.shape[-1]
    length = view.shape[-1]
    if length == 0:
        return base
    before = abs(offset)
    after = (cols if offset >= 0 else rows) - before - length
    # Spread along the axis the diagonal has one element per slot of, then masked by the
    # diagonal (made from the arrays themselves: the same device, on every backend).
    zero = xp.zeros_like(view[..., :1])
    parts = [xp.broadcast_to(zero, (*view.shape[:-1], n)) for n in (before, after)]
    spread = xp.concat([parts[0], view, parts[1]], axis=-1)
    spread = xp.expand_dims(spread, axis=-2 if offset >= 0 else -1)
    on = xp.ones_like(base, dtype=xp.bool)
    on = xp.triu(xp.tril(on, k=offset), k=offset)
    return xp.where(on, spread, base)


def _real_written(xp: Any, view: Any, base: Any) -> Any:
    """``base`` with ``view`` as its real part (``base`` itself where it is real)."""
    if not xp.isdtype(base.dtype, "complex floating"):
        return view
    return complex_parts.assembled(xp, view, xp.imag(base), base.dtype)


def _imag_written(xp: Any, view: Any, base: Any) -> Any:
    """``base`` (complex) with ``view`` as its imaginary part."""
    return complex_parts.assembled(xp, xp.real(base), view, base.dtype)


#: View op -> how its base's values follow from the view's (and the base's, where the view
#: shows part of it): (xp, view, base, **params), on arrays (a copy backend's views) or on
#: tensors (recorded, for the base's new history). A view op missing here (broadcast_to,
#: ...) cannot be written back (but see _view_inverse).
_VIEW_INVERSES: dict[str, Callable[..., Any]] = {
    "reshape": _same_order,
    "expand_dims": _same_order,
    "squeeze": _same_order,
    "permute_dims": _unpermuted,
    "flip": _unflipped,
    "matrix_transpose": _untransposed,
    "moveaxis": _moved_back,
    "diagonal": _diagonal_written,
    "real": _real_written,
    "imag": _imag_written,
}


def _view_inverse(key: ViewOf, view: Any, base: Any) -> Callable[..., Any] | None:
    """How ``base``'s values follow from those of ``view``, made of it by the view op of
    ``key`` (see _VIEW_INVERSES); None where they cannot."""
    inverse = _VIEW_INVERSES.get(key.op.name)
    if inverse is None and key.op.name == "broadcast_to" and _count(view) == _count(base):
        return _same_order  # an expansion that repeats nothing (x.shape, new 1s): a reshape
    return inverse


def _count(tensor: Tensor) -> int:
    return math.prod(tensor._array.shape)


def _view_again(base: Tensor, key: Any) -> Tensor:
    """The view ``key`` (an index, or a :class:`ViewOf`) of ``base``, as a recorded op."""
    if type(key) is ViewOf:
        params = key.params or {}
        if key.op.name == "moveaxis":  # its axes are positional-only
            return _ops.moveaxis(base, params["source"], params["destination"])
        return getattr(_ops, key.op.name)(base, **params)
    return _ops.getitem(base, key=key)


def _view_undone(view: Tensor, base: Tensor, key: ViewOf) -> Tensor | None:
    """``base``'s values as they follow from ``view``'s (the view op made ``view`` of
    ``base``), as recorded ops; None for a view op that cannot be written back."""
    inverse = _view_inverse(key, view, base)
    if inverse is None:
        return None
    return inverse(_graph.tensor_namespace, view, base, **(key.params or {}))


def _rebase(tensor: Tensor, value: Tensor) -> None:
    """Give ``tensor`` the graph history of ``value``, which holds the same values."""
    old_edge = tensor._edge
    tensor._edge = value._edge
    tensor._requires_grad = value._requires_grad
    if old_edge is not None:  # its retain_grad() now means its new value, as in PyTorch
        move_retain_grad(tensor, old_edge)


class AliasChangedNode(Node):
    """The ``grad_fn`` of a tensor whose memory an in-place op changed through another tensor.

    The op was recorded on the tensor it was applied to; tensors sharing its memory
    (its base, its other views) hold the new values with a history that no longer
    describes them, so backward through them raises.
    """

    __slots__ = ("_message",)

    def __init__(
        self, target: Tensor, name: str, history: Any = None, *, message: str | None = None
    ) -> None:
        self._device = target._device
        # The tensor's old history, as the one edge: a backward pass that needs only
        # some inputs (autograd.grad, backward(inputs=...)) then sees that its path to
        # them runs through this node, and raises, rather than leaving the path out.
        self._edges = () if history is None else (history,)
        self._hooks = None
        self._message = message or (
            f"{name} was applied, while gradients were recorded, to a tensor of shape "
            f"{target.shape} sharing memory with this one (a view of it, or one it is a view "
            "of, possibly before a shape change in place such as x.t_()), so this tensor's "
            "values changed but its graph history did not. Backward through it cannot be "
            "computed; apply the in-place op to this tensor itself, take the view again "
            "after a shape change, or use out-of-place ops (plugrad.concat(...), "
            "plugrad.where(...), x.clone()) instead of writing into a view."
        )

    def _backward(self, grad: Any, create_graph: bool) -> tuple[Any, ...]:
        raise InPlaceModificationError(self._message)

    def _release(self) -> None:
        pass


def refuse_view_made_without_grad(target: Tensor, name: str) -> None:
    """Refuse an in-place change, outside no_grad, of a view taken under no_grad of a tensor
    that requires grad, as PyTorch does: whether autograd should see it is ambiguous."""
    # Where no tensor the view chain leads up to requires grad (each view holds the tensor
    # it was made from), nothing can be refused: the family's members are not read, whose
    # number (rows = list(x), then rows[i].add_(1)) made each change cost them all.
    viewed = getattr(target, "_view_base", None)
    while viewed is not None and not viewed._requires_grad:
        viewed = getattr(viewed, "_view_base", None)
    if viewed is None:
        return
    # Up the chain of views to the first that requires grad: a view of a view (diagonal's
    # is one) made under no_grad requires grad no more than the view between.
    made_from = {id(member): (source, key) for member, source, key in memory_links(target)}
    view = target
    while True:
        source, key = made_from.get(id(view), (None, None))
        if source is None or key is DETACHED or key is ALIAS or type(key) is Through:
            return
        if not source._requires_grad:
            view = source
            continue
        raise InPlaceModificationError(
            f"{name} on a view made under no_grad() of a tensor that requires grad "
            f"(shape {source.shape}), outside no_grad(): whether autograd should see the "
            "change is ambiguous. Make the view and change it both inside no_grad() (not "
            "recorded) or both outside (recorded)"
        )


def _changed_leaf(target: Tensor, name: str, instead: str) -> BackwardError:
    return BackwardError(
        f"{name} on a leaf tensor that requires grad (shape {target.shape}) would change "
        "the very value gradients are taken with respect to. Do it inside "
        f"plugrad.no_grad() (e.g. for a parameter update), or write {instead} to make "
        "a new tensor."
    )


def _truth_values(before: Tensor, result: Tensor, args: tuple[Any, ...]) -> Tensor:
    """A comparison's bool ``result`` as ``before``'s dtype: 1 where true, 0 where false.

    PyTorch's ``x.lt_(y)`` writes that into ``x``. A comparison has no
    gradient, but as in PyTorch the tensor stays in the graph while gradients
    are recorded: linked to each floating input that requires grad with a zero
    gradient (``where`` that never takes the input's values), so a later
    ``backward()`` gives those inputs zeros for this path.
    """
    value = _ops.astype(result, before.dtype)
    if not (_state.enabled and _dtypes.is_differentiable(before.dtype)):
        return value
    if result.shape != before.shape:
        return value  # the shape check that follows says what is wrong
    everywhere = _everywhere(before)
    rank = _dtypes.kind_rank(before.dtype)
    for operand in (before, *args):
        if (
            isinstance(operand, Tensor)
            and operand._requires_grad
            and _dtypes.kind_rank(operand.dtype) <= rank
        ):
            if operand.dtype is not before.dtype:
                operand = _ops.astype(operand, before.dtype)
            value = _ops.where(everywhere, value, operand)
    return value


def _apply_array_operator(
    target: Tensor, array_operator: Callable[[Any, Any], Any], other: Any
) -> bool:
    """Apply ``array_operator`` to ``target``'s array in place if that cannot change its dtype.

    Only floating-point targets, with a Python number or an operand of the same
    device, dtype and shape; anything else (broadcasting, promotion, errors to
    report) takes the general path. Returns whether it was applied.
    """
    array = target._array
    if isinstance(other, Tensor):
        operand = other._array
        if (
            other._device is not target._device
            or operand.shape != array.shape
            or operand.dtype != array.dtype
        ):
            return False
    elif type(other) in _NUMBERS:
        operand = other
    else:
        return False
    dtype = target._device.dtype_of(array)
    if dtype.kind not in _FLOATING_KINDS:
        return False
    if target._counter is not None and target._device.backend.repeats_elements(array):
        return False  # a broadcast view: the general path refuses it, saying why
    if dtype in _dtypes.half_floats and type(other) in _NUMBERS:
        # The general path computes float16 with a number in float32 and rounds once, as
        # out of place: NumPy would round the number first (h *= 70000.0 makes 0 NaN).
        return False
    try:
        result = array_operator(array, operand)
    except WRITE_REFUSED:
        return False  # e.g. a read-only array: the general path copes, or says why not
    except RuntimeWarning:
        # NumPy's of an inf or nan made, raised by an "error" warnings filter: NumPy checks
        # for them once the whole result is written, so the change is made (as PyTorch's).
        result = array
    if result is not array:  # an immutable backend returned a new array
        target._array = result
        if target._device.backend.lazy:
            target._device.backend.settle(result)  # a loop of x += y grows a chain
    return True


def _check_result(target: Tensor, result: Tensor, name: str, *, recording: bool) -> Any:
    """Return the result's array, cast to ``target``'s dtype if that loses no kind (signed
    and unsigned integers are one kind here, as in PyTorch: uint8 += int64 wraps)."""
    if result.shape != target.shape:
        raise ShapeError(
            f"{name} would give shape {result.shape}, but the tensor it modifies has shape "
            f"{target.shape}; an in-place op cannot change the shape (the other operand "
            "must broadcast to it)"
        )
    array = result._array
    if result.dtype is target.dtype:
        return array
    if _dtypes.kind_rank(result.dtype) != _dtypes.kind_rank(target.dtype):
        raise DtypeError(
            f"{name} would give {result.dtype.name} values, which a {target.dtype.name} tensor "
            "cannot hold; convert one operand first, or write x = x + y to make a new tensor"
        )
    device = target._device
    return device.xp.astype(array, device.native_dtype(target.dtype))


def check_out(op: str, out: Any, inputs: tuple[Any, ...]) -> None:
    """Refuse ``out=`` where it cannot be honoured, before anything is computed.

    As in PyTorch, a result written into ``out`` takes no part in autograd, so
    ``out=`` is refused while gradients are recorded for any input (or ``out``).
    """
    if not isinstance(out, Tensor):
        raise ArgumentError(f"{op}(): out= takes a Tensor to write the result into, got {out!r}")
    if _state.enabled and (
        out._requires_grad or any(isinstance(x, Tensor) and x._requires_grad for x in inputs)
    ):
        raise ArgumentError(
            f"{op}(): out= writes the result into an existing tensor, which autograd cannot "
            "record, and an input (or out) requires grad; leave out= out (y = "
            f"{op}(...)), or compute under plugrad.no_grad()"
        )


def write_out(op: str, out: Tensor, result: Tensor) -> Tensor:
    """Write ``result`` into ``out`` in place (same shape, a dtype that holds it); return ``out``.

    The cast follows PyTorch's rule: never to a lower kind (float into an int
    tensor, complex into a real one). An ``out`` without elements takes the
    result's shape first, as PyTorch's (``out=plugrad.empty(0)``); one of another
    shape with elements is refused (PyTorch resizes it with a warning that this
    will stop). The positions ``argmax`` or ``searchsorted`` give go only into an out
    of their own dtype.
    """
    return _write_checked(op, out, _checked_out(op, out, result, op in _INDEX_RESULTS))


def _checked_out(op: str, out: Tensor, result: Tensor, index: bool = False) -> Tensor:
    """``result`` as ``out`` takes it (cast to its dtype), or the error that ``out`` cannot.

    An ``index`` result (the positions of ``argmax``, ``sort``'s indices) goes only into
    an out of its own dtype: a narrower integer would wrap positions to other ones,
    a float one would hold them as floats (PyTorch refuses both).
    """
    if result._device is not out._device:
        raise DeviceMismatchError(
            f"{op}(): out= is on {out._device.name!r} but the result is on "
            f"{result._device.name!r}; give an out tensor on {result._device.name!r}"
        )
    if result.shape != out.shape and out.numel():
        raise ShapeError(
            f"{op}(): the result has shape {result.shape} but out= has shape {out.shape}; "
            "give an out tensor of the result's shape, or an empty one (plugrad.empty(0)), "
            "which takes it"
        )
    if result.dtype is not out.dtype:
        if index:
            raise DtypeError(
                f"{op}(): the indices are {result.dtype.name}, but out= for them has dtype "
                f"{out.dtype.name}; give an out tensor of dtype {result.dtype.name}"
            )
        if _dtypes.kind_rank(out.dtype) < _dtypes.kind_rank(result.dtype):
            raise DtypeError(
                f"{op}(): the result is {result.dtype.name}, which out= of dtype "
                f"{out.dtype.name} cannot hold; give an out tensor of dtype {result.dtype.name}"
            )
        result = _ops.astype(result, out.dtype)
    if copies_of_views:
        _refuse_change_of_copy_of_view(out, f"{op}(out=...)")
    return result


def _write_checked(op: str, out: Tensor, result: Tensor) -> Tensor:
    """Write ``result``, checked by :func:`_checked_out`, into ``out``."""
    if result.shape != out.shape:  # new memory of the result's shape (it had no elements)
        device = out._device
        native = device.xp.empty(tuple(result.shape), dtype=out._array.dtype, device=device.native)
        out._array = native
        out._layout = None  # (where arrays have none: row-major, as a new array's)
    copies = out._device.views_are_copies and _copies_to_refresh(out, f"{op}(out=...)")
    _write_or_rebind(out, result._array, f"{op}(out=...)")
    if copies:
        _refresh_copies(out, copies)
    out._bump_version()
    return out


#: Functions whose one result is positions in their input: its out= has its dtype exactly.
_INDEX_RESULTS = frozenset({"argmax", "argmin", "argsort", "searchsorted", "bucketize"})


def into_out(
    name: str,
    out: Any,
    inputs: tuple[Any, ...],
    function: Callable[..., Any],
    *args: Any,
    **kwargs: Any,
) -> Any:
    """``function(*args, **kwargs)`` written into PyTorch's ``out=``: one tensor, or a tuple
    of them for a function with several results (``cummax``'s values and indices).

    Checked before anything is computed; computed without recording, as every ``out=``."""
    several = isinstance(out, (tuple, list))
    outs = tuple(out) if several else (out,)
    given = (*inputs, *args, *kwargs.values())
    # (tensors in a list argument too: hstack([a, b], out=o) of an a requiring grad is refused)
    tensors = tuple(
        t
        for value in given
        for t in (value if type(value) in (list, tuple) else (value,))
        if isinstance(t, Tensor)
    )
    for each in outs:
        check_out(name, each, tensors)
    with no_grad():
        result = function(*args, **kwargs)
    pair = isinstance(result, tuple)
    results = tuple(result) if pair else (result,)
    if len(results) != len(outs) or pair != several:
        wanted = f"a tuple of {len(results)} tensors" if pair else "one tensor"
        raise ArgumentError(f"{name}(): out= takes {wanted} for its results, got {out!r}")
    fields = getattr(result, "_fields", ())
    indices = [
        field == "indices" if fields else name in _INDEX_RESULTS
        for field in (fields or (None,) * len(results))
    ]
    with no_grad():
        # Every out checked before any is written: a refused one leaves all as they were.
        checked = [
            _checked_out(name, each, value, index)
            for each, value, index in zip(outs, results, indices)
        ]
        written = [_write_checked(name, each, value) for each, value in zip(outs, checked)]
    if not isinstance(result, tuple):
        return written[0]
    return type(result)(*written) if hasattr(result, "_fields") else tuple(written)


def takes_out(function: _Function) -> _Function:
    """``function`` taking PyTorch's keyword ``out=`` too (see :func:`into_out`).

    For a PyTorch name written as a Python function; a creation or random function
    (one with ``dtype`` and ``device``) makes its result with ``out``'s dtype and
    device unless told otherwise, as PyTorch's ``zeros(2, out=o)`` does.
    """
    name = function.__name__
    signature = inspect.signature(function)
    creates = {"dtype", "device"} <= signature.parameters.keys()

    @functools.wraps(function)
    def call(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        if out is None:
            return function(*args, **kwargs)
        if creates and isinstance(out, Tensor):
            if kwargs.get("dtype") is None:
                kwargs["dtype"] = out.dtype
            if kwargs.get("device") is None:
                kwargs["device"] = out.device
        return into_out(name, out, (), function, *args, **kwargs)

    parameters = list(signature.parameters.values())
    at = next(
        (i for i, p in enumerate(parameters) if p.kind is inspect.Parameter.VAR_KEYWORD),
        len(parameters),
    )
    out = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)
    call.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*parameters[:at], out, *parameters[at:]]
    )
    return cast("_Function", call)


# -- the in-place methods of Tensor ------------------------------------------------------


def _setitem(self: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value``: an in-place op, safe for autograd (see ``plugrad.inplace``)."""
    recorded = _state.enabled and (
        self._requires_grad or (isinstance(value, Tensor) and value._requires_grad)
    )
    key = index_key(self, key, recorded)
    if not recorded and _write_directly(self, key, value):
        return
    value = in_numpy_order(self, key, value)
    apply_inplace(self, _assign, value, key, name=_SETITEM)


_SETITEM = "x[key] = value"
#: Python numbers ``x[key] = value`` writes straight into the array (a complex one is
#: refused or converted by the general path).
_SCALARS = frozenset({bool, int, float})


def _write_directly(target: Tensor, key: tuple[Any, ...], value: Any) -> bool:
    """``target[key] = value`` done by the array itself where that is the whole of it: not
    recorded, a basic key, memory written in place, and a number the dtype holds or a
    tensor of the same device and dtype. The general path makes a new array and copies
    it back: O(size) where this is O(size of the part written).

    Returns whether it was written.
    """
    device = target._device
    if device.views_are_copies or copies_of_views:
        return False
    if type(value) in _SCALARS:
        if not _dtypes.holds_number(target.dtype, value):
            return False
    elif isinstance(value, Tensor):
        if value._device is not device or value.dtype is not target.dtype:
            return False
        value = value._array
    else:
        return False
    for k in key:
        if type(k) not in BASIC_INDEX_TYPES:
            return False
    array = target._array
    if target._counter is not None:
        if _state.enabled and not target._requires_grad:
            refuse_view_made_without_grad(target, _SETITEM)
        if device.backend.repeats_elements(array):
            return False  # a broadcast view: the general path refuses it, saying why
    try:
        array[key] = value
    except Exception:  # an index out of range, a read-only array: the general path says why
        return False
    target._bump_version()
    return True


def _iadd(self: Tensor, other: Any) -> Tensor:
    return apply_inplace(self, _ops.add, other, name="x += y", array_operator=operator.iadd)


def _isub(self: Tensor, other: Any) -> Tensor:
    return apply_inplace(self, _ops.subtract, other, name="x -= y", array_operator=operator.isub)


def _imul(self: Tensor, other: Any) -> Tensor:
    return apply_inplace(self, _ops.multiply, other, name="x *= y", array_operator=operator.imul)


def _itruediv(self: Tensor, other: Any) -> Tensor:
    return apply_inplace(self, _ops.divide, other, name="x /= y", array_operator=operator.itruediv)


def _ipow(self: Tensor, other: Any) -> Tensor:
    return apply_inplace(self, _ops.pow, other, name="x **= y", array_operator=operator.ipow)


def _in_place_operator(symbol: str, op: str) -> Callable[[Tensor, Any], Tensor]:
    """``x <symbol>= y`` as the in-place form of ``op``: without it Python would compute
    ``x <symbol> y`` and rebind the name, leaving the tensor (and its views) unchanged."""

    def operator(self: Tensor, other: Any) -> Tensor:
        return apply_inplace(self, getattr(_ops, op), other, name=f"x {symbol}= y")

    operator.__doc__ = f"``x {symbol}= y``: ``plugrad.{op}(x, y)`` written into ``x``."
    return operator


#: The in-place forms of the binary operators beyond the five above; ``@=`` is left to
#: Python (a new tensor), as in PyTorch.
_IN_PLACE_OPERATORS = {
    f"__i{name}__": row
    for name, row in BINARY_OPERATORS.items()
    if name not in ("add", "sub", "mul", "truediv", "pow", "matmul")
}


def _fill(self: Tensor, value: bool | int | float | complex) -> Tensor:
    """Set every element to ``value``, in place; returns the tensor.

    A number is converted to the tensor's dtype, as in PyTorch: truth for a
    bool tensor, truncation toward zero for an integer one.

    Examples
    --------
    >>> import plugrad
    >>> w = plugrad.ones(3)
    >>> w.fill_(0.5)
    tensor([0.5000, 0.5000, 0.5000])
    >>> plugrad.zeros(2, dtype=plugrad.int64).fill_(-2.7)
    tensor([-2, -2])
    >>> plugrad.zeros(2, dtype=plugrad.bool).fill_(1)
    tensor([True, True])
    """
    if isinstance(value, Tensor) and value.ndim:
        # As PyTorch: filling with a tensor of values (broadcast into self) is copy_().
        raise ShapeError(
            f"fill_() takes a number or a 0-d tensor, got a tensor of shape {value.shape}; "
            "use x.copy_(values) to write values that broadcast to x"
        )
    if isinstance(value, Tensor):
        _refuse_other_device("fill_", self, value, "value")
        if value.dtype is not self.dtype:
            _warn_if_imaginary_dropped(value, self)
            value = _converted(value, self.dtype)  # as PyTorch: the value takes x's dtype
    return apply_inplace(self, filled_with, _number_for(self, value), name="fill_()")


def _refuse_other_device(method: str, target: Tensor, source: Tensor, name: str) -> None:
    if source._device is not target._device:
        raise DeviceMismatchError(
            f"{method}(): the {name} is on {source._device.name!r} but the tensor is on "
            f"{target._device.name!r}; plugrad never copies between devices silently: move it "
            f"first ({name}.to({target._device.name!r}))"
        )


def _converted(source: Tensor, dtype: Any) -> Tensor:
    """``source`` in ``dtype`` as PyTorch writes it into a tensor: a complex one into a real
    tensor gives its real part (a bool one whether the whole number is nonzero)."""
    if source.dtype.kind == "complex floating" and dtype.kind != "complex floating":
        if dtype.kind == "bool":  # (the standard's astype takes no complex to bool)
            return _ops.not_equal(source, 0)
        source = _ops.real(source)
    return source if source.dtype is dtype else _ops.astype(source, dtype)


def _number_for(target: Tensor, value: Any) -> Any:
    """A Python number ``value`` in the kind of ``target``'s dtype (bool, int), as PyTorch
    converts what fill_ writes; anything else as it is (checked where it is written)."""
    kind = target.dtype.kind
    if not isinstance(value, Tensor) and getattr(value, "shape", None) == ():
        value = value.item()  # a NumPy scalar: the Python number it holds
    if type(value) not in (bool, int, float):
        return value
    if kind == "bool":
        return bool(value)
    if kind in ("signed integer", "unsigned integer") and type(value) is float:
        if not math.isfinite(value):
            raise DtypeError(
                f"fill_({value}) of an integer tensor: {value} is not an integer; fill it with "
                "an integer, or convert the tensor to a floating dtype first (x.float())"
            )
        return int(value)  # toward zero
    return value


def _zero(self: Tensor) -> Tensor:
    """Set every element to zero, in place; returns the tensor."""
    return apply_inplace(self, filled_with, _number_for(self, 0), name="zero_()")


def _copy(self: Tensor, source: Tensor | complex, non_blocking: bool = False) -> Tensor:
    """Copy ``source`` (broadcast to this shape; or a number) into this tensor, in place.

    The gradient flows to ``source``; the old values get none. As in PyTorch,
    ``source`` is converted to this tensor's dtype (a float copied into an
    integer tensor is truncated, and takes no part in autograd; complex values
    copied into a real tensor lose their imaginary parts, with a warning). ``non_blocking``
    is PyTorch's option; the copy is done when ``copy_`` returns.

    Examples
    --------
    >>> import plugrad
    >>> plugrad.zeros(3, dtype=plugrad.int64).copy_(plugrad.tensor([1.5, -2.5, 3.0]))
    tensor([ 1, -2,  3])
    """
    if type(source) in (bool, int, float, complex):  # as PyTorch: a number fills
        return apply_inplace(self, filled_with, _number_for(self, source), name="copy_()")
    if not isinstance(source, Tensor):
        raise ArgumentError(f"copy_() takes a Tensor or a number, got {type(source).__name__}")
    _refuse_other_device("copy_", self, source, "source")
    if source.dtype is not self.dtype:
        _warn_if_imaginary_dropped(source, self)
        source = _converted(source, self.dtype)
    try:
        return apply_inplace(self, filled_with, source, name="copy_()")
    except PlugradError as error:
        name_the_call(error, "copy_")  # (it named where(), which copies)
        raise


def _warn_if_imaginary_dropped(source: Tensor, target: Tensor) -> None:
    """Warn, as PyTorch, when complex values written into a real (not bool) tensor lose their
    imaginary parts (a bool one takes whether each is nonzero: nothing is lost)."""
    if source.dtype.kind == "complex floating" and target.dtype.kind not in (
        "complex floating",
        "bool",
    ):
        warnings.warn(
            "copying complex values into a real tensor discards their imaginary parts; "
            "copy plugrad.real(source) to say so",
            UserWarning,
            stacklevel=3,
        )


def _resize(self: Tensor, *size: int | tuple[int, ...]) -> Tensor:
    """Give the tensor the shape ``size``, in place, keeping its elements in order; returns it.

    As PyTorch's ``resize_``: with as many elements as before the data stays
    where it is (``reshape``); with fewer, the tensor keeps its first elements;
    with more, the old elements come first and the new ones are zeros (PyTorch
    leaves them uninitialised). A tensor that requires grad cannot be resized.

    Examples
    --------
    >>> import plugrad
    >>> x = plugrad.arange(4.0)
    >>> x.resize_(2, 3)
    tensor([[0., 1., 2.],
            [3., 0., 0.]])
    """
    shape: tuple[Any, ...] = size
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        shape = tuple(size[0])
    if not all(type(n) is int and n >= 0 for n in shape):
        raise ShapeError(f"resize_{shape}: give sizes as non-negative ints")
    if self._requires_grad:
        raise BackwardError(
            f"resize_() on a tensor that requires grad (shape {self.shape}): autograd cannot "
            "follow a change in the number of elements; use y = x.reshape(...) for the same "
            "number, or resize y = x.detach(), a tensor outside the graph"
        )
    device, array = self._device, self._array
    xp = device.xp
    count = 1
    for n in shape:
        count *= n
    same_count = count == self.numel()
    if same_count:  # the same memory, seen in another shape
        _refuse_shape_change_of_shared(self, "resize_()")
        self._array = xp.reshape(array, shape)
    else:
        flat = xp.reshape(array, (-1,))
        if count < flat.shape[0]:
            flat = flat[:count]
        else:
            zeros = xp.zeros(count - flat.shape[0], dtype=array.dtype, device=device.native)
            flat = xp.concat((flat, zeros))
        self._array = xp.reshape(flat, shape)
    self._layout = None  # (where arrays have none: row-major, as a new array's)
    self._bump_version()
    if not same_count and device.views_are_copies:
        # A new array, which the views made before do not follow (they would be made again
        # from it in the wrong shape). Elsewhere they may share its memory (NumPy's slice).
        _versions.leave_memory(self)
    return self


def _resize_as(self: Tensor, other: Tensor) -> Tensor:
    """``x.resize_(other.shape)``: see :meth:`resize_`."""
    return _resize(self, tuple(other.shape))


def _assign(target: Tensor, value: Any, key: Any) -> Tensor:
    return _ops.setitem(target, value, key=key)


def filled_with(target: Tensor, value: Any) -> Tensor:
    """``value`` (a scalar or a tensor) broadcast to ``target``: gradient 0 for ``target``."""
    return _ops.where(_everywhere(target), value, target)


def _everywhere(target: Tensor) -> Tensor:
    """A bool tensor of ``target``'s shape and device, true everywhere."""
    device = target._device
    mask = device.xp.ones(
        target._array.shape, dtype=device.native_dtype(_dtypes.bool), device=device.native
    )
    return _wrap(mask, device, False, None)


install_methods(
    __setitem__=_setitem,
    __iadd__=_iadd,
    __isub__=_isub,
    __imul__=_imul,
    __itruediv__=_itruediv,
    __ipow__=_ipow,
    **{name: _in_place_operator(*row) for name, row in _IN_PLACE_OPERATORS.items()},
    fill_=_fill,
    zero_=_zero,
    copy_=_copy,
    resize_=_resize,
    resize_as_=_resize_as,
)
