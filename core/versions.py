"""Version counters: how many in-place changes a tensor's memory has seen, and who shares it.

A tensor's ``_counter`` is ``None`` until the tensor is modified in place or a
view of it is taken; then a list shared with its views (and ``detach()``-ed
copies): the version, then ``(member, base, key)`` for each tensor sharing the
memory (``member`` and ``base`` weak references, ``base`` only for an index),
so that an in-place op recorded on one of them can bring the others' graph
history up to date (see :mod:`plugrad.inplace`). The functions here are the
Tensor's methods of the same names (``_bump_version``, ``_add_alias``, ...).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Protocol, TypeVar


class Versioned(Protocol):
    """What these functions need of a tensor (the Tensor, which imports this module)."""

    _counter: list[Any] | None


Member = TypeVar("Member", bound=Versioned)

__all__ = ["DETACHED", "add_alias", "bump_version", "memory_family", "shared_counter", "version"]

_weak = weakref.ref

#: The key of :func:`add_alias` for a ``detach()``-ed alias.
DETACHED = object()


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


def add_alias(tensor: Versioned, alias: Versioned, key: Any = None) -> None:
    """Record that ``alias`` shares ``tensor``'s memory, and how.

    ``key``: the index that made ``alias`` as ``tensor[key]``, :data:`DETACHED`
    for ``detach()``, ``None`` for any other view. The two share the counter.
    """
    counter = tensor._counter
    if counter is None:
        counter = tensor._counter = [0, (_weak(tensor), None, None)]
    elif len(counter) == 1:
        counter.append((_weak(tensor), None, None))
    alias._counter = counter
    if key is None or key is DETACHED:
        counter.append((_weak(alias), None, key))
    else:
        counter.append((_weak(alias), _weak(tensor), key))
    size = len(counter)
    if size >= 32 and not size & (size - 1):  # at each power of two: forget the dead
        _forget_dead_aliases(counter)


_pruning = threading.Lock()


def _forget_dead_aliases(counter: list[Any]) -> None:
    """Drop the entries of tensors that no longer exist from a shared version counter.

    Other threads may add aliases meanwhile: only the entries seen here are
    replaced (appends land past them), and prunes of one counter take turns.
    """
    with _pruning:
        seen = len(counter)
        counter[1:seen] = [entry for entry in counter[1:seen] if entry[0]() is not None]


def bump_version(tensor: Versioned) -> None:
    """Count one in-place modification of the tensor's memory."""
    counter = tensor._counter
    if counter is None:
        tensor._counter = [1]
    else:
        counter[0] += 1


def memory_family(tensor: Member) -> list[tuple[Member, Any, Any]]:
    """Every live tensor sharing ``tensor``'s memory (``tensor`` too), in the order made.

    Each as ``(member, base, key)``: ``member`` is ``base[key]``; ``base`` is
    :data:`DETACHED` for a ``detach()``-ed member, ``None`` when not known (the
    first tensor, other views, or a base that is gone).
    """
    counter = tensor._counter
    if counter is None or len(counter) < 2:
        return []
    found: list[tuple[Member, Any, Any]] = []
    seen = set()
    for member_ref, base_ref, key in counter[1:]:
        member = member_ref()
        if member is not None and id(member) not in seen:
            seen.add(id(member))
            base = DETACHED if key is DETACHED else None if base_ref is None else base_ref()
            found.append((member, base, key))
    return found
