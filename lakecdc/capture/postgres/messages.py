"""Logical decoding messages (``pg_logical_emit_message``) as Debezium's ``op "m"`` events.

Topic ``<prefix>.message``; filtered by ``message.prefix.include.list`` / ``exclude.list``::

    key   {"prefix": "audit"}                        io.debezium.connector.postgresql.MessageKey
    value {"op": "m", "ts_ms": 1795336045083,
           "source": {..., "schema": "", "table": "", "txId": 1271, "lsn": 99100312, ...},
           "transaction": {"id": "1271:99100312", "total_order": 2, "data_collection_order": 1},
           "message": {"prefix": "audit", "content": "eHl6"}}   io.debezium.connector.postgresql.MessageValue

A non-transactional message (``pg_logical_emit_message(false, ...)``) counts as a completed unit:
``transaction`` is null, ``txId`` null, and it becomes the last commit LSN
(``sequence = ["<lsn>","<lsn>"]``); its source time is the last commit's, as in Debezium 3.6.

``content`` follows ``binary.handling.mode`` (bytes -> base64 text in JSON, base64, hex).
"""

from __future__ import annotations

import random
import time
from typing import Any

from lakecdc.capture.postgres.config import PostgresConnectorConfig
from lakecdc.capture.postgres.decoder import LogicalMessage
from lakecdc.capture.postgres.source_info import PostgresSourceBuilder, source_schema
from lakecdc.events.envelope import TRANSACTION_BLOCK, ChangeRecord
from lakecdc.events.logical import binary_converter
from lakecdc.events.positions import PostgresPosition
from lakecdc.events.schema import OPTIONAL_INT64, OPTIONAL_STRING, STRING, primitive, struct
from lakecdc.events.topics import TopicNamer

#: Debezium 3.6 counts each transactional message in the END record under a collection named by
#: a fresh Java object's default ``toString()`` (class name + identity hash), so every message is
#: its own entry; lakecdc reproduces the shape with a random 32-bit hash.
MESSAGE_COLLECTION_PREFIX = "io.debezium.connector.postgresql.LogicalDecodingMessageMonitor$LogicalDecodingMessageId@"


def message_data_collection() -> str:
    return f"{MESSAGE_COLLECTION_PREFIX}{random.getrandbits(31) or 1:x}"


def _content_schema(mode: str) -> Any:
    return primitive("bytes" if mode == "bytes" else "string", True)


class MessageRecords:
    def __init__(self, config: PostgresConnectorConfig, namer: TopicNamer, source: PostgresSourceBuilder) -> None:
        self.config = config
        self.topic = f"{namer.prefix}.message"
        self.mode = config.binary_handling_mode
        self._encode_content = binary_converter(self.mode)
        self.source = source
        adjust = namer.adjust_schema_name
        self.key_schema = struct(
            [("prefix", OPTIONAL_STRING)], name=adjust("io.debezium.connector.postgresql.MessageKey"), version=1
        )
        block = struct(
            [("prefix", OPTIONAL_STRING), ("content", _content_schema(self.mode))],
            name=adjust("io.debezium.connector.postgresql.Message"), version=1,
        )
        self.value_schema = struct(
            [("op", STRING), ("ts_ms", OPTIONAL_INT64), ("source", source_schema("postgresql")),
             ("transaction", TRANSACTION_BLOCK), ("message", block)],
            name=adjust("io.debezium.connector.postgresql.MessageValue"), version=1,
        )

    def _content(self, content: bytes) -> Any:
        return self._encode_content(content)

    def record(self, message: LogicalMessage, lsn: int, xid: int | None, commit_ts_us: int,
               last_commit_lsn: int | None, transaction: dict[str, Any] | None) -> ChangeRecord:
        """The record for one message; the caller has filtered the prefix and, for a
        non-transactional message, already made ``lsn`` the last commit LSN."""
        tx_id = xid if message.transactional else None
        source = self.source.build(schema="", table="", ts_us=commit_ts_us, lsn=lsn, last_commit_lsn=last_commit_lsn,
                                   tx_id=tx_id)
        value = {
            "op": "m",
            "ts_ms": time.time_ns() // 1_000_000,
            "source": source,
            "transaction": transaction,
            "message": {"prefix": message.prefix, "content": self._content(message.content)},
        }
        position = PostgresPosition(lsn=lsn, commit_lsn=last_commit_lsn, tx_id=tx_id, ts_usec=commit_ts_us)
        return ChangeRecord(self.topic, self.key_schema, {"prefix": message.prefix}, self.value_schema, value, [],
                            position)

    def wanted(self, message: LogicalMessage) -> bool:
        return self.config.captures_message_prefix(message.prefix)
