"""plugrad.backends.cuda: PyTorch's torch.backends.cuda switches, set and read back as there.

The ``*_sdp`` switches are those of ``plugrad.nn.attention.sdpa_kernel``, one setting as in
PyTorch: each case here runs in both libraries and compares.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator

import numpy as np
import pytest

import plugrad
from plugrad.errors import ArgumentError, InvalidArgumentError, PlugradError

torch = pytest.importorskip("torch")

REDUCTIONS = ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")
SDP_KINDS = ("flash", "mem_efficient", "math", "cudnn")


def _switches(lib) -> dict[str, object]:
    matmul = lib.backends.cuda.matmul
    values: dict[str, object] = {
        "allow_tf32": matmul.allow_tf32,
        "allow_fp16_accumulation": matmul.allow_fp16_accumulation,
        "precision": lib.get_float32_matmul_precision(),
    }
    for name in REDUCTIONS:
        values[name] = getattr(matmul, name)
        values[f"{name}_split_k"] = getattr(matmul, f"{name}_split_k")
    for kind in SDP_KINDS:
        values[f"{kind}_sdp"] = getattr(lib.backends.cuda, f"{kind}_sdp_enabled")()
    return values


def _restore(lib, values: dict[str, object]) -> None:
    lib.set_float32_matmul_precision(values["precision"])
    matmul = lib.backends.cuda.matmul
    matmul.allow_fp16_accumulation = values["allow_fp16_accumulation"]
    for name in REDUCTIONS:
        setattr(matmul, name, (values[name], values[f"{name}_split_k"]))
    for kind in SDP_KINDS:
        getattr(lib.backends.cuda, f"enable_{kind}_sdp")(values[f"{kind}_sdp"])


@pytest.fixture(autouse=True)
def restored() -> Iterator[None]:
    """Both libraries' switches are process-wide: put them back after each test."""
    saved = {lib: _switches(lib) for lib in (plugrad, torch)}
    linalg = plugrad.backends.cuda.preferred_linalg_library()
    yield
    for lib, values in saved.items():
        _restore(lib, values)
    plugrad.backends.cuda.preferred_linalg_library(linalg)


def test_the_defaults_are_torchs() -> None:
    assert _switches(plugrad) == _switches(torch)
    assert _switches(plugrad)["allow_tf32"] is False
    assert plugrad.backends.cuda.is_built() is torch.backends.cuda.is_built() is False
    ours = plugrad.backends.cuda.preferred_linalg_library()
    assert ours.name == torch.backends.cuda.preferred_linalg_library().name == "Default"


@pytest.mark.parametrize(
    "steps",
    [
        [("precision", "high")],
        [("precision", "high"), ("precision", "highest")],
        [("allow_tf32", True)],
        [("allow_tf32", True), ("allow_tf32", False)],
        [("precision", "high"), ("allow_tf32", True)],
        [("allow_tf32", True), ("allow_tf32", True), ("precision", "highest")],
    ],
)
def test_allow_tf32_is_the_float32_matmul_precision_as_in_torch(steps) -> None:
    seen = {}
    for lib in (plugrad, torch):
        for what, value in steps:
            if what == "precision":
                lib.set_float32_matmul_precision(value)
            else:
                lib.backends.cuda.matmul.allow_tf32 = value
        seen[lib] = (lib.backends.cuda.matmul.allow_tf32, lib.get_float32_matmul_precision())
    assert seen[plugrad] == seen[torch]


@pytest.mark.parametrize("value", ["x", 1, 0, None])
def test_allow_tf32_takes_only_a_bool_and_keeps_its_value(value) -> None:
    with pytest.raises(RuntimeError, match="expects a bool"):
        torch.backends.cuda.matmul.allow_tf32 = value
    # (PyTorch's is a RuntimeError; a wrong type is a TypeError here, as plugrad's flags)
    with pytest.raises(ArgumentError, match=r"matmul\.allow_tf32 must be True or False"):
        plugrad.backends.cuda.matmul.allow_tf32 = value
    assert plugrad.backends.cuda.matmul.allow_tf32 is False
    assert plugrad.get_float32_matmul_precision() == "highest"


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("value", [False, True, (False,), [True], (False, False), (True, True)])
def test_a_reduction_switch_reads_back_as_torchs(name, value) -> None:
    seen = {}
    for lib in (plugrad, torch):
        setattr(lib.backends.cuda.matmul, name, value)
        matmul = lib.backends.cuda.matmul
        seen[lib] = (getattr(matmul, name), getattr(matmul, f"{name}_split_k"))
    assert seen[plugrad] == seen[torch]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize(
    "value, error",
    [
        ("x", TypeError),
        (1, TypeError),
        (None, TypeError),
        ((), TypeError),
        ((1,), TypeError),
        ((True, True, True), TypeError),
        ([True, "x"], TypeError),
        ((True, False), RuntimeError),  # split-K refused with reduced precision allowed
    ],
)
def test_a_reduction_switch_refuses_what_torch_refuses(name, value, error) -> None:
    setattr(plugrad.backends.cuda.matmul, name, (False, False))
    with pytest.raises(error):
        setattr(torch.backends.cuda.matmul, name, value)
    with pytest.raises(error) as raised:
        setattr(plugrad.backends.cuda.matmul, name, value)
    assert isinstance(raised.value, ArgumentError | InvalidArgumentError)
    assert getattr(plugrad.backends.cuda.matmul, name) is False  # unchanged


