"""Transformer layers, stacks and the whole Transformer against torch.nn, with PyTorch's
weights loaded; training, compiling and bad input.

Outputs and the gradients with respect to the inputs and every parameter are
compared in float64 in evaluation mode on every backend.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from nn_compare import (
    as_lib,
    assert_close,
    assert_layout_is_torchs,
    assert_raises_and_changes_nothing,
    backward_squared_gradient,
    causal,
    compare,
    eager_and_compiled_losses,
    randn,
    torch_state,
    training_losses,
)

import plugrad
from plugrad import nn
from plugrad.errors import InvalidArgumentError, ShapeError

torch = pytest.importorskip("torch")

D, HEADS, FF, T, S, N = 8, 2, 16, 4, 5, 3


def compare_in_eval_mode(
    ours: nn.Module, theirs: Any, leaves: list[tuple[Any, Any]], arguments: dict[str, Any]
) -> None:
    """:func:`nn_compare.compare` of both modules in evaluation mode."""
    ours.eval()
    theirs.eval()
    compare(ours, theirs, leaves, arguments)


def padding(length: int, seed: int) -> np.ndarray:
    mask = np.random.default_rng(seed).random((N, length)) > 0.6
    mask[:, 0] = False
    return mask


def sequence(length: int, options: dict[str, Any], unbatched: bool, seed: int) -> tuple[Any, Any]:
    if unbatched:
        return randn((length, D), seed)
    return randn((N, length, D) if options.get("batch_first") else (length, N, D), seed)


LAYERS = [
    {},
    {"batch_first": True},
    {"norm_first": True},
    {"activation": "gelu"},
    {"activation": "gelu", "norm_first": True, "batch_first": True, "bias": False},
    {"layer_norm_eps": 1e-3, "dim_feedforward": 6},
]


def make(lib: Any, name: str, options: dict[str, Any]) -> Any:
    options = dict(options)
    options.setdefault("dim_feedforward", FF)
    dtype = plugrad.float64 if lib is plugrad else torch.float64
    return getattr(lib.nn, name)(D, HEADS, dropout=0.0, dtype=dtype, **options)


ENCODER_CALLS = [
    ("plain", {}),
    ("causal", {"src_mask": causal(S), "is_causal": True}),
    ("bool mask", {"src_mask": np.triu(np.ones((S, S), bool), 1)}),
    ("padding", {"src_key_padding_mask": np.where(padding(S, 1), -np.inf, 0.0)}),
    ("bool padding", {"src_key_padding_mask": padding(S, 2)}),
    ("causal and padding", {"src_mask": causal(S), "src_key_padding_mask": padding(S, 3) * -1e9}),
    ("unbatched", {"unbatched": True, "src_mask": causal(S)}),
]


def layer_id(options: dict[str, Any]) -> str:
    return "-".join(f"{k}={v}" for k, v in options.items()) or "default"


@pytest.mark.parametrize("call", ENCODER_CALLS, ids=[c[0] for c in ENCODER_CALLS])
@pytest.mark.parametrize("options", LAYERS, ids=[layer_id(o) for o in LAYERS])
def test_encoder_layer_matches_torch(backend, options, call) -> None:
    arguments = dict(call[1])
    unbatched = arguments.pop("unbatched", False)
    leaves = [sequence(S, options, unbatched, 0)]
    ours, theirs = (
        make(plugrad, "TransformerEncoderLayer", options),
        make(torch, "TransformerEncoderLayer", options),
    )
    compare_in_eval_mode(ours, theirs, leaves, arguments)


DECODER_CALLS = [
    ("plain", {}),
    ("causal", {"tgt_mask": causal(T), "tgt_is_causal": True}),
    (
        "every mask",
        {
            "tgt_mask": causal(T),
            "memory_mask": np.random.default_rng(4).random((T, S)) > 0.8,
            "tgt_key_padding_mask": padding(T, 5),
            "memory_key_padding_mask": padding(S, 6),
        },
    ),
    ("unbatched", {"unbatched": True, "tgt_mask": causal(T)}),
]


@pytest.mark.parametrize("call", DECODER_CALLS, ids=[c[0] for c in DECODER_CALLS])
@pytest.mark.parametrize("options", LAYERS, ids=[layer_id(o) for o in LAYERS])
def test_decoder_layer_matches_torch(backend, options, call) -> None:
    arguments = dict(call[1])
    unbatched = arguments.pop("unbatched", False)
    if "memory_mask" in arguments:  # one bool mask with bool key padding: dtypes agree
        arguments["tgt_mask"] = np.isinf(arguments["tgt_mask"])
    leaves = [sequence(T, options, unbatched, 0), sequence(S, options, unbatched, 1)]
    ours, theirs = (
        make(plugrad, "TransformerDecoderLayer", options),
        make(torch, "TransformerDecoderLayer", options),
    )
    compare_in_eval_mode(ours, theirs, leaves, arguments)


def test_an_activation_module_is_a_submodule_as_in_torch(backend) -> None:
    ours = nn.TransformerEncoderLayer(D, HEADS, FF, 0.0, nn.GELU(), dtype=plugrad.float64)
    theirs = torch.nn.TransformerEncoderLayer(
        D, HEADS, FF, 0.0, torch.nn.GELU(), dtype=torch.float64
    )
    assert repr(ours) == repr(theirs)
    assert ours.activation_relu_or_gelu == theirs.activation_relu_or_gelu == 2
    compare_in_eval_mode(ours, theirs, [randn((S, N, D), 0)], {})
    custom = nn.TransformerEncoderLayer(D, HEADS, FF, activation=lambda x: x * 2)
    assert custom.activation_relu_or_gelu == 0 and custom(plugrad.ones((S, D))).shape == (S, D)


def stacks(lib: Any, batch_first: bool) -> Any:
    dtype = plugrad.float64 if lib is plugrad else torch.float64
    options = dict(dropout=0.0, batch_first=batch_first, dtype=dtype)
    encoder = lib.nn.TransformerEncoder(
        lib.nn.TransformerEncoderLayer(D, HEADS, FF, **options),
        num_layers=2,
        norm=lib.nn.LayerNorm(D, dtype=dtype),
        enable_nested_tensor=False,
    )
    decoder = lib.nn.TransformerDecoder(
        lib.nn.TransformerDecoderLayer(D, HEADS, FF, norm_first=True, **options), num_layers=2
    )
    return encoder, decoder


@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_and_decoder_stacks_match_torch(backend, batch_first) -> None:
    (encoder, decoder), (t_encoder, t_decoder) = (
        stacks(plugrad, batch_first),
        stacks(torch, batch_first),
    )
    options = {"batch_first": batch_first}
    compare_in_eval_mode(
        encoder,
        t_encoder,
        [sequence(S, options, False, 0)],
        {"mask": causal(S), "src_key_padding_mask": padding(S, 1) * -1e9},
    )
    compare_in_eval_mode(
        decoder,
        t_decoder,
        [sequence(T, options, False, 2), sequence(S, options, False, 3)],
        {"tgt_mask": causal(T), "tgt_is_causal": True, "memory_key_padding_mask": padding(S, 4)},
    )


def test_the_copies_are_independent_and_keep_the_first_layers_values() -> None:
    layer = nn.TransformerEncoderLayer(D, HEADS, FF)
    encoder = nn.TransformerEncoder(layer, num_layers=3)
    first, second = encoder.layers[0], encoder.layers[1]
    assert first is not layer and first.linear1.weight is not second.linear1.weight
    np.testing.assert_array_equal(
        first.linear1.weight.detach().numpy(), layer.linear1.weight.detach().numpy()
    )
    assert len(list(encoder.parameters())) == 3 * len(list(layer.parameters()))


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_matches_torch(backend, batch_first) -> None:
    def build(lib: Any) -> Any:
        dtype = plugrad.float64 if lib is plugrad else torch.float64
        return lib.nn.Transformer(
            D, HEADS, 2, 1, FF, dropout=0.0, activation="gelu", batch_first=batch_first,
            dtype=dtype,
        )  # fmt: skip

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch: nested tensors need batch_first
        theirs = build(torch)
    ours = build(plugrad)
    options = {"batch_first": batch_first}
    leaves = [sequence(S, options, False, 0), sequence(T, options, False, 1)]
    compare_in_eval_mode(
        ours,
        theirs,
        leaves,
        {
            "tgt_mask": causal(T),
            "src_key_padding_mask": padding(S, 2),
            "memory_key_padding_mask": padding(S, 2),
        },
    )


def test_transformer_second_order_gradients_match_torch(backend) -> None:
    options = dict(dropout=0.0, activation="gelu", norm_first=True)
    ours = nn.TransformerEncoderLayer(D, HEADS, FF, dtype=plugrad.float64, **options)
    theirs = torch.nn.TransformerEncoderLayer(D, HEADS, FF, dtype=torch.float64, **options)
    ours.load_state_dict(torch_state(theirs))
    x, tx = randn((S, N, D), 0)
    mask = causal(S)
    backward_squared_gradient(plugrad, [ours(x, as_lib(plugrad, mask))], x)
    # torch's fused CPU kernel has no second derivative: its reference one has.
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        backward_squared_gradient(torch, [theirs(tx, as_lib(torch, mask))], tx)
    assert_close(x.grad, tx.grad, "second-order gradient of the input")
    for (key, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        if p.grad is None or q.grad is None:  # a bias the input's gradient does not depend on
            for grad in (p.grad, q.grad):
                assert grad is None or not grad.detach().numpy().any(), key
        else:
            assert_close(p.grad, q.grad, f"second-order gradient of {key}")


def test_generate_square_subsequent_mask_is_torchs() -> None:
    ours = nn.Transformer.generate_square_subsequent_mask(4)
    theirs = torch.nn.Transformer.generate_square_subsequent_mask(4)
    assert ours.dtype is plugrad.float32
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=plugrad.float64)
    assert mask.dtype is plugrad.float64


@pytest.mark.parametrize(
    "build",
    [
        lambda m: m.TransformerEncoderLayer(8, 2, 16),
        lambda m: m.TransformerEncoderLayer(8, 2, 16, 0.2, "gelu", 1e-6, True, True, False),
        lambda m: m.TransformerDecoderLayer(8, 4, 32, norm_first=True),
        lambda m: m.TransformerEncoder(m.TransformerEncoderLayer(8, 2, 16), 2, m.LayerNorm(8)),
        lambda m: m.TransformerDecoder(m.TransformerDecoderLayer(8, 2, 16), 3),
        lambda m: m.Transformer(8, 2, 2, 1, 16, batch_first=True),
    ],
)
def test_repr_and_state_dict_keys_are_torchs(build) -> None:
    ours = build(nn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        theirs = build(torch.nn)
    assert_layout_is_torchs(ours, theirs)


def test_transformer_initializes_every_matrix_with_xavier_uniform() -> None:
    plugrad.manual_seed(0)
    model = nn.Transformer(8, 2, 1, 1, 16)
    weight = model.encoder.layers[0].linear1.weight.detach().numpy()
    bound = (6 / (8 + 16)) ** 0.5
    assert np.abs(weight).max() <= bound and weight.std() > bound / 3
    assert not model.decoder.layers[0].multihead_attn.in_proj_bias.detach().numpy().any()


# -- training and compiling ---------------------------------------------------------------


class Reverser(nn.Module):
    """A small encoder reading vectors and predicting each one's reversed partner."""

    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(8, 2, 32, dropout, batch_first=True), num_layers=1
        )
        self.position = nn.Parameter(plugrad.randn(6, 8) * 0.5)
        self.head = nn.Linear(8, 4)
        self.embed = nn.Linear(4, 8)

    def forward(self, x: plugrad.Tensor, mask: plugrad.Tensor | None = None) -> plugrad.Tensor:
        hidden = self.encoder(self.embed(x) + self.position, mask, is_causal=mask is not None)
        return self.head(hidden)


