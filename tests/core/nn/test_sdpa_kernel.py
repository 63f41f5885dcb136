"""``plugrad.nn.attention``'s ``SDPBackend`` and ``sdpa_kernel`` against PyTorch's.

plugrad computes one form of attention whatever is enabled; what the enabled
kernels decide, as on PyTorch's CPU, is which calls of
``scaled_dot_product_attention`` raise. Each case runs in both libraries
under the same list: both run (with the same values) or both raise.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from nn_compare import as_lib

import plugrad
import plugrad.nn.functional as F
from plugrad import nn
from plugrad.errors import ArgumentError, InvalidArgumentError
from plugrad.nn.attention import SDPBackend, sdpa_kernel

torch = pytest.importorskip("torch")

TorchBackend = torch.nn.attention.SDPBackend

RNG = np.random.default_rng(3)


def normal(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape)


Q = normal(2, 3, 4, 8)

# name -> (query, key, value, keywords); numpy arrays become each library's tensors.
CALLS: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]] = {
    "4-d": (Q, normal(2, 3, 5, 8), normal(2, 3, 5, 8), {}),
    "3-d": (Q[0], Q[0], Q[0], {}),
    "2-d": (Q[0, 0], Q[0, 0], Q[0, 0], {}),
    "dropout": (Q, Q, Q, {"dropout_p": 0.5}),
    "value's own features": (Q, Q, normal(2, 3, 4, 5), {}),
    "batch broadcast": (Q, Q[:1], Q[:1], {}),
    "heads broadcast": (Q, Q[:, :1], Q[:, :1], {}),
    "grouped heads": (normal(2, 4, 4, 8), Q[:, :2], Q[:, :2], {"enable_gqa": True}),
    "one grouped head": (Q, Q[:, :1], Q[:, :1], {"enable_gqa": True}),
    "key and value heads differ": (
        normal(2, 4, 4, 8), normal(2, 2, 4, 8), normal(2, 1, 4, 8), {"enable_gqa": True},
    ),
    "2-d mask": (Q, Q, Q, {"attn_mask": np.zeros((4, 4))}),
    "4-d mask": (Q, Q, Q, {"attn_mask": np.zeros((1, 3, 4, 4))}),
    "3-d mask": (Q, Q, Q, {"attn_mask": np.zeros((3, 4, 4))}),
    "boolean mask": (Q, Q, Q, {"attn_mask": np.tril(np.ones((4, 4), dtype=bool))}),
    "causal": (Q, Q, Q, {"is_causal": True}),
}  # fmt: skip

LISTS = [
    ["MATH"],
    ["FLASH_ATTENTION"],
    ["EFFICIENT_ATTENTION"],
    ["CUDNN_ATTENTION"],
    ["OVERRIDEABLE"],
    ["ERROR"],
    [],
    ["FLASH_ATTENTION", "EFFICIENT_ATTENTION"],
    ["EFFICIENT_ATTENTION", "MATH"],
]


def attend(lib: Any, names: list[str], call: str) -> Any:
    """The call ``call`` in ``lib`` under ``sdpa_kernel`` of ``names``: its output, or the
    error it raised."""
    functional, kernel, backend = (
        (F, sdpa_kernel, SDPBackend)
        if lib is plugrad
        else (torch.nn.functional, torch.nn.attention.sdpa_kernel, TorchBackend)
    )
    query, key, value, keywords = CALLS[call]
    keywords = {k: as_lib(lib, v) if isinstance(v, np.ndarray) else v for k, v in keywords.items()}
    with kernel([getattr(backend, name) for name in names]):
        try:
            with warnings.catch_warnings():
                # PyTorch warns why its flash kernel refused, before raising.
                warnings.simplefilter("ignore", UserWarning)
                return functional.scaled_dot_product_attention(
                    as_lib(lib, query), as_lib(lib, key), as_lib(lib, value), **keywords
                )
        except RuntimeError as error:
            return error


@pytest.mark.parametrize("names", LISTS, ids=lambda names: "+".join(names) or "none")
@pytest.mark.parametrize("call", list(CALLS))
def test_a_call_runs_where_pytorchs_cpu_runs_it_and_raises_where_it_raises(names, call):
    ours, theirs = attend(plugrad, names, call), attend(torch, names, call)
    if isinstance(theirs, Exception):
        assert isinstance(ours, InvalidArgumentError), ours
        assert "adding SDPBackend.MATH" in str(ours)
        return
    assert not isinstance(ours, Exception), ours
    if not CALLS[call][3].get("dropout_p"):  # the two libraries draw different masks
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


def test_the_error_names_the_enabled_kernels_and_pytorchs_reason():
    q = plugrad.ones(2, 4)
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]):
        with pytest.raises(InvalidArgumentError, match="CUDNN_ATTENTION, EFFICIENT_ATTENTION"):
            F.scaled_dot_product_attention(q, q, q)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        with pytest.raises(InvalidArgumentError, match="needs 4-d query, key and value"):
            F.scaled_dot_product_attention(q, q, q)
        with pytest.raises(InvalidArgumentError, match="takes no dropout"):
            F.scaled_dot_product_attention(q[None, None], q[None, None], q[None, None], None, 0.1)


def test_the_enum_is_pytorchs():
    assert {m.name: int(m) for m in SDPBackend} == {
        name: int(member) for name, member in TorchBackend.__members__.items()
    }
    for name, member in TorchBackend.__members__.items():
        ours = getattr(SDPBackend, name)
        assert (str(ours), repr(ours)) == (str(member), repr(member))
        assert SDPBackend(int(member)) is ours
        assert [0, 1, 2, 3, 4, 5][ours] == [0, 1, 2, 3, 4, 5][member]  # __index__
    assert SDPBackend.MATH != 0  # as PyTorch's: a member is not its int


def test_the_names_import_as_from_torch():
    import plugrad.nn.attention as attention
    from plugrad.nn.modules.activation import MultiheadAttention

    assert attention.sdpa_kernel is sdpa_kernel and attention.SDPBackend is SDPBackend
    assert {"sdpa_kernel", "SDPBackend"} <= set(attention.__all__)
    assert MultiheadAttention is nn.MultiheadAttention is attention.MultiheadAttention
    assert not hasattr(nn, "sdpa_kernel")  # not in torch.nn either


def test_entering_raises_nothing_and_the_setting_is_restored_on_leaving():
    q = plugrad.ones(3, 4)
    with sdpa_kernel(SDPBackend.ERROR) as entered:
        assert entered == {}
    F.scaled_dot_product_attention(q, q, q)  # restored: runs
    with pytest.raises(InvalidArgumentError), sdpa_kernel([]):
        F.scaled_dot_product_attention(q, q, q)
    F.scaled_dot_product_attention(q, q, q)  # restored after the error too


def test_blocks_nest_and_a_decorated_function_runs_under_the_setting():
    q = plugrad.ones(3, 4)

    @sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION)
    def refused() -> Any:
        return F.scaled_dot_product_attention(q, q, q)

    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        with sdpa_kernel([SDPBackend.MATH], set_priority=True):
            F.scaled_dot_product_attention(q, q, q)
        with pytest.raises(InvalidArgumentError):
            F.scaled_dot_product_attention(q, q, q)
    for _ in range(2):  # a fresh block each call
        with pytest.raises(InvalidArgumentError):
            refused()
    F.scaled_dot_product_attention(q, q, q)


def test_multihead_attention_calls_sdpa_only_without_weights_as_pytorchs():
    layer = nn.MultiheadAttention(8, 2)
    x = plugrad.ones(4, 3, 8)
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        layer(x, x, x)  # need_weights: the math form, outside scaled_dot_product_attention
        with pytest.raises(InvalidArgumentError):
            layer(x, x, x, need_weights=False)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        layer(x, x, x, need_weights=False)


@pytest.mark.parametrize(
    ("backends", "options"),
    [("MATH", {}), ((SDPBackend.MATH,), {}), (0, {}), ([SDPBackend.MATH, "FLASH"], {}),
     (None, {}), (SDPBackend.MATH, {"set_priority": "yes"})],
)  # fmt: skip
def test_arguments_that_are_not_backends_are_refused_at_once(backends, options):
    with pytest.raises(ArgumentError, match="sdpa_kernel"):
        sdpa_kernel(backends, **options)
    q = plugrad.ones(3, 4)
    F.scaled_dot_product_attention(q, q, q)  # nothing was changed