def test_allow_fp16_accumulation_is_kept_and_checked() -> None:
    for lib in (plugrad, torch):
        lib.backends.cuda.matmul.allow_fp16_accumulation = True
        assert lib.backends.cuda.matmul.allow_fp16_accumulation is True
    with pytest.raises(ArgumentError):
        plugrad.backends.cuda.matmul.allow_fp16_accumulation = 1
    assert plugrad.backends.cuda.matmul.allow_fp16_accumulation is True


@pytest.mark.parametrize(
    "name", ["allow_tf33", "fp16_reduced_precision", f"{REDUCTIONS[0]}_split_k"]
)
def test_unknown_matmul_attributes_raise_attribute_error_as_in_torch(name) -> None:
    for lib in (plugrad, torch):
        with pytest.raises(AttributeError):
            setattr(lib.backends.cuda.matmul, name, True)
    if not name.endswith("split_k"):  # (which is read only)
        for lib in (plugrad, torch):
            with pytest.raises(AttributeError):
                getattr(lib.backends.cuda.matmul, name)
    assert not hasattr(plugrad.backends.cuda.matmul, "allow_tf33")


@pytest.mark.parametrize("kind", SDP_KINDS)
def test_the_sdp_switches_read_back_as_torchs(kind) -> None:
    for enabled in (False, True, False):
        for lib in (plugrad, torch):
            getattr(lib.backends.cuda, f"enable_{kind}_sdp")(enabled)
        assert _switches(plugrad) == _switches(torch)
    with pytest.raises(RuntimeError, match="expects a bool"):
        getattr(torch.backends.cuda, f"enable_{kind}_sdp")(1)
    with pytest.raises(ArgumentError, match="must be True or False"):
        getattr(plugrad.backends.cuda, f"enable_{kind}_sdp")(1)
    assert getattr(plugrad.backends.cuda, f"{kind}_sdp_enabled")() is False


# -- the sdp switches are sdpa_kernel's: one setting, as in PyTorch -------------------------

