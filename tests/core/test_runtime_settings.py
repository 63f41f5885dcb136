"""The seeding and settings lines that open PyTorch scripts run, and do what they can."""

from __future__ import annotations

import pytest

import plugrad


def test_the_usual_opening_lines_run() -> None:
    # Each raised AttributeError: torch.cuda.manual_seed, torch.backends.cudnn, ...
    plugrad.manual_seed(0)
    plugrad.cuda.manual_seed(0)
    plugrad.cuda.manual_seed_all(0)  # without a GPU they do nothing, as PyTorch's
    plugrad.backends.cudnn.deterministic = True
    plugrad.backends.cudnn.benchmark = False
    assert plugrad.backends.cudnn.is_available() is False
    assert plugrad.backends.cudnn.version() is None
    assert plugrad.backends.mps.is_available() is False  # the device-picking line
    assert plugrad.backends.mps.is_built() is False
    before = plugrad.are_deterministic_algorithms_enabled()
    plugrad.use_deterministic_algorithms(True)
    assert plugrad.are_deterministic_algorithms_enabled()
    plugrad.use_deterministic_algorithms(before)
    plugrad.set_float32_matmul_precision("high")
    assert plugrad.get_float32_matmul_precision() == "high"
    plugrad.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError, match="highest, high, medium"):
        plugrad.set_float32_matmul_precision("fast")
    with pytest.raises(ValueError, match="seed"):
        plugrad.cuda.manual_seed(-1)


def test_the_number_of_threads_is_the_math_librarys() -> None:
    pytest.importorskip("threadpoolctl")
    import threadpoolctl

    original = threadpoolctl.threadpool_info()
    try:
        plugrad.set_num_threads(1)
        assert plugrad.get_num_threads() == 1
        assert all(pool["num_threads"] == 1 for pool in threadpoolctl.threadpool_info())
    finally:
        for pool in original:
            threadpoolctl.threadpool_limits(limits=pool["num_threads"], user_api=pool["user_api"])
        plugrad.runtime_settings._state.pop("threads", None)
    with pytest.raises(ValueError, match="at least 1"):
        plugrad.set_num_threads(0)
