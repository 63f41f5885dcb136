"""PyTorch's ``torch.nn.modules.utils``: the size-tuple helpers custom layers import
(``_pair(3)`` is ``(3, 3)``) and ``consume_prefix_in_state_dict_if_present``, which
strips the ``module.`` a :class:`~plugrad.nn.DataParallel` or
:class:`~plugrad.nn.parallel.DistributedDataParallel` checkpoint puts before each key."""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple[Any, ...]]:
    """A function making ``n`` copies of a value, or a tuple of an iterable one."""

    def parse(x: Any) -> tuple[Any, ...]:
        return tuple(x) if isinstance(x, Iterable) else (x,) * n

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def consume_prefix_in_state_dict_if_present(
    state_dict: MutableMapping[str, Any], prefix: str
) -> None:
    """Remove ``prefix`` from the keys of ``state_dict`` that start with it, in place (and
    from its ``_metadata``), as PyTorch's does.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.modules.utils import consume_prefix_in_state_dict_if_present
    >>> state = plugrad.nn.DataParallel(plugrad.nn.Linear(3, 2)).state_dict()
    >>> consume_prefix_in_state_dict_if_present(state, "module.")
    >>> sorted(state)
    ['bias', 'weight']
    """
    for key in [key for key in state_dict if key.startswith(prefix)]:
        state_dict[key[len(prefix) :]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata):
            # "" is the root's entry; the prefix's own module is its name without the dot
            if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
                metadata[key[len(prefix) :]] = metadata.pop(key)
