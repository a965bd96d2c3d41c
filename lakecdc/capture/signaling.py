"""Signals wired into a streaming source: the channels, the actions and what they emit.

A streaming source that supports signals (PostgreSQL, MySQL/MariaDB) owns one :class:`Signaling`:

- ``on_row(row, position, out)`` for each insert into the signal table met in the change stream,
  before that row's own event is emitted: a watermark row goes to the incremental snapshot (whose
  window close appends the chunk's ``r`` events to ``out``), any other row is a signal processed
  at once when the source channel is enabled (watermarks are read whatever the channels: an
  incremental snapshot asked for on the Kafka channel needs them);
- ``poll_kafka(position)`` between batches (the Kafka channel, ``signal.enabled.channels``);
- ``drain(out)`` after the signal row's own event: the records a blocking snapshot produced.

Actions: ``log`` (in :class:`SignalProcessor`), ``execute-snapshot`` (``type`` incremental, the
default, or blocking), ``stop-snapshot``, ``pause-snapshot``, ``resume-snapshot``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from lakecdc.capture.blocking import BlockingSnapshotError, blocking_selects
from lakecdc.capture.incremental import CLOSE, OPEN, IncrementalSnapshot
from lakecdc.capture.signal_kafka import KafkaSignalChannel
from lakecdc.capture.signals import Signal, SignalProcessor, signal_from_row

log = logging.getLogger(__name__)

#: (signal, the captured tables it names, the stream position it was met at, the SELECT statements of
#: its additional conditions by ``schema.table``) -> ``r`` records; raises BlockingSnapshotError
#: when the database refuses one of those statements
BlockingSnapshot = Callable[[Signal, list[str], Any, dict[str, str]], list[Any]]


class Signaling:
    def __init__(self, config: Any, incremental: IncrementalSnapshot, blocking: BlockingSnapshot,
                 offset: Callable[[], Any]) -> None:
        self.incremental = incremental
        self._blocking = blocking
        self.processor = SignalProcessor(offset=offset)
        self.processor.register("execute-snapshot", self._execute_snapshot)
        self.processor.register("stop-snapshot", incremental.stop)
        self.processor.register("pause-snapshot", incremental.pause)
        self.processor.register("resume-snapshot", incremental.resume)
        #: records a signal's action produced (blocking snapshot), emitted after the signal's own event
        self._records: list[Any] = []
        self._position: Any = None
        self._kafka = KafkaSignalChannel.from_config(config) if "kafka" in config.signal_channels else None
        self._source_channel = "source" in config.signal_channels

    def on_row(self, row: dict[str, Any], position: Any, out: list[Any]) -> None:
        """A signal-table insert, processed before its own event is emitted (as Debezium)."""
        signal = signal_from_row(row)
        if signal is None:
            return
        if signal.type in (OPEN, CLOSE):
            self.incremental.on_watermark(signal.type, signal.id, position, out)
            return
        if not self._source_channel:
            log.info("%s ignored: signal.enabled.channels does not include source", signal.describe())
            return
        self._position = position
        self.processor.process(signal)

    def poll_kafka(self, position: Any, out: list[Any]) -> None:
        """Signals from the Kafka channel, acted on at ``position`` (between two stream events)."""
        if self._kafka is None:
            return
        for signal in self._kafka.poll():
            self._position = position
            self.processor.process(signal)
        self.drain(out)

    def drain(self, out: list[Any]) -> None:
        if self._records:
            out.extend(self._records)
            self._records.clear()

    def close(self) -> None:
        self.incremental.close()
        if self._kafka is not None:
            self._kafka.close()
            self._kafka = None

    def _execute_snapshot(self, signal: Signal) -> None:
        kind = str(signal.data.get("type") or "incremental").lower()
        if kind == "incremental":
            self.incremental.execute(signal)
            return
        if kind != "blocking":
            log.warning("signal '%s': unknown snapshot type '%s' (incremental or blocking); ignored", signal.id, kind)
            return
        tables = self.incremental.expand(signal)
        selects = blocking_selects(signal, tables)
        log.info("Requested 'BLOCKING' snapshot of data collections %s with additional conditions %s (signal '%s'); "
                 "streaming waits", tables, selects, signal.id)
        if not tables:
            return
        try:
            self._records.extend(self._blocking(signal, tables, self._position, selects))
        except BlockingSnapshotError as exc:
            # as Debezium: the snapshot is given up, the connector goes on streaming after the signal
            log.error("signal '%s': %s; nothing of this snapshot is emitted, streaming resumes", signal.id, exc)
