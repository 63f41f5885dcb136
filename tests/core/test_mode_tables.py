"""Modes reach the per-op path through its recorder table and their own listeners."""

from __future__ import annotations

import plugrad
from plugrad import checking, dispatch
from plugrad.tensor import Tensor


def recorders_in_use() -> dispatch.Recorders:
    previous = dispatch.use_recorders(dispatch.PLAIN_RECORDERS)
    dispatch.use_recorders(previous)
    return previous


def test_anomaly_mode_swaps_the_recorders_and_puts_the_plain_ones_back() -> None:
    assert recorders_in_use() == dispatch.PLAIN_RECORDERS
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    with plugrad.autograd.detect_anomaly():
        inside = recorders_in_use()
        y = plugrad.exp(x)
    assert inside != dispatch.PLAIN_RECORDERS
    assert y.grad_fn._trace, "the node notes where in user code it was made"
    assert recorders_in_use() == dispatch.PLAIN_RECORDERS
    assert not hasattr(plugrad.exp(x).grad_fn, "_trace")


def test_a_recorder_table_records_every_node_until_swapped_back() -> None:
    seen = []

    def noting(record):
        def note(op, *args):
            seen.append(op.name)
            return record(op, *args)

        return note

    x = plugrad.tensor([1.0, 2.0], requires_grad=True)
    previous = dispatch.use_recorders(dispatch.Recorders(*map(noting, dispatch.PLAIN_RECORDERS)))
    try:
        y = (x * 2.0).sum()
    finally:
        dispatch.use_recorders(previous)
    assert seen == ["multiply", "sum"]
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]
    plugrad.exp(x)
    assert seen == ["multiply", "sum"]


def test_checking_mode_tells_its_listeners_each_switch(monkeypatch) -> None:
    calls = []
    monkeypatch.setattr(checking, "_listeners", [*checking._listeners, lambda: calls.append(1)])
    with checking.checking():
        assert checking.checks_enabled()
    assert calls == [1, 1]
    assert not checking.checks_enabled()


def test_methods_of_higher_layers_are_plain_attributes_of_the_class() -> None:
    for name, module in [
        ("backward", "plugrad.engine"),
        ("__iadd__", "plugrad.inplace"),
        ("__setitem__", "plugrad.inplace"),
        ("new_zeros", "plugrad.creation"),
        ("to", "plugrad.transfer"),
        ("__reduce_ex__", "plugrad.pickling"),
    ]:
        method = Tensor.__dict__[name]
        assert method.__module__ == module
        assert method.__qualname__ == f"Tensor.{name}"
