"""Version counters: how many in-place changes a tensor's memory has seen, and who shares it.

A tensor's ``_counter`` is ``None`` until the tensor is modified in place or a
view of it is taken; then a list shared with its views (and ``detach()``-ed
copies): the version, then ``(member, base, key)`` for each tensor sharing the
memory (``member`` and ``base`` weak references; ``base`` is the tensor
``member`` was made from, ``None`` for the first tensor), so that an in-place op
recorded on one of them can bring the others' graph history up to date, and on
backends whose views are copies their values too (see :mod:`plugrad.inplace`).
The functions here are the Tensor's methods of the same names
(``_bump_version``, ``_add_alias``, ...).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Protocol, TypeVar

from . import strided_layout


class Versioned(Protocol):
    """What these functions need of a tensor (the Tensor, which imports this module)."""

    _counter: list[Any] | None


Member = TypeVar("Member", bound=Versioned)

__all__ = [
    "ALIAS",
    "DETACHED",
    "Through",
    "Unstacked",
    "ViewOf",
    "add_alias",
    "bump_version",
    "copies_of_views",
    "copy_of_view_made_from",
    "copy_of_view_made_by",
    "detached_roots",
    "is_view",
    "leave_memory",
    "mark_copy_of_view",
    "memory_family",
    "memory_links",
    "restore_version",
    "shared_counter",
    "version",
]

_weak = weakref.ref

#: The key of :func:`add_alias` for a ``detach()``-ed alias.
DETACHED = object()
#: The key of :func:`add_alias` for an alias holding all of the tensor's values with a
#: graph history of its own (``nn.Parameter(x)``): to autograd, like any other view.
ALIAS = object()


#: Tensors that PyTorch's function would have made views of their input and plugrad made
#: copies of (``view_as_real(z)``, ``z.conj()``), and tensors sharing their memory, by id:
#: ``(weak reference, how it was made, the input or None)``: the input is kept while the
#: copy lives (a view keeps its base so in PyTorch). In-place changes of them, and of
#: the inputs they were made from (or memory those share) while they live, are refused.
copies_of_views: dict[int, tuple[weakref.ref[Any], str, Any]] = {}


def mark_copy_of_view(result: Member, made_by: str, source: Versioned | None = None) -> Member:
    """Mark ``result`` a copy where PyTorch's ``made_by`` makes a view of ``source`` (its
    views and ``detach()``-ed aliases inherit the mark), so that :mod:`plugrad.inplace`
    refuses to change it -- the change would not reach ``source`` -- and, while it lives,
    to change ``source`` or what shares its memory: it would keep the old values. Returns
    ``result``."""
    key = id(result)

    def forget(_: weakref.ref[Any]) -> None:
        copies_of_views.pop(key, None)

    copies_of_views[key] = (_weak(result, forget), made_by, source)
    return result


def copy_of_view_made_by(tensor: Versioned) -> str | None:
    """How ``tensor`` was made, if it is marked by :func:`mark_copy_of_view`; else ``None``."""
    entry = copies_of_views.get(id(tensor))
    return entry[1] if entry is not None and entry[0]() is tensor else None


def copy_of_view_made_from(tensor: Versioned) -> str | None:
    """How a living copy of :func:`mark_copy_of_view` was made from ``tensor``, or from a
    tensor sharing its memory (one version counter); else ``None``."""
    counter = tensor._counter
    for copy, made_by, source in list(copies_of_views.values()):
        if source is None or copy() is None:
            continue
        if source is tensor or (counter is not None and source._counter is counter):
            return made_by
    return None


class ViewOf:
    """The key of :func:`add_alias` for a view made by a view op, where views are copies.

    ``op`` applied to the tensor with ``params`` made the view: what brings its
    values up to date after the tensor changed. Autograd treats it like any
    other view. Only recorded on backends whose views are copies.
    """

    __slots__ = ("op", "params")

    def __init__(self, op: Any, params: dict[str, Any] | None) -> None:
        self.op = op
        self.params = params


class Unstacked:
    """The key of :func:`add_alias` for one output of ``unstack``: ``tensor[index]``.

    Autograd treats it like any other view (not as an index); where views are
    copies its values are re-derived as that index. Only recorded there.
    """

    __slots__ = ("index",)

    def __init__(self, index: tuple[Any, ...]) -> None:
        self.index = index


class Through:
    """The key of a tensor derived from one that is gone (or that left the memory with
    ``x.data = y``): it holds the view ``keys`` of the live source, applied in order.

    Each step is an index, a :class:`ViewOf` or an :class:`Unstacked`; ``detached``
    says whether a ``detach()`` was among them (``w[0].detach()``, whose ``w[0]`` is
    gone): then the tensor is out of the graph, else autograd cannot link it again.
    Made by :func:`memory_links`, never stored.
    """

    __slots__ = ("detached", "keys")

    def __init__(self, keys: tuple[Any, ...], detached: bool) -> None:
        self.keys = keys
        self.detached = detached


class _Left:
    """Stands in the shared list for a tensor that left the memory (``x.data = y``): like
    a dead weak reference, it gives no tensor, but what it was made from stays known."""

    __slots__ = ()

    def __call__(self) -> None:
        return None


def made_a_copy(device: Any, x: Any, out: Any) -> bool:
    """Whether ``out``, made by a view op of ``x``, is a copy (a ``reshape`` the layout
    allowed no view of, a negative step on the torch backend). ``plugrad.compile`` swaps
    in one that asks of the real arrays."""
    return not device.backend.may_share_memory(x._array, out._array)


def version(tensor: Versioned) -> int:
    """How many in-place modifications this tensor's data has seen."""
    counter = tensor._counter
    return 0 if counter is None else counter[0]


