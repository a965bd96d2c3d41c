"""Transaction metadata: BEGIN/END records on ``<prefix>.transaction`` and the per-event block.

BEGIN and END values (Debezium 3.6.3, PostgreSQL; ``ts_ms`` is the last field)::

    {"status":"BEGIN","id":"1264:99091160","event_count":null,"data_collections":null,"ts_ms":1795336045068}
    {"status":"END","id":"1264:99092032","event_count":5,"data_collections":[
        {"data_collection":"public.customers","event_count":3},
        {"data_collection":"public.audit_full","event_count":1},
        {"data_collection":"public.nopk_events","event_count":1}],"ts_ms":1795336045068}

The key is ``{"id": <same id as the value>}``. Tombstones are not counted. ``data_collections``
lists tables in the iteration order of Debezium's ``TransactionContext.perTableEventCount``, a
``java.util.HashMap`` (by the tables' name hashes, not by first event). PostgreSQL ids are ``<txId>:<LSN>`` with the
LSN of the message at hand, so BEGIN, each event and END of one transaction carry different ids;
:func:`transaction_group` gives the part that identifies the transaction.
"""

from __future__ import annotations

import re
from typing import Any

from lakecdc.events.envelope import ChangeRecord, transaction_block
from lakecdc.events.java_hashmap import java_hashmap_order
from lakecdc.events.schema import INT64, OPTIONAL_INT64, STRING, array, struct

TRANSACTION_KEY_SCHEMA = struct(
    [("id", STRING)], name="io.debezium.connector.common.TransactionMetadataKey", version=1
)

EVENT_COLLECTION_SCHEMA = struct(
    [("data_collection", STRING), ("event_count", INT64)],
    optional=True,
    name="event.collection",
    version=1,
)

TRANSACTION_VALUE_SCHEMA = struct(
    [
        ("status", STRING),
        ("id", STRING),
        ("event_count", OPTIONAL_INT64),
        ("data_collections", array(EVENT_COLLECTION_SCHEMA, optional=True)),
        ("ts_ms", INT64),
    ],
    name="io.debezium.connector.common.TransactionMetadataValue",
    version=1,
)

BEGIN = "BEGIN"
END = "END"


def transaction_group(connector: str, tx_id: str) -> str:
    """The part of a transaction id shared by all events of one transaction.

    PostgreSQL ids are ``txId:LSN`` (LSN of each message), so the group is the txId; other
    connectors use one id per transaction.

    >>> transaction_group("postgresql", "1264:99091416")
    '1264'
    """
    if connector in ("postgresql", "postgres"):
        return tx_id.split(":", 1)[0]
    return tx_id


#: a PostgreSQL transaction id as Debezium writes it per message: ``txId:LSN``
PG_TX_ID = re.compile(r"^(\d+):(\d+)$")


def tx_link(tx_id: str) -> str:
    """The part of a transaction id that is equal on BEGIN, END and every event.

    >>> tx_link("1264:99091160"), tx_link("3E11FA47-71CA-11E1-9E33-C80AA9429562:23")
    ('1264', '3E11FA47-71CA-11E1-9E33-C80AA9429562:23')
    """
    match = PG_TX_ID.match(tx_id)
    return match.group(1) if match else tx_id


class TransactionTracker:
    """Counts the events of the open transaction for the envelope block and the END record.

    Usage per transaction: ``begin(...)`` -> for each data event ``event(data_collection)`` ->
    ``end(...)``. Not thread-safe; one tracker per capture stream.
    """

    __slots__ = ("_id", "_total", "_per_collection")

    def __init__(self) -> None:
        self._id: str | None = None
        self._total = 0
        self._per_collection: dict[str, int] = {}

    @property
    def in_transaction(self) -> bool:
        return self._id is not None

    @property
    def current_id(self) -> str | None:
        return self._id

    def begin(self, tx_id: str, ts_ms: int) -> dict[str, Any]:
        """Open a transaction; returns the BEGIN payload."""
        if self._id is not None:
            raise RuntimeError(f"transaction {self._id!r} is still open; cannot begin {tx_id!r}")
        self._id = tx_id
        self._total = 0
        self._per_collection = {}
        return {"status": BEGIN, "id": tx_id, "event_count": None, "data_collections": None, "ts_ms": ts_ms}

    def event(self, data_collection: str, event_id: str | None = None) -> dict[str, Any]:
        """Count one data event; returns its ``transaction`` block.

        ``event_id`` overrides the id written in the block (PostgreSQL: ``txId:<event LSN>``).
        """
        if self._id is None:
            raise RuntimeError(f"data event for {data_collection!r} outside a transaction")
        self._total += 1
        order = self._per_collection.get(data_collection, 0) + 1
        self._per_collection[data_collection] = order
        return transaction_block(event_id or self._id, self._total, order)

    def end(self, tx_id: str | None, ts_ms: int) -> dict[str, Any]:
        """Close the transaction; returns the END payload (``tx_id`` None keeps the BEGIN id)."""
        if self._id is None:
            raise RuntimeError("END without an open transaction")
        payload = {
            "status": END,
            "id": tx_id or self._id,
            "event_count": self._total,
            "data_collections": [
                {"data_collection": name, "event_count": count}
                for name, count in java_hashmap_order(list(self._per_collection.items()))
            ],
            "ts_ms": ts_ms,
        }
        self._id = None
        self._total = 0
        self._per_collection = {}
        return payload

    @property
    def event_count(self) -> int:
        return self._total

    def counts(self) -> dict[str, int]:
        return dict(self._per_collection)


def transaction_record(topic: str, payload: dict[str, Any], position: Any = None) -> ChangeRecord:
    """The Kafka record for a BEGIN or END payload."""
    return ChangeRecord(
        topic=topic,
        key_schema=TRANSACTION_KEY_SCHEMA,
        key={"id": payload["id"]},
        value_schema=TRANSACTION_VALUE_SCHEMA,
        value=payload,
        headers=[],
        position=position,
    )
