"""What the engine's check of every backward rule's result costs, per node.

The engine trusts no rule: after each rule it checks that the gradient is an
array of the output gradient's kind with its input's shape and dtype, on its
input's device where the backend has several (and goes to the full check,
naming the op and its plugin, only when not). The budget is
0.2 µs per node. This script measures it two ways, in one process::

    python asv_bench/rule_check_cost.py

1. the check itself, on the arrays a rule returns (``timeit``, best of runs),
   and on a stream of fresh gradients, each made by a NumPy op just before it
   is checked, as in backward (A/B interleaved, median of the in-round
   differences): the first figure reuses one array in a tight loop, the
   second is what a node pays;
2. backward over a chain of ``--ops`` ops, with the engine's node classes as
   they are and with the check cut out of their source (A/B interleaved, each
   first in every other round; best of runs and median of the in-round
   differences). On a busy machine the second is noisy; the first is not.
3. with ``--parts``, where the time goes, in the same rounds: the check kept
   up to its type test, up to its dtype test, up to its shape test (without
   the device test, whose cost on a one-device backend is reading that the
   device is its backend's only one), and whole but compared with a
   spec of the chain's shape and dtype held in advance (nothing read of the
   input), each against the chain without the check (median of the in-round
   differences).

Times are CPU time of this process (``time.process_time``), so time during
which other programs hold the processor is not counted.
"""

from __future__ import annotations

import argparse
import inspect
import os
import statistics
import textwrap
import time
import timeit
from collections.abc import Callable
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

import plugrad
from plugrad import graph

CHECK = (
    "type(g) is not type(grad) or g.dtype is not x.dtype or g.shape != x.shape"
    " or (not device.only_device and device.backend.device_of(g) != device.native)"
)


def check_cost(number: int = 1_000_000, repeat: int = 7) -> float:
    """µs per evaluation of the engine's fast check, less that of an empty function.

    The check runs inside a function, as in the engine, so names are local.
    """
    grad = np.ones(4, np.float32)
    namespace: dict[str, Any] = {}
    exec(
        f"def checked(g, grad, x, device):\n    if {CHECK}:\n        raise AssertionError\n"
        "def unchecked(g, grad, x, device):\n    pass\n",
        namespace,
    )
    names = {**namespace, "g": grad * 2, "grad": grad, "x": np.ones(4, np.float32)}
    names["device"] = plugrad.ones(1).device  # NumPy's only device: no device test
    kwargs = {"globals": names, "number": number, "repeat": repeat, "timer": time.process_time}
    checked = min(timeit.repeat("checked(g, grad, x, device)", **kwargs))
    empty = min(timeit.repeat("unchecked(g, grad, x, device)", **kwargs))
    return (checked - empty) / number * 1e6


def fresh_check_cost(gradients: int = 2000, rounds: int = 100) -> float:
    """µs per check of gradients that a NumPy op has just made, less the same loop unchecked.

    Each gradient is new and each check follows a kernel call, as in a backward
    pass; the median of the in-round differences is returned.
    """
    namespace: dict[str, Any] = {}
    exec(
        "def checked(grads, x, device):\n    for grad in grads:\n        g = grad * 0.5\n"
        f"        if {CHECK}:\n            raise AssertionError\n"
        "def unchecked(grads, x, device):\n    for grad in grads:\n        g = grad * 0.5\n",
        namespace,
    )
    grads = [np.ones(4, np.float32) for _ in range(gradients)]
    x = np.ones(4, np.float32)
    device = plugrad.ones(1).device  # NumPy's only device: no device test
    differences = []
    for round_index in range(rounds):
        times = {}
        names = ("checked", "unchecked") if round_index % 2 == 0 else ("unchecked", "checked")
        for name in names:
            start = time.process_time()
            namespace[name](grads, x, device)
            times[name] = time.process_time() - start
        differences.append((times["checked"] - times["unchecked"]) / gradients * 1e6)
    return statistics.median(differences)


def _check_opening(lines: list[str], index: int) -> int:
    """How many lines, from ``lines[index]``, open the check of a rule's result (0: none).

    The check is ``if type(g...) is not ...:`` on one line, or its condition in
    parentheses, one test per line, up to ``):``.
    """
    line = lines[index].strip()
    if line.startswith("if type(g") and "is not" in line:
        return 1
    if line == "if (" and lines[index + 1].strip().startswith("type(g"):
        end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "):")
        return end - index + 1
    return 0


