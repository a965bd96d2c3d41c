"""Decoded rows of one topic, grouped by the value schema they were written with.

A micro-batch of one topic may hold records written under two schema versions (a column was
added at the source mid-batch). Each version decodes into its own ``DecodedSegment``; before the
rows are handed to a writer they are joined by ``union_segments``: the columns of the newest
version first, in its order, then columns only older versions had (kept, as nullable); where a
column's type differs, the newest type wins and older values are cast to it. A cast that cannot
be done (text that is not a number) stops that table with a ``SchemaEvolutionError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from lakecdc.errors import SchemaEvolutionError
from lakecdc.lake.batch import ColumnSpec
from lakecdc.lake.layout import METADATA_COLUMNS

#: Arrow types of the metadata columns (``lakecdc.lake.layout.METADATA_COLUMNS``).
METADATA_ARROW: dict[str, pa.DataType] = {
    "_op": pa.string(),
    "_seq": pa.list_(pa.int64()),
    "_source_ts_ms": pa.int64(),
    "_tx_id": pa.string(),
    "_tx_total_order": pa.int64(),
    "_topic": pa.string(),
    "_partition": pa.int32(),
    "_offset": pa.int64(),
    "_ingest_ts": pa.timestamp("us", tz="UTC"),
    "_unavailable": pa.list_(pa.string()),
    "_key_json": pa.string(),
    "_old_key_json": pa.string(),
}
assert [n for n, _ in METADATA_COLUMNS] == list(METADATA_ARROW), "metadata columns out of sync"


@dataclass(frozen=True)
class SourceTable:
    """Where a topic's events come from, read from the events' ``source`` block."""

    connector: str  # Debezium's source.connector: "postgresql", "mysql", "sqlserver", "oracle"
    database: str | None
    schema: str | None
    table: str

    @property
    def data_collection(self) -> str:
        """The name Debezium's transaction END uses for this table (``public.customers``)."""
        parts: tuple[str | None, ...]
        if self.connector == "postgresql":
            parts = (self.schema, self.table)
        elif self.connector in ("mysql", "mariadb"):
            parts = (self.database, self.table)
        else:
            parts = (self.database, self.schema, self.table)
        return ".".join(p for p in parts if p)


@dataclass
class DecodedSegment:
    """Rows of one topic decoded with one value schema (row columns + metadata columns)."""

    topic: str
    schema_id: int  # order of first sight in the decoder: a larger id is a newer schema version
    columns: list[ColumnSpec]
    key_columns: tuple[str, ...]
    source: SourceTable
    rows: pa.Table

    @property
    def num_rows(self) -> int:
        return self.rows.num_rows

    @property
    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema of the segment's decoded rows."""
        return self.rows.schema


def union_columns(segments: Sequence[DecodedSegment]) -> tuple[list[ColumnSpec], dict[str, pa.DataType]]:
    """The columns of the joined table and their Arrow types (see the module docstring for the rules)."""
    if not segments:
        raise ValueError("union_segments needs at least one segment")
    # Schema ids grow in the order versions were first read, so the largest id is the newest version.
    ordered = sorted(segments, key=lambda s: s.schema_id, reverse=True)
    columns: list[ColumnSpec] = []
    arrow_types: dict[str, pa.DataType] = {}
    for segment in ordered:  # newest first: its columns and types win
        schema = segment.arrow_schema
        for column in segment.columns:
            if column.name not in arrow_types:
                arrow_types[column.name] = schema.field(column.name).type
                columns.append(column)
    return columns, arrow_types


def conform(rows: pa.Table, topic: str, columns: list[ColumnSpec], arrow_types: dict[str, pa.DataType]) -> pa.Table:
    """``rows`` (one schema version) with exactly the joined columns: missing ones null, older types cast."""
    arrays = []
    for column in columns:
        wanted = arrow_types[column.name]
        if column.name not in rows.column_names:
            arrays.append(pa.nulls(rows.num_rows, type=wanted))
            continue
        current = rows.column(column.name)
        if current.type != wanted:
            try:
                current = current.cast(wanted)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaEvolutionError(
                    f"topic '{topic}': column '{column.name}' changed from {current.type} to "
                    f"{wanted} within one batch and the older values cannot be converted ({exc})"
                ) from exc
        arrays.append(current)
    arrays += [rows.column(name) for name, _ in METADATA_COLUMNS]
    return pa.Table.from_arrays(arrays, names=[c.name for c in columns] + [n for n, _ in METADATA_COLUMNS])


def union_segments(segments: list[DecodedSegment]) -> tuple[list[ColumnSpec], pa.Table]:
    """Join segments of one topic into one table (see the module docstring for the rules)."""
    columns, arrow_types = union_columns(segments)
    if len(segments) == 1:
        return columns, _select(segments[0].rows, columns)
    ordered = sorted(segments, key=lambda s: s.schema_id, reverse=True)
    return columns, pa.concat_tables([conform(s.rows, s.topic, columns, arrow_types) for s in ordered])


def _select(table: pa.Table, columns: list[ColumnSpec]) -> pa.Table:
    return table.select([c.name for c in columns] + [n for n, _ in METADATA_COLUMNS])


def concat_segments(segments: list[DecodedSegment]) -> list[DecodedSegment]:
    """Merge segments that share a schema id (held-back rows rejoining new ones) to keep tables few."""
    by_id: dict[tuple[str, int], list[DecodedSegment]] = {}
    for s in segments:
        by_id.setdefault((s.topic, s.schema_id), []).append(s)
    merged = []
    for group in by_id.values():
        if len(group) == 1:
            merged.append(group[0])
            continue
        first = group[0]
        merged.append(DecodedSegment(
            topic=first.topic, schema_id=first.schema_id, columns=first.columns,
            key_columns=first.key_columns, source=first.source,
            rows=pa.concat_tables([g.rows for g in group])))
    return merged