def reversal_data() -> tuple[plugrad.Tensor, plugrad.Tensor]:
    x = np.random.default_rng(0).standard_normal((16, 6, 4)).astype(np.float32)
    return plugrad.asarray(x), plugrad.asarray(x[:, ::-1].copy())


def test_training_a_transformer_encoder_decreases_the_loss() -> None:
    plugrad.manual_seed(0)
    losses = training_losses(Reverser(), *reversal_data(), lr=0.01)
    assert losses[-1] < 0.5 * losses[0]


def test_a_compiled_encoder_layer_training_step_matches_the_eager_one() -> None:
    x, y = reversal_data()
    mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
    results = eager_and_compiled_losses(Reverser, x, y, mask)
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5)
    assert results[0][2] < results[0][0]


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: nn.TransformerEncoderLayer(8, 3), InvalidArgumentError, "divisible by nhead"),
        (lambda: nn.TransformerDecoderLayer(8, 0), InvalidArgumentError, "nhead must be greater"),
        (lambda: nn.TransformerEncoderLayer(8, 2, 16.0), TypeError, "dim_feedforward must be"),
        (
            lambda: nn.TransformerEncoderLayer(8, 2, activation="tanh"),
            InvalidArgumentError,
            "activation should be 'relu', 'gelu'",
        ),
        (lambda: nn.TransformerDecoderLayer(8, 2, activation=3), TypeError, "got int"),
        (lambda: nn.TransformerEncoderLayer(8, 2, dropout=2.0), InvalidArgumentError, "probab"),
        (lambda: nn.TransformerEncoder(nn.ReLU, 2), TypeError, "expected a layer"),
        (
            lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2), -1),
            InvalidArgumentError,
            "num_layers must be a non-negative int",
        ),
        (lambda: nn.Transformer(8, 2, devcie="numpy"), TypeError, "unexpected keyword"),
    ],
)
def test_bad_constructor_arguments(build, error, message) -> None:
    with pytest.raises(error, match=message):
        build()


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda m: m(plugrad.zeros((5, 2, 8)), plugrad.zeros((4, 3, 8))),
            ShapeError,
            "batch sizes of src and tgt must be equal",
        ),
        (
            lambda m: m(plugrad.zeros((5, 2, 6)), plugrad.zeros((4, 2, 6))),
            ShapeError,
            "d_model=8 features",
        ),
        (
            lambda m: m(
                plugrad.zeros((5, 2, 8)), plugrad.zeros((4, 2, 8)), tgt_mask=plugrad.zeros((5, 5))
            ),
            ShapeError,
            r"expected a 2-d attn_mask of shape \(4, 4\)",
        ),
        (
            lambda m: m.encoder(
                plugrad.zeros((5, 2, 8)), src_key_padding_mask=plugrad.zeros((5, 2))
            ),
            ShapeError,
            r"expected key_padding_mask of shape \(2, 5\)",
        ),
        (
            lambda m: m.encoder(plugrad.zeros((5, 2, 8)), is_causal=True),
            InvalidArgumentError,
            "give the mask too",
        ),
    ],
)
def test_bad_calls_raise_and_change_nothing(call, error, message) -> None:
    plugrad.manual_seed(0)
    assert_raises_and_changes_nothing(nn.Transformer(8, 2, 1, 1, 16), call, error, message)
