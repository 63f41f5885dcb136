"""Packed sequences (``torch.nn.utils.rnn``) and the recurrent layers run on them, against torch."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad.errors import InvalidArgumentError, ShapeError
from plugrad.nn.utils import rnn as ours_rnn
from plugrad.testing import backends_under_test

torch = pytest.importorskip("torch")
theirs_rnn = torch.nn.utils.rnn

LENGTHS = [3, 5, 1, 4]
PADDED = np.random.default_rng(0).standard_normal((5, 4, 3))  # (time, batch, features)


def _leaves(values: np.ndarray, dtype: str = "float64"):
    ours = plugrad.asarray(values, dtype=getattr(plugrad, dtype), requires_grad=True)
    return ours, torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)


def _close(ours, theirs, tolerance: float = 1e-12) -> None:
    np.testing.assert_allclose(np.asarray(ours.tolist()), theirs.detach().numpy(),
                               rtol=tolerance, atol=tolerance)  # fmt: skip


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_packing_and_unpacking_as_pytorchs(batch_first: bool, enforce_sorted: bool) -> None:
    # (packed sequences were missing)
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    values = np.swapaxes(PADDED, 0, 1) if batch_first else PADDED
    x, tx = _leaves(values)
    packed = ours_rnn.pack_padded_sequence(x, lengths, batch_first, enforce_sorted)
    theirs = theirs_rnn.pack_padded_sequence(tx, lengths, batch_first, enforce_sorted)
    _close(packed.data, theirs.data)
    assert packed.batch_sizes.tolist() == theirs.batch_sizes.tolist()
    for name in ("sorted_indices", "unsorted_indices"):
        if enforce_sorted:
            assert getattr(packed, name) is None and getattr(theirs, name) is None
        else:
            assert getattr(packed, name).tolist() == getattr(theirs, name).tolist()
    padded, counts = ours_rnn.pad_packed_sequence(packed, batch_first, -1.0, total_length=6)
    tpadded, tcounts = theirs_rnn.pad_packed_sequence(theirs, batch_first, -1.0, total_length=6)
    _close(padded, tpadded)
    assert counts.tolist() == tcounts.tolist() == lengths
    weights = np.linspace(-1.0, 1.0, padded.numel()).reshape(padded.shape)
    (padded * plugrad.asarray(weights)).sum().backward()
    (tpadded * torch.tensor(weights)).sum().backward()
    _close(x.grad, tx.grad)


def test_pack_sequence_and_unpack_sequence_as_pytorchs() -> None:
    pieces = [PADDED[:length, index] for index, length in enumerate(LENGTHS)]
    packed = ours_rnn.pack_sequence([plugrad.asarray(p) for p in pieces], enforce_sorted=False)
    theirs = theirs_rnn.pack_sequence([torch.tensor(p) for p in pieces], enforce_sorted=False)
    _close(packed.data, theirs.data)
    for piece, unpacked in zip(pieces, ours_rnn.unpack_sequence(packed), strict=True):
        np.testing.assert_array_equal(unpacked.numpy(), piece)
    assert packed.to(plugrad.float32).data.dtype == plugrad.float32
    assert packed.float().sorted_indices.tolist() == theirs.sorted_indices.tolist()
    assert not packed.is_cuda


LAYERS = [
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"proj_size": 2, "bidirectional": True}),
    ("GRU", {"num_layers": 2}),
    ("GRU", {"bidirectional": True, "batch_first": True}),
    ("RNN", {"nonlinearity": "relu", "bidirectional": True}),
]


@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "with-state"])
@pytest.mark.parametrize(("name", "options"), LAYERS)
def test_recurrent_layers_run_packed_sequences_as_pytorchs(name, options, with_state) -> None:
    # Each sequence runs over its own length: its final state is its last element's.
    theirs_layer = getattr(torch.nn, name)(3, 4, dtype=torch.float64, **options)
    layer = getattr(plugrad.nn, name)(3, 4, dtype=plugrad.float64, **options)
    layer.load_state_dict({k: plugrad.asarray(v.numpy()) for k, v in
                           theirs_layer.state_dict().items()})  # fmt: skip
    x, tx = _leaves(PADDED)
    leaves = []
    states: tuple = ()
    if with_state:
        depth = (2 if options.get("bidirectional") else 1) * options.get("num_layers", 1)
        sizes = [options.get("proj_size") or 4] + ([4] if name == "LSTM" else [])
        rng = np.random.default_rng(1)
        leaves = [_leaves(rng.standard_normal((depth, 4, size))) for size in sizes]
        ours_states = [leaf[0] for leaf in leaves]
        theirs_states = [leaf[1] for leaf in leaves]
        states = (tuple(ours_states) if name == "LSTM" else ours_states[0],)
        theirs_call_states = (tuple(theirs_states) if name == "LSTM" else theirs_states[0],)
    output, final = layer(ours_rnn.pack_padded_sequence(x, LENGTHS, enforce_sorted=False), *states)
    theirs_output, theirs_final = theirs_layer(
        theirs_rnn.pack_padded_sequence(tx, LENGTHS, enforce_sorted=False),
        *(theirs_call_states if with_state else ()),
    )
    assert isinstance(output, ours_rnn.PackedSequence)
    _close(output.data, theirs_output.data)
    finals = final if name == "LSTM" else (final,)
    theirs_finals = theirs_final if name == "LSTM" else (theirs_final,)
    weights = np.cos(np.arange(output.data.numel())).reshape(output.data.shape)
    loss = (output.data * plugrad.asarray(weights)).sum()
    theirs_loss = (theirs_output.data * torch.tensor(weights)).sum()
    for index, (state, theirs_state) in enumerate(zip(finals, theirs_finals, strict=True)):
        _close(state, theirs_state)
        loss = loss + state.sum() * (index + 2)
        theirs_loss = theirs_loss + theirs_state.sum() * (index + 2)
    loss.backward()
    theirs_loss.backward()
    _close(x.grad, tx.grad)
    for parameter_name, parameter in theirs_layer.named_parameters():
        _close(getattr(layer, parameter_name).grad, parameter.grad)
    for ours_leaf, theirs_leaf in leaves:
        _close(ours_leaf.grad, theirs_leaf.grad)


@pytest.mark.parametrize("backend", backends_under_test())
def test_a_packed_batch_gives_each_sequence_what_it_gives_alone(backend: str) -> None:
    with plugrad.use_backend(backend):
        plugrad.manual_seed(0)
        layer = plugrad.nn.GRU(3, 4, bidirectional=True)
        pieces = [plugrad.asarray(PADDED[:length, index], dtype=plugrad.float32)
                  for index, length in enumerate(LENGTHS)]  # fmt: skip
        output, h_n = layer(ours_rnn.pack_sequence(pieces, enforce_sorted=False))
        outputs = ours_rnn.unpack_sequence(output)
        for index, piece in enumerate(pieces):
            alone, alone_h = layer(piece[:, None])
            np.testing.assert_allclose(outputs[index].tolist(), alone[:, 0].tolist(), atol=1e-6)
            np.testing.assert_allclose(h_n[:, index].tolist(), alone_h[:, 0].tolist(), atol=1e-6)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda x: ours_rnn.pack_padded_sequence(x, LENGTHS), InvalidArgumentError,
         "enforce_sorted=False"),
        (lambda x: ours_rnn.pack_padded_sequence(x, [3, 0, 1, 1], enforce_sorted=False),
         ShapeError, r"length 0 of sequence 1 is outside \[1, 5\]"),
        (lambda x: ours_rnn.pack_padded_sequence(x, [6, 1, 1, 1]), ShapeError, "length 6"),
        (lambda x: ours_rnn.pack_padded_sequence(x, [3, 2]), ShapeError, "2 lengths for a batch"),
        (lambda x: ours_rnn.pack_padded_sequence(x, [3.0, 2, 1, 1]), TypeError, "list of ints"),
        (lambda x: ours_rnn.pad_packed_sequence(x), TypeError, "takes a PackedSequence"),
        (lambda x: ours_rnn.pad_packed_sequence(
            ours_rnn.pack_padded_sequence(x, [5, 4, 3, 1]), total_length=4),
         ShapeError, "total_length=4 is shorter"),
        (lambda x: plugrad.nn.GRU(3, 4, dtype=plugrad.float64)(
            ours_rnn.PackedSequence(x, plugrad.asarray([4, 4, 4, 4, 4]))),
         ShapeError, "packed data of shape"),
    ],
)  # fmt: skip
def test_bad_packed_sequences_raise_typed_errors(call, error, match) -> None:
    x = plugrad.asarray(PADDED)
    with pytest.raises(error, match=match):
        call(x)
