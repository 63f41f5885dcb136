"""The CuPy kernels, where plugrad has a usable cupy backend (skipped elsewhere)."""

from __future__ import annotations

import numpy as np
import plugrad
import pytest


@pytest.fixture(scope="module")
def device():
    if "cupy" not in plugrad.registry.backend_names():
        pytest.skip("plugrad has no cupy backend here")
    try:
        return plugrad.registry.resolve_device("cupy")
    except plugrad.errors.BackendError as exc:
        pytest.skip(f"the cupy backend is not available: {exc}")


@pytest.mark.parametrize("dtype", [plugrad.float32, plugrad.float64])
def test_cupy_kernels_match_numpy(device, dtype) -> None:
    assert plugrad.plugins.kernel_source("softplus", "cupy").function.__module__.endswith("_cupy")
    x = np.linspace(-60, 60, 101)
    on_gpu = plugrad.asarray(x, dtype=dtype, device=device, requires_grad=True)
    y = plugrad.ops.softplus(on_gpu)
    assert y.device is device and y.dtype == dtype
    # against float64 results of the inputs as the GPU holds them (rounded to dtype)
    held = on_gpu.detach().numpy().astype(np.float64)
    np.testing.assert_allclose(y.detach().numpy(), np.logaddexp(held, 0), rtol=1e-6)
    plugrad.ops.smooth_max(y, on_gpu).sum().backward(create_graph=True)
    on_gpu.grad.sum().backward()
    with plugrad.plugins.checking():
        plugrad.ops.softplus(on_gpu)
        plugrad.ops.smooth_max(on_gpu, 2.0)