def shared_counter(tensor: Versioned) -> list[Any]:
    """The tensor's counter, made if it has none yet (to share it)."""
    counter = tensor._counter
    if counter is None:
        counter = tensor._counter = [0]
    return counter


#: Taken to make a shared counter and to prune one (rare: the hot path takes no lock).
_membership_lock = threading.Lock()


def add_alias(tensor: Versioned, alias: Versioned, key: Any = None) -> None:
    """Record that ``alias`` shares ``tensor``'s memory, and how.

    ``key``: the index that made ``alias`` as ``tensor[key]``, :data:`DETACHED`
    for ``detach()``, :data:`ALIAS` for the same values under another history,
    ``None`` for any other view (its values cannot be derived from ``tensor``'s, but
    whether it was made from a ``detach()``-ed one stays known). The two share the
    counter.
    """
    counter = tensor._counter
    if counter is None or len(counter) == 1:
        # The first view: threads making views of one tensor at once must all find the
        # one counter made here (a second one, made meanwhile, would lose the first's).
        with _membership_lock:
            counter = tensor._counter
            if counter is None:
                counter = tensor._counter = [0, (_weak(tensor), None, None)]
            elif len(counter) == 1:
                counter.append((_weak(tensor), None, None))
    alias._counter = counter
    if copies_of_views:  # rarely anything
        made_by = copy_of_view_made_by(tensor)
        if made_by is not None:
            mark_copy_of_view(alias, made_by)  # (the copy's own entry keeps its source)
    counter.append((_weak(alias), _weak(tensor), key))
    if key is not None:
        if key is not DETACHED and key is not ALIAS:
            # A view keeps what it views alive, as PyTorch's ``_base`` does: an in-place
            # change of the view reaches that tensor (and its other views) through it, even
            # where nothing else holds it (``y.reshape(2, 3).t().mul_(2)``).
            alias._view_base = tensor  # type: ignore[attr-defined]
        if tensor._device.views_are_copies:  # type: ignore[attr-defined]
            strided_layout.follow(tensor, alias, key, ViewOf, Unstacked)
    # Forget the dead when the size reaches a power of two, or passes it by at most
    # three: other threads may append between our append and this read.
    quarter = len(counter) >> 2
    if quarter >= 8 and not quarter & (quarter - 1):
        _forget_dead_aliases(counter)


