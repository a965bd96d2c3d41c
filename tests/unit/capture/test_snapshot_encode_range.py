"""``encode_range``: what a parallel snapshot worker answers for one range (capture/postgres/
snapshot_parallel.py, shared with MySQL/MariaDB). The capture process reads the answer in order,
so it must hold every row once, in order: the range's first and last row, and every row ``encode``
fails on, as values; the others encoded, in runs between them."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.capture.postgres.snapshot_parallel import EncodedRows, encode_range


def answer(n: int, refused: set[int]) -> list[Any]:
    def encode(row: tuple[int]) -> tuple[bytes | None, bytes]:
        if row[0] in refused:
            raise ValueError(f"cannot encode {row[0]}")
        return str(row[0]).encode(), b"v%d" % row[0]

    return encode_range(((i,) for i in range(n)), encode)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 30).flatmap(lambda n: st.tuples(st.just(n), st.sets(st.integers(0, max(n - 1, 0))))))
def test_every_row_once_in_order(case: tuple[int, set[int]]) -> None:
    n, refused = case
    items = answer(n, refused)
    rows: list[int] = []
    for item in items:
        if type(item) is EncodedRows:
            assert item.pairs, "no empty runs"
            rows.extend(int(key) for key, _ in item.pairs)
        else:
            rows.append(item[0])
    assert rows == list(range(n))
    as_values = [item[0] for item in items if type(item) is not EncodedRows]
    # the first and last row always come back as values, and so does every row between that was refused
    assert as_values == sorted({0, n - 1} | refused) if n else as_values == []
    assert all(type(a) is not EncodedRows or type(b) is not EncodedRows for a, b in zip(items, items[1:]))


def test_a_refused_row_splits_the_run() -> None:
    items = answer(6, {2})
    assert items == [(0,), EncodedRows([(b"1", b"v1")]), (2,), EncodedRows([(b"3", b"v3"), (b"4", b"v4")]), (5,)]
