"""scaled_dot_product_attention, multi_head_attention_forward and MultiheadAttention
against PyTorch, with PyTorch's weights loaded.

Outputs, attention weights and the gradients with respect to the inputs and
every parameter are compared in float64 on every backend.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from nn_compare import (
    as_lib,
    assert_layout_is_torchs,
    assert_raises_and_changes_nothing,
    backward_squared_gradient,
    causal,
    compare,
    compare_gradients,
    compare_outputs,
    compare_parameter_gradients,
    randn,
    torch_state,
)

import plugrad
import plugrad.nn.functional as F
from plugrad import nn
from plugrad.errors import DtypeError, InvalidArgumentError, ShapeError

torch = pytest.importorskip("torch")

E, HEADS, L, S, N = 8, 2, 4, 6, 3


# -- scaled_dot_product_attention ---------------------------------------------------------


def bool_mask(shape: tuple[int, ...], seed: int) -> np.ndarray:
    mask = np.random.default_rng(seed).random(shape) > 0.4
    mask[..., 0] = True
    return mask


def fully_masked_row(shape: tuple[int, ...]) -> np.ndarray:
    mask = bool_mask(shape, 5)
    mask[..., 1, :] = False  # query 1 may attend to nothing: zeros, as in PyTorch
    return mask


def float_mask(shape: tuple[int, ...]) -> np.ndarray:
    mask = np.random.default_rng(6).standard_normal(shape)
    mask[..., 2] = -np.inf
    return mask


SDPA_CASES = [
    ("plain", (2, 3, L, 5), (2, 3, S, 5), (2, 3, S, 7), {}),
    ("3-d", (2, L, 5), (2, S, 5), (2, S, 5), {}),
    ("2-d", (L, 5), (S, 5), (S, 3), {}),
    ("five axes", (2, 1, 2, L, 5), (2, 1, 2, S, 5), (2, 1, 2, S, 5), {}),
    ("broadcast batch", (2, 3, L, 5), (3, S, 5), (1, S, 5), {}),
    ("scale", (2, L, 5), (2, S, 5), (2, S, 5), {"scale": 0.3}),
    ("causal L<S", (2, 3, L, 5), (2, 3, S, 5), (2, 3, S, 5), {"is_causal": True}),
    ("causal L>S", (2, S, 5), (2, L, 5), (2, L, 5), {"is_causal": True}),
    ("bool mask", (2, 3, L, 5), (2, 3, S, 5), (2, 3, S, 5), {"attn_mask": bool_mask((L, S), 1)}),
    (
        "bool mask per batch",
        (2, 3, L, 5),
        (2, 3, S, 5),
        (2, 3, S, 5),
        {"attn_mask": bool_mask((2, 1, L, S), 2)},
    ),
    (
        "fully masked row",
        (2, L, 5),
        (2, S, 5),
        (2, S, 5),
        {"attn_mask": fully_masked_row((2, L, S))},
    ),
    ("float mask", (2, 3, L, 5), (2, 3, S, 5), (2, 3, S, 5), {"attn_mask": float_mask((L, S))}),
    ("gqa", (2, 4, L, 5), (2, 2, S, 5), (2, 2, S, 3), {"enable_gqa": True}),
    ("gqa one head", (4, L, 5), (1, S, 5), (1, S, 5), {"enable_gqa": True, "is_causal": True}),
]


def sdpa_call(lib: Any, q: Any, k: Any, v: Any, options: dict[str, Any]) -> Any:
    options = dict(options)
    if "attn_mask" in options:
        mask = options["attn_mask"]
        if lib is plugrad:
            options["attn_mask"] = plugrad.asarray(mask, device=q.device)
        else:
            options["attn_mask"] = torch.tensor(mask)
    functional = F if lib is plugrad else torch.nn.functional
    return functional.scaled_dot_product_attention(q, k, v, **options)


@pytest.mark.parametrize("case", SDPA_CASES, ids=[case[0] for case in SDPA_CASES])
def test_scaled_dot_product_attention_matches_torch(backend, case) -> None:
    _, q_shape, k_shape, v_shape, options = case
    leaves = [randn(q_shape, 0), randn(k_shape, 1), randn(v_shape, 2)]
    ours = sdpa_call(plugrad, *(a for a, _ in leaves), options)
    theirs = sdpa_call(torch, *(b for _, b in leaves), options)
    compare_outputs((ours, theirs), leaves, case[0])


@pytest.mark.parametrize("options", [{}, {"attn_mask": float_mask((L, S))}, {"is_causal": True}])
def test_scaled_dot_product_attention_second_order_matches_torch(backend, options) -> None:
    leaves = [randn((2, L, 5), 0), randn((2, S, 5), 1), randn((2, S, 3), 2)]
    ours = sdpa_call(plugrad, *(a for a, _ in leaves), options)
    theirs = sdpa_call(torch, *(b for _, b in leaves), options)
    backward_squared_gradient(plugrad, [ours], leaves[0][0])
    backward_squared_gradient(torch, [theirs], leaves[0][1])
    compare_gradients(leaves, "second order")


def test_scaled_dot_product_attention_gradgradcheck(backend) -> None:
    leaves = [randn(shape, seed)[0] for seed, shape in enumerate([(L, 3), (S, 3), (S, 2)])]
    mask = plugrad.asarray(bool_mask((L, S), 3), device=plugrad.default_device())
    plugrad.autograd.gradgradcheck(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        leaves,
        atol=1e-5,
        rtol=1e-4,
    )


def test_a_fully_masked_query_gets_zeros_and_zero_gradients() -> None:
    q, k, v = (plugrad.ones((2, 3), dtype=plugrad.float64, requires_grad=True) for _ in range(3))
    mask = plugrad.asarray([[True, False], [False, False]])
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out.sum().backward()
    assert out[1].tolist() == [0.0, 0.0, 0.0]
    for leaf in (q, k, v):
        assert np.isfinite(leaf.grad.numpy()).all()
    assert q.grad[1].tolist() == [0.0, 0.0, 0.0]


def test_dropout_p_applies_whenever_positive() -> None:
    q = k = v = plugrad.ones((2, 3))
    assert F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).tolist() == [[0.0] * 3] * 2
    plugrad.manual_seed(0)
    dropped = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    assert set(np.unique(dropped)) <= {0.0, 1.0, 2.0}


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda q, k, v: F.scaled_dot_product_attention(q[0, 0], k, v), ShapeError, "at least 2"),
        (lambda q, k, v: F.scaled_dot_product_attention(q, k[..., :3], v), ShapeError, "features"),
        (lambda q, k, v: F.scaled_dot_product_attention(q, k, v[:, :4]), ShapeError, "positions"),
        (
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v.to(plugrad.float32)),
            DtypeError,
            "one real floating dtype",
        ),
        (
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, plugrad.zeros((3, S))),
            ShapeError,
            r"attn_mask of shape \(3, 6\) does not broadcast",
        ),
        (
            lambda q, k, v: F.scaled_dot_product_attention(
                q, k, v, plugrad.zeros((L, S), dtype=plugrad.int64)
            ),
            DtypeError,
            "attn_mask must be bool",
        ),
        (
            lambda q, k, v: F.scaled_dot_product_attention(
                q, k, v, plugrad.zeros((L, S), dtype=plugrad.complex64)
            ),
            DtypeError,
            "query's dtype float64",
        ),
        (
            lambda q, k, v: F.scaled_dot_product_attention(
                q, k, v, plugrad.ones((L, S), dtype=plugrad.bool), is_causal=True
            ),
            InvalidArgumentError,
            "not both",
        ),
        (
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=1.5),
            InvalidArgumentError,
            "dropout_p must be a probability",
        ),
        (
            lambda q, k, v: F.scaled_dot_product_attention(q[0], k[0], v[0], enable_gqa=True),
            ShapeError,
            "needs a heads axis",
        ),
        (
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v[:2], enable_gqa=True),
            ShapeError,
            "heads must be a multiple of the value's 2",
        ),
        (lambda q, k, v: F.scaled_dot_product_attention(q, k.numpy(), v), TypeError, "key must"),
    ],
)
def test_scaled_dot_product_attention_bad_input(call, error, message) -> None:
    q = plugrad.zeros((3, L, 5), dtype=plugrad.float64)
    k = plugrad.zeros((3, S, 5), dtype=plugrad.float64)
    v = plugrad.zeros((3, S, 4), dtype=plugrad.float64)
    with pytest.raises(error, match=message):
        call(q, k, v)


# -- MultiheadAttention -------------------------------------------------------------------


LAYERS = [
    {},
    {"batch_first": True},
    {"bias": False},
    {"kdim": 3, "vdim": 5},
    {"kdim": 3, "vdim": 5, "batch_first": True, "bias": False},
    {"add_bias_kv": True},
    {"add_zero_attn": True},
    {"add_bias_kv": True, "add_zero_attn": True, "batch_first": True},
]


def padding(seed: int, length: int = S) -> np.ndarray:
    mask = np.random.default_rng(seed).random((N, length)) > 0.6
    mask[:, 0] = False  # every query has a key to attend to
    return mask


CALLS = [
    ("default", {}),
    ("need_weights=False", {"need_weights": False}),
    ("per-head weights", {"average_attn_weights": False}),
    ("bool attn_mask", {"attn_mask": ~bool_mask((L, S), 3)}),
    ("float 3-d attn_mask", {"attn_mask": float_mask((N * HEADS, L, S))}),
    ("float attn_mask, no weights", {"attn_mask": float_mask((L, S)), "need_weights": False}),
    ("bool key_padding_mask", {"key_padding_mask": padding(7)}),
    ("float key_padding_mask", {"key_padding_mask": np.where(padding(8), -np.inf, 0.0)}),
    (
        "both masks, no weights",
        {
            "key_padding_mask": np.where(padding(9), -np.inf, 0.0),
            "attn_mask": float_mask((L, S)),
            "need_weights": False,
        },
    ),
    ("unbatched", {"unbatched": True, "attn_mask": ~bool_mask((L, S), 4)}),
    ("unbatched padding", {"unbatched": True, "key_padding_mask": padding(10)[0]}),
]


def mha_inputs(options: dict[str, Any], unbatched: bool, seed: int = 0) -> list[tuple[Any, Any]]:
    shapes = []
    for length, features in ((L, E), (S, options.get("kdim", E)), (S, options.get("vdim", E))):
        if unbatched:
            shapes.append((length, features))
        elif options.get("batch_first"):
            shapes.append((N, length, features))
        else:
            shapes.append((length, N, features))
    return [randn(shape, seed + index) for index, shape in enumerate(shapes)]


def make_pair(**options: Any) -> tuple[nn.MultiheadAttention, Any]:
    """``MultiheadAttention(E, HEADS, **options)``: ours and torch's, in float64."""
    ours = nn.MultiheadAttention(E, HEADS, dtype=plugrad.float64, **options)
    return ours, torch.nn.MultiheadAttention(E, HEADS, dtype=torch.float64, **options)


