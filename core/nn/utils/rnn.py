"""Batching sequences of different lengths, as PyTorch's ``torch.nn.utils.rnn``.

A padded batch (:func:`pad_sequence`, :func:`unpad_sequence`) holds every sequence
at the length of the longest; a :class:`PackedSequence` (:func:`pack_padded_sequence`,
:func:`pack_sequence`, undone by :func:`pad_packed_sequence` and
:func:`unpack_sequence`) holds only their elements, time step by time step, the
sequences sorted from the longest. The recurrent layers take either; from a
packed one they run each sequence over its own length only, so its final state
is that of its last element. Packing and unpacking are differentiable.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from typing import Any, NamedTuple

from ... import dtypes as _dtypes
from ... import ops as _ops
from ...creation import asarray, full
from ...errors import ArgumentError, DtypeError, InvalidArgumentError, ShapeError
from ...tensor import Tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


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
        raise InvalidArgumentError(
            f"pad_sequence(): padding_side must be 'right' or 'left', got {padding_side!r}"
        )
    for index, sequence in enumerate(sequences):
        if not isinstance(sequence, Tensor):
            raise ArgumentError(
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


class PackedSequence(NamedTuple):
    """Sequences of different lengths, their elements packed time step by time step.

    ``data`` holds, for each time step, the elements of the sequences still running
    then (``batch_sizes[t]`` of them), the sequences sorted from the longest;
    ``sorted_indices[i]`` is the batch position of the ``i``-th longest sequence
    and ``unsorted_indices`` the inverse permutation (both None for a batch packed
    sorted, ``enforce_sorted=True``). Made by :func:`pack_padded_sequence` and
    :func:`pack_sequence`; the recurrent layers take and return it.
    """

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The same sequences with ``data.to(*args, **kwargs)`` (a dtype, a device); the
        indices follow a new device."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_indices, unsorted_indices = (
            None if index is None else index.to(device=data.device)
            for index in (self.sorted_indices, self.unsorted_indices)
        )
        return PackedSequence(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def float(self) -> PackedSequence:
        """The same sequences with float32 data."""
        return self.to(_dtypes.float32)

    def double(self) -> PackedSequence:
        """The same sequences with float64 data."""
        return self.to(_dtypes.float64)

    def half(self) -> PackedSequence:
        """The same sequences with float16 data."""
        return self.to(_dtypes.float16)

    def long(self) -> PackedSequence:
        """The same sequences with int64 data."""
        return self.to(_dtypes.int64)

    def int(self) -> PackedSequence:
        """The same sequences with int32 data."""
        return self.to(_dtypes.int32)

    @property
    def is_cuda(self) -> bool:
        """Whether the data is on a CUDA device."""
        return self.data.is_cuda


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation`` (None for None)."""
    if permutation is None:
        return None
    if not isinstance(permutation, Tensor) or permutation.ndim != 1:
        raise ShapeError("invert_permutation() takes a 1-d tensor of indices")
    return _ops.argsort(permutation)


def _lengths(function: str, lengths: Any, batch: int, longest: int) -> list[int]:
    """``lengths`` (ints or a 1-d integer tensor) checked against the padded batch."""
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1 or lengths.dtype.kind not in ("signed integer", "unsigned integer"):
            raise DtypeError(
                f"{function}(): lengths must be a 1-d integer tensor or a list of ints, got "
                f"a {lengths.dtype.name} tensor of shape {lengths.shape}"
            )
        counts = [int(length) for length in lengths.tolist()]
    else:
        try:
            counts = [operator.index(length) for length in lengths]
        except TypeError:
            raise ArgumentError(
                f"{function}(): lengths must be a 1-d integer tensor or a list of ints, got "
                f"{lengths!r:.80}"
            ) from None
    if len(counts) != batch:
        raise ShapeError(f"{function}(): {len(counts)} lengths for a batch of {batch} sequences")
    for index, length in enumerate(counts):
        if not 0 < length <= longest:
            raise ShapeError(
                f"{function}(): length {length} of sequence {index} is outside [1, {longest}] "
                "(a packed sequence has at least one element, and at most the padded length)"
            )
    return counts