def _variant(cls: type, condition: Callable[[str], str] | None) -> Callable[..., Any]:
    """``cls._backward`` compiled again from its source with the result check changed.

    ``condition`` maps the check's condition (``type(g) is not ... or g.shape != ...``)
    to the one to test instead; ``None`` cuts the check out with the
    ``checked_gradient(...)`` call under it.
    """
    lines = textwrap.dedent(inspect.getsource(cls._backward)).splitlines()
    kept, changed, index = [], 0, 0
    while index < len(lines):
        line = lines[index]
        opening = _check_opening(lines, index)
        if not opening:
            kept.append(line)
            index += 1
            continue
        changed += 1
        if condition is None:  # the check and the checked_gradient(...) call under it
            index += opening + 1
            continue
        text = " ".join(part.strip() for part in lines[index : index + opening])
        text = text.removeprefix("if").strip().removesuffix(":").strip()
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1].strip()
        indent = line[: len(line) - len(line.lstrip())]
        kept.append(f"{indent}if {condition(text)}:")
        index += opening
    if not changed:
        raise SystemExit(f"{cls.__name__}._backward has no check to change: update this script")
    namespace: dict[str, Any] = {}
    exec("\n".join(kept), {**vars(graph), "_HELD": _HELD_SPEC}, namespace)
    return namespace["_backward"]


#: The shape and dtype of every input of the chain, as a node could hold them in advance.
_HELD_SPEC = graph.ArraySpec((4,), np.dtype(np.float32))


def _first_tests(count: int) -> Callable[[str], str]:
    """The check's condition kept up to its ``count``-th test."""
    return lambda condition: " or ".join(condition.split(" or ")[:count])


def _against_held_spec(condition: str) -> str:
    """The check's condition with the input's dtype and shape read from ``_HELD``.

    A global is read at least as fast as anything a node could hold, so this is
    the most that recording the input's shape and dtype in advance could save.
    """
    tests = []
    for test in condition.split(" or "):
        for operator, attribute in ((" is not ", "dtype"), (" != ", "shape")):
            head, found, tail = test.partition(operator)
            if found and tail.endswith(f".{attribute}"):
                test = f"{head}{operator}_HELD.{attribute}"
        tests.append(test)
    return " or ".join(tests)


def chain_cost(ops: int, rounds: int, parts: bool = False) -> dict[str, tuple[float, float]]:
    """µs per node of backward over ``ops`` ops, per variant of the check: the best over
    rounds, and the median over rounds of the difference from the chain without the
    check within a round (less sensitive to load changes).
    """
    classes = (graph.UnaryOpNode, graph.BinaryOpNode)
    conditions: dict[str, Callable[[str], str] | None] = {"checked": None, "unchecked": None}
    if parts:
        conditions |= {
            "the type test": _first_tests(1),
            "the type and dtype tests": _first_tests(2),
            "the type, dtype and shape tests (no device test)": _first_tests(3),
            "the whole check against a spec held in advance": _against_held_spec,
        }
    variants = {
        name: {
            cls: cls._backward if name == "checked" else _variant(cls, condition) for cls in classes
        }
        for name, condition in conditions.items()
    }
    x = plugrad.tensor(np.ones(4, np.float32), requires_grad=True)
    best = dict.fromkeys(variants, float("inf"))
    differences: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    try:
        for round_index in range(rounds):
            times = {}
            # Each variant goes first in every other round, so none gains from its place.
            for name in names if round_index % 2 == 0 else names[::-1]:
                methods = variants[name]
                for cls, method in methods.items():
                    cls._backward = method
                y = x
                for _ in range(ops // 2):
                    y = plugrad.sin(y * 0.999)  # a binary node, then a unary one
                loss = y.sum()
                del y  # only the graph of this round is alive while it runs
                x.grad = None
                start = time.process_time()
                loss.backward()
                times[name] = (time.process_time() - start) / (ops + 1) * 1e6
                del loss
                best[name] = min(best[name], times[name])
            for name in names:
                differences[name].append(times[name] - times["unchecked"])
    finally:
        for cls, method in variants["checked"].items():
            cls._backward = method
    return {name: (best[name], statistics.median(differences[name])) for name in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=2000, help="length of the chain")
    parser.add_argument("--rounds", type=int, default=30, help="A/B rounds of the chain")
    parser.add_argument(
        "--parts", action="store_true", help="also time parts of the check (see above)"
    )
    args = parser.parse_args()
    per_check = check_cost()
    print(f"the check alone: {per_check:.3f} µs per gradient (budget 0.2 µs per node)")
    print(f"the check of fresh gradients: {fresh_check_cost():.3f} µs per gradient")
    results = chain_cost(args.ops, args.rounds, args.parts)
    (checked, median), (unchecked, _) = results.pop("checked"), results.pop("unchecked")
    print(
        f"backward over a {args.ops}-op chain: {checked:.3f} µs per node with the check, "
        f"{unchecked:.3f} µs without (best of {args.rounds}): {checked - unchecked:+.3f} µs "
        f"per node; median difference within a round {median:+.3f} µs per node"
    )
    for name, (_, part_median) in results.items():
        print(f"  {name}: {part_median:+.3f} µs per node (median difference within a round)")


if __name__ == "__main__":
    main()