def layer_id(options: dict[str, Any]) -> str:
    return "-".join(f"{k}={v}" for k, v in options.items()) or "default"


@pytest.mark.parametrize("call", CALLS, ids=[call[0] for call in CALLS])
@pytest.mark.parametrize("options", LAYERS, ids=[layer_id(o) for o in LAYERS])
def test_multihead_attention_matches_torch(backend, options, call) -> None:
    _, arguments = call
    arguments = dict(arguments)
    unbatched = arguments.pop("unbatched", False)
    ours, theirs = make_pair(**options)
    ours.eval()
    theirs.eval()
    compare(ours, theirs, mha_inputs(options, unbatched), arguments)


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"is_causal": True, "need_weights": False},
        {"is_causal": True},
        {
            "is_causal": True,
            "need_weights": False,
            "key_padding_mask": np.where(padding(11, L), -np.inf, 0.0),
        },
        {"key_padding_mask": padding(12, L), "need_weights": False},
    ],
    ids=["plain", "causal hint", "causal hint with weights", "causal with padding", "padding"],
)
@pytest.mark.parametrize("batch_first", [False, True])
def test_self_attention_matches_torch(backend, batch_first, arguments) -> None:
    """One tensor as query, key and value (one packed projection), with causal masks."""
    ours, theirs = make_pair(batch_first=batch_first)
    arguments = dict(arguments)
    if arguments.get("is_causal"):
        arguments["attn_mask"] = causal(L)
    leaf = randn((N, L, E) if batch_first else (L, N, E), 0)
    compare(ours, theirs, [leaf], arguments, call=lambda m, x, **kw: m(x, x, x, **kw))


