"""Shared fixtures: tensors on the default device, backends, and gradient checks."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

if importlib.util.find_spec("jax") is not None:
    # The suites check gradients in float64, which JAX has only with 64-bit types on;
    # set before plugrad first uses the jax backend (its dtypes are read then), and in the
    # environment for the processes tests start (DataLoader workers).
    os.environ["JAX_ENABLE_X64"] = "1"
    import jax

    jax.config.update("jax_enable_x64", True)


from parts import in_part, parse_part

import plugrad
from plugrad.testing import backends_left_out, backends_under_test

# Random-program tests without their own ``@settings(max_examples=...)`` run this many
# programs: bounded, the same ones each run, so CI stays fast and reproducible. The
# "thorough" profile (PLUGRAD_HYPOTHESIS_PROFILE=thorough, or pytest's
# --hypothesis-profile=thorough) runs many more, freshly drawn each time.
settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("PLUGRAD_HYPOTHESIS_PROFILE", "ci"))

Program = Callable[..., plugrad.Tensor]


def on_default(array: np.ndarray, **kwargs: object) -> plugrad.Tensor:
    """A tensor on the default device (``PLUGRAD_BACKEND`` / ``use_backend``) from NumPy data."""
    return plugrad.asarray(array, device=plugrad.default_device(), **kwargs)


@pytest.fixture
def on_numpy() -> Iterator[plugrad.backend.Device]:
    """Make numpy the default device, for tests about machinery rather than backends."""
    with plugrad.use_backend("numpy") as device:
        yield device


_SUITE_GAPS = Path(__file__).parent / "backends" / "suite_gaps.txt"


def _suite_gaps() -> dict[str, str]:
    """``{path::test id: why}`` for the default backend, from tests/backends/suite_gaps.txt."""
    default = os.environ.get("PLUGRAD_BACKEND", "numpy").split(":")[0]
    gaps = {}
    for line in _SUITE_GAPS.read_text().splitlines():
        if line and not line.startswith("#"):
            backend, test, reason = line.split("\t", 2)
            if backend in ("*", default):
                gaps[test] = reason
    return gaps


def _part() -> tuple[int, int] | None:
    return parse_part(os.environ.get("PLUGRAD_TEST_PART"))


# The ids of the tests that passed (or xfailed) in the last run, in pytest's cache: the
# second of two runs, the first without an optional dependency (torch), passes
# --skip-passed-last-run to run only what the first skipped or did not collect.
_PASSED_KEY = "plugrad/passed-last-run"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--skip-passed-last-run",
        action="store_true",
        help="leave out the tests that passed in the last run of this checkout (kept in "
        "pytest's cache): after a run without an optional dependency, runs what it skipped "
        "or did not collect",
    )


def pytest_configure(config: pytest.Config) -> None:
    _part()  # a malformed PLUGRAD_TEST_PART stops the run before collection
    if config.getoption("--skip-passed-last-run") and getattr(config, "cache", None) is None:
        raise pytest.UsageError(
            "--skip-passed-last-run reads pytest's cache: drop -p no:cacheprovider"
        )


_PASSED: set[str] = set()  # this run's


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and (report.passed or hasattr(report, "wasxfail")):
        _PASSED.add(report.nodeid)


def _leave_out_passed(config: pytest.Config, items: list[pytest.Item]) -> None:
    passed = set(config.cache.get(_PASSED_KEY, []))
    if not passed:
        raise pytest.UsageError(
            "--skip-passed-last-run: pytest's cache holds no passed tests; run pytest without "
            "the option first"
        )
    left_out = [item for item in items if item.nodeid in passed]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item.nodeid not in passed]


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    rerun = config.getoption("--skip-passed-last-run")
    if getattr(config, "cache", None) is not None and not rerun:
        config.cache.set(_PASSED_KEY, sorted(_PASSED))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--skip-passed-last-run"):
        _leave_out_passed(config, items)
    part = _part()
    if part is not None:
        # By a hash of the test's id: the same parts on every run, each test in one of them.
        left_out = [item for item in items if not in_part(item.nodeid, part)]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            dropped = {id(item) for item in left_out}
            items[:] = [item for item in items if id(item) not in dropped]
    gaps = _suite_gaps()
    root = Path(__file__).parent
    for item in items:
        try:
            where = item.path.relative_to(root).as_posix()
        except ValueError:
            continue
        reason = gaps.get(f"{where}::{item.name}")
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


def pytest_report_header() -> str:
    line = f"op tables and backend fixtures run on: {', '.join(backends_under_test())}"
    left_out = backends_left_out()
    if left_out:
        line += f" (also installed: {', '.join(left_out)}; PLUGRAD_TEST_BACKENDS=all runs them)"
    part = _part()
    if part is not None:
        line += f"\nPLUGRAD_TEST_PART: part {part[0]} of {part[1]} of the selected tests"
    return line


@pytest.fixture(params=backends_under_test())
def backend(request: pytest.FixtureRequest) -> Iterator[plugrad.backend.Device]:
    """Run a test once per available backend, with it as the default device."""
    with plugrad.use_backend(request.param) as device:
        yield device


def _weights(shape: tuple[int, ...], seed: int) -> np.ndarray:
    # Fixed, distinct weights: every output element contributes differently.
    return np.random.default_rng(seed).uniform(0.5, 1.5, size=shape)


def first_gradients(f: Program, arrays: Sequence[np.ndarray], **backward: bool) -> list:
    """Leaves and their gradients of ``sum(f(*arrays) * weights)`` by plugrad's backward."""
    leaves = [on_default(np.array(a), requires_grad=True) for a in arrays]
    out = f(*leaves)
    out.backward(on_default(_weights(out.shape, 7)), **backward)
    return leaves


@pytest.fixture
def check_gradients() -> Callable[..., None]:
    """``check(f, *inputs)``: ``plugrad.autograd.gradcheck`` of ``f`` at float64 ``inputs``.

    Also checks that a float64 gradient reaches every input.
    """

    def check(f: Program, *inputs: np.ndarray, rtol: float = 1e-5, atol: float = 1e-6) -> None:
        leaves = [on_default(np.asarray(a, dtype=np.float64), requires_grad=True) for a in inputs]
        for index, leaf in enumerate(first_gradients(f, [x.detach().numpy() for x in leaves])):
            assert leaf.grad is not None, f"no gradient reached input {index}"
            assert leaf.grad.dtype == plugrad.float64
        plugrad.autograd.gradcheck(f, leaves, atol=atol, rtol=rtol)

    return check


@pytest.fixture
def check_double_backward() -> Callable[..., None]:
    """``check(f, *inputs)``: ``plugrad.autograd.gradgradcheck`` of ``f`` at float64 ``inputs``."""

    def check(f: Program, *inputs: np.ndarray, rtol: float = 1e-4, atol: float = 1e-5) -> None:
        leaves = [on_default(np.asarray(a, dtype=np.float64), requires_grad=True) for a in inputs]
        plugrad.autograd.gradgradcheck(f, leaves, atol=atol, rtol=rtol, eps=1e-5)

    return check
