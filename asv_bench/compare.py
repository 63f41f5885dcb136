"""Time the benchmark workloads through plugrad, the hand-written floor and PyTorch.

The asv suite (``benchmarks/``) tracks plugrad against the floor over time;
this script answers "where do we stand today", against PyTorch too. It runs
each workload of ``benchmarks/_workloads.py`` three ways in one process,
interleaved (plugrad, floor, PyTorch, plugrad, ...), takes the median of each
side and of the ratios of each round, and prints two tables: the timings with
their ratios, and plugrad's performance targets with the measured value and
whether each is met. From the
repository root::

    python asv_bench/compare.py                   # Markdown, for a terminal or an issue
    python asv_bench/compare.py --format rst --output docs/performance_results.inc

The second form writes the fragment the documentation's Performance page includes.

On the CPU, times are the process's CPU time (``time.process_time``): time
during which other programs hold the processor is not counted, so results
from a busy machine stay comparable. Thread counts are pinned so that the
comparison is fair and steady: NumPy's BLAS (through ``OPENBLAS_NUM_THREADS``,
``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS``, set before NumPy is imported) and
PyTorch (``torch.set_num_threads``) both use ``--threads`` threads, 1 by
default. PyTorch is optional: without it, or for a backend that does not hold
its data on the CPU, its column shows n/a.

``--backend NAME`` runs plugrad and the floor on that backend; the other
columns are the library's own autograd where it has one. On ``torch`` the
PyTorch column is exactly that (PyTorch's autograd, eager, on the CPU). On
``jax`` two more columns time ``jax.value_and_grad`` of the same loss written
with ``jax.numpy``: run eagerly (each primitive dispatched on its own, as
plugrad's ops are) and under ``jax.jit`` (one XLA program)::

    python asv_bench/compare.py --backend torch --quick
    python asv_bench/compare.py --backend jax --quick --only "tiny|MLP training step, batch"
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Row:
    """One line of the timing table: a workload and the methods that run it each way."""

    title: str
    make: Callable[[str], Any]
    plugrad: str
    floor: str
    torch: str | None
    #: Shortest timed run for this workload, if longer than ``--seconds``.
    seconds: float = 0.0


@dataclass
class Target:
    """A performance target: ``measure(results)`` must not exceed ``limit``."""

    description: str
    limit: float
    measure: Callable[[dict[str, Any]], float | None]


def _rows(workloads: Any, quick: bool) -> list[Row]:
    w = workloads
    # (title, plugrad's method, the floor's), each at batch 8, 128 and 1024
    mlp_steps = (
        ("MLP training step, batch {}", "plugrad_step", "floor_step"),
        ("MLP step with nn + optim.SGD, batch {}", "plugrad_module_step", "floor_module_step"),
        ("MLP training step, batch {}, compiled", "plugrad_compiled_step", "floor_step"),
        ("MLP step with nn + optim.SGD, batch {}, compiled", "plugrad_compiled_module_step",
         "floor_module_step"),
        ("MLP step with nn + optim.SGD, batch {}, model compiled", "plugrad_compiled_model_step",
         "floor_module_step"),
    )  # fmt: skip
    mlp = [
        Row(title.format(batch), lambda b, n=batch: w.MLPStep(b, n), method, floor, "torch_step")
        for title, method, floor in mlp_steps
        for batch in (8, 128, 1024)
    ] + [
        Row("MLP training step, batch 8, capture (first call of a new plan)",
            lambda b: w.MLPStep(b, 8), "plugrad_capture_step", "floor_step", "torch_step"),
        Row("MLP training step, batch 8, capture and first replay (two steps; the floor's two)",
            lambda b: w.MLPStep(b, 8), "plugrad_capture_and_first_replay", "floor_two_steps",
            None),
    ]  # fmt: skip
    # A deep graph is many Python objects: the garbage collector's full collections come
    # every few chains. Runs of half a second include them in proportion, where the
    # median of single-chain runs would leave them out.
    long_chains = [
        Row(f"{n:,}-op chain, forward + backward", lambda b, n=n: w.LongChain(b, n),
            "plugrad_forward_backward", "floor_forward_backward", "torch_forward_backward",
            seconds=0.1 if quick else 0.5)
        for n in ((10_000,) if quick else (10_000, 100_000))
    ] + [
        Row("10,000-op chain, forward + backward, compiled", lambda b: w.LongChain(b, 10_000),
            "plugrad_compiled_forward_backward", "floor_forward_backward",
            "torch_forward_backward", seconds=0.1 if quick else 0.5),
    ]  # fmt: skip
    return [
        Row("tiny 5-op chain, forward + backward", lambda b: w.ElementwiseChain(b, 4),
            "plugrad_forward_backward", "floor_forward_backward", "torch_forward_backward"),
        Row("tiny 5-op chain, forward + backward, compiled", lambda b: w.ElementwiseChain(b, 4),
            "plugrad_compiled_forward_backward", "floor_forward_backward",
            "torch_forward_backward"),
        Row("tiny 5-op chain, forward (no_grad)", lambda b: w.ElementwiseChain(b, 4),
            "plugrad_forward_no_grad", "floor_forward", "torch_forward_no_grad"),
        Row("5-op chain on 10^6 elements, forward + backward",
            lambda b: w.ElementwiseChain(b, 1_000_000),
            "plugrad_forward_backward", "floor_forward_backward", "torch_forward_backward"),
        Row("matmul 128 x 128, forward + backward", w.MatMul,
            "plugrad_forward_backward", "floor_forward_backward", "torch_forward_backward"),
        Row("var over 256 x 256, forward + backward", w.Reduction,
            "plugrad_forward_backward", "floor_forward_backward", "torch_forward_backward"),
        Row("take 4096 rows of 1024 x 16, forward + backward", w.Indexing,
            "plugrad_forward_backward", "floor_forward_backward", "torch_forward_backward"),
        *mlp,
        *long_chains,
    ]  # fmt: skip


#: The columns beside plugrad's: key in the results, heading, prefix of the method names.
OTHERS = (
    ("floor", "floor", None),
    ("torch", "PyTorch", None),
    ("jax_grad", "jax.grad", "jax_"),
    ("jax_jit", "jax.jit(jax.grad)", "jax_jit_"),
)


def _jax_method(row: Row, prefix: str) -> str | None:
    """The workload method timing ``row`` with JAX's autograd, named after its PyTorch one."""
    if row.torch is None or not row.torch.startswith("torch_"):
        return None
    return prefix + row.torch.removeprefix("torch_")


