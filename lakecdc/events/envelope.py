"""The Debezium change event envelope, op codes and the record handed to sinks.

Value schema of a data event (field order and optionality as Debezium 3.6.3 writes them)::

    {"type":"struct","fields":[
       {<row schema>,"optional":true,"name":"dbz.public.customers.Value","field":"before"},
       {<row schema>,"optional":true,"name":"dbz.public.customers.Value","field":"after"},
       {<source schema>,"optional":false,"name":"io.debezium.connector.postgresql.Source","version":1,"field":"source"},
       {"type":"struct","fields":[{"type":"string","optional":false,"field":"id"},
          {"type":"int64","optional":false,"field":"total_order"},
          {"type":"int64","optional":false,"field":"data_collection_order"}],
        "optional":true,"name":"event.block","version":1,"field":"transaction"},
       {"type":"string","optional":false,"field":"op"},
       {"type":"int64","optional":true,"field":"ts_ms"},
       {"type":"int64","optional":true,"field":"ts_us"},
       {"type":"int64","optional":true,"field":"ts_ns"}],
     "optional":false,"name":"dbz.public.customers.Envelope","version":2}

A delete is followed by a tombstone: the same key with a null value (Kafka log compaction).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lakecdc.events.schema import INT64, OPTIONAL_INT64, STRING, ConnectSchema, struct

if TYPE_CHECKING:
    from lakecdc.events.positions import Position


class Op(str, enum.Enum):
    """Debezium ``op`` codes."""

    READ = "r"  # snapshot row
    CREATE = "c"
    UPDATE = "u"
    DELETE = "d"
    TRUNCATE = "t"
    MESSAGE = "m"  # logical decoding message (pg_logical_emit_message)

    def __str__(self) -> str:
        return self.value


#: Debezium's ``event.block``: the transaction a data event belongs to.
TRANSACTION_BLOCK = struct(
    [("id", STRING), ("total_order", INT64), ("data_collection_order", INT64)],
    optional=True,
    name="event.block",
    version=1,
)

ENVELOPE_VERSION = 2


def envelope_schema(value_schema: ConnectSchema, source_schema: ConnectSchema, name: str) -> ConnectSchema:
    """The envelope schema for one table (``name`` = ``<prefix>.<schema>.<table>.Envelope``).

    ``value_schema`` is the row schema (``...Value``); it is made optional for before/after.
    """
    row = value_schema if value_schema.optional else value_schema.as_optional()
    return struct(
        [
            ("before", row),
            ("after", row),
            ("source", source_schema),
            ("transaction", TRANSACTION_BLOCK),
            ("op", STRING),
            ("ts_ms", OPTIONAL_INT64),
            ("ts_us", OPTIONAL_INT64),
            ("ts_ns", OPTIONAL_INT64),
        ],
        name=name,
        version=ENVELOPE_VERSION,
    )


def envelope_payload(
    op: Op | str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    source: dict[str, Any],
    ts_ns: int,
    transaction: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An envelope payload; ``ts_ns`` is the processing time (``time.time_ns()``), from which
    ``ts_ms`` and ``ts_us`` are truncated as Debezium does."""
    return {
        "before": before,
        "after": after,
        "source": source,
        "transaction": transaction,
        "op": op.value if isinstance(op, Op) else op,
        "ts_ms": ts_ns // 1_000_000,
        "ts_us": ts_ns // 1_000,
        "ts_ns": ts_ns,
    }


def transaction_block(tx_id: str, total_order: int, data_collection_order: int) -> dict[str, Any]:
    return {"id": tx_id, "total_order": total_order, "data_collection_order": data_collection_order}


#: Headers Debezium puts on the delete / create pair of a primary-key change.
HEADER_NEW_KEY = "__debezium.newkey"
HEADER_OLD_KEY = "__debezium.oldkey"


@dataclass(slots=True)
class ChangeRecord:
    """One Kafka record produced by capture: topic, key and value with their Connect schemas.

    ``value is None`` is a tombstone; ``key is None`` a key-less record (table without a primary
    key, truncate). ``position`` is the source position the record reflects (offsets, ordering).
    Header values are already-encoded bytes (JsonConverter output for the key headers).
    A record is a value, as positions are, and not ``frozen`` for the same reason
    (``positions._Ordered``): one is made per change.
    """

    topic: str
    key_schema: ConnectSchema | None
    key: Any
    value_schema: ConnectSchema | None
    value: Any
    headers: list[tuple[str, bytes]] = field(default_factory=list)
    position: Position | None = None
    #: the Kafka partition a transform placed the record in (the outbox EventRouter's ``partition``
    #: placement); None lets the producer's partitioner choose, as for every record capture builds
    partition: int | None = None

    @property
    def is_tombstone(self) -> bool:
        return self.value is None

    @property
    def op(self) -> str | None:
        """The ``op`` of an envelope value (None for tombstones and non-envelope values)."""
        if isinstance(self.value, dict):
            return self.value.get("op")
        return None

    def tombstone(self) -> ChangeRecord:
        """The tombstone that follows this delete: same topic, key and position, null value."""
        return replace(self, value_schema=None, value=None, headers=[])
