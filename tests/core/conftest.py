"""Fixtures for tests that register plugins: clean-up, registry snapshots, fake distributions."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import plugrad
from plugrad import registry
from plugrad.errors import BackendError
from plugrad.hookspecs import hookimpl


def make_plugin(ops=(), kernels=(), *, tryfirst: bool = False, trylast: bool = False) -> Any:
    """A plugin object whose plugrad_ops()/plugrad_kernels() return the given declarations."""
    plugin = types.SimpleNamespace()
    if ops:
        plugin.plugrad_ops = hookimpl(lambda: list(ops))
    if kernels:
        marker = hookimpl(tryfirst=tryfirst, trylast=trylast)
        plugin.plugrad_kernels = marker(lambda: list(kernels))
    return plugin


@pytest.fixture(params=["numpy", "torch", "jax", "dask", "array_api_strict"])
def installed_backend(request: pytest.FixtureRequest) -> str:
    """Each built-in backend's name; the test is skipped where its library is not installed."""
    try:
        registry.resolve_device(request.param)
    except BackendError:
        pytest.skip(f"{request.param} is not installed")
    return request.param


@pytest.fixture
def plugin() -> Callable[..., Any]:
    """``plugin(ops=(...), kernels=(...), tryfirst=..., trylast=...)``: a plugin object."""
    return make_plugin


@pytest.fixture
def registered() -> Iterator[Callable[..., str]]:
    """``registered(plugin, name)``: register through the public API, unregister afterwards."""
    names: list[str] = []

    def register(plugin: object, name: str) -> str:
        names.append(plugrad.plugins.register(plugin, name=name))
        return names[-1]

    yield register
    for name in reversed(names):
        if registry._state.manager.has_plugin(name):
            plugrad.plugins.unregister(name)


def registry_snapshot() -> dict[str, Any]:
    """Everything a registration can change, in comparable form."""
    state = registry._state
    device = plugrad.ones(1).device
    return {
        "plugins": [name for name, _ in state.manager.list_name_plugin()],
        "failures": dict(state.failures),
        "distributions": dict(state.distributions),
        # Each rebuild asks plugrad_backends() again, which may return new, equal objects.
        "backends": {name: type(b) for name, b in state.backends.items()},
        "ops": dict(state.ops),
        "op_owners": dict(state.op_owners),
        "overrides": dict(state.overrides),
        "kernels": dict(device.kernels),
        "xp": sorted(vars(device.xp)),
        "sources": {b: dict(s) for b, s in state.kernel_sources.items()},
        "plugrad.ops": sorted(vars(plugrad.ops)),
        # Submodules imported on first use (plugrad.plugin_control, ...) are not registry state.
        "plugrad": sorted(
            k for k, v in vars(plugrad).items() if not isinstance(v, types.ModuleType)
        ),
        "tensor": sorted(vars(plugrad.Tensor)),
        "methods": dict(state.methods),
        "rules": {name: op.vjps for name, op in state.ops.items()},
    }


@pytest.fixture
def snapshot() -> Callable[[], dict[str, Any]]:
    return registry_snapshot


def plugrad_still_works() -> None:
    """Built-in ops, autograd and double backward, end to end."""
    x = plugrad.tensor([1.0, 2.0], dtype=plugrad.float64, requires_grad=True)
    w = plugrad.tensor([[0.5, -1.0], [2.0, 1.0]], dtype=plugrad.float64)
    loss = plugrad.sum(plugrad.exp(w @ x) * x)
    loss.backward(create_graph=True)
    first = x.grad
    assert first is not None and first.shape == (2,)
    x.grad = None
    first.sum().backward()
    assert x.grad is not None


@pytest.fixture
def still_works() -> Callable[[], None]:
    return plugrad_still_works


@pytest.fixture
def fake_distribution(tmp_path: Path) -> Callable[..., Path]:
    """``fake_distribution(name, version, entry_points, modules, root="site")``: an
    installed-looking distribution in ``tmp_path / root`` (put that on ``PYTHONPATH``).
    ``entry_points`` maps entry-point names to ``module[:attr]``; ``modules`` maps module
    file names to their source."""

    def make(
        name: str,
        version: str,
        entry_points: dict[str, str],
        modules: dict[str, str],
        root: str = "site",
    ) -> Path:
        directory = tmp_path / root
        directory.mkdir(exist_ok=True)
        for filename, source in modules.items():
            (directory / filename).write_text(source)
        info = directory / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        lines = "".join(f"{ep} = {target}\n" for ep, target in entry_points.items())
        (info / "entry_points.txt").write_text(f"[plugrad]\n{lines}")
        return directory

    return make


def run_python(
    code: str, *paths: Path, args: tuple[str, ...] | None = None, **env: str
) -> subprocess.CompletedProcess:
    """Run ``code`` (or ``python args...`` if ``args`` is given) in a fresh interpreter
    with ``paths`` on PYTHONPATH, plugrad's environment variables cleared, and ``env`` set."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PLUGRAD_")}
    environment.pop("PYTHONWARNINGS", None)
    environment["PYTHONPATH"] = os.pathsep.join(map(str, paths))
    environment.update(env)
    command = [sys.executable, *(args if args is not None else ("-c", code))]
    return subprocess.run(command, capture_output=True, text=True, env=environment, timeout=120)


@pytest.fixture
def python() -> Callable[..., subprocess.CompletedProcess]:
    """``python(code, *paths, args=None, **env)``: run code in a fresh interpreter."""
    return run_python
