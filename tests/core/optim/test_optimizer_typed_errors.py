"""Typed errors of optimizer steps given what they cannot use: a group's lr set to None, an
LBFGS closure that returns no loss. Each is refused before the optimizer's state changes."""

from __future__ import annotations

import pytest

import plugrad
from plugrad.errors import ArgumentError, InvalidArgumentError, PlugradError

torch = pytest.importorskip("torch")

OPTIMIZERS = [
    "SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Rprop", "ASGD", "LBFGS", "Adafactor", "Muon",
]  # fmt: skip


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_a_group_lr_of_none_is_refused_before_any_state_is_made(name: str) -> None:
    # SGD, Adam... raised TypeError from the update (Adam after making the state), LBFGS
    # from float(None); as PyTorch's, a TypeError still.
    w = plugrad.nn.Parameter(plugrad.tensor([[1.0, -2.0]]))  # (a matrix: Muon takes those only)
    opt = getattr(plugrad.optim, name)([w], lr=0.1)
    (w * w).sum().backward()
    state_before = {k: dict(v) for k, v in opt.state.items()}
    opt.param_groups[0]["lr"] = None
    closure = lambda: (w * w).sum()
    with pytest.raises(ArgumentError, match=r"param_groups\[0\]\['lr'\] is None") as error:
        opt.step(closure)
    assert isinstance(error.value, TypeError)
    assert {k: dict(v) for k, v in opt.state.items()} == state_before
    assert w.tolist() == [[1.0, -2.0]]


@pytest.mark.parametrize(
    ("returned", "error", "builtin"),
    [("loss", InvalidArgumentError, ValueError), (None, ArgumentError, TypeError)],
)
def test_an_lbfgs_closure_that_returns_no_loss_is_refused(returned, error, builtin) -> None:
    # It raised a plain ValueError (TypeError for None) from float(), as PyTorch's does,
    # after counting the step.
    results = []
    for lib in (plugrad, torch):
        w = lib.nn.Parameter(lib.tensor([1.0, -2.0]))
        opt = lib.optim.LBFGS([w])

        def closure(lib=lib, w=w, opt=opt):
            opt.zero_grad()
            (w * w).sum().backward()
            return returned

        with pytest.raises(builtin) as raised:
            opt.step(closure)
        results.append((w.tolist(), raised.value))
        if lib is plugrad:
            assert isinstance(raised.value, (error, PlugradError))
            assert type(raised.value) is error
            assert "the closure returned" in str(raised.value)
            assert not opt.state and opt._step_count == 0
    assert results[0][0] == results[1][0] == [1.0, -2.0]


def test_sparse_adam_is_absent_and_says_why() -> None:
    # plugrad.optim.SparseAdam was a bare "has no attribute" error.
    assert not hasattr(plugrad.optim, "SparseAdam")
    with pytest.raises(AttributeError, match=r"no sparse gradients.*plugrad\.optim\.Adam"):
        plugrad.optim.SparseAdam  # noqa: B018
    with pytest.raises(AttributeError, match="has no attribute 'Sparse'"):
        plugrad.optim.Sparse  # noqa: B018
