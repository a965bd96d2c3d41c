"""Source table vs silver table, row by row, with each side's values put in one comparable form.

PostgreSQL (psycopg) and the lake (Spark for Iceberg, Arrow for Delta) hand back the same value
in different Python shapes; ``comparable`` maps both to one: timestamps with a zone -> UTC-aware
datetimes (Spark gives UTC wall time without a zone), jsonb -> the parsed JSON, uuid -> text,
arrays -> tuples, binary -> bytes. Decimals, dates and naive timestamps compare as they are.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any


@dataclass(frozen=True)
class TableComparison:
    table: str
    source_rows: int
    silver_rows: int
    missing: int  # rows of the source not (equal) in silver
    unexpected: int  # rows of silver not (equal) in the source

    @property
    def equal(self) -> bool:
        return self.missing == 0 and self.unexpected == 0 and self.source_rows == self.silver_rows


def comparable(value: Any, zoned: bool = False, is_json: bool = False) -> Any:
    if value is None:
        return None
    if is_json:
        return json.dumps(json.loads(value) if isinstance(value, str) else value, sort_keys=True)
    if isinstance(value, datetime) and zoned:
        return (value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value).astimezone(timezone.utc)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple)):
        return tuple(comparable(v) for v in value)
    return value


def compare_rows(table: str, columns: Sequence[str], source: Iterable[dict[str, Any]],
                 silver: Iterable[dict[str, Any]], zoned: frozenset[str] = frozenset(),
                 json_columns: frozenset[str] = frozenset()) -> TableComparison:
    """Compare on ``columns`` (the source's); silver's metadata columns are ignored."""
    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(comparable(row.get(c), c in zoned, c in json_columns) for c in columns)

    source_rows = [key(r) for r in source]
    silver_rows = [key(r) for r in silver]
    source_set, silver_set = set(source_rows), set(silver_rows)
    return TableComparison(table, len(source_rows), len(silver_rows), len(source_set - silver_set),
                           len(silver_set - source_set))


def source_rows(conn: Any, table: str) -> tuple[list[str], list[dict[str, Any]], frozenset[str], frozenset[str]]:
    """All rows of a source table, its column names, and which columns are timestamptz / json."""
    cur = conn.execute(f"SELECT * FROM {table}")
    names = [d.name for d in cur.description]
    rows = [dict(zip(names, r)) for r in cur.fetchall()]
    types = dict(conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s", (table,)).fetchall())
    zoned = frozenset(c for c, t in types.items() if t == "timestamp with time zone")
    json_columns = frozenset(c for c, t in types.items() if t in ("json", "jsonb"))
    return names, rows, zoned, json_columns
