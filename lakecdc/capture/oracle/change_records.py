"""Kafka records for Oracle changes: data events, tombstones, key changes and truncates.

A delete is followed by a tombstone (``tombstones.on.delete``, default true). An update that changes the
key is, as Debezium's Oracle documentation describes ("Primary key updates"), a delete of the old key
(header ``__debezium.newkey``), its tombstone, and a create with the new key (header
``__debezium.oldkey``). A truncate has a null key, null before/after and ``op: "t"``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lakecdc.capture.oracle.table_schema import TableSchema
from lakecdc.events.envelope import HEADER_NEW_KEY, HEADER_OLD_KEY, ChangeRecord, envelope_payload
from lakecdc.events.positions import OraclePosition
from lakecdc.events.serde import RecordEncoder

TxFor = Callable[[], Any] | None


class RecordFactory:
    """Builds the records of one table structure."""

    __slots__ = ("schema", "tombstones", "headers", "_header_encoder")

    def __init__(self, schema: TableSchema, tombstones_on_delete: bool,
                 headers: list[tuple[str, bytes]] | None = None) -> None:
        self.schema = schema
        self.tombstones = tombstones_on_delete
        #: context headers of every data record (shared, never mutated); tombstones carry none
        self.headers = headers or []
        self._header_encoder = (
            RecordEncoder(schema.key_schema, schemas_enable=False) if schema.key_schema is not None else None)

    def _record(self, key: Any, value: dict[str, Any], position: OraclePosition,
                headers: list[tuple[str, bytes]] | None = None) -> ChangeRecord:
        s = self.schema
        all_headers = [*headers, *self.headers] if headers else self.headers
        return ChangeRecord(s.topic, s.key_schema, key, s.envelope_schema, value, all_headers, position)

    def read(self, row: dict[str, Any], source: dict[str, Any], position: OraclePosition, ts_ns: int) -> ChangeRecord:
        return self._record(self.schema.key(row), envelope_payload("r", None, row, source, ts_ns), position)

    def insert_into(self, out: list[ChangeRecord], after: dict[str, Any], source: dict[str, Any],
                    position: OraclePosition, ts_ns: int, tx_for: TxFor) -> None:
        out.append(self._record(self.schema.key(after), envelope_payload(
            "c", None, after, source, ts_ns, tx_for() if tx_for else None), position))

    def delete_into(self, out: list[ChangeRecord], before: dict[str, Any], source: dict[str, Any],
                    position: OraclePosition, ts_ns: int, tx_for: TxFor,
                    headers: list[tuple[str, bytes]] | None = None) -> None:
        key = self.schema.key(before)
        record = self._record(key, envelope_payload("d", before, None, source, ts_ns, tx_for() if tx_for else None),
                              position, headers)
        out.append(record)
        if self.tombstones and key is not None:
            out.append(record.tombstone())

    def update_into(self, out: list[ChangeRecord], before: dict[str, Any], after: dict[str, Any],
                    source: dict[str, Any], position: OraclePosition, ts_ns: int, tx_for: TxFor) -> None:
        old_key, new_key = self.schema.key(before), self.schema.key(after)
        if old_key == new_key:
            out.append(self._record(new_key, envelope_payload(
                "u", before, after, source, ts_ns, tx_for() if tx_for else None), position))
            return
        assert self._header_encoder is not None
        old_bytes = self._header_encoder.encode(old_key) or b""
        new_bytes = self._header_encoder.encode(new_key) or b""
        self.delete_into(out, before, source, position, ts_ns, tx_for, [(HEADER_NEW_KEY, new_bytes)])
        out.append(self._record(new_key, envelope_payload(
            "c", None, after, source, ts_ns, tx_for() if tx_for else None), position, [(HEADER_OLD_KEY, old_bytes)]))

    def truncate(self, source: dict[str, Any], position: OraclePosition, ts_ns: int,
                 tx: dict[str, Any] | None) -> ChangeRecord:
        s = self.schema
        return ChangeRecord(s.topic, None, None, s.envelope_schema,
                            envelope_payload("t", None, None, source, ts_ns, tx), self.headers, position)
