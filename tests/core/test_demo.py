"""``plugrad demo``: trains, reaches a sensible accuracy, writes its files, refuses bad input."""

from __future__ import annotations

import csv
import shutil

import pytest

import plugrad
from plugrad.cli import demo, main


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_generated_data_trains_and_writes_every_file(tmp_path):
    result = demo.train(
        data="generated", epochs=4, output_dir=str(tmp_path), progress=False, log=None
    )
    assert result.data.startswith("generated")
    assert result.epoch_loss[-1] < 0.5 * result.epoch_loss[0]
    assert result.test_accuracy[-1] > 0.8
    names = {p.rsplit("/", 1)[-1] for p in result.files}
    assert {"loss_curve.csv", "model.safetensors"} <= names
    assert names & {"training_step.svg", "training_step.dot"}
    rows = _rows(tmp_path / "loss_curve.csv")
    assert [float(r["loss"]) for r in rows] == pytest.approx(result.epoch_loss)
    assert [int(r["epoch"]) for r in rows] == [1, 2, 3, 4]


def test_saved_weights_load_into_a_fresh_model_and_predict_the_same(tmp_path):
    demo.train(data="generated", epochs=2, output_dir=str(tmp_path), progress=False, log=None)
    state = plugrad.load(str(tmp_path / "model.safetensors"))
    model = demo.build_model("mlp", None)
    model.load_state_dict(state)
    data = demo.load_data("generated", None, seed=0)
    accuracy = demo.accuracy(model, data.x_test, data.y_test)
    assert accuracy > 0.5  # an untrained model sits near 0.1


def test_the_same_seed_gives_the_same_run():
    first = demo.train(data="generated", epochs=2, output_dir=None, progress=False, log=None)
    second = demo.train(data="generated", epochs=2, output_dir=None, progress=False, log=None)
    assert first.epoch_loss == second.epoch_loss


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_graph_picture_names_the_parameters(tmp_path):
    pytest.importorskip("graphviz")
    demo.train(data="generated", epochs=1, output_dir=str(tmp_path), progress=False, log=None)
    svg = (tmp_path / "training_step.svg").read_text()
    for name in ("1.weight", "3.bias", "CrossEntropyBackward", "ReluBackward"):
        assert name in svg


def test_conv_model_trains_on_array_api_strict(tmp_path):
    pytest.importorskip("array_api_strict")
    result = demo.train(
        data="generated",
        model="conv",
        backend="array_api_strict",
        epochs=3,
        output_dir=None,
        progress=False,
        log=None,
    )
    assert result.epoch_loss[-1] < result.epoch_loss[0]
    assert result.test_accuracy[-1] > 0.5


def test_digits_mlp_reaches_95_percent():
    pytest.importorskip("sklearn")
    result = demo.train(data="digits", output_dir=None, progress=False, log=None)
    assert result.data.startswith("scikit-learn digits")
    assert result.test_accuracy[-1] >= 0.95


def test_digits_conv_model_reaches_95_percent():
    pytest.importorskip("sklearn")
    result = demo.train(data="digits", model="conv", output_dir=None, progress=False, log=None)
    assert result.test_accuracy[-1] >= 0.95


def test_asking_for_digits_without_scikit_learn_says_what_to_install(monkeypatch):
    monkeypatch.setattr(demo, "_optional", lambda module: None)
    with pytest.raises(ModuleNotFoundError, match=r"\.\[demo\]' from a checkout.*--data generated"):
        demo.load_data("digits", None, seed=0)


def test_auto_falls_back_to_generated_data_without_scikit_learn(monkeypatch):
    monkeypatch.setattr(demo, "_optional", lambda module: None)
    assert demo.load_data("auto", None, seed=0).name.startswith("generated")


def test_without_optional_packages_the_files_still_come(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "_optional", lambda module: None)
    result = demo.train(data="auto", epochs=1, output_dir=str(tmp_path), progress=False, log=None)
    names = {p.rsplit("/", 1)[-1] for p in result.files}
    assert "loss_curve.png" not in names
    assert {"loss_curve.csv", "model.safetensors"} <= names


