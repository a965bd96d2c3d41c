"""Kafka records for MySQL/MariaDB changes: data events, tombstones, key changes, truncates and
schema changes, shaped as Debezium's MySQL connector documentation shows them ("Data change events").

A primary-key update becomes three records (Debezium MySQL documentation, "Primary key updates")::

    DELETE  key {"id": 1}  value {op: "d", before: {...id 1...}}   header __debezium.newkey={"id":2}
    tombstone key {"id": 1}
    CREATE  key {"id": 2}  value {op: "c", after: {...id 2...}}    header __debezium.oldkey={"id":1}

A TRUNCATE is one ``op: "t"`` record per table with a null key and null before/after.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from lakecdc.capture.mysql.table_schema import TableSchema
from lakecdc.events.envelope import HEADER_NEW_KEY, HEADER_OLD_KEY, ChangeRecord, envelope_payload
from lakecdc.events.positions import Position
from lakecdc.events.serde import RecordEncoder


class RecordFactory:
    """Builds the records of one table; one per table structure (holds the header encoder)."""

    __slots__ = ("schema", "tombstones", "has_set_columns", "fractional_times", "_header_encoder", "headers")

    def __init__(self, schema: TableSchema, tombstones_on_delete: bool,
                 headers: list[tuple[str, bytes]] | None = None, header_schemas: bool = False) -> None:
        self.schema = schema
        self.tombstones = tombstones_on_delete
        #: Debezium 3's context headers, on every record including tombstones (shared, never mutated)
        self.headers = headers or []
        # the binlog reader reports an empty SET as None: rows of such tables need a look at why
        self.has_set_columns = any(c.type_name == "SET" for c in schema.table.columns)
        #: names of TIME(1-6) columns: the binlog reader decodes their negative values wrongly
        self.fractional_times = frozenset(c.name for c in schema.table.columns
                                          if c.type_name == "TIME" and (c.length or 0) > 0)
        # __debezium.newkey/oldkey go through the header converter (JSON, schemas on by default)
        self._header_encoder = (
            RecordEncoder(schema.key_schema, schemas_enable=header_schemas) if schema.key_schema is not None else None
        )

    def _record(self, key: Any, value: dict[str, Any], position: Position,
                headers: list[tuple[str, bytes]] | None = None) -> ChangeRecord:
        s = self.schema
        return ChangeRecord(s.topic, s.key_schema, key, s.envelope_schema, value,
                            [*headers, *self.headers] if headers else self.headers, position)

    # ``values`` below is always a full row in table column order (a snapshot tuple, or the
    # binlog row image's values by position)

    def read(self, values: Any, source: dict[str, Any], position: Position, ts_ns: int) -> ChangeRecord:
        s = self.schema
        return self._record(s.key(values), envelope_payload("r", None, s.row(values), source, ts_ns), position)

    def insert(self, values: Any, source: dict[str, Any], position: Position, ts_ns: int,
               tx: dict[str, Any] | None) -> list[ChangeRecord]:
        out: list[ChangeRecord] = []
        self.insert_into(out, values, source, position, ts_ns, tx)
        return out

    def delete(self, values: Any, source: dict[str, Any], position: Position, ts_ns: int,
               tx: dict[str, Any] | None) -> list[ChangeRecord]:
        out: list[ChangeRecord] = []
        self.delete_into(out, values, source, position, ts_ns, tx)
        return out

    def update(self, before: Any, after: Any, source: dict[str, Any],
               position: Position, ts_ns: int, tx_for: Any) -> list[ChangeRecord]:
        out: list[ChangeRecord] = []
        self.update_into(out, before, after, source, position, ts_ns, tx_for)
        return out

    # The ``*_into`` forms append to the caller's batch: the streaming hot path, no list per row.

    def insert_into(self, out: list[ChangeRecord], values: Any, source: dict[str, Any], position: Position,
                    ts_ns: int, tx: dict[str, Any] | None) -> None:
        s = self.schema
        out.append(ChangeRecord(s.topic, s.key_schema, s.key(values), s.envelope_schema,
                                envelope_payload("c", None, s.row(values), source, ts_ns, tx), self.headers, position))

    def delete_into(self, out: list[ChangeRecord], values: Any, source: dict[str, Any], position: Position,
                    ts_ns: int, tx: dict[str, Any] | None) -> None:
        s = self.schema
        key = s.key(values)
        record = ChangeRecord(s.topic, s.key_schema, key, s.envelope_schema,
                              envelope_payload("d", s.row(values), None, source, ts_ns, tx), self.headers, position)
        out.append(record)
        if self.tombstones and key is not None:
            out.append(_tombstone(record))

    def update_into(self, out: list[ChangeRecord], before: Any, after: Any, source: dict[str, Any],
                    position: Position, ts_ns: int, tx_for: Any) -> None:
        """``tx_for()`` returns the next transaction block (called once per data event); None when
        transaction metadata is off."""
        s = self.schema
        old_key = s.key(before)
        new_key = s.key(after)
        before_row = s.row(before)
        after_row = s.row(after)
        if old_key == new_key:
            out.append(ChangeRecord(s.topic, s.key_schema, new_key, s.envelope_schema,
                                    envelope_payload("u", before_row, after_row, source, ts_ns,
                                                     None if tx_for is None else tx_for()), self.headers, position))
            return
        assert self._header_encoder is not None
        old_bytes = self._header_encoder.encode(old_key) or b""
        new_bytes = self._header_encoder.encode(new_key) or b""
        delete = self._record(old_key, envelope_payload("d", before_row, None, source, ts_ns,
                                                        None if tx_for is None else tx_for()),
                              position, [(HEADER_NEW_KEY, new_bytes)])
        out.append(delete)
        if self.tombstones:
            out.append(_tombstone(delete))
        out.append(self._record(new_key, envelope_payload("c", None, after_row, source, ts_ns,
                                                          None if tx_for is None else tx_for()),
                                position, [(HEADER_OLD_KEY, old_bytes)]))

    def truncate(self, source: dict[str, Any], position: Position, ts_ns: int,
                 tx: dict[str, Any] | None) -> ChangeRecord:
        s = self.schema
        return ChangeRecord(s.topic, None, None, s.envelope_schema,
                            envelope_payload("t", None, None, source, ts_ns, tx), self.headers, position)


def _tombstone(delete: ChangeRecord) -> ChangeRecord:
    """The tombstone after ``delete``: Debezium's MySQL/MariaDB tombstone keeps the delete's headers
    (context headers, and ``__debezium.newkey`` after a key change)."""
    return replace(delete.tombstone(), headers=delete.headers)


def schema_change_record(topic: str, key_schema: Any, value_schema: Any, source: dict[str, Any],
                         database: str, ddl: str, table_changes: list[dict[str, Any]],
                         position: Position, headers: list[tuple[str, bytes]] | None = None) -> ChangeRecord:
    value = {
        "source": source,
        "ts_ms": time.time_ns() // 1_000_000,
        "databaseName": database,
        "schemaName": None,
        "ddl": ddl,
        "tableChanges": table_changes,
    }
    return ChangeRecord(topic, key_schema, {"databaseName": database}, value_schema, value, headers or [], position)
