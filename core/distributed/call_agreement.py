"""The check that every rank makes the same collective call, before the call itself.

Each rank sends a few integers describing its call (the collective, the reduction, the
root, the dtype and shape of its tensor); where they differ, every rank raises, naming
what each called, instead of pairing unrelated transfers (or hanging).
"""

from __future__ import annotations

from ..errors import DistributedError, ShapeError
from ..tensor import Tensor
from .communicator import Communicator, ReduceOp

__all__ = ["agree", "describe"]

_KINDS = (
    "all_reduce",
    "broadcast",
    "all_gather",
    "reduce_scatter",
    "gather",
    "scatter",
    "barrier",
    "ddp_gradients",
    "reduce",
    "destroy_process_group",
    "ddp_buffers",
    "sync_batchnorm_statistics",
    "sync_batchnorm_gradients",
)
#: What SyncBatchNorm's collectives are called in messages (its forward, its backward).
_SYNC_BATCHNORM = {
    "sync_batchnorm_statistics": "SyncBatchNorm's exchange of batch statistics (forward)",
    "sync_batchnorm_gradients": "SyncBatchNorm's sum of gradients (backward)",
}
_OPS = tuple(ReduceOp)
_DTYPE_NAMES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
)  # fmt: skip
_MAX_DIMS = 16


def describe(kind: str, tensor: Tensor) -> str:
    return f"{_SYNC_BATCHNORM.get(kind, kind)} of {tensor.dtype.name} {tuple(tensor.shape)}"


def agree(
    communicator: Communicator,
    kind: str,
    tensor: Tensor | None,
    op: ReduceOp | None,
    root: int,
    forwards: int = 0,
) -> None:
    """Raise on every rank, naming them, unless all ranks make this very call.

    ``tensor`` is None for a ``barrier``, which takes part too: it would otherwise pair
    with another rank's collective; for ``ddp_gradients``, the averaging of one
    backward pass's gradients by DistributedDataParallel (``root``: its bucket count;
    ``forwards``: the forward passes with gradients since its last averaging, so that a
    rank whose backward failed before reaching the model is found out);
    and for ``ddp_buffers``, its broadcast of the buffers before a forward (``root``:
    how many). ``sync_batchnorm_statistics`` and ``sync_batchnorm_gradients`` are
    SyncBatchNorm's all-gather in forward and all-reduce in backward.
    """
    shape = () if tensor is None else tuple(tensor.shape)
    if len(shape) > _MAX_DIMS:
        raise ShapeError(f"{kind}: tensors of more than {_MAX_DIMS} dimensions are not supported")
    name = "" if tensor is None else tensor.dtype.name
    dtype_code = _DTYPE_NAMES.index(name) if name in _DTYPE_NAMES else len(_DTYPE_NAMES)
    signature = (
        _KINDS.index(kind),
        -1 if op is None else _OPS.index(op),
        root,
        dtype_code,
        len(shape),
        *shape,
        *([-1] * (_MAX_DIMS - len(shape))),
        forwards,
    )
    work = communicator.allgather_ints(signature)
    called = kind if tensor is None else describe(kind, tensor)
    work.description = f"the agreement check before {called}"
    work.wait()
    everyone = work.output
    if all(s == signature for s in everyone):
        return
    if kind == "ddp_gradients" and all(s[:-1] == signature[:-1] for s in everyone):
        counts = ", ".join(f"rank {r}: {s[-1]}" for r, s in enumerate(everyone))
        raise DistributedError(
            f"rank {communicator.rank}: the ranks ran different numbers of forward passes with "
            f"gradients through DistributedDataParallel since it last averaged ({counts}): a "
            "rank skipped the backward pass of a forward, or its backward raised, or it ran a "
            "forward alone. Run forward passes that are not trained under plugrad.no_grad() "
            "or through model.module"
        )

    def say(s: tuple[int, ...]) -> str:
        if len(s) != len(signature) or not 0 <= s[0] < len(_KINDS) or not 0 <= s[4] <= _MAX_DIMS:
            # Not a signature: that rank's message was another kind of transfer, which an
            # unchecked all-reduce of its own paired with this check.
            return "a transfer that is no agreement check (its calls are out of step)"
        if _KINDS[s[0]] in ("barrier", "destroy_process_group"):
            return _KINDS[s[0]]
        if _KINDS[s[0]] == "ddp_gradients":
            return (
                f"DistributedDataParallel's averaging of gradients ({s[2]} buckets) after "
                f"{s[-1]} forward pass(es) with gradients"
            )
        if _KINDS[s[0]] == "ddp_buffers":
            return f"DistributedDataParallel's broadcast of {s[2]} buffers from rank 0 (forward)"
        dims = tuple(d for d in s[5 : 5 + s[4]])
        dtype = _DTYPE_NAMES[s[3]] if s[3] < len(_DTYPE_NAMES) else "other"
        if _KINDS[s[0]] in _SYNC_BATCHNORM:
            return f"{_SYNC_BATCHNORM[_KINDS[s[0]]]} of {dtype} {dims}"
        text = f"{_KINDS[s[0]]} of {dtype} {dims}"
        if s[1] >= 0:
            text += f" op={_OPS[s[1]].name}"
        if _KINDS[s[0]] in ("broadcast", "gather", "scatter", "reduce"):
            text += f" root={s[2]}"
        return text

    calls = "; ".join(f"rank {r}: {say(s)}" for r, s in enumerate(everyone))
    raise ShapeError(
        f"rank {communicator.rank}: the ranks made different collective calls: {calls}. "
        "Every rank must call the same collective with tensors of the same shape and dtype "
        "(and run the same number of DistributedDataParallel backward passes)"
    )