def _ratio(results: dict[str, Any], title: str, other: str) -> float | None:
    """plugrad over ``other`` (a key of :data:`OTHERS`): the median of the rounds' ratios."""
    entry = results.get(title)
    if entry is None or entry.get(other) is None:
        return None
    ratios = entry.get("ratios")
    return entry["plugrad"] / entry[other] if ratios is None else ratios[other]


def _per_op_growth(results: dict[str, Any]) -> float | None:
    short = results.get("10,000-op chain, forward + backward")
    long = results.get("100,000-op chain, forward + backward")
    if short is None or long is None:
        return None
    return (long["plugrad"] / 100_000) / (short["plugrad"] / 10_000)


def _ratio_target(workload: str, other: str, limit: float, *, compiled: bool = False) -> Target:
    """The target that plugrad's time (or memory) on ``workload`` over ``other``'s is at
    most ``limit``; ``compiled``: on the row timing ``workload`` compiled."""
    versus = "PyTorch" if other == "torch" else other
    title = f"{'compiled ' if compiled else ''}{workload}: plugrad / {versus}"
    row = f"{workload}, compiled" if compiled else workload
    return Target(title, limit, lambda r: _ratio(r, row, other))


TARGETS = [
    _ratio_target("tiny 5-op chain, forward + backward", "torch", 0.5),
    _ratio_target("tiny 5-op chain, forward (no_grad)", "torch", 0.5),
    _ratio_target("MLP training step, batch 8", "floor", 1.15),
    _ratio_target("MLP training step, batch 128", "floor", 1.10),
    _ratio_target("MLP training step, batch 1024", "floor", 1.05),
    _ratio_target("10,000-op chain, forward + backward", "torch", 0.5),
    Target("100,000-op chain: time per op / that of the 10,000-op chain (linear: 1)", 1.2,
           _per_op_growth),
    _ratio_target("peak memory, wide MLP forward + backward", "floor", 1.05),
    _ratio_target("tiny 5-op chain, forward + backward", "torch", 0.3, compiled=True),
    _ratio_target("tiny 5-op chain, forward + backward", "floor", 1.5, compiled=True),
    _ratio_target("10,000-op chain, forward + backward", "torch", 0.3, compiled=True),
    *(
        _ratio_target(f"{workload}, batch {batch}", "floor", limit, compiled=True)
        for workload in ("MLP training step", "MLP step with nn + optim.SGD")
        for batch, limit in ((8, 1.05), (128, 1.03), (1024, 1.02))
    ),
    Target("capture of the MLP step, batch 8: capture / one eager step", 3.0,
           lambda r: _over(r, "MLP training step, batch 8, capture (first call of a new plan)",
                           "MLP training step, batch 8")),
    _ratio_target("peak memory, wide MLP forward + backward, compiled", "floor", 1.0),
]  # fmt: skip


