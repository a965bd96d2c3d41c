"""Reading bronze and silver back as Arrow, and comparing them with the source, typed.

Both formats are read into Arrow so values keep their exact types: Iceberg through Spark
(``DataFrame._collect_as_arrow()`` keeps decimals and the UTC zone of timestamps; ``collect()``
would drop the zone), Delta through delta-rs. A silver table is compared with its source table
key by key and column by column:

- the silver column's Arrow type must be the one the source column's type maps to
  (``numeric(12,2)`` -> ``decimal128(12, 2)``, ``timestamptz`` -> ``timestamp[us, tz=UTC]``, ...);
- each value must equal the source value converted the way Debezium + ingest define it
  (uuid -> text, json -> the same JSON document, time -> microseconds of the day, ...).

A bronze table is compared with the change log the workload recorded: the multiset of
``(op, key)`` pairs must be identical (every change once, nothing twice, nothing invented).
"""

from __future__ import annotations

import json
import struct
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa


@dataclass(frozen=True)
class SourceColumn:
    """One source column: its name and the Arrow type silver must give it."""

    name: str
    arrow_type: pa.DataType
    kind: str  # how values convert: plain | float32 | uuid | json | time | interval | zoned | array


@dataclass(frozen=True)
class SourceTable:
    name: str
    key: tuple[str, ...]
    columns: tuple[SourceColumn, ...]
    rows: dict[tuple[Any, ...], dict[str, Any]]


@dataclass
class Differences:
    """Everything found wrong, one line each, so a failure shows all of it at once."""

    lines: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        if len(self.lines) < 60:
            self.lines.append(text)
        elif len(self.lines) == 60:
            self.lines.append("... (more differences left out)")

    def __bool__(self) -> bool:
        return bool(self.lines)

    def __str__(self) -> str:
        return "\n".join(self.lines)


# ---------------------------------------------------------------------------------- readers

class Lake:
    """The tables of one ingest job: ``<name>_bronze.<table>`` / ``<name>_silver.<table>``."""

    def __init__(self, spark: Any, warehouse: Path, namespace: str, formats: dict[str, str]) -> None:
        self.spark = spark
        self.warehouse = warehouse
        self.namespace = namespace
        self.formats = formats  # source table -> "iceberg" | "delta"

    def bronze_name(self, table: str) -> str:
        return f"{self.namespace}_bronze.{table}"

    def silver_name(self, table: str) -> str:
        return f"{self.namespace}_silver.{table}"

    def read(self, table: str, name: str) -> pa.Table | None:
        if self.formats[table] == "delta":
            from deltalake import DeltaTable

            path = str(self.warehouse.joinpath(*name.split(".")))
            if not DeltaTable.is_deltatable(path):
                return None
            return DeltaTable(path).to_pyarrow_table()
        full = f"lake.{name}"
        if not self.spark.catalog.tableExists(full):
            return None
        self.spark.sql(f"REFRESH TABLE {full}")
        return _arrow_of(self.spark.table(full))

    def silver(self, table: str) -> pa.Table | None:
        return self.read(table, self.silver_name(table))

    def bronze(self, table: str) -> pa.Table | None:
        return self.read(table, self.bronze_name(table))

    def versions(self, tables: Iterable[str]) -> dict[str, Any]:
        """The current version of every bronze and silver table (to show a run wrote nothing)."""
        out: dict[str, Any] = {}
        for table in tables:
            for name in (self.bronze_name(table), self.silver_name(table)):
                if self.formats[table] == "delta":
                    from deltalake import DeltaTable

                    path = str(self.warehouse.joinpath(*name.split(".")))
                    out[name] = DeltaTable(path).version() if DeltaTable.is_deltatable(path) else None
                elif self.spark.catalog.tableExists(f"lake.{name}"):
                    self.spark.sql(f"REFRESH TABLE lake.{name}")
                    out[name] = self.spark.sql(f"SELECT count(*) AS n FROM lake.{name}.snapshots").collect()[0].n
                else:
                    out[name] = None
        return out


def _arrow_of(df: Any) -> pa.Table:
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(df.schema)
    batches = df._collect_as_arrow()
    return pa.Table.from_batches(batches) if batches else schema.empty_table()


# ---------------------------------------------------------------------------------- types

def _same_type(actual: pa.DataType, expected: pa.DataType) -> bool:
    """Equal types, treating the string/binary/list layout variants of a reader as one."""
    def norm(t: pa.DataType) -> Any:
        if pa.types.is_string(t) or pa.types.is_large_string(t) or str(t) == "string_view":
            return "string"
        if pa.types.is_binary(t) or pa.types.is_large_binary(t) or str(t) == "binary_view":
            return "binary"
        if pa.types.is_list(t) or pa.types.is_large_list(t):
            return ("list", norm(t.value_type))
        if pa.types.is_timestamp(t):
            return ("timestamp", t.unit, (t.tz or "").replace("+00:00", "UTC").replace("Etc/UTC", "UTC") or None)
        return t
    return bool(norm(actual) == norm(expected))