def test_command_prints_each_epoch_and_the_files(tmp_path, capsys):
    code = main(
        [
            "demo",
            "--data",
            "generated",
            "--epochs",
            "2",
            "--no-progress",
            "--output-dir",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "epoch   1/2" in out and "epoch   2/2" in out
    assert "test accuracy" in out
    assert f"wrote {tmp_path / 'model.safetensors'}" in out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--epochs", "0"], "epochs and batch_size must be at least 1"),
        (["--backend", "no_such_backend"], "no_such_backend"),
    ],
)
def test_command_refuses_bad_input_with_exit_code_2(tmp_path, capsys, arguments, message):
    code = main(["demo", "--data", "generated", "--output-dir", str(tmp_path), *arguments])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("plugrad demo: error:") and message in err
    assert not (tmp_path / "model.safetensors").exists()


def test_compile_and_distributed_together_are_refused():
    with pytest.raises(ValueError, match="cannot be combined"):
        demo.train(data="generated", compile=True, distributed=True, output_dir=None, log=None)


def test_bad_model_and_data_names_are_value_errors():
    with pytest.raises(ValueError, match="'mlp' or 'conv'"):
        demo.build_model("resnet", None)
    with pytest.raises(ValueError, match="'auto', 'digits' or 'generated'"):
        demo.load_data("mnist", None, seed=0)


def test_without_graphviz_the_graph_is_dot_source_and_the_output_says_why(tmp_path, monkeypatch):
    from plugrad import viz
    from plugrad.errors import MissingProgramError

    def no_dot(outputs, path, **options):
        if str(path).endswith(".dot"):
            return real_render(outputs, path, **options)
        raise MissingProgramError("dot not found")

    real_render = viz.render
    monkeypatch.setattr(viz, "render", no_dot)
    lines = []
    result = demo.train(
        data="generated", epochs=1, output_dir=str(tmp_path), progress=False, log=lines.append
    )
    assert str(tmp_path / "training_step.dot") in result.files
    assert "digraph" in (tmp_path / "training_step.dot").read_text()
    assert any("apt-get install graphviz" in line for line in lines)


def test_compiled_training_steps_give_the_eager_run():
    eager = demo.train(data="generated", epochs=2, output_dir=None, progress=False, log=None)
    compiled = demo.train(
        data="generated", epochs=2, output_dir=None, progress=False, log=None, compile=True
    )
    assert compiled.epoch_loss == eager.epoch_loss
    assert compiled.test_accuracy == eager.test_accuracy


def test_command_accepts_compile(tmp_path, capsys):
    arguments = ["demo", "--data", "generated", "--epochs", "1", "--no-progress"]
    assert main([*arguments, "--output-dir", str(tmp_path / "a")]) == 0
    eager = capsys.readouterr().out.splitlines()
    assert main([*arguments, "--output-dir", str(tmp_path / "b"), "--compile"]) == 0
    compiled = capsys.readouterr().out.splitlines()
    epoch = next(line for line in eager if line.startswith("epoch"))
    assert epoch in compiled


@pytest.mark.parametrize("backend", ["torch", "jax", "dask"])
def test_demo_command_trains_on_the_torch_jax_and_dask_backends(tmp_path, backend, capsys):
    if backend not in plugrad.backends.available():
        pytest.skip(f"backend {backend!r} not available here")
    code = main(
        ["demo", "--backend", backend, "--data", "generated", "--epochs", "2",
         "--batch-size", "256", "--lr", "0.01", "--output-dir", str(tmp_path), "--no-progress"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code in (0, None)
    assert f"model on {backend}" in out
    losses = [float(line.split("loss")[1].split()[0]) for line in out.splitlines()
              if line.startswith("epoch")]  # fmt: skip
    assert len(losses) == 2 and losses[1] < losses[0]
    accuracy = float(out.split("test accuracy")[-1].strip().rstrip("%").split("%")[0])
    assert accuracy > 60.0
    assert (tmp_path / "model.safetensors").is_file()


def test_command_trains_on_a_device_named_in_backend(tmp_path, monkeypatch):
    devices = []
    build = demo.build_model

    def build_and_note(kind, backend):
        model = build(kind, backend)
        devices.append(next(iter(model.parameters())).device.name)
        return model

    monkeypatch.setattr(demo, "build_model", build_and_note)
    default = plugrad.default_device()
    arguments = ["demo", "--data", "generated", "--epochs", "1", "--no-progress"]
    assert main([*arguments, "--backend", "array_api_strict:1", "--output-dir", str(tmp_path)]) == 0
    assert devices == ["array_api_strict:1"]
    assert plugrad.default_device() is default  # the default again afterwards
