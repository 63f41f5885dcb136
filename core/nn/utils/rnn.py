"""Batching sequences of different lengths: :func:`pad_sequence` and :func:`unpad_sequence`
(PyTorch's ``torch.nn.utils.rnn``).

The recurrent layers take the padded batch; packed sequences (``PackedSequence``,
``pack_padded_sequence``) are not offered: run the padded batch and read each
sequence's outputs up to its length (``unpad_sequence``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ... import dtypes as _dtypes
from ... import ops as _ops
from ...creation import full
from ...errors import DtypeError, ShapeError
from ...tensor import Tensor

__all__ = ["pad_sequence", "unpad_sequence"]


def pad_sequence(
    sequences: Sequence[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack tensors of shapes ``(L_i, *)`` into one of ``(max L, B, *)`` (``(B, max L, *)``
    with ``batch_first``), filling with ``padding_value`` after each (or before it, with
    ``padding_side="left"``). Differentiable in each sequence.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils.rnn import pad_sequence
    >>> pad_sequence([plugrad.tensor([1, 2, 3]), plugrad.tensor([4])], batch_first=True)
    tensor([[1, 2, 3],
            [4, 0, 0]])
    """
    if isinstance(sequences, Tensor):
        sequences = list(_ops.unstack(sequences, axis=0))
    sequences = list(sequences)
    if not sequences:
        raise ShapeError("pad_sequence() takes at least one sequence, got none")
    if padding_side not in ("right", "left"):
        raise ValueError(
            f"pad_sequence(): padding_side must be 'right' or 'left', got {padding_side!r}"
        )
    for index, sequence in enumerate(sequences):
        if not isinstance(sequence, Tensor):
            raise TypeError(
                f"pad_sequence(): sequence {index} is a {type(sequence).__name__}; give Tensors"
            )
        if sequence.ndim == 0 or sequence.shape[1:] != sequences[0].shape[1:]:
            raise ShapeError(
                f"pad_sequence(): every sequence is (length, *rest) with one rest; sequence "
                f"{index} has shape {sequence.shape}, sequence 0 {sequences[0].shape}"
            )
    # The first sequence's dtype, as PyTorch's (concat promoted: int64 with float32 became
    # float32); refused where a value would lose its kind (3.5 into int64 was truncated).
    dtype = sequences[0].dtype
    for index, sequence in enumerate(sequences):
        if _dtypes.kind_rank(sequence.dtype) > _dtypes.kind_rank(dtype):
            raise DtypeError(
                f"pad_sequence(): the batch takes sequence 0's dtype {dtype.name}, which cannot "
                f"hold sequence {index}'s {sequence.dtype.name} values; convert the sequences "
                "to one dtype first"
            )
    longest = max(sequence.shape[0] for sequence in sequences)
    padded = []
    for sequence in sequences:
        if sequence.dtype is not dtype:
            sequence = _ops.astype(sequence, dtype)
        missing = longest - sequence.shape[0]
        if missing:
            filler = full((missing, *sequence.shape[1:]), padding_value, dtype=sequence.dtype,
                          device=sequence.device)  # fmt: skip
            parts = [sequence, filler] if padding_side == "right" else [filler, sequence]
            sequence = _ops.concat(parts, axis=0)
        padded.append(sequence)
    return _ops.stack(padded, axis=0 if batch_first else 1)


def unpad_sequence(
    padded_sequences: Tensor, lengths: Sequence[int] | Tensor, batch_first: bool = False
) -> list[Tensor]:
    """The sequences of a padded batch, each cut to its length (:func:`pad_sequence` undone).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils.rnn import unpad_sequence
    >>> batch = plugrad.tensor([[1, 2, 3], [4, 0, 0]])
    >>> unpad_sequence(batch, [3, 1], batch_first=True)
    [tensor([1, 2, 3]), tensor([4])]
    """
    if not isinstance(padded_sequences, Tensor) or padded_sequences.ndim < 2:
        raise ShapeError("unpad_sequence() takes a padded batch of at least 2 dimensions")
    batch = padded_sequences if batch_first else _ops.moveaxis(padded_sequences, 1, 0)
    counts = lengths.tolist() if isinstance(lengths, Tensor) else list(lengths)
    if len(counts) != batch.shape[0]:
        raise ShapeError(
            f"unpad_sequence(): {len(counts)} lengths for a batch of {batch.shape[0]} sequences"
        )
    longest = batch.shape[1]
    result = []
    for index, length in enumerate(counts):
        if not 0 <= int(length) <= longest:
            raise ShapeError(
                f"unpad_sequence(): length {length} of sequence {index} is outside [0, {longest}]"
            )
        result.append(batch[index, : int(length)])
    return result


_PACKED = frozenset(
    {"PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pack_sequence",
     "unpack_sequence", "invert_permutation"}
)  # fmt: skip


if not TYPE_CHECKING:  # (a module __getattr__ would make every name exist to type checkers)

    def __getattr__(name: str) -> None:
        if name in _PACKED:
            raise AttributeError(
                f"plugrad.nn.utils.rnn has no {name}: packed sequences are not offered. Run "
                "the padded batch (pad_sequence) and read each sequence's outputs up to its "
                "length (unpad_sequence); its last state is outputs[length - 1], not the "
                "layer's h_n, which has also run over the padding"
            )
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
