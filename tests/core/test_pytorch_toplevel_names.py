"""PyTorch's top-level functions: nn forms, in-place functions and small utilities, vs torch."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError, InPlaceModificationError, InvalidArgumentError

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def pair(
    *shape: int, positive: bool = False, grad: bool = True
) -> tuple[plugrad.Tensor, torch.Tensor]:
    data = RNG.standard_normal(shape)
    data = np.abs(data) + 0.1 if positive else data
    return (
        plugrad.tensor(data, dtype=plugrad.float64, requires_grad=grad),
        torch.tensor(data, dtype=torch.float64, requires_grad=grad),
    )


def close(ours: plugrad.Tensor, theirs: torch.Tensor) -> None:
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(np.asarray(ours.detach()), theirs.detach().numpy(), atol=1e-10)


def check_grads(ours: plugrad.Tensor, theirs: torch.Tensor, inputs: list) -> None:
    ours.sum().backward()
    theirs.sum().backward()
    for a, b in inputs:
        close(a.grad, b.grad)


# -- nn forms --------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_losses_take_the_reduction_enum(reduction: int) -> None:
    a, ta = pair(4, 3)
    b, tb = pair(4, 3)
    sign = plugrad.tensor([1.0, -1.0, 1.0, -1.0], dtype=plugrad.float64)
    tsign = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    p, tp = pair(4, 3, positive=True, grad=False)
    cases = [
        (plugrad.kl_div(a, p, reduction), torch.kl_div(ta, tp, reduction)),
        (plugrad.hinge_embedding_loss(a, sign[:, None] * p, 0.5, reduction),
         torch.hinge_embedding_loss(ta, tsign[:, None] * tp, 0.5, reduction)),
        (plugrad.margin_ranking_loss(a[:, 0], b[:, 0], sign, 0.1, reduction),
         torch.margin_ranking_loss(ta[:, 0], tb[:, 0], tsign, 0.1, reduction)),
        (plugrad.cosine_embedding_loss(a, b, sign, 0.2, reduction),
         torch.cosine_embedding_loss(ta, tb, tsign, 0.2, reduction)),
        (plugrad.triplet_margin_loss(a, b, a * 2, 1.0, 2.0, 1e-6, True, reduction),
         torch.triplet_margin_loss(ta, tb, ta * 2, 1.0, 2.0, 1e-6, True, reduction)),
        (plugrad.poisson_nll_loss(a, p, True, True, 1e-8, reduction),
         torch.poisson_nll_loss(ta, tp, True, True, 1e-8, reduction)),
        (plugrad.binary_cross_entropy_with_logits(a, p / 4, None, p[0], reduction),
         torch.binary_cross_entropy_with_logits(ta, tp / 4, None, tp[0], reduction)),
    ]  # fmt: skip
    for ours, theirs in cases:
        close(ours, theirs)
    ours = sum(o.sum() for o, _ in cases)
    theirs = sum(t.sum() for _, t in cases)
    check_grads(ours, theirs, [(a, ta), (b, tb)])


def test_a_reduction_out_of_the_enum_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="reduction must be 0"):
        plugrad.kl_div(plugrad.zeros(2), plugrad.ones(2), "mean")


def test_norms_take_weight_and_bias_first() -> None:
    x, tx = pair(4, 3, 5)
    w, tw = pair(3)
    b, tb = pair(3)
    mean, var = plugrad.zeros(3, dtype=plugrad.float64), plugrad.ones(3, dtype=plugrad.float64)
    tmean, tvar = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    ours = plugrad.batch_norm(x, w, b, mean, var, True, 0.1, 1e-5, False)
    theirs = torch.batch_norm(tx, tw, tb, tmean, tvar, True, 0.1, 1e-5, False)
    close(ours, theirs)
    close(mean, tmean)
    close(var, tvar)
    ours = ours + plugrad.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False)
    theirs = theirs + torch.instance_norm(tx, tw, tb, None, None, True, 0.1, 1e-5, False)
    ours = ours + plugrad.layer_norm(x, [5], None, None, 1e-5, False)
    theirs = theirs + torch.layer_norm(tx, [5], None, None, 1e-5, False)
    ours = ours + plugrad.group_norm(x, 3, w, b, 1e-5, False)
    theirs = theirs + torch.group_norm(tx, 3, tw, tb, 1e-5, False)
    close(ours, theirs)
    check_grads(ours * x, theirs * tx, [(x, tx), (w, tw), (b, tb)])


def test_native_layer_norm_returns_its_statistics() -> None:
    x, tx = pair(2, 3, 4)
    w, tw = pair(3, 4)
    ours = plugrad.native_layer_norm(x, [3, 4], w, None, 1e-5)
    theirs = torch.native_layer_norm(tx, [3, 4], tw, None, 1e-5)
    for o, t in zip(ours, theirs, strict=True):
        close(o, t)
    check_grads(ours[0] * x, theirs[0] * tx, [(x, tx), (w, tw)])


def test_embedding_takes_weight_first() -> None:
    w, tw = pair(5, 3)
    idx = [[0, 2], [4, 2]]
    ours = plugrad.embedding(w, plugrad.tensor(idx), 2)
    theirs = torch.embedding(tw, torch.tensor(idx), 2)
    close(ours, theirs)
    check_grads(ours, theirs, [(w, tw)])
    close(plugrad.embedding(w, plugrad.tensor(idx)), torch.embedding(tw, torch.tensor(idx)))


def test_embedding_renorm_() -> None:
    w, tw = pair(5, 3, grad=False)
    w, tw = w * 3, tw * 3
    out = plugrad.embedding_renorm_(w, plugrad.tensor([0, 1, 1]), 1.0, 2.0)
    torch.embedding_renorm_(tw, torch.tensor([0, 1, 1]), 1.0, 2.0)
    assert out is w
    close(w, tw)


def test_padding_convolution_and_ctc() -> None:
    x, tx = pair(2, 3, 6)
    k, tk = pair(4, 3, 2)
    b, tb = pair(4)
    close(plugrad.constant_pad_nd(x, [1, 2], 3.0), torch.constant_pad_nd(tx, [1, 2], 3.0))
    ours = plugrad.convolution(x, k, b, [2], [1], [1], False, [0], 1)
    theirs = torch.convolution(tx, tk, tb, [2], [1], [1], False, [0], 1)
    close(ours, theirs)
    kt, tkt = pair(3, 2, 2)
    close(
        plugrad.convolution(x, kt, None, [2], [1], [1], True, [1], 1),
        torch.convolution(tx, tkt, None, [2], [1], [1], True, [1], 1),
    )
    t, tt = pair(6, 2, 3)  # (time, batch, channels)
    w, tw = pair(3, 3, 4)
    ours = plugrad.conv_tbc(t, w, b, 1)
    theirs = torch.conv_tbc(tt, tw, tb, 1)
    close(ours, theirs)
    check_grads(ours, theirs, [(t, tt), (w, tw), (b, tb)])
    lp = torch.randn(5, 2, 4, dtype=torch.float64).log_softmax(2)
    targets = [[1, 2], [3, 3]]
    for reduction in (0, 1, 2):
        ours = plugrad.ctc_loss(
            plugrad.tensor(lp.numpy()), plugrad.tensor(targets), [5, 4], [2, 2], 0, reduction
        )
        close(ours, torch.ctc_loss(lp, torch.tensor(targets), [5, 4], [2, 2], 0, reduction))


@pytest.mark.parametrize(
    "name", ["dropout", "alpha_dropout", "feature_alpha_dropout", "feature_dropout"]
)
def test_dropouts_take_p_and_train(name: str) -> None:
    ours, theirs = getattr(plugrad, name), getattr(torch, name)
    assert list(inspect.signature(ours).parameters) == ["input", "p", "train"]
    x, tx = pair(4, 3, 5)
    close(ours(x, 0.5, False), theirs(tx, 0.5, False))
    close(ours(x, p=0.0, train=True), theirs(tx, p=0.0, train=True))
    y = ours(x, 0.999999, True)
    assert y.shape == x.shape
    z = plugrad.ones(4, 3, 5)
    assert getattr(plugrad, name + "_")(z, 0.5, True) is z


def test_feature_dropout_drops_whole_channels() -> None:
    plugrad.manual_seed(0)
    y = plugrad.feature_dropout(plugrad.ones(8, 16, 5), 0.5, True)
    per_channel = np.asarray(y)
    assert set(np.unique(per_channel)) == {0.0, 2.0}
    assert (per_channel == per_channel[:, :, :1]).all()


@pytest.mark.parametrize("cell", ["rnn_tanh_cell", "rnn_relu_cell", "gru_cell", "lstm_cell"])
def test_recurrent_cells(cell: str) -> None:
    gates = {"rnn_tanh_cell": 1, "rnn_relu_cell": 1, "gru_cell": 3, "lstm_cell": 4}[cell]
    x, tx = pair(2, 3)
    h, th = pair(2, 4)
    wi, twi = pair(4 * gates, 3)
    wh, twh = pair(4 * gates, 4)
    bi, tbi = pair(4 * gates)
    hx, thx = ((h, h * 2), (th, th * 2)) if cell == "lstm_cell" else (h, th)
    ours = getattr(plugrad, cell)(x, hx, wi, wh, bi)
    theirs = getattr(torch, cell)(tx, thx, twi, twh, tbi)
    if cell == "lstm_cell":
        for o, t in zip(ours, theirs, strict=True):
            close(o, t)
        ours, theirs = ours[0] * ours[1], theirs[0] * theirs[1]
    close(ours, theirs)
    check_grads(ours, theirs, [(x, tx), (h, th), (wi, twi), (wh, twh), (bi, tbi)])


# -- in-place functions ----------------------------------------------------------------


IN_PLACE = sorted(
    n
    for n in dir(torch)
    if n.endswith("_") and not n.startswith("_") and hasattr(plugrad.Tensor, n) and n in {
        "abs_", "acos_", "asin_", "atan_", "ceil_", "clamp_", "clip_", "cos_", "erf_", "exp_",
        "exp2_", "expm1_", "floor_", "frac_", "log_", "log1p_", "neg_", "reciprocal_", "round_",
        "rsqrt_", "sigmoid_", "sin_", "sinc_", "sqrt_", "square_", "tanh_", "trunc_", "zero_",
        "i0_", "logit_", "deg2rad_", "nan_to_num_", "detach_",
    }
)  # fmt: skip


@pytest.mark.parametrize("name", IN_PLACE)
def test_in_place_functions_are_the_methods(name: str) -> None:
    data = RNG.uniform(0.1, 0.9, (3,))
    ours = plugrad.tensor(data, dtype=plugrad.float64, requires_grad=True) * 1
    theirs = torch.tensor(data, dtype=torch.float64, requires_grad=True) * 1
    extra = {"clamp_": (0.2, 0.5), "clip_": (0.2, 0.5)}.get(name, ())
    version = ours._version
    result = getattr(plugrad, name)(ours, *extra)
    assert result is ours
    assert ours._version == version + (name != "detach_")
    close(ours, getattr(torch, name)(theirs, *extra))


def test_in_place_function_keeps_the_methods_checks() -> None:
    leaf = plugrad.ones(2, requires_grad=True)
    with pytest.raises(Exception) as function_error:
        plugrad.sigmoid_(leaf)
    with pytest.raises(Exception) as method_error:
        leaf.sigmoid_()
    assert type(function_error.value) is type(method_error.value)
    x = plugrad.ones(2, requires_grad=True) * 1
    y = plugrad.exp(x)
    plugrad.exp_(y)
    with pytest.raises(InPlaceModificationError):
        y.sum().backward()
    with pytest.raises(ArgumentError, match="must be a Tensor"):
        plugrad.sigmoid_(3.0)


def test_in_place_function_gradients() -> None:
    a, ta = pair(3)
    y, ty = a * 1, ta * 1
    plugrad.tanh_(y)
    torch.tanh_(ty)
    check_grads(y, ty, [(a, ta)])


def test_in_place_functions_are_in_the_stub() -> None:
    text = (Path(plugrad.__file__).parent / "_api_plugrad.pyi").read_text()
    for name in ("sigmoid_", "clamp_", "xlogy_", "addmv_"):
        assert f"def {name}(input: Tensor" in text
        assert name in plugrad.__all__


# -- utilities -------------------------------------------------------------------------


def test_predicates() -> None:
    for dtype in ("uint8", "int32", "float32", "bool"):
        assert plugrad.is_signed(plugrad.zeros(1, dtype=getattr(plugrad, dtype))) == (
            torch.is_signed(torch.zeros(1, dtype=getattr(torch, dtype)))
        )
    x = plugrad.ones(2)
    assert (plugrad.is_conj(x), plugrad.is_neg(x), plugrad.is_inference(x)) == (False,) * 3
    assert plugrad.get_device(x) == torch.get_device(torch.ones(2)) == -1


def test_fill_and_other_in_place_names() -> None:
    x, tx = pair(2, 3)
    close(plugrad.fill(x, 4.0), torch.fill(tx, 4.0))
    assert plugrad.fill(x, 4.0).requires_grad == torch.fill(tx, 4.0).requires_grad == True  # noqa: E712
    v, tv = pair()
    ours, theirs = plugrad.fill(x, v), torch.fill(tx, tv)
    close(ours, theirs)
    check_grads(ours, theirs, [(v, tv), (x, tx)])  # x: zeros, as PyTorch's
    with pytest.raises(InvalidArgumentError, match="no dims"):
        plugrad.fill(x, plugrad.ones(2))
    y = plugrad.zeros(2, 2)
    assert plugrad.fill_(y, 2.0) is y and float(y.sum()) == 8.0
    plugrad.index_put_(y, (plugrad.tensor([0]),), plugrad.tensor(7.0), True)
    ty = torch.full((2, 2), 2.0)
    torch.index_put_(ty, (torch.tensor([0]),), torch.tensor(7.0), True)
    close(y, ty)
    z = plugrad.ones(3)
    close(
        plugrad.ldexp_(z, plugrad.tensor([1, 2, 3])),
        torch.ldexp_(torch.ones(3), torch.tensor([1, 2, 3])),
    )
    assert plugrad.resize_as_(plugrad.zeros(4), plugrad.zeros(2, 2)).shape == (2, 2)


def test_range_includes_end_and_warns() -> None:
    for args, kw in [
        ((0, 2), {}),
        ((0, 1, 0.25), {}),
        ((3, 0, -1), {}),
        ((0, 3), {"dtype": "int64"}),
    ]:
        kw_ours = {k: getattr(plugrad, v) for k, v in kw.items()}
        kw_theirs = {k: getattr(torch, v) for k, v in kw.items()}
        with pytest.warns(UserWarning, match="deprecated"):
            ours = plugrad.range(*args, **kw_ours)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = torch.range(*args, **kw_theirs)
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
        close(ours, theirs)
    with pytest.warns(UserWarning), pytest.raises(InvalidArgumentError):
        plugrad.range(0, 2, 0)


def test_deprecated_norms() -> None:
    x, tx = pair(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = [
            (plugrad.frobenius_norm(x, 1, True), torch.frobenius_norm(tx, 1, True)),
            (plugrad.frobenius_norm(x, (0, 1)), torch.frobenius_norm(tx, (0, 1))),
            (plugrad.nuclear_norm(x), torch.nuclear_norm(tx)),
            (plugrad.nuclear_norm(x, True), torch.nuclear_norm(tx, True)),
            (plugrad.nuclear_norm(x, (0, 1), False), torch.nuclear_norm(tx, (0, 1), False)),
        ]
    for ours, theirs in cases:
        close(ours, theirs)
    check_grads(sum(o.sum() for o, _ in cases), sum(t.sum() for _, t in cases), [(x, tx)])


def test_settings() -> None:
    plugrad.set_num_interop_threads(3)
    assert plugrad.get_num_interop_threads() == 3
    with pytest.raises(InvalidArgumentError):
        plugrad.set_num_interop_threads(0)
    assert plugrad.set_flush_denormal(True) is False
    assert plugrad.is_warn_always_enabled() is False
    plugrad.set_warn_always(True)
    assert plugrad.is_warn_always_enabled() is True
    plugrad.set_warn_always(False)
    with pytest.raises(ArgumentError):
        plugrad.set_warn_always(1)