def _forget_dead_aliases(counter: list[Any]) -> None:
    """Drop the entries of tensors that no longer exist from a shared version counter
    (those that live ones were made from stay: see :func:`memory_links`).

    Other threads may add aliases meanwhile: only the entries seen here are
    replaced (appends land past them), and prunes of one counter take turns.
    """
    with _membership_lock:
        seen = len(counter)
        counter[1:seen] = _needed(counter[1:seen])


def _needed(entries: list[Any]) -> list[Any]:
    """``entries`` less those of tensors that are gone and that no live one was made from."""
    live = [entry for entry in entries if entry[0]() is not None]
    if all(entry[1] is None or entry[1]() is not None for entry in live):
        return live  # (the common case: what the live ones were made from lives)
    needed: set[int] = set()
    for member_ref, source_ref, _ in reversed(entries):  # (sources come first)
        if source_ref is not None and (member_ref() is not None or id(member_ref) in needed):
            needed.add(id(source_ref))
    return [entry for entry in entries if entry[0]() is not None or id(entry[0]) in needed]


def leave_memory(tensor: Versioned) -> None:
    """``tensor`` holds memory of its own now (``x.data = y``): it leaves the tensors it
    shared memory with, keeping its version (graphs that saved it still refuse to run).

    Its views stay views of the old memory, which on backends whose views are
    copies they no longer follow into ``tensor`` (as NumPy's views would not); they
    follow what ``tensor`` was made from, as PyTorch's views follow their ``_base``.
    """
    counter = tensor._counter
    if counter is None or len(counter) < 2:
        return
    left = _Left()
    base = getattr(tensor, "_view_base", None)  # what its views follow now
    with _membership_lock:
        kept = []
        for member_ref, source_ref, key in counter[1:]:
            if member_ref() is tensor:
                member_ref = left
            elif source_ref is not None and source_ref() is tensor:
                source_ref = left
                member = member_ref()
                if base is not None and getattr(member, "_view_base", None) is tensor:
                    member._view_base = base  # (PyTorch's views hold the base of all)
            kept.append((member_ref, source_ref, key))
        counter[1:] = _needed(kept)
    if base is not None:
        del tensor._view_base  # type: ignore[attr-defined]  # (no view now)
    tensor._counter = [counter[0]]


def bump_version(tensor: Versioned) -> None:
    """Count one in-place modification of the tensor's memory."""
    counter = tensor._counter
    if counter is None:
        tensor._counter = [1]
    else:
        counter[0] += 1


def restore_version(tensor: Versioned, version_before: int) -> None:
    """Set the tensor's version back to ``version_before``, once the in-place changes
    made since have been undone bit for bit (a failed ``load_state_dict``).

    Only where no graph could have saved the tensor in between (the load runs
    without recording): graphs that saved it before those changes are then
    valid again, and none could have seen the undone values.
    """
    counter = tensor._counter
    if counter is not None:
        counter[0] = version_before


def memory_family(tensor: Member) -> list[tuple[Member, Any, Any]]:
    """Every live tensor sharing ``tensor``'s memory (``tensor`` too), in the order made.

    Each as ``(member, base, key)``: ``member`` is ``base[key]``, or the view
    :class:`ViewOf` says of ``base``; ``base`` is :data:`DETACHED` for a
    ``detach()``-ed member, ``None`` when not known (the first tensor, other
    views, or a base that is gone).
    """
    if tensor._counter is None:  # the common case, on the path of every in-place op
        return []
    found: list[tuple[Member, Any, Any]] = []
    for member, base, key in memory_links(tensor):
        if key is DETACHED or (type(key) is Through and key.detached):
            found.append((member, DETACHED, key))
        elif (
            key is ALIAS
            or type(key) is Unstacked
            or type(key) is Through
            or (type(key) is ViewOf and base is None)
        ):
            found.append((member, None, None))
        else:
            found.append((member, base, key))
    return found


