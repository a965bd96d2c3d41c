"""What a parallel snapshot worker answers (capture/postgres/snapshot_parallel.py, shared with
MySQL/MariaDB). ``encode_range``: the capture process reads a range's answer in order, so it must
hold every row once, in order: the range's first and last row, and every row ``encode`` fails on,
as values; the others encoded, in runs between them. ``portable_errors``: a worker's error reaches
the capture process, even one the parent could not rebuild from its pickle."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecdc.capture.postgres.snapshot_parallel import EncodedRows, encode_range, portable_errors
from lakecdc.capture.worker_process import default_signals
from lakecdc.errors import RecordConversionError


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


@portable_errors
def refused_task(kind: str) -> None:
    """A worker task failing with an error that does not survive pickling, or one that does."""
    if kind == "conversion":
        raise RecordConversionError("cannot encode the value of a record for topic 't'", object(), "value")
    raise ValueError("plain")


def test_an_error_the_parent_cannot_rebuild_reaches_it_as_a_runtime_error() -> None:
    context = multiprocessing.get_context("fork")
    # the snapshot pools' initializer: a SIGTERM handler this process holds must not keep terminate() waiting
    with context.Pool(1, default_signals) as pool:
        # without portable_errors the pool's result thread dies on it and get() waits forever
        with pytest.raises(RuntimeError, match="RecordConversionError: cannot encode the value of a record"):
            pool.apply_async(refused_task, ("conversion",)).get(60)
        with pytest.raises(ValueError, match="plain"):
            pool.apply_async(refused_task, ("value",)).get(60)
    with ProcessPoolExecutor(1, context, default_signals) as executor:
        with pytest.raises(RuntimeError, match="RecordConversionError"):
            executor.submit(refused_task, "conversion").result(60)