def _float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def expected_value(kind: str, value: Any) -> Any:
    """The silver value for a source value of this column kind (Debezium + ingest's mapping)."""
    if value is None:
        return None
    if kind == "float32":
        return _float32(value)
    if kind == "uuid":
        return str(value) if isinstance(value, uuid.UUID) else str(uuid.UUID(str(value)))
    if kind == "json":
        return json.loads(value) if isinstance(value, str) else value
    if kind == "time":
        assert isinstance(value, time)
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    if kind == "interval":
        # Debezium's MicroDuration is computed in doubles and truncated like Java's (long) cast,
        # so 6 days 02:36:54.000008 becomes ...007 µs; that is the reference behaviour.
        assert isinstance(value, timedelta)
        hours, rest = divmod(value.seconds, 3600)
        minutes, whole = divmod(rest, 60)
        seconds = whole + value.microseconds / 1_000_000
        return int((((value.days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1e6)
    if kind == "zoned":
        assert isinstance(value, datetime)
        # MySQL TIMESTAMP is read naive in a session whose time_zone is UTC (e2e_mysql)
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    if kind == "bytes":
        return bytes(value)
    if kind == "array":
        return list(value)
    return value


def silver_value(kind: str, value: Any) -> Any:
    """A silver value brought to the form ``expected_value`` gives (only where a type has two forms)."""
    if value is None:
        return None
    if kind == "json":
        return json.loads(value)
    if kind == "zoned":
        assert isinstance(value, datetime) and value.tzinfo is not None, f"timestamp without zone: {value!r}"
        return value.astimezone(timezone.utc)
    if kind == "bytes":
        return bytes(value)
    return value


def values_equal(kind: str, expected: Any, actual: Any) -> bool:
    if expected is None or actual is None:
        return expected is None and actual is None
    if isinstance(expected, Decimal):
        # Equal as numbers and the scale silver shows is the column's (checked with the type).
        return isinstance(actual, Decimal) and expected == actual
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, datetime):
        return isinstance(actual, datetime) and (expected.tzinfo is None) == (actual.tzinfo is None) \
            and expected == actual
    if isinstance(expected, date):
        return isinstance(actual, date) and not isinstance(actual, datetime) and expected == actual
    if isinstance(expected, float):
        return isinstance(actual, float) and expected == actual
    if isinstance(expected, int):
        return isinstance(actual, int) and expected == actual
    return type(expected) is type(actual) and expected == actual


# ---------------------------------------------------------------------------------- comparisons

def stored_type(arrow_type: pa.DataType, table_format: str) -> pa.DataType:
    """The type a format stores: Iceberg has no 8/16-bit integers, so Spark writes them as int."""
    if table_format == "iceberg" and arrow_type in (pa.int8(), pa.int16()):
        return pa.int32()
    return arrow_type


def normal_key(key: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
    """A key as the lake spells it: Debezium's io.debezium.data.Uuid is text (the source gives UUIDs)."""
    return None if key is None else tuple(str(v) if isinstance(v, uuid.UUID) else v for v in key)


def compare_silver(source: SourceTable, silver: pa.Table | None, label: str, table_format: str) -> Differences:
    """Silver equals the source table: same keys, same column types, same typed values."""
    diff = Differences()
    if silver is None:
        diff.add(f"{label}: silver table {source.name} does not exist")
        return diff
    fields = {f.name: f.type for f in silver.schema}
    for column in source.columns:
        if column.name not in fields:
            diff.add(f"{label}: silver {source.name} has no column {column.name}")
        elif not _same_type(fields[column.name], stored_type(column.arrow_type, table_format)):
            diff.add(f"{label}: silver {source.name}.{column.name} is {fields[column.name]}, "
                     f"expected {stored_type(column.arrow_type, table_format)}")
    extra = [n for n in fields if not n.startswith("_") and n not in {c.name for c in source.columns}]
    if extra:
        diff.add(f"{label}: silver {source.name} has columns the source does not: {extra}")
    if diff:
        return diff
    rows = silver.to_pylist()
    if "_is_deleted" in fields:  # soft-delete mode: deleted rows stay, marked
        rows = [r for r in rows if not r.get("_is_deleted")]
    by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        key = tuple(row[k] for k in source.key)
        if key in by_key:
            diff.add(f"{label}: silver {source.name} holds key {key} twice")
        by_key[key] = row
    source_rows = {normal_key(k): row for k, row in source.rows.items()}
    missing = sorted(set(source_rows) - set(by_key), key=repr)
    unexpected = sorted(set(by_key) - set(source_rows), key=repr)
    for key in missing[:10]:
        diff.add(f"{label}: silver {source.name} lacks key {key}: source row {source_rows[key]}")
    for key in unexpected[:10]:
        diff.add(f"{label}: silver {source.name} has key {key} the source does not: {by_key[key]}")
    if len(missing) + len(unexpected) > 20:
        diff.add(f"{label}: {len(missing)} keys missing, {len(unexpected)} unexpected in silver {source.name}")
    for key in sorted(set(source_rows) & set(by_key), key=repr):
        want_row, have_row = source_rows[key], by_key[key]
        for column in source.columns:
            want = expected_value(column.kind, want_row[column.name])
            have = silver_value(column.kind, have_row[column.name])
            if not values_equal(column.kind, want, have):
                diff.add(f"{label}: silver {source.name} key {key} column {column.name}: "
                         f"source {want!r}, silver {have!r}")
    return diff


def compare_bronze(table: str, key: Sequence[str], expected: Counter[tuple[str, Any]], bronze: pa.Table | None,
                   label: str) -> Differences:
    """Bronze holds exactly the recorded changes: ``(op, key)`` multisets equal, offsets unique."""
    diff = Differences()
    if bronze is None:
        if expected:
            diff.add(f"{label}: bronze {table} does not exist; {sum(expected.values())} changes expected")
        return diff
    rows = bronze.select([*key, "_op", "_topic", "_kafka_partition", "_offset"]).to_pylist()
    actual: Counter[tuple[str, Any]] = Counter(
        (r["_op"], None if r["_op"] == "t" else tuple(r[k] for k in key)) for r in rows)
    expected = Counter({(op, normal_key(k)): n for (op, k), n in expected.items()})
    positions = Counter((r["_topic"], r["_kafka_partition"], r["_offset"]) for r in rows)
    repeated = {p: n for p, n in positions.items() if n > 1}
    if repeated:
        diff.add(f"{label}: bronze {table} holds Kafka records more than once: {list(repeated.items())[:5]}")
    if actual != expected:
        missing = expected - actual
        extra = actual - expected
        diff.add(f"{label}: bronze {table} has {sum(actual.values())} changes, the workload made "
                 f"{sum(expected.values())}; missing {sorted(missing.items(), key=repr)[:8]}, "
                 f"extra {sorted(extra.items(), key=repr)[:8]}")
    return diff


def arrow_type_of(data_type: str, udt_name: str, precision: int | None, scale: int | None,
                  element: str | None = None) -> tuple[pa.DataType, str]:
    """Arrow type and value kind silver must give a PostgreSQL column (information_schema names)."""
    simple: dict[str, tuple[pa.DataType, str]] = {
        "smallint": (pa.int16(), "plain"), "integer": (pa.int32(), "plain"), "bigint": (pa.int64(), "plain"),
        "real": (pa.float32(), "float32"), "double precision": (pa.float64(), "plain"),
        "boolean": (pa.bool_(), "plain"), "text": (pa.string(), "plain"),
        "character varying": (pa.string(), "plain"), "character": (pa.string(), "plain"),
        "bytea": (pa.binary(), "bytes"), "uuid": (pa.string(), "uuid"), "json": (pa.string(), "json"),
        "jsonb": (pa.string(), "json"), "date": (pa.date32(), "plain"),
        "timestamp without time zone": (pa.timestamp("us"), "plain"),
        "timestamp with time zone": (pa.timestamp("us", tz="UTC"), "zoned"),
        "time without time zone": (pa.int64(), "time"), "interval": (pa.int64(), "interval"),
        # MySQL/MariaDB names (information_schema.COLUMNS.DATA_TYPE)
        "int": (pa.int32(), "plain"), "tinyint": (pa.int16(), "plain"), "varchar": (pa.string(), "plain"),
        "char": (pa.string(), "plain"), "double": (pa.float64(), "plain"), "float": (pa.float32(), "float32"),
        "datetime": (pa.timestamp("us"), "plain"), "timestamp": (pa.timestamp("us", tz="UTC"), "zoned"),
        "blob": (pa.binary(), "bytes"), "varbinary": (pa.binary(), "bytes"), "longtext": (pa.string(), "json"),
        "mediumtext": (pa.string(), "plain"),
    }
    if data_type == "numeric" or data_type == "decimal":
        if precision is None:
            return pa.decimal128(38, 18), "plain"
        return pa.decimal128(precision, scale or 0), "plain"
    if data_type == "ARRAY":
        item, _ = simple[element or {"_text": "text", "_int4": "integer", "_int8": "bigint"}[udt_name]]
        return pa.list_(item), "array"
    if data_type not in simple:
        raise KeyError(f"no expected silver type for source type {data_type!r} ({udt_name})")
    return simple[data_type]


def check(diffs: Iterable[Differences]) -> None:
    """Fail with every difference found (across tables and formats), or pass."""
    lines = [line for d in diffs for line in d.lines]
    assert not lines, "silver/bronze differ from the source:\n" + "\n".join(lines)

