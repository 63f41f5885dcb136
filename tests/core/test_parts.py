"""PLUGRAD_TEST_PART splits the selected tests into parts without overlap."""

from __future__ import annotations

import pytest
from parts import in_part, parse_part


def test_the_parts_split_the_tests_without_overlap_and_miss_none() -> None:
    ids = [f"tests/core/test_x.py::test_{i}[numpy-{i % 7}]" for i in range(300)]
    for n in (1, 2, 3):
        parts = [{i for i in ids if in_part(i, (k, n))} for k in range(1, n + 1)]
        assert sum(len(p) for p in parts) == len(ids) and set().union(*parts) == set(ids)
        assert all(len(p) > len(ids) / n / 2 for p in parts)  # roughly even, none empty
    assert [in_part(i, (1, 2)) for i in ids] == [in_part(i, (1, 2)) for i in ids]


def test_a_part_is_read_as_k_of_n() -> None:
    assert parse_part("1/2") == (1, 2) and parse_part("3/3") == (3, 3)
    assert parse_part(None) is None and parse_part("") is None


@pytest.mark.parametrize("value", ["3/2", "0/2", "half", "1/", "/2", "1/2/3"])
def test_a_malformed_part_is_refused_saying_how_to_write_it(value: str) -> None:
    with pytest.raises(pytest.UsageError, match=r"write K/N with 1 <= K <= N"):
        parse_part(value)