def detached_roots(tensor: Member) -> dict[int, Any]:
    """For each live tensor sharing ``tensor``'s memory, by id: a token of the nearest
    ``detach()`` it was made through (its own if it was made by one), or ``None``.

    Tensors with different tokens are on different sides of a ``detach()``: an
    in-place change of one does not touch the other's graph history, as in PyTorch.
    Views whose values cannot be derived (``broadcast_arrays``) count too.
    """
    counter = tensor._counter
    if counter is None or len(counter) < 2:
        return {}
    by_entry: dict[int, Any] = {}
    roots: dict[int, Any] = {}
    for member_ref, source_ref, key in counter[1:]:
        if key is DETACHED:
            root = member_ref
        else:
            root = None if source_ref is None else by_entry.get(id(source_ref))
        by_entry.setdefault(id(member_ref), root)
        member = member_ref()
        if member is not None:
            roots.setdefault(id(member), root)
    return roots


def is_view(tensor: Member) -> bool:
    """Whether ``tensor`` was made as a view of another tensor (not by ``detach()``)."""
    counter = tensor._counter
    if counter is None or len(counter) < 3:
        return False
    for member_ref, _, key in counter[2:]:  # counter[1] is the first tensor: no view
        if member_ref() is tensor:
            return key is not DETACHED and key is not ALIAS
    return False


def memory_links(tensor: Member) -> list[tuple[Member, Any, Any]]:
    """Every live tensor sharing ``tensor``'s memory, with what its values are made from.

    Each as ``(member, source, key)`` in the order made: ``member`` holds the
    values ``source[key]`` (an index), or all of ``source``'s values (``key``
    :data:`DETACHED` or :data:`ALIAS`), or the view :class:`ViewOf`,
    :class:`Unstacked` or :class:`Through` says; ``source`` is ``None`` when they
    cannot be derived from another member (the first tensor, other views such as
    ``broadcast_arrays``'s). Used where views are copies, to bring every member's
    values up to date after an in-place change of one of them.

    Where the first tensor is gone, one left that holds all of its values (a
    ``detach()`` of it) takes its place: the others are derived from it.
    """
    counter = tensor._counter
    if counter is None or len(counter) < 2:
        return []
    found: list[tuple[Member, Any, Any]] = []
    seen = set()
    gone: dict[int, Any] | None = None
    orphans: dict[int, list[int]] = {}  # a gone first tensor -> where what it made is found
    for member_ref, source_ref, key in counter[1:]:
        member = member_ref()
        if member is None or id(member) in seen:
            continue
        seen.add(id(member))
        source = None if source_ref is None or key is None else source_ref()
        if source is None and key is not None and source_ref is not None:
            if gone is None:
                gone = {id(entry[0]): entry for entry in counter[1:] if entry[0]() is None}
            source, key, top = _through_gone(gone, source_ref, key)
            if top is not None:
                orphans.setdefault(top, []).append(len(found))
        found.append((member, source, key))
    for places in orphans.values():
        # The first that holds all of the gone tensor's values (a detach() of it) takes its
        # place; without one, none can be derived from another.
        heir = next((i for i in places if found[i][2] is DETACHED or found[i][2] is ALIAS), None)
        for i in places:
            member, _, key = found[i]
            found[i] = (member, None if heir in (None, i) else found[heir][0], key)
    return found


def _through_gone(gone: dict[int, Any], source_ref: Any, key: Any) -> tuple[Any, Any, Any]:
    """What a member made as ``key`` of the gone tensor of ``source_ref`` is derived from,
    up the entries of gone tensors: ``(live source, key of it, None)``, or, where the first
    tensor is gone too, ``(None, key of that one, its id)``; ``(None, None, None)`` where
    its values cannot be derived."""
    steps = [key]
    while True:
        entry = gone.get(id(source_ref))
        if entry is None or (entry[2] is None and entry[1] is not None):
            return None, None, None  # forgotten, or a view that cannot be derived
        top, source_ref, key = entry
        if source_ref is None:
            source = None
            break
        steps.append(key)
        source = source_ref()
        if source is not None:
            top = None
            break
    detached = any(step is DETACHED for step in steps)
    views = tuple(step for step in reversed(steps) if step is not DETACHED and step is not ALIAS)
    if not views:  # only detach() and aliases: all of the source's values
        return source, DETACHED if detached else ALIAS, None if top is None else id(top)
    return source, Through(views, detached), None if top is None else id(top)
