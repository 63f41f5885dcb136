"""Collectives and point-to-point transfers on tensors, PyTorch's way.

Each call checks its tensors here, optionally checks that every rank made the
same call with the same shapes and dtypes, hands the raw arrays to the
communicator, and stores the results back into the tensors when the transfer
completes. With ``async_op=True`` a :class:`~plugrad.distributed.Work` is
returned at once; otherwise the call returns when the results are in place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import (
    ArgumentError,
    DeviceMismatchError,
    DistributedError,
    DtypeError,
    InvalidArgumentError,
    ShapeError,
)
from ..grad_mode import no_grad
from ..tensor import Tensor, _wrap
from .call_agreement import agree
from .communicator import Communicator, ReduceOp, Work
from .process_group import _check_group, _require

__all__ = [
    "all_gather",
    "all_gather_into_tensor",
    "all_reduce",
    "broadcast",
    "gather",
    "irecv",
    "isend",
    "recv",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "send",
]


def _tensor(value: Any, what: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise ArgumentError(f"{what} must be a plugrad Tensor, got {type(value).__name__}")
    return value


def _store(tensor: Tensor, array: Any) -> None:
    """Put a transfer's output into ``tensor``'s memory (unless it was written there already).

    Written, not rebound: ``tensor`` may be a view (``out[k]`` of an all_gather) or share
    its memory (``p.data``), and the tensors it shares it with must see the values too.
    """
    if array is None or array is tensor._array:
        tensor._bump_version()
        return
    with no_grad():
        tensor.copy_(_wrap(array, tensor._device, False, None))  # (bumps the version)


def _check_op(op: Any, tensor: Tensor) -> None:
    """Refuse a reduction ``tensor``'s dtype has no meaning for (or MPI no operation)."""
    if not isinstance(op, ReduceOp):
        raise ArgumentError(f"op must be a plugrad.distributed.ReduceOp, got {op!r}")
    kind = tensor.dtype.kind
    if op is ReduceOp.AVG and kind not in ("real floating", "complex floating"):
        raise DtypeError(
            f"ReduceOp.AVG needs a floating-point tensor, got {tensor.dtype.name}; use SUM and "
            "divide, or convert the tensor first"
        )
    if op in (ReduceOp.MAX, ReduceOp.MIN) and kind == "complex floating":
        raise DtypeError(
            f"ReduceOp.{op.name} of a complex tensor ({tensor.dtype.name}): complex numbers are "
            "not ordered; reduce their abs() or real part instead"
        )


def _communicator(group: Any, *tensors: Tensor) -> tuple[Communicator, bool]:
    _check_group(group)
    state = _require()
    communicator = state.communicator
    for tensor in tensors:
        reason = communicator.supports(tensor._array)
        if reason is not None:
            raise DistributedError(
                f"the {state.backend!r} communication library cannot send a tensor on "
                f"{tensor.device}: {reason}; move it to a device the library can send "
                "(e.g. tensor.to('numpy')) before the collective"
            )
    return communicator, state.check_collectives


def _finish(work: Work, async_op: bool, written: Sequence[Tensor]) -> Work | None:
    """Wait for ``work`` unless ``async_op``; its ``result()`` is ``written``."""
    work._tensors = list(written)
    if async_op:
        return work
    work.wait()
    return None


