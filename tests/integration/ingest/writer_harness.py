"""Builds ``ChangeBatch``es from a few readable events, and reads tables back, for every writer.

The writer contract tests run one test body over every format; this module hides what differs:
how a format's tables are read back and how its commits are counted.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import ArrayType, DataType, LongType, StringType, StructField, StructType

from lakecdc.lake.batch import ChangeBatch, ColumnSpec, TableTarget
from lakecdc.writers.base import BATCH_META, TableWriter

INGEST_TS = datetime(2026, 11, 22, 9, 0, tzinfo=timezone.utc)


@dataclass
class Ev:
    """One change event: ``Ev("u", 12, {"id": 1, "name": "x"})``. ``seq`` is the commit LSN; the
    event LSN defaults to it."""

    op: str
    seq: int | tuple[int, ...]
    row: dict[str, Any] = field(default_factory=dict)
    unavailable: tuple[str, ...] = ()
    ts_ms: int | None = None
    offset: int | None = None
    partition: int = 0
    old_key: dict[str, Any] | None = None  # the create of a key change: header __debezium.oldkey

    def seq4(self) -> list[int]:
        if isinstance(self.seq, int):
            return [self.seq, self.seq, 0, 0]
        return list(self.seq) + [0] * (4 - len(self.seq))


class Stream:
    """One source table's topic: hands out Kafka offsets in order, like a broker would."""

    def __init__(self, spark: SparkSession, fmt: str, columns: list[tuple[str, DataType]],
                 keys: tuple[str, ...] = ("id",), delete_mode: str = "hard") -> None:
        self.spark = spark
        suffix = uuid.uuid4().hex[:8]
        self.topic = f"shop.public.t{suffix}"
        self.target = TableTarget(topic=self.topic, connector="postgres", database="shop", schema="public",
                                  table=f"t{suffix}", bronze_table=f"bronze.t{suffix}",
                                  silver_table=f"silver.t{suffix}", format=fmt,  # type: ignore[arg-type]
                                  key_columns=keys, delete_mode=delete_mode)  # type: ignore[arg-type]
        self.columns = [ColumnSpec(n, t, True) for n, t in columns]
        self.next_offset = 0

    def batch(self, events: list[Ev], columns: list[ColumnSpec] | None = None,
              replay_offsets: bool = False) -> ChangeBatch:
        columns = columns or self.columns
        rows = []
        progress: dict[tuple[str, int], int] = {}
        for e in events:
            if e.offset is None:
                e.offset = self.next_offset
                self.next_offset += 1
            key = {k: e.row.get(k) for k in self.target.key_columns}
            values = [e.row.get(c.name) for c in columns]
            rows.append((*values, e.op, e.seq4(), e.ts_ms if e.ts_ms is not None else 1_700_000_000_000 + e.seq4()[0],
                         f"{e.seq4()[0]}:{e.seq4()[0]}", None, self.topic, e.partition, e.offset, INGEST_TS,
                         list(e.unavailable), None if e.op == "t" or not key else _json(key),
                         None if e.old_key is None else _json(e.old_key)))
            tp = (self.topic, e.partition)
            progress[tp] = max(progress.get(tp, -1), e.offset)
        schema = StructType([StructField(c.name, c.data_type, True) for c in columns] + list(BATCH_META.fields))
        df = self.spark.createDataFrame(rows, schema)
        return ChangeBatch(self.target, list(columns), df, progress)


def _json(key: dict[str, Any]) -> str:
    import json
    return json.dumps(key, separators=(",", ":"), default=_json_value)


def _json_value(value: Any) -> Any:
    """Key values JSON has no type for, as Debezium's JSON converter writes them (bytes: base64)."""
    if isinstance(value, (bytes, bytearray)):
        import base64
        return base64.b64encode(bytes(value)).decode()
    return str(value)


class TableReader:
    """Reads a writer's tables back as lists of dicts, whatever the format."""

    def __init__(self, writer: TableWriter) -> None:
        self.writer = writer

    def rows(self, name: str, columns: list[str] | None = None) -> list[dict[str, Any]]:
        if self.writer.format == "iceberg" or not hasattr(self.writer, "table_uri"):  # Iceberg, Delta through Spark
            df = self.writer.spark.table(self.writer.resolve(name))  # type: ignore[attr-defined]
            return [r.asDict(recursive=True) for r in (df.select(*columns) if columns else df).collect()]
        from deltalake import DeltaTable
        table = DeltaTable(self.writer.table_uri(name)).to_pyarrow_table(columns=columns)  # type: ignore[attr-defined]
        return table.to_pylist()

    def commits(self, name: str) -> int:
        if self.writer.format == "iceberg":
            full = self.writer.resolve(name)  # type: ignore[attr-defined]
            return self.writer.spark.sql(f"SELECT * FROM {full}.snapshots").count()  # type: ignore[attr-defined]
        from deltalake import DeltaTable
        return DeltaTable(self.writer.table_uri(name)).version() + 1  # type: ignore[attr-defined]

    def by_key(self, name: str, key: str = "id") -> dict[Any, dict[str, Any]]:
        return {r[key]: r for r in self.rows(name)}

    def schema(self, name: str) -> dict[str, str]:
        stored = self.writer._table_schema(name)  # type: ignore[attr-defined]
        assert stored is not None, f"table {name} does not exist"
        return {f.name: f.dataType.simpleString() for f in stored.fields}


SEQ = ArrayType(LongType())
STR = StringType()
LONG = LongType()


class DriverRows:
    """A writer fed as the job feeds it batches the driver decoded: each ``ChangeBatch`` with its rows as
    Arrow too (``ChangeBatch.rows``), which the delta-rs writer's bronze identity uses
    (``lakecdc.lake.bronze_arrow``). Everything else is the wrapped writer's."""

    def __init__(self, writer: TableWriter) -> None:
        self.writer = writer

    def apply(self, batch: ChangeBatch, batch_id: int) -> Any:
        from dataclasses import replace

        from lakecdc.lake.frames import spark_to_arrow
        return self.writer.apply(replace(batch, rows=spark_to_arrow(batch.df)), batch_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.writer, name)