def test_multi_head_attention_forward_matches_torch_with_static_kv(backend) -> None:
    theirs = torch.nn.MultiheadAttention(E, HEADS, dtype=torch.float64)
    weights = torch_state(theirs)
    leaves = mha_inputs({}, False)
    static = [randn((N * HEADS, S, E // HEADS), 10 + index) for index in range(2)]

    def call(lib: Any, tensors: list[Any], static_kv: list[Any]) -> Any:
        w = {k: as_lib(lib, v) for k, v in weights.items()}
        functional = F if lib is plugrad else torch.nn.functional
        return functional.multi_head_attention_forward(
            *tensors, E, HEADS, w["in_proj_weight"], w["in_proj_bias"], None, None, False, 0.0,
            w["out_proj.weight"], w["out_proj.bias"], training=False,
            static_k=static_kv[0], static_v=static_kv[1], average_attn_weights=False,
        )  # fmt: skip

    ours = call(plugrad, [a for a, _ in leaves], [a for a, _ in static])
    theirs_out = call(torch, [b for _, b in leaves], [b for _, b in static])
    compare_outputs((ours, theirs_out), leaves[:1] + static, "static")


def test_multihead_attention_second_order_matches_torch(backend) -> None:
    options = {"kdim": 3, "vdim": 5, "add_bias_kv": True}
    ours, theirs = make_pair(**options)
    ours.load_state_dict(torch_state(theirs))
    leaves = mha_inputs(options, False)
    mask = padding(13)
    our_out = ours(*(a for a, _ in leaves), key_padding_mask=as_lib(plugrad, mask))
    their_out = theirs(*(b for _, b in leaves), key_padding_mask=as_lib(torch, mask))
    backward_squared_gradient(plugrad, list(our_out), leaves[0][0])
    backward_squared_gradient(torch, list(their_out), leaves[0][1])
    compare_gradients(leaves, "second order")
    compare_parameter_gradients(ours, theirs, "second-order gradient")


def test_dropout_on_the_weights_in_training_mode_only() -> None:
    plugrad.manual_seed(0)
    layer = nn.MultiheadAttention(E, HEADS, dropout=0.5).double()
    x = plugrad.asarray(np.random.default_rng(0).standard_normal((L, N, E)))
    evaluated = layer.eval()(x, x, x)
    again = layer(x, x, x)
    for a, b in zip(evaluated, again):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    _, weights = layer.train()(x, x, x, average_attn_weights=False)
    weights = weights.detach().numpy()
    assert (weights == 0).any()
    assert not np.allclose(weights.sum(axis=-1), 1.0)  # the kept weights are scaled by 2


# -- construction, parameters and printing ------------------------------------------------


MAKERS = [
    lambda m: m.MultiheadAttention(8, 2),
    lambda m: m.MultiheadAttention(8, 4, dropout=0.1, bias=False, batch_first=True),
    lambda m: m.MultiheadAttention(8, 2, kdim=3, vdim=5),
    lambda m: m.MultiheadAttention(8, 2, kdim=8, vdim=5, add_bias_kv=True, add_zero_attn=True),
    lambda m: m.MultiheadAttention(6, 3, add_bias_kv=True, bias=False),
]


@pytest.mark.parametrize("make", MAKERS)
def test_parameters_state_dict_and_repr_are_torchs(make) -> None:
    ours, theirs = make(nn), make(torch.nn)
    assert_layout_is_torchs(ours, theirs)
    for name in ("embed_dim", "kdim", "vdim", "num_heads", "head_dim", "dropout", "batch_first",
                 "add_zero_attn", "_qkv_same_embed_dim"):  # fmt: skip
        assert getattr(ours, name) == getattr(theirs, name), name
    for name in ("in_proj_weight", "q_proj_weight", "in_proj_bias", "bias_k", "bias_v"):
        assert (getattr(ours, name) is None) == (getattr(theirs, name) is None), name


def test_initialization_is_torchs() -> None:
    plugrad.manual_seed(0)
    layer = nn.MultiheadAttention(16, 4, add_bias_kv=True)
    weight = layer.in_proj_weight.detach().numpy()
    bound = (6 / (16 + 48)) ** 0.5  # xavier_uniform_ over (48, 16)
    assert np.abs(weight).max() <= bound and weight.std() > bound / 3
    assert not layer.in_proj_bias.detach().numpy().any()
    assert not layer.out_proj.bias.detach().numpy().any()
    out_bound = 1 / 16**0.5  # out_proj keeps Linear's initialization
    assert np.abs(layer.out_proj.weight.detach().numpy()).max() <= out_bound
    assert layer.bias_k.detach().numpy().std() > 0
    separate = nn.MultiheadAttention(16, 4, kdim=4)
    assert np.abs(separate.k_proj_weight.detach().numpy()).max() <= (6 / 20) ** 0.5
    assert isinstance(layer.out_proj, nn.Linear)


def test_a_float32_layer_and_conversions() -> None:
    layer = nn.MultiheadAttention(4, 2)
    out, weights = layer(plugrad.ones((3, 4)), plugrad.ones((5, 4)), plugrad.ones((5, 4)))
    assert (out.dtype, out.shape, weights.shape) == (plugrad.float32, (3, 4), (3, 5))
    out, _ = layer.double()(*(plugrad.ones((3, 2, 4), dtype=plugrad.float64),) * 3)
    assert out.dtype is plugrad.float64


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: nn.MultiheadAttention(10, 3), InvalidArgumentError, "divisible by num_heads"),
        (lambda: nn.MultiheadAttention(8, 0), InvalidArgumentError, "num_heads must be greater"),
        (lambda: nn.MultiheadAttention(8.0, 2), TypeError, "embed_dim must be an int"),
        (lambda: nn.MultiheadAttention(8, 2, kdim=0), InvalidArgumentError, "kdim must be"),
        (lambda: nn.MultiheadAttention(8, 2, dropout=1.5), InvalidArgumentError, "probability"),
        (lambda: nn.MultiheadAttention(8, 2, devcie="numpy"), TypeError, "unexpected keyword"),
    ],
)
def test_bad_constructor_arguments(make, error, message) -> None:
    with pytest.raises(error, match=message):
        make()


