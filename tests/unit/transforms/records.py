"""PostgreSQL-shaped change records (as lakecdc's capture builds them) for the transform tests."""

from __future__ import annotations

from typing import Any

from lakecdc.events.envelope import ChangeRecord, envelope_payload, envelope_schema, transaction_block
from lakecdc.events.schema import INT32, primitive, struct
from lakecdc.events.serde import RecordEncoder
from lakecdc.events.source import POSTGRES_SOURCE
from lakecdc.transforms import build_chain

PREFIX = "dbz"
ROW = struct([("id", INT32), ("name", primitive("string", True)),
              ("qty", primitive("int32", True, default=7)),
              ("seen", primitive("int64", True, name="io.debezium.time.MicroTimestamp", version=1))],
             optional=True, name="dbz.public.items.Value")
KEY = struct([("id", INT32)], name="dbz.public.items.Key")
ENVELOPE = envelope_schema(ROW, POSTGRES_SOURCE, "dbz.public.items.Envelope")
CONTEXT = [("__debezium.context.connectorLogicalName", RecordEncoder(primitive("string"), True).encode("dbz") or b"")]


def source(lsn: int = 100, snapshot: str = "false", table: str = "items") -> dict[str, Any]:
    return {"version": "3.6.3.Final", "connector": "postgresql", "name": PREFIX, "ts_ms": 1_700_000_000_123,
            "snapshot": snapshot, "db": "shop", "sequence": f'[null,"{lsn}"]', "ts_us": 1_700_000_000_123_000,
            "ts_ns": 1_700_000_000_123_000_000, "schema": "public", "table": table, "txId": 42, "lsn": lsn,
            "xmin": None, "origin": None, "origin_lsn": None}


def row(id_: int, name: str | None = "a", qty: int | None = 1,
        seen: int | None = 1_700_000_000_000_000) -> dict[str, Any]:
    return {"id": id_, "name": name, "qty": qty, "seen": seen}


def change(op: str, before: dict[str, Any] | None, after: dict[str, Any] | None, *, table: str = "items",
           tx: bool = True) -> ChangeRecord:
    image = after or before
    assert image is not None or op == "t"
    payload = envelope_payload(op, before, after, source(table=table), 1_700_000_000_456_000_000,
                               transaction_block("42:100", 1, 1) if tx else None)
    key = {"id": image["id"]} if image else None
    return ChangeRecord(f"{PREFIX}.public.{table}", KEY if key else None, key, ENVELOPE, payload, list(CONTEXT))


def delete_pair(id_: int) -> list[ChangeRecord]:
    deleted = change("d", row(id_), None)
    return [deleted, deleted.tombstone()]


def chain(**properties: str) -> Any:
    """``build_chain`` from keyword names with ``__`` for ``.`` (``transforms__r__type``)."""
    return build_chain({k.replace("__", "."): v for k, v in properties.items()})


def one(chain_: Any, record: ChangeRecord) -> ChangeRecord | None:
    out = chain_.apply([record])
    return out[0] if out else None