def _over(results: dict[str, Any], title: str, other_title: str) -> float | None:
    """plugrad's time in ``title`` over plugrad's in ``other_title``, through the floor.

    The two rows run at different moments, and a busy machine slows both sides
    of a row alike: each row's ratio to its own floor (timed beside it) is
    steady where the raw medians are not, and the floor's step is the same in both.
    """
    entry, other = _ratio(results, title, "floor"), _ratio(results, other_title, "floor")
    if entry is None or other is None:
        return None
    return entry / other


def measure(
    backend: str, repeat: int, seconds: float, use_torch: bool, quick: bool, only: str | None
) -> dict[str, Any]:
    """Run every workload; return ``{title: {"plugrad": s, "floor": s, "torch": s | None}}``."""
    from benchmarks import _workloads as workloads
    from benchmarks._common import interleaved_runs, median_ratio, medians, synchronised

    torch = _import_torch() if use_torch else None
    jax = _import_jax() if backend == "jax" else None
    results: dict[str, Any] = {}
    for row in _rows(workloads, quick):
        if only and not re.search(only, row.title):
            continue
        jax_methods = [
            (key, method)
            for key, _, prefix in OTHERS
            if prefix and jax is not None and (method := _jax_method(row, prefix))
        ]
        try:
            work = row.make(backend)
            if torch is not None and row.torch is not None:
                work.use_torch(torch)
            jax_methods = [(k, m) for k, m in jax_methods if hasattr(work, m)]
            if jax_methods:
                try:
                    work.use_jax(jax)
                except NotImplementedError:  # no JAX version of this workload
                    jax_methods = []
            work.check()
            if work.compile_gap and ("compiled" in row.plugrad or "capture" in row.plugrad):
                raise NotImplementedError(work.compile_gap)
        except NotImplementedError as exc:
            print(f"skipped {row.title}: {exc}", file=sys.stderr)
            continue
        sides = [("plugrad", row.plugrad), ("floor", row.floor)]
        if work.torch is not None:
            sides.append(("torch", row.torch))
        sides += jax_methods
        fns = [synchronised(getattr(work, method), work.sync) for _, method in sides]
        rounds = repeat if not row.seconds else max(3, repeat // 3)
        runs = interleaved_runs(
            fns, repeat=rounds, seconds=max(seconds, row.seconds), clock=work.clock
        )
        entry: dict[str, Any] = {key: None for key in ("plugrad", *(k for k, _, _ in OTHERS))}
        entry["ratios"] = {}
        for index, ((name, _), median) in enumerate(zip(sides, medians(runs))):
            entry[name] = median
            if index:
                entry["ratios"][name] = median_ratio(runs, 0, index)
        results[row.title] = entry
        print(f"measured {row.title}", file=sys.stderr)
        del work
    title = "peak memory, wide MLP forward + backward"
    if backend == "numpy" and (not only or re.search(only, title)):
        memory = workloads.MLPMemory(backend)
        memory.check()
        results[title] = {
            "plugrad": workloads.traced_peak(memory.plugrad_step),
            "floor": workloads.traced_peak(memory.floor_step),
            "torch": None,  # tracemalloc does not see PyTorch's allocator
            "unit": "bytes",
        }
        compiled_title = title + ", compiled"
        results[compiled_title] = {
            "plugrad": workloads.traced_peak(memory.plugrad_compiled_step),
            "floor": results[title]["floor"],
            "torch": None,
            "unit": "bytes",
        }
    return results


def _import_torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def _import_jax() -> Any:
    import jax  # the jax backend resolved, so JAX is installed

    return jax


# -- output ---------------------------------------------------------------------------------


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _amount(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    return f"{value / 2**20:.1f} MiB" if unit == "bytes" else _time(value)


def _fmt_ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def tables(results: dict[str, Any]) -> tuple[list[list[str]], list[list[str]]]:
    """The timing table and the target table, as rows of strings (header first)."""
    # floor and PyTorch always; JAX's columns when some workload was timed with them
    others = [
        (key, heading)
        for key, heading, prefix in OTHERS
        if not prefix or any(entry.get(key) is not None for entry in results.values())
    ]
    timing = [
        ["workload", "plugrad", *(heading for _, heading in others)]
        + [f"plugrad / {heading}" for _, heading in others]
    ]
    for title, entry in results.items():
        unit = entry.get("unit", "seconds")
        timing.append(
            [
                title,
                _amount(entry["plugrad"], unit),
                *(_amount(entry.get(key), unit) for key, _ in others),
                *(_fmt_ratio(_ratio(results, title, key)) for key, _ in others),
            ]
        )
    targets = [["target", "limit", "measured", "met"]]
    for target in TARGETS:
        value = target.measure(results)
        met = "n/a" if value is None else ("yes" if value <= target.limit else "no")
        measured = "n/a" if value is None else f"{value:.3f}"
        targets.append([target.description, f"{target.limit:.2f}", measured, met])
    return timing, targets


def markdown(table: list[list[str]]) -> str:
    lines = ["| " + " | ".join(row) + " |" for row in table]
    lines.insert(1, "|" + "|".join("---" for _ in table[0]) + "|")
    return "\n".join(lines)


def rst(table: list[list[str]]) -> str:
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in table:
        lines.append(f"   * - {row[0]}")
        lines.extend(f"     - {cell}" for cell in row[1:])
    return "\n".join(lines)


def machine_description(threads: int, torch_version: str | None) -> str:
    import numpy

    import plugrad

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if "model name" in line)
    except (OSError, StopIteration):
        pass
    parts = [
        f"{cpu}, {os.cpu_count()} logical cores, {platform.system()} {platform.release()}",
        f"Python {platform.python_version()}, plugrad {plugrad.__version__}, "
        f"NumPy {numpy.__version__}"
        + (f", PyTorch {torch_version}" if torch_version else ", PyTorch not installed")
        + (f", JAX {sys.modules['jax'].__version__}" if "jax" in sys.modules else ""),
        f"BLAS and PyTorch threads: {threads}",
    ]
    return "; ".join(parts)


def report(results: dict[str, Any], args: argparse.Namespace, torch_version: str | None) -> str:
    timing, targets = tables(results)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    about = (
        f"Measured {when} on {machine_description(args.threads, torch_version)}. "
        f"Backend {args.backend!r}. In each of {args.repeat} rounds, plugrad, the floor and "
        "PyTorch run in turn (every other round in reverse order); times are medians over "
        "the rounds (per call; the process's CPU time on the CPU, wall time with the device "
        "waited for on a GPU), ratios the medians of the rounds' ratios. Memory is "
        "tracemalloc's peak during one step."
    )
    if args.format == "rst":
        return "\n\n".join([about, rst(timing), rst(targets)]) + "\n"
    return "\n\n".join([about, markdown(timing), markdown(targets)]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="numpy", help="plugrad backend (default: numpy)")
    parser.add_argument("--format", choices=("markdown", "rst"), default="markdown")
    parser.add_argument("--output", type=Path, help="write the report here instead of stdout")
    parser.add_argument("--threads", type=int, default=1, help="BLAS and PyTorch threads")
    parser.add_argument("--repeat", type=int, default=21, help="rounds of timed runs (median)")
    parser.add_argument(
        "--seconds", type=float, default=0.02, help="length of one timed run (calls are batched)"
    )
    parser.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    parser.add_argument(
        "--quick", action="store_true", help="3 short runs per side, no 100,000-op chain"
    )
    parser.add_argument("--only", metavar="REGEX", help="only workloads whose title matches")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat, args.seconds = 3, 0.01

    # Before NumPy (and its BLAS) is imported: the thread count is read at load time.
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(args.threads)
    sys.path.insert(0, str(Path(__file__).resolve().parent))

    from benchmarks._common import device_or_skip

    try:
        device = device_or_skip(args.backend)
    except NotImplementedError as exc:
        parser.error(str(exc))
    on_cpu = device.backend.dlpack_device(device.native) == (1, 0)
    torch = None if args.no_torch or not on_cpu else _import_torch()
    if torch is not None:
        torch.set_num_threads(args.threads)
    results = measure(
        args.backend, args.repeat, args.seconds, torch is not None, args.quick, args.only
    )
    text = report(results, args, None if torch is None else torch.__version__.split("+")[0])
    if args.output is None:
        print(text)
    else:
        args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