def _check_rank(value: Any, size: int, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < size:
        raise InvalidArgumentError(f"{what} must be a rank in [0, {size - 1}], got {value!r}")
    return value


def _rooted(tensor: Any, group: Any, root: Any, what: str) -> tuple[Tensor, Communicator, bool]:
    """Check a call with one tensor and one rank (``src`` or ``dst``) it sends to or from."""
    tensor = _tensor(tensor, "tensor")
    communicator, check = _communicator(group, tensor)
    _check_rank(root, communicator.size, what)
    return tensor, communicator, check


def all_reduce(
    tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Work | None:
    """Combine ``tensor`` across all ranks with ``op``; every rank gets the result in place.

    Parameters
    ----------
    tensor : Tensor
        The same shape and dtype on every rank.
    op : ReduceOp
        ``SUM``, ``AVG`` (floating point only), ``MAX``, ``MIN`` or ``PRODUCT``.
    async_op : bool
        Return a :class:`Work` at once instead of waiting.

    Examples
    --------
    ::

        x = plugrad.tensor([float(dist.get_rank())])
        dist.all_reduce(x, op=dist.ReduceOp.SUM)   # on 2 ranks: tensor([1.])
    """
    tensor = _tensor(tensor, "tensor")
    _check_op(op, tensor)
    communicator, check = _communicator(group, tensor)
    if check:
        agree(communicator, "all_reduce", tensor, op, 0)
    work = communicator.allreduce(tensor._array, op)
    work.add_done_callback(lambda: _store(tensor, work.output))
    return _finish(work, async_op, [tensor])


def reduce(
    tensor: Tensor, dst: int, op: ReduceOp = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Work | None:
    """Combine ``tensor`` across all ranks with ``op``; rank ``dst`` gets the result in place.

    The other ranks' tensors are left as they were. (An all-reduce of a copy: the
    communication libraries' own reduce would save little at these sizes.)
    """
    tensor, communicator, check = _rooted(tensor, group, dst, "dst")
    _check_op(op, tensor)
    if check:
        agree(communicator, "reduce", tensor, op, dst)
    sent = tensor._device.xp.asarray(tensor._array, copy=True)
    work = communicator.allreduce(sent, op)
    if communicator.rank == dst:  # (the result in place in the copy, or work.output)
        work.add_done_callback(lambda: _store(tensor, sent if work.output is None else work.output))
    return _finish(work, async_op, [tensor])


def broadcast(tensor: Tensor, src: int, group: Any = None, async_op: bool = False) -> Work | None:
    """Every rank's ``tensor`` gets rank ``src``'s values, in place."""
    tensor, communicator, check = _rooted(tensor, group, src, "src")
    if check:
        agree(communicator, "broadcast", tensor, None, src)
    work = communicator.broadcast(tensor._array, src)
    work.add_done_callback(lambda: _store(tensor, work.output))
    return _finish(work, async_op, [tensor])


def _rows(work: Work, targets: Sequence[Tensor]) -> None:
    for row, target in enumerate(targets):
        _store(target, work.output[row, ...])  # (the standard indexes every axis)


def _same_device(tensor: Tensor, like: Tensor, what: str) -> None:
    """Refuse ``tensor`` on another device than ``like`` before any transfer (the output
    was written with a raw KeyError after the transfer)."""
    if tensor._device != like._device:
        raise DeviceMismatchError(
            f"{what} is on {tensor._device} but the tensor sent is on {like._device}; a "
            f"collective's tensors share one device: move one first (.to({str(like._device)!r}))"
        )


def _check_list(tensors: Any, like: Tensor, size: int, what: str) -> list[Tensor]:
    if not isinstance(tensors, (list, tuple)) or len(tensors) != size:
        raise InvalidArgumentError(
            f"{what} must be a list of {size} tensors (one per rank), got {tensors!r}"
        )
    for i, t in enumerate(tensors):
        _same_device(_tensor(t, f"{what}[{i}]"), like, f"{what}[{i}]")
        if tuple(t.shape) != tuple(like.shape) or t.dtype != like.dtype:
            raise ShapeError(
                f"{what}[{i}] is {t.dtype.name} {tuple(t.shape)}, but the tensor is "
                f"{like.dtype.name} {tuple(like.shape)}; they must match"
            )
    return list(tensors)


def _list_at_root(
    tensors: Any,
    what: str,
    like: Tensor,
    communicator: Communicator,
    root: int,
    root_name: str,
) -> list[Tensor] | None:
    """``tensors`` checked against ``like`` on rank ``root``, which alone passes a list;
    ``None`` on the other ranks."""
    if communicator.rank == root:
        return _check_list(tensors, like, communicator.size, what)
    if tensors is not None:
        raise InvalidArgumentError(
            f"only rank {root_name}={root} passes a {what}; rank {communicator.rank} did"
        )
    return None


def _rooted_list(
    name: str, tensor: Any, tensors: Any, group: Any, root: Any, root_name: str
) -> tuple[Tensor, Communicator, list[Tensor] | None]:
    """Check a call ``name`` with one tensor and, on rank ``root`` alone, a list
    (``name + "_list"``) of one tensor like it per rank; the list there, else ``None``."""
    tensor, communicator, check = _rooted(tensor, group, root, root_name)
    listed = _list_at_root(tensors, f"{name}_list", tensor, communicator, root, root_name)
    if check:
        agree(communicator, name, tensor, None, root)
    return tensor, communicator, listed


def all_gather(
    tensor_list: list[Tensor], tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """``tensor_list[r]`` gets rank ``r``'s ``tensor``, on every rank."""
    tensor = _tensor(tensor, "tensor")
    communicator, check = _communicator(group, tensor)
    targets = _check_list(tensor_list, tensor, communicator.size, "tensor_list")
    if check:
        agree(communicator, "all_gather", tensor, None, 0)
    work = communicator.allgather(tensor._array)
    work.add_done_callback(lambda: _rows(work, targets))
    return _finish(work, async_op, targets)


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """``output_tensor`` gets every rank's input, in rank order: concatenated along dimension 0
    (``world_size`` times longer there) or stacked (``(world_size, *input.shape)``), as
    PyTorch's takes either."""
    output_tensor = _tensor(output_tensor, "output_tensor")
    input_tensor = _tensor(input_tensor, "input_tensor")
    communicator, check = _communicator(group, input_tensor)
    _same_device(output_tensor, input_tensor, "output_tensor")
    if output_tensor.dtype != input_tensor.dtype:
        # (copy_ into the output would convert: floats truncated into integers, or inf)
        raise DtypeError(
            f"output_tensor is {output_tensor.dtype.name} but input_tensor is "
            f"{input_tensor.dtype.name}; they must have one dtype: convert the input first "
            f"(input_tensor.to(plugrad.{output_tensor.dtype.name})) or make the output "
            f"{input_tensor.dtype.name}"
        )
    shape, size = tuple(input_tensor.shape), communicator.size
    stacked = (size, *shape)
    forms = [stacked] if not shape else [(shape[0] * size, *shape[1:]), stacked]
    expected = tuple(output_tensor.shape)
    if expected not in forms:
        raise ShapeError(
            f"output_tensor must be {' or '.join(map(str, forms))} for an input of {shape} on "
            f"{size} ranks (concatenated or stacked), got {expected}"
        )
    if check:
        agree(communicator, "all_gather", input_tensor, None, 0)
    work = communicator.allgather(input_tensor._array)
    xp = input_tensor._device.xp
    work.add_done_callback(lambda: _store(output_tensor, xp.reshape(work.output, expected)))
    return _finish(work, async_op, [output_tensor])


def reduce_scatter(
    output: Tensor,
    input_list: list[Tensor],
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """``output`` on rank ``r`` gets ``input_list[r]`` reduced across all ranks with ``op``."""
    output = _tensor(output, "output")
    communicator, check = _communicator(group, output)
    inputs = _check_list(input_list, output, communicator.size, "input_list")
    stacked = output._device.xp.stack([t._array for t in inputs])
    return _reduce_scatter(communicator, check, output, stacked, op, async_op)


def reduce_scatter_tensor(
    output: Tensor,
    input: Tensor,
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Like :func:`reduce_scatter` with the inputs concatenated in dimension 0 of ``input``."""
    output = _tensor(output, "output")
    input = _tensor(input, "input")
    communicator, check = _communicator(group, output, input)
    expected = (output.shape[0] * communicator.size, *output.shape[1:]) if output.ndim else None
    if expected is None or tuple(input.shape) != expected or input.dtype != output.dtype:
        raise ShapeError(
            f"input must be {output.dtype.name} {expected} for an output of "
            f"{tuple(output.shape)} on {communicator.size} ranks, got {input.dtype.name} "
            f"{tuple(input.shape)}"
        )
    stacked = input._device.xp.reshape(input._array, (communicator.size, *output.shape))
    return _reduce_scatter(communicator, check, output, stacked, op, async_op)


def _reduce_scatter(
    communicator: Communicator,
    check: bool,
    output: Tensor,
    stacked: Any,
    op: ReduceOp,
    async_op: bool,
) -> Work | None:
    _check_op(op, output)
    if check:
        agree(communicator, "reduce_scatter", output, op, 0)
    work = communicator.reduce_scatter(stacked, op)
    work.add_done_callback(lambda: _store(output, work.output))
    return _finish(work, async_op, [output])


def gather(
    tensor: Tensor,
    gather_list: list[Tensor] | None = None,
    dst: int = 0,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Rank ``dst``'s ``gather_list[r]`` gets rank ``r``'s ``tensor`` (others pass no list)."""
    tensor, communicator, targets = _rooted_list("gather", tensor, gather_list, group, dst, "dst")
    work = communicator.gather(tensor._array, dst)
    if targets is not None:
        work.add_done_callback(lambda: _rows(work, targets))
    return _finish(work, async_op, [] if targets is None else targets)


def scatter(
    tensor: Tensor,
    scatter_list: list[Tensor] | None = None,
    src: int = 0,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """``tensor`` on rank ``r`` gets rank ``src``'s ``scatter_list[r]`` (others pass no list)."""
    tensor, communicator, sources = _rooted_list("scatter", tensor, scatter_list, group, src, "src")
    rows = None if sources is None else tensor._device.xp.stack([t._array for t in sources])
    work = communicator.scatter(tensor._array, rows, src)
    work.add_done_callback(lambda: _store(tensor, work.output))
    return _finish(work, async_op, [tensor])


def isend(tensor: Tensor, dst: int, group: Any = None, tag: int = 0) -> Work:
    """Start sending ``tensor`` to rank ``dst``; returns its :class:`Work`."""
    tensor, communicator, _ = _rooted(tensor, group, dst, "dst")
    if dst == communicator.rank:
        raise InvalidArgumentError(f"rank {dst} cannot send to itself")
    work = communicator.send(tensor._array, dst, tag)
    work._tensors = [tensor]
    return work


def irecv(tensor: Tensor, src: int | None = None, group: Any = None, tag: int = 0) -> Work:
    """Start receiving into ``tensor`` from rank ``src`` (``None``: any); returns its :class:`Work`.

    The message must have ``tensor``'s shape and dtype: one of another raises
    :class:`~plugrad.errors.ShapeError` (:class:`~plugrad.errors.DtypeError` where only
    the dtype differs) when the transfer completes, and ``tensor`` is left as it was.
    """
    tensor = _tensor(tensor, "tensor")
    communicator, _ = _communicator(group, tensor)
    if src is not None:
        _check_rank(src, communicator.size, "src")
    work = communicator.recv(tensor._array, src, tag)
    work.add_done_callback(lambda: _store(tensor, work.output[0]))
    work._tensors = [tensor]
    return work


def send(tensor: Tensor, dst: int, group: Any = None, tag: int = 0) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it is on its way."""
    isend(tensor, dst, group, tag).wait()


def recv(tensor: Tensor, src: int | None = None, group: Any = None, tag: int = 0) -> int:
    """Receive into ``tensor`` from rank ``src`` (``None``: any); returns the sender's rank."""
    work = irecv(tensor, src, group, tag)
    work.wait()
    return int(work.output[1])
