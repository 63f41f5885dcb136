"""``nn.AdaptiveLogSoftmaxWithLoss`` against torch's, with torch's weights loaded."""

from __future__ import annotations

import numpy as np
import pytest

import plugrad
from plugrad import nn
from plugrad.errors import DtypeError, IndexOutOfRangeError, InvalidArgumentError, ShapeError

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(5)


def pair(in_features=64, n_classes=20, cutoffs=(4, 10, 15), **options):
    """Our layer and torch's, with torch's parameters (the same names) loaded into ours."""
    torch.manual_seed(0)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, list(cutoffs), **options)
    ours = nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, list(cutoffs), **options)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def close(ours, theirs) -> None:
    np.testing.assert_allclose(
        np.asarray(ours.detach()), theirs.detach().numpy(), rtol=1e-5, atol=1e-6
    )


def test_the_parameters_are_torchs() -> None:
    ours, theirs = pair(div_value=2.0, head_bias=True)
    names = [name for name, _ in theirs.named_parameters()]
    assert [name for name, _ in ours.named_parameters()] == names
    for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert tuple(p.shape) == tuple(q.shape)
    assert repr(ours) == repr(theirs)
    assert ours.cutoffs == theirs.cutoffs and ours.head_size == theirs.head_size


@pytest.mark.parametrize("head_bias", [False, True])
@pytest.mark.parametrize(
    "targets", [[0, 5, 11, 19, 3, 16], [1, 2, 3, 0, 2, 1], [17, 18, 19, 15, 16, 19]]
)
def test_output_loss_and_gradients_as_torch(head_bias, targets) -> None:
    ours, theirs = pair(head_bias=head_bias)
    x = RNG.standard_normal((len(targets), 64)).astype(np.float32)
    a, b = plugrad.asarray(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    result, expected = ours(a, plugrad.tensor(targets)), theirs(b, torch.tensor(targets))
    assert type(result).__name__ == "_ASMoutput" and result._fields == ("output", "loss")
    close(result.output, expected.output)
    close(result.loss, expected.loss)
    (result.loss + result.output[0]).backward()
    (expected.loss + expected.output[0]).backward()
    close(a.grad, b.grad)
    grads = dict(theirs.named_parameters())
    for name, parameter in ours.named_parameters():
        if grads[name].grad is None:  # a cluster no target falls in
            assert parameter.grad is None or not np.asarray(parameter.grad).any()
        else:
            close(parameter.grad, grads[name].grad)


def test_unbatched_input_and_target() -> None:
    ours, theirs = pair()
    x = RNG.standard_normal(64).astype(np.float32)
    for target in (2, 12):
        result = ours(plugrad.asarray(x), plugrad.tensor(target))
        expected = theirs(torch.tensor(x), torch.tensor(target))
        assert result.output.shape == () and result.loss.shape == ()
        close(result.output, expected.output)
        close(result.loss, expected.loss)


def test_log_prob_and_predict_as_torch() -> None:
    ours, theirs = pair(head_bias=True)
    x = RNG.standard_normal((64, 64)).astype(np.float32) * 3
    with torch.no_grad():  # a head that prefers some clusters, so both paths of predict run
        theirs.head.bias[4:] += 2.0
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    a, b = plugrad.asarray(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    log_prob, expected = ours.log_prob(a), theirs.log_prob(b)
    close(log_prob, expected)
    np.testing.assert_allclose(np.exp(np.asarray(log_prob.detach())).sum(1), 1.0, rtol=1e-5)
    log_prob[:, 7].sum().backward()
    expected[:, 7].sum().backward()
    close(a.grad, b.grad)
    predicted = theirs.predict(b)
    assert (predicted >= 4).any() and (predicted < 4).any()
    np.testing.assert_array_equal(np.asarray(ours.predict(a)), predicted.numpy())
    # unbatched (torch takes only batches there): the row of the batched result
    close(ours.log_prob(a[3]), expected[3])
    assert int(ours.predict(a[3])) == int(predicted[3])


@pytest.mark.parametrize(
    "cutoffs", [[], [0, 5], [5, 3], [4, 4], [4, 20], [4, 25], [-1, 4], [2.5, 4]]
)
def test_bad_cutoffs_are_refused_as_torch(cutoffs) -> None:
    with pytest.raises(ValueError):
        torch.nn.AdaptiveLogSoftmaxWithLoss(64, 20, cutoffs)
    with pytest.raises(InvalidArgumentError, match="cutoff"):
        nn.AdaptiveLogSoftmaxWithLoss(64, 20, cutoffs)


def test_targets_out_of_range_are_refused() -> None:
    ours, _ = pair()
    x = plugrad.asarray(RNG.standard_normal((3, 64)).astype(np.float32), requires_grad=True)
    for bad in ([0, 20, 3], [0, -1, 3]):
        with pytest.raises(IndexOutOfRangeError, match=r"\[0, 19\]"):
            ours(x, plugrad.tensor(bad))
    assert x.grad is None


def test_bad_shapes_and_dtypes_are_refused() -> None:
    ours, _ = pair()
    x = plugrad.asarray(RNG.standard_normal((3, 64)).astype(np.float32))
    with pytest.raises(ShapeError, match="batch size"):
        ours(x, plugrad.tensor([0, 1]))
    with pytest.raises(ShapeError, match="2-D input"):
        ours(x[0], plugrad.tensor([0]))
    with pytest.raises(ShapeError, match="1-D input"):
        ours(x, plugrad.tensor(0))
    with pytest.raises(ShapeError, match="0-d or 1-D"):
        ours(x, plugrad.tensor([[0, 1, 2]]))
    with pytest.raises(DtypeError, match="integer"):
        ours(x, plugrad.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(ShapeError, match="in_features"):
        ours.log_prob(plugrad.ones((2, 3, 64)))
