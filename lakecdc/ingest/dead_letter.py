"""Records the job could not decode: kept with their raw bytes and the reason, and the job goes on.

One dead letter row (``DeadLetter.as_row()``), as the writers append it to the dead-letter table::

    {"topic": "shop.public.orders", "partition": 0, "offset": 1234,
     "key": b'{"schema":...,"payload":{"id":7}}', "value": b'{"schema":...,"payload":{...',
     "reason": "column 'amount': decimal 12345678901.5 does not fit decimal(10,2)",
     "failed_at": datetime(2026, 11, 22, 9, 41, 12, tzinfo=timezone.utc)}

Dead letters are written *before* the table commits that move the tables' Kafka progress past
them, so a crash in between cannot lose one; the replay after such a crash decodes the record
again, and the writers' ``append_dead_letters`` skips positions ``(topic, partition, offset)``
the dead-letter table already holds, so it is not stored twice.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

#: Spark SQL schema of the dead-letter table.
DEAD_LETTER_DDL = ("topic string, partition int, offset bigint, key binary, value binary, "
                   "reason string, failed_at timestamp")


@dataclass(frozen=True)
class DeadLetter:
    """One Kafka record that could not be decoded, and why."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    reason: str
    failed_at: datetime

    def as_row(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "offset": self.offset,
                "key": self.key, "value": self.value, "reason": self.reason, "failed_at": self.failed_at}


class DeadLetterSink:
    """Hands dead letters to the writers' ``append_dead_letters`` and logs one summary per batch."""

    def __init__(self, append: Callable[[list[dict[str, Any]]], Any]) -> None:
        self._append = append
        self.total = 0

    def write(self, letters: Sequence[DeadLetter]) -> None:
        if not letters:
            return
        self._append([letter.as_row() for letter in letters])
        first = letters[0]
        self.wrote(Counter(letter.topic for letter in letters), first.reason)

    def wrote(self, topics: Counter[str], first_reason: str) -> None:
        """Counts and logs dead letters per topic written to the table (by ``write``, or from the
        executors for a batch decoded there: ``executor_batch``); ``first_reason``: the first one's
        reason, which already starts with its topic, partition and offset (the decoder's
        ``DeadLetter`` contract), so the log line does not name them again."""
        count = sum(topics.values())
        self.total += count
        log.warning(
            "%d record(s) could not be decoded and went to the dead-letter table (%s); first: %s",
            count, ", ".join(f"{t}: {n}" for t, n in topics.most_common()), first_reason)


#: Our row names -> other names the dead-letter table may use for them.
_ALIASES = {"ingest_ts": "failed_at", "failed_at": "ingest_ts"}


def dead_letter_frame(spark: SparkSession, rows: list[dict[str, Any]]) -> DataFrame:
    """Dead-letter rows as a DataFrame in the writers' dead-letter table schema.

    Raw key/value bytes stay bytes where that schema has binary columns; where it has text they
    are decoded as UTF-8 with undecodable bytes kept as ``\\xNN`` escapes (nothing is lost).
    """
    from pyspark.sql.types import BinaryType, StringType

    from lakecdc.writers.base import DEAD_LETTER_SCHEMA

    def cell(row: dict[str, Any], name: str, data_type: Any) -> Any:
        value = row.get(name, row.get(_ALIASES.get(name, name)))
        if isinstance(value, bytes) and isinstance(data_type, StringType):
            return value.decode("utf-8", "backslashreplace")
        if isinstance(value, str) and isinstance(data_type, BinaryType):
            return value.encode("utf-8")
        return value

    fields = DEAD_LETTER_SCHEMA.fields
    return spark.createDataFrame([tuple(cell(r, f.name, f.dataType) for f in fields) for r in rows],
                                 DEAD_LETTER_SCHEMA)
