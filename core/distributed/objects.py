"""Python objects through the collectives, PyTorch's way: pickled into bytes and sent as tensors.

As in PyTorch, the objects are unpickled where they arrive: only exchange them among
processes that trust each other (the processes of one job).
"""

from __future__ import annotations

import pickle
from typing import Any

from .. import dtypes as _dtypes
from ..creation import DeviceLike, asarray, empty
from ..errors import ArgumentError, InvalidArgumentError
from ..tensor import Tensor
from .collectives import all_gather, broadcast, gather
from .process_group import get_rank, get_world_size

__all__ = ["all_gather_object", "broadcast_object_list", "gather_object"]


def _as_bytes(data: bytes, device: DeviceLike) -> Tensor:
    # (a list of ints: the core imports no array library; the objects sent are small)
    return asarray(list(data), dtype=_dtypes.uint8, device=device)


def _from_bytes(data: Tensor, size: int) -> Any:
    return pickle.loads(bytes(data[:size].tolist()))


def _check_list(value: Any, what: str, length: int | None = None) -> list[Any]:
    if not isinstance(value, list):
        raise ArgumentError(f"{what} must be a list, got {type(value).__name__}")
    if length is not None and len(value) != length:
        raise InvalidArgumentError(
            f"{what} must have one place per rank ({length}), got {len(value)}; "
            f"pass [None] * dist.get_world_size()"
        )
    return value


def broadcast_object_list(
    object_list: list[Any], src: int = 0, group: Any = None, device: DeviceLike = None
) -> None:
    """Every rank's ``object_list`` gets rank ``src``'s objects, in place (same length on all).

    Examples
    --------
    ::

        config = [{"lr": 0.1, "seed": 1234}] if dist.get_rank() == 0 else [None]
        dist.broadcast_object_list(config, src=0)   # every rank: the dict of rank 0
    """
    _check_list(object_list, "object_list")
    mine = get_rank(group) == src
    payloads = [pickle.dumps(o) for o in object_list] if mine else []
    sizes = asarray([len(p) for p in payloads] if mine else [0] * len(object_list),
                    dtype=_dtypes.int64, device=device)  # fmt: skip
    broadcast(sizes, src, group)
    total = sum(int(n) for n in sizes.tolist())
    data = (
        _as_bytes(b"".join(payloads), device)
        if mine
        else empty(total, dtype=_dtypes.uint8, device=device)
    )
    if total:
        broadcast(data, src, group)
    if not mine:
        raw = bytes(data.tolist())
        start = 0
        for index, size in enumerate(int(n) for n in sizes.tolist()):
            object_list[index] = pickle.loads(raw[start : start + size])
            start += size


def _padded_bytes(obj: Any, group: Any, device: DeviceLike) -> tuple[Tensor, list[int], int]:
    """``obj`` pickled, padded to the longest of every rank's; each rank's length."""
    data = _as_bytes(pickle.dumps(obj), device)
    size = asarray([data.shape[0]], dtype=_dtypes.int64, device=device)
    world = get_world_size(group)
    sizes = [empty(1, dtype=_dtypes.int64, device=device) for _ in range(world)]
    all_gather(sizes, size, group)
    lengths = [int(s.tolist()[0]) for s in sizes]
    longest = max(lengths)
    padded = empty(longest, dtype=_dtypes.uint8, device=device)
    padded[: data.shape[0]] = data
    return padded, lengths, longest


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """``object_list[r]`` gets rank ``r``'s ``obj``, on every rank.

    Examples
    --------
    ::

        scores = [None] * dist.get_world_size()
        dist.all_gather_object(scores, {"rank": dist.get_rank(), "loss": loss.item()})
    """
    world = get_world_size(group)
    _check_list(object_list, "object_list", world)
    padded, lengths, longest = _padded_bytes(obj, group, None)
    rows = [empty(longest, dtype=_dtypes.uint8) for _ in range(world)]
    all_gather(rows, padded, group)
    for rank, (row, size) in enumerate(zip(rows, lengths)):
        object_list[rank] = _from_bytes(row, size)


def gather_object(
    obj: Any, object_gather_list: list[Any] | None = None, dst: int = 0, group: Any = None
) -> None:
    """Rank ``dst``'s ``object_gather_list[r]`` gets rank ``r``'s ``obj`` (others pass None)."""
    world = get_world_size(group)
    root = get_rank(group) == dst
    if root:
        _check_list(object_gather_list, "object_gather_list", world)
    elif object_gather_list is not None:
        raise InvalidArgumentError(
            f"only rank {dst} (dst) passes object_gather_list; pass None here"
        )
    padded, lengths, longest = _padded_bytes(obj, group, None)
    rows = [empty(longest, dtype=_dtypes.uint8) for _ in range(world)] if root else None
    gather(padded, rows, dst, group)
    if root:
        assert object_gather_list is not None and rows is not None
        for rank, (row, size) in enumerate(zip(rows, lengths)):
            object_gather_list[rank] = _from_bytes(row, size)