def zeros(*shape: int, dtype: Any = plugrad.float32) -> plugrad.Tensor:
    return plugrad.zeros(shape, dtype=dtype)


def on_zeros(module: nn.Module, **arguments: Any) -> Any:
    """Call ``module`` on zeros of the default shapes, with ``arguments``."""
    return module(zeros(L, N, E), zeros(S, N, E), zeros(S, N, E), **arguments)


BAD_CALLS = [
    (
        lambda m: on_zeros(m, attn_mask=zeros(L, L)),
        ShapeError,
        r"expected a 2-d attn_mask of shape \(4, 6\), got \(4, 4\)",
    ),
    (
        lambda m: on_zeros(m, attn_mask=zeros(N, L, S)),
        ShapeError,
        r"3-d attn_mask of shape \(6, 4, 6\)",
    ),
    (
        lambda m: on_zeros(m, attn_mask=zeros(1, 1, L, S)),
        ShapeError,
        "attn_mask must be 2-d",
    ),
    (
        lambda m: on_zeros(m, key_padding_mask=zeros(S, N)),
        ShapeError,
        r"expected key_padding_mask of shape \(3, 6\)",
    ),
    (
        lambda m: on_zeros(m, key_padding_mask=zeros(S)),
        ShapeError,
        "key_padding_mask must be 2-d",
    ),
    (
        lambda m: on_zeros(m, attn_mask=zeros(L, S, dtype=plugrad.int64)),
        DtypeError,
        "attn_mask must be bool",
    ),
    (
        lambda m: on_zeros(m, attn_mask=zeros(L, S, dtype=plugrad.float64)),
        DtypeError,
        "the floating attn_mask is float64 but the query is float32",
    ),
    (
        lambda m: m(zeros(L, N, 6), zeros(S, N, 6), zeros(S, N, 6)),
        ShapeError,
        "embed_dim=8",
    ),
    (
        lambda m: m(zeros(L, N, E), zeros(S, N, 5), zeros(S, N, 5)),
        ShapeError,
        r"expected key with 8 features",
    ),
    (
        lambda m: m(zeros(L, N, E), zeros(S, N, E), zeros(S + 1, N, E)),
        ShapeError,
        "key and value must have the same shape",
    ),
    (
        lambda m: m(zeros(L, N, E), zeros(S, 2, E), zeros(S, 2, E)),
        ShapeError,
        "same batch size",
    ),
    (
        lambda m: m(zeros(1, L, N, E), zeros(1, S, N, E), zeros(1, S, N, E)),
        ShapeError,
        "query must be 2-d",
    ),
    (
        lambda m: m(zeros(L, N, E), zeros(S, E), zeros(S, E)),
        ShapeError,
        "key and value must be 3-d too",
    ),
    (
        lambda m: on_zeros(m, is_causal=True),
        InvalidArgumentError,
        "give the mask too",
    ),
    (
        lambda m: m(zeros(L, N, E, dtype=plugrad.float64), *(zeros(S, N, E),) * 2),
        DtypeError,
        "the input is float64 but the weight is float32",
    ),
    (lambda m: m(np.zeros((L, N, E)), zeros(S, N, E), zeros(S, N, E)), TypeError, "query must"),
]


