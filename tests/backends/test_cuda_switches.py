"""plugrad.backends.cuda: PyTorch's torch.backends.cuda switches, set and read back as there.

Each test was an AttributeError before: plugrad.backends had no ``cuda``.
"""

from __future__ import annotations

from collections.abc import Iterator

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


def test_the_sdp_switches_do_not_reach_plugrads_one_kernel() -> None:
    # PyTorch's CPU raises with both its CPU kernels off; plugrad computes the math form
    # whatever these say (see the module's note): the result is PyTorch's, computed with
    # its kernels on.
    q = torch.arange(16, dtype=torch.float64).reshape(1, 1, 4, 4) / 10
    expected = torch.nn.functional.scaled_dot_product_attention(q, q, q)
    for lib in (plugrad, torch):
        lib.backends.cuda.enable_math_sdp(False)
        lib.backends.cuda.enable_flash_sdp(False)
    with pytest.raises(RuntimeError):
        torch.nn.functional.scaled_dot_product_attention(q, q, q)
    ours = plugrad.tensor(q.numpy())
    result = plugrad.nn.functional.scaled_dot_product_attention(ours, ours, ours)
    plugrad.testing.assert_close(result, plugrad.tensor(expected.numpy()))


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
