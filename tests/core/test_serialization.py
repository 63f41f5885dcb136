"""plugrad.save / plugrad.load: safetensors files, exact round trips across backends,
compatibility with other safetensors readers and writers, and errors that write nothing."""

from __future__ import annotations

import io
import math
import os
import pickle
import re
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import safetensors
import safetensors.numpy

import plugrad
from plugrad.errors import DtypeError, SerializationError

BACKENDS = plugrad.backends.available()
ALL_DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
]  # fmt: skip


def sample(dtype: str, shape: tuple[int, ...] = (2, 3)) -> np.ndarray:
    """Values that use the dtype's range: extremes, negatives, fractions."""
    np_dtype = np.dtype(dtype)
    count = math.prod(shape)
    if np_dtype.kind == "b":
        values = np.arange(count) % 3 == 0
    elif np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        values = np.array([info.min, info.max, 0, 1, info.min // 3, info.max // 7], np_dtype)
        values = np.resize(values, count)
    elif np_dtype.kind == "f":
        values = np.array([-0.0, np.inf, -np.inf, 1.5e-3, np.finfo(np_dtype).max, -7.25])
        values = np.resize(values, count).astype(np_dtype)
    else:
        values = np.resize(np.array([1.5 - 2j, -0.0 + np.inf * 1j, 3e-5 + 0j]), count)
        values = values.astype(np_dtype)
    return values.reshape(shape)


def supports(device: plugrad.backend.Device, dtype: str) -> bool:
    return getattr(plugrad, dtype) in device.dtypes


def assert_same(loaded: plugrad.Tensor, expected: np.ndarray) -> None:
    assert isinstance(loaded, plugrad.Tensor)
    assert loaded.dtype == getattr(plugrad, expected.dtype.name)
    assert loaded.shape == expected.shape
    # Bit-for-bit (NaN-safe, and -0.0 differs from 0.0).
    assert loaded.numpy().tobytes() == np.ascontiguousarray(expected).tobytes()


@pytest.mark.parametrize("target", BACKENDS)
@pytest.mark.parametrize("source", BACKENDS)
def test_every_dtype_round_trips_exactly_between_backends(source, target, tmp_path) -> None:
    with plugrad.use_backend(source) as source_device:
        dtypes = [d for d in ALL_DTYPES if supports(source_device, d)]
        saved = {d: plugrad.asarray(sample(d)) for d in dtypes}
        saved["scalar"] = plugrad.asarray(np.float64(2.5))
        saved["empty"] = plugrad.zeros((0, 3))
    plugrad.save(saved, tmp_path / "all.safetensors")
    with plugrad.use_backend(target) as target_device:
        usable = [d for d in dtypes if supports(target_device, d)]
    if len(usable) < len(dtypes):
        with pytest.raises(DtypeError, match="load it on another backend"):
            plugrad.load(tmp_path / "all.safetensors", backend=target)
        for d in set(dtypes) - set(usable):
            del saved[d]
        plugrad.save(saved, tmp_path / "all.safetensors")
    loaded = plugrad.load(tmp_path / "all.safetensors", backend=target)
    assert list(loaded) == list(saved)
    for d in usable:
        assert_same(loaded[d], sample(d))
        assert loaded[d].device is target_device
    assert_same(loaded["scalar"], np.float64(2.5).reshape(()))
    assert loaded["empty"].shape == (0, 3)


def test_load_puts_tensors_on_the_default_device_or_the_one_asked_for(tmp_path) -> None:
    path = tmp_path / "t.safetensors"
    plugrad.save(plugrad.arange(3), path)
    with plugrad.use_backend("array_api_strict:1") as device:
        assert plugrad.load(path).device is device
    assert plugrad.load(path, device="array_api_strict:2").device.name == "array_api_strict:2"
    assert plugrad.load(path, backend="numpy").device.name == "numpy"
    with pytest.raises(ValueError, match="does not belong to backend"):
        plugrad.load(path, backend="numpy", device="array_api_strict:1")


def test_non_contiguous_and_shared_tensors_save_their_values(on_numpy, tmp_path) -> None:
    base = plugrad.asarray(np.arange(12.0).reshape(3, 4))
    view = plugrad.matrix_transpose(base)
    path = tmp_path / "views.safetensors"
    plugrad.save({"base": base, "transposed": view, "again": base}, path)
    loaded = plugrad.load(path)
    assert_same(loaded["transposed"], np.arange(12.0).reshape(3, 4).T)
    loaded["again"].array[...] = 0  # separate copies, not one shared tensor
    assert loaded["base"].numpy().sum() == 66.0


def test_requires_grad_and_history_are_not_saved(on_numpy, tmp_path) -> None:
    w = plugrad.tensor([1.0, 2.0], requires_grad=True)
    y = w * 3
    plugrad.save({"w": w, "y": y}, tmp_path / "g.safetensors")
    w.array[...] = 9.0  # the file holds the values at save time
    loaded = plugrad.load(tmp_path / "g.safetensors")
    assert loaded["w"].tolist() == [1.0, 2.0] and loaded["y"].tolist() == [3.0, 6.0]
    assert not loaded["w"].requires_grad and loaded["y"].grad_fn is None


def test_nested_structure_and_plain_values_round_trip_exactly(on_numpy, tmp_path) -> None:
    t = plugrad.ones(2)
    checkpoint = {
        "model": {"layer.0": {"weight": t}, "layer": {"0.weight": t * 2}},
        "model.layer.0.weight": t * 3,
        "__metadata__": t * 4,
        "state": {0: {"step": 12, "buffer": t * 5}, 1: {}},
        "groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1], "name": None}],
        "epoch": 3,
        "big": 2**70,
        "flags": (True, False),
        "floats": [float("nan"), float("inf"), -float("inf"), -0.0, 0.1],
        "text": 'ünïcode "quoted" .dots.',
        "empty": {"dict": {}, "list": [], "tuple": ()},
    }
    path = tmp_path / "c.safetensors"
    plugrad.save(checkpoint, path)
    loaded = plugrad.load(path)
    assert list(loaded) == list(checkpoint)
    assert loaded["model"]["layer.0"]["weight"].tolist() == [1.0, 1.0]
    assert loaded["model"]["layer"]["0.weight"].tolist() == [2.0, 2.0]
    assert loaded["model.layer.0.weight"].tolist() == [3.0, 3.0]
    assert loaded["__metadata__"].tolist() == [4.0, 4.0]
    assert loaded["state"][0]["buffer"].tolist() == [5.0, 5.0]
    assert list(loaded["state"]) == [0, 1] and loaded["state"][1] == {}
    del loaded["state"][0]["buffer"]
    assert loaded["state"] == {0: {"step": 12}, 1: {}}
    assert loaded["groups"] == checkpoint["groups"]
    assert type(loaded["groups"][0]["betas"]) is tuple
    for key in ("epoch", "big", "flags", "text", "empty"):
        assert loaded[key] == checkpoint[key] and type(loaded[key]) is type(checkpoint[key])
    floats = loaded["floats"]
    assert math.isnan(floats[0]) and floats[1:3] == [math.inf, -math.inf]
    assert math.copysign(1.0, floats[3]) == -1.0 and floats[4] == 0.1
    # Other readers see every tensor under a unique dotted name.
    names = set(safetensors.numpy.load_file(path))
    assert names == {
        "model.layer.0.weight",
        "model.layer.0.weight#1",
        "model.layer.0.weight#2",
        "__metadata__#1",
        "state.0.buffer",
    }


def test_a_lone_tensor_round_trips_as_a_tensor(backend, tmp_path) -> None:
    x = plugrad.asarray(sample("float32"))
    plugrad.save(x, tmp_path / "x.safetensors")
    loaded = plugrad.load(tmp_path / "x.safetensors")
    assert_same(loaded, sample("float32"))
    assert loaded.device is backend
    assert list(safetensors.numpy.load_file(tmp_path / "x.safetensors")) == ["tensor"]


def test_a_training_checkpoint_round_trips(on_numpy, tmp_path) -> None:
    w = plugrad.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
    opt = plugrad.optim.Adam([w], lr=0.1, amsgrad=True)
    schedule = plugrad.optim.lr_scheduler.StepLR(opt, step_size=2)
    for _ in range(3):
        opt.zero_grad()
        plugrad.sum(w * w).backward()
        opt.step()
        schedule.step()
    checkpoint = {
        "model": {"w": w},
        "optimizer": opt.state_dict(),
        "scheduler": schedule.state_dict(),
        "epoch": 3,
    }
    plugrad.save(checkpoint, tmp_path / "ckpt.safetensors")
    loaded = plugrad.load(tmp_path / "ckpt.safetensors")
    assert loaded["epoch"] == 3 and loaded["scheduler"] == checkpoint["scheduler"]
    assert loaded["optimizer"]["param_groups"] == checkpoint["optimizer"]["param_groups"]
    for key, value in checkpoint["optimizer"]["state"][0].items():
        got = loaded["optimizer"]["state"][0][key]
        assert got == value if key == "step" else got.tolist() == value.tolist()
    fresh = plugrad.optim.Adam([loaded["model"]["w"].requires_grad_()], lr=1.0)
    fresh.load_state_dict(loaded["optimizer"])
    assert fresh.state_dict()["param_groups"] == checkpoint["optimizer"]["param_groups"]


# -- other safetensors readers and writers ---------------------------------------------------


def test_other_readers_get_the_tensors_with_their_dtypes(on_numpy, tmp_path) -> None:
    path = tmp_path / "f.safetensors"
    saved = {d: plugrad.asarray(sample(d)) for d in ALL_DTYPES}
    plugrad.save({"weights": saved}, path)
    read = safetensors.numpy.load_file(path)
    for d in ALL_DTYPES:
        expected = sample(d)
        if d == "complex128":  # stored as its real view, the F64 pairs of view_as_real
            expected = np.stack([expected.real, expected.imag], axis=-1)
        np.testing.assert_array_equal(read[f"weights.{d}"], expected)
        assert read[f"weights.{d}"].dtype == expected.dtype


def test_torch_reads_the_file_and_its_files_load_here(on_numpy, tmp_path) -> None:
    torch = pytest.importorskip("torch")
    import safetensors.torch

    saved = {"w": plugrad.asarray(sample("float32")), "z": plugrad.asarray(sample("complex128"))}
    plugrad.save(saved, tmp_path / "p.safetensors")
    read = safetensors.torch.load_file(tmp_path / "p.safetensors")
    np.testing.assert_array_equal(read["w"].numpy(), sample("float32"))
    np.testing.assert_array_equal(torch.view_as_complex(read["z"]).numpy(), sample("complex128"))

    written = {
        "layer.weight": torch.arange(6, dtype=torch.float16).reshape(2, 3),
        "layer.bias": torch.tensor([True, False]),
        "steps": torch.tensor(7, dtype=torch.int64),
        "phase": torch.tensor([1 + 2j], dtype=torch.complex64),
    }
    safetensors.torch.save_file(written, tmp_path / "t.safetensors", metadata={"format": "pt"})
    loaded = plugrad.load(tmp_path / "t.safetensors")
    assert list(loaded) == sorted(written)
    for name, tensor in written.items():
        assert_same(loaded[name], tensor.numpy())

    bfloat16 = {"x": torch.tensor([1.5, -2.0, 3.0e38], dtype=torch.bfloat16)}
    safetensors.torch.save_file(bfloat16, tmp_path / "b.st")
    with pytest.raises(DtypeError, match=r"'x'.*bfloat16.*torch and jax backends store"):
        plugrad.load(tmp_path / "b.st", backend="numpy")
    loaded = plugrad.load(tmp_path / "b.st", backend="torch")["x"]  # (torch is installed here)
    assert loaded.dtype is plugrad.bfloat16
    assert loaded.tolist() == bfloat16["x"].tolist()
    plugrad.save({"y": loaded}, tmp_path / "ours.st")
    assert safetensors.torch.load_file(tmp_path / "ours.st")["y"].equal(bfloat16["x"])


def test_files_of_safetensors_numpy_load_here(on_numpy, tmp_path) -> None:
    arrays = {
        "a": sample("int32"),
        "nested.name": sample("float64", (4,)),
        "c": sample("complex64"),
    }
    safetensors.numpy.save_file(arrays, tmp_path / "n.safetensors")
    loaded = plugrad.load(tmp_path / "n.safetensors", backend="array_api_strict")
    assert list(loaded) == ["a", "c", "nested.name"]
    for name, array in arrays.items():
        assert_same(loaded[name], array)


# -- errors ------------------------------------------------------------------------------------

SAVE_ERRORS = {
    "array leaf": (
        {"model": {"w": np.ones(2)}},
        TypeError,
        "cannot save obj['model']['w'], a ndarray",
    ),
    "object leaf": ({"opt": [1, object()]}, TypeError, "obj['opt'][1], a object"),
    "NumPy datetime": ({"t": np.datetime64("2020-01-01")}, TypeError, "obj['t'], a datetime64"),
    "tuple key": ({"m": {(1, 2): plugrad.ones(1)}}, TypeError, "obj['m'] has the key (1, 2)"),
    "float key": ({0.5: 1}, TypeError, "has the key 0.5 (float)"),
    "bool key": ({True: 1}, TypeError, "has the key True (bool)"),
    "top-level list": ([plugrad.ones(1)], TypeError, "takes a Tensor or a dict"),
    # It loaded as a plain tuple, its field names lost without a word.
    "namedtuple": (
        {"m": plugrad.return_types.max(plugrad.ones(1), plugrad.zeros(1))},
        TypeError,
        "cannot save obj['m'], a namedtuple (max)",
    ),
}


@pytest.mark.parametrize("bad", sorted(SAVE_ERRORS))
def test_save_errors_write_nothing(on_numpy, tmp_path, bad) -> None:
    obj, error, message = SAVE_ERRORS[bad]
    existing = tmp_path / "keep.safetensors"
    plugrad.save({"x": plugrad.ones(2)}, existing)
    before = existing.read_bytes()
    with pytest.raises(error, match=re.escape(message)):
        plugrad.save(obj, existing)
    assert existing.read_bytes() == before
    assert os.listdir(tmp_path) == ["keep.safetensors"]


def test_save_refuses_a_structure_that_contains_itself(on_numpy, tmp_path) -> None:
    looped: dict = {"a": [plugrad.ones(1)]}
    looped["a"].append(looped)
    with pytest.raises(ValueError, match=re.escape("obj['a'][1] contains itself")):
        plugrad.save(looped, tmp_path / "loop.safetensors")
    assert not os.listdir(tmp_path)


def test_a_failed_write_leaves_no_partial_file(on_numpy, tmp_path, monkeypatch) -> None:
    path = tmp_path / "ckpt.safetensors"
    plugrad.save({"x": plugrad.ones(2)}, path)
    before = path.read_bytes()

    def fail_midway(specs, filename, metadata=None):
        Path(filename).write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(safetensors, "serialize_file", fail_midway)
    with pytest.raises(OSError, match="disk full"):
        plugrad.save({"x": plugrad.zeros(3)}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_saved_files_get_the_usual_permissions(on_numpy, tmp_path) -> None:
    path = tmp_path / "p.safetensors"
    plugrad.save({"x": plugrad.ones(1)}, path)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_load_errors(on_numpy, tmp_path) -> None:
    with pytest.raises(FileNotFoundError):
        plugrad.load(tmp_path / "missing.safetensors")
    text = tmp_path / "notes.txt"
    text.write_text("these are not tensors")
    with pytest.raises(SerializationError, match="not a readable safetensors file"):
        plugrad.load(text)
    good = tmp_path / "good.safetensors"
    plugrad.save({"x": plugrad.ones(1000)}, good)
    truncated = tmp_path / "cut.safetensors"
    truncated.write_bytes(good.read_bytes()[:-100])
    with pytest.raises(SerializationError, match="truncated"):
        plugrad.load(truncated)


def rewrite_metadata(source: Path, target: Path, metadata: dict[str, str]) -> None:
    """Write the tensors of ``source`` again with other metadata."""
    arrays = safetensors.numpy.load_file(source)
    safetensors.numpy.save_file(arrays, target, metadata=metadata)


@pytest.mark.parametrize(
    "metadata, message",
    [
        ({"plugrad": "{not json"}, "metadata of .* is damaged"),
        ({"plugrad": '{"version": 99, "structure": {}}'}, "file format 99"),
        (
            {"plugrad": '{"version": 1, "structure": {"dict": [["x", {"tensor": "y"}]]}}'},
            "does not match its tensors",
        ),
        ({"plugrad": '{"version": 1, "structure": {"dict": []}}'}, "does not mention"),
        ({"plugrad": '{"version": 1, "structure": {"odd": 1}}'}, "does not match its tensors"),
        (
            {"plugrad": '{"version": 1, "structure": ' + "[" * 100_000 + "]" * 100_000 + "}"},
            "nests containers deeper",
        ),
    ],
)
def test_damaged_metadata_is_reported(on_numpy, tmp_path, metadata, message) -> None:
    plugrad.save({"x": plugrad.ones(2)}, tmp_path / "a.safetensors")
    rewrite_metadata(tmp_path / "a.safetensors", tmp_path / "b.safetensors", metadata)
    with pytest.raises(SerializationError, match=message):
        plugrad.load(tmp_path / "b.safetensors")


def test_an_unsupported_dtype_on_the_target_names_the_tensor(on_numpy, tmp_path) -> None:
    plugrad.save({"half": plugrad.ones(2, dtype=plugrad.float16)}, tmp_path / "h.safetensors")
    if "array_api_strict" not in BACKENDS:
        pytest.skip("array-api-strict is not installed")
    with plugrad.use_backend("array_api_strict") as device:
        if supports(device, "float16"):
            pytest.skip("this array-api-strict supports float16")
    with pytest.raises(DtypeError, match=r"tensor 'half' .* has no dtype float16"):
        plugrad.load(tmp_path / "h.safetensors", backend="array_api_strict")


def test_data_for_safetensors_without_tensor_spec_is_c_ordered_bytes(on_numpy) -> None:
    # safetensors 0.7 (no TensorSpec) takes each tensor's bytes instead of an address.
    from plugrad import serialization

    older = type("safetensors_0_7", (), {})()
    values = np.arange(6.0).reshape(2, 3)
    spec = serialization._spec(older, plugrad.matrix_transpose(plugrad.asarray(values)), [])
    assert spec == {"dtype": "float64", "shape": [3, 2], "data": values.T.tobytes()}
    pair = serialization._spec(older, plugrad.asarray(np.array([1 + 2j])), [])
    assert pair["dtype"] == "float64" and pair["shape"] == [1, 2]
    assert np.frombuffer(pair["data"]).tolist() == [1.0, 2.0]


def test_saving_into_a_missing_folder_names_the_path_asked_for(on_numpy, tmp_path) -> None:
    target = tmp_path / "missing" / "x.safetensors"
    with pytest.raises(
        FileNotFoundError, match=r"x\.safetensors.*folder .*missing.* does not exist"
    ):
        plugrad.save(plugrad.ones(2), target)
    assert not (tmp_path / "missing").exists()


def test_load_takes_pytorchs_map_location_for_a_device(tmp_path) -> None:
    path = tmp_path / "w.safetensors"
    plugrad.save({"w": plugrad.arange(3.0)}, path)
    for where in ("cpu", plugrad.device("cpu")):
        loaded = plugrad.load(path, map_location=where)
        assert loaded["w"].device == plugrad.device("cpu")
        assert loaded["w"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(plugrad.errors.ArgumentError, match="records no device to map from"):
        plugrad.load(path, map_location={"cuda:0": "cpu"})
    with pytest.raises(plugrad.errors.ArgumentError, match="give one"):
        plugrad.load(path, map_location="cpu", device="cpu")


def test_a_file_object_and_a_random_state_round_trip(tmp_path) -> None:
    # torch.save(obj, io.BytesIO()) raised a TypeError, and so did a checkpoint holding
    # plugrad.get_rng_state().
    import io

    layer = plugrad.nn.Linear(2, 3)
    buffer = io.BytesIO()
    plugrad.save({"model": layer.state_dict(), "rng": plugrad.get_rng_state(), "epoch": 4}, buffer)
    drawn = plugrad.rand(3)
    buffer.seek(0)
    checkpoint = plugrad.load(buffer)
    assert checkpoint["epoch"] == 4
    assert checkpoint["model"]["weight"].tolist() == layer.weight.tolist()
    plugrad.set_rng_state(checkpoint["rng"])
    assert plugrad.rand(3).tolist() == drawn.tolist()
    with open(tmp_path / "state.safetensors", "wb") as file:
        plugrad.save(layer.weight, file)
    with open(tmp_path / "state.safetensors", "rb") as file:
        assert plugrad.load(file).tolist() == layer.weight.tolist()


def test_a_stream_of_saved_files_loads_one_at_a_time_as_pytorchs() -> None:
    # load() read the stream to its end: a second file after the first was "incomplete
    # metadata"; the bytes themselves were taken for a path ("embedded null byte").
    torch = pytest.importorskip("torch")
    buffer = io.BytesIO()
    plugrad.save({"a": plugrad.arange(3)}, buffer)
    plugrad.save({"b": plugrad.arange(2) * 2}, buffer)
    buffer.seek(0)
    assert plugrad.load(buffer)["a"].tolist() == [0, 1, 2]
    assert plugrad.load(buffer, map_location=torch.device("cpu"))["b"].tolist() == [0, 2]
    with pytest.raises(plugrad.errors.ArgumentError, match=r"io.BytesIO"):
        plugrad.load(buffer.getvalue())


def test_load_takes_pytorchs_positional_map_location_mmap_and_pickle_module(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    import pickle

    path = tmp_path / "w.safetensors"
    plugrad.save({"w": plugrad.arange(3.0)}, path)
    torch_path = tmp_path / "w.pt"
    torch.save({"w": torch.arange(3.0)}, torch_path)
    expected = torch.load(torch_path, "cpu", mmap=True, weights_only=True)["w"].tolist()
    assert plugrad.load(path, "cpu")["w"].device == plugrad.device("cpu")
    for options in ({"mmap": True}, {"mmap": False}, {"mmap": True, "weights_only": True}):
        assert plugrad.load(path, "cpu", **options)["w"].tolist() == expected
    assert plugrad.load(path, None, pickle)["w"].tolist() == expected  # PyTorch's default
    with pytest.raises(plugrad.errors.ArgumentError, match="not pickles"):
        plugrad.load(path, pickle_module=io)
    with pytest.raises(plugrad.errors.ArgumentError, match="True, False or None"):
        plugrad.load(path, mmap="yes")
    for lib, file in ((torch, torch_path), (plugrad, path)):
        with open(file, "rb") as stream, pytest.raises(ValueError, match="path"):
            lib.load(stream, mmap=True)  # (a file object cannot be mapped: PyTorch's error)
    with open(path, "rb") as stream, pytest.raises(plugrad.errors.InvalidArgumentError):
        plugrad.load(stream, mmap=True)


def test_save_and_load_refuse_a_text_stream_with_a_typed_error(tmp_path) -> None:
    stream = io.StringIO()
    with pytest.raises(plugrad.errors.ArgumentError, match="binary mode"):
        plugrad.save({"w": plugrad.ones(2)}, stream)
    assert stream.getvalue() == ""
    with open(tmp_path / "t.txt", "w") as text, pytest.raises(TypeError, match="'wb'"):
        plugrad.save(plugrad.ones(2), text)
    plugrad.save(plugrad.ones(2), tmp_path / "w.safetensors")
    with open(tmp_path / "w.safetensors") as text:
        with pytest.raises(plugrad.errors.ArgumentError, match="'rb'"):
            plugrad.load(text)


@pytest.mark.parametrize("backend_name", ["torch", "jax"])
def test_bfloat16_views_in_any_layout_save_their_own_values(backend_name, monkeypatch) -> None:
    pytest.importorskip(backend_name)
    values = [[1.5, -2.0, 3.0e38, -0.0], [float("nan"), float("inf"), -1.0e-38, 7.0]]
    w = plugrad.asarray(values, backend=backend_name).to(plugrad.bfloat16)
    views = {"whole": w, "T": w.T, "rows": w[::2], "columns": w[:, 1:], "0-d": w[1, 2]}

    def check() -> None:
        buffer = io.BytesIO()
        plugrad.save(views, buffer)
        buffer.seek(0)
        loaded = plugrad.load(buffer, backend=backend_name)
        for name, view in views.items():
            assert loaded[name].dtype is plugrad.bfloat16 and loaded[name].shape == view.shape
            got, expected = loaded[name].float().numpy(), view.float().numpy()
            assert got.tobytes() == np.ascontiguousarray(expected).tobytes(), name

    check()
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # the host path without ml_dtypes
    check()


def test_a_pytorch_checkpoint_is_named_as_one_with_how_to_convert_it(tmp_path) -> None:
    # It was "not a readable safetensors file (... header too large)".
    archive = tmp_path / "zip.pt"
    with zipfile.ZipFile(archive, "w") as written:
        written.writestr("archive/data.pkl", pickle.dumps({"w": [1.0]}))
    pickled = tmp_path / "legacy.pt"
    pickled.write_bytes(pickle.dumps({"w": [1.0]}, protocol=2))
    files = {"a zip archive": archive, "a pickle": pickled}
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.ones(2)}, tmp_path / "torch.pt")
    files["a zip archive "] = tmp_path / "torch.pt"
    torch.save({"w": torch.ones(2)}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    files["a pickle "] = tmp_path / "old.pt"
    for kind, path in files.items():
        expected = rf"is {kind.strip()}, likely a PyTorch checkpoint.*safetensors.torch.save_file"
        with pytest.raises(SerializationError, match=expected):
            plugrad.load(path)
    with pytest.raises(SerializationError, match="not a readable safetensors file"):
        plugrad.load(io.BytesIO(b"neither format, nor long enough"))


def test_numpy_scalars_and_complex_numbers_load_as_the_python_values_they_hold(on_numpy) -> None:
    # As torch.save/torch.load keep them (np.float64, a float, was the only one taken).
    saved = {
        "loss": np.float32(0.1),
        "step": np.int64(2**62 + 1),
        "flag": np.bool_(True),
        "byte": np.uint8(255),
        "name": np.str_("adam"),
        "inf": np.float64("inf"),  # (its repr was "np.float64(inf)", which did not load)
        "phase": complex(0.0, -0.0),
        "odd": [complex(float("nan"), float("-inf")), np.complex64(1 - 2j)],
    }
    buffer = io.BytesIO()
    plugrad.save(saved, buffer)
    buffer.seek(0)
    loaded = plugrad.load(buffer)
    expected = {key: value.item() if isinstance(value, np.generic) else value
                for key, value in saved.items()}  # fmt: skip
    expected["odd"] = [saved["odd"][0], complex(1, -2)]
    assert repr(loaded) == repr(expected)  # (NaN and the signs of zeros compared too)
    assert [type(value) for value in loaded.values()] == [type(v) for v in expected.values()]
    assert math.copysign(1.0, loaded["phase"].imag) == -1.0
    assert math.copysign(1.0, loaded["phase"].real) == 1.0
