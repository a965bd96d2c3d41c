"""Primary-key changes with placeholders for every key type, on real tables, for every writer.

The create of a key change takes its placeholder columns from the old key's stored silver row or
bronze events (``lakecdc.lake.key_moves``). Those lookups compare the batch's key values (Spark's
Arrow types: ``string``, ``binary``, ``decimal128``...) with what the table reads back (delta-rs:
``string_view``, ``binary_view``...), so each key type Arrow can read back is tried here: text,
UUID text, bytes, decimals, dates, timestamps (with and without zone), integers of every width,
and composite keys mixing them.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    BinaryType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampNTZType,
    TimestampType,
)
from writer_harness import STR, Ev, Stream, TableReader

from lakecdc.writers.base import LakeWriter, create_writer

pytestmark = pytest.mark.integration

UTC = dt.timezone.utc
#: key type -> (Spark type, two distinct values)
KEY_TYPES: dict[str, tuple[DataType, Any, Any]] = {
    "string": (StringType(), "alpha", "beta"),
    "uuid": (StringType(), str(uuid.UUID(int=1)), str(uuid.UUID(int=2))),
    "binary": (BinaryType(), b"\x00\x01", b"\xff\xfe"),
    "decimal": (DecimalType(20, 4), Decimal("1.5000"), Decimal("-2.2500")),
    "date": (DateType(), dt.date(2024, 2, 29), dt.date(1999, 12, 31)),
    "timestamp": (TimestampType(), dt.datetime(2024, 1, 1, 12, 0, tzinfo=UTC),
                  dt.datetime(2025, 6, 1, 0, 0, 1, tzinfo=UTC)),
    "timestamp_ntz": (TimestampNTZType(), dt.datetime(2024, 1, 1, 12, 0), dt.datetime(2025, 6, 1, 0, 0, 1)),
    "byte": (ByteType(), 1, -2),
    "short": (ShortType(), 300, -301),
    "int": (IntegerType(), 70000, -70001),
    "long": (LongType(), 2**40, -(2**40)),
}


@pytest.fixture(params=["iceberg", "delta-rs"])
def writer(request: pytest.FixtureRequest, spark: SparkSession, tmp_path: Path) -> Iterator[LakeWriter]:
    made = create_writer(request.param, spark, warehouse=str(tmp_path / "delta"))
    assert isinstance(made, LakeWriter)
    yield made


def _run(writer: LakeWriter, spark: SparkSession, keys: dict[str, tuple[DataType, Any, Any]],
         separate_batches: bool) -> None:
    names = list(keys)
    columns = [(k, t) for k, (t, _, _) in keys.items()] + [("title", STR), ("body", STR)]
    s = Stream(spark, "iceberg" if writer.format == "iceberg" else "delta", columns, keys=tuple(names))
    old = {k: v[1] for k, v in keys.items()}
    new = {k: v[2] for k, v in keys.items()}
    writer.apply(s.batch([Ev("c", 10, {**old, "title": "t", "body": "long text"})]), 1)
    delete = Ev("d", 20, dict(old))
    create = Ev("c", 20, {**new, "title": "t2"}, unavailable=("body",), old_key=old)
    if separate_batches:  # silver forgets the old row: it is found in bronze
        writer.apply(s.batch([delete]), 2)
        writer.apply(s.batch([create]), 3)
    else:  # the old row is found in silver
        writer.apply(s.batch([delete, create]), 2)
    rows = TableReader(writer).rows(s.target.silver_table)
    assert [(tuple(_norm(r[k]) for k in names), r["title"], r["body"]) for r in rows] == [
        (tuple(_norm(new[k]) for k in names), "t2", "long text")]


def _norm(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


@pytest.mark.parametrize("separate_batches", [False, True], ids=["silver", "bronze"])
def test_key_change_with_placeholder_for_a_key_of_every_type(writer: LakeWriter, spark: SparkSession,
                                                             separate_batches: bool) -> None:
    """One composite key of every type: each column is compared on its own in the silver and
    bronze lookups, so a type whose read-back differs fails the change (one table instead of one
    per type: the matrix took 20 minutes of the suite)."""
    _run(writer, spark, {f"k_{name}": spec for name, spec in KEY_TYPES.items()}, separate_batches)


@pytest.mark.parametrize("separate_batches", [False, True], ids=["silver", "bronze"])
@pytest.mark.parametrize("key_type", ["string", "binary", "timestamp"])
def test_key_change_with_placeholder_for_a_single_column_key(writer: LakeWriter, spark: SparkSession, key_type: str,
                                                             separate_batches: bool) -> None:
    """A one-column key (the common case) of the types whose read-back differs most (views, zones)."""
    _run(writer, spark, {"k": KEY_TYPES[key_type]}, separate_batches)
