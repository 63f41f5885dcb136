"""``PLUGRAD_TEST_PART=K/N``: the K-th of N parts of the selected tests, for bounded runs.

Each test belongs to one part, chosen by a hash of its id: the same parts on
every run. CI runs the slow suites with JAX and Dask as the default backend,
and their op tables, one part a day, the part turning with the day.
"""

from __future__ import annotations

import zlib

import pytest


def parse_part(value: str | None) -> tuple[int, int] | None:
    """``(K, N)`` from ``"K/N"``; ``None`` for no value; a usage error saying how to write it."""
    if not value:
        return None
    part, _, parts = value.partition("/")
    try:
        k, n = int(part), int(parts)
    except ValueError:
        k = n = 0
    if not 1 <= k <= n:
        raise pytest.UsageError(
            f"PLUGRAD_TEST_PART={value!r}: write K/N with 1 <= K <= N, e.g. 1/2 for the first "
            "of two parts"
        )
    return k, n


def in_part(nodeid: str, part: tuple[int, int]) -> bool:
    """Whether the test ``nodeid`` belongs to ``part`` (``(K, N)``)."""
    k, n = part
    return zlib.crc32(nodeid.encode()) % n == k - 1
