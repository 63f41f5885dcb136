"""Plot per-op overhead and MLP step time for each backend from saved asv results.

Reads one results file that ``asv run --set-commit-hash=...`` saved under
``asv_bench/.asv/results/<machine>/`` (the newest, unless ``--results`` names
one) and draws two panels, plugrad beside the floor (the same maths hand-written
against the backend's own functions) for every backend the file has:

- the 5-op chain ``sum(exp((x * w + 1) * x))`` on 4 elements, forward and
  backward (``ElementwiseChainOverhead``), divided by its 5 ops: the cost per op;
- one SGD step of the 784-512-256-10 MLP at each batch size (``MLPTrainingStep``).

It also prints the numbers as a table, and where they came from (machine,
date, commit). Needs matplotlib (``pip install ".[bench]"`` from a checkout).
Run from the repository root after a run such as::

    cd asv_bench
    PLUGRAD_BENCH_BACKENDS=numpy,torch,jax,dask asv run --python=same \\
        --set-commit-hash=$(git rev-parse HEAD) \\
        --bench "ElementwiseChainOverhead.time_(plugrad|floor)_forward_backward" \\
        --bench "MLPTrainingStep.time_(plugrad|floor)_step"
    cd ..
    python asv_bench/plot_backends.py -o docs/_static/backends_performance.svg
"""

from __future__ import annotations

import argparse
import ast
import datetime
import itertools
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / ".asv" / "results"
CHAIN = "bench_overhead.ElementwiseChainOverhead.time_{}_forward_backward"
CHAIN_OPS = 5
MLP = "bench_training.MLPTrainingStep.time_{}_step"
SIDES = ("plugrad", "floor")


@dataclass(frozen=True)
class Measurements:
    """Seconds by benchmark and parameters, with where they were measured."""

    times: dict[str, dict[tuple[str, ...], float]]
    machine: str
    cpu: str
    num_cpu: str
    date: str
    commit: str
    python: str

    def time(self, benchmark: str, *params: str) -> float:
        """Seconds per call, NaN where the benchmark was skipped or not run."""
        return self.times.get(benchmark, {}).get(params, math.nan)

    def backends(self) -> list[str]:
        """The backends of the chain benchmark, in the order asv ran them."""
        names: list[str] = []
        for params in self.times.get(CHAIN.format("plugrad"), {}):
            if params[0] not in names:
                names.append(params[0])
        return names

    def source(self) -> str:
        return (
            f"asv results of commit {self.commit[:8]}, {self.date}, on '{self.machine}' "
            f"({self.cpu}, {self.num_cpu} cores)"
        )


def newest_results(root: Path) -> Path:
    """The most recently written results file under ``root`` (machine.json excluded)."""
    files = [p for p in root.glob("*/*.json") if p.name != "machine.json"]
    if not files:
        raise SystemExit(
            f"no asv results under {root}: run asv with --set-commit-hash (see this script's help)"
        )
    return max(files, key=lambda p: p.stat().st_mtime)


def load(path: Path) -> Measurements:
    """Read an asv results file (its format: ``result_columns`` name each row's fields)."""
    data = json.loads(path.read_text())
    columns = data["result_columns"]
    times: dict[str, dict[tuple[str, ...], float]] = {}
    for name, row in data["results"].items():
        fields = dict(zip(columns, row))
        values = fields.get("result") or []
        grid = [[str(ast.literal_eval(v)) for v in axis] for axis in fields.get("params") or []]
        combos = list(itertools.product(*grid)) if grid else [()]
        times[name] = {
            combo: (math.nan if value is None else float(value))
            for combo, value in zip(combos, values)
        }
    machine = data.get("params", {})
    when = datetime.datetime.fromtimestamp(data["date"] / 1000, tz=datetime.timezone.utc)
    return Measurements(
        times=times,
        machine=str(machine.get("machine", "?")),
        cpu=str(machine.get("cpu", "?")),
        num_cpu=str(machine.get("num_cpu", "?")),
        date=when.strftime("%Y-%m-%d %H:%M UTC"),
        commit=str(data.get("commit_hash", "?")),
        python=str(data.get("python", "?")),
    )


def batches(results: Measurements) -> list[str]:
    sizes = {params[1] for params in results.times.get(MLP.format("plugrad"), {})}
    return sorted(sizes, key=int)


def table(results: Measurements) -> str:
    """The plotted numbers as text: µs per op of the chain, ms per MLP step."""
    sizes = batches(results)
    header = ["backend", "per op: plugrad", "per op: floor"]
    header += [f"MLP step b={b}: {side}" for b in sizes for side in SIDES]
    lines = [" | ".join(header)]
    for backend in results.backends():
        cells = [backend]
        for side in SIDES:
            seconds = results.time(CHAIN.format(side), backend) / CHAIN_OPS
            cells.append(f"{seconds * 1e6:.3g} µs")
        for b in sizes:
            for side in SIDES:
                cells.append(f"{results.time(MLP.format(side), backend, b) * 1e3:.3g} ms")
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def plot(results: Measurements, output: Path) -> None:
    """Draw the two panels into ``output`` (SVG, PNG or PDF by its suffix)."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit(
            'plotting needs matplotlib: pip install ".[bench]" from a checkout'
        ) from None
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "plugrad"  # the same SVG from the same numbers
    import matplotlib.pyplot as plt

    backends = results.backends()
    sizes = batches(results)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    width = 0.38
    for offset, side in zip((-width / 2, width / 2), SIDES):
        per_op = [results.time(CHAIN.format(side), b) / CHAIN_OPS * 1e6 for b in backends]
        left.bar([i + offset for i in range(len(backends))], per_op, width, label=side)
    left.set_xticks(range(len(backends)), backends)
    left.set_yscale("log")
    left.set_ylabel("µs per op (forward + backward)")
    left.set_title("5-op chain on 4 elements, per op")
    left.legend()

    if not sizes:
        right.text(0.5, 0.5, "no MLP step results", ha="center", transform=right.transAxes)
    group = max(1, len(sizes) * len(SIDES))
    width = 0.8 / group
    for k, (b, side) in enumerate(itertools.product(sizes, SIDES)):
        step = [results.time(MLP.format(side), backend, b) * 1e3 for backend in backends]
        positions = [i - 0.4 + (k + 0.5) * width for i in range(len(backends))]
        hatch = "" if side == "plugrad" else "//"
        colour = f"C{sizes.index(b)}"
        right.bar(positions, step, width, label=f"{side}, batch {b}", color=colour, hatch=hatch)
        for position, value in zip(positions, step):
            if math.isnan(value):  # skipped, timed out or not run: say so rather than draw nothing
                right.text(position, 0.02, "not run", rotation=90, ha="center", va="bottom",
                           fontsize="x-small", transform=right.get_xaxis_transform())  # fmt: skip
    right.set_xticks(range(len(backends)), backends)
    right.set_yscale("log")
    right.set_ylabel("ms per SGD step")
    right.set_title("784-512-256-10 MLP, one training step")
    if sizes:
        right.legend(fontsize="small", ncols=2)
    fig.suptitle(results.source(), fontsize="small")
    fig.savefig(output, metadata={"Date": None} if output.suffix == ".svg" else None)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, help="an asv results file (default: the newest)")
    parser.add_argument("-o", "--output", type=Path, help="where to write the figure")
    args = parser.parse_args(argv)
    path = args.results or newest_results(RESULTS)
    results = load(path)
    if not results.backends():
        raise SystemExit(f"{path} has no {CHAIN.format('plugrad')} results")
    print(f"{results.source()} ({path})")
    print(table(results))
    if args.output is not None:
        plot(results, args.output)
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