@pytest.mark.parametrize(("call", "error", "message"), BAD_CALLS)
def test_bad_calls_raise_and_change_nothing(call, error, message) -> None:
    plugrad.manual_seed(0)
    assert_raises_and_changes_nothing(nn.MultiheadAttention(E, HEADS), call, error, message)


def test_mixed_mask_dtypes_warn_as_in_torch() -> None:
    module = nn.MultiheadAttention(E, HEADS)
    x = zeros(L, N, E)
    with pytest.warns(UserWarning, match="key_padding_mask is bool but attn_mask is float32"):
        module(x, x, x, key_padding_mask=zeros(N, L, dtype=plugrad.bool), attn_mask=zeros(L, L))


@pytest.mark.parametrize(
    ("keywords", "match"),
    [
        ({"is_causal": "False"}, "is_causal must be True or False"),
        ({"is_causal": 0}, "is_causal must be True or False"),
        ({"enable_gqa": "x"}, "enable_gqa must be True or False"),
        ({"scale": "a"}, "scale must be a float"),
        ({"scale": [0.5]}, "scale must be a float"),
    ],
)
def test_attention_flags_and_scale_of_another_type_are_refused_as_pytorch(keywords, match):
    # is_causal="False" was taken as true: the causal mask applied, with no error.
    q = torch.randn(1, 2, 3, 4)
    with pytest.raises(TypeError):
        torch.nn.functional.scaled_dot_product_attention(q, q, q, **keywords)
    x = plugrad.tensor(q.numpy())
    with pytest.raises(plugrad.errors.ArgumentError, match=match):
        F.scaled_dot_product_attention(x, x, x, **keywords)
