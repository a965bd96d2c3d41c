"""A delete and its tombstone share one ``Headers`` object in Debezium, and some transforms add headers
to a record in place: what they add to the delete shows on its tombstone.

Debezium builds the tombstone that follows a delete with ``record.newRecord(..., record.headers())``
(``EventDispatcher``'s change record receiver): the very same ``ConnectHeaders``. Kafka Connect runs
the whole chain on the delete before the tombstone, and a transform that adds to ``record.headers()``
(``ExtractChangedRecordState``; ``ExtractNewRecordState``'s ``add.headers``) changes that shared
object as long as the delete still holds it. Most transforms hand on a copy
(``ConnectRecord.newRecord`` without headers duplicates them); a transform that passes the record
itself on, or builds the new one with the same headers (``HeaderToValue`` with ``copy``,
``ExtractChangedRecordState``) keeps sharing it. So the tombstone of ``ExtractChangedRecordState``'s
delete carries the delete's ``Changed`` / ``Unchanged`` headers.

lakecdc's records have immutable header lists shared freely by capture, so the chain follows the
sharing instead: a transform declares what it adds in place (``in_place_headers(record)``) and
whether its result keeps the object (``shares_headers``); the tombstone that follows a delete of the
same topic and key gets what was added to the delete's shared headers (capture gives it the delete's
own headers already, as Debezium).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lakecdc.transforms.base import Record


class DeleteHeaders:
    """The shared headers of the last delete seen, for the tombstone after it (kept across batches)."""

    def __init__(self) -> None:
        self._delete: tuple[str, Any] | None = None  # (topic, key) of the delete
        self._added: list[tuple[str, bytes]] = []
        self._holding = False

    def start(self, record: Record) -> Record:
        """Called with each record entering the chain: a tombstone right after its delete gets the
        headers added in place to the delete."""
        delete, self._delete = self._delete, None
        if record.value is None and delete is not None and delete == (record.topic, record.key):
            if self._added:
                record = replace(record, headers=[*record.headers, *self._added])
        elif record.value is not None and record.op == "d":
            self._delete = (record.topic, record.key)
            self._added = []
            self._holding = True
        return record

    def transformed(self, transform: Any, before: Record, after: Record | None, delete: bool) -> None:
        """Called after a transform ran on ``before`` (a delete when ``delete``)."""
        if not delete or not self._holding:
            return
        in_place = getattr(transform, "in_place_headers", None)
        if in_place is not None:
            self._added.extend(in_place(before))
        self._holding = after is before or (after is not None and getattr(transform, "shares_headers", False))
