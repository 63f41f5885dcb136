"""Grad mode: no_grad, enable_grad, set_grad_enabled; thread-local."""

from __future__ import annotations

import threading

import pytest

import plugrad


@pytest.fixture
def x() -> plugrad.Tensor:
    return plugrad.tensor([1.0, 2.0], requires_grad=True)


def test_no_grad_context_manager(x) -> None:
    with plugrad.no_grad():
        y = x * 2
        assert not plugrad.is_grad_enabled()
    assert plugrad.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None


def test_no_grad_decorator(x) -> None:
    @plugrad.no_grad()
    def double(t):
        return t * 2

    assert double.__name__ == "double"
    assert not double(x).requires_grad
    assert plugrad.is_grad_enabled()


def test_enable_grad_inside_no_grad(x) -> None:
    with plugrad.no_grad():
        with plugrad.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad

    @plugrad.enable_grad()
    def f(t):
        return t * 2

    with plugrad.no_grad():
        assert f(x).requires_grad


def test_set_grad_enabled_as_function_context_and_decorator(x) -> None:
    plugrad.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        plugrad.set_grad_enabled(True)
    with plugrad.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad

    @plugrad.set_grad_enabled(False)
    def f(t):
        return t * 2

    assert plugrad.is_grad_enabled(), "decorating must not switch the mode"
    assert not f(x).requires_grad
    with pytest.raises(TypeError, match="bool"):
        plugrad.set_grad_enabled(0)


def test_mode_is_restored_after_an_exception(x) -> None:
    with pytest.raises(ZeroDivisionError):
        with plugrad.no_grad():
            raise ZeroDivisionError
    assert plugrad.is_grad_enabled()


def test_grad_mode_is_thread_local(x) -> None:
    seen = {}

    def worker() -> None:
        seen["enabled"] = plugrad.is_grad_enabled()
        seen["records"] = (x * 2).requires_grad

    with plugrad.no_grad():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
    assert seen == {"enabled": True, "records": True}


def test_a_generator_decorated_with_a_grad_mode_runs_in_it_at_every_resume() -> None:
    x = plugrad.tensor([1.0, 2.0], requires_grad=True)

    @plugrad.no_grad()
    def batches():
        received = yield x * 2
        yield plugrad.is_grad_enabled()
        return received

    outputs = batches()
    assert not next(outputs).requires_grad
    assert plugrad.is_grad_enabled()  # the caller's mode between resumes
    assert outputs.send("last") is False
    with pytest.raises(StopIteration) as stop:
        next(outputs)
    assert stop.value.value == "last"

    @plugrad.enable_grad
    def recorded():
        yield (x * 2).requires_grad

    with plugrad.no_grad():
        assert list(recorded()) == [True]
