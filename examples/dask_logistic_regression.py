"""Full-batch gradient descent for logistic regression on chunked data, on a Dask cluster.

The data set is a Dask array generated chunk by chunk on the workers of a
``dask.distributed`` ``LocalCluster`` and kept there (``persist``); by default
it is larger than the memory limit of any one worker, so no single process
ever holds it. The model's weights are plugrad tensors on the ``dask``
backend: the forward pass and plugrad's backward build one task graph over
every chunk, and :func:`plugrad.compute` runs the loss and both gradients
together on the cluster, once per iteration. The first gradient is checked
against its closed form, ``X.T @ (sigmoid(X @ w + b) - y) / rows``, computed
by Dask directly.

Run it (the defaults: 2,000,000 rows x 16 float64 features, 256 MB, in 20
chunks, on 4 workers limited to 200 MB each)::

    python examples/dask_logistic_regression.py
    python examples/dask_logistic_regression.py --small   # seconds: 40,000 rows, 2 workers

It prints the rows, chunks and workers, the loss and time of each iteration,
the median time per iteration, the accuracy against the labels, and the peak
resident memory of each worker process. Needs the dask extra and
``distributed`` (``pip install ".[dask]" distributed`` from a checkout).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import dask.array as da
import numpy as np
from dask.distributed import Client, LocalCluster

import plugrad
import plugrad.nn.functional as F


def peak_memory_bytes() -> int:
    """Peak resident memory of the calling process (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def make_data(rows: int, features: int, chunk_rows: int, seed: int) -> tuple[da.Array, da.Array]:
    """Features and 0/1 labels of a noisy linear model, generated chunk by chunk where they live."""
    rng = da.random.default_rng(seed)
    x = rng.standard_normal((rows, features), chunks=(chunk_rows, features))
    true_weights = np.linspace(-2.0, 2.0, features)
    noise = rng.logistic(size=(rows,), chunks=(chunk_rows,))
    y = (x @ true_weights + 0.5 + noise > 0).astype(np.float64)
    return x, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--chunk-rows", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--memory-limit", default="200MB", help="per worker")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument(
        "--small",
        action="store_true",
        help="40,000 rows in 4 chunks, 2 workers, 5 iterations: a check that runs in seconds",
    )
    args = parser.parse_args()
    if args.small:
        args.rows, args.chunk_rows, args.workers, args.iterations = 40_000, 10_000, 2, 5

    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            memory_limit=args.memory_limit,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        x_data, y_data = make_data(args.rows, args.features, args.chunk_rows, seed=0)
        x_data, y_data = client.persist([x_data, y_data])
        size = x_data.nbytes + y_data.nbytes
        print(
            f"rows {args.rows:,} x {args.features} features (float64, {size / 1e6:.0f} MB) in "
            f"{x_data.numblocks[0]} chunks of {args.chunk_rows:,} rows; "
            f"{len(client.scheduler_info()['workers'])} workers, {args.memory_limit} each"
        )

        x = plugrad.asarray(x_data)  # on the dask backend, chunks kept
        y = plugrad.asarray(y_data)
        w = plugrad.zeros(args.features, dtype=plugrad.float64, backend="dask", requires_grad=True)
        b = plugrad.zeros((), dtype=plugrad.float64, backend="dask", requires_grad=True)

        times = []
        for iteration in range(args.iterations):
            start = time.perf_counter()
            loss = F.binary_cross_entropy_with_logits(x @ w + b, y)
            loss.backward()  # builds the gradients' task graph; nothing is computed yet
            plugrad.compute(loss, w.grad, b.grad)  # one pass over the chunks for all three
            if iteration == 0:
                check_first_gradient(x_data, y_data, w.grad, b.grad)
            with plugrad.no_grad():
                w -= args.lr * w.grad
                b -= args.lr * b.grad
            w.grad = b.grad = None
            plugrad.compute(w, b)  # keep the parameters' graphs one step deep
            times.append(time.perf_counter() - start)
            print(f"iteration {iteration:3d}  loss {loss.item():.5f}  {times[-1]:.2f} s")

        with plugrad.no_grad():
            accuracy = plugrad.mean(plugrad.astype((x @ w + b > 0), plugrad.float64) == y)
        steady = times[1:] or times
        print(f"time per iteration (median after the first): {statistics.median(steady):.2f} s")
        print(f"accuracy on the {args.rows:,} rows: {accuracy.item():.4f}")
        peaks = client.run(peak_memory_bytes)
        print(
            "peak worker memory (resident): "
            + ", ".join(f"{peak / 1e6:.0f} MB" for peak in peaks.values())
        )


def check_first_gradient(
    x_data: da.Array, y_data: da.Array, w_grad: plugrad.Tensor, b_grad: plugrad.Tensor
) -> None:
    """At w = b = 0 the gradients are X.T @ (1/2 - y) / rows and mean(1/2 - y), by Dask alone."""
    residual = 0.5 - y_data
    expected_w, expected_b = da.compute(x_data.T @ residual / len(y_data), residual.mean())
    np.testing.assert_allclose(w_grad.numpy(), expected_w, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b_grad.item(), expected_b, rtol=1e-10, atol=1e-12)
    print("first gradient matches its closed form")


if __name__ == "__main__":
    main()
