"""The ``plugrad demo`` command: train a small classifier end to end, on any backend.

It loads scikit-learn's handwritten digits (1,797 8x8 images, 10 classes) when
scikit-learn is installed, or generates a digit-like data set of the same shape
otherwise; trains an MLP (or, with ``--model conv``, a Conv2d+Linear network)
with Adam and cross-entropy; shows a tqdm progress bar; prints the loss and the
train and test accuracy after every epoch; and writes the loss curve, a picture
of the computational graph of one training step, and the trained weights
(safetensors) to the output folder.

The optional pieces come from the ``demo`` extra (``pip install ".[demo]"`` from a checkout):
scikit-learn (the real data), tqdm (the progress bar), matplotlib (the loss
curve as PNG; a CSV is always written) and graphviz (the graph as SVG; the DOT
source is written without it). Each one missing only switches off what it draws.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DistributedError, InvalidArgumentError

__all__ = ["DemoResult", "add_parser", "load_data", "main", "train"]

_CLASSES = 10
_SIDE = 8


@dataclass
class Dataset:
    """Images ``(n, 1, 8, 8)`` float32 in [0, 1] and integer labels ``(n,)``, split."""

    name: str
    x_train: Any
    y_train: Any
    x_test: Any
    y_test: Any


@dataclass
class DemoResult:
    """What one run measured: per-epoch loss and accuracies, and the files written."""

    data: str
    epoch_loss: list[float] = field(default_factory=list)
    train_accuracy: list[float] = field(default_factory=list)
    test_accuracy: list[float] = field(default_factory=list)
    seconds: float = 0.0
    files: list[str] = field(default_factory=list)


def _optional(module: str) -> Any | None:
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def load_data(source: str, backend: str | None, seed: int, test_fraction: float = 0.2) -> Dataset:
    """Load the digits (``source="digits"``), generate them (``"generated"``) or pick (``"auto"``).

    Examples
    --------
    >>> from plugrad.cli.demo import load_data
    >>> data = load_data("generated", backend=None, seed=0)
    >>> data.x_train.shape, data.y_train.shape, data.x_test.shape
    ((1438, 1, 8, 8), (1438,), (359, 1, 8, 8))
    """
    import plugrad

    if source not in ("auto", "digits", "generated"):
        raise InvalidArgumentError(
            f"data source must be 'auto', 'digits' or 'generated', got {source!r}"
        )
    plugrad.manual_seed(seed)
    datasets = _optional("sklearn.datasets") if source != "generated" else None
    if datasets is not None:
        digits = datasets.load_digits()
        name = "scikit-learn digits (1,797 8x8 images)"
        x = plugrad.asarray(digits.images, dtype=plugrad.float32, backend=backend) / 16.0
        labels = plugrad.__array_namespace_info__().default_dtypes(device=backend)["indexing"]
        y = plugrad.asarray(digits.target, dtype=labels, backend=backend)
    elif source == "digits":
        raise ModuleNotFoundError(
            "the digits data set comes with scikit-learn: pip install '.[demo]' from a checkout "
            "(or use --data generated)"
        )
    else:
        name = "generated digit-like data (scikit-learn not installed)"
        x, y = _generated_digits(1797, backend)
    n = x.shape[0]
    order = plugrad.argsort(plugrad.rand(n, backend=backend))
    x = plugrad.take(plugrad.reshape(x, (n, 1, _SIDE, _SIDE)), order, axis=0)
    y = plugrad.take(y, order, axis=0)
    n_test = round(n * test_fraction)
    return Dataset(name, x[n_test:], y[n_test:], x[:n_test], y[:n_test])


def _generated_digits(n: int, backend: str | None) -> tuple[Any, Any]:
    """Ten random blurred stroke patterns, each sample one of them plus noise and a shift."""
    import plugrad

    strokes = plugrad.rand(_CLASSES, _SIDE, _SIDE, backend=backend) > 0.6
    prototypes = plugrad.astype(strokes, plugrad.float32)
    y = plugrad.arange(n, backend=backend) % _CLASSES  # int64, int32 where there is none
    x = plugrad.take(prototypes, y, axis=0)
    x = x * (0.6 + 0.4 * plugrad.rand(n, 1, 1, backend=backend))
    x = x + 0.8 * plugrad.randn(n, _SIDE, _SIDE, backend=backend)
    return plugrad.clip(x, 0.0, 1.0), y


def build_model(kind: str, backend: str | None) -> Any:
    """The network: ``"mlp"`` (64-128-10) or ``"conv"`` (Conv2d 16 3x3, pooling, Linear)."""
    from plugrad import nn

    if kind == "mlp":
        layers = [
            nn.Flatten(),
            nn.Linear(_SIDE * _SIDE, 128, backend=backend),
            nn.ReLU(),
            nn.Linear(128, _CLASSES, backend=backend),
        ]
    elif kind == "conv":
        layers = [
            nn.Conv2d(1, 16, 3, padding=1, backend=backend),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(16 * (_SIDE // 2) ** 2, _CLASSES, backend=backend),
        ]
    else:
        raise InvalidArgumentError(f"model must be 'mlp' or 'conv', got {kind!r}")
    return nn.Sequential(*layers)


def _batches(n: int, size: int, backend: str | None) -> Iterator[Any]:
    import plugrad

    order = plugrad.argsort(plugrad.rand(n, backend=backend))
    for start in range(0, n, size):
        yield order[start : start + size]


def accuracy(model: Any, x: Any, y: Any) -> float:
    """The fraction of ``x`` that ``model`` classifies as ``y`` (evaluated without a graph)."""
    import plugrad

    was_training = model.training
    model.eval()
    with plugrad.no_grad():
        predicted = plugrad.argmax(model(x), axis=1)
    model.train(was_training)
    return float(plugrad.mean(plugrad.astype(predicted == y, plugrad.float32)))


def _state_tensors(optimizer: Any) -> list[Any]:
    import plugrad

    return [
        value
        for entry in optimizer.state.values()
        for value in entry.values()
        if isinstance(value, plugrad.Tensor)
    ]


def train(
    *,
    data: str = "auto",
    model: str = "mlp",
    backend: str | None = None,
    epochs: int = 15,
    batch_size: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
    output_dir: str | None = "plugrad-demo",
    progress: bool = True,
    log: Any = print,
    distributed: bool = False,
    compile: bool = False,
) -> DemoResult:
    """Train the demo network and return what was measured; write files to ``output_dir``.

    ``seed`` goes to :func:`plugrad.manual_seed`, so the same arguments give the
    same run (and the default generators are reseeded). ``output_dir=None``
    writes nothing; ``log`` receives each line of the report (``None``: silent).
    ``compile=True`` runs each training step through :func:`plugrad.compile`.

    With ``distributed=True`` every process of an MPI job (``mpiexec -n N``)
    trains a replica with :class:`~plugrad.nn.parallel.DistributedDataParallel`
    on its share of each batch of ``batch_size`` images, so the run equals one
    process's up to float rounding; rank 0 alone reports and writes the files,
    and every rank then loads the saved weights back.

    Examples
    --------
    >>> from plugrad.cli.demo import train
    >>> result = train(data="generated", epochs=2, output_dir=None, progress=False, log=None)
    >>> len(result.test_accuracy)
    2
    """
    import plugrad
    from plugrad import nn, optim

    if epochs < 1 or batch_size < 1:
        raise InvalidArgumentError(
            f"epochs and batch_size must be at least 1, got {epochs}, {batch_size}"
        )
    if compile and distributed:
        raise InvalidArgumentError(
            "compile=True and distributed=True cannot be combined: a compiled step does not "
            "replay the gradient all-reduce; train distributed without compile"
        )
    rank, size, joined = 0, 1, False
    if distributed:
        import plugrad.distributed as dist

        joined = not dist.is_initialized()
        if joined:
            dist.init_process_group("mpi")
        rank, size = dist.get_rank(), dist.get_world_size()
    say = (log if rank == 0 else None) or (lambda *args: None)
    dataset = load_data(data, backend, seed)
    network = build_model(model, backend)
    replica = nn.parallel.DistributedDataParallel(network) if distributed else network
    optimizer = optim.Adam(replica.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    # Each rank's share of a batch: its summed loss over the whole batch's size, times the
    # number of ranks, so that the average DistributedDataParallel takes is the batch's mean.
    share_loss = nn.CrossEntropyLoss(reduction="sum")
    tqdm = _optional("tqdm.auto") if progress and rank == 0 else None
    result = DemoResult(dataset.name)
    n = dataset.x_train.shape[0]
    steps = -(-n // batch_size)
    say(f"data: {dataset.name}; train {n}, test {dataset.x_test.shape[0]}")
    say(f"model on {next(iter(network.parameters())).device}: {network}")
    if distributed:
        say(f"data-parallel over {size} processes, {batch_size} images per step in all")

    def step(xb: Any, yb: Any, batch: int) -> Any:
        if distributed:
            loss = share_loss(replica(xb), yb) * (size / batch)
        else:
            loss = loss_fn(replica(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    if compile:
        step = plugrad.compile(step)
    lazy = next(iter(network.parameters())).device.backend.lazy
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        bar = tqdm.tqdm(total=steps, desc=f"epoch {epoch}/{epochs}", leave=False) if tqdm else None
        total = 0.0
        for index in _batches(n, batch_size, backend):
            mine = index[rank::size]
            xb = plugrad.take(dataset.x_train, mine, axis=0)
            yb = plugrad.take(dataset.y_train, mine, axis=0)
            loss = step(xb, yb, index.shape[0])
            if lazy:
                # Parameters and optimizer state would otherwise carry every earlier
                # step's task graph; computing them keeps each step's graph one step deep.
                plugrad.compute(loss, *network.parameters(), *_state_tensors(optimizer))
            value = float(loss)  # with several ranks: this rank's part of the batch mean
            total += value * index.shape[0] / size
            if bar is not None:
                bar.set_postfix(loss=f"{value:.3f}")
                bar.update()
        if bar is not None:
            bar.close()
        if distributed:
            summed = plugrad.tensor([total], dtype=plugrad.float64, backend=backend)
            dist.all_reduce(summed)
            total = float(summed[0])
        result.epoch_loss.append(total / n)
        result.train_accuracy.append(accuracy(network, dataset.x_train, dataset.y_train))
        result.test_accuracy.append(accuracy(network, dataset.x_test, dataset.y_test))
        say(
            f"epoch {epoch:>3}/{epochs}  loss {result.epoch_loss[-1]:.4f}  "
            f"train accuracy {result.train_accuracy[-1]:6.1%}  "
            f"test accuracy {result.test_accuracy[-1]:6.1%}"
        )
    result.seconds = time.perf_counter() - start
    say(f"trained in {result.seconds:.1f} s; test accuracy {result.test_accuracy[-1]:.1%}")
    if output_dir is not None and rank == 0:
        # The picture's backward pass is rank 0's alone: no averaging with the others.
        with replica.no_sync() if distributed else _nothing():
            result.files = _write_outputs(output_dir, result, network, loss_fn, dataset)
        for path in result.files:
            say(f"wrote {path}")
        if any(path.endswith(".dot") for path in result.files):
            say(
                "the graph is DOT source because Graphviz's dot program is not installed "
                "(apt-get install graphviz, brew install graphviz); then: dot -Tsvg -O FILE.dot"
            )
    if distributed:
        if output_dir is not None:
            dist.barrier()  # rank 0 has written the weights
            _check_saved_weights(os.path.join(output_dir, "model.safetensors"), network, rank)
            dist.barrier()
            say(f"every one of the {size} processes loaded the saved weights back")
        if joined:
            dist.destroy_process_group()
    return result


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield


def _check_saved_weights(path: str, network: Any, rank: int) -> None:
    import plugrad

    saved = plugrad.load(path)
    for name, value in network.state_dict().items():
        if not bool(plugrad.all(saved[name] == value)):
            raise DistributedError(
                f"rank {rank}: {name} in {path} differs from this rank's replica"
            )


def _write_outputs(
    folder: str, result: DemoResult, network: Any, loss_fn: Any, dataset: Dataset
) -> list[str]:
    import plugrad

    os.makedirs(folder, exist_ok=True)
    written = []
    curve = os.path.join(folder, "loss_curve.csv")
    with open(curve, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["epoch", "loss", "train_accuracy", "test_accuracy"])
        for i, row in enumerate(
            zip(result.epoch_loss, result.train_accuracy, result.test_accuracy), start=1
        ):
            writer.writerow([i, *row])
    written.append(curve)
    pyplot = _optional("matplotlib.pyplot")
    if pyplot is not None:
        written.append(_plot_curve(pyplot, os.path.join(folder, "loss_curve.png"), result))
    written.append(_draw_step(os.path.join(folder, "training_step"), network, loss_fn, dataset))
    weights = os.path.join(folder, "model.safetensors")
    plugrad.save(network.state_dict(), weights)
    written.append(weights)
    return written


def _plot_curve(pyplot: Any, path: str, result: DemoResult) -> str:
    figure, loss_axes = pyplot.subplots(figsize=(6, 3.5), layout="constrained")
    epochs = range(1, len(result.epoch_loss) + 1)
    loss_axes.plot(epochs, result.epoch_loss, marker="o", color="tab:blue", label="training loss")
    loss_axes.set_xlabel("epoch")
    loss_axes.set_ylabel("cross-entropy loss", color="tab:blue")
    accuracy_axes = loss_axes.twinx()
    accuracy_axes.plot(epochs, result.test_accuracy, marker="s", color="tab:green")
    accuracy_axes.set_ylabel("test accuracy", color="tab:green")
    accuracy_axes.set_ylim(0, 1)
    loss_axes.set_title(f"plugrad demo: {result.data}", fontsize=9)
    figure.savefig(path, dpi=120)
    pyplot.close(figure)
    return path


def _draw_step(stem: str, network: Any, loss_fn: Any, dataset: Dataset) -> str:
    """The graph of one step's loss on a 4-image batch: SVG with Graphviz, else DOT source."""
    from plugrad import viz

    images, labels = dataset.x_train[:4], dataset.y_train[:4]
    loss = loss_fn(network(images), labels)
    loss.backward(retain_graph=True)  # the picture reads shapes the graph would free
    names = {"images": images, "labels": labels, "loss": loss, **dict(network.named_parameters())}
    title = "one training step (4 images)"

    def render(suffix: str) -> Path:
        return viz.render(
            loss, stem + suffix, names=names, show_grads=True, max_elements=4, title=title
        )

    try:
        path = render(".svg")
    except (ImportError, RuntimeError):  # no graphviz package or no dot program
        path = render(".dot")
    network.zero_grad()
    return str(path)


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add the ``demo`` subcommand to an ``argparse`` subparsers object."""
    demo = commands.add_parser(
        "demo",
        help="train a small network on handwritten digits and draw its graph",
        description=(__doc__ or "").split("\n\n")[0],
    )
    demo.add_argument(
        "--backend",
        help="backend or device to train on: cupy, torch, torch:cuda:0, jax:gpu:0, ... "
        "(default: the default backend)",
    )
    demo.add_argument("--model", choices=("mlp", "conv"), default="mlp", help="network (mlp)")
    demo.add_argument(
        "--data",
        choices=("auto", "digits", "generated"),
        default="auto",
        help="digits from scikit-learn, generated data, or digits when installed (auto)",
    )
    demo.add_argument("--epochs", type=int, default=15, help="passes over the data (15)")
    demo.add_argument("--batch-size", type=int, default=64, help="images per step (64)")
    demo.add_argument("--lr", type=float, default=3e-3, help="Adam's learning rate (0.003)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (0)")
    demo.add_argument(
        "--output-dir", default="plugrad-demo", help="folder for the pictures and weights"
    )
    demo.add_argument("--no-progress", action="store_true", help="no progress bar")
    demo.add_argument(
        "--distributed",
        action="store_true",
        help="train data-parallel on the processes of an MPI job: "
        "mpiexec -n 2 plugrad demo --distributed",
    )
    demo.add_argument(
        "--compile", action="store_true", help="run each training step through plugrad.compile"
    )
    return demo


def main(args: argparse.Namespace) -> int:
    """Run ``plugrad demo`` with parsed ``args``; return the exit code."""
    import plugrad

    # A device (torch:cuda:0) as well as a backend: the default device while training.
    where = plugrad.use_backend(args.backend) if args.backend else contextlib.nullcontext()
    with where:
        train(
            data=args.data,
            model=args.model,
            epochs=args.epochs,
            batch_size=args.batch_size,
            lr=args.lr,
            seed=args.seed,
            output_dir=args.output_dir,
            progress=not args.no_progress and sys.stderr.isatty(),
            distributed=args.distributed,
            compile=args.compile,
        )
    return 0