KERNEL_LISTS = [
    ["MATH"],
    ["FLASH_ATTENTION"],
    ["EFFICIENT_ATTENTION", "CUDNN_ATTENTION"],
    ["OVERRIDEABLE"],
    ["ERROR"],
    [],
    ["MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "OVERRIDEABLE"],
]


def _kernel(lib, names: list[str]):
    """``lib``'s ``sdpa_kernel`` of the members ``names``."""
    attention = lib.nn.attention
    return attention.sdpa_kernel([getattr(attention.SDPBackend, name) for name in names])


def _sdp(lib) -> dict[str, object]:
    return {kind: getattr(lib.backends.cuda, f"{kind}_sdp_enabled")() for kind in SDP_KINDS}


@pytest.mark.parametrize("names", KERNEL_LISTS, ids=lambda names: "+".join(names) or "none")
@pytest.mark.parametrize("flash_before", [True, False])
def test_sdpa_kernel_sets_the_sdp_switches_and_restores_them_as_torchs(names, flash_before):
    for lib in (plugrad, torch):
        lib.backends.cuda.enable_flash_sdp(flash_before)
    before = _sdp(torch)
    with _kernel(plugrad, names), _kernel(torch, names):
        assert _sdp(plugrad) == _sdp(torch)
    assert _sdp(plugrad) == _sdp(torch) == before


def test_inside_a_math_block_flash_is_disabled_as_in_torch():
    for lib in (plugrad, torch):
        with lib.nn.attention.sdpa_kernel(lib.nn.attention.SDPBackend.MATH):
            assert lib.backends.cuda.flash_sdp_enabled() is False
            assert lib.backends.cuda.math_sdp_enabled() is True
        assert lib.backends.cuda.flash_sdp_enabled() is True


def test_switches_set_inside_blocks_are_undone_on_leaving_and_blocks_nest_as_in_torch():
    seen: dict[object, list[dict[str, object]]] = {}
    for lib in (plugrad, torch):
        steps = seen[lib] = []
        lib.backends.cuda.enable_cudnn_sdp(False)
        with _kernel(lib, ["MATH", "FLASH_ATTENTION"]):
            lib.backends.cuda.enable_mem_efficient_sdp(True)
            lib.backends.cuda.enable_math_sdp(False)
            steps.append(_sdp(lib))
            with _kernel(lib, ["CUDNN_ATTENTION"]):
                lib.backends.cuda.enable_flash_sdp(True)
                steps.append(_sdp(lib))
            steps.append(_sdp(lib))
        steps.append(_sdp(lib))
    assert seen[plugrad] == seen[torch]
    assert seen[plugrad][-1] == {"flash": True, "mem_efficient": True, "math": True, "cudnn": False}


def _attend(lib, query, key, value, **options):
    """``lib``'s attention of the arrays, or the RuntimeError it raised."""
    as_tensor = plugrad.tensor if lib is plugrad else torch.from_numpy
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # PyTorch's why-not-flash warnings
            return lib.nn.functional.scaled_dot_product_attention(
                as_tensor(query), as_tensor(key), as_tensor(value), **options
            )
    except RuntimeError as error:
        return error


RNG = np.random.default_rng(5)
Q4 = RNG.standard_normal((2, 3, 4, 8))
CALLS = {
    "4-d": (Q4, Q4, Q4, {}),
    "3-d": (Q4[0], Q4[0], Q4[0], {}),
    "dropout": (Q4, Q4, Q4, {"dropout_p": 0.5}),
    "causal": (Q4, Q4, Q4, {"is_causal": True}),
    "grouped heads": (RNG.standard_normal((2, 6, 4, 8)), Q4, Q4, {"enable_gqa": True}),
}


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize(
    "off", [(), ("math",), ("math", "flash"), ("math", "mem_efficient", "cudnn"), ("flash",)]
)
def test_the_sdp_switches_decide_which_calls_raise_as_on_torchs_cpu(off, call):
    for lib in (plugrad, torch):
        for kind in off:
            getattr(lib.backends.cuda, f"enable_{kind}_sdp")(False)
    query, key, value, options = CALLS[call]
    ours = _attend(plugrad, query, key, value, **options)
    theirs = _attend(torch, query, key, value, **options)
    if isinstance(theirs, RuntimeError):
        assert isinstance(ours, InvalidArgumentError), ours
        # the error names the kernels still enabled (PyTorch's fifth, OVERRIDEABLE, too)
        names = {"flash": "FLASH_ATTENTION", "mem_efficient": "EFFICIENT_ATTENTION"}
        names |= {"cudnn": "CUDNN_ATTENTION", "math": "MATH"}
        enabled = {name for kind, name in names.items() if kind not in off} | {"OVERRIDEABLE"}
        assert ", ".join(sorted(enabled)) in str(ours), ours
        assert "SDPBackend.MATH" in str(ours)  # how to run it
        return
    assert not isinstance(ours, Exception), ours
    if "dropout_p" not in options:  # (the libraries draw different dropout masks)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


def test_math_enabled_again_runs_what_was_refused():
    q = plugrad.ones(3, 4)
    plugrad.backends.cuda.enable_math_sdp(False)
    with pytest.raises(InvalidArgumentError, match="FLASH_ATTENTION"):
        plugrad.nn.functional.scaled_dot_product_attention(q, q, q)  # 3-d: not flash's
    with plugrad.nn.attention.sdpa_kernel(plugrad.nn.attention.SDPBackend.MATH):
        plugrad.nn.functional.scaled_dot_product_attention(q, q, q)
    with pytest.raises(InvalidArgumentError):
        plugrad.nn.functional.scaled_dot_product_attention(q, q, q)  # restored: off again
    plugrad.backends.cuda.enable_math_sdp(True)
    plugrad.nn.functional.scaled_dot_product_attention(q, q, q)


def test_the_switches_are_process_wide_as_torchs():
    # PyTorch's flags are global: a block entered in one thread is seen in the others.
    seen: dict[object, object] = {}
    for lib in (plugrad, torch):
        entered, leave = threading.Event(), threading.Event()

        def worker(lib=lib, entered=entered, leave=leave) -> None:
            with _kernel(lib, ["MATH"]):
                entered.set()
                leave.wait(10)

        thread = threading.Thread(target=worker)
        thread.start()
        entered.wait(10)
        seen[lib] = [_sdp(lib)]
        leave.set()
        thread.join()
        seen[lib].append(_sdp(lib))
    assert seen[plugrad] == seen[torch]
    assert seen[plugrad][0]["flash"] is False


def test_preferred_linalg_library_keeps_a_known_name() -> None:
    assert plugrad.backends.cuda.preferred_linalg_library("default").name == "Default"
    assert torch.backends.cuda.preferred_linalg_library("default").name == "Default"
    # (PyTorch built without CUDA refuses cusolver; the preference is kept here, unused)
    chosen = plugrad.backends.cuda.preferred_linalg_library("cusolver")
    assert chosen.name == "Cusolver"
    assert plugrad.backends.cuda.preferred_linalg_library() is chosen
    assert plugrad.backends.cuda.preferred_linalg_library(chosen) is chosen
    for bad in ("cublas", 3):
        with pytest.raises(RuntimeError, match="Unknown input"):
            torch.backends.cuda.preferred_linalg_library(bad)
        with pytest.raises(PlugradError, match="preferred_linalg_library"):
            plugrad.backends.cuda.preferred_linalg_library(bad)
    with pytest.raises(InvalidArgumentError, match="default, cusolver, magma"):
        plugrad.backends.cuda.preferred_linalg_library("cublas")
    assert plugrad.backends.cuda.preferred_linalg_library() is chosen  # unchanged