def _steps(lengths: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """For lengths sorted from the longest: the batch size of each time step, and the time
    step and (sorted) batch position of each packed element."""
    sizes = [sum(1 for length in lengths if length > t) for t in range(lengths[0])]
    times = [t for t, size in enumerate(sizes) for _ in range(size)]
    positions = [b for size in sizes for b in range(size)]
    return sizes, times, positions


def pack_padded_sequence(
    input: Tensor,
    lengths: Sequence[int] | Tensor,
    batch_first: bool = False,
    enforce_sorted: bool = True,
) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of sequences
    of ``lengths``.

    With ``enforce_sorted`` the lengths must not grow along the batch; without it
    the sequences are sorted here (longest first, ties in batch order) and the
    result keeps the permutation to undo it.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils.rnn import pack_padded_sequence
    >>> batch = plugrad.tensor([[1, 2, 3], [4, 5, 0]])
    >>> packed = pack_padded_sequence(batch, [3, 2], batch_first=True)
    >>> packed.data, packed.batch_sizes
    (tensor([1, 4, 2, 5, 3]), tensor([2, 2, 1]))
    """
    function = "pack_padded_sequence"
    if not isinstance(input, Tensor) or input.ndim < 2:
        raise ShapeError(f"{function}() takes a padded batch of at least 2 dimensions")
    batch_axis = 0 if batch_first else 1
    counts = _lengths(function, lengths, input.shape[batch_axis], input.shape[1 - batch_axis])
    order = sorted(range(len(counts)), key=lambda b: -counts[b])  # stable: ties in batch order
    sorted_indices = unsorted_indices = None
    if enforce_sorted:
        if order != list(range(len(counts))):
            raise InvalidArgumentError(
                f"{function}(): lengths {counts} must not grow along the batch with "
                "enforce_sorted=True; sort the batch by length first, or pass "
                "enforce_sorted=False"
            )
    else:
        device = input.device
        sorted_indices = asarray(order, dtype=device.default_int_dtype, device=device)
        unsorted_indices = invert_permutation(sorted_indices)
    sizes, times, positions = _steps([counts[b] for b in order])
    batch_index = asarray(
        [order[p] for p in positions], dtype=input.device.default_int_dtype, device=input.device
    )
    time_index = asarray(times, dtype=input.device.default_int_dtype, device=input.device)
    key = (batch_index, time_index) if batch_first else (time_index, batch_index)
    batch_sizes = asarray(sizes, dtype=input.device.default_int_dtype, device=input.device)
    return PackedSequence(input[key], batch_sizes, sorted_indices, unsorted_indices)


def _checked_packed(function: str, sequence: Any) -> tuple[PackedSequence, list[int]]:
    """``sequence`` and its ``batch_sizes`` as ints, checked to describe a packed batch."""
    if not isinstance(sequence, PackedSequence):
        raise ArgumentError(f"{function}() takes a PackedSequence, got {type(sequence).__name__}")
    sizes = [int(size) for size in sequence.batch_sizes.tolist()]
    if not sizes or any(a < b for a, b in itertools.pairwise(sizes)) or sizes[-1] < 1:
        raise ShapeError(
            f"{function}(): batch_sizes {sizes} do not describe a packed batch (positive "
            "counts that do not grow)"
        )
    if sequence.data.ndim == 0 or sequence.data.shape[0] != sum(sizes):
        raise ShapeError(
            f"{function}(): data of shape {sequence.data.shape} does not hold the "
            f"{sum(sizes)} elements batch_sizes counts"
        )
    return sequence, sizes


def padded_from_packed(
    sequence: PackedSequence, padding_value: float = 0.0, total_length: int | None = None
) -> tuple[Tensor, list[int]]:
    """The packed sequences as a time-first padded batch, still sorted from the longest,
    and their lengths (what the recurrent layers run)."""
    sequence, sizes = _checked_packed("pad_packed_sequence", sequence)
    lengths = [sum(1 for size in sizes if size > b) for b in range(sizes[0])]
    steps = len(sizes) if total_length is None else total_length
    _, times, positions = _steps(lengths)
    data = sequence.data
    padded = full((steps, sizes[0], *data.shape[1:]), padding_value, dtype=data.dtype,
                  device=data.device)  # fmt: skip
    key = (
        asarray(times, dtype=data.device.default_int_dtype, device=data.device),
        asarray(positions, dtype=data.device.default_int_dtype, device=data.device),
    )
    return padded.index_put(key, data), lengths


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Unpack ``sequence`` into a padded batch and the length of each sequence
    (:func:`pack_padded_sequence` undone, the batch in its order before packing).

    ``total_length`` pads to that many steps (at least the longest sequence's).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils.rnn import pack_sequence, pad_packed_sequence
    >>> packed = pack_sequence([plugrad.tensor([1, 2]), plugrad.tensor([3, 4, 5])],
    ...                        enforce_sorted=False)
    >>> pad_packed_sequence(packed, batch_first=True)
    (tensor([[1, 2, 0],
            [3, 4, 5]]), tensor([2, 3]))
    """
    sequence, sizes = _checked_packed("pad_packed_sequence", sequence)
    if total_length is not None:
        if isinstance(total_length, bool) or not isinstance(total_length, int):
            raise ArgumentError(
                f"pad_packed_sequence(): total_length must be an int or None, got {total_length!r}"
            )
        if total_length < len(sizes):
            raise ShapeError(
                f"pad_packed_sequence(): total_length={total_length} is shorter than the "
                f"longest sequence ({len(sizes)} steps)"
            )
    padded, lengths = padded_from_packed(sequence, padding_value, total_length)
    counts = asarray(
        lengths, dtype=sequence.data.device.default_int_dtype, device=sequence.data.device
    )
    if sequence.unsorted_indices is not None:
        padded = _ops.take(padded, sequence.unsorted_indices, axis=1)
        counts = _ops.take(counts, sequence.unsorted_indices, axis=0)
    return (_ops.moveaxis(padded, 1, 0) if batch_first else padded), counts


def packed_like(sequence: PackedSequence, padded: Tensor) -> PackedSequence:
    """A time-first padded batch sorted as ``sequence``, packed as it is."""
    sizes = [int(size) for size in sequence.batch_sizes.tolist()]
    lengths = [sum(1 for size in sizes if size > b) for b in range(sizes[0])]
    _, times, positions = _steps(lengths)
    key = (
        asarray(times, dtype=padded.device.default_int_dtype, device=padded.device),
        asarray(positions, dtype=padded.device.default_int_dtype, device=padded.device),
    )
    return sequence._replace(data=padded[key])


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack tensors of shapes ``(L_i, *)`` (:func:`pad_sequence`, then
    :func:`pack_padded_sequence`).

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils.rnn import pack_sequence
    >>> pack_sequence([plugrad.tensor([1, 2, 3]), plugrad.tensor([4])]).data
    tensor([1, 4, 2, 3])
    """
    sequences = list(sequences)
    lengths = [s.shape[0] if isinstance(s, Tensor) and s.ndim else 0 for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The tensors :func:`pack_sequence` packed, in their order.

    Examples
    --------
    >>> import plugrad
    >>> from plugrad.nn.utils.rnn import pack_sequence, unpack_sequence
    >>> unpack_sequence(pack_sequence([plugrad.tensor([1, 2, 3]), plugrad.tensor([4])]))
    [tensor([1, 2, 3]), tensor([4])]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
